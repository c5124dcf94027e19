"""The one-pass class moments of an in-memory matrix: what ``spark/stats.class_moments`` gathers
over a DataFrame, computed on a NumPy array or a SciPy CSR matrix.

The sums are exact (:mod:`sparkfs.core.exact_sums`: integer limbs, rounded once), the engine the
Spark selectors use with ``deterministic=True`` (``statsEngine="arrow"``). Both round the exact
sum of the same terms once, so the moments here are the same bits as the Spark pass's on the same
rows, whatever its partitioning, and the core formulas fed with them give the same scores.
Sparse input stays sparse: only its stored values are summed, and the column extremes count the
implicit zeros (:func:`sklearn.utils.sparsefuncs.min_max_axis`).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp
from sklearn.utils.sparsefuncs import min_max_axis

from sparkfs.core.exact_sums import exact_class_moment_sums, exact_column_sums, rounded_sums
from sparkfs.core.missing_values import class_missing_values, present_class_weights
from sparkfs.core.scaling import binary_exponents, check_magnitude
from sparkfs.errors import InvalidInputError


class ClassMoments(NamedTuple):
    """Per class ``c``: the rows ``n_c`` (C,), the (weighted) column sums ``S`` (C, p) and sums of
    squares ``Q`` (C, p); over all rows (of positive weight) the column minimum and maximum (p,);
    with instance weights the weight sum of each class (C,)."""

    class_counts: np.ndarray
    class_sums: np.ndarray
    class_sum_squares: np.ndarray
    feature_min: np.ndarray
    feature_max: np.ndarray
    class_weight_sums: Optional[np.ndarray] = None
    #: Under pairwise deletion (:func:`pairwise_class_moments`): the (C, p) weights of the present values
    #: per class and feature, and the (p,) NaN values per feature.
    class_present: Optional[np.ndarray] = None
    missing_values: Optional[np.ndarray] = None

    @property
    def class_weights(self) -> np.ndarray:
        """The class weight sums (the class sizes as floats in an unweighted fit)."""
        if self.class_weight_sums is not None:
            return self.class_weight_sums
        return self.class_counts.astype(np.float64)


def column_extremes(X):
    """(minimum, maximum) of every column of a dense or sparse matrix (implicit zeros counted)."""
    if sp.issparse(X):
        minimum, maximum = min_max_axis(X, axis=0)
        return np.asarray(minimum, dtype=np.float64), np.asarray(maximum, dtype=np.float64)
    return np.min(X, axis=0), np.max(X, axis=0)


def class_moments(X, class_index, num_classes: int, owner: str = "the class moments",
                  sample_weight: Optional[np.ndarray] = None) -> ClassMoments:
    """The exact per-class moments of ``X`` (n, p) for the class index of each row (0..C-1), with
    ``sample_weight`` the weighted ones (the column extremes over the rows of positive weight,
    as the Spark pass takes them).

    A value whose square overflows float64 is refused with the feature named
    (:func:`sparkfs.core.scaling.check_magnitude`), as the Spark pass does.
    """
    num_features = X.shape[1]
    weights = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if sample_weight is not None and (weights > 0).any():
        minimum, maximum = column_extremes(X[np.flatnonzero(weights > 0)])
    else:
        minimum, maximum = column_extremes(X)
    class_index = np.asarray(class_index, dtype=np.int64)
    try:
        sums, squares = exact_class_moment_sums(X, class_index, weights, num_classes)
    except ValueError:
        check_magnitude(minimum, maximum, owner=f"{owner} (sums of squares)")
        raise InvalidInputError(f"{owner}: the feature sums are not finite (values too large?)") from None
    return ClassMoments(
        class_counts=np.bincount(class_index, minlength=num_classes).astype(np.int64),
        class_sums=rounded_sums(sums).reshape(num_classes, num_features),
        class_sum_squares=rounded_sums(squares).reshape(num_classes, num_features),
        feature_min=minimum,
        feature_max=maximum,
        class_weight_sums=(None if sample_weight is None
                           else rounded_sums(exact_column_sums(weights, class_index, num_classes))),
    )


def pairwise_class_moments(X, class_index, num_classes: int, owner: str = "the class moments",
                           sample_weight: Optional[np.ndarray] = None):
    """(the moments of ``X`` over its present values, ``X`` with its NaN values set to 0): the sums and sums of
    squares leave every NaN out, ``class_present`` holds the per-class weights of the rows where each feature
    is present (:mod:`sparkfs.core.missing_values`), and the column extremes pass over NaN (a feature of NaN
    only: +inf / -inf), as the Spark pass under ``missing='pairwise'``."""
    weights = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    class_index = np.asarray(class_index, dtype=np.int64)
    zeroed, missing_weights, missing_rows = class_missing_values(X, class_index, weights, num_classes)
    moments = class_moments(zeroed, class_index, num_classes, owner=owner, sample_weight=sample_weight)
    rows = X[np.flatnonzero(weights > 0)] if sample_weight is not None and (weights > 0).any() else X
    if sp.issparse(rows):
        minimum, maximum = (np.asarray(extreme, dtype=np.float64) for extreme in min_max_axis(rows, 0, ignore_nan=True))
    else:
        with np.errstate(invalid="ignore"):
            minimum, maximum = np.fmin.reduce(rows, axis=0), np.fmax.reduce(rows, axis=0)
    present, missing_values = present_class_weights(moments.class_weights, moments.class_counts, missing_weights,
                                                    missing_rows)
    return moments._replace(feature_min=np.where(np.isnan(minimum), np.inf, minimum),
                            feature_max=np.where(np.isnan(maximum), -np.inf, maximum),
                            class_present=present, missing_values=missing_values), zeroed


def pairwise_facts(missing_values) -> dict:
    """What ``missing_`` adds under pairwise deletion, as the Spark summary: the features that had NaN values and
    the NaN values of the most affected one."""
    missing_values = np.asarray(missing_values)
    return {"features_with_missing": int(np.count_nonzero(missing_values)),
            "most_missing_in_a_feature": int(missing_values.max(initial=0))}


def rescaled_moments(X, class_index, num_classes: int, moments: ClassMoments, underflowing: np.ndarray,
                     owner: str = "the class moments", sample_weight: Optional[np.ndarray] = None) -> ClassMoments:
    """``moments`` with the features of ``underflowing`` (their squares underflowed:
    :func:`sparkfs.core.univariate.underflowing_squares`) replaced by the moments of those features
    times ``2^-e`` (:func:`sparkfs.core.scaling.binary_exponents`), as the Spark layer's
    ``rescaled_class_moments``: only a statistic that does not depend on a feature's unit may be
    computed from the result."""
    columns = np.flatnonzero(underflowing)
    if columns.size == 0:
        return moments
    exponents = binary_exponents(np.maximum(np.abs(moments.feature_min[columns]),
                                            np.abs(moments.feature_max[columns])))
    part = X[:, columns]
    if sp.issparse(part):   # each stored value times its power of two (a subnormal's 2^-e alone overflows)
        part = sp.csr_matrix(part, copy=True)
        part.data = np.ldexp(part.data, -exponents[part.indices])
    else:
        part = np.ldexp(np.asarray(part, dtype=np.float64), -exponents)
    rescaled = class_moments(part, class_index, num_classes, owner=owner, sample_weight=sample_weight)
    sums, squares = moments.class_sums.copy(), moments.class_sum_squares.copy()
    minimum, maximum = moments.feature_min.copy(), moments.feature_max.copy()
    sums[:, columns], squares[:, columns] = rescaled.class_sums, rescaled.class_sum_squares
    minimum[columns], maximum[columns] = rescaled.feature_min, rescaled.feature_max
    return moments._replace(class_sums=sums, class_sum_squares=squares, feature_min=minimum, feature_max=maximum)
