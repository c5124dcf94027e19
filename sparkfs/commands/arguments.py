"""What several commands share: the input and Spark arguments, the Spark session settings, the
numeric option ranges, and the start of a study command (checks before Spark, then the session).

No command module imports another; each imports this one.
"""

from __future__ import annotations

import logging
import math
from typing import Any, Dict, List, Optional, Tuple

from sparkfs.interruption import install_handlers, progress_conf
from sparkfs.io.config import ConfigError
from sparkfs.io.feature_names import check_names_early
from sparkfs.io.readers import FORMATS, TABLE, check_input_early
from sparkfs.io.stores import Location, location_of
from sparkfs.job_options import Stage, apply_to_study_args, configure_log_format, log_line
from sparkfs.spark.failures import redacted

log = logging.getLogger("sparkfs")


def add_input_args(parser) -> None:
    parser.add_argument("--input", help="input path: a file, a directory of part files or a glob (dir/*.libsvm; "
                        "local path or URI)")
    parser.add_argument("--format", choices=FORMATS, help="input format")
    parser.add_argument("--label-col", help="label column of a parquet/csv input (default: label; a LIBSVM "
                        "input's label is named so)")
    parser.add_argument("--features-col", help="vector column of a parquet input (default: features; when the "
                        "input has no such vector column, its numeric columns other than the label are the features)")
    parser.add_argument("--vector-size", type=int, help="LIBSVM: the number of features (largest index allowed); "
                        "default: the largest index in the input. Either must fit the driver budget")
    names = parser.add_mutually_exclusive_group()
    names.add_argument("--feature-names", metavar="FILE", help="the features' names: a UTF-8 text file, one name per "
                       "line, line i naming feature i (a LIBSVM input's vector size is then the number of names); "
                       "replaces the input's own names")
    names.add_argument("--feature-names-from", metavar="MODEL_DIR", help="the features' names: the vocabulary of the "
                       "pyspark.ml CountVectorizerModel saved in MODEL_DIR that made the vectors")


def add_input_table_arg(parser) -> None:
    """``--input-table NAME``: a table or view of the session's catalog instead of ``--input`` (:func:`table_input`)."""
    parser.add_argument("--input-table", metavar="NAME", help="read a table or view of the session's catalog instead "
                        "of --input (db.table, catalog.db.table, parquet.`/path`): its vector column, or its numeric "
                        "columns, as a Parquet input's")


def table_input(table: str, path: Optional[str], given_format: Optional[str]) -> Tuple[str, str]:
    """A table input (``--input-table``, select's ``input.table``): (its name, the input's path from now on, and
    the format :data:`~sparkfs.io.readers.TABLE`); a file input or ``--format`` besides it is refused."""
    if path:
        raise ConfigError(f"give either an input file ({path}) or --input-table ({table}), not both")
    if given_format:
        raise ConfigError(f"--format {given_format} is a file's format; --input-table {table} reads the table as the "
                          "catalog stores it")
    return table, TABLE


def apply_input_table(args) -> None:
    """``--input-table`` on a command's flags: ``args.input`` its name, ``args.format`` TABLE (checked)."""
    if getattr(args, "input_table", None):
        args.input, args.format = table_input(args.input_table, args.input, args.format)


def input_file(path: Optional[str], fmt: Optional[str]) -> Optional[str]:
    """``path`` when it is a file input (an output must not hold it), None for a table of the catalog."""
    return None if fmt == TABLE else path


def add_missing_arg(parser, default=None, pairwise: bool = False) -> None:
    """``--missing``: what the fit does with missing values (the selectors' ``missing`` Param); ``pairwise``:
    the command offers the univariate filters' pairwise deletion (a command that cleans rows does not)."""
    choices = ["refuse", "drop-rows", "zero"] + (["pairwise"] if pairwise else [])
    offered = (", or pairwise (anova, chi2, variance: each feature's statistic from the rows where that feature "
               "is present)") if pairwise else ""
    parser.add_argument("--missing", choices=choices, default=default,
                        help="missing values: refuse (default: a NaN feature value, a null label or a null vector "
                        "stops the run), drop-rows (leave out the rows with a NaN feature value, a null or NaN label "
                        f"or a null vector) or zero (NaN feature values set to 0; null labels still refused){offered}; "
                        "infinite values are refused under every policy. The summary records the rows dropped or "
                        "values set")


