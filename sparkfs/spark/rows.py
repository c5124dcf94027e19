"""A DataFrame prepared once for any number of passes of the pair engine.

:class:`Rows` holds the input's features, class index, optional instance weights and a stable
row id, persisted for the object's lifetime (a context manager releases it), and gives what
every pairwise method needs around its passes: counts, column statistics, the query set (all
rows, or a seeded sample that depends on the rows' content only), query batches within the
budget of the channel that hands them to the tasks, and :meth:`Rows.run_pass`, the one pass
over the partitions (blocks as dense or CSR matrices, reduced by :mod:`sparkfs.spark.blocks`).

Row ids and determinism
-----------------------
Rows need a stable id to exclude a query from its own neighbours, to break distance ties
(smaller id first) and to order the sums of the canonical layout (:mod:`sparkfs.spark.canonical`).
With ``row_id_col`` (unique, non-null integers) the ids are the user's and *everything* --
sample, ties, sums -- is independent of the row order and of the partitioning: the same bits.
Without it, a row's id is its **position in the DataFrame's row order** (0..n-1: rows per
partition counted JVM-side, then ``offset[partition] + index within partition`` from
``monotonically_increasing_id``). That position does not change when the same ordered data are
split into more or fewer partitions (``coalesce``, another ``maxPartitionBytes``, another
``parallelize(numSlices)``), so results are the same bits for 1 or several partitions. Rows that
arrive in *another order* (a ``repartition``, or the same rows written as other files: Spark packs
files into partitions by size) get other positions: the sample stays the same rows (it is drawn
by content, below), but the sums run in another order (scores equal to rounding) and distance
ties between rows of different content break otherwise -- pass ``row_id_col`` for the same bits.
The input must be deterministic across passes: an input that is not cached and reads no cached
data is persisted for the lifetime of the object (like Spark ML's iterative estimators) and
unpersisted at the end; cache the input yourself to share it between calls.

Passes the object itself may run (each only when asked for what it gives)
------------------------------------------------------------------------
* **counts** (JVM ``groupBy``): rows per class and, for positional ids, rows per partition.
* **all rows** (``toArrow``): every row to the driver; gives the counts and offsets too, so
  "all rows are queries" costs one job, not two.
* **column statistics** (min, max, mean, sample std): chunk moments merged in the canonical
  order (JVM ``Summarizer`` without the layout), or from the collected rows when they are on the
  driver anyway.
* **sample**: each partition keeps its rows with the smallest (key, id) pairs, the key a seeded
  hash of the row's content (:func:`~sparkfs.core.sampling.content_sample_keys`: features,
  label, weight), and the reduction keeps the global smallest: at most ``size`` rows travel per
  merge. The drawn rows depend on (seed, content) only; among rows of identical content the
  smaller id is drawn first (identical rows are interchangeable).

Numeric policy: non-finite feature values raise :class:`InvalidInputError`; labels must be class
indices 0..C-1 (doubles like 2.0 accepted); weights must be finite and >= 0.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from sparkfs.core.sampling import (ColumnStatistics, column_statistics as driver_column_statistics, content_sample_keys,
                                   smallest_key_positions)
from sparkfs.core.scaling import check_magnitude
from sparkfs.errors import DriverBudgetError, InvalidInputError
from sparkfs.spark.row_sets import (  # noqa: F401  (Block, RowSet, scale_columns, check_finite are public here)
    PARTITION_SHIFT,
    Block,
    RowSet,
    check_user_ids,
    class_counts_of,
    offsets_of_partitions,
    merged_sample_summaries,
    rows_of_table,
    sample_of_summary,
    sample_summary,
    check_finite,
    scale_columns,
)
from sparkfs.spark.canonical import (canonical_merge, chunk_column_moments, chunk_regrouper, lay_out,
                                     merged_column_moments)
from sparkfs.spark.blocks import (
    CONNECT_CLOSURE_BYTES,
    aggregate_partitions,
    arrow_blocks,
    cached_blocks,
    encode_block,
    resolve_transport,
    ship_to_tasks,
)

_FEATURES = "__sparkfs_features"
_LABEL = "__sparkfs_label"
_WEIGHT = "__sparkfs_weight"
_ROW_ID = "__sparkfs_row_id"
_MONOTONIC_ID = "__sparkfs_monotonic_id"
#: Default largest query batch handed to the tasks at once with a SparkContext (broadcast).
DEFAULT_QUERY_BATCH_BYTES = 128 * 2**20


def _as_block(raw, inverse_scale, has_weights: bool) -> Block:
    """An Arrow batch's columns (see blocks.batch_to_block) as a checked, scaled :class:`Block`."""
    matrix = raw[_FEATURES]
    check_finite(matrix)
    weights = None
    if has_weights:
        weights = np.asarray(raw[_WEIGHT], dtype=np.float64)
        if not (np.all(np.isfinite(weights)) and np.all(weights >= 0)):
            raise InvalidInputError("instance weights must be finite and >= 0")
    return Block(scale_columns(matrix, inverse_scale), np.asarray(raw[_ROW_ID], dtype=np.int64),
                 np.asarray(raw[_LABEL], dtype=np.float64).astype(np.int64), weights)


