"""The MultiSURF family's loops over one distance table, compiled with Numba.

:func:`sparkfs.core.multisurf.chunk_terms` scores a chunk of queries against every row from one
``(queries, rows)`` distance table, computed once: the per-query moments of the distances (T2),
the rows inside the thresholds per (query, set, class) (S1, the counts of S2), and the weighted
differences ``sum_r a[q, r] |x_q - x_r|`` of the pairs inside them (S2-S4's numerators). In NumPy
each step builds one or more (queries x rows) temporaries (masks, weights, set codes, pair
coefficients), which cost more than the distances themselves on narrow data; the loops here read
the table in place and keep O(1) memory per pair. The formulas stay in
:mod:`sparkfs.core.multisurf` (the thresholds and the term weights are computed there, per
query, between the loops); these functions only count and sum.

Every loop visits the table in a fixed order (the moments and counts: one query after the other,
its rows in column order; the differences: by tiles of rows, then query, then row), so the results
depend on the table and the chunk only (not on threads or partitions). The moments are two-pass
(mean, then squared deviations), as :func:`~sparkfs.core.multisurf.distance_moments`; they agree
with it to rounding (a sequential sum instead of NumPy's pairwise one).

Numba is optional: :data:`AVAILABLE` is False when it cannot be imported, and the caller then uses
the NumPy functions of :mod:`sparkfs.core.multisurf`. The compiled code is cached on disk.
"""

from __future__ import annotations

import numpy as np

from sparkfs.core.numba_jit import AVAILABLE, compile_kernel


def _moments(table, own_column, row_weights, weight, mean, m2):
    """Per query q: the weight, mean and sum of squared deviations of ``table[q, r]`` over the rows
    r != ``own_column[q]``, each weighted by ``row_weights[r]``."""
    num_queries, num_rows = table.shape
    for q in range(num_queries):
        own = own_column[q]
        total_weight = 0.0
        total = 0.0
        for r in range(num_rows):
            if r != own:
                total_weight += row_weights[r]
                total += row_weights[r] * table[q, r]
        level = total / total_weight if total_weight > 0 else 0.0
        squares = 0.0
        for r in range(num_rows):
            if r != own:
                deviation = table[q, r] - level
                squares += row_weights[r] * deviation * deviation
        weight[q] = total_weight
        mean[q] = level
        m2[q] = squares


def _pair_class(row_labels, query_targets, row_targets, hit_bound, q, r):
    """The class of row r as query q sees it: ``row_labels[r]``; on a continuous endpoint
    (``hit_bound > 0``) 0, a hit, when ``|y_q - y_r| < hit_bound``, else 1, a miss."""
    if hit_bound > 0.0:
        return 0 if abs(query_targets[q] - row_targets[r]) < hit_bound else 1
    return row_labels[r]


def _set_counts(table, own_column, near, far, with_far, row_labels, query_targets, row_targets, hit_bound,
                row_weights, counts):
    """``counts[q, 0, c]``: weight of the rows of class c with ``d < near[q]``; ``counts[q, 1, c]``
    (``with_far``): with ``d > far[q]``. The query's own column is in neither. Each query's counts
    are summed without data-dependent branches (a pair outside a set adds 0) in a local (2, C)
    array, stored once."""
    num_queries, num_rows = table.shape
    local = np.zeros((2, counts.shape[2]))
    for q in range(num_queries):
        local[:] = 0.0
        near_level, far_level = near[q], far[q]
        own = own_column[q]
        for r in range(num_rows):
            if r == own:
                continue
            distance = table[q, r]
            label = _pair_class(row_labels, query_targets, row_targets, hit_bound, q, r)
            local[0, label] += row_weights[r] * (distance < near_level)
            if with_far:
                local[1, label] += row_weights[r] * (distance > far_level)
        counts[q] += local


#: Rows per tile of :func:`_weighted_diffs`: a tile of 100 features is 100 KiB, read from the cache
#: by every query of the chunk instead of from memory.
ROW_TILE = 128


