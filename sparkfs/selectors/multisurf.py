"""The MultiSURF family on Spark (SURF, SURF*, MultiSURF, MultiSURF*) and TuRF around any of them."""

from __future__ import annotations

from dataclasses import replace

from pyspark.ml.param import Param, TypeConverters

from sparkfs.core import multisurf as ms_math
from sparkfs.core.options import MultiSURFOptions
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, PreparedInput, ScoreResult
from sparkfs.selectors._params import (
    HasDriverBudget,
    HasLabelType,
    HasPreset,
    HasQueryBatchBytes,
    HasQueryRows,
    HasScaling,
    declare,
    in_range,
    keyword_constructor,
    one_of,
)
from sparkfs.spark.multisurf import multisurf_statistics
from sparkfs.spark.target_moments import target_spread


class _SURFParams(HasQueryRows, HasScaling, HasDriverBudget, HasQueryBatchBytes, HasPreset, HasLabelType):
    """The Params of every MultiSURF-family fit (the Relief family's metric, scaling, sampleSize, ...;
    ``labelType="continuous"``: scikit-rebate's continuous endpoint, S5 of :mod:`sparkfs.core.multisurf`)."""

    _param_notes = {
        "preset": "Here: 'default' chooses metric and scaling from the data when neither is set: on term-like "
                  "data (no negative value, at most 10% non-zero) metric='cosine', scaling='none', else "
                  "scikit-rebate's 'manhattan' and 'range' (the summary's distance_rule says which); 'paper' keeps "
                  "'manhattan' and 'range'",
        "metric": "With preset='default' and neither metric nor scaling set, 'cosine' on term-like data (see preset)",
        "scaling": "With preset='default' and neither metric nor scaling set, 'none' on term-like data (see preset)",
    }
    _param_constraints = {"metric": one_of(*ms_math.METRICS)}
    _defaults = {"metric": "manhattan", "scaling": "range", "driverBudgetMB": 2048.0}

    def distanceFromData(self) -> bool:
        """Whether the fit chooses ``metric`` and ``scaling`` from the data: ``preset="default"`` and
        neither set explicitly (:func:`sparkfs.core.multisurf.default_distance`)."""
        return (self.getOrDefault(self.preset) == "default" and not self.isSet(self.metric)
                and not self.isSet(self.scaling))


class _MultiSURFParams(_SURFParams):
    variant: Param = declare("variant", "'multisurf' (Urbanowicz et al. 2018), 'multisurf-star' (Granizo-Mackenzie & "
                             "Moore 2013), 'surf' (Greene et al. 2009) or 'surf-star' (Greene et al. 2010)",
                             TypeConverters.toString, default="multisurf", constraint=one_of(*ms_math.VARIANTS))


class _TuRFParams(_SURFParams):
    innerMethod: Param = declare("innerMethod", "the method TuRF re-fits each round: 'multisurf', 'multisurf-star', "
                                 "'surf' or 'surf-star'", TypeConverters.toString, default="multisurf",
                                 constraint=one_of(*ms_math.VARIANTS))
    removeFraction: Param = declare(
        "removeFraction", "fraction of the remaining features removed (the lowest scored) per round; at most "
        "int(1 / removeFraction) rounds (scikit-rebate's TURF pct)", TypeConverters.toFloat, default=0.5,
        constraint=((lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 < v < 1.0),
                    "a float in the range (0, 1)"))
    keepFeatures: Param = declare("keepFeatures", "TuRF stops once at most this many features remain (scikit-rebate's "
                                  "num_scores_to_return)", TypeConverters.toInt, default=100,
                                  constraint=in_range(1, kind="an int"))


def _scores(selector, prepared: PreparedInput, variant: str, turf_fraction=None, turf_keep: int = 100) -> ScoreResult:
    """The fit after the shared preamble: the query rule, the engine, the summary facts."""
    name = type(selector).__name__
    num_features, n_rows = prepared.num_features, prepared.n_rows
    label_col, hit_bound = prepared.label_col, None
    if selector._continuous_label():  # one pass over the label: refusals, the rows and S5's bound
        label_col = selector.getLabelCol()
        n_rows, hit_bound = target_spread(prepared.dataset, label_col)
        prepared = replace(prepared, indexed=prepared.dataset, n_rows=n_rows)
    sample_size, sample_rule = selector._query_sample_rule(n_rows)
    if sample_rule == "default":
        selector._warn_default_sample(f"{name} ({variant})", f"the input has {n_rows:,} rows",
                                      f"{sample_size:,} query rows were drawn",
                                      after=" (every pass costs queries x rows x features)", stacklevel=3)
    options = MultiSURFOptions(
        variant=variant, metric=selector.getOrDefault(selector.metric), scaling=selector.getScaling(),
        sample_size=sample_size, seed=selector.getOrDefault(selector.seed),
        block_size=selector.getOrDefault(selector.blockSize), turf_fraction=turf_fraction, turf_keep=turf_keep,
        label_type=selector.labelTypeInUse(), distance_from_data=selector.distanceFromData())
    result = multisurf_statistics(prepared.indexed, selector.getFeaturesCol(), label_col,
                                  num_features=num_features, num_classes=prepared.num_classes, options=options,
                                  engine=selector._engine_options(), hit_bound=hit_bound)
    info = {"method": variant, "metric": result.metric, "scaling": result.scaling,
            "preset": selector.getOrDefault(selector.preset),
            "n_queries": int(result.n_queries),
            "query_sample": sample_rule, "seed": selector.getOrDefault(selector.seed),
            "label_type": selector.labelTypeInUse(),
            **{key: value for key, value in result.info.items() if isinstance(value, (str, int, float, bool, list))}}
    arrays = {"feature_scale": result.feature_scale}
    if result.turf_features is not None:
        info["method"] = "turf"
        info["inner_method"] = variant
        info["turf_final_features"] = [int(j) for j in result.turf_features]
        info["turf_removed_per_round"] = [len(tier) for tier in result.turf_tiers]
    return prepared.result(result.scores, info=info, feature_arrays=arrays)


