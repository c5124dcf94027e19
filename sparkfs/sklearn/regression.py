"""The filter of a continuous target as a scikit-learn selector: f-regression (scikit-learn's
``f_regression``, Spark ML's ``FValueTest``; Spark: ``UnivariateTestSelector(test="f-regression")``).

It computes on ``X`` the target moments of the Spark pass (``spark/target_moments.py``: exact sums
of x, x^2 and x y, and the target's sums) and hands them to the same core functions
(:mod:`sparkfs.core.regression`, :func:`sparkfs.core.moment_filters.f_regression_scores`), so the
scores and p-values are the Spark selector's bits on the same rows.
"""

from __future__ import annotations

import numpy as np

from sparkfs.core.moment_filters import MOMENT_FILTERS, ranking_scores
from sparkfs.core.regression import (
    TargetMoments,
    check_continuous_target,
    exact_feature_target_sums,
    rounded_target_moments,
)
from sparkfs.core.scaling import check_magnitude
from sparkfs.errors import InvalidInputError
from sparkfs.sklearn.base import FeatureScores, SparkfsSelector
from sparkfs.sklearn.moments import column_extremes


def target_moments(X, y) -> TargetMoments:
    """The exact target moments of ``X`` (n, p; dense or CSR) against the target ``y`` (n,)."""
    target = np.asarray(y, dtype=np.float64)
    try:
        sums = exact_feature_target_sums(X, target)
    except ValueError:
        check_magnitude(*column_extremes(X), owner="FRegressionSelector (sums of squares)")
        raise InvalidInputError("FRegressionSelector: the feature sums are not finite (values, or values times "
                                "y, too large?)") from None
    return rounded_target_moments(X.shape[0], *sums, target.min(initial=np.inf), target.max(initial=-np.inf))


class FRegressionSelector(SparkfsSelector):
    """The F test of a one-feature linear regression of a continuous target ``y`` on each feature
    (``method`` ``f-regression``; eq. R1-R2 of :mod:`sparkfs.core.regression`).

    Parameters
    ----------
    num_features, threshold, selection_mode, selection_threshold
        The selection rule (:class:`sparkfs.sklearn.base.SparkfsSelector`); every mode, fpr, fdr
        and fwe included.

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        The F values; a constant feature scores 0, one exactly linear in ``y`` +inf.
    pvalues_ : ndarray (n_features,)
        The upper tail of F(1, n - 2) (1 for a constant feature, 0 for an exact line).

    Notes
    -----
    One pass over X: O(nnz) work, 3 p exact sums; sparse X stays sparse. ``y`` must be finite and
    not constant, with at least 3 rows. No sample weights (anova's front takes none either).
    """

    method = "f-regression"
    has_p_values = True
    continuous_target = True
    allow_many_classes = False  # not a Param here: the target is not a set of classes

    def __init__(self, *, num_features=None, threshold=None, selection_mode="numTopFeatures",
                 selection_threshold=None, kept_features=None, excluded_features=None, missing="refuse"):
        self.num_features = num_features
        self.threshold = threshold
        self.selection_mode = selection_mode
        self.selection_threshold = selection_threshold
        self.kept_features = kept_features
        self.excluded_features = excluded_features
        self.missing = missing

    def _score_features(self, X, y) -> FeatureScores:
        moments = target_moments(X, y)
        if moments.n_rows < 3:
            raise ValueError(f"{type(self).__name__}: n_samples={moments.n_rows}: the F test needs at least 3 samples "
                             "(n - 2 degrees of freedom)")
        check_continuous_target(moments, "y")
        statistics, p_values = MOMENT_FILTERS["f-regression"].score(moments)
        statistics = np.asarray(statistics, dtype=np.float64)
        p_values = np.where(np.isnan(statistics), 1.0, np.asarray(p_values, dtype=np.float64))
        return FeatureScores(ranking_scores(MOMENT_FILTERS["f-regression"], statistics), p_values)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags
