"""Which loop settings should Lmba and Simba use by default? -- pure NumPy, no Spark.

Issue 23, item 2. On several sets of ``../shared/data`` (subsampled), with pure-noise probe
features added to each, this compares for both methods the papers' run (beta = 1 constant, one
pass, one instance per update, the last w) with decaying steps, several passes, iterate
averaging and their combinations (stage 1, batch 1), then the batch rules for the stage-1 winner
(stage 2). The criteria and the rule that picks the winner are written in ``CRITERIA`` (they go
into the report before any result) and applied by :func:`choose_setting` / :func:`choose_batch`.

Writes ``benchmarks/results/lmba_simba_defaults.md`` and ``.json``.

    OMP_NUM_THREADS=1 nice -n 10 /work/main/.venv/bin/python -m studies.lmba_simba_defaults_study
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Dict, List

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import KNeighborsClassifier

from benchmarks.common import RESULTS, load_npz
from sparkfs.core import margin_weighting as mw
from sparkfs.core import simba
from sparkfs.core.stability import kuncheva_stability, top_k_subsets

COMMAND = "OMP_NUM_THREADS=1 nice -n 10 python -m studies.lmba_simba_defaults_study"

MAX_ROWS = 250          # stratified subsample of larger sets
ORDERS = 5              # instance orders (seeds 0..4) for the stability criterion
FOLDS = 5
SEED = 0
LMBA_K, LMBA_C = 3, 1.0
SEVERAL_PASSES = 3

#: (file, note). Sets with classes of one row after subsampling lose those rows.
SETS = ("sonar", "ionosphere", "heart_statlog", "glass", "breast_w", "pima_diabetes", "german_credit",
        "waveform21", "segment", "splice", "mfeat", "madelon", "colon", "SRBCT")

#: Stage 1 (batch 1): name -> run settings (schedule, passes, averaging).
STAGE1 = {
    "paper (constant, 1 pass)": dict(schedule="constant", passes=1, averaging="none"),
    "decay, 1 pass": dict(schedule="decay", passes=1, averaging="none"),
    f"constant, {SEVERAL_PASSES} passes": dict(schedule="constant", passes=SEVERAL_PASSES, averaging="none"),
    f"decay, {SEVERAL_PASSES} passes": dict(schedule="decay", passes=SEVERAL_PASSES, averaging="none"),
    "constant, 1 pass, averaged": dict(schedule="constant", passes=1, averaging="iterates"),
    f"constant, {SEVERAL_PASSES} passes, averaged": dict(schedule="constant", passes=SEVERAL_PASSES,
                                                         averaging="iterates"),
    "decay, 1 pass, averaged": dict(schedule="decay", passes=1, averaging="iterates"),
    f"decay, {SEVERAL_PASSES} passes, averaged": dict(schedule="decay", passes=SEVERAL_PASSES, averaging="iterates"),
}
#: Stage 2: (name, batch_size or "pool/16", batch_rule), on the stage-1 winner.
STAGE2 = (("batch 1", 1, "replay"), ("replay, batch 8", 8, "replay"), ("sum, batch 8", 8, "sum"),
          ("replay, batch 32", 32, "replay"), ("replay, batch pool/16", "pool/16", "replay"))
#: Stage 2 tolerances against batch 1 (means over sets).
PROBE_TOLERANCE, STABILITY_TOLERANCE, ACCURACY_TOLERANCE = 0.02, 0.05, 0.01

CRITERIA = f"""\
**Criteria (fixed before the run).** For every set, method and setting:

1. **probes in the top k** -- the fraction of the top k that are probe features, averaged over
   {ORDERS} instance orders on the (subsampled) set (lower is better; chance level is the probes'
   share of all features);
2. **stability across instance orders** -- Kuncheva's index of the {ORDERS} top-k subsets of those runs
   (`sparkfs.core.stability.kuncheva_stability`, over all features, probes included; higher is better);
3. **1-NN accuracy with the top k** -- {FOLDS}-fold stratified CV (`StratifiedKFold(shuffle=True,
   random_state=0)`); selection on the training fold (instance order seed 0), probes included in the
   data; `KNeighborsClassifier(1)` on the top k columns (higher is better).

k = min(10, ceil(D / 3)) with D the set's real features.

