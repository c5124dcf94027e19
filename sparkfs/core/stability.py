"""Stability of feature selection (Han & Yu, "A variance reduction framework for stable feature
selection", ICDM 2010, Sections III and V).

Pure NumPy, driver-side: the inputs are R results of a selector (R subsets or R weight vectors),
small next to the data; nothing here is a sum over pairs of rows.

* Subsets: :func:`kuncheva_index` (eq. 9), :func:`jaccard_index`, and their averages over all
  pairs of R subsets (eq. 8): :func:`kuncheva_stability`, :func:`jaccard_stability`.
* Feature weights: :func:`normalised_feature_weights` (``r_j = |w_j| / sum |w|``, Section V-B),
  :func:`weight_variance` (eq. 3 per feature; its average over the features is eq. 4's average
  variance), :func:`bias_variance_error` (eqs. 1-3 per feature, error = bias + variance) and
  :func:`average_bias_variance_error` (eq. 4).
* The synthetic study of Section V-B: :func:`correlated_groups_data` and
  :func:`correlated_groups_relevance` (the true relevance r*).

Choices (where the paper is silent or ambiguous)
------------------------------------------------
1. **The distribution of training sets** D is replaced by the R runs given, each with
   probability 1/R (the paper's 500 training sets): expectations are plain means over the runs,
   the variance divides by R (not R - 1). With these definitions EL = Bias + Var holds exactly
   (up to rounding) for every feature, as eq. (4) states.
2. **Kuncheva at k = 0 or k = n**: eq. (9) is 0/0 there. Every pair of subsets of that size
   coincides, so the observed overlap equals the overlap expected by chance (the numerator
   ``r n - k^2`` is exactly 0): the index is defined as 0, "agreement due to chance only".
   Subsets of different sizes are refused (eq. 9 assumes |S_i| = |S_j| = k).
3. **Jaccard of two empty subsets** (0/0) is 1: the subsets are identical.
4. **Normalised weights of an all-zero vector** are all 0 (no feature carries weight), not NaN.
5. **The synthetic labels**: the paper draws 50 instances from each of N(mu_1, Sigma) and
   N(mu_2, Sigma) and also says that the label "is decided by the sign of a linear combination of
   all feature values" with r*. The default labels each instance by its mixture component
   (class means exactly +-0.5 on the relevant features, balanced classes); ``labels="sign"``
   labels it by ``sign(r* . x)`` instead (same instances, the classes then need not be balanced).
"""

from __future__ import annotations

from itertools import combinations
from typing import NamedTuple, Sequence, Tuple, Union

import numpy as np

LABEL_RULES = ("component", "sign")


def _as_subset(subset, n_features: int) -> np.ndarray:
    indices = np.unique(np.asarray(subset, dtype=np.int64).ravel())
    if indices.size != np.asarray(subset).size:
        raise ValueError(f"a subset lists a feature twice: {np.asarray(subset).tolist()}")
    if indices.size and (indices[0] < 0 or indices[-1] >= n_features):
        raise ValueError(f"subset indices must lie in [0, {n_features}); got {indices.tolist()}")
    return indices


def _check_n_features(owner: str, n_features) -> int:
    if isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer)) or n_features < 1:
        raise ValueError(f"The 'n_features' parameter of {owner} must be an int in the range [1, inf). "
                         f"Got {n_features!r} instead.")
    return int(n_features)


def kuncheva_index(subset_a, subset_b, n_features: int) -> float:
    """Kuncheva's consistency index of two subsets of equal size k (eq. 9).

    ``(r - k^2 / n) / (k - k^2 / n) = (r n - k^2) / (k (n - k))`` with r = |S_a & S_b| and n the
    total number of features. In [-1, 1]; 1 for identical subsets, about 0 on average for subsets
    drawn at random.

    Parameters
    ----------
    subset_a, subset_b : sequence of int
        Feature indices (distinct, in [0, n_features)), both of size k.
    n_features : int

    Returns
    -------
    float
        0 when k = 0 or k = n (see the module notes).
    """
    n_features = _check_n_features("kuncheva_index", n_features)
    a, b = _as_subset(subset_a, n_features), _as_subset(subset_b, n_features)
    if a.size != b.size:
        raise ValueError(f"kuncheva_index needs subsets of equal size; got {a.size} and {b.size}")
    k = a.size
    if k == 0 or k == n_features:
        return 0.0
    overlap = np.intersect1d(a, b, assume_unique=True).size
    return float(overlap * n_features - k * k) / float(k * (n_features - k))


