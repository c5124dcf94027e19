"""Missing values: count them in one pass, and drop their rows or set them to zero, sparse vectors kept sparse.

A fit refuses every NaN by default (``missing='refuse'``): the statistics pass runs as it always did and the
NaN is named only on its error path (:func:`sparkfs.spark.stats.diagnose_input`), so that policy adds no job
here. The two other policies:

* ``'drop-rows'``: a row with a NaN feature value, a null or NaN label or a null feature vector is left out;
* ``'zero'``: every NaN feature value becomes 0 (a NaN stored in a sparse vector is removed from its indices,
  which is the same vector); a null or NaN label and a null vector are still refused, by name and count,
  since no value can stand for them.
* ``'pairwise'``: the rows stay as they are, and a method with a pairwise-deletion rule (the univariate
  filters of the class moments) computes each feature's statistic from the rows where that feature is
  present; a null or NaN label and a null vector are refused as under 'zero'. Here it takes only the
  counting pass and its refusals; the statistics pass leaves the NaN values out
  (:func:`sparkfs.spark.stats.class_moments`).

Infinite values are not missing values: every policy refuses them (:func:`missing_counts` names them).

Cost. One extra pass (:func:`missing_counts`): ``mapInArrow`` reads the vectors' stored values in Arrow
batches (no row is densified: a sparse vector's NaN is found among its stored values) and returns one row of
counts per batch. It runs before the fit so that what cannot be fitted (infinite values, labels under
'zero', no row left) is refused before any heavy pass, and so that the summary's counts are exact: counting
inside the fit's own passes would need an accumulator or ``observe`` on a frame the fit reads several times.
The cleaning itself (:func:`without_missing`) is a lazy ``mapInArrow`` over the same columns that the fit's
passes read through; a batch without NaN passes through untouched. DataFrame API only (Spark Connect runs it).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Dict, Optional, Tuple

import numpy as np

from sparkfs.errors import InvalidInputError

#: The values of the selectors' ``missing`` Param and of ``--missing``: ``'refuse'`` is the default.
MISSING_POLICIES = ("refuse", "drop-rows", "zero", "pairwise")
#: The policies that change the rows before the fit (the others leave them to the fit's statistics pass).
CLEANING_POLICIES = ("drop-rows", "zero")

#: The counts of one pass, in the order of :class:`MissingCounts`' fields.
_COUNT_FIELDS = ("rows", "null_vectors", "missing_labels", "nan_rows", "nan_values", "infinite_rows",
                 "rows_to_drop")


@dataclass(frozen=True)
class MissingCounts:
    """What :func:`missing_counts` found: rows read, rows with a null feature vector, with a null or NaN
    label, with at least one NaN feature value (and the NaN values), with an infinite value, and the rows
    'drop-rows' leaves out (any of the first three)."""

    rows: int
    null_vectors: int
    missing_labels: int
    nan_rows: int
    nan_values: int
    infinite_rows: int
    rows_to_drop: int


@dataclass(frozen=True)
class _VectorValues:
    """One batch's vector column as flat NumPy arrays: which rows are null or dense, each stored value
    and the row it belongs to."""

    null: np.ndarray  # (n,) bool
    dense: np.ndarray  # (n,) bool
    values: np.ndarray  # (stored values,) float64, every non-null row's in row order
    rows: np.ndarray  # (stored values,) the row of each value


def _vector_values(column) -> _VectorValues:
    import pyarrow.compute as pc

    from sparkfs.spark.blocks import DENSE_TYPE

    kinds, _, _, values = column.flatten()
    null = column.is_null().to_numpy(zero_copy_only=False)
    dense = pc.fill_null(pc.equal(kinds, DENSE_TYPE), False).to_numpy(zero_copy_only=False)
    flat = pc.list_flatten(values).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    rows = pc.list_parent_indices(values).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return _VectorValues(null=null, dense=dense, values=flat, rows=rows)


def _missing_labels(batch, label_col: Optional[str]) -> np.ndarray:
    """(n,) bool: a null label, or a NaN one in a float column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if label_col is None:
        return np.zeros(batch.num_rows, dtype=bool)
    labels = batch.column(label_col)
    missing = labels.is_null()
    if pa.types.is_floating(labels.type):
        missing = pc.or_(missing, pc.fill_null(pc.is_nan(labels), False))
    return missing.to_numpy(zero_copy_only=False)


def quoted(column: str) -> str:
    """A column name as a Spark expression reads it literally (dots, spaces, backticks)."""
    return "`" + column.replace("`", "``") + "`"


