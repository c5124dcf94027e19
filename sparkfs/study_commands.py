"""The ``sparkfs instance-weights`` and ``sparkfs stability`` commands (Han & Yu 2010). No math here.

* ``instance-weights``: Han & Yu's margin-based weights (eq. 7, summing to n) of every row,
  written as ``DIR/weights.parquet`` (``row``: the 0-based position of the row in the input,
  ``weight``) and ``DIR/summary.json``, atomically.
* ``stability``: R seeded subsamples (or bootstrap samples) of the rows, the ``--method``
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

import logging
import time
from typing import Any, Dict, List

import numpy as np

from sparkfs import progress
from sparkfs.errors import InvalidInputError

log = logging.getLogger("sparkfs")
_COUNT = "__sparkfs_draws"
_WEIGHT = "__sparkfs_instance_weight"
_REPEAT = "__sparkfs_repeat"


def add_study_commands(commands, add_input_args, add_spark_args) -> None:
    """Register the two sub-commands on the CLI's sub-parser collection."""
    weights = commands.add_parser("instance-weights",
                                  help="Han & Yu margin-based instance weights: DIR/weights.parquet + summary.json")
    add_input_args(weights)
    weights.add_argument("--output", required=True, help="output directory (local path or URI)")
    weights.add_argument("--overwrite", action="store_true", help="replace an existing output directory written by "
                         "sparkfs instance-weights (and holding nothing else)")
    weights.add_argument("--driver-budget-mb", type=float, default=2048.0,
                         help="largest driver memory for the rows and margin vectors (default 2048)")
    add_spark_args(weights)

    study = commands.add_parser("stability", help="stability of a selector over seeded subsamples (Han & Yu 2010)")
    add_input_args(study)
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
    study.add_argument("--parallelism", type=int, default=1, help="runs fitted at once from driver threads")
    study.add_argument("--output", required=True, help="output directory: a local path, new or empty, or a "
                       "stability directory of its own (reused to resume)")
    study.add_argument("--driver-budget-mb", type=float, help="driver memory for the input's dense per-feature "
                       "state, bounding the LIBSVM vector size (default: the method's driverBudgetMB, else 1024)")
    add_spark_args(study)


def check_output(args) -> str:
    """Refuse an unsafe ``--output`` of ``instance-weights`` or ``stability`` before any work (a
    local one before Spark starts; :mod:`sparkfs.io.output_safety`). Returns the output."""
    from sparkfs.io.output import check_output_early
    from sparkfs.io.output_safety import check_study_directory

    if args.command == "instance-weights":
        check_output_early(args.output, bool(args.overwrite), command="instance-weights", inputs=[args.input])
        return args.output
    return check_study_directory(args.output, "stability", inputs=[args.input, args.true_relevance])


def _read(args, spark, require_label=True, budget=None):
    from sparkfs.io.readers import read_dataset

    return read_dataset(spark, args.input, args.format, label_col=args.label_col or "label",
                        features_col=args.features_col or "features", require_label=require_label,
                        require_features=bool(args.features_col),
                        num_features=args.vector_size, **(budget or {}))


def run_instance_weights(args, spark) -> Dict[str, Any]:
    """``sparkfs instance-weights``: the weights of every row, in input order."""
    import pandas as pd

    from sparkfs.io.output import check_output_free, write_output_files
    from sparkfs.job_options import Stage, run_fields, utc_now, versions
    from sparkfs.selectors.instance_weighting import MarginInstanceWeighter

    check_output_free(args.output, bool(args.overwrite), spark=spark, command="instance-weights", inputs=[args.input])
    started, started_at = time.perf_counter(), utc_now()
    with Stage(log, "read"):
        dataset = _read(args, spark, budget={"driver_budget_mb": args.driver_budget_mb,
                                             "budget_name": "--driver-budget-mb"})
    weighter = MarginInstanceWeighter(featuresCol=dataset.features_col, labelCol=dataset.label_col,
                                      driverBudgetMB=args.driver_budget_mb)
    with Stage(log, "instance-weights"):
        weighter.transform(dataset.df)
    result = weighter.result
    table = pd.DataFrame({"row": result.ids.astype(np.int64), "weight": result.weights})
    summary = {**weighter.summary, "input": {"path": args.input, "format": args.format},
               "row_column": "0-based position of the row in the input",
               "seconds": round(time.perf_counter() - started, 3), **versions(spark),
               **run_fields(getattr(args, "run_id", None), started_at, [args.input], spark)}
    with Stage(log, "write"):
        summary["output"] = write_output_files(args.output, {"weights.parquet": table}, summary,
                                               overwrite=bool(args.overwrite), spark=spark, command="instance-weights")
    return summary


