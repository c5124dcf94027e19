"""Which distance setting should ReliefF use by default on sparse term-count matrices?

NumPy / scikit-learn only (no Spark). On the five shared text sets, stratified 3-fold CV: on each
training fold anova (f_classif) or ReliefF scores, top 100 features, LinearSVC(C=1, dual="auto",
max_iter=5000, random_state=0) on the raw counts of those columns (and, as a check, on them z-scored), test accuracy.

ReliefF (Kononenko / Robnik-Sikonja, as sparkfs): every training row a query, k = 10 nearest hits
and k = 10 nearest misses per other class (ties to the lower row index; a short class gives the
rows it has); ``W_j = mean_q [-mean_hits |z_qj - z_hj| + sum_{c != y_q} P(c) / (1 - P(y_q))
mean_misses_c |z_qj - z_mj|]`` with z the transformed rows, the same z as in the distance. Settings:
scaling range / none / standard (divisor only: offsets cancel) x euclidean / manhattan; "cosine"
(rows / L2 norm); "cosine-std" (standard, then rows / L2 norm); "tfidf-l2" (log(1 + count) x smooth
idf of the training fold, rows / L2 norm); the last three euclidean. A sanity line compares
range/euclidean with sparkfs.core.relief.relieff on fold 0 of tr11.

    .venv/bin/python -m studies.relief_text_study

Writes ``benchmarks/results/relief_text.md`` and ``benchmarks/results/relief_text.json``.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_selection import f_classif
from sklearn.metrics.pairwise import manhattan_distances
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from benchmarks.common import RESULTS, load_npz

SETS = ["BASEHOCK", "PCMAC", "tr11", "tr12", "tr45"]
TOP, K = 100, 10
SETTINGS = {f"{scaling}/{metric}": (scaling, metric) for scaling in ("range", "none", "standard")
            for metric in ("euclidean", "manhattan")}
SETTINGS.update({kind: (kind, "euclidean") for kind in ("cosine", "cosine-std", "tfidf-l2")})


def column_divisor(X, kind):
    """max - min ("range") or the sample std, ddof 1 ("standard"); 1 for a constant column."""
    n = X.shape[0]
    hi, lo = X.max(axis=0).toarray().ravel(), X.min(axis=0).toarray().ravel()
    if kind == "range":
        spread = hi - lo
    else:
        mean = np.asarray(X.mean(axis=0)).ravel()
        sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
        spread = np.sqrt(np.clip(sq - mean**2, 0, None) * n / (n - 1))
    return np.where((hi > lo) & (spread > 0), spread, 1.0)


def l2_rows(X):
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    return sp.diags(np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)) @ X


def transform(X, kind):
    """The rows z on which ReliefF measures both distances and differences (CSR stays CSR)."""
    if kind == "none":
        return X.copy()
    if kind in ("range", "standard"):
        return (X @ sp.diags(1.0 / column_divisor(X, kind))).tocsr()
    if kind == "cosine":
        return l2_rows(X).tocsr()
    if kind == "cosine-std":
        return l2_rows(X @ sp.diags(1.0 / column_divisor(X, "standard"))).tocsr()
    if kind == "tfidf-l2":
        n = X.shape[0]
        df = np.bincount(X.indices, minlength=X.shape[1])
        idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
        tf = X.copy()
        tf.data = np.log1p(tf.data)
        return l2_rows(tf @ sp.diags(idf)).tocsr()
    raise ValueError(kind)


def distances(Z, metric):
    """Full n x n distance matrix (squared Euclidean: same order), diagonal +inf (self excluded)."""
    if metric == "euclidean":
        norms = np.asarray(Z.multiply(Z).sum(axis=1)).ravel()
        D = norms[:, None] + norms[None, :] - 2.0 * (Z @ Z.T).toarray()
        np.clip(D, 0.0, None, out=D)
    else:
        D = manhattan_distances(Z, Z)
    np.fill_diagonal(D, np.inf)
    return D


def relieff_scores(X, y, kind, metric, k=K):
    Z = transform(X, kind)
    D = distances(Z, metric)
    n, num_classes = len(y), int(y.max()) + 1
    priors = np.bincount(y, minlength=num_classes) / n
    queries, neighbours, weights = [], [], []
    for c in range(num_classes):
        cols = np.flatnonzero(y == c)  # ascending: a stable sort breaks ties to the lower index
        if cols.size == 0:
            continue
        take = min(k, cols.size)
        sub = D[:, cols]
        order = np.argsort(sub, axis=1, kind="stable")[:, :take]
        valid = np.isfinite(np.take_along_axis(sub, order, axis=1))  # drops the query itself
        count = valid.sum(axis=1)
        class_weight = np.where(y == c, -1.0, priors[c] / (1.0 - priors[y]))
        per = np.divide(class_weight, count, out=np.zeros(n), where=count > 0)
        rows = np.repeat(np.arange(n)[:, None], take, axis=1)
        queries.append(rows[valid])
        neighbours.append(cols[order][valid])
        weights.append(np.broadcast_to(per[:, None], valid.shape)[valid])
    q, nb, w = (np.concatenate(a) for a in (queries, neighbours, weights))
    score = np.zeros(X.shape[1])
    for start in range(0, q.size, 8000):  # sum_pairs w |z_q - z_nb|, in chunks of pairs
        s = slice(start, start + 8000)
        diff = abs(Z[q[s]] - Z[nb[s]])
        score += np.asarray(diff.T @ w[s]).ravel()
    return score / n


def anova_scores(X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant columns of a fold: F is NaN -> 0
        return np.nan_to_num(f_classif(X, y)[0], nan=0.0)


def top(scores, m=TOP):
    return np.argsort(-scores, kind="stable")[:m]


def svm_accuracy(X_train, y_train, X_test, y_test, features, standardise=False):
    """Test accuracy of LinearSVC on the selected columns (raw counts, or z-scored on the training fold)."""
    A, B = X_train[:, features].toarray(), X_test[:, features].toarray()
    if standardise:
        scaler = StandardScaler().fit(A)
        A, B = scaler.transform(A), scaler.transform(B)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        model = LinearSVC(C=1.0, dual="auto", max_iter=5000, random_state=0).fit(A, y_train)
    converged = not any(issubclass(w.category, ConvergenceWarning) for w in caught)
    return float(model.score(B, y_test)), converged


def sparkfs_sanity(X, y, train):
    """Top-100 overlap of this ReliefF (range, euclidean) with sparkfs's in-memory core."""
    from sparkfs.core.neighbours import local_neighbour_table
    from sparkfs.core.relief import class_priors, relieff
    Xt, yt = X[train], y[train]
    Z = transform(Xt, "range")
    ids = np.arange(Xt.shape[0])
    num_classes = int(y.max()) + 1
    table = local_neighbour_table(Z, ids, Z, ids, yt, num_classes=num_classes, k=K, metric="euclidean")
    theirs = relieff(Z, ids, table, yt, class_priors(np.bincount(yt, minlength=num_classes))).mean(axis=0)
    ours = relieff_scores(Xt, yt, "range", "euclidean")
    overlap = len(set(top(ours)) & set(top(theirs)))
    return {"top100_overlap": overlap, "max_abs_score_diff": float(np.max(np.abs(ours - theirs))),
            "max_abs_score": float(np.max(np.abs(ours)))}


