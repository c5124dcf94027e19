"""The recommendation of an evaluation: per classifier, the method and k of lowest mean
error, and the features that method selects when fitted on all rows.

Cross-validation says which (method, k) to use; it does not give the features to use, since each
fold selected its own. So after the folds, ``sparkfs evaluate`` fits each recommended method once
more on every row of ``--input`` (the rows of all training folds together) and saves its
selection for every k in ``all-rows/<method>.npz`` (:func:`fit_recommended_on_all_rows`, resumable
like the folds: a saved method is not fitted again). :func:`recommendation_document` turns the
best-k table and those files into ``recommendation.json``, the first section of the report.

Choices
-------
1. **Which (method, k) per classifier**: the lowest mean error of ``best.csv``; ties (within
   1e-12) go to the smaller k, then to the method listed first in ``--methods``.
2. **The all-rows fit** uses the method's params of the evaluation and, for randomised methods,
   a seed of its own (:func:`sparkfs.evaluation.cross_validation.fold_seed` of the all-rows fold).
   With ``--probes`` it sees the probes too, as the folds did: a probe among the final features
   is shown as such.
3. **An evaluation directory without the all-rows files** (written before this module, or a
   recommended method added by a later ``--methods``) still gets its recommendation, with
   ``features`` null and a note saying how to get them (run the same ``evaluate`` again).

No pyspark; no import of the study module (it imports this one).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np
import pandas as pd

from sparkfs.core.selection import rank_features
from sparkfs.evaluation.stability_runs import atomic_write, staging_leftovers
from sparkfs.io.strict_json import dumps as strict_dumps

#: Folder of the all-rows selections, one ``<method>.npz`` each (scores, and the features per k).
ALL_ROWS_FOLDER = "all-rows"
RECOMMENDATION_FILE = "recommendation.json"
_TIE_TOLERANCE = 1e-12
RULE = ("per classifier, the method and k of lowest mean test error over the folds (ties to the smaller k, then "
        "to the method listed first); features: that method fitted on all rows, asked for k features")


def recommendation_table(best: pd.DataFrame, methods: Sequence[str], classifiers: Sequence[str]) -> pd.DataFrame:
    """One row per classifier (in ``classifiers`` order): classifier, method, k, error_mean, error_std.

    ``best`` has the columns of :func:`~sparkfs.evaluation.result_tables.best_k_table`; ties as in
    the module note 1. Classifiers without a row in ``best`` are left out.
    """
    order = {method: position for position, method in enumerate(methods)}
    rows = []
    for classifier in classifiers:
        group = best[best["classifier"] == classifier]
        if group.empty:
            continue
        lowest = group["error_mean"].min()
        tied = group[group["error_mean"] <= lowest + _TIE_TOLERANCE]
        tied = tied.assign(_order=tied["method"].map(lambda m: order.get(m, len(order))))
        chosen = tied.sort_values(["best_k", "_order"], kind="mergesort").iloc[0]
        rows.append({"classifier": classifier, "method": str(chosen["method"]), "k": int(chosen["best_k"]),
                     "error_mean": float(chosen["error_mean"]), "error_std": float(chosen.get("error_std", np.nan))})
    return pd.DataFrame(rows, columns=["classifier", "method", "k", "error_mean", "error_std"])


def all_rows_path(directory, method: str) -> Path:
    return Path(directory) / ALL_ROWS_FOLDER / f"{method}.npz"


def fit_recommended_on_all_rows(directory, methods: Sequence[str], all_rows_fold, feature_counts: Sequence[int],
                                n_features: int, rank_fold: Callable,
                                progress: Optional[Callable[[str], None]] = None) -> List[str]:
    """Fit each of ``methods`` on all rows (``rank_fold(method, all_rows_fold)``, which returns
    scores or a ``FoldSelection``) unless already saved; save its scores and its selection for
    every k of ``feature_counts``. Returns the methods fitted now."""
    folder = Path(directory) / ALL_ROWS_FOLDER
    for stale in staging_leftovers(folder, "*.npz"):  # left by a killed process
        stale.unlink()
    fitted = []
    for method in methods:
        path = all_rows_path(directory, method)
        if path.exists():
            continue
        if progress is not None:
            progress(f"fitting {method} on all {all_rows_fold.train.size} rows (the recommended method's features)")
        picked = rank_fold(method, all_rows_fold)
        scores = np.asarray(getattr(picked, "scores", picked), dtype=np.float64)
        if scores.shape != (n_features,):
            raise ValueError(f"rank_fold returned scores of shape {scores.shape} for {method!r} on all rows; "
                             f"expected ({n_features},)")
        subsets = getattr(picked, "subsets", None)
        if subsets is None:
            ranking = rank_features(scores)
            subsets = {k: ranking[:k] for k in feature_counts}
        arrays = {"scores": scores, "feature_counts": np.asarray(list(feature_counts), dtype=np.int64)}
        arrays.update({f"k{int(k)}": np.asarray(subsets[k], dtype=np.int64) for k in feature_counts})
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda stream, buffer=buffer: stream.write(buffer.getvalue()))
        fitted.append(method)
    return fitted


def _all_rows_selection(directory, method: str, k: int) -> Optional[np.ndarray]:
    path = all_rows_path(directory, method)
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as stored:
        return stored[f"k{k}"] if f"k{k}" in stored.files else None


def recommendation_document(directory, table: pd.DataFrame, names: Sequence[str],
                            probe_features: Sequence[int] = ()) -> Dict:
    """The content of ``recommendation.json``: the rule and, per row of :func:`recommendation_table`,
    the features of the all-rows fit (indices and names, in the method's order; null when not fitted)."""
    probes = set(int(j) for j in probe_features or [])
    rows = []
    for row in table.itertuples(index=False):
        selected = _all_rows_selection(directory, row.method, int(row.k))
        entry = {"classifier": row.classifier, "method": row.method, "k": int(row.k),
                 "error_mean": float(row.error_mean),
                 "error_std": None if not np.isfinite(row.error_std) else float(row.error_std)}
        if selected is None:
            entry.update(features=None, feature_indices=None, note=f"{row.method} was not fitted on all rows in this "
                         "directory: run the same `sparkfs evaluate` command again to fit it")
        else:
            entry.update(features=[str(names[j]) for j in selected], feature_indices=[int(j) for j in selected],
                         probes_selected=sum(int(j) in probes for j in selected))
        rows.append(entry)
    return {"rule": RULE, "recommendations": rows}


def write_recommendation(directory, table: pd.DataFrame, names: Sequence[str],
                         probe_features: Sequence[int] = ()) -> Path:
    document = recommendation_document(directory, table, names, probe_features)
    return atomic_write(Path(directory) / RECOMMENDATION_FILE,
                        lambda stream: stream.write(strict_dumps(document, indent=2).encode()))


def read_recommendation(directory) -> Optional[Dict]:
    path = Path(directory) / RECOMMENDATION_FILE
    return json.loads(path.read_text()) if path.exists() else None


def recommendation_lines(document: Dict, most_names: int = 10) -> List[str]:
    """One plain line per classifier of ``recommendation.json``'s content (the command's output)."""
    lines = []
    for entry in document["recommendations"]:
        line = (f"{entry['classifier']}: {entry['method']} with k={entry['k']} "
                f"(mean error {100 * entry['error_mean']:.2f}%)")
        names = entry.get("features")
        if names is None:
            lines.append(f"{line}; {entry.get('note', 'not fitted on all rows')}")
            continue
        shown = ", ".join(names[:most_names]) + (f", ... ({len(names)} in all)" if len(names) > most_names else "")
        lines.append(f"{line}; features on all rows: {shown}")
    return lines
