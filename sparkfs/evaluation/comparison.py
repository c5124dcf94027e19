"""Comparison of methods over several evaluations: the Fisher-Markov paper's Table II
shape (per data set and classifier, each method's lowest error over the numbers of features) and
its Table V (Wilcoxon signed-rank test of one method against each other one over all the
(data set, classifier) cells). Reads the ``best.csv`` and ``study.json`` of each evaluation
directory (:mod:`sparkfs.evaluation.result_tables`). No pyspark.

Statistics (``statistic=``): ``"error_mean"``, the mean error over folds at the single k with
the lowest mean error (our Table II column); ``"mean_fold_min_error"``, the mean over folds of each
fold's lowest error over k (the paper's Table IV entry, optimistic by construction).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Sequence

import numpy as np
import pandas as pd

from sparkfs.evaluation.significance import TIE_TOLERANCE, wilcoxon_across_datasets

STATISTICS = ("error_mean", "mean_fold_min_error")


def data_set_name(directory) -> str:
    """The data set's name in an evaluation directory: its description's name (the input file's,
    without a data-format extension), else the folder's."""
    study = json.loads((Path(directory) / "study.json").read_text())
    name = str(study.get("description", {}).get("name") or Path(directory).name)
    stem, _, extension = name.rpartition(".")
    return stem if stem and extension.lower() in ("libsvm", "svm", "csv", "parquet", "txt") else name


def best_errors(directories: Sequence) -> pd.DataFrame:
    """One row per (data set, method, classifier) of the evaluations: best k and both statistics."""
    frames = []
    for directory in directories:
        path = Path(directory) / "best.csv"
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist; finish the evaluation (or run sparkfs report) first")
        best = pd.read_csv(path)
        frames.append(best.assign(data_set=data_set_name(directory))[
            ["data_set", "method", "classifier", "best_k", *STATISTICS]])
    names = [frame["data_set"].iloc[0] for frame in frames if not frame.empty]
    if len(set(names)) != len(names):
        raise ValueError(f"two evaluations have the same data set name: {names}")
    return pd.concat(frames, ignore_index=True)


def lowest_error_table(best: pd.DataFrame, statistic: str = "error_mean",
                       methods: Optional[Sequence[str]] = None) -> pd.DataFrame:
    """Table II's shape: rows (data set, classifier), one column per method, the error in %."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    methods = list(methods or dict.fromkeys(best["method"]))
    table = best.pivot_table(index=["data_set", "classifier"], columns="method", values=statistic, sort=False)
    return (100.0 * table.reindex(columns=methods)).reset_index()


def wilcoxon_table(best: pd.DataFrame, reference: str, statistic: str = "error_mean") -> pd.DataFrame:
    """Table V: ``reference`` against each other method over the (data set, classifier) cells
    both have. ``wins`` counts cells where ``reference`` has the lower error (ties within
    1e-12 apart). The p-value is NaN when every difference is zero."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}, got {statistic!r}")
    if reference not in set(best["method"]):
        raise ValueError(f"the reference method {reference!r} is not among {sorted(set(best['method']))}")
    cells = best.pivot_table(index=["data_set", "classifier"], columns="method", values=statistic)
    rows: List[dict] = []
    for other in dict.fromkeys(best["method"]):
        if other == reference:
            continue
        pair = cells[[reference, other]].dropna()
        difference = (pair[reference] - pair[other]).to_numpy()
        nonzero = np.abs(difference) > TIE_TOLERANCE
        if nonzero.any():
            test = wilcoxon_across_datasets(pair[reference].to_numpy(), pair[other].to_numpy())
            statistic_value, p_value = test.statistic, test.p_value
        else:
            statistic_value, p_value = np.nan, np.nan
        rows.append({"method_a": reference, "method_b": other, "cells": int(len(pair)),
                     "wins": int(np.sum(difference < -TIE_TOLERANCE)), "ties": int(np.sum(~nonzero)),
                     "losses": int(np.sum(difference > TIE_TOLERANCE)),
                     "mean_error_a": float(pair[reference].mean()), "mean_error_b": float(pair[other].mean()),
                     "wilcoxon_statistic": statistic_value, "p_value": p_value})
    return pd.DataFrame(rows)


def markdown_table(frame: pd.DataFrame, digits: int = 2, bold_lowest: bool = False) -> str:
    """A GitHub-flavoured Markdown table of ``frame``; with ``bold_lowest`` the lowest number of
    each row (over its float columns, within 1e-12) is in bold, as the paper marks the best."""
    lines = ["| " + " | ".join(str(c) for c in frame.columns) + " |", "|" + "---|" * len(frame.columns)]
    for _, row in frame.iterrows():
        numbers = [v for v in row.to_numpy() if isinstance(v, (float, np.floating)) and not np.isnan(v)]
        lowest = min(numbers) if numbers and bold_lowest else None
        cells = []
        for value in row.to_numpy():
            if isinstance(value, (float, np.floating)):
                text = "-" if np.isnan(value) else f"{value:.{digits}f}"
                if lowest is not None and not np.isnan(value) and value <= lowest + TIE_TOLERANCE:
                    text = f"**{text}**"
                cells.append(text)
            else:
                cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