**Rule for the default (stage 1, batch 1).** On every set, the settings are ranked on each criterion (1 = best,
ties share the mean rank); a setting's score is the mean over sets of its three ranks' mean. The setting
with the lowest score (Lmba and Simba scored separately) wins; if Lmba and Simba pick different settings,
each gets its own. **Rule for the batch (stage 2).** For the stage-1 winner: the largest batch whose mean (over
sets) probe fraction is at most batch 1's + {PROBE_TOLERANCE}, Kuncheva index at least batch 1's -
{STABILITY_TOLERANCE} and accuracy at least batch 1's - {ACCURACY_TOLERANCE}; between rules at the same batch,
the lower score of stage 1's kind. A larger batch means fewer Spark jobs (one per batch).
"""


def prepare(name: str, seed: int = SEED) -> dict:
    """Subsample (stratified) to MAX_ROWS, drop constant columns and classes of one row, range-scale,
    add probe features (permuted copies of random real columns: pure noise with the marginals of real
    features) and shuffle the column order (so that ties favour neither kind)."""
    X, y = load_npz(name, dense=True)
    n_original, d_original = X.shape
    rng = np.random.default_rng(seed)
    if X.shape[0] > MAX_ROWS:
        keep = []
        classes, counts = np.unique(y, return_counts=True)
        for label, count in zip(classes, counts):
            rows = np.flatnonzero(y == label)
            take = max(2, int(round(count * MAX_ROWS / y.size)))
            keep.append(rng.choice(rows, size=min(take, rows.size), replace=False))
        keep = np.sort(np.concatenate(keep))
        X, y = X[keep], y[keep]
    classes, counts = np.unique(y, return_counts=True)
    keep = np.isin(y, classes[counts >= FOLDS])
    X, y = X[keep], y[keep]
    X = X[:, X.max(axis=0) > X.min(axis=0)]
    X = (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    d_real = X.shape[1]
    n_probes = max(5, math.ceil(d_real / 3))
    sources = rng.choice(d_real, size=n_probes, replace=n_probes > d_real)
    probes = np.column_stack([X[rng.permutation(X.shape[0]), s] for s in sources])
    columns = rng.permutation(d_real + n_probes)
    data = np.hstack([X, probes])[:, columns]
    is_probe = (columns >= d_real)
    return {"name": name, "X": data, "y": y, "is_probe": is_probe, "d_real": d_real, "n_probes": n_probes,
            "top_k": min(10, math.ceil(d_real / 3)), "shape_original": [n_original, d_original],
            "n_rows": int(y.size), "n_classes": int(np.unique(y).size)}


def run_method(method: str, X, y, settings: dict, seed: int) -> np.ndarray:
    settings = dict(settings)
    batch = settings.pop("batch_size", 1)
    if batch == "pool/16":
        batch = max(1, math.ceil(X.shape[0] / 16))
    rule = settings.pop("batch_rule", "replay")
    if method == "lmba":
        weights, _ = mw.lmba_in_memory(X, y, k=LMBA_K, c=LMBA_C, batch_size=batch, batch_rule=rule, seed=seed,
                                       **settings)
    else:
        weights, _ = simba.simba_in_memory(X, y, batch_size=batch, batch_rule=rule, seed=seed, **settings)
    return weights


def evaluate(data: dict, method: str, settings: dict) -> dict:
    X, y, k, is_probe = data["X"], data["y"], data["top_k"], data["is_probe"]
    started = time.perf_counter()
    order_weights = np.array([run_method(method, X, y, settings, seed) for seed in range(ORDERS)])
    subsets = top_k_subsets(order_weights, k)
    probe_fraction = float(np.mean([is_probe[s].mean() for s in subsets]))
    stability = float(kuncheva_stability(subsets, X.shape[1]))
    accuracies = []
    for train, test in StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(X, y):
        weights = run_method(method, X[train], y[train], settings, SEED)
        top = top_k_subsets(weights[None, :], k)[0]
        model = KNeighborsClassifier(n_neighbors=1).fit(X[train][:, top], y[train])
        accuracies.append(float(model.score(X[test][:, top], y[test])))
    return {"probe_fraction": probe_fraction, "stability": stability, "accuracy": float(np.mean(accuracies)),
            "accuracy_std": float(np.std(accuracies, ddof=1)), "seconds": time.perf_counter() - started}


def ranks(values, higher_is_better: bool) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    keyed = -values if higher_is_better else values
    order = np.argsort(keyed, kind="stable")
    result = np.empty(values.size)
    position = 0
    while position < values.size:
        same = position
        while same + 1 < values.size and keyed[order[same + 1]] == keyed[order[position]]:
            same += 1
        result[order[position:same + 1]] = (position + same) / 2 + 1
        position = same + 1
    return result


def scores(per_set: Dict[str, Dict[str, dict]], names: List[str]) -> Dict[str, float]:
    """Mean over sets of the mean of a setting's three criterion ranks (lower is better)."""
    totals = {name: 0.0 for name in names}
    for results in per_set.values():
        table = [results[name] for name in names]
        mean_rank = (ranks([r["probe_fraction"] for r in table], False) + ranks([r["stability"] for r in table], True)
                     + ranks([r["accuracy"] for r in table], True)) / 3
        for name, value in zip(names, mean_rank):
            totals[name] += value / len(per_set)
    return totals


