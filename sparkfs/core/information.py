"""Information-theoretic selection from counts: mRMR (Peng, Long & Ding 2005), JMI (Yang &
Moody 1999) and CMIM (Fleuret 2004), with one discretisation for all three (pure NumPy).

Notes
-----
1. **Discretisation.** Every feature takes ``bins`` codes. An exact zero is code 0 (a sparse zero
   is its own bin: on term matrices it is the absence of the term); the non-zero values of feature
   j take codes 1..bins-1 by ``bins - 2`` cut points, the quantiles at t / (bins - 1) of j's
   non-zero values (inverted CDF: the smallest value v with F(v) >= q), from a sample of rows
   (:func:`equal_frequency_cuts`); a value's code is 1 + the number of cut points <= it
   (:func:`bin_codes`). Cut points that repeat leave a bin empty, which changes no information
   value. ``discretization="none"`` takes the values as the codes (integers in [0, bins)).
2. **Counts.** Only non-zero codes are counted in a pass (the work follows the non-zeros); the
   counts of code 0 follow by subtraction from the class totals (relevance) or from the selected
   feature's own table (a step), :func:`relevance_table`, :func:`step_information`.
3. **Information** in nats (natural logarithm, as scikit-learn's ``mutual_info_score``), from the
   empirical distribution of the counts:
   I(X; Y) = sum_{x,y} p(x, y) ln(p(x, y) / (p(x) p(y)))                                  (MI)
   I(X_j; Y | X_s) = sum p(x_j, x_s, y) ln(p(x_s) p(x_j, x_s, y) / (p(x_j, x_s) p(x_s, y)))  (CMI)
   I(X_j, X_s; Y) = I(X_s; Y) + I(X_j; Y | X_s)                                  (chain rule)
4. **Criteria**, for a candidate j given the selected set S (the first feature is the most
   relevant for all three):
   mRMR, difference form (MID, Peng et al. eq. 7 with eq. 5-6): I(X_j; Y) - mean_{s in S} I(X_j; X_s)
   mRMR, quotient form (MIQ): I(X_j; Y) / mean_{s in S} I(X_j; X_s) (+inf where the mean is 0)
   JMI (Yang & Moody; the form of Brown et al. 2012, eq. 13): sum_{s in S} I(X_j, X_s; Y)
   CMIM (Fleuret 2004, eq. 4): min_{s in S} I(X_j; Y | X_s)
   Each needs only the last selected feature's terms per step (a running sum, mean or minimum),
   so a step is one pass that counts the joint codes of that feature with every candidate.
5. **Ties.** The candidate with the largest criterion wins; criteria equal to rounding (within
   ``TIE_RELATIVE_TOLERANCE`` of the largest absolute one, as the other selectors' ties) go to the
   larger relevance, then to the lower index. A step won that way is counted in ``tied_steps``, and
   ``tie_sizes`` holds, per position of the order, how many candidates had the winning value.
6. **Instance weights** are frequency weights: every count above is a sum of the rows' weights
   (the class totals too), and the cut points are the weighted quantiles (the first value whose
   cumulative weight reaches q times the total). For integer weights that is the count of the rows
   repeated w times, so the same information and the same selection; a row of weight 0 counts
   nowhere. The information of note 3 is a function of the proportions, so it does not change
   when every weight is multiplied by one constant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from sparkfs.core.selection import TIE_RELATIVE_TOLERANCE

CRITERIA = ("mrmr", "jmi", "cmim")
MRMR_FORMS = ("difference", "quotient")


def equal_frequency_cuts(sample, bins: int, weights=None) -> np.ndarray:
    """(p, bins - 2) cut points of each feature's non-zero values in ``sample`` (note 1); +inf for
    a feature without non-zero values in the sample (all its non-zero values get code 1).
    ``weights`` (one per row, >= 0): the quantiles of the weighted values (note 6), those of the
    rows repeated w times for integer weights; a row of weight 0 is left out."""
    matrix = sp.csc_matrix(sample) if sp.issparse(sample) else sp.csc_matrix(np.asarray(sample, dtype=np.float64))
    matrix.eliminate_zeros()
    num_features, num_cuts = matrix.shape[1], bins - 2
    cuts = np.full((num_features, num_cuts), np.inf)
    if weights is not None:
        entry_weights = np.asarray(weights, dtype=np.float64)[matrix.indices]
        matrix.data = np.where(entry_weights > 0, matrix.data, 0.0)
        matrix.eliminate_zeros()
    if num_cuts <= 0 or matrix.nnz == 0:
        return cuts
    columns = np.repeat(np.arange(num_features), np.diff(matrix.indptr))
    order = np.lexsort((matrix.data, columns))
    values = matrix.data[order]  # per column, ascending
    counts = np.diff(matrix.indptr)
    has_values = counts > 0
    quantiles = np.arange(1, num_cuts + 1) / (bins - 1)
    if weights is not None:
        picked = _weighted_quantile_positions(matrix, order, np.asarray(weights, dtype=np.float64), quantiles)
        cuts[has_values] = values[picked[has_values]]
        return cuts
    # inverted CDF: the value at 0-based position ceil(q m) - 1 of the m sorted values
    positions = np.maximum(np.ceil(quantiles[None, :] * counts[:, None] - 1e-9).astype(np.int64) - 1, 0)
    picked = matrix.indptr[:-1, None] + np.minimum(positions, np.maximum(counts - 1, 0)[:, None])
    cuts[has_values] = values[picked[has_values]]
    return cuts


def _weighted_quantile_positions(matrix, order, weights, quantiles) -> np.ndarray:
    """(p, quantiles) positions in the column-sorted entries of ``matrix`` (CSC, every entry of
    positive weight, ``order`` sorting them by value within each column) of the weighted inverted
    CDF: per column the first value whose cumulative weight reaches q times the column's weight."""
    entry_weights = weights[matrix.indices][order]
    cumulative = np.cumsum(entry_weights)
    starts, stops = matrix.indptr[:-1], matrix.indptr[1:]
    before = np.concatenate([[0.0], cumulative])[starts]  # the weight of the columns before
    column_weight = np.concatenate([[0.0], cumulative])[stops] - before
    targets = before[:, None] + quantiles[None, :] * column_weight[:, None] - 1e-9
    positions = np.searchsorted(cumulative, targets, side="left")
    return np.clip(positions, starts[:, None], np.maximum(stops - 1, starts)[:, None])


