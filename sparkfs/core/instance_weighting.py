"""Margin-based instance weighting (Han & Yu, "A variance reduction framework for stable feature
selection", ICDM 2010, Section IV-B, Algorithm 1).

Pure NumPy/SciPy. Instances ``x_q`` with labels ``y_q``, n rows, D features.

1. **Margin vectors** (eq. 6): every instance is mapped to
   ``x'_q = sum_{misses r} |x_q - x_r| - sum_{hits r} |x_q - x_r|`` (per feature), where the misses
   are all rows of another class and the hits all other rows of the same class (m + h = n - 1).
2. **Outlying degree** (below eq. 7): ``dist(x'_q) = 1/(n - 1) sum_{r != q} ||x'_q - x'_r||_2``,
   the average Euclidean distance of a margin vector to all the others.
3. **Weights** (eq. 7): ``w(x_q) = n (1 / dist(x'_q)) / sum_r (1 / dist(x'_r))``.

Both sums over pairs are O(n^2 D) and are written as per-block terms that *add* over disjoint
blocks of rows (queries x rows), which is how the Spark layer distributes them:

* :func:`margin_vector_block_terms` -- the share of eq. (6) of one block of rows; the margin
  vectors are the sum of the blocks' shares, nothing left to finish. It is
  :func:`sparkfs.core.pairs.feature_kernel_sums` with the absolute-difference kernel and the class
  weight matrix :func:`margin_vector_group_weights` (+1 other class, -1 same class), so the engine's
  ``kernel_sums`` pass computes it as is (CSR rows are not densified).
* :func:`outlying_distance_block_terms` -- ``sum_r ||x'_q - x'_r||`` over one block of rows,
  finished on the driver by :func:`outlying_degrees` and :func:`instance_weights_from_outlying_degrees`.

:func:`margin_instance_weights` composes them in memory.

Choices and deviations from the paper (and why)
-----------------------------------------------
1. **Normalisation of eq. (7)**: the printed formula divides 1/dist(x') by the sum over the n
   instances, so the weights sum to 1. They are multiplied by n here: the weights then average 1
   and sum to n, as the unweighted training set's weights do, so a learner's regularisation
   constant (an SVM's C multiplies every sample weight) keeps its meaning. The ranking of
   instances and every ratio of weights are those of eq. (7).
2. **Degenerate outlying degrees**: dist(x'_q) = 0 means x'_q equals every other margin vector,
   so either all degrees are 0 (all margin vectors equal, e.g. all rows identical) or none is.
   All zero: every weight is 1 (no instance is more outlying than another; the limit of eq. (7)
   for equal degrees). A mix of zero and positive degrees cannot come from margin vectors and is
   refused, as are negative or non-finite degrees.
3. **The instance itself** contributes |x_q - x_q| = 0 to its own hit sum and ||x'_q - x'_q|| = 0
   to its own distance sum (both computed elementwise, so exactly 0): no exclusion by row id is
   needed, and a duplicate of x_q (another row) is a hit like any other, as in eq. (6).
4. **Several classes**: a miss is any row of another class (the paper has two classes). A class
   of a single row has no hits (h = 0); a single class overall has no misses and is refused by the
   in-memory driver (the margin is then meaningless).
5. **All neighbours, as the paper's eq. (6)**: the k-nearest-neighbour form (eq. 5 with more
   neighbours) is not implemented here; :func:`sparkfs.core.pairs.pair_sums` computes it from a
   neighbour table if it is ever wanted.

Complexity: margin vectors O(n^2 D) (O(n nnz) plus co-non-zeros for CSR rows), distances O(n^2 D);
memory: the (n, D) dense margin vectors, no n x n matrix (Algorithm 1 stores one).
"""

from __future__ import annotations

from typing import NamedTuple, Union

import numpy as np
import scipy.sparse as sp

from sparkfs.core.pairs import euclidean_distance_sums, feature_kernel_sums, one_hot

Matrix = Union[np.ndarray, sp.csr_matrix]

def margin_vector_group_weights(num_classes: int) -> np.ndarray:
    """Class weight matrix ``A`` of eq. (6): +1 between different classes (misses), -1 within a
    class (hits); ``A = 1 - 2 I`` of shape (num_classes, num_classes)."""
    if num_classes < 1:
        raise ValueError(f"num_classes must be at least 1. Got {num_classes!r} instead.")
    return 1.0 - 2.0 * np.eye(num_classes)


