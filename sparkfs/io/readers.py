"""Read LIBSVM/SVMlight text, Parquet and CSV into a DataFrame with one vector column.

Every reader returns a :class:`Dataset`: the DataFrame (features vector column, label column as
in the source, optional weight column) plus the feature names (source columns when the source
has them, else ``f0..f{D-1}``). Sparse LIBSVM rows stay SparseVectors.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from typing import Dict, Iterator, List, Optional, Tuple
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


def _text_lines(spark, path: str) -> Iterator[Tuple[str, int, str]]:
    """(file, 1-based line number, line) of every line of a text input, streamed to the driver
    (used only on the error path, to point at the bad line)."""
    from pyspark.sql import functions as F

    numbers: Dict[str, int] = {}
    for row in spark.read.text(path).select("value", F.input_file_name().alias("file")).toLocalIterator():
        numbers[row["file"]] = numbers.get(row["file"], 0) + 1
        yield row["file"], numbers[row["file"]], row["value"]


def _libsvm_line_problem(line: str) -> Optional[str]:
    """What is wrong with one LIBSVM line (None when it parses like Spark's reader wants)."""
    text = line.strip()
    if not text or text.startswith("#"):
        return None
    tokens = text.split()
    try:
        float(tokens[0])
    except ValueError:
        return f"the label {tokens[0]!r} is not a number"
    previous = 0
    for token in tokens[1:]:
        index, separator, value = token.partition(":")
        if not separator or not index.isdigit():
            return f"{token!r} is not index:value"
        try:
            float(value)
        except ValueError:
            return f"{token!r}: the value {value!r} is not a number"
        if int(index) <= previous:
            return f"{token!r}: indices must be 1-based and increasing"
        previous = int(index)
    return None


def find_bad_libsvm_line(spark, path: str) -> Optional[InvalidInputError]:
    """The first line of a LIBSVM input that does not parse, as an error naming file and line (or
    that the input has no data line at all)."""
    data_lines = 0
    for file, number, line in _text_lines(spark, path):
        problem = _libsvm_line_problem(line)
        if problem:
            return InvalidInputError(f"line {number} of {file} is not LIBSVM ('label index:value ...'): {problem}")
        data_lines += bool(line.strip()) and not line.strip().startswith("#")
    return None if data_lines else InvalidInputError(f"the input has no rows: {path}")


def _non_numbers(df, columns: List[str]) -> List[Tuple[str, int, str]]:
    """(column, count, first value) of string values that are not numbers; the usual spellings of
    NaN and infinity (nan, NaN, inf, -inf, Infinity...) count as numbers (Spark's cast reads them)."""
    from pyspark.sql import functions as F

    checks = []
    for name in columns:
        bad = F.col(name).isNotNull() & F.col(name).try_cast("double").isNull()
        checks += [F.sum(bad.cast("long")).alias(f"n:{name}"), F.first(F.when(bad, F.col(name)), True).alias(f"v:{name}")]
    found = df.agg(*checks).first().asDict()
    return [(name, found[f"n:{name}"], found[f"v:{name}"]) for name in columns if found[f"n:{name}"]]


def _line_of_value(spark, path: str, column: str, value: str) -> str:
    """`` (line N of FILE)`` of the first CSV line whose ``column`` field is ``value``, or ''."""
    header = None
    for file, number, line in _text_lines(spark, path):
        fields = next(csv.reader([line]), [])
        if number == 1:
            header = fields
            continue
        if header and column in header and header.index(column) < len(fields) \
                and fields[header.index(column)].strip() == value.strip():
            return f" (line {number} of {file})"
    return ""


def _assemble(df, label_col: str, features_col: str, weight_col: Optional[str], spark=None, path: str = ""):
    """Numeric columns other than label/weight become one vector column (NaN kept, then diagnosed).

    A CSV column with a NaN or infinity spelled as NumPy writes it (``nan``, ``inf``) is read as
    a string column by Spark's schema inference: such columns are cast to double; any other
    non-number is refused, naming the column, the value and its line.
    """
    from pyspark.ml.feature import VectorAssembler
    from pyspark.sql.types import NumericType, StringType

    reserved = {label_col, weight_col}
    feature_columns, non_numeric, textual = [], [], []
    for field in df.schema.fields:
        if field.name in reserved:
            continue
        if isinstance(field.dataType, NumericType):
            feature_columns.append(field.name)
        elif isinstance(field.dataType, StringType):
            feature_columns.append(field.name)
            textual.append(field.name)
        else:
            non_numeric.append(field.name)
    if non_numeric:
        raise InvalidInputError(
            f"column(s) {non_numeric} are not numeric: every column other than the label must be a numeric feature"
        )
    if textual:
        problems = _non_numbers(df, textual)
        if problems:
            name, count, value = problems[0]
            where = _line_of_value(spark, path, name, value) if spark is not None and path else ""
            others = f"; also column(s) {[p[0] for p in problems[1:]]}" if problems[1:] else ""
            raise InvalidInputError(
                f"column '{name}' has {count} value(s) that are not numbers, e.g. {value!r}{where}{others}: every "
                "column other than the label must be a numeric feature (NaN and inf are read as such, then refused "
                "by the NaN rule)"
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
        try:
            df = reader.load(path)
            df = df.withColumnRenamed("label", label_col).withColumnRenamed("features", features_col)
            first = df.select(features_col).first()
        except Exception as error:  # Spark's parser says only "For input string"; point at the line
            bad_line = find_bad_libsvm_line(spark, path)
            if bad_line is None:
                raise
            raise bad_line from error
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
    assembled, names = _assemble(df, label_col if label_col in df.columns else None, features_col, weight_col,
                                 spark=spark if fmt == "csv" else None, path=path)
    return Dataset(assembled, features_col, label_col, names)
