"""``sparkfs evaluate``. No math here; the rows of the folds are the Spark layer's
(:mod:`sparkfs.spark.folds`).

``evaluate`` draws stratified folds of the rows, fits every ``--methods`` selector on each
training fold only (on Spark, the rows of the fold chosen by position), brings the top ``max(k)``
columns of the fold's rows to the driver and runs the scikit-learn classifiers
(:mod:`sparkfs.evaluation.cross_validation`). Every (method, fold) is saved when it ends: the
same command after a kill resumes.

Methods are the ``--method`` names of ``sparkfs select`` (the paper methods and Spark ML's
``anova`` / ``chi2``) plus the driver-side baselines ``mutual-info`` and ``random``. Params go
per method: ``--param lfs.gamma=-0.5``.
"""

from __future__ import annotations

import shlex
from typing import Any, Dict, List, Optional

import numpy as np

from sparkfs import progress
from sparkfs.commands import Command
from sparkfs.commands.arguments import (
    add_forced_args,
    add_input_args,
    add_input_table_arg,
    add_missing_arg,
    add_spark_args,
    feature_names,
    input_file,
    input_under_missing,
    start_study_session,
    study_forced,
    study_missing,
    subset_sizes,
)
from sparkfs.commands.tracking import add_mlflow_args, evaluate_record, log_run, mlflow_target
from sparkfs.errors import InvalidInputError, ParamBoundError


def add_arguments(commands) -> None:
    evaluate = commands.add_parser("evaluate", help="cross-validated accuracy of selectors vs number of features, "
                                   "with baselines, plots and report.html")
    add_input_args(evaluate)
    add_input_table_arg(evaluate)
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
    add_missing_arg(evaluate, default="refuse")
    evaluate.add_argument("--driver-budget-mb", type=float, default=400.0,
                          help="largest reduced data of a fold (rows x max k doubles) classified by scikit-learn on "
                          "the driver; above it svm, nb and tree run on pyspark.ml (default 400)")
    evaluate.add_argument("--output", required=True, help="output directory: a local path, new or empty, or an "
                          "evaluate directory of its own (reused to resume)")
    add_forced_args(evaluate)
    add_mlflow_args(evaluate)
    add_spark_args(evaluate)


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
    """Refuse an unsafe ``--output`` (rules of :mod:`sparkfs.io.output_safety`; no Spark needed);
    returns the local directory."""
    from sparkfs.io.output_safety import check_study_directory

    return check_study_directory(args.output, "evaluate", inputs=[input_file(args.input, args.format),
                                                                  input_file(args.test_input, args.format)])


def _checked_request(args) -> Dict[str, Any]:
    """The methods, classifiers, sizes, params and probe distribution, refused before any Spark work."""
    from sparkfs.evaluation import baselines
    from sparkfs.evaluation import cross_validation as cv
    from sparkfs.methods import METHODS, build_selector

    methods = _names(args.methods, "--methods")
    classifiers = _names(args.classifiers, "--classifiers")
    unknown = [m for m in methods if m not in METHODS and m not in baselines.BASELINE_METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}: use `sparkfs methods` names or "
                         f"{', '.join(baselines.BASELINE_METHODS)}")
    bad = [c for c in classifiers if c not in cv.CLASSIFIER_NAMES]
    if bad:
        raise ValueError(f"unknown classifier(s) {bad}: use {', '.join(cv.CLASSIFIER_NAMES)}")
    sizes = subset_sizes(args.num_features)
    params = _method_params(args.param, methods)
    for method in methods:
        if method in METHODS:
            selector = build_selector(method, params[method])  # unknown params fail before any Spark work
            if selector._continuous_label():
                raise ValueError(f"--methods {method} takes a continuous label, and evaluate measures classifiers' "
                                 "accuracy on class labels; run `sparkfs select` or `sparkfs stability` with it")
        elif params[method]:
            raise ValueError(f"the baseline {method} takes no params")
    if args.probes < 0:
        raise ValueError(f"--probes must be >= 0, got {args.probes}")
    probe_mean, probe_variance = _probe_distribution(args.probe_distribution)
    if not args.driver_budget_mb > 0:
        raise ValueError(f"--driver-budget-mb must be > 0, got {args.driver_budget_mb}")
    return {"methods": methods, "classifiers": classifiers, "sizes": sizes, "params": params,
            "probe_mean": probe_mean, "probe_variance": probe_variance}


