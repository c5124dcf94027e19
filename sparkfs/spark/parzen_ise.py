"""Parzen-ISE feature ranking on the pair engine (the math: :mod:`sparkfs.core.parzen_ise`,
:mod:`sparkfs.core.fuzzy_cmeans`).

Passes (each one Spark job over the cached blocks):

1. column statistics (mean and std per feature, from the JVM);
2. without labels, fuzzy c-means: the starting centres from the rows with the smallest seeded
   keys (a sample), then one pass per iteration that ships the centres and reduces the
   membership-weighted sums of :func:`fcm_block_terms` (O(N C d) per iteration);
3. two passes of group moments (sums, then sums about the group means) for the variances;
4. the queries (all rows, or ``landmarks`` sampled rows) collected with their memberships;
5. per ISE evaluation, one pass per query batch: the batch, w and the kernel scale are shipped,
   every partition returns :func:`overlap_block_terms` of its rows (per-query sums and the w
   gradient), the driver adds them; O(N M d) per evaluation for M queries (C^2 times that with
   soft memberships). The descent itself (:func:`ise_run`) runs on the driver. With
   ``criterion="marginal"`` (the default) the pass is :func:`_marginal_terms` instead: per feature
   the C and Q sums with their first and second w derivatives (P on the first pass), O(N M d)
   Gaussian kernels; the projected Newton descent (:func:`marginal_run`) converges in a few passes.

Rows are centred at the column means in the tasks (a CSR block becomes dense there: the Gaussian
kernel involves every feature), except on sparse input with the marginal criterion and no
``landmarks``: then steps 2-5 run on the stored values (:mod:`sparkfs.spark.parzen_ise_sparse`: FCM
and the group moments from sparse products, the zero pairs in closed form, every row a query, features
with many stored values estimated by landmarks when the exact pairs exceed ``sparse_pairs.pair_budget``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy as np
import scipy.sparse as sp

from sparkfs import progress
from sparkfs.core import fuzzy_cmeans as fcm
from sparkfs.core import parzen_ise as pi
from sparkfs.core import parzen_ise_marginal as pim
from sparkfs.core import parzen_ise_sparse as pis
from sparkfs.core.options import ParzenISEOptions
from sparkfs.core.parzen_ise_options import (
    START_ROWS_PER_CLUSTER,
    criterion_power,
    final_scores,
    runs_with_held_out_feature,
)
from sparkfs.core.sampling import content_sample_keys
from sparkfs.errors import InvalidInputError
from sparkfs.spark.method_setup import EngineOptions, options_of, rows_with_queries
from sparkfs.spark.parzen_ise_sparse import (
    SparsePairSettings,
    group_memberships,
    group_variances,
    prepare_sparse_marginal,
    sparse_group_memberships,
    sparse_group_variances,
    sparse_marginal_terms_pass,
    stores_sparse,
)
from sparkfs.spark.passes import batched_pass, sum_merge
from sparkfs.spark.rows import Block, Rows, RowSet

#: The sparse passes' default budget (frozen, so one instance serves every call).
DEFAULT_SPARSE_PAIRS = SparsePairSettings()


@dataclass
class ParzenISEResult:
    """Feature weights of Parzen-ISE and how they were obtained."""

    scores: np.ndarray  # the final ranking scores (``rank_by``: the weights, or section 0's rules)
    n_rows: int
    groups: str  # "labels" or "fcm"
    info: Dict[str, Any] = field(default_factory=dict)


def _centred(matrix, mean) -> np.ndarray:
    dense = matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix, dtype=np.float64)
    return dense - mean


def _start_keys(rows, seed):
    """The rows' seeded content keys (those that drew them): FCM starts from the first distinct
    rows in (key, id) order, as :func:`sparkfs.core.parzen_ise.parzen_ise_in_memory` does."""
    return content_sample_keys(rows.matrix, rows.labels, rows.weights, seed)


def _fuzzy_cmeans(rows: Rows, mean, feature_scale, num_clusters, m, tol, max_iter, seed, sparse=False):
    """FCM on the cluster: equals :func:`fcm_in_memory` on the centred rows (same start, same loop); with
    ``sparse``, each block's terms from sparse products (O(nnz C) a pass, nothing densified)."""
    start = rows.sample(min(rows.n_rows, START_ROWS_PER_CLUSTER * num_clusters), seed)
    try:
        centres = fcm.initial_centres(_centred(start.matrix, mean), _start_keys(start, seed), num_clusters)
    except ValueError:
        every = rows.collect()
        centres = fcm.initial_centres(_centred(every.matrix, mean), _start_keys(every, seed), num_clusters)
    objective, converged, iteration = [], False, 0
    meter = progress.steps("parzen-ise fuzzy c-means (at most)", max_iter, "iteration")
    for iteration in range(1, max_iter + 1):  # noqa: B007 - the count of iterations is read after the loop
        def summarize(block: Block, handle):
            if sparse:
                terms = pis.sparse_fcm_block_terms(block.matrix, handle.value["mean"], handle.value["centres"],
                                                   handle.value["m"])
            else:
                terms = fcm.fcm_block_terms(_centred(block.matrix, handle.value["mean"]), handle.value["centres"],
                                            handle.value["m"])
            return {"weighted_sums": terms.weighted_sums, "membership_sums": terms.membership_sums,
                    "objective": np.array([terms.objective])}

        with rows.shipped({"centres": centres, "mean": mean, "m": m}) as handle:
            totals = rows.run_pass("fuzzy c-means", lambda block: summarize(block, handle), sum_merge)
        objective.append(float(totals["objective"][0]))
        new_centres = fcm.fcm_centres(totals["weighted_sums"], totals["membership_sums"])
        shift = fcm.centre_shift(centres, new_centres, feature_scale)
        centres = new_centres
        meter.advance()
        if shift <= tol:
            converged = True
            break
    return centres, {"iterations": iteration, "converged": converged, "objective": objective}


