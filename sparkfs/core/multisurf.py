"""The MultiSURF family: SURF, SURF*, MultiSURF and MultiSURF* (pure NumPy/SciPy).

Relief-based scores whose neighbours are every row inside a distance threshold instead of the k
nearest. Papers: Greene et al. 2009 (SURF), Greene et al. 2010 (SURF*), Granizo-Mackenzie &
Moore 2013 (MultiSURF*) and Urbanowicz et al. 2018 (MultiSURF), as scikit-rebate implements
them (``skrebate/surf.py``, ``surfstar.py``, ``multisurf.py``, ``multisurfstar.py`` and
``scoring_utils.compute_score``): the definitions below are scikit-rebate's, equation by
equation, so that the scores equal its ``feature_importances_`` on its kind of data
(continuous features, no missing values, two or up to ten classes).

Definitions (n rows, query q, another row r, ``d(q, r)`` the distance, ``diff_f(q, r) = |x_qf - x_rf|``
in the scaled units)
--------------------------------------------------------------------------------------------
* (T1) **SURF's threshold**, one for every query: ``T = sum_{q, r} d(q, r) / n^2``, the mean of the
  n x n distance matrix, its zero diagonal included (scikit-rebate's ``dists_flat.mean()``).
  With a sample of m queries: ``sum_q sum_r d(q, r) / (m n)``, the same mean over the query rows.
* (T2) **MultiSURF's thresholds**, per query: ``mu_q`` and ``sigma_q`` the mean and the population
  standard deviation (ddof 0) of ``d(q, r)`` over the n - 1 other rows; near ``mu_q - sigma_q / 2``,
  far ``mu_q + sigma_q / 2``.
* (S1) **Near set** ``N(q) = {r != q : d(q, r) < near_q}``; **far set** ``F(q) = {r != q : d(q, r) > far_q}``
  (SURF*: near and far threshold both T; MultiSURF*: T2's two). Strict inequalities.
* (S2) **Near term** of a set S for query q of class y, with ``H`` its hits, ``M_c`` its rows of
  class c != y, ``N_H = |H|``, ``N_M = sum_c |M_c|``, ``D_X = sum_{r in X} diff(q, r)`` (per feature)
  and C the number of classes::

      near(S) = - D_H / N_H  +  (C - 1) / N_M^2  sum_{c != y} |M_c| D_{M_c}

  each of the two parts only when its count is not 0. With two classes this is scikit-rebate's
  binary formula ``-D_H / N_H + D_M / N_M``; with more, its multi-class one (each miss class
  weighted by its share of the misses in S, times C - 1).
* (S3) **Far term** (MultiSURF*'s ``near=False`` scoring): ``near(S)`` with every ``diff`` replaced by
  ``1 - diff``, i.e. ``D_X`` by ``|X| - D_X``.
* (S4) **Scores**: ``score = (1/n) sum_q t_q`` with
  SURF and MultiSURF ``t_q = near(N(q))``; SURF* ``t_q = near(N(q)) - near(F(q))``;
  MultiSURF* ``t_q = near(N(q)) + far(F(q))``. With m sampled queries the mean is over them.
* (S5) **Continuous endpoint** (scikit-rebate's ``label_type="continuous"``): a row r is a *hit* of
  query q when ``|y_q - y_r| < sd(y)``, the target's sample standard deviation (ddof 1, over every
  row), else a *miss*; S2 and S3 are then the two-class formulas ``-D_H / N_H + D_M / N_M`` with
  these hits and misses (:func:`pair_classes`: the class of a pair, 0 a hit, 1 a miss, every query
  of class 0). The sets S1 do not depend on the labels.

Every part is additive over blocks of rows, which is what the Spark layer's three passes sum
when the queries are a sample (or do not fit one batch): the distance moments
(:func:`distance_moments`, merged by :func:`merge_moments`) give the thresholds; the counts per
(query, set, class) (:func:`group_counts`) give each pair's weight in S4 (:func:`term_weights`,
:func:`pair_coefficients`); and the weighted diff sums (:func:`diff_sums`) are the scores'
numerators. When a task sees every row for its queries, :func:`every_row_terms` computes all of
it from one distance table per chunk of queries (each pair's distance once; the loops over the
table in Numba, :mod:`sparkfs.core.multisurf_kernel`).

Deviations and additions (scikit-rebate has neither)
----------------------------------------------------
1. **Sparse rows** (CSR) are scored as the same dense rows would be (absent = 0), the work
   following the non-zeros.
2. **Euclidean distance** (``metric="euclidean"``) besides scikit-rebate's Manhattan on
   range-scaled features; only the neighbour sets change. The selectors' ``"cosine"`` is Euclidean
   on rows divided by their norm (the callers divide them), and their default on term-like data
   (:func:`default_distance`).
3. **Instance weights** ``s_r >= 0`` (scikit-rebate's ``weights`` are feature weights of its
   iterative variants, something else). A row of weight s counts as s copies of itself
   everywhere except as its own neighbour: T1 is ``sum_{q, r} s_q s_r d / (sum s)^2`` (over the
   queries: ``sum_q s_q sum_r s_r d / (sum_q s_q  sum_r s_r)``); T2's mean and variance are
   weighted by ``s_r``; in S2 and S3 the counts are weight sums and ``D_X = sum_{r in X} s_r diff``;
   and S4 is ``sum_q s_q t_q / sum_q s_q``. All weights 1 is the unweighted definition exactly.
   Not weighted: the feature scaling and S5's bound (of the targets as given).
4. No discrete-feature handling: scikit-rebate treats a feature with at most 10 distinct values
   as discrete (Hamming ``diff``); here every feature is numeric (``diff`` = the scaled absolute
   difference). On such features the scores differ from scikit-rebate's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional, Tuple, Union

import numpy as np
import scipy.sparse as sp

from sparkfs.core import multisurf_kernel, weighted_diff_kernel
from sparkfs.core.neighbours import HIT, MISS, check_metric, pair_classes, pairwise_distances  # noqa: F401 (S5)
from sparkfs.core.relief import TERM_LIKE_DISTANCE, is_term_like
from sparkfs.core.sparse_input import is_sparse

Matrix = Union[np.ndarray, sp.csr_matrix]

#: The variants (the selector's ``variant`` and the CLI's method names).
VARIANTS = ("multisurf", "multisurf-star", "surf", "surf-star")
#: Variants with far terms.
FAR_VARIANTS = ("multisurf-star", "surf-star")
#: Variants with MultiSURF's per-query thresholds (T2); the others use SURF's global one (T1).
PER_QUERY_THRESHOLD_VARIANTS = ("multisurf", "multisurf-star")
#: The selectors' distances: scikit-rebate's Manhattan, Euclidean, and cosine (Euclidean on unit rows).
METRICS = ("manhattan", "euclidean", "cosine")
#: scikit-rebate's (metric, scaling): the selectors' default on data that is not term-like.
SCIKIT_REBATE_DISTANCE = ("manhattan", "range")


def default_distance(minimum, non_zeros, num_rows: int):
    """``(metric, scaling)`` when ``preset="default"`` and neither is set: the Relief family's
    :data:`sparkfs.core.relief.TERM_LIKE_DISTANCE` (cosine, no scaling) on term-like data, else
    scikit-rebate's. Range-scaled Manhattan distances make a rare term's one occurrence as far as a
    frequent term's whole range, so on term counts the near rows are the short documents, not those
    of the query's class (benchmarks/results/relief_text.md measures both on the shared text sets)."""
    return TERM_LIKE_DISTANCE if is_term_like(minimum, non_zeros, num_rows) else SCIKIT_REBATE_DISTANCE