def subset_sizes(text: str) -> List[int]:
    try:
        sizes = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ValueError(f"--num-features expects comma-separated whole numbers, got '{text}'") from None
    if not sizes or min(sizes) < 1:
        raise ValueError(f"--num-features expects subset sizes >= 1, got '{text}'")
    return sizes


def _true_relevance(path, n_features: int):
    if not path:
        return None
    values = np.load(path) if str(path).endswith(".npy") else np.loadtxt(path, ndmin=1)
    values = np.asarray(values, dtype=float).ravel()
    if values.shape != (n_features,) or not np.all(np.isfinite(values)):
        raise InvalidInputError(f"--true-relevance {path}: expected {n_features} finite values, got {values.size}")
    return values


def _run_weights(model):
    """(weights, weight path, remaining) of a fitted model (module notes)."""
    if "rfe_remaining" in model.summary:
        remaining, path = model.weightPath
        return path[0], path, remaining
    try:
        return model.featureArray("weights"), None, None
    except KeyError:
        return np.abs(model.scores), None, None


def run_stability(args, spark) -> Dict[str, Any]:
    """``sparkfs stability``: fit the method on every run's rows, then measure (resumable)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from sparkfs.evaluation.stability_runs import RunResult, StabilityStudy, subsample_plan
    from sparkfs.io.config import parse_param
    from sparkfs.io.readers import selector_budget
    from sparkfs.methods import build_selector
    from sparkfs.selectors.instance_weighting import MarginInstanceWeighter
    from sparkfs.spark.row_values import labels_by_position, with_row_values

    directory = check_output(args)
    params = dict(parse_param(text) for text in args.param)
    sizes = subset_sizes(args.num_features)
    if args.runs < 2:
        raise ValueError(f"--runs must be at least 2 (stability compares runs), got {args.runs}")
    if args.parallelism < 1:
        raise ValueError(f"--parallelism must be at least 1, got {args.parallelism}")
    checked = build_selector(args.method, params)   # an unknown method or param fails before any Spark work
    if args.instance_weighting == "margin" and args.method == "svm-rfe":
        params = {**params, "instanceWeighting": "margin"}
    dataset = _read(args, spark, budget=selector_budget(checked, args.driver_budget_mb))
    df = dataset.df.persist(StorageLevel.MEMORY_AND_DISK)   # the same rows in the same partitions every run
    labels, offsets = labels_by_position(df, dataset.label_col)
    n_features = len(dataset.feature_names)
    if max(sizes) > n_features:
        raise ValueError(f"--num-features asks for {max(sizes)} features; the input has {n_features}")
    plan = subsample_plan(labels, args.runs, sample_fraction=None if args.bootstrap else (args.sample_fraction or 0.9),
                          bootstrap=bool(args.bootstrap), seed=args.seed)
    description = {"method": args.method, "params": {k: v for k, v in sorted(params.items())},
                   "input": {"path": args.input, "format": args.format}, "instance_weighting": args.instance_weighting,
                   "draw": "bootstrap" if args.bootstrap else f"subsample {args.sample_fraction or 0.9}",
                   "seed": args.seed}
    study = StabilityStudy(directory, plan, sizes, n_features, description=description,
                           true_relevance=_true_relevance(args.true_relevance, n_features))

    def fit_run(index: int, rows: np.ndarray) -> RunResult:
        draws = np.bincount(rows, minlength=labels.size).astype(float)
        counted = with_row_values(df, np.arange(labels.size), draws, _COUNT, partition_offsets=offsets,
                                  what="draw count").where(F.col(_COUNT) > 0)
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
        if args.instance_weighting == "margin" and args.method != "svm-rfe":
            sample = MarginInstanceWeighter(featuresCol=dataset.features_col, labelCol=dataset.label_col,
                                            outputCol=_WEIGHT).transform(sample)
            selector.setWeightCol(_WEIGHT)
        model = selector.fit(sample)
        weights, path, remaining = _run_weights(model)
        return RunResult(scores=model.scores, weights=weights, weight_path=path, remaining=remaining,
                         info={"n_rows": model.summary.get("n_rows")})

    try:
        study.run(fit_run, parallelism=args.parallelism, progress=progress.note)
        written = study.write_outputs()
        return {"summary": study.summary(), "written": [str(path) for path in written], "output": directory}
    finally:
        df.unpersist()
