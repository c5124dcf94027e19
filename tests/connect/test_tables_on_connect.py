"""A nightly job's tables on Spark Connect: `select` reads a catalog table and appends its selection to
an output table; `apply` reads tomorrow's rows from a table and writes them, reduced, to a table. The
local server's warehouse is a temporary folder (conftest.py)."""

import json

import numpy as np
import pandas as pd

from sparkfs.cli import main

#: The methods this module runs on Connect (tests/test_method_registry.py checks `sparkfs methods` says so).
CONNECT_METHODS = ["anova"]


def _parquet(spark, path, rows, seed):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(rows, 5)), 3)
    y = (X[:, 0] - X[:, 2] > 0).astype(float)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d", "e"]).assign(label=y)
    spark.createDataFrame(frame).write.parquet(str(path))
    return X


def test_select_and_apply_read_and_write_tables_on_connect(spark, warehouse, tmp_path):
    assert warehouse.name in spark.conf.get("spark.sql.warehouse.dir")  # the server started with it
    train, new = _parquet(spark, tmp_path / "train", 40, 5), _parquet(spark, tmp_path / "new", 8, 6)
    spark.sql("CREATE DATABASE IF NOT EXISTS nightly")
    spark.sql(f"CREATE TABLE nightly.docs USING parquet LOCATION '{tmp_path / 'train'}'")
    try:
        assert main(["select", "--input-table", "nightly.docs", "--method", "anova", "--num-features", "2",
                     "--output", str(tmp_path / "sel"), "--output-table", "nightly.selection",
                     "--run-id", "r1"]) == 0
        summary = json.loads((tmp_path / "sel" / "summary.json").read_text())
        selected = summary["selected_indices"]
        rows = spark.table("nightly.selection").toPandas().sort_values("index")
        assert set(rows["run_id"]) == {"r1"} and rows["name"].tolist() == ["a", "b", "c", "d", "e"]
        assert sorted(rows.loc[rows["selected"], "index"]) == sorted(selected)
        assert spark.table("nightly.selection_runs").count() == 1
        assert main(["apply", "--model", str(tmp_path / "sel"), "--input-table", f"parquet.`{tmp_path / 'new'}`",
                     "--output-table", "nightly.reduced", "--run-id", "r1"]) == 0
        reduced = spark.table("nightly.reduced")
        assert sorted(tuple(row["features"].toArray().tolist()) for row in reduced.collect()) == \
            sorted(tuple(row) for row in new[:, selected].tolist())
        assert reduced.select("run_id").distinct().collect()[0][0] == "r1"
        assert train.shape == (40, 5)
    finally:
        spark.sql("DROP DATABASE IF EXISTS nightly CASCADE")
