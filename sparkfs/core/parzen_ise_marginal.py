"""Parzen-ISE, the ``marginal`` reading: fixed windows, the ISE taken feature by feature (pure NumPy).

The paper's equations are lost (docs/parzen_ise.md, section 0, lists the readings and what each
satisfies). This reading keeps the paper's modified Parzen estimator (per-group diagonal windows,
eqs. 6-10) and its constraint and pin (w on the simplex, one weight held at 0), and reads eqs. 11-19
as follows. Rows are centred and scaled to unit variance per feature (so that ``sum w = 1`` compares
like with like); ``s_ck^2`` are the group variances of the scaled data (eq. 9), h the window width.
For feature k, the 1-D modified Parzen densities of the data and of the weighted data y_k = w_k x_k,
the latter with the *same* windows (eq. 13 read as the windows of the estimator, fixed before the
weighting)::

    p_k(z) = 1/N sum_i sum_c u_ic N(z; x_ik,     h^2 s_ck^2)                              (eq. 10, marginal)
    q_k(z) = 1/N sum_j sum_c u_jc N(z; w_k x_jk, h^2 s_ck^2)                              (eq. 11, marginal)

and the criterion is the sum of their ISEs (eq. 19), each closed by the Gaussian product identity
``int N(z; a, A) N(z; b, B) dz = N(a - b; 0, A + B)``, with ``v_ijk = h^2 (s_c(i)k^2 + s_c'(j)k^2)``::

    ISE(w) = sum_{k in F} [P_k - 2 C_k(w_k) + Q_k(w_k)]                                  (eq. 19)
    P_k      = 1/N^2 sum_ij sum_cc' u_ic u_jc' N(x_ik - x_jk;       0, v_ijk)            (int p_k^2)
    C_k(w_k) = 1/N^2 sum_ij sum_cc' u_ic u_jc' N(x_ik - w_k x_jk;   0, v_ijk)            (int p_k q_k)
    Q_k(w_k) = 1/N^2 sum_ij sum_cc' u_ic u_jc' N(w_k (x_ik - x_jk); 0, v_ijk)            (int q_k^2)

The derivatives (eq. 22) are 1-D: with ``t = x_ik - w_k x_jk``, ``D = x_ik - x_jk`` and K the kernel,
``dK/dw = K t x_jk / v``, ``d2K/dw2 = K ((t x_jk / v)^2 - x_jk^2 / v)`` for C, and
``dK/dw = -K w D^2 / v``, ``d2K/dw2 = K ((w D^2 / v)^2 - D^2 / v)`` for Q.

What this reading satisfies: a weight at 0 leaves every term finite (q_k is then the windows at 0), and a
pinned feature only adds a constant (S1); with the pin the weights follow the data (S3). The
all-equal optimum of the paper (S2) holds only for exchangeable features. At w = 1, q = p and ISE = 0,
so the simplex is what makes the problem non-trivial, as in the paper.

Because the criterion is a sum of 1-D functions, its Hessian is diagonal: the descent
(:func:`descend_marginal_ise`) takes projected Newton steps, each the exact minimiser of the
separable quadratic model on the simplex, and converges in a few evaluations (one data pass each).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Optional

import numpy as np

#: Kernel elements (queries x rows x features) held at once in :func:`marginal_block_terms`.
_CHUNK_ELEMENTS = 1 << 18  # 2 MiB per array: twice as fast as 16 MiB chunks (cache)
#: Armijo fraction for the Newton step (the model is exact for a quadratic, so a small one suffices).
_SUFFICIENT_DECREASE = 1e-4
#: A predicted decrease below this share of the ISE is rounding: the descent has converged (this keeps
#: the number of passes independent of the summation order, i.e. of the partitioning).
_NEGLIGIBLE = 1e-12
#: Halvings of a Newton step before the search gives up.
_MAX_HALVINGS = 30
#: Rules that rank the features from the optimum (docs/parzen_ise.md, section 0).
RANKINGS = ("weights", "multipliers", "reference")


class MarginalTerms(NamedTuple):
    """Pair sums of one block, per feature; every field adds over disjoint row blocks and query batches."""

    self_sums: Optional[np.ndarray]  # (d,): sum_ij ... N(x_ik - x_jk; 0, v)  (P_k times the pair count), or None
    cross: np.ndarray                # (3, d): sum of the C kernel, its first and second w_k derivative
    own: np.ndarray                  # (3, d): the same for the Q kernel


class MarginalValue(NamedTuple):
    """ISE (eq. 19) over the free features, with its per-feature derivatives."""

    ise: float
    gradient: np.ndarray  # (|F|,) dISE/dw_k
    curvature: np.ndarray  # (|F|,) d2ISE/dw_k^2 (the Hessian is diagonal)
    per_feature: np.ndarray  # (|F|,) P_k - 2 C_k + Q_k


def marginal_window_width(num_rows: int) -> float:
    """Silverman's normal-reference factor for one dimension, ``(4 / (3 N))^(1/5)`` (the densities are 1-D)."""
    return float((4.0 / (3.0 * num_rows)) ** 0.2)