def _weighted_diffs(queries, rows, table, own_column, near, far, with_far, row_labels, query_targets, row_targets,
                    hit_bound, row_weights, pair_weights, out):
    """``out[f] += W[q, set(q, r), class(r)] s_r |x_qf - x_rf|`` over the pairs inside a set, by
    tiles of :data:`ROW_TILE` rows (then query, then row in the tile): per (tile, query) the rows
    inside a set and their coefficients are gathered first, then a loop without branches forms the
    query's sum over the tile in a local (p,) array (the feature loop vectorised), added to ``out``."""
    num_queries, num_rows = table.shape
    num_features = queries.shape[1]
    local = np.empty(num_features)
    members = np.empty(ROW_TILE, dtype=np.int64)
    coefficients = np.empty(ROW_TILE)
    for tile_start in range(0, num_rows, ROW_TILE):
        tile_stop = min(tile_start + ROW_TILE, num_rows)
        for q in range(num_queries):
            count = 0
            own, near_level, far_level = own_column[q], near[q], far[q]
            for r in range(tile_start, tile_stop):
                if r == own:
                    continue
                distance = table[q, r]
                in_near = distance < near_level
                in_far = with_far and distance > far_level
                label = _pair_class(row_labels, query_targets, row_targets, hit_bound, q, r)
                coefficients[count] = pair_weights[q, 0 if in_near else 1, label] * row_weights[r]
                members[count] = r
                count += (in_near or in_far) and coefficients[count] != 0.0
            if count == 0:
                continue
            local[:] = 0.0
            query = queries[q]
            for k in range(count):
                row = rows[members[k]]
                coefficient = coefficients[k]
                for f in range(num_features):
                    local[f] += coefficient * abs(query[f] - row[f])
            for f in range(num_features):
                out[f] += local[f]


if AVAILABLE:
    # inlined into the two kernels below at compile time (no call per pair)
    _pair_class = compile_kernel(_pair_class, inline=True)
    _moments_compiled = compile_kernel(_moments)
    _set_counts_compiled = compile_kernel(_set_counts)
    _weighted_diffs_compiled = compile_kernel(_weighted_diffs)


def _floats(values):
    return np.ascontiguousarray(values, dtype=np.float64)


def moments(table: np.ndarray, own_column: np.ndarray, row_weights: np.ndarray):
    """(weight, mean, m2) per query of ``table`` (m, n) without each query's own column."""
    size = table.shape[0]
    weight, mean, m2 = np.zeros(size), np.zeros(size), np.zeros(size)
    _moments_compiled(_floats(table), np.asarray(own_column, dtype=np.int64), _floats(row_weights), weight, mean, m2)
    return weight, mean, m2


def _labels_and_targets(query_labels, row_labels, hit_bound):
    """The kernels' (row classes, query targets, row targets, bound): classes (``hit_bound`` None)
    or the targets of a continuous endpoint (:func:`sparkfs.core.multisurf.pair_classes`)."""
    if hit_bound is None:
        return np.asarray(row_labels, dtype=np.int64), np.zeros(0), np.zeros(0), 0.0
    return np.zeros(0, dtype=np.int64), _floats(query_labels), _floats(row_labels), float(hit_bound)


def set_counts(table, own_column, near, far, with_far: bool, row_labels, row_weights, num_classes: int, *,
               query_labels=None, hit_bound=None) -> np.ndarray:
    """Per (query, near/far, class) the weight of the rows inside the thresholds, (m, 2, C); with
    ``hit_bound`` the labels are targets and the classes a pair's hit (0) or miss (1)."""
    counts = np.zeros((table.shape[0], 2, num_classes))
    _set_counts_compiled(_floats(table), np.asarray(own_column, dtype=np.int64), _floats(near), _floats(far),
                         bool(with_far), *_labels_and_targets(query_labels, row_labels, hit_bound),
                         _floats(row_weights), counts)
    return counts


def weighted_diffs(queries, rows, table, own_column, near, far, with_far: bool, row_labels, row_weights,
                   pair_weights, *, query_labels=None, hit_bound=None) -> np.ndarray:
    """``sum_q sum_r a[q, r] |x_q - x_r|`` (p,) on dense rows, ``a`` from ``pair_weights`` (m, 2, C)."""
    out = np.zeros(queries.shape[1])
    if table.size:
        _weighted_diffs_compiled(_floats(queries), _floats(rows), _floats(table),
                                 np.asarray(own_column, dtype=np.int64),
                                 _floats(near), _floats(far), bool(with_far),
                                 *_labels_and_targets(query_labels, row_labels, hit_bound),
                                 _floats(row_weights), _floats(pair_weights), out)
    return out
