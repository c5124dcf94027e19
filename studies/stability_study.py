"""Stability of SVM-RFE with and without margin-based instance weighting (Han & Yu, ICDM 2010,
Section V) -- pure NumPy / scikit-learn on one core, no Spark.

A. The synthetic study of Section V-B. R training sets of 100 rows from
   ``correlated_groups_data`` (1,000 features in 100 groups of 10, within-group correlation 0.8,
   the first 50 relevant, class means +-0.5, 50 rows per class), a fresh set per run (set i from
   ``default_rng([SYNTHETIC_SEED, i])``). SVM-RFE removes 10 % of the remaining features per
   iteration (rounded up). Per RFE iteration: average variance, bias and error of the normalised
   weights (eqs. 1-4) against r* = ``correlated_groups_relevance()``; Kuncheva (eqs. 8-9) and
   Jaccard stability of the top-k subsets, k = 10, 20, ..., 100; accuracy of a linear SVM on the
   top k, tested on one set of 5,000 rows (as the paper's Figure 3).
   Inputs: each training set scaled to [0, 1] by its own minimum and range (what Weka's SMO, the
   paper's SVM, does by default) and, as a second input, the raw values (the setting of the xfail
   in tests/core/test_svm_rfe.py). Methods: svm-rfe, iw-svm-rfe (instance weights of eqs. 6-7,
   summing to n), and two labelled extras that are not tunings: iw-svm-rfe with the weights
   summing to 1 (eq. 7 as printed; the same as C / n with weights summing to n) and its control,
   svm-rfe with C = 1 / n and no instance weights. en-svm-rfe (rank sum over bootstraps) on the
   first ``--ensemble-sets`` scaled sets only (it costs one RFE per bootstrap).
B. Microarray sets (colon, ALLAML; Prostate_GE in the full run): R = 10 stratified subsamples of
   90 % of the rows (``subsample_plan(labels, 10, sample_fraction=0.9, seed=MICROARRAY_SEED)``),
   the other 10 % held out. Each run scales its training rows to [0, 1] (test rows by the same
   minimum and range) and runs svm-rfe, en-svm-rfe, iw-svm-rfe, relieff and iw-relieff (k = 10), lfs
   and iw-lfs (gamma = -0.5), plus the two extras of part A. Per method and k = 10, ..., 50:
   Kuncheva (with a leave-one-run-out jackknife standard error), Jaccard, and the held-out accuracy
   of a linear SVM (C = 1) on the top k; the variance of the RFE weights per iteration (Figure 4).

The top-k subset of an RFE run is the subset that RFE stopping at k features keeps
(``rfe_subset_scores``), so k need not be one of the remaining counts. Every method x input x data set is a
:class:`sparkfs.evaluation.stability_runs.StabilityStudy` in its own subdirectory of ``--output``:
an interrupted run resumes where it stopped. The script then writes
``benchmarks/results/stability.{md,json}`` and ``stability_*.png`` (``--quick``:
``stability_quick.*``).

    .venv/bin/python -m studies.stability_study [--quick] [--output DIR] [--runs R]
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # one core: the machine's other core runs Spark jobs

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import sklearn  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from sklearn.exceptions import ConvergenceWarning  # noqa: E402

from benchmarks.common import RESULTS, ROOT, load_npz  # noqa: E402
from sparkfs.core import neighbours as nb  # noqa: E402
from sparkfs.core import relief as rl  # noqa: E402
from sparkfs.core import stability as st  # noqa: E402
from sparkfs.core import svm_rfe as sr  # noqa: E402
from sparkfs.core.fisher_markov import markov_coefficients  # noqa: E402
from sparkfs.core.instance_weighting import margin_instance_weights  # noqa: E402
from sparkfs.core.pairs import one_hot  # noqa: E402
from sparkfs.evaluation.stability_runs import RunResult, StabilityStudy, subsample_plan  # noqa: E402

SYNTHETIC_SEED, TEST_SEED, ENSEMBLE_SEED, MICROARRAY_SEED = 2010, 5000, 20, 0
TRAIN_ROWS, TEST_ROWS, STEP = 100, 5000, 0.1
SYNTHETIC_KS = list(range(10, 101, 10))
MICROARRAY_KS = list(range(10, 51, 10))
PATH_MIN_REMAINING = 10     # synthetic: keep the weight path down to 10 features (Figure 2's range)
PATH_MAX_REMAINING = 1000   # microarray: keep it from about 1,000 features on (Figure 4's range)
RELIEFF_K, LFS_GAMMA = 10, -0.5
MICROARRAY_RUNS, SAMPLE_FRACTION = 10, 0.9
BLOCKS = 10                 # synthetic comparisons: R runs cut into 10 blocks of R / 10

# Method -> what svm_rfe gets. "weights": None, "n" (eqs. 6-7 x n) or "1" (eq. 7 as printed);
# "c_over_n": C = 1 / n.
RFE_METHODS = {
    "svm-rfe": {"weights": None, "c_over_n": False},
    "iw-svm-rfe": {"weights": "n", "c_over_n": False},
    "iw-svm-rfe (sum 1)": {"weights": "1", "c_over_n": False},
    "svm-rfe (C = 1/n)": {"weights": None, "c_over_n": True},
}
EXTRAS = ("iw-svm-rfe (sum 1)", "svm-rfe (C = 1/n)")
MICROARRAY_METHODS = ("svm-rfe", "en-svm-rfe", "iw-svm-rfe", "relieff", "iw-relieff", "lfs", "iw-lfs") + EXTRAS
INPUTS = ("scaled", "raw")


def say(message: str) -> None:
    print(message, flush=True)


def slug(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name).strip("-").replace("--", "-")


def progress_printer(label: str, every: int):
    """StabilityStudy's per-run message, printed for every ``every``-th run only."""
    count = [0]

    def report(message: str) -> None:
        count[0] += 1
        if count[0] == 1 or count[0] % every == 0 or "about 0 s left" in message:
            say(f"  {label}: {message}")
    return report