def _rows_with(mask: np.ndarray, rows: np.ndarray, n_rows: int) -> np.ndarray:
    """(n_rows,) bool: the rows holding at least one value where ``mask`` is true."""
    return np.bincount(rows[mask], minlength=n_rows) > 0


def _to_drop(batch, label_col: Optional[str], vectors: _VectorValues) -> np.ndarray:
    nan_rows = _rows_with(np.isnan(vectors.values), vectors.rows, batch.num_rows)
    return vectors.null | _missing_labels(batch, label_col) | nan_rows


def _count_batches(batches, features_col: str, label_col: Optional[str]):
    import pyarrow as pa

    for batch in batches:
        vectors = _vector_values(batch.column(features_col))
        nan = np.isnan(vectors.values)
        counts = {
            "rows": batch.num_rows,
            "null_vectors": int(vectors.null.sum()),
            "missing_labels": int(_missing_labels(batch, label_col).sum()),
            "nan_rows": int(_rows_with(nan, vectors.rows, batch.num_rows).sum()),
            "nan_values": int(nan.sum()),
            "infinite_rows": int(_rows_with(np.isinf(vectors.values), vectors.rows, batch.num_rows).sum()),
            "rows_to_drop": int(_to_drop(batch, label_col, vectors).sum()),
        }
        yield pa.RecordBatch.from_arrays([pa.array([counts[name]], pa.int64()) for name in _COUNT_FIELDS],
                                         names=list(_COUNT_FIELDS))


def missing_counts(df, features_col: str, label_col: Optional[str]) -> MissingCounts:
    """One pass: the rows, null vectors, null or NaN labels (``label_col`` None: none counted), rows with
    NaN values and the NaN values, rows with an infinite value, and the rows 'drop-rows' leaves out."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    columns = [quoted(features_col)] + ([quoted(label_col)] if label_col is not None else [])
    schema = StructType([StructField(name, LongType()) for name in _COUNT_FIELDS])
    counted = df.select(*columns).mapInArrow(partial(_count_batches, features_col=features_col,
                                                     label_col=label_col), schema)
    row = counted.agg(*[F.sum(name).alias(name) for name in _COUNT_FIELDS]).first()
    return MissingCounts(**{name: int(row[name] or 0) for name in _COUNT_FIELDS})


def _zeroed_vectors(column, vectors: _VectorValues):
    """The vector column with every NaN set to 0: a dense row keeps its length, a sparse row loses the
    NaN's index and value (a stored 0 is the same vector)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kinds, sizes, indices, _ = column.flatten()
    n_rows = len(column)
    nan = np.isnan(vectors.values)
    in_sparse_row = ~vectors.dense[vectors.rows]
    removed = nan & in_sparse_row
    kept_values = np.where(nan, 0.0, vectors.values)[~removed]
    kept_rows = vectors.rows[~removed]
    value_offsets = np.zeros(n_rows + 1, dtype=np.int32)
    np.cumsum(np.bincount(kept_rows, minlength=n_rows), out=value_offsets[1:])
    flat_indices = pc.list_flatten(indices).to_numpy(zero_copy_only=False)  # the sparse rows', in row order
    kept_indices = flat_indices[~removed[in_sparse_row]]
    sparse_counts = np.bincount(kept_rows[in_sparse_row[~removed]], minlength=n_rows)
    index_offsets = np.zeros(n_rows + 1, dtype=np.int32)
    np.cumsum(sparse_counts, out=index_offsets[1:])
    values_type, indices_type = column.type.field("values").type, column.type.field("indices").type
    new_values = pa.ListArray.from_arrays(pa.array(value_offsets), pa.array(kept_values, pa.float64()),
                                          type=values_type, mask=pa.array(vectors.null))
    new_indices = pa.ListArray.from_arrays(pa.array(index_offsets), pa.array(kept_indices, pa.int32()),
                                           type=indices_type, mask=pa.array(vectors.null | vectors.dense))
    return pa.StructArray.from_arrays([kinds, sizes, new_indices, new_values], fields=list(column.type),
                                      mask=pa.array(vectors.null))


def _clean_batches(batches, features_col: str, label_col: Optional[str], policy: str):
    import pyarrow as pa

    for batch in batches:
        column = batch.column(features_col)
        vectors = _vector_values(column)
        if policy == "drop-rows":
            drop = _to_drop(batch, label_col, vectors)
            yield batch.filter(pa.array(~drop)) if drop.any() else batch
        elif np.isnan(vectors.values).any():
            position = batch.schema.get_field_index(features_col)
            yield batch.set_column(position, batch.schema.field(position), _zeroed_vectors(column, vectors))
        else:
            yield batch


