"""The tables and files of an evaluation from its saved (method, fold) results:
``results.parquet``, ``summary.csv``, ``best.csv``, ``significance.csv``, ``timings.csv``,
``ties.csv``, ``selection_auc.csv``, the plots and ``plots.json``. The choices behind the numbers are the
notes of :mod:`sparkfs.evaluation.cross_validation`."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import List, Optional

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from sparkfs.evaluation.recommendation import recommendation_table, write_recommendation
from sparkfs.evaluation.report import atomic_write_bytes, feature_names, write_plots
from sparkfs.evaluation.significance import TIE_TOLERANCE, paired_t_test_across_folds

# Summaries -------------------------------------------------------------------------------------


def _means(results: pd.DataFrame) -> pd.DataFrame:
    frame = results.assign(error=1.0 - results["accuracy"], n_selected=results.get("n_selected", results["k"]))
    return frame.groupby(["method", "classifier", "k"], sort=False).agg(
        folds=("accuracy", "size"), accuracy_mean=("accuracy", "mean"), accuracy_std=("accuracy", "std"),
        macro_f1_mean=("macro_f1", "mean"), macro_f1_std=("macro_f1", "std"),
        error_mean=("error", "mean"), error_std=("error", "std"),
        n_selected_mean=("n_selected", "mean")).reset_index()


def best_k_table(results: pd.DataFrame) -> pd.DataFrame:
    """Per method x classifier: the k of lowest mean error (ties to the smaller k) and its means,
    plus the paper's mean over folds of each fold's smallest error (module note 3)."""
    means, rows = _means(results), []
    for (method, classifier), group in means.groupby(["method", "classifier"], sort=False):
        lowest = group["error_mean"].min()
        chosen = group[group["error_mean"] <= lowest + TIE_TOLERANCE].sort_values("k").iloc[0]
        runs = results[(results["method"] == method) & (results["classifier"] == classifier)]
        fold_min_error = 1.0 - runs.groupby(["repeat", "fold"])["accuracy"].max()
        rows.append({"method": method, "classifier": classifier, "best_k": int(chosen["k"]),
                     "error_mean": chosen["error_mean"], "error_std": chosen["error_std"],
                     "accuracy_mean": chosen["accuracy_mean"], "macro_f1_mean": chosen["macro_f1_mean"],
                     "mean_fold_min_error": float(fold_min_error.mean()),
                     "fold_min_error_std": float(fold_min_error.std())})
    return pd.DataFrame(rows)


def summary_table(results: pd.DataFrame, selection_auc: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """Mean and std over folds and repeats per method x classifier x k.

    ``results`` has the columns of ``results.parquet``; ``selection_auc`` (method, repeat, fold,
    auc) adds each method's mean and std AUC (NaN without probes). ``best_k`` marks the rows of
    :func:`best_k_table`.
    """
    table = _means(results)
    best = best_k_table(results)[["method", "classifier", "best_k"]]
    table = table.merge(best, on=["method", "classifier"], how="left", sort=False)
    table["best_k"] = table["k"] == table["best_k"]
    if selection_auc is not None and not selection_auc.empty:
        auc = selection_auc.groupby("method", sort=False)["auc"].agg(selection_auc_mean="mean",
                                                                     selection_auc_std="std").reset_index()
        return table.merge(auc, on="method", how="left", sort=False)
    return table.assign(selection_auc_mean=np.nan, selection_auc_std=np.nan)


def engine_table(results: pd.DataFrame) -> pd.DataFrame:
    """Which engine classified: per classifier and engine, the (method, repeat, fold) results it ran."""
    runs = results.drop_duplicates(["method", "repeat", "fold", "classifier", "engine"])
    return runs.groupby(["classifier", "engine"], sort=False).size().reset_index(name="fold_results")


def significance_table(results: pd.DataFrame) -> pd.DataFrame:
    """Paired t-tests across folds of every pair of methods, per classifier, each at its best k."""
    best, rows = best_k_table(results), []
    for classifier, chosen in best.groupby("classifier", sort=False):
        errors = {}
        for method, k in zip(chosen["method"], chosen["best_k"]):
            runs = results[(results["method"] == method) & (results["classifier"] == classifier) & (results["k"] == k)]
            errors[method] = (k, 1.0 - runs.set_index(["repeat", "fold"])["accuracy"].sort_index())
        names = list(errors)
        for i, first in enumerate(names):
            for second in names[i + 1:]:
                (k_a, a), (k_b, b) = errors[first], errors[second]
                if len(a) < 2:
                    continue
                paired = b.reindex(a.index).to_numpy()
                test = paired_t_test_across_folds(a.to_numpy(), paired)
                rows.append({"classifier": classifier, "method_a": first, "k_a": k_a, "method_b": second, "k_b": k_b,
                             "error_a": float(a.mean()), "error_b": float(b.mean()), "pairs": test.pairs,
                             "t_statistic": test.statistic, "p_value": test.p_value,
                             "note": untested_reason(a.to_numpy(), paired) if np.isnan(test.p_value) else ""})
    return pd.DataFrame(rows, columns=["classifier", "method_a", "k_a", "method_b", "k_b", "error_a", "error_b",
                                       "pairs", "t_statistic", "p_value", "note"])


def untested_reason(errors_a, errors_b) -> str:
    """Why a pair has no t-test (NaN statistic): the same errors in every fold, or the same
    difference in every fold (no variance to test against)."""
    if np.allclose(errors_a, errors_b, rtol=0, atol=TIE_TOLERANCE):
        return "identical errors in every fold: no test"
    return "the same difference in every fold (no variance): no test"


def ties_table(results: pd.DataFrame, scores: dict, greedy_ties: Optional[dict] = None) -> pd.DataFrame:
    """Per method and k: in how many folds the top k was decided by ties (the fold's ranking flat,
    or features tied at the cut with some selected by position), from each fold's saved scores.
    For QFS, whose selection per k is its own min-cut subset, this checks the ranking it reports.
    For a greedy method (``greedy_ties``: method -> per fold, its tie sizes or None, see
    :func:`greedy_tie_sizes`) a fold also counts when one of its first k steps was tied, with the
    number of candidates tied there."""
    from sparkfs.core.selection import select_features, ties_at_cut

    rows = []
    for method, fold_scores in scores.items():
        fold_ties = (greedy_ties or {}).get(method) or [None] * len(fold_scores)
        for k in sorted(set(results.loc[results["method"] == method, "k"].tolist())):
            checks = [ties_at_cut(row, select_features(row, num_features=int(k), warn_if_all=False), by_count=True)
                      for row in fold_scores]
            tied = [max(check["tied_at_cut"], _largest_greedy_tie(sizes, int(k)))
                    for check, sizes in zip(checks, fold_ties)]
            rows.append({"method": method, "k": int(k), "folds": len(checks),
                         "folds_flat": sum(check["flat"] for check in checks),
                         "folds_tied_at_cut": sum(bool(count) for count in tied),
                         "most_tied_at_cut": max(tied)})
    return pd.DataFrame(rows, columns=["method", "k", "folds", "folds_flat", "folds_tied_at_cut", "most_tied_at_cut"])


def _largest_greedy_tie(tie_sizes, k: int) -> int:
    """The most candidates tied at one of the first k greedy steps (0: none tied)."""
    if tie_sizes is None:
        return 0
    largest = int(np.max(tie_sizes[:k], initial=1))
    return largest if largest > 1 else 0


def greedy_tie_sizes(directory, config: Optional[dict] = None) -> dict:
    """``{method: [per fold: its greedy tie sizes, or None]}`` (the folds in :func:`load_results`' order)."""
    directory = Path(directory)
    config = config or _read_study(directory)
    sizes: dict = {}
    for method in config["methods"]:
        for repeat, fold in config["fold_keys"]:
            with np.load(fold_path(directory, method, repeat, fold), allow_pickle=False) as stored:
                sizes.setdefault(method, []).append(stored["greedy_tie_sizes"] if "greedy_tie_sizes" in stored.files
                                                    else None)
    return sizes


def fold_path(directory: Path, method: str, repeat: int, fold: int) -> Path:
    return Path(directory) / "folds" / method / f"repeat-{repeat:03d}-fold-{fold:03d}.npz"


def _read_study(directory) -> dict:
    study_file = Path(directory) / "study.json"
    if not study_file.exists():
        raise FileNotFoundError(f"{study_file} does not exist; run the evaluation first")
    return json.loads(study_file.read_text())


def load_results(directory, config: Optional[dict] = None):
    """``(results, selection_auc, timings, scores)`` from the saved fold files.

    ``results``: the rows of ``results.parquet``; ``selection_auc``: method, repeat, fold, auc
    (empty without probes); ``timings``: method, repeat, fold, selection_seconds,
    classifier_seconds; ``scores``: ``{method: (folds, n_features) array}``.
    """
    directory = Path(directory)
    config = config or _read_study(directory)
    keys = [(method, r, f) for method in config["methods"] for r, f in config["fold_keys"]]
    missing = [key for key in keys if not fold_path(directory, *key).exists()]
    if missing:
        raise RuntimeError(f"the evaluation in {directory} misses {len(missing)} of {len(keys)} (method, fold) "
                           f"results (first: {missing[:3]}); run it again to finish")
    parts, aucs, timings, scores = [], [], [], {}
    for method, repeat, fold in keys:
        with np.load(fold_path(directory, method, repeat, fold), allow_pickle=False) as stored:
            saved = {name: stored[name] for name in stored.files}
        parts.append(pd.DataFrame({"method": method, "repeat": repeat, "fold": fold, "classifier": saved["classifier"],
                                   "k": saved["k"], "n_selected": saved.get("n_selected", saved["k"]),
                                   "test_rows": int(saved["test_rows"]),
                                   "engine": saved.get("engine", "scikit-learn"),
                                   "accuracy": saved["accuracy"], "macro_f1": saved["macro_f1"]}))
        if np.isfinite(saved["selection_auc"]):
            aucs.append({"method": method, "repeat": repeat, "fold": fold, "auc": float(saved["selection_auc"])})
        timings.append({"method": method, "repeat": repeat, "fold": fold,
                        "selection_seconds": float(saved["selection_seconds"]),
                        "classifier_seconds": float(saved["classifier_seconds"])})
        scores.setdefault(method, []).append(saved["scores"])
    results = pd.concat(parts, ignore_index=True).astype({"classifier": str, "k": np.int64, "n_selected": np.int64,
                                                          "engine": str})
    return (results, pd.DataFrame(aucs, columns=["method", "repeat", "fold", "auc"]), pd.DataFrame(timings),
            {method: np.vstack(rows) for method, rows in scores.items()})


_RESULTS_SCHEMA = pa.schema([("method", pa.string()), ("classifier", pa.string()), ("k", pa.int32()),
                             ("n_selected", pa.int32()), ("repeat", pa.int32()), ("fold", pa.int32()),
                             ("test_rows", pa.int32()),
                             ("accuracy", pa.float64()), ("macro_f1", pa.float64()), ("engine", pa.string())])


def write_outputs(directory: Path, config: dict) -> List[Path]:
    results, selection_auc, timings, scores = load_results(directory, config)
    summary, best = summary_table(results, selection_auc), best_k_table(results)
    table = pa.Table.from_pandas(results[_RESULTS_SCHEMA.names], schema=_RESULTS_SCHEMA, preserve_index=False)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    written = [atomic_write_bytes(directory / "results.parquet", buffer.getvalue())]
    frames = {"summary.csv": summary, "best.csv": best, "significance.csv": significance_table(results),
              "timings.csv": timings, "engines.csv": engine_table(results),
              "ties.csv": ties_table(results, scores, greedy_tie_sizes(directory, config))}
    if not selection_auc.empty:
        frames["selection_auc.csv"] = selection_auc
    for name, frame in frames.items():
        written.append(atomic_write_bytes(directory / name, frame.to_csv(index=False).encode()))
    table = recommendation_table(best, config["methods"], config["classifiers"])
    written.append(write_recommendation(directory, table, feature_names(config), config.get("probe_features") or []))
    return written + write_plots(directory, config, summary, selection_auc, scores)


def write_results(directory) -> List[Path]:
    """Write ``results.parquet``, ``summary.csv``, ``best.csv``, ``significance.csv``,
    ``timings.csv``, ``engines.csv``, ``ties.csv`` (``selection_auc.csv`` with probes), the PNG plots and ``plots.json``
    from the saved fold files of ``directory`` (all (method, fold) pairs must be saved); returns the paths.
    """
    return write_outputs(Path(directory), _read_study(directory))
