"""Unsupervised feature ranking by a modified Parzen window and the ISE criterion (Parzen-ISE).

Pure NumPy. Rows ``x_i`` (N, d), centred at the column means; groups c = 1..C with memberships
``u_ic`` (class indicators, or fuzzy c-means clusters, :mod:`sparkfs.core.fuzzy_cmeans`); group
variances ``s_ck^2``; window width h; feature weights w on the simplex. The paper's equations
did not survive extraction; their numbers below follow its cross-references (eq. 10 is p, eq. 11
is q "using Eq. 10", eq. 19 the ISE, eq. 22 its derivatives, eq. 23 the learning rule).
docs/parzen_ise.md has the derivation and the reasons for every choice. This module holds the
``image`` reading (the first one built) and the shared pieces (groups, variances, the in-memory driver;
the options' checks, the held-out runs and the ranking scores are :mod:`sparkfs.core.parzen_ise_options`);
the ``marginal`` reading, the default, is :mod:`sparkfs.core.parzen_ise_marginal`
(``criterion`` chooses; neither meets every criterion of the docs' section 0).

Model (eqs. 6-13)::

    p(z) = 1/N sum_i sum_c u_ic N(z; x_i, S_c),         S_c  = h^2 diag(s_c1^2, ..., s_cd^2)
    q(z) = 1/N sum_j sum_c u_jc N(z; w*x_j, S'_c),      S'_c = h^2 diag(w^2 s_c^2)

so q is the image of p under z -> w*z: ``q(z) = p(z / w) / prod_k w_k``. With F the free features
(the held-out one is integrated out of both densities) and the Gaussian product identity
``int N(z; a, A) N(z; b, B) dz = N(a; b, A + B)`` (all integrals over R^F)::

    P    = int p^2 = 1/N^2 sum_ij sum_cc' u_ic u_jc' prod_{k in F} N(x_ik - x_jk;     0, h^2 (s_ck^2 + s_c'k^2))
    C(w) = int p q = 1/N^2 sum_ij sum_cc' u_ic u_jc' prod_{k in F} N(x_ik - w_k x_jk; 0, h^2 (s_ck^2 + w_k^2 s_c'k^2))
    Q(w) = int q^2 = P / prod_{k in F} w_k                   (change of variables; no pair sum needed)
    ISE(w) = P - 2 C(w) + Q(w)                               (eq. 19, with the constant P kept)
    dISE/dw_k = -2 dC/dw_k - Q / w_k                         (eq. 22)
    dC/dw_k   = 1/N^2 sum K_ij [t x_jk / v_k + w_k b_k (t^2 / v_k^2 - 1 / v_k)],
                t = x_ik - w_k x_jk,  v_k = h^2 (s_ck^2 + w_k^2 s_c'k^2),  b_k = h^2 s_c'k^2

Distribution: P and C are pair sums. :func:`overlap_block_terms` gives, for a broadcast batch
of "query" points j (the q side; every row, or the landmarks) and one block of rows i (the p side),
the per-query sums and the weight gradient; both add over disjoint row blocks (query batches
concatenate). P is C at w = 1 and is computed once; each ISE evaluation is one pass for C.
:func:`integrated_squared_error` combines the totals; :func:`descend_ise` is the driver loop, fed
by a callable that runs one pass (in memory here, a Spark job in the Spark layer).

Cost per ISE evaluation: O(N M |F|) multiply-adds in three matrix products per group pair
(kernel exponents, ``K X``, ``K X^2``) plus N M exponentials, with M = N (exact) or the number of
landmarks; hard groups evaluate every pair once, soft memberships C^2 times. A task holds an
(m, n) kernel matrix for m queries and n rows; the driver holds C x d variances and M sums.

Choices (reasons in docs/parzen_ise.md):

1. The data are centred at the column means: y = w * x shrinks towards the origin, so the
   criterion depends on where the origin is; the means make it translation invariant. It is
   already invariant to rescaling a feature (all three integrals scale by the same factor).
2. Hard groups by default (the paper partitions D by FCM, then computes per-class variances):
   ``u_ic`` one-hot of the largest membership. ``memberships="soft"`` uses the FCM memberships
   as mixture weights (p = sum_c P(c) p(x|c) with fuzzy counts); variances are weighted by u_ic.
3. Group variances are population variances (divisor sum_i u_ic), floored at ``variance_floor``
   times the feature's overall variance (1 for a constant feature). The floor is applied in the
   original space and carried to q by the same scaling, so q stays the exact image of p.
4. The held-out feature (w = 0) makes q singular along it (Q = infinity). We integrate it out of
   both densities: the ISE is taken between the marginals on the free features. A free weight
   at 0 makes the ISE infinite, so the descent keeps free weights > 0.
5. The descent minimises log ISE (same minimiser; its gradient is dISE/dw / ISE, free of the
   data's units) by projected gradient steps: the paper's learning rate 0.1 is the first trial
   step, halved until log ISE decreases by at least half the linear prediction (Armijo); the next
   iteration starts from twice the last accepted step (at most 0.1). The paper's raw rule
   w <- w - 0.1 dISE/dw is not unit-free (ISE scales with 1 / volume) and diverges here.
6. ``fixed_feature="auto"`` is the paper's second strategy: a first run holds feature 0 out,
   the second holds out the lowest-weighted feature of the first run; its weights rank.
7. Kernel sums are scaled by exp(-log_scale), the largest kernel peak (:func:`kernel_log_peak`),
   and combined in logs, so nothing overflows when d is large (Q / P = 1 / prod w grows like d^d).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

import numpy as np

from sparkfs.core import parzen_ise_marginal as pim
from sparkfs.core.fuzzy_cmeans import fcm_in_memory
from sparkfs.core.parzen_ise_options import (
    DEFAULT_CRITERION,
    DEFAULT_RANK_BY,
    check_options,
    final_scores,
    runs_with_held_out_feature,
)
from sparkfs.core.sampling import content_sample_keys, smallest_key_positions
from sparkfs.core.selection import rank_features

#: Armijo's fraction of the predicted decrease an accepted step must achieve.
_SUFFICIENT_DECREASE = 0.5
#: Halvings of the trial step before the line search gives up (0.1 * 2^-40 ~ 1e-13).
_MAX_HALVINGS = 40


class GroupMoments(NamedTuple):
    """Membership-weighted sums about per-group shifts; every field adds over disjoint row blocks."""

    weight_sums: np.ndarray   # (C,): sum_i u_ic
    sums: np.ndarray          # (C, d): sum_i u_ic (x_ik - shift_ck)
    square_sums: np.ndarray   # (C, d): sum_i u_ic (x_ik - shift_ck)^2


class OverlapTerms(NamedTuple):
    """One row block's share of a kernel pair sum; adds over row blocks, concatenates over queries."""

    query_sums: np.ndarray                 # (m,): sum over the block's rows i of K_ij, per query j
    weight_gradient: Optional[np.ndarray]  # (|F|,): d/dw_F of the block's sum, or None


