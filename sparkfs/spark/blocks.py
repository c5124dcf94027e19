"""Arrow blocks of rows as NumPy/SciPy matrices, values handed to tasks, and one reduced pass.

Every distributed statistic in sparkfs that the JVM cannot compute for us goes through
:func:`aggregate_partitions`: each partition turns its Arrow record batches into a dense
``ndarray`` or a ``scipy.sparse.csr_matrix`` (sparse rows stay sparse), a pure-NumPy function
summarises the block into a small dict of arrays, and the partition summaries are merged so the
driver receives a handful of summaries, never one per task.

Two ways to run a pass (one switch, :data:`TRANSPORTS`; both give the same numbers)
-----------------------------------------------------------------------------------
* ``"dataframe"`` needs nothing but the DataFrame API, so it also runs on Spark Connect
  (Databricks serverless and shared clusters, ``SparkSession.builder.remote``), where there is
  no SparkContext. Values for the tasks (query batches, neighbour pairs) travel inside the
  partition function's closure, which Connect ships with the plan (bounded by its 128 MiB message
  limit: :data:`CONNECT_CLOSURE_BYTES` is the budget we keep under). Partition summaries come
  back as binary rows tagged with their partition index; a second ``mapInArrow`` stage after a
  ``repartition`` into :data:`REDUCE_FANOUT` groups merges them (each group in partition order)
  and the driver merges the few group results, again in order: a DataFrame-only tree reduction
  whose merge order is fixed, so results are repeatable bit for bit.
* ``"context"`` (classic Spark only) uses the SparkContext: values are ``sc.broadcast`` (read once
  per executor instead of shipped with every task). Up to :data:`DRIVER_MERGE_PARTITIONS`
  partitions, the summaries are collected as Arrow and merged on the driver in partition order (no
  shuffle); above it, the same fixed two-level merge as the DataFrame path (groups by partition
  index modulo :data:`REDUCE_FANOUT`, each merged in partition order). Not ``treeAggregate``:
  its middle level merges in the order shuffle blocks arrive, which changes the last bits from
  run to run. It is the default where a SparkContext exists (``"auto"``).
"""

from __future__ import annotations

import io
from typing import Callable, Dict, Iterable, Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import scipy.sparse as sp

Summary = Dict[str, np.ndarray]

#: VectorUDT rows arrive in Arrow as struct<type:int8, size:int32, indices:list<int32>,
#: values:list<double>>; type 0 is a SparseVector, type 1 a DenseVector.
SPARSE_TYPE = 0
DENSE_TYPE = 1

#: How values reach the tasks and how their summaries are merged (see the module notes).
TRANSPORTS = ("auto", "context", "dataframe")
#: Largest value we hand to tasks inside a closure on Spark Connect (its message limit is 128 MiB;
#: a 32 MB closure was measured to work, 181 MB was refused).
CONNECT_CLOSURE_BYTES = 48 * 2**20
#: Groups of the DataFrame-only reduction: the driver receives at most this many summaries.
REDUCE_FANOUT = 8
#: Partitions whose summaries the "context" transport merges directly on the driver.
DRIVER_MERGE_PARTITIONS = 16
#: The key of a summary that stops its pass (see :func:`aggregate_partitions`).
STOPPED = "stopped"


def is_vector_struct(arrow_type: pa.DataType) -> bool:
    """True when an Arrow type is the struct Spark uses to ship a VectorUDT column."""
    if not pa.types.is_struct(arrow_type):
        return False
    names = {arrow_type.field(i).name for i in range(arrow_type.num_fields)}
    return names == {"type", "size", "indices", "values"}


