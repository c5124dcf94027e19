"""QFS and QFS' (Cheng, Zhou & Cheng 2011, quadratic Fisher-Markov selection) as scikit-learn selectors.

The second half of ``selectors/fisher_markov.FisherMarkovSelector._score_in_one_pass`` on in-memory rows: LFS's
theta (:class:`sparkfs.sklearn.filters.LFSSelector`, the same moments and scaling), the top
``candidates`` by theta, their Gram statistics (:func:`sparkfs.core.qfs.block_gram_statistics`, the
Spark Gram pass's block function on all rows at once), rescaled as the features are, then the
Markov coefficients (eq. 27-31) and the min-cut (:func:`sparkfs.core.qfs.solve_qfs` for a
threshold, :func:`sparkfs.core.count_selection.select_by_count` for a count).
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sparkfs.core.count_selection import select_by_count
from sparkfs.core.qfs import (
    block_gram_statistics,
    check_driver_budget,
    gamma_max_exact,
    pairwise_markov_coefficients,
    rescale_gram_statistics,
    solve_qfs,
    unary_markov_coefficients,
)
from sparkfs.core.selection import percentile_count
from sparkfs.sklearn.base import DEFAULT_NUM_FEATURES, FeatureScores, SparkfsSelector, bad_param, is_int, is_real
from sparkfs.sklearn.filters import LFSSelector

#: Candidates when ``candidates`` is None (``selectors/fisher_markov.DEFAULT_CANDIDATES``), or the
#: features a count asks for when that is more.
DEFAULT_CANDIDATES = 500


class QFSSelector(LFSSelector):
    """QFS (Spark: ``FisherMarkovSelector(degree=2, kernel='qfs')``, ``method`` ``qfs``): the
    optimum of sum_j (theta_j - beta) a_j + 1/2 sum_jl theta_jl a_j a_l over the candidates.

    Parameters
    ----------
    gamma : float or "auto", default -0.5
        "auto": the largest gamma solved exactly (Corollary IV.5); LFS's candidate ranking then
        takes -0.5.
    scaling, preset : as :class:`sparkfs.sklearn.filters.LFSSelector`
    center : bool, default False
        Subtract the column means before the Gram statistics (not in the paper).
    candidates : int or None, default None
        QFS runs on the top ``candidates`` by theta; None: 500, or the features asked for when more.
    driver_memory_mb : float, default 1024.0
        Budget of the (2 C + 3) candidates^2 doubles of the statistics at their peak.
    num_features, threshold, selection_mode, selection_threshold, allow_many_classes, missing
        ``threshold`` is beta; a count is met by a search on beta (the nearest reachable size when
        no beta gives it). No p-values.

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        LFS's theta_j (the Spark model's scores); the selection is the QFS optimum, which need not
        be the top k by theta.
    selected_features_ : ndarray of int
        The QFS selection.
    certified_optimal_ : bool
        Whether the min-cut certified the optimum (every theta_jl >= 0).

    Notes
    -----
    The selection is made in ``fit``: another count or beta after the fit needs a new fit.
    Memory: (2 C + 3) candidates^2 doubles; work O(n candidates^2).
    """

    method = "qfs"
    kernel = "qfs"
    # No weights, as the Spark selector, which does not announce them for QFS: the base's fit.
    takes_sample_weight = False
    fit = SparkfsSelector.fit
    _multiplies_values = True

    def __init__(self, *, gamma=-0.5, scaling=None, preset="default", center=False, candidates=None,
                 driver_memory_mb=1024.0, num_features=None, threshold=None, selection_mode="numTopFeatures",
                 selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        super().__init__(gamma=gamma, scaling=scaling, preset=preset, num_features=num_features, threshold=threshold,
                         selection_mode=selection_mode, selection_threshold=selection_threshold,
                         allow_many_classes=allow_many_classes,
                         kept_features=kept_features, excluded_features=excluded_features,
                         missing=missing)
        self.center = center
        self.candidates = candidates
        self.driver_memory_mb = driver_memory_mb

    def _check_method_params(self) -> None:
        owner = type(self).__name__
        if not (self.gamma == "auto" or (is_real(self.gamma) and math.isfinite(self.gamma))):
            raise bad_param(owner, "gamma", "a finite float or 'auto'", self.gamma)
        self._check_scaling_params()
        if not isinstance(self.center, (bool, np.bool_)):
            raise bad_param(owner, "center", "a bool", self.center)
        if self.candidates is not None and not (is_int(self.candidates) and self.candidates >= 1):
            raise bad_param(owner, "candidates", "an int in the range [1, inf) or None", self.candidates)
        if not (is_real(self.driver_memory_mb) and 0 < self.driver_memory_mb < math.inf):
            raise bad_param(owner, "driver_memory_mb", "a float in the range (0, inf)", self.driver_memory_mb)

    def _requested(self, num_features: int):
        """The count the rule asks for (None for a threshold, beta). The default count, 50, is at
        most the features here (the Spark selector refuses it above its candidate set: a
        ``num_features`` given is refused the same way)."""
        if self.threshold is not None:
            return None
        if self.selection_mode == "percentile":
            fraction = 0.1 if self.selection_threshold is None else self.selection_threshold
            return percentile_count(num_features, fraction)
        return min(DEFAULT_NUM_FEATURES, num_features) if self.num_features is None else self.num_features

    def _candidate_count(self, num_features: int, num_classes: int) -> int:
        """The Spark selector's rule (``_candidate_count``): ``candidates``, else 500 or the count
        asked for; within the budget and at least the count asked for."""
        requested = self._requested(num_features)
        if self.candidates is not None:
            count = self.candidates
        else:
            count = max(DEFAULT_CANDIDATES, requested or 0)
        count = min(count, num_features)
        check_driver_budget(count, num_classes, int(self.driver_memory_mb * 2**20), budget_name="driver_memory_mb")
        if requested is not None and requested > count:
            raise ValueError(f"{type(self).__name__}: {requested} features asked for, more than the QFS candidate set "
                             f"(candidates={count}); raise 'candidates' or ask for fewer features")
        return count

    def _score_features(self, X, y) -> FeatureScores:
        theta, labels, moments, offset, scale = self._markov_fit(X, y, -0.5 if self.gamma == "auto" else None)
        candidates = np.sort(np.argsort(-theta, kind="mergesort")[:self._candidate_count(X.shape[1],
                                                                                          labels.values.size)])
        shift = offset
        if self.center:
            shift = moments.class_sums.sum(axis=0) / moments.class_weights.sum()
        statistics = block_gram_statistics(X[:, candidates], labels.index, labels.values.size,
                                           center=None if shift is None else shift[candidates])
        if scale is not None:
            statistics = rescale_gram_statistics(statistics, scale[candidates])
        bound = gamma_max_exact(statistics.class_grams, statistics.class_counts, statistics.squared_gram)
        gamma = self.gamma
        if gamma == "auto":
            gamma = float(bound.gamma_max) if math.isfinite(bound.gamma_max) else 0.0
        unary = unary_markov_coefficients(statistics.class_sums, statistics.class_counts, statistics.class_grams,
                                          gamma, self.kernel)
        pairwise = pairwise_markov_coefficients(statistics.class_grams, statistics.class_counts,
                                                statistics.squared_gram, gamma)
        requested = self._requested(X.shape[1])
        if requested is None:
            solution = solve_qfs(unary, pairwise, float(self.threshold))
        else:
            solution = select_by_count(unary, pairwise, requested).solution
        selected = candidates[np.asarray(solution.selected, dtype=bool)]
        return FeatureScores(theta, None, {"selected_features": np.sort(selected),
                                           "certified_optimal": bool(solution.certified_optimal),
                                           "fitted_rule": (self.threshold, requested)})

    _own_selection = True

    def _selected(self) -> np.ndarray:
        """The QFS selection of the fit, while the rule asks for what the fit solved."""
        check_is_fitted(self, "scores_")
        self._check_selection_params()
        if (self.threshold, self._requested(self.scores_.shape[0])) != self.fitted_rule_:
            raise ValueError(f"{type(self).__name__} solved the QFS objective for the rule of its fit; the "
                             "selection rule changed since: fit it again")
        return self.selected_features_


class QFSPrimeSelector(QFSSelector):
    """QFS' (Spark: ``FisherMarkovSelector(degree=2, kernel='qfs-prime')``, ``method`` ``qfs-prime``):
    QFS with the kernel k'_2 = <x, y>^2 (eq. 28); see :class:`QFSSelector`."""

    method = "qfs-prime"
    kernel = "qfs-prime"
