"""Parzen-ISE as a scikit-learn selector: the unsupervised ranking by a modified Parzen window and the
ISE criterion over fuzzy c-means groups (the model and every choice: docs/parzen_ise.md).

The Spark selector (``ParzenISERanker`` without a label column, or with ``groups="clusters"``) takes
one of three roads, chosen by its default rule on the input's size; this estimator takes the same
road on in-memory rows, through the same core functions:

* **a row sample** (``sample_size`` below the rows, or unset when rows x rows x features exceed
  :data:`DEFAULT_PAIR_BUDGET` and, on sparse rows with the marginal criterion, the sparse pair sums
  exceed :data:`SPARSE_PAIR_BUDGET`): the rows of smallest seeded content key
  (:func:`sparkfs.core.sampling.content_sample_keys`, the rows the Spark layer's ``Rows.sample``
  draws), densified and fitted by :func:`sparkfs.core.parzen_ise.parzen_ise_in_memory`; unset, the
  sample is announced with a ``DefaultSampleWarning``, as in Spark;
* **every row of a sparse matrix** with the marginal criterion and no landmarks (:func:`sparse_marginal_fit`):
  the composition of the Spark layer's sparse passes (``spark/parzen_ise_sparse.py``) without
  densifying: fuzzy c-means and the group moments from sparse products, the pair sums split into
  stored/stored, stored/zero and zero/zero parts (:mod:`sparkfs.core.parzen_ise_sparse`), the features
  of many stored values estimated against seeded landmark rows when the exact pairs exceed the budget;
* **every row otherwise**: :func:`sparkfs.core.parzen_ise.parzen_ise_in_memory`, the model the Spark
  layer's dense passes equal (a sparse matrix is densified, as those passes densify each block: the
  Gaussian kernel involves every centred feature).

The FCM start (the first distinct rows of smallest key by ``seed``) and the landmarks (by ``seed + 1``)
are the Spark selector's draws. Labels are not used: ``y`` is ignored, so the groups are always the
clusters (the Spark selector's ``groups="labels"``, and ``"auto"`` with a label column, are not here).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import scipy.sparse as sp

from sparkfs.core import fuzzy_cmeans as fcm
from sparkfs.core import parzen_ise as pi
from sparkfs.core import parzen_ise_marginal as pim
from sparkfs.core import parzen_ise_sparse as pis
from sparkfs.core.options import check_int
from sparkfs.core.param_caps import MAX_BLOCK_SIZE, MAX_CLUSTERS, MAX_PASS_ITERATIONS
from sparkfs.core.parzen_ise_options import (
    CRITERIA,
    DEFAULT_CRITERION,
    DEFAULT_PAIR_BUDGET,
    DEFAULT_RANK_BY,
    MEMBERSHIPS,
    MIN_DEFAULT_SAMPLE,
    SPARSE_FEATURE_ROWS,
    SPARSE_LANDMARKS,
    SPARSE_PAIR_BUDGET,
    START_ROWS_PER_CLUSTER,
    check_options,
    criterion_power,
    final_scores,
    runs_with_held_out_feature,
)
from sparkfs.core.sampling import column_statistics, content_sample_keys, smallest_key_positions
from sparkfs.core.scaling import check_magnitude
from sparkfs.errors import DefaultSampleWarning, InvalidInputError, ParamBoundError
from sparkfs.sklearn.base import FeatureScores, SparkfsSelector, bad_param, is_int, is_real


def drawn_rows(X, size: int, seed: int) -> np.ndarray:
    """Positions (ascending) of the ``size`` rows of smallest seeded content key: the rows the Spark
    layer's ``Rows.sample(size, seed)`` draws from unlabelled rows (class 0.0 each, no weights)."""
    keys = content_sample_keys(X, np.zeros(X.shape[0]), None, seed)
    return np.sort(smallest_key_positions(keys, np.arange(X.shape[0]), size))


