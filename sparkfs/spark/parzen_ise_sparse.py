"""Parzen-ISE's ``marginal`` criterion over every row of a sparse matrix (the math:
:mod:`sparkfs.core.parzen_ise_sparse`).

The dense marginal pass (:mod:`sparkfs.spark.parzen_ise`) centres every block, so a CSR
block becomes dense, and every pair of rows meets in every feature: O(N^2 d) per evaluation. Here
nothing is densified. Per feature k the N x N pairs split into stored/stored pairs (explicit, m_k^2),
stored/zero pairs (through the zero rows' membership sums ``Z_kc``) and zero/zero pairs (closed
form); a feature with more than ``feature_rows`` stored values, when the exact pairs of all features
exceed the budget, is estimated against M seeded landmark rows, scaled by N / M (announced by the
caller). What is held and shipped:

* on the driver, once: every row (collected, CSR: the queries), their memberships, ``Z_kc`` over all
  rows (d x C), the landmarks' stored values in the estimated features and their ``Z_kc``;
* per evaluation, one pass per query batch (within the pass API's byte budget; the batch is the raw
  CSR rows): each task sums its block's stored values against the batch's stored values of the exact
  features; with the first batch also its stored values against every zero row (as rows, and as
  queries: the queries are the rows) and, for the estimated features, against the landmarks;
* on the driver: the zero/zero pairs, and the landmarks' stored values against every zero row.

Summing these over blocks and batches gives exactly the all-pairs sums of
:func:`sparkfs.core.parzen_ise_marginal.marginal_block_terms` on the centred, standardised dense
matrix (to rounding), for the exact features. Cost per evaluation: ``O(sum_exact m_k^2 + M/N
sum_estimated m_k^2)`` pairs (hard groups: one kernel each; soft: C^2) plus ``O(nnz C)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np
import scipy.sparse as sp

from sparkfs.core import fuzzy_cmeans as fcm
from sparkfs.core import parzen_ise as pi
from sparkfs.core import parzen_ise_marginal as pim
from sparkfs.core import parzen_ise_sparse as pis
from sparkfs.core.parzen_ise_options import SPARSE_FEATURE_ROWS, SPARSE_LANDMARKS, SPARSE_PAIR_BUDGET
from sparkfs.core.sampling import content_sample_keys, smallest_key_positions
from sparkfs.spark.passes import batched_pass, sum_merge
from sparkfs.spark.rows import Block, Rows, RowSet


@dataclass(frozen=True)
class SparsePairSettings:
    """The budget of the sparse pair sums (:func:`sparkfs.core.parzen_ise_sparse.sparse_pair_plan`)."""

    pair_budget: float = SPARSE_PAIR_BUDGET
    feature_rows: int = SPARSE_FEATURE_ROWS
    landmarks: int = SPARSE_LANDMARKS


def stores_sparse(df, features_col: str) -> bool:
    """Whether the input's vectors are stored sparse (read from its first row: its blocks are CSR then)."""
    from pyspark.ml.linalg import SparseVector

    first = df.select(features_col).first()
    return first is not None and isinstance(first[0], SparseVector)


def feature_nonzero_counts(df, features_col: str) -> np.ndarray:
    """The non-zero values per feature, m_k, from one JVM pass (Spark ML's ``Summarizer``)."""
    from pyspark.ml.stat import Summarizer
    from pyspark.sql import functions as F

    summary = df.select(Summarizer.metrics("numNonZeros").summary(F.col(features_col)).alias("s")).first()["s"]
    return np.rint(summary["numNonZeros"].toArray()).astype(np.int64)


def group_memberships(points, labels, grouping) -> np.ndarray:
    """Class one-hots (with labels), or FCM memberships of the centred ``points`` from the shipped
    centres (hard or soft)."""
    if grouping["centres"] is None:
        return np.eye(grouping["num_groups"])[labels]
    fuzzy = fcm.fcm_memberships(points, grouping["centres"], grouping["m"])
    return pi.hard_memberships(fuzzy) if grouping["hard"] else fuzzy


def sparse_group_memberships(matrix, labels, grouping) -> np.ndarray:
    """:func:`group_memberships` of raw rows (CSR or dense) without densifying them: FCM memberships
    from the sparse distances to the centres (:func:`sparkfs.core.parzen_ise_sparse.sparse_fcm_memberships`,
    O(nnz C)); labels need no values."""
    if grouping["centres"] is None:
        return group_memberships(None, labels, grouping)
    fuzzy = pis.sparse_fcm_memberships(matrix, grouping["mean"], grouping["centres"], grouping["m"])
    return pi.hard_memberships(fuzzy) if grouping["hard"] else fuzzy


