"""Parzen-ISE ``marginal`` pair sums on sparse data (sparkfs.core.parzen_ise_sparse) against a reference
written from the docstring of sparkfs.core.parzen_ise_marginal (eq. 19 terms P_k, C_k, Q_k and their
eq. 22 w_k derivatives over all N x N ordered pairs and all group pairs; no code shared), and against
marginal_block_terms on the dense matrix. Mutations (roles of i and j swapped in part of the pairs, the
derivative factor taken from the wrong row, a raw zero left uncentred) must be detected."""

import numpy as np
import pytest
import scipy.sparse as sp

import sparkfs.core.parzen_ise_sparse as sparse_ise
from sparkfs.core.parzen_ise_marginal import marginal_block_terms, standardised
from sparkfs.core.parzen_ise_sparse import (
    nonzero_pair_count,
    scaled_zero_values,
    sparse_feature_marginal_terms,
    sparse_marginal_terms,
)

N, D, C, H = 40, 6, 3, 0.6
EMPTY, DENSE = 2, 4
WEIGHTS = (np.array([0.0, 1.0, 0.37, 0.81, 0.05, 1.3]), np.array([1.0, 0.0, 0.6, 0.0, 1.0, 0.25]),
           np.array([0.0, 0.5, 1.0, 0.2, 0.0, 1.0]))


def make_data(seed=0, kind="soft"):
    """Raw sparse matrix (density 0.2, one empty and one dense feature), its centred and scaled dense
    form, the scaled stored values in CSC order, the scaled zeros, memberships and group variances."""
    rng = np.random.default_rng(seed)
    raw = np.where(rng.random((N, D)) < 0.2, rng.exponential(2.0, (N, D)) + 0.1, 0.0)
    raw[:, EMPTY] = 0.0
    raw[:, DENSE] = rng.normal(1.0, 2.0, N)
    raw[raw[:, DENSE] == 0.0, DENSE] = 0.5
    mean, var = raw.mean(axis=0), raw.var(axis=0)
    scale = np.sqrt(var)
    scale[scale == 0] = 1.0
    dense = (raw - mean) / scale
    zeros = (0.0 - mean) / scale
    csc = sp.csc_matrix(raw)
    cols = np.repeat(np.arange(D), np.diff(csc.indptr))
    scaled_values = (csc.data - mean[cols]) / scale[cols]
    if kind == "hard":
        labels = np.concatenate([np.arange(C), rng.integers(0, C, N - C)])
        rng.shuffle(labels)
        memberships = np.eye(C)[labels]
    else:
        memberships = rng.dirichlet(np.ones(C), N)
    variances = rng.uniform(0.2, 1.5, (C, D))
    return dict(raw=raw, mean=mean, var=var, dense=dense, zeros=zeros, csc=csc, values=scaled_values,
                memberships=memberships, variances=variances)


def density(difference, variance):
    return np.exp(-0.5 * difference ** 2 / variance) / np.sqrt(2.0 * np.pi * variance)


def reference_terms(x, u, variances, w, h, factor_from_row=False):
    """(7, d): sum_ij sum_cc' u_ic u_jc' times N(D; 0, v), the C kernel N(t; 0, v) with t = x_ik - w_k x_jk
    and its derivatives K t x_jk / v, K ((t x_jk / v)^2 - x_jk^2 / v), the Q kernel N(w D; 0, v) and its
    derivatives -K w D^2 / v, K ((w D^2 / v)^2 - D^2 / v); D = x_ik - x_jk, v = h^2 (s_ck^2 + s_c'k^2).
    i runs down axis 0 (the p-side row), j along axis 1 (the q-side query). ``factor_from_row`` (a
    mutation): the C derivatives take x_ik instead of x_jk."""
    out = np.zeros((7, x.shape[1]))
    for k in range(x.shape[1]):
        x_i, x_j = x[:, k][:, None], x[:, k][None, :]
        t, diff = x_i - w[k] * x_j, x_i - x_j
        factor = np.broadcast_to(x_i if factor_from_row else x_j, t.shape)
        for c in range(u.shape[1]):
            for c2 in range(u.shape[1]):
                a = u[:, c][:, None] * u[:, c2][None, :]
                v = h * h * (variances[c, k] + variances[c2, k])
                p_kernel, c_kernel, q_kernel = density(diff, v), density(t, v), density(w[k] * diff, v)
                out[0, k] += np.sum(a * p_kernel)
                out[1, k] += np.sum(a * c_kernel)
                out[2, k] += np.sum(a * c_kernel * t * factor / v)
                out[3, k] += np.sum(a * c_kernel * ((t * factor / v) ** 2 - factor ** 2 / v))
                out[4, k] += np.sum(a * q_kernel)
                out[5, k] += np.sum(-a * q_kernel * w[k] * diff ** 2 / v)
                out[6, k] += np.sum(a * q_kernel * ((w[k] * diff ** 2 / v) ** 2 - diff ** 2 / v))
    return out


