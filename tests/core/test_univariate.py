"""ANOVA F from class moments vs scikit-learn's f_classif (an independent implementation)."""

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
