"""``sparkfs stability`` (Han & Yu 2010). No math here.

R seeded subsamples (or bootstrap samples) of the rows, the ``--method``
selector fitted on each (optionally on margin-weighted rows), then Kuncheva and Jaccard
stability per subset size, the variance of the normalised feature weights and, with
``--true-relevance``, their bias and error (:mod:`sparkfs.evaluation.stability_runs`). Every
run is saved as it finishes, so a killed study started again with the same command resumes
and ends with the same numbers.

The feature weights whose variance is measured are each method's own weighting: SVM-RFE's
normalised |w| of the SVM on all features (and its whole weight path, per RFE iteration), the
Relief family's eq. (4) weights, and otherwise the scores (normalised |score|).
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from sparkfs import progress
from sparkfs.commands import Command
from sparkfs.commands.arguments import (
    add_forced_args,
    add_input_args,
    add_input_table_arg,
    add_missing_arg,
    add_spark_args,
    input_file,
    input_under_missing,
    read_input,
    start_study_session,
    study_forced,
    study_missing,
    subset_sizes,
)
from sparkfs.commands.tracking import add_mlflow_args, log_run, mlflow_target, stability_record
from sparkfs.errors import InvalidInputError

_COUNT = "__sparkfs_draws"
_WEIGHT = "__sparkfs_instance_weight"
_REPEAT = "__sparkfs_repeat"


def add_arguments(commands) -> None:
    study = commands.add_parser("stability", help="stability of a selector over seeded subsamples (Han & Yu 2010)")
    add_input_args(study)
    add_input_table_arg(study)
    study.add_argument("--method", required=True, help="selector: see `sparkfs methods`")
    study.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="method param (repeatable)")
    study.add_argument("--runs", type=int, default=10, help="number of subsamples R (default 10)")
    draw = study.add_mutually_exclusive_group()
    draw.add_argument("--sample-fraction", type=float, help="share of each class kept per run, without replacement "
                      "(default 0.9)")
    draw.add_argument("--bootstrap", action="store_true", help="stratified bootstrap samples instead")
    study.add_argument("--num-features", required=True, help="subset sizes k, comma-separated: 10,20,50")
    study.add_argument("--instance-weighting", choices=["none", "margin"], default="none",
                       help="weight each run's rows by Han & Yu's margin weights (the method must take weightCol)")
    study.add_argument("--true-relevance", help="a .npy or text file of d true relevance values (bias and error)")
    study.add_argument("--seed", type=int, default=0, help="seed of the subsamples")
    add_missing_arg(study, default="refuse")
    study.add_argument("--parallelism", type=int, default=1, help="runs fitted at once from driver threads")
    study.add_argument("--output", required=True, help="output directory: a local path, new or empty, or a "
                       "stability directory of its own (reused to resume)")
    study.add_argument("--driver-budget-mb", type=float, help="driver memory for the input's dense per-feature "
                       "state, bounding the LIBSVM vector size (default: the method's driverBudgetMB, else 1024)")
    add_forced_args(study)
    add_mlflow_args(study)
    add_spark_args(study)


def check_output(args) -> str:
    """Refuse an unsafe ``--output`` and a ``--true-relevance`` file that cannot be read, before any
    work (:mod:`sparkfs.io.output_safety`). Returns the output."""
    from sparkfs.io.output_safety import check_study_directory

    directory = check_study_directory(args.output, "stability", inputs=[input_file(args.input, args.format),
                                                                         args.true_relevance])
    if args.true_relevance:
        _stored_relevance(args.true_relevance)
    return directory


def _stored_relevance(path: str) -> np.ndarray:
    """The values of a ``--true-relevance`` file: a ``.npy`` file memory-mapped (nothing is read
    beyond its header until its size is known to fit, so a header that claims 10^12 values
    allocates nothing), a text file through ``np.loadtxt``."""
    if not str(path).endswith(".npy"):
        try:
            return np.loadtxt(path, ndmin=1)
        except (OSError, ValueError) as error:
            raise InvalidInputError(f"--true-relevance {path}: not a text file of numbers ({error})") from None
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as error:   # the header claims more bytes than the file holds, or an object array
        raise InvalidInputError(f"--true-relevance {path} is not a whole .npy array file as numpy.save writes it "
                                f"({_npy_header(path)}: {error})") from None
    except OSError as error:
        raise InvalidInputError(f"--true-relevance {path} cannot be read ({error})") from None


def _npy_header(path: str) -> str:
    """What a ``.npy`` file's header claims (shape and type) against its size, for a refusal."""
    import os

    try:
        with open(path, "rb") as handle:
            version = np.lib.format.read_magic(handle)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, _, dtype = read_header(handle)
            body = os.path.getsize(path) - handle.tell()
    except (OSError, ValueError) as error:
        return f"its header cannot be read: {error}"
    values = int(np.prod(shape, dtype=object))
    return (f"its header claims {values:,} values of {dtype} (shape {shape}, {values * dtype.itemsize:,} bytes), "
            f"the file holds {body:,} bytes after it")


