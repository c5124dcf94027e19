"""Inputs fingerprinted before the read: ``summary.json``'s ``input_files`` used to
be taken at the end, so a file appended during the read was recorded as read whole. Now the
fingerprint is taken before the read and checked again after the fit; a change in between fails
the run (exit 2, the file named) and nothing is written."""

import json

import pytest

from sparkfs.cli import main
from sparkfs.commands import select as select_command
from sparkfs.job_options import input_fingerprint
from tests.integration.test_output_safety import _rows, _select, snapshot

pytestmark = pytest.mark.spark


@pytest.fixture
def data(tmp_path):
    source = tmp_path / "small.libsvm"
    source.write_text(_rows())
    return tmp_path, source


def test_an_input_appended_during_the_read_fails_the_run_and_writes_nothing(spark, data, capsys, monkeypatch):
    root, source = data
    real_read = select_command._read_input

    def read_then_append(*args, **kwargs):
        read = real_read(*args, **kwargs)
        with open(source, "a") as appended:  # a writer adds rows after Spark has planned the read
            appended.write("1 1:2.0 2:0.3 3:0.0\n" * 1000)
        return read

    monkeypatch.setattr(select_command, "_read_input", read_then_append)
    output = root / "out"
    capsys.readouterr()
    assert main(_select(str(source), output)) == 2
    error = capsys.readouterr().err
    assert f"sparkfs: error: input {source} changed while it was read (size " in error
    assert "nothing was written; run again once the file is complete" in error
    assert not output.exists()
    assert sorted(path.name for path in root.iterdir()) == ["small.libsvm"]  # no staging left


def test_the_summary_records_the_fingerprint_taken_before_the_read(spark, data, capsys):
    root, source = data
    before = input_fingerprint(str(source))
    assert main(_select(str(source), root / "out")) == 0
    summary = json.loads((root / "out" / "summary.json").read_text())
    assert summary["input_files"][0] == before
    snapshot(root)  # the output is complete: nothing hidden beside it
    assert sorted(path.name for path in root.iterdir()) == ["out", "small.libsvm"]


def test_an_input_truncated_during_the_read_is_named_not_a_spark_failure(spark, tmp_path, capsys, monkeypatch):
    """A Parquet file cut short after Spark planned the read makes the job fail in Spark (its footer
    is gone); that used to be exit 1 and a Java trace (a scheduler retries it): now exit 2 naming it."""
    import numpy as np
    import pandas as pd

    source = tmp_path / "data.parquet"
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.normal(size=(400, 4)), columns=list("abcd")).assign(label=np.arange(400) % 2).to_parquet(
        source, index=False)
    real_read = select_command._read_input

    def read_then_truncate(*args, **kwargs):
        read = real_read(*args, **kwargs)
        with open(source, "r+b") as cut:
            cut.truncate(source.stat().st_size // 2)
        return read

    monkeypatch.setattr(select_command, "_read_input", read_then_truncate)
    output = tmp_path / "out"
    code = main(["select", "--master", "local[2]", "--input", str(source), "--format", "parquet", "--label-col",
                 "label", "--method", "anova", "--num-features", "2", "--output", str(output)])
    error = capsys.readouterr().err
    assert code == 2, error[-3000:]
    assert f"sparkfs: error: input {source} changed while it was read (size " in error
    assert "Py4JJavaError" not in error and not output.exists()
