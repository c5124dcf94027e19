"""Relief family and the blocked neighbour search vs NumPy references written from the equations.

The references below (``reference_*``) are brute force -- an n x n distance matrix, explicit
loops over queries -- and share no code with sparkfs. The Spark engine's tests import them.
Closeness: ``max |got - ref| <= 1e-9 * max |ref|`` (relative to the largest entry).
"""

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.core import neighbours as nb
from sparkfs.core import relief as rl

REL_TOL = 1e-9


# ----------------------------------------------------------------------------------------------
# References, straight from the equations (Yang & Hu 2012, Sections 2.3 and 4)
# ----------------------------------------------------------------------------------------------


def reference_distances(X, metric):
    """All pairwise distances (n x n), by explicit differences."""
    difference = X[:, None, :] - X[None, :, :]
    if metric == "euclidean":
        return np.sqrt((difference ** 2).sum(axis=2))
    return np.abs(difference).sum(axis=2)


def reference_nearest(distance_row, ids, candidates, k):
    """The k candidates nearest by (distance, id)."""
    candidates = np.asarray(candidates)
    order = np.lexsort((ids[candidates], distance_row[candidates]))
    return candidates[order[:k]]


def reference_margins(X, y, ids, query_positions, variant, k=1, metric="euclidean", sigma=None):
    """Margin vectors m_n of the queries (rows ``query_positions`` of the dense array X).

    relief  (eq. 3, k-averaged): mean_j |x - M_j| - mean_j |x - H_j|, misses from any class.
    relieff (Kononenko):         sum_{c != y} P(c)/(1-P(y)) mean_j |x - M_{c,j}| - mean_j |x - H_j|.
    mrelief (eq. 16):            P(y) mean_j |x - M_j| - (1 - P(y)) mean_j |x - H_j|.
    prelief (eq. 14):            mean_{i: y_i = y, i != n} k_d(x_i, x) - mean_{j: y_j != y} k_d(x_j, x).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    ids = np.asarray(ids)
    n = X.shape[0]
    classes = np.unique(y)
    prior = {c: np.mean(y == c) for c in classes}
    distances = reference_distances(X, metric) if variant != "prelief" else None
    margins = []
    for q in query_positions:
        x, label = X[q], y[q]
        others = np.array([i for i in range(n) if i != q])
        if variant == "prelief":
            same = [i for i in others if y[i] == label]
            different = [j for j in others if y[j] != label]
            kernel = lambda rows, x=x: np.exp(-((X[rows] - x) ** 2) / (2 * sigma ** 2)).mean(axis=0)  # noqa: E731
            margins.append(kernel(same) - kernel(different))
            continue
        hits = reference_nearest(distances[q], ids, [i for i in others if y[i] == label], k)
        misses = reference_nearest(distances[q], ids, [j for j in others if y[j] != label], k)
        hit_term = np.abs(x - X[hits]).mean(axis=0)
        miss_term = np.abs(x - X[misses]).mean(axis=0)
        if variant == "relief":
            margins.append(miss_term - hit_term)
        elif variant == "mrelief":
            margins.append(prior[label] * miss_term - (1 - prior[label]) * hit_term)
        else:
            margin = -hit_term
            for c in classes:
                if c != label:
                    misses_c = reference_nearest(distances[q], ids, [j for j in others if y[j] == c], k)
                    margin = margin + prior[c] / (1 - prior[label]) * np.abs(x - X[misses_c]).mean(axis=0)
            margins.append(margin)
    return np.array(margins)


def reference_weights(mean_margin):
    """Eq. (4): the positive part normalised to unit L2 norm (all zeros if nothing is positive)."""
    positive = np.array([max(v, 0.0) for v in mean_margin])
    norm = np.sqrt((positive ** 2).sum())
    return positive / norm if norm > 0 else positive


def assert_close(got, ref, tol=REL_TOL):
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape
    scale = max(np.abs(ref).max(), 1e-300)
    assert np.abs(got - ref).max() <= tol * scale, f"max rel error {np.abs(got - ref).max() / scale:.3g}"


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------


def integer_data(seed, n=48, p=5, num_classes=3, high=4):
    """Small integers: many exactly tied distances (exact in floating point)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % num_classes
    rng.shuffle(y)
    X = rng.integers(0, high, size=(n, p)).astype(np.float64)
    X[:, 0] += 2 * y  # one informative feature
    X[:4] = X[4:8]  # exact duplicates of other rows
    y[:4] = y[4:8]
    return X, y