def stacked(terms):
    self_sums = terms.self_sums if terms.self_sums is not None else np.full(terms.cross.shape[1], np.nan)
    return np.vstack([self_sums[None, :], terms.cross, terms.own])


def sparse_terms(data, w, with_self=True, zeros=None):
    csc = data["csc"]
    return stacked(sparse_marginal_terms(csc.indptr, csc.indices, data["values"], data["memberships"],
                                         data["zeros"] if zeros is None else zeros, data["variances"], w, h=H,
                                         with_self=with_self))


@pytest.mark.parametrize("kind", ["hard", "soft"])
@pytest.mark.parametrize("w", WEIGHTS)
@pytest.mark.parametrize("with_self", [True, False])
def test_matches_reference_and_dense_block_terms(kind, w, with_self):
    data = make_data(1, kind)
    got = sparse_terms(data, w, with_self)
    expected = reference_terms(data["dense"], data["memberships"], data["variances"], w, H)
    rows = slice(0 if with_self else 1, 7)
    np.testing.assert_allclose(got[rows], expected[rows], rtol=1e-10, atol=0)
    if not with_self:
        assert np.all(np.isnan(got[0]))
    dense = stacked(marginal_block_terms(data["dense"], data["memberships"], data["dense"], data["memberships"],
                                         data["variances"], w, h=H, with_self=True))
    np.testing.assert_allclose(got[rows], dense[rows], rtol=1e-10, atol=0)


@pytest.mark.parametrize("kind", ["hard", "soft"])
@pytest.mark.parametrize("with_self", [True, False])
def test_single_feature_matches_reference(kind, with_self):
    data = make_data(2, kind)
    w = WEIGHTS[0]
    expected = reference_terms(data["dense"], data["memberships"], data["variances"], w, H)
    csc, u = data["csc"], data["memberships"]
    for k in range(D):
        stored = slice(csc.indptr[k], csc.indptr[k + 1])
        got = sparse_feature_marginal_terms(data["values"][stored], u[csc.indices[stored]], data["zeros"][k],
                                            u.sum(axis=0), data["variances"][:, k], w[k], h=H, with_self=with_self)
        assert got.shape == (7,)
        np.testing.assert_allclose(got[0 if with_self else 1:], expected[0 if with_self else 1:, k], rtol=1e-10)
        assert with_self or np.isnan(got[0])
    assert csc.indptr[EMPTY + 1] == csc.indptr[EMPTY] and csc.indptr[DENSE + 1] - csc.indptr[DENSE] == N


def test_small_chunks_split_features_and_agree(monkeypatch):
    data = make_data(3, "soft")
    expected = sparse_terms(data, WEIGHTS[1])
    monkeypatch.setattr(sparse_ise, "_CHUNK_ELEMENTS", 7 * C * C)  # 7 pairs: a dense feature spans many chunks
    np.testing.assert_allclose(sparse_terms(data, WEIGHTS[1]), expected, rtol=1e-12)
    np.testing.assert_allclose(expected, reference_terms(data["dense"], data["memberships"], data["variances"],
                                                         WEIGHTS[1], H), rtol=1e-10)