#: Codes of :func:`pair_sets`.
NEAR, FAR, OUTSIDE = 0, 1, -1


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"unknown MultiSURF variant {variant!r}: use one of {VARIANTS}")
    return variant


def distances(query_matrix: Matrix, row_matrix: Matrix, metric: str) -> np.ndarray:
    """``d(q, r)`` for every query and row (m, n): Manhattan, or Euclidean (not squared).

    Euclidean on dense rows goes through the GEMM identity with both sides shifted by the
    queries' mean rounded to integers (as the neighbour search): no cancellation for data far
    from 0, and integer data stay exact."""
    check_metric(metric)
    shift = None
    if metric == "euclidean" and not sp.issparse(query_matrix) and not sp.issparse(row_matrix) and query_matrix.size:
        shift = np.round(np.asarray(query_matrix).mean(axis=0))
    values = pairwise_distances(query_matrix, row_matrix, metric, shift=shift)
    return np.sqrt(values) if metric == "euclidean" else values


@dataclass(frozen=True)
class DistanceMoments:
    """Per query, over a set of other rows: the weight (row count) and the weighted mean and sum
    of squared deviations of the distances. Merged over blocks by :func:`merge_moments`."""

    weight: np.ndarray
    mean: np.ndarray
    m2: np.ndarray

    @property
    def total(self) -> np.ndarray:
        """``sum_r s_r d(q, r)`` per query."""
        return self.weight * self.mean

    @property
    def std(self) -> np.ndarray:
        """The population (ddof 0) standard deviation, as ``np.std``."""
        return np.sqrt(np.divide(self.m2, self.weight, out=np.zeros_like(self.m2), where=self.weight > 0))


