"""The linear SVM of SVM-RFE in the primal, for data that stay distributed (pure NumPy + SciPy).

scikit-learn's ``LinearSVC(C, loss="hinge")`` (liblinear, with its default intercept handling:
the intercept is the weight of a constant feature of value 1, and is penalised like the others)
minimises, per one-vs-rest problem k with targets ``t_ik = +1`` for rows of class k and -1
otherwise,

    F_k(w_k, b_k) = (||w_k||^2 + b_k^2) / 2 + C sum_i s_i max(0, 1 - t_ik (w_k . x_i + b_k))

(s the instance weights; 1 without). Dividing by ``C S`` (``S = sum_i s_i``) keeps the
minimiser and brings the objective to the scale of a mean loss, where a relative tolerance
means the same on any number of rows:

    f_k = (||w_k||^2 + b_k^2) / (2 C S) + (1 / S) sum_i s_i hinge_ik.

Only the data term needs the rows. :func:`hinge_terms` computes, for one block of rows, the
weighted hinge sums and their subgradients for every problem at once; the Spark layer sums them
over the blocks in a fixed order (:mod:`sparkfs.spark.svm_rfe`). :func:`minimise_hinge_objective`
runs L-BFGS (``scipy.optimize.minimize``) on the sum of the K problems (they share no variable,
so the sum's minimiser is every problem's) with one data pass per evaluation.

The hinge is not differentiable where a margin is exactly 1; L-BFGS uses the subgradient that
counts such rows as inactive, as pyspark.ml's ``LinearSVC`` does, and stops at ``max_iter``
iterations, at a relative decrease of f below ``tol``, or when its line search can make no
progress. The weights then agree with liblinear's to the solvers' tolerance, not to rounding;
the ranking SVM-RFE takes from them agrees wherever features' weights are clearly apart.
Given the same sums, every step is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np


def one_vs_rest_targets(labels, positive_classes: Sequence[int]) -> np.ndarray:
    """``t`` (n, K): +1 where row i is of ``positive_classes[k]``, -1 elsewhere."""
    labels = np.asarray(labels)
    return np.where(labels[:, None] == np.asarray(positive_classes)[None, :], 1.0, -1.0)


def hinge_terms(matrix, labels, weights: Optional[np.ndarray], coef: np.ndarray, intercept: np.ndarray,
                positive_classes: Sequence[int]) -> dict:
    """The data term of f_k for one block of rows, unnormalised: for every problem k,

    ``loss[k] = sum_i s_i max(0, 1 - t_ik m_ik)`` with ``m_ik = w_k . x_i + b_k``, and its
    subgradient ``coef_gradient[k] = -sum_{i: t_ik m_ik < 1} s_i t_ik x_i`` (``intercept_gradient``
    the same without ``x_i``). ``matrix`` (n, r) dense or CSR holds the features ``coef`` (K, r)
    weighs.
    """
    targets = one_vs_rest_targets(labels, positive_classes)
    margins = targets * (np.asarray(matrix @ coef.T) + intercept[None, :])
    shortfall = np.maximum(1.0 - margins, 0.0)
    row_weights = np.ones(targets.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    pull = np.where(margins < 1.0, row_weights[:, None] * targets, 0.0)  # (n, K): s_i t_ik on active rows
    return {
        "loss": row_weights @ shortfall,
        "coef_gradient": -np.asarray(matrix.T @ pull).T,
        "intercept_gradient": -pull.sum(axis=0),
    }


def regularised_objective(terms: dict, coef: np.ndarray, intercept: np.ndarray, C: float, total_weight: float):
    """f = sum_k f_k and its (sub)gradient, flattened as [coef (K, r), intercept (K,)], from the
    summed :func:`hinge_terms` (module notes)."""
    scale = 1.0 / (C * total_weight)
    value = 0.5 * scale * (np.sum(coef * coef) + np.sum(intercept * intercept)) + terms["loss"].sum() / total_weight
    gradient = np.concatenate([(scale * coef + terms["coef_gradient"] / total_weight).ravel(),
                               scale * intercept + terms["intercept_gradient"] / total_weight])
    return float(value), gradient


@dataclass
class SVMFit:
    coef: np.ndarray  # (K, r)
    intercept: np.ndarray  # (K,)
    objective: float
    iterations: int
    evaluations: int
    message: str


def minimise_hinge_objective(summed_terms: Callable[[np.ndarray, np.ndarray], dict], num_problems: int,
                             num_features: int, *, C: float, total_weight: float, max_iter: int = 100,
                             tol: float = 1e-6, start: Optional[np.ndarray] = None,
                             feature_scale: Optional[np.ndarray] = None) -> SVMFit:
    """L-BFGS on f (module notes). ``summed_terms(coef, intercept)`` returns the
    :func:`hinge_terms` of all rows (one data pass); ``start`` is a flattened warm start
    ``[coef, intercept]``.

    ``feature_scale`` (r,) preconditions the search, as pyspark.ml does with the features'
    standard deviations: L-BFGS moves ``v_kj = w_kj sigma_j`` (sigma_j <= 0 counts as 1), so that
    features of very different spreads take comparable steps. The objective, and so the minimiser,
    are unchanged: f is evaluated at ``w = v / sigma`` and its gradient is divided by sigma.
    """
    from scipy.optimize import minimize

    if not C > 0 or not total_weight > 0:
        raise ValueError(f"C and the total instance weight must be positive; got C={C!r}, total={total_weight!r}")
    size = num_problems * num_features
    sigma = np.ones(num_features) if feature_scale is None else np.asarray(feature_scale, dtype=np.float64)
    sigma = np.where(np.isfinite(sigma) & (sigma > 0), sigma, 1.0)
    to_search = np.concatenate([np.tile(sigma, num_problems), np.ones(num_problems)])

    def unpacked(theta):
        return theta[:size].reshape(num_problems, num_features), theta[size:]

    def objective(searched):
        coef, intercept = unpacked(searched / to_search)
        value, gradient = regularised_objective(summed_terms(coef, intercept), coef, intercept, C, total_weight)
        return value, gradient / to_search

    theta0 = np.zeros(size + num_problems) if start is None else np.asarray(start, dtype=np.float64)
    result = minimize(objective, theta0 * to_search, jac=True, method="L-BFGS-B",
                      options={"maxiter": int(max_iter), "ftol": float(tol), "gtol": 0.0, "maxcor": 10,
                               "maxfun": 2 * int(max_iter) + 20})
    coef, intercept = unpacked(result.x / to_search)
    return SVMFit(coef.copy(), intercept.copy(), float(result.fun), int(result.nit), int(result.nfev),
                  str(result.message))
