"""The prepared input of the pair engine: one seam of :class:`sparkfs.spark.rows.Rows`.

:class:`PreparedRows` selects the input's features, class index, optional instance weights and
a stable row id once, persists them for the object's lifetime, counts the rows (per class and,
for positional ids, per partition) and lays them out canonically when asked to. The other seams
of :class:`~sparkfs.spark.rows.Rows` -- the driver-side row sets under a budget
(:mod:`sparkfs.spark.driver_rows`) and the pass runner (:mod:`sparkfs.spark.pass_runner`) -- read
their rows from here.

Row ids and determinism
-----------------------
Rows need a stable id to exclude a query from its own neighbours, to break distance ties
(smaller id first) and to order the sums of the canonical layout (:mod:`sparkfs.spark.canonical`).
Three kinds of id, recorded in ``info["row_ids"]``:

* **the user's** (``row_id_col``: unique, non-null integers): *everything* -- sample, ties, sums --
  is independent of the row order and of the partitioning: the same bits.
* **the position in input order** (``row_order="input"``, the default; "position in input order"):
  0..n-1 from rows per partition counted JVM-side, then ``offset[partition] + index within
  partition`` from ``monotonically_increasing_id``. A position does not change when the same
  ordered data are split into more or fewer partitions (``coalesce``, another
  ``maxPartitionBytes``, another ``parallelize(numSlices)``), so results are the same bits for 1 or
  several partitions. Rows that arrive in *another order* (a ``repartition``, or the same rows
  written as other files: Spark packs files into partitions by size) get other positions: the
  sample stays the same rows (it is drawn by content, :mod:`sparkfs.spark.driver_rows`), but the
  sums run in another order (scores equal to rounding) and distance ties between rows of different
  content break otherwise.
* **the rank in content order** (``row_order="content"``, what the selectors ask for with
  ``deterministic=True``; "content order (deterministic)"): the selected columns are sorted by a
  96-bit hash of each row's content -- Spark SQL's ``xxhash64`` and ``hash`` (Murmur3) of the
  features vector (``VectorUDT``: its stored type, size, indices and values), the class index and
  the weight -- before the monotonic id is taken, so the same offsets give contiguous ids 0..n-1 in
  hash order. Any order and any file layout of the same rows get the same ids, up to the order
  among rows of equal hash, and those are identical rows (equal features, label and weight:
  unequal rows sharing 96 bits of hash is a chance of about n^2 / 2^97, 6e-12 for 10^9 rows).
  Identical rows are interchangeable for every use of an id: two rows that trade ids leave every
  block, chunk and sum holding the same values at the same places, the sample draws the same
  content, and a tie between them picks the same vector. So with the canonical layout every
  floating-point sum is taken over the same values in the same order for any file layout: the
  same bits without a ``row_id_col``. DataFrame API only (``orderBy`` on two hash columns; Spark
  Connect too). Price: one sort (a sampling job for the range bounds and one shuffle of the rows)
  when the input is prepared, and the sorted columns are always persisted (their ids must not
  change between passes). Measured with ``local[2]`` on the shared 2-core machine (load average 8
  from other jobs; two runs of each, alternating), the preparation -- counts and the canonical
  layout -- by position against by content rank: a cached dense 300,000 x 50 frame 6.7-12.2 s
  against 12.9-25.6 s (1.9-2.1x), a cached sparse 100,000 x 20,000 frame of 50 non-zeros a row
  2.1-4.8 s against 5.5-6.8 s (1.4-2.6x). The passes that follow cost the same (the same laid-out
  rows); a fit pays the sort once.

The ids are not positions in the input with ``row_order="content"``: values computed per row id
cannot be attached back to the input by position (:mod:`sparkfs.spark.row_values`); the methods
that do so (the instance weights) keep positional ids.

The input must be deterministic across passes: an input that is not cached and reads no cached
data is persisted for the lifetime of the object (like Spark ML's iterative estimators) and
unpersisted at the end; cache the input yourself to share it between calls.

Numeric policy: non-finite feature values raise :class:`InvalidInputError`; labels must be class
indices 0..C-1 (doubles like 2.0 accepted); weights must be finite and >= 0.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from sparkfs.errors import InvalidInputError
from sparkfs.spark.canonical import lay_out
from sparkfs.spark.failures import with_input_diagnosis
from sparkfs.spark.row_sets import (
    PARTITION_SHIFT,
    Block,
    PassUnits,
    check_finite,
    check_user_ids,
    class_counts_of,
    label_values,
    offsets_of_partitions,
)

#: Column names of the prepared input (what the passes' Arrow batches hold).
FEATURES = "__sparkfs_features"
LABEL = "__sparkfs_label"
WEIGHT = "__sparkfs_weight"
ROW_ID = "__sparkfs_row_id"
MONOTONIC_ID = "__sparkfs_monotonic_id"
#: Columns of the content hash that orders rows with ``row_order="content"``.
CONTENT_HASHES: Tuple[str, str] = ("__sparkfs_content_xxhash64", "__sparkfs_content_murmur3")
#: How rows without a ``row_id_col`` are numbered: by position in input order, or by rank in content order.
ROW_ORDERS = ("input", "content")
#: ``info["row_ids"]`` of each kind of id.
CONTENT_ORDER_IDS = "content order (deterministic)"
POSITION_IDS = "position in input order"


def as_block(raw, units: Optional[PassUnits], has_weights: bool, targets: bool = False) -> Block:
    """An Arrow batch's columns (see blocks.batch_to_block) as a checked :class:`Block` in the
    pass's ``units`` (None: as stored); the labels are class indices, or with ``targets`` the
    values of a continuous target."""
    matrix = raw[FEATURES]
    check_finite(matrix)
    weights = None
    if has_weights:
        weights = np.asarray(raw[WEIGHT], dtype=np.float64)
        if not (np.all(np.isfinite(weights)) and np.all(weights >= 0)):
            raise InvalidInputError("instance weights must be finite and >= 0")
    return Block(matrix if units is None else units.apply(matrix), np.asarray(raw[ROW_ID], dtype=np.int64),
                 label_values(raw[LABEL], targets), weights)


def reads_cached_data(df) -> bool:
    """True when ``df`` is cached or its plan reads a cached DataFrame (e.g. a column added to one).

    Uses the JVM query execution when available (classic PySpark); otherwise only ``is_cached``.
    """
    if df.is_cached:
        return True
    try:
        return "InMemoryRelation" in df._jdf.queryExecution().withCachedData().toString()
    except Exception:  # Spark Connect or a changed internal API: be safe and persist
        return False


def in_content_order(selected):
    """``selected`` (the prepared columns but the id) sorted by a 96-bit hash of each row's content:
    Spark SQL's ``xxhash64`` then ``hash`` of every column (module notes). One range-partitioned sort."""
    from pyspark.sql import functions as F

    columns = selected.columns
    long_hash, short_hash = CONTENT_HASHES
    hashed = selected.select(*columns, F.xxhash64(*columns).alias(long_hash), F.hash(*columns).alias(short_hash))
    return hashed.orderBy(long_hash, short_hash).select(*columns)


