"""The distributed nearest-neighbour engine and the Relief-family statistics on Spark.

One entry point, :func:`relief_statistics`, computes the mean margin (the scores) and the
eq. (4) weights of ``relief``, ``relieff``, ``mrelief`` or ``prelief`` on a DataFrame with a
vector column and an indexed label column. The formulas live in :mod:`sparkfs.core.relief`
and the block kernels in :mod:`sparkfs.core.neighbours`; this module only moves data.

Passes over the data (and why each is needed)
---------------------------------------------
All rows as queries (``sample_size=None``, Relief's m = n):

1. **Query set** (``toArrow``): every row goes to the driver anyway, since every row is a query
   to broadcast; the same collection gives the class counts (priors, the k check), the row ids
   and, when scaling or Parzen's default bandwidth need them, the column min / max / std.

With a sample of ``sample_size`` queries, instead:

1. **Counts** (JVM ``groupBy``): rows per class and, without a ``row_id_col``, rows per input
   partition (to number the rows, see *Row ids*).
2. **Column statistics** (JVM ``Summarizer``: min, max, std) -- only for ``scaling`` "range" or
   "standard", or for Parzen-Relief's default bandwidth.
3. **Query set**: every partition keeps its rows with the smallest ``splitmix64(row id, seed)``
   keys and a ``treeAggregate`` keeps the global smallest, so the sample depends on the seed and
   the row ids only, never on the partitioning.

Then, in both cases:

4. **Neighbour search** (once per query batch): the query batch is broadcast; each partition's
   Arrow batches become dense or CSR blocks (sparse rows stay sparse), distances are computed
   block-wise against the queries (Euclidean via GEMM, Manhattan explicitly) and reduced to
   the local k nearest per query and class; the local tables are merged by ``treeAggregate``
   (never collected task by task). Memory per task: one ``block_size x block_size`` distance
   block plus the (m_batch, C, k) candidate table.
5. **Margins** (once per query batch): with the query batch and the weighted pairs
   (query, neighbour id, weight) broadcast, each partition adds ``weight * |x_query -
   x_neighbour|`` for the neighbours it holds and the partial sums are tree-reduced straight
   into the per-feature sums (and, if asked, the per-query margin vectors). A second pass
   because the neighbours are only known once pass 4 has merged every partition's candidates.

Parzen-Relief needs no search: passes 4 and 5 are replaced by one pass of partial kernel sums.
Passes 4/5 run once per *query batch*: queries are broadcast in batches of at most
``query_batch_bytes`` (default 128 MiB), so a large query set never exceeds the broadcast limits.

Row ids and determinism
-----------------------
Rows need a stable id to exclude a query from its own neighbours, to break distance ties
(smaller id first) and to draw the query sample. With ``row_id_col`` (unique, non-null
integers) the ids are the user's and *everything* -- sample, ties, results -- is independent of
the row order and of the partitioning. Without it, a row's id is its **position in the
DataFrame's row order** (0..n-1: rows per partition counted JVM-side, then
``offset[partition] + index within partition`` from ``monotonically_increasing_id``). That
position does not change when the same ordered data are split into more or fewer partitions
(``coalesce``, another ``maxPartitionBytes``, another ``parallelize(numSlices)``), so results
are identical for 1 or several partitions; a *shuffle* that reorders rows (``repartition``)
changes positions, hence possibly the sample and tie-breaks -- pass ``row_id_col`` then. The
input must be deterministic across passes: an input that is not cached and reads no cached data
is persisted for the duration of the call (like Spark ML's iterative estimators) and unpersisted
afterwards; cache the input yourself to share it between calls.

Numeric policy: non-finite feature values raise :class:`InvalidInputError`; label values must
be class indices 0..C-1 (doubles like 2.0 accepted); every class with rows must have at least
k + 1 rows for the neighbour variants (k hits besides the query itself) and at least 2 for
Parzen-Relief, and at least two classes must have rows.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy as np
import scipy.sparse as sp

from sparkfs.core import relief as relief_math
from sparkfs.core.neighbours import METRICS, NeighbourTable, empty_neighbour_table, local_neighbour_table, merge_neighbour_tables
from sparkfs.spark.blocks import aggregate_partitions, arrow_vectors_to_matrix
from sparkfs.spark.stats import InvalidInputError, diagnose_input

_FEATURES = "__sparkfs_features"
_LABEL = "__sparkfs_label"
_ROW_ID = "__sparkfs_row_id"
_MONOTONIC_ID = "__sparkfs_monotonic_id"
#: monotonically_increasing_id() = (partition index << 33) + position in the partition.
_PARTITION_SHIFT = 33


@dataclass
class ReliefResult:
    """What :func:`relief_statistics` returns.

    Attributes
    ----------
    scores : ndarray (p,)
        Mean margin over the queries (the Relief score; rank features by it).
    weights : ndarray (p,)
        ``(scores)^+ / ||(scores)^+||_2``, eq. (4).
    variant, metric, scaling : str
    k : int
        Neighbours per class (unused by Parzen-Relief).
    n_rows, n_queries : int
    class_counts : ndarray (C,) of int
    class_priors : ndarray (C,)
        ``n_c / n`` over all rows.
    query_ids, query_labels : ndarray (m,)
        The queries (sorted by row id).
    neighbour_ids, neighbour_distances : ndarray (m, C, k) or None
        Per query and class the k nearest rows, nearest first (distances squared for
        Euclidean). None for Parzen-Relief.
    query_margins : ndarray (m, p) or None
        Per-query margin vectors (``return_query_margins=True``).
    feature_scale : ndarray (p,)
        The divisor applied to each feature (1 for ``scaling="none"`` and constant features).
    sigma : ndarray (p,) or None
        Parzen bandwidth per feature in scaled units (Parzen-Relief only).
    info : dict
        Passes run, query batches and the row-id source (for the run summary).
    """

    scores: np.ndarray
    weights: np.ndarray
    variant: str
    metric: str
    scaling: str
    k: int
    n_rows: int
    n_queries: int
    class_counts: np.ndarray
    class_priors: np.ndarray
    query_ids: np.ndarray
    query_labels: np.ndarray
    neighbour_ids: Optional[np.ndarray] = None
    neighbour_distances: Optional[np.ndarray] = None
    query_margins: Optional[np.ndarray] = None
    feature_scale: Optional[np.ndarray] = None
    sigma: Optional[np.ndarray] = None
    info: Dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Parameter checks (one place; messages name the parameter, the constraint and the value)
# --------------------------------------------------------------------------------------------


def _param_error(name: str, constraint: str, value) -> ValueError:
    return ValueError(f"The '{name}' parameter of relief_statistics must be {constraint}. Got {value!r} instead.")


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise _param_error(name, f"an int in the range [{minimum}, inf)", value)
    return int(value)


def _check_params(variant, k, metric, scaling, sample_size, seed, block_size, num_features, num_classes, query_batch_bytes, tree_depth):
    if variant not in relief_math.VARIANTS:
        raise _param_error("variant", f"a str among {set(relief_math.VARIANTS)}", variant)
    if metric not in METRICS:
        raise _param_error("metric", f"a str among {set(METRICS)}", metric)
    if scaling not in relief_math.SCALINGS:
        raise _param_error("scaling", f"a str among {set(relief_math.SCALINGS)}", scaling)
    _check_int("k", k, 1)
    if sample_size is not None:
        _check_int("sample_size", sample_size, 1)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise _param_error("seed", "an int", seed)
    _check_int("block_size", block_size, 1)
    _check_int("num_features", num_features, 1)
    _check_int("num_classes", num_classes, 2)
    _check_int("query_batch_bytes", query_batch_bytes, 1)
    _check_int("tree_depth", tree_depth, 1)


def _check_sigma(sigma, num_features):
    if sigma is None:
        return None
    values = np.asarray(sigma, dtype=np.float64)
    if values.ndim > 1 or (values.ndim == 1 and values.shape[0] != num_features):
        raise _param_error("sigma", f"None, a positive float or an array of {num_features} positive floats", sigma)
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise _param_error("sigma", "positive and finite", sigma)
    return np.broadcast_to(values, (num_features,)).copy()


# --------------------------------------------------------------------------------------------
# Block helpers (run on the executors)
# --------------------------------------------------------------------------------------------


def _scaled(matrix, inverse_scale: np.ndarray):
    """Divide every feature by its scale (CSR stays CSR)."""
    if sp.issparse(matrix):
        matrix = sp.csr_matrix(matrix, copy=True)
        matrix.data *= inverse_scale[matrix.indices]
        return matrix
    return matrix * inverse_scale


def _check_finite(matrix) -> None:
    values = matrix.data if sp.issparse(matrix) else matrix
    if not np.all(np.isfinite(values)):
        raise InvalidInputError("feature vectors contain NaN or infinite values")


def _block_arrays(block, inverse_scale):
    matrix = block[_FEATURES]
    _check_finite(matrix)
    return (
        _scaled(matrix, inverse_scale),
        np.asarray(block[_ROW_ID], dtype=np.int64),
        np.asarray(block[_LABEL], dtype=np.float64).astype(np.int64),
    )


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser: a bijection on 64-bit integers that scrambles consecutive ids."""
    with np.errstate(over="ignore"):
        z = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def sample_keys(row_ids, seed: int) -> np.ndarray:
    """The sampling key of each row: the ``sample_size`` rows with the smallest keys are drawn.

    ``splitmix64(row_id XOR splitmix64(seed))``: distinct ids get distinct keys, so the sample
    is a deterministic function of (seed, row ids) and a uniform-looking draw without replacement.
    """
    seed_mix = _splitmix64(np.array([seed], dtype=np.int64).astype(np.uint64))[0]
    return _splitmix64(np.asarray(row_ids, dtype=np.int64).astype(np.uint64) ^ seed_mix)


