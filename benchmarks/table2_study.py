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

Method settings are the selectors' defaults except where a run would take hours on this
2-core machine, stated here and in docs/results.md: simba takes mini-batches of 8 (the default 1
means one Spark job per training row), parzen-ise stops after 20 descent steps on the two
microarray sets, and qfs keeps its default 500 candidates.

    .venv/bin/python benchmarks/table2_study.py [--quick] [--output DIR]

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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

from sparkfs.cli import main  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
METHODS = ["lfs", "qfs", "relieff", "mrelief", "prelief", "lmba", "simba", "parzen-ise", "svm-rfe",
           "anova", "chi2", "mutual-info", "random"]
CLASSIFIERS = "svm,rbf-svm,nb,tree,knn"
#: name -> (Max#, k grid, folds, extra params)
DATA_SETS = {
    "wine": (10, list(range(1, 11)), 10, []),
    "digits": (40, [1, 2, 3, 5, 8, 10, 15, 20, 25, 30, 40], 4, []),
    "leukemia_S3": (60, [1, 2, 3, 5, 8, 10, 15, 20, 30, 40, 50, 60], 4, ["parzen-ise.maxIter=20"]),
    "nci9": (60, [1, 2, 3, 5, 8, 10, 15, 20, 30, 40, 50, 60], 2, ["parzen-ise.maxIter=20"]),
}
COMMON_PARAMS = ["simba.batchSize=8"]


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
        data = np.load(SHARED / f"{name}.npz")
        X, y = data["X"], data["y"]
    dump_svmlight_file(np.asarray(X, dtype=np.float64), np.asarray(y), str(path), zero_based=False)
    return path


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
        command = ["evaluate", "--input", str(path), "--format", "libsvm", "--methods", ",".join(methods),
                   "--classifiers", CLASSIFIERS, "--num-features", ",".join(map(str, ks)), "--cv", str(folds),
                   "--seed", "0", "--master", "local[2]", "--output", str(output / name)]
        for param in COMMON_PARAMS + extra:
            if param.split(".")[0] in methods:
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
    lines = ["# Table II / Table V shape on our data (benchmarks/table2_study.py)", ""]
    for name, command in commands.items():
        lines += [f"- {name} ({seconds[name]:.0f} s of selection and classification): `{command}`"]
    for statistic in ("error_mean", "mean_fold_min_error"):
        lines += ["", (compared / statistic / "comparison.md").read_text()]
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
