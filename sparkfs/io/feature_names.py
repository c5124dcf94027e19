"""Feature names given beside the data: a names file, or the vocabulary of a saved ``CountVectorizerModel``.

A LIBSVM term matrix names its features by their column numbers (``f7771``); the words are in a file
beside it, or in the ``CountVectorizerModel`` that made the vectors. ``--feature-names FILE`` reads one
name per line (line i names feature i, 0-based as the vector's slots; a final newline ends the last
line, a ``\\r`` before it is dropped, nothing else is trimmed); ``--feature-names-from MODEL_DIR``
reads the vocabulary of a pyspark.ml ``CountVectorizerModel`` saved with ``model.save(MODEL_DIR)``
(``data/``'s ``vocabulary`` array, term i = slot i). An empty name or a name given twice is refused
naming its line.

The names reach the data the way a vector column's names already travel: in the column's Spark ML
attribute metadata (``ml_attr``, as ``VectorAssembler`` writes it), so the selectors' summaries, the
saved model and a sliced vector carry them, and :class:`~sparkfs.io.readers.Dataset` lists them for
``features.parquet`` and ``summary.json``. They replace the input's own names (a CSV header's, a
Parquet column's attributes).

The count must be the vector size. It is checked before Spark starts wherever the size is known
without a job (:func:`known_vector_size`: a CSV header, a Parquet footer or first row read with
pyarrow); a LIBSVM input takes the count as its vector size (an index above it is refused naming its
line, as with ``--vector-size``); any other input (a URI) is checked right after its read, before
any selector pass. Local paths are read with the standard library and pyarrow; a URI (HDFS, S3...)
through the Spark session.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple, Union, cast

from sparkfs.errors import InvalidInputError
from sparkfs.io.config import ConfigError
from sparkfs.io.input_features import known_vector_size
from sparkfs.io.libsvm_lines import SIZE_FLAG
from sparkfs.io.readers import Dataset, read_dataset
from sparkfs.io.stores import Location, location_of
from sparkfs.io.table_input import local_files

NAMES_FILE_FLAG = "--feature-names"
VOCABULARY_FLAG = "--feature-names-from"
#: The class a saved vocabulary model must be (Spark ML's Scala name, which pyspark writes too).
VOCABULARY_CLASS = "CountVectorizerModel"


@dataclass(frozen=True)
class FeatureNames:
    """The names of features 0..p-1 and where they came from (``--feature-names terms.txt``)."""

    names: Tuple[str, ...]
    flag: str
    path: str

    @property
    def source(self) -> str:
        return f"{self.flag} {self.path}"

    def check_count(self, size: int, what: str) -> None:
        """Refuse a vector size other than the number of names; ``what`` says whose size it is."""
        if size != len(self.names):
            unit = "names (one per line)" if self.flag == NAMES_FILE_FLAG else "terms in its vocabulary"
            raise InvalidInputError(f"{self.source} holds {len(self.names):,} {unit}, but {what} has {size:,} "
                                    f"features: name i is feature i, so the two counts must be equal")


def requested_names(names_file: Optional[str], vocabulary_model: Optional[str]) -> Optional[Tuple[str, Location]]:
    """(flag, location) of the names asked for, or None; both flags at once are refused."""
    if names_file and vocabulary_model:
        raise ConfigError(f"give either {NAMES_FILE_FLAG} ({names_file}) or {VOCABULARY_FLAG} ({vocabulary_model}), "
                          "not both")
    if names_file:
        return NAMES_FILE_FLAG, location_of(names_file)
    if vocabulary_model:
        return VOCABULARY_FLAG, location_of(vocabulary_model)
    return None


def load_names(request: Optional[Tuple[str, Location]], spark=None) -> Optional[FeatureNames]:
    """The names of ``request`` ((flag, location): :func:`requested_names`); a local path is read
    without Spark, a URI through ``spark`` (None without a session: read it once one exists)."""
    if request is None:
        return None
    flag, location = request
    local, path = location.local, location.text
    if local is None and spark is None:
        return None
    if flag == NAMES_FILE_FLAG:
        text = _local_text(local, path) if local is not None else _text_with_spark(spark, path)
        names = _names_of_lines(text, path)
    else:
        metadata, vocabulary = (_local_vocabulary(local, path) if local is not None
                                else _vocabulary_with_spark(spark, path))
        names = _checked_vocabulary(metadata, vocabulary, path)
    return FeatureNames(tuple(names), flag, path)


# The names file ----------------------------------------------------------------------------------


def _local_text(local: str, path: str) -> str:
    if not os.path.exists(local):
        raise InvalidInputError(f"{NAMES_FILE_FLAG} {path}: file not found")
    if os.path.isdir(local):
        raise InvalidInputError(f"{NAMES_FILE_FLAG} {path} is a directory: give a text file with one name per line "
                                f"(for a saved CountVectorizerModel, {VOCABULARY_FLAG})")
    try:
        with open(local, encoding="utf-8-sig", newline="") as handle:
            return handle.read()
    except UnicodeDecodeError as error:
        raise InvalidInputError(f"{NAMES_FILE_FLAG} {path} is not UTF-8 text (byte {error.start:,}): save the "
                                "names as UTF-8, one per line") from None


def _text_with_spark(spark, path: str) -> str:
    try:
        rows = spark.read.text(path, wholetext=True).collect()
    except Exception as error:  # a missing file or an unreadable store: the reader's first line
        raise InvalidInputError(f"{NAMES_FILE_FLAG} {path} cannot be read ({_first_line(error)})") from None
    if len(rows) != 1:
        raise InvalidInputError(f"{NAMES_FILE_FLAG} {path} is {len(rows)} files: give one text file with one name "
                                "per line")
    return rows[0][0].lstrip("\ufeff")


def _names_of_lines(text: str, path: str) -> List[str]:
    """One name per line: a final newline ends the last line; ``\\r\\n`` line ends are read as
    ``\\n``; an empty line or a name given twice is refused naming its line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    names = [line[:-1] if line.endswith("\r") else line for line in lines]
    if not names:
        raise InvalidInputError(f"{NAMES_FILE_FLAG} {path} holds no names: give one name per line, line i naming "
                                "feature i")
    _refuse_empty_or_repeated(names, f"{NAMES_FILE_FLAG} {path}", "line", first=1)
    return names


