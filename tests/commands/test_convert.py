"""`sparkfs convert`: LIBSVM and CSV text to a Parquet directory, then `select` on it
equals `select` on the text; the same rows in 1 or 7 files convert alike; the output rules against
decoy directories; a bad line refused before anything is written.

Every command runs in-process through ``sparkfs.cli.main`` on the shared session (tests/conftest.py).
"""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from sparkfs.cli import main
from sparkfs.commands.convert import input_format
from sparkfs.io.config import ConfigError
from sparkfs.io.libsvm import said_sparse
from sparkfs.io.output_safety import MARKER_KEY
from sparkfs.io.readers import read_dataset
from sparkfs.io.stores import location_of
from tests.integration.test_output_safety import snapshot


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """The bundled Optical Pen digits (1,797 x 64) as LIBSVM: sparse rows, 1-based indices."""
    from sparkfs.io.datasets import write_digits_libsvm

    return write_digits_libsvm(str(tmp_path_factory.mktemp("digits") / "digits.libsvm"))


@pytest.fixture(scope="module")
def heart_csv(tmp_path_factory, shared_data):
    data = np.load(shared_data / "heart_statlog.npz")
    names = [str(name) for name in data["feature_names"]]
    frame = pd.DataFrame(data["X"], columns=names)
    frame["diagnosis"] = np.array(data["class_names"])[data["y"]].astype(str)
    path = tmp_path_factory.mktemp("heart") / "heart.csv"
    frame.to_csv(path, index=False)
    return str(path), names


@pytest.fixture(scope="module")
def converted_digits(spark, digits, tmp_path_factory):
    out = tmp_path_factory.mktemp("converted") / "digits.parquet"
    assert _convert(digits, out) == 0
    return out


def _convert(source, output, *extra):
    return main(["convert", str(source), str(output), "--master", "local[2]", *extra])


def _select(source, fmt, output, method, *extra):
    assert main(["select", "--input", str(source), "--format", fmt, "--method", method, "--num-features", "10",
                 "--master", "local[2]", "--output", str(output), *extra]) == 0
    return pd.read_parquet(Path(output, "features.parquet")), json.loads(Path(output, "summary.json").read_text())


def _same_selection(text, converted):
    """Selected indices and names equal, and the features tables (index, name, score, rank,
    selected, p_value) equal bit for bit."""
    (text_table, text_summary), (parquet_table, parquet_summary) = text, converted
    assert parquet_summary["selected_indices"] == text_summary["selected_indices"]
    assert parquet_summary["selected_names"] == text_summary["selected_names"]
    assert parquet_summary["n_rows"] == text_summary["n_rows"]
    pd.testing.assert_frame_equal(parquet_table, text_table, check_exact=True)


def test_libsvm_convert_then_select_equals_select_on_the_text(spark, digits, converted_digits, tmp_path):
    out = converted_digits
    names = sorted(os.listdir(out))
    assert "_summary.json" in names and any(name.endswith(".parquet") for name in names)
    summary = json.loads((out / "_summary.json").read_text())
    assert summary[MARKER_KEY] == {"kind": "convert", "format": 1}
    assert summary["n_rows"] == 1797 and summary["input"]["format"] == "libsvm" and summary["vector"] == "sparse"
    converted = read_dataset(spark, str(out), "parquet")
    first = converted.df.select("features").first()[0]
    assert type(first).__name__ == "SparseVector"  # sparse in, sparse out
    # The names travel in the Parquet files' own key-value metadata (Spark's schema of the column).
    footer = pq.read_schema(next(out.glob("*.parquet"))).metadata
    assert b'"feature_names":"libsvm"' in footer[b"org.apache.spark.sql.parquet.row.metadata"]
    # ... with the word that every vector is sparse, which statsEngine='auto' reads instead of a row
    assert said_sparse(converted.df.schema["features"].metadata)
    # Bit for bit: the same rows in the same order in one partition each way, so every sum is taken
    # in the same order (the digits' values are small integers besides, whose sums are exact).
    text = _select(digits, "libsvm", tmp_path / "text", "anova")
    _same_selection(text, _select(out, "parquet", tmp_path / "parquet", "anova"))
    # The vector size and the names read back are the text's: f1..fD, the file's own column numbers.
    assert converted.num_features == summary["n_features"] == text[1]["n_features"]
    assert converted.feature_names == text[0]["name"].tolist() == [f"f{i}" for i in range(1, 65)]


