"""The selection for the next job on Spark Connect: `select` writes its model and, with `--write-reduced`,
the sliced rows; `apply` slices new rows with the saved model; the vectors are the input's columns at the
selected indices and carry their names."""

import json

import numpy as np
import pandas as pd

from sparkfs.cli import main

#: The methods this module runs on Connect (tests/test_method_registry.py checks `sparkfs methods` says so).
CONNECT_METHODS = ["anova"]


def _csv(path, rows, seed):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(rows, 5)), 3)
    y = (X[:, 1] - X[:, 3] > 0).astype(int)
    pd.DataFrame(X, columns=["a", "b", "c", "d", "e"]).assign(label=y).to_csv(path, index=False)
    return X


def _sliced(spark, path):
    rows = spark.read.parquet(str(path)).collect()
    return sorted(tuple(row["features"].toArray().tolist()) for row in rows)


def test_select_and_apply_on_connect(spark, tmp_path):
    X = _csv(tmp_path / "train.csv", 30, 1)
    new = _csv(tmp_path / "new.csv", 7, 2)
    sel, reduced, applied = tmp_path / "sel", tmp_path / "reduced", tmp_path / "applied"
    common = ["--format", "csv", "--label-col", "label"]
    assert main(["select", "--input", str(tmp_path / "train.csv"), *common, "--method", "anova", "--num-features",
                 "2", "--output", str(sel), "--write-reduced", str(reduced)]) == 0
    summary = json.loads((sel / "summary.json").read_text())
    selected = summary["selected_indices"]
    assert summary["selected_names"] == [["a", "b", "c", "d", "e"][i] for i in selected]
    assert _sliced(spark, reduced) == sorted(tuple(row) for row in X[:, selected].tolist())
    assert main(["apply", "--model", str(sel), "--input", str(tmp_path / "new.csv"), *common,
                 "--output", str(applied)]) == 0
    assert _sliced(spark, applied) == sorted(tuple(row) for row in new[:, selected].tolist())
    frame = spark.read.parquet(str(applied))
    names = [attribute["name"] for attribute in frame.schema["features"].metadata["ml_attr"]["attrs"]["numeric"]]
    assert names == summary["selected_names"]
    assert json.loads((applied / "_summary.json").read_text())["n_rows"] == 7