def _refuse_empty_or_repeated(names: List[str], where: str, what: str, first: int) -> None:
    seen: Dict[str, int] = {}
    for position, name in enumerate(names, first):
        if not name.strip():
            raise InvalidInputError(f"{where}: {what} {position:,} is empty: every feature needs a name (line i "
                                    "names feature i, so no line can be left out)")
        if name in seen:
            raise InvalidInputError(f"{where}: {what} {position:,} repeats the name {name[:80]!r} of {what} "
                                    f"{seen[name]:,}: each feature needs its own name")
        seen[name] = position


# The vocabulary of a CountVectorizerModel --------------------------------------------------------


def _local_vocabulary(local: str, path: str) -> Tuple[Any, Any]:
    """(the metadata object, the vocabulary) of a model saved on the local disk, read with json and pyarrow."""
    import pyarrow.parquet as pq

    if not os.path.isdir(local):
        raise InvalidInputError(f"{VOCABULARY_FLAG} {path} is not a directory: give the directory a "
                                "CountVectorizerModel was saved to (model.save(path)); a names file goes with "
                                f"{NAMES_FILE_FLAG}")
    metadata_files = local_files(location_of(os.path.join(local, "metadata"))) or []
    if not metadata_files:
        raise InvalidInputError(f"{VOCABULARY_FLAG} {path} has no metadata/ of a saved pyspark.ml model")
    with open(metadata_files[0], encoding="utf-8", errors="replace") as handle:
        metadata = _json_object(handle.readline(), path)
    _check_vocabulary_class(metadata, path)
    data_files = local_files(location_of(os.path.join(local, "data"))) or []
    for file in data_files:
        try:
            table = pq.read_table(file)
        except (OSError, ValueError) as error:
            raise InvalidInputError(f"{VOCABULARY_FLAG} {path}: {file} is not Parquet ({error})") from None
        if "vocabulary" not in table.column_names:
            raise InvalidInputError(f"{VOCABULARY_FLAG} {path}: data/ has no 'vocabulary' column (it has "
                                    f"{table.column_names})")
        if table.num_rows:
            return metadata, table.column("vocabulary")[0].as_py()
    raise InvalidInputError(f"{VOCABULARY_FLAG} {path}: data/ holds no vocabulary row")


