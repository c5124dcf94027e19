"""QFS (Fisher-Markov, quadratic kernel): eq. (29) vs a literal reference, the min-cut vs brute
force and an LP, Corollary IV.5, the beta search, and the paper's Synthetic-1 / Synthetic-2 checks."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from sparkfs.core.qfs import (
    block_gram_statistics,
    check_driver_budget,
    column_standard_deviations,
    gamma_max_exact,
    merge_gram_statistics,
    pairwise_markov_coefficients,
    qfs_driver_memory_bytes,
    qfs_objective,
    rescale_gram_statistics,
    select_by_count,
    solve_qfs,
    unary_markov_coefficients,
)

# ------------------------------------------------------------------------------------------
# Literal references (no code shared with sparkfs)
# ------------------------------------------------------------------------------------------


def literal_pairwise_eq29(X, y, gamma, weights=None):
    """Eq. (29) with its double sums over u, v written out (weighted: w_u w_v per pair, w_u per row)."""
    X = np.asarray(X, dtype=float)
    w = np.ones(len(X)) if weights is None else np.asarray(weights, dtype=float)
    n = w.sum()
    p = X.shape[1]
    theta = np.zeros((p, p))
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        n_i = w[rows].sum()
        class_term = np.zeros((p, p))
        for u in rows:
            for v in rows:
                class_term += w[u] * w[v] * np.outer(X[u] * X[v], X[u] * X[v])
        theta += class_term / n_i / n
    for u in range(len(X)):
        theta -= gamma / n * w[u] * np.outer(X[u] ** 2, X[u] ** 2)
    total_term = np.zeros((p, p))
    for u in range(len(X)):
        for v in range(len(X)):
            total_term += w[u] * w[v] * np.outer(X[u] * X[v], X[u] * X[v])
    theta += (gamma - 1) / n**2 * total_term
    return theta


def literal_unary_eq19(X, y, gamma):
    n, p = X.shape
    theta = np.zeros(p)
    for label in np.unique(y):
        Xi = X[y == label]
        theta += sum(Xi[u] * Xi[v] for u in range(len(Xi)) for v in range(len(Xi))) / len(Xi) / n
    theta -= gamma / n * (X**2).sum(axis=0)
    theta += (gamma - 1) / n**2 * sum(X[u] * X[v] for u in range(n) for v in range(n))
    return theta


def literal_fs_objective_eq16(X, y, alpha, gamma, beta, constant):
    """(FS), eq. (16), with K(alpha)_kl = 1/2 (constant + <x_k, x_l>_alpha)^2 (constant 1: k_2, 0: k'_2)."""
    n = len(X)
    Xa = X * alpha
    K = 0.5 * (constant + Xa @ X.T) ** 2
    value = 0.0
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        value += K[np.ix_(rows, rows)].sum() / len(rows)
    value = (value - gamma * np.trace(K) + (gamma - 1) / n * K.sum()) / n
    return value - beta * alpha.sum()


def all_subsets(p):
    return np.array(list(itertools.product([0.0, 1.0], repeat=p)))


def reference_objective(A, unary, pairwise, beta):
    return A @ (unary - beta) + 0.5 * np.einsum("mj,jl,ml->m", A, pairwise, A)


def brute_force_max(unary, pairwise, beta):
    A = all_subsets(len(unary))
    values = reference_objective(A, unary, pairwise, beta)
    return values.max(), A[np.argmax(values)]


def random_data(rng, n=36, p=5, num_classes=3):
    X = rng.standard_normal((n, p)) + rng.standard_normal(p)
    y = rng.integers(0, num_classes, n)
    y[:num_classes] = np.arange(num_classes)
    X[y == 1, 0] += 1.0
    return X, y


def coefficients(X, y, gamma, num_classes, kernel="qfs", weights=None):
    stats = block_gram_statistics(X, y, num_classes, weights=weights)
    pairwise = pairwise_markov_coefficients(stats.class_grams, stats.class_counts, stats.squared_gram, gamma)
    unary = unary_markov_coefficients(stats.class_sums, stats.class_counts, stats.class_grams, gamma, kernel)
    return unary, pairwise, stats


def relative_error(actual, expected):
    return np.abs(actual - expected).max() / np.abs(expected).max()


# ------------------------------------------------------------------------------------------
# Eq. (29), eq. (19), Proposition IV.4
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gamma", [-0.5, 0.0, 0.7])
def test_pairwise_coefficients_equal_literal_eq29_multiclass(gamma):
    X, y = random_data(np.random.default_rng(3))
    _, pairwise, _ = coefficients(X, y, gamma, 3)
    assert relative_error(pairwise, literal_pairwise_eq29(X, y, gamma)) < 1e-9


def test_pairwise_coefficients_equal_literal_eq29_weighted():
    rng = np.random.default_rng(4)
    X, y = random_data(rng, n=30)
    weights = rng.uniform(0.1, 3.0, len(y))
    _, pairwise, _ = coefficients(X, y, -0.5, 3, weights=weights)
    assert relative_error(pairwise, literal_pairwise_eq29(X, y, -0.5, weights)) < 1e-9


def test_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(5)
    X, y = random_data(rng, n=25)
    counts = rng.integers(0, 4, len(y))
    counts[:3] = 1
    weighted = coefficients(X, y, -0.5, 3, weights=counts.astype(float))
    repeated = coefficients(np.repeat(X, counts, axis=0), np.repeat(y, counts), -0.5, 3)
    assert relative_error(weighted[1], repeated[1]) < 1e-12
    assert relative_error(weighted[0], repeated[0]) < 1e-12


def test_unary_is_lfs_eq19_for_qfs_and_zero_for_qfs_prime():
    X, y = random_data(np.random.default_rng(6), n=20, num_classes=2)
    unary, _, stats = coefficients(X, y, -0.5, 2)
    assert relative_error(unary, literal_unary_eq19(X, y, -0.5)) < 1e-9
    prime = unary_markov_coefficients(stats.class_sums, stats.class_counts, stats.class_grams, -0.5, "qfs-prime")
    assert np.array_equal(prime, np.zeros(X.shape[1]))
    with pytest.raises(ValueError, match="kernel must be"):
        unary_markov_coefficients(stats.class_sums, stats.class_counts, stats.class_grams, -0.5, "cubic")


@pytest.mark.parametrize("kernel, constant", [("qfs", 1.0), ("qfs-prime", 0.0)])
def test_objective_equals_literal_fs_eq16_with_quadratic_kernel(kernel, constant):
    """Proposition IV.4: (FS) with (1/2) k_2 (or k'_2) is the QFS (QFS') objective, for every alpha."""
    X, y = random_data(np.random.default_rng(7), n=18, p=4, num_classes=3)
    gamma, beta = -0.5, 0.3
    unary, pairwise, _ = coefficients(X, y, gamma, 3, kernel)
    for alpha in all_subsets(4):
        expected = literal_fs_objective_eq16(X, y, alpha, gamma, beta, constant)
        assert qfs_objective(alpha, unary, pairwise, beta) == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_objective_vectorised_matches_single():
    rng = np.random.default_rng(8)
    unary, pairwise = rng.standard_normal(5), rng.standard_normal((5, 5))
    pairwise = pairwise + pairwise.T
    A = all_subsets(5)
    batch = qfs_objective(A, unary, pairwise, 0.2)
    assert np.allclose(batch, [qfs_objective(a, unary, pairwise, 0.2) for a in A])
    assert np.allclose(batch, reference_objective(A, unary, pairwise, 0.2))


# ------------------------------------------------------------------------------------------
# Block statistics
# ------------------------------------------------------------------------------------------


def test_block_statistics_dense_sparse_centred_and_merged_agree():
    rng = np.random.default_rng(9)
    X = rng.standard_normal((50, 6))
    X[rng.random(X.shape) < 0.6] = 0.0
    y = rng.integers(0, 3, 50).astype(float)
    weights = rng.uniform(0.5, 2.0, 50)
    center = X.mean(axis=0)
    dense = block_gram_statistics(X, y, 3, weights=weights)
    sparse = block_gram_statistics(sp.csr_matrix(X), y, 3, weights=weights)
    for a, b in zip(dense, sparse):
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12)
    centred_dense = block_gram_statistics(X - center, y, 3, weights=weights)
    centred_sparse = block_gram_statistics(sp.csr_matrix(X), y, 3, weights=weights, center=center, rows_per_chunk=7)
    for a, b in zip(centred_dense, centred_sparse):
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12)
    merged = merge_gram_statistics(
        block_gram_statistics(X[:20], y[:20], 3, weights=weights[:20]),
        block_gram_statistics(X[20:], y[20:], 3, weights=weights[20:]),
    )
    for a, b in zip(dense, merged):
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12)
    # Reference: the definitions.
    assert np.allclose(dense.class_counts, np.bincount(y.astype(int), weights=weights))
    assert np.allclose(dense.class_grams[1], (X[y == 1] * weights[y == 1, None]).T @ X[y == 1])
    assert np.allclose(dense.squared_gram, (X**2 * weights[:, None]).T @ X**2)


