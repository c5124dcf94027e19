"""Rows on the driver and the pure helpers of :mod:`sparkfs.spark.rows`: blocks, query sets,
scaling of matrices, row-id bookkeeping, the summaries of the sample pass (no Spark calls here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, NamedTuple, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from sparkfs.core.scaling import scale_columns, unit_length_rows
from sparkfs.errors import InvalidInputError

#: monotonically_increasing_id() = (partition index << 33) + position in the partition.
PARTITION_SHIFT = 33


class Block(NamedTuple):
    """One Arrow batch of a partition, as the pair kernels see it (features already scaled)."""

    matrix: Any  # ndarray or csr_matrix (n_block, p)
    ids: np.ndarray  # int64 (n_block,)
    labels: np.ndarray  # int64 (n_block,): class index, 0 without labels; float64: a continuous target
    weights: Optional[np.ndarray]  # float64 (n_block,) or None


@dataclass
class RowSet:
    """Rows on the driver (a query set): raw (unscaled) features, sorted by row id."""

    matrix: Any
    ids: np.ndarray
    labels: np.ndarray
    weights: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def take(self, positions) -> "RowSet":
        return RowSet(self.matrix[positions], self.ids[positions], self.labels[positions],
                      None if self.weights is None else self.weights[positions])

    def bytes_per_row(self) -> float:
        """Serialised bytes per row of the matrix (values and, for CSR, indices)."""
        if sp.issparse(self.matrix):
            return 12.0 * self.matrix.nnz / max(len(self), 1) + 8
        return 8.0 * self.matrix.shape[1]


# --------------------------------------------------------------------------------------------
# Pure helpers
# --------------------------------------------------------------------------------------------


def stack_rows(first, second):
    if sp.issparse(first) or sp.issparse(second):
        return sp.vstack([sp.csr_matrix(first), sp.csr_matrix(second)], format="csr")
    return np.vstack([first, second])


class PassUnits(NamedTuple):
    """The units a pass sees the rows in: each feature multiplied by ``inverse_scale`` (None: as
    stored), then, with ``unit_rows``, each row divided by its Euclidean norm (the cosine metric)."""

    inverse_scale: Optional[np.ndarray] = None
    unit_rows: bool = False

    def apply(self, matrix):
        matrix = scale_columns(matrix, self.inverse_scale)
        return unit_length_rows(matrix) if self.unit_rows else matrix


def check_finite(matrix) -> None:
    values = matrix.data if sp.issparse(matrix) else matrix
    if not np.all(np.isfinite(values)):
        raise InvalidInputError("feature vectors contain NaN or infinite values")


def label_values(labels, targets: bool) -> np.ndarray:
    """A block's labels: class indices (int64), or with ``targets`` a continuous target (float64)."""
    values = np.asarray(labels, dtype=np.float64)
    return values if targets else values.astype(np.int64)


def class_counts_of(per_label: Dict[Any, int], num_classes: int) -> np.ndarray:
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


def offsets_of_partitions(rows_per_partition: Dict[int, int]) -> Dict[int, int]:
    """First positional row id of each (non-empty) input partition."""
    offsets, running = {}, 0
    for partition_index in sorted(rows_per_partition):
        offsets[partition_index] = running
        running += rows_per_partition[partition_index]
    return offsets


def _positional_ids(monotonic_ids: np.ndarray, offsets: Dict[int, int]) -> np.ndarray:
    """Driver-side twin of the JVM expression in :meth:`Rows.prepared`."""
    partitions = monotonic_ids >> PARTITION_SHIFT
    partition_offset = (np.array([offsets[int(q)] for q in partitions], dtype=np.int64) if partitions.size
                        else partitions)
    return partition_offset + (monotonic_ids & ((1 << PARTITION_SHIFT) - 1))


def check_user_ids(rows: int, non_null: int, distinct: int) -> None:
    if non_null != rows:
        raise InvalidInputError(f"{rows - non_null} row(s) have a null row id")
    if distinct != rows:
        raise InvalidInputError(f"row ids are not unique: {rows} rows but {distinct} distinct ids")


def rows_of_table(table, features: str, label: str, weight: Optional[str], id_column: str, *, num_features: int,
                  num_classes: int, user_ids: bool, offsets: Optional[Dict[int, int]], targets: bool = False
                  ) -> Tuple[RowSet, np.ndarray, Optional[Dict[int, int]]]:
    """Every row of a collected Arrow ``table`` as a :class:`RowSet` sorted by id, with the class
    counts (a continuous target, ``targets``: the row count) and the partition offsets (positional
    ids: computed here when ``offsets`` is None)."""
    from sparkfs.spark.blocks import arrow_vectors_to_matrix

    matrix = arrow_vectors_to_matrix(table.column(features), num_features)
    label_column = table.column(label)
    if label_column.null_count:
        raise InvalidInputError(f"{label_column.null_count} row(s) have a null label")
    raw_labels = label_column.to_numpy().astype(np.float64)
    if targets:
        class_counts = np.array([raw_labels.size], dtype=np.int64)
    else:
        values, counts = np.unique(raw_labels, return_counts=True)
        class_counts = class_counts_of({float(v): int(c) for v, c in zip(values, counts)}, num_classes)
    id_values = table.column(id_column)
    if user_ids:
        ids = id_values.to_numpy(zero_copy_only=False)
        non_null = len(id_values) - id_values.null_count
        ids = ids.astype(np.int64) if non_null == len(id_values) else ids
        check_user_ids(len(id_values), non_null, np.unique(ids).size if non_null == len(id_values) else non_null)
    else:
        monotonic = id_values.to_numpy().astype(np.int64)
        if offsets is None:
            partitions, rows_per_partition = np.unique(monotonic >> PARTITION_SHIFT, return_counts=True)
            offsets = offsets_of_partitions({int(q): int(c) for q, c in zip(partitions, rows_per_partition)})
        ids = _positional_ids(monotonic, offsets)
    weights = None if weight is None else table.column(weight).to_numpy(zero_copy_only=False).astype(np.float64)
    check_finite(matrix)
    order = np.argsort(ids, kind="stable")
    rows = RowSet(matrix, ids, label_values(raw_labels, targets), weights)
    return (rows if np.array_equal(order, np.arange(order.size)) else rows.take(order)), class_counts, offsets


