"""``sparkfs select``: config -> Selector(**params) -> fit -> write features.parquet + summary.json. No math here."""

from __future__ import annotations

import math
import time
import warnings
from typing import Any, Dict

from sparkfs.commands import Command
from sparkfs.commands.arguments import (
    absolute_for_remote,
    add_forced_args,
    add_input_args,
    add_input_table_arg,
    add_missing_arg,
    add_spark_args,
    apply_forced,
    forced_before_spark,
    forced_of_config,
    input_under_missing,
    log,
    session_conf,
    spark_conf,
    spark_target,
    stage,
    table_input,
)
from sparkfs.commands.tracking import add_mlflow_args, log_run, mlflow_target, select_record
from sparkfs.errors import InvalidInputError
from sparkfs.interruption import install_handlers
from sparkfs.io.config import DEFAULTS, ConfigError, check_config, load_config, merge_config, parse_param
from sparkfs.io.feature_names import check_names_early, load_names, read_named_dataset, requested_names
from sparkfs.io.output import check_output_early, check_output_free, features_table, write_selection_output
from sparkfs.io.output_safety import UnsafeOutputError, check_apart
from sparkfs.io.output_tables import OutputTables, append_run, check_output_tables
from sparkfs.io.readers import TABLE, check_input_early, selector_budget
from sparkfs.io.stores import is_local_path, location_of
from sparkfs.job_options import (
    configure_log_format,
    decide_if_exists,
    input_fingerprint,
    log_line,
    refuse_changed_inputs,
    refuse_if_inputs_changed_quietly,
    run_fields,
    run_id_of,
    skip_if_complete,
    utc_now,
    versions,
    with_run_id,
)
from sparkfs.selectors.saved_selection import MODEL_DIRECTORY, model_files

_INSTANCE_WEIGHT = "__sparkfs_instance_weight"


def add_arguments(commands) -> None:
    select = commands.add_parser("select", help="score and select features, write features.parquet + summary.json")
    select.add_argument("--config", help="YAML job config (conf/*.yaml); flags override it")
    add_input_args(select)
    add_input_table_arg(select)
    select.add_argument("--weight-col", help="per-instance weight column")
    select.add_argument("--instance-weighting", choices=["none", "margin"],
                        help="weight the rows by Han & Yu's margin-based weights first (methods that take weightCol)")
    select.add_argument("--method", help="selector: see `sparkfs methods`")
    select.add_argument("--label-type", choices=["categorical", "continuous"],
                        help="the label is a class (categorical, default) or a regression target (continuous: "
                        "f-regression); never guessed from the data")
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
    add_missing_arg(select, pairwise=True)
    select.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="method param (repeatable)")
    select.add_argument("--output", help="output directory: a local path, or a URI (hdfs://, s3a://, file:///...) "
                        "written through Spark's Hadoop file system")
    select.add_argument("--write-reduced", metavar="PATH", help="also write the input with its vector sliced to the "
                        "selected features (every other column kept), as `sparkfs apply` writes it: a Parquet "
                        "directory for the next job, from the rows the fit read")
    select.add_argument("--output-table", metavar="NAME", help="also append the run's features rows to the table NAME "
                        "and its summary row to NAME_runs of the session's catalog (created if missing; both "
                        "partitioned by run_id, so --if-exists acts on the run id)")
    select.add_argument("--overwrite", action="store_true", default=None,
                        help="replace an existing output directory written by sparkfs select (and holding nothing "
                        "else); the same as --if-exists overwrite")
    select.add_argument("--driver-budget-mb", type=float, help="driver memory for the input's dense per-feature "
                        "state, bounding the LIBSVM vector size (default: the method's driverBudgetMB, else 1024)")
    add_forced_args(select)
    add_mlflow_args(select)
    add_spark_args(select)


