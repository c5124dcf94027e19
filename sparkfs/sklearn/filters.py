"""The filters of the class moments as scikit-learn selectors: anova, chi2, variance (and every
filter registered in :data:`sparkfs.core.moment_filters.MOMENT_FILTERS`) and LFS.

Each runs what its Spark selector runs after the moments pass: the same core functions
(:mod:`sparkfs.core.moment_filters`, :mod:`sparkfs.core.fisher_markov`, :mod:`sparkfs.core.scaling`)
on the same moments (:mod:`sparkfs.sklearn.moments`, exact sums as the Spark pass's deterministic
engine), and the same numeric policy: a constant feature's undefined statistic scores 0 (or last
for a smaller-is-better statistic) with p-value 1, an undefined p-value is 1, F = +inf (a feature
constant within each class that still separates them) stays +inf.
"""

from __future__ import annotations

import warnings

import numpy as np

from sparkfs.core.fisher_markov import affine_class_moments, markov_coefficients
from sparkfs.core.moment_filters import MOMENT_FILTERS, MomentFilter, ranking_scores
from sparkfs.core.scaling import MIN_MAGNITUDE, SCALINGS, check_magnitude, feature_scaling, sample_std
from sparkfs.core.univariate import underflowing_squares
from sparkfs.errors import InvalidInputError, PrecisionWarning
from sparkfs.sklearn.base import FeatureScores, SparkfsSelector, WeightedFit, bad_param, is_real
from sparkfs.sklearn.moments import (
    ClassMoments,
    class_moments,
    pairwise_class_moments,
    pairwise_facts,
    rescaled_moments,
)


def is_class_filter(name: str) -> bool:
    """Whether the registered filter ``name`` is a function of the class moments (not of a
    continuous target's moments, ``label_type="continuous"``), the filters this class serves."""
    return getattr(MOMENT_FILTERS[name], "label_type", "categorical") == "categorical"