class PreparedRows:
    """The input's columns selected once and persisted; counts, row ids and the pass input.

    Parameters are those of :class:`sparkfs.spark.rows.Rows` of the same names; ``info`` is the
    dict whose ``"passes"`` list records every pass run here. ``row_order`` ("input" or "content")
    numbers the rows when there is no ``row_id_col`` (module notes).
    """

    def __init__(self, df, features_col: str, *, num_features: int, label_col: Optional[str] = None,
                 num_classes: Optional[int] = None, weight_col: Optional[str] = None,
                 row_id_col: Optional[str] = None, canonical: bool = True, row_order: str = "input",
                 info: Optional[Dict[str, Any]] = None, targets: bool = False):
        from pyspark import StorageLevel
        from pyspark.sql import functions as F

        for name in (features_col, label_col, weight_col, row_id_col):
            if name is not None and name not in df.columns:
                raise InvalidInputError(f"column '{name}' not found; the input has columns {df.columns}")
        if label_col is not None and num_classes is None and not targets:
            raise ValueError("num_classes is required with label_col (or targets=True: a continuous target)")
        if targets and label_col is None:
            raise ValueError("targets=True needs label_col, the continuous target")
        if row_order not in ROW_ORDERS:
            raise ValueError(f"row_order must be one of {ROW_ORDERS}; got {row_order!r}")
        self.df = df
        self.features_col, self.label_col = features_col, label_col
        self.weight_col, self.row_id_col = weight_col, row_id_col
        self.num_features = int(num_features)
        #: Whether the label is a continuous target (its values kept as floats, no classes counted).
        self.targets = bool(targets)
        self.num_classes = int(num_classes) if label_col is not None and not targets else 1
        self.canonical = bool(canonical)
        content_ids = row_id_col is None and row_order == "content"
        self.row_order = "content" if content_ids else "input"
        ids = row_id_col or (CONTENT_ORDER_IDS if content_ids else POSITION_IDS)
        self.info = info if info is not None else {"row_ids": ids, "passes": []}
        columns = [F.col(features_col).alias(FEATURES)]
        columns.append(F.col(label_col).cast("double").alias(LABEL) if label_col else F.lit(0.0).alias(LABEL))
        if weight_col:
            columns.append(F.col(weight_col).cast("double").alias(WEIGHT))
        if row_id_col:
            base = df.select(*columns, F.col(row_id_col).cast("long").alias(ROW_ID))
        elif content_ids:
            base = in_content_order(df.select(*columns)).withColumn(MONOTONIC_ID, F.monotonically_increasing_id())
        else:
            base = df.select(*columns, F.monotonically_increasing_id().alias(MONOTONIC_ID))
        # The sorted rows are persisted even from a cached input: a sort run again may number rows of
        # equal hash otherwise, and it would cost a shuffle per pass.
        self._persisted = content_ids or not reads_cached_data(df)
        if self._persisted:
            # Every pass must see the same rows in the same partitions (positional ids, sample).
            base = base.persist(StorageLevel.MEMORY_AND_DISK)
        #: The selected columns (features, label, [weight,] user row id or monotonic id).
        self.base = base
        self.offsets: Optional[Dict[int, int]] = None
        self.known_class_counts: Optional[np.ndarray] = None
        self._prepared = None

    def release(self) -> None:
        """Unpersist what this object persisted (the selected columns, the canonical layout)."""
        if self._persisted:
            self.base.unpersist()
            self._persisted = False
        if self.canonical and self._prepared is not None:
            self._prepared.unpersist()
            self._prepared = None

    def diagnosed(self, action: Callable[[], Any]):
        """Run a Spark action; a failed job is re-diagnosed to name the bad input (NaN, sizes...)."""
        return with_input_diagnosis(action, self.df, self.features_col, self.label_col, self.weight_col)

    @property
    def has_user_ids(self) -> bool:
        return bool(self.row_id_col)

    @property
    def has_weights(self) -> bool:
        return bool(self.weight_col)

    @property
    def columns(self) -> List[str]:
        """The columns of :attr:`prepared` every pass reads: features, label, [weight,] row id."""
        return [FEATURES, LABEL] + ([WEIGHT] if self.weight_col else []) + [ROW_ID]

    @property
    def class_counts(self) -> np.ndarray:
        if self.known_class_counts is None:
            self.count_rows()
        return self.known_class_counts

    @property
    def partition_offsets(self) -> Optional[Dict[int, int]]:
        """Rows before each partition of :attr:`base` (None with user ids; with
        ``row_order="content"`` the partitions of the sorted rows, not of the input)."""
        if self.has_user_ids:
            return None
        if self.offsets is None:
            self.count_rows()
        return dict(self.offsets)

    @property
    def n_rows(self) -> int:
        return int(self.class_counts.sum())

    def count_rows(self) -> None:
        """Counts pass (JVM): rows per class and, for positional ids, the partition offsets."""
        from pyspark.sql import functions as F

        base = self.base
        label = F.lit(0.0) if self.targets else F.col(LABEL)  # a target: the rows, not its values, are counted
        if self.has_user_ids:
            per_label = {row["label"]: row["count"] for row in base.groupBy(label.alias("label")).count().collect()}
            id_stats = base.agg(
                F.count(F.lit(1)).alias("rows"), F.count(ROW_ID).alias("non_null"),
                F.count_distinct(ROW_ID).alias("distinct"),
            ).first()
            check_user_ids(id_stats["rows"], id_stats["non_null"], id_stats["distinct"])
        else:
            partition = F.shiftright(F.col(MONOTONIC_ID), PARTITION_SHIFT).alias("partition")
            per_label, per_partition = {}, {}
            for row in base.groupBy(partition, label.alias("label")).count().collect():
                per_label[row["label"]] = per_label.get(row["label"], 0) + row["count"]
                per_partition[row["partition"]] = per_partition.get(row["partition"], 0) + row["count"]
            self.offsets = offsets_of_partitions(per_partition)
        self.known_class_counts = class_counts_of(per_label, self.num_classes)
        self.info["passes"].append("counts")

    @property
    def prepared(self):
        """The DataFrame every pass runs on: features, label, [weight,] row id (laid out by row id
        with ``canonical``)."""
        from pyspark.sql import functions as F

        if self._prepared is not None:
            return self._prepared
        keep = [FEATURES, LABEL] + ([WEIGHT] if self.weight_col else [])
        if self.has_user_ids:
            prepared = self.base.select(*keep, ROW_ID)
        else:
            if self.offsets is None:
                self.count_rows()
            pairs = [F.lit(value) for pair in sorted(self.offsets.items()) for value in pair]
            offset_map = F.create_map(*pairs)
            position = F.col(MONOTONIC_ID).bitwiseAND(F.lit((1 << PARTITION_SHIFT) - 1))
            partition = F.shiftright(F.col(MONOTONIC_ID), PARTITION_SHIFT)
            prepared = self.base.select(*keep, (F.element_at(offset_map, partition) + position).alias(ROW_ID))
        if self.canonical:
            from pyspark import StorageLevel

            partitions = int(self.df.sparkSession.conf.get("spark.sql.shuffle.partitions", "200"))
            prepared = lay_out(prepared, ROW_ID, self.n_rows, partitions)
            prepared = prepared.persist(StorageLevel.MEMORY_AND_DISK)
        self._prepared = prepared
        return self._prepared