def stored_counts(X) -> np.ndarray:
    """The non-zero values of each feature of a sparse ``X``, m_k (explicit zeros are not values: the
    Spark layer counts them with Spark ML's ``numNonZeros``)."""
    csc = sp.csc_matrix(X, copy=True)
    csc.eliminate_zeros()
    return np.diff(csc.indptr).astype(np.int64)


def _dense(X) -> np.ndarray:
    return X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)


def _population_moments(X):
    """(column means, population variances, population stds): the Spark layer's, from the column
    statistics (mean, sample std) rescaled to the divisor N."""
    statistics = column_statistics(X)
    num_rows = X.shape[0]
    population_std = np.asarray(statistics.std, dtype=np.float64) * np.sqrt((num_rows - 1) / num_rows)
    return np.asarray(statistics.mean, dtype=np.float64), population_std ** 2, population_std


def sparse_fuzzy_cmeans(X, mean, feature_scale, *, num_clusters: int, m: float, tol: float, max_iter: int,
                        seed: int):
    """Fuzzy c-means of the centred rows ``X - mean`` from sparse products (O(nnz C) an iteration): the
    start among the ``START_ROWS_PER_CLUSTER x C`` rows of smallest key (every row when those hold too
    few distinct ones), then Bezdek's alternation until no centre moves more than ``tol`` feature
    scales. Returns the centres (centred coordinates) and ``{"iterations", "converged"}``."""
    keys = content_sample_keys(X, np.zeros(X.shape[0]), None, seed)
    start = drawn_rows(X, min(X.shape[0], START_ROWS_PER_CLUSTER * num_clusters), seed)
    try:
        centres = fcm.initial_centres(_dense(X[start]) - mean, keys[start], num_clusters)
    except ValueError:
        centres = fcm.initial_centres(_dense(X) - mean, keys, num_clusters)
    converged, iteration = False, 0
    for iteration in range(1, max_iter + 1):  # noqa: B007 - the count of iterations is read after the loop
        terms = pis.sparse_fcm_block_terms(X, mean, centres, m)
        new_centres = fcm.fcm_centres(terms.weighted_sums, terms.membership_sums)
        shift = fcm.centre_shift(centres, new_centres, feature_scale)
        centres = new_centres
        if shift <= tol:
            converged = True
            break
    return centres, {"iterations": iteration, "converged": converged}


def sparse_group_variances(X, memberships, mean, feature_variance, variance_floor: float) -> np.ndarray:
    """Eq. 9's group variances from two rounds of sparse group moments (sums, then sums about the
    group means), as the Spark layer's two passes."""
    moments = pis.sparse_group_moment_terms(X, memberships, mean)
    with np.errstate(divide="ignore", invalid="ignore"):
        shifts = np.nan_to_num(moments.sums / moments.weight_sums[:, None])
    moments = pis.sparse_group_moment_terms(X, memberships, mean, shifts)
    return pi.group_variances(moments, feature_variance, floor=variance_floor)


