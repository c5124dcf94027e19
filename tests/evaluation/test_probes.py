"""The probe protocol helpers (sparkfs.evaluation.probes) against exact values and references."""

import itertools

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import KNeighborsClassifier
from sklearn.preprocessing import MinMaxScaler

from sparkfs.evaluation.probes import accuracy_curve, add_probes, imbalance, selection_roc, stratified_split


def mann_whitney_auc(scores, is_relevant):
    """P(real > probe) + 1/2 P(tie), by looking at every (real, probe) pair."""
    real, probes = scores[is_relevant], scores[~is_relevant]
    pairs = [(r > q) + 0.5 * (r == q) for r, q in itertools.product(real, probes)]
    return float(np.mean(pairs))


# --- selection_roc ----------------------------------------------------------------------------


def test_perfect_ranking_has_auc_one_and_the_ideal_curve():
    fpr, tpr, auc = selection_roc([5.0, 4.0, 3.0, 1.0, 0.5], np.array([True, True, True, False, False]))
    assert auc == 1.0
    assert tpr.tolist() == [0.0, 1 / 3, 2 / 3, 1.0, 1.0, 1.0]
    assert fpr.tolist() == [0.0, 0.0, 0.0, 0.0, 0.5, 1.0]


def test_inverted_ranking_has_auc_zero():
    assert selection_roc([0.0, 1.0, 2.0, 3.0], np.array([True, True, False, False]))[2] == 0.0


def test_all_tied_scores_give_one_half_and_a_diagonal():
    fpr, tpr, auc = selection_roc(np.ones(5), np.array([True, False, True, False, False]))
    assert auc == 0.5
    assert fpr.tolist() == [0.0, 1.0] and tpr.tolist() == [0.0, 1.0]


def test_one_tie_between_a_real_feature_and_a_probe_counts_half():
    # real {3, 2}, probes {2, 1}: pairs (3>2, 3>1, 2=2, 2>1) -> 3.5 / 4
    assert selection_roc([3.0, 2.0, 2.0, 1.0], np.array([True, True, False, False]))[2] == 0.875


@pytest.mark.parametrize("seed", range(5))
def test_auc_equals_the_pairwise_definition_and_sklearn(seed):
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 6, 40).astype(float)  # many ties
    is_relevant = rng.random(40) < 0.4
    fpr, tpr, auc = selection_roc(scores, is_relevant)
    assert auc == pytest.approx(mann_whitney_auc(scores, is_relevant), abs=1e-12)
    assert auc == pytest.approx(roc_auc_score(is_relevant, scores), abs=1e-12)
    assert fpr[0] == tpr[0] == 0.0 and fpr[-1] == tpr[-1] == 1.0
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)


def test_roc_rejects_nan_and_a_missing_kind():
    with pytest.raises(ValueError, match="finite"):
        selection_roc([1.0, np.nan], np.array([True, False]))
    with pytest.raises(ValueError, match="both"):
        selection_roc([1.0, 2.0], np.array([True, True]))
    with pytest.raises(ValueError, match="boolean"):
        selection_roc([1.0, 2.0], np.array([1, 0]))


# --- add_probes -------------------------------------------------------------------------------


def test_probes_are_appended_with_the_paper_variance():
    X = np.arange(20000 * 3, dtype=float).reshape(20000, 3)
    Xp = add_probes(X, n_probes=50, variance=20.0, seed=3)
    assert Xp.shape == (20000, 53)
    np.testing.assert_array_equal(Xp[:, :3], X)
    probes = Xp[:, 3:]
    # variance 20 (std sqrt(20)); the sample variance of 10^6 draws is within ~0.3% (sd ~0.14%)
    assert probes.var() == pytest.approx(20.0, rel=0.01)
    assert abs(probes.mean()) < 0.02
    assert np.abs(np.corrcoef(probes[:, :5], rowvar=False) - np.eye(5)).max() < 0.05


def test_probes_depend_only_on_the_seed():
    X = np.zeros((10, 2))
    np.testing.assert_array_equal(add_probes(X, 4, seed=1), add_probes(X, 4, seed=1))
    assert not np.array_equal(add_probes(X, 4, seed=1), add_probes(X, 4, seed=2))
    assert add_probes(X, 0).shape == (10, 2)


# --- imbalance --------------------------------------------------------------------------------


def test_imbalance_hides_eighty_percent_of_the_minority():
    X = np.arange(140, dtype=float)[:, None]
    y = np.r_[np.zeros(100, int), np.ones(40, int)]
    X_kept, y_kept = imbalance(X, y, hide_fraction=0.8, seed=0)
    assert np.bincount(y_kept).tolist() == [100, 8]
    np.testing.assert_array_equal(X_kept[y_kept == 0, 0], np.arange(100))  # majority untouched
    assert np.all(np.diff(X_kept[:, 0]) > 0)  # original order kept
    assert not np.array_equal(imbalance(X, y, 0.8, seed=1)[0], X_kept)


def test_imbalance_picks_the_least_frequent_label_and_keeps_one_row():
    y = np.r_[np.full(5, 7), np.full(3, 2), np.full(9, 4)]
    _, y_kept = imbalance(np.zeros((17, 1)), y, hide_fraction=0.99, seed=0)
    assert sorted(np.unique(y_kept, return_counts=True)[1].tolist()) == [1, 5, 9]
    assert (y_kept == 2).sum() == 1


