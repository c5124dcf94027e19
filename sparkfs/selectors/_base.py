"""The shared Estimator/Model of every sparkfs selector.

A selector subclass computes scores (and, where its test has them, p-values) only
(``_compute_scores``, handed a :class:`PreparedInput`: the fit's shared preamble, done once here, has
counted the labels, refused an empty input, checked the classes, read the vector size, checked the
Params against the input and indexed the labels). What a method can do (labels optional, instance
weights, a weight path) is declared as class attributes of :class:`FeatureSelector` and read by the
commands. :class:`FeatureSelector` applies the selection rule (``selectionMode``: top
``numFeatures`` or ``score > threshold``, percentile, fpr, fdr, fwe) for all of them, and
:class:`FeatureSelectorModel` slices the vector column (JVM-side ``VectorSlicer``) and persists as
params metadata plus a ``data/`` Parquet file, like Spark ML models (no pickle).
"""

from __future__ import annotations

import json
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
from pyspark.ml import Estimator, Model
from pyspark.ml.util import DefaultParamsWriter, MLReadable, MLReader, MLWritable, MLWriter

from sparkfs.core.selection import (
    forced_first,
    forced_selection,
    free_ties,
    rank_features,
    select_by_p_values,
    select_features,
    select_percentile,
    ties_warning,
)
from sparkfs.errors import DefaultSampleWarning, InvalidInputError, SelectionTieWarning
from sparkfs.selectors._missing import input_under_policy
from sparkfs.selectors._model_files import unloadable_scores
from sparkfs.selectors._model_io import ParamsReader, SelectorModelReader, SelectorModelWriter
from sparkfs.selectors._params import HasLabelType, InputShape, SelectorParams, UpperBound
from sparkfs.spark.failures import with_resource_errors
from sparkfs.spark.memory import observe_driver_memory
from sparkfs.spark.method_setup import EngineOptions
from sparkfs.spark.stats import first_vector_size, label_counts, with_label_index

#: The class index column (0..C-1) the preamble adds to the input.
LABEL_INDEX = "__label_index"


#: The advice of a default sample's warning (:meth:`FeatureSelector._warn_default_sample`).
CHOOSE_SAMPLE = "set sampleSize to choose (a value >= the rows uses every row)"

@dataclass
class ScoreResult:
    """What a selector's scoring pass returns to the shared ``fit``."""

    scores: np.ndarray
    #: One upper-tail p-value per feature, for the selectors whose test has them (``hasPValues``).
    p_values: Optional[np.ndarray] = None
    label_values: List[Any] = field(default_factory=list)
    class_counts: List[int] = field(default_factory=list)
    n_rows: int = 0
    #: Selectors whose selection is not "top k by score" (QFS: an MRF optimum) set it themselves.
    selected: Optional[np.ndarray] = None
    #: Extra per-run facts for the summary (JSON-serialisable), e.g. gamma bounds, certificates.
    info: Dict[str, Any] = field(default_factory=dict)
    #: Extra per-feature arrays stored with the model (e.g. Relief's normalised weights).
    feature_arrays: Dict[str, np.ndarray] = field(default_factory=dict)
    #: Driver-side objects the fitted model keeps for this session only (never saved), e.g. the
    #: QFS objective that :meth:`FeatureSelectorModel.selectionsForCounts` re-solves per size.
    session_state: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PreparedInput:
    """What the fit's shared preamble (:meth:`FeatureSelector._prepare`) learnt of the input, handed
    to each selector's ``_compute_scores``.

    With labels, ``indexed`` is the input with the class index 0..C-1 (in the order of
    ``label_values``) in the column ``label_col``; without labels (a method that runs without
    them, :attr:`FeatureSelector.requires_labels` False) both are None and ``label_values`` and
    ``class_counts`` are empty.
    """

    #: The input as given.
    dataset: Any
    #: The input with the class index column, or None without labels.
    indexed: Any
    #: The class index column (:data:`LABEL_INDEX` unless the selector names another), or None.
    label_col: Optional[str]
    label_values: List[Any]
    class_counts: np.ndarray
    #: The rows, or None where the method's own pass counts them (no labels to count, no bounds).
    n_rows: Optional[int]
    #: The vector size, or None for a selector that does not read it first (``_sizes_vectors``).
    num_features: Optional[int]

    @property
    def num_classes(self) -> int:
        return len(self.label_values)

    def result(self, scores, **facts) -> ScoreResult:
        """A :class:`ScoreResult` with this input's labels, class counts and rows."""
        return ScoreResult(scores=scores, label_values=list(self.label_values),
                           class_counts=[int(c) for c in self.class_counts], n_rows=int(self.n_rows), **facts)


