"""Feature scaling: the one definition every selector uses (the ``scaling`` Param).

Each feature j is mapped to ``x'_j = (x_j - offset_j) / scale_j``:

* ``"none"``: offset 0, scale 1 (the data as given);
* ``"range"``: offset ``min_j``, scale ``max_j - min_j`` (values on [0, 1]; Kononenko's Relief ``diff``);
* ``"standard"``: offset ``mean_j``, scale ``s_j``, the *sample* standard deviation (ddof = 1).

A constant feature (``max_j == min_j``, or a std of 0) gets scale 1: it is left as it is (after
the offset, all its values are 0), never divided by 0 or by the rounding residue of a one-pass
variance. Constant features are found from the minimum and maximum, which are exact, so both
functions below take them.

Who uses what. Scores built from differences of values (Relief's distances and margins
``|x_n - x_r|``, Parzen-Relief's kernels) are translation invariant and use only the scale
(:func:`feature_scale`). LFS / QFS are not (theta uses raw second moments): they use offset and
scale (:func:`feature_scaling`), applied analytically to the one-pass statistics
(:func:`sparkfs.core.fisher_markov.affine_class_moments`, :func:`sparkfs.core.qfs.rescale_gram_statistics`).

The meaning of ``"standard"``
-----------------------------
``s_j = sqrt(sum_u (x_uj - mean_j)^2 / (n - 1))``, the sample standard deviation (ddof = 1).
Why this one: it is the standard deviation Spark computes, ``Summarizer``'s ``"std"`` and the
divisor of ``pyspark.ml.feature.StandardScaler`` (the "corrected sample standard deviation"), so
the Relief engine takes it as it comes from one Summarizer pass, and data standardised with Spark's
``StandardScaler(withMean=True, withStd=True)`` and fitted with ``scaling="none"`` give the same
scores as ``scaling="standard"``. scikit-learn's ``StandardScaler`` divides by the population std
(ddof = 0) instead; the two differ by the factor ``sqrt(n / (n - 1))``, the same for every feature,
so the LFS and neighbour-based Relief *rankings* are the same under either (Parzen-Relief's too
with its default bandwidth, which follows the scale), while the scores are not: Relief's margins
scale with ``1 / s`` and LFS theta with ``1 / s^2`` (the ddof = 1 theta are ``(n - 1) / n`` times
the ddof = 0 ones, which matters for a ``threshold``).

Until this module existed, LFS / QFS divided by the population std and Relief by the sample std;
both now divide by the sample std (unweighted LFS ``"standard"`` theta changed by the factor
``(n - 1) / n``; QFS's degree-2 terms scale as ``1 / s^4``, so its selection may change slightly).

Weights (LFS ``weightCol``): the weighted sample variance is Spark's ``Summarizer``'s,
``sum_u w_u (x_uj - mean_j)^2 / (W - V / W)`` with ``W = sum_u w_u``, ``V = sum_u w_u^2`` and the
weighted mean (reliability weights: ``n - 1`` for unit weights, and like theta it does not depend
on the unit of the weights). See :func:`sample_std`.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
import scipy.sparse as sp

from sparkfs.errors import InvalidInputError

#: The feature scalings, the values of every selector's ``scaling`` Param.
SCALINGS = ("none", "range", "standard")


def check_scaling(scaling: str) -> str:
    if scaling not in SCALINGS:
        raise ValueError(f"unknown scaling {scaling!r}: use one of {SCALINGS}")
    return scaling


def _column_vector(values, name: str) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float64)
    if vector.ndim != 1:
        raise ValueError(f"{name} must be one value per feature (a 1-d array); got shape {vector.shape}")
    return vector


def sample_std(weight_sum, sums, sum_squares, *, weight_square_sum=None) -> np.ndarray:
    """Sample standard deviation (ddof = 1) of each feature from one-pass sums, as Spark's Summarizer.

    ``var_j = (Q_j - S_j^2 / W) / (W - V / W)`` with ``S_j = sum_u w_u x_uj``,
    ``Q_j = sum_u w_u x_uj^2``, ``W = sum_u w_u`` and ``V = sum_u w_u^2``. Without weights
    ``V = W = n`` and this is ``sum_u (x_uj - mean_j)^2 / (n - 1)``.

    Parameters
    ----------
    weight_sum : float
        ``W``, the number of rows without weights.
    sums, sum_squares : arrays of shape (p,)
        ``S`` and ``Q``.
    weight_square_sum : float, optional
        ``V``; None means unit weights (``V = W``).

    Returns
    -------
    ndarray of shape (p,); 0 where the denominator ``W - V / W`` is not positive (a single row, or
    all the weight on one row), as Summarizer.

    Notes
    -----
    ``Q - S^2 / W`` from one-pass sums loses relative precision ~ eps mean^2 / var when
    ``|mean| >> std`` (Summarizer's Welford updates do not); negative residues are clipped to 0.
    Constant features are recognised by :func:`feature_scale` from the exact min and max, not
    from this value.
    """
    weight_sum = float(weight_sum)
    weight_square_sum = weight_sum if weight_square_sum is None else float(weight_square_sum)
    sums, sum_squares = _column_vector(sums, "sums"), _column_vector(sum_squares, "sum_squares")
    if sums.shape != sum_squares.shape:
        raise ValueError(f"sums has shape {sums.shape} and sum_squares {sum_squares.shape}")
    if weight_sum <= 0:
        raise ValueError("the weight sum (number of rows) must be positive")
    denominator = weight_sum - weight_square_sum / weight_sum
    if denominator <= 0:
        return np.zeros_like(sums)
    squared_deviations = np.clip(sum_squares - sums**2 / weight_sum, 0.0, None)
    return np.sqrt(squared_deviations / denominator)


def feature_scale(scaling: str, *, minimum, maximum, std=None, num_features: Optional[int] = None) -> np.ndarray:
    """The divisor of each feature: 1 (``"none"``), ``max - min`` (``"range"``) or the sample std.
    The distance methods (the Relief and MultiSURF families, Lmba, Simba) divide by it and never
    shift (their distances and margins are translation invariant); LFS and QFS also shift
    (:func:`feature_scaling`).

    Parameters
    ----------
    scaling : {"none", "range", "standard"}
    minimum, maximum : arrays of shape (p,)
        Column minimum and maximum (they also identify constant features exactly).
    std : array of shape (p,)
        Column sample standard deviation, ddof = 1 (``"standard"`` only; see :func:`sample_std`).
    num_features : int, optional
        p, checked against the length of the statistics when given.

    Returns
    -------
    ndarray of shape (p,), strictly positive; 1 for a constant feature (``max == min`` or std 0).
    """
    check_scaling(scaling)
    if minimum is None or maximum is None:
        raise ValueError(f"scaling={scaling!r} needs the column minimum and maximum")
    minimum, maximum = _column_vector(minimum, "minimum"), _column_vector(maximum, "maximum")
    if minimum.shape != maximum.shape:
        raise ValueError(f"minimum has shape {minimum.shape} and maximum {maximum.shape}")
    if num_features is not None and minimum.shape != (num_features,):
        raise ValueError(f"the column statistics describe {minimum.shape[0]} features, expected {num_features}")
    if scaling == "none":
        return np.ones_like(minimum)
    if scaling == "range":
        spread = maximum - minimum
    else:
        if std is None:
            raise ValueError("scaling='standard' needs the column standard deviation")
        spread = _column_vector(std, "std")
        if spread.shape != minimum.shape:
            raise ValueError(f"std has shape {spread.shape}, expected {minimum.shape}")
    varies = maximum > minimum
    return np.where(varies & (spread > 0), spread, 1.0)


def feature_scaling(scaling: str, *, minimum, maximum, mean=None, std=None) -> Tuple[np.ndarray, np.ndarray]:
    """Offset and scale of each feature: ``x' = (x - offset) / scale`` (see the module docstring).

    Parameters
    ----------
    scaling : {"none", "range", "standard"}
    minimum, maximum : arrays of shape (p,)
    mean, std : arrays of shape (p,)
        Column mean and sample standard deviation (ddof = 1), needed for ``"standard"``.

    Returns
    -------
    offset, scale : ndarrays of shape (p,); ``scale`` is :func:`feature_scale`'s.
    """
    scale = feature_scale(scaling, minimum=minimum, maximum=maximum, std=std)
    if scaling == "none":
        offset = np.zeros_like(scale)
    elif scaling == "range":
        offset = _column_vector(minimum, "minimum")
    else:
        if mean is None:
            raise ValueError("scaling='standard' needs the column mean for the offset")
        offset = _column_vector(mean, "mean")
        if offset.shape != scale.shape:
            raise ValueError(f"mean has shape {offset.shape}, expected {scale.shape}")
    return offset, scale


#: Largest |value| (after scaling) the distance- and moment-based methods accept: they square
#: values or differences of values, and float64 overflows past about 1.8e308.
MAX_MAGNITUDE = 1e150


def check_magnitude(minimum, maximum, inverse_scale=None, owner: str = "this selector") -> None:
    """Refuse features whose values (times ``inverse_scale``) exceed ``MAX_MAGNITUDE`` in size,
    naming the first such feature and the setting to change."""
    largest = np.maximum(np.abs(np.asarray(minimum, dtype=float)), np.abs(np.asarray(maximum, dtype=float)))
    if inverse_scale is not None:
        largest = largest * np.asarray(inverse_scale, dtype=float)
    if np.any(largest > MAX_MAGNITUDE):
        feature = int(np.argmax(largest))
        scaled = " after scaling" if inverse_scale is not None else ""
        raise InvalidInputError(
            f"feature {feature} has values up to {largest[feature]:.3g}{scaled}: {owner} squares differences of "
            f"values, which overflow float64 beyond {MAX_MAGNITUDE:.0e}; rescale the data (scaling='range' or "
            "'standard', or divide the column)")


def scale_columns(matrix, inverse_scale: Optional[np.ndarray]):
    """Multiply every feature by ``inverse_scale`` (CSR stays CSR; None = unchanged): the scaled
    view of :func:`feature_scale`, as a product with the inverse, in one order for every caller
    (the Spark passes and the scikit-learn front), so that equal distances tie alike in both."""
    if inverse_scale is None:
        return matrix
    if sp.issparse(matrix):
        matrix = sp.csr_matrix(matrix, copy=True)
        matrix.data *= inverse_scale[matrix.indices]
        return matrix
    return matrix * inverse_scale


def unit_length_rows(matrix):
    """Every row divided by its Euclidean norm (CSR stays CSR; a row of zeros stays zeros): the
    rows whose Euclidean distances order neighbours as their cosine similarities do,
    ``||a - b||^2 = 2 - 2 cos(a, b)``. The sums of squares run along each row (``reduceat``) in
    storage order, the same bits for every caller."""
    if sp.issparse(matrix):
        matrix = sp.csr_matrix(matrix, copy=True)
        lengths = np.diff(matrix.indptr)
        squares = np.append(matrix.data * matrix.data, 0.0)  # an empty last row starts at nnz: one slot more
        norms = np.sqrt(np.add.reduceat(squares, matrix.indptr[:-1])) if matrix.shape[0] else np.zeros(0)
        norms = np.where(lengths > 0, norms, 0.0)  # reduceat reads the next row's first value for an empty row
        matrix.data /= np.repeat(np.where(norms > 0, norms, 1.0), lengths)
        return matrix
    matrix = np.asarray(matrix, dtype=np.float64)
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    return matrix / np.where(norms > 0, norms, 1.0)[:, None]
