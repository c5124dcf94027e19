"""Seeded, partition-independent row sampling and in-memory column statistics (pure NumPy).

:func:`sample_keys` gives every row a pseudo-random key from its id and a seed; the rows with the
smallest keys form the sample. The key depends on (seed, row id) only, so any split of the rows
into partitions, each keeping its own smallest keys before a merge, draws the same sample.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp


class ColumnStatistics(NamedTuple):
    minimum: np.ndarray
    maximum: np.ndarray
    mean: np.ndarray
    std: np.ndarray  # sample standard deviation (ddof = 1), as Spark's Summarizer


def _splitmix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser: a bijection on 64-bit integers that scrambles consecutive ids."""
    with np.errstate(over="ignore"):
        z = values.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def sample_keys(row_ids, seed: int) -> np.ndarray:
    """The sampling key of each row: the ``size`` rows with the smallest keys are drawn.

    ``splitmix64(row_id XOR splitmix64(seed))``: distinct ids get distinct keys, so the sample
    is a deterministic function of (seed, row ids) and a uniform-looking draw without replacement.
    """
    seed_mix = _splitmix64(np.array([seed], dtype=np.int64).astype(np.uint64))[0]
    return _splitmix64(np.asarray(row_ids, dtype=np.int64).astype(np.uint64) ^ seed_mix)


def column_statistics(matrix) -> ColumnStatistics:
    """min, max, mean and sample std (ddof=1, as Spark's Summarizer) of an in-memory matrix."""
    n_rows = matrix.shape[0]
    if sp.issparse(matrix):
        matrix = sp.csc_matrix(matrix)
        minimum = matrix.min(axis=0).toarray().ravel()
        maximum = matrix.max(axis=0).toarray().ravel()
        mean = np.asarray(matrix.sum(axis=0)).ravel() / n_rows
        stored_per_column = np.diff(matrix.indptr)
        centred = matrix.data - np.repeat(mean, stored_per_column)
        squares = np.bincount(
            np.repeat(np.arange(matrix.shape[1]), stored_per_column), weights=centred * centred, minlength=matrix.shape[1]
        ) + (n_rows - stored_per_column) * mean * mean
    else:
        minimum, maximum, mean = matrix.min(axis=0), matrix.max(axis=0), matrix.mean(axis=0)
        centred = matrix - mean
        squares = np.einsum("ij,ij->j", centred, centred)
    std = np.sqrt(squares / (n_rows - 1)) if n_rows > 1 else np.zeros(matrix.shape[1])
    return ColumnStatistics(minimum, maximum, mean, std)
