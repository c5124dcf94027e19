"""The probe study of Yang & Hu (2012), Section 5.1, with sparkfs's Relief family on Spark.

For each UCI set of the paper's Table 1 found in ../shared/data (Ecoli is not there), and each of
``--runs`` random runs r = 0, 1, ... (default 5: 11-15 minutes on 2 shared cores):

1. (imbalanced experiment only) hide 80% of the minority class, drawn at random
   (:func:`sparkfs.evaluation.imbalance`);
2. append 50 probe features drawn i.i.d. from N(0, 20) (variance 20) to every row
   (:func:`sparkfs.evaluation.add_probes`);
3. draw a stratified random train/test split of the Table 1 sizes;
4. fit :class:`sparkfs.ReliefSelector` on the training split (Spark, local[2]) for each variant,
   with k = 1 (the paper's Relief / M-Relief use one nearest hit and miss, its ReliefF one hit and
   one miss per other class), ``scaling="range"``, Euclidean distance, every row a query,
   ``sigma`` unset (prelief: 0.01 x the range of each range-scaled feature = 0.01);
5. score the ranking: area under the feature-selection ROC (real features vs probes,
   :func:`sparkfs.evaluation.selection_roc`) and the test accuracy of a kNN classifier on the
   top-m features for a grid of m (:func:`sparkfs.evaluation.accuracy_curve`: min-max scaling
   fitted on the training split, kNN size tuned by 5-fold CV on the training split among
   1, 3, 5, 7, 9, 11, 15, 21, as in the paper).

Experiments: (A) the eight binary sets, all four variants (the paper compares Relief and
P-Relief there), with (A2) prelief at sigma 0.05 and 0.1 (ROC only) and (A3) the same probes left
unscaled next to [0, 1] real features, relief and prelief, ``scaling="none"``; (B) the
multi-class sets, all four variants (the paper: Relief, ReliefF and M-Relief); (C) four binary
sets made more imbalanced, Relief, ReliefF and M-Relief. Section D of the doc splits M-Relief's
scores into half of Relief's plus a class-blind term (exact with k = 1).

Writes docs/relief_probes.md (``--json`` also keeps every per-run number; ``--from-json``
re-renders the doc from such a file without Spark).

    .venv/bin/python -m studies.relief_probe_study [--runs 5] [--sets Breast,Glass] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
from scipy.stats import ttest_rel

from benchmarks.common import ROOT, load_npz
from sparkfs.evaluation.probes import (
    DEFAULT_KNN_CANDIDATES,
    PAPER_PROBE_VARIANCE,
    accuracy_curve,
    add_probes,
    imbalance,
    selection_roc,
    stratified_split,
)

DOC = ROOT / "docs" / "relief_probes.md"

VARIANTS = ("relief", "relieff", "mrelief", "prelief")
IMBALANCE_VARIANTS = ("relief", "relieff", "mrelief")
N_PROBES = 50
K = 1
SCALING = "range"
HIDE_FRACTION = 0.8
#: LRS classes with fewer rows than this are dropped (k = 1 needs >= 2 training rows per class).
MIN_CLASS_ROWS = 3
TABLE_COUNTS = (5, 10, 20)
#: Extra prelief bandwidths (range-scaled units) tried on the binary sets, ROC AUC only.
SIGMA_STUDY = (0.05, 0.1)
RUNS = 5


@dataclass(frozen=True)
class Spec:
    """One data set of the paper's Table 1 and how the shared file is made to match it."""

    name: str           # the paper's name
    file: str           # ../shared/data/<file>.npz
    train: int          # Table 1 train size
    test: int           # Table 1 test size
    kind: str           # "binary" or "multi"
    note: str = ""
    relabel: Optional[Callable[[np.ndarray], np.ndarray]] = None
    drop_small_classes: bool = False


BINARY = [
    Spec("Breast", "breast_w", 400, 283, "binary"),
    Spec("German", "german_credit", 700, 300, "binary",
         "20-attribute version (german_numeric is the 24-column coding)"),
    Spec("Ionosphere", "ionosphere", 235, 116, "binary"),
    Spec("Waveform", "waveform21", 400, 4600, "binary",
         "3-class generator data; made binary as class 0 vs classes 1+2 (the paper does not say which 2-class version)",
         relabel=lambda y: (y != 0).astype(np.int64)),
    Spec("Pima", "pima_diabetes", 400, 368, "binary"),
    Spec("Heart", "heart_statlog", 170, 100, "binary"),
    Spec("Sonar", "sonar", 165, 43, "binary"),
    Spec("Splice", "splice", 1000, 2175, "binary",
         "UCI 3-class version, 240 one-hot columns (the paper: DELVE 2-class, 60 features); made binary as "
         "boundary (EI + IE) vs neither (N)",
         relabel=lambda y: (y == 2).astype(np.int64)),
]
MULTI = [
    Spec("LRS", "lrs_spectrometer", 380, 151, "multi",
         f"classes with fewer than {MIN_CLASS_ROWS} rows dropped (k = 1 needs two training rows per class); sizes "
         "scaled to the rows left", drop_small_classes=True),
    Spec("Glass", "glass", 120, 94, "multi"),
    Spec("Segment", "segment", 210, 2100, "multi"),
    Spec("Waveform-3", "waveform21", 400, 4600, "multi",
         "extra (not in the paper): the 3-class data, Waveform's sizes"),
    Spec("Splice-3", "splice", 1000, 2175, "multi", "extra (not in the paper): the UCI 3-class data, Splice's sizes"),
]
#: Section 5.1: "four binary data sets, which are relatively more imbalanced" (not named): the
#: four binary sets here with the largest majority share (German 0.70, Waveform 0.67, Pima 0.651,
#: Breast 0.650; Ionosphere 0.641 is next).
IMBALANCED = ["German", "Waveform", "Pima", "Breast"]


def load(spec: Spec) -> Tuple[np.ndarray, np.ndarray, List[str]]:
    """X, y of the set as used here, and what was changed."""
    X, y = load_npz(spec.file)
    changes = []
    if spec.relabel is not None:
        y = spec.relabel(y)
    if spec.drop_small_classes:
        counts = np.bincount(y)
        keep = counts[y] >= MIN_CLASS_ROWS
        changes.append(f"{int(np.sum(counts[counts > 0] < MIN_CLASS_ROWS))} classes / "
                       f"{int((~keep).sum())} rows dropped")
        X, y = X[keep], np.unique(y[keep], return_inverse=True)[1]
    constant = np.flatnonzero(X.max(axis=0) == X.min(axis=0))
    if constant.size:
        changes.append(f"constant column(s) {constant.tolist()} dropped")
        X = np.delete(X, constant, axis=1)
    return X, y, changes


