"""Fuzzy c-means (Dunn 1973, Bezdek 1981): the groups of Parzen-ISE when there is no label column.

Pure NumPy. N rows ``x_i``, C centres ``v_c``, fuzzifier ``m > 1``, squared Euclidean distances
``D_ic = ||x_i - v_c||^2``. Bezdek's alternation minimises ``J_m = sum_i sum_c u_ic^m D_ic``
subject to ``sum_c u_ic = 1``:

* memberships (:func:`fcm_memberships`): ``u_ic = 1 / sum_l (D_ic / D_il)^(1 / (m - 1))``; a row
  at distance 0 from one or more centres has membership 1, shared equally among those centres;
* centres (:func:`fcm_centres`): ``v_c = sum_i u_ic^m x_i / sum_i u_ic^m``.

Distribution: an iteration is one pass. The tasks receive the current centres (like a query
batch), compute the memberships of their rows and return :func:`fcm_block_terms`, the sums
``sum_i u_ic^m x_i`` (C, d), ``sum_i u_ic^m`` (C,) and ``J_m`` (scalar), which add over disjoint
blocks of rows; the driver divides (:func:`fcm_centres`). A task holds its block and C x d centres;
the driver holds C x d. Cost per iteration O(N C d).

Choices (Bezdek leaves them open):

1. **Start from centres, not from random memberships.** The initial centres are the first C
   distinct rows in the order of seeded keys (:func:`initial_centres`): the rows' content keys
   (:func:`sparkfs.core.sampling.content_sample_keys`, ties by row id) in Parzen-ISE, so any
   partitioning and any row order draws the same start; :func:`fcm_in_memory` keys the row
   positions unless given keys. Random memberships per row would need a pass before the first
   centres anyway.
2. **Stop on the centres.** The loop stops when no centre coordinate moves by more than
   ``tol`` times the feature's standard deviation (1 for a constant feature): a scale-free test
   that needs no N x C membership matrix from the previous iteration (Bezdek's
   ``max |U_t+1 - U_t| < tol`` does), or after ``max_iter`` iterations.
3. The final memberships are those of the final centres (one more membership evaluation,
   which the Spark layer does in its tasks from the shipped centres).
"""

from __future__ import annotations

from typing import List, NamedTuple, Optional, Tuple

import numpy as np

from sparkfs.core.sampling import sample_keys

#: Rows per chunk of the (rows, centres, features) difference temporary.
_ELEMENT_BUDGET = 2_000_000


class FCMTerms(NamedTuple):
    """Sums over a block of rows, at given centres; every field adds over disjoint blocks."""

    weighted_sums: np.ndarray    # (C, d): sum_i u_ic^m x_i
    membership_sums: np.ndarray  # (C,): sum_i u_ic^m
    objective: float             # J_m = sum_i sum_c u_ic^m ||x_i - v_c||^2


def _check_fuzzifier(m) -> float:
    number = isinstance(m, (int, float, np.integer, np.floating)) and not isinstance(m, bool)
    if not number or not np.isfinite(m) or m <= 1:
        raise ValueError(f"The 'm' parameter of fuzzy c-means must be a float in the range (1, inf). "
                         f"Got {m!r} instead.")
    return float(m)


