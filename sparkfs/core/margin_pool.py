"""Lmba and Simba within a pool of instances, on the driver. Pure NumPy/SciPy.

Why
---
Both methods compare every picked instance with every row: the papers' run is O(n^2 D), and a
Spark job per step over all n rows costs a pass each (on the 100,000 x 50,000 term matrix of
``benchmarks/scale.py``: 375 Lmba steps of 0.8 s, 48 Simba steps of 1.5 s). When ``sampleSize``
is unset on more than ``DEFAULT_POOL`` rows, the selectors instead draw the pool once (one pass)
and run the *whole* loop inside it: the target neighbours, the nearest misses, the hinge rows x_p
of Lmba's eq. (3) and Simba's nearest hit and miss are all searched among the pool's rows only.
The result is Lmba / Simba run on that sample of the data, as the in-memory drivers
(:func:`sparkfs.core.margin_weighting.lmba_in_memory`, :func:`sparkfs.core.simba.simba_in_memory`)
would run on it; the cost is O(pool^2 D) (O(pool x nnz) on CSR rows) per pass over the pool, and
no longer grows with n. A user who sets ``sampleSize`` (or ``preset="paper"``) keeps the search
among every row, one Spark job per step (:mod:`sparkfs.spark.margin_weighting`).

The functions below run the loops the Spark layer runs (:func:`sparkfs.core.margin_weighting.lmba_loop`,
:func:`sparkfs.core.simba.simba_loop`) with the rows' pass replaced by one call of the same block
kernels (:func:`sparkfs.core.neighbours.local_neighbour_table`,
:func:`sparkfs.core.margin_weighting.lmba_block_terms`) on the pool: CSR stays CSR, distances use
the same GEMM identity, shift and tie rule (distance, then row id). The scikit-learn front uses the
same searches (:func:`lmba_targets_and_theta`, :func:`nearest_hits_and_misses_among`) over all its rows.

The order of the pool
---------------------
Both loops visit the pool by :func:`sparkfs.core.margin_loops.instance_order`, a seeded
permutation of the pool's *positions*, so the order the pool is given in decides which instance is
picked when. The Spark layer gives the pool in :func:`content_order` (by each row's seeded content
key, the key the pool was drawn by) unless the row ids are the user's (``rowIdCol``: their order,
as the papers' tables were run), and numbers it 0..m-1 in that order: then the visit order and the
neighbour ties among the pool (distance, then id) depend on the rows' content and the seed only,
not on the order the rows arrived in (another file layout). Rows of identical content share a key;
they are interchangeable, so which of them comes first changes nothing.

Memory: the pool (m rows, dense or CSR), one ``block_size x block_size`` distance block, and per
step the batch's rows, neighbours and Lmba's per-instance hinge terms (batch x D doubles for dense
rows; CSR rows keep them CSR, on the features the rows hold).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp

from sparkfs.core import margin_weighting as mw
from sparkfs.core import simba
from sparkfs.core.margin_loops import LoopResult
from sparkfs.core.margin_runs import MarginRun
from sparkfs.core.neighbours import PAD_ID, local_neighbour_table
from sparkfs.core.relief import miss_neighbours
from sparkfs.core.sampling import content_sample_keys


def content_order(matrix, labels, ids, seed: int, weights=None) -> np.ndarray:
    """The positions of the rows sorted by ``(content key, id)``: the order Lmba and Simba visit a pool
    whose ids are not the user's (module notes). The key is
    :func:`sparkfs.core.sampling.content_sample_keys` of the rows' unscaled content (features, label,
    weight) and ``seed``, the key the pool was drawn by; ``ids`` only order rows of identical content."""
    keys = content_sample_keys(matrix, labels, weights, seed)
    return np.lexsort((np.asarray(ids, dtype=np.int64), keys)).astype(np.int64)


def query_shift(query_matrix) -> Optional[np.ndarray]:
    """The translation the Spark search applies before the Euclidean GEMM on dense queries: their
    mean rounded to integers (None for CSR), so both paths compute the same distances."""
    if sp.issparse(query_matrix) or query_matrix.shape[0] == 0:
        return None
    return np.round(np.asarray(query_matrix.mean(axis=0)).ravel())


def _checked_pool(matrix, labels, ids):
    matrix = sp.csr_matrix(matrix) if sp.issparse(matrix) else np.asarray(matrix, dtype=np.float64)
    labels, ids = np.asarray(labels, dtype=np.int64), np.asarray(ids, dtype=np.int64)
    if matrix.shape[0] != labels.size or ids.size != labels.size:
        raise ValueError(f"the pool has {matrix.shape[0]} rows, {labels.size} labels and {ids.size} ids")
    if ids.size and np.any(np.diff(ids) <= 0):
        raise ValueError("the pool's row ids must be unique and increasing")
    return matrix, labels, ids


def pickable_positions(labels) -> np.ndarray:
    """Pool positions that may be picked: those whose class has another row in the pool (a nearest
    hit, Lmba's targets). Every row stays a candidate neighbour. Refuses a pool in which fewer
    than two classes are present or no class has two rows."""
    labels = np.asarray(labels, dtype=np.int64)
    classes, counts = np.unique(labels, return_counts=True)
    if classes.size < 2 or not np.any(counts >= 2):
        raise ValueError(f"the pool of {labels.size} rows holds {classes.size} class(es), "
                         f"{int(np.sum(counts >= 2))} with two rows or more: Lmba and Simba need two classes and a "
                         "class with a nearest hit; set sampleSize to draw a larger pool")
    return np.flatnonzero(np.isin(labels, classes[counts >= 2]))


def lmba_targets_and_theta(rows, labels, ids, *, num_classes: int, k: int, block_size: int, positions=None):
    """Lmba's step 2 (Li & Lu 2009) for the rows at ``positions`` (None: every row), searched among all
    ``rows`` in the original metric: each one's k target neighbours (positions in ``rows``, -1 for an
    absent one) and theta of eq. (2) from its nearest hit (the first target) and nearest miss.
    ``ids`` (increasing along ``rows``) break distance ties, as the Spark search's row ids."""
    queries = rows if positions is None else rows[positions]
    query_ids, query_labels = (ids, labels) if positions is None else (ids[positions], labels[positions])
    table = local_neighbour_table(queries, query_ids, rows, ids, labels, num_classes=num_classes, k=k,
                                  block_size=block_size, shift=query_shift(queries))
    target_ids = table.neighbour_ids[np.arange(query_ids.size), query_labels]     # (m, k) nearest hits = targets
    target_index = np.where(target_ids != PAD_ID, np.searchsorted(ids, target_ids), -1)
    miss_index = np.searchsorted(ids, miss_neighbours(table, query_labels)[0][:, :1])
    theta = mw.lmba_theta(
        mw.weighted_squared_norms(mw.lmba_target_differences(queries, rows, target_index[:, :1])),
        mw.weighted_squared_norms(mw.lmba_target_differences(queries, rows, miss_index)))
    return target_index, theta


