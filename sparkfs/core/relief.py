"""The Relief family as nonparametric Bayes-error minimisation (Yang & Hu, 2012).

Pure NumPy/SciPy. Every variant scores a feature by the mean over the query instances of a
*margin vector* ``m_n`` (one entry per feature) and weights the features by the closed form of
Sun's convex problem, eq. (4): ``w = (mean margin)^+ / ||(mean margin)^+||_2``.

Margins of the neighbour-based variants are sums of weighted absolute differences,
``m_n = sum_r a_{n r} |x_n - x_r|``, over a few neighbours r of query n. The formula of each
variant is therefore *which neighbours, with which weight*: :func:`relief_pairs`,
:func:`relieff_pairs` and :func:`mrelief_pairs` turn a :class:`NeighbourTable` (per query and
class, the k nearest rows) into :class:`MarginPairs`, and :func:`margin_sums` accumulates
``sum a |x_n - x_r|`` over any subset of the pairs (so a Spark partition can add the
contributions of the neighbours it holds and the partial sums simply add up).
:func:`relief`, :func:`relieff` and :func:`mrelief` compose the two for in-memory data.

Parzen-Relief needs no neighbour search: :func:`prelief_margin_sums` gives the partial margins
contributed by any block of rows (they add up over blocks) and :func:`prelief` the full margins.

Equations (paper: Yang & Hu, "Nonparametric Bayes error minimization for feature selection",
Sections 2.3 and 4)
--------------------------------------------------------------------------------------------
* Relief, eq. (3): ``m_n = |x_n - M(x_n)| - |x_n - H(x_n)|``, H / M the nearest hit (same class)
  and the nearest miss (any other class: the I-Relief margin for multi-class data).
* ReliefF (Section 4.2, unnumbered): ``m_n = sum_{c != y_n} w_c |x_n - M_c(x_n)| - |x_n - H(x_n)|``.
* MAP-Relief, eq. (16): ``m_n = P(y_n) |x_n - M(x_n)| - (1 - P(y_n)) |x_n - H(x_n)|``.
* Parzen-Relief, eq. (14): ``m_n(d) = mean_{i in same class, i != n} k_d(x_i(d), x_n(d))
  - mean_{j in other classes} k_d(x_j(d), x_n(d))``, ``k_d(a, b) = exp(-(a-b)^2 / (2 sigma_d^2))``.
* Weights, eq. (4).

Deviations from the paper (and why)
-----------------------------------
1. **k > 1** (Relief, MAP-Relief): the |x_n - H| and |x_n - M| terms are the *means over the k
   nearest* hits / misses of the absolute differences, ``mean_j |x_n - H_j|``, not the absolute
   difference to the mean neighbour. This is Kononenko's averaging, keeps every term a sum over
   pairs (mergeable across partitions), and with it Relief and ReliefF coincide on binary data,
   as Section 5.1 states ("for binary classification, ReliefF and Relief are identical").
   k = 1 is exactly the paper's margin.
2. **ReliefF miss weights** are Kononenko's ``w_c = P(c) / (1 - P(y_n))`` (misses averaged over
   k per class). The paper's unnumbered ReliefF margin writes ``P(c)`` without the
   ``1 / (1 - P(y_n))``; with it, ReliefF would *not* equal Relief on binary data, contradicting
   the paper's own remark, and scikit-rebate and Kononenko (1994) normalise.
3. **Parzen-Relief's same-class set excludes n itself.** The paper defines
   ``Omega_n^(o) = {i : y_i = y_n}``, which contains n; with n included every feature gets the
   same extra ``1 / |Omega_n^(o)|`` (k_d(x, x) = 1), a feature-independent shift of the mean
   margin that changes the positive part in eq. (4) but no ranking. We exclude n, as the
   margin compares n with its *other* same-class rows ("same-class i != n").
4. **Parzen kernel normalisation:** eq. (12) writes the isotropic kernel with a
   ``1/(sqrt(2 pi) sigma)`` factor and an unsquared norm (a typo); eq. (14) defines the
   per-feature ``k_d`` without the factor and with the square. We use eq. (14) as printed.
5. **MAP-Relief's weights follow eq. (16) as printed** (``P(y_n)`` on the miss term,
   ``1 - P(y_n)`` on the hit term). Note that substituting the Relief approximation
   (``1/|x - H| -> -|x - H|``) into eq. (15) would put ``P(y_n)`` on the hit term and
   ``1 - P(y_n)`` on the miss term; the paper states eq. (16), which we implement.
6. **Priors** ``P(c)`` are the class frequencies of all n rows (Section 3.2:
   ``sum_n I(y_n = c) / N``), also when only a sample of queries is used.
7. **Small classes** (the paper assumes every class has k + 1 rows): a class with fewer rows
   than needed contributes the neighbours that exist, each term being the mean over
   ``min(k, rows available)`` hits or misses, as in Kononenko's ReliefF, Weka and scikit-rebate
   (real data sets have tiny classes: a class of 2 documents in TREC tr31, of 2 rows in ecoli).
   Only a query with no hit at all (a class of one row) or no miss is refused.
8. **Instance weights** (ReliefF only; :func:`weighted_relieff_pairs`; the papers define none,
   Han & Yu's weighting needs them). With a weight ``s_r >= 0`` per row: the priors are weight
   shares ``P(c) = sum_{r in c} s_r / sum_r s_r``; each class's k nearest neighbours (found as
   without weights: weights do not move rows) are averaged with weights ``s_j / sum_j s_j``
   instead of ``1 / k``; and the score is the weighted mean of the queries' margins,
   ``sum_q s_q m_q / sum_q s_q``. All weights 1 is ReliefF exactly; a row of weight w counts as
   w copies of itself everywhere except in the search (its copies would be its own nearest
   hits) and in what is measured of the rows as given: the feature scaling and note 9's bound.
   A class whose found neighbours all weigh 0 drops out of that query's margin.
9. **Continuous endpoint** (relief and relieff; scikit-rebate's ReliefF with
   ``label_type="continuous"``; :func:`continuous_pairs`): a row is a *hit* of query n when their
   targets differ by less than the target's sample standard deviation, else a *miss*
   (:func:`sparkfs.core.neighbours.pair_classes`); the search keeps the k nearest hits and the k
   nearest misses of each query, and ``m_n = (1/N_M) sum_j |x_n - M_j| - (1/N_H) sum_j |x_n - H_j|``
   with N_H, N_M the hits and misses found (at most k; a term without any is left out, as
   scikit-rebate does). Relief and ReliefF coincide there (one miss class). With instance
   weights (relieff; :func:`weighted_continuous_pairs`) the hits and the misses are averaged
   by weight and the queries' margins weighted, as note 8; the bound stays the standard
   deviation of the targets as given (unweighted, as the MultiSURF family's S5), so a weight
   changes no row's hits.

Scaling (:func:`feature_scale`, defined once in :mod:`sparkfs.core.scaling`): ``"range"``
divides each feature by ``max - min`` (Kononenko's ``diff``: with Manhattan distance this is
scikit-rebate's ReliefF), ``"standard"`` by the sample standard deviation (ddof = 1, as Spark's
Summarizer); a constant feature is left unscaled (all its differences are 0 anyway). Margins and
distances are differences of values, so the offset of the scaling plays no part.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
import scipy.sparse as sp

from sparkfs.core import scaling as scaling_math
from sparkfs.core.neighbours import PAD_ID, NeighbourTable
from sparkfs.core.pairs import feature_kernel_sums, one_hot, pair_sums
from sparkfs.core.scaling import feature_scale  # noqa: F401  (Relief's divisor, public here: one function)

Matrix = Union[np.ndarray, sp.csr_matrix]

#: The Relief variants (names used by the selector's ``variant`` param and the CLI).
VARIANTS = ("relief", "relieff", "mrelief", "prelief")
#: Variants whose margins come from a nearest-neighbour table.
NEIGHBOUR_VARIANTS = ("relief", "relieff", "mrelief")
#: Variants that take a continuous endpoint (note 9): MAP-Relief and Parzen-Relief need class priors.
CONTINUOUS_VARIANTS = ("relief", "relieff")
#: Feature scalings applied before the neighbour search and the margins (:mod:`sparkfs.core.scaling`).
SCALINGS = scaling_math.SCALINGS
#: The paper's Parzen bandwidth on [0, 1]-scaled data (Section 5.1: "sigma_d = 0.01").
PAPER_PARZEN_SIGMA = 0.01
#: Distances of the neighbour variants: the search's metrics, and ``"cosine"``: every row (after
#: the feature scaling) divided by its Euclidean norm, then Euclidean distances (which order the
#: neighbours as cosine similarity does); the margins are taken on the same unit rows.
METRICS = ("euclidean", "manhattan", "cosine")
#: Term-like data for the default distance: every value >= 0 and at most this share of the values
#: non-zero (the shared text sets hold 1.4-4.7 %, the densest other shared set, splice, 25 %).
TERM_LIKE_DENSITY = 0.10
#: (metric, scaling) of ``preset="default"`` by kind of data, and of the papers (Kononenko's diff).
#: Why cosine on term-like data: on the five shared text sets a linear SVM on ReliefF's top 100 is
#: within 0.009 of anova's with it, and up to 0.17 behind with range-scaled Euclidean distances,
#: which make a rare term's one occurrence as far as a frequent term's whole range
#: (benchmarks/results/relief_text.md).
TERM_LIKE_DISTANCE = ("cosine", "none")
PAPER_DISTANCE = ("euclidean", "range")


def is_term_like(minimum, non_zeros, num_rows: int) -> bool:
    """Whether the data look like a term matrix: no negative value and at most
    :data:`TERM_LIKE_DENSITY` of the values non-zero (``non_zeros`` per feature, ``num_rows`` rows)."""
    minimum, non_zeros = np.asarray(minimum, dtype=float), np.asarray(non_zeros, dtype=float)
    cells = float(num_rows) * minimum.size
    return bool(cells > 0 and np.all(minimum >= 0) and non_zeros.sum() <= TERM_LIKE_DENSITY * cells)


def default_distance(minimum, non_zeros, num_rows: int):
    """``(metric, scaling)`` of the neighbour variants' default: :data:`TERM_LIKE_DISTANCE` on
    term-like data (:func:`is_term_like`), else :data:`PAPER_DISTANCE`."""
    return TERM_LIKE_DISTANCE if is_term_like(minimum, non_zeros, num_rows) else PAPER_DISTANCE


@dataclass(frozen=True)
class MarginPairs:
    """The terms of the margins: ``m_n = sum over pairs of n of weight * |x_n - x_neighbour|``.

    Attributes
    ----------
    query_positions : ndarray of int64, shape (P,)
        Position of the query in the query set (row of the neighbour table).
    neighbour_ids : ndarray of int64, shape (P,)
        Row id of the neighbour.
    weights : ndarray of float64, shape (P,)
        Signed weight of the term (negative for hits).

    Pairs are sorted by neighbour id, so a block of rows finds its pairs by binary search.
    """

    query_positions: np.ndarray
    neighbour_ids: np.ndarray
    weights: np.ndarray

    def __len__(self) -> int:
        return int(self.weights.shape[0])


def class_priors(class_counts) -> np.ndarray:
    """Class priors ``P(c) = n_c / n`` (Section 3.2, the estimate used in eq. (7))."""
    counts = np.asarray(class_counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        raise ValueError("class_counts must contain at least one row")
    return counts / total


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise ValueError(f"unknown Relief variant {variant!r}: use one of {VARIANTS}")
    return variant


def default_parzen_sigma(scaled_range) -> np.ndarray:
    """The paper's bandwidth, ``sigma_d = 0.01`` on [0, 1]-scaled data, for any scaling.

    ``sigma_d = 0.01 * (max_d - min_d)`` of the (scaled) data: exactly 0.01 with
    ``scaling="range"``. A constant feature gets ``sigma_d = 1`` (its kernel is 1 for every
    pair, whatever the bandwidth).
    """
    scaled_range = np.asarray(scaled_range, dtype=np.float64)
    return np.where(scaled_range > 0, PAPER_PARZEN_SIGMA * scaled_range, 1.0)


def relief_weights(mean_margin) -> np.ndarray:
    """Feature weights of Sun's convex problem, eq. (4): ``(m)^+ / ||(m)^+||_2``.

    Returns all zeros when no entry of the mean margin is positive (no feature separates the
    classes better than chance; eq. (3) then has no non-trivial maximiser).
    """
    positive_part = np.maximum(np.asarray(mean_margin, dtype=np.float64), 0.0)
    norm = np.linalg.norm(positive_part)
    return positive_part / norm if norm > 0 else positive_part


# --------------------------------------------------------------------------------------------
# Which neighbours, with which weight
# --------------------------------------------------------------------------------------------


def _check_table(table: NeighbourTable, query_labels) -> np.ndarray:
    query_labels = np.asarray(query_labels)
    if query_labels.shape != (table.num_queries,):
        raise ValueError(
            f"query_labels has shape {query_labels.shape}; the neighbour table has {table.num_queries} queries"
        )
    labels = query_labels.astype(np.int64)
    if np.any(labels != query_labels) or np.any(labels < 0) or np.any(labels >= table.num_classes):
        raise ValueError(f"query labels must be class indices 0..{table.num_classes - 1}")
    return labels


def available_neighbours(ids: np.ndarray) -> np.ndarray:
    """How many of the k neighbour slots hold a row (not a pad), along the last axis."""
    return np.sum(ids != PAD_ID, axis=-1)


def _require_some(counts: np.ndarray, table: NeighbourTable, what: str) -> None:
    """Raise if a query has no neighbour at all of a kind it needs (fewer than k is allowed)."""
    missing = counts == 0
    if missing.any():
        query_position = int(np.argwhere(missing)[0][0])
        raise ValueError(f"query id {int(table.query_ids[query_position])} has no {what}")


def hit_neighbours(table: NeighbourTable, query_labels):
    """The k nearest hits (same class, the query excluded) of each query: ids and distances (m, k)."""
    labels = _check_table(table, query_labels)
    rows = np.arange(table.num_queries)
    return table.neighbour_ids[rows, labels], table.distances[rows, labels]


def miss_neighbours(table: NeighbourTable, query_labels):
    """The k nearest misses of each query over *all* other classes, (distance, id) order.

    The pooled nearest miss ``M(x_n)`` of Relief for multi-class data (the I-Relief margin) and
    of MAP-Relief. Returns ids and distances, each of shape (m, k).
    """
    labels = _check_table(table, query_labels)
    num_queries, num_classes, k = table.neighbour_ids.shape
    own_class = np.arange(num_classes)[None, :] == labels[:, None]
    ids = np.where(own_class[:, :, None], PAD_ID, table.neighbour_ids).reshape(num_queries, num_classes * k)
    dists = np.where(own_class[:, :, None], np.inf, table.distances).reshape(num_queries, num_classes * k)
    id_key = np.where(ids == PAD_ID, np.iinfo(np.int64).max, ids)
    order = np.lexsort((id_key, dists), axis=1)[:, :k]
    return np.take_along_axis(ids, order, axis=1), np.take_along_axis(dists, order, axis=1)


def _pairs(query_positions, neighbour_ids, weights) -> MarginPairs:
    query_positions = np.asarray(query_positions, dtype=np.int64).ravel()
    neighbour_ids = np.asarray(neighbour_ids, dtype=np.int64).ravel()
    weights = np.asarray(weights, dtype=np.float64).ravel()
    keep = (neighbour_ids != PAD_ID) & (weights != 0)
    query_positions, neighbour_ids, weights = query_positions[keep], neighbour_ids[keep], weights[keep]
    order = np.lexsort((query_positions, neighbour_ids))
    return MarginPairs(query_positions[order], neighbour_ids[order], weights[order])


def _hit_miss_pairs(table, query_labels, hit_weight, miss_weight) -> MarginPairs:
    """Pairs of the two-term margins ``miss_weight_n |x_n - M| + hit_weight_n |x_n - H|`` (k-means).

    Each term is the mean over the neighbours that exist: min(k, rows available) (see the
    module notes, *small classes*).
    """
    k = table.k
    hit_ids, _ = hit_neighbours(table, query_labels)
    miss_ids, _ = miss_neighbours(table, query_labels)
    hit_count, miss_count = available_neighbours(hit_ids), available_neighbours(miss_ids)
    _require_some(hit_count, table, "other row of its own class (no nearest hit)")
    _require_some(miss_count, table, "row of another class (no nearest miss)")
    positions = np.repeat(np.arange(table.num_queries)[:, None], k, axis=1)
    return _pairs(
        np.concatenate([positions, positions], axis=1),
        np.concatenate([hit_ids, miss_ids], axis=1),
        np.concatenate(
            [np.repeat((hit_weight / hit_count)[:, None], k, axis=1),
             np.repeat((miss_weight / miss_count)[:, None], k, axis=1)], axis=1
        ),
    )


def relief_pairs(table: NeighbourTable, query_labels) -> MarginPairs:
    """Pairs of the Relief margin, eq. (3), with k nearest hits and misses.

    ``m_n = (1/k) sum_{j<k} |x_n - M_j(x_n)| - (1/k) sum_{j<k} |x_n - H_j(x_n)|``, H_j the
    j-th nearest hit and M_j the j-th nearest miss over all other classes (for multi-class
    data the I-Relief margin). k = 1 is eq. (3) exactly; see the module notes for k > 1.
    """
    ones = np.ones(table.num_queries)
    return _hit_miss_pairs(table, query_labels, hit_weight=-ones, miss_weight=ones)


def mrelief_pairs(table: NeighbourTable, query_labels, class_priors_) -> MarginPairs:
    """Pairs of the MAP-Relief margin, eq. (16).

    ``m_n = P(y_n) (1/k) sum_j |x_n - M_j(x_n)| - (1 - P(y_n)) (1/k) sum_j |x_n - H_j(x_n)|``
    with the misses pooled over all other classes, as in Relief.
    """
    labels = _check_table(table, query_labels)
    prior_of_query = np.asarray(class_priors_, dtype=np.float64)[labels]
    return _hit_miss_pairs(table, query_labels, hit_weight=-(1.0 - prior_of_query), miss_weight=prior_of_query)


def relieff_pairs(table: NeighbourTable, query_labels, class_priors_) -> MarginPairs:
    """Pairs of the ReliefF margin (Section 4.2, with Kononenko's normalisation).

    ``m_n = sum_{c != y_n} P(c) / (1 - P(y_n)) (1/k) sum_j |x_n - M_{c,j}(x_n)|
    - (1/k) sum_j |x_n - H_j(x_n)|``, ``M_{c,j}`` the j-th nearest row of class c. Classes with
    no rows (prior 0) contribute nothing.
    """
    labels = _check_table(table, query_labels)
    priors = np.asarray(class_priors_, dtype=np.float64)
    if priors.shape != (table.num_classes,):
        raise ValueError(f"class_priors has shape {priors.shape}; expected ({table.num_classes},)")
    num_queries, num_classes, k = table.neighbour_ids.shape
    other_mass = 1.0 - priors[labels]
    if np.any(other_mass <= 0):
        raise ValueError("ReliefF needs rows of at least two classes (no misses exist)")
    # weight[n, c] = P(c) / (1 - P(y_n)) for c != y_n, -1 for c = y_n; each of the min(k, available)
    # neighbours of class c gets weight / available.
    class_weight = priors[None, :] / other_mass[:, None]
    class_weight[np.arange(num_queries), labels] = -1.0
    used_class = class_weight != 0
    counts = available_neighbours(table.neighbour_ids)  # (m, C)
    _require_some(np.where(used_class, counts, 1), table, "neighbour in a class it needs (no hit, or an empty class)")
    positions = np.broadcast_to(np.arange(num_queries)[:, None, None], table.neighbour_ids.shape)
    per_neighbour = np.divide(class_weight, counts, out=np.zeros_like(class_weight), where=counts > 0)
    weights = np.broadcast_to(per_neighbour[:, :, None], table.neighbour_ids.shape)
    return _pairs(positions, table.neighbour_ids, weights)


def continuous_pairs(table: NeighbourTable) -> MarginPairs:
    """Pairs of the margin on a continuous endpoint (module note 9): ``table`` holds per query its
    k nearest hits (class 0) and misses (class 1); each found neighbour weighs -1 / N_H or 1 / N_M."""
    if table.num_classes != 2:
        raise ValueError(f"a continuous endpoint's table has 2 classes (hit, miss); this one has {table.num_classes}")
    counts = available_neighbours(table.neighbour_ids)  # (m, 2)
    per_neighbour = np.divide(np.array([[-1.0, 1.0]]), counts, out=np.zeros(counts.shape), where=counts > 0)
    positions = np.broadcast_to(np.arange(table.num_queries)[:, None, None], table.neighbour_ids.shape)
    return _pairs(positions, table.neighbour_ids, np.broadcast_to(per_neighbour[:, :, None], table.neighbour_ids.shape))


def weighted_relieff_pairs(table: NeighbourTable, query_labels, class_priors_, query_weights,
                           neighbour_weights) -> MarginPairs:
    """Pairs of the instance-weighted ReliefF margin (module note 8), each scaled by s_q.

    ``s_q m_q = s_q [sum_{c != y_q} P(c) / (1 - P(y_q)) sum_j s_{c,j} |x_q - M_{c,j}| / sum_j s_{c,j}
    - sum_j s_{y,j} |x_q - H_j| / sum_j s_{y,j}]``; the score is the sum of these over the
    queries divided by ``sum_q s_q``.

    Parameters
    ----------
    table, query_labels : as :func:`relieff_pairs`
    class_priors_ : array (C,)
        Weighted priors (:func:`class_priors` of the per-class weight sums).
    query_weights : array (m,)
        s_q of each query.
    neighbour_weights : array (m, C, k)
        s of each neighbour in ``table.neighbour_ids`` (any value where the id is padding).
    """
    labels = _check_table(table, query_labels)
    priors = np.asarray(class_priors_, dtype=np.float64)
    num_queries = table.num_queries
    if priors.shape != (table.num_classes,):
        raise ValueError(f"class_priors has shape {priors.shape}; expected ({table.num_classes},)")
    other_mass = 1.0 - priors[labels]
    if np.any(other_mass <= 0):
        raise ValueError("ReliefF needs rows of at least two classes (no misses exist)")
    class_weight = priors[None, :] / other_mass[:, None]
    class_weight[np.arange(num_queries), labels] = -1.0
    _require_some(np.where(class_weight != 0, available_neighbours(table.neighbour_ids), 1), table,
                  "neighbour in a class it needs (no hit, or an empty class)")
    return _weight_shared_pairs(table, class_weight, query_weights, neighbour_weights)


def weighted_continuous_pairs(table: NeighbourTable, query_weights, neighbour_weights) -> MarginPairs:
    """Pairs of the instance-weighted margin on a continuous endpoint (module notes 8 and 9), each
    scaled by s_q: ``s_q [sum_j s_{M,j} |x_q - M_j| / sum_j s_{M,j} - sum_j s_{H,j} |x_q - H_j| / sum_j s_{H,j}]``
    over the k nearest misses M and hits H found (``table``: class 0 the hits, 1 the misses); the
    score is their sum over the queries divided by ``sum_q s_q``. Weights 1 is :func:`continuous_pairs`."""
    if table.num_classes != 2:
        raise ValueError(f"a continuous endpoint's table has 2 classes (hit, miss); this one has {table.num_classes}")
    class_weight = np.broadcast_to(np.array([[-1.0, 1.0]]), (table.num_queries, 2))
    return _weight_shared_pairs(table, class_weight, query_weights, neighbour_weights)


def _weight_shared_pairs(table: NeighbourTable, class_weight, query_weights, neighbour_weights) -> MarginPairs:
    """``s_q w[q, c] s_{c,j} / sum_j s_{c,j}`` per found neighbour j of class c (a class whose found
    neighbours all weigh 0 gets nothing): note 8's averaging by weight."""
    query_weights = np.asarray(query_weights, dtype=np.float64)
    neighbour_weights = np.asarray(neighbour_weights, dtype=np.float64)
    num_queries = table.num_queries
    if query_weights.shape != (num_queries,) or neighbour_weights.shape != table.neighbour_ids.shape:
        raise ValueError(f"query_weights must have shape ({num_queries},) and neighbour_weights "
                         f"{table.neighbour_ids.shape}; got {query_weights.shape} and {neighbour_weights.shape}")
    mass = np.where(table.neighbour_ids != PAD_ID, neighbour_weights, 0.0)
    class_mass = mass.sum(axis=2)                                   # (m, C)
    share = np.divide(mass, class_mass[:, :, None], out=np.zeros_like(mass), where=class_mass[:, :, None] > 0)
    weights = query_weights[:, None, None] * class_weight[:, :, None] * share
    positions = np.broadcast_to(np.arange(num_queries)[:, None, None], table.neighbour_ids.shape)
    return _pairs(positions, table.neighbour_ids, weights)


def margin_pairs(variant: str, table: NeighbourTable, query_labels, class_priors_) -> MarginPairs:
    """The pairs of a neighbour variant's margin: the one place the variant is chosen."""
    if variant == "relief":
        return relief_pairs(table, query_labels)
    if variant == "relieff":
        return relieff_pairs(table, query_labels, class_priors_)
    if variant == "mrelief":
        return mrelief_pairs(table, query_labels, class_priors_)
    raise ValueError(f"variant {variant!r} has no neighbour pairs: use one of {NEIGHBOUR_VARIANTS}")


def short_classes(class_counts, k: int) -> dict:
    """Classes with fewer than k + 1 rows: {class index: hits a query of it averages over}.

    Their queries average over the ``n_c - 1`` hits that exist (and a query of any class over
    the ``n_c`` misses of a class with fewer than k rows): Kononenko's, Weka's and
    scikit-rebate's rule. Reported in the run summary.
    """
    counts = np.asarray(class_counts, dtype=np.int64)
    return {int(c): int(counts[c] - 1) for c in np.flatnonzero((counts > 0) & (counts < k + 1))}


# --------------------------------------------------------------------------------------------
# Weighted absolute differences
# --------------------------------------------------------------------------------------------


def margin_sums(query_matrix: Matrix, neighbour_matrix: Matrix, query_positions, neighbour_rows, weights, *,
                per_query: bool = False, num_queries: Optional[int] = None):
    """``sum_j weights_j |x_{query_j} - x_{neighbour_j}|``: :func:`sparkfs.core.pairs.pair_sums` with "abs"."""
    return pair_sums(query_matrix, neighbour_matrix, query_positions, neighbour_rows, weights,
                     difference="abs", per_query=per_query, num_queries=num_queries)


def _positions_of_ids(row_ids: np.ndarray, wanted_ids: np.ndarray) -> np.ndarray:
    order = np.argsort(row_ids, kind="stable")
    position = np.searchsorted(row_ids[order], wanted_ids)
    position = np.minimum(position, row_ids.size - 1)
    found = row_ids[order][position] == wanted_ids
    if not np.all(found):
        raise ValueError(f"row id(s) {wanted_ids[~found][:5].tolist()} not found among the rows")
    return order[position]


def _margins_in_memory(rows, row_ids, table: NeighbourTable, pairs: MarginPairs) -> np.ndarray:
    row_ids = np.asarray(row_ids, dtype=np.int64)
    query_matrix = rows[_positions_of_ids(row_ids, table.query_ids)]
    neighbour_rows = _positions_of_ids(row_ids, pairs.neighbour_ids) if len(pairs) else pairs.neighbour_ids
    _, margins = margin_sums(
        query_matrix, rows, pairs.query_positions, neighbour_rows, pairs.weights,
        per_query=True, num_queries=table.num_queries,
    )
    return margins


def relief(rows: Matrix, row_ids, table: NeighbourTable, query_labels) -> np.ndarray:
    """Relief margins, eq. (3), of the queries of ``table`` (rows of ``rows``, found by id).

    Returns
    -------
    ndarray of shape (m, p): ``m_n`` per query; their mean is the Relief score.
    """
    return _margins_in_memory(rows, row_ids, table, relief_pairs(table, query_labels))


def relieff(rows: Matrix, row_ids, table: NeighbourTable, query_labels, class_priors_) -> np.ndarray:
    """ReliefF margins (Section 4.2, Kononenko's normalisation); see :func:`relieff_pairs`."""
    return _margins_in_memory(rows, row_ids, table, relieff_pairs(table, query_labels, class_priors_))


def mrelief(rows: Matrix, row_ids, table: NeighbourTable, query_labels, class_priors_) -> np.ndarray:
    """MAP-Relief margins, eq. (16); see :func:`mrelief_pairs`."""
    return _margins_in_memory(rows, row_ids, table, mrelief_pairs(table, query_labels, class_priors_))


# --------------------------------------------------------------------------------------------
# Parzen-Relief
# --------------------------------------------------------------------------------------------


def prelief_class_weights(class_counts) -> np.ndarray:
    """``W[c, c']``: weight of a row of class c' in the margin of a query of class c, eq. (14).

    ``1 / (n_c - 1)`` on the diagonal (mean over the same class, the query excluded) and
    ``-1 / (n - n_c)`` elsewhere (mean over the other classes).
    """
    counts = np.asarray(class_counts, dtype=np.float64)
    total = counts.sum()
    same = np.divide(1.0, counts - 1, out=np.zeros_like(counts), where=counts > 1)
    other = np.divide(-1.0, total - counts, out=np.zeros_like(counts), where=total - counts > 0)
    weights = np.repeat(other[:, None], counts.size, axis=1)
    weights[np.diag_indices(counts.size)] = same
    return weights


def _check_sigma(sigma, num_features: int) -> np.ndarray:
    sigma = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (num_features,)).copy()
    if not np.all(np.isfinite(sigma)) or np.any(sigma <= 0):
        raise ValueError("sigma (the Parzen bandwidth) must be positive and finite for every feature")
    return sigma


