"""mRMR, JMI and CMIM as one pyspark.ml selector (:mod:`sparkfs.core.information`)."""

from __future__ import annotations

import warnings

import numpy as np
from pyspark.ml.param import Param, TypeConverters

from sparkfs.core import information as info_math
from sparkfs.core.options import DISCRETIZATIONS, InformationOptions
from sparkfs.core.param_caps import MAX_BIN_SAMPLE, MAX_BINS
from sparkfs.errors import InvalidInputError, ParamBoundError, SelectionTieWarning
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, PreparedInput, ScoreResult
from sparkfs.selectors._params import (
    HasDriverBudget,
    UpperBound,
    declare,
    in_range,
    is_int,
    keyword_constructor,
    one_of,
)
from sparkfs.spark.information import information_selection
from sparkfs.spark.method_setup import EngineOptions


class _InformationParams(HasDriverBudget):
    criterion: Param = declare("criterion", "'mrmr' (Peng et al. 2005), 'jmi' (Yang & Moody 1999) or 'cmim' (Fleuret "
                               "2004)", TypeConverters.toString, default="mrmr",
                               constraint=one_of(*info_math.CRITERIA))
    mrmrForm: Param = declare("mrmrForm", "mrmr: 'difference' (MID: relevance - mean redundancy) or 'quotient' (MIQ: "
                              "relevance / mean redundancy)", TypeConverters.toString, default="difference",
                              constraint=one_of(*info_math.MRMR_FORMS))
    bins: Param = declare("bins", "codes per feature: exact zero is code 0, the non-zero values are cut into bins - 1 "
                          "equal-frequency bins (or the values are the codes, discretization='none')",
                          TypeConverters.toInt, default=10, constraint=in_range(2, MAX_BINS, kind="an int"))
    discretization: Param = declare("discretization", "'equal-frequency' (cut points from a sample of binSampleSize "
                                    "rows) or 'none' (the values are integer codes in [0, bins))",
                                    TypeConverters.toString, default="equal-frequency",
                                    constraint=one_of(*DISCRETIZATIONS))
    binSampleSize: Param = declare("binSampleSize", "rows drawn by `seed` (by content: the same rows for any "
                                   "partitioning) for the cut points; all rows when fewer", TypeConverters.toInt,
                                   default=10_000, constraint=in_range(1, MAX_BIN_SAMPLE, kind="an int"))
    seed: Param = declare("seed", "seed of the cut points' sample", TypeConverters.toInt, default=0,
                          constraint=is_int())
    _defaults = {"driverBudgetMB": 2048.0}


class InformationSelectorModel(FeatureSelectorModel, _InformationParams):
    """Model of :class:`InformationSelector`: ``scores`` rank the selection order (m for the first
    of m chosen, down to 1; 0 for the others); ``featureArray("relevance")`` holds I(X_j; Y) and
    ``summary["selection_criterion"]`` each chosen feature's criterion when it was chosen."""

    @property
    def selectionOrder(self):
        """The selected features in the order the greedy search chose them."""
        return [int(j) for j in np.argsort(-self._scores, kind="mergesort")[: int((self._scores > 0).sum())]]