def test_rescaled_statistics_equal_statistics_of_scaled_data():
    rng = np.random.default_rng(10)
    X, y = random_data(rng, n=40)
    Xc = X - X.mean(axis=0)
    stats = block_gram_statistics(Xc, y, 3)
    deviations = column_standard_deviations(stats)
    assert np.allclose(deviations, Xc.std(axis=0))
    rescaled = rescale_gram_statistics(stats, deviations)
    direct = block_gram_statistics(Xc / Xc.std(axis=0), y, 3)
    for a, b in zip(rescaled, direct):
        assert np.allclose(a, b, rtol=1e-10, atol=1e-12)


def test_block_statistics_reject_bad_labels_and_weights():
    X = np.ones((4, 2))
    with pytest.raises(ValueError, match="class indices 0..1"):
        block_gram_statistics(X, np.array([0, 1, 2, 0]), 2)
    with pytest.raises(ValueError, match="class indices"):
        block_gram_statistics(X, np.array([0, 0.5, 1, 0]), 2)
    with pytest.raises(ValueError, match="non-negative"):
        block_gram_statistics(X, np.array([0, 1, 1, 0]), 2, weights=np.array([1, -1, 1, 1.0]))
    with pytest.raises(ValueError, match="rows but labels"):
        block_gram_statistics(X, np.array([0, 1]), 2)


