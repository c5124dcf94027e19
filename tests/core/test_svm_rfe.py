"""SVM-RFE, its bootstrap ensemble and IW-SVM-RFE (Han & Yu 2010, Section V).

The rankings are checked against scikit-learn's RFE with the same LinearSVC (an independent
implementation of the elimination loop), the weight path against LinearSVC's coefficients, the
ensemble against its members re-run one by one. A small version of the paper's synthetic study
closes the file.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.feature_selection import RFE
from sklearn.svm import LinearSVC

from sparkfs.core import stability as st
from sparkfs.core import svm_rfe as sr
from sparkfs.core.instance_weighting import margin_instance_weights


def sklearn_svm():
    # The LinearSVC that svm_rfe documents, written out independently.
    return LinearSVC(C=1.0, loss="hinge", dual="auto", tol=1e-4, max_iter=10_000, random_state=0)


def classification(n_classes=2, seed=0, n=60, d=15):
    X, y = make_classification(n_samples=n, n_features=d, n_informative=5, n_redundant=2, n_classes=n_classes,
                               n_clusters_per_class=1, random_state=seed)
    return X, y


def test_elimination_schedule_of_the_paper():
    remaining, schedule = 1000, [1000]
    while remaining > 1:
        remaining -= sr.elimination_count(remaining, 0.1, 1)
        schedule.append(remaining)
    assert schedule[28] == 48 and schedule[40] == 10       # "~50 at the 28th", "10 at the 40th"
    assert sr.elimination_count(30, 0.1, 1) == 3           # 0.1 * 30 = 3.0000000000000004
    assert sr.elimination_count(5, 0.1, 1) == 1
    assert sr.elimination_count(100, 0.5, 80) == 20
    assert sr.elimination_count(100, 7, 1) == 7


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("step", [1, 0.01])
def test_one_feature_per_iteration_matches_sklearn_rfe(n_classes, step):
    X, y = classification(n_classes)
    expected = RFE(sklearn_svm(), n_features_to_select=1, step=1).fit(X, y).ranking_
    result = sr.svm_rfe(X, y, step=step)
    assert np.array_equal(result.ranking, expected)
    assert sorted(result.ranking.tolist()) == list(range(1, 16))


def test_matches_sklearn_rfe_with_weights_sparse_rows_and_larger_steps():
    X, y = classification(3, seed=2)
    X[np.abs(X) < 0.7] = 0.0
    weights = np.random.default_rng(0).uniform(0.2, 3.0, size=len(y))
    expected = RFE(sklearn_svm(), n_features_to_select=4, step=3).fit(X, y, sample_weight=weights).ranking_
    for data in (X, sp.csr_matrix(X)):
        result = sr.svm_rfe(data, y, sample_weight=weights, step=3, n_features_to_select=4)
        assert np.array_equal(result.ranking, expected)
        assert result.support.sum() == 4 and np.all(result.ranking[result.support] == 1)
    # Weights do change the result (not silently dropped).
    assert not np.array_equal(sr.svm_rfe(X, y, step=1).ranking, sr.svm_rfe(X, y, sample_weight=weights, step=1).ranking)


def test_weight_path_is_the_normalised_svm_weights():
    X, y = classification(2, seed=4)
    result = sr.svm_rfe(X, y, step=0.2, n_features_to_select=3)
    # 15 -> 12 -> 9 -> 7 -> 5 -> 4 -> 3, and a final fit on the 3 kept features.
    assert result.n_remaining.tolist() == [15, 12, 9, 7, 5, 4, 3]
    assert result.weight_path.shape == (7, 15)
    assert np.allclose(result.weight_path.sum(axis=1), 1.0)
    coef = sklearn_svm().fit(X, y).coef_.ravel()
    assert np.allclose(result.weight_path[0], np.abs(coef) / np.abs(coef).sum(), rtol=1e-12, atol=0)
    kept = np.flatnonzero(result.support)
    last = sklearn_svm().fit(X[:, kept], y).coef_.ravel()
    assert np.allclose(result.weight_path[-1][kept], np.abs(last) / np.abs(last).sum(), rtol=1e-12, atol=0)
    assert np.all(result.weight_path[-1][~result.support] == 0)
    for row, count in zip(result.weight_path, result.n_remaining):
        assert np.count_nonzero(row) <= count
    # Eliminated features carry no weight afterwards: the non-zeros only shrink.
    nonzero = result.weight_path > 0
    assert np.all(nonzero[1:] <= nonzero[:-1])


def test_scores_are_the_round_broken_by_the_last_magnitude():
    X, y = classification(2, seed=5, d=40)
    result = sr.svm_rfe(X, y, step=0.25)
    rounds = result.ranking.max() + 1 - result.ranking
    # the round is the whole part; the fraction is |w| / max |w| of the fit the feature left in, halved
    assert np.array_equal(np.floor(result.scores), rounds)
    last_fit = result.weight_path.shape[0] - result.ranking
    path = result.weight_path
    expected = 0.5 * path[last_fit, np.arange(40)] / path[last_fit].max(axis=1)
    assert np.allclose(result.scores - rounds, expected, rtol=1e-12, atol=0.0)
    assert np.unique(result.scores).size == 40                 # a total order: no ties
    assert np.unique(result.ranking).size < 40                 # while the rounds alone tie
    # a later round always scores higher: the scores refine the ranking
    order = np.argsort(-result.scores, kind="stable")
    assert np.all(np.diff(result.ranking[order]) >= 0)


def test_halving_schedule_then_the_share():
    remaining, schedule = 5748, [5748]
    while remaining > 1:
        remaining -= sr.elimination_count(remaining, 0.1, 1, halve_above=1000)
        schedule.append(remaining)
    assert schedule[:4] == [5748, 2874, 1437, 1000] and schedule[4] == 900
    assert len(schedule) == sr.elimination_rounds(5748, 0.1, 1, halve_above=1000)
    assert sr.elimination_rounds(5748, 0.1, 1) > len(schedule) + 10
    assert sr.elimination_count(800, 0.1, 1, halve_above=1000) == 80


def test_convergence_is_counted_not_printed(recwarn):
    X, y = classification(2, seed=3, n=80, d=30)
    X = X * np.linspace(1.0, 1e4, 30) + 5e4                   # raw, badly scaled, far from 0
    result = sr.svm_rfe(X, y, step=0.2, max_iter=5)
    assert 0 < result.not_converged <= result.n_remaining.size
    assert not [w for w in recwarn if "converge" in str(w.message).lower()]
    ensemble = sr.ensemble_svm_rfe(X, y, ensemble=2, step=0.5, max_iter=5)
    assert ensemble.fits > 0 and 0 < ensemble.not_converged <= ensemble.fits


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")   # the reference's own fits
def test_standardised_rfe_equals_sklearn_rfe_after_standard_scaler():
    from sklearn.preprocessing import StandardScaler

    X, y = classification(3, seed=8, n=90, d=12)
    X = X * np.linspace(0.01, 100.0, 12) + 3.0
    X[:, 4] = 2.5                                                # a constant feature, left as it is
    ours = sr.svm_rfe(X, y, step=1, standardize=True)
    scaled = StandardScaler().fit_transform(X)
    scaled[:, 4] = 2.5                                           # StandardScaler would make it 0
    reference = RFE(sklearn_svm(), n_features_to_select=1, step=1).fit(scaled, y)
    assert np.array_equal(ours.ranking, reference.ranking_)


def test_standardisation_depends_on_the_values_not_the_storage():
    rng = np.random.default_rng(4)
    dense = rng.normal(size=(50, 20)) * rng.uniform(0.1, 10.0, 20) + 7.0
    sparse_values = np.where(rng.random((50, 20)) < 0.8, 0.0, dense)
    y = (dense[:, 0] + dense[:, 3] > 14).astype(int)
    for X, centred in ((dense, True), (sparse_values, False)):
        offset, scale = sr.standardisation(X)
        assert np.any(offset) == centred
        offset_csr, scale_csr = sr.standardisation(sp.csr_matrix(X))
        assert np.allclose(offset, offset_csr) and np.allclose(scale, scale_csr)
        a = sr.svm_rfe(X, y, step=1, standardize=True)
        b = sr.svm_rfe(sp.csr_matrix(X), y, step=1, standardize=True)
        assert np.array_equal(a.ranking, b.ranking)
        assert sp.issparse(sr.standardised(sp.csr_matrix(X), offset, scale)) != centred


def test_feature_magnitudes():
    coef = np.array([[3.0, -4.0, 0.0], [4.0, 3.0, -1.0]])
    magnitude, key = sr.feature_magnitudes(coef, "l2")
    assert np.allclose(magnitude, [5.0, 5.0, 1.0]) and np.allclose(key, [25.0, 25.0, 1.0])
    magnitude, key = sr.feature_magnitudes(coef, "l1")
    assert np.allclose(magnitude, [7.0, 7.0, 1.0]) and np.allclose(key, magnitude)
    assert np.allclose(sr.feature_magnitudes([[-2.0, 1.0]], "l2")[0], [2.0, 1.0])


@pytest.mark.parametrize("kwargs", [dict(step=0), dict(step=1.5), dict(step=True), dict(n_features_to_select=0),
                                    dict(n_features_to_select=16), dict(multiclass="max")])
def test_invalid_parameters(kwargs):
    X, y = classification(2)
    with pytest.raises(ValueError):
        sr.svm_rfe(X, y, **kwargs)


def test_invalid_data():
    X, y = classification(2)
    with pytest.raises(ValueError, match="two classes"):
        sr.svm_rfe(X, np.zeros(len(y)))
    with pytest.raises(ValueError, match="sample_weight"):
        sr.svm_rfe(X, y, sample_weight=-np.ones(len(y)))


def test_ensemble_is_the_rank_sum_of_its_members():
    X, y = classification(2, seed=6, n=40, d=10)
    weights = np.random.default_rng(1).uniform(0.5, 2.0, size=len(y))
    result = sr.ensemble_svm_rfe(X, y, ensemble=4, seed=7, sample_weight=weights, step=0.2)
    assert result.member_rankings.shape == (4, 10) and result.member_rows.shape == (4, 40)
    for rows, ranking in zip(result.member_rows, result.member_rankings):
        assert np.array_equal(np.bincount(y[rows]), np.bincount(y))      # stratified: class sizes kept
        member = sr.svm_rfe(X[rows], y[rows], sample_weight=weights[rows], step=0.2)
        assert np.array_equal(member.ranking, ranking)
    assert np.array_equal(result.rank_sums, result.member_rankings.sum(axis=0))
    order = np.argsort(-result.scores, kind="stable")
    assert np.array_equal(result.ranking[order], np.arange(1, 11))
    assert np.all(np.diff(result.rank_sums[order]) >= 0)                  # the scores refine the rank sums
    again = sr.ensemble_svm_rfe(X, y, ensemble=4, seed=7, sample_weight=weights, step=0.2)
    assert np.array_equal(again.member_rows, result.member_rows) and np.array_equal(again.ranking, result.ranking)
    other = sr.ensemble_svm_rfe(X, y, ensemble=4, seed=8, sample_weight=weights, step=0.2)
    assert not np.array_equal(other.member_rows, result.member_rows)


def test_instance_weighted_svm_rfe_passes_the_margin_weights():
    X, y = classification(2, seed=8, n=30, d=8)
    weights = margin_instance_weights(X, y).weights
    expected = sr.svm_rfe(X, y, sample_weight=weights, step=1)
    result = sr.instance_weighted_svm_rfe(X, y, step=1)
    assert np.array_equal(result.ranking, expected.ranking)
    assert np.allclose(result.weight_path, expected.weight_path)
    with pytest.raises(ValueError):
        sr.instance_weighted_svm_rfe(X, y, sample_weight=weights)


# The paper's qualitative claim, on a small version of its synthetic study ---------------------

# Measured with the defaults (LinearSVC C=1, hinge loss, unscaled data), 50 training sets of 100
# rows, seeds 0..49, at 48 remaining features (the paper's 28th iteration): the average variance
# of the normalised weights is 1.863e-5 and the Kuncheva stability of the 48 kept features 0.1101
# for both SVM-RFE and IW-SVM-RFE, and the weight vectors are equal to the last bit. The training sets are linearly
# separable and no dual variable of the SVM reaches its bound C w_i, so the solution is the hard-margin
# one, which sample weights do not change. (The margin weights themselves stay within about [0.89, 1.07].)
QUALITATIVE_NUMBERS = ("average variance 1.863e-5 and Kuncheva 0.1101 for both SVM-RFE and IW-SVM-RFE at 48 "
                       "features (50 sets)")


@pytest.mark.xfail(strict=True, reason="paper's claim not reproduced at this scale: " + QUALITATIVE_NUMBERS)
def test_instance_weighting_reduces_the_weight_variance_near_50_features():
    plain, weighted, plain_subsets, weighted_subsets = [], [], [], []
    for seed in range(50):
        X, y = st.correlated_groups_data(100, seed)
        for runs, subsets, result in (
            (plain, plain_subsets, sr.svm_rfe(X, y, n_features_to_select=48)),
            (weighted, weighted_subsets, sr.instance_weighted_svm_rfe(X, y, n_features_to_select=48)),
        ):
            runs.append(result.weight_path[-1])
            subsets.append(np.flatnonzero(result.support))
    plain_variance = st.weight_variance(np.array(plain)).mean()
    weighted_variance = st.weight_variance(np.array(weighted)).mean()
    plain_stability = st.kuncheva_stability(plain_subsets, 1000)
    weighted_stability = st.kuncheva_stability(weighted_subsets, 1000)
    print(f"at 48 features: average variance SVM-RFE {plain_variance:.5g}, IW-SVM-RFE {weighted_variance:.5g}; "
          f"Kuncheva SVM-RFE {plain_stability:.5g}, IW-SVM-RFE {weighted_stability:.5g}")
    assert weighted_variance < plain_variance
    assert weighted_stability > plain_stability
