"""Paired significance tests of the evaluation: a paired t-test across folds and the
Wilcoxon signed-rank test across data sets, thin wrappers of :mod:`scipy.stats` with checked
inputs. Both two-sided. No pyspark.
"""

from __future__ import annotations

from typing import NamedTuple, Tuple

import numpy as np
from scipy import stats

#: Differences closer than this count as equal (no variance: no t-test).
TIE_TOLERANCE = 1e-12


def _invalid(parameter: str, owner: str, constraint: str, value) -> ValueError:
    return ValueError(f"The '{parameter}' parameter of {owner} must be {constraint}. Got {value!r} instead.")


class PairedTest(NamedTuple):
    statistic: float
    p_value: float
    pairs: int


def _paired(a, b, owner: str, minimum: int) -> Tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 1 or a.shape != b.shape:
        raise _invalid("b", owner, f"a 1-d array as long as a ({a.shape})", f"an array of shape {b.shape}")
    if a.size < minimum or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise _invalid("a", owner, f"finite, with at least {minimum} pairs", a.tolist())
    return a, b


def paired_t_test_across_folds(a, b) -> PairedTest:
    """Two-sided paired t-test (``scipy.stats.ttest_rel``) of one metric of two methods on the
    same folds. NaN statistic and p-value when every difference is equal (within 1e-12). Folds of repeated
    cross-validation share training rows, so the p-value is optimistic (Nadeau & Bengio)."""
    a, b = _paired(a, b, "paired_t_test_across_folds", 2)
    if np.ptp(a - b) <= TIE_TOLERANCE:  # equal differences (up to rounding): no variance, no test
        return PairedTest(np.nan, np.nan, int(a.size))
    result = stats.ttest_rel(a, b)
    return PairedTest(float(result.statistic), float(result.pvalue), int(a.size))


def wilcoxon_across_datasets(a, b) -> PairedTest:
    """Two-sided Wilcoxon signed-rank test (``scipy.stats.wilcoxon``, zero differences dropped,
    exact p-value for small samples without ties) of one metric of two methods over data sets,
    as the Fisher-Markov paper's Table V (Demsar's recommendation)."""
    a, b = _paired(a, b, "wilcoxon_across_datasets", 1)
    result = stats.wilcoxon(a, b, alternative="two-sided")
    return PairedTest(float(result.statistic), float(result.pvalue), int(a.size))