def input_under_missing(frame, features_col: str, label_col: Optional[str], policy: Optional[str]):
    """(``frame`` under the ``--missing`` policy, the facts a report records:
    :func:`sparkfs.spark.missing_values.cleaned_input`; 'refuse' runs no job)."""
    from sparkfs.spark.missing_values import cleaned_input

    if policy == "pairwise":  # the rows are cleaned here, for steps other than a filter's statistics
        raise ValueError("--missing pairwise leaves NaN values out of each feature's statistic inside the univariate "
                         "filters' fit; the margin instance weights need complete rows: use --missing drop-rows or "
                         "zero")
    return cleaned_input(frame, features_col, label_col, policy or "refuse")


def study_missing(facts: Dict[str, Any]) -> Dict[str, Any]:
    """What a study's description records of ``--missing``: nothing for 'refuse' (the studies written before
    the flag resume), else ``{"missing": facts}``: a policy that changes the rows is part of the study, which a
    resumed run must match."""
    return {} if facts["policy"] == "refuse" else {"missing": facts}


def add_spark_args(parser) -> None:
    parser.add_argument("--master", help="Spark master URL (default local[*]; spark-submit sets its own; "
                        "sc://HOST:PORT is taken as --remote)")
    parser.add_argument("--remote", help="Spark Connect server, sc://HOST:PORT (default: $SPARK_REMOTE when "
                        "--master is not given); driver and executor settings then belong to the server")
    parser.add_argument("--driver-memory", help="spark.driver.memory, e.g. 8g (default with a local master: half the "
                        "machine's memory; spark-submit sets its own)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the session this command starts (repeatable)")


def join_negative_values(argv: List[str]) -> List[str]:
    """``--threshold -inf`` -> ``--threshold=-inf``, for every ``--option`` followed by a number
    that starts with '-'.

    argparse takes a word starting with '-' for an option unless it looks like a plain negative
    number ('-1.5'), so ``-inf``, ``-nan`` and ``-1e3`` were "expected one argument". Joined, they
    reach the option, whose own check accepts or refuses them.
    """
    joined: List[str] = []
    index = 0
    while index < len(argv):
        word = argv[index]
        if word == "--":  # the end of the options
            return joined + argv[index:]
        following = argv[index + 1] if index + 1 < len(argv) else ""
        if word.startswith("--") and "=" not in word and following.startswith("-") and _is_number(following):
            joined.append(f"{word}={following}")
            index += 2
        else:
            joined.append(word)
            index += 1
    return joined


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def spark_conf(args) -> Dict[str, str]:
    conf = {}
    for text in args.conf:
        key, separator, value = text.partition("=")
        if not key.strip() or not separator or not value.strip():
            raise ConfigError(f"--conf expects KEY=VALUE, got '{text}'")
        if not key.strip().startswith("spark."):
            raise ConfigError(f"--conf {text}: Spark settings start with 'spark.'")
        conf[key.strip()] = value.strip()
    if args.driver_memory:
        conf["spark.driver.memory"] = args.driver_memory
    return {**progress_conf(args), **conf}


def session_conf(conf: Optional[Dict[str, Any]], verbose: bool, remote: Optional[str] = None) -> Dict[str, Any]:
    """The Spark settings of a session the CLI starts: Spark's own WARN lines off unless ``--verbose``
    (a Spark Connect server keeps its own log settings)."""
    from sparkfs.spark.session import quiet_log_settings

    return {**(conf or {})} if verbose or remote else quiet_log_settings(conf or {})


