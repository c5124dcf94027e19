"""``sparkfs apply --model DIR --input ... --output OUTPUT``: a saved selection applied to data, written as
the reduced data the next job reads (:mod:`sparkfs.commands.reduced`: every column kept, the vector sliced
to the selected features, their names in its ML attributes).

``--model`` is the output directory of ``sparkfs select`` (its ``model/``) or the directory a sparkfs model
was saved to (``model.write().save(...)``); its class is read from its metadata. The input is read as
``select`` reads it, with no label needed (new rows may have none); a LIBSVM input's vector size is the
model's (a term that occurs in no new row keeps its slot; an index above it is refused naming its line).

Refused with exit 2, nothing written: data whose vector size, or whose feature names (when both the
data and the model name them), differ from the model's, naming both; before Spark starts when the model
and the input are local and the input shows its features without a job (a CSV header, a Parquet footer
or first row, ``--feature-names``), else once read, before anything is written. The output follows
every output's rules (:mod:`sparkfs.io.output_safety`), its marker kind ``apply``.

``--output-table NAME`` (instead of ``--output``) writes the same rows to a table of the session's catalog,
keyed by a ``run_id`` column, under the rules of :mod:`sparkfs.io.reduced_table`: a table sparkfs created
only, one layout per table, atomic per run, ``--if-exists`` acting on the run id.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Optional

from sparkfs.commands import Command
from sparkfs.commands.arguments import (
    absolute_for_remote,
    add_input_args,
    add_input_table_arg,
    add_spark_args,
    apply_input_table,
    check_numeric_options,
    feature_names,
    input_file,
    log,
    session_conf,
    spark_conf,
    spark_target,
    stage,
)
from sparkfs.commands.reduced import KIND, all_columns, reduced_summary, write_reduced
from sparkfs.interruption import install_handlers
from sparkfs.io.config import ConfigError
from sparkfs.io.feature_names import read_named_dataset
from sparkfs.io.input_features import known_feature_names, known_vector_size
from sparkfs.io.output import check_output_early, check_output_free
from sparkfs.io.output_tables import table_name
from sparkfs.io.readers import TABLE, check_input_early, given_vector_names
from sparkfs.io.reduced_table import check_reduced_table, write_reduced_table
from sparkfs.io.stores import Location, location_of
from sparkfs.job_options import (
    configure_log_format,
    decide_if_exists,
    log_line,
    run_fields,
    run_id_of,
    skip_if_complete,
    utc_now,
    versions,
    with_run_id,
)
from sparkfs.selectors.saved_selection import (
    ModelFacts,
    check_input_against_model,
    load_selector_model,
    model_directory,
    saved_model_facts,
    sliced_frame,
)


def add_arguments(commands) -> None:
    apply = commands.add_parser("apply", help="a saved selection applied to data: the input with its vector sliced "
                                "to the selected features, for the next job")
    apply.add_argument("--model", help="the output directory of sparkfs select (its model/), or a saved sparkfs "
                       "model's directory")
    add_input_args(apply)
    add_input_table_arg(apply)
    apply.add_argument("--weight-col", help="a per-instance weight column of a CSV input: kept as a column, not read "
                       "as a feature")
    apply.add_argument("--output", help="output directory (a new one): a Parquet directory, the input's columns with "
                       "the vector sliced")
    apply.add_argument("--output-table", metavar="NAME", help="write the rows to the table NAME of the session's "
                       "catalog instead of --output (created if missing, partitioned by a run_id column, so "
                       "--if-exists acts on the run id)")
    apply.add_argument("--driver-budget-mb", type=float, help="the driver budget bounding a LIBSVM input's vector "
                       "size, as select's (default: the model's driverBudgetMB, else 1024)")
    apply.add_argument("--overwrite", action="store_true", default=None,
                       help="replace an existing output directory written by sparkfs apply (or select "
                       "--write-reduced) and holding nothing else; the same as --if-exists overwrite")
    add_spark_args(apply)


def _early_facts(args) -> Optional[ModelFacts]:
    """The checks that need no Spark: flags, job options, the output rules, the input's columns, and the
    input's features against the local model's. Returns the model's facts (None for a URI model)."""
    apply_input_table(args)
    _one_output(args)
    for flag, value in (("--model", args.model), ("--input (or --input-table)", args.input),
                        ("--format", args.format)):
        if not value:
            raise ConfigError(f"sparkfs apply needs {flag}")
    args.master, args.remote = spark_target(args.master, args.remote, args.output)
    if args.remote and args.format != TABLE:
        args.input = absolute_for_remote(args.input)
    check_numeric_options(args)
    args.run_id = run_id_of(args.run_id)
    args.output = with_run_id(args.output, args.run_id)
    args.if_exists = decide_if_exists(args.if_exists, args.overwrite, {})
    args.overwrite = args.if_exists == "overwrite"
    configure_log_format(log, args.log_format, args.run_id)
    args.model = model_directory(args.model)
    inputs = _inputs(args)
    if args.output_table:  # the table's rules once the session exists (reduced_table), before the read
        args.skipped, args.output_checked = None, True
    else:
        args.skipped = skip_if_complete(args.output, KIND, args.if_exists, inputs=inputs)
        if args.skipped:
            return None
        args.output_checked = check_output_early(args.output, args.overwrite, command=KIND, inputs=inputs)
    facts = saved_model_facts(args.model)
    if args.remote or args.format == TABLE:  # a Connect server's paths are its own; a table is no file
        return facts
    input_location = location_of(args.input)
    check_input_early(input_location, args.format, label_col=None, weight_col=args.weight_col,
                      features_col=args.features_col)
    if facts is not None:
        _check_known_features(args, facts, input_location)
    return facts


