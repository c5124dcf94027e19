"""The MultiSURF family and TuRF on Spark vs the core (itself checked against scikit-rebate and a
loop reference in tests/core/test_multisurf.py): dense and sparse rows, several partitions,
instance weights, sampled queries, Euclidean; the selectors' summary and save/load."""

import numpy as np
import pytest

from sparkfs import MultiSURFSelector, TuRFSelector
from sparkfs.core import multisurf as ms
from sparkfs.spark.multisurf import multisurf_statistics
from tests.core.test_multisurf import continuous_data, range_scale, reference_scores
from tests.helpers import make_df

TOL = 1e-9


def close(got, want):
    assert np.max(np.abs(got - want)) <= TOL * max(1.0, np.max(np.abs(want))), (got, want)


@pytest.mark.parametrize("variant,partitions,sparse,metric", [
    ("multisurf", 1, False, "manhattan"),
    ("multisurf-star", 3, True, "manhattan"),
    ("surf-star", 2, False, "euclidean"),
])
def test_engine_equals_core(spark, variant, partitions, sparse, metric):
    X, y = continuous_data(21, n=40, p=5, classes=3, balanced=False)
    if sparse:
        X[np.random.default_rng(1).random(X.shape) < 0.5] = 0.0
    df = make_df(spark, X, y, partitions=partitions, sparse=sparse)
    result = multisurf_statistics(df, "features", "label", num_features=5, num_classes=3, variant=variant,
                                  metric=metric, scaling="range", block_size=7)  # several tiles per block
    close(result.scores, ms.multisurf_scores(X, y, variant, metric=metric, scale=range_scale(X)))
    assert result.info["passes"].count("distance moments") == 1
    assert result.info["passes"].count("weighted differences") == 1


def test_weights_and_sample_equal_reference(spark):
    X, y = continuous_data(23, n=36, p=4, classes=2, balanced=False)
    weights = np.random.default_rng(3).uniform(0.2, 2.0, size=36)
    df = make_df(spark, X, y, partitions=2, weights=weights)
    result = multisurf_statistics(df, "features", "label", num_features=4, num_classes=2, variant="multisurf-star",
                                  scaling="none", weight_col="weight", sample_size=12, seed=4)
    queries = result.query_ids  # positional ids are the row positions
    close(result.scores, reference_scores(X, y, "multisurf-star", weights=weights, queries=queries))
    assert len(queries) == 12


def test_selectors_fit_summary_and_turf(spark, tmp_path):
    X, y = continuous_data(25, n=40, p=7, classes=2)
    df = make_df(spark, X, y, partitions=2)
    model = MultiSURFSelector(numFeatures=2, variant="surf-star").fit(df)
    close(model.scores, ms.multisurf_scores(X, y, "surf-star", scale=range_scale(X)))
    assert model.summary["method"] == "surf-star" and model.summary["query_sample"] == "every row"
    assert model.selectedFeatures == sorted(np.argsort(-model.scores, kind="mergesort")[:2].tolist())
    turf = TuRFSelector(numFeatures=2, innerMethod="multisurf", removeFraction=0.3, keepFeatures=3).fit(df)
    scale = range_scale(X)
    want, final, tiers = ms.turf(lambda f: ms.multisurf_scores(X[:, f], y, "multisurf", scale=scale[f]), 7, 0.3, 3)
    close(turf.scores, want)
    assert turf.summary["turf_final_features"] == final.tolist()
    assert turf.summary["turf_removed_per_round"] == [len(t) for t in tiers]
    turf.write().save(str(tmp_path / "turf"))
    loaded = type(turf).load(str(tmp_path / "turf"))
    np.testing.assert_array_equal(loaded.scores, turf.scores)
    assert loaded.getOrDefault("innerMethod") == "multisurf"