# ------------------------------------------------------------------------------------------
# Corollary IV.5
# ------------------------------------------------------------------------------------------


def test_gamma_max_separates_exact_from_non_submodular():
    rng = np.random.default_rng(11)
    # Few rows and a strong class effect on products make gamma_max clearly positive.
    X = rng.standard_normal((12, 5))
    y = np.repeat([0, 1], 6)
    X[y == 1] *= 3.0
    stats = block_gram_statistics(X, y, 2)
    bound = gamma_max_exact(stats.class_grams, stats.class_counts, stats.squared_gram)
    assert 0.0 < bound.gamma_max < np.inf
    upper = np.triu_indices(5, 1)
    below = pairwise_markov_coefficients(stats.class_grams, stats.class_counts, stats.squared_gram, bound.gamma_max * (1 - 1e-6))
    above = pairwise_markov_coefficients(stats.class_grams, stats.class_counts, stats.squared_gram, bound.gamma_max * (1 + 1e-6))
    assert (below[upper] >= 0).all()
    assert (above[upper] < 0).any()
    j, l = bound.limiting_pair
    assert above[j, l] < 0
    for gamma in [bound.gamma_max * 1.5, bound.gamma_max + 1.0, -0.5]:
        theta = pairwise_markov_coefficients(stats.class_grams, stats.class_counts, stats.squared_gram, gamma)
        counted = gamma_max_exact(stats.class_grams, stats.class_counts, stats.squared_gram, gamma).n_violating_pairs
        assert counted == int((theta[upper] < 0).sum())


def test_gamma_max_is_never_negative_so_gamma_at_most_zero_is_exact():
    """Cauchy-Schwarz makes the numerator of eq. (32) >= 0: every gamma <= 0 gives theta_jl >= 0."""
    for seed in range(5):
        X, y = random_data(np.random.default_rng(seed), n=40, p=6)
        stats = block_gram_statistics(X, y, 3)
        assert gamma_max_exact(stats.class_grams, stats.class_counts, stats.squared_gram).gamma_max >= 0.0


