"""Files people make every day, read as they mean them or refused with the fix:
a gzip-compressed CSV, a features column of arrays (pandas' and pyarrow's lists), a 0-based LIBSVM
file from scikit-learn's ``dump_svmlight_file``."""

import gzip
import json

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from tests.helpers import refused


def _frame(rows=60, seed=3):
    rng = np.random.default_rng(seed)
    labels = np.repeat([0, 1], rows // 2)
    X = rng.normal(size=(rows, 3))
    X[:, 1] += 3 * labels
    return X, labels


def _select(path, fmt, out, *extra):
    return main(["select", "--master", "local[2]", "--method", "anova", "--input", str(path), "--format", fmt,
                 "--num-features", "1", "--output", str(out), *extra])


def test_gzip_csv_is_read_as_its_text(spark, tmp_path):
    X, y = _frame()
    text = pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "x2": X[:, 2], "label": y}).to_csv(index=False)
    (tmp_path / "data.csv.gz").write_bytes(gzip.compress(text.encode()))
    assert _select(tmp_path / "data.csv.gz", "csv", tmp_path / "out") == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["selected_names"] == ["x1"] and summary["n_rows"] == 60


def test_missing_label_of_a_gzip_csv_is_refused_from_its_header(tmp_path, capsys):
    (tmp_path / "data.csv.gz").write_bytes(gzip.compress(b"a,b,target\n1,2,0\n"))
    code = _select(tmp_path / "data.csv.gz", "csv", tmp_path / "out")
    refused(capsys, code, tmp_path / "out", "label column 'label' not found", "'target'")


def test_array_features_column_is_read_as_a_vector(spark, tmp_path):
    X, y = _frame()
    pd.DataFrame({"features": list(X), "label": y}).to_parquet(tmp_path / "arrays.parquet", index=False)
    assert _select(tmp_path / "arrays.parquet", "parquet", tmp_path / "out") == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["selected_indices"] == [1] and summary["n_features"] == 3


def test_integer_array_features_are_read_as_doubles(spark, tmp_path):
    X, y = _frame()
    pd.DataFrame({"features": list(np.round(X * 10).astype(np.int64)), "label": y}).to_parquet(
        tmp_path / "ints.parquet", index=False)
    assert _select(tmp_path / "ints.parquet", "parquet", tmp_path / "out") == 0
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["selected_indices"] == [1]


def test_arrays_of_different_sizes_are_refused_with_the_sizes(spark, tmp_path, capsys):
    X, y = _frame()
    arrays = list(X)
    arrays[5] = arrays[5][:2]
    pd.DataFrame({"features": arrays, "label": y}).to_parquet(tmp_path / "ragged.parquet", index=False)
    code = _select(tmp_path / "ragged.parquet", "parquet", tmp_path / "out")
    refused(capsys, code, tmp_path / "out", "different sizes", "size 2: 1 row(s)", "size 3: 59 row(s)",
            "ragged.parquet")


@pytest.mark.parametrize("zero_based", [True, False])
def test_scikit_learn_svmlight_file(spark, tmp_path, capsys, zero_based):
    """dump_svmlight_file's default writes 0-based indices: refused with how to write it; with
    zero_based=False it reads, feature names the file's own 1-based columns."""
    from sklearn.datasets import dump_svmlight_file

    X, y = _frame()
    dump_svmlight_file(X, y, str(tmp_path / "data.libsvm"), zero_based=zero_based)
    code = _select(tmp_path / "data.libsvm", "libsvm", tmp_path / "out")
    if zero_based:
        refused(capsys, code, tmp_path / "out", "indices are 1-based", "zero_based=False")
    else:
        assert code == 0
        assert json.loads((tmp_path / "out" / "summary.json").read_text())["selected_names"] == ["f2"]


def test_a_pandas_timestamp_column_is_refused_by_name_before_spark(tmp_path, capsys, monkeypatch):
    """pandas writes datetime64 as timestamp[ns], which Spark cannot read
    (PARQUET_TYPE_ILLEGAL, no column named, exit 1): refused by name from the footer, exit 2."""
    from sparkfs.spark import session as session_module

    def refuse_to_start(*args, **kwargs):
        raise AssertionError("Spark was started before the Parquet footer's types were checked")

    monkeypatch.setattr(session_module, "get_spark", refuse_to_start)
    X, y = _frame()
    frame = pd.DataFrame({"x0": X[:, 0], "x1": X[:, 1], "label": y})
    frame["when"] = pd.date_range("2026-01-01", periods=len(frame), freq="h")
    frame.to_parquet(tmp_path / "timed.parquet", index=False)
    code = _select(tmp_path / "timed.parquet", "parquet", tmp_path / "out")
    refused(capsys, code, tmp_path / "out", "column(s) ['when']", "dates or times", "timestamp[ns]", "cast them")


def test_spark_refusing_a_column_type_is_named_as_bad_input():
    from sparkfs.io.table_input import unreadable_parquet_message

    error = RuntimeError("[PARQUET_TYPE_ILLEGAL] Illegal Parquet type: INT64 (TIMESTAMP(NANOS,false)).\nJVM stack")
    message = unreadable_parquet_message("s3://bucket/data.parquet", error)
    assert message.startswith("s3://bucket/data.parquet has a column type Spark cannot read ([PARQUET_TYPE_ILLEGAL]")
    assert "datetime64" in message and "JVM stack" not in message
    assert unreadable_parquet_message("x", RuntimeError("something else")) is None
