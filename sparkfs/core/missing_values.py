"""The sufficient statistics of pairwise deletion: per class and feature, the missing values' weights and rows.

Pairwise deletion (``missing='pairwise'``) computes each feature's statistic from the rows where that feature is
present, so a univariate filter of the class moments (:mod:`sparkfs.core.moment_filters`) needs, besides the sums
and sums of squares over the present values, the per-class count of those rows for every feature,
``n_cj = sum of w_u over the rows u of class c where x_uj is not NaN``. One pass gathers it as the complement of
what is missing: the weights and rows of the NaN values per class and feature (:func:`class_missing_values`,
mergeable by addition), taken from the class totals at the end (:func:`present_class_weights`). In a sparse row
an absent entry is the value 0, present; only a stored NaN is missing. Pure NumPy/SciPy: the Spark pass and the
scikit-learn front call the same functions.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def class_missing_values(matrix, class_index: np.ndarray, weights: np.ndarray, num_classes: int):
    """(``matrix`` with its NaN values set to 0, missing weights (C, p), missing rows (C, p)): the per-class weight
    sums and row counts of the NaN values of every feature. The zeroed matrix's sums are the sums over the
    present values; a sparse matrix keeps its structure (a NaN becomes a stored 0)."""
    num_features = matrix.shape[1]
    size = num_classes * num_features
    class_index = np.asarray(class_index, dtype=np.int64)
    weights = np.asarray(weights, dtype=np.float64)
    if sp.issparse(matrix):
        csr = sp.csr_matrix(matrix, copy=True)
        nan = np.isnan(csr.data)
        row_of_value = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))[nan]
        slot = class_index[row_of_value] * num_features + csr.indices[nan]
        csr.data[nan] = 0.0
        missing_weights = np.bincount(slot, weights=weights[row_of_value], minlength=size)
        missing_rows = np.bincount(slot, minlength=size)
        return csr, missing_weights.reshape(num_classes, num_features), missing_rows.reshape(num_classes, num_features)
    dense = np.asarray(matrix, dtype=np.float64)
    nan = np.isnan(dense)
    indicator = np.zeros((num_classes, dense.shape[0]))
    indicator[class_index, np.arange(dense.shape[0])] = 1.0
    missing_rows = np.rint(indicator @ nan).astype(np.int64)
    indicator[class_index, np.arange(dense.shape[0])] = weights
    return np.where(nan, 0.0, dense), indicator @ nan, missing_rows


def present_class_weights(class_weights, class_counts, missing_weights, missing_rows):
    """((C, p) weight sums of the present values per class and feature, (p,) NaN values per feature) from the class
    weight sums and row counts (C,) and the missing weights and rows (C, p) of :func:`class_missing_values`. A class
    whose rows all miss a feature has exactly 0 there (subtracting its weights could leave rounding)."""
    weights = np.asarray(class_weights, dtype=np.float64)[:, None]
    rows = np.asarray(class_counts, dtype=np.int64)[:, None]
    missing_rows = np.asarray(missing_rows, dtype=np.int64)
    present = np.where(missing_rows >= rows, 0.0, np.maximum(weights - np.asarray(missing_weights), 0.0))
    return present, missing_rows.sum(axis=0)
