"""Simba (Gilad-Bachrach, Navot & Tishby, "Margin based feature selection", ICML 2004,
Algorithm 1), the baseline of Li & Lu's Lmba paper. Pure NumPy.

* :func:`simba_delta` -- the summed update of a batch of instances (step 2c);
* :func:`simba_final_weights` -- ``w^2 / ||w^2||_inf``;
* :func:`simba_loop` -- the loop (step 2) with the nearest-neighbour search injected, the one the
  in-memory driver, the pool, the scikit-learn front and the Spark layer run;
* :func:`simba_in_memory` -- the whole algorithm on in-memory data (the Spark layer,
  :mod:`sparkfs.spark.margin_weighting`, mirrors it with one Spark job per step).

Choices: a neighbour at weighted distance 0 (a duplicate row) contributes 0 to Delta instead of
dividing by zero. Instances are picked by :func:`sparkfs.core.margin_loops.instance_order`.
The loop's settings are those of Lmba (:class:`sparkfs.core.margin_runs.MarginRun`):

* **batch rules** -- a batch's nearest hits and misses are searched at the batch's first w (the
  search over all rows is the Spark job); rule ``"replay"`` then adds each instance's Delta in
  turn, computed with the current w (:func:`simba_replay`), rule ``"sum"`` adds the Deltas all
  computed at the batch's first w. A batch of 1 is the paper for both.
* **step sizes** -- w <- w + beta_t Delta; the paper adds Delta as it is (beta = 1, "constant");
  ``"decay"`` is beta_t = step_size / sqrt(t + 1) over picked instances, as for Lmba.
* **averaging** -- ``"iterates"`` ranks by the mean of the iterates of w instead of the last w.
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from sparkfs.core.margin_loops import LoopResult, margin_loop
from sparkfs.core.margin_runs import IterateAverage, MarginRun
from sparkfs.core.margin_weighting import check_margin_data, sorted_neighbours


def _inverse_distance_terms(w2, instances, neighbours):
    """Per instance and feature ``(x_f - n_f)^2 / ||x - n||_w`` (0 where the distance is 0): dense
    rows give an ndarray, CSR rows a CSR matrix holding only the features where x and n differ."""
    if sp.issparse(instances) or sp.issparse(neighbours):
        differences = sp.csr_matrix(instances - neighbours)
        squares = differences.multiply(differences).tocsr()
        distance = np.sqrt(squares @ w2)
        scale = np.divide(1.0, distance, out=np.zeros_like(distance), where=distance > 0)
        return sp.csr_matrix(sp.diags(scale) @ squares)
    squares = (instances - neighbours) ** 2
    distance = np.sqrt(np.sum(squares * w2, axis=-1))
    scale = np.divide(1.0, distance, out=np.zeros_like(distance), where=distance > 0)
    return squares * scale[:, None]


def _as_rows(matrix):
    """CSR kept CSR (one row per instance), anything else as 2-D float64."""
    if sp.issparse(matrix):
        return sp.csr_matrix(matrix, dtype=np.float64)
    return np.atleast_2d(np.asarray(matrix, dtype=float))


def simba_delta(w, instance_matrix, hit_vectors, miss_vectors) -> np.ndarray:
    """Summed Simba update of m instances (Gilad-Bachrach et al. 2004, Algorithm 1, step 2c).

    ``Delta_f = 1/2 ((x_f - nearmiss_f)^2 / ||x - nearmiss||_w - (x_f - nearhit_f)^2 /
    ||x - nearhit||_w) w_f`` summed over the instances; a neighbour at weighted distance 0 (a
    duplicate row) contributes 0 instead of dividing by 0.

    Parameters
    ----------
    w : array-like of shape (D,)
    instance_matrix, hit_vectors, miss_vectors : ndarray or CSR matrix of shape (m, D)
        CSR rows are never made dense: only the features where an instance and its neighbour
        differ take part (a hashed vocabulary of 2^24 ids has a few hundred per row).

    Returns
    -------
    delta : ndarray of shape (D,)
    """
    weights = np.asarray(w, dtype=float)
    instances = _as_rows(instance_matrix)
    miss = _inverse_distance_terms(weights ** 2, instances, _as_rows(miss_vectors))
    hit = _inverse_distance_terms(weights ** 2, instances, _as_rows(hit_vectors))
    return 0.5 * np.asarray((miss - hit).sum(axis=0)).ravel() * weights


def _row_entries(row):
    """(sorted feature ids, values) of a 1 x D CSR row, duplicates summed."""
    row = sp.csr_matrix(row)
    row.sum_duplicates()
    return row.indices, row.data


def _difference_terms(instance, neighbour, w2):
    """``(x_f - n_f)^2 / ||x - n||_w`` of one instance and neighbour given as (ids, values), on the
    ids where they differ: (ids, terms). O(non-zeros): nothing of length D is made."""
    ids = np.union1d(instance[0], neighbour[0])
    differences = np.zeros(ids.size)
    differences[np.searchsorted(ids, instance[0])] += instance[1]
    differences[np.searchsorted(ids, neighbour[0])] -= neighbour[1]
    squares = differences ** 2
    distance = np.sqrt(np.sum(squares * w2[ids]))
    return ids, (squares / distance if distance > 0 else np.zeros_like(squares))


def _sparse_instance_step(w, w2, instance, hit, miss, beta) -> None:
    """``w += beta * Delta`` of one instance given as 1 x D CSR rows, in place on the features where
    the instance differs from its hit or miss (Delta is 0 elsewhere); ``w2`` (w squared) kept in step.
    Each step costs the rows' non-zeros, not D (a hashed vocabulary has 2^24 ids)."""
    x = _row_entries(instance)
    miss_ids, miss_terms = _difference_terms(x, _row_entries(miss), w2)
    hit_ids, hit_terms = _difference_terms(x, _row_entries(hit), w2)
    features = np.union1d(miss_ids, hit_ids)
    terms = np.zeros(features.size)
    terms[np.searchsorted(features, miss_ids)] += miss_terms
    terms[np.searchsorted(features, hit_ids)] -= hit_terms
    w[features] += beta * (0.5 * terms * w[features])
    w2[features] = w[features] ** 2