def _matrix_to_summary(matrix, prefix: str) -> Dict[str, np.ndarray]:
    if sp.issparse(matrix):
        matrix = sp.csr_matrix(matrix)
        return {f"{prefix}data": matrix.data, f"{prefix}indices": matrix.indices, f"{prefix}indptr": matrix.indptr}
    return {f"{prefix}dense": np.asarray(matrix)}


def _matrix_from_summary(summary, prefix: str, num_features: int):
    if f"{prefix}dense" in summary:
        return summary[f"{prefix}dense"].reshape(-1, num_features)
    indptr = summary[f"{prefix}indptr"]
    return sp.csr_matrix(
        (summary[f"{prefix}data"], summary[f"{prefix}indices"], indptr), shape=(len(indptr) - 1, num_features)
    )


def _stack(first, second):
    if sp.issparse(first) or sp.issparse(second):
        return sp.vstack([sp.csr_matrix(first), sp.csr_matrix(second)], format="csr")
    return np.vstack([first, second])


# --------------------------------------------------------------------------------------------
# Driver-side steps
# --------------------------------------------------------------------------------------------


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


def _class_counts(per_label: Dict[Any, int], num_classes: int) -> np.ndarray:
    """Rows per class index from {label value: rows}; labels must be 0..C-1."""
    if not per_label:
        raise InvalidInputError("the input has no rows")
    if None in per_label:
        raise InvalidInputError(f"{per_label[None]} row(s) have a null label")
    bad = [label for label in per_label if not (float(label).is_integer() and 0 <= label < num_classes)]
    if bad:
        raise InvalidInputError(
            f"labels must be class indices 0..{num_classes - 1} (num_classes={num_classes}); found {sorted(bad)[:5]}"
        )
    class_counts = np.zeros(num_classes, dtype=np.int64)
    for label, count in per_label.items():
        class_counts[int(label)] = count
    return class_counts