def test_csv_convert_keeps_the_header_names(spark, heart_csv, tmp_path):
    path, names = heart_csv
    out = tmp_path / "heart.parquet"
    assert _convert(path, out, "--label-col", "diagnosis") == 0
    converted = read_dataset(spark, str(out), "parquet", label_col="diagnosis")
    assert converted.feature_names == names
    assert sorted(converted.df.columns) == ["diagnosis", "features"]
    assert json.loads((out / "_summary.json").read_text())["feature_names"] == "the CSV header's names"
    text = _select(path, "csv", tmp_path / "text", "lfs", "--label-col", "diagnosis")
    parquet = _select(out, "parquet", tmp_path / "parquet", "lfs", "--label-col", "diagnosis")
    assert text[1]["selected_names"][0] in names
    _same_selection(text, parquet)


def _rows(spark, path):
    """(label, indices, values) of every row, sorted: the converted content, whatever the row order."""
    frame = spark.read.parquet(str(path))
    return sorted((row["label"], tuple(row["features"].indices), tuple(row["features"].values))
                  for row in frame.collect()), frame.schema["features"].metadata


def test_one_or_seven_input_files_convert_alike(spark, digits, converted_digits, tmp_path):
    lines = Path(digits).read_text().splitlines(keepends=True)
    folder = tmp_path / "parts"
    folder.mkdir()
    for part, begin in enumerate(range(0, len(lines), -(-len(lines) // 7))):
        (folder / f"part-{part}.libsvm").write_text("".join(lines[begin: begin + -(-len(lines) // 7)]))
    assert len(os.listdir(folder)) == 7
    assert _convert(folder, tmp_path / "seven") == 0  # --format auto from the files' names
    one, seven = _rows(spark, converted_digits), _rows(spark, tmp_path / "seven")
    assert len(one[0]) == 1797 and one == seven


def test_a_bad_line_is_refused_naming_it_and_nothing_is_written(spark, tmp_path, capsys):
    source = tmp_path / "bad.libsvm"
    source.write_text("1 1:0.5 2:1.0\n0 1:0.25\n1 2:x\n0 1:1.0\n")
    out = tmp_path / "runs" / "out"
    out.parent.mkdir()
    capsys.readouterr()
    assert _convert(source, out) == 2
    error = capsys.readouterr().err
    assert "line 3 of" in error and "bad.libsvm" in error and "is not LIBSVM" in error
    assert os.listdir(out.parent) == []  # no output, no staging directory


def test_refusals_leave_decoys_untouched(spark, digits, tmp_path, capsys):
    decoy = tmp_path / "decoy"
    (decoy / "sub").mkdir(parents=True)
    (decoy / "notes.txt").write_text("my notes: not sparkfs's\n")
    (decoy / "sub" / "file.txt").write_bytes(b"\x00unrelated bytes\xff")
    selected = tmp_path / "selected"  # another command's output is not convert's to replace
    selected.mkdir()
    (selected / "summary.json").write_text(json.dumps({MARKER_KEY: {"kind": "select", "format": 1}}))
    (selected / "features.parquet").write_bytes(b"PAR1")
    before = snapshot(tmp_path)
    for output, extra, reason in [
        (decoy, [], "already exists; pass --overwrite"),
        (decoy, ["--overwrite"], "is not an output of sparkfs convert (no _summary.json)"),
        (decoy / "notes.txt", ["--overwrite"], "is a file"),
        (decoy, ["--if-exists", "skip"], "is not an output of sparkfs convert"),
        (selected, ["--overwrite"], "is not an output of sparkfs convert"),
        (tmp_path, ["--overwrite"], "contains the input"),
    ]:
        capsys.readouterr()
        assert _convert(digits if output != tmp_path else decoy / "notes.txt", output, "--format", "libsvm",
                        *extra) == 2, (output, extra)
        error = capsys.readouterr().err
        assert reason in error, error
        assert snapshot(tmp_path) == before


def test_overwrite_and_skip_of_its_own_output(spark, tmp_path, capsys):
    digits = tmp_path / "small.libsvm"  # a few lines: three conversions
    digits.write_text("1 1:0.5 3:1.0\n0 2:0.25\n1 1:1.5 2:1.0\n")
    out = tmp_path / "runs" / "out"
    assert _convert(digits, f"file://{out}") == 0  # a URI: through Spark's Hadoop file system
    first = json.loads((out / "_summary.json").read_text())["run_id"]
    capsys.readouterr()
    assert _convert(digits, out, "--if-exists", "skip") == 0
    assert "skipped" in capsys.readouterr().err
    assert _convert(digits, out, "--overwrite", "--run-id", "again") == 0
    assert json.loads((out / "_summary.json").read_text())["run_id"] == "again" != first
    assert os.listdir(out.parent) == ["out"]  # no staging or retired directory left
    (out / "notes.txt").write_text("added by the user")
    before = snapshot(tmp_path)
    assert _convert(digits, out, "--overwrite") == 2
    assert "does not write (notes.txt)" in capsys.readouterr().err
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("name, fmt", [("a.libsvm", "libsvm"), ("a.svm.gz", "libsvm"), ("A.CSV", "csv"),
                                       ("b.csv.bz2", "csv")])
def test_auto_format_from_the_name(tmp_path, name, fmt):
    (tmp_path / name).write_text("")
    assert input_format(location_of(str(tmp_path / name)), "auto") == fmt
    assert input_format(location_of(str(tmp_path / name)), "libsvm") == "libsvm"


def test_auto_format_refuses_an_unknown_name(tmp_path):
    (tmp_path / "data.txt").write_text("")
    with pytest.raises(ConfigError, match="give --format libsvm or --format csv"):
        input_format(location_of(str(tmp_path / "data.txt")), "auto")


def test_input_and_output_flags_convert_as_the_positional_form(spark, tmp_path, capsys):
    source = tmp_path / "small.libsvm"
    source.write_text("1 1:0.5 3:1.0\n0 2:0.25\n1 1:1.5 2:1.0\n")
    flags, positional = tmp_path / "flags", tmp_path / "positional"
    assert main(["convert", "--input", str(source), "--output", str(flags), "--master", "local[2]"]) == 0
    assert _convert(source, positional) == 0
    assert _rows(spark, flags) == _rows(spark, positional)
    # the positional input with --output, and the same path both ways, are accepted too
    assert main(["convert", str(source), "--output", str(tmp_path / "mixed"), "--master", "local[2]"]) == 0
    assert main(["convert", str(source), str(tmp_path / "same"), "--input", str(source), "--master",
                 "local[2]"]) == 0
    assert _rows(spark, tmp_path / "mixed") == _rows(spark, positional)


@pytest.mark.parametrize("argv, fragments", [
    (["IN", "--input", "OTHER", "--output", "OUT"], ["two inputs given: INPUT", "and --input", "give one"]),
    (["IN", "OUT", "--output", "ELSEWHERE"], ["two outputs given: OUTPUT", "and --output", "elsewhere; give one"]),
    (["--output", "OUT"], ["no input: give INPUT", "or --input"]),
    (["--input", "IN"], ["no output: give OUTPUT", "or --output"]),
])
def test_paths_given_twice_or_not_at_all_are_refused(tmp_path, capsys, argv, fragments):
    source = tmp_path / "small.libsvm"
    source.write_text("1 1:0.5\n0 2:0.25\n")
    names = {"IN": str(source), "OTHER": str(tmp_path / "other.libsvm"), "OUT": str(tmp_path / "out"),
             "ELSEWHERE": str(tmp_path / "elsewhere")}
    capsys.readouterr()
    assert main(["convert", *[names.get(word, word) for word in argv]]) == 2
    error = capsys.readouterr().err
    assert all(fragment in error for fragment in fragments), error
    assert sorted(os.listdir(tmp_path)) == ["small.libsvm"]