def _normal(difference_squared, variance):
    return np.exp(-0.5 * difference_squared / variance) / np.sqrt(2.0 * np.pi * variance)


def marginal_block_terms(query_points, query_memberships, row_points, row_memberships, variances, w, *, h: float,
                         with_self: bool = False) -> MarginalTerms:
    """One block's share of the pair sums of P_k, C_k(w_k) and Q_k(w_k) and their w_k derivatives.

    ``query_points`` (m, d) are the q-side points x_j (scaled, unweighted), ``row_points`` (n, d)
    the p-side points x_i of the block, with memberships (m, C) and (n, C); ``variances`` (C, d)
    the group variances s_ck^2 of the scaled data; ``w`` (d,). The sums are not divided by the
    pair count. Per group pair only rows and queries with a positive membership enter (hard groups:
    each pair once); features are taken in chunks so that at most ``_CHUNK_ELEMENTS`` kernel values
    exist at a time.
    """
    query_points, row_points = np.asarray(query_points, dtype=float), np.asarray(row_points, dtype=float)
    query_memberships = np.asarray(query_memberships, dtype=float)
    row_memberships = np.asarray(row_memberships, dtype=float)
    variances, w = np.asarray(variances, dtype=float), np.asarray(w, dtype=float)
    num_features = variances.shape[1]
    self_sums = np.zeros(num_features) if with_self else None
    cross, own = np.zeros((3, num_features)), np.zeros((3, num_features))
    h2 = float(h) ** 2
    for query_group in range(variances.shape[0]):
        queries = np.flatnonzero(query_memberships[:, query_group] > 0)
        for row_group in range(variances.shape[0]):
            rows = np.flatnonzero(row_memberships[:, row_group] > 0)
            if queries.size == 0 or rows.size == 0:
                continue
            query_weight = query_memberships[queries, query_group]
            row_weight = row_memberships[rows, row_group]
            unweighted = bool(np.all(row_weight == 1.0))  # hard groups: no weights to multiply
            step = max(1, _CHUNK_ELEMENTS // (queries.size * rows.size))
            for start in range(0, num_features, step):
                features = np.arange(start, min(start + step, num_features))
                x_j = query_points[np.ix_(queries, features)]                    # (m, f)
                x_i = row_points[np.ix_(rows, features)].T[None, :, :]           # (1, f, n)
                v = h2 * (variances[row_group, features] + variances[query_group, features])  # (f,)
                half_precision = (0.5 / v)[None, :, None]
                w_k = w[features]
                norm = 1.0 / np.sqrt(2.0 * np.pi * v)
                # C: sums over the rows i of K, K t, K t^2 per (query, feature), t = x_ik - w_k x_jk
                t = x_i - (w_k * x_j)[:, :, None]
                t_squared = t * t
                kernel = np.exp(-half_precision * t_squared)
                if not unweighted:
                    kernel *= row_weight
                k0, k1, k2 = kernel.sum(axis=2), (kernel * t).sum(axis=2), (kernel * t_squared).sum(axis=2)
                k0, k1, k2 = (query_weight[:, None] * norm * part for part in (k0, k1, k2))
                x_j_squared = x_j * x_j
                cross[0, features] += k0.sum(axis=0)
                cross[1, features] += (x_j * k1).sum(axis=0) / v
                cross[2, features] += (x_j_squared * k2).sum(axis=0) / v ** 2 - (x_j_squared * k0).sum(axis=0) / v
                # Q (and P): sums of K, K D^2, K D^4 with D = x_ik - x_jk and the kernel at w_k D
                squared = x_i - x_j[:, :, None]
                squared *= squared
                kernel = np.exp(-(half_precision * (w_k * w_k)[None, :, None]) * squared)
                if not unweighted:
                    kernel *= row_weight
                kernel_d2 = kernel * squared
                q0, q2, q4 = kernel.sum(axis=2), kernel_d2.sum(axis=2), (kernel_d2 * squared).sum(axis=2)
                q0, q2, q4 = ((query_weight[:, None] * norm * part).sum(axis=0) for part in (q0, q2, q4))
                own[0, features] += q0
                own[1, features] += -w_k * q2 / v
                own[2, features] += (w_k * w_k) * q4 / v ** 2 - q2 / v
                if self_sums is not None:  # with_self
                    kernel = np.exp(-half_precision * squared)
                    if not unweighted:
                        kernel *= row_weight
                    self_sums[features] += (query_weight[:, None] * norm * kernel.sum(axis=2)).sum(axis=0)
    return MarginalTerms(self_sums, cross, own)


def marginal_ise(self_sums, terms: MarginalTerms, free, *, num_rows: int, num_queries: int) -> MarginalValue:
    """ISE (eq. 19), its gradient and its (diagonal) curvature over the free features, from the
    totals of :func:`marginal_block_terms` over ``num_rows`` rows and ``num_queries`` queries."""
    free = np.asarray(free, dtype=np.int64)
    pairs = float(num_rows) * float(num_queries)
    self_sums = np.asarray(self_sums, dtype=float)[free]
    cross, own = terms.cross[:, free] / pairs, terms.own[:, free] / pairs
    per_feature = self_sums / pairs - 2.0 * cross[0] + own[0]
    return MarginalValue(float(per_feature.sum()), -2.0 * cross[1] + own[1], -2.0 * cross[2] + own[2], per_feature)


def newton_point_on_simplex(w, gradient, curvature) -> np.ndarray:
    """The minimiser on ``{x >= 0, sum x = 1}`` of ``sum_k g_k (x_k - w_k) + 1/2 H_k (x_k - w_k)^2`` (H_k > 0).

    Its KKT conditions give ``x_k = max(0, a_k - lam / H_k)`` with ``a_k = w_k - g_k / H_k`` and lam
    such that the x sum to 1; the sum is piecewise linear and decreasing in lam, with breaks at
    ``a_k H_k``: sorted, the active set is the largest prefix whose lam keeps every member positive.
    (With all H_k equal this is the Euclidean projection onto the simplex.)
    """
    w, gradient, curvature = (np.asarray(v, dtype=float) for v in (w, gradient, curvature))
    target = w - gradient / curvature
    inverse = 1.0 / curvature
    order = np.argsort(-(target * curvature), kind="mergesort")
    multipliers = (np.cumsum(target[order]) - 1.0) / np.cumsum(inverse[order])
    positive = target[order] - multipliers * inverse[order] > 0
    active = int(np.flatnonzero(positive)[-1]) if positive.any() else 0
    return np.maximum(target - multipliers[active] * inverse, 0.0)


def _safe_curvature(curvature: np.ndarray) -> np.ndarray:
    """Curvatures floored at 1e-6 of the largest one (1 when none is positive): the model must be convex."""
    largest = float(np.max(curvature)) if curvature.size else 0.0
    floor = 1e-6 * largest if largest > 0 else 1.0
    return np.maximum(curvature, floor)


def descend_marginal_ise(evaluate: Callable[[np.ndarray], MarginalValue], start, *, max_iter: int = 100,
                         tol: float = 1e-6):
    """Projected Newton descent of the separable ISE over the free weights (Steps 3-6).

    ``evaluate(w_free)`` runs one pass and returns a :class:`MarginalValue`. From ``start`` (on the
    simplex), each iteration goes to :func:`newton_point_on_simplex` of the current value, halving the
    step until the ISE decreases by at least ``1e-4`` of the model's prediction. Stops when no
    weight moves by more than ``tol`` times the weights' spread or by more than rounding
    ("converged"), when the model predicts no decrease ("converged"), when no step decreases the
    ISE ("no descent"), or after ``max_iter`` steps.

    Returns ``w_free, info`` with ``iterations``, ``evaluations``, ``ise`` (the accepted values),
    ``stop`` and ``value``.
    """
    w = np.asarray(start, dtype=float)
    if w.size == 1:
        return np.ones(1), {"iterations": 0, "evaluations": 0, "ise": [], "stop": "single free feature", "value": None}
    value = evaluate(w)
    info: Dict[str, Any] = {"iterations": 0, "evaluations": 1, "ise": [value.ise], "stop": "max_iter"}
    for iteration in range(1, max_iter + 1):
        direction = newton_point_on_simplex(w, value.gradient, _safe_curvature(value.curvature)) - w
        predicted = float(value.gradient @ direction)
        if not predicted < -_NEGLIGIBLE * abs(value.ise):  # nothing left above rounding: the KKT point
            info["stop"] = "converged"
            break
        accepted, step = None, 1.0
        for _ in range(_MAX_HALVINGS):
            trial = np.maximum(w + step * direction, 0.0)
            trial /= trial.sum()
            if np.array_equal(trial, w):
                break
            trial_value = evaluate(trial)
            info["evaluations"] += 1
            if trial_value.ise <= value.ise + _SUFFICIENT_DECREASE * step * predicted:
                accepted = trial
                break
            step *= 0.5
        if accepted is None:
            info["stop"] = "no descent"
            break
        moved = float(np.max(np.abs(accepted - w)))
        w, value = accepted, trial_value
        info["iterations"] = iteration
        info["ise"].append(value.ise)
        if moved <= tol * float(w.max() - w.min()) or moved <= 8.0 * np.finfo(float).eps * float(w.max()):
            info["stop"] = "converged"
            break
    info["value"] = value
    return w, info


def marginal_run(pair_terms: Callable, *, num_rows: int, num_features: int, fixed, num_queries: int,
                 previous: Optional[dict] = None, max_iter: int = 100, tol: float = 1e-6,
                 rank_by: str = "weights") -> dict:
    """One descent with feature ``fixed`` held at 0 (None: none), whatever computes the pair sums.

    ``pair_terms(w, with_self)`` returns the totals of :func:`marginal_block_terms` over every row
    and query (one pass); the P sums (``with_self``) are asked for once, as they do not depend on w.
    ``previous`` (the dict of an earlier run on the same data, the paper's second strategy): the
    descent starts from its weights, restricted to the free features and renormalised, and reuses
    its P sums and, when the start is its final w, its final pair sums (no pass).
    ``rank_by`` (one of :data:`RANKINGS`) makes ``scores``: the weights (as they are, the held-out
    feature at 0), :func:`multiplier_scores` (no pass: the last pass is at the final w) or
    :func:`reference_decrease` (two passes, or none when ``previous`` has them); with the last two the
    held-out feature is last (:func:`with_held_out_last`).
    """
    free = np.array([k for k in range(num_features) if k != fixed], dtype=np.int64)
    start = np.full(free.size, 1.0 / free.size)
    known = {}
    if previous is not None:
        known["self_sums"] = previous["self_sums"]
        restricted = np.maximum(np.asarray(previous["weights"], dtype=float)[free], 0.0)
        if restricted.sum() > 0:
            start = restricted / restricted.sum()
            full = np.zeros(num_features)
            full[free] = start
            if np.array_equal(full, previous["weights"]):
                known["terms"] = (full, previous["terms"])
    last: Dict[str, Any] = {}

    def evaluate(w_free):
        w = np.zeros(num_features)
        w[free] = w_free
        if "terms" in known and np.array_equal(w, known["terms"][0]):
            terms = known.pop("terms")[1]
        else:
            terms = pair_terms(w, "self_sums" not in known)
            last["passes"] = last.get("passes", 0) + 1
        known.setdefault("self_sums", terms.self_sums)
        last["terms"] = terms
        return marginal_ise(known["self_sums"], terms, free, num_rows=num_rows, num_queries=num_queries)

    w_free, info = descend_marginal_ise(evaluate, start, max_iter=max_iter, tol=tol)
    weights = np.zeros(num_features)
    weights[free] = w_free
    reference = previous.get("reference") if previous is not None else None
    if rank_by == "multipliers":  # (no value: one free feature, of weight 1)
        free_scores = w_free if info.get("value") is None else multiplier_scores(w_free, info["value"].gradient)
    elif rank_by == "reference" and free.size > 1:
        if reference is None:
            reference = _reference_terms(pair_terms, num_features, free.size, num_rows=num_rows,
                                         num_queries=num_queries, self_sums=known["self_sums"])
            last["passes"] = last.get("passes", 0) + 2
        free_scores = reference[free]
    else:  # the weights themselves (the held-out feature at 0)
        free_scores = None
    scores = weights.copy() if free_scores is None else with_held_out_last(free_scores, free, num_features)
    info.update(rank_by=rank_by, scores=scores, reference=reference)
    info.update(fixed_feature=fixed, weights=weights, weight_spread=float(w_free.max() - w_free.min()),
                log_ise=[float(np.log(v)) if v > 0 else float("-inf") for v in info["ise"]],
                self_sums=known.get("self_sums"), terms=last.get("terms"), passes=last.get("passes", 0))
    return info


def multiplier_scores(w_free, gradient) -> np.ndarray:
    """Ranking scores of the ``multipliers`` rule over the free features (docs/parzen_ise.md, section 0).

    At the optimum of eq. 19 on the simplex, KKT gives lambda with ``g_k = lambda`` where ``w_k > 0``
    and ``g_k = ISE_k'(0) >= lambda`` where ``w_k = 0`` (``gradient`` = ``g`` at ``w_free``). The score
    is ``w_k`` where ``w_k > 0`` and ``-(g_k - lambda) <= 0`` where ``w_k = 0`` (the reduced gradient: the
    rise of the criterion per unit of weight moved onto k), with
    ``lambda = min(sum_k w_k g_k, min_{w_k = 0} g_k)`` (the multiplier at an exact optimum; the minimum
    keeps every zero's score at or below 0 when rounding leaves the optimum slightly off).
    """
    w_free, gradient = np.asarray(w_free, dtype=float), np.asarray(gradient, dtype=float)
    zero = w_free <= 0
    multiplier = float(w_free @ gradient)
    if zero.any():
        multiplier = min(multiplier, float(gradient[zero].min()))
    return np.where(zero, -(gradient - multiplier), w_free)


def reference_decrease(at_zero, at_reference) -> np.ndarray:
    """Ranking scores of the ``reference`` rule: ``ISE_k(0) - ISE_k(1/|F|)`` per feature, the decrease of
    feature k's term of eq. 19 when it gets the equal weight (section 0)."""
    return np.asarray(at_zero, dtype=float) - np.asarray(at_reference, dtype=float)


def with_held_out_last(free_scores, free, num_features: int) -> np.ndarray:
    """Scores of all features from those of the free ones; a held-out feature gets one below the lowest."""
    free_scores = np.asarray(free_scores, dtype=float)
    scores = np.full(num_features, float(free_scores.min()) - 1.0 if free_scores.size else 0.0)
    scores[np.asarray(free, dtype=np.int64)] = free_scores
    return scores


def _reference_terms(pair_terms: Callable, num_features: int, num_free: int, *, num_rows: int, num_queries: int,
                     self_sums) -> np.ndarray:
    """``ISE_k(0) - ISE_k(1/num_free)`` for every feature: two passes (each term depends on w_k only)."""
    every = np.arange(num_features)
    values = [marginal_ise(self_sums, pair_terms(np.full(num_features, weight), False), every, num_rows=num_rows,
                           num_queries=num_queries).per_feature for weight in (0.0, 1.0 / num_free)]
    return reference_decrease(*values)


def standardised(points, feature_variance, variances):
    """Centred points scaled to unit (population) variance per feature, and the group variances
    of the scaled points (a constant feature keeps scale 1)."""
    scale = np.sqrt(np.asarray(feature_variance, dtype=float))
    scale = np.where(scale > 0, scale, 1.0)
    return np.asarray(points, dtype=float) / scale, np.asarray(variances, dtype=float) / scale ** 2


def summed_block_terms(blocks, num_features: int, with_self: bool) -> MarginalTerms:
    """The sum of :class:`MarginalTerms` over blocks (an empty iterable gives zeros)."""
    self_sums = np.zeros(num_features) if with_self else None
    cross, own = np.zeros((3, num_features)), np.zeros((3, num_features))
    for terms in blocks:
        cross += terms.cross
        own += terms.own
        if with_self:
            self_sums += terms.self_sums
    return MarginalTerms(self_sums, cross, own)
