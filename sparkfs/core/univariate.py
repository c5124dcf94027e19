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
    """F_j = [SSB_j / (C_j - 1)] / [SSW_j / (n_j - C_j)] for every feature j.

    ``SSB_j = sum_c n_cj (mean_cj - mean_j)^2`` (between classes), ``SSW_j = sum_c (Q_cj - n_cj
    mean_cj^2)`` (within classes), from counts ``n_c`` (C,), sums ``S`` (C, p) and sums of
    squares ``Q`` (C, p). Classes without rows are ignored. A feature with no within-class
    variance gets ``inf`` when it separates the classes and NaN when it is constant (0 / 0), as
    Spark ML; both NaN and the degenerate C < 2 or n <= C give NaN.

    Counts of shape (C, p) are per-feature counts: ``n_cj`` the rows of class c where feature j is
    present, with the sums taken over those rows only. This is pairwise deletion (each feature's
    test on its complete cases, ``scipy.stats.f_oneway(..., nan_policy='omit')`` feature by
    feature): ``C_j`` counts the classes where feature j has rows and ``n_j = sum_c n_cj``.
    """
    counts, sums, squares = _per_feature_counts(class_counts, class_sums), _as_2d(class_sums), _as_2d(class_sum_squares)
    present = counts > 0
    num_classes, n = present.sum(axis=0), counts.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        class_means = np.where(present, sums / np.where(present, counts, 1.0), 0.0)
        grand_mean = sums.sum(axis=0) / n
        between = np.where(present, counts * (class_means - grand_mean) ** 2, 0.0).sum(axis=0)
        within = np.maximum((squares - counts * class_means ** 2).sum(axis=0), 0.0)
        f_values = (between / (num_classes - 1)) / (within / (n - num_classes))
    return np.where((num_classes < 2) | (n <= num_classes), np.nan, f_values)


def _as_2d(values) -> np.ndarray:
    return np.atleast_2d(np.asarray(values, dtype=np.float64))


def _per_feature_counts(class_counts, class_sums) -> np.ndarray:
    """The counts as (C, p): class counts (C,) repeated for every feature, or per-feature counts as given."""
    counts = np.asarray(class_counts, dtype=np.float64)
    sums = _as_2d(class_sums)
    if counts.ndim == 2:
        return counts
    return np.broadcast_to(counts[:, None], sums.shape)


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
    (0 / 0), as in scikit-learn. Counts of shape (C, p) are per-feature counts (pairwise deletion:
    ``n_cj`` the rows of class c where feature j is present, ``E_cj = (n_cj / n_j) F_j``).
    """
    counts, observed = _per_feature_counts(class_counts, class_sums), _as_2d(class_sums)
    present = counts > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = counts / counts.sum(axis=0) * observed.sum(axis=0)
        terms = (observed - expected) ** 2 / expected
    return np.where(present, terms, 0.0).sum(axis=0)


def classes_with_rows(class_counts) -> np.ndarray:
    """The classes with rows: a number for counts (C,), one per feature for per-feature counts (C, p)."""
    return np.count_nonzero(np.asarray(class_counts, dtype=np.float64) > 0, axis=0)


def chi2_p_values(statistics, num_classes) -> np.ndarray:
    """Upper-tail p-values of chi-squared statistics with ``num_classes - 1`` degrees of freedom
    (``num_classes``: the classes with rows, a number or one per feature). A statistic of 0 gives 1;
    NaN stays NaN."""
    from scipy.stats import chi2

    return chi2.sf(np.asarray(statistics, dtype=np.float64), np.asarray(num_classes) - 1)


def anova_p_values(f_values, class_counts) -> np.ndarray:
    """Upper-tail p-values of one-way ANOVA F values: ``P(F(C - 1, n - C) > F_j)``, with ``C`` the
    classes that have rows and ``n`` the rows (the degrees of freedom of :func:`anova_f_values`;
    per feature for per-feature counts (C, p)).

    ``F = +inf`` (separating classes without within-class variance) gives 0, ``F = 0`` gives 1,
    NaN stays NaN, as scikit-learn's ``f_classif``; every p-value is NaN when C < 2 or n <= C.
    """
    from scipy.stats import f as f_distribution

    counts = np.asarray(class_counts, dtype=np.float64)
    num_classes, n = classes_with_rows(counts), counts.sum(axis=0)
    f_values = np.asarray(f_values, dtype=np.float64)
    degenerate = (num_classes < 2) | (n <= num_classes)
    if np.all(degenerate):
        return np.full(f_values.shape, np.nan)
    with np.errstate(invalid="ignore"):
        p_values = f_distribution.sf(f_values, np.maximum(num_classes - 1, 1), np.maximum(n - num_classes, 1))
    return np.where(degenerate, np.nan, p_values)
