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

from sparkfs.core.margin_loops import LoopResult, margin_loop
from sparkfs.core.margin_runs import IterateAverage, MarginRun
from sparkfs.core.margin_weighting import check_margin_data, sorted_neighbours


def _inverse_distance_terms(w2, instances, neighbours) -> np.ndarray:
    squares = (instances - neighbours) ** 2
    distance = np.sqrt(np.sum(squares * w2, axis=-1))
    scale = np.divide(1.0, distance, out=np.zeros_like(distance), where=distance > 0)
    return squares * scale[:, None]


def simba_delta(w, instance_matrix, hit_vectors, miss_vectors) -> np.ndarray:
    """Summed Simba update of m instances (Gilad-Bachrach et al. 2004, Algorithm 1, step 2c).

    ``Delta_f = 1/2 ((x_f - nearmiss_f)^2 / ||x - nearmiss||_w - (x_f - nearhit_f)^2 /
    ||x - nearhit||_w) w_f`` summed over the instances; a neighbour at weighted distance 0 (a
    duplicate row) contributes 0 instead of dividing by 0.

    Parameters
    ----------
    w : array-like of shape (D,)
    instance_matrix, hit_vectors, miss_vectors : ndarray of shape (m, D)

    Returns
    -------
    delta : ndarray of shape (D,)
    """
    weights = np.asarray(w, dtype=float)
    instances = np.atleast_2d(np.asarray(instance_matrix, dtype=float))
    miss = _inverse_distance_terms(weights ** 2, instances, np.atleast_2d(np.asarray(miss_vectors, dtype=float)))
    hit = _inverse_distance_terms(weights ** 2, instances, np.atleast_2d(np.asarray(hit_vectors, dtype=float)))
    return 0.5 * (miss - hit).sum(axis=0) * weights


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
    instances = np.atleast_2d(np.asarray(instance_matrix, dtype=float))
    hits = np.atleast_2d(np.asarray(hit_vectors, dtype=float))
    misses = np.atleast_2d(np.asarray(miss_vectors, dtype=float))
    for position, beta in enumerate(np.asarray(step_sizes_of_instances, dtype=float)):
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
#: dense (m, D) vectors of the picked instances, of their nearest hits and of their nearest misses
#: in the metric ``||.||_w`` (step 2b).
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