class ISEValue(NamedTuple):
    """log ISE and its gradient, with the shares that turn landmark sums into a sampling error."""

    log_ise: float
    log_gradient: np.ndarray  # d log ISE / d w_F = (dISE/dw_F) / ISE
    self_share: float         # (P + Q) / ISE
    cross_share: float        # 2 C / ISE   (self_share - cross_share = 1)

    @property
    def ise(self) -> float:
        return float(np.exp(self.log_ise))

    @property
    def gradient(self) -> np.ndarray:
        """dISE/dw_F (eq. 22)."""
        return self.ise * self.log_gradient


# Groups -----------------------------------------------------------------------------------------


def hard_memberships(memberships) -> np.ndarray:
    """One-hot of each row's largest membership (ties: the lower group index), shape (n, C)."""
    memberships = np.asarray(memberships, dtype=float)
    hard = np.zeros_like(memberships)
    hard[np.arange(memberships.shape[0]), np.argmax(memberships, axis=1)] = 1.0
    return hard


def group_moment_terms(points, memberships, shifts=None) -> GroupMoments:
    """Sums for the group variances of eq. (9) over one block of rows (they add over blocks).

    ``shifts`` (C, d), default 0: the sums are taken about them, which keeps the one-pass
    variance well conditioned when they are near the group means (e.g. the FCM centres).
    """
    points, memberships = np.asarray(points, dtype=float), np.asarray(memberships, dtype=float)
    shifts = np.zeros((memberships.shape[1], points.shape[1])) if shifts is None else np.asarray(shifts, dtype=float)
    sums = memberships.T @ points - memberships.sum(axis=0)[:, None] * shifts
    squares = memberships.T @ points ** 2 - 2.0 * shifts * (memberships.T @ points) \
        + memberships.sum(axis=0)[:, None] * shifts ** 2
    return GroupMoments(memberships.sum(axis=0), sums, squares)


