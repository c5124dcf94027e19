"""Job configuration: a YAML file (safe loader) whose values command-line flags override.

Layout of ``conf/*.yaml``::

    input:  {path: data/x.libsvm, format: libsvm,   # or {table: db.terms}: a table of the session's catalog
             label_col: label, features_col: features, weight_col: null,
             num_features: null, driver_budget_mb: null,   # LIBSVM vector size (--vector-size), its bound
             feature_names: null, feature_names_from: null}   # names: a file, one per line; a CountVectorizerModel
    method: lfs
    label_type: null                   # categorical | continuous (a regression target: f-regression); --label-type
    params: {gamma: -0.5}
    deterministic: false               # true: the same bits for any partitioning (slower; --deterministic)
    missing: refuse                    # refuse | drop-rows | zero | pairwise: rows with NaN dropped, NaN set to 0,
                                       # NaN left out per feature by anova, chi2, variance (--missing)
    selection: {num_features: 20}      # or {threshold: 0.0}, or {selection_mode: fdr, selection_threshold: 0.05}
                                       # keep: [age, 3], exclude: patient_id: features always / never selected,
                                       # by name or 0-based index, a list or comma-separated (--keep, --exclude)
    output: {path: output/{run_id}, if_exists: fail}   # fail | overwrite | skip (overwrite: true = overwrite)
                                       # reduced: a directory for the sliced input (--write-reduced)
                                       # table: db.selection, appended per run (--output-table)
    run_id: null                       # default: the UTC start time; {run_id} in output.path is replaced by it
    mlflow: false                      # true: log an MLflow run once the outputs are written (--mlflow)
    mlflow_experiment: null            # its experiment (--mlflow-experiment; default: MLflow's)
    spark:  {master: "local[2]", conf: {spark.driver.memory: 2g}}   # or {remote: "sc://host:15002"}

Every value is checked against :data:`SCHEMA` (:func:`check_config`) right after the file is read
and again after the flags are merged, before anything uses it. A wrong value is named by its
dotted key and only its type is described when it is not a scalar: a YAML alias bomb (nested
lists of aliases, billions of elements once expanded) is refused without being expanded, so
nothing may ``str()``, ``repr()`` or serialise a config value before the check.
"""

from __future__ import annotations

import copy
import fnmatch
import math
import re
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Tuple

import yaml

DEFAULTS: Dict[str, Any] = {
    "input": {"path": None, "table": None, "format": "libsvm", "label_col": "label", "features_col": "features",
              "weight_col": None, "num_features": None, "driver_budget_mb": None, "feature_names": None,
              "feature_names_from": None},
    "method": "lfs",
    "instance_weighting": "none",
    "label_type": None,
    "deterministic": None,
    "missing": None,
    "params": {},
    "selection": {"num_features": None, "threshold": None, "selection_mode": None, "selection_threshold": None,
                  "keep": None, "exclude": None},
    "output": {"path": None, "overwrite": False, "if_exists": None, "reduced": None, "table": None},
    "spark": {"master": None, "remote": None, "conf": {}},
    "run_id": None,
    "mlflow": False,
    "mlflow_experiment": None,
}
SECTIONS = set(DEFAULTS)


class ConfigError(ValueError):
    """The configuration file or flags are invalid."""


