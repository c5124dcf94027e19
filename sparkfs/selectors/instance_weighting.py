"""Han & Yu's margin-based instance weighting as a pyspark.ml Transformer.

``MarginInstanceWeighter().transform(df)`` returns ``df`` with a column of instance weights
(eq. 7, summing to n), in the input's order, ready for any selector that takes ``weightCol``::

    weighted = MarginInstanceWeighter(outputCol="weight").transform(df)
    FisherMarkovSelector(weightCol="weight", numFeatures=50).fit(weighted)

The weights of a row depend on every other row (margin vectors against all hits and misses,
outlying degree against all margin vectors), so the weights are those of the DataFrame passed
to ``transform``: weighting a training fold and then a test fold gives each its own weights.
``transform`` runs the passes at once (like ``fit``); the result holds the weights, not a plan.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional

from pyspark.ml import Transformer
from pyspark.ml.param import Param, TypeConverters
from pyspark.ml.param.shared import HasFeaturesCol, HasLabelCol, HasOutputCol
from pyspark.ml.util import DefaultParamsReadable, DefaultParamsWritable, MLReader

from sparkfs.core.labels import check_class_labels
from sparkfs.core.options import MarginWeightOptions
from sparkfs.errors import DriverBudgetError, InvalidInputError
from sparkfs.selectors._model_io import ParamsReader
from sparkfs.selectors._params import MAX_BLOCK_SIZE, HasDeterministic, HasDriverBudget, declare, keyword_constructor
from sparkfs.spark.failures import with_resource_errors
from sparkfs.spark.instance_weighting import margin_instance_weights, with_instance_weights
from sparkfs.spark.method_setup import EngineOptions
from sparkfs.spark.stats import first_vector_size, label_counts, with_label_index

_LABEL_INDEX = "__sparkfs_label_index"


@keyword_constructor
class MarginInstanceWeighter(Transformer, HasDriverBudget, HasDeterministic, HasFeaturesCol, HasLabelCol, HasOutputCol,
                             DefaultParamsReadable, DefaultParamsWritable):
    """Instance weights of Han & Yu (2010), Algorithm 1: eq. (6) margin vectors against all hits
    and misses, outlying degree, eq. (7) weights scaled to sum to n.

    Params: ``featuresCol`` (vector), ``labelCol`` (class labels), ``outputCol`` (default
    "weight"), ``rowIdCol`` (unique integer ids; unset = row position), ``blockSize``,
    ``driverBudgetMB`` (default 2048: the rows and margin vectors held on the driver; refused
    before any pass above it), ``allowManyClasses``, ``deterministic`` (default False: weights equal
    across partitionings to rounding; True: the same bits, rows laid out by id). After ``transform``, :attr:`summary`
    holds the run's facts and :attr:`result` the arrays (ids, weights, outlying degrees).

    Cost: O(n^2 p) twice (margin vectors, then distances between them), spread over the
    partitions; the driver holds the rows and the n x p margin vectors.
    """

    rowIdCol: Param = declare("rowIdCol", "column of unique integer row ids; unset = row position",
                              TypeConverters.toString)
    blockSize: Param = declare("blockSize", "rows per kernel block in the tasks", TypeConverters.toInt, default=2048)
    allowManyClasses: Param = declare("allowManyClasses", "take every distinct label value as a class even when the "
                                      "label looks continuous", TypeConverters.toBoolean, default=False)
    _defaults = {"featuresCol": "features", "labelCol": "label", "outputCol": "weight", "driverBudgetMB": 2048.0}

    def _init_state(self) -> None:
        """After the keywords (:func:`keyword_constructor`): the last run's results."""
        self.summary: Dict[str, Any] = {}
        self.result = None

    @classmethod
    def read(cls) -> MLReader:
        """Params from metadata/, the class found among sparkfs's own (pyspark's default reader
        imports whatever module the file names), every param name and value checked."""
        return ParamsReader(cls)

    def _row_id_col(self) -> Optional[str]:
        return self.getOrDefault(self.rowIdCol) if self.isDefined(self.rowIdCol) else None

    def _validate(self, dataset) -> None:
        block_size = self.getOrDefault(self.blockSize)
        if isinstance(block_size, bool) or not isinstance(block_size, int) or not 1 <= block_size <= MAX_BLOCK_SIZE:
            raise ValueError(f"The 'blockSize' parameter of MarginInstanceWeighter must be an int in the range "
                             f"[1, {MAX_BLOCK_SIZE}]. Got {block_size!r} instead.")
        budget = self.getOrDefault(self.driverBudgetMB)
        if not (math.isfinite(budget) and budget > 0):
            raise ValueError(f"The 'driverBudgetMB' parameter of MarginInstanceWeighter must be a finite float in the "
                             f"range (0, inf). Got {budget!r} instead.")
        wanted = [self.getFeaturesCol(), self.getLabelCol()] + ([self._row_id_col()] if self._row_id_col() else [])
        missing = [name for name in wanted if name not in dataset.columns]
        if missing:
            raise InvalidInputError(f"column(s) {missing} not found; the input has columns {dataset.columns}")
        if self.getOutputCol() in dataset.columns:
            raise InvalidInputError(f"column '{self.getOutputCol()}' already exists in the input; "
                                    "set outputCol to another name")

    def _transform(self, dataset):
        self._validate(dataset)
        labels, counts = label_counts(dataset, self.getLabelCol())
        if not labels:
            raise InvalidInputError("the input has no rows")
        if len(labels) < 2:
            raise InvalidInputError(
                f"margin instance weighting needs at least two classes (eq. 6 sums over the misses); the input "
                f"has only label {labels[0]!r} in column '{self.getLabelCol()}' ({int(counts[0])} rows)")
        check_class_labels(labels, counts, self.getLabelCol(), self.getOrDefault(self.allowManyClasses))
        num_features = first_vector_size(dataset, self.getFeaturesCol())
        needed_mb = 2 * 8.0 * int(counts.sum()) * num_features / 2**20
        budget_mb = self.getOrDefault(self.driverBudgetMB)
        if needed_mb > budget_mb:
            raise DriverBudgetError(
                f"margin instance weighting holds the {int(counts.sum())} x {num_features} rows and their margin "
                "vectors "
                f"on the driver ({needed_mb:.0f} MiB), above driverBudgetMB={budget_mb:g}: raise driverBudgetMB "
                "(sparkfs instance-weights --driver-budget-mb; and spark.driver.memory with it), or weight a sample of "
                "the rows")
        indexed = with_label_index(dataset, self.getLabelCol(), labels, _LABEL_INDEX)
        # the driver budget is checked above, for the rows and their margin vectors together
        engine = EngineOptions(row_id_col=self._row_id_col(), canonical=self.getDeterministic())
        options = MarginWeightOptions(block_size=self.getOrDefault(self.blockSize))
        result = with_resource_errors(lambda: margin_instance_weights(
            indexed, self.getFeaturesCol(), _LABEL_INDEX, num_features=num_features, num_classes=len(labels),
            options=options, engine=engine))
        self.result = result
        self.summary = {
            "method": "margin instance weighting (Han & Yu 2010, eqs. 6-7)",
            "n_rows": result.n_rows,
            "class_counts": {str(label): int(count) for label, count in zip(labels, counts)},
            "weight_sum": float(result.weights.sum()),
            "weight_min": float(result.weights.min()),
            "weight_max": float(result.weights.max()),
            "row_ids": result.info["row_ids"],
            "passes": result.info["passes"],
            "deterministic": self.getDeterministic(),
        }
        return with_instance_weights(dataset, result, self.getOutputCol(), row_id_col=self._row_id_col())
