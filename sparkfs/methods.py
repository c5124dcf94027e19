"""The CLI's ``--method`` names and the selector (with fixed params) each one maps onto."""

from __future__ import annotations

from typing import Any, Dict, Tuple

from pyspark.ml.param import TypeConverters

from sparkfs.io.config import describe_value, is_param_value
from sparkfs.selectors.baseline import UnivariateTestSelector
from sparkfs.selectors.fisher_markov import FisherMarkovSelector
from sparkfs.selectors.margin_weighting import LmbaSelector, SimbaSelector
from sparkfs.selectors.parzen_ise import ParzenISERanker
from sparkfs.selectors.relief import ReliefSelector
from sparkfs.selectors.svm_rfe import SVMRFESelector

#: method name -> (Estimator class, params fixed by the method name)
METHODS: Dict[str, Tuple[type, Dict[str, Any]]] = {
    "lfs": (FisherMarkovSelector, {"degree": 1}),
    "qfs": (FisherMarkovSelector, {"degree": 2, "kernel": "qfs"}),
    "qfs-prime": (FisherMarkovSelector, {"degree": 2, "kernel": "qfs-prime"}),
    "relief": (ReliefSelector, {"variant": "relief"}),
    "relieff": (ReliefSelector, {"variant": "relieff"}),
    "mrelief": (ReliefSelector, {"variant": "mrelief"}),
    "prelief": (ReliefSelector, {"variant": "prelief"}),
    "lmba": (LmbaSelector, {}),
    "simba": (SimbaSelector, {}),
    "anova": (UnivariateTestSelector, {"test": "anova"}),
    "chi2": (UnivariateTestSelector, {"test": "chi2"}),
    "chi2-categorical": (UnivariateTestSelector, {"test": "chi2-categorical"}),
    "parzen-ise": (ParzenISERanker, {}),
    "svm-rfe": (SVMRFESelector, {}),
}

#: Params the CLI sets from its own flags; --param may not set them.
COLUMN_AND_SELECTION_PARAMS = {"featuresCol", "labelCol", "outputCol", "weightCol", "numFeatures", "threshold"}


#: What a value must be for pyspark's converters, in the words of a config file.
_EXPECTED = {TypeConverters.toInt: "a whole number", TypeConverters.toFloat: "a number",
             TypeConverters.toBoolean: "true or false", TypeConverters.toString: "a string"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def build_selector(method: str, params: Dict[str, Any]):
    """The Estimator for ``method`` with ``params`` (names in camelCase or snake_case) set."""
    if method not in METHODS:
        raise ValueError(f"unknown method '{method}': use one of {', '.join(sorted(METHODS))}")
    selector_class, fixed = METHODS[method]
    selector = selector_class()
    selector._set(**fixed)
    for raw_name, value in params.items():
        name = _camel(raw_name)
        if name in COLUMN_AND_SELECTION_PARAMS:
            raise ValueError(f"param '{raw_name}' of method '{method}' is set by the command's own options "
                             "(--num-features, --threshold, --features-col, --label-col, --weight-col; in a config "
                             "file the selection: and input: sections), not as a method param")
        if name in fixed or not selector.hasParam(name):
            settable = sorted(p.name for p in selector.params if p.name not in COLUMN_AND_SELECTION_PARAMS and p.name not in fixed)
            raise ValueError(f"unknown param '{raw_name}' for method '{method}': it takes {', '.join(settable) or 'none'}")
        _set_param(selector, method, raw_name, name, value)
    selector.validate_params()
    return selector


def _set_param(selector, method: str, raw_name: str, name: str, value: Any) -> None:
    """Set one param, refusing a value its converter does not take with the param's expected type.

    The value is checked to be a scalar or a flat list of numbers first, so that no message
    (ours or pyspark's ``Could not convert ...``) can print a nested list (a YAML alias bomb).
    """
    where = f"param '{raw_name}' of method '{method}' ({type(selector).__name__})"
    if not is_param_value(value):
        raise ValueError(f"{where} must be a string, a number, true or false (or a list of numbers), "
                         f"got {describe_value(value)}")
    try:
        selector._set(**{name: value})
    except TypeError as error:
        expected = _EXPECTED.get(selector.getParam(name).typeConverter)
        if expected is None:  # the selector's own converter: its message names what it takes
            raise ValueError(f"{where}: {error}") from None
        raise ValueError(f"{where} must be {expected}, got {describe_value(value)}") from None