def means(per_set, name) -> dict:
    keys = ("probe_fraction", "stability", "accuracy")
    return {key: float(np.mean([results[name][key] for results in per_set.values()])) for key in keys}


def choose_setting(per_set, names) -> str:
    table = scores(per_set, names)
    return min(names, key=lambda name: (table[name], names.index(name)))


def choose_batch(per_set, names) -> str:
    base = means(per_set, names[0])
    admissible = [name for name in names
                  if means(per_set, name)["probe_fraction"] <= base["probe_fraction"] + PROBE_TOLERANCE
                  and means(per_set, name)["stability"] >= base["stability"] - STABILITY_TOLERANCE
                  and means(per_set, name)["accuracy"] >= base["accuracy"] - ACCURACY_TOLERANCE]
    table = scores(per_set, names)
    batch_of = {name: (10**6 if size == "pool/16" else size) for name, size, _ in STAGE2}
    return max(admissible, key=lambda name: (batch_of[name], -table[name]))


def study(sets, log) -> dict:
    prepared = {}
    for name in sets:
        prepared[name] = prepare(name)
        d = prepared[name]
        log(f"{name}: {d['n_rows']} rows x {d['d_real']} features + {d['n_probes']} probes, top {d['top_k']}")
    out = {"sets": {name: {key: value for key, value in d.items() if key not in ("X", "y", "is_probe")}
                    for name, d in prepared.items()}, "methods": {}}
    for method in ("lmba", "simba"):
        stage1 = {}
        for name in sets:
            stage1[name] = {}
            for setting, settings in STAGE1.items():
                stage1[name][setting] = evaluate(prepared[name], method, settings)
            log(f"{method} stage 1 {name}: {sum(r['seconds'] for r in stage1[name].values()):.0f} s")
        names = list(STAGE1)
        winner = choose_setting(stage1, names)
        stage2 = {}
        for name in sets:
            stage2[name] = {}
            for label, size, rule in STAGE2:
                settings = {**STAGE1[winner], "batch_size": size, "batch_rule": rule}
                stage2[name][label] = (stage1[name][winner] if size == 1 else
                                       evaluate(prepared[name], method, settings))
            log(f"{method} stage 2 {name}: {sum(r['seconds'] for r in stage2[name].values()):.0f} s")
        labels = [label for label, _, _ in STAGE2]
        out["methods"][method] = {"stage1": stage1, "stage1_scores": scores(stage1, names), "winner": winner,
                                  "stage2": stage2, "stage2_scores": scores(stage2, labels),
                                  "batch": choose_batch(stage2, labels)}
        log(f"{method}: winner {winner}; batch {out['methods'][method]['batch']}")
    return out


def table1_check(seeds=range(20)) -> dict:
    """Table 1 of Li & Lu (tests/core/test_lmba_table1.py's data): over seeds 0-19 (seed s for the
    synthetic data and the instance order), how often the top |important| features are exactly the
    important ones, with the papers' loop and with the selectors' default loops."""
    from sklearn.datasets import load_iris

    from sparkfs.core.margin_runs import PAPER
    from sparkfs.selectors.margin_weighting import LMBA_DEFAULT_RUN, SIMBA_DEFAULT_RUN
    from tests.core.test_lmba_table1 import multi_class_data, s1_data

    def loop(run):
        return dict(schedule=run.schedule, step_size=run.step_size, passes=run.passes, batch_size=run.batch_size,
                    batch_rule=run.batch_rule, averaging=run.averaging)

    iris = load_iris(return_X_y=True)
    sets = {"Iris": (lambda seed: iris, {2, 3}), "Multi-class": (multi_class_data, {0, 1}),
            "S_1": (s1_data, set(range(6)))}
    runs = {"lmba": {"paper": PAPER, "default": LMBA_DEFAULT_RUN},
            "simba": {"paper": PAPER, "default": SIMBA_DEFAULT_RUN}}
    out = {}
    for set_name, (make, important) in sets.items():
        for method, loops in runs.items():
            for loop_name, run in loops.items():
                holds = 0
                for seed in seeds:
                    X, y = make(seed)
                    if method == "lmba":
                        weights, _ = mw.lmba_in_memory(X, y, k=LMBA_K, c=LMBA_C, seed=seed, **loop(run))
                    else:
                        weights, _ = simba.simba_in_memory(X, y, seed=seed, **loop(run))
                    top = set(np.argsort(-weights, kind="stable")[:len(important)].tolist())
                    holds += top == important
                out[f"{set_name}|{method}|{loop_name}"] = holds
    return {"seeds": len(list(seeds)), "holds": out}


