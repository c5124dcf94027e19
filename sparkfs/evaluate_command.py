"""The ``sparkfs evaluate`` and ``sparkfs report`` commands (issue 12). No math here.

``evaluate`` draws stratified folds of the rows, fits every ``--methods`` selector on each
training fold only (on Spark, the rows of the fold chosen by position), brings the top ``max(k)``
columns of the fold's rows to the driver and runs the scikit-learn classifiers
(:mod:`sparkfs.evaluation.cross_validation`). Every (method, fold) is saved when it ends: the
same command after a kill resumes. ``report`` rebuilds the tables, plots and ``report.html`` of a
directory from its saved results.

Methods are the ``--method`` names of ``sparkfs select`` (the paper methods and Spark ML's
``anova`` / ``chi2``) plus the driver-side baselines ``mutual-info`` and ``random``. Params go
per method: ``--param lfs.gamma=-0.5``.
"""

from __future__ import annotations

import shlex
from typing import Any, Dict, List

import numpy as np

from sparkfs import progress
from sparkfs.errors import InvalidInputError

_IN_FOLD = "__sparkfs_in_fold"
_SLICED = "__sparkfs_sliced"
_POSITION = "__sparkfs_position"
_WITH_PROBES = "__sparkfs_with_probes"
_CLASS_CODE = "__sparkfs_class_code"
_CLASS_INDEX = "__sparkfs_class_index"


def add_evaluate_commands(commands, add_input_args, add_spark_args) -> None:
    evaluate = commands.add_parser("evaluate", help="cross-validated accuracy of selectors vs number of features, "
                                   "with baselines, plots and report.html")
    add_input_args(evaluate)
    evaluate.add_argument("--methods", required=True, help="comma-separated: any `sparkfs methods` name, "
                          "mutual-info, random")
    evaluate.add_argument("--classifiers", default="knn,svm,nb,tree,rbf-svm",
                          help="comma-separated among knn, svm, rbf-svm, nb, tree (default all)")
    evaluate.add_argument("--num-features", default="1,2,5,10,20,50,100", help="subset sizes k, comma-separated")
    evaluate.add_argument("--cv", type=int, default=10, help="folds (default 10)")
    evaluate.add_argument("--repeats", type=int, default=1, help="repeats of the cross-validation")
    evaluate.add_argument("--seed", type=int, default=0, help="seed of the folds and of randomised methods")
    evaluate.add_argument("--test-input", help="a separate test set (same format and columns): train on all of "
                          "--input, test on it (instead of --cv)")
    evaluate.add_argument("--probes", type=int, default=0, help="append this many irrelevant Gaussian probe "
                          "features and report the selection ROC (Yang & Hu)")
    evaluate.add_argument("--probe-distribution", default="normal:0,20",
                          help="normal:MEAN,VARIANCE of the probes (default the paper's normal:0,20)")
    evaluate.add_argument("--param", action="append", default=[], metavar="METHOD.NAME=VALUE",
                          help="a method's param, e.g. lfs.gamma=-0.5 (repeatable)")
    evaluate.add_argument("--driver-budget-mb", type=float, default=400.0,
                          help="largest reduced data of a fold (rows x max k doubles) classified by scikit-learn on the "
                          "driver; above it svm, nb and tree run on pyspark.ml (default 400)")
    evaluate.add_argument("--output", required=True, help="output directory: a local path, new or empty, or an "
                          "evaluate directory of its own (reused to resume)")
    add_spark_args(evaluate)
    report = commands.add_parser("report", help="rebuild the tables, plots and report.html of an evaluate directory")
    report.add_argument("directory", help="the --output directory of `sparkfs evaluate`")
    compare = commands.add_parser("compare", help="several evaluations: lowest error per method (the Fisher-Markov "
                                  "paper's Table II) and Wilcoxon signed-rank tests over data sets (its Table V)")
    compare.add_argument("directories", nargs="+", help="--output directories of `sparkfs evaluate` (one per data set)")
    compare.add_argument("--reference", default="lfs", help="the method tested against every other one (default lfs)")
    compare.add_argument("--statistic", default="error_mean", choices=["error_mean", "mean_fold_min_error"],
                         help="error at the best k (default), or the mean over folds of each fold's lowest error")
    compare.add_argument("--output", required=True, help="directory for comparison.md, lowest_errors.csv, "
                         "wilcoxon.csv: new or empty, or one sparkfs compare wrote")


