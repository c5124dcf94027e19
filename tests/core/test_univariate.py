"""ANOVA F from class moments vs scikit-learn's f_classif (an independent implementation); with per-feature
counts of present values (pairwise deletion), anova, chi2 and variance vs SciPy, scikit-learn and NumPy on each
feature's complete cases."""

import numpy as np
import pytest
from sklearn.feature_selection import f_classif

from sparkfs.core.univariate import anova_f_values


def moments(X, y, num_classes):
    counts = np.bincount(y, minlength=num_classes)
    sums = np.array([X[y == c].sum(axis=0) for c in range(num_classes)])
    squares = np.array([(X[y == c] ** 2).sum(axis=0) for c in range(num_classes)])
    return counts, sums, squares


@pytest.mark.parametrize("seed,num_classes", [(0, 2), (1, 3), (2, 5)])
def test_equals_f_classif(seed, num_classes):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, num_classes, 80)
    X = rng.normal(size=(80, 6)) + 0.7 * y[:, None] * (np.arange(6) < 2)
    np.testing.assert_allclose(anova_f_values(*moments(X, y, num_classes)), f_classif(X, y)[0], rtol=1e-9)


@pytest.mark.parametrize("seed,num_classes", [(0, 2), (2, 5)])
def test_anova_p_values_equal_f_classif(seed, num_classes):
    """p = P(F(C - 1, n - C) > F), scikit-learn's f_classif p-values; a class declared without rows
    changes neither the F values nor the degrees of freedom."""
    from sparkfs.core.univariate import anova_p_values

    rng = np.random.default_rng(seed)
    y = rng.integers(0, num_classes, 80)
    X = rng.normal(size=(80, 6)) + 0.7 * y[:, None] * (np.arange(6) < 2)
    counts, sums, squares = moments(X, y, num_classes + 1)  # the last class has no rows
    f_values = anova_f_values(counts, sums, squares)
    reference_f, reference_p = f_classif(X, y)
    np.testing.assert_allclose(anova_p_values(f_values, counts), reference_p, rtol=1e-9)
    assert reference_p[:2].max() < reference_p[2:].min()  # the shifted features are the significant ones


def test_anova_p_values_of_the_edge_statistics():
    from sparkfs.core.univariate import anova_p_values

    assert anova_p_values([np.inf, 0.0], [3, 4]).tolist() == [0.0, 1.0]
    assert np.isnan(anova_p_values([np.nan], [3, 4])[0])
    assert np.all(np.isnan(anova_p_values([2.0, 3.0], [2, 0])))  # one class: no test
    assert np.all(np.isnan(anova_p_values([2.0], [1, 1])))  # n <= C: no within-class degrees of freedom


def test_constant_feature_is_nan_and_empty_class_is_ignored():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 3))
    X[:, 2] = 4.0
    y = np.arange(30) % 2
    with np.errstate(all="ignore"), pytest.warns(UserWarning):
        reference = f_classif(X, y)[0]
    got = anova_f_values(*moments(X, y, 3))  # class 2 declared but empty
    np.testing.assert_allclose(got[:2], reference[:2], rtol=1e-9)
    assert np.isnan(got[2])
    assert np.all(np.isnan(anova_f_values([5, 0], np.ones((2, 3)), np.ones((2, 3)))))  # one class


def chi2_from_the_definition(X, y):
    """Pearson's chi-squared of class sums written out cell by cell: O_cj the sum of feature j
    over class c, E_cj = P(c) * (sum of feature j over all rows)."""
    classes = np.unique(y)
    statistics = np.zeros(X.shape[1])
    for j in range(X.shape[1]):
        total = X[:, j].sum()
        for c in classes:
            observed = X[y == c, j].sum()
            expected = np.mean(y == c) * total
            statistics[j] += (observed - expected) ** 2 / expected
    return statistics


@pytest.mark.parametrize("seed,num_classes", [(0, 2), (1, 4)])
def test_chi2_equals_the_definition_and_scikit_learn(seed, num_classes):
    from sklearn.feature_selection import chi2

    from sparkfs.core.univariate import chi2_p_values, chi2_statistics

    rng = np.random.default_rng(seed)
    y = rng.integers(0, num_classes, 90)
    X = rng.poisson(1.0 + 2.0 * y[:, None] * (np.arange(7) < 3), size=(90, 7)).astype(float)
    counts, sums, _ = moments(X, y, num_classes)
    statistics = chi2_statistics(counts, sums)
    np.testing.assert_allclose(statistics, chi2_from_the_definition(X, y), rtol=1e-12)
    reference_statistics, reference_p = chi2(X, y)
    np.testing.assert_allclose(statistics, reference_statistics, rtol=1e-12)
    np.testing.assert_allclose(chi2_p_values(statistics, num_classes), reference_p, rtol=1e-9)
    assert statistics[:3].min() > statistics[3:].max()  # the class-dependent counts rank first