def _dense_moment_terms(block: Block, shipped) -> pi.GroupMoments:
    """A block's group moments of its rows centred at the column means."""
    points = _centred(block.matrix, shipped["mean"])
    return pi.group_moment_terms(points, group_memberships(points, block.labels, shipped), shipped["shifts"])


def _group_variances(rows: Rows, grouping, feature_variance, variance_floor):
    """Two passes: membership-weighted sums, then sums about the group means (eq. 9)."""
    return group_variances(rows, grouping, feature_variance, variance_floor, _dense_moment_terms, "group moments")


def _marginal_terms(rows: Rows, grouping, queries: RowSet, query_memberships, variances, feature_variance, w, h,
                    with_self, block_size) -> pim.MarginalTerms:
    """The ``marginal`` reading's pair sums at w: one pass per query batch (at most ``block_size``, and
    within the budgets of :func:`sparkfs.spark.passes.batched_pass`); every task adds
    :func:`marginal_block_terms` over its rows, on the standardised points."""
    scaled_points, scaled_variances = pim.standardised(queries.matrix, feature_variance, variances)
    standardised = RowSet(scaled_points, queries.ids, queries.labels)

    def summarize(block: Block, shipped):
        centred = _centred(block.matrix, shipped["mean"])
        memberships = group_memberships(centred, block.labels, shipped)
        points, _ = pim.standardised(centred, shipped["feature_variance"], shipped["variances"])
        terms = pim.summed_block_terms(
            (pim.marginal_block_terms(shipped["matrix"], shipped["memberships"], points[chunk], memberships[chunk],
                                      shipped["variances"], shipped["w"], h=h, with_self=with_self)
             for chunk in (slice(s, s + block_size) for s in range(0, points.shape[0], block_size))),
            points.shape[1], with_self)
        summary = {"cross": terms.cross, "own": terms.own}
        if with_self:
            summary["self_sums"] = terms.self_sums
        return summary

    shared = {**grouping, "w": w, "variances": scaled_variances, "feature_variance": feature_variance}
    totals = [summary for _, summary in batched_pass(
        rows, standardised, "marginal ise pair sums", summarize, payload=lambda batch: {
            "memberships": query_memberships[batch]},
        shared=shared, shipped_bytes_per_query=8.0 * query_memberships.shape[1], bytes_per_query=0.0,
        max_batch=block_size)]
    return pim.summed_block_terms((pim.MarginalTerms(t.get("self_sums"), t["cross"], t["own"]) for t in totals),
                                  len(feature_variance), with_self)