def _partition_offsets(rows_per_partition: Dict[int, int]) -> Dict[int, int]:
    """First positional row id of each (non-empty) input partition."""
    offsets, running = {}, 0
    for partition_index in sorted(rows_per_partition):
        offsets[partition_index] = running
        running += rows_per_partition[partition_index]
    return offsets


def _positional_ids(monotonic_ids: np.ndarray, offsets: Dict[int, int]) -> np.ndarray:
    """Driver-side twin of the JVM expression in :func:`_with_row_ids`."""
    partitions = monotonic_ids >> _PARTITION_SHIFT
    partition_offset = np.array([offsets[int(q)] for q in partitions], dtype=np.int64) if partitions.size else partitions
    return partition_offset + (monotonic_ids & ((1 << _PARTITION_SHIFT) - 1))


def _with_row_ids(base, offsets: Optional[Dict[int, int]]):
    """The prepared DataFrame (features, label, row id) on which every later pass runs."""
    from pyspark.sql import functions as F

    if offsets is None:  # user ids
        return base
    offset_map = F.create_map(*[F.lit(value) for pair in sorted(offsets.items()) for value in pair])
    position = F.col(_MONOTONIC_ID).bitwiseAND(F.lit((1 << _PARTITION_SHIFT) - 1))
    partition = F.shiftright(F.col(_MONOTONIC_ID), _PARTITION_SHIFT)
    return base.select(_FEATURES, _LABEL, (F.element_at(offset_map, partition) + position).alias(_ROW_ID))


