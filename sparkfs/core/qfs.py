"""Fisher-Markov selector with the quadratic polynomial kernel (QFS, QFS'): Cheng, Zhou & Cheng,
"The Fisher-Markov Selector", Section IV-B (eqs. 27-32, Proposition IV.4, Corollary IV.5).

Three pieces, all pure NumPy/SciPy (the third in :mod:`sparkfs.core.binary_quadratic`):

* **Sufficient statistics.** Eq. (29) is written with double sums over pairs of samples, but
  ``sum_{u,v in class i} x_uj x_vj x_ul x_vl = (sum_{u in class i} x_uj x_ul)^2``, so theta_jl needs
  only the per-class Gram matrices G_i = X_i^T X_i, the class sizes n_i and the Gram matrix of the
  squared values H = (X*X)^T (X*X): O(n p^2) work in one pass (:func:`block_gram_statistics` on a
  block, :func:`merge_gram_statistics` to combine blocks; :mod:`sparkfs.spark.gram` runs them on
  Spark). :func:`pairwise_markov_coefficients` is eq. (29), :func:`gamma_max_exact` Corollary IV.5.
* **The objective.** With (1/2) k_2(x, y)(alpha) = 1/2 + <x, y>_alpha + 1/2 <x, y>_alpha^2 (eq. 27),
  the constant 1/2 cancels in Tr(S_b) - gamma Tr(S_t) (its three terms sum to c(1 - gamma + gamma - 1)),
  the linear part gives the LFS coefficients theta_j of eq. (19) and the quadratic part
  1/2 sum_jl theta_jl a_j a_l: this is (QFS) of Proposition IV.4,

      f(a) = sum_j (theta_j - beta) a_j + 1/2 sum_{j,l} theta_jl a_j a_l,   a in {0, 1}^p.

  (QFS') uses k'_2 (eq. 28), which has no linear part: the same f with theta_j = 0. Since
  a_j^2 = a_j, the diagonal 1/2 theta_jj a_j is a unary term (:func:`qfs_objective`).
* **The solver.** Maximising f is a binary MRF, solved by :mod:`sparkfs.core.binary_quadratic`
  (with c_j = theta_j and t_jl = theta_jl; it knows nothing of QFS). When every off-diagonal
  theta_jl >= 0 it is supermodular and solved exactly by an s-t minimum cut (:func:`solve_qfs`,
  with a certificate of optimality; see the Notes of
  :func:`~sparkfs.core.binary_quadratic.maximise_binary_quadratic`); otherwise the problem is
  NP-hard and the solver returns a cut of the relaxation without the negative pairs, improved by
  local search, with a valid upper bound. :func:`~sparkfs.core.count_selection.select_by_count`
  finds beta for a requested number of features.

Memory: the statistics of p candidate features take p x p x (C + 2) doubles on the driver
(C class Grams, H and theta_jl), and at the peak a second copy of the Grams (the tiles as they
arrive, or the rescaled statistics): :func:`check_driver_budget` refuses a candidate count whose
p x p x (2 C + 3) doubles do not fit a budget.

Numeric policy and preprocessing (deviations from / additions to the paper):

* **gamma <= 0 is always exact.** The numerator of eq. (32), n sum_i G_i[j,l]^2 / n_i - G[j,l]^2,
  is >= 0 by Cauchy-Schwarz, so gamma_max_exact >= 0 on every data set and the paper's
  gamma = -0.5 never produces a negative theta_jl (beyond rounding, which the solver certifies).
* **Centring** is not in the paper. Uncentred columns make the pairwise terms dominate and the
  optimal set jump from none to all (NOTES.md). Centred statistics cannot be derived exactly from
  uncentred G_i and H (H would need third-order sums, and the fourth-order expansion cancels
  catastrophically), so centring is applied to the data while the statistics are accumulated:
  ``center=`` of :func:`block_gram_statistics` and of :func:`sparkfs.spark.gram.class_gram_statistics`
  (where ``center="mean"`` costs one extra O(n p) pass). **Scaling** columns needs no new pass:
  :func:`rescale_gram_statistics`.
* **All-or-nothing paths.** Every feature has p - 1 partners, so with many candidates the summed
  pairwise reward outweighs the unary terms and the path over beta often jumps from 0 to all
  features even on centred data; :func:`~sparkfs.core.count_selection.select_by_count` detects and
  reports such jumps.
* Instance weights are frequency weights: every count and sum over rows is weighted.
"""

