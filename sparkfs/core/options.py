"""The options of each method, one frozen and validated object per method.

A selector builds its method's options once from its Params and hands them to the method's Spark
function (``relief_statistics(df, ..., options=ReliefOptions(...))``); the Spark function and
the core read them and check nothing again. Every check is in ``__post_init__`` and its message
names the parameter, the function whose parameters these are (``owner``) and the value: "The 'k'
parameter of relief_statistics must be an int in the range [1, inf). Got 0 instead."

The settings of the pair engine itself (row ids, instance weights, transport, the driver budget,
the canonical layout) are one object of the Spark layer, shared by every method on it:
:class:`sparkfs.spark.method_setup.EngineOptions`.

QFS / LFS / Fisher-Markov and the anova / chi2 baselines have no options object: their Spark
functions are the shared one-pass statistics (``class_moments``, ``class_gram_statistics``), whose
few arguments are settings of the pass, not of a method (``docs/recipes.md``, "Options objects").
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar, Optional, Tuple, Union

import numpy as np

from sparkfs.core.information import CRITERIA, MRMR_FORMS
from sparkfs.core.margin_runs import PAPER, MarginRun
from sparkfs.core.multisurf import VARIANTS as MULTISURF_VARIANTS
from sparkfs.core.param_caps import (
    MAX_BIN_SAMPLE,
    MAX_BINS,
    MAX_BLOCK_SIZE,
    MAX_CLUSTERS,
    MAX_PASS_ITERATIONS,
    MAX_SOLVER_ITERATIONS,
)
from sparkfs.core.parzen_ise_options import DEFAULT_CRITERION as PARZEN_CRITERION
from sparkfs.core.parzen_ise_options import DEFAULT_RANK_BY as PARZEN_RANK_BY
from sparkfs.core.parzen_ise_options import check_options as check_parzen_options
from sparkfs.core.relief import CONTINUOUS_VARIANTS as CONTINUOUS_RELIEF_VARIANTS
from sparkfs.core.relief import METRICS as RELIEF_METRICS
from sparkfs.core.relief import VARIANTS as RELIEF_VARIANTS
from sparkfs.core.scaling import SCALINGS

#: Projections of Lmba's step (:mod:`sparkfs.core.margin_weighting`).
PROJECTIONS = ("none", "clip")
#: How the information family codes a feature's values.
DISCRETIZATIONS = ("equal-frequency", "none")
#: How SVM-RFE combines the one-vs-rest weights of a feature (:mod:`sparkfs.core.svm_rfe`).
MULTICLASS = ("l2", "l1")


def invalid(parameter: str, owner: str, constraint: str, value) -> ValueError:
    """The refusal of one parameter's value, naming the parameter, its owner and the value."""
    return ValueError(f"The {parameter!r} parameter of {owner} must be {constraint}. Got {value!r} instead.")


def check_choice(parameter: str, owner: str, value, choices) -> str:
    if not isinstance(value, str) or value not in choices:
        raise invalid(parameter, owner, "a str among {" + ", ".join(repr(c) for c in choices) + "}", value)
    return value


def check_int(parameter: str, owner: str, value, minimum: int, *, optional: bool = False,
              maximum: Optional[int] = None) -> Optional[int]:
    """An int in [``minimum``, ``maximum``] (None: no cap; None too as a value when ``optional``)."""
    if optional and value is None:
        return None
    integer = not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, np.integer))
    if not integer or value < minimum or (maximum is not None and value > maximum):
        cap = "inf)" if maximum is None else f"{maximum}]"
        raise invalid(parameter, owner, f"an int in the range [{minimum}, {cap}" + (" or None" if optional else ""),
                      value)
    return int(value)


def check_positive(parameter: str, owner: str, value, *, allow_zero: bool = False) -> float:
    """A finite float > 0 (>= 0 when ``allow_zero``)."""
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))
    if not number or not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise invalid(parameter, owner, f"a float in the range {'[' if allow_zero else '('}0, inf)", value)
    return float(value)


def check_step(owner: str, step):
    """SVM-RFE's ``step``: an int >= 1 (features per round) or a float in (0, 1) (a share)."""
    integer = isinstance(step, (int, np.integer)) and not isinstance(step, (bool, np.bool_))
    if integer and step >= 1:
        return int(step)
    if isinstance(step, (float, np.floating)) and 0.0 < step < 1.0:
        return float(step)
    raise invalid("step", owner, "an int in the range [1, inf) or a float in the range (0, 1)", step)