def sparse_pair_terms(X, memberships, mean, feature_variance, scaled_variances, *, h: float, seed: int):
    """``(pair_terms(w, with_self), plan)``: the marginal pair sums over every ordered pair of rows of a
    sparse ``X`` (:func:`sparkfs.core.parzen_ise_marginal.marginal_block_terms` of the standardised
    dense rows, to rounding), as the Spark layer's sparse pass and driver parts add them. Features are
    exact while the stored pairs fit :data:`SPARSE_PAIR_BUDGET`; above it those with more than
    :data:`SPARSE_FEATURE_ROWS` stored values are estimated against :data:`SPARSE_LANDMARKS` rows drawn by
    ``seed + 1``, scaled by rows / landmarks (:func:`sparkfs.core.parzen_ise_sparse.sparse_pair_plan`)."""
    num_rows = X.shape[0]
    columns = pis.scaled_columns(X, mean, feature_variance)
    plan = pis.sparse_pair_plan(np.diff(columns.indptr), num_rows, pair_budget=SPARSE_PAIR_BUDGET,
                                feature_rows=SPARSE_FEATURE_ROWS, landmarks=SPARSE_LANDMARKS)
    zero_sums = pis.zero_membership_sums(columns, memberships)
    zero_values = pis.scaled_zero_values(mean, feature_variance)
    exact, estimated = plan.exact, ~plan.exact
    landmarks = None
    if plan.num_landmarks:
        positions = drawn_rows(X, plan.num_landmarks, seed + 1)
        landmark_columns = pis.scaled_columns(X[positions], mean, feature_variance, features=estimated)
        landmark_memberships = np.asarray(memberships, dtype=float)[positions]
        landmarks = (landmark_columns, landmark_memberships,
                     pis.zero_membership_sums(landmark_columns, landmark_memberships))

    def pair_terms(w, with_self):
        common = dict(h=h, with_self=with_self)
        sums = pis.stored_pair_sums(columns, memberships, columns, memberships, scaled_variances, w, features=exact,
                                    **common)
        for side in ("rows", "queries"):
            sums += pis.stored_zero_sums(columns, memberships, zero_sums, zero_values, scaled_variances, w,
                                         stored_side=side, features=exact, **common)
        sums += pis.zero_zero_sums(zero_sums, zero_sums, zero_values, scaled_variances, w, features=exact, **common)
        if landmarks is not None:
            landmark_columns, landmark_memberships, landmark_zero_sums = landmarks
            part = (pis.stored_pair_sums(columns, memberships, landmark_columns, landmark_memberships,
                                         scaled_variances, w, features=estimated, **common)
                    + pis.stored_zero_sums(columns, memberships, landmark_zero_sums, zero_values, scaled_variances,
                                           w, features=estimated, **common))
            part += pis.stored_zero_sums(landmark_columns, landmark_memberships, zero_sums, zero_values,
                                         scaled_variances, w, stored_side="queries", features=estimated, **common)
            part += pis.zero_zero_sums(zero_sums, landmark_zero_sums, zero_values, scaled_variances, w,
                                       features=estimated, **common)
            sums += part * (num_rows / plan.num_landmarks)
        return pis.terms_of_sums(sums, with_self)
    return pair_terms, plan


def sparse_marginal_fit(X, options: dict) -> dict:
    """The marginal criterion over every row of a sparse ``X`` (CSR), nothing densified but the FCM
    start: the column moments, h, fuzzy c-means, the memberships, the group variances, the pair sums
    (:func:`sparse_pair_terms`) and the descents of the held-out rule. ``options`` are
    :func:`sparkfs.core.parzen_ise.parzen_ise_in_memory`'s keywords; returns ``{"scores", "runs",
    "h", "fixed_feature"}`` as its info."""
    num_rows, num_features = X.shape
    checked = check_options(num_features, **{name: options[name] for name in (
        "memberships", "fixed_feature", "landmarks", "max_iter", "block_size", "learning_rate", "tol",
        "variance_floor", "h", "criterion", "rank_by")})
    mean, feature_variance, population_std = _population_moments(X)
    h = checked["h"] if checked["h"] is not None else pim.marginal_window_width(num_rows)
    centres, _ = sparse_fuzzy_cmeans(X, mean, np.where(population_std > 0, population_std, 1.0),
                                     num_clusters=options["num_clusters"], m=options["m"], tol=options["fcm_tol"],
                                     max_iter=options["fcm_max_iter"], seed=options["seed"])
    memberships = pis.sparse_fcm_memberships(X, mean, centres, options["m"])
    if options["memberships"] == "hard":
        memberships = pi.hard_memberships(memberships)
    variances = sparse_group_variances(X, memberships, mean, feature_variance, checked["variance_floor"])
    _, scaled_variances = pim.standardised(np.zeros((0, num_features)), feature_variance, variances)
    pair_terms, _ = sparse_pair_terms(X, memberships, mean, feature_variance, scaled_variances, h=h,
                                      seed=options["seed"])

    def run(fixed, previous):
        return pim.marginal_run(pair_terms, num_rows=num_rows, num_features=num_features, fixed=fixed,
                                num_queries=num_rows, max_iter=checked["descent"]["max_iter"],
                                tol=checked["descent"]["tol"], previous=previous, rank_by=checked["rank_by"])

    runs = runs_with_held_out_feature(run, num_features, options["fixed_feature"])
    return {"scores": final_scores(runs), "runs": runs, "h": h, "fixed_feature": runs[-1]["fixed_feature"]}