def main():
    started, cpu0 = time.time(), time.process_time()
    folds = StratifiedKFold(3, shuffle=True, random_state=0)
    methods = ["anova", *SETTINGS]
    results = {}
    for name in SETS:
        X, y = load_npz(name)
        per = {m: {"acc": [], "converged": [], "acc_std": [], "converged_std": [], "anova_overlap": [],
                   "seconds": 0.0} for m in methods}
        for train, test in folds.split(np.zeros(len(y)), y):
            anova_top = None
            for m in methods:
                t0 = time.process_time()
                s = (anova_scores(X[train], y[train]) if m == "anova"
                     else relieff_scores(X[train], y[train], *SETTINGS[m]))
                per[m]["seconds"] += time.process_time() - t0
                feats = top(s)
                anova_top = feats if m == "anova" else anova_top
                acc, ok = svm_accuracy(X[train], y[train], X[test], y[test], feats)
                per[m]["acc"].append(acc)
                per[m]["converged"].append(ok)
                acc, ok = svm_accuracy(X[train], y[train], X[test], y[test], feats, standardise=True)
                per[m]["acc_std"].append(acc)
                per[m]["converged_std"].append(ok)
                per[m]["anova_overlap"].append(len(set(feats) & set(anova_top)))
        for m in methods:
            per[m]["mean"], per[m]["mean_std"] = float(np.mean(per[m]["acc"])), float(np.mean(per[m]["acc_std"]))
        results[name] = per
        print(name, " ".join(f"{m}={per[m]['mean']:.4f}" for m in methods), flush=True)
    X, y = load_npz("tr11")
    train, _ = next(folds.split(np.zeros(len(y)), y))
    try:
        sanity = sparkfs_sanity(X, y, train)
    except Exception as exc:  # report, do not fail the study
        sanity = {"error": repr(exc)}
    print("sanity (tr11 fold 0, range/euclidean vs sparkfs.core.relief.relieff):", sanity, flush=True)
    meta = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "machine": platform.machine(),
            "cores": os.cpu_count(), "python": platform.python_version(),
            "command": ".venv/bin/python -m studies.relief_text_study",
            "wall_seconds": time.time() - started, "cpu_seconds": time.process_time() - cpu0}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "relief_text.json").write_text(json.dumps({"meta": meta, "sanity": sanity, "results": results},
                                                         indent=1))
    (RESULTS / "relief_text.md").write_text(report(meta, sanity, results))
    print((RESULTS / "relief_text.md").read_text())


