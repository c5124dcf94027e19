"""Per-class sums kept sparse: the float engine's summaries for vectors too wide for dense per-class arrays.

Why: a dense summary of the float engine (:mod:`sparkfs.spark.float_moments`) holds 2 x classes x
features doubles. On a hashed vocabulary (2^24 ids, 20 classes) that is 5.4 GB per summary, though a
corpus touches a small share of its ids (100,000 documents of about 47 terms: under 600,000 of the
16.8 M ids). Here a summary holds one entry per (feature id, class) pair that occurs: ``ids``,
``classes``, ``sums``, ``squares``, sorted by id then class. A block has at most one entry per
stored value, so a summary is never larger than the values it summarises (24 bytes an entry), and an
id that never occurs has no slot. With the column extremes it also holds, per id that occurs in a
row of positive weight, the minimum and maximum of its stored values and how many rows store it
(``touched``, ``stored_min``, ``stored_max``, ``stored``), and how many such rows there were
(``extreme_rows``): an id stored in fewer rows also has an implicit zero.

Summation order: a block's entries are summed in the order of its stored values, and a merge
concatenates its parts in order and sums each pair with one ``bincount``, so a pair's sum is
``((0 + first) + second) + ...``: the order the dense summaries add in. The same partitioning gives
the same bits as the dense engine would (a test checks it), and another partitioning agrees to rounding.

The pass (:func:`keyed_class_sums`): each partition folds its blocks in order, then cuts its summary
into :data:`~sparkfs.spark.blocks.REDUCE_FANOUT` ranges of ids. A ``repartition`` by range (a
shuffle; DataFrame API only, so it runs on Spark Connect) brings each range of every partition to one
task, which merges them in partition order; the driver receives every (id, class) pair once, not one
copy per partition: its memory is the final state (24 bytes a pair), whatever the partitions.
"""

from __future__ import annotations

from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence

import numpy as np
import pyarrow as pa
import scipy.sparse as sp

from sparkfs.spark.blocks import REDUCE_FANOUT, Summary, deserialize_summary, drain, is_stopped, serialize_summary

#: Largest number of distinct labels a keyed summary takes (ids x classes must fit an int64 key; more
#: labels than this is a continuous label or a task for another engine).
KEYED_CLASSES = 4096
#: Blocks folded at once within a partition (their entries wait in a list until then).
_FOLD_EVERY = 16
#: Per-class and per-label arrays: summed by label key, kept whole in every part.
_PER_LABEL = ("counts", "weights")
#: Scalars summed over the parts.
_TOTALS = ("null_labels", "extreme_rows")


def keyed_sums_of_block(matrix, class_index: np.ndarray, weights: np.ndarray, num_classes: int):
    """(ids, classes, sums, squares): the per-class weighted sums and sums of squares of every
    (feature id, class) pair the block stores, sorted by id then class."""
    csr = sp.csr_matrix(matrix)
    row_of_value = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
    weighted = weights[row_of_value] * csr.data
    pair = csr.indices.astype(np.int64) * num_classes + class_index[row_of_value]
    pairs, inverse = np.unique(pair, return_inverse=True)
    sums = np.bincount(inverse, weights=weighted, minlength=pairs.size)
    squares = np.bincount(inverse, weights=weighted * csr.data, minlength=pairs.size)
    classes = max(num_classes, 1)
    return pairs // classes, (pairs % classes).astype(np.int32), sums, squares


def keyed_extremes_of_block(matrix, kept: np.ndarray) -> Dict[str, np.ndarray]:
    """Per id stored in the ``kept`` rows: its smallest and largest stored value and how many rows store it."""
    csr = sp.csr_matrix(matrix)[kept] if not kept.all() else sp.csr_matrix(matrix)
    touched, inverse = np.unique(csr.indices, return_inverse=True)
    minimum, maximum = np.full(touched.size, np.inf), np.full(touched.size, -np.inf)
    np.minimum.at(minimum, inverse, csr.data)
    np.maximum.at(maximum, inverse, csr.data)
    return {"touched": touched.astype(np.int64), "stored_min": minimum, "stored_max": maximum,
            "stored": np.bincount(inverse, minlength=touched.size).astype(np.int64),
            "extreme_rows": np.array([int(kept.sum())])}


