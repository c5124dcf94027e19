"""Parzen-ISE rankings next to ReliefF's, and a 1-NN usefulness check -- pure NumPy, no Spark.

iris and wine (scikit-learn's copies), pima_diabetes and sonar (shared/data).
1. Whole set: Parzen-ISE (``parzen_ise_in_memory`` defaults, seed 0) with FCM groups (C = number of
   classes) on raw and on range-scaled features (the CV's input; only FCM sees the difference) and
   with the labels as groups: ranking, per descent run the held-out feature, stop, iterations,
   evaluations, weight spread, 2C / ISE; a rounding check (FCM, columns reversed, same held-out
   feature); ReliefF (margin_study.relieff_weights: k = 10, range-scaled, all rows) and the Spearman
   correlation of each Parzen-ISE weight vector with ReliefF's.
2. margin_study.py's protocol: 5-fold stratified CV, selection on the range-scaled training fold,
   1-NN on the top 2 and top d // 2 features for parzen-ise (FCM), parzen-ise (labels), relieff and
   random (one permutation per fold for each seed 0..9, accuracies averaged over the seeds).
Writes the results between the markers of docs/parzen_ise.md; ``--json PATH`` keeps every number.
Parts 1-2 run the ``image`` reading (issue 11's, the default until issue 23).

``--criteria``: instead, the criteria of issue 23 that chose the default reading (docs/parzen_ise.md,
section 0), for every reading in ``CRITERIA`` and, for the marginal one, every ranking rule of its
optimum (``RANKINGS``: weights, multipliers, reference): K1 iris without labels, K2 waveform + 19 N(0, 1)
attributes (AUC of structured over noise, with and without labels; also breast_w, ionosphere and
pima with 10 N(0, 1) probes), K3 relative weight spread and ties in the top 50 (also on
Prostate_GE); written between the criteria markers.

    .venv/bin/python -m studies.parzen_ise_study [--json PATH] [--criteria]
"""

from __future__ import annotations

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # one core: the machine's other core runs Spark jobs

import argparse  # noqa: E402
import datetime  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402
from sklearn.datasets import load_iris, load_wine  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402

from benchmarks.common import DATA, ROOT  # noqa: E402
from sparkfs.core.parzen_ise import parzen_ise_in_memory  # noqa: E402
from sparkfs.core.selection import rank_features  # noqa: E402
from studies.margin_study import RELIEFF_K, full_ranking, load, one_nn_accuracy, relieff_weights  # noqa: E402
from studies.parzen_ise_criteria import criteria_main  # noqa: E402

DOC = ROOT / "docs" / "parzen_ise.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"
COMMAND = ".venv/bin/python -m studies.parzen_ise_study"
SETS = ("iris", "wine", "pima_diabetes", "sonar")
SEED, FOLDS, RANDOM_SEEDS = 0, 5, range(10)
ROUNDING = 1e-9  # a relative weight spread below this is treated as "equal weights"
RANKERS = ("parzen-ise (FCM)", "parzen-ise (labels)", "relieff", "random")


def load_set(name):
    """X, y, 1-based feature labels (the npz or scikit-learn names; bare numbers when uninformative)."""
    if name in ("iris", "wine"):
        bunch = (load_iris if name == "iris" else load_wine)()
        X, y, names = bunch.data, bunch.target, list(bunch.feature_names)
    else:
        X, y = load(name)
        archive = np.load(DATA / f"{name}.npz", allow_pickle=False)
        names = [str(n) for n in archive["feature_names"]] if "feature_names" in archive.files else []
    names = [] if all(n.startswith("attribute_") for n in names) else names  # sonar: attribute_1, ...
    return np.asarray(X, dtype=float), np.asarray(y), names


def range_scaled(X, reference):
    minimum, spread = reference.min(axis=0), np.ptp(reference, axis=0)
    return (X - minimum) / np.where(spread > 0, spread, 1.0)


