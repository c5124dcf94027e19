"""Lmba and Simba (Li & Lu 2009; Gilad-Bachrach, Navot & Tishby 2004) on the pair engine.

Both learn a feature weight vector w by a driver loop; the formulas are in
:mod:`sparkfs.core.margin_weighting`, the passes in :mod:`sparkfs.spark.neighbours`.

Lmba
----
1. Pool of instances (all rows, or a seeded sample of ``sample_size``), and their k target
   neighbours (nearest same-class rows, with their vectors) and nearest miss, in the original
   (scaled, unweighted) metric: one :func:`nearest` pass (paper, Step 2).
2. Per step, a seeded mini-batch of pool instances (their targets and theta ride along) and the
   current w are shipped; every partition compares its rows of other classes (the x_p of eq. 3)
   with the targets and returns the additive hinge terms; the driver sums them, forms the
   gradient (eq. 16-17) and updates w (Step 3d). One Spark job per step.

Per step the workers do O(batch x k x n x D) work (distances of the batch to every row, then the
k hinge comparisons per pair); the driver O(batch x k x D).

Simba
-----
Per step: the batch's nearest hit and miss in the *current* weighted metric, with their vectors,
from one :func:`nearest` pass (``feature_weights=w``, ``with_vectors=True``); the driver sums the
Deltas and updates w. One Spark job per step; O(batch x n x D) in the workers.

``iterations`` counts picked instances (the paper's I, default the pool size); a step picks
``batch_size`` of them, so there are ceil(I / batch_size) steps (jobs). ``batch_size=1`` is the
papers' per-instance procedure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy as np
import scipy.sparse as sp

from sparkfs.core import margin_weighting as mw
from sparkfs.core.neighbours import PAD_ID
from sparkfs.core.relief import miss_neighbours
from sparkfs.core.scaling import feature_scale
from sparkfs.errors import InvalidInputError
from sparkfs.spark.neighbours import nearest
from sparkfs.spark.rows import Block, Rows, RowSet


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


def _nearest_miss_vectors(table, labels) -> np.ndarray:
    """The vector of each query's nearest miss (any other class, by (distance, row id))."""
    miss_ids, _ = miss_neighbours(table, labels)
    miss_class = np.argmax(table.neighbour_ids[:, :, 0] == miss_ids[:, :1], axis=1)
    return table.vectors[np.arange(len(labels)), miss_class, 0]


def _check_classes(class_counts: np.ndarray, method: str) -> None:
    present = np.flatnonzero(class_counts > 0)
    if present.size < 2:
        raise InvalidInputError(f"{method} needs rows of at least two classes; the input has class {present.tolist()} only")
    single = [int(c) for c in present if class_counts[c] < 2]
    if single:
        raise InvalidInputError(f"class {single[0]} has a single row: a picked instance of it has no nearest hit")


def _prepare(rows: Rows, sample_size, seed, scaling, method):
    pool = rows.sample(sample_size, seed)
    _check_classes(rows.class_counts, method)
    if scaling != "none":
        statistics = rows.column_statistics()
        rows.scale_features(feature_scale(scaling, minimum=statistics.minimum, maximum=statistics.maximum,
                                          std=statistics.std, num_features=rows.num_features))
    return pool


def _steps(n_pool: int, iterations: Optional[int], batch_size: int) -> int:
    return mw.number_of_steps(n_pool if iterations is None else iterations, batch_size)


