"""The files of a local input, checked before Spark starts: that there are data files (a glob,
``dir/*.libsvm``, is expanded as Spark expands it: :func:`glob_matches`), that every gzip file is whole,
that the part files of a Parquet directory are Parquet and agree on their columns; a text file whose
last line has no line end (a row cut in the middle reads as a shorter row) is announced.

Why before Spark: Spark meets each of these only inside a task of the first job, and reports it with
a Java trace of dozens of lines and exit 1 (``FAILED_READ_FILE``, ``UNABLE_TO_INFER_SCHEMA``,
``PARQUET_COLUMN_DATA_TYPE_MISMATCH``), or not at all: a column missing from one part file is read
as null in every row of that file, which the NaN rule then counts without naming the column or the
file. Here each is refused naming the file (:class:`sparkfs.errors.InvalidInputError`, exit 2).

What it costs: a listing of the input, each Parquet file's footer (the schema only, read by
pyarrow), and one decompression of every ``.gz`` file on the driver (zlib, about 200 MB of text a
second, no line parsed): gzip has no index, so only reading to its end marker proves a file whole.

A URI input (``hdfs://``, ``s3a://``) is not looked at here: the same problems are named from
Spark's failure instead (:func:`sparkfs.spark.failures.input_file_failure`).
"""

from __future__ import annotations

import glob
import logging
import os
import zlib
from functools import partial
from typing import Dict, List, Optional, Tuple

from sparkfs.errors import InvalidInputError
from sparkfs.io.stores import Location, location_of

#: Spark skips files and folders whose names start with these (``_SUCCESS``, ``.part-0.crc``).
HIDDEN = ("_", ".")
_PARQUET_MAGIC = b"PAR1"
_GZIP_READ_BYTES = 1 << 20
_GZIP_WBITS = zlib.MAX_WBITS | 16      # a gzip header and trailer
log = logging.getLogger("sparkfs")


#: The characters of a Hadoop glob (Spark's readers expand them): ``*``, ``?``, ``[0-2]``, ``{a,b}``.
GLOB_CHARACTERS = "*?[{"


def is_glob(path: str) -> bool:
    """Whether an input path is a pattern Spark's readers expand (``dir/*.libsvm``, ``part-0[0-2].csv``)."""
    return any(character in str(path) for character in GLOB_CHARACTERS)


def _braces(pattern: str) -> List[str]:
    """``a{b,c}d`` -> ``[abd, acd]`` (Hadoop's alternatives, which Python's glob does not know)."""
    opening = pattern.find("{")
    closing = pattern.find("}", opening)
    if opening < 0 or closing < 0:
        return [pattern]
    head, choices, tail = pattern[:opening], pattern[opening + 1:closing].split(","), pattern[closing + 1:]
    return [expanded for choice in choices for expanded in _braces(head + choice + tail)]


def glob_matches(location: Location) -> Optional[List[str]]:
    """The local paths a glob input matches, sorted (hidden names left out, as Spark leaves them);
    None for a path that is no glob or a URI of another file system."""
    if location.local is None or not is_glob(location.text):
        return None
    matches = {match for pattern in _braces(location.local) for match in glob.glob(pattern)}
    return sorted(match for match in matches if not os.path.basename(match).startswith(HIDDEN))


def data_files(location: Location) -> Optional[List[str]]:
    """The files Spark reads of a local file, directory (recursing into Hive partition folders,
    ``key=value``) or glob, sorted; None for a URI or a path that does not exist."""
    matches = glob_matches(location)
    if matches is not None:
        return sorted(file for match in matches for file in (data_files(location_of(match)) or []))
    local = location.local
    if local is None or not os.path.exists(local):
        return None
    if not os.path.isdir(local):
        return [local]
    found = []
    for folder, folders, names in os.walk(local):
        folders[:] = sorted(name for name in folders if "=" in name and not name.startswith(HIDDEN))
        found += [os.path.join(folder, name) for name in names if not name.startswith(HIDDEN)]
    return sorted(found)


def partition_folders(location: Location) -> bool:
    """Whether a local directory input holds Hive partition folders (``year=2020/``)."""
    local = location.local
    return bool(local and os.path.isdir(local)
                and any("=" in name and os.path.isdir(os.path.join(local, name)) for name in os.listdir(local)))


def check_input_files(location: Location, fmt: str) -> None:
    """Refuse a local input whose files Spark would fail on or misread (module notes)."""
    files = data_files(location)
    if files is None:
        return
    if not files and glob_matches(location) is not None:
        raise InvalidInputError(f"input path not found: {location} (no file matches the pattern)")
    if not files:
        _refuse_empty_directory(location)
    for file in files:
        last = check_gzip_whole(file) if file.lower().endswith(".gz") else _last_byte(file)
        if fmt in ("libsvm", "csv") and last not in (b"", b"\n", b"\r"):
            log.warning("%s does not end with a line end: its last row may have been cut short (a copy or download "
                        "that stopped), which reads as a shorter row without an error; if the file is complete, end "
                        "it with a newline", file)
    if fmt == "parquet":
        check_parquet_parts(location, files)


def _last_byte(file: str) -> bytes:
    with open(file, "rb") as handle:
        handle.seek(0, os.SEEK_END)
        if handle.tell() == 0:
            return b""
        handle.seek(-1, os.SEEK_END)
        return handle.read(1)


