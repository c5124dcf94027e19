"""The CLI and the spark-submit job end to end: formats, outputs, atomicity, exit codes, real data."""

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from sparkfs.cli import main

REPO = Path(__file__).resolve().parents[2]


def _run(args):
    return main(["select", "--master", "local[2]", *args])


def _read_output(path):
    table = pd.read_parquet(os.path.join(path, "features.parquet"))
    summary = json.loads(Path(path, "summary.json").read_text())
    return table, summary


@pytest.fixture(scope="module")
def breast_libsvm(tmp_path_factory, shared_data):
    from sklearn.datasets import dump_svmlight_file

    data = np.load(shared_data / "breast_w.npz")
    path = tmp_path_factory.mktemp("data") / "breast.libsvm"
    dump_svmlight_file(data["X"], data["y"], str(path), zero_based=False)
    return str(path), data


def test_libsvm_lfs_output_format(spark, breast_libsvm, tmp_path):
    path, data = breast_libsvm
    out = tmp_path / "out"
    assert _run(["--input", path, "--format", "libsvm", "--method", "lfs", "--num-features", "3",
                 "--param", "gamma=-0.5", "--output", str(out)]) == 0
    table, summary = _read_output(out)
    assert list(table.columns) == ["index", "name", "score", "rank", "selected", "forced"]
    assert table["name"].tolist() == [f"f{i}" for i in range(1, 10)]  # the file's own column numbers
    assert sorted(table["rank"]) == list(range(1, 10))
    assert table["selected"].sum() == 3
    assert table.loc[table["rank"] <= 3, "selected"].all()
    assert summary["n_rows"] == 683 and summary["n_features"] == 9 and summary["n_classes"] == 2
    assert summary["class_counts"] == np.bincount(data["y"]).tolist()
    assert summary["selected_indices"] == table.index[table["selected"]].tolist()
    for key in ("method", "params", "label_mapping", "seconds", "spark_version", "sparkfs_version"):
        assert key in summary
    assert summary["params"]["gamma"] == -0.5


def test_existing_output_is_refused_unless_overwrite(spark, breast_libsvm, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    args = ["--input", breast_libsvm[0], "--format", "libsvm", "--method", "lfs", "--output", str(out)]
    assert _run(args) == 2
    assert (out / "keep.txt").exists()
    # --overwrite replaces only an output of sparkfs select (tests/integration/test_output_safety.py)
    assert _run(args + ["--overwrite"]) == 2
    assert os.listdir(out) == ["keep.txt"]
    os.unlink(out / "keep.txt")
    os.rmdir(out)
    assert _run(args) == 0
    assert _run(args + ["--overwrite"]) == 0
    assert sorted(os.listdir(out)) == ["features.parquet", "model", "summary.json"]


def test_parquet_columns_with_string_labels(spark, tmp_path, shared_data):
    data = np.load(shared_data / "heart_statlog.npz")
    names = [str(n) for n in data["feature_names"]]
    frame = pd.DataFrame(data["X"], columns=names)
    frame["diagnosis"] = np.array(data["class_names"])[data["y"]].astype(str)
    frame.to_parquet(tmp_path / "heart.parquet")
    out = tmp_path / "out"
    assert _run(["--input", str(tmp_path / "heart.parquet"), "--format", "parquet", "--label-col", "diagnosis",
                 "--method", "lfs", "--threshold", "0.0", "--output", str(out)]) == 0
    table, summary = _read_output(out)
    assert table["name"].tolist() == names
    assert set(summary["label_mapping"].values()) == set(np.array(data["class_names"]).astype(str))
    assert table["selected"].tolist() == (table["score"] > 0.0).tolist()


def test_csv_and_config_file_with_flag_override(spark, tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(60, 4)), columns=["a", "b", "c", "d"])
    frame["y"] = rng.integers(0, 2, 60)
    frame.loc[frame.y == 1, "c"] += 3.0
    frame.to_csv(tmp_path / "x.csv", index=False)
    config = tmp_path / "job.yaml"
    config.write_text(f"input: {{path: {tmp_path / 'x.csv'}, format: csv, label_col: y}}\nmethod: lfs\n"
                      f"selection: {{num_features: 3}}\noutput: {{path: {tmp_path / 'ignored'}}}\n")
    out = tmp_path / "out"
    assert _run(["--config", str(config), "--num-features", "1", "--output", str(out)]) == 0
    table, summary = _read_output(out)
    assert table.loc[table.selected, "name"].tolist() == ["c"]
    assert not (tmp_path / "ignored").exists()