def arrow_vectors_to_matrix(column: pa.Array, num_features: int, dense: Optional[bool] = None):
    """Convert an Arrow column of Spark ML vectors to a matrix with one row per vector.

    Parameters
    ----------
    column : pyarrow.StructArray or ChunkedArray
        A VectorUDT column as it arrives in ``mapInArrow``.
    num_features : int
        Expected size of every vector; any other size raises ``ValueError``.
    dense : bool or None
        ``None`` (default): a dense ``ndarray`` when every row is a DenseVector, else a CSR
        matrix. ``True`` / ``False`` force the output kind (forcing dense on sparse rows is the
        caller's decision: it materialises the block, never the whole data set).

    Returns
    -------
    numpy.ndarray of shape (n, num_features) or scipy.sparse.csr_matrix
    """
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n_rows = len(column)
    if n_rows == 0:
        empty = np.zeros((0, num_features))
        return sp.csr_matrix(empty) if dense is False else empty
    if column.null_count:
        raise ValueError(f"{column.null_count} row(s) have a null feature vector")
    type_array, size_array, indices_array, values_array = column.flatten()
    vector_types = type_array.to_numpy(zero_copy_only=False)
    # Dense vectors leave `size` null; their length is the length of `values`.
    value_lengths = pc.list_value_length(values_array).to_numpy(zero_copy_only=False).astype(np.int64)
    sizes = size_array.to_numpy(zero_copy_only=False)
    is_dense_row = vector_types == DENSE_TYPE
    row_sizes = np.where(is_dense_row, value_lengths, np.nan_to_num(sizes.astype(float), nan=-1)).astype(np.int64)
    wrong = row_sizes != num_features
    if wrong.any():
        bad_sizes = sorted(set(row_sizes[wrong].tolist()))[:5]
        raise ValueError(
            f"{int(wrong.sum())} row(s) have a feature vector of size {bad_sizes} "
            f"instead of {num_features}: all vectors must have the same size"
        )
    flat_values = pc.list_flatten(values_array).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)

    if is_dense_row.all() and dense is not False:
        return flat_values.reshape(n_rows, num_features)

    # Build CSR: dense rows contribute 0..p-1 as indices, sparse rows their own indices.
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(value_lengths, out=indptr[1:])
    flat_sparse_indices = pc.list_flatten(indices_array.filter(pc.invert(pa.array(is_dense_row)))) \
        if (~is_dense_row).any() else pa.array([], pa.int32())
    flat_sparse_indices = flat_sparse_indices.to_numpy(zero_copy_only=False).astype(np.int32, copy=False)
    if is_dense_row.any():
        indices = np.empty(indptr[-1], dtype=np.int32)
        row_of_value = np.repeat(np.arange(n_rows), value_lengths)
        dense_value_mask = is_dense_row[row_of_value]
        position_in_row = np.arange(indptr[-1]) - indptr[row_of_value]
        indices[dense_value_mask] = position_in_row[dense_value_mask]
        indices[~dense_value_mask] = flat_sparse_indices
    else:
        indices = flat_sparse_indices
    matrix = sp.csr_matrix((flat_values, indices, indptr), shape=(n_rows, num_features))
    if dense:
        return matrix.toarray()
    return matrix


def batch_to_block(batch: pa.RecordBatch, num_features: int, dense: Optional[bool] = None) -> Dict[str, object]:
    """One Arrow record batch as a dict: vector columns as matrices, others as NumPy arrays."""
    block: Dict[str, object] = {}
    for name, column in zip(batch.schema.names, batch.columns):
        if is_vector_struct(column.type):
            block[name] = arrow_vectors_to_matrix(column, num_features, dense=dense)
        else:
            block[name] = column.to_numpy(zero_copy_only=False)
    return block


def matrix_to_summary(matrix, prefix: str) -> Dict[str, np.ndarray]:
    """A dense or CSR matrix as named arrays (``prefix`` + dense | data, indices, indptr)."""
    if sp.issparse(matrix):
        matrix = sp.csr_matrix(matrix)
        return {f"{prefix}data": matrix.data, f"{prefix}indices": matrix.indices, f"{prefix}indptr": matrix.indptr}
    return {f"{prefix}dense": np.asarray(matrix)}


