"""The ``"float"`` statistics engine: per-class counts, weighted column sums and sums of squares in
one ``mapInArrow`` pass, summed in float64 with NumPy.

Why a third engine: Spark's ``groupBy(label).agg(Summarizer)`` (``"jvm"``) keeps three dense
arrays of p doubles per class in every task and shuffles them, which on a term matrix (S: 100,000
rows, 50,000 terms, 20 classes) took 3 bare ``Summarizer`` passes; the exact sums (``"arrow"``)
carry integer limbs. Here each Arrow block becomes a CSR (or dense) matrix, and its per-class sums
are one ``bincount`` over the stored values (one BLAS product for dense rows): the pass costs the
Arrow hand-over plus a scan of the non-zeros. The labels are discovered in the same pass, so a
univariate fit needs no label-count job before it. ``statsEngine="auto"`` takes it for sparse
vectors only: dense rows cost more to hand over than the Summarizer's buffers (LFS on a cached
250,000 x 631 dense table: 4.2 s here, 1.6 s with the Summarizer).

Summation order: within a block, NumPy's; blocks and partitions are merged in partition order
(:func:`sparkfs.spark.blocks.aggregate_partitions`). So a partitioning gives the same bits every
run, and another partitioning agrees to rounding (as ``"jvm"``). ``deterministic=true`` takes the
exact engine instead.

Each partition's summary (2 x classes x features doubles) reaches the driver, up to
:data:`~sparkfs.spark.blocks.DRIVER_MERGE_PARTITIONS` of them (above, a two-level merge on the
executors sends 8). :data:`FOLDED_CLASS_BYTES` caps one summary at 32 MiB (20 classes x 100,000
features; 16 of them stay under half of Spark's default ``spark.driver.maxResultSize``): a label
with more distinct values than that allows (many classes on wide rows, or a continuous label taken
for classes) stops the pass before the per-class arrays are built; the caller then counts the labels
first (its checks name a continuous label) and takes Spark's Summarizer, which keeps the per-class
buffers on the executors. A pass stops without a failed task: the summary that says so
(:func:`stop_summary`) travels and merges as any other (:func:`sparkfs.spark.blocks.is_stopped`), the
driver reads it and raises :class:`TooManyClassesError`, so Spark logs no error for a run that succeeds.

Wide vectors: when even two classes' dense sums pass that cap (over 1,048,576 features: a hashed
vocabulary), the summaries are keyed instead (:mod:`sparkfs.spark.keyed_moments`): one entry per
(feature id, class) pair that occurs, merged by id range on the executors, so an id that never
occurs takes no memory anywhere. The moments then come for the ids that occur and one id that
stands for all the others (:attr:`FloatMoments.feature_ids`). Up to :data:`KEYED_CLASSES` labels;
more stop the pass as above.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

from sparkfs.core.missing_values import class_missing_values
from sparkfs.errors import InvalidInputError
from sparkfs.spark.blocks import (
    SPARSE_TYPE,
    STOPPED,
    Summary,
    aggregate_partitions,
    arrow_blocks,
    batch_to_block,
    is_stopped,
)
from sparkfs.spark.keyed_moments import (
    KEYED_CLASSES,
    column_extremes_of,
    dense_columns,
    held_feature_ids,
    keyed_class_sums,
    keyed_extremes_of_block,
    keyed_sums_of_block,
)

#: Largest per-class sums and squares a summary may hold: 2 x classes x features x 8 bytes.
FOLDED_CLASS_BYTES = 32 * 2**20
#: What a pass stopped for too many distinct labels says (see the module notes).
TOO_MANY_CLASSES = "sparkfs-float-moments: too many distinct labels for per-class sums"
#: Why a pass stopped (the first value of its stop summary): too many labels for per-class sums, or
#: (a dense pass) vectors too wide for dense sums, when the keyed pass runs instead.
STOP_CLASSES, STOP_WIDE = 1, 2

#: How the label values are kept in a summary (numeric arrays only cross the wire).
_FLOAT, _INT, _BOOL, _STRING = 0, 1, 2, 3


def _label_keys(labels: np.ndarray):
    """(kind, null mask, keys of the non-null rows): numbers and booleans as themselves, anything
    else as its string."""
    if labels.dtype.kind == "f":
        return _FLOAT, np.isnan(labels), labels
    if labels.dtype.kind in "iu":
        return _INT, np.zeros(len(labels), dtype=bool), labels.astype(np.int64)
    if labels.dtype.kind == "b":
        return _BOOL, np.zeros(len(labels), dtype=bool), labels.astype(np.int64)
    null = np.array([value is None for value in labels], dtype=bool)
    present = [value for value in labels if value is not None]
    if present and all(isinstance(value, (bool, np.bool_)) for value in present):
        keys = np.array([int(bool(value)) if value is not None else 0 for value in labels], dtype=np.int64)
        return _BOOL, null, keys
    return _STRING, null, np.array(["" if value is None else str(value) for value in labels], dtype=str)


def class_sums_of_block(matrix, class_index: np.ndarray, weights: np.ndarray, num_classes: int):
    """(sums, squares): the per-class weighted column sums and sums of squares, (C, p) each."""
    num_features = matrix.shape[1]
    if sp.issparse(matrix):
        csr = sp.csr_matrix(matrix)
        row_of_value = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
        slot = class_index[row_of_value] * num_features + csr.indices
        weighted = weights[row_of_value] * csr.data
        size = num_classes * num_features
        sums = np.bincount(slot, weights=weighted, minlength=size)
        squares = np.bincount(slot, weights=weighted * csr.data, minlength=size)
        return sums.reshape(num_classes, num_features), squares.reshape(num_classes, num_features)
    dense = np.asarray(matrix, dtype=np.float64)
    indicator = np.zeros((num_classes, dense.shape[0]))
    indicator[class_index, np.arange(dense.shape[0])] = weights
    return indicator @ dense, indicator @ (dense * dense)


def column_extremes_of_block(matrix, kept: np.ndarray):
    """(minima, maxima) of the ``kept`` rows' columns (+inf / -inf without any), implicit zeros counted;
    NaN values are passed over (a column of NaN only has +inf / -inf)."""
    num_features = matrix.shape[1]
    if not kept.any():
        return np.full(num_features, np.inf), np.full(num_features, -np.inf)
    rows = matrix[kept] if not kept.all() else matrix
    if not sp.issparse(rows):
        minima, maxima = np.fmin.reduce(rows, axis=0), np.fmax.reduce(rows, axis=0)
        return np.where(np.isnan(minima), np.inf, minima), np.where(np.isnan(maxima), -np.inf, maxima)
    csr = sp.csr_matrix(rows)   # a vector's indices are strictly increasing: no duplicate entries
    minima, maxima = np.full(num_features, np.inf), np.full(num_features, -np.inf)
    np.fmin.at(minima, csr.indices, csr.data)   # a quarter of SciPy's min + max (a CSC copy each)
    np.fmax.at(maxima, csr.indices, csr.data)
    implicit_zero = np.bincount(csr.indices, minlength=num_features) < csr.shape[0]
    return (np.where(implicit_zero, np.minimum(minima, 0.0), minima),
            np.where(implicit_zero, np.maximum(maxima, 0.0), maxima))


def _summarize(features_col, label_col, weight_col, extremes: bool, class_bytes: int, keyed: bool = False,
               pairwise: bool = False):
    def summarize(block):
        matrix, labels = block[features_col], block[label_col]
        weights = block[weight_col].astype(np.float64) if weight_col else np.ones(len(labels))
        if not (np.isfinite(weights).all() and (weights >= 0).all()):
            raise ValueError("bad instance weight")  # the driver's diagnosis names the rows
        kind, null, keys = _label_keys(labels)
        keys, index = np.unique(keys[~null], return_inverse=True)
        kept = ~null
        rows = matrix[kept] if null.any() else matrix
        summary = {"keys": keys, "kind": np.array([kind]), "null_labels": np.array([int(null.sum())]),
                   "counts": np.bincount(index, minlength=len(keys)).astype(np.int64),
                   "weights": np.bincount(index, weights=weights[kept], minlength=len(keys))}
        if keyed:
            if len(keys) > KEYED_CLASSES:
                return stop_summary(STOP_CLASSES, len(keys), matrix.shape[1])
            ids, classes, sums, squares = keyed_sums_of_block(rows, index, weights[kept], len(keys))
            summary.update(num_features=np.array([matrix.shape[1]]), ids=ids, classes=classes, sums=sums,
                           squares=squares)
            if extremes:
                summary.update(keyed_extremes_of_block(matrix, kept & (weights > 0)))
            return summary
        stopped = _stop_for_size(len(keys), matrix.shape[1], class_bytes, pairwise)
        if stopped is not None:
            return stopped
        if pairwise:  # the sums over the present values, and the per-class weights and rows of the NaN
            rows, summary["missing"], summary["missing_rows"] = class_missing_values(rows, index, weights[kept],
                                                                                      len(keys))
        summary["sums"], summary["squares"] = class_sums_of_block(rows, index, weights[kept], len(keys))
        if extremes:
            summary["min"], summary["max"] = column_extremes_of_block(matrix, kept & (weights > 0))
        return summary
    return summarize


def _blocks_of_their_size(batch):
    """The blocks of a batch whose vector size is not known beforehand: the first row's (every row is
    checked against it; blocks of different sizes are refused by the merge)."""
    if not batch.num_rows:
        return
    vectors = batch.column(0)
    first = vectors[0].as_py() if vectors[0].is_valid else None
    if first is None:
        size = 0  # a null vector: the conversion names it
    else:
        size = first["size"] if first["type"] == SPARSE_TYPE else len(first["values"])
    yield batch_to_block(batch, int(size))


def is_wide(num_features: int, class_bytes: int) -> bool:
    """Whether even two classes' dense sums of ``num_features`` pass ``class_bytes``: then keyed summaries."""
    return 32 * num_features > class_bytes


