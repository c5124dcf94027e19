"""The MultiSURF family and TuRF (scikit-rebate's definitions) as scikit-learn selectors.

The composition of ``spark/multisurf.multisurf_statistics`` with every row as a query (its one-pass
fit), on in-memory rows: the column statistics (:func:`sparkfs.core.sampling.column_statistics`),
the feature scale, then per chunk of queries one distance table to every row giving the thresholds,
the set counts and the weighted differences (:func:`sparkfs.core.multisurf.every_row_terms`); SURF
and SURF* first take T1 from every query's distance moments
(:func:`sparkfs.core.multisurf.every_row_moments`, :func:`sparkfs.core.multisurf.surf_threshold`).
TuRF is :func:`sparkfs.core.multisurf.turf` around that score function. The score is the mean of the
queries' terms. Every row is a query (the Spark selectors' default up to 1,000 rows); drawn query
samples are not in the front yet. ``fit`` takes ``sample_weight``, the Spark selectors' ``weightCol``
(:mod:`sparkfs.core.multisurf` note 3: a row of weight s counts as s copies of itself except as its own
neighbour; thresholds, set counts, differences and the mean over the queries weighted; the scaling and
S5's bound not), through the same core functions. Not a repetition of rows: a row's copies would be in
one another's near sets.

``label_type="continuous"`` scores against a regression target as scikit-rebate's
``label_type="continuous"`` does (:mod:`sparkfs.core.multisurf` S5): a row is a hit of a query when
their targets differ by less than the target's sample standard deviation.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from sparkfs.core import multisurf as ms_math
from sparkfs.core.options import check_int
from sparkfs.core.param_caps import MAX_BLOCK_SIZE
from sparkfs.core.sampling import column_statistics
from sparkfs.core.scaling import SCALINGS, check_magnitude, feature_scale
from sparkfs.errors import InvalidInputError
from sparkfs.sklearn.base import FeatureScores, SparkfsSelector, WeightedFit, bad_param, is_int, is_real
from sparkfs.sklearn.rows import rows_in_units

#: The distances of the family (``core.multisurf.METRICS``; "cosine": Euclidean on unit rows).
METRICS = ms_math.METRICS
#: ``label_type``: classes, or a regression target (S5 of :mod:`sparkfs.core.multisurf`).
LABEL_TYPES = ("categorical", "continuous")


class Endpoint(NamedTuple):
    """What the scores are against: each row's class index (``hit_bound`` None) or its target
    value with S5's bound, and the number of classes (2, hit and miss, for a target)."""

    labels: np.ndarray
    num_classes: int
    hit_bound: Optional[float] = None