def non_zero_entries(matrix) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, column, value) of the non-zero entries of a dense or CSR block, row-major."""
    if sp.issparse(matrix):
        csr = sp.csr_matrix(matrix)
        rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
        keep = csr.data != 0
        return rows[keep], csr.indices[keep].astype(np.int64), csr.data[keep]
    dense = np.asarray(matrix, dtype=np.float64)
    rows, columns = np.nonzero(dense)
    return rows, columns.astype(np.int64), dense[rows, columns]


def bin_codes(values: np.ndarray, columns: np.ndarray, cuts: np.ndarray, chunk: int = 1 << 20) -> np.ndarray:
    """Codes 1..bins-1 of non-zero ``values`` of features ``columns`` (note 1)."""
    codes = np.empty(values.size, dtype=np.int64)
    for start in range(0, values.size, chunk):
        part = slice(start, start + chunk)
        codes[part] = 1 + (values[part, None] >= cuts[columns[part]]).sum(axis=1)
    return codes


def not_codes(values: np.ndarray, bins: int) -> np.ndarray:
    """Which ``values`` are not integer codes in [0, bins) (``discretization="none"``)."""
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(values) | (values != np.round(values)) | (values < 0) | (values >= bins)


def not_a_code_message(feature: int, value: float, bins: int) -> str:
    return (f"feature {int(feature)} has the value {float(value)!r}: with discretization='none' every value must be "
            f"an integer code in [0, {bins}) (raise 'bins', or use discretization='equal-frequency')")


def given_codes(values: np.ndarray, columns: np.ndarray, bins: int) -> np.ndarray:
    """``discretization="none"``: the values themselves as codes; the first value that is not an
    integer in [0, bins) raises ``ValueError`` naming its feature."""
    bad = not_codes(values, bins)
    if bad.any():
        first = int(np.argmax(bad))
        raise ValueError(not_a_code_message(columns[first], values[first], bins))
    return values.astype(np.int64)


def mutual_information(table: np.ndarray) -> np.ndarray:
    """I of the joint counts ``table`` (..., A, B) over its last two axes, in nats (eq. MI)."""
    counts = np.asarray(table, dtype=np.float64)
    total = counts.sum(axis=(-2, -1), keepdims=True)
    rows, columns = counts.sum(axis=-1, keepdims=True), counts.sum(axis=-2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(counts > 0, counts * np.log(counts * total / (rows * columns)), 0.0)
    return terms.sum(axis=(-2, -1)) / total[..., 0, 0]


def relevance_table(non_zero_counts: np.ndarray, class_totals: np.ndarray) -> np.ndarray:
    """(p, bins, C) counts of code x class, code 0 from the class totals (note 2)."""
    counts = np.asarray(non_zero_counts)
    zero = np.asarray(class_totals)[None, :] - counts.sum(axis=1)
    return np.concatenate([zero[:, None, :], counts], axis=1)


def step_information(non_zero_joint: np.ndarray, selected_table: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(I(X_j; X_s), I(X_j; Y | X_s)) of candidates j from their joint counts with the selected s.

    ``non_zero_joint``: (m, bins - 1, bins, C) counts of (code of j >= 1, code of s, class);
    ``selected_table``: (bins, C) counts of (code of s, class) over all rows (note 2). The same
    numbers as :func:`pair_step_information` (which it calls) on the same counts."""
    joint = np.asarray(non_zero_joint)
    pairs = joint[:, :, 1:, :]
    keys = np.flatnonzero(pairs)
    return pair_step_information(keys, pairs.ravel()[keys], joint.sum(axis=2), selected_table)


