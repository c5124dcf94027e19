"""Lmba and its baseline Simba (Li & Lu 2009; Gilad-Bachrach, Navot & Tishby 2004): iterative
margin-based feature weighting, one Spark job per mini-batch step."""

from __future__ import annotations

import numpy as np
from pyspark import keyword_only
from pyspark.ml.param import Param, Params, TypeConverters

from sparkfs.errors import InvalidInputError
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, ScoreResult
from sparkfs.selectors._params import (
    MAX_BLOCK_SIZE,
    MAX_PICKED_INSTANCES,
    HasDriverBudget,
    HasScaling,
    UpperBound,
    in_range,
    neighbour_bounds,
    one_of,
)
from sparkfs.spark.margin_weighting import lmba_statistics, simba_statistics
from sparkfs.spark.stats import first_vector_size, label_counts, with_label_index


#: Lmba's default instances per step (Spark job): with the "replay" rule a batch of 8 kept the
#: batch-1 ranking on mfeat and tr11 (docs/lmba_batch_rule.md) at an eighth of the jobs.
LMBA_DEFAULT_BATCH = 8
#: Passes over the pool that ``iterations`` (and ``batchSize``) may ask for: the papers pick each
#: pool instance about once (Li & Lu's I = the pool size); a hundred passes is far beyond them.
MAX_POOL_PASSES = 100
#: Instance-row distances a fit may compute (iterations x rows, each over every feature): 10^12
#: is hours of a large cluster's time; beyond it a run is not expected to end.
MAX_INSTANCE_ROW_PAIRS = 10**12


def _int(name, doc):
    return Param(Params._dummy(), name, doc, typeConverter=TypeConverters.toInt)


class _IterativeParams(HasScaling, HasDriverBudget):
    iterations: Param = _int("iterations", "instances picked in total (the paper's I); unset = the pool size")
    batchSize: Param = _int("batchSize", "instances per step (one Spark job); 1 = the paper's per-instance update")
    sampleSize: Param = _int("sampleSize", "pool of instances to pick from, drawn by `seed`; unset = every row")
    seed: Param = _int("seed", "seed of the pool and of the order in which instances are picked")
    rowIdCol: Param = Param(Params._dummy(), "rowIdCol", "column of unique integer row ids; unset = row position",
                            typeConverter=TypeConverters.toString)
    blockSize: Param = _int("blockSize", "rows per block of the distance computation")
    _param_constraints = {
        "iterations": in_range(1, MAX_PICKED_INSTANCES, kind="an int"),
        "batchSize": in_range(1, MAX_PICKED_INSTANCES, kind="an int"),
        "sampleSize": in_range(1, kind="an int"),
        "seed": (lambda v: isinstance(v, int), "an int"),
        "blockSize": in_range(1, MAX_BLOCK_SIZE, kind="an int"),
    }

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(batchSize=1, seed=0, blockSize=2048, scaling="none", driverBudgetMB=2048.0)

    def _optional(self, param):
        return self.getOrDefault(param) if self.isDefined(param) else None

    def _iterative_bounds(self, shape):
        """Picks (iterations, and a batch) within MAX_POOL_PASSES passes over the pool and
        MAX_INSTANCE_ROW_PAIRS distances; Lmba's k as the Relief family's."""
        pool = shape.n_rows if self._optional(self.sampleSize) is None else min(self.getOrDefault(self.sampleSize),
                                                                                   shape.n_rows)
        passes = f"{MAX_POOL_PASSES} passes over the pool of {pool:,} instances (sampleSize, else the rows)"
        bounds = [UpperBound("batchSize", self.getOrDefault(self.batchSize), MAX_POOL_PASSES * pool, passes)]
        if self.isDefined(self.iterations):
            iterations = self.getOrDefault(self.iterations)
            bounds += [UpperBound("iterations", iterations, MAX_POOL_PASSES * pool, passes),
                       UpperBound("iterations", iterations, MAX_INSTANCE_ROW_PAIRS // shape.n_rows,
                                  f"each picked instance is compared with all {shape.n_rows:,} rows, and a fit "
                                  f"computes at most {MAX_INSTANCE_ROW_PAIRS:.0e} such distances")]
        if self.hasParam("k"):
            bounds += neighbour_bounds(self.getOrDefault("k"), pool, shape, self.getDriverBudgetMB())
        return bounds

    def _common_args(self):
        return dict(iterations=self._optional(self.iterations), batch_size=self.getOrDefault(self.batchSize),
                    sample_size=self._optional(self.sampleSize), seed=self.getOrDefault(self.seed),
                    scaling=self.getScaling(), row_id_col=self._optional(self.rowIdCol),
                    block_size=self.getOrDefault(self.blockSize), driver_budget_mb=self.getDriverBudgetMB())