def distance_moments(distance_table: np.ndarray, others: np.ndarray, row_weights=None) -> DistanceMoments:
    """:class:`DistanceMoments` of each query's distances to the rows where ``others`` is True.

    Two-pass over the block (its mean first, then the deviations): no cancellation."""
    weights = others.astype(np.float64)
    if row_weights is not None:
        weights = weights * np.asarray(row_weights, dtype=np.float64)[None, :]
    total_weight = weights.sum(axis=1)
    mean = np.divide((weights * distance_table).sum(axis=1), total_weight, out=np.zeros(total_weight.shape),
                     where=total_weight > 0)
    m2 = (weights * (distance_table - mean[:, None]) ** 2).sum(axis=1)
    return DistanceMoments(total_weight, mean, m2)


def merge_moments(left: DistanceMoments, right: DistanceMoments) -> DistanceMoments:
    """Chan, Golub & LeVeque's pairwise update: the moments of the union of two disjoint sets."""
    weight = left.weight + right.weight
    delta = right.mean - left.mean
    share = np.divide(right.weight, weight, out=np.zeros(weight.shape), where=weight > 0)
    mean = left.mean + delta * share
    m2 = left.m2 + right.m2 + delta ** 2 * left.weight * share
    return DistanceMoments(weight, mean, m2)


def surf_threshold(moments: DistanceMoments, query_weights, total_row_weight: float) -> float:
    """T1: ``sum_q s_q sum_{r != q} s_r d(q, r) / (sum_q s_q  sum_r s_r)`` (the query's zero distance
    to itself counted in the denominator: scikit-rebate's mean of the full n x n matrix)."""
    query_weights = np.asarray(query_weights, dtype=np.float64)
    denominator = query_weights.sum() * float(total_row_weight)
    if denominator <= 0:
        raise ValueError("the rows' weights sum to 0: no distance to average")
    return float(np.dot(query_weights, moments.total) / denominator)


def thresholds(variant: str, moments: DistanceMoments, query_weights=None,
               total_row_weight: Optional[float] = None) -> Tuple[np.ndarray, np.ndarray]:
    """(near, far) threshold per query: T2 for MultiSURF(*), T1 for both with SURF(*)."""
    check_variant(variant)
    if variant in PER_QUERY_THRESHOLD_VARIANTS:
        half_band = moments.std / 2.0
        return moments.mean - half_band, moments.mean + half_band
    if query_weights is None:
        query_weights = np.ones(moments.mean.shape)
    if total_row_weight is None:
        raise ValueError("SURF's threshold needs the total row weight (n without weights)")
    level = np.full(moments.mean.shape, surf_threshold(moments, query_weights, total_row_weight))
    return level, level.copy()


def pair_sets(distance_table: np.ndarray, others: np.ndarray, near, far, with_far: bool) -> np.ndarray:
    """S1: per (query, row) ``NEAR``, ``FAR`` (only ``with_far``) or ``OUTSIDE`` (the query itself too)."""
    near = np.asarray(near, dtype=np.float64)[:, None]
    far = np.asarray(far, dtype=np.float64)[:, None]
    codes = np.full(distance_table.shape, OUTSIDE, dtype=np.int8)
    codes[others & (distance_table < near)] = NEAR
    if with_far:
        codes[others & (distance_table > far)] = FAR
    return codes


