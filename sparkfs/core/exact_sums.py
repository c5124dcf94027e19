"""Exact column sums of float64 values: the same bits whatever the order or grouping of the terms.

A float64 sum depends on the order of its terms; a distributed sum adds them in an order that
follows the partitions. Here every term is split, exactly, into 32-bit integer limbs on a fixed
grid of powers of two (every finite double is M 2^t with |M| < 2^53 and -1126 <= t <= 971, so it
covers at most three limbs of the grid 2^(32 i - 1126)); limbs are added as integers (exact), and
the total is rounded to the nearest double once, at the end (a compiled loop over the columns).
Partial sums merge by integer addition, so the result is the correctly rounded sum of the terms
for any grouping and order. Shipped, the limbs below the last travel as uint32.

An :class:`ExactSums` holds, per column, the limbs from ``lowest`` up (int64, carries normalised
on every merge so that no limb overflows). Used by the one-pass class moments
(:func:`sparkfs.spark.stats.class_moments`, engine ``"arrow"``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import NamedTuple

import numba
import numpy as np

LIMB_BITS = 32
#: t + _BIAS >= 0 for every finite double M 2^t with integer |M| < 2^53 (t >= -1074 - 52).
_BIAS = 1126
_MASK = (1 << LIMB_BITS) - 1


class ExactSums(NamedTuple):
    """Per-column integer limbs: column j's sum is sum_i limbs[j, i] 2^(32 (lowest + i) - 1126)."""

    lowest: int
    limbs: np.ndarray  # (num_columns, n_limbs) int64

    @property
    def num_columns(self) -> int:
        return self.limbs.shape[0]


@numba.njit(cache=True)
def _limb(value):
    """The grid limb of a non-zero double's lowest bits (value = +-M 2^(position - 1126))."""
    _, exponent = math.frexp(value)
    return (exponent - 53 + _BIAS) // LIMB_BITS


@numba.njit(cache=True)
def _add(value, slot, lowest, totals):
    """Add a non-zero double, exactly, to row ``slot`` of ``totals`` (limbs from ``lowest``)."""
    fraction, exponent = math.frexp(value)
    mantissa = np.int64(abs(fraction) * 9007199254740992.0)  # |M| < 2^53, exact
    position = exponent - 53 + _BIAS
    limb = position // LIMB_BITS - lowest
    shift = position % LIMB_BITS
    low = (mantissa & _MASK) << shift  # < 2^63
    high = (mantissa >> LIMB_BITS) << shift  # < 2^52
    sign = 1 if value > 0 else -1
    totals[slot, limb] += sign * (low & _MASK)
    totals[slot, limb + 1] += sign * ((low >> LIMB_BITS) + (high & _MASK))
    totals[slot, limb + 2] += sign * (high >> LIMB_BITS)


@numba.njit(cache=True)
def _terms_range(values):
    lowest, highest = 1 << 20, -1
    for value in values:
        if value != 0.0:
            limb = _limb(value)
            lowest, highest = min(lowest, limb), max(highest, limb)
    return lowest, highest


@numba.njit(cache=True)
def _add_terms(values, slots, lowest, totals):
    for i in range(values.size):
        if values[i] != 0.0:
            _add(values[i], slots[i], lowest, totals)


