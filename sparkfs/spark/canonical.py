"""The canonical layout of :class:`sparkfs.spark.rows.Rows`: blocks and a merge order that depend
on the rows' content and ids only, so that sums come out bit for bit the same whatever the
partitioning.

Floating-point sums depend on their order. A pass that summarises each partition's Arrow batches
and merges the partition summaries adds the same numbers in another order when the same rows are
split into 1, 2 or 7 partitions, and the last bits move. The layout fixes every order by row id:

* **chunks**: rows ``[c R, (c + 1) R)`` by row id form id-chunk ``c``, ``R`` =
  :data:`MAX_CHUNK_ROWS` (4,096) whatever the data. Walking an id-chunk in id order, a chunk
  closes at the first row where it holds :data:`MIN_CHUNK_ROWS` rows and :data:`CHUNK_BYTES` of
  what the vectors store (8 bytes per value, 4 per index of a sparse vector), and the id-chunk
  goes on in the next chunk: a chunk is sized by what its rows hold, not by the number of
  features. 4,096 tf-idf rows of 100 non-zeros (5 MB) are one chunk whatever p; dense rows of
  631 values make chunks of about 1,660 rows, of 50,000 values 64 rows. Every pass summarises one
  chunk per block (:func:`chunk_batches` cuts the Arrow batches), rows in id order.
* **groups** of :data:`CHUNKS_PER_GROUP` consecutive id-chunks (16,384 rows): the rows are shuffled
  once, when :class:`Rows` prepares its input, so that each group lies in one partition sorted by
  row id (:func:`lay_out`). A partition folds the chunk summaries of each group in chunk order and
  emits one summary per group, tagged with the group index.
* the group summaries are folded in group order (on the driver, or first in
  :data:`sparkfs.spark.blocks.REDUCE_FANOUT` sets of groups by group index modulo the fan-out,
  each in group order, when there are more than
  :data:`sparkfs.spark.blocks.DRIVER_MERGE_PARTITIONS`).

Every step is a function of the row ids and the rows' content, so a pass returns the same bits
for any partitioning of the same rows and, with a row-id column, any row order.

Costs. One shuffle of the rows when they are prepared (persisted with them for all later
passes). Then, per pass, one block and one summary per chunk (a few per 4,096 rows: a dense
p-length summary per chunk costs little next to the rows it sums) and one summary per group
shipped (n / 16,384 of them; 7 for 100,000 rows) -- not one per partition: a partition holds
whole groups, but which groups depends on the shuffle, and folding them together would make the
merge order depend on it. Measured (``benchmarks/results/layout.md``, 100,000 x 50,000 tf-idf rows,
local[2], two runs): a pass on this layout costs 1.3-3.1x the same pass on the plain one (7-15x
when chunks were 64 rows, sized by p alone), the first pass 3.7-5x (it runs the shuffle).
"""

from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

#: Id-chunks per group (the unit of the shuffle, and of the first merge level).
CHUNKS_PER_GROUP = 4
#: Bytes the vectors of a chunk store (8 per value, 4 per sparse index) at which the chunk closes, once
#: it holds MIN_CHUNK_ROWS rows.
CHUNK_BYTES = 8 * 2**20
#: Fewest rows of a chunk cut by bytes, and the rows of an id-chunk (the row-id span of a chunk).
MIN_CHUNK_ROWS, MAX_CHUNK_ROWS = 64, 4096


def group_rows() -> int:
    """Row ids per group: :data:`CHUNKS_PER_GROUP` id-chunks of :data:`MAX_CHUNK_ROWS`."""
    return MAX_CHUNK_ROWS * CHUNKS_PER_GROUP