class ParzenISESelector(SparkfsSelector):
    """Unsupervised feature ranking by a modified Parzen window and the ISE criterion over fuzzy
    c-means groups (Spark: ``ParzenISERanker`` fitted without labels, ``method`` ``parzen-ise``).

    Parameters
    ----------
    criterion : {"marginal", "image"}, default "marginal"
        The reading of the paper's ISE (docs/parzen_ise.md, section 0).
    rank_by : {"weights", "multipliers", "reference"}, default "reference"
        How the marginal optimum ranks the features; criterion="image" ranks by weight.
    num_clusters : int, default 3
        Clusters C of fuzzy c-means (at most the rows).
    fuzzifier : float > 1, default 2.0
        m of fuzzy c-means.
    memberships : {"hard", "soft"}, default "hard"
    window_width : float > 0 or None, default None
        h of the Parzen window; None: Silverman's rule (1-D for "marginal", d-dimensional for "image").
    learning_rate : float > 0, default 0.1
        The first trial step of the "image" descent.
    max_iter : int, default 100
        Descent steps at most (each run).
    tol : float >= 0, default 1e-6
    held_out_feature : "auto", "none" or int, default "auto"
        The feature held at weight 0 ("auto": the paper's second strategy, two runs).
    landmarks : int >= 2 or None, default None
        Rows drawn (by ``seed + 1``) as the queries of the inner sums; None: every row.
    sample_size : int >= 2 or None, default None
        Rows the fit runs on, drawn by ``seed``; None: the Spark selector's default rule (module doc).
    seed : int, default 0
        Seed of the FCM start, the landmarks and the sample.
    variance_floor : float > 0, default 1e-6
    fcm_tol : float >= 0, default 1e-6
    fcm_max_iter : int, default 300
    block_size : int, default 1024
        Queries per batch and rows per kernel block of the dense pair sums.
    num_features, threshold, selection_mode, selection_threshold
        The selection rule (:class:`sparkfs.sklearn.base.SparkfsSelector`); no p-values.

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        The ranking scores of ``rank_by`` (the Spark model's ``scores``).
    weights_ : ndarray (n_features,)
        The final run's weights on the simplex (the held-out feature at 0).
    held_out_feature_ : int or None
        The feature held at 0 in the final run.
    window_width_ : float
        The h of the fit.
    n_iter_ : int
        Descent steps of the final run (0 when one weight is free: it is 1).
    sample_rows_ : int
        The rows the fit ran on.

    Notes
    -----
    Per ISE evaluation O(N M d) Gaussian kernels (M = N, or the landmarks; C^2 times that with soft
    memberships), in blocks of ``block_size``; on sparse rows with the marginal criterion
    O(sum_k m_k^2) pairs for m_k stored values of feature k, nothing densified. FCM costs O(N C d) an
    iteration. ``y`` is ignored.
    """

    method = "parzen-ise"
    requires_labels = False
    #: No labels, so no many-classes rule (the base's check reads it).
    allow_many_classes = False

    def __init__(self, *, criterion=DEFAULT_CRITERION, rank_by=DEFAULT_RANK_BY, num_clusters=3, fuzzifier=2.0,
                 memberships="hard", window_width=None, learning_rate=0.1, max_iter=100, tol=1e-6,
                 held_out_feature="auto", landmarks=None, sample_size=None, seed=0, variance_floor=1e-6,
                 fcm_tol=1e-6, fcm_max_iter=300, block_size=1024, num_features=None, threshold=None,
                 selection_mode="numTopFeatures", selection_threshold=None, kept_features=None,
                 excluded_features=None, missing="refuse"):
        self.criterion, self.rank_by = criterion, rank_by
        self.num_clusters, self.fuzzifier, self.memberships = num_clusters, fuzzifier, memberships
        self.window_width, self.learning_rate, self.max_iter, self.tol = window_width, learning_rate, max_iter, tol
        self.held_out_feature, self.landmarks = held_out_feature, landmarks
        self.sample_size, self.seed = sample_size, seed
        self.variance_floor, self.fcm_tol, self.fcm_max_iter = variance_floor, fcm_tol, fcm_max_iter
        self.block_size = block_size
        self.num_features, self.threshold = num_features, threshold
        self.selection_mode, self.selection_threshold = selection_mode, selection_threshold
        self.kept_features, self.excluded_features = kept_features, excluded_features
        self.missing = missing

    def _check_method_params(self) -> None:
        owner = type(self).__name__
        choices = (("criterion", CRITERIA), ("rank_by", pim.RANKINGS), ("memberships", MEMBERSHIPS))
        for name, allowed in choices:
            if getattr(self, name) not in allowed:
                raise bad_param(owner, name, "a str among {" + ", ".join(map(repr, allowed)) + "}", getattr(self, name))
        for name, cap in (("num_clusters", MAX_CLUSTERS), ("max_iter", MAX_PASS_ITERATIONS),
                          ("fcm_max_iter", MAX_PASS_ITERATIONS), ("block_size", MAX_BLOCK_SIZE)):
            check_int(name, owner, getattr(self, name), 1, maximum=cap)
        for name in ("landmarks", "sample_size"):
            if getattr(self, name) is not None and not (is_int(getattr(self, name)) and getattr(self, name) >= 2):
                raise bad_param(owner, name, "an int in the range [2, inf) or None", getattr(self, name))
        if not is_int(self.seed):
            raise bad_param(owner, "seed", "an int", self.seed)
        held_out = self.held_out_feature
        if not (held_out in ("auto", "none") or (is_int(held_out) and held_out >= 0)):
            raise bad_param(owner, "held_out_feature", "'auto', 'none' or a feature index (an int in [0, inf))",
                            held_out)
        self._check_real_params(owner)

    def _check_real_params(self, owner: str) -> None:
        def finite(value):
            return is_real(value) and math.isfinite(value)

        if not (finite(self.fuzzifier) and self.fuzzifier > 1.0):
            raise bad_param(owner, "fuzzifier", "a float in the range (1, inf)", self.fuzzifier)
        for name in ("learning_rate", "variance_floor"):
            if not (finite(getattr(self, name)) and getattr(self, name) > 0.0):
                raise bad_param(owner, name, "a float in the range (0, inf)", getattr(self, name))
        for name in ("tol", "fcm_tol"):
            if not (finite(getattr(self, name)) and getattr(self, name) >= 0.0):
                raise bad_param(owner, name, "a float in the range [0, inf)", getattr(self, name))
        if self.window_width is not None and not (finite(self.window_width) and self.window_width > 0.0):
            raise bad_param(owner, "window_width", "a float in the range (0, inf) or None", self.window_width)

    def _core_options(self, num_rows: int, num_features: int) -> dict:
        """The keywords of :func:`sparkfs.core.parzen_ise.parzen_ise_in_memory`, after the checks of the
        Params against the input (the Spark selector's: clusters within the rows, the held-out index
        within the features)."""
        owner = type(self).__name__
        if self.num_clusters > num_rows:
            raise ParamBoundError(f"The 'num_clusters' parameter of {owner} must be at most the rows: fuzzy c-means "
                                  f"makes at most one cluster per row and X has {num_rows:,}. Got "
                                  f"{self.num_clusters!r} instead.")
        held_out = self.held_out_feature
        if is_int(held_out) and held_out >= num_features:
            raise ValueError(f"The 'held_out_feature' parameter of {owner} must be 'auto', 'none' or a feature index "
                             f"in [0, {num_features - 1}]. Got {held_out!r} instead.")
        fixed = None if held_out == "none" else (held_out if held_out == "auto" else int(held_out))
        return dict(num_clusters=int(self.num_clusters), m=float(self.fuzzifier), memberships=self.memberships,
                    h=None if self.window_width is None else float(self.window_width),
                    learning_rate=float(self.learning_rate), max_iter=int(self.max_iter), tol=float(self.tol),
                    fixed_feature=fixed, landmarks=None if self.landmarks is None else int(self.landmarks),
                    seed=int(self.seed), variance_floor=float(self.variance_floor), fcm_tol=float(self.fcm_tol),
                    fcm_max_iter=int(self.fcm_max_iter), block_size=int(self.block_size), criterion=self.criterion,
                    rank_by=self.rank_by)

    def _row_sample(self, X):
        """(rows to fit on or None for every row, the rule): the Spark selector's ``_row_sample``."""
        num_rows, num_features = X.shape
        if self.sample_size is not None:
            return (None if self.sample_size >= num_rows else drawn_rows(X, self.sample_size, self.seed)), "sample_size"
        if self.landmarks is not None or num_rows * num_rows * num_features <= DEFAULT_PAIR_BUDGET:
            return None, "every row"
        if self.criterion == "marginal" and sp.issparse(X):
            plan = pis.sparse_pair_plan(stored_counts(X), num_rows, pair_budget=SPARSE_PAIR_BUDGET,
                                        feature_rows=SPARSE_FEATURE_ROWS, landmarks=SPARSE_LANDMARKS)
            if plan.pairs <= SPARSE_PAIR_BUDGET:
                return None, "every row"
        size = max(MIN_DEFAULT_SAMPLE, math.isqrt(DEFAULT_PAIR_BUDGET // max(num_features, 1)))
        return (None, "every row") if size >= num_rows else (drawn_rows(X, size, self.seed), "default")

    def _score_features(self, X, y) -> FeatureScores:
        num_rows, num_features = X.shape
        if num_rows < 2:
            raise InvalidInputError(f"{type(self).__name__} (Parzen-ISE) needs at least 2 rows; X has "
                                    f"n_samples = {num_rows}")
        options = self._core_options(num_rows, num_features)
        statistics = column_statistics(X)   # values whose squares (the image reading: fourth powers) over- or underflow
        check_magnitude(statistics.minimum, statistics.maximum, owner=f"{type(self).__name__} (Parzen-ISE)", tiny=True,
                        power=criterion_power(self.criterion))
        sample, rule = self._row_sample(X)
        if sample is not None:
            if rule == "default":
                self._warn_default_sample(num_rows, num_features, sample.size)
            _, info = pi.parzen_ise_in_memory(_dense(X[sample]), None, **options)
        elif sp.issparse(X) and self.criterion == "marginal" and (self.landmarks is None or self.landmarks >= num_rows):
            info = sparse_marginal_fit(X, options)
        else:
            _, info = pi.parzen_ise_in_memory(_dense(X), None, **options)
        last = info["runs"][-1]
        return FeatureScores(np.asarray(info["scores"], dtype=np.float64), None, {
            "weights": np.asarray(last["weights"], dtype=np.float64), "held_out_feature": info["fixed_feature"],
            "window_width": float(info["h"]), "n_iter": int(last["iterations"]),
            "sample_rows": int(num_rows if sample is None else sample.size)})

    def _warn_default_sample(self, num_rows: int, num_features: int, size: int) -> None:
        warnings.warn(DefaultSampleWarning(
            f"{type(self).__name__}: sample_size is unset and every pair of the {num_rows:,} rows meets in each of "
            f"the {num_features:,} features (rows x rows x features above {DEFAULT_PAIR_BUDGET:.0e}), so the fit "
            f"runs on {size:,} rows drawn by seed {self.seed}; set sample_size to choose (a value >= the rows uses "
            "every row) or landmarks to use every row"), stacklevel=4)