def _load(args, spark, path: str, request: Dict[str, Any], vector_size: Optional[int] = None):
    """(the dataset read, its rows numbered by position with the probes appended, persisted, the
    ``--missing`` facts); ``vector_size`` (the training set's, for ``--test-input``) unless
    ``--vector-size`` is given. The ``--missing`` policy applies here, before the folds: the classifiers
    read the same rows as the selectors."""
    from sparkfs.io.feature_names import read_named_dataset
    from sparkfs.spark.folds import positioned_input

    dataset = read_named_dataset(spark, path, args.format, feature_names(args, spark),
                                 label_col=args.label_col or "label", features_col=args.features_col or "features",
                                 num_features=args.vector_size or vector_size, require_features=bool(args.features_col),
                                 driver_budget_mb=args.driver_budget_mb, budget_name="--driver-budget-mb")
    frame, missing = input_under_missing(dataset.df, dataset.features_col, dataset.label_col, args.missing)
    return dataset, positioned_input(frame, dataset.features_col, dataset.label_col, probes=args.probes,
                                     probe_mean=request["probe_mean"], probe_variance=request["probe_variance"],
                                     seed=args.seed), missing


def _description(args, request: Dict[str, Any], labels: np.ndarray, names: List[str],
                 missing: Dict[str, Any]) -> Dict[str, Any]:
    from sparkfs.evaluation import baselines

    methods = request["methods"]
    return {
        "name": args.input.rstrip("/").split("/")[-1], "input": args.input, "format": args.format,
        "rows": int(labels.size), "classes": int(np.unique(labels).size),
        "feature_names": names, "params": request["params"], "test_input": args.test_input,
        "probes": {"count": args.probes, "distribution": args.probe_distribution} if args.probes else None,
        **study_missing(missing),
        "command": "sparkfs " + " ".join(shlex.quote(part) for part in getattr(args, "argv", [])),
        "baselines": [m for m in methods if m in baselines.BASELINE_METHODS
                      or m in ("anova", "chi2", "chi2-categorical", "variance")],
        # --keep / --exclude change every selection: a study resumed must have the same
        **({} if request.get("forced") is None else {"kept": request["forced"][0], "excluded": request["forced"][1]}),
    }


class _FoldWork:
    """What the study asks of Spark per fold: the ranking of a method on the training rows, the
    reduced rows on the driver, or the classifiers on Spark above the driver budget."""

    def __init__(self, args, request, train, test, label_values, n_features: int, label_col: str):
        self.args, self.params, self.sizes = args, request["params"], request["sizes"]
        self.label_col = label_col
        self.train, self.test = train, test
        self.label_values, self.n_features = label_values, n_features
        self.study = None  # set once the study exists (it takes classify_on_spark)
        self.forced = request.get("forced")  # (kept, excluded) of --keep / --exclude, or None

    def classify_on_spark(self, fold, columns, subsets, names, seed):
        from sparkfs.spark.folds import fold_predictions_on_spark

        test_source = self.test if fold.separate_test else self.train
        predicted = fold_predictions_on_spark(self.train, fold.train, test_source, fold.test, columns, subsets,
                                              names, self.label_values, seed)
        truth = test_source.labels
        return {key: (truth[keys.astype(np.int64)], self.label_values[classes.astype(np.int64)])
                for key, (keys, classes) in predicted.items()}

    def rank_fold(self, method, fold):
        from sparkfs.core.selection import forced_first, rank_features
        from sparkfs.evaluation import baselines
        from sparkfs.evaluation import cross_validation as cv
        from sparkfs.methods import build_selector
        from sparkfs.spark.folds import columns_by_position, training_rows

        labels, n_features = self.train.labels, self.n_features
        if method in baselines.BASELINE_METHODS:
            if not cv.fits_driver_budget(fold.train.size, n_features, self.study.driver_budget_cells):
                raise InvalidInputError(f"the baseline {method} needs the {fold.train.size} x {n_features} training "
                                        "rows on the driver, above the evaluation's driver budget")
            scores = baselines.baseline_scores(method, columns_by_position(self.train, np.arange(n_features))[
                fold.train], labels[fold.train], seed=cv.fold_seed(self.args.seed, fold))
            if self.forced is None:
                return scores
            return cv.FoldSelection(scores, {k: forced_first(rank_features(scores), *self.forced, k)
                                             for k in self.study.feature_counts})
        params = self.params[method]
        selector = build_selector(method, params)
        if self.forced is not None:
            selector._set(keptFeatures=self.forced[0], excludedFeatures=self.forced[1])
        selector.setFeaturesCol(self.train.features_col).setLabelCol(self.label_col)
        if "numFeatures" not in params and "num_features" not in params:
            # each k's selection is asked of the model below; the fit's own size only has to
            # exist (QFS refuses more than its candidates; its default 50 exceeds small data)
            selector.setNumFeatures(min(max(self.sizes), n_features))
        with training_rows(self.train, fold.train) as rows:
            try:
                model = selector.fit(rows)
            except (InvalidInputError, ParamBoundError) as error:
                raise type(error)(f"{method}: {error}. {self.args.output} keeps the results done so far: run the "
                                  f"same command without {method} (or with other params for it) "
                                  "to resume it") from error
        # each k on the features the selector picks for k (QFS: not the top k of its scores)
        # greedy methods (mrmr, jmi, cmim) pass their tied steps on to ties.csv
        return cv.FoldSelection(model.scores, model.selectionsForCounts(self.study.feature_counts),
                                tie_sizes=model.summary.get("tie_sizes"))

    def data_for_fold(self, fold, columns):
        from sparkfs.spark.folds import columns_by_position

        labels = self.train.labels
        matrix = columns_by_position(self.train, columns)
        if fold.separate_test:
            test_matrix = columns_by_position(self.test, columns)
            return matrix[fold.train], labels[fold.train], test_matrix[fold.test], self.test.labels[fold.test]
        return matrix[fold.train], labels[fold.train], matrix[fold.test], labels[fold.test]


