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
#: Smallest largest |value| (after scaling) of a feature that is not all zeros those methods accept:
#: squares below 2^-1022 (values below about 1.5e-154) are subnormal doubles that keep fewer and
#: fewer digits, and below 5e-324 (values below about 2.2e-162) they are 0, so the feature would
#: look constant (every difference 0) or score 0 without a word. 2^-480 (about 3.2e-145) leaves a
#: sum of squares of n values its full precision for any n below 2^60.
MIN_MAGNITUDE = 2.0 ** -480


def check_magnitude(minimum, maximum, inverse_scale=None, owner: str = "this selector", *, tiny: bool = False,
                    power: int = 2) -> None:
    """Refuse features whose values (times ``inverse_scale``) are too large or, with ``tiny``, too
    small for ``owner``, which raises values or differences of values to ``power`` (2: squares):
    above ``MAX_MAGNITUDE`` (their squares overflow), or not all zero with none as large as
    ``MIN_MAGNITUDE`` (their squares underflow) -- the bounds' ``2 / power``-th powers for a higher
    ``power``. The message names the first such feature and what to change; a scaling whose
    divisor is itself below the smallest normal double (a range of 1e-320: ``1 / range`` overflows)
    is named as such. ``tiny`` is for the methods that cannot compute such a feature scale-free (the
    distance methods); the moment filters rescale it instead (:func:`binary_exponents`)."""
    largest = np.maximum(np.abs(np.asarray(minimum, dtype=float)), np.abs(np.asarray(maximum, dtype=float)))
    scaled = ""
    if inverse_scale is not None:
        inverse = np.asarray(inverse_scale, dtype=float)
        unscalable = ~np.isfinite(inverse) & (largest > 0)
        if np.any(unscalable):
            feature = int(np.flatnonzero(unscalable)[0])
            raise InvalidInputError(
                f"feature {feature} has values of at most {largest[feature]:.3g} in size, and {owner} divides it by "
                "its spread (its range or standard deviation), which is below the smallest normal double (2.2e-308): "
                "the inverse of the spread overflows float64; multiply the column by a power of ten first "
                f"(e.g. 1e{_exponent_to_one(largest[feature])})")
        with np.errstate(over="ignore", invalid="ignore"):
            largest = largest * inverse
        scaled = " after scaling"
    high, low = MAX_MAGNITUDE ** (2.0 / power), MIN_MAGNITUDE ** (2.0 / power)
    if np.any(largest > high):
        feature = int(np.argmax(largest))
        raise InvalidInputError(
            f"feature {feature} has values up to {largest[feature]:.3g}{scaled}: {owner} {_raises(power)}, which "
            f"overflow float64 beyond {high:.0e}; rescale the data (scaling='range' or 'standard', "
            "or divide the column)")
    small = (largest > 0) & (largest < low)
    if tiny and np.any(small):
        feature = int(np.flatnonzero(small)[0])
        raise InvalidInputError(
            f"feature {feature} has values of at most {largest[feature]:.3g} in size{scaled}: {owner} "
            f"{_raises(power)}, which underflow float64 below {low:.1e} (they lose their digits, then become 0, and "
            f"the feature would look constant); multiply the column by a power of ten first "
            f"(e.g. 1e{_exponent_to_one(largest[feature])})")


def outside_square_range(largest) -> np.ndarray:
    """Features (their largest |value| given) whose squares lose digits or overflow: not all zero
    and below :data:`MIN_MAGNITUDE`, or above :data:`MAX_MAGNITUDE` (boolean mask)."""
    largest = np.asarray(largest, dtype=np.float64)
    return ((largest > 0) & (largest < MIN_MAGNITUDE)) | (largest > MAX_MAGNITUDE)


def binary_exponents(largest) -> np.ndarray:
    """The power of two that brings each feature's largest |value| into [0.5, 1) (0 for a feature of
    zeros): multiplying by ``2^-e`` is exact (it changes only the exponent), so a statistic that does
    not depend on a feature's unit (an F value, a standardised score) computed on ``x 2^-e`` is the
    same number, down to the last bit, as on ``x`` wherever ``x``'s own squares neither underflow nor
    overflow, and is right where they do."""
    return np.frexp(np.asarray(largest, dtype=np.float64))[1].astype(np.int64)


def _raises(power: int) -> str:
    return "squares differences of values" if power == 2 else f"raises differences of values to the power {power}"


def _exponent_to_one(largest: float) -> int:
    """The power of ten that brings ``largest`` near 1 (``1e-170`` -> 170), at most 300 (a double's
    reach: a column of 1e-320 takes two steps)."""
    return min(int(round(-np.log10(largest))), 300) if largest > 0 else 0


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
