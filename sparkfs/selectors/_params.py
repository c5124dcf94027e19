"""Params shared by every sparkfs selector, declared once with converter, default and constraint."""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, Tuple

from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import HasFeaturesCol, HasLabelCol, HasOutputCol, HasWeightCol

from sparkfs.core.labels import check_class_labels
from sparkfs.core.scaling import SCALINGS

#: A constraint: (predicate on the value, words for the message).
Constraint = Tuple[Callable[[Any], bool], str]


def in_range(low: float = -math.inf, high: float = math.inf, *, low_open=False, kind="a float") -> Constraint:
    def predicate(value):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            return False
        above = value > low if low_open else value >= low
        return above and value <= high

    left = "(" if low_open else "["
    low_text = "-inf" if low == -math.inf else f"{low:g}"
    high_text = "inf" if high == math.inf else f"{high:g}"
    return predicate, f"{kind} in the range {left}{low_text}, {high_text}{']' if high != math.inf else ')'}"


def one_of(*options) -> Constraint:
    return (lambda value: value in options), "a str among {" + ", ".join(repr(o) for o in options) + "}"


def is_finite_float() -> Constraint:
    return (lambda value: isinstance(value, (int, float)) and math.isfinite(value)), "a finite float"


class HasScaling(Params):
    """The ``scaling`` Param of the selectors that rescale features; each sets its own default.

    One meaning for all of them: :mod:`sparkfs.core.scaling`.
    """

    scaling: Param = Param(
        Params._dummy(),
        "scaling",
        "feature scaling before scoring: 'none' (the data as given), 'range' ((x - min) / (max - min), "
        "Relief's classic diff) or 'standard' ((x - mean) / std, the sample std with ddof = 1 as Spark's "
        "Summarizer and StandardScaler); a constant feature is left unscaled. Scores from differences "
        "(Relief) use only the divisor",
        typeConverter=TypeConverters.toString,
    )

    _param_constraints: Dict[str, Constraint] = {"scaling": one_of(*SCALINGS)}

    def getScaling(self) -> str:
        return self.getOrDefault(self.scaling)


class HasDriverBudget(Params):
    """The ``driverBudgetMB`` Param of the selectors that hold rows on the driver; each sets its own
    default and says in its docstring what the budget covers."""

    driverBudgetMB: Param = Param(
        Params._dummy(),
        "driverBudgetMB",
        "largest driver memory in MiB for the rows (and arrays of them) the method holds on the driver; a "
        "configuration above it is refused before any pass, naming this Param (SVMRFESelector with solver='auto' "
        "runs on Spark instead). Raise spark.driver.memory with it",
        typeConverter=TypeConverters.toFloat,
    )

    _param_constraints: Dict[str, Constraint] = {"driverBudgetMB": in_range(0.0, low_open=True)}

    def getDriverBudgetMB(self) -> float:
        return self.getOrDefault(self.driverBudgetMB)


class SelectorParams(HasFeaturesCol, HasLabelCol, HasOutputCol, HasWeightCol):
    """featuresCol, labelCol, outputCol, weightCol and the selection rule (numFeatures | threshold).

    Subclasses add their own Params and list each one's constraint in ``_param_constraints``.
    """

    numFeatures: Param = Param(
        Params._dummy(),
        "numFeatures",
        "number of features to select (the top numFeatures by score). Used unless threshold is set.",
        typeConverter=TypeConverters.toInt,
    )
    threshold: Param = Param(
        Params._dummy(),
        "threshold",
        "select every feature whose score is above this value (beta for the Fisher-Markov methods); "
        "when set, it is used instead of numFeatures",
        typeConverter=TypeConverters.toFloat,
    )

    allowManyClasses: Param = Param(
        Params._dummy(),
        "allowManyClasses",
        "take every distinct label value as a class even when the label looks continuous (many distinct "
        "non-integer values) or like an identifier (more distinct values than half the rows); refused otherwise",
        typeConverter=TypeConverters.toBoolean,
    )

    _param_constraints: Dict[str, Constraint] = {
        "numFeatures": in_range(1, kind="an int"),
        "threshold": is_finite_float(),
        "allowManyClasses": ((lambda value: isinstance(value, bool)), "a bool"),
    }
    #: Selectors that need labels (all but the unsupervised ones).
    _requires_label = True

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(numFeatures=50, outputCol="selected_features", featuresCol="features", labelCol="label",
                         allowManyClasses=False)

    def getNumFeatures(self) -> int:
        return self.getOrDefault(self.numFeatures)

    def getThreshold(self) -> float:
        return self.getOrDefault(self.threshold)

    def getAllowManyClasses(self) -> bool:
        return self.getOrDefault(self.allowManyClasses)

    def _check_labels(self, label_values, class_counts) -> None:
        """Refuse a continuous or identifier-like label (see :mod:`sparkfs.core.labels`)."""
        check_class_labels(label_values, class_counts, self.getLabelCol(), self.getAllowManyClasses())

    def _all_constraints(self) -> Dict[str, Constraint]:
        merged: Dict[str, Constraint] = {}
        for klass in reversed(type(self).__mro__):
            merged.update(getattr(klass, "_param_constraints", {}) or {})
        return merged

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
