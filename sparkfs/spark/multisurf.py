"""The MultiSURF family (SURF, SURF*, MultiSURF, MultiSURF*) and TuRF on the pair engine.

The definitions are in :mod:`sparkfs.core.multisurf` (T1-T2 thresholds, S1-S4 sets and terms);
this module feeds them sums over the rows. Two ways, chosen per fit:

**Every row a query, all rows in one query batch** (scikit-rebate's setting, the default up to
1,000 rows, while the rows fit ``query_batch_bytes``): one pass with the roles turned round. The
batch shipped to every task is *all* rows (sorted by id, with their labels and weights); a
task's own block of rows are the queries. A query then meets every row inside one task, so per
chunk of queries one distance table (queries x all rows) gives its thresholds (T2), its set
counts and its weighted differences (:func:`~sparkfs.core.multisurf.every_row_terms`): each
pair's distance is computed once, and the pass returns ``sum_q s_q t_q`` (p,) plus each query's
thresholds and set sizes. SURF and SURF* take one pass more first (the same kernel, moments
only): T1 is the mean over *every* query's distances, known only after all of them. A task holds
all rows, its block and one table of at most :data:`~sparkfs.core.multisurf.TABLE_BYTES`. The
per-query results depend on the rows only, and the blocks' sums are merged in the engine's
order, so the canonical layout's bit-for-bit promise holds.

**Otherwise** (a sample of queries, or more rows than one batch holds): three passes per query
batch (each one Spark job, each returning a small summary), as a query meets only a block of
rows per task:

1. **distance moments**: per query the weight, mean and spread of its distances to every other
   row (:func:`~sparkfs.core.multisurf.distance_moments`, merged with Chan's update): MultiSURF's
   thresholds, and for SURF the global mean (which needs *every* query's sums before any set is
   known, so this pass runs over all batches first);
2. **set counts**: per (query, near/far, class) the number (weight) of rows inside the
   thresholds: the weight each pair gets in the scores (S2 divides by these counts, so they
   must be totals over all rows before any difference is summed);
3. **weighted differences**: ``sum_q s_q sum_r a[q, r] |x_q - x_r|`` per feature, with the pair
   weights ``a`` of :func:`~sparkfs.core.multisurf.pair_coefficients`: a (p,) vector per pass.

Two passes would do if the second returned per (query, set, class) difference sums, but that
summary is ``queries x 2C x p`` doubles (7 MB per query at 230,000 features): the counts pass
keeps every summary at O(queries x C) or O(p), so query batches stay as large as the engine
allows. Each pass recomputes the distances (the O(m n p) part); a task holds its block, the
query batch and one ``blockSize x blockSize`` distance tile.

TuRF (:func:`~sparkfs.core.multisurf.turf`) runs the passes once per round on the remaining
features (the tasks slice the columns), on the same prepared :class:`Rows`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional

import numpy as np

from sparkfs.core import multisurf as ms_math
from sparkfs.core.options import MultiSURFOptions
from sparkfs.errors import InvalidInputError
from sparkfs.spark.method_setup import EngineOptions, feature_scale_of, options_of, rows_with_queries
from sparkfs.spark.passes import ShippedQueries, batched_pass, query_batches, query_rows, sum_merge
from sparkfs.spark.relief import distance_from_data
from sparkfs.spark.rows import Block, Rows
from sparkfs.spark.target_moments import target_spread


@dataclass
class MultiSURFResult:
    """What :func:`multisurf_statistics` returns.

    Attributes
    ----------
    scores : ndarray (p,)
        The variant's scores (TuRF: scikit-rebate's tiered scores, module notes of the core).
    variant, metric, scaling : str
    n_rows, n_queries : int
    class_counts : ndarray (C,)
    query_ids : ndarray (m,)
    near_thresholds, far_thresholds : ndarray (m,)
        Of the last fit (the last TuRF round).
    feature_scale : ndarray (p,)
    turf_features : ndarray or None
        TuRF: the features of the final fit; ``turf_tiers`` the features removed per round.
    info : dict
    """

    scores: np.ndarray
    variant: str
    metric: str
    scaling: str
    n_rows: int
    n_queries: int
    class_counts: np.ndarray
    query_ids: np.ndarray
    near_thresholds: np.ndarray
    far_thresholds: np.ndarray
    feature_scale: np.ndarray
    turf_features: Optional[np.ndarray] = None
    turf_tiers: List[np.ndarray] = field(default_factory=list)
    info: Dict[str, Any] = field(default_factory=dict)


def _tiles(shipped, block: Block, metric: str, features, block_size: int):
    """The (query chunk, row chunk) tiles of one block: slices, the two matrices (columns
    ``features`` only), the distance table and the pairs that are not a query with itself."""
    queries = shipped["matrix"] if features is None else shipped["matrix"][:, features]
    block_rows = block.matrix if features is None else block.matrix[:, features]
    query_ids = shipped["ids"]
    for query_start in range(0, query_ids.size, block_size):
        query_slice = slice(query_start, min(query_start + block_size, query_ids.size))
        for row_start in range(0, block.ids.size, block_size):
            row_slice = slice(row_start, min(row_start + block_size, block.ids.size))
            table = ms_math.distances(queries[query_slice], block_rows[row_slice], metric)
            others = block.ids[row_slice][None, :] != query_ids[query_slice][:, None]
            yield query_slice, row_slice, queries[query_slice], block_rows[row_slice], table, others


def _merge_moments(left, right):
    merged = ms_math.merge_moments(ms_math.DistanceMoments(**left), ms_math.DistanceMoments(**right))
    return {"weight": merged.weight, "mean": merged.mean, "m2": merged.m2}


@dataclass
class _Setup:
    """What every pass of one fit needs (picklable: it travels to the tasks in the kernels)."""

    variant: str
    metric: str
    num_classes: int
    block_size: int
    features: Optional[np.ndarray]
    every_row: bool = False
    #: S5's bound on a continuous endpoint (the labels are then the targets); None: classes.
    hit_bound: Optional[float] = None


#: Bytes shipped per query with the set-count pass (two thresholds) and, plus the (2, C) pair
#: weights, with the difference pass.
_THRESHOLD_BYTES = 16.0
#: Bytes shipped per row with the one-pass fit (its label and weight).
_EVERY_ROW_BYTES = 16.0


def _moments(rows: Rows, queries: ShippedQueries, setup: _Setup) -> ms_math.DistanceMoments:
    """Pass 1: per query, the moments of its distances to every other row."""
    num_queries = len(queries)
    weight, mean, m2 = np.zeros(num_queries), np.zeros(num_queries), np.zeros(num_queries)

    def summarize(block: Block, shipped):
        size = shipped["ids"].size
        total = {"weight": np.zeros(size), "mean": np.zeros(size), "m2": np.zeros(size)}
        for query_slice, row_slice, _, _, table, others in _tiles(shipped, block, setup.metric, setup.features,
                                                                  setup.block_size):
            tile = ms_math.distance_moments(table, others, None if block.weights is None else block.weights[row_slice])
            part = {name: values[query_slice] for name, values in total.items()}
            merged = _merge_moments(part, {"weight": tile.weight, "mean": tile.mean, "m2": tile.m2})
            for name in total:
                total[name][query_slice] = merged[name]
        return total

    for batch, summary in batched_pass(rows, queries, "distance moments", summarize, _merge_moments,
                                       bytes_per_query=24.0):  # weight, mean, m2
        if summary is not None:
            weight[batch], mean[batch], m2[batch] = summary["weight"], summary["mean"], summary["m2"]
    return ms_math.DistanceMoments(weight, mean, m2)


def _codes(setup: _Setup, shipped, query_slice, table, others):
    return ms_math.pair_sets(table, others, shipped["near"][query_slice], shipped["far"][query_slice],
                             setup.variant in ms_math.FAR_VARIANTS)


def _row_classes(setup: _Setup, shipped, query_slice, row_labels):
    """The classes of a tile's rows: their class indices, or on a continuous endpoint each pair's
    hit or miss (S5) from the batch's targets shipped with the pass."""
    if setup.hit_bound is None:
        return row_labels
    return ms_math.pair_classes(shipped["targets"][query_slice], row_labels, setup.hit_bound)