def lay_out(frame, id_column: str, n_rows: int, max_partitions: int):
    """``frame`` shuffled so that each group of rows lies in one partition, sorted by row id.

    ``max_partitions`` caps the partitions (there are never more than the groups).
    """
    from pyspark.sql import functions as F

    n_groups = max(1, -(-int(n_rows) // group_rows()))
    partitions = max(1, min(int(max_partitions), n_groups))
    group = F.floor(F.col(id_column) / F.lit(group_rows()))
    return frame.repartition(partitions, group).sortWithinPartitions(id_column)


def canonical_merge(id_column: str, n_rows: int) -> dict:
    """The :func:`sparkfs.spark.blocks.aggregate_partitions` arguments of the canonical merge:
    blocks keyed by their group, ``n_keys`` groups."""
    rows_per_group = group_rows()
    return {"key_of_block": lambda raw: first_id_divided(raw[id_column], rows_per_group),
            "n_keys": -(-int(n_rows) // rows_per_group)}


def chunk_regrouper(id_column: str, features_column: str = None):
    """A partition's batches -> one batch per chunk (see :func:`chunk_batches`)."""
    rows_per_chunk = MAX_CHUNK_ROWS
    return lambda batches: chunk_batches(batches, id_column, rows_per_chunk, features_column)


def chunk_batches(batches: Iterable[pa.RecordBatch], id_column: str, rows_per_chunk: int,
                  features_column: str = None) -> Iterator[pa.RecordBatch]:
    """The rows of ``batches`` (sorted by ``id_column``) regrouped into one batch per chunk.

    Rows ``[c rows_per_chunk, (c + 1) rows_per_chunk)`` by id form id-chunk ``c``; with
    ``features_column``, a chunk also closes at the first row where it holds at least
    :data:`MIN_CHUNK_ROWS` rows and :data:`CHUNK_BYTES` stored bytes (:func:`stored_bytes`), and
    the id-chunk goes on in a new chunk. Streams: at most one chunk is held at a time.
    """
    pending, held_rows, held_bytes, current = [], 0, 0, None
    for batch in batches:
        if not batch.num_rows:
            continue
        chunks = batch.column(id_column).to_numpy(zero_copy_only=False).astype(np.int64) // rows_per_chunk
        if np.any(np.diff(chunks) < 0):
            raise AssertionError("chunk_batches needs rows sorted by id (see lay_out)")
        sizes = None if features_column is None else stored_bytes(batch.column(features_column))
        edges = [0, *(np.flatnonzero(np.diff(chunks)) + 1).tolist(), batch.num_rows]
        for start, stop in zip(edges[:-1], edges[1:]):
            if current is not None and chunks[start] != current and pending:
                yield _combined(pending)
                pending, held_rows, held_bytes = [], 0, 0
            current = chunks[start]
            while start < stop:
                cut, full = stop, False
                if sizes is not None:
                    held = held_bytes + np.cumsum(sizes[start:stop])
                    rows = held_rows + np.arange(1, stop - start + 1)
                    closing = np.flatnonzero((held >= CHUNK_BYTES) & (rows >= MIN_CHUNK_ROWS))
                    if closing.size:
                        cut, full = start + int(closing[0]) + 1, True
                    held_bytes = int(held[cut - start - 1])
                pending.append(batch.slice(start, cut - start))
                held_rows += cut - start
                if full:
                    yield _combined(pending)
                    pending, held_rows, held_bytes = [], 0, 0
                start = cut
    if pending:
        yield _combined(pending)


def stored_bytes(vectors: pa.Array) -> np.ndarray:
    """Bytes each Spark ML vector of an Arrow vector column stores: 8 per value, 4 per index."""
    import pyarrow.compute as pc

    if isinstance(vectors, pa.ChunkedArray):
        vectors = vectors.combine_chunks()
    lengths = [pc.fill_null(pc.list_value_length(vectors.field(name)), 0).to_numpy(zero_copy_only=False)
               for name in ("values", "indices")]
    return 8 * lengths[0].astype(np.int64) + 4 * lengths[1].astype(np.int64)


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
    """Rows, min, max, mean and centred sum of squares per column of one chunk (dense, or CSR
    kept sparse: the implicit zeros count in every statistic)."""
    if hasattr(matrix, "tocsr"):
        csr = matrix.tocsr()
        rows, num_features = csr.shape
        sums = np.bincount(csr.indices, weights=csr.data, minlength=num_features)
        stored = np.bincount(csr.indices, minlength=num_features)
        mean = sums / max(rows, 1)
        deviations = csr.data - mean[csr.indices]
        m2 = np.bincount(csr.indices, weights=deviations * deviations, minlength=num_features)
        m2 += (rows - stored) * mean * mean  # the implicit zeros, each (0 - mean)^2
        non_zeros = np.bincount(csr.indices, weights=csr.data != 0, minlength=num_features)
        return {"rows": np.array([rows], dtype=np.float64), "min": csr.min(axis=0).toarray().ravel(),
                "max": csr.max(axis=0).toarray().ravel(), "mean": mean, "m2": m2, "non_zeros": non_zeros}
    dense = np.asarray(matrix, dtype=np.float64)
    mean = dense.mean(axis=0)
    return {"rows": np.array([dense.shape[0]], dtype=np.float64), "min": dense.min(axis=0),
            "max": dense.max(axis=0), "mean": mean, "m2": ((dense - mean) ** 2).sum(axis=0),
            "non_zeros": np.count_nonzero(dense, axis=0).astype(np.float64)}


def merged_column_moments(left: dict, right: dict) -> dict:
    """Two chunks' moments as one (the pairwise update of Chan, Golub & LeVeque)."""
    n_left, n_right = left["rows"][0], right["rows"][0]
    rows = n_left + n_right
    delta = right["mean"] - left["mean"]
    return {"rows": np.array([rows]), "min": np.minimum(left["min"], right["min"]),
            "max": np.maximum(left["max"], right["max"]), "mean": left["mean"] + delta * (n_right / rows),
            "m2": left["m2"] + right["m2"] + delta * delta * (n_left * n_right / rows),
            "non_zeros": left["non_zeros"] + right["non_zeros"]}