#: The flag that sets each config key (named in a refusal of a flag's value).
_FLAG_OF_KEY = {"input.path": "--input", "input.table": "--input-table", "input.format": "--format",
                "input.label_col": "--label-col",
                "input.features_col": "--features-col", "input.weight_col": "--weight-col", "method": "--method",
                "instance_weighting": "--instance-weighting", "deterministic": "--deterministic",
                "missing": "--missing",
                "label_type": "--label-type",
                "selection.num_features": "--num-features",
                "selection.threshold": "--threshold", "selection.selection_mode": "--selection-mode",
                "selection.selection_threshold": "--selection-threshold", "selection.keep": "--keep",
                "selection.exclude": "--exclude", "output.path": "--output",
                "output.reduced": "--write-reduced", "output.table": "--output-table",
                "spark.master": "--master",
                "spark.remote": "--remote",
                "input.num_features": "--vector-size", "input.driver_budget_mb": "--driver-budget-mb",
                "input.feature_names": "--feature-names", "input.feature_names_from": "--feature-names-from",
                "mlflow": "--mlflow", "mlflow_experiment": "--mlflow-experiment"}


def _flags_to_config(args) -> Dict[str, Any]:
    return {
        "input": {"path": args.input, "table": args.input_table, "format": args.format, "label_col": args.label_col,
                  "features_col": args.features_col, "weight_col": args.weight_col,
                  "num_features": args.vector_size, "driver_budget_mb": args.driver_budget_mb,
                  "feature_names": args.feature_names, "feature_names_from": args.feature_names_from},
        "method": args.method,
        "instance_weighting": args.instance_weighting,
        "label_type": args.label_type,
        "deterministic": args.deterministic,
        "missing": args.missing,
        "params": dict(parse_param(text) for text in args.param),
        "selection": {"num_features": args.num_features, "threshold": args.threshold,
                      "selection_mode": args.selection_mode, "selection_threshold": args.selection_threshold,
                      "keep": getattr(args, "keep", None), "exclude": getattr(args, "exclude", None)},
        "output": {"path": args.output, "overwrite": args.overwrite, "reduced": args.write_reduced,
                   "table": args.output_table},
        "spark": {"master": args.master, "remote": args.remote, "conf": spark_conf(args)},
        "mlflow": getattr(args, "mlflow", None), "mlflow_experiment": getattr(args, "mlflow_experiment", None),
    }


def _flag_names(flags: Dict[str, Any]) -> Dict[str, str]:
    """Dotted config key -> the flag the user typed, for the keys the flags set."""
    names = dict(_FLAG_OF_KEY)
    names.update({f"params.{name}": f"--param {name}" for name in flags["params"]})
    names.update({f"spark.conf.{key}": f"--conf {key}" for key in flags["spark"]["conf"]})
    return names


def resolve_config(args) -> Dict[str, Any]:
    loaded = load_config(args.config) if args.config else {}
    config = merge_config(DEFAULTS, loaded)
    # Unsupervised-capable methods use labels only when the user names a label column.
    label_named = bool(args.label_col) or bool((loaded.get("input") or {}).get("label_col"))
    features_named = bool(args.features_col) or bool((loaded.get("input") or {}).get("features_col"))
    flags = _flags_to_config(args)
    if any(value is not None for value in (args.num_features, args.threshold, args.selection_mode)):
        config["selection"].update(dict.fromkeys(("num_features", "threshold", "selection_mode",
                                                  "selection_threshold")))  # one selection rule: the flags'
        # (--selection-threshold alone keeps the file's selection_mode; kept and excluded features stay)
    config = merge_config(config, flags)
    if args.master or args.remote:  # a master or remote flag replaces the file's choice of either
        config["spark"].update(master=args.master, remote=args.remote)
    check_config(config, names=_flag_names(flags))  # the file's values were checked as it was read
    _apply_job_options(config, args, loaded)
    config["forced"] = forced_of_config(config["selection"], args)  # out of the selection rule
    _input_table(config, args)
    if not config["input"]["path"]:
        raise ConfigError("no input: give --input or --input-table (input.path or input.table in the config)")
    if not config["output"]["path"]:
        raise ConfigError("no output: give --output or output.path in the config")
    selection = config["selection"]
    if selection.get("num_features") is not None and selection.get("threshold") is not None:
        raise ConfigError("give either num_features or threshold, not both")
    spark_settings = config["spark"]
    spark_settings["master"], spark_settings["remote"] = spark_target(
        spark_settings.get("master"), spark_settings.get("remote"), config["output"]["path"])
    if spark_settings["remote"] and config["input"]["format"] != TABLE:
        config["input"]["path"] = absolute_for_remote(config["input"]["path"])
    config["input"]["label_named"] = label_named
    config["input"]["features_named"] = features_named
    config["config_file"] = args.config  # an input too: the output must not hold it
    config["input"]["names"] = requested_names(config["input"].get("feature_names"),
                                               config["input"].get("feature_names_from"))
    return config


