"""The canonical layout of :class:`sparkfs.spark.rows.Rows`: blocks and a merge order that depend
on the row ids only, so that sums come out bit for bit the same whatever the partitioning.

Floating-point sums depend on their order. A pass that summarises each partition's Arrow batches
and merges the partition summaries adds the same numbers in another order when the same rows are
split into 1, 2 or 7 partitions, and the last bits move. The layout fixes every order by row id:

* **chunks**: rows ``[c R, (c + 1) R)`` by row id form chunk ``c``, where ``R`` =
  :func:`chunk_rows` depends on the number of features only. Every pass summarises one chunk per
  block (:func:`chunk_batches` cuts the Arrow batches at chunk boundaries), rows in id order.
* **groups** of :data:`CHUNKS_PER_GROUP` consecutive chunks: the rows are shuffled once, when
  :class:`Rows` prepares its input, so that each group lies in one partition sorted by row id
  (:func:`lay_out`). A partition folds the chunk summaries of each group in chunk order and emits
  one summary per group, tagged with the group index.
* the group summaries are folded in group order (on the driver, or first in
  :data:`sparkfs.spark.blocks.REDUCE_FANOUT` sets of groups by group index modulo the fan-out,
  each in group order, when there are more than
  :data:`sparkfs.spark.blocks.DRIVER_MERGE_PARTITIONS`).

Every step is a function of the row ids and the number of features, so a pass returns the same
bits for any partitioning of the same rows and, with a row-id column, any row order. The price is
one shuffle of the rows when they are prepared (persisted with them for all later passes).
"""

from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

#: Chunks per group (the unit of the shuffle, and of the first merge level).
CHUNKS_PER_GROUP = 16
#: Bytes of dense float64 values a chunk holds at most (a block of the passes).
CHUNK_BYTES = 8 * 2**20
#: Bounds on the rows of a chunk.
MIN_CHUNK_ROWS, MAX_CHUNK_ROWS = 64, 4096


def chunk_rows(num_features: int) -> int:
    """Rows per chunk: as many as fit :data:`CHUNK_BYTES` dense, within the bounds (a power of 2)."""
    rows = CHUNK_BYTES // (8 * max(int(num_features), 1))
    rows = 1 << max(int(rows).bit_length() - 1, 0)
    return int(min(max(rows, MIN_CHUNK_ROWS), MAX_CHUNK_ROWS))


def group_rows(num_features: int) -> int:
    """Rows per group of :data:`CHUNKS_PER_GROUP` chunks."""
    return chunk_rows(num_features) * CHUNKS_PER_GROUP


def lay_out(frame, id_column: str, num_features: int, n_rows: int, max_partitions: int):
    """``frame`` shuffled so that each group of rows lies in one partition, sorted by row id.

    ``max_partitions`` caps the partitions (there are never more than the groups).
    """
    from pyspark.sql import functions as F

    n_groups = max(1, -(-int(n_rows) // group_rows(num_features)))
    partitions = max(1, min(int(max_partitions), n_groups))
    group = F.floor(F.col(id_column) / F.lit(group_rows(num_features)))
    return frame.repartition(partitions, group).sortWithinPartitions(id_column)


def chunk_batches(batches: Iterable[pa.RecordBatch], id_column: str, rows_per_chunk: int) -> Iterator[pa.RecordBatch]:
    """The rows of ``batches`` (sorted by ``id_column``) regrouped into one batch per chunk."""
    pending, current = [], None
    for batch in batches:
        if not batch.num_rows:
            continue
        chunks = batch.column(id_column).to_numpy(zero_copy_only=False).astype(np.int64) // rows_per_chunk
        if np.any(np.diff(chunks) < 0):
            raise AssertionError("chunk_batches needs rows sorted by id (see lay_out)")
        edges = [0, *(np.flatnonzero(np.diff(chunks)) + 1).tolist(), batch.num_rows]
        for start, stop in zip(edges[:-1], edges[1:]):
            if current is not None and chunks[start] != current:
                yield _combined(pending)
                pending = []
            current = chunks[start]
            pending.append(batch.slice(start, stop - start))
    if pending:
        yield _combined(pending)


def _combined(pieces) -> pa.RecordBatch:
    if len(pieces) == 1:
        return pieces[0]
    table = pa.Table.from_batches(pieces).combine_chunks()
    return table.to_batches(max_chunksize=table.num_rows)[0]


def first_id_divided(ids, rows_per_unit: int) -> int:
    """The chunk (or group) index of a chunk's rows, given the rows per chunk (or group), which
    the driver computes and the tasks receive as a value."""
    return int(np.asarray(ids)[0]) // rows_per_unit


# Column moments in the canonical order -------------------------------------------------------


def chunk_column_moments(matrix) -> dict:
    """Rows, min, max, mean and centred sum of squares per column of one chunk (dense or CSR;
    a chunk is at most :data:`CHUNK_BYTES` dense, so sparse chunks are densified)."""
    dense = np.asarray(matrix.toarray() if hasattr(matrix, "toarray") else matrix, dtype=np.float64)
    mean = dense.mean(axis=0)
    return {"rows": np.array([dense.shape[0]], dtype=np.float64), "min": dense.min(axis=0),
            "max": dense.max(axis=0), "mean": mean, "m2": ((dense - mean) ** 2).sum(axis=0)}


def merged_column_moments(left: dict, right: dict) -> dict:
    """Two chunks' moments as one (the pairwise update of Chan, Golub & LeVeque)."""
    n_left, n_right = left["rows"][0], right["rows"][0]
    rows = n_left + n_right
    delta = right["mean"] - left["mean"]
    return {"rows": np.array([rows]), "min": np.minimum(left["min"], right["min"]),
            "max": np.maximum(left["max"], right["max"]), "mean": left["mean"] + delta * (n_right / rows),
            "m2": left["m2"] + right["m2"] + delta * delta * (n_left * n_right / rows)}
