"""SciPy sparse input: the test for it, typed so that a type checker narrows on it, and the sum
NumPy would give over a sparse row's dense form, computed from its non-zeros.

SciPy ships no type information, so ``scipy.sparse.issparse`` narrows nothing: after it, a
``Union[np.ndarray, sp.csr_matrix]`` is still the union, and a method only sparse matrices have
(``toarray``, ``multiply``) reads as a mistake on the ndarray side. :func:`is_sparse` is the same
test, declared a type guard.

Why :func:`narrow_columns`: SciPy's sparse products, and its elementwise operations on rows whose
ids are not sorted, allocate work arrays as long as a row (0.2 s per operation for 2^24 ids, whatever
the non-zeros); on the columns in use, narrowed and widened back, they cost the non-zeros.

Why :func:`dense_row_sum`: some sums must have the same bits whether the row is dense or CSR
(Lmba decides a hinge at its kink from two such distances, :mod:`sparkfs.core.margin_weighting`),
and a CSR row of a hashed vocabulary is too wide (2^24 ids) to be made dense for each of them.
"""
from __future__ import annotations

from bisect import bisect_left
from typing import List, Tuple, TypeGuard

import numpy as np
import scipy.sparse as sp

#: NumPy's pairwise summation: blocks of at most this many values are summed with 8 accumulators.
PAIRWISE_BLOCK = 128


def is_sparse(matrix: object) -> TypeGuard[sp.spmatrix]:
    """``scipy.sparse.issparse(matrix)``: True for any SciPy sparse matrix or array."""
    return sp.issparse(matrix)


def narrow_columns(*matrices) -> Tuple[np.ndarray, List[sp.csr_matrix]]:
    """The sorted ids any of the CSR ``matrices`` (of one width) holds, and each matrix on those
    columns only (column t is id ``columns[t]``; the ids' order is kept, so products and sums run
    over the same terms in the same order as on the wide matrices). :func:`widen_columns` undoes it."""
    csr = [sp.csr_matrix(matrix) for matrix in matrices]
    columns = np.unique(np.concatenate([matrix.indices for matrix in csr])).astype(np.int64)
    return columns, [sp.csr_matrix((matrix.data, np.searchsorted(columns, matrix.indices), matrix.indptr),
                                   shape=(matrix.shape[0], columns.size)) for matrix in csr]


def widen_columns(matrix, columns: np.ndarray, width: int) -> sp.csr_matrix:
    """A matrix of :func:`narrow_columns`' columns back on ``width`` ids, in canonical form (sorted,
    distinct ids per row: SciPy's elementwise operations on it then cost its non-zeros)."""
    narrow = sp.csr_matrix(matrix)
    wide = sp.csr_matrix((narrow.data, columns[narrow.indices], narrow.indptr), shape=(narrow.shape[0], width))
    wide.sum_duplicates()
    return wide


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
    positions = np.asarray(positions, dtype=np.int64).tolist()   # Python numbers: no NumPy call per node
    values = np.asarray(values, dtype=np.float64).tolist()          # (Python floats are IEEE doubles)
    return _pairwise(positions, values, 0, len(positions), 0, int(length))


def _pairwise(positions: List[int], values: List[float], low: int, high: int, start: int, length: int) -> float:
    """NumPy's pairwise sum of the row ``[start, start + length)`` whose non-zeros are
    ``values[low:high]`` at ``positions[low:high]``."""
    if high - low == 0:
        return 0.0
    if high - low == 1:  # every other term of the tree is an exact 0
        return values[low]
    if length < 8:
        total = 0.0
        for value in values[low:high]:
            total += value
        return total
    if length <= PAIRWISE_BLOCK:
        interleaved = start + length - length % 8
        r = [0.0] * 8
        tail = []
        for position, value in zip(positions[low:high], values[low:high]):
            if position < interleaved:
                r[(position - start) % 8] += value
            else:
                tail.append(value)
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for value in tail:
            total += value
        return total
    half = length // 2
    half -= half % 8
    cut = bisect_left(positions, start + half, low, high)
    return (_pairwise(positions, values, low, cut, start, half)
            + _pairwise(positions, values, cut, high, start + half, length - half))


def dense_row_sums(matrix) -> np.ndarray:
    """``np.sum(matrix.toarray(), axis=1)`` of a CSR matrix with sorted, distinct ids per row, to
    the last bit, without making a row dense (:func:`dense_row_sum` of each row)."""
    indptr, width = matrix.indptr, matrix.shape[1]
    return np.array([dense_row_sum(matrix.indices[indptr[row]:indptr[row + 1]],
                                   matrix.data[indptr[row]:indptr[row + 1]], width)
                     for row in range(matrix.shape[0])], dtype=np.float64).reshape(matrix.shape[0])


def canonical_csr(matrix) -> sp.csr_matrix:
    """``matrix`` as float64 CSR with sorted, distinct ids per row (a copy when it is not so already)."""
    rows = sp.csr_matrix(matrix, dtype=np.float64)
    if not rows.has_canonical_format:
        rows = rows.copy()
        rows.sum_duplicates()
    return rows


def weighted_squared_distances(left: sp.csr_matrix, right: sp.csr_matrix, pairs_left, pairs_right,
                               weights) -> np.ndarray:
    """``np.sum((a - b) ** 2 * weights ** 2)`` over the dense forms of rows a of ``left`` and b of
    ``right`` (canonical CSR, :func:`canonical_csr`), per pair of row positions, to the last bit:
    computed on the ids either row holds (:func:`dense_row_sum`)."""
    distances = np.empty(len(pairs_left))
    for pair, (a, b) in enumerate(zip(pairs_left, pairs_right)):
        first = slice(left.indptr[a], left.indptr[a + 1])
        second = slice(right.indptr[b], right.indptr[b + 1])
        ids = np.union1d(left.indices[first], right.indices[second])
        differences = np.zeros(ids.size)
        differences[np.searchsorted(ids, left.indices[first])] = left.data[first]
        differences[np.searchsorted(ids, right.indices[second])] -= right.data[second]
        distances[pair] = dense_row_sum(ids, differences ** 2 * weights[ids] ** 2, weights.size)
    return distances
