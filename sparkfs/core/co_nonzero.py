"""Every (query entry, row entry) pair of two sparse blocks that share a feature, in bounded
chunks: the one loop behind the sparse pairwise kernels (Manhattan distances in
:mod:`sparkfs.core.neighbours`, the pair sums of :mod:`sparkfs.core.pairs`)."""

from __future__ import annotations

from typing import Union

import numpy as np
import scipy.sparse as sp

Matrix = Union[np.ndarray, sp.csr_matrix]

#: Upper bound on the (query, row, feature) triples materialised at once by the sparse
#: Manhattan kernel (each triple costs about 40 bytes of temporaries).
_MAX_TRIPLES_PER_CHUNK = 4_000_000


def _co_nonzero_triples(query_csc: sp.csc_matrix, row_csc: sp.csc_matrix, feature_start: int, feature_stop: int):
    """Entry positions of every (query entry, row entry) pair sharing a feature in [start, stop).

    Returns two index arrays into ``query_csc.data`` / ``row_csc.data`` (same length).
    """
    query_ptr, row_ptr = query_csc.indptr, row_csc.indptr
    row_counts = np.diff(row_ptr[feature_start : feature_stop + 1])
    query_entries = np.arange(query_ptr[feature_start], query_ptr[feature_stop])
    if query_entries.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty
    feature_of_query_entry = np.repeat(
        np.arange(feature_start, feature_stop), np.diff(query_ptr[feature_start : feature_stop + 1])
    )
    repeats = row_counts[feature_of_query_entry - feature_start]
    total = int(repeats.sum())
    query_entry_of_triple = np.repeat(query_entries, repeats)
    run_starts = np.cumsum(repeats) - repeats
    offset_in_run = np.arange(total) - np.repeat(run_starts, repeats)
    row_entry_of_triple = np.repeat(row_ptr[feature_of_query_entry], repeats) + offset_in_run
    return query_entry_of_triple, row_entry_of_triple


def co_nonzero_chunks(query_matrix: Matrix, row_matrix: Matrix, max_triples: int = _MAX_TRIPLES_PER_CHUNK):
    """Every (query entry, row entry) pair of two sparse blocks that share a feature, in chunks.

    The one loop behind every sparse pairwise kernel (Manhattan distances, kernel sums): it yields
    ``(query_csc, row_csc, query_entry, row_entry)`` where ``query_entry`` / ``row_entry`` index
    ``query_csc.data`` / ``row_csc.data`` and each chunk holds at most ``max_triples`` pairs (at
    least one feature's worth). Both blocks are converted once to CSC with sorted, summed indices.
    """
    query_csc = sp.csc_matrix(query_matrix)
    row_csc = sp.csc_matrix(row_matrix)
    query_csc.sum_duplicates()  # also sorts the indices
    row_csc.sum_duplicates()
    triples_per_feature = np.diff(query_csc.indptr).astype(np.int64) * np.diff(row_csc.indptr).astype(np.int64)
    cumulative = np.concatenate([[0], np.cumsum(triples_per_feature)])
    num_features = query_csc.shape[1]
    feature_start = 0
    while feature_start < num_features:
        # Largest feature_stop with at most max_triples triples (at least one feature).
        limit = cumulative[feature_start] + max_triples
        feature_stop = max(int(np.searchsorted(cumulative, limit, side="right")) - 1, feature_start + 1)
        feature_stop = min(feature_stop, num_features)
        query_entry, row_entry = _co_nonzero_triples(query_csc, row_csc, feature_start, feature_stop)
        yield query_csc, row_csc, query_entry, row_entry
        feature_start = feature_stop