def _selected_names(dataset, features_col: str, size: int, selected) -> List[str]:
    """Names of the selected features, from the vector column's ML attributes (set by
    ``VectorAssembler``), ``f{i}`` without them."""
    from sparkfs.io.readers import vector_names

    return vector_names(dataset, features_col, size, selected)


def _given_names(dataset, features_col: str, size: int) -> Optional[List[str]]:
    """The names the vector column's ML attributes give, or None (features known by position only)."""
    from sparkfs.io.readers import given_vector_names

    return given_vector_names(dataset, features_col, size)


def check_columns(dataset, *columns: Optional[str]) -> None:
    missing = [c for c in columns if c is not None and c not in dataset.columns]
    if missing:
        raise InvalidInputError(f"column(s) {missing} not found; the input has columns {dataset.columns}")


def _column_type(dataset, column: str):
    return next(field.dataType for field in dataset.schema.fields if field.name == column)


def check_column_types(dataset, features_col: str, label_col: Optional[str] = None,
                       weight_col: Optional[str] = None) -> None:
    """Refuse, from the schema alone (before any Spark job, as Spark ML's ``transformSchema``), a
    features column that is not of ML vectors (an array column, what pandas writes, is named with
    the one-line conversion), a label column that is neither numbers, strings nor booleans, and a
    weight column that is not numbers."""
    from pyspark.sql.types import ArrayType, BooleanType, NumericType, StringType

    check_columns(dataset, features_col, label_col, weight_col)
    features = _column_type(dataset, features_col)
    if features.simpleString() != "vector":
        hint = ""
        if isinstance(features, ArrayType):
            hint = (f": convert it with pyspark.ml.functions.array_to_vector, df.withColumn('{features_col}', "
                    f"array_to_vector('{features_col}')) (the sparkfs CLI converts array columns itself)")
        raise InvalidInputError(f"the features column '{features_col}' holds {features.simpleString()}, not ML "
                                f"vectors (pyspark.ml.linalg.Vector){hint}")
    if label_col is not None:
        label = _column_type(dataset, label_col)
        if not isinstance(label, (NumericType, StringType, BooleanType)):
            raise InvalidInputError(f"the label column '{label_col}' holds {label.simpleString()}; labels must be "
                                    "numbers, strings or booleans, one per row")
    if weight_col is not None:
        weight = _column_type(dataset, weight_col)
        if not isinstance(weight, NumericType):
            raise InvalidInputError(f"the weight column '{weight_col}' holds {weight.simpleString()}; weights must "
                                    "be numbers")


def check_supervised(result: ScoreResult, selector_name: str) -> None:
    if len(result.label_values) < 2:
        raise InvalidInputError(
            f"{selector_name} needs at least two classes; the input has only one "
            f"(label {result.label_values[0]!r}, {result.n_rows} rows)"
        )