def stop_summary(reason: int, num_labels: int, num_features: int) -> Summary:
    """The summary of a pass that stops: why (:data:`STOP_CLASSES`, :data:`STOP_WIDE`), with how many
    labels and features it met."""
    return {STOPPED: np.array([reason, num_labels, num_features], dtype=np.int64)}


def _stop_for_size(num_classes: int, num_features: int, class_bytes: int,
                   pairwise: bool = False) -> Optional[Summary]:
    """The stop summary when dense per-class sums of this size pass ``class_bytes`` (2 arrays of classes x
    features doubles, 4 with the missing-value counts of ``missing='pairwise'``), else None."""
    if is_wide(num_features, class_bytes):
        return stop_summary(STOP_WIDE, num_classes, num_features)
    if 8 * (4 if pairwise else 2) * num_classes * num_features > class_bytes:
        return stop_summary(STOP_CLASSES, num_classes, num_features)
    return None


def _merge(left, right, *, class_bytes: int):
    if left["sums"].shape[1] != right["sums"].shape[1]:
        raise ValueError(f"feature vectors of different sizes ({left['sums'].shape[1]} and {right['sums'].shape[1]})")
    keys = np.union1d(left["keys"], right["keys"])
    stopped = _stop_for_size(len(keys), left["sums"].shape[1], class_bytes, "missing" in left)
    if stopped is not None:
        return stopped
    merged = {"keys": keys, "kind": left["kind"], "null_labels": left["null_labels"] + right["null_labels"]}
    for name in ("counts", "weights", "sums", "squares") + (("missing", "missing_rows") if "missing" in left else ()):
        total = np.zeros((len(keys),) + left[name].shape[1:], dtype=left[name].dtype)
        for part in (left, right):
            total[np.searchsorted(keys, part["keys"])] += part[name]
        merged[name] = total
    if "min" in left:
        merged["min"], merged["max"] = np.minimum(left["min"], right["min"]), np.maximum(left["max"], right["max"])
    return merged


