"""chi2 is scikit-learn's chi2 (class sums of non-negative features) on real term data, the same
bits for any partitioning; Spark ML's categorical test is chi2-categorical, for integer codes only."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.errors import InvalidInputError
from sparkfs.methods import build_selector
from tests.helpers import make_df


@pytest.fixture(scope="module")
def tr11(shared_data):
    """tr11: 414 documents x 6,429 terms (term frequencies), 9 classes."""
    return sp.load_npz(shared_data / "tr11.npz").tocsr(), np.load(shared_data / "tr11.npz")["y"]


def test_chi2_equals_scikit_learn_on_a_term_matrix_for_any_partitioning(spark, tr11):
    from sklearn.feature_selection import chi2

    matrix, labels = tr11
    with np.errstate(all="ignore"):
        expected, expected_p = chi2(matrix, labels)
    expected = np.nan_to_num(expected, nan=0.0)  # all-zero terms: 0 / 0, scored 0 here (p-value 1)
    expected_p = np.nan_to_num(expected_p, nan=1.0)
    scores = {}
    for partitions in (1, 3):
        model = build_selector("chi2", {"deterministic": True}).setNumFeatures(100).fit(
            make_df(spark, matrix, labels, partitions=partitions))
        scores[partitions] = model.scores
    np.testing.assert_array_equal(scores[1], scores[3])
    np.testing.assert_allclose(scores[1], expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.pValues, expected_p, rtol=1e-6, atol=1e-300)  # scikit-learn's chi2 p-values
    assert model.summary["method"] == "chi2" and model.summary["stats_engine"] == "arrow"
    assert model.summary["deterministic"] is True
    top = np.argsort(-expected, kind="stable")[:100]
    assert set(model.selectedFeatures) == set(top.tolist())


def test_chi2_refuses_negative_values(spark):
    X = np.array([[1.0, 2.0], [0.5, -3.0], [2.0, 1.0], [0.0, 4.0]])
    with pytest.raises(InvalidInputError, match=r"non-negative features .* feature 1 down to -3"):
        build_selector("chi2", {}).setNumFeatures(1).fit(make_df(spark, X, [0, 0, 1, 1]))


def test_chi2_categorical_is_spark_ml_and_refuses_non_integer_values(spark):
    from pyspark.ml.stat import ChiSquareTest

    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, 60)
    X = rng.integers(0, 4, size=(60, 3)).astype(float)
    X[:, 0] = y + rng.integers(0, 2, 60)
    df = make_df(spark, X, y, partitions=2)
    model = build_selector("chi2-categorical", {}).setNumFeatures(1).fit(df)
    reference = ChiSquareTest.test(df, "features", "label").first()
    np.testing.assert_allclose(model.scores, reference["statistics"].toArray(), rtol=1e-12)
    np.testing.assert_allclose(model.pValues, reference["pValues"].toArray(), rtol=1e-12)  # Spark ML's own
    assert model.selectedFeatures == [0]
    fdr = build_selector("chi2-categorical", {}).setSelectionMode("fdr").setSelectionThreshold(0.01).fit(df)
    assert fdr.selectedFeatures == [0] and fdr.summary["selected_p_values"] == [model.pValues[0]]
    X[7, 2] = 0.25
    with pytest.raises(InvalidInputError, match=r"integer-coded features; feature 2 has the value 0.25"):
        build_selector("chi2-categorical", {}).setNumFeatures(1).fit(make_df(spark, X, y))