def matrix_from_summary(summary, prefix: str, num_features: int):
    """Inverse of :func:`matrix_to_summary`."""
    if f"{prefix}dense" in summary:
        return summary[f"{prefix}dense"].reshape(-1, num_features)
    indptr = summary[f"{prefix}indptr"]
    return sp.csr_matrix(
        (summary[f"{prefix}data"], summary[f"{prefix}indices"], indptr), shape=(len(indptr) - 1, num_features)
    )


def encode_block(block: Dict[str, object]) -> bytes:
    """A block dict (matrices and 1-D arrays) as ``.npz`` bytes; see :func:`decode_block`."""
    arrays: Dict[str, np.ndarray] = {}
    for name, value in block.items():
        if sp.issparse(value) or (isinstance(value, np.ndarray) and value.ndim == 2):
            arrays.update(matrix_to_summary(value, f"matrix:{name}:"))
        else:
            arrays[f"array:{name}"] = np.asarray(value)
    return serialize_summary(arrays)


def decode_block(payload: bytes, num_features: int) -> Dict[str, object]:
    arrays = deserialize_summary(payload)
    block: Dict[str, object] = {}
    for key in arrays:
        kind, name = key.split(":", 2)[:2]
        if kind == "array":
            block[name] = arrays[key]
        elif name not in block:
            block[name] = matrix_from_summary(arrays, f"matrix:{name}:", num_features)
    return block


def arrow_blocks(num_features: int,
                 dense: Optional[bool] = None) -> Callable[[pa.RecordBatch], Iterator[Dict[str, object]]]:
    """Blocks of a plain input batch (vector columns converted): one block per batch."""
    def blocks(batch: pa.RecordBatch):
        if batch.num_rows:
            yield batch_to_block(batch, num_features, dense)
    return blocks


def cached_blocks(num_features: int) -> Callable[[pa.RecordBatch], Iterator[Dict[str, object]]]:
    """Blocks of a batch of encoded blocks (a ``block`` binary column, see :func:`encode_block`)."""
    def blocks(batch: pa.RecordBatch):
        for payload in batch.column("block").to_pylist():
            yield decode_block(payload, num_features)
    return blocks


def serialize_summary(summary: Summary) -> bytes:
    """A dict of arrays as ``.npz`` bytes (no pickle: only numeric arrays cross the wire)."""
    buffer = io.BytesIO()
    np.savez(buffer, **{key: np.asarray(value) for key, value in summary.items()})
    return buffer.getvalue()


def deserialize_summary(payload: bytes) -> Summary:
    with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
        return {key: archive[key] for key in archive.files}