def merge_keyed(parts: Sequence[Summary]) -> Summary:
    """The keyed summaries ``parts`` merged, in their order (see the module notes)."""
    first = parts[0]
    sizes = {int(part["num_features"][0]) for part in parts}
    if len(sizes) > 1:
        raise ValueError(f"feature vectors of different sizes ({', '.join(str(s) for s in sorted(sizes))})")
    keys = first["keys"]
    for part in parts[1:]:
        keys = np.union1d(keys, part["keys"])
    positions = [np.searchsorted(keys, part["keys"]) for part in parts]
    merged = {"keys": keys, "kind": first["kind"], "num_features": first["num_features"]}
    for name in _PER_LABEL:
        total = np.zeros(len(keys), dtype=first[name].dtype)
        for part, position in zip(parts, positions):
            total[position] += part[name]
        merged[name] = total
    for name in _TOTALS:
        if name in first:
            merged[name] = sum(part[name] for part in parts)
    pair = np.concatenate([part["ids"] * len(keys) + position[part["classes"]]
                           for part, position in zip(parts, positions)])
    pairs, inverse = np.unique(pair, return_inverse=True)
    for name in ("sums", "squares"):
        values = np.concatenate([part[name] for part in parts])
        merged[name] = np.bincount(inverse, weights=values, minlength=pairs.size)
    merged["ids"], merged["classes"] = pairs // max(len(keys), 1), (pairs % max(len(keys), 1)).astype(np.int32)
    if "touched" in first:
        touched, inverse = np.unique(np.concatenate([part["touched"] for part in parts]), return_inverse=True)
        minimum, maximum = np.full(touched.size, np.inf), np.full(touched.size, -np.inf)
        np.minimum.at(minimum, inverse, np.concatenate([part["stored_min"] for part in parts]))
        np.maximum.at(maximum, inverse, np.concatenate([part["stored_max"] for part in parts]))
        stored = np.bincount(inverse, weights=np.concatenate([part["stored"] for part in parts]),
                             minlength=touched.size)
        merged.update(touched=touched, stored_min=minimum, stored_max=maximum, stored=stored.astype(np.int64))
    return merged


def join_ranges(parts: Sequence[Summary]) -> Summary:
    """The merged summaries of disjoint id ranges, in range order, as one: each (id, class) pair and
    each id occurs in one part, so :func:`merge_keyed` would add each value to nothing and sort what
    is sorted already; here the entries are concatenated: the same arrays, without the sort's
    temporaries, several times the final summary on the driver. Parts whose labels differ (a range
    no partition sent) are merged by :func:`merge_keyed`."""
    first = parts[0]
    if len(parts) == 1 or any(not np.array_equal(part["keys"], first["keys"]) for part in parts[1:]):
        return merge_keyed(parts)
    joined = {"keys": first["keys"], "kind": first["kind"], "num_features": first["num_features"]}
    for name in _PER_LABEL + _TOTALS:
        if name in first:
            joined[name] = sum(part[name] for part in parts)
    names = ("ids", "classes", "sums", "squares") + (("touched", "stored_min", "stored_max", "stored")
                                                      if "touched" in first else ())
    for name in names:
        joined[name] = np.concatenate([part[name] for part in parts])
    return joined


def id_ranges(summary: Summary, num_ranges: int) -> List[Summary]:
    """The summary cut into ``num_ranges`` parts by contiguous ranges of feature ids; the per-label
    counts and totals go with the first part only (the others carry zeros), so merging the parts
    gives the summary back."""
    num_features = int(summary["num_features"][0])
    bounds = -(-np.arange(num_ranges + 1, dtype=np.int64) * num_features // num_ranges)  # ceil(r p / R)
    cuts = np.searchsorted(summary["ids"], bounds)
    touched_cuts = np.searchsorted(summary["touched"], bounds) if "touched" in summary else None
    parts = []
    for r in range(num_ranges):
        part = {name: summary[name] for name in ("keys", "kind", "num_features")}
        for name in _PER_LABEL + _TOTALS:
            if name in summary:
                part[name] = summary[name] if r == 0 else np.zeros_like(summary[name])
        for name in ("ids", "classes", "sums", "squares"):
            part[name] = summary[name][cuts[r]:cuts[r + 1]]
        if touched_cuts is not None:
            for name in ("touched", "stored_min", "stored_max", "stored"):
                part[name] = summary[name][touched_cuts[r]:touched_cuts[r + 1]]
        parts.append(part)
    return parts


def _payload_batch(range_index: int, partition: int, summary: Summary) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array([range_index], pa.int64()), pa.array([partition], pa.int64()),
         pa.array([serialize_summary(summary)], pa.binary())], names=["range", "partition", "summary"])