# --------------------------------------------------------------------------------------------
# The sample pass (Rows.sample): the rows with the smallest (content key, id), merged
# --------------------------------------------------------------------------------------------


def _sample_fields(summary) -> tuple:
    return ("keys", "ids", "labels") + (("weights",) if "weights" in summary else ())


def _smallest_keys(summary: dict, size: int, num_features: int) -> dict:
    """``summary`` cut to its ``size`` rows of smallest (key, id)."""
    from sparkfs.core.sampling import smallest_key_positions
    from sparkfs.spark.blocks import matrix_from_summary, matrix_to_summary

    if summary["keys"].size <= size:
        return summary
    keep = np.sort(smallest_key_positions(summary["keys"], summary["ids"], size))
    result = {name: summary[name][keep] for name in _sample_fields(summary)}
    result.update(matrix_to_summary(matrix_from_summary(summary, "rows_", num_features)[keep], "rows_"))
    return result


def sample_summary(matrix, ids, labels, weights: Optional[np.ndarray], size: int, seed: int) -> dict:
    """A block's candidates for a ``size``-row sample: its rows of smallest seeded content key
    (:func:`~sparkfs.core.sampling.content_sample_keys`), ties to the smaller id."""
    from sparkfs.core.sampling import content_sample_keys
    from sparkfs.spark.blocks import matrix_to_summary

    labels = np.asarray(labels, dtype=np.float64)
    summary = {"keys": content_sample_keys(matrix, labels, weights, seed), "ids": np.asarray(ids, dtype=np.int64),
               "labels": labels}
    if weights is not None:
        summary["weights"] = weights
    summary.update(matrix_to_summary(matrix, "rows_"))
    return _smallest_keys(summary, size, matrix.shape[1])


def merged_sample_summaries(left: dict, right: dict, size: int, num_features: int) -> dict:
    """The ``size`` candidates of smallest (key, id) of two :func:`sample_summary` results."""
    from sparkfs.spark.blocks import matrix_from_summary, matrix_to_summary

    matrix = stack_rows(matrix_from_summary(left, "rows_", num_features),
                        matrix_from_summary(right, "rows_", num_features))
    summary = {name: np.concatenate([left[name], right[name]]) for name in _sample_fields(left)}
    summary.update(matrix_to_summary(matrix, "rows_"))
    return _smallest_keys(summary, size, num_features)


def sample_key_summary(matrix, ids, labels, weights: Optional[np.ndarray], size: int, seed: int) -> dict:
    """A block's ``size`` candidates of smallest (key, id) without their rows: the first pass of
    a sample whose rows would be too large to ship from every block (:meth:`DriverRows.sample`)."""
    from sparkfs.core.sampling import content_sample_keys, smallest_key_positions

    keys = content_sample_keys(matrix, np.asarray(labels, dtype=np.float64), weights, seed)
    ids = np.asarray(ids, dtype=np.int64)
    keep = smallest_key_positions(keys, ids, size) if keys.size > size else slice(None)
    return {"keys": keys[keep], "ids": ids[keep]}


def merged_key_summaries(left: dict, right: dict, size: int) -> dict:
    """The ``size`` candidates of smallest (key, id) of two :func:`sample_key_summary` results."""
    from sparkfs.core.sampling import smallest_key_positions

    keys, ids = np.concatenate([left["keys"], right["keys"]]), np.concatenate([left["ids"], right["ids"]])
    keep = smallest_key_positions(keys, ids, size) if keys.size > size else slice(None)
    return {"keys": keys[keep], "ids": ids[keep]}


def sample_of_summary(summary: dict, num_features: int, targets: bool = False) -> RowSet:
    """The merged candidates as a :class:`RowSet` sorted by id (checked finite)."""
    from sparkfs.spark.blocks import matrix_from_summary

    matrix = matrix_from_summary(summary, "rows_", num_features)
    check_finite(matrix)
    ids = summary["ids"].astype(np.int64)
    rows = RowSet(matrix, ids, label_values(summary["labels"], targets), summary.get("weights"))
    return rows.take(np.argsort(ids, kind="stable"))
