"""Command line: ``sparkfs select ...`` — config -> Selector(**params) -> fit -> write. No math here.

Exit codes (README, "Exit codes"): 0 done, or skipped (``--if-exists skip``); 1 a Spark or other
failure (out of memory, a Spark Connect server that cannot be reached); 2 bad input, configuration, a
refused output or a master Spark rejects (the message names the problem); 130 interrupted by Ctrl-C
(SIGINT), 143 stopped by SIGTERM (nothing written either way).
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
import warnings
from typing import Any, Dict, List, Optional

from sparkfs._version import __version__
from sparkfs.io.config import DEFAULTS, ConfigError, check_config, load_config, merge_config, parse_param
from sparkfs.io.output import (OutputExistsError, check_output_early, check_output_free, features_table,
                               write_selection_output)
from sparkfs.io.readers import FORMATS, check_input_early, read_dataset, selector_budget
from sparkfs.job_options import (Stage, add_job_args, apply_to_study_args, configure_log_format, decide_if_exists,
                                 log_line, run_fields, run_id_of, skip_if_complete, utc_now, versions, with_run_id)
from sparkfs.errors import InvalidInputError, SparkResourceError, SparkStartError
from sparkfs.interruption import add_progress_args, install_handlers, interruptible, progress_conf, reporting
from sparkfs.progress import Interrupted
from sparkfs.spark.failures import describe, resource_failure
from sparkfs.evaluate_command import add_evaluate_commands, run_compare, run_evaluate, run_report
from sparkfs.evaluate_command import check_output as check_evaluate_output
from sparkfs.study_commands import add_study_commands, run_instance_weights, run_stability
from sparkfs.study_commands import check_output as check_study_output

log = logging.getLogger("sparkfs")
_INSTANCE_WEIGHT = "__sparkfs_instance_weight"


def add_input_args(parser) -> None:
    parser.add_argument("--input", help="input path")
    parser.add_argument("--format", choices=FORMATS, help="input format")
    parser.add_argument("--label-col", help="label column of a parquet/csv input (default: label; a LIBSVM "
                        "input's label is named so)")
    parser.add_argument("--features-col", help="vector column of a parquet input (default: features; when the "
                        "input has no such vector column, its numeric columns other than the label are the features)")
    parser.add_argument("--vector-size", type=int, help="LIBSVM: the number of features (largest index allowed); "
                        "default: the largest index in the input. Either must fit the driver budget")


def add_spark_args(parser) -> None:
    parser.add_argument("--master", help="Spark master URL (default local[*]; spark-submit sets its own; "
                        "sc://HOST:PORT is taken as --remote)")
    parser.add_argument("--remote", help="Spark Connect server, sc://HOST:PORT (default: $SPARK_REMOTE when "
                        "--master is not given); driver and executor settings then belong to the server")
    parser.add_argument("--driver-memory", help="spark.driver.memory, e.g. 8g (default with a local master: half the "
                        "machine's memory; spark-submit sets its own)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for the session this command starts (repeatable)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparkfs", description="Distributed feature selection on Apache Spark")
    parser.add_argument("--version", action="version", version=f"sparkfs {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    select = commands.add_parser("select", help="score and select features, write features.parquet + summary.json")
    select.add_argument("--config", help="YAML job config (conf/*.yaml); flags override it")
    add_input_args(select)
    select.add_argument("--weight-col", help="per-instance weight column")
    select.add_argument("--instance-weighting", choices=["none", "margin"],
                        help="weight the rows by Han & Yu's margin-based weights first (methods that take weightCol)")
    select.add_argument("--method", help="selector: see `sparkfs methods`")
    group = select.add_mutually_exclusive_group()
    group.add_argument("--num-features", type=int, help="select the top K features")
    group.add_argument("--threshold", type=float, help="select features scoring above T (beta for Fisher-Markov)")
    select.add_argument("--selection-mode", choices=["num-top-features", "percentile", "fpr", "fdr", "fwe"],
                        help="Spark ML's selection modes: percentile (the top fraction X of the features, by "
                        "score; every method), fpr (p-value < X), fdr (Benjamini-Hochberg at X), fwe (p-value < X / p) "
                        "for the methods with p-values (anova, chi2, chi2-categorical); default num-top-features "
                        "(--num-features / --threshold)")
    select.add_argument("--selection-threshold", type=float, metavar="X",
                        help="percentile's fraction (default 0.1) or the alpha of fpr, fdr, fwe (default 0.05), "
                        "in (0, 1]")
    select.add_argument("--deterministic", action="store_true", default=None,
                        help="the same bits for any partitioning of the same rows (rows laid out by row id, exact "
                        "sums; slower: 1.3-3x per pass on wide sparse rows); default off: results equal across "
                        "partitionings to rounding. The summary records which mode ran")
    select.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="method param (repeatable)")
    select.add_argument("--output", help="output directory: a local path, or a URI (hdfs://, s3a://, file:///...) "
                        "written through Spark's Hadoop file system")
    select.add_argument("--overwrite", action="store_true", default=None,
                        help="replace an existing output directory written by sparkfs select (and holding nothing "
                        "else); the same as --if-exists overwrite")
    select.add_argument("--driver-budget-mb", type=float, help="driver memory for the input's dense per-feature "
                        "state, bounding the LIBSVM vector size (default: the method's driverBudgetMB, else 1024)")
    add_spark_args(select)
    add_study_commands(commands, add_input_args, add_spark_args)
    add_evaluate_commands(commands, add_input_args, add_spark_args)
    _add_job_options(commands)

    for command in commands.choices.values():  # every command that runs Spark
        add_progress_args(command)
    methods = commands.add_parser("methods", help="list the methods (sparkfs methods NAME: its params)")
    methods.add_argument("name", nargs="?", help="a method: list its params with meanings, defaults and values")
    return parser


def _add_job_options(commands) -> None:
    """--run-id, --if-exists, --log-format, --verbose on the commands that run Spark jobs."""
    for name in ("select", "instance-weights"):
        add_job_args(commands.choices[name])
    for name in ("evaluate", "stability"):
        add_job_args(commands.choices[name], study=True)


#: The flag that sets each config key (named in a refusal of a flag's value).
_FLAG_OF_KEY = {"input.path": "--input", "input.format": "--format", "input.label_col": "--label-col",
                "input.features_col": "--features-col", "input.weight_col": "--weight-col", "method": "--method",
                "instance_weighting": "--instance-weighting", "deterministic": "--deterministic",
                "selection.num_features": "--num-features",
                "selection.threshold": "--threshold", "selection.selection_mode": "--selection-mode",
                "selection.selection_threshold": "--selection-threshold", "output.path": "--output",
                "spark.master": "--master",
                "spark.remote": "--remote",
                "input.num_features": "--vector-size", "input.driver_budget_mb": "--driver-budget-mb"}


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


def _flags_to_config(args) -> Dict[str, Any]:
    return {
        "input": {"path": args.input, "format": args.format, "label_col": args.label_col,
                  "features_col": args.features_col, "weight_col": args.weight_col,
                  "num_features": args.vector_size, "driver_budget_mb": args.driver_budget_mb},
        "method": args.method,
        "instance_weighting": args.instance_weighting,
        "deterministic": args.deterministic,
        "params": dict(parse_param(text) for text in args.param),
        "selection": {"num_features": args.num_features, "threshold": args.threshold,
                      "selection_mode": args.selection_mode, "selection_threshold": args.selection_threshold},
        "output": {"path": args.output, "overwrite": args.overwrite},
        "spark": {"master": args.master, "remote": args.remote, "conf": _spark_conf(args)},
    }


def _spark_conf(args) -> Dict[str, str]:
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


def _flag_names(flags: Dict[str, Any]) -> Dict[str, str]:
    """Dotted config key -> the flag the user typed, for the keys the flags set."""
    names = dict(_FLAG_OF_KEY)
    names.update({f"params.{name}": f"--param {name}" for name in flags["params"]})
    names.update({f"spark.conf.{key}": f"--conf {key}" for key in flags["spark"]["conf"]})
    return names


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
        raise ConfigError(f"give either --master ({master}) or --remote ({remote}), not both (config: spark.master, "
                          "spark.remote)")
    if master and master.startswith("sc://"):
        master, remote = None, master
    if not master and not remote and os.environ.get("SPARK_REMOTE") and "PYSPARK_GATEWAY_PORT" not in os.environ:
        remote = os.environ["SPARK_REMOTE"]
    if remote:
        connect_endpoint(remote)
        if output and not is_local_path(output):
            raise ConfigError(f"--output {output}: a Spark Connect session ({remote}) cannot write a URI (it goes "
                              "through the JVM's Hadoop FileSystem, which a Connect client does not have): give a "
                              "local or mounted path")
    return master, remote


def absolute_for_remote(path: Optional[str]) -> Optional[str]:
    """A relative local input path made absolute: a Connect server resolves paths from its own
    working directory, not the command's."""
    import os

    from sparkfs.io.stores import is_local_path

    return os.path.abspath(path) if path and is_local_path(path) else path


