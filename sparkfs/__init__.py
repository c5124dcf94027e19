"""sparkfs: distributed feature selection on Apache Spark, exact to the papers."""

from sparkfs._version import __version__
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel
from sparkfs.selectors.instance_weighting import MarginInstanceWeighter
from sparkfs.selectors.fisher_markov import FisherMarkovSelector, FisherMarkovSelectorModel
from sparkfs.selectors.information import InformationSelector, InformationSelectorModel
from sparkfs.selectors.multisurf import MultiSURFSelector, MultiSURFSelectorModel, TuRFSelector, TuRFSelectorModel
from sparkfs.selectors.margin_weighting import LmbaSelector, LmbaSelectorModel, SimbaSelector, SimbaSelectorModel
from sparkfs.selectors.parzen_ise import ParzenISERanker, ParzenISERankerModel
from sparkfs.selectors.relief import ReliefSelector, ReliefSelectorModel
from sparkfs.selectors.svm_rfe import SVMRFESelector, SVMRFESelectorModel
from sparkfs.selectors.baseline import UnivariateTestSelector, UnivariateTestSelectorModel
from sparkfs.errors import (DriverBudgetError, InvalidInputError, InvalidModelError, ParamBoundError, SelectionTieWarning,
                            SolverConvergenceWarning, DefaultSampleWarning, SparkMasterError, SparkResourceError, SparkStartError)

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