def _label_value(kind: int, key):
    return {_FLOAT: float, _INT: int, _BOOL: bool, _STRING: str}[kind](key)


class FloatMoments(NamedTuple):
    """What :func:`moments_float` returns: ``per_label``, label -> (rows, weight sum, column sums,
    column sums of squares, column minima, column maxima), and ``feature_ids``: None when the columns
    are every feature in order, else the sorted ids they hold (keyed summaries: the ids that occur and
    one that never does, column ``absent_column``, whose moments every other absent id shares);
    ``num_features``: the vector size; ``missing``: with ``pairwise``, label -> (the weight sums, the row
    counts) of its NaN values per feature, whose moments leave them out."""

    per_label: dict
    feature_ids: Optional[np.ndarray] = None
    absent_column: Optional[int] = None
    num_features: Optional[int] = None
    missing: Optional[dict] = None


def moments_float(df, features_col: str, label_col: str, weight_col: Optional[str], num_features: Optional[int],
                  extremes: bool = True, pairwise: bool = False) -> FloatMoments:
    """label -> (rows, weight sum, column sums, column sums of squares, column minima, maxima): the
    per-label table :func:`sparkfs.spark.stats.class_moments` reads (minima and maxima are over all
    rows, the same for every label, or None without ``extremes``; a null label is the key None),
    and the feature ids of its columns (:class:`FloatMoments`). ``num_features`` None: each block's
    vectors are sized by its first row (no job to read one); a dense pass that meets vectors too
    wide for dense sums stops at its first block and the keyed pass runs instead. ``pairwise``: NaN
    values are left out of the sums, and their weights and rows per class and feature are counted
    (:attr:`FloatMoments.missing`); dense summaries only (vectors too wide for them are refused)."""
    columns = [features_col, label_col] + ([weight_col] if weight_col else [])
    class_bytes = FOLDED_CLASS_BYTES
    blocks_of_batch = None if num_features is not None else _blocks_of_their_size
    if num_features is not None and is_wide(num_features, class_bytes):
        _refuse_wide_pairwise(pairwise, num_features)
        return _keyed_moments(df, columns, features_col, label_col, weight_col, num_features, extremes)
    summarize = _summarize(features_col, label_col, weight_col, extremes, class_bytes, pairwise=pairwise)
    summary = aggregate_partitions(df, columns, summarize, partial(_merge, class_bytes=class_bytes),
                                   num_features=num_features or 0, blocks_of_batch=blocks_of_batch)
    if is_stopped(summary) and summary[STOPPED][0] == STOP_WIDE:
        _refuse_wide_pairwise(pairwise, num_features)
        return _keyed_moments(df, columns, features_col, label_col, weight_col, num_features, extremes)
    _raise_if_stopped(summary)
    if summary is None:
        return FloatMoments({})
    num_features = summary["sums"].shape[1]
    minimum, maximum = (summary["min"], summary["max"]) if extremes else (None, None)
    per_label = _per_label(summary, summary["sums"], summary["squares"], minimum, maximum, num_features)
    missing = None
    if pairwise:
        kind = int(summary["kind"][0])
        missing = {_label_value(kind, key): (summary["missing"][i], summary["missing_rows"][i])
                   for i, key in enumerate(summary["keys"])}
    return FloatMoments(per_label, None, None, num_features, missing)