class MultiSURFFamilySelector(WeightedFit, SparkfsSelector):
    """A MultiSURF-family selector (Spark: ``MultiSURFSelector(variant=...)``).

    Parameters
    ----------
    variant : {"multisurf", "multisurf-star", "surf", "surf-star"}, default "multisurf"
    metric : {"manhattan", "euclidean", "cosine"} or None, default None
        None: "manhattan" (on range-scaled features, scikit-rebate's distance), or with
        ``preset="default"`` and ``scaling`` None the data's rule (cosine on term-like data: no
        negative value, at most 10 % non-zero). "cosine": rows divided by their norm, then Euclidean.
    scaling : {"none", "range", "standard"} or None, default None
        None: "range", or the data's rule as for ``metric`` ("none" on term-like data).
    preset : {"default", "paper"}, default "default"
        "paper" keeps scikit-rebate's distance whatever the data.
    block_size : int, default 2048
        Queries per distance table (at most 32 MiB of table).
    label_type : {"categorical", "continuous"}, default "categorical"
        ``"continuous"``: ``y`` is a regression target (scikit-rebate's continuous endpoint; hits
        are the rows whose target is within one sample standard deviation of the query's).
    num_features, threshold, selection_mode, selection_threshold, allow_many_classes, missing
        The selection rule (:class:`sparkfs.sklearn.base.SparkfsSelector`).

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        The mean of the queries' terms (scikit-rebate's ``feature_importances_``). No p-values.
    metric_, scaling_ : str
        The distance and scaling the fit used.

    Notes
    -----
    Memory: the rows and one chunk x n distance table; work O(n^2 p) (sparse rows stay sparse).
    """

    variant = None  # a named subclass fixes it; the generic class takes it as a Param
    _choices = (("variant", ms_math.VARIANTS),)

    def __init__(self, variant="multisurf", *, metric=None, scaling=None, preset="default", block_size=2048,
                 label_type="categorical", num_features=None, threshold=None, selection_mode="numTopFeatures",
                 selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        super().__init__(num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                         selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                         kept_features=kept_features, excluded_features=excluded_features,
                         missing=missing)
        self.variant = variant
        self.metric = metric
        self.scaling = scaling
        self.preset = preset
        self.block_size = block_size
        self.label_type = label_type

    @property
    def continuous_target(self) -> bool:
        return self.label_type == "continuous"

    @property
    def method(self) -> str:
        return self.variant

    def _check_method_params(self) -> None:
        owner = type(self).__name__
        choices = self._choices + (("metric", METRICS + (None,)), ("scaling", SCALINGS + (None,)),
                                   ("preset", ("default", "paper")), ("label_type", LABEL_TYPES))
        for name, allowed in choices:
            if getattr(self, name) not in allowed:
                described = "a str among {" + ", ".join(repr(a) for a in allowed if a is not None) + "}"
                raise bad_param(owner, name, described + (" or None" if None in allowed else ""), getattr(self, name))
        check_int("block_size", owner, self.block_size, 1, maximum=MAX_BLOCK_SIZE)

    def _endpoint(self, y) -> Endpoint:
        """The classes of ``y``, or with ``label_type="continuous"`` its values and S5's bound (a
        target needs two rows and a spread: a constant one is refused)."""
        if not self.continuous_target:
            labels = self._class_labels(y)
            return Endpoint(labels.index, int(labels.values.size))
        targets = np.asarray(y, dtype=np.float64)
        if targets.size < 2 or targets.min() == targets.max():
            raise InvalidInputError(f"{type(self).__name__}: y is constant ({targets[0]!r} in all {targets.size} "
                                    "rows): a continuous target needs some spread (S5's hits are within its standard "
                                    "deviation)")
        return Endpoint(targets, 2, ms_math.continuous_hit_bound(targets))

    def _score_features(self, X, y, sample_weight=None) -> FeatureScores:
        labels = self._endpoint(y)
        statistics = column_statistics(X)
        metric, scaling = self._distance(statistics, X.shape[0])
        scale = np.ones(X.shape[1]) if scaling == "none" else feature_scale(
            scaling, minimum=statistics.minimum, maximum=statistics.maximum, std=statistics.std)
        check_magnitude(statistics.minimum, statistics.maximum, 1.0 / scale, owner=type(self).__name__, tiny=True)
        rows = rows_in_units(X, scale, unit_rows=metric == "cosine")
        self.metric_, self.scaling_ = metric, scaling
        return FeatureScores(self._scores(rows, labels, "euclidean" if metric == "cosine" else metric, sample_weight))

    def _distance(self, statistics, num_rows: int):
        """(metric, scaling) of this fit: the data's rule (:func:`sparkfs.core.multisurf.default_distance`)
        with ``preset="default"`` and neither given; else as given or scikit-rebate's."""
        if self.preset == "default" and self.metric is None and self.scaling is None:
            return ms_math.default_distance(statistics.minimum, statistics.non_zeros, num_rows)
        default_metric, default_scaling = ms_math.SCIKIT_REBATE_DISTANCE
        return (self.metric or default_metric), (self.scaling or default_scaling)

    def _scores(self, rows, labels: Endpoint, metric: str, weights=None) -> np.ndarray:
        return variant_scores(self.variant, rows, labels, metric, self.block_size, weights)


def variant_scores(variant: str, rows, labels: Endpoint, metric: str, block_size: int, weights=None) -> np.ndarray:
    """The scores of ``variant`` with every row a query: the Spark layer's one-pass fit
    (``spark/multisurf._every_row_fit``) on in-memory rows, in the same core functions; ``weights``:
    the rows' instance weights (None: all 1)."""
    ids = np.arange(rows.shape[0], dtype=np.int64)
    query_weights = np.ones(ids.size) if weights is None else np.asarray(weights, dtype=np.float64)
    level = None
    if variant not in ms_math.PER_QUERY_THRESHOLD_VARIANTS:  # T1 needs every query's distances first
        moments = ms_math.every_row_moments(rows, ids, rows, ids, weights, metric, block_size=block_size)
        level = ms_math.surf_threshold(moments, query_weights, float(query_weights.sum()))
    terms = ms_math.every_row_terms(variant, rows, ids, labels.labels, weights, rows, ids, labels.labels, weights,
                                    labels.num_classes, metric, level=level, block_size=block_size,
                                    hit_bound=labels.hit_bound)
    return terms["sums"] / query_weights.sum()


class TuRFSelector(MultiSURFFamilySelector):
    """TuRF (Moore & White 2007) around a MultiSURF-family variant, as scikit-rebate's ``TURF``
    (Spark: ``TuRFSelector``, ``method`` ``turf``): score, drop the lowest ``remove_fraction`` of
    the remaining features, re-score the rest, until at most ``keep_features`` remain (at most
    ``int(1 / remove_fraction)`` rounds), then a final fit.

    Parameters
    ----------
    inner_method : {"multisurf", "multisurf-star", "surf", "surf-star"}, default "multisurf"
    remove_fraction : float in (0, 1), default 0.5
    keep_features : int, default 100
    metric, scaling, preset, block_size, label_type, num_features, threshold, selection_mode, selection_threshold,
    allow_many_classes, missing
        As :class:`MultiSURFFamilySelector`.

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        scikit-rebate's TuRF scores (:func:`sparkfs.core.multisurf.turf_scores`): the final fit's
        scores, each eliminated tier below them.
    """

    method = "turf"
    _choices = (("inner_method", ms_math.VARIANTS),)

    def __init__(self, *, inner_method="multisurf", remove_fraction=0.5, keep_features=100, metric=None,
                 scaling=None, preset="default", block_size=2048, label_type="categorical", num_features=None,
                 threshold=None, selection_mode="numTopFeatures", selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        SparkfsSelector.__init__(self, num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                                 selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                                 kept_features=kept_features, excluded_features=excluded_features,
                                 missing=missing)
        self.inner_method = inner_method
        self.remove_fraction = remove_fraction
        self.keep_features = keep_features
        self.metric = metric
        self.scaling = scaling
        self.preset = preset
        self.block_size = block_size
        self.label_type = label_type

    def _check_method_params(self) -> None:
        super()._check_method_params()
        owner = type(self).__name__
        if not (is_real(self.remove_fraction) and 0.0 < self.remove_fraction < 1.0):
            raise bad_param(owner, "remove_fraction", "a float in the range (0, 1)", self.remove_fraction)
        if not (is_int(self.keep_features) and self.keep_features >= 1):
            raise bad_param(owner, "keep_features", "an int in the range [1, inf)", self.keep_features)

    def _scores(self, rows, labels: Endpoint, metric: str, weights=None) -> np.ndarray:
        def score_features(features):
            subset = rows if features.size == rows.shape[1] else rows[:, np.asarray(features, dtype=np.int64)]
            return variant_scores(self.inner_method, subset, labels, metric, self.block_size, weights)

        scores, _, _ = ms_math.turf(score_features, rows.shape[1], float(self.remove_fraction),
                                    int(self.keep_features))
        return scores


def _named_variant(variant: str, class_name: str, summary: str) -> type:
    """A :class:`MultiSURFFamilySelector` with ``variant`` fixed (its ``__init__`` without it)."""

    def __init__(self, *, metric=None, scaling=None, preset="default", block_size=2048, label_type="categorical",
                 num_features=None, threshold=None, selection_mode="numTopFeatures", selection_threshold=None,
                 allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        SparkfsSelector.__init__(self, num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                                 selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                                 kept_features=kept_features, excluded_features=excluded_features,
                                 missing=missing)
        self.metric, self.scaling, self.preset = metric, scaling, preset
        self.block_size, self.label_type = block_size, label_type

    doc = (f"{summary}\n\n    ``method`` ``{variant}`` of sparkfs (Spark: ``MultiSURFSelector(variant='{variant}')``); "
           "see :class:`MultiSURFFamilySelector` for the Params, attributes and notes.\n    ")
    return type(class_name, (MultiSURFFamilySelector,), {"__init__": __init__, "variant": variant, "__doc__": doc,
                                                         "_choices": (), "__module__": __name__})


MultiSURFSelector = _named_variant("multisurf", "MultiSURFSelector",
                                   "MultiSURF (Urbanowicz et al. 2018): per query, the rows nearer than mean - std/2.")
MultiSURFStarSelector = _named_variant("multisurf-star", "MultiSURFStarSelector",
                                       "MultiSURF* (Granizo-Mackenzie & Moore 2013): near and far rows per query.")
SURFSelector = _named_variant("surf", "SURFSelector", "SURF (Greene et al. 2009): the rows nearer than the mean "
                              "distance T1.")
SURFStarSelector = _named_variant("surf-star", "SURFStarSelector",
                                  "SURF* (Greene et al. 2010): near and far rows by the mean distance T1.")
