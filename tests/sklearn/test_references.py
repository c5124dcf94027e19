"""The front against independent references, without Spark: scikit-learn's ``f_classif``, ``chi2``,
``SelectFpr`` / ``SelectFdr`` / ``SelectFwe``, NumPy's sample variance and a literal NumPy
evaluation of LFS's eq. (19) with its double sums over pairs of rows; and the numeric policy
(constant features, ties, labels, refusals)."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_selection import SelectFdr, SelectFpr, SelectFwe, chi2, f_classif

from sparkfs.errors import InvalidInputError
from sparkfs.sklearn import (
    NOT_YET,
    ANOVASelector,
    Chi2Selector,
    LFSSelector,
    MomentFilterSelector,
    VarianceSelector,
    estimator_for,
)


def _data(seed=0, n=70, p=7, signed=True):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(size=(n, p)) * np.linspace(0.5, 3.0, p)
    X[:, 2] += 0.8 * y
    X[:, 5] += 0.3 * (y == 1)
    if not signed:
        X = np.abs(X)
    X[rng.random(X.shape) < 0.25] = 0.0
    return X, y


@pytest.mark.parametrize("sparse", [False, True])
def test_anova_is_f_classif(sparse):
    X, y = _data()
    front = ANOVASelector().fit(sp.csr_matrix(X) if sparse else X, y)
    F, p = f_classif(X, y)
    np.testing.assert_allclose(front.scores_, F, rtol=1e-10)
    np.testing.assert_allclose(front.pvalues_, p, rtol=1e-8)
    np.testing.assert_allclose(front.statistics_, F, rtol=1e-10)


@pytest.mark.parametrize("sparse", [False, True])
def test_f_regression_is_scikit_learns_on_diabetes_and_friedman(sparse):
    from sklearn.datasets import load_diabetes, make_friedman1
    from sklearn.feature_selection import f_regression

    from sparkfs.sklearn import FRegressionSelector

    for X, y in (load_diabetes(return_X_y=True), make_friedman1(n_samples=200, n_features=12, random_state=0)):
        front = FRegressionSelector(num_features=4).fit(sp.csr_matrix(X) if sparse else X, y)
        F, p = f_regression(X, y)
        np.testing.assert_allclose(front.scores_, F, rtol=1e-9)
        np.testing.assert_allclose(front.pvalues_, p, rtol=1e-7, atol=1e-300)
        assert np.flatnonzero(front.get_support()).tolist() == sorted(np.argsort(-F, kind="stable")[:4].tolist())
    with pytest.raises(InvalidInputError, match="is constant"):
        FRegressionSelector().fit(X, np.full(X.shape[0], 2.0))


@pytest.mark.parametrize("sparse", [False, True])
def test_chi2_is_scikit_learns_chi2(sparse):
    X, y = _data(1, signed=False)
    front = Chi2Selector().fit(sp.csr_matrix(X) if sparse else X, y)
    statistics, p = chi2(X, y)
    np.testing.assert_allclose(front.scores_, statistics, rtol=1e-10)
    np.testing.assert_allclose(front.pvalues_, p, rtol=1e-8)


def test_chi2_refuses_negative_values_naming_the_feature():
    X, y = _data(2)
    with pytest.raises(InvalidInputError, match=r"Negative values in data passed to Chi2Selector.*feature 0"):
        Chi2Selector().fit(X, y)


@pytest.mark.parametrize("sparse", [False, True])
def test_variance_is_the_sample_variance_without_labels(sparse):
    X, _ = _data(3)
    front = VarianceSelector(threshold=1.0).fit(sp.csr_matrix(X) if sparse else X)
    variance = X.var(axis=0, ddof=1)
    np.testing.assert_allclose(front.scores_, variance, rtol=1e-10)
    assert np.array_equal(front.get_support(), variance > 1.0)
    assert not hasattr(front, "pvalues_")


def _lfs_reference(X, y, gamma):
    """Eq. (19) as printed: double sums over pairs of rows, (1/n) sum_i (1/n_i) sum_{u,v in i} x_u x_v
    - (gamma / n) sum_u x_u^2 + ((gamma - 1) / n^2) sum_{u,v} x_u x_v, one feature at a time."""
    n = X.shape[0]
    theta = np.zeros(X.shape[1])
    for j in range(X.shape[1]):
        column = X[:, j]
        within = sum(np.sum(np.outer(column[y == c], column[y == c])) / np.sum(y == c) for c in np.unique(y))
        theta[j] = (within / n - gamma / n * np.sum(column * column)
                    + (gamma - 1.0) / n**2 * np.sum(np.outer(column, column)))
    return theta


@pytest.mark.parametrize("gamma", [-0.5, 0.7])
def test_lfs_is_equation_19(gamma):
    X, y = _data(4)
    X[:, 6] = 3.0  # constant: theta 0 in exact arithmetic, and 0 standardised
    raw = LFSSelector(preset="paper", gamma=gamma).fit(X, y)
    np.testing.assert_allclose(raw.scores_, _lfs_reference(X, y, gamma), rtol=1e-9, atol=1e-9)
    std = X.std(axis=0, ddof=1)
    standardised = (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    fitted = LFSSelector(gamma=gamma).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(fitted.scores_, _lfs_reference(standardised, y, gamma), rtol=1e-9, atol=1e-9)
    span = X.max(axis=0) - X.min(axis=0)
    ranged = (X - X.min(axis=0)) / np.where(span > 0, span, 1.0)
    np.testing.assert_allclose(LFSSelector(scaling="range", gamma=gamma).fit(X, y).scores_,
                               _lfs_reference(ranged, y, gamma), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("mode, reference", [("fpr", SelectFpr), ("fdr", SelectFdr), ("fwe", SelectFwe)])
@pytest.mark.parametrize("alpha", [0.01, 0.2])
def test_p_value_modes_select_what_scikit_learn_selects(mode, reference, alpha):
    X, y = _data(5, p=12)
    front = ANOVASelector(selection_mode=mode, selection_threshold=alpha).fit(X, y)
    assert np.array_equal(front.get_support(), reference(f_classif, alpha=alpha).fit(X, y).get_support())


def test_top_k_breaks_ties_by_the_lower_index_and_constant_features_rank_last():
    X, y = _data(6)
    X[:, 4] = X[:, 1]  # equal scores: the lower index wins the cut
    X[:, 0] = -2.0     # constant: F undefined -> score 0, p-value 1
    front = ANOVASelector().fit(X, y)
    assert front.scores_[0] == 0.0 and front.pvalues_[0] == 1.0 and np.isnan(front.statistics_[0])
    order = np.argsort(-front.scores_, kind="mergesort")
    k = int(np.flatnonzero(order == 1)[0]) + 1  # the cut between the two equal columns
    support = np.flatnonzero(ANOVASelector(num_features=k).fit(X, y).get_support())
    assert 1 in support and 4 not in support
    assert set(support) == set(order[:k])


def test_percentile_keeps_floor_of_the_share():
    X, y = _data(7, p=10)
    front = ANOVASelector(selection_mode="percentile", selection_threshold=0.25).fit(X, y)
    assert front.get_support().sum() == 2
    assert set(np.flatnonzero(front.get_support())) == set(np.argsort(-front.scores_, kind="mergesort")[:2])


def test_num_features_above_the_features_keeps_all_and_warns_only_when_given():
    X, y = _data(8)
    assert ANOVASelector().fit(X, y).get_support().all()  # the default 50: silently all
    with pytest.warns(UserWarning, match="larger than the number of features"):
        assert ANOVASelector(num_features=99).fit(X, y).get_support().all()


@pytest.mark.filterwarnings("ignore:The number of unique classes")
def test_labels_need_two_classes_and_refuse_identifiers():
    X, y = _data(9)
    with pytest.raises(ValueError, match="at least two classes; y has 1 class"):
        ANOVASelector().fit(X, np.zeros(X.shape[0]))
    identifiers = np.arange(X.shape[0])
    with pytest.raises(InvalidInputError, match="allow_many_classes"):
        LFSSelector().fit(X, identifiers)
    assert LFSSelector(allow_many_classes=True).fit(X, identifiers).scores_.shape == (X.shape[1],)
    with pytest.raises(ValueError, match="Unknown label type"):
        ANOVASelector().fit(X, np.linspace(0, 1, X.shape[0]))


def test_nan_is_refused_with_scikit_learns_message():
    X, y = _data(10)
    X[3, 2] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        ANOVASelector().fit(X, y)


@pytest.mark.parametrize("estimator, message", [
    (ANOVASelector(num_features=0), r"The 'num_features' parameter of ANOVASelector must be an int in the range "
                                    r"\[1, inf\) or None. Got 0 instead."),
    (VarianceSelector(selection_mode="fdr"), r"The 'selection_mode' parameter of VarianceSelector must be a str "
                                             r"among \{'numTopFeatures', 'percentile'\}. Got 'fdr' instead."),
    (ANOVASelector(selection_threshold=0.1), "with selection_mode='numTopFeatures' the count is num_features"),
    (ANOVASelector(selection_mode="fdr", num_features=3), "Give one of the two rules"),
    (ANOVASelector(selection_mode="percentile", selection_threshold=1.5), "selection_threshold"),
    (LFSSelector(scaling="unit"), "The 'scaling' parameter of LFSSelector"),
    (LFSSelector(gamma=float("inf")), "The 'gamma' parameter of LFSSelector must be a finite float"),
    (MomentFilterSelector(test="nope"), "The 'test' parameter of MomentFilterSelector"),
])
def test_bad_params_are_refused_naming_class_param_and_value(estimator, message):
    X, y = _data(11)
    with pytest.raises(ValueError, match=message):
        estimator.fit(X, y)


def test_a_filter_registered_in_core_is_served_by_the_generic_estimator(monkeypatch):
    from sparkfs.core.moment_filters import MOMENT_FILTERS, FilterScores, MomentFilter

    def mean_gap(counts, sums, squares):  # a smaller-is-better toy statistic: minus the class-mean spread
        means = sums / counts[:, None]
        return FilterScores(-(means.max(axis=0) - means.min(axis=0)), None)

    monkeypatch.setitem(MOMENT_FILTERS, "toy-gap", MomentFilter(mean_gap, "toy", has_p_values=False,
                                                                larger_is_better=False))
    X, y = _data(12)
    front = estimator_for("toy-gap", num_features=2).fit(X, y)
    means = np.vstack([X[y == c].mean(axis=0) for c in np.unique(y)])
    np.testing.assert_allclose(front.scores_, means.max(axis=0) - means.min(axis=0), rtol=1e-10)
    assert isinstance(front, MomentFilterSelector) and not hasattr(front, "pvalues_")


@pytest.mark.parametrize("method", sorted(NOT_YET))
def test_a_method_without_a_front_raises_not_implemented_naming_it(method):
    with pytest.raises(NotImplementedError, match=f"method '{method}' has no scikit-learn front yet"):
        estimator_for(method)


def _relief_reference(X, y, variant, k):
    """The Relief margins written out: range-scaled features, squared Euclidean distances of every
    pair, per query the k nearest (ties to the lower row) hits and misses, averaged per term:
    relief |x - M| - |x - H| (misses among all other classes), mrelief P(y)|x - M| - (1 - P(y))|x - H|
    (eq. 16), relieff sum_c P(c) / (1 - P(y)) |x - M_c| - |x - H| (k misses per other class)."""
    span = X.max(axis=0) - X.min(axis=0)
    Z = X / np.where(span > 0, span, 1.0)
    n = len(y)
    prior = np.bincount(y) / n
    distance = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2)

    def mean_difference(q, candidates):
        nearest = sorted(candidates, key=lambda r: (distance[q, r], r))[:k]
        return np.abs(Z[q] - Z[nearest]).mean(axis=0)

    margins = np.zeros_like(Z)
    for q in range(n):
        hit = mean_difference(q, [r for r in range(n) if y[r] == y[q] and r != q])
        if variant == "relieff":
            misses = sum(prior[c] / (1 - prior[y[q]]) * mean_difference(q, np.flatnonzero(y == c).tolist())
                         for c in np.unique(y) if c != y[q])
            margins[q] = misses - hit
            continue
        miss = mean_difference(q, np.flatnonzero(y != y[q]).tolist())
        margins[q] = miss - hit if variant == "relief" else prior[y[q]] * miss - (1 - prior[y[q]]) * hit
    return margins.mean(axis=0)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("variant", ["relief", "relieff", "mrelief"])
def test_relief_margins_are_the_written_out_formulas(variant, k):
    from sparkfs.sklearn import ReliefFamilySelector

    X, y = _data(13, n=50, p=6)
    expected = _relief_reference(X, y, variant, k)
    for data in (X, sp.csr_matrix(X)):
        front = ReliefFamilySelector(variant, k=k, metric="euclidean", scaling="range").fit(data, y)
        np.testing.assert_allclose(front.scores_, expected, rtol=1e-9, atol=1e-13)
        positive = np.maximum(expected, 0.0)  # eq. (4); no positive margin: all weights 0
        norm = np.linalg.norm(positive)
        np.testing.assert_allclose(front.weights_, positive / norm if norm > 0 else positive, rtol=1e-9, atol=1e-13)


def test_parzen_relief_is_equation_14():
    from sparkfs.sklearn import PReliefSelector

    X, y = _data(14, n=40, p=6)
    span = X.max(axis=0) - X.min(axis=0)
    Z, sigma = X / span, 0.2
    kernel = np.exp(-((Z[:, None, :] - Z[None, :, :]) ** 2) / (2 * sigma**2))
    same = (y[:, None] == y[None, :]) & ~np.eye(len(y), dtype=bool)
    other = y[:, None] != y[None, :]
    margins = ((kernel * same[:, :, None]).sum(axis=1) / same.sum(axis=1)[:, None]
               - (kernel * other[:, :, None]).sum(axis=1) / other.sum(axis=1)[:, None])
    front = PReliefSelector(sigma=sigma).fit(X, y)
    np.testing.assert_allclose(front.scores_, margins.mean(axis=0), rtol=1e-9, atol=1e-13)


def test_relief_refuses_a_class_of_one_row():
    from sparkfs.sklearn import ReliefFSelector

    X, y = _data(15)
    y[0] = 7
    with pytest.raises(InvalidInputError, match="class 7 has a single row"):
        ReliefFSelector().fit(X, y)


def _skrebate_variant(variant):
    skrebate = pytest.importorskip("skrebate")
    return {"multisurf": skrebate.MultiSURF, "multisurf-star": skrebate.MultiSURFstar, "surf": skrebate.SURF,
            "surf-star": skrebate.SURFstar}[variant]


def _continuous(seed, n=50, p=6, classes=3):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    X = rng.normal(size=(n, p))
    X[:, 0] += 1.5 * y
    X[:, 3] += (y == 1)
    return X, y


@pytest.mark.parametrize("variant", ["multisurf", "multisurf-star", "surf", "surf-star"])
def test_multisurf_family_equals_scikit_rebate(variant):
    from sparkfs.sklearn import MultiSURFFamilySelector

    X, y = _continuous(16)
    want = _skrebate_variant(variant)(n_features_to_select=2).fit(X, y).feature_importances_
    for data in (X, sp.csr_matrix(X)):
        got = MultiSURFFamilySelector(variant).fit(data, y).scores_
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fraction, keep", [(0.5, 3), (0.3, 2)])
def test_turf_equals_scikit_rebate(fraction, keep):
    from sparkfs.sklearn import TuRFSelector

    skrebate = pytest.importorskip("skrebate")
    X, y = _continuous(17, p=9, classes=2)
    want = skrebate.TURF(skrebate.MultiSURF(n_features_to_select=2), pct=fraction,
                         num_scores_to_return=keep).fit(X, y).feature_importances_
    got = TuRFSelector(remove_fraction=fraction, keep_features=keep).fit(X, y).scores_
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def _codes_reference(X, bins):
    """Note 1 of core.information written with NumPy's inverted-CDF quantiles: code 0 for an exact
    zero, else 1 + the number of cut points <= the value."""
    codes = np.zeros(X.shape, dtype=np.int64)
    for j in range(X.shape[1]):
        column = X[:, j]
        non_zero = column[column != 0]
        if non_zero.size:
            cuts = np.quantile(non_zero, np.arange(1, bins - 1) / (bins - 1), method="inverted_cdf")
            codes[:, j] = np.where(column != 0, 1 + (column[:, None] >= cuts[None, :]).sum(axis=1), 0)
    return codes


def _greedy_reference(codes, y, criterion, k):
    """mRMR (MID), JMI and CMIM greedily, every information from scikit-learn's mutual_info_score."""
    from sklearn.metrics import mutual_info_score

    p = codes.shape[1]
    relevance = np.array([mutual_info_score(codes[:, j], y) for j in range(p)])
    joint = {(j, s): mutual_info_score(codes[:, j] * 1000 + codes[:, s], y) for j in range(p) for s in range(p)}
    order = [int(np.argmax(relevance))]
    while len(order) < k:
        best, best_value = None, -np.inf
        for j in (j for j in range(p) if j not in order):
            if criterion == "mrmr":
                value = relevance[j] - np.mean([mutual_info_score(codes[:, j], codes[:, s]) for s in order])
            elif criterion == "jmi":
                value = sum(joint[j, s] for s in order)
            else:
                value = min(joint[j, s] - relevance[s] for s in order)
            if value > best_value:
                best, best_value = j, value
        order.append(best)
    return order, relevance