def _ise_pair_sums(rows: Rows, grouping, queries: RowSet, query_memberships, variances, h, block_size):
    """The ISE pair sums at w: ``pair_sums(w, free, log_scale, gradient)`` for :func:`ise_run`, one
    pass per query batch (at most ``block_size``, and within the pass API's budgets)."""

    def summarize(block: Block, shipped, gradient):
        points = _centred(block.matrix, shipped["mean"])
        row_memberships = group_memberships(points, block.labels, shipped)
        sums, grad = np.zeros(shipped["matrix"].shape[0]), np.zeros(shipped["free"].size)
        for start in range(0, points.shape[0], block_size):
            chunk = slice(start, start + block_size)
            terms = pi.overlap_block_terms(shipped["matrix"], shipped["memberships"], points[chunk],
                                           row_memberships[chunk], shipped["variances"], shipped["w"], h=h,
                                           free_features=shipped["free"], log_scale=shipped["log_scale"],
                                           gradient=gradient)
            sums += terms.query_sums
            if gradient:
                grad += terms.weight_gradient
        return {"query_sums": sums, "weight_gradient": grad}

    def pair_sums(w, free, log_scale, gradient):
        query_sums, weight_gradient = np.zeros(len(queries)), np.zeros(free.size)
        shared = {**grouping, "w": w, "free": free, "log_scale": log_scale, "variances": variances}
        for batch, totals in batched_pass(
                rows, queries, "ise pair sums", lambda block, shipped: summarize(block, shipped, gradient),
                payload=lambda batch: {"memberships": query_memberships[batch]}, shared=shared,
                shipped_bytes_per_query=8.0 * query_memberships.shape[1], bytes_per_query=8.0,
                max_batch=block_size, progress_name="parzen-ise pair sums"):
            query_sums[batch] = totals["query_sums"]
            weight_gradient += totals["weight_gradient"]
        return query_sums, weight_gradient

    return pair_sums


def _dense_pair_functions(rows: Rows, grouping, feature_variance, variance_floor, h, block_size, num_queries, seed,
                          info):
    """The group variances, then the queries (every row, or ``num_queries`` landmarks drawn by seed + 1)
    centred on the driver: ``(marginal pair terms, image pair sums, num_queries)`` of the dense passes."""
    variances = _group_variances(rows, grouping, feature_variance, variance_floor)
    queries = rows.sample(num_queries, seed + 1)  # every row when num_queries is all of them
    # the queries centred at the column means (the rows are centred in the tasks)
    centred = RowSet(_centred(queries.matrix, grouping["mean"]), queries.ids, queries.labels)
    query_memberships = group_memberships(centred.matrix, queries.labels, grouping)
    info.update(variances=variances, num_queries=len(queries))

    def pair_terms(w, with_self):
        return _marginal_terms(rows, grouping, centred, query_memberships, variances, feature_variance, w, h,
                               with_self, block_size)
    return pair_terms, _ise_pair_sums(rows, grouping, centred, query_memberships, variances, h, block_size), \
        len(queries)