def group_variances(moments: GroupMoments, feature_variance, *, floor: float = 1e-6) -> np.ndarray:
    """``s_ck^2 = sum_i u_ic (x_ik - mean_ck)^2 / sum_i u_ic`` (eq. 9), floored; shape (C, d).

    The floor is ``floor * feature_variance_k`` (population variance over all rows), or 1 for a
    constant feature. A group without weight (an empty hard cluster) gets the feature variance;
    it enters no kernel.
    """
    feature_variance = np.asarray(feature_variance, dtype=float)
    reference = np.where(feature_variance > 0, feature_variance, 1.0)
    weights = np.asarray(moments.weight_sums, dtype=float)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        offset = moments.sums / weights
        variances = moments.square_sums / weights - offset ** 2
    variances = np.where(weights > 0, variances, reference)
    return np.maximum(variances, floor * reference)


def default_window_width(num_rows: int, num_features: int) -> float:
    """Silverman's normal-reference factor ``(4 / ((d + 2) N))^(1 / (d + 4))`` (the paper gives no h)."""
    return float((4.0 / ((num_features + 2.0) * num_rows)) ** (1.0 / (num_features + 4.0)))


# Pair sums ---------------------------------------------------------------------------------------


def _free(free_features, num_features: int) -> np.ndarray:
    return np.arange(num_features) if free_features is None else np.asarray(free_features, dtype=np.int64)


def kernel_log_peak(variances, w, h: float, free_features=None) -> float:
    """``max_cc' -1/2 sum_{k in F} log(2 pi h^2 (s_ck^2 + w_k^2 s_c'k^2))``: no kernel value of
    :func:`overlap_block_terms` at this w exceeds its exponential (the scale to pass as log_scale)."""
    variances = np.asarray(variances, dtype=float)
    free = _free(free_features, variances.shape[1])
    rows, weighted = variances[:, free], (np.asarray(w, dtype=float)[free] ** 2) * variances[:, free]
    pair_variance = (h * h) * (rows[:, None, :] + weighted[None, :, :])
    return float(np.max(-0.5 * np.sum(np.log(2.0 * np.pi * pair_variance), axis=-1)))


