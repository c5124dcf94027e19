"""Input paths as the help gives them: a glob where INPUT may be one (``dir/*.libsvm``,
``file:///dir/*.libsvm``, ``part-0[0-2].libsvm``, ``part-{0,2}.libsvm``) to ``select`` and ``convert``;
a Parquet directory partitioned Hive-style (``year=2020/``), whose folder column is not a feature
(docs/bad_input.md, "Files"). Every command runs in-process through ``sparkfs.cli.main`` on the shared
session (tests/conftest.py)."""

import json

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    """Five LIBSVM part files of 20 rows (feature 1 separates the classes) and a stray file."""
    folder = tmp_path_factory.mktemp("parts")
    rng = np.random.default_rng(2)
    for number in range(5):
        lines = []
        for row in range(20):
            label = row % 2
            lines.append(f"{label} 1:{label + 0.1 * rng.normal():.4f} 2:{rng.normal():.4f} 3:{rng.normal():.4f}\n")
        (folder / f"part-0{number}.libsvm").write_text("".join(lines))
    (folder / "notes.txt").write_text("not data\n")
    return folder


def _summary(out):
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("pattern, rows", [("*.libsvm", 100), ("part-0[0-2].libsvm", 60), ("part-0{0,2}.libsvm", 40),
                                           ("file://*.libsvm", 100)])
def test_select_reads_a_glob(spark, parts, tmp_path, pattern, rows):
    scheme, _, pattern = pattern.rpartition("//")
    out = tmp_path / "out"
    assert main(["select", "--master", "local[2]", "--input", (scheme + "//" if scheme else "") + str(parts / pattern),
                 "--format", "libsvm", "--method", "anova", "--num-features", "1", "--output", str(out)]) == 0
    summary = _summary(out)
    assert summary["n_rows"] == rows and summary["selected_names"] == ["f1"]
    assert summary["input_files"][0]["files"] == rows // 20


def test_convert_reads_a_glob_as_a_path_and_as_a_file_uri(spark, parts, tmp_path, capsys):
    for number, given in enumerate((str(parts / "*.libsvm"), "file://" + str(parts / "part-0[0-2].libsvm"))):
        out = tmp_path / f"out{number}"
        assert main(["convert", "--master", "local[2]", given, str(out)]) == 0, capsys.readouterr().err
        assert len(pd.read_parquet(out)) == (100 if number == 0 else 60)


def test_a_glob_that_matches_nothing_is_named(parts, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("sparkfs.spark.session.get_spark", lambda *a, **k: pytest.fail("Spark was asked for"))
    for argv in (["select", "--input", str(parts / "*.svm"), "--format", "libsvm"],
                 ["convert", str(parts / "part-9*.libsvm")]):
        out = tmp_path / "out"
        assert main([*argv, "--output", str(out)] if argv[0] == "select" else [*argv, str(out)]) == 2
        err = capsys.readouterr().err
        assert "sparkfs: error: input path not found: " in err and "(no file matches the pattern)" in err
        assert not out.exists()


def test_a_hive_partition_column_is_not_a_feature(spark, tmp_path, capsys):
    rng = np.random.default_rng(4)
    folder = tmp_path / "partitioned"
    for year in (2020, 2021):
        part = folder / f"year={year}"
        part.mkdir(parents=True)
        label = np.arange(30) % 2
        pd.DataFrame({"a": label + 0.1 * rng.normal(size=30), "b": rng.normal(size=30), "label": label}).to_parquet(
            part / "part-0.parquet", index=False)
    out = tmp_path / "out"
    assert main(["select", "--master", "local[2]", "--input", str(folder), "--format", "parquet", "--method", "anova",
                 "--num-features", "2", "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert (f"{folder}: column(s) ['year'] come from its folder names (Hive partitioning, e.g. year=.../), not from "
            "its files: left out of the features") in err
    assert _summary(out)["n_features"] == 2
    assert set(pd.read_parquet(out / "features.parquet")["name"]) == {"a", "b"}
