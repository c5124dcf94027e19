"""Pair sums, kernel sums and the weighted metric vs brute-force NumPy references.

The ``reference_*`` functions loop explicitly over queries, rows (or pairs) and features, straight
from the definitions in :mod:`sparkfs.core.pairs` and :mod:`sparkfs.core.neighbours`; they share no
code with sparkfs. Closeness: ``max |got - ref| <= 1e-9 * max |ref|``.
"""

import math
import zlib

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.core.neighbours import local_neighbour_table, pairwise_distances
from sparkfs.core.pairs import feature_kernel_sums, one_hot, pair_sums

REL_TOL = 1e-9
#: Where the CSR goes: both sides, the rows only, the queries only, neither.
LAYOUTS = ["dense", "csr", "dense_queries_csr_rows", "csr_queries_dense_rows"]
KERNELS = ["gaussian", "abs", "square"]


def assert_close(got, ref):
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    assert got.shape == ref.shape
    scale = max(np.max(np.abs(ref), initial=0.0), 1e-300)
    error = np.max(np.abs(got - ref), initial=0.0)
    assert error <= REL_TOL * scale, f"max |got - ref| = {error:.3e}, max |ref| = {scale:.3e}"


def rng_for(*case):
    """A generator seeded by the test case, so every case sees its own fixed data."""
    return np.random.default_rng(zlib.crc32(repr(case).encode()))


def random_matrix(rng, num_rows, num_features, density=0.5, integer=False):
    values = rng.integers(-3, 4, (num_rows, num_features)) if integer else rng.normal(size=(num_rows, num_features))
    return np.where(rng.random((num_rows, num_features)) < density, values, 0).astype(np.float64)


def in_layout(query_matrix, row_matrix, layout):
    sparse_queries = layout in ("csr", "csr_queries_dense_rows")
    sparse_rows = layout in ("csr", "dense_queries_csr_rows")
    return (sp.csr_matrix(query_matrix) if sparse_queries else query_matrix,
            sp.csr_matrix(row_matrix) if sparse_rows else row_matrix)


def messy_csr(dense, rng, duplicates=False):
    """CSR equal to ``dense`` with explicit zeros, shuffled (unsorted) indices and optionally duplicates."""
    data, indices, indptr = [], [], [0]
    for row in dense:
        columns = list(np.flatnonzero(row))
        values = [float(row[c]) for c in columns]
        zero_columns = np.flatnonzero(row == 0)
        for c in rng.choice(zero_columns, size=min(2, zero_columns.size), replace=False):
            columns.append(int(c))
            values.append(0.0)
        if duplicates and values and values[0] != 0.0:
            values[0] /= 2.0  # halves are exact: the two stored copies sum back to the value
            columns.append(columns[0])
            values.append(values[0])
        order = rng.permutation(len(columns))
        indices.extend(np.asarray(columns, dtype=np.int64)[order])
        data.extend(np.asarray(values)[order])
        indptr.append(len(indices))
    matrix = sp.csr_matrix((np.asarray(data), np.asarray(indices, dtype=np.int32), np.asarray(indptr)),
                           shape=dense.shape)
    assert matrix.nnz > np.count_nonzero(dense) and not matrix.has_sorted_indices
    return matrix


# ----------------------------------------------------------------------------------------------
# References
# ----------------------------------------------------------------------------------------------


def reference_pair_sums(query_matrix, row_matrix, query_positions, row_positions, weights, difference, num_queries):
    """sum_j a_j d(x_{q_j}, x_{r_j}) per feature, and per query; d = |a - b| or (a - b)^2."""
    num_features = query_matrix.shape[1]
    feature_sums, query_sums = np.zeros(num_features), np.zeros((num_queries, num_features))
    for q, r, a in zip(query_positions, row_positions, weights):
        for f in range(num_features):
            t = query_matrix[q, f] - row_matrix[r, f]
            value = a * (abs(t) if difference == "abs" else t * t)
            feature_sums[f] += value
            query_sums[q, f] += value
    return feature_sums, query_sums


def reference_kernel(kernel, t, sigma):
    if kernel == "gaussian":
        return math.exp(-t * t / (2.0 * sigma * sigma))
    return abs(t) if kernel == "abs" else t * t


