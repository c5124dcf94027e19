"""Which default scaling should LFS (and QFS, whose candidates are LFS's top features) have?

Issue 32: on tf-idf term matrices LFS with the paper's setting (gamma = -0.5, the data as given)
ranks near chance, because theta_j = between-class spread - gamma * total spread rewards a term's
raw magnitude and variance (frequent terms), while the same statistics on standardised features
rank as anova does. On one microarray set the raw default was better. This study measures the
choice on every shared set, in NumPy (LFS is a closed formula of the class moments, the same
``sparkfs.core`` functions the selector runs; no Spark is needed to rank):

* **accuracy**: stratified 3-fold cross-validation; on each training fold LFS ranks the features
  (scaling "none", "standard", "range"; gamma -0.5) and anova (F) as the baseline; a linear SVM
  (scikit-learn ``LinearSVC``, C = 1, on standardised selected columns) is trained on the top k
  and tested on the held-out fold; k = 100 where a set has at least 400 features, else a quarter of
  them;
* **informative terms**: on a term corpus from ``benchmarks/term_corpus.py`` (its generator knows
  the class-informative terms) the informative terms among each ranking's top (chance:
  top x informative / terms; the top holds as many terms as are informative).

    .venv/bin/python -m studies.lfs_scaling_study [--quick]

Writes ``benchmarks/results/lfs_scaling.md`` (and ``.json``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from benchmarks.common import DATA, RESULTS, load_npz
from sparkfs.core.fisher_markov import affine_class_moments, markov_coefficients
from sparkfs.core.scaling import feature_scaling, sample_std
from sparkfs.core.univariate import anova_f_values

TEXT = ["BASEHOCK", "PCMAC", "tr11", "tr12", "tr45"]
MICROARRAY = ["ALLAML", "leukemia_S3", "Leukemia1", "Leukemia2", "colon", "Prostate_GE", "SRBCT", "GLIOMA",
              "lung_discrete", "lymphoma", "nci9", "9_Tumors"]
OTHER = ["sonar", "ionosphere", "pima_diabetes", "heart_statlog", "german_numeric", "glass", "segment", "madelon",
         "splice", "mfeat", "waveform21", "breast_w", "lrs_spectrometer"]
SCALINGS = ("none", "standard", "range")


def class_moments(X, y, num_classes: int):
    """Per-class column sums and sums of squares, class counts, column minima and maxima."""
    indicator = sp.csr_matrix((np.ones(y.size), (y, np.arange(y.size))), shape=(num_classes, y.size))
    squared = X.multiply(X) if sp.issparse(X) else X * X
    sums, sum_squares = indicator @ X, indicator @ squared
    if sp.issparse(sums):
        sums, sum_squares = sums.toarray(), sum_squares.toarray()
    sums, sum_squares = np.asarray(sums), np.asarray(sum_squares)
    counts = np.bincount(y, minlength=num_classes).astype(np.float64)
    minimum = np.asarray(X.min(axis=0).todense()).ravel() if sp.issparse(X) else X.min(axis=0)
    maximum = np.asarray(X.max(axis=0).todense()).ravel() if sp.issparse(X) else X.max(axis=0)
    return sums, sum_squares, counts, minimum, maximum


def lfs_scores(X, y, scaling: str, gamma: float = -0.5) -> np.ndarray:
    """LFS theta (eq. 19) with the selector's scaling applied to the moments, as FisherMarkovSelector does."""
    num_classes = int(y.max()) + 1
    sums, sum_squares, counts, minimum, maximum = class_moments(X, y, num_classes)
    if scaling != "none":
        total = counts.sum()
        mean = sums.sum(axis=0) / total
        std = sample_std(total, sums.sum(axis=0), sum_squares.sum(axis=0))
        offset, scale = feature_scaling(scaling, minimum=minimum, maximum=maximum, mean=mean, std=std)
        sums, sum_squares = affine_class_moments(sums, counts, sum_squares, offset, scale)
    return markov_coefficients(sums, counts, sum_squares.sum(axis=0), gamma)


def anova_scores(X, y) -> np.ndarray:
    num_classes = int(y.max()) + 1
    sums, sum_squares, counts, _, _ = class_moments(X, y, num_classes)
    return np.nan_to_num(anova_f_values(counts, sums, sum_squares), nan=0.0)


def top(scores: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-scores, kind="mergesort")[:k]


