"""Our LIBSVM/SVMlight reader through the command line: SVMlight's comments, qid
and tabs accepted; the parse equal to Spark's own reader on valid files; every bad line refused
with exit 2, its file and line, and nothing written; the vector size bounded by the driver budget
before any vector exists."""

import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from sparkfs.cli import main
from sparkfs.errors import InvalidInputError
from sparkfs.io.libsvm_lines import LineProblem, parse_or_locate
from sparkfs.io.readers import read_dataset
from tests.helpers import jobs_run_by
from tests.helpers import refused as _refused

N_ROWS = 60


def _select(*args):
    return main(["select", "--master", "local[2]", "--method", "anova", *args])


def _plain_lines(n_rows=N_ROWS, seed=3):
    rng = np.random.default_rng(seed)
    lines = []
    for row in range(n_rows):
        label = row % 2
        indices = np.flatnonzero(rng.random(7) < 0.6) + 1
        values = rng.normal(loc=label, size=indices.size).round(4)
        lines.append(" ".join([str(label), *(f"{i}:{v:g}" for i, v in zip(indices, values))]))
    lines[0] += " 8:1"  # every file has the full size
    return lines


def _rows(frame):
    """(label, indices, values, size) of every row, sorted."""
    return sorted((row[0], row[1].indices.tolist(), row[1].values.tolist(), row[1].size) for row in frame.collect())


@pytest.mark.parametrize("n_files", [1, 7])
def test_parse_equals_sparks_libsvm_reader(spark, tmp_path, n_files):
    lines = _plain_lines(n_rows=70)
    lines = [f"{row}{line[1:]}" for row, line in enumerate(lines)]  # the label names the row
    folder = tmp_path / "data"
    folder.mkdir()
    for part, chunk in enumerate(np.array_split(np.array(lines, dtype=object), n_files)):
        (folder / f"part-{part}.libsvm").write_text("\n".join(chunk) + "\n")
    ours = read_dataset(spark, str(folder), "libsvm")
    theirs = spark.read.format("libsvm").load(str(folder))
    assert ours.num_features == theirs.first()["features"].size == 8
    assert _rows(ours.df) == _rows(theirs)


def test_tabs_comments_and_qid_select_as_the_same_rows_without_them(spark, tmp_path):
    plain = _plain_lines()
    decorated = ["# SVMlight file with comments", ""]
    for number, line in enumerate(plain):
        label, *features = line.split(" ")
        qid = [f"qid:{number // 10}"] if number % 3 else []
        decorated.append("\t".join([label, *qid, *features]) + (f"  # row {number}: a # b" if number % 2 else ""))
    (tmp_path / "plain.libsvm").write_text("\n".join(plain) + "\n")
    (tmp_path / "svmlight.txt").write_text("\r\n".join(decorated) + "\r\n")
    assert _rows(read_dataset(spark, str(tmp_path / "svmlight.txt"), "libsvm").df) == \
        _rows(read_dataset(spark, str(tmp_path / "plain.libsvm"), "libsvm").df)
    out = tmp_path / "out"
    assert _select("--input", str(tmp_path / "svmlight.txt"), "--format", "libsvm", "--output", str(out)) == 0
    table = pd.read_parquet(out / "features.parquet")
    assert len(table) == 8 and np.isfinite(table["score"]).all()


def test_line_numbers_are_exact_when_files_are_split(spark, tmp_path):
    """Blocks of one file read by different tasks: each block's lines are counted from the block
    before it, so the line number is the line's own."""
    lines = _plain_lines(n_rows=3000)
    lines[2345] = "1 3:1 2:1"
    path = tmp_path / "split.libsvm"
    path.write_text("\n".join(lines) + "\n")
    previous = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "8000")
    try:
        assert spark.read.text(str(path)).rdd.getNumPartitions() > 5
        with pytest.raises(InvalidInputError, match=f"line 2346 of {path} is not LIBSVM"):
            read_dataset(spark, str(path), "libsvm")
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", previous)


BAD_LINES = [
    ("1 1:inf", "'1:inf': the value 'inf' is not a finite number"),
    ("nan 1:0.5", "the label 'nan' is not a finite number"),
    ("NaN 1:0.5", "the label 'NaN' is not a finite number"),
    ("1 2147483648:1", "index 2147483648 is above 2147483647, the largest size of a Spark vector"),
    ("1 4:1 2:1", "'2:1': indices must be 1-based and increasing (2 after 4)"),
    ("1 2:1 2:3", "'2:3': indices must be 1-based and increasing (index 2 appears twice)"),
    ("1 3:", "'3:': the value '' is not a number"),
    ("1 x:1", "'x:1': the index 'x' is not a whole number"),
    ("1 0:1", "'0:1': index 0: indices are 1-based"),
    ("1 qid:a 1:1", "'qid:a': qid must be a whole number"),
]