def _sparse_pair_functions(rows: Rows, grouping, feature_variance, variance_floor, h, settings, seed, info):
    """Sparse rows (:mod:`sparkfs.spark.parzen_ise_sparse`): the group variances from sparse products, every
    row collected as a query (CSR), the plan of exact and estimated features; ``(marginal pair terms, None,
    N)``."""
    variances = sparse_group_variances(rows, grouping, feature_variance, variance_floor)
    queries = rows.collect()
    query_memberships = sparse_group_memberships(queries.matrix, queries.labels, grouping)
    setup = prepare_sparse_marginal(queries, query_memberships, grouping["mean"], feature_variance, settings,
                                    seed + 1)
    _, scaled_variances = pim.standardised(np.zeros((0, len(feature_variance))), feature_variance, variances)
    info.update(variances=variances, num_queries=len(queries), sparse_pairs=setup.summary())

    def pair_terms(w, with_self):
        return sparse_marginal_terms_pass(rows, grouping, queries, query_memberships, setup, scaled_variances, w, h,
                                          with_self)
    return pair_terms, None, len(queries)


def parzen_ise_statistics(df, features_col: str, label_col: Optional[str] = None, *, num_features: int,
                          num_classes: Optional[int] = None, options: Optional[ParzenISEOptions] = None,
                          engine: Optional[EngineOptions] = None,
                          sparse_pairs: Optional[SparsePairSettings] = DEFAULT_SPARSE_PAIRS) -> ParzenISEResult:
    """Parzen-ISE weights on a DataFrame; equal to :func:`parzen_ise_in_memory` on the same rows
    (``label_col``: a class index column 0..num_classes-1, else FCM groups). ``options``: the
    method's (:class:`sparkfs.core.options.ParzenISEOptions`); ``engine``: the pair engine's
    (:class:`sparkfs.spark.method_setup.EngineOptions`: ``row_id_col``, ``transport``,
    ``driver_budget_mb``, ``query_batch_bytes``, ``canonical``).
    The pair sums run per query batch of at most ``block_size`` queries and within
    ``query_batch_bytes`` (see :class:`~sparkfs.spark.rows.Rows`; on Spark Connect at most 48 MiB
    per batch). ``sparse_pairs`` (None: always the dense passes): on sparse vectors with the marginal
    criterion and no landmarks, the budget of the sparse passes (:mod:`sparkfs.spark.parzen_ise_sparse`;
    ``info["sparse_pairs"]`` says which features were exact and how many landmarks the others took)."""
    options, engine = options_of(ParzenISEOptions, options, engine)
    checked = options.checked(num_features)   # the descent's values as floats, fixed_feature within the features
    landmarks, seed, block_size = options.landmarks, options.seed, options.block_size
    marginal = checked["criterion"] == "marginal"
    with engine.rows(df, features_col, label_col, num_features=num_features, num_classes=num_classes,
                     cache_blocks=True, fewer_rows_hint="set landmarks to use a sample of the rows as queries") as rows:
        num_rows = rows.n_rows
        if num_rows < 2:
            raise InvalidInputError(f"Parzen-ISE needs at least 2 rows; the input has {num_rows}")
        num_queries = num_rows if landmarks is None or landmarks >= num_rows else landmarks
        rows.check_driver_rows(num_queries, "the queries")  # before any other pass
        statistics = rows.column_statistics()
        rows.check_magnitude("Parzen-ISE", power=criterion_power(checked["criterion"]))
        mean = np.asarray(statistics.mean, dtype=np.float64)
        population_std = np.asarray(statistics.std, dtype=np.float64) * np.sqrt((num_rows - 1) / num_rows)
        feature_variance = population_std ** 2
        h_value = checked["h"] if checked["h"] is not None else (
            pim.marginal_window_width(num_rows) if marginal else pi.default_window_width(num_rows, num_features))
        info: Dict[str, Any] = {"h": h_value, "criterion": checked["criterion"]}
        sparse = sparse_pairs is not None and marginal and num_queries == num_rows and stores_sparse(df, features_col)
        if label_col is not None:
            grouping = {"centres": None, "num_groups": int(num_classes), "mean": mean}
            info["groups"] = "labels"
        else:
            centres, fcm_info = _fuzzy_cmeans(rows, mean, np.where(population_std > 0, population_std, 1.0),
                                              options.num_clusters, options.m, options.fcm_tol,
                                              options.fcm_max_iter, seed, sparse)
            grouping = {"centres": centres, "m": options.m, "hard": options.memberships == "hard",
                        "num_groups": options.num_clusters, "mean": mean}
            info.update(groups="fcm", fcm=fcm_info, centres=centres + mean)
        if sparse:
            pair_terms, pair_sums, num_queries = _sparse_pair_functions(
                rows, grouping, feature_variance, checked["variance_floor"], h_value, sparse_pairs, seed, info)
        else:
            pair_terms, pair_sums, num_queries = _dense_pair_functions(
                rows, grouping, feature_variance, checked["variance_floor"], h_value, block_size, num_queries, seed,
                info)

        def run(fixed, previous):
            if marginal:
                return pim.marginal_run(
                    pair_terms, num_rows=num_rows, num_features=num_features, fixed=fixed, num_queries=num_queries,
                    max_iter=checked["descent"]["max_iter"], tol=checked["descent"]["tol"],
                    previous=previous, rank_by=checked["rank_by"])
            return pi.ise_run(pair_sums, num_rows=num_rows, num_features=num_features, variances=info["variances"],
                              h=h_value, fixed=fixed, num_queries=num_queries, descent_options=checked["descent"])

        runs = runs_with_held_out_feature(run, num_features, options.fixed_feature)
        info.update(runs=runs, fixed_feature=runs[-1]["fixed_feature"], passes=len(rows.info["passes"]),
                    transport=rows.transport)
    return ParzenISEResult(final_scores(runs), num_rows, info["groups"], info)