def cv_accuracy(X, y, k: int, folds: int = 3, seed: int = 0):
    """Mean held-out accuracy of a linear SVM on each ranking's top k, one value per ranking."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    rankers = {f"lfs-{scaling}": (lambda A, b, s=scaling: lfs_scores(A, b, s)) for scaling in SCALINGS}
    rankers["anova"] = anova_scores
    smallest = np.bincount(y).min()
    splitter = StratifiedKFold(n_splits=min(folds, int(smallest)) if smallest >= 2 else 2, shuffle=True,
                               random_state=seed)
    accuracy = {name: [] for name in rankers}
    for train, test in splitter.split(np.zeros(y.size), y):
        y_train = np.unique(y[train], return_inverse=True)[1]
        for name, ranker in rankers.items():
            chosen = top(ranker(X[train], y_train), k)
            A_train, A_test = X[train][:, chosen], X[test][:, chosen]
            if sp.issparse(A_train):
                A_train, A_test = A_train.toarray(), A_test.toarray()
            scaler = StandardScaler().fit(A_train)
            model = LinearSVC(C=1.0, max_iter=5000, dual="auto").fit(scaler.transform(A_train), y[train])
            accuracy[name].append(float(np.mean(model.predict(scaler.transform(A_test)) == y[test])))
    return {name: float(np.mean(values)) for name, values in accuracy.items()}


def term_corpus_quality(num_docs: int, num_terms: int):
    """Informative terms among each ranking's top ``informative`` (as many as there are: a perfect
    ranking finds them all)."""
    from benchmarks.term_corpus import informative_terms, term_corpus

    matrix, labels = term_corpus(num_docs, num_terms, seed=7)
    informative = informative_terms(num_terms).ravel()
    top_k = int(informative.size)
    counts = {}
    for scaling in SCALINGS:
        counts[f"lfs-{scaling}"] = int(np.isin(top(lfs_scores(matrix, labels, scaling), top_k), informative).sum())
    counts["anova"] = int(np.isin(top(anova_scores(matrix, labels), top_k), informative).sum())
    return {"docs": num_docs, "terms": num_terms, "informative": int(informative.size),
            "chance": top_k * informative.size / num_terms, "top_k": top_k, "informative_in_top": counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="the text sets and two others only")
    parser.add_argument("--output", default=str(RESULTS / "lfs_scaling.md"))
    args = parser.parse_args()
    groups = {"text": TEXT, "microarray": MICROARRAY, "other": OTHER}
    if args.quick:
        groups = {"text": TEXT, "microarray": MICROARRAY[:1], "other": OTHER[:1]}
    started = time.perf_counter()
    rows = []
    for group, names in groups.items():
        for name in names:
            if not (DATA / f"{name}.npz").exists():
                continue
            X, y = load_npz(name)
            k = 100 if X.shape[1] >= 400 else max(1, X.shape[1] // 4)
            accuracy = cv_accuracy(X, y, k)
            rows.append({"set": name, "group": group, "n": X.shape[0], "p": X.shape[1], "k": k, **accuracy})
            print(name, {key: round(value, 3) for key, value in accuracy.items()}, flush=True)
    corpus = term_corpus_quality(*((5000, 5000) if args.quick else (20000, 20000)))
    print(corpus, flush=True)
    Path(args.output).with_suffix(".json").write_text(json.dumps({"sets": rows, "term_corpus": corpus}, indent=1))
    Path(args.output).write_text(render(rows, corpus, time.perf_counter() - started))


def render(rows, corpus, seconds: float) -> str:
    names = [f"lfs-{scaling}" for scaling in SCALINGS] + ["anova"]
    lines = ["# LFS's default scaling: linear-SVM accuracy on each ranking's top k, and informative terms",
             "", "Made by `studies/lfs_scaling_study.py` (NumPy, no Spark; "
             f"{seconds:.0f} s). Stratified 3-fold CV, ranking on the training fold, linear SVM "
             "(C = 1, standardised selected columns) on its top k (100, or a quarter of the features when a set has "
             "fewer than 400). gamma = -0.5 throughout.", "",
             "| set | group | n | p | k | " + " | ".join(names) + " | best LFS - anova |",
             "|---|---|---:|---:|---:|" + "---:|" * len(names) + "---:|"]
    for row in rows:
        best_lfs = max(row[name] for name in names[:-1])
        lines.append(f"| {row['set']} | {row['group']} | {row['n']} | {row['p']} | {row['k']} | "
                     + " | ".join(f"{row[name]:.3f}" for name in names) + f" | {best_lfs - row['anova']:+.3f} |")
    lines += ["", "Mean accuracy by group:", "", "| group | " + " | ".join(names) + " |",
              "|---|" + "---:|" * len(names)]
    for group in dict.fromkeys(row["group"] for row in rows):
        members = [row for row in rows if row["group"] == group]
        lines.append(f"| {group} ({len(members)}) | "
                     + " | ".join(f"{np.mean([row[name] for row in members]):.3f}" for name in names) + " |")
    lines += ["", f"Term corpus ({corpus['docs']:,} documents x {corpus['terms']:,} terms, "
              f"{corpus['informative']:,} informative; `benchmarks/term_corpus.py`, seed 7): informative terms in the "
              f"top {corpus['top_k']:,} (chance {corpus['chance']:.0f}):", "",
              "| " + " | ".join(names) + " |", "|" + "---:|" * len(names),
              "| " + " | ".join(str(corpus["informative_in_top"][name]) for name in names) + " |", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
