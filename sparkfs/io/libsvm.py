"""Our LIBSVM/SVMlight reader: one line rule, used by the check and by the parser.

Format (SVMlight's, of which LIBSVM's is a subset)::

    <label> [qid:<int>] <index>:<value> <index>:<value> ... [# comment]

* tokens are separated by spaces or tabs (any run of ASCII whitespace);
* everything from the first ``#`` of a line is a comment; blank and comment-only lines are skipped;
* the label and the values are finite decimal numbers (``nan``, ``inf`` refused); ``qid:`` is read
  and dropped (no selector uses query groups);
* indices are 1-based, strictly increasing within a line (a repeated index is refused) and at most
  2147483647, the largest size of a Spark vector.

Why our own reader: Spark's ``spark.read.format("libsvm")`` refuses tabs, comments and ``qid:``
with a raw ``Py4JJavaError`` and no line number, and sizes every vector by the largest index it
finds, unbounded (one index 2147483647 in a 60-row file grew the driver to 21 GB). Here
:func:`parse_lines` is the only rule of what a line may hold.

Each line is parsed once. Two passes, both on the DataFrame API (``spark.read.text``, so Spark
Connect runs them too); only the second one parses:

1. **Scan** (:func:`scan_lines`, in the JVM, no Python, one aggregate without a shuffle): the
   data lines and the largest *last* index of a line (the last ``index:value`` token's index,
   which is the line's largest on a valid line, whose indices increase). The driver checks the
   largest index against the driver budget, before any vector exists. With an explicit vector
   size (``--vector-size``, checked against the budget first) there is no scan: the parse refuses
   an index above it and its action counts the data lines (on the S term corpus the scan is about
   half of the read).
2. **Parse** (:func:`_parse_partition`, ``mapInArrow``): every line parsed once, emitting
   ``label`` (double) and a SparseVector column; a file block (``_metadata.file_path`` and
   ``file_block_start``) with a bad line emits one row naming its first bad line instead, by its
   number within the block; only then does the driver count the lines of each block
   (:func:`block_first_lines`), so line numbers are exact for any split of the files. The
   result is persisted (``MEMORY_AND_DISK``) and the one action that fills the cache also
   counts the data lines and collects the bad lines, so a bad file is refused (the first bad line of the first file, with
   its number) before :func:`read_libsvm` returns, and every later
   pass of a selector reads the parsed rows from the cache instead of the text. ``mapInArrow``
   returns a VectorUDT column as its Arrow struct ``(type, size, indices, values)`` (checked on
   pyspark 4.x), so no RDD is needed.

A file the scan cannot size (an index above the budget's bound or above 2147483647, or no
index at all) is refused from :func:`check_libsvm`, a parse that only summarises (the first bad
line, else the line of the largest index): that refusal names its line too, and costs a
parse only on the way to an error.

The parse is vectorised with Arrow compute kernels (split, cast) and NumPy; a batch that fails
is bisected to its first bad line, whose message comes from parsing that line alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Dict, List, Optional, Tuple
from urllib.parse import unquote, urlparse

import numpy as np

from sparkfs.errors import InvalidInputError

FORMAT = "label [qid:N] index:value ... [# comment]"
MAX_INDEX = 2**31 - 1          # a Spark vector's size is a Java int
DOUBLES_PER_FEATURE = 8        # dense per-feature state counted by the size bound (module notes)
DEFAULT_DRIVER_BUDGET_MB = 1024.0


class LineProblem(ValueError):
    """A line that does not parse: its 0-based position in the parsed array and the reason."""

    def __init__(self, position: int, message: str):
        super().__init__(message)
        self.position = position
        self.message = message


@dataclass
class ParsedLines:
    """The data lines of an array of text lines (blank and comment lines dropped)."""

    lines: np.ndarray     # 0-based positions of the data lines in the parsed array
    labels: np.ndarray    # float64, one per data line
    offsets: np.ndarray   # int64, row r's entries are indices[offsets[r]:offsets[r + 1]]
    indices: np.ndarray   # int32, 0-based
    values: np.ndarray    # float64


def _text(strings, position: int) -> str:
    """Element ``position`` of an Arrow string array as text, bytes that are not UTF-8 replaced
    (Spark's text reader passes any bytes through), cut to 60 characters for a message."""
    import pyarrow as pa

    text = strings.slice(position, 1).cast(pa.binary())[0].as_py().decode("utf-8", "replace")
    return text if len(text) <= 60 else text[:60] + "..."


def _first_cast_failure(strings, arrow_type) -> Tuple[object, Optional[int]]:
    """(cast array, None), or (None, position of the first element that does not cast)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        return pc.cast(strings, arrow_type), None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        low, high = 0, len(strings)   # the prefix of length low casts, the one of length high does not
        while high - low > 1:
            middle = (low + high) // 2
            try:
                pc.cast(strings.slice(0, middle), arrow_type)
                low = middle
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                high = middle
        return None, high - 1


def _numbers(strings, token_lines, what, tokens=None) -> np.ndarray:
    """Finite float64 of ``strings``, or LineProblem at the first that is not a finite number."""
    import pyarrow as pa

    cast, bad = _first_cast_failure(strings, pa.float64())
    if bad is None:
        numbers = cast.to_numpy(zero_copy_only=False)
        finite = np.isfinite(numbers)
        if finite.all():
            return numbers
        bad, kind = int(np.argmin(finite)), "a finite number"
    else:
        kind = "a number"
    text = _text(strings, bad)
    where = f"{_text(tokens, bad)!r}: " if tokens is not None else ""
    raise LineProblem(int(token_lines[bad]), f"{where}the {what} {text!r} is not {kind}")


def _strip_comments(lines):
    import pyarrow.compute as pc

    if not pc.any(pc.match_substring(lines, "#")).as_py():
        return lines
    return pc.list_element(pc.split_pattern(lines, "#", max_splits=1), 0)


def parse_lines(lines, vector_size: Optional[int] = None) -> ParsedLines:
    """Parse an Arrow array of text lines; raise :class:`LineProblem` at a bad line.

    The one LIBSVM rule of sparkfs (module notes). ``vector_size``, when given, is the largest
    index allowed. The position of the LineProblem is a bad line, not necessarily the first:
    :func:`parse_or_locate` finds the first.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_large_string(lines.type):   # the byte-level split below reads 32-bit offsets
        lines = lines.cast(pa.string())
    text = pc.ascii_trim_whitespace(_strip_comments(lines))
    is_data = pc.not_equal(text, "").to_numpy(zero_copy_only=False)
    positions = np.flatnonzero(is_data)
    tokens = pc.ascii_split_whitespace(text.filter(pc.not_equal(text, "")))
    flat = tokens.flatten()
    offsets = np.asarray(tokens.offsets, dtype=np.int64)
    offsets -= offsets[0]
    counts = np.diff(offsets)
    labels = _numbers(flat.take(offsets[:-1]), positions, "label")

    is_feature = np.ones(len(flat), dtype=bool)
    is_feature[offsets[:-1]] = False
    second = offsets[:-1][counts >= 2] + 1
    is_qid = pc.starts_with(flat.take(second), "qid:").to_numpy(zero_copy_only=False)
    has_qid = np.zeros(len(counts), dtype=bool)
    has_qid[counts >= 2] = is_qid
    if is_qid.any():
        qid_tokens = flat.take(second[is_qid])
        _, bad = _first_cast_failure(pc.utf8_slice_codeunits(qid_tokens, 4), pa.int64())
        if bad is not None:
            raise LineProblem(int(positions[np.flatnonzero(has_qid)[bad]]),
                              f"{_text(qid_tokens, bad)!r}: qid must be a whole number")
        is_feature[second[is_qid]] = False
    row_of_token = np.repeat(np.arange(len(counts)), counts - 1 - has_qid)
    token_lines = positions[row_of_token]
    features = flat.filter(is_feature)
    indices, value_text = _split_features(features, token_lines, vector_size)
    values = _numbers(value_text, token_lines, "value", tokens=features)
    _check_increasing(indices, row_of_token, token_lines, features)
    row_offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts - 1 - has_qid, out=row_offsets[1:])
    return ParsedLines(positions, labels, row_offsets, (indices - 1).astype(np.int32), values)