class _LmbaParams(_IterativeParams):
    k: Param = _int("k", "target neighbours per instance (k nearest of its class)")
    c: Param = Param(Params._dummy(), "c", "weight of the hinge (impostor) term of eq. 3", typeConverter=TypeConverters.toFloat)
    stepSize: Param = Param(Params._dummy(), "stepSize", "beta of Step 3(d) (the first one with 'decay')",
                            typeConverter=TypeConverters.toFloat)
    schedule: Param = Param(Params._dummy(), "schedule", "'constant' (beta_t = stepSize, the paper's experiments) or "
                            "'decay' (stepSize / sqrt(t + 1))", typeConverter=TypeConverters.toString)
    projection: Param = Param(Params._dummy(), "projection", "'none' (the update as printed) or 'clip' (w to [0, 1] "
                              "after each step)", typeConverter=TypeConverters.toString)
    batchRule: Param = Param(Params._dummy(), "batchRule", "how a batch moves w: 'replay' (each instance's own step "
                             "in turn, hinge sets from the batch's first w) or 'sum' (one step along the summed "
                             "gradient); the same for batchSize=1. See docs/lmba_batch_rule.md",
                             typeConverter=TypeConverters.toString)
    _param_constraints = {
        **_IterativeParams._param_constraints,
        "k": in_range(1, kind="an int"),
        "c": in_range(0.0, low_open=True),
        "stepSize": in_range(0.0, low_open=True),
        "schedule": one_of("constant", "decay"),
        "projection": one_of("none", "clip"),
        "batchRule": one_of("replay", "sum"),
    }

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(k=3, c=1.0, stepSize=1.0, schedule="constant", projection="none", batchRule="replay",
                         batchSize=LMBA_DEFAULT_BATCH)


def _fit_indexed(selector, dataset, compute, info):
    if selector._weight_col():
        raise ValueError(f"{type(selector).__name__} does not support weightCol")
    labels, counts = label_counts(dataset, selector.getLabelCol())
    if not labels:
        raise InvalidInputError("the input has no rows")
    if len(labels) < 2:
        return ScoreResult(scores=np.zeros(0), label_values=labels, class_counts=counts.tolist(), n_rows=int(counts.sum()))
    selector._check_labels(labels, counts)
    num_features = first_vector_size(dataset, selector.getFeaturesCol())
    selector._check_data_bounds(int(counts.sum()), counts, num_features)
    indexed = with_label_index(dataset, selector.getLabelCol(), labels, "__label_index")
    result = compute(indexed, "__label_index", num_features, len(labels))
    summary = {**info, "steps": int(result.steps), "n_pool": int(result.n_pool), **result.info}
    return ScoreResult(scores=result.scores, label_values=labels, class_counts=counts.tolist(),
                       n_rows=int(counts.sum()), info=summary, feature_arrays={"raw_weights": result.raw_weights})


class LmbaSelectorModel(FeatureSelectorModel, _LmbaParams):
    """Model of :class:`LmbaSelector`: ``scores`` = |w| / max |w|; ``featureArray("raw_weights")`` = w."""


