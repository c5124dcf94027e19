"""Sums over CSR rows that equal NumPy's over their dense form to the last bit
(sparkfs.core.sparse_input), and the narrowing of a wide CSR matrix to the columns in use."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.core.sparse_input import (
    canonical_csr,
    dense_row_sum,
    dense_row_sums,
    narrow_columns,
    weighted_squared_distances,
    widen_columns,
)


@pytest.mark.parametrize("length", [1, 5, 7, 8, 9, 16, 127, 128, 129, 255, 300, 1000, 8191, 8192, 8193, 100_003])
def test_dense_row_sum_is_numpys_sum_of_the_dense_row_to_the_bit(length):
    rng = np.random.default_rng(length)
    for _ in range(40):
        count = int(rng.integers(0, min(length, 400) + 1))
        positions = np.sort(rng.choice(length, count, replace=False))
        values = rng.random(count) * 10.0 ** rng.uniform(-6, 6, count)
        row = np.zeros(length)
        row[positions] = values
        assert dense_row_sum(positions, values, length) == np.sum(row)
        assert dense_row_sum(positions, values, length) == np.sum(row[None, :] * np.ones((2, 1)), axis=-1)[0]


def test_dense_row_sum_on_a_hashed_width():
    rng = np.random.default_rng(3)
    length = 2 ** 22
    positions = np.sort(rng.choice(length, 300, replace=False))
    values = rng.random(300) ** 3
    row = np.zeros(length)
    row[positions] = values
    assert dense_row_sum(positions, values, length) == np.sum(row)


def _random_csr(rows, columns, density, seed):
    matrix = sp.random(rows, columns, density=density, format="csr", random_state=seed)
    matrix.data = np.round(matrix.data * 7.0, 3) - 3.0
    return matrix


def test_row_sums_and_pair_distances_equal_the_dense_arithmetic_to_the_bit():
    left, right = _random_csr(6, 700, 0.05, 1), _random_csr(9, 700, 0.05, 2)
    dense_left, dense_right = left.toarray(), right.toarray()
    np.testing.assert_array_equal(dense_row_sums(canonical_csr(left)), np.sum(dense_left, axis=1))
    weights = np.random.default_rng(4).random(700)
    pairs_left, pairs_right = np.array([0, 0, 5, 3]), np.array([8, 1, 1, 3])
    expected = np.sum((dense_left[pairs_left] - dense_right[pairs_right]) ** 2 * weights ** 2, axis=-1)
    got = weighted_squared_distances(canonical_csr(left), canonical_csr(right), pairs_left, pairs_right, weights)
    np.testing.assert_array_equal(got, expected)


def test_narrowed_columns_keep_products_and_widen_back():
    left, right = _random_csr(5, 10_000, 0.002, 5), _random_csr(7, 10_000, 0.002, 6)
    columns, (narrow_left, narrow_right) = narrow_columns(left, right)
    assert np.all(np.diff(columns) > 0) and narrow_left.shape == (5, columns.size)
    product = narrow_left.T @ narrow_left
    assert product.shape == (columns.size, columns.size)
    widened = widen_columns(narrow_left.multiply(2.0), columns, 10_000)
    assert widened.has_canonical_format
    np.testing.assert_array_equal(widened.toarray(), 2.0 * left.toarray())
    np.testing.assert_array_equal((narrow_right @ narrow_left.T).toarray(), (right @ left.T).toarray())
