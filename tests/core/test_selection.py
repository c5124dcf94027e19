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
    assert "4 features tie at the cut" in ties_warning(ties, 3)
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
