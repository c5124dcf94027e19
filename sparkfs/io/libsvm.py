"""Our LIBSVM/SVMlight reader: the Spark passes around one line rule, used by the check and the parse.

The line rule (what a line may hold, and its parse) is :mod:`sparkfs.io.libsvm_lines`.

Why our own reader: Spark's ``spark.read.format("libsvm")`` refuses tabs, comments and ``qid:``
with a raw ``Py4JJavaError`` and no line number, and sizes every vector by the largest index it
finds, unbounded (one index 2147483647 in a 60-row file grew the driver to 21 GB). Here
:func:`~sparkfs.io.libsvm_lines.parse_lines` is the only rule of what a line may hold.

Each line is parsed once (twice on an unusual file). Two passes, both on the DataFrame API
(``spark.read.text``, so Spark Connect runs them too); only the second one parses:

1. **The size guess** (:func:`guess_size`, in the JVM, no Python, one aggregate without a
   shuffle): the largest index of each line's last space-separated token. On a file whose lines
   end with their last feature (what Spark, scikit-learn and sparkfs write) it is the vector size,
   at the cost of a bare ``count()`` of the text. The driver checks it against the driver budget.
   With an explicit vector size (``--vector-size``, checked against the budget first) there is no
   guess: the parse refuses an index above it.
2. **Parse** (:func:`_parse_partition`, ``mapInArrow``): every line parsed once, emitting
   ``label`` (double), a SparseVector column and each batch's largest index; a file block
   (``_metadata.file_path`` and ``file_block_start``) with a bad line emits one row naming its
   first bad line instead, by its number within the block; only then does the driver count the
   lines of each block (:func:`block_first_lines`), so line numbers are exact for any split of the
   files. The result is persisted (``MEMORY_AND_DISK``) and the one action that fills the cache
   also counts the data lines, takes the largest index and the first bad line (an ``Observation``
   on the parse, so the frame returned is the persisted one and each read its own plan), so a bad
   file is refused (the first bad line of the first file, with its number) before
   :func:`read_libsvm` returns, and every later pass of a selector reads the parsed rows from the
   cache instead of the text. ``mapInArrow`` returns a VectorUDT column as its Arrow struct ``(type, size,
   indices, values)`` (checked on pyspark 4.x), so no RDD is needed.

The guess is wrong only on lines that end otherwise: a comment (its last token may look like
an index), a tab before the last feature, blanks after it. The parse's largest index is the
truth: when it differs from the guess, the cache is dropped and the lines are parsed again with
that size (checked against the budget first). A guess of no index or above the bound is
replaced by the exact scan (:func:`scan_lines`: the largest last index of the lines with the
comments cut and every blank counted, JVM string functions that cost about a parse).

A file the scan cannot size (an index above the budget's bound or above 2147483647, or no
index at all) is refused from :func:`check_libsvm`, a parse that only summarises (the first bad
line, else the line of the largest index): that refusal names its line too, and costs a
parse only on the way to an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urlparse

import numpy as np

from sparkfs.errors import InvalidInputError
from sparkfs.io.libsvm_lines import FORMAT, MAX_INDEX, LineProblem, ParsedLines, parse_or_locate

DOUBLES_PER_FEATURE = 8        # dense per-feature state counted by the size bound (module notes)
DEFAULT_DRIVER_BUDGET_MB = 1024.0


# --------------------------------------------------------------------------------------------
# Spark passes
# --------------------------------------------------------------------------------------------

#: One summary row per file block of the check pass, as (name, type).
_CHECK_COLUMNS = (("file", "string"), ("start", "long"), ("lines", "long"), ("rows", "long"), ("max_index", "long"),
                  ("max_line", "long"), ("error_line", "long"), ("error", "string"))
_CHECK_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in _CHECK_COLUMNS)


def block_runs(batch) -> List[Tuple[int, int]]:
    """(begin, end) of the stretches of a batch that come from one file block."""
    import pyarrow.compute as pc

    n = batch.num_rows
    if n < 2:
        return [(0, n)] if n else []
    files, starts = batch.column("file"), batch.column("start")
    change = pc.or_(pc.not_equal(files.slice(1), files.slice(0, n - 1)),
                    pc.not_equal(starts.slice(1), starts.slice(0, n - 1))).to_numpy(zero_copy_only=False)
    bounds = [0, *(np.flatnonzero(change) + 1).tolist(), n]
    return list(zip(bounds[:-1], bounds[1:]))


def _check_partition(batches, vector_size: Optional[int]):
    """One summary row per file block of the partition (module notes, pass 1)."""
    import pyarrow as pa

    blocks: Dict[Tuple[str, int], dict] = {}
    for batch in batches:
        values = batch.column("value")
        for begin, end in block_runs(batch):
            key = (batch.column("file")[begin].as_py(), batch.column("start")[begin].as_py())
            block = blocks.setdefault(key, {"lines": 0, "rows": 0, "max_index": 0, "max_line": None,
                                            "error_line": None, "error": None})
            seen, block["lines"] = block["lines"], block["lines"] + end - begin
            if block["error"] is not None:
                continue
            try:
                parsed = parse_or_locate(values.slice(begin, end - begin), vector_size)
            except LineProblem as problem:
                block["error_line"], block["error"] = seen + problem.position + 1, problem.message
                continue
            block["rows"] += len(parsed.labels)
            if parsed.indices.size and int(parsed.indices.max()) + 1 > block["max_index"]:
                at = int(np.argmax(parsed.indices))
                row = int(np.searchsorted(parsed.offsets, at, side="right")) - 1
                block["max_index"], block["max_line"] = int(parsed.indices[at]) + 1, seen + int(parsed.lines[row]) + 1
    columns = {"file": [k[0] for k in blocks], "start": [k[1] for k in blocks]}
    columns.update({name: [block[name] for block in blocks.values()] for name, _ in _CHECK_COLUMNS[2:]})
    types = {"long": pa.int64(), "string": pa.string()}
    yield pa.RecordBatch.from_arrays([pa.array(columns[name], types[kind]) for name, kind in _CHECK_COLUMNS],
                                     names=[name for name, _ in _CHECK_COLUMNS])


#: The parse's columns after the label and the vector: each batch's largest index, then where a
#: block's first bad line is (null on vector rows), as (name, type): one list for both schemas.
_PARSE_COLUMNS = (("max_index", "long"), ("error", "string"), ("error_file", "string"), ("error_start", "long"),
                  ("error_line", "long"))


def _batch_schema(names: Tuple[str, str]):
    """The Arrow schema of the parse's output: label, vector struct (VectorUDT's), ``_PARSE_COLUMNS``."""
    import pyarrow as pa

    vector = pa.struct([("type", pa.int8()), ("size", pa.int32()), ("indices", pa.list_(pa.int32())),
                        ("values", pa.list_(pa.float64()))])
    types = {"long": pa.int64(), "string": pa.string()}
    return pa.schema([(names[0], pa.float64()), (names[1], vector),
                      *((name, types[kind]) for name, kind in _PARSE_COLUMNS)])


def _spark_schema(names: Tuple[str, str]):
    """The same columns as :func:`_batch_schema` as Spark declares them (the vector a VectorUDT)."""
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    types = {"long": LongType(), "string": StringType()}
    return StructType([StructField(names[0], DoubleType()), StructField(names[1], VectorUDT()),
                       *(StructField(name, types[kind]) for name, kind in _PARSE_COLUMNS)])


def _vector_batch(parsed: ParsedLines, size: int, largest: int, names: Tuple[str, str]):
    """label + SparseVector struct + the batch's largest index on its first row (+ null error
    columns) of parsed lines, as an Arrow batch."""
    import pyarrow as pa

    n = len(parsed.labels)
    offsets = pa.array(parsed.offsets.astype(np.int32))
    vectors = pa.StructArray.from_arrays(
        [pa.array(np.zeros(n, dtype=np.int8)), pa.array(np.full(n, size, dtype=np.int32)),
         pa.ListArray.from_arrays(offsets, pa.array(parsed.indices)),
         pa.ListArray.from_arrays(offsets, pa.array(parsed.values))],
        names=["type", "size", "indices", "values"])
    largest_column = pa.array(np.full(n, largest, dtype=np.int64), mask=np.arange(n) > 0)
    return pa.RecordBatch.from_arrays([pa.array(parsed.labels), vectors, largest_column, pa.nulls(n, pa.string()),
                                       pa.nulls(n, pa.string()), pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64())],
                                      schema=_batch_schema(names))


def _error_batch(names: Tuple[str, str], file: str, start: int, line: int, message: str):
    import pyarrow as pa

    schema = _batch_schema(names)
    columns = [pa.nulls(1, schema.field(0).type), pa.nulls(1, schema.field(1).type), pa.nulls(1, pa.int64()),
               pa.array([message]), pa.array([file]), pa.array([start], pa.int64()), pa.array([line], pa.int64())]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _parse_partition(batches, size: int, explicit_size: bool, names: Tuple[str, str]):
    """The parse (module notes, pass 2): vectors of the data lines, or one error row per block
    naming its first bad line (its number within the block: the driver adds the file's earlier blocks).

    Each vector batch carries its largest index (1-based; 0 when it has none) in ``max_index`` on
    its first row. With an inferred size, a batch with an index at or above ``size`` takes its own
    largest index as the size of its vectors (valid vectors, which the driver then discards: the
    size was a guess, and the parse is run again with the size it found).
    """
    seen_lines: Dict[Tuple[str, int], int] = {}
    failed = set()
    for batch in batches:
        values = batch.column("value")
        for begin, end in block_runs(batch):
            key = (batch.column("file")[begin].as_py(), batch.column("start")[begin].as_py())
            seen = seen_lines.get(key, 0)
            seen_lines[key] = seen + end - begin
            if key in failed:
                continue
            lines = values.slice(begin, end - begin)
            try:
                parsed = parse_or_locate(lines, size if explicit_size else None)
            except LineProblem as problem:
                failed.add(key)
                yield _error_batch(names, key[0], key[1], seen + problem.position + 1, problem.message)
                continue
            largest = int(parsed.indices.max()) + 1 if parsed.indices.size else 0
            yield _vector_batch(parsed, max(size, largest), largest, names)


def _last_index(value):
    """The index of a line's last ``index:value`` token (null if it has none or it is no number):
    JVM string functions only, so the scan sends no text to Python."""
    from pyspark.sql import functions as F

    # Each function copies the line: the comment cut and the whitespace mapping only where needed
    # (the text reader's lines hold no line ends).
    text = F.when(F.instr(value, "#") > 0, F.substring_index(value, "#", 1)).otherwise(value)
    other_blanks = (F.instr(text, "\t") > 0) | (F.instr(text, "\f") > 0) | (F.instr(text, "\u000b") > 0)
    text = F.rtrim(F.when(other_blanks, F.translate(text, "\t\f\u000b", "   ")).otherwise(text))
    last = F.substring_index(text, " ", -1)          # "" exactly when the line holds no token
    index = F.substring_index(last, ":", 1).try_cast("long")
    return F.when(F.instr(last, ":") > 1, index), last != ""


def _text_blocks(spark, path: str):
    from pyspark.sql import functions as F

    return spark.read.text(path).select(
        "value", F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_block_start").alias("start"))


def scan_lines(lines) -> Tuple[int, int]:
    """The scan (module notes, pass 1) of ``_text_blocks``: (data lines, largest last index, 0 if
    none), one aggregate with no shuffle."""
    from pyspark.sql import functions as F

    index, is_data = _last_index(F.col("value"))
    found = lines.agg(F.sum(is_data.cast("long")).alias("rows"), F.max(index).alias("max_index")).first()
    return found["rows"] or 0, found["max_index"] or 0


def guess_size(lines) -> int:
    """The largest index of the lines' last tokens split at spaces, 0 if none: the vector size of
    a file whose lines end with their last feature (a file Spark, scikit-learn or sparkfs wrote).

    A guess, for no line is checked and the token may be a comment's or stop short of a tab: the
    parse finds the true size and :func:`read_libsvm` parses again when they differ. It costs
    about a bare ``count()`` of the text, where :func:`scan_lines` costs about a parse.
    """
    from pyspark.sql import functions as F

    last = F.substring_index(F.col("value"), " ", -1)
    index = F.when(F.instr(last, ":") > 1, F.substring_index(last, ":", 1).try_cast("long"))
    return lines.agg(F.max(index).alias("max_index")).first()["max_index"] or 0


def _first_lines(blocks) -> Dict[Tuple[str, int], int]:
    """(file, block start) -> the lines of the same file's earlier blocks, from rows holding each
    block's ``file``, ``start`` and ``lines``: a line's number within its block becomes its number
    in the file."""
    first_line: Dict[Tuple[str, int], int] = {}
    for file in sorted({block["file"] for block in blocks}):
        before = 0
        for block in sorted((b for b in blocks if b["file"] == file), key=lambda b: b["start"]):
            first_line[(file, block["start"])] = before
            before += block["lines"]
    return first_line


def block_first_lines(lines) -> Dict[Tuple[str, int], int]:
    """:func:`_first_lines` of the text's blocks (one aggregate, on the way to a refusal)."""
    from pyspark.sql import functions as F

    return _first_lines(lines.groupBy("file", "start").agg(F.count(F.lit(1)).alias("lines")).collect())


def display_path(uri: str) -> str:
    """A local path for ``file:`` URIs (as the user typed it), the URI otherwise."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme in ("", "file") else uri


@dataclass
class LibsvmCheck:
    """What the check pass found: rows, largest index (0 if none) and where it first occurs."""

    rows: int
    max_index: int
    max_file: str
    max_line: int


def check_libsvm(spark, path: str, vector_size: Optional[int] = None) -> LibsvmCheck:
    """A parse that only summarises (the refusal path of :func:`read_libsvm`): the first bad line
    refused with its file and number, else the rows and the largest index with its line."""
    blocks = _text_blocks(spark, path).mapInArrow(partial(_check_partition, vector_size=vector_size),
                                                  _CHECK_SCHEMA).collect()
    first_line = _first_lines(blocks)
    errors = sorted((block["file"], first_line[(block["file"], block["start"])] + block["error_line"], block["error"])
                    for block in blocks if block["error"] is not None)
    if errors:
        file, line, message = errors[0]
        raise InvalidInputError(f"line {line} of {display_path(file)} is not LIBSVM ({FORMAT}): {message}")
    largest = sorted(((-block["max_index"], block["file"], first_line[(block["file"], block["start"])]
                       + block["max_line"]) for block in blocks if block["max_index"]))
    rows = sum(block["rows"] for block in blocks)
    if not largest:
        return LibsvmCheck(rows, 0, "", 0)
    return LibsvmCheck(rows, -largest[0][0], display_path(largest[0][1]), largest[0][2])


def size_bound(driver_budget_mb: float) -> int:
    """The largest vector size whose dense per-feature state fits the driver budget."""
    return int(driver_budget_mb * 2**20 // (8 * DOUBLES_PER_FEATURE))


def check_vector_size(size: int, where: str, driver_budget_mb: float, budget_name: str) -> None:
    """Refuse a vector size above :func:`size_bound`; ``where`` starts the message ("line 3 of F
    has index 9, which asks for")."""
    bound = size_bound(driver_budget_mb)
    if size <= bound:
        return
    needed_mb = size * 8 * DOUBLES_PER_FEATURE / 2**20
    raise InvalidInputError(
        f"{where} vectors of {size} features: their dense per-feature state on the driver ({DOUBLES_PER_FEATURE} "
        f"doubles per feature, {needed_mb:.0f} MiB) is above the driver budget of {driver_budget_mb:g} MiB, which "
        f"holds at most {bound} features. Either raise the budget ({budget_name}, and the driver's memory to match) "
        f"or use fewer features (renumbered so that the largest index is at most {bound}); an explicit --vector-size "
        "does not lift this bound")


def read_libsvm(spark, path: str, *, label_col: str = "label", features_col: str = "features",
                vector_size: Optional[int] = None, driver_budget_mb: float = DEFAULT_DRIVER_BUDGET_MB,
                budget_name: str = "driverBudgetMB") -> Tuple[object, int]:
    """(DataFrame of ``label_col`` double and ``features_col`` SparseVector, vector size).

    The size is ``vector_size`` when given (an index above it is refused), else the largest index.
    Either must fit :func:`size_bound` of the driver budget, checked before the driver holds any
    per-feature state. Every line is checked before this returns: the DataFrame is the persisted
    result of the parse (module notes; ``unpersist()`` it when done). Raises InvalidInputError
    naming the file and line.
    """
    if vector_size is not None:
        if isinstance(vector_size, bool) or not isinstance(vector_size, int) or not 1 <= vector_size <= MAX_INDEX:
            raise InvalidInputError(f"--vector-size must be a whole number from 1 to {MAX_INDEX}, got {vector_size!r}")
        check_vector_size(vector_size, f"--vector-size {vector_size} asks for", driver_budget_mb, budget_name)
    lines = _text_blocks(spark, path)
    names = (label_col, features_col)
    if vector_size is not None:
        return _parse_and_cache(lines, path, vector_size, True, names)[0], vector_size
    bound = size_bound(driver_budget_mb)
    size = guess_size(lines)
    if not 1 <= size <= bound:   # no line ends with an index, or a guess above the bound: the exact scan
        rows, size = scan_lines(lines)
        if not rows or not 1 <= size <= bound:
            _refuse_unsized(spark, path, vector_size, driver_budget_mb, budget_name)
    frame, found_size = _parse_and_cache(lines, path, size, False, names)
    if found_size != size:       # the guess was wrong (module notes): parse again with the size found
        frame.unpersist()
        if not 1 <= found_size <= bound:
            _refuse_unsized(spark, path, vector_size, driver_budget_mb, budget_name)
        size = found_size
        frame, _ = _parse_and_cache(lines, path, size, True, names)
    return frame, size


def _parse_and_cache(lines, path: str, size: int, explicit_size: bool, names: Tuple[str, str]):
    """(the persisted label and vectors, the largest index the parse found). The one action fills
    the cache; an ``Observation`` on the parse takes, in the same action, the data lines, the largest
    index and the first bad line (the least file, block and line), so the frame returned is the one
    persisted (its ``unpersist()`` frees it) and every read is its own plan (no cached rows of an
    earlier read of the same path). A bad line or no row is refused, the cache dropped first."""
    import uuid

    from pyspark import StorageLevel
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    schema = _spark_schema(names)
    parse = partial(_parse_partition, size=size, explicit_size=explicit_size, names=names)
    check = Observation(f"sparkfs-libsvm-{uuid.uuid4().hex}")
    error = F.struct("error_file", "error_start", "error_line", "error")
    observed = lines.mapInArrow(parse, schema).observe(
        check, F.count(names[0]).alias("rows"), F.max("max_index").alias("max_index"),
        F.min(F.when(F.col("error").isNotNull(), error)).alias("first_error"))
    frame = observed.select(names[0], F.col(names[1]).alias(names[1], metadata=sparse_vectors_metadata(size)))
    frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
    frame.count()
    found = check.get
    first_error = found["first_error"]
    if first_error is not None or not found["rows"]:
        frame.unpersist()
    if first_error is not None:
        file, start, line, message = first_error
        line += block_first_lines(lines)[(file, start)]
        raise InvalidInputError(f"line {line} of {display_path(file)} is not LIBSVM ({FORMAT}): {message}")
    if not found["rows"]:
        raise InvalidInputError(f"the input has no rows: {path}")
    return frame, found["max_index"] or 0


def sparse_vectors_metadata(size: int, **sparkfs_keys) -> dict:
    """The metadata of a vector column of SparseVectors only (the reader's, ``convert``'s): its size
    for Spark ML and ``{"sparkfs": {"vectors": "sparse"}}``, which ``statsEngine="auto"`` reads
    instead of looking at the first row (:func:`said_sparse`)."""
    return {"ml_attr": {"num_attrs": int(size)}, "sparkfs": {"vectors": "sparse", **sparkfs_keys}}


def said_sparse(metadata: dict) -> bool:
    """Whether a vector column's metadata says every vector is sparse (:func:`sparse_vectors_metadata`)."""
    said = metadata.get("sparkfs")
    return isinstance(said, dict) and said.get("vectors") == "sparse"


def _refuse_unsized(spark, path: str, vector_size: Optional[int], driver_budget_mb: float, budget_name: str):
    """The refusal of a file the scan could not size (no rows, no index, an index above the
    bound): a summarising parse names the first bad line, else the largest index and its line."""
    found = check_libsvm(spark, path, vector_size)
    if not found.rows:
        raise InvalidInputError(f"the input has no rows: {path}")
    if not found.max_index:
        raise InvalidInputError(f"the input has no index:value entry on any line, so no features: {path}")
    check_vector_size(found.max_index, f"line {found.max_line} of {found.max_file} has index {found.max_index}, "
                      "which asks for", driver_budget_mb, budget_name)
    raise AssertionError(f"the scan and the parse of {path} disagree")  # pragma: no cover
