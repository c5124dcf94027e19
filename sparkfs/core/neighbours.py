"""Blocked nearest-neighbour search: distances, per-class k nearest, and the merge of candidates.

Pure NumPy/SciPy (no pyspark). This is the per-block kernel of the distributed engine in
:mod:`sparkfs.spark.neighbours` and of anything that needs "the k nearest rows of each class"
(Relief family, Lmba/Simba, instance weighting):

* :func:`pairwise_distances` -- distances between a block of queries and a block of rows, dense
  or CSR on either side. Euclidean goes through the GEMM identity
  ``|q - r|^2 = |q|^2 + |r|^2 - 2 q.r`` (clipped at 0) and is returned *squared*: the square root
  is monotone, so the neighbours are the same and no extra ties are created. Manhattan is
  computed explicitly: on dense blocks by a Numba kernel that vectorises over queries and returns
  exactly ``scipy.spatial.distance.cdist(..., "cityblock")`` at about 5 x its speed
  (:mod:`sparkfs.core.manhattan_kernel`; ``cdist`` itself when Numba is missing); on sparse blocks from
  the L1 norms and a correction over the features both rows have, so sparse rows stay sparse.
* :func:`k_nearest_per_class` -- for each query and each class, the k nearest rows of the
  block, the query itself excluded by row id, ties broken by the smaller row id.
* :func:`local_neighbour_table` -- the two above over query chunks x row blocks of at most
  ``block_size`` rows each, so the largest temporary is a ``block_size x block_size`` distance
  matrix: never an n x n one.
* :func:`merge_neighbour_tables` -- the reduce step: two candidate tables for the same queries
  (from disjoint sets of rows) -> the k nearest of their union, per query and class.

Numeric policy
--------------
* Ordering is lexicographic on (distance, row id): a tie at the k-th place keeps the rows with
  the smaller ids, so the result does not depend on how the rows are split into blocks or
  partitions. Ties are ties of the *computed* distances; with the GEMM identity two rows at the
  same true distance can differ in the last bits (integer-valued data is exact).
* A class with fewer than k candidates in a block is padded with id ``-1`` and distance
  ``+inf``; pads sort last and are dropped by the merge as soon as real candidates arrive.
* Inputs must be finite (the Spark layer checks); a NaN distance would not order.

Selection: the first block a query meets is partially sorted (``np.partition``) on a strided
sample only, which bounds its k-th distance; later blocks compare against the k-th distance
found so far, so most distances are touched once by a comparison.

Complexity
----------
Euclidean: one GEMM (the norms ride along as two extra columns), ``2 m n p`` flops for m queries and n rows
(dense), or the sparse product (proportional to the co-non-zeros) for CSR. Manhattan dense: ``3 m n p``
(subtract, abs, add); sparse:
``O(m + n)`` norms plus ``O(sum_j m_j n_j)`` over features j, where ``m_j`` / ``n_j`` are the
numbers of queries / rows with a non-zero in feature j. Selection: ``O(m n)`` per block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
import scipy.sparse as sp
from scipy.spatial.distance import cdist

from sparkfs.core import manhattan_kernel
from sparkfs.core.co_nonzero import co_nonzero_chunks
from sparkfs.core.sparse_input import is_sparse

Matrix = Union[np.ndarray, sp.csr_matrix]

#: Supported distance metrics.
METRICS = ("euclidean", "manhattan")

#: Row id of a padding entry (no row); its distance is +inf.
PAD_ID = -1

#: Columns sampled per neighbour to bound the k-th distance of a block (see k_nearest_per_class).
_BOUND_SAMPLE_PER_NEIGHBOUR = 32



@dataclass(frozen=True)
class NeighbourTable:
    """Per query and per class, the k nearest rows found so far, nearest first.

    Attributes
    ----------
    query_ids : ndarray of int64, shape (m,)
        Row id of each query (the queries are rows of the data set).
    neighbour_ids : ndarray of int64, shape (m, C, k)
        ``neighbour_ids[i, c, j]`` is the row id of the (j+1)-th nearest row of class c to query
        i, or ``PAD_ID`` (-1) when fewer than j+1 rows of class c have been seen.
    distances : ndarray of float64, shape (m, C, k)
        The matching distances (squared for Euclidean), ``+inf`` for pads. Each ``[i, c, :]`` is
        sorted by (distance, row id).
    vectors : ndarray of float64, shape (m, C, k, p), optional
        The neighbours' feature vectors (zeros for pads), when asked for: an iterative method
        then needs no second pass to read them (one Spark job per step).
    """

    query_ids: np.ndarray
    neighbour_ids: np.ndarray
    distances: np.ndarray
    vectors: Optional[np.ndarray] = None

    @property
    def num_queries(self) -> int:
        return int(self.neighbour_ids.shape[0])

    @property
    def num_classes(self) -> int:
        return int(self.neighbour_ids.shape[1])

    @property
    def k(self) -> int:
        return int(self.neighbour_ids.shape[2])

    def rows(self, query_positions) -> "NeighbourTable":
        """The table restricted to some queries (positions in this table)."""
        return NeighbourTable(
            self.query_ids[query_positions], self.neighbour_ids[query_positions], self.distances[query_positions],
            None if self.vectors is None else self.vectors[query_positions],
        )


def empty_neighbour_table(query_ids, num_classes: int, k: int) -> NeighbourTable:
    """A table with only pads: the neutral element of :func:`merge_neighbour_tables`."""
    query_ids = np.asarray(query_ids, dtype=np.int64)
    shape = (query_ids.shape[0], num_classes, k)
    return NeighbourTable(query_ids, np.full(shape, PAD_ID, dtype=np.int64), np.full(shape, np.inf))


def check_metric(metric: str) -> str:
    """Return ``metric`` if supported, else raise a ValueError naming the choices."""
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}: use one of {METRICS}")
    return metric


def squared_row_norms(matrix: Matrix) -> np.ndarray:
    """Squared Euclidean norm of every row (dense or CSR)."""
    if is_sparse(matrix):
        return np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel()
    return np.einsum("ij,ij->i", matrix, matrix)


def _abs_row_sums(matrix: Matrix) -> np.ndarray:
    if is_sparse(matrix):
        return np.asarray(abs(matrix).sum(axis=1)).ravel()
    return np.abs(matrix).sum(axis=1)


def _squared_euclidean(query_matrix: Matrix, row_matrix: Matrix, shift: Optional[np.ndarray]) -> np.ndarray:
    """``|q - r|^2`` via the GEMM identity, clipped at 0 (rounding can make it slightly negative)."""
    both_dense = not is_sparse(query_matrix) and not is_sparse(row_matrix)
    if both_dense:
        # One GEMM gives |q|^2 + |r|^2 - 2 q.r directly: [q, |q|^2, 1] . [-2 r, 1, |r|^2]. Both
        # sides are first translated by -shift (distances are translation invariant), which keeps
        # the identity from cancelling catastrophically on data far from 0.
        num_features = query_matrix.shape[1]
        query_augmented = np.empty((query_matrix.shape[0], num_features + 2))
        row_augmented = np.empty((row_matrix.shape[0], num_features + 2))
        if shift is None:
            query_augmented[:, :num_features] = query_matrix
            row_augmented[:, :num_features] = row_matrix
        else:
            np.subtract(query_matrix, shift, out=query_augmented[:, :num_features])
            np.subtract(row_matrix, shift, out=row_augmented[:, :num_features])
        query_augmented[:, num_features] = squared_row_norms(query_augmented[:, :num_features])
        query_augmented[:, num_features + 1] = 1.0
        row_augmented[:, num_features + 1] = squared_row_norms(row_augmented[:, :num_features])
        row_augmented[:, :num_features] *= -2.0
        row_augmented[:, num_features] = 1.0
        distances = query_augmented @ row_augmented.T
    else:
        query_norms = squared_row_norms(query_matrix)
        row_norms = squared_row_norms(row_matrix)
        if is_sparse(query_matrix) and is_sparse(row_matrix):
            cross = (query_matrix @ row_matrix.T).toarray()
        elif is_sparse(row_matrix):
            cross = np.asarray(row_matrix @ query_matrix.T).T
        else:
            cross = np.asarray(query_matrix @ row_matrix.T)
        distances = np.ascontiguousarray(cross, dtype=np.float64)
        distances *= -2.0
        distances += query_norms[:, None]
        distances += row_norms[None, :]
    np.maximum(distances, 0.0, out=distances)
    return distances


def _manhattan_sparse(query_matrix: Matrix, row_matrix: Matrix) -> np.ndarray:
    """``sum_j |q_j - r_j|`` for CSR (or mixed) blocks without densifying either side.

    ``|q - r|_1 = |q|_1 + |r|_1 - sum_{j: q_j != 0, r_j != 0} (|q_j| + |r_j| - |q_j - r_j|)``: the
    L1 norms plus a correction over the features both rows store (the correction is 0 when
    either value is 0, so explicit zeros in the CSR structure are harmless).
    """
    num_queries, num_rows = query_matrix.shape[0], row_matrix.shape[0]
    distances = _abs_row_sums(sp.csr_matrix(query_matrix))[:, None] + _abs_row_sums(sp.csr_matrix(row_matrix))[None, :]
    flat_distances = distances.reshape(-1)
    for query_csc, row_csc, query_entry, row_entry in co_nonzero_chunks(query_matrix, row_matrix):
        if query_entry.size:
            query_values = query_csc.data[query_entry]
            row_values = row_csc.data[row_entry]
            correction = np.abs(query_values) + np.abs(row_values) - np.abs(query_values - row_values)
            flat_index = query_csc.indices[query_entry].astype(np.int64) * num_rows + row_csc.indices[row_entry]
            flat_distances -= np.bincount(flat_index, weights=correction, minlength=num_queries * num_rows)
    np.maximum(distances, 0.0, out=distances)
    return distances


def weighted_features(matrix: Matrix, feature_weights: Optional[np.ndarray]) -> Matrix:
    """``matrix * |w|`` column-wise (CSR stays CSR): the rows in the weighted metric."""
    if feature_weights is None:
        return matrix
    magnitude = np.abs(np.asarray(feature_weights, dtype=np.float64))
    if is_sparse(matrix):
        weighted = sp.csr_matrix(matrix, copy=True)
        weighted.data *= magnitude[weighted.indices]
        return weighted
    return np.asarray(matrix) * magnitude


def pairwise_distances(
    query_matrix: Matrix,
    row_matrix: Matrix,
    metric: str = "euclidean",
    *,
    shift: Optional[np.ndarray] = None,
    feature_weights: Optional[np.ndarray] = None,
) -> np.ndarray:
    """Distances between every query and every row of a block.

    Parameters
    ----------
    query_matrix : ndarray or csr_matrix, shape (m, p)
    row_matrix : ndarray or csr_matrix, shape (n, p)
    metric : {"euclidean", "manhattan"}
        ``"euclidean"`` returns the *squared* distance ``|q - r|_2^2`` (same order as the
        distance), through ``|q|^2 + |r|^2 - 2 q.r`` clipped at 0; ``"manhattan"`` returns
        ``|q - r|_1``.
    shift : ndarray of shape (p,), optional
        Euclidean on two dense blocks only: both sides are translated by ``-shift`` before the
        GEMM (pass the data's mean to avoid cancellation when the data sit far from 0). Ignored
        otherwise; the result does not depend on it except for rounding.
    feature_weights : ndarray of shape (p,), optional
        Distances in the weighted metric, i.e. between ``w * q`` and ``w * r``:
        ``sum_f w_f^2 (q_f - r_f)^2`` (Euclidean, squared) or ``sum_f |w_f| |q_f - r_f|``
        (Manhattan). The metric of Simba and Lmba (Li & Lu 2009, ``||z||_w``). A ``shift`` is
        then applied in the weighted space as ``round(shift * |w|)`` (rounded, like the
        engine's own shift, so integer-valued data stay exact).

    Returns
    -------
    ndarray of float64, shape (m, n)
    """
    check_metric(metric)
    if feature_weights is not None:
        query_matrix = weighted_features(query_matrix, feature_weights)
        row_matrix = weighted_features(row_matrix, feature_weights)
        if shift is not None:
            shift = np.round(shift * np.abs(np.asarray(feature_weights, dtype=np.float64)))
    if metric == "euclidean":
        return _squared_euclidean(query_matrix, row_matrix, shift)
    if not is_sparse(query_matrix) and not is_sparse(row_matrix):
        if manhattan_kernel.AVAILABLE:
            return manhattan_kernel.manhattan_dense(query_matrix, row_matrix)
        return cdist(np.asarray(query_matrix, dtype=np.float64), np.asarray(row_matrix, dtype=np.float64), "cityblock")
    return _manhattan_sparse(query_matrix, row_matrix)


def _k_smallest_sorted(distances: np.ndarray, column_ids: np.ndarray, k: int):
    """Per row of ``distances``, the k smallest by (distance, id); ``column_ids`` increasing.

    Returns (ids, distances), each (m, k), padded with (PAD_ID, inf) when there are fewer than
    k columns or when the selected distance is +inf (excluded entries).
    """
    num_queries, num_columns = distances.shape
    out_ids = np.full((num_queries, k), PAD_ID, dtype=np.int64)
    out_distances = np.full((num_queries, k), np.inf)
    if num_columns == 0 or num_queries == 0:
        return out_ids, out_distances
    if num_columns <= k:
        # Stable sort on distance keeps equal distances in increasing-id (column) order.
        order = np.argsort(distances, axis=1, kind="stable")
        out_distances[:, :num_columns] = np.take_along_axis(distances, order, axis=1)
        out_ids[:, :num_columns] = column_ids[order]
    else:
        kth_distance = np.partition(distances, k - 1, axis=1)[:, k - 1]
        # Every entry no farther than the k-th distance: exactly k unless there are ties at it.
        _fill_k_nearest(distances, column_ids, distances <= kth_distance[:, None], out_ids, out_distances)
    out_ids[np.isinf(out_distances)] = PAD_ID
    return out_ids, out_distances


def _fill_k_nearest(distances, column_ids, candidate_mask, out_ids, out_distances) -> None:
    """Write into (out_ids, out_distances) the k nearest of each query among the masked entries.

    np.nonzero is row-major: columns (hence ids) increase within each query, so a stable sort on
    (query, distance) breaks distance ties by the smaller id.
    """
    num_queries, k = out_ids.shape
    query_of_candidate, column_of_candidate = np.nonzero(candidate_mask)
    if query_of_candidate.size == 0:
        return
    candidate_distance = distances[query_of_candidate, column_of_candidate]
    order = np.lexsort((column_of_candidate, candidate_distance, query_of_candidate))
    query_sorted = query_of_candidate[order]
    first_of_query = np.searchsorted(query_sorted, np.arange(num_queries))
    rank = np.arange(order.size) - first_of_query[query_sorted]
    keep = rank < k
    out_ids[query_sorted[keep], rank[keep]] = column_ids[column_of_candidate[order][keep]]
    out_distances[query_sorted[keep], rank[keep]] = candidate_distance[order][keep]


def _k_smallest_below_bound(distances: np.ndarray, column_ids: np.ndarray, bound: np.ndarray, k: int):
    """Like :func:`_k_smallest_sorted`, but only entries with ``distance <= bound[i]`` are kept.

    Used once a query already has k candidates: anything farther than its current k-th
    distance cannot enter its table, so one comparison replaces the selection (``<=`` keeps
    equal distances, which may still win on the id tie-break).
    """
    num_queries = distances.shape[0]
    out_ids = np.full((num_queries, k), PAD_ID, dtype=np.int64)
    out_distances = np.full((num_queries, k), np.inf)
    _fill_k_nearest(distances, column_ids, distances <= bound[:, None], out_ids, out_distances)
    out_ids[np.isinf(out_distances)] = PAD_ID
    return out_ids, out_distances


def k_nearest_per_class(
    distances: np.ndarray,
    query_ids,
    row_ids,
    row_labels,
    *,
    num_classes: int,
    k: int,
    bound: Optional[np.ndarray] = None,
) -> NeighbourTable:
    """Per query and per class, the k nearest rows of one block, the query itself excluded.

    Parameters
    ----------
    distances : ndarray, shape (m, n)
        From :func:`pairwise_distances`. Modified in place: the entry of a query and itself is
        set to ``+inf``.
    query_ids : array of int, shape (m,)
        Row ids of the queries; a row with the same id as a query is that query and is never
        its own neighbour.
    row_ids : array of int, shape (n,)
        Row ids of the block's rows (unique). When the block is sorted by (label, id) the
        classes are read as column slices without a copy.
    row_labels : array of int, shape (n,)
        Class index 0..C-1 of each row.
    num_classes, k : int
    bound : ndarray, shape (m, C), optional
        Current k-th distance of each query and class (``+inf`` if not known yet). Rows
        farther than it are left out of the result, since they cannot survive a merge with
        the table that produced the bound; the merged result is the same, only cheaper.
        Where no finite bound is known and the class has at least ``64 k`` columns here, the
        k-th distance of a strided sample of ``32 k`` columns serves as the bound (the k-th
        smallest of a subset is never below the k-th smallest of the whole class).

    Returns
    -------
    NeighbourTable with (m, C, k) entries sorted by (distance, row id), pads last.
    """
    query_ids = np.asarray(query_ids, dtype=np.int64)
    row_ids = np.asarray(row_ids, dtype=np.int64)
    row_labels = np.asarray(row_labels).astype(np.int64, copy=False)
    num_queries = query_ids.shape[0]
    table_ids = np.full((num_queries, num_classes, k), PAD_ID, dtype=np.int64)
    table_distances = np.full((num_queries, num_classes, k), np.inf)
    order = np.lexsort((row_ids, row_labels))
    if np.any(order != np.arange(order.size)):
        distances = distances[:, order]
        row_ids, row_labels = row_ids[order], row_labels[order]
    class_starts = np.searchsorted(row_labels, np.arange(num_classes + 1))
    for class_index in range(num_classes):
        start, stop = class_starts[class_index], class_starts[class_index + 1]
        if stop == start:
            continue
        class_ids = row_ids[start:stop]
        class_distances = distances[:, start:stop]  # a view
        # Exclude each query from its own neighbours (by id, whatever its distance).
        position = np.minimum(np.searchsorted(class_ids, query_ids), class_ids.size - 1)
        is_self = class_ids[position] == query_ids
        class_distances[np.flatnonzero(is_self), position[is_self]] = np.inf
        class_bound = None if bound is None else bound[:, class_index]
        sample_size = _BOUND_SAMPLE_PER_NEIGHBOUR * k
        if (class_bound is None or not np.all(np.isfinite(class_bound))) and stop - start >= 2 * sample_size:
            # The k-th distance among any subset of the class bounds the k-th of the class from
            # above: a partial sort of a strided sample replaces the one of the whole block.
            step = (stop - start) // sample_size
            sample_bound = np.partition(class_distances[:, ::step], k - 1, axis=1)[:, k - 1]
            class_bound = sample_bound if class_bound is None else np.minimum(class_bound, sample_bound)
        if class_bound is not None and np.all(np.isfinite(class_bound)):
            ids, dists = _k_smallest_below_bound(class_distances, class_ids, class_bound, k)
        else:
            ids, dists = _k_smallest_sorted(class_distances, class_ids, k)
        table_ids[:, class_index, :] = ids
        table_distances[:, class_index, :] = dists
    return NeighbourTable(query_ids, table_ids, table_distances)


def merge_neighbour_tables(left: NeighbourTable, right: NeighbourTable) -> NeighbourTable:
    """The k nearest of the union of two candidate tables (the reduce step).

    Both tables must describe the same queries in the same order, with candidates from
    disjoint sets of rows. Associative and commutative: the result is sorted by
    (distance, row id), so the order of merging does not matter.
    """
    if left.neighbour_ids.shape != right.neighbour_ids.shape or not np.array_equal(left.query_ids, right.query_ids):
        raise ValueError(
            "cannot merge neighbour tables of different queries or shapes: "
            f"{left.neighbour_ids.shape} and {right.neighbour_ids.shape}"
        )
    k = left.k
    ids = np.concatenate([left.neighbour_ids, right.neighbour_ids], axis=2)
    dists = np.concatenate([left.distances, right.distances], axis=2)
    # Pads (id -1, inf) must sort after every real candidate, including real ones at +inf.
    id_key = np.where(ids == PAD_ID, np.iinfo(np.int64).max, ids)
    order = np.lexsort((id_key, dists), axis=2)[:, :, :k]
    vectors = None
    if left.vectors is not None and right.vectors is not None:
        both = np.concatenate([left.vectors, right.vectors], axis=2)
        vectors = np.take_along_axis(both, order[..., None], axis=2)
    return NeighbourTable(
        left.query_ids, np.take_along_axis(ids, order, axis=2), np.take_along_axis(dists, order, axis=2), vectors
    )


def attach_vectors(table: NeighbourTable, row_matrix: Matrix, row_ids) -> NeighbourTable:
    """The table with its neighbours' rows of ``row_matrix`` (ids looked up in ``row_ids``) attached.

    Every non-pad neighbour id must be among ``row_ids``; pads get zero vectors.
    """
    row_ids = np.asarray(row_ids, dtype=np.int64)
    order = np.argsort(row_ids, kind="stable")
    flat_ids = table.neighbour_ids.reshape(-1)
    real = flat_ids != PAD_ID
    vectors = np.zeros((flat_ids.size, row_matrix.shape[1]))
    if real.any():
        position = order[np.searchsorted(row_ids[order], flat_ids[real])]
        rows = row_matrix[position]
        vectors[real] = rows.toarray() if is_sparse(rows) else rows
    return NeighbourTable(table.query_ids, table.neighbour_ids, table.distances,
                          vectors.reshape(table.neighbour_ids.shape + (row_matrix.shape[1],)))


#: The classes of a (query, row) pair on a continuous endpoint: a hit or a miss.
HIT, MISS = 0, 1


def pair_classes(query_targets, row_targets, hit_bound: float) -> np.ndarray:
    """Per (query, row) :data:`HIT` when ``|y_q - y_r| < hit_bound``, else :data:`MISS`, (m, n):
    scikit-rebate's continuous endpoint, ``hit_bound`` the target's sample standard deviation."""
    query_targets = np.asarray(query_targets, dtype=np.float64)
    row_targets = np.asarray(row_targets, dtype=np.float64)
    return np.where(np.abs(query_targets[:, None] - row_targets[None, :]) < hit_bound, HIT, MISS).astype(np.int64)


def k_nearest_per_pair_class(distances: np.ndarray, query_ids, row_ids, pair_classes: np.ndarray, *,
                             num_classes: int, k: int) -> NeighbourTable:
    """:func:`k_nearest_per_class` where a row's class depends on the query: ``pair_classes``
    (m, n) holds the class of each (query, row) pair (a continuous endpoint's hit or miss,
    :func:`sparkfs.core.multisurf.pair_classes`). Per query and class, the k nearest rows of that
    class for that query, the query itself excluded, sorted by (distance, row id), pads last."""
    query_ids = np.asarray(query_ids, dtype=np.int64)
    row_ids = np.asarray(row_ids, dtype=np.int64)
    order = np.argsort(row_ids, kind="stable")
    if np.any(order != np.arange(order.size)):
        distances, row_ids, pair_classes = distances[:, order], row_ids[order], pair_classes[:, order]
    table_ids = np.full((query_ids.size, num_classes, k), PAD_ID, dtype=np.int64)
    table_distances = np.full((query_ids.size, num_classes, k), np.inf)
    if row_ids.size == 0:
        return NeighbourTable(query_ids, table_ids, table_distances)
    position = np.minimum(np.searchsorted(row_ids, query_ids), row_ids.size - 1)
    is_self = row_ids[position] == query_ids
    for class_index in range(num_classes):
        class_distances = np.where(pair_classes == class_index, distances, np.inf)
        class_distances[np.flatnonzero(is_self), position[is_self]] = np.inf
        table_ids[:, class_index, :], table_distances[:, class_index, :] = _k_smallest_sorted(class_distances,
                                                                                            row_ids, k)
    return NeighbourTable(query_ids, table_ids, table_distances)


def local_neighbour_table(
    query_matrix: Matrix,
    query_ids,
    row_matrix: Matrix,
    row_ids,
    row_labels,
    *,
    num_classes: int,
    k: int,
    metric: str = "euclidean",
    block_size: int = 2048,
    shift: Optional[np.ndarray] = None,
    feature_weights: Optional[np.ndarray] = None,
    query_targets=None,
    hit_bound: Optional[float] = None,
) -> NeighbourTable:
    """Per query and class, the k nearest among ``row_matrix``, computed block by block.

    The queries are processed in chunks of ``block_size`` and the rows in blocks of
    ``block_size``, so the largest temporary is one ``block_size x block_size`` distance matrix
    (plus, for sparse Manhattan, a bounded number of co-non-zero triples).

    Parameters
    ----------
    query_matrix : ndarray or csr_matrix, shape (m, p)
    query_ids : array of int, shape (m,)
    row_matrix : ndarray or csr_matrix, shape (n, p)
    row_ids, row_labels : arrays of shape (n,)
    num_classes, k : int
    metric : {"euclidean", "manhattan"}
    block_size : int
        Rows per block and queries per chunk.
    shift : ndarray of shape (p,), optional
        See :func:`pairwise_distances`.
    feature_weights : ndarray of shape (p,), optional
        Search in the weighted metric (see :func:`pairwise_distances`); distances returned in it.
    query_targets, hit_bound : optional
        A continuous endpoint: ``row_labels`` are the rows' targets, and a row's class for a query
        is a hit (0) when their targets differ by less than ``hit_bound``, else a miss (1)
        (:func:`k_nearest_per_pair_class`; ``num_classes`` is 2).

    Returns
    -------
    NeighbourTable of the m queries (pads where a class has fewer than k rows here).
    """
    check_metric(metric)
    if block_size < 1:
        raise ValueError(f"block_size must be a positive number of rows, got {block_size}")
    query_ids = np.asarray(query_ids, dtype=np.int64)
    row_ids = np.asarray(row_ids, dtype=np.int64)
    continuous = hit_bound is not None
    row_labels = np.asarray(row_labels, dtype=np.float64) if continuous else np.asarray(row_labels).astype(np.int64,
                                                                                                        copy=False)
    if is_sparse(query_matrix):
        query_matrix = sp.csr_matrix(query_matrix)
    if is_sparse(row_matrix):
        row_matrix = sp.csr_matrix(row_matrix)
    if feature_weights is not None:  # weight once here, not once per block pair
        query_matrix = weighted_features(query_matrix, feature_weights)
        row_matrix = weighted_features(row_matrix, feature_weights)
        if shift is not None:
            shift = np.round(shift * np.abs(np.asarray(feature_weights, dtype=np.float64)))
    table = empty_neighbour_table(query_ids, num_classes, k)
    num_queries, num_rows = query_ids.shape[0], row_ids.shape[0]
    ids_out, distances_out = table.neighbour_ids, table.distances
    for row_start in range(0, num_rows, block_size):
        row_block = np.arange(row_start, min(row_start + block_size, num_rows))
        # Sort the block by (label, id) once: each class is then a column slice of the distances.
        row_block = row_block[np.argsort(row_ids[row_block], kind="stable") if continuous
                              else np.lexsort((row_ids[row_block], row_labels[row_block]))]
        block_matrix = row_matrix[row_block]
        for query_start in range(0, num_queries, block_size):
            query_chunk = slice(query_start, min(query_start + block_size, num_queries))
            distances = pairwise_distances(query_matrix[query_chunk], block_matrix, metric, shift=shift)
            if hit_bound is not None:  # continuous
                classes = pair_classes(np.asarray(query_targets)[query_chunk], row_labels[row_block], hit_bound)
                found = k_nearest_per_pair_class(distances, query_ids[query_chunk], row_ids[row_block], classes,
                                                 num_classes=num_classes, k=k)
            else:
                found = k_nearest_per_class(
                    distances, query_ids[query_chunk], row_ids[row_block], row_labels[row_block],
                    num_classes=num_classes, k=k, bound=distances_out[query_chunk, :, k - 1],
                )
            merged = merge_neighbour_tables(
                NeighbourTable(query_ids[query_chunk], ids_out[query_chunk], distances_out[query_chunk]), found
            )
            ids_out[query_chunk] = merged.neighbour_ids
            distances_out[query_chunk] = merged.distances
    return table