from __future__ import annotations

import math
from typing import NamedTuple, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from sparkfs.core.binary_quadratic import (
    BinaryQuadraticSolution,
    binary_quadratic_objective,
    maximise_binary_quadratic,
)
from sparkfs.core.fisher_markov import markov_coefficients

_FLOAT_EPS = np.finfo(np.float64).eps


# --------------------------------------------------------------------------------------------
# Sufficient statistics
# --------------------------------------------------------------------------------------------


class GramStatistics(NamedTuple):
    """Second-order sufficient statistics of one pass (weighted when weights are given).

    Attributes
    ----------
    class_counts : ndarray of shape (C,)
        n_i = sum of the weights of the rows of class i (the row count when unweighted).
    class_sums : ndarray of shape (C, p)
        sum_{u in class i} w_u x_u.
    class_grams : ndarray of shape (C, p, p)
        G_i = X_i^T W_i X_i.
    squared_gram : ndarray of shape (p, p)
        H = (X*X)^T W (X*X), the Gram matrix of the squared values.
    """

    class_counts: np.ndarray
    class_sums: np.ndarray
    class_grams: np.ndarray
    squared_gram: np.ndarray


def empty_gram_statistics(num_classes: int, num_features: int) -> GramStatistics:
    """All-zero statistics (the neutral element of :func:`merge_gram_statistics`)."""
    return GramStatistics(
        np.zeros(num_classes),
        np.zeros((num_classes, num_features)),
        np.zeros((num_classes, num_features, num_features)),
        np.zeros((num_features, num_features)),
    )


def merge_gram_statistics(left: GramStatistics, right: GramStatistics) -> GramStatistics:
    """Sum of two sets of statistics (associative and commutative)."""
    return GramStatistics(*(np.add(a, b) for a, b in zip(left, right)))


def block_gram_statistics(
    block,
    labels,
    num_classes: int,
    weights=None,
    center=None,
    rows_per_chunk: int = 4096,
) -> GramStatistics:
    """Per-class counts, sums and Gram matrices and the squared-value Gram of one block of rows.

    Parameters
    ----------
    block : ndarray of shape (m, p) or scipy.sparse matrix
        The rows (already restricted to the candidate features). Sparse input stays sparse:
        products are sparse-sparse (``X^T X`` of a CSR block) unless ``center`` is given.
    labels : array of shape (m,)
        Class indices 0..C-1 (integers, or floats holding integers).
    num_classes : int
        C; classes absent from the block get zero statistics.
    weights : array of shape (m,), optional
        Non-negative instance weights w_u (frequency weights: an integer weight is the same as
        repeating the row).
    center : array of shape (p,), optional
        A shift subtracted from every row before the products (e.g. the weighted column mean,
        for centred QFS). Centring makes the data dense: sparse blocks are densified
        ``rows_per_chunk`` rows at a time, never the whole block.
    rows_per_chunk : int
        Rows densified at once when centring sparse input (memory rows_per_chunk x p doubles).

    Returns
    -------
    GramStatistics

    Notes
    -----
    Cost O(m p^2) for dense blocks (three GEMM-sized products: the class Grams together and H),
    O(sum over rows of nnz^2) for sparse blocks.
    """
    labels = np.asarray(labels)
    num_rows = labels.shape[0]
    if block.shape[0] != num_rows:
        raise ValueError(f"block has {block.shape[0]} rows but labels has {num_rows} entries")
    num_features = block.shape[1]
    class_index = _class_indices(labels, num_classes)
    row_weights = None if weights is None else _checked_weights(weights, num_rows)
    if center is not None:
        center = np.asarray(center, dtype=np.float64)
        if center.shape != (num_features,):
            raise ValueError(f"center has shape {center.shape}, expected ({num_features},)")

    statistics = empty_gram_statistics(num_classes, num_features)
    if num_rows == 0:
        return statistics
    _add_checked_block(statistics, block, class_index, num_classes, row_weights, center, rows_per_chunk)
    return GramStatistics(statistics.class_counts, statistics.class_sums, _symmetrise(statistics.class_grams),
                          _symmetrise(statistics.squared_gram))


def add_block_gram_statistics(statistics: GramStatistics, block, labels, num_classes: int, weights=None,
                              center=None, rows_per_chunk: int = 4096) -> GramStatistics:
    """Add one block's statistics to ``statistics`` in place (and return it): the accumulator of a
    pass that holds one set of statistics per task, not one per block plus their merge.

    The parameters are those of :func:`block_gram_statistics`; the labels and weights are checked
    the same way. The Grams are *not* symmetrised (a sparse ``X^T W X`` may differ from its
    transpose by rounding): use one triangle of the final sums (:mod:`sparkfs.spark.gram` reads the
    upper one). Memory: one p x p product at a time besides the accumulator.
    """
    labels = np.asarray(labels)
    if block.shape[0] != labels.shape[0]:
        raise ValueError(f"block has {block.shape[0]} rows but labels has {labels.shape[0]} entries")
    row_weights = None if weights is None else _checked_weights(weights, labels.shape[0])
    if center is not None:
        center = np.asarray(center, dtype=np.float64)
    if labels.shape[0]:
        _add_checked_block(statistics, block, _class_indices(labels, num_classes), num_classes, row_weights, center,
                           rows_per_chunk)
    return statistics


def _checked_weights(weights, num_rows: int) -> np.ndarray:
    row_weights = np.asarray(weights, dtype=np.float64)
    if row_weights.shape != (num_rows,):
        raise ValueError(f"weights has shape {row_weights.shape}, expected ({num_rows},)")
    if not np.all(np.isfinite(row_weights)) or np.any(row_weights < 0):
        raise ValueError("weights must be finite and non-negative")
    return row_weights


def _add_checked_block(statistics, block, class_index, num_classes, row_weights, center, rows_per_chunk) -> None:
    """Add a checked block (class indices, weights) to ``statistics`` in place."""
    if sp.issparse(block) and center is not None:
        # Centring densifies; bound the memory by densifying a chunk of rows at a time.
        csr = sp.csr_matrix(block)
        for start in range(0, csr.shape[0], rows_per_chunk):
            stop = min(start + rows_per_chunk, csr.shape[0])
            chunk_weights = None if row_weights is None else row_weights[start:stop]
            _add_dense_block(statistics, csr[start:stop].toarray() - center, class_index[start:stop], num_classes,
                             chunk_weights)
    elif sp.issparse(block):
        _add_sparse_block(statistics, sp.csr_matrix(block, dtype=np.float64), class_index, num_classes, row_weights)
    else:
        dense = np.asarray(block, dtype=np.float64)
        _add_dense_block(statistics, dense if center is None else dense - center, class_index, num_classes,
                         row_weights)


def _class_indices(labels: np.ndarray, num_classes: int) -> np.ndarray:
    as_float = labels.astype(np.float64)
    with np.errstate(invalid="ignore"):
        is_bad = (~np.isfinite(as_float) | (as_float != np.round(as_float)) | (as_float < 0)
                  | (as_float > num_classes - 1))
    if is_bad.any():
        bad = as_float[is_bad]
        raise ValueError(
            f"labels must be class indices 0..{num_classes - 1}; got {bad.size} other value(s), e.g. {bad[:3].tolist()}"
        )
    return as_float.astype(np.int64)