def is_connect_session(spark) -> bool:
    """True for a Spark Connect session (no SparkContext, no RDDs, no ``_jvm``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def resolve_transport(spark, transport: str = "auto") -> str:
    """``"context"`` or ``"dataframe"`` for this session; ``"auto"`` picks ``"context"`` when it can."""
    if transport not in TRANSPORTS:
        raise ValueError(f"The 'transport' parameter must be a str among {set(TRANSPORTS)}. Got {transport!r} instead.")
    connect = is_connect_session(spark)
    if transport == "auto":  # one switch for a whole session or job: --conf sparkfs.transport=dataframe
        transport = spark.conf.get("sparkfs.transport", "auto") or "auto"
        if transport not in TRANSPORTS:
            raise ValueError(f"The Spark conf 'sparkfs.transport' must be one of {set(TRANSPORTS)}. Got {transport!r} "
                             "instead.")
    if transport == "context" and connect:
        raise ValueError("transport='context' needs a SparkContext, which a Spark Connect session does not have; "
                         "use 'dataframe' or 'auto'")
    if transport == "auto":
        return "dataframe" if connect else "context"
    return transport


class _ClosureValue:
    """A value shipped inside the task closure (the Connect-safe channel); same API as a Broadcast."""

    def __init__(self, value):
        self.value = value

    def destroy(self) -> None:
        """Nothing to free: a Connect client re-serialises a plan's closures whenever the plan is
        sent again, so the value must stay readable; it goes with the last reference to it."""


def ship_to_tasks(spark, value, transport: str):
    """Hand ``value`` to every task of the following passes; read it there as ``handle.value``.

    ``"context"``: a ``Broadcast`` (one copy per executor). ``"dataframe"``: carried in the closure.
    Call ``handle.destroy()`` when the passes are done.
    """
    if transport == "context":
        return spark.sparkContext.broadcast(value)
    return _ClosureValue(value)


def is_stopped(summary: Optional[Summary]) -> bool:
    """Whether ``summary`` says its pass stopped (it holds :data:`STOPPED`)."""
    return summary is not None and STOPPED in summary


def keeping_stops(merge: Callable[[Summary, Summary], Summary]) -> Callable[[Summary, Summary], Summary]:
    """``merge``, except that a stopped summary wins over any other (the first of two)."""
    def merged(left: Summary, right: Summary) -> Summary:
        if is_stopped(left):
            return left
        return right if is_stopped(right) else merge(left, right)
    return merged


def drain(batches: Iterable[object]) -> None:
    """Read a task's remaining input without using it: a stopped partition hands its input back whole."""
    for _ in batches:
        pass


def _summary_batch(summary: Summary, partition_index: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array([partition_index], pa.int64()), pa.array([serialize_summary(summary)], pa.binary())],
        names=["partition", "summary"],
    )


def _merge_in_order(pairs, merge):
    """Merge (order key, summary) pairs in key order (so the result does not depend on arrival)."""
    merged = None
    for _, summary in sorted(pairs, key=lambda pair: pair[0]):
        merged = summary if merged is None else merge(merged, summary)
    return merged


def _merge_collected(table: pa.Table, merge):
    """Merge a collected table of (partition, summary) rows in partition order (None when empty)."""
    pairs = [(index, deserialize_summary(payload))
             for index, payload in zip(table.column("partition").to_pylist(), table.column("summary").to_pylist())]
    return _merge_in_order(pairs, merge) if pairs else None