def group_variances(rows: Rows, grouping, feature_variance, variance_floor, moment_terms, pass_name) -> np.ndarray:
    """Eq. 9's group variances in two passes (sums, then sums about the group means); each block's
    moments from ``moment_terms(block, shipped)`` (a :class:`sparkfs.core.parzen_ise.GroupMoments`),
    with ``shipped`` the grouping and ``shifts`` (None, then the group means)."""
    moments = None
    for shifts in (None, "means"):
        if shifts == "means":
            with np.errstate(divide="ignore", invalid="ignore"):
                shifts = np.nan_to_num(moments.sums / moments.weight_sums[:, None])

        def summarize(block: Block, shipped):
            terms = moment_terms(block, shipped)
            return {"weight_sums": terms.weight_sums, "sums": terms.sums, "square_sums": terms.square_sums}

        with rows.shipped({**grouping, "shifts": shifts}) as handle:
            totals = rows.run_pass(pass_name, lambda block: summarize(block, handle.value), sum_merge)
        moments = pi.GroupMoments(totals["weight_sums"], totals["sums"], totals["square_sums"])
    return pi.group_variances(moments, feature_variance, floor=variance_floor)


def sparse_moment_terms(block: Block, shipped) -> pi.GroupMoments:
    """A block's group moments from sparse products
    (:func:`sparkfs.core.parzen_ise_sparse.sparse_group_moment_terms`), never densified."""
    memberships = sparse_group_memberships(block.matrix, block.labels, shipped)
    return pis.sparse_group_moment_terms(block.matrix, memberships, shipped["mean"], shipped["shifts"])


def sparse_group_variances(rows: Rows, grouping, feature_variance, variance_floor) -> np.ndarray:
    """:func:`group_variances` with each block's moments from sparse products."""
    return group_variances(rows, grouping, feature_variance, variance_floor, sparse_moment_terms,
                           "group moments (sparse)")


@dataclass
class SparseMarginalSetup:
    """What every evaluation reuses: the plan, the scaled zeros, ``Z_kc`` of all rows and the landmarks."""

    plan: pis.SparsePairPlan
    mean: np.ndarray
    feature_variance: np.ndarray
    zero_values: np.ndarray
    zero_sums: np.ndarray                 # (d, C) over all rows
    landmark_positions: np.ndarray        # (M,) positions among the collected rows
    landmark_columns: Optional[pis.SparseColumns]  # their stored values in the estimated features
    landmark_memberships: Optional[np.ndarray]
    landmark_zero_sums: Optional[np.ndarray]

    def summary(self) -> Dict[str, Any]:
        """What the fit reports: the plan's counts."""
        return {"exact_features": int(self.plan.exact.sum()), "estimated_features": self.plan.num_estimated,
                "landmarks": int(self.plan.num_landmarks), "pairs": float(self.plan.pairs)}


def feature_counts(matrix) -> np.ndarray:
    """Stored non-zero values per feature of a (CSR or dense) matrix: the m_k of the plan."""
    if sp.issparse(matrix):
        csc = sp.csc_matrix(matrix, copy=True)
        csc.eliminate_zeros()
        return np.diff(csc.indptr).astype(np.int64)
    return np.count_nonzero(np.asarray(matrix), axis=0).astype(np.int64)


def prepare_sparse_marginal(queries: RowSet, memberships, mean, feature_variance, settings: SparsePairSettings,
                            seed: int) -> SparseMarginalSetup:
    """The plan from the collected rows' counts, and the landmarks (the rows of smallest content key by
    ``seed``, as the landmarks of the dense pass) when some feature is estimated."""
    num_rows = len(queries)
    plan = pis.sparse_pair_plan(feature_counts(queries.matrix), num_rows, pair_budget=settings.pair_budget,
                                feature_rows=settings.feature_rows, landmarks=settings.landmarks)
    every = pis.scaled_columns(queries.matrix, mean, feature_variance)
    zero_sums = pis.zero_membership_sums(every, memberships)
    setup = SparseMarginalSetup(plan, np.asarray(mean, dtype=float), np.asarray(feature_variance, dtype=float),
                                pis.scaled_zero_values(mean, feature_variance), zero_sums, np.zeros(0, np.int64),
                                None, None, None)
    if plan.num_landmarks:
        keys = content_sample_keys(queries.matrix, queries.labels, queries.weights, seed)
        positions = np.sort(smallest_key_positions(keys, queries.ids, plan.num_landmarks))
        setup.landmark_positions = positions
        setup.landmark_columns = pis.scaled_columns(queries.matrix[positions], mean, feature_variance,
                                                    features=~plan.exact)
        setup.landmark_memberships = np.asarray(memberships, dtype=float)[positions]
        setup.landmark_zero_sums = pis.zero_membership_sums(setup.landmark_columns, setup.landmark_memberships)
    return setup