def _add_dense_block(statistics: GramStatistics, dense, class_index, num_classes, row_weights) -> None:
    squared = dense * dense
    weights = np.ones(dense.shape[0]) if row_weights is None else row_weights
    statistics.class_counts[:] += np.bincount(class_index, weights=weights, minlength=num_classes)
    for i in range(num_classes):
        rows = class_index == i
        if not rows.any():
            continue
        class_rows = dense[rows]
        weighted_rows = class_rows if row_weights is None else class_rows * weights[rows, None]
        statistics.class_sums[i] += weighted_rows.sum(axis=0)
        statistics.class_grams[i] += weighted_rows.T @ class_rows
    weighted_squared = squared if row_weights is None else squared * weights[:, None]
    statistics.squared_gram[:] += weighted_squared.T @ squared


def _add_sparse_block(statistics: GramStatistics, csr, class_index, num_classes, row_weights) -> None:
    weights = np.ones(csr.shape[0]) if row_weights is None else row_weights
    statistics.class_counts[:] += np.bincount(class_index, weights=weights, minlength=num_classes)
    squared = csr.multiply(csr).tocsr()
    for i in range(num_classes):
        rows = np.flatnonzero(class_index == i)
        if rows.size == 0:
            continue
        class_rows = csr[rows]
        weighted_rows = class_rows if row_weights is None else sp.diags(weights[rows]) @ class_rows
        statistics.class_sums[i] += np.asarray(weighted_rows.sum(axis=0)).ravel()
        statistics.class_grams[i] += (weighted_rows.T @ class_rows).toarray()
    weighted_squared = squared if row_weights is None else sp.diags(weights) @ squared
    statistics.squared_gram[:] += (weighted_squared.T @ squared).toarray()


def _symmetrise(matrices: np.ndarray) -> np.ndarray:
    """Average with the transpose: a weighted Gram is symmetric up to summation-order rounding."""
    return 0.5 * (matrices + np.swapaxes(matrices, -1, -2))


def rescale_gram_statistics(statistics: GramStatistics, column_scale) -> GramStatistics:
    """The statistics of the data with column j divided by ``column_scale[j]`` (e.g. the std).

    Scaling, unlike centring, needs no new pass: G_i[j, l] / (s_j s_l), H[j, l] / (s_j s_l)^2,
    class_sums / s. A zero scale (constant column) is replaced by 1 (the column is left as is).
    """
    scale = np.asarray(column_scale, dtype=np.float64)
    num_features = statistics.class_sums.shape[1]
    if scale.shape != (num_features,):
        raise ValueError(f"column_scale has shape {scale.shape}, expected ({num_features},)")
    if not np.all(np.isfinite(scale)) or np.any(scale < 0):
        raise ValueError("column_scale must be finite and non-negative")
    scale = np.where(scale > 0, scale, 1.0)
    outer = np.outer(scale, scale)
    return GramStatistics(
        statistics.class_counts.copy(),
        statistics.class_sums / scale,
        statistics.class_grams / outer,
        statistics.squared_gram / outer**2,
    )


def column_standard_deviations(statistics: GramStatistics) -> np.ndarray:
    """Weighted population standard deviation of every column, from the statistics."""
    n = statistics.class_counts.sum()
    if n <= 0:
        raise ValueError("the total count n must be positive")
    mean = statistics.class_sums.sum(axis=0) / n
    second_moment = np.diagonal(statistics.class_grams.sum(axis=0)) / n
    return np.sqrt(np.maximum(second_moment - mean**2, 0.0))


# --------------------------------------------------------------------------------------------
# Eq. (29), Corollary IV.5 and the unary terms
# --------------------------------------------------------------------------------------------


def _validated_statistics(class_grams, class_counts, squared_gram):
    class_grams = np.asarray(class_grams, dtype=np.float64)
    class_counts = np.asarray(class_counts, dtype=np.float64)
    squared_gram = np.asarray(squared_gram, dtype=np.float64)
    if class_grams.ndim != 3 or class_grams.shape[1] != class_grams.shape[2]:
        raise ValueError(f"class_grams must have shape (n_classes, p, p); got {class_grams.shape}")
    if class_counts.shape != class_grams.shape[:1]:
        raise ValueError(
            f"class_counts has shape {class_counts.shape} but class_grams has {class_grams.shape[0]} classes"
        )
    if squared_gram.shape != class_grams.shape[1:]:
        raise ValueError(f"squared_gram has shape {squared_gram.shape}, expected {class_grams.shape[1:]}")
    if np.any(class_counts < 0) or not np.all(np.isfinite(class_counts)):
        raise ValueError("class_counts must be finite and non-negative")
    n = class_counts.sum()
    if n <= 0:
        raise ValueError("the total count n must be positive")
    return class_grams, class_counts, squared_gram, n