def _check_user_ids(rows: int, non_null: int, distinct: int) -> None:
    if non_null != rows:
        raise InvalidInputError(f"{rows - non_null} row(s) have a null row id")
    if distinct != rows:
        raise InvalidInputError(f"row ids are not unique: {rows} rows but {distinct} distinct ids")


def _count_rows(base, has_user_ids: bool, num_classes: int):
    """Counts pass (JVM): rows per class and, for positional ids, the partition offsets."""
    from pyspark.sql import functions as F

    if has_user_ids:
        per_label = {row[_LABEL]: row["count"] for row in base.groupBy(_LABEL).count().collect()}
        id_stats = base.agg(
            F.count(F.lit(1)).alias("rows"), F.count(_ROW_ID).alias("non_null"),
            F.count_distinct(_ROW_ID).alias("distinct"),
        ).first()
        _check_user_ids(id_stats["rows"], id_stats["non_null"], id_stats["distinct"])
        return _class_counts(per_label, num_classes), None
    partition = F.shiftright(F.col(_MONOTONIC_ID), _PARTITION_SHIFT).alias("partition")
    per_label, per_partition = {}, {}
    for row in base.groupBy(partition, F.col(_LABEL)).count().collect():
        per_label[row[_LABEL]] = per_label.get(row[_LABEL], 0) + row["count"]
        per_partition[row["partition"]] = per_partition.get(row["partition"], 0) + row["count"]
    return _class_counts(per_label, num_classes), _partition_offsets(per_partition)


def _collect_all_rows(base, *, has_user_ids: bool, num_features: int, num_classes: int, offsets=None):
    """Every row to the driver (all rows are queries): matrix, ids, labels, counts, offsets.

    One job gives the class counts and the partition offsets too, so the all-rows mode needs
    no separate counts pass.
    """
    id_column = _ROW_ID if has_user_ids else _MONOTONIC_ID
    table = base.select(_FEATURES, _LABEL, id_column).toArrow()
    matrix = arrow_vectors_to_matrix(table.column(_FEATURES), num_features)
    label_column = table.column(_LABEL)
    if label_column.null_count:
        raise InvalidInputError(f"{label_column.null_count} row(s) have a null label")
    raw_labels = label_column.to_numpy().astype(np.float64)
    values, counts = np.unique(raw_labels, return_counts=True)
    class_counts = _class_counts({float(v): int(c) for v, c in zip(values, counts)}, num_classes)
    id_values = table.column(id_column)
    if has_user_ids:
        ids = id_values.to_numpy(zero_copy_only=False)
        non_null = len(id_values) - id_values.null_count
        ids = ids.astype(np.int64) if non_null == len(id_values) else ids
        _check_user_ids(len(id_values), non_null, np.unique(ids).size if non_null == len(id_values) else non_null)
    else:
        monotonic = id_values.to_numpy().astype(np.int64)
        if offsets is None:
            partitions, rows_per_partition = np.unique(monotonic >> _PARTITION_SHIFT, return_counts=True)
            offsets = _partition_offsets({int(q): int(c) for q, c in zip(partitions, rows_per_partition)})
        ids = _positional_ids(monotonic, offsets)
    return matrix, ids, raw_labels.astype(np.int64), class_counts, offsets


def _check_class_sizes(class_counts: np.ndarray, variant: str, k: int) -> None:
    present = np.flatnonzero(class_counts > 0)
    if present.size < 2:
        raise InvalidInputError(
            f"Relief needs rows of at least two classes; the input has rows of class {present.tolist()} only"
        )
    needed = 2 if variant == "prelief" else k + 1
    small = [int(c) for c in present if class_counts[c] < needed]
    if small:
        c = small[0]
        if variant == "prelief":
            raise InvalidInputError(
                f"class {c} has a single row: Parzen-Relief's same-class mean (i != n) needs at least 2 rows per class"
            )
        raise ValueError(
            f"k={k} is too large for class {c}: it has {class_counts[c]} rows, so a query of that class has only "
            f"{class_counts[c] - 1} other rows of its class (nearest hits); use k <= {int(class_counts[present].min()) - 1}"
        )


def _column_statistics(prepared, num_features: int):
    from pyspark.ml.stat import Summarizer
    from pyspark.sql import functions as F

    summary = prepared.select(Summarizer.metrics("min", "max", "std").summary(F.col(_FEATURES)).alias("s")).first()["s"]
    minimum, maximum, std = (summary[name].toArray() for name in ("min", "max", "std"))
    if minimum.shape[0] != num_features:
        raise InvalidInputError(f"feature vectors have size {minimum.shape[0]}, not num_features={num_features}")
    if not (np.all(np.isfinite(minimum)) and np.all(np.isfinite(maximum))):
        raise InvalidInputError("feature vectors contain NaN or infinite values")
    return minimum, maximum, std