def _vocabulary_with_spark(spark, path: str) -> Tuple[Any, Any]:
    try:
        line = spark.read.text(f"{path}/metadata").first()
    except Exception as error:
        raise InvalidInputError(f"{VOCABULARY_FLAG} {path} has no readable metadata/ of a saved pyspark.ml model "
                                f"({_first_line(error)})") from None
    metadata = _json_object(line[0] if line else "", path)
    _check_vocabulary_class(metadata, path)
    try:
        row = spark.read.parquet(f"{path}/data").select("vocabulary").first()
    except Exception as error:
        raise InvalidInputError(f"{VOCABULARY_FLAG} {path}: data/ holds no 'vocabulary' column "
                                f"({_first_line(error)})") from None
    if row is None:
        raise InvalidInputError(f"{VOCABULARY_FLAG} {path}: data/ holds no vocabulary row")
    return metadata, row[0]


def _json_object(text: str, path: str) -> Dict[str, Any]:
    try:
        metadata = json.loads(text)
    except ValueError:
        metadata = None
    if not isinstance(metadata, dict):
        raise InvalidInputError(f"{VOCABULARY_FLAG} {path}: its metadata/ is not the JSON object pyspark.ml writes")
    return metadata


def _check_vocabulary_class(metadata: Dict[str, Any], path: str) -> None:
    name = str(metadata.get("class", ""))
    if name.rsplit(".", 1)[-1] != VOCABULARY_CLASS:
        raise InvalidInputError(f"{VOCABULARY_FLAG} {path} holds a {name or 'model without a class'}, not a "
                                f"{VOCABULARY_CLASS} (the model that maps terms to vector slots); for a names file "
                                f"use {NAMES_FILE_FLAG}")


def _checked_vocabulary(metadata: Dict[str, Any], vocabulary: Any, path: str) -> List[str]:
    if not isinstance(vocabulary, list) or not vocabulary or not all(isinstance(t, str) for t in vocabulary):
        raise InvalidInputError(f"{VOCABULARY_FLAG} {path}: data/'s vocabulary is not a non-empty list of terms")
    _refuse_empty_or_repeated(vocabulary, f"{VOCABULARY_FLAG} {path}", "term", first=0)
    return vocabulary


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__


# Before Spark, and the read ---------------------------------------------------------------------


def check_names_early(names: Optional[FeatureNames], location: Location, fmt: str, *, label_col: Optional[str],
                      weight_col: Optional[str], features_col: Optional[str], vector_size: Optional[int]) -> None:
    """Before Spark starts: the names' count against ``--vector-size`` (LIBSVM) or against the
    vector size a local CSV or Parquet input shows without a job (:func:`known_vector_size`)."""
    if names is None:
        return
    if fmt == "libsvm":
        if vector_size is not None:
            names.check_count(vector_size, f"--vector-size {vector_size}")
        return
    size = known_vector_size(location, fmt, label_col=label_col, weight_col=weight_col,
                             features_col=features_col or "features")
    if size is not None:
        names.check_count(size, f"the input {location}")


def read_named_dataset(spark, path: str, fmt: str, names: Optional[FeatureNames], size_said_by: Optional[str] = None,
                       **read_options) -> Dataset:
    """:func:`sparkfs.io.readers.read_dataset`, with ``names`` (when given) as the features' names:
    a LIBSVM input takes their count as its vector size; any input's vector column carries them in
    its ML attributes, and the count is checked against the vector size read. ``size_said_by`` says
    where a LIBSVM ``num_features`` came from (``the model m was fitted on 6 features``), named when an
    index is above it."""
    if fmt == "libsvm" and names is not None:
        read_options["num_features"] = read_options.get("num_features") or len(names.names)
        size_said_by = size_said_by or f"{names.source} holds {len(names.names):,} names"
    try:
        dataset = read_dataset(spark, path, fmt, **read_options)
    except InvalidInputError as error:  # an index above the size: say where the size came from
        if fmt != "libsvm" or size_said_by is None or SIZE_FLAG not in str(error):
            raise
        raise InvalidInputError(str(error).replace(SIZE_FLAG, f"({size_said_by})")) from None
    if names is None:
        return dataset
    names.check_count(dataset.num_features, f"the input {path}")
    return named(dataset, list(names.names))


