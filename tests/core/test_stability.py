"""Stability measures and the synthetic study of Han & Yu (2010), vs hand-computed values and
literal references of eqs. (1)-(4), (8) and (9)."""

from itertools import combinations

import numpy as np
import pytest

from sparkfs.core import stability as st

# Kuncheva index (eq. 9) --------------------------------------------------------------------------


@pytest.mark.parametrize("overlap, expected", [(0, -9 / 21), (1, 1 / 21), (2, 11 / 21), (3, 1.0)])
def test_kuncheva_hand_computed(overlap, expected):
    # n = 10, k = 3: (r n - k^2) / (k (n - k)) = (10 r - 9) / 21.
    a = [0, 1, 2]
    b = [0, 1, 2][:overlap] + [7, 8, 9][:3 - overlap]
    assert st.kuncheva_index(a, b, 10) == pytest.approx(expected, abs=1e-15)
    assert st.kuncheva_index(b, a, 10) == pytest.approx(expected, abs=1e-15)


def test_kuncheva_identical_subsets_give_one():
    rng = np.random.default_rng(0)
    for k in range(1, 20):
        subset = rng.choice(20 + k, size=k, replace=False)
        assert st.kuncheva_index(subset, rng.permutation(subset), 20 + k) == pytest.approx(1.0, abs=1e-15)


def test_kuncheva_is_bounded_and_about_zero_for_random_subsets():
    rng = np.random.default_rng(12345)
    n, k, draws = 50, 10, 4000
    values = np.array([st.kuncheva_index(rng.choice(n, k, replace=False), rng.choice(n, k, replace=False), n)
                       for _ in range(draws)])
    assert np.all(values >= -1.0) and np.all(values <= 1.0)
    # E[r] = k^2 / n exactly; the index's sd is ~0.14 here, so its mean's standard error ~0.0023.
    assert abs(values.mean()) < 0.015
    # The minimum over all overlaps of every (n, k) stays in [-1, 1] (r = max(0, 2k - n)).
    for n in range(2, 30):
        for k in range(1, n):
            for overlap in range(max(0, 2 * k - n), k + 1):
                value = (overlap * n - k * k) / (k * (n - k))
                a = list(range(k))
                b = list(range(overlap)) + list(range(k, k + k - overlap))
                assert st.kuncheva_index(a, b, n) == pytest.approx(value, abs=1e-14)
                assert -1.0 <= value <= 1.0


def test_kuncheva_empty_and_full_subsets_are_zero():
    assert st.kuncheva_index([], [], 5) == 0.0
    assert st.kuncheva_index(range(5), range(5), 5) == 0.0


@pytest.mark.parametrize("a, b", [([0, 1], [2]), ([0, 0], [1, 2]), ([0, 5], [1, 2])])
def test_kuncheva_refuses_unequal_sizes_duplicates_and_out_of_range(a, b):
    with pytest.raises(ValueError):
        st.kuncheva_index(a, b, 5)


def test_average_over_pairs_eq8():
    subsets = [[0, 1, 2], [0, 1, 3], [4, 5, 6], [0, 5, 9]]
    n = 10
    total, count = 0.0, 0
    for i in range(len(subsets)):
        for j in range(i + 1, len(subsets)):
            overlap = len(set(subsets[i]) & set(subsets[j]))
            total += (overlap - 9 / n) / (3 - 9 / n)
            count += 1
    assert count == 6
    assert st.kuncheva_stability(subsets, n) == pytest.approx(2 * total / (4 * 3), abs=1e-15)
    assert st.kuncheva_stability([subsets[0]] * 3, n) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        st.kuncheva_stability([subsets[0]], n)


def test_jaccard():
    assert st.jaccard_index([0, 1, 2], [1, 2, 3]) == pytest.approx(0.5)
    assert st.jaccard_index([], []) == 1.0
    assert st.jaccard_index([1], []) == 0.0
    subsets = [[0, 1], [1, 2], [0, 1, 2]]
    expected = np.mean([len(set(a) & set(b)) / len(set(a) | set(b)) for a, b in combinations(subsets, 2)])
    assert st.jaccard_stability(subsets) == pytest.approx(expected)


def test_top_k_subsets_break_ties_by_index():
    scores = np.array([[0.1, 0.9, 0.9, 0.5], [4.0, 3.0, 2.0, 1.0]])
    subsets = st.top_k_subsets(scores, 2)
    assert [s.tolist() for s in subsets] == [[1, 2], [0, 1]]


# Weights: variance, bias, error (eqs. 1-4) -----------------------------------------------------


def test_normalised_feature_weights():
    weights = st.normalised_feature_weights([[1.0, -3.0, 0.0], [0.0, 0.0, 0.0]])
    assert np.allclose(weights, [[0.25, 0.75, 0.0], [0.0, 0.0, 0.0]])