class LmbaSelector(FeatureSelector, _LmbaParams):
    """Lmba (Li & Lu 2009): feature weights minimising the loss-margin of k-NN classification (eq. 3)
    by normalised gradient steps (eq. 16-17, Step 3d), features ranked by |w|.

    Target neighbours and theta (eq. 2) are found once, in the original metric (Step 2); each
    step picks ``batchSize`` instances, and every partition adds the hinge terms of its rows of
    other classes. ``batchSize=1`` is the paper's procedure (one Spark job per instance). The
    default, 8 instances per job with ``batchRule="replay"``, takes the same per-instance steps
    but finds each batch's active hinge pairs at the batch's first w (``docs/lmba_batch_rule.md``:
    it kept the batch-1 ranking on mfeat and tr11; summing the gradients, ``batchRule="sum"``, did
    not). See :mod:`sparkfs.core.margin_weighting` for the equations and the choices the paper
    leaves open.

    Notes
    -----
    Per step: O(batchSize x n x D) multiply-adds (two GEMMs; O(batchSize x nnz) on sparse rows) and
    O(batchSize x k x n) comparisons in the workers, O(batchSize x k x D) on the driver; the pool
    and its targets' vectors (at most pool x (k + 1) rows, CSR kept CSR) are kept on the driver.
    """

    _model_class = LmbaSelectorModel

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", outputCol="selected_features", numFeatures=None,
                 threshold=None, selectionMode=None, selectionThreshold=None,
                 k=3, c=1.0, iterations=None, batchSize=LMBA_DEFAULT_BATCH, stepSize=1.0,
                 schedule="constant", projection="none", sampleSize=None, seed=0, scaling="none", rowIdCol=None,
                 blockSize=2048, allowManyClasses=False, batchRule="replay", driverBudgetMB=2048.0):
        super().__init__()
        self._set(**{name: value for name, value in self._input_kwargs.items() if value is not None})

    def _data_bounds(self, shape):
        return self._iterative_bounds(shape)

    def _compute_scores(self, dataset) -> ScoreResult:
        def compute(indexed, label_col, num_features, num_classes):
            return lmba_statistics(
                indexed, self.getFeaturesCol(), label_col, num_features=num_features, num_classes=num_classes,
                k=self.getOrDefault(self.k), c=self.getOrDefault(self.c), step_size=self.getOrDefault(self.stepSize),
                schedule=self.getOrDefault(self.schedule), projection=self.getOrDefault(self.projection),
                batch_rule=self.getOrDefault(self.batchRule), **self._common_args())

        info = {"method": "lmba", "k": self.getOrDefault(self.k), "c": self.getOrDefault(self.c),
                "batch_size": self.getOrDefault(self.batchSize), "projection": self.getOrDefault(self.projection),
                "batch_rule": self.getOrDefault(self.batchRule)}
        return _fit_indexed(self, dataset, compute, info)


class SimbaSelectorModel(FeatureSelectorModel, _IterativeParams):
    """Model of :class:`SimbaSelector`: ``scores`` = w^2 / max w^2; ``featureArray("raw_weights")`` = w."""


class SimbaSelector(FeatureSelector, _IterativeParams):
    """Simba (Gilad-Bachrach, Navot & Tishby 2004), the baseline of Li & Lu: per picked instance,
    the nearest hit and miss in the current weighted metric move w along the hypothesis-margin
    gradient; finally w^2 / max w^2. One Spark job (a weighted search with the neighbours'
    vectors) per step of ``batchSize`` instances; ``batchSize=1`` is the original algorithm.
    """

    _model_class = SimbaSelectorModel

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", outputCol="selected_features", numFeatures=None,
                 threshold=None, selectionMode=None, selectionThreshold=None,
                 iterations=None, batchSize=1, sampleSize=None, seed=0, scaling="none", rowIdCol=None,
                 blockSize=2048, allowManyClasses=False, driverBudgetMB=2048.0):
        super().__init__()
        self._set(**{name: value for name, value in self._input_kwargs.items() if value is not None})

    def _data_bounds(self, shape):
        return self._iterative_bounds(shape)

    def _compute_scores(self, dataset) -> ScoreResult:
        def compute(indexed, label_col, num_features, num_classes):
            return simba_statistics(indexed, self.getFeaturesCol(), label_col, num_features=num_features,
                                    num_classes=num_classes, **self._common_args())

        info = {"method": "simba", "batch_size": self.getOrDefault(self.batchSize)}
        return _fit_indexed(self, dataset, compute, info)