# --- stratified_split -------------------------------------------------------------------------


def test_stratified_split_sizes_and_shares():
    y = np.r_[np.zeros(444, int), np.ones(239, int)]
    train, test = stratified_split(y, 400, 283, seed=0)
    assert train.size == 400 and test.size == 283 and np.intersect1d(train, test).size == 0
    assert abs(np.bincount(y[train])[1] - 400 * 239 / 683) <= 1


# --- accuracy_curve ---------------------------------------------------------------------------


def toy_split(seed=0, n=120):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 4))
    X[:, 2] = y * 10 + rng.random(n)  # feature 2 alone separates the classes perfectly
    return X[: n // 2], y[: n // 2], X[n // 2:], y[n // 2:]


def test_the_separating_feature_alone_gives_perfect_accuracy():
    X_train, y_train, X_test, y_test = toy_split()
    accuracies = accuracy_curve(X_train, y_train, X_test, y_test, [2, 0, 1, 3], [1, 4], n_neighbors=1)
    assert accuracies[0] == 1.0
    # a noise feature alone is near chance
    assert accuracy_curve(X_train, y_train, X_test, y_test, [0, 2], [1], n_neighbors=1)[0] < 0.8


@pytest.mark.parametrize("k", [1, 3, 7])
def test_fixed_k_equals_sklearn_on_min_max_scaled_features(k):
    rng = np.random.default_rng(k)
    X, y = rng.normal(size=(90, 6)), rng.integers(0, 3, 90)
    ranking = np.array([4, 1, 5, 0, 2, 3])
    ours = accuracy_curve(X[:60], y[:60], X[60:], y[60:], ranking, [1, 3, 6], n_neighbors=k)
    scaler = MinMaxScaler().fit(X[:60])
    for accuracy, m in zip(ours, [1, 3, 6]):
        columns = ranking[:m]
        knn = KNeighborsClassifier(n_neighbors=k).fit(scaler.transform(X[:60])[:, columns], y[:60])
        assert accuracy == knn.score(scaler.transform(X[60:])[:, columns], y[60:])


def test_tuned_k_is_deterministic_and_within_the_candidates_range():
    X_train, y_train, X_test, y_test = toy_split(1)
    tuned = accuracy_curve(X_train, y_train, X_test, y_test, [2, 0, 1, 3], [1, 2, 4], seed=5)
    again = accuracy_curve(X_train, y_train, X_test, y_test, [2, 0, 1, 3], [1, 2, 4], seed=5)
    np.testing.assert_array_equal(tuned, again)
    assert tuned[0] == 1.0


def test_accuracy_curve_rejects_bad_counts_and_rankings():
    X_train, y_train, X_test, y_test = toy_split()
    with pytest.raises(ValueError, match="feature_counts"):
        accuracy_curve(X_train, y_train, X_test, y_test, [2, 0], [3], n_neighbors=1)
    with pytest.raises(ValueError, match="ranking"):
        accuracy_curve(X_train, y_train, X_test, y_test, [2, 2], [1], n_neighbors=1)


def test_balanced_accuracy_equals_sklearn_and_differs_from_accuracy_on_imbalanced_data():
    from sklearn.metrics import balanced_accuracy_score

    rng = np.random.default_rng(4)
    y = (rng.random(200) < 0.15).astype(int)
    X = rng.normal(size=(200, 3)) + 0.8 * y[:, None]
    ours = accuracy_curve(X[:100], y[:100], X[100:], y[100:], [0, 1, 2], [2], n_neighbors=3, metric="balanced_accuracy")
    scaler = MinMaxScaler().fit(X[:100])
    knn = KNeighborsClassifier(n_neighbors=3).fit(scaler.transform(X[:100])[:, :2], y[:100])
    predicted = knn.predict(scaler.transform(X[100:])[:, :2])
    assert ours[0] == pytest.approx(balanced_accuracy_score(y[100:], predicted), abs=1e-12)
    plain = accuracy_curve(X[:100], y[:100], X[100:], y[100:], [0, 1, 2], [2], n_neighbors=3)
    assert plain[0] != ours[0]


def test_equal_distances_go_to_the_lower_training_row():
    # min-max scaling maps the training column to 1, 0.75, 0.25, 0 and the query to 0.5: rows 1
    # and 2 are both exactly 0.25 away (all values exact in binary); k = 1 must pick row 1
    X_train = np.array([[4.0], [2.0], [-2.0], [-4.0]])
    X_test, y_test = np.array([[0.0]]), np.array([1])
    assert accuracy_curve(X_train, np.array([0, 1, 0, 0]), X_test, y_test, [0], [1], n_neighbors=1)[0] == 1.0
    assert accuracy_curve(X_train, np.array([0, 0, 1, 0]), X_test, y_test, [0], [1], n_neighbors=1)[0] == 0.0
    # the same two rows in the other order: again the lower row (now the one at -2) is picked
    X_swapped = np.array([[4.0], [-2.0], [2.0], [-4.0]])
    assert accuracy_curve(X_swapped, np.array([0, 1, 0, 0]), X_test, y_test, [0], [1], n_neighbors=1)[0] == 1.0