def simba_final_weights(w) -> np.ndarray:
    """Simba's final weights ``w^2 / ||w^2||_inf`` (zeros if w is all zero)."""
    squares = np.asarray(w, dtype=float) ** 2
    top = squares.max(initial=0.0)
    return squares / top if top > 0 else np.zeros_like(squares)


def simba_replay(w, instance_matrix, hit_vectors, miss_vectors, step_sizes_of_instances,
                 average: Optional[IterateAverage] = None) -> np.ndarray:
    """Rule "replay": each instance's Delta (:func:`simba_delta` of that instance alone, with the
    *current* w), scaled by its beta, is added in turn; the nearest hits and misses were searched
    at the batch's first w. ``average`` (optional) is fed the iterate after every instance."""
    w = np.array(w, dtype=float)
    instances, hits, misses = _as_rows(instance_matrix), _as_rows(hit_vectors), _as_rows(miss_vectors)
    sparse = sp.issparse(instances) or sp.issparse(hits) or sp.issparse(misses)
    if sparse:  # one Delta touches the features where the rows differ: w is updated there only
        instances, hits, misses = sp.csr_matrix(instances), sp.csr_matrix(hits), sp.csr_matrix(misses)
        w2 = w ** 2
    for position, beta in enumerate(np.asarray(step_sizes_of_instances, dtype=float)):
        if sparse:
            _sparse_instance_step(w, w2, instances[position], hits[position], misses[position], beta)
        else:
            w = w + beta * simba_delta(w, instances[position], hits[position], misses[position])
        if average is not None:
            average.add(w)
    return w