def _class_indices(query_labels, row_labels):
    """Indices into one shared list of classes (only equality of labels matters in eq. 6)."""
    query_labels, row_labels = np.asarray(query_labels), np.asarray(row_labels)
    classes = np.unique(np.concatenate([query_labels.ravel(), row_labels.ravel()]))
    return np.searchsorted(classes, query_labels), np.searchsorted(classes, row_labels), classes.size


def margin_vector_block_terms(query_matrix: Matrix, query_labels, row_matrix: Matrix, row_labels) -> np.ndarray:
    """Share of the margin vectors of eq. (6) contributed by one block of rows.

    ``terms[q, f] = sum_{r in block, y_r != y_q} |x_qf - x_rf| - sum_{r in block, y_r == y_q} |x_qf - x_rf|``.
    Summed over disjoint blocks covering all n rows, the terms are the margin vectors x'_q.

    Parameters
    ----------
    query_matrix : ndarray or CSR matrix of shape (m, D)
        The instances whose margin vectors are computed.
    query_labels : array-like of shape (m,)
    row_matrix : ndarray or CSR matrix of shape (b, D)
        The block of rows (CSR stays CSR).
    row_labels : array-like of shape (b,)

    Returns
    -------
    terms : ndarray of shape (m, D)

    Notes
    -----
    :func:`sparkfs.core.pairs.feature_kernel_sums` with ``kernel="abs"``, one-hot class
    memberships and ``A =`` :func:`margin_vector_group_weights`. A query that is also a row of the
    block adds ``-|x_q - x_q| = 0``, so no self-exclusion is needed. Cost O(m b D) for dense rows,
    O(nnz + co-non-zeros) for CSR rows.
    """
    num_queries = query_matrix.shape[0]
    if np.asarray(query_labels).shape != (num_queries,):
        raise ValueError(f"query_labels must have shape ({num_queries},); got {np.asarray(query_labels).shape}")
    if np.asarray(row_labels).shape != (row_matrix.shape[0],):
        raise ValueError(f"row_labels must have shape ({row_matrix.shape[0]},); got {np.asarray(row_labels).shape}")
    if query_matrix.shape[1] != row_matrix.shape[1]:
        raise ValueError(f"queries have {query_matrix.shape[1]} features and rows {row_matrix.shape[1]}")
    query_classes, row_classes, num_classes = _class_indices(query_labels, row_labels)
    if row_matrix.shape[0] == 0:
        return np.zeros(query_matrix.shape)
    # Ids are unused: exclude_self=False, the self term |x_q - x_q| is 0.
    return feature_kernel_sums(
        query_matrix, np.zeros(num_queries, dtype=np.int64), one_hot(query_classes, num_classes),
        row_matrix, np.zeros(row_matrix.shape[0], dtype=np.int64), one_hot(row_classes, num_classes),
        margin_vector_group_weights(num_classes), kernel="abs", exclude_self=False, per_query=True,
    )


def outlying_distance_block_terms(query_margins, row_margins) -> np.ndarray:
    """``sum_{r in block} ||x'_q - x'_r||_2`` for every query margin vector x'_q.

    Parameters
    ----------
    query_margins : array-like of shape (m, D)
    row_margins : array-like of shape (b, D)
        A block of margin vectors; summed over disjoint blocks covering all n instances, the
        terms are the numerators of the outlying degrees (:func:`outlying_degrees`).

    Returns
    -------
    distance_sums : ndarray of shape (m,)

    Notes
    -----
    Distances are computed elementwise (``scipy.spatial.distance.cdist``), not by the expansion
    ``|a|^2 + |b|^2 - 2 a.b``: a square root magnifies the expansion's rounding (about
    ``sqrt(eps) |a|`` for close vectors), and the distance of a vector to itself is exactly 0.
    Cost O(m b D), a (m, chunk) table at a time.
    """
    queries = np.atleast_2d(np.asarray(query_margins, dtype=float))
    rows = np.atleast_2d(np.asarray(row_margins, dtype=float))
    if queries.shape[1] != rows.shape[1]:
        raise ValueError(f"query margins have {queries.shape[1]} features and row margins {rows.shape[1]}")
    return euclidean_distance_sums(queries, rows)


