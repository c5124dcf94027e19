"""`--method f-regression`: the F test of a one-feature linear regression on a continuous
label, on the filter base. Checked against the equation written here in NumPy (the Pearson
correlation through ``np.corrcoef``), scikit-learn's ``f_regression`` and Spark ML's ``FValueTest``
on scikit-learn's diabetes data and Friedman #1, dense and sparse, 1 and 3 partitions; every
selection mode; the label type never guessed (anova refuses a continuous label and names
f-regression, the continuous-label refusal names --label-type)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sparkfs.cli import main
from sparkfs.methods import build_selector
from sparkfs.selectors.baseline import UnivariateTestSelector
from tests.helpers import make_df, refused


def _reference(X, y):
    """F_j = r_j^2 / (1 - r_j^2) (n - 2) with r_j the Pearson correlation, and its F(1, n-2) tail."""
    n = X.shape[0]
    r = np.array([np.corrcoef(X[:, j], y)[0, 1] for j in range(X.shape[1])])
    f_values = r ** 2 / (1 - r ** 2) * (n - 2)
    return f_values, stats.f.sf(f_values, 1, n - 2)


def _diabetes():
    from sklearn.datasets import load_diabetes

    data = load_diabetes()
    return data.data, data.target


def _friedman(sparse_zeros=False):
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=300, n_features=15, noise=1.0, random_state=0)
    if sparse_zeros:  # term-like zeros: the sums must skip them and still be exact
        X = np.where(X < 0.3, 0.0, X)
    return X, y


@pytest.mark.parametrize("data, sparse, partitions", [("diabetes", False, 1), ("diabetes", True, 3),
                                                      ("friedman", False, 3), ("friedman-sparse", True, 1)])
def test_scores_and_p_values_are_the_f_test_of_the_correlation(spark, data, sparse, partitions):
    from sklearn.feature_selection import f_regression

    X, y = {"diabetes": _diabetes, "friedman": _friedman, "friedman-sparse": lambda: _friedman(True)}[data]()
    model = build_selector("f-regression", {}).setNumFeatures(5).fit(make_df(spark, X, y, partitions, sparse))
    f_values, p_values = _reference(X, y)
    np.testing.assert_allclose(model.scores, f_values, rtol=1e-9)
    np.testing.assert_allclose(model.pValues, p_values, rtol=1e-7, atol=1e-300)
    theirs_f, theirs_p = f_regression(X, y)
    np.testing.assert_allclose(model.scores, theirs_f, rtol=1e-9)
    np.testing.assert_allclose(model.pValues, theirs_p, rtol=1e-7, atol=1e-300)
    assert model.selectedFeatures == sorted(np.argsort(-f_values, kind="stable")[:5].tolist())
    assert model.summary["label_type"] == "continuous" and model.summary["n_rows"] == X.shape[0]


def test_friedman_informative_features_come_first(spark):
    """Friedman #1: y depends on x0..x4 only; x2's effect is a parabola around 0.5, which a linear F
    test cannot see (its correlation is near 0): the four others lead the ranking."""
    X, y = _friedman()
    model = build_selector("f-regression", {}).setNumFeatures(4).fit(make_df(spark, X, y, 2))
    assert model.selectedFeatures == [0, 1, 3, 4]


def _spark_ml(spark, df, count):
    """(FValueTest's row, UnivariateFeatureSelector's top ``count``) of Spark ML on ``df``."""
    from pyspark.ml.feature import UnivariateFeatureSelector
    from pyspark.sql import DataFrame

    # pyspark has no wrapper for FValueTest (what UnivariateFeatureSelector runs here): its JVM class
    test = DataFrame(spark._jvm.org.apache.spark.ml.stat.FValueTest.test(df._jdf, "features", "label"), spark).first()
    selector = (UnivariateFeatureSelector(outputCol="selected").setFeatureType("continuous")
                .setLabelType("continuous").setSelectionThreshold(count).fit(df))
    return test, sorted(selector.selectedFeatures)


def test_equals_spark_mls_f_value_test_and_its_selector(spark):
    """Scores equal FValueTest's; the selection equals UnivariateFeatureSelector's where its p-values are
    not rounded to 0 (Friedman #1 with noise)."""
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=80, n_features=12, noise=4.0, random_state=1)
    df = make_df(spark, X, y, 2)
    theirs, spark_ml_top = _spark_ml(spark, df, 3)
    model = build_selector("f-regression", {}).setNumFeatures(3).fit(df)
    np.testing.assert_allclose(model.scores, theirs["fValues"].toArray(), rtol=1e-9)
    np.testing.assert_allclose(model.pValues, theirs["pValues"].toArray(), rtol=1e-6, atol=1e-14)
    assert np.all(theirs["pValues"].toArray()[spark_ml_top] > 1e-15)
    assert model.selectedFeatures == spark_ml_top


def test_spark_mls_p_values_round_to_zero_and_break_its_top_by_index(spark):
    """The one difference, documented (docs/usage.md, "Continuous labels"): Spark ML computes a p-value
    as 1 - CDF, which is 0 below about 1e-16, and ranks by p-value then index. On diabetes five
    features get p = 0, so its top 4 is the first four of them by index ([2, 3, 6, 7]) where the F
    order (the exact p-values' order, ours) is [2, 8, 3, 7]."""
    X, y = _diabetes()
    df = make_df(spark, X, y, 2)
    theirs, spark_ml_top = _spark_ml(spark, df, 4)
    assert np.flatnonzero(theirs["pValues"].toArray() == 0.0).tolist() == [2, 3, 6, 7, 8]
    assert spark_ml_top == [2, 3, 6, 7]
    model = build_selector("f-regression", {}).setNumFeatures(4).fit(df)
    assert model.selectedFeatures == [2, 3, 7, 8] and np.all(model.pValues[[2, 3, 6, 7, 8]] > 0)


