"""Read LIBSVM/SVMlight text, Parquet and CSV into a DataFrame with one vector column.

Every reader returns a :class:`Dataset`: the DataFrame (features vector column, label column as
in the source, optional weight column) plus the feature names (source columns when the source
has them, else ``f0..f{D-1}``). Sparse LIBSVM rows stay SparseVectors.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import List, Optional
from urllib.parse import urlparse

from sparkfs.errors import InvalidInputError

FORMATS = ("libsvm", "parquet", "csv")


@dataclass
class Dataset:
    df: object  # pyspark.sql.DataFrame
    features_col: str
    label_col: str
    feature_names: List[str]

    @property
    def num_features(self) -> int:
        return len(self.feature_names)


def _check_exists(path: str) -> None:
    parsed = urlparse(path)
    if parsed.scheme in ("", "file") and not os.path.exists(parsed.path if parsed.scheme else path):
        raise InvalidInputError(f"input path not found: {path}")


def _vector_names(df, features_col: str, size: int) -> List[str]:
    attrs = df.schema[features_col].metadata.get("ml_attr", {}).get("attrs", {})
    names = [None] * size
    for group in attrs.values():
        for attribute in group:
            if attribute.get("idx", size) < size and attribute.get("name"):
                names[attribute["idx"]] = attribute["name"]
    return [name if name else f"f{i}" for i, name in enumerate(names)]


def _assemble(df, label_col: str, features_col: str, weight_col: Optional[str]):
    """Numeric columns other than label/weight become one vector column (NaN kept, then diagnosed)."""
    from pyspark.ml.feature import VectorAssembler
    from pyspark.sql.types import NumericType

    reserved = {label_col, weight_col}
    feature_columns, non_numeric = [], []
    for field in df.schema.fields:
        if field.name in reserved:
            continue
        (feature_columns if isinstance(field.dataType, NumericType) else non_numeric).append(field.name)
    if non_numeric:
        raise InvalidInputError(
            f"column(s) {non_numeric} are not numeric: every column other than the label must be a numeric feature"
        )
    if not feature_columns:
        raise InvalidInputError("the input has no numeric feature columns")
    casted = df.select(*[df[c].cast("double").alias(c) for c in feature_columns],
                       *[c for c in (label_col, weight_col) if c])
    assembler = VectorAssembler(inputCols=feature_columns, outputCol=features_col, handleInvalid="keep")
    assembled = assembler.transform(casted).select(features_col, *[c for c in (label_col, weight_col) if c])
    return assembled, feature_columns


def read_dataset(
    spark,
    path: str,
    fmt: str,
    *,
    label_col: str = "label",
    features_col: str = "features",
    weight_col: Optional[str] = None,
    num_features: Optional[int] = None,
    require_label: bool = True,
) -> Dataset:
    """Load ``path`` as a :class:`Dataset` (see the module docstring)."""
    from pyspark.ml.linalg import VectorUDT

    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown input format '{fmt}': use one of {', '.join(FORMATS)}")
    _check_exists(path)
    if fmt == "libsvm":
        reader = spark.read.format("libsvm")
        if num_features:
            reader = reader.option("numFeatures", int(num_features))
        df = reader.load(path)
        df = df.withColumnRenamed("label", label_col).withColumnRenamed("features", features_col)
        first = df.select(features_col).first()
        if first is None:
            raise InvalidInputError(f"the input has no rows: {path}")
        size = first[0].size
        return Dataset(df, features_col, label_col, [f"f{i}" for i in range(size)])

    if fmt == "parquet":
        df = spark.read.parquet(path)
    else:
        df = spark.read.option("header", "true").option("inferSchema", "true").csv(path)
    if require_label and label_col not in df.columns:
        raise InvalidInputError(f"label column '{label_col}' not found in {path}; columns are {df.columns}")
    if weight_col and weight_col not in df.columns:
        raise InvalidInputError(f"weight column '{weight_col}' not found in {path}; columns are {df.columns}")
    if features_col in df.columns and isinstance(df.schema[features_col].dataType, VectorUDT):
        keep = [c for c in (features_col, label_col, weight_col) if c and c in df.columns]
        df = df.select(*keep)
        first = df.select(features_col).first()
        if first is None:
            raise InvalidInputError(f"the input has no rows: {path}")
        return Dataset(df, features_col, label_col, _vector_names(df, features_col, first[0].size))
    assembled, names = _assemble(df, label_col if label_col in df.columns else None, features_col, weight_col)
    return Dataset(assembled, features_col, label_col, names)