def _with_targets(setup: _Setup, payload: Dict[str, Any], targets, batch) -> Dict[str, Any]:
    if setup.hit_bound is not None:
        payload["targets"] = targets[batch]
    return payload


def _counts(rows: Rows, queries: ShippedQueries, setup: _Setup, near, far, targets) -> np.ndarray:
    """Pass 2: per (query, set, class) the weight of the rows inside the thresholds."""
    counts = np.zeros((len(queries), 2, setup.num_classes))

    def summarize(block: Block, shipped):
        total = np.zeros((shipped["ids"].size, 2, setup.num_classes))
        for query_slice, row_slice, _, _, table, others in _tiles(shipped, block, setup.metric, setup.features,
                                                                  setup.block_size):
            codes = _codes(setup, shipped, query_slice, table, others)
            total[query_slice] += ms_math.group_counts(
                codes, _row_classes(setup, shipped, query_slice, block.labels[row_slice]), setup.num_classes,
                None if block.weights is None else block.weights[row_slice])
        return {"counts": total}

    def payload(batch):
        return _with_targets(setup, {"near": near[batch], "far": far[batch]}, targets, batch)

    for batch, summary in batched_pass(rows, queries, "set counts", summarize, sum_merge, payload=payload,
                                       shipped_bytes_per_query=_THRESHOLD_BYTES + 8.0,
                                       bytes_per_query=16.0 * setup.num_classes):  # (2, C) doubles
        if summary is not None:
            counts[batch] = summary["counts"]
    return counts


