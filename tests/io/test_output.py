"""Atomic selection output: local paths with the OS, URIs through Spark's Hadoop file system."""

import json
import os

import numpy as np
import pandas as pd
import pytest

from sparkfs.io import output
from sparkfs.io.output import OutputExistsError, check_output_free, features_table, write_selection_output
from sparkfs.io.stores import is_local_path


def _table():
    return features_table(np.array([0.5, 2.0, np.nan, 1.0]), [1, 3], ["a", "b", "c", "d"])


def _read(directory):
    table = pd.read_parquet(os.path.join(directory, "features.parquet"))
    with open(os.path.join(directory, "summary.json"), encoding="utf-8") as handle:
        return table, json.load(handle)


def _leftovers(folder, name):
    return [entry for entry in os.listdir(folder) if entry.startswith(f".{name}")]


def test_features_table_columns_and_ranks():
    table = _table()
    assert table["name"].tolist() == ["a", "b", "c", "d"]
    assert table["rank"].tolist() == [3, 1, 4, 2]          # NaN ranks last
    assert table["selected"].tolist() == [False, True, False, True]


@pytest.mark.parametrize("as_uri", [False, True], ids=["local-path", "file-uri"])
def test_write_refuse_overwrite(spark, tmp_path, as_uri):
    folder = tmp_path / "runs"
    location = f"file://{folder}/run1" if as_uri else str(folder / "run1")
    written = write_selection_output(location, _table(), {"method": "lfs", "k": np.int64(3)}, spark=spark)
    assert written == (f"file:{folder}/run1" if as_uri else str(folder / "run1"))
    table, summary = _read(folder / "run1")
    assert table["name"].tolist() == ["a", "b", "c", "d"]
    assert summary == {"sparkfs_output": {"kind": "select", "format": 1}, "method": "lfs", "k": 3}
    # Only the two files: no staging folder, no Hadoop checksum files.
    assert sorted(os.listdir(folder / "run1")) == ["features.parquet", "summary.json"]
    assert os.listdir(folder) == ["run1"]

    with pytest.raises(OutputExistsError, match="already exists; pass --overwrite"):
        check_output_free(location, overwrite=False, spark=spark)
    with pytest.raises(OutputExistsError, match="already exists"):
        write_selection_output(location, _table(), {"method": "other"}, spark=spark)
    assert _read(folder / "run1")[1]["method"] == "lfs"

    write_selection_output(location, _table(), {"method": "relief"}, overwrite=True, spark=spark)
    assert _read(folder / "run1")[1]["method"] == "relief"
    assert os.listdir(folder) == ["run1"]


@pytest.mark.parametrize("as_uri", [False, True], ids=["local-path", "file-uri"])
def test_unserialisable_summary_writes_nothing(spark, tmp_path, as_uri):
    location = f"file://{tmp_path}/run" if as_uri else str(tmp_path / "run")
    with pytest.raises(TypeError, match="not JSON serialisable"):
        write_selection_output(location, _table(), {"bad": object()}, spark=spark)
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("as_uri", [False, True], ids=["local-path", "file-uri"])
def test_failure_during_a_write_leaves_nothing(spark, tmp_path, monkeypatch, as_uri):
    store_class = output._HadoopStore if as_uri else output._LocalStore
    calls = []
    original = store_class.write

    def fail_on_second_file(self, path, payload):
        calls.append(os.path.basename(str(path)))
        if len(calls) == 2:
            raise OSError("disk full")
        original(self, path, payload)

    monkeypatch.setattr(store_class, "write", fail_on_second_file)
    location = f"file://{tmp_path}/run" if as_uri else str(tmp_path / "run")
    with pytest.raises(OSError, match="disk full"):
        write_selection_output(location, _table(), {"method": "lfs"}, spark=spark)
    assert calls == ["features.parquet", "summary.json"]
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("as_uri", [False, True], ids=["local-path", "file-uri"])
def test_failure_while_overwriting_keeps_the_old_output(spark, tmp_path, monkeypatch, as_uri):
    location = f"file://{tmp_path}/run" if as_uri else str(tmp_path / "run")
    write_selection_output(location, _table(), {"method": "old"}, spark=spark)
    store_class = output._HadoopStore if as_uri else output._LocalStore
    monkeypatch.setattr(store_class, "write", lambda self, path, payload: (_ for _ in ()).throw(OSError("quota")))
    with pytest.raises(OSError, match="quota"):
        write_selection_output(location, _table(), {"method": "new"}, overwrite=True, spark=spark)
    assert _read(tmp_path / "run")[1]["method"] == "old"
    assert os.listdir(tmp_path) == ["run"]


def test_unknown_scheme_is_named(spark, tmp_path):
    with pytest.raises(ValueError, match="scheme 'nosuchfs'"):
        check_output_free("nosuchfs://bucket/out", overwrite=False, spark=spark)


def test_uri_needs_a_session():
    with pytest.raises(ValueError, match="Spark session is needed"):
        check_output_free("hdfs://namenode/out", overwrite=False)


def test_local_path_detection():
    assert is_local_path("out/run1") and is_local_path("/abs/run")
    for uri in ("file:///tmp/x", "hdfs://nn/x", "s3a://bucket/x", "dbfs:/x"):
        assert not is_local_path(uri)


@pytest.mark.parametrize("as_uri", [False, True], ids=["local-path", "file-uri"])
def test_a_replaced_output_is_removed_file_by_file(spark, tmp_path, as_uri):
    """What appears in the old output between the check and the rename is kept, not deleted."""
    location = f"file://{tmp_path}/run" if as_uri else str(tmp_path / "run")
    write_selection_output(location, _table(), {"method": "old"}, spark=spark)
    retired = tmp_path / "retired"
    os.rename(tmp_path / "run", retired)
    (retired / "late.txt").write_text("a user's file")
    store = output._open_store(f"file://{retired}" if as_uri else str(retired), spark)
    try:
        assert output.remove_replaced(store, store.target, "select") == ["late.txt"]
    finally:
        store.close()
    assert os.listdir(retired) == ["late.txt"]
    os.unlink(retired / "late.txt")
    store = output._open_store(str(retired), spark)
    assert output.remove_replaced(store, store.target, "select") == [] and not retired.exists()