def test_gamma_max_is_infinite_when_no_pair_constrains():
    # x_0 x_1 = 0 on every row: B_01 = 0, so 1/B = +inf (eq. 32).
    X = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 1.0]])
    stats = block_gram_statistics(X, np.array([0, 0, 1, 1]), 2)
    bound = gamma_max_exact(stats.class_grams, stats.class_counts, stats.squared_gram, gamma=5.0)
    assert bound.gamma_max == np.inf and bound.limiting_pair is None and bound.n_violating_pairs == 0


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
    solution = solve_qfs(unary, pairwise, beta)
    scale = np.abs(unary).sum() + np.abs(pairwise).sum() + abs(beta) * len(unary)
    assert solution.solver == "min-cut" and solution.n_violating_pairs == 0
    assert solution.certified_optimal
    assert solution.objective >= best - 1e-9 * max(abs(best), 1e-6 * scale)
    assert solution.upper_bound >= best - 1e-12 * scale
    assert solution.objective == pytest.approx(reference_objective(solution.selected[None].astype(float), unary, pairwise, beta)[0])


@pytest.mark.parametrize("seed", range(10))
def test_min_cut_attains_brute_force_on_data_derived_coefficients(seed):
    rng = np.random.default_rng(100 + seed)
    X, y = random_data(rng, n=40, p=int(rng.integers(3, 13)), num_classes=2)
    unary, pairwise, _ = coefficients(X - X.mean(axis=0), y, -0.5, 2)
    c0 = unary + 0.5 * np.diag(pairwise)
    for beta in np.quantile(c0 + 0.5 * (pairwise.sum(axis=1) - np.diag(pairwise)), [0.2, 0.5, 0.8]):
        best, _ = brute_force_max(unary, pairwise, beta)
        solution = solve_qfs(unary, pairwise, beta)
        assert solution.certified_optimal
        assert solution.objective == pytest.approx(best, rel=1e-9, abs=1e-12)


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
    for e, (j, l) in enumerate(zip(rows, cols)):
        constraint[2 * e, p + e], constraint[2 * e, j] = 1.0, -1.0
        constraint[2 * e + 1, p + e], constraint[2 * e + 1, l] = 1.0, -1.0
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
    solution = solve_qfs(unary, pairwise, beta)
    lp_selection = lp_supermodular_maximum_selection(unary, pairwise, beta)
    lp_value = qfs_objective(lp_selection, unary, pairwise, beta)
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
    one_round = solve_qfs(unary, pairwise, 0.0, max_flow_rounds=1)
    solution = solve_qfs(unary, pairwise, 0.0)
    assert solution.certified_optimal and solution.flow_rounds >= 2
    assert solution.optimality_gap <= 1e-9 * abs(solution.objective)
    assert one_round.optimality_gap > solution.optimality_gap
    assert one_round.upper_bound >= solution.objective - 1e-9 * abs(solution.objective)


def test_solver_edge_cases():
    # No interactions: the LFS rule, theta_j + theta_jj / 2 > beta.
    unary = np.array([0.5, -0.2, 1.0])
    pairwise = np.diag([0.2, 0.2, 0.0])
    assert solve_qfs(unary, pairwise, 0.3).selected.tolist() == [True, False, True]
    assert not solve_qfs(unary, pairwise, 10.0).selected.any()
    assert solve_qfs(unary, pairwise, -10.0).selected.all()
    single = solve_qfs(np.array([1.0]), np.zeros((1, 1)), 0.5)
    assert single.selected.tolist() == [True] and single.objective == pytest.approx(0.5)
    empty = solve_qfs(np.zeros(0), np.zeros((0, 0)), 0.0)
    assert empty.selected.shape == (0,) and empty.certified_optimal


def test_solver_rejects_bad_input():
    with pytest.raises(ValueError, match="symmetric"):
        solve_qfs(np.zeros(2), np.array([[0.0, 1.0], [0.0, 0.0]]), 0.0)
    with pytest.raises(ValueError, match="unary has shape"):
        solve_qfs(np.zeros(3), np.zeros((2, 2)), 0.0)
    with pytest.raises(ValueError, match="finite"):
        solve_qfs(np.array([np.nan, 0.0]), np.zeros((2, 2)), 0.0)
    with pytest.raises(ValueError, match="beta must be"):
        solve_qfs(np.zeros(2), np.zeros((2, 2)), np.inf)


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
    solution = solve_qfs(unary, pairwise, beta)
    assert solution.n_violating_pairs == int((pairwise[np.triu_indices(len(unary), 1)] < 0).sum())
    assert solution.upper_bound >= best - 1e-12
    assert solution.objective <= best + 1e-12
    assert solution.objective >= -1e-12  # at least the empty selection, one of the search's seeds
    # No single flip improves the returned selection.
    a = solution.selected.astype(float)
    for j in range(len(a)):
        flipped = a.copy()
        flipped[j] = 1 - flipped[j]
        assert qfs_objective(flipped, unary, pairwise, beta) <= solution.objective + 1e-12
    if solution.certified_optimal:
        assert solution.objective == pytest.approx(best, abs=1e-9)


