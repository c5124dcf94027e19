"""Which ``--method`` names have a scikit-learn front, and which not yet (and why).

``sparkfs.methods.METHODS`` is the registry of the Spark selectors; it imports pyspark, so this
package cannot read it. The link is kept by a test instead (``tests/sklearn/test_registry.py``):
every name of ``METHODS`` must be in :data:`FRONT`, be a filter of the class moments in
:data:`sparkfs.core.moment_filters.MOMENT_FILTERS` (served by :class:`MomentFilterSelector`), or be
in :data:`NOT_YET` with its reason; and every name here must be a method. docs/sklearn.md lists
the same.
"""

from __future__ import annotations

from typing import Dict

from sparkfs.core.moment_filters import MOMENT_FILTERS
from sparkfs.sklearn.base import SparkfsSelector
from sparkfs.sklearn.contingency import Chi2CategoricalSelector
from sparkfs.sklearn.filters import (
    ANOVASelector,
    Chi2Selector,
    LFSSelector,
    MomentFilterSelector,
    VarianceSelector,
    is_class_filter,
)
from sparkfs.sklearn.information import CMIMSelector, JMISelector, MRMRSelector
from sparkfs.sklearn.margin_weighting import LmbaSelector, SimbaSelector
from sparkfs.sklearn.multisurf import (
    MultiSURFSelector,
    MultiSURFStarSelector,
    SURFSelector,
    SURFStarSelector,
    TuRFSelector,
)
from sparkfs.sklearn.parzen_ise import ParzenISESelector
from sparkfs.sklearn.qfs import QFSPrimeSelector, QFSSelector
from sparkfs.sklearn.regression import FRegressionSelector
from sparkfs.sklearn.relief import MReliefSelector, PReliefSelector, ReliefFSelector, ReliefSelector
from sparkfs.sklearn.svm_rfe import SVMRFESelector

#: method name -> its estimator class (the front's own, named classes).
FRONT: Dict[str, type] = {
    "anova": ANOVASelector,
    "chi2": Chi2Selector,
    "variance": VarianceSelector,
    "f-regression": FRegressionSelector,
    "lfs": LFSSelector,
    "relief": ReliefSelector,
    "relieff": ReliefFSelector,
    "mrelief": MReliefSelector,
    "prelief": PReliefSelector,
    "multisurf": MultiSURFSelector,
    "multisurf-star": MultiSURFStarSelector,
    "surf": SURFSelector,
    "surf-star": SURFStarSelector,
    "turf": TuRFSelector,
    "mrmr": MRMRSelector,
    "jmi": JMISelector,
    "cmim": CMIMSelector,
    "svm-rfe": SVMRFESelector,
    "lmba": LmbaSelector,
    "simba": SimbaSelector,
    "chi2-categorical": Chi2CategoricalSelector,
    "parzen-ise": ParzenISESelector,
    "qfs": QFSSelector,
    "qfs-prime": QFSPrimeSelector,
}

#: method name -> why it has no front yet (none now: every method has one). Such a method is absent
#: from the front: no estimator gives numbers that are not its Spark selector's.
NOT_YET: Dict[str, str] = {}


def estimator_for(method: str, **params) -> SparkfsSelector:
    """A new estimator of ``method`` with ``params`` (a filter registered in
    :data:`MOMENT_FILTERS` without a named class gets :class:`MomentFilterSelector`); a method
    without a front raises ``NotImplementedError`` naming it and the reason."""
    if method in FRONT:
        return FRONT[method](**params)
    if method in NOT_YET:
        raise NotImplementedError(f"method '{method}' has no scikit-learn front yet: {NOT_YET[method]} "
                                  "(docs/sklearn.md); use its Spark selector")
    if method in MOMENT_FILTERS and is_class_filter(method):
        return MomentFilterSelector(test=method, **params)
    raise ValueError(f"unknown method '{method}'")