def _sample_queries(prepared, *, num_features, sample_size, seed, tree_depth):
    """Query pass: the ``sample_size`` rows with the smallest :func:`sample_keys`.

    Each partition keeps its own smallest keys and ``treeAggregate`` keeps the global ones, so
    at most ``sample_size`` rows travel per merge and the sample depends on (seed, row ids) only.
    """

    def smallest_keys(summary):
        keys = summary["keys"]
        if keys.size <= sample_size:
            return summary
        keep = np.sort(np.argpartition(keys, sample_size - 1)[:sample_size])
        matrix = _matrix_from_summary(summary, "rows_", num_features)[keep]
        result = {"keys": keys[keep], "ids": summary["ids"][keep], "labels": summary["labels"][keep]}
        result.update(_matrix_to_summary(matrix, "rows_"))
        return result

    def summarize(block):
        ids = np.asarray(block[_ROW_ID], dtype=np.int64)
        summary = {"keys": sample_keys(ids, seed), "ids": ids, "labels": np.asarray(block[_LABEL], dtype=np.float64)}
        summary.update(_matrix_to_summary(block[_FEATURES], "rows_"))
        return smallest_keys(summary)

    def merge(left, right):
        matrix = _stack(_matrix_from_summary(left, "rows_", num_features), _matrix_from_summary(right, "rows_", num_features))
        summary = {name: np.concatenate([left[name], right[name]]) for name in ("keys", "ids", "labels")}
        summary.update(_matrix_to_summary(matrix, "rows_"))
        return smallest_keys(summary)

    summary = aggregate_partitions(
        prepared, [_FEATURES, _LABEL, _ROW_ID], summarize, merge, num_features=num_features, depth=tree_depth
    )
    return _matrix_from_summary(summary, "rows_", num_features), summary["ids"].astype(np.int64), summary["labels"].astype(np.int64)


def _driver_column_statistics(matrix):
    """min, max and sample std (ddof=1, as Spark's Summarizer) of an in-memory matrix."""
    n_rows = matrix.shape[0]
    if sp.issparse(matrix):
        matrix = sp.csc_matrix(matrix)
        minimum = matrix.min(axis=0).toarray().ravel()
        maximum = matrix.max(axis=0).toarray().ravel()
        mean = np.asarray(matrix.sum(axis=0)).ravel() / n_rows
        stored_per_column = np.diff(matrix.indptr)
        centred = matrix.data - np.repeat(mean, stored_per_column)
        squares = np.bincount(
            np.repeat(np.arange(matrix.shape[1]), stored_per_column), weights=centred * centred, minlength=matrix.shape[1]
        ) + (n_rows - stored_per_column) * mean * mean
    else:
        minimum, maximum = matrix.min(axis=0), matrix.max(axis=0)
        centred = matrix - matrix.mean(axis=0)
        squares = np.einsum("ij,ij->j", centred, centred)
    std = np.sqrt(squares / (n_rows - 1)) if n_rows > 1 else np.zeros(matrix.shape[1])
    return minimum, maximum, std


