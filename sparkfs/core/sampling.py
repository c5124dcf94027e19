"""Seeded row sampling that depends on the rows' content, and in-memory column statistics (pure NumPy).

:func:`content_sample_keys` gives every row a pseudo-random key from its **content** (the
features' non-zero indices and values, dense or sparse alike, the label and the weight) and a
seed; the sample is the rows with the smallest ``(key, row id)`` pairs
(:func:`smallest_key_positions`). The key depends on (seed, content) only, so any split of the
rows into partitions, each keeping its own smallest pairs before a merge, draws the same sample,
and so does any *order* of the same rows (another file layout numbers them otherwise): only rows
of identical content share a key, and those are interchangeable, so the row id that breaks their
tie changes which copy is drawn, never what is drawn. :func:`sample_keys` keys an id instead (the
in-memory references number their rows by position).

The price of keying content: copies of one row share their key, so they are drawn together (all
of them, or none, but at the sample's boundary). On distinct rows the draw is a simple random
sample without replacement; on data with many duplicate rows it samples distinct rows and takes
their copies along, which leaves each row's chance of being drawn about the same but makes the
draws of copies dependent (a larger variance of sample means than a simple random sample).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp


class ColumnStatistics(NamedTuple):
    minimum: np.ndarray
    maximum: np.ndarray
    mean: np.ndarray
    std: np.ndarray  # sample standard deviation (ddof = 1), as Spark's Summarizer
    non_zeros: Optional[np.ndarray] = None  # rows whose value is not 0, per feature


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
    :func:`content_sample_keys` passes it a hash of each row's content as the "id".
    """
    seed_mix = _splitmix64(np.array([seed], dtype=np.int64).astype(np.uint64))[0]
    return _splitmix64(np.asarray(row_ids, dtype=np.int64).astype(np.uint64) ^ seed_mix)


#: Odd 64-bit constants that keep the parts of a row's hash apart (feature index, label, weight).
_INDEX_SALT, _LABEL_SALT, _WEIGHT_SALT = (np.uint64(0xD6E8FEB86659FD93), np.uint64(0xA0761D6478BD642F),
                                          np.uint64(0xE7037ED1A0B428DB))


def _value_bits(values) -> np.ndarray:
    """The IEEE-754 bits of float64 values as uint64 (-0.0 read as 0.0)."""
    return (np.asarray(values, dtype=np.float64) + 0.0).view(np.uint64)


def row_content_hashes(matrix, labels=None, weights=None) -> np.ndarray:
    """A 64-bit hash of every row's content: its non-zero features (index and value), label, weight.

    Each non-zero entry hashes to ``splitmix64(splitmix64(index + salt) ^ bits(value))``; a row's
    entries are summed modulo 2^64 (so the order of a CSR row's entries does not matter and a
    dense row hashes as its sparse form), then mixed with the label's and the weight's bits.
    ``labels``/``weights`` None leave that part out. Vectorised: O(non-zeros + rows).
    """
    if sp.issparse(matrix):
        csr = sp.csr_matrix(matrix)
        row_of_entry = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
        columns, values = csr.indices, csr.data
    else:
        dense = np.asarray(matrix, dtype=np.float64)
        row_of_entry, columns = np.nonzero(dense)
        values = dense[row_of_entry, columns]
    n_rows = matrix.shape[0]
    stored = values != 0  # explicit zeros of a sparse row are not content
    with np.errstate(over="ignore"):
        entry = _splitmix64(_splitmix64(np.asarray(columns[stored], dtype=np.uint64) + _INDEX_SALT)
                            ^ _value_bits(values[stored]))
        # sum per row modulo 2^64: differences of a wrapping cumulative sum at the row edges
        edges = np.searchsorted(row_of_entry[stored], np.arange(n_rows + 1))
        cumulative = np.concatenate([np.zeros(1, dtype=np.uint64), np.cumsum(entry, dtype=np.uint64)])
        hashes = _splitmix64(cumulative[edges[1:]] - cumulative[edges[:-1]])
        if labels is not None:
            hashes = _splitmix64(hashes ^ _splitmix64(_value_bits(labels) + _LABEL_SALT))
        if weights is not None:
            hashes = _splitmix64(hashes ^ _splitmix64(_value_bits(weights) + _WEIGHT_SALT))
    return hashes


def content_sample_keys(matrix, labels=None, weights=None, seed: int = 0) -> np.ndarray:
    """The sampling key of each row from its content (:func:`row_content_hashes`) and ``seed``."""
    return sample_keys(row_content_hashes(matrix, labels, weights).view(np.int64), seed)


def smallest_key_positions(keys, ids, size: int) -> np.ndarray:
    """Positions of the ``size`` rows with the smallest ``(key, id)`` pairs, in that order.

    Keys compare as unsigned 64-bit integers; the id breaks ties between rows of equal key, so
    the choice is a function of the (key, id) pairs, whatever the order of the rows given."""
    keys, ids = np.asarray(keys, dtype=np.uint64), np.asarray(ids, dtype=np.int64)
    if keys.size > size:  # a partial selection first: the full sort is of ``size`` rows only
        threshold = np.partition(keys, size - 1)[size - 1]
        candidates = np.flatnonzero(keys <= threshold)
    else:
        candidates = np.arange(keys.size)
    order = np.lexsort((ids[candidates], keys[candidates]))
    return candidates[order[:size]]


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
            np.repeat(np.arange(matrix.shape[1]), stored_per_column),
            weights=centred * centred, minlength=matrix.shape[1]
        ) + (n_rows - stored_per_column) * mean * mean
    else:
        minimum, maximum, mean = matrix.min(axis=0), matrix.max(axis=0), matrix.mean(axis=0)
        centred = matrix - mean
        squares = np.einsum("ij,ij->j", centred, centred)
    std = np.sqrt(squares / (n_rows - 1)) if n_rows > 1 else np.zeros(matrix.shape[1])
    if sp.issparse(matrix):  # CSC here: stored values per column, less the stored zeros
        stored_per_column = np.diff(matrix.indptr)
        columns = np.repeat(np.arange(matrix.shape[1]), stored_per_column)
        non_zeros = stored_per_column - np.bincount(columns, weights=matrix.data == 0, minlength=matrix.shape[1])
    else:
        non_zeros = np.count_nonzero(matrix, axis=0)
    non_zeros = np.asarray(non_zeros, dtype=np.float64)
    return ColumnStatistics(minimum, maximum, mean, std, non_zeros)