class MomentFilterSelector(WeightedFit, SparkfsSelector):
    """A univariate filter of the class moments (Spark: ``UnivariateTestSelector(test=...)``).

    Parameters
    ----------
    test : str, default "anova"
        A filter of :data:`sparkfs.core.moment_filters.MOMENT_FILTERS` ("anova", "chi2", "variance",
        or one registered with :func:`sparkfs.methods.add_filter_method`).
    num_features, threshold, selection_mode, selection_threshold, allow_many_classes, missing
        The selection rule (:class:`sparkfs.sklearn.base.SparkfsSelector`).

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        The statistic, negated for a filter whose statistic is better when smaller; a constant
        feature scores 0 (last for a smaller-is-better statistic).
    statistics_ : ndarray (n_features,)
        The statistic itself (NaN where undefined: a constant feature).
    pvalues_ : ndarray (n_features,)
        For a filter with p-values (1 where undefined).

    Notes
    -----
    One pass over X: O(nnz) work, C x p sums in memory (C classes); sparse X stays sparse.
    ``fit(X, y, sample_weight)`` takes frequency weights, as the Spark selector's ``weightCol``:
    ``n_c`` is the class's weight sum and every sum is weighted (an integer weight w is w copies of
    the row), so the degrees of freedom count the total weight W: F(C - 1, W - C), variance / (W - 1).
    """

    test = None  # a named subclass fixes it; the generic class takes it as a Param

    def __init__(self, test="anova", *, num_features=None, threshold=None, selection_mode="numTopFeatures",
                 selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        super().__init__(num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                         selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                         kept_features=kept_features, excluded_features=excluded_features,
                         missing=missing)
        self.test = test

    @property
    def _filter(self) -> MomentFilter:
        if self.test not in MOMENT_FILTERS:
            raise bad_param(type(self).__name__, "test", "a filter of sparkfs.core.moment_filters.MOMENT_FILTERS "
                             f"(one of {sorted(n for n in MOMENT_FILTERS if is_class_filter(n))})", self.test)
        if not is_class_filter(self.test):
            raise NotImplementedError(f"test '{self.test}' is a filter of a continuous target, which has no "
                                      "scikit-learn front yet (docs/sklearn.md)")
        return MOMENT_FILTERS[self.test]

    @property
    def method(self) -> str:
        return self.test

    @property
    def takes_pairwise_missing(self) -> bool:
        """anova, chi2 and variance (``MomentFilter.pairwise``) take ``missing='pairwise'``."""
        return self.test in MOMENT_FILTERS and MOMENT_FILTERS[self.test].pairwise

    @property
    def has_p_values(self) -> bool:
        return self.test in MOMENT_FILTERS and MOMENT_FILTERS[self.test].has_p_values

    @property
    def requires_labels(self) -> bool:
        return self.test not in MOMENT_FILTERS or MOMENT_FILTERS[self.test].needs_labels

    def _check_method_params(self) -> None:
        self._filter  # noqa: B018  (refuses an unknown test)

    def _score_features(self, X, y, sample_weight=None) -> FeatureScores:
        moment_filter = self._filter
        if moment_filter.needs_labels:
            labels = self._class_labels(y)
            index, num_classes = labels.index, labels.values.size
        else:  # a statistic of all rows together: their moments as one class
            index, num_classes = np.zeros(X.shape[0], dtype=np.int64), 1
        owner = type(self).__name__
        if self.missing == "pairwise":  # each feature's moments over its present values (its own counts)
            moments, X = pairwise_class_moments(X, index, num_classes, owner=owner, sample_weight=sample_weight)
            self.missing_ = {**self.missing_, **pairwise_facts(moments.missing_values)}
        else:
            moments = class_moments(X, index, num_classes, owner=owner, sample_weight=sample_weight)
        if moment_filter.scale_free:   # features whose squares underflowed, as the Spark selector rescales them
            underflowing = underflowing_squares(moments.class_weights, moments.class_sums, moments.class_sum_squares)
            moments = rescaled_moments(X, index, num_classes, moments, underflowing, owner=owner,
                                       sample_weight=sample_weight)
        if moment_filter.non_negative:
            self._refuse_negative_values(moments)
        counts = moments.class_weights if moments.class_present is None else moments.class_present
        statistics, p_values = moment_filter.score(counts, moments.class_sums, moments.class_sum_squares)
        statistics = np.asarray(statistics, dtype=np.float64)
        undefined = moments.feature_min == moments.feature_max
        if moments.class_present is not None:  # too few present rows (or classes) for a feature: undefined
            undefined = undefined | np.isnan(statistics)
        if not np.all(np.isfinite(statistics[~undefined])):
            check_magnitude(moments.feature_min, moments.feature_max, owner=type(self).__name__)
            statistics = np.where(np.isnan(statistics), 0.0, statistics)  # F = +inf stays
        statistics = np.where(undefined, np.nan, statistics)
        if p_values is not None:
            p_values = np.where(undefined, 1.0, np.asarray(p_values, dtype=np.float64))
            p_values = np.where(np.isnan(p_values), 1.0, p_values)
        return FeatureScores(ranking_scores(moment_filter, statistics), p_values, {"statistics": statistics})

    def _refuse_negative_values(self, moments: ClassMoments) -> None:
        negative = np.flatnonzero(moments.feature_min < 0)
        if negative.size:
            first = int(negative[0])
            raise InvalidInputError(
                f"Negative values in data passed to {type(self).__name__}: test='{self.test}' needs non-negative "
                f"features (counts, frequencies, tf-idf); {negative.size} feature(s) have negative values, e.g. "
                f"feature {first} down to "
                f"{moments.feature_min[first]:.6g}; use test='anova' (ANOVASelector) for signed data")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = self.test in MOMENT_FILTERS and MOMENT_FILTERS[self.test].non_negative
        return tags


def _named_filter(name: str, class_name: str, summary: str) -> type:
    """A :class:`MomentFilterSelector` with ``test`` fixed to ``name`` (its ``__init__`` without it,
    so that ``get_params`` and ``clone`` see only the selection Params)."""

    def __init__(self, *, num_features=None, threshold=None, selection_mode="numTopFeatures",
                 selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        SparkfsSelector.__init__(self, num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                                 selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                                 kept_features=kept_features, excluded_features=excluded_features,
                                 missing=missing)

    doc = (f"{summary}\n\n    ``method`` ``{name}`` of sparkfs (Spark: ``UnivariateTestSelector(test='{name}')``); see "
           ":class:`MomentFilterSelector` for the Params, attributes and notes.\n    ")
    return type(class_name, (MomentFilterSelector,), {"__init__": __init__, "test": name, "__doc__": doc,
                                                      "__module__": __name__})


ANOVASelector = _named_filter("anova", "ANOVASelector",
                              "The one-way ANOVA F value and its p-value (scikit-learn's ``f_classif``).")
Chi2Selector = _named_filter("chi2", "Chi2Selector",
                             "scikit-learn's ``chi2`` of class sums and its p-value (non-negative features).")
VarianceSelector = _named_filter("variance", "VarianceSelector",
                                 "The sample variance (ddof = 1, Spark ML's ``VarianceThresholdSelector``); no "
                                 "labels, no p-values. ``threshold=T`` keeps every variance above T.")


#: The scaling each LFS preset gives when ``scaling`` is None (``selectors/fisher_markov.PRESET_SCALING``).
LFS_PRESET_SCALING = {"default": "standard", "paper": "none"}


class LFSSelector(WeightedFit, SparkfsSelector):
    """LFS, the linear Fisher-Markov selector (Cheng, Zhou & Cheng 2011, eq. 19-20): the Markov
    coefficient theta_j of every feature from the class moments (Spark:
    ``FisherMarkovSelector(degree=1)``, ``method`` ``lfs``).

    Parameters
    ----------
    gamma : float, default -0.5
        The trade-off of eq. (19) (the paper's -0.5).
    scaling : {"none", "range", "standard"} or None, default None
        Applied analytically to the moments (:func:`sparkfs.core.fisher_markov.affine_class_moments`);
        None takes the preset's.
    preset : {"default", "paper"}, default "default"
        The scaling when ``scaling`` is None: "standard", or the data as given ("none").
    num_features, threshold, selection_mode, selection_threshold, allow_many_classes, missing
        The selection rule; ``threshold`` is beta of eq. (20).

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        theta_j. No p-values.

    Notes
    -----
    One pass over X (exact class sums): O(nnz) work, C x p sums in memory; sparse X stays sparse.
    ``fit(X, y, sample_weight)`` weights n, n_i and every sum, as the Spark selector's ``weightCol``
    (``scaling="standard"`` divides by the weighted sample std, Spark's Summarizer's).
    """

    method = "lfs"
    #: Whether the fit multiplies the raw values beyond the moments (QFS's Gram statistics).
    _multiplies_values = False

    def __init__(self, *, gamma=-0.5, scaling=None, preset="default", num_features=None, threshold=None,
                 selection_mode="numTopFeatures", selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        super().__init__(num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                         selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                         kept_features=kept_features, excluded_features=excluded_features,
                         missing=missing)
        self.gamma = gamma
        self.scaling = scaling
        self.preset = preset

    def _check_method_params(self) -> None:
        if not (is_real(self.gamma) and np.isfinite(self.gamma)):
            raise bad_param(type(self).__name__, "gamma", "a finite float", self.gamma)
        self._check_scaling_params()

    def _check_scaling_params(self) -> None:
        owner = type(self).__name__
        if self.scaling is not None and self.scaling not in SCALINGS:
            raise bad_param(owner, "scaling", "a str among {" + ", ".join(map(repr, SCALINGS)) + "} or None",
                             self.scaling)
        if self.preset not in LFS_PRESET_SCALING:
            raise bad_param(owner, "preset", "a str among {'default', 'paper'}", self.preset)

    def _scaling_in_use(self) -> str:
        return self.scaling if self.scaling is not None else LFS_PRESET_SCALING[self.preset]

    def _score_features(self, X, y, sample_weight=None) -> FeatureScores:
        return FeatureScores(self._markov_fit(X, y, sample_weight=sample_weight)[0])

    def _markov_fit(self, X, y, lfs_gamma=None, sample_weight=None):
        """``(theta, labels, moments, offset, scale)``: eq. (19) on the moments of the scaled
        features (offset and scale None for ``scaling="none"``); ``lfs_gamma`` replaces ``gamma``."""
        labels = self._class_labels(y)
        moments = class_moments(X, labels.index, labels.values.size, owner=type(self).__name__,
                                sample_weight=sample_weight)
        moments = self._moments_in_square_range(X, labels, moments, sample_weight)
        class_sums, class_sum_squares = moments.class_sums, moments.class_sum_squares
        offset = scale = None
        if self._scaling_in_use() != "none":
            weight_square_sum = None if sample_weight is None else float(np.sum(sample_weight * sample_weight))
            offset, scale = _lfs_scaling(moments, self._scaling_in_use(), weight_square_sum)
            class_sums, class_sum_squares = affine_class_moments(class_sums, moments.class_weights,
                                                                 class_sum_squares, offset, scale)
        gamma = float(self.gamma if lfs_gamma is None else lfs_gamma)
        theta = markov_coefficients(class_sums, moments.class_weights, class_sum_squares.sum(axis=0), gamma)
        return theta, labels, moments, offset, scale

    def _moments_in_square_range(self, X, labels, moments: ClassMoments, sample_weight=None) -> ClassMoments:
        """The Spark selector's rule (``FisherMarkovSelector._moments_in_square_range``): features whose
        squares underflowed rescaled for a scale-free theta, named in a warning with ``scaling="none"``,
        refused by QFS."""
        underflowing = underflowing_squares(moments.class_weights, moments.class_sums, moments.class_sum_squares)
        if not underflowing.any():
            return moments
        named = np.flatnonzero(underflowing).tolist()
        shown = f"{named[:5]}{' and more' if len(named) > 5 else ''}"
        owner = type(self).__name__
        if self._multiplies_values:
            raise InvalidInputError(
                f"{owner}: feature(s) {shown} have values below {MIN_MAGNITUDE:.1e} in size, whose squares and "
                "products underflow float64, and QFS multiplies the values as given; multiply those columns by a "
                "power of ten first (or use LFSSelector, which rescales them)")
        if self._scaling_in_use() == "none":
            warnings.warn(PrecisionWarning(
                f"{owner}: feature(s) {shown} have values below {MIN_MAGNITUDE:.1e} in size: with scaling='none' theta "
                "keeps their unit, of the order of their squares, which underflow float64, so they score about 0 "
                "whatever they say of the classes; scaling='standard' (the default) or 'range' scores them "
                "scale-free"), stacklevel=5)
            return moments
        return rescaled_moments(X, labels.index, labels.values.size, moments, underflowing, owner=owner,
                                sample_weight=sample_weight)


def _lfs_scaling(moments: ClassMoments, scaling: str, weight_square_sum=None):
    """Offset and scale of :func:`sparkfs.core.scaling.feature_scaling` from the moments, as the
    Spark selector's ``_feature_scaling`` (the sample std, ddof = 1, for "standard"; weighted with
    ``weight_square_sum``, the sum of the squared weights)."""
    total_weight = float(moments.class_weights.sum())
    total_sums = moments.class_sums.sum(axis=0)
    mean = std = None
    if scaling == "standard":
        mean = total_sums / total_weight
        std = sample_std(total_weight, total_sums, moments.class_sum_squares.sum(axis=0),
                         weight_square_sum=weight_square_sum)
    return feature_scaling(scaling, minimum=moments.feature_min, maximum=moments.feature_max, mean=mean, std=std)
