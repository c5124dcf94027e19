"""In-memory rows in the units of the Spark layer's scaled view (``spark/row_sets.PassUnits``).

The Spark layer keeps this step beside its passes (``scale_columns``, ``unit_length_rows``); the
front needs the same operations, in the same order, so that distances tie where the Spark search's
tie (neighbour ties are broken by row id, and a last-bit difference would break them otherwise).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def rows_in_units(X, scale: np.ndarray, unit_rows: bool):
    """``X`` with every feature divided by ``scale`` (as a product with its inverse; all ones:
    unchanged) and, with ``unit_rows``, every row then divided by its Euclidean norm (a row of zeros
    stays zeros): the units of the Spark layer's scaled view (``PassUnits``). CSR stays CSR."""
    if not np.all(scale == 1.0):
        inverse = 1.0 / scale
        if sp.issparse(X):
            X = sp.csr_matrix(X, copy=True)
            X.data *= inverse[X.indices]
        else:
            X = X * inverse
    if not unit_rows:
        return X
    if sp.issparse(X):
        X = sp.csr_matrix(X, copy=True)
        lengths = np.diff(X.indptr)
        # the Spark layer's order of the sums of squares (reduceat per row): ties of equal distances then
        # break alike (on term data many rows share no term with a query, all at distance 2)
        squares = np.append(X.data * X.data, 0.0)  # a last empty row starts at nnz: one slot more
        norms = np.where(lengths > 0, np.sqrt(np.add.reduceat(squares, X.indptr[:-1])), 0.0)  # empty rows: 0
        X.data /= np.repeat(np.where(norms > 0, norms, 1.0), lengths)
        return X
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    return X / np.where(norms > 0, norms, 1.0)[:, None]
