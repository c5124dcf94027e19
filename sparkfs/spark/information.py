"""mRMR, JMI and CMIM on Spark (:mod:`sparkfs.core.information`): counts of discretised features.

Passes (:class:`sparkfs.spark.rows.Rows`, plain layout: the counts are integers, so they are the
same for any partitioning without the canonical order):

* the cut points (``discretization="equal-frequency"``): one sample pass (``binSampleSize`` rows
  drawn by content and ``seed``, the same rows for any partitioning), cut points on the driver;
* the codes: one pass that discretises every block once and keeps its codes persisted for the
  fit (:meth:`Rows.encode_blocks`; uint8 codes, a dense matrix when most entries are non-zero,
  else CSR of the non-zero codes; released with the rows, also on failure). Every later pass
  reads only these codes, not the vector column: a step no longer converts and re-bins the rows;
* relevance: one pass over the codes counting (feature, code >= 1, class);
* each greedy step: one pass over the codes counting (feature j, code of j >= 1, code of the last
  selected feature s >= 1, class) over the rows where s is non-zero only; the cells with a code 0
  follow by subtraction from the relevance counts and s's own table
  (:func:`sparkfs.core.information.pair_step_information`), which visits only those cells.

A pass's summary is a dense count array when it has at most :data:`DENSE_COUNT_CELLS` cells, else
the sorted distinct keys with their counts (a term matrix: only the pairs that occur).

With instance weights (``weight_col``, frequency weights: note 6 of :mod:`sparkfs.core.information`)
every count is a float64 sum of the rows' weights, the relevance pass also sums each class's
weight, and the cut points are the sample's weighted quantiles; the same passes. Integer weights
sum exactly, so their counts are those of the rows repeated w times for any partitioning; other
weights agree across partitionings to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional, Sequence

import numpy as np

from sparkfs.core import information as info_math
from sparkfs.core.options import InformationOptions
from sparkfs.errors import InvalidInputError
from sparkfs.progress import steps
from sparkfs.spark.method_setup import EngineOptions, options_of
from sparkfs.spark.rows import Rows

#: A pass's counts travel dense (int64) up to this many cells, else as distinct keys + counts.
DENSE_COUNT_CELLS = 1 << 20
#: A block keeps its codes as a dense uint8 matrix when more than this share of its entries is
#: non-zero, else as CSR (row pointers, uint16/int32 columns, uint8 codes of the non-zero entries).
DENSE_CODES_SHARE = 0.25


@dataclass
class InformationResult:
    order: list
    criterion: list
    relevance: np.ndarray
    tied_steps: int
    num_rows: int
    tie_sizes: list = field(default_factory=list)
    info: Dict[str, object] = field(default_factory=dict)


def _packed(cells: np.ndarray) -> Dict[str, np.ndarray]:
    """Dense counts (int64, or float64 weight sums) as a summary: dense when small, else the non-zero
    cells (keys, counts)."""
    cells = cells.astype(np.float64 if cells.dtype.kind == "f" else np.int64, copy=False)
    if cells.size <= DENSE_COUNT_CELLS:
        return {"dense": cells}
    keys = np.flatnonzero(cells)
    return {"keys": keys.astype(np.int64), "counts": cells[keys]}


def _counted(keys: np.ndarray, num_cells: int, weights: Optional[np.ndarray] = None) -> Dict[str, np.ndarray]:
    """The count summary of ``keys`` (cells in [0, num_cells)), each key counting its weight when
    ``weights`` are given: by bincount when the keys are many for the cells, else by sorting only
    the keys."""
    if num_cells <= DENSE_COUNT_CELLS or 4 * keys.size >= num_cells:
        return _packed(np.bincount(keys, weights=weights, minlength=num_cells))
    if weights is None:
        distinct, counts = np.unique(keys, return_counts=True)
        return {"keys": distinct.astype(np.int64), "counts": counts.astype(np.int64)}
    distinct, inverse = np.unique(keys, return_inverse=True)
    return {"keys": distinct.astype(np.int64), "counts": np.bincount(inverse, weights=weights)}


def _merge_counts(left, right):
    bad = _first_bad(left, right)
    if "class_weights" in left:  # the relevance pass of weighted rows
        bad["class_weights"] = left["class_weights"] + right["class_weights"]
    if "dense" in left:
        return {"dense": left["dense"] + right["dense"], **bad}
    keys = np.concatenate([left["keys"], right["keys"]])
    distinct, inverse = np.unique(keys, return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate([left["counts"], right["counts"]]).astype(np.float64))
    if left["counts"].dtype.kind == "f":  # weight sums
        return {"keys": distinct, "counts": counts, **bad}
    return {"keys": distinct, "counts": np.rint(counts).astype(np.int64), **bad}


def _first_bad(left, right) -> Dict[str, np.ndarray]:
    """The smallest (feature, value) that is not a code, of either summary (none: {})."""
    found = [(float(s["bad"][0]), float(s["bad"][1])) for s in (left, right) if "bad" in s]
    return {"bad": np.asarray(min(found))} if found else {}


def _dense_range(summary, start: int, stop: int) -> np.ndarray:
    """Cells [start, stop) of a count summary as a dense array (int64, or float64 weight sums)."""
    if summary is None:
        return np.zeros(stop - start, dtype=np.int64)
    if "dense" in summary:
        return summary["dense"][start:stop]
    keys, counts = summary["keys"], summary["counts"]
    low, high = np.searchsorted(keys, [start, stop])
    cells = np.zeros(stop - start, dtype=counts.dtype)
    cells[keys[low:high] - start] = counts[low:high]
    return cells


def _codes_of(block, shipped, bins: int, discretization: str):
    """(row, column, code) of the block's non-zero entries; with ``discretization="none"`` a value
    that is no code gets code 0 (not counted) and the smallest such (feature, value) comes fourth."""
    rows, columns, values = info_math.non_zero_entries(block.matrix)
    if discretization != "none":
        return rows, columns, info_math.bin_codes(values, columns, shipped.value), None
    bad = info_math.not_codes(values, bins)
    first = None
    if bad.any():
        first = min(zip(columns[bad].tolist(), values[bad].tolist()))
        values = np.where(bad, 0.0, values)
    return rows, columns, values.astype(np.int64), first


def information_selection(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                          options: Optional[InformationOptions] = None,
                          engine: Optional[EngineOptions] = None, keep: Sequence[int] = (),
                          exclude: Sequence[int] = ()) -> InformationResult:
    """The greedy selection of ``options.num_select`` features (``label_col`` holds class indices
    0..C-1). ``options``: :class:`sparkfs.core.options.InformationOptions`; ``engine``:
    :class:`sparkfs.spark.method_setup.EngineOptions` (its ``weight_col``: frequency weights). The
    counts need no canonical layout (integer sums; weight sums agree to rounding): the engine's
    ``canonical`` is not used. ``keep``: features the greedy starts from (chosen first, in this
    order); ``exclude``: features it never chooses."""
    options, engine = options_of(InformationOptions, options, engine)
    p, B, C = int(num_features), int(options.bins), int(num_classes)
    with Rows(df, features_col, num_features=p, label_col=label_col, num_classes=C, row_id_col=engine.row_id_col,
              weight_col=engine.weight_col, transport=engine.transport, driver_budget_mb=engine.driver_budget_mb,
              canonical=False, fewer_rows_hint="lower binSampleSize") as rows:
        class_totals = np.asarray(rows.class_counts, dtype=np.int64)
        cuts = np.zeros((p, 0))
        if options.discretization == "equal-frequency":
            sample = rows.sample(options.sample_size, options.seed)
            cuts = info_math.equal_frequency_cuts(sample.matrix, B, sample.weights)
        # the cuts stay shipped while the codes are cached: a lost cached block is recomputed from them
        with rows.shipped(cuts) as shipped:
            encoded = rows.encode_blocks("codes (cached)", lambda block: _encoded_codes(
                block, shipped, B, options.discretization, p), scaled=False)
            return _greedy_selection(rows, encoded, class_totals, num_select=options.num_select,
                                     criterion=options.criterion, form=options.form, bins=B,
                                     keep=np.asarray(keep, dtype=np.int64), exclude=np.asarray(exclude, dtype=np.int64))


def _encoded_codes(block, shipped, bins: int, discretization: str, num_features: int) -> Dict[str, np.ndarray]:
    """A block's codes as every later pass reads them: ``codes`` (rows, p) uint8 when most entries
    are non-zero, else CSR of the non-zero codes (``indptr``, ``indices``, ``codes``); ``labels``;
    ``bad``, the smallest (feature, value) that is no code (``discretization="none"``)."""
    rows, columns, codes, bad = _codes_of(block, shipped, bins, discretization)
    keep = codes > 0
    rows, columns, codes = rows[keep], columns[keep], codes[keep].astype(np.uint8)
    count = block.labels.size
    encoded = {"labels": block.labels.astype(np.int64)}
    if block.weights is not None:
        encoded["weights"] = np.asarray(block.weights, dtype=np.float64)
    if bad:
        encoded["bad"] = np.asarray(bad, dtype=np.float64)
    if codes.size > DENSE_CODES_SHARE * count * num_features:
        dense = np.zeros((count, num_features), dtype=np.uint8)
        dense[rows, columns] = codes
        encoded["codes"] = dense
        return encoded
    encoded["indptr"] = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=count))]).astype(np.int64)
    encoded["indices"] = columns.astype(np.uint16 if num_features <= 1 << 16 else np.int32)
    encoded["codes"] = codes
    return encoded


def _relevance_counts(encoded, p: int, B: int, C: int) -> Dict[str, np.ndarray]:
    """Counts of (feature, code >= 1, class) of one encoded block, flat over (p, B - 1, C); of
    weighted rows their weight sums, and each class's weight (``class_weights``)."""
    labels, codes, weights = encoded["labels"], encoded["codes"], encoded.get("weights")
    extra = {"bad": encoded["bad"]} if "bad" in encoded else {}
    if weights is not None:
        extra["class_weights"] = np.bincount(labels, weights=weights, minlength=C)
    if "indptr" not in encoded:  # dense codes: code 0 counted too, then dropped
        keys = ((np.arange(p, dtype=np.int64) * B)[None, :] + codes) * C + labels[:, None]
        key_weights = None if weights is None else np.repeat(weights, p)
        cells = np.bincount(keys.ravel(), weights=key_weights, minlength=p * B * C).reshape(p, B, C)[:, 1:, :]
        return {**_packed(np.ascontiguousarray(cells).ravel()), **extra}
    row_of_entry = np.repeat(np.arange(labels.size), np.diff(encoded["indptr"]))
    keys = (encoded["indices"].astype(np.int64) * (B - 1) + codes - 1) * C + labels[row_of_entry]
    return {**_counted(keys, p * (B - 1) * C, None if weights is None else weights[row_of_entry]), **extra}