def test_bad_input_exits_nonzero_and_writes_nothing(spark, tmp_path, capsys):
    frame = pd.DataFrame({"a": [1.0, np.nan, 3.0, 4.0], "b": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 0, 1]})
    frame.to_parquet(tmp_path / "nan.parquet")
    out = tmp_path / "out"
    assert _run(["--input", str(tmp_path / "nan.parquet"), "--format", "parquet", "--label-col", "y",
                 "--method", "lfs", "--output", str(out)]) == 2
    assert "1 row(s) have NaN or infinite feature values" in capsys.readouterr().err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


@pytest.mark.parametrize("args, message", [
    (["--input", "/nonexistent/x.libsvm", "--format", "libsvm"], "input path not found"),
    (["--format", "libsvm", "--method", "nope"], "unknown method 'nope'"),
    (["--format", "libsvm", "--param", "gamma"], "--param expects name=value"),
])
def test_usage_errors(spark, breast_libsvm, tmp_path, capsys, args, message):
    full = ([*args, "--output", str(tmp_path / "o")] if "--input" in args
            else ["--input", breast_libsvm[0], *args, "--output", str(tmp_path / "o")])
    assert _run(full) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_anova_baseline_through_cli(spark, breast_libsvm, tmp_path):
    from sklearn.feature_selection import f_classif

    path, data = breast_libsvm
    out = tmp_path / "anova"
    assert _run(["--input", path, "--format", "libsvm", "--method", "anova", "--num-features", "4", "--output",
                 str(out)]) == 0
    table, _ = _read_output(out)
    np.testing.assert_allclose(table["score"], f_classif(data["X"], data["y"])[0], rtol=1e-6)


def test_simba_through_cli_on_a_sparse_text_set(spark, tmp_path, shared_data):
    """tr11 (term matrix, 9 classes) stays sparse through simba's weighted searches."""
    from sklearn.datasets import dump_svmlight_file

    data = np.load(shared_data / "tr11.npz")
    matrix = sp.load_npz(shared_data / "tr11.npz")
    dump_svmlight_file(matrix, data["y"], str(tmp_path / "t.libsvm"), zero_based=False)
    out = tmp_path / "simba"
    assert _run(["--input", str(tmp_path / "t.libsvm"), "--format", "libsvm", "--method", "simba", "--num-features",
                 "20", "--param", "batchSize=100", "--param", "iterations=200", "--output", str(out)]) == 0
    table, summary = _read_output(out)
    assert summary["method"] == "simba" and summary["steps"] == 2 and table["selected"].sum() == 20
    assert np.isfinite(table["score"]).all() and table["score"].max() == 1.0


def test_sparse_text_set_lfs(spark, tmp_path, shared_data):
    """BASEHOCK (1,993 x 4,862 term matrix): runs sparse end to end and equals a dense NumPy theta
    of the paper's setting (preset=paper: the counts as given; the standardised default is
    checked against eq. 19 in tests/selectors/test_lfs.py)."""
    from sklearn.datasets import dump_svmlight_file

    matrix = sp.load_npz(shared_data / "BASEHOCK.npz")
    labels = np.load(shared_data / "BASEHOCK.npz")["y"]
    dump_svmlight_file(matrix, labels, str(tmp_path / "b.libsvm"), zero_based=False)
    out = tmp_path / "out"
    assert _run(["--input", str(tmp_path / "b.libsvm"), "--format", "libsvm", "--method", "lfs",
                 "--num-features", "50", "--param", "preset=paper", "--output", str(out)]) == 0
    table, summary = _read_output(out)
    assert summary["n_features"] == matrix.shape[1] and summary["scaling"] == "none"
    dense = matrix.toarray()
    n = len(labels)
    between = sum(dense[labels == c].sum(0) ** 2 / (labels == c).sum() for c in np.unique(labels)) / n
    theta = between + 0.5 / n * (dense**2).sum(0) - 1.5 / n**2 * dense.sum(0) ** 2
    np.testing.assert_allclose(table["score"], theta, rtol=1e-9, atol=1e-12)