def overlap_block_terms(query_points, query_memberships, row_points, row_memberships, variances, w, *,
                        h: float, free_features=None, log_scale: float = 0.0, gradient: bool = True) -> OverlapTerms:
    """One block's share of the cross term C(w) of eqs. (15)-(18) (P is the same at w = 1).

    Parameters
    ----------
    query_points, query_memberships : ndarray (m, d), (m, C)
        The q-side points x_j (centred, unweighted; the weights are applied here) and u_jc'.
    row_points, row_memberships : ndarray (n, d), (n, C)
        The p-side points x_i of the block and u_ic.
    variances : ndarray (C, d)
        ``s_ck^2`` (:func:`group_variances`).
    w : ndarray (d,)
        Weights (entries outside ``free_features`` are ignored).
    h : float
        Window width.
    free_features : array of int, optional
        The features of the integral (the held-out one is integrated out); default all.
    log_scale : float
        Every kernel value is multiplied by ``exp(-log_scale)`` (see :func:`kernel_log_peak`).
    gradient : bool
        Also return d/dw_F of the block's sum.

    Returns
    -------
    OverlapTerms
        ``query_sums[j] = sum_i sum_cc' u_ic u_jc' exp(-log_scale)
        prod_{k in F} N(x_ik - w_k x_jk; 0, h^2 (s_ck^2 + w_k^2 s_c'k^2))`` and its w gradient.

    Notes
    -----
    Per group pair, only queries and rows with a positive membership enter, so hard groups
    evaluate each pair once. The exponent ``sum_k (x_ik - w_k x_jk)^2 / (2 v_k)`` is expanded
    into one matrix product (the data are centred, which keeps it well conditioned); the
    gradient's pair sums of ``t x_jk`` and ``t^2`` come from ``K X_F`` and ``K X_F^2``.
    """
    query_points, row_points = np.asarray(query_points, dtype=float), np.asarray(row_points, dtype=float)
    query_memberships = np.asarray(query_memberships, dtype=float)
    row_memberships = np.asarray(row_memberships, dtype=float)
    variances = np.asarray(variances, dtype=float)
    free = _free(free_features, variances.shape[1])
    w_free = np.asarray(w, dtype=float)[free]
    h2 = float(h) ** 2
    query_sums = np.zeros(query_points.shape[0])
    weight_gradient = np.zeros(free.size) if gradient else None
    for query_group in range(variances.shape[0]):
        query_rows = np.flatnonzero(query_memberships[:, query_group] > 0)
        if query_rows.size == 0:
            continue
        query_values = query_points[np.ix_(query_rows, free)]  # x_jk
        weighted_queries = query_values * w_free               # w_k x_jk
        query_weight = query_memberships[query_rows, query_group]
        query_spread = h2 * variances[query_group, free]       # b_k
        for row_group in range(variances.shape[0]):
            block_rows = np.flatnonzero(row_memberships[:, row_group] > 0)
            if block_rows.size == 0:
                continue
            row_values = row_points[np.ix_(block_rows, free)]  # x_ik
            pair_variance = h2 * variances[row_group, free] + w_free ** 2 * query_spread  # v_k
            half_precision = 0.5 / pair_variance
            exponent = ((weighted_queries ** 2) @ half_precision)[:, None] \
                + ((row_values ** 2) @ half_precision)[None, :] \
                - 2.0 * (weighted_queries * half_precision) @ row_values.T
            np.maximum(exponent, 0.0, out=exponent)
            log_norm = -0.5 * float(np.sum(np.log(2.0 * np.pi * pair_variance)))
            kernel = np.exp(log_norm - log_scale - exponent)
            kernel *= query_weight[:, None] * row_memberships[block_rows, row_group][None, :]
            per_query = kernel.sum(axis=1)
            query_sums[query_rows] += per_query
            if gradient:
                kernel_rows = kernel @ row_values                               # sum_i K x_ik
                kernel_row_squares = kernel @ row_values ** 2                   # sum_i K x_ik^2
                cross = np.einsum("jk,jk->k", query_values, kernel_rows)        # sum K x_ik x_jk
                query_squares = per_query @ query_values ** 2                   # sum K x_jk^2
                sum_t_x = cross - w_free * query_squares                        # sum K t x_jk
                sum_t2 = kernel_row_squares.sum(axis=0) - 2.0 * w_free * cross + w_free ** 2 * query_squares
                weight_gradient += sum_t_x / pair_variance + w_free * query_spread * (
                    sum_t2 / pair_variance ** 2 - per_query.sum() / pair_variance)
    return OverlapTerms(query_sums, weight_gradient)


# Criterion, projection, descent -----------------------------------------------------------------


def integrated_squared_error(self_sum: float, self_log_scale: float, cross_sum: float, cross_gradient,
                             cross_log_scale: float, w_free, *, num_rows: int, num_queries: int) -> ISEValue:
    """ISE (eq. 19) and its gradient (eq. 22) from the reduced pair sums.

    ``self_sum`` / ``cross_sum`` (and ``cross_gradient``) are the totals of
    :func:`overlap_block_terms` at w = 1 and at w, taken with the given log scales, over
    ``num_rows`` rows i and ``num_queries`` points j (all N rows, or the landmarks: the inner sum
    is then estimated as N / M times the landmark sum). ``Q = P / prod w_F`` needs no pair sum.
    Computed in logs: ``ISE = Q (1 + prod w - 2 C / Q)``.
    """
    w_free = np.asarray(w_free, dtype=float)
    if np.any(w_free <= 0):
        raise ValueError("every free weight must be > 0 (the ISE is infinite otherwise)")
    pair_count = np.log(float(num_rows)) + np.log(float(num_queries))
    log_self = np.log(self_sum) + self_log_scale - pair_count
    log_q = log_self - float(np.sum(np.log(w_free)))
    cross_ratio = np.exp(np.log(cross_sum) + cross_log_scale - pair_count - log_q) if cross_sum > 0 else 0.0
    bracket = 1.0 + np.exp(log_self - log_q) - 2.0 * cross_ratio
    if not bracket > 0:
        raise ValueError(f"the estimated ISE is not positive (1 + P/Q - 2C/Q = {bracket!r}); use more landmarks")
    cross_share = 2.0 * cross_ratio / bracket
    log_gradient = -1.0 / (bracket * w_free)
    if cross_sum > 0:
        log_gradient = log_gradient - cross_share * np.asarray(cross_gradient, dtype=float) / cross_sum
    return ISEValue(float(log_q + np.log(bracket)), log_gradient, float(1.0 + cross_share), float(cross_share))


