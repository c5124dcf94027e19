"""The pair engine: nearest neighbours, pair sums and kernel sums over a prepared :class:`Rows`.

Every margin method is a short loop over three passes (the formulas stay in
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

All three share :func:`_batched_pass`: the queries are cut into batches within the channel's
budget (:meth:`Rows.query_batches`), each batch (with its per-batch tables) is handed to the tasks
(broadcast with a SparkContext, inside the closure on Spark Connect), every partition turns its
Arrow batches into dense or CSR blocks and computes its partial result, and the partials are
reduced in a fixed order (:func:`sparkfs.spark.blocks.aggregate_partitions`). One pass -- one
Spark job -- per query batch; what a task holds: its block, the query batch, and one
``block_size x block_size`` temporary (distances or kernel values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Union

import numpy as np
import scipy.sparse as sp

from sparkfs import progress
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
    pair_sums as block_pair_sums,
)
from sparkfs.spark.blocks import aggregate_partitions
from sparkfs.spark.rows import Block, Rows, RowSet

#: ``per_query`` choices of :func:`pair_sums` and :func:`kernel_sums`.
PER_QUERY = (None, "driver", "dataframe")
#: Partitions of the per-query DataFrame's reduction.
_PER_QUERY_PARTITIONS = 8


@dataclass
class PairSumsResult:
    """Sums over the queries (p,) and, per query, an (m, p) array (``per_query="driver"``) or a
    DataFrame ``(row_id long, sums vector)`` (``per_query="dataframe"``), locally checkpointed:
    computed once, held by the executors, independent of the input's lineage."""

    feature_sums: np.ndarray
    query_sums: Optional[np.ndarray] = None
    query_frame: Any = None


def _check_per_query(per_query) -> None:
    if per_query not in PER_QUERY:
        raise ValueError(f"The 'per_query' parameter must be one of {PER_QUERY}. Got {per_query!r} instead.")