@numba.njit(cache=True)
def _moment_terms(data, indices, indptr, dense_width, classes, weights, num_features, with_squares, lowest, sums,
                  squares):
    """Add w x and w x^2 of every stored value to row ``class * p + column`` of ``sums`` /
    ``squares``; with ``lowest`` < 0, only find the limb range of each (returned as 4 ints).
    Dense rows: ``data`` is the raveled matrix and ``dense_width`` its row length; CSR: data,
    indices, indptr and ``dense_width`` = 0."""
    ranges = np.array([1 << 20, -1, 1 << 20, -1])
    rows = indptr.size - 1 if dense_width == 0 else data.size // max(dense_width, 1)
    for row in range(rows):
        start = indptr[row] if dense_width == 0 else row * dense_width
        stop = indptr[row + 1] if dense_width == 0 else start + dense_width
        weight, base = weights[row], classes[row] * num_features
        for k in range(start, stop):
            value = data[k] * weight
            square = data[k] * data[k] * weight if with_squares else 0.0
            if value == 0.0 and square == 0.0:
                continue
            column = indices[k] if dense_width == 0 else k - start
            if lowest[0] < 0:
                if value != 0.0:
                    ranges[0], ranges[1] = min(ranges[0], _limb(value)), max(ranges[1], _limb(value))
                if square != 0.0:
                    ranges[2], ranges[3] = min(ranges[2], _limb(square)), max(ranges[3], _limb(square))
            else:
                if value != 0.0:
                    _add(value, base + column, lowest[0], sums)
                if square != 0.0:
                    _add(square, base + column, lowest[1], squares)
    return ranges


def _totals(lowest: int, highest: int, num_columns: int) -> np.ndarray:
    return np.zeros((num_columns, max(highest + 3 - lowest, 1)), dtype=np.int64)


def exact_column_sums(values, columns, num_columns: int) -> ExactSums:
    """The exact sums per column of ``values`` (1-D float64, finite) whose columns are ``columns``.

    Raises ValueError on NaN or infinite values (they have no exact sum).
    """
    values = np.ascontiguousarray(values, dtype=np.float64).ravel()
    columns = np.ascontiguousarray(columns, dtype=np.int64).ravel()
    if values.size != columns.size:
        raise ValueError(f"exact_column_sums: {values.size} values but {columns.size} column indices")
    if not np.all(np.isfinite(values)):
        raise ValueError("exact_column_sums: values must be finite")
    lowest, highest = _terms_range(values)
    if highest < 0:
        return ExactSums(0, np.zeros((num_columns, 1), dtype=np.int64))
    totals = _totals(lowest, highest, num_columns)
    _add_terms(values, columns, lowest, totals)
    return _normalised(ExactSums(int(lowest), totals), in_place=True)


