"""The CLI's ``--method`` names and the selector (with fixed params) each one maps onto."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from pyspark.ml.param import TypeConverters

from sparkfs.core.moment_filters import MOMENT_FILTERS, MomentFilter
from sparkfs.core.selection import SELECTION_MODES
from sparkfs.figures import best_worst_case, noise_columns, quality_summary
from sparkfs.io.config import describe_value, is_param_value
from sparkfs.selectors.baseline import UnivariateTestSelector
from sparkfs.selectors.fisher_markov import FisherMarkovSelector
from sparkfs.selectors.information import InformationSelector
from sparkfs.selectors.margin_weighting import LmbaSelector, SimbaSelector
from sparkfs.selectors.multisurf import MultiSURFSelector, TuRFSelector
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
    "variance": (UnivariateTestSelector, {"test": "variance"}),
    "f-regression": (UnivariateTestSelector, {"test": "f-regression", "labelType": "continuous"}),
    "parzen-ise": (ParzenISERanker, {}),
    "svm-rfe": (SVMRFESelector, {}),
    "mrmr": (InformationSelector, {"criterion": "mrmr"}),
    "jmi": (InformationSelector, {"criterion": "jmi"}),
    "cmim": (InformationSelector, {"criterion": "cmim"}),
    "multisurf": (MultiSURFSelector, {"variant": "multisurf"}),
    "multisurf-star": (MultiSURFSelector, {"variant": "multisurf-star"}),
    "surf": (MultiSURFSelector, {"variant": "surf"}),
    "surf-star": (MultiSURFSelector, {"variant": "surf-star"}),
    "turf": (TuRFSelector, {}),
}


@dataclass(frozen=True)
class MethodFacts:
    """What ``sparkfs methods`` tells of a method besides its Params and what its selector class
    declares it can do (labels, weights: :func:`labels_of`, :func:`takes_weights`). Measured figures
    are not kept here: they are read from the files the benchmarks write (:mod:`sparkfs.figures`)."""

    paper: str
    #: "tested" on a local Spark Connect session (tests/connect), or "untested".
    connect: str


def labels_of(method: str) -> str:
    """"required", "optional" for a method that also runs without labels (its selector's
    ``requires_labels``), "continuous" for one whose label is a regression target, or "either" for
    one that takes classes or, with ``--label-type continuous``, a regression target."""
    selector = build_selector(method, {})
    if selector._continuous_label():
        return "continuous"
    if selector.takesContinuousLabels():
        return "either"
    return "required" if selector.requires_labels else "optional"


def takes_weights(method: str) -> bool:
    """Whether the method takes per-instance weights (``--weight-col``, ``--instance-weighting
    margin``): its selector's ``takesWeights()`` with the params the name fixes."""
    return build_selector(method, {}).takesWeights()