def _between_class_term(class_grams, class_counts) -> np.ndarray:
    """sum_i G_i^2 / n_i (entrywise), classes with n_i = 0 skipped."""
    total = np.zeros(class_grams.shape[1:])
    for gram, count in zip(class_grams, class_counts):
        if count > 0:
            total += gram * gram / count
    return total


def pairwise_markov_coefficients(class_grams, class_counts, squared_gram, gamma: float) -> np.ndarray:
    """QFS pairwise Markov coefficients theta_jl, eq. (29), from second-order statistics.

    theta_jl = (1/n) sum_i G_i[j,l]^2 / n_i - (gamma/n) H[j,l] + ((gamma - 1)/n^2) G[j,l]^2,

    with G_i = X_i^T X_i, G = sum_i G_i, H = (X*X)^T (X*X), n = sum_i n_i; this equals eq. (29)
    because sum_{u,v in class i} x_uj x_vj x_ul x_vl = (sum_{u in class i} x_uj x_ul)^2.

    Parameters
    ----------
    class_grams : array of shape (C, p, p)
        G_i (weighted: X_i^T W_i X_i).
    class_counts : array of shape (C,)
        n_i (weighted: sum of the class's weights). Classes with n_i = 0 are ignored.
    squared_gram : array of shape (p, p)
        H (weighted: (X*X)^T W (X*X)).
    gamma : float
        The trade-off of eq. (12) (the paper uses -0.5).

    Returns
    -------
    theta : ndarray of shape (p, p), symmetric.

    Notes
    -----
    With instance weights every sum over rows is weighted and every count is a weight sum, which
    for integer weights equals repeating the rows. Cost O(C p^2); memory a few p x p arrays.
    """
    class_grams, class_counts, squared_gram, n = _validated_statistics(class_grams, class_counts, squared_gram)
    total_gram = class_grams.sum(axis=0)
    theta = _between_class_term(class_grams, class_counts) / n
    theta -= (gamma / n) * squared_gram
    theta += ((gamma - 1.0) / n**2) * total_gram**2
    return 0.5 * (theta + theta.T)


def unary_markov_coefficients(class_sums, class_counts, class_grams, gamma: float, kernel: str = "qfs") -> np.ndarray:
    """The linear coefficients of the QFS objective: theta_j of eq. (19) for k_2, zeros for k'_2.

    Expanding (1/2) k_2 = 1/2 + <x, y>_alpha + 1/2 <x, y>_alpha^2 (eq. 27), the constant cancels
    and the linear part is exactly the LFS objective, so (QFS) has theta_j of eq. (19) as its
    unary coefficients; (QFS') with k'_2 (eq. 28) has none. The sums of squares of eq. (19) are
    the diagonal of the total Gram matrix, so no extra statistic is needed.

    Parameters
    ----------
    kernel : {"qfs", "qfs-prime"}
    """
    if kernel == "qfs-prime":
        return np.zeros(np.asarray(class_sums).shape[1])
    if kernel != "qfs":
        raise ValueError(f"kernel must be 'qfs' (k_2, eq. 27) or 'qfs-prime' (k'_2, eq. 28); got {kernel!r}")
    sum_of_squares = np.diagonal(np.asarray(class_grams, dtype=np.float64).sum(axis=0)).copy()
    return markov_coefficients(class_sums, class_counts, sum_of_squares, gamma)


