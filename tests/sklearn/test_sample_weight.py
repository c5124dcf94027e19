"""``fit(X, y, sample_weight)`` of the scikit-learn front: frequency weights, so integer weights give
the scores of the rows repeated w times; a method without weights refuses them by name."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.utils.validation import has_fit_parameter

from sparkfs.errors import InvalidInputError
from sparkfs.sklearn import FRONT
from sparkfs.sklearn.base import checked_sample_weight

#: The front's methods whose fit takes sample_weight (their Spark selectors take weightCol).
WEIGHTED = ("anova", "chi2", "variance", "lfs", "mrmr", "jmi", "cmim", "svm-rfe", "relieff", "multisurf",
            "multisurf-star", "surf", "surf-star", "turf")  # the neighbour methods: test_neighbour_sample_weight.py


def _data(sparse=False):
    rng = np.random.default_rng(5)
    n = 40
    y = np.arange(n) % 3
    X = np.abs(rng.normal(size=(n, 6))) + np.outer(y, [0.9, 0.0, 0.4, 0.0, 0.0, 0.0])
    X[rng.random((n, 6)) < 0.3] = 0.0
    w = rng.integers(0, 4, n).astype(np.float64)
    w[:3] = 1.0
    return (sp.csr_matrix(X) if sparse else X), y, w


def _repeated(X, y, w):
    rows = np.repeat(np.arange(len(y)), w.astype(np.int64))
    return X[rows], y[rows]


def test_the_methods_with_weights_have_sample_weight_in_fit():
    for method, cls in FRONT.items():
        assert has_fit_parameter(cls(), "sample_weight") is (method in WEIGHTED), method
        assert cls.takes_sample_weight is (method in WEIGHTED), method


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("method, params", [("anova", {}), ("chi2", {}), ("variance", {}), ("lfs", {"scaling": "none"}),
                                            ("lfs", {"scaling": "range"}), ("mrmr", {}), ("jmi", {"bins": 4}),
                                            ("cmim", {})], ids=lambda value: str(value))
def test_integer_weights_are_the_repeated_rows(method, params, sparse):
    X, y, w = _data(sparse)
    weighted = FRONT[method](num_features=3, **params).fit(X, y, sample_weight=w)
    repeated = FRONT[method](num_features=3, **params).fit(*_repeated(X, y, w))
    np.testing.assert_allclose(weighted.scores_, repeated.scores_, rtol=1e-12, atol=1e-15)
    if hasattr(repeated, "pvalues_"):
        np.testing.assert_allclose(weighted.pvalues_, repeated.pvalues_, rtol=1e-10, atol=1e-15)
    if hasattr(repeated, "relevance_"):
        np.testing.assert_allclose(weighted.relevance_, repeated.relevance_, rtol=1e-12, atol=1e-15)
        assert weighted.selection_order_ == repeated.selection_order_
    np.testing.assert_array_equal(weighted.get_support(), repeated.get_support())
    unweighted = FRONT[method](num_features=3, **params).fit(X, y)
    assert not np.allclose(unweighted.scores_, weighted.scores_) or method in ("mrmr", "jmi", "cmim")


def test_lfs_standard_scaling_takes_the_weighted_sample_std():
    """scaling='standard' divides by sum w (x - mean)^2 / (W - sum w^2 / W) (Spark's Summarizer),
    which repeated rows do not give: checked against a literal computation instead."""
    X, y, w = _data()
    weighted = FRONT["lfs"](scaling="standard").fit(X, y, sample_weight=w)
    total = w.sum()
    mean = (w[:, None] * X).sum(axis=0) / total
    std = np.sqrt((w[:, None] * (X - mean) ** 2).sum(axis=0) / (total - (w * w).sum() / total))
    scaled = FRONT["lfs"](scaling="none").fit((X - mean) / std, y, sample_weight=w)
    np.testing.assert_allclose(weighted.scores_, scaled.scores_, rtol=1e-9, atol=1e-12)


def test_svm_rfe_hands_the_weights_to_liblinear():
    X, y, w = _data()
    twice = FRONT["svm-rfe"](C=0.5, eliminate_all=True).fit(X, y, sample_weight=np.full(len(y), 2.0))
    plain = FRONT["svm-rfe"](C=1.0, eliminate_all=True).fit(X, y)
    np.testing.assert_array_equal(twice.ranking_, plain.ranking_)
    weighted = FRONT["svm-rfe"](eliminate_all=True).fit(X, y, sample_weight=w)
    assert weighted.scores_.shape == (X.shape[1],)


@pytest.mark.parametrize("method", ["relief", "prelief", "qfs", "chi2-categorical", "f-regression"])
def test_a_method_without_weights_in_the_front_refuses_sample_weight(method):
    X, y, w = _data()
    with pytest.raises(ValueError, match="does not take sample_weight"):
        FRONT[method]().fit(X, y, sample_weight=w)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        FRONT[method]().fit(X, y, weights=w)


@pytest.mark.parametrize("bad", [-1.0, np.nan, np.inf])
def test_bad_weights_are_refused(bad):
    X, y, w = _data()
    w = w.copy()
    w[7] = bad
    for method in ("anova", "mrmr"):
        with pytest.raises(InvalidInputError, match="1 row\\(s\\) have a NaN, infinite or negative sample_weight"):
            FRONT[method]().fit(X, y, sample_weight=w)
    with pytest.raises(ValueError, match="must have shape \\(3,\\)"):
        checked_sample_weight([1.0, 2.0], 3)
    with pytest.raises(InvalidInputError, match="sample_weight sums to zero"):
        FRONT["chi2"]().fit(X, y, sample_weight=np.zeros(len(y)))