def outlying_degrees(distance_sums, num_instances: int) -> np.ndarray:
    """Outlying degree ``dist(x'_q) = 1/(n - 1) sum_{r != q} ||x'_q - x'_r||`` (below eq. 7).

    Parameters
    ----------
    distance_sums : array-like of shape (m,)
        Totals of :func:`outlying_distance_block_terms` over all n instances.
    num_instances : int
        n, the number of instances of the training set (at least 2).
    """
    if isinstance(num_instances, bool) or not isinstance(num_instances, (int, np.integer)) or num_instances < 2:
        raise ValueError(f"The 'num_instances' parameter of outlying_degrees must be an int in the range [2, inf). "
                         f"Got {num_instances!r} instead.")
    return np.asarray(distance_sums, dtype=float) / (num_instances - 1)


def instance_weights_from_outlying_degrees(outlying_degree) -> np.ndarray:
    """Instance weights of eq. (7), scaled to sum to n: ``w_q = n (1/d_q) / sum_r (1/d_r)``.

    Parameters
    ----------
    outlying_degree : array-like of shape (n,)
        :func:`outlying_degrees` of all n instances of the training set.

    Returns
    -------
    weights : ndarray of shape (n,), positive, summing to n.

    Notes
    -----
    All degrees 0 (all margin vectors equal): every weight is 1. Degrees that mix 0 and positive
    values, negative or non-finite degrees raise ValueError (see the module notes).
    """
    degree = np.asarray(outlying_degree, dtype=float)
    if degree.ndim != 1 or degree.size == 0:
        raise ValueError(f"outlying_degree must be a non-empty 1-d array; got shape {degree.shape}")
    if not np.all(np.isfinite(degree)) or np.any(degree < 0):
        raise ValueError("outlying degrees must be finite and non-negative")
    zero = degree == 0
    if np.all(zero):
        return np.ones(degree.size)
    if np.any(zero):
        raise ValueError(f"{int(zero.sum())} of {degree.size} outlying degrees are 0 and the others positive: "
                         "margin vectors cannot give that (a degree of 0 means all margin vectors are equal)")
    # Divide by the smallest degree first: the ratios lie in (0, 1] and cannot overflow.
    inverse = degree.min() / degree
    return degree.size * inverse / inverse.sum()


class InstanceWeights(NamedTuple):
    """Result of :func:`margin_instance_weights`."""

    weights: np.ndarray            # (n,) eq. (7), summing to n
    outlying_degree: np.ndarray    # (n,) average distance to the other margin vectors
    margin_vectors: np.ndarray     # (n, D) eq. (6)


def margin_instance_weights(X: Matrix, y, *, block_size: int = 256) -> InstanceWeights:
    """Algorithm 1 of Han & Yu (2010) on in-memory data: margin vectors, outlying degrees, weights.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n, D)
        Dense or CSR rows (CSR is not densified for eq. 6; the margin vectors are dense).
    y : array-like of shape (n,)
        Class labels, at least two classes.
    block_size : int
        Rows per block: every instance is a query against one block of rows at a time, the block
        terms are added (the Spark layer adds its partitions' terms the same way).

    Returns
    -------
    InstanceWeights
        ``weights`` (eq. 7, summing to n), ``outlying_degree``, ``margin_vectors`` (eq. 6).
    """
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"The 'block_size' parameter of margin_instance_weights must be an int in the range "
                         f"[1, inf). Got {block_size!r} instead.")
    matrix = sp.csr_matrix(X, dtype=float) if sp.issparse(X) else np.asarray(X, dtype=float)
    labels = np.asarray(y)
    if matrix.ndim != 2 or labels.shape != (matrix.shape[0],):
        raise ValueError(f"margin_instance_weights needs X of shape (n, D) and y of shape (n,); "
                         f"got {matrix.shape} and {labels.shape}")
    values = matrix.data if sp.issparse(matrix) else matrix
    if not np.all(np.isfinite(values)):
        raise ValueError("margin_instance_weights: X contains NaN or infinite values")
    if np.unique(labels).size < 2:
        raise ValueError("margin_instance_weights needs rows of at least two classes (eq. 6 has no misses)")
    num_instances = matrix.shape[0]
    margins = np.zeros(matrix.shape)
    for start in range(0, num_instances, block_size):
        block = slice(start, start + block_size)
        margins += margin_vector_block_terms(matrix, labels, matrix[block], labels[block])
    distance_sums = np.zeros(num_instances)
    for start in range(0, num_instances, block_size):
        distance_sums += outlying_distance_block_terms(margins, margins[start:start + block_size])
    degree = outlying_degrees(distance_sums, num_instances)
    return InstanceWeights(instance_weights_from_outlying_degrees(degree), degree, margins)