def resolve_config(args) -> Dict[str, Any]:
    loaded = load_config(args.config) if args.config else {}
    config = merge_config(DEFAULTS, loaded)
    # Unsupervised-capable methods use labels only when the user names a label column.
    label_named = bool(args.label_col) or bool((loaded.get("input") or {}).get("label_col"))
    features_named = bool(args.features_col) or bool((loaded.get("input") or {}).get("features_col"))
    flags = _flags_to_config(args)
    if any(value is not None for value in (args.num_features, args.threshold, args.selection_mode)):
        config["selection"] = dict.fromkeys(config["selection"])  # one selection rule: the flags'
        # (--selection-threshold alone keeps the file's selection_mode)
    config = merge_config(config, flags)
    if args.master or args.remote:  # a master or remote flag replaces the file's choice of either
        config["spark"].update(master=args.master, remote=args.remote)
    check_config(config, names=_flag_names(flags))  # the file's values were checked as it was read
    _apply_job_options(config, args, loaded)
    if not config["input"]["path"]:
        raise ConfigError("no input: give --input or input.path in the config")
    if not config["output"]["path"]:
        raise ConfigError("no output: give --output or output.path in the config")
    selection = config["selection"]
    if selection.get("num_features") is not None and selection.get("threshold") is not None:
        raise ConfigError("give either num_features or threshold, not both")
    spark_conf = config["spark"]
    spark_conf["master"], spark_conf["remote"] = spark_target(spark_conf.get("master"), spark_conf.get("remote"),
                                                              config["output"]["path"])
    if spark_conf["remote"]:
        config["input"]["path"] = absolute_for_remote(config["input"]["path"])
    config["input"]["label_named"] = label_named
    config["input"]["features_named"] = features_named
    config["config_file"] = args.config  # an input too: the output must not hold it
    return config


