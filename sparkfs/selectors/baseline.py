"""Baselines through the sparkfs API: the univariate tests users already rank by.

* ``anova``: the one-way ANOVA F value, the statistic Spark ML's ``UnivariateFeatureSelector``
  ranks continuous features by (``ANOVATest``) and scikit-learn's ``f_classif``.
* ``chi2``: scikit-learn's ``chi2`` for non-negative features (term counts, frequencies, tf-idf):
  the class sums of each feature against the sums expected under independence
  (:func:`sparkfs.core.univariate.chi2_statistics`). Negative values are refused.
* ``chi2-categorical``: Spark ML's ``ChiSquareTest`` (``ChiSqSelector``), a contingency-table
  test that takes every distinct value of a feature as a category; for integer-coded categorical
  features only, so non-integer values are refused (on tf-idf data it builds one category per
  distinct value and runs out of memory).

anova and chi2 compute their statistic from the one-pass class moments of
:func:`sparkfs.spark.stats.class_moments`, as LFS. ``statsEngine="auto"`` (default) follows
``deterministic``: with ``deterministic=True`` the exact sums (``"arrow"``), so the scores are the
same bits for any partitioning and row order; by default Spark's ``Summarizer`` (``"jvm"``), whose
sums follow the order tasks finish in and agree with the exact ones to rounding. An explicit
``statsEngine="jvm"`` on anova calls Spark ML's own ``ANOVATest``. chi2-categorical's contingency
counts are integers, so it is exact already.

Each test has p-values (``model.pValues``, ``summary["selected_p_values"]``): the upper tail of
F(C - 1, n - C) at the F value (anova, scikit-learn's ``f_classif``), of chi-squared with C - 1
degrees of freedom (chi2, scikit-learn's ``chi2``) and Spark ML's own ``ChiSquareTest`` p-values
(chi2-categorical). So these selectors take every ``selectionMode``, fpr, fdr and fwe included.
A feature whose statistic is undefined and scored 0 (constant, all-zero) has p-value 1.

Instance weights (``weightCol``; anova, chi2, variance and every filter of the class moments) are
frequency weights, scikit-learn's convention for ``sample_weight``: ``n_c`` is the weight sum of
class c and every sum and sum of squares is weighted, so an integer weight w gives the scores of w
copies of the row. The degrees of freedom follow: n is the total weight (F(C - 1, W - C) for anova,
C - 1 for chi2 with C the classes of positive weight; variance divides by W - 1). Rows of weight 0
count nowhere, not in the constant-feature check either. chi2-categorical and f-regression refuse a
weight column (Spark ML's tests are unweighted), and an explicit ``statsEngine="jvm"`` takes the
Summarizer's weighted sums for anova instead of ``ANOVATest``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional

import numpy as np
from pyspark.ml.param import Param, TypeConverters

from sparkfs.core.moment_filters import MOMENT_FILTERS, MomentFilter, ranking_scores
from sparkfs.core.regression import check_continuous_target
from sparkfs.core.scaling import check_magnitude
from sparkfs.core.univariate import anova_p_values, constant_feature_candidates, underflowing_squares
from sparkfs.errors import InvalidInputError
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, PreparedInput, ScoreResult
from sparkfs.selectors._params import HasLabelType, HasStatsEngine, declare, keyword_constructor
from sparkfs.spark.blocks import is_connect_session
from sparkfs.spark.stats import (
    class_moments,
    class_moments_counting_labels,
    column_extremes,
    diagnose_input,
    rescaled_class_moments,
)
from sparkfs.spark.target_moments import target_moments

CATEGORICAL_TEST = "chi2-categorical"


def _known_test(value) -> bool:
    return value == CATEGORICAL_TEST or value in MOMENT_FILTERS


class _UnivariateParams(HasStatsEngine, HasLabelType):
    test: Param = declare(
        "test", "a univariate filter of the class moments (sparkfs.core.moment_filters.MOMENT_FILTERS: 'anova', the F "
        "value; 'chi2', scikit-learn's chi-squared of class sums, non-negative features) or 'chi2-categorical' (Spark "
        "ML's ChiSquareTest, integer-coded categorical features)", TypeConverters.toString, default="anova",
        constraint=(_known_test, "a filter of sparkfs.core.moment_filters.MOMENT_FILTERS ('anova', 'chi2', ...) or "
                                 "'chi2-categorical'"))

    def labelTypeInUse(self) -> str:
        """A filter of a continuous target (f-regression) takes its label as continuous whatever
        labelType says (a contradicting labelType is refused by the fit's checks)."""
        moment_filter = MOMENT_FILTERS.get(self.getOrDefault(self.test))
        if moment_filter is not None and moment_filter.label_type == "continuous":
            return "continuous"
        return self.getLabelType()

    def hasPValues(self) -> bool:
        """Whether the test has p-values (anova, chi2 and chi2-categorical all do), so fpr, fdr and
        fwe are selection modes. (The Estimator and the Model name it again: SelectorParams' False
        comes first in their method order.)"""
        test = self.getOrDefault(self.test)
        return test == CATEGORICAL_TEST or test not in MOMENT_FILTERS or MOMENT_FILTERS[test].has_p_values


class UnivariateTestSelectorModel(FeatureSelectorModel, _UnivariateParams):
    """Model of :class:`UnivariateTestSelector`: ``scores`` are F values or chi-squared statistics,
    ``pValues`` their p-values."""

    #: F is +inf for a feature constant within each class that still separates them; a filter whose
    #: statistic is better when smaller scores an undefined statistic -inf (ranked last).
    _scores_may_be_infinite = True
    hasPValues = _UnivariateParams.hasPValues


@keyword_constructor
class UnivariateTestSelector(FeatureSelector, _UnivariateParams):
    """A univariate test as a sparkfs selector: the filter base (see the module doc for the tests).

    A test of :data:`sparkfs.core.moment_filters.MOMENT_FILTERS` is a function of the one-pass
    class moments; this class runs the pass, refuses negative values for a filter that needs
    them, scores constant features 0 (p-value 1) and ranks by the filter's declared direction.

    Scores: the F value (anova; its order equals the p-value order Spark ML uses, since every
    feature has the same degrees of freedom), scikit-learn's chi-squared statistic (chi2; every
    feature has C - 1 degrees of freedom, so the order is the p-value order too) or Spark ML's
    contingency chi-squared statistic (chi2-categorical; Spark ML ranks by p-value, whose degrees
    of freedom vary with each feature's number of distinct values: the rankings can differ). A
    constant feature (F = 0 / 0) and an all-zero feature under chi2 (0 / 0) score 0; NaN or
    infinite inputs and values whose squares overflow are refused with the rows or the feature named.
    """

    _model_class = UnivariateTestSelectorModel
    _unset_keywords = ("labelType",)  # unset: the test's (f-regression: continuous)
    #: The statistics engine of the fit under way (statsEngine 'auto' judged on its input by _score_in_one_pass).
    _engine_of_fit = None
    hasPValues = _UnivariateParams.hasPValues

    @property
    def requires_labels(self) -> bool:
        """False for a filter of all rows together (``variance``): it runs without labels."""
        moment_filter = MOMENT_FILTERS.get(self.getOrDefault(self.test))
        return moment_filter is None or moment_filter.needs_labels

    def _uses_labels(self, dataset) -> bool:
        return self.requires_labels

    takes_weights = True  # the filters of the class moments only (takesWeights)

    def takesWeights(self) -> bool:
        """A filter of the class moments (anova, chi2, variance) takes instance weights as frequency
        weights: every class count, sum and sum of squares is weighted, so an integer weight w is w
        copies of the row. chi2-categorical (Spark ML's ChiSquareTest) and f-regression take none."""
        moment_filter = MOMENT_FILTERS.get(self.getOrDefault(self.test))
        return moment_filter is not None and moment_filter.label_type == "categorical"

    def _weights_refusal(self) -> Optional[str]:
        if not self._weight_col() or self.takesWeights():
            return None
        return (f"{type(self).__name__} test={self.getOrDefault(self.test)!r} does not support weightCol (its test "
                "is unweighted); anova, chi2 and variance take instance weights")

    def takesPairwiseMissing(self) -> bool:
        """A filter of the class moments with a pairwise rule (anova, chi2, variance:
        ``MomentFilter.pairwise``) takes ``missing='pairwise'``: each feature's statistic from the rows
        where it is present, with that feature's per-class counts of present values."""
        moment_filter = MOMENT_FILTERS.get(self.getOrDefault(self.test))
        return moment_filter is not None and moment_filter.pairwise and moment_filter.label_type == "categorical"

    def _pairwise(self) -> bool:
        return self.getMissing() == "pairwise"

    def checkMissing(self) -> None:
        """missing='pairwise' needs a filter with a pairwise rule and the 'float' statistics pass, which counts
        the present values: checked before the counting pass."""
        super().checkMissing()
        engine = self.getOrDefault(self.statsEngine)
        if self._pairwise() and (engine not in ("auto", "float") or self.getDeterministic()):
            raise ValueError(f"{type(self).__name__} missing='pairwise' counts the present values of every feature in "
                             f"the 'float' statistics pass (float64 sums in partition order); statsEngine={engine!r}, "
                             f"deterministic={self.getDeterministic()} asks for another. Give statsEngine='auto' and "
                             "deterministic=false, or missing='drop-rows'")

    def takesContinuousLabels(self) -> bool:
        """A filter of a continuous target (f-regression) takes one; the class filters do not."""
        moment_filter = MOMENT_FILTERS.get(self.getOrDefault(self.test))
        return moment_filter is not None and moment_filter.label_type == "continuous"

    def _check_fit_params(self) -> None:
        """The label type against the test: a filter of class moments refuses a continuous label
        (naming f-regression), f-regression an explicitly categorical one; f-regression's cross sums
        are exact (Spark's Summarizer cannot weight by a signed target), so statsEngine='jvm' is refused."""
        test, owner = self.getOrDefault(self.test), type(self).__name__
        moment_filter = MOMENT_FILTERS.get(test)
        continuous_test = moment_filter is not None and moment_filter.label_type == "continuous"
        if not continuous_test and self.getLabelType() == "continuous":
            raise ValueError(f"{owner} test={test!r} compares classes and needs a categorical label; for a continuous "
                             "label use test='f-regression' (method f-regression)")
        if continuous_test and self.isSet(self.labelType) and self.getLabelType() != "continuous":
            raise ValueError(f"{owner} test={test!r} regresses on a continuous label; labelType="
                             f"{self.getLabelType()!r} asks for classes: use test='anova' for class labels")
        if continuous_test and self.getOrDefault(self.statsEngine) == "jvm":
            raise ValueError(f"{owner} test={test!r} sums x times the label exactly (statsEngine 'arrow'); Spark's "
                             "Summarizer ('jvm') weights by non-negative weights only. Give statsEngine='auto' or "
                             "'arrow'")

    _sizes_vectors = False  # Spark ML's tests and the moments pass read the vectors themselves

    def _folds_labels(self) -> bool:
        """Whether the fit is one pass: a filter of the class moments on the float engine, whose pass
        counts the labels itself (the other engines and tests take the shared preamble's label count)."""
        moment_filter = MOMENT_FILTERS.get(self.getOrDefault(self.test))
        return (moment_filter is not None and moment_filter.needs_labels and not self._continuous_label()
                and self._engine_of_fit == "float")

    def _score_in_one_pass(self, dataset) -> Optional[ScoreResult]:
        """One pass for a filter of the class moments on the float engine ('auto' takes it
        for sparse vectors): the moments pass counts the labels, then the preamble's label checks
        run on its counts, with the preamble's messages. Anything else: None, so the shared
        preamble, then :meth:`_compute_scores` (with the engine resolved here)."""
        moment_filter = MOMENT_FILTERS.get(self.getOrDefault(self.test))
        uses_engine = moment_filter is not None and not self._continuous_label()
        self._engine_of_fit = self.statsEngineInUse(dataset) if uses_engine else self.statsEngineInUse()
        if self._pairwise():  # the float pass counts the present values (checkMissing refused the others)
            self._engine_of_fit = "float"
        if not self._folds_labels():
            return None
        moments = class_moments_counting_labels(
            dataset, self.getFeaturesCol(), self.getLabelCol(), self._weight_col(), engine="float",
            extremes=moment_filter.non_negative or self._pairwise(), check_labels=self._check_labels,
            pairwise=self._pairwise())
        labels, counts = moments.label_values, moments.class_counts
        if len(labels) < 2:  # refused by the fit, by name
            return ScoreResult(scores=np.zeros(0), label_values=labels, class_counts=counts.tolist(),
                               n_rows=int(counts.sum()))
        self._check_labels(labels, counts)
        self._check_class_counts(labels, counts)
        moments = self._moments_in_square_range(dataset, self.getLabelCol(), moments, moment_filter,
                                                moments.extra["engine"])
        scores, p_values, feature_arrays, n_rows = self._scores_of_moments(dataset, moments, moment_filter)
        return self._filter_result(scores, p_values, labels, counts, n_rows, feature_arrays,
                                   {"method": self.getOrDefault(self.test), "stats_engine": moments.extra["engine"],
                                    **_rescaled_info(moments), **self._weight_info(moments),
                                    **_missing_info(moments)})

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        dataset, indexed = prepared.dataset, prepared.indexed
        labels, counts = prepared.label_values, prepared.class_counts
        test, engine = self.getOrDefault(self.test), self._engine_of_fit or self.statsEngineInUse()
        if indexed is None:  # a filter of all rows together: their moments as one class
            from pyspark.sql import functions as F

            indexed = dataset.withColumn("__label_index", F.lit(0.0))
        spark_ml_anova = (self.getOrDefault(self.statsEngine) == "jvm" and not self._weight_col()
                          and not is_connect_session(indexed.sparkSession))
        feature_arrays, info, n_rows = {}, {"method": test}, prepared.n_rows
        try:
            if self._continuous_label():
                scores, p_values, n_rows = self._continuous_filter_scores(dataset, MOMENT_FILTERS[test])
                info["label_type"], engine = "continuous", "arrow"
            elif test == CATEGORICAL_TEST:
                scores, p_values = self._categorical_scores(dataset, indexed)
            elif test == "anova" and spark_ml_anova:
                scores = self._spark_ml_anova(dataset, indexed)
                p_values = anova_p_values(scores, counts)
            else:
                # Moments: float, exact (arrow) or Summarizer's (jvm; also on Spark Connect, which has no JVM access).
                moments = class_moments(indexed, self.getFeaturesCol(), "__label_index", self._weight_col(),
                                        engine=engine, extremes=MOMENT_FILTERS[test].non_negative or self._pairwise(),
                                        pairwise=self._pairwise())
                moments = self._moments_in_square_range(indexed, "__label_index", moments, MOMENT_FILTERS[test],
                                                        engine)
                scores, p_values, feature_arrays, n_rows = self._scores_of_moments(indexed, moments,
                                                                                   MOMENT_FILTERS[test])
                info.update(_rescaled_info(moments), **self._weight_info(moments), **_missing_info(moments))
            if test != CATEGORICAL_TEST:
                info["stats_engine"] = engine
        except (InvalidInputError, ValueError):
            raise
        except Exception:  # a failed JVM test: name the bad input if there is one
            diagnose_input(dataset, self.getFeaturesCol(), self.getLabelCol(), self._weight_col())
            raise
        return self._filter_result(scores, p_values, labels, counts, n_rows, feature_arrays, info)

    def _filter_result(self, scores, p_values, labels, counts, n_rows, feature_arrays, info) -> ScoreResult:
        """The fit's result: undefined p-values are 1; a smaller-is-better statistic is said so."""
        test = self.getOrDefault(self.test)
        if p_values is not None:
            p_values = np.where(np.isnan(p_values), 1.0, p_values)
        if test in MOMENT_FILTERS and not MOMENT_FILTERS[test].larger_is_better:
            info["score_direction"] = "the statistic is better when smaller: scores are its negation"
        return ScoreResult(scores=scores, p_values=p_values, label_values=labels, class_counts=counts.tolist(),
                           n_rows=int(n_rows), info=info, feature_arrays=feature_arrays)

    def _continuous_filter_scores(self, dataset, moment_filter: MomentFilter):
        """(ranking scores, p-values, rows) of a filter of a continuous target: one exact pass of
        the target moments; a constant feature scores 0 with p-value 1 (scikit-learn's
        ``force_finite``), a feature exactly linear in the target +inf with p-value 0."""
        moments = target_moments(dataset, self.getFeaturesCol(), self.getLabelCol())
        check_continuous_target(moments, self.getLabelCol())
        statistics, p_values = moment_filter.score(moments)
        statistics = np.asarray(statistics, dtype=np.float64)
        undefined = np.isnan(statistics)
        p_values = np.where(undefined, 1.0, np.asarray(p_values, dtype=np.float64))
        return ranking_scores(moment_filter, statistics), p_values, moments.n_rows

    def _moments_in_square_range(self, dataset, label_col: str, moments, moment_filter: MomentFilter, engine: str):
        """``moments`` with the features whose squares underflowed (1e-170: F = 0 / 0) taken again
        times a power of two (:func:`sparkfs.spark.stats.rescaled_class_moments`: one pass over
        those features, after the column extremes, which also decide which are constant), for a
        scale-free statistic; ``moments`` itself otherwise (no pass)."""
        underflowing = underflowing_squares(moments.class_weights, moments.class_sums, moments.class_sum_squares)
        if not (moment_filter.scale_free and underflowing.any()):
            return moments
        if moments.feature_min is None:
            minimum, maximum = self._column_extremes(dataset)
            if moments.feature_ids is not None:
                minimum, maximum = minimum[moments.feature_ids], maximum[moments.feature_ids]
            moments = replace(moments, feature_min=minimum, feature_max=maximum)
        return rescaled_class_moments(moments, dataset, self.getFeaturesCol(), label_col, self._weight_col(),
                                      engine=engine, underflowing=underflowing, pairwise=self._pairwise())

    def _scores_of_moments(self, dataset, moments, moment_filter: MomentFilter):
        """(ranking scores, p-values or None, feature arrays, rows) of a filter of the class moments
        (with the column minima when the filter refuses negative values); a constant feature's
        statistic is undefined (score 0 or last, p-value 1); other non-finite statistics name the
        bad input (:meth:`_defined_scores`) or stay (F = +inf separates the classes)."""
        if moment_filter.non_negative:
            self._refuse_negative_values(moments)
        # n_c: the class weight sums (the row counts without weights): weights are frequency weights; under
        # missing='pairwise' n_cj, the weights of the rows of class c where feature j is present
        counts = moments.class_weights if moments.class_present is None else moments.class_present
        statistics, p_values = moment_filter.score(counts, moments.class_sums, moments.class_sum_squares)
        statistics = np.asarray(statistics, dtype=np.float64)
        undefined = self._constant_features(dataset, moments)
        if moments.class_present is not None:  # too few present rows (or classes) for a feature: undefined
            undefined = undefined | np.isnan(statistics)
        if not np.all(np.isfinite(statistics[~undefined])) and moments.class_present is None:
            statistics = self._defined_scores(dataset, statistics)
        statistics = np.where(undefined, np.nan, statistics)
        if p_values is not None:
            p_values = np.where(undefined, 1.0, np.asarray(p_values, dtype=np.float64))
        spread = moments.per_feature  # the float engine on wide vectors holds the ids that occur only
        kept = {} if moment_filter.larger_is_better else {"statistics": spread(statistics)}
        return (spread(ranking_scores(moment_filter, statistics)), None if p_values is None else spread(p_values),
                kept, moments.n_rows)

    def _spark_ml_anova(self, dataset, indexed) -> np.ndarray:
        """Spark ML's own ``ANOVATest`` (``statsEngine="jvm"``): pyspark has no wrapper for it, so the JVM
        class UnivariateFeatureSelector uses is called; constant features score 0."""
        from pyspark.sql import DataFrame

        session = indexed.sparkSession
        java_test = session._jvm.org.apache.spark.ml.stat.ANOVATest
        result = DataFrame(java_test.test(indexed._jdf, self.getFeaturesCol(), "__label_index"), session)
        scores = self._constant_features_score_zero(dataset, result.first()["fValues"].toArray())
        return scores if np.all(np.isfinite(scores)) else self._defined_scores(dataset, scores)

    def _categorical_scores(self, dataset, indexed):
        """Spark ML's ``ChiSquareTest`` after the integrality pass: (statistics, p-values)."""
        from pyspark.ml.stat import ChiSquareTest

        self._refuse_non_integer_values(indexed)
        row = ChiSquareTest.test(indexed, self.getFeaturesCol(), "__label_index").first()
        scores = row["statistics"].toArray()
        if not np.all(np.isfinite(scores)):
            scores = self._defined_scores(dataset, scores)
        return scores, np.where(scores == 0.0, 1.0, row["pValues"].toArray())

    def _refuse_negative_values(self, moments) -> None:
        """A filter of sums of counts (chi2) refuses negative values, naming the first feature."""
        negative = np.flatnonzero(moments.feature_min < 0)
        if negative.size:
            first, column = moments.feature_id(int(negative[0])), int(negative[0])
            test = self.getOrDefault(self.test)
            raise InvalidInputError(
                f"{type(self).__name__} test='{test}' needs non-negative features (counts, frequencies, tf-idf): "
                f"{negative.size} feature(s) have negative values, e.g. feature {first} down to "
                f"{moments.feature_min[column]:.6g}; use test='anova' (method anova) for signed data"
            )

    def _refuse_non_integer_values(self, indexed) -> None:
        """chi2-categorical takes each distinct value as a category: refuse non-integer values
        (one pass) before Spark ML builds a contingency table per distinct value."""
        from pyspark.ml.functions import vector_to_array
        from pyspark.sql import functions as F

        values = vector_to_array(F.col(self.getFeaturesCol()))
        fractional = F.exists(values, lambda value: value != F.floor(value))
        found = indexed.where(fractional).select(values.alias("values")).first()
        if found is not None:
            position = next(i for i, value in enumerate(found["values"]) if value != np.floor(value))
            raise InvalidInputError(
                f"{type(self).__name__} test='chi2-categorical' (Spark ML's ChiSquareTest) takes every distinct "
                f"value as a category and needs integer-coded features; feature {position} has the value "
                f"{found['values'][position]!r}. For counts, frequencies or tf-idf use test='chi2' (method chi2)"
            )

    def _constant_features(self, dataset, moments) -> np.ndarray:
        """The features constant over all rows (min == max), which score 0. The exact engine has the
        column extremes; Spark's Summarizer is not asked for them per class (they doubled what its
        pass shuffles): the sums tell the features that cannot be constant
        (:func:`sparkfs.core.univariate.constant_feature_candidates`), and one global min / max pass
        decides the rest, only when there are any (none on term data, where a constant column is
        all zeros)."""
        if moments.feature_min is not None:
            return moments.feature_min == moments.feature_max
        zero, candidates = constant_feature_candidates(moments.class_weights, moments.class_sums,
                                                       moments.class_sum_squares)
        if not candidates.any():
            return zero
        minimum, maximum = self._column_extremes(dataset)
        if moments.feature_ids is not None:  # the held columns only (the float engine on wide vectors)
            minimum, maximum = minimum[moments.feature_ids], maximum[moments.feature_ids]
        return zero | (candidates & (minimum == maximum))

    def _column_extremes(self, dataset):
        """(column minima, column maxima) of the features over all rows (with weights: the rows of
        positive weight, those the moments count): one Summarizer pass."""
        weight_col = self._weight_col()
        if weight_col:
            from pyspark.sql import functions as F

            dataset = dataset.where(F.col(weight_col) > 0)
        return column_extremes(dataset, self.getFeaturesCol())

    def _weight_info(self, moments) -> dict:
        """The summary's word on the weights of a weighted fit: their total (the n of the degrees of
        freedom, frequency weights) and the column. Weights that sum to zero are refused."""
        if not self._weight_col():
            return {}
        if not moments.class_weights.any():
            raise InvalidInputError(f"{type(self).__name__}: the weights in column '{self._weight_col()}' sum to "
                                    "zero: every row has weight 0, so no row counts")
        return {"weight_col": self._weight_col(), "total_weight": float(moments.class_weights.sum())}

    def _constant_features_score_zero(self, dataset, scores) -> np.ndarray:
        """F of a constant feature is 0 / 0, but the sums of squares behind it are rounding noise,
        which gave any value (0 with two partitions, 24 with one, on the same rows): one JVM
        pass finds the constant features (min == max) and scores them 0."""
        if scores.size == 0:  # empty vectors: refused by the base's checks, with the rows named
            return scores
        try:
            minimum, maximum = self._column_extremes(dataset)
        except Exception:
            diagnose_input(dataset, self.getFeaturesCol(), self.getLabelCol())
            raise
        if minimum.shape != scores.shape:
            return scores
        return np.where(minimum == maximum, 0.0, scores)

    def _defined_scores(self, dataset, scores) -> np.ndarray:
        """Non-finite statistics: bad input is named (NaN/inf rows, values whose squares
        overflow); what remains is a constant feature (0 / 0), scored 0."""
        diagnose_input(dataset, self.getFeaturesCol(), self.getLabelCol(), self._weight_col())
        check_magnitude(*self._column_extremes(dataset), owner=type(self).__name__)
        return np.where(np.isnan(scores), 0.0, scores)


def _missing_info(moments) -> dict:
    """Under missing='pairwise': the summary's ``missing`` facts of the pass, the features that had NaN
    values (left out of their statistics) and the NaN values of the most affected feature."""
    if moments.missing_values is None:
        return {}
    missing = moments.per_feature(moments.missing_values)
    return {"missing": {"features_with_missing": int(np.count_nonzero(missing)),
                        "most_missing_in_a_feature": int(missing.max(initial=0))}}


def _rescaled_info(moments) -> dict:
    """The summary's word on features scored from their values times a power of two (feature id ->
    the exponent e of ``2^-e``), when there were any."""
    rescaled = moments.extra.get("rescaled")
    return {"rescaled_features": {str(feature): exponent for feature, exponent in rescaled.items()}} if rescaled else {}
