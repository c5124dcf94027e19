"""Reading saved selectors and models: every value read is checked before anything is built.

A saved selector is ``metadata/`` (one JSON line: class, uid, params); a model adds ``data/`` (one
Parquet row per feature: index, score, selected, extra per-feature arrays). Files that do not hold
what :class:`sparkfs.selectors._base.FeatureSelectorModel` writes -- damaged, edited, or of another
library -- are refused with :class:`sparkfs.errors.InvalidModelError`, naming the path, the file and
the problem; nothing named by the metadata is imported.
"""

from __future__ import annotations

import json
import math
import numbers
from typing import Any, Dict, List, Optional

import numpy as np

from sparkfs.errors import InvalidModelError

METADATA_FILE = "metadata"
DATA_FILE = "data"
#: The columns every model's data/ holds; array_<name> columns hold per-feature arrays, and ``name``
#: the features' names when the model knows them.
DATA_COLUMNS = ("index", "score", "selected")
NAME_COLUMN = "name"


#: The deepest nesting of arrays and objects saved metadata may hold (sparkfs writes a handful of
#: levels: the params, the summary and its per-method details). Deeper text is refused before any
#: value of it is used, converted or shown (Python's ``repr`` and ``json`` recurse once per level).
MAX_METADATA_DEPTH = 64