def sparse_data(seed, n=50, p=14, num_classes=2, density=0.3, continuous=False):
    """Sparse rows; integer values 1..3 (exact ties) or, ``continuous``, uniform in (0.5, 3)."""
    rng = np.random.default_rng(seed)
    values = rng.uniform(0.5, 3.0, size=(n, p)) if continuous else rng.integers(1, 4, size=(n, p))
    X = np.where(rng.random((n, p)) < density, values, 0).astype(np.float64)
    y = np.arange(n) % num_classes
    rng.shuffle(y)
    return X, y


def continuous_data(seed, n=60, p=6, num_classes=3):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % num_classes
    X = rng.normal(size=(n, p)) + 0.8 * y[:, None] * (np.arange(p) < 2)
    return X, y


def table_for(X, y, ids, query_positions, k, metric="euclidean", sparse=False, block_size=7):
    matrix = sp.csr_matrix(X) if sparse else X
    return nb.local_neighbour_table(
        matrix[query_positions], ids[query_positions], matrix, ids, y,
        num_classes=int(y.max()) + 1, k=k, metric=metric, block_size=block_size,
    )


# ----------------------------------------------------------------------------------------------
# Neighbour search
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
@pytest.mark.parametrize("kind", ["dense", "sparse", "query_sparse_rows_dense", "query_dense_rows_sparse"])
def test_pairwise_distances_match_explicit_differences(metric, kind):
    X, _ = sparse_data(0, n=30)
    reference = reference_distances(X, metric)[:9]
    if metric == "euclidean":
        reference = reference ** 2  # the kernel returns squared Euclidean distances
    query = sp.csr_matrix(X[:9]) if kind in ("sparse", "query_sparse_rows_dense") else X[:9]
    rows = sp.csr_matrix(X) if kind in ("sparse", "query_dense_rows_sparse") else X
    assert_close(nb.pairwise_distances(query, rows, metric), reference, tol=1e-12)


def test_euclidean_shift_avoids_cancellation_far_from_zero():
    rng = np.random.default_rng(3)
    X = 1e6 + rng.normal(size=(20, 4))
    reference = reference_distances(X, "euclidean") ** 2
    shifted = nb.pairwise_distances(X, X, "euclidean", shift=X.mean(axis=0))
    assert_close(shifted, reference, tol=1e-10)
    assert np.all(nb.pairwise_distances(X, X, "euclidean") >= 0)  # clipped at 0 without the shift


@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("block_size", [1, 5, 1000])
def test_local_table_is_brute_force_knn_with_ties_by_id(metric, sparse, block_size):
    X, y = integer_data(1)  # exact ties and duplicate rows
    ids = np.random.default_rng(2).permutation(1000)[: len(y)]  # ids unrelated to positions
    query_positions = np.arange(0, len(y), 3)
    k = 4
    table = table_for(X, y, ids, query_positions, k, metric, sparse, block_size)
    distances = reference_distances(X, metric)
    for row, q in enumerate(query_positions):
        for c in range(3):
            candidates = [i for i in range(len(y)) if y[i] == c and i != q]
            expected = reference_nearest(distances[q], ids, candidates, k)
            np.testing.assert_array_equal(table.neighbour_ids[row, c], ids[expected])


@pytest.mark.parametrize("high", [3, 1000])
def test_large_blocks_use_a_sampled_bound_and_still_equal_brute_force(high):
    # Classes of ~1,500 rows per block: the k-th distance is bounded from a strided sample before
    # the comparison; with high=3 almost every distance is tied, with high=1000 almost none.
    rng = np.random.default_rng(30)
    X = rng.integers(0, high, size=(3000, 3)).astype(np.float64)
    y = rng.integers(0, 2, 3000)
    ids = rng.permutation(3000) * 2
    queries = np.arange(0, 3000, 150)
    k = 10
    for metric in ("euclidean", "manhattan"):
        table = table_for(X, y, ids, queries, k, metric, block_size=4096)
        for row, q in enumerate(queries):
            difference = X - X[q]
            distance_row = (np.sqrt((difference ** 2).sum(axis=1)) if metric == "euclidean"
                            else np.abs(difference).sum(axis=1))
            for c in range(2):
                candidates = [i for i in range(3000) if y[i] == c and i != q]
                expected = reference_nearest(distance_row, ids, candidates, k)
                np.testing.assert_array_equal(table.neighbour_ids[row, c], ids[expected])


