"""``fit(X, y, sample_weight)`` of the front's ReliefF and MultiSURF family (their Spark selectors' ``weightCol``).

For these neighbour methods integer weights are *not* the repeated rows: a row repeated w times would be
its copies' nearest hit (ReliefF) and in their near sets (MultiSURF), which the weighted definitions leave
out (a row of weight w counts as w copies everywhere except as its own neighbour: ``sparkfs.core.relief``
note 8, ``sparkfs.core.multisurf`` note 3). So the weighted scores are tested against those definitions
written plainly in NumPy here (loops over queries and classes, no core function), on data with weights 0
and above; with all weights 1 against the unweighted fit, with weights times a constant against the same
scores; and, in the Spark tier, against the Spark selectors fitted with a weight column on the same rows.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.sklearn import FRONT

WEIGHTED_NEIGHBOUR_METHODS = ("relieff", "multisurf", "multisurf-star", "surf", "surf-star", "turf")


def _data(seed=4, n=36, p=5):
    """Rows with two informative features, three classes, no distance ties, and weights 0 to 3."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = rng.normal(size=(n, p)) + np.outer(y, [1.2, 0.0, 0.6, 0.0, 0.0])
    w = rng.integers(0, 4, n).astype(np.float64)
    w[:6] = 1.0
    return X, y, w


def _scaled(X):
    span = X.max(axis=0) - X.min(axis=0)
    return X / np.where(span > 0, span, 1.0)


def _relieff_reference(X, y, w, k, metric):
    """Weighted ReliefF (note 8): per query and class the k nearest other rows (ties to the lower row),
    their |differences| averaged by weight; misses times P(c) / (1 - P(y_q)) with weighted priors;
    the score the weight-averaged margin."""
    Z = _scaled(X)
    n, p = Z.shape
    classes = np.unique(y)
    priors = {c: w[y == c].sum() / w.sum() for c in classes}
    margins = np.zeros((n, p))
    for q in range(n):
        for c in classes:
            candidates = [r for r in range(n) if r != q and y[r] == c]
            distance = {r: (np.abs(Z[q] - Z[r]).sum() if metric == "manhattan"
                            else np.sqrt(((Z[q] - Z[r]) ** 2).sum())) for r in candidates}
            nearest = sorted(candidates, key=lambda r: (distance[r], r))[:k]
            mass = w[nearest].sum()
            if mass == 0:
                continue  # the class drops out of this query's margin
            mean_difference = sum(w[r] * np.abs(Z[q] - Z[r]) for r in nearest) / mass
            if c == y[q]:
                margins[q] -= mean_difference
            else:
                margins[q] += priors[c] / (1.0 - priors[y[q]]) * mean_difference
    return (w[:, None] * margins).sum(axis=0) / w.sum()


def _near_term(Z, y, w, q, members, num_classes):
    """S2 with weight sums for counts: -D_H / N_H + (C - 1) / N_M^2 sum_c |M_c| D_{M_c}."""
    term = np.zeros(Z.shape[1])
    hits = [r for r in members if y[r] == y[q]]
    hit_mass = w[hits].sum()
    if hit_mass > 0:
        term -= sum(w[r] * np.abs(Z[q] - Z[r]) for r in hits) / hit_mass
    miss_mass = sum(w[r] for r in members if y[r] != y[q])
    if miss_mass > 0:
        for c in set(y.tolist()) - {y[q]}:
            in_class = [r for r in members if y[r] == c]
            class_mass = w[in_class].sum()
            if class_mass > 0:
                term += ((num_classes - 1) / miss_mass ** 2 * class_mass
                         * sum(w[r] * np.abs(Z[q] - Z[r]) for r in in_class))
    return term