def table(results, key, settings):
    """Rows "setting | acc (diff) per set | mean diff | worst diff" for the accuracy ``key``; and the diffs."""
    diffs = {m: [results[d][m][key] - results[d]["anova"][key] for d in SETS] for m in settings}
    lines = ["| setting | " + " | ".join(SETS) + " | mean diff | worst diff |", "|---|" + "---:|" * (len(SETS) + 2),
             "| anova | " + " | ".join(f"{results[d]['anova'][key]:.4f}" for d in SETS) + " | - | - |"]
    for m in settings:
        cells = [f"{results[d][m][key]:.4f} ({diffs[m][i]:+.4f})" for i, d in enumerate(SETS)]
        lines.append(f"| {m} | " + " | ".join(cells) + f" | {np.mean(diffs[m]):+.4f} | {min(diffs[m]):+.4f} |")
    return lines, diffs


def report(meta, sanity, results):
    settings = list(SETTINGS)
    main_table, diffs = table(results, "mean", settings)
    std_table, diffs_std = table(results, "mean_std", settings)
    best = max(settings, key=lambda m: (min(diffs[m]), np.mean(diffs[m])))
    within = [m for m in settings if min(diffs[m]) >= -0.05]
    within_std = [m for m in settings if min(diffs_std[m]) >= -0.05]
    unconverged = {m: (sum(not ok for d in SETS for ok in results[d][m]["converged"]),
                       sum(not ok for d in SETS for ok in results[d][m]["converged_std"]))
                   for m in ["anova", *settings]}
    lines = [
        "# ReliefF distance settings on sparse term-count matrices", "",
        f"Measured {meta['date']} on {meta['machine']}, {meta['cores']} cores (shared), Python {meta['python']}; "
        f"`{meta['command']}` ({meta['cpu_seconds']:.0f} s CPU, {meta['wall_seconds']:.0f} s wall). NumPy / "
        "scikit-learn only, no Spark.", "",
        "Protocol: StratifiedKFold(3, shuffle=True, random_state=0); on each training fold the scores, top 100 "
        "features, `LinearSVC(C=1, dual=\"auto\", max_iter=5000, random_state=0)` on the raw counts of those features, "
        "accuracy "
        "on the test fold; mean over the 3 folds. anova = `f_classif` (NaN -> 0). ReliefF: every training row a "
        "query, k = 10 hits and k = 10 misses per other class, Kononenko's P(c) / (1 - P(y)) miss weights, "
        "differences on the same transformed rows as the distance. Settings: feature scaling / metric "
        "(range = divide by max - min, standard = by the sample std, none = raw counts); cosine = rows divided "
        "by their L2 norm, euclidean; cosine-std = standard scaling then L2 rows; tfidf-l2 = log(1 + count) x "
        "smooth idf of the training fold, then L2 rows, euclidean.", "",
        "Cells: mean accuracy (difference to anova).", "", *main_table, "",
        "Check of the classifier protocol: the same top-100 features, LinearSVC on columns z-scored on the "
        "training fold (`StandardScaler`) instead of raw counts:", "", *std_table, "",
        "LinearSVC fits that stopped at max_iter (ConvergenceWarning), raw counts / z-scored, of 15 per method: "
        + ", ".join(f"{m} {a}/{b}" for m, (a, b) in unconverged.items()) + " (random_state=0: reproducible).", "",
        "Mean top-100 overlap with anova's top 100 (features in common, of 100):", "",
        "| setting | " + " | ".join(SETS) + " |", "|---|" + "---:|" * len(SETS),
        *[f"| {m} | " + " | ".join(f"{np.mean(results[d][m]['anova_overlap']):.0f}" for d in SETS) + " |"
          for m in settings], "",
        "## Result", "",
        f"Best setting overall (largest worst-case difference to anova, then mean): **{best}**, worst "
        f"{min(diffs[best]):+.4f}, mean {np.mean(diffs[best]):+.4f} (z-scored SVM: worst {min(diffs_std[best]):+.4f}, "
        f"mean {np.mean(diffs_std[best]):+.4f}). "
        + (f"Within 0.05 of anova on all five sets (raw-count SVM): {', '.join(within)}; "
           if within else "**No setting is within 0.05 of anova on all five sets (raw-count SVM).** ")
        + (f"with the z-scored SVM: {', '.join(within_std)}." if within_std else "with the z-scored SVM: none."),
        "", f"Sanity: ReliefF here (range, euclidean) vs `sparkfs.core.relief.relieff` (with "
        f"`sparkfs.core.neighbours.local_neighbour_table`) on fold 0 of tr11: {sanity}.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    main()