def _information_terms(counts, numerator, denominator) -> np.ndarray:
    """counts * ln(counts * numerator / denominator) of each cell, 0 where the count is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counts > 0, counts * np.log(counts * numerator / denominator), 0.0)


def pair_step_information(pair_keys: np.ndarray, pair_counts: np.ndarray, non_zero_table: np.ndarray,
                          selected_table: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(I(X_j; X_s), I(X_j; Y | X_s)) of every feature j (eqs. MI and CMI), visiting only the cells
    of the (code of j, code of s, class) tables that can be non-zero.

    ``pair_keys``, ``pair_counts``: the sorted distinct flat indices into (p, bins - 1, bins - 1, C) of
    (j, code of j - 1, code of s - 1, class) over the rows where both codes are non-zero, and their
    counts; ``non_zero_table``: (p, bins - 1, C) counts of (code of j >= 1, class) over all rows
    (the relevance pass); ``selected_table``: (bins, C) counts of (code of s, class). The cells with
    a code 0 follow by subtraction (note 2), so a step needs only the rows where s is non-zero.
    Each cell's term is that of :func:`mutual_information` (so an exactly independent cell adds an
    exact 0), summed per feature in a fixed order: equal counts give equal bits."""
    non_zero = np.asarray(non_zero_table, dtype=np.float64)
    table_s = np.asarray(selected_table, dtype=np.float64)
    p, inner, C = non_zero.shape
    keys, pairs = np.asarray(pair_keys, dtype=np.int64), np.asarray(pair_counts, dtype=np.float64)
    cells, label = np.divmod(keys, C)  # cells: (j, code j, code s), classes summed
    feature_code, code_s = np.divmod(cells, inner)  # feature_code: j * inner + code j
    feature = feature_code // inner
    size = p * inner * C
    s_zero = non_zero - np.bincount(feature_code * C + label, pairs, size).reshape(p, inner, C)
    j_zero = table_s[None, 1:] - np.bincount((feature * inner + code_s) * C + label, pairs, size).reshape(p, inner, C)
    both_zero = table_s[None, 0] - s_zero.sum(axis=1)  # (p, C)
    first = np.ones(cells.size, dtype=bool)  # the keys are sorted: a cell's classes are consecutive
    np.not_equal(cells[1:], cells[:-1], out=first[1:])
    cell_of_pair = np.cumsum(first) - 1
    pair_js = np.bincount(cell_of_pair, pairs)
    cell_feature, cell_j, cell_s = feature[first], feature_code[first], code_s[first]
    s_zero_js, j_zero_js, both_zero_js = s_zero.sum(axis=2), j_zero.sum(axis=2), both_zero.sum(axis=1)
    total, n_s = table_s.sum(), table_s.sum(axis=1)
    n_j = non_zero.sum(axis=2)  # (p, bins - 1); code 0: n_j0
    n_j0 = total - n_j.sum(axis=1)
    pair_js_terms = _information_terms(pair_js, total, n_j.ravel()[cell_j] * n_s[1 + cell_s])
    redundancy = (np.bincount(cell_feature, pair_js_terms, p)
                  + _information_terms(s_zero_js, total, n_j * n_s[0]).sum(axis=1)
                  + _information_terms(j_zero_js, total, n_j0[:, None] * n_s[None, 1:]).sum(axis=1)
                  + _information_terms(both_zero_js, total, n_j0 * n_s[0]))
    pair_terms = _information_terms(pairs, n_s[1 + code_s], pair_js[cell_of_pair] * table_s[1 + code_s, label])
    flat = (p, inner * C)  # (code, class) cells of a feature in one axis: one reduction per feature
    s_zero_terms = _information_terms(s_zero, n_s[0], s_zero_js[:, :, None] * table_s[None, None, 0])
    j_zero_terms = _information_terms(j_zero, n_s[None, 1:, None], j_zero_js[:, :, None] * table_s[None, 1:, :])
    conditional = (np.bincount(feature, pair_terms, p) + s_zero_terms.reshape(flat).sum(axis=1)
                   + j_zero_terms.reshape(flat).sum(axis=1)
                   + _information_terms(both_zero, n_s[0], both_zero_js[:, None] * table_s[None, 0]).sum(axis=1))
    return redundancy / total, conditional / total


