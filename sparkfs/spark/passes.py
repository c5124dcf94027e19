"""The pass API: batched passes of queries against every row of a :class:`~sparkfs.spark.rows.Rows`.

A method that compares some rows (the *queries*: a :class:`~sparkfs.spark.rows.RowSet` on the
driver) with all rows composes its Spark side from these functions, without touching the engine:

* :func:`batched_pass` -- the pattern under every engine pass. The queries are cut into batches
  within budgets (:func:`query_batches`); per batch, the scaled query batch (``"matrix"``,
  ``"ids"``) and what the pass ships with it (``payload(batch)``, a dict) are handed to the tasks,
  every block of rows is summarised by ``kernel(block, shipped)`` (a pure NumPy function of a
  :class:`~sparkfs.spark.rows.Block` and the shipped dict), the summaries are reduced by
  ``merge`` in a fixed order (:meth:`Rows.run_pass`), and the shipped values are destroyed.
  Yields ``(batch, summary)``: one Spark job per batch.
* :func:`summed_pass` -- a :func:`batched_pass` whose kernel returns additive sums
  (``"feature_sums"``, and with ``per_query="driver"`` the batch's ``"query_sums"``), gathered
  into a :class:`SumsResult`.
* :func:`per_query_frame` -- per-query sums as a DataFrame ``(row_id, sums)`` (no m x p array on
  the driver): ``emit(block, shipped)`` returns ``(query ids, values)`` partials, summed per
  query by a shuffle in a fixed order.
* :class:`ShippedQueries` -- ``with ShippedQueries(rows, queries) as shipped:`` lets several
  passes over the same queries (a search, then pair sums) share one broadcast per batch; pass
  ``shipped`` where the functions take ``queries``.
* :meth:`Rows.shipped` -- ``with rows.shipped(value) as handle:`` for a single pass that is not
  batched by queries (an iteration of a loop): destroys that handle, and nothing else, on exit.
* :meth:`Rows.scaled_by` -- a view whose passes see scaled features (:class:`sparkfs.spark.rows.ScaledRows`).

Budgets (per batch): what is shipped -- the query rows plus ``shipped_bytes_per_query`` of
per-batch tables, plus the ``shared`` value shipped once for all batches -- is kept within
``rows.query_batch_bytes`` (on Spark Connect, inside the task closure, at most 48 MiB of its 128
MiB message; with a broadcast the budget bounds the query matrix, as one broadcast is bounded per
value); what one summary returns, ``bytes_per_query`` per query, within ``result_batch_bytes``
(default :data:`RESULT_BATCH_BYTES` of the transport); and ``max_batch`` queries, when the kernel's
temporaries need a bound of their own.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, Union

import numpy as np
import scipy.sparse as sp

from sparkfs import progress
from sparkfs.errors import SparkResourceError
from sparkfs.spark.blocks import CONNECT_CLOSURE_BYTES, aggregate_partitions, matrix_from_summary, matrix_to_summary
from sparkfs.spark.rows import DEFAULT_QUERY_BATCH_BYTES, Block, Rows, RowSet

Summary = Dict[str, np.ndarray]
#: A block kernel: ``(block, shipped dict) -> summary`` (a dict of NumPy arrays, merged by ``merge``).
Kernel = Callable[[Block, Dict[str, Any]], Summary]
#: Largest summary of one batch per transport (bytes): a partition summary is one binary cell,
#: and on Spark Connect every result row must fit its 128 MiB message.
RESULT_BATCH_BYTES = {"context": DEFAULT_QUERY_BATCH_BYTES, "dataframe": CONNECT_CLOSURE_BYTES}
#: ``per_query`` choices of the summed passes.
PER_QUERY = (None, "driver", "dataframe")
#: Partitions of the per-query DataFrame's reduction.
_PER_QUERY_PARTITIONS = 8
#: Keys of the shipped dict a payload may not use (the query batch).
_QUERY_KEYS = ("matrix", "ids")


@dataclass
class SumsResult:
    """Sums over the queries (p,) and, per query, an (m, p) array (``per_query="driver"``) or a
    DataFrame ``(row_id long, sums vector)`` (``per_query="dataframe"``), locally checkpointed:
    computed once, held by the executors, independent of the input's lineage."""

    feature_sums: np.ndarray
    query_sums: Optional[np.ndarray] = None
    query_frame: Any = None


def sum_merge(left: Summary, right: Summary) -> Summary:
    """The merge of additive summaries: every array added."""
    return {name: left[name] + right[name] for name in left}


