"""A DataFrame prepared once for any number of passes of the pair engine.

:class:`Rows` is the object every pairwise method holds (``with Rows(df, ...) as rows:``): a
composition of three parts, each in its own module, with the column statistics and scaling that
use more than one of them:

* **the prepared input** (:mod:`sparkfs.spark.prepared_rows`, ``rows.input``): the input's
  features, class index, optional instance weights and a stable row id, persisted for the
  object's lifetime; counts, row ids and determinism (module notes there), the canonical layout,
  the diagnosis of a failed job;
* **driver-side row sets under a budget** (:mod:`sparkfs.spark.driver_rows`,
  ``rows.driver_rows``): all rows, or a seeded sample that depends on the rows' content only,
  each checked against ``driver_budget_mb`` before it travels;
* **the pass runner** (:mod:`sparkfs.spark.pass_runner`, ``rows.runner``): block caching, :meth:`Rows.run_pass`
  (the one reduced pass over the partitions, blocks as dense or CSR matrices, reduced by
  :mod:`sparkfs.spark.blocks`) and :meth:`Rows.keyed_partials`.

Shipping values to the tasks (:meth:`Rows.shipped`) and scaling are the object's own.

**Scaling is a view.** ``rows.scaled_by(scale)`` returns a :class:`ScaledRows`: a frozen (rows,
scale) pair whose passes (and :meth:`Rows.scaled` of a driver-side matrix) see each feature divided
by ``scale`` (and, with ``unit_rows``, every row then divided by its Euclidean norm), while ``rows``
and every other view keep theirs. Nothing is copied or run: the view holds the same parts (prepared
input, driver rows, runner) and the same lazily computed column statistics as its rows (whatever one
computes, the others reuse), and its passes' names go to the same ``info["passes"]``. The view owns
nothing, so leaving it releases nothing; views of views scale the *unscaled* rows:
``rows.scaled_by(a).scaled_by(b)`` divides by ``b``, not by ``a * b``.

**Column statistics** (min, max, mean, sample std) come from the collected rows when they are on
the driver anyway, else from one pass: chunk moments merged in the canonical order (JVM
``Summarizer`` without the layout).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Dict, Optional

import numpy as np

from sparkfs.core.sampling import ColumnStatistics
from sparkfs.core.sampling import column_statistics as driver_column_statistics
from sparkfs.core.scaling import check_magnitude
from sparkfs.errors import InvalidInputError
from sparkfs.spark.blocks import resolve_transport, ship_to_tasks
from sparkfs.spark.canonical import chunk_column_moments, merged_column_moments
from sparkfs.spark.driver_rows import DriverRows
from sparkfs.spark.pass_runner import DEFAULT_QUERY_BATCH_BYTES, PassRunner
from sparkfs.spark.prepared_rows import FEATURES, PreparedRows
from sparkfs.spark.row_sets import (
    Block,
    PassUnits,
    RowSet,
    check_finite,
    scale_columns,
)

__all__ = ["Rows", "Block", "RowSet", "DEFAULT_QUERY_BATCH_BYTES", "check_finite", "scale_columns"]


class Rows:
    """A DataFrame prepared for pair passes; use as ``with Rows(df, ...) as rows: ...``.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    features_col : str
        ``pyspark.ml`` vector column (dense or sparse; sparse rows stay sparse).
    num_features : int
        p: every vector must have this size.
    label_col : str, optional
        Numeric class index 0..C-1; without it every row is in class 0 (unsupervised methods).
    num_classes : int, optional
        C (required with ``label_col``).
    weight_col : str, optional
        Non-negative instance weights, handed to the block kernels.
    row_id_col : str, optional
        Unique integer row ids; None numbers the rows by position (:mod:`sparkfs.spark.prepared_rows`).
    transport : {"auto", "context", "dataframe"}
        See :mod:`sparkfs.spark.blocks`; "dataframe" runs on Spark Connect.
    query_batch_bytes : int, optional
        Largest query batch (plus its per-batch tables) handed to the tasks at once; default
        128 MiB with a SparkContext, 48 MiB inside a Connect closure (never above that there).
    cache_blocks : bool
        For iterative methods (many passes over the same rows): convert every Arrow batch to its
        dense/CSR matrix once, keep the encoded blocks persisted, and let every later pass read
        them instead of converting the vector column again. Costs one extra job and the blocks'
        memory (about the data's size) for the object's lifetime.
    driver_budget_mb : float, optional
        The budget of the rows brought to the driver (:mod:`sparkfs.spark.driver_rows`).
    fewer_rows_hint : str
        How to bring fewer rows, the end of the budget's refusal (the selector's Param).
    canonical : bool, default True
        Lay the rows out by row id once (one shuffle, :mod:`sparkfs.spark.canonical`) so that
        every pass sums in an order fixed by the row ids: bit-identical results for any
        partitioning. False skips the shuffle; results then agree to rounding only.
    row_order : {"input", "content"}, default "input"
        Without ``row_id_col``: number the rows by their position in input order, or by their rank
        in content order (one sort; with ``canonical``, the same bits for any order and file layout
        of the same rows: :mod:`sparkfs.spark.prepared_rows`).
    """

    def __init__(self, df, features_col: str, *, num_features: int, label_col: Optional[str] = None,
                 num_classes: Optional[int] = None, weight_col: Optional[str] = None,
                 row_id_col: Optional[str] = None, transport: str = "auto",
                 query_batch_bytes: Optional[int] = None, cache_blocks: bool = False,
                 driver_budget_mb: Optional[float] = None, fewer_rows_hint: str = "use fewer rows",
                 canonical: bool = True, row_order: str = "input", targets: bool = False):
        self.input = PreparedRows(df, features_col, num_features=num_features, label_col=label_col,
                                  num_classes=num_classes, weight_col=weight_col, row_id_col=row_id_col,
                                  canonical=canonical, row_order=row_order, targets=targets)
        self.transport = resolve_transport(df.sparkSession, transport)
        self.driver_rows = DriverRows(self.input, transport=self.transport, driver_budget_mb=driver_budget_mb,
                                      fewer_rows_hint=fewer_rows_hint)
        self.runner = PassRunner(self.input, transport=self.transport, query_batch_bytes=query_batch_bytes,
                                 cache_blocks=cache_blocks)
        source = self.input
        self.df, self.features_col, self.label_col = df, features_col, label_col
        self.weight_col, self.row_id_col = weight_col, row_id_col
        self.num_features, self.num_classes, self.canonical = source.num_features, source.num_classes, source.canonical
        self.targets = source.targets
        self.query_batch_bytes = self.runner.query_batch_bytes
        self.driver_budget_mb, self.fewer_rows_hint, self.cache_blocks = driver_budget_mb, fewer_rows_hint, cache_blocks
        #: What ran: ``"row_ids"`` and the list of ``"passes"`` (shared by the parts and the views).
        self.info: Dict[str, Any] = source.info
        #: What is computed lazily and shared with the views: the column statistics.
        self._computed: Dict[str, Any] = {"statistics": None}
        self._scaled_cache = None
        #: The rows a view was made from (itself here); only they release the prepared input.
        self.unscaled: "Rows" = self
        #: The divisors of the passes: None here; a view of :meth:`scaled_by` has its own.
        self.scale: Optional[np.ndarray] = None
        #: 1 / scale of the passes: None here; a view of :meth:`scaled_by` has its own.
        self.inverse_scale: Optional[np.ndarray] = None
        #: Rows divided by their Euclidean norm after the scale (the cosine metric): a view's choice.
        self.unit_rows = False

    # -- lifetime and shipping -------------------------------------------------------------

    def __enter__(self) -> "Rows":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def release(self) -> None:
        """Unpersist the cached blocks and the prepared input (what was shipped went with its
        ``with`` block)."""
        self.runner.release()
        self.input.release()

    @contextmanager
    def shipped(self, value):
        """``with rows.shipped(value) as handle:`` hands ``value`` to the tasks of the passes run
        inside the block (a broadcast, or the task closure on Spark Connect; read ``handle.value``
        in the tasks) and destroys that handle, and nothing else, when the block ends."""
        handle = ship_to_tasks(self.df.sparkSession, value, self.transport)
        try:
            yield handle
        finally:
            handle.destroy()

    def diagnosed(self, action: Callable[[], Any]):
        """Run a Spark action; a failed job is re-diagnosed to name the bad input (NaN, sizes...)."""
        return self.input.diagnosed(action)

    # -- the prepared input: counts and ids --------------------------------------------------

    @property
    def has_user_ids(self) -> bool:
        return self.input.has_user_ids

    @property
    def class_counts(self) -> np.ndarray:
        return self.input.class_counts

    @property
    def partition_offsets(self) -> Optional[Dict[int, int]]:
        """Rows before each partition (positional ids only; None with user ids)."""
        return self.input.partition_offsets

    @property
    def n_rows(self) -> int:
        return self.input.n_rows

    @property
    def prepared(self):
        """The DataFrame every pass runs on: features, label, [weight,] row id."""
        return self.input.prepared

    # -- driver-side row sets ----------------------------------------------------------------

    def collect(self) -> RowSet:
        """Every row to the driver (sorted by id), within the driver budget."""
        return self.driver_rows.collect()

    def check_driver_rows(self, count: int, what: str) -> None:
        """Refuse to bring ``count`` rows to the driver above ``driver_budget_mb`` (see
        :meth:`sparkfs.spark.driver_rows.DriverRows.check_driver_rows`)."""
        self.driver_rows.check_driver_rows(count, what)

    def sample(self, size: Optional[int], seed: int = 0) -> RowSet:
        """``size`` rows drawn by (seed, the rows' content), sorted by id; all rows when None or >= n
        (:meth:`sparkfs.spark.driver_rows.DriverRows.sample`)."""
        return self.driver_rows.sample(size, seed)

    # -- statistics and scaling --------------------------------------------------------------

    def column_statistics(self) -> ColumnStatistics:
        """min, max, mean, sample std and non-zero count per feature (from the collected rows if on
        the driver)."""
        if self._computed["statistics"] is not None:
            return self._computed["statistics"]
        if self.driver_rows.all_rows is not None:
            self._computed["statistics"] = driver_column_statistics(self.driver_rows.all_rows.matrix)
            return self._computed["statistics"]
        minimum, maximum, mean, std, non_zeros = self.diagnosed(self._statistics_pass)
        if minimum.shape[0] != self.num_features:
            raise InvalidInputError(f"feature vectors have size {minimum.shape[0]}, not "
                                    f"num_features={self.num_features}")
        if not (np.all(np.isfinite(minimum)) and np.all(np.isfinite(maximum))):
            raise InvalidInputError("feature vectors contain NaN or infinite values")
        self._computed["statistics"] = ColumnStatistics(minimum, maximum, mean, std, non_zeros)
        self.info["passes"].append("column statistics")
        return self._computed["statistics"]

    def _statistics_pass(self):
        from pyspark.ml.stat import Summarizer
        from pyspark.sql import functions as F

        if self.canonical:  # chunk moments merged in the canonical order: the same bits always
            moments = self.runner.run_pass(None, lambda block: chunk_column_moments(block.matrix),
                                           merged_column_moments)
            rows = moments["rows"][0]
            std = np.sqrt(moments["m2"] / (rows - 1)) if rows > 1 else np.zeros_like(moments["m2"])
            return moments["min"], moments["max"], moments["mean"], std, moments["non_zeros"]
        metrics = Summarizer.metrics("min", "max", "mean", "std", "numNonZeros")
        summary = self.input.base.select(metrics.summary(F.col(FEATURES)).alias("s")).first()["s"]
        return tuple(summary[name].toArray() for name in ("min", "max", "mean", "std", "numNonZeros"))

    def check_magnitude(self, owner: str, power: int = 2) -> None:
        """Refuse values (in the units of the passes) whose squares (``power``-th powers) overflow
        or underflow: one JVM pass unless the column statistics are known."""
        statistics = self.column_statistics()
        check_magnitude(statistics.minimum, statistics.maximum, self.inverse_scale, owner, tiny=True, power=power)

    def scaled_by(self, scale: Optional[np.ndarray], *, unit_rows: bool = False) -> "Rows":
        """A view of these rows whose passes (and :meth:`scaled`) see every feature divided by
        ``scale`` (None or all ones: unscaled) and, with ``unit_rows``, then every row divided by its
        Euclidean norm. The view shares the prepared input, its counts,
        statistics and cached blocks with ``self``; ``self`` and other views keep their own scale.
        The view owns nothing: release the rows it was made from (module notes)."""
        return ScaledRows(self, scale, unit_rows=unit_rows)

    @property
    def units(self) -> Optional[PassUnits]:
        """The units the passes see the rows in (None: as stored)."""
        if self.inverse_scale is None and not self.unit_rows:
            return None
        return PassUnits(self.inverse_scale, self.unit_rows)

    def scaled(self, matrix):
        """A driver-side matrix in the units the passes use (the last one is kept: no re-scaling)."""
        units = self.units
        if units is None:
            return matrix
        if self._scaled_cache is None or self._scaled_cache[0] is not matrix:
            self._scaled_cache = (matrix, units.apply(matrix))
        return self._scaled_cache[1]

    # -- the passes --------------------------------------------------------------------------

    def keyed_partials(self, emit_block: Callable[[Block], Any]):
        """A lazy DataFrame ``(key long, partition long, values array<double>)`` of per-key partials
        in the units of these rows (:meth:`PassRunner.keyed_partials`)."""
        return self.runner.keyed_partials(emit_block, self.units)

    def encode_blocks(self, name: str, encode: Callable[[Block], Dict[str, np.ndarray]], *, scaled: bool = True):
        """``encode`` run once per block, its dicts of arrays persisted until :meth:`release`: a frame
        for :meth:`run_pass` (``over=``), for iterative methods whose passes need only a compact
        form of the rows (:meth:`PassRunner.encode_blocks`)."""
        return self.runner.encode_blocks(name, encode, units=self.units if scaled else None)

    def run_pass(self, name: Optional[str], summarize_block: Callable[[Block], Dict[str, np.ndarray]],
                 merge: Callable[[Dict, Dict], Dict], *, scaled: bool = True,
                 over=None) -> Optional[Dict[str, np.ndarray]]:
        """One pass: every Arrow batch of every partition as a :class:`Block`, summarised and reduced.

        ``scaled=False`` hands the blocks the raw features (a view of :meth:`scaled_by` scales them);
        ``name`` (None: the caller records the pass) goes to ``info["passes"]``. ``over``: a frame of
        :meth:`encode_blocks`; ``summarize_block`` then gets its dicts instead of blocks."""
        return self.runner.run_pass(name, summarize_block, merge, units=self.units if scaled else None,
                                    over=over)


class ScaledRows(Rows):
    """A frozen (rows, scale) view of :class:`Rows` (module notes, "Scaling is a view").

    Parameters
    ----------
    rows : Rows
        The prepared rows (or a view of them: the view is then of its unscaled rows).
    scale : array (p,) or None
        Positive finite divisors; None, or all ones, leaves the features as they are.
    unit_rows : bool
        Then divide every row by its Euclidean norm (the cosine metric of the Relief family).
    """

    def __init__(self, rows: Rows, scale: Optional[np.ndarray], *, unit_rows: bool = False):  # shares its rows' parts
        unscaled = rows.unscaled
        inverse = None
        if scale is not None:
            scale = np.asarray(scale, dtype=np.float64)
            if scale.shape != (unscaled.num_features,) or not np.all(np.isfinite(scale)) or np.any(scale <= 0):
                raise ValueError(f"scale must be {unscaled.num_features} positive finite numbers; got shape "
                                 f"{scale.shape}")
            inverse = None if np.all(scale == 1.0) else 1.0 / scale
        state = dict(vars(unscaled))   # the same parts, info and computed statistics (shared objects)
        state.update(scale=scale, inverse_scale=inverse, unit_rows=bool(unit_rows), _scaled_cache=None)
        object.__setattr__(self, "__dict__", state)
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, name, value):
        if name != "_scaled_cache" and self.__dict__.get("_frozen"):
            raise AttributeError(f"a scaled view is immutable: make another with scaled_by() instead of setting "
                                 f"{name!r}")
        object.__setattr__(self, name, value)

    def __enter__(self) -> "ScaledRows":
        return self

    def __exit__(self, *exc) -> None:
        """Nothing to release: the rows the view was made from own the prepared input."""

    def release(self) -> None:
        """Nothing to release (module notes)."""