def _refuse_wide_pairwise(pairwise: bool, num_features: Optional[int]) -> None:
    if pairwise:
        raise InvalidInputError(f"missing='pairwise' keeps dense per-class counts of the missing values, and vectors "
                                f"of {num_features or 'these'} features are too wide for them (keyed sums); use "
                                "missing='drop-rows' or 'zero'")


def _per_label(summary, sums, squares, minimum, maximum, width: int) -> dict:
    kind = int(summary["kind"][0])
    per_label = {}
    for i, key in enumerate(summary["keys"]):
        per_label[_label_value(kind, key)] = (int(summary["counts"][i]), float(summary["weights"][i]),
                                              sums[i], squares[i], minimum, maximum)
    if summary["null_labels"][0]:
        per_label[None] = (int(summary["null_labels"][0]), 0.0, np.zeros(width), np.zeros(width), minimum, maximum)
    return per_label


def _keyed_moments(df, columns, features_col, label_col, weight_col, num_features: Optional[int],
                   extremes: bool) -> FloatMoments:
    """The keyed pass (:mod:`sparkfs.spark.keyed_moments`) and its moments over the ids that occur
    and one that stands for the others."""
    summarize = _summarize(features_col, label_col, weight_col, extremes, FOLDED_CLASS_BYTES, keyed=True)
    blocks_of_batch = arrow_blocks(num_features, dense=False) if num_features is not None else _blocks_of_their_size
    summary = keyed_class_sums(df, columns, summarize, blocks_of_batch)
    _raise_if_stopped(summary)
    if summary is None:
        return FloatMoments({})
    feature_ids, absent_column = held_feature_ids(summary)
    sums, squares = dense_columns(summary, feature_ids, "sums"), dense_columns(summary, feature_ids, "squares")
    minimum, maximum = column_extremes_of(summary, feature_ids) if extremes else (None, None)
    width, num_features = feature_ids.size, int(summary["num_features"][0])
    if absent_column is None:
        feature_ids = None  # every feature occurs: the columns are all of them, in order
    return FloatMoments(_per_label(summary, sums, squares, minimum, maximum, width), feature_ids, absent_column,
                        num_features)


class TooManyClassesError(RuntimeError):
    """The float pass stopped for too many distinct labels: count the labels first (the caller's
    label checks then name a continuous label) and use an engine that takes the classes as given."""


def _raise_if_stopped(summary: Optional[Summary]) -> None:
    """:class:`TooManyClassesError` for a pass stopped for too many labels (what the first stop met)."""
    if is_stopped(summary):
        _, num_labels, num_features = (int(value) for value in summary[STOPPED])
        limit = (f"more than {KEYED_CLASSES}" if num_labels > KEYED_CLASSES
                 else f"x {num_features} features above {FOLDED_CLASS_BYTES // 2**20} MiB of sums")
        raise TooManyClassesError(f"{TOO_MANY_CLASSES} ({num_labels} labels {limit})")


__all__ = ["FOLDED_CLASS_BYTES", "STOP_CLASSES", "STOP_WIDE", "TOO_MANY_CLASSES", "FloatMoments",
           "TooManyClassesError", "class_sums_of_block", "column_extremes_of_block", "is_wide",
           "moments_float", "stop_summary"]
