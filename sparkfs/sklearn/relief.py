"""The Relief family (Yang & Hu 2012) as scikit-learn selectors: relief, relieff, mrelief, prelief.

The composition of ``spark/relief.relief_statistics`` with every row as a query, on in-memory rows:
the column statistics (:func:`sparkfs.core.sampling.column_statistics`, what the Spark layer computes
when the rows are on the driver), the distance rule of ``preset="default"``
(:func:`sparkfs.core.relief.default_distance`), the feature scale, the rows in those units, then the
k nearest per class (:func:`sparkfs.core.neighbours.local_neighbour_table`, ties to the lower row)
and the margin pairs of the variant summed (:func:`sparkfs.core.relief.margin_pairs`,
:func:`sparkfs.core.relief.margin_sums`), or Parzen-Relief's kernel sums
(:func:`sparkfs.core.relief.prelief_margin_sums`). The score is the mean margin over the rows.

Row ids are the row positions, as the Spark selectors' default (``deterministic=False``, no
``rowIdCol``), so neighbour ties go to the same rows. Every row is a query: the Spark selector's
default up to 1,000 rows (above that it draws 1,000 unless ``sampleSize`` is set); drawn query
samples are not in the front yet. ``ReliefFSelector.fit`` takes ``sample_weight``, the Spark selector's
``weightCol`` (:mod:`sparkfs.core.relief` note 8: weighted priors, each class's found neighbours averaged
by weight, the queries' margins weighted; the search and the scaling as without weights), through the
same core functions (:func:`sparkfs.core.relief.weighted_relieff_pairs`,
:func:`~sparkfs.core.relief.weighted_continuous_pairs`). Not a repetition of rows: a row's copies would
be one another's nearest hits.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

from sparkfs.core import relief as relief_math
from sparkfs.core.multisurf import continuous_hit_bound
from sparkfs.core.neighbours import PAD_ID, local_neighbour_table
from sparkfs.core.options import check_int
from sparkfs.core.param_caps import MAX_BLOCK_SIZE
from sparkfs.core.sampling import column_statistics
from sparkfs.core.scaling import SCALINGS, check_magnitude, feature_scale
from sparkfs.errors import InvalidInputError
from sparkfs.sklearn.base import FeatureScores, SparkfsSelector, WeightedFit, bad_param, is_real
from sparkfs.sklearn.rows import rows_in_units

#: metric and scaling when one of them is given and the other is None (the Spark selector's defaults).
DEFAULT_METRIC, DEFAULT_SCALING = "euclidean", "range"


class _Labels(NamedTuple):
    """The classes of ``y`` (values, each row's index, counts), or on a continuous endpoint its
    values as ``index`` with ``hit_bound`` set (values and counts empty)."""

    values: np.ndarray
    index: np.ndarray
    counts: np.ndarray
    hit_bound: Optional[float]


class ReliefFamilySelector(SparkfsSelector):
    """A Relief-family selector (Spark: ``ReliefSelector(variant=...)``): features ranked by their
    mean margin over every row as a query (:mod:`sparkfs.core.relief` for the four margins).

    Parameters
    ----------
    variant : {"relief", "relieff", "mrelief", "prelief"}, default "relieff"
    k : int, default 10
        Nearest hits and misses per query (per other class for relieff); unused by prelief.
    metric : {"euclidean", "manhattan", "cosine"} or None, default None
        None: "euclidean", or with ``preset="default"`` and ``scaling`` None the data's rule
        (cosine on term-like data: no negative value, at most 10 % non-zero).
    scaling : {"none", "range", "standard"} or None, default None
        The divisor of every feature before the search and the margins; None: "range", or the
        data's rule as for ``metric`` ("none" on term-like data).
    preset : {"default", "paper"}, default "default"
        "paper" keeps euclidean distances on range-scaled features whatever the data.
    sigma : float, array of shape (n_features,) or None, default None
        prelief's bandwidth in scaled units; None: 0.01 x each scaled feature's range.
    block_size : int, default 2048
        Rows per block of the distance (or kernel) computation.
    label_type : {"categorical", "continuous"}, default "categorical"
        ``"continuous"`` (relief and relieff): ``y`` is a regression target; per query its k nearest
        hits (targets within one sample standard deviation of its own) and k nearest misses
        (:mod:`sparkfs.core.relief` note 9).
    num_features, threshold, selection_mode, selection_threshold, allow_many_classes, missing
        The selection rule (:class:`sparkfs.sklearn.base.SparkfsSelector`).

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        The mean margins. No p-values.
    weights_ : ndarray (n_features,)
        ``(scores)^+ / ||(scores)^+||_2``, eq. (4).
    metric_, scaling_ : str
        The distance and scaling the fit used.

    Notes
    -----
    Memory: the rows, one block x block distance matrix and the n x C x k neighbour table; work
    O(n^2 p) for the search (sparse rows stay sparse). A class of a single row is refused (its
    query has no hit).
    """

    variant = None  # a named subclass fixes it; the generic class takes it as a Param

    def __init__(self, variant="relieff", *, k=10, metric=None, scaling=None, preset="default", sigma=None,
                 block_size=2048, label_type="categorical", num_features=None, threshold=None,
                 selection_mode="numTopFeatures", selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        super().__init__(num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                         selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                         kept_features=kept_features, excluded_features=excluded_features,
                         missing=missing)
        self.variant = variant
        self.k = k
        self.metric = metric
        self.scaling = scaling
        self.preset = preset
        self.sigma = sigma
        self.block_size = block_size
        self.label_type = label_type

    @property
    def method(self) -> str:
        return self.variant

    @property
    def continuous_target(self) -> bool:
        return self.label_type == "continuous"

    def _check_method_params(self) -> None:
        owner = type(self).__name__
        choices = (("variant", relief_math.VARIANTS), ("metric", relief_math.METRICS + (None,)),
                   ("scaling", SCALINGS + (None,)), ("preset", ("default", "paper")),
                   ("label_type", ("categorical", "continuous")))
        for name, allowed in choices:
            if getattr(self, name) not in allowed:
                described = "a str among {" + ", ".join(repr(a) for a in allowed if a is not None) + "}"
                raise bad_param(owner, name, described + (" or None" if None in allowed else ""), getattr(self, name))
        if self.continuous_target and self.variant not in relief_math.CONTINUOUS_VARIANTS:
            raise bad_param(owner, "variant", "'relief' or 'relieff' with label_type='continuous'", self.variant)
        check_int("k", owner, self.k, 1)
        check_int("block_size", owner, self.block_size, 1, maximum=MAX_BLOCK_SIZE)
        if self.sigma is not None:
            values = np.asarray(self.sigma, dtype=object).ravel()
            if values.size == 0 or not all(is_real(v) and np.isfinite(v) and v > 0 for v in values):
                raise bad_param(owner, "sigma", "None, a positive float or an array of positive floats", self.sigma)

    def _distance(self, statistics, num_rows: int):
        """(metric, scaling) of this fit: the data's rule (:func:`sparkfs.core.relief.default_distance`)
        with ``preset="default"``, a neighbour variant and neither given; else as given or the defaults."""
        if (self.preset == "default" and self.metric is None and self.scaling is None
                and self.variant in relief_math.NEIGHBOUR_VARIANTS):
            return relief_math.default_distance(statistics.minimum, statistics.non_zeros, num_rows)
        return (self.metric or DEFAULT_METRIC), (self.scaling or DEFAULT_SCALING)

    def _score_features(self, X, y, sample_weight=None) -> FeatureScores:
        labels = self._endpoint(y)
        single = labels.values[labels.counts == 1].tolist() if labels.hit_bound is None else []
        if single:
            raise InvalidInputError(f"class {single[0]} has a single row: a query of it has no other row of its "
                                    "class (no nearest hit); remove it or merge it with another class")
        statistics = column_statistics(X)
        metric, scaling = self._distance(statistics, X.shape[0])
        scale = np.ones(X.shape[1]) if scaling == "none" else feature_scale(
            scaling, minimum=statistics.minimum, maximum=statistics.maximum, std=statistics.std)
        check_magnitude(statistics.minimum, statistics.maximum, 1.0 / scale, owner=type(self).__name__, tiny=True)
        neighbours = self.variant in relief_math.NEIGHBOUR_VARIANTS
        rows = rows_in_units(X, scale, unit_rows=neighbours and metric == "cosine")
        ids = np.arange(X.shape[0], dtype=np.int64)
        if neighbours:
            sums = self._neighbour_margin_sums(rows, ids, labels, metric, sample_weight)
        else:
            sigma = (relief_math.default_parzen_sigma((statistics.maximum - statistics.minimum) / scale)
                     if self.sigma is None else np.broadcast_to(np.asarray(self.sigma, float), (X.shape[1],)))
            sums = relief_math.prelief_margin_sums(rows, ids, labels.index, rows, ids, labels.index,
                                                   class_counts=labels.counts, sigma=sigma, block_size=self.block_size)
        scores = sums / (X.shape[0] if sample_weight is None else float(np.sum(sample_weight)))
        return FeatureScores(scores, None, {"weights": relief_math.relief_weights(scores), "metric": metric,
                                            "scaling": scaling})

    def _endpoint(self, y):
        """The classes of ``y``, or with ``label_type="continuous"`` its values as the labels, with
        note 9's bound (``hit_bound``; a constant target is refused)."""
        if not self.continuous_target:
            return _Labels(*self._class_labels(y), None)
        targets = np.asarray(y, dtype=np.float64)
        if targets.size < 2 or targets.min() == targets.max():
            raise InvalidInputError(f"{type(self).__name__}: y is constant ({targets[0]!r} in all {targets.size} "
                                    "rows): a continuous target needs some spread (hits are within its standard "
                                    "deviation)")
        return _Labels(np.zeros(0), targets, np.zeros(0, dtype=np.int64), continuous_hit_bound(targets))

    def _neighbour_margin_sums(self, rows, ids, labels, metric: str, sample_weight=None) -> np.ndarray:
        """The search (per query and class the k nearest, the query excluded, ties to the lower row)
        and the variant's margin pairs summed over all queries (with ``sample_weight``: relieff's
        weighted pairs, each query's scaled by its weight)."""
        shift = None if sp.issparse(rows) else np.round(rows.mean(axis=0))  # the Spark search's GEMM shift
        continuous = labels.hit_bound is not None
        table = local_neighbour_table(rows, ids, rows, ids, labels.index,
                                      num_classes=2 if continuous else labels.values.size, k=self.k,
                                      metric="euclidean" if metric == "cosine" else metric,
                                      block_size=self.block_size, shift=shift,
                                      query_targets=labels.index if continuous else None, hit_bound=labels.hit_bound)
        if sample_weight is not None:
            pairs = _weighted_pairs(table, labels, np.asarray(sample_weight, dtype=np.float64), continuous)
        elif continuous:
            pairs = relief_math.continuous_pairs(table)
        else:
            pairs = relief_math.margin_pairs(self.variant, table, labels.index,
                                             relief_math.class_priors(labels.counts))
        sums, _ = relief_math.margin_sums(rows, rows, pairs.query_positions, pairs.neighbour_ids, pairs.weights)
        return sums


def _weighted_pairs(table, labels: _Labels, weights: np.ndarray, continuous: bool):
    """ReliefF's instance-weighted pairs (:mod:`sparkfs.core.relief` note 8; note 9 on a continuous target):
    the neighbours' weights looked up by row id (= position), the priors the classes' weight shares."""
    found = table.neighbour_ids != PAD_ID
    neighbour_weights = np.where(found, weights[np.where(found, table.neighbour_ids, 0)], 0.0)
    if continuous:
        return relief_math.weighted_continuous_pairs(table, weights, neighbour_weights)
    priors = relief_math.class_priors(np.bincount(labels.index, weights=weights, minlength=labels.values.size))
    return relief_math.weighted_relieff_pairs(table, labels.index, priors, weights, neighbour_weights)


def _named_variant(variant: str, class_name: str, summary: str) -> type:
    """A :class:`ReliefFamilySelector` with ``variant`` fixed (its ``__init__`` without it); relieff's
    ``fit`` takes ``sample_weight`` (:class:`~sparkfs.sklearn.base.WeightedFit`), as its Spark selector
    takes ``weightCol``."""

    def __init__(self, *, k=10, metric=None, scaling=None, preset="default", sigma=None, block_size=2048,
                 label_type="categorical", num_features=None, threshold=None, selection_mode="numTopFeatures",
                 selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        SparkfsSelector.__init__(self, num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                                 selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                                 kept_features=kept_features, excluded_features=excluded_features,
                                 missing=missing)
        self.k, self.metric, self.scaling, self.preset = k, metric, scaling, preset
        self.sigma, self.block_size, self.label_type = sigma, block_size, label_type

    doc = (f"{summary}\n\n    ``method`` ``{variant}`` of sparkfs (Spark: ``ReliefSelector(variant='{variant}')``); "
           "see :class:`ReliefFamilySelector` for the Params, attributes and notes.\n    ")
    bases = (WeightedFit, ReliefFamilySelector) if variant == "relieff" else (ReliefFamilySelector,)
    return type(class_name, bases, {"__init__": __init__, "variant": variant, "__doc__": doc, "__module__": __name__})


ReliefSelector = _named_variant("relief", "ReliefSelector",
                                "Relief, eq. (3): the nearest miss among all other classes (I-Relief).")
ReliefFSelector = _named_variant("relieff", "ReliefFSelector",
                                 "Kononenko's ReliefF: k hits, and k misses per other class weighted by its prior.")
MReliefSelector = _named_variant("mrelief", "MReliefSelector", "MAP-Relief, eq. (16).")
PReliefSelector = _named_variant("prelief", "PReliefSelector",
                                 "Parzen-Relief, eq. (14): per-feature Gaussian kernel means, no neighbour search.")