def prelief_margin_sums(
    query_matrix: Matrix,
    query_ids,
    query_labels,
    row_matrix: Matrix,
    row_ids,
    row_labels,
    *,
    class_counts,
    sigma,
    per_query: bool = False,
    block_size: int = 2048,
):
    """Partial Parzen-Relief margins, eq. (14), contributed by one block of rows.

    ``m_n(d) = sum_i W[n, i] k_d(x_i(d), x_n(d))`` with ``W[n, i] = 1/(n_{y_n} - 1)`` for a
    same-class row ``i != n``, ``-1/(n - n_{y_n})`` for another class's row and 0 for the query
    itself; ``k_d(a, b) = exp(-(a - b)^2 / (2 sigma_d^2))``. The sum is linear in the rows, so
    the partial sums of disjoint blocks add up to the margins (no neighbour search).

    Parameters
    ----------
    query_matrix : ndarray or csr_matrix, shape (m, p)
    query_ids, query_labels : arrays of shape (m,)
    row_matrix : ndarray or csr_matrix, shape (n_block, p)
    row_ids, row_labels : arrays of shape (n_block,)
    class_counts : array of shape (C,)
        Rows per class in the *whole* data set (the normalisers of the means).
    sigma : float or array of shape (p,)
        Bandwidth per feature, > 0.
    per_query : bool
        Return the (m, p) per-query partial margins instead of their sum over queries.
    block_size : int
        Rows per chunk of the block.

    Returns
    -------
    ndarray of shape (p,) (sum over the queries) or (m, p).

    Notes
    -----
    Dense rows: ``m x n_block x p`` kernel evaluations in chunks of ~4 M. CSR rows:
    ``O(nnz(block) C + nnz(queries) + co-non-zeros)`` for the sum, ``O(m p)`` more per query.
    """
    num_classes = np.asarray(class_counts).shape[0]
    return feature_kernel_sums(
        query_matrix, query_ids, one_hot(query_labels, num_classes), row_matrix, row_ids,
        one_hot(row_labels, num_classes), prelief_class_weights(class_counts),
        kernel="gaussian", sigma=_check_sigma(sigma, query_matrix.shape[1]), exclude_self=True,
        per_query=per_query, block_size=block_size,
    )


def prelief(rows: Matrix, row_ids, row_labels, query_ids, *, class_counts=None, sigma) -> np.ndarray:
    """Parzen-Relief margins, eq. (14), of the queries ``query_ids`` (rows of ``rows``).

    Returns
    -------
    ndarray of shape (m, p); their mean over the queries is the P-Relief score.
    """
    row_ids = np.asarray(row_ids, dtype=np.int64)
    row_labels = np.asarray(row_labels).astype(np.int64)
    if class_counts is None:
        class_counts = np.bincount(row_labels)
    positions = _positions_of_ids(row_ids, np.asarray(query_ids, dtype=np.int64))
    return prelief_margin_sums(
        rows[positions], row_ids[positions], row_labels[positions], rows, row_ids, row_labels,
        class_counts=class_counts, sigma=sigma, per_query=True,
    )