def squared_distances(points, centres) -> np.ndarray:
    """``D_ic = sum_k (x_ik - v_ck)^2`` computed elementwise (no expansion), shape (n, C)."""
    points, centres = np.asarray(points, dtype=float), np.asarray(centres, dtype=float)
    distances = np.empty((points.shape[0], centres.shape[0]))
    chunk = max(1, _ELEMENT_BUDGET // max(1, centres.size))
    for start in range(0, points.shape[0], chunk):
        difference = points[start:start + chunk, None, :] - centres[None, :, :]
        distances[start:start + chunk] = np.einsum("icd,icd->ic", difference, difference)
    return distances


def memberships_from_distances(distances, m: float = 2.0) -> np.ndarray:
    """Bezdek's membership update ``u_ic = 1 / sum_l (D_ic / D_il)^(1/(m-1))`` from the squared
    distances ``D`` (n, C).

    Computed as ``r_ic / sum_l r_il`` with ``r_ic = (min_l D_il / D_ic)^(1/(m-1))`` in (0, 1], so
    nothing overflows. A row at distance 0 from some centres shares membership 1 among them.
    """
    m = _check_fuzzifier(m)
    distances = np.asarray(distances, dtype=float)
    nearest = distances.min(axis=1, keepdims=True)
    on_centre = nearest[:, 0] == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (nearest / distances) ** (1.0 / (m - 1.0))
    ratio[on_centre] = (distances[on_centre] == 0.0).astype(float)
    return ratio / ratio.sum(axis=1, keepdims=True)


def fcm_memberships(points, centres, m: float = 2.0) -> np.ndarray:
    """Bezdek's memberships of ``points`` (n, C): :func:`memberships_from_distances` of
    :func:`squared_distances`."""
    return memberships_from_distances(squared_distances(points, centres), m)


def fcm_terms_from_distances(points_sums, distances, m: float = 2.0) -> FCMTerms:
    """One block's share of an FCM iteration from its squared distances to the centres:
    ``points_sums(powered)`` gives ``sum_i u_ic^m x_i`` (C, d) for the powered memberships."""
    powered = memberships_from_distances(distances, m) ** _check_fuzzifier(m)
    return FCMTerms(points_sums(powered), powered.sum(axis=0), float(np.sum(powered * distances)))


def fcm_block_terms(points, centres, m: float = 2.0) -> FCMTerms:
    """One block's share of an FCM iteration at the given centres (outputs add over blocks)."""
    points = np.asarray(points, dtype=float)
    return fcm_terms_from_distances(lambda powered: powered.T @ points, squared_distances(points, centres), m)


def fcm_centres(weighted_sums, membership_sums) -> np.ndarray:
    """Bezdek's centre update ``v_c = sum_i u_ic^m x_i / sum_i u_ic^m`` from the reduced sums."""
    membership_sums = np.asarray(membership_sums, dtype=float)
    if np.any(membership_sums <= 0):
        raise ValueError(f"fuzzy c-means: cluster(s) {np.flatnonzero(membership_sums <= 0).tolist()} "
                         "have no membership")
    return np.asarray(weighted_sums, dtype=float) / membership_sums[:, None]


def initial_centres(points, keys, num_clusters: int) -> np.ndarray:
    """The first ``num_clusters`` distinct rows of ``points`` in ascending ``keys`` (seeded start).

    ``keys`` are the rows' seeded sampling keys (ties: the earlier row); the Spark layer passes the
    rows with the smallest keys it collected (a few times C of them), the in-memory driver all rows.
    """
    points = np.asarray(points, dtype=float)
    chosen: List[int] = []
    for position in np.argsort(np.asarray(keys), kind="stable"):
        if not any(np.array_equal(points[position], points[other]) for other in chosen):
            chosen.append(position)
            if len(chosen) == num_clusters:
                return points[chosen].copy()
    raise ValueError(f"fuzzy c-means needs {num_clusters} distinct rows to start from; found {len(chosen)}")


def centre_shift(old_centres, new_centres, feature_scale) -> float:
    """``max_ck |v_ck(new) - v_ck(old)| / scale_k``: the stopping statistic of the loop."""
    return float(np.max(np.abs(np.asarray(new_centres) - np.asarray(old_centres)) / feature_scale, initial=0.0))


def fcm_in_memory(X, num_clusters: int, *, m: float = 2.0, tol: float = 1e-6, max_iter: int = 300, seed: int = 0,
                  initial: Optional[np.ndarray] = None,
                  keys: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray, dict]:
    """Fuzzy c-means on in-memory rows, the reference the Spark layer must equal.

    Parameters
    ----------
    X : ndarray of shape (N, d)
    num_clusters : int, 1 <= C <= number of distinct rows
    m : float > 1, the fuzzifier (2 is Bezdek's usual choice)
    tol : float >= 0, stop when no centre coordinate moves more than tol feature standard deviations
    max_iter : int >= 1
    seed : int, the seed of the starting centres (row ids are the row positions)
    initial : ndarray (C, d), optional, starting centres instead of the seeded rows
    keys : ndarray (N,), optional, the rows' sampling keys (default ``sample_keys(positions, seed)``)

    Returns
    -------
    centres : ndarray (C, d)
    memberships : ndarray (N, C), those of the final centres
    info : dict with ``iterations``, ``converged``, ``objective`` (J_m per iteration)
    """
    X = np.asarray(X, dtype=float)
    m = _check_fuzzifier(m)
    if isinstance(num_clusters, bool) or not isinstance(num_clusters, (int, np.integer)) or num_clusters < 1:
        raise ValueError(f"The 'num_clusters' parameter of fcm_in_memory must be an int in the range [1, inf). "
                         f"Got {num_clusters!r} instead.")
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 1:
        raise ValueError(f"The 'max_iter' parameter of fcm_in_memory must be an int in the range [1, inf). "
                         f"Got {max_iter!r} instead.")
    if initial is None:
        keys = sample_keys(np.arange(X.shape[0]), seed) if keys is None else keys
        centres = initial_centres(X, keys, int(num_clusters))
    else:
        centres = np.array(initial, dtype=float)
    std = X.std(axis=0)
    feature_scale = np.where(std > 0, std, 1.0)
    objective, converged, iteration = [], False, 0
    for iteration in range(1, max_iter + 1):  # noqa: B007 - the count of iterations is read after the loop
        terms = fcm_block_terms(X, centres, m)
        objective.append(terms.objective)
        new_centres = fcm_centres(terms.weighted_sums, terms.membership_sums)
        shift = centre_shift(centres, new_centres, feature_scale)
        centres = new_centres
        if shift <= tol:
            converged = True
            break
    info = {"iterations": iteration, "converged": converged, "objective": objective}
    return centres, fcm_memberships(X, centres, m), info