def project_onto_simplex(v) -> np.ndarray:
    """Euclidean projection of v onto ``{w : w >= 0, sum w = 1}`` (exact; sort-based, O(d log d))."""
    v = np.asarray(v, dtype=float)
    descending = np.sort(v)[::-1]
    excess = np.cumsum(descending) - 1.0
    count = np.arange(1, v.size + 1)
    support = descending - excess / count > 0
    threshold = excess[support][-1] / count[support][-1]
    return np.maximum(v - threshold, 0.0)


def descend_ise(evaluate: Callable[[np.ndarray], Tuple[ISEValue, object]], num_free: int, *,
                learning_rate: float = 0.1, max_iter: int = 100, tol: float = 1e-6):
    """Projected gradient descent of log ISE over the free weights (Steps 3-6, eq. 23).

    ``evaluate(w_free)`` runs one pass and returns ``(ISEValue, payload)``. Starts at equal
    weights; a step is ``w <- project(w - eta grad log ISE)`` with the line search of choice 5.
    Stops when no weight moves by more than ``tol`` times the weights' spread (max - min) or by
    more than rounding, when no step decreases the ISE, or after ``max_iter`` steps. A single free
    weight is 1 (q = p, ISE = 0) and is returned without a pass (``value`` None).

    Returns
    -------
    w_free : ndarray (num_free,)
    info : dict with ``iterations``, ``evaluations``, ``log_ise`` (accepted values), ``stop``,
        ``value`` (the final ISEValue) and ``payload`` (the final evaluation's payload)
    """
    w = np.full(num_free, 1.0 / num_free)
    if num_free == 1:  # w = 1: q = p, ISE = 0; nothing to evaluate
        return w, {"iterations": 0, "evaluations": 0, "log_ise": [], "stop": "single free feature", "value": None,
                   "payload": None}
    value, payload = evaluate(w)
    info: Dict[str, Any] = {"iterations": 0, "evaluations": 1, "log_ise": [value.log_ise], "stop": "max_iter"}
    step = learning_rate
    for iteration in range(1, max_iter + 1):
        step = min(learning_rate, 2.0 * step) if iteration > 1 else learning_rate
        accepted = None
        for _ in range(_MAX_HALVINGS):
            trial = project_onto_simplex(w - step * value.log_gradient)
            if np.array_equal(trial, w):
                break
            if np.all(trial > 0):
                trial_value, trial_payload = evaluate(trial)
                info["evaluations"] += 1
                predicted = float(value.log_gradient @ (trial - w))
                if trial_value.log_ise <= value.log_ise + _SUFFICIENT_DECREASE * predicted:
                    accepted = trial
                    break
            step *= 0.5
        if accepted is None:
            info["stop"] = "no descent"
            break
        moved = float(np.max(np.abs(accepted - w)))
        w, value, payload = accepted, trial_value, trial_payload
        info["iterations"] = iteration
        info["log_ise"].append(value.log_ise)
        if moved <= tol * float(w.max() - w.min()) or moved <= 8.0 * np.finfo(float).eps * float(w.max()):
            info["stop"] = "converged"
            break
    info.update(value=value, payload=payload)
    return w, info