def keyed_class_sums(df, columns: Sequence[str], summarize_block: Callable[[Dict[str, object]], Summary],
                     blocks_of_batch: Callable[[pa.RecordBatch], Iterable[Dict[str, object]]],
                     num_ranges: int = REDUCE_FANOUT) -> Optional[Summary]:
    """One pass over ``df``: keyed summaries of its blocks (``summarize_block``), merged within each
    partition, then by id range on the executors, then the ranges on the driver (module notes).
    None when ``df`` has no rows. A block summary that stops the pass
    (:func:`~sparkfs.spark.blocks.is_stopped`) goes to the driver as it is, and is what the pass returns."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    def summarize_partition(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        partition, folded, waiting = TaskContext.get().partitionId(), None, []
        for batch in batches:
            for block in blocks_of_batch(batch):
                waiting.append(summarize_block(block))
                if is_stopped(waiting[-1]):
                    yield _payload_batch(0, partition, waiting[-1])
                    drain(batches)
                    return
                if len(waiting) >= _FOLD_EVERY:
                    folded, waiting = merge_keyed(([folded] if folded else []) + waiting), []
        if waiting:
            folded = merge_keyed(([folded] if folded else []) + waiting)
        if folded is not None:
            for range_index, part in enumerate(id_ranges(folded, num_ranges)):
                yield _payload_batch(range_index, partition, part)

    def merge_range(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        by_range: Dict[int, list] = {}
        for batch in batches:
            for range_index, partition, payload in zip(*(batch.column(i).to_pylist() for i in range(3))):
                by_range.setdefault(range_index, []).append((partition, deserialize_summary(payload)))
        for range_index, parts in by_range.items():
            parts.sort(key=lambda pair: pair[0])
            stopped = [summary for _, summary in parts if is_stopped(summary)]
            merged = stopped[0] if stopped else merge_keyed([summary for _, summary in parts])
            yield _payload_batch(range_index, parts[0][0], merged)

    schema = StructType([StructField("range", LongType(), False), StructField("partition", LongType(), False),
                         StructField("summary", BinaryType(), False)])
    partials = df.select(*columns).mapInArrow(summarize_partition, schema)
    table = partials.repartition(num_ranges, F.col("range")).mapInArrow(merge_range, schema).toArrow()
    if not table.num_rows:
        return None
    ranges = sorted(zip(table.column("range").to_pylist(), table.column("summary").to_pylist()))
    del table
    parts = []
    while ranges:  # each payload freed once read
        parts.append(deserialize_summary(ranges.pop(0)[1]))
    stopped = [part for part in parts if is_stopped(part)]
    return stopped[0] if stopped else join_ranges(parts)


def dense_columns(summary: Summary, feature_ids: np.ndarray, name: str) -> np.ndarray:
    """(classes, len(feature_ids)) of the pairs' ``name`` (zeros where a pair has no entry);
    ``feature_ids`` sorted and holding every id of the summary."""
    table = np.zeros((len(summary["keys"]), feature_ids.size))
    table[summary["classes"], np.searchsorted(feature_ids, summary["ids"])] = summary[name]
    return table


def column_extremes_of(summary: Summary, feature_ids: np.ndarray):
    """(minima, maxima) over the rows of positive weight of the ``feature_ids`` columns, implicit zeros
    counted (+inf / -inf without any such row)."""
    rows = int(summary["extreme_rows"][0])
    if rows == 0:
        return np.full(feature_ids.size, np.inf), np.full(feature_ids.size, -np.inf)
    minimum, maximum = np.zeros(feature_ids.size), np.zeros(feature_ids.size)  # an id never stored: all zeros
    position = np.searchsorted(feature_ids, summary["touched"])
    implicit_zero = summary["stored"] < rows
    minimum[position] = np.where(implicit_zero, np.minimum(summary["stored_min"], 0.0), summary["stored_min"])
    maximum[position] = np.where(implicit_zero, np.maximum(summary["stored_max"], 0.0), summary["stored_max"])
    return minimum, maximum


def held_feature_ids(summary: Summary):
    """(ids, absent column): the sorted ids a keyed summary's moments are kept for, every id that
    occurs and, when some id never occurs, the smallest such id, which stands for all of them (their
    moments are all zeros), and its position (None when every id occurs)."""
    num_features = int(summary["num_features"][0])
    touched = np.unique(summary["ids"])
    if "touched" in summary:
        touched = np.union1d(touched, summary["touched"])
    if touched.size == num_features:
        return touched, None
    free = np.flatnonzero(touched != np.arange(touched.size))
    absent = int(free[0]) if free.size else int(touched.size)
    position = int(np.searchsorted(touched, absent))
    return np.insert(touched, position, absent), position


__all__ = ["KEYED_CLASSES", "column_extremes_of", "dense_columns", "held_feature_ids", "id_ranges", "join_ranges",
           "keyed_class_sums", "keyed_extremes_of_block", "keyed_sums_of_block", "merge_keyed"]