def jaccard_index(subset_a, subset_b) -> float:
    """``|S_a & S_b| / |S_a | S_b|``; 1 for two empty subsets."""
    a = np.unique(np.asarray(subset_a, dtype=np.int64))
    b = np.unique(np.asarray(subset_b, dtype=np.int64))
    union = np.union1d(a, b).size
    return 1.0 if union == 0 else np.intersect1d(a, b, assume_unique=True).size / union


def average_pairwise_similarity(subsets: Sequence, similarity) -> float:
    """``2 / (q (q - 1)) sum_{i < j} Sim(S_i, S_j)`` over q >= 2 subsets (eq. 8).

    ``similarity`` is a function of two subsets, e.g. ``lambda a, b: kuncheva_index(a, b, d)``.
    """
    subsets = list(subsets)
    if len(subsets) < 2:
        raise ValueError(f"eq. (8) needs at least two subsets; got {len(subsets)}")
    values = [similarity(a, b) for a, b in combinations(subsets, 2)]
    return float(np.mean(values))


def _pair_overlaps(subsets: Sequence, n_features: int):
    """Sizes (q,) and the overlaps ``|S_i & S_j|`` of all pairs i < j, in the order of
    ``itertools.combinations`` (row-major upper triangle), from one indicator product."""
    members = np.zeros((len(subsets), n_features))
    for row, subset in enumerate(subsets):
        members[row, _as_subset(subset, n_features)] = 1.0
    first, second = np.triu_indices(len(subsets), 1)
    overlaps = (members @ members.T)[first, second].astype(np.int64)   # counts: exact in float64
    sizes = members.sum(axis=1).astype(np.int64)
    return sizes, first, second, overlaps


def kuncheva_stability(subsets: Sequence, n_features: int) -> float:
    """Average Kuncheva index over all pairs of the subsets (eqs. 8-9).

    Every pair's index is :func:`kuncheva_index`'s expression, computed for all pairs at once from
    the overlaps of one indicator product, and averaged in the same order as
    :func:`average_pairwise_similarity` (so the value is the same to the last bit).
    """
    n_features = _check_n_features("kuncheva_stability", n_features)
    subsets = list(subsets)
    if len(subsets) < 2:
        raise ValueError(f"eq. (8) needs at least two subsets; got {len(subsets)}")
    sizes, first, second, overlaps = _pair_overlaps(subsets, n_features)
    if np.any(sizes != sizes[0]):
        raise ValueError(f"kuncheva_index needs subsets of equal size; got sizes {sorted(set(sizes.tolist()))}")
    k = int(sizes[0])
    if k == 0 or k == n_features:
        return 0.0
    values = (overlaps * n_features - k * k).astype(float) / float(k * (n_features - k))
    return float(np.mean(values))


def jaccard_stability(subsets: Sequence) -> float:
    """Average Jaccard index over all pairs of the subsets (eq. 8 with Jaccard), computed for all
    pairs at once as :func:`kuncheva_stability` is (same value as pair by pair)."""
    subsets = [np.unique(np.asarray(subset, dtype=np.int64).ravel()) for subset in subsets]
    if len(subsets) < 2:
        raise ValueError(f"eq. (8) needs at least two subsets; got {len(subsets)}")
    features, compact = np.unique(np.concatenate(subsets), return_inverse=True)
    bounds = np.cumsum([0] + [subset.size for subset in subsets])
    compact_subsets = [compact[bounds[i]:bounds[i + 1]] for i in range(len(subsets))]
    sizes, first, second, overlaps = _pair_overlaps(compact_subsets, max(int(features.size), 1))
    unions = sizes[first] + sizes[second] - overlaps
    values = np.where(unions == 0, 1.0, overlaps / np.maximum(unions, 1))
    return float(np.mean(values))


