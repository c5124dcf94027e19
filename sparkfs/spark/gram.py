"""Per-class Gram matrices and the Gram of squared values in one distributed pass (QFS, eq. 29).

QFS needs, for the candidate features, G_i = X_i^T W_i X_i per class, H = (X*X)^T W (X*X), the class
sizes and the class sums (for the unary LFS term and centring). Each task turns its rows into dense
ndarray or CSR blocks (sparse rows stay sparse) and adds them into one set of statistics in place
(:func:`sparkfs.core.qfs.add_block_gram_statistics`); the sets are summed tile by tile on the
executors (:mod:`sparkfs.spark.tiled_sums`: the Grams travel as packed upper triangles), so the
driver receives the final statistics once, never one set per task. With ``canonical=True`` the
rows are in the canonical layout of :class:`sparkfs.spark.rows.Rows` (chunks and groups of row
positions, :mod:`sparkfs.spark.canonical`) and each tile is folded over the groups in group order:
the same bits for any partitioning. With ``canonical=False`` (the selectors' default
``deterministic=False``) the tasks read the input as it is, one set per partition: equal across
partitionings to rounding, and no counts pass.

Memory (p = number of candidates, C classes): a task holds (C + 1) p^2 + C p + C doubles (160 MiB
with p = 1,000 and C = 20) plus one p x p product; the shuffle carries about half of that per
partition (per group of 16,384 rows in the canonical layout); the driver the final statistics plus
the collected tiles ((C + 1) p^2 / 2 doubles). Work: O(n p^2) (three GEMM-sized products per dense
block), O(sum over rows of nnz^2) for sparse rows.

Passes: one over the rows (canonical: after the counts pass and the one shuffle of the layout), then
the shuffle of the tiles. With ``center="mean"`` one more, cheap O(n p) JVM pass (Spark's ``Summarizer``, via
:func:`sparkfs.spark.stats.class_moments`) computes the weighted column means first; the data are
then centred block by block before the products. Centring afterwards from uncentred moments would
need third-order sums for H and suffers the catastrophic cancellation of one-pass moment formulas
at fourth order, so the two-pass form is used. Pass an explicit ``center`` vector (e.g. from the LFS
pass, which already holds the class sums) to stay at one pass.
"""

from __future__ import annotations

from typing import NamedTuple, Optional, Sequence, Union

import numpy as np

from sparkfs.core.qfs import GramStatistics, add_block_gram_statistics
from sparkfs.spark.canonical import canonical_merge, chunk_regrouper
from sparkfs.spark.failures import with_input_diagnosis
from sparkfs.spark.row_sets import check_finite
from sparkfs.spark.rows import Rows
from sparkfs.spark.tiled_sums import SummaryLayout, tiled_pass

_STATISTIC_KEYS = ("class_counts", "class_sums", "class_grams", "squared_gram")


