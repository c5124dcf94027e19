"""The rows of ``sparkfs evaluate``'s folds on Spark: the input numbered by position, a fold's
training rows, the top columns of the rows on the driver, and the fold's rows for pyspark.ml.

Folds are drawn on the driver as row positions (:mod:`sparkfs.evaluation.cross_validation`);
these functions attach them to the rows by position (:func:`sparkfs.spark.row_values.row_values_attached`,
no join) and persist what they attach, since a position is read from the partition the column is
evaluated in; a fold's frames are ``with`` blocks, which unpersist them and free the shipment.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Dict, Iterator, Sequence, Tuple

import numpy as np

_IN_FOLD = "__sparkfs_in_fold"
_SLICED = "__sparkfs_sliced"
_POSITION = "__sparkfs_position"
_WITH_PROBES = "__sparkfs_with_probes"
_CLASS_CODE = "__sparkfs_class_code"
_CLASS_INDEX = "__sparkfs_class_index"


@dataclass(frozen=True)
class PositionedInput:
    """A persisted input with its labels by position and its partitions' first positions."""

    df: object
    features_col: str
    labels: np.ndarray
    offsets: Dict[int, int]

    def unpersist(self) -> None:
        self.df.unpersist()


def positioned_input(df, features_col: str, label_col: str, *, probes: int = 0, probe_mean: float = 0.0,
                     probe_variance: float = 1.0, seed: int = 0) -> PositionedInput:
    """``df`` numbered by position, with ``probes`` Gaussian probe features appended to its
    vectors (drawn per row position), persisted."""
    from pyspark import StorageLevel

    from sparkfs.spark.row_values import labels_by_position, with_probe_features

    labels, offsets = labels_by_position(df, label_col)
    frame = df
    if probes:
        frame = with_probe_features(frame, features_col, offsets, n_probes=probes, mean=probe_mean,
                                    variance=probe_variance, seed=seed, output_col=_WITH_PROBES)
        frame = frame.drop(features_col).withColumnRenamed(_WITH_PROBES, features_col)
    return PositionedInput(frame.persist(StorageLevel.MEMORY_AND_DISK), features_col, labels, offsets)


@contextmanager
def training_rows(source: PositionedInput, members: np.ndarray) -> Iterator:
    """A ``with`` block over the rows at positions ``members``, persisted; at its end they are
    unpersisted and the membership shipment destroyed."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from sparkfs.spark.row_values import row_values_attached

    n_rows = source.labels.size
    member = np.zeros(n_rows)
    member[members] = 1.0
    with row_values_attached(source.df, np.arange(n_rows), member, _IN_FOLD, partition_offsets=source.offsets,
                             what="fold membership") as marked:
        rows = marked.where(F.col(_IN_FOLD) > 0).drop(_IN_FOLD).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            yield rows
        finally:
            rows.unpersist()


def columns_by_position(source: PositionedInput, columns: Sequence[int]) -> np.ndarray:
    """The dense n x len(columns) matrix of those columns of every row, in position order."""
    from pyspark.ml.feature import VectorSlicer

    from sparkfs.spark.blocks import arrow_vectors_to_matrix
    from sparkfs.spark.row_values import position_column

    sliced = VectorSlicer(inputCol=source.features_col, outputCol=_SLICED,
                          indices=[int(c) for c in columns]).transform(source.df)
    table = sliced.select(_SLICED, position_column(source.offsets).alias(_POSITION)).toArrow()
    matrix = arrow_vectors_to_matrix(table.column(_SLICED), len(columns), dense=True)
    order = np.argsort(table.column(_POSITION).to_numpy(), kind="stable")
    return matrix[order]


@contextmanager
def _fold_frame(source: PositionedInput, members: np.ndarray, columns: Sequence[int], label_values: np.ndarray):
    """A ``with`` block over the rows ``members`` of ``source``: ``(every row, the members)`` with
    the sorted ``columns`` of the features, the class index and the position (attached before any
    filter, then persisted); unpersisted, and the codes' shipment destroyed, at its end."""
    from pyspark import StorageLevel
    from pyspark.ml.feature import VectorSlicer
    from pyspark.sql import functions as F

    from sparkfs.spark.row_values import position_column, row_values_attached

    frame_labels = source.labels
    code = np.zeros(frame_labels.size)
    code[members] = np.searchsorted(label_values, frame_labels[members]) + 1.0
    with row_values_attached(source.df, np.arange(frame_labels.size), code, _CLASS_CODE,
                             partition_offsets=source.offsets, what="fold membership") as coded:
        sliced = VectorSlicer(inputCol=source.features_col, outputCol=_SLICED,
                              indices=[int(c) for c in columns]).transform(coded)
        kept = sliced.select(_SLICED, (F.col(_CLASS_CODE) - 1.0).alias(_CLASS_INDEX),
                             position_column(source.offsets).alias(_POSITION))
        kept = kept.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            yield kept, kept.where(F.col(_CLASS_INDEX) >= 0)
        finally:
            kept.unpersist()


def fold_predictions_on_spark(train_source: PositionedInput, train_members: np.ndarray,
                              test_source: PositionedInput, test_members: np.ndarray, columns: Sequence[int],
                              subsets, classifiers, label_values: np.ndarray,
                              seed: int) -> Dict[Tuple, Tuple[np.ndarray, np.ndarray]]:
    """pyspark.ml classifiers trained on the fold's training rows, predicting its test rows:
    ``{key: (test positions, predicted class indices)}`` (:func:`sparkfs.spark.classifiers.fold_predictions`)."""
    from sparkfs.spark.classifiers import fold_predictions

    with _fold_frame(train_source, train_members, columns, label_values) as (_, train), \
            _fold_frame(test_source, test_members, columns, label_values) as (_, test_rows):
        return fold_predictions(train, test_rows, features_col=_SLICED, label_col=_CLASS_INDEX,
                                key_col=_POSITION, subsets=subsets, classifiers=classifiers,
                                num_classes=label_values.size, seed=seed)
