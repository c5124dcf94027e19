"""Simba (Gilad-Bachrach, Navot & Tishby, "Margin based feature selection", ICML 2004,
Algorithm 1), the baseline of Li & Lu's Lmba paper. Pure NumPy.

* :func:`simba_delta` -- the summed update of a batch of instances (step 2c);
* :func:`simba_final_weights` -- ``w^2 / ||w^2||_inf``;
* :func:`simba_in_memory` -- the whole algorithm on in-memory data (the Spark layer,
  :mod:`sparkfs.spark.margin_weighting`, mirrors it with one Spark job per step).

Choices: a neighbour at weighted distance 0 (a duplicate row) contributes 0 to Delta instead of
dividing by zero; a batch sums the Deltas of its instances, all at the same w (a batch of 1 is
the paper). Instances are picked by :func:`sparkfs.core.margin_weighting.instance_order`.
"""

from __future__ import annotations

from typing import Tuple

import numpy as np

from sparkfs.core.margin_weighting import _check_data, _check_int, _sorted_neighbours, instance_order, number_of_steps


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


def simba_in_memory(X, y, *, iterations=None, batch_size=1, seed=0) -> Tuple[np.ndarray, np.ndarray]:
    """Simba (Gilad-Bachrach et al. 2004, Algorithm 1) on in-memory dense data, with mini-batches.

    Each step finds, for every batch instance, its nearhit and nearmiss in the current weighted
    metric ``||.||_w`` over all rows (brute force, ties by smaller index, itself excluded), sums
    the Deltas (:func:`simba_delta`, all at the same w) and adds them to w; finally
    :func:`simba_final_weights`.

    Returns
    -------
    final_weights, raw_w : ndarrays of shape (D,)
    """
    owner = "simba_in_memory"
    batch_size = _check_int("batch_size", owner, batch_size, 1)
    X, y = _check_data(X, y, owner)
    n, num_features = X.shape
    iterations = n if iterations is None else _check_int("iterations", owner, iterations, 0)
    steps = number_of_steps(iterations, batch_size)
    w = np.ones(num_features)
    for batch in instance_order(n, steps, batch_size, seed):
        w2 = w ** 2
        hits = _sorted_neighbours(X, y, batch, w2, True, 1)[:, 0]
        misses = _sorted_neighbours(X, y, batch, w2, False, 1)[:, 0]
        w = w + simba_delta(w, X[batch], X[hits], X[misses])
    return simba_final_weights(w), w