def split_sizes(spec: Spec, n_rows: int, whole: bool) -> Tuple[int, Optional[int]]:
    """Table 1 sizes when the set is used whole, else the Table 1 training share of the rows left."""
    if whole and spec.train + spec.test <= n_rows:
        return spec.train, spec.test
    return int(round(n_rows * spec.train / (spec.train + spec.test))), None


def feature_grid(n_real: int, n_total: int) -> List[int]:
    steps = [1, 2, 3, 5, 8, 10, 15, 20, 30, 40, 50, 60, 80, 100, 150, 200, 290]
    return sorted({m for m in steps if m <= n_total} | {n_real, n_total})


def frame(spark, X, y):
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.dense(row), float(label)) for row, label in zip(X.tolist(), y.tolist())]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), ["features", "label"]).cache()


@dataclass(frozen=True)
class Step:
    """One experiment on one set: which variants, on which version of the data."""

    experiment: str                 # "binary", "unscaled", "multi" or "imbalanced"
    spec: Spec
    variants: Tuple[str, ...]
    seed_index: int                 # runs of steps with the same seed_index share probes and split
    imbalanced: bool = False
    raw_probes: bool = False        # real features on [0, 1], probes N(0, 20) as drawn, scaling="none"
    sigmas: Tuple[float, ...] = ()  # extra prelief bandwidths (ROC AUC only)


def prepare(step: Step, X, y, run: int):
    """The data of one run: (imbalanced), probes, split. Deterministic in (run, seed_index)."""
    seed = 1000 * run + step.seed_index
    if step.imbalanced:
        X, y = imbalance(X, y, hide_fraction=HIDE_FRACTION, seed=seed)
    if step.raw_probes:
        X = (X - X.min(axis=0)) / np.ptp(X, axis=0)  # constant columns are already dropped
    n_real = X.shape[1]
    X = add_probes(X, n_probes=N_PROBES, variance=PAPER_PROBE_VARIANCE, seed=seed)
    whole = not step.imbalanced and not step.spec.drop_small_classes
    train_size, test_size = split_sizes(step.spec, X.shape[0], whole=whole)
    train, test = stratified_split(y, train_size, test_size, seed=seed)
    return seed, n_real, X, y, train, test


def dispersion(X) -> np.ndarray:
    """Per feature, the mean |x_i - x_j| over all pairs of rows after range scaling.

    For a feature unrelated to the class, this is what |x_n - H(x_n)| and |x_n - M(x_n)| are
    worth on average; sorted values give it in O(n log n): sum_{i<j} (v_j - v_i) = sum_k v_k (2k - n + 1).
    """
    n = X.shape[0]
    spread = np.ptp(X, axis=0)
    values = np.sort((X - X.min(axis=0)) / np.where(spread > 0, spread, 1.0), axis=0)
    weights = 2.0 * np.arange(n) - n + 1.0
    return 2.0 * (weights @ values) / (n * (n - 1))


def run_step(spark, step: Step, X, y, run: int) -> Dict:
    from sparkfs import ReliefSelector

    seed, n_real, X, y, train, test = prepare(step, X, y, run)
    is_relevant = np.arange(X.shape[1]) < n_real
    grid = feature_grid(n_real, X.shape[1])
    df = frame(spark, X[train], y[train])
    out = {"n_train": int(train.size), "n_test": int(test.size), "n_real": n_real, "grid": grid, "seed": seed,
           "class_counts_train": np.bincount(y[train]).tolist(), "dispersion": dispersion(X[train]).tolist(),
           "variants": {}, "sigma_study": {}}
    metrics = ("accuracy", "balanced_accuracy") if step.imbalanced else ("accuracy",)
    everything = np.arange(X.shape[1])
    out["all_features"] = {metric: float(accuracy_curve(X[train], y[train], X[test], y[test], everything,
                                                         [X.shape[1]], seed=seed, metric=metric)[0])
                           for metric in metrics}
    out["majority_class_accuracy"] = float(np.mean(y[test] == np.bincount(y[train]).argmax()))
    scaling = "none" if step.raw_probes else SCALING

    def fit(variant, **params):
        if step.raw_probes and variant == "prelief" and "sigma" not in params:
            params["sigma"] = 0.01  # the paper's bandwidth, on the [0, 1] real features and the raw probes
        started = time.perf_counter()
        model = ReliefSelector(variant=variant, k=K, scaling=scaling, metric="euclidean",
                               numFeatures=X.shape[1], **params).fit(df)
        return model, time.perf_counter() - started

    curves_by_ranking = {}  # the accuracy curves depend on the ranking only (relief = relieff on 2 classes)
    for variant in step.variants:
        model, fit_seconds = fit(variant)
        ranking = model.ranking
        key = ranking.tobytes()
        if key not in curves_by_ranking:
            curves_by_ranking[key] = {
                metric: accuracy_curve(X[train], y[train], X[test], y[test], ranking, grid, seed=seed,
                                       metric=metric).tolist() for metric in metrics}
        out["variants"][variant] = {
            "auc": selection_roc(model.scores, is_relevant)[2], "fit_seconds": fit_seconds,
            **curves_by_ranking[key],
            "real_in_top_d": int(np.sum(ranking[:n_real] < n_real)),
            "scores": model.scores.tolist(),
        }
    for sigma in step.sigmas:
        model, _ = fit("prelief", sigma=sigma)
        out["sigma_study"][str(sigma)] = selection_roc(model.scores, is_relevant)[2]
    df.unpersist()
    return out


# ----------------------------------------------------------------------------------------------
# Report
# ----------------------------------------------------------------------------------------------


def mean_std(values) -> str:
    values = np.asarray(values, dtype=float)
    return f"{values.mean():.3f} ({values.std(ddof=1) if values.size > 1 else 0.0:.3f})"


def at_count(result_runs, variant, m, metric="accuracy") -> np.ndarray:
    """``metric`` at the largest grid point <= m, per run."""
    grid = result_runs[0]["grid"]
    position = max(i for i, g in enumerate(grid) if g <= m)
    return np.array([r["variants"][variant][metric][position] for r in result_runs])


def best(result_runs, variant, metric="accuracy") -> Tuple[int, np.ndarray]:
    """Best mean ``metric`` over the grid: its m and the per-run values there."""
    curves = np.array([r["variants"][variant][metric] for r in result_runs])
    position = int(np.argmax(curves.mean(axis=0)))
    return result_runs[0]["grid"][position], curves[:, position]