_RELIEF = "Kononenko 1994; Yang & Hu 2012"
#: One entry per name of :data:`METHODS` (a test checks both lists agree).
METHOD_FACTS: Dict[str, MethodFacts] = {
    "lfs": MethodFacts("Cheng, Zhou & Cheng 2011, eq. 19-20 (Fisher-Markov, linear)", "tested"),
    "qfs": MethodFacts("Cheng, Zhou & Cheng 2011, eq. 27-32 (quadratic, exact min-cut)", "tested"),
    "qfs-prime": MethodFacts("Cheng, Zhou & Cheng 2011, QFS' kernel", "untested"),
    "relief": MethodFacts("Yang & Hu 2012, eq. 3 (the margin of the nearest hit and miss; I-Relief for multi-class)",
                          "tested"),
    "relieff": MethodFacts(_RELIEF + " (k neighbours per class)", "tested"),
    "mrelief": MethodFacts("Yang & Hu 2012, MAP-Relief (eq. 16)", "untested"),
    "prelief": MethodFacts("Yang & Hu 2012, Parzen-Relief (eq. 14)", "tested"),
    "lmba": MethodFacts("Li & Lu 2009 (local-margin based, eq. 2-3, 16-17)", "tested"),
    "simba": MethodFacts("Gilad-Bachrach, Navot & Tishby 2004", "tested"),
    "anova": MethodFacts("one-way ANOVA F (Spark ML's ANOVATest, scikit-learn's f_classif)", "tested"),
    "chi2": MethodFacts("scikit-learn's chi2 (non-negative features: counts, tf-idf)", "untested"),
    "variance": MethodFacts("Spark ML's VarianceThresholdSelector: the sample variance, no labels (--threshold T "
                            "keeps every variance above T, as its varianceThreshold)", "tested"),
    "f-regression": MethodFacts("the F test of a linear regression on a continuous label (scikit-learn's "
                                "f_regression, Spark ML's FValueTest)", "tested"),
    "chi2-categorical": MethodFacts("Spark ML's ChiSquareTest (integer-coded features; not for term weights: "
                                    "every distinct value is a category, use chi2)", "untested"),
    "parzen-ise": MethodFacts("modified Parzen window + ISE, fuzzy c-means groups; criterion='marginal' (default) or "
                              "'image' (docs/parzen_ise.md)", "tested"),
    "svm-rfe": MethodFacts("Guyon et al. 2002; Han & Yu 2010 (IW-SVM-RFE); Saeys et al. 2008 (ensemble)", "tested"),
    "mrmr": MethodFacts("Peng, Long & Ding 2005 (MID; MIQ with mrmrForm='quotient'), discretised counts", "tested"),
    "jmi": MethodFacts("Yang & Moody 1999 (joint mutual information), discretised counts", "tested"),
    "cmim": MethodFacts("Fleuret 2004 (conditional mutual information maximisation), discretised counts", "tested"),
    "multisurf": MethodFacts("Urbanowicz et al. 2018 (MultiSURF), scikit-rebate's definition", "tested"),
    "multisurf-star": MethodFacts("Granizo-Mackenzie & Moore 2013 (MultiSURF*), scikit-rebate's definition", "tested"),
    "surf": MethodFacts("Greene et al. 2009 (SURF), scikit-rebate's definition", "untested"),
    "surf-star": MethodFacts("Greene et al. 2010 (SURF*), scikit-rebate's definition", "untested"),
    "turf": MethodFacts("Moore & White 2007 (TuRF around innerMethod), scikit-rebate's TURF", "tested"),
}
#: The code path each method runs (methods of a family differ only in a formula or a fixed Param).
#: The per-method tests (the bad-input matrix, the partition property) run one method of every
#: family; tests/test_method_registry.py fails when a family is missing from one of them, so a
#: method of a new family is tested as soon as it is added here.
FAMILIES: Dict[str, str] = {
    "lfs": "fisher-markov-linear", "qfs": "fisher-markov-quadratic", "qfs-prime": "fisher-markov-quadratic",
    "relief": "relief-neighbours", "relieff": "relief-neighbours", "mrelief": "relief-neighbours",
    "prelief": "relief-kernels", "lmba": "lmba", "simba": "simba",
    "anova": "univariate", "chi2": "univariate", "chi2-categorical": "univariate", "variance": "unlabelled-filter",
    "f-regression": "continuous-filter",
    "parzen-ise": "parzen-ise", "svm-rfe": "svm-rfe",
    "mrmr": "information", "jmi": "information", "cmim": "information",
    "multisurf": "multisurf", "multisurf-star": "multisurf", "surf": "multisurf", "surf-star": "multisurf",
    "turf": "turf",
}


def continuous_label_methods() -> List[str]:
    """The methods that take a continuous label (``--label-type continuous``)."""
    return [method for method in METHODS if build_selector(method, {}).takesContinuousLabels()]


def apply_label_type(selector, method: str, label_type: Optional[str]) -> None:
    """``--label-type`` / the config's ``label_type`` on the selector: a continuous label only for a
    method that takes one (the others are refused, naming those that do); never guessed."""
    if label_type is None:
        return
    if label_type == "continuous":
        if not selector.takesContinuousLabels():
            raise ValueError(f"--method {method} needs class labels (a categorical label); with --label-type "
                             f"continuous use one of: {', '.join(continuous_label_methods())}")
        if selector.labelTypeInUse() != "continuous":
            selector._set(labelType="continuous")
    elif selector._continuous_label():
        raise ValueError(f"--method {method} regresses on a continuous label; --label-type {label_type} asks for "
                         "classes (use anova, chi2 or lfs for class labels)")


def family_of(method: str) -> str:
    """The code path of ``method`` (:data:`FAMILIES`)."""
    return FAMILIES[method]


