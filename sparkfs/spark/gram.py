"""Per-class Gram matrices and the Gram of squared values in one distributed pass (QFS, eq. 29).

QFS needs, for the candidate features, G_i = X_i^T W_i X_i per class, H = (X*X)^T W (X*X), the class
sizes and the class sums (for the unary LFS term and centring). Each Arrow batch is turned into a
dense ndarray or a CSR matrix by :func:`sparkfs.spark.blocks.aggregate_partitions` (sparse rows stay
sparse), summarised by :func:`sparkfs.core.qfs.block_gram_statistics` and the summaries are added up
in the canonical order of :class:`sparkfs.spark.rows.Rows` (chunks and groups of row positions,
:mod:`sparkfs.spark.canonical`), the same bits for any partitioning; with ``canonical=False`` (the
selectors' default ``deterministic=False``) in partition order, equal across partitionings to rounding.

Memory: every task holds and ships (C + 1) p^2 + C p + C doubles (p = number of candidates), the
driver the same; with p = 500 and C = 2 that is 6 MB. Work: O(n p^2) (three GEMM-sized products
per dense block), O(sum over rows of nnz^2) for sparse rows.

Passes: one over the rows, after the counts pass and the one shuffle of the layout. With ``center="mean"`` one more, cheap O(n p) JVM pass (Spark's ``Summarizer``, via
:func:`sparkfs.spark.stats.class_moments`) computes the weighted column means first; the data are
then centred block by block before the products. Centring afterwards from uncentred moments would
need third-order sums for H and suffers the catastrophic cancellation of one-pass moment formulas
at fourth order, so the two-pass form is used. Pass an explicit ``center`` vector (e.g. from the LFS
pass, which already holds the class sums) to stay at one pass.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

from sparkfs.core.qfs import GramStatistics, block_gram_statistics
from sparkfs.spark.rows import Rows

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

    def summarize(block):
        matrix = block.matrix if candidates is None else block.matrix[:, candidates]
        statistics = block_gram_statistics(matrix, block.labels, num_classes, weights=block.weights, center=center)
        return dict(zip(_STATISTIC_KEYS, statistics))

    def merge(left, right):
        return {key: left[key] + right[key] for key in _STATISTIC_KEYS}

    # The canonical layout of Rows: blocks and merge order fixed by row position, so the Grams
    # are the same bits for any partitioning (one shuffle; docs/architecture.md, Determinism).
    with Rows(df, features_col, num_features=num_features, label_col=label_col, num_classes=num_classes,
              weight_col=weight_col, canonical=canonical) as rows:
        summary = rows.run_pass("gram", summarize, merge)
    if summary is None:
        raise ValueError("the input has no rows")
    statistics = GramStatistics(*(summary[key] for key in _STATISTIC_KEYS))
    if statistics.class_counts.sum() <= 0:
        raise ValueError("the total weight of the rows is 0")
    return statistics


def weighted_column_means(df, features_col: str, label_col: str, weight_col: Optional[str], num_features: int) -> np.ndarray:
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
            f"candidate_indices must lie in [0, {num_features}); got {out_of_range.size} outside, e.g. {out_of_range[:3].tolist()}"
        )
    if np.unique(candidates).size != candidates.size:
        raise ValueError("candidate_indices contains repeated features")
    return candidates


__all__ = ["class_gram_statistics", "weighted_column_means"]