def _step_counts(encoded, selected: int, candidate_slot: np.ndarray, B: int, C: int) -> Dict[str, np.ndarray]:
    """Counts of (candidate j, code of j >= 1, code of ``selected`` >= 1, class) of one encoded
    block, flat over (candidates, B - 1, B - 1, C): only the rows where the selected feature is
    non-zero. ``candidate_slot`` maps each feature to its slot among the candidates (-1: not one)."""
    labels, codes, inner, weights = encoded["labels"], encoded["codes"], B - 1, encoded.get("weights")
    candidates = np.flatnonzero(candidate_slot >= 0)
    m = candidates.size
    if "indptr" not in encoded:  # dense codes: code 0 of j counted too, then dropped
        selected_codes = codes[:, selected]
        rows_s = np.flatnonzero(selected_codes)
        row_part = (selected_codes[rows_s].astype(np.int64) - 1) * C + labels[rows_s]
        block = codes[rows_s] if m == candidate_slot.size else codes[np.ix_(rows_s, candidates)]
        keys = ((np.arange(m, dtype=np.int64) * B)[None, :] + block) * (inner * C) + row_part[:, None]
        key_weights = None if weights is None else np.repeat(weights[rows_s], m)
        cells = np.bincount(keys.ravel(), weights=key_weights, minlength=m * B * inner * C)
        return _packed(np.ascontiguousarray(cells.reshape(m, B, inner * C)[:, 1:, :]).ravel())
    indptr, indices = encoded["indptr"], encoded["indices"]
    hits = np.flatnonzero(indices == selected)
    rows_s = np.searchsorted(indptr, hits, side="right") - 1
    starts, lengths = indptr[rows_s], indptr[rows_s + 1] - indptr[rows_s]
    positions = np.repeat(starts - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
    row_part = np.repeat((codes[hits].astype(np.int64) - 1) * C + labels[rows_s], lengths)
    slots = candidate_slot[indices[positions]]
    kept = slots >= 0
    keys = (slots[kept].astype(np.int64) * inner + codes[positions[kept]] - 1) * (inner * C) + row_part[kept]
    key_weights = None if weights is None else np.repeat(weights[rows_s], lengths)[kept]
    return _counted(keys, m * inner * inner * C, key_weights)


def _greedy_selection(rows: Rows, encoded, class_totals: np.ndarray, *, num_select: int, criterion: str, form: str,
                      bins: int, keep: np.ndarray, exclude: np.ndarray) -> InformationResult:
    """The relevance pass, then one joint-count pass per greedy step, all over the cached codes.

    Two criteria run first among a part of the features, with a bound proving the run is the one
    over every feature (docs/information.md): mRMR in the difference form among the
    :func:`sparkfs.core.information.mrmr_candidate_count` features of largest relevance (a
    criterion is at most the relevance), CMIM among the first feature and as many of largest
    I(X_j; Y | X_first) (a criterion is a minimum over the chosen features, the first among them).
    When every step's choice beats the largest bound left out
    (:func:`sparkfs.core.information.exact_among`) the run is exact; else the candidates grow (x4)
    and the run starts again. JMI and the quotient form have no such bound: every feature is a
    candidate. The features kept are candidates in every round (the search starts from them), the
    excluded in none; with either, CMIM has no bound (it is one given the most relevant feature,
    which then need not be chosen first)."""
    p, B, C = rows.num_features, int(bins), rows.num_classes
    relevance_cells = p * (B - 1) * C
    summary = rows.run_pass("relevance", lambda codes: _relevance_counts(codes, p, B, C), _merge_counts,
                            scaled=False, over=encoded)
    if summary is not None and "bad" in summary:
        raise InvalidInputError(info_math.not_a_code_message(summary["bad"][0], summary["bad"][1], B))
    non_zero_table = _dense_range(summary, 0, relevance_cells).reshape(p, B - 1, C)
    num_rows = int(class_totals.sum())
    if summary is not None and "class_weights" in summary:  # weighted rows: every count a weight sum
        class_totals = summary["class_weights"]
        if not class_totals.any():
            raise InvalidInputError("the instance weights sum to zero: every row has weight 0, so no row counts")
    relevance_tables = info_math.relevance_table(non_zero_table, class_totals)
    relevance = info_math.mutual_information(relevance_tables)
    free = np.ones(p, dtype=bool)  # the features the search chooses among
    free[keep], free[exclude] = False, False
    count = info_math.mrmr_candidate_count(p, num_select)
    bounded_cmim = (criterion == "cmim" and num_select > 2 and count < p  # else its full first step is waste
                    and not keep.size and not exclude.size)
    bounded = (criterion == "mrmr" and form == "difference") or bounded_cmim
    if not bounded:
        count = p
    known_terms = None  # the first step's terms over every feature (CMIM's bound), reused by every round
    if bounded_cmim:
        first = int(np.argmax(relevance))
        known_terms = (first, *_step_information(rows, encoded, first, np.arange(p), non_zero_table,
                                                 relevance_tables, B))
        bound, by_bound = info_math.cmim_candidate_order(known_terms[2], first)
    else:
        bound, by_bound = relevance, np.argsort(-relevance, kind="mergesort")
    by_bound = by_bound[free[by_bound]]
    rounds = []
    while True:
        candidates = np.sort(np.concatenate([keep, by_bound[:count]]))
        result = _greedy_among(rows, encoded, candidates, relevance, non_zero_table, relevance_tables,
                               num_select=num_select, criterion=criterion, form=form, bins=B,
                               known_terms=known_terms, start=np.searchsorted(candidates, keep))
        outside = float(bound[by_bound[count]]) if count < by_bound.size else -np.inf
        rounds.append(int(min(count, by_bound.size) + keep.size))
        if count >= by_bound.size or info_math.exact_among(result.criterion, outside, forced=keep.size):
            break
        count = min(by_bound.size, info_math.PRUNED_GROWTH * count)
    steps_run = sum(min(num_select, r) - 1 for r in rounds) + int(bounded_cmim) * (1 - len(rounds))
    rows.info["passes"].append(f"{steps_run} greedy steps")
    info = {"passes": list(rows.info["passes"]), "bins_used": _bins_used(relevance_tables)}
    if bounded:
        info["candidates"] = rounds[-1]
        info["candidate_rounds"] = rounds
        info["candidates_rule"] = ("every feature" if rounds[-1] >= by_bound.size + keep.size
                                   else CANDIDATE_RULES[criterion])
    return InformationResult(order=[int(candidates[j]) for j in result.order], criterion=result.criterion,
                             relevance=relevance, tied_steps=result.tied_steps, num_rows=num_rows,
                             tie_sizes=list(result.tie_sizes), info=info)


#: What the summary says of a bounded run that stayed among part of the features.
CANDIDATE_RULES = {
    "mrmr": ("the features of largest relevance; every step's choice beat the largest relevance left out, so the "
             "selection is the one over every feature"),
    "cmim": ("the first feature and those of largest information given it; every step's choice beat the largest "
             "such information left out, so the selection is the one over every feature"),
}


def _step_information(rows: Rows, encoded, selected: int, candidates: np.ndarray, non_zero_table, relevance_tables,
                      bins: int):
    """One step's pass: (I(X_j; X_selected), I(X_j; Y | X_selected)) of every j in ``candidates``
    (sorted feature indices)."""
    candidate_slot = np.full(rows.num_features, -1, dtype=np.int64)
    candidate_slot[candidates] = np.arange(candidates.size)
    num_classes = rows.num_classes   # not rows itself in the closure: it holds the session
    step = rows.run_pass(None, lambda codes: _step_counts(codes, selected, candidate_slot, bins, num_classes),
                         _merge_counts, scaled=False, over=encoded)
    keys, counts = _cells_of(step)
    return info_math.pair_step_information(keys, counts, non_zero_table[candidates], relevance_tables[selected])


def _greedy_among(rows: Rows, encoded, candidates: np.ndarray, relevance, non_zero_table, relevance_tables, *,
                  num_select: int, criterion: str, form: str, bins: int, known_terms=None, start=()):
    """The greedy search among ``candidates`` (sorted feature indices), one pass per step; its order
    holds positions in ``candidates``. ``known_terms``: (feature, its step's two terms over every
    feature) computed before, whose step then takes no pass; ``start``: the positions the search
    starts from."""
    def step_terms(position: int):
        if known_terms is not None and int(candidates[position]) == known_terms[0]:
            return known_terms[1][candidates], known_terms[2][candidates]
        return _step_information(rows, encoded, int(candidates[position]), candidates, non_zero_table,
                                 relevance_tables, bins)

    progress = steps(criterion, min(num_select, candidates.size))
    return info_math.greedy_selection(relevance[candidates], step_terms, num_select, criterion, form,
                                      advance=progress.advance, start=[int(j) for j in start])


def _cells_of(summary):
    """(keys, counts) of the non-zero cells of a count summary."""
    if summary is None:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if "dense" in summary:
        keys = np.flatnonzero(summary["dense"])
        return keys, summary["dense"][keys]
    return summary["keys"], summary["counts"]


def _bins_used(relevance_tables: np.ndarray) -> Dict[str, float]:
    used = (relevance_tables.sum(axis=2) > 0).sum(axis=1)
    return {"min": int(used.min()), "median": float(np.median(used)), "max": int(used.max())}