class FeatureSelector(Estimator, SelectorParams, MLReadable, MLWritable):
    """Base Estimator: validate params and schema, score, apply the shared selection rule."""

    #: The Model class this Estimator returns (set by each subclass).
    _model_class: type = None  # type: ignore[assignment]

    def setNumFeatures(self, value: int):
        return self._set(numFeatures=value)

    def setThreshold(self, value: float):
        return self._set(threshold=value)

    def setSelectionMode(self, value: str):
        return self._set(selectionMode=value)

    def setSelectionThreshold(self, value: float):
        return self._set(selectionThreshold=value)

    def setFeaturesCol(self, value: str):
        return self._set(featuresCol=value)

    def setLabelCol(self, value: str):
        return self._set(labelCol=value)

    def setOutputCol(self, value: str):
        return self._set(outputCol=value)

    def setWeightCol(self, value: str):
        return self._set(weightCol=value)

    def _weight_col(self) -> Optional[str]:
        weight_col = self.getOrDefault(self.weightCol) if self.isDefined(self.weightCol) else None
        return weight_col or None

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def _engine_options(self) -> EngineOptions:
        """The pair engine's settings from the Params the selector has: ``rowIdCol``, ``weightCol``,
        ``driverBudgetMB``, ``queryBatchBytes`` and ``deterministic`` (the canonical layout, and rows
        without ``rowIdCol`` numbered in content order: the same bits for any file layout)."""
        def given(name):
            return self.getOrDefault(name) if self.hasParam(name) and self.isDefined(name) else None

        budget, batch_bytes = given("driverBudgetMB"), given("queryBatchBytes")
        return EngineOptions(row_id_col=given("rowIdCol") or None, weight_col=self._weight_col(),
                             driver_budget_mb=None if budget is None else float(budget),
                             query_batch_bytes=None if batch_bytes is None else int(batch_bytes),
                             canonical=self.getDeterministic(),
                             row_order="content" if self.getDeterministic() else "input")

    def _warn_default_sample(self, method: str, situation: str, drawn: str, *, after: str = "",
                             advice: str = CHOOSE_SAMPLE, stacklevel: int = 3) -> None:
        """The one :class:`DefaultSampleWarning` of a fit that drew rows because ``sampleSize`` is
        unset: "<method>: sampleSize is unset and <situation>, so <drawn> by seed <seed><after>;
        <advice>" (the seed is the selector's ``seed`` Param)."""
        warnings.warn(DefaultSampleWarning(
            f"{method}: sampleSize is unset and {situation}, so {drawn} by seed {self.getOrDefault('seed')}{after}; "
            f"{advice}"), stacklevel=stacklevel + 1)

    # What the method can do: declared once per class, read by the fit and by the commands
    # (`sparkfs select`, `stability`, `methods`). Selectors with p-values say so in hasPValues().
    #: False for a method that also runs without labels (then useWithoutLabels() chooses its mode).
    requires_labels = True
    #: Whether it takes per-instance weights (weightCol); takesWeights() narrows it by a Param.
    takes_weights = False
    #: Whether its model gives the weight path of the fit (``model.weightPath``: SVM-RFE's);
    #: givesWeightPath() narrows it by a Param.
    gives_weight_path = False
    #: The model's per-feature weights a stability study measures (a featureArray name), or None
    #: for the scores.
    weights_array: Optional[str] = None
    #: The Param with which the method weights the rows by Han & Yu's margins itself (set to
    #: "margin"), instead of taking a weight column computed before; None if it has none.
    own_instance_weighting: Optional[str] = None
    #: Refusal of a weight column by a method that takes none ({name}: the class).
    _no_weights_message = "{name} does not support weightCol"
    #: Whether the preamble reads the vector size (and checks the Params' bounds on the input).
    _sizes_vectors = True
    #: The class index column the preamble adds.
    _label_index_col = LABEL_INDEX

    def takesWeights(self) -> bool:
        """Whether this selector, with its Params, takes a weight column."""
        return type(self).takes_weights

    def givesWeightPath(self) -> bool:
        """Whether this selector's model, with its Params, gives the fit's weight path."""
        return type(self).gives_weight_path

    def useWithoutLabels(self) -> None:
        """No label column was named: a method that runs without labels switches to that mode
        (the hook of :attr:`requires_labels` False; nothing by default)."""

    def _weights_refusal(self) -> Optional[str]:
        """The message refusing this selector's weight column, or None."""
        if not self._weight_col() or self.takesWeights():
            return None
        return self._no_weights_message.format(name=type(self).__name__)

    def _check_fit_params(self) -> None:
        """Hook: refuse a combination of Params before any pass (after the weight column's check)."""

    def _check_class_counts(self, label_values, class_counts) -> None:
        """Hook: refuse class counts the method cannot use (after the shared label checks)."""

    def _uses_labels(self, dataset) -> bool:
        """Whether this fit uses the labels (always, for a method that requires them)."""
        return True

    def takesContinuousLabels(self) -> bool:
        """Whether this selector, with its Params, can take a continuous label (labelType)."""
        return False

    def _continuous_label(self) -> bool:
        """Whether this fit takes the label as a continuous target (``labelType``, declared only
        by the selectors that can: :class:`sparkfs.selectors._params.HasLabelType`)."""
        return isinstance(self, HasLabelType) and self.labelTypeInUse() == "continuous"

    def _score(self, dataset) -> ScoreResult:
        """The checks, then a selector's one-pass fit (:meth:`_score_in_one_pass`), else the shared
        preamble and the selector's ``_compute_scores``."""
        refusal = self._weights_refusal()
        if refusal:
            raise ValueError(refusal)
        self._check_fit_params()
        prepared = self._score_in_one_pass(dataset) or self._prepare(dataset)
        return prepared if isinstance(prepared, ScoreResult) else self._compute_scores(prepared)

    def _score_in_one_pass(self, dataset) -> Optional[ScoreResult]:
        """Hook: the fit of a first pass that counts the labels itself, or None (the preamble)."""

    def _prepare(self, dataset) -> Union[PreparedInput, ScoreResult]:
        """Count the labels (refusing an empty input), stop at fewer than two classes (an empty
        result, which the fit refuses by name), check the labels, read the vector size, check the
        Params' bounds on the input, and index the labels. Without labels: the vector size, then
        one count of the rows for the bounds."""
        features_col = self.getFeaturesCol()
        if not self._uses_labels(dataset) or self._continuous_label():  # no classes to count
            num_features = first_vector_size(dataset, features_col)
            if type(self)._data_bounds is FeatureSelector._data_bounds:  # no bounds: its own pass counts rows
                return PreparedInput(dataset, None, None, [], np.zeros(0, dtype=np.int64), None, num_features)
            n_rows = dataset.count()  # the one cheap pass of the unsupervised fit, for the bounds
            if n_rows > 0:  # no rows: refused by the engine, with its own message
                self._check_data_bounds(n_rows, [], num_features)
            return PreparedInput(dataset, None, None, [], np.zeros(0, dtype=np.int64), int(n_rows), num_features)
        labels, counts = label_counts(dataset, self.getLabelCol())
        if not labels:
            raise InvalidInputError("the input has no rows")
        if len(labels) < 2 and self.requires_labels:
            return ScoreResult(scores=np.zeros(0), label_values=labels, class_counts=counts.tolist(),
                               n_rows=int(counts.sum()))
        self._check_labels(labels, counts)
        self._check_class_counts(labels, counts)
        num_features = None
        if self._sizes_vectors:
            num_features = first_vector_size(dataset, features_col)
            self._check_data_bounds(int(counts.sum()), counts, num_features)
        indexed = with_label_index(dataset, self.getLabelCol(), labels, self._label_index_col)
        return PreparedInput(dataset, indexed, self._label_index_col, labels, counts, int(counts.sum()), num_features)

    def _data_bounds(self, shape: InputShape) -> List[UpperBound]:
        """Hook: the upper bounds this input sets on the Params that scale work or memory (the static
        ones are in the Params' constraints). Each selector with such Params fills it in."""
        return []

    def _check_data_bounds(self, n_rows: int, class_counts: Sequence[int], num_features: int) -> None:
        """Refuse a Param above its bound on this input (:class:`sparkfs.errors.ParamBoundError`).
        Each selector calls it right after its first, cheap pass (the label counts and the vector
        size), before any heavy pass."""
        self.checkForced(int(num_features))
        shape = InputShape(n_rows=int(n_rows), class_counts=tuple(int(c) for c in class_counts),
                           num_features=int(num_features))
        for bound in self._data_bounds(shape):
            bound.check(type(self).__name__)

    def _fit(self, dataset):
        self.validate_params()
        label_col = self.getLabelCol() if self.requires_labels else None
        check_column_types(dataset, self.getFeaturesCol(), label_col, self._weight_col())
        started = time.perf_counter()
        observe_driver_memory(dataset.sparkSession)  # for the advice if the JVM dies in the fit
        dataset, missing = with_resource_errors(lambda: input_under_policy(self, dataset))  # 'refuse': no job
        result = with_resource_errors(lambda: self._score(dataset))
        if self.requires_labels and not self._continuous_label():
            check_supervised(result, type(self).__name__)
            self._check_labels(result.label_values, result.class_counts, announce=True)
        scores = np.asarray(result.scores, dtype=np.float64)
        if scores.shape[0] == 0:
            raise InvalidInputError(f"the feature vectors in column '{self.getFeaturesCol()}' are empty (size 0): "
                                    "no features to select")
        unfit = unloadable_scores(scores, self._model_class._scores_may_be_infinite)
        if unfit:   # a model its own load would refuse: never built
            raise InvalidInputError(f"{type(self).__name__}: {unfit}: the input's values are outside what the method "
                                    "computes in float64 (too large or too small?); no model was made")
        selected, by_count = self._select(scores, result)
        ties = free_ties(scores, selected, by_count, self.getKeptFeatures(), self.getExcludedFeatures())
        announcement = ties_warning(ties, int(selected.size))
        if announcement:
            warnings.warn(f"{type(self).__name__}: {announcement}", SelectionTieWarning, stacklevel=2)
        summary = {
            "n_rows": int(result.n_rows),
            "n_features": int(scores.shape[0]),
            "n_classes": len(result.label_values),
            "class_counts": [int(c) for c in result.class_counts],
            "label_mapping": {str(i): v for i, v in enumerate(result.label_values)},
            "fit_seconds": round(time.perf_counter() - started, 3),
            "ties": ties,
            "selected_names": _selected_names(dataset, self.getFeaturesCol(), int(scores.shape[0]), selected),
            "selection": self._selection_facts(int(scores.shape[0]), selected),
            **result.info,
            "deterministic": self.getDeterministic(),
            "missing": {**missing, **result.info.get("missing", {})},
        }
        feature_arrays = dict(result.feature_arrays)
        if result.p_values is not None:
            feature_arrays["p_values"] = np.asarray(result.p_values, dtype=np.float64)
            summary["selected_p_values"] = [float(feature_arrays["p_values"][i]) for i in selected]
        model = self._model_class(
            scores=scores,
            selected_features=selected,
            label_values=list(result.label_values),
            summary=summary,
            feature_arrays=feature_arrays,
            feature_names=_given_names(dataset, self.getFeaturesCol(), int(scores.shape[0])),
        )
        model._session_state = dict(result.session_state)
        model._resetUid(self.uid)
        return self._copyValues(model)

    def _select(self, scores: np.ndarray, result: ScoreResult):
        """(sorted selected indices, whether a count decided them) by the selection rule, with the
        kept features in and the excluded out (:func:`~sparkfs.core.selection.forced_selection`)."""
        selected, by_count = self._select_by_rule(scores, result)
        keep, exclude = self.getKeptFeatures(), self.getExcludedFeatures()
        if not keep and not exclude:
            return selected, by_count
        self.checkForced(scores.shape[0])
        count = self.forcedCount(scores.shape[0])
        if count is not None and result.selected is not None:  # a method's own selection: its size
            count = max(selected.size, len(keep))
        return forced_selection(scores, selected, keep, exclude, count), by_count

    def _select_by_rule(self, scores: np.ndarray, result: ScoreResult):
        """The selection rule alone; a selector with its own selection (QFS, mRMR) has set
        ``result.selected``."""
        mode = self.getSelectionMode()
        if result.selected is not None:
            return np.sort(np.asarray(result.selected, dtype=np.int64)), False
        if mode == "percentile":
            return select_percentile(scores, self.getSelectionThreshold()), True
        if mode != "numTopFeatures":
            if result.p_values is None:  # hasPValues() promised them: a selector's bug, not the user's
                raise RuntimeError(f"{type(self).__name__} computed no p-values for selectionMode={mode!r}")
            return select_by_p_values(result.p_values, mode, self.getSelectionThreshold()), False
        if self.isSet(self.threshold):
            return select_features(scores, threshold=self.getThreshold()), False
        count = self.getNumFeatures()
        return select_features(scores, num_features=count, warn_if_all=self.isSet(self.numFeatures)), True

    def _selection_facts(self, num_features: int, selected: np.ndarray) -> Dict[str, Any]:
        """The rule that chose the features, for the summary."""
        mode = self.getSelectionMode()
        facts: Dict[str, Any] = {"mode": mode, "n_selected": int(selected.size)}
        if mode == "numTopFeatures" and self.isSet(self.threshold):
            facts["score_threshold"] = self.getThreshold()
        elif mode == "numTopFeatures":
            facts["num_features"] = self.getNumFeatures()
        else:
            facts["selection_threshold"] = self.getSelectionThreshold()
        if mode == "percentile":
            facts["num_features"] = self.selectionCount(num_features)
        facts.update(kept=self.getKeptFeatures(), excluded=self.getExcludedFeatures())
        return facts

    # Estimators hold params only: persisted as metadata, like DefaultParamsWritable.
    def write(self) -> MLWriter:
        return DefaultParamsWriter(self)

    @classmethod
    def read(cls) -> MLReader:
        return ParamsReader(cls)


