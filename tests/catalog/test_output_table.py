"""`select --output-table NAME`: each run appends its features rows to NAME and its summary row to NAME_runs,
partitioned by run id; `--if-exists fail|skip|overwrite` act on the run id; a table sparkfs did not create, a
bad name, and a run that fails leave the tables as they were.

Run on the suite's session, whose warehouse is a temporary directory (tests/conftest.py).
"""

import json
import os

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from tests.helpers import refused

DATABASE = "sparkfs_output_tables"


@pytest.fixture(scope="module")
def heart(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("heart")
    rng = np.random.default_rng(9)
    X = np.round(rng.normal(size=(50, 5)), 3)
    y = (X[:, 1] - X[:, 3] > 0).astype(int)
    pd.DataFrame(X, columns=list("abcde")).assign(label=y).to_csv(folder / "heart.csv", index=False)
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    yield folder / "heart.csv"
    spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")


def _select(source, out, run_id, *extra, table=f"{DATABASE}.selection"):
    return main(["select", "--input", str(source), "--format", "csv", "--method", "anova", "--num-features", "2",
                 "--master", "local[2]", "--output", str(out), "--output-table", table, "--run-id", run_id, *extra])


def _rows(spark, name):
    return {row["run_id"]: row["n"] for row in spark.table(name).groupBy("run_id").count()
            .withColumnRenamed("count", "n").collect()}


def test_each_run_appends_its_rows_and_reruns_follow_if_exists(spark, heart, tmp_path, capsys):
    features, runs = f"{DATABASE}.selection", f"{DATABASE}.selection_runs"
    assert _select(heart, tmp_path / "r1", "r1") == 0
    assert _select(heart, tmp_path / "r2", "r2", "--num-features", "3") == 0
    assert _rows(spark, features) == {"r1": 5, "r2": 5} and _rows(spark, runs) == {"r1": 1, "r2": 1}
    summary = json.loads((tmp_path / "r1" / "summary.json").read_text())
    assert summary["output_tables"] == {"features": features, "runs": runs}
    row = spark.table(runs).where("run_id = 'r1'").first()
    assert row["selected_names"] == summary["selected_names"] and row["n_selected"] == 2 and row["n_rows"] == 50
    assert json.loads(row["summary"])["selected_indices"] == summary["selected_indices"]
    table = spark.table(features).where("run_id = 'r1'").toPandas().sort_values("index")
    written = pd.read_parquet(tmp_path / "r1" / "features.parquet")
    assert table["name"].tolist() == written["name"].tolist() == list("abcde")
    np.testing.assert_array_equal(table["score"].to_numpy(), written["score"].to_numpy())
    np.testing.assert_array_equal(table["p_value"].to_numpy(), written["p_value"].to_numpy())
    # a run id already there: fail (the default) refuses before the read; skip does nothing
    refused(capsys, _select(heart, tmp_path / "r1-again", "r1"), tmp_path / "r1-again",
            f"--output-table: run r1 is already in table {runs}")
    assert _select(heart, tmp_path / "r1", "r1", "--if-exists", "skip") == 0
    assert "skipped" in capsys.readouterr().err
    # overwrite replaces the run's rows, and only them
    assert _select(heart, tmp_path / "r1", "r1", "--overwrite", "--num-features", "4") == 0
    assert _rows(spark, features) == {"r1": 5, "r2": 5} and _rows(spark, runs) == {"r1": 1, "r2": 1}
    assert spark.table(runs).where("run_id = 'r1'").first()["n_selected"] == 4
    assert spark.table(runs).where("run_id = 'r2'").first()["n_selected"] == 3


def test_skip_refuses_a_run_in_only_one_of_its_outputs(spark, heart, tmp_path, capsys):
    assert _select(heart, tmp_path / "s1", "s1", table=f"{DATABASE}.first") == 0
    out = tmp_path / "elsewhere"
    refused(capsys, _select(heart, out, "s1", "--if-exists", "skip", table=f"{DATABASE}.first"), out,
            f"--if-exists skip: table {DATABASE}.first_runs has run s1 but {out} is no complete output")
    capsys.readouterr()
    assert _select(heart, tmp_path / "s1", "s1", "--if-exists", "skip", table=f"{DATABASE}.second") == 2
    assert "is a complete output but table" in capsys.readouterr().err


def test_a_table_sparkfs_did_not_create_is_refused_and_kept(spark, heart, tmp_path, capsys):
    spark.sql(f"CREATE TABLE {DATABASE}.mine (note STRING) USING parquet")
    spark.sql(f"INSERT INTO {DATABASE}.mine VALUES ('my data')")
    out = tmp_path / "out"
    refused(capsys, _select(heart, out, "m1", table=f"{DATABASE}.mine"), out,
            f"--output-table: table {DATABASE}.mine is not one sparkfs select writes (it has no sparkfs.output "
            "property)")
    assert [row["note"] for row in spark.table(f"{DATABASE}.mine").collect()] == ["my data"]
    assert not spark.catalog.tableExists(f"{DATABASE}.mine_runs")


def test_a_bad_name_is_refused_before_spark(heart, tmp_path, capsys, monkeypatch):
    import sparkfs.spark.session

    monkeypatch.setattr(sparkfs.spark.session, "get_spark", lambda *a, **k: pytest.fail("Spark started"))
    out = tmp_path / "out"
    refused(capsys, _select(heart, out, "b1", table="db.a table"), out, "--output-table 'db.a table' is not a table "
            "name")


def test_a_failed_run_appends_nothing_and_leaves_no_directory(spark, heart, tmp_path, capsys, monkeypatch):
    import sparkfs.io.output_tables as output_tables

    def broken(spark, summary, run_id):  # a runs row the table refuses: its insert fails after the features'
        return spark.createDataFrame([(run_id,)], "run_id STRING")

    monkeypatch.setattr(output_tables, "_runs_frame", broken)
    assert _select(heart, tmp_path / "f1", "f1", table=f"{DATABASE}.failing") != 0
    assert _rows(spark, f"{DATABASE}.failing") == {} and _rows(spark, f"{DATABASE}.failing_runs") == {}
    assert os.listdir(tmp_path) == []