@pytest.mark.parametrize("line, problem", BAD_LINES, ids=[case[0] for case in BAD_LINES])
def test_bad_line_is_refused_with_file_and_line(spark, tmp_path, capsys, line, problem):
    lines = _plain_lines()
    lines[40] = line
    path = tmp_path / "bad.libsvm"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    _refused(capsys, _select("--input", str(path), "--format", "libsvm", "--output", str(out)), out,
             f"line 41 of {path} is not LIBSVM", problem)


def test_the_first_bad_line_is_named_whatever_the_batch(spark):
    lines = _plain_lines(n_rows=500)
    lines[123], lines[400] = "1 5:1 5:1", "nan 1:1"
    with pytest.raises(LineProblem) as raised:
        parse_or_locate(pa.array(lines))
    assert raised.value.position == 123 and "index 5 appears twice" in raised.value.message


def test_largest_index_above_the_driver_budget_is_refused_in_seconds(spark, tmp_path, capsys):
    """One index 2147483647 in 60 rows (which grew Spark's reader's driver to 21 GB): refused from
    the check pass, naming the index, its line, the bound and the ways out."""
    lines = _plain_lines()
    lines[17] = "0 1:1 2147483647:1"
    path = tmp_path / "huge.libsvm"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    started = time.perf_counter()
    code = _select("--input", str(path), "--format", "libsvm", "--output", str(out))
    assert time.perf_counter() - started < 30
    message = _refused(capsys, code, out, f"line 18 of {path} has index 2147483647",
                       "above the driver budget of 1024 MiB, which holds at most 16777216 features",
                       "raise the budget (--driver-budget-mb", "does not lift this bound")
    # an explicit size is no way around the bound (refused before any pass); a larger budget is
    code = _select("--input", str(path), "--format", "libsvm", "--vector-size", "2147483647", "--output", str(out))
    _refused(capsys, code, out, "--vector-size 2147483647 asks for vectors of 2147483647 features")
    lines[17] = "0 1:1 20000000:1"
    path.write_text("\n".join(lines) + "\n")
    _refused(capsys, _select("--input", str(path), "--format", "libsvm", "--output", str(out)), out,
             "has index 20000000")
    assert "MiB" in message
    # behind a tab the size guess does not see it: the parse finds it, and it is refused the same way
    lines[17] = "0 1:1\t2147483647:1"
    path.write_text("\n".join(lines) + "\n")
    _refused(capsys, _select("--input", str(path), "--format", "libsvm", "--output", str(out)), out,
             f"line 18 of {path} has index 2147483647", "above the driver budget of 1024 MiB")


def test_index_above_an_explicit_vector_size_is_refused(spark, tmp_path, capsys):
    lines = _plain_lines()
    lines[5] = "1 2:1 9:0.5"
    path = tmp_path / "sized.libsvm"
    path.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    _refused(capsys, _select("--input", str(path), "--format", "libsvm", "--vector-size", "8", "--output", str(out)),
             out, f"line 6 of {path} is not LIBSVM", "'9:0.5': index 9 is above the vector size 8 (--vector-size)")
    assert _select("--input", str(path), "--format", "libsvm", "--vector-size", "12", "--output", str(out)) == 0
    assert len(pd.read_parquet(out / "features.parquet")) == 12


def test_an_explicit_vector_size_skips_the_scan_and_still_refuses_an_empty_file(spark, tmp_path):
    """With --vector-size there is no scan job: the parse's one action counts the data lines (a file
    of comments and blank lines is refused by name) and the vectors take the size given."""
    from sparkfs.io.libsvm import read_libsvm

    empty = tmp_path / "empty.libsvm"
    empty.write_text("# only a comment\n\n   \n")
    for size in (None, 5):
        with pytest.raises(InvalidInputError, match="the input has no rows"):
            read_libsvm(spark, str(empty), vector_size=size)
    path = tmp_path / "small.libsvm"
    path.write_text("1 1:0.5 3:2\n0 2:1\n")
    (frame, size), sized_jobs = jobs_run_by(spark, "sparkfs-libsvm-sized",
                                            lambda: read_libsvm(spark, str(path), vector_size=7))
    assert size == 7 and [row["features"].size for row in frame.collect()] == [7, 7]
    frame.unpersist()
    (frame, size), inferred_jobs = jobs_run_by(spark, "sparkfs-libsvm-inferred", lambda: read_libsvm(spark, str(path)))
    frame.unpersist()
    sized_jobs, inferred_jobs = len(sized_jobs), len(inferred_jobs)
    assert size == 3 and sized_jobs < inferred_jobs  # the scan (an aggregate: its jobs) is what is saved


