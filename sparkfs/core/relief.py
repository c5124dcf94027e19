"""The Relief family as nonparametric Bayes-error minimisation (Yang & Hu, 2012).

Pure NumPy/SciPy. Every variant scores a feature by the mean over the query instances of a
*margin vector* ``m_n`` (one entry per feature) and weights the features by the closed form of
Sun's convex problem, eq. (4): ``w = (mean margin)^+ / ||(mean margin)^+||_2``.

Margins of the neighbour-based variants are sums of weighted absolute differences,
``m_n = sum_r a_{n r} |x_n - x_r|``, over a few neighbours r of query n. The formula of each
variant is therefore *which neighbours, with which weight*: :func:`relief_pairs`,
:func:`relieff_pairs` and :func:`mrelief_pairs` turn a :class:`NeighbourTable` (per query and
class, the k nearest rows) into :class:`MarginPairs`, and :func:`margin_sums` accumulates
``sum a |x_n - x_r|`` over any subset of the pairs (so a Spark partition can add the
contributions of the neighbours it holds and the partial sums simply add up).
:func:`relief`, :func:`relieff` and :func:`mrelief` compose the two for in-memory data.

Parzen-Relief needs no neighbour search: :func:`prelief_margin_sums` gives the partial margins
contributed by any block of rows (they add up over blocks) and :func:`prelief` the full margins.

Equations (paper: Yang & Hu, "Nonparametric Bayes error minimization for feature selection",
Sections 2.3 and 4)
--------------------------------------------------------------------------------------------
* Relief, eq. (3): ``m_n = |x_n - M(x_n)| - |x_n - H(x_n)|``, H / M the nearest hit (same class)
  and the nearest miss (any other class: the I-Relief margin for multi-class data).
* ReliefF (Section 4.2, unnumbered): ``m_n = sum_{c != y_n} w_c |x_n - M_c(x_n)| - |x_n - H(x_n)|``.
* MAP-Relief, eq. (16): ``m_n = P(y_n) |x_n - M(x_n)| - (1 - P(y_n)) |x_n - H(x_n)|``.
* Parzen-Relief, eq. (14): ``m_n(d) = mean_{i in same class, i != n} k_d(x_i(d), x_n(d))
  - mean_{j in other classes} k_d(x_j(d), x_n(d))``, ``k_d(a, b) = exp(-(a-b)^2 / (2 sigma_d^2))``.
* Weights, eq. (4).

Deviations from the paper (and why)
-----------------------------------
1. **k > 1** (Relief, MAP-Relief): the |x_n - H| and |x_n - M| terms are the *means over the k
   nearest* hits / misses of the absolute differences, ``mean_j |x_n - H_j|``, not the absolute
   difference to the mean neighbour. This is Kononenko's averaging, keeps every term a sum over
   pairs (mergeable across partitions), and with it Relief and ReliefF coincide on binary data,
   as Section 5.1 states ("for binary classification, ReliefF and Relief are identical").
   k = 1 is exactly the paper's margin.
2. **ReliefF miss weights** are Kononenko's ``w_c = P(c) / (1 - P(y_n))`` (misses averaged over
   k per class). The paper's unnumbered ReliefF margin writes ``P(c)`` without the
   ``1 / (1 - P(y_n))``; with it, ReliefF would *not* equal Relief on binary data, contradicting
   the paper's own remark, and scikit-rebate and Kononenko (1994) normalise.
3. **Parzen-Relief's same-class set excludes n itself.** The paper defines
   ``Omega_n^(o) = {i : y_i = y_n}``, which contains n; with n included every feature gets the
   same extra ``1 / |Omega_n^(o)|`` (k_d(x, x) = 1), a feature-independent shift of the mean
   margin that changes the positive part in eq. (4) but no ranking. We follow the issue
   ("same-class i != n").
4. **Parzen kernel normalisation:** eq. (12) writes the isotropic kernel with a
   ``1/(sqrt(2 pi) sigma)`` factor and an unsquared norm (a typo); eq. (14) defines the
   per-feature ``k_d`` without the factor and with the square. We use eq. (14) as printed.
5. **MAP-Relief's weights follow eq. (16) as printed** (``P(y_n)`` on the miss term,
   ``1 - P(y_n)`` on the hit term). Note that substituting the Relief approximation
   (``1/|x - H| -> -|x - H|``) into eq. (15) would put ``P(y_n)`` on the hit term and
   ``1 - P(y_n)`` on the miss term; the paper and the issue both state eq. (16), which we
   implement.
6. **Priors** ``P(c)`` are the class frequencies of all n rows (Section 3.2:
   ``sum_n I(y_n = c) / N``), also when only a sample of queries is used.

Scaling (``feature_scale``): ``"range"`` divides each feature by ``max - min`` (Kononenko's
``diff``: with Manhattan distance this is scikit-rebate's ReliefF), ``"standard"`` by the
sample standard deviation; a constant feature (range or std 0) is left unscaled (all its
differences are 0 anyway).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
import scipy.sparse as sp

from sparkfs.core.neighbours import PAD_ID, NeighbourTable

Matrix = Union[np.ndarray, sp.csr_matrix]

#: The Relief variants (names used by the selector's ``variant`` param and the CLI).
VARIANTS = ("relief", "relieff", "mrelief", "prelief")
#: Variants whose margins come from a nearest-neighbour table.
NEIGHBOUR_VARIANTS = ("relief", "relieff", "mrelief")
#: Feature scalings applied before the neighbour search and the margins.
SCALINGS = ("none", "range", "standard")
#: The paper's Parzen bandwidth on [0, 1]-scaled data (Section 5.1: "sigma_d = 0.01").
PAPER_PARZEN_SIGMA = 0.01

#: Upper bound on the elements of one temporary (pairs x features, queries x rows x features).
_MAX_BLOCK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class MarginPairs:
    """The terms of the margins: ``m_n = sum over pairs of n of weight * |x_n - x_neighbour|``.

    Attributes
    ----------
    query_positions : ndarray of int64, shape (P,)
        Position of the query in the query set (row of the neighbour table).
    neighbour_ids : ndarray of int64, shape (P,)
        Row id of the neighbour.
    weights : ndarray of float64, shape (P,)
        Signed weight of the term (negative for hits).

    Pairs are sorted by neighbour id, so a block of rows finds its pairs by binary search.
    """

    query_positions: np.ndarray
    neighbour_ids: np.ndarray
    weights: np.ndarray

    def __len__(self) -> int:
        return int(self.weights.shape[0])


def class_priors(class_counts) -> np.ndarray:
    """Class priors ``P(c) = n_c / n`` (Section 3.2, the estimate used in eq. (7))."""
    counts = np.asarray(class_counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        raise ValueError("class_counts must contain at least one row")
    return counts / total


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"unknown Relief variant {variant!r}: use one of {VARIANTS}")
    return variant


def check_scaling(scaling: str) -> str:
    if scaling not in SCALINGS:
        raise ValueError(f"unknown scaling {scaling!r}: use one of {SCALINGS}")
    return scaling


def feature_scale(scaling: str, *, minimum=None, maximum=None, std=None, num_features: Optional[int] = None) -> np.ndarray:
    """The divisor applied to each feature before the search and the margins.

    Parameters
    ----------
    scaling : {"none", "range", "standard"}
    minimum, maximum : arrays of shape (p,)
        Column minimum and maximum (``"range"``: divisor ``max - min``, Kononenko's diff).
    std : array of shape (p,)
        Column standard deviation (``"standard"``).
    num_features : int
        Needed for ``"none"`` (divisor 1).

    Returns
    -------
    ndarray of shape (p,), strictly positive; 1 for constant features (range or std 0).
    """
    check_scaling(scaling)
    if scaling == "none":
        if num_features is None:
            raise ValueError("num_features is required for scaling='none'")
        return np.ones(num_features)
    if scaling == "range":
        if minimum is None or maximum is None:
            raise ValueError("scaling='range' needs the column minimum and maximum")
        spread = np.asarray(maximum, dtype=np.float64) - np.asarray(minimum, dtype=np.float64)
    else:
        if std is None:
            raise ValueError("scaling='standard' needs the column standard deviation")
        spread = np.asarray(std, dtype=np.float64)
    return np.where(spread > 0, spread, 1.0)


def default_parzen_sigma(scaled_range) -> np.ndarray:
    """The paper's bandwidth, ``sigma_d = 0.01`` on [0, 1]-scaled data, for any scaling.

    ``sigma_d = 0.01 * (max_d - min_d)`` of the (scaled) data: exactly 0.01 with
    ``scaling="range"``. A constant feature gets ``sigma_d = 1`` (its kernel is 1 for every
    pair, whatever the bandwidth).
    """
    scaled_range = np.asarray(scaled_range, dtype=np.float64)
    return np.where(scaled_range > 0, PAPER_PARZEN_SIGMA * scaled_range, 1.0)


def relief_weights(mean_margin) -> np.ndarray:
    """Feature weights of Sun's convex problem, eq. (4): ``(m)^+ / ||(m)^+||_2``.

    Returns all zeros when no entry of the mean margin is positive (no feature separates the
    classes better than chance; eq. (3) then has no non-trivial maximiser).
    """
    positive_part = np.maximum(np.asarray(mean_margin, dtype=np.float64), 0.0)
    norm = np.linalg.norm(positive_part)
    return positive_part / norm if norm > 0 else positive_part


# --------------------------------------------------------------------------------------------
# Which neighbours, with which weight
# --------------------------------------------------------------------------------------------


def _check_table(table: NeighbourTable, query_labels) -> np.ndarray:
    query_labels = np.asarray(query_labels)
    if query_labels.shape != (table.num_queries,):
        raise ValueError(
            f"query_labels has shape {query_labels.shape}; the neighbour table has {table.num_queries} queries"
        )
    labels = query_labels.astype(np.int64)
    if np.any(labels != query_labels) or np.any(labels < 0) or np.any(labels >= table.num_classes):
        raise ValueError(f"query labels must be class indices 0..{table.num_classes - 1}")
    return labels


def _require_full(ids: np.ndarray, table: NeighbourTable, what: str) -> None:
    """Raise if a needed neighbour slot is a pad: k is too large for the rows available."""
    missing = ids == PAD_ID
    if missing.any():
        query_position = int(np.argwhere(missing)[0][0])
        raise ValueError(
            f"k={table.k} is too large: query id {int(table.query_ids[query_position])} has fewer than "
            f"{table.k} {what}; use a k no larger than the smallest class size minus one"
        )


def hit_neighbours(table: NeighbourTable, query_labels):
    """The k nearest hits (same class, the query excluded) of each query: ids and distances (m, k)."""
    labels = _check_table(table, query_labels)
    rows = np.arange(table.num_queries)
    return table.neighbour_ids[rows, labels], table.distances[rows, labels]


def miss_neighbours(table: NeighbourTable, query_labels):
    """The k nearest misses of each query over *all* other classes, (distance, id) order.

    The pooled nearest miss ``M(x_n)`` of Relief for multi-class data (the I-Relief margin) and
    of MAP-Relief. Returns ids and distances, each of shape (m, k).
    """
    labels = _check_table(table, query_labels)
    num_queries, num_classes, k = table.neighbour_ids.shape
    own_class = np.arange(num_classes)[None, :] == labels[:, None]
    ids = np.where(own_class[:, :, None], PAD_ID, table.neighbour_ids).reshape(num_queries, num_classes * k)
    dists = np.where(own_class[:, :, None], np.inf, table.distances).reshape(num_queries, num_classes * k)
    id_key = np.where(ids == PAD_ID, np.iinfo(np.int64).max, ids)
    order = np.lexsort((id_key, dists), axis=1)[:, :k]
    return np.take_along_axis(ids, order, axis=1), np.take_along_axis(dists, order, axis=1)


def _pairs(query_positions, neighbour_ids, weights) -> MarginPairs:
    query_positions = np.asarray(query_positions, dtype=np.int64).ravel()
    neighbour_ids = np.asarray(neighbour_ids, dtype=np.int64).ravel()
    weights = np.asarray(weights, dtype=np.float64).ravel()
    keep = (neighbour_ids != PAD_ID) & (weights != 0)
    query_positions, neighbour_ids, weights = query_positions[keep], neighbour_ids[keep], weights[keep]
    order = np.lexsort((query_positions, neighbour_ids))
    return MarginPairs(query_positions[order], neighbour_ids[order], weights[order])


def _hit_miss_pairs(table, query_labels, hit_weight, miss_weight) -> MarginPairs:
    """Pairs of the two-term margins ``miss_weight_n |x_n - M| + hit_weight_n |x_n - H|`` (k-means)."""
    k = table.k
    hit_ids, _ = hit_neighbours(table, query_labels)
    miss_ids, _ = miss_neighbours(table, query_labels)
    _require_full(hit_ids, table, "rows of its own class besides itself (nearest hits)")
    _require_full(miss_ids, table, "rows of other classes (nearest misses)")
    positions = np.repeat(np.arange(table.num_queries)[:, None], k, axis=1)
    return _pairs(
        np.concatenate([positions, positions], axis=1),
        np.concatenate([hit_ids, miss_ids], axis=1),
        np.concatenate(
            [np.repeat(hit_weight[:, None], k, axis=1), np.repeat(miss_weight[:, None], k, axis=1)], axis=1
        ) / k,
    )


def relief_pairs(table: NeighbourTable, query_labels) -> MarginPairs:
    """Pairs of the Relief margin, eq. (3), with k nearest hits and misses.

    ``m_n = (1/k) sum_{j<k} |x_n - M_j(x_n)| - (1/k) sum_{j<k} |x_n - H_j(x_n)|``, H_j the
    j-th nearest hit and M_j the j-th nearest miss over all other classes (for multi-class
    data the I-Relief margin). k = 1 is eq. (3) exactly; see the module notes for k > 1.
    """
    ones = np.ones(table.num_queries)
    return _hit_miss_pairs(table, query_labels, hit_weight=-ones, miss_weight=ones)


def mrelief_pairs(table: NeighbourTable, query_labels, class_priors_) -> MarginPairs:
    """Pairs of the MAP-Relief margin, eq. (16).

    ``m_n = P(y_n) (1/k) sum_j |x_n - M_j(x_n)| - (1 - P(y_n)) (1/k) sum_j |x_n - H_j(x_n)|``
    with the misses pooled over all other classes, as in Relief.
    """
    labels = _check_table(table, query_labels)
    prior_of_query = np.asarray(class_priors_, dtype=np.float64)[labels]
    return _hit_miss_pairs(table, query_labels, hit_weight=-(1.0 - prior_of_query), miss_weight=prior_of_query)


def relieff_pairs(table: NeighbourTable, query_labels, class_priors_) -> MarginPairs:
    """Pairs of the ReliefF margin (Section 4.2, with Kononenko's normalisation).

    ``m_n = sum_{c != y_n} P(c) / (1 - P(y_n)) (1/k) sum_j |x_n - M_{c,j}(x_n)|
    - (1/k) sum_j |x_n - H_j(x_n)|``, ``M_{c,j}`` the j-th nearest row of class c. Classes with
    no rows (prior 0) contribute nothing.
    """
    labels = _check_table(table, query_labels)
    priors = np.asarray(class_priors_, dtype=np.float64)
    if priors.shape != (table.num_classes,):
        raise ValueError(f"class_priors has shape {priors.shape}; expected ({table.num_classes},)")
    num_queries, num_classes, k = table.neighbour_ids.shape
    other_mass = 1.0 - priors[labels]
    if np.any(other_mass <= 0):
        raise ValueError("ReliefF needs rows of at least two classes (no misses exist)")
    # weight[n, c] = P(c) / (1 - P(y_n)) for c != y_n, -1 for c = y_n; each neighbour gets weight / k.
    class_weight = priors[None, :] / other_mass[:, None]
    class_weight[np.arange(num_queries), labels] = -1.0
    used_class = class_weight != 0
    _require_full(
        np.where(used_class[:, :, None], table.neighbour_ids, 0), table, "rows of some class (hits or misses)"
    )
    positions = np.broadcast_to(np.arange(num_queries)[:, None, None], table.neighbour_ids.shape)
    weights = np.broadcast_to(class_weight[:, :, None] / k, table.neighbour_ids.shape)
    return _pairs(positions, table.neighbour_ids, weights)


# --------------------------------------------------------------------------------------------
# Weighted absolute differences
# --------------------------------------------------------------------------------------------


def _gather_rows(matrix: Matrix, positions: np.ndarray, dense: bool):
    rows = matrix[positions]
    if dense and sp.issparse(rows):
        return rows.toarray()
    return rows


def margin_sums(
    query_matrix: Matrix,
    neighbour_matrix: Matrix,
    query_positions,
    neighbour_rows,
    weights,
    *,
    per_query: bool = False,
    num_queries: Optional[int] = None,
):
    """``sum_j weights_j |x_{query_j} - x_{neighbour_j}|`` over a list of pairs.

    Parameters
    ----------
    query_matrix : ndarray or csr_matrix, shape (m, p)
    neighbour_matrix : ndarray or csr_matrix, shape (n, p)
    query_positions : array of int, shape (P,)
        Row of ``query_matrix`` of each pair.
    neighbour_rows : array of int, shape (P,)
        Row of ``neighbour_matrix`` of each pair.
    weights : array of float, shape (P,)
    per_query : bool
        Also return the per-query sums (the margin vectors).
    num_queries : int, optional
        Rows of the per-query output (default ``query_matrix.shape[0]``).

    Returns
    -------
    feature_sums : ndarray, shape (p,)
        Sum over all pairs.
    query_sums : ndarray, shape (num_queries, p), or None
        Sum over the pairs of each query (``per_query=True``).

    Notes
    -----
    Both sides sparse: the differences are computed on CSR rows (sparse). Otherwise the
    gathered rows are dense, in chunks of at most ~4 M elements.
    """
    query_positions = np.asarray(query_positions, dtype=np.int64)
    neighbour_rows = np.asarray(neighbour_rows, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    num_features = query_matrix.shape[1]
    num_queries = query_matrix.shape[0] if num_queries is None else num_queries
    feature_sums = np.zeros(num_features)
    query_sums = np.zeros((num_queries, num_features)) if per_query else None
    both_sparse = sp.issparse(query_matrix) and sp.issparse(neighbour_matrix)
    if sp.issparse(query_matrix):
        query_matrix = sp.csr_matrix(query_matrix)
    if sp.issparse(neighbour_matrix):
        neighbour_matrix = sp.csr_matrix(neighbour_matrix)
    chunk = len(weights) if both_sparse else max(1, _MAX_BLOCK_ELEMENTS // max(num_features, 1))
    for start in range(0, len(weights), max(chunk, 1)):
        part = slice(start, start + chunk)
        query_rows = _gather_rows(query_matrix, query_positions[part], dense=not both_sparse)
        neighbour_rows_part = _gather_rows(neighbour_matrix, neighbour_rows[part], dense=not both_sparse)
        absolute_difference = abs(query_rows - neighbour_rows_part)
        part_weights = weights[part]
        if both_sparse:
            feature_sums += np.asarray(absolute_difference.T @ part_weights).ravel()
        else:
            feature_sums += part_weights @ absolute_difference
        if per_query:
            selector = sp.csr_matrix(
                (part_weights, (query_positions[part], np.arange(part_weights.size))),
                shape=(num_queries, part_weights.size),
            )
            product = selector @ absolute_difference
            query_sums += product.toarray() if sp.issparse(product) else np.asarray(product)
    return feature_sums, query_sums


def _positions_of_ids(row_ids: np.ndarray, wanted_ids: np.ndarray) -> np.ndarray:
    order = np.argsort(row_ids, kind="stable")
    position = np.searchsorted(row_ids[order], wanted_ids)
    position = np.minimum(position, row_ids.size - 1)
    found = row_ids[order][position] == wanted_ids
    if not np.all(found):
        raise ValueError(f"row id(s) {wanted_ids[~found][:5].tolist()} not found among the rows")
    return order[position]


def _margins_in_memory(rows, row_ids, table: NeighbourTable, pairs: MarginPairs) -> np.ndarray:
    row_ids = np.asarray(row_ids, dtype=np.int64)
    query_matrix = rows[_positions_of_ids(row_ids, table.query_ids)]
    neighbour_rows = _positions_of_ids(row_ids, pairs.neighbour_ids) if len(pairs) else pairs.neighbour_ids
    _, margins = margin_sums(
        query_matrix, rows, pairs.query_positions, neighbour_rows, pairs.weights,
        per_query=True, num_queries=table.num_queries,
    )
    return margins


def relief(rows: Matrix, row_ids, table: NeighbourTable, query_labels) -> np.ndarray:
    """Relief margins, eq. (3), of the queries of ``table`` (rows of ``rows``, found by id).

    Returns
    -------
    ndarray of shape (m, p): ``m_n`` per query; their mean is the Relief score.
    """
    return _margins_in_memory(rows, row_ids, table, relief_pairs(table, query_labels))


def relieff(rows: Matrix, row_ids, table: NeighbourTable, query_labels, class_priors_) -> np.ndarray:
    """ReliefF margins (Section 4.2, Kononenko's normalisation); see :func:`relieff_pairs`."""
    return _margins_in_memory(rows, row_ids, table, relieff_pairs(table, query_labels, class_priors_))


def mrelief(rows: Matrix, row_ids, table: NeighbourTable, query_labels, class_priors_) -> np.ndarray:
    """MAP-Relief margins, eq. (16); see :func:`mrelief_pairs`."""
    return _margins_in_memory(rows, row_ids, table, mrelief_pairs(table, query_labels, class_priors_))


# --------------------------------------------------------------------------------------------
# Parzen-Relief
# --------------------------------------------------------------------------------------------


def prelief_class_weights(class_counts) -> np.ndarray:
    """``W[c, c']``: weight of a row of class c' in the margin of a query of class c, eq. (14).

    ``1 / (n_c - 1)`` on the diagonal (mean over the same class, the query excluded) and
    ``-1 / (n - n_c)`` elsewhere (mean over the other classes).
    """
    counts = np.asarray(class_counts, dtype=np.float64)
    total = counts.sum()
    same = np.divide(1.0, counts - 1, out=np.zeros_like(counts), where=counts > 1)
    other = np.divide(-1.0, total - counts, out=np.zeros_like(counts), where=total - counts > 0)
    weights = np.repeat(other[:, None], counts.size, axis=1)
    weights[np.diag_indices(counts.size)] = same
    return weights


def _check_sigma(sigma, num_features: int) -> np.ndarray:
    sigma = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (num_features,)).copy()
    if not np.all(np.isfinite(sigma)) or np.any(sigma <= 0):
        raise ValueError("sigma (the Parzen bandwidth) must be positive and finite for every feature")
    return sigma


def _prelief_dense(query_matrix, query_class_weights, self_mask, row_matrix, inverse_two_sigma_sq):
    """sum_i W[n, i] k_d(x_i(d), x_n(d)) for a dense row block, in bounded chunks."""
    num_queries, num_features = query_matrix.shape
    num_rows = row_matrix.shape[0]
    pair_weights = query_class_weights.copy()  # (m, n_block)
    pair_weights[self_mask] = 0.0
    query_sums = np.zeros((num_queries, num_features))
    if num_rows == 0:
        return query_sums
    feature_chunk = max(1, min(num_features, _MAX_BLOCK_ELEMENTS // max(num_rows, 1)))
    query_chunk = max(1, _MAX_BLOCK_ELEMENTS // max(num_rows * feature_chunk, 1))
    for q0 in range(0, num_queries, query_chunk):
        qs = slice(q0, q0 + query_chunk)
        for f0 in range(0, num_features, feature_chunk):
            fs = slice(f0, f0 + feature_chunk)
            difference = query_matrix[qs, None, fs] - row_matrix[None, :, fs]
            kernel = np.exp(-(difference * difference) * inverse_two_sigma_sq[fs])
            query_sums[qs, fs] = np.einsum("qi,qif->qf", pair_weights[qs], kernel)
    return query_sums


def _prelief_sparse(query_matrix, query_labels, query_is_in_block_weight, row_matrix, row_labels,
                    class_weights, inverse_two_sigma_sq, per_query):
    """The same sums for a CSR row block without densifying it.

    With ``w(c, c')`` the class weights, ``N_c`` the block's rows of class c and
    ``z_d(v) = k_d(v, x_n(d)) - k_d(0, x_n(d))`` (zero for implicit zeros):

    ``S[n, d] = k_d(0, x_n(d)) sum_c w(y_n, c) N_c + sum_{stored (i, d)} w(y_n, y_i) z_d(x_i(d))``.

    The second sum is, for a query whose x_n(d) is not stored (0), ``G[y_n, d]`` with
    ``G[c, d] = sum_{stored (i,d)} w(c, y_i) (k_d(x_i(d), 0) - 1)``, and otherwise a sum over the
    co-non-zeros of query and block (as in the sparse Manhattan distance). The query's own
    term (weight ``1/(n_y - 1)`` times ``k_d(x, x) = 1``) is subtracted at the end.
    """
    from sparkfs.core.neighbours import _co_nonzero_triples

    num_queries, num_features = query_matrix.shape
    num_classes = class_weights.shape[0]
    query_csr = sp.csr_matrix(query_matrix)
    row_csc = sp.csc_matrix(row_matrix)
    row_csc.sum_duplicates()
    block_class_counts = np.bincount(row_labels, minlength=num_classes).astype(np.float64)
    zero_term = class_weights @ block_class_counts  # (C,): sum_c w(c_query, c) N_c
    # G[c, d]: stored block entries against a query value of 0.
    entry_feature = np.repeat(np.arange(num_features), np.diff(row_csc.indptr))
    entry_label = row_labels[row_csc.indices]
    kernel_at_zero = np.exp(-(row_csc.data ** 2) * inverse_two_sigma_sq[entry_feature]) - 1.0
    g_table = np.zeros((num_classes, num_features))
    for class_index in range(num_classes):
        g_table[class_index] = np.bincount(
            entry_feature, weights=class_weights[class_index, entry_label] * kernel_at_zero, minlength=num_features
        )
    # Per stored query entry (n, d): the co-non-zero sum, replacing G[y_n, d].
    query_csc = sp.csc_matrix(query_csr)
    query_csc.sum_duplicates()
    query_entry_feature = np.repeat(np.arange(num_features), np.diff(query_csc.indptr))
    query_entry_row = query_csc.indices.astype(np.int64)
    query_entry_value = query_csc.data
    query_entry_label = query_labels[query_entry_row]
    kernel_query_at_zero = np.exp(-(query_entry_value ** 2) * inverse_two_sigma_sq[query_entry_feature])
    stored_sum = np.zeros(query_entry_value.size)
    cumulative = np.concatenate(
        [[0], np.cumsum(np.diff(query_csc.indptr).astype(np.int64) * np.diff(row_csc.indptr).astype(np.int64))]
    )
    feature_start = 0
    while feature_start < num_features:
        limit = cumulative[feature_start] + _MAX_BLOCK_ELEMENTS
        feature_stop = min(max(int(np.searchsorted(cumulative, limit, side="right")) - 1, feature_start + 1), num_features)
        query_entry, row_entry = _co_nonzero_triples(query_csc, row_csc, feature_start, feature_stop)
        if query_entry.size:
            feature = query_entry_feature[query_entry]
            difference = query_entry_value[query_entry] - row_csc.data[row_entry]
            z_value = np.exp(-(difference * difference) * inverse_two_sigma_sq[feature]) - kernel_query_at_zero[query_entry]
            weight = class_weights[query_entry_label[query_entry], row_labels[row_csc.indices[row_entry]]]
            stored_sum += np.bincount(query_entry, weights=weight * z_value, minlength=query_entry_value.size)
        feature_start = feature_stop
    stored_correction = stored_sum - g_table[query_entry_label, query_entry_feature]
    zero_scale = zero_term[query_labels]  # (m,)
    if per_query:
        query_sums = zero_scale[:, None] + g_table[query_labels]  # k_d(0, 0) = 1 where x_n(d) = 0
        query_sums[query_entry_row, query_entry_feature] += (
            (kernel_query_at_zero - 1.0) * zero_scale[query_entry_row] + stored_correction
        )
        query_sums -= query_is_in_block_weight[:, None]
        return query_sums
    feature_sums = np.full(num_features, zero_scale.sum())
    feature_sums += np.bincount(query_labels, minlength=num_classes).astype(np.float64) @ g_table
    feature_sums += np.bincount(
        query_entry_feature,
        weights=(kernel_query_at_zero - 1.0) * zero_scale[query_entry_row] + stored_correction,
        minlength=num_features,
    )
    feature_sums -= query_is_in_block_weight.sum()
    return feature_sums


def prelief_margin_sums(
    query_matrix: Matrix,
    query_ids,
    query_labels,
    row_matrix: Matrix,
    row_ids,
    row_labels,
    *,
    class_counts,
    sigma,
    per_query: bool = False,
    block_size: int = 2048,
):
    """Partial Parzen-Relief margins, eq. (14), contributed by one block of rows.

    ``m_n(d) = sum_i W[n, i] k_d(x_i(d), x_n(d))`` with ``W[n, i] = 1/(n_{y_n} - 1)`` for a
    same-class row ``i != n``, ``-1/(n - n_{y_n})`` for another class's row and 0 for the query
    itself; ``k_d(a, b) = exp(-(a - b)^2 / (2 sigma_d^2))``. The sum is linear in the rows, so
    the partial sums of disjoint blocks add up to the margins (no neighbour search).

    Parameters
    ----------
    query_matrix : ndarray or csr_matrix, shape (m, p)
    query_ids, query_labels : arrays of shape (m,)
    row_matrix : ndarray or csr_matrix, shape (n_block, p)
    row_ids, row_labels : arrays of shape (n_block,)
    class_counts : array of shape (C,)
        Rows per class in the *whole* data set (the normalisers of the means).
    sigma : float or array of shape (p,)
        Bandwidth per feature, > 0.
    per_query : bool
        Return the (m, p) per-query partial margins instead of their sum over queries.
    block_size : int
        Rows per chunk of the block.

    Returns
    -------
    ndarray of shape (p,) (sum over the queries) or (m, p).

    Notes
    -----
    Dense rows: ``m x n_block x p`` kernel evaluations in chunks of ~4 M. CSR rows:
    ``O(nnz(block) C + nnz(queries) + co-non-zeros)`` for the sum, ``O(m p)`` more per query.
    """
    query_ids = np.asarray(query_ids, dtype=np.int64)
    query_labels = np.asarray(query_labels).astype(np.int64)
    row_ids = np.asarray(row_ids, dtype=np.int64)
    row_labels = np.asarray(row_labels).astype(np.int64)
    num_queries, num_features = query_matrix.shape
    sigma = _check_sigma(sigma, num_features)
    inverse_two_sigma_sq = 1.0 / (2.0 * sigma * sigma)
    class_weights = prelief_class_weights(class_counts)
    result = np.zeros((num_queries, num_features)) if per_query else np.zeros(num_features)
    row_is_sparse = sp.issparse(row_matrix)
    if row_is_sparse:
        row_matrix = sp.csr_matrix(row_matrix)
    elif sp.issparse(query_matrix):
        query_matrix = query_matrix.toarray()  # dense rows: the queries are densified once
    for start in range(0, row_ids.size, block_size):
        block = slice(start, start + block_size)
        block_ids, block_labels = row_ids[block], row_labels[block]
        sorted_block_ids = np.sort(block_ids)
        self_position = np.minimum(np.searchsorted(sorted_block_ids, query_ids), sorted_block_ids.size - 1)
        query_in_block = sorted_block_ids[self_position] == query_ids
        if row_is_sparse:
            self_weight = np.where(query_in_block, class_weights[query_labels, query_labels], 0.0)
            result += _prelief_sparse(
                query_matrix, query_labels, self_weight, row_matrix[block], block_labels,
                class_weights, inverse_two_sigma_sq, per_query,
            )
        else:
            self_mask = query_ids[:, None] == block_ids[None, :]
            query_sums = _prelief_dense(
                np.asarray(query_matrix), class_weights[query_labels][:, block_labels], self_mask,
                np.asarray(row_matrix[block]), inverse_two_sigma_sq,
            )
            result += query_sums if per_query else query_sums.sum(axis=0)
    return result


def prelief(rows: Matrix, row_ids, row_labels, query_ids, *, class_counts=None, sigma) -> np.ndarray:
    """Parzen-Relief margins, eq. (14), of the queries ``query_ids`` (rows of ``rows``).

    Returns
    -------
    ndarray of shape (m, p); their mean over the queries is the P-Relief score.
    """
    row_ids = np.asarray(row_ids, dtype=np.int64)
    row_labels = np.asarray(row_labels).astype(np.int64)
    if class_counts is None:
        class_counts = np.bincount(row_labels)
    positions = _positions_of_ids(row_ids, np.asarray(query_ids, dtype=np.int64))
    return prelief_margin_sums(
        rows[positions], row_ids[positions], row_labels[positions], rows, row_ids, row_labels,
        class_counts=class_counts, sigma=sigma, per_query=True,
    )
