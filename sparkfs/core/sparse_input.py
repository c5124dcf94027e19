"""The test for SciPy sparse input, typed so that a type checker narrows on it.

SciPy ships no type information, so ``scipy.sparse.issparse`` narrows nothing: after it, a
``Union[np.ndarray, sp.csr_matrix]`` is still the union, and a method only sparse matrices have
(``toarray``, ``multiply``) reads as a mistake on the ndarray side. :func:`is_sparse` is the same
test, declared a type guard.
"""
from __future__ import annotations

from typing import TypeGuard

import scipy.sparse as sp


def is_sparse(matrix: object) -> TypeGuard[sp.spmatrix]:
    """``scipy.sparse.issparse(matrix)``: True for any SciPy sparse matrix or array."""
    return sp.issparse(matrix)
