"""`sparkfs evaluate` and `sparkfs report` end to end: selection on Spark inside each training fold,
classifiers on the driver, outputs and the self-contained report; numbers equal an in-memory
recomputation of the same folds."""

import json
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from sparkfs.evaluation import cross_validation as cv
from tests.core.test_fisher_markov import theta_eq19_literal
from tests.core.test_qfs import literal_pairwise_eq29, literal_unary_eq19
from tests.selectors.test_qfs_selector import brute_force_best_of_size


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    rng = np.random.default_rng(21)
    X = np.round(rng.normal(size=(48, 8)), 3)
    y = (X[:, 0] + 0.8 * X[:, 1] + 0.3 * rng.normal(size=48) > 0).astype(int)
    path = tmp_path_factory.mktemp("data") / "small.csv"
    pd.DataFrame(X, columns=[f"g{i}" for i in range(8)]).assign(label=y).to_csv(path, index=False)
    return str(path), X, y


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.sources = []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.sources.append(dict(attrs)["src"])


def test_evaluate_outputs_report_and_the_fold_numbers(spark, small_csv, tmp_path, capsys):
    path, X, y = small_csv
    out = tmp_path / "eval"
    command = ["evaluate", "--input", path, "--format", "csv", "--label-col", "label", "--master", "local[2]",
               "--methods", "lfs,qfs,mutual-info,random", "--classifiers", "knn,nb", "--num-features", "1,2,4",
               "--cv", "3", "--param", "lfs.gamma=-0.5", "--param", "qfs.gamma=0", "--param", "lfs.preset=paper",
               "--param", "qfs.preset=paper", "--output", str(out)]   # the references below: eq. 19/29 on raw data
    assert main(command) == 0
    printed = capsys.readouterr()
    results = pd.read_parquet(out / "results.parquet")
    assert len(results) == 4 * 2 * 3 * 3                      # methods x classifiers x k x folds
    # The recommendation: per classifier the (method, k) of lowest mean error, and that method
    # fitted on all 48 rows (lfs: the top k of eq. 19 on all rows), printed and in the report.
    recommended = json.loads((out / "recommendation.json").read_text())["recommendations"]
    assert [entry["classifier"] for entry in recommended] == ["knn", "nb"]
    for entry in recommended:
        assert f"recommended for {entry['classifier']}: {entry['method']} with k={entry['k']}" in printed.out
        assert f"fitting {entry['method']} on all 48 rows" in printed.err
        assert len(entry["features"]) == entry["k"] and set(entry["features"]) <= {f"g{i}" for i in range(8)}
        if entry["method"] == "lfs":
            top = np.argsort(-theta_eq19_literal(X, y, -0.5), kind="stable")[:entry["k"]]
            assert entry["features"] == [f"g{i}" for i in top]
    assert set(results["method"]) == {"lfs", "qfs", "mutual-info", "random"}
    # The lfs rows equal the same folds recomputed in memory: LFS on the training rows only.
    folds = cv.fold_plan(y, cv=3, seed=0)
    for fold in folds:
        scores = theta_eq19_literal(X[fold.train], y[fold.train], -0.5)
        expected = pd.DataFrame(cv.score_subsets(X[fold.train], y[fold.train], X[fold.test], y[fold.test],
                                                 np.argsort(-scores, kind="stable"), [1, 2, 4], ["knn", "nb"]))
        got = results[(results["method"] == "lfs") & (results["fold"] == fold.fold)].sort_values(["classifier", "k"])
        expected = expected.sort_values(["classifier", "k"])
        np.testing.assert_allclose(got["accuracy"].to_numpy(), expected["accuracy"].to_numpy())
    # The qfs rows: each k classified on the best k-subset of the QFS objective (eq. 19 and 29 on
    # the training rows, brute force), not on LFS's top k. (At gamma = -0.5 on these raw data no
    # beta selects fewer than 7 features: every k would get the nearest reachable size.)
    exact = 0
    for fold in folds:
        unary = literal_unary_eq19(X[fold.train], y[fold.train], 0.0)
        pairwise = literal_pairwise_eq29(X[fold.train], y[fold.train], 0.0)
        got = results[(results["method"] == "qfs") & (results["fold"] == fold.fold)]
        for k in (1, 2, 4):
            rows = got[got["k"] == k].sort_values("classifier")
            best, unique = brute_force_best_of_size(unary, pairwise, k)
            if rows["n_selected"].iloc[0] != k or not unique:
                continue
            exact += 1
            expected = pd.DataFrame(cv.score_subsets(X[fold.train], y[fold.train], X[fold.test], y[fold.test],
                                                     {k: sorted(best)}, [k], ["knn", "nb"])).sort_values("classifier")
            np.testing.assert_allclose(rows["accuracy"].to_numpy(), expected["accuracy"].to_numpy())
    assert exact >= 6
    html = (out / "report.html").read_text()
    parser = _Images()
    parser.feed(html)
    assert parser.sources and all(src.startswith("data:image/png;base64,") for src in parser.sources)
    assert "http://" not in html and "https://" not in html and "lfs.gamma=-0.5" in html
    summary = pd.read_csv(out / "summary.csv")
    assert {"method", "classifier", "k", "accuracy_mean", "macro_f1_mean"} <= set(summary.columns)
    # report rebuilds the page from the saved results alone; a second evaluate fits nothing.
    (out / "report.html").unlink()
    assert main(["report", str(out)]) == 0 and (out / "report.html").is_file()
    capsys.readouterr()
    assert main(command) == 0
    again = capsys.readouterr()
    assert "fitted now: 0" in again.out and "on all 48 rows" not in again.err
    study = json.loads((out / "study.json").read_text())
    assert study["n_features"] == 8