# Shared pieces -----------------------------------------------------------------------------------


def range_scaled(X, reference):
    """``(X - min) / (max - min)`` with the reference rows' minimum and range; a feature constant on
    the reference rows keeps scale 1 (:mod:`sparkfs.core.scaling`'s rule)."""
    minimum, spread = reference.min(axis=0), np.ptp(reference, axis=0)
    return (X - minimum) / np.where(spread > 0, spread, 1.0)


def rfe_subset_scores(result: sr.RFEResult) -> np.ndarray:
    """Scores whose top k is the subset that RFE stopping at k features keeps, for every k.

    A feature last present at fit t (0-based; ``t = T - ranking``, T fits) scores ``2 t + r_t``, r_t
    its normalised weight at that fit (in [0, 1]). Features eliminated later rank higher; within one
    elimination batch the larger weight ranks higher. RFE stopping at k makes the same fits as long
    as ``remaining - ceil(0.1 remaining) >= k``; at the first fit where that fails it keeps the top k
    by that fit's weights, which are the survivors of that fit plus the best of its batch: the top k
    of these scores.
    """
    fits = result.weight_path.shape[0]
    last_fit = fits - result.ranking
    return 2.0 * last_fit + result.weight_path[last_fit, np.arange(result.ranking.size)]


def rank_sum_scores(result: sr.EnsembleRFEResult, seed) -> np.ndarray:
    """``-rank_sum`` with equal rank sums in a random order (seeded per run): the members' batches
    share ranks, so sums tie, and ``ensemble_svm_rfe``'s tie rule (lower index first) would favour
    the synthetic relevant features, which are the first 50."""
    jitter = np.random.default_rng(seed).uniform(0.0, 0.5, result.rank_sums.size)
    return -result.rank_sums.astype(float) + jitter


def instance_weights(X, y, rule):
    if rule is None:
        return None, {}
    weights = margin_instance_weights(X, y).weights
    info = {"instance_weight_min": float(weights.min()), "instance_weight_max": float(weights.max())}
    return (weights if rule == "n" else weights / weights.size), info


def rfe_run(method, X, y):
    """One RFE of an RFE_METHODS entry: the result and JSON-able details."""
    spec = RFE_METHODS[method]
    weights, info = instance_weights(X, y, spec["weights"])
    C = 1.0 / X.shape[0] if spec["c_over_n"] else 1.0
    result = sr.svm_rfe(X, y, sample_weight=weights, step=STEP, C=C)   # the paper's: as given, no halving
    info["convergence_warnings"] = int(result.not_converged)   # svm_rfe counts liblinear's warnings per fit
    return result, info


def ensemble_run(X, y, bootstraps, seed):
    result = sr.ensemble_svm_rfe(X, y, ensemble=bootstraps, seed=seed, step=STEP)
    return result, {"convergence_warnings": int(result.not_converged)}


def subset_accuracies(scores, train, y_train, test, y_test, ks) -> dict:
    """Accuracy of the linear SVM of the RFE (hinge loss, C = 1) on the top k of ``scores``."""
    accuracy = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for k in ks:
            columns = st.top_k_subsets(scores, k)[0]
            model = sr.linear_svm().fit(train[:, columns], y_train)
            accuracy[str(k)] = float(np.mean(model.predict(test[:, columns]) == y_test))
    return accuracy


def load_runs(directory: Path, count: int) -> list:
    """The arrays of runs 0..count-1 as StabilityStudy saved them (``runs/run-00000.npz``)."""
    runs = []
    for index in range(count):
        with np.load(directory / "runs" / f"run-{index:05d}.npz", allow_pickle=False) as stored:
            runs.append({name: stored[name] for name in stored.files if name != "info"}
                        | {"info": json.loads(str(stored["info"]))})
    return runs


def study_results(study: StabilityStudy, directory: Path, wall: float) -> dict:
    """The study's summary, its per-run accuracies and seconds, and this session's wall time."""
    study.write_outputs()
    summary = study.summary()
    runs = load_runs(directory, len(study.plan))
    accuracy = {}
    for key in runs[0]["info"].get("accuracy", {}):
        values = np.array([run["info"]["accuracy"][key] for run in runs])
        accuracy[key] = {"mean": float(values.mean()), "std": float(values.std(ddof=1))}
    seconds = [float(run["seconds"]) for run in runs]
    warnings_count = sum(run["info"].get("convergence_warnings", 0) for run in runs)
    return {"summary": summary, "accuracy": accuracy, "seconds_per_run": float(np.mean(seconds)),
            "seconds_total": float(np.sum(seconds)), "session_wall": wall, "convergence_warnings": warnings_count,
            "directory": str(directory.relative_to(ROOT) if directory.is_relative_to(ROOT) else directory)}


def run_study(directory, plan, ks, n_features, description, fit_run, label, true_relevance=None, every=1):
    study = StabilityStudy(directory, plan, ks, n_features, description=description, true_relevance=true_relevance)
    started = time.perf_counter()
    fitted = study.run(fit_run, progress=progress_printer(label, every))
    wall = time.perf_counter() - started
    say(f"  {label}: {len(fitted)} runs fitted now, {len(plan) - len(fitted)} resumed from disk ({wall:.0f} s)")
    return study_results(study, Path(directory), wall)


