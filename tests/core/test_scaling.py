"""Feature scaling (sparkfs.core.scaling) against literal NumPy computations.

The documented meaning: x' = (x - offset) / scale with
  none:     offset 0,    scale 1
  range:    offset min,  scale max - min
  standard: offset mean, scale the sample std, ddof = 1 (Spark's Summarizer; weighted:
            sum w (x - mean)^2 / (W - sum w^2 / W))
and scale 1 for a constant feature. LFS uses offset and scale, Relief only the scale.
"""

import numpy as np
import pytest

from sparkfs.core import relief as rl
from sparkfs.core.fisher_markov import affine_class_moments, markov_coefficients
from sparkfs.core.scaling import SCALINGS, check_scaling, feature_scale, feature_scaling, sample_std
from tests.core.test_fisher_markov import moments, theta_eq19_literal
from tests.core.test_relief import assert_close, continuous_data, reference_margins, table_for


def data_with_a_constant_column(seed=0, n=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * [1.0, 6.0, 0.3, 1.0] + [0.0, 3.0, -2.0, 0.0]
    X[:, 3] = 0.7  # constant
    return X, rng.integers(0, 3, n)


def literal_sample_std(X):
    """sqrt(sum (x - mean)^2 / (n - 1)), written out (ddof = 1)."""
    n = X.shape[0]
    return np.sqrt(((X - X.sum(axis=0) / n) ** 2).sum(axis=0) / (n - 1))


def literal_weighted_sample_std(X, w):
    """Spark Summarizer's weighted sample std: sum w (x - mean_w)^2 / (W - sum w^2 / W)."""
    W = w.sum()
    mean = (w[:, None] * X).sum(axis=0) / W
    return np.sqrt((w[:, None] * (X - mean) ** 2).sum(axis=0) / (W - (w**2).sum() / W))


def scaling_of(X, scaling, w=None):
    """feature_scaling fed with the one-pass sums, as the LFS selector does."""
    w = np.ones(X.shape[0]) if w is None else w
    W, sums, squares = w.sum(), (w[:, None] * X).sum(axis=0), (w[:, None] * X**2).sum(axis=0)
    std = sample_std(W, sums, squares, weight_square_sum=(w**2).sum())
    return feature_scaling(scaling, minimum=X.min(axis=0), maximum=X.max(axis=0), mean=sums / W, std=std)


# ----------------------------------------------------------------------------------------------
# Each scaling against a literal computation
# ----------------------------------------------------------------------------------------------


def test_none_is_the_identity():
    X, _ = data_with_a_constant_column()
    offset, scale = scaling_of(X, "none")
    np.testing.assert_array_equal(offset, np.zeros(4))
    np.testing.assert_array_equal(scale, np.ones(4))


def test_range_maps_every_varying_feature_onto_0_1():
    X, _ = data_with_a_constant_column()
    offset, scale = scaling_of(X, "range")
    np.testing.assert_array_equal(offset, X.min(axis=0))
    np.testing.assert_array_equal(scale[:3], X[:, :3].max(axis=0) - X[:, :3].min(axis=0))
    scaled = (X - offset) / scale
    np.testing.assert_array_equal(scaled.min(axis=0), [0.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(scaled.max(axis=0), [1.0, 1.0, 1.0, 0.0], rtol=1e-15)


def test_standard_is_mean_and_sample_std_ddof_1():
    X, _ = data_with_a_constant_column(n=7)
    offset, scale = scaling_of(X, "standard")
    np.testing.assert_allclose(offset, X.sum(axis=0) / 7, rtol=1e-14)
    np.testing.assert_allclose(scale[:3], literal_sample_std(X[:, :3]), rtol=1e-12)
    # the documented ddof: 1, not the population std (the two differ by sqrt(n / (n - 1)))
    np.testing.assert_allclose(scale[:3] / X[:, :3].std(axis=0, ddof=0), np.sqrt(7 / 6), rtol=1e-12)
    scaled = (X[:, :3] - offset[:3]) / scale[:3]
    np.testing.assert_allclose((scaled**2).sum(axis=0) / 6, 1.0, rtol=1e-12)  # unit sample variance


def test_weighted_sample_std_is_summarizers_and_ignores_the_unit_of_the_weights():
    rng = np.random.default_rng(3)
    X, w = rng.normal(size=(25, 3)) * [1, 4, 0.5] + 2, rng.uniform(0.1, 3.0, 25)
    expected = literal_weighted_sample_std(X, w)
    for unit in (1.0, 1e-3, 250.0):
        weights = w * unit
        got = sample_std(weights.sum(), (weights[:, None] * X).sum(0), (weights[:, None] * X**2).sum(0),
                         weight_square_sum=(weights**2).sum())
        np.testing.assert_allclose(got, expected, rtol=1e-10)
    # unit weights: the plain ddof = 1 std
    np.testing.assert_allclose(sample_std(25, X.sum(0), (X**2).sum(0)), literal_sample_std(X), rtol=1e-12)


def test_one_row_has_std_zero_and_scale_one():
    x = np.array([[2.0, -1.0]])
    np.testing.assert_array_equal(sample_std(1, x.sum(0), (x**2).sum(0)), [0.0, 0.0])
    # all the weight on one row: W - sum w^2 / W = 0
    np.testing.assert_array_equal(sample_std(2.0, [4.0, 1.0], [8.0, 1.0], weight_square_sum=4.0), [0.0, 0.0])
    np.testing.assert_array_equal(feature_scale("standard", minimum=x[0], maximum=x[0], std=[0.0, 0.0]), [1.0, 1.0])


# ----------------------------------------------------------------------------------------------
# Constant features
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scaling", SCALINGS)
def test_constant_feature_gets_scale_one(scaling):
    X, _ = data_with_a_constant_column()
    offset, scale = scaling_of(X, scaling)
    assert scale[3] == 1.0
    np.testing.assert_allclose((X[:, 3] - offset[3]) / scale[3], 0.0 if scaling != "none" else 0.7, atol=1e-15)


def test_constant_feature_is_found_from_min_and_max_not_from_a_rounding_residue():
    # 30 x 0.7: the one-pass variance sum x^2 / n - mean^2 rounds to a tiny positive number
    x = np.full(30, 0.7)
    residue = sample_std(30, [x.sum()], [(x**2).sum()])
    assert residue[0] > 0
    np.testing.assert_array_equal(feature_scale("standard", minimum=[0.7], maximum=[0.7], std=residue), [1.0])


@pytest.mark.parametrize("scaling", ["range", "standard"])
def test_lfs_theta_of_a_constant_feature_stays_zero_after_scaling(scaling):
    X, y = data_with_a_constant_column(seed=1, n=30)
    sums, counts, squares = moments(X, y)
    offset, scale = scaling_of(X, scaling)
    scaled_sums, scaled_squares = affine_class_moments(sums, counts, squares, offset, scale)
    theta = markov_coefficients(scaled_sums, counts, scaled_squares.sum(0), -0.5)
    assert abs(theta[3]) < 1e-12


# ----------------------------------------------------------------------------------------------
# Checks
# ----------------------------------------------------------------------------------------------


def test_unknown_scaling_and_missing_statistics_are_refused():
    with pytest.raises(ValueError, match="unknown scaling 'minmax'"):
        check_scaling("minmax")
    with pytest.raises(ValueError, match="unknown scaling 'log'"):
        feature_scaling("log", minimum=[0.0], maximum=[1.0])
    with pytest.raises(ValueError, match="needs the column minimum and maximum"):
        feature_scale("range", minimum=None, maximum=[1.0])
    with pytest.raises(ValueError, match="needs the column standard deviation"):
        feature_scale("standard", minimum=[0.0], maximum=[1.0])
    with pytest.raises(ValueError, match="needs the column mean"):
        feature_scaling("standard", minimum=[0.0], maximum=[1.0], std=[1.0])
    with pytest.raises(ValueError, match="std has shape"):
        feature_scale("standard", minimum=[0.0, 0.0], maximum=[1.0, 1.0], std=[1.0])


# ----------------------------------------------------------------------------------------------
# LFS: the analytic scaling of the one-pass statistics = theta on explicitly scaled data
# ----------------------------------------------------------------------------------------------


def explicitly_scaled(X, scaling, w=None):
    """The data scaled row by row, from literal statistics (ddof = 1 for "standard")."""
    if scaling == "range":
        spread = X.max(axis=0) - X.min(axis=0)
        return (X - X.min(axis=0)) / np.where(spread > 0, spread, 1.0)
    if w is None:
        mean, std = X.mean(axis=0), literal_sample_std(X)
    else:
        mean, std = (w[:, None] * X).sum(axis=0) / w.sum(), literal_weighted_sample_std(X, w)
    return (X - mean) / np.where(X.max(axis=0) > X.min(axis=0), std, 1.0)


@pytest.mark.parametrize("scaling", ["range", "standard"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("gamma", [-0.5, 0.7])
def test_lfs_with_analytic_scaling_equals_theta_of_scaled_data(scaling, weighted, gamma):
    rng = np.random.default_rng(11)
    X, y = rng.normal(size=(21, 5)) * [1, 5, 0.2, 3, 1] + [2, -1, 0, 10, 0], rng.integers(0, 3, 21)
    X[:, 4] = -1.3  # constant
    w = rng.uniform(0.2, 2.5, 21) if weighted else None
    sums, counts, squares = moments(X, y, w)
    offset, scale = scaling_of(X, scaling, w)
    scaled_sums, scaled_squares = affine_class_moments(sums, counts, squares, offset, scale)
    theta = markov_coefficients(scaled_sums, counts, scaled_squares.sum(0), gamma)
    expected = theta_eq19_literal(explicitly_scaled(X, scaling, w), y, gamma, w)
    np.testing.assert_allclose(theta, expected, rtol=1e-9, atol=1e-12)


def test_lfs_standard_theta_is_n_minus_1_over_n_times_the_population_std_theta():
    """ddof = 1 vs ddof = 0: theta scales by the common factor (n - 1) / n; the ranking does not move."""
    rng = np.random.default_rng(12)
    X, y = rng.normal(size=(16, 4)) * [1, 2, 3, 4], rng.integers(0, 2, 16)
    sample = theta_eq19_literal((X - X.mean(0)) / X.std(0, ddof=1), y, -0.5)
    population = theta_eq19_literal((X - X.mean(0)) / X.std(0, ddof=0), y, -0.5)
    sums, counts, squares = moments(X, y)
    offset, scale = scaling_of(X, "standard")
    scaled_sums, scaled_squares = affine_class_moments(sums, counts, squares, offset, scale)
    got = markov_coefficients(scaled_sums, counts, scaled_squares.sum(0), -0.5)
    np.testing.assert_allclose(got, sample, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got, population * 15 / 16, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(np.argsort(-sample, kind="stable"), np.argsort(-population, kind="stable"))


# ----------------------------------------------------------------------------------------------
# Relief: the divisor is the same scale; the offset plays no part
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scaling", SCALINGS)
def test_relief_divisor_is_the_scale_of_feature_scaling(scaling):
    X, _ = data_with_a_constant_column()
    _, scale = scaling_of(X, scaling)
    divisor = rl.feature_scale(scaling, minimum=X.min(0), maximum=X.max(0), std=literal_sample_std(X),
                               num_features=4)
    np.testing.assert_allclose(divisor, scale, rtol=1e-12)
    assert rl.SCALINGS == SCALINGS


@pytest.mark.parametrize("scaling", ["range", "standard"])
def test_relief_margins_on_scaled_data_use_only_the_scale(scaling):
    X, y = continuous_data(5, n=36, p=4)
    X = X * [1.0, 8.0, 0.1, 3.0] + [0.0, 50.0, -4.0, 1.0]
    ids = np.arange(len(y))
    offset, scale = scaling_of(X, scaling)
    divisor = rl.feature_scale(scaling, minimum=X.min(0), maximum=X.max(0), std=literal_sample_std(X))
    divided, standardised = X / divisor, (X - offset) / scale
    margins = rl.relief(divided, ids, table_for(divided, y, ids, ids, k=2), y)
    assert_close(margins, rl.relief(standardised, ids, table_for(standardised, y, ids, ids, k=2), y))
    assert_close(margins, reference_margins(explicitly_scaled(X, scaling), y, ids, ids, "relief", k=2))