# Seeds of random_mixed_problem where the approximation is exactly optimal (all of 0..39 but 17, 20
# when measured): pinned so a regression of the heuristic shows.
@pytest.mark.parametrize("seed", [s for s in range(40) if s not in (17, 20)])
def test_mixed_signs_equal_brute_force_on_fixed_cases(seed):
    unary, pairwise, beta = random_mixed_problem(seed)
    best, _ = brute_force_max(unary, pairwise, beta)
    assert solve_qfs(unary, pairwise, beta).objective == pytest.approx(best, abs=1e-9)


def test_rounding_size_negative_pairs_still_certify():
    rng = np.random.default_rng(13)
    p = 10
    pairwise = np.triu(rng.exponential(1.0, (p, p)) * (rng.random((p, p)) < 0.5), 1)
    pairwise[pairwise == 0] = -1e-18 * rng.random(int((pairwise == 0).sum()))  # rounding-size negatives
    pairwise = np.triu(pairwise, 1) + np.triu(pairwise, 1).T
    unary, beta = rng.standard_normal(p), 0.5
    solution = solve_qfs(unary, pairwise, beta)
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
            base = qfs_objective(result.selected, unary, pairwise, 0.0)
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
        gaps = [best[k] - (best[i] + (best[j] - best[i]) * (k - i) / (j - i)) for i in range(k) for j in range(k + 1, p + 1)]
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
            assert qfs_objective(result.selected, unary, pairwise, 0.0) <= best_of_size(unary, pairwise, k) + 1e-12


def test_select_by_count_rejects_bad_counts():
    with pytest.raises(ValueError, match=r"num_features must be an int in the range \[0, 3\]; got 4"):
        select_by_count(np.zeros(3), np.zeros((3, 3)), 4)
    with pytest.raises(ValueError, match="num_features must be an int"):
        select_by_count(np.zeros(3), np.zeros((3, 3)), 1.5)


# ------------------------------------------------------------------------------------------
# Memory budget
# ------------------------------------------------------------------------------------------


def test_driver_budget():
    assert qfs_driver_memory_bytes(500, 2) == 500 * 500 * 4 * 8
    assert check_driver_budget(500, 2, 2**30) == 8_000_000
    with pytest.raises(ValueError, match=r"3000 candidate features with 2 classes needs 274.7 MiB.*256.0 MiB; use at most 2896"):
        check_driver_budget(3000, 2, 256 * 2**20)


# ------------------------------------------------------------------------------------------
# The paper's synthetic data (Section V-E), with the paper's generators
# ------------------------------------------------------------------------------------------


def synthetic_1(rng):
    """Class 0: 982 points uniform on the unit circle; class 1: 250 points N(0, 0.2 I); z ~ U[-0.2, 0.2]."""
    angle = rng.uniform(0, 2 * np.pi, 982)
    circle = np.column_stack([np.cos(angle), np.sin(angle)])
    blob = rng.normal(0.0, np.sqrt(0.2), (250, 2))
    X = np.vstack([circle, blob])
    y = np.repeat([0, 1], [982, 250])
    return np.column_stack([X, rng.uniform(-0.2, 0.2, len(y))]), y


def synthetic_2(rng, n=1000):
    """Weston et al.: y = +-1 equiprobable; (x1, x2) from a two-component mixture per class; x3..x52 ~ N(0, 20)."""
    y = rng.choice([-1, 1], n)
    component = rng.integers(0, 2, n)
    means = {-1: np.array([[-0.75, -3.0], [0.75, 3.0]]), 1: np.array([[3.0, -3.0], [-3.0, 3.0]])}
    X = np.empty((n, 52))
    for label in (-1, 1):
        rows = y == label
        X[rows, :2] = means[label][component[rows]] + rng.standard_normal((rows.sum(), 2))
    X[:, 2:] = rng.normal(0.0, np.sqrt(20.0), (n, 50))
    return X, (y > 0).astype(int)


