"""Parzen-ISE, the ``marginal`` reading (sparkfs.core.parzen_ise_marginal), against references written
from the equations of its docstring (literal loops over i, j, c, c', k; no code shared), and the
reading's properties: a pinned weight is harmless, iris without labels, ties announced, and the
rankings of its optimum (docs/parzen_ise.md, section 0) against their definitions."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from sparkfs.core.parzen_ise import parzen_ise_in_memory
from sparkfs.core.parzen_ise_marginal import marginal_block_terms, marginal_ise, newton_point_on_simplex
from sparkfs.core.selection import ties_at_cut


def density(difference, variance):
    return np.exp(-0.5 * difference ** 2 / variance) / np.sqrt(2.0 * np.pi * variance)


def reference_ise(points, memberships, variances, h, w, free):
    """sum_{k in F} int (p_k - q_k)^2 by the three literal pair sums of the docstring."""
    n = points.shape[0]
    total = 0.0
    for k in free:
        p_p = p_q = q_q = 0.0
        for i in range(n):
            for j in range(n):
                for c in range(variances.shape[0]):
                    for c2 in range(variances.shape[0]):
                        u = memberships[i, c] * memberships[j, c2]
                        v = h * h * (variances[c, k] + variances[c2, k])
                        p_p += u * density(points[i, k] - points[j, k], v)
                        p_q += u * density(points[i, k] - w[k] * points[j, k], v)
                        q_q += u * density(w[k] * (points[i, k] - points[j, k]), v)
        total += (p_p - 2.0 * p_q + q_q) / n ** 2
    return total


def toy(seed, n=9, d=3, groups=2):
    rng = np.random.default_rng(seed)
    memberships = rng.uniform(0.1, 1.0, (n, groups))
    memberships /= memberships.sum(axis=1, keepdims=True)
    return rng.normal(size=(n, d)), memberships, rng.uniform(0.3, 1.2, (groups, d))


def test_block_terms_add_up_to_the_literal_ise_and_its_derivatives():
    points, memberships, variances = toy(0)
    w, h, free = np.array([0.2, 0.0, 0.8]), 0.7, np.array([0, 1, 2])
    halves = [marginal_block_terms(points[batch], memberships[batch], points[rows], memberships[rows], variances, w,
                                   h=h, with_self=True)
              for batch in (slice(0, 4), slice(4, 9)) for rows in (slice(0, 5), slice(5, 9))]
    self_sums = sum(t.self_sums for t in halves)
    total = halves[0]._replace(cross=sum(t.cross for t in halves), own=sum(t.own for t in halves))
    value = marginal_ise(self_sums, total, free, num_rows=9, num_queries=9)
    assert value.ise == pytest.approx(reference_ise(points, memberships, variances, h, w, free), rel=1e-12)
    step = 1e-4
    for k in free:
        up, down = w.copy(), w.copy()
        up[k] += step
        down[k] -= step
        plus = reference_ise(points, memberships, variances, h, up, free)
        minus = reference_ise(points, memberships, variances, h, down, free)
        assert value.gradient[k] == pytest.approx((plus - minus) / (2 * step), rel=1e-6, abs=1e-9)
        middle = reference_ise(points, memberships, variances, h, w, free)
        assert value.curvature[k] == pytest.approx((plus - 2 * middle + minus) / step ** 2, rel=1e-4, abs=1e-6)


def test_hard_groups_give_the_same_sums_as_one_hot_soft_ones():
    points, _, variances = toy(1)
    hard = np.eye(2)[np.arange(9) % 2]
    w = np.array([0.5, 0.3, 0.2])
    got = marginal_block_terms(points, hard, points, hard, variances, w, h=0.5, with_self=True)
    value = marginal_ise(got.self_sums, got, np.arange(3), num_rows=9, num_queries=9)
    assert value.ise == pytest.approx(reference_ise(points, hard, variances, 0.5, w, range(3)), rel=1e-12)


def test_newton_point_minimises_the_separable_model_on_the_simplex():
    rng = np.random.default_rng(2)
    for _ in range(20):
        w = rng.dirichlet(np.ones(6))
        gradient, curvature = rng.normal(size=6), rng.uniform(0.1, 5.0, 6)
        point = newton_point_on_simplex(w, gradient, curvature)
        assert point.min() >= 0 and point.sum() == pytest.approx(1.0)

        def model(x, gradient=gradient, curvature=curvature, w=w):
            return gradient @ (x - w) + 0.5 * curvature @ (x - w) ** 2

        assert all(model(point) <= model(rng.dirichlet(np.ones(6))) + 1e-12 for _ in range(300))
        for vertex in np.eye(6):  # no better point along any edge towards a vertex
            assert model(point) <= model(point + 1e-6 * (vertex - point)) + 1e-15


def test_iris_without_labels_ranks_the_petal_features_first():
    X, _ = load_iris(return_X_y=True)
    _, info = parzen_ise_in_memory(X, num_clusters=3, seed=0)   # the default rank_by="reference"
    assert info["criterion"] == "marginal" and set(info["ranking"][:2].tolist()) == {2, 3}
    weights, info = parzen_ise_in_memory(X, num_clusters=3, seed=0, rank_by="weights")
    assert set(info["ranking"][:2].tolist()) == {2, 3}
    assert np.array_equal(info["scores"], weights)  # rank_by="weights" ranks by the weights as they are
    assert [run["stop"] for run in info["runs"]] == ["converged", "converged"]


def test_a_pinned_weight_is_harmless_and_the_criterion_finite_at_zero():
    X, y = load_iris(return_X_y=True)
    for pinned in (0, 1):
        weights, info = parzen_ise_in_memory(X, y, fixed_feature=pinned)
        assert weights[pinned] == 0 and np.isfinite(info["runs"][0]["value"].ise)
        assert info["ranking"][0] == 2  # petal length carries the weight whichever weight is pinned


def test_zero_weights_tie_and_the_tie_rule_sees_it():
    """The simplex optimum puts most weights at exactly 0: the order among them is not a result,
    and ties_at_cut (the rule behind SelectionTieWarning) reports it."""
    rng = np.random.default_rng(0)
    X = np.hstack([np.repeat([[-3.0], [0.0], [3.0]], 40, axis=0) + 0.3 * rng.normal(size=(120, 1)),
                   rng.normal(size=(120, 6))])
    weights, _ = parzen_ise_in_memory(X, num_clusters=3, fixed_feature=None)
    assert np.sum(weights == 0) >= 2
    selected = np.argsort(-weights, kind="mergesort")[:np.sum(weights > 0) + 1]
    assert ties_at_cut(weights, selected, by_count=True)["tied_at_cut"] >= 2


def test_criterion_and_rank_by_are_validated():
    with pytest.raises(ValueError, match="The 'criterion' parameter of parzen_ise_in_memory must be a str among"):
        parzen_ise_in_memory(np.eye(3), criterion="joint")
    with pytest.raises(ValueError, match="The 'rank_by' parameter of parzen_ise_in_memory must be a str among "
                                         "{'weights', 'multipliers', 'reference'}. Got 'kkt' instead."):
        parzen_ise_in_memory(np.eye(3), rank_by="kkt")


def labelled_toy():
    """12 rows, 4 features (two shifted by class, two not), two classes; and the reading's inputs
    written from section 8: standardised points, one-hot groups, group variances, Silverman's 1-D h."""
    rng = np.random.default_rng(5)
    y = np.arange(12) % 2
    X = rng.normal(size=(12, 4)) + np.outer(y, [2.0, 1.0, 0.0, 0.0])
    scaled = (X - X.mean(axis=0)) / X.std(axis=0)
    memberships = np.eye(2)[y]
    variances = np.array([scaled[y == c].var(axis=0) for c in (0, 1)])
    return X, y, scaled, memberships, variances, (4.0 / (3.0 * 12)) ** 0.2


def test_multiplier_ranking_equals_its_definition():
    """Scores: w_k where w_k > 0; -(ISE_k'(0) - lambda) where w_k = 0, lambda = min(sum w g, min of the
    zeros' g); the held-out feature one below the lowest. Derivatives by central differences of the
    literal ISE, the optimum from the fit."""
    X, y, scaled, memberships, variances, h = labelled_toy()
    weights, info = parzen_ise_in_memory(X, y, fixed_feature=3, rank_by="multipliers", tol=0.0)
    free = [0, 1, 2]
    step = 1e-5

    def derivative(k):
        up, down = weights.copy(), weights.copy()
        up[k] += step
        down[k] -= step
        return (reference_ise(scaled, memberships, variances, h, up, [k])
                - reference_ise(scaled, memberships, variances, h, down, [k])) / (2 * step)

    g = np.array([derivative(k) for k in free])
    w = weights[free]
    assert (w == 0).any() and (w > 0).any()  # both kinds of score are exercised
    lam = min(w @ g, g[w == 0].min())
    want = np.where(w > 0, w, -(g - lam))
    assert info["scores"][free] == pytest.approx(want, rel=1e-6, abs=1e-9)
    assert info["scores"][3] == pytest.approx(want.min() - 1.0)
    order = sorted(free, key=lambda k: (-weights[k], g[free.index(k)]))
    assert info["ranking"].tolist() == order + [3]


def test_reference_ranking_equals_its_definition():
    """Scores: ISE_k(0) - ISE_k(1/|F|) per free feature, by the literal ISE; the held-out one below."""
    X, y, scaled, memberships, variances, h = labelled_toy()
    _, info = parzen_ise_in_memory(X, y, fixed_feature=1, rank_by="reference")
    free = [0, 2, 3]
    want = [reference_ise(scaled, memberships, variances, h, np.zeros(4), [k])
            - reference_ise(scaled, memberships, variances, h, np.full(4, 1.0 / 3), [k]) for k in free]
    assert info["scores"][free] == pytest.approx(want, rel=1e-10)
    assert info["scores"][1] == pytest.approx(min(want) - 1.0)
    assert info["runs"][0]["passes"] == info["runs"][0]["evaluations"] + 2
