"""Pearson's chi-squared test of independence on contingency tables, as Spark ML's ``ChiSquareTest``.

Pure NumPy/SciPy. Spark ML's ``ChiSquareTest.test(dataset, featuresCol, labelCol)`` (the test of
sparkfs's ``chi2-categorical``) takes every distinct value of a feature as a category and, per
feature, tests its independence from the label on the contingency table of counts:

* the table ``O`` (V x C): rows are the feature's distinct values in ascending order, columns the
  labels seen, in ascending order (:func:`contingency_table`); on sparse vectors every value a row
  does not store is 0.0, one category with the explicit zeros (Spark's sparse path adds, per label,
  the rows that store nothing to the category 0.0);
* the expected counts under independence ``E_vc = (column sum_c x row sum_v) / n``
  (:func:`expected_counts`);
* the statistic ``X^2 = sum_vc (O_vc - E_vc)^2 / E_vc``, summed column after column as Spark does
  (:func:`pearson_independence`), with ``(V - 1)(C - 1)`` degrees of freedom;
* the p-value ``1 - F(X^2)``, F the chi-squared distribution function with those degrees of freedom:
  Spark computes it as one minus the distribution function (commons-math), not as the upper tail,
  so a p-value below about 1e-16 is 0.0 there and here;
* a table of one row or one column (a constant feature, or a single label) is independent by
  definition: statistic 0, 0 degrees of freedom, p-value 1 (Spark's rule).

Spark refuses a feature of more than :data:`MAX_CATEGORIES` distinct values, or as many labels;
:func:`chi_square_test` refuses them with the feature named. Cost: a sort of each column,
O(n log n) per feature, and a V x C table at a time.
"""

from __future__ import annotations

from typing import Iterator, NamedTuple, Optional, Tuple, Union

import numpy as np
import scipy.sparse as sp
from scipy.special import chdtr

from sparkfs.errors import InvalidInputError

#: Spark ML's ``ChiSquareTest.maxCategories``: distinct values of a feature (or labels) it takes at most.
MAX_CATEGORIES = 10_000


class ContingencyTable(NamedTuple):
    """The counts of one feature against the labels: ``counts[v, c]`` rows of value ``categories[v]``
    in the ``c``-th label seen (``labels[c]``, a class index)."""

    categories: np.ndarray  # (V,) the distinct values, ascending
    labels: np.ndarray      # (C,) the class indices seen, ascending
    counts: np.ndarray      # (V, C) float counts, as Spark's DenseMatrix holds them


class IndependenceTest(NamedTuple):
    """Pearson's test of one table (scalars) or of every feature (arrays of shape (d,))."""

    statistic: Union[float, np.ndarray]
    degrees_of_freedom: Union[int, np.ndarray]
    p_value: Union[float, np.ndarray]


def contingency_table(values, class_index, num_classes: int, counts=None) -> ContingencyTable:
    """The contingency table of ``values`` (n,) against ``class_index`` (n,) in 0..num_classes-1.

    ``counts`` (n,), optional: how many rows each entry stands for (default one each), so that a
    sparse column can give its stored values one by one and its zeros as one entry per class; an
    entry of count 0 stands for no row. Only the values and labels seen form rows and columns, as in
    Spark (a class without rows has no column).
    """
    values = np.asarray(values, dtype=np.float64) + 0.0  # -0.0 is the category 0.0
    class_index = np.asarray(class_index, dtype=np.int64)
    if counts is not None:
        counts = np.asarray(counts, dtype=np.float64)
        present = counts > 0
        values, class_index, counts = values[present], class_index[present], counts[present]
    categories, value_index = np.unique(values, return_inverse=True)
    table = np.bincount(value_index.ravel() * num_classes + class_index, weights=counts,
                        minlength=categories.size * num_classes).reshape(categories.size, num_classes)
    seen = np.flatnonzero(table.sum(axis=0) > 0)
    return ContingencyTable(categories, seen, table[:, seen])


def expected_counts(table) -> np.ndarray:
    """``E_vc = (column sum_c x row sum_v) / n``: the counts expected when the value and the label are
    independent, with the table's margins (the product taken in Spark's order)."""
    table = np.asarray(table, dtype=np.float64)
    column_sums, row_sums = table.sum(axis=0), table.sum(axis=1)
    return (column_sums[None, :] * row_sums[:, None]) / column_sums.sum()


