"""Univariate baselines from one-pass class statistics (pure NumPy).

:func:`anova_f_values` is the one-way ANOVA F statistic of every feature against the class label,
the score Spark ML's ``ANOVATest`` (and so ``UnivariateFeatureSelector``) and scikit-learn's
``f_classif`` rank by, computed from the per-class row counts, column sums and column sums of
squares that LFS already gathers in one pass. It lets the ``anova`` baseline run where Spark's
JVM classes cannot be called (Spark Connect).

:func:`chi2_statistics` is the chi-squared statistic text users know from scikit-learn's
``chi2``: observed class sums of a non-negative feature (term counts, frequencies, tf-idf) against
the sums expected if the feature were independent of the class, from the same class sums.

:func:`anova_p_values` and :func:`chi2_p_values` turn the statistics into upper-tail p-values
(scikit-learn's ``f_classif`` and ``chi2`` return the same), which the ``fpr``, ``fdr`` and ``fwe``
selection modes of :mod:`sparkfs.core.selection` compare with alpha.
"""

from __future__ import annotations

import numpy as np


def anova_f_values(class_counts, class_sums, class_sum_squares) -> np.ndarray:
    """F_j = [SSB_j / (C - 1)] / [SSW_j / (n - C)] for every feature j.

    ``SSB_j = sum_c n_c (mean_cj - mean_j)^2`` (between classes), ``SSW_j = sum_c (Q_cj - n_c
    mean_cj^2)`` (within classes), from counts ``n_c`` (C,), sums ``S`` (C, p) and sums of
    squares ``Q`` (C, p). Classes without rows are ignored. A feature with no within-class
    variance gets ``inf`` when it separates the classes and NaN when it is constant (0 / 0), as
    Spark ML; both NaN and the degenerate C < 2 or n <= C give NaN.
    """
    counts = np.asarray(class_counts, dtype=np.float64)
    sums = np.asarray(class_sums, dtype=np.float64)
    squares = np.asarray(class_sum_squares, dtype=np.float64)
    present = counts > 0
    counts, sums, squares = counts[present], sums[present], squares[present]
    num_classes, n = counts.size, counts.sum()
    if num_classes < 2 or n <= num_classes:
        return np.full(sums.shape[1], np.nan)
    class_means = sums / counts[:, None]
    grand_mean = sums.sum(axis=0) / n
    between = (counts[:, None] * (class_means - grand_mean) ** 2).sum(axis=0)
    within = np.maximum((squares - counts[:, None] * class_means ** 2).sum(axis=0), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return (between / (num_classes - 1)) / (within / (n - num_classes))


def constant_feature_candidates(class_counts, class_sums, class_sum_squares):
    """``(zero, candidates)``: the features whose score is 0 from the sums alone, and those that may
    be constant, of which only a min == max check can tell (boolean arrays of shape (p,)).

    ``zero``: every class sum and sum of squares is exactly 0, so ``anova_f_values`` is 0 / 0, the
    score 0 whether the feature is constant (the rule) or not (an undefined F scores 0).
    ``candidates``: the other features whose variance numerator ``D = Q - S^2 / n`` (totals over
    the classes) is within the rounding a constant feature can leave, ``|D| <= 4 (n + C + 4) eps Q``,
    or whose ``Q`` is so small that squares may have underflowed (below ``n * 2^-960``). A constant
    value v makes ``S = n v (1 + d)``, ``|d| <= (n + C) eps``, and ``Q = n v^2 (1 + e)``,
    ``|e| <= (n + C + 3) eps`` whatever the summation order (the sum of squares through a square
    root and back included), so ``|D| <= n v^2 (|e| + 2 |d| + d^2 + 4 eps)``, inside the bound: every
    constant feature is zero or a candidate, and a feature that is neither is not constant.
    """
    counts = np.asarray(class_counts, dtype=np.float64)
    sums = np.atleast_2d(np.asarray(class_sums, dtype=np.float64))
    squares = np.atleast_2d(np.asarray(class_sum_squares, dtype=np.float64))
    zero = np.all(sums == 0.0, axis=0) & np.all(squares == 0.0, axis=0)
    n, total, total_squares = counts.sum(), sums.sum(axis=0), squares.sum(axis=0)
    if n <= 0:
        return zero, ~zero
    eps = np.finfo(np.float64).eps
    with np.errstate(over="ignore", invalid="ignore"):
        spread = np.abs(total_squares - total * total / n)
        near = spread <= 4.0 * (n + counts.size + 4.0) * eps * total_squares
    tiny = total_squares < n * 2.0 ** -960
    return zero, ~zero & (near | tiny)


def underflowing_squares(class_counts, class_sums, class_sum_squares) -> np.ndarray:
    """The features whose sums of squares lost their digits to underflow (boolean (p,)): not all
    zero, and a total sum of squares below ``n (2^-480)^2``, so every value is below
    :data:`sparkfs.core.scaling.MIN_MAGNITUDE` in size (a 1e-170 feature: its squares are 0, its F
    value 0 / 0). Their moments are taken again on the values times a power of two
    (:func:`sparkfs.core.scaling.binary_exponents`); a feature of ordinary values is never one."""
    from sparkfs.core.scaling import MIN_MAGNITUDE

    counts = np.asarray(class_counts, dtype=np.float64)
    sums = np.atleast_2d(np.asarray(class_sums, dtype=np.float64))
    squares = np.atleast_2d(np.asarray(class_sum_squares, dtype=np.float64))
    zero = np.all(sums == 0.0, axis=0) & np.all(squares == 0.0, axis=0)
    return ~zero & (squares.sum(axis=0) < counts.sum() * MIN_MAGNITUDE ** 2)


def chi2_statistics(class_counts, class_sums) -> np.ndarray:
    """Pearson's chi-squared statistic of every (non-negative) feature against the class label,
    with class sums as observed frequencies, as scikit-learn's ``chi2`` defines it for term counts.

    ``O_cj`` = the sum of feature j over the rows of class c (``class_sums``, (C, p)),
    ``E_cj = (n_c / n) F_j`` with ``F_j = sum_c O_cj``, and ``chi2_j = sum_c (O_cj - E_cj)^2 / E_cj``.
    Classes without rows are ignored. A feature that is zero on every row (``F_j = 0``) gets NaN
    (0 / 0), as in scikit-learn.
    """
    counts = np.asarray(class_counts, dtype=np.float64)
    observed = np.asarray(class_sums, dtype=np.float64)
    present = counts > 0
    counts, observed = counts[present], observed[present]
    feature_totals = observed.sum(axis=0)
    expected = (counts / counts.sum())[:, None] * feature_totals[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        return ((observed - expected) ** 2 / expected).sum(axis=0)


def chi2_p_values(statistics, num_classes: int) -> np.ndarray:
    """Upper-tail p-values of chi-squared statistics with ``num_classes - 1`` degrees of freedom
    (``num_classes``: the classes with rows). A statistic of 0 gives 1; NaN stays NaN."""
    from scipy.stats import chi2

    return chi2.sf(np.asarray(statistics, dtype=np.float64), int(num_classes) - 1)


def anova_p_values(f_values, class_counts) -> np.ndarray:
    """Upper-tail p-values of one-way ANOVA F values: ``P(F(C - 1, n - C) > F_j)``, with ``C`` the
    classes that have rows and ``n`` the rows (the degrees of freedom of :func:`anova_f_values`).

    ``F = +inf`` (separating classes without within-class variance) gives 0, ``F = 0`` gives 1,
    NaN stays NaN, as scikit-learn's ``f_classif``; every p-value is NaN when C < 2 or n <= C.
    """
    from scipy.stats import f as f_distribution

    counts = np.asarray(class_counts, dtype=np.float64)
    num_classes, n = int(np.count_nonzero(counts > 0)), float(counts.sum())
    f_values = np.asarray(f_values, dtype=np.float64)
    if num_classes < 2 or n <= num_classes:
        return np.full(f_values.shape, np.nan)
    return f_distribution.sf(f_values, num_classes - 1, n - num_classes)