def _one_output(args) -> None:
    """Exactly one of ``--output`` and ``--output-table``, the table's name checked."""
    if args.output and args.output_table:
        raise ConfigError(f"give either --output ({args.output}) or --output-table ({args.output_table}), not both")
    if not args.output and not args.output_table:
        raise ConfigError("sparkfs apply needs --output (a directory) or --output-table (a table of the catalog)")
    if args.output_table:
        args.output_table = table_name(args.output_table)


def _inputs(args):
    """The files the run reads (the output must not hold them): the input (not a table), the model, the names."""
    return [input_file(args.input, args.format), args.model, args.feature_names or args.feature_names_from]


def _check_known_features(args, facts: ModelFacts, input_location: Location) -> None:
    """The input's features known before Spark starts, against the model's."""
    names = feature_names(args)
    if names is not None:
        names.check_count(facts.num_features, f"the model {facts.path}")
    if args.format == "libsvm":
        if args.vector_size is not None:
            check_input_against_model(facts, args.vector_size, None, f"--vector-size {args.vector_size}")
        return
    shape = {"label_col": args.label_col or "label", "weight_col": args.weight_col,
             "features_col": args.features_col or "features"}
    given = list(names.names) if names is not None else known_feature_names(input_location, args.format, **shape)
    check_input_against_model(facts, known_vector_size(input_location, args.format, **shape), given,
                              f"the input {args.input}")


def apply_model(spark, args) -> Dict[str, Any]:
    """Read, check, slice and write (module notes); the summary written."""
    started, started_at = time.perf_counter(), utc_now()
    inputs = _inputs(args)
    if not getattr(args, "output_checked", False):  # a URI: checked once the session reaches its file system
        check_output_free(args.output, args.overwrite, spark=spark, command=KIND, inputs=inputs)
    with stage("model"):
        model = load_selector_model(args.model, spark)
    facts = ModelFacts(args.model, type(model).__name__, model.numInputFeatures, model.featureNames,
                       model.selectedFeatures)
    with stage("read"):
        dataset = read_named_dataset(
            spark, args.input, args.format, feature_names(args, spark),
            size_said_by=f"the model {args.model} was fitted on {model.numInputFeatures:,} features",
            label_col=args.label_col or "label", features_col=args.features_col or "features",
            weight_col=args.weight_col, require_label=False, require_features=bool(args.features_col),
            num_features=args.vector_size or (model.numInputFeatures if args.format == "libsvm" else None),
            driver_budget_mb=args.driver_budget_mb or _model_budget(model), budget_name="--driver-budget-mb")
    given = given_vector_names(dataset.df, dataset.features_col, dataset.num_features)
    check_input_against_model(facts, dataset.num_features, given, f"the input {args.input}")
    frame = sliced_frame(model, all_columns(spark, dataset, args.input, args.format), dataset.features_col)
    names = given or model.featureNames or dataset.feature_names  # the input's own, else the model's
    summary = {**reduced_summary(model, args.model, args.input, args.format, names),
               **versions(spark), **run_fields(args.run_id, started_at, inputs, spark)}
    with stage("write"):
        if args.output_table:
            summary["n_rows"] = write_reduced_table(spark, args.output_table, frame, args.run_id,
                                                    dataset.features_col, overwrite=args.overwrite,
                                                    present=getattr(args, "run_in_table", False))
            summary["output_table"] = args.output_table
        else:
            summary["output"] = write_reduced(args.output, frame, summary, spark=spark, overwrite=args.overwrite)
    summary["seconds"] = round(time.perf_counter() - started, 3)
    return summary


def _model_budget(model) -> float:
    """The driver budget of the read: the model's driverBudgetMB when its selector has one."""
    from sparkfs.io.libsvm import DEFAULT_DRIVER_BUDGET_MB

    if model.hasParam("driverBudgetMB"):
        return float(model.getOrDefault("driverBudgetMB"))
    return DEFAULT_DRIVER_BUDGET_MB


def run(args) -> int:
    from sparkfs.spark.session import get_spark

    _early_facts(args)
    if args.skipped:
        log_line(log, args.log_format, args.skipped, "skipped", output=args.output)
        return 0
    with stage("spark"):
        spark = get_spark(args.master, conf=session_conf(spark_conf(args), args.verbose, remote=args.remote),
                          remote=args.remote)
        install_handlers()  # a new SparkContext installed its own SIGINT handler
    if args.output_table:
        args.run_in_table = check_reduced_table(spark, args.output_table, args.run_id, args.if_exists)
        if args.run_in_table and args.if_exists == "skip":
            log_line(log, args.log_format, f"sparkfs: skipped: table {args.output_table} already holds run "
                     f"{args.run_id}", "skipped", output=args.output_table)
            return 0
    summary = apply_model(spark, args)
    print(f"rows={summary['n_rows']} features={summary['n_features']} of {summary['n_features_in']} "
          f"seconds={summary['seconds']}")
    selected = f"{', '.join(summary['selected_names'][:10])}{', ...' if len(summary['selected_names']) > 10 else ''}"
    where = f"table {args.output_table} (run_id {args.run_id}" if args.output_table else f"{summary['output']} (Parquet"
    print(f"output: {where}; the selected features: {selected})")
    return 0


COMMAND = Command(add_arguments, run, job_args="job")
