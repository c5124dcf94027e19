"""Params shared by every sparkfs selector, declared once with converter, default and constraint."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from pyspark.ml.param import Param, TypeConverters
from pyspark.ml.param.shared import HasFeaturesCol, HasLabelCol, HasOutputCol, HasWeightCol

from sparkfs.core.labels import check_class_labels, single_row_classes
from sparkfs.core.param_caps import (  # noqa: F401 (public here too)
    MAX_BLOCK_SIZE,
    MAX_CLUSTERS,
    MAX_ENSEMBLE,
    MAX_PASS_ITERATIONS,
    MAX_PICKED_INSTANCES,
    MAX_SOLVER_ITERATIONS,
)
from sparkfs.core.scaling import SCALINGS
from sparkfs.core.selection import (
    DEFAULT_SELECTION_THRESHOLDS,
    P_VALUE_MODES,
    SELECTION_MODES,
    forced_refusal,
    percentile_count,
)
from sparkfs.errors import LabelWarning, ParamBoundError
from sparkfs.selectors._declared import Constraint, DeclaredParams, declare, keyword_constructor  # noqa: F401 (public here too)
from sparkfs.selectors._missing import HasMissing


def in_range(low: float = -math.inf, high: float = math.inf, *, low_open=False, kind="a finite float") -> Constraint:
    """A number in [low, high] (or (low, high]); never NaN or infinite (an open end at inf excludes it)."""

    def predicate(value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return False
        above = value > low if low_open else value >= low
        return above and value <= high

    def text(bound: float) -> str:
        if math.isinf(bound):
            return "inf" if bound > 0 else "-inf"
        return str(int(bound)) if float(bound).is_integer() else f"{bound:g}"

    left = "(" if low_open else "["
    low_text, high_text = text(low), text(high)
    return predicate, f"{kind} in the range {left}{low_text}, {high_text}{']' if high != math.inf else ')'}"


def index_list() -> Constraint:
    return (lambda value: isinstance(value, list) and all(isinstance(i, int) and i >= 0 for i in value),
            "a list of feature indices (ints >= 0)")


def one_of(*options) -> Constraint:
    return (lambda value: value in options), "a str among {" + ", ".join(repr(o) for o in options) + "}"


def is_finite_float() -> Constraint:
    return (lambda value: isinstance(value, (int, float)) and math.isfinite(value)), "a finite float"


def is_bool() -> Constraint:
    return (lambda value: isinstance(value, bool)), "a bool"


def is_int() -> Constraint:
    return (lambda value: isinstance(value, int)), "an int"


@dataclass(frozen=True)
class InputShape:
    """What the first, cheap pass (the label counts) tells of the input: enough to bound the Params
    that scale work or memory before any heavy pass."""

    n_rows: int
    class_counts: Tuple[int, ...]
    num_features: int

    @property
    def num_classes(self) -> int:
        return len(self.class_counts)


@dataclass(frozen=True)
class UpperBound:
    """``param`` (set to ``value``) may be at most ``limit`` on this input; ``reason`` says where the
    limit comes from (rows, classes, features, driverBudgetMB), in words that follow "at most N"."""

    param: str
    value: Any
    limit: int
    reason: str

    def check(self, owner: str) -> None:
        if self.value > self.limit:
            raise ParamBoundError(f"The '{self.param}' parameter of {owner} must be at most {self.limit:,} on this "
                                  f"input ({self.reason}). Got {self.value!r} instead.")


def budget_bytes(budget_mb: float) -> float:
    return float(budget_mb) * 2**20


def neighbour_bounds(k: int, queries: int, shape: InputShape, budget_mb: float):
    """Bounds of a neighbour count ``k``: a query has n - 1 other rows (more neighbours do not exist:
    the margins average over those found), and the (queries x classes x k) table of ids and
    distances (16 bytes each) is held on the driver within ``driverBudgetMB``."""
    table_limit = int(budget_bytes(budget_mb) // (16 * max(queries, 1) * shape.num_classes))
    return [
        UpperBound("k", k, shape.n_rows - 1, f"a query has {shape.n_rows - 1:,} other rows: the input's "
                   f"{shape.n_rows:,} rows minus itself"),
        UpperBound("k", k, table_limit, f"the neighbour table of {queries:,} queries x {shape.num_classes} classes "
                   f"x k neighbours, 16 bytes each, within driverBudgetMB={budget_mb:g}; or set sampleSize"),
    ]


class HasScaling(DeclaredParams):
    """The ``scaling`` Param of the selectors that rescale features; each sets its own default
    (``_defaults``). One meaning for all of them: :mod:`sparkfs.core.scaling`.
    """

    scaling: Param = declare(
        "scaling",
        "feature scaling before scoring: 'none' (the data as given), 'range' ((x - min) / (max - min), "
        "Relief's classic diff) or 'standard' ((x - mean) / std, the sample std with ddof = 1 as Spark's "
        "Summarizer and StandardScaler); a constant feature is left unscaled. Scores from differences "
        "(Relief) use only the divisor",
        TypeConverters.toString, constraint=one_of(*SCALINGS))

    def getScaling(self) -> str:
        return self.getOrDefault(self.scaling)


#: ``preset`` values: sparkfs's defaults (each chosen by a measurement named in the selector's
#: docs) or the paper's settings.
PRESETS = ("default", "paper")


class HasPreset(DeclaredParams):
    """``preset``, declared once: which defaults fill the Params it governs when they are not set.
    Each selector says which Params those are and what each preset gives them."""

    preset: Param = declare("preset",
                            "'default' (sparkfs's defaults, chosen by measurement) or 'paper' (the paper's settings); "
                            "a Param the preset governs, set explicitly, overrides it (the selector's docs list them)",
                            TypeConverters.toString, default="default", constraint=one_of(*PRESETS))


#: Query rows the Relief and MultiSURF families use when ``sampleSize`` is unset and the input has
#: more rows: every pass costs O(queries x rows x features).
DEFAULT_QUERY_SAMPLE = 1000


class HasQueryRows(DeclaredParams):
    """The query-side Params of the neighbour methods (Relief and MultiSURF families): the distance,
    the query sample, the row ids and the tile size, declared once. Each family sets its own
    ``metric`` default (Relief: Euclidean; MultiSURF: Manhattan, scikit-rebate's)."""

    metric: Param = declare("metric",
                            "neighbour distance: 'euclidean' or 'manhattan' (with scaling='range', scikit-rebate's); "
                            "or 'cosine' (rows divided by their norm, then Euclidean)",
                            TypeConverters.toString, constraint=one_of("euclidean", "manhattan"))
    sampleSize: Param = declare("sampleSize",
                                "number of query rows drawn by `seed` (Relief's m); unset = every row up to "
                                f"{DEFAULT_QUERY_SAMPLE:,} rows, else {DEFAULT_QUERY_SAMPLE:,} rows drawn by `seed` "
                                "(announced; a value >= the rows uses every row)", TypeConverters.toInt,
                                constraint=in_range(1, kind="an int"))
    seed: Param = declare("seed", "seed of the query sample", TypeConverters.toInt, default=0, constraint=is_int())
    rowIdCol: Param = declare("rowIdCol",
                              "column of unique integer row ids (ties, self-exclusion, sampling); unset = row position",
                              TypeConverters.toString)
    blockSize: Param = declare("blockSize", "rows per block of the distance computation", TypeConverters.toInt,
                               default=2048, constraint=in_range(1, MAX_BLOCK_SIZE, kind="an int"))

    def _query_sample_rule(self, n_rows: int):
        """(query rows or None for every row, how it was chosen): ``sampleSize`` when set, else every
        row up to DEFAULT_QUERY_SAMPLE rows, else DEFAULT_QUERY_SAMPLE rows (rule "default")."""
        if self.isDefined(self.sampleSize):
            return self.getOrDefault(self.sampleSize), "sampleSize"
        if n_rows <= DEFAULT_QUERY_SAMPLE:
            return None, "every row"
        return DEFAULT_QUERY_SAMPLE, "default"


class HasDriverBudget(DeclaredParams):
    """The ``driverBudgetMB`` Param of the selectors that hold rows on the driver; each sets its own
    default (``_defaults``) and says in its docstring what the budget covers."""

    driverBudgetMB: Param = declare(
        "driverBudgetMB",
        "largest driver memory in MiB for the rows (and arrays of them) the method holds on the driver; a "
        "configuration above it is refused before any pass, naming this Param (SVMRFESelector with solver='auto' "
        "runs on Spark instead). Raise spark.driver.memory with it",
        TypeConverters.toFloat, constraint=in_range(0.0, low_open=True))

    def getDriverBudgetMB(self) -> float:
        return self.getOrDefault(self.driverBudgetMB)


class HasQueryBatchBytes(DeclaredParams):
    """The ``queryBatchBytes`` Param of the selectors whose passes compare query rows with every
    row (Relief and MultiSURF families, Lmba, Simba, Parzen-ISE): the engine's query batch budget."""

    queryBatchBytes: Param = declare(
        "queryBatchBytes",
        "largest bytes of query rows shipped to the tasks per pass (a positive int); every batch of queries is one "
        "pass over all rows, so a larger budget means fewer passes when the queries are many or wide, and more "
        "memory per task (the batch is held by every task). Unset = 134217728 (128 MiB). On Spark Connect the "
        "engine caps it at what a task closure may carry (48 MiB)",
        TypeConverters.toInt, constraint=in_range(1, kind="an int"))

    def getQueryBatchBytes(self) -> Optional[int]:
        """The budget, or None when unset (the engine's default)."""
        return self.getOrDefault(self.queryBatchBytes) if self.isDefined(self.queryBatchBytes) else None


class HasDeterministic(DeclaredParams):
    """The ``deterministic`` Param of every selector (and of MarginInstanceWeighter): whether the
    results are the same bits for any partitioning of the same rows, at the price of the canonical
    layout (one shuffle, :mod:`sparkfs.spark.canonical`) and of the exact-sums statistics engine.

    Off by default: on wide sparse rows the layout costs 1.3-3.1x per pass
    (``benchmarks/results/layout.md``), so the default runs without it and agrees across
    partitionings to rounding only. The summary records which mode ran (``"deterministic"``).
    """

    deterministic: Param = declare(
        "deterministic",
        "true: the same bits for any partitioning of the same rows (rows laid out by row id, one shuffle, and "
        "exact sums: 'arrow' statistics); false (default): no layout and the fastest statistics, results equal "
        "across partitionings to rounding only",
        TypeConverters.toBoolean, default=False, constraint=is_bool())

    def getDeterministic(self) -> bool:
        return bool(self.getOrDefault(self.deterministic))

    def setDeterministic(self, value: bool):
        return self._set(deterministic=value)


#: statsEngine values: "auto" follows ``deterministic`` (exact "arrow" sums when true; when false
#: NumPy's float sums in one mapInArrow, "float", for sparse vectors and Spark's Summarizer, "jvm",
#: for dense ones); an explicit value wins.
STATS_ENGINES = ("auto", "float", "arrow", "jvm")
#: The engines whose sums follow the partitioning (equal to rounding only): refused with deterministic=true.
_ROUNDING_ENGINES = ("float", "jvm")


def _first_vector_is_sparse(dataset, features_col: str) -> bool:
    """Whether the column's metadata says its vectors are sparse (sparkfs's LIBSVM reader and
    ``convert`` say so: no job), else whether its first non-null vector is a SparseVector (True
    without one, or for a column that is not a vector: the pass then names the problem)."""
    from pyspark.ml.linalg import DenseVector
    from pyspark.sql import functions as F

    from sparkfs.io.libsvm import said_sparse

    if features_col not in dataset.columns or said_sparse(dataset.schema[features_col].metadata):
        return True
    row = dataset.select(features_col).where(F.col(features_col).isNotNull()).first()
    return row is None or not isinstance(row[0], DenseVector)


class HasStatsEngine(HasDeterministic):
    """The ``statsEngine`` Param of the one-pass statistics (LFS/QFS, anova, chi2), default "auto"."""

    statsEngine: Param = declare(
        "statsEngine",
        "how the one-pass class moments are computed: 'auto' (default: 'arrow' when deterministic=true, else "
        "'float' for sparse vectors and 'jvm' for dense ones, by the column's metadata or its first row), 'float' "
        "(mapInArrow + NumPy float64 sums, the labels counted in the same pass: equal to rounding "
        "for another partitioning), 'arrow' (mapInArrow + exact sums: the same bits for any partitioning) or 'jvm' "
        "(Spark's Summarizer, for anova Spark ML's own ANOVATest: equal to rounding only); 'float' and 'jvm' are "
        "refused with deterministic=true",
        TypeConverters.toString, default="auto", constraint=one_of(*STATS_ENGINES))

    def statsEngineInUse(self, dataset=None) -> str:
        """'float', 'arrow' or 'jvm': statsEngine, or for 'auto' the one ``deterministic`` asks for:
        'arrow' with it; without it 'float' for sparse vectors and Spark's Summarizer ('jvm') for
        dense ones, judged by the first row of ``dataset`` (a one-row job; 'float' without a dataset).
        Dense rows cost more to hand to Python than the Summarizer's grouped buffers, so they stay in
        the JVM (``benchmarks/near_floor.py`` measures both)."""
        engine = self.getOrDefault(self.statsEngine)
        if engine != "auto":
            return engine
        if self.getDeterministic():
            return "arrow"
        return "float" if dataset is None or _first_vector_is_sparse(dataset, self.getFeaturesCol()) else "jvm"

    def _check_stats_engine(self) -> None:
        """deterministic=true promises the same bits, which only the exact 'arrow' sums give."""
        engine = self.getOrDefault(self.statsEngine)
        if self.getDeterministic() and engine in _ROUNDING_ENGINES:
            how = ("(Spark's Summarizer / ANOVATest) sums in the order tasks finish" if engine == "jvm"
                   else "(NumPy's float64 sums) sums in partition order")
            raise ValueError(
                f"{type(self).__name__}: deterministic=true asks for the same bits for any partitioning, and "
                f"statsEngine={engine!r} {how}: equal to rounding only. Give statsEngine='arrow' (or 'auto'), or "
                "deterministic=false.")


#: The label types a selector may take (Spark ML's ``UnivariateFeatureSelector.labelType``).
LABEL_TYPES = ("categorical", "continuous")


class HasLabelType(DeclaredParams):
    """``labelType`` of the selectors that also score against a continuous target. Only these
    declare it; a selector without it needs class labels (its refusal of a continuous-looking
    label names the methods that take one)."""

    labelType: Param = declare(
        "labelType",
        "'categorical' (default: the label is a class) or 'continuous' (a regression target: f-regression, and "
        "ReliefF and the MultiSURF family on a continuous endpoint); never guessed from the data",
        TypeConverters.toString, default="categorical", constraint=one_of(*LABEL_TYPES))

    def getLabelType(self) -> str:
        return self.getOrDefault(self.labelType)

    def labelTypeInUse(self) -> str:
        """The label type this fit uses: labelType (a selector whose method has only one kind of
        label overrides it)."""
        return self.getLabelType()


class SelectorParams(HasDeterministic, HasMissing, HasFeaturesCol, HasLabelCol, HasOutputCol, HasWeightCol):
    """featuresCol, labelCol, outputCol, weightCol and the selection rule: ``selectionMode``
    ``numTopFeatures`` (numFeatures, or threshold when set), ``percentile`` or, for the selectors
    with p-values (:meth:`hasPValues`), ``fpr``, ``fdr`` and ``fwe`` (:mod:`sparkfs.core.selection`).

    Subclasses declare their own Params with :func:`declare` (one statement each: see
    :mod:`sparkfs.selectors._declared`).
    """

    numFeatures: Param = declare(
        "numFeatures", "number of features to select (the top numFeatures by score). Used unless threshold is set.",
        TypeConverters.toInt, default=50, constraint=in_range(1, kind="an int"), unset_decides=True)
    threshold: Param = declare(
        "threshold",
        "select every feature whose score is above this value (beta for the Fisher-Markov methods); "
        "when set, it is used instead of numFeatures",
        TypeConverters.toFloat, constraint=is_finite_float(), unset_decides=True)
    selectionMode: Param = declare(
        "selectionMode",
        "how features are selected, as Spark ML's UnivariateFeatureSelector: 'numTopFeatures' (the top "
        "numFeatures by score, or every score above threshold when threshold is set), 'percentile' (the top "
        "floor(p x selectionThreshold) of the p features by score), and for the selectors with p-values "
        "(UnivariateTestSelector) 'fpr' (p-value < selectionThreshold), 'fdr' (Benjamini-Hochberg at false "
        "discovery rate selectionThreshold) or 'fwe' (p-value < selectionThreshold / p, Bonferroni)",
        TypeConverters.toString, default="numTopFeatures", constraint=one_of(*SELECTION_MODES), unset_decides=True)
    selectionThreshold: Param = declare(
        "selectionThreshold",
        "the fraction of features (selectionMode 'percentile', default 0.1) or alpha ('fpr', 'fdr', 'fwe', "
        "default 0.05); not used by 'numTopFeatures', whose count is numFeatures",
        TypeConverters.toFloat, constraint=in_range(0.0, 1.0, low_open=True), unset_decides=True)
    allowManyClasses: Param = declare(
        "allowManyClasses",
        "take every distinct label value as a class even when the label looks continuous (many distinct "
        "non-integer values) or like an identifier (more distinct values than half the rows); refused otherwise",
        TypeConverters.toBoolean, default=False, constraint=is_bool())
    keptFeatures: Param = declare(
        "keptFeatures",
        "indices (0-based) of features always in the selection, whatever their score; they count toward "
        "numFeatures (the rest is filled by the ranking) and are added to a threshold's or p-value mode's selection",
        TypeConverters.toListInt, default=[], constraint=index_list())
    excludedFeatures: Param = declare(
        "excludedFeatures",
        "indices (0-based) of features never selected; they are still scored and ranked",
        TypeConverters.toListInt, default=[], constraint=index_list())
    #: pyspark's shared column Params, with sparkfs's defaults
    _defaults = {"outputCol": "selected_features", "featuresCol": "features", "labelCol": "label"}

    def getNumFeatures(self) -> int:
        return self.getOrDefault(self.numFeatures)

    def getThreshold(self) -> float:
        return self.getOrDefault(self.threshold)

    def getAllowManyClasses(self) -> bool:
        return self.getOrDefault(self.allowManyClasses)

    def getSelectionMode(self) -> str:
        return self.getOrDefault(self.selectionMode)

    def getKeptFeatures(self) -> List[int]:
        return [int(i) for i in self.getOrDefault(self.keptFeatures)]

    def getExcludedFeatures(self) -> List[int]:
        return [int(i) for i in self.getOrDefault(self.excludedFeatures)]

    def forcedCount(self, num_features: int) -> Optional[int]:
        """The selection's size the kept features count toward on ``num_features`` features: the
        count rule's (numFeatures, at most every feature; the percentile's share), or None for a rule
        without a count (a score threshold, a p-value mode)."""
        mode = self.getSelectionMode()
        if mode == "percentile" or (mode == "numTopFeatures" and not self.isSet(self.threshold)):
            return min(self.selectionCount(num_features), int(num_features))
        return None

    def checkForced(self, num_features: Optional[int] = None) -> None:
        """Refuse keptFeatures / excludedFeatures that cannot be applied (on ``num_features``
        features when given: an index out of range, more kept features than the selection holds)."""
        count = None if num_features is None else self.forcedCount(num_features)
        refusal = forced_refusal(self.getKeptFeatures(), self.getExcludedFeatures(), num_features, count)
        if refusal:
            raise ValueError(f"{type(self).__name__}: keptFeatures={self.getKeptFeatures()}, excludedFeatures="
                             f"{self.getExcludedFeatures()}: {refusal}")

    def getSelectionThreshold(self) -> Optional[float]:
        """selectionThreshold, or the mode's default when unset (None for 'numTopFeatures')."""
        if self.isSet(self.selectionThreshold):
            return self.getOrDefault(self.selectionThreshold)
        return DEFAULT_SELECTION_THRESHOLDS.get(self.getSelectionMode())

    def hasPValues(self) -> bool:
        """Whether the fit computes a p-value per feature (``model.pValues``), which the selection
        modes 'fpr', 'fdr' and 'fwe' need. A selector with p-values overrides it."""
        return False

    def selectionModes(self) -> Tuple[str, ...]:
        """The selectionMode values this selector takes."""
        return SELECTION_MODES if self.hasPValues() else tuple(m for m in SELECTION_MODES if m not in P_VALUE_MODES)

    def selectionCount(self, num_features: int) -> int:
        """How many features a count-based rule keeps of ``num_features``: numFeatures
        ('numTopFeatures') or the percentile's share ('percentile')."""
        if self.getSelectionMode() == "percentile":
            return percentile_count(num_features, self.getSelectionThreshold())
        return self.getNumFeatures()

    def _check_labels(self, label_values, class_counts, announce: bool = False) -> None:
        """Refuse NaN and infinite labels and a continuous or identifier-like label (see
        :mod:`sparkfs.core.labels`); with ``announce`` (once per fit), warn of classes of a single row."""
        check_class_labels(label_values, class_counts, self.getLabelCol(), self.getAllowManyClasses())
        note = single_row_classes(label_values, class_counts) if announce else ""
        if note:
            warnings.warn(f"{type(self).__name__}: label column '{self.getLabelCol()}': {note}", LabelWarning,
                          stacklevel=3)

    def paramNote(self, name: str) -> str:
        """What a Param declared once for several selectors means for this one (``_param_notes``
        of the class or its bases, e.g. which Params ``preset`` fills in); "" when nothing."""
        for klass in type(self).__mro__:
            note = (getattr(klass, "_param_notes", None) or {}).get(name)
            if note:
                return note
        return ""

    def validate_params(self) -> None:
        """Check every Param against its constraint; the message reads like scikit-learn's."""
        for name, (predicate, description) in self._all_constraints().items():
            param = self.getParam(name)
            if not self.isDefined(param):
                continue
            value = self.getOrDefault(param)
            if value is None:
                continue
            if not predicate(value):
                raise ValueError(
                    f"The '{name}' parameter of {type(self).__name__} must be {description}. Got {value!r} instead."
                )
        self._check_selection_rule()
        self.checkForced()
        if isinstance(self, HasStatsEngine):
            self._check_stats_engine()

    def _check_selection_rule(self) -> None:
        """One selection rule: selectionThreshold only with the modes that use it, numFeatures and
        threshold only with 'numTopFeatures', p-value modes only where p-values exist."""
        owner, mode = type(self).__name__, self.getSelectionMode()
        if mode == "numTopFeatures":
            if self.isSet(self.selectionThreshold):
                raise ValueError(
                    f"The 'selectionThreshold' parameter of {owner} is the fraction ('percentile') or alpha ('fpr', "
                    f"'fdr', 'fwe') of selectionMode; with selectionMode='numTopFeatures' the count is numFeatures. "
                    f"Got selectionThreshold={self.getOrDefault(self.selectionThreshold)!r} instead.")
            return
        for other in (self.numFeatures, self.threshold):
            if self.isSet(other):
                raise ValueError(
                    f"{owner}: selectionMode={mode!r} selects by its selectionThreshold; {other.name}="
                    f"{self.getOrDefault(other)!r} belongs to selectionMode='numTopFeatures'. Give one of the two "
                    "rules.")
        if mode in P_VALUE_MODES and not self.hasPValues():
            raise ValueError(
                f"The 'selectionMode' parameter of {owner} must be a str among "
                f"{{{', '.join(repr(m) for m in self.selectionModes())}}}: {mode!r} compares p-values with alpha, "
                f"and {owner} computes none (UnivariateTestSelector does). Got {mode!r} instead.")
