"""Sums over pairs of rows: weighted feature differences over chosen pairs, and kernel sums over all pairs.

Pure NumPy/SciPy (no pyspark): the per-block kernels of the pair engine (:mod:`sparkfs.spark.pairs`).
Both are *linear in the rows*, so the partial sums that two disjoint blocks of rows contribute
simply add up; that is what lets a Spark partition compute its share and a reduction finish the job.

* :func:`pair_sums` -- ``sum_j a_j d(x_{q_j}, x_{r_j})`` per feature over a list of
  (query, row, weight) pairs, with ``d = |a - b|`` (the Relief family's margins, eq. 3, 14, 16 of
  Yang & Hu 2012; Han & Yu's margin vectors with neighbours) or ``d = (a - b)^2`` (the hinge terms
  of Lmba, Li & Lu 2009 eq. 16-17, and Simba's update). Optionally per query.
* :func:`feature_kernel_sums` -- for every query q and feature f,
  ``S[q, f] = sum_r W_qr k_f(x_qf - x_rf)`` over *all* rows r, with ``W = U_q A U_r^T`` built from
  group memberships (one-hot classes or soft fuzzy c-means memberships) and a group weight
  matrix ``A``. One-hot U with Parzen-Relief's class means is eq. (14) of Yang & Hu; the
  absolute-difference kernel with ``A = +1`` (other class) / ``-1`` (same class) is Han & Yu's
  margin vector against all hits and misses (2010, eq. 6); soft memberships feed Parzen-ISE.

Kernels (translation invariant, evaluated per feature on the difference ``t = a - b``):
``"gaussian"`` ``exp(-t^2 / (2 sigma_f^2))`` (eq. 14's ``k_d``), ``"abs"`` ``|t|``,
``"square"`` ``t^2``. ``k(0)`` is 1, 0, 0.

Sparse rows stay sparse: with ``k0 = k(0)``, for a query entry x_qf not stored (0),
``S[q, f] = k0 sum_r W_qr + sum_{r stores f} W_qr (k(x_rf) - k0)``, a (query groups x features)
table per block; for a stored query entry the second sum runs over the co-non-zeros of the query
and the block (the same loop as the sparse Manhattan distance,
:func:`sparkfs.core.co_nonzero.co_nonzero_chunks`). Cost
``O(nnz(block) G + nnz(queries) + co-non-zeros)`` instead of ``m n p``. Memory: the co-non-zero
pairs are taken in slices of at most ``_MAX_BLOCK_ELEMENTS / (12 + 2 G)`` pairs, cut between query
entries (a frequent term alone gives m x n_block pairs): a 2,048-row block of the 100,000 x 50,000
term matrix against 1,000 queries of 20 classes peaks at about 110 MiB (1.5 GiB when a whole feature's
pairs gathered their two G-wide membership rows at once).

Self-exclusion: a query that is also a row of the block (same row id) can be left out of its own
sum (``exclude_self``); its term is ``W_qq k0`` on every feature. This assumes what the engine
guarantees: row ids are unique, and a row that carries a query's id *is* that query (same
values), as when the queries are drawn from the rows.
"""

from __future__ import annotations

from typing import Optional, Union

import numpy as np
import scipy.sparse as sp

from sparkfs.core.co_nonzero import co_nonzero_chunks
from sparkfs.core.sparse_input import is_sparse

Matrix = Union[np.ndarray, sp.csr_matrix]

#: Feature differences of :func:`pair_sums`.
DIFFERENCES = ("abs", "square")
#: Kernels of :func:`feature_kernel_sums`.
KERNELS = ("gaussian", "abs", "square")

#: Upper bound on the elements of one temporary (pairs x features, queries x rows x features).
_MAX_BLOCK_ELEMENTS = 4_000_000


def check_difference(difference: str) -> str:
    if difference not in DIFFERENCES:
        raise ValueError(f"The 'difference' parameter must be a str among {set(DIFFERENCES)}. "
                         f"Got {difference!r} instead.")
    return difference