def spark_target(master: Optional[str], remote: Optional[str], output: Optional[str]):
    """(master, remote) of the session a command starts, checked before Spark starts (exit 2).

    A master and a remote together are refused; a master ``sc://...`` is taken as the remote;
    ``SPARK_REMOTE`` is the remote when neither is given (not under spark-submit, which owns the
    session). With a remote, the URL must be ``sc://HOST[:PORT]`` and ``--output`` a local path: the
    client writes local outputs itself, while a Hadoop URI goes through the JVM's FileSystem, which
    a Connect client does not have.
    """
    import os

    from sparkfs.io.stores import is_local_path
    from sparkfs.spark.session import connect_endpoint

    if master and remote:
        raise ConfigError(f"give either --master ({master}) or --remote ({redacted(remote)}), not both (config: "
                          "spark.master, spark.remote)")
    if master and master.startswith("sc://"):
        master, remote = None, master
    if not master and not remote and os.environ.get("SPARK_REMOTE") and "PYSPARK_GATEWAY_PORT" not in os.environ:
        remote = os.environ["SPARK_REMOTE"]
    if remote:
        connect_endpoint(remote)
        if output and not is_local_path(output):
            raise ConfigError(f"--output {output}: a Spark Connect session ({redacted(remote)}) cannot write a URI (it "
                              "goes through the JVM's Hadoop FileSystem, which a Connect client does not have): give "
                              "a local or mounted path")
    return master, remote


def absolute_for_remote(path: Optional[str]) -> Optional[str]:
    """A relative local input path made absolute: a Connect server resolves paths from its own
    working directory, not the command's."""
    import os

    from sparkfs.io.stores import is_local_path

    return os.path.abspath(path) if path and is_local_path(path) else path


#: Ranges of the numeric options of the commands other than ``select``: option -> (lowest, highest,
#: whether each end is excluded), checked before a session starts. (``--runs`` and
#: ``--parallelism`` are checked by ``stability`` itself, also before any data are read.)
_OPTION_RANGES = {"sample_fraction": (0.0, 1.0, True, True), "seed": (0, math.inf, False, True),
                  "cv": (1, math.inf, False, True), "repeats": (1, math.inf, False, True),
                  "probes": (0, math.inf, False, True), "driver_budget_mb": (0.0, math.inf, True, True),
                  "vector_size": (1, 2**31 - 1, False, False)}


def check_numeric_options(args) -> None:
    """Refuse a numeric option out of its range (NaN and infinities too) with exit 2."""
    for option, (lowest, highest, lowest_excluded, highest_excluded) in _OPTION_RANGES.items():
        value = getattr(args, option, None)
        if value is None:
            continue
        above = value > lowest if lowest_excluded else value >= lowest
        below = value < highest if highest_excluded else value <= highest
        if not (above and below):
            kind = "a whole number" if isinstance(value, int) else "a number"
            interval = f"{'(' if lowest_excluded else '['}{lowest:g}, {highest:g}{')' if highest_excluded else ']'}"
            raise ConfigError(f"--{option.replace('_', '-')} must be {kind} in {interval}, got {value:g}")


