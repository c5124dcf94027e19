"""``missing=`` of the scikit-learn front, no JVM: 'drop-rows' scores as the fit on the rows left by hand, 'zero'
as the fit on NaN replaced by 0 by hand, dense and sparse, for every estimator; 'pairwise' (anova, chi2, variance)
as each feature's test on its complete cases, against SciPy and scikit-learn; missing labels, sample_weight,
infinite values and ``missing_``."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.errors import InvalidInputError
from sparkfs.sklearn import FRONT, ANOVASelector, Chi2Selector, LFSSelector, VarianceSelector
from tests.selectors.test_pairwise_missing import complete_cases_reference

pytestmark = [pytest.mark.filterwarnings("ignore::sparkfs.errors.SelectionTieWarning"),
              pytest.mark.filterwarnings("ignore::sparkfs.errors.SolverConvergenceWarning")]


def _data():
    rng = np.random.default_rng(5)
    y = np.arange(40) % 2
    X = rng.integers(0, 3, size=(40, 4)).astype(float)
    X[:, 1] += y
    X[[2, 9, 9, 20], [0, 1, 3, 2]] = np.nan
    return X, y


@pytest.mark.parametrize("method", sorted(FRONT))
def test_drop_rows_and_zero_score_the_rows_prepared_by_hand(method):
    X, y = _data()
    sparse = sorted(FRONT).index(method) % 2 == 1
    as_input = sp.csr_matrix if sparse else np.asarray
    keep = ~np.isnan(X).any(axis=1)
    dropped = FRONT[method](missing="drop-rows", num_features=2).fit(as_input(X), y)
    np.testing.assert_allclose(dropped.scores_, FRONT[method](num_features=2).fit(as_input(X[keep]), y[keep]).scores_,
                               rtol=1e-12, err_msg=method)
    assert dropped.missing_ == {"policy": "drop-rows", "rows_dropped": 3, "values_set_to_zero": 0}
    zeroed = FRONT[method](missing="zero", num_features=2).fit(as_input(X), y)
    np.testing.assert_allclose(zeroed.scores_, FRONT[method](num_features=2).fit(as_input(np.nan_to_num(X)), y).scores_,
                               rtol=1e-12, err_msg=method)
    assert zeroed.missing_ == {"policy": "zero", "rows_dropped": 0, "values_set_to_zero": 4}


def test_labels_weights_infinity_and_the_default():
    X, y = _data()
    labels = np.array(["a", "b"] * 20, dtype=object)
    labels[[5, 6]] = None
    keep = ~np.isnan(X).any(axis=1)
    keep[[5, 6]] = False
    weights = np.arange(1.0, 41.0)
    dropped = ANOVASelector(missing="drop-rows").fit(X, labels, sample_weight=weights)
    reference = ANOVASelector().fit(X[keep], labels[keep].astype(str), sample_weight=weights[keep])
    np.testing.assert_allclose(dropped.scores_, reference.scores_, rtol=1e-12)
    assert dropped.missing_["rows_dropped"] == 5
    with pytest.raises(InvalidInputError, match=r"2 row\(s\) have a missing label \(None or NaN\) in y: "
                       "missing='zero'"):
        ANOVASelector(missing="zero").fit(X, labels)
    X[0, 0] = np.inf
    for policy in ("drop-rows", "zero"):
        with pytest.raises(InvalidInputError, match="X holds 1 infinite value"):
            ANOVASelector(missing=policy).fit(X, y)
    with pytest.raises(ValueError, match="Input X contains"):
        ANOVASelector().fit(X, y)
    with pytest.raises(ValueError, match=r"The 'missing' parameter of ANOVASelector must be a str among "
                       r"\{'refuse', 'drop-rows', 'zero', 'pairwise'\}. Got 'mean' instead."):
        ANOVASelector(missing="mean").fit(X, y)
    with pytest.raises(InvalidInputError, match="missing='drop-rows' left no row to fit"):
        ANOVASelector(missing="drop-rows").fit(np.full((4, 2), np.nan), [0, 1, 0, 1])


@pytest.mark.parametrize("estimator,test", [(ANOVASelector, "anova"), (Chi2Selector, "chi2"),
                                            (VarianceSelector, "variance")])
@pytest.mark.parametrize("sparse", [False, True])
def test_pairwise_scores_each_feature_on_its_complete_cases(estimator, test, sparse):
    X, y = _data()
    weights = np.tile([1.0, 2.0, 0.0, 3.0], 10)
    as_input = sp.csr_matrix if sparse else np.asarray   # a stored NaN is missing, an absent entry is 0
    fitted = estimator(missing="pairwise", num_features=2).fit(as_input(X), y, sample_weight=weights)
    statistics, p_values = complete_cases_reference(test, X, y, weights)
    np.testing.assert_allclose(fitted.scores_, statistics, rtol=1e-9)
    if test != "variance":
        np.testing.assert_allclose(fitted.pvalues_, p_values, rtol=1e-7)
    assert fitted.missing_ == {"policy": "pairwise", "rows_dropped": 0, "values_set_to_zero": 0,
                               "values_left_out": 4, "features_with_missing": 4, "most_missing_in_a_feature": 1}


def test_pairwise_is_refused_by_the_methods_without_the_rule():
    X, y = _data()
    with pytest.raises(ValueError, match=r"LFSSelector: missing='pairwise' leaves a NaN out of one feature's "
                       r"statistic only, a rule of the univariate filters \(anova, chi2, variance\)"):
        LFSSelector(missing="pairwise").fit(X, y)
    labels = y.astype(float)
    labels[3] = np.nan
    with pytest.raises(InvalidInputError, match=r"1 row\(s\) have a missing label \(None or NaN\) in y: "
                       "missing='pairwise'"):
        ANOVASelector(missing="pairwise").fit(X, labels)
