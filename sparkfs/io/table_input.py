"""The columns of a CSV or Parquet input, known before its data is read, and CSV read without
schema inference.

Why: Spark's ``inferSchema`` reads every value of every column once more to type it, and on a
5,749-column CSV the typed read plus ``VectorAssembler`` over thousands of columns took 35-115 s
before the first pass of a selector. Here

* the **columns** come from the CSV header line or the Parquet footer (:func:`local_columns`
  reads a local file with the standard library or pyarrow, before Spark starts; otherwise
  Spark reads the first line or the footer), so a missing ``--label-col`` is refused at once;
* a CSV is **parsed once, in Arrow**, with the header's names (:func:`read_csv`): its lines
  (``spark.read.text``, so Spark Connect runs it too) go through ``mapInArrow``, where
  ``pyarrow.csv`` splits them, every feature is cast to double (``nan``, ``inf``, ``Infinity``
  read as such, as Spark's cast reads them; an empty field is refused with its line, as a value
  that is no number: every method refuses a missing value, and the NaN rule could not say where
  it is) and the row becomes a dense vector; each file's header line
  and blank lines are skipped. The JVM plan has a handful of columns whatever the width of the
  file. The rows are persisted; the one action that fills the cache collects the bad values and
  lines (a value that is not a number, a line that does not split into the header's fields),
  refused naming the column, the value and the line; a second, small aggregate types the label
  and weight columns as inference would have (int, long, double, else string) and counts the
  rows. The vector's slots carry the column names as ``VectorAssembler``'s ML attributes.

Parquet inputs keep Spark's reader (typed columns, schema from the footer) and ``VectorAssembler``.
"""

from __future__ import annotations

import csv
import glob
import gzip
import json
import logging
import os
import re
from functools import lru_cache, partial
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from sparkfs.errors import InvalidInputError
from sparkfs.io.stores import Location

_HIDDEN = ("_", ".")                        # Spark skips these files in a directory input
#: What pandas names an index it writes as a column (``to_parquet`` of an index without a name).
PANDAS_INDEX_NAME = re.compile(r"^__index_level_\d+__$")
#: What pandas names a CSV's unnamed first column when it reads one (``Unnamed: 0``), as a
#: re-saved ``to_csv`` index is.
PANDAS_UNNAMED_NAME = re.compile(r"^Unnamed: \d+$")
log = logging.getLogger("sparkfs")


def local_files(location: Location) -> Optional[List[str]]:
    """The data files of a local input (a file, a directory of part files, or a glob), sorted;
    None for a URI, or a directory with partition folders (``key=value``, whose columns are
    not in the files)."""
    local = location.local
    if local is None:
        return None
    if os.path.isdir(local):
        names = sorted(os.listdir(local))
        if any("=" in name and os.path.isdir(os.path.join(local, name)) for name in names):
            return None
        return [os.path.join(local, name) for name in names
                if not name.startswith(_HIDDEN) and os.path.isfile(os.path.join(local, name))]
    if os.path.isfile(local):
        return [local]
    matches = sorted(glob.glob(local))   # Hadoop's {a,b} is left to Spark's reader
    return matches or None


def _csv_header_of_file(file: str) -> Optional[List[str]]:
    """The first line's fields; a UTF-8 byte-order mark (spreadsheets write one) is not part of
    the first name, and a gzip-compressed file (``data.csv.gz``) is read decompressed, as Spark's
    text reader reads it."""
    with open(file, "rb") as probe:
        compressed = probe.read(2) == b"\x1f\x8b"   # gzip's magic bytes: Spark reads such a file decompressed
    opener = gzip.open if compressed else open
    with opener(file, "rt", newline="", encoding="utf-8-sig", errors="replace") as handle:
        return next(csv.reader(handle), None)


