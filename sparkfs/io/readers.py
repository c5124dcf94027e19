"""Read LIBSVM/SVMlight text, Parquet and CSV into a DataFrame with one vector column.

Every reader returns a :class:`Dataset`: the DataFrame (features vector column, label column as
in the source, optional weight column) plus the feature names (source columns when the source
has them; a LIBSVM file's features are named by its own 1-based column numbers, ``f1..fD``, so
``f7771`` is the file's ``7771:`` column). Sparse LIBSVM rows stay SparseVectors.

The named columns (label, weight, an explicitly named features column) are checked against the
input's columns before its data is read: :func:`check_input_columns` from the CSV header line or
the Parquet footer, which the command line calls before Spark starts (:mod:`sparkfs.io.table_input`).
"""

from __future__ import annotations

import csv
import difflib
import logging
import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple
from urllib.parse import urlparse

from sparkfs.errors import InvalidInputError
from sparkfs.io.input_files import check_input_files, data_files, glob_matches, partition_folders
from sparkfs.io.libsvm import DEFAULT_DRIVER_BUDGET_MB, check_vector_size, display_path, read_libsvm
from sparkfs.io.stores import Location, location_of
from sparkfs.io.table_input import (
    array_column_as_vector,
    check_csv_header,
    check_parquet_types,
    csv_header,
    index_columns,
    local_columns,
    parquet_schema,
    read_csv,
    typed_columns,
    unreadable_parquet_message,
)

FORMATS = ("libsvm", "parquet", "csv")
#: The input "format" of a table or view of the session's catalog (``--input-table``): its name is the path.
TABLE = "table"
ASSEMBLED_COL = "__sparkfs_features"   # the vector of the numeric columns when `features` is one of them
SHOWN_COLUMNS = 8                      # column names listed when a named column is missing
log = logging.getLogger("sparkfs")


@dataclass
class Dataset:
    df: object  # pyspark.sql.DataFrame
    features_col: str
    label_col: str
    feature_names: List[str]

    @property
    def num_features(self) -> int:
        return len(self.feature_names)


def selector_budget(selector, driver_budget_mb: Optional[float] = None) -> Dict[str, object]:
    """read_dataset's budget keywords for a command that fits ``selector``: ``--driver-budget-mb``
    when given, else the selector's driverBudgetMB when it has one, else the reader's default."""
    if driver_budget_mb is None and selector.hasParam("driverBudgetMB"):
        driver_budget_mb = float(selector.getOrDefault("driverBudgetMB"))
    if driver_budget_mb is not None and not (isinstance(driver_budget_mb, (int, float)) and driver_budget_mb > 0):
        raise InvalidInputError(f"--driver-budget-mb must be a number > 0, got {driver_budget_mb!r}")
    return {"driver_budget_mb": float(driver_budget_mb or DEFAULT_DRIVER_BUDGET_MB),
            "budget_name": "--driver-budget-mb"}


def _check_exists(location: Location) -> None:
    """Refuse a local input that does not exist, or a glob (``dir/*.libsvm``) that matches nothing."""
    matches = glob_matches(location)
    path = location.text
    if matches is not None:
        if not matches:
            raise InvalidInputError(f"input path not found: {path} (no file matches the pattern)")
        return
    parsed = urlparse(path)
    if parsed.scheme in ("", "file") and not os.path.exists(parsed.path if parsed.scheme else path):
        raise InvalidInputError(f"input path not found: {path}")


#: The vector column metadata key ``sparkfs convert`` adds when the names are a LIBSVM file's own
#: 1-based column numbers (``{"sparkfs": {"feature_names": "libsvm"}}``): ``f1..fD``, not listed one by one.
LIBSVM_NAMES = {"sparkfs": {"feature_names": "libsvm"}}


def vector_names(df, features_col: str, size: int, indices: Optional[Iterable[int]] = None) -> List[str]:
    """The feature names a vector column's ML attributes carry (``VectorAssembler`` writes them),
    ``f{i}`` where there is none (``f{i+1}``, the LIBSVM column numbers, under :data:`LIBSVM_NAMES`);
    of the features ``indices`` only when given (a few names of a wide vector, not all of them)."""
    metadata = df.schema[features_col].metadata
    attrs = metadata.get("ml_attr", {}).get("attrs", {})
    said = metadata.get("sparkfs")
    first = 1 if isinstance(said, dict) and said.get("feature_names") == "libsvm" else 0
    given = {attribute["idx"]: attribute["name"] for group in attrs.values() for attribute in group
             if attribute.get("idx", size) < size and attribute.get("name")}
    wanted = range(size) if indices is None else (int(i) for i in indices)
    return [given.get(i) or f"f{i + first}" for i in wanted]


