"""Parzen-ISE, the ``marginal`` reading on sparse data: the exact all-pairs sums of eq. 19 (pure NumPy).

:func:`sparkfs.core.parzen_ise_marginal.marginal_block_terms` sums, per feature k, over every ordered
pair (i, j) of rows (i the p-side row, j the q-side query) and every group pair (c, c'), with
``a = u_ic u_jc'``, ``v = h^2 (s_ck^2 + s_c'k^2)``, ``t = x_ik - w_k x_jk``, ``D = x_ik - x_jk`` and
``K(e) = N(e; 0, v)``::

    self   a K(D)                                                       (P_k, eq. 19)
    cross  a K(t),   a K(t) t x_jk / v,   a K(t) ((t x_jk / v)^2 - x_jk^2 / v)      (C_k and eq. 22)
    own    a K(w D), -a K(w D) w D^2 / v, a K(w D) ((w D^2 / v)^2 - D^2 / v)        (Q_k and eq. 22)

That is N^2 pairs. On sparse data every row that stores no value in feature k has the same scaled
value ``z_k``: the points are centred at the column means before :func:`standardised` divides by
the scale, so ``z_k = (0 - mean_k) / scale_k`` (:func:`scaled_zero_values`), which is not 0. With
S_k the m_k rows that store a value and ``Z_kc = sum_{i not in S_k} u_ic`` the zero rows'
membership sums (all rows' sums minus S_k's), the pairs split into

* zero row, zero query: one kernel per group pair, ``sum_cc' Z_kc Z_kc' f(z_k, z_k)``;
* stored row i, zero query: ``sum_{i in S_k} sum_cc' u_ic Z_kc' f(x_ik, z_k)``, and
  zero row, stored query j: ``sum_{j in S_k} sum_cc' Z_kc u_jc' f(z_k, x_jk)`` (the C terms of a
  pair are not symmetric in i and j, so the two halves differ; only their total over all ordered
  pairs is symmetric, as the rows and the queries are the same N points);
* stored row, stored query: the m_k^2 pairs explicitly,

where f is the per-pair term above with its first argument the row value x_ik and its second the
query value x_jk. The cost is ``O(C^2 (d + nnz + sum_k m_k^2))`` instead of ``O(C^2 d N^2)``
(:func:`nonzero_pair_count` reports ``m_k^2``); with hard groups a stored/stored pair has one group
pair, so that part costs ``O(sum_k m_k^2)``. Every part goes through one pair kernel
(:func:`_pair_list_terms`), in chunks of at most ``_CHUNK_ELEMENTS`` kernel values.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from sparkfs.core.fuzzy_cmeans import fcm_terms_from_distances, memberships_from_distances
from sparkfs.core.numba_jit import AVAILABLE, compile_kernel
from sparkfs.core.parzen_ise import GroupMoments
from sparkfs.core.parzen_ise_marginal import MarginalTerms

#: Kernel values (pairs x group pairs) held at once.
_CHUNK_ELEMENTS = 1 << 18


def scaled_zero_values(mean, feature_variance) -> np.ndarray:
    """``z_k = (0 - mean_k) / scale_k``: the value a raw 0 takes after centring at the column means and
    :func:`sparkfs.core.parzen_ise_marginal.standardised` (scale ``sqrt(var_k)``, 1 for a constant feature)."""
    scale = np.sqrt(np.asarray(feature_variance, dtype=float))
    scale = np.where(scale > 0, scale, 1.0)
    return -np.asarray(mean, dtype=float) / scale


def nonzero_pair_count(indptr, per_feature: bool = False):
    """The stored/stored pair count ``sum_k m_k^2`` (``m_k = indptr[k+1] - indptr[k]``), or the (d,)
    counts ``m_k^2`` with ``per_feature``: the explicit part of the cost, the rest being
    ``O(C^2 (d + nnz))``. A caller may route features whose ``m_k^2`` is too large elsewhere."""
    lengths: np.ndarray = np.diff(np.asarray(indptr, dtype=np.int64))
    counts = lengths ** 2
    return counts if per_feature else int(counts.sum())


def _pair_list_terms(row_values, query_values, weight, v, features, w, with_self: bool) -> np.ndarray:
    """The 7 per-pair terms of the module docstring summed over group pairs, for P listed pairs.

    ``row_values``/``query_values`` (P,) are x_ik and x_jk, ``features`` (P,) the feature k of each pair,
    ``weight`` and ``v`` (P, G) the group-pair weights (``u_ic u_jc'``, with a zero row's membership
    replaced by the zero rows' sum Z_kc) and variances ``h^2 (s_ck^2 + s_c'k^2)`` of each pair (G = C^2,
    or G = 1 for a pair of hard-group rows), ``w`` (d,). Returns (7, P): self (0 unless ``with_self``),
    cross[0..2], own[0..2].
    """
    weight = weight / np.sqrt(2.0 * np.pi * v)
    inverse = 1.0 / v
    w_k = w[features]
    x_j = query_values
    t = row_values - w_k * x_j
    d2 = (row_values - x_j) ** 2
    out = np.zeros((7, t.size))
    kernel = weight * np.exp(-0.5 * (t * t)[:, None] * inverse)
    k0, k1, k2 = kernel.sum(axis=1), (kernel * inverse).sum(axis=1), (kernel * inverse * inverse).sum(axis=1)
    out[1] = k0
    out[2] = t * x_j * k1
    out[3] = (t * x_j) ** 2 * k2 - x_j * x_j * k1
    kernel = weight * np.exp(-0.5 * (w_k * w_k * d2)[:, None] * inverse)
    q0, q1, q2 = kernel.sum(axis=1), (kernel * inverse).sum(axis=1), (kernel * inverse * inverse).sum(axis=1)
    out[4] = q0
    out[5] = -w_k * d2 * q1
    out[6] = (w_k * d2) ** 2 * q2 - d2 * q1
    if with_self:
        out[0] = (weight * np.exp(-0.5 * d2[:, None] * inverse)).sum(axis=1)
    return out


def _add_by_feature(totals: np.ndarray, features: np.ndarray, terms: np.ndarray) -> None:
    for row in range(terms.shape[0]):
        totals[row] += np.bincount(features, weights=terms[row], minlength=totals.shape[1])


def sparse_marginal_terms(indptr, row_indices, values, memberships, zero_values, variances, w, *, h: float,
                          with_self: bool = False, total_memberships=None) -> MarginalTerms:
    """:class:`MarginalTerms` over all N x N ordered pairs of a column-sparse matrix, for all d features.

    The CSC-like input is that of ``scipy.sparse.csc_matrix``: column k stores ``values[indptr[k]:
    indptr[k+1]]`` (the *scaled* values x_ik, centred then divided by the scale) at rows
    ``row_indices[...]`` (distinct within a column); every other row of column k has the value
    ``zero_values[k]`` (z_k, :func:`scaled_zero_values`). ``memberships`` (N, C) are u_ic for every row
    index used; ``total_memberships`` (C,) their sums over all N rows (default: ``memberships.sum(0)``).
    ``variances`` (C, d) are s_ck^2, ``w`` (d,). Equals ``marginal_block_terms(X, U, X, U, variances, w,
    h=h, with_self=with_self)`` on the dense scaled matrix X (up to rounding), split as in the module
    docstring: zero/zero pairs cost O(C^2) per feature, zero/stored pairs O(C^2) per stored value,
    stored/stored pairs O(C^2) per pair (``nonzero_pair_count``), in bounded chunks.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    stored = slice(int(indptr[0]), int(indptr[-1]))  # (a slice of a larger CSC may not start at 0)
    row_indices = np.asarray(row_indices, dtype=np.int64)[stored]
    values = np.asarray(values, dtype=float)[stored]
    indptr = indptr - indptr[0]
    memberships = np.asarray(memberships, dtype=float)
    zero_values = np.asarray(zero_values, dtype=float).reshape(-1)
    variances, w = np.asarray(variances, dtype=float), np.asarray(w, dtype=float).reshape(-1)
    num_groups, num_features = variances.shape
    total = memberships.sum(axis=0) if total_memberships is None else np.asarray(total_memberships, dtype=float)
    counts = np.diff(indptr)
    entry_features = np.repeat(np.arange(num_features), counts)                # feature of each stored value
    entry_weights = memberships[row_indices].reshape(-1, num_groups)           # (nnz, C)
    zero_sums = np.tile(total, (num_features, 1))                              # Z_kc, (d, C)
    for group in range(num_groups):
        zero_sums[:, group] -= np.bincount(entry_features, weights=entry_weights[:, group], minlength=num_features)
    h2 = float(h) ** 2
    pair_variances = h2 * (variances.T[:, :, None] + variances.T[:, None, :])  # (d, C, C): [k, c(i), c'(j)]
    totals = np.zeros((7, num_features))
    chunk = max(1, _CHUNK_ELEMENTS // (num_groups * num_groups))

    def add(row_values, query_values, row_weights, query_weights, features):
        weight = (row_weights[:, :, None] * query_weights[:, None, :]).reshape(features.size, -1)
        v = pair_variances[features].reshape(features.size, -1)
        _add_by_feature(totals, features, _pair_list_terms(row_values, query_values, weight, v, features, w,
                                                           with_self))

    # zero row, zero query (eq. 19 terms at x_ik = x_jk = z_k, weight Z_kc Z_kc')
    for start in range(0, num_features, chunk):
        k = np.arange(start, min(start + chunk, num_features))
        add(zero_values[k], zero_values[k], zero_sums[k], zero_sums[k], k)
    # stored row with zero query, and zero row with stored query
    for start in range(0, entry_features.size, chunk):
        e = slice(start, min(start + chunk, entry_features.size))
        k = entry_features[e]
        add(values[e], zero_values[k], entry_weights[e], zero_sums[k], k)
        add(zero_values[k], values[e], zero_sums[k], entry_weights[e], k)
    # stored row with stored query: pair p of feature k is (a, b) = divmod(p - first_k, m_k); with hard
    # groups each pair has one group pair (C^2 times fewer kernels)
    labels = np.argmax(entry_weights, axis=1) if entry_weights.size else np.zeros(0, dtype=np.int64)
    hard = bool(np.all(entry_weights[np.arange(labels.size), labels] == 1.0)
                and np.all(entry_weights.sum(axis=1) == 1.0))
    pair_offsets = np.concatenate(([0], np.cumsum(counts * counts)))
    step = max(1, _CHUNK_ELEMENTS) if hard else chunk
    for start in range(0, int(pair_offsets[-1]), step):
        pairs = np.arange(start, min(start + step, int(pair_offsets[-1])))
        k = np.searchsorted(pair_offsets, pairs, side="right") - 1
        a, b = np.divmod(pairs - pair_offsets[k], counts[k])
        rows, queries = indptr[k] + a, indptr[k] + b
        if hard:
            v = pair_variances[k, labels[rows], labels[queries]][:, None]
            _add_by_feature(totals, k, _pair_list_terms(values[rows], values[queries], np.ones_like(v), v, k, w,
                                                        with_self))
        else:
            add(values[rows], values[queries], entry_weights[rows], entry_weights[queries], k)
    return MarginalTerms(totals[0] if with_self else None, totals[1:4], totals[4:7])


def sparse_feature_marginal_terms(values, memberships, zero_value, total_memberships, variances, w, *, h: float,
                                  with_self: bool = False) -> np.ndarray:
    """The 7 pair sums of ONE feature k over all N x N ordered pairs: (self, cross[0..2], own[0..2]).

    ``values`` (m,) are the scaled values of the rows that store one, ``memberships`` (m, C) theirs,
    ``zero_value`` z_k the scaled value of every other row, ``total_memberships`` (C,) the membership
    sums over all N rows, ``variances`` (C,) s_ck^2, ``w`` the weight w_k. Equal to column k of
    ``marginal_block_terms(X, U, X, U, ...)`` on the dense scaled matrix (eq. 19 and eq. 22 terms, see
    the module docstring); the self sum is NaN unless ``with_self``.
    """
    values = np.asarray(values, dtype=float).reshape(-1)
    total_memberships = np.asarray(total_memberships, dtype=float).reshape(-1)
    memberships = np.asarray(memberships, dtype=float).reshape(values.size, total_memberships.size)
    terms = sparse_marginal_terms([0, values.size], np.arange(values.size), values, memberships, [zero_value],
                                  np.asarray(variances, dtype=float).reshape(-1, 1), [w], h=h,
                                  with_self=with_self, total_memberships=total_memberships)
    self_sum = terms.self_sums[0] if terms.self_sums is not None else np.nan  # None unless with_self
    return np.concatenate(([self_sum], terms.cross[:, 0], terms.own[:, 0]))


# ---- rows and queries that differ: the sums of a row block and a query batch ------------------------
#
# Over a row set R (cut into blocks) and a query set Q (cut into batches), each feature's sums split as
# above, and every part is a sum of per-block or per-batch pieces:
#
# * stored row x stored query: :func:`stored_pair_sums` of each (row block, query batch);
# * stored row x zero query: :func:`stored_zero_sums` of each row block against ``Zq``, the zero
#   queries' membership sums over ALL of Q (:func:`zero_membership_sums`);
# * zero row x stored query: :func:`stored_zero_sums` of each query batch (``stored_side="queries"``)
#   against ``Zr``, the zero rows' sums over ALL of R; when Q = R (every row a query) this is also the
#   sum over the row blocks, each taken as queries;
# * zero row x zero query: :func:`zero_zero_sums` of ``Zr`` and ``Zq``, once.
#
# Each returns the (7, d) sums (self, cross[0..2], own[0..2]) of the module docstring, for the features
# of ``features`` (a (d,) bool mask; None: all). The loops are compiled by Numba when it is there
# (about 10 ns a pair with hard groups), else the NumPy pair lists above.

class SparseColumns(NamedTuple):
    """Stored values of some points in CSC order: feature k holds ``values[indptr[k]:indptr[k+1]]``
    (scaled) at points ``positions[...]`` (rows of the memberships that go with it)."""

    indptr: np.ndarray
    positions: np.ndarray
    values: np.ndarray


def scaled_columns(matrix, mean, feature_variance, features=None) -> SparseColumns:
    """The stored values of a raw sparse (n, d) ``matrix`` centred at ``mean`` and divided by the scale
    ``sqrt(var)`` (1 for a constant feature), as :class:`SparseColumns`; explicit zeros are dropped (they
    take the zero value z_k like every unstored entry); with ``features`` (bool mask) only those columns
    keep their values."""
    csc = sp.csc_matrix(matrix, dtype=float, copy=True)
    if features is not None:
        csc = csc @ sp.diags(np.asarray(features, dtype=float))
        csc = sp.csc_matrix(csc)
    csc.eliminate_zeros()
    csc.sort_indices()
    scale = np.sqrt(np.asarray(feature_variance, dtype=float))
    scale = np.where(scale > 0, scale, 1.0)
    columns = np.repeat(np.arange(csc.shape[1]), np.diff(csc.indptr))
    values = (csc.data - np.asarray(mean, dtype=float)[columns]) / scale[columns]
    return SparseColumns(csc.indptr.astype(np.int64), csc.indices.astype(np.int64), values)


def zero_membership_sums(columns: SparseColumns, memberships, total_memberships=None) -> np.ndarray:
    """``Z_kc``: the membership sums of the points that store no value in feature k, (d, C): the sums
    over all points (``total_memberships``, default the memberships' own) less those that store one."""
    memberships = np.asarray(memberships, dtype=float)
    total = memberships.sum(axis=0) if total_memberships is None else np.asarray(total_memberships, dtype=float)
    num_features = columns.indptr.size - 1
    entry_features = np.repeat(np.arange(num_features), np.diff(columns.indptr))
    sums = np.tile(total, (num_features, 1))
    for group in range(memberships.shape[1]):
        sums[:, group] -= np.bincount(entry_features, weights=memberships[columns.positions, group],
                                      minlength=num_features)
    return sums


def _membership_lists(memberships):
    """Per point, its positive memberships: ``(pointer (n+1,), groups, weights)``."""
    memberships = np.asarray(memberships, dtype=float)
    points, groups = np.nonzero(memberships > 0)
    pointer = np.concatenate(([0], np.cumsum(np.bincount(points, minlength=memberships.shape[0]))))
    return pointer.astype(np.int64), groups.astype(np.int64), memberships[points, groups]


def _mask(features, num_features):
    return np.ones(num_features, dtype=np.bool_) if features is None else np.asarray(features, dtype=np.bool_)


def _add_pair(out, k, x_i, x_j, weight, v, w_k, with_self):
    """Add one pair's 7 terms (module docstring) to ``out[:, k]``; ``weight`` the group-pair weight."""
    inverse = 1.0 / v
    weight = weight / np.sqrt(2.0 * np.pi * v)
    t = x_i - w_k * x_j
    kernel = weight * np.exp(-0.5 * t * t * inverse)
    factor = t * x_j * inverse
    out[1, k] += kernel
    out[2, k] += kernel * factor
    out[3, k] += kernel * (factor * factor - x_j * x_j * inverse)
    d2 = (x_i - x_j) * (x_i - x_j)
    kernel = weight * np.exp(-0.5 * w_k * w_k * d2 * inverse)
    scaled = w_k * d2 * inverse
    out[4, k] += kernel
    out[5, k] -= kernel * scaled
    out[6, k] += kernel * (scaled * scaled - d2 * inverse)
    if with_self:
        out[0, k] += weight * np.exp(-0.5 * d2 * inverse)


def _stored_pairs_loop(row_indptr, row_positions, row_values, row_pointer, row_groups, row_weights,
                       query_indptr, query_positions, query_values, query_pointer, query_groups, query_weights,
                       variances, w, h2, with_self, mask, out):
    for k in range(row_indptr.size - 1):
        if not mask[k]:
            continue
        for a in range(row_indptr[k], row_indptr[k + 1]):
            i = row_positions[a]
            for b in range(query_indptr[k], query_indptr[k + 1]):
                j = query_positions[b]
                for g in range(row_pointer[i], row_pointer[i + 1]):
                    for h in range(query_pointer[j], query_pointer[j + 1]):
                        v = h2 * (variances[row_groups[g], k] + variances[query_groups[h], k])
                        _add_pair(out, k, row_values[a], query_values[b], row_weights[g] * query_weights[h], v,
                                  w[k], with_self)


def _stored_zero_loop(indptr, positions, values, pointer, groups, weights, other_sums, zero_values, variances, w,
                      h2, with_self, stored_rows, mask, out):
    num_groups = other_sums.shape[1]
    for k in range(indptr.size - 1):
        if not mask[k]:
            continue
        for a in range(indptr[k], indptr[k + 1]):
            i = positions[a]
            for g in range(pointer[i], pointer[i + 1]):
                for c in range(num_groups):
                    if other_sums[k, c] == 0.0:
                        continue
                    v = h2 * (variances[groups[g], k] + variances[c, k])
                    if stored_rows:
                        _add_pair(out, k, values[a], zero_values[k], weights[g] * other_sums[k, c], v, w[k], with_self)
                    else:
                        _add_pair(out, k, zero_values[k], values[a], other_sums[k, c] * weights[g], v, w[k], with_self)


def _zero_zero_loop(row_sums, query_sums, zero_values, variances, w, h2, with_self, mask, out):
    num_groups = row_sums.shape[1]
    for k in range(row_sums.shape[0]):
        if not mask[k]:
            continue
        for c in range(num_groups):
            for e in range(num_groups):
                if row_sums[k, c] == 0.0 or query_sums[k, e] == 0.0:
                    continue
                v = h2 * (variances[c, k] + variances[e, k])
                _add_pair(out, k, zero_values[k], zero_values[k], row_sums[k, c] * query_sums[k, e], v, w[k],
                          with_self)


_python_loops = {loop.__name__: loop for loop in (_stored_pairs_loop, _stored_zero_loop, _zero_zero_loop)}
if AVAILABLE:  # pragma: no branch
    _add_pair = compile_kernel(_add_pair, inline=True)  # the loops below call the compiled helper
    _compiled_loops = {name: compile_kernel(loop) for name, loop in _python_loops.items()}
else:  # pragma: no cover
    _compiled_loops = {}


def _run_loop(loop, *args, use_numba=None):
    """Run a loop compiled (Numba, when there and ``use_numba`` is not False) or as plain Python (the
    reference the tests compare with; slow: small inputs only)."""
    if loop.__name__ in _compiled_loops and use_numba is not False:
        return _compiled_loops[loop.__name__](*args)
    return loop(*args)


def stored_pair_sums(rows: SparseColumns, row_memberships, queries: SparseColumns, query_memberships, variances, w,
                     *, h: float, with_self: bool = False, features=None, use_numba=None) -> np.ndarray:
    """(7, d): the sums over every stored row value x stored query value of the same feature, all group
    pairs with positive memberships (hard groups: one). O(sum_k m_k(rows) m_k(queries) G) for G group
    pairs a pair."""
    variances, w = np.asarray(variances, dtype=float), np.asarray(w, dtype=float).reshape(-1)
    out = np.zeros((7, variances.shape[1]))
    _run_loop(_stored_pairs_loop, *_side(rows, row_memberships), *_side(queries, query_memberships),
              variances, w, float(h) ** 2, bool(with_self), _mask(features, w.size), out, use_numba=use_numba)
    return out


def stored_zero_sums(columns: SparseColumns, memberships, other_zero_sums, zero_values, variances, w, *, h: float,
                     with_self: bool = False, stored_side: str = "rows", features=None, use_numba=None) -> np.ndarray:
    """(7, d): the stored values of one side against every zero entry of the other, through the other
    side's zero membership sums ``other_zero_sums`` (d, C). ``stored_side="rows"``: the stored values are
    rows x_ik and the zeros queries; ``"queries"``: the stored values are queries x_jk and the zeros rows
    (the C terms are not symmetric). O(nnz G C)."""
    if stored_side not in ("rows", "queries"):
        raise ValueError(f"stored_side must be 'rows' or 'queries'; got {stored_side!r}")
    variances, w = np.asarray(variances, dtype=float), np.asarray(w, dtype=float).reshape(-1)
    out = np.zeros((7, variances.shape[1]))
    _run_loop(_stored_zero_loop, *_side(columns, memberships), np.ascontiguousarray(other_zero_sums, dtype=float),
              np.asarray(zero_values, dtype=float).reshape(-1), variances, w, float(h) ** 2, bool(with_self),
              stored_side == "rows", _mask(features, w.size), out, use_numba=use_numba)
    return out


def zero_zero_sums(row_zero_sums, query_zero_sums, zero_values, variances, w, *, h: float, with_self: bool = False,
                   features=None, use_numba=None) -> np.ndarray:
    """(7, d): every zero row against every zero query, ``sum_cc' Zr_kc Zq_kc' f(z_k, z_k)``; O(d C^2)."""
    variances, w = np.asarray(variances, dtype=float), np.asarray(w, dtype=float).reshape(-1)
    out = np.zeros((7, variances.shape[1]))
    _run_loop(_zero_zero_loop, np.ascontiguousarray(row_zero_sums, dtype=float),
              np.ascontiguousarray(query_zero_sums, dtype=float), np.asarray(zero_values, dtype=float).reshape(-1),
              variances, w, float(h) ** 2, bool(with_self), _mask(features, w.size), out, use_numba=use_numba)
    return out


def _side(columns: SparseColumns, memberships):
    return (np.asarray(columns.indptr, dtype=np.int64), np.asarray(columns.positions, dtype=np.int64),
            np.asarray(columns.values, dtype=float), *_membership_lists(memberships))


def terms_of_sums(sums, with_self: bool) -> MarginalTerms:
    """:class:`MarginalTerms` from (7, d) sums (self, cross[0..2], own[0..2])."""
    sums = np.asarray(sums, dtype=float)
    return MarginalTerms(sums[0].copy() if with_self else None, sums[1:4].copy(), sums[4:7].copy())


# ---- which features are summed exactly, and the landmark estimate of the others ---------------------

class SparsePairPlan(NamedTuple):
    """How the pair sums of a sparse matrix are taken (:func:`sparse_pair_plan`)."""

    exact: np.ndarray      # (d,) bool: every N x N pair; the others against the landmarks, scaled N / M
    num_landmarks: int     # M (0: no feature estimated)
    exact_pairs: int       # sum over exact features of m_k^2 (stored/stored pairs, explicit)
    landmark_pairs: float  # the expected stored pairs of the estimated features against M rows

    @property
    def pairs(self) -> float:
        return float(self.exact_pairs) + float(self.landmark_pairs)

    @property
    def num_estimated(self) -> int:
        return int(np.count_nonzero(~self.exact))


def sparse_pair_plan(counts, num_rows: int, *, pair_budget: float, feature_rows: int,
                     landmarks: int) -> SparsePairPlan:
    """The exact features and the landmarks of the sparse pair sums, from the stored counts m_k.

    Every feature is exact while ``sum_k m_k^2 <= pair_budget`` (or ``landmarks >= num_rows``). Else the
    features with ``m_k <= feature_rows`` are exact, and the others are estimated against
    ``M = landmarks`` rows: their stored pairs cost about ``M sum m_k^2 / N`` (the landmarks store m_k M / N
    of their values, in expectation). The caller compares :attr:`SparsePairPlan.pairs` with its budget;
    the rest of the cost, ``O(C (d C + nnz))`` per evaluation, does not depend on the pairs.
    """
    counts = np.asarray(counts, dtype=np.int64).reshape(-1)
    squares = counts * counts
    total = int(squares.sum())
    if total <= pair_budget or landmarks >= num_rows:
        return SparsePairPlan(np.ones(counts.size, dtype=bool), 0, total, 0.0)
    exact = counts <= feature_rows
    if exact.all():
        return SparsePairPlan(exact, 0, total, 0.0)
    return SparsePairPlan(exact, int(landmarks), int(squares[exact].sum()),
                          float(landmarks) * float(squares[~exact].sum()) / float(num_rows))


def sparse_group_moment_terms(matrix, memberships, mean, shifts=None):
    """:func:`sparkfs.core.parzen_ise.group_moment_terms` of the centred rows ``matrix - mean`` without
    densifying a sparse ``matrix``: ``sum_i u_ic (x_ik - mean_k - s_ck)`` and its squares from ``U^T X``,
    ``U^T X^2`` and the membership sums (the two-pass shifts keep it well conditioned as there)."""
    memberships = np.asarray(memberships, dtype=float)
    matrix = sp.csr_matrix(matrix, dtype=float)
    weight_sums = memberships.sum(axis=0)
    offset = np.asarray(mean, dtype=float)[None, :] + (0.0 if shifts is None else np.asarray(shifts, dtype=float))
    linear = np.asarray(matrix.T @ memberships).T                       # (C, d): sum_i u_ic x_ik
    quadratic = np.asarray(matrix.multiply(matrix).T @ memberships).T   # sum_i u_ic x_ik^2
    sums = linear - weight_sums[:, None] * offset
    squares = quadratic - 2.0 * offset * linear + weight_sums[:, None] * offset ** 2
    return GroupMoments(weight_sums, sums, squares)


# ---- fuzzy c-means on sparse rows --------------------------------------------------------------------

def sparse_squared_distances(matrix, mean, centres) -> np.ndarray:
    """``D_ic = ||x_i - mean - v_c||^2`` of raw sparse rows to centres in centred coordinates, (n, C),
    expanded as ``||x||^2 - 2 x . (mean + v_c) + ||mean + v_c||^2`` (O(nnz C); floored at 0, as rounding
    may leave a tiny negative)."""
    matrix = sp.csr_matrix(matrix, dtype=float)
    shifted = np.asarray(centres, dtype=float) + np.asarray(mean, dtype=float)[None, :]   # (C, d)
    norms = np.asarray(matrix.multiply(matrix).sum(axis=1)).reshape(-1, 1)
    distances = norms - 2.0 * np.asarray(matrix @ shifted.T) + np.einsum("cd,cd->c", shifted, shifted)[None, :]
    return np.maximum(distances, 0.0)


def sparse_fcm_memberships(matrix, mean, centres, m: float) -> np.ndarray:
    """Bezdek's memberships (:func:`sparkfs.core.fuzzy_cmeans.memberships_from_distances`) from
    :func:`sparse_squared_distances`."""
    return memberships_from_distances(sparse_squared_distances(matrix, mean, centres), m)


def sparse_fcm_block_terms(matrix, mean, centres, m: float):
    """:func:`sparkfs.core.fuzzy_cmeans.fcm_block_terms` of the centred rows ``matrix - mean`` without
    densifying: ``sum u^m (x - mean) = (X^T U^m)^T - (sum u^m) mean``; O(nnz C)."""
    matrix = sp.csr_matrix(matrix, dtype=float)
    mean = np.asarray(mean, dtype=float)

    def centred_sums(powered):
        return np.asarray(matrix.T @ powered).T - powered.sum(axis=0)[:, None] * mean[None, :]
    return fcm_terms_from_distances(centred_sums, sparse_squared_distances(matrix, mean, centres), m)