def exact_class_moment_sums(matrix, classes, weights, num_classes: int, with_squares: bool = True):
    """Exact sums of ``w x`` and ``w x^2`` per (class, column): two :class:`ExactSums` over
    ``num_classes * p`` columns (row ``c * p + j``). ``matrix`` is a dense ndarray or CSR matrix
    of finite values, ``classes`` the class index (0..C-1) and ``weights`` the weight of each
    row. A term w x or w x^2 that is not finite (overflow) raises ValueError. Without
    ``with_squares`` the second is empty."""
    num_rows, num_features = matrix.shape
    if hasattr(matrix, "tocsr"):
        csr = matrix.tocsr()
        arrays = (csr.data.astype(np.float64), csr.indices.astype(np.int64), csr.indptr.astype(np.int64), 0)
    else:
        dense = np.ascontiguousarray(matrix, dtype=np.float64)
        arrays = (dense.ravel(), np.zeros(1, np.int64), np.zeros(num_rows + 1, np.int64), num_features)
    classes = np.ascontiguousarray(classes, dtype=np.int64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        largest = np.abs(arrays[0]).max(initial=0.0) * weights.max(initial=0.0)
        finite = np.isfinite(arrays[0]).all() and np.isfinite(
            largest * (np.abs(arrays[0]).max(initial=0.0) if with_squares else 1.0))
    if not finite:
        raise ValueError("exact_class_moment_sums: a value, or its square times its weight, is not finite")
    ranges = _moment_terms(*arrays, classes, weights, num_features, with_squares, np.array([-1, -1]),
                           np.zeros((1, 1), np.int64),
                           np.zeros((1, 1), np.int64))
    slots = num_classes * num_features
    sums, squares = _totals(ranges[0], ranges[1], slots), _totals(ranges[2], ranges[3], slots)
    lowest = np.array([ranges[0] if ranges[1] >= 0 else 0, ranges[2] if ranges[3] >= 0 else 0])
    _moment_terms(*arrays, classes, weights, num_features, with_squares, lowest, sums, squares)
    return (_normalised(ExactSums(int(lowest[0]), sums), in_place=True),
            _normalised(ExactSums(int(lowest[1]), squares), in_place=True))


def exact_matrix_column_sums(matrix) -> ExactSums:
    """:func:`exact_column_sums` of a dense ndarray or a scipy.sparse matrix (non-zeros only)."""
    sums, _ = exact_class_moment_sums(matrix, np.zeros(matrix.shape[0], np.int64), np.ones(matrix.shape[0]), 1,
                                      with_squares=False)
    return sums


def merged_exact_sums(left: ExactSums, right: ExactSums) -> ExactSums:
    """The exact sums of the terms of both (integer addition: associative and commutative)."""
    if left.num_columns != right.num_columns:
        raise ValueError(f"merged_exact_sums: {left.num_columns} and {right.num_columns} columns")
    if left.lowest == right.lowest and left.limbs.shape == right.limbs.shape:  # one new array, no re-layout
        return _normalised(ExactSums(left.lowest, left.limbs + right.limbs), in_place=True)
    lowest = min(left.lowest, right.lowest)
    top = max(left.lowest + left.limbs.shape[1], right.lowest + right.limbs.shape[1])
    limbs = np.zeros((left.num_columns, top - lowest + 1), dtype=np.int64)
    for part in (left, right):
        start = part.lowest - lowest
        limbs[:, start:start + part.limbs.shape[1]] += part.limbs
    return _normalised(ExactSums(lowest, limbs), in_place=True)


def _normalised(sums: ExactSums, in_place: bool = False) -> ExactSums:
    """Carries moved up so that every limb but the last is in [0, 2^32) (the last keeps the sign).
    Vectorised over the columns (a step per limb); ``in_place`` reuses ``sums.limbs``."""
    limbs = sums.limbs if in_place else sums.limbs.copy()
    for i in range(limbs.shape[1] - 1):
        carry = limbs[:, i] >> LIMB_BITS  # floor division: negative limbs borrow from the next
        limbs[:, i] -= carry << LIMB_BITS
        limbs[:, i + 1] += carry
    if np.any(np.abs(limbs[:, -1]) >= 1 << 40):  # room for more merges: one more limb
        limbs = np.concatenate([limbs, np.zeros((limbs.shape[0], 1), dtype=np.int64)], axis=1)
        return _normalised(ExactSums(sums.lowest, limbs), in_place=True)
    return ExactSums(sums.lowest, limbs)


@numba.njit(cache=True)
def _bits(magnitude, position, count):
    """``count`` (<= 53) bits of the non-negative limbs ``magnitude`` from bit ``position`` up."""
    limb, offset = position // LIMB_BITS, position % LIMB_BITS
    value = magnitude[limb] >> offset
    if limb + 1 < magnitude.size:
        value |= magnitude[limb + 1] << (LIMB_BITS - offset)  # bits past 63 drop out: masked below
    if offset > 0 and limb + 2 < magnitude.size:
        value |= magnitude[limb + 2] << (2 * LIMB_BITS - offset)
    return value & ((np.int64(1) << count) - 1)


@numba.njit(cache=True)
def _round_columns(limbs, scale, result, fallback):
    """Each row of normalised ``limbs`` times 2^scale rounded to the nearest double (ties to even):
    the top 53 bits of the magnitude, the next bit, and whether any bit below it is set. Columns
    whose result is subnormal (where ldexp would round a second time) are flagged in ``fallback``."""
    num_columns, num_limbs = limbs.shape
    magnitude = np.zeros(num_limbs + 1, dtype=np.int64)
    for column in range(num_columns):
        negative = limbs[column, num_limbs - 1] < 0
        for i in range(num_limbs):
            magnitude[i] = -limbs[column, i] if negative else limbs[column, i]
        magnitude[num_limbs] = 0
        for i in range(num_limbs):  # every limb into [0, 2^32)
            carry = magnitude[i] >> LIMB_BITS
            magnitude[i] -= carry << LIMB_BITS
            magnitude[i + 1] += carry
        highest = num_limbs
        while highest >= 0 and magnitude[highest] == 0:
            highest -= 1
        if highest < 0:
            result[column] = 0.0
            continue
        length = 0  # bits of the magnitude
        while (magnitude[highest] >> length) != 0:
            length += 1
        length += LIMB_BITS * highest
        if length <= 53:
            mantissa, exponent = _bits(magnitude, 0, length), 0
        else:
            exponent = length - 53
            mantissa = _bits(magnitude, exponent, 53)
            half = _bits(magnitude, exponent - 1, 1)
            below = exponent - 1  # bits under the rounding bit
            sticky = _bits(magnitude, (below // LIMB_BITS) * LIMB_BITS, below % LIMB_BITS) != 0 if below > 0 else False
            for i in range(below // LIMB_BITS):
                sticky = sticky or magnitude[i] != 0
            if half == 1 and (sticky or (mantissa & 1) == 1):
                mantissa += 1
        if length + scale < -1020:
            fallback[column] = True
            continue
        value = math.ldexp(float(mantissa), exponent + scale)
        result[column] = -value if negative else value


def rounded_sums(sums: ExactSums) -> np.ndarray:
    """Each column's exact sum rounded to the nearest float64 (ties to even); +-inf beyond the
    largest double. Compiled, one column after the other; subnormal results go through Python's
    exact rationals."""
    limbs = _normalised(sums).limbs
    scale = LIMB_BITS * sums.lowest - _BIAS
    result = np.empty(limbs.shape[0])
    fallback = np.zeros(limbs.shape[0], dtype=np.bool_)
    _round_columns(limbs, scale, result, fallback)
    for column in np.flatnonzero(fallback).tolist():
        total = sum(int(limb) << (LIMB_BITS * i) for i, limb in enumerate(limbs[column].tolist()))
        result[column] = _rational_to_float(total, scale)
    return result


def exact_values(sums: ExactSums) -> list:
    """Each column's exact sum as a :class:`fractions.Fraction` (no rounding at all): for a
    statistic that must round once at its very end (a variance from the sums of x and x^2)."""
    limbs = _normalised(sums).limbs
    scale = Fraction(2) ** (LIMB_BITS * sums.lowest - _BIAS)
    return [sum(int(limb) << (LIMB_BITS * i) for i, limb in enumerate(row)) * scale for row in limbs.tolist()]


def _rational_to_float(total: int, scale: int) -> float:
    """total 2^scale rounded to the nearest float64; +-inf beyond the largest double."""
    try:
        return float(Fraction(total) * Fraction(2) ** scale)
    except OverflowError:
        return math.copysign(math.inf, total)


def as_arrays(sums: ExactSums, prefix: str) -> dict:
    """``sums`` as named arrays of a shipped summary (see :func:`from_arrays`): the limbs below the
    last (normalised, in [0, 2^32)) as uint32, the last as int64 -- 4 bytes a limb, not 8."""
    limbs = _normalised(sums).limbs
    return {f"{prefix}lowest": np.array([sums.lowest], dtype=np.int64),
            f"{prefix}digits": limbs[:, :-1].astype(np.uint32), f"{prefix}top": limbs[:, -1].copy()}


def from_arrays(summary: dict, prefix: str) -> ExactSums:
    digits, top = summary[f"{prefix}digits"], np.asarray(summary[f"{prefix}top"], dtype=np.int64)
    limbs = np.empty((top.shape[0], digits.shape[1] + 1), dtype=np.int64)
    limbs[:, :-1] = digits
    limbs[:, -1] = top
    return ExactSums(int(summary[f"{prefix}lowest"][0]), limbs)
