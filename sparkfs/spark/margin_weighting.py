"""Lmba and Simba (Li & Lu 2009; Gilad-Bachrach, Navot & Tishby 2004) on the pair engine.

Both learn a feature weight vector w by a driver loop; the formulas are in
:mod:`sparkfs.core.margin_weighting`, the passes in :mod:`sparkfs.spark.neighbours`. The loops are
core's (:func:`sparkfs.core.margin_weighting.lmba_loop`, :func:`sparkfs.core.simba.simba_loop`), the
ones the in-memory drivers, the pool and the scikit-learn front run; this module hands them the
part of a step that sees every row as a Spark job.

Lmba
----
1. Pool of instances (all rows, or a seeded sample of ``sample_size``), and their k target
   neighbours (nearest same-class rows) and nearest miss, in the original (scaled, unweighted)
   metric: one :func:`nearest` pass (paper, Step 2), then one pass that fetches those
   neighbours' vectors (CSR kept CSR).
2. Per step, a seeded mini-batch of pool instances, their hinge thresholds
   ``theta_i + ||x_i - x_j||_w^2`` (computed on the driver) and the current w are shipped; every
   partition compares its rows of other classes (the x_p of eq. 3) with them and returns the
   additive hinge terms; the driver sums them, forms the gradient (eq. 16-17) and updates w
   (Step 3d). One Spark job per step.

Per step the workers do O(batch x n x D) multiply-adds in two matrix products (O(batch x nnz)
on CSR rows) and O(batch x k x n) hinge comparisons; the driver O(batch x k x D).

Simba
-----
Per step: the batch's nearest hit and miss in the *current* weighted metric, with their vectors,
from one :func:`nearest` pass (``feature_weights=w``, ``with_vectors=True``); the driver sums the
Deltas and updates w. One Spark job per step; O(batch x n x D) in the workers. The search
returns the vectors of every class's nearest row (batch x C x D values): above
``SEARCH_VECTOR_BYTES`` the step instead fetches the hit and miss rows in a second pass.

Within the pool
---------------
``within_pool=True`` (the selectors' default when ``sampleSize`` is unset on a large input): after
the pool's sample pass the whole loop runs on the driver among the pool's rows
(:mod:`sparkfs.core.margin_pool`), with no Spark job per step; the result's ``info`` says
``neighbours_among``: "pool" or "every row".

The order of the pool
---------------------
Both loops pick instances by a seeded permutation of the pool's positions
(:func:`sparkfs.core.margin_loops.instance_order`), so the pool's order decides the run. Without
``row_id_col`` the pool is put in :func:`sparkfs.core.margin_pool.content_order` (by the seeded
content key it was drawn by; rows of identical content, interchangeable, by id) and, within the
pool, numbered 0..m-1 in that order, so the visit order and the pool's neighbour ties depend on the
rows' content and the seed only: the same rows written as 1 or 7 files (read in other orders, with
other positional ids) give the same selection and scores to rounding (to the same bits with the
canonical layout, whose ids are then content ranks: :mod:`sparkfs.spark.prepared_rows`). With
``row_id_col`` the pool is visited in the user's id order, as the papers' runs are reproduced
(``docs/lmba_simba.md``). The result's ``info["visit_order"]`` says which: "content" or "row id".
With every row searched, distance ties between rows of different content still go to the smaller
row id (positional without ``row_id_col``): only data with exact ties can see the row order there.

The loop's settings come in one :class:`sparkfs.core.margin_runs.MarginRun` (default: the
papers' run). ``run.iterations`` counts picked instances (the paper's I, default passes x the pool
size); a step picks ``run.batch(pool size)`` of them, so there are ceil(I / batch) steps (jobs).
A batch of 1 is the papers' per-instance procedure; with ``averaging="iterates"`` the weights
ranked are the mean of the iterates (:class:`sparkfs.core.margin_runs.IterateAverage`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple

import numpy as np
import scipy.sparse as sp

from sparkfs import progress
from sparkfs.core import margin_weighting as mw
from sparkfs.core import simba
from sparkfs.core.margin_loops import LoopResult
from sparkfs.core.margin_pool import content_order, lmba_in_pool, simba_in_pool
from sparkfs.core.margin_runs import MarginRun
from sparkfs.core.neighbours import PAD_ID
from sparkfs.core.options import LmbaOptions, SimbaOptions
from sparkfs.core.relief import miss_neighbours
from sparkfs.errors import InvalidInputError
from sparkfs.spark.blocks import matrix_from_summary, matrix_to_summary
from sparkfs.spark.method_setup import EngineOptions, feature_scale_of, options_of
from sparkfs.spark.neighbours import nearest
from sparkfs.spark.passes import matrix_sum_merge
from sparkfs.spark.row_sets import stack_rows
from sparkfs.spark.rows import Block, Rows, RowSet

#: Largest (batch x classes x features) neighbour vectors a Simba search brings back (bytes).
SEARCH_VECTOR_BYTES = 64 * 2 ** 20


@dataclass
class MarginWeightingResult:
    """Feature weights of Lmba or Simba and how they were obtained."""

    scores: np.ndarray  # ranking weights in [0, 1]
    raw_weights: np.ndarray  # w at the end of the loop
    n_rows: int
    n_pool: int
    steps: int
    class_counts: np.ndarray
    info: Dict[str, Any] = field(default_factory=dict)


def _dense(matrix) -> np.ndarray:
    return matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix, dtype=np.float64)


def _as_csr(matrix):
    return sp.csr_matrix(matrix, dtype=np.float64)


def _nearest_miss_vectors(table, labels) -> np.ndarray:
    """The vector of each query's nearest miss (any other class, by (distance, row id))."""
    miss_ids, _ = miss_neighbours(table, labels)
    miss_class = np.argmax(table.neighbour_ids[:, :, 0] == miss_ids[:, :1], axis=1)
    return table.vectors[np.arange(len(labels)), miss_class, 0]


