"""mRMR, JMI and CMIM on Spark (:mod:`sparkfs.core.information`): counts of discretised features.

Passes, each over the prepared rows (:class:`sparkfs.spark.rows.Rows`, plain layout: the counts are
integers, so they are the same for any partitioning without the canonical order):

* the cut points (``discretization="equal-frequency"``): one sample pass (``binSampleSize`` rows
  drawn by content and ``seed``, the same rows for any partitioning), cut points on the driver;
* relevance: one pass counting (feature, code >= 1, class) over the non-zero entries;
* each greedy step: one pass counting (feature j, code of j >= 1, code of the last selected
  feature, class) over the non-zero entries; the rest follows by subtraction (core note 2).

A pass's summary is a dense count array when it has at most :data:`DENSE_COUNT_CELLS` cells, else
the sorted distinct keys with their counts (a term matrix: only the pairs that occur).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Optional

import numpy as np

from sparkfs.core import information as info_math
from sparkfs.core.options import InformationOptions
from sparkfs.errors import InvalidInputError
from sparkfs.progress import steps
from sparkfs.spark.method_setup import EngineOptions, options_of
from sparkfs.spark.rows import Rows

#: Count arrays up to this many cells travel dense (int64); larger ones as distinct keys + counts.
DENSE_COUNT_CELLS = 1 << 23
#: Candidates per chunk of the driver-side information of a step (bounds its (m, B, B, C) arrays).
STEP_CHUNK_CELLS = 1 << 22


@dataclass
class InformationResult:
    order: list
    criterion: list
    relevance: np.ndarray
    tied_steps: int
    num_rows: int
    info: Dict[str, object] = field(default_factory=dict)


def _counted(keys: np.ndarray, num_cells: int) -> Dict[str, np.ndarray]:
    if num_cells <= DENSE_COUNT_CELLS:
        return {"dense": np.bincount(keys, minlength=num_cells).astype(np.int64)}
    distinct, counts = np.unique(keys, return_counts=True)
    return {"keys": distinct.astype(np.int64), "counts": counts.astype(np.int64)}


def _merge_counts(left, right):
    bad = _first_bad(left, right)
    if "dense" in left:
        return {"dense": left["dense"] + right["dense"], **bad}
    keys = np.concatenate([left["keys"], right["keys"]])
    distinct, inverse = np.unique(keys, return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate([left["counts"], right["counts"]]).astype(np.float64))
    return {"keys": distinct, "counts": np.rint(counts).astype(np.int64), **bad}


def _first_bad(left, right) -> Dict[str, np.ndarray]:
    """The smallest (feature, value) that is not a code, of either summary (none: {})."""
    found = [(float(s["bad"][0]), float(s["bad"][1])) for s in (left, right) if "bad" in s]
    return {"bad": np.asarray(min(found))} if found else {}


def _dense_range(summary, start: int, stop: int) -> np.ndarray:
    """Cells [start, stop) of a count summary as a dense int64 array."""
    if summary is None:
        return np.zeros(stop - start, dtype=np.int64)
    if "dense" in summary:
        return summary["dense"][start:stop]
    keys, counts = summary["keys"], summary["counts"]
    low, high = np.searchsorted(keys, [start, stop])
    cells = np.zeros(stop - start, dtype=np.int64)
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
                          options: Optional[InformationOptions] = None, engine: Optional[EngineOptions] = None,
                          **settings) -> InformationResult:
    """The greedy selection of ``options.num_select`` features (``label_col`` holds class indices
    0..C-1). ``options``: :class:`sparkfs.core.options.InformationOptions` (or its fields and those
    of ``engine`` as keywords). The counts need no canonical layout (integer sums): the engine's
    ``canonical`` is not used."""
    options, engine = options_of(InformationOptions, options, engine, settings, "information_selection")
    p, B, C = int(num_features), int(options.bins), int(num_classes)
    with Rows(df, features_col, num_features=p, label_col=label_col, num_classes=C, row_id_col=engine.row_id_col,
              transport=engine.transport, driver_budget_mb=engine.driver_budget_mb, canonical=False,
              fewer_rows_hint="lower binSampleSize") as rows:
        class_totals = np.asarray(rows.class_counts, dtype=np.int64)
        cuts = np.zeros((p, 0))
        if options.discretization == "equal-frequency":
            cuts = info_math.equal_frequency_cuts(rows.sample(options.sample_size, options.seed).matrix, B)
        with rows.shipped(cuts) as shipped:  # the cuts stay in the tasks for every pass of the selection
            return _greedy_selection(rows, shipped, class_totals, num_select=options.num_select,
                                     criterion=options.criterion, form=options.form, bins=B,
                                     discretization=options.discretization)


def _greedy_selection(rows: Rows, shipped, class_totals: np.ndarray, *, num_select: int, criterion: str, form: str,
                      bins: int, discretization: str) -> InformationResult:
    """The relevance pass, then one joint-count pass per greedy step (``shipped``: the cuts)."""
    p, B, C = rows.num_features, int(bins), rows.num_classes
    relevance_cells = p * (B - 1) * C

    def relevance_block(block):
        entries, columns, codes, bad = _codes_of(block, shipped, B, discretization)
        keep = codes > 0
        keys = (columns[keep] * (B - 1) + codes[keep] - 1) * C + block.labels[entries[keep]]
        return {**_counted(keys, relevance_cells), **({"bad": np.asarray(bad, dtype=np.float64)} if bad else {})}

    summary = rows.run_pass("relevance", relevance_block, _merge_counts, scaled=False)
    if summary is not None and "bad" in summary:
        raise InvalidInputError(info_math.not_a_code_message(summary["bad"][0], summary["bad"][1], B))
    counts = _dense_range(summary, 0, relevance_cells)
    relevance_tables = info_math.relevance_table(counts.reshape(p, B - 1, C), class_totals)
    relevance = info_math.mutual_information(relevance_tables)
    joint_cells = p * (B - 1) * B * C

    def step_terms(selected: int):
        def joint_block(block):
            entries, columns, codes, _ = _codes_of(block, shipped, B, discretization)
            column = block.matrix[:, selected]
            column = np.asarray(column.todense() if hasattr(column, "todense") else column, dtype=np.float64)
            selected_codes = np.zeros(column.size, dtype=np.int64)
            rows_s = np.flatnonzero(column.ravel())
            if rows_s.size:
                selected_codes[rows_s] = _codes_of_column(column.ravel()[rows_s], selected, shipped, B,
                                                          discretization)
            keep = codes > 0
            keys = (((columns[keep] * (B - 1) + codes[keep] - 1) * B + selected_codes[entries[keep]]) * C
                    + block.labels[entries[keep]])
            return _counted(keys, joint_cells)

        summary = rows.run_pass(None, joint_block, _merge_counts, scaled=False)
        return _step_information(summary, relevance_tables[selected], p, B, C)

    progress = steps(criterion, num_select)
    result = info_math.greedy_selection(relevance, step_terms, num_select, criterion, form,
                                        advance=progress.advance)
    rows.info["passes"].append(f"{max(len(result.order) - 1, 0)} greedy steps")
    return InformationResult(order=result.order, criterion=result.criterion, relevance=relevance,
                             tied_steps=result.tied_steps, num_rows=int(class_totals.sum()),
                             info={"passes": list(rows.info["passes"]),
                                   "bins_used": _bins_used(relevance_tables)})


def _codes_of_column(values, feature: int, shipped, bins: int, discretization: str) -> np.ndarray:
    if discretization == "none":
        return values.astype(np.int64)  # checked by the relevance pass
    return info_math.bin_codes(values, np.full(values.size, feature, dtype=np.int64), shipped.value)


def _step_information(summary, selected_table, p: int, B: int, C: int):
    """(I(X_j; X_s), I(X_j; Y | X_s)) of every feature, in chunks of candidates."""
    per_feature = (B - 1) * B * C
    chunk = max(1, STEP_CHUNK_CELLS // (B * B * C))
    redundancy, conditional = np.empty(p), np.empty(p)
    for start in range(0, p, chunk):
        stop = min(p, start + chunk)
        joint = _dense_range(summary, start * per_feature, stop * per_feature).reshape(stop - start, B - 1, B, C)
        redundancy[start:stop], conditional[start:stop] = info_math.step_information(joint, selected_table)
    return redundancy, conditional


def _bins_used(relevance_tables: np.ndarray) -> Dict[str, float]:
    used = (relevance_tables.sum(axis=2) > 0).sum(axis=1)
    return {"min": int(used.min()), "median": float(np.median(used)), "max": int(used.max())}