@pytest.mark.parametrize("criterion", ["mrmr", "jmi", "cmim"])
def test_information_selection_is_the_greedy_over_scikit_learns_mutual_information(criterion):
    from sparkfs.sklearn import InformationFamilySelector

    X, y = _data(18, n=80, p=7)
    X[:, 6] = X[:, 2] * 2.0  # redundant with feature 2
    order, relevance = _greedy_reference(_codes_reference(X, 5), y, criterion, 4)
    for data in (X, sp.csr_matrix(X)):
        front = InformationFamilySelector(criterion, bins=5, num_features=4).fit(data, y)
        assert front.selection_order_ == order
        np.testing.assert_allclose(front.relevance_, relevance, rtol=1e-9, atol=1e-15)
        assert np.flatnonzero(front.get_support()).tolist() == sorted(order)
        assert np.flatnonzero(front.set_params(num_features=2).get_support()).tolist() == sorted(order[:2])
    with pytest.raises(ValueError, match="fit it again"):
        front.set_params(num_features=6).get_support()


@pytest.mark.parametrize("step, k", [(1, 2), (2, 3)])
def test_svm_rfe_ranks_as_scikit_learns_rfe_on_standardised_rows(step, k):
    """Two classes, halve_above=0: the paper's elimination, scikit-learn's RFE around the same
    LinearSVC (hinge loss, C=1) on StandardScaler's rows. Whole-number steps only: a fractional
    step is a share of the remaining features here, of the first count in scikit-learn's RFE."""
    from sklearn.feature_selection import RFE
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC

    from sparkfs.sklearn import SVMRFESelector

    rng = np.random.default_rng(19)
    y = rng.integers(0, 2, 120)
    X = rng.normal(size=(120, 7)) + np.outer(y, [0, 1.5, 0, 0.4, 0, 0, 0.9])
    svm = LinearSVC(C=1.0, loss="hinge", dual=True, tol=1e-4, max_iter=10_000, random_state=0)
    want = RFE(svm, n_features_to_select=k, step=step).fit(StandardScaler().fit_transform(X), y)
    front = SVMRFESelector(step=step, num_features=k, halve_above=0).fit(X, y)
    assert np.array_equal(front.get_support(), want.support_)
    assert np.array_equal(front.ranking_, want.ranking_)
    with pytest.raises(ValueError, match="fit it again"):
        front.set_params(num_features=k + 1).get_support()