def given_vector_names(df, features_col: str, size: int) -> Optional[List[str]]:
    """:func:`vector_names` when the column's ML attributes name at least one feature; None when
    the features are known by position only (no attributes, or a LIBSVM file's column numbers)."""
    attrs = df.schema[features_col].metadata.get("ml_attr", {}).get("attrs", {})
    if not any(attribute.get("name") for group in attrs.values() for attribute in group):
        return None
    return vector_names(df, features_col, size)


def _text_lines(spark, path: str) -> Iterator[Tuple[str, int, str]]:
    """(file, 1-based line number, line) of every line of a text input, streamed to the driver
    (used only on the error path, to point at a bad CSV value)."""
    from pyspark.sql import functions as F

    numbers: Dict[str, int] = {}
    for row in spark.read.text(path).select("value", F.input_file_name().alias("file")).toLocalIterator():
        numbers[row["file"]] = numbers.get(row["file"], 0) + 1
        yield row["file"], numbers[row["file"]], row["value"]


def check_input_columns(columns: List[str], path: str, *, label_col: Optional[str], weight_col: Optional[str] = None,
                        features_col: Optional[str] = None) -> None:
    """Refuse a named column the input does not have (``label_col`` None: no label needed;
    ``features_col`` only when the user named one)."""
    if label_col and label_col not in columns:
        _refuse_missing_column("label", label_col, columns, path)
    if weight_col and weight_col not in columns:
        _refuse_missing_column("weight", weight_col, columns, path)
    if features_col and features_col not in columns:
        _refuse_missing_column("features", features_col, columns, path)


def check_input_early(location: Location, fmt: str, *, label_col: Optional[str], weight_col: Optional[str] = None,
                      features_col: Optional[str] = None) -> None:
    """The checks of a local input that need no Spark (the command line runs them before Spark
    starts): the path exists, its files are whole and agree (:mod:`sparkfs.io.input_files`), the CSV
    header is one Spark reads as it is, the named columns exist."""
    if fmt not in FORMATS:
        raise InvalidInputError(f"unknown input format '{fmt}': use one of {', '.join(FORMATS)}")
    _check_exists(location)
    check_input_files(location, fmt)
    if fmt == "libsvm":
        return
    columns = local_columns(location, fmt)
    if columns is None:
        return
    if fmt == "csv":
        check_csv_header(columns, location.text)
    else:
        check_parquet_types(location)
    check_input_columns(columns, location.text, label_col=label_col, weight_col=weight_col, features_col=features_col)


def _refuse_missing_column(kind: str, name: str, columns: List[str], path: str) -> None:
    """A missing label/weight column, listing a few of the columns and the likely intended ones."""
    shown = ", ".join(repr(c) for c in columns[:SHOWN_COLUMNS])
    if len(columns) > SHOWN_COLUMNS:
        shown += f", ... ({len(columns)} columns in all)"
    close = [c for c in columns if c.lower() == name.lower()] or difflib.get_close_matches(name, columns, n=3)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    raise InvalidInputError(f"{kind} column '{name}' not found in {path}; its columns are {shown}{hint}")


def _non_numbers(df, columns: List[str]) -> List[Tuple[str, int, str]]:
    """(column, count, first value) of string values that are not numbers; the usual spellings of
    NaN and infinity (nan, NaN, inf, -inf, Infinity...) count as numbers (Spark's cast reads them)."""
    from pyspark.sql import functions as F

    checks = []
    for name in columns:
        bad = F.col(name).isNotNull() & F.col(name).try_cast("double").isNull()
        checks += [F.sum(bad.cast("long")).alias(f"n:{name}"),
                   F.first(F.when(bad, F.col(name)), True).alias(f"v:{name}")]
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