def hit_bound_of_sums(n_rows: int, target_sum, target_sum_squares) -> float:
    """S5's bound, the sample standard deviation (ddof 1) of the target, from the exact sums of y
    and y^2 (:class:`fractions.Fraction`, :func:`sparkfs.core.exact_sums.exact_values`): the variance
    ``(Q - S^2 / n) / (n - 1)`` is formed exactly and rounded once, so the bound has the same bits
    for any partitioning (and, in memory, as on Spark), within one unit in the last place of NumPy's
    ``std(ddof=1)``."""
    n = int(n_rows)
    if n < 2:
        raise ValueError("a continuous endpoint needs at least two rows for its standard deviation")
    variance = (Fraction(target_sum_squares) - Fraction(target_sum) ** 2 / n) / (n - 1)
    return math.sqrt(float(variance))


def continuous_hit_bound(targets) -> float:
    """S5's bound of in-memory targets (:func:`hit_bound_of_sums` of their exact sums)."""
    from sparkfs.core.exact_sums import exact_values
    from sparkfs.core.regression import exact_target_sums

    targets = np.asarray(targets, dtype=np.float64)
    return hit_bound_of_sums(targets.size, *exact_values(exact_target_sums(targets)))


def group_counts(codes: np.ndarray, row_labels, num_classes: int, row_weights=None) -> np.ndarray:
    """Per (query, set, class) the number of rows (their weight sum with weights), shape (m, 2, C).

    ``row_labels`` is each row's class (n,), or each pair's (m, n; :func:`pair_classes`).
    Additive over blocks of rows: a pass sums the blocks' counts."""
    row_labels = np.asarray(row_labels, dtype=np.int64)
    weights = np.ones(codes.shape[1]) if row_weights is None else np.asarray(row_weights, dtype=np.float64)
    counts = np.zeros((codes.shape[0], 2, num_classes))
    for code in (NEAR, FAR):
        inside = (codes == code) * weights[None, :]
        for c in range(num_classes):
            if row_labels.ndim == 1:
                counts[:, code, c] = inside[:, row_labels == c].sum(axis=1)
            else:
                counts[:, code, c] = np.where(row_labels == c, inside, 0.0).sum(axis=1)
    return counts


