"""SciPy sparse input: the test for it, typed so that a type checker narrows on it, and the sum
NumPy would give over a sparse row's dense form, computed from its non-zeros.

SciPy ships no type information, so ``scipy.sparse.issparse`` narrows nothing: after it, a
``Union[np.ndarray, sp.csr_matrix]`` is still the union, and a method only sparse matrices have
(``toarray``, ``multiply``) reads as a mistake on the ndarray side. :func:`is_sparse` is the same
test, declared a type guard.

Why :func:`dense_row_sum`: some sums must have the same bits whether the row is dense or CSR
(Lmba decides a hinge at its kink from two such distances, :mod:`sparkfs.core.margin_weighting`),
and a CSR row of a hashed vocabulary is too wide (2^24 ids) to be made dense for each of them.
"""
from __future__ import annotations

from typing import TypeGuard

import numpy as np
import scipy.sparse as sp

#: NumPy's pairwise summation: blocks of at most this many values are summed with 8 accumulators.
PAIRWISE_BLOCK = 128


def is_sparse(matrix: object) -> TypeGuard[sp.spmatrix]:
    """``scipy.sparse.issparse(matrix)``: True for any SciPy sparse matrix or array."""
    return sp.issparse(matrix)


def dense_row_sum(positions, values, length: int) -> float:
    """``np.sum`` of the float64 row of ``length`` values that is 0 except ``values`` at ``positions``
    (distinct, increasing), to the last bit, at O(non-zeros x log(length)) cost.

    NumPy sums a contiguous float64 row pairwise: fewer than 8 values one after another from 0;
    up to :data:`PAIRWISE_BLOCK` values in 8 interleaved accumulators (value t into accumulator
    t mod 8, the leftover ``length mod 8`` added after), combined as ``((r0 + r1) + (r2 + r3)) +
    ((r4 + r5) + (r6 + r7))``; longer rows as the sum of two halves, the first of ``length // 2``
    rounded down to a multiple of 8. This function runs the same tree, skipping the parts that
    hold no non-zero: adding 0.0 to a value leaves its bits as they are, so the result equals
    ``np.sum`` of the dense row (tests/core/test_sparse_input.py checks it against NumPy).
    """
    positions = np.asarray(positions, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    return _pairwise(positions, values, 0, int(length))


def _pairwise(positions: np.ndarray, values: np.ndarray, start: int, length: int) -> float:
    if positions.size == 0:
        return 0.0
    if positions.size == 1:  # every other term of the tree is an exact 0
        return float(values[0])
    if length < 8:
        total = 0.0
        for value in values:
            total += value
        return total
    if length <= PAIRWISE_BLOCK:
        interleaved = length - length % 8
        offsets = positions - start
        accumulators = [0.0] * 8
        for offset, value in zip(offsets, values):
            if offset < interleaved:
                accumulators[offset % 8] += value
        r = accumulators
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for offset, value in zip(offsets, values):
            if offset >= interleaved:
                total += value
        return total
    half = length // 2
    half -= half % 8
    cut = int(np.searchsorted(positions, start + half))
    return (_pairwise(positions[:cut], values[:cut], start, half)
            + _pairwise(positions[cut:], values[cut:], start + half, length - half))


def dense_row_sums(matrix) -> np.ndarray:
    """``np.sum(matrix.toarray(), axis=1)`` of a CSR matrix with sorted, distinct ids per row, to
    the last bit, without making a row dense (:func:`dense_row_sum` of each row)."""
    indptr, width = matrix.indptr, matrix.shape[1]
    return np.array([dense_row_sum(matrix.indices[indptr[row]:indptr[row + 1]],
                                   matrix.data[indptr[row]:indptr[row + 1]], width)
                     for row in range(matrix.shape[0])], dtype=np.float64).reshape(matrix.shape[0])