def test_evaluate_refuses_bad_requests(spark, small_csv, tmp_path, capsys):
    path, _, _ = small_csv
    base = ["evaluate", "--input", path, "--format", "csv", "--label-col", "label", "--output", str(tmp_path / "x")]
    assert main([*base, "--methods", "lfs,nope"]) == 2
    assert "unknown method(s) ['nope']" in capsys.readouterr().err
    assert main([*base, "--methods", "lfs", "--classifiers", "gbm"]) == 2
    assert "unknown classifier(s) ['gbm']" in capsys.readouterr().err
    assert main([*base, "--methods", "lfs", "--param", "relieff.k=3"]) == 2
    assert "METHOD.NAME=VALUE" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_evaluate_with_probes_and_a_separate_test_set(spark, small_csv, tmp_path):
    path, X, y = small_csv
    frame = pd.read_csv(path)
    frame.iloc[:36].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[36:].to_csv(tmp_path / "test.csv", index=False)
    out = tmp_path / "probes"
    assert main(["evaluate", "--input", str(tmp_path / "train.csv"), "--test-input", str(tmp_path / "test.csv"),
                 "--format", "csv", "--label-col", "label", "--master", "local[2]", "--methods", "relieff,mrmr,random",
                 "--classifiers", "nb", "--num-features", "2,4", "--probes", "6", "--param", "relieff.k=3",
                 "--output", str(out)]) == 0
    results = pd.read_parquet(out / "results.parquet")
    assert len(results) == 3 * 1 * 2 and set(results["test_rows"]) == {12}
    auc = pd.read_csv(out / "selection_auc.csv")
    assert set(auc["method"]) == {"relieff", "mrmr", "random"} and auc["auc"].between(0, 1).all()
    study = json.loads((out / "study.json").read_text())
    assert study["n_features"] == 14 and study["description"]["feature_names"][-1] == "probe5"
    assert "roc.png" in (out / "report.html").read_text() or (out / "roc.png").is_file()


