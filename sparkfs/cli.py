"""Command line: ``sparkfs select ...`` — config -> Selector(**params) -> fit -> write. No math here.

Exit codes: 0 success, 2 bad input / configuration (message names the problem), 1 other failure.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from typing import Any, Dict, List, Optional

from sparkfs._version import __version__
from sparkfs.io.config import DEFAULTS, ConfigError, load_config, merge_config, parse_param
from sparkfs.io.output import OutputExistsError, check_output_free, features_table, is_local_path, write_selection_output
from sparkfs.io.readers import FORMATS, read_dataset, selector_budget
from sparkfs.errors import InvalidInputError, SparkResourceError
from sparkfs.spark.failures import describe, resource_failure
from sparkfs.evaluate_command import add_evaluate_commands, run_compare, run_evaluate, run_report
from sparkfs.study_commands import add_study_commands, run_instance_weights, run_stability

log = logging.getLogger("sparkfs")
_INSTANCE_WEIGHT = "__sparkfs_instance_weight"


def add_input_args(parser) -> None:
    parser.add_argument("--input", help="input path")
    parser.add_argument("--format", choices=FORMATS, help="input format")
    parser.add_argument("--label-col", help="label column (parquet/csv)")
    parser.add_argument("--features-col", help="vector column (parquet); otherwise numeric columns are assembled")
    parser.add_argument("--vector-size", type=int, help="LIBSVM: the number of features (largest index allowed); "
                        "default: the largest index in the input. Either must fit the driver budget")


def add_spark_args(parser) -> None:
    parser.add_argument("--master", help="Spark master URL (default local[*]; spark-submit sets its own)")
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
    select.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="method param (repeatable)")
    select.add_argument("--output", help="output directory: a local path, or a URI (hdfs://, s3a://, file:///...) "
                        "written through Spark's Hadoop file system")
    select.add_argument("--overwrite", action="store_true", default=None, help="replace an existing output directory")
    select.add_argument("--driver-budget-mb", type=float, help="driver memory for the input's dense per-feature "
                        "state, bounding the LIBSVM vector size (default: the method's driverBudgetMB, else 1024)")
    add_spark_args(select)
    add_study_commands(commands, add_input_args, add_spark_args)
    add_evaluate_commands(commands, add_input_args, add_spark_args)

    commands.add_parser("methods", help="list the --method names")
    return parser


def _flags_to_config(args) -> Dict[str, Any]:
    return {
        "input": {"path": args.input, "format": args.format, "label_col": args.label_col,
                  "features_col": args.features_col, "weight_col": args.weight_col,
                  "num_features": args.vector_size, "driver_budget_mb": args.driver_budget_mb},
        "method": args.method,
        "instance_weighting": args.instance_weighting,
        "params": dict(parse_param(text) for text in args.param),
        "selection": {"num_features": args.num_features, "threshold": args.threshold},
        "output": {"path": args.output, "overwrite": args.overwrite},
        "spark": {"master": args.master, "conf": _spark_conf(args)},
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
    return conf


def resolve_config(args) -> Dict[str, Any]:
    loaded = load_config(args.config) if args.config else {}
    config = merge_config(DEFAULTS, loaded)
    # Unsupervised-capable methods use labels only when the user names a label column.
    label_named = bool(args.label_col) or bool((loaded.get("input") or {}).get("label_col"))
    flags = _flags_to_config(args)
    if args.num_features is not None or args.threshold is not None:  # one selection rule: the flag's
        config["selection"] = {"num_features": None, "threshold": None}
    config = merge_config(config, flags)
    if not config["input"]["path"]:
        raise ConfigError("no input: give --input or input.path in the config")
    if not config["output"]["path"]:
        raise ConfigError("no output: give --output or output.path in the config")
    selection = config["selection"]
    if selection.get("num_features") is not None and selection.get("threshold") is not None:
        raise ConfigError("give either num_features or threshold, not both")
    if config.get("instance_weighting") not in ("none", "margin"):
        raise ConfigError(f"instance_weighting must be 'none' or 'margin', got {config.get('instance_weighting')!r}")
    config["input"]["label_named"] = label_named
    return config


class _Stage:
    """Logs one line per stage with its duration."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc):
        status = "failed" if exc[0] else "done"
        log.info("stage=%s status=%s seconds=%.2f", self.name, status, time.perf_counter() - self.started)
        return False


