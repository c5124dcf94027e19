"""Scaling as an immutable view of a prepared :class:`~sparkfs.spark.rows.Rows`.

``rows.scaled_by(scale)`` returns a :class:`ScaledRows`: every pass run through it (and
:meth:`~sparkfs.spark.rows.Rows.scaled` of a driver-side matrix) sees each feature divided by
``scale`` (and, with ``unit_rows``, every row then divided by its Euclidean norm), while ``rows`` itself and every other view keep theirs. Nothing is copied or run:
the view shares the prepared input, the counts, the column statistics, the collected rows and the
cached blocks with the rows it was made from (whatever one of them computes, the others reuse),
and passes' names go to the same ``info["passes"]``.

The view owns nothing, so leaving it (``with``, or :meth:`ScaledRows.release`) releases nothing;
the rows it was made from release the prepared input. Views of views scale the *unscaled* rows:
``rows.scaled_by(a).scaled_by(b)`` divides by ``b``, not by ``a * b``.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from sparkfs.spark.rows import Rows

#: Attributes a view holds itself; every other attribute is read from and written to its rows.
_OWN = frozenset({"_unscaled", "inverse_scale", "scale", "unit_rows", "_scaled_cache"})


class ScaledRows(Rows):
    """A :class:`Rows` whose passes see the features divided by ``scale`` (module notes).

    Parameters
    ----------
    rows : Rows
        The prepared rows (a view: the rows it was made from).
    scale : array (p,) or None
        Positive finite divisors; None, or all ones, leaves the features as they are.
    unit_rows : bool
        Then divide every row by its Euclidean norm (the cosine metric of the Relief family).
    """

    def __init__(self, rows: Rows, scale: Optional[np.ndarray], *, unit_rows: bool = False):  # noqa: super().__init__ is not called: shared state
        unscaled = rows._unscaled if isinstance(rows, ScaledRows) else rows
        inverse = None
        if scale is not None:
            scale = np.asarray(scale, dtype=np.float64)
            if scale.shape != (unscaled.num_features,) or not np.all(np.isfinite(scale)) or np.any(scale <= 0):
                raise ValueError(f"scale must be {unscaled.num_features} positive finite numbers; got shape "
                                 f"{scale.shape}")
            inverse = None if np.all(scale == 1.0) else 1.0 / scale
        object.__setattr__(self, "_unscaled", unscaled)
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "inverse_scale", inverse)
        object.__setattr__(self, "unit_rows", bool(unit_rows))
        object.__setattr__(self, "_scaled_cache", None)

    def __getattr__(self, name):
        # Only reached for what the view does not hold itself: the shared state of its rows.
        if name in _OWN:  # not set yet (a copy being built): no recursion through _unscaled
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "_unscaled"), name)

    def __setattr__(self, name, value):
        if name in _OWN:
            if name != "_scaled_cache":
                raise AttributeError(f"a scaled view is immutable: make another with scaled_by() instead of "
                                     f"setting {name!r}")
            object.__setattr__(self, name, value)
        else:  # lazily computed state (counts, statistics, prepared input) is shared with the rows
            setattr(self._unscaled, name, value)

    def __enter__(self) -> "ScaledRows":
        return self

    def __exit__(self, *exc) -> None:
        """Nothing to release: the rows the view was made from own the prepared input."""

    def release(self) -> None:
        """Nothing to release (module notes)."""