def pearson_independence(table) -> IndependenceTest:
    """Pearson's chi-squared test of independence of a V x C table of counts (no empty row or column).

    Returns the statistic ``sum (O - E)^2 / E``, ``(V - 1)(C - 1)`` degrees of freedom and the
    p-value ``1 - F(statistic)``; a table of one row or one column gives (0, 0, 1). The terms are
    added one by one, column after column (the order of Spark's loop over its column-major matrix),
    so the statistic has Spark's bits: the counts and margins are whole numbers, exact in floats.
    """
    table = np.asarray(table, dtype=np.float64)
    num_values, num_labels = table.shape
    degrees_of_freedom = (num_values - 1) * (num_labels - 1)
    if degrees_of_freedom == 0:
        return IndependenceTest(0.0, 0, 1.0)
    expected = expected_counts(table)
    deviation = (table - expected).T.ravel()  # column-major: label by label, each over the values
    terms = deviation * deviation / expected.T.ravel()
    statistic = float(np.cumsum(terms)[-1])   # a sequential sum, in Spark's order
    return IndependenceTest(statistic, degrees_of_freedom, float(1.0 - chdtr(degrees_of_freedom, statistic)))


def feature_columns(X, class_index, num_classes: int) -> Iterator[Tuple[np.ndarray, np.ndarray, Optional[np.ndarray]]]:
    """Per feature, ``(values, class index, counts)`` for :func:`contingency_table`: a dense column as it
    is; a sparse column's stored values, then per class its rows that store nothing as one entry of
    value 0.0 with their number as count (nothing is densified)."""
    class_index = np.asarray(class_index, dtype=np.int64)
    if not sp.issparse(X):
        X = np.asarray(X, dtype=np.float64)
        for feature in range(X.shape[1]):
            yield X[:, feature], class_index, None
        return
    csc = sp.csc_matrix(X)
    class_counts = np.bincount(class_index, minlength=num_classes).astype(np.float64)
    classes = np.arange(num_classes)
    for feature in range(csc.shape[1]):
        stored = slice(csc.indptr[feature], csc.indptr[feature + 1])
        stored_classes = class_index[csc.indices[stored]]
        absent = class_counts - np.bincount(stored_classes, minlength=num_classes)
        values = np.concatenate([csc.data[stored], np.zeros(num_classes)])
        counts = np.concatenate([np.ones(stored_classes.size), absent])  # a class of no absent row: count 0
        yield values, np.concatenate([stored_classes, classes]), counts


def chi_square_test(X, class_index, num_classes: int) -> IndependenceTest:
    """Spark ML's ``ChiSquareTest.test`` of every feature of ``X`` (n, d), dense or SciPy sparse,
    against the classes ``class_index`` (n,) in 0..num_classes-1: the (d,) statistics, degrees of
    freedom and p-values of :func:`pearson_independence` on each feature's :func:`contingency_table`.

    A feature (or the labels) with more than :data:`MAX_CATEGORIES` distinct values is refused, as
    Spark refuses it, with the feature named.
    """
    class_index = np.asarray(class_index, dtype=np.int64)
    num_labels = np.unique(class_index).size
    if num_labels > MAX_CATEGORIES:
        raise InvalidInputError(f"Spark ML's ChiSquareTest takes at most {MAX_CATEGORIES:,} distinct labels; the "
                                f"labels have {num_labels:,}")
    num_features = X.shape[1]
    statistics, degrees, p_values = np.zeros(num_features), np.zeros(num_features, np.int64), np.ones(num_features)
    for feature, (values, classes, counts) in enumerate(feature_columns(X, class_index, num_classes)):
        table = contingency_table(values, classes, num_classes, counts)
        if table.categories.size > MAX_CATEGORIES:
            raise InvalidInputError(f"Spark ML's ChiSquareTest takes at most {MAX_CATEGORIES:,} distinct values per "
                                    f"feature (categories); feature {feature} has {table.categories.size:,}")
        statistics[feature], degrees[feature], p_values[feature] = pearson_independence(table.counts)
    return IndependenceTest(statistics, degrees, p_values)