def describe_value(value: Any) -> str:
    """``the string 'no'``, ``the number 3``, ``true``; a list or mapping by its type only (never expanded)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:60] + '...' if len(value) > 60 else value!r}"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a value of type {type(value).__name__}"


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool))


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_string(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _one_of(*options: str) -> Tuple[Callable[[Any], bool], str]:
    return (lambda value: isinstance(value, str) and value in options), "one of " + ", ".join(map(repr, options))


RUN_ID_WORDS = "1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit (it names a directory)"


def is_run_id(value: Any) -> bool:
    """A run id: it goes into an output path, so no separator, space or placeholder."""
    return isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", value) is not None


def is_feature_list(value: Any) -> bool:
    """Features named by ``selection.keep`` / ``selection.exclude``: comma-separated text (as ``--keep`` takes),
    or a flat list of names (non-empty strings) and 0-based indices (whole numbers >= 0)."""
    if isinstance(value, list):
        return all(_is_string(item) or (_is_number(item) and isinstance(item, int) and item >= 0) for item in value)
    return _is_string(value)


def is_param_value(value: Any) -> bool:
    """A method param: a scalar, or a flat list of numbers (ReliefSelector's per-feature sigma)."""
    if isinstance(value, list):
        return all(_is_number(item) for item in value)
    return _is_scalar(value)


_FORMATS = ("libsvm", "parquet", "csv")  # sparkfs.io.readers.FORMATS (tested equal)
_STRING = (_is_string, "a non-empty string")
_COLUMN = (_is_string, "a non-empty string (a column name)")
_PATH = (_is_string, "a non-empty string (a path or URI)")
_FEATURES = ("a list of feature names and 0-based indices, or a non-empty string of them separated by commas")

#: The type of every key of a config file, by dotted key: (check, the expected type in words).
#: ``null`` (unset) passes everywhere: required keys are asked for after the flags are merged.
SCHEMA: Dict[str, Tuple[Callable[[Any], bool], str]] = {
    "input.path": _PATH,
    "input.table": (_is_string, "a non-empty string (a table or view of the session's catalog)"),
    "input.format": _one_of(*_FORMATS),
    "input.label_col": _COLUMN,
    "input.features_col": _COLUMN,
    "input.weight_col": _COLUMN,
    "input.num_features": (lambda v: _is_number(v) and isinstance(v, int) and v >= 1, "a whole number >= 1"),
    "input.driver_budget_mb": (lambda v: _is_number(v) and math.isfinite(v) and v > 0, "a positive number (MiB)"),
    "input.feature_names": (_is_string, "a non-empty string (a text file: one feature name per line)"),
    "input.feature_names_from": (_is_string, "a non-empty string (the directory of a saved CountVectorizerModel)"),
    "method": (_is_string, "a string (a method name: see `sparkfs methods`)"),
    "instance_weighting": _one_of("none", "margin"),
    "label_type": _one_of("categorical", "continuous"),
    "deterministic": (lambda v: isinstance(v, bool), "true or false"),
    "missing": _one_of("refuse", "drop-rows", "zero", "pairwise"),
    "params": (lambda v: isinstance(v, dict), "a mapping of param names to values"),
    "params.*": (is_param_value, "a string, a number, true or false (or a list of numbers)"),
    "selection.num_features": (lambda v: _is_number(v) and isinstance(v, int), "a whole number"),  # >= 1: the Param
    "selection.threshold": (lambda v: _is_number(v) and math.isfinite(v), "a finite number"),
    # sparkfs.methods.CLI_SELECTION_MODES (tested equal)
    "selection.selection_mode": _one_of("num-top-features", "percentile", "fpr", "fdr", "fwe"),
    "selection.selection_threshold": (lambda v: _is_number(v) and 0 < v <= 1, "a number in (0, 1] (the fraction of "
                                      "features for percentile, alpha for fpr, fdr and fwe)"),
    "selection.keep": (is_feature_list, _FEATURES),
    "selection.exclude": (is_feature_list, _FEATURES),
    "output.path": _PATH,
    "output.overwrite": (lambda v: isinstance(v, bool), "true or false"),
    "output.if_exists": _one_of("fail", "overwrite", "skip"),
    "output.reduced": (_is_string, "a non-empty string (the directory of the reduced data: a path or URI)"),
    "output.table": (_is_string, "a non-empty string (a table of the session's catalog: db.table)"),
    "run_id": (is_run_id, RUN_ID_WORDS),
    "mlflow": (lambda v: isinstance(v, bool), "true or false"),
    "mlflow_experiment": (_is_string, "a non-empty string (an MLflow experiment name)"),
    "spark.master": _STRING,
    "spark.remote": (_is_string, "a non-empty string (a Spark Connect URL, sc://HOST:PORT)"),
    "spark.conf": (lambda v: isinstance(v, dict), "a mapping of Spark settings"),
    "spark.conf.*": (_is_scalar, "a string, a number, true or false"),
}


def _schema_entries(config: Mapping[str, Any], where: str) -> Iterator[Tuple[str, str, Any]]:
    """(dotted key, its :data:`SCHEMA` entry, value) of every key of ``config``, then of every method
    param and Spark setting (the user's own keys)."""
    for section, value in config.items():
        if section in SCHEMA:  # method, instance_weighting, params
            yield section, section, value
        elif isinstance(value, dict):
            for key, item in value.items():
                yield f"{section}.{key}", f"{section}.{key}", item
    spark = config.get("spark")
    for prefix, mapping in (("params", config.get("params")),
                            ("spark.conf", spark.get("conf") if isinstance(spark, dict) else None)):
        for name, item in (mapping.items() if isinstance(mapping, dict) else ()):
            if not isinstance(name, str):
                raise ConfigError(f"{prefix}{where} has a key that is not a string: {describe_value(name)}")
            yield f"{prefix}.{name}", f"{prefix}.*", item


def check_config(config: Mapping[str, Any], where: str = "", names: Optional[Mapping[str, str]] = None) -> None:
    """Refuse the first value of ``config`` whose type :data:`SCHEMA` does not allow (``ConfigError``).

    ``where`` ends the name in the message (`` in job.yaml``); ``names`` maps a dotted key to what
    the user typed (``selection.threshold`` -> ``--threshold``). Values are described by
    :func:`describe_value`, so a list or mapping is never expanded.
    """
    names = names or {}
    for key, schema_key, value in _schema_entries(config, where):
        shown = names.get(key, key) + where
        if schema_key == "spark.conf.*" and not key.startswith("spark.conf.spark."):
            raise ConfigError(f"{shown} is not a Spark setting: Spark settings start with 'spark.'")
        check, expected = SCHEMA[schema_key]
        if value is not None and not check(value):
            raise ConfigError(f"{shown} must be {expected}, got {describe_value(value)}")


#: The deepest nesting of lists and mappings a YAML text may have (a job config has 3: ``spark``,
#: ``conf``, a setting). YAML's composer recurses once per level, so a text nested thousands deep
#: would end in Python's ``RecursionError``; it is refused from the scanner's tokens instead.
MAX_YAML_DEPTH = 32
_OPENS = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken, yaml.FlowMappingStartToken,
          yaml.FlowSequenceStartToken)