def _check_common(options, owner: str) -> None:
    """The fields several methods share: ``sample_size``, ``seed``, ``block_size``, ``scaling``."""
    names = {field.name for field in fields(options)}
    if "sample_size" in names:
        check_int("sample_size", owner, options.sample_size, 1, optional=True)
    if "seed" in names and (isinstance(options.seed, (bool, np.bool_))
                            or not isinstance(options.seed, (int, np.integer))):
        raise invalid("seed", owner, "an int", options.seed)
    if "block_size" in names:
        check_int("block_size", owner, options.block_size, 1, maximum=MAX_BLOCK_SIZE)
    if "scaling" in names:
        check_choice("scaling", owner, options.scaling, SCALINGS)


Sigma = Union[None, float, Tuple[float, ...]]


@dataclass(frozen=True)
class ReliefOptions:
    """The Relief family (:func:`sparkfs.spark.relief.relief_statistics`): ``variant`` among
    relief, relieff, mrelief, prelief; ``k`` neighbours per class; ``sigma`` Parzen-Relief's
    bandwidth in scaled units (a positive float, one per feature, or None: the default)."""

    variant: str
    k: int = 10
    metric: str = "euclidean"
    scaling: str = "none"
    sample_size: Optional[int] = None
    seed: int = 0
    sigma: Sigma = None
    block_size: int = 2048
    return_query_margins: bool = False
    #: The neighbour variants' metric and scaling chosen from the data instead
    #: (:func:`sparkfs.core.relief.default_distance`: cosine on term-like data), as ReliefSelector's
    #: ``preset="default"`` does when neither is set.
    distance_from_data: bool = False
    #: "continuous": the label is a regression target (relief and relieff; core.relief note 9).
    label_type: str = "categorical"

    def __post_init__(self):
        owner = "relief_statistics"
        check_choice("variant", owner, self.variant, RELIEF_VARIANTS)
        check_choice("label_type", owner, self.label_type, ("categorical", "continuous"))
        if self.label_type == "continuous" and self.variant not in CONTINUOUS_RELIEF_VARIANTS:
            raise invalid("variant", owner, f"one of {CONTINUOUS_RELIEF_VARIANTS} with a continuous label",
                          self.variant)
        check_choice("metric", owner, self.metric, RELIEF_METRICS)
        check_int("k", owner, self.k, 1)
        _check_common(self, owner)
        if self.sigma is not None:
            values = np.asarray(self.sigma, dtype=np.float64)
            if values.ndim > 1 or not np.all(np.isfinite(values)) or np.any(values <= 0):
                raise invalid("sigma", owner, "None, a positive float or a list of positive floats", self.sigma)
            if values.ndim == 1:
                object.__setattr__(self, "sigma", tuple(float(v) for v in values))

    def sigma_of(self, num_features: int) -> Optional[np.ndarray]:
        """``sigma`` as one bandwidth per feature (None: the default, from the data)."""
        if self.sigma is None:
            return None
        values = np.asarray(self.sigma, dtype=np.float64)
        if values.ndim == 1 and values.shape[0] != num_features:
            raise invalid("sigma", "relief_statistics",
                          f"None, a positive float or an array of {num_features} positive floats", self.sigma)
        return np.broadcast_to(values, (num_features,)).copy()


@dataclass(frozen=True)
class MultiSURFOptions:
    """The MultiSURF family and TuRF (:func:`sparkfs.spark.multisurf.multisurf_statistics`):
    ``turf_fraction`` (None: no TuRF) of the remaining features removed per round until at most
    ``turf_keep`` remain."""

    variant: str = "multisurf"
    metric: str = "manhattan"
    scaling: str = "range"
    sample_size: Optional[int] = None
    seed: int = 0
    block_size: int = 2048
    turf_fraction: Optional[float] = None
    turf_keep: int = 100
    #: "continuous": the label is a regression target (S5 of :mod:`sparkfs.core.multisurf`).
    label_type: str = "categorical"
    #: The metric and scaling chosen from the data instead (:func:`sparkfs.core.multisurf.default_distance`:
    #: cosine on term-like data), as the selectors' ``preset="default"`` does when neither is set.
    distance_from_data: bool = False

    def __post_init__(self):
        owner = "multisurf_statistics"
        check_choice("variant", owner, self.variant, MULTISURF_VARIANTS)
        check_choice("label_type", owner, self.label_type, ("categorical", "continuous"))
        check_choice("metric", owner, self.metric, RELIEF_METRICS)
        _check_common(self, owner)
        if self.turf_fraction is not None and not (isinstance(self.turf_fraction, (int, float, np.number))
                                                   and 0.0 < self.turf_fraction < 1.0):
            raise invalid("turf_fraction", owner, "None or a float in the range (0, 1)", self.turf_fraction)
        check_int("turf_keep", owner, self.turf_keep, 1)


