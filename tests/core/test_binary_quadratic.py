"""Binary quadratic maximisation by min-cut: the cut vs brute force and an LP, the certificate, negative
pairs (relaxation + local search), and the beta search for a number of features."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from sparkfs.core.binary_quadratic import binary_quadratic_objective, maximise_binary_quadratic
from sparkfs.core.count_selection import select_by_count

# ------------------------------------------------------------------------------------------
# References (no code shared with sparkfs)
# ------------------------------------------------------------------------------------------


def all_subsets(p):
    return np.array(list(itertools.product([0.0, 1.0], repeat=p)))


def reference_objective(A, unary, pairwise, beta):
    return A @ (unary - beta) + 0.5 * np.einsum("mj,jl,ml->m", A, pairwise, A)


def brute_force_max(unary, pairwise, beta):
    A = all_subsets(len(unary))
    values = reference_objective(A, unary, pairwise, beta)
    return values.max(), A[np.argmax(values)]


# ------------------------------------------------------------------------------------------
# Objective
# ------------------------------------------------------------------------------------------


def test_objective_vectorised_matches_single():
    rng = np.random.default_rng(8)
    unary, pairwise = rng.standard_normal(5), rng.standard_normal((5, 5))
    pairwise = pairwise + pairwise.T
    A = all_subsets(5)
    batch = binary_quadratic_objective(A, unary, pairwise, 0.2)
    assert np.allclose(batch, [binary_quadratic_objective(a, unary, pairwise, 0.2) for a in A])
    assert np.allclose(batch, reference_objective(A, unary, pairwise, 0.2))


# ------------------------------------------------------------------------------------------
# Solver: exact case
# ------------------------------------------------------------------------------------------


def random_supermodular_problem(seed):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(1, 15))
    scale = rng.choice([1e-3, 1.0, 1e3])
    pairwise = rng.exponential(1.0, (p, p)) * scale / p
    pairwise[rng.random((p, p)) < rng.choice([0.0, 0.5, 0.9])] = 0.0
    pairwise = np.triu(pairwise, 1) + np.triu(pairwise, 1).T + np.diag(rng.standard_normal(p) * scale)
    unary = rng.standard_normal(p) * scale
    beta = float(rng.normal(0.0, scale))
    return unary, pairwise, beta


@pytest.mark.parametrize("seed", range(60))
def test_min_cut_attains_brute_force_maximum_when_pairs_nonnegative(seed):
    unary, pairwise, beta = random_supermodular_problem(seed)
    best, _ = brute_force_max(unary, pairwise, beta)
    solution = maximise_binary_quadratic(unary, pairwise, beta)
    scale = np.abs(unary).sum() + np.abs(pairwise).sum() + abs(beta) * len(unary)
    assert solution.solver == "min-cut" and solution.n_violating_pairs == 0
    assert solution.certified_optimal
    assert solution.objective >= best - 1e-9 * max(abs(best), 1e-6 * scale)
    assert solution.upper_bound >= best - 1e-12 * scale
    assert solution.objective == pytest.approx(reference_objective(solution.selected[None].astype(float), unary,
                                                                   pairwise, beta)[0])


def lp_supermodular_maximum_selection(unary, pairwise, beta):
    """Independent reference: the LP max c.a + sum t_jl y_jl, y_jl <= a_j, y_jl <= a_l, 0 <= a, y <= 1,
    which is integral for t >= 0 (a closure problem); returns its 0/1-rounded a."""
    p = len(unary)
    rows, cols = np.triu_indices(p, 1)
    keep = pairwise[rows, cols] > 0
    rows, cols = rows[keep], cols[keep]
    m = rows.size
    c = -np.concatenate([unary + 0.5 * np.diag(pairwise) - beta, pairwise[rows, cols]])
    constraint = sp.lil_matrix((2 * m, p + m))
    for e, (j, k) in enumerate(zip(rows, cols)):
        constraint[2 * e, p + e], constraint[2 * e, j] = 1.0, -1.0
        constraint[2 * e + 1, p + e], constraint[2 * e + 1, k] = 1.0, -1.0
    result = linprog(c, A_ub=constraint.tocsr(), b_ub=np.zeros(2 * m), bounds=(0, 1), method="highs")
    assert result.status == 0
    return result.x[:p] > 0.5


@pytest.mark.parametrize("seed", range(3))
def test_min_cut_is_at_least_the_lp_reference_on_wide_dynamic_range(seed):
    """40 features, pair weights over 9 orders of magnitude: several integer rounds are needed."""
    rng = np.random.default_rng(200 + seed)
    p = 40
    pairwise = np.exp(rng.uniform(np.log(1e-6), np.log(1e3), (p, p))) / p
    pairwise = np.triu(pairwise, 1) + np.triu(pairwise, 1).T
    unary = rng.standard_normal(p) * 3.0
    beta = float(np.median(unary + 0.5 * pairwise.sum(axis=1)))
    solution = maximise_binary_quadratic(unary, pairwise, beta)
    lp_selection = lp_supermodular_maximum_selection(unary, pairwise, beta)
    lp_value = binary_quadratic_objective(lp_selection, unary, pairwise, beta)
    assert solution.certified_optimal
    assert solution.optimality_gap <= 1e-9 * abs(solution.objective)
    assert solution.objective >= lp_value - 1e-9 * abs(lp_value)
    assert solution.upper_bound >= lp_value - 1e-12 * abs(lp_value)
    assert 0 < solution.num_selected < p


def test_certificate_refines_in_rounds_on_a_graph_with_many_cut_edges():
    rng = np.random.default_rng(12)
    p = 400
    pairwise = rng.exponential(1.0, (p, p)) / p
    pairwise = np.triu(pairwise, 1) + np.triu(pairwise, 1).T
    unary = rng.standard_normal(p)
    one_round = maximise_binary_quadratic(unary, pairwise, 0.0, max_flow_rounds=1)
    solution = maximise_binary_quadratic(unary, pairwise, 0.0)
    assert solution.certified_optimal and solution.flow_rounds >= 2
    assert solution.optimality_gap <= 1e-9 * abs(solution.objective)
    assert one_round.optimality_gap > solution.optimality_gap
    assert one_round.upper_bound >= solution.objective - 1e-9 * abs(solution.objective)


def test_solver_edge_cases():
    # No interactions: select j iff c_j + t_jj / 2 > beta.
    unary = np.array([0.5, -0.2, 1.0])
    pairwise = np.diag([0.2, 0.2, 0.0])
    assert maximise_binary_quadratic(unary, pairwise, 0.3).selected.tolist() == [True, False, True]
    assert not maximise_binary_quadratic(unary, pairwise, 10.0).selected.any()
    assert maximise_binary_quadratic(unary, pairwise, -10.0).selected.all()
    single = maximise_binary_quadratic(np.array([1.0]), np.zeros((1, 1)), 0.5)
    assert single.selected.tolist() == [True] and single.objective == pytest.approx(0.5)
    empty = maximise_binary_quadratic(np.zeros(0), np.zeros((0, 0)), 0.0)
    assert empty.selected.shape == (0,) and empty.certified_optimal


def test_solver_rejects_bad_input():
    with pytest.raises(ValueError, match="symmetric"):
        maximise_binary_quadratic(np.zeros(2), np.array([[0.0, 1.0], [0.0, 0.0]]), 0.0)
    with pytest.raises(ValueError, match="unary has shape"):
        maximise_binary_quadratic(np.zeros(3), np.zeros((2, 2)), 0.0)
    with pytest.raises(ValueError, match="finite"):
        maximise_binary_quadratic(np.array([np.nan, 0.0]), np.zeros((2, 2)), 0.0)
    with pytest.raises(ValueError, match="beta must be"):
        maximise_binary_quadratic(np.zeros(2), np.zeros((2, 2)), np.inf)


# ------------------------------------------------------------------------------------------
# Solver: negative pairs (NP-hard case)
# ------------------------------------------------------------------------------------------


def random_mixed_problem(seed):
    rng = np.random.default_rng(seed)
    p = int(rng.integers(2, 13))
    pairwise = rng.standard_normal((p, p))
    pairwise = (pairwise + pairwise.T) / 2
    return rng.standard_normal(p), pairwise, float(rng.standard_normal())


@pytest.mark.parametrize("seed", range(40))
def test_mixed_signs_bound_is_valid_and_answer_is_locally_optimal(seed):
    unary, pairwise, beta = random_mixed_problem(seed)
    best, _ = brute_force_max(unary, pairwise, beta)
    solution = maximise_binary_quadratic(unary, pairwise, beta)
    assert solution.n_violating_pairs == int((pairwise[np.triu_indices(len(unary), 1)] < 0).sum())
    assert solution.upper_bound >= best - 1e-12
    assert solution.objective <= best + 1e-12
    assert solution.objective >= -1e-12  # at least the empty selection, one of the search's seeds
    # No single flip improves the returned selection.
    a = solution.selected.astype(float)
    for j in range(len(a)):
        flipped = a.copy()
        flipped[j] = 1 - flipped[j]
        assert binary_quadratic_objective(flipped, unary, pairwise, beta) <= solution.objective + 1e-12
    if solution.certified_optimal:
        assert solution.objective == pytest.approx(best, abs=1e-9)


# Seeds of random_mixed_problem where the approximation is exactly optimal (all of 0..39 but 17, 20
# when measured): pinned so a regression of the heuristic shows.
@pytest.mark.parametrize("seed", [s for s in range(40) if s not in (17, 20)])
def test_mixed_signs_equal_brute_force_on_fixed_cases(seed):
    unary, pairwise, beta = random_mixed_problem(seed)
    best, _ = brute_force_max(unary, pairwise, beta)
    assert maximise_binary_quadratic(unary, pairwise, beta).objective == pytest.approx(best, abs=1e-9)


def test_rounding_size_negative_pairs_still_certify():
    rng = np.random.default_rng(13)
    p = 10
    pairwise = np.triu(rng.exponential(1.0, (p, p)) * (rng.random((p, p)) < 0.5), 1)
    pairwise[pairwise == 0] = -1e-18 * rng.random(int((pairwise == 0).sum()))  # rounding-size negatives
    pairwise = np.triu(pairwise, 1) + np.triu(pairwise, 1).T
    unary, beta = rng.standard_normal(p), 0.5
    solution = maximise_binary_quadratic(unary, pairwise, beta)
    assert solution.n_violating_pairs > 0 and solution.certified_optimal
    assert solution.objective == pytest.approx(brute_force_max(unary, pairwise, beta)[0], rel=1e-9)


# ------------------------------------------------------------------------------------------
# Choosing the number of features
# ------------------------------------------------------------------------------------------


def best_of_size(unary, pairwise, k):
    A = all_subsets(len(unary))
    A = A[A.sum(axis=1) == k]
    return reference_objective(A, unary, pairwise, 0.0).max()


@pytest.mark.parametrize("seed", range(12))
def test_select_by_count_gives_best_subset_of_each_reachable_size(seed):
    unary, pairwise, _ = random_supermodular_problem(1000 + seed)
    p = len(unary)
    for k in range(p + 1):
        result = select_by_count(unary, pairwise, k)
        assert result.size_below <= k <= result.size_above
        size = result.solution.num_selected
        assert size in (result.size_below, result.size_above)
        assert result.solution.certified_optimal
        if result.reachable:
            assert size == k
            base = binary_quadratic_objective(result.selected, unary, pairwise, 0.0)
            assert base == pytest.approx(best_of_size(unary, pairwise, k), rel=1e-9, abs=1e-12)
        else:
            # The rule: closest size, ties to the smaller, never empty when non-empty is reachable.
            below, above = result.size_below, result.size_above
            expected = below if (k - below <= above - k and below > 0) else above
            assert size == expected


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_select_by_count_reachable_exactly_on_the_concave_envelope(seed):
    """Size k is the optimum for some beta iff (k, best f0 of size k) lies on the upper concave
    envelope of those points (g(beta) = max_k [M_k - beta k]); strictly inside an interval of beta
    iff it is a vertex of it. So: reachable => on the envelope; a vertex => reachable."""
    unary, pairwise, _ = random_supermodular_problem(seed)
    p = len(unary)
    best = np.array([best_of_size(unary, pairwise, k) for k in range(p + 1)])
    tolerance = 1e-9 * (np.abs(best).max() + 1e-300)

    def chords_below(k):
        gaps = [best[k] - (best[i] + (best[j] - best[i]) * (k - i) / (j - i))
                for i in range(k) for j in range(k + 1, p + 1)]
        return min(gaps, default=np.inf)

    for k in range(p + 1):
        result = select_by_count(unary, pairwise, k)
        if result.reachable:
            assert chords_below(k) >= -tolerance
        if chords_below(k) > tolerance:
            assert result.reachable


def test_select_by_count_all_or_nothing_jump():
    # Strong positive pairs: the optimal set jumps from 0 to all features.
    p = 6
    pairwise = np.ones((p, p)) - np.eye(p)
    unary = np.zeros(p)
    result = select_by_count(unary, pairwise, 2)
    assert not result.reachable
    assert (result.size_below, result.size_above) == (0, p)
    assert result.solution.num_selected == p  # the empty selection is not chosen
    assert result.solution.certified_optimal


def test_select_by_count_nested_selections_as_beta_grows():
    unary, pairwise, _ = random_supermodular_problem(21)
    results = [select_by_count(unary, pairwise, k) for k in range(len(unary) + 1)]
    reachable = sorted((r for r in results if r.reachable), key=lambda r: r.beta)
    for lower, higher in zip(reachable, reachable[1:]):
        assert np.all(higher.selected <= lower.selected)


def test_select_by_count_with_negative_pairs_keeps_the_size():
    unary, pairwise, _ = random_mixed_problem(5)
    p = len(unary)
    for k in range(1, p):
        result = select_by_count(unary, pairwise, k)
        assert result.solution.upper_bound >= result.solution.objective
        if result.reachable:
            assert result.solution.num_selected == k
            assert (binary_quadratic_objective(result.selected, unary, pairwise, 0.0)
                    <= best_of_size(unary, pairwise, k) + 1e-12)


def test_select_by_count_rejects_bad_counts():
    with pytest.raises(ValueError, match=r"num_features must be an int in the range \[0, 3\]; got 4"):
        select_by_count(np.zeros(3), np.zeros((3, 3)), 4)
    with pytest.raises(ValueError, match="num_features must be an int"):
        select_by_count(np.zeros(3), np.zeros((3, 3)), 1.5)
