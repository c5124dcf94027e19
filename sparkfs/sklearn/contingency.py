"""chi2-categorical as a scikit-learn selector: Spark ML's ``ChiSquareTest`` on integer-coded features.

The Spark selector (``UnivariateTestSelector(test="chi2-categorical")``) refuses non-integer values,
then runs Spark ML's ``ChiSquareTest``: per feature, Pearson's test of independence on the table of
its distinct values x the classes. This estimator does the same on in-memory rows with
:func:`sparkfs.core.contingency.chi_square_test`, and keeps the Spark selector's reading of the
result: the scores are the statistics (ranked larger first, ties to the lower index, as every
sparkfs selector), the p-values Spark ML's, and 1 where the statistic is 0.

Spark ML's own ``ChiSqSelector`` ranks by p-value; the degrees of freedom grow with each feature's
number of distinct values, so its order can differ from the statistics' (sparkfs's, and this
estimator's). ``selection_mode="fpr"``, ``"fdr"`` and ``"fwe"`` use the p-values.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparkfs.core.contingency import chi_square_test
from sparkfs.errors import InvalidInputError
from sparkfs.sklearn.base import FeatureScores, SparkfsSelector


def first_non_integer(X):
    """``(row, feature, value)`` of the first non-integer value of ``X`` in row order, or None."""
    if sp.issparse(X):
        csr = sp.csr_matrix(X)
        fractional = np.flatnonzero(csr.data != np.floor(csr.data))
        if fractional.size == 0:
            return None
        entry = int(fractional[0])  # CSR: the entries in row order (columns in stored order within a row)
        row = int(np.searchsorted(csr.indptr, entry, side="right") - 1)
        in_row = slice(csr.indptr[row], csr.indptr[row + 1])
        candidates = csr.indices[in_row][csr.data[in_row] != np.floor(csr.data[in_row])]
        feature = int(candidates.min())
        return row, feature, float(csr[row, feature])
    dense = np.asarray(X)
    rows, features = np.nonzero(dense != np.floor(dense))
    if rows.size == 0:
        return None
    return int(rows[0]), int(features[0]), float(dense[rows[0], features[0]])


class Chi2CategoricalSelector(SparkfsSelector):
    """Spark ML's chi-squared test of independence per feature (Spark:
    ``UnivariateTestSelector(test="chi2-categorical")``, ``method`` ``chi2-categorical``).

    Every distinct value of a feature is a category (on sparse input, every value not stored is
    0.0, one category); the features must hold integer codes, as the Spark selector asks.

    Parameters
    ----------
    num_features, threshold, selection_mode, selection_threshold, allow_many_classes, missing
        The selection rule (:class:`sparkfs.sklearn.base.SparkfsSelector`); every mode, fpr / fdr /
        fwe included.

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        Pearson's statistic ``sum (O - E)^2 / E`` of each feature's table of values x classes.
    pvalues_ : ndarray (n_features,)
        Spark ML's p-values, ``1 - F(statistic)`` with ``(values - 1)(classes - 1)`` degrees of
        freedom (0.0 below about 1e-16), and 1 where the statistic is 0.
    degrees_of_freedom_ : ndarray of int (n_features,)
        0 for a constant feature (statistic 0, p-value 1).

    Notes
    -----
    A sort of each column: O(n log n) per feature, one table of values x classes at a time; sparse
    X stays sparse. Non-integer values are refused with the first one named (on counts or tf-idf
    use ``Chi2Selector``), as are a feature of more than 10,000 distinct values and more than
    10,000 classes (Spark ML's limit).
    """

    method = "chi2-categorical"
    has_p_values = True

    def _score_features(self, X, y) -> FeatureScores:
        labels = self._class_labels(y)
        self._refuse_non_integer_values(X)
        test = chi_square_test(X, labels.index, labels.values.size)
        statistics = np.asarray(test.statistic, dtype=np.float64)
        p_values = np.where(statistics == 0.0, 1.0, test.p_value)
        return FeatureScores(statistics, p_values, {"degrees_of_freedom": np.asarray(test.degrees_of_freedom)})

    def _refuse_non_integer_values(self, X) -> None:
        found = first_non_integer(X)
        if found is not None:
            _, feature, value = found
            raise InvalidInputError(
                f"{type(self).__name__} (chi2-categorical, Spark ML's ChiSquareTest) takes every distinct value as a "
                f"category and needs integer-coded features; feature {feature} has the value {value!r}. For counts, "
                "frequencies or tf-idf use Chi2Selector (method chi2)")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True  # integer codes: scikit-learn's checks round their data for it
        return tags