def _true_relevance(path, n_features: int):
    if not path:
        return None
    stored = _stored_relevance(path)
    if stored.size != n_features or stored.dtype.kind not in "biuf":
        raise InvalidInputError(f"--true-relevance {path}: expected {n_features} finite values (one per feature), "
                                f"got {stored.size:,} values of {stored.dtype}")
    values = np.asarray(stored, dtype=float).ravel()
    if not np.all(np.isfinite(values)):
        raise InvalidInputError(f"--true-relevance {path}: expected {n_features} finite values, got "
                                f"{int(np.sum(~np.isfinite(values)))} that are NaN or infinite")
    return values


def _run_weights(selector, model):
    """(weights, weight path, remaining) of a fitted model (module notes), as the selector's
    class declares them (``givesWeightPath()``, ``weights_array``)."""
    if selector.givesWeightPath():
        remaining, path = model.weightPath
        return path[0], path, remaining
    if selector.weights_array:
        return model.featureArray(selector.weights_array), None, None
    return np.abs(model.scores), None, None


def _checked_method(args, checked, params: Dict[str, Any]) -> Dict[str, Any]:
    """The params of the study's fits: refuses a method of a continuous label and margin weights for a
    method without weights; a method that weights its rows itself is asked to (SVM-RFE)."""
    if checked._continuous_label():
        raise ValueError(f"--method {args.method} takes a continuous label, and stability draws its samples "
                         "stratified by class; not supported yet")
    own_weighting = checked.own_instance_weighting
    if args.instance_weighting == "margin" and own_weighting:
        return {**params, own_weighting: "margin"}
    if args.instance_weighting == "margin" and not checked.takesWeights():
        raise ValueError(f"--method {args.method} does not take instance weights (weightCol), so "
                         "--instance-weighting margin cannot be used (`sparkfs methods` lists which methods take them)")
    return params