@dataclass(frozen=True)
class MarginPoolOptions:
    """What Lmba and Simba share (:mod:`sparkfs.spark.margin_weighting`): the loop ``run``, the
    pool (``sample_size`` rows drawn by ``seed``, or all), the rows' ``scaling``, ``block_size``
    rows per kernel block and, with ``within_pool``, the whole loop among the pool's rows."""

    #: The Spark function whose parameters these are (named in the messages).
    owner: ClassVar[str] = "margin_statistics"

    run: MarginRun = PAPER
    sample_size: Optional[int] = None
    seed: int = 0
    scaling: str = "none"
    block_size: int = 2048
    within_pool: bool = False

    def __post_init__(self):
        if not isinstance(self.run, MarginRun):
            raise invalid("run", self.owner, "a MarginRun", self.run)
        _check_common(self, self.owner)


@dataclass(frozen=True)
class LmbaOptions(MarginPoolOptions):
    """Lmba (:func:`sparkfs.spark.margin_weighting.lmba_statistics`): ``k`` target neighbours,
    the hinge's ``c``, the step's ``projection``; the loop and the pool of
    :class:`MarginPoolOptions`."""

    owner: ClassVar[str] = "lmba_statistics"

    k: int = 3
    c: float = 1.0
    projection: str = "none"

    def __post_init__(self):
        check_int("k", self.owner, self.k, 1)
        check_positive("c", self.owner, self.c)
        check_choice("projection", self.owner, self.projection, PROJECTIONS)
        super().__post_init__()


@dataclass(frozen=True)
class SimbaOptions(MarginPoolOptions):
    """Simba (:func:`sparkfs.spark.margin_weighting.simba_statistics`): the loop and the pool of
    :class:`MarginPoolOptions`, nothing of its own."""

    owner: ClassVar[str] = "simba_statistics"


@dataclass(frozen=True)
class InformationOptions:
    """mRMR, JMI and CMIM (:func:`sparkfs.spark.information.information_selection`): ``num_select``
    features by ``criterion`` (mRMR in ``form``), values coded into ``bins`` codes by
    ``discretization`` with cut points from a ``sample_size``-row sample drawn by ``seed``."""

    num_select: int
    criterion: str = "mrmr"
    form: str = "difference"
    bins: int = 10
    discretization: str = "equal-frequency"
    sample_size: int = 10_000
    seed: int = 0

    def __post_init__(self):
        owner = "information_selection"
        check_int("num_select", owner, self.num_select, 1)
        check_choice("criterion", owner, self.criterion, CRITERIA)
        check_choice("form", owner, self.form, MRMR_FORMS)
        check_int("bins", owner, self.bins, 2, maximum=MAX_BINS)
        check_choice("discretization", owner, self.discretization, DISCRETIZATIONS)
        check_int("sample_size", owner, self.sample_size, 1, maximum=MAX_BIN_SAMPLE)
        _check_common(self, owner)