def check_kernel(kernel: str, bandwidth, num_features: int) -> Optional[np.ndarray]:
    """Validate the kernel name; return the per-feature bandwidth for "gaussian" (else None)."""
    if kernel not in KERNELS:
        raise ValueError(f"The 'kernel' parameter must be a str among {set(KERNELS)}. Got {kernel!r} instead.")
    if kernel != "gaussian":
        return None
    if bandwidth is None:
        raise ValueError("the gaussian kernel needs a bandwidth (sigma) per feature")
    sigma = np.broadcast_to(np.asarray(bandwidth, dtype=np.float64), (num_features,)).copy()
    if not np.all(np.isfinite(sigma)) or np.any(sigma <= 0):
        raise ValueError("sigma (the kernel bandwidth) must be positive and finite for every feature")
    return sigma


def _difference(query_rows, neighbour_rows, difference: str):
    delta = query_rows - neighbour_rows
    if difference == "abs":
        return abs(delta)
    return delta.multiply(delta) if sp.issparse(delta) else delta * delta


def _gather_rows(matrix: Matrix, positions: np.ndarray, dense: bool):
    rows = matrix[positions]
    if dense and sp.issparse(rows):
        return rows.toarray()
    return rows


def pair_sums(
    query_matrix: Matrix,
    row_matrix: Matrix,
    query_positions,
    row_positions,
    weights,
    *,
    difference: str = "abs",
    per_query: bool = False,
    num_queries: Optional[int] = None,
):
    """``sum_j weights_j d(x_{query_j}, x_{row_j})`` per feature over a list of pairs.

    Parameters
    ----------
    query_matrix : ndarray or csr_matrix, shape (m, p)
    row_matrix : ndarray or csr_matrix, shape (n, p)
    query_positions : array of int, shape (P,)
        Row of ``query_matrix`` of each pair.
    row_positions : array of int, shape (P,)
        Row of ``row_matrix`` of each pair.
    weights : array of float, shape (P,)
    difference : {"abs", "square"}
        ``|a - b|`` or ``(a - b)^2`` per feature.
    per_query : bool
        Also return the per-query sums (e.g. the margin vectors).
    num_queries : int, optional
        Rows of the per-query output (default ``query_matrix.shape[0]``).

    Returns
    -------
    feature_sums : ndarray, shape (p,)
    query_sums : ndarray, shape (num_queries, p), or None

    Notes
    -----
    Both sides sparse: the differences stay sparse. Otherwise the gathered rows are dense, in
    chunks of at most ~4 M elements. Cost O(P p) (dense) or O(nnz of the pairs' rows) (sparse).
    """
    check_difference(difference)
    query_positions = np.asarray(query_positions, dtype=np.int64)
    row_positions = np.asarray(row_positions, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    num_features = query_matrix.shape[1]
    num_queries = query_matrix.shape[0] if num_queries is None else num_queries
    feature_sums = np.zeros(num_features)
    query_sums = np.zeros((num_queries, num_features)) if per_query else None
    both_sparse = sp.issparse(query_matrix) and sp.issparse(row_matrix)
    if sp.issparse(query_matrix):
        query_matrix = sp.csr_matrix(query_matrix)
    if sp.issparse(row_matrix):
        row_matrix = sp.csr_matrix(row_matrix)
    chunk = len(weights) if both_sparse else max(1, _MAX_BLOCK_ELEMENTS // max(num_features, 1))
    for start in range(0, len(weights), max(chunk, 1)):
        part = slice(start, start + chunk)
        query_rows = _gather_rows(query_matrix, query_positions[part], dense=not both_sparse)
        neighbour_rows = _gather_rows(row_matrix, row_positions[part], dense=not both_sparse)
        differences = _difference(query_rows, neighbour_rows, difference)
        part_weights = weights[part]
        if both_sparse:
            feature_sums += np.asarray(differences.T @ part_weights).ravel()
        else:
            feature_sums += part_weights @ differences
        if per_query:
            selector = sp.csr_matrix(
                (part_weights, (query_positions[part], np.arange(part_weights.size))),
                shape=(num_queries, part_weights.size),
            )
            product = selector @ differences
            query_sums += product.toarray() if sp.issparse(product) else np.asarray(product)
    return feature_sums, query_sums


# --------------------------------------------------------------------------------------------
# Kernel sums over all pairs
# --------------------------------------------------------------------------------------------


def _kernel_of_difference(kernel: str, difference: np.ndarray, inverse_two_sigma_sq) -> np.ndarray:
    if kernel == "gaussian":
        return np.exp(-(difference * difference) * inverse_two_sigma_sq)
    if kernel == "abs":
        return np.abs(difference)
    return difference * difference


def _kernel_at_zero(kernel: str) -> float:
    return 1.0 if kernel == "gaussian" else 0.0


def _memberships(values, num_rows: int, what: str) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2 or values.shape[0] != num_rows:
        raise ValueError(f"{what} must have shape ({num_rows}, groups); got {values.shape}")
    return values


def one_hot(labels, num_groups: int) -> np.ndarray:
    """Membership matrix (n, G) of hard group labels 0..G-1."""
    labels = np.asarray(labels).astype(np.int64)
    memberships = np.zeros((labels.size, num_groups))
    memberships[np.arange(labels.size), labels] = 1.0
    return memberships


def _dense_kernel_sums(kernel, query_matrix, pair_weights, row_matrix, inverse_two_sigma_sq):
    """``sum_r W[q, r] k_f(x_qf - x_rf)`` for a dense row block, in bounded chunks; (m, p)."""
    num_queries, num_features = query_matrix.shape
    num_rows = row_matrix.shape[0]
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
            values = _kernel_of_difference(
                kernel, difference, None if inverse_two_sigma_sq is None else inverse_two_sigma_sq[fs]
            )
            query_sums[qs, fs] = np.einsum("qi,qif->qf", pair_weights[qs], values)
    return query_sums


def _sparse_kernel_sums(kernel, query_matrix, query_mix, row_matrix, row_memberships, inverse_two_sigma_sq, per_query):
    """The same sums for a CSR row block without densifying it (see the module notes).

    ``query_mix = U_q A`` (m, G_r): the weight of row r for query q is ``query_mix[q] . U_r[r]``.
    Returns (m, p) if ``per_query`` else the (p,) sum over the queries.
    """
    num_queries, num_features = query_matrix.shape
    k0 = _kernel_at_zero(kernel)
    row_csc = sp.csc_matrix(row_matrix)
    row_csc.sum_duplicates()
    block_memberships = row_memberships.sum(axis=0)  # (G_r,)
    total_weight = query_mix @ block_memberships  # (m,): sum_r W_qr
    # table[g, f] = sum over stored (r, f) of U_r[g] (k(x_rf) - k0): the block against a query 0.
    entry_feature = np.repeat(np.arange(num_features), np.diff(row_csc.indptr))
    entry_sigma = None if inverse_two_sigma_sq is None else inverse_two_sigma_sq[entry_feature]
    entry_excess = _kernel_of_difference(kernel, row_csc.data, entry_sigma) - k0
    group_table = np.stack([
        np.bincount(entry_feature, weights=row_memberships[row_csc.indices, g] * entry_excess, minlength=num_features)
        for g in range(row_memberships.shape[1])
    ]) if row_memberships.shape[1] else np.zeros((0, num_features))
    # Stored query entries: replace the table's value by the exact co-non-zero sum.
    query_csc = sp.csc_matrix(query_matrix)
    query_csc.sum_duplicates()
    query_entry_feature = np.repeat(np.arange(num_features), np.diff(query_csc.indptr))
    query_entry_row = query_csc.indices.astype(np.int64)
    query_entry_value = query_csc.data
    query_sigma = None if inverse_two_sigma_sq is None else inverse_two_sigma_sq[query_entry_feature]
    query_against_zero = _kernel_of_difference(kernel, query_entry_value, query_sigma)  # k(x_qf - 0)
    stored_sum = np.zeros(query_entry_value.size)
    # Each co-non-zero pair holds about (12 + 2 G) values at once (its indices, difference, kernel and
    # the two membership rows it gathers): the pairs are taken in slices within _MAX_BLOCK_ELEMENTS
    # values, cut between query entries (a frequent term can give one feature m x n_block pairs), so
    # every entry's pairs are summed together, in the same order, whatever the slice size.
    max_pairs = max(1, _MAX_BLOCK_ELEMENTS // (12 + 2 * row_memberships.shape[1]))
    for _, _, chunk_query_entry, chunk_row_entry in co_nonzero_chunks(query_csc, row_csc, max_pairs):
        for part in _slices_between_keys(chunk_query_entry, max_pairs):
            query_entry, row_entry = chunk_query_entry[part], chunk_row_entry[part]
            feature = query_entry_feature[query_entry]
            difference = query_entry_value[query_entry] - row_csc.data[row_entry]
            sigma = None if inverse_two_sigma_sq is None else inverse_two_sigma_sq[feature]
            excess = _kernel_of_difference(kernel, difference, sigma) - query_against_zero[query_entry]
            row_of_entry = row_csc.indices[row_entry]
            weight = np.einsum("tg,tg->t", query_mix[query_entry_row[query_entry]], row_memberships[row_of_entry])
            stored_sum += np.bincount(query_entry, weights=weight * excess, minlength=query_entry_value.size)
    # For a stored entry: k(x_qf) sum_r W + sum_co (W (k(x_qf - x_rf) - k(x_qf))); the table's
    # value k0 sum_r W + (query_mix @ table)[q, f] is what the dense-zero formula would give.
    table_value = np.einsum("eg,eg->e", query_mix[query_entry_row], group_table[:, query_entry_feature].T)
    entry_correction = (query_against_zero - k0) * total_weight[query_entry_row] + stored_sum - table_value
    if per_query:
        query_sums = k0 * total_weight[:, None] + query_mix @ group_table
        query_sums[query_entry_row, query_entry_feature] += entry_correction
        return query_sums
    feature_sums = np.full(num_features, k0 * total_weight.sum())
    feature_sums += query_mix.sum(axis=0) @ group_table
    feature_sums += np.bincount(query_entry_feature, weights=entry_correction, minlength=num_features)
    return feature_sums


def _slices_between_keys(keys: np.ndarray, max_size: int):
    """Consecutive slices of a non-decreasing ``keys`` array, each of at most ``max_size`` elements
    (or one key's run when that is longer), never cutting a run of equal keys."""
    size = keys.size
    if size == 0:
        return
    run_starts = np.concatenate([[0], np.flatnonzero(np.diff(keys)) + 1, [size]])
    start = 0
    while start < size:
        stop = int(run_starts[np.searchsorted(run_starts, start + max_size, side="right") - 1])
        if stop <= start:
            stop = int(run_starts[np.searchsorted(run_starts, start, side="right")])
        yield slice(start, stop)
        start = stop


def feature_kernel_sums(
    query_matrix: Matrix,
    query_ids,
    query_memberships,
    row_matrix: Matrix,
    row_ids,
    row_memberships,
    group_weights,
    *,
    kernel: str = "gaussian",
    sigma=None,
    exclude_self: bool = True,
    per_query: bool = False,
    block_size: int = 2048,
):
    """``S[q, f] = sum_r W_qr k_f(x_qf - x_rf)`` over the rows of one block, ``W = U_q A U_r^T``.

    Parameters
    ----------
    query_matrix : ndarray or csr_matrix, shape (m, p)
    query_ids : array of int, shape (m,)
        Row ids of the queries (a row with the same id is the query itself).
    query_memberships : array, shape (m, G_q)
        ``U_q``: one-hot class indicators or soft memberships of the queries.
    row_matrix : ndarray or csr_matrix, shape (n, p)
    row_ids : array of int, shape (n,)
    row_memberships : array, shape (n, G_r)
        ``U_r`` of the rows.
    group_weights : array, shape (G_q, G_r)
        ``A``.
    kernel : {"gaussian", "abs", "square"}
    sigma : float or array (p,)
        Bandwidth of the gaussian kernel.
    exclude_self : bool
        Leave a query out of its own sum. Row ids must be unique and a row with a query's id
        must hold the query's values (the queries are rows of the data); on CSR rows the
        excluded term is computed as ``W_qq k(0)`` from that assumption.
    per_query : bool
        Return the (m, p) sums instead of their (p,) sum over the queries.
    block_size : int
        Rows per chunk.

    Returns
    -------
    ndarray of shape (p,) or (m, p).

    Notes
    -----
    Dense rows: ``m n p`` kernel evaluations in chunks of ~4 M elements. CSR rows: see the module
    notes. The sums are linear in the rows, so blocks (and partitions) add up.
    """
    query_ids = np.asarray(query_ids, dtype=np.int64)
    row_ids = np.asarray(row_ids, dtype=np.int64)
    num_queries, num_features = query_matrix.shape
    sigma = check_kernel(kernel, sigma, num_features)
    inverse_two_sigma_sq = None if sigma is None else 1.0 / (2.0 * sigma * sigma)
    query_memberships = _memberships(query_memberships, num_queries, "query_memberships")
    row_memberships = _memberships(row_memberships, row_ids.size, "row_memberships")
    group_weights = np.asarray(group_weights, dtype=np.float64)
    if group_weights.shape != (query_memberships.shape[1], row_memberships.shape[1]):
        raise ValueError(
            f"group_weights has shape {group_weights.shape}; expected "
            f"({query_memberships.shape[1]}, {row_memberships.shape[1]}) from the memberships"
        )
    query_mix = query_memberships @ group_weights  # (m, G_r)
    k0 = _kernel_at_zero(kernel)
    result = np.zeros((num_queries, num_features)) if per_query else np.zeros(num_features)
    row_is_sparse = sp.issparse(row_matrix)
    if row_is_sparse:
        row_matrix = sp.csr_matrix(row_matrix)
    elif is_sparse(query_matrix):
        query_matrix = query_matrix.toarray()  # dense rows: the queries are densified once
    for start in range(0, row_ids.size, block_size):
        block = slice(start, start + block_size)
        block_ids, block_memberships = row_ids[block], row_memberships[block]
        if row_is_sparse:
            sums = _sparse_kernel_sums(
                kernel, query_matrix, query_mix, row_matrix[block], block_memberships, inverse_two_sigma_sq, per_query
            )
        else:
            pair_weights = query_mix @ block_memberships.T  # (m, n_block)
            if exclude_self:
                pair_weights[query_ids[:, None] == block_ids[None, :]] = 0.0
            sums = _dense_kernel_sums(kernel, np.asarray(query_matrix), pair_weights, np.asarray(row_matrix[block]),
                                      inverse_two_sigma_sq)
            if not per_query:
                sums = sums.sum(axis=0)
            result += sums
            continue
        if exclude_self and k0 != 0.0:
            order = np.argsort(block_ids, kind="stable")
            position = np.minimum(np.searchsorted(block_ids[order], query_ids), block_ids.size - 1)
            in_block = block_ids[order][position] == query_ids
            self_weight = np.zeros(num_queries)
            self_rows = order[position[in_block]]
            self_weight[in_block] = np.einsum("qg,qg->q", query_mix[in_block], block_memberships[self_rows])
            sums = sums - (k0 * self_weight[:, None] if per_query else k0 * self_weight.sum())
        result += sums
    return result


#: Largest (queries x rows) distance table held at once by :func:`euclidean_distance_sums`.
_DISTANCE_TABLE_BUDGET = 4_000_000


def euclidean_distance_sums(query_matrix, row_matrix) -> np.ndarray:
    """``sum_{r in block} ||x_q - x_r||_2`` for every query q (the rows of one block).

    Parameters
    ----------
    query_matrix : array-like of shape (m, p)
    row_matrix : ndarray or CSR matrix of shape (b, p)
        CSR rows are densified a chunk at a time.

    Returns
    -------
    distance_sums : ndarray of shape (m,)
        Additive over disjoint blocks of rows: the sum over all blocks is the total distance of
        each query to every row (Han & Yu's outlying degree, up to 1/(n - 1)).

    Notes
    -----
    Distances are computed elementwise (``scipy.spatial.distance.cdist``), not through
    ``|a|^2 + |b|^2 - 2 a.b``: the square root magnifies that identity's rounding (about
    ``sqrt(eps) |a|`` for close vectors), and a query's distance to itself is exactly 0, so a
    query that is also a row adds nothing. Cost O(m b p), an (m, chunk) table at a time.
    """
    from scipy.spatial.distance import cdist

    queries = np.atleast_2d(np.asarray(query_matrix.toarray() if sp.issparse(query_matrix) else query_matrix,
                                       dtype=np.float64))
    if queries.shape[1] != row_matrix.shape[1]:
        raise ValueError(f"queries have {queries.shape[1]} features and rows {row_matrix.shape[1]}")
    distance_sums = np.zeros(queries.shape[0])
    chunk = max(1, _DISTANCE_TABLE_BUDGET // max(1, queries.shape[0]))
    for start in range(0, row_matrix.shape[0], chunk):
        rows = row_matrix[start:start + chunk]
        rows = rows.toarray() if sp.issparse(rows) else np.asarray(rows, dtype=np.float64)
        distance_sums += cdist(queries, rows, metric="euclidean").sum(axis=1)
    return distance_sums