def _apply_job_options(config: Dict[str, Any], args, loaded: Dict[str, Any]) -> None:
    """The run id (``{run_id}`` in the output path), the ``--if-exists`` rule, the log options."""
    config["run_id"] = run_id_of(getattr(args, "run_id", None), config.get("run_id"))
    where = "--output" if args.output else "output.path"
    config["output"]["path"] = with_run_id(config["output"]["path"], config["run_id"], where)
    if_exists = decide_if_exists(getattr(args, "if_exists", None), args.overwrite, loaded.get("output") or {},
                                 args.config or "the config")
    config["output"].update(if_exists=if_exists, overwrite=if_exists == "overwrite")
    config["verbose"] = bool(getattr(args, "verbose", False))
    configure_log_format(log, getattr(args, "log_format", "text"), config["run_id"])


def _stage(name: str) -> Stage:
    return Stage(log, name)


def _fit_announcing_ties(selector, frame):
    """``selector.fit(frame)``; a selection decided by ties, and fits that did not converge, are
    announced on stderr as one log line each (the summary records them too), other warnings pass
    as they are."""
    from sparkfs.errors import DefaultSampleWarning, SelectionTieWarning, SolverConvergenceWarning

    announced = (SelectionTieWarning, SolverConvergenceWarning, DefaultSampleWarning)
    with warnings.catch_warnings(record=True) as caught:
        for category in announced:
            warnings.simplefilter("always", category)
        model = selector.fit(frame)
    for warning in caught:
        if issubclass(warning.category, announced):
            log.warning("%s", warning.message)
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return model


