"""Instance-weighted ReliefF (sparkfs.core.relief, note 8) against a loop reference written from
its definition: weighted priors, each class's k nearest rows averaged by their weights, queries'
margins averaged by theirs. Unit weights must give ReliefF exactly."""

import numpy as np
import pytest

from sparkfs import ReliefSelector
from sparkfs.core.options import ReliefOptions
from sparkfs.spark.method_setup import EngineOptions
from sparkfs.spark.relief import relief_statistics
from tests.helpers import make_df


def reference_weighted_relieff(X, y, s, k, queries=None):
    n, d = X.shape
    classes = sorted(set(y.tolist()))
    total = sum(s)
    prior = {c: sum(s[r] for r in range(n) if y[r] == c) / total for c in classes}
    queries = range(n) if queries is None else queries
    numerator, mass = np.zeros(d), 0.0
    for q in queries:
        margin = np.zeros(d)
        for c in classes:
            others = [r for r in range(n) if y[r] == c and r != q]
            others.sort(key=lambda r: (float(np.sum((X[q] - X[r]) ** 2)), r))
            chosen = others[:k]
            weight_sum = sum(s[r] for r in chosen)
            if weight_sum == 0:
                continue
            mean_difference = sum(s[r] * np.abs(X[q] - X[r]) for r in chosen) / weight_sum
            if c == y[q]:
                margin -= mean_difference
            else:
                margin += prior[c] / (1.0 - prior[y[q]]) * mean_difference
        numerator += s[q] * margin
        mass += s[q]
    return numerator / mass


def _data(seed, n=30, d=4, classes=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, 0] += np.arange(n) % classes
    return X, np.arange(n) % classes, rng.uniform(0.2, 2.0, n)


@pytest.mark.parametrize("partitions", [1, 3])
def test_weighted_relieff_matches_the_reference(spark, partitions):
    X, y, s = _data(seed=partitions)
    s[4] = 0.0                                               # a row that weighs nothing
    df = make_df(spark, X, y, partitions=partitions, weights=s)
    model = ReliefSelector(variant="relieff", k=3, scaling="none", weightCol="weight", numFeatures=2).fit(df)
    np.testing.assert_allclose(model.scores, reference_weighted_relieff(X, y, s, 3), rtol=1e-9, atol=1e-12)


def test_unit_weights_give_relieff_and_a_sample_fetches_neighbour_weights(spark):
    X, y, s = _data(seed=9, n=36)
    df = make_df(spark, X, y, partitions=2, weights=np.ones(36))
    plain = ReliefSelector(variant="relieff", k=4, scaling="none").fit(make_df(spark, X, y, partitions=2))
    unit = ReliefSelector(variant="relieff", k=4, scaling="none", weightCol="weight").fit(df)
    np.testing.assert_allclose(unit.scores, plain.scores, rtol=1e-12, atol=1e-15)
    weighted = make_df(spark, X, y, partitions=2, weights=s)
    result = relief_statistics(weighted, "features", "label", num_features=4, num_classes=3,
                               options=ReliefOptions(variant="relieff", k=4, sample_size=10, seed=5),
                               engine=EngineOptions(weight_col="weight"))
    queries = result.query_ids.tolist()                      # positional ids = row indices
    assert len(queries) == 10 and "neighbour weights" in result.info["passes"]
    np.testing.assert_allclose(result.scores, reference_weighted_relieff(X, y, s, 4, queries), rtol=1e-9, atol=1e-12)


def test_weights_are_refused_by_the_other_variants(spark):
    X, y, s = _data(seed=2, n=12)
    df = make_df(spark, X, y, weights=s)
    with pytest.raises(ValueError, match="variant='relieff' only"):
        ReliefSelector(variant="prelief", weightCol="weight").fit(df)
