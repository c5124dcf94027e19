"""Inputs fingerprinted before the read (issue 34, item 2): ``summary.json``'s ``input_files`` used to
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
