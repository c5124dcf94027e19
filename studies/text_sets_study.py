"""The neighbour and margin methods' defaults on the shared text sets: a linear SVM on each one's top 100.

NumPy / scikit-learn only (sparkfs's scikit-learn front, the same core functions as the Spark selectors,
every training row a query). On each shared text set (BASEHOCK, PCMAC, tr11, tr12, tr45: term counts,
under 2,000 documents), stratified 3-fold CV (shuffled, random_state 0): on each training fold the method's
scores with its defaults, its top 100, ``LinearSVC(C=1, dual="auto", max_iter=5000, random_state=0)`` on
the raw counts of those columns, accuracy on the test fold; the mean over the folds beside anova's
(``f_classif``) from the same folds. ``multisurf (paper)`` is MultiSURF with ``preset="paper"``
(scikit-rebate's range-scaled Manhattan distance on any data), the default before the term-like rule.

    .venv/bin/python -m studies.text_sets_study [--sets tr11,tr12] [--methods relieff,multisurf]

Writes ``benchmarks/results/text_sets.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_selection import f_classif
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import LinearSVC

from benchmarks.common import RESULTS, load_npz, machine_header

SETS = ("BASEHOCK", "PCMAC", "tr11", "tr12", "tr45")
#: name shown -> (sparkfs method, the front's params beyond the defaults)
METHODS = {"relieff": ("relieff", {}), "multisurf": ("multisurf", {}), "multisurf (paper)": ("multisurf",
           {"preset": "paper"}), "surf": ("surf", {}), "lmba": ("lmba", {}), "simba": ("simba", {})}
TOP = 100


def top_features(name: str, X, y) -> np.ndarray:
    if name == "anova":
        scores = np.nan_to_num(f_classif(X, y)[0], nan=0.0)
    else:
        from sparkfs.sklearn import estimator_for

        method, params = METHODS[name]
        scores = estimator_for(method, num_features=TOP, **params).fit(X, y).scores_
    return np.argsort(-scores, kind="mergesort")[:TOP]


def accuracy(X_train, y_train, X_test, y_test, features) -> float:
    model = LinearSVC(C=1.0, dual="auto", max_iter=5000, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(X_train[:, features], y_train)
    return float((model.predict(X_test[:, features]) == y_test).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--out", default=str(RESULTS / "text_sets.md"))
    args = parser.parse_args()
    names = ["anova", *args.methods.split(",")]
    results, seconds = {}, {}
    for data_set in args.sets.split(","):
        X, y = load_npz(data_set)
        folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
        for name in names:
            began = time.perf_counter()
            results[f"{name}|{data_set}"] = float(np.mean([
                accuracy(X[train], y[train], X[test], y[test], top_features(name, X[train], y[train]))
                for train, test in folds]))
            seconds[f"{name}|{data_set}"] = time.perf_counter() - began
            print(f"{data_set:9s} {name:18s} {results[f'{name}|{data_set}']:.4f} "
                  f"({seconds[f'{name}|{data_set}']:.0f} s)", flush=True)
    out = RESULTS / "text_sets.json" if args.out == str(RESULTS / "text_sets.md") else None
    if out is not None:
        out.write_text(json.dumps(results, indent=1, allow_nan=False) + "\n")
    sets = args.sets.split(",")
    lines = ["# The neighbour and margin methods' defaults on the shared text sets", "",
             machine_header(load_average=True) + "; `python -m studies.text_sets_study` (NumPy, sparkfs's "
             "scikit-learn front).", "",
             "Stratified 3-fold CV (shuffled, random_state 0); each method scored on the training fold with its "
             f"defaults, every training row a query; LinearSVC (C = 1) on the raw counts of its top {TOP}; mean test "
             "accuracy, the difference to anova's in brackets.", "",
             "| method | " + " | ".join(sets) + " | worst diff |", "|---" * (len(sets) + 2) + "|"]
    for name in names:
        diffs = [results[f"{name}|{s}"] - results[f"anova|{s}"] for s in sets]
        cells = [f"{results[f'{name}|{s}']:.3f}" + ("" if name == "anova" else f" ({d:+.3f})")
                 for s, d in zip(sets, diffs)]
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {'-' if name == 'anova' else f'{min(diffs):+.3f}'} |")
    with open(args.out, "w") as handle:
        handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