def test_bias_variance_error_hand_computed():
    # Two runs, two features, r* = (0.5, 0.5): E r = (0.4, 0.6).
    weights = np.array([[0.6, 0.4], [0.2, 0.8]])
    terms = st.bias_variance_error(weights, [0.5, 0.5])
    assert np.allclose(terms.bias, [0.01, 0.01], rtol=0, atol=1e-15)        # (0.5 - 0.4)^2
    assert np.allclose(terms.variance, [0.04, 0.04], rtol=0, atol=1e-15)    # (0.2^2 + 0.2^2) / 2
    assert np.allclose(terms.error, [0.05, 0.05], rtol=0, atol=1e-15)       # (0.1^2 + 0.3^2) / 2
    average = st.average_bias_variance_error(weights, [0.5, 0.5])
    assert (average.bias, average.variance, average.error) == pytest.approx((0.01, 0.04, 0.05))


def test_error_is_bias_plus_variance():
    rng = np.random.default_rng(3)
    weights = st.normalised_feature_weights(rng.normal(size=(37, 25)))
    truth = st.normalised_feature_weights(rng.random(25))
    terms = st.bias_variance_error(weights, truth)
    assert np.allclose(terms.error, terms.bias + terms.variance, rtol=1e-12, atol=0)
    # Against plain loops over the runs (probability 1/R each).
    R, d = weights.shape
    for j in range(d):
        mean = sum(weights[t, j] for t in range(R)) / R
        assert terms.bias[j] == pytest.approx((truth[j] - mean) ** 2, rel=1e-12)
        assert terms.variance[j] == pytest.approx(sum((weights[t, j] - mean) ** 2 for t in range(R)) / R, rel=1e-12)
        assert terms.error[j] == pytest.approx(sum((truth[j] - weights[t, j]) ** 2 for t in range(R)) / R, rel=1e-12)
    assert np.allclose(st.weight_variance(weights), np.var(weights, axis=0), rtol=1e-12)


def test_variance_refuses_bad_shapes():
    with pytest.raises(ValueError):
        st.weight_variance(np.ones(3))
    with pytest.raises(ValueError):
        st.bias_variance_error(np.ones((2, 3)), np.ones(2))


# The synthetic generator (Section V-B) ----------------------------------------------------------


def test_generator_correlations_and_class_means():
    X, y = st.correlated_groups_data(4000, seed=11)
    assert X.shape == (4000, 1000)
    assert np.sum(y == 1) == 2000 and np.sum(y == -1) == 2000
    positive, negative = X[y == 1].mean(axis=0), X[y == -1].mean(axis=0)
    assert abs(positive[:50].mean() - 0.5) < 0.05 and abs(negative[:50].mean() + 0.5) < 0.05
    assert np.max(np.abs(positive[50:])) < 0.15 and np.max(np.abs(negative[50:])) < 0.15
    # Correlations within each class (the class shift would add to them on the relevant groups).
    centred = np.where(y[:, None] == 1, X - positive, X - negative)
    correlation = np.corrcoef(centred, rowvar=False)
    group = np.arange(1000) // 10
    same = (group[:, None] == group[None, :]) & ~np.eye(1000, dtype=bool)
    different = group[:, None] != group[None, :]
    assert abs(correlation[same].mean() - 0.8) < 0.02
    assert abs(correlation[different].mean()) < 0.01
    assert np.allclose(np.diag(np.cov(centred, rowvar=False)), 1.0, atol=0.1)


def test_generator_is_seeded_and_labels_by_sign():
    X1, y1 = st.correlated_groups_data(100, seed=4)
    X2, y2 = st.correlated_groups_data(100, seed=4)
    assert np.array_equal(X1, X2) and np.array_equal(y1, y2)
    X3, y3 = st.correlated_groups_data(100, seed=4, labels="sign")
    truth = st.correlated_groups_relevance()
    assert truth.sum() == pytest.approx(1.0) and np.all(truth[:50] == 0.02) and np.all(truth[50:] == 0)
    assert np.array_equal(X3, X1) and np.array_equal(y3, np.where(X1 @ truth >= 0, 1, -1))
    with pytest.raises(ValueError):
        st.correlated_groups_data(10, seed=0, labels="other")


def test_all_pairs_at_once_equals_pair_by_pair_to_the_last_bit():
    from sparkfs.core import stability as stability_math

    rng = np.random.default_rng(8)
    for runs, n, k in [(2, 5, 2), (9, 40, 7), (30, 300, 25), (4, 12, 12), (3, 9, 0)]:
        subsets = [rng.choice(n, k, replace=False) for _ in range(runs)]
        pairwise = stability_math.average_pairwise_similarity(
            subsets, lambda a, b, n=n: stability_math.kuncheva_index(a, b, n))
        assert stability_math.kuncheva_stability(subsets, n) == pairwise
        uneven = [rng.choice(n, int(rng.integers(0, n + 1)), replace=False) for _ in range(runs)]
        assert (stability_math.jaccard_stability(uneven)
                == stability_math.average_pairwise_similarity(uneven, stability_math.jaccard_index))
    with pytest.raises(ValueError, match="equal size"):
        stability_math.kuncheva_stability([[0, 1], [2]], 5)