def _assemble(df, label_col: Optional[str], features_col: str, weight_col: Optional[str]):
    """Numeric columns other than label/weight become one vector column (NaN kept, then diagnosed).

    A string column (Parquet) is cast to double when all its values are numbers (``nan`` and
    ``inf`` read as such); any other non-number is refused, naming the column and the value.
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
            others = f"; also column(s) {[p[0] for p in problems[1:]]}" if problems[1:] else ""
            raise InvalidInputError(
                f"column '{name}' has {count} value(s) that are not numbers, e.g. {value!r}{others}: every "
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


def _refuse_csv_errors(spark, path: str, errors, names: List[str]) -> None:
    """The first bad value (by column order) or bad line of a CSV: column, value, line."""
    columns = sorted({column for column, _, _ in errors if column}, key=names.index)
    if columns:
        from pyspark.sql.types import StringType, StructField, StructType

        strings = spark.read.option("header", "true").schema(
            StructType([StructField(name, StringType()) for name in names])).csv(path)
        # Spark's cast may read what Arrow's does not ('1.5d', hex floats): then Arrow's value is named.
        first_bad = next(value for column, value, _ in errors if column == columns[0])
        also = f"; also column(s) {columns[1:]}" if columns[1:] else ""
        if first_bad == "":   # an empty field (Spark's reader makes it null)
            from pyspark.sql import functions as F

            empty = strings.agg(F.sum(F.col(columns[0]).isNull().cast("long"))).first()[0]
            where = _line_of_value(spark, path, columns[0], "")
            raise InvalidInputError(
                f"column '{columns[0]}' has {empty or 'some'} empty value(s){where}{also}: every feature needs a "
                "number in every row; fill them in, or leave out those rows or the column")
        found: List[Tuple[str, Any, Any]] = list(_non_numbers(strings, columns[:1]))  # (column, count, value)
        name, count, value = (found or [(columns[0], "some", first_bad)])[0]
        where = _line_of_value(spark, path, name, value)
        raise InvalidInputError(
            f"column '{name}' has {count} value(s) that are not numbers, e.g. {value!r}{where}{also}: every column "
            "other than the label must be a numeric feature (NaN and inf are read as such, then refused by the NaN "
            "rule)")
    _, reason, line = errors[0]
    raise InvalidInputError(f"{_line_of_text(spark, path, line)} does not split into the header's {len(names)} "
                            f"fields: {reason} ({line[:60]!r}); every line of a CSV holds one field per header column")


def _line_of_text(spark, path: str, text: str) -> str:
    """``line N of FILE`` of the first line after a header that starts with ``text``."""
    for file, number, line in _text_lines(spark, path):
        if number > 1 and text and line.startswith(text):
            return f"line {number} of {display_path(file)}"
    return f"a line of {path}"


def _read_csv(spark, location: Location, label_col: str, features_col: str, weight_col: Optional[str],
              require_label: bool, require_features: bool) -> Dataset:
    """A CSV read with the names of its header, parsed once (no inference; :mod:`sparkfs.io.table_input`)."""
    path = location.text
    names = csv_header(spark, location)
    if not names:
        raise InvalidInputError(f"the input has no rows: {path}")
    check_csv_header(names, path)
    check_input_columns(names, path, label_col=label_col if require_label else None, weight_col=weight_col,
                        features_col=features_col if require_features else None)
    other = [c for c in (label_col, weight_col) if c and c in names]
    index = index_columns(names, "csv", location, [label_col, weight_col, features_col])
    features = [name for name in names if name not in other and name not in index]
    if not features:
        raise InvalidInputError("the input has no numeric feature columns")
    # A column named like the features column is a numeric feature like any other: the vector
    # then takes a private name, so it cannot clash.
    vector_col = ASSEMBLED_COL if features_col in names else features_col
    parsed, errors = read_csv(spark, path, names, features, other, vector_col)
    if errors:
        _refuse_csv_errors(spark, path, errors, names)
    frame, rows = typed_columns(parsed, vector_col, features, other)
    if not rows:
        parsed.unpersist()
        raise InvalidInputError(f"the input has no rows: {path}")
    return Dataset(frame, vector_col, label_col, features)


def partition_columns(spark, location: Location, columns: List[str], named: List[Optional[str]]) -> List[str]:
    """The columns of a Parquet input that come from its folder names (``year=2020/``: Hive
    partitioning), not from its files, less those the user named (a label partitioned by class is
    kept): left out of the features, announced in one line. A local input is looked at directly (a
    file's footer); a URI is read once more without partition discovery, which costs a listing."""
    if location.local is not None:
        if not partition_folders(location):
            return []
        files = data_files(location) or []
        in_files = set(parquet_schema(files[0]).names) if files else set(columns)
    else:
        try:
            in_files = set(spark.read.option("recursiveFileLookup", "true").parquet(location.text).columns)
        except Exception:  # a store that cannot list recursively: nothing is claimed
            return []
    found = [name for name in columns if name not in in_files and name not in named]
    if found:
        log.warning("%s: column(s) %s come from its folder names (Hive partitioning, e.g. %s=.../), not from its "
                    "files: left out of the features; name one with --label-col or --weight-col to use it", location,
                    found, found[0])
    return found


def _is_numeric_array(data_type) -> bool:
    from pyspark.sql.types import ArrayType, NumericType

    return isinstance(data_type, ArrayType) and isinstance(data_type.elementType, NumericType)


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
    require_features: bool = False,
    driver_budget_mb: float = DEFAULT_DRIVER_BUDGET_MB,
    budget_name: str = "driverBudgetMB",
) -> Dataset:
    """Load ``path`` as a :class:`Dataset` (see the module docstring).

    LIBSVM: ``num_features`` is the explicit vector size (``--vector-size``), else the largest
    index; either must fit the driver budget (:func:`sparkfs.io.libsvm.read_libsvm`, which names
    ``budget_name`` as the way to raise it). CSV/Parquet: ``label_col`` must be a column when
    ``require_label``, ``features_col`` when ``require_features`` (the user named it; else the
    numeric columns are assembled when it is not a vector column), checked before the data is read.
    ``fmt`` :data:`TABLE`: ``path`` names a table or view of the session's catalog, read as a Parquet
    input is (:func:`read_table`).
    """
    if fmt not in FORMATS and fmt != TABLE:
        raise InvalidInputError(f"unknown input format '{fmt}': use one of {', '.join(FORMATS)}")
    location = location_of(path)
    if fmt == TABLE:
        df = read_table(spark, path)
    else:
        _check_exists(location)
    if fmt == "libsvm":
        df, size = read_libsvm(spark, path, label_col=label_col, features_col=features_col,
                               vector_size=num_features, driver_budget_mb=driver_budget_mb, budget_name=budget_name)
        return Dataset(df, features_col, label_col, [f"f{i}" for i in range(1, size + 1)])
    if fmt == "csv":
        return _read_csv(spark, location, label_col, features_col, weight_col, require_label, require_features)
    if fmt == "parquet":
        check_parquet_types(location)
        try:
            df = spark.read.parquet(path)   # the schema from the footer: the columns are checked before the data
        except Exception as error:  # a type Spark cannot read (a URI input: not looked at before)
            message = unreadable_parquet_message(path, error)
            if message is None:
                raise
            raise InvalidInputError(message) from None
    check_input_columns(df.columns, path, label_col=label_col if require_label else None, weight_col=weight_col,
                        features_col=features_col if require_features else None)
    return _columns_dataset(df, location, label_col, features_col, weight_col, driver_budget_mb, budget_name,
                            from_files=fmt == "parquet")


