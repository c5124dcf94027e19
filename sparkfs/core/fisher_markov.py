"""Fisher-Markov selector, linear kernel (LFS): Cheng, Zhou & Cheng, "The Fisher-Markov Selector".

The Markov coefficient of eq. (19) is written with double sums over pairs of samples, but
``sum_{u,v in class i} x_uj x_vj = (sum_{u in class i} x_uj)^2``, so it needs only the per-class
column sums, the class sizes and the column sums of squares: O(n p) work, one pass over the data.
"""

from __future__ import annotations

import numpy as np


def markov_coefficients(class_sums, class_counts, sum_of_squares, gamma: float) -> np.ndarray:
    """LFS Markov coefficients theta_j, eq. (19), from sufficient statistics.

    theta_j = (1/n) sum_i (1/n_i) (sum_{u in class i} x_uj)^2
              - (gamma/n) sum_u x_uj^2 + ((gamma - 1)/n^2) (sum_u x_uj)^2

    Parameters
    ----------
    class_sums : array of shape (C, p)
        Per-class column sums ``sum_{u in class i} w_u x_uj`` (weights 1 when unweighted).
    class_counts : array of shape (C,)
        Class sizes n_i (or weight sums). Classes of size 0 are ignored.
    sum_of_squares : array of shape (p,)
        Column sums of squares ``sum_u w_u x_uj^2``.
    gamma : float
        The trade-off between discriminativeness and expressiveness (paper uses -0.5).

    Returns
    -------
    theta : array of shape (p,)

    Notes
    -----
    With instance weights w_u, every count and sum is weighted (n = sum w_u, n_i = sum over
    class i). A constant feature gets theta_j = 0 exactly in exact arithmetic for every gamma.
    """
    class_sums = np.asarray(class_sums, dtype=np.float64)
    class_counts = np.asarray(class_counts, dtype=np.float64)
    sum_of_squares = np.asarray(sum_of_squares, dtype=np.float64)
    if class_sums.ndim != 2 or class_sums.shape[0] != class_counts.shape[0]:
        raise ValueError(
            f"class_sums must have shape (n_classes, n_features) matching class_counts; "
            f"got {class_sums.shape} and {class_counts.shape}"
        )
    if sum_of_squares.shape != class_sums.shape[1:]:
        raise ValueError(f"sum_of_squares has shape {sum_of_squares.shape}, expected {class_sums.shape[1:]}")
    present = class_counts > 0
    n = class_counts.sum()
    if n <= 0:
        raise ValueError("the total count n must be positive")
    between = ((class_sums[present] ** 2) / class_counts[present, None]).sum(axis=0) / n
    total_sum = class_sums.sum(axis=0)
    return between - (gamma / n) * sum_of_squares + ((gamma - 1.0) / n**2) * total_sum**2


def affine_class_moments(class_sums, class_counts, class_sum_squares, offset, scale):
    """Per-class sums and sums of squares of x' = (x - offset) / scale, from those of x.

    ``offset`` and ``scale`` are :func:`sparkfs.core.scaling.feature_scaling`'s (the selector's
    ``scaling`` Param: ``"range"`` or ``"standard"``, the latter with the sample std, ddof = 1).

    sum x' = (S - n_i a) / r and sum x'^2 = (Q - 2 a S + n_i a^2) / r^2 per class: scaling costs
    no extra pass over the data (and sparse data is never densified to centre it).
    """
    class_sums = np.asarray(class_sums, dtype=np.float64)
    class_sum_squares = np.asarray(class_sum_squares, dtype=np.float64)
    counts = np.asarray(class_counts, dtype=np.float64)[:, None]
    scaled_sums = (class_sums - counts * offset) / scale
    scaled_squares = (class_sum_squares - 2.0 * offset * class_sums + counts * offset**2) / scale**2
    return scaled_sums, np.clip(scaled_squares, 0.0, None)