def _names(text: str, flag: str) -> List[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names or len(set(names)) != len(names):
        raise ValueError(f"{flag} expects distinct comma-separated names, got '{text}'")
    return names


def _method_params(texts: List[str], methods: List[str]) -> Dict[str, Dict[str, Any]]:
    from sparkfs.io.config import parse_param

    params: Dict[str, Dict[str, Any]] = {method: {} for method in methods}
    for text in texts:
        method, separator, rest = text.partition(".")
        if not separator or method not in params:
            raise ValueError(f"--param {text}: write METHOD.NAME=VALUE with METHOD among {', '.join(methods)}")
        name, value = parse_param(rest)
        params[method][name] = value
    return params


def _probe_distribution(text: str):
    kind, _, numbers = text.partition(":")
    try:
        mean, variance = (float(part) for part in numbers.split(","))
    except ValueError:
        raise ValueError(f"--probe-distribution expects normal:MEAN,VARIANCE, got '{text}'") from None
    if kind != "normal" or not variance > 0:
        raise ValueError(f"--probe-distribution expects normal:MEAN,VARIANCE with VARIANCE > 0, got '{text}'")
    return mean, variance


def check_output(args) -> str:
    """Refuse an unsafe ``--output`` of ``evaluate`` or ``compare`` (rules of
    :mod:`sparkfs.io.output_safety`; no Spark needed); returns the local directory."""
    from sparkfs.io.output_safety import check_study_directory

    if args.command == "compare":
        return check_study_directory(args.output, "compare", inputs=args.directories)
    return check_study_directory(args.output, "evaluate", inputs=[args.input, args.test_input])


def run_evaluate(args, spark) -> Dict[str, Any]:
    """``sparkfs evaluate``: folds, selection on each training fold, classifiers, outputs."""
    from pyspark import StorageLevel
    from pyspark.ml.feature import VectorSlicer
    from pyspark.sql import functions as F

    from sparkfs.evaluation import cross_validation as cv
    from sparkfs.evaluation.recommendation import read_recommendation
    from sparkfs.evaluation.report import build_report
    from sparkfs.io.readers import read_dataset
    from sparkfs.methods import METHODS, build_selector
    from sparkfs.spark.blocks import arrow_vectors_to_matrix
    from sparkfs.spark.row_values import labels_by_position, position_column, with_probe_features, with_row_values
    from sparkfs.study_commands import subset_sizes

    directory = check_output(args)
    methods = _names(args.methods, "--methods")
    classifiers = _names(args.classifiers, "--classifiers")
    unknown = [m for m in methods if m not in METHODS and m not in cv.BASELINE_METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}: use `sparkfs methods` names or {', '.join(cv.BASELINE_METHODS)}")
    bad = [c for c in classifiers if c not in cv.CLASSIFIER_NAMES]
    if bad:
        raise ValueError(f"unknown classifier(s) {bad}: use {', '.join(cv.CLASSIFIER_NAMES)}")
    sizes = subset_sizes(args.num_features)
    params = _method_params(args.param, methods)
    for method in methods:
        if method in METHODS:
            build_selector(method, params[method])          # unknown params fail before any Spark work
        elif params[method]:
            raise ValueError(f"the baseline {method} takes no params")
    if args.probes < 0:
        raise ValueError(f"--probes must be >= 0, got {args.probes}")
    probe_mean, probe_variance = _probe_distribution(args.probe_distribution)
    if not args.driver_budget_mb > 0:
        raise ValueError(f"--driver-budget-mb must be > 0, got {args.driver_budget_mb}")

    def load(path):
        dataset = read_dataset(spark, path, args.format, label_col=args.label_col or "label",
                               features_col=args.features_col or "features", num_features=args.vector_size,
                               require_features=bool(args.features_col),
                               driver_budget_mb=args.driver_budget_mb, budget_name="--driver-budget-mb")
        labels, offsets = labels_by_position(dataset.df, dataset.label_col)
        frame = dataset.df
        if args.probes:
            frame = with_probe_features(frame, dataset.features_col, offsets, n_probes=args.probes, mean=probe_mean,
                                        variance=probe_variance, seed=args.seed, output_col=_WITH_PROBES)
            frame = frame.drop(dataset.features_col).withColumnRenamed(_WITH_PROBES, dataset.features_col)
        return dataset, frame.persist(StorageLevel.MEMORY_AND_DISK), labels, offsets

    dataset, df, labels, offsets = load(args.input)
    test = load(args.test_input) if args.test_input else None
    try:
        n_rows, n_real = labels.size, len(dataset.feature_names)
        n_features = n_real + args.probes
        names = list(dataset.feature_names) + [f"probe{i}" for i in range(args.probes)]
        if test is not None and len(test[0].feature_names) != n_real:
            raise InvalidInputError(f"--test-input has {len(test[0].feature_names)} features; --input has {n_real}")
        folds = cv.fold_plan(labels, cv=1 if test is not None else args.cv, repeats=args.repeats, seed=args.seed,
                             test_labels=None if test is None else test[2])
        description = {
            "name": args.input.rstrip("/").split("/")[-1], "input": args.input, "format": args.format,
            "rows": int(n_rows), "classes": int(np.unique(labels).size),
            "feature_names": names, "params": params, "test_input": args.test_input,
            "probes": {"count": args.probes, "distribution": args.probe_distribution} if args.probes else None,
            "command": "sparkfs " + " ".join(shlex.quote(part) for part in getattr(args, "argv", [])),
            "baselines": [m for m in methods if m in cv.BASELINE_METHODS or m in ("anova", "chi2", "chi2-categorical")],
        }
        positions = np.arange(n_rows)
        label_values = np.unique(labels if test is None else np.concatenate([labels, test[2]]))

        def fold_frame(frame, frame_offsets, frame_labels, members, columns):
            """The rows ``members`` of ``frame``: the sorted ``columns`` of the features, the class
            index and the position (both attached before any filter, then persisted)."""
            code = np.zeros(frame_labels.size)
            code[members] = np.searchsorted(label_values, frame_labels[members]) + 1.0
            coded = with_row_values(frame, np.arange(frame_labels.size), code, _CLASS_CODE,
                                    partition_offsets=frame_offsets, what="fold membership")
            sliced = VectorSlicer(inputCol=dataset.features_col, outputCol=_SLICED,
                                  indices=[int(c) for c in columns]).transform(coded)
            kept = sliced.select(_SLICED, (F.col(_CLASS_CODE) - 1.0).alias(_CLASS_INDEX),
                                 position_column(frame_offsets).alias(_POSITION))
            kept = kept.persist(StorageLevel.MEMORY_AND_DISK)
            return kept, kept.where(F.col(_CLASS_INDEX) >= 0)

        def classify_on_spark(fold, columns, subsets, names, seed):
            from sparkfs.spark.classifiers import fold_predictions

            train_all, train = fold_frame(df, offsets, labels, fold.train, columns)
            test_source = (test[1], test[3], test[2]) if fold.separate_test else (df, offsets, labels)
            test_all, test_rows = fold_frame(*test_source, fold.test, columns)
            try:
                predicted = fold_predictions(train, test_rows, features_col=_SLICED, label_col=_CLASS_INDEX,
                                             key_col=_POSITION, subsets=subsets, classifiers=names,
                                             num_classes=label_values.size, seed=seed)
            finally:
                train_all.unpersist()
                test_all.unpersist()
            truth = test_source[2]
            return {key: (truth[keys.astype(np.int64)], label_values[classes.astype(np.int64)])
                    for key, (keys, classes) in predicted.items()}

        study = cv.EvaluationStudy(directory, folds, methods, classifiers, sizes, description,
                                   n_features=n_features, seed=args.seed,
                                   probe_mask=(np.arange(n_features) >= n_real) if args.probes else None,
                                   driver_budget_cells=max(1, int(args.driver_budget_mb * 2**20 / 8)),
                                   classify_above_budget=classify_on_spark)

        def training_rows(fold):
            member = np.zeros(n_rows)
            member[fold.train] = 1.0
            return (with_row_values(df, positions, member, _IN_FOLD, partition_offsets=offsets, what="fold membership")
                    .where(F.col(_IN_FOLD) > 0).drop(_IN_FOLD).persist(StorageLevel.MEMORY_AND_DISK))

        def columns_of_rows(columns, frame=df, frame_offsets=offsets):
            sliced = VectorSlicer(inputCol=dataset.features_col, outputCol=_SLICED,
                                  indices=[int(c) for c in columns]).transform(frame)
            table = sliced.select(_SLICED, position_column(frame_offsets).alias(_POSITION)).toArrow()
            matrix = arrow_vectors_to_matrix(table.column(_SLICED), len(columns), dense=True)
            order = np.argsort(table.column(_POSITION).to_numpy(), kind="stable")
            return matrix[order]

        def rank_fold(method, fold):
            if method in cv.BASELINE_METHODS:
                if not cv.fits_driver_budget(fold.train.size, n_features, study.driver_budget_cells):
                    raise InvalidInputError(f"the baseline {method} needs the {fold.train.size} x {n_features} training "
                                            "rows on the driver, above the evaluation's driver budget")
                return cv.baseline_scores(method, columns_of_rows(np.arange(n_features))[fold.train],
                                          labels[fold.train], seed=cv.fold_seed(args.seed, fold))
            selector = build_selector(method, params[method])
            selector.setFeaturesCol(dataset.features_col).setLabelCol(dataset.label_col)
            if "numFeatures" not in params[method] and "num_features" not in params[method]:
                # each k's selection is asked of the model below; the fit's own size only has to
                # exist (QFS refuses more than its candidates; its default 50 exceeds small data)
                selector.setNumFeatures(min(max(sizes), n_features))
            rows = training_rows(fold)
            try:
                model = selector.fit(rows)
            finally:
                rows.unpersist()
            # each k on the features the selector picks for k (QFS: not the top k of its scores)
            return cv.FoldSelection(model.scores, model.selectionsForCounts(study.feature_counts))

        def data_for_fold(fold, columns):
            matrix = columns_of_rows(columns)
            if fold.separate_test:
                test_matrix = columns_of_rows(columns, test[1], test[3])
                return matrix[fold.train], labels[fold.train], test_matrix[fold.test], test[2][fold.test]
            return matrix[fold.train], labels[fold.train], matrix[fold.test], labels[fold.test]

        done = study.run(rank_fold, data_for_fold, progress=progress.note)
        # the recommended (method, k) of each classifier, fitted once more on every row: its features
        study.fit_recommended_on_all_rows(rank_fold, progress=progress.note)
        written = study.write_results()
        report = build_report(directory)
        return {"done": len(done), "written": [str(path) for path in written] + [str(report)], "output": directory,
                "recommendation": read_recommendation(directory)}
    finally:
        df.unpersist()
        if test is not None:
            test[1].unpersist()


def run_compare(args) -> Dict[str, Any]:
    """``sparkfs compare DIR...``: the lowest-error table and the Wilcoxon tests, as Markdown and CSV."""
    from pathlib import Path

    import json

    from sparkfs.evaluation import comparison
    from sparkfs.evaluation.report import atomic_write_bytes
    from sparkfs.io.output_safety import marker

    output = Path(check_output(args))
    best = comparison.best_errors(args.directories)
    lowest = comparison.lowest_error_table(best, args.statistic)
    tests = comparison.wilcoxon_table(best, args.reference, args.statistic)
    output.mkdir(parents=True, exist_ok=True)
    # The marker first: a directory holding the tables always says which command wrote it.
    about = {**marker("compare"), "directories": [str(d) for d in args.directories], "reference": args.reference,
             "statistic": args.statistic}
    atomic_write_bytes(output / "comparison.json", json.dumps(about, indent=2).encode())
    text = (f"# Lowest error (%) per data set, classifier and method ({args.statistic})\n\n"
            + comparison.markdown_table(lowest, bold_lowest=True)
            + f"\n\n# Wilcoxon signed-rank tests of {args.reference} against each method over the "
            f"{len(lowest)} (data set, classifier) cells\n\n" + comparison.markdown_table(tests, digits=4) + "\n")
    written = [atomic_write_bytes(output / "lowest_errors.csv", lowest.to_csv(index=False).encode()),
               atomic_write_bytes(output / "wilcoxon.csv", tests.to_csv(index=False).encode()),
               atomic_write_bytes(output / "comparison.md", text.encode())]
    return {"written": [str(path) for path in written], "text": text}


def run_report(args) -> Dict[str, Any]:
    """``sparkfs report DIR``: tables and plots from the saved results, then report.html."""
    from sparkfs.evaluation.result_tables import write_results
    from sparkfs.evaluation.report import build_report
    from sparkfs.io.output_safety import check_study_directory

    directory = check_study_directory(args.directory, "evaluate", flag="sparkfs report", must_be_own=True)
    written = write_results(directory)
    return {"written": [str(path) for path in written] + [str(build_report(directory))]}