def top_k_subsets(scores, k: int) -> list:
    """The k best features of every run (rows of ``scores``, larger is better), as index arrays.

    Ties are broken by the lower feature index (stable sort), as
    :func:`sparkfs.core.selection.rank_features` does.
    """
    scores = np.atleast_2d(np.asarray(scores, dtype=float))
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= scores.shape[1]:
        raise ValueError(f"The 'k' parameter of top_k_subsets must be an int in the range [0, {scores.shape[1]}]. "
                         f"Got {k!r} instead.")
    order = np.argsort(-scores, axis=1, kind="mergesort")
    return [np.sort(row[:k]) for row in order]


# Feature weights: variance, bias, error ------------------------------------------------------


def normalised_feature_weights(weights) -> np.ndarray:
    """``r_j = |w_j| / sum_l |w_l|`` per run (Section V-B): r_j >= 0, sum_j r_j = 1.

    Parameters
    ----------
    weights : array-like of shape (d,) or (R, d)

    Returns
    -------
    ndarray of the same shape; an all-zero row stays all zero.
    """
    magnitude = np.abs(np.asarray(weights, dtype=float))
    total = magnitude.sum(axis=-1, keepdims=True)
    return np.divide(magnitude, total, out=np.zeros_like(magnitude), where=total > 0)


def _runs(weights) -> np.ndarray:
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 2 or weights.shape[0] < 1:
        raise ValueError(f"weights must have shape (runs, features); got {weights.shape}")
    if not np.all(np.isfinite(weights)):
        raise ValueError("weights contain NaN or infinite values")
    return weights


def weight_variance(weights) -> np.ndarray:
    """Variance of each feature's weight over the runs (eq. 3), ``E[(r(D) - E r(D))^2]``.

    Parameters
    ----------
    weights : array-like of shape (R, d)
        One (normalised, :func:`normalised_feature_weights`) weight vector per training set.

    Returns
    -------
    variance : ndarray of shape (d,)
        Divides by R (each run has probability 1/R). Its mean over the features is the average
        variance of eq. (4), the paper's instability measure.
    """
    runs = _runs(weights)
    return np.mean((runs - runs.mean(axis=0)) ** 2, axis=0)


class BiasVarianceError(NamedTuple):
    """Per-feature (arrays of shape (d,)) or averaged (floats) terms of eqs. (1)-(4)."""

    bias: Union[np.ndarray, float]
    variance: Union[np.ndarray, float]
    error: Union[np.ndarray, float]


def bias_variance_error(weights, true_relevance) -> BiasVarianceError:
    """Bias (eq. 2), variance (eq. 3) and expected loss (eq. 1) of every feature's weight.

    ``bias_j = (r*_j - E r_j(D))^2``, ``variance_j = E[(r_j(D) - E r_j(D))^2]``,
    ``error_j = E[(r*_j - r_j(D))^2]``, expectations over the R runs with probability 1/R. The
    error is computed from its own definition (eq. 1), not as bias + variance; they agree to
    rounding (the decomposition of eq. 4).

    Parameters
    ----------
    weights : array-like of shape (R, d)
        Normalised weights of R runs.
    true_relevance : array-like of shape (d,)
        r*, in the same normalisation (e.g. :func:`correlated_groups_relevance`).
    """
    runs = _runs(weights)
    truth = np.asarray(true_relevance, dtype=float)
    if truth.shape != (runs.shape[1],):
        raise ValueError(f"true_relevance must have shape ({runs.shape[1]},); got {truth.shape}")
    mean = runs.mean(axis=0)
    bias = (truth - mean) ** 2
    variance = np.mean((runs - mean) ** 2, axis=0)
    error = np.mean((truth - runs) ** 2, axis=0)
    return BiasVarianceError(bias, variance, error)


