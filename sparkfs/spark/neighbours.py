"""The pair engine: nearest neighbours, pair sums and kernel sums over a prepared :class:`Rows`.

Every margin method is a short loop over these passes (the formulas stay in
:mod:`sparkfs.core.neighbours` and :mod:`sparkfs.core.pairs`; this module only moves data):

* :func:`nearest` -- per query and class, the k nearest rows (ties by row id, the query itself
  excluded), optionally in a weighted metric ``||z||_w^2 = sum_f w_f^2 z_f^2`` (Simba, Lmba).
* :func:`pair_sums` -- ``sum a |x_q - x_r|`` or ``sum a (x_q - x_r)^2`` per feature over given
  (query, row, weight) pairs: Relief margins, Lmba hinge gradients, Simba updates.
* :func:`kernel_sums` -- ``sum_r W_qr k_f(x_qf - x_rf)`` over *all* rows with
  ``W = U_q A U_r^T`` from class indicators or soft memberships: Parzen-Relief, Han & Yu's margin
  vectors against all hits and misses, Parzen-ISE.
* :func:`distance_sums` -- ``sum_r ||x_q - x_r||_2`` per query over all rows: Han & Yu's
  outlying degree of margin vectors.

All four are compositions of the public pass API (:mod:`sparkfs.spark.passes`: a kernel per
block, a merge, what is shipped per batch and what a batch returns); a new method composes its own
the same way, in its own module. One pass -- one Spark job -- per query batch; what a task holds:
its block, the query batch, and one ``block_size x block_size`` temporary (distances or kernel
values).
"""

from __future__ import annotations

from typing import Callable, Optional, Union

import numpy as np
import scipy.sparse as sp

from sparkfs.core.neighbours import (
    NeighbourTable,
    attach_vectors,
    check_metric,
    empty_neighbour_table,
    local_neighbour_table,
    merge_neighbour_tables,
)
from sparkfs.core.pairs import (
    check_difference,
    check_kernel,
    euclidean_distance_sums,
    feature_kernel_sums,
    one_hot,
)
from sparkfs.core.pairs import (
    pair_sums as block_pair_sums,
)
from sparkfs.spark.passes import (  # noqa: F401 (PER_QUERY)
    PER_QUERY,
    ShippedQueries,
    SumsResult,
    batched_pass,
    check_per_query,
    per_query_frame,
    query_rows,
    summed_pass,
)
from sparkfs.spark.rows import Block, Rows, RowSet

#: The result of :func:`pair_sums` and :func:`kernel_sums` (the pass API's :class:`SumsResult`).
PairSumsResult = SumsResult
Queries = Union[RowSet, ShippedQueries]

def _dense_shift(query_matrix) -> Optional[np.ndarray]:
    """Translation for the Euclidean GEMM identity (see core.neighbours.pairwise_distances): the
    queries' mean rounded to integers, so integer-valued data stay exact (exact ties then break by
    row id) while data far from 0 are still brought close to it."""
    if sp.issparse(query_matrix) or query_matrix.shape[0] == 0:
        return None
    return np.round(np.asarray(query_matrix.mean(axis=0)).ravel())