def test_evaluate_classifies_on_spark_above_the_driver_budget(spark, small_csv, tmp_path, capsys):
    """With the fold's reduced data above --driver-budget-mb, svm, nb and tree run on pyspark.ml;
    the results say so, and Gaussian naive Bayes agrees with scikit-learn's on the same folds."""
    path, X, y = small_csv
    base = ["evaluate", "--input", path, "--format", "csv", "--label-col", "label", "--master", "local[2]",
            "--methods", "lfs", "--num-features", "2", "--cv", "2"]
    tiny = ["--driver-budget-mb", "0.0001"]  # 13 values: every fold is above it
    out = tmp_path / "spark"
    assert main([*base, *tiny, "--classifiers", "svm,nb,tree", "--output", str(out)]) == 0
    results = pd.read_parquet(out / "results.parquet")
    assert set(results["engine"]) == {"spark"} and len(results) == 3 * 2
    assert "pyspark.ml on Spark (reduced data above the driver budget): svm (2), nb (2), tree (2)" \
        in (out / "report.html").read_text()
    driver = tmp_path / "driver"
    assert main([*base, "--classifiers", "svm,nb,tree", "--output", str(driver)]) == 0
    on_driver = pd.read_parquet(driver / "results.parquet")
    assert set(on_driver["engine"]) == {"scikit-learn"}
    key = ["classifier", "k", "fold"]
    both = results.merge(on_driver, on=key, suffixes=("_spark", "_driver"))
    nb = both[both["classifier"] == "nb"]
    np.testing.assert_allclose(nb["accuracy_spark"], nb["accuracy_driver"], atol=1.0 / 24 + 1e-12)
    for name in ("svm", "tree"):
        assert results.loc[results["classifier"] == name, "accuracy"].mean() > 0.7, name
    capsys.readouterr()
    assert main([*base, *tiny, "--classifiers", "knn,nb", "--output", str(tmp_path / "knn")]) == 2
    assert "classified on Spark, which has no ['knn']" in capsys.readouterr().err
    assert not (tmp_path / "knn").exists()


def test_evaluate_killed_halfway_resumes_to_the_same_results(spark, small_csv, tmp_path, capsys):
    """An evaluation killed (SIGKILL, its Spark JVM with it) once two (method, fold) results are
    saved: the same command fits only the missing ones and ends with the same results."""
    import os
    import signal
    import subprocess
    import sys
    import time

    path, _, _ = small_csv
    command = ["evaluate", "--input", path, "--format", "csv", "--label-col", "label", "--methods", "lfs,random",
               "--classifiers", "nb", "--num-features", "1,3", "--cv", "4", "--master", "local[2]"]
    assert main([*command, "--output", str(tmp_path / "whole")]) == 0
    second = tmp_path / "killed"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    process = subprocess.Popen([sys.executable, "-m", "sparkfs.cli", *command, "--output", str(second)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while len(list(second.glob("folds/*/*.npz"))) < 2 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    saved = len(list(second.glob("folds/*/*.npz")))
    assert 2 <= saved < 8 and not (second / "results.parquet").exists()
    capsys.readouterr()
    assert main([*command, "--output", str(second)]) == 0
    assert f"fitted now: {8 - saved}" in capsys.readouterr().out
    whole, resumed = (pd.read_parquet(tmp_path / name / "results.parquet") for name in ("whole", "killed"))
    pd.testing.assert_frame_equal(whole, resumed)


def test_a_libsvm_test_set_takes_the_training_sets_vector_size(spark, tmp_path):
    """The test rows never use the last feature (LIBSVM omits zeros), so alone they would read as
    3 features; without --vector-size they take the training set's 4."""
    rng = np.random.default_rng(1)

    def write(path, rows, last_feature):
        with open(path, "w") as handle:
            for i in range(rows):
                values = rng.normal(size=4) + (i % 2)
                used = range(1, 5) if last_feature else range(1, 4)
                handle.write(f"{i % 2} " + " ".join(f"{j}:{values[j - 1]:.4f}" for j in used) + "\n")
        return str(path)

    train, test = write(tmp_path / "train.libsvm", 30, True), write(tmp_path / "test.libsvm", 10, False)
    out = tmp_path / "out"
    assert main(["evaluate", "--input", train, "--test-input", test, "--format", "libsvm", "--master", "local[2]",
                 "--methods", "random", "--classifiers", "nb", "--num-features", "2", "--output", str(out)]) == 0
    assert set(pd.read_parquet(out / "results.parquet")["test_rows"]) == {10}