def parzen_ise_on_sample(df, features_col: str, label_col: Optional[str] = None, *, num_features: int,
                         num_classes: Optional[int] = None, sample_size: int,
                         options: Optional[ParzenISEOptions] = None,
                         engine: Optional[EngineOptions] = None) -> ParzenISEResult:
    """Parzen-ISE on ``sample_size`` rows drawn by ``options.seed`` (:meth:`Rows.sample`: the rows
    of smallest content key, the same for any partitioning), fitted on the driver by
    :func:`sparkfs.core.parzen_ise.parzen_ise_in_memory` (``options``: its keyword arguments, as
    :func:`parzen_ise_statistics`; of the engine, ``row_id_col``, ``transport``,
    ``driver_budget_mb`` and ``canonical``).

    Every pair of rows meets in every feature (O(N^2 d) per evaluation, and a CSR row is densified
    for the Gaussian kernel), so on a large, wide input the selector's default is this sample
    (passes: the counts, the sample). ``n_rows`` is the input's; ``info["sample_rows"]`` the sample's.
    """
    options, engine = options_of(ParzenISEOptions, options, engine)
    def at_least_two_rows(counts):
        if counts.sum() < 2:
            raise InvalidInputError(f"Parzen-ISE needs at least 2 rows; the input has {int(counts.sum())}")

    with rows_with_queries(df, features_col, label_col, num_features=num_features, num_classes=num_classes,
                           engine=engine, sample_size=sample_size, seed=options.seed, check_classes=at_least_two_rows,
                           fewer_rows_hint="set sampleSize to fit on a smaller sample of the rows") as (rows, sample):
        num_rows = rows.n_rows
        passes = len(rows.info["passes"])
    points = sample.matrix.toarray() if sp.issparse(sample.matrix) else np.asarray(sample.matrix, dtype=np.float64)
    _, info = pi.parzen_ise_in_memory(points, sample.labels if label_col is not None else None, **options.in_memory())
    info.update(num_queries=int(info["num_queries"]), passes=passes, sample_rows=len(sample))
    return ParzenISEResult(info["scores"], num_rows, info["groups"], info)