@pytest.mark.parametrize("variant", ["multisurf", "multisurf-star", "surf", "surf-star"])
def test_multisurf_family_on_a_continuous_endpoint_equals_scikit_rebate(variant):
    """``label_type="continuous"``: scikit-rebate's continuous endpoint on Friedman #1 (continuous
    features), dense and sparse."""
    from sklearn.datasets import make_friedman1

    from sparkfs.sklearn import MultiSURFFamilySelector

    X, y = make_friedman1(n_samples=70, n_features=7, random_state=2)
    want = _skrebate_variant(variant)(label_type="continuous").fit(X, y).feature_importances_
    for data in (X, sp.csr_matrix(X)):
        got = MultiSURFFamilySelector(variant, label_type="continuous").fit(data, y).scores_
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_turf_on_a_continuous_endpoint_equals_scikit_rebate():
    from sklearn.datasets import make_friedman1

    from sparkfs.sklearn import MultiSURFSelector, TuRFSelector

    skrebate = pytest.importorskip("skrebate")
    X, y = make_friedman1(n_samples=60, n_features=9, random_state=1)
    want = skrebate.TURF(skrebate.MultiSURF(label_type="continuous"), pct=0.5,
                         num_scores_to_return=3).fit(X, y).feature_importances_
    got = TuRFSelector(remove_fraction=0.5, keep_features=3, label_type="continuous").fit(X, y).scores_
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    selector = MultiSURFSelector(label_type="continuous", num_features=5).fit(X, y)
    assert selector.get_support(indices=True).size == 5


def test_a_continuous_endpoint_refuses_a_constant_target_and_a_bad_label_type():
    from sparkfs.errors import InvalidInputError
    from sparkfs.sklearn import MultiSURFSelector

    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(InvalidInputError, match="y is constant"):
        MultiSURFSelector(label_type="continuous").fit(X, np.full(20, 2.5))
    with pytest.raises(ValueError, match="'label_type' parameter of MultiSURFSelector must be a str among"):
        MultiSURFSelector(label_type="regression").fit(X, np.arange(20.0))
    with pytest.raises(ValueError, match="continuous"):  # classes by default: a continuous y is refused
        MultiSURFSelector().fit(X, np.linspace(0.0, 1.0, 20))