def _columns_dataset(df, location: Location, label_col: str, features_col: str, weight_col: Optional[str],
                     driver_budget_mb: float, budget_name: str, *, from_files: bool) -> Dataset:
    """A Parquet input's or a table's :class:`Dataset`: its vector (or numeric array) column ``features_col``
    with the label and weight, else its numeric columns assembled (less, for Parquet files, the columns of
    their folder names)."""
    from pyspark.ml.linalg import VectorUDT

    path = location.text
    if features_col in df.columns and _is_numeric_array(df.schema[features_col].dataType):
        df = array_column_as_vector(df, features_col, path)
    if features_col in df.columns and isinstance(df.schema[features_col].dataType, VectorUDT):
        keep = [c for c in (features_col, label_col, weight_col) if c and c in df.columns]
        df = df.select(*keep)
        first = df.select(features_col).first()
        if first is None:
            raise InvalidInputError(f"the input has no rows: {path}")
        check_vector_size(first[0].size, f"the vector column '{features_col}' of {path} holds", driver_budget_mb,
                          budget_name)
        return Dataset(df, features_col, label_col, vector_names(df, features_col, first[0].size))
    # A column named like the features column that is not a vector (`features` of integers) is a
    # numeric feature like any other: the assembled vector takes a private name, so it cannot clash.
    index = index_columns(df.columns, "parquet", location, [label_col, weight_col, features_col])
    if from_files:
        index += partition_columns(df.sparkSession, location, df.columns, [label_col, weight_col, features_col])
    df = df.drop(*index) if index else df
    vector_col = ASSEMBLED_COL if features_col in df.columns else features_col
    assembled, names = _assemble(df, label_col if label_col in df.columns else None, vector_col, weight_col)
    return Dataset(assembled, vector_col, label_col, names)


def read_table(spark, name: str):
    """The table or view ``name`` of the session's catalog (``db.table``, ``catalog.db.table``, a temporary
    view, a path-based ``parquet.`/path```), its schema resolved now (no job): one the catalog does not
    know is refused naming it and where it was looked for."""
    try:
        frame = spark.table(name)
        _ = frame.schema  # Spark Connect resolves lazily: make it resolve here
    except Exception as error:  # AnalysisException: not found, or not a table name
        where = _current_namespace(spark)
        first = str(error).strip().splitlines()[0][:200] if str(error).strip() else type(error).__name__
        raise InvalidInputError(f"--input-table {name}: the session's catalog has no such table or view (a name "
                                f"without a database is looked up in {where}): {first}") from None
    return frame


def _current_namespace(spark) -> str:
    try:
        return f"{spark.catalog.currentCatalog()}.{spark.catalog.currentDatabase()}"
    except Exception:  # a catalog that cannot say: the name alone is shown
        return "the current database"