@dataclass(frozen=True)
class SVMRFEOptions:
    """SVM-RFE (:func:`sparkfs.spark.svm_rfe.spark_svm_rfe`, ``sparkml_svm_rfe`` and the driver's
    :func:`sparkfs.core.svm_rfe.svm_rfe`): the elimination (``step``, ``n_features_to_select``,
    ``multiclass``, ``halve_above``), the SVM (``C``, ``max_iter``, ``tol``) and, for the Spark
    solver, ``standardize`` and ``centre`` (fit on the standardised features)."""

    step: Union[int, float] = 0.1
    n_features_to_select: int = 1
    C: float = 1.0
    max_iter: int = 100
    tol: float = 1e-6
    multiclass: str = "l2"
    halve_above: int = 0
    standardize: bool = False
    centre: bool = False

    def __post_init__(self):
        owner = "svm_rfe"
        object.__setattr__(self, "step", check_step(owner, self.step))
        check_int("n_features_to_select", owner, self.n_features_to_select, 1)
        object.__setattr__(self, "C", check_positive("C", owner, self.C))
        check_int("max_iter", owner, self.max_iter, 1, maximum=MAX_SOLVER_ITERATIONS)
        object.__setattr__(self, "tol", check_positive("tol", owner, self.tol))
        check_choice("multiclass", owner, self.multiclass, MULTICLASS)
        check_int("halve_above", owner, self.halve_above, 0)

    def elimination(self) -> dict:
        """The keywords of :func:`sparkfs.core.svm_rfe.recursive_elimination`."""
        return {"step": self.step, "n_features_to_select": self.n_features_to_select,
                "multiclass": self.multiclass, "halve_above": self.halve_above}

    def driver_solver(self) -> dict:
        """The keywords of :func:`sparkfs.core.svm_rfe.svm_rfe` (the driver's liblinear fits)."""
        return {**self.elimination(), "C": self.C, "max_iter": self.max_iter, "tol": self.tol}


@dataclass(frozen=True)
class ParzenISEOptions:
    """Parzen-ISE (:func:`sparkfs.spark.parzen_ise.parzen_ise_statistics` and
    ``parzen_ise_on_sample``; each field is the keyword of
    :func:`sparkfs.core.parzen_ise.parzen_ise_in_memory` of the same name): the groups (FCM's
    ``num_clusters``, ``m``, ``memberships``, ``fcm_tol``, ``fcm_max_iter``, ``seed``), the window
    ``h`` (None: from the data), the descent (``learning_rate``, ``max_iter``, ``tol``), the
    held-out ``fixed_feature``, ``landmarks`` queries, ``variance_floor``, ``block_size``,
    ``criterion`` and ``rank_by``."""

    num_clusters: int = 3
    m: float = 2.0
    memberships: str = "hard"
    h: Optional[float] = None
    learning_rate: float = 0.1
    max_iter: int = 100
    tol: float = 1e-6
    fixed_feature: Union[None, str, int] = "auto"
    landmarks: Optional[int] = None
    seed: int = 0
    variance_floor: float = 1e-6
    fcm_tol: float = 1e-6
    fcm_max_iter: int = 300
    block_size: int = 1024
    criterion: str = PARZEN_CRITERION
    rank_by: str = PARZEN_RANK_BY

    def __post_init__(self):
        owner = "parzen_ise_statistics"
        check_parzen_options(None, owner=owner, **self._descent_fields())
        check_int("num_clusters", owner, self.num_clusters, 1, maximum=MAX_CLUSTERS)
        m_is_number = isinstance(self.m, (int, float, np.number)) and not isinstance(self.m, (bool, np.bool_))
        if not m_is_number or not np.isfinite(self.m) or self.m <= 1:
            raise invalid("m", owner, "a float in the range (1, inf)", self.m)
        check_int("fcm_max_iter", owner, self.fcm_max_iter, 1, maximum=MAX_PASS_ITERATIONS)
        object.__setattr__(self, "fcm_tol", check_positive("fcm_tol", owner, self.fcm_tol, allow_zero=True))
        _check_common(self, owner)

    def _descent_fields(self) -> dict:
        names = ("memberships", "fixed_feature", "landmarks", "max_iter", "block_size", "learning_rate", "tol",
                 "variance_floor", "h", "criterion", "rank_by")
        return {name: getattr(self, name) for name in names}

    def checked(self, num_features: int) -> dict:
        """:func:`sparkfs.core.parzen_ise_options.check_options` of these options on ``num_features``
        features (the descent's dict, floats as floats; ``fixed_feature`` within the features)."""
        return check_parzen_options(num_features, owner="parzen_ise_statistics", **self._descent_fields())

    def in_memory(self) -> dict:
        """The keywords of :func:`sparkfs.core.parzen_ise.parzen_ise_in_memory`."""
        return {field.name: getattr(self, field.name) for field in fields(self)}


@dataclass(frozen=True)
class MarginWeightOptions:
    """Han & Yu's margin instance weights (:func:`sparkfs.spark.instance_weighting.margin_instance_weights`):
    ``block_size`` rows per kernel block in the tasks; the rest is the engine's."""

    block_size: int = 2048

    def __post_init__(self):
        _check_common(self, "margin_instance_weights")