def _check_classes(class_counts: np.ndarray, method: str) -> None:
    present = np.flatnonzero(class_counts > 0)
    if present.size < 2:
        raise InvalidInputError(f"{method} needs rows of at least two classes; the input has class {present.tolist()} "
                                "only")
    single = [int(c) for c in present if class_counts[c] < 2]
    if single:
        raise InvalidInputError(f"class {single[0]} has a single row: a picked instance of it has no nearest hit")


@dataclass
class Pool:
    """The pool in the order it is visited (module notes), the ids the loop within the pool numbers
    it by (increasing along that order), and which order it is: "content" or "row id"."""

    rows: RowSet
    ids: np.ndarray
    visit_order: str


def _prepare(rows: Rows, sample_size, seed, scaling, method) -> Tuple[Pool, Rows]:
    """The pool, and the rows the passes run on (a scaled view with ``scaling``)."""
    drawn = rows.sample(sample_size, seed)  # sorted by row id
    _check_classes(rows.class_counts, method)
    if rows.has_user_ids:
        pool = Pool(drawn, drawn.ids, "row id")
    else:  # content order: the same for any order the rows arrive in; numbered by rank in the pool
        ordered = drawn.take(content_order(drawn.matrix, drawn.labels, drawn.ids, seed, drawn.weights))
        pool = Pool(ordered, np.arange(len(ordered), dtype=np.int64), "content")
    scaled = rows if scaling == "none" else rows.scaled_by(feature_scale_of(rows, scaling)[0])
    scaled.check_magnitude(method)
    return pool, scaled


def _rows_by_id(rows: Rows, wanted) -> Tuple[np.ndarray, Any]:
    """The (scaled) vectors of the rows with the given ids, CSR kept CSR: one pass.

    Returns the sorted distinct ids and their matrix, in that order."""
    wanted = np.unique(np.asarray(wanted, dtype=np.int64))
    rows.check_driver_rows(wanted.size, "the target and miss neighbours' rows")
    num_features = rows.num_features

    def summarize(block: Block, handle):
        keep = np.isin(block.ids, handle.value)
        return {"ids": block.ids[keep], **matrix_to_summary(block.matrix[keep], "rows_")}

    def merge(left, right):
        matrix = stack_rows(matrix_from_summary(left, "rows_", num_features),
                            matrix_from_summary(right, "rows_", num_features))
        return {"ids": np.concatenate([left["ids"], right["ids"]]), **matrix_to_summary(matrix, "rows_")}

    with rows.shipped(wanted) as handle:
        summary = rows.run_pass("target vectors", lambda block: summarize(block, handle), merge)
    ids = summary["ids"].astype(np.int64)
    order = np.argsort(ids, kind="stable")
    if not np.array_equal(ids[order], wanted):
        raise RuntimeError(f"fetched {ids.size} rows for {wanted.size} wanted ids: the input changed between passes")
    return ids[order], matrix_from_summary(summary, "rows_", num_features)[order]


#: How to use fewer rows on the driver (Lmba and Simba keep their pool there).
POOL_HINT = "set sampleSize to draw a smaller pool of instances"


def lmba_statistics(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                    options: Optional[LmbaOptions] = None,
                    engine: Optional[EngineOptions] = None) -> MarginWeightingResult:
    """Lmba feature weights (Li & Lu 2009, Section 3), one Spark job per mini-batch step
    (``options.run.batch_rule``: see :func:`sparkfs.core.margin_weighting.lmba_in_memory`; "replay"
    brings back per-instance impostor sums, batch x D values per partition, CSR for CSR rows).

    ``options``: :class:`sparkfs.core.options.LmbaOptions`; ``engine``:
    :class:`sparkfs.spark.method_setup.EngineOptions`. ``within_pool=True``: after the
    pool's sample pass the whole loop runs on the driver among the pool's rows
    (:func:`sparkfs.core.margin_pool.lmba_in_pool`), no pass per step.

    Driver memory: the pool (dense or CSR, as the input) and the distinct target neighbours'
    vectors (at most pool x (k + 1) rows, CSR kept CSR). Shipped per step: the batch's instances,
    their (batch, k) hinge thresholds and w.
    """
    options, engine = options_of(LmbaOptions, options, engine)
    k, c, run, projection, seed, block_size = (options.k, options.c, options.run, options.projection, options.seed,
                                               options.block_size)
    within_pool = options.within_pool
    with engine.rows(df, features_col, label_col, num_features=num_features, num_classes=num_classes,
                     cache_blocks=True, fewer_rows_hint=POOL_HINT) as rows:
        pool, scaled = _prepare(rows, options.sample_size, seed, options.scaling, "Lmba")
        if within_pool:
            found = lmba_in_pool(scaled.scaled(pool.rows.matrix), pool.rows.labels, pool.ids, num_classes=num_classes,
                                 k=k, c=c, run=run, projection=projection, seed=seed, block_size=block_size)
        else:
            found = _lmba_over_rows(scaled, pool.rows, k=k, c=c, run=run, projection=projection, seed=seed,
                                    block_size=block_size)
        info = _loop_info(rows, pool, found, within_pool)
        class_counts = rows.class_counts
    return MarginWeightingResult(mw.lmba_ranking_weights(found.ranked), found.ranked, int(class_counts.sum()),
                                 len(pool.rows), found.steps, class_counts, info)


def _loop_info(rows: Rows, pool: Pool, found: LoopResult, within_pool: bool) -> Dict[str, Any]:
    """The result's ``info``: the passes, the transport, the row ids, the visit order, where the
    neighbours were searched and (within the pool) the pool rows never picked."""
    info = {"passes": len(rows.info["passes"]), "transport": rows.transport, "row_ids": rows.info["row_ids"],
            "visit_order": pool.visit_order, "neighbours_among": "pool" if within_pool else "every row"}
    if within_pool:
        info["pool_left_out"] = found.left_out
    return info


def _lmba_over_rows(rows: Rows, pool: RowSet, *, k, c, run: MarginRun, projection, seed, block_size) -> LoopResult:
    """The loop with every row searched: targets in one pass, their vectors in another, then
    :func:`sparkfs.core.margin_weighting.lmba_loop` with one Spark job per step (:func:`_block_terms_pass`);
    ``pool`` in the order it is visited. Returns the ranked w and the steps."""
    table = nearest(rows, pool, k, metric="euclidean", block_size=block_size)
    target_ids = table.neighbour_ids[np.arange(len(pool)), pool.labels]  # (m, k) nearest hits = target neighbours
    miss_ids = miss_neighbours(table, pool.labels)[0][:, :1]  # (m, 1) nearest miss
    neighbour_ids, neighbours = _rows_by_id(rows, np.concatenate([target_ids[target_ids != PAD_ID],
                                                                  miss_ids.ravel()]))
    target_index = np.where(target_ids != PAD_ID, np.searchsorted(neighbour_ids, target_ids), -1)
    miss_index = np.searchsorted(neighbour_ids, miss_ids)
    instances = rows.scaled(pool.matrix)
    instances = sp.csr_matrix(instances) if sp.issparse(instances) else np.asarray(instances, dtype=np.float64)
    theta = mw.lmba_theta(
        mw.weighted_squared_norms(mw.lmba_target_differences(instances, neighbours, target_index[:, :1])),
        mw.weighted_squared_norms(mw.lmba_target_differences(instances, neighbours, miss_index)))
    meter = progress.steps("lmba", run.steps(len(pool)))
    return mw.lmba_loop(instances, pool.labels, neighbours, target_index, theta, run=run, seed=seed, c=c,
                        projection=projection, block_terms=_block_terms_pass(rows), after_step=meter.advance)


def _block_terms_pass(rows: Rows) -> mw.BlockTerms:
    """The ``block_terms`` of :func:`sparkfs.core.margin_weighting.lmba_loop` as one Spark job: the
    batch's instances, labels, thresholds, target mask and w are shipped, every block returns its
    :func:`sparkfs.core.margin_weighting.lmba_block_terms`, and the additive terms are summed. The
    impostor sums travel as core returns them: (D,) dense with rule "sum", (batch, D) per instance
    with "replay", CSR for CSR rows (merged as CSR: nothing of batch x D is made)."""
    merge = matrix_sum_merge("impostor_", rows.num_features)

    def summarize(block: Block, shipped, per_instance: bool):
        impostor_sums, active_counts = mw.lmba_block_terms(
            shipped["instances"], shipped["labels"], shipped["thresholds"], block.matrix, block.labels,
            shipped["w"], target_mask=shipped["mask"], per_instance=per_instance)
        return {**matrix_to_summary(impostor_sums, "impostor_"), "active_counts": active_counts.astype(np.float64)}

    def block_terms(instance_matrix, instance_labels, thresholds, w, *, target_mask, per_instance):
        with rows.shipped({"instances": instance_matrix, "labels": instance_labels, "w": w,
                           "thresholds": thresholds, "mask": target_mask}) as handle:
            summary = rows.run_pass("lmba step", lambda block: summarize(block, handle.value, per_instance), merge)
        impostor_sums = matrix_from_summary(summary, "impostor_", rows.num_features)
        if not per_instance:  # the (D,) total
            impostor_sums = np.asarray(impostor_sums).ravel()
        return impostor_sums, summary["active_counts"].astype(np.int64)
    return block_terms


def simba_statistics(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                     options: Optional[SimbaOptions] = None,
                     engine: Optional[EngineOptions] = None) -> MarginWeightingResult:
    """Simba feature weights (Gilad-Bachrach et al. 2004), one Spark job per mini-batch step (the
    batch's nearest hits and misses at the batch's first w; ``options.run.batch_rule`` then adds the
    Deltas in turn or summed, :func:`sparkfs.core.simba.simba_batch_update`). ``options``:
    :class:`sparkfs.core.options.SimbaOptions`; ``engine``: :class:`sparkfs.spark.method_setup.EngineOptions`;
    ``within_pool=True``: the whole loop on the driver among the pool's rows
    (:func:`sparkfs.core.margin_pool.simba_in_pool`)."""
    options, engine = options_of(SimbaOptions, options, engine)
    run, seed, block_size, within_pool = options.run, options.seed, options.block_size, options.within_pool
    with engine.rows(df, features_col, label_col, num_features=num_features, num_classes=num_classes,
                     cache_blocks=True, fewer_rows_hint=POOL_HINT) as rows:
        pool, scaled = _prepare(rows, options.sample_size, seed, options.scaling, "Simba")
        if within_pool:
            found = simba_in_pool(scaled.scaled(pool.rows.matrix), pool.rows.labels, pool.ids,
                                  num_classes=num_classes, run=run, seed=seed, block_size=block_size)
        else:
            found = _simba_over_rows(scaled, pool.rows, run=run, seed=seed, block_size=block_size)
        info = _loop_info(rows, pool, found, within_pool)
        class_counts = rows.class_counts
    return MarginWeightingResult(simba.simba_final_weights(found.ranked), found.ranked, int(class_counts.sum()),
                                 len(pool.rows), found.steps, class_counts, info)


def _simba_over_rows(rows: Rows, pool: RowSet, *, run: MarginRun, seed, block_size) -> LoopResult:
    """The loop with every row searched: :func:`sparkfs.core.simba.simba_loop` with one Spark job per
    step (:func:`_nearest_pass`). Returns the ranked w and the steps."""
    meter = progress.steps("simba", run.steps(len(pool)))
    return simba.simba_loop(np.arange(len(pool)), rows.num_features, run=run, seed=seed,
                            nearest_hits_and_misses=_nearest_pass(rows, pool, run.batch(len(pool)), block_size),
                            after_step=meter.advance)


def _nearest_pass(rows: Rows, pool: RowSet, batch_size: int, block_size: int) -> simba.NearestHitsAndMisses:
    """The search of :func:`sparkfs.core.simba.simba_loop` as one :func:`nearest` job: the picked pool
    instances' nearest hit and miss in the current weighted metric, with their vectors."""
    # The search can bring the neighbours' vectors along (one job per step), but it carries
    # every class's: B x C x D values. Above the budget, fetch the hit and miss rows instead.
    with_vectors = batch_size * rows.num_classes * rows.num_features * 8 <= SEARCH_VECTOR_BYTES

    def search(picked, w):
        batch: RowSet = pool.take(picked)
        table = nearest(rows, batch, 1, metric="euclidean", feature_weights=w, block_size=block_size,
                        with_vectors=with_vectors)
        positions = np.arange(len(batch))
        as_stored = _as_csr if sp.issparse(batch.matrix) else _dense  # CSR rows never made dense (2^24 ids)
        if with_vectors:
            hit_vectors = as_stored(table.vectors[positions, batch.labels, 0])
            miss_vectors = as_stored(_nearest_miss_vectors(table, batch.labels))
        else:
            hit_ids = table.neighbour_ids[positions, batch.labels, 0]
            miss_ids = miss_neighbours(table, batch.labels)[0][:, 0]
            ids, matrix = _rows_by_id(rows, np.concatenate([hit_ids, miss_ids]))
            hit_vectors = as_stored(matrix[np.searchsorted(ids, hit_ids)])
            miss_vectors = as_stored(matrix[np.searchsorted(ids, miss_ids)])
        return as_stored(rows.scaled(batch.matrix)), hit_vectors, miss_vectors
    return search
