"""`--input-table NAME` on `select` and `apply`: a table or view of the session's catalog read as a Parquet input
is (its numeric columns, or its vector column with every other column kept in the reduced data); a name the
catalog does not know, and a table given with a file input or a format, are refused with exit 2.

The tables live in the catalog of the suite's session, whose warehouse is a temporary directory (tests/conftest.py).
"""

import json

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from tests.helpers import refused

DATABASE = "sparkfs_input_tables"


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory):
    """``heart``: six numeric columns and a string label; ``docs``: an id, a label and
    a sparse vector column; the heart set also as a Parquet file."""
    from pyspark.ml.linalg import Vectors

    folder = tmp_path_factory.mktemp("tables")
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(60, 6)), 3)
    y = np.where(X[:, 2] + 0.5 * X[:, 4] > 0, "sick", "well")
    frame = pd.DataFrame(X, columns=["age", "bp", "chol", "hr", "st", "vessels"]).assign(diagnosis=y)
    frame.to_parquet(folder / "heart.parquet", index=False)
    spark.createDataFrame(frame).write.saveAsTable(f"{DATABASE}.heart")
    docs = [(f"doc{i}", float(i % 2), Vectors.sparse(5, {0: 1.0 + i % 3, 3: 2.0 * (i % 2) + 0.5})) for i in range(20)]
    spark.createDataFrame(docs, ["id", "label", "features"]).write.saveAsTable(f"{DATABASE}.docs")
    yield folder
    spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")


def _select(out, *source, extra=()):
    return main(["select", *source, "--method", "anova", "--num-features", "3", "--master", "local[2]",
                 "--output", str(out), *extra])


def test_a_table_of_numeric_columns_selects_as_its_parquet_file(spark, tables, tmp_path):
    assert _select(tmp_path / "table", "--input-table", f"{DATABASE}.heart", "--label-col", "diagnosis") == 0
    assert _select(tmp_path / "file", "--input", str(tables / "heart.parquet"), "--format", "parquet",
                   "--label-col", "diagnosis") == 0
    table, file = (json.loads((tmp_path / name / "summary.json").read_text()) for name in ("table", "file"))
    assert table["input"] == {"path": f"{DATABASE}.heart", "format": "table"}
    assert table["selected_names"] == file["selected_names"] and "chol" in table["selected_names"]
    np.testing.assert_allclose(pd.read_parquet(tmp_path / "table" / "features.parquet")["score"],
                               pd.read_parquet(tmp_path / "file" / "features.parquet")["score"], rtol=1e-12)


def test_a_vector_table_keeps_its_columns_in_the_reduced_data_and_applies(spark, tables, tmp_path):
    reduced = tmp_path / "reduced"
    assert _select(tmp_path / "sel", "--input-table", f"{DATABASE}.docs",
                   extra=["--write-reduced", str(reduced), "--num-features", "2"]) == 0
    selected = json.loads((tmp_path / "sel" / "summary.json").read_text())["selected_indices"]
    frame = spark.read.parquet(str(reduced))
    assert frame.columns == ["id", "label", "features"] and frame.count() == 20
    applied = tmp_path / "applied"
    assert main(["apply", "--model", str(tmp_path / "sel"), "--input-table", f"{DATABASE}.docs", "--master",
                 "local[2]", "--output", str(applied)]) == 0
    source = {row["id"]: row["features"].toArray()[selected].tolist()
              for row in spark.table(f"{DATABASE}.docs").collect()}
    assert {row["id"]: row["features"].toArray().tolist() for row in spark.read.parquet(str(applied)).collect()} \
        == source


def test_a_path_based_table_is_read(spark, tables, tmp_path):
    assert _select(tmp_path / "out", "--input-table", f"parquet.`{tables / 'heart.parquet'}`",
                   "--label-col", "diagnosis") == 0
    assert "chol" in json.loads((tmp_path / "out" / "summary.json").read_text())["selected_names"]


@pytest.mark.parametrize("argv, fragments", [
    (["--input-table", f"{DATABASE}.nothing"], [f"--input-table {DATABASE}.nothing: the session's catalog has no "
                                                "such table or view"]),
    (["--input-table", f"{DATABASE}.heart", "--input", "x.parquet"], ["give either an input file (x.parquet) or "
                                                                      "--input-table", "not both"]),
    (["--input-table", f"{DATABASE}.heart", "--format", "parquet"], ["--format parquet is a file's format"]),
])
def test_bad_table_inputs_are_refused(spark, tables, tmp_path, capsys, argv, fragments):
    out = tmp_path / "out"
    refused(capsys, _select(out, *argv, "--label-col", "diagnosis"), out, *fragments)