@dataclass
class GreedyResult:
    order: List[int]  # the selected features, in the order they were chosen
    criterion: List[float]  # the criterion of each when it was chosen (relevance for the first)
    tied_steps: int = 0
    #: per position of ``order``: how many candidates had the winning criterion (1: no tie)
    tie_sizes: List[int] = field(default_factory=list)
    info: dict = field(default_factory=dict)


def _pick(scores: np.ndarray, relevance: np.ndarray, candidates: np.ndarray) -> Tuple[int, int]:
    """The best candidate by (score, relevance, lower index) and how many candidates had its score
    (to rounding: within :data:`TIE_RELATIVE_TOLERANCE` of the largest absolute finite score)."""
    values = scores[candidates]
    best = np.max(values)
    finite = values[np.isfinite(values)]
    tolerance = TIE_RELATIVE_TOLERANCE * (float(np.abs(finite).max()) if finite.size else 0.0)
    tied = candidates[values >= best - tolerance] if np.isfinite(best) else candidates[values == best]
    if tied.size == 1:
        return int(tied[0]), 1
    top_relevance = np.max(relevance[tied])
    return int(tied[relevance[tied] == top_relevance][0]), int(tied.size)


#: mRMR (difference form) runs first among the max(PRUNED_MIN, PRUNED_PER_SELECTED x k) features
#: of largest relevance, growing PRUNED_GROWTH-fold while that is not provably the full run
#: (:func:`exact_among`; docs/information.md).
PRUNED_MIN, PRUNED_PER_SELECTED, PRUNED_GROWTH = 2000, 4, 4


def mrmr_candidate_count(num_features: int, num_select: int) -> int:
    """Features of largest relevance mRMR (difference form) first runs among: max(PRUNED_MIN,
    PRUNED_PER_SELECTED x num_select), at most every feature."""
    return min(int(num_features), max(PRUNED_MIN, PRUNED_PER_SELECTED * int(num_select)))


def cmim_candidate_order(given_first, first: int):
    """CMIM's bound and the order its candidates are taken in: ``given_first[j]`` = I(X_j; Y |
    X_first) of every feature, for the first feature chosen (the most relevant). From the second
    step on, every criterion min over chosen s of I(X_j; Y | X_s) is at most it (``first`` is among
    the chosen), so it bounds the criterion of a feature left out; ``first`` comes first (the
    greedy starts there), then the others by decreasing bound (ties by lower index).
    Returns (bound, order)."""
    bound = np.asarray(given_first, dtype=np.float64).copy()
    bound[int(first)] = np.inf
    return bound, np.argsort(-bound, kind="mergesort")


