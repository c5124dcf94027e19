"""The MultiSURF family (sparkfs.core.multisurf) vs scikit-rebate and a literal NumPy reference.

scikit-rebate's definitions and ours coincide on continuous features (more than 10 distinct
values each), no missing values, 2 or 3-10 classes, Manhattan distance on range-scaled features:
there the scores must agree within 1e-9. Where we go beyond it (sparse rows, instance weights,
Euclidean, sampled queries) the reference is :func:`reference_scores`, written from the module's
definitions with explicit loops over queries and rows, sharing no code with sparkfs.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.core import multisurf as ms

TOL = 1e-9


def continuous_data(seed, n=60, p=6, classes=2, balanced=True):
    rng = np.random.default_rng(seed)
    shares = np.linspace(1, 2, classes) / np.linspace(1, 2, classes).sum()
    y = np.arange(n) % classes if balanced else rng.choice(classes, size=n, p=shares)
    X = rng.normal(size=(n, p))
    X[:, 0] += 1.5 * y
    X[:, 1] += np.where(y == 1, 1.0, 0.0)
    return X, y


def reference_scores(X, y, variant, metric="manhattan", weights=None, queries=None, classes_seen_by=None):
    """The definitions T1-T2, S1-S4 of sparkfs.core.multisurf, literally, with loops.

    ``classes_seen_by(q)``: every row's class as query q sees it (a continuous endpoint's hit 0 or
    miss 1, S5; the query's own class is 0); None: the rows' classes ``y``."""
    X = np.asarray(X, dtype=np.float64)
    n, p = X.shape
    C = 2 if classes_seen_by is not None else int(y.max()) + 1
    s = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    Q = range(n) if queries is None else list(queries)
    y_rows = y

    def dist(a, b):
        d = np.abs(X[a] - X[b])
        return d.sum() if metric == "manhattan" else np.sqrt((d ** 2).sum())

    D = np.array([[dist(a, b) for b in range(n)] for a in range(n)])
    surf_T = sum(s[q] * s[r] * D[q, r] for q in Q for r in range(n)) / (sum(s[q] for q in Q) * s.sum())

    def term(q, members, far_form):
        y = y_rows if classes_seen_by is None else classes_seen_by(q)
        hit, miss = np.zeros(p), {c: np.zeros(p) for c in range(C) if c != y[q]}
        n_hit, n_miss = 0.0, {c: 0.0 for c in miss}
        for r in members:
            diff = np.abs(X[q] - X[r])
            if far_form:
                diff = 1.0 - diff
            if y[r] == y[q]:
                hit += s[r] * diff
                n_hit += s[r]
            else:
                miss[y[r]] += s[r] * diff
                n_miss[y[r]] += s[r]
        total_miss = sum(n_miss.values())
        out = np.zeros(p)
        if n_hit > 0:
            out -= hit / n_hit
        if total_miss > 0:
            out += sum(miss[c] * (n_miss[c] / total_miss) * (C - 1) for c in miss) / total_miss
        return out

    total, mass = np.zeros(p), 0.0
    for q in Q:
        others = [r for r in range(n) if r != q]
        if variant.startswith("multisurf"):
            w = s[others]
            mean = np.sum(w * D[q, others]) / w.sum()
            std = np.sqrt(np.sum(w * (D[q, others] - mean) ** 2) / w.sum())
            near_t, far_t = mean - std / 2, mean + std / 2
        else:
            near_t = far_t = surf_T
        near = [r for r in others if D[q, r] < near_t]
        far = [r for r in others if D[q, r] > far_t]
        t = term(q, near, False)
        if variant == "surf-star":
            t = t - term(q, far, False)
        elif variant == "multisurf-star":
            t = t + term(q, far, True)
        total += s[q] * t
        mass += s[q]
    return total / mass


def close(got, want):
    assert np.max(np.abs(got - want)) <= TOL * max(1.0, np.max(np.abs(want))), (got, want)


def range_scale(X):
    return X.max(axis=0) - X.min(axis=0)


def skrebate_class(variant):
    skrebate = pytest.importorskip("skrebate")
    return {"multisurf": skrebate.MultiSURF, "multisurf-star": skrebate.MultiSURFstar, "surf": skrebate.SURF,
            "surf-star": skrebate.SURFstar}[variant]


@pytest.mark.parametrize("variant", ms.VARIANTS)
@pytest.mark.parametrize("classes,balanced", [(2, True), (2, False), (3, False), (4, True)])
def test_scores_equal_skrebate(variant, classes, balanced):
    X, y = continuous_data(classes * 7 + balanced, classes=classes, balanced=balanced)
    want = skrebate_class(variant)(n_features_to_select=2).fit(X, y).feature_importances_
    close(ms.multisurf_scores(X, y, variant, metric="manhattan", scale=range_scale(X)), want)


@pytest.mark.parametrize("variant", ms.VARIANTS)
def test_reference_is_skrebate_too(variant):
    """The loop reference (used where skrebate cannot be) is itself skrebate's definition."""
    X, y = continuous_data(3, n=40, classes=3, balanced=False)
    Xs = X / range_scale(X)
    want = skrebate_class(variant)(n_features_to_select=2).fit(X, y).feature_importances_
    close(reference_scores(Xs, y, variant), want)


