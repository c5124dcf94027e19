"""The Numba Manhattan kernel: the same bits as SciPy's cdist, and the L1 definition."""

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from sparkfs.core import manhattan_kernel
from sparkfs.core.neighbours import pairwise_distances

pytestmark = pytest.mark.skipif(not manhattan_kernel.AVAILABLE, reason="numba not installed")


def l1_by_definition(query_matrix, row_matrix):
    """D[i, j] = sum_f |q_if - r_jf|, one pair at a time, features left to right."""
    out = np.zeros((query_matrix.shape[0], row_matrix.shape[0]))
    for i, q in enumerate(query_matrix):
        for j, r in enumerate(row_matrix):
            total = 0.0
            for f in range(q.shape[0]):
                total += abs(q[f] - r[f])
            out[i, j] = total
    return out


@pytest.mark.parametrize(
    "num_queries, num_rows, num_features",
    # widths below, at and above the 64-query chunk; row counts with every remainder mod 4
    [(1, 1, 1), (3, 5, 2), (64, 4, 7), (65, 6, 3), (130, 7, 11), (17, 9, 1)],
)
def test_matches_the_definition_bit_for_bit(num_queries, num_rows, num_features):
    rng = np.random.default_rng(num_queries * 100 + num_rows)
    query_matrix = rng.normal(size=(num_queries, num_features)) * 10.0 ** rng.integers(-3, 4, num_features)
    row_matrix = rng.normal(size=(num_rows, num_features))
    got = manhattan_kernel.manhattan_dense(query_matrix, row_matrix)
    # Sequential left-to-right sums: the kernel re-associates nothing.
    assert np.array_equal(got, l1_by_definition(query_matrix, row_matrix))
    assert np.array_equal(got, cdist(query_matrix, row_matrix, "cityblock"))


def test_same_bits_as_cdist_on_a_large_block():
    rng = np.random.default_rng(1)
    query_matrix, row_matrix = rng.random((301, 203)), rng.random((257, 203))
    assert np.array_equal(manhattan_kernel.manhattan_dense(query_matrix, row_matrix),
                          cdist(query_matrix, row_matrix, "cityblock"))


def test_a_distance_does_not_depend_on_the_block_it_is_computed_in():
    # The neighbour order (and so every Relief score) must not depend on how rows are blocked.
    rng = np.random.default_rng(2)
    query_matrix, row_matrix = rng.random((100, 31)), rng.random((23, 31))
    whole = manhattan_kernel.manhattan_dense(query_matrix, row_matrix)
    for query_stop, row_stop in [(1, 1), (37, 5), (99, 22)]:
        part = manhattan_kernel.manhattan_dense(query_matrix[query_stop - 1:], row_matrix[row_stop - 1:])
        assert np.array_equal(part, whole[query_stop - 1:, row_stop - 1:])


def test_inputs_of_other_types_and_layouts():
    rng = np.random.default_rng(3)
    query_matrix = rng.integers(0, 5, size=(40, 9))           # integers
    row_matrix = np.asfortranarray(rng.random((12, 9)))        # Fortran order
    expected = cdist(query_matrix.astype(float), row_matrix, "cityblock")
    assert np.array_equal(manhattan_kernel.manhattan_dense(query_matrix, row_matrix), expected)
    assert np.array_equal(manhattan_kernel.manhattan_dense(query_matrix[::2], row_matrix[:, :]), expected[::2])
    assert manhattan_kernel.manhattan_dense(np.empty((0, 9)), row_matrix).shape == (0, 12)


def test_feature_counts_must_agree():
    with pytest.raises(ValueError, match="same number of features"):
        manhattan_kernel.manhattan_dense(np.zeros((2, 3)), np.zeros((2, 4)))


def test_engine_falls_back_to_cdist_without_numba(monkeypatch):
    rng = np.random.default_rng(4)
    query_matrix, row_matrix = rng.random((20, 6)), rng.random((9, 6))
    with_kernel = pairwise_distances(query_matrix, row_matrix, "manhattan")
    monkeypatch.setattr(manhattan_kernel, "AVAILABLE", False)
    without = pairwise_distances(query_matrix, row_matrix, "manhattan")
    assert np.array_equal(with_kernel, without)
    with pytest.raises(RuntimeError, match="numba"):
        manhattan_kernel.manhattan_dense(query_matrix, row_matrix)