def reference_kernel_sums(query_matrix, query_ids, query_memberships, row_matrix, row_ids, row_memberships,
                          group_weights, kernel, sigma, exclude_self):
    """S[q, f] = sum_r W_qr k_f(x_qf - x_rf), W_qr = sum_{g, h} U_q[q, g] A[g, h] U_r[r, h]."""
    num_queries, num_features = query_matrix.shape
    sums = np.zeros((num_queries, num_features))
    for q in range(num_queries):
        for r in range(row_matrix.shape[0]):
            if exclude_self and query_ids[q] == row_ids[r]:
                continue
            weight = 0.0
            for g in range(group_weights.shape[0]):
                for h in range(group_weights.shape[1]):
                    weight += query_memberships[q, g] * group_weights[g, h] * row_memberships[r, h]
            for f in range(num_features):
                sigma_f = None if sigma is None else sigma[f]
                sums[q, f] += weight * reference_kernel(kernel, query_matrix[q, f] - row_matrix[r, f], sigma_f)
    return sums


def reference_weighted_distance(q, r, weights, metric):
    """The distance of w*q and w*r (squared for euclidean)."""
    total = 0.0
    for f in range(q.shape[0]):
        t = weights[f] * q[f] - weights[f] * r[f]
        total += t * t if metric == "euclidean" else abs(t)
    return total


def reference_neighbour_table(query_matrix, query_ids, row_matrix, row_ids, row_labels, num_classes, k, metric,
                              weights):
    """Per query and class the k nearest rows by (distance, id), the query itself excluded; pads -1 / inf."""
    ids = np.full((len(query_ids), num_classes, k), -1, dtype=np.int64)
    distances = np.full((len(query_ids), num_classes, k), np.inf)
    for i in range(len(query_ids)):
        for c in range(num_classes):
            candidates = sorted(
                (reference_weighted_distance(query_matrix[i], row_matrix[r], weights, metric), row_ids[r])
                for r in range(len(row_ids)) if row_labels[r] == c and row_ids[r] != query_ids[i]
            )[:k]
            for j, (distance, row_id) in enumerate(candidates):
                ids[i, c, j], distances[i, c, j] = row_id, distance
    return ids, distances


# ----------------------------------------------------------------------------------------------
# pair_sums
# ----------------------------------------------------------------------------------------------


def pair_case(rng, num_queries=9, num_rows=14, num_features=6, num_pairs=40):
    query_matrix = random_matrix(rng, num_queries, num_features)
    row_matrix = random_matrix(rng, num_rows, num_features)
    query_positions = rng.integers(0, num_queries, num_pairs)
    row_positions = rng.integers(0, num_rows, num_pairs)
    # Repeated pairs (some with another weight) and zero weights.
    query_positions = np.concatenate([query_positions, query_positions[:6]])
    row_positions = np.concatenate([row_positions, row_positions[:6]])
    weights = rng.normal(size=query_positions.size)
    weights[::7] = 0.0
    return query_matrix, row_matrix, query_positions, row_positions, weights