def landmark_positions(X, labels, landmarks: int, seed: int) -> np.ndarray:
    """Positions (ascending) of the ``landmarks`` rows with the smallest seeded content keys
    (:func:`~sparkfs.core.sampling.content_sample_keys` of the rows and their class indices,
    ties by position; seed + 1: not the FCM start), the rows the Spark layer samples."""
    keys = content_sample_keys(X, labels, None, seed + 1)
    return np.sort(smallest_key_positions(keys, np.arange(X.shape[0]), landmarks))


def landmark_relative_error(self_query_sums, cross_query_sums, value: ISEValue, num_rows: int) -> float:
    """Relative standard error of a landmark estimate of the ISE.

    With M landmarks drawn without replacement from N rows, the ISE is the mean over landmarks j
    of ``e_j = (1 + 1/prod w) a_j - 2 b_j`` (a_j, b_j: the landmark's sums over all rows at w = 1
    and at w), up to a constant factor; its standard error is ``sqrt((1 - M/N) / M) sd(e)``.
    Returned relative to the estimate: ``sqrt((1 - M/N) / M) sd(e_j / mean e)`` (0 when M = N).
    """
    a, b = np.asarray(self_query_sums, dtype=float), np.asarray(cross_query_sums, dtype=float)
    num_landmarks = a.size
    if num_landmarks < 2:
        return float("nan")
    cross_part = value.cross_share * b / b.mean() if b.mean() > 0 else 0.0
    normalised = value.self_share * a / a.mean() - cross_part
    return float(np.sqrt(max(0.0, 1.0 - num_landmarks / num_rows) / num_landmarks) * np.std(normalised, ddof=1))


# In-memory driver (the Spark layer mirrors it) --------------------------------------------------


def _pair_sums(points, memberships, query_positions, variances, w, *, h, free, log_scale, gradient, block_size):
    """Totals of :func:`overlap_block_terms` over query batches x row blocks, in memory."""
    query_sums = np.zeros(query_positions.size)
    weight_gradient = np.zeros(free.size)
    for start in range(0, query_positions.size, block_size):
        batch = query_positions[start:start + block_size]
        for row_start in range(0, points.shape[0], block_size):
            rows = slice(row_start, row_start + block_size)
            terms = overlap_block_terms(points[batch], memberships[batch], points[rows], memberships[rows],
                                        variances, w,
                                        h=h, free_features=free, log_scale=log_scale, gradient=gradient)
            query_sums[start:start + block_size] += terms.query_sums
            if gradient:
                weight_gradient += terms.weight_gradient
    return query_sums, weight_gradient


def _batches_by_blocks(query_positions, num_rows: int, block_size: int):
    """(query positions, row slice) for every query batch and row block of ``block_size``."""
    for start in range(0, query_positions.size, block_size):
        for row_start in range(0, num_rows, block_size):
            yield query_positions[start:start + block_size], slice(row_start, row_start + block_size)


def ise_run(pair_sums: Callable, *, num_rows: int, num_features: int, variances, h: float, fixed,
            num_queries: int, descent_options: dict) -> dict:
    """One descent (Steps 3-6) with feature ``fixed`` held at 0, whatever computes the pair sums.

    ``pair_sums(w, free, log_scale, gradient)`` returns the per-query totals of
    :func:`overlap_block_terms` over every row and its weight gradient (None when not asked):
    :func:`_pair_sums` in memory, one Spark pass per query batch in the Spark layer. One call at
    w = 1 (the P term), then one per ISE evaluation.
    """
    free = np.array([k for k in range(num_features) if k != fixed], dtype=np.int64)
    ones = np.ones(num_features)
    self_scale = kernel_log_peak(variances, ones, h, free)
    self_query_sums, _ = pair_sums(ones, free, self_scale, False)

    def evaluate(w_free):
        w = np.zeros(num_features)
        w[free] = w_free
        cross_scale = kernel_log_peak(variances, w, h, free)
        cross_query_sums, cross_gradient = pair_sums(w, free, cross_scale, True)
        value = integrated_squared_error(self_query_sums.sum(), self_scale, cross_query_sums.sum(), cross_gradient,
                                         cross_scale, w_free, num_rows=num_rows, num_queries=num_queries)
        return value, cross_query_sums

    w_free, info = descend_ise(evaluate, free.size, **descent_options)
    weights = np.zeros(num_features)
    weights[free] = w_free
    info.update(fixed_feature=fixed, weights=weights, weight_spread=float(w_free.max() - w_free.min()))
    if num_queries < num_rows and info["value"] is not None:
        info["ise_relative_standard_error"] = landmark_relative_error(self_query_sums, info["payload"], info["value"],
                                                                      num_rows)
    del info["payload"]
    return info