def test_chi2_of_an_all_zero_feature_is_nan():
    from sparkfs.core.univariate import chi2_statistics

    X = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 0.0], [3.0, 0.0]])
    y = np.array([0, 0, 1, 1])
    with np.errstate(all="ignore"):
        statistics = chi2_statistics(*moments(X, y, 2)[:2])
    assert np.isfinite(statistics[0]) and np.isnan(statistics[1])


def test_constant_feature_candidates_hold_every_constant_column_whatever_the_summation_order():
    """Constant columns (awkward values, a class of one row) stay candidates however the class sums
    were rounded (sequential, pairwise, squares through sqrt and back as Spark's normL2); an all-zero
    column is zero; varying columns, even within 1e-3 of their mean of 5, are neither."""
    from sparkfs.core.univariate import constant_feature_candidates

    rng = np.random.default_rng(11)
    y = np.concatenate([np.zeros(4000, dtype=int), np.ones(2999, dtype=int), [2]])
    X = np.column_stack([np.full(y.size, 0.1), np.full(y.size, -7.3e5), np.full(y.size, 1.0 / 3.0),
                         np.zeros(y.size), rng.normal(size=y.size), 5.0 + 1e-3 * rng.normal(size=y.size)])
    counts = np.bincount(y)

    def sequential(values):
        total = 0.0
        for value in values:
            total += value
        return total

    for add in (sequential, np.sum):
        sums = np.array([[add(X[y == c, j]) for j in range(X.shape[1])] for c in range(3)])
        squares = np.array([[add(X[y == c, j] ** 2) for j in range(X.shape[1])] for c in range(3)])
        for rounded_squares in (squares, np.sqrt(squares) ** 2):
            zero, candidates = constant_feature_candidates(counts, sums, rounded_squares)
            assert zero.tolist() == [False, False, False, True, False, False]
            assert candidates.tolist() == [True, True, True, False, False, False]


@pytest.mark.parametrize("seed,num_classes", [(3, 2), (4, 4)])
def test_per_feature_counts_give_each_features_test_on_its_complete_cases(seed, num_classes):
    """Counts (C, p) with sums over the present values (pairwise deletion): anova, chi2 and variance of every
    feature equal SciPy's, scikit-learn's and NumPy's on that feature's rows without NaN; the degrees of freedom
    follow each feature's present rows."""
    from scipy.stats import f_oneway
    from sklearn.feature_selection import chi2

    from sparkfs.core.missing_values import class_missing_values, present_class_weights
    from sparkfs.core.moment_filters import anova_scores, chi2_scores, variance_scores

    rng = np.random.default_rng(seed)
    y = rng.integers(0, num_classes, 90)
    X = rng.integers(0, 5, size=(90, 5)).astype(float) + y[:, None] * (np.arange(5) < 2)
    X[rng.random(X.shape) < 0.15] = np.nan
    zeroed, missing_weights, missing_rows = class_missing_values(X, y, np.ones(90), num_classes)
    counts = np.bincount(y, minlength=num_classes)
    present, missing_values = present_class_weights(counts.astype(float), counts, missing_weights, missing_rows)
    _, sums, squares = moments(zeroed, y, num_classes)
    np.testing.assert_array_equal(missing_values, np.isnan(X).sum(axis=0))
    anova, chi2_statistics, variance = (score(present, sums, squares)
                                        for score in (anova_scores, chi2_scores, variance_scores))
    for j in range(X.shape[1]):
        kept = ~np.isnan(X[:, j])
        values, labels = X[kept, j], y[kept]
        reference = f_oneway(*[values[labels == c] for c in np.unique(labels)])
        np.testing.assert_allclose([anova.statistics[j], anova.p_values[j]], [reference.statistic, reference.pvalue],
                                   rtol=1e-9)
        statistic, p_value = chi2(values[:, None], labels)
        np.testing.assert_allclose([chi2_statistics.statistics[j], chi2_statistics.p_values[j]],
                                   [statistic[0], p_value[0]], rtol=1e-9)
        np.testing.assert_allclose(variance.statistics[j], np.var(values, ddof=1), rtol=1e-12)


def test_a_class_whose_rows_all_miss_a_feature_has_no_count_there():
    import scipy.sparse as sp

    from sparkfs.core.missing_values import class_missing_values, present_class_weights

    X = np.array([[np.nan, 1.0], [np.nan, 2.0], [3.0, np.nan], [4.0, 5.0]])
    y = np.array([0, 0, 1, 1])
    weights = np.array([0.1, 0.2, 0.7, 1.3])   # 0.1 + 0.2 - (0.1 + 0.2) could leave rounding: exactly 0 here
    _, missing_weights, missing_rows = class_missing_values(X, y, weights, 2)
    present, _ = present_class_weights([0.1 + 0.2, 2.0], [2, 2], missing_weights, missing_rows)
    assert present[0, 0] == 0.0 and present[1, 0] == 2.0
    np.testing.assert_allclose(present[:, 1], [0.3, 1.3])
    _, sparse_weights, sparse_rows = class_missing_values(sp.csr_matrix(np.nan_to_num(X, nan=0.0)), y, weights, 2)
    assert not sparse_rows.any() and not sparse_weights.any()   # an absent entry is the value 0, present
