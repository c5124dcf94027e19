"""The shared selection rule: stable ties, NaN last, top-k, threshold, k larger than p."""

import numpy as np
import pytest

from sparkfs.core.selection import rank_features, select_features


def test_rank_is_descending_with_ties_by_index():
    assert rank_features([1.0, 3.0, 3.0, 2.0, 3.0]).tolist() == [1, 2, 4, 3, 0]


def test_nan_ranks_last():
    assert rank_features([np.nan, 1.0, 2.0]).tolist() == [2, 1, 0]


def test_top_k_returns_sorted_indices():
    assert select_features([0.1, 5.0, 0.3, 4.0], num_features=2).tolist() == [1, 3]


def test_threshold_is_strict():
    assert select_features([0.1, 0.5, 0.3, 0.6], threshold=0.5).tolist() == [3]


def test_empty_selection_by_threshold():
    assert select_features([0.1, 0.2], threshold=10).tolist() == []


def test_k_larger_than_p_warns_and_selects_all():
    with pytest.warns(UserWarning, match="larger than the number of features"):
        assert select_features([0.1, 0.2, 0.3], num_features=10).tolist() == [0, 1, 2]


def test_rule_required():
    with pytest.raises(ValueError):
        select_features([1.0])


def test_ties_at_cut_counts_features_equal_to_the_last_selected_score():
    from sparkfs.core.selection import ties_at_cut, ties_warning

    scores = np.array([5.0, 2.0, 2.0, 2.0 * (1 + 1e-12), 1.0, 2.0])
    selected = select_features(scores, num_features=3)   # 0 and two of the 2.0 group, by index
    ties = ties_at_cut(scores, selected, by_count=True)
    assert ties["tied_at_cut"] == 4 and ties["selected_of_tied"] == 2 and ties["cut_score"] == 2.0
    assert not ties["flat"] and ties["score_spread"] == 4.0
    assert "4 features tie at the cut" in ties_warning(ties, 3) and "2 of them were selected" in ties_warning(ties, 3)
    one = ties_at_cut(scores, select_features(scores, num_features=2), by_count=True)
    assert "1 of them was selected" in ties_warning(one, 2)
    # a cut between distinct scores, a threshold rule and a selection of every feature: no tie
    assert ties_at_cut(scores, select_features(scores, num_features=1), by_count=True)["tied_at_cut"] == 0
    assert ties_at_cut(scores, np.array([0]), by_count=False)["tied_at_cut"] == 0
    assert ties_at_cut(scores, np.arange(6), by_count=True)["tied_at_cut"] == 0
    assert ties_warning(ties_at_cut(scores, np.array([0]), by_count=True), 1) is None


def test_a_flat_ranking_is_flagged_whatever_the_rule():
    from sparkfs.core.selection import ties_at_cut, ties_warning

    flat = np.full(9, 0.111111)
    ties = ties_at_cut(flat, np.array([0, 1]), by_count=False)
    assert ties["flat"] and ties["score_spread"] == 0.0
    assert "the ranking is the order of the features in the input" in ties_warning(ties, 2)
    assert ties_at_cut(np.zeros(4), np.array([0]), by_count=True)["flat"]
    assert not ties_at_cut(np.array([0.0, 1e-3]), np.array([1]), by_count=True)["flat"]


# Spark ML's selection modes (percentile, fpr, fdr, fwe), against plain loops written from their
# definitions and against scikit-learn's SelectPercentile / SelectFpr / SelectFdr / SelectFwe.

def reference_fdr(p_values, alpha):
    """Benjamini-Hochberg as its definition reads: sort, find the largest i (1-based) with
    p_(i) <= alpha i / m, keep the features of the i smallest p-values."""
    m = len(p_values)
    order = sorted(range(m), key=lambda j: (p_values[j], j))
    largest = 0
    for i in range(1, m + 1):
        if p_values[order[i - 1]] <= alpha * i / m:
            largest = i
    return sorted(order[:largest])


def reference_percentile(scores, fraction):
    """The best floor(m x fraction) by score, the lower index first among equal scores."""
    count = int(np.floor(len(scores) * fraction + 1e-9))
    return sorted(sorted(range(len(scores)), key=lambda j: (-scores[j], j))[:count])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.3])
def test_p_value_modes_equal_their_definitions_and_scikit_learn(seed, alpha):
    from sklearn.feature_selection import SelectFdr, SelectFpr, SelectFwe

    from sparkfs.core.selection import select_by_p_values

    rng = np.random.default_rng(seed)
    p_values = np.concatenate([rng.uniform(0, 0.01, 15), rng.uniform(0, 1, 85)])
    p_values[[3, 40]] = p_values[7]  # equal p-values are kept or dropped together
    for mode, selector in (("fpr", SelectFpr), ("fdr", SelectFdr), ("fwe", SelectFwe)):
        got = select_by_p_values(p_values, mode, alpha)
        fitted = selector(alpha=alpha)
        fitted.scores_, fitted.pvalues_ = -p_values, p_values  # the mask reads only the fitted p-values
        np.testing.assert_array_equal(got, np.flatnonzero(fitted._get_support_mask()), err_msg=mode)
    assert select_by_p_values(p_values, "fdr", alpha).tolist() == reference_fdr(p_values.tolist(), alpha)
    assert select_by_p_values(p_values, "fpr", alpha).tolist() == [j for j, p in enumerate(p_values) if p < alpha]
    assert select_by_p_values(p_values, "fwe", alpha).tolist() == [j for j, p in enumerate(p_values) if p < alpha / 100]


def test_fdr_keeps_a_p_value_above_its_own_bar_when_a_larger_one_passes():
    """Benjamini-Hochberg is a step-up rule: p_(1) = 0.02 > 0.05 x 1/4, but p_(2) = 0.024 <=
    0.05 x 2/4, so both are kept (a step-down reading would keep none)."""
    from sparkfs.core.selection import benjamini_hochberg

    assert benjamini_hochberg([0.9, 0.024, 0.02, 0.5], 0.05).tolist() == [1, 2]
    assert benjamini_hochberg([0.9, 0.03, 0.02, 0.5], 0.05).size == 0
    assert benjamini_hochberg([np.nan, 0.001], 0.05).tolist() == [1]  # NaN counts in m, never kept


@pytest.mark.parametrize("fraction", [0.1, 0.25, 0.29, 0.5, 1.0])
def test_percentile_keeps_the_floor_share_by_score(fraction):
    from sklearn.feature_selection import SelectPercentile

    from sparkfs.core.selection import percentile_count, select_percentile

    rng = np.random.default_rng(5)
    scores = rng.normal(size=100)
    scores[[10, 20, 30]] = scores[np.argsort(-scores)[8]]  # a tie around the cut of the 0.1 share
    got = select_percentile(scores, fraction)
    assert got.tolist() == reference_percentile(scores.tolist(), fraction)
    assert percentile_count(100, fraction) == got.size == round(100 * fraction)  # 0.29 x 100 counts as 29
    fitted = SelectPercentile(percentile=100 * fraction)
    fitted.scores_ = scores
    assert fitted._get_support_mask().sum() == got.size  # the same count as scikit-learn where 100 x fraction is whole
    distinct = rng.permutation(100).astype(float)
    fitted.scores_ = distinct
    np.testing.assert_array_equal(select_percentile(distinct, fraction), np.flatnonzero(fitted._get_support_mask()))
    assert percentile_count(7, 0.1) == 0 and percentile_count(7, 0.15) == 1  # Spark ML's (p * fraction).toInt
