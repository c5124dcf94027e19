"""Margin-based feature weighting by gradient steps: Lmba (Li & Lu, 2009) and Simba (2004).

Pure NumPy/SciPy. Instances ``x_i`` (the m "picked" instances of a step), D features, weights
``w`` (D,), ``||z||_w^2 = sum_f w_f^2 z_f^2``.

Lmba (Li & Lu, "Feature selection based on loss-margin of nearest neighbor classification",
Pattern Recognition 42, 2009) descends, one instance at a time (Section 3 steps 1-4), the loss of
eq. (3) ``sum_j t_ij ||x_i - x_j||_w^2 + c sum_{j,p} t_ij (1 - b_ip) h_jp``, with the hinge
``h_jp = [theta_i + ||x_i - x_j||_w^2 - ||x_i - x_p||_w^2]_+``, theta_i of eq. (2), T and B of
Definitions 1 and 3. A step is :func:`lmba_block_terms` (one pass over a block of rows; outputs
add over disjoint blocks, which is how the Spark layer distributes it), :func:`lmba_gradient`
(eqs. 16-17) and :func:`lmba_step` (step 3(d)); :func:`lmba_loop` composes them into the loop
every driver runs (:func:`lmba_in_memory` on dense data in memory). Simba
(Gilad-Bachrach, Navot & Tishby, ICML 2004), the paper's baseline, is in
:mod:`sparkfs.core.simba` and shares this module's instance order and input checks.

Choices and deviations from the paper (and why)
-----------------------------------------------
1. **Targets and theta_i are computed once, in the original (unweighted) Euclidean metric**
   (Step 2 builds T before the loop). nearhit = nearest same-class row other than i (the first
   target), nearmiss = nearest row of another class; ties go to the smaller row index.
2. **The hinge is tested in the weighted metric**, as ``(theta_i + ||x_i - x_j||_w^2) -
   ||x_i - x_p||_w^2 > 0`` in that order: eq. (17) prints the test with unweighted norms, but
   the derivative of eq. (3) needs the weighted ones.
3. **The derivative of [z]_+ at z = 0 is taken as 0** (eq. 17's "otherwise" would count z = 0).
   It matters: at w = 1 the (nearhit, nearmiss) pair of an instance whose nearmiss is farther
   than its nearhit lies exactly on the hinge (eq. 2), so floating-point rounding decides
   whether it counts. The hinges are screened with matrix products and every one near its kink
   is decided again from distances computed elementwise on its two rows
   (:func:`lmba_block_terms`), so the decision does not depend on how rows are blocked. The
   in-memory driver and the Spark layer share these functions.
4. **Mini-batches** generalise Step 3: a step (one Spark job) picks m instances
   (:func:`instance_order`). Rule "replay" (default): one pass finds each instance's active
   hinge pairs at the batch's first w, then the m single-instance steps are taken one after
   another with the current w (:func:`lmba_replay`); only the active sets lag. Rule "sum": the m
   eq. (16) gradients are summed at the same w for one normalised step. m = 1 is the paper for
   both. Why replay: ``docs/lmba_batch_rule.md`` (summed steps travel a much shorter, differently
   weighted path and move the ranking; replay keeps it at small batches). CSR rows keep the
   per-instance terms CSR, and each step then costs its support, not D (:mod:`sparkfs.core.lmba_steps`).
5. **Step sizes**: ``"constant"`` (beta_t = step_size, what the paper ran) or ``"decay"``
   (beta_t = step_size / sqrt(t + 1), t 0-based; the paper only says "a decay factor").
6. **Projection**: the update is printed without one although w_f is said to lie in [0, 1];
   ``"none"`` follows the print, ``"clip"`` clips to [0, 1] after each step. A weight clipped to
   0 stays 0 (eq. 16 carries the factor w_f); with beta = 1 all weights can end at 0.
7. **Ranking weights** are ``|w| / max|w|``: the loss sees w only through w^2, so the sign of a
   weight carries no meaning (the unprojected update can push a weight below 0).
8. A zero gradient leaves w unchanged (step 3(d)'s normalisation is undefined). ``c >= 0`` is
   accepted (the paper asks c > 0; c = 0 switches the hinge off).

Complexity: :func:`lmba_block_terms` costs O(m n D) multiply-adds in two matrix products
(O(m nnz) for CSR rows) and O(m k n) hinge comparisons for a block of n rows; a step over all N
rows is O(m N (D + k)), the paper's I = N single-instance steps O(N^2 (D + k)) (Section 3.1
states O(N^2 n)).
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Tuple, Union, cast

import numpy as np
import scipy.sparse as sp

# Step 3(d) and the replay rule have their own module; re-exported as the loop's schedule is.
from sparkfs.core.lmba_steps import lmba_replay, lmba_step

# The loop's schedule lived here first; it is re-exported (``mw.instance_order`` and the like).
from sparkfs.core.margin_loops import (  # noqa: F401
    LoopResult,
    batch_step_sizes,
    instance_order,
    margin_loop,
    number_of_steps,
    step_sizes,
)
from sparkfs.core.margin_runs import IterateAverage, MarginRun
from sparkfs.core.options import PROJECTIONS, check_choice, check_int, check_positive
from sparkfs.core.sparse_input import (
    canonical_csr,
    dense_row_sums,
    is_sparse,
    narrow_columns,
    weighted_squared_distances,
    widen_columns,
)

Matrix = Union[np.ndarray, sp.csr_matrix]

# Largest temporary (elements) of a chunk: (instances, targets, rows) hinge values, or (pairs,
# features) for the dense rows of the exact recheck and of weighted_squared_norms.
ELEMENT_BUDGET = 2_000_000


def lmba_theta(hit_squared_distance, miss_squared_distance) -> np.ndarray:
    """Margin of eq. (2): ``theta_i = | ||x_i - nearmiss(x_i)||^2 - ||x_i - nearhit(x_i)||^2 |``.

    Parameters
    ----------
    hit_squared_distance, miss_squared_distance : array-like of shape (m,)
        Squared Euclidean distances (original metric) to the nearhit and to the nearmiss.

    Returns
    -------
    theta : ndarray of shape (m,)
    """
    return np.abs(np.asarray(miss_squared_distance, dtype=float) - np.asarray(hit_squared_distance, dtype=float))


def _target_mask(target_mask, shape) -> np.ndarray:
    if target_mask is None:
        return np.ones(shape, dtype=bool)
    mask = np.asarray(target_mask, dtype=bool)
    if mask.shape != shape:
        raise ValueError(f"target_mask has shape {mask.shape}; expected {shape}")
    return mask


def weighted_squared_norms(matrix: Matrix, w=None) -> np.ndarray:
    """``sum_f w_f^2 m_rf^2`` for every row r of a dense or CSR matrix (w = 1 when None).

    Every row is computed as on its dense form, ``np.sum(row ** 2 * w ** 2)`` (pairwise summation
    over the features): dense rows a chunk at a time, CSR rows from their non-zeros
    (:func:`sparkfs.core.sparse_input.dense_row_sum`, the same bits at the cost of the non-zeros,
    not of D). It is the arithmetic of the exact recheck of :func:`lmba_block_terms`, so a distance
    computed here and one computed there from the same two rows are equal to the last bit (the
    kink of the hinge depends on it), dense or CSR.
    """
    num_rows, num_features = matrix.shape
    if is_sparse(matrix):
        rows = canonical_csr(matrix)
        squares = sp.csr_matrix(rows.multiply(rows))                                # canonical too
        if w is not None:
            squares.data = squares.data * np.asarray(w, dtype=float)[squares.indices] ** 2
        return dense_row_sums(squares)
    weight_squares = np.ones(num_features) if w is None else np.asarray(w, dtype=float) ** 2
    norms = np.empty(num_rows)
    chunk = max(1, ELEMENT_BUDGET // max(1, num_features))
    for start in range(0, num_rows, chunk):
        rows = np.asarray(matrix[start:start + chunk], dtype=float)
        norms[start:start + chunk] = np.sum(rows ** 2 * weight_squares, axis=-1)
    return norms


def lmba_target_differences(instance_matrix: Matrix, target_rows: Matrix, target_index) -> Matrix:
    """Rows ``x_i - x_j`` for the k target neighbours j of each instance (Definition 3).

    Parameters
    ----------
    instance_matrix : ndarray or CSR matrix of shape (m, D)
    target_rows : ndarray or CSR matrix of shape (r, D)
        The vectors of the target neighbours.
    target_index : array-like of int, shape (m, k)
        Row of ``target_rows`` of the j-th target of instance i; -1 marks an absent target.

    Returns
    -------
    differences : ndarray or CSR matrix (CSR when either input is) of shape (m * k, D)
        Row ``i * k + j`` is ``x_i - target_j(x_i)``, a zero row for an absent target.
    """
    index = np.asarray(target_index, dtype=np.int64)
    present = (index >= 0).ravel()
    repeated = np.repeat(np.arange(index.shape[0]), index.shape[1])
    if sp.issparse(instance_matrix) or sp.issparse(target_rows):
        instances, targets = canonical_csr(instance_matrix), canonical_csr(target_rows)
        differences = canonical_csr(instances[repeated] - targets[np.where(present, index.ravel(), 0)])
        differences.data[np.repeat(~present, np.diff(differences.indptr))] = 0.0   # absent targets: zero rows
        differences.eliminate_zeros()
        return differences
    instances, targets = np.asarray(instance_matrix, dtype=float), np.asarray(target_rows, dtype=float)
    differences = instances[repeated] - targets[np.where(present, index.ravel(), 0)]
    differences[~present] = 0.0
    return differences


def lmba_thresholds(theta, target_differences: Matrix, w) -> np.ndarray:
    """``theta_i + ||x_i - x_j||_w^2`` per instance i and target j, shape (m, k).

    A row x_p of another class is active for (i, j) when it is nearer to x_i than this threshold
    (the hinge of eq. 3 is positive). ``target_differences`` comes from
    :func:`lmba_target_differences`.
    """
    theta = np.asarray(theta, dtype=float)
    return theta[:, None] + weighted_squared_norms(target_differences, w).reshape(theta.shape[0], -1)


def _exact_squared_distances(instances: Matrix, rows: Matrix, pairs_i, pairs_p, weights) -> np.ndarray:
    """``np.sum((x_i - x_p) ** 2 * w^2)`` as on dense rows, per (i, p) pair (see weighted_squared_norms)."""
    if is_sparse(instances) and is_sparse(rows):
        return weighted_squared_distances(canonical_csr(instances), canonical_csr(rows), pairs_i, pairs_p, weights)
    weight_squares = weights ** 2
    distances = np.empty(pairs_i.size)
    chunk = max(1, ELEMENT_BUDGET // max(1, weight_squares.size))
    for start in range(0, pairs_i.size, chunk):
        left, right = instances[pairs_i[start:start + chunk]], rows[pairs_p[start:start + chunk]]
        left = left.toarray() if sp.issparse(left) else left
        right = right.toarray() if sp.issparse(right) else right
        distances[start:start + chunk] = np.sum((left - right) ** 2 * weight_squares, axis=-1)
    return distances


def _squares(matrix: Matrix) -> Matrix:
    return matrix.multiply(matrix).tocsr() if is_sparse(matrix) else matrix ** 2


class _ShiftedInstances(NamedTuple):
    """The instances of :func:`lmba_block_terms` as its matrix products use them (CSR: on the
    columns in use, :func:`sparkfs.core.sparse_input.narrow_columns`) and as given (the recheck's)."""

    dense: bool                  # neither the instances nor the rows are CSR
    shift: Optional[np.ndarray]  # the instances' mean (dense; None for CSR)
    shifted: Matrix              # u_i = x_i - shift (CSR: x_i)
    norms: np.ndarray            # ||u_i||_w^2, (m,)
    weighted: Matrix             # u_i * w^2
    squares: Matrix              # u_i^2
    weight_squares: np.ndarray   # w^2 on the products' columns
    given: Matrix                # x_i as given, for the exact recheck
    given_weights: np.ndarray    # w on every feature, for the exact recheck


def _shifted_instances(instances: Matrix, product_instances: Matrix, rows: Matrix, weights,
                       columns: Optional[np.ndarray]) -> _ShiftedInstances:
    """``product_instances``: the instances on ``columns`` (None: as given; w^2 then made on every feature)."""
    dense = not (sp.issparse(instances) or sp.issparse(rows))
    num_instances, num_features = instances.shape
    shift = (instances.mean(axis=0) if num_instances else np.zeros(num_features)) if dense else None
    shifted = instances - shift if dense else sp.csr_matrix(product_instances)
    product_squares = weights ** 2 if columns is None else weights[columns] ** 2
    norms = np.asarray(_squares(shifted) @ product_squares).ravel()
    weighted = shifted * product_squares if dense else sp.csr_matrix(shifted, copy=True)
    if not dense:  # u_if w_f^2 on the non-zeros only (a diagonal matrix of the columns would cost O(columns))
        weighted.data = weighted.data * product_squares[weighted.indices]
    return _ShiftedInstances(dense, shift, shifted, norms, weighted, _squares(shifted), product_squares, instances,
                             weights)


def _active_hinges(shifted: _ShiftedInstances, original: Matrix, block: Matrix, thresholds, eligible) -> np.ndarray:
    """(m, k, c) bool: the hinges ``thresholds[i, j] - ||x_i - x_p||_w^2 > 0`` of the ``eligible``
    (i, j, p) against a chunk of rows (``original``, shifted as ``block``), from one GEMM; those
    near the kink are decided again elementwise (the Notes of :func:`lmba_block_terms`)."""
    instances, weights = shifted.given, shifted.given_weights
    tolerance = 8.0 * (instances.shape[1] + 4) * np.finfo(float).eps
    row_norms = np.asarray(_squares(block) @ shifted.weight_squares).ravel()
    cross = block @ shifted.weighted.T                                                  # (c, m)
    cross = cross.toarray() if is_sparse(cross) else cross
    distances = shifted.norms[:, None] + row_norms[None, :] - 2.0 * cross.T             # (m, c)
    margin = thresholds[:, :, None] - distances[:, None, :]
    band = tolerance * (np.abs(thresholds)[:, :, None] + (shifted.norms[:, None] + row_norms[None, :])[:, None, :])
    active = eligible & (margin > band)
    near_i, near_j, near_p = np.nonzero(eligible & (np.abs(margin) <= band))
    if near_i.size:
        num_rows = block.shape[0]
        pairs, inverse = np.unique(near_i * num_rows + near_p, return_inverse=True)
        exact = _exact_squared_distances(instances, original, pairs // num_rows, pairs % num_rows, weights)
        active[near_i, near_j, near_p] = thresholds[near_i, near_j] - exact[inverse.ravel()] > 0
    return active


def _impostor_terms(shifted: _ShiftedInstances, block: Matrix, per_pair: np.ndarray, per_instance: bool) -> Matrix:
    """A chunk's share of the impostor sums S_f of :func:`lmba_block_terms` (per instance: (m, D),
    CSR unless instances and rows are both dense) from N_ip, the active targets of every (instance,
    row) pair."""
    dense = shifted.dense
    # not dense: shifted.shifted and shifted.squares are CSR (see _shifted_instances)
    sparse_shifted, sparse_squares = cast(sp.csr_matrix, shifted.shifted), cast(sp.csr_matrix, shifted.squares)
    per_pair_matrix = per_pair if dense else sp.csr_matrix(per_pair)
    pulled = per_pair_matrix @ block                                                    # (N X_P), (m, D)
    if per_instance and dense:  # S_if = N_i. u_if^2 - 2 u_if (N U_P)_if + (N U_P^2)_if
        return shifted.squares * per_pair.sum(axis=1)[:, None] - 2.0 * (shifted.shifted * pulled) \
            + per_pair_matrix @ _squares(block)
    if per_instance:  # the same on CSR: row i is 0 outside x_i's non-zeros and those of its active rows
        own = sparse_squares.multiply(per_pair.sum(axis=1)[:, None])
        return sp.csr_matrix(own - 2.0 * sparse_shifted.multiply(pulled) + per_pair_matrix @ _squares(block))
    cross_term = (shifted.shifted * pulled).sum(axis=0) if dense else \
        np.asarray(sparse_shifted.multiply(pulled).sum(axis=0))
    return (np.asarray(per_pair.sum(axis=1) @ shifted.squares).ravel()
            - 2.0 * np.asarray(cross_term).ravel()
            + np.asarray(per_pair.sum(axis=0) @ _squares(block)).ravel())


def lmba_block_terms(instance_matrix: Matrix, instance_labels, thresholds, row_matrix: Matrix, row_labels, w, *,
                     target_mask=None, per_instance: bool = False) -> Tuple[Matrix, np.ndarray]:
    """Hinge terms of eqs. (3), (17) contributed by one block of rows x_p.

    For instance i, present target j and row p with ``row_labels[p] != instance_labels[i]``
    (the factor ``1 - b_ip``), the pair is active when ``thresholds[i, j] - ||x_i - x_p||_w^2 > 0``
    (the hinge of eq. 3 is positive; the derivative of [z]_+ at z = 0 is taken as 0).

    Parameters
    ----------
    instance_matrix : ndarray or CSR matrix of shape (m, D)
    instance_labels : array-like of shape (m,)
    thresholds : array-like of shape (m, k)
        ``theta_i + ||x_i - x_j||_w^2``, see :func:`lmba_thresholds`.
    row_matrix, row_labels : ndarray or CSR matrix of shape (n, D), array-like of shape (n,)
        The block of rows x_p (CSR stays CSR).
    w : array-like of shape (D,)
    target_mask : array-like of bool, shape (m, k), optional
        False marks an absent target slot, which is ignored. Default: all present.
    per_instance : bool
        Return the impostor sums of each instance (m, D) instead of their total (the "replay"
        batch rule needs them).

    Returns
    -------
    impostor_sums : ndarray of shape (D,), or (m, D) with ``per_instance`` (a CSR matrix for CSR
        instances: row i is 0 outside x_i's non-zeros and those of the rows active for it)
        ``sum_{i,p} (number of active j for (i, p)) * (x_if - x_pf)^2`` (without the sum over i).
    active_counts : ndarray of int64, shape (m, k)
        Number of rows p active for (i, j).

    Notes
    -----
    Matrix products do the work: ``||x_i - x_p||_w^2 = ||x_i||_w^2 + ||x_p||_w^2 - 2 <x_i, x_p>_w``
    (one GEMM per chunk of rows; dense data are first shifted by the instances' mean, which
    leaves differences unchanged and keeps the expansion well conditioned), and with N_ip the
    number of active targets of (i, p), ``S_f = sum_i N_i. x_if^2 - 2 sum_i x_if (N X_P)_if +
    sum_p N_.p x_pf^2``. Cost per block: O(m n D) multiply-adds in two GEMMs (O(m nnz) for CSR
    rows, nothing of length D but w^2 made) plus O(m k n) comparisons.

    The kink: a GEMM distance may differ from the elementwise one by rounding, and which side of
    0 a hinge lands on must not depend on how rows are grouped into blocks. Every (i, j, p) whose
    GEMM value z lies within ``8 (D + 4) eps (|threshold| + ||x_i||_w^2 + ||x_p||_w^2)`` of 0 (a
    bound on the rounding of the expansion) is decided again from the distance computed
    elementwise on the two rows alone (:func:`weighted_squared_norms`' arithmetic). So the result
    is that of the elementwise definition, whatever the blocking; the sums S_f agree with it to
    rounding.
    """
    instances = instance_matrix if sp.issparse(instance_matrix) else np.asarray(instance_matrix, dtype=float)
    labels, row_labels = np.asarray(instance_labels), np.asarray(row_labels)
    thresholds = np.asarray(thresholds, dtype=float)
    weights = np.asarray(w, dtype=float)
    rows_all = row_matrix if sp.issparse(row_matrix) else np.asarray(row_matrix, dtype=float)
    num_instances, num_features = instances.shape
    if thresholds.ndim != 2 or thresholds.shape[0] != num_instances:
        raise ValueError(f"thresholds has shape {thresholds.shape}; expected ({num_instances}, k)")
    if rows_all.shape != (row_labels.shape[0], num_features):
        raise ValueError(f"row_matrix has shape {rows_all.shape}; expected ({row_labels.shape[0]}, {num_features})")
    mask = _target_mask(target_mask, thresholds.shape)
    columns, product_instances, product_rows = None, instances, rows_all
    if is_sparse(instances) and is_sparse(rows_all):  # the products on the ids in use, not all D
        columns, (product_instances, product_rows) = narrow_columns(instances, rows_all)
    shifted = _shifted_instances(instances, product_instances, rows_all, weights, columns)
    impostor_sums: Optional[Matrix] = None  # summed over the chunks (None: no active pair yet)
    active_counts = np.zeros(thresholds.shape, dtype=np.int64)
    # A row sharing the label of every instance can never be an impostor: skip it.
    distinct = np.unique(labels)
    candidates = np.flatnonzero(row_labels != distinct[0]) if distinct.size == 1 else np.arange(row_labels.shape[0])
    eligible_targets = mask[:, :, None]
    chunk = max(1, ELEMENT_BUDGET // max(1, thresholds.size))
    for start in range(0, candidates.size, chunk):
        positions = candidates[start:start + chunk]
        original = rows_all[positions]
        block = original - shifted.shift if shifted.dense else sp.csr_matrix(product_rows[positions])
        impostor = labels[:, None] != row_labels[positions][None, :]                    # (m, c)
        eligible = eligible_targets & impostor[:, None, :]                              # (m, k, c)
        active = _active_hinges(shifted, original, block, thresholds, eligible)
        active_counts += active.sum(axis=2)
        per_pair = active.sum(axis=1).astype(float)                                     # N_ip, (m, c)
        if per_pair.any():
            terms = _impostor_terms(shifted, block, per_pair, per_instance)
            impostor_sums = terms if impostor_sums is None else impostor_sums + terms
    shape = (num_instances, num_features) if per_instance else (num_features,)
    return _summed_impostor_terms(impostor_sums, shape, per_instance and is_sparse(instances), columns), active_counts


def _summed_impostor_terms(impostor_sums: Optional[Matrix], shape, sparse: bool, columns) -> Matrix:
    """The impostor sums of :func:`lmba_block_terms` as returned: on every feature (``columns``:
    the ids they were computed on, None for all), CSR when ``sparse``, else dense; 0 when no pair
    was active."""
    if impostor_sums is None:
        return sp.csr_matrix(shape) if sparse else np.zeros(shape)
    if columns is None and not sparse:
        return impostor_sums.toarray() if is_sparse(impostor_sums) else np.asarray(impostor_sums)
    if columns is None:
        return sp.csr_matrix(impostor_sums)
    if len(shape) == 2:  # per instance, computed on CSR rows
        return widen_columns(impostor_sums, columns, shape[1])
    totals = np.zeros(shape)
    totals[columns] = np.asarray(impostor_sums).ravel()
    return totals


def lmba_gradient(w, target_differences: Matrix, active_counts, impostor_sums, c, target_mask=None) -> np.ndarray:
    """Gradient of the loss of m instances, eqs. (16)-(17).

    ``grad_f = 2 w_f [ sum_{i,j} (1 + c A_ij) (x_if - x_jf)^2 - c S_f ]`` with A = active_counts
    and S = impostor_sums from :func:`lmba_block_terms` summed over all blocks.

    Parameters
    ----------
    w : array-like of shape (D,)
    target_differences : ndarray or CSR matrix of shape (m * k, D)
        Rows ``x_i - x_j`` (:func:`lmba_target_differences`).
    active_counts, impostor_sums : array-likes of shapes (m, k) and (D,)
    c : float
        The scaling factor of eq. (3).
    target_mask : array-like of bool, shape (m, k), optional
        Absent target slots (False) contribute nothing.

    Returns
    -------
    gradient : ndarray of shape (D,)

    Notes
    -----
    Derivation: the first term of eq. (16) is ``2 w_f sum_j t_ij (x_if - x_jf)^2``. The second is
    c times the sum over active (j, p) of eq. (17)'s ``g(w_f) = 2 w_f ((x_if - x_jf)^2 -
    (x_if - x_pf)^2)``; a target j appears in A_ij active pairs and a row p in as many pairs as
    it has active targets, so the sum is ``2 w_f [sum_j A_ij (x_if - x_jf)^2 - sum_p N_ip
    (x_if - x_pf)^2]``, the last sum being S_f. Summing over the m instances gives the formula.
    """
    target_term = np.asarray(lmba_target_terms(target_differences, active_counts, c, target_mask).sum(axis=0)).ravel()
    return 2.0 * np.asarray(w, dtype=float) * (target_term - c * np.asarray(impostor_sums, dtype=float))


def lmba_target_terms(target_differences: Matrix, active_counts, c, target_mask=None) -> Matrix:
    """``sum_j (1 + c A_ij) (x_if - x_jf)^2`` per instance i, shape (m, D): the target part of
    eq. (16) divided by 2 w_f (absent targets count 0). CSR for CSR differences (row i is 0
    outside the non-zeros of x_i and its targets), else dense."""
    counts = np.asarray(active_counts, dtype=float)
    num_instances, k = counts.shape
    mask = _target_mask(target_mask, counts.shape)
    coefficients = np.where(mask, 1.0 + c * counts, 0.0).ravel()                 # (m k,)
    rows = np.repeat(np.arange(num_instances), k)
    gather = sp.csr_matrix((coefficients, (rows, np.arange(num_instances * k))),
                           shape=(num_instances, num_instances * k))
    if not is_sparse(target_differences):
        return np.asarray(gather @ _squares(target_differences)).reshape(num_instances, -1)
    columns, (differences,) = narrow_columns(target_differences)  # the product on the ids in use, not all D
    return widen_columns(gather @ _squares(differences), columns, target_differences.shape[1])


def lmba_ranking_weights(w) -> np.ndarray:
    """Step 4's feature weights, ``|w| / max|w|`` in [0, 1].

    The loss of eq. (3) depends on w only through w_f^2 (``||z||_w``), so the sign of a weight
    carries no meaning; the magnitude is what ranks. An all-zero w gives zeros.
    """
    magnitude = np.abs(np.asarray(w, dtype=float))
    top = magnitude.max(initial=0.0)
    return magnitude / top if top > 0 else np.zeros_like(magnitude)


def lmba_batch_update(w, batch_rule, target_differences, active_counts, impostor_sums, c, beta, projection,
                      target_mask=None, average: Optional[IterateAverage] = None) -> np.ndarray:
    """w after one batch: :func:`lmba_replay` (impostor sums per instance, betas per instance) or
    one :func:`lmba_step` along :func:`lmba_gradient` (summed impostor sums, one beta). ``average``
    (optional) is fed every iterate."""
    if batch_rule == "replay":
        terms = lmba_target_terms(target_differences, active_counts, c, target_mask)
        return lmba_replay(w, terms, impostor_sums, c, beta, projection, average)
    gradient = lmba_gradient(w, target_differences, active_counts, impostor_sums, c, target_mask=target_mask)
    w = lmba_step(w, gradient, beta, projection)
    if average is not None:
        average.add(w)
    return w


#: The part of an Lmba step that sees every row: :func:`lmba_block_terms` summed over all the
#: rows, called as ``block_terms(instance_matrix, instance_labels, thresholds, w, *, target_mask,
#: per_instance)`` -> (impostor_sums, active_counts).
BlockTerms = Callable[..., Tuple[np.ndarray, np.ndarray]]


def block_terms_over(row_matrix: Matrix, row_labels) -> BlockTerms:
    """The ``block_terms`` of :func:`lmba_loop` over rows in memory: one :func:`lmba_block_terms`
    call with every row in one block."""
    def block_terms(instance_matrix, instance_labels, thresholds, w, *, target_mask, per_instance):
        return lmba_block_terms(instance_matrix, instance_labels, thresholds, row_matrix, row_labels, w,
                                target_mask=target_mask, per_instance=per_instance)
    return block_terms


def lmba_loop(instances: Matrix, labels, neighbours: Matrix, target_index, theta, *, run: MarginRun, seed, c,
              projection, block_terms: BlockTerms, pickable=None,
              after_step: Optional[Callable[[], None]] = None) -> LoopResult:
    """Lmba's steps 1 and 3 (Section 3.1) in mini-batches (notes 4-6), the one loop of the in-memory
    driver, the pool, the scikit-learn front and the Spark layer
    (:func:`sparkfs.core.margin_loops.margin_loop`).

    Per step, for the picked instances x_i: the differences ``x_i - x_j`` to their targets
    (Definition 3), the thresholds ``theta_i + ||x_i - x_j||_w^2`` of eq. (3)'s hinge, the hinge
    terms over every row (``block_terms``, eqs. 3 and 17), then :func:`lmba_batch_update` (eqs.
    16-17, step 3(d)).

    Parameters
    ----------
    instances, labels : the pool's instances (m, D), dense or CSR in the rows' units, and labels (m,).
    neighbours : ndarray or CSR matrix (r, D): the rows ``target_index`` points into.
    target_index : int (m, k): row of ``neighbours`` of each instance's j-th target (step 2, original
        metric); -1 marks an absent target (a class of fewer than k + 1 rows).
    theta : (m,), eq. (2) (:func:`lmba_theta`).
    run, seed, c, projection : the loop's settings, the order's seed, eq. (3)'s c, :func:`lmba_step`'s.
    block_terms : :data:`BlockTerms`: :func:`block_terms_over` rows in memory, a pass in the Spark layer.
    pickable : int array, optional: the positions of ``instances`` that may be picked (default: all).
    after_step : callable, optional: called after every step.

    Returns
    -------
    LoopResult: the ranked w (the last w, or the mean of the iterates) and the number of steps.
    """
    labels, theta = np.asarray(labels), np.asarray(theta, dtype=float)
    target_index = np.asarray(target_index, dtype=np.int64)
    target_mask = target_index >= 0
    per_instance = run.batch_rule == "replay"

    def update(picked, beta, w, average):
        batch = instances[picked]
        differences = lmba_target_differences(batch, neighbours, target_index[picked])
        impostor_sums, active_counts = block_terms(batch, labels[picked],
                                                   lmba_thresholds(theta[picked], differences, w), w,
                                                   target_mask=target_mask[picked], per_instance=per_instance)
        return lmba_batch_update(w, run.batch_rule, differences, active_counts, impostor_sums, c, beta, projection,
                                 target_mask[picked], average)

    pickable = np.arange(instances.shape[0]) if pickable is None else np.asarray(pickable, dtype=np.int64)
    return margin_loop(pickable, instances.shape[1], run=run, seed=seed, update=update, after_step=after_step)


# In-memory drivers (small data; the Spark layer mirrors them) -----------------------------------


def check_margin_data(X, y, owner: str):
    X = np.asarray(X, dtype=float)
    y = np.asarray(y)
    if X.ndim != 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise ValueError(f"{owner} needs X of shape (n, D) and y of shape (n,); got {X.shape} and {y.shape}")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{owner}: X contains NaN or infinite values")
    classes, counts = np.unique(y, return_counts=True)
    if classes.size < 2:
        raise ValueError(f"{owner} needs rows of at least two classes (no nearmiss exists)")
    if np.any(counts < 2):
        raise ValueError(f"{owner}: class(es) {classes[counts < 2].tolist()} have a single row (no nearhit exists)")
    return X, y


def sorted_neighbours(X, y, queries, w2, same_class: bool, limit: int):
    """Per query row, the positions of the nearest rows of its own class (same_class) or of the
    other classes, in ``||.||_w``, ties by smaller index, the query itself excluded. (q, limit)."""
    result = np.empty((queries.size, limit), dtype=np.int64)
    for position, query in enumerate(queries):
        distances = np.sum((X - X[query]) ** 2 * w2, axis=1)
        eligible = (y == y[query]) if same_class else (y != y[query])
        eligible[query] = False
        candidates = np.flatnonzero(eligible)
        ranked = candidates[np.argsort(distances[candidates], kind="stable")]
        result[position, :min(limit, ranked.size)] = ranked[:limit]
        result[position, ranked.size:] = -1
    return result


def lmba_in_memory(X, y, *, k=3, c=1.0, iterations=None, batch_size=1, step_size=1.0, schedule="constant",
                   projection="none", seed=0, batch_rule="replay", passes=1,
                   averaging="none") -> Tuple[np.ndarray, np.ndarray]:
    """Lmba, Section 3.1 steps 1-4, on in-memory dense data, with mini-batches.

    Parameters
    ----------
    X, y : ndarray of shape (n, D), array-like of shape (n,)
    k, c : int >= 1 target neighbours (Definition 2); float >= 0, the scaling factor of eq. (3).
    iterations, batch_size : instances picked in total (the paper's I, default passes x n,
        Section 3.1); instances per step (None: ceil(n / 16), see ``MarginRun.batch``). There are
        ``number_of_steps(iterations, batch_size)`` steps.
    step_size, schedule, projection, seed : see :func:`step_sizes`, :func:`lmba_step`,
        :func:`instance_order`.
    batch_rule : {"replay", "sum"}
        How a batch moves w (:func:`batch_step_sizes`): "replay" (:func:`lmba_replay`, one step per
        instance, the hinge terms from the batch's first w) or "sum" (one normalised step along the
        summed gradient). Identical for batch_size = 1.
    passes, averaging : see :class:`sparkfs.core.margin_runs.MarginRun`. The defaults of all
        the run's settings are the paper's.

    Returns
    -------
    ranking_weights, raw_w : ndarrays of shape (D,): :func:`lmba_ranking_weights` of the ranked w
        (the last w, or the mean of the iterates with ``averaging="iterates"``), and that w.

    Notes
    -----
    Targets and theta come from a brute-force search, one row at a time (no n x n matrix). A
    class with fewer than k + 1 rows uses the targets it has (masked slots); a class of one row
    is refused. Each step passes all n rows to :func:`lmba_block_terms` as one block.
    """
    owner = "lmba_in_memory"
    check_choice("projection", owner, projection, PROJECTIONS)
    k = check_int("k", owner, k, 1)
    c = check_positive("c", owner, c, allow_zero=True)
    run = MarginRun(schedule=schedule, step_size=step_size, passes=passes, batch_size=batch_size,
                    batch_rule=batch_rule, averaging=averaging, iterations=iterations)
    X, y = check_margin_data(X, y, owner)
    n, num_features = X.shape
    everyone = np.arange(n)
    ones = np.ones(num_features)
    targets = sorted_neighbours(X, y, everyone, ones, True, k)                  # Step 2: T
    nearmiss = sorted_neighbours(X, y, everyone, ones, False, 1)[:, 0]
    theta = lmba_theta(weighted_squared_norms(X - X[targets[:, 0]]), weighted_squared_norms(X - X[nearmiss]))
    ranked = lmba_loop(X, y, X, targets, theta, run=run, seed=seed, c=c, projection=projection,
                       block_terms=block_terms_over(X, y)).ranked              # Steps 1 and 3
    return lmba_ranking_weights(ranked), ranked