class GammaBound(NamedTuple):
    """Corollary IV.5 on one data set.

    Attributes
    ----------
    gamma_max : float
        The largest gamma for which every off-diagonal theta_jl >= 0 (the min-cut is exact);
        ``inf`` when no pair constrains gamma.
    limiting_pair : tuple of int or None
        The pair (j, l), j < l, attaining the minimum (None when gamma_max is inf).
    n_violating_pairs : int or None
        The number of pairs j < l with theta_jl < 0 at the ``gamma`` given (None if no gamma).
    """

    gamma_max: float
    limiting_pair: Optional[Tuple[int, int]]
    n_violating_pairs: Optional[int]


def gamma_max_exact(class_grams, class_counts, squared_gram, gamma: Optional[float] = None) -> GammaBound:
    """Largest gamma for which QFS/QFS' is solved exactly by a min-cut: Corollary IV.5, eq. (32).

    gamma <= [n sum_i G_i[j,l]^2 / n_i - G[j,l]^2] / B_jl for all j < l, B_jl = n H[j,l] - G[j,l]^2,

    which is theta_jl >= 0 rearranged (theta_jl n^2 = numerator - gamma B_jl). B_jl >= 0 by
    Cauchy-Schwarz and B_jl = 0 exactly when x_j x_l is constant over the rows; then 1/B_jl = +inf
    (the numerator is >= 0 by Cauchy-Schwarz too, so such a pair never constrains gamma, and
    gamma_max >= 0 always: every gamma <= 0 is solved exactly).
    Numerically B_jl is treated as 0 when B_jl <= 64 eps n H[j,l] (it is a difference of two
    rounded quantities of that size).

    Parameters
    ----------
    class_grams, class_counts, squared_gram : see :func:`pairwise_markov_coefficients`.
    gamma : float, optional
        When given, also count the pairs j < l that violate the bound at this gamma (those with
        theta_jl < 0).

    Returns
    -------
    GammaBound
    """
    class_grams, class_counts, squared_gram, n = _validated_statistics(class_grams, class_counts, squared_gram)
    num_features = squared_gram.shape[0]
    total_gram = class_grams.sum(axis=0)
    numerator = n * _between_class_term(class_grams, class_counts) - total_gram**2
    denominator = n * squared_gram - total_gram**2
    upper_rows, upper_cols = np.triu_indices(num_features, 1)
    numerator = numerator[upper_rows, upper_cols]
    denominator = denominator[upper_rows, upper_cols]
    constrains = denominator > 64 * _FLOAT_EPS * n * np.abs(squared_gram[upper_rows, upper_cols])
    bounds = np.full(numerator.shape, np.inf)
    bounds[constrains] = numerator[constrains] / denominator[constrains]
    if bounds.size == 0 or not np.isfinite(bounds.min()):
        gamma_max, limiting_pair = math.inf, None
    else:
        position = int(np.argmin(bounds))
        gamma_max, limiting_pair = float(bounds[position]), (int(upper_rows[position]), int(upper_cols[position]))
    n_violating = None if gamma is None else int(np.count_nonzero(bounds < gamma))
    return GammaBound(gamma_max, limiting_pair, n_violating)


# --------------------------------------------------------------------------------------------
# Memory budget
# --------------------------------------------------------------------------------------------


def qfs_driver_memory_bytes(num_candidates: int, num_classes: int) -> int:
    """Peak driver memory of the QFS statistics: p x p x (2 C + 3) doubles.

    The C class Grams and H ((C + 1) p^2), theta_jl (p^2), and at the peak a second copy of the
    Grams: the Gram tiles as they arrive from the executors (the packed upper triangles, about
    half of it) or, with ``scaling``, the rescaled statistics (:func:`rescale_gram_statistics`).
    """
    return 8 * int(num_candidates) ** 2 * (2 * int(num_classes) + 3)