def simba_batch_update(w, batch_rule, instance_matrix, hit_vectors, miss_vectors, beta,
                       average: Optional[IterateAverage] = None) -> np.ndarray:
    """w after one batch: :func:`simba_replay` (``beta`` per instance) or ``w + beta *`` the summed
    Deltas at the batch's w (rule "sum", one ``beta``)."""
    if batch_rule == "replay":
        return simba_replay(w, instance_matrix, hit_vectors, miss_vectors, beta, average)
    w = np.asarray(w, dtype=float) + float(beta) * simba_delta(w, instance_matrix, hit_vectors, miss_vectors)
    if average is not None:
        average.add(w)
    return w


#: The part of a Simba step that sees every row: ``nearest_hits_and_misses(picked, w)`` returns the
#: (m, D) vectors (dense, or CSR for CSR rows) of the picked instances, of their nearest hits and of
#: their nearest misses in the metric ``||.||_w`` (step 2b).
NearestHitsAndMisses = Callable[[np.ndarray, np.ndarray], Tuple[np.ndarray, np.ndarray, np.ndarray]]


def simba_loop(pickable, num_features: int, *, run: MarginRun, seed, nearest_hits_and_misses: NearestHitsAndMisses,
               after_step: Optional[Callable[[], None]] = None) -> LoopResult:
    """Simba's loop (Gilad-Bachrach et al. 2004, Algorithm 1, step 2) in mini-batches: per step the
    picked instances' nearest hit and miss at the batch's first w (``nearest_hits_and_misses``: a
    search over the rows in memory, a Spark job in the Spark layer), then :func:`simba_batch_update`
    (step 2c). ``pickable``: the positions that may be picked, handed to the search as they are;
    ``after_step`` (optional) is called after every step. Returns the ranked w (the last w, or the
    mean of the iterates) and the steps (:func:`sparkfs.core.margin_loops.margin_loop`)."""
    def update(picked, beta, w, average):
        instances, hits, misses = nearest_hits_and_misses(picked, w)
        return simba_batch_update(w, run.batch_rule, instances, hits, misses, beta, average)

    return margin_loop(np.asarray(pickable, dtype=np.int64), num_features, run=run, seed=seed, update=update,
                       after_step=after_step)


def simba_in_memory(X, y, *, iterations=None, batch_size=1, seed=0, batch_rule="replay", schedule="constant",
                    step_size=1.0, passes=1, averaging="none") -> Tuple[np.ndarray, np.ndarray]:
    """Simba (Gilad-Bachrach et al. 2004, Algorithm 1) on in-memory dense data, with mini-batches.

    Each step finds, for every batch instance, its nearhit and nearmiss in the current weighted
    metric ``||.||_w`` over all rows (brute force, ties by smaller index, itself excluded) and
    updates w by :func:`simba_batch_update`; finally :func:`simba_final_weights`. The run's
    settings (:class:`sparkfs.core.margin_runs.MarginRun`) default to the paper's.

    Returns
    -------
    final_weights, raw_w : ndarrays of shape (D,): :func:`simba_final_weights` of the ranked w (the
        last w, or the mean of the iterates with ``averaging="iterates"``), and that w.
    """
    owner = "simba_in_memory"
    run = MarginRun(schedule=schedule, step_size=step_size, passes=passes, batch_size=batch_size,
                    batch_rule=batch_rule, averaging=averaging, iterations=iterations)
    X, y = check_margin_data(X, y, owner)

    def nearest_hits_and_misses(picked, w):  # brute force over every row, in ||.||_w
        w2 = w ** 2
        hits = sorted_neighbours(X, y, picked, w2, True, 1)[:, 0]
        misses = sorted_neighbours(X, y, picked, w2, False, 1)[:, 0]
        return X[picked], X[hits], X[misses]

    ranked = simba_loop(np.arange(X.shape[0]), X.shape[1], run=run, seed=seed,
                        nearest_hits_and_misses=nearest_hits_and_misses).ranked
    return simba_final_weights(ranked), ranked
