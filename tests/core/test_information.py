"""mRMR, JMI and CMIM in core against references written from the papers' definitions (plain loops
over counts), scikit-learn's mutual_info_score, and NumPy's inverted-CDF quantiles."""

from collections import Counter
from math import log

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import mutual_info_score

from sparkfs.core import information as im


def reference_mi(x, y):
    """I(X; Y) = sum p(x, y) log(p(x, y) / (p(x) p(y))), from counts."""
    n = len(x)
    joint, px, py = Counter(zip(x, y)), Counter(x), Counter(y)
    return sum(c / n * log(c * n / (px[a] * py[b])) for (a, b), c in joint.items())


def reference_cmi(x, y, z):
    """I(X; Y | Z) = sum_z p(z) I(X; Y | Z = z)."""
    n, total = len(z), 0.0
    for value in set(z):
        rows = [i for i in range(n) if z[i] == value]
        total += len(rows) / n * reference_mi([x[i] for i in rows], [y[i] for i in rows])
    return total


def reference_greedy(codes, labels, k, criterion, form="difference"):
    """Forward selection from the definitions: mRMR (MID / MIQ), JMI = sum I(X_j, X_s; Y), CMIM = min I(X_j; Y | X_s);
    ties: larger relevance, then lower index."""
    p = codes.shape[1]
    columns = [list(codes[:, j]) for j in range(p)]
    y = list(labels)
    relevance = [reference_mi(columns[j], y) for j in range(p)]
    chosen = [max(range(p), key=lambda j: (relevance[j], -j))]
    while len(chosen) < k:
        scores = {}
        for j in range(p):
            if j in chosen:
                continue
            if criterion == "mrmr":
                redundancy = sum(reference_mi(columns[j], columns[s]) for s in chosen) / len(chosen)
                if form == "difference":
                    scores[j] = relevance[j] - redundancy
                else:
                    scores[j] = relevance[j] / redundancy if redundancy > 0 else float("inf")
            elif criterion == "jmi":
                scores[j] = sum(reference_mi(list(zip(columns[j], columns[s])), y) for s in chosen)
            else:
                scores[j] = min(reference_cmi(columns[j], y, columns[s]) for s in chosen)
        chosen.append(max(scores, key=lambda j: (round(scores[j], 12), relevance[j], -j)))
    return chosen, relevance


def discrete_case(seed=0, n=240, p=7, bins=4):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    codes = rng.integers(0, bins, size=(n, p))
    codes[:, 1] = (labels + rng.integers(0, 2, n)) % bins  # relevant
    codes[:, 4] = codes[:, 1]  # a copy of it: redundant
    codes[:, 5] = (labels * 2 + (rng.random(n) < 0.2)) % bins  # relevant otherwise
    return codes, labels


def core_terms(codes, labels, bins):
    """Counts as the passes make them (only non-zero codes), then the core's information."""
    n, p = codes.shape
    C = labels.max() + 1
    class_totals = np.bincount(labels, minlength=C)
    counts = np.zeros((p, bins - 1, C), dtype=np.int64)
    for j in range(p):
        for b in range(1, bins):
            counts[j, b - 1] = np.bincount(labels[codes[:, j] == b], minlength=C)
    relevance = im.mutual_information(im.relevance_table(counts, class_totals))

    def step_terms(s):
        joint = np.zeros((p, bins - 1, bins, C), dtype=np.int64)
        for j in range(p):
            for row in range(n):
                if codes[row, j] > 0:
                    joint[j, codes[row, j] - 1, codes[row, s], labels[row]] += 1
        table_s = np.zeros((bins, C), dtype=np.int64)
        np.add.at(table_s, (codes[:, s], labels), 1)
        return im.step_information(joint, table_s)

    return relevance, step_terms


def test_mutual_information_equals_the_definition_and_scikit_learn():
    codes, labels = discrete_case()
    for j in range(codes.shape[1]):
        table = np.zeros((4, 3))
        np.add.at(table, (codes[:, j], labels), 1)
        assert im.mutual_information(table) == pytest.approx(reference_mi(list(codes[:, j]), list(labels)), abs=1e-12)
        assert im.mutual_information(table) == pytest.approx(mutual_info_score(codes[:, j], labels), abs=1e-12)