def run_select(config: Dict[str, Any], spark=None) -> Dict[str, Any]:
    """Run one selection job from a resolved config; returns the summary written."""
    from sparkfs.methods import apply_selection, build_selector
    from sparkfs.spark.session import get_spark

    started, started_at = time.perf_counter(), utc_now()
    input_conf, selection = config["input"], config["selection"]
    output_conf = config["output"]
    inputs = [input_conf["path"], config.get("config_file")]
    skipped = skip_if_complete(output_conf["path"], "select", output_conf.get("if_exists", "fail"), inputs)
    if skipped:
        return {"skipped": skipped, "output": output_conf["path"]}
    # A URI is checked in full once the session (and its Hadoop file systems) exists.
    checked = check_output_early(output_conf["path"], bool(output_conf["overwrite"]), inputs=inputs)
    params = dict(config.get("params") or {})
    if config.get("deterministic") is not None:  # --deterministic / the config's deterministic: key
        params["deterministic"] = config["deterministic"]
    selector = build_selector(config["method"], params)
    apply_selection(selector, config["method"], selection)
    supervised = selector._requires_label
    # The named columns against the header or footer of a local input, before Spark starts (on a
    # Spark Connect server the input's paths are the server's: it checks them when it reads).
    if not config["spark"].get("remote"):
        check_input_early(input_conf["path"], input_conf["format"],
                          label_col=input_conf["label_col"] if supervised else None,
                          weight_col=input_conf.get("weight_col"),
                          features_col=input_conf["features_col"] if input_conf.get("features_named") else None)
    log.info("run %s: %s -> %s", config.get("run_id"), input_conf["path"], output_conf["path"],
             extra={"event": "start", "output": output_conf["path"]})

    with _stage("spark"):
        spark = spark or get_spark(config["spark"].get("master"),
                                   conf=_session_conf(config["spark"].get("conf"), config.get("verbose", False),
                                                      remote=config["spark"].get("remote")),
                                   remote=config["spark"].get("remote"))
        install_handlers()  # a new SparkContext installed its own SIGINT handler
    if not checked:
        check_output_free(output_conf["path"], bool(output_conf["overwrite"]), spark=spark, inputs=inputs)
    if not supervised and not input_conf.get("label_named") and selector.getOrDefault("groups") == "auto":
        selector.set(selector.getParam("groups"), "clusters")  # no label column named: unsupervised
    with _stage("read"):
        dataset = read_dataset(
            spark, input_conf["path"], input_conf["format"], label_col=input_conf["label_col"],
            features_col=input_conf["features_col"], weight_col=input_conf.get("weight_col"),
            num_features=input_conf.get("num_features"), require_label=supervised,
            require_features=bool(input_conf.get("features_named")),
            **selector_budget(selector, input_conf.get("driver_budget_mb")),
        )
    _refuse_empty_percentile(selector, dataset.num_features)
    selector.setFeaturesCol(dataset.features_col).setLabelCol(dataset.label_col)
    if input_conf.get("weight_col"):
        selector.setWeightCol(input_conf["weight_col"])
    frame = dataset.df
    if config.get("instance_weighting") == "margin":
        if input_conf.get("weight_col"):
            raise ConfigError("give either a weight column or instance_weighting: margin, not both")
        from sparkfs.selectors.instance_weighting import MarginInstanceWeighter

        with _stage("instance-weights"):
            frame = MarginInstanceWeighter(featuresCol=dataset.features_col, labelCol=dataset.label_col,
                                           outputCol=_INSTANCE_WEIGHT,
                                           deterministic=selector.getDeterministic()).transform(frame)
        selector.setWeightCol(_INSTANCE_WEIGHT)
    with _stage("fit"):
        model = _fit_announcing_ties(selector, frame)
    if model.numInputFeatures != dataset.num_features:
        raise InvalidInputError(
            f"the model has {model.numInputFeatures} scores but the input declares {dataset.num_features} features"
        )
    _refuse_empty_selection(model, dataset.feature_names, selection)
    p_values = model.pValues
    summary = {
        "method": config["method"],
        "params": {param.name: value for param, value in selector.extractParamMap().items()},
        **model.summary,
        "selected_indices": model.selectedFeatures,
        "selected_names": [dataset.feature_names[i] for i in model.selectedFeatures],
        "input": {"path": input_conf["path"], "format": input_conf["format"]},
        "seconds": round(time.perf_counter() - started, 3),
        **versions(spark),  # with the memory settings a session started here was given
        **run_fields(config.get("run_id") or run_id_of(None), started_at, inputs, spark),
    }
    with _stage("write"):
        table = features_table(model.scores, model.selectedFeatures, dataset.feature_names, p_values=p_values)
        output_path = write_selection_output(output_conf["path"], table, summary,
                                             overwrite=bool(output_conf["overwrite"]), spark=spark)
    summary["output"] = output_path
    summary["top_features"] = [
        (dataset.feature_names[i], float(model.scores[i]), None if p_values is None else float(p_values[i]))
        for i in model.ranking[: min(10, model.numInputFeatures)]
    ]
    return summary