_CLOSES = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


def too_deep(text: str) -> Optional[int]:
    """The line (1-based) where ``text`` nests lists or mappings beyond :data:`MAX_YAML_DEPTH`, or
    None. Reads the scanner's tokens only (no recursion, nothing built); invalid YAML is left to the loader."""
    depth = 0
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if isinstance(token, _OPENS):
                depth += 1
                if depth > MAX_YAML_DEPTH:
                    return token.start_mark.line + 1
            elif isinstance(token, _CLOSES):
                depth -= 1
    except yaml.YAMLError:
        return None
    return None


def _safe_load(text: str, what: str, fits: str):
    """``yaml.safe_load`` of ``text``, refusing (ConfigError) a text nested beyond :data:`MAX_YAML_DEPTH`;
    ``what`` names the text, ``fits`` says what it should hold."""
    line = too_deep(text)
    try:
        if line is None:
            return yaml.safe_load(text)
    except RecursionError:   # a nesting the scan did not count: the same refusal
        pass
    where = f" (at line {line})" if line is not None else ""
    raise ConfigError(f"{what} nests lists or mappings more than {MAX_YAML_DEPTH} levels deep{where}; {fits}")


#: Spark settings a config file may not set, by what they make Spark run (``fnmatch`` patterns of the
#: key, compared in lower case). A config file is read as data: it may tune Spark (memory,
#: partitions, timeouts, a store's endpoint), not choose the programs, Java options, class paths,
#: classes, scripts, environment variables, shipped files or container images of the JVM and the
#: workers, which run with the rights of whoever runs the command. Those belong to that person: the
#: command line's ``--conf``, ``spark-submit`` and ``spark-defaults.conf`` still set them.
CODE_SETTINGS: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("a program for Spark to start", ("spark.pyspark.python", "spark.pyspark.driver.python", "spark.r.command",
                                      "spark.r.driver.command", "spark.r.shell.command", "spark.python.daemon.module",
                                      "spark.python.worker.module")),
    ("Java options of the JVMs (-javaagent, -XX:OnError runs programs)", ("*javaoptions",)),
    ("a class path or library path of the JVMs", ("*.extraclasspath", "*.extralibrarypath", "spark.jars",
                                                   "spark.jars.*", "spark.yarn.jars", "spark.yarn.archive")),
    ("files shipped to and run or imported by the workers", ("spark.submit.pyfiles", "spark.archives", "spark.files",
                                                             "spark.yarn.dist.*")),
    ("classes for Spark to load", ("spark.plugins", "spark.executor.plugins", "spark.extralisteners",
                                   "spark.sql.extensions", "spark.sql.queryexecutionlisteners",
                                   "spark.sql.streaming.streamingquerylisteners", "spark.serializer",
                                   "spark.kryo.registrator", "spark.ui.filters", "spark.sql.catalog.*", "*.class",
                                   "*.impl", "*.provider", "*.providers")),
    ("a script for Spark to run", ("*.discoveryscript",)),
    ("environment variables of the JVM or the workers (PYTHONPATH, LD_PRELOAD load code)",
     ("spark.executorenv.*", "spark.yarn.appmasterenv.*", "spark.kubernetes.driverenv.*", "spark.mesos.driverenv.*")),
    ("a container image or pod template", ("spark.kubernetes.*image", "spark.kubernetes.*podtemplatefile",
                                           "spark.mesos.executor.docker.image")),
)