@pytest.mark.parametrize("mode, threshold", [("fpr", 0.01), ("fdr", 0.05), ("fwe", 0.05), ("percentile", 0.3)])
def test_every_selection_mode(spark, mode, threshold):
    X, y = _diabetes()
    selector = build_selector("f-regression", {}).setSelectionMode(mode).setSelectionThreshold(threshold)
    model = selector.fit(make_df(spark, X, y, 1))
    _, p_values = _reference(X, y)
    p = X.shape[1]
    if mode == "fpr":
        expected = np.flatnonzero(p_values < threshold)
    elif mode == "fwe":
        expected = np.flatnonzero(p_values < threshold / p)
    elif mode == "percentile":
        expected = np.sort(np.argsort(-_reference(X, y)[0], kind="stable")[:int(p * threshold)])
    else:  # Benjamini-Hochberg: the largest i with p_(i) <= alpha i / p, and every p-value up to it
        ordered = np.sort(p_values)
        passing = np.flatnonzero(ordered <= threshold * np.arange(1, p + 1) / p)
        expected = np.flatnonzero(p_values <= ordered[passing[-1]]) if passing.size else np.array([], int)
    assert model.selectedFeatures == expected.tolist()


def test_constant_feature_scores_zero_and_an_exact_line_scores_infinity(spark):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 3))
    y = 2.0 * X[:, 0] + rng.normal(size=40)
    X[:, 1] = 3.25
    X[:, 2] = (y - 1.0) / 4.0  # exactly linear in y
    model = build_selector("f-regression", {}).setNumFeatures(1).fit(make_df(spark, X, y, 2))
    assert model.scores[1] == 0.0 and model.pValues[1] == 1.0
    assert model.scores[2] == np.inf and model.pValues[2] == 0.0
    assert model.selectedFeatures == [2]


@pytest.mark.parametrize("labels, message", [
    ([1.5] * 20, "is constant (1.5 in all 20 rows)"),
    ([float(i) if i != 4 else float("nan") for i in range(20)], "1 row(s) have a null, NaN or infinite label"),
])
def test_bad_targets_are_refused(spark, labels, message):
    from sparkfs.errors import InvalidInputError

    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(InvalidInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_selector("f-regression", {}).setNumFeatures(1).fit(make_df(spark, X, labels, 2))


def test_the_label_type_is_never_guessed():
    with pytest.raises(ValueError, match="needs a categorical label; for a continuous label use test='f-regression'"):
        build_selector("anova", {"labelType": "continuous"})._check_fit_params()
    with pytest.raises(ValueError, match="regresses on a continuous label"):
        UnivariateTestSelector(test="f-regression", labelType="categorical")._check_fit_params()
    assert UnivariateTestSelector(test="f-regression").labelTypeInUse() == "continuous"
    with pytest.raises(ValueError, match="Summarizer"):
        build_selector("f-regression", {"statsEngine": "jvm"})._check_fit_params()
    with pytest.raises(ValueError, match="must be a str among"):
        build_selector("anova", {"labelType": "numeric"})


def test_command_line(spark, tmp_path, capsys):
    X, y = _diabetes()
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(target=y)
    path = tmp_path / "diabetes.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["select", "--master", "local[2]", "--input", str(path), "--format", "csv", "--label-col", "target",
                 "--method", "f-regression", "--selection-mode", "fdr", "--output", str(out)]) == 0
    table = pd.read_parquet(out / "features.parquet")
    np.testing.assert_allclose(table.sort_values("index")["score"], _reference(X, y)[0], rtol=1e-9)
    summary = json.loads(Path(out, "summary.json").read_text())
    assert summary["label_type"] == "continuous" and summary["n_classes"] == 0
    # anova on the same continuous target: refused, naming where to go
    code = main(["select", "--master", "local[2]", "--input", str(path), "--format", "csv", "--label-col", "target",
                 "--method", "anova", "--num-features", "3", "--output", str(tmp_path / "anova")])
    refused(capsys, code, tmp_path / "anova", "214 distinct values in 442 rows, 152 of them in fewer than 3 rows",
            "--label-type continuous")
    # --label-type continuous with a method that needs classes: refused before Spark, naming the methods
    code = main(["select", "--master", "local[2]", "--input", str(path), "--format", "csv", "--label-col", "target",
                 "--method", "lfs", "--label-type", "continuous", "--num-features", "3", "--output",
                 str(tmp_path / "lfs")])
    refused(capsys, code, tmp_path / "lfs", "--method lfs", "f-regression")


def test_evaluate_and_stability_refuse_a_continuous_method(spark, tmp_path, capsys):
    """Both draw class-stratified samples (evaluate also scores classifiers): refused before any fit."""
    path = tmp_path / "data.libsvm"
    path.write_text("".join(f"{i * 0.5} 1:{i} 2:{i % 3}\n" for i in range(12)))
    for command in (["evaluate", "--methods", "anova,f-regression"], ["stability", "--method", "f-regression"]):
        code = main([*command, "--num-features", "2", "--master", "local[2]", "--input", str(path), "--format",
                     "libsvm", "--output", str(tmp_path / "out")])
        refused(capsys, code, tmp_path / "out", "f-regression takes a continuous label")