def add_filter_method(name: str, moment_filter: MomentFilter, facts: MethodFacts) -> None:
    """Register a univariate filter of the class moments as ``--method NAME``: the filter in
    :data:`sparkfs.core.moment_filters.MOMENT_FILTERS`, the method on the filter base
    (:class:`UnivariateTestSelector` with ``test=NAME``), its facts and its family ("univariate",
    so the per-method tests run it as they run anova). The recipe: docs/recipes.md."""
    if name in METHODS or name in MOMENT_FILTERS or name in EVALUATE_ONLY:
        raise ValueError(f"method '{name}' is already registered")
    MOMENT_FILTERS[name] = moment_filter
    METHODS[name] = (UnivariateTestSelector, {"test": name})
    METHOD_FACTS[name] = facts
    FAMILIES[name] = FAMILIES["anova"]


#: Methods only ``sparkfs evaluate`` runs (driver-side baselines on each training fold).
EVALUATE_ONLY: Dict[str, str] = {
    "mutual-info": "scikit-learn's mutual_info_classif on the fold's rows (evaluate only)",
    "random": "random scores, the chance baseline (evaluate only)",
}


def methods_table() -> List[str]:
    """``sparkfs methods``: one line per method name, with what it needs."""
    lines = [f"{'method':17s} {'labels':10s} {'weights':8s} {'Connect':9s} paper / what it is"]
    for name, facts in METHOD_FACTS.items():
        weights = "yes" if takes_weights(name) else "no"
        lines.append(f"{name:17s} {labels_of(name):10s} {weights:8s} {facts.connect:9s} {facts.paper}")
    for name, text in EVALUATE_ONLY.items():
        lines.append(f"{name:17s} {'required':9s} {'no':8s} {'-':9s} {text}")
    lines.append("The `labels` column: required (classes), optional (also without), continuous (a regression "
                 "target), either (classes, or a regression target with --label-type continuous).")
    lines.append("Every method reads dense and sparse vectors (sparse rows stay sparse). "
                 "`sparkfs methods NAME` lists a method's params and what it does on term matrices.")
    lines += term_matrix_advice()
    return lines


def term_matrix_advice() -> List[str]:
    """The methods whose worst structure of the term corpus family is best, from the benchmark's file."""
    ranked = best_worst_case(complete=True)
    if not ranked:
        return ["On term matrices: not measured here (benchmarks/quality_family.py writes the figures)."]
    leaders = ", ".join(f"`{result.method}` (worst '{result.structure}': {result.found:,.0f} of {result.top:,}, "
                        f"chance {result.chance:,.0f})" for result in ranked[:3] if result.found is not None)
    sizes = sorted({result.size for result in ranked})
    partial = sorted({result.method for result in best_worst_case()} - {result.method for result in ranked})
    lines = [f"On term matrices, the best worst case over every structure of the corpus family ({', '.join(sizes)}; "
             f"benchmarks/results/quality_family.md): {leaders}. `sparkfs methods NAME` gives a method's worst and "
             "best structure."]
    if partial:
        lines.append("Measured on only some structures, so not ranked here: "
                     f"{', '.join(f'`{method}`' for method in partial)}.")
    return lines


def method_params(method: str) -> List[str]:
    """``sparkfs methods NAME``: every param a user sets with ``--param``, with its meaning, its
    default and the values it takes, from the declarations the selector validates with."""
    if method in EVALUATE_ONLY:
        return [f"{method}: {EVALUATE_ONLY[method]}; it has no params."]
    selector = build_selector(method, {})
    constraints = selector._all_constraints()
    fixed = METHODS[method][1]
    facts = METHOD_FACTS[method]
    lines = [f"{method}: {type(selector).__name__}" + (f" with {fixed}" if fixed else ""), f"  {facts.paper}",
             f"  labels {labels_of(method)}; weights {'yes' if selector.takesWeights() else 'no'}; Spark Connect "
             f"{facts.connect}",
             *[f"  on term matrices: {line}" for line in quality_summary(method)],
             *([f"  with noise columns: {noise}"] if (noise := noise_columns(method)) else []),
             "params (--param NAME=VALUE):"]
    for param in sorted(selector.params, key=lambda p: p.name):
        if param.name in COLUMN_AND_SELECTION_PARAMS or param.name in fixed:
            continue
        default = selector.getOrDefault(param) if selector.hasDefault(param) else None
        allowed = constraints.get(param.name, (None, "any value its type converts"))[1]
        note = selector.paramNote(param.name)
        lines += [f"  {param.name} (default {default!r}; {allowed})",
                  f"      {param.doc}" + (f". {note}" if note else "")]
    modes = [CLI_SELECTION_MODES[mode] for mode in selector.selectionModes()]
    lines += ["selection (flags; config file: the selection: section):",
              "  --num-features K (default 50): the top K by score; or --threshold T: every score above T",
              f"  --selection-mode {{{','.join(modes)}}} --selection-threshold X"]
    lines += [f"      {mode}: {_MODE_WORDS[mode]}" for mode in modes if mode in _MODE_WORDS]
    if not selector.hasPValues():
        lines.append(f"      (fpr, fdr, fwe need p-values: methods {', '.join(p_value_methods())})")
    return lines