# Part A: the synthetic study ---------------------------------------------------------------------


def synthetic_set(index: int):
    return st.correlated_groups_data(TRAIN_ROWS, np.random.default_rng([SYNTHETIC_SEED, index]))


def synthetic_fit(method, scaled, test, bootstraps):
    X_test, y_test = test

    def fit_run(index, rows):
        X, y = synthetic_set(index)
        train = range_scaled(X, X) if scaled else X
        test_matrix = range_scaled(X_test, X) if scaled else X_test
        if method == "en-svm-rfe":
            result, info = ensemble_run(train, y, bootstraps, [ENSEMBLE_SEED, index])
            scores, path, remaining = rank_sum_scores(result, [ENSEMBLE_SEED, index, 1]), None, None
        else:
            result, info = rfe_run(method, train, y)
            keep = result.n_remaining >= PATH_MIN_REMAINING
            scores, path, remaining = rfe_subset_scores(result), result.weight_path[keep], result.n_remaining[keep]
        info["accuracy"] = subset_accuracies(scores[None], train, y, test_matrix, y_test, SYNTHETIC_KS)
        return RunResult(scores, weight_path=path, remaining=remaining, info=info)
    return fit_run


def block_differences(runs_a, runs_b, measure, blocks=BLOCKS):
    """Mean and standard error over ``blocks`` consecutive blocks of the runs of ``measure(block
    of a) - measure(block of b)`` (paired: the same training sets)."""
    size = len(runs_a) // blocks
    values = [measure(runs_a[i * size:(i + 1) * size]) - measure(runs_b[i * size:(i + 1) * size])
              for i in range(blocks)]
    return {"mean": float(np.mean(values)), "se": float(np.std(values, ddof=1) / np.sqrt(blocks)), "blocks": blocks,
            "runs_per_block": size}


def path_measure(t, name, truth):
    def measure(runs):
        terms = st.average_bias_variance_error(np.stack([run["weight_path"][t] for run in runs]), truth)
        return getattr(terms, name)
    return measure


def kuncheva_measure(k, n_features):
    def measure(runs):
        return st.kuncheva_stability(st.top_k_subsets(np.stack([run["scores"] for run in runs]), k), n_features)
    return measure


def accuracy_measure(k):
    def measure(runs):
        return float(np.mean([run["info"]["accuracy"][str(k)] for run in runs]))
    return measure


def synthetic_comparisons(directories, runs, truth):
    """Paired block comparisons on the scaled and raw inputs at the points the paper discusses."""
    comparisons = []
    pairs = [("iw-svm-rfe", "svm-rfe"), ("iw-svm-rfe (sum 1)", "svm-rfe"), ("svm-rfe (C = 1/n)", "svm-rfe"),
             ("iw-svm-rfe (sum 1)", "svm-rfe (C = 1/n)")]
    for input_name in INPUTS:
        remaining = None
        loaded = {}
        for method in RFE_METHODS:
            loaded[method] = load_runs(directories[(input_name, method)], runs)
            remaining = loaded[method][0]["remaining"].tolist()
        for a, b in pairs:
            row = {"input": input_name, "a": a, "b": b}
            for count in (54, 48, 10):
                t = remaining.index(count)
                for name in ("variance", "error"):
                    row[f"{name}@{count}"] = block_differences(loaded[a], loaded[b], path_measure(t, name, truth))
            for k in (50, 20):
                row[f"kuncheva@{k}"] = block_differences(loaded[a], loaded[b], kuncheva_measure(k, truth.size))
                row[f"accuracy@{k}"] = block_differences(loaded[a], loaded[b], accuracy_measure(k))
            comparisons.append(row)
        del loaded
    return comparisons