def exact_among(criterion_values, outside_relevance: float, forced: int = 1) -> bool:
    """Whether a greedy run among candidates is the run over every feature: each step's chosen
    criterion (the first pick, by relevance, aside) beats, beyond rounding
    (:data:`TIE_RELATIVE_TOLERANCE`), ``outside_relevance``, the largest bound left out, which no
    left-out feature's criterion exceeds: its relevance for mRMR in the difference form
    (relevance - mean redundancy <= relevance, as mutual information is >= 0), its information
    given the first feature for CMIM (:func:`cmim_candidate_order`). The first ``forced`` choices
    are not compared: the first pick by relevance, or the features the search started from."""
    values = np.asarray(criterion_values[max(int(forced), 1):], dtype=np.float64)
    margin = TIE_RELATIVE_TOLERANCE * np.maximum(np.abs(values), abs(outside_relevance))
    return bool(np.all(values - margin > outside_relevance))


def greedy_selection(relevance: np.ndarray, step_terms: Callable[[int], Tuple[np.ndarray, np.ndarray]],
                     num_select: int, criterion: str, form: str = "difference",
                     advance: Callable[[], None] = lambda: None, start: Sequence[int] = (),
                     excluded: Sequence[int] = ()) -> GreedyResult:
    """Forward selection of ``num_select`` features by ``criterion`` (note 4).

    ``relevance``: I(X_j; Y) of every feature; ``step_terms(s)``: (I(X_j; X_s), I(X_j; Y | X_s))
    of every feature j given the newly selected s (one pass each); ``advance`` after each step.
    ``start``: features chosen before the search (kept by the user, in this order; their criterion
    is recorded as their relevance), so the next one is chosen given them; ``excluded``: features
    never chosen. The search stops early when no candidate is left."""
    if criterion not in CRITERIA or form not in MRMR_FORMS:
        raise ValueError(f"criterion must be one of {CRITERIA} and form one of {MRMR_FORMS}")
    relevance = np.asarray(relevance, dtype=np.float64)
    num_features = relevance.size
    chosen = np.zeros(num_features, dtype=bool)
    chosen[np.asarray(excluded, dtype=np.int64)] = True  # never a candidate
    redundancy_sum, jmi_sum = np.zeros(num_features), np.zeros(num_features)
    cmim_min = np.full(num_features, np.inf)
    result = GreedyResult(order=[int(j) for j in start], criterion=[float(relevance[j]) for j in start],
                          tie_sizes=[1] * len(start))
    chosen[result.order] = True
    if not result.order and not chosen.all():
        first, tied = _pick(relevance, relevance, np.flatnonzero(~chosen))
        result.order, result.criterion, result.tied_steps, result.tie_sizes = ([first], [float(relevance[first])],
                                                                               int(tied > 1), [tied])
        chosen[first] = True
    for _ in result.order:
        advance()
    absorbed = 0  # the chosen features whose terms are in the running sums
    while len(result.order) < min(num_select, num_features) and not chosen.all():
        for last in result.order[absorbed:]:
            redundancy, conditional = step_terms(last)
            redundancy_sum += redundancy
            jmi_sum += relevance[last] + conditional
            cmim_min = np.minimum(cmim_min, conditional)
        absorbed = len(result.order)
        if criterion == "mrmr":
            mean_redundancy = redundancy_sum / len(result.order)
            if form == "difference":
                scores = relevance - mean_redundancy
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    scores = np.where(mean_redundancy > 0, relevance / mean_redundancy, np.inf)
        else:
            scores = jmi_sum if criterion == "jmi" else cmim_min
        best, tied = _pick(scores, relevance, np.flatnonzero(~chosen))
        chosen[best] = True
        result.order.append(best)
        result.criterion.append(float(scores[best]))
        result.tied_steps += int(tied > 1)
        result.tie_sizes.append(tied)
        advance()
    return result


def order_scores(order: List[int], num_features: int) -> np.ndarray:
    """Scores that rank the selection order first: m, m-1, ..., 1 for the m chosen, 0 for the rest."""
    scores = np.zeros(num_features)
    scores[np.asarray(order, dtype=np.int64)] = np.arange(len(order), 0, -1, dtype=np.float64)
    return scores
