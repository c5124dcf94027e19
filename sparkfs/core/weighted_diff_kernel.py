"""``sum_{q, r} a[q, r] |x_q - x_r|`` per feature on dense blocks, compiled with Numba.

The MultiSURF family's weighted-difference pass (:func:`sparkfs.core.multisurf.diff_sums`) adds
the differences of the pairs inside its distance thresholds: the pairs outside (most of them for
MultiSURF, whose near set is the rows closer than the mean minus half a standard deviation) have
a zero weight. The NumPy path builds an (n, p) difference per query whatever the weights; the
kernel here skips the zero weights and adds into the (p,) accumulator directly (no temporary).
Sums are taken in (query, row) order, so the result agrees with the NumPy path to rounding only.

Numba is optional: :data:`AVAILABLE` is False when it cannot be imported, and the caller then
uses NumPy. The compiled code is cached on disk (``cache=True``).
"""

from __future__ import annotations

import numpy as np

from sparkfs.core.numba_jit import AVAILABLE, compile_kernel


def _weighted_abs_diffs(queries, rows, coefficients, out, per_query):
    num_queries, num_features = queries.shape
    for q in range(num_queries):
        target = q if per_query else 0
        for r in range(rows.shape[0]):
            weight = coefficients[q, r]
            if weight != 0.0:
                for f in range(num_features):
                    out[target, f] += weight * abs(queries[q, f] - rows[r, f])


if AVAILABLE:
    _compiled = compile_kernel(_weighted_abs_diffs)
else:  # pragma: no cover
    _compiled = None


def weighted_abs_diffs(queries: np.ndarray, rows: np.ndarray, coefficients: np.ndarray, per_query: bool) -> np.ndarray:
    """``sum_r a[q, r] |x_q - x_r|``: per query (m, p), or summed over the queries (p,)."""
    queries = np.ascontiguousarray(queries, dtype=np.float64)
    rows = np.ascontiguousarray(rows, dtype=np.float64)
    coefficients = np.ascontiguousarray(coefficients, dtype=np.float64)
    out = np.zeros((queries.shape[0] if per_query else 1, queries.shape[1]))
    if out.size and rows.shape[0]:
        _compiled(queries, rows, coefficients, out, per_query)
    return out if per_query else out[0]