def _difference_sums(rows: Rows, queries: ShippedQueries, setup: _Setup, near, far, pair_weights,
                     targets) -> np.ndarray:
    """Pass 3: ``sum_q sum_r a[q, r] |x_q - x_r|`` per feature, ``pair_weights`` (m, 2, C) already
    multiplied by the query weights."""
    num_features = rows.num_features if setup.features is None else setup.features.size
    total = np.zeros(num_features)

    def summarize(block: Block, shipped):
        sums = np.zeros(num_features)
        for query_slice, row_slice, query_part, row_part, table, others in _tiles(
                shipped, block, setup.metric, setup.features, setup.block_size):
            codes = _codes(setup, shipped, query_slice, table, others)
            classes = _row_classes(setup, shipped, query_slice, block.labels[row_slice])
            coefficients = ms_math.pair_coefficients(codes, classes, shipped["weights"][query_slice],
                                                     None if block.weights is None else block.weights[row_slice])
            sums += ms_math.diff_sums(query_part, row_part, coefficients)
        return {"sums": sums}

    def payload(batch):
        return _with_targets(setup, {"near": near[batch], "far": far[batch], "weights": pair_weights[batch]},
                             targets, batch)

    for _, summary in batched_pass(rows, queries, "weighted differences", summarize, sum_merge, payload=payload,
                                   shipped_bytes_per_query=_THRESHOLD_BYTES + 8.0 + 16.0 * setup.num_classes,
                                   bytes_per_query=0.0):  # per-feature sums only
        if summary is not None:
            total += summary["sums"]
    return total


def _fit_scores(rows: Rows, shipped: ShippedQueries, setup: _Setup, info: Dict[str, Any]):
    """The passes and the core's formulas: (scores of ``setup.features``, near, far). Every row a
    query in one batch: :func:`_every_row_fit`; otherwise the three passes of the module notes."""
    queries = query_rows(shipped)
    query_weights = np.ones(len(queries)) if queries.weights is None else np.asarray(queries.weights, dtype=np.float64)
    mass = query_weights.sum()
    if mass <= 0:
        raise InvalidInputError(f"the instance weights of the {len(queries)} queries sum to 0: no term to average")
    if setup.every_row:
        sums, near, far, near_rows, far_rows = _every_row_fit(rows, shipped, setup, query_weights)
    else:
        moments = _moments(rows, shipped, setup)
        total_row_weight = float(np.mean(moments.weight + query_weights))  # every row, each query's own included
        near, far = ms_math.thresholds(setup.variant, moments, query_weights, total_row_weight)
        counts = _counts(rows, shipped, setup, near, far, queries.labels)
        query_classes = queries.labels if setup.hit_bound is None else np.full(len(queries), ms_math.HIT)
        weights, constants = ms_math.term_weights(setup.variant, counts, query_classes)
        sums = _difference_sums(rows, shipped, setup, near, far, weights * query_weights[:, None, None],
                                queries.labels)
        sums += np.dot(query_weights, constants)
        near_rows, far_rows = counts[:, ms_math.NEAR].sum(axis=1), counts[:, ms_math.FAR].sum(axis=1)
    info["mean_near_rows"] = float(near_rows.mean())
    if setup.variant in ms_math.FAR_VARIANTS:
        info["mean_far_rows"] = float(far_rows.mean())
    return sums / mass, near, far


def _every_row_kernel(setup: _Setup, moments_only: bool):
    """The block kernel of the one-pass fit: the block's rows are the queries, the shipped batch is
    every row (sorted by id); per-query results go to the query's position among all rows (the
    other positions stay 0, so the sum merge only places them)."""

    def summarize(block: Block, shipped):
        features = setup.features
        everyone = shipped["matrix"] if features is None else shipped["matrix"][:, features]
        own = block.matrix if features is None else block.matrix[:, features]
        positions = ms_math.own_columns(block.ids, shipped["ids"])
        if np.any(positions < 0):
            raise RuntimeError("a row of the block is not among the shipped rows: the one-pass fit needs every row")
        size = shipped["ids"].size
        common = dict(metric=setup.metric, block_size=setup.block_size)
        if moments_only:
            moments = ms_math.every_row_moments(own, block.ids, everyone, shipped["ids"], shipped.get("weights"),
                                                **common)
            return {name: _placed(size, positions, getattr(moments, name)) for name in ("weight", "mean", "m2")}
        terms = ms_math.every_row_terms(setup.variant, own, block.ids, block.labels, block.weights, everyone,
                                        shipped["ids"], shipped["labels"], shipped.get("weights"), setup.num_classes,
                                        level=shipped.get("level"), hit_bound=setup.hit_bound, **common)
        counts = terms["counts"]
        return {"sums": terms["sums"], "near": _placed(size, positions, terms["near"]),
                "far": _placed(size, positions, terms["far"]),
                "near_rows": _placed(size, positions, counts[:, ms_math.NEAR].sum(axis=1)),
                "far_rows": _placed(size, positions, counts[:, ms_math.FAR].sum(axis=1))}

    return summarize


def _placed(size: int, positions: np.ndarray, values: np.ndarray) -> np.ndarray:
    out = np.zeros(size)
    out[positions] = values
    return out


def _every_row_pass(rows: Rows, shipped: ShippedQueries, name: str, kernel, payload: Dict[str, Any]):
    """One pass of the one-pass fit: the single batch of every row shipped with ``payload``."""
    results = list(batched_pass(rows, shipped, name, kernel, sum_merge, payload=lambda batch: payload,
                                shipped_bytes_per_query=_EVERY_ROW_BYTES,
                                bytes_per_query=32.0))  # near, far, near_rows, far_rows per row
    if len(results) != 1 or results[0][1] is None:
        raise RuntimeError(f"{name}: the one-pass fit needs every row in one query batch")
    return results[0][1]


def _every_row_fit(rows: Rows, shipped: ShippedQueries, setup: _Setup, query_weights: np.ndarray):
    """Every row a query, all in one batch: one pass computes each pair's distance once and, per
    chunk of a block's rows (the queries), the thresholds, set counts and weighted differences from
    that one distance table (:func:`~sparkfs.core.multisurf.every_row_terms`). SURF(*) first runs a
    pass for T1 (it needs every query's distance sum before any set is known)."""
    queries = query_rows(shipped)
    payload: Dict[str, Any] = {"labels": queries.labels}
    if queries.weights is not None:
        payload["weights"] = queries.weights
    if setup.variant not in ms_math.PER_QUERY_THRESHOLD_VARIANTS:
        summary = _every_row_pass(rows, shipped, "distance moments", _every_row_kernel(setup, True), payload)
        moments = ms_math.DistanceMoments(summary["weight"], summary["mean"], summary["m2"])
        payload["level"] = ms_math.surf_threshold(moments, query_weights, float(query_weights.sum()))
    summary = _every_row_pass(rows, shipped, "thresholds, set counts and weighted differences",
                              _every_row_kernel(setup, False), payload)
    return summary["sums"], summary["near"], summary["far"], summary["near_rows"], summary["far_rows"]


def _check_classes(class_counts: np.ndarray) -> None:
    present = np.flatnonzero(class_counts > 0)
    if present.size < 2:
        raise InvalidInputError(f"the MultiSURF family needs rows of at least two classes; the input has rows of "
                                f"class {present.tolist()} only")


def multisurf_statistics(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                         options: Optional[MultiSURFOptions] = None, engine: Optional[EngineOptions] = None,
                         hit_bound: Optional[float] = None) -> MultiSURFResult:
    """Scores of a MultiSURF-family variant (or TuRF around it) of the features of ``df``.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    features_col : str
        A ``pyspark.ml`` vector column (dense or sparse; sparse rows stay sparse).
    label_col : str
        Class index 0..C-1; with ``options.label_type="continuous"`` a regression target (S5 of
        :mod:`sparkfs.core.multisurf`: a row is a hit of a query within one sample standard
        deviation of its target, computed exactly in one pass over the label).
    num_features, num_classes : int
        (``num_classes`` is ignored for a continuous target: its classes are hit and miss.)
    options : MultiSURFOptions
        The method's options (:class:`sparkfs.core.options.MultiSURFOptions`): ``variant``
        (multisurf, multisurf-star, surf, surf-star), ``metric`` (Manhattan on ``scaling="range"``
        is scikit-rebate's distance), ``scaling``, ``sample_size`` query rows drawn by ``seed``
        (None: every row, collected once), ``block_size`` rows (and queries) per distance tile in
        the tasks, ``turf_fraction`` (TuRF: the fraction of the remaining features removed per
        round, scikit-rebate's ``pct``; None: no TuRF) and ``turf_keep`` (TuRF stops once at most
        this many features remain, ``num_scores_to_return``).
    engine : EngineOptions
        The engine's settings (:class:`sparkfs.spark.method_setup.EngineOptions`); ``weight_col``:
        instance weights (:mod:`sparkfs.core.multisurf` note 3).
    hit_bound : float, optional
        A continuous endpoint's S5 bound when the caller has it (:func:`target_spread`); None:
        one pass over the label computes it.
    """
    options, engine = options_of(MultiSURFOptions, options, engine)
    variant = options.variant
    continuous = options.label_type == "continuous"
    if continuous and hit_bound is None:
        hit_bound = target_spread(df, label_col).std
    num_classes = 2 if continuous else num_classes
    with rows_with_queries(df, features_col, label_col, num_features=num_features,
                           num_classes=None if continuous else num_classes, engine=engine,
                           sample_size=options.sample_size, seed=options.seed, targets=continuous,
                           check_classes=(lambda counts: None) if continuous else _check_classes) as (rows, queries):
        class_counts = rows.class_counts
        info: Dict[str, Any] = {}
        if options.distance_from_data:
            metric, scaling, info["distance_rule"] = distance_from_data(rows, ms_math.default_distance)
            options = replace(options, metric=metric, scaling=scaling, distance_from_data=False)
        scale, _ = feature_scale_of(rows, options.scaling)
        scaled = rows.scaled_by(scale, unit_rows=options.metric == "cosine")
        scaled.check_magnitude(variant)
        search_metric = "euclidean" if options.metric == "cosine" else options.metric  # on unit rows
        thresholds = {}
        batches = query_batches(scaled, queries, shipped_bytes_per_query=_THRESHOLD_BYTES + 16.0 * num_classes)
        every_row = (len(queries) == int(class_counts.sum())
                     and len(query_batches(scaled, queries, shipped_bytes_per_query=_EVERY_ROW_BYTES)) == 1)

        def score_features(features):
            subset = None if features.size == num_features else np.asarray(features, dtype=np.int64)
            setup = _Setup(variant, search_metric, num_classes, options.block_size, subset, every_row, hit_bound)
            scores, thresholds["near"], thresholds["far"] = _fit_scores(scaled, shipped, setup, info)
            return scores

        turf_features, tiers = None, []
        with ShippedQueries(scaled, queries) as shipped:  # one broadcast per batch for every pass and round
            if options.turf_fraction is None:
                scores = score_features(np.arange(num_features))
            else:
                scores, turf_features, tiers = ms_math.turf(score_features, num_features,
                                                            options.turf_fraction, options.turf_keep)
                info["turf_rounds"] = len(tiers)
        info.update(rows.info)
        info["query_batches"] = 1 if every_row else len(batches)
        info["one_pass"] = every_row
        info["transport"] = rows.transport
        if continuous:
            info["label_type"], info["hit_bound"] = "continuous", hit_bound
    return MultiSURFResult(
        scores=scores, variant=variant, metric=options.metric, scaling=options.scaling, n_rows=int(class_counts.sum()),
        n_queries=len(queries), class_counts=class_counts, query_ids=queries.ids,
        near_thresholds=thresholds["near"], far_thresholds=thresholds["far"], feature_scale=scale,
        turf_features=turf_features, turf_tiers=tiers, info=info,
    )