def test_uri_output_through_hadoop_file_system(spark, breast_libsvm, tmp_path, capsys):
    path, _ = breast_libsvm
    uri = f"file://{tmp_path}/uri-out"
    assert _run(["--input", path, "--format", "libsvm", "--method", "lfs", "--num-features", "2", "--output", uri]) == 0
    assert f"output: file:{tmp_path}/uri-out/features.parquet" in capsys.readouterr().out
    table, summary = _read_output(tmp_path / "uri-out")
    assert table["selected"].sum() == 2 and summary["n_rows"] == 683
    # An existing URI output is refused before any work, like a local one.
    assert _run(["--input", path, "--format", "libsvm", "--method", "lfs", "--output", uri]) == 2
    assert "already exists; pass --overwrite" in capsys.readouterr().err
    assert _run(["--input", path, "--format", "libsvm", "--method", "lfs", "--output", "nosuchfs://b/out"]) == 2
    assert "scheme 'nosuchfs'" in capsys.readouterr().err


def test_parzen_ise_through_cli_with_and_without_a_label(spark, tmp_path):
    """An unsupervised method: no label column needed; a named one gives the groups."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    frame = pd.DataFrame(X[::3], columns=["sepal_length", "sepal_width", "petal_length", "petal_width"])
    frame.to_csv(tmp_path / "unlabelled.csv", index=False)
    frame.assign(species=y[::3]).to_csv(tmp_path / "labelled.csv", index=False)
    fast = ["--param", "maxIter=2", "--param", "fcmMaxIter=4", "--param", "heldOutFeature=none", "--num-features", "2"]
    out = tmp_path / "fcm"
    assert _run(["--input", str(tmp_path / "unlabelled.csv"), "--format", "csv", "--method", "parzen-ise", *fast,
                 "--output", str(out)]) == 0
    table, summary = _read_output(out)
    assert summary["groups"] == "fcm" and summary["n_classes"] == 0 and summary["fcm"]["clusters"] == 3
    assert table["name"].tolist() == list(frame.columns) and table.selected.sum() == 2
    out = tmp_path / "labels"
    assert _run(["--input", str(tmp_path / "labelled.csv"), "--format", "csv", "--label-col", "species",
                 "--method", "parzen-ise", *fast, "--output", str(out)]) == 0
    _, summary = _read_output(out)
    assert summary["groups"] == "labels" and summary["n_classes"] == 3


def test_svm_rfe_defaults_finish_on_a_wide_set_without_a_warning_flood(spark, tmp_path, capsys):
    """100 x 2,000 at raw, uneven scales with nothing but --method: standardised, halved above 1,000
    features, every fit's convergence counted in the summary, at most one line about it on stderr,
    and a score per feature that orders them all."""
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(23)
    X = rng.normal(size=(100, 2000))
    y = (X[:, :5] @ [2.0, -2.0, 1.5, -1.5, 1.0] > 0).astype(int)
    X = X * rng.uniform(1.0, 2000.0, 2000) + 5000.0            # microarray-like raw intensities
    dump_svmlight_file(X, y, str(tmp_path / "wide.libsvm"), zero_based=False)
    out = tmp_path / "rfe"
    capsys.readouterr()
    assert _run(["--input", str(tmp_path / "wide.libsvm"), "--format", "libsvm", "--method", "svm-rfe",
                 "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "Liblinear" not in err and "ConvergenceWarning" not in err
    assert sum("converg" in line for line in err.splitlines()) <= 1
    table, summary = _read_output(out)
    assert summary["standardize"] is True and summary["centred"] is True and summary["halve_above"] == 1000
    assert summary["rfe_remaining"][:3] == [2000, 1000, 900]
    assert set(summary["convergence"]) == {"fits", "not_converged", "max_iter"}
    assert summary["convergence"]["fits"] == len(summary["rfe_remaining"])
    assert table["score"].nunique() == 2000                      # no ties: a total order
    assert {0, 1} <= set(table.sort_values("score", ascending=False)["index"].head(20))   # the two strongest