@keyword_constructor
class InformationSelector(FeatureSelector, _InformationParams):
    """Greedy forward selection by mutual information: mRMR, JMI or CMIM (``criterion``).

    The features are discretised first (``bins`` codes; an exact zero is its own code, so sparse
    rows stay sparse and the work follows the non-zeros; :mod:`sparkfs.core.information` note 1).
    Relevance I(X_j; Y) comes from one pass of counts; each further feature from one pass that
    counts the codes of the last chosen feature jointly with every candidate's. ``numFeatures``
    features are chosen (or the ``selectionMode="percentile"`` share; a greedy selection has no
    score threshold and no p-values); counts are integers, so the
    result is the same for any partitioning. Information is in nats (scikit-learn's
    ``mutual_info_score``).

    Instance weights (``weightCol``) are frequency weights: every count is a sum of weights and the
    cut points are weighted quantiles (:mod:`sparkfs.core.information` note 6), so an integer
    weight w counts the row w times; the same selection for any partitioning with integer weights,
    to rounding with others. The search starts from the kept features (``keptFeatures``, in the
    order given; each recorded with its relevance as its criterion), so the next feature is chosen
    given them, and never takes an excluded one.
    """

    _model_class = InformationSelectorModel
    _not_keywords = ("threshold",)  # a greedy selection has no score cut
    takes_weights = True

    def _data_bounds(self, shape):
        bins, budget_mb = self.getOrDefault(self.bins), self.getDriverBudgetMB()
        cells_per_bin_squared = max(shape.num_features * len(shape.class_counts), 1)
        limit = int((budget_mb * 2**20 / 8 / cells_per_bin_squared) ** 0.5)
        if limit < 2:  # no bins value fits: name the settings that do, not "bins at most 0"
            least_mb = 8 * 4 * cells_per_bin_squared / 2**20
            at_two, at_bins = max(1, int(np.ceil(least_mb))), max(1, int(np.ceil(least_mb * bins * bins / 4)))
            raise ParamBoundError(
                f"{type(self).__name__}: a step's joint counts (features x bins^2 x classes, 8 bytes a cell) do not "
                f"fit driverBudgetMB={budget_mb:g} with any bins on {shape.num_features:,} features and "
                f"{len(shape.class_counts)} classes: raise driverBudgetMB to at least {at_two:,} "
                f"(bins=2; {at_bins:,} for bins={bins}), or keep fewer features first (anova or chi2 "
                "with --num-features)")
        per_pass = shape.num_features * bins ** 2 * len(shape.class_counts)
        return [UpperBound("bins", bins, limit,
                           f"the joint counts of a step (features x bins^2 x classes = {per_pass:,} cells, 8 bytes "
                           f"each) within driverBudgetMB={budget_mb:g}")]

    def _check_fit_params(self) -> None:
        if self.isSet(self.threshold):
            raise ValueError(f"{type(self).__name__}: a greedy selection has no score threshold; set numFeatures "
                             "instead")

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        name = type(self).__name__
        num_features, indexed = prepared.num_features, prepared.indexed
        num_select = min(self.selectionCount(num_features), num_features)  # numFeatures, or the percentile's share
        if num_select < 1:
            raise InvalidInputError(f"{name}: selectionThreshold={self.getSelectionThreshold()} of {num_features} "
                                    "features keeps none; raise it")
        options = InformationOptions(
            num_select=num_select, criterion=self.getOrDefault(self.criterion), form=self.getOrDefault(self.mrmrForm),
            bins=self.getOrDefault(self.bins), discretization=self.getOrDefault(self.discretization),
            sample_size=self.getOrDefault(self.binSampleSize), seed=self.getOrDefault(self.seed))
        result = information_selection(indexed, self.getFeaturesCol(), prepared.label_col, num_features=num_features,
                                       num_classes=prepared.num_classes, options=options,
                                       engine=EngineOptions(driver_budget_mb=self.getDriverBudgetMB(), canonical=False,
                                                            weight_col=self._weight_col()),
                                       keep=self.getKeptFeatures(), exclude=self.getExcludedFeatures())
        if result.tied_steps:
            warnings.warn(f"{name}: {result.tied_steps} of {len(result.order)} greedy steps were decided by equal "
                          "criterion values (to rounding; then the larger relevance, then the lower index); see "
                          "summary['tie_sizes']", SelectionTieWarning, stacklevel=2)
        info = {"method": self.getOrDefault(self.criterion), "selection_order": [int(j) for j in result.order],
                "selection_criterion": [float(value) for value in result.criterion],
                "tied_steps": int(result.tied_steps), "tie_sizes": [int(size) for size in result.tie_sizes],
                "bins": self.getOrDefault(self.bins),
                "discretization": self.getOrDefault(self.discretization), **result.info}
        if self._weight_col():
            info["weight_col"] = self._weight_col()
        if self.getOrDefault(self.criterion) == "mrmr":
            info["mrmr_form"] = self.getOrDefault(self.mrmrForm)
        return prepared.result(info_math.order_scores(result.order, num_features),
                               selected=np.asarray(result.order, dtype=np.int64), info=info,
                               feature_arrays={"relevance": result.relevance})
