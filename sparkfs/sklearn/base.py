"""The scikit-learn base of the front: the selection Params, the input checks and the selection rule.

:class:`SparkfsSelector` is to this package what ``selectors/_base.FeatureSelector`` is to the Spark
selectors: a subclass computes scores (and p-values where its method has them) in
``_score_features``; the base checks the Params and the input, stores what the scores function
returns (as scikit-learn's ``_BaseFilter`` stores ``score_func``'s), and selects by the rule every
Spark selector uses (:mod:`sparkfs.core.selection`: the top k by score with ties broken by the lower
index, every score above a threshold, a percentile, or fpr / fdr / fwe on the p-values).

The selection Params are the Spark selectors' in snake_case: ``num_features`` (``numFeatures``),
``threshold``, ``selection_mode`` (``selectionMode``, with Spark ML's values ``"numTopFeatures"``,
``"percentile"``, ``"fpr"``, ``"fdr"``, ``"fwe"``) and ``selection_threshold``
(``selectionThreshold``). As in Spark, ``num_features=None`` is the default of 50 (all features,
silently, when there are fewer); a ``num_features`` given above the number of features warns and
keeps them all, as scikit-learn's ``SelectKBest`` does.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import NamedTuple, Optional

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin
from sklearn.utils import check_array, check_consistent_length, column_or_1d
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sparkfs.core.labels import check_class_labels
from sparkfs.core.selection import (
    DEFAULT_SELECTION_THRESHOLDS,
    P_VALUE_MODES,
    SELECTION_MODES,
    forced_refusal,
    forced_selection,
    percentile_count,
    select_by_p_values,
    select_features,
    select_percentile,
)
from sparkfs.errors import InvalidInputError
from sparkfs.sklearn.missing import MISSING_POLICIES, PAIRWISE_METHODS, rows_under_policy

#: ``numFeatures`` when it is not set: the Spark selectors' default.
DEFAULT_NUM_FEATURES = 50


class FeatureScores(NamedTuple):
    """What a front's ``_score_features`` returns: the scores every selection ranks by (larger
    first), the p-values (None for a method without them) and further per-feature arrays stored on
    the estimator as ``<name>_`` (e.g. ``statistics_``)."""

    scores: np.ndarray
    p_values: Optional[np.ndarray] = None
    arrays: Optional[dict] = None


class ClassLabels(NamedTuple):
    """The classes of ``y`` in the Spark selectors' order (numeric labels in numeric order, other
    labels by their text), each row's class index and the rows per class."""

    values: np.ndarray
    index: np.ndarray
    counts: np.ndarray


def bad_param(owner: str, name: str, constraint: str, value) -> ValueError:
    """The refusal of a Param, worded as scikit-learn's (and the Spark selectors')."""
    return ValueError(f"The '{name}' parameter of {owner} must be {constraint}. Got {value!r} instead.")


def is_int(value) -> bool:
    return isinstance(value, Integral) and not isinstance(value, bool)