def test_csc_column_slice_and_offset_indptr():
    data = make_data(4, "hard")
    columns = np.array([5, DENSE, 0, EMPTY])
    w = WEIGHTS[2]
    part = data["csc"][:, columns]
    mean, var = data["mean"][columns], data["var"][columns]
    cols = np.repeat(np.arange(columns.size), np.diff(part.indptr))
    scale = np.sqrt(np.where(var > 0, var, 1.0))
    values = (part.data - mean[cols]) / scale[cols]
    got = stacked(sparse_marginal_terms(part.indptr, part.indices, values, data["memberships"],
                                        scaled_zero_values(mean, var), data["variances"][:, columns], w[columns],
                                        h=H, with_self=True))
    expected = reference_terms(data["dense"], data["memberships"], data["variances"], w, H)[:, columns]
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    # a range of columns of the full CSC arrays, its indptr not starting at 0
    csc = data["csc"]
    got = stacked(sparse_marginal_terms(csc.indptr[3:6], csc.indices, data["values"], data["memberships"],
                                        data["zeros"][3:5], data["variances"][:, 3:5], w[3:5], h=H, with_self=True))
    np.testing.assert_allclose(got, reference_terms(data["dense"], data["memberships"], data["variances"], w,
                                                    H)[:, 3:5], rtol=1e-10)


@pytest.mark.parametrize("kind", ["hard", "soft"])
def test_hard_groups_take_one_group_pair_per_stored_pair(kind, monkeypatch):
    data = make_data(8, kind)
    group_pairs = []
    original = sparse_ise._pair_list_terms

    def recording(row_values, query_values, weight, *rest):
        group_pairs.append((row_values.size, weight.shape[1]))
        return original(row_values, query_values, weight, *rest)
    monkeypatch.setattr(sparse_ise, "_pair_list_terms", recording)
    got = sparse_terms(data, WEIGHTS[2])
    stored_pairs = nonzero_pair_count(data["csc"].indptr)
    assert sum(size for size, groups in group_pairs if groups == 1) == (stored_pairs if kind == "hard" else 0)
    np.testing.assert_allclose(got, reference_terms(data["dense"], data["memberships"], data["variances"],
                                                    WEIGHTS[2], H), rtol=1e-10)


