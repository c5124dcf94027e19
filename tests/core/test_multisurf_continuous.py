"""The MultiSURF family on a continuous endpoint (sparkfs.core.multisurf, S5) vs scikit-rebate's
``label_type="continuous"`` and a literal NumPy reference.

S5: a row is a hit of a query when their targets differ by less than the target's sample standard
deviation (ddof 1), else a miss; the terms are the two-class ones, ``-D_H / N_H + D_M / N_M`` (the far
form with ``1 - diff``). scikit-rebate treats a feature with at most 10 distinct values as discrete,
so the comparisons use continuous features only (diabetes without its two-valued ``sex`` column).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_diabetes, make_friedman1

from sparkfs.core import multisurf as ms
from tests.core.test_multisurf import reference_scores as class_reference

TOL = 1e-9


def reference_scores(X, t, variant, metric="manhattan", weights=None):
    """S1-S5 written out with loops (the class reference of test_multisurf with S5's classes): a row
    is a hit of query q when |t_q - t_r| < sd(t), ddof 1, else a miss."""
    bound = np.std(t, ddof=1)
    return class_reference(X, None, variant, metric=metric, weights=weights,
                           classes_seen_by=lambda q: np.where(np.abs(t - t[q]) < bound, 0, 1))


def close(got, want):
    assert np.max(np.abs(got - want)) <= TOL * max(1.0, np.max(np.abs(want))), (got, want)


def skrebate_class(variant):
    skrebate = pytest.importorskip("skrebate")
    return {"multisurf": skrebate.MultiSURF, "multisurf-star": skrebate.MultiSURFstar, "surf": skrebate.SURF,
            "surf-star": skrebate.SURFstar}[variant]


def friedman(n=80, p=8, seed=0):
    return make_friedman1(n_samples=n, n_features=p, random_state=seed)


def diabetes_continuous_columns():
    X, y = load_diabetes(return_X_y=True)
    return np.delete(X, 1, axis=1), y  # column 1 (sex) has two values: discrete for scikit-rebate


@pytest.mark.parametrize("variant", ms.VARIANTS)
@pytest.mark.parametrize("data", ["friedman", "diabetes"])
def test_scores_equal_skrebate_on_a_continuous_endpoint(variant, data):
    X, y = friedman() if data == "friedman" else diabetes_continuous_columns()
    want = skrebate_class(variant)(label_type="continuous").fit(X, y).feature_importances_
    scale = X.max(axis=0) - X.min(axis=0)
    close(ms.multisurf_scores(X, y, variant, scale=scale, hit_bound=ms.continuous_hit_bound(y)), want)


@pytest.mark.parametrize("variant", ms.VARIANTS)
def test_reference_is_skrebate_too(variant):
    X, y = friedman(n=40, p=5, seed=3)
    scale = X.max(axis=0) - X.min(axis=0)
    want = skrebate_class(variant)(label_type="continuous").fit(X, y).feature_importances_
    close(reference_scores(X / scale, y, variant), want)


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("variant", ms.VARIANTS)
def test_one_distance_table_per_chunk_equals_reference(variant, compiled, monkeypatch):
    """every_row_terms (Numba loops or the NumPy steps) with targets: chunks of 7 queries, dense and
    sparse, Manhattan and Euclidean, with instance weights, against the loop reference."""
    from sparkfs.core import multisurf_kernel

    if compiled and not multisurf_kernel.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(multisurf_kernel, "AVAILABLE", compiled)
    X, y = friedman(n=30, p=5, seed=4)
    X[np.random.default_rng(4).random(X.shape) < 0.4] = 0.0
    weights = np.random.default_rng(5).uniform(0.2, 2.0, size=30)
    ids, mass, bound = np.arange(30), weights.sum(), ms.continuous_hit_bound(y)
    for rows, metric in ((X, "manhattan"), (sp.csr_matrix(X), "euclidean"), (X, "euclidean")):
        level = None
        if variant not in ms.PER_QUERY_THRESHOLD_VARIANTS:
            moments = ms.every_row_moments(rows, ids, rows, ids, weights, metric, block_size=7)
            level = ms.surf_threshold(moments, weights, mass)
        terms = ms.every_row_terms(variant, rows, ids, y, weights, rows, ids, y, weights, 2, metric, level=level,
                                   block_size=7, hit_bound=bound)
        close(terms["sums"] / mass, reference_scores(X, y, variant, metric=metric, weights=weights))


def test_pair_classes_are_hits_strictly_within_the_bound():
    np.testing.assert_array_equal(ms.pair_classes([0.0, 1.0], [0.0, 0.5, 1.0, 2.0], 1.0),
                                  [[ms.HIT, ms.HIT, ms.MISS, ms.MISS],
                                   [ms.MISS, ms.HIT, ms.HIT, ms.MISS]])  # |1 - 2| = 1 is not within
    assert ms.continuous_hit_bound([1.0, 2.0, 3.0]) == 1.0


def test_multisurf_ranks_friedmans_five_informative_features_first():
    """Friedman #1: y depends on features 0-4 only; MultiSURF on a continuous endpoint ranks them
    first (200 rows, 10 features)."""
    X, y = friedman(n=200, p=10, seed=0)
    scores = ms.multisurf_scores(X, y, "multisurf", scale=X.max(axis=0) - X.min(axis=0),
                                 hit_bound=ms.continuous_hit_bound(y))
    assert sorted(np.argsort(-scores)[:5].tolist()) == [0, 1, 2, 3, 4]
