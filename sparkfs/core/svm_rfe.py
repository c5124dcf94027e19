"""SVM-RFE (Guyon et al. 2002) on the driver, its bootstrap ensemble (Saeys et al. 2008) and its
instance-weighted form (Han & Yu, ICDM 2010, Section V).

Pure NumPy/scikit-learn. Recursive feature elimination: train a linear SVM
(:class:`sklearn.svm.LinearSVC`) on the remaining features, drop the ones of smallest weight,
repeat. Han & Yu view the process as feature weighting: at every iteration each of the d features
gets ``r_j = |w_j| / sum_l |w_l|`` (0 once eliminated); :func:`svm_rfe` records this path.

* :func:`svm_rfe` -- one RFE run, instance weights through ``sample_weight``.
* :func:`ensemble_svm_rfe` -- En-SVM-RFE: RFE on N seeded bootstrap samples, rankings
  aggregated by their sum (Saeys et al. 2008, "linear aggregation"; Han & Yu use 20 samples).
* :func:`instance_weighted_svm_rfe` -- IW-SVM-RFE: the margin-based weights of
  :func:`sparkfs.core.instance_weighting.margin_instance_weights` as ``sample_weight``.

Choices and deviations (and why)
--------------------------------
1. **The SVM**: ``LinearSVC(C=1.0, loss="hinge", dual="auto", tol=1e-4, max_iter=10_000,
   random_state=0)``. The paper ran Weka's SMO with a linear kernel and its default C = 1: the
   hinge loss is that SVM's loss (liblinear's default squared hinge is another objective);
   ``dual="auto"`` picks the dual solver, the only one liblinear has for the hinge loss and the
   efficient one when n < d (the paper's regime). Differences that remain: liblinear penalises
   the intercept (``intercept_scaling``) and Weka's SMO rescales every feature to [0, 1] by
   default; scale the data first if that matters. max_iter is raised from liblinear's 1,000 so
   the hinge loss converges on small, separable data; the dual solver visits instances in a
   random order, hence the fixed ``random_state`` (runs are reproducible).
2. **Several classes**: LinearSVC trains one-vs-rest, a weight vector w_k per class. A feature's
   magnitude is ``a_j = sqrt(sum_k w_kj^2)`` (``multiclass="l2"``, the default; the elimination
   order is that of Guyon's criterion sum_k w_kj^2, scikit-learn RFE's "square" importance) or
   ``a_j = sum_k |w_kj|`` (``"l1"``). With two classes both are |w_j|, the paper's weight.
   The normalised weights are ``r_j = a_j / sum_l a_l``.
3. **Step**: a float in (0, 1) eliminates ``ceil(step * remaining)`` features per iteration (so
   at least one), an int that many. The paper removes "10 percent of the remaining features"
   and reports ~50 features left at iteration 28 and 10 at iteration 40 of its 1,000-feature
   study; rounding up reproduces both (1000, 900, 810, ..., 54, 48 at iteration 28, ..., 10 at
   iteration 40), rounding down gives 57 and 19. (scikit-learn's float step is a share of the
   *initial* number of features, constant over the run.) Never more than leaves
   ``n_features_to_select``. ``halve_above`` (0 = off, the paper's rule) first eliminates half of
   the remaining features per iteration while more than ``halve_above`` remain (never going below
   it), as RFE users do on wide data: the first fits, on the most features, are the costly ones,
   and on 5,000 features a 10 % step takes 80 of them.
4. **Ranking and scores**: ``ranking`` follows :class:`sklearn.feature_selection.RFE`:
   ``ranking[j] = 1`` for the kept features, 2 for those eliminated last, ...; features eliminated
   at the same iteration share a rank; within an iteration the smallest magnitudes go first, ties
   to the lower index (stable sort). With one feature removed per iteration the ranking equals
   scikit-learn's RFE with the same LinearSVC (tested). ``scores`` refine it into a total order:
   ``scores[j] = max(ranking) + 1 - ranking[j] + 0.5 * a_j / max_l a_l``, with ``a`` the
   magnitudes of the last fit feature j was in (the fit that eliminated it; the last fit for the
   kept ones). So a feature that left in a later round always scores higher, and within a round
   the one of larger |w| scores higher; only exactly equal magnitudes tie. An SVM whose weights
   are all 0 (e.g. constant features) records a row of zeros, its elimination goes by feature
   index and its features get the round's whole number.
5. **The weight path** has one row per SVM fitted: the elimination iterations plus a final fit on
   the kept features (scikit-learn's ``estimator_``), so with n_features_to_select = k the last
   row is the weighting of the k survivors.
6. **Bootstrap** draws, within each class, as many rows as the class has, with replacement
   (stratified): a plain bootstrap of a small training set can miss a class, and LinearSVC needs
   two. Drawn rows keep their instance weights (a row drawn twice counts twice). The rank sums
   order the features; equal sums are broken by the members' mean within-round fraction (note 4),
   and ``ranking`` (1..d) follows those scores (:func:`aggregate_rankings`).
7. **Standardisation** (``standardize=True``; off by default in this module, which is the paper's
   algorithm, on by default in :class:`sparkfs.selectors.svm_rfe.SVMRFESelector`): every feature
   divided by its standard deviation (``ddof=0``, as scikit-learn's ``StandardScaler``) and, when
   the values are dense (more than half non-zero), centred; sparse values are scaled without
   centring (``StandardScaler(with_mean=False)``), so sparse rows stay sparse. The rule looks at
   the values, not the storage: the same data dense or CSR give the same ranking. Constant
   features are left as they are. The weights |w|, the weight path and the scores are those of
   the standardised features. Centring matters because liblinear penalises the intercept: on
   Prostate_GE (values 1..4.2, spreads about 0.26) scaling alone left the dual solver at max_iter
   on most fits, centred it converged on all of them 40 times faster.
8. **Convergence**: liblinear's ``ConvergenceWarning`` is caught per fit and counted
   (``RFEResult.not_converged``) instead of printed: a run takes tens of fits, and raw microarray
   scales made every one of them warn. The selector reports the count once.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple, Optional, Tuple, Union

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

from sparkfs import progress
from sparkfs.core.instance_weighting import margin_instance_weights
from sparkfs.core.options import MULTICLASS
from sparkfs.core.options import check_step as _check_step
from sparkfs.core.options import invalid as _invalid
from sparkfs.core.scaling import MAX_MAGNITUDE, MIN_MAGNITUDE, binary_exponents, outside_square_range
from sparkfs.core.sparse_input import is_sparse
from sparkfs.errors import InvalidInputError

Matrix = Union[np.ndarray, sp.csr_matrix]

def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def elimination_count(n_remaining: int, step, n_features_to_select: int, halve_above: int = 0) -> int:
    """Features removed at one RFE iteration: ``ceil(step * n_remaining)`` for a float step in
    (0, 1), ``step`` for an int; at least 1 and at most ``n_remaining - n_features_to_select``.
    While more than ``halve_above`` > 0 features remain, at least half of them (rounded down), but
    not so many that fewer than ``halve_above`` remain (module note 3).

    The product is rounded to 9 decimals before the ceiling, so that e.g. 0.1 * 30
    (3.0000000000000004 in floating point) removes 3 features, not 4.
    """
    step = _check_step("elimination_count", step)
    count = math.ceil(round(step * n_remaining, 9)) if isinstance(step, float) else step
    if halve_above > 0 and n_remaining > halve_above:
        count = max(count, min(n_remaining // 2, n_remaining - halve_above))
    return max(1, min(count, n_remaining - n_features_to_select))


def elimination_rounds(n_features: int, step, n_features_to_select: int = 1, halve_above: int = 0) -> int:
    """Model fits of one elimination from ``n_features`` down to ``n_features_to_select`` (the loop
    of :func:`recursive_elimination`, counted without fitting): ceil((d - k) / step) + 1 for an int
    step, about log(d) / log(1 / (1 - step)) for a share."""
    step = _check_step("elimination_rounds", step)
    remaining = int(n_features)
    if remaining <= n_features_to_select:
        return 1
    if isinstance(step, int) and halve_above <= 0:
        return -(-(remaining - n_features_to_select) // step) + 1
    fits = 1
    while remaining > n_features_to_select:
        remaining -= elimination_count(remaining, step, n_features_to_select, halve_above)
        fits += 1
    return fits


def feature_magnitudes(coef, multiclass: str = "l2"):
    """Per-feature magnitude of a linear model's weights, and the key that orders elimination.

    Parameters
    ----------
    coef : array-like of shape (d,) or (K, d)
        ``LinearSVC.coef_`` (one row for two classes, one per class otherwise).
    multiclass : {"l2", "l1"}
        ``sqrt(sum_k w_kj^2)`` or ``sum_k |w_kj|`` (both ``|w_j|`` for one row).

    Returns
    -------
    magnitude : ndarray of shape (d,)
        a_j; the normalised weights are ``a / sum(a)``.
    elimination_key : ndarray of shape (d,)
        Smallest first is eliminated first: ``sum_k w_kj^2`` for "l2" (scikit-learn RFE's exact
        criterion, no square root between them), ``sum_k |w_kj|`` for "l1".
    """
    if multiclass not in MULTICLASS:
        raise _invalid("multiclass", "feature_magnitudes", "a str among {'l2', 'l1'}", multiclass)
    weights = np.atleast_2d(np.asarray(coef, dtype=float))
    if multiclass == "l1":
        key = np.abs(weights).sum(axis=0)
        return key, key
    key = (weights ** 2).sum(axis=0)
    return np.sqrt(key), key


class RFEResult(NamedTuple):
    """Result of :func:`svm_rfe` (see the module notes 4 and 5)."""

    ranking: np.ndarray      # (d,) int, 1 = kept, larger = eliminated earlier (RFE.ranking_)
    scores: np.ndarray       # (d,) float, larger is better
    support: np.ndarray      # (d,) bool, the n_features_to_select kept features
    weight_path: np.ndarray  # (T, d) normalised weights r_j at each SVM fit, 0 once eliminated
    n_remaining: np.ndarray  # (T,) number of features the SVM of each fit saw
    not_converged: int = 0   # fits whose solver stopped at max_iter (of the T fits)


def _check_data(owner: str, X, y, sample_weight):
    matrix = sp.csr_matrix(X, dtype=float) if sp.issparse(X) else np.asarray(X, dtype=float)
    labels = np.asarray(y)
    if matrix.ndim != 2 or labels.shape != (matrix.shape[0],):
        raise ValueError(f"{owner} needs X of shape (n, d) and y of shape (n,); got {matrix.shape} and {labels.shape}")
    values = matrix.data if sp.issparse(matrix) else matrix
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{owner}: X contains NaN or infinite values")
    if np.unique(labels).size < 2:
        raise ValueError(f"{owner} needs rows of at least two classes")
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, dtype=float)
        if sample_weight.shape != labels.shape:
            raise ValueError(f"{owner}: sample_weight must have shape {labels.shape}; got {sample_weight.shape}")
        if not np.all(np.isfinite(sample_weight)) or np.any(sample_weight < 0):
            raise ValueError(f"{owner}: sample_weight must be finite and non-negative")
    return matrix, labels, sample_weight


def standardisation(X: Matrix, centre: Optional[bool] = None) -> Tuple[np.ndarray, np.ndarray]:
    """``(offset, scale)`` of each feature for ``(x - offset) / scale`` (module note 7).

    ``scale`` is the standard deviation over the rows (``ddof=0``, scikit-learn's ``StandardScaler``),
    1 for a constant feature; ``offset`` the mean when centring, else 0 (always 0 for a constant
    feature: constant features are left as they are). ``centre=None`` centres when the values are
    dense (more than half of the entries non-zero, counted on the values, not on the storage).

    A feature whose squares underflow or overflow (values below about 1e-145 or above 1e150 in size,
    :func:`sparkfs.core.scaling.outside_square_range`) has its mean and deviation computed on its values
    times a power of two (:func:`sparkfs.core.scaling.binary_exponents`), then scaled back: the same
    standardised feature as for its values times any constant, where its own variance would be 0
    (the feature taken for constant) or infinite.
    """
    n_rows, n_features = X.shape
    with np.errstate(over="ignore", invalid="ignore"):   # an extreme feature's moments are taken again below
        mean, variance = _column_mean_variance(X)
    nonzeros = int(np.count_nonzero(X.data if is_sparse(X) else X))
    largest = column_largest(X)
    extreme = np.flatnonzero(outside_square_range(largest))
    if extreme.size:   # their moments in a unit where the squares keep their digits, then back
        exponents = binary_exponents(largest[extreme])
        part = X[:, extreme]
        if is_sparse(part):   # the stored values' exponents (a subnormal's 2^-e itself overflows)
            part = sp.csr_matrix(part, copy=True)
            part.data = np.ldexp(part.data, -exponents[part.indices])
        else:
            part = np.ldexp(part, -exponents)
        part_mean, part_variance = _column_mean_variance(part)
        mean[extreme] = np.ldexp(part_mean, exponents)
    with np.errstate(over="ignore", invalid="ignore"):
        std = np.sqrt(np.maximum(variance, 0.0))
    if extreme.size:   # the deviation is representable where the variance is not
        std[extreme] = np.ldexp(np.sqrt(np.maximum(part_variance, 0.0)), exponents)
    varies = std > 0
    if centre is None:
        centre = 2 * nonzeros > n_rows * n_features
    offset = np.where(varies, mean, 0.0) if centre else np.zeros(n_features)
    return offset, np.where(varies, std, 1.0)


def check_svm_magnitude(largest, *, standardize: bool, from_sums: bool, owner: str) -> None:
    """Refuse the features an SVM-RFE fit cannot take at their scale, naming the first: on the data
    as given (``standardize=False``) values above ``MAX_MAGNITUDE`` (the SVM multiplies values); with
    a standardisation ``from_sums`` of squares (the Spark solvers', the margin weights') also values
    whose squares underflow. :func:`standardisation`, in memory, takes any scale."""
    largest = np.asarray(largest, dtype=np.float64)
    if not standardize:
        if np.any(largest > MAX_MAGNITUDE):
            feature = int(np.argmax(largest))
            raise InvalidInputError(
                f"feature {feature} has values up to {largest[feature]:.3g}: the linear SVM multiplies values, which "
                f"overflows float64 beyond {MAX_MAGNITUDE:.0e}; rescale the data (e.g. to [0, 1]) first, or keep "
                "standardize=True")
        return
    extreme = np.flatnonzero(outside_square_range(largest)) if from_sums else np.zeros(0, dtype=np.int64)
    if extreme.size:
        feature = int(extreme[0])
        huge = largest[feature] > MAX_MAGNITUDE
        raise InvalidInputError(
            f"feature {feature} has values {'up to' if huge else 'of at most'} {largest[feature]:.3g} in size: {owner} "
            f"standardises it from sums of squares, which {'overflow' if huge else 'underflow'} float64 (values "
            f"between {MIN_MAGNITUDE:.1e} and {MAX_MAGNITUDE:.0e} keep their digits); multiply the column by a power "
            "of ten first, or use solver='driver', which standardises the rows in memory at any scale")


def _column_mean_variance(X: Matrix) -> Tuple[np.ndarray, np.ndarray]:
    if is_sparse(X):
        mean = np.asarray(X.mean(axis=0)).ravel()
        return mean, np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean ** 2
    return X.mean(axis=0), X.var(axis=0)


def column_largest(X: Matrix) -> np.ndarray:
    """The largest |value| of each column (0 for an empty matrix)."""
    if X.shape[0] == 0:
        return np.zeros(X.shape[1])
    if is_sparse(X):
        return np.asarray(abs(X).max(axis=0).toarray()).ravel()
    return np.max(np.abs(X), axis=0)


def standardised(X: Matrix, offset: np.ndarray, scale: np.ndarray) -> Matrix:
    """``(X - offset) / scale``; CSR stays CSR when no offset (centring sparse values densifies them).
    A sparse feature whose scale has no finite inverse (a deviation below 2.2e-308) is divided instead."""
    if is_sparse(X):
        if not np.any(offset):
            with np.errstate(divide="ignore", over="ignore"):
                inverse = 1.0 / scale
            if np.all(np.isfinite(inverse)):
                return sp.csr_matrix(X @ sp.diags(inverse))
            result = sp.csr_matrix(X, copy=True)
            tiny = ~np.isfinite(inverse)[result.indices]
            result.data = np.where(tiny, result.data / scale[result.indices],
                                   result.data * np.where(np.isfinite(inverse), inverse, 1.0)[result.indices])
            return result
        X = X.toarray()
    return (X - offset) / scale


def linear_svm(*, C: float = 1.0, loss: str = "hinge", dual="auto", tol: float = 1e-4, max_iter: int = 10_000,
               random_state=0) -> LinearSVC:
    """The LinearSVC that :func:`svm_rfe` fits at every iteration (module note 1)."""
    return LinearSVC(C=C, loss=loss, dual=dual, tol=tol, max_iter=max_iter, random_state=random_state)


def svm_rfe(X: Matrix, y, *, sample_weight=None, step=0.1, n_features_to_select: int = 1, C: float = 1.0,
            loss: str = "hinge", dual="auto", tol: float = 1e-4, max_iter: int = 10_000,
            multiclass: str = "l2", random_state=0, standardize: bool = False, halve_above: int = 0) -> RFEResult:
    """SVM-RFE with the normalised weight path of Han & Yu (Section V-B).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, d)
    y : array-like of shape (n,), at least two classes
    sample_weight : array-like of shape (n,), optional
        Instance weights, passed to ``LinearSVC.fit`` (liblinear multiplies C by them).
    step : float in (0, 1) or int >= 1
        Share of the remaining features (rounded up) or number of features removed per iteration.
    n_features_to_select : int in [1, d]
        Stop when this many remain (1: rank every feature).
    C, loss, dual, tol, max_iter, random_state
        Of the LinearSVC (:func:`linear_svm`).
    multiclass : {"l2", "l1"}
        How one-vs-rest weights combine (:func:`feature_magnitudes`).
    standardize : bool
        Fit on ``(X - offset) / scale`` of :func:`standardisation` (module note 7); False (the
        default here, the paper's setting) fits on X as given. The weights are then those of the
        standardised features.
    halve_above : int >= 0
        While more than this many features remain, eliminate half of them per iteration (never
        leaving fewer than ``halve_above``), then ``step`` (module note 3); 0 = ``step`` throughout.

    Returns
    -------
    RFEResult

    Notes
    -----
    T = (number of iterations) + 1 SVM fits on n rows and a shrinking number of columns; with
    the default step, O(log(d) / log(1 / 0.9)) iterations. Memory: the (T, d) weight path.
    """
    owner = "svm_rfe"
    matrix, labels, sample_weight = _check_data(owner, X, y, sample_weight)
    step = _check_step(owner, step)
    if multiclass not in MULTICLASS:
        raise _invalid("multiclass", owner, "a str among {'l2', 'l1'}", multiclass)
    n_features = matrix.shape[1]
    if not _is_int(n_features_to_select) or not 1 <= n_features_to_select <= n_features:
        raise _invalid("n_features_to_select", owner, f"an int in the range [1, {n_features}]", n_features_to_select)
    if standardize:
        matrix = standardised(matrix, *standardisation(matrix))
    columns = sp.csc_matrix(matrix) if sp.issparse(matrix) else matrix

    def fit_coef(features):
        model = linear_svm(C=C, loss=loss, dual=dual, tol=tol, max_iter=max_iter, random_state=random_state)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            model.fit(columns[:, features], labels, sample_weight=sample_weight)
        converged = True
        for caught_warning in caught:   # counted, not shown: one fit in many would flood the terminal
            if issubclass(caught_warning.category, ConvergenceWarning):
                converged = False
            else:
                warnings.warn_explicit(caught_warning.message, caught_warning.category, caught_warning.filename,
                                       caught_warning.lineno)
        return model.coef_, converged

    return recursive_elimination(fit_coef, n_features, step=step, n_features_to_select=n_features_to_select,
                                 multiclass=multiclass, halve_above=halve_above)


def recursive_elimination(fit_coef, n_features: int, *, step=0.1, n_features_to_select: int = 1,
                          multiclass: str = "l2", halve_above: int = 0) -> RFEResult:
    """The RFE loop around any linear model: ``fit_coef(features) -> coef`` of shape (d',) or
    (K, d') for the remaining ``features`` (sorted indices), or ``(coef, converged)`` to have the
    fits that did not converge counted; eliminate, record, repeat.

    :func:`svm_rfe` passes a scikit-learn LinearSVC on the driver; the Spark layer passes
    pyspark.ml LinearSVC fits on the sliced vectors. The elimination rule, ranking, scores and
    weight path are the module notes 3-5.
    """
    owner = "recursive_elimination"
    step = _check_step(owner, step)
    if multiclass not in MULTICLASS:
        raise _invalid("multiclass", owner, "a str among {'l2', 'l1'}", multiclass)
    if not _is_int(n_features_to_select) or not 1 <= n_features_to_select <= n_features:
        raise _invalid("n_features_to_select", owner, f"an int in the range [1, {n_features}]", n_features_to_select)
    support = np.ones(n_features, dtype=bool)
    ranking = np.ones(n_features, dtype=np.int64)
    within_round = np.zeros(n_features)   # a_j / max a of the last fit feature j was in (module note 4)
    path, remaining_counts, not_converged = [], [], 0
    meter = progress.steps("svm-rfe", elimination_rounds(n_features, step, n_features_to_select, halve_above), "fit")
    while True:
        features = np.flatnonzero(support)
        fitted = fit_coef(features)
        meter.advance()
        coef, converged = fitted if isinstance(fitted, tuple) else (fitted, True)
        not_converged += not converged
        magnitude, key = feature_magnitudes(coef, multiclass)
        if magnitude.shape != (features.size,):
            raise ValueError(f"fit_coef returned weights for {magnitude.shape[0]} features; {features.size} remain")
        weights = np.zeros(n_features)
        total = magnitude.sum()
        if total > 0:
            weights[features] = magnitude / total
            within_round[features] = magnitude / magnitude.max()
        else:
            within_round[features] = 0.0
        path.append(weights)
        remaining_counts.append(features.size)
        if features.size <= n_features_to_select:
            break
        count = elimination_count(features.size, step, n_features_to_select, halve_above)
        support[features[np.argsort(key, kind="stable")[:count]]] = False
        ranking[~support] += 1
    scores = (ranking.max() + 1 - ranking) + 0.5 * within_round
    return RFEResult(ranking, scores, support, np.array(path), np.array(remaining_counts, dtype=np.int64),
                     not_converged)


def stratified_bootstrap(labels, rng) -> np.ndarray:
    """Row indices of one bootstrap sample: within each class, as many rows as the class has,
    drawn uniformly with replacement (module note 6); sorted."""
    labels = np.asarray(labels)
    drawn = [rng.choice(np.flatnonzero(labels == value), size=int(np.sum(labels == value)), replace=True)
             for value in np.unique(labels)]
    return np.sort(np.concatenate(drawn))


class EnsembleRFEResult(NamedTuple):
    """Result of :func:`ensemble_svm_rfe`."""

    ranking: np.ndarray          # (d,) int 1..d, by rank sum (1 = best), ties to the lower index
    scores: np.ndarray           # (d,) float, the members' mean scores (larger is better)
    rank_sums: np.ndarray        # (d,) int, sum of the members' rankings
    member_rankings: np.ndarray  # (N, d) int, RFEResult.ranking of each member
    member_rows: np.ndarray      # (N, n) int, the rows drawn for each member
    fits: int = 0                # SVM fits of all members
    not_converged: int = 0       # of which stopped at max_iter


def ensemble_svm_rfe(X: Matrix, y, *, ensemble: int = 20, seed=0, sample_weight=None,
                     **rfe_params) -> EnsembleRFEResult:
    """En-SVM-RFE: :func:`svm_rfe` on ``ensemble`` bootstrap samples, rankings aggregated by rank sum.

    Parameters
    ----------
    X, y : as :func:`svm_rfe`
    ensemble : int >= 1
        Number of bootstrap samples (Han & Yu use 20).
    seed : int or numpy SeedSequence
        Seeds the draws (``numpy.random.default_rng``): same seed, same samples.
    sample_weight : array-like of shape (n,), optional
        Instance weights; each member gets the weights of its drawn rows.
    **rfe_params
        Passed to :func:`svm_rfe` (step, n_features_to_select, C, ...).

    Returns
    -------
    EnsembleRFEResult

    Notes
    -----
    Saeys et al. (2008) aggregate by the sum of the ranks. With a feature eliminated at every
    iteration (n_features_to_select = 1, the default) each member's ranking is a permutation of
    1..d; features eliminated together share a rank. Costs ``ensemble`` RFE runs.
    """
    owner = "ensemble_svm_rfe"
    if not _is_int(ensemble) or ensemble < 1:
        raise _invalid("ensemble", owner, "an int in the range [1, inf)", ensemble)
    matrix, labels, sample_weight = _check_data(owner, X, y, sample_weight)
    rng = np.random.default_rng(seed)
    member_rows, member_rankings, member_scores = [], [], []
    fits = not_converged = 0
    for _ in range(ensemble):
        rows = stratified_bootstrap(labels, rng)
        weights = None if sample_weight is None else sample_weight[rows]
        result = svm_rfe(matrix[rows], labels[rows], sample_weight=weights, **rfe_params)
        member_rows.append(rows)
        member_rankings.append(result.ranking)
        member_scores.append(result.scores)
        fits += result.n_remaining.size
        not_converged += result.not_converged
    ranking, scores, rank_sums = aggregate_rankings(member_rankings, member_scores)
    return EnsembleRFEResult(ranking, scores, rank_sums, np.array(member_rankings), np.array(member_rows),
                             fits, not_converged)


def aggregate_rankings(member_rankings, member_scores):
    """Linear aggregation of Saeys et al. (2008): ``(ranking, scores, rank_sums)``.

    ``rank_sums`` is the sum of the members' rankings. ``scores`` order the features by it, equal
    sums broken by the members' mean within-round fraction (module notes 4 and 6):
    ``scores = R + 1 - rank_sums / N + mean_fraction / N`` (R the members' number of rounds, the
    fraction in [0, 0.5]): distinct rank sums differ by at least 1, i.e. 1 / N in the first term,
    more than the second can add. ``ranking`` orders the scores 1..d (exact ties to the lower index).
    """
    rankings = np.asarray(member_rankings, dtype=np.int64)
    if rankings.ndim != 2 or rankings.shape[0] < 1:
        raise ValueError(f"member_rankings must have shape (members, features); got {rankings.shape}")
    members = rankings.shape[0]
    rank_sums = rankings.sum(axis=0)
    member_scores = np.asarray(member_scores, dtype=float)
    rounds = rankings.max(axis=1, keepdims=True) + 1 - rankings
    fraction = np.clip(member_scores - rounds, 0.0, 0.5).mean(axis=0)
    scores = rankings.max() + 1 - rank_sums / members + fraction / members
    ranking = np.empty(rank_sums.size, dtype=np.int64)
    ranking[np.argsort(-scores, kind="stable")] = np.arange(1, rank_sums.size + 1)
    return ranking, scores, rank_sums


def instance_weighted_svm_rfe(X: Matrix, y, *, block_size: int = 256, **rfe_params) -> RFEResult:
    """IW-SVM-RFE: margin-based instance weights (eqs. 6-7, summing to n) as ``sample_weight``
    of :func:`svm_rfe`. ``rfe_params`` are :func:`svm_rfe`'s (not sample_weight).

    Notes
    -----
    liblinear bounds instance i's dual variable by ``C w_i``. When no bound is reached (linearly
    separable data and a C large enough, common when n < d) the SVM is the hard-margin one and
    the weights change nothing: on the paper's synthetic sets (n = 100, d = 1,000, C = 1) the
    result equals SVM-RFE's to the last bit. Weights summing to 1 (eq. 7 as printed) instead of n
    would also divide the effective C by n, which changes the SVM much more than the reweighting.
    """
    if "sample_weight" in rfe_params:
        raise ValueError("instance_weighted_svm_rfe computes the instance weights; do not pass sample_weight")
    weights = margin_instance_weights(X, y, block_size=block_size).weights
    return svm_rfe(X, y, sample_weight=weights, **rfe_params)