class MultiSURFSelectorModel(FeatureSelectorModel, _MultiSURFParams):
    """Model of :class:`MultiSURFSelector`: ``scores`` are the variant's (scikit-rebate's
    ``feature_importances_``); ``featureArray("feature_scale")`` the divisor of each feature."""


@keyword_constructor
class MultiSURFSelector(FeatureSelector, _MultiSURFParams):
    """SURF, SURF*, MultiSURF or MultiSURF* (``variant``): Relief-style scores over every row inside a
    distance threshold (:mod:`sparkfs.core.multisurf`, definitions T1-T2 and S1-S4).

    * ``surf``: neighbours closer than the mean distance of all pairs; ``surf-star`` also subtracts
      the terms of the rows farther than it;
    * ``multisurf`` (the default): per query, the rows closer than its mean distance minus half its
      standard deviation; ``multisurf-star`` also adds the far rows' inverted terms (beyond the mean
      plus half the standard deviation).

    Multi-class data as scikit-rebate (each miss class weighted by its share of the misses). With
    the defaults (``metric="manhattan"``, ``scaling="range"``, every row a query) the scores equal
    scikit-rebate's on continuous features. ``preset="default"`` with neither ``metric`` nor
    ``scaling`` set takes ``metric="cosine"`` (rows divided by their norm, then Euclidean) and
    ``scaling="none"`` on term-like data (no negative value, at most 10 % non-zero), as the Relief
    family does: range-scaled Manhattan distances put a query's near rows among the shortest
    documents (docs/multisurf.md); ``preset="paper"`` keeps scikit-rebate's distance on any data.
    ``weightCol``: instance weights (core note 3).
    ``labelType="continuous"``: a regression target, as scikit-rebate's continuous endpoint (core
    S5: a row is a hit of a query when their targets differ by less than the target's sample
    standard deviation, computed exactly in one pass over the label).

    Notes
    -----
    Every row a query (the default up to 1,000 rows) and all rows within one query batch
    (``queryBatchBytes``): one pass, O(n^2 p), each pair's distance computed once (SURF and SURF*:
    one pass more for their global threshold). Otherwise three passes per query batch (distance
    moments, set counts, weighted differences: :mod:`sparkfs.spark.multisurf`), O(m n p) each. No
    n x n matrix, sparse rows stay sparse. With every row a query the rows are collected to the
    driver once (within ``driverBudgetMB``).
    """

    _model_class = MultiSURFSelectorModel
    takes_weights = True
    _unset_keywords = ("metric", "scaling")  # unset (preset 'default'): chosen from the data

    def setVariant(self, value: str):
        return self._set(variant=value)

    def takesContinuousLabels(self) -> bool:
        return True

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        return _scores(self, prepared, self.getOrDefault(self.variant))


class TuRFSelectorModel(FeatureSelectorModel, _TuRFParams):
    """Model of :class:`TuRFSelector`: the final round's scores for the features that survived, each
    removed tier below them (scikit-rebate's TURF scores); ``summary["turf_final_features"]``."""


@keyword_constructor
class TuRFSelector(FeatureSelector, _TuRFParams):
    """TuRF (Moore & White 2007) around a MultiSURF-family method (``innerMethod``), as scikit-rebate's
    ``TURF``: score, remove the ``removeFraction`` lowest-scored of the remaining features, re-score
    the rest; at most ``int(1 / removeFraction)`` rounds, stopping once at most ``keepFeatures``
    remain; then one final fit on what remains. The removed features score below every survivor,
    a tier removed earlier lower (``min - 0.01 x range x tier``).

    Notes
    -----
    Every round is one fit of the inner method on the remaining columns (the tasks slice them):
    one pass (SURF: two) or three per query batch per round (as the inner method), on one prepared input.
    """

    _model_class = TuRFSelectorModel
    takes_weights = True
    _unset_keywords = ("metric", "scaling")  # unset (preset 'default'): chosen from the data

    def takesContinuousLabels(self) -> bool:
        return True

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        return _scores(self, prepared, self.getOrDefault(self.innerMethod),
                       turf_fraction=self.getOrDefault(self.removeFraction),
                       turf_keep=self.getOrDefault(self.keepFeatures))