def subset_sizes(text: str) -> List[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--num-features expects comma-separated whole numbers, got '{text}'") from None
    if not sizes or min(sizes) < 1:
        raise ValueError(f"--num-features expects subset sizes >= 1, got '{text}'")
    return sizes


def read_input(args, spark, require_label=True, budget=None):
    """The ``--input`` of a study command, with its column and size flags and the feature names given."""
    from sparkfs.io.feature_names import read_named_dataset

    return read_named_dataset(spark, args.input, args.format, feature_names(args, spark),
                              label_col=args.label_col or "label",
                              features_col=args.features_col or "features", require_label=require_label,
                              require_features=bool(args.features_col),
                              num_features=args.vector_size, **(budget or {}))


def feature_names(args, spark=None):
    """The names of ``--feature-names`` / ``--feature-names-from`` (None without them), read once:
    a local file before Spark starts, a URI through ``spark``."""
    from sparkfs.io.feature_names import load_names, requested_names

    if getattr(args, "loaded_names", None) is None:
        request = requested_names(getattr(args, "feature_names", None), getattr(args, "feature_names_from", None))
        args.loaded_names = load_names(request, spark)
    return args.loaded_names


def stage(name: str) -> Stage:
    return Stage(log, name)


def start_study_session(args, check_output):
    """The start of ``instance-weights``, ``stability`` and ``evaluate``: the input and Spark
    target, the numeric options, the job options, ``check_output(args)`` and the named columns,
    all before Spark starts; then the session. Returns None when ``--if-exists skip`` skipped the
    run (already logged)."""
    from sparkfs.spark.session import get_spark

    apply_input_table(args)
    if not args.input:
        raise ConfigError("no input: give --input" + (" or --input-table" if hasattr(args, "input_table") else ""))
    if not args.format:
        raise ConfigError("no input format: give --format")
    args.master, args.remote = spark_target(args.master, args.remote, args.output)
    if args.remote and args.format != TABLE:
        args.input = absolute_for_remote(args.input)
        args.test_input = absolute_for_remote(getattr(args, "test_input", None))
    check_numeric_options(args)
    skipped = apply_to_study_args(args)
    configure_log_format(log, args.log_format, args.run_id)
    if skipped:
        log_line(log, args.log_format, skipped, "skipped")
        return None
    check_output(args)  # an unsafe output is refused before Spark starts
    for path in (args.input, getattr(args, "test_input", None)):  # the named columns, before Spark starts
        if path and not args.remote and args.format != TABLE:  # a Connect server's paths are its own; a table no file
            location = location_of(path)
            check_input_early(location, args.format, label_col=args.label_col or "label",
                              features_col=args.features_col)
            check_names_early(feature_names(args), location, args.format, label_col=args.label_col or "label",
                              weight_col=None, features_col=args.features_col, vector_size=args.vector_size)
            if path == args.input:  # --keep / --exclude of evaluate and stability
                study_forced(args, *names_before_spark(location, args.format, feature_names(args),
                                                       label_col=args.label_col or "label", weight_col=None,
                                                       features_col=args.features_col, vector_size=args.vector_size))
    spark = get_spark(args.master, conf=session_conf(spark_conf(args), args.verbose, remote=args.remote),
                      remote=args.remote)
    install_handlers()  # a new SparkContext installed its own SIGINT handler
    return spark


def add_forced_args(parser) -> None:
    parser.add_argument("--keep", metavar="NAMES|INDICES", help="features always in the selection, whatever their "
                        "score: comma-separated names or 0-based indices; they count toward --num-features and are "
                        "reported as forced")
    parser.add_argument("--exclude", metavar="NAMES|INDICES", help="features never selected (still scored): "
                        "comma-separated names or 0-based indices")


def forced_features(keep_given, exclude_given, names: Optional[List[str]], size: Optional[int],
                    positional_names: bool = False, flags: Optional[Tuple[str, str]] = None):
    """(kept, excluded) feature indices of ``--keep`` / ``--exclude`` (or the config's ``selection.keep`` /
    ``selection.exclude``: text or a list) resolved against ``names`` (None: not known yet) and ``size``,
    or None while a name cannot be resolved; a feature in both is refused (exit 2). ``flags``: where each
    was given, for the messages (default ``--keep``, ``--exclude``)."""
    from sparkfs.io.feature_names import EXCLUDE_FLAG, KEEP_FLAG, check_forced, feature_list, resolve_features

    flags = flags or (KEEP_FLAG, EXCLUDE_FLAG)
    keep_tokens = feature_list(keep_given)
    keep = resolve_features(keep_tokens, flags[0], names, size, positional_names)
    exclude = resolve_features(feature_list(exclude_given), flags[1], names, size, positional_names)
    if keep is None or exclude is None:
        return None
    check_forced(keep, exclude, keep_tokens, None, "", flags)
    return keep, exclude


def check_kept_count(selector, keep: List[int], size: Optional[int], counts: Optional[List[int]] = None,
                     flags: Optional[Tuple[str, str]] = None) -> None:
    """Refuse more kept features than the selection holds: ``counts`` (evaluate's sizes, the smallest),
    else the selector's count rule (--num-features; a percentile once ``size`` is known)."""
    from sparkfs.io.feature_names import EXCLUDE_FLAG, KEEP_FLAG, check_forced

    flags = flags or (KEEP_FLAG, EXCLUDE_FLAG)
    if counts:
        check_forced(keep, [], [], min(counts), f"the smallest --num-features {min(counts)}", flags)
        return
    mode = selector.getSelectionMode()
    if mode == "percentile" and size is not None:
        count = selector.selectionCount(size)
        said = f"--selection-mode percentile at {selector.getSelectionThreshold():g} of {size:,} features"
    elif mode == "numTopFeatures" and not selector.isSet(selector.threshold):
        count = selector.getNumFeatures() if size is None else min(selector.getNumFeatures(), size)
        said = f"--num-features {selector.getNumFeatures()}"
    else:
        return
    check_forced(keep, [], [], count, said, flags)


def apply_forced(selector, args_or_conf, names: Optional[List[str]], size: Optional[int],
                 positional_names: bool = False) -> bool:
    """Set ``keptFeatures`` / ``excludedFeatures`` of ``selector`` from ``--keep`` / ``--exclude``
    (``args_or_conf``: an object or dict with ``keep`` and ``exclude``, and optionally ``flags``: where
    each was given); True when they are resolved (or not given), False while a name waits for the
    input's names."""
    get = args_or_conf.get if isinstance(args_or_conf, dict) else lambda key: getattr(args_or_conf, key, None)
    if not get("keep") and not get("exclude"):
        return True
    resolved = forced_features(get("keep"), get("exclude"), names, size, positional_names, get("flags"))
    if resolved is None:
        return False
    check_kept_count(selector, resolved[0], size, flags=get("flags"))
    selector._set(keptFeatures=resolved[0], excludedFeatures=resolved[1])
    return True


def names_before_spark(location: Location, fmt: str, names, *, label_col: Optional[str],
                       weight_col: Optional[str], features_col: Optional[str], vector_size: Optional[int]):
    """(the features' names, their count, whether they are ``f<index>``) as known before Spark starts:
    ``names`` given (``--feature-names``), a local CSV header or Parquet footer, a LIBSVM input's
    ``f<column>`` names and ``--vector-size``; None where a Spark job would tell."""
    from sparkfs.io.input_features import known_feature_names, known_vector_size

    known_names = list(names.names) if names is not None else None
    size = len(known_names) if known_names is not None else (vector_size if fmt == "libsvm" else None)
    if fmt in ("csv", "parquet") and location.local is not None:
        columns = dict(label_col=label_col, weight_col=weight_col, features_col=features_col or "features")
        size = size if size is not None else known_vector_size(location, fmt, **columns)
        known_names = known_names if known_names is not None else known_feature_names(location, fmt, **columns)
    return known_names, size, fmt == "libsvm" and names is None


def forced_of_config(selection: Dict[str, Any], args) -> Dict[str, Any]:
    """The kept and excluded features of a resolved config, taken out of its ``selection`` section (where
    ``--keep`` / ``--exclude`` overrode ``selection.keep`` / ``selection.exclude``), with where each was given
    (``flags``: ``--keep``, or ``selection.keep in job.yaml``), for the messages."""
    forced: Dict[str, Any] = {}
    said = []
    for key in ("keep", "exclude"):
        forced[key] = selection.pop(key, None)
        from_file = forced[key] is not None and not getattr(args, key, None)
        said.append(f"selection.{key} in {args.config}" if from_file else f"--{key}")
    forced["flags"] = tuple(said)
    return forced


def forced_before_spark(selector, forced, location: Location, fmt: str, names, **columns) -> None:
    """``--keep`` / ``--exclude`` resolved and checked before Spark starts wherever the names and size
    are known without a job (:func:`names_before_spark`); else after the read, before the fit."""
    if forced.get("keep") or forced.get("exclude"):
        known_names, size, positional = names_before_spark(location, fmt, names, **columns)
        apply_forced(selector, forced, known_names, size, positional_names=positional)


def study_forced(args, names: Optional[List[str]], size: Optional[int], positional_names: bool = False):
    """A study's ``--keep`` / ``--exclude`` as (kept, excluded) indices, checked against the smallest
    of its ``--num-features`` sizes; None without them, or while a name waits for the input's names."""
    if not getattr(args, "keep", None) and not getattr(args, "exclude", None):
        return None
    resolved = forced_features(args.keep, args.exclude, names, size, positional_names)
    if resolved is not None:
        check_kept_count(None, resolved[0], size, counts=subset_sizes(args.num_features))
    return resolved