def _token_bytes(strings) -> Tuple[np.ndarray, np.ndarray]:
    """(bytes, offsets) of an Arrow string array: element i is bytes[offsets[i]:offsets[i + 1]]."""
    offsets = np.frombuffer(strings.buffers()[1], dtype=np.int32)[strings.offset:strings.offset + len(strings) + 1]
    data = strings.buffers()[2]
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    return data[offsets[0]:offsets[-1]], (offsets - offsets[0]).astype(np.int64)


def _pieces(data, inside, lengths):
    """An Arrow string array of the bytes of ``data`` where ``inside`` holds, cut by ``lengths``."""
    import pyarrow as pa

    offsets = np.zeros(len(lengths) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    kept = data[inside]
    return pa.StringArray.from_buffers(len(lengths), pa.py_buffer(offsets), pa.py_buffer(kept)), kept, offsets


def _split_features(features, token_lines, vector_size: Optional[int]) -> Tuple[np.ndarray, object]:
    """(1-based int64 indices, value strings) of ``index:value`` tokens; the indices checked
    (whole numbers, 1 to the vector size). The split is done on the bytes, with NumPy: every byte
    of a token is in its index, its colon or its value."""
    import pyarrow as pa

    data, offsets = _token_bytes(features)
    is_colon = data == ord(":")
    colons = np.flatnonzero(is_colon)
    if len(colons) != len(features) or np.any(colons < offsets[:-1]) or np.any(colons >= offsets[1:]):
        colon_counts = np.bincount(np.searchsorted(offsets, colons, side="right") - 1, minlength=len(features))
        bad = int(np.argmax(colon_counts != 1))
        raise LineProblem(int(token_lines[bad]), f"{_text(features, bad)!r} is not index:value")
    markers = np.zeros(len(data) + 1, dtype=np.int8)
    markers[offsets[:-1]] += 1
    markers[colons] -= 1
    in_index = np.cumsum(markers[:-1], dtype=np.int8).view(bool)
    index_text, digits, digit_offsets = _pieces(data, in_index, colons - offsets[:-1])
    lengths = np.diff(digit_offsets)
    not_digit = (digits - np.uint8(ord("0"))) > 9
    bad_tokens = (lengths == 0) | (lengths > 10)
    if not_digit.any():
        bad_tokens[np.searchsorted(digit_offsets, np.flatnonzero(not_digit), side="right") - 1] = True
    if bad_tokens.any():
        bad = int(np.argmax(bad_tokens))
        text = _text(index_text, bad)
        problem = f"index {text} is above {MAX_INDEX}, the largest size of a Spark vector" \
            if text.isdigit() and text.isascii() else f"the index {text!r} is not a whole number"
        raise LineProblem(int(token_lines[bad]), f"{_text(features, bad)!r}: {problem}")
    indices = index_text.cast(pa.int64()).to_numpy(zero_copy_only=False)
    limit = MAX_INDEX if vector_size is None else int(vector_size)
    out_of_range = (indices < 1) | (indices > limit)
    if out_of_range.any():
        bad = int(np.argmax(out_of_range))
        index = int(indices[bad])
        if index < 1:
            problem = (f"index {index}: indices are 1-based (LIBSVM's and Spark's convention; a file from "
                       "scikit-learn's dump_svmlight_file is 0-based unless written with zero_based=False: write "
                       "it so, or add 1 to every index)")
        elif vector_size is None:
            problem = f"index {index} is above {MAX_INDEX}, the largest size of a Spark vector"
        else:
            problem = f"index {index} is above the vector size {vector_size} (--vector-size)"
        raise LineProblem(int(token_lines[bad]), f"{_text(features, bad)!r}: {problem}")
    in_value = ~(in_index | is_colon)
    value_text, _, _ = _pieces(data, in_value, offsets[1:] - colons - 1)
    return indices, value_text


def _check_increasing(indices, row_of_token, token_lines, features) -> None:
    same_row = row_of_token[1:] == row_of_token[:-1]
    bad = np.flatnonzero(same_row & (indices[1:] <= indices[:-1]))
    if bad.size:
        at = int(bad[0]) + 1
        previous, index = int(indices[at - 1]), int(indices[at])
        detail = f"index {index} appears twice" if index == previous else f"{index} after {previous}"
        raise LineProblem(int(token_lines[at]),
                          f"{_text(features, at)!r}: indices must be 1-based and increasing ({detail})")


def parse_or_locate(lines, vector_size: Optional[int] = None) -> ParsedLines:
    """:func:`parse_lines`, whose LineProblem names the FIRST bad line (bisection over prefixes,
    then that line parsed alone for its message)."""
    try:
        return parse_lines(lines, vector_size)
    except LineProblem:
        pass
    low, high = 0, len(lines)     # the first `low` lines parse, the first `high` do not
    while high - low > 1:
        middle = (low + high) // 2
        try:
            parse_lines(lines.slice(0, middle), vector_size)
            low = middle
        except LineProblem:
            high = middle
    try:
        parse_lines(lines.slice(high - 1, 1), vector_size)
    except LineProblem as problem:
        raise LineProblem(high - 1, problem.message) from None
    raise AssertionError("a prefix failed but its last line parses alone")  # pragma: no cover


# --------------------------------------------------------------------------------------------
# Spark passes
# --------------------------------------------------------------------------------------------

_CHECK_SCHEMA = ("file string, start long, lines long, rows long, max_index long, max_line long, "
                 "error_line long, error string")


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
    for name in ("lines", "rows", "max_index", "max_line", "error_line", "error"):
        columns[name] = [block[name] for block in blocks.values()]
    types = [pa.string(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.int64(), pa.string()]
    yield pa.RecordBatch.from_arrays([pa.array(columns[name], type) for name, type in zip(columns, types)],
                                     names=list(columns))


def _batch_schema(names: Tuple[str, str]):
    """The Arrow schema of the parse's output: label, vector struct, and the error columns."""
    import pyarrow as pa

    vector = pa.struct([("type", pa.int8()), ("size", pa.int32()), ("indices", pa.list_(pa.int32())),
                        ("values", pa.list_(pa.float64()))])
    return pa.schema([(names[0], pa.float64()), (names[1], vector), ("error", pa.string()),
                      ("error_file", pa.string()), ("error_start", pa.int64()), ("error_line", pa.int64())])


def _vector_batch(parsed: ParsedLines, size: int, names: Tuple[str, str]):
    """label + SparseVector struct (+ null error columns) of parsed lines, as an Arrow batch."""
    import pyarrow as pa

    n = len(parsed.labels)
    offsets = pa.array(parsed.offsets.astype(np.int32))
    vectors = pa.StructArray.from_arrays(
        [pa.array(np.zeros(n, dtype=np.int8)), pa.array(np.full(n, size, dtype=np.int32)),
         pa.ListArray.from_arrays(offsets, pa.array(parsed.indices)),
         pa.ListArray.from_arrays(offsets, pa.array(parsed.values))],
        names=["type", "size", "indices", "values"])
    return pa.RecordBatch.from_arrays([pa.array(parsed.labels), vectors, pa.nulls(n, pa.string()),
                                       pa.nulls(n, pa.string()), pa.nulls(n, pa.int64()), pa.nulls(n, pa.int64())],
                                      schema=_batch_schema(names))


def _error_batch(names: Tuple[str, str], file: str, start: int, line: int, message: str):
    import pyarrow as pa

    schema = _batch_schema(names)
    columns = [pa.nulls(1, schema.field(0).type), pa.nulls(1, schema.field(1).type),
               pa.array([message]), pa.array([file]), pa.array([start], pa.int64()), pa.array([line], pa.int64())]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _parse_partition(batches, size: int, explicit_size: bool, names: Tuple[str, str]):
    """The parse (module notes, pass 2): vectors of the data lines, or one error row per block
    naming its first bad line (its number within the block: the driver adds the file's earlier blocks).

    With an inferred size the line's own indices are checked (increasing, so its last is its
    largest, the one the scan saw): the size check then cannot fire first with a misleading
    "above the vector size".
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
                if parsed.indices.size and int(parsed.indices.max()) >= size:  # pragma: no cover
                    raise AssertionError("an index above the largest last index of the lines")
            except LineProblem as problem:
                failed.add(key)
                yield _error_batch(names, key[0], key[1], seen + problem.position + 1, problem.message)
                continue
            yield _vector_batch(parsed, size, names)


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


def block_first_lines(lines) -> Dict[Tuple[str, int], int]:
    """(file, block start) -> the lines of the same file's earlier blocks (on the way to a refusal:
    a bad line's number within its block becomes its number in the file)."""
    from pyspark.sql import functions as F

    blocks = lines.groupBy("file", "start").agg(F.count(F.lit(1)).alias("lines")).collect()
    first_line: Dict[Tuple[str, int], int] = {}
    for file in sorted({block["file"] for block in blocks}):
        before = 0
        for block in sorted((b for b in blocks if b["file"] == file), key=lambda b: b["start"]):
            first_line[(file, block["start"])] = before
            before += block["lines"]
    return first_line


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
    first_line: Dict[Tuple[str, int], int] = {}
    for file in sorted({block["file"] for block in blocks}):
        before = 0
        for block in sorted((b for b in blocks if b["file"] == file), key=lambda b: b["start"]):
            first_line[(file, block["start"])] = before
            before += block["lines"]
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
    Either must fit :func:`size_bound` of the driver budget, checked before any vector is built.
    Every line is checked before this returns: the DataFrame is the persisted result of the one
    parse (module notes; ``unpersist()`` it when done). Raises InvalidInputError naming the file
    and line.
    """
    from pyspark import StorageLevel
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    if vector_size is not None:
        if isinstance(vector_size, bool) or not isinstance(vector_size, int) or not 1 <= vector_size <= MAX_INDEX:
            raise InvalidInputError(f"--vector-size must be a whole number from 1 to {MAX_INDEX}, got {vector_size!r}")
        check_vector_size(vector_size, f"--vector-size {vector_size} asks for", driver_budget_mb, budget_name)
    lines = _text_blocks(spark, path)
    if vector_size is None:  # the scan sizes the vectors; an explicit size needs none (the parse checks it)
        rows, max_index = scan_lines(lines)
        if not rows or not 1 <= max_index <= size_bound(driver_budget_mb):
            _refuse_unsized(spark, path, vector_size, driver_budget_mb, budget_name)
    size = vector_size or max_index
    schema = StructType([StructField(label_col, DoubleType()), StructField(features_col, VectorUDT()),
                         StructField("error", StringType()), StructField("error_file", StringType()),
                         StructField("error_start", LongType()), StructField("error_line", LongType())])
    parse = partial(_parse_partition, size=size, explicit_size=vector_size is not None,
                    names=(label_col, features_col))
    parsed = lines.mapInArrow(parse, schema).persist(StorageLevel.MEMORY_AND_DISK)
    from pyspark.sql import functions as F

    # one action fills the cache, counts the data lines and collects the bad blocks' first bad lines
    error = F.struct("error_file", "error_start", "error_line", "error")
    found = parsed.agg(F.count(label_col).alias("rows"),
                       F.collect_list(F.when(F.col("error").isNotNull(), error)).alias("errors")).first()
    errors = found["errors"]
    if not errors and not found["rows"]:
        parsed.unpersist()
        raise InvalidInputError(f"the input has no rows: {path}")
    if errors:
        parsed.unpersist()
        first_line = block_first_lines(lines)
        file, line, message = min((row["error_file"], first_line[(row["error_file"], row["error_start"])]
                                   + row["error_line"], row["error"]) for row in errors)
        raise InvalidInputError(f"line {line} of {display_path(file)} is not LIBSVM ({FORMAT}): {message}")
    # the size in Spark ML's attribute metadata (as Spark's own LIBSVM source writes it): the fits
    # read it there instead of running a job for the first row's size
    sized = F.col(features_col).alias(features_col, metadata={"ml_attr": {"num_attrs": int(size)}})
    return parsed.select(label_col, sized), size


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