def named(dataset: Dataset, names: List[str]) -> Dataset:
    """``dataset`` with ``names`` in its vector column's ML attributes (replacing any there; a
    ``sparkfs`` key saying the vectors are sparse is kept)."""
    from pyspark.sql import functions as F

    from sparkfs.io.table_input import vector_metadata

    column, frame = dataset.features_col, cast(Any, dataset.df)
    metadata = dict(frame.schema[column].metadata)
    said = {key: value for key, value in (metadata.get("sparkfs") or {}).items() if key != "feature_names"}
    metadata.update(vector_metadata(names))
    metadata.pop("sparkfs", None)
    if said:
        metadata["sparkfs"] = said
    frame = frame.withColumn(column, F.col(quoted(column)).alias(column, metadata=metadata))
    return Dataset(frame, column, dataset.label_col, list(names))


def quoted(column: str) -> str:
    """``column`` as ``F.col`` takes a name that may hold dots or backticks (not a struct field)."""
    return "`" + column.replace("`", "``") + "`"


# Kept and excluded features, by name or index ----------------------------------------------------

KEEP_FLAG, EXCLUDE_FLAG = "--keep", "--exclude"


def feature_list(given: Union[None, str, List[Union[str, int]]]) -> List[str]:
    """The names or 0-based indices of ``--keep`` / ``--exclude`` (comma-separated text) or of the config's
    ``selection.keep`` / ``selection.exclude`` (that text, or a list: each item one name or index, a name
    holding a comma too); empty: none."""
    if isinstance(given, list):
        return [str(item).strip() for item in given if str(item).strip()]
    return [part.strip() for part in (given or "").split(",") if part.strip()]


def resolve_features(tokens: List[str], flag: str, names: Optional[List[str]], size: Optional[int],
                     positional_names: bool = False) -> Optional[List[int]]:
    """The feature indices ``tokens`` name, in their order, or None when a name cannot be resolved
    yet (the names are known only once the input is read). A token is a feature's name, else a
    0-based index; ``positional_names``: the features are named ``f<column>`` by the LIBSVM file's
    1-based columns (``f1`` is feature 0; a LIBSVM input without names). An unknown name, an
    index outside the ``size`` features and a feature given twice are refused naming the token."""
    indices: List[int] = []
    position_of = {name: i for i, name in enumerate(names)} if names is not None else {}
    for token in tokens:
        if token in position_of:
            index = position_of[token]
        elif token.isdigit():
            index = int(token)
        elif positional_names and token[:1] == "f" and token[1:].isdigit() and int(token[1:]) >= 1:
            index = int(token[1:]) - 1
        elif names is None:
            return None
        else:
            shown = ", ".join(repr(name) for name in names[:5]) + (", ..." if len(names) > 5 else "")
            raise InvalidInputError(f"{flag} {token}: no feature is named so (the input's {len(names):,} features "
                                    f"are named {shown}); give a feature's name or its 0-based index")
        if size is not None and index >= size:
            raise InvalidInputError(f"{flag} {token}: feature index {index} is outside the input's {size:,} features "
                                    f"(0 to {size - 1})")
        if index in indices:
            raise InvalidInputError(f"{flag} {token}: feature {index} is given twice")
        indices.append(index)
    return indices


def check_forced(keep: List[int], exclude: List[int], keep_tokens: List[str], count: Optional[int],
                 count_said_by: str, flags: Tuple[str, str] = (KEEP_FLAG, EXCLUDE_FLAG)) -> None:
    """Refuse a feature both kept and excluded, and more kept features than the selection's ``count``
    (when a count decides it; ``count_said_by`` names where the count comes from); ``flags``: where the
    kept and the excluded features were given (``--keep``, or ``selection.keep in job.yaml``)."""
    both = [token for token, index in zip(keep_tokens, keep) if index in exclude]
    if both:
        raise InvalidInputError(f"{flags[0]} and {flags[1]} both name feature {both[0]}: a feature is either "
                                "always selected or never")
    if count is not None and len(keep) > count:
        raise InvalidInputError(f"{flags[0]} names {len(keep)} features but the selection holds only {count} "
                                f"({count_said_by}): kept features count toward it")