def matrix_sum_merge(prefix: str, num_features: int) -> Callable[[Summary, Summary], Summary]:
    """The merge of additive summaries holding one matrix of ``num_features`` columns as
    :func:`sparkfs.spark.blocks.matrix_to_summary` writes it under ``prefix`` (dense, or CSR: then
    added as CSR, never made dense) and other arrays, every one added."""
    def merge(left: Summary, right: Summary) -> Summary:
        total = matrix_from_summary(left, prefix, num_features) + matrix_from_summary(right, prefix, num_features)
        others = {name: left[name] + right[name] for name in left if not name.startswith(prefix)}
        return {**others, **matrix_to_summary(sp.csr_matrix(total) if sp.issparse(total) else total, prefix)}
    return merge


def check_per_query(per_query) -> None:
    if per_query not in PER_QUERY:
        raise ValueError(f"The 'per_query' parameter must be one of {PER_QUERY}. Got {per_query!r} instead.")


def shipped_bytes(value) -> int:
    """Bytes of the arrays in ``value`` (nested dicts, lists and tuples; 8 per other leaf)."""
    if value is None:
        return 0
    if isinstance(value, dict):
        return sum(shipped_bytes(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return sum(shipped_bytes(item) for item in value)
    if sp.issparse(value):
        return int(value.data.nbytes + value.indices.nbytes + value.indptr.nbytes)
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    return 8


class ShippedQueries:
    """The scaled query batches of ``queries`` in the tasks of ``rows``' passes, each shipped on
    first use and all destroyed when the ``with`` block ends (module notes).

    ``rows`` must be the rows (or scaled view) the passes run on: the batches are in its units.
    """

    def __init__(self, rows: Rows, queries: RowSet):
        self.rows, self.queries = rows, queries
        self._handles: Dict[Tuple[int, int], Any] = {}

    def __len__(self) -> int:
        return len(self.queries)

    def handle(self, batch: slice):
        """The handle of one batch (``.value`` is ``{"matrix", "ids"}``), shipped if not yet."""
        key = (batch.start, batch.stop)
        if key not in self._handles:
            value = {"matrix": self.rows.scaled(self.queries.matrix)[batch], "ids": self.queries.ids[batch]}
            manager = self.rows.shipped(value)
            self._handles[key] = (manager, manager.__enter__())
        return self._handles[key][1]

    def release(self, batch: Optional[slice] = None) -> None:
        """Destroy one batch (or, by default, every batch) shipped so far."""
        keys = list(self._handles) if batch is None else [(batch.start, batch.stop)]
        for key in keys:
            if key in self._handles:
                manager, _ = self._handles.pop(key)
                manager.__exit__(None, None, None)

    def __enter__(self) -> "ShippedQueries":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def query_rows(queries: Union[RowSet, ShippedQueries]) -> RowSet:
    """The :class:`RowSet` of ``queries`` (a RowSet, or the one a :class:`ShippedQueries` ships)."""
    return queries.queries if isinstance(queries, ShippedQueries) else queries


def query_batches(rows: Rows, queries: Union[RowSet, ShippedQueries], *, shipped_bytes_per_query: float = 0.0,
                  shared_bytes: float = 0.0, bytes_per_query: float = 0.0, max_batch: Optional[int] = None,
                  result_batch_bytes: Optional[int] = None) -> List[slice]:
    """Slices of ``queries`` within the budgets of the module notes (at least one query each).

    With a broadcast only the query matrix counts against ``rows.query_batch_bytes`` (so every
    pass over the same queries uses the same batches); in a closure (Spark Connect) the per-query
    tables and the shared value count too. Raises :class:`SparkResourceError` when the shared value
    alone fills a closure.
    """
    row_set = query_rows(queries)
    num_queries = len(row_set)
    closure = rows.transport == "dataframe"
    per_query = row_set.bytes_per_row() + (shipped_bytes_per_query if closure else 0.0)
    budget = rows.query_batch_bytes - (shared_bytes if closure else 0.0)
    if budget <= 0:
        raise SparkResourceError(
            f"the values shipped with every query batch take {shared_bytes / 2**20:.1f} MiB, above the "
            f"{rows.query_batch_bytes / 2**20:.1f} MiB a task closure may carry (transport 'dataframe'): use "
            f"fewer features or groups, or a classic session with transport 'context', which broadcasts them")
    size = int(budget // max(per_query, 1.0))
    if bytes_per_query > 0:
        result_budget = RESULT_BATCH_BYTES[rows.transport] if result_batch_bytes is None else result_batch_bytes
        size = min(size, int(result_budget // bytes_per_query))
    if max_batch is not None:
        size = min(size, int(max_batch))
    size = max(1, size)
    return [slice(start, min(start + size, num_queries)) for start in range(0, num_queries, size)]


def batched_pass(rows: Rows, queries: Union[RowSet, ShippedQueries], name: str, kernel: Kernel,
                 merge: Callable[[Summary, Summary], Summary] = sum_merge, *,
                 bytes_per_query: float,
                 payload: Optional[Callable[[slice], Dict[str, Any]]] = None, shared: Optional[Dict[str, Any]] = None,
                 shipped_bytes_per_query: float = 0.0,
                 max_batch: Optional[int] = None, result_batch_bytes: Optional[int] = None,
                 progress_name: Optional[str] = None) -> Iterator[Tuple[slice, Optional[Summary]]]:
    """One reduced pass per query batch; yields ``(batch, summary)`` (None: no rows).

    Parameters
    ----------
    rows : Rows
        The rows (or a scaled view) every pass runs over.
    queries : RowSet or ShippedQueries
        The queries; a :class:`ShippedQueries` shares its batches with other passes.
    name : str
        The pass's name (progress lines and ``rows.info["passes"]``).
    kernel : callable(Block, dict) -> dict of arrays
        Runs in the tasks, once per block; the dict holds the query batch (``"matrix"``, scaled,
        and ``"ids"``), ``payload(batch)`` and ``shared``. Must be picklable.
    merge : callable(summary, summary) -> summary
        Associative; summaries are merged in a fixed order. Default :func:`sum_merge`.
    payload : callable(slice) -> dict, optional
        What one batch ships besides its queries (keys other than "matrix" and "ids").
    shared : dict, optional
        Shipped once for all batches of the pass (weights, centres).
    shipped_bytes_per_query : float
        Bytes of ``payload`` per query of the batch (budgeted in a closure).
    bytes_per_query : float
        Bytes of the summary per query of the batch (budgeted against ``result_batch_bytes``);
        required: 0.0 for a summary that does not grow with the queries (per-feature sums).
    max_batch : int, optional
        At most this many queries per batch.
    result_batch_bytes : int, optional
        The budget of ``bytes_per_query``; default :data:`RESULT_BATCH_BYTES` of the transport.
    progress_name : str, optional
        The name of the progress lines (default ``name``).
    """
    shipments = _shipments(rows, queries, name)
    batches = query_batches(rows, shipments, shipped_bytes_per_query=shipped_bytes_per_query,
                            shared_bytes=shipped_bytes(shared), bytes_per_query=bytes_per_query, max_batch=max_batch,
                            result_batch_bytes=result_batch_bytes)
    meter = progress.steps(progress_name or name, len(batches), "query batch")
    with ExitStack() as scope:
        shared_handle = scope.enter_context(rows.shipped(shared or {}))
        if shipments is not queries:
            scope.enter_context(shipments)
        for batch in batches:
            query_handle = shipments.handle(batch)
            with rows.shipped(_checked_payload(payload, batch, name)) as batch_handle:
                summary = rows.run_pass(name, lambda block, query_handle=query_handle: kernel(
                    block, {**shared_handle.value, **query_handle.value, **batch_handle.value}), merge)
            if shipments is not queries:
                shipments.release(batch)
            meter.advance()
            yield batch, summary


def _shipments(rows: Rows, queries: Union[RowSet, ShippedQueries], name: str) -> ShippedQueries:
    """The caller's :class:`ShippedQueries` (checked to be in ``rows``' units), or a new one the
    pass owns (and destroys)."""
    if not isinstance(queries, ShippedQueries):
        return ShippedQueries(rows, queries)
    if queries.rows is not rows:
        raise ValueError(f"{name}: the queries were shipped for other rows (another scale): ship them for these rows")
    return queries


def _checked_payload(payload, batch: slice, name: str) -> Dict[str, Any]:
    value = {} if payload is None else payload(batch)
    clash = [key for key in _QUERY_KEYS if key in value]
    if clash:
        raise ValueError(f"{name}: a payload may not use the keys {clash}: they hold the query batch")
    return value


def summed_pass(rows: Rows, queries: Union[RowSet, ShippedQueries], name: str, kernel: Kernel, *,
                per_query: Optional[str] = None, payload=None, shared=None, shipped_bytes_per_query: float = 0.0,
                max_batch: Optional[int] = None) -> SumsResult:
    """A :func:`batched_pass` of additive sums: ``kernel`` returns ``"feature_sums"`` (p,) and, with
    ``per_query="driver"``, the batch's ``"query_sums"`` (m_batch, p) (budgeted as returned bytes).
    Returns the feature sums over all batches and the (m, p) per-query sums."""
    if per_query not in (None, "driver"):
        raise ValueError(f"summed_pass gathers per_query=None or 'driver'; use per_query_frame for {per_query!r}")
    num_features = rows.num_features
    feature_sums = np.zeros(num_features)
    query_sums = np.zeros((len(query_rows(queries)), num_features)) if per_query == "driver" else None
    for batch, summary in batched_pass(rows, queries, name, kernel, sum_merge, payload=payload, shared=shared,
                                       shipped_bytes_per_query=shipped_bytes_per_query,
                                       bytes_per_query=8.0 * num_features if query_sums is not None else 0.0,
                                       max_batch=max_batch):
        if summary is None:
            continue
        feature_sums += summary["feature_sums"]
        if query_sums is not None:
            query_sums[batch] = summary["query_sums"]
    return SumsResult(feature_sums, query_sums)


def per_query_frame(rows: Rows, queries: Union[RowSet, ShippedQueries], emit, *, payload=None, shared=None,
                    shipped_bytes_per_query: float = 0.0, max_batch: Optional[int] = None) -> SumsResult:
    """Per-query sums as a DataFrame ``(row_id, sums)`` without an (m, p) array on the driver.

    ``emit(block, shipped)`` returns ``(query ids (r,), values (r, p))``: the block's partial sums
    of some queries of the batch. Every partition emits them per batch; the partials are shuffled
    by query id and summed in NumPy in partition order (repeatable bit for bit), and every query
    appears (a query without any term gets zeros). The result is checkpointed before the shipped
    batches are released; the feature sums come from it.
    """
    num_features = rows.num_features
    row_set = query_rows(queries)
    shipments = _shipments(rows, queries, "per-query sums")
    batches = query_batches(rows, shipments, shipped_bytes_per_query=shipped_bytes_per_query,
                            shared_bytes=shipped_bytes(shared), max_batch=max_batch)
    with ExitStack() as scope:  # every batch stays shipped until the frame is checkpointed
        shared_handle = scope.enter_context(rows.shipped(shared or {}))
        if shipments is not queries:
            scope.enter_context(shipments)
        partials = []
        for batch in batches:
            progress.check_interrupted()
            query_handle = shipments.handle(batch)
            batch_handle = scope.enter_context(rows.shipped(_checked_payload(payload, batch, "per-query sums")))
            partials.append(rows.keyed_partials(
                lambda block, q=query_handle, b=batch_handle: emit(block, {**shared_handle.value, **q.value,
                                                                           **b.value})))
        frame = rows.diagnosed(lambda: _summed_per_key(rows, row_set, partials).localCheckpoint(eager=True))
    # each partition's sums in its (key) order, merged in partition order: the same bits for any
    # partitioning of the input (the frame's partitions depend on the query ids only)
    total = aggregate_partitions(frame, ["sums"], lambda block: {"total": np.asarray(block["sums"]).sum(axis=0)},
                                 sum_merge, num_features=num_features, dense=True, transport=rows.transport)
    rows.info["passes"].append("per-query sums (DataFrame)")
    feature_sums = np.zeros(num_features) if total is None else total["total"]
    return SumsResult(feature_sums, None, frame)


def _summed_per_key(rows: Rows, queries: RowSet, partials: List[Any]):
    """The lazy ``(row_id, sums)`` DataFrame: the partials and one empty row per query, summed per key."""
    import pandas as pd
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DoubleType, LongType, StructField, StructType

    num_features = rows.num_features
    spark = rows.df.sparkSession
    union = spark.createDataFrame(pd.DataFrame({"key": queries.ids.astype(np.int64)})).select(
        F.col("key").cast("long"), F.lit(-1).cast("long").alias("partition"),
        F.lit(None).cast(ArrayType(DoubleType(), False)).alias("values"))
    for frame in partials:
        union = union.unionByName(frame)

    def sum_per_key(batches):
        import pyarrow as pa

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
            [pa.array(unique_keys.astype(np.int64)),
             pa.ListArray.from_arrays(pa.array(offsets), pa.array(sums.ravel()))],
            names=["row_id", "sums"])

    schema = StructType([StructField("row_id", LongType(), False), StructField("sums", ArrayType(DoubleType(), False))])
    return (union.repartition(_PER_QUERY_PARTITIONS, "key").mapInArrow(sum_per_key, schema)
            .select("row_id", array_to_vector("sums").alias("sums")))