def test_scaled_zero_values_are_centred_standardised_zeros():
    data = make_data(5)
    centred_zero = (np.zeros((1, D)) - data["mean"])
    expected, _ = standardised(centred_zero, data["var"], data["variances"])
    np.testing.assert_allclose(scaled_zero_values(data["mean"], data["var"]), expected[0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(scaled_zero_values(data["mean"], data["var"]), data["zeros"], rtol=1e-15)
    assert np.all(data["zeros"][np.arange(D) != EMPTY] != 0.0)


def test_pair_count_and_empty_features_cost_one_pair_each(monkeypatch):
    data = make_data(6)
    m = np.diff(data["csc"].indptr)
    assert nonzero_pair_count(data["csc"].indptr) == int(np.sum(m * m))
    np.testing.assert_array_equal(nonzero_pair_count(data["csc"].indptr, per_feature=True), m * m)
    assert m[EMPTY] == 0 and m[DENSE] == N
    sizes = []
    original = sparse_ise._pair_list_terms

    def counting(*args):
        sizes.append(args[0].size)
        return original(*args)
    monkeypatch.setattr(sparse_ise, "_pair_list_terms", counting)
    num_features = 50
    empty = sp.csc_matrix((N, num_features))
    terms = sparse_marginal_terms(empty.indptr, empty.indices, empty.data, data["memberships"],
                                  np.full(num_features, -0.3), np.ones((C, num_features)), np.zeros(num_features),
                                  h=H, with_self=True)
    assert sum(sizes) == num_features  # one zero/zero "pair" (C^2 kernels) per feature
    u = data["memberships"].sum(axis=0)
    one = density(0.0, H * H * 2.0) * u.sum() ** 2  # at w = 0 every pair is the kernel at 0
    np.testing.assert_allclose(terms.self_sums, one, rtol=1e-12)
    np.testing.assert_allclose(terms.own[0], one, rtol=1e-12)
    np.testing.assert_allclose(terms.cross[0], density(-0.3, H * H * 2.0) * u.sum() ** 2, rtol=1e-12)


@pytest.mark.parametrize("kind", ["hard", "soft"])
def test_mutations_are_detected(kind, monkeypatch):
    data = make_data(7, kind)
    w = WEIGHTS[0]
    expected = reference_terms(data["dense"], data["memberships"], data["variances"], w, H)
    cross = slice(1, 4)
    # the C derivatives with the factor of the wrong row
    wrong = reference_terms(data["dense"], data["memberships"], data["variances"], w, H, factor_from_row=True)
    assert not np.allclose(wrong[2:4], expected[2:4], rtol=1e-6)
    # a raw zero left uncentred (z_k = 0)
    assert not np.allclose(sparse_terms(data, w, zeros=np.zeros(D))[cross], expected[cross], rtol=1e-6)
    # the zero-row / stored-query pairs computed with the roles of i and j swapped (the stored-row /
    # zero-query pairs twice); the zero/zero pairs are symmetric, so swapping them changes nothing
    original = sparse_ise._pair_list_terms
    zeros = data["zeros"]

    def swapped_when_row_is_zero(row_values, query_values, weight, v, features, *rest):
        if np.array_equal(row_values, zeros[features]):  # weight[p, c, c'] = u_ic u_jc' becomes u_jc u_ic'
            weight, v = (a.reshape(-1, C, C).transpose(0, 2, 1).reshape(features.size, -1) for a in (weight, v))
            return original(query_values, row_values, weight, v, features, *rest)
        return original(row_values, query_values, weight, v, features, *rest)
    monkeypatch.setattr(sparse_ise, "_pair_list_terms", swapped_when_row_is_zero)
    mutated = sparse_terms(data, w)
    assert not np.allclose(mutated[cross], expected[cross], rtol=1e-6)
    # ... while P and Q (symmetric in i and j) are unchanged: the swap only shows in C
    np.testing.assert_allclose(mutated[[0, 4, 5, 6]], expected[[0, 4, 5, 6]], rtol=1e-10)
    monkeypatch.setattr(sparse_ise, "_pair_list_terms", original)
    np.testing.assert_allclose(sparse_terms(data, w), expected, rtol=1e-10)


# ---- rows and queries that differ: row blocks x query batches ------------------------------------------

def split_terms(data, w, row_blocks, query_batches, use_numba=None, features=None):
    """The sums over the rows of ``row_blocks`` (lists of row positions) and the queries of
    ``query_batches``, assembled as the module's notes say: stored/stored per (block, batch), stored rows
    against every zero query per block, stored queries against every zero row per batch, zero/zero once."""
    raw, u = data["raw"], data["memberships"]
    mean, var, v, zeros = data["mean"], data["var"], data["variances"], data["zeros"]
    rows_all = np.concatenate(row_blocks)
    queries_all = np.concatenate(query_batches)
    options = dict(h=H, with_self=True, use_numba=use_numba, features=features)

    def columns(positions):
        return sparse_ise.scaled_columns(sp.csr_matrix(raw[positions]), mean, var)
    row_zero = sparse_ise.zero_membership_sums(columns(rows_all), u[rows_all])
    query_zero = sparse_ise.zero_membership_sums(columns(queries_all), u[queries_all])
    total = sparse_ise.zero_zero_sums(row_zero, query_zero, zeros, v, w, **options)
    for block in row_blocks:
        total += sparse_ise.stored_zero_sums(columns(block), u[block], query_zero, zeros, v, w, **options)
        for batch in query_batches:
            total += sparse_ise.stored_pair_sums(columns(block), u[block], columns(batch), u[batch], v, w, **options)
    for batch in query_batches:
        total += sparse_ise.stored_zero_sums(columns(batch), u[batch], row_zero, zeros, v, w, stored_side="queries",
                                             **options)
    return total


@pytest.mark.parametrize("kind", ["hard", "soft"])
@pytest.mark.parametrize("use_numba", [None, False])
def test_row_blocks_and_query_batches_add_up_to_the_pair_sums(kind, use_numba):
    data = make_data(9, kind)
    w = WEIGHTS[0]
    row_blocks = [np.arange(0, 13), np.arange(13, 30), np.arange(30, 34)]     # 34 of the 40 rows
    query_batches = [np.array([1, 5, 6, 20]), np.arange(22, 40)]               # 22 queries, some not rows
    rows_all, queries_all = np.concatenate(row_blocks), np.concatenate(query_batches)
    x, u = data["dense"], data["memberships"]
    expected = stacked(marginal_block_terms(x[queries_all], u[queries_all], x[rows_all], u[rows_all],
                                            data["variances"], w, h=H, with_self=True))
    got = split_terms(data, w, row_blocks, query_batches, use_numba)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12 * np.abs(expected).max())
    # the same points on both sides: equal to sparse_marginal_terms; a feature mask leaves the others at 0
    every = [np.arange(N)]
    mask = np.arange(D) % 2 == 0
    masked = split_terms(data, w, every, every, use_numba, features=mask)
    np.testing.assert_allclose(masked[:, mask], sparse_terms(data, w)[:, mask], rtol=1e-10)
    assert np.all(masked[:, ~mask] == 0.0)


def test_stored_zero_sums_keep_the_roles_of_rows_and_queries():
    data = make_data(10, "soft")
    cols = sparse_ise.scaled_columns(sp.csr_matrix(data["raw"]), data["mean"], data["var"])
    zero_sums = sparse_ise.zero_membership_sums(cols, data["memberships"])
    args = (cols, data["memberships"], zero_sums, data["zeros"], data["variances"], WEIGHTS[0])
    as_rows = sparse_ise.stored_zero_sums(*args, h=H, stored_side="rows")
    as_queries = sparse_ise.stored_zero_sums(*args, h=H, stored_side="queries")
    np.testing.assert_allclose(as_rows[4:], as_queries[4:], rtol=1e-12)  # Q is symmetric in i and j
    assert not np.allclose(as_rows[1:4], as_queries[1:4], rtol=1e-6)    # C is not
    with pytest.raises(ValueError, match="stored_side"):
        sparse_ise.stored_zero_sums(*args, h=H, stored_side="both")


def test_sparse_pair_plan_and_sparse_group_moments():
    counts = np.array([0, 3, 10, 50, 400])
    plan = sparse_ise.sparse_pair_plan(counts, 1000, pair_budget=int((counts ** 2).sum()), feature_rows=20,
                                       landmarks=100)
    assert plan.exact.all() and plan.num_landmarks == 0 and plan.num_estimated == 0
    plan = sparse_ise.sparse_pair_plan(counts, 1000, pair_budget=1000, feature_rows=20, landmarks=100)
    np.testing.assert_array_equal(plan.exact, [True, True, True, False, False])
    assert plan.exact_pairs == 109 and plan.num_landmarks == 100
    assert plan.landmark_pairs == pytest.approx(100 * (50 ** 2 + 400 ** 2) / 1000)
    assert sparse_ise.sparse_pair_plan(counts, 1000, pair_budget=1000, feature_rows=20, landmarks=1000).exact.all()
    from sparkfs.core.parzen_ise import group_moment_terms

    data = make_data(11, "soft")
    shifts = np.random.default_rng(0).normal(size=(C, D))
    centred = data["raw"] - data["mean"]
    for shift in (None, shifts):
        want = group_moment_terms(centred, data["memberships"], shift)
        got = sparse_ise.sparse_group_moment_terms(sp.csr_matrix(data["raw"]), data["memberships"], data["mean"],
                                                   shift)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.abs(b).max())


def test_sparse_fcm_terms_equal_the_dense_ones():
    from sparkfs.core.fuzzy_cmeans import fcm_block_terms, fcm_memberships

    data = make_data(12, "soft")
    centred = data["raw"] - data["mean"]
    centres = centred[[0, 7, 19]] + 0.1
    raw = sp.csr_matrix(data["raw"])
    np.testing.assert_allclose(sparse_ise.sparse_fcm_memberships(raw, data["mean"], centres, 2.0),
                               fcm_memberships(centred, centres, 2.0), rtol=1e-10)
    got = sparse_ise.sparse_fcm_block_terms(raw, data["mean"], centres, 1.7)
    want = fcm_block_terms(centred, centres, 1.7)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10 * np.abs(b).max())
    on_centre = sparse_ise.sparse_fcm_memberships(raw[:1], data["mean"], centred[[0, 0, 5]], 2.0)
    np.testing.assert_allclose(on_centre, [[0.5, 0.5, 0.0]])