def parzen(X, y, classes, **options):
    started = time.perf_counter()
    options.setdefault("criterion", "image")  # this part of the study documents issue 11's reading
    weights, info = parzen_ise_in_memory(X, y, num_clusters=classes, seed=SEED, **options)
    runs = [{"held_out": int(r["fixed_feature"]) + 1, "stop": r["stop"], "iterations": int(r["iterations"]),
             "evaluations": int(r["evaluations"]), "spread": float(r["weight_spread"]),
             "cross_share": None if r["value"] is None else float(r["value"].cross_share)} for r in info["runs"]]
    free = np.delete(weights, info["fixed_feature"])
    return {"weights": weights.tolist(), "ranking": (info["ranking"] + 1).tolist(), "runs": runs,
            "relative_spread": float(np.ptp(free) / free.mean()), "seconds": time.perf_counter() - started}


def spearman(a, b) -> float:
    return float(spearmanr(a, b).correlation) if np.ptp(a) > 0 and np.ptp(b) > 0 else float("nan")


def whole_set(X, y):
    classes, d = int(np.unique(y).size), X.shape[1]
    out = {"fcm": parzen(X, None, classes), "fcm, range-scaled": parzen(range_scaled(X, X), None, classes),
           "labels": parzen(X, y, classes)}
    started = time.perf_counter()
    relief = relieff_weights(range_scaled(X, X), y)
    out["relieff"] = {"weights": relief.tolist(), "ranking": (rank_features(relief) + 1).tolist(),
                      "seconds": time.perf_counter() - started}
    for key in ("fcm", "fcm, range-scaled", "labels"):
        item, weights = out[key], np.asarray(out[key]["weights"])
        held = item["runs"][-1]["held_out"]
        free = np.arange(d) != held - 1
        item.update(spearman_relieff=spearman(weights, relief),
                    spearman_relieff_free=spearman(weights[free], relief[free]),
                    held_out_relieff_rank=out["relieff"]["ranking"].index(held) + 1)
    # Rounding check: reversed columns, same held-out feature; map the weights back to the original order.
    held = out["fcm"]["runs"][-1]["held_out"] - 1
    same_order = parzen(X, None, classes, fixed_feature=held)
    back = np.asarray(parzen(X[:, ::-1], None, classes, fixed_feature=d - 1 - held)["weights"])[::-1]
    ranking = (rank_features(back) + 1).tolist()
    out["reversed_columns"] = {"ranking": ranking, "same_ranking": ranking == same_order["ranking"],
                               "spearman": spearman(back, same_order["weights"]), "reference": same_order["ranking"]}
    return out