def _query_batches(query_matrix, query_batch_bytes: int):
    """Slices of the query set, each at most ``query_batch_bytes`` when serialised."""
    num_queries = query_matrix.shape[0]
    if sp.issparse(query_matrix):
        bytes_per_query = 12.0 * query_matrix.nnz / max(num_queries, 1) + 8
    else:
        bytes_per_query = 8.0 * query_matrix.shape[1]
    rows_per_batch = max(1, int(query_batch_bytes // max(bytes_per_query, 1)))
    return [slice(start, min(start + rows_per_batch, num_queries)) for start in range(0, num_queries, rows_per_batch)]


def _search_neighbours(prepared, broadcast, *, num_queries, num_features, num_classes, k, metric, block_size, inverse_scale, shift, tree_depth):
    """Pass 4: the global k nearest per query and class, tree-merged from partition tables."""

    def summarize(block):
        row_matrix, row_ids, row_labels = _block_arrays(block, inverse_scale)
        queries = broadcast.value
        table = local_neighbour_table(
            queries["matrix"], queries["ids"], row_matrix, row_ids, row_labels,
            num_classes=num_classes, k=k, metric=metric, block_size=block_size, shift=shift,
        )
        return {"neighbour_ids": table.neighbour_ids, "distances": table.distances}

    def merge(left, right):
        query_ids = np.zeros(left["neighbour_ids"].shape[0], dtype=np.int64)  # same queries on both sides
        merged = merge_neighbour_tables(
            NeighbourTable(query_ids, left["neighbour_ids"], left["distances"]),
            NeighbourTable(query_ids, right["neighbour_ids"], right["distances"]),
        )
        return {"neighbour_ids": merged.neighbour_ids, "distances": merged.distances}

    summary = aggregate_partitions(
        prepared, [_FEATURES, _LABEL, _ROW_ID], summarize, merge, num_features=num_features, depth=tree_depth
    )
    query_ids = broadcast.value["ids"]
    if summary is None:
        return empty_neighbour_table(query_ids, num_classes, k)
    return NeighbourTable(query_ids, summary["neighbour_ids"], summary["distances"])


def _accumulate_margins(prepared, broadcast, pairs_broadcast, *, num_queries, num_features, inverse_scale, per_query, tree_depth):
    """Pass 5: sum of weight * |x_query - x_neighbour| over the pairs, per feature (and query)."""

    def summarize(block):
        row_matrix, row_ids, _ = _block_arrays(block, inverse_scale)
        pairs = pairs_broadcast.value
        pair_neighbour_ids = pairs["neighbour_ids"]  # sorted
        first = np.searchsorted(pair_neighbour_ids, row_ids, side="left")
        last = np.searchsorted(pair_neighbour_ids, row_ids, side="right")
        pairs_per_row = last - first
        total = int(pairs_per_row.sum())
        summary = {"margin_sum": np.zeros(num_features)}
        if per_query:
            summary["query_margins"] = np.zeros((num_queries, num_features))
        if total == 0:
            return summary
        block_row_of_pair = np.repeat(np.arange(row_ids.size), pairs_per_row)
        run_start = np.cumsum(pairs_per_row) - pairs_per_row
        pair_index = np.repeat(first, pairs_per_row) + (np.arange(total) - np.repeat(run_start, pairs_per_row))
        feature_sums, query_sums = relief_math.margin_sums(
            broadcast.value["matrix"], row_matrix, pairs["query_positions"][pair_index], block_row_of_pair,
            pairs["weights"][pair_index], per_query=per_query, num_queries=num_queries,
        )
        summary["margin_sum"] = feature_sums
        if per_query:
            summary["query_margins"] = query_sums
        return summary

    def merge(left, right):
        return {name: left[name] + right[name] for name in left}

    return aggregate_partitions(
        prepared, [_FEATURES, _LABEL, _ROW_ID], summarize, merge, num_features=num_features, depth=tree_depth
    )


def _parzen_margins(prepared, broadcast, *, num_queries, num_features, class_counts, sigma, inverse_scale, per_query, block_size, tree_depth):
    """Passes 4+5 of Parzen-Relief: partial kernel sums of every block, tree-reduced."""

    def summarize(block):
        row_matrix, row_ids, row_labels = _block_arrays(block, inverse_scale)
        queries = broadcast.value
        sums = relief_math.prelief_margin_sums(
            queries["matrix"], queries["ids"], queries["labels"], row_matrix, row_ids, row_labels,
            class_counts=class_counts, sigma=sigma, per_query=per_query, block_size=block_size,
        )
        if per_query:
            return {"margin_sum": sums.sum(axis=0), "query_margins": sums}
        return {"margin_sum": sums}

    def merge(left, right):
        return {name: left[name] + right[name] for name in left}

    return aggregate_partitions(
        prepared, [_FEATURES, _LABEL, _ROW_ID], summarize, merge, num_features=num_features, depth=tree_depth
    )


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def relief_statistics(
    df,
    features_col: str,
    label_col: str,
    *,
    num_features: int,
    num_classes: int,
    variant: str,
    k: int = 10,
    metric: str = "euclidean",
    scaling: str = "none",
    sample_size: Optional[int] = None,
    seed: int = 0,
    sigma=None,
    row_id_col: Optional[str] = None,
    block_size: int = 2048,
    query_batch_bytes: int = 128 * 2**20,
    tree_depth: int = 2,
    return_query_margins: bool = False,
) -> ReliefResult:
    """Relief-family scores of the features of ``df`` (see the module notes for the passes).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    features_col : str
        A ``pyspark.ml`` vector column (dense or sparse; sparse rows stay sparse).
    label_col : str
        Numeric class index 0..C-1 (e.g. a StringIndexer output).
    num_features, num_classes : int
        p (every vector must have this size) and C.
    variant : {"relief", "relieff", "mrelief", "prelief"}
        Margin of eq. (3), ReliefF (Kononenko), eq. (16) or eq. (14); see
        :mod:`sparkfs.core.relief` for the formulas and the deviations from the paper.
    k : int, default 10
        Nearest hits and misses per query (per other class for ReliefF).
    metric : {"euclidean", "manhattan"}
        Distance of the neighbour search.
    scaling : {"none", "range", "standard"}
        Divide each feature by its range (Kononenko's diff) or sample std before the search and
        the margins.
    sample_size : int or None
        Number of query instances (Relief's m), drawn by seed; None (default) uses every row.
        Every row as a query means the whole data set is collected to the driver and broadcast
        (bounded by ``spark.driver.maxResultSize``) and the search costs O(n^2 p): use a sample
        for large n.
    seed : int
        Seed of the query sample.
    sigma : float, array of shape (p,) or None
        Parzen-Relief bandwidth in scaled units; None = the paper's 0.01 on [0, 1]-scaled data,
        i.e. ``0.01 * (max_d - min_d)`` of the scaled feature.
    row_id_col : str or None
        Column of unique integer row ids; None numbers the rows by position (module notes).
    block_size : int
        Rows per block and queries per chunk of the distance computation.
    query_batch_bytes : int
        Largest query batch broadcast at once; each batch costs one search + one margin pass.
    tree_depth : int
        Depth of the ``treeAggregate`` merges.
    return_query_margins : bool
        Also return the (m, p) per-query margin vectors (dense; every task then ships an
        (m_batch, p) array, so keep m x p moderate).

    Returns
    -------
    ReliefResult
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    _check_params(variant, k, metric, scaling, sample_size, seed, block_size, num_features, num_classes, query_batch_bytes, tree_depth)
    sigma = _check_sigma(sigma, num_features)
    for name in (features_col, label_col) + ((row_id_col,) if row_id_col else ()):
        if name not in df.columns:
            raise InvalidInputError(f"column '{name}' not found; the input has columns {df.columns}")

    columns = [F.col(features_col).alias(_FEATURES), F.col(label_col).cast("double").alias(_LABEL)]
    if row_id_col:
        columns.append(F.col(row_id_col).cast("long").alias(_ROW_ID))
    else:
        columns.append(F.monotonically_increasing_id().alias(_MONOTONIC_ID))
    base = df.select(*columns)
    persisted = not _reads_cached_data(df)
    if persisted:
        # Every pass must see the same rows in the same partitions (positional ids, sample).
        base = base.persist(StorageLevel.MEMORY_AND_DISK)
    spark_context = df.sparkSession.sparkContext
    broadcasts = []
    info: Dict[str, Any] = {"row_ids": row_id_col or "position in input order", "passes": []}
    try:
        try:
            has_user_ids = bool(row_id_col)
            offsets = None
            if sample_size is not None:
                class_counts, offsets = _count_rows(base, has_user_ids, num_classes)
                info["passes"].append("counts")
            if sample_size is None or sample_size >= int(class_counts.sum()):
                # All rows are queries: one collection also gives the counts and the offsets.
                query_matrix, query_ids, query_labels, class_counts, offsets = _collect_all_rows(
                    base, has_user_ids=has_user_ids, num_features=num_features, num_classes=num_classes,
                    offsets=offsets,
                )
                info["passes"].append("query set (all rows)")
                all_rows_collected = True
            else:
                all_rows_collected = False
            prepared = _with_row_ids(base, offsets)
            n_rows = int(class_counts.sum())
            _check_class_sizes(class_counts, variant, k)
            priors = relief_math.class_priors(class_counts)
            if not all_rows_collected:
                query_matrix, query_ids, query_labels = _sample_queries(
                    prepared, num_features=num_features, sample_size=sample_size, seed=seed, tree_depth=tree_depth
                )
                info["passes"].append("query set (sample)")
            _check_finite(query_matrix)
            order = np.argsort(query_ids, kind="stable")
            query_matrix, query_ids, query_labels = query_matrix[order], query_ids[order], query_labels[order]

            needs_statistics = scaling != "none" or (variant == "prelief" and sigma is None)
            if needs_statistics and all_rows_collected:
                minimum, maximum, std = _driver_column_statistics(query_matrix)
            elif needs_statistics:
                minimum, maximum, std = _column_statistics(prepared, num_features)
                info["passes"].append("column statistics")
            if needs_statistics:
                scale = relief_math.feature_scale(scaling, minimum=minimum, maximum=maximum, std=std, num_features=num_features)
            else:
                scale = np.ones(num_features)
            inverse_scale = 1.0 / scale
            if variant == "prelief" and sigma is None:
                sigma = relief_math.default_parzen_sigma((maximum - minimum) * inverse_scale)

            query_matrix = _scaled(query_matrix, inverse_scale)
            num_queries = query_ids.shape[0]
            # Translation for the Euclidean GEMM identity (see core.neighbours.pairwise_distances):
            # the queries' mean rounded to integers, so integer-valued data stay exact (exact
            # ties then break by row id) while data far from 0 are still brought close to it.
            shift = None if sp.issparse(query_matrix) else np.round(np.asarray(query_matrix.mean(axis=0)).ravel())

            margin_sum = np.zeros(num_features)
            query_margins = np.zeros((num_queries, num_features)) if return_query_margins else None
            neighbour_ids = neighbour_distances = None
            if variant != "prelief":
                neighbour_ids = np.zeros((num_queries, num_classes, k), dtype=np.int64)
                neighbour_distances = np.zeros((num_queries, num_classes, k))
            batches = _query_batches(query_matrix, query_batch_bytes)
            info["query_batches"] = len(batches)
            for batch in batches:
                batch_ids, batch_labels = query_ids[batch], query_labels[batch]
                batch_queries = spark_context.broadcast(
                    {"matrix": query_matrix[batch], "ids": batch_ids, "labels": batch_labels}
                )
                broadcasts.append(batch_queries)
                batch_size = batch_ids.shape[0]
                if variant == "prelief":
                    summary = _parzen_margins(
                        prepared, batch_queries, num_queries=batch_size, num_features=num_features,
                        class_counts=class_counts, sigma=sigma, inverse_scale=inverse_scale,
                        per_query=return_query_margins, block_size=block_size, tree_depth=tree_depth,
                    )
                    info["passes"].append("parzen kernel sums")
                else:
                    table = _search_neighbours(
                        prepared, batch_queries, num_queries=batch_size, num_features=num_features,
                        num_classes=num_classes, k=k, metric=metric, block_size=block_size,
                        inverse_scale=inverse_scale, shift=shift, tree_depth=tree_depth,
                    )
                    info["passes"].append("neighbour search")
                    neighbour_ids[batch], neighbour_distances[batch] = table.neighbour_ids, table.distances
                    if variant == "relief":
                        pairs = relief_math.relief_pairs(table, batch_labels)
                    elif variant == "relieff":
                        pairs = relief_math.relieff_pairs(table, batch_labels, priors)
                    else:
                        pairs = relief_math.mrelief_pairs(table, batch_labels, priors)
                    pairs_broadcast = spark_context.broadcast(
                        {"query_positions": pairs.query_positions, "neighbour_ids": pairs.neighbour_ids, "weights": pairs.weights}
                    )
                    broadcasts.append(pairs_broadcast)
                    summary = _accumulate_margins(
                        prepared, batch_queries, pairs_broadcast, num_queries=batch_size,
                        num_features=num_features, inverse_scale=inverse_scale,
                        per_query=return_query_margins, tree_depth=tree_depth,
                    )
                    info["passes"].append("margins")
                margin_sum += summary["margin_sum"]
                if return_query_margins:
                    query_margins[batch] = summary["query_margins"]
                for used in broadcasts:
                    used.destroy()
                broadcasts.clear()
        except (InvalidInputError, ValueError):
            raise
        except Exception:
            # A failed Spark job (NaN values, vectors of another size, null vectors...): name the cause.
            diagnose_input(df, features_col, label_col)
            raise
    finally:
        for used in broadcasts:
            used.destroy()
        if persisted:
            base.unpersist()

    scores = margin_sum / num_queries
    return ReliefResult(
        scores=scores,
        weights=relief_math.relief_weights(scores),
        variant=variant,
        metric=metric,
        scaling=scaling,
        k=k,
        n_rows=n_rows,
        n_queries=num_queries,
        class_counts=class_counts,
        class_priors=priors,
        query_ids=query_ids,
        query_labels=query_labels,
        neighbour_ids=neighbour_ids,
        neighbour_distances=neighbour_distances,
        query_margins=query_margins,
        feature_scale=scale,
        sigma=sigma if variant == "prelief" else None,
        info=info,
    )