def run_synthetic(args, output: Path) -> dict:
    started = time.perf_counter()
    truth = st.correlated_groups_relevance()
    test = st.correlated_groups_data(TEST_ROWS, np.random.default_rng([TEST_SEED]))
    plan = [np.arange(TRAIN_ROWS)] * args.runs  # every run draws a fresh set inside fit_run
    studies, directories = {}, {}
    jobs = [(input_name, method, args.runs) for input_name in INPUTS for method in RFE_METHODS]
    jobs.append(("scaled", "en-svm-rfe", args.ensemble_sets))
    for input_name, method, runs in jobs:
        directory = output / "synthetic" / input_name / slug(method)
        description = {"part": "synthetic", "method": method, "input": input_name, "train_rows": TRAIN_ROWS,
                       "generator": "correlated_groups_data defaults",
                       "set_seed": f"default_rng([{SYNTHETIC_SEED}, i])",
                       "test": f"{TEST_ROWS} rows, default_rng([{TEST_SEED}])", "step": STEP, "C": 1.0,
                       "path_min_remaining": PATH_MIN_REMAINING, "ks": SYNTHETIC_KS}
        if method == "en-svm-rfe":
            description |= {"bootstraps": args.bootstraps, "ensemble_seed": f"[{ENSEMBLE_SEED}, i]"}
        else:
            description |= RFE_METHODS[method]
        say(f"A. synthetic, {input_name}, {method}: {runs} training sets")
        directories[(input_name, method)] = directory
        studies[f"{input_name}/{method}"] = run_study(
            directory, plan[:runs], SYNTHETIC_KS, truth.size, description,
            synthetic_fit(method, input_name == "scaled", test, args.bootstraps),
            f"{input_name}/{method}", true_relevance=truth, every=max(1, runs // 10))
    # The ensemble ran on the first sets only: single SVM-RFE on the same sets, for a fair comparison.
    first = load_runs(directories[("scaled", "svm-rfe")], args.ensemble_sets)
    same_sets = {str(k): kuncheva_measure(k, truth.size)(first) for k in SYNTHETIC_KS}
    same_sets_accuracy = {str(k): accuracy_measure(k)(first) for k in SYNTHETIC_KS}
    del first
    say("A. paired block comparisons")
    comparisons = synthetic_comparisons(directories, args.runs, truth)
    return {"studies": studies, "comparisons": comparisons, "runs": args.runs, "ensemble_sets": args.ensemble_sets,
            "bootstraps": args.bootstraps, "svm_rfe_on_ensemble_sets": {"kuncheva": same_sets,
                                                                        "accuracy": same_sets_accuracy},
            "wall": time.perf_counter() - started}


# Part B: microarray sets -------------------------------------------------------------------------


def lfs_scores(X, y, weights=None):
    """LFS theta (eq. 19 of Cheng et al.) from (instance-weighted) class moments.

    Weighted: class sums ``sum_{u in c} w_u x_u``, class weights ``sum_{u in c} w_u`` and sums of
    squares ``sum_u w_u x_u^2``, as ``markov_coefficients`` documents (and the selector's
    ``weightCol`` computes); theta does not change when all weights are multiplied by a constant.
    """
    w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=float)
    members = one_hot(y, int(y.max()) + 1) * w[:, None]
    return markov_coefficients(members.T @ X, members.sum(axis=0), (w[:, None] * X ** 2).sum(axis=0), LFS_GAMMA)


def relieff_scores(X, y, weights=None):
    """Mean ReliefF margin (k = 10 hits and misses per class, Euclidean), every training row a query.

    With instance weights: sparkfs's weighted ReliefF (note 8 of ``sparkfs/core/relief.py``, what
    ``ReliefSelector(weightCol=...)`` computes): weighted priors, each class's neighbours averaged by
    weight, the queries' margins averaged by weight.
    """
    ids = np.arange(X.shape[0])
    classes = int(y.max()) + 1
    table = nb.local_neighbour_table(X, ids, X, ids, y, num_classes=classes, k=RELIEFF_K)
    if weights is None:
        return rl.relieff(X, ids, table, y, rl.class_priors(np.bincount(y, minlength=classes))).mean(axis=0)
    weights = np.asarray(weights, dtype=float)
    found = table.neighbour_ids >= 0
    neighbour_weights = np.where(found, weights[np.where(found, table.neighbour_ids, 0)], 0.0)
    pairs = rl.weighted_relieff_pairs(table, y, rl.class_priors(np.bincount(y, weights=weights, minlength=classes)),
                                      weights, neighbour_weights)
    _, margins = rl.margin_sums(X, X, pairs.query_positions, pairs.neighbour_ids, pairs.weights,
                                per_query=True, num_queries=X.shape[0])
    return margins.sum(axis=0) / weights.sum()


def microarray_fit(method, X, y, bootstraps):
    def fit_run(index, rows):
        held_out = np.setdiff1d(np.arange(X.shape[0]), rows)
        train, test = range_scaled(X[rows], X[rows]), range_scaled(X[held_out], X[rows])
        y_train, y_test = y[rows], y[held_out]
        path = remaining = None
        if method in RFE_METHODS:
            result, info = rfe_run(method, train, y_train)
            keep = (result.n_remaining <= PATH_MAX_REMAINING) & (result.n_remaining >= PATH_MIN_REMAINING)
            scores, path, remaining = rfe_subset_scores(result), result.weight_path[keep], result.n_remaining[keep]
        elif method == "en-svm-rfe":
            result, info = ensemble_run(train, y_train, bootstraps, [ENSEMBLE_SEED, index])
            scores = rank_sum_scores(result, [ENSEMBLE_SEED, index, 1])
        elif method == "relieff":
            scores, info = relieff_scores(train, y_train), {}
        elif method == "iw-relieff":
            weights, info = instance_weights(train, y_train, "n")
            scores = relieff_scores(train, y_train, weights)
        else:
            weights, info = instance_weights(train, y_train, "n" if method == "iw-lfs" else None)
            scores = lfs_scores(train, y_train, weights)
        info["accuracy"] = subset_accuracies(scores[None], train, y_train, test, y_test, MICROARRAY_KS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            info["accuracy_all_features"] = float(np.mean(sr.linear_svm().fit(train, y_train).predict(test) == y_test))
        info["held_out"] = int(held_out.size)
        return RunResult(scores, weight_path=path, remaining=remaining, info=info)
    return fit_run


def jackknife(statistic, runs: int) -> float:
    """Leave-one-run-out jackknife standard error of ``statistic(list of run indices)``."""
    values = np.array([statistic([j for j in range(runs) if j != i]) for i in range(runs)])
    return float(np.sqrt((runs - 1) / runs * np.sum((values - values.mean()) ** 2)))


def microarray_set(name, args, output: Path) -> dict:
    started = time.perf_counter()
    X, y = load_npz(name)
    plan = subsample_plan(y, MICROARRAY_RUNS, sample_fraction=SAMPLE_FRACTION, seed=MICROARRAY_SEED)
    studies, directories = {}, {}
    for method in MICROARRAY_METHODS:
        directory = output / "microarray" / name / slug(method)
        description = {"part": "microarray", "data": name, "method": method, "scaling": "range, training rows",
                       "sample_fraction": SAMPLE_FRACTION, "plan_seed": MICROARRAY_SEED, "ks": MICROARRAY_KS}
        if method in RFE_METHODS:
            description |= RFE_METHODS[method] | {"step": STEP, "C": 1.0, "path_remaining": [PATH_MIN_REMAINING,
                                                                                           PATH_MAX_REMAINING]}
        elif method == "en-svm-rfe":
            description |= {"bootstraps": args.bootstraps, "step": STEP, "ensemble_seed": f"[{ENSEMBLE_SEED}, i]"}
        elif method in ("relieff", "iw-relieff"):
            description |= {"k": RELIEFF_K, "metric": "euclidean"}
            if method == "iw-relieff":
                description["instance_weights"] = True
        else:
            description |= {"gamma": LFS_GAMMA, "instance_weights": method == "iw-lfs"}
        say(f"B. {name} ({X.shape[0]} x {X.shape[1]}), {method}")
        directories[method] = directory
        studies[method] = run_study(directory, plan, MICROARRAY_KS, X.shape[1], description,
                                    microarray_fit(method, X, y, args.bootstraps), f"{name}/{method}")
    scores = {method: np.stack([run["scores"] for run in load_runs(directories[method], MICROARRAY_RUNS)])
              for method in MICROARRAY_METHODS}

    def kuncheva(method, k):
        return lambda keep: st.kuncheva_stability(st.top_k_subsets(scores[method][keep], k), X.shape[1])
    for method in MICROARRAY_METHODS:
        studies[method]["kuncheva_se"] = {str(k): jackknife(kuncheva(method, k), MICROARRAY_RUNS)
                                          for k in MICROARRAY_KS}
    differences = {}
    for a, b in (("iw-svm-rfe", "svm-rfe"), ("en-svm-rfe", "svm-rfe"), ("iw-svm-rfe", "en-svm-rfe"),
                 ("iw-lfs", "lfs"), ("iw-relieff", "relieff"), ("iw-svm-rfe (sum 1)", "svm-rfe"),
                 ("svm-rfe (C = 1/n)", "svm-rfe")):
        rows = {}
        for k in MICROARRAY_KS:
            full = kuncheva(a, k)(list(range(MICROARRAY_RUNS))) - kuncheva(b, k)(list(range(MICROARRAY_RUNS)))
            se = jackknife(lambda keep, a=a, b=b, k=k: kuncheva(a, k)(keep) - kuncheva(b, k)(keep), MICROARRAY_RUNS)
            rows[str(k)] = {"mean": full, "se": se}
        differences[f"{a} - {b}"] = rows
    return {"shape": list(X.shape), "class_counts": np.bincount(y).tolist(), "studies": studies,
            "kuncheva_differences": differences, "wall": time.perf_counter() - started}


def run_microarray(args, output: Path) -> dict:
    started = time.perf_counter()
    sets = {name: microarray_set(name, args, output) for name in args.sets}
    return {"sets": sets, "runs": MICROARRAY_RUNS, "bootstraps": args.bootstraps, "wall": time.perf_counter() - started}


# Plots -------------------------------------------------------------------------------------------


def save(figure, path: Path) -> Path:
    figure.tight_layout()
    FigureCanvasAgg(figure).print_png(str(path))
    return path


STYLE = {"svm-rfe": ("C0", "-"), "iw-svm-rfe": ("C1", "--"), "iw-svm-rfe (sum 1)": ("C2", "-"),
         "svm-rfe (C = 1/n)": ("C3", ":"), "en-svm-rfe": ("C4", "-"), "relieff": ("C5", "-"),
         "iw-relieff": ("C5", "--"), "lfs": ("C6", "-"),
         "iw-lfs": ("C7", "--")}


def plot_synthetic(results, suffix) -> list:
    studies = results["studies"]
    figure = Figure(figsize=(13, 7.5), dpi=100)
    for row, input_name in enumerate(INPUTS):
        for column, name in enumerate(("variance", "bias", "error")):
            axes = figure.add_subplot(2, 3, 3 * row + column + 1)
            for method in RFE_METHODS:
                path = studies[f"{input_name}/{method}"]["summary"]["rfe_path"]
                colour, line = STYLE[method]
                axes.plot([p["remaining"] for p in path], [1e5 * p[name] for p in path], color=colour, linestyle=line,
                          marker="o", markersize=2, label=method)
            axes.set_xscale("log")
            axes.invert_xaxis()
            axes.axvline(50, color="grey", linewidth=0.6)
            axes.set_xlabel("remaining features")
            axes.set_ylabel(f"{name} (1e-5)")
            axes.set_title(f"{name}, {input_name} input ({results['runs']} sets)", fontsize=10)
            axes.grid(True, alpha=0.3)
            if row == 0 and column == 0:
                axes.legend(fontsize=8)
    paths = [save(figure, RESULTS / f"stability_synthetic_path{suffix}.png")]
    figure = Figure(figsize=(13, 7.5), dpi=100)
    for row, input_name in enumerate(INPUTS):
        for column, (name, label) in enumerate((("kuncheva", "Kuncheva stability"), ("accuracy", "test accuracy"))):
            axes = figure.add_subplot(2, 2, 2 * row + column + 1)
            methods = list(RFE_METHODS) + (["en-svm-rfe"] if input_name == "scaled" else [])
            for method in methods:
                study = studies[f"{input_name}/{method}"]
                if name == "kuncheva":
                    values = [s["kuncheva"] for s in study["summary"]["subsets"]]
                else:
                    values = [study["accuracy"][str(k)]["mean"] for k in SYNTHETIC_KS]
                colour, line = STYLE[method]
                runs = study["summary"]["runs"]
                axes.plot(SYNTHETIC_KS, values, color=colour, linestyle=line, marker="o", markersize=3,
                          label=f"{method} ({runs} sets)")
            axes.set_xlabel("k (top-k subset)")
            axes.set_ylabel(label)
            axes.set_title(f"{label}, {input_name} input", fontsize=10)
            axes.grid(True, alpha=0.3)
            axes.legend(fontsize=7)
    paths.append(save(figure, RESULTS / f"stability_synthetic_subsets{suffix}.png"))
    return paths


def plot_microarray(results, suffix) -> list:
    sets = results["sets"]
    figure = Figure(figsize=(5 * len(sets), 8), dpi=100)
    for column, (name, result) in enumerate(sets.items()):
        for row, (field, label) in enumerate((("kuncheva", "Kuncheva stability"), ("accuracy", "held-out accuracy"))):
            axes = figure.add_subplot(2, len(sets), row * len(sets) + column + 1)
            for method in MICROARRAY_METHODS:
                study = result["studies"][method]
                if field == "kuncheva":
                    values = [s["kuncheva"] for s in study["summary"]["subsets"]]
                else:
                    values = [study["accuracy"][str(k)]["mean"] for k in MICROARRAY_KS]
                colour, line = STYLE[method]
                axes.plot(MICROARRAY_KS, values, color=colour, linestyle=line, marker="o", markersize=3, label=method)
            axes.set_xlabel("k")
            axes.set_ylabel(label)
            axes.set_title(f"{name}: {label}", fontsize=10)
            axes.grid(True, alpha=0.3)
            if row == 0 and column == 0:
                axes.legend(fontsize=7)
    paths = [save(figure, RESULTS / f"stability_microarray_subsets{suffix}.png")]
    figure = Figure(figsize=(5 * len(sets), 3.8), dpi=100)
    for column, (name, result) in enumerate(sets.items()):
        axes = figure.add_subplot(1, len(sets), column + 1)
        for method in RFE_METHODS:
            path = result["studies"][method]["summary"]["rfe_path"]
            colour, line = STYLE[method]
            axes.plot([p["remaining"] for p in path], [1e5 * p["variance"] for p in path], color=colour,
                      linestyle=line, marker="o", markersize=2, label=method)
        axes.set_xscale("log")
        axes.invert_xaxis()
        axes.set_xlabel("remaining features")
        axes.set_ylabel("average variance (1e-5)")
        axes.set_title(f"{name}: RFE weight variance ({results['runs']} runs)", fontsize=10)
        axes.grid(True, alpha=0.3)
        if column == 0:
            axes.legend(fontsize=7)
    paths.append(save(figure, RESULTS / f"stability_microarray_variance{suffix}.png"))
    return paths


# The report --------------------------------------------------------------------------------------


def pm(value) -> str:
    return f"{value['mean']:+.3f} ± {value['se']:.3f}"


def verdict(value) -> str:
    """'lower' / 'higher' when the difference exceeds two standard errors, else 'no clear difference'."""
    if abs(value["mean"]) <= 2 * value["se"]:
        return "no clear difference"
    return "lower" if value["mean"] < 0 else "higher"


def render(results, command, started_at) -> str:
    lines = []
    add = lines.append
    synthetic, microarray = results.get("synthetic"), results.get("microarray")
    add(f"# Stability of SVM-RFE with instance weighting (Han & Yu 2010){' -- quick run' if results['quick'] else ''}")
    add("")
    add(f"Generated by `{command}` on {started_at:%Y-%m-%d %H:%M} ({platform.machine()}, {os.cpu_count()} cores, "
        f"one process, one BLAS thread; Python {platform.python_version()}, NumPy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}). Wall time of this invocation: {results['wall'] / 60:.1f} min"
        + (f" (part A {synthetic['wall'] / 60:.1f} min" if synthetic else " (")
        + (f", part B {microarray['wall'] / 60:.1f} min)." if microarray else ").")
        + " Runs found on disk are not refitted: the *fit s* columns (mean seconds per run, as saved with each run) "
        "are the cost; the wall times only count what this invocation fitted. The other core ran Spark jobs of "
        "another process at the time, so the seconds are indicative. docs/stability.md explains the set-up.")
    add("")
    if synthetic:
        studies = synthetic["studies"]
        add(f"## A. Synthetic data (Section V-B): {synthetic['runs']} training sets")
        add("")
        add(f"Each set: {TRAIN_ROWS} rows of `correlated_groups_data` (50 per class), set i from "
            f"`default_rng([{SYNTHETIC_SEED}, i])`; test set {TEST_ROWS} rows from `default_rng([{TEST_SEED}])`. "
            "SVM-RFE: `svm_rfe(step=0.1)` (LinearSVC, hinge loss, C = 1). *scaled*: each training set scaled to "
            "[0, 1] by its own minimum and range (the test set by the same); *raw*: the generated values. "
            f"en-svm-rfe: {synthetic['bootstraps']} stratified bootstraps, rank sum, on the first "
            f"{synthetic['ensemble_sets']} scaled sets only. Variance, bias and error are eq. (4)'s averages over the "
            "1,000 features of the normalised weights (x 1e-5, the unit of the paper's Figure 2), at the fit with "
            "the given number of remaining features (iteration t: 1,000 x 0.9^t rounded up, 48 at t = 28, 10 at "
            "t = 40).")
        add("")
        path_rows = (0, 5, 10, 15, 20, 25, 27, 28, 30, 35, 38, 40)
        for input_name in INPUTS:
            add(f"### Variance / bias / error along RFE, {input_name} input (x 1e-5)")
            add("")
            add("| iteration | remaining | " + " | ".join(RFE_METHODS) + " |")
            add("|---:|---:|" + "---|" * len(RFE_METHODS))
            paths = {m: studies[f"{input_name}/{m}"]["summary"]["rfe_path"] for m in RFE_METHODS}
            for t in path_rows:
                if t >= len(paths["svm-rfe"]):
                    continue
                cells = [f"{1e5 * p[t]['variance']:.3f} / {1e5 * p[t]['bias']:.3f} / {1e5 * p[t]['error']:.3f}"
                         for p in paths.values()]
                add(f"| {t} | {paths['svm-rfe'][t]['remaining']} | " + " | ".join(cells) + " |")
            add("")
        add("### Subset stability (Kuncheva) and test accuracy of the top k")
        add("")
        add("Kuncheva: eq. (8) over all pairs of sets. Accuracy: mean over the sets of the linear SVM (hinge, C = 1) "
            "trained on the set's top k and tested on the 5,000 test rows.")
        add("")
        add("| input | method | sets | " + " | ".join(f"k={k}" for k in SYNTHETIC_KS) + " | fit s | conv. warnings |")
        add("|---|---|---:|" + "---:|" * len(SYNTHETIC_KS) + "---:|---:|")
        for key, study in studies.items():
            input_name, method = key.split("/", 1)
            cells = [f"{s['kuncheva']:.3f} ({study['accuracy'][str(s['k'])]['mean']:.3f})"
                     for s in study["summary"]["subsets"]]
            add(f"| {input_name} | {method} | {study['summary']['runs']} | " + " | ".join(cells)
                + f" | {study['seconds_per_run']:.2f} | {study['convergence_warnings']} |")
        same = synthetic["svm_rfe_on_ensemble_sets"]
        add(f"| scaled | svm-rfe, the ensemble's {synthetic['ensemble_sets']} sets | {synthetic['ensemble_sets']} | "
            + " | ".join(f"{same['kuncheva'][str(k)]:.3f} ({same['accuracy'][str(k)]:.3f})" for k in SYNTHETIC_KS)
            + " | | |")
        add("")
        add("Cells: Kuncheva (accuracy). *conv. warnings*: liblinear ConvergenceWarnings over all fits of all sets "
            "(max_iter 10,000).")
        add("")
        add("### Paired comparisons (the same training sets)")
        add("")
        blocks = synthetic["comparisons"][0]["variance@48"]
        add(f"a - b, mean over {blocks['blocks']} blocks of {blocks['runs_per_block']} consecutive sets of the "
            "measure computed on each block, ± its standard error over the blocks. Variance and error x 1e-5. "
            "A difference beyond two standard errors is called lower / higher below.")
        add("")
        add("| input | a | b | variance @54 | variance @48 | error @48 | variance @10 | Kuncheva k=20 | Kuncheva k=50 "
            "| accuracy k=20 | accuracy k=50 |")
        add("|---|---|---|---|---|---|---|---|---|---|---|")
        for row in synthetic["comparisons"]:
            def scaled(value):
                return {"mean": 1e5 * value["mean"], "se": 1e5 * value["se"]}
            add(f"| {row['input']} | {row['a']} | {row['b']} | {pm(scaled(row['variance@54']))} | "
                f"{pm(scaled(row['variance@48']))} | {pm(scaled(row['error@48']))} | "
                f"{pm(scaled(row['variance@10']))} | "
                f"{pm(row['kuncheva@20'])} | {pm(row['kuncheva@50'])} | {pm(row['accuracy@20'])} | "
                f"{pm(row['accuracy@50'])} |")
        add("")
        add(f"![variance, bias, error along RFE](stability_synthetic_path{results['suffix']}.png)")
        add("")
        add(f"![Kuncheva and accuracy vs k](stability_synthetic_subsets{results['suffix']}.png)")
        add("")
    if microarray:
        add(f"## B. Microarray data: {microarray['runs']} stratified subsamples of 90 %")
        add("")
        add(f"`subsample_plan(y, {MICROARRAY_RUNS}, sample_fraction={SAMPLE_FRACTION}, seed={MICROARRAY_SEED})`; each "
            "run's training rows scaled to [0, 1] (held-out rows by the same minimum and range). en-svm-rfe: "
            f"{microarray['bootstraps']} bootstraps. relieff: k = {RELIEFF_K}, Euclidean (mean margin); iw-relieff: "
            "the same, instance-weighted (note 8 of core/relief.py). "
            f"lfs: gamma = {LFS_GAMMA}; iw-lfs: the same with instance-weighted class moments. Cells: Kuncheva ± "
            "jackknife SE / Jaccard / held-out accuracy mean (std over the runs) of the linear SVM (hinge, C = 1) on "
            "the top k.")
        add("")
        for name, result in microarray["sets"].items():
            n, d = result["shape"]
            any_study = next(iter(result["studies"].values()))
            add(f"### {name} ({n} x {d}, classes {result['class_counts']})")
            add("")
            add("| method | " + " | ".join(f"k={k}" for k in MICROARRAY_KS) + " | fit s | conv. warnings |")
            add("|---|" + "---|" * len(MICROARRAY_KS) + "---:|---:|")
            for method, study in result["studies"].items():
                cells = []
                for s in study["summary"]["subsets"]:
                    k = str(s["k"])
                    acc = study["accuracy"][k]
                    cells.append(f"{s['kuncheva']:.3f} ± {study['kuncheva_se'][k]:.3f} / {s['jaccard']:.3f} / "
                                 f"{acc['mean']:.3f} ({acc['std']:.3f})")
                add(f"| {method} | " + " | ".join(cells) + f" | {study['seconds_per_run']:.2f} | "
                    f"{study['convergence_warnings']} |")
            add("")
            add(f"All features: held-out accuracy {result['all_features_accuracy']['mean']:.3f} "
                f"({result['all_features_accuracy']['std']:.3f}). Runs per study: {any_study['summary']['runs']}.")
            add("")
            add("Kuncheva differences a - b (jackknife SE over the runs):")
            add("")
            add("| a - b | " + " | ".join(f"k={k}" for k in MICROARRAY_KS) + " |")
            add("|---|" + "---|" * len(MICROARRAY_KS))
            for pair, rows in result["kuncheva_differences"].items():
                add(f"| {pair} | " + " | ".join(f"{pm(rows[str(k)])} ({verdict(rows[str(k)])})"
                                                 for k in MICROARRAY_KS) + " |")
            add("")
            add("Average variance of the normalised RFE weights (x 1e-5) at some remaining counts:")
            add("")
            paths = {m: result["studies"][m]["summary"]["rfe_path"] for m in RFE_METHODS}
            remaining = [p["remaining"] for p in paths["svm-rfe"]]
            picks = sorted({min(remaining, key=lambda r: abs(r - target))
                            for target in (1000, 300, 100, 50, 30, 20, 10)},
                           reverse=True)
            add("| method | " + " | ".join(str(r) for r in picks) + " |")
            add("|---|" + "---:|" * len(picks))
            for method, path in paths.items():
                lookup = {p["remaining"]: p["variance"] for p in path}
                add(f"| {method} | " + " | ".join(f"{1e5 * lookup[r]:.3f}" for r in picks) + " |")
            add("")
        add(f"![Kuncheva and accuracy vs k](stability_microarray_subsets{results['suffix']}.png)")
        add("")
        add(f"![variance along RFE](stability_microarray_variance{results['suffix']}.png)")
        add("")
    add("Every number is also in the JSON next to this file; each study's directory under the output directory "
        "holds its runs (`runs/run-*.npz`), `stability.json`, `runs.parquet` and plots.")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small run of a few minutes")
    parser.add_argument("--output", type=Path, default=None,
                        help="directory of the per-study runs (default benchmarks/results/stability/, "
                             "its quick/ subdirectory with --quick)")
    parser.add_argument("--runs", type=int, default=None, help="synthetic training sets (default 500; quick 50)")
    parser.add_argument("--ensemble-sets", type=int, default=None, help="synthetic sets for en-svm-rfe "
                                                                        "(default 50; quick 10)")
    parser.add_argument("--bootstraps", type=int, default=None, help="en-svm-rfe bootstraps (default 20; quick 5)")
    parser.add_argument("--sets", nargs="+", default=None,
                        help="microarray sets (default colon ALLAML Prostate_GE; quick colon ALLAML)")
    parser.add_argument("--parts", default="AB", help="A (synthetic), B (microarray) or AB")
    args = parser.parse_args(argv)
    quick = args.quick
    args.runs = args.runs or (50 if quick else 500)
    args.ensemble_sets = min(args.ensemble_sets or (10 if quick else 50), args.runs)
    args.bootstraps = args.bootstraps or (5 if quick else 20)
    args.sets = args.sets or (["colon", "ALLAML"] if quick else ["colon", "ALLAML", "Prostate_GE"])
    if args.runs < 2 * BLOCKS or args.runs % BLOCKS:
        parser.error(f"--runs must be a multiple of {BLOCKS} and at least {2 * BLOCKS}")
    output = (args.output or (RESULTS / "stability" / ("quick" if quick else ""))).resolve()
    suffix = "_quick" if quick else ""
    command = " ".join([".venv/bin/python", "-m",
                        "studies.stability_study"] + (argv if argv is not None else sys.argv[1:]))
    started_at, started = datetime.datetime.now(), time.perf_counter()
    say(f"{command}: output {output}")
    results = {"quick": quick, "suffix": suffix, "command": command,
               "started": started_at.isoformat(timespec="seconds"),
               "machine": {"platform": platform.platform(), "cores": os.cpu_count(),
                           "python": platform.python_version(),
                           "numpy": np.__version__, "sklearn": sklearn.__version__}}
    if "A" in args.parts:
        results["synthetic"] = run_synthetic(args, output)
    if "B" in args.parts:
        results["microarray"] = run_microarray(args, output)
        for result in results["microarray"]["sets"].values():
            values = []
            for run in load_runs(ROOT / result["studies"]["svm-rfe"]["directory"], MICROARRAY_RUNS):
                values.append(run["info"]["accuracy_all_features"])
            result["all_features_accuracy"] = {"mean": float(np.mean(values)), "std": float(np.std(values, ddof=1))}
    results["wall"] = time.perf_counter() - started
    RESULTS.mkdir(exist_ok=True)
    images = []
    if "synthetic" in results:
        images += plot_synthetic(results["synthetic"], suffix)
    if "microarray" in results:
        images += plot_microarray(results["microarray"], suffix)
    name = "stability_quick" if quick else "stability"
    (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=1, default=float))
    text = render(results, command, started_at)
    (RESULTS / f"{name}.md").write_text(text)
    say(text)
    say(f"wrote {RESULTS / (name + '.md')}, {RESULTS / (name + '.json')} and {', '.join(p.name for p in images)}")


if __name__ == "__main__":
    main()
