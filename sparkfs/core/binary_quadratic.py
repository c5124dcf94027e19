"""Maximise a binary quadratic function by s-t minimum cut, with a certificate of optimality.

The problem, for a in {0, 1}^p (a_j = 1: feature j selected),

    f(a) = sum_j (c_j - beta) a_j + 1/2 sum_{j,l} t_jl a_j a_l,

with ``unary`` c, a symmetric ``pairwise`` matrix T and a penalty beta per selected feature (an l_0
penalty). Since a_j^2 = a_j, the diagonal 1/2 t_jj a_j is a unary term
(:func:`binary_quadratic_objective`). Nothing here knows where c and T come from: the Fisher-Markov
selector with the quadratic kernel (:mod:`sparkfs.core.qfs`) is one user.

* **Exact case (every off-diagonal t_jl >= 0).** f is supermodular and -f a regular energy
  (Kolmogorov-Zabih), so a maximiser is the source side of a minimum s-t cut
  (:func:`maximise_binary_quadratic`, with a certificate of optimality from weak duality of the
  integer max-flow rounds of scipy's Dinic; see its Notes).
* **Negative pairs (some t_jl < 0).** The problem is NP-hard in general; the solver returns a cut of
  the relaxation without the negative pairs, improved by local search on the true objective, with a
  valid upper bound.
* **A requested number of features.** :func:`sparkfs.core.count_selection.select_by_count` finds
  beta for which the maximiser has k features (or reports that no beta gives k).

Memory: about 100 bytes per pair with a positive t_jl (edge lists and the residual graph of
scipy's Dinic), on top of the p x p coefficients.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import breadth_first_order, maximum_flow

_FLOAT_EPS = np.finfo(np.float64).eps
#: Integer flows are scaled so that no capacity and no flow value exceeds 2**30: scipy's
#: ``maximum_flow`` works in int32 (int64 capacities are silently truncated), 2**30 leaves a
#: factor 2 of headroom.
_INT_FLOW_LIMIT = 2**30
#: With negative pairs: each negative term -w a_j a_l is relaxed to -(1 - s) w (a_j + a_l - 1) for
#: these shares s (s = 1 drops it); every relaxation is supermodular and bounds f from above.
_RELAXATION_SHARES = (1.0, 0.5, 0.0)


# --------------------------------------------------------------------------------------------
# Objective and results
# --------------------------------------------------------------------------------------------


def binary_quadratic_objective(selection, unary, pairwise, beta: float):
    """The objective f for one or several selections.

    f(a) = sum_j (c_j - beta) a_j + 1/2 sum_{j,l} t_jl a_j a_l

    Parameters
    ----------
    selection : array of shape (p,) or (m, p)
        0/1 or boolean selection vector(s) a.
    unary : array of shape (p,)
        c_j.
    pairwise : array of shape (p, p)
        t_jl (symmetric); its diagonal acts as the unary term 1/2 t_jj a_j.
    beta : float
        The l_0 penalty per selected feature.

    Returns
    -------
    float, or ndarray of shape (m,)
    """
    selection = np.asarray(selection, dtype=np.float64)
    unary = np.asarray(unary, dtype=np.float64)
    pairwise = np.asarray(pairwise, dtype=np.float64)
    linear = selection @ (unary - beta)
    quadratic = 0.5 * np.einsum("...j,jl,...l->...", selection, pairwise, selection)
    value = linear + quadratic
    return float(value) if np.ndim(value) == 0 else value


@dataclass(frozen=True)
class BinaryQuadraticSolution:
    """Result of maximising f for one beta.

    Attributes
    ----------
    selected : ndarray of bool, shape (p,)
    beta : float
    objective : float
        f(selected) (true objective, all pairs).
    upper_bound : float
        A proven upper bound on max_a f(a) (weak duality of the max-flow; with negative pairs,
        the bound of the relaxation that drops them).
    optimality_gap : float
        upper_bound - objective >= 0: ``selected`` is within this of the optimum.
    certified_optimal : bool
        optimality_gap <= tol * max(|objective|, |upper_bound|), or below the float64 resolution
        of the objective (64 eps times the sum of the absolute coefficients).
    n_violating_pairs : int
        Pairs j < l with t_jl < 0 (non-submodular terms); 0 means the min-cut is exact.
    solver : str
        "min-cut" (exact case), "min-cut+local-search" (negative pairs), or "trivial" (p = 0).
    flow_rounds : int
        Integer max-flow rounds used by the certificate.
    local_search_moves : int
        Improving flips and swaps applied after the cut.
    seconds : float
        Wall time of the solve.
    """

    selected: np.ndarray
    beta: float
    objective: float
    upper_bound: float
    optimality_gap: float
    certified_optimal: bool
    n_violating_pairs: int
    solver: str
    flow_rounds: int
    local_search_moves: int
    seconds: float

    @property
    def num_selected(self) -> int:
        return int(np.count_nonzero(self.selected))


# --------------------------------------------------------------------------------------------
# The cut graph, its certificate, local search
# --------------------------------------------------------------------------------------------


class BinaryQuadraticProblem:
    """The objective reduced to f0(a) = c0.a + sum_{j<l} t_jl a_j a_l, plus the cut graph's pairs.

    c0_j = c_j + t_jj / 2 and t_jl (j < l); f(a) = f0(a) - beta |a|.
    """

    def __init__(self, unary, pairwise, symmetry_tol: float = 1e-10):
        unary = np.asarray(unary, dtype=np.float64)
        pairwise = np.asarray(pairwise, dtype=np.float64)
        if pairwise.ndim != 2 or pairwise.shape[0] != pairwise.shape[1]:
            raise ValueError(f"pairwise must be a square (p, p) matrix; got shape {pairwise.shape}")
        if unary.shape != (pairwise.shape[0],):
            raise ValueError(f"unary has shape {unary.shape}, expected ({pairwise.shape[0]},) to match pairwise")
        if not (np.all(np.isfinite(unary)) and np.all(np.isfinite(pairwise))):
            raise ValueError("unary and pairwise coefficients must be finite (no NaN or inf)")
        asymmetry = np.abs(pairwise - pairwise.T).max(initial=0.0)
        if asymmetry > symmetry_tol * max(np.abs(pairwise).max(initial=0.0), np.finfo(float).tiny):
            raise ValueError(f"pairwise must be symmetric; max |theta_jl - theta_lj| = {asymmetry:.3g}")
        self.num_features = unary.shape[0]
        self.unary_base = unary + 0.5 * np.diagonal(pairwise)
        self.interactions = 0.5 * (pairwise + pairwise.T)
        np.fill_diagonal(self.interactions, 0.0)
        rows, cols = np.triu_indices(self.num_features, 1)
        values = self.interactions[rows, cols]
        self.n_violating_pairs = int(np.count_nonzero(values < 0))
        positive = values > 0
        self.pair_rows, self.pair_cols, self.pair_values = rows[positive], cols[positive], values[positive]
        # sum_{l > j} t+_jl, for the unary capacities of the cut graph.
        self.positive_row_sums = np.bincount(self.pair_rows, weights=self.pair_values, minlength=self.num_features)
        # sum_{l != j} max(-t_jl, 0) and sum_{j<l} max(-t_jl, 0), for the linearised relaxation.
        negative = values < 0
        negative_weights = -values[negative]
        self.negative_weight_per_feature = np.bincount(
            rows[negative], weights=negative_weights, minlength=self.num_features
        ) + np.bincount(cols[negative], weights=negative_weights, minlength=self.num_features)
        self.negative_weight_total = float(negative_weights.sum())
        # Float64 resolution of f: evaluating f rounds at about eps times the sum of |coefficients|.
        self.coefficient_mass = np.abs(self.unary_base).sum() + np.abs(values).sum()

    def objective(self, selection, beta: float) -> float:
        a = selection.astype(np.float64)
        return float(a @ (self.unary_base - beta) + 0.5 * a @ (self.interactions @ a))

    def tolerance(self, objective: float, upper_bound: float, beta: float, tol: float) -> float:
        resolution = 64 * _FLOAT_EPS * (self.coefficient_mass + abs(beta) * self.num_features)
        return max(tol * max(abs(objective), abs(upper_bound)), resolution)


def cut_relaxation(problem: BinaryQuadraticProblem, beta: float, tol: float, max_flow_rounds: int,
                   dropped_share: float = 1.0):
    """Maximise a supermodular relaxation f+(a) >= f(a) by an s-t min-cut, with a certificate.

    Each negative pair -w a_j a_l (w = -t_jl > 0) is replaced by its upper bound
    -(1 - dropped_share) w (a_j + a_l - 1): dropped (0) when ``dropped_share`` is 1, linearised
    when it is 0 (a_j a_l >= a_j + a_l - 1); any share in [0, 1] gives f+ >= f.

    Returns (selected mask, f+(selected), proven upper bound on max f+ (so on max f), rounds).

    Graph (node j <=> feature j, a_j = 1 <=> j on the source side): -t a_j a_l = -t a_j + t a_j (1 - a_l),
    so each pair is an edge j -> l of capacity t_jl and the unary d_j = beta - c0_j - sum_{l>j} t_jl
    an edge j -> sink (d_j > 0) or source -> j of capacity -d_j (d_j < 0, plus the constant d_j).
    Then f+(S) = K - cut(S) with K = sum of the source capacities.
    """
    p = problem.num_features
    source, sink = p, p + 1
    linearised = 1.0 - dropped_share
    unary_cost = (beta - problem.unary_base - problem.positive_row_sums
                  + linearised * problem.negative_weight_per_feature)
    constant = linearised * problem.negative_weight_total
    to_sink = np.flatnonzero(unary_cost > 0)
    from_source = np.flatnonzero(unary_cost < 0)
    edge_tails = np.concatenate([problem.pair_rows, to_sink, np.full(from_source.size, source)])
    edge_heads = np.concatenate([problem.pair_cols, np.full(to_sink.size, sink), from_source])
    edge_capacities = np.concatenate([problem.pair_values, unary_cost[to_sink], -unary_cost[from_source]])
    source_total = float(-unary_cost[from_source].sum())
    sink_total = float(unary_cost[to_sink].sum())

    def cut_capacity(source_side: np.ndarray) -> float:
        crossing = source_side[edge_tails] & ~source_side[edge_heads]
        return float(edge_capacities[crossing].sum())

    residual = sp.csr_array((edge_capacities, (edge_tails, edge_heads)), shape=(p + 2, p + 2))
    flow_value = 0.0
    # Residual max flow is at most the residual capacity of any cut: start with the trivial ones.
    residual_bound = min(source_total, sink_total)
    source_side = None
    rounds = 0
    while True:
        if residual_bound <= 0 or rounds >= max_flow_rounds:
            if source_side is None or residual_bound <= 0:
                source_side = _reachable(residual, source, p + 2)
            break
        rounds += 1
        scale = _INT_FLOW_LIMIT / residual_bound
        # Floor scaling: integer capacity / scale <= float residual capacity, so the integer flow
        # divided by scale is a feasible flow of the float residual graph.
        integer_capacities = np.floor(np.clip(residual.data, 0.0, None) * scale)
        np.minimum(integer_capacities, _INT_FLOW_LIMIT, out=integer_capacities)
        # Copies of the index arrays: eliminate_zeros() compacts them in place.
        integer_graph = sp.csr_array(
            (integer_capacities.astype(np.int32), residual.indices.copy(), residual.indptr.copy()),
            shape=residual.shape,
        )
        integer_graph.eliminate_zeros()
        result = maximum_flow(integer_graph, source, sink, method="dinic")
        integer_flow = result.flow
        flow_value += result.flow_value / scale
        residual = (residual - integer_flow.astype(np.float64) / scale).tocsr()
        # The integer min cut: vertices reachable from the source in the integer residual graph.
        integer_residual = (integer_graph - integer_flow).tocsr()
        source_side = _reachable(integer_residual, source, p + 2)
        gap = cut_capacity(source_side) - flow_value
        relaxed_value = source_total - cut_capacity(source_side)
        upper_bound = source_total - flow_value
        if gap <= problem.tolerance(relaxed_value + constant, upper_bound + constant, beta, tol):
            break
        residual_bound = gap
    selected = source_side[:p]
    relaxed_value = source_total - cut_capacity(source_side)
    upper_bound = max(source_total - flow_value, relaxed_value)
    return selected, relaxed_value + constant, upper_bound + constant, rounds


def _reachable(graph, source: int, num_nodes: int) -> np.ndarray:
    positive = graph.copy()
    positive.data = (positive.data > 0).astype(np.int8)
    positive.eliminate_zeros()
    order = breadth_first_order(positive, source, directed=True, return_predecessors=False)
    side = np.zeros(num_nodes, dtype=bool)
    side[order] = True
    return side


def improve_by_local_search(problem: BinaryQuadraticProblem, selected: np.ndarray, beta: float, allow_flips: bool,
                            max_moves: int):
    """Steepest-ascent single flips, then best swaps, on the TRUE objective until no move improves.

    Flips change |a|; swaps (one in, one out) keep it. Returns (selection, moves applied).
    """
    selection = selected.copy()
    a = selection.astype(np.float64)
    field = problem.interactions @ a
    linear = problem.unary_base - beta
    threshold = 64 * _FLOAT_EPS * (problem.coefficient_mass + abs(beta) * problem.num_features)
    moves = 0
    while moves < max_moves:
        # gain of flipping j: (1 - 2 a_j)(c_j + sum_l t_jl a_l)
        gains = (1.0 - 2.0 * a) * (linear + field)
        if allow_flips:
            best = int(np.argmax(gains))
            if gains[best] > threshold:
                step = 1.0 - 2.0 * a[best]
                a[best] += step
                field += step * problem.interactions[:, best]
                moves += 1
                continue
        inside, outside = np.flatnonzero(a > 0.5), np.flatnonzero(a < 0.5)
        if inside.size == 0 or outside.size == 0:
            break
        # swap out j (inside), in l (outside): gain_j + gain_l - t_jl
        swap_gains = gains[inside][:, None] + gains[outside][None, :] - problem.interactions[np.ix_(inside, outside)]
        flat = int(np.argmax(swap_gains))
        best_in, best_out = divmod(flat, outside.size)
        if swap_gains[best_in, best_out] <= threshold:
            break
        removed, added = inside[best_in], outside[best_out]
        a[removed], a[added] = 0.0, 1.0
        field += problem.interactions[:, added] - problem.interactions[:, removed]
        moves += 1
    return a > 0.5, moves


def solution_of(problem, selected, beta, upper_bound, tol, solver, rounds, moves, started) -> BinaryQuadraticSolution:
    objective = problem.objective(selected, beta)
    upper_bound = max(upper_bound, objective)
    gap = upper_bound - objective
    return BinaryQuadraticSolution(
        selected=selected,
        beta=float(beta),
        objective=objective,
        upper_bound=float(upper_bound),
        optimality_gap=float(gap),
        certified_optimal=bool(gap <= problem.tolerance(objective, upper_bound, beta, tol)),
        n_violating_pairs=problem.n_violating_pairs,
        solver=solver,
        flow_rounds=rounds,
        local_search_moves=moves,
        seconds=time.perf_counter() - started,
    )


# --------------------------------------------------------------------------------------------
# Solvers
# --------------------------------------------------------------------------------------------


def maximise_binary_quadratic(
    unary,
    pairwise,
    beta: float,
    *,
    tol: float = 1e-9,
    local_search: bool = True,
    max_flow_rounds: int = 6,
    max_local_moves: Optional[int] = None,
) -> BinaryQuadraticSolution:
    """Maximise f(a) = sum_j (c_j - beta) a_j + 1/2 sum_jl t_jl a_j a_l over a in {0, 1}^p.

    Parameters
    ----------
    unary : array of shape (p,)
        c_j.
    pairwise : array of shape (p, p)
        t_jl, symmetric.
    beta : float
        The l_0 penalty per selected feature.
    tol : float
        Relative optimality tolerance of the certificate.
    local_search : bool
        With negative pairs, improve the cut's answer by single flips and swaps on the true
        objective (ignored in the exact case, where it cannot help).
    max_flow_rounds : int
        Integer max-flow rounds allowed to close the certificate's gap.
    max_local_moves : int, optional
        Cap on local-search moves (default 10 p).

    Returns
    -------
    BinaryQuadraticSolution

    Notes
    -----
    **Exact case (every off-diagonal t_jl >= 0).** f is supermodular and -f is a regular
    energy (Kolmogorov-Zabih): writing -t a_j a_l = -t a_j + t a_j (1 - a_l), the
    maximiser is the source side of a minimum s-t cut in a graph with an edge j -> l of capacity
    t_jl per pair and one unary edge per feature, and f(S) = K - cut(S).

    The cut is computed with scipy's Dinic (``maximum_flow``), which needs int32 capacities, and
    certified as follows. Capacities are scaled by s and FLOORED, so (integer flow) / s is a
    feasible flow of the float graph and its value V is a lower bound on the float min cut (weak
    duality); the integer min cut S (vertices reachable from the source in the integer residual
    graph) has float capacity cut(S) >= min cut. Hence f(S) = K - cut(S) is within
    ``gap = cut(S) - V`` of the maximum, i.e. ``upper_bound = K - V`` is a proof. Floor rounding
    loses at most 1/s per cut edge, so the gap after one round is below (#cut edges)/s, about
    1e-3 relative on 2M edges. If it is above the tolerance, the RESIDUAL float graph is scaled
    again (s chosen so that its max flow, at most the current gap, maps to 2**30) and augmented;
    feasible flows of the residual graph add to feasible flows of the original, so V only grows
    and each round divides the gap by about 2**30 / (#cut edges). The loop stops when
    gap <= tol * max(|f(S)|, |K - V|) or the gap is below the float64 resolution of f
    (64 eps times the sum of the absolute coefficients), which is what ``certified_optimal``
    reports. (The certificate itself is evaluated in float64; its own rounding is of that
    resolution order.) No capacity and no flow value exceeds 2**30, so int32 never overflows.

    **Non-submodular case (some t_jl < 0; NP-hard in general).** The negative pairs are
    dropped, which can only increase f, so the cut of this relaxation gives a valid upper bound
    K - V on the true maximum; its answer is then improved by local search (steepest single flips,
    then best swaps) on the true objective. ``optimality_gap`` is measured against that bound and
    ``certified_optimal`` is True only if the bound closes; ``n_violating_pairs`` counts the
    dropped pairs.

    Complexity: building the graph O(p^2); Dinic O(V^2 E) worst case, about 1-2 s per round on a
    complete graph of 2,000 nodes here; local search O(p) per flip and O(p^2) per swap.
    """
    started = time.perf_counter()
    if not np.isfinite(beta):
        raise ValueError(f"beta must be a finite number; got {beta}")
    if max_flow_rounds < 1:
        raise ValueError(f"max_flow_rounds must be at least 1; got {max_flow_rounds}")
    problem = BinaryQuadraticProblem(unary, pairwise)
    if problem.num_features == 0:
        return solution_of(problem, np.zeros(0, dtype=bool), beta, 0.0, tol, "trivial", 0, 0, started)
    beta = float(beta)
    if not problem.n_violating_pairs:
        selected, _, upper_bound, rounds = cut_relaxation(problem, beta, tol, max_flow_rounds)
        return solution_of(problem, selected, beta, upper_bound, tol, "min-cut", rounds, 0, started)
    return _maximise_non_submodular(problem, beta, tol=tol, local_search=local_search,
                                    max_flow_rounds=max_flow_rounds, max_local_moves=max_local_moves, started=started)


def _maximise_non_submodular(problem: BinaryQuadraticProblem, beta: float, *, tol: float, local_search: bool,
                             max_flow_rounds: int, max_local_moves: Optional[int],
                             started: float) -> BinaryQuadraticSolution:
    """The non-submodular case of :func:`maximise_binary_quadratic` (its Notes): cuts of
    relaxations for the bound, local search from their answers for the selection."""
    # Non-submodular: the cut of the relaxation without the negative pairs first; if its bound
    # already certifies its answer (e.g. the negative t_jl are rounding-size), stop there.
    selected, _, upper_bound, rounds = cut_relaxation(problem, beta, tol, max_flow_rounds, _RELAXATION_SHARES[0])
    first = solution_of(problem, selected, beta, upper_bound, tol, "min-cut", rounds, 0, started)
    if first.certified_optimal:
        return first
    # Otherwise one cut per relaxation; the tightest bound is kept, and every cut's answer (plus
    # the empty selection) seeds a local search on the true objective.
    moves = 0
    candidates = [np.zeros(problem.num_features, dtype=bool), selected]
    for dropped_share in _RELAXATION_SHARES[1:]:
        selected, _, relaxation_bound, relaxation_rounds = cut_relaxation(
            problem, beta, tol, max_flow_rounds, dropped_share
        )
        upper_bound, rounds = min(upper_bound, relaxation_bound), rounds + relaxation_rounds
        candidates.append(selected)
    if local_search:
        cap = 10 * problem.num_features if max_local_moves is None else max_local_moves
        searched = [improve_by_local_search(problem, start, beta, allow_flips=True, max_moves=cap)
                    for start in candidates]
        candidates = [selection for selection, _ in searched]
        moves = sum(count for _, count in searched)
    values = [problem.objective(selection, beta) for selection in candidates]
    best = candidates[int(np.argmax(values))]
    solver = "min-cut+local-search" if local_search else "min-cut(relaxation)"
    return solution_of(problem, best, beta, upper_bound, tol, solver, rounds, moves, started)
