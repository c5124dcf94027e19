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

import numbers
from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy as np

from sparkfs.core import relief as relief_math
from sparkfs.core.neighbours import METRICS
from sparkfs.errors import InvalidInputError
from sparkfs.spark.blocks import TRANSPORTS
from sparkfs.spark.neighbours import kernel_sums, nearest, pair_sums
from sparkfs.spark.passes import ShippedQueries
from sparkfs.spark.rows import Rows


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


def _param_error(name: str, constraint: str, value) -> ValueError:
    return ValueError(f"The '{name}' parameter of relief_statistics must be {constraint}. Got {value!r} instead.")


def _check_int(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise _param_error(name, f"an int in the range [{minimum}, inf)", value)
    return int(value)


def _check_params(variant, k, metric, scaling, sample_size, seed, block_size, num_features, num_classes,
                  query_batch_bytes, transport):
    for name, value, choices in (("variant", variant, relief_math.VARIANTS), ("metric", metric, METRICS),
                                 ("scaling", scaling, relief_math.SCALINGS), ("transport", transport, TRANSPORTS)):
        if value not in choices:
            raise _param_error(name, f"a str among {set(choices)}", value)
    _check_int("k", k, 1)
    if sample_size is not None:
        _check_int("sample_size", sample_size, 1)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise _param_error("seed", "an int", seed)
    for name, value, minimum in (("block_size", block_size, 1), ("num_features", num_features, 1),
                                 ("num_classes", num_classes, 2)):
        _check_int(name, value, minimum)
    if query_batch_bytes is not None:
        _check_int("query_batch_bytes", query_batch_bytes, 1)


def _check_sigma(sigma, num_features):
    if sigma is None:
        return None
    values = np.asarray(sigma, dtype=np.float64)
    if values.ndim > 1 or (values.ndim == 1 and values.shape[0] != num_features):
        raise _param_error("sigma", f"None, a positive float or an array of {num_features} positive floats", sigma)
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise _param_error("sigma", "positive and finite", sigma)
    return np.broadcast_to(values, (num_features,)).copy()


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


def _neighbour_weights(rows: Rows, neighbour_ids: np.ndarray):
    """One pass: the weight sum of every class, and the instance weight of every neighbour in
    ``neighbour_ids`` (0 for padding)."""
    from sparkfs.core.neighbours import PAD_ID

    wanted = np.unique(neighbour_ids[neighbour_ids != PAD_ID])
    num_classes = rows.num_classes

    def summarize(block, handle):
        keep = np.isin(block.ids, handle.value)
        return {"class_weights": np.bincount(block.labels, weights=block.weights, minlength=num_classes),
                "ids": block.ids[keep].astype(np.int64), "weights": block.weights[keep]}

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


def relief_statistics(
    df,
    features_col: str,
    label_col: str,
    *,
    num_features: int,
    num_classes: int,
    variant: str,
    k: int = 10,
    metric: str = "euclidean",
    scaling: str = "none",
    sample_size: Optional[int] = None,
    seed: int = 0,
    sigma=None,
    row_id_col: Optional[str] = None,
    block_size: int = 2048,
    query_batch_bytes: Optional[int] = None,
    return_query_margins: bool = False,
    transport: str = "auto",
    weight_col: Optional[str] = None,
    driver_budget_mb: Optional[float] = None,
) -> ReliefResult:
    """Relief-family scores of the features of ``df`` (see the module notes for the passes).

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    features_col : str
        A ``pyspark.ml`` vector column (dense or sparse; sparse rows stay sparse).
    label_col : str
        Numeric class index 0..C-1 (e.g. a StringIndexer output).
    num_features, num_classes : int
    variant : {"relief", "relieff", "mrelief", "prelief"}
        Margin of eq. (3), ReliefF (Kononenko), eq. (16) or eq. (14).
    k : int, default 10
        Nearest hits and misses per query (per other class for ReliefF); fewer where a class
        has fewer rows (module notes).
    metric : {"euclidean", "manhattan"}
    scaling : {"none", "range", "standard"}
        Divide each feature by its range (Kononenko's diff) or sample std before the search and
        the margins.
    sample_size : int or None
        Number of query instances (Relief's m), drawn by seed; None (default) uses every row
        (the data are collected to the driver once and handed to the tasks in batches: use a
        sample for large n; the search costs O(m n p)).
    seed : int
    sigma : float, array of shape (p,) or None
        Parzen-Relief bandwidth in scaled units; None = the paper's 0.01 on [0, 1]-scaled data.
    row_id_col : str or None
        Column of unique integer row ids; None numbers the rows by position.
    block_size : int
    query_batch_bytes : int or None
        Largest query batch handed to the tasks at once (see :class:`Rows`).
    return_query_margins : bool
        Also return the (m, p) per-query margin vectors.
    transport : {"auto", "context", "dataframe"}
        See :mod:`sparkfs.spark.blocks` ("dataframe" runs on Spark Connect).
    weight_col : str or None
        Instance weights (``relieff`` only; :mod:`sparkfs.core.relief` note 8): weighted priors,
        neighbours averaged by weight, queries' margins weighted. One extra pass fetches the
        neighbours' weights and the per-class weight sums.
    """
    if weight_col is not None and variant != "relieff":
        raise ValueError(f"instance weights are defined for variant 'relieff' only, not {variant!r}")
    _check_params(variant, k, metric, scaling, sample_size, seed, block_size, num_features, num_classes,
                  query_batch_bytes, transport)
    sigma = _check_sigma(sigma, num_features)
    per_query = "driver" if return_query_margins else None
    with Rows(df, features_col, num_features=num_features, label_col=label_col, num_classes=num_classes,
              row_id_col=row_id_col, transport=transport, query_batch_bytes=query_batch_bytes,
              weight_col=weight_col, driver_budget_mb=driver_budget_mb,
              fewer_rows_hint="set sampleSize to use a sample of the rows as queries") as rows:
        if sample_size is not None:
            _check_class_sizes(rows.class_counts)  # before drawing: fail fast on one class
        queries = rows.sample(sample_size, seed)
        class_counts = rows.class_counts
        _check_class_sizes(class_counts)
        priors = relief_math.class_priors(class_counts)
        scale = np.ones(num_features)
        if scaling != "none" or (variant == "prelief" and sigma is None):
            statistics = rows.column_statistics()
            if scaling != "none":
                scale = relief_math.feature_scale(scaling, minimum=statistics.minimum, maximum=statistics.maximum,
                                                  std=statistics.std, num_features=num_features)
            if variant == "prelief" and sigma is None:
                sigma = relief_math.default_parzen_sigma((statistics.maximum - statistics.minimum) / scale)
        scaled = rows.scaled_by(scale)
        scaled.check_magnitude(variant)
        table = None
        if variant == "prelief":
            sums = kernel_sums(scaled, queries, "gaussian",
                               group_weights=relief_math.prelief_class_weights(class_counts),
                               sigma=sigma, exclude_self=True, per_query=per_query, block_size=block_size)
        else:
            with ShippedQueries(scaled, queries) as shipped:  # one broadcast per batch for both passes
                table = nearest(scaled, shipped, k, metric=metric, block_size=block_size)
                if weight_col is None:
                    pairs = relief_math.margin_pairs(variant, table, queries.labels, priors)
                else:
                    class_weights, neighbour_weights = _neighbour_weights(rows, table.neighbour_ids)
                    priors = relief_math.class_priors(class_weights)
                    pairs = relief_math.weighted_relieff_pairs(table, queries.labels, priors, queries.weights,
                                                               neighbour_weights)
                sums = pair_sums(scaled, shipped, pairs.query_positions, pairs.neighbour_ids, pairs.weights,
                                 difference="abs", per_query=per_query)
        info = dict(rows.info)
        info["query_batches"] = len(rows.query_batches(queries))
        info["transport"] = rows.transport
    if variant != "prelief":
        short = relief_math.short_classes(class_counts, k)
        if short:
            info["short_classes"] = {str(c): used for c, used in short.items()}
    num_queries = len(queries)
    query_mass = num_queries if weight_col is None else float(queries.weights.sum())
    if query_mass <= 0:
        raise InvalidInputError(f"the instance weights of the {num_queries} queries sum to 0: no margin to average")
    scores = sums.feature_sums / query_mass
    return ReliefResult(
        scores=scores, weights=relief_math.relief_weights(scores), variant=variant, metric=metric, scaling=scaling,
        k=k, n_rows=int(class_counts.sum()), n_queries=num_queries, class_counts=class_counts, class_priors=priors,
        query_ids=queries.ids, query_labels=queries.labels,
        neighbour_ids=None if table is None else table.neighbour_ids,
        neighbour_distances=None if table is None else table.distances,
        query_margins=sums.query_sums, feature_scale=scale, sigma=sigma if variant == "prelief" else None, info=info,
    )