def _sum_merge(left: Dict[str, np.ndarray], right: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
    return {name: left[name] + right[name] for name in left}


def _batched_pass(rows: Rows, queries: RowSet, name: str, batch_payload: Callable[[slice], dict],
                  summarize: Callable[[Block, dict], dict], merge, extra_bytes_per_query: float = 0.0):
    """The pass pattern under every engine function: one reduced pass per query batch.

    The scaled query batch (``"matrix"``, ``"ids"``) is shipped once per batch for all the passes
    over the same queries (:meth:`Rows.ship_queries`); ``batch_payload(batch)`` adds what one pass
    needs (pairs, memberships); ``summarize(block, shipped)`` is the per-block kernel and sees both.
    Yields ``(batch, summary)``.
    """
    batches = rows.query_batches(queries, extra_bytes_per_query)
    meter = progress.steps(name, len(batches), "query batch")
    for batch in batches:
        query_handle = rows.ship_queries(queries, batch)
        handle = rows.ship(batch_payload(batch))
        try:
            summary = rows.run_pass(name, lambda block: summarize(block, {**query_handle.value, **handle.value}), merge)
        finally:
            rows.release_shipped()
        meter.advance()
        yield batch, summary


def _summed_passes(rows: Rows, queries: RowSet, name: str, payload, summarize, per_query, extra_bytes_per_query):
    """Run the batched passes of a sum and gather the feature sums and the per-query sums."""
    feature_sums = np.zeros(rows.num_features)
    query_sums = np.zeros((len(queries), rows.num_features)) if per_query == "driver" else None
    for batch, summary in _batched_pass(rows, queries, name, payload, summarize, _sum_merge, extra_bytes_per_query):
        if summary is None:
            continue
        feature_sums += summary["feature_sums"]
        if query_sums is not None:
            query_sums[batch] = summary["query_sums"]
    return PairSumsResult(feature_sums, query_sums)


def _sum_total(left, right):
    return {"total": left["total"] + right["total"]}


def _per_query_frame(rows: Rows, queries: RowSet, batch_payload, emit, extra_bytes_per_query: float = 0.0):
    """Per-query sums as a DataFrame ``(row_id, sums)`` without an (m, p) array on the driver.

    Every partition emits, per query batch, its partial (query id, vector) rows; the partials are
    shuffled by query id and summed in NumPy in partition order (repeatable bit for bit), and
    every query appears (a query without any term gets zeros). The result is
    checkpointed before the shipped batches are released; the feature sums come from it.
    """
    import pyarrow as pa
    import pandas as pd
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DoubleType, LongType, StructField, StructType

    num_features = rows.num_features
    partials = []
    for batch in rows.query_batches(queries, extra_bytes_per_query):
        progress.check_interrupted()
        query_handle, handle = rows.ship_queries(queries, batch), rows.ship(batch_payload(batch))
        partials.append(rows.keyed_partials(
            lambda block, q=query_handle, shipped=handle: emit(block, {**q.value, **shipped.value})))
    spark = rows.df.sparkSession
    every_query = spark.createDataFrame(pd.DataFrame({"key": queries.ids.astype(np.int64)})).select(
        F.col("key").cast("long"), F.lit(-1).cast("long").alias("partition"),
        F.lit(None).cast(ArrayType(DoubleType(), False)).alias("values"))
    union = every_query
    for frame in partials:
        union = union.unionByName(frame)

    def sum_per_key(batches):
        keys, parts, vectors = [], [], []
        for batch in batches:
            keys.append(batch.column(0).to_numpy(zero_copy_only=False))
            parts.append(batch.column(1).to_numpy(zero_copy_only=False))
            vectors.extend(batch.column(2).to_pylist())
        if not keys:
            return
        keys, parts = np.concatenate(keys), np.concatenate(parts)
        order = np.lexsort((parts, keys))  # by query id, then partition: a fixed summation order
        unique_keys, group_of_key = np.unique(keys, return_inverse=True)
        sums = np.zeros((unique_keys.size, num_features))
        present = [row for row in order if vectors[row] is not None]
        if present:
            np.add.at(sums, group_of_key[present], np.array([vectors[row] for row in present], dtype=np.float64))
        offsets = np.arange(unique_keys.size + 1, dtype=np.int32) * num_features
        yield pa.RecordBatch.from_arrays(
            [pa.array(unique_keys.astype(np.int64)), pa.ListArray.from_arrays(pa.array(offsets), pa.array(sums.ravel()))],
            names=["row_id", "sums"])

    schema = StructType([StructField("row_id", LongType(), False), StructField("sums", ArrayType(DoubleType(), False))])
    lazy = (union.repartition(_PER_QUERY_PARTITIONS, "key").mapInArrow(sum_per_key, schema)
            .select("row_id", array_to_vector("sums").alias("sums")))
    try:
        # Checkpointed (computed now, lineage cut): the frame no longer needs the shipped batches.
        frame = rows.diagnosed(lambda: lazy.localCheckpoint(eager=True))
        # each partition's sums in its (key) order, merged in partition order: the same bits for
        # any partitioning of the input (the frame's partitions depend on the query ids only)
        total = aggregate_partitions(frame, ["sums"], lambda block: {"total": np.asarray(block["sums"]).sum(axis=0)},
                                     _sum_total, num_features=num_features, dense=True, transport=rows.transport)
    finally:
        rows.release_shipped()
    rows.info["passes"].append("per-query sums (DataFrame)")
    feature_sums = np.zeros(num_features) if total is None else total["total"]
    return PairSumsResult(feature_sums, None, frame)


def _dense_shift(query_matrix) -> Optional[np.ndarray]:
    """Translation for the Euclidean GEMM identity (see core.neighbours.pairwise_distances): the
    queries' mean rounded to integers, so integer-valued data stay exact (exact ties then break by
    row id) while data far from 0 are still brought close to it."""
    if sp.issparse(query_matrix) or query_matrix.shape[0] == 0:
        return None
    return np.round(np.asarray(query_matrix.mean(axis=0)).ravel())


def nearest(rows: Rows, queries: RowSet, k: int, *, metric: str = "euclidean",
            feature_weights: Optional[np.ndarray] = None, block_size: int = 2048,
            with_vectors: bool = False) -> NeighbourTable:
    """Per query and class, the k nearest rows of ``rows`` (one pass per query batch).

    Parameters
    ----------
    rows : Rows
    queries : RowSet
        Usually rows of the same data (then a query is never its own neighbour, by row id).
    k : int
    metric : {"euclidean", "manhattan"}
        Euclidean distances are returned squared.
    feature_weights : ndarray (p,), optional
        Search in the weighted metric (distances between ``w * x``); independent of the
        feature scaling of ``rows``, which also applies to later pair sums.
    block_size : int
        Rows per block and queries per chunk of the distance computation.
    with_vectors : bool
        Also return the neighbours' (scaled) feature vectors, ``table.vectors`` (m, C, k, p),
        dense: a search and what needs the neighbours' values in one pass (for small k x p).

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
            raise ValueError(f"feature_weights must be {rows.num_features} finite numbers; got shape {feature_weights.shape}")
    num_classes = rows.num_classes
    query_matrix = rows.scaled(queries.matrix)
    shift = _dense_shift(query_matrix)
    neighbour_ids = np.zeros((len(queries), num_classes, k), dtype=np.int64)
    distances = np.zeros((len(queries), num_classes, k))
    vectors = np.zeros((len(queries), num_classes, k, rows.num_features)) if with_vectors else None

    def payload(batch):
        return {}

    def summarize(block: Block, shipped):
        table = local_neighbour_table(
            shipped["matrix"], shipped["ids"], block.matrix, block.ids, block.labels, num_classes=num_classes, k=k,
            metric=metric, block_size=block_size, shift=shift, feature_weights=feature_weights,
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

    # The budget bounds what is shipped (the queries); the returned tables are (m_batch, C, k)
    # ids and distances, plus (m_batch, C, k, p) vectors with with_vectors.
    for batch, summary in _batched_pass(rows, queries, "neighbour search", payload, summarize, merge):
        if summary is None:
            empty = empty_neighbour_table(queries.ids[batch], num_classes, k)
            summary = {"neighbour_ids": empty.neighbour_ids, "distances": empty.distances}
        neighbour_ids[batch], distances[batch] = summary["neighbour_ids"], summary["distances"]
        if with_vectors and "vectors" in summary:
            vectors[batch] = summary["vectors"]
    return NeighbourTable(queries.ids.copy(), neighbour_ids, distances, vectors)


def pair_sums(rows: Rows, queries: RowSet, query_positions, neighbour_ids, weights, *,
              difference: str = "abs", per_query: Optional[str] = None) -> PairSumsResult:
    """``sum_j weights_j d(x_{q_j}, x_{r_j})`` per feature over (query, neighbour id, weight) pairs.

    Parameters
    ----------
    rows : Rows
    queries : RowSet
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
    _check_per_query(per_query)
    query_positions = np.asarray(query_positions, dtype=np.int64)
    neighbour_ids = np.asarray(neighbour_ids, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    num_features = rows.num_features
    pairs_per_query = len(weights) / max(len(queries), 1)

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

        return _per_query_frame(rows, queries, payload, emit, extra_bytes_per_query=24.0 * pairs_per_query)

    return _summed_passes(rows, queries, "pair sums", payload, summarize, per_query, 24.0 * pairs_per_query)


def kernel_sums(rows: Rows, queries: RowSet, kernel: str, *, group_weights, query_groups=None,
                row_groups: Union[None, Callable[[Block], np.ndarray]] = None, sigma=None,
                exclude_self: bool = True, per_query: Optional[str] = None, block_size: int = 2048) -> PairSumsResult:
    """``S[q, f] = sum over all rows r of W_qr k_f(x_qf - x_rf)``, ``W = U_q A U_r^T``.

    Parameters
    ----------
    rows : Rows
    queries : RowSet
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
    _check_per_query(per_query)
    sigma = check_kernel(kernel, sigma, rows.num_features)
    num_classes = rows.num_classes
    group_weights = np.asarray(group_weights, dtype=np.float64)
    if query_groups is None:
        query_groups = one_hot(queries.labels, num_classes)
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

        return _per_query_frame(rows, queries, payload, emit, extra_bytes_per_query=8.0 * query_groups.shape[1])

    return _summed_passes(rows, queries, "kernel sums", payload, summarize, per_query, 8.0 * query_groups.shape[1])


def distance_sums(rows: Rows, queries: RowSet) -> np.ndarray:
    """``sum over all rows r of ||x_q - x_r||_2`` for every query q, shape (m,).

    One pass per query batch; each partition adds its rows' distances
    (:func:`sparkfs.core.pairs.euclidean_distance_sums`, elementwise, so a query's distance to
    itself is exactly 0 and needs no exclusion). Per task: the block, the query batch and an
    (m_batch, chunk) distance table of at most 4 M values. Cost O(m n p).
    """
    totals = np.zeros(len(queries))

    def summarize(block: Block, shipped):
        return {"distance_sums": euclidean_distance_sums(shipped["matrix"], block.matrix)}

    for batch, summary in _batched_pass(rows, queries, "distance sums", lambda batch: {}, summarize, _sum_merge):
        if summary is not None:
            totals[batch] = summary["distance_sums"]
    return totals
