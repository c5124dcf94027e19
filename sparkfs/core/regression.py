"""Univariate filters against a continuous target (pure NumPy): the F test of a linear
regression of the target on each feature, from one pass's target moments.

:class:`TargetMoments` holds what the pass returns: the row count ``n``, per feature the sums
``S_j = sum_i x_ij``, the sums of squares ``Q_j = sum_i x_ij^2`` and the cross sums
``P_j = sum_i x_ij y_i``, and the target's own sum and sum of squares. Every statistic below is a
function of them, so the pass is sparse-aware (a zero entry adds nothing to any sum).

:func:`f_regression_statistics` is scikit-learn's ``f_regression`` (``center=True``) and Spark ML's
``FValueTest`` (``UnivariateFeatureSelector(labelType="continuous", featureType="continuous")``):
the squared Pearson correlation r_j^2 of feature j with the target turned into the F statistic of
a one-feature linear regression,

    F_j = r_j^2 / (1 - r_j^2) * (n - 2),       r_j = C_xy / sqrt(C_xx C_yy)          (eq. R1)

with the centred (co)variance sums ``C_xy = P_j - S_j S_y / n``, ``C_xx = Q_j - S_j^2 / n`` and
``C_yy = Q_y - S_y^2 / n``; its upper-tail p-value is that of F(1, n - 2) (eq. R2).

Numeric policy (scikit-learn's ``force_finite=True`` for the degenerate cases): a constant
feature (C_xx = 0) has no correlation, F = NaN, which the selector scores 0 with p-value 1; a
feature exactly linear in the target (r^2 = 1) has F = +inf and p-value 0. The centred sums are
formed from the raw sums, so digits are lost where a mean is large against the spread (relative
error about eps x mean^2 / variance); the raw sums themselves are exact (the ``arrow`` engine)
or Spark's Summarizer sums.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats

from sparkfs.core.exact_sums import exact_class_moment_sums, exact_column_sums, rounded_sums
from sparkfs.errors import InvalidInputError


class TargetMoments(NamedTuple):
    """Sufficient statistics of one pass against a continuous target (``p`` features)."""

    n_rows: int
    feature_sums: np.ndarray  # (p,) S_j
    feature_sum_squares: np.ndarray  # (p,) Q_j
    cross_sums: np.ndarray  # (p,) P_j = sum_i x_ij y_i
    target_sum: float  # S_y
    target_sum_squares: float  # Q_y
    target_min: float = float("nan")  # the target's extremes: a constant target is refused by them
    target_max: float = float("nan")


def exact_feature_target_sums(matrix, target):
    """The exact sums of eq. R1 over one block of rows (:mod:`sparkfs.core.exact_sums` limbs): per
    feature S_j, Q_j and P_j, and the target's S_y and Q_y (a two-column sum), for ``matrix``
    (n, p; dense or CSR) against ``target`` (n,). Exact sums merge in any order to the same bits,
    so blocks of any partitioning give one answer.

    Returns (feature sums, sums of squares, cross sums, target sums); raises ``ValueError`` when a
    value or a product x y is not finite (the callers name the rows or features)."""
    target = np.asarray(target, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        data = matrix.data if hasattr(matrix, "tocsr") else np.asarray(matrix)
        if not np.isfinite(np.abs(data).max(initial=0.0) * np.abs(target).max(initial=0.0)):
            raise ValueError("x y overflows")
    one_group = np.zeros(target.size, dtype=np.int64)
    sums, squares = exact_class_moment_sums(matrix, one_group, np.ones(target.size), 1)
    cross, _ = exact_class_moment_sums(matrix, one_group, target, 1, with_squares=False)
    return sums, squares, cross, exact_target_sums(target)


def exact_target_sums(target):
    """S_y and Q_y of ``target`` as one two-column exact sum."""
    target = np.asarray(target, dtype=np.float64)
    return exact_column_sums(np.concatenate([target, target * target]), np.repeat([0, 1], target.size), 2)


def rounded_target_moments(n_rows: int, sums, squares, cross, target_sums, target_min: float,
                           target_max: float) -> TargetMoments:
    """:class:`TargetMoments` from the merged exact sums, each rounded once."""
    target_sum, target_sum_squares = rounded_sums(target_sums)
    return TargetMoments(n_rows=int(n_rows), feature_sums=rounded_sums(sums), feature_sum_squares=rounded_sums(squares),
                         cross_sums=rounded_sums(cross), target_sum=float(target_sum),
                         target_sum_squares=float(target_sum_squares), target_min=float(target_min),
                         target_max=float(target_max))


def centred_sums(moments: TargetMoments):
    """(C_xx (p,), C_xy (p,), C_yy) of eq. R1, floored at 0 where a sum of squares must be."""
    n = float(moments.n_rows)
    sums = np.asarray(moments.feature_sums, dtype=np.float64)
    feature_spread = np.maximum(np.asarray(moments.feature_sum_squares, dtype=np.float64) - sums * sums / n, 0.0)
    cross = np.asarray(moments.cross_sums, dtype=np.float64) - sums * float(moments.target_sum) / n
    target_spread = max(float(moments.target_sum_squares) - float(moments.target_sum) ** 2 / n, 0.0)
    return feature_spread, cross, target_spread


def squared_correlations(moments: TargetMoments) -> np.ndarray:
    """r_j^2 of eq. R1, clipped to [0, 1] (rounding); NaN for a constant feature."""
    feature_spread, cross, target_spread = centred_sums(moments)
    with np.errstate(divide="ignore", invalid="ignore"):
        r_squared = cross * cross / (feature_spread * target_spread)
    r_squared = np.where(feature_spread > 0, r_squared, np.nan)
    return np.clip(r_squared, 0.0, 1.0)


def f_regression_statistics(moments: TargetMoments) -> np.ndarray:
    """F_j of eq. R1: r^2 / (1 - r^2) (n - 2); +inf where r^2 = 1, NaN for a constant feature."""
    r_squared = squared_correlations(moments)
    degrees = float(moments.n_rows) - 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        statistics = r_squared / (1.0 - r_squared) * degrees
    return np.where(r_squared == 1.0, np.inf, statistics)


def f_regression_p_values(statistics, n_rows: int) -> np.ndarray:
    """Eq. R2: the upper tail of F(1, n - 2) at each statistic (1 where it is undefined)."""
    statistics = np.asarray(statistics, dtype=np.float64)
    p_values = stats.f.sf(statistics, 1, int(n_rows) - 2)
    return np.where(np.isnan(statistics), 1.0, p_values)


def check_continuous_target(moments: TargetMoments, label_col: str = "label") -> None:
    """Refuse a target the F test cannot use: fewer than three rows (n - 2 degrees of freedom) or a
    constant target (no variance to explain)."""
    if moments.n_rows < 3:
        raise InvalidInputError(
            f"a continuous label needs at least 3 rows (the F test has n - 2 degrees of freedom); the input has "
            f"{moments.n_rows}")
    if moments.target_min == moments.target_max or not centred_sums(moments)[2] > 0:
        mean = float(moments.target_sum) / moments.n_rows
        raise InvalidInputError(
            f"label column '{label_col}' is constant ({mean!r} in all {moments.n_rows} rows): a continuous target "
            "needs some variance to explain")
