"""ReliefF on Spark vs scikit-rebate and vs the GEMM lower bound of its distance computation.

* Dense 20,000 x 500 (binary, cached, 4 partitions): relieff, k = 10, every row a query,
  Euclidean (the default). GEMM lower bound = the flops of the distance products
  (2 m n p, m = n = 20,000 queries and rows) / the measured NumPy matmul rate on this machine
  (2 threads, the cores Spark's local[2] uses). Target: sparkfs time <= 3 x bound.
* Sparse text-like 100,000 x 50,000, density 0.002 (Zipf-like columns, 8 partitions):
  relieff, k = 10, sampleSize 1,000 queries.
* scikit-rebate's ReliefF (n_neighbors = 10, n_jobs = 1: faster than 2 here) on the largest dense
  set (200 features; 5,000, 10,000, 20,000 rows tried in turn) it finishes within the time cap
  (default 300 s per size), in a subprocess; sparkfs relieff on the same data with
  scikit-rebate's definition (scaling="range", metric="manhattan", every row a query) and with
  the default (Euclidean, no scaling). Target: >= 20 x faster.

Writes benchmarks/results/relief.md.

    .venv/bin/python -m benchmarks.bench_relief [--quick] [--skrebate-cap SECONDS] [--skrebate-rows 5000,10000]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks.common import dense_frame, session, sparse_frame, write_table
from benchmarks.common import timed_runs as timed

SKREBATE_SCRIPT = """
import json, sys, time, warnings
import numpy as np
warnings.filterwarnings("ignore")
from skrebate import ReliefF
data = np.load(sys.argv[1])
started = time.perf_counter()
model = ReliefF(n_neighbors=10, n_jobs=1).fit(data["X"], data["y"])
elapsed = time.perf_counter() - started
np.save(sys.argv[2], model.feature_importances_)
print(json.dumps({"seconds": elapsed}))
"""


def matmul_rate(size=(2048, 2048, 500), repeats=7):
    """Best GFLOP/s of a float64 GEMM of the distance-block shape, in this (2-thread) process."""
    rng = np.random.default_rng(0)
    left, right = rng.normal(size=(size[0], size[2])), rng.normal(size=(size[1], size[2]))
    left @ right.T
    best = np.inf
    for _ in range(repeats):
        started = time.perf_counter()
        left @ right.T
        best = min(best, time.perf_counter() - started)
    return 2.0 * size[0] * size[1] * size[2] / best / 1e9


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


def run_skrebate(X, y, cap_seconds):
    """scikit-rebate ReliefF in a child process; (seconds, scores) or (None, None) past the cap."""
    with tempfile.TemporaryDirectory() as folder:
        data_path, scores_path = os.path.join(folder, "data.npz"), os.path.join(folder, "scores.npy")
        np.savez(data_path, X=X, y=y)
        try:
            completed = subprocess.run(
                [sys.executable, "-c", SKREBATE_SCRIPT, data_path, scores_path],
                capture_output=True, text=True, timeout=cap_seconds, check=True,
            )
        except subprocess.TimeoutExpired:
            return None, None
        seconds = json.loads(completed.stdout.strip().splitlines()[-1])["seconds"]
        return seconds, np.load(scores_path)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--skrebate-cap", type=float, default=300.0, help="seconds allowed to scikit-rebate per size")
    parser.add_argument("--skrebate-rows", type=lambda text: [int(v) for v in text.split(",")],
                        default=[5_000, 10_000, 20_000], help="row counts tried for scikit-rebate (200 features)")
    args = parser.parse_args()
    from sparkfs.core.options import ReliefOptions
    from sparkfs.spark.relief import relief_statistics

    load_before = os.getloadavg()
    spark = session()
    rows, notes = [], []

    def relieff(df, num_features, **params):   # params: fields of ReliefOptions
        return relief_statistics(df, "features", "label", num_features=num_features, num_classes=2,
                                 options=ReliefOptions(variant="relieff", k=10, **params))

    # --- dense: sparkfs vs the GEMM lower bound ------------------------------------------------
    n_dense, p_dense = (2_000, 100) if args.quick else (20_000, 500)
    df = dense_frame(spark, n_dense, p_dense, 2)
    df.count()
    # The rate is measured right before and right after the timed runs (other jobs may share the
    # cores); the larger one gives the smaller, i.e. stricter, bound.
    rate_before = matmul_rate()
    seconds, runs, result = timed(lambda: relieff(df, p_dense), repeats=3)
    rate_gflops = max(rate_before, matmul_rate())
    bound = 2.0 * n_dense * n_dense * p_dense / (rate_gflops * 1e9)
    rows.append([f"dense {n_dense:,} x {p_dense:,}, all {n_dense:,} rows as queries", "relieff k=10 euclidean",
                 f"{seconds:.2f}", f"GEMM bound ({rate_gflops:.0f} GFLOP/s)", f"{bound:.2f}",
                 f"{seconds / bound:.2f} x bound", "<= 3 x", "yes" if seconds <= 3 * bound else "no"])
    notes.append(f"Dense passes: {', '.join(result.info['passes'])}; {result.info['query_batches']} query batch(es); "
                 f"runs {', '.join(f'{t:.1f}' for t in runs)} s (the first includes starting the Python workers).")
    df.unpersist()

    # --- sparse text-like --------------------------------------------------------------------
    n_sparse, p_sparse, sample = (5_000, 5_000, 200) if args.quick else (100_000, 50_000, 1_000)
    df = sparse_frame(spark, n_sparse, p_sparse, 0.002)
    df.count()
    seconds, runs, result = timed(lambda: relieff(df, p_sparse, sample_size=sample, seed=0), repeats=3)
    rows.append([f"sparse {n_sparse:,} x {p_sparse:,}, density 0.002, sampleSize {sample:,}", "relieff k=10 euclidean",
                 f"{seconds:.2f}", "-", "-", "-", "-", "-"])
    notes.append(f"Sparse passes: {', '.join(result.info['passes'])}; the rows stay CSR throughout; "
                 f"runs {', '.join(f'{t:.1f}' for t in runs)} s.")
    df.unpersist()

    # --- scikit-rebate on the largest set it finishes within the cap --------------------------
    # Sizes tried in increasing order; a size is skipped when the last time, extrapolated
    # quadratically (scikit-rebate builds an n x n distance matrix), would exceed the cap.
    n_features = 50 if args.quick else 200
    finished = None
    for n_rows in ([500, 1_000] if args.quick else args.skrebate_rows):
        if finished is not None and finished[1] * (n_rows / finished[0]) ** 2 > args.skrebate_cap:
            notes.append(f"scikit-rebate {n_rows:,} x {n_features} skipped: extrapolated past the "
                         f"{args.skrebate_cap:.0f} s cap.")
            break
        X, y = gaussian_data(n_rows, n_features)
        skrebate_seconds, skrebate_scores = run_skrebate(X, y, args.skrebate_cap)
        if skrebate_seconds is None:
            notes.append(f"scikit-rebate did not finish {n_rows:,} x {n_features} within {args.skrebate_cap:.0f} s.")
            break
        notes.append(f"scikit-rebate ReliefF {n_rows:,} x {n_features}: {skrebate_seconds:.1f} s.")
        finished = (n_rows, skrebate_seconds, skrebate_scores)
    if finished is not None:
        n_rows, skrebate_seconds, skrebate_scores = finished
        X, y = gaussian_data(n_rows, n_features)
        df = frame_from_arrays(spark, X, y)
        df.count()
        same_definition, runs, result = timed(lambda: relieff(df, n_features, metric="manhattan", scaling="range"))
        default_seconds, default_runs, _ = timed(lambda: relieff(df, n_features))
        label = f"dense {n_rows:,} x {n_features}, all rows as queries (largest finished by scikit-rebate)"
        for config, seconds, target in (
            ("relieff k=10 manhattan, range (skrebate's definition)", same_definition, ">= 20 x"),
            ("relieff k=10 euclidean (default)", default_seconds, ">= 20 x"),
        ):
            speedup = skrebate_seconds / seconds
            rows.append([label, config, f"{seconds:.2f}", "scikit-rebate ReliefF k=10", f"{skrebate_seconds:.1f}",
                         f"{speedup:.1f} x faster", target, "yes" if speedup >= 20 else "no"])
        notes.append(f"Scores vs scikit-rebate on {n_rows:,} x {n_features}: max |difference| = "
                     f"{np.abs(result.scores - skrebate_scores).max():.1e} (same definition; continuous data, "
                     "no ties).")
        notes.append(f"Runs on that set: manhattan {', '.join(f'{t:.1f}' for t in runs)} s; "
                     f"euclidean {', '.join(f'{t:.1f}' for t in default_runs)} s.")
        df.unpersist()

    load_after = os.getloadavg()
    notes += [
        "sparkfs: local[2], input cached, median of 3 runs; the time includes every pass "
        "(row collection/sample, neighbour search, margins) and the driver-side steps.",
        f"GEMM rate: best of 7 float64 2048 x 2048 x 500 products in one 2-thread NumPy process, measured "
        f"just before and just after the dense runs ({rate_before:.0f} and the larger, "
        f"{rate_gflops:.0f} GFLOP/s, used). "
        f"Bound = 2 m n p flops / rate (the distance products only).",
        f"Load average (1, 5, 15 min) before: {load_before[0]:.1f}, {load_before[1]:.1f}, {load_before[2]:.1f}; "
        f"after: {load_after[0]:.1f}, {load_after[1]:.1f}, {load_after[2]:.1f} (other jobs share the 2 cores).",
        "scikit-rebate 0.8.4 in a child process, n_jobs=1 (n_jobs=2 was slower here), fit time only.",
    ]
    write_table("relief", "ReliefF: sparkfs vs scikit-rebate and the GEMM lower bound",
                ["data", "sparkfs", "sparkfs s", "compared with", "their s", "ratio", "target", "met"], rows, notes)
    spark.stop()


if __name__ == "__main__":
    main()