#: The last query batch's columns in this worker: (batch matrix, its columns). Every block of a pass
#: sees the same shipped batch object, so it is converted to columns once per worker, not per block
#: (the matrix is held, so its id cannot be reused by another object while cached).
_last_batch: list = []


def _batch_columns(matrix, mean, variance, exact) -> pis.SparseColumns:
    if _last_batch and _last_batch[0][0] is matrix and _last_batch[0][1] is exact:
        return _last_batch[0][2]
    columns = pis.scaled_columns(matrix, mean, variance, features=exact)
    _last_batch[:] = [(matrix, exact, columns)]
    return columns


def _block_sums(block: Block, shipped) -> Dict[str, np.ndarray]:
    """One block's sums against the shipped query batch (and, with the first batch, the zero parts
    and the landmarks): (7, d) arrays ``exact`` and ``estimated``."""
    matrix = sp.csr_matrix(block.matrix)
    memberships = sparse_group_memberships(matrix, block.labels, shipped)
    mean, variance, exact = shipped["mean"], shipped["feature_variance"], shipped["exact"]
    common = dict(h=shipped["h"], with_self=shipped["with_self"])
    variances, w, zeros = shipped["variances"], shipped["w"], shipped["zero_values"]
    rows = pis.scaled_columns(matrix, mean, variance)
    batch = _batch_columns(shipped["matrix"], mean, variance, exact)
    sums = pis.stored_pair_sums(rows, memberships, batch, shipped["memberships"], variances, w, features=exact,
                                **common)
    estimated = np.zeros_like(sums)
    if shipped["first"]:
        for side in ("rows", "queries"):  # the queries are the rows: each block is also the queries' share
            sums += pis.stored_zero_sums(rows, memberships, shipped["zero_sums"], zeros, variances, w,
                                         stored_side=side, features=exact, **common)
        if shipped["landmark_columns"] is not None:
            estimated = (pis.stored_pair_sums(rows, memberships, shipped["landmark_columns"],
                                              shipped["landmark_memberships"], variances, w, features=~exact, **common)
                         + pis.stored_zero_sums(rows, memberships, shipped["landmark_zero_sums"], zeros, variances, w,
                                                features=~exact, **common))
    return {"exact": sums, "estimated": estimated}


def sparse_marginal_terms_pass(rows: Rows, grouping, queries: RowSet, query_memberships, setup: SparseMarginalSetup,
                               scaled_variances, w, h, with_self) -> pim.MarginalTerms:
    """The ``marginal`` pair sums at w over every row and every query (the estimated features scaled to
    N queries): one pass per query batch, then the driver's zero/zero and landmark/zero parts."""
    plan, num_rows = setup.plan, len(queries)
    shared = {**grouping, "w": w, "variances": scaled_variances, "mean": setup.mean,
              "feature_variance": setup.feature_variance, "zero_values": setup.zero_values,
              "zero_sums": setup.zero_sums, "exact": plan.exact, "h": h, "with_self": bool(with_self),
              "landmark_columns": setup.landmark_columns, "landmark_memberships": setup.landmark_memberships,
              "landmark_zero_sums": setup.landmark_zero_sums}
    exact = np.zeros((7, len(setup.mean)))
    estimated = np.zeros_like(exact)
    for _, summary in batched_pass(rows, queries, "sparse marginal ise pair sums", _block_sums,
                                   payload=lambda batch: {"memberships": query_memberships[batch],
                                                          "first": batch.start == 0},
                                   shared=shared, shipped_bytes_per_query=8.0 * query_memberships.shape[1],
                                   bytes_per_query=0.0, progress_name="parzen-ise sparse pair sums"):
        if summary is not None:
            exact += summary["exact"]
            estimated += summary["estimated"]
    common = dict(h=h, with_self=with_self)
    exact += pis.zero_zero_sums(setup.zero_sums, setup.zero_sums, setup.zero_values, scaled_variances, w,
                                features=plan.exact, **common)
    if setup.landmark_columns is not None:
        estimated += pis.stored_zero_sums(setup.landmark_columns, setup.landmark_memberships, setup.zero_sums,
                                          setup.zero_values, scaled_variances, w, stored_side="queries",
                                          features=~plan.exact, **common)
        estimated += pis.zero_zero_sums(setup.zero_sums, setup.landmark_zero_sums, setup.zero_values,
                                        scaled_variances, w, features=~plan.exact, **common)
        exact += estimated * (num_rows / plan.num_landmarks)
    return pis.terms_of_sums(exact, with_self)