def nearest_hits_and_misses_among(rows, labels, ids, *, num_classes: int, block_size: int):
    """Simba's search (Algorithm 1, step 2b) for :func:`sparkfs.core.simba.simba_loop` over rows in
    memory: ``search(picked, w)`` returns the vectors (CSR kept CSR) of the rows at the ``picked`` positions and
    of their nearest hit and miss among all ``rows`` in ``||.||_w`` (ties to the smaller id, itself
    excluded), with the Spark search's kernel and shift."""
    def search(picked, w):
        instances = rows[picked]
        table = local_neighbour_table(instances, ids[picked], rows, ids, labels, num_classes=num_classes, k=1,
                                      block_size=block_size, shift=query_shift(instances), feature_weights=w)
        hits = table.neighbour_ids[np.arange(picked.size), labels[picked], 0]
        misses = miss_neighbours(table, labels[picked])[0][:, 0]
        return instances, rows[np.searchsorted(ids, hits)], rows[np.searchsorted(ids, misses)]
    return search


def lmba_in_pool(matrix, labels, ids, *, num_classes: int, k: int, c: float, run: MarginRun, projection: str,
                 seed: int, block_size: int = 2048) -> LoopResult:
    """Lmba (Li & Lu 2009, Section 3.1) with the pool as the whole data: targets, theta and the
    hinge rows among the pool's rows (module notes). ``matrix`` holds the pool's scaled rows in the
    order they are visited in, ``ids`` increasing along it (the user's ids, or 0..m-1 in
    :func:`content_order`: they break distance ties); ``labels`` are class indices 0..num_classes-1.
    Returns the ranked w, the steps and the pool rows never picked (:func:`pickable_positions`)."""
    matrix, labels, ids = _checked_pool(matrix, labels, ids)
    target_index, theta = lmba_targets_and_theta(matrix, labels, ids, num_classes=num_classes, k=k,
                                                 block_size=block_size)
    pickable = pickable_positions(labels)
    found = mw.lmba_loop(matrix, labels, matrix, target_index, theta, run=run, seed=seed, c=c, projection=projection,
                         block_terms=mw.block_terms_over(matrix, labels), pickable=pickable)
    return found._replace(left_out=ids.size - pickable.size)


def simba_in_pool(matrix, labels, ids, *, num_classes: int, run: MarginRun, seed: int,
                  block_size: int = 2048) -> LoopResult:
    """Simba (Gilad-Bachrach et al. 2004, Algorithm 1) with the pool as the whole data: each
    batch's nearest hit and miss in the current weighted metric among the pool's rows. ``matrix``,
    ``labels`` and ``ids`` as :func:`lmba_in_pool`."""
    matrix, labels, ids = _checked_pool(matrix, labels, ids)
    pickable = pickable_positions(labels)
    found = simba.simba_loop(pickable, matrix.shape[1], run=run, seed=seed, nearest_hits_and_misses=(
        nearest_hits_and_misses_among(matrix, labels, ids, num_classes=num_classes, block_size=block_size)))
    return found._replace(left_out=ids.size - pickable.size)