def local_columns(location: Location, fmt: str) -> Optional[List[str]]:
    """The column names of a local CSV (its first file's header line) or Parquet input (its
    first file's footer), read without Spark; None where that cannot be known here (a URI,
    partition folders, an unreadable file: Spark then reads them)."""
    files = local_files(location)
    if not files:
        return None
    try:
        if fmt == "csv":
            for file in files:
                header = _csv_header_of_file(file)
                if header is not None:
                    return header
            return None
        if fmt == "parquet":
            return list(parquet_schema(files[0]).names)
    except (OSError, ValueError):  # not a Parquet file, say: Spark's own reader says what is wrong
        return None
    return None


@lru_cache(maxsize=8)
def _footer_schema(file: str, size: int, modified_ns: int):
    """A local Parquet file's schema from its footer, read once per (file, size, mtime): the column
    names, the pandas index and the type check all use it before Spark reads the file."""
    import pyarrow.parquet as pq

    return pq.read_schema(file)


def parquet_schema(file: str):
    """:func:`_footer_schema` of ``file`` (OSError or ValueError when it is not readable Parquet)."""
    status = os.stat(file)
    return _footer_schema(file, status.st_size, status.st_mtime_ns)


def csv_header(spark, location: Location) -> Optional[List[str]]:
    """The header line's fields of a CSV input (None if it has no line): locally without Spark,
    else Spark's first line."""
    header = local_columns(location, "csv")
    if header is not None:
        return header
    first = spark.read.option("header", "false").csv(location.text).first()
    if first is None:
        return None
    names = [name for name in first if name is not None]
    return [names[0].lstrip("\ufeff"), *names[1:]] if names else names


def _parquet_pandas_index(location: Location) -> List[str]:
    """The columns a local Parquet input's pandas metadata names as its index (``to_parquet``
    with an index, named or not); [] without that metadata or for a URI."""
    files = local_files(location)
    if not files:
        return []
    try:
        metadata = parquet_schema(files[0]).metadata or {}
        pandas = json.loads(metadata.get(b"pandas", b"{}"))
    except (OSError, ValueError):
        return []
    return [name for name in pandas.get("index_columns", []) if isinstance(name, str)]


def index_columns(names: List[str], fmt: str, location: Location, named: List[Optional[str]],
                  announce: bool = True) -> List[str]:
    """The columns of a CSV or Parquet input that are a pandas index, not features: Parquet
    columns the pandas metadata lists as the index or named ``__index_level_N__``; a CSV's
    first column when its header name is empty (``to_csv``'s default) or ``Unnamed: N``. A
    column the user named (label, weight, features) is never one. Each is announced in one line
    (with ``announce``).
    (A CSV column without a name anywhere but first is refused by :func:`check_csv_header`.)"""
    if fmt == "parquet":
        pandas_index = set(_parquet_pandas_index(location))
        found = [name for name in names if name in pandas_index or PANDAS_INDEX_NAME.match(name)]
        writer = "a pandas index (DataFrame.to_parquet writes it as a column)"
    else:
        first = names[0] if names else ""
        found = [first] if names and (not first.strip() or PANDAS_UNNAMED_NAME.match(first)) else []
        writer = "the index pandas' DataFrame.to_csv writes (an unnamed first column)"
    found = [name for name in found if name not in named]
    if found and announce:
        log.warning("%s: column(s) %s left out of the features: %s; write the file with index=False to keep "
                    "it out", location, found, writer)
    return found


def check_csv_header(names: Optional[List[str]], path: str) -> None:
    """Refuse a CSV header Spark would misread silently: duplicate names (Spark renames them, names
    compared ignoring case as Spark does), one column holding ';' or tabs (another separator), or a
    column without a name other than the first (the first is a pandas index: :func:`index_columns`)."""
    if not names:
        return
    unnamed = [position for position, name in enumerate(names) if not name.strip() and position > 0]
    if unnamed:
        raise InvalidInputError(
            f"column {unnamed[0] + 1} of the CSV header of {path} has no name: give every column a name (only the "
            "first may be unnamed: it is read as the index pandas' DataFrame.to_csv writes, and left out)")
    if len(names) == 1 and (";" in names[0] or "\t" in names[0]):
        separator = "';'" if ";" in names[0] else "tab"
        raise InvalidInputError(
            f"the CSV header of {path} is one column, {names[0][:60]!r}, holding {separator}s: the file looks "
            f"{separator}-separated, and sparkfs reads comma-separated CSV; convert it to commas (or to Parquet)")
    seen: Dict[str, str] = {}
    duplicates = []
    for name in names:
        if name.lower() in seen and seen[name.lower()] not in duplicates:
            duplicates.append(seen[name.lower()])
        seen.setdefault(name.lower(), name)
    if duplicates:
        raise InvalidInputError(
            f"the CSV header of {path} repeats the column name(s) {duplicates} (compared ignoring case, as Spark "
            "does; Spark would rename them silently): give every column a unique name")


