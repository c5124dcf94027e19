"""``--keep`` / ``--exclude`` on ``select``, ``evaluate`` and ``stability``: names resolved against the
input's feature names or given as 0-based indices; kept features reported as forced; bad names,
out-of-range indices, a feature both kept and excluded and more kept features than the selection
holds refused with exit 2 before any Spark job and before anything is written.

Every command runs in-process through ``sparkfs.cli.main`` on the shared session (tests/conftest.py).
"""

import json

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from tests.helpers import jobs_run_by, refused

COLUMNS = ["apple", "bread", "cheese", "dates", "eggs", "flour"]


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """A CSV of 40 rows and 6 named features; 'cheese' separates the classes, 'flour' is noise."""
    rng = np.random.default_rng(3)
    folder = tmp_path_factory.mktemp("keep")
    frame = pd.DataFrame(rng.integers(0, 4, size=(40, 6)).astype(float), columns=COLUMNS)
    frame["label"] = np.arange(40) % 2
    frame.loc[frame["label"] == 1, "cheese"] += 5
    frame.loc[frame["label"] == 1, "bread"] += 3
    frame.to_csv(folder / "food.csv", index=False)
    lines = [" ".join([str(label)] + [f"{j + 1}:{v:g}" for j, v in enumerate(row) if v])
             for label, row in zip(frame["label"], frame[COLUMNS].to_numpy())]
    (folder / "food.libsvm").write_text("\n".join(lines) + "\n")
    return folder


def _select(source, out, *extra, fmt="csv"):
    return main(["select", "--input", str(source), "--format", fmt, "--method", "anova", "--num-features", "3",
                 "--master", "local[2]", "--output", str(out), *extra])


def test_select_keeps_and_excludes_by_name_and_index(spark, table, tmp_path):
    out = tmp_path / "out"
    assert _select(table / "food.csv", out, "--keep", "flour,0", "--exclude", "cheese") == 0
    features = pd.read_parquet(out / "features.parquet")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["selection"]["kept"] == [5, 0] and summary["selection"]["excluded"] == [2]
    assert summary["selected_names"] == ["apple", "bread", "flour"]  # the kept two, then the best other
    assert features.loc[features["forced"], "name"].tolist() == ["apple", "flour"]
    assert not features.loc[features["name"] == "cheese", "selected"].item()
    assert features.loc[features["name"] == "cheese", "rank"].item() == 1  # still scored: the best score


def test_libsvm_names_its_features_by_the_files_columns(spark, table, tmp_path):
    """f<column> is the LIBSVM file's 1-based column: f6 is feature 5 ('flour'); a whole number is 0-based."""
    out = tmp_path / "out"
    assert _select(table / "food.libsvm", out, "--keep", "f6", "--exclude", "2", fmt="libsvm") == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["selection"]["kept"] == [5] and 5 in summary["selected_indices"]
    assert summary["selection"]["excluded"] == [2] and 2 not in summary["selected_indices"]


@pytest.mark.parametrize("flags, fragments", [
    (["--keep", "butter"], ["--keep butter", "no feature is named so", "'apple'"]),
    (["--exclude", "9"], ["--exclude 9", "feature index 9 is outside the input's 6 features"]),
    (["--keep", "cheese", "--exclude", "2"], ["--keep and --exclude both name feature cheese"]),
    (["--keep", "apple,bread,dates,eggs"], ["--keep names 4 features", "holds only 3", "--num-features 3"]),
])
def test_select_refuses_before_any_spark_job(spark, table, tmp_path, capsys, flags, fragments):
    out = tmp_path / "out"
    code, jobs = jobs_run_by(spark, "keep-refusal", lambda: _select(table / "food.csv", out, *flags))
    refused(capsys, code, out, *fragments)
    assert jobs == []


def test_libsvm_index_beyond_the_vector_size_is_refused(spark, table, tmp_path, capsys):
    out = tmp_path / "out"
    code = _select(table / "food.libsvm", out, "--keep", "f9", "--vector-size", "6", fmt="libsvm")
    refused(capsys, code, out, "--keep f9", "feature index 8 is outside the input's 6 features")