def aggregate_partitions(
    df,
    columns: Sequence[str],
    summarize_block: Callable[[Dict[str, object]], Summary],
    merge: Callable[[Summary, Summary], Summary],
    *,
    num_features: int,
    dense: Optional[bool] = None,
    transport: str = "auto",
    blocks_of_batch: Optional[Callable[[pa.RecordBatch], Iterable[Dict[str, object]]]] = None,
    regroup: Optional[Callable[[Iterable[pa.RecordBatch]], Iterable[pa.RecordBatch]]] = None,
    key_of_block: Optional[Callable[[Dict[str, object]], int]] = None,
    n_keys: int = 0,
) -> Optional[Summary]:
    """One pass over ``df``: summarise each Arrow batch, merge within and across partitions.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    columns : column names handed to ``summarize_block`` (vector columns become matrices).
    summarize_block : block dict -> dict of NumPy arrays (must be small: it is shipped).
    merge : associative, commutative merge of two summaries.
    num_features : the size of the vector columns.
    dense : see :func:`arrow_vectors_to_matrix`.
    transport : see the module notes.
    blocks_of_batch : batch -> blocks; default :func:`arrow_blocks` (``cached_blocks`` reads a
        DataFrame of blocks encoded once, see :class:`sparkfs.spark.rows.Rows`).
    regroup : a partition's batches -> the batches to cut into blocks (e.g. one per chunk).
    key_of_block, n_keys : the canonical merge (:mod:`sparkfs.spark.canonical`): blocks with the
        same key (consecutive in a partition) are folded in order and emitted per key, and the
        ``n_keys`` keyed summaries are folded in key order whatever the partitioning.

    Returns
    -------
    The merged summary, or ``None`` when ``df`` has no rows.

    Notes
    -----
    A summary holding :data:`STOPPED` stops the pass without failing a task: ``summarize_block`` or
    ``merge`` returns one when it finds that the pass cannot go on (its reason in the value), the
    partition sends it and reads the rest of its rows without summarising them, every merge keeps it,
    and it is what the pass returns. The caller decides what to do instead; Spark logs no failed task.
    """
    transport = resolve_transport(df.sparkSession, transport)
    blocks_of_batch = blocks_of_batch or arrow_blocks(num_features, dense)
    merge = keeping_stops(merge)

    def summarize_partition(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        partition_summary, key = None, TaskContext.get().partitionId()
        for batch in (batches if regroup is None else regroup(batches)):
            for block in blocks_of_batch(batch):
                block_key = key if key_of_block is None else key_of_block(block)
                if block_key != key and partition_summary is not None:
                    yield _summary_batch(partition_summary, key)
                    partition_summary = None
                key, block_summary = block_key, summarize_block(block)
                partition_summary = block_summary if partition_summary is None else merge(partition_summary,
                                                                                          block_summary)
                if is_stopped(partition_summary):
                    yield _summary_batch(partition_summary, key)
                    drain(batches)
                    return
        if partition_summary is not None:
            yield _summary_batch(partition_summary, key)

    summaries = df.select(*columns).mapInArrow(summarize_partition, _summary_schema())
    return _merge_summaries(summaries, merge, transport, keyed=key_of_block is not None, n_keys=n_keys)


def _summary_schema():
    """The schema of the summaries a pass's tasks send: (partition, serialized summary)."""
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    return StructType([StructField("partition", LongType(), False), StructField("summary", BinaryType(), False)])


def _merge_summaries(summaries, merge: Callable[[Summary, Summary], Summary], transport: str, *, keyed: bool,
                     n_keys: int) -> Optional[Summary]:
    """The (partition, summary) rows of a pass merged in partition order: on the driver when they are
    few, else by :data:`REDUCE_FANOUT` groups first (an RDD reduce on the "context" transport, a
    ``mapInArrow`` over a repartition on Connect's "dataframe" one)."""
    if keyed and n_keys <= DRIVER_MERGE_PARTITIONS:
        return _merge_collected(summaries.toArrow(), merge)
    if transport == "context" and not keyed:
        if summaries.rdd.getNumPartitions() <= DRIVER_MERGE_PARTITIONS:  # collected as Arrow: no Python stage
            return _merge_collected(summaries.toArrow(), merge)

        def merge_payloads(pairs):
            items = [(index, deserialize_summary(payload)) for index, payload in pairs]
            return min(index for index, _ in items), serialize_summary(_merge_in_order(items, merge))

        partials = (summaries.rdd.map(lambda row: (int(row[0]), bytes(row[1])))
                    .map(lambda pair: (pair[0] % REDUCE_FANOUT, pair))
                    .groupByKey(REDUCE_FANOUT).map(lambda group: merge_payloads(group[1])))
        pairs = [(index, deserialize_summary(payload)) for index, payload in partials.collect()]
        return _merge_in_order(pairs, merge) if pairs else None

    def merge_group(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pairs = []
        for batch in batches:
            partitions = batch.column(0).to_pylist()
            payloads = batch.column(1).to_pylist()
            pairs.extend((index, deserialize_summary(payload)) for index, payload in zip(partitions, payloads))
        if pairs:
            yield _summary_batch(_merge_in_order(pairs, merge), min(index for index, _ in pairs))

    from pyspark.sql import functions as F

    grouped = summaries.repartition(REDUCE_FANOUT, F.col("partition") % REDUCE_FANOUT)
    return _merge_collected(grouped.mapInArrow(merge_group, _summary_schema()).toArrow(), merge)