def test_step_information_is_redundancy_and_conditional_information():
    codes, labels = discrete_case(1)
    _, step_terms = core_terms(codes, labels, 4)
    for s in (1, 3):
        redundancy, conditional = step_terms(s)
        for j in range(codes.shape[1]):
            assert redundancy[j] == pytest.approx(reference_mi(list(codes[:, j]), list(codes[:, s])), abs=1e-12)
            assert conditional[j] == pytest.approx(reference_cmi(list(codes[:, j]), list(labels), list(codes[:, s])),
                                                   abs=1e-12)


@pytest.mark.parametrize("criterion, form", [("mrmr", "difference"), ("mrmr", "quotient"), ("jmi", "difference"),
                                             ("cmim", "difference")])
def test_greedy_selection_equals_the_reference(criterion, form):
    codes, labels = discrete_case(2)
    relevance, step_terms = core_terms(codes, labels, 4)
    result = im.greedy_selection(relevance, step_terms, 5, criterion, form)
    expected, expected_relevance = reference_greedy(codes, labels, 5, criterion, form)
    np.testing.assert_allclose(relevance, expected_relevance, atol=1e-12)
    assert result.order == expected
    if criterion == "mrmr":
        assert 4 not in result.order[:2]  # the copy of feature 1 is redundant with it
    assert im.order_scores(result.order, 7)[result.order].tolist() == [5, 4, 3, 2, 1]


def test_equal_frequency_cuts_are_inverted_cdf_quantiles_of_the_non_zero_values():
    rng = np.random.default_rng(3)
    dense = rng.exponential(size=(101, 5)) * (rng.random((101, 5)) < 0.6)
    dense[:, 4] = 0.0  # no non-zero value: every cut is +inf
    for matrix in (dense, sp.csr_matrix(dense)):
        cuts = im.equal_frequency_cuts(matrix, 6)
        for j in range(4):
            values = dense[:, j][dense[:, j] != 0]
            expected = np.quantile(values, np.arange(1, 5) / 5, method="inverted_cdf")
            np.testing.assert_array_equal(cuts[j], expected)
        assert np.all(np.isinf(cuts[4]))
    rows, columns, values = im.non_zero_entries(dense)
    codes = im.bin_codes(values, columns, cuts)
    expected_codes = [1 + np.searchsorted(cuts[c], v, side="right") for c, v in zip(columns, values)]
    np.testing.assert_array_equal(codes, expected_codes)
    assert codes.min() >= 1 and codes.max() <= 5


def test_given_codes_refuse_what_is_not_a_code():
    assert im.given_codes(np.array([1.0, 3.0]), np.array([0, 2]), 4).tolist() == [1, 3]
    with pytest.raises(ValueError, match="feature 2 has the value 4.0"):
        im.given_codes(np.array([1.0, 4.0]), np.array([0, 2]), 4)
    with pytest.raises(ValueError, match="feature 0 has the value 0.5"):
        im.given_codes(np.array([0.5]), np.array([0]), 4)


def test_criteria_equal_to_rounding_are_a_tie_decided_by_relevance_and_counted():
    relevance = np.array([1.0, 0.6, 0.5])
    # mRMR after feature 0: 0.6 - 0.2 = 0.4 against 0.5 - (0.1 - 1e-14), larger by rounding only
    result = im.greedy_selection(relevance, lambda s: (np.array([0.0, 0.2, 0.1 - 1e-14]), np.zeros(3)), 2, "mrmr")
    assert result.order == [0, 1] and result.tie_sizes == [1, 2] and result.tied_steps == 1


def test_the_pruned_mrmr_run_is_exact_only_when_every_step_beats_the_largest_relevance_left_out():
    from sparkfs.core.information import PRUNED_MIN, exact_among, mrmr_candidate_count

    assert mrmr_candidate_count(50_000, 1_000) == 4_000 and mrmr_candidate_count(50_000, 10) == PRUNED_MIN
    assert mrmr_candidate_count(300, 1_000) == 300
    # the first step's criterion is the relevance itself (no redundancy yet): not compared
    assert exact_among([9.0, 0.5, 0.31], outside_relevance=0.3)
    assert not exact_among([9.0, 0.5, 0.29], outside_relevance=0.3)
    assert not exact_among([9.0, 0.5, 0.3 * (1 + 1e-12)], outside_relevance=0.3)  # a tie to rounding
    assert exact_among([9.0], outside_relevance=5.0)