POOL_CHECK_SETS, POOL_CHECK_ROWS = ("waveform21", "splice"), 2000


def pool_check() -> dict:
    """Simba's stage-2 batch on a larger pool: the chosen ceil(pool / 16) grows with the pool, which
    stage 2 (pools of at most 250) did not test. On POOL_CHECK_ROWS rows: the probe and stability
    criteria (no CV) for batch 1, replay 8 and replay pool/16 of the default loop."""
    global MAX_ROWS
    from sparkfs.selectors.margin_weighting import SIMBA_DEFAULT_RUN

    saved, MAX_ROWS = MAX_ROWS, POOL_CHECK_ROWS
    try:
        prepared = {name: prepare(name) for name in POOL_CHECK_SETS}
    finally:
        MAX_ROWS = saved
    base = dict(schedule=SIMBA_DEFAULT_RUN.schedule, passes=SIMBA_DEFAULT_RUN.passes,
                averaging=SIMBA_DEFAULT_RUN.averaging)
    out = {}
    for name, data in prepared.items():
        X, y, k = data["X"], data["y"], data["top_k"]
        for label, size in (("batch 1", 1), ("replay, batch 8", 8), ("replay, batch pool/16", "pool/16")):
            started = time.perf_counter()
            weights = np.array([run_method("simba", X, y, {**base, "batch_size": size}, seed)
                                for seed in range(ORDERS)])
            subsets = top_k_subsets(weights, k)
            out[f"{name}|{label}"] = {"probe_fraction": float(np.mean([data["is_probe"][s].mean() for s in subsets])),
                                      "stability": float(kuncheva_stability(subsets, X.shape[1])),
                                      "seconds": round(time.perf_counter() - started, 1), "rows": data["n_rows"],
                                      "features": data["d_real"], "probes": data["n_probes"], "top_k": k}
    return out


