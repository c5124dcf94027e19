"""Univariate filters as functions of one pass's class moments (pure NumPy), after scikit-learn's
``score_func``: each filter is one function of the per-class row counts ``n_c`` (C,), column sums
``S`` (C, p) and column sums of squares ``Q`` (C, p) returning the statistic of every feature and,
where the test has them, its upper-tail p-values.

Missing values, pairwise deletion: a filter marked ``pairwise`` also takes per-feature counts ``n_cj``
(C, p), the rows of class c where feature j is present, with ``S`` and ``Q`` summed over those rows
only. Each feature's statistic (and its degrees of freedom) is then the test on that feature's
complete cases, the rule the ``missing='pairwise'`` policy of the selectors applies.

:data:`MOMENT_FILTERS` is the registry the ``anova`` / ``chi2`` selector
(:class:`sparkfs.selectors.baseline.UnivariateTestSelector`) and the ``--method`` names
(:func:`sparkfs.methods.add_filter_method`) are built from: a new filter is one function here and
one :class:`MomentFilter` entry (docs/recipes.md, "How to add a univariate filter").

Every statistic is ranked larger-first. A filter whose statistic is better when smaller (a
p-value, a Laplacian score) declares ``larger_is_better=False``: the selector then ranks by the
negated statistic (:func:`ranking_scores`) and keeps the statistic itself beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, NamedTuple, Optional, Union

import numpy as np

from sparkfs.core.regression import TargetMoments, f_regression_p_values, f_regression_statistics
from sparkfs.core.univariate import (
    anova_f_values,
    anova_p_values,
    chi2_p_values,
    chi2_statistics,
    classes_with_rows,
)


class FilterScores(NamedTuple):
    """A filter's statistic per feature (NaN where undefined: a constant feature's 0 / 0) and its
    upper-tail p-values, or None for a filter without them."""

    statistics: np.ndarray
    p_values: Optional[np.ndarray] = None


#: ``score(class_counts, class_sums, class_sum_squares) -> FilterScores``; a filter of a continuous
#: label (``label_type="continuous"``): ``score(target_moments) -> FilterScores``
ScoreFunction = Union[Callable[[np.ndarray, np.ndarray, np.ndarray], FilterScores],
                      Callable[[TargetMoments], FilterScores]]


@dataclass(frozen=True)
class MomentFilter:
    """One univariate filter of the class moments.

    ``score``: the statistic (and p-values) from the moments; ``description``: one line for the
    Param's doc and ``sparkfs methods``; ``has_p_values``: whether ``score`` returns p-values (then
    the fpr, fdr and fwe selection modes apply); ``larger_is_better``: the statistic's direction;
    ``non_negative``: the statistic compares sums of counts, so a negative value is refused (the
    pass then takes the column minima); ``needs_labels``: False for a statistic of all rows
    together (the moments then come as one class, and the method runs without labels);
    ``label_type``: "continuous" for a filter of a regression target, whose ``score`` takes the
    one-pass :class:`sparkfs.core.regression.TargetMoments` instead of the class moments;
    ``scale_free``: the statistic of a feature does not change when the feature is multiplied by a
    constant, so a feature whose squares underflow is scored from its values times a power of two
    (:func:`sparkfs.core.univariate.underflowing_squares`); ``pairwise``: ``score`` also takes
    per-feature counts (C, p), so the filter has a pairwise-deletion rule for missing values (module
    notes)."""

    score: ScoreFunction
    description: str
    has_p_values: bool = True
    larger_is_better: bool = True
    non_negative: bool = False
    needs_labels: bool = True
    label_type: str = "categorical"
    scale_free: bool = False
    pairwise: bool = False


def anova_scores(class_counts, class_sums, class_sum_squares) -> FilterScores:
    """The one-way ANOVA F value and its p-value (scikit-learn's ``f_classif``, Spark ML's ``ANOVATest``)."""
    statistics = anova_f_values(class_counts, class_sums, class_sum_squares)
    return FilterScores(statistics, anova_p_values(statistics, class_counts))  # per-feature dof for (C, p) counts


def chi2_scores(class_counts, class_sums, class_sum_squares) -> FilterScores:
    """scikit-learn's ``chi2`` of class sums against the sums expected under independence, and its
    p-value with (classes with rows - 1) degrees of freedom; ``class_sum_squares`` is not used."""
    statistics = chi2_statistics(class_counts, class_sums)
    return FilterScores(statistics, chi2_p_values(statistics, classes_with_rows(class_counts)))


def variance_scores(class_counts, class_sums, class_sum_squares) -> FilterScores:
    """The sample variance of every feature over all rows (ddof = 1, Spark ML's
    ``VarianceThresholdSelector`` and ``Summarizer``'s "variance"): ``(Q - S^2 / n) / (n - 1)``
    from the totals over the classes, floored at 0 (rounding); 0 for a single row. No p-values.
    Its sums-of-squares form loses digits where a feature's mean is large against its spread (the
    relative error grows as eps x mean^2 / variance), as any one-pass sum of squares does. With
    per-feature counts (C, p), ``n_j`` is the rows where feature j is present (pairwise deletion)."""
    n = np.asarray(class_counts, dtype=np.float64).sum(axis=0)
    sums = np.atleast_2d(np.asarray(class_sums, dtype=np.float64)).sum(axis=0)
    squares = np.atleast_2d(np.asarray(class_sum_squares, dtype=np.float64)).sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        variances = np.maximum(squares - sums * sums / n, 0.0) / (n - 1.0)
    return FilterScores(np.where(n < 2, 0.0, variances), None)


def f_regression_scores(moments: TargetMoments) -> FilterScores:
    """The F value of a one-feature linear regression of the target (eq. R1 of
    :mod:`sparkfs.core.regression`: scikit-learn's ``f_regression``, Spark ML's ``FValueTest``) and
    its p-value (eq. R2)."""
    statistics = f_regression_statistics(moments)
    return FilterScores(statistics, f_regression_p_values(statistics, moments.n_rows))


#: test name -> filter. The ``test`` Param of the univariate selector takes these names (and
#: ``chi2-categorical``, Spark ML's contingency test, which is not a function of the moments).
MOMENT_FILTERS: Dict[str, MomentFilter] = {
    "anova": MomentFilter(anova_scores, "the one-way ANOVA F value (scikit-learn's f_classif, Spark ML's ANOVATest)",
                          scale_free=True, pairwise=True),
    "chi2": MomentFilter(chi2_scores, "scikit-learn's chi-squared of class sums (non-negative features)",
                         non_negative=True, pairwise=True),
    "variance": MomentFilter(variance_scores, "the sample variance (Spark ML's VarianceThresholdSelector); no labels",
                             has_p_values=False, needs_labels=False, pairwise=True),
    "f-regression": MomentFilter(f_regression_scores, "the F value of a linear regression on a continuous label "
                                 "(scikit-learn's f_regression, Spark ML's FValueTest)", label_type="continuous"),
}


def ranking_scores(moment_filter: MomentFilter, statistics) -> np.ndarray:
    """The scores a selector ranks by (larger first): the statistics, negated for a filter whose
    statistic is better when smaller; an undefined statistic (NaN: a constant or all-zero feature)
    ranks last (0, or -inf for a smaller-is-better statistic)."""
    statistics = np.asarray(statistics, dtype=np.float64)
    if moment_filter.larger_is_better:
        return np.where(np.isnan(statistics), 0.0, statistics)
    return np.where(np.isnan(statistics), -np.inf, -statistics)
