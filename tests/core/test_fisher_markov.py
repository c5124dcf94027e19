"""LFS theta (eq. 19) against a literal NumPy evaluation of the paper's double sums."""

import numpy as np
import pytest

from sparkfs.core.fisher_markov import affine_class_moments, markov_coefficients
from sparkfs.core.scaling import feature_scaling, sample_std


def theta_eq19_literal(X, y, gamma, w=None):
    """Eq. (19) written out with the double sums over u, v (weighted: every sum and count weighted)."""
    n_rows, p = X.shape
    w = np.ones(n_rows) if w is None else w
    n = w.sum()
    theta = np.zeros(p)
    for j in range(p):
        between = 0.0
        for c in np.unique(y):
            members = np.flatnonzero(y == c)
            n_c = w[members].sum()
            double_sum = sum(w[u] * w[v] * X[u, j] * X[v, j] for u in members for v in members)
            between += double_sum / n_c
        squares = sum(w[u] * X[u, j] ** 2 for u in range(n_rows))
        all_pairs = sum(w[u] * w[v] * X[u, j] * X[v, j] for u in range(n_rows) for v in range(n_rows))
        theta[j] = between / n - gamma / n * squares + (gamma - 1) / n**2 * all_pairs
    return theta


def moments(X, y, w=None):
    w = np.ones(len(y)) if w is None else w
    classes = np.unique(y)
    sums = np.array([(w[y == c, None] * X[y == c]).sum(0) for c in classes])
    counts = np.array([w[y == c].sum() for c in classes])
    squares = np.array([(w[y == c, None] * X[y == c] ** 2).sum(0) for c in classes])
    return sums, counts, squares


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("gamma", [-0.5, 0.0, 0.7, -3.0])
def test_theta_matches_literal_double_sums(seed, gamma):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(23, 5)) * [1, 3, 0.1, 10, 1] + [0, 1, -2, 5, 0]
    y = rng.integers(0, 3, 23)
    sums, counts, squares = moments(X, y)
    np.testing.assert_allclose(markov_coefficients(sums, counts, squares.sum(0), gamma),
                               theta_eq19_literal(X, y, gamma), rtol=1e-9, atol=1e-12)


def test_weighted_theta_matches_literal():
    rng = np.random.default_rng(5)
    X, y, w = rng.normal(size=(17, 4)), rng.integers(0, 2, 17), rng.uniform(0.1, 3, 17)
    sums, counts, squares = moments(X, y, w)
    np.testing.assert_allclose(markov_coefficients(sums, counts, squares.sum(0), -0.5),
                               theta_eq19_literal(X, y, -0.5, w), rtol=1e-9)


@pytest.mark.parametrize("gamma", [-2.0, -0.5, 0.0, 1.0, 4.0])
def test_constant_feature_has_zero_theta(gamma):
    rng = np.random.default_rng(1)
    X = np.column_stack([np.full(30, 3.7), rng.normal(size=30)])
    sums, counts, squares = moments(X, rng.integers(0, 3, 30))
    assert abs(markov_coefficients(sums, counts, squares.sum(0), gamma)[0]) < 1e-10


def test_theta_is_between_class_minus_gamma_total_variance():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 2, 40)
    sums, counts, squares = moments(X, y)
    means = sums / counts[:, None]
    between = (counts[:, None] / 40 * (means - X.mean(0)) ** 2).sum(0)
    np.testing.assert_allclose(markov_coefficients(sums, counts, squares.sum(0), 0.3), between - 0.3 * X.var(0),
                               rtol=1e-9)


@pytest.mark.parametrize("scaling", ["range", "standard"])
def test_scaled_moments_equal_moments_of_scaled_data(scaling):
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(50, 4)) * [1, 5, 0.2, 3] + 2, rng.integers(0, 3, 50)
    sums, counts, squares = moments(X, y)
    offset, scale = feature_scaling(scaling, minimum=X.min(0), maximum=X.max(0), mean=X.sum(0) / 50,
                                    std=sample_std(50, X.sum(0), (X**2).sum(0)))
    # "standard" is (x - mean) / the sample std, ddof = 1 (sparkfs.core.scaling)
    expected = (X - X.min(0)) / (X.max(0) - X.min(0)) if scaling == "range" else (X - X.mean(0)) / X.std(0, ddof=1)
    got_sums, got_squares = affine_class_moments(sums, counts, squares, offset, scale)
    want_sums, _, want_squares = moments(expected, y)
    np.testing.assert_allclose(got_sums, want_sums, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(got_squares, want_squares, rtol=1e-9, atol=1e-9)


def test_mismatched_shapes_are_refused():
    with pytest.raises(ValueError, match="class_sums"):
        markov_coefficients(np.zeros((2, 3)), np.ones(3), np.zeros(3), -0.5)
    with pytest.raises(ValueError, match="sum_of_squares"):
        markov_coefficients(np.zeros((2, 3)), np.ones(2), np.zeros(4), -0.5)
