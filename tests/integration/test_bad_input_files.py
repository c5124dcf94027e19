"""Bad files and directories through the command line: exit 2 with the file named, before Spark
starts, and no Java or Python trace (docs/bad_input.md, "Files"). Spark met each of these inside
its first job: a Java trace of dozens of lines and exit 1, or, for a column missing from one part
file, a count of NaN rows naming neither the column nor the file."""

import gzip
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from sparkfs.errors import InvalidInputError
from sparkfs.spark.failures import input_file_failure


@pytest.fixture
def no_spark(monkeypatch):
    """Fail the test if the command asks for a SparkSession: every refusal here comes before it."""
    def refuse(*args, **kwargs):
        pytest.fail("a SparkSession was asked for before the refusal")

    monkeypatch.setattr("sparkfs.spark.session.get_spark", refuse)


def _frame(rows: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    return pd.DataFrame({"a": rng.normal(size=rows), "b": rng.normal(size=rows), "label": np.arange(rows) % 2})


def _refused(capsys, argv, out, *fragments) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    message = next(line for line in err.splitlines() if line.startswith("sparkfs: error: "))
    assert all(fragment in message for fragment in fragments), message
    assert "Traceback" not in err and "Py4J" not in err and "\tat " not in err, err
    assert not Path(out).exists()
    return message


def _select(path, out, fmt="parquet"):
    return ["select", "--input", str(path), "--format", fmt, "--method", "anova", "--num-features", "1",
            "--output", str(out)]


def _parts(folder: Path, *frames: pd.DataFrame) -> Path:
    folder.mkdir()
    for number, frame in enumerate(frames):
        frame.to_parquet(folder / f"part-{number}.parquet", index=False)
    return folder


@pytest.mark.parametrize("column, cast, types", [
    ("b", str, "double in part-0.parquet, string in"),
    ("b", lambda values: (values * 10).astype("int64"), "double in part-0.parquet, int64 in"),
    ("label", str, "int64 in part-0.parquet, string in"),
])
def test_parquet_parts_that_disagree_on_a_column_type(no_spark, tmp_path, capsys, column, cast, types):
    other = _frame()
    other[column] = other[column].map(cast) if cast is str else cast(other[column])
    folder = _parts(tmp_path / "data", _frame(), other)
    _refused(capsys, _select(folder, tmp_path / "out"), tmp_path / "out",
             f"the Parquet part files of {folder} disagree on the type of column '{column}'", types,
             str(folder / "part-1.parquet"), f"write every part file with the same type for '{column}'")


def test_a_column_missing_from_one_part_file_is_named_with_its_file(no_spark, tmp_path, capsys):
    folder = _parts(tmp_path / "data", _frame(), _frame().drop(columns="b"))
    _refused(capsys, _select(folder, tmp_path / "out"), tmp_path / "out",
             f"column(s) ['b'] of the Parquet input {folder} are missing from {folder / 'part-1.parquet'} "
             "(part-0.parquet has them)")
    extra = _parts(tmp_path / "extra", _frame(), _frame().assign(c=1.0))
    _refused(capsys, _select(extra, tmp_path / "out"), tmp_path / "out",
             f"{extra / 'part-1.parquet'} has column(s) ['c'] that part-0.parquet")


def test_a_stray_file_in_a_parquet_directory(no_spark, tmp_path, capsys):
    folder = _parts(tmp_path / "data", _frame())
    _frame().to_csv(folder / "notes.csv", index=False)
    _refused(capsys, _select(folder, tmp_path / "out"), tmp_path / "out",
             f"{folder / 'notes.csv'} is not a Parquet file (a '.csv' file: no 'PAR1' marker",
             f"a Parquet directory holds only Parquet part files; move it out of {folder}")
    single = tmp_path / "data.csv"
    _frame().to_csv(single, index=False)
    _refused(capsys, _select(single, tmp_path / "out"), tmp_path / "out",
             f"{single} is not a Parquet file", "give --format for what it is")


@pytest.mark.parametrize("fmt", ["parquet", "csv", "libsvm"])
def test_a_directory_holding_only_success(no_spark, tmp_path, capsys, fmt):
    folder = tmp_path / "written"
    folder.mkdir()
    (folder / "_SUCCESS").write_text("")
    (folder / ".part-0.crc").write_text("")
    _refused(capsys, _select(folder, tmp_path / "out", fmt), tmp_path / "out",
             f"input directory {folder} holds no data files (only .part-0.crc, _SUCCESS, which Spark skips")
    _refused(capsys, ["convert", str(folder), str(tmp_path / "out")], tmp_path / "out", "holds no data files")
    (tmp_path / "bare").mkdir()
    _refused(capsys, _select(tmp_path / "bare", tmp_path / "out", fmt), tmp_path / "out", "(it is empty)")


def _truncated_gzip(path: Path, text: str) -> Path:
    packed = gzip.compress(text.encode())
    path.write_bytes(packed[: len(packed) // 2])
    return path


@pytest.mark.parametrize("name, fmt", [("data.libsvm.gz", "libsvm"), ("data.csv.gz", "csv")])
def test_a_truncated_gzip_file(no_spark, tmp_path, capsys, name, fmt):
    rng = np.random.default_rng(5)
    if fmt == "libsvm":
        text = "".join(f"{i % 2} 1:{rng.normal():.4f} 2:{rng.normal():.4f}\n" for i in range(3000))
    else:
        text = "a,b,label\n" + "".join(f"{rng.normal()},{rng.normal()},{i % 2}\n" for i in range(3000))
    source = _truncated_gzip(tmp_path / name, text)
    words = (f"{source} is cut short: its gzip data end after", "without the end marker gzip writes",
             "fetch or write it again")
    _refused(capsys, _select(source, tmp_path / "out", fmt), tmp_path / "out", *words)
    _refused(capsys, ["convert", str(source), str(tmp_path / "out")], tmp_path / "out", *words)
    folder = tmp_path / "parts"                    # one bad part among whole ones: that part is named
    folder.mkdir()
    (folder / f"part-0.{name.split('.', 1)[1]}").write_bytes(gzip.compress(text.encode()))
    os.rename(source, folder / f"part-1.{name.split('.', 1)[1]}")
    _refused(capsys, _select(folder, tmp_path / "out", fmt), tmp_path / "out",
             f"{folder / ('part-1.' + name.split('.', 1)[1])} is cut short")


def test_gzip_that_is_whole_passes_the_check(tmp_path):
    """Concatenated members and zero padding (as some writers leave) are whole; garbage is not gzip."""
    from sparkfs.io.input_files import check_gzip_whole

    whole = tmp_path / "two.csv.gz"
    whole.write_bytes(gzip.compress(b"a,label\n1,0\n") + gzip.compress(b"2,1\n") + b"\0" * 16)
    check_gzip_whole(str(whole))
    (tmp_path / "empty.csv.gz").write_bytes(b"")
    check_gzip_whole(str(tmp_path / "empty.csv.gz"))
    (tmp_path / "plain.csv.gz").write_text("a,label\n1,0\n")
    with pytest.raises(InvalidInputError, match="plain.csv.gz is not a whole gzip file .* damaged or not gzip"):
        check_gzip_whole(str(tmp_path / "plain.csv.gz"))


#: Spark's words for each case (as a URI input, which is not looked at before Spark, meets them).
SPARK_FAILURES = [
    ("org.apache.spark.SparkException: [FAILED_READ_FILE.NO_HINT] Encountered error while reading file "
     "hdfs://nn/d/x.libsvm.gz.  SQLSTATE: KD001\nCaused by: java.io.EOFException: Unexpected end of input stream",
     "hdfs://nn/d/x.libsvm.gz is cut short"),
    ("[FAILED_READ_FILE.PARQUET_COLUMN_DATA_TYPE_MISMATCH] Encountered error while reading file "
     "s3a://b/d/part-1.parquet. Data type mismatches when reading Parquet column [b]. Expected Spark type double, "
     "actual Parquet type BINARY. SQLSTATE: KD001",
     "s3a://b/d/part-1.parquet holds a column of another type than the other part files' (column [b]: Expected "
     "Spark type double, actual Parquet type BINARY)"),
    ("Caused by: java.lang.RuntimeException: hdfs://nn/d/notes.csv is not a Parquet file. Expected magic number",
     "hdfs://nn/d/notes.csv is not a Parquet file"),
    ("AnalysisException: [UNABLE_TO_INFER_SCHEMA] Unable to infer schema for Parquet. It must be specified manually.",
     "the input holds no data files Spark can read"),
]


@pytest.mark.parametrize("text, said", SPARK_FAILURES)
def test_spark_read_failures_of_a_uri_input_name_the_file(text, said):
    found = input_file_failure(RuntimeError(text))
    assert isinstance(found, InvalidInputError) and str(found).startswith(said), found
    assert input_file_failure(RuntimeError("java.lang.IllegalStateException: something else")) is None


def test_a_true_relevance_file_whose_header_claims_a_trillion_values(no_spark, tmp_path, capsys):
    """Refused from its header and size before Spark starts: nothing of 7.3 TiB is allocated."""
    claimed = tmp_path / "relevance.npy"
    with open(claimed, "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, {"descr": "<f8", "fortran_order": False, "shape": (10 ** 12,)})
        handle.write(b"\0" * 32)
    source = tmp_path / "in.csv"
    _frame().to_csv(source, index=False)
    _refused(capsys, ["stability", "--input", str(source), "--format", "csv", "--method", "anova", "--num-features",
                      "1", "--runs", "2", "--true-relevance", str(claimed), "--output", str(tmp_path / "out")],
             tmp_path / "out",
             f"--true-relevance {claimed} is not a whole .npy array file as numpy.save writes it (its header claims "
             "1,000,000,000,000 values of float64", "the file holds 32 bytes after it")


def test_a_text_file_without_a_final_line_end_is_announced(tmp_path, caplog):
    """A LIBSVM file cut after `18:0` converted (exit 0) with a shortened last row and no word."""
    import logging

    from sparkfs.io.readers import check_input_early
    from sparkfs.io.stores import location_of

    whole = "".join(f"{i % 2} 1:0.5 7:1 18:0.25\n" for i in range(4))
    cut = tmp_path / "cut.libsvm"
    cut.write_text(whole + "1 1:0.5 7:1 18:0")
    packed = tmp_path / "cut.libsvm.gz"
    packed.write_bytes(gzip.compress((whole + "1 1:0.5 18:0").encode()))
    complete = tmp_path / "complete.libsvm"
    complete.write_text(whole)
    with caplog.at_level(logging.WARNING, logger="sparkfs"):
        for path in (cut, packed, complete):
            check_input_early(location_of(str(path)), "libsvm", label_col="label")
    said = [record.getMessage() for record in caplog.records]
    assert said == [f"{path} does not end with a line end: its last row may have been cut short (a copy or download "
                    "that stopped), which reads as a shorter row without an error; if the file is complete, end it "
                    "with a newline" for path in (cut, packed)]


def test_convert_of_a_file_without_a_final_line_end_says_so(spark, tmp_path, capsys, caplog):
    """The command converts the file (exit 0: many whole files end so) and says the last row may be cut."""
    import logging

    import pandas as pd

    cut = tmp_path / "cut.libsvm"
    cut.write_text("".join(f"{i % 2} 1:0.5 7:1 18:0.25\n" for i in range(4)) + "1 1:0.5 7:1 18:0")
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING, logger="sparkfs"):
        assert main(["convert", "--master", "local[2]", str(cut), str(out)]) == 0, capsys.readouterr().err
    shown = capsys.readouterr().err + caplog.text
    assert f"{cut} does not end with a line end: its last row may have been cut short" in shown, shown
    assert len(pd.read_parquet(out)) == 5


def test_an_empty_csv_cell_is_named_with_its_line(spark, tmp_path, capsys):
    source = tmp_path / "holes.csv"
    source.write_text("a,b,label\n1.0,2.0,0\n1.5,,1\n2.0,,0\n")
    out = tmp_path / "out"
    message = _refused(capsys, ["select", "--master", "local[2]", *_select(source, out, "csv")[1:]], out,
                       "column 'b' has 2 empty value(s) (line 3 of ", "holes.csv): every feature needs a number in "
                       "every row; fill them in, or leave out those rows or the column")
    assert "NaN" not in message
    _refused(capsys, ["convert", "--master", "local[2]", str(source), str(out)], out, "column 'b' has 2 empty value(s)")
