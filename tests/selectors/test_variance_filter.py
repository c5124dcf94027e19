"""`--method variance`: Spark ML's VarianceThresholdSelector on the filter base. The sample
variance of every feature (NumPy's ``var(ddof=1)``, written here) from one moments pass without
labels; ``--threshold T`` keeps what Spark ML's ``varianceThreshold=T`` keeps, dense and sparse, for 1
and 3 partitions; no p-values."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from sparkfs.methods import build_selector, labels_of
from tests.helpers import make_df, to_vectors


def _data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(60, 6)) * np.array([0.1, 1.0, 3.0, 0.5, 2.0, 1.0]) + np.array([1, -2, 0, 5, 0.5, 0])
    X[:, 5] = 4.0                       # constant: variance 0
    X[rng.random(X.shape) < 0.3] = 0.0  # sparse rows keep their zeros
    X[:, 5] = 4.0
    return X, rng.integers(0, 2, 60)


@pytest.mark.parametrize("sparse, partitions", [(False, 1), (True, 3)])
def test_scores_are_the_sample_variance_and_the_selection_is_spark_mls(spark, sparse, partitions):
    from pyspark.ml.feature import VarianceThresholdSelector

    X, y = _data()
    df = make_df(spark, X, y, partitions=partitions, sparse=sparse)
    model = build_selector("variance", {}).setNumFeatures(3).fit(df)
    np.testing.assert_allclose(model.scores, X.var(axis=0, ddof=1), rtol=1e-9, atol=1e-12)
    assert model.selectedFeatures == sorted(np.argsort(-X.var(axis=0, ddof=1))[:3].tolist())
    assert model.pValues is None and model.summary["n_rows"] == 60
    for threshold in (0.0, 0.5, 2.0):
        ours = build_selector("variance", {}).setThreshold(threshold).fit(df).selectedFeatures
        theirs = VarianceThresholdSelector(varianceThreshold=threshold, featuresCol="features",
                                           outputCol="selected").fit(df).selectedFeatures
        assert ours == sorted(theirs), threshold


def test_no_label_column_is_needed(spark):
    X, _ = _data(1)
    df = spark.createDataFrame([(vector,) for vector in to_vectors(X)], ["features"])
    model = build_selector("variance", {}).setNumFeatures(2).fit(df)
    np.testing.assert_allclose(model.scores, X.var(axis=0, ddof=1), rtol=1e-9, atol=1e-12)
    assert labels_of("variance") == "optional" and labels_of("anova") == "required"


def test_command_line_threshold_and_no_p_value_modes(spark, tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    X, y = _data(2)
    path = tmp_path / "data.libsvm"
    dump_svmlight_file(X, y, str(path), zero_based=False)
    out = tmp_path / "out"
    assert main(["select", "--master", "local[2]", "--input", str(path), "--format", "libsvm", "--method", "variance",
                 "--threshold", "0.5", "--output", str(out)]) == 0
    table = pd.read_parquet(out / "features.parquet")
    variance = X.var(axis=0, ddof=1)
    assert table.loc[table["selected"], "index"].tolist() == np.flatnonzero(variance > 0.5).tolist()
    assert json.loads(Path(out, "summary.json").read_text())["method"] == "variance"
    assert main(["select", "--master", "local[2]", "--input", str(path), "--format", "libsvm", "--method", "variance",
                 "--selection-mode", "fdr", "--output", str(tmp_path / "fdr")]) == 2
    assert "computes none" in capsys.readouterr().err


def test_evaluate_takes_variance_as_a_baseline(spark, tmp_path):
    """In each training fold the top k by the fold's sample variance, then the classifier: the
    accuracies of scikit-learn on those columns (sparkfs.evaluation.cross_validation)."""
    from sparkfs.evaluation import cross_validation as cv

    X, y = _data(3)
    X = np.round(X, 4)
    path = tmp_path / "small.csv"
    pd.DataFrame(X, columns=[f"g{i}" for i in range(X.shape[1])]).assign(label=y).to_csv(path, index=False)
    out = tmp_path / "eval"
    assert main(["evaluate", "--input", str(path), "--format", "csv", "--label-col", "label", "--master", "local[2]",
                 "--methods", "variance", "--classifiers", "nb", "--num-features", "1,3", "--cv", "2",
                 "--output", str(out)]) == 0
    results = pd.read_parquet(out / "results.parquet")
    for fold in cv.fold_plan(y, cv=2, seed=0):
        order = np.argsort(-X[fold.train].var(axis=0, ddof=1), kind="stable")
        expected = pd.DataFrame(cv.score_subsets(X[fold.train], y[fold.train], X[fold.test], y[fold.test], order,
                                                 [1, 3], ["nb"])).sort_values("k")
        got = results[(results["method"] == "variance") & (results["fold"] == fold.fold)].sort_values("k")
        np.testing.assert_allclose(got["accuracy"].to_numpy(), expected["accuracy"].to_numpy())
