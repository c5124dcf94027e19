"""In-memory rows in the units of the Spark layer's scaled view (``spark/row_sets.PassUnits``).

Both layers call the same core functions in the same order (:func:`sparkfs.core.scaling.scale_columns`,
then :func:`sparkfs.core.scaling.unit_length_rows`), so that distances tie where the Spark search's
tie (neighbour ties are broken by row id, and a last-bit difference would break them otherwise).
"""

from __future__ import annotations

import numpy as np

from sparkfs.core.scaling import scale_columns, unit_length_rows


def rows_in_units(X, scale: np.ndarray, unit_rows: bool):
    """``X`` with every feature divided by ``scale`` (as a product with its inverse; all ones:
    unchanged) and, with ``unit_rows``, every row then divided by its Euclidean norm (a row of zeros
    stays zeros). CSR stays CSR."""
    X = scale_columns(X, None if np.all(scale == 1.0) else 1.0 / scale)
    return unit_length_rows(X) if unit_rows else X