@pytest.mark.parametrize("command", [
    ["apply", "--model", "MODEL"],
    ["evaluate", "--methods", "anova", "--classifiers", "nb", "--num-features", "2"],
    ["stability", "--method", "anova", "--runs", "2", "--num-features", "2"],
])
def test_the_other_commands_refuse_a_table_with_a_file_input_or_a_format(spark, tables, tmp_path, capsys, command):
    out = tmp_path / "out"
    argv = [str(tmp_path) if value == "MODEL" else value for value in command]
    refused(capsys, main([*argv, "--input-table", f"{DATABASE}.docs", "--format", "parquet", "--output", str(out)]),
            out, f"--format parquet is a file's format; --input-table {DATABASE}.docs reads the table")
    refused(capsys, main([*argv, "--input-table", f"{DATABASE}.docs", "--input", "x.parquet", "--output", str(out)]),
            out, f"give either an input file (x.parquet) or --input-table ({DATABASE}.docs), not both")


def _study(command, out, *source):
    if command == "evaluate":
        return main(["evaluate", *source, "--label-col", "diagnosis", "--methods", "anova,random", "--classifiers",
                     "nb", "--num-features", "2", "--cv", "2", "--master", "local[2]", "--output", str(out)])
    return main(["stability", *source, "--label-col", "diagnosis", "--method", "anova", "--runs", "3",
                 "--num-features", "2", "--master", "local[2]", "--output", str(out)])


@pytest.fixture(scope="module")
def coded(spark, tables):
    """The heart set with its classes as numbers (the studies' classifiers read a numeric label), as a table and
    as a Parquet file."""
    from pyspark.sql import functions as F

    frame = spark.table(f"{DATABASE}.heart").withColumn("diagnosis", (F.col("diagnosis") == "sick").cast("double"))
    frame.write.saveAsTable(f"{DATABASE}.heart_coded")
    spark.table(f"{DATABASE}.heart_coded").toPandas().to_parquet(tables / "heart_coded.parquet", index=False)
    return tables / "heart_coded.parquet"


@pytest.mark.parametrize("command", ["evaluate", "stability"])
def test_evaluate_and_stability_read_a_table_as_its_parquet_file(spark, coded, tmp_path, command):
    assert _study(command, tmp_path / "table", "--input-table", f"{DATABASE}.heart_coded") == 0
    assert _study(command, tmp_path / "file", "--input", str(coded), "--format", "parquet") == 0
    if command == "evaluate":
        columns = ["method", "classifier", "k", "repeat", "fold", "accuracy"]
        table, file = (pd.read_parquet(tmp_path / name / "results.parquet") for name in ("table", "file"))
        pd.testing.assert_frame_equal(table.sort_values(columns[:5])[columns].reset_index(drop=True),
                                      file.sort_values(columns[:5])[columns].reset_index(drop=True))
        study = json.loads((tmp_path / "table" / "study.json").read_text())
        assert study["description"]["input"] == f"{DATABASE}.heart_coded"
        assert study["description"]["format"] == "table"
    else:
        table, file = (json.loads((tmp_path / name / "stability.json").read_text()) for name in ("table", "file"))
        _assert_close(table["summary"], file["summary"])  # the rows' partitioning differs: sums to rounding


def _assert_close(given, expected, where="summary"):
    if isinstance(expected, dict):
        assert sorted(given) == sorted(expected), where
        for key in expected:
            _assert_close(given[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert len(given) == len(expected), where
        for index, (left, right) in enumerate(zip(given, expected)):
            _assert_close(left, right, f"{where}[{index}]")
    elif isinstance(expected, float):
        assert given == pytest.approx(expected, rel=1e-9, abs=1e-15), where
    else:
        assert given == expected, where


@pytest.mark.parametrize("command", ["evaluate", "stability"])
def test_a_study_refuses_an_unknown_table_and_writes_nothing(spark, tables, tmp_path, capsys, command):
    out = tmp_path / "out"
    refused(capsys, _study(command, out, "--input-table", f"{DATABASE}.nothing"), out,
            f"--input-table {DATABASE}.nothing: the session's catalog has no such table or view")