#: Params the CLI sets from its own flags; --param may not set them.
COLUMN_AND_SELECTION_PARAMS = {"featuresCol", "labelCol", "outputCol", "weightCol", "numFeatures", "threshold",
                               "selectionMode", "selectionThreshold", "keptFeatures", "excludedFeatures"}
#: ``--selection-mode`` (and ``selection.selection_mode``) value -> the selectionMode Param's value.
CLI_SELECTION_MODES = {mode: "num-top-features" if mode == "numTopFeatures" else mode for mode in SELECTION_MODES}
_MODE_WORDS = {"percentile": "the top floor(p x X) of the p features by score (X in (0, 1], default 0.1)",
               "fpr": "every feature with p-value < X (alpha in (0, 1], default 0.05)",
               "fdr": "Benjamini-Hochberg: false discovery rate X (alpha in (0, 1], default 0.05)",
               "fwe": "every feature with p-value < X / p, Bonferroni (alpha in (0, 1], default 0.05)"}


def p_value_methods() -> List[str]:
    """The method names whose selector computes p-values (and so takes fpr, fdr and fwe)."""
    return [name for name in METHODS if build_selector(name, {}).hasPValues()]


def apply_selection(selector, method: str, selection: Dict[str, Any]) -> None:
    """Set the selection rule of a config's ``selection:`` section (or the flags) on ``selector``,
    refusing a rule the method does not take in the command line's words, before Spark starts."""
    modes = {cli: mode for mode, cli in CLI_SELECTION_MODES.items()}
    mode = modes[selection.get("selection_mode") or "num-top-features"]
    alpha = selection.get("selection_threshold")
    if mode == "numTopFeatures" and alpha is not None:
        raise ValueError(f"--selection-threshold {alpha:g} is the fraction (percentile) or alpha (fpr, fdr, fwe) of "
                         "--selection-mode; give --selection-mode, or --num-features K for the top K")
    count_rule = [flag for flag, key in (("--num-features", "num_features"), ("--threshold", "threshold"))
                  if selection.get(key) is not None]
    if mode != "numTopFeatures" and count_rule:
        raise ValueError(f"give either --selection-mode {CLI_SELECTION_MODES[mode]} or {count_rule[0]}, not both "
                         "(config: the selection: section's selection_mode or num_features/threshold)")
    if mode not in selector.selectionModes():
        taken = ", ".join(CLI_SELECTION_MODES[m] for m in selector.selectionModes())
        raise ValueError(f"--selection-mode {CLI_SELECTION_MODES[mode]} compares p-values with alpha, and method "
                         f"'{method}' computes none: it takes --selection-mode {taken}. The methods with p-values "
                         f"are {', '.join(p_value_methods())}")
    if selection.get("threshold") is not None:
        selector.setThreshold(selection["threshold"])
    elif selection.get("num_features") is not None:
        selector.setNumFeatures(selection["num_features"])
    selector.setSelectionMode(mode)
    if alpha is not None:
        selector.setSelectionThreshold(alpha)
    selector.validate_params()


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
                             "(--num-features, --threshold, --selection-mode, --selection-threshold, --keep, "
                             "--exclude, --features-col, --label-col, --weight-col; in a config "
                             "file the selection: and input: sections), not as a method param")
        if name in fixed or not selector.hasParam(name):
            settable = sorted(p.name for p in selector.params
                              if p.name not in COLUMN_AND_SELECTION_PARAMS and p.name not in fixed)
            raise ValueError(f"unknown param '{raw_name}' for method '{method}': it takes "
                             f"{', '.join(settable) or 'none'}")
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