def test_query_is_excluded_by_id_even_with_a_duplicate_at_distance_zero():
    X = np.array([[0.0], [0.0], [5.0], [9.0]])
    y = np.array([0, 0, 1, 1])
    ids = np.array([10, 11, 12, 13])
    table = table_for(X, y, ids, np.array([0]), k=1)
    assert table.neighbour_ids[0, 0, 0] == 11  # the duplicate (distance 0), not the query itself
    assert table.distances[0, 0, 0] == 0.0


def test_small_class_is_padded():
    X, y = continuous_data(4, n=9, num_classes=3)  # 3 rows per class
    table = table_for(X, y, np.arange(9), np.arange(9), k=5)
    assert np.all(table.neighbour_ids[:, :, 3:] == nb.PAD_ID)  # 3 rows per class, 2 without the query
    assert np.all(np.isinf(table.distances[table.neighbour_ids == nb.PAD_ID]))


def test_merge_of_disjoint_parts_equals_search_on_all_rows():
    X, y = integer_data(5, n=60)
    ids = np.arange(60) * 7
    queries = np.arange(0, 60, 4)
    whole = table_for(X, y, ids, queries, k=3, block_size=1000)
    parts = np.array_split(np.random.default_rng(0).permutation(60), 4)
    partial = [
        nb.local_neighbour_table(X[queries], ids[queries], X[part], ids[part], y[part], num_classes=3, k=3)
        for part in parts
    ]
    left = nb.merge_neighbour_tables(nb.merge_neighbour_tables(partial[0], partial[1]), partial[2])
    right = nb.merge_neighbour_tables(partial[3], nb.merge_neighbour_tables(partial[1], partial[0]))
    merged_any_order = [nb.merge_neighbour_tables(left, partial[3]), nb.merge_neighbour_tables(right, partial[2])]
    for merged in merged_any_order:
        np.testing.assert_array_equal(merged.neighbour_ids, whole.neighbour_ids)
        np.testing.assert_array_equal(merged.distances, whole.distances)


def test_neighbour_errors_name_the_problem():
    X, y = integer_data(6)
    with pytest.raises(ValueError, match="unknown metric 'cosine'"):
        nb.pairwise_distances(X, X, "cosine")
    with pytest.raises(ValueError, match="block_size"):
        nb.local_neighbour_table(X, np.arange(48), X, np.arange(48), y, num_classes=3, k=1, block_size=0)
    table = table_for(X, y, np.arange(48), np.arange(3), k=1)
    with pytest.raises(ValueError, match="different queries"):
        nb.merge_neighbour_tables(table, table.rows(np.arange(2)))


# ----------------------------------------------------------------------------------------------
# Margins of the neighbour variants
# ----------------------------------------------------------------------------------------------


def _margins(variant, X, y, ids, table, sparse):
    matrix = sp.csr_matrix(X) if sparse else X
    labels = y[np.searchsorted(ids, table.query_ids)]  # ids are increasing in these tests
    priors = rl.class_priors(np.bincount(y))
    if variant == "relief":
        return rl.relief(matrix, ids, table, labels)
    if variant == "relieff":
        return rl.relieff(matrix, ids, table, labels, priors)
    return rl.mrelief(matrix, ids, table, labels, priors)


