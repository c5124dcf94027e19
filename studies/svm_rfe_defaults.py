"""SVM-RFE: the old defaults (data as given, 10 % per round) against the new ones (standardised,
half per round above 1,000 features, then 10 %), on 4,000-7,000-feature microarray sets of
../shared/data whose old default finishes here (values on log or z scales: Prostate_GE, GLIOMA,
ALLAML); on the raw-intensity sets (9_Tumors, Leukemia1) one old-default elimination runs for
minutes, which is the timing problem itself: the CLI timings below the table in the results file
were measured by hand (`time sparkfs select ... --method svm-rfe`, old settings via --param).

Criterion, fixed before the run: 5-fold stratified CV (seed 0); in every fold SVM-RFE runs on the
training rows only, and a linear SVM (LinearSVC, hinge, C = 1, on the training fold's standardised
top 50) is scored on the held-out rows. The new default passes when its mean accuracy is at most
2 points below the old default's on every set. Fit time and unconverged fits are reported beside.

    python -m studies.svm_rfe_defaults   # writes benchmarks/results/svm_rfe_defaults.md
"""

import os
import sys
import time

import numpy as np
from sklearn.model_selection import StratifiedKFold
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from benchmarks.common import RESULTS, load_npz
from sparkfs.core import svm_rfe as sr

SETS = ("Prostate_GE", "GLIOMA", "ALLAML")
TOP = 50
VARIANTS = {"old: standardize=False, halveAbove=0": {"standardize": False, "halve_above": 0},
            "new: standardize=True, halveAbove=1000": {"standardize": True, "halve_above": 1000}}


def fold_accuracy(X, y, train, test, variant):
    started = time.perf_counter()
    result = sr.svm_rfe(X[train], y[train], step=0.1, **variant)
    seconds = time.perf_counter() - started
    top = np.argsort(-result.scores, kind="stable")[:TOP]
    scaler = StandardScaler().fit(X[train][:, top])
    svm = LinearSVC(C=1.0, loss="hinge", dual="auto", max_iter=10_000, random_state=0)
    svm.fit(scaler.transform(X[train][:, top]), y[train])
    accuracy = float(np.mean(svm.predict(scaler.transform(X[test][:, top])) == y[test]))
    return accuracy, seconds, result.not_converged, result.n_remaining.size


def main(out=RESULTS / "svm_rfe_defaults.md"):
    import warnings
    warnings.simplefilter("ignore")   # the final classifier's own warnings; RFE's are counted
    lines = ["# SVM-RFE defaults: old vs new (studies/svm_rfe_defaults.py)", "",
             "Criterion (stated before the run): 5-fold stratified CV, RFE on the training fold only, LinearSVC "
             f"(hinge, C = 1) on the training fold's standardised top {TOP}; the new default passes when its mean "
             "accuracy is at most 2 points below the old one's on every set.", "",
             "| set | n x d | variant | accuracy (mean ± sd) | RFE seconds per fold | fits not converged |",
             "|---|---|---|---|---:|---|"]
    for name in SETS:
        X, y = load_npz(name)
        folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X, y))
        for label, variant in VARIANTS.items():
            runs = [fold_accuracy(X, y, train, test, variant) for train, test in folds]
            accuracy = np.array([r[0] for r in runs])
            lines.append(f"| {name} | {X.shape[0]} x {X.shape[1]} | {label} | {100 * accuracy.mean():.1f} ± "
                         f"{100 * accuracy.std():.1f} | {np.mean([r[1] for r in runs]):.1f} | "
                         f"{sum(r[2] for r in runs)} of {sum(r[3] for r in runs)} |")
            print(lines[-1], flush=True)
    lines += ["", f"Machine: {os.cpu_count()} cores, shared; load average at the end {os.getloadavg()[0]:.1f}.", ""]
    out.write_text("\n".join(lines))


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    sys.exit(main())