def class_gram_statistics(
    df,
    features_col: str,
    label_col: str,
    num_classes: int,
    candidate_indices: Optional[Sequence[int]] = None,
    weight_col: Optional[str] = None,
    center: Union[None, str, Sequence[float], np.ndarray] = None,
    *,
    num_features: Optional[int] = None,
    canonical: bool = True,
) -> GramStatistics:
    """One pass over ``df``: per-class counts, sums and Gram matrices and the squared-value Gram.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    features_col : str
        A ``pyspark.ml.linalg`` VectorUDT column (dense or sparse vectors).
    label_col : str
        A numeric column holding class indices 0..C-1 (e.g. the double produced by
        :func:`sparkfs.spark.stats.with_label_index`).
    num_classes : int
        C.
    candidate_indices : sequence of int, optional
        The features to keep, in this order (statistics index k is feature candidate_indices[k]);
        all features when None. The p x p x (C + 2) memory bound applies to this count (see
        :func:`sparkfs.core.qfs.check_driver_budget`).
    weight_col : str, optional
        Non-negative instance weights (every count and sum is weighted).
    center : None, "mean" or array of shape (len(candidates),)
        Subtract this vector from every row before the products; "mean" computes the weighted
        column means in a first pass. Centred sparse rows are densified one chunk at a time.
    num_features : int, optional
        The vector size; read from the first row when None.
    canonical : bool, default True
        The canonical layout of :class:`Rows` (the same bits for any partitioning, one shuffle);
        False: no layout, equal to rounding only (the selectors' ``deterministic=False``).

    Returns
    -------
    GramStatistics
        (class_counts (C,), class_sums (C, p), class_grams (C, p, p), squared_gram (p, p)).

    Raises
    ------
    ValueError
        For unknown columns, a bad ``num_classes``, candidate indices out of range or repeated,
        a ``center`` of the wrong length, labels that are not class indices, or an empty input.
    """
    for name in [features_col, label_col] + ([weight_col] if weight_col else []):
        if name not in df.columns:
            raise ValueError(f"column '{name}' not found; the input has columns {df.columns}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) or num_classes < 1:
        raise ValueError(f"num_classes must be a positive int; got {num_classes!r}")
    if num_features is None:
        from sparkfs.spark.stats import first_vector_size

        num_features = first_vector_size(df, features_col)
    candidates = _validated_candidates(candidate_indices, num_features)
    num_candidates = num_features if candidates is None else candidates.size

    if isinstance(center, str):
        if center != "mean":
            raise ValueError(f"center must be None, 'mean' or a vector; got {center!r}")
        center = weighted_column_means(df, features_col, label_col, weight_col, num_features)
        if candidates is not None:
            center = center[candidates]
    elif center is not None:
        center = np.asarray(center, dtype=np.float64)
        if center.shape != (num_candidates,):
            raise ValueError(
                f"center has shape {center.shape}, expected ({num_candidates},): one value per candidate feature"
            )
        if not np.all(np.isfinite(center)):
            raise ValueError("center must be finite")

    summary = _tiled_gram_pass(df, features_col, label_col, weight_col, num_classes, num_features, candidates,
                               center, canonical)
    if summary is None:
        raise ValueError("the input has no rows")
    statistics = GramStatistics(*(summary[key] for key in _STATISTIC_KEYS))
    if statistics.class_counts.sum() <= 0:
        raise ValueError("the total weight of the rows is 0")
    return statistics


def _tiled_gram_pass(df, features_col, label_col, weight_col, num_classes, num_features, candidates, center,
                     canonical: bool):
    """The Gram pass (:mod:`sparkfs.spark.tiled_sums`): the summed statistics, or None without rows."""
    layout = gram_layout(num_classes, num_features if candidates is None else candidates.size)
    if canonical:
        # The canonical layout of Rows: chunks and the fold over groups fixed by row position, so
        # the Grams are the same bits for any partitioning (one shuffle; docs/architecture.md).
        with Rows(df, features_col, num_features=num_features, label_col=label_col, num_classes=num_classes,
                  weight_col=weight_col, canonical=True) as rows:
            frame = rows.prepared  # features, label, [weight,] row id (Rows.prepared)
            names = _PreparedColumns(*frame.columns[:2], frame.columns[2] if weight_col else None, frame.columns[-1])
            add_block = _block_adder(names, candidates, center, num_classes)
            return rows.diagnosed(lambda: tiled_pass(
                frame, frame.columns, layout, add_block, num_features=num_features,
                regroup=chunk_regrouper(names.row_id, names.features),
                key_of_block=canonical_merge(names.row_id, rows.n_rows)["key_of_block"]))
    # No layout, no row ids: one pass over the input, keyed by partition (equal to rounding).
    from pyspark.sql import functions as F

    names = _PreparedColumns("__gram_features", "__gram_label", "__gram_weight" if weight_col else None, None)
    columns = [F.col(features_col).alias(names.features), F.col(label_col).cast("double").alias(names.label)]
    columns += [F.col(weight_col).cast("double").alias(names.weight)] if weight_col else []
    frame = df.select(*columns)
    add_block = _block_adder(names, candidates, center, num_classes)
    return with_input_diagnosis(lambda: tiled_pass(frame, frame.columns, layout, add_block, num_features=num_features),
                                df, features_col, label_col, weight_col)


class _PreparedColumns(NamedTuple):
    features: str
    label: str
    weight: Optional[str]
    row_id: Optional[str]


def gram_layout(num_classes: int, num_candidates: int) -> SummaryLayout:
    """The arrays of the Gram pass (the Grams travel as upper triangles)."""
    shapes = ((_STATISTIC_KEYS[0], (num_classes,)), (_STATISTIC_KEYS[1], (num_classes, num_candidates)),
              (_STATISTIC_KEYS[2], (num_classes, num_candidates, num_candidates)),
              (_STATISTIC_KEYS[3], (num_candidates, num_candidates)))
    return SummaryLayout(shapes, symmetric=_STATISTIC_KEYS[2:])


def _block_adder(names: _PreparedColumns, candidates, center, num_classes: int):
    """The task-side ``add_block`` of the Gram pass: a block's statistics added in place."""
    def add_block(accumulator, block) -> None:
        matrix = block[names.features]
        check_finite(matrix)
        if candidates is not None:
            matrix = matrix[:, candidates]
        weights = None if names.weight is None else block[names.weight]
        add_block_gram_statistics(GramStatistics(*(accumulator[key] for key in _STATISTIC_KEYS)), matrix,
                                  block[names.label], num_classes, weights=weights, center=center)
    return add_block


def weighted_column_means(df, features_col: str, label_col: str, weight_col: Optional[str],
                          num_features: int) -> np.ndarray:
    """Weighted column means of all features in one JVM-side pass (Spark's Summarizer)."""
    from sparkfs.spark.stats import class_moments

    moments = class_moments(df, features_col, label_col, weight_col=weight_col, num_features=num_features)
    total_weight = moments.class_weights.sum()
    if total_weight <= 0:
        raise ValueError("the total weight of the rows is 0: the column means are undefined")
    return moments.class_sums.sum(axis=0) / total_weight


def _validated_candidates(candidate_indices, num_features: int) -> Optional[np.ndarray]:
    if candidate_indices is None:
        return None
    candidates = np.asarray(candidate_indices)
    if candidates.ndim != 1 or (candidates.size and not np.issubdtype(candidates.dtype, np.integer)):
        raise ValueError(f"candidate_indices must be a 1-D sequence of ints; got dtype {candidates.dtype}")
    candidates = candidates.astype(np.int64)
    if candidates.size == 0:
        raise ValueError("candidate_indices is empty: QFS needs at least one candidate feature")
    out_of_range = candidates[(candidates < 0) | (candidates >= num_features)]
    if out_of_range.size:
        raise ValueError(
            f"candidate_indices must lie in [0, {num_features}); got {out_of_range.size} outside, e.g. "
            f"{out_of_range[:3].tolist()}"
        )
    if np.unique(candidates).size != candidates.size:
        raise ValueError("candidate_indices contains repeated features")
    return candidates


__all__ = ["class_gram_statistics", "gram_layout", "weighted_column_means"]