def _groups(X, y, points, info: dict, *, num_clusters, m, fcm_tol, fcm_max_iter, seed, memberships):
    """Step 2: ``(codes, memberships)``, the class indices the rows' content keys hash (0 without
    labels) and the rows' group memberships (n, C): the classes of ``y``, or fuzzy c-means on the
    centred ``points``; ``info`` gets the grouping."""
    num_rows = X.shape[0]
    codes = np.zeros(num_rows, dtype=np.int64)
    if y is not None:
        labels = np.asarray(y)
        if labels.shape != (num_rows,):
            raise ValueError(f"y must have shape ({num_rows},); got {labels.shape}")
        classes, codes = np.unique(labels, return_inverse=True)
        info.update(groups="labels", classes=classes)
        return codes, np.eye(classes.size)[codes]
    centres, fuzzy, fcm_info = fcm_in_memory(points, num_clusters, m=m, tol=fcm_tol, max_iter=fcm_max_iter,
                                             seed=seed, keys=content_sample_keys(X, codes, None, seed))
    info.update(groups="fcm", fcm=fcm_info, centres=centres + X.mean(axis=0))
    return codes, hard_memberships(fuzzy) if memberships == "hard" else fuzzy


class _PairData(NamedTuple):
    """What the in-memory pair sums read: the centred points, their memberships, the group
    variances, the query positions, the window width and the block size."""

    points: np.ndarray
    memberships: np.ndarray
    variances: np.ndarray
    query_positions: np.ndarray
    h: float
    block_size: int


def _marginal_runner(data: _PairData, options: dict) -> Callable:
    """``run(fixed, previous)``: one in-memory descent of the marginal reading
    (:func:`sparkfs.core.parzen_ise_marginal.marginal_run`)."""
    num_rows, num_features = data.points.shape
    scaled, scaled_variances = pim.standardised(data.points, data.points.var(axis=0), data.variances)
    memberships = data.memberships

    def pair_terms(w, with_self):
        return pim.summed_block_terms(
            (pim.marginal_block_terms(scaled[batch], memberships[batch], scaled[rows], memberships[rows],
                                      scaled_variances, w, h=data.h, with_self=with_self)
             for batch, rows in _batches_by_blocks(data.query_positions, num_rows, data.block_size)),
            num_features, with_self)

    def run(fixed, previous):
        return pim.marginal_run(pair_terms, num_rows=num_rows, num_features=num_features, fixed=fixed,
                                num_queries=data.query_positions.size, max_iter=options["descent"]["max_iter"],
                                tol=options["descent"]["tol"], previous=previous, rank_by=options["rank_by"])
    return run


def _image_runner(data: _PairData, descent_options: dict) -> Callable:
    """``run(fixed, previous)``: one in-memory descent of the image reading (:func:`ise_run`)."""
    num_rows, num_features = data.points.shape

    def pair_sums(w, free, log_scale, gradient):
        return _pair_sums(data.points, data.memberships, data.query_positions, data.variances, w, h=data.h,
                          free=free, log_scale=log_scale, gradient=gradient, block_size=data.block_size)

    def run(fixed, previous):
        return ise_run(pair_sums, num_rows=num_rows, num_features=num_features, variances=data.variances, h=data.h,
                       fixed=fixed, num_queries=data.query_positions.size, descent_options=descent_options)
    return run