def cv(X, y):
    classes, d = int(np.unique(y).size), X.shape[1]
    counts = sorted({2, d // 2})
    accuracy = {name: np.zeros((FOLDS, len(counts))) for name in RANKERS}
    accuracy["all"], seconds = np.zeros(FOLDS), {name: [] for name in RANKERS[:3]}
    rngs = [np.random.default_rng(seed) for seed in RANDOM_SEEDS]
    for fold, (train, test) in enumerate(StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(X, y)):
        varying = np.ptp(X[train], axis=0) > 0
        train_scaled, test_scaled = range_scaled(X[train], X[train]), range_scaled(X[test], X[train])
        selection_input, y_train = np.ascontiguousarray(train_scaled[:, varying]), y[train]

        def score(ranking, train_scaled=train_scaled, y_train=y_train, test_scaled=test_scaled, test=test):
            return [one_nn_accuracy(train_scaled, y_train, test_scaled, y[test], ranking[:m]) for m in counts]
        accuracy["all"][fold] = one_nn_accuracy(train_scaled, y_train, test_scaled, y[test], slice(None))
        # Each is called in this fold's iteration, on this fold's rows.
        selectors = {"parzen-ise (FCM)": lambda: parzen_ise_in_memory(selection_input, None,  # noqa: B023
                                                                      num_clusters=classes, seed=SEED)[0],
                     "parzen-ise (labels)": lambda: parzen_ise_in_memory(selection_input, y_train,  # noqa: B023
                                                                         seed=SEED)[0],
                     "relieff": lambda: relieff_weights(selection_input, y_train)}  # noqa: B023
        for name, select in selectors.items():
            started = time.perf_counter()
            weights = select()
            seconds[name].append(time.perf_counter() - started)
            accuracy[name][fold] = score(full_ranking(weights, varying))
        accuracy["random"][fold] = np.mean([score(rng.permutation(d)) for rng in rngs], axis=0)
        print(f"  fold {fold}: " + ", ".join(f"{k} {np.round(v[fold], 3)}" for k, v in accuracy.items()), flush=True)
    return {"counts": counts, "accuracy": {k: v.tolist() for k, v in accuracy.items()},
            "seconds": {k: float(np.mean(v)) for k, v in seconds.items()}}


def ms(values) -> str:
    values = np.asarray(values)
    return f"{values.mean():.3f} ({values.std(ddof=1):.3f})"


def compare(a, b) -> str:
    """Paired fold differences a - b: 'higher' / 'lower' when the mean exceeds two standard errors."""
    diff = np.asarray(a) - np.asarray(b)
    error = diff.std(ddof=1) / np.sqrt(diff.size)
    word = "no clear difference" if abs(diff.mean()) <= 2 * error else ("higher" if diff.mean() > 0 else "lower")
    return f"{diff.mean():+.3f}, {word}"


def rho(value) -> str:
    return "n/a" if np.isnan(value) else f"{value:+.2f}"


def verdict(item, check, d) -> str:
    """What the weights' spread and the reversed-columns check say about the ranking."""
    relative, same = item["relative_spread"], check["same_ranking"]
    if relative == 0:
        return ("all free weights are exactly equal (the all-equal solution, see [Why the paper checks fail]"
                "(#why-the-paper-checks-fail)): the ranking is the feature order (ties go to the lower index), and "
                "rho (all) only reflects where ReliefF puts the held-out feature")
    if relative < ROUNDING:
        ulps = relative / (d - 1) / np.spacing(1.0 / (d - 1))
        return (f"the free weights agree to {relative:.0e} relative (about {ulps:.0f} units in the last place), "
                "i.e. the all-equal solution; the order " + (
                    "comes back with the columns reversed, so it follows the cross term's tiny gradient rather than "
                    "summation noise, but it rests on differences of that size" if same else
                    "changes when the columns are reversed: it is set by rounding"))
    return "the weights differ measurably and the ranking " + (
        "survives reversing the columns" if same else "changes when the columns are reversed")


def ranking_cell(ranking, limit=60) -> str:
    return ", ".join(map(str, ranking)) if len(ranking) <= limit else \
        ", ".join(map(str, ranking[:limit])) + f", ... ({len(ranking) - limit} more), {ranking[-1]}"


def render(results, started_at, wall) -> str:
    lines = []
    add = lines.append
    add(f"Generated by `{COMMAND}` on {started_at:%Y-%m-%d} ({platform.machine()}, {os.cpu_count()} cores, "
        f"one BLAS thread, Python {platform.python_version()}, NumPy {np.__version__}); wall time "
        f"{wall:.0f} s. Every set is used whole, exactly (no landmarks), with {FOLDS} folds. Rerun the "
        "command to regenerate this block (`--json PATH` also keeps every number, including the full weights).")
    add("")
    add("### Rankings on the whole data sets")
    add("")
    add(f"Features 1-based, best first. Parzen-ISE: defaults (h = Silverman, hard FCM groups with C = number of "
        f"classes, m = 2, fixed_feature = \"auto\", seed {SEED}); the held-out feature ranks last. *runs*: per "
        "descent run, held-out feature / stop / iterations / evaluations. *rel. spread* = (max - min) / mean of "
        f"the free weights; below {ROUNDING:g} the weights are equal for practical purposes. *2C/ISE*: the cross "
        f"term's share at the end of the final run. ReliefF: k = {RELIEFF_K}, Euclidean, range-scaled, every row "
        "a query. rho = Spearman correlation of the weights with ReliefF's: *all* includes the held-out feature "
        "(weight 0), *free* leaves it out (n/a when the free weights are exactly equal).")
    add("")
    for name, result in results.items():
        whole, n, d, c = result["whole"], *result["shape"]
        add(f"#### {name} ({n} x {d}, {c} classes)")
        add("")
        if result["names"]:
            add("Features: " + "; ".join(f"{i + 1} {label}" for i, label in enumerate(result["names"])) + ".")
            add("")
        add("| ranker | ranking | rel. spread | 2C/ISE | runs | rho all | rho free | s |")
        add("|---|---|---:|---:|---|---:|---:|---:|")
        for key in ("fcm", "fcm, range-scaled", "labels"):
            item = whole[key]
            runs = "; ".join(f"{r['held_out']} / {r['stop']} / {r['iterations']} / {r['evaluations']}"
                             for r in item["runs"])
            add(f"| parzen-ise ({key}) | {ranking_cell(item['ranking'])} | {item['relative_spread']:.1e} | "
                f"{item['runs'][-1]['cross_share']:.1e} | {runs} | {item['spearman_relieff']:+.2f} | "
                f"{rho(item['spearman_relieff_free'])} | {item['seconds']:.1f} |")
        add(f"| relieff | {ranking_cell(whole['relieff']['ranking'])} | | | | | | {whole['relieff']['seconds']:.1f} |")
        add("")
        check = whole["reversed_columns"]
        add(f"Rounding check (FCM, raw, held-out feature {whole['fcm']['runs'][-1]['held_out']} fixed): columns in "
            f"the given order give {ranking_cell(check['reference'], 12)}; reversed columns give "
            f"{ranking_cell(check['ranking'], 12)} ("
            + ("the same ranking" if check["same_ranking"] else "a different ranking")
            + f", Spearman {check['spearman']:+.2f} between the two weight vectors).")
        add("")
    add("### 1-NN accuracy, five-fold stratified CV")
    add("")
    add(f"`StratifiedKFold({FOLDS}, shuffle=True, random_state={SEED})`, the same folds for every ranker. Each "
        "ranker sees only the range-scaled training fold; 1-NN (Euclidean) on the top m = 2 and d // 2 (iris: both 2), "
        "train and test scaled by "
        "the training fold's min and range. parzen-ise (FCM) is the unsupervised method under study; parzen-ise "
        "(labels) uses the training labels as groups; random = one permutation per fold for each of the seeds "
        f"{RANDOM_SEEDS[0]}..{RANDOM_SEEDS[-1]}, accuracy averaged over the seeds. Mean (sample std) over the folds. "
        "Difference columns: mean paired fold difference; \"higher\"/\"lower\" when it exceeds two standard errors "
        "(about a paired t-test at the 10 % level with 4 degrees of freedom).")
    add("")
    add("| set | m | parzen-ise (FCM) | parzen-ise (labels) | relieff | random | all features | FCM - random | "
        "FCM - relieff |")
    add("|---|---:|---:|---:|---:|---:|---:|---|---|")
    for name, result in results.items():
        acc = {k: np.asarray(v) for k, v in result["cv"]["accuracy"].items()}
        for i, m in enumerate(result["cv"]["counts"]):
            add(f"| {name} | {m} | " + " | ".join(ms(acc[k][:, i]) for k in RANKERS) + f" | {ms(acc['all'])} | "
                f"{compare(acc['parzen-ise (FCM)'][:, i], acc['random'][:, i])} | "
                f"{compare(acc['parzen-ise (FCM)'][:, i], acc['relieff'][:, i])} |")
    add("")
    add("Seconds per fold: " + "; ".join(f"{name} " + ", ".join(f"{k} {v:.2f}" for k, v in r["cv"]["seconds"].items())
                                         for name, r in results.items()) + ".")
    add("")
    add("### Reading")
    add("")
    for name, result in results.items():
        whole = result["whole"]
        fcm, acc = whole["fcm"], {k: np.asarray(v) for k, v in result["cv"]["accuracy"].items()}
        text = (f"* **{name}**: FCM weights' relative spread {fcm['relative_spread']:.1e}, 2C/ISE "
                f"{fcm['runs'][-1]['cross_share']:.1e}; {verdict(fcm, whole['reversed_columns'], result['shape'][1])}. "
                f"rho vs ReliefF {fcm['spearman_relieff']:+.2f} all, {rho(fcm['spearman_relieff_free'])} free (labels "
                f"as groups {whole['labels']['spearman_relieff']:+.2f}, "
                f"{rho(whole['labels']['spearman_relieff_free'])})"
                f"; the held-out (least important) feature {fcm['runs'][-1]['held_out']} is ReliefF's number "
                f"{fcm['held_out_relieff_rank']} of {result['shape'][1]}. ")
        parts = []
        for i, m in enumerate(result["cv"]["counts"]):
            parts.append(f"top {m}: {acc['parzen-ise (FCM)'][:, i].mean():.3f} vs random "
                         f"{acc['random'][:, i].mean():.3f} "
                         f"({compare(acc['parzen-ise (FCM)'][:, i], acc['random'][:, i])})"
                         f" and ReliefF {acc['relieff'][:, i].mean():.3f} "
                         f"({compare(acc['parzen-ise (FCM)'][:, i], acc['relieff'][:, i])})")
        add(text + "1-NN with Parzen-ISE (FCM): " + "; ".join(parts) + ".")
    iris = results["iris"]["whole"]
    tops = {key: set(iris[key]["ranking"][:2]) == {3, 4} for key in ("fcm", "labels", "relieff")}
    add("* **The paper's iris finding** (features 3 and 4 most important, as SUD and ReliefF find): "
        + ", ".join(f"{key} {'agrees' if ok else 'does not agree'} (top 2: {iris[key]['ranking'][:2]})"
                    for key, ok in tops.items()) + ".")
    total = [(r, i) for r in results.values() for i in range(len(r["cv"]["counts"]))]
    def tally(other, word):
        return sum(word in compare(np.asarray(r["cv"]["accuracy"]["parzen-ise (FCM)"])[:, i],
                                   np.asarray(r["cv"]["accuracy"][other])[:, i]) for r, i in total)
    add(f"* **Over all {len(total)} (set, m) cells**, Parzen-ISE (FCM) is clearly above random in "
        f"{tally('random', 'higher')}, clearly below in {tally('random', 'lower')}; against ReliefF it is clearly "
        f"above in {tally('relieff', 'higher')} and clearly below in {tally('relieff', 'lower')}. With 5 folds, "
        "\"no clear difference\" is weak evidence either way.")
    return "\n".join(lines)


def write_doc(block: str) -> None:
    text = DOC.read_text()
    if START not in text or END not in text:
        raise SystemExit(f"{DOC} has no {START} ... {END} markers")
    head, rest = text.split(START, 1)
    DOC.write_text(head + START + "\n\n" + block + "\n\n" + END + rest.split(END, 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write every number to this file")
    parser.add_argument("--criteria", action="store_true", help="run issue 23's criteria for the default reading")
    args = parser.parse_args()
    if args.criteria:
        criteria_main(args.json)
        return
    started_at, clock = datetime.datetime.now(), time.perf_counter()
    results = {}
    for name in SETS:
        print(name, flush=True)
        X, y, names = load_set(name)
        results[name] = {"shape": [*X.shape, int(np.unique(y).size)], "names": names, "whole": whole_set(X, y),
                         "cv": cv(X, y)}
    wall = time.perf_counter() - clock
    block = render(results, started_at, wall)
    write_doc(block)
    if args.json:
        args.json.write_text(json.dumps({"command": COMMAND, "started_at": started_at.isoformat(),
                                         "wall_seconds": wall, "results": results}, indent=1))
    print(block)
    print(f"wrote {DOC} ({wall / 60:.1f} min)")


if __name__ == "__main__":
    main()