@pytest.mark.parametrize("variant", ["relief", "relieff", "mrelief"])
@pytest.mark.parametrize("dataset", ["integer_multiclass", "sparse_binary", "continuous_multiclass"])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("metric", ["euclidean", "manhattan"])
def test_neighbour_variants_equal_reference(variant, dataset, k, metric):
    X, y = {
        "integer_multiclass": lambda: integer_data(7),
        "sparse_binary": lambda: sparse_data(8),
        "continuous_multiclass": lambda: continuous_data(9),
    }[dataset]()
    sparse = dataset == "sparse_binary"
    ids = np.arange(len(y)) * 3 + 1
    query_positions = np.arange(len(y)) if k == 1 else np.arange(1, len(y), 2)  # all rows / a subset
    table = table_for(X, y, ids, query_positions, k, metric, sparse)
    got = _margins(variant, X, y, ids, table, sparse)
    ref = reference_margins(X, y, ids, query_positions, variant, k=k, metric=metric)
    assert_close(got, ref)
    assert_close(got.mean(axis=0), ref.mean(axis=0))


def test_relief_equals_relieff_on_binary_data():
    X, y = sparse_data(10)
    ids = np.arange(len(y))
    table = table_for(X, y, ids, ids, k=3)
    assert_close(_margins("relief", X, y, ids, table, False), _margins("relieff", X, y, ids, table, False), tol=1e-14)


def test_margin_sums_are_additive_over_row_blocks():
    X, y = continuous_data(11)
    ids = np.arange(len(y))
    table = table_for(X, y, ids, ids[:20], k=2)
    pairs = rl.relieff_pairs(table, y[:20], rl.class_priors(np.bincount(y)))
    total, per_query = rl.margin_sums(X[:20], X, pairs.query_positions, pairs.neighbour_ids, pairs.weights,
                                      per_query=True)
    halves = [pairs.neighbour_ids < 30, pairs.neighbour_ids >= 30]
    partial = [
        rl.margin_sums(X[:20], X, pairs.query_positions[h], pairs.neighbour_ids[h], pairs.weights[h], per_query=True)
        for h in halves
    ]
    assert_close(partial[0][0] + partial[1][0], total, tol=1e-13)
    assert_close(partial[0][1] + partial[1][1], per_query, tol=1e-13)
    assert_close(per_query.sum(axis=0), total, tol=1e-13)


@pytest.mark.parametrize("variant", ["relief", "relieff", "mrelief"])
def test_small_classes_average_over_the_neighbours_that_exist(variant):
    # Class sizes 5, 3, 2 with k=3: class 2's queries have 1 hit, class 1's 2, and class 2
    # offers only 2 misses. The reference takes min(k, available) by construction.
    X, _ = continuous_data(14, n=10, num_classes=3)
    y = np.array([0, 1, 0, 2, 0, 1, 0, 2, 0, 1])
    ids = np.arange(10)
    table = table_for(X, y, ids, ids, k=3)
    priors = rl.class_priors(np.bincount(y))
    pairs = rl.margin_pairs(variant, table, y, priors)
    _, got = rl.margin_sums(X, X, pairs.query_positions, pairs.neighbour_ids, pairs.weights, per_query=True)
    assert_close(got, reference_margins(X, y, ids, ids, variant, k=3))
    assert rl.short_classes(np.bincount(y), 3) == {1: 2, 2: 1}


def test_pair_functions_refuse_a_query_without_any_hit():
    X, _ = continuous_data(12, n=9, num_classes=3)
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1, 2])  # class 2 has a single row: no hit for it
    table = table_for(X, y, np.arange(9), np.arange(9), k=3)
    with pytest.raises(ValueError, match="query id 8 has no other row of its own class"):
        rl.relief_pairs(table, y)
    with pytest.raises(ValueError, match="query id 8 has no neighbour in a class it needs"):
        rl.relieff_pairs(table, y, rl.class_priors(np.bincount(y)))


def test_relieff_ignores_a_class_without_rows():
    X, y = continuous_data(13, num_classes=2)
    ids = np.arange(len(y))
    table = nb.local_neighbour_table(X, ids, X, ids, y, num_classes=3, k=2)  # class 2 declared, absent
    priors = rl.class_priors(np.bincount(y, minlength=3))
    got = rl.relieff(X, ids, table, y, priors)
    assert_close(got, reference_margins(X, y, ids, ids, "relieff", k=2))