def nearest(rows: Rows, queries: Queries, k: int, *, metric: str = "euclidean",
            feature_weights: Optional[np.ndarray] = None, block_size: int = 2048,
            with_vectors: bool = False, hit_bound: Optional[float] = None) -> NeighbourTable:
    """Per query and class, the k nearest rows of ``rows`` (one pass per query batch).

    Parameters
    ----------
    rows : Rows
    queries : RowSet or ShippedQueries
        Usually rows of the same data (then a query is never its own neighbour, by row id).
    k : int
    metric : {"euclidean", "manhattan"}
        Euclidean distances are returned squared.
    feature_weights : ndarray (p,), optional
        Search in the weighted metric (distances between ``w * x``); independent of the
        feature scaling of ``rows`` (a view of :meth:`Rows.scaled_by`), which the pair sums share.
    block_size : int
        Rows per block and queries per chunk of the distance computation.
    with_vectors : bool
        Also return the neighbours' (scaled) feature vectors, ``table.vectors`` (m, C, k, p),
        dense: a search and what needs the neighbours' values in one pass (for small k x p).
    hit_bound : float, optional
        ``rows`` hold a continuous target (``Rows(targets=True)``): the classes are each query's
        hits (targets within ``hit_bound`` of its own) and misses, C = 2; the batch's targets
        travel with the pass.

    Returns
    -------
    NeighbourTable (m, C, k), pads (id -1, distance inf) where a class has fewer than k rows.

    Notes
    -----
    Cost per pass: ``2 m_batch n p`` flops (Euclidean, dense) plus the selection, spread over
    the partitions; the driver receives merged (m_batch, C, k) tables.
    """
    check_metric(metric)
    if feature_weights is not None:
        feature_weights = np.asarray(feature_weights, dtype=np.float64)
        if feature_weights.shape != (rows.num_features,) or not np.all(np.isfinite(feature_weights)):
            raise ValueError(f"feature_weights must be {rows.num_features} finite numbers; got shape "
                             f"{feature_weights.shape}")
    num_classes = 2 if hit_bound is not None else rows.num_classes
    shipped_queries, queries = queries, query_rows(queries)
    query_targets = queries.labels
    query_matrix = rows.scaled(queries.matrix)
    shift = _dense_shift(query_matrix)
    neighbour_ids = np.zeros((len(queries), num_classes, k), dtype=np.int64)
    distances = np.zeros((len(queries), num_classes, k))
    vectors = np.zeros((len(queries), num_classes, k, rows.num_features)) if with_vectors else None

    def summarize(block: Block, shipped):
        table = local_neighbour_table(
            shipped["matrix"], shipped["ids"], block.matrix, block.ids, block.labels, num_classes=num_classes, k=k,
            metric=metric, block_size=block_size, shift=shift, feature_weights=feature_weights,
            query_targets=shipped.get("targets"), hit_bound=hit_bound,
        )
        if with_vectors:
            table = attach_vectors(table, block.matrix, block.ids)
            return {"neighbour_ids": table.neighbour_ids, "distances": table.distances, "vectors": table.vectors}
        return {"neighbour_ids": table.neighbour_ids, "distances": table.distances}

    def merge(left, right):
        query_ids = np.zeros(left["neighbour_ids"].shape[0], dtype=np.int64)  # same queries on both sides
        merged = merge_neighbour_tables(
            NeighbourTable(query_ids, left["neighbour_ids"], left["distances"], left.get("vectors")),
            NeighbourTable(query_ids, right["neighbour_ids"], right["distances"], right.get("vectors")))
        summary = {"neighbour_ids": merged.neighbour_ids, "distances": merged.distances}
        if merged.vectors is not None:
            summary["vectors"] = merged.vectors
        return summary

    # What is shipped is the query batch; what returns is (m_batch, C, k) ids and distances, plus
    # (m_batch, C, k, p) vectors with with_vectors: both budgeted.
    returned = num_classes * k * (16.0 + (8.0 * rows.num_features if with_vectors else 0.0))
    def payload(batch):
        return {} if hit_bound is None else {"targets": query_targets[batch]}

    for batch, summary in batched_pass(rows, shipped_queries, "neighbour search", summarize, merge,
                                       bytes_per_query=returned, payload=payload,
                                       shipped_bytes_per_query=0.0 if hit_bound is None else 8.0):
        if summary is None:
            empty = empty_neighbour_table(queries.ids[batch], num_classes, k)
            summary = {"neighbour_ids": empty.neighbour_ids, "distances": empty.distances}
        neighbour_ids[batch], distances[batch] = summary["neighbour_ids"], summary["distances"]
        if with_vectors and "vectors" in summary:
            vectors[batch] = summary["vectors"]
    return NeighbourTable(queries.ids.copy(), neighbour_ids, distances, vectors)