def check_driver_budget(num_candidates: int, num_classes: int, budget_bytes: int,
                        budget_name: str = "the budget") -> int:
    """Refuse a candidate count whose statistics would not fit the driver budget.

    Returns the bytes needed. The min-cut solver needs on top of that about 100 bytes per
    pair with a positive theta_jl (edge lists and the residual graph of scipy's Dinic).

    Raises
    ------
    ValueError
        Naming the candidate count, the classes, the bytes needed, the budget, and the largest
        candidate count that fits.
    """
    if num_candidates < 0 or num_classes < 1 or budget_bytes <= 0:
        raise ValueError(
            f"need num_candidates >= 0, num_classes >= 1 and budget_bytes > 0; "
            f"got {num_candidates}, {num_classes}, {budget_bytes}"
        )
    needed = qfs_driver_memory_bytes(num_candidates, num_classes)
    if needed > budget_bytes:
        largest = int(math.isqrt(int(budget_bytes) // (8 * (2 * num_classes + 3))))
        raise ValueError(
            f"QFS on {num_candidates} candidate features with {num_classes} classes needs "
            f"{needed / 2**20:.1f} MiB of driver memory for its statistics (p x p x (2 C + 3) = "
            f"{num_candidates} x {num_candidates} x {2 * num_classes + 3} doubles: the class Grams, H, theta_jl and "
            f"the Gram tiles as they arrive), above the driver budget of {budget_bytes / 2**20:.1f} MiB; use at "
            f"most {largest} candidates or raise {budget_name}"
        )
    return needed


# --------------------------------------------------------------------------------------------
# Objective and solver (the solver itself is sparkfs.core.binary_quadratic)
# --------------------------------------------------------------------------------------------


def qfs_objective(selection, unary, pairwise, beta: float):
    """The QFS objective of Proposition IV.4 (eq. 30) for one or several selections.

    f(a) = sum_j (theta_j - beta) a_j + 1/2 sum_{j,l} theta_jl a_j a_l

    This is :func:`~sparkfs.core.binary_quadratic.binary_quadratic_objective` with c_j = theta_j
    and t_jl = theta_jl.

    Parameters
    ----------
    selection : array of shape (p,) or (m, p)
        0/1 or boolean selection vector(s) a.
    unary : array of shape (p,)
        theta_j of eq. (19) for (QFS); zeros for (QFS').
    pairwise : array of shape (p, p)
        theta_jl of eq. (29) (symmetric); its diagonal acts as the unary term 1/2 theta_jj a_j.
    beta : float
        The l_0 penalty per selected feature.

    Returns
    -------
    float, or ndarray of shape (m,)
    """
    return binary_quadratic_objective(selection, unary, pairwise, beta)


def solve_qfs(
    unary,
    pairwise,
    beta: float,
    *,
    tol: float = 1e-9,
    local_search: bool = True,
    max_flow_rounds: int = 6,
    max_local_moves: Optional[int] = None,
) -> BinaryQuadraticSolution:
    """Maximise the QFS objective f(a) = sum_j (theta_j - beta) a_j + 1/2 sum_jl theta_jl a_j a_l.

    Parameters
    ----------
    unary : array of shape (p,)
        theta_j of eq. (19) for (QFS), zeros for (QFS') (:func:`unary_markov_coefficients`).
    pairwise : array of shape (p, p)
        theta_jl of eq. (29), symmetric (:func:`pairwise_markov_coefficients`).
    beta : float
        The l_0 penalty of eq. (15).
    tol, local_search, max_flow_rounds, max_local_moves
        See :func:`~sparkfs.core.binary_quadratic.maximise_binary_quadratic`.

    Returns
    -------
    BinaryQuadraticSolution

    Notes
    -----
    :func:`~sparkfs.core.binary_quadratic.maximise_binary_quadratic` with c_j = theta_j and
    t_jl = theta_jl; its Notes describe the min-cut, the certificate and the negative pairs. By
    Proposition IV.4 the min-cut is exact when every off-diagonal theta_jl >= 0, i.e. for every
    gamma <= :func:`gamma_max_exact` (Corollary IV.5), which includes every gamma <= 0.
    """
    return maximise_binary_quadratic(
        unary,
        pairwise,
        beta,
        tol=tol,
        local_search=local_search,
        max_flow_rounds=max_flow_rounds,
        max_local_moves=max_local_moves,
    )
