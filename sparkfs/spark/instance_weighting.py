"""Han & Yu's margin-based instance weights (ICDM 2010, Algorithm 1) on the pair engine.

The formulas live in :mod:`sparkfs.core.instance_weighting`; this module only moves data.
Passes (each one Spark job per query batch):

1. **all rows** to the driver (the queries: every instance gets a margin vector);
2. **margin vectors** (eq. 6): :func:`sparkfs.spark.neighbours.kernel_sums` with the
   absolute-difference kernel and class weights ``1 - 2 I`` (+1 misses, -1 hits) over all rows,
   per query into a locally checkpointed DataFrame ``(row_id, sums)`` (CSR input stays CSR in
   the tasks; the margin vectors are dense);
3. the margin vectors to the driver (they are the queries of the next pass), and
4. **outlying degrees** (below eq. 7): :func:`sparkfs.spark.neighbours.distance_sums` of every
   margin vector against the DataFrame of margin vectors;

then eq. (7) on the driver: weights proportional to 1 / outlying degree, summing to n.

Memory: the driver holds the n x p rows and the n x p dense margin vectors (as Relief with every
row as a query); a task holds its block, a query batch and one bounded temporary. No n x n
matrix anywhere (Algorithm 1 as printed stores one).

Row ids are those of :class:`sparkfs.spark.rows.Rows`: the user's ``row_id_col`` or the row's
position in the input order. :func:`with_instance_weights` attaches the weights to the input
without a join, so the input's order and partitioning are kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy as np

from sparkfs.core.instance_weighting import (
    instance_weights_from_outlying_degrees,
    margin_vector_group_weights,
    outlying_degrees,
)
from sparkfs.core.options import MarginWeightOptions, check_int
from sparkfs.errors import InvalidInputError
from sparkfs.spark.method_setup import EngineOptions, options_of
from sparkfs.spark.neighbours import distance_sums, kernel_sums
from sparkfs.spark.row_values import with_row_values
from sparkfs.spark.rows import Rows

_MARGIN_ROW_ID = "row_id"
_MARGIN_VECTOR = "sums"


@dataclass
class InstanceWeightsResult:
    """What :func:`margin_instance_weights` returns (arrays sorted by row id).

    Attributes
    ----------
    ids : ndarray (n,) of int64
        Row ids (the positions 0..n-1 without ``row_id_col``).
    weights : ndarray (n,)
        Eq. (7), scaled to sum to n.
    outlying_degree : ndarray (n,)
        Average Euclidean distance of each margin vector to the n - 1 others.
    class_counts : ndarray (C,)
    partition_offsets : dict or None
        For positional ids: rows before each partition (what :func:`with_instance_weights` needs).
    info : dict
        Passes run and query batches (for the summary).
    """

    ids: np.ndarray
    weights: np.ndarray
    outlying_degree: np.ndarray
    class_counts: np.ndarray
    partition_offsets: Optional[Dict[int, int]] = None
    info: Dict[str, Any] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        return int(self.ids.size)


def margin_instance_weights(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                            options: Optional[MarginWeightOptions] = None,
                            engine: Optional[EngineOptions] = None) -> InstanceWeightsResult:
    """Margin vectors (eq. 6), outlying degrees and instance weights (eq. 7) of every row of ``df``.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    features_col : str
        Vector column (dense or sparse).
    label_col : str
        Class index 0..C-1 (see :func:`sparkfs.spark.stats.with_label_index`).
    num_features, num_classes : int
    options : MarginWeightOptions
        :class:`sparkfs.core.options.MarginWeightOptions`: ``block_size``, rows per kernel block
        in the tasks.
    engine : EngineOptions
        :class:`sparkfs.spark.method_setup.EngineOptions`: ``row_id_col`` (unique integer ids;
        default: the row's position in the input order), ``transport`` ("auto", "context" or
        "dataframe"), ``query_batch_bytes`` (the largest query batch handed to the tasks at once),
        ``canonical`` (the canonical layout of :class:`Rows`: the same bits for any partitioning,
        one shuffle; False: equal to rounding only, the selectors' ``deterministic=False``).

    Returns
    -------
    InstanceWeightsResult

    Raises
    ------
    InvalidInputError
        Rows of a single class (eq. 6 has no misses), NaN/inf values, bad row ids.
    """
    options, engine = options_of(MarginWeightOptions, options, engine)
    num_features = check_int("num_features", "margin_instance_weights", num_features, 1)
    num_classes = check_int("num_classes", "margin_instance_weights", num_classes, 1)
    with engine.rows(df, features_col, label_col, num_features=num_features, num_classes=num_classes,
                     fewer_rows_hint="weight a sample of the rows") as rows:
        queries = rows.collect()
        present = np.flatnonzero(rows.class_counts > 0)
        if present.size < 2:
            raise InvalidInputError(
                f"margin instance weighting needs rows of at least two classes (eq. 6 sums over the misses); "
                f"the input has rows of class {present.tolist()} only")
        if len(queries) < 2:
            raise InvalidInputError("margin instance weighting needs at least two rows")
        margins = kernel_sums(rows, queries, "abs", group_weights=margin_vector_group_weights(num_classes),
                              exclude_self=False, per_query="dataframe", block_size=options.block_size)
        margin_frame = margins.query_frame
        try:
            with Rows(margin_frame, _MARGIN_VECTOR, num_features=num_features, row_id_col=_MARGIN_ROW_ID,
                      transport=rows.transport, query_batch_bytes=engine.query_batch_bytes,
                      canonical=engine.canonical) as margin_rows:
                margin_vectors = margin_rows.collect()
                if not np.array_equal(margin_vectors.ids, queries.ids):
                    raise RuntimeError("the margin vectors' row ids differ from the rows' ids")
                totals = distance_sums(margin_rows, margin_vectors)
                passes = rows.info["passes"] + [f"margin vectors: {name}" for name in margin_rows.info["passes"]]
        finally:
            margin_frame.unpersist()
        degree = outlying_degrees(totals, len(queries))
        weights = instance_weights_from_outlying_degrees(degree)
        offsets = rows.partition_offsets
        info = {"passes": passes, "row_ids": rows.info["row_ids"],
                "transport": rows.transport}
        return InstanceWeightsResult(queries.ids.astype(np.int64), weights, degree, rows.class_counts.copy(),
                                     offsets, info)


def with_instance_weights(df, result: InstanceWeightsResult, output_col: str, *, row_id_col: Optional[str] = None,
                          transport: str = "auto"):
    """``df`` with a column ``output_col`` holding each row's weight, in the input's order
    (:func:`sparkfs.spark.row_values.with_row_values`).

    ``df`` must be the DataFrame the weights were computed from (same rows in the same
    partitions) or, with ``row_id_col``, any DataFrame whose ids are among the result's.
    """
    if row_id_col is None and result.partition_offsets is None:
        raise ValueError("the weights were computed with user row ids: pass row_id_col")
    return with_row_values(df, result.ids, result.weights, output_col,
                           partition_offsets=None if row_id_col else result.partition_offsets,
                           row_id_col=row_id_col, transport=transport, what="instance weight")