def _session_conf(conf: Optional[Dict[str, Any]], verbose: bool, remote: Optional[str] = None) -> Dict[str, Any]:
    """The Spark settings of a session the CLI starts: Spark's own WARN lines off unless ``--verbose``
    (a Spark Connect server keeps its own log settings)."""
    from sparkfs.spark.session import quiet_log_settings

    return {**(conf or {})} if verbose or remote else quiet_log_settings(conf or {})


def _refuse_empty_selection(model, feature_names, selection) -> None:
    """A threshold above every score, or a p-value mode no p-value passes, selects nothing:
    refused before anything is written."""
    if len(model.selectedFeatures):
        return
    import numpy as np

    mode, alpha = model.getSelectionMode(), model.getSelectionThreshold()
    if mode in ("fpr", "fdr", "fwe"):
        p_values = model.pValues
        best_index = int(np.argmin(p_values))
        bar = {"fpr": f"p-value < {alpha:g}", "fwe": f"p-value < {alpha:g} / {p_values.size} features",
               "fdr": f"p_(i) <= {alpha:g} i / {p_values.size} for some i (Benjamini-Hochberg)"}[mode]
        raise InvalidInputError(f"--selection-mode {mode} at {alpha:g} selects no feature ({bar}): the smallest "
                                f"p-value is {p_values[best_index]:.6g} (feature '{feature_names[best_index]}'); "
                                "give a larger --selection-threshold, or --num-features K to select the top K")
    scores = np.asarray(model.scores, dtype=float)
    finite = np.flatnonzero(np.isfinite(scores))
    if finite.size:
        top = finite[np.argmax(scores[finite])]
        best = f"the highest score is {scores[top]:.6g} (feature '{feature_names[top]}')"
    else:
        best = "no score is finite"
    rule = f"threshold {selection['threshold']:g}" if selection.get("threshold") is not None else "the selection"
    raise InvalidInputError(f"{rule} selects no feature: {best}; give a lower --threshold, or --num-features K "
                            "to select the top K")


def _refuse_empty_percentile(selector, num_features: int) -> None:
    """A percentile that keeps floor(p x fraction) = 0 features is refused once the input's size
    is known, before the fit."""
    if selector.getSelectionMode() == "percentile" and selector.selectionCount(num_features) < 1:
        fraction = selector.getSelectionThreshold()
        enough = math.ceil(1e4 / num_features) / 1e4
        raise InvalidInputError(f"--selection-mode percentile at {fraction:g} selects no feature: floor({num_features} "
                                f"features x {fraction:g}) = 0; give --selection-threshold {enough:g} or more, or "
                                "--num-features K to select the top K")


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


def _run_study_command(args) -> int:
    """``instance-weights`` or ``stability``: a session from the flags, the command, a short report."""
    from sparkfs.spark.session import get_spark

    if args.command == "report":
        print("written: " + ", ".join(run_report(args)["written"]))
        return 0
    if args.command == "compare":
        compared = run_compare(args)
        print(compared["text"] + "written: " + ", ".join(compared["written"]))
        return 0
    if not args.input:
        raise ConfigError("no input: give --input")
    if not args.format:
        raise ConfigError("no input format: give --format")
    args.master, args.remote = spark_target(args.master, args.remote, args.output)
    if args.remote:
        args.input = absolute_for_remote(args.input)
        args.test_input = absolute_for_remote(getattr(args, "test_input", None))
    check_numeric_options(args)
    skipped = apply_to_study_args(args)
    configure_log_format(log, args.log_format, args.run_id)
    if skipped:
        log_line(log, args.log_format, skipped, "skipped")
        return 0
    if args.command == "evaluate":  # an unsafe output is refused before Spark starts
        check_evaluate_output(args)
    else:
        check_study_output(args)
    for path in (args.input, getattr(args, "test_input", None)):  # the named columns, before Spark starts
        if path and not args.remote:  # a Connect server's paths are its own
            check_input_early(path, args.format, label_col=args.label_col or "label", features_col=args.features_col)
    spark = get_spark(args.master, conf=_session_conf(_spark_conf(args), args.verbose, remote=args.remote),
                      remote=args.remote)
    install_handlers()  # a new SparkContext installed its own SIGINT handler
    if args.command == "instance-weights":
        summary = run_instance_weights(args, spark)
        print(f"rows={summary['n_rows']} weights from {summary['weight_min']:.4g} to {summary['weight_max']:.4g} "
              f"(sum {summary['weight_sum']:.6g}) seconds={summary['seconds']}")
        print(f"output: {summary['output']}/weights.parquet, {summary['output']}/summary.json")
        return 0
    if args.command == "evaluate":
        report = run_evaluate(args, spark)
        print(f"(method, fold) pairs fitted now: {report['done']}; report: {report['written'][-1]}")
        from sparkfs.evaluation.recommendation import recommendation_lines

        for line in recommendation_lines(report["recommendation"]):
            print("recommended for " + line)
        return 0
    report = run_stability(args, spark)
    print(f"{'k':>5} {'kuncheva':>9} {'jaccard':>8}")
    for row in report["summary"]["subsets"]:
        print(f"{row['k']:>5} {row['kuncheva']:9.4f} {row['jaccard']:8.4f}")
    print("output: " + ", ".join(report["written"]))
    return 0


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of each record (not the stream of the
    first call: in a process that calls :func:`main` several times, as notebooks and tests do, that
    one may be closed by then)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # logging.StreamHandler.__init__ assigns it
        pass


