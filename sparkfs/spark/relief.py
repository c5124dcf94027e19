"""The Relief family on the pair engine: a short composition of :class:`Rows` and its passes.

The formulas live in :mod:`sparkfs.core.relief` (which neighbours, with which weight: the
variant is chosen there, by :func:`sparkfs.core.relief.margin_pairs`); the passes in
:mod:`sparkfs.spark.neighbours`. Passes:

* all rows as queries (``sample_size=None``): one collection gives the queries, counts, row ids
  and (if needed) the column statistics;
* with a sample: counts (JVM), column statistics (chunk moments in the canonical order, only for scaling or
  Parzen's default bandwidth) and the seeded sample;
* then per query batch: neighbour search + pair sums (relief, relieff, mrelief), or one pass of
  kernel sums (prelief, no search).

Small classes: each margin term averages over the min(k, available) neighbours; the classes
with fewer than k + 1 rows are reported (``info["short_classes"]``). A class with a single row
(no hit for its query) and a single class are refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, Optional

import numpy as np

from sparkfs.core import relief as relief_math
from sparkfs.core.options import ReliefOptions, check_int
from sparkfs.errors import InvalidInputError
from sparkfs.spark.method_setup import EngineOptions, feature_scale_of, options_of, rows_with_queries
from sparkfs.spark.neighbours import kernel_sums, nearest, pair_sums
from sparkfs.spark.passes import ShippedQueries, query_batches
from sparkfs.spark.rows import Rows
from sparkfs.spark.target_moments import target_spread


@dataclass
class ReliefResult:
    """What :func:`relief_statistics` returns.

    Attributes
    ----------
    scores : ndarray (p,)
        Mean margin over the queries (the Relief score; rank features by it).
    weights : ndarray (p,)
        ``(scores)^+ / ||(scores)^+||_2``, eq. (4).
    variant, metric, scaling : str
    k : int
        Neighbours per class (unused by Parzen-Relief).
    n_rows, n_queries : int
    class_counts : ndarray (C,) of int
    class_priors : ndarray (C,)
        ``n_c / n`` over all rows.
    query_ids, query_labels : ndarray (m,)
        The queries (sorted by row id).
    neighbour_ids, neighbour_distances : ndarray (m, C, k) or None
        Per query and class the k nearest rows, nearest first (distances squared for
        Euclidean; pads -1 / inf for short classes). None for Parzen-Relief.
    query_margins : ndarray (m, p) or None
        Per-query margin vectors (``return_query_margins=True``).
    feature_scale : ndarray (p,)
        The divisor applied to each feature (1 for ``scaling="none"`` and constant features).
    sigma : ndarray (p,) or None
        Parzen bandwidth per feature in scaled units (Parzen-Relief only).
    info : dict
        Passes run, query batches, the row-id source and the short classes (for the summary).
    """

    scores: np.ndarray
    weights: np.ndarray
    variant: str
    metric: str
    scaling: str
    k: int
    n_rows: int
    n_queries: int
    class_counts: np.ndarray
    class_priors: np.ndarray
    query_ids: np.ndarray
    query_labels: np.ndarray
    neighbour_ids: Optional[np.ndarray] = None
    neighbour_distances: Optional[np.ndarray] = None
    query_margins: Optional[np.ndarray] = None
    feature_scale: Optional[np.ndarray] = None
    sigma: Optional[np.ndarray] = None
    info: Dict[str, Any] = field(default_factory=dict)


def _check_class_sizes(class_counts: np.ndarray) -> None:
    present = np.flatnonzero(class_counts > 0)
    if present.size < 2:
        raise InvalidInputError(
            f"Relief needs rows of at least two classes; the input has rows of class {present.tolist()} only"
        )
    single = [int(c) for c in present if class_counts[c] < 2]
    if single:
        raise InvalidInputError(
            f"class {single[0]} has a single row: a query of it has no other row of its class (no nearest hit, "
            f"and Parzen-Relief's same-class mean is empty); remove it or merge it with another class"
        )


def _neighbour_weights(rows: Rows, neighbour_ids: np.ndarray, *, continuous: bool = False):
    """One pass: the weight sum of every class (none on a continuous target: no priors), and the
    instance weight of every neighbour in ``neighbour_ids`` (0 for padding)."""
    from sparkfs.core.neighbours import PAD_ID

    wanted = np.unique(neighbour_ids[neighbour_ids != PAD_ID])
    num_classes = rows.num_classes

    def summarize(block, handle):
        keep = np.isin(block.ids, handle.value)
        class_weights = (np.zeros(0) if continuous
                         else np.bincount(block.labels, weights=block.weights, minlength=num_classes))
        return {"class_weights": class_weights, "ids": block.ids[keep].astype(np.int64),
                "weights": block.weights[keep]}

    def merge(left, right):
        return {"class_weights": left["class_weights"] + right["class_weights"],
                "ids": np.concatenate([left["ids"], right["ids"]]),
                "weights": np.concatenate([left["weights"], right["weights"]])}

    with rows.shipped(wanted) as handle:
        summary = rows.run_pass("neighbour weights", lambda block: summarize(block, handle), merge)
    order = np.argsort(summary["ids"], kind="stable")
    ids, weights = summary["ids"][order], summary["weights"][order]
    if not np.array_equal(ids, wanted):
        raise RuntimeError(f"fetched {ids.size} weights for {wanted.size} neighbours: the input changed between passes")
    neighbour_weights = np.zeros(neighbour_ids.shape)
    present = neighbour_ids != PAD_ID
    neighbour_weights[present] = weights[np.searchsorted(ids, neighbour_ids[present])]
    return summary["class_weights"], neighbour_weights


def relief_statistics(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                      options: Optional[ReliefOptions] = None, engine: Optional[EngineOptions] = None,
                      hit_bound: Optional[float] = None) -> ReliefResult:
    """Relief-family scores of the features of ``df`` (see the module notes for the passes).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    features_col : str
        A ``pyspark.ml`` vector column (dense or sparse; sparse rows stay sparse).
    label_col : str
        Numeric class index 0..C-1 (e.g. a StringIndexer output); with
        ``options.label_type="continuous"`` a regression target (:mod:`sparkfs.core.relief` note 9:
        per query its k nearest hits, the rows whose target is within the target's sample standard
        deviation of its own, and k nearest misses).
    num_features, num_classes : int
        (``num_classes`` is not used with a continuous target.)
    options : ReliefOptions
        The method's options (:class:`sparkfs.core.options.ReliefOptions`): ``variant`` (relief:
        margin of eq. (3); relieff: Kononenko; mrelief: eq. (16); prelief: eq. (14)), ``k``
        nearest hits and misses per query (per other class for ReliefF; fewer where a class has
        fewer rows, module notes), ``metric``, ``scaling`` (divide each feature by its range or
        sample std before the search and the margins), ``sample_size`` (Relief's m, drawn by
        ``seed``; None uses every row, collected to the driver once: use a sample for large n,
        the search costs O(m n p)), ``sigma`` (Parzen-Relief's bandwidth in scaled units; None:
        the paper's 0.01 on [0, 1]-scaled data), ``block_size``, ``return_query_margins`` (also
        return the (m, p) per-query margin vectors).
    engine : EngineOptions
        The engine's settings (:class:`sparkfs.spark.method_setup.EngineOptions`): ``row_id_col``,
        ``transport`` ("dataframe" runs on Spark Connect), ``query_batch_bytes``,
        ``driver_budget_mb``, ``canonical`` (the canonical layout of :class:`Rows`: the same bits
        for any partitioning, one shuffle; False: equal to rounding only) and ``weight_col``:
        instance weights (``relieff`` only; :mod:`sparkfs.core.relief` notes 8 and 9: weighted
        priors, neighbours averaged by weight, queries' margins weighted; one extra pass fetches
        the neighbours' weights and the per-class weight sums).
    hit_bound : float, optional
        A continuous target's bound when the caller has it (:func:`~sparkfs.spark.target_moments.target_spread`);
        None: one pass over the label computes it.
    """
    options, engine = options_of(ReliefOptions, options, engine)
    continuous = options.label_type == "continuous"
    check_int("num_features", "relief_statistics", num_features, 1)
    if not continuous:
        check_int("num_classes", "relief_statistics", num_classes, 2)
    if engine.weight_col is not None and options.variant != "relieff":
        raise ValueError(f"instance weights are defined for variant 'relieff' only, not {options.variant!r}")
    if continuous and hit_bound is None:
        hit_bound = target_spread(df, label_col).std
    sigma = options.sigma_of(num_features)
    check_classes = (lambda counts: None) if continuous else _check_class_sizes
    with rows_with_queries(df, features_col, label_col, num_features=num_features,
                           num_classes=None if continuous else num_classes, engine=engine,
                           sample_size=options.sample_size, seed=options.seed, targets=continuous,
                           check_classes=check_classes) as (rows, queries):
        class_counts = rows.class_counts
        options, distance_rule = _distance_of(rows, options)
        needs_sigma = options.variant == "prelief" and sigma is None
        scale, statistics = feature_scale_of(rows, options.scaling, need_statistics=needs_sigma)
        if needs_sigma:
            sigma = relief_math.default_parzen_sigma((statistics.maximum - statistics.minimum) / scale)
        neighbours = options.variant in relief_math.NEIGHBOUR_VARIANTS
        scaled = rows.scaled_by(scale, unit_rows=neighbours and options.metric == "cosine")
        scaled.check_magnitude(options.variant)
        sums, table, priors = _margin_sums(rows, scaled, queries, options, sigma, engine.weight_col is not None,
                                           hit_bound)
        info = dict(rows.info)
        if continuous:
            info["label_type"], info["hit_bound"] = "continuous", hit_bound
        if distance_rule:
            info["distance_rule"] = distance_rule
        info["query_batches"] = len(query_batches(rows, queries))
        info["transport"] = rows.transport
    return _result(options, queries, class_counts, priors, sums, table, scale, sigma, info,
                   weighted=engine.weight_col is not None)


def _distance_of(rows: Rows, options: ReliefOptions):
    """``(options, rule)``: with ``distance_from_data`` (neighbour variants), the metric and scaling
    of :func:`sparkfs.core.relief.default_distance` from the column statistics (the pass every fit
    runs for its magnitude check) and the rule's words for the summary; else as given, rule None."""
    if not options.distance_from_data or options.variant not in relief_math.NEIGHBOUR_VARIANTS:
        return options, None
    metric, scaling, rule = distance_from_data(rows, relief_math.default_distance)
    return replace(options, metric=metric, scaling=scaling, distance_from_data=False), rule


def distance_from_data(rows: Rows, default_distance):
    """``(metric, scaling, rule)``: what ``default_distance`` (a core rule of the columns' minimum,
    their non-zero counts and the rows) chooses from the rows' column statistics, and the rule in
    the summary's words (term-like or not, and why)."""
    statistics, num_rows = rows.column_statistics(), int(rows.class_counts.sum())
    metric, scaling = default_distance(statistics.minimum, statistics.non_zeros, num_rows)
    share = float(statistics.non_zeros.sum()) / max(1.0, float(num_rows) * rows.num_features)
    kind = "term-like" if (metric, scaling) == relief_math.TERM_LIKE_DISTANCE else "not term-like"
    rule = (f"{kind} data ({'no' if statistics.minimum.min() >= 0 else 'some'} negative values, "
            f"{100 * share:.1f}% non-zero): metric={metric}, scaling={scaling}")
    return metric, scaling, rule


def _margin_sums(rows: Rows, scaled: Rows, queries, options: ReliefOptions, sigma, weighted: bool,
                 hit_bound: Optional[float] = None):
    """The passes of one fit: ``(sums, neighbour table or None, class priors)`` (a continuous
    target, ``hit_bound``: no priors, the pairs of core.relief note 9)."""
    class_counts, variant = rows.class_counts, options.variant
    priors = relief_math.class_priors(class_counts) if hit_bound is None else np.zeros(0)
    per_query = "driver" if options.return_query_margins else None
    if variant == "prelief":
        sums = kernel_sums(scaled, queries, "gaussian", group_weights=relief_math.prelief_class_weights(class_counts),
                           sigma=sigma, exclude_self=True, per_query=per_query, block_size=options.block_size)
        return sums, None, priors
    with ShippedQueries(scaled, queries) as shipped:  # one broadcast per batch for both passes
        search_metric = "euclidean" if options.metric == "cosine" else options.metric  # on unit rows
        table = nearest(scaled, shipped, options.k, metric=search_metric, block_size=options.block_size,
                        hit_bound=hit_bound)
        if not weighted:
            pairs = (relief_math.continuous_pairs(table) if hit_bound is not None
                     else relief_math.margin_pairs(variant, table, queries.labels, priors))
        elif hit_bound is not None:
            _, neighbour_weights = _neighbour_weights(rows, table.neighbour_ids, continuous=True)
            pairs = relief_math.weighted_continuous_pairs(table, queries.weights, neighbour_weights)
        else:
            class_weights, neighbour_weights = _neighbour_weights(rows, table.neighbour_ids)
            priors = relief_math.class_priors(class_weights)
            pairs = relief_math.weighted_relieff_pairs(table, queries.labels, priors, queries.weights,
                                                       neighbour_weights)
        sums = pair_sums(scaled, shipped, pairs.query_positions, pairs.neighbour_ids, pairs.weights,
                         difference="abs", per_query=per_query)
    return sums, table, priors


def _result(options: ReliefOptions, queries, class_counts, priors, sums, table, scale, sigma, info,
            *, weighted: bool) -> ReliefResult:
    """The mean margins over the queries (their weights' sum with instance weights) and the facts."""
    variant, k = options.variant, options.k
    if variant != "prelief" and options.label_type != "continuous":
        short = relief_math.short_classes(class_counts, k)
        if short:
            info["short_classes"] = {str(c): used for c, used in short.items()}
    num_queries = len(queries)
    query_mass = float(queries.weights.sum()) if weighted else num_queries
    if query_mass <= 0:
        raise InvalidInputError(f"the instance weights of the {num_queries} queries sum to 0: no margin to average")
    scores = sums.feature_sums / query_mass
    return ReliefResult(
        scores=scores, weights=relief_math.relief_weights(scores), variant=variant, metric=options.metric,
        scaling=options.scaling, k=k, n_rows=int(class_counts.sum()), n_queries=num_queries,
        class_counts=class_counts, class_priors=priors, query_ids=queries.ids, query_labels=queries.labels,
        neighbour_ids=None if table is None else table.neighbour_ids,
        neighbour_distances=None if table is None else table.distances,
        query_margins=sums.query_sums, feature_scale=scale, sigma=sigma if variant == "prelief" else None, info=info,
    )