def average_bias_variance_error(weights, true_relevance) -> BiasVarianceError:
    """Averages over the d features of :func:`bias_variance_error` (eq. 4), as floats."""
    terms = bias_variance_error(weights, true_relevance)
    return BiasVarianceError(float(np.mean(terms.bias)), float(np.mean(terms.variance)), float(np.mean(terms.error)))


# The synthetic study of Section V-B ------------------------------------------------------------


def correlated_groups_relevance(n_groups: int = 100, group_size: int = 10, n_relevant: int = 50) -> np.ndarray:
    """The true relevance r* of the synthetic study: ``1 / n_relevant`` (0.02) on the first
    n_relevant features, 0 elsewhere (sums to 1, like the normalised weights)."""
    truth = np.zeros(n_groups * group_size)
    if n_relevant > 0:
        truth[:n_relevant] = 1.0 / n_relevant
    return truth


def correlated_groups_data(n_samples: int, seed, *, n_groups: int = 100, group_size: int = 10,
                           correlation: float = 0.8, n_relevant: int = 50, mean_shift: float = 0.5,
                           labels: str = "component") -> Tuple[np.ndarray, np.ndarray]:
    """A training set of the synthetic study of Section V-B (defaults: the paper's).

    An equal mixture of ``N(mu_1, Sigma)`` and ``N(mu_2, Sigma)``: ``mu_1 = +mean_shift`` and
    ``mu_2 = -mean_shift`` on the first ``n_relevant`` features, 0 elsewhere; Sigma block diagonal
    with ``n_groups`` blocks of ``group_size`` features, 1 on the diagonal and ``correlation``
    off it (d = 1,000 features in 100 groups of 10, correlation 0.8, 50 relevant features).

    Parameters
    ----------
    n_samples : int
        Rows: the first ``ceil(n_samples / 2)`` from N1 (label +1), the rest from N2 (label -1);
        the paper's training sets have 100.
    seed : int or numpy Generator
    labels : {"component", "sign"}
        ``"component"`` (default): the mixture component, +1 / -1. ``"sign"``: ``sign(r* . x)``
        with r* of :func:`correlated_groups_relevance` (see the module notes).

    Returns
    -------
    X : ndarray of shape (n_samples, n_groups * group_size)
    y : ndarray of int of shape (n_samples,), values +1 / -1

    Notes
    -----
    Each group is drawn from one shared factor: ``x_f = sqrt(rho) z_g + sqrt(1 - rho) e_f`` with
    z_g, e_f independent standard normals, whose covariance is exactly Sigma's block (1 on the
    diagonal, rho off it) for 0 <= rho <= 1; no Cholesky factor is needed.
    """
    if labels not in LABEL_RULES:
        raise ValueError(f"The 'labels' parameter of correlated_groups_data must be a str among "
                         f"{set(LABEL_RULES)}. Got {labels!r} instead.")
    if not 0.0 <= correlation <= 1.0:
        raise ValueError(f"The 'correlation' parameter of correlated_groups_data must be a float in the range "
                         f"[0, 1]. Got {correlation!r} instead.")
    n_features = n_groups * group_size
    if not 0 <= n_relevant <= n_features:
        raise ValueError(f"The 'n_relevant' parameter of correlated_groups_data must be an int in the range "
                         f"[0, {n_features}]. Got {n_relevant!r} instead.")
    rng = np.random.default_rng(seed)
    factors = rng.standard_normal((n_samples, n_groups))
    noise = rng.standard_normal((n_samples, n_features))
    X = np.sqrt(correlation) * np.repeat(factors, group_size, axis=1) + np.sqrt(1.0 - correlation) * noise
    component = np.where(np.arange(n_samples) < (n_samples + 1) // 2, 1, -1)
    X[:, :n_relevant] += mean_shift * component[:, None]
    if labels == "component":
        return X, component
    score = X @ correlated_groups_relevance(n_groups, group_size, n_relevant)
    return X, np.where(score >= 0, 1, -1)
