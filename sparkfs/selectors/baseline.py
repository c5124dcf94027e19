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
"""

from __future__ import annotations

import numpy as np
from pyspark import keyword_only
from pyspark.ml.param import Param, Params, TypeConverters

from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, PreparedInput, ScoreResult
from sparkfs.selectors._params import HasStatsEngine, one_of
from sparkfs.core.scaling import check_magnitude
from sparkfs.errors import InvalidInputError
from sparkfs.core.univariate import (anova_f_values, anova_p_values, chi2_p_values, chi2_statistics,
                                     constant_feature_candidates)
from sparkfs.spark.blocks import is_connect_session
from sparkfs.spark.stats import class_moments, diagnose_input


class _UnivariateParams(HasStatsEngine):
    test: Param = Param(Params._dummy(), "test",
                        "'anova' (F value), 'chi2' (scikit-learn's chi-squared of class sums, non-negative features) "
                        "or 'chi2-categorical' (Spark ML's ChiSquareTest, integer-coded categorical features)",
                        typeConverter=TypeConverters.toString)
    _param_constraints = {"test": one_of("anova", "chi2", "chi2-categorical")}

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(test="anova")

    def hasPValues(self) -> bool:
        """Every test has p-values, so fpr, fdr and fwe are selection modes here. (The Estimator and
        the Model name it again: SelectorParams' False comes first in their method order.)"""
        return True


class UnivariateTestSelectorModel(FeatureSelectorModel, _UnivariateParams):
    """Model of :class:`UnivariateTestSelector`: ``scores`` are F values or chi-squared statistics,
    ``pValues`` their p-values."""

    #: F is +inf for a feature constant within each class that still separates them.
    _scores_may_be_infinite = True
    hasPValues = _UnivariateParams.hasPValues


class UnivariateTestSelector(FeatureSelector, _UnivariateParams):
    """A univariate test as a sparkfs selector (see the module doc for the three tests).

    Scores: the F value (anova; its order equals the p-value order Spark ML uses, since every
    feature has the same degrees of freedom), scikit-learn's chi-squared statistic (chi2; every
    feature has C - 1 degrees of freedom, so the order is the p-value order too) or Spark ML's
    contingency chi-squared statistic (chi2-categorical; Spark ML ranks by p-value, whose degrees
    of freedom vary with each feature's number of distinct values: the rankings can differ). A
    constant feature (F = 0 / 0) and an all-zero feature under chi2 (0 / 0) score 0; NaN or
    infinite inputs and values whose squares overflow are refused with the rows or the feature named.
    """

    _model_class = UnivariateTestSelectorModel
    hasPValues = _UnivariateParams.hasPValues

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", outputCol="selected_features",
                 numFeatures=None, threshold=None, selectionMode=None, selectionThreshold=None,
                 weightCol=None, test="anova", statsEngine="auto",
                 allowManyClasses=False, deterministic=False):
        super().__init__()
        self._set(**{name: value for name, value in self._input_kwargs.items() if value is not None})

    _no_weights_message = "{name} does not support weightCol (Spark ML's tests are unweighted)"
    _sizes_vectors = False  # Spark ML's tests and the moments pass read the vectors themselves

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        from pyspark.ml.stat import ChiSquareTest
        from pyspark.sql import DataFrame

        dataset, indexed = prepared.dataset, prepared.indexed
        labels, counts = prepared.label_values, prepared.class_counts
        test, engine = self.getOrDefault(self.test), self.statsEngineInUse()
        spark_ml_anova = self.getOrDefault(self.statsEngine) == "jvm" and not is_connect_session(indexed.sparkSession)
        categorical_p_values = None
        try:
            if test == "chi2":
                scores = self._chi2_scores(indexed, engine)
            elif test == "anova" and not spark_ml_anova:
                # Moments: exact (arrow) or Summarizer's (jvm; also on Spark Connect, which has no JVM access).
                moments = class_moments(indexed, self.getFeaturesCol(), "__label_index", engine=engine,
                                        extremes=False)
                scores = anova_f_values(moments.class_counts, moments.class_sums, moments.class_sum_squares)
                scores = np.where(self._constant_features(indexed, moments), 0.0, scores)
            elif test == "anova":
                # pyspark has no wrapper for ml.stat.ANOVATest: call the JVM class UnivariateFeatureSelector uses.
                session = indexed.sparkSession
                java_test = session._jvm.org.apache.spark.ml.stat.ANOVATest
                result = DataFrame(java_test.test(indexed._jdf, self.getFeaturesCol(), "__label_index"), session)
                scores = self._constant_features_score_zero(dataset, result.first()["fValues"].toArray())
            else:
                self._refuse_non_integer_values(indexed)
                row = ChiSquareTest.test(indexed, self.getFeaturesCol(), "__label_index").first()
                scores = row["statistics"].toArray()
                categorical_p_values = row["pValues"].toArray()
        except (InvalidInputError, ValueError):
            raise
        except Exception:  # a failed JVM test: name the bad input if there is one
            diagnose_input(dataset, self.getFeaturesCol(), self.getLabelCol())
            raise
        if not np.all(np.isfinite(scores)):
            scores = self._defined_scores(dataset, scores)
        if test == "anova":
            p_values = anova_p_values(scores, counts)
        elif test == "chi2":
            p_values = chi2_p_values(scores, len(labels))
        else:
            p_values = np.where(scores == 0.0, 1.0, categorical_p_values)
        return ScoreResult(
            scores=scores, p_values=np.where(np.isnan(p_values), 1.0, p_values), label_values=labels,
            class_counts=counts.tolist(), n_rows=int(counts.sum()),
            info={"method": test, **({"stats_engine": engine} if test in ("anova", "chi2") else {})},
        )

    def _chi2_scores(self, indexed, engine: str) -> np.ndarray:
        """scikit-learn's chi2 from one pass of class sums; negative values are refused (the
        statistic compares sums of counts), an all-zero feature (0 / 0) scores 0."""
        moments = class_moments(indexed, self.getFeaturesCol(), "__label_index", engine=engine)
        negative = np.flatnonzero(moments.feature_min < 0)
        if negative.size:
            first = int(negative[0])
            raise InvalidInputError(
                f"{type(self).__name__} test='chi2' needs non-negative features (counts, frequencies, tf-idf): "
                f"{negative.size} feature(s) have negative values, e.g. feature {first} down to "
                f"{moments.feature_min[first]:.6g}; use test='anova' (method anova) for signed data"
            )
        scores = chi2_statistics(moments.class_counts, moments.class_sums)
        return np.where(np.isnan(scores), 0.0, scores)

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
        zero, candidates = constant_feature_candidates(moments.class_counts, moments.class_sums,
                                                       moments.class_sum_squares)
        if not candidates.any():
            return zero
        minimum, maximum = self._column_extremes(dataset)
        return zero | (candidates & (minimum == maximum))

    def _column_extremes(self, dataset):
        from pyspark.ml.stat import Summarizer
        from pyspark.sql import functions as F

        summary = dataset.select(Summarizer.metrics("min", "max").summary(F.col(self.getFeaturesCol()))
                                 .alias("s")).first()["s"]
        return summary["min"].toArray(), summary["max"].toArray()

    def _constant_features_score_zero(self, dataset, scores) -> np.ndarray:
        """F of a constant feature is 0 / 0, but the sums of squares behind it are rounding noise,
        which gave any value (0 with two partitions, 24 with one, on the same rows): one JVM
        pass finds the constant features (min == max) and scores them 0."""
        from pyspark.ml.stat import Summarizer
        from pyspark.sql import functions as F

        if scores.size == 0:  # empty vectors: refused by the base's checks, with the rows named
            return scores
        try:
            summary = dataset.select(Summarizer.metrics("min", "max").summary(F.col(self.getFeaturesCol()))
                                     .alias("s")).first()["s"]
        except Exception:
            diagnose_input(dataset, self.getFeaturesCol(), self.getLabelCol())
            raise
        minimum, maximum = summary["min"].toArray(), summary["max"].toArray()
        if minimum.shape != scores.shape:
            return scores
        return np.where(minimum == maximum, 0.0, scores)

    def _defined_scores(self, dataset, scores) -> np.ndarray:
        """Non-finite statistics: bad input is named (NaN/inf rows, values whose squares
        overflow); what remains is a constant feature (0 / 0), scored 0."""
        from pyspark.ml.stat import Summarizer
        from pyspark.sql import functions as F

        diagnose_input(dataset, self.getFeaturesCol(), self.getLabelCol())
        summary = dataset.select(
            Summarizer.metrics("min", "max").summary(F.col(self.getFeaturesCol())).alias("s")).first()["s"]
        check_magnitude(summary["min"].toArray(), summary["max"].toArray(), owner=type(self).__name__)
        return np.where(np.isnan(scores), 0.0, scores)