def aucs(result_runs, variant) -> np.ndarray:
    return np.array([r["variants"][variant]["auc"] for r in result_runs])


def table(experiment: Dict[str, List[Dict]], variants) -> List[str]:
    """AUC and accuracy at fixed feature counts and at the best count."""
    lines = ["| set (train/test, real features) | variant | ROC AUC | acc@5 | acc@10 | acc@20 | acc@d | best acc (m) | "
             "real in top d |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, runs in experiment.items():
        first = runs[0]
        d = first["n_real"]
        label = f"{name} ({first['n_train']}/{first['n_test']}, d={d})"
        for i, variant in enumerate(variants):
            m, best_values = best(runs, variant)
            cells = [label if i == 0 else "", variant, mean_std(aucs(runs, variant))]
            cells += [mean_std(at_count(runs, variant, m_)) for m_ in TABLE_COUNTS]
            cells += [mean_std(at_count(runs, variant, d)), f"{mean_std(best_values)} ({m})"]
            cells.append(f"{np.mean([r['variants'][variant]['real_in_top_d'] for r in runs]):.1f} / {d}")
            lines.append("| " + " | ".join(cells) + " |")
        all_acc = [r["all_features"]["accuracy"] for r in runs]
        majority = [r["majority_class_accuracy"] for r in runs]
        lines.append(f"| | all {d + N_PROBES} features; majority class | | | | | | {mean_std(all_acc)}; "
                     f"{mean_std(majority)} | |")
    return lines


def imbalanced_table(experiment: Dict[str, List[Dict]], variants) -> List[str]:
    """AUC, accuracy and balanced accuracy (at d and at the best count)."""
    lines = ["| set (train/test, real features, minority rows in train) | variant | ROC AUC | acc@d | best acc (m) | "
             "bal. acc@d | best bal. acc (m) | real in top d |", "|---|---|---:|---:|---:|---:|---:|---:|"]
    for name, runs in experiment.items():
        first = runs[0]
        d = first["n_real"]
        label = f"{name} ({first['n_train']}/{first['n_test']}, d={d}, {min(first['class_counts_train'])})"
        for i, variant in enumerate(variants):
            cells = [label if i == 0 else "", variant, mean_std(aucs(runs, variant))]
            for metric in ("accuracy", "balanced_accuracy"):
                m, best_values = best(runs, variant, metric)
                cells += [mean_std(at_count(runs, variant, d, metric)), f"{mean_std(best_values)} ({m})"]
            cells.append(f"{np.mean([r['variants'][variant]['real_in_top_d'] for r in runs]):.1f} / {d}")
            lines.append("| " + " | ".join(cells) + " |")
        all_features = [mean_std([r["all_features"][metric] for r in runs])
                        for metric in ("accuracy", "balanced_accuracy")]
        majority = mean_std([r["majority_class_accuracy"] for r in runs])
        lines.append(f"| | all {d + N_PROBES} features | | | {all_features[0]} | | {all_features[1]} | |")
        lines.append(f"| | majority class | | | {majority} | | 0.500 | |")
    return lines


def paired(experiment, better: str, worse: str, metric: str) -> Dict[str, Dict]:
    """Per set: mean difference (better - worse), wins / runs, paired t-test p (two-sided).

    ``metric``: "auc", or an accuracy key compared at each variant's own best feature count.
    """
    out = {}
    for name, runs in experiment.items():
        if metric == "auc":
            a, b = aucs(runs, better), aucs(runs, worse)
        else:
            a, b = best(runs, better, metric)[1], best(runs, worse, metric)[1]
        diff = a - b
        p = float(ttest_rel(a, b).pvalue) if a.size > 1 and np.any(diff != diff[0]) else float("nan")
        out[name] = {"diff": float(diff.mean()), "wins": int(np.sum(diff > 0)), "ties": int(np.sum(diff == 0)),
                     "runs": int(diff.size), "p": p, "a": float(a.mean()), "b": float(b.mean())}
    return out


def paired_lines(result: Dict[str, Dict], better: str, worse: str, metric: str) -> List[str]:
    lines = [f"| set | {better} | {worse} | mean diff | {better} ahead (runs) | paired t p |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, r in result.items():
        tied = f" ({r['ties']} tied)" if r["ties"] else ""
        p_value = "n/a" if np.isnan(r["p"]) else f"{r['p']:.2g}"
        lines.append(f"| {name} | {r['a']:.3f} | {r['b']:.3f} | {r['diff']:+.3f} | {r['wins']}/{r['runs']}{tied} | "
                     f"{p_value} |")
    return lines


def best_variant_counts(experiment, variants, metric) -> Dict[str, int]:
    counts = {v: 0 for v in variants}
    for runs in experiment.values():
        values = {v: (aucs(runs, v).mean() if metric == "auc" else best(runs, v, metric)[1].mean()) for v in variants}
        top = max(values.values())
        for v in variants:
            counts[v] += int(np.isclose(values[v], top, rtol=0, atol=1e-12))
    return counts


def fmt_counts(counts: Dict[str, int]) -> str:
    return ", ".join(f"{variant} {count}" for variant, count in counts.items())


def spread_term_rows(experiment: Dict[str, List[Dict]]) -> List[Dict]:
    """Per set, means over runs of: f = 2 sum_c P_c^2 - 1, the spread term T of eq. (16) and what ranks by it.

    With k = 1 Relief and M-Relief use the same nearest hit and miss, so T = M-Relief - Relief / 2
    exactly, feature by feature (the identity of Section D of the doc).
    """
    rows = []
    for name, runs in experiment.items():
        values = {key: [] for key in ("f", "t_probe", "t_pred", "t_real", "half_relief_real", "auc_t", "auc_relief",
                                      "auc_mrelief")}
        for r in runs:
            priors = np.asarray(r["class_counts_train"], float) / sum(r["class_counts_train"])
            f = 2.0 * np.sum(priors ** 2) - 1.0
            n_real = r["n_real"]
            relief_scores = np.asarray(r["variants"]["relief"]["scores"])
            term = np.asarray(r["variants"]["mrelief"]["scores"]) - relief_scores / 2.0
            is_real = np.arange(term.size) < n_real
            values["f"].append(f)
            values["t_probe"].append(term[~is_real].mean())
            values["t_pred"].append(f * np.mean(r["dispersion"][n_real:]))
            values["t_real"].append(term[is_real].mean())
            values["half_relief_real"].append(relief_scores[is_real].mean() / 2.0)
            values["auc_t"].append(selection_roc(term, is_real)[2])
            values["auc_relief"].append(r["variants"]["relief"]["auc"])
            values["auc_mrelief"].append(r["variants"]["mrelief"]["auc"])
        rows.append({"set": name, **{key: float(np.mean(v)) for key, v in values.items()}})
    return rows


def spread_term_table(rows: List[Dict]) -> List[str]:
    lines = ["| set | f | T, probes (mean) | f x probe delta | T, real features (mean) | AUC of T alone | "
             "Relief AUC | M-Relief AUC |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['set']} | {row['f']:+.2f} | {row['t_probe']:+.4f} | {row['t_pred']:+.4f} | "
                     f"{row['t_real']:+.4f} | {row['auc_t']:.3f} | {row['auc_relief']:.3f} | "
                     f"{row['auc_mrelief']:.3f} |")
    return lines


def sigma_table(experiment: Dict[str, List[Dict]]) -> List[str]:
    sigmas = list(experiment[next(iter(experiment))][0]["sigma_study"])
    lines = ["| set | relief | prelief sigma 0.01 (default) | "
             + " | ".join(f"prelief sigma {s_}" for s_ in sigmas) + " |",
             "|---|---:|---:|" + "---:|" * len(sigmas)]
    for name, runs in experiment.items():
        cells = [name, mean_std(aucs(runs, "relief")), mean_std(aucs(runs, "prelief"))]
        cells += [mean_std([r["sigma_study"][s_] for r in runs]) for s_ in sigmas]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def claim_line(result: Dict[str, Dict], name_a: str, name_b: str) -> str:
    ahead = [k for k, r in result.items() if r["diff"] > 0]
    behind = [k for k, r in result.items() if r["diff"] < 0]
    significant_ahead = [k for k in ahead if result[k]["p"] < 0.01]
    significant_behind = [k for k in behind if result[k]["p"] < 0.01]
    return (f"{name_a} ahead of {name_b} on {len(ahead)}/{len(result)} sets "
            f"({', '.join(ahead) or 'none'}; significant at 0.01: {', '.join(significant_ahead) or 'none'}), "
            f"behind on {len(behind)} ({', '.join(behind) or 'none'}; significant: "
            f"{', '.join(significant_behind) or 'none'})")


def relief_relieff_gap(*experiments) -> float:
    """Largest relative difference between Relief's and ReliefF's scores over the binary runs."""
    gaps = [np.max(np.abs(np.subtract(r["variants"]["relief"]["scores"], r["variants"]["relieff"]["scores"])))
            / np.max(np.abs(r["variants"]["relief"]["scores"]))
            for experiment in experiments for runs in experiment.values() for r in runs]
    return float(max(gaps))


def splice_far_columns(runs: List[Dict]) -> Dict[str, float]:
    """Share of the one-hot columns 25-30 bases from the junction scored above every probe, per variant."""
    far = np.r_[0:24, 216:240]  # positions -30..-25 and +25..+30, 4 columns each
    shares = {}
    for variant in ("relief", "prelief"):
        values = []
        for r in runs:
            scores = np.asarray(r["variants"][variant]["scores"])
            values.append(np.mean(scores[far] > scores[r["n_real"]:].max()))
        shares[variant] = float(np.mean(values))
    return shares


def write_doc(results: Dict, settings: Dict, path: Path) -> str:
    binary, unscaled, multi, imbal = results["binary"], results["unscaled"], results["multi"], results["imbalanced"]
    runs = settings["runs"]
    lines = [
        "# Relief family on the probe protocol of Yang & Hu (2012), Section 5.1",
        "",
        f"Generated by `python -m studies.relief_probe_study --runs {runs}` on {settings['date']} "
        f"({platform.machine()}, "
        f"{os.cpu_count()} cores shared with other work, Spark local[2]); "
        f"wall time {settings['seconds'] / 60:.1f} min. "
        "Every number below comes from that run; rerun the script to regenerate this file "
        "(`--json` keeps every per-run number, `--from-json` re-renders).",
        "",
        "## Protocol and settings",
        "",
        f"* **Runs:** {runs} random runs per set (the paper: 20; {runs} keeps the script within about 20 minutes on 2 "
        "shared cores). Each run draws its own probes, split and (C) hidden minority rows; tables show mean (sample "
        "std) over runs; paired comparisons use a two-sided paired t-test over the runs.",
        f"* **Probes:** {N_PROBES} features i.i.d. N(0, 20), 20 = the variance (std sqrt(20)), appended to every row "
        "before the split. With range scaling (A, B, C) the probe variance has no effect on any score (each feature is "
        "rescaled), nor on the kNN accuracy (always min-max scaled). A3 keeps the probes unscaled.",
        f"* **Selector:** `ReliefSelector(variant=..., k={K}, scaling=\"{SCALING}\", metric=\"euclidean\")` on Spark "
        "local[2], 2 partitions, every training row a query. k = 1 follows the paper: Relief and M-Relief use one "
        "nearest hit and one nearest miss (multi-class Relief uses the I-Relief margin, the nearest miss of any other "
        "class) and ReliefF one hit and one miss per other class (C - 1 misses). `sigma` unset: prelief's bandwidth "
        "is 0.01 x the range of each range-scaled feature, i.e. 0.01 on [0, 1]-scaled data, the paper's default. "
        "Scores are the mean margins; the ranking is by score (ties by index). `scaling=\"range\"` for every "
        "variant: it is the classic Relief diff and the scale on which the paper's sigma = 0.01 is defined.",
        "* **Feature-selection ROC:** real features are the positives, probes the negatives; AUC = P(a real feature "
        "scores above a probe), ties 1/2. \"real in top d\" = how many of the d top-ranked features are real.",
        "* **Accuracy:** kNN (Euclidean, majority vote) on the top-m ranked features, features min-max scaled on the "
        "training split, kNN size chosen per m by 5-fold CV on the training split among "
        f"{list(DEFAULT_KNN_CANDIDATES)} "
        "(the paper tunes k by 5-fold CV). acc@m = test accuracy with the m top-ranked features (d = number of real "
        "features: a perfect ranking then uses exactly the real ones); \"best acc (m)\" = the grid point with the "
        "best mean accuracy, mean (std) there (the paper's Fig. 5 reports the best average error the same way). "
        "Grid: 1, 2, 3, 5, 8, 10, 15, 20, 30, 40, 50, 60, 80, 100, 150, 200, 290 (up to all features), plus d. "
        "Paired accuracy comparisons use each variant's own best m.",
        "* **Splits:** stratified random, Table 1 sizes (where rows were removed: the Table 1 training share of the "
        "rows left, the rest for testing).",
        "",
        "### Data sets (../shared/data) and deviations from Table 1",
        "",
        "| paper | file | used | changes |",
        "|---|---|---|---|",
    ]
    for spec in BINARY + MULTI:
        info = settings["datasets"][spec.name]
        lines.append(f"| {spec.name} | `{spec.file}` | {info['rows']} x {info['features']}, "
                     f"{info['classes']} classes | "
                     f"{'; '.join(filter(None, [spec.note] + info['changes'])) or '-'} |")
    lines += [
        "",
        "Ecoli (Table 1) is not in the shared data. Constant columns are dropped everywhere (Ionosphere's second "
        "attribute is all zeros; Segment's region-pixel-count is always 9, the paper lists 18 Segment features): a "
        "constant feature has a zero margin under every variant and says nothing about ranking real features above "
        "probes.",
        "",
        "## A. Binary sets, all four variants (the paper: P-Relief vs Relief)",
        "",
    ]
    lines += table(binary, VARIANTS)
    auc_pr = paired(binary, "prelief", "relief", "auc")
    acc_pr = paired(binary, "prelief", "relief", "accuracy")
    lines += (["", "P-Relief vs Relief, feature-selection ROC AUC:", ""]
              + paired_lines(auc_pr, "prelief", "relief", "auc"))
    lines += ["", "P-Relief vs Relief, best mean kNN accuracy:", ""]
    lines += paired_lines(acc_pr, "prelief", "relief", "accuracy")
    lines += ["", f"Relief and ReliefF scores agree on every binary run of A and C (largest relative difference "
              f"{relief_relieff_gap(binary, imbal):.1e}): with k = 1 the two margins coincide on two classes, as the "
              "paper notes."]
    if binary[next(iter(binary))][0].get("sigma_study"):
        lines += ["", "### A2. P-Relief's bandwidth (ROC AUC; same runs and training splits as A)", "",
                  "sigma in range-scaled units (0.01 = the paper's default, used everywhere else).", ""]
        lines += sigma_table(binary)
    auc_pr_raw = paired(unscaled, "prelief", "relief", "auc")
    acc_pr_raw = paired(unscaled, "prelief", "relief", "accuracy")
    lines += [
        "", "### A3. Unscaled probes (same probes and splits as A)", "",
        "Another reading of the paper's setup: the real features are min-max scaled to [0, 1] (where sigma = 0.01 "
        "is meant), the N(0, 20) probes are appended as drawn (std 4.5, so each spans about 30 units), and the "
        "selector does no further scaling (`scaling=\"none\"`, prelief `sigma=0.01`). Relief's nearest hit and miss "
        "are then found almost only by the probes; P-Relief's per-feature kernel does not search neighbours. "
        "The kNN accuracy is computed exactly as in A (min-max scaling of every feature), so only the rankings "
        "differ.", "",
    ]
    lines += table(unscaled, ("relief", "prelief"))
    lines += ["", "P-Relief vs Relief with unscaled probes, ROC AUC:", ""]
    lines += paired_lines(auc_pr_raw, "prelief", "relief", "auc")
    lines += ["", "P-Relief vs Relief with unscaled probes, best mean kNN accuracy:", ""]
    lines += paired_lines(acc_pr_raw, "prelief", "relief", "accuracy")

    lines += ["", "## B. Multi-class sets, all four variants (the paper: Relief, ReliefF, M-Relief)", ""]
    lines += table(multi, VARIANTS)
    for other in ("relief", "relieff"):
        lines += ["", f"M-Relief vs {'Relief' if other == 'relief' else 'ReliefF'}, ROC AUC:", ""]
        lines += paired_lines(paired(multi, "mrelief", other, "auc"), "mrelief", other, "auc")
        lines += ["", f"M-Relief vs {'Relief' if other == 'relief' else 'ReliefF'}, best mean kNN accuracy:", ""]
        lines += paired_lines(paired(multi, "mrelief", other, "accuracy"), "mrelief", other, "accuracy")

    lines += ["", f"## C. Imbalanced binary sets ({int(HIDE_FRACTION * 100)}% of the minority class hidden)", "",
              "The hidden rows are drawn at random from the whole set before the probes and the split; the split "
              "keeps the Table 1 training share of the rows left, so train and test are both imbalanced. "
              f"Sets: {', '.join(IMBALANCED)} (the paper does not name its four; these are the four binary sets with "
              "the largest majority share). Plain accuracy is close to the majority share here whatever the features, "
              "so the balanced accuracy (mean recall of the two classes; the kNN size is then tuned for it) is shown "
              "too.", ""]
    lines += imbalanced_table(imbal, IMBALANCE_VARIANTS)
    auc_mi = paired(imbal, "mrelief", "relief", "auc")
    acc_mi = paired(imbal, "mrelief", "relief", "accuracy")
    bal_mi = paired(imbal, "mrelief", "relief", "balanced_accuracy")
    lines += ["", "M-Relief vs Relief (= ReliefF on binary data), ROC AUC:", ""]
    lines += paired_lines(auc_mi, "mrelief", "relief", "auc")
    lines += ["", "M-Relief vs Relief, best mean accuracy:", ""] + paired_lines(acc_mi, "mrelief", "relief", "accuracy")
    lines += ["", "M-Relief vs Relief, best mean balanced accuracy:", ""]
    lines += paired_lines(bal_mi, "mrelief", "relief", "balanced_accuracy")

    rows = spread_term_rows({**binary, **{f"{k} (B)": v for k, v in multi.items()},
                             **{f"{k} (C)": v for k, v in imbal.items()}})
    lines += [
        "", "## D. Why M-Relief follows the class priors: a class-blind term in eq. (16)", "",
        "Eq. (16)'s margin splits exactly into half of Relief's margin plus a term T that treats the nearest hit "
        "and the nearest miss alike:", "",
        "    P(y_n)|x_n - M| - (1 - P(y_n))|x_n - H|  =  1/2 (|x_n - M| - |x_n - H|)  +  (P(y_n) - 1/2)(|x_n - M| + "
        "|x_n - H|)",
        "",
        "T rewards (P(y_n) > 1/2) or penalises (P(y_n) < 1/2) features whose values lie far from the query's two "
        "nearest neighbours, whatever their class. For a feature unrelated to the class both distances are about "
        "its spread delta_d (mean |x_i - x_j| over pairs, range-scaled), so T is about f x delta_d with "
        "f = sum_c P_c (2 P_c - 1) = 2 sum_c P_c^2 - 1: near zero for two balanced classes, about +0.7 on the "
        "imbalanced sets of C, negative for three or more classes of similar size. Relief (no priors), ReliefF "
        "(miss weights P(c)/(1 - P(y_n)) sum to 1) and P-Relief (kernel means) have no such term. With k = 1 "
        "Relief and M-Relief share their neighbours, so T = M-Relief score - Relief score / 2 exactly; the table "
        "gives its mean over the probes (next to the prediction f x mean probe delta) and over the real features, "
        "and the ROC AUC of ranking by T alone (means over runs). T on the probes stays "
        f"{100 * (1 - max(r['t_probe'] / r['t_pred'] for r in rows if abs(r['f']) > 0.2)):.0f}-"
        f"{100 * (1 - min(r['t_probe'] / r['t_pred'] for r in rows if abs(r['f']) > 0.2)):.0f}% below the "
        "prediction where |f| > 0.2 (the probes take part in the neighbour search, so their neighbours are a little "
        "closer than random rows). Features that shape the neighbourhood, mostly real ones, differ less from the "
        "neighbours than their spread, the probes hardly so: T tends to rank the probes up when f > 0 and down when "
        "f < 0. The 0/1 one-hot Splice columns are the exception: their differences to the neighbours are larger "
        "than the probes'.", "",
    ]
    lines += spread_term_table(rows)

    # -- the paper's findings, checked -----------------------------------------------------------
    paper_sets = {**{f"{k} (C)": v for k, v in imbal.items()},
                  **{k: v for k, v in multi.items() if k not in ("Waveform-3", "Splice-3")}}
    all_sets = {**paper_sets, **{k: v for k, v in multi.items() if k in ("Waveform-3", "Splice-3")}}
    lines += [
        "",
        "## The paper's findings, checked",
        "",
        f"1. *\"For all the eight data sets, P-Relief achieves a much larger area under ROC curve than Relief.\"* "
        f"With range scaling (A): {claim_line(auc_pr, 'P-Relief', 'Relief')}. With unscaled probes (A3): "
        f"{claim_line(auc_pr_raw, 'P-Relief', 'Relief')}.",
        f"2. *\"P-Relief outperforms Relief in seven (out of eight) data sets\"* (test accuracy, best over the "
        f"feature counts). A: {claim_line(acc_pr, 'P-Relief', 'Relief')}. A3: "
        f"{claim_line(acc_pr_raw, 'P-Relief', 'Relief')}.",
        f"3. *M-Relief \"performs the best in six (out of eight) data sets in terms of the classification error "
        f"metric, and in seven data sets in terms of the ROC metric\"* (four imbalanced binary + four multi-class "
        f"sets; Relief vs ReliefF vs M-Relief). Over the {len(paper_sets)} of those sets available here "
        f"({len(imbal)} imbalanced binary + {len(paper_sets) - len(imbal)} multi-class), the number of sets on which "
        "each variant has the best mean (ties count for each): ROC AUC: "
        f"{fmt_counts(best_variant_counts(paper_sets, IMBALANCE_VARIANTS, 'auc'))}; "
        f"best accuracy: {fmt_counts(best_variant_counts(paper_sets, IMBALANCE_VARIANTS, 'accuracy'))}; on the "
        "imbalanced sets, best balanced accuracy: "
        f"{fmt_counts(best_variant_counts(imbal, IMBALANCE_VARIANTS, 'balanced_accuracy'))}. "
        "With the two extra 3-class sets: ROC AUC "
        f"{fmt_counts(best_variant_counts(all_sets, IMBALANCE_VARIANTS, 'auc'))}; "
        f"best accuracy {fmt_counts(best_variant_counts(all_sets, IMBALANCE_VARIANTS, 'accuracy'))}. "
        f"On the imbalanced binary sets alone, ROC AUC: {claim_line(auc_mi, 'M-Relief', 'Relief')}; best accuracy: "
        f"{claim_line(acc_mi, 'M-Relief', 'Relief')}; best balanced accuracy: "
        f"{claim_line(bal_mi, 'M-Relief', 'Relief')}.",
        "4. *\"The performance of Relief is degraded significantly when the data is highly imbalanced\"*: Relief's "
        "ROC AUC, A vs C: " + ", ".join(
            f"{name} {aucs(binary[name], 'relief').mean():.3f} -> {aucs(imbal[name], 'relief').mean():.3f}"
            for name in imbal if name in binary)
        + "; best balanced accuracy in C against the all-features kNN: " + ", ".join(
            f"{name} {best(imbal[name], 'relief', 'balanced_accuracy')[1].mean():.3f} vs "
            f"{np.mean([r['all_features']['balanced_accuracy'] for r in imbal[name]]):.3f}" for name in imbal) + ".",
    ]
    lines += ["", "### Discussion", ""] + settings.get("discussion", [])
    fit_means = {v: np.mean([r["variants"][v]["fit_seconds"] for e in (binary, multi, imbal)
                             for runs_ in e.values() for r in runs_ if v in r["variants"]]) for v in VARIANTS}
    lines += ["", "## Runtime", "",
              "Mean Spark fit time per variant (s, over all sets and runs of A, B, C; training sets of 120-1,000 "
              "rows): "
              + ", ".join(f"{v} {t:.1f}" for v, t in fit_means.items())
              + " (relief is the first fit on each cached training frame and pays for materialising it). "
              f"Whole script: {settings['seconds'] / 60:.1f} min.", ""]
    text = "\n".join(lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--sets", default=None, help="comma-separated paper names (default: all)")
    parser.add_argument("--out", type=Path, default=DOC)
    parser.add_argument("--json", type=Path, default=None, help="also write every per-run number here")
    parser.add_argument("--from-json", type=Path, default=None, help="only re-render the doc from a --json file")
    args = parser.parse_args(argv)

    if args.from_json:
        saved = json.loads(args.from_json.read_text())
        print(write_doc(saved["results"], {**saved["settings"], "discussion": discussion(saved["results"])}, args.out))
        return

    from sparkfs.spark.session import get_spark

    spark = get_spark("local[2]", "sparkfs-relief-probes", conf={
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "2g"})
    spark.sparkContext.setLogLevel("ERROR")
    wanted = None if args.sets is None else set(args.sets.split(","))
    started = time.perf_counter()
    results = {"binary": {}, "unscaled": {}, "multi": {}, "imbalanced": {}}
    datasets = {}
    loaded = {}
    for spec in BINARY + MULTI:
        X, y, changes = load(spec)
        loaded[spec.name] = (X, y)
        datasets[spec.name] = {"rows": X.shape[0], "features": X.shape[1], "classes": int(y.max()) + 1,
                               "changes": changes}
    plan = [Step("binary", spec, VARIANTS, i, sigmas=SIGMA_STUDY) for i, spec in enumerate(BINARY)]
    plan += [Step("unscaled", spec, ("relief", "prelief"), i, raw_probes=True) for i, spec in enumerate(BINARY)]
    plan += [Step("multi", spec, VARIANTS, 100 + i) for i, spec in enumerate(MULTI)]
    plan += [Step("imbalanced", spec, IMBALANCE_VARIANTS, 200 + i, imbalanced=True)
             for i, spec in enumerate(BINARY) if spec.name in IMBALANCED]
    for run in range(args.runs):
        for step in plan:
            if wanted is not None and step.spec.name not in wanted:
                continue
            X, y = loaded[step.spec.name]
            step_started = time.perf_counter()
            result = run_step(spark, step, X, y, run)
            results[step.experiment].setdefault(step.spec.name, []).append(result)
            print(f"run {run} {step.experiment:10s} {step.spec.name:11s} {time.perf_counter() - step_started:5.1f}s  "
                  + "  ".join(f"{v} auc {r['auc']:.3f} best {max(r['accuracy']):.3f}"
                              for v, r in result["variants"].items()), flush=True)
        print(f"-- run {run} done at {(time.perf_counter() - started) / 60:.1f} min", flush=True)
    spark.stop()
    seconds = time.perf_counter() - started
    settings = {"runs": args.runs, "seconds": seconds, "date": time.strftime("%Y-%m-%d"), "datasets": datasets}
    if args.json:
        args.json.write_text(json.dumps({"settings": settings, "results": results}))
    if all(results.values()):
        print(write_doc(results, {**settings, "discussion": discussion(results)}, args.out))


def _names(values) -> str:
    values = list(values)
    return ", ".join(values) if values else "none"


def discussion(results) -> List[str]:
    """The discussion bullets; every number and every list of sets is computed from ``results``."""
    binary, unscaled, multi, imbal = results["binary"], results["unscaled"], results["multi"], results["imbalanced"]
    bullets = []

    good = [name for name, runs in binary.items() if all(aucs(runs, v).mean() > 0.8 for v in VARIANTS)]
    perfect = [name for name, runs in binary.items() if aucs(runs, "prelief").min() >= 0.999]
    hardest = min(binary, key=lambda name: max(aucs(binary[name], v).mean() for v in VARIANTS))
    bullets.append(
        f"* **Real features above the probes.** Every variant has a mean ROC AUC above 0.8 on {_names(good)}. "
        f"P-Relief reaches AUC 1 in every run on {_names(perfect)} (the paper's \"ideal ROC shape\" for Breast and "
        f"Ionosphere). The hardest binary set for all variants is {hardest} (best mean AUC "
        f"{max(aucs(binary[hardest], v).mean() for v in VARIANTS):.3f}).")

    auc_pr = paired(binary, "prelief", "relief", "auc")
    losers = [name for name, r in auc_pr.items() if r["diff"] < 0]
    winners = [name for name, r in auc_pr.items() if r["diff"] > 0]
    text = (f"* **P-Relief vs Relief with range scaling (A).** P-Relief ranks the real features better on "
            f"{_names(winners)} and worse on {_names(losers)}.")
    if losers and binary[losers[0]][0].get("sigma_study"):
        sigmas = list(binary[losers[0]][0]["sigma_study"])
        parts = []
        for name in losers:
            wider = {s_: np.mean([r["sigma_study"][s_] for r in binary[name]]) for s_ in sigmas}
            best_sigma = max(wider, key=wider.get)
            parts.append(f"{name} {aucs(binary[name], 'prelief').mean():.3f} -> {wider[best_sigma]:.3f} at sigma "
                         f"{best_sigma} (Relief {aucs(binary[name], 'relief').mean():.3f})")
        closed = [name for name, part in zip(losers, parts)
                  if max(np.mean([r["sigma_study"][s_] for r in binary[name]]) for s_ in sigmas)
                  >= aucs(binary[name], "relief").mean()]
        text += (f" A wider kernel (A2) changes P-Relief's AUC on those sets as follows: {'; '.join(parts)}; it "
                 f"reaches Relief's AUC on {_names(closed)}"
                 + (". So the gap is not only the bandwidth." if len(closed) < len(losers) else
                    ": the paper's sigma = 0.01 is too narrow for these sets."))
    if binary[next(iter(binary))][0].get("sigma_study"):
        gains = []
        for name, runs in binary.items():
            if name in losers:
                continue  # reported above
            wider = {s_: np.mean([r["sigma_study"][s_] for r in runs]) for s_ in runs[0]["sigma_study"]}
            best_sigma = max(wider, key=wider.get)
            if wider[best_sigma] - aucs(runs, "prelief").mean() > 0.05:
                gains.append(f"{name} {aucs(runs, 'prelief').mean():.3f} -> {wider[best_sigma]:.3f} at sigma "
                             f"{best_sigma}")
        if gains:
            text += (" On the other sets the wider kernels raise P-Relief's AUC by more than 0.05 on: "
                     f"{'; '.join(gains)}.")
    if "Splice" in binary:
        far = splice_far_columns(binary["Splice"])
        text += (f" On Splice, Relief scores {100 * far['relief']:.0f}% of the one-hot columns 25-30 bases from the "
                 f"junction above every probe, P-Relief {100 * far['prelief']:.0f}%: Relief's margin spreads the gap "
                 "between the hit and the miss distance over every column that enters the distance, so the columns "
                 "far from the junction (probably weakly informative) get it too, while P-Relief scores each column "
                 "on its own. Which of the two ROCs is \"right\" depends on how relevant those columns really are; "
                 "the probe protocol counts every real column as relevant.")
    bullets.append(text)

    auc_raw = paired(unscaled, "prelief", "relief", "auc")
    raw_winners = [name for name, r in auc_raw.items() if r["diff"] > 0]
    drops = ", ".join(f"{name} {aucs(binary[name], 'relief').mean():.2f} -> {aucs(unscaled[name], 'relief').mean():.2f}"
                      for name in unscaled)
    reproduced = len(raw_winners) == len(auc_raw)
    bullets.append(
        f"* **Unscaled probes (A3) {'reproduce' if reproduced else 'come closer to'} the paper's ROC finding.** "
        f"With the probes left at std 4.5 next to "
        f"[0, 1] real features, Relief's AUC falls ({drops}) because its nearest hit and miss are decided by the "
        f"probes, while P-Relief's does not depend on the other features at all; P-Relief is then ahead on "
        f"{len(raw_winners)}/{len(auc_raw)} sets. The paper does not say how its probes were scaled; this setup "
        "matches its ROC claims much better than the range-scaled one, which suggests (it does not prove) that its "
        "probes were not rescaled with the data.")

    spreads = {name: max(best(runs, v)[1].mean() for v in VARIANTS) - min(best(runs, v)[1].mean() for v in VARIANTS)
               for name, runs in binary.items()}
    close = [name for name, spread in spreads.items() if spread <= 0.02]
    acc_pr = paired(binary, "prelief", "relief", "accuracy")
    bullets.append(
        f"* **Accuracy {'barely separates' if 2 * len(close) >= len(spreads) else 'separates'} the variants on binary "
        f"data.** The best mean kNN accuracies of the four "
        f"variants lie within 0.02 of each other on {len(close)}/{len(spreads)} binary sets ({_names(close)}); the "
        f"largest spread is {max(spreads.values()):.3f} ({max(spreads, key=spreads.get)}). P-Relief's best accuracy "
        f"is significantly (p < 0.01) higher than Relief's on "
        f"{sum(1 for r in acc_pr.values() if r['diff'] > 0 and r['p'] < 0.01)} sets, against the paper's seven "
        "significant wins out of eight. The kNN picks its best feature count per variant, which hides most ranking "
        "differences once a handful of good features is in.")

    rows = {row["set"]: row for row in spread_term_rows({**{f"{k} (B)": v for k, v in multi.items()},
                                                         **{f"{k} (C)": v for k, v in imbal.items()}})}
    c_rows = [row for name, row in rows.items() if name.endswith("(C)")]
    b_rows = [row for name, row in rows.items() if name.endswith("(B)")]
    auc_mi = paired(imbal, "mrelief", "relief", "auc")
    bal_mi = paired(imbal, "mrelief", "relief", "balanced_accuracy")
    below = sum(1 for r in auc_mi.values() if r["diff"] < 0)
    bullets.append(
        "* **M-Relief on imbalanced data (C) "
        f"{'does the opposite of' if 2 * below > len(auc_mi) else 'does not clearly support'} "
        f"the paper's claim.** Its ROC AUC is below Relief's on {below}/{len(auc_mi)} sets ("
        + ", ".join(f"{name} {r['a']:.3f} vs {r['b']:.3f}" for name, r in auc_mi.items())
        + ") and its best balanced accuracy is higher on "
        f"{sum(1 for r in bal_mi.values() if r['diff'] > 0)}/{len(bal_mi)}. "
        f"Section D gives the reason: with f = {min(r['f'] for r in c_rows):.2f} to {max(r['f'] for r in c_rows):.2f} "
        f"the class-blind term T is about {np.mean([r['t_probe'] for r in c_rows]):+.2f} on the probes and "
        f"{np.mean([r['t_real'] for r in c_rows]):+.2f} on the real features, while the class signal M-Relief keeps, "
        f"half of Relief's margin, averages {min(r['half_relief_real'] for r in c_rows):+.3f} to "
        f"{max(r['half_relief_real'] for r in c_rows):+.3f} over the real features; and T alone ranks the real "
        "features no better than chance (AUC of T alone "
        + ", ".join(f"{row['set'][:-4]} {row['auc_t']:.2f}" for row in c_rows)
        + "). The selector implements eq. (16) as printed (checked against a NumPy transcription of the equation "
        "on imbalanced Pima: equal within 2e-16), so this is the equation, not the code.")
    auc_mb = paired(multi, "mrelief", "relief", "auc")
    acc_mb = paired(multi, "mrelief", "relieff", "accuracy")
    separating = [row["set"][:-4] for row in b_rows if row["auc_t"] >= 0.8]
    b_priors = ", ".join(f"{row['set'][:-4]} {row['f']:+.2f}" for row in b_rows)
    failing = [row for row in b_rows if row["auc_t"] < 0.5]
    bullets.append(
        "* **On multi-class data (B) M-Relief's ROC advantage comes from the same term, negative there** "
        f"(f = {b_priors}). "
        f"T alone puts the real features above the probes on {_names(separating)} (AUC of T alone "
        + ", ".join(f"{row['set'][:-4]} {row['auc_t']:.2f}" for row in b_rows)
        + "): a penalty on features far from the neighbours, which the probes are"
        + ("; on " + _names(row["set"][:-4] for row in failing) + " it works the other way and M-Relief's AUC falls ("
           + ", ".join(f"{row['set'][:-4]} {row['auc_mrelief']:.3f} vs Relief {row['auc_relief']:.3f}"
                       for row in failing)
           + ")" if failing else "")
        + f". M-Relief's AUC is above Relief's on {sum(1 for r in auc_mb.values() if r['diff'] > 0)}/{len(auc_mb)} "
        f"multi-class sets, but its best accuracy is above ReliefF's on only "
        f"{sum(1 for r in acc_mb.values() if r['diff'] > 0)}/{len(acc_mb)}. Sets where each of Relief, ReliefF, "
        f"M-Relief has the best mean: ROC AUC {fmt_counts(best_variant_counts(multi, IMBALANCE_VARIANTS, 'auc'))}; "
        f"best accuracy {fmt_counts(best_variant_counts(multi, IMBALANCE_VARIANTS, 'accuracy'))}.")

    lowered = [name for name in imbal if name in binary
               and aucs(imbal[name], "relief").mean() < aucs(binary[name], "relief").mean()]
    # a drop counts as clear when it exceeds the larger run-to-run std of the two settings
    clear = [name for name in lowered
             if aucs(binary[name], "relief").mean() - aucs(imbal[name], "relief").mean()
             > max(aucs(binary[name], "relief").std(ddof=1), aucs(imbal[name], "relief").std(ddof=1))]
    bullets.append(
        f"* **Relief under imbalance.** Relief's AUC is lower after hiding 80% of the minority class on "
        f"{len(lowered)}/{len(imbal)} sets ({_names(lowered)}), by more than one run-to-run std on "
        f"{len(clear)} ({_names(clear)}).")
    bullets.append(
        "* **Limits of this comparison.** Fewer runs than the paper (see the settings), different versions of Splice "
        "(UCI 3-class one-hot instead of DELVE 2-class) and Waveform (which 2-class version the paper used is not "
        "stated), no Ecoli, LRS without its 16 smallest classes, the paper's sets for the imbalanced experiment "
        "guessed, and k = 1 everywhere (the library default is k = 10). The kNN is tuned by CV as in the paper; "
        "the LSVM of the paper is not run.")
    return bullets


if __name__ == "__main__":
    main()