def run_evaluate(args, spark) -> Dict[str, Any]:
    """``sparkfs evaluate``: folds, selection on each training fold, classifiers, outputs."""
    from sparkfs.evaluation import cross_validation as cv
    from sparkfs.evaluation.recommendation import read_recommendation
    from sparkfs.evaluation.report import build_report

    directory = check_output(args)
    request = _checked_request(args)
    dataset, train, missing = _load(args, spark, args.input, request)
    request["forced"] = study_forced(args, list(dataset.feature_names), len(dataset.feature_names))
    # A LIBSVM test set's last features may be all zero: it takes the training set's vector size.
    test = (_load(args, spark, args.test_input, request,
                  vector_size=len(dataset.feature_names) if args.format == "libsvm" else None)
            if args.test_input else None)
    if test is not None:
        missing = {**missing, "test_input": test[2]}
    try:
        labels, n_real = train.labels, len(dataset.feature_names)
        n_features = n_real + args.probes
        names = list(dataset.feature_names) + [f"probe{i}" for i in range(args.probes)]
        if test is not None and len(test[0].feature_names) != n_real:
            raise InvalidInputError(f"--test-input has {len(test[0].feature_names)} features; --input has {n_real}")
        folds = cv.fold_plan(labels, cv=1 if test is not None else args.cv, repeats=args.repeats, seed=args.seed,
                             test_labels=None if test is None else test[1].labels)
        label_values = np.unique(labels if test is None else np.concatenate([labels, test[1].labels]))
        work = _FoldWork(args, request, train, None if test is None else test[1], label_values, n_features,
                         dataset.label_col)
        study = cv.EvaluationStudy(directory, folds, request["methods"], request["classifiers"], request["sizes"],
                                   _description(args, request, labels, names, missing), n_features=n_features,
                                   seed=args.seed,
                                   probe_mask=(np.arange(n_features) >= n_real) if args.probes else None,
                                   driver_budget_cells=max(1, int(args.driver_budget_mb * 2**20 / 8)),
                                   classify_above_budget=work.classify_on_spark)
        work.study = study
        done = study.run(work.rank_fold, work.data_for_fold, progress=progress.note)
        # the recommended (method, k) of each classifier, fitted once more on every row: its features
        study.fit_recommended_on_all_rows(work.rank_fold, progress=progress.note)
        written = study.write_results()
        report = build_report(directory)
        return {"done": len(done), "written": [str(path) for path in written] + [str(report)], "output": directory,
                "recommendation": read_recommendation(directory)}
    finally:
        train.unpersist()
        if test is not None:
            test[1].unpersist()


def run(args) -> int:
    # --mlflow: MLflow and its store checked before Spark (exit 2); the run is logged once the outputs exist
    tracking = mlflow_target(args.mlflow, args.mlflow_experiment, args.output)
    spark = start_study_session(args, check_output)
    if spark is None:
        return 0
    report = run_evaluate(args, spark)
    print(f"(method, fold) pairs fitted now: {report['done']}; report: {report['written'][-1]}")
    from sparkfs.evaluation.recommendation import recommendation_lines

    for line in recommendation_lines(report["recommendation"]):
        print("recommended for " + line)
    if tracking is not None:
        log_run(tracking, evaluate_record(args, report))
    return 0


COMMAND = Command(add_arguments, run, job_args="study")