def lmba_statistics(df, features_col: str, label_col: str, *, num_features: int, num_classes: int, k: int = 3,
                    c: float = 1.0, iterations: Optional[int] = None, batch_size: int = 1, step_size: float = 1.0,
                    schedule: str = "constant", projection: str = "none", sample_size: Optional[int] = None,
                    seed: int = 0, scaling: str = "none", row_id_col: Optional[str] = None,
                    block_size: int = 2048, transport: str = "auto") -> MarginWeightingResult:
    """Lmba feature weights (Li & Lu 2009, Section 3), one Spark job per mini-batch step."""
    with Rows(df, features_col, num_features=num_features, label_col=label_col, num_classes=num_classes,
              row_id_col=row_id_col, transport=transport, cache_blocks=True) as rows:
        pool = _prepare(rows, sample_size, seed, scaling, "Lmba")
        positions = np.arange(len(pool))
        table = nearest(rows, pool, k, metric="euclidean", block_size=block_size, with_vectors=True)
        rows.release_queries()
        target_ids = table.neighbour_ids[positions, pool.labels]  # (m, k) nearest hits = target neighbours
        target_vectors = table.vectors[positions, pool.labels]  # (m, k, D), scaled units
        target_mask = target_ids != PAD_ID
        instances = _dense(rows.scaled(pool.matrix))
        theta = mw.lmba_theta_from_vectors(instances, target_vectors[:, 0], _nearest_miss_vectors(table, pool.labels))
        steps = _steps(len(pool), iterations, batch_size)
        order = mw.instance_order(len(pool), steps, batch_size, seed)
        betas = mw.step_sizes(schedule, steps, step_size)
        w = np.ones(num_features)

        def summarize(block: Block, shipped):
            impostor_sums, active_counts = mw.lmba_block_terms(
                shipped["instances"], shipped["labels"], shipped["targets"], shipped["theta"], block.matrix,
                block.labels, shipped["w"], target_mask=shipped["mask"])
            return {"impostor_sums": impostor_sums, "active_counts": active_counts.astype(np.float64)}

        def merge(left, right):
            return {name: left[name] + right[name] for name in left}

        for step in range(steps):
            picked = order[step]
            handle = rows.ship({"instances": instances[picked], "labels": pool.labels[picked], "w": w,
                                "targets": target_vectors[picked], "mask": target_mask[picked], "theta": theta[picked]})
            try:
                summary = rows.run_pass("lmba step", lambda block: summarize(block, handle.value), merge)
            finally:
                rows.release_shipped()
            gradient = mw.lmba_gradient(w, instances[picked], target_vectors[picked],
                                        summary["active_counts"].astype(np.int64), summary["impostor_sums"], c,
                                        target_mask=target_mask[picked])
            w = mw.lmba_step(w, gradient, betas[step], projection)
        info = {"passes": len(rows.info["passes"]), "transport": rows.transport}
        class_counts = rows.class_counts
    return MarginWeightingResult(mw.lmba_ranking_weights(w), w, int(class_counts.sum()), len(pool), steps,
                                 class_counts, info)


def simba_statistics(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                     iterations: Optional[int] = None, batch_size: int = 1, sample_size: Optional[int] = None,
                     seed: int = 0, scaling: str = "none", row_id_col: Optional[str] = None, block_size: int = 2048,
                     transport: str = "auto") -> MarginWeightingResult:
    """Simba feature weights (Gilad-Bachrach et al. 2004), one Spark job per mini-batch step."""
    with Rows(df, features_col, num_features=num_features, label_col=label_col, num_classes=num_classes,
              row_id_col=row_id_col, transport=transport, cache_blocks=True) as rows:
        pool = _prepare(rows, sample_size, seed, scaling, "Simba")
        steps = _steps(len(pool), iterations, batch_size)
        order = mw.instance_order(len(pool), steps, batch_size, seed)
        w = np.ones(num_features)
        for step in range(steps):
            batch: RowSet = pool.take(order[step])
            table = nearest(rows, batch, 1, metric="euclidean", feature_weights=w, block_size=block_size,
                            with_vectors=True)
            rows.release_queries()
            positions = np.arange(len(batch))
            hit_vectors = table.vectors[positions, batch.labels, 0]
            w = w + mw.simba_delta(w, _dense(rows.scaled(batch.matrix)), hit_vectors,
                                   _nearest_miss_vectors(table, batch.labels))
        info = {"passes": len(rows.info["passes"]), "transport": rows.transport}
        class_counts = rows.class_counts
    return MarginWeightingResult(mw.simba_final_weights(w), w, int(class_counts.sum()), len(pool), steps,
                                 class_counts, info)