def _near_weights(counts: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """S2 as weights: ``near(S) = sum_c w_c D_c`` with ``w_y = -1 / N_H`` and ``w_c = (C - 1) |M_c| / N_M^2``
    (0 where the count is 0). counts (m, C) -> weights (m, C)."""
    num_queries, num_classes = counts.shape
    rows = np.arange(num_queries)
    hit_count = counts[rows, labels]
    miss_counts = counts.copy()
    miss_counts[rows, labels] = 0.0
    miss_total = miss_counts.sum(axis=1)
    weights = np.divide((num_classes - 1) * miss_counts, (miss_total ** 2)[:, None], out=np.zeros(counts.shape),
                        where=miss_total[:, None] > 0)
    weights[rows, labels] = np.divide(-1.0, hit_count, out=np.zeros(num_queries), where=hit_count > 0)
    return weights


def term_weights(variant: str, counts: np.ndarray, query_labels) -> Tuple[np.ndarray, np.ndarray]:
    """S4's ``t_q = sum_{set, c} W[q, set, c] D[q, set, c] + K_q`` (per feature) from the totals of
    :func:`group_counts` over all rows: returns W (m, 2, C) and K (m,).

    SURF* subtracts the near form of the far set (``W_far = -w(far counts)``); MultiSURF* adds
    the far form S3, ``sum_c w_c (|F_c| - D_c)``: ``W_far = -w``, ``K = sum_c w_c |F_c|``."""
    check_variant(variant)
    labels = np.asarray(query_labels, dtype=np.int64)
    weights = np.zeros(counts.shape)
    weights[:, NEAR] = _near_weights(counts[:, NEAR], labels)
    constants = np.zeros(counts.shape[0])
    if variant in FAR_VARIANTS:
        far_weights = _near_weights(counts[:, FAR], labels)
        weights[:, FAR] = -far_weights
        if variant == "multisurf-star":
            constants = (far_weights * counts[:, FAR]).sum(axis=1)
    return weights, constants


def pair_coefficients(codes: np.ndarray, row_labels, weights: np.ndarray, row_weights=None) -> np.ndarray:
    """``a[q, r] = W[q, set(q, r), class(r)] s_r`` (0 outside both sets), shape (m, n); ``row_labels``
    (n,) or each pair's class (m, n), as :func:`group_counts`."""
    row_labels = np.asarray(row_labels, dtype=np.int64)
    num_classes = weights.shape[2]
    group = np.maximum(codes, 0).astype(np.int64) * num_classes + (row_labels if row_labels.ndim == 2
                                                                   else row_labels[None, :])
    coefficients = np.take_along_axis(weights.reshape(weights.shape[0], 2 * num_classes), group, axis=1)
    coefficients[codes < 0] = 0.0
    if row_weights is not None:
        coefficients *= np.asarray(row_weights, dtype=np.float64)[None, :]
    return coefficients


def diff_sums(query_matrix: Matrix, row_matrix: Matrix, coefficients: np.ndarray, *, per_query: bool = False):
    """``sum_r a[q, r] |x_q - x_r|`` per feature: summed over the queries (p,), or per query (m, p).

    Additive over blocks of rows. Dense: a Numba loop over the pairs of non-zero weight
    (:mod:`sparkfs.core.weighted_diff_kernel`; without Numba one (n, p) difference per query). CSR: ``sum_r a |x_r|``
    from the block's non-zeros, corrected on the query's non-zero features only,
    ``O(nnz(block) + n nnz(q))`` per query (sparse rows stay sparse).
    """
    num_queries, num_features = query_matrix.shape
    sparse = sp.issparse(row_matrix) or sp.issparse(query_matrix)
    if not sparse and weighted_diff_kernel.AVAILABLE:
        return weighted_diff_kernel.weighted_abs_diffs(query_matrix, row_matrix, coefficients, per_query)
    out = np.zeros((num_queries, num_features)) if per_query else np.zeros(num_features)
    if sparse:
        rows_csc = sp.csc_matrix(row_matrix)
        abs_rows_t = sp.csr_matrix(abs(sp.csr_matrix(row_matrix)).T)
        queries = sp.csr_matrix(query_matrix)
    for q in np.flatnonzero(np.any(coefficients != 0, axis=1)):
        coefficient = coefficients[q]
        if not sparse:
            sums = coefficient @ np.abs(row_matrix - query_matrix[q])
        else:
            sums = np.asarray(abs_rows_t @ coefficient).ravel()
            start, stop = queries.indptr[q], queries.indptr[q + 1]
            features, values = queries.indices[start:stop], queries.data[start:stop]
            if features.size:
                block_values = rows_csc[:, features].toarray()
                sums[features] += coefficient @ (np.abs(values[None, :] - block_values) - np.abs(block_values))
        if per_query:
            out[q] = sums
        else:
            out += sums
    return out


def scores_of_terms(terms: np.ndarray, query_weights=None) -> np.ndarray:
    """S4: the (weighted) mean of the queries' terms."""
    if query_weights is None:
        return terms.mean(axis=0)
    query_weights = np.asarray(query_weights, dtype=np.float64)
    mass = query_weights.sum()
    if mass <= 0:
        raise ValueError("the queries' weights sum to 0: no term to average")
    return query_weights @ terms / mass


def multisurf_scores(rows: Matrix, labels, variant: str = "multisurf", *, metric: str = "manhattan",
                     scale=None, weights=None, query_positions=None, return_terms: bool = False,
                     hit_bound: Optional[float] = None):
    """The scores of ``variant`` on in-memory rows (every row a query unless ``query_positions``).

    Parameters
    ----------
    rows : ndarray or csr_matrix (n, p)
        Raw features; ``scale`` (p,) divides them first (``max - min`` is scikit-rebate's).
    labels : array (n,) of class indices 0..C-1, or the targets with ``hit_bound``
    variant : one of :data:`VARIANTS`
    metric : {"manhattan", "euclidean"}
    weights : array (n,), optional
        Instance weights (module note 3).
    query_positions : array of int, optional
        The query rows (default: all).
    hit_bound : float, optional
        A continuous endpoint (S5): ``labels`` are the targets, hits within this bound.

    Returns
    -------
    ndarray (p,): the scores; with ``return_terms`` also the (m, p) terms.

    Notes
    -----
    Holds the m x n distance table: for tests and small data. The Spark layer runs the same
    functions block by block.
    """
    check_variant(variant)
    if scale is not None:
        inverse = 1.0 / np.asarray(scale, dtype=np.float64)
        rows = sp.csr_matrix(rows.multiply(inverse[None, :])) if is_sparse(rows) else rows * inverse
    num_rows = rows.shape[0]
    positions = np.arange(num_rows) if query_positions is None else np.asarray(query_positions, dtype=np.int64)
    queries = rows[positions]
    table = distances(queries, rows, metric)
    others = np.ones(table.shape, dtype=bool)
    others[np.arange(positions.size), positions] = False
    moments = distance_moments(table, others, weights)
    query_weights = None if weights is None else np.asarray(weights, dtype=np.float64)[positions]
    total_weight = float(num_rows if weights is None else np.sum(weights))
    near, far = thresholds(variant, moments, query_weights, total_weight)
    codes = pair_sets(table, others, near, far, variant in FAR_VARIANTS)
    if hit_bound is None:
        labels = np.asarray(labels, dtype=np.int64)
        classes, num_classes, query_classes = labels, int(labels.max()) + 1, labels[positions]
    else:
        targets = np.asarray(labels, dtype=np.float64)
        classes, num_classes = pair_classes(targets[positions], targets, hit_bound), 2
        query_classes = np.full(positions.size, HIT)
    counts = group_counts(codes, classes, num_classes, weights)
    term_weight, constants = term_weights(variant, counts, query_classes)
    terms = diff_sums(queries, rows, pair_coefficients(codes, classes, term_weight, weights), per_query=True)
    terms += constants[:, None]
    scores = scores_of_terms(terms, query_weights)
    return (scores, terms) if return_terms else scores


# --------------------------------------------------------------------------------------------
# Every row a query: one distance table per chunk of queries
# --------------------------------------------------------------------------------------------

#: Bytes of one chunk's distance table (its queries x every row) in :func:`every_row_terms`.
TABLE_BYTES = 2**25


def own_columns(query_ids, row_ids) -> np.ndarray:
    """Each query's column among the rows (``row_ids`` sorted), -1 when it is not one of them."""
    query_ids = np.asarray(query_ids, dtype=np.int64)
    row_ids = np.asarray(row_ids, dtype=np.int64)
    if row_ids.size == 0:
        return np.full(query_ids.shape, -1, dtype=np.int64)
    position = np.minimum(np.searchsorted(row_ids, query_ids), row_ids.size - 1)
    return np.where(row_ids[position] == query_ids, position, -1).astype(np.int64)


def _others(table: np.ndarray, own_column: np.ndarray) -> np.ndarray:
    others = np.ones(table.shape, dtype=bool)
    present = own_column >= 0
    others[np.flatnonzero(present), own_column[present]] = False
    return others


def _unit_weights(row_weights, size: int) -> np.ndarray:
    return np.ones(size) if row_weights is None else np.asarray(row_weights, dtype=np.float64)


def table_moments(table: np.ndarray, own_column: np.ndarray, row_weights=None) -> DistanceMoments:
    """:func:`distance_moments` of each query's row of ``table`` without its own column (T2's
    moments over every other row, when the table holds every row)."""
    if multisurf_kernel.AVAILABLE:
        return DistanceMoments(*multisurf_kernel.moments(table, own_column, _unit_weights(row_weights, table.shape[1])))
    return distance_moments(table, _others(table, own_column), row_weights)


def chunk_terms(variant: str, queries: Matrix, rows: Matrix, table: np.ndarray, own_column: np.ndarray, near, far,
                row_labels, row_weights, query_labels, query_weights, num_classes: int, *,
                hit_bound: Optional[float] = None):
    """S1-S4 for a chunk of queries against *every* row, from their distance table ``table`` (m, n).

    With ``hit_bound`` (S5) the labels are the targets and ``num_classes`` is 2 (hit, miss).
    Returns ``(sums, counts)``: ``sum_q s_q t_q`` per feature (p,), the numerator of S4, and the
    (m, 2, C) counts of :func:`group_counts` (all rows are in the table, so they are totals)."""
    with_far = variant in FAR_VARIANTS
    query_weights = _unit_weights(query_weights, table.shape[0])
    weights_of_rows = _unit_weights(row_weights, table.shape[1])
    kernel_labels = dict(query_labels=query_labels, hit_bound=hit_bound)
    def classes():  # the NumPy steps' labels: per row, or per pair on a continuous endpoint
        return row_labels if hit_bound is None else pair_classes(query_labels, row_labels, hit_bound)

    if multisurf_kernel.AVAILABLE:
        counts = multisurf_kernel.set_counts(table, own_column, near, far, with_far, row_labels, weights_of_rows,
                                             num_classes, **kernel_labels)
    else:
        codes = pair_sets(table, _others(table, own_column), near, far, with_far)
        counts = group_counts(codes, classes(), num_classes, row_weights)
    weights, constants = term_weights(variant, counts, query_labels if hit_bound is None
                                      else np.full(table.shape[0], HIT))
    weights *= query_weights[:, None, None]
    if multisurf_kernel.AVAILABLE and not (sp.issparse(queries) or sp.issparse(rows)):
        sums = multisurf_kernel.weighted_diffs(queries, rows, table, own_column, near, far, with_far, row_labels,
                                               weights_of_rows, weights, **kernel_labels)
    else:
        codes = pair_sets(table, _others(table, own_column), near, far, with_far)
        sums = diff_sums(queries, rows, pair_coefficients(codes, classes(), weights, row_weights))
    return sums + np.dot(query_weights, constants), counts


def chunk_size(num_rows: int, block_size: int) -> int:
    """Queries per distance table: at most ``block_size`` and :data:`TABLE_BYTES` of table."""
    return max(1, min(int(block_size), TABLE_BYTES // (8 * max(int(num_rows), 1))))


def every_row_terms(variant: str, queries: Matrix, query_ids, query_labels, query_weights, rows: Matrix, row_ids,
                    row_labels, row_weights, num_classes: int, metric: str, *, level: Optional[float] = None,
                    block_size: int = 2048, hit_bound: Optional[float] = None):
    """The queries' S4 numerators against every row, each pair's distance computed once.

    Per chunk of queries (:func:`chunk_size`): the distance table to all n rows (``row_ids``
    sorted; a query's own row, if among them, is left out), T2's thresholds from its rows
    (MultiSURF, MultiSURF*) or SURF's ``level`` (T1, from a first pass: :func:`every_row_moments`),
    then :func:`chunk_terms` on the same table (``hit_bound``: a continuous endpoint, S5, whose
    labels are the targets). Returns a dict: ``sums`` (p,) = ``sum_q s_q t_q``,
    ``near`` and ``far`` (m,) the thresholds, ``counts`` (m, 2, C).
    """
    check_variant(variant)
    if (level is None) != (variant in PER_QUERY_THRESHOLD_VARIANTS):
        raise ValueError("SURF's threshold (level) is given for surf and surf-star, and only for them")
    query_ids = np.asarray(query_ids, dtype=np.int64)
    num_queries = query_ids.size
    out = {"sums": np.zeros(queries.shape[1]), "near": np.zeros(num_queries), "far": np.zeros(num_queries),
           "counts": np.zeros((num_queries, 2, num_classes))}
    step = chunk_size(rows.shape[0], block_size)
    for start in range(0, num_queries, step):
        part = slice(start, min(start + step, num_queries))
        table = distances(queries[part], rows, metric)
        own = own_columns(query_ids[part], row_ids)
        if level is None:
            near, far = thresholds(variant, table_moments(table, own, row_weights))
        else:
            near = far = np.full(part.stop - part.start, float(level))
        sums, out["counts"][part] = chunk_terms(
            variant, queries[part], rows, table, own, near, far, row_labels, row_weights,
            np.asarray(query_labels)[part], None if query_weights is None else np.asarray(query_weights)[part],
            num_classes, hit_bound=hit_bound)
        out["sums"] += sums
        out["near"][part], out["far"][part] = near, far
    return out


def every_row_moments(queries: Matrix, query_ids, rows: Matrix, row_ids, row_weights, metric: str, *,
                      block_size: int = 2048) -> DistanceMoments:
    """The queries' :class:`DistanceMoments` against every other row (SURF's first pass: T1 needs
    every query's distance sum before any set is known)."""
    query_ids = np.asarray(query_ids, dtype=np.int64)
    parts = []
    step = chunk_size(rows.shape[0], block_size)
    for start in range(0, query_ids.size, step):
        part = slice(start, min(start + step, query_ids.size))
        table = distances(queries[part], rows, metric)
        parts.append(table_moments(table, own_columns(query_ids[part], row_ids), row_weights))
    if not parts:
        return DistanceMoments(np.zeros(0), np.zeros(0), np.zeros(0))
    return DistanceMoments(*(np.concatenate([getattr(m, name) for m in parts]) for name in ("weight", "mean", "m2")))


# --------------------------------------------------------------------------------------------
# TuRF
# --------------------------------------------------------------------------------------------


def turf_keep_count(num_current: int, remove_fraction: float) -> int:
    """Features kept after a TuRF round: ``ceil(current x (1 - fraction))`` (scikit-rebate's TURF)."""
    return int(np.ceil(num_current * (1.0 - remove_fraction)))


def turf_rounds(remove_fraction: float) -> int:
    """Most elimination rounds: ``int(1 / fraction)`` (scikit-rebate's TURF with a float ``pct``)."""
    return int(1.0 / remove_fraction)


def turf_kept(current: np.ndarray, round_scores: np.ndarray, remove_fraction: float) -> np.ndarray:
    """The features of ``current`` kept after a round: the top ``turf_keep_count`` by score (ties to
    the lower index), returned in index order."""
    keep = turf_keep_count(current.size, remove_fraction)
    order = np.argsort(-np.asarray(round_scores, dtype=np.float64), kind="mergesort")
    return np.sort(current[order[:keep]])


def turf_scores(num_features: int, final_features: np.ndarray, final_scores: np.ndarray, eliminated) -> np.ndarray:
    """scikit-rebate's TuRF scores: the last fit's scores for the features that survived; each
    eliminated tier below them, ``min - 0.01 x range x (k + 1)`` for the k-th tier counted from
    the last eliminated (range 1 when all final scores are equal)."""
    final_scores = np.asarray(final_scores, dtype=np.float64)
    scores = np.zeros(num_features)
    scores[final_features] = final_scores
    low, high = float(final_scores.min()), float(final_scores.max())
    penalty = 0.01 * (high - low if high != low else 1.0)
    for k, tier in enumerate(reversed(list(eliminated))):
        scores[np.asarray(tier, dtype=np.int64)] = low - penalty * (k + 1)
    return scores


def turf(score_function, num_features: int, remove_fraction: float = 0.5, keep: int = 100):
    """TuRF (Moore & White 2007) as scikit-rebate's ``TURF``: score, drop the lowest ``remove_fraction``,
    re-score the rest, at most ``int(1 / remove_fraction)`` rounds or until at most ``keep`` remain;
    then one final fit on what remains.

    ``score_function(features)`` returns the scores of the inner method on those feature indices.
    Returns (scores (p,), the final features, the eliminated tiers).
    """
    if not 0.0 < remove_fraction < 1.0:
        raise ValueError(f"remove_fraction must be in (0, 1); got {remove_fraction!r}")
    keep = min(int(keep), num_features)
    current = np.arange(num_features)
    eliminated = []
    for _ in range(turf_rounds(remove_fraction)):
        kept = turf_kept(current, score_function(current), remove_fraction)
        eliminated.append(np.setdiff1d(current, kept))
        current = kept
        if current.size <= keep:
            break
    final = score_function(current)
    return turf_scores(num_features, current, final, eliminated), current, eliminated
