"""A requested number of features from the binary quadratic problem of
:mod:`sparkfs.core.binary_quadratic`: the l_0 penalty beta for which the min-cut maximiser has k
features, or the nearest size any beta reaches (:func:`select_by_count`, rule in its Notes).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from sparkfs.core.binary_quadratic import (
    BinaryQuadraticProblem,
    BinaryQuadraticSolution,
    cut_relaxation,
    improve_by_local_search,
    solution_of,
)


@dataclass(frozen=True)
class BinaryQuadraticCountSolution:
    """Result of :func:`select_by_count`.

    Attributes
    ----------
    solution : BinaryQuadraticSolution
        The chosen selection at ``solution.beta`` (its certificate is for that beta; in the exact
        case a maximiser of f_beta of size m is also the best subset of size m for the objective
        without the l_0 term).
    requested : int
        The number of features asked for.
    reachable : bool
        Whether a beta giving exactly ``requested`` features was found (False also when
        ``max_iterations`` cut solves did not settle it; see the rule in select_by_count).
    size_below, beta_below : int, float
        The largest selection size <= requested found and its beta.
    size_above, beta_above : int, float
        The smallest selection size >= requested found and its beta.
    n_cuts : int
        Min-cut solves used by the search.
    """

    solution: BinaryQuadraticSolution
    requested: int
    reachable: bool
    size_below: int
    beta_below: float
    size_above: int
    beta_above: float
    n_cuts: int

    @property
    def selected(self) -> np.ndarray:
        return self.solution.selected

    @property
    def beta(self) -> float:
        return self.solution.beta


def select_by_count(
    unary,
    pairwise,
    num_features: int,
    *,
    tol: float = 1e-9,
    local_search: bool = True,
    max_iterations: int = 60,
    max_flow_rounds: int = 6,
) -> BinaryQuadraticCountSolution:
    """Find beta so that the maximiser of f has ``num_features`` features.

    Parameters
    ----------
    unary, pairwise : see :func:`maximise_binary_quadratic`.
    num_features : int
        k, 0 <= k <= p.
    tol, local_search, max_flow_rounds : see :func:`maximise_binary_quadratic`.
    max_iterations : int
        Cap on the min-cut solves of the search.

    Returns
    -------
    BinaryQuadraticCountSolution

    Notes
    -----
    g(beta) = max_a f0(a) - beta |a| is convex and piecewise linear in beta, with slope -|a*|;
    the min-cut returns the smallest maximiser, whose size never increases with beta when every
    pair is non-negative (nested optimal sets), so the size is a step function of beta. The
    search brackets k between beta_lo (all features: below min_j c0_j) and beta_hi (none: above
    max_j c0_j + sum_l t+_jl), then bisects with secant steps: the next beta is where the lines
    of the two bracketing selections cross. If the cut there is no better than those lines, that
    crossing is the only breakpoint between them and the sizes strictly between are not reached
    by any beta (ties exactly at the breakpoint aside): ``reachable`` is False.

    Rule when k is not reachable: the reachable size closest to k is chosen, ties to the smaller
    one, except that an empty selection is chosen only when no non-empty one is reachable.

    With negative pairs the search runs on the relaxation without them (where nesting holds);
    the chosen selection is then improved by swaps (which keep its size) on the true objective,
    and the reported bound is the Lagrangian one, max_{|a| = m} f0 <= g+(beta) + beta m.
    """
    started = time.perf_counter()
    problem = BinaryQuadraticProblem(unary, pairwise)
    p = problem.num_features
    if isinstance(num_features, bool) or not isinstance(num_features, (int, np.integer)) or not 0 <= num_features <= p:
        raise ValueError(f"num_features must be an int in the range [0, {p}]; got {num_features!r}")
    k = int(num_features)
    search = _CutSearch(problem, tol, max_flow_rounds)
    lo, hi = _bracket(search, k)
    found, lo, hi = _bisect(search, k, lo, hi, max_iterations)
    if found is not None:
        chosen = found
        below = above = found
    else:
        below, above = hi, lo
        distance_below, distance_above = k - int(below[1].sum()), int(above[1].sum()) - k
        prefer_below = distance_below <= distance_above and below[1].any()
        chosen = below if prefer_below else above
    beta, selected, upper_bound, rounds = chosen
    solver, moves = "min-cut", 0
    if problem.n_violating_pairs:
        solver = "min-cut+local-search" if local_search else "min-cut(relaxation)"
        if local_search:
            selected, moves = improve_by_local_search(problem, selected, beta, allow_flips=False, max_moves=10 * p)
    solution = solution_of(problem, selected, beta, upper_bound, tol, solver, rounds, moves, started)
    return BinaryQuadraticCountSolution(
        solution=solution,
        requested=k,
        reachable=found is not None,
        size_below=int(below[1].sum()),
        beta_below=float(below[0]),
        size_above=int(above[1].sum()),
        beta_above=float(above[0]),
        n_cuts=search.n_cuts,
    )


#: One solve of the search: (beta, selected mask, upper bound, max-flow rounds).
Cut = Tuple[float, np.ndarray, float, int]


class _CutSearch:
    """The min-cut solves of one :func:`select_by_count` search, counted."""

    def __init__(self, problem: BinaryQuadraticProblem, tol: float, max_flow_rounds: int):
        self.problem, self.tol, self.max_flow_rounds = problem, tol, max_flow_rounds
        self.n_cuts = 0

    def cut_at(self, beta) -> Cut:
        self.n_cuts += 1
        selected, _, upper_bound, rounds = cut_relaxation(self.problem, beta, self.tol, self.max_flow_rounds)
        return beta, selected, upper_bound, rounds

    def relaxed_base_value(self, selected) -> float:
        """f0+(a): the objective without the l_0 term and without negative pairs."""
        problem = self.problem
        rows_in = selected[problem.pair_rows] & selected[problem.pair_cols]
        return float(problem.unary_base[selected].sum() + problem.pair_values[rows_in].sum())


def _bracket(search: _CutSearch, k: int) -> Tuple[Cut, Cut]:
    """The cuts at beta_lo (at least k features) and beta_hi (at most k) of the Notes of
    :func:`select_by_count`."""
    problem = search.problem
    spread = np.abs(problem.unary_base).max(initial=0.0) + problem.positive_row_sums.max(initial=0.0)
    margin = 1e-6 * spread + 1e-300
    beta_lo = float(problem.unary_base.min(initial=0.0) - margin)
    beta_hi = float((problem.unary_base + problem.positive_row_sums
                     + np.bincount(problem.pair_cols, weights=problem.pair_values,
                                   minlength=problem.num_features)).max(initial=0.0) + margin)
    lo = search.cut_at(beta_lo)
    hi = search.cut_at(beta_hi)
    for _ in range(8):  # the bounds are provable; widen only against rounding
        if lo[1].sum() >= k:
            break
        beta_lo -= 10 * margin + abs(beta_lo)
        lo = search.cut_at(beta_lo)
    for _ in range(8):
        if hi[1].sum() <= k:
            break
        beta_hi += 10 * margin + abs(beta_hi)
        hi = search.cut_at(beta_hi)
    return lo, hi


def _bisect(search: _CutSearch, k: int, lo: Cut, hi: Cut, max_iterations: int) -> Tuple[Optional[Cut], Cut, Cut]:
    """The secant bisection of the bracket: ``(found, lo, hi)``, ``found`` the cut with k
    features or None (k not reachable, or ``max_iterations`` cut solves spent)."""
    problem, tol = search.problem, search.tol
    if lo[1].sum() == k:
        return lo, lo, hi
    if hi[1].sum() == k:
        return hi, lo, hi
    while search.n_cuts < max_iterations:
        size_lo, size_hi = int(lo[1].sum()), int(hi[1].sum())
        base_lo, base_hi = search.relaxed_base_value(lo[1]), search.relaxed_base_value(hi[1])
        beta_mid = (base_lo - base_hi) / (size_lo - size_hi)
        if not lo[0] < beta_mid < hi[0]:
            beta_mid = 0.5 * (lo[0] + hi[0])
        mid = search.cut_at(beta_mid)
        size_mid = int(mid[1].sum())
        if size_mid == k:
            return mid, lo, hi
        line_value = base_lo - beta_mid * size_lo
        mid_value = search.relaxed_base_value(mid[1]) - beta_mid * size_mid
        no_new_line = mid_value <= line_value + problem.tolerance(mid_value, line_value, beta_mid, tol)
        if no_new_line or size_mid in (size_lo, size_hi):
            # The crossing is a breakpoint; step the bracket onto it if the cut moved there.
            if k < size_mid < size_lo:
                lo = mid
            elif size_hi < size_mid < k:
                hi = mid
            else:
                break
            continue
        if size_mid > k:
            lo = mid
        else:
            hi = mid
    return None, lo, hi