def _input_table(config: Dict[str, Any], args) -> None:
    """A table input (``--input-table``, ``input.table``): its name is the input's path, its format
    :data:`~sparkfs.io.readers.TABLE`; a file input besides it, or ``--format``, is refused."""
    table = config["input"].get("table")
    if table:
        path, fmt = table_input(table, config["input"]["path"], args.format)
        config["input"].update(path=path, format=fmt)


def _apply_job_options(config: Dict[str, Any], args, loaded: Dict[str, Any]) -> None:
    """The run id (``{run_id}`` in the output path), the ``--if-exists`` rule, the log options."""
    config["run_id"] = run_id_of(getattr(args, "run_id", None), config.get("run_id"))
    where = "--output" if args.output else "output.path"
    config["output"]["path"] = with_run_id(config["output"]["path"], config["run_id"], where)
    if config["output"].get("reduced"):
        config["output"]["reduced"] = with_run_id(config["output"]["reduced"], config["run_id"],
                                                  "--write-reduced" if args.write_reduced else "output.reduced")
    if_exists = decide_if_exists(getattr(args, "if_exists", None), args.overwrite, loaded.get("output") or {},
                                 args.config or "the config")
    config["output"].update(if_exists=if_exists, overwrite=if_exists == "overwrite")
    config["verbose"] = bool(getattr(args, "verbose", False))
    configure_log_format(log, getattr(args, "log_format", "text"), config["run_id"])


