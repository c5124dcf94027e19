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

import numpy as np

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
    counts = np.diff(np.asarray(indptr, dtype=np.int64)) ** 2
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
    self_sum = terms.self_sums[0] if with_self else np.nan
    return np.concatenate(([self_sum], terms.cross[:, 0], terms.own[:, 0]))