class FeatureSelectorModel(Model, SelectorParams, MLReadable, MLWritable):
    """Fitted selector: ``scores``, ``ranking``, ``selectedFeatures``; ``transform`` slices vectors."""

    #: Whether a score may be +inf (a statistic divided by a zero variance); NaN never is.
    _scores_may_be_infinite = False

    def __init__(self, scores=None, selected_features=None, label_values=None, summary=None, feature_arrays=None,
                 feature_names=None):
        super().__init__()
        self._scores = np.asarray(scores if scores is not None else [], dtype=np.float64)
        self._selected = [int(i) for i in (selected_features if selected_features is not None else [])]
        self._label_values = list(label_values or [])
        self._summary = dict(summary or {})
        self._feature_arrays = {k: np.asarray(v, dtype=np.float64) for k, v in (feature_arrays or {}).items()}
        self._session_state: Dict[str, Any] = {}
        self._feature_names = None if feature_names is None else [str(name) for name in feature_names]
        if self._feature_names is not None and len(self._feature_names) != self._scores.shape[0]:
            raise ValueError(f"{type(self).__name__}: {len(self._feature_names)} feature names for "
                             f"{self._scores.shape[0]} scores")

    @property
    def scores(self) -> np.ndarray:
        """One score per feature; higher means more relevant."""
        return self._scores.copy()

    @property
    def pValues(self) -> Optional[np.ndarray]:
        """One upper-tail p-value per feature (the F test for anova, chi-squared for chi2 and
        chi2-categorical), as scikit-learn's ``pvalues_``; None for selectors without a test."""
        values = self._feature_arrays.get("p_values")
        return None if values is None else values.copy()

    @property
    def ranking(self) -> np.ndarray:
        """Feature indices, best first (descending score, ties by lower index)."""
        return rank_features(self._scores)

    @property
    def selectedFeatures(self) -> List[int]:
        """Indices of the selected features, ascending (the order of the output vector)."""
        return list(self._selected)

    @property
    def featureNames(self) -> Optional[List[str]]:
        """The name of each input feature, from the fitted vector column's ML attributes (a CSV
        header, ``VectorAssembler``, ``--feature-names``), or None when the features were known by
        position only. ``transform`` refuses a vector column that names its features otherwise."""
        return None if self._feature_names is None else list(self._feature_names)

    @property
    def numInputFeatures(self) -> int:
        return int(self._scores.shape[0])

    @property
    def labelValues(self) -> List[Any]:
        """Original label of each class index 0..C-1."""
        return list(self._label_values)

    @property
    def summary(self) -> Dict[str, Any]:
        """Facts of the fit (rows, classes, method-specific certificates), JSON-serialisable."""
        return json.loads(json.dumps(self._summary))

    def selectionsForCounts(self, counts: Sequence[int]) -> Dict[int, np.ndarray]:
        """The features this selector picks when asked for k features, for each k in ``counts``.

        Returns ``{k: feature indices, best score first}``. For a ranking selector that is the
        first k of :attr:`ranking`; a selector whose selection is not the top k by score (QFS)
        overrides it and may return another size when k is not reachable (its summary says so).
        Each k must be an int in [1, numInputFeatures]. Kept features (``keptFeatures``) come first
        and count toward k; excluded ones (``excludedFeatures``) are never returned.
        """
        keep, exclude = self.getKeptFeatures(), self.getExcludedFeatures()
        return {k: forced_first(self.ranking, keep, exclude, k) for k in self._checked_counts(counts)}

    def _checked_counts(self, counts: Sequence[int]) -> List[int]:
        p = self.numInputFeatures
        checked = []
        for k in counts:
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= p:
                raise ValueError(f"selectionsForCounts of {type(self).__name__}: each count must be an int in the "
                                 f"range [1, {p}] (the features this model was fitted on); got {k!r}")
            checked.append(int(k))
        return checked

    def get_support(self) -> np.ndarray:
        """Boolean mask over input features, as scikit-learn's ``SelectorMixin.get_support``."""
        mask = np.zeros(self.numInputFeatures, dtype=bool)
        mask[self._selected] = True
        return mask

    def featureArray(self, name: str) -> np.ndarray:
        """A per-feature array stored by the selector (e.g. ``"weights"`` for the Relief family)."""
        return self._feature_arrays[name].copy()

    def setFeaturesCol(self, value: str):
        return self._set(featuresCol=value)

    def setOutputCol(self, value: str):
        return self._set(outputCol=value)

    def _transform(self, dataset):
        from pyspark.ml.feature import VectorSlicer
        from pyspark.sql import functions as F

        from sparkfs.io.table_input import vector_metadata

        check_column_types(dataset, self.getFeaturesCol())
        if self.getOutputCol() in dataset.columns:
            raise InvalidInputError(f"output column '{self.getOutputCol()}' already exists in the input")
        given = self.checkInputFeatures(dataset)
        slicer = VectorSlicer(inputCol=self.getFeaturesCol(), outputCol=self.getOutputCol(), indices=self._selected)
        sliced = slicer.transform(dataset)
        if given is not None or self._feature_names is None:  # VectorSlicer keeps the input's names
            return sliced
        # The input names no feature: the output names the selected ones as the model knows them.
        names = vector_metadata([self._feature_names[i] for i in self._selected])
        output = self.getOutputCol()
        return sliced.withColumn(output, F.col(f"`{output.replace('`', '``')}`").alias(output, metadata=names))

    def checkInputFeatures(self, dataset) -> Optional[List[str]]:
        """Refuse (:class:`~sparkfs.errors.InvalidInputError`) a vector column whose ML attributes
        declare another size than the model's, or name a feature otherwise than the model does
        (when both name them); from the schema alone. Returns the input's names, or None."""
        from sparkfs.io.readers import given_vector_names

        column = self.getFeaturesCol()
        declared_size = dataset.schema[column].metadata.get("ml_attr", {}).get("num_attrs")
        if declared_size is not None and declared_size != self.numInputFeatures:
            raise InvalidInputError(f"the vectors in column '{column}' have size {declared_size}; this model was "
                                    f"fitted on {self.numInputFeatures} features")
        given = given_vector_names(dataset, column, self.numInputFeatures)
        if given is None or self._feature_names is None or given == self._feature_names:
            return given
        differ = [i for i, (mine, theirs) in enumerate(zip(self._feature_names, given)) if mine != theirs]
        first = differ[0]
        raise InvalidInputError(f"the vectors in column '{column}' name feature {first} {given[first]!r}, where this "
                                f"model's feature {first} is {self._feature_names[first]!r} ({len(differ):,} of "
                                f"{self.numInputFeatures:,} names differ): the model was fitted on other features")

    def write(self) -> MLWriter:
        return SelectorModelWriter(self)

    @classmethod
    def read(cls) -> MLReader:
        return SelectorModelReader(cls)