def _fit_announcing_ties(selector, frame):
    """``selector.fit(frame)``; a selection decided by ties, fits that did not converge and the
    default samples a method chose are announced on stderr as one log line each, when they happen
    (a default sample before the long passes it bounds, not after the fit; the summary records them
    too); other warnings pass as they are."""
    from sparkfs.errors import (
        DefaultSampleWarning,
        LabelWarning,
        LargeWorkWarning,
        PrecisionWarning,
        SelectionTieWarning,
        SolverConvergenceWarning,
    )

    announced = (SelectionTieWarning, SolverConvergenceWarning, DefaultSampleWarning, LargeWorkWarning, LabelWarning,
                 PrecisionWarning)
    shown_before = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, announced):
            log.warning("%s", message)
        else:
            shown_before(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        for category in announced:
            warnings.simplefilter("always", category)
        warnings.showwarning = show
        return selector.fit(frame)


def run_select(config: Dict[str, Any], spark=None) -> Dict[str, Any]:
    """Run one selection job from a resolved config; returns the summary written."""
    started, started_at = time.perf_counter(), utc_now()
    input_conf, output_conf = config["input"], config["output"]
    files = input_conf["path"] if input_conf["format"] != TABLE else None  # a table is no file
    inputs = [files, config.get("config_file"), (input_conf.get("names") or (None, None))[1]]
    tables = OutputTables.named(output_conf["table"]) if output_conf.get("table") else None
    skipped = skip_if_complete(output_conf["path"], "select", output_conf.get("if_exists", "fail"), inputs)
    if skipped:  # with tables, skipped only when they hold the run too (else refused)
        if tables is not None:
            _tables_say_skip(_session(config, spark), tables, config, skipped)
        return {"skipped": skipped, "output": output_conf["path"]}
    selector, checked, names = _selector_checked_before_spark(config, inputs)
    # --mlflow: MLflow and its store checked now (exit 2 before Spark); the run is logged once the outputs exist
    tracking = mlflow_target(config.get("mlflow"), config.get("mlflow_experiment"), output_conf["path"])
    log.info("run %s: %s -> %s", config.get("run_id"), input_conf["path"], output_conf["path"],
             extra={"event": "start", "output": output_conf["path"]})

    spark = _session(config, spark)
    if tables is not None:
        _tables_say_skip(spark, tables, config, None)
    if not checked:
        check_output_free(output_conf["path"], bool(output_conf["overwrite"]), spark=spark, inputs=inputs)
        if output_conf.get("reduced"):
            check_output_free(output_conf["reduced"], bool(output_conf["overwrite"]), spark=spark, command="apply",
                              inputs=inputs)
    names = names or load_names(input_conf.get("names"), spark)  # a URI's names, through the session
    if not selector.requires_labels and not input_conf.get("label_named"):
        selector.useWithoutLabels()  # no label column named: the method's unsupervised mode
    fingerprints = [input_fingerprint(path, spark) for path in inputs if path]  # before the read: what it reads
    try:
        dataset, frame, missing = _read_input(spark, config, selector, names)
        with stage("fit"):
            model = _fit_announcing_ties(selector, frame)
    except Exception:  # a file truncated or replaced during the read fails in Spark: name it instead
        refuse_if_inputs_changed_quietly(fingerprints[:1], inputs[:1], spark)
        raise
    refuse_changed_inputs(fingerprints[:1], inputs[:1], spark)  # the data; a config edited later changes nothing
    if model.numInputFeatures != dataset.num_features:
        raise InvalidInputError(
            f"the model has {model.numInputFeatures} scores but the input declares {dataset.num_features} features"
        )
    _refuse_empty_selection(model, dataset.feature_names, config["selection"])
    summary = {
        "method": config["method"],
        "params": _params_in_effect(selector),
        **model.summary,
        "selected_indices": model.selectedFeatures,
        "selected_names": [dataset.feature_names[i] for i in model.selectedFeatures],
        "input": {"path": input_conf["path"], "format": input_conf["format"]},
        "seconds": round(time.perf_counter() - started, 3),
        **versions(spark),  # with the memory settings a session started here was given
        **run_fields(config.get("run_id") or run_id_of(None), started_at, inputs, spark),
        "input_files": fingerprints,  # taken before the read, checked unchanged after the fit
    }
    if missing is not None:  # the rows were cleaned before the margin weights: the fit found nothing left
        summary["missing"] = missing
    summary = _write(spark, output_conf, model, dataset, summary, tables)
    if "reduced" in summary:
        log.info("reduced data: %s", summary["reduced"])
    if tracking is not None:
        log_run(tracking, select_record(config, summary))
    return summary


def _session(config: Dict[str, Any], spark=None):
    """``spark``, else the session of the config's master or remote."""
    from sparkfs.spark.session import get_spark

    with stage("spark"):
        spark = spark or get_spark(config["spark"].get("master"),
                                   conf=session_conf(config["spark"].get("conf"), config.get("verbose", False),
                                                     remote=config["spark"].get("remote")),
                                   remote=config["spark"].get("remote"))
        install_handlers()  # a new SparkContext installed its own SIGINT handler
    return spark


def _tables_say_skip(spark, tables, config: Dict[str, Any], skipped) -> bool:
    """``--output-table``'s rules once the session exists (before the read): True when ``--if-exists skip``
    finds the run complete in both the directory (``skipped``, decided before Spark) and the tables; one
    without the other is refused: skipping would leave them apart, overwriting writes both again."""
    run_id, if_exists = config["run_id"], config["output"].get("if_exists", "fail")
    in_tables = check_output_tables(spark, tables, run_id, if_exists)
    if if_exists != "skip" or (not skipped and not in_tables):
        return False
    if skipped and in_tables:
        return True
    where = (f"{config['output']['path']} is a complete output but table {tables.runs} has no run {run_id}" if skipped
             else f"table {tables.runs} has run {run_id} but {config['output']['path']} is no complete output")
    raise UnsafeOutputError(f"--if-exists skip: {where}; use --if-exists overwrite to write both again")


def _params_in_effect(selector) -> Dict[str, Any]:
    """The selector's params for the summary, less the count (numFeatures) when a p-value or
    percentile rule chose the features instead: a number that selected nothing is not shown."""
    params = {param.name: value for param, value in selector.extractParamMap().items()}
    if params.get("selectionMode", "numTopFeatures") != "numTopFeatures":
        params.pop("numFeatures", None)
    return params


def _selector_checked_before_spark(config: Dict[str, Any], inputs):
    """(the selector with its params and selection rule, whether the output was checked in full, the
    feature names given when read here), before Spark starts: the output, the method and its params,
    the named columns, the names' count."""
    from sparkfs.methods import apply_label_type, apply_selection, build_selector

    input_conf, output_conf = config["input"], config["output"]
    # A URI is checked in full once the session (and its Hadoop file systems) exists.
    checked = check_output_early(output_conf["path"], bool(output_conf["overwrite"]), inputs=inputs)
    if output_conf.get("reduced"):
        checked = _check_reduced_early(config, inputs) and checked
    params = dict(config.get("params") or {})
    if config.get("deterministic") is not None:  # --deterministic / the config's deterministic: key
        params["deterministic"] = config["deterministic"]
    if config.get("missing") is not None:  # --missing / the config's missing: key
        params["missing"] = config["missing"]
    selector = build_selector(config["method"], params)
    apply_label_type(selector, config["method"], config.get("label_type"))
    apply_selection(selector, config["method"], config["selection"])
    _check_missing_policy(config, selector)
    # The named columns against the header or footer of a local input, before Spark starts (on a
    # Spark Connect server the input's paths are the server's: it checks them when it reads).
    on_files = not config["spark"].get("remote") and input_conf["format"] != TABLE
    input_location = location_of(input_conf["path"]) if on_files else None
    if input_location is not None:
        check_input_early(input_location, input_conf["format"],
                          label_col=input_conf["label_col"] if selector.requires_labels else None,
                          weight_col=input_conf.get("weight_col"),
                          features_col=input_conf["features_col"] if input_conf.get("features_named") else None)
    _check_weights_wanted(config, selector)
    names = load_names(input_conf.get("names"))  # None for a URI: read once the session exists
    if input_location is not None:
        check_names_early(names, input_location, input_conf["format"], label_col=input_conf["label_col"],
                          weight_col=input_conf.get("weight_col"), features_col=input_conf["features_col"],
                          vector_size=input_conf.get("num_features"))
        forced_before_spark(selector, config.get("forced") or {}, input_location, input_conf["format"], names,
                            label_col=input_conf["label_col"], weight_col=input_conf.get("weight_col"),
                            features_col=input_conf["features_col"], vector_size=input_conf.get("num_features"))
    return selector, checked, names


def _check_reduced_early(config: Dict[str, Any], inputs) -> bool:
    """``--write-reduced``'s checks before Spark starts (apart from ``--output``; the rules of the reduced
    data, ``sparkfs apply``'s); True when it was checked in full."""
    output_conf = config["output"]
    check_apart(output_conf["reduced"], "--write-reduced", output_conf["path"], "--output")
    if config["spark"].get("remote") and not is_local_path(output_conf["reduced"]):
        raise ConfigError(f"--write-reduced {output_conf['reduced']}: on a Spark Connect session the reduced data go "
                          "to a local or mounted path (as --output)")
    return check_output_early(output_conf["reduced"], bool(output_conf["overwrite"]), command="apply", inputs=inputs)


def _check_missing_policy(config: Dict[str, Any], selector) -> None:
    """Refuse ``--missing pairwise`` before Spark starts for a method without a pairwise rule (or with Params the
    rule cannot use), and with margin weights, which need complete rows."""
    if config.get("missing") != "pairwise":
        return
    try:
        selector.checkMissing()
    except ValueError as refusal:
        raise ConfigError(f"--method {config['method']}: {refusal}") from None
    if config.get("instance_weighting") == "margin":
        raise ConfigError("--missing pairwise leaves NaN values out inside the univariate filters' statistics; the "
                          "margin instance weights need complete rows: use --missing drop-rows or zero")


def _check_weights_wanted(config: Dict[str, Any], selector) -> None:
    """Refuse instance weights (a weight column, or margin weighting) for a method that takes
    none, and both at once, before Spark starts (not after the margin weights are computed)."""
    weight_col = config["input"].get("weight_col")
    margin = config.get("instance_weighting") == "margin"
    if weight_col and margin:
        raise ConfigError("give either a weight column or instance_weighting: margin, not both")
    if (weight_col or margin) and not selector.takesWeights():
        asked = f"--weight-col {weight_col}" if weight_col else "--instance-weighting margin"
        raise ConfigError(f"--method {config['method']} does not take instance weights (weightCol), so {asked} "
                          "cannot be used (`sparkfs methods` lists which methods take them)")


def _read_input(spark, config: Dict[str, Any], selector, names=None):
    """(the dataset read, with ``names`` when given; the frame to fit: with margin instance weights
    when asked; the summary's missing-value facts when the rows were cleaned here, else None: the fit
    applies its ``missing`` Param itself); sets the selector's columns."""
    input_conf = config["input"]
    with stage("read"):
        dataset = read_named_dataset(
            spark, input_conf["path"], input_conf["format"], names, label_col=input_conf["label_col"],
            features_col=input_conf["features_col"], weight_col=input_conf.get("weight_col"),
            num_features=input_conf.get("num_features"), require_label=selector.requires_labels,
            require_features=bool(input_conf.get("features_named")),
            **selector_budget(selector, input_conf.get("driver_budget_mb")),
        )
    _refuse_empty_percentile(selector, dataset.num_features)
    apply_forced(selector, config.get("forced") or {}, dataset.feature_names, dataset.num_features)
    selector.setFeaturesCol(dataset.features_col).setLabelCol(dataset.label_col)
    if input_conf.get("weight_col"):
        selector.setWeightCol(input_conf["weight_col"])
    frame, missing = dataset.df, None
    if config.get("instance_weighting") == "margin":  # with a method that takes weights (checked before Spark)
        from sparkfs.selectors.instance_weighting import MarginInstanceWeighter

        if selector.getMissing() != "refuse":  # the margins are computed on the rows the fit reads
            frame, missing = input_under_missing(frame, dataset.features_col, dataset.label_col,
                                                 selector.getMissing())

        with stage("instance-weights"):
            frame = MarginInstanceWeighter(featuresCol=dataset.features_col, labelCol=dataset.label_col,
                                           outputCol=_INSTANCE_WEIGHT,
                                           deterministic=selector.getDeterministic()).transform(frame)
        selector.setWeightCol(_INSTANCE_WEIGHT)
    return dataset, frame, missing


def _write(spark, output_conf: Dict[str, Any], model, dataset, summary: Dict[str, Any],
           tables=None) -> Dict[str, Any]:
    """features.parquet, summary.json and model/, atomically, with ``--write-reduced`` the reduced
    data (staged first, placed after the selection: a failure places neither) and with ``--output-table``
    the rows appended last (if that fails, the outputs just placed are removed); the summary with the
    outputs and top features."""
    p_values = model.pValues
    summary["model"] = {"path": MODEL_DIRECTORY, "class": f"{type(model).__module__}.{type(model).__name__}"}
    with stage("write"):
        table = features_table(model.scores, model.selectedFeatures, dataset.feature_names, p_values=p_values,
                               forced=model.getKeptFeatures())
        written: Dict[str, str] = {}

        def write_selection() -> None:
            written["output"] = write_selection_output(output_conf["path"], table, summary, spark=spark,
                                                       overwrite=bool(output_conf["overwrite"]),
                                                       model=model_files(model, spark))

        if tables is not None:
            summary["output_tables"] = {"features": tables.features, "runs": tables.runs}
        if output_conf.get("reduced"):
            summary["reduced"] = output_conf["reduced"]
            _write_with_reduced(spark, output_conf, model, dataset, summary, write_selection, written)
        else:
            write_selection()
        if tables is not None:
            _append_or_undo(spark, tables, table, summary, output_conf, written)
    summary["output"] = written["output"]
    summary["top_features"] = [
        (dataset.feature_names[i], float(model.scores[i]), None if p_values is None else float(p_values[i]))
        for i in model.ranking[: min(10, model.numInputFeatures)]
    ]
    return summary


def _write_with_reduced(spark, output_conf, model, dataset, summary, write_selection, written) -> None:
    """The reduced data staged (sliced from the frame the fit read), the selection written and placed,
    then the reduced data placed; if that last step fails, the selection just placed is removed."""
    from sparkfs.commands.reduced import all_columns, reduced_summary, write_reduced
    from sparkfs.io.output import remove_output
    from sparkfs.selectors.saved_selection import sliced_frame
    from sparkfs.spark.missing_values import without_missing

    input_conf = summary["input"]
    rows = all_columns(spark, dataset, input_conf["path"], input_conf["format"])
    missing = summary.get("missing") or {}
    if missing.get("rows_dropped") or missing.get("values_set_to_zero"):  # the rows and values the fit read
        label_col = dataset.label_col if dataset.label_col in rows.columns else None
        rows = without_missing(rows, dataset.features_col, label_col, missing["policy"])
    frame = sliced_frame(model, rows, dataset.features_col)
    facts = reduced_summary(model, f"{output_conf['path']}/{MODEL_DIRECTORY}", input_conf["path"],
                            input_conf["format"], dataset.feature_names)
    facts.update({key: summary[key] for key in ("run_id", "started_at", "input_files") if key in summary})
    try:
        write_reduced(output_conf["reduced"], frame, facts, spark=spark, overwrite=bool(output_conf["overwrite"]),
                      before_placing=write_selection)
    except BaseException:
        if "output" in written:  # placed, then the reduced data could not be: neither stays
            remove_output(written["output"], "select", spark)
        raise


def _append_or_undo(spark, tables, table, summary: Dict[str, Any], output_conf: Dict[str, Any], written) -> None:
    """The run's rows appended to the output tables; if that fails, the directories this run placed go too."""
    from sparkfs.io.output import remove_output

    try:
        append_run(spark, tables, summary["run_id"], table, summary, overwrite=bool(output_conf["overwrite"]))
    except BaseException:
        remove_output(written["output"], "select", spark)
        if output_conf.get("reduced"):
            remove_output(output_conf["reduced"], "apply", spark)
        raise


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


def run(args) -> Dict[str, Any]:
    return run_select(resolve_config(args))


def finish(args, summary: Dict[str, Any]) -> int:
    """The summary on stdout (or the skip, logged), once the command's reporting has ended."""
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


COMMAND = Command(add_arguments, run, finish=finish, job_args="job")