def test_evaluate_and_stability_take_them(spark, table, tmp_path, capsys, monkeypatch):
    study = tmp_path / "stability"
    assert main(["stability", "--input", str(table / "food.csv"), "--format", "csv", "--method", "anova",
                 "--runs", "2", "--num-features", "2,3", "--keep", "flour", "--exclude", "cheese",
                 "--master", "local[2]", "--output", str(study)]) == 0
    runs = pd.read_parquet(study / "runs.parquet")
    assert all(5 in selected and 2 not in selected for selected in runs["selected"])
    from sparkfs.commands import evaluate

    picked = []
    rank_fold = evaluate._FoldWork.rank_fold
    monkeypatch.setattr(evaluate._FoldWork, "rank_fold",
                        lambda work, method, fold: picked.append(rank_fold(work, method, fold)) or picked[-1])
    assert main(["evaluate", "--input", str(table / "food.csv"), "--format", "csv", "--methods", "anova,random",
                 "--classifiers", "nb", "--cv", "2", "--num-features", "1,2", "--keep", "flour", "--exclude", "2",
                 "--master", "local[2]", "--output", str(tmp_path / "evaluated")]) == 0
    assert picked and all(subset[0] == 5 and 2 not in subset for fold in picked for subset in fold.subsets.values())
    evaluation = tmp_path / "evaluate"
    code = main(["evaluate", "--input", str(table / "food.csv"), "--format", "csv", "--methods", "anova",
                 "--num-features", "1,2", "--keep", "flour,apple", "--master", "local[2]", "--output",
                 str(evaluation)])
    refused(capsys, code, evaluation, "--keep names 2 features", "the smallest --num-features 1")


# The config file's selection.keep / selection.exclude ---------------------------------------------


@pytest.fixture()
def no_spark(monkeypatch):
    import sparkfs.spark.session

    monkeypatch.setattr(sparkfs.spark.session, "get_spark", lambda *a, **k: pytest.fail("Spark started"))


def _job(folder, selection):
    job = folder / "job.yaml"
    job.write_text(f"method: anova\nselection: {selection}\n")
    return job


def _select_job(table, job, out, *extra):
    return main(["select", "--config", str(job), "--input", str(table / "food.csv"), "--format", "csv",
                 "--master", "local[2]", "--output", str(out), *extra])


def test_the_config_keeps_and_excludes_as_the_flags_do(spark, table, tmp_path):
    out = tmp_path / "out"
    job = _job(tmp_path, "{num_features: 3, keep: [flour, 0], exclude: cheese}")
    assert _select_job(table, job, out) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["selection"]["kept"] == [5, 0] and summary["selection"]["excluded"] == [2]
    assert summary["selected_names"] == ["apple", "bread", "flour"]
    # --keep replaces selection.keep; the file's exclude stays
    assert _select_job(table, job, tmp_path / "flag", "--keep", "eggs") == 0
    summary = json.loads((tmp_path / "flag" / "summary.json").read_text())
    assert summary["selection"]["kept"] == [4] and summary["selection"]["excluded"] == [2]


@pytest.mark.parametrize("selection, flags, fragments", [
    ("{num_features: 3, keep: [butter]}", [], ["selection.keep in JOB butter: no feature is named so"]),
    ("{num_features: 3, exclude: '9'}", [], ["selection.exclude in JOB 9: feature index 9 is outside"]),
    # the flag replaces the key: butter is never looked up, apple is both kept (flag) and excluded (file)
    ("{num_features: 3, keep: [butter], exclude: [apple]}", ["--keep", "apple"],
     ["--keep and selection.exclude in JOB both name feature apple"]),
    # --num-features replaces the file's selection rule, not its kept features
    ("{num_features: 5, keep: [apple, bread, cheese]}", ["--num-features", "2"],
     ["selection.keep in JOB names 3 features but the selection holds only 2 (--num-features 2)"]),
    ("{num_features: 3, keep: [1.5]}", [], ["selection.keep in JOB must be a list of feature names and 0-based "
                                            "indices, or a non-empty string of them separated by commas, got a list"]),
    ("{num_features: 3, keep: [-1]}", [], ["selection.keep in JOB must be a list of feature names"]),
    ("{num_features: 3, exclude: {a: 1}}", [], ["selection.exclude in JOB must be a list", "got a mapping"]),
])
def test_the_config_keys_are_refused_before_spark(table, tmp_path, capsys, no_spark, selection, flags, fragments):
    out = tmp_path / "out"
    job = _job(tmp_path, selection)
    refused(capsys, _select_job(table, job, out, *flags), out,
            *[fragment.replace("JOB", str(job)) for fragment in fragments])