@pytest.mark.parametrize("variant", ms.VARIANTS)
def test_sparse_rows_equal_dense_and_reference(variant):
    rng = np.random.default_rng(5)
    X, y = continuous_data(5, n=45, p=8, classes=3)
    X[rng.random(X.shape) < 0.6] = 0.0
    dense = ms.multisurf_scores(X, y, variant, metric="manhattan")
    close(ms.multisurf_scores(sp.csr_matrix(X), y, variant, metric="manhattan"), dense)
    close(dense, reference_scores(X, y, variant))


@pytest.mark.parametrize("variant", ms.VARIANTS)
def test_instance_weights_and_euclidean_equal_reference(variant):
    X, y = continuous_data(11, n=36, p=5, classes=3, balanced=False)
    weights = np.random.default_rng(2).uniform(0.0, 3.0, size=36)
    weights[4] = 0.0
    got = ms.multisurf_scores(X, y, variant, metric="euclidean", weights=weights)
    close(got, reference_scores(X, y, variant, metric="euclidean", weights=weights))
    # all weights 1 is the unweighted definition
    close(ms.multisurf_scores(X, y, variant, weights=np.ones(36)), ms.multisurf_scores(X, y, variant))


@pytest.mark.parametrize("variant", ["multisurf-star", "surf"])
def test_sampled_queries_equal_reference(variant):
    X, y = continuous_data(13, n=40, p=5)
    queries = np.array([1, 4, 9, 20, 33])
    got = ms.multisurf_scores(X, y, variant, query_positions=queries)
    close(got, reference_scores(X, y, variant, queries=queries))


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("variant", ms.VARIANTS)
def test_one_distance_table_per_chunk_equals_reference(variant, compiled, monkeypatch):
    """every_row_terms (the one-pass fit: thresholds, counts and differences from one table per
    chunk of queries, Numba loops or their NumPy fallback) on chunks of 7 queries, dense and
    sparse, weighted, against the loop reference."""
    from sparkfs.core import multisurf_kernel

    if compiled and not multisurf_kernel.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(multisurf_kernel, "AVAILABLE", compiled)
    X, y = continuous_data(17, n=30, p=5, classes=3, balanced=False)
    X[np.random.default_rng(4).random(X.shape) < 0.4] = 0.0
    weights = np.random.default_rng(5).uniform(0.2, 2.0, size=30)
    ids, mass = np.arange(30), weights.sum()
    for rows, metric in ((X, "manhattan"), (sp.csr_matrix(X), "euclidean")):
        level = None
        if variant not in ms.PER_QUERY_THRESHOLD_VARIANTS:
            moments = ms.every_row_moments(rows, ids, rows, ids, weights, metric, block_size=7)
            level = ms.surf_threshold(moments, weights, mass)
        terms = ms.every_row_terms(variant, rows, ids, y, weights, rows, ids, y, weights, 3, metric, level=level,
                                   block_size=7)
        close(terms["sums"] / mass, reference_scores(X, y, variant, metric=metric, weights=weights))


def test_moments_merge_over_blocks_equals_whole():
    rng = np.random.default_rng(0)
    table = rng.uniform(size=(4, 30)) + 1e6  # far from 0: the merge must not cancel
    others = rng.random((4, 30)) < 0.8
    weights = rng.uniform(0.5, 2.0, size=30)
    whole = ms.distance_moments(table, others, weights)
    merged = ms.merge_moments(ms.distance_moments(table[:, :11], others[:, :11], weights[:11]),
                              ms.distance_moments(table[:, 11:], others[:, 11:], weights[11:]))
    np.testing.assert_allclose(merged.mean, whole.mean, rtol=1e-15)
    np.testing.assert_allclose(merged.std, whole.std, rtol=1e-9)
    np.testing.assert_allclose(merged.weight, whole.weight, rtol=1e-15)


def test_no_neighbour_inside_gives_zero_term():
    """Two rows: each query's one other row is at the mean distance, so T2's near set is empty."""
    X = np.array([[0.0, 1.0], [1.0, 3.0]])
    np.testing.assert_array_equal(ms.multisurf_scores(X, np.array([0, 1]), "multisurf"), [0.0, 0.0])


@pytest.mark.parametrize("fraction,keep", [(0.5, 3), (0.25, 2), (0.3, 100)])
def test_turf_equals_skrebate(fraction, keep):
    skrebate = pytest.importorskip("skrebate")
    X, y = continuous_data(17, n=50, p=9, classes=2)
    want = skrebate.TURF(skrebate.MultiSURF(n_features_to_select=2), pct=fraction,
                         num_scores_to_return=keep).fit(X, y).feature_importances_
    scale = range_scale(X)

    def inner(features):
        return ms.multisurf_scores(X[:, features], y, "multisurf", scale=scale[features])

    got, final, tiers = ms.turf(inner, X.shape[1], fraction, keep)
    close(got, want)
    assert sorted(np.concatenate([final, *tiers]).tolist()) == list(range(9))


def test_euclidean_far_from_zero_is_not_cancelled():
    """Rows near 1e7 (a unit-range feature): the GEMM identity without a shift loses every digit."""
    X, y = continuous_data(41, n=30, p=4)
    shifted = X + 1e7
    close(ms.multisurf_scores(shifted, y, "multisurf", metric="euclidean"),
          reference_scores(X, y, "multisurf", metric="euclidean"))