@pytest.mark.parametrize("per_query", [False, True])
@pytest.mark.parametrize("difference", ["abs", "square"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_pair_sums_match_the_definition(layout, difference, per_query):
    query_matrix, row_matrix, query_positions, row_positions, weights = pair_case(rng_for(layout, difference))
    ref_features, ref_queries = reference_pair_sums(
        query_matrix, row_matrix, query_positions, row_positions, weights, difference, query_matrix.shape[0]
    )
    got_features, got_queries = pair_sums(
        *in_layout(query_matrix, row_matrix, layout), query_positions, row_positions, weights,
        difference=difference, per_query=per_query,
    )
    assert_close(got_features, ref_features)
    if per_query:
        assert_close(got_queries, ref_queries)
    else:
        assert got_queries is None


@pytest.mark.parametrize("layout", LAYOUTS)
def test_pair_sums_with_more_output_queries(layout):
    query_matrix, row_matrix, query_positions, row_positions, weights = pair_case(rng_for("num_queries", layout))
    num_queries = query_matrix.shape[0] + 4
    _, ref_queries = reference_pair_sums(query_matrix, row_matrix, query_positions, row_positions, weights, "abs",
                                         num_queries)
    _, got_queries = pair_sums(*in_layout(query_matrix, row_matrix, layout), query_positions, row_positions,
                               weights, per_query=True, num_queries=num_queries)
    assert_close(got_queries, ref_queries)


@pytest.mark.parametrize("difference", ["abs", "square"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_pair_sums_add_up_over_halves_of_the_pairs(layout, difference):
    query_matrix, row_matrix, query_positions, row_positions, weights = pair_case(rng_for("halves", layout))
    matrices = in_layout(query_matrix, row_matrix, layout)
    half = query_positions.size // 2
    parts = [pair_sums(*matrices, query_positions[s], row_positions[s], weights[s], difference=difference,
                       per_query=True) for s in (slice(None, half), slice(half, None), slice(None))]
    assert_close(parts[0][0] + parts[1][0], parts[2][0])
    assert_close(parts[0][1] + parts[1][1], parts[2][1])


# ----------------------------------------------------------------------------------------------
# feature_kernel_sums
# ----------------------------------------------------------------------------------------------


def kernel_case(rng, memberships, num_rows=23, num_features=5, num_inside=6, num_outside=4):
    """Rows with unique unsorted ids; queries = some rows (same ids) + points that are not rows."""
    row_matrix = random_matrix(rng, num_rows, num_features)
    row_ids = rng.permutation(np.arange(100, 100 + 3 * num_rows, 3))
    inside = rng.choice(num_rows, num_inside, replace=False)
    query_matrix = np.vstack([row_matrix[inside], random_matrix(rng, num_outside, num_features)])
    query_ids = np.concatenate([row_ids[inside], 10_000 + np.arange(num_outside)])
    num_queries = query_ids.size
    if memberships == "one_hot":
        row_labels = rng.integers(0, 3, num_rows)
        query_labels = np.concatenate([row_labels[inside], rng.integers(0, 3, num_outside)])
        row_memberships, query_memberships = np.eye(3)[row_labels], np.eye(3)[query_labels]
    else:
        query_groups = 2 if memberships == "soft_2x3" else 3
        row_memberships = rng.random((num_rows, 3))
        row_memberships /= row_memberships.sum(axis=1, keepdims=True)
        query_memberships = rng.random((num_queries, query_groups))
        query_memberships /= query_memberships.sum(axis=1, keepdims=True)
        if query_groups == 3:
            query_memberships[:num_inside] = row_memberships[inside]
    group_weights = rng.normal(size=(query_memberships.shape[1], 3))
    sigma = rng.uniform(0.5, 2.0, num_features)
    return (query_matrix, query_ids, query_memberships, row_matrix, row_ids, row_memberships, group_weights), sigma


@pytest.mark.parametrize("block_size", [5, 2048])
@pytest.mark.parametrize("per_query", [False, True])
@pytest.mark.parametrize("exclude_self", [True, False])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("memberships", ["one_hot", "soft", "soft_2x3"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_sums_match_the_definition(kernel, memberships, layout, exclude_self, per_query, block_size):
    case, sigma = kernel_case(rng_for(kernel, memberships, layout), memberships)
    sigma = sigma if kernel == "gaussian" else None
    query_matrix, query_ids, query_memberships, row_matrix, row_ids, row_memberships, group_weights = case
    ref = reference_kernel_sums(*case, kernel, sigma, exclude_self)
    queries, rows = in_layout(query_matrix, row_matrix, layout)
    got = feature_kernel_sums(
        queries, query_ids, query_memberships, rows, row_ids, row_memberships, group_weights,
        kernel=kernel, sigma=sigma, exclude_self=exclude_self, per_query=per_query, block_size=block_size,
    )
    assert_close(got, ref if per_query else ref.sum(axis=0))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_sums_add_up_over_disjoint_row_blocks(kernel, layout):
    case, sigma = kernel_case(rng_for("blocks", kernel, layout), "soft")
    query_matrix, query_ids, query_memberships, row_matrix, row_ids, row_memberships, group_weights = case
    queries, rows = in_layout(query_matrix, row_matrix, layout)
    options = dict(kernel=kernel, sigma=sigma, exclude_self=True, per_query=True, block_size=4)

    def block_sums(block):
        return feature_kernel_sums(queries, query_ids, query_memberships, rows[block], row_ids[block],
                                   row_memberships[block], group_weights, **options)

    first, second = np.arange(0, 9), np.arange(9, row_ids.size)
    whole = block_sums(np.arange(row_ids.size))
    assert_close(block_sums(first) + block_sums(second), whole)
    assert_close(whole, reference_kernel_sums(*case, kernel, sigma, True))


def test_sparse_kernel_sums_in_small_slices_of_pairs_are_the_same_bits(monkeypatch):
    """The co-non-zero pairs are taken in slices within _MAX_BLOCK_ELEMENTS values (Parzen-Relief's
    workers reached 3.9 GB on the term matrix): slices of a few pairs, cut between query entries,
    give the same bits as one slice."""
    from sparkfs.core import pairs

    case, sigma = kernel_case(rng_for("slices"), "soft", num_rows=40, num_features=6)
    query_matrix, query_ids, query_memberships, row_matrix, row_ids, row_memberships, group_weights = case
    arguments = (sp.csr_matrix(query_matrix), query_ids, query_memberships, sp.csr_matrix(row_matrix), row_ids,
                 row_memberships, group_weights)
    options = dict(kernel="gaussian", sigma=sigma, per_query=True)
    whole = feature_kernel_sums(*arguments, **options)
    monkeypatch.setattr(pairs, "_MAX_BLOCK_ELEMENTS", 3 * (12 + 2 * 3))  # 3 pairs a slice
    assert [(part.start, part.stop) for part in pairs._slices_between_keys(np.array([0, 0, 1, 2, 2, 2, 2, 3]), 3)] == \
        [(0, 3), (3, 7), (7, 8)]
    assert np.array_equal(feature_kernel_sums(*arguments, **options), whole)


@pytest.mark.parametrize("duplicates", [False, True])
@pytest.mark.parametrize("messy", ["both", "queries", "rows"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_sums_of_messy_csr_equal_the_dense_result(kernel, messy, duplicates):
    rng = rng_for("messy", kernel, messy, duplicates)
    case, sigma = kernel_case(rng, "soft")
    query_matrix, query_ids, query_memberships, row_matrix, row_ids, row_memberships, group_weights = case
    queries = messy_csr(query_matrix, rng, duplicates) if messy != "rows" else query_matrix
    rows = messy_csr(row_matrix, rng, duplicates) if messy != "queries" else row_matrix
    for per_query in (False, True):
        options = dict(kernel=kernel, sigma=sigma, exclude_self=True, per_query=per_query, block_size=7)
        dense = feature_kernel_sums(query_matrix, query_ids, query_memberships, row_matrix, row_ids,
                                    row_memberships, group_weights, **options)
        got = feature_kernel_sums(queries, query_ids, query_memberships, rows, row_ids, row_memberships,
                                  group_weights, **options)
        assert_close(got, dense)


@pytest.mark.parametrize("layout", ["dense", "csr"])
def test_han_yu_margin_vector_against_all_hits_and_misses(layout):
    """Han & Yu (2010, eq. 6): m_q = sum_{misses} |x_q - x_miss| - sum_{hits, not q} |x_q - x_hit|."""
    rng = rng_for("han-yu", layout)
    num_rows, num_classes = 20, 3
    data = random_matrix(rng, num_rows, 4)
    labels = rng.integers(0, num_classes, num_rows)
    ids = rng.permutation(num_rows) + 50
    ref = np.zeros_like(data)
    for q in range(num_rows):
        for r in range(num_rows):
            if r == q:
                continue
            sign = 1.0 if labels[r] != labels[q] else -1.0
            for f in range(data.shape[1]):
                ref[q, f] += sign * abs(data[q, f] - data[r, f])
    group_weights = np.where(np.eye(num_classes) == 1, -1.0, 1.0)
    matrix = sp.csr_matrix(data) if layout == "csr" else data
    memberships = one_hot(labels, num_classes)
    got = feature_kernel_sums(matrix, ids, memberships, matrix, ids, memberships, group_weights, kernel="abs",
                              per_query=True, block_size=6)
    assert_close(got, ref)


def test_one_hot_is_the_identity_rows_of_the_labels():
    labels = np.array([2, 0, 1, 2, 2])
    assert np.array_equal(one_hot(labels, 4), np.eye(4)[labels])


# ----------------------------------------------------------------------------------------------
# Weighted metric
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_weighted_pairwise_distances(metric, layout):
    rng = rng_for("weighted", metric, layout)
    query_matrix, row_matrix = random_matrix(rng, 7, 6), random_matrix(rng, 11, 6)
    weights = rng.normal(size=6)
    weights[2] = 0.0
    ref = np.array([[reference_weighted_distance(q, r, weights, metric) for r in row_matrix] for q in query_matrix])
    got = pairwise_distances(*in_layout(query_matrix, row_matrix, layout), metric, feature_weights=weights)
    assert_close(got, ref)
    if layout == "dense" and metric == "euclidean":  # the shift only changes the rounding
        shifted = pairwise_distances(query_matrix + 40.0, row_matrix + 40.0, metric, feature_weights=weights,
                                     shift=np.full(6, 40.0))
        assert_close(shifted, ref)


@pytest.mark.parametrize("block_size", [4, 2048])
@pytest.mark.parametrize("layout", ["dense", "csr"])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_weighted_neighbour_table_is_the_brute_force_k_nearest(metric, layout, block_size):
    """Integer data and weights: exact distances, hence exact ties, broken by the smaller id."""
    rng = rng_for("table", metric, layout)
    num_rows, num_features, num_classes, k = 30, 4, 3, 3
    row_matrix = random_matrix(rng, num_rows, num_features, density=0.6, integer=True)
    row_ids = rng.permutation(np.arange(num_rows) * 7 + 1)
    row_labels = np.where(np.arange(num_rows) < 2, 2, rng.integers(0, 2, num_rows))  # class 2 has 2 rows: pads
    inside = np.concatenate([[0, 1], rng.choice(np.arange(2, num_rows), 6, replace=False)])
    query_matrix = np.vstack([row_matrix[inside], random_matrix(rng, 3, num_features, density=0.6, integer=True)])
    query_ids = np.concatenate([row_ids[inside], [-5, 1000, 1001]])
    weights = np.array([1.0, -2.0, 0.0, 3.0])
    ref_ids, ref_distances = reference_neighbour_table(query_matrix, query_ids, row_matrix, row_ids, row_labels,
                                                       num_classes, k, metric, weights)
    queries, rows = in_layout(query_matrix, row_matrix, "csr" if layout == "csr" else "dense")
    table = local_neighbour_table(
        queries, query_ids, rows, row_ids, row_labels, num_classes=num_classes, k=k, metric=metric,
        block_size=block_size, shift=None, feature_weights=weights,
    )
    assert np.array_equal(table.query_ids, query_ids)
    assert np.array_equal(table.neighbour_ids, ref_ids)
    assert np.array_equal(table.distances, ref_distances)
    # The data must really have ties for this test to mean something.
    assert any(len(set(row)) < len(row) for row in ref_distances[:, :2, :].reshape(-1, k).tolist())


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------


def small_kernel_case():
    case, sigma = kernel_case(rng_for("bad"), "one_hot", num_rows=6, num_inside=2, num_outside=1)
    return list(case), sigma


def test_unknown_difference_and_kernel_names_raise():
    matrix = np.zeros((2, 3))
    with pytest.raises(ValueError, match="'difference'"):
        pair_sums(matrix, matrix, [0], [1], [1.0], difference="cosine")
    case, _ = small_kernel_case()
    with pytest.raises(ValueError, match="'kernel'"):
        feature_kernel_sums(*case, kernel="laplace", sigma=1.0)


@pytest.mark.parametrize("sigma", [None, 0.0, -1.0, "zero_feature", np.inf])
def test_gaussian_needs_a_positive_sigma(sigma):
    case, good_sigma = small_kernel_case()
    if isinstance(sigma, str):
        sigma = good_sigma.copy()
        sigma[1] = 0.0
    with pytest.raises(ValueError, match="sigma"):
        feature_kernel_sums(*case, kernel="gaussian", sigma=sigma)


@pytest.mark.parametrize("position, bad_value", [
    (2, lambda u: u[:-1]),       # query memberships: one row short
    (2, lambda u: u[:, 0]),      # query memberships: 1-D
    (5, lambda u: u[1:]),        # row memberships: one row short
    (5, lambda u: u[:, 0]),      # row memberships: 1-D
    (6, lambda a: a.T[:2]),      # group weights (2, 3) instead of (3, 3)
    (6, lambda a: np.ones(3)),   # group weights 1-D
])
def test_memberships_and_group_weights_of_the_wrong_shape_raise(position, bad_value):
    case, _ = small_kernel_case()
    case[position] = bad_value(case[position])
    with pytest.raises(ValueError, match="memberships|group_weights"):
        feature_kernel_sums(*case, kernel="abs")