# ----------------------------------------------------------------------------------------------
# Parzen-Relief
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dataset", ["continuous_multiclass", "sparse_binary"])
@pytest.mark.parametrize("sparse_rows", [False, True])
@pytest.mark.parametrize("sparse_queries", [False, True])
def test_prelief_equals_reference(dataset, sparse_rows, sparse_queries):
    X, y = continuous_data(14) if dataset == "continuous_multiclass" else sparse_data(15)
    ids = np.arange(len(y)) * 2 + 5
    sigma = np.linspace(0.3, 1.5, X.shape[1])
    queries = np.arange(0, len(y), 3)
    ref = reference_margins(X, y, ids, queries, "prelief", sigma=sigma)
    rows = sp.csr_matrix(X) if sparse_rows else X
    query_matrix = sp.csr_matrix(X[queries]) if sparse_queries else X[queries]
    counts = np.bincount(y)
    per_query = rl.prelief_margin_sums(
        query_matrix, ids[queries], y[queries], rows, ids, y, class_counts=counts, sigma=sigma, per_query=True,
        block_size=11,
    )
    assert_close(per_query, ref)
    # Partial sums over disjoint row blocks add up (what a Spark partition returns).
    halves = [np.arange(len(y)) % 2 == 0, np.arange(len(y)) % 2 == 1]
    total = sum(
        rl.prelief_margin_sums(
            query_matrix, ids[queries], y[queries], rows[h], ids[h], y[h], class_counts=counts, sigma=sigma
        )
        for h in halves
    )
    assert_close(total, ref.sum(axis=0))


def test_prelief_in_memory_and_scalar_sigma():
    X, y = continuous_data(16)
    ids = np.arange(len(y))
    assert_close(rl.prelief(X, ids, y, ids, sigma=0.7), reference_margins(X, y, ids, ids, "prelief", sigma=0.7))


def test_prelief_rejects_bad_sigma():
    X, y = continuous_data(17)
    with pytest.raises(ValueError, match="sigma"):
        rl.prelief(X, np.arange(len(y)), y, [0], sigma=0.0)


def test_default_parzen_sigma_is_the_papers_on_unit_range():
    np.testing.assert_array_equal(rl.default_parzen_sigma([1.0, 4.0, 0.0]), [0.01, 0.04, 1.0])


# ----------------------------------------------------------------------------------------------
# Weights, scaling, checks
# ----------------------------------------------------------------------------------------------


def test_relief_weights_is_eq4():
    margin = np.array([0.3, -0.2, 0.4, 0.0])
    assert_close(rl.relief_weights(margin), reference_weights(margin), tol=1e-15)
    np.testing.assert_array_equal(rl.relief_weights([-1.0, -2.0]), [0.0, 0.0])  # no positive part


def test_feature_scale_policy():
    """Relief's divisor (the scale of sparkfs.core.scaling, tested in tests/core/test_scaling.py)."""
    minimum, maximum = [0, 2, 1], [4, 2, 3]
    np.testing.assert_array_equal(rl.feature_scale("range", minimum=minimum, maximum=maximum), [4, 1, 2])
    np.testing.assert_array_equal(rl.feature_scale("standard", minimum=minimum, maximum=maximum,
                                                   std=[0.5, 0.0, 0.25], num_features=3), [0.5, 1.0, 0.25])
    np.testing.assert_array_equal(rl.feature_scale("none", minimum=minimum, maximum=maximum, num_features=3),
                                  [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="unknown scaling 'minmax'"):
        rl.feature_scale("minmax", minimum=minimum, maximum=maximum)
    with pytest.raises(ValueError, match="describe 3 features, expected 2"):
        rl.feature_scale("range", minimum=minimum, maximum=maximum, num_features=2)


def test_constant_feature_scores_zero():
    X, y = continuous_data(18)
    X[:, 2] = 7.0
    ids = np.arange(len(y))
    for variant in ("relief", "relieff", "mrelief"):
        margins = _margins(variant, X, y, ids, table_for(X, y, ids, ids, k=2), False)
        assert np.all(margins[:, 2] == 0.0)
    assert np.all(np.abs(rl.prelief(X, ids, y, ids, sigma=1.0)[:, 2]) < 1e-14)  # kernel 1 everywhere: 1 - 1


def test_class_priors_and_variant_check():
    assert_close(rl.class_priors([1, 3]), np.array([0.25, 0.75]), tol=0)
    with pytest.raises(ValueError, match="unknown Relief variant 'irelief'"):
        rl.check_variant("irelief")
