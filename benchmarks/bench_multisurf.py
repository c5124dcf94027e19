"""MultiSURF on Spark vs scikit-rebate (and fast-select when an interpreter with it is given).

* scikit-rebate's MultiSURF (n_jobs = 1) on the largest dense set (100 features; the row counts of
  ``--skrebate-rows`` tried in turn, skipped once the last time extrapolated quadratically passes
  the cap) it finishes within ``--skrebate-cap`` seconds, in a child process; sparkfs multisurf on
  the same data with every row a query and scikit-rebate's definition (the defaults:
  Manhattan on range-scaled features). Target: >= 20 x faster; the scores are compared too.
* fast-select's MultiSURF on the same set, when ``--fast-select-python`` names an interpreter
  that imports ``fast_select`` (a benchmark-only environment: it is not a sparkfs dependency).
  Target: sparkfs faster.
* ``--big``: the shape of scikit-rebate issue 74 (2,350 x 230,000, synthetic), dense and 1 %
  sparse, every row a query: does it finish here (``--big-rows`` to shrink it).

Writes benchmarks/results/multisurf.md.

    .venv/bin/python benchmarks/bench_multisurf.py [--quick] [--skrebate-cap S] [--skrebate-rows 500,1000]
        [--fast-select-python PATH] [--big] [--big-rows N]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import session, sparse_frame, write_table  # noqa: E402
from _common import timed_runs as timed  # noqa: E402

SKREBATE_SCRIPT = """
import json, sys, time, warnings
import numpy as np
warnings.filterwarnings("ignore")
from skrebate import MultiSURF
data = np.load(sys.argv[1])
started = time.perf_counter()
model = MultiSURF(n_jobs=1).fit(data["X"], data["y"])
elapsed = time.perf_counter() - started
np.save(sys.argv[2], model.feature_importances_)
print(json.dumps({"seconds": elapsed}))
"""

FAST_SELECT_SCRIPT = """
import json, sys, time, warnings
import numpy as np
warnings.filterwarnings("ignore")
import fast_select
data = np.load(sys.argv[1])
started = time.perf_counter()
model = fast_select.MultiSURF().fit(data["X"], data["y"])
elapsed = time.perf_counter() - started
np.save(sys.argv[2], np.asarray(model.feature_importances_))
print(json.dumps({"seconds": elapsed}))
"""


def gaussian_data(n_rows, n_features, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_rows)
    X = rng.normal(size=(n_rows, n_features))
    X[:, :10] += y[:, None]
    return X, y


def frame_from_arrays(spark, X, y, partitions=4):
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.dense(row.tolist()), float(label)) for row, label in zip(X, y)]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), ["features", "label"]).cache()


def run_child(python, script, X, y, cap_seconds):
    """A fit in a child process: (seconds, scores), or (None, None) past the cap or on failure."""
    with tempfile.TemporaryDirectory() as folder:
        data_path, scores_path = os.path.join(folder, "data.npz"), os.path.join(folder, "scores.npy")
        np.savez(data_path, X=X, y=y)
        try:
            completed = subprocess.run([python, "-c", script, data_path, scores_path], capture_output=True, text=True,
                                       timeout=cap_seconds, check=True)
        except (subprocess.TimeoutExpired, subprocess.CalledProcessError):
            return None, None
        return json.loads(completed.stdout.strip().splitlines()[-1])["seconds"], np.load(scores_path)


def largest_finished(args, n_features, notes):
    """scikit-rebate on growing row counts: the last (rows, seconds, scores) it finished."""
    finished = None
    for n_rows in ([300, 600] if args.quick else args.skrebate_rows):
        if finished is not None and finished[1] * (n_rows / finished[0]) ** 2 > args.skrebate_cap:
            notes.append(f"scikit-rebate {n_rows:,} x {n_features} skipped: extrapolated past the "
                         f"{args.skrebate_cap:.0f} s cap.")
            break
        X, y = gaussian_data(n_rows, n_features)
        seconds, scores = run_child(sys.executable, SKREBATE_SCRIPT, X, y, args.skrebate_cap)
        if seconds is None:
            notes.append(f"scikit-rebate did not finish {n_rows:,} x {n_features} within {args.skrebate_cap:.0f} s.")
            break
        notes.append(f"scikit-rebate MultiSURF {n_rows:,} x {n_features}: {seconds:.1f} s.")
        finished = (n_rows, seconds, scores)
    return finished


def big_runs(spark, args, multisurf, rows, notes):
    """The reported shape, dense and 1 % sparse, every row a query."""
    n_rows, n_features = args.big_rows, 230_000
    for label, density in (("1 % sparse", 0.01), ("dense", None)):
        if density is None:
            rng = np.random.default_rng(1)
            X, y = rng.normal(size=(n_rows, n_features)).astype(np.float64), rng.integers(0, 2, n_rows)
            df = frame_from_arrays(spark, X, y, partitions=8)
            del X
        else:
            df = sparse_frame(spark, n_rows, n_features, density)
        df.count()
        seconds, _, result = timed(lambda: multisurf(df, n_features, sample_size=None, driver_budget_mb=1e6),
                                   repeats=1)
        rows.append([f"{label} {n_rows:,} x {n_features:,}, every row a query", "multisurf (defaults)",
                     f"{seconds:.1f}", "-", "-", "-", "finishes", "yes"])
        notes.append(f"{label}: passes {', '.join(result.info['passes'])}; "
                     f"{result.info['query_batches']} query batch(es).")
        df.unpersist()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--skrebate-cap", type=float, default=600.0, help="seconds allowed to scikit-rebate per size")
    parser.add_argument("--skrebate-rows", type=lambda text: [int(v) for v in text.split(",")],
                        default=[1_000, 2_000, 4_000, 8_000], help="row counts tried for scikit-rebate (100 features)")
    parser.add_argument("--fast-select-python", default=None, help="an interpreter that imports fast_select")
    parser.add_argument("--big", action="store_true", help="also the 2,350 x 230,000 runs (dense and 1 % sparse)")
    parser.add_argument("--big-rows", type=int, default=2_350)
    args = parser.parse_args()
    from sparkfs.spark.multisurf import multisurf_statistics

    load_before = os.getloadavg()
    spark = session()
    rows, notes = [], []

    def multisurf(df, num_features, **params):
        return multisurf_statistics(df, "features", "label", num_features=num_features, num_classes=2,
                                    variant="multisurf", **params)

    n_features = 30 if args.quick else 100
    finished = largest_finished(args, n_features, notes)
    if finished is not None:
        n_rows, skrebate_seconds, skrebate_scores = finished
        X, y = gaussian_data(n_rows, n_features)
        df = frame_from_arrays(spark, X, y)
        df.count()
        seconds, runs, result = timed(lambda: multisurf(df, n_features))
        label = f"dense {n_rows:,} x {n_features}, every row a query (largest finished by scikit-rebate)"
        speedup = skrebate_seconds / seconds
        rows.append([label, "multisurf (manhattan, range: skrebate's definition)", f"{seconds:.2f}",
                     "scikit-rebate MultiSURF", f"{skrebate_seconds:.1f}", f"{speedup:.1f} x faster", ">= 20 x",
                     "yes" if speedup >= 20 else "no"])
        difference = np.abs(result.scores - skrebate_scores).max()
        notes.append(f"Scores vs scikit-rebate: max |difference| = {difference:.1e}; sparkfs runs "
                     f"{', '.join(f'{t:.1f}' for t in runs)} s; passes {', '.join(result.info['passes'])}.")
        if args.fast_select_python:
            fast_seconds, _ = run_child(args.fast_select_python, FAST_SELECT_SCRIPT, X, y, args.skrebate_cap)
            if fast_seconds is None:
                notes.append("fast-select did not finish (or failed) within the cap.")
            else:
                rows.append([label, "multisurf", f"{seconds:.2f}", "fast-select MultiSURF", f"{fast_seconds:.2f}",
                             f"{fast_seconds / seconds:.2f} x", "> 1 x", "yes" if fast_seconds > seconds else "no"])
        else:
            notes.append("fast-select not measured: no --fast-select-python given (it is not a sparkfs dependency).")
        df.unpersist()
    if args.big:
        big_runs(spark, args, multisurf, rows, notes)
    load_after = os.getloadavg()
    if args.quick:
        notes.append("--quick: a smoke run at small sizes, not the issue's benchmark (the goals need the full run).")
    notes += [
        "sparkfs: local[2], input cached, median of 3 runs (1 for the big shape); every pass included.",
        f"Load average (1, 5, 15 min) before: {load_before[0]:.1f}, {load_before[1]:.1f}, {load_before[2]:.1f}; "
        f"after: {load_after[0]:.1f}, {load_after[1]:.1f}, {load_after[2]:.1f} (other jobs share the 2 cores).",
        "scikit-rebate in a child process, n_jobs=1, fit time only (its n x n distance matrix included).",
    ]
    write_table("multisurf", "MultiSURF: sparkfs vs scikit-rebate",
                ["data", "sparkfs", "sparkfs s", "compared with", "their s", "ratio", "target", "met"], rows, notes)
    spark.stop()


if __name__ == "__main__":
    main()
