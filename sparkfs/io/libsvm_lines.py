"""The LIBSVM/SVMlight line rule: what a line may hold, parsed in Arrow and NumPy (no Spark).

Format (SVMlight's, of which LIBSVM's is a subset)::

    <label> [qid:<int>] <index>:<value> <index>:<value> ... [# comment]

* tokens are separated by spaces or tabs (any run of ASCII whitespace);
* everything from the first ``#`` of a line is a comment; blank and comment-only lines are skipped;
* the label and the values are finite decimal numbers (``nan``, ``inf`` refused); ``qid:`` is read
  and dropped (no selector uses query groups);
* indices are 1-based, strictly increasing within a line (a repeated index is refused) and at most
  2147483647, the largest size of a Spark vector.

The parse is vectorised with Arrow compute kernels (split, cast) and NumPy; a batch that fails
is bisected to its first bad line, whose message comes from parsing that line alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

FORMAT = "label [qid:N] index:value ... [# comment]"
MAX_INDEX = 2**31 - 1          # a Spark vector's size is a Java int
#: What an index above an explicit vector size is said to exceed (a caller that sets the size another way
#: names its own source in its place).
SIZE_FLAG = "(--vector-size)"


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


def _first_cast_failure(strings, arrow_type) -> Tuple[Any, Optional[int]]:
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
            problem = f"index {index} is above the vector size {vector_size} {SIZE_FLAG}"
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
