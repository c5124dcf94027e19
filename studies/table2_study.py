"""The shape of the Fisher-Markov paper's Table II (and Table V) on the data we have, through
``sparkfs evaluate`` and ``sparkfs compare`` -- the commands a user runs.

Data sets: wine (scikit-learn's copy of the UCI set: 178 x 13, 3 classes), optical digits
(scikit-learn's ``load_digits``: 1,797 x 64, 10 classes; the paper's "Optical Pen"),
Leukemia-S3 (``shared/data/leukemia_S3.npz``: 72 x 7,070, the paper's discretised set) and NCI9
(``shared/data/nci9.npz``: 60 x 9,712, 9 classes). Protocol per data set, as the paper's Table IV
(its Table II uses one fixed split, which we do not have): stratified cross-validation with the
paper's folds (wine 10, digits and Leukemia-S3 4; NCI9 2, since its smallest class has 2 rows
and every test fold must hold every class), selection on each training fold only, the lowest error
over k = 1 .. Max# (the paper's Max#: 10, 40, 60, 60; a grid of k for the two larger ones).
Classifiers: svm, rbf-svm, nb, tree (the paper's SVM, K-SVM, NB, C4.5) and knn (1-NN).

Method settings are the selectors' defaults (issue 23 re-ran the study with its defaults: simba's
batches, parzen-ise's marginal criterion and svm-rfe's halving step finish without the overrides
the first run needed, simba.batchSize=8 and parzen-ise.maxIter=20). Baselines: anova,
chi2-categorical (Spark ML's ChiSquareTest, the ``chi2`` of the first run; only on the integer-coded
sets digits and Leukemia-S3, it refuses wine's measurements), scikit-learn's chi2 (only on the sets
without negative values, wine and digits; it refuses Leukemia-S3's -2/0/2 codes),
mutual-info, mrmr, jmi, cmim and random.

    .venv/bin/python -m studies.table2_study [--quick] [--output DIR]

Each data set's evaluation resumes where it stopped (``sparkfs evaluate`` saves every (method,
fold)); the script then runs ``sparkfs compare`` with lfs (the paper's MRF, d = 1) as reference,
writes ``benchmarks/results/table2.md`` and copies the svm error curves to ``docs/results/``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

import numpy as np

from benchmarks.common import ROOT, load_npz

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

from sparkfs.cli import main

METHODS = ["lfs", "qfs", "relieff", "mrelief", "prelief", "lmba", "simba", "parzen-ise", "svm-rfe",
           "anova", "chi2-categorical", "chi2", "mutual-info", "mrmr", "jmi", "cmim", "random"]
#: methods that refuse a data set: scikit-learn's chi2 needs non-negative features, Spark ML's
#: categorical test integer-coded ones
NOT_ON = {"wine": {"chi2-categorical"}, "leukemia_S3": {"chi2"}, "nci9": {"chi2"}}
CLASSIFIERS = "svm,rbf-svm,nb,tree,knn"
#: name -> (Max#, k grid, folds, extra params)
DATA_SETS = {
    "wine": (10, list(range(1, 11)), 10, []),
    "digits": (40, [1, 2, 3, 5, 8, 10, 15, 20, 25, 30, 40], 4, []),
    "leukemia_S3": (60, [1, 2, 3, 5, 8, 10, 15, 20, 30, 40, 50, 60], 4, []),
    "nci9": (60, [1, 2, 3, 5, 8, 10, 15, 20, 30, 40, 50, 60], 2, []),
}
COMMON_PARAMS: list = []


def write_libsvm(name: str, directory: Path) -> Path:
    from sklearn.datasets import dump_svmlight_file, load_digits, load_wine

    path = directory / f"{name}.libsvm"
    if path.exists():
        return path
    if name == "wine":
        X, y = load_wine(return_X_y=True)
    elif name == "digits":
        X, y = load_digits(return_X_y=True)
    else:
        X, y = load_npz(name)
    dump_svmlight_file(np.asarray(X, dtype=np.float64), np.asarray(y), str(path), zero_based=False)
    return path


def tie_lines(directories) -> list:
    """Markdown lines of each evaluation's ``ties.csv``: the (method, k) whose top k was decided by
    tied scores in some fold, or whose ranking was flat."""
    import pandas as pd

    lines = ["# Ties at the cut (each evaluation's ties.csv; rows with a tie or a flat ranking in some fold)", "",
             "| data_set | method | k with ties at the cut | folds tied (most) | most features tied at the cut "
             "| folds flat (most) |", "|---|---|---|---|---|---|"]
    for directory in directories:
        ties = pd.read_csv(Path(directory) / "ties.csv")
        for method, group in ties.groupby("method", sort=False):
            tied = group[(group["folds_tied_at_cut"] > 0) | (group["folds_flat"] > 0)]
            if tied.empty:
                continue
            lines.append(f"| {Path(directory).name} | {method} | {', '.join(str(k) for k in tied['k'])} "
                         f"| {int(tied['folds_tied_at_cut'].max())} of {int(group['folds'].max())} "
                         f"| {int(tied['most_tied_at_cut'].max())} | {int(tied['folds_flat'].max())} |")
    return lines + ["", "Methods and data sets not listed had no ties at any cut."]


def timing_lines(directories) -> list:
    """Markdown lines: seconds of selection per method and data set (the sum over folds)."""
    import pandas as pd

    frames = {Path(d).name: pd.read_csv(Path(d) / "timings.csv") for d in directories}
    methods = list(dict.fromkeys(m for frame in frames.values() for m in frame["method"]))
    lines = ["# Seconds of selection per method (sum over folds, timings.csv)", "",
             "| method | " + " | ".join(frames) + " |", "|---|" + "---|" * len(frames)]
    for method in methods:
        cells = []
        for frame in frames.values():
            rows = frame[frame["method"] == method]
            cells.append(f"{rows['selection_seconds'].sum():.0f}" if len(rows) else "-")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines


def main_study(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="wine only, 3 folds, 5 methods (a smoke run)")
    parser.add_argument("--output", default=str(ROOT / "benchmarks" / "results" / "table2"))
    parser.add_argument("--data-sets", default="wine,digits,leukemia_S3",
                        help="comma-separated, in the order to run them (default all)")
    args = parser.parse_args(argv)
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    data_sets = ({"wine": (10, [1, 2, 5, 10], 3, [])} if args.quick
                 else {name: DATA_SETS[name] for name in args.data_sets.split(",")})
    methods = ["lfs", "relieff", "svm-rfe", "anova", "random"] if args.quick else METHODS
    directories, commands, seconds = [], {}, {}
    for name, (_, ks, folds, extra) in data_sets.items():
        path = write_libsvm(name, output)
        usable = [method for method in methods if method not in NOT_ON.get(name, ())]
        command = ["evaluate", "--input", str(path), "--format", "libsvm", "--methods", ",".join(usable),
                   "--classifiers", CLASSIFIERS, "--num-features", ",".join(map(str, ks)), "--cv", str(folds),
                   "--seed", "0", "--master", "local[2]", "--output", str(output / name)]
        for param in COMMON_PARAMS + extra:
            if param.split(".")[0] in usable:
                command += ["--param", param]
        if main(command) != 0:
            return 1
        # the work of every (method, fold), including those saved by earlier (resumed) runs
        timings = np.loadtxt(output / name / "timings.csv", delimiter=",", skiprows=1, usecols=(3, 4), ndmin=2)
        seconds[name] = float(timings.sum())
        commands[name] = "sparkfs " + " ".join(command).replace(str(output) + "/", "")
        directories.append(str(output / name))
    compared = output / "compared"
    for statistic in ("error_mean", "mean_fold_min_error"):
        if main(["compare", *directories, "--reference", "lfs", "--statistic", statistic,
                 "--output", str(compared / statistic)]) != 0:
            return 1
    lines = ["# Table II / Table V shape on our data (studies/table2_study.py)", ""]
    for name, command in commands.items():
        lines += [f"- {name} ({seconds[name]:.0f} s of selection and classification): `{command}`"]
    for statistic in ("error_mean", "mean_fold_min_error"):
        lines += ["", (compared / statistic / "comparison.md").read_text()]
    lines += ["", *tie_lines(directories), "", *timing_lines(directories)]
    report = ROOT / "benchmarks" / "results" / ("table2_quick.md" if args.quick else "table2.md")
    report.write_text("\n".join(lines) + "\n")
    if not args.quick:
        figures = ROOT / "docs" / "results"
        figures.mkdir(parents=True, exist_ok=True)
        for name in data_sets:
            shutil.copyfile(output / name / "error-svm.png", figures / f"{name}-error-svm.png")
    print(f"written: {report}")
    return 0


if __name__ == "__main__":
    sys.exit(main_study())
