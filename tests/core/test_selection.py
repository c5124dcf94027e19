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
