"""The one pass behind the filters of a continuous target (:mod:`sparkfs.core.regression`).

Per feature the sums of x, x^2 and x y, and the target's count, sum, sum of squares and
extremes, in one ``mapInArrow`` pass (:func:`sparkfs.spark.blocks.aggregate_partitions`). The
sums are exact (:mod:`sparkfs.core.exact_sums`: integer limbs, rounded once on the driver), so
they are the same bits for any partitioning and file layout. Spark's ``Summarizer`` is not used:
it weights by non-negative weights only (``requirement failed: Nothing has been added`` when
every weight is 0), and a signed target as the weight of x y would need it twice.

Bad labels (null, NaN, infinite) are counted in the same pass and named after it, with
:func:`sparkfs.spark.stats.diagnose_input` naming bad vectors when the sums are not finite.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from sparkfs.core.exact_sums import as_arrays, exact_column_sums, exact_values, from_arrays, merged_exact_sums
from sparkfs.core.multisurf import hit_bound_of_sums
from sparkfs.core.regression import TargetMoments, exact_feature_target_sums, exact_target_sums, rounded_target_moments
from sparkfs.core.scaling import check_magnitude
from sparkfs.errors import InvalidInputError
from sparkfs.spark.blocks import aggregate_partitions
from sparkfs.spark.stats import column_extremes, diagnose_input, first_vector_size

_SUM_PARTS = ("sums_", "squares_", "cross_", "target_")


def _summarize_block(features_col: str, label_col: str):
    def summarize(block):
        matrix = block[features_col]
        target = np.asarray(block[label_col], dtype=np.float64)
        good = np.isfinite(target)
        rows = np.flatnonzero(good)
        kept, kept_target = matrix[rows], target[rows]
        non_finite = False
        try:
            sums, squares, cross, target_sums = exact_feature_target_sums(kept, kept_target)
        except ValueError:  # NaN/inf values or products: the driver's diagnosis names them
            non_finite = True
            sums = squares = cross = exact_column_sums([], [], matrix.shape[1])
            target_sums = exact_target_sums(kept_target)
        return {
            "rows": np.array([float(rows.size)]),
            "bad_labels": np.array([float(target.size - rows.size)]),
            "non_finite": np.array([non_finite]),
            "extremes": np.array([kept_target.min(initial=np.inf), -kept_target.max(initial=-np.inf)]),
            **as_arrays(sums, "sums_"), **as_arrays(squares, "squares_"), **as_arrays(cross, "cross_"),
            **as_arrays(target_sums, "target_"),
        }

    return summarize


def _merge(left, right):
    merged = {name: left[name] + right[name] for name in ("rows", "bad_labels")}
    merged["non_finite"] = left["non_finite"] | right["non_finite"]
    merged["extremes"] = np.minimum(left["extremes"], right["extremes"])
    for prefix in _SUM_PARTS:
        merged.update(as_arrays(merged_exact_sums(from_arrays(left, prefix), from_arrays(right, prefix)), prefix))
    return merged


def target_moments(df, features_col: str, label_col: str, num_features: int = None) -> TargetMoments:
    """:class:`sparkfs.core.regression.TargetMoments` of ``df`` in one pass (exact sums).

    Raises :class:`InvalidInputError` naming the problem for empty input, null/NaN/infinite
    labels, null vectors, vectors of different sizes and NaN/inf values."""
    if num_features is None:
        num_features = first_vector_size(df, features_col)
    labelled = df.select(features_col, df[label_col].cast("double").alias(label_col))
    try:
        summary = aggregate_partitions(labelled, [features_col, label_col], _summarize_block(features_col, label_col),
                                       _merge, num_features=num_features)
    except Exception:
        diagnose_input(df, features_col, label_col)
        raise
    if summary is None:
        raise InvalidInputError("the input has no rows")
    bad_labels = int(summary["bad_labels"][0])
    if bad_labels:
        raise InvalidInputError(f"{bad_labels} row(s) have a null, NaN or infinite label in column '{label_col}' "
                                "(a continuous label must be a finite number in every row)")
    if summary["non_finite"][0]:
        diagnose_input(df, features_col, label_col)
        check_magnitude(*column_extremes(df, features_col), owner="the target moments (sums of squares)")
        raise InvalidInputError("the feature sums are not finite (values, or values times the label, too large?)")
    return rounded_target_moments(int(summary["rows"][0]), *(from_arrays(summary, prefix) for prefix in _SUM_PARTS),
                                  summary["extremes"][0], -summary["extremes"][1])


def _target_block(label_col: str):
    def summarize(block):
        target = np.asarray(block[label_col], dtype=np.float64)
        kept = target[np.isfinite(target)]
        return {"rows": np.array([float(kept.size)]), "bad_labels": np.array([float(target.size - kept.size)]),
                "extremes": np.array([kept.min(initial=np.inf), -kept.max(initial=-np.inf)]),
                **as_arrays(exact_target_sums(kept), "target_")}

    return summarize


def _merge_targets(left, right):
    merged = {name: left[name] + right[name] for name in ("rows", "bad_labels")}
    merged["extremes"] = np.minimum(left["extremes"], right["extremes"])
    merged.update(as_arrays(merged_exact_sums(from_arrays(left, "target_"), from_arrays(right, "target_")), "target_"))
    return merged


class TargetSpread(NamedTuple):
    """What :func:`target_spread` finds: the rows and the target's sample standard deviation."""

    n_rows: int
    std: float


def target_spread(df, label_col: str) -> TargetSpread:
    """The sample standard deviation of a continuous target over every row, from one pass over the
    label column alone (exact sums of y and y^2, :func:`sparkfs.core.multisurf.hit_bound_of_sums`):
    the same bits for any partitioning. Refuses, naming the column, null/NaN/infinite labels, fewer
    than two rows and a constant target."""
    labelled = df.select(df[label_col].cast("double").alias(label_col))
    summary = aggregate_partitions(labelled, [label_col], _target_block(label_col), _merge_targets, num_features=0)
    rows = 0 if summary is None else int(summary["rows"][0])
    bad_labels = 0 if summary is None else int(summary["bad_labels"][0])
    if bad_labels:
        raise InvalidInputError(f"{bad_labels} row(s) have a null, NaN or infinite label in column '{label_col}' "
                                "(a continuous label must be a finite number in every row)")
    if rows < 2:
        raise InvalidInputError(f"a continuous label needs at least 2 rows; the input has {rows}")
    if summary["extremes"][0] == -summary["extremes"][1]:
        value = float(summary["extremes"][0])
        raise InvalidInputError(f"label column '{label_col}' is constant ({value!r} in all {rows} rows): a continuous "
                                "target needs some spread")
    return TargetSpread(rows, hit_bound_of_sums(rows, *exact_values(from_arrays(summary, "target_"))))