def _refuse_empty_directory(location: Location) -> None:
    names = sorted(os.listdir(location.local or location.text))
    held = (f"only {', '.join(names[:5])}{', ...' if len(names) > 5 else ''}, which Spark skips as it skips every name "
            "starting with '_' or '.'" if names else "it is empty")
    raise InvalidInputError(f"input directory {location} holds no data files ({held}): the writer did not finish, or "
                            "the data are elsewhere; give the directory of the part files")


def check_gzip_whole(file: str) -> bytes:
    """Read a gzip file to its end: refused when it is cut short (a member without its end marker:
    a download or copy that stopped) or damaged (not gzip, or a checksum that does not match).
    Concatenated members and zero padding after a member are read as Hadoop's codec reads them.
    Returns the last byte of the text (b"" for none)."""
    decompressor, in_member, read, last = zlib.decompressobj(_GZIP_WBITS), False, 0, b""
    try:
        with open(file, "rb") as handle:
            for chunk in iter(partial(handle.read, _GZIP_READ_BYTES), b""):
                read += len(chunk)
                while chunk:
                    if not in_member:
                        chunk = chunk.lstrip(b"\0")
                        if not chunk:
                            break
                        in_member = True
                    text = decompressor.decompress(chunk, _GZIP_READ_BYTES)   # only its last byte is kept
                    last = text[-1:] or last
                    chunk = decompressor.unconsumed_tail
                    if decompressor.eof:   # a member ended: another may follow
                        chunk = decompressor.unused_data + chunk
                        decompressor, in_member = zlib.decompressobj(_GZIP_WBITS), False
    except zlib.error as error:
        raise InvalidInputError(f"{file} is not a whole gzip file ({error}, within its first {read:,} bytes): it "
                                "is damaged or not gzip; fetch or write it again") from None
    if in_member:
        raise InvalidInputError(f"{file} is cut short: its gzip data end after {read:,} bytes without the end "
                                "marker gzip writes, so its last lines are missing (a download or copy that "
                                "stopped?); fetch or write it again")
    return last


def _is_parquet(file: str) -> bool:
    size = os.path.getsize(file)
    if size < 12:
        return False
    with open(file, "rb") as handle:
        head = handle.read(4)
        handle.seek(size - 4)
        return head == _PARQUET_MAGIC and handle.read(4) == _PARQUET_MAGIC


def type_key(data_type) -> str:
    """An Arrow type as Spark reads it: large and dictionary-encoded forms as the plain ones, list
    and struct fields compared by their types (a list's field name differs between writers)."""
    import pyarrow as pa

    if pa.types.is_dictionary(data_type):
        return type_key(data_type.value_type)
    if pa.types.is_large_string(data_type) or pa.types.is_string(data_type):
        return "string"
    if pa.types.is_large_binary(data_type) or pa.types.is_binary(data_type):
        return "binary"
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type) or pa.types.is_fixed_size_list(data_type):
        return f"array<{type_key(data_type.value_type)}>"
    if pa.types.is_struct(data_type):
        return "struct<" + ", ".join(f"{field.name}: {type_key(field.type)}" for field in data_type) + ">"
    return str(data_type)


def _shown(file: str, root: str) -> str:
    return os.path.relpath(file, root) if root != file else os.path.basename(file)


def check_parquet_parts(location: Location, files: List[str]) -> None:
    """Every file is Parquet and holds the first file's columns with the same types."""
    from sparkfs.io.table_input import parquet_schema

    local = location.local or location.text
    columns: Dict[str, str] = {}
    reference = ""
    for file in files:
        if not _is_parquet(file):
            suffix = os.path.splitext(file)[1]
            kind = f"a '{suffix}' file: " if suffix and suffix.lower() != ".parquet" else ""
            fix = ("give --format for what it is" if file == local else
                   f"a Parquet directory holds only Parquet part files; move it out of {location}")
            raise InvalidInputError(f"{file} is not a Parquet file ({kind}no 'PAR1' marker at its start and end: "
                                    f"another format, or cut short): {fix}")
        try:
            schema = parquet_schema(file)
        except (OSError, ValueError) as error:
            raise InvalidInputError(f"{file} is not a readable Parquet file ({str(error)[:200]})") from None
        found = {field.name: type_key(field.type) for field in schema}
        if not reference:
            columns, reference = found, file
            continue
        _check_same_columns(location, reference, columns, file, found)


def _check_same_columns(location: Location, reference: str, columns: Dict[str, str], file: str,
                        found: Dict[str, str]) -> None:
    first = _shown(reference, location.local or location.text)
    missing = [name for name in columns if name not in found]
    if missing:
        raise InvalidInputError(
            f"column(s) {missing} of the Parquet input {location} are missing from {file} ({first} has them): Spark "
            "would read them as null in every row of that file; write every part file with the same columns")
    extra = [name for name in found if name not in columns]
    if extra:
        raise InvalidInputError(
            f"{file} has column(s) {extra} that {first} of the Parquet input {location} does not have: Spark would "
            "read one file's columns and drop or null the others; write every part file with the same columns")
    differ: List[Tuple[str, str, str]] = [(name, columns[name], found[name]) for name in columns
                                          if columns[name] != found[name]]
    if differ:
        name, expected, got = differ[0]
        also = f"; also column(s) {[d[0] for d in differ[1:]]}" if differ[1:] else ""
        raise InvalidInputError(
            f"the Parquet part files of {location} disagree on the type of column '{name}': {expected} in {first}, "
            f"{got} in {file}{also} (Spark reads one type per column and fails on the other file); write every "
            f"part file with the same type for '{name}'")