def is_real(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def checked_sample_weight(sample_weight, n_rows: int) -> np.ndarray:
    """``sample_weight`` as float64 of shape (n_rows,); NaN, infinite and negative weights are
    refused (zeros are allowed: the row counts nowhere), as the Spark selectors refuse them."""
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (n_rows,):
        raise ValueError(f"sample_weight must have shape ({n_rows},), one weight per row of X; got {weights.shape}")
    bad = ~np.isfinite(weights) | (weights < 0)
    if bad.any():
        raise InvalidInputError(f"{int(bad.sum())} row(s) have a NaN, infinite or negative sample_weight (e.g. row "
                                f"{int(np.argmax(bad))}: {weights[np.argmax(bad)]!r}); weights must be finite and >= 0")
    if n_rows and not weights.any():
        raise InvalidInputError("sample_weight sums to zero: every row has weight 0, so no row counts")
    return weights


class SparkfsSelector(SelectorMixin, BaseEstimator):
    """Base of every estimator of :mod:`sparkfs.sklearn` (not used directly).

    Subclasses set ``method`` (the ``--method`` name), ``has_p_values``, ``requires_labels`` and
    write ``_score_features(X, y)`` returning :class:`FeatureScores`; ``_check_method_params``
    checks their own Params. A method that takes instance weights derives from
    :class:`WeightedFit` first (its ``fit`` takes ``sample_weight``) and writes
    ``_score_features(X, y, sample_weight=None)``.

    Attributes (after ``fit``)
    --------------------------
    scores_ : ndarray of shape (n_features,)
        The scores the Spark selector's model holds (``model.scores``), larger is better.
    pvalues_ : ndarray of shape (n_features,)
        Upper-tail p-values (only for methods that have them).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has feature names (a pandas DataFrame).
    missing_ : dict
        What ``missing`` did (the Spark summary's ``missing``): ``{"policy", "rows_dropped",
        "values_set_to_zero"}``. ``missing`` is ``'refuse'`` (default: NaN refused, as scikit-learn's
        checks), ``'drop-rows'`` (rows with a NaN in ``X`` or a missing label left out, with their
        ``sample_weight``), ``'zero'`` (NaN in ``X`` set to 0; missing labels refused) or ``'pairwise'``
        (anova, chi2, variance: each feature scored on the rows where it is present; the record adds
        ``values_left_out`` and ``features_with_missing``): :mod:`sparkfs.sklearn.missing`.
    """

    method: str = ""
    has_p_values: bool = False
    requires_labels: bool = True
    #: True for a method of a continuous target (``y`` a regression target, taken as floats).
    continuous_target: bool = False
    #: Whether ``fit`` takes ``sample_weight`` (the Spark selector's ``weightCol``): :class:`WeightedFit`.
    takes_sample_weight: bool = False
    #: Whether ``missing='pairwise'`` is taken: the method's statistic has a pairwise-deletion rule.
    takes_pairwise_missing: bool = False

    def __init__(self, *, num_features=None, threshold=None, selection_mode="numTopFeatures",
                 selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        self.num_features = num_features
        self.threshold = threshold
        self.selection_mode = selection_mode
        self.selection_threshold = selection_threshold
        self.allow_many_classes = allow_many_classes
        self.kept_features = kept_features
        self.excluded_features = excluded_features
        self.missing = missing

    # -- the Params ------------------------------------------------------------------------------

    def _check_selection_params(self) -> None:
        """The selection rule's Params, with the Spark selectors' rules: one rule at a time,
        ``selection_threshold`` only with the modes that use it, fpr / fdr / fwe only with p-values."""
        owner, mode = type(self).__name__, self.selection_mode
        modes = SELECTION_MODES if self.has_p_values else tuple(m for m in SELECTION_MODES if m not in P_VALUE_MODES)
        if mode not in modes:
            raise bad_param(owner, "selection_mode", "a str among {" + ", ".join(map(repr, modes)) + "}", mode)
        if self.num_features is not None and not (is_int(self.num_features) and self.num_features >= 1):
            raise bad_param(owner, "num_features", "an int in the range [1, inf) or None", self.num_features)
        if self.threshold is not None and not (is_real(self.threshold) and math.isfinite(self.threshold)):
            raise bad_param(owner, "threshold", "a finite float or None", self.threshold)
        threshold = self.selection_threshold
        if threshold is not None and not (is_real(threshold) and 0.0 < threshold <= 1.0):
            raise bad_param(owner, "selection_threshold", "a float in the range (0, 1] or None", threshold)
        if not isinstance(self.allow_many_classes, (bool, np.bool_)):
            raise bad_param(owner, "allow_many_classes", "a bool", self.allow_many_classes)
        if not (isinstance(self.missing, str) and self.missing in MISSING_POLICIES):
            raise bad_param(owner, "missing", "a str among {" + ", ".join(map(repr, MISSING_POLICIES)) + "}",
                            self.missing)
        if mode == "numTopFeatures" and threshold is not None:
            raise ValueError(f"The 'selection_threshold' parameter of {owner} is the fraction ('percentile') or "
                             f"alpha ('fpr', 'fdr', 'fwe') of selection_mode; with selection_mode='numTopFeatures' "
                             f"the count is num_features. Got selection_threshold={threshold!r} instead.")
        if mode != "numTopFeatures":
            for name in ("num_features", "threshold"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{owner}: selection_mode={mode!r} selects by its selection_threshold; "
                                     f"{name}={getattr(self, name)!r} belongs to selection_mode='numTopFeatures'. "
                                     "Give one of the two rules.")

    def _check_method_params(self) -> None:
        """Hook: the method's own Params (messages as :func:`bad_param`'s)."""

    #: Whether the fit makes the selection itself (QFS's optimum): its size is the count kept features
    #: count toward, as in the Spark selectors' rule.
    _own_selection = False

    def _forced(self, num_features: Optional[int] = None):
        """(kept, excluded) feature indices (``kept_features`` / ``excluded_features``, the Spark
        selectors' ``keptFeatures`` / ``excludedFeatures``), refused as the Spark selectors refuse them."""
        owner, lists = type(self).__name__, []
        for name in ("kept_features", "excluded_features"):
            value = getattr(self, name, None)
            value = [] if value is None else list(value)
            if not all(is_int(i) and i >= 0 for i in value):
                raise bad_param(owner, name, "a list of feature indices (ints >= 0) or None", getattr(self, name))
            lists.append([int(i) for i in value])
        count = None
        if num_features is not None and self.selection_mode in ("numTopFeatures", "percentile") and (
                self.threshold is None or self.selection_mode == "percentile"):
            count = min(self._count(num_features), num_features)
        refusal = forced_refusal(lists[0], lists[1], num_features, count)
        if refusal:
            raise ValueError(f"{owner}: kept_features={lists[0]}, excluded_features={lists[1]}: "
                             f"{refusal.replace('keep ', 'kept_features ').replace('exclude ', 'excluded_features ')}")
        return lists[0], lists[1]

    def _count(self, num_features: int) -> int:
        """The count of a count rule: num_features (the default 50 when None), or the percentile's share."""
        if self.selection_mode == "percentile":
            fraction = self.selection_threshold or DEFAULT_SELECTION_THRESHOLDS["percentile"]
            return percentile_count(num_features, fraction)
        return DEFAULT_NUM_FEATURES if self.num_features is None else int(self.num_features)

    # -- fit ---------------------------------------------------------------------------------------

    def fit(self, X, y=None, **fit_params):
        """Score every feature of ``X`` (dense, or SciPy sparse: kept sparse) against the classes
        ``y`` and store ``scores_`` (and ``pvalues_``); the selection is made by ``transform``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Finite values (NaN and infinity are refused, as scikit-learn's checks do), or NaN handled by
            ``missing='drop-rows'`` / ``'zero'`` (infinity is refused under every policy).
        y : array-like of shape (n_samples,)
            Class labels (not used, and optional, for a method without labels: ``variance``).
        **fit_params
            None is taken: this method has no ``sample_weight`` (the estimators of
            :class:`WeightedFit` have), and refuses one by name.

        Returns
        -------
        self
        """
        if "sample_weight" in fit_params:
            raise ValueError(f"{type(self).__name__} (method {self.method}) does not take sample_weight: its Spark "
                             "selector takes no instance weights, or the front does not have them yet (`sparkfs "
                             "methods` lists the methods that take weights; docs/sklearn.md the front's)")
        if fit_params:
            raise TypeError(f"{type(self).__name__}.fit() got unexpected keyword argument(s) {sorted(fit_params)}")
        return self._fit_weighted(X, y, None)

    def _fit_weighted(self, X, y, sample_weight):
        """The fit, with ``sample_weight`` (None, or weights for a :class:`WeightedFit` estimator)."""
        self._check_selection_params()
        self._check_method_params()
        if self.missing == "pairwise" and not self.takes_pairwise_missing:  # as the Spark fit: a value of the Param
            raise ValueError(f"{type(self).__name__}: missing='pairwise' leaves a NaN out of one feature's statistic "
                             f"only, a rule of the univariate filters ({', '.join(PAIRWISE_METHODS)}); this method "
                             "has none: use missing='drop-rows' or 'zero'")
        if self.missing != "refuse":
            X, y, sample_weight = self._rows_under_missing(X, y, sample_weight)
        elif self.requires_labels:
            X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64, y_numeric=self.continuous_target)
        else:
            X = validate_data(self, X, accept_sparse="csr", dtype=np.float64)
        self._forced(X.shape[1])  # refused before the scores are computed
        if self.missing == "refuse":
            self.missing_ = {"policy": "refuse", "rows_dropped": 0, "values_set_to_zero": 0}
        if sample_weight is None:
            result = self._score_features(X, y)
        else:
            result = self._score_features(X, y, sample_weight=checked_sample_weight(sample_weight, X.shape[0]))
        self.scores_ = np.asarray(result.scores, dtype=np.float64)
        if result.p_values is not None:
            self.pvalues_ = np.asarray(result.p_values, dtype=np.float64)
        for name, values in (result.arrays or {}).items():
            setattr(self, f"{name}_", values)
        return self

    def _rows_under_missing(self, X, y, sample_weight):
        """(X, y, sample_weight) under ``missing`` 'drop-rows' or 'zero' (:mod:`sparkfs.sklearn.missing`),
        checked as scikit-learn's checks would but for NaN; sets ``missing_``."""
        X = validate_data(self, X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False)  # NaN, inf: below
        if self.requires_labels:
            y = column_or_1d(y, warn=True)
            check_consistent_length(X, y)
        if sample_weight is not None:
            weights = np.asarray(sample_weight, dtype=np.float64)
            if weights.shape != (X.shape[0],):
                raise ValueError(f"sample_weight must have shape ({X.shape[0]},), one weight per row of X; got "
                                 f"{weights.shape}")
        rows = rows_under_policy(X, y if self.requires_labels else None, sample_weight, self.missing,
                                 type(self).__name__)
        self.missing_ = rows.facts
        y = rows.y if self.requires_labels else y
        if self.requires_labels and self.continuous_target:
            y = check_array(y, ensure_2d=False, dtype=np.float64, input_name="y")
        return rows.X, y, rows.sample_weight

    def _score_features(self, X, y) -> FeatureScores:  # pragma: no cover - abstract
        raise NotImplementedError

    def _class_labels(self, y) -> ClassLabels:
        """The classes of ``y``: refused when fewer than two, continuous or identifier-like (the
        Spark selectors' rule, :func:`sparkfs.core.labels.check_class_labels`)."""
        check_classification_targets(y)
        values, index, counts = np.unique(y, return_inverse=True, return_counts=True)
        if values.size < 2:
            raise ValueError(f"{type(self).__name__} needs at least two classes; y has 1 class ({values[0]!r})")
        try:
            check_class_labels(values.tolist(), counts, "y", bool(self.allow_many_classes))
        except InvalidInputError as refusal:
            raise InvalidInputError(f"{refusal} (In sparkfs.sklearn the parameter is allow_many_classes.)") from None
        return ClassLabels(values, index.astype(np.int64).ravel(), counts.astype(np.int64))

    # -- the selection -----------------------------------------------------------------------------

    def _selected(self) -> np.ndarray:
        """Sorted indices of the selected features by the Spark selectors' rule
        (``FeatureSelector._select``)."""
        check_is_fitted(self, "scores_")
        self._check_selection_params()
        mode, scores = self.selection_mode, self.scores_
        threshold = self.selection_threshold
        if threshold is None:
            threshold = DEFAULT_SELECTION_THRESHOLDS.get(mode)
        if mode == "percentile":
            return select_percentile(scores, threshold)
        if mode in P_VALUE_MODES:
            return select_by_p_values(self.pvalues_, mode, threshold)
        if self.threshold is not None:
            return select_features(scores, threshold=self.threshold)
        count = DEFAULT_NUM_FEATURES if self.num_features is None else self.num_features
        return select_features(scores, num_features=count, warn_if_all=self.num_features is not None)

    def _get_support_mask(self) -> np.ndarray:
        selected = self._selected()
        keep, exclude = self._forced(self.scores_.shape[0])
        if keep or exclude:  # the Spark selectors' rule (FeatureSelector._select)
            count = None
            if self.selection_mode == "percentile" or (self.selection_mode == "numTopFeatures"
                                                       and self.threshold is None):
                count = max(len(selected), len(keep)) if self._own_selection else min(
                    self._count(self.scores_.shape[0]), self.scores_.shape[0])
            selected = forced_selection(self.scores_, selected, keep, exclude, count)
        mask = np.zeros(self.scores_.shape[0], dtype=bool)
        mask[selected] = True
        return mask

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.target_tags.required = self.requires_labels
        return tags


class WeightedFit:
    """The ``fit`` of an estimator whose method takes instance weights (the Spark selector's
    ``weightCol``); listed before :class:`SparkfsSelector` in its bases."""

    takes_sample_weight = True

    def fit(self, X, y=None, sample_weight=None):
        """Score every feature of ``X`` (dense, or SciPy sparse: kept sparse) against the classes
        ``y`` and store ``scores_`` (and ``pvalues_``); the selection is made by ``transform``.

        Parameters
        ----------
        X : array-like or sparse matrix of shape (n_samples, n_features)
            Finite values (NaN and infinity are refused, as scikit-learn's checks do), or NaN handled by
            ``missing='drop-rows'`` / ``'zero'`` (infinity is refused under every policy).
        y : array-like of shape (n_samples,)
            Class labels (not used, and optional, for a method without labels: ``variance``).
        sample_weight : array-like of shape (n_samples,), optional
            Instance weights, finite and >= 0 (a zero leaves the row out): frequency weights, so an
            integer weight w scores as w copies of the row, as the Spark selector's ``weightCol``.

        Returns
        -------
        self
        """
        return self._fit_weighted(X, y, sample_weight)  # type: ignore[attr-defined]