def _reads_cached_data(df) -> bool:
    """True when ``df`` is cached or its plan reads a cached DataFrame (e.g. a column added to one).

    Uses the JVM query execution when available (classic PySpark); otherwise only ``is_cached``.
    """
    if df.is_cached:
        return True
    try:
        return "InMemoryRelation" in df._jdf.queryExecution().withCachedData().toString()
    except Exception:  # Spark Connect or a changed internal API: be safe and persist
        return False


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


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
        Unique integer row ids; None numbers the rows by position (module notes).
    transport : {"auto", "context", "dataframe"}
        See :mod:`sparkfs.spark.blocks`; "dataframe" runs on Spark Connect.
    query_batch_bytes : int, optional
        Largest query batch (plus its per-batch tables) handed to the tasks at once; default
        128 MiB with a SparkContext, 48 MiB inside a Connect closure (never above that there).
    canonical : bool, default True
        Lay the rows out by row id once (one shuffle, :mod:`sparkfs.spark.canonical`) so that
        every pass sums in an order fixed by the row ids: bit-identical results for any
        partitioning. False skips the shuffle; results then agree to rounding only.
    cache_blocks : bool
        For iterative methods (many passes over the same rows): convert every Arrow batch to its
        dense/CSR matrix once, keep the encoded blocks persisted, and let every later pass read
        them instead of converting the vector column again. Costs one extra job and the blocks'
        memory (about the data's size) for the object's lifetime.
    """

    def __init__(self, df, features_col: str, *, num_features: int, label_col: Optional[str] = None,
                 num_classes: Optional[int] = None, weight_col: Optional[str] = None,
                 row_id_col: Optional[str] = None, transport: str = "auto",
                 query_batch_bytes: Optional[int] = None, cache_blocks: bool = False,
                 driver_budget_mb: Optional[float] = None, fewer_rows_hint: str = "use fewer rows",
                 canonical: bool = True):
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        for name in (features_col, label_col, weight_col, row_id_col):
            if name is not None and name not in df.columns:
                raise InvalidInputError(f"column '{name}' not found; the input has columns {df.columns}")
        if label_col is not None and num_classes is None:
            raise ValueError("num_classes is required with label_col")
        self.df = df
        self.features_col, self.label_col, self.weight_col, self.row_id_col = features_col, label_col, weight_col, row_id_col
        self.num_features = int(num_features)
        self.num_classes = int(num_classes) if label_col is not None else 1
        self.transport = resolve_transport(df.sparkSession, transport)
        budget = DEFAULT_QUERY_BATCH_BYTES if query_batch_bytes is None else int(query_batch_bytes)
        self.query_batch_bytes = budget if self.transport == "context" else min(budget, CONNECT_CLOSURE_BYTES)
        self.canonical = bool(canonical)
        self.driver_budget_mb = driver_budget_mb
        self.fewer_rows_hint = fewer_rows_hint
        columns = [F.col(features_col).alias(_FEATURES)]
        columns.append(F.col(label_col).cast("double").alias(_LABEL) if label_col else F.lit(0.0).alias(_LABEL))
        if weight_col:
            columns.append(F.col(weight_col).cast("double").alias(_WEIGHT))
        if row_id_col:
            columns.append(F.col(row_id_col).cast("long").alias(_ROW_ID))
        else:
            columns.append(F.monotonically_increasing_id().alias(_MONOTONIC_ID))
        base = df.select(*columns)
        self._persisted = not _reads_cached_data(df)
        if self._persisted:
            # Every pass must see the same rows in the same partitions (positional ids, sample).
            base = base.persist(StorageLevel.MEMORY_AND_DISK)
        self._base = base
        self._offsets: Optional[Dict[int, int]] = None
        self._class_counts: Optional[np.ndarray] = None
        self._all_rows: Optional[RowSet] = None
        self._statistics: Optional[ColumnStatistics] = None
        self._nonzero_count: Optional[float] = None
        self._prepared = None
        self.cache_blocks = cache_blocks
        self._block_frame = None
        self._scaled_cache = None
        #: 1 / scale of the passes: None here; a view of :meth:`scaled_by` has its own.
        self.inverse_scale: Optional[np.ndarray] = None
        self.info: Dict[str, Any] = {"row_ids": row_id_col or "position in input order", "passes": []}

    # -- lifetime --------------------------------------------------------------------------

    def __enter__(self) -> "Rows":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def release(self) -> None:
        """Unpersist the prepared input (what was shipped went with its ``with`` block)."""
        if self._block_frame is not None:
            self._block_frame.unpersist()
            self._block_frame = None
        if self._persisted:
            self._base.unpersist()
            self._persisted = False
        if self.canonical and self._prepared is not None:
            self._prepared.unpersist()
            self._prepared = None

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

    # -- error diagnosis -------------------------------------------------------------------

    def diagnosed(self, action: Callable[[], Any]):
        """Run a Spark action; a failed job is re-diagnosed to name the bad input (NaN, sizes...)."""
        from sparkfs.spark.failures import resource_failure
        from sparkfs.spark.stats import diagnose_input

        try:
            return action()
        except (InvalidInputError, ValueError):
            raise
        except Exception as error:
            resources = resource_failure(error)
            if resources is not None:  # out of memory, or the JVM is gone: no scan can help
                raise resources from error
            diagnose_input(self.df, self.features_col, self.label_col, self.weight_col)
            raise

    # -- counts, ids, statistics -----------------------------------------------------------

    @property
    def has_user_ids(self) -> bool:
        return bool(self.row_id_col)

    @property
    def class_counts(self) -> np.ndarray:
        if self._class_counts is None:
            self._count_rows()
        return self._class_counts

    @property
    def partition_offsets(self) -> Optional[Dict[int, int]]:
        """Rows before each partition (positional ids only; None with user ids)."""
        if self.has_user_ids:
            return None
        if self._offsets is None:
            self._count_rows()
        return dict(self._offsets)

    @property
    def n_rows(self) -> int:
        return int(self.class_counts.sum())

    def _count_rows(self) -> None:
        """Counts pass (JVM): rows per class and, for positional ids, the partition offsets."""
        from pyspark.sql import functions as F

        base = self._base
        if self.has_user_ids:
            per_label = {row[_LABEL]: row["count"] for row in base.groupBy(_LABEL).count().collect()}
            id_stats = base.agg(
                F.count(F.lit(1)).alias("rows"), F.count(_ROW_ID).alias("non_null"),
                F.count_distinct(_ROW_ID).alias("distinct"),
            ).first()
            check_user_ids(id_stats["rows"], id_stats["non_null"], id_stats["distinct"])
        else:
            partition = F.shiftright(F.col(_MONOTONIC_ID), PARTITION_SHIFT).alias("partition")
            per_label, per_partition = {}, {}
            for row in base.groupBy(partition, F.col(_LABEL)).count().collect():
                per_label[row[_LABEL]] = per_label.get(row[_LABEL], 0) + row["count"]
                per_partition[row["partition"]] = per_partition.get(row["partition"], 0) + row["count"]
            self._offsets = offsets_of_partitions(per_partition)
        self._class_counts = class_counts_of(per_label, self.num_classes)
        self.info["passes"].append("counts")

    @property
    def prepared(self):
        """The DataFrame every pass runs on: features, label, [weight,] row id."""
        from pyspark.sql import functions as F

        if self._prepared is not None:
            return self._prepared
        keep = [_FEATURES, _LABEL] + ([_WEIGHT] if self.weight_col else [])
        if self.has_user_ids:
            prepared = self._base.select(*keep, _ROW_ID)
        else:
            if self._offsets is None:
                self._count_rows()
            pairs = [F.lit(value) for pair in sorted(self._offsets.items()) for value in pair]
            offset_map = F.create_map(*pairs)
            position = F.col(_MONOTONIC_ID).bitwiseAND(F.lit((1 << PARTITION_SHIFT) - 1))
            partition = F.shiftright(F.col(_MONOTONIC_ID), PARTITION_SHIFT)
            prepared = self._base.select(*keep, (F.element_at(offset_map, partition) + position).alias(_ROW_ID))
        if self.canonical:
            from pyspark import StorageLevel

            partitions = int(self.df.sparkSession.conf.get("spark.sql.shuffle.partitions", "200"))
            prepared = lay_out(prepared, _ROW_ID, self.n_rows, partitions)
            prepared = prepared.persist(StorageLevel.MEMORY_AND_DISK)
        self._prepared = prepared
        return self._prepared

    def collect(self) -> RowSet:
        """Every row to the driver (sorted by id); gives the counts and offsets in the same job."""
        if self._all_rows is None:
            self.check_driver_rows(self.n_rows if self.driver_budget_mb is not None else 0, "all rows")
            self._all_rows = self.diagnosed(self._collect_all_rows)
            self.info["passes"].append("all rows")
        return self._all_rows

    def _collect_all_rows(self) -> RowSet:
        id_column = _ROW_ID if self.has_user_ids else _MONOTONIC_ID
        columns = [_FEATURES, _LABEL] + ([_WEIGHT] if self.weight_col else []) + [id_column]
        table = self._base.select(*columns).toArrow()
        rows, class_counts, offsets = rows_of_table(
            table, _FEATURES, _LABEL, _WEIGHT if self.weight_col else None, id_column, num_features=self.num_features,
            num_classes=self.num_classes, user_ids=self.has_user_ids, offsets=self._offsets)
        self._offsets = offsets
        if self._class_counts is None:
            self._class_counts = class_counts
        return rows

    def check_driver_rows(self, count: int, what: str) -> None:
        """Refuse, before any row travels, to bring ``count`` rows to the driver when their matrix
        (dense, or CSR: one more JVM pass counts the non-zeros when the dense size is above the
        budget) would exceed ``driver_budget_mb``. The message names the Param to change."""
        if self.driver_budget_mb is None or count == 0:
            return
        budget = float(self.driver_budget_mb) * 2**20
        per_row_overhead = 24.0  # id, label, weight
        needed = count * (8.0 * self.num_features + per_row_overhead)
        if needed > budget:
            nonzeros_per_row = self._nonzeros() / max(self.n_rows, 1)
            needed = count * (min(8.0 * self.num_features, 12.0 * nonzeros_per_row + 8.0) + per_row_overhead)
        if needed > budget:
            raise DriverBudgetError(
                f"{what} ({count} x {self.num_features}) would take about {needed / 2**20:.0f} MiB on the driver, "
                f"above driverBudgetMB={float(self.driver_budget_mb):g}: raise driverBudgetMB (and "
                f"spark.driver.memory with it) or {self.fewer_rows_hint}")

    def _nonzeros(self) -> float:
        """Non-zero feature values over all rows (JVM Summarizer pass)."""
        from pyspark.ml.stat import Summarizer
        from pyspark.sql import functions as F

        def compute():
            metric = Summarizer.metrics("numNonZeros").summary(F.col(_FEATURES)).alias("s")
            return self._base.select(metric).first()["s"]["numNonZeros"].toArray()

        if self._nonzero_count is None:
            self._nonzero_count = float(np.sum(self.diagnosed(compute)))
            self.info["passes"].append("non-zero count")
        return self._nonzero_count

    def column_statistics(self) -> ColumnStatistics:
        """min, max, mean, sample std per feature (from the collected rows if on the driver)."""
        if self._statistics is not None:
            return self._statistics
        if self._all_rows is not None:
            self._statistics = driver_column_statistics(self._all_rows.matrix)
            return self._statistics
        from pyspark.ml.stat import Summarizer
        from pyspark.sql import functions as F

        def compute():
            if self.canonical:  # chunk moments merged in the canonical order: the same bits always
                moments = self.run_pass(None, lambda block: chunk_column_moments(block.matrix), merged_column_moments,
                                        scaled=False)
                rows = moments["rows"][0]
                std = np.sqrt(moments["m2"] / (rows - 1)) if rows > 1 else np.zeros_like(moments["m2"])
                return moments["min"], moments["max"], moments["mean"], std
            metrics = Summarizer.metrics("min", "max", "mean", "std")
            summary = self._base.select(metrics.summary(F.col(_FEATURES)).alias("s")).first()["s"]
            return tuple(summary[name].toArray() for name in ("min", "max", "mean", "std"))

        minimum, maximum, mean, std = self.diagnosed(compute)
        if minimum.shape[0] != self.num_features:
            raise InvalidInputError(f"feature vectors have size {minimum.shape[0]}, not num_features={self.num_features}")
        if not (np.all(np.isfinite(minimum)) and np.all(np.isfinite(maximum))):
            raise InvalidInputError("feature vectors contain NaN or infinite values")
        self._statistics = ColumnStatistics(minimum, maximum, mean, std)
        self.info["passes"].append("column statistics")
        return self._statistics

    def check_magnitude(self, owner: str) -> None:
        """Refuse values (in the units of the passes) whose squares overflow: one JVM pass unless
        the column statistics are known."""
        statistics = self.column_statistics()
        check_magnitude(statistics.minimum, statistics.maximum, self.inverse_scale, owner)

    def scaled_by(self, scale: Optional[np.ndarray]) -> "Rows":
        """A view of these rows whose passes (and :meth:`scaled`) see every feature divided by
        ``scale`` (None or all ones: unscaled). The view shares the prepared input, its counts,
        statistics and cached blocks with ``self``; ``self`` and other views keep their own scale.
        The view owns nothing: release the rows it was made from (:mod:`sparkfs.spark.scaled_rows`)."""
        from sparkfs.spark.scaled_rows import ScaledRows

        return ScaledRows(self, scale)

    def scaled(self, matrix):
        """A driver-side matrix in the units the passes use (the last one is kept: no re-scaling)."""
        if self.inverse_scale is None:
            return matrix
        if self._scaled_cache is None or self._scaled_cache[0] is not matrix:
            self._scaled_cache = (matrix, scale_columns(matrix, self.inverse_scale))
        return self._scaled_cache[1]

    # -- queries ---------------------------------------------------------------------------

    def sample(self, size: Optional[int], seed: int = 0) -> RowSet:
        """``size`` rows drawn by (seed, the rows' content), sorted by id; all rows when None or >= n.

        The rows with the smallest :func:`~sparkfs.core.sampling.content_sample_keys` (ties: the
        smaller id) whether drawn here from the collected rows or by the sample pass: the same rows
        for any partitioning and any row order (module notes)."""
        if size is None or self._all_rows is not None:
            rows = self.collect()
            if size is None or size >= len(rows):
                return rows
            keys = content_sample_keys(rows.matrix, rows.labels, rows.weights, seed)
            return rows.take(np.sort(smallest_key_positions(keys, rows.ids, size)))
        if size >= self.n_rows:
            return self.collect()
        self.check_driver_rows(size, f"a sample of {size} rows")
        return self.diagnosed(lambda: self._sample_rows(size, seed))

    def _sample_rows(self, size: int, seed: int) -> RowSet:
        num_features, has_weights = self.num_features, bool(self.weight_col)

        def summarize(block):
            weights = np.asarray(block[_WEIGHT], dtype=np.float64) if has_weights else None
            return sample_summary(block[_FEATURES], block[_ROW_ID], block[_LABEL], weights, size, seed)

        columns = [_FEATURES, _LABEL] + ([_WEIGHT] if has_weights else []) + [_ROW_ID]
        summary = aggregate_partitions(self.prepared, columns, summarize,
                                       lambda left, right: merged_sample_summaries(left, right, size, num_features),
                                       num_features=num_features, transport=self.transport)
        self.info["passes"].append("query sample")
        return sample_of_summary(summary, num_features)

    def query_batches(self, queries: RowSet, extra_bytes_per_query: float = 0.0) -> List[slice]:
        """Slices of ``queries`` each within the batch budget.

        In a closure (Connect) everything a batch carries counts (queries plus the per-query
        tables, ``extra_bytes_per_query``); a broadcast is bounded per value, so there the
        budget applies to the query matrix alone and every pass uses the same batches.
        """
        num_queries = len(queries)
        per_query = queries.bytes_per_row() + (extra_bytes_per_query if self.transport == "dataframe" else 0.0)
        rows_per_batch = max(1, int(self.query_batch_bytes // max(per_query, 1)))
        return [slice(start, min(start + rows_per_batch, num_queries)) for start in range(0, num_queries, rows_per_batch)]

    # -- the passes ------------------------------------------------------------------------

    def _pass_source(self):
        """(DataFrame, columns, batch -> blocks, regroup) of the passes: the prepared rows (cut
        into chunks by ``regroup`` in the canonical layout), or cached blocks (one per chunk)."""
        from pyspark import StorageLevel
        from pyspark.sql.types import BinaryType, StructField, StructType

        columns = [_FEATURES, _LABEL] + ([_WEIGHT] if self.weight_col else []) + [_ROW_ID]
        if not self.cache_blocks:
            return self.prepared, columns, arrow_blocks(self.num_features), self._chunks()
        if self._block_frame is None:
            to_blocks, regroup = arrow_blocks(self.num_features), self._chunks()

            def encode_partition(batches):
                import pyarrow as pa

                for batch in (batches if regroup is None else regroup(batches)):
                    payloads = [encode_block(block) for block in to_blocks(batch)]
                    if payloads:
                        yield pa.RecordBatch.from_arrays([pa.array(payloads, pa.binary())], names=["block"])

            schema = StructType([StructField("block", BinaryType(), False)])
            frame = self.prepared.select(*columns).mapInArrow(encode_partition, schema)
            frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
            self.diagnosed(frame.count)
            self._block_frame = frame
            self.info["passes"].append("blocks (cached)")
        return self._block_frame, ["block"], cached_blocks(self.num_features), None

    def _chunks(self):
        """A partition's batches -> one batch per chunk (None without the layout)."""
        return chunk_regrouper(_ROW_ID, _FEATURES) if self.canonical else None

    def keyed_partials(self, emit_block: Callable[[Block], Any]):
        """A lazy DataFrame ``(key long, partition long, values array<double>)`` of per-key partials.

        ``emit_block(block)`` returns ``(keys (r,), values (r, p))`` for one block; the caller
        sums the partials per key (see :func:`sparkfs.spark.neighbours.pair_sums`). Nothing runs
        until the caller materialises it (it must inside the ``with`` blocks of what it ships).
        """
        import pyarrow as pa
        from pyspark.sql.types import ArrayType, DoubleType, LongType, StructField, StructType

        num_features, inverse_scale, has_weights = self.num_features, self.inverse_scale, bool(self.weight_col)
        source, columns, blocks_of_batch, regroup = self._pass_source()
        canonical = self.canonical

        def emit_partition(batches):
            from pyspark import TaskContext

            partition = TaskContext.get().partitionId()
            batches = batches if regroup is None else regroup(batches)
            for block in (block for batch in batches for block in blocks_of_batch(batch)):
                if canonical:  # a chunk's first row id orders the partials (module notes of canonical)
                    partition = int(np.asarray(block[_ROW_ID])[0])
                keys, values = emit_block(_as_block(block, inverse_scale, has_weights))
                values = np.ascontiguousarray(values, dtype=np.float64)
                offsets = np.arange(keys.size + 1, dtype=np.int32) * num_features
                yield pa.RecordBatch.from_arrays(
                    [pa.array(np.asarray(keys, dtype=np.int64)), pa.array(np.full(keys.size, partition, np.int64)),
                     pa.ListArray.from_arrays(pa.array(offsets), pa.array(values.ravel()))],
                    names=["key", "partition", "values"],
                )

        schema = StructType([StructField("key", LongType(), False), StructField("partition", LongType(), False),
                             StructField("values", ArrayType(DoubleType(), False), True)])
        return source.select(*columns).mapInArrow(emit_partition, schema)


    def run_pass(self, name: Optional[str], summarize_block: Callable[[Block], Dict[str, np.ndarray]],
                 merge: Callable[[Dict, Dict], Dict], *, scaled: bool = True) -> Optional[Dict[str, np.ndarray]]:
        """One pass: every Arrow batch of every partition as a :class:`Block`, summarised and reduced.

        ``scaled=False`` hands the blocks the raw features (a view of :meth:`scaled_by` scales them);
        ``name`` (None: the caller records the pass) goes to ``info["passes"]``."""
        inverse_scale, has_weights = self.inverse_scale if scaled else None, bool(self.weight_col)

        def summarize(raw):
            return summarize_block(_as_block(raw, inverse_scale, has_weights))

        source, columns, blocks_of_batch, regroup = self._pass_source()
        summary = self.diagnosed(lambda: aggregate_partitions(
            source, columns, summarize, merge, num_features=self.num_features,
            transport=self.transport, blocks_of_batch=blocks_of_batch, regroup=regroup,
            **(canonical_merge(_ROW_ID, self.n_rows) if self.canonical else {}),
        ))
        if name is not None:
            self.info["passes"].append(name)
        return summary
