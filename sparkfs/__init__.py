"""sparkfs: distributed feature selection on Apache Spark, exact to the papers."""

from importlib import import_module

from sparkfs._version import __version__
from sparkfs.errors import (
    DefaultSampleWarning,
    DriverBudgetError,
    InvalidInputError,
    InvalidModelError,
    ParamBoundError,
    SelectionTieWarning,
    SolverConvergenceWarning,
    SparkMasterError,
    SparkResourceError,
    SparkStartError,
)

#: The Estimators and Models, imported when first asked for (PEP 562): ``import sparkfs.sklearn``
#: (the scikit-learn front on in-memory data) then imports neither pyspark nor the Spark layers.
_LAZY = {
    "sparkfs.selectors._base": ("FeatureSelector", "FeatureSelectorModel"),
    "sparkfs.selectors.instance_weighting": ("MarginInstanceWeighter",),
    "sparkfs.selectors.fisher_markov": ("FisherMarkovSelector", "FisherMarkovSelectorModel"),
    "sparkfs.selectors.information": ("InformationSelector", "InformationSelectorModel"),
    "sparkfs.selectors.multisurf": ("MultiSURFSelector", "MultiSURFSelectorModel", "TuRFSelector", "TuRFSelectorModel"),
    "sparkfs.selectors.margin_weighting": ("LmbaSelector", "LmbaSelectorModel", "SimbaSelector", "SimbaSelectorModel"),
    "sparkfs.selectors.parzen_ise": ("ParzenISERanker", "ParzenISERankerModel"),
    "sparkfs.selectors.relief": ("ReliefSelector", "ReliefSelectorModel"),
    "sparkfs.selectors.svm_rfe": ("SVMRFESelector", "SVMRFESelectorModel"),
    "sparkfs.selectors.baseline": ("UnivariateTestSelector", "UnivariateTestSelectorModel"),
}
_MODULE_OF = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'sparkfs' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    "__version__",
    "FeatureSelector",
    "FeatureSelectorModel",
    "FisherMarkovSelector",
    "FisherMarkovSelectorModel",
    "InformationSelector",
    "InformationSelectorModel",
    "DriverBudgetError",
    "InvalidInputError",
    "InvalidModelError",
    "ParamBoundError",
    "LmbaSelector",
    "MultiSURFSelector",
    "MultiSURFSelectorModel",
    "TuRFSelector",
    "TuRFSelectorModel",
    "MarginInstanceWeighter",
    "LmbaSelectorModel",
    "ParzenISERanker",
    "ParzenISERankerModel",
    "ReliefSelector",
    "ReliefSelectorModel",
    "SimbaSelector",
    "SimbaSelectorModel",
    "SVMRFESelector",
    "SVMRFESelectorModel",
    "SelectionTieWarning",
    "SolverConvergenceWarning",
    "DefaultSampleWarning",
    "SparkMasterError",
    "SparkResourceError",
    "SparkStartError",
    "UnivariateTestSelector",
    "UnivariateTestSelectorModel",
]