def pair_sums(rows: Rows, queries: Queries, query_positions, neighbour_ids, weights, *,
              difference: str = "abs", per_query: Optional[str] = None) -> PairSumsResult:
    """``sum_j weights_j d(x_{q_j}, x_{r_j})`` per feature over (query, neighbour id, weight) pairs.

    Parameters
    ----------
    rows : Rows
    queries : RowSet or ShippedQueries
    query_positions : array of int (P,)
        Position of each pair's query in ``queries``.
    neighbour_ids : array of int (P,)
        Row id of each pair's other row (looked up in the partition that holds it).
    weights : array of float (P,)
    difference : {"abs", "square"}
    per_query : None, "driver" or "dataframe"
        Also return the per-query sums: an (m, p) array, or a DataFrame ``(row_id, sums)``
        keyed by the engine's row id, to join back to the input (e.g. as a weight column).

    Notes
    -----
    One pass per query batch; the pairs of the batch travel with it, sorted by neighbour id so a
    block finds its pairs by binary search. Cost O(P p) over the cluster.
    """
    check_difference(difference)
    check_per_query(per_query)
    query_positions = np.asarray(query_positions, dtype=np.int64)
    neighbour_ids = np.asarray(neighbour_ids, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    num_features = rows.num_features
    pairs_per_query = len(weights) / max(len(query_rows(queries)), 1)

    def payload(batch):
        in_batch = (query_positions >= batch.start) & (query_positions < batch.stop)
        order = np.argsort(neighbour_ids[in_batch], kind="stable")
        return {"num_queries": batch.stop - batch.start,
                "query_positions": query_positions[in_batch][order] - batch.start,
                "neighbour_ids": neighbour_ids[in_batch][order], "weights": weights[in_batch][order]}

    def summarize(block: Block, shipped):
        return summarize_pairs(block, shipped, bool(per_query))

    def summarize_pairs(block: Block, shipped, with_queries: bool):
        pair_neighbours = shipped["neighbour_ids"]  # sorted
        first = np.searchsorted(pair_neighbours, block.ids, side="left")
        last = np.searchsorted(pair_neighbours, block.ids, side="right")
        pairs_per_row = last - first
        total = int(pairs_per_row.sum())
        num_queries = shipped["num_queries"]
        summary = {"feature_sums": np.zeros(num_features)}
        if with_queries:
            summary["query_sums"] = np.zeros((num_queries, num_features))
        if total == 0:
            return summary
        block_row_of_pair = np.repeat(np.arange(block.ids.size), pairs_per_row)
        run_start = np.cumsum(pairs_per_row) - pairs_per_row
        pair_index = np.repeat(first, pairs_per_row) + (np.arange(total) - np.repeat(run_start, pairs_per_row))
        sums, per_query_sums = block_pair_sums(
            shipped["matrix"], block.matrix, shipped["query_positions"][pair_index], block_row_of_pair,
            shipped["weights"][pair_index], difference=difference, per_query=with_queries, num_queries=num_queries,
        )
        summary["feature_sums"] = sums
        if with_queries:
            summary["query_sums"] = per_query_sums
        return summary

    if per_query == "dataframe":
        def emit(block: Block, shipped):
            query_sums_of_block = summarize_pairs(block, shipped, True)["query_sums"]
            touched = np.flatnonzero(np.any(query_sums_of_block != 0, axis=1))
            return shipped["ids"][touched], query_sums_of_block[touched]

        return per_query_frame(rows, queries, emit, payload=payload, shipped_bytes_per_query=24.0 * pairs_per_query)

    return summed_pass(rows, queries, "pair sums", summarize, per_query=per_query, payload=payload,
                       shipped_bytes_per_query=24.0 * pairs_per_query)


def kernel_sums(rows: Rows, queries: Queries, kernel: str, *, group_weights, query_groups=None,
                row_groups: Union[None, Callable[[Block], np.ndarray]] = None, sigma=None,
                exclude_self: bool = True, per_query: Optional[str] = None, block_size: int = 2048) -> PairSumsResult:
    """``S[q, f] = sum over all rows r of W_qr k_f(x_qf - x_rf)``, ``W = U_q A U_r^T``.

    Parameters
    ----------
    rows : Rows
    queries : RowSet or ShippedQueries
    kernel : {"gaussian", "abs", "square"}
    group_weights : array (G_q, G_r)
        ``A``.
    query_groups : array (m, G_q), optional
        ``U_q``; default: one-hot of the queries' class labels.
    row_groups : callable(Block) -> array (n_block, G_r), optional
        ``U_r`` of a block, computed in the task (e.g. fuzzy memberships from shipped centres;
        it must be picklable); default: one-hot of the rows' class labels.
    sigma : float or array (p,)
        Bandwidth of the gaussian kernel, in the units of the scaled features.
    exclude_self : bool
        Leave each query out of its own sum (by row id).
    per_query : None, "driver" or "dataframe"
        See :func:`pair_sums`.

    Notes
    -----
    No search: the sums are linear in the rows, so each partition adds its share. Dense rows
    cost ``m n p`` kernel evaluations; CSR rows only their non-zeros and co-non-zeros
    (:mod:`sparkfs.core.pairs`).
    """
    check_per_query(per_query)
    sigma = check_kernel(kernel, sigma, rows.num_features)
    num_classes = rows.num_classes
    group_weights = np.asarray(group_weights, dtype=np.float64)
    if query_groups is None:
        query_groups = one_hot(query_rows(queries).labels, num_classes)
    query_groups = np.asarray(query_groups, dtype=np.float64)

    def payload(batch):
        return {"groups": query_groups[batch]}

    def block_sums(block: Block, shipped, with_queries: bool):
        memberships = one_hot(block.labels, num_classes) if row_groups is None else row_groups(block)
        return feature_kernel_sums(
            shipped["matrix"], shipped["ids"], shipped["groups"], block.matrix, block.ids, memberships, group_weights,
            kernel=kernel, sigma=sigma, exclude_self=exclude_self, per_query=with_queries, block_size=block_size,
        )

    def summarize(block: Block, shipped):
        sums = block_sums(block, shipped, bool(per_query))
        if per_query:
            return {"feature_sums": sums.sum(axis=0), "query_sums": sums}
        return {"feature_sums": sums}

    if per_query == "dataframe":
        def emit(block: Block, shipped):
            return shipped["ids"], block_sums(block, shipped, True)

        return per_query_frame(rows, queries, emit, payload=payload,
                               shipped_bytes_per_query=8.0 * query_groups.shape[1])

    return summed_pass(rows, queries, "kernel sums", summarize, per_query=per_query, payload=payload,
                       shipped_bytes_per_query=8.0 * query_groups.shape[1])


def distance_sums(rows: Rows, queries: Queries) -> np.ndarray:
    """``sum over all rows r of ||x_q - x_r||_2`` for every query q, shape (m,).

    One pass per query batch; each partition adds its rows' distances
    (:func:`sparkfs.core.pairs.euclidean_distance_sums`, elementwise, so a query's distance to
    itself is exactly 0 and needs no exclusion). Per task: the block, the query batch and an
    (m_batch, chunk) distance table of at most 4 M values. Cost O(m n p).
    """
    totals = np.zeros(len(query_rows(queries)))

    def summarize(block: Block, shipped):
        return {"distance_sums": euclidean_distance_sums(shipped["matrix"], block.matrix)}

    for batch, summary in batched_pass(rows, queries, "distance sums", summarize, bytes_per_query=8.0):
        if summary is not None:
            totals[batch] = summary["distance_sums"]
    return totals