def run_select(config: Dict[str, Any], spark=None) -> Dict[str, Any]:
    """Run one selection job from a resolved config; returns the summary written."""
    import pyspark

    from sparkfs.methods import build_selector
    from sparkfs.spark.session import applied_settings, get_spark

    started = time.perf_counter()
    input_conf, selection = config["input"], config["selection"]
    output_conf = config["output"]
    local_output = is_local_path(output_conf["path"])
    if local_output:  # a URI is checked once the session (and its Hadoop file systems) exists
        check_output_free(output_conf["path"], bool(output_conf["overwrite"]))
    selector = build_selector(config["method"], config.get("params") or {})
    if selection.get("threshold") is not None:
        selector.setThreshold(selection["threshold"])
    elif selection.get("num_features") is not None:
        selector.setNumFeatures(selection["num_features"])
    selector.validate_params()

    with _Stage("spark"):
        spark = spark or get_spark(config["spark"].get("master"), conf=config["spark"].get("conf"))
    if not local_output:
        check_output_free(output_conf["path"], bool(output_conf["overwrite"]), spark=spark)
    supervised = selector._requires_label
    if not supervised and not input_conf.get("label_named") and selector.getOrDefault("groups") == "auto":
        selector.set(selector.getParam("groups"), "clusters")  # no label column named: unsupervised
    with _Stage("read"):
        dataset = read_dataset(
            spark, input_conf["path"], input_conf["format"], label_col=input_conf["label_col"],
            features_col=input_conf["features_col"], weight_col=input_conf.get("weight_col"),
            num_features=input_conf.get("num_features"), require_label=supervised, **selector_budget(selector, input_conf.get("driver_budget_mb")),
        )
    selector.setFeaturesCol(dataset.features_col).setLabelCol(dataset.label_col)
    if input_conf.get("weight_col"):
        selector.setWeightCol(input_conf["weight_col"])
    frame = dataset.df
    if config.get("instance_weighting") == "margin":
        if input_conf.get("weight_col"):
            raise ConfigError("give either a weight column or instance_weighting: margin, not both")
        from sparkfs.selectors.instance_weighting import MarginInstanceWeighter

        with _Stage("instance-weights"):
            frame = MarginInstanceWeighter(featuresCol=dataset.features_col, labelCol=dataset.label_col,
                                           outputCol=_INSTANCE_WEIGHT).transform(frame)
        selector.setWeightCol(_INSTANCE_WEIGHT)
    with _Stage("fit"):
        model = selector.fit(frame)
    if model.numInputFeatures != dataset.num_features:
        raise InvalidInputError(
            f"the model has {model.numInputFeatures} scores but the input declares {dataset.num_features} features"
        )
    summary = {
        "method": config["method"],
        "params": {param.name: value for param, value in selector.extractParamMap().items()},
        **model.summary,
        "selected_indices": model.selectedFeatures,
        "selected_names": [dataset.feature_names[i] for i in model.selectedFeatures],
        "input": {"path": input_conf["path"], "format": input_conf["format"]},
        "seconds": round(time.perf_counter() - started, 3),
        "spark_version": spark.version,
        "spark_memory_settings": dict(applied_settings),  # what a session started here was given
        "pyspark_version": pyspark.__version__,
        "sparkfs_version": __version__,
    }
    with _Stage("write"):
        table = features_table(model.scores, model.selectedFeatures, dataset.feature_names)
        output_path = write_selection_output(output_conf["path"], table, summary,
                                             overwrite=bool(output_conf["overwrite"]), spark=spark)
    summary["output"] = output_path
    summary["top_features"] = [
        (dataset.feature_names[i], float(model.scores[i])) for i in model.ranking[: min(10, model.numInputFeatures)]
    ]
    return summary


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
    spark = get_spark(args.master, conf=_spark_conf(args))
    if args.command == "instance-weights":
        summary = run_instance_weights(args, spark)
        print(f"rows={summary['n_rows']} weights from {summary['weight_min']:.4g} to {summary['weight_max']:.4g} "
              f"(sum {summary['weight_sum']:.6g}) seconds={summary['seconds']}")
        print(f"output: {summary['output']}/weights.parquet, {summary['output']}/summary.json")
        return 0
    if args.command == "evaluate":
        report = run_evaluate(args, spark)
        print(f"(method, fold) pairs fitted now: {report['done']}; report: {report['written'][-1]}")
        return 0
    report = run_stability(args, spark)
    print(f"{'k':>5} {'kuncheva':>9} {'jaccard':>8}")
    for row in report["summary"]["subsets"]:
        print(f"{row['k']:>5} {row['kuncheva']:9.4f} {row['jaccard']:8.4f}")
    print("output: " + ", ".join(report["written"]))
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    if not log.handlers:  # our own handler: leave the root logger (py4j, pyspark) alone
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("sparkfs %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.command == "methods":
        from sparkfs.methods import METHODS

        for name, (selector_class, fixed) in sorted(METHODS.items()):
            print(f"{name:12s} {selector_class.__name__} {fixed}")
        return 0
    try:
        if args.command != "select":
            return _run_study_command(args)
        config = resolve_config(args)
        summary = run_select(config)
    except (InvalidInputError, ConfigError, OutputExistsError, ValueError, FileNotFoundError) as error:
        print(f"sparkfs: error: {error}", file=sys.stderr)
        return 2
    except SparkResourceError as error:  # on a line of its own: the JVM may still be writing to stderr
        print(f"\nsparkfs: failed: {error}", file=sys.stderr)
        return 1
    except Exception as error:  # a Spark failure that diagnosis could not name
        resources = resource_failure(error)
        if resources is not None:
            print(f"\nsparkfs: failed: {resources}", file=sys.stderr)
            return 1
        text = describe(error)
        print(f"\nsparkfs: failed: {text.splitlines()[0] if text else type(error).__name__}", file=sys.stderr)
        return 1
    print(f"method={summary['method']} rows={summary['n_rows']} features={summary['n_features']} "
          f"classes={summary['n_classes']} selected={len(summary['selected_indices'])} seconds={summary['seconds']}")
    print("top features (name, score):")
    for name, score in summary["top_features"]:
        print(f"  {name:20s} {score: .6g}")
    print(f"output: {summary['output']}/features.parquet, {summary['output']}/summary.json")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