def _read_counting(spark, path, monkeypatch):
    """(rows, size, parses, exact scans) of read_libsvm on ``path``."""
    from sparkfs.io import libsvm

    calls = {"parse": 0, "scan": 0}
    parse, scan = libsvm._parse_and_cache, libsvm.scan_lines

    def counted_parse(*args, **kwargs):
        calls["parse"] += 1
        return parse(*args, **kwargs)

    def counted_scan(*args, **kwargs):
        calls["scan"] += 1
        return scan(*args, **kwargs)

    monkeypatch.setattr(libsvm, "_parse_and_cache", counted_parse)
    monkeypatch.setattr(libsvm, "scan_lines", counted_scan)
    frame, size = libsvm.read_libsvm(spark, str(path))
    rows = _rows(frame)
    frame.unpersist()
    return rows, size, calls["parse"], calls["scan"]


@pytest.mark.parametrize("ending, parses, scans", [
    ("plain", 1, 0),                               # the guess is the size: one parse, no scan
    ("1 2:1 # see 30:1", 2, 0),                    # a comment's last token guesses too large
    ("1 2:1 9:2\t10:1", 2, 0),                     # a tab hides index 10 from the space split
    ("1 2:1 10:3   ", 2, 0),                       # blanks after the largest index
    ("1 2:1 # 99999999999:1", 1, 1),               # a guess above the budget's bound: the exact scan
])
def test_the_size_guess_is_checked_by_the_parse(spark, tmp_path, monkeypatch, ending, parses, scans):
    """The size is guessed from each line's last token and the parse's largest index decides: a
    wrong guess costs a second parse, never a wrong size (the same rows as a file of plain lines)."""
    lines = _plain_lines(n_rows=40)
    plain = list(lines)
    if ending != "plain":
        lines[11] = ending
        label, rest = ending.split("#")[0].split(" ", 1)
        plain[11] = " ".join([label, *rest.replace("\t", " ").split()])
    path, plain_path = tmp_path / "guess.libsvm", tmp_path / "plain.libsvm"
    path.write_text("\n".join(lines) + "\n")
    plain_path.write_text("\n".join(plain) + "\n")
    rows, size, parse_count, scan_count = _read_counting(spark, path, monkeypatch)
    expected = spark.read.format("libsvm").load(str(plain_path))
    assert size == expected.first()["features"].size == max(8, max(r[1][-1] + 1 for r in rows))
    assert rows == _rows(expected)
    assert (parse_count, scan_count) == (parses, scans)


def test_a_rewritten_file_is_read_again_and_unpersist_frees_the_parse(spark, tmp_path):
    """Each read is its own plan: a file rewritten in the same session gives its new rows (Spark's
    cache matches equal plans, and served the first read's rows before), for LIBSVM and CSV; the
    LIBSVM frame returned is the persisted one, so its unpersist() frees the parsed rows."""
    from sparkfs.io.libsvm import read_libsvm

    path = tmp_path / "rewritten.libsvm"
    persisted = spark.sparkContext._jsc.getPersistentRDDs
    path.write_text("1 1:1 3:2\n0 2:5\n")
    before = persisted().size()
    frame, _ = read_libsvm(spark, str(path))
    assert [row["features"].values.tolist() for row in frame.collect()] == [[1.0, 2.0], [5.0]]
    assert persisted().size() == before + 1
    frame.unpersist(blocking=True)
    assert persisted().size() == before
    path.write_text("1 1:7 3:9\n0 2:8\n")
    frame, _ = read_libsvm(spark, str(path))
    assert [row["features"].values.tolist() for row in frame.collect()] == [[7.0, 9.0], [8.0]]
    frame.unpersist()
    csv = tmp_path / "rewritten.csv"
    for values in ((1.5, 2.5), (3.5, 4.5)):
        csv.write_text(f"x,label\n{values[0]},0\n{values[1]},1\n")
        dataset = read_dataset(spark, str(csv), "csv", label_col="label")
        assert sorted(row[dataset.features_col][0] for row in dataset.df.collect()) == list(values)