def _csv_table(lines, names: List[str]):
    """An Arrow table of every column as strings (empty fields null) from an array of CSV lines."""
    import io

    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pa_csv

    text = pc.binary_join_element_wise(lines.cast(pa.string()), "", "\n")
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32)[text.offset:text.offset + len(text) + 1]
    data = text.buffers()[2].to_pybytes()[offsets[0]:offsets[-1]]
    return pa_csv.read_csv(
        io.BytesIO(data), read_options=pa_csv.ReadOptions(column_names=names),
        parse_options=pa_csv.ParseOptions(newlines_in_values=False),
        convert_options=pa_csv.ConvertOptions(column_types={name: pa.string() for name in names}, null_values=[""],
                                              strings_can_be_null=True, quoted_strings_can_be_null=True))


def _doubles(column, name: str) -> np.ndarray:
    """float64 of a string column (``nan``, ``inf``, ``Infinity`` as such; blanks around a number
    ignored, as Spark's cast does); ValueError (column, value) at a value that is no number, and
    (column, "") at an empty field."""
    import pyarrow as pa
    import pyarrow.compute as pc

    column = pc.utf8_trim_whitespace(column.combine_chunks() if hasattr(column, "combine_chunks") else column)
    if column.null_count:   # an empty field: refused with its line, as a value that is no number
        raise ValueError(name, "")
    try:
        return pc.cast(column, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        for value in column.to_pylist():
            try:
                pc.cast(pa.array([value], pa.string()), pa.float64())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise ValueError(name, value) from None
        raise  # pragma: no cover


def _csv_batch(lines, names: List[str], features: List[int], other: List[int], out_names: List[str]):
    """label/weight strings + a dense vector struct of the features of CSV lines (Arrow batch);
    a bad line or value becomes one row of the error columns instead."""
    import pyarrow as pa

    schema = _csv_schema(out_names)
    try:
        table = _csv_table(lines, names)
        matrix = np.empty((table.num_rows, len(features)), dtype=np.float64)
        for slot, index in enumerate(features):
            matrix[:, slot] = _doubles(table.column(index), names[index])
    except ValueError as problem:   # a value that is not a number
        if isinstance(problem, pa.ArrowInvalid):  # a line Arrow cannot split into the header's fields
            reason, _, line = str(problem).replace("CSV parse error: ", "", 1).partition(": ")
            return _csv_error(schema, "", reason, line)
        column, value = problem.args
        return _csv_error(schema, column, value, "")
    n = table.num_rows
    vectors = pa.StructArray.from_arrays(
        [pa.array(np.ones(n, dtype=np.int8)), pa.nulls(n, pa.int32()), pa.nulls(n, pa.list_(pa.int32())),
         pa.ListArray.from_arrays(pa.array(np.arange(n + 1, dtype=np.int32) * len(features)),
                                  pa.array(matrix.ravel()))],
        names=["type", "size", "indices", "values"])
    columns = [vectors, *[table.column(index).combine_chunks() for index in other]]
    columns += [pa.nulls(n, pa.string())] * 3
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _csv_schema(out_names: List[str]):
    import pyarrow as pa

    vector = pa.struct([("type", pa.int8()), ("size", pa.int32()), ("indices", pa.list_(pa.int32())),
                        ("values", pa.list_(pa.float64()))])
    return pa.schema([(out_names[0], vector), *[(name, pa.string()) for name in out_names[1:]],
                      ("error_column", pa.string()), ("error_value", pa.string()), ("error_line", pa.string())])


def _csv_error(schema, column: str, value, line: str):
    import pyarrow as pa

    columns = [pa.nulls(1, field.type) for field in schema][:-3]
    columns += [pa.array([column]), pa.array([value], pa.string()), pa.array([line])]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _csv_partition(batches, names: List[str], features: List[int], other: List[int], out_names: List[str],
                   rows_per_batch: int, read_token: str = ""):
    """The parse of a CSV's lines (module notes): each file's first line (its header) and blank
    lines skipped; features in slices of at most ``rows_per_batch`` rows. ``read_token`` is not
    read: unique per read, it makes each read its own plan, so Spark's cache never hands a read
    the persisted rows of an earlier read of the same path (which may have changed since)."""
    import pyarrow.compute as pc

    from sparkfs.io.libsvm import block_runs

    started = set()
    for batch in batches:
        keep = pc.not_equal(pc.utf8_trim_whitespace(batch.column("value")), "").to_numpy(zero_copy_only=False)
        for begin, _ in block_runs(batch):
            key = batch.column("file")[begin].as_py()
            if batch.column("start")[begin].as_py() == 0 and key not in started:
                started.add(key)            # the first line of a file's first block: its header
                keep[begin] = False
        lines = batch.column("value").filter(keep)
        for begin in range(0, len(lines), rows_per_batch):
            out = _csv_batch(lines.slice(begin, rows_per_batch), names, features, other, out_names)
            yield out
            if out.column(len(out_names)).null_count == 0:  # an error row: the rest of the batch is not needed
                break


def read_csv(spark, path: str, names: List[str], features: List[str], other: List[str], vector_col: str):
    """(persisted DataFrame of ``vector_col`` and the ``other`` columns as strings, errors): the
    CSV's lines parsed with the header's names, one action that fills the cache and collects the
    errors ((column, value, line text) of the first bad value or line of each failing batch)."""
    import uuid

    from pyspark import StorageLevel
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    position = {name: index for index, name in enumerate(names)}
    out_names = [vector_col, *other]
    schema = StructType([StructField(vector_col, VectorUDT()), *[StructField(name, StringType()) for name in other],
                         *[StructField(name, StringType()) for name in ("error_column", "error_value", "error_line")]])
    lines = spark.read.text(path).select(
        "value", F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_block_start").alias("start"))
    parse = partial(_csv_partition, names=names, features=[position[name] for name in features],
                    other=[position[name] for name in other], out_names=out_names,
                    rows_per_batch=max(1, 4_000_000 // max(1, len(features))), read_token=uuid.uuid4().hex)
    parsed = lines.mapInArrow(parse, schema).persist(StorageLevel.MEMORY_AND_DISK)
    errors = [tuple(row) for row in parsed.where("error_column IS NOT NULL")
              .select("error_column", "error_value", "error_line").collect()]
    if errors:
        parsed.unpersist()
    return parsed.select(vector_col, *other), errors


def _type_checks(column) -> List[Any]:
    """Aggregates: does every value of a string column cast to int, to long, to double."""
    from pyspark.sql import functions as F

    return [F.bool_and(F.col(column).isNull() | F.col(column).try_cast(kind).isNotNull()) for kind in
            ("int", "long", "double")]


def _type_of(fits: Tuple[bool, bool, bool]) -> str:
    for fit, kind in zip(fits, ("int", "long", "double")):
        if fit is not False:   # None: no row at all
            return kind
    return "string"


def vector_metadata(names: List[str]) -> Dict[str, object]:
    """The ML attributes ``VectorAssembler`` writes: the feature names reach ``model.summary``."""
    return {"ml_attr": {"attrs": {"numeric": [{"idx": i, "name": name} for i, name in enumerate(names)]},
                        "num_attrs": len(names)}}


def typed_columns(frame, vector_col: str, features: List[str], other: List[str]):
    """(frame with the ``other`` string columns typed as inference would have (int, long, double,
    else string) and the vector's attributes named, rows): one aggregate over the parsed rows."""
    from pyspark.sql import functions as F

    checks = [F.count(F.lit(1)).alias("rows")]
    for index, name in enumerate(other):
        checks += [check.alias(f"{kind}{index}") for check, kind in zip(_type_checks(name), ("i", "l", "d"))]
    found = frame.agg(*checks).first()
    types = [_type_of((found[f"i{i}"], found[f"l{i}"], found[f"d{i}"])) for i in range(len(other))]
    typed = frame.select(F.col(vector_col).alias(vector_col, metadata=vector_metadata(features)),
                         *[F.col(name).try_cast(kind).alias(name) if kind != "string" else F.col(name)
                           for name, kind in zip(other, types)])
    return typed, found["rows"]


def array_column_as_vector(frame, column: str, path: str):
    """``frame`` with a numeric array column (what pandas and pyarrow write for a column of lists or
    arrays) turned into the vector column sparkfs reads, when every row holds an array of one size;
    refused naming the sizes found (and a file holding the rarest size) otherwise. One aggregate."""
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, DoubleType

    element = frame.schema[column].dataType.elementType
    sizes = (frame.select(F.size(F.col(column)).alias("size"), F.col("_metadata.file_path").alias("file"))
             .groupBy("size").agg(F.count(F.lit(1)).alias("rows"), F.first("file").alias("file")).collect())
    if not sizes:
        raise InvalidInputError(f"the input has no rows: {path}")
    by_size = {row["size"]: (row["rows"], row["file"]) for row in sizes}
    if -1 in by_size:  # F.size of a null array
        raise InvalidInputError(f"{by_size[-1][0]} row(s) have a null array in the features column '{column}' of "
                                f"{path} (e.g. in {by_size[-1][1]})")
    if len(by_size) > 1:
        listed = ", ".join(f"size {size}: {rows} row(s)" for size, (rows, _) in sorted(by_size.items()))
        rarest = min(by_size, key=lambda size: by_size[size][0])
        raise InvalidInputError(f"the arrays in the features column '{column}' of {path} have different sizes "
                                f"({listed}; size {rarest} e.g. in {by_size[rarest][1]}): every row needs one value "
                                "per feature")
    if not isinstance(element, DoubleType):
        frame = frame.withColumn(column, F.col(column).cast(ArrayType(DoubleType())))
    return frame.withColumn(column, array_to_vector(F.col(column)))


def check_parquet_types(location: Location) -> None:
    """Refuse, before Spark reads it, a local Parquet input with a date or time column (pandas'
    ``datetime64`` writes ``timestamp[ns]``, which Spark cannot even read): features are numbers,
    and no time column can be one silently."""
    files = local_files(location)
    if not files:
        return
    import pyarrow as pa

    try:
        schema = parquet_schema(files[0])
    except (OSError, ValueError):
        return
    timed = [field.name for field in schema
             if pa.types.is_timestamp(field.type) or pa.types.is_date(field.type) or pa.types.is_time(field.type)
             or pa.types.is_duration(field.type)]
    if timed:
        raise InvalidInputError(
            f"column(s) {timed} of {location} hold dates or times ({schema.field(timed[0]).type}): sparkfs reads "
            "numeric features; drop them, or cast them to numbers (e.g. seconds since 1970) before writing the file")


def unreadable_parquet_message(path: str, error: BaseException) -> Optional[str]:
    """The message of a Parquet input Spark refuses to read for a column type (a URI input, which
    :func:`check_parquet_types` cannot look at first); None for any other error."""
    text = str(error)
    if "PARQUET_TYPE_ILLEGAL" not in text and "PARQUET_TYPE_NOT_SUPPORTED" not in text:
        return None
    detail = text.split("\n")[0][:200]
    return (f"{path} has a column type Spark cannot read ({detail}); a pandas datetime64 column is the usual "
            "cause: drop it, or cast it to numbers before writing the file")