def run_stability(args, spark) -> Dict[str, Any]:
    """``sparkfs stability``: fit the method on every run's rows, then measure (resumable)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from sparkfs.evaluation.stability_runs import RunResult, StabilityStudy, subsample_plan
    from sparkfs.io.config import parse_param
    from sparkfs.io.readers import selector_budget
    from sparkfs.methods import build_selector
    from sparkfs.selectors.instance_weighting import MarginInstanceWeighter
    from sparkfs.spark.row_values import labels_by_position, row_values_attached

    directory = check_output(args)
    params = dict(parse_param(text) for text in args.param)
    sizes = subset_sizes(args.num_features)
    if args.runs < 2:
        raise ValueError(f"--runs must be at least 2 (stability compares runs), got {args.runs}")
    if args.parallelism < 1:
        raise ValueError(f"--parallelism must be at least 1, got {args.parallelism}")
    checked = build_selector(args.method, params)   # an unknown method or param fails before any Spark work
    own_weighting = checked.own_instance_weighting  # the method weights the rows itself (SVM-RFE)
    params = _checked_method(args, checked, params)
    dataset = read_input(args, spark, budget=selector_budget(checked, args.driver_budget_mb))
    # --missing before the draws: every run samples the rows the fits can read
    frame, missing = input_under_missing(dataset.df, dataset.features_col, dataset.label_col, args.missing)
    df = frame.persist(StorageLevel.MEMORY_AND_DISK)   # the same rows in the same partitions every run
    labels, offsets = labels_by_position(df, dataset.label_col)
    n_features = len(dataset.feature_names)
    forced = study_forced(args, list(dataset.feature_names), n_features)
    if max(sizes) > n_features:
        raise ValueError(f"--num-features asks for {max(sizes)} features; the input has {n_features}")
    plan = subsample_plan(labels, args.runs, sample_fraction=None if args.bootstrap else (args.sample_fraction or 0.9),
                          bootstrap=bool(args.bootstrap), seed=args.seed)
    description = {"method": args.method, "params": {k: v for k, v in sorted(params.items())},
                   "input": {"path": args.input, "format": args.format}, "instance_weighting": args.instance_weighting,
                   "draw": "bootstrap" if args.bootstrap else f"subsample {args.sample_fraction or 0.9}",
                   "seed": args.seed, **study_missing(missing),
                   **({} if forced is None else {"kept": forced[0], "excluded": forced[1]})}
    study = StabilityStudy(directory, plan, sizes, n_features, description=description,
                           true_relevance=_true_relevance(args.true_relevance, n_features), forced=forced)

    def fit_run(index: int, rows: np.ndarray) -> RunResult:
        draws = np.bincount(rows, minlength=labels.size).astype(float)
        with row_values_attached(df, np.arange(labels.size), draws, _COUNT, partition_offsets=offsets,
                                 what="draw count") as marked:
            counted = marked.where(F.col(_COUNT) > 0)
            # A row drawn c times appears c times (bootstrap); then the helper column goes.
            sample = (counted.withColumn(_REPEAT, F.explode(F.array_repeat(F.lit(1), F.col(_COUNT).cast("int"))))
                      .drop(_REPEAT, _COUNT))
            # Persisted: the draw counts are looked up by partition position, which must be evaluated
            # in this plan's partitions, not inside a later union of the selector's passes.
            sample = sample.persist(StorageLevel.MEMORY_AND_DISK)
            try:
                return _fit_on(sample)
            finally:
                sample.unpersist()

    def _fit_on(sample) -> RunResult:
        selector = build_selector(args.method, params)
        selector.setFeaturesCol(dataset.features_col).setLabelCol(dataset.label_col)
        if forced is not None:
            selector._set(keptFeatures=forced[0], excludedFeatures=forced[1])
        if args.instance_weighting == "margin" and not own_weighting:
            sample = MarginInstanceWeighter(featuresCol=dataset.features_col, labelCol=dataset.label_col,
                                            outputCol=_WEIGHT).transform(sample)
            selector.setWeightCol(_WEIGHT)
        model = selector.fit(sample)
        weights, path, remaining = _run_weights(selector, model)
        return RunResult(scores=model.scores, weights=weights, weight_path=path, remaining=remaining,
                         info={"n_rows": model.summary.get("n_rows")})

    try:
        study.run(fit_run, parallelism=args.parallelism, progress=progress.note)
        written = study.write_outputs()
        return {"summary": study.summary(), "written": [str(path) for path in written], "output": directory}
    finally:
        df.unpersist()


def run(args) -> int:
    # --mlflow: MLflow and its store checked before Spark (exit 2); the run is logged once the outputs exist
    tracking = mlflow_target(args.mlflow, args.mlflow_experiment, args.output)
    spark = start_study_session(args, check_output)
    if spark is None:
        return 0
    report = run_stability(args, spark)
    print(f"{'k':>5} {'kuncheva':>9} {'jaccard':>8}")
    for row in report["summary"]["subsets"]:
        print(f"{row['k']:>5} {row['kuncheva']:9.4f} {row['jaccard']:8.4f}")
    print("output: " + ", ".join(report["written"]))
    if tracking is not None:
        log_run(tracking, stability_record(args, report))
    return 0


COMMAND = Command(add_arguments, run, job_args="study")
