"""A pandas index is never read as a feature, and a byte-order mark is not part of a
column name (item 7), through the command line, one test per writer.

The data: 3 features where ``x1`` alone separates the classes; the rows are written sorted by
label, so an index column (0..n-1) also separates them and would be selected with ``x1`` if it
were read as a feature (as it was: on sonar an index was in the top 5)."""

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkfs.cli import main
from tests.helpers import refused


def _frame(rows=60):
    rng = np.random.default_rng(3)
    labels = np.repeat([0, 1], rows // 2)
    frame = pd.DataFrame(rng.normal(size=(rows, 3)), columns=["x0", "x1", "x2"])
    frame["x1"] += 3 * labels
    frame["label"] = labels
    return frame


def _selected(path, fmt, tmp_path):
    out = tmp_path / "out"
    assert main(["select", "--master", "local[2]", "--method", "anova", "--input", str(path), "--format", fmt,
                 "--num-features", "1", "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    names = sorted(pd.read_parquet(out / "features.parquet")["name"].tolist())
    return summary, names


@pytest.mark.parametrize("index", ["unnamed", "named"])
def test_pandas_to_parquet_index_is_left_out(spark, tmp_path, capsys, index):
    frame = _frame()
    frame.index = pd.Index(np.arange(len(frame)) * 10, name=None if index == "unnamed" else "row_id")
    frame.to_parquet(tmp_path / "data.parquet")   # pandas writes this index as a column
    column = "__index_level_0__" if index == "unnamed" else "row_id"
    assert column in pq.read_schema(tmp_path / "data.parquet").names
    summary, names = _selected(tmp_path / "data.parquet", "parquet", tmp_path)
    assert names == ["x0", "x1", "x2"] and summary["selected_names"] == ["x1"]
    err = capsys.readouterr().err
    assert f"['{column}'] left out of the features" in err and "index=False" in err


def test_pandas_to_parquet_without_index_reads_every_column(spark, tmp_path, capsys):
    _frame().to_parquet(tmp_path / "data.parquet", index=False)
    _, names = _selected(tmp_path / "data.parquet", "parquet", tmp_path)
    assert names == ["x0", "x1", "x2"] and "left out" not in capsys.readouterr().err


def test_pyarrow_table_with_preserved_index_is_left_out(spark, tmp_path, capsys):
    table = pa.Table.from_pandas(_frame(), preserve_index=True)
    pq.write_table(table, tmp_path / "data.parquet")
    _, names = _selected(tmp_path / "data.parquet", "parquet", tmp_path)
    assert names == ["x0", "x1", "x2"] and "__index_level_0__" in capsys.readouterr().err


def test_spark_written_parquet_keeps_a_column_called_index(spark, tmp_path, capsys):
    """A real feature named ``index`` (no pandas metadata, no pandas name) stays a feature."""
    frame = _frame().rename(columns={"x2": "index"})
    spark.createDataFrame(frame).coalesce(1).write.parquet(str(tmp_path / "data.parquet"))
    _, names = _selected(tmp_path / "data.parquet", "parquet", tmp_path)
    assert names == ["index", "x0", "x1"] and "left out" not in capsys.readouterr().err


def test_pandas_to_csv_default_index_is_left_out(spark, tmp_path, capsys):
    _frame().to_csv(tmp_path / "data.csv")        # header ",x0,x1,x2,label"
    assert (tmp_path / "data.csv").read_text().startswith(",x0")
    summary, names = _selected(tmp_path / "data.csv", "csv", tmp_path)
    assert names == ["x0", "x1", "x2"] and summary["selected_names"] == ["x1"]
    err = capsys.readouterr().err
    assert "['']" in err and "to_csv" in err


def test_resaved_unnamed_index_column_is_left_out(spark, tmp_path, capsys):
    """read_csv of a to_csv file names the index ``Unnamed: 0``; written again, it is still an index."""
    _frame().to_csv(tmp_path / "first.csv")
    pd.read_csv(tmp_path / "first.csv").to_csv(tmp_path / "data.csv", index=False)
    _, names = _selected(tmp_path / "data.csv", "csv", tmp_path)
    assert names == ["x0", "x1", "x2"] and "Unnamed: 0" in capsys.readouterr().err


def test_csv_column_without_a_name_past_the_first_is_refused_before_spark(tmp_path, capsys):
    (tmp_path / "data.csv").write_text("x0,,label\n1,2,0\n3,4,1\n")
    code = main(["select", "--method", "anova", "--input", str(tmp_path / "data.csv"), "--format", "csv",
                 "--output", str(tmp_path / "out")])
    refused(capsys, code, tmp_path / "out", "column 2 of the CSV header", "has no name")


def test_byte_order_mark_is_not_part_of_the_first_name(spark, tmp_path):
    """A spreadsheet's UTF-8 CSV starts with a BOM: the label named first is still found, and a
    first feature keeps its plain name."""
    frame = _frame()[["label", "x0", "x1", "x2"]]
    (tmp_path / "labelfirst.csv").write_bytes(b"\xef\xbb\xbf" + frame.to_csv(index=False).encode())
    summary, names = _selected(tmp_path / "labelfirst.csv", "csv", tmp_path)
    assert names == ["x0", "x1", "x2"] and summary["selected_names"] == ["x1"]
    (tmp_path / "featurefirst.csv").write_bytes(b"\xef\xbb\xbf" + _frame().to_csv(index=False).encode())
    (tmp_path / "out").rename(tmp_path / "first_out")
    _, names = _selected(tmp_path / "featurefirst.csv", "csv", tmp_path)
    assert names == ["x0", "x1", "x2"]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_polars_files_have_no_index_and_every_column_is_read(spark, tmp_path, capsys, fmt):
    """polars writes no index (nor pandas metadata): every column but the label is a feature, and
    the scores are those of the same table written by pandas without an index."""
    import polars as pl

    frame = _frame()
    table = pl.from_pandas(frame)
    path = tmp_path / f"data.{fmt}"
    (table.write_parquet if fmt == "parquet" else table.write_csv)(path)
    summary, names = _selected(path, fmt, tmp_path)
    assert names == ["x0", "x1", "x2"] and summary["selected_names"] == ["x1"]
    assert "left out" not in capsys.readouterr().err
    polars_scores = pd.read_parquet(tmp_path / "out" / "features.parquet").sort_values("name")["score"].to_numpy()
    (frame.to_parquet if fmt == "parquet" else frame.to_csv)(tmp_path / f"pandas.{fmt}", index=False)
    out = tmp_path / "pandas-out"
    assert main(["select", "--master", "local[2]", "--method", "anova", "--input", str(tmp_path / f"pandas.{fmt}"),
                 "--format", fmt, "--num-features", "1", "--output", str(out)]) == 0
    pandas_scores = pd.read_parquet(out / "features.parquet").sort_values("name")["score"].to_numpy()
    np.testing.assert_allclose(polars_scores, pandas_scores, rtol=1e-12)