def _multisurf_reference(X, y, w, variant):
    """Weighted MultiSURF / SURF (note 3), Manhattan on range-scaled rows: MultiSURF's near threshold per
    query from the weighted mean and population std of its distances to the other rows; SURF's one
    threshold sum_{q,r} w_q w_r d / (sum w)^2; near sets strict; the score the weight-averaged term."""
    Z = _scaled(X)
    n = Z.shape[0]
    distance = np.abs(Z[:, None, :] - Z[None, :, :]).sum(axis=2)
    num_classes = np.unique(y).size
    level = w @ distance @ w / w.sum() ** 2
    terms = np.zeros(Z.shape)
    for q in range(n):
        others = [r for r in range(n) if r != q]
        if variant == "multisurf":
            mass = w[others].sum()
            mean = (w[others] * distance[q, others]).sum() / mass
            spread = np.sqrt((w[others] * (distance[q, others] - mean) ** 2).sum() / mass)
            bound = mean - spread / 2
        else:
            bound = level
        near = [r for r in others if distance[q, r] < bound]
        terms[q] = _near_term(Z, y, w, q, near, num_classes)
    return (w[:, None] * terms).sum(axis=0) / w.sum()


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_relieff_weights_are_the_weighted_formula(metric, sparse):
    X, y, w = _data()
    front = FRONT["relieff"](k=3, metric=metric, scaling="range")
    fitted = front.fit(sp.csr_matrix(X) if sparse else X, y, sample_weight=w)
    np.testing.assert_allclose(fitted.scores_, _relieff_reference(X, y, w, 3, metric), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("method", ["multisurf", "surf"])
def test_multisurf_weights_are_the_weighted_formula(method, sparse):
    X, y, w = _data()
    fitted = FRONT[method](metric="manhattan", scaling="range").fit(sp.csr_matrix(X) if sparse else X, y,
                                                                    sample_weight=w)
    np.testing.assert_allclose(fitted.scores_, _multisurf_reference(X, y, w, method), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("method", WEIGHTED_NEIGHBOUR_METHODS)
def test_unit_weights_are_the_unweighted_fit_and_a_constant_factor_changes_nothing(method):
    X, y, w = _data()
    params = {"keep_features": 3} if method == "turf" else {}
    plain = FRONT[method](**params).fit(X, y)
    ones = FRONT[method](**params).fit(X, y, sample_weight=np.ones(len(y)))
    np.testing.assert_allclose(ones.scores_, plain.scores_, rtol=1e-12, atol=1e-15)
    weighted = FRONT[method](**params).fit(X, y, sample_weight=w)
    tripled = FRONT[method](**params).fit(X, y, sample_weight=3.0 * w)
    np.testing.assert_allclose(tripled.scores_, weighted.scores_, rtol=1e-10, atol=1e-14)
    assert not np.allclose(weighted.scores_, plain.scores_)


def test_integer_weights_are_not_the_repeated_rows_for_a_neighbour_method():
    """Why the tests above use the formula: a repeated row is its copies' nearest hit, so repeating
    changes ReliefF's scores, while the weights do not move any row's neighbours."""
    X, y, w = _data()
    rows = np.repeat(np.arange(len(y)), w.astype(np.int64))
    weighted = FRONT["relieff"](k=3).fit(X, y, sample_weight=w)
    repeated = FRONT["relieff"](k=3).fit(X[rows], y[rows])
    assert not np.allclose(weighted.scores_, repeated.scores_, rtol=1e-3)


def test_continuous_relieff_takes_weights_and_other_relief_variants_refuse_them():
    X, y, w = _data()
    target = X[:, 0] + 0.1 * np.arange(len(y))
    weighted = FRONT["relieff"](k=3, label_type="continuous").fit(X, target, sample_weight=w)
    plain = FRONT["relieff"](k=3, label_type="continuous").fit(X, target)
    assert weighted.scores_.shape == (X.shape[1],) and not np.allclose(weighted.scores_, plain.scores_)
    for method in ("relief", "mrelief", "prelief"):
        with pytest.raises(ValueError, match="does not take sample_weight"):
            FRONT[method]().fit(X, y, sample_weight=w)


# The Spark tier: the Spark selectors fitted with a weight column on the same rows --------------------


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("method, params", [("relieff", {"k": 3, "metric": "euclidean", "scaling": "range"}),
                                            ("relieff", {"k": 4}),
                                            ("multisurf", {}), ("multisurf-star", {}), ("surf", {}),
                                            ("surf-star", {"metric": "euclidean"}),
                                            ("turf", {"keep_features": 3})], ids=str)
def test_the_spark_selectors_weighted_scores(spark, method, params, sparse):
    from sparkfs.methods import build_selector
    from tests.helpers import make_df
    from tests.sklearn.test_same_as_spark import _camel

    X, y, w = _data()
    selector = build_selector(method, {_camel(name): value for name, value in params.items()})
    selector.setWeightCol("weight")
    model = selector.fit(make_df(spark, X, y, partitions=2, sparse=sparse, weights=w))
    front = FRONT[method](**params).fit(sp.csr_matrix(X) if sparse else X, y, sample_weight=w)
    np.testing.assert_allclose(front.scores_, model.scores, rtol=1e-9, atol=1e-14)
    assert np.flatnonzero(front.get_support()).tolist() == list(model.selectedFeatures)
