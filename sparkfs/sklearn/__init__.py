"""sparkfs's scikit-learn front: the sparkfs methods as scikit-learn selectors on NumPy / SciPy input.

Each estimator is a ``SelectorMixin`` + ``BaseEstimator`` that computes, on the in-memory ``X``,
the sufficient statistics the Spark layer computes over a DataFrame and feeds them to the same
``sparkfs.core`` functions, so its ``scores_`` are the Spark selector's ``model.scores`` on the
same rows; the selection rule is the Spark selectors' (:mod:`sparkfs.core.selection`). No JVM:
the modules of this package import neither pyspark nor the Spark layers, and fitting starts no JVM
(tests/sklearn checks both); ``sparkfs/__init__.py`` imports the Spark Estimators only when one is
asked for, so importing this package loads no pyspark module at all.

Which methods it covers and which not yet: :data:`FRONT`, :data:`NOT_YET`, docs/sklearn.md.
"""

from sparkfs.sklearn.base import SparkfsSelector
from sparkfs.sklearn.contingency import Chi2CategoricalSelector
from sparkfs.sklearn.filters import ANOVASelector, Chi2Selector, LFSSelector, MomentFilterSelector, VarianceSelector
from sparkfs.sklearn.information import CMIMSelector, InformationFamilySelector, JMISelector, MRMRSelector
from sparkfs.sklearn.margin_weighting import LmbaSelector, SimbaSelector
from sparkfs.sklearn.multisurf import (
    MultiSURFFamilySelector,
    MultiSURFSelector,
    MultiSURFStarSelector,
    SURFSelector,
    SURFStarSelector,
    TuRFSelector,
)
from sparkfs.sklearn.parzen_ise import ParzenISESelector
from sparkfs.sklearn.qfs import QFSPrimeSelector, QFSSelector
from sparkfs.sklearn.registry import FRONT, NOT_YET, estimator_for
from sparkfs.sklearn.regression import FRegressionSelector
from sparkfs.sklearn.relief import (
    MReliefSelector,
    PReliefSelector,
    ReliefFamilySelector,
    ReliefFSelector,
    ReliefSelector,
)
from sparkfs.sklearn.svm_rfe import SVMRFESelector

__all__ = [
    "ANOVASelector",
    "CMIMSelector",
    "Chi2CategoricalSelector",
    "Chi2Selector",
    "FRONT",
    "FRegressionSelector",
    "InformationFamilySelector",
    "JMISelector",
    "LFSSelector",
    "LmbaSelector",
    "MReliefSelector",
    "MRMRSelector",
    "MomentFilterSelector",
    "MultiSURFFamilySelector",
    "MultiSURFSelector",
    "MultiSURFStarSelector",
    "NOT_YET",
    "PReliefSelector",
    "ParzenISESelector",
    "QFSPrimeSelector",
    "QFSSelector",
    "ReliefFSelector",
    "ReliefFamilySelector",
    "ReliefSelector",
    "SVMRFESelector",
    "SURFSelector",
    "SURFStarSelector",
    "SimbaSelector",
    "SparkfsSelector",
    "TuRFSelector",
    "VarianceSelector",
    "estimator_for",
]