def _report_failure(args, text: str, exit_code: int) -> int:
    """The last line of a failed command on stderr (a JSON object with ``--log-format json``);
    a failure (exit 1) starts a line of its own, as the JVM may still be writing to stderr."""
    log_format = getattr(args, "log_format", "text")
    if exit_code == 1 and log_format == "text":
        text = "\n" + text
    log_line(log, log_format, text, "error" if exit_code == 2 else "failed", logging.ERROR, exit_code=exit_code)
    return exit_code


def main(argv: Optional[List[str]] = None) -> int:
    if not log.handlers:  # our own handler: leave the root logger (py4j, pyspark) alone
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("sparkfs %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    args = build_parser().parse_args(join_negative_values(list(sys.argv[1:] if argv is None else argv)))
    args.argv = list(sys.argv[1:] if argv is None else argv)
    configure_log_format(log, getattr(args, "log_format", "text"), getattr(args, "run_id", None))
    if args.command == "methods":
        from sparkfs.methods import EVALUATE_ONLY, METHODS, method_params, methods_table

        if args.name and args.name not in METHODS and args.name not in EVALUATE_ONLY:
            print(f"sparkfs: error: unknown method '{args.name}': use one of "
                  f"{', '.join(sorted([*METHODS, *EVALUATE_ONLY]))}", file=sys.stderr)
            return 2
        print("\n".join(method_params(args.name) if args.name else methods_table()))
        return 0
    try:
        with reporting(args, log), interruptible():
            if args.command != "select":
                return _run_study_command(args)
            config = resolve_config(args)
            summary = run_select(config)
    except Interrupted as stop:
        print("\nsparkfs: interrupted", file=sys.stderr)
        return 128 + stop.signal_number
    except (InvalidInputError, ConfigError, OutputExistsError, ValueError, FileNotFoundError) as error:
        return _report_failure(args, f"sparkfs: error: {error}", 2)
    except (SparkResourceError, SparkStartError) as error:  # on a line of its own: the JVM may still be writing
        return _report_failure(args, f"sparkfs: failed: {error}", 1)
    except Exception as error:  # a Spark failure that diagnosis could not name
        resources = resource_failure(error)
        if resources is not None:
            return _report_failure(args, f"sparkfs: failed: {resources}", 1)
        text = describe(error)
        return _report_failure(args, f"sparkfs: failed: {text.splitlines()[0] if text else type(error).__name__}", 1)
    if "skipped" in summary:
        log_line(log, getattr(args, "log_format", "text"), summary["skipped"], "skipped", output=summary["output"])
        return 0
    print(f"method={summary['method']} rows={summary['n_rows']} features={summary['n_features']} "
          f"classes={summary['n_classes']} selected={len(summary['selected_indices'])} seconds={summary['seconds']}")
    with_p = summary["top_features"] and summary["top_features"][0][2] is not None
    print("top features (name, score, p-value):" if with_p else "top features (name, score):")
    for name, score, p_value in summary["top_features"]:
        print(f"  {name:20s} {score: .6g}" + (f"  {p_value:.3g}" if with_p else ""))
    print(f"output: {summary['output']}/features.parquet, {summary['output']}/summary.json")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
