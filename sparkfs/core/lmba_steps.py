"""Lmba's step 3(d) (Li & Lu 2009, Section 3.1) and the "replay" batch rule's sequence of them. Pure NumPy/SciPy.

:func:`lmba_step` moves w once along a gradient, ``w - beta g / ||g||_2``; :func:`lmba_replay` takes
one such step per instance of a batch, each along ``2 w_f (T_if - c S_if)`` (eq. 16 of the single
instance, with the current w), from the hinge terms T and S that one pass over the rows found at
the batch's first w (:mod:`sparkfs.core.margin_weighting` computes them; the notes there say why
the rule exists).

CSR rows (a hashed vocabulary: 2^24 ids, a few hundred per row) keep T and S CSR: instance i's
bracket ``T_i. - c S_i.`` is 0 outside its own non-zeros and those of the rows active for it, so
its gradient is too, and its step changes w on that support only. :func:`lmba_replay` then works
on the support: the gradient and its norm over those entries, the update there, and the clip to
[0, 1] of ``projection="clip"`` there (the first step of a batch clips all of w, as the dense step
does; afterwards only the entries a step changed can leave [0, 1]). The result is the dense rule's
to rounding: only the norm's sum runs over fewer terms, in another order. Cost per instance:
O(support) instead of O(D), plus O(D) per batch (w's copy, and its clip).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import scipy.sparse as sp

from sparkfs.core.margin_runs import IterateAverage
from sparkfs.core.options import PROJECTIONS, check_choice
from sparkfs.core.sparse_input import is_sparse


def lmba_step(w, gradient, step_size, projection="none") -> np.ndarray:
    """Step 3(d): ``w - step_size * gradient / ||gradient||_2`` (a zero gradient leaves w).

    Parameters
    ----------
    w, gradient : array-like of shape (D,)
    step_size : float
        beta_t of step 3(d).
    projection : {"none", "clip"}
        "none": the update as printed. "clip": clip to [0, 1] afterwards (the domain of w_f in
        Definition 5).

    Returns
    -------
    w : ndarray of shape (D,)
    """
    check_choice("projection", "lmba_step", projection, PROJECTIONS)
    updated, gradient = np.array(w, dtype=float), np.asarray(gradient, dtype=float)
    # Not np.linalg.norm: a BLAS call, which a multithreaded OpenBLAS on a busy machine made 200
    # times slower (8 ms for 50,000 features; the loop takes one per picked instance).
    norm = float(np.sqrt(np.sum(gradient * gradient)))
    if norm > 0:
        updated = updated - step_size * gradient / norm
    return np.clip(updated, 0.0, 1.0) if projection == "clip" else updated


def lmba_replay(w, target_terms, impostor_sums, c, step_sizes_of_instances, projection="none",
                average: Optional[IterateAverage] = None) -> np.ndarray:
    """The "replay" batch rule: the batch's instances take their single-instance steps (3(d)) one
    after another, each gradient ``2 w_f (T_if - c S_if)`` with the *current* w, while the hinge
    terms T and S (which depend on w only through which pairs are active) come from one pass at
    the batch's first w. A batch of one is exactly the paper's step.

    Parameters
    ----------
    w : array-like (D,)
    target_terms, impostor_sums : ndarrays or CSR matrices (m, D)
        :func:`sparkfs.core.margin_weighting.lmba_target_terms`, and
        :func:`sparkfs.core.margin_weighting.lmba_block_terms` with ``per_instance=True`` summed over
        blocks. Both CSR: each step works on its bracket's support (module notes).
    c : float
    step_sizes_of_instances : array-like (m,): beta of each instance's step
    projection : see :func:`lmba_step`
    average : IterateAverage, optional
        Fed the iterate after every instance's step.
    """
    betas = np.asarray(step_sizes_of_instances, dtype=float)
    if is_sparse(target_terms) and is_sparse(impostor_sums):
        check_choice("projection", "lmba_replay", projection, PROJECTIONS)
        brackets = sp.csr_matrix(target_terms - c * impostor_sums)
        brackets.sum_duplicates()
        return _replay_on_supports(np.array(w, dtype=float), brackets, betas, projection == "clip", average)
    w = np.array(w, dtype=float)
    brackets = _dense(target_terms) - c * _dense(impostor_sums)
    for bracket, beta in zip(brackets, betas):
        w = lmba_step(w, 2.0 * w * bracket, beta, projection)
        if average is not None:
            average.add(w)
    return w


def _dense(terms) -> np.ndarray:
    return terms.toarray() if is_sparse(terms) else np.asarray(terms, dtype=float)


def _replay_on_supports(w: np.ndarray, brackets: sp.csr_matrix, betas: np.ndarray, clip: bool,
                        average: Optional[IterateAverage]) -> np.ndarray:
    """:func:`lmba_replay` along CSR brackets, in place on ``w``: each step touches its bracket's
    support only (module notes)."""
    for position, beta in zip(range(brackets.shape[0]), betas):
        span = slice(brackets.indptr[position], brackets.indptr[position + 1])
        support = brackets.indices[span]
        gradient = 2.0 * w[support] * brackets.data[span]
        norm = float(np.sqrt(np.sum(gradient * gradient)))
        if norm > 0:
            w[support] = w[support] - beta * gradient / norm
        if clip and position == 0:
            np.clip(w, 0.0, 1.0, out=w)
        elif clip:
            w[support] = np.clip(w[support], 0.0, 1.0)
        if average is not None:
            average.add(w)
    return w
