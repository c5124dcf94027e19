"""The MultiSURF family and TuRF on Spark Connect (DataFrame API only): equal to the core, which
tests/core/test_multisurf.py checks against scikit-rebate and a loop reference."""

import numpy as np

from sparkfs import TuRFSelector
from sparkfs.core import multisurf as ms
from sparkfs.core.options import MultiSURFOptions
from sparkfs.spark.multisurf import multisurf_statistics
from tests.connect.test_on_connect import connect_df
from tests.core.test_multisurf import continuous_data, range_scale

#: The methods this module runs on Connect (TuRF runs MultiSURF as its inner method).
CONNECT_METHODS = ["multisurf", "multisurf-star", "turf"]


def test_multisurf_star_on_connect_equals_the_core_on_sparse_rows(spark):
    X, y = continuous_data(31, n=28, p=5, classes=3, balanced=False)
    X[np.random.default_rng(2).random(X.shape) < 0.4] = 0.0
    result = multisurf_statistics(connect_df(spark, X, y, partitions=2, sparse=True), "features", "label",
                                  num_features=5, num_classes=3,
                                  options=MultiSURFOptions(variant="multisurf-star", block_size=9))
    assert result.info["transport"] == "dataframe"
    want = ms.multisurf_scores(X, y, "multisurf-star", scale=range_scale(X))
    np.testing.assert_allclose(result.scores, want, rtol=1e-9, atol=1e-12)


def test_turf_fit_transform_save_load_on_connect(spark, tmp_path):
    X, y = continuous_data(33, n=26, p=6, classes=2)
    df = connect_df(spark, X, y, partitions=2)
    model = TuRFSelector(numFeatures=2, keepFeatures=3).fit(df)  # innerMethod multisurf, the default
    scale = range_scale(X)
    want, final, _ = ms.turf(lambda f: ms.multisurf_scores(X[:, f], y, "multisurf", scale=scale[f]), 6, 0.5, 3)
    np.testing.assert_allclose(model.scores, want, rtol=1e-9, atol=1e-12)
    assert model.summary["turf_final_features"] == final.tolist()
    assert model.transform(df).first()["selected_features"].size == 2
    model.write().overwrite().save(str(tmp_path / "turf"))  # Connect has no errorifexists mode
    np.testing.assert_array_equal(type(model).load(str(tmp_path / "turf")).scores, model.scores)


def test_continuous_endpoint_on_connect_equals_the_core(spark):
    """labelType="continuous": the label-only pass for S5's bound and the targets in the blocks, on
    Connect; MultiSURF (one pass) and ReliefF (the neighbour search with hits and misses per query)."""
    from sklearn.datasets import make_friedman1

    from sparkfs import MultiSURFSelector, ReliefSelector
    from sparkfs.sklearn import ReliefFSelector

    X, y = make_friedman1(n_samples=30, n_features=5, random_state=4)
    df = connect_df(spark, X, y, partitions=2)
    bound = ms.continuous_hit_bound(y)
    got = MultiSURFSelector(labelType="continuous").fit(df).scores
    np.testing.assert_allclose(got, ms.multisurf_scores(X, y, "multisurf", scale=range_scale(X), hit_bound=bound),
                               rtol=1e-9, atol=1e-12)
    got = ReliefSelector(k=4, metric="manhattan", scaling="range", labelType="continuous").fit(df).scores
    want = ReliefFSelector(k=4, metric="manhattan", scaling="range", label_type="continuous").fit(X, y).scores_
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