def code_setting(key: str) -> Optional[str]:
    """What a Spark setting makes Spark run (:data:`CODE_SETTINGS`), or None for a tuning setting."""
    lowered = key.strip().lower()
    for what, patterns in CODE_SETTINGS:
        if any(fnmatch.fnmatchcase(lowered, pattern) for pattern in patterns):
            return what
    return None


def check_file_spark_conf(config: Mapping[str, Any], path: str) -> None:
    """Refuse a config file's ``spark.conf`` key that names code to run (:data:`CODE_SETTINGS`)."""
    spark = config.get("spark")
    conf = spark.get("conf") if isinstance(spark, dict) else None
    for key in conf or {}:
        what = code_setting(key)
        if what:
            raise ConfigError(
                f"spark.conf.{key} in {path} names {what}: a config file may tune Spark, not choose what it runs, "
                f"which runs with your rights; give it on the command line (--conf {key}=...), to spark-submit, or in "
                "spark-defaults.conf (docs/security.md, \"Job configs\")")


def load_config(path: str) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as handle:
            loaded = _safe_load(handle.read(), f"config file {path}", "a job config nests at most 3") or {}
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"config file {path} is not UTF-8 text ({error.reason} at byte {error.start})") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"config file {path} is not valid YAML: {error}") from None
    if not isinstance(loaded, dict):
        raise ConfigError(f"config file {path} must hold a mapping, got {type(loaded).__name__}")
    unknown = set(loaded) - SECTIONS
    if unknown:
        raise ConfigError(f"unknown section(s) {sorted(map(str, unknown))} in {path}; known: {sorted(SECTIONS)}")
    for section, value in loaded.items():
        known = DEFAULTS[section]
        if not isinstance(known, dict) or section == "params":  # method params are checked by the selector
            continue
        if value is not None and not isinstance(value, dict):
            raise ConfigError(f"section '{section}' of {path} must be a mapping, got {type(value).__name__}")
        unknown_keys = set(value or {}) - set(known)
        if unknown_keys:
            raise ConfigError(f"unknown key(s) {sorted(map(str, unknown_keys))} in section '{section}' of {path}; "
                              f"known: {sorted(known)}")
    check_config(loaded, where=f" in {path}")
    check_file_spark_conf(loaded, path)
    return loaded


def merge_config(base: Dict[str, Any], override: Dict[str, Any]) -> Dict[str, Any]:
    """Deep-merge ``override`` into a copy of ``base``; ``None`` values in override are ignored."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_config(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def parse_param(text: str):
    """``name=value`` from the command line; the value is typed by YAML (numbers, bools, strings)."""
    if "=" not in text:
        raise ConfigError(f"--param expects name=value, got '{text}'")
    name, raw = text.split("=", 1)
    if not name.strip():
        raise ConfigError(f"--param expects name=value, got '{text}'")
    try:
        fits = "a param is a number, a string, true or false, or a list of numbers"
        value = _safe_load(raw, f"--param {name.strip()}: the value", fits) if raw.strip() else raw
    except yaml.YAMLError:
        raise ConfigError(f"--param {name.strip()}: the value is not valid YAML (quote it as a string?)") from None
    return name.strip(), value