def render_pool_check(blob: dict) -> List[str]:
    lines = ["", f"## Simba's batch on larger pools ({POOL_CHECK_ROWS} rows)", "",
             f"The default loop of Simba, {ORDERS} instance orders on the whole subsample (no CV): probes in the top "
             "k / Kuncheva index. The pool/16 batch is ceil(pool / 16) = 125 or 126 here (16 at 250 rows in "
             "stage 2).", "",
             "| set | rows | features + probes | top k | batch 1 | replay, batch 8 | replay, batch pool/16 |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name in POOL_CHECK_SETS:
        cells = [blob[f"{name}|{label}"] for label in ("batch 1", "replay, batch 8", "replay, batch pool/16")]
        first = cells[0]
        lines.append(f"| {name} | {first['rows']} | {first['features']} + {first['probes']} | {first['top_k']} | "
                     + " | ".join(f"{c['probe_fraction']:.2f} / {c['stability']:.2f}" for c in cells) + " |")
    return lines


def issue_case(seeds=range(3)) -> dict:
    """Issue 23's case: 1,000 rows of waveform21 (raw, as a new user runs it) with 19 N(0, 1) noise
    attributes (the waveform-40 layout); how many noise attributes each loop puts in its top 15."""
    from sparkfs.selectors.margin_weighting import LMBA_DEFAULT_RUN, SIMBA_DEFAULT_RUN

    X, y = load_npz(ISSUE_SET, dense=True)
    X, y = X[:ISSUE_ROWS], y[:ISSUE_ROWS]
    rng = np.random.default_rng(SEED)
    X = np.hstack([X, rng.standard_normal((X.shape[0], ISSUE_NOISE))])
    real = X.shape[1] - ISSUE_NOISE

    def noise_in_top(weights):
        return int((np.argsort(-weights, kind="stable")[:ISSUE_TOP] >= real).sum())

    def loop(run):
        return dict(schedule=run.schedule, passes=run.passes, batch_size=run.batch(X.shape[0]),
                    batch_rule=run.batch_rule, averaging=run.averaging)

    runs = {"lmba, old default (constant, 1 pass, replay batch 8)": ("lmba", dict(batch_size=8)),
            "lmba, papers' loop": ("lmba", {}), "lmba, new default": ("lmba", loop(LMBA_DEFAULT_RUN)),
            "simba, old default = papers' loop": ("simba", {}),
            "simba, new default": ("simba", loop(SIMBA_DEFAULT_RUN))}
    out = {}
    for label, (method, settings) in runs.items():
        if method == "lmba":
            out[label] = [noise_in_top(mw.lmba_in_memory(X, y, k=LMBA_K, c=LMBA_C, seed=s, **settings)[0])
                          for s in seeds]
        else:
            out[label] = [noise_in_top(simba.simba_in_memory(X, y, seed=s, **settings)[0]) for s in seeds]
    return out


ISSUE_SET, ISSUE_ROWS, ISSUE_NOISE, ISSUE_TOP = "waveform21", 1000, 19, 15


def render_issue_case(blob: dict) -> List[str]:
    lines = ["", f"## Issue 23's case: {ISSUE_ROWS} rows of {ISSUE_SET} + {ISSUE_NOISE} N(0, 1) noise attributes, raw",
             "", f"Noise attributes in the top {ISSUE_TOP}, instance orders (seeds) 0, 1, 2.", "",
             "| loop | noise in the top 15 |", "|---|---|"]
    lines += [f"| {label} | {', '.join(str(v) for v in values)} |" for label, values in blob.items()]
    return lines


def render_table1(blob: dict) -> List[str]:
    lines = ["", "## Table 1 of Li & Lu, papers' loop vs the default loop", "",
             f"Data of `tests/core/test_lmba_table1.py` (raw features), seeds 0-{blob['seeds'] - 1} (seed s for the "
             "synthetic data and the instance order; iris is fixed data). Cell: runs in which the top |important| "
             "features are exactly the important ones (the paper's reading of Table 1).", "",
             "| set | lmba, paper | lmba, default | simba, paper | simba, default |", "|---|---:|---:|---:|---:|"]
    for set_name in ("Iris", "Multi-class", "S_1"):
        cells = [f"{blob['holds'][f'{set_name}|{m}|{setting}']}/{blob['seeds']}" for m in ("lmba", "simba")
                 for setting in ("paper", "default")]
        lines.append(f"| {set_name} | " + " | ".join(cells) + " |")
    return lines


def render(out: dict, started_at: str, wall: float) -> str:
    lines = ["# Lmba and Simba defaults: a study with probe features", "",
             f"Generated by `{COMMAND}` on {started_at} ({platform.platform()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}, NumPy {np.__version__}); wall time {wall / 60:.1f} min at low priority on "
             "a shared machine (seconds are indicative). Pure NumPy: `lmba_in_memory` / `simba_in_memory` of "
             "`sparkfs/core` (tested to equal the Spark layer). Every number below comes from that run.", "",
             "## Set-up", "",
             f"* **Data**: {len(out['sets'])} sets of `../shared/data`, each stratified-subsampled to at most "
             f"{MAX_ROWS} rows (seed {SEED}); classes with fewer than {FOLDS} rows dropped; constant columns "
             "dropped; range-scaled to [0, 1] (the space in which 1-NN measures distance).",
             "* **Probes**: max(5, ceil(D / 3)) columns, each a random permutation of a random real column (pure "
             "noise for the class, with a real feature's marginal); the columns are then shuffled so that "
             "ties favour neither kind.",
             f"* **Lmba**: k = {LMBA_K}, c = {LMBA_C}, projection none. **Simba**: as published (beta scales "
             "Delta). Several passes = "
             f"{SEVERAL_PASSES} passes (a new instance permutation per pass); decay = beta_t = 1 / sqrt(t + 1) over "
             "picked instances; averaged = ranking by the mean of the iterates of w after every instance.",
             "", CRITERIA, "", "## Data", "", "| set | original | rows used | classes | features | probes | top k |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name, d in out["sets"].items():
        lines.append(f"| {name} | {d['shape_original'][0]} x {d['shape_original'][1]} | {d['n_rows']} | "
                     f"{d['n_classes']} | {d['d_real']} | {d['n_probes']} | {d['top_k']} |")
    for method, result in out["methods"].items():
        lines += ["", f"## {method.capitalize()}", "", "### Stage 1 (batch 1): means over the sets", "",
                  "| setting | score (mean rank, lower better) | probes in top k | Kuncheva | 1-NN acc |",
                  "|---|---:|---:|---:|---:|"]
        for setting in STAGE1:
            m = means(result["stage1"], setting)
            mark = " **(chosen)**" if setting == result["winner"] else ""
            lines.append(f"| {setting}{mark} | {result['stage1_scores'][setting]:.2f} | {m['probe_fraction']:.3f} | "
                         f"{m['stability']:.3f} | {m['accuracy']:.3f} |")
        lines += ["", "Per set (probes in top k / Kuncheva / 1-NN accuracy):", "",
                  "| set | " + " | ".join(STAGE1) + " |", "|---|" + "---:|" * len(STAGE1)]
        for name, results in result["stage1"].items():
            cells = [f"{r['probe_fraction']:.2f} / {r['stability']:.2f} / {r['accuracy']:.3f}"
                     for r in (results[s] for s in STAGE1)]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        labels = [label for label, _, _ in STAGE2]
        lines += ["", f"### Stage 2 (batch rules, on \"{result['winner']}\"): means over the sets", "",
                  "| batch | score | probes in top k | Kuncheva | 1-NN acc |", "|---|---:|---:|---:|---:|"]
        for label in labels:
            m = means(result["stage2"], label)
            mark = " **(chosen)**" if label == result["batch"] else ""
            lines.append(f"| {label}{mark} | {result['stage2_scores'][label]:.2f} | {m['probe_fraction']:.3f} | "
                         f"{m['stability']:.3f} | {m['accuracy']:.3f} |")
        lines += ["", "Per set:", "", "| set | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
        for name, results in result["stage2"].items():
            cells = [f"{r['probe_fraction']:.2f} / {r['stability']:.2f} / {r['accuracy']:.3f}"
                     for r in (results[s] for s in labels)]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    table1 = RESULTS / "lmba_simba_defaults_table1.json"
    if table1.exists():
        blob = json.loads(table1.read_text())
        lines += render_table1(blob)
        if "pool_check" in blob:
            lines += render_pool_check(blob["pool_check"])
    issue = RESULTS / "lmba_simba_defaults_issue_case.json"
    if issue.exists():
        lines += render_issue_case(json.loads(issue.read_text()))
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=list(SETS))
    parser.add_argument("--out", default=str(RESULTS / "lmba_simba_defaults"))
    parser.add_argument("--from-json", help="re-render the report from a JSON of an earlier run")
    parser.add_argument("--table1", action="store_true",
                        help="only the checks of the chosen defaults: Table 1 and Simba's batch on larger pools "
                             "(writes benchmarks/results/lmba_simba_defaults_table1.json; the report includes it)")
    parser.add_argument("--issue-case", action="store_true", help="only issue 23's waveform case (writes "
                        "benchmarks/results/lmba_simba_defaults_issue_case.json; the report includes it)")
    args = parser.parse_args()
    if args.issue_case:
        blob = issue_case()
        (RESULTS / "lmba_simba_defaults_issue_case.json").write_text(json.dumps(blob, indent=1))
        print("\n".join(render_issue_case(blob)))
        return
    if args.table1:
        begin = time.perf_counter()
        blob = table1_check()
        blob["pool_check"] = pool_check()
        blob["seconds"] = round(time.perf_counter() - begin, 1)
        (RESULTS / "lmba_simba_defaults_table1.json").write_text(json.dumps(blob, indent=1))
        print("\n".join(render_table1(blob) + render_pool_check(blob["pool_check"])))
        return
    if args.from_json:
        blob = json.loads(Path(args.from_json).read_text())
        Path(args.out + ".md").write_text(render(blob["result"], blob["started_at"], blob["wall_seconds"]))
        return
    started_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    begin = time.perf_counter()
    out = study(args.sets, lambda text: print(f"[{time.perf_counter() - begin:6.0f} s] {text}", file=sys.stderr,
                                                flush=True))
    wall = time.perf_counter() - begin
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out + ".json").write_text(json.dumps({"started_at": started_at, "wall_seconds": wall, "result": out},
                                                   indent=1))
    Path(args.out + ".md").write_text(render(out, started_at, wall))
    print(Path(args.out + ".md").read_text())


if __name__ == "__main__":
    main()