def parzen_ise_in_memory(X, y=None, *, num_clusters: int = 3, m: float = 2.0, memberships: str = "hard",
                         h: Optional[float] = None, learning_rate: float = 0.1, max_iter: int = 100, tol: float = 1e-6,
                         fixed_feature="auto", landmarks: Optional[int] = None, seed: int = 0,
                         variance_floor: float = 1e-6, fcm_tol: float = 1e-6, fcm_max_iter: int = 300,
                         block_size: int = 1024, criterion: str = DEFAULT_CRITERION,
                         rank_by: str = DEFAULT_RANK_BY) -> Tuple[np.ndarray, dict]:
    """Parzen-ISE feature weights (Steps 1-7) on in-memory dense data.

    Parameters
    ----------
    X : ndarray (N, d)
    y : array-like (N,), optional
        Class labels: the groups. Without them, fuzzy c-means with ``num_clusters``, ``m``,
        ``fcm_tol``, ``fcm_max_iter`` and ``seed`` (:func:`~sparkfs.core.fuzzy_cmeans.fcm_in_memory`).
    memberships : {"hard", "soft"}
        How FCM memberships enter the density (choice 2); ignored with labels.
    h : float, optional
        Window width; default :func:`default_window_width` (N, d).
    learning_rate, max_iter, tol : the descent (:func:`descend_ise`).
    fixed_feature : None, int or "auto"
        The feature held at weight 0 (choice 4); None holds none; "auto" is choice 6.
    landmarks : int, optional
        Estimate the inner sums from this many seeded rows (:func:`landmark_positions`).
    variance_floor : float, choice 3.
    block_size : rows per block and queries per batch of the pair sums.
    criterion : {"marginal", "image"}, the reading (docs, section 0).
    rank_by : {"weights", "multipliers", "reference"}
        How the marginal optimum ranks the features (docs, section 0); the image reading ranks by weight.

    Returns
    -------
    weights : ndarray (d,), on the simplex; ``info["scores"]`` rank the features (``info["ranking"]``)
    info : dict: ``ranking``, ``groups`` ("labels" or "fcm"), ``fcm`` (its info), ``centres``,
        ``variances``, ``h``, ``fixed_feature`` (of the final run) and ``runs`` (each run's
        descent info: weights, iterations, evaluations, log_ise, stop, value, weight_spread and,
        with landmarks, ``ise_relative_standard_error``).

    Notes
    -----
    Cost: FCM O(N C d) per iteration; then one O(N M d) pass for P per run and one per ISE
    evaluation (M = N, or the landmarks); C^2 times that with soft memberships.
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1 or not np.all(np.isfinite(X)):
        raise ValueError(f"parzen_ise_in_memory needs a finite X of shape (N >= 2, d >= 1); got shape {X.shape}")
    num_rows, num_features = X.shape
    options = check_options(num_features, memberships=memberships, fixed_feature=fixed_feature, landmarks=landmarks,
                            max_iter=max_iter, block_size=block_size, learning_rate=learning_rate, tol=tol,
                            variance_floor=variance_floor, h=h, criterion=criterion, rank_by=rank_by)
    variance_floor, descent_options = options["variance_floor"], options["descent"]
    marginal = options["criterion"] == "marginal"
    h = options["h"] if options["h"] is not None else (
        pim.marginal_window_width(num_rows) if marginal else default_window_width(num_rows, num_features))
    points = X - X.mean(axis=0)                                                          # choice 1
    info = {"h": h, "criterion": options["criterion"]}
    codes, group_memberships = _groups(X, y, points, info, num_clusters=num_clusters, m=m, fcm_tol=fcm_tol,  # Step 2
                                       fcm_max_iter=fcm_max_iter, seed=seed, memberships=memberships)
    first = group_moment_terms(points, group_memberships)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = np.nan_to_num(first.sums / first.weight_sums[:, None])
    variances = group_variances(group_moment_terms(points, group_memberships, means), points.var(axis=0),
                                floor=variance_floor)
    info["variances"] = variances
    if landmarks is None or landmarks >= num_rows:
        query_positions = np.arange(num_rows)
    else:
        query_positions = landmark_positions(X, codes, landmarks, seed)
    info["num_queries"] = query_positions.size
    pair_data = _PairData(points, group_memberships, variances, query_positions, h, block_size)
    run = _marginal_runner(pair_data, options) if marginal else _image_runner(pair_data, descent_options)
    runs = runs_with_held_out_feature(run, num_features, fixed_feature)
    weights = runs[-1]["weights"]
    scores = final_scores(runs)
    info.update(runs=runs, fixed_feature=runs[-1]["fixed_feature"], scores=scores, ranking=rank_features(scores))
    return weights, info
