"""Exact column sums: correctly rounded (math.fsum per column is the reference) and the same bits
for any grouping and order of the terms."""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.core.exact_sums import (
    as_arrays,
    exact_class_moment_sums,
    exact_column_sums,
    exact_matrix_column_sums,
    from_arrays,
    merged_exact_sums,
    rounded_sums,
)


def wide_matrix(seed, n=400, p=6):
    """Magnitudes from 1e-300 to 1e300, both signs, cancellations and subnormals."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * 10.0 ** rng.integers(-30, 30, size=(n, p))
    X[:, 1] = rng.normal(size=n) * 1e300
    X[:, 2] = rng.choice([1e16, -1e16, 1.0, 3e-320], size=n)
    X[::7, 3] = 0.0
    X[:, 4] = 0.1
    return X


def test_rounded_sums_are_the_correctly_rounded_sums():
    X = wide_matrix(0)
    exact = rounded_sums(exact_matrix_column_sums(X))
    expected = np.array([math.fsum(X[:, j]) for j in range(X.shape[1])])
    assert np.array_equal(exact, expected)
    assert exact[4] == math.fsum([0.1] * 400) and exact[4] != sum(X[:, 4].tolist())  # left-to-right drifts


def test_any_grouping_and_order_gives_the_same_bits():
    X = wide_matrix(1)
    reference = rounded_sums(exact_matrix_column_sums(X))
    rng = np.random.default_rng(2)
    for _ in range(5):
        order = rng.permutation(X.shape[0])
        cuts = np.sort(rng.choice(np.arange(1, X.shape[0]), size=6, replace=False))
        parts = [exact_matrix_column_sums(X[order][a:b]) for a, b in zip([0, *cuts], [*cuts, X.shape[0]])]
        rng.shuffle(parts)
        merged = parts[0]
        for part in parts[1:]:
            merged = merged_exact_sums(merged, part)
        assert np.array_equal(rounded_sums(merged), reference)


def test_sparse_matrices_sum_their_non_zeros():
    X = sp.random(50, 9, density=0.3, random_state=3, format="csr") * 1e5 - sp.eye(50, 9, format="csr") * 1e-5
    expected = np.array([math.fsum(X.toarray()[:, j]) for j in range(9)])
    assert np.array_equal(rounded_sums(exact_matrix_column_sums(X)), expected)
    assert np.array_equal(rounded_sums(exact_matrix_column_sums(np.zeros((0, 3)))), np.zeros(3))


def test_many_merges_do_not_overflow_and_survive_shipping():
    ones = exact_matrix_column_sums(np.full((1, 2), 2.0 ** 1000))
    total = ones
    for _ in range(12):  # 2^12 copies of 2^1000 each, through the shipped form
        total = from_arrays(as_arrays(merged_exact_sums(total, total), "s_"), "s_")
    assert np.array_equal(rounded_sums(total), np.full(2, 2.0 ** 1012))


def test_non_finite_values_are_refused():
    with pytest.raises(ValueError, match="finite"):
        exact_column_sums([1.0, np.nan], [0, 0], 1)
    with pytest.raises(ValueError, match="2 values but 1 column"):
        exact_column_sums([1.0, 2.0], [0], 1)


@pytest.mark.parametrize("sparse", [False, True])
def test_class_moment_sums_are_the_correctly_rounded_weighted_sums(sparse):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 5)) * 10.0 ** rng.integers(-8, 8, size=(120, 5))
    X[rng.random(X.shape) < 0.4] = 0.0
    classes, weights = rng.integers(0, 3, 120), rng.random(120) * 3
    sums, squares = exact_class_moment_sums(sp.csr_matrix(X) if sparse else X, classes, weights, 3)
    for c in range(3):
        rows = classes == c
        expected = [math.fsum(X[rows, j] * weights[rows]) for j in range(5)]
        expected_squares = [math.fsum(X[rows, j] * X[rows, j] * weights[rows]) for j in range(5)]
        assert np.array_equal(rounded_sums(sums)[c * 5:(c + 1) * 5], expected)
        assert np.array_equal(rounded_sums(squares)[c * 5:(c + 1) * 5], expected_squares)
    with pytest.raises(ValueError, match="not finite"):
        exact_class_moment_sums(np.array([[1e200]]), [0], [1.0], 1)


def test_sums_beyond_the_largest_double_are_infinite_and_subnormals_are_exact():
    big = exact_matrix_column_sums(np.array([[1.7e308, -1.7e308], [1.7e308, -1.7e308]]))
    assert np.array_equal(rounded_sums(big), [np.inf, -np.inf])
    tiny = np.array([[5e-324], [5e-324], [1e-310]])
    assert rounded_sums(exact_matrix_column_sums(tiny))[0] == math.fsum(tiny[:, 0])


def test_the_compiled_rounding_matches_fsum_on_ties_cancellations_and_wide_ranges():
    """Adversarial columns for the 53-bit rounding of the limbs: exact ties (to even, both ways),
    ties broken by a far smaller term, cancellations down to one bit, negative sums, terms spread
    over the whole exponent range, subnormal results; then 2,000 random mixes of them."""
    tiny, half_ulp = 2.0 ** -1074, 2.0 ** -53
    columns = [
        [1.0, half_ulp], [1.0 + 2 * half_ulp, half_ulp], [1.0, half_ulp, 2.0 ** -300], [-1.0, -half_ulp, -2.0 ** -300],
        [2.0 ** 80, 1.0, -2.0 ** 80], [1e300, 1.0, -1e300, 2.0 ** -1000], [1e308, 1e-308, -1e308],
        [tiny, tiny, tiny], [2.0 ** -1022, -tiny], [3.0 * 2.0 ** -1000, -2.0 ** -1000, half_ulp * 2.0 ** -1000],
        [2.0 ** 52 + 1, 0.5], [2.0 ** 52 + 1, 0.5, -2.0 ** -200], [-(2.0 ** 53) - 2, -1.0], [0.1] * 10 + [-1.0],
    ]
    rng = np.random.default_rng(7)
    pool = np.concatenate([np.concatenate(columns), rng.normal(size=50) * 10.0 ** rng.integers(-300, 300, 50)])
    pool = pool[np.abs(pool) < 1e301]  # fsum refuses an intermediate overflow
    for _ in range(2000):
        columns.append(list(rng.choice(pool, size=int(rng.integers(1, 12)))))
    values = np.concatenate([np.asarray(column, dtype=np.float64) for column in columns])
    column_of = np.repeat(np.arange(len(columns)), [len(column) for column in columns])
    order = rng.permutation(values.size)  # the order of the terms does not matter
    sums = rounded_sums(exact_column_sums(values[order], column_of[order], len(columns)))
    expected = np.array([math.fsum(column) for column in columns])
    mismatched = np.flatnonzero(sums != expected)
    assert mismatched.size == 0, [(columns[i], sums[i], expected[i]) for i in mismatched[:3]]


def test_rounding_a_million_columns_takes_no_python_loop():
    import time

    X = np.random.default_rng(8).random((3, 1_000_000)) * 1e-3
    sums = exact_matrix_column_sums(X)
    started = time.perf_counter()
    rounded = rounded_sums(sums)
    assert time.perf_counter() - started < 2.0  # the per-column Python loop took about 20 s
    assert np.array_equal(rounded[:50], [math.fsum(X[:, j]) for j in range(50)])