def without_missing(df, features_col: str, label_col: Optional[str], policy: str):
    """``df`` (every column, with its metadata) with the rows that hold a missing value left out
    (``policy='drop-rows'``) or with its NaN feature values set to 0 (``'zero'``); lazy: it runs in the
    passes that read it. Checks nothing: :func:`cleaned_input` refuses first what cannot be cleaned."""
    from pyspark.sql import functions as F

    if policy not in ("drop-rows", "zero"):
        raise ValueError(f"missing-value policy {policy!r}: without_missing takes 'drop-rows' or 'zero'")
    schema = df.schema
    cleaned = df.mapInArrow(partial(_clean_batches, features_col=features_col, label_col=label_col, policy=policy),
                            schema)
    return cleaned.select(*[F.col(quoted(field.name)).alias(field.name, metadata=field.metadata)
                            for field in schema.fields])


def missing_facts(policy: str, counts: Optional[MissingCounts] = None) -> Dict[str, Any]:
    """What a summary records of the policy: its name, the rows dropped and the values set to zero; under
    'pairwise' also the NaN values left out of the statistics (the fit adds the features they are in)."""
    facts = {"policy": policy,
             "rows_dropped": counts.rows_to_drop if counts is not None and policy == "drop-rows" else 0,
             "values_set_to_zero": counts.nan_values if counts is not None and policy == "zero" else 0}
    if policy == "pairwise":
        facts["values_left_out"] = counts.nan_values if counts is not None else 0
    return facts


def _refusal(counts: MissingCounts, features_col: str, label_col: Optional[str], policy: str) -> Optional[str]:
    """Why ``policy`` cannot clean this input, or None."""
    if counts.infinite_rows:
        return (f"{counts.infinite_rows} row(s) have infinite feature values in column '{features_col}': "
                f"missing='{policy}' handles NaN only, and an infinite value is not a missing value; clip or "
                "remove those values")
    what = {"zero": "sets NaN feature values to 0", "pairwise": "leaves NaN feature values out feature by feature"}
    if policy in what and counts.missing_labels:
        return (f"{counts.missing_labels} row(s) have a null or NaN label in column '{label_col}': missing='{policy}' "
                f"{what[policy]} and cannot stand in for a label; missing='drop-rows' leaves those rows out")
    if policy in what and counts.null_vectors:
        return (f"{counts.null_vectors} row(s) have a null feature vector in column '{features_col}': "
                f"missing='{policy}' {what[policy]} and cannot stand in for a vector; "
                "missing='drop-rows' leaves those rows out")
    if policy == "drop-rows" and counts.rows and counts.rows_to_drop == counts.rows:
        label = f", a null or NaN label in column '{label_col}'" if label_col is not None else ""
        return (f"every row ({counts.rows}) has a NaN feature value or a null vector in column '{features_col}'"
                f"{label}: missing='drop-rows' left no row to fit")
    return None


def cleaned_input(df, features_col: str, label_col: Optional[str], policy: str) -> Tuple[Any, Dict[str, Any]]:
    """(the input under ``policy``, the facts the summary records: :func:`missing_facts`).

    ``'refuse'`` returns ``df`` itself and runs no job (the fit names a NaN on its error path). The other
    policies take one counting pass (:func:`missing_counts`), refuse (:class:`InvalidInputError`) infinite
    values, a null or NaN label or a null vector under 'zero' and 'pairwise', and an input 'drop-rows' would
    leave empty, then return the lazy :func:`without_missing` frame (``df`` itself when nothing is missing,
    and always under 'pairwise', whose fit leaves the NaN values out itself).
    """
    if policy not in MISSING_POLICIES:
        raise ValueError(f"missing-value policy {policy!r}: use one of {', '.join(MISSING_POLICIES)}")
    if policy == "refuse":
        return df, missing_facts(policy)
    counts = missing_counts(df, features_col, label_col)
    refusal = _refusal(counts, features_col, label_col, policy)
    if refusal:
        raise InvalidInputError(refusal)
    facts = missing_facts(policy, counts)
    if policy == "pairwise" or not (facts["rows_dropped"] or facts["values_set_to_zero"]):
        return df, facts
    return without_missing(df, features_col, label_col, policy), facts