def json_depth(value: Any, limit: int) -> int:
    """How deep lists and dicts nest in ``value`` (0 for a scalar), counted without recursion and
    only until ``limit`` is passed (then ``limit + 1``)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (list, dict)):
            continue
        deepest = max(deepest, depth)
        if deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def _refuse(path: str, part: str, problem: str) -> InvalidModelError:
    return InvalidModelError(f"{path}/{part}: {problem}; this saved selector or model is not loaded")


def load_metadata(path: str, spark) -> Dict[str, Any]:
    """The JSON object of ``path/metadata`` (Spark ML's layout), or a refusal naming what is wrong."""
    try:
        text = spark.read.text(f"{path}/{METADATA_FILE}").first()
    except Exception as error:  # a missing or unreadable folder: the reader's own words, shortened
        raise _refuse(path, METADATA_FILE, f"cannot be read ({str(error).splitlines()[0][:200]})") from None
    if text is None:
        raise _refuse(path, METADATA_FILE, "is empty")
    try:
        metadata = json.loads(text[0])
    except RecursionError:
        raise _refuse(path, METADATA_FILE, "nests JSON arrays or objects too deep to read (sparkfs writes at most "
                      f"{MAX_METADATA_DEPTH} levels)") from None
    except ValueError as error:
        raise _refuse(path, METADATA_FILE, f"is not JSON ({error})") from None
    depth = json_depth(metadata, MAX_METADATA_DEPTH)
    if depth > MAX_METADATA_DEPTH:
        raise _refuse(path, METADATA_FILE, f"nests JSON arrays or objects more than {MAX_METADATA_DEPTH} levels deep "
                      "(sparkfs writes far fewer)")
    if not isinstance(metadata, dict):
        raise _refuse(path, METADATA_FILE, f"holds a JSON {type(metadata).__name__}, not an object")
    return metadata


def _subclasses(base: type):
    for subclass in base.__subclasses__():
        yield subclass
        yield from _subclasses(subclass)


def known_class(metadata: Dict[str, Any], path: str, expected: type) -> type:
    """The sparkfs class named by saved metadata, found among the classes already loaded.

    Nothing named by the metadata is imported (pyspark's DefaultParamsReader imports whatever
    module the file names): a saved model or selector cannot make the reader run other code.
    Every selector module is loaded with the ``sparkfs`` package, before this module is used.
    """
    name = str(metadata.get("class", ""))
    known = {f"{klass.__module__}.{klass.__name__}": klass for klass in _subclasses(expected)}
    known[f"{expected.__module__}.{expected.__name__}"] = expected
    if name not in known or not name.startswith("sparkfs."):
        raise InvalidModelError(f"{path} holds a {name!r}, not a sparkfs {expected.__name__}: it is not loaded "
                                "(saved metadata never names a module to import)")
    return known[name]


def set_saved_params(instance, metadata: Dict[str, Any], path: str) -> None:
    """uid, then the saved params and defaults of ``instance``: every name known to its class, every
    value converted and within its constraint (the same checks as a fit)."""
    uid = metadata.get("uid")
    if not isinstance(uid, str) or not uid.strip():
        raise _refuse(path, METADATA_FILE, f"has no uid (a non-empty string), got {uid!r}")
    instance._resetUid(uid)
    for section, setter in (("defaultParamMap", instance._setDefault), ("paramMap", instance._set)):
        values = metadata.get(section, {})
        if not isinstance(values, dict):
            raise _refuse(path, METADATA_FILE, f"'{section}' is a {type(values).__name__}, not an object")
        for name, value in values.items():
            if not instance.hasParam(name):
                known = ", ".join(sorted(p.name for p in instance.params))
                raise _refuse(path, METADATA_FILE, f"'{section}' sets the param {name!r}, which "
                              f"{type(instance).__name__} does not have (it has {known})")
            try:
                setter(**{name: value})
            except (TypeError, ValueError) as error:
                raise _refuse(path, METADATA_FILE, f"'{section}' gives the param {name!r} the value {value!r}: "
                              f"{error}") from None
    validate = getattr(instance, "validate_params", None)
    if validate is not None:
        try:
            validate()
        except ValueError as error:
            raise _refuse(path, METADATA_FILE, str(error)) from None


def _is_label(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, numbers.Real):
        return math.isfinite(value)
    return isinstance(value, str)


def checked_labels(metadata: Dict[str, Any], path: str) -> List[Any]:
    """labelValues: distinct finite numbers or strings, agreeing with the summary's label mapping."""
    labels = metadata.get("labelValues", [])
    summary = metadata.get("summary", {})
    if not isinstance(labels, list) or not all(_is_label(v) for v in labels):
        raise _refuse(path, METADATA_FILE, f"labelValues must be a list of finite numbers or strings, got {labels!r}")
    if len({repr(v) for v in labels}) != len(labels):
        raise _refuse(path, METADATA_FILE, f"labelValues repeats a label: {labels!r}")
    if not isinstance(summary, dict):
        raise _refuse(path, METADATA_FILE, f"summary is a {type(summary).__name__}, not an object")
    mapping = summary.get("label_mapping")
    if mapping is not None and mapping != {str(i): v for i, v in enumerate(labels)}:
        raise _refuse(path, METADATA_FILE, f"the summary's label_mapping {mapping!r} does not match labelValues "
                      f"{labels!r}")
    if "n_classes" in summary and summary["n_classes"] != len(labels):
        raise _refuse(path, METADATA_FILE, f"the summary has n_classes={summary['n_classes']!r} but labelValues "
                      f"holds {len(labels)} labels")
    return labels


def _expected_features(summary: Dict[str, Any], path: str, rows: int) -> int:
    declared = summary.get("n_features", rows)
    if isinstance(declared, bool) or not isinstance(declared, int) or declared < 1:
        raise _refuse(path, METADATA_FILE, f"the summary's n_features must be a positive int, got {declared!r}")
    if declared != rows:
        raise _refuse(path, DATA_FILE, f"holds {rows} feature rows (scores) but the model was fitted on "
                      f"{declared} features (the summary's n_features)")
    return declared


def unloadable_scores(scores: np.ndarray, infinite_scores_allowed: bool) -> Optional[str]:
    """What makes scores unfit for a model (NaN, or infinite unless the model's scores may be
    infinite), or None: the rule of :func:`checked_model_data`, which the fit applies before it
    builds a model."""
    bad = np.isnan(scores) | (np.isinf(scores) & (not infinite_scores_allowed))
    if not np.any(bad):
        return None
    feature = int(np.argmax(bad))
    allowed = "a number or infinite" if infinite_scores_allowed else "a finite number"
    return (f"the score of feature {feature} is {float(scores[feature])!r} ({int(bad.sum())} of {scores.size} scores "
            f"are not {allowed})")


def checked_model_data(frame, metadata: Dict[str, Any], path: str, infinite_scores_allowed: bool) -> Dict[str, Any]:
    """scores, selected indices and feature arrays of a model's ``data/`` (a pandas frame), checked:
    the indices exactly 0..p-1 once each (p = the summary's n_features), scores never NaN (and
    finite unless the model's scores may be infinite), ``selected`` booleans, every array finite, the
    names (when there) strings."""
    missing = [column for column in DATA_COLUMNS if column not in frame.columns]
    if missing:
        raise _refuse(path, DATA_FILE, f"has no column(s) {missing} (it has {list(frame.columns)})")
    if len(frame) == 0:
        raise _refuse(path, DATA_FILE, "holds no features")
    num_features = _expected_features(metadata.get("summary", {}), path, len(frame))
    index = frame["index"]
    if index.isna().any() or not np.issubdtype(index.dtype, np.integer):
        raise _refuse(path, DATA_FILE, f"column 'index' must hold integers without nulls (its type is {index.dtype})")
    index = index.to_numpy(dtype=np.int64)
    outside = index[(index < 0) | (index >= num_features)]
    if outside.size:
        raise _refuse(path, DATA_FILE, f"feature index {int(outside[0])} is outside [0, {num_features}) "
                      f"(the model has {num_features} features)")
    values, counts = np.unique(index, return_counts=True)
    if np.any(counts > 1):
        repeated = int(values[np.argmax(counts > 1)])
        raise _refuse(path, DATA_FILE, f"feature index {repeated} appears {int(counts.max())} times "
                      "(each feature has one row)")
    order = np.argsort(index, kind="stable")
    scores = frame["score"].to_numpy(dtype=np.float64, na_value=np.nan)[order]
    problem = unloadable_scores(scores, infinite_scores_allowed)
    if problem:
        raise _refuse(path, DATA_FILE, problem)
    selected = frame["selected"]
    if selected.isna().any() or selected.dtype != bool:
        raise _refuse(path, DATA_FILE, f"column 'selected' must hold booleans without nulls (its type is "
                      f"{selected.dtype})")
    arrays = {}
    for column in frame.columns:
        if column.startswith("array_"):
            values = frame[column].to_numpy(dtype=np.float64, na_value=np.nan)[order]
            if not np.all(np.isfinite(values)):
                raise _refuse(path, DATA_FILE, f"column {column!r} holds NaN or infinite values")
            arrays[column[len("array_"):]] = values
    return {"scores": scores, "selected_features": np.flatnonzero(selected.to_numpy()[order]),
            "feature_arrays": arrays, "feature_names": _checked_names(frame, order, path)}


def _checked_names(frame, order, path: str):
    """The ``name`` column in index order (strings, none missing), or None when the model has none."""
    if NAME_COLUMN not in frame.columns:
        return None
    names = frame[NAME_COLUMN].to_numpy(dtype=object)[order]
    bad = [i for i, name in enumerate(names) if not isinstance(name, str)]
    if bad:
        raise _refuse(path, DATA_FILE, f"the name of feature {bad[0]} is {names[bad[0]]!r}, not a string "
                      f"({len(bad)} names are missing or not strings)")
    return [str(name) for name in names]


# Checksums of a model's own files ----------------------------------------------------------------
#
# Hadoop's ``.crc`` files catch damage only while they are there (a copy with ``cp``, ``aws s3 cp``
# or a zip drops them), and two flipped bytes in a score or a param can still be read as valid
# values. So a model carries a manifest of its own: ``checksums/`` (one JSON line, written by
# Spark like ``metadata/``) with the SHA-256 of every file of ``metadata/`` and ``data/`` that
# Spark reads (files whose names start with ``.`` or ``_``, such as ``.crc`` and ``_SUCCESS``,
# are not read and not listed). The metadata says that the manifest exists (:data:`CHECKSUM_KEY`),
# so removing the manifest is noticed too. Models saved before the manifest (no such key) load
# unchecked, as before: refusing them would strand every model saved until now, and their other
# checks (:func:`checked_model_data`, :func:`set_saved_params`) still apply.

CHECKSUM_FILE = "checksums"
#: The metadata key saying the model carries :data:`CHECKSUM_FILE` (its value names the algorithm).
CHECKSUM_KEY = "fileChecksums"
CHECKSUM_ALGORITHM = "sha256"


def _file_digests(path: str, spark) -> Dict[str, str]:
    """``part/file name`` -> SHA-256 of every file Spark reads in ``metadata/`` and ``data/``;
    the hashes are computed where the files are read, only they reach the driver."""
    from pyspark.sql import functions as F

    digests = {}
    for part in (METADATA_FILE, DATA_FILE):
        rows = (spark.read.format("binaryFile").load(f"{path}/{part}")
                .select("path", F.sha2(F.col("content"), 256).alias("digest")).collect())
        for row in rows:
            digests[f"{part}/{str(row['path']).rstrip('/').rsplit('/', 1)[-1]}"] = str(row["digest"])
    return digests


def write_checksums(path: str, spark, mode: str) -> None:
    """Write ``path/checksums`` for the ``metadata/`` and ``data/`` just saved."""
    manifest = {"algorithm": CHECKSUM_ALGORITHM, "files": _file_digests(path, spark)}
    spark.createDataFrame([(json.dumps(manifest, sort_keys=True),)], ["value"]).coalesce(1).write.mode(mode).text(
        f"{path}/{CHECKSUM_FILE}")


def _read_manifest(path: str, spark) -> Dict[str, str]:
    try:
        text = spark.read.text(f"{path}/{CHECKSUM_FILE}").first()
    except Exception as error:  # missing (removed) or unreadable
        raise _refuse(path, CHECKSUM_FILE, "is missing or cannot be read although the metadata says the model "
                      f"carries it ({str(error).splitlines()[0][:200]})") from None
    try:
        manifest = json.loads(text[0]) if text is not None else None
    except (ValueError, RecursionError):
        manifest = None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise _refuse(path, CHECKSUM_FILE, "is not a manifest sparkfs wrote (damaged or edited)")
    return files


def check_checksums(path: str, metadata: Dict[str, Any], spark) -> None:
    """Refuse a model whose files differ from the manifest written when it was saved: a file
    changed, missing or added, named. A model without :data:`CHECKSUM_KEY` in its metadata (saved
    before the manifest) is not checked (see the section's comment)."""
    algorithm = metadata.get(CHECKSUM_KEY)
    if algorithm is None:
        return
    if algorithm != CHECKSUM_ALGORITHM:
        raise _refuse(path, METADATA_FILE, f"names the checksum algorithm {algorithm!r}, which this sparkfs does not "
                      f"know (it writes {CHECKSUM_ALGORITHM!r})")
    expected = _read_manifest(path, spark)
    try:
        found = _file_digests(path, spark)
    except Exception as error:  # a file Hadoop's own checksum refuses, or unreadable
        raise _refuse(path, CHECKSUM_FILE, f"its files cannot be read to check them "
                      f"({str(error).splitlines()[0][:200]})") from None
    for name in sorted(set(expected) | set(found)):
        if name not in found:
            raise _refuse(path, name, "is missing (the model's checksum manifest lists it)")
        if name not in expected:
            raise _refuse(path, name, "was not written with the model (its checksum manifest does not list it)")
        if found[name] != expected[name]:
            raise _refuse(path, name, f"has changed since the model was saved: its SHA-256 is {found[name][:16]}..., "
                          f"the model's manifest says {expected[name][:16]}... (damaged or edited)")