def training_split(X, y, rng):
    """Three quarters of each class, as in the paper."""
    rows = np.concatenate(
        [rng.permutation(np.flatnonzero(y == c))[: int(round(0.75 * (y == c).sum()))] for c in np.unique(y)]
    )
    return X[rows], y[rows]


def preprocess(X, mode):
    if mode == "raw":
        return X
    centred = X - X.mean(axis=0)
    return centred if mode == "centred" else centred / centred.std(axis=0)


def selection_path(X, y, gamma, kernel="qfs"):
    """Minimal maximisers on a fine beta grid, from large beta (nothing) to small (everything)."""
    unary, pairwise, _ = coefficients(X, y, gamma, 2, kernel)
    c0 = unary + 0.5 * np.diag(pairwise)
    high = (c0 + np.clip(pairwise - np.diag(np.diag(pairwise)), 0, None).sum(axis=1)).max()
    betas = np.linspace(high + 1e-3, c0.min() - 1e-3, 600)
    return [tuple(np.flatnonzero(solve_qfs(unary, pairwise, beta).selected)) for beta in betas], unary, pairwise


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("mode", ["raw", "centred"])
def test_synthetic_1_qfs_adds_z_last_at_paper_gamma(seed, mode):
    """Reproduced at gamma = -0.5 on raw and centred data: z enters only with the full set. (x and y
    enter together at gamma = -0.5; the paper's single-feature step (y) appears at gamma = 0.)"""
    rng = np.random.default_rng(seed)
    X, y = training_split(*synthetic_1(rng), rng)
    path, _, _ = selection_path(preprocess(X, mode), y, -0.5)
    assert path[0] == () and path[-1] == (0, 1, 2)
    for selected in path:
        assert 2 not in selected or selected == (0, 1, 2)
    assert (0, 1) in path
    for earlier, later in zip(path, path[1:]):  # nested as beta decreases
        assert set(earlier) <= set(later)


def test_synthetic_1_scaled_data_select_all_three_at_once():
    """Documented deviation: standardised columns at gamma = -0.5 give an all-or-nothing path."""
    rng = np.random.default_rng(0)
    X, y = training_split(*synthetic_1(rng), rng)
    path, _, _ = selection_path(preprocess(X, "scaled"), y, -0.5)
    assert set(path) == {(), (0, 1, 2)}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("mode", ["raw", "centred", "scaled"])
@pytest.mark.parametrize("kernel", ["qfs", "qfs-prime"])
def test_synthetic_2_two_features_are_x1_x2_at_gamma_zero(seed, mode, kernel):
    """Reproduced at gamma = 0 (pure between-class separation; exact since gamma_max >= 0)."""
    rng = np.random.default_rng(seed)
    X, y = training_split(*synthetic_2(rng), rng)
    unary, pairwise, _ = coefficients(preprocess(X, mode), y, 0.0, 2, kernel)
    result = select_by_count(unary, pairwise, 2)
    assert result.reachable and result.solution.certified_optimal
    assert tuple(np.flatnonzero(result.selected)) == (0, 1)


@pytest.mark.parametrize("mode", ["raw", "centred", "scaled"])
def test_synthetic_2_at_paper_gamma_does_not_give_x1_x2(mode):
    """Documented deviation: at gamma = -0.5 the expressiveness term -gamma H dominates. Raw or
    centred, the 50 noise features (variance 20) enter first, all together; scaled, all 52 at once."""
    rng = np.random.default_rng(0)
    X, y = training_split(*synthetic_2(rng), rng)
    unary, pairwise, _ = coefficients(preprocess(X, mode), y, -0.5, 2)
    result = select_by_count(unary, pairwise, 2)
    assert not result.reachable
    first_selected = np.flatnonzero(result.selected)
    if mode == "scaled":
        assert first_selected.size == 52
    else:
        assert tuple(first_selected) == tuple(range(2, 52))
