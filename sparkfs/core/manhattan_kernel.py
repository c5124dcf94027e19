"""Dense Manhattan (L1) distances between two blocks, compiled with Numba.

``|q - r|_1`` has no GEMM identity, so every (query, row, feature) triple is touched. SciPy's
``cdist(..., "cityblock")`` does that one pair at a time in scalar C (about 2 x 10^9 triples per
second on this project's machine). The kernel here computes the same sums, **bit for bit**, at
about 5 x that rate:

* the queries are transposed into chunks of ``QUERY_CHUNK`` columns (a few KiB per feature, so a
  chunk stays in cache), and the innermost loop runs over the queries of a chunk: for a fixed
  row r and feature f it adds ``|Q[i, f] - r_f|`` to the accumulator of query i. That loop
  vectorises (SIMD over queries) without re-associating any sum;
* four rows are processed per sweep of a chunk, so each loaded query value serves four rows;
* each distance is still the plain left-to-right sum over the features, ``f = 0, ..., p-1``,
  exactly the order of ``cdist``'s loop, so the results are identical to SciPy's and do not
  depend on the chunking or on which rows share a sweep (the neighbour order, and so every
  Relief score, is the same whichever path computed it).

Numba is optional at import time: :data:`AVAILABLE` is False when it cannot be imported, and
callers then use ``cdist``. The compiled code is cached on disk (``cache=True``), so a Spark
Python worker compiles it at most once per installation.
"""

from __future__ import annotations

import numpy as np

from sparkfs.core.numba_jit import AVAILABLE, compile_kernel

#: Queries per transposed chunk (the SIMD loop length); 64 measured best for p = 200..500.
QUERY_CHUNK = 64


def _chunk_kernel(query_chunk_t, row_matrix, out, query_start):
    """``out[query_start + i, j] = sum_f |query_chunk_t[f, i] - row_matrix[j, f]|``."""
    num_features, width = query_chunk_t.shape
    num_rows = row_matrix.shape[0]
    j = 0
    while j + 3 < num_rows:
        acc0 = np.zeros(width)
        acc1 = np.zeros(width)
        acc2 = np.zeros(width)
        acc3 = np.zeros(width)
        for f in range(num_features):
            r0 = row_matrix[j, f]
            r1 = row_matrix[j + 1, f]
            r2 = row_matrix[j + 2, f]
            r3 = row_matrix[j + 3, f]
            for i in range(width):
                q = query_chunk_t[f, i]
                acc0[i] += abs(q - r0)
                acc1[i] += abs(q - r1)
                acc2[i] += abs(q - r2)
                acc3[i] += abs(q - r3)
        for i in range(width):
            out[query_start + i, j] = acc0[i]
            out[query_start + i, j + 1] = acc1[i]
            out[query_start + i, j + 2] = acc2[i]
            out[query_start + i, j + 3] = acc3[i]
        j += 4
    while j < num_rows:
        acc = np.zeros(width)
        for f in range(num_features):
            r = row_matrix[j, f]
            for i in range(width):
                acc[i] += abs(query_chunk_t[f, i] - r)
        for i in range(width):
            out[query_start + i, j] = acc[i]
        j += 1


def _all_chunks(query_matrix, row_matrix, out, chunk):
    num_queries = query_matrix.shape[0]
    for query_start in range(0, num_queries, chunk):
        query_stop = min(query_start + chunk, num_queries)
        query_chunk_t = np.ascontiguousarray(query_matrix[query_start:query_stop].T)
        _chunk_kernel_compiled(query_chunk_t, row_matrix, out, query_start)


if AVAILABLE:
    _chunk_kernel_compiled = compile_kernel(_chunk_kernel)
    _all_chunks_compiled = compile_kernel(_all_chunks)
else:  # pragma: no cover
    _chunk_kernel_compiled = None
    _all_chunks_compiled = None


def manhattan_dense(query_matrix: np.ndarray, row_matrix: np.ndarray) -> np.ndarray:
    """``D[i, j] = sum_f |query_matrix[i, f] - row_matrix[j, f]|`` (float64), as SciPy's cdist.

    Requires :data:`AVAILABLE`. Both inputs are converted to C-contiguous float64.
    """
    if not AVAILABLE:
        raise RuntimeError("numba is not installed; use scipy.spatial.distance.cdist")
    query_matrix = np.ascontiguousarray(query_matrix, dtype=np.float64)
    row_matrix = np.ascontiguousarray(row_matrix, dtype=np.float64)
    if query_matrix.ndim != 2 or row_matrix.ndim != 2 or query_matrix.shape[1] != row_matrix.shape[1]:
        raise ValueError(
            f"need two 2-D blocks with the same number of features, got {query_matrix.shape} and {row_matrix.shape}"
        )
    out = np.empty((query_matrix.shape[0], row_matrix.shape[0]), dtype=np.float64)
    if out.size:
        _all_chunks_compiled(query_matrix, row_matrix, out, QUERY_CHUNK)
    return out
