"""MultiSURF on Spark vs scikit-rebate and fast-select, and on the shape of scikit-rebate's GitHub issue #74.

* scikit-rebate's MultiSURF (n_jobs = 1) on the largest dense set (100 features; the row counts of
  ``--skrebate-rows`` tried in turn, skipped once the last time extrapolated quadratically passes
  the cap) it finishes within ``--skrebate-cap`` seconds, in a child process; sparkfs'
  ``MultiSURFSelector`` (its defaults: Manhattan on range-scaled features, scikit-rebate's
  definition; ``sampleSize`` = the rows, so every row is a query as in scikit-rebate) on the same
  data. Target: >= 20 x faster; the scores are compared too.
* fast-select's MultiSURF on the same set, when ``--fast-select-python`` names an interpreter
  that imports ``fast_select`` (a benchmark-only environment: it is not a sparkfs dependency),
  timed after a warm-up fit (Numba compilation excluded). Target: sparkfs faster.
* ``--big``: the shape of scikit-rebate's GitHub issue #74 (2,350 x 230,000, synthetic, seeded, 20
  informative features), 1 % sparse and dense, generated in the tasks (the driver never holds the
  matrix) and cached; ``--big-queries`` query rows (default: every row). Wall time (generation and
  caching included), fit time and the peak resident memory of the whole process tree (driver,
  JVM, Python workers). ``--big-features`` shrinks the width (a trial to extrapolate from).

Writes benchmarks/results/multisurf.md (``--big-only``: appends the big runs' table to it).

    .venv/bin/python -m benchmarks.bench_multisurf [--quick] [--skrebate-cap S] [--skrebate-rows 2000,4000,14000]
        [--fast-select-python PATH] [--big] [--big-only] [--big-kinds sparse,dense] [--big-features P]
        [--big-queries M] [--driver-memory 6g]
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from importlib import metadata

import numpy as np

from benchmarks.common import RESULTS, write_table
from benchmarks.common import timed_runs as timed

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
X, y = data["X"], data["y"]
fast_select.MultiSURF(backend="cpu").fit(X[:200], y[:200])  # warm-up: Numba compilation
started = time.perf_counter()
model = fast_select.MultiSURF(backend="cpu").fit(X, y)
elapsed = time.perf_counter() - started
np.save(sys.argv[2], np.asarray(model.feature_importances_, dtype=np.float64))
print(json.dumps({"seconds": elapsed, "version": fast_select.__version__}))
"""

BIG_ROWS, BIG_FEATURES, INFORMATIVE = 2_350, 230_000, 20


def gaussian_data(n_rows, n_features, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n_rows)
    X = rng.normal(size=(n_rows, n_features))
    X[:, :10] += y[:, None]
    return X, y


def session(driver_memory):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("sparkfs-bench-multisurf")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", driver_memory)
             # as a sparkfs local session: half the driver memory (a 1,000-row sample of 230,000
             # dense features is 1.7 GiB, above Spark's default 1g)
             .config("spark.driver.maxResultSize", f"{max(1, int(driver_memory.rstrip('g')) // 2)}g")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class PeakMemory:
    """Peak resident memory (GiB) of this process and all its descendants, sampled twice a second."""

    def __init__(self):
        self.peak, self._stop = 0.0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    @staticmethod
    def _tree_rss():
        children, rss = {}, {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(pid))
                rss[int(pid)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, IndexError, ValueError):
                continue
        total, todo = 0, [os.getpid()]
        while todo:
            pid = todo.pop()
            total += rss.get(pid, 0)
            todo += children.get(pid, [])
        return total / 2**30

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._tree_rss())
            self._stop.wait(0.5)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def frame_from_arrays(spark, X, y, partitions=4):
    from pyspark.ml.linalg import Vectors

    rows = [(Vectors.dense(row.tolist()), float(label)) for row, label in zip(X, y)]
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), ["features", "label"]).cache()


def big_frame(spark, n_rows, n_features, density, partitions, seed=7):
    """Rows made in the tasks (seeded per partition): labels 0/1; features 0..19 are N(label, 1) in
    every row; the others N(0, 1), all present (dense) or ``density * p`` of them per row (sparse)."""
    from pyspark.ml.linalg import Vectors

    def generate(index):
        rng = np.random.default_rng([seed, index])
        count = n_rows // partitions + (1 if index < n_rows % partitions else 0)
        nonzeros = None if density is None else max(INFORMATIVE + 1, int(round(density * n_features)))
        for _ in range(count):
            label = int(rng.integers(0, 2))
            if nonzeros is None:
                values = rng.normal(size=n_features)
                values[:INFORMATIVE] += label
                yield Vectors.dense(values), float(label)
            else:
                others = INFORMATIVE + rng.choice(n_features - INFORMATIVE, nonzeros - INFORMATIVE, replace=False)
                columns = np.concatenate([np.arange(INFORMATIVE), np.sort(others)])
                values = rng.normal(size=nonzeros)
                values[:INFORMATIVE] += label
                yield Vectors.sparse(n_features, columns, values), float(label)

    if density is None:
        return _dense_big_frame(spark, n_rows, n_features, partitions, seed)
    rdd = spark.sparkContext.parallelize(range(partitions), partitions).flatMap(generate)
    return spark.createDataFrame(rdd, ["features", "label"]).cache()


def _dense_big_frame(spark, n_rows, n_features, partitions, seed):
    """The dense rows of :func:`big_frame` (the same draws), made as Arrow arrays in the tasks and
    turned into vectors by Spark: pickling 230,000-value vectors row by row took 10 minutes."""
    import pyarrow as pa
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F

    def generate(batches):
        for batch in batches:
            for index in batch.column("id").to_pylist():
                rng = np.random.default_rng([seed, index])
                count = n_rows // partitions + (1 if index < n_rows % partitions else 0)
                for _ in range(count):
                    label = int(rng.integers(0, 2))
                    values = rng.normal(size=n_features)
                    values[:INFORMATIVE] += label
                    yield pa.RecordBatch.from_arrays([pa.array([values], type=pa.list_(pa.float64())),
                                                      pa.array([float(label)])], names=["values", "label"])

    frame = spark.range(partitions, numPartitions=partitions).mapInArrow(
        generate, "values array<double>, label double")
    return frame.select(array_to_vector(F.col("values")).alias("features"), "label").cache()


def run_child(python, script, X, y, cap_seconds, notes, name):
    """A fit in a child process: (seconds, scores, facts), or (None, None, None) past the cap or on failure."""
    with tempfile.TemporaryDirectory() as folder:
        data_path, scores_path = os.path.join(folder, "data.npz"), os.path.join(folder, "scores.npy")
        np.savez(data_path, X=X, y=y)
        try:
            completed = subprocess.run([python, "-c", script, data_path, scores_path], capture_output=True, text=True,
                                       timeout=cap_seconds, check=True)
        except subprocess.TimeoutExpired:
            notes.append(f"{name} did not finish {X.shape[0]:,} x {X.shape[1]} within {cap_seconds:.0f} s.")
            return None, None, None
        except subprocess.CalledProcessError as error:
            notes.append(f"{name} failed on {X.shape[0]:,} x {X.shape[1]}: {error.stderr.strip()[-300:]}")
            return None, None, None
        facts = json.loads(completed.stdout.strip().splitlines()[-1])
        return facts["seconds"], np.load(scores_path), facts


def largest_finished(args, n_features, notes):
    """scikit-rebate on growing row counts: the last (rows, seconds, scores) it finished."""
    finished = None
    for n_rows in ([300, 600] if args.quick else args.skrebate_rows):
        if finished is not None and finished[1] * (n_rows / finished[0]) ** 2 > args.skrebate_cap:
            notes.append(f"scikit-rebate {n_rows:,} x {n_features} skipped: extrapolated past the "
                         f"{args.skrebate_cap:.0f} s cap.")
            break
        X, y = gaussian_data(n_rows, n_features)
        seconds, scores, _ = run_child(sys.executable, SKREBATE_SCRIPT, X, y, args.skrebate_cap, notes,
                                       "scikit-rebate")
        if seconds is None:
            break
        notes.append(f"scikit-rebate MultiSURF {n_rows:,} x {n_features}: {seconds:.1f} s "
                     f"(load average {os.getloadavg()[0]:.1f} after it).")
        finished = (n_rows, seconds, scores)
    return finished


def versus_single_machine(spark, args, rows, notes):
    from sparkfs import MultiSURFSelector

    n_features = 30 if args.quick else 100
    finished = largest_finished(args, n_features, notes)
    if finished is None:
        return
    n_rows, skrebate_seconds, skrebate_scores = finished
    X, y = gaussian_data(n_rows, n_features)
    df = frame_from_arrays(spark, X, y)
    df.count()
    selector = MultiSURFSelector(sampleSize=n_rows, numFeatures=10)
    seconds, runs, model = timed(lambda: selector.fit(df))
    label = f"dense {n_rows:,} x {n_features}, every row a query (largest finished by scikit-rebate)"
    speedup = skrebate_seconds / seconds
    rows.append([label, "MultiSURFSelector (defaults, sampleSize = rows)", f"{seconds:.2f}",
                 f"scikit-rebate {metadata.version('skrebate')} MultiSURF, n_jobs=1", f"{skrebate_seconds:.1f}",
                 f"{speedup:.1f} x faster",
                 ">= 20 x", "yes" if speedup >= 20 else "no"])
    scores = np.asarray(model.scores)
    notes.append(f"Scores vs scikit-rebate: max |difference| = {np.abs(scores - skrebate_scores).max():.1e}; "
                 f"sparkfs runs {', '.join(f'{t:.1f}' for t in runs)} s; passes "
                 f"{', '.join(model.summary.get('passes', []))}.")
    if args.fast_select_python:
        fast_seconds, fast_scores, facts = run_child(args.fast_select_python, FAST_SELECT_SCRIPT, X, y,
                                                     args.skrebate_cap, notes, "fast-select")
        if fast_seconds is not None:
            rows.append([label, "MultiSURFSelector", f"{seconds:.2f}",
                         f"fast-select {facts['version']} MultiSURF (cpu, Numba, 2 threads, float32)",
                         f"{fast_seconds:.2f}", f"{fast_seconds / seconds:.2f} x", "> 1 x",
                         "yes" if fast_seconds > seconds else "no"])
            rank = np.corrcoef(np.argsort(np.argsort(scores)), np.argsort(np.argsort(fast_scores)))[0, 1]
            notes.append(f"Scores vs fast-select: max |difference| = {np.abs(scores - fast_scores).max():.1e} "
                         f"(it computes in float32), rank correlation {rank:.4f}; its time is after a warm-up "
                         "fit on 200 rows (Numba compilation excluded).")
    else:
        notes.append("fast-select not measured: no --fast-select-python given (it is not a sparkfs dependency).")
    df.unpersist()


def big_runs(spark, args, rows, notes):
    """The reported shape, 1 % sparse and dense: wall, fit and peak memory."""
    from sparkfs import MultiSURFSelector

    n_rows, n_features = BIG_ROWS, args.big_features
    queries = args.big_queries or n_rows
    for kind in args.big_kinds.split(","):
        density = 0.01 if kind == "sparse" else None
        label = f"{'1 % sparse' if density else 'dense'} {n_rows:,} x {n_features:,}, {queries:,} query rows"
        model, cached = None, None
        with PeakMemory() as memory:
            started = time.perf_counter()
            try:
                df = big_frame(spark, n_rows, n_features, density, partitions=args.big_partitions)
                df.count()
                cached = time.perf_counter()
                selector = MultiSURFSelector(sampleSize=queries, numFeatures=50,
                                             driverBudgetMB=args.driver_budget_mb)
                model = selector.fit(df)
                outcome = "finishes"
            except Exception as error:
                model, cached = None, cached or started
                outcome = f"fails: {type(error).__name__}: {str(error).splitlines()[0][:300]}"
            ended = time.perf_counter()
        fit = f"{ended - cached:.0f}" if model is not None else "-"
        found = "-"
        if model is not None:
            top = set(np.argsort(-np.asarray(model.scores))[:INFORMATIVE].tolist())
            found = f"{len(top & set(range(INFORMATIVE)))} of {INFORMATIVE}"
            summary = model.summary
            notes.append(f"{label}: passes {', '.join(summary.get('passes', []))}; "
                         f"{summary.get('query_batches', '?')} query batch(es); transport {summary.get('transport')}.")
        rows.append([label, f"{ended - started:.0f}", f"{cached - started:.0f}", fit, f"{memory.peak:.1f}", found,
                     outcome])
        print(rows[-1], flush=True)
        spark.catalog.clearCache()


def append_big_table(big_rows, notes):
    header = ["data", "wall s", "generate + cache s", "fit s", "peak memory GiB", "informative in top 20", "outcome"]
    lines = ["", f"## The scikit-rebate #74 shape ({time.strftime('%Y-%m-%d %H:%M')} UTC, {platform.machine()}, "
             f"{os.cpu_count()} cores, local[2])", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in big_rows]
    lines += [""] + [f"- {note}" for note in notes]
    with open(RESULTS / "multisurf.md", "a") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--skrebate-cap", type=float, default=600.0, help="seconds allowed to scikit-rebate per size")
    parser.add_argument("--skrebate-rows", type=lambda text: [int(v) for v in text.split(",")],
                        default=[2_000, 4_000, 8_000, 16_000], help="row counts tried for scikit-rebate (100 features)")
    parser.add_argument("--fast-select-python", default=None, help="an interpreter that imports fast_select")
    parser.add_argument("--big", action="store_true", help="also the 2,350 x 230,000 runs")
    parser.add_argument("--big-only", action="store_true", help="only the big runs, appended to the results file")
    parser.add_argument("--big-kinds", default="sparse,dense")
    parser.add_argument("--big-features", type=int, default=BIG_FEATURES)
    parser.add_argument("--big-queries", type=int, default=None, help="query rows of the big runs (default: all)")
    parser.add_argument("--big-partitions", type=int, default=16)
    parser.add_argument("--driver-budget-mb", type=float, default=2048.0, help="driverBudgetMB of the big runs")
    parser.add_argument("--driver-memory", default="6g")
    args = parser.parse_args()

    load_before = os.getloadavg()
    spark = session(args.driver_memory)
    rows, big_rows, notes, big_notes = [], [], [], []
    command = "python -m benchmarks.bench_multisurf " + " ".join(sys.argv[1:])
    if not args.big_only:
        versus_single_machine(spark, args, rows, notes)
    if args.big or args.big_only:
        big_runs(spark, args, big_rows, big_notes)
    load_after = os.getloadavg()
    common = [
        f"Command: `{command}`; spark.driver.memory {args.driver_memory}.",
        f"Load average (1, 5, 15 min) before: {load_before[0]:.1f}, {load_before[1]:.1f}, {load_before[2]:.1f}; "
        f"after: {load_after[0]:.1f}, {load_after[1]:.1f}, {load_after[2]:.1f} (other jobs share the 2 cores).",
    ]
    notes += common
    if args.quick:
        notes.append("--quick: a smoke run at small sizes, not the full benchmark (the goals need the full run).")
    if not args.big_only:
        notes += ["sparkfs: local[2], input cached, median of 3 runs; every pass included.",
                  "scikit-rebate in a child process, n_jobs=1, fit time only (its n x n distance matrix included)."]
        write_table("multisurf", "MultiSURF: sparkfs vs scikit-rebate and fast-select",
                    ["data", "sparkfs", "sparkfs s", "compared with", "their s", "ratio", "target", "met"], rows,
                    notes)
    if big_rows:
        append_big_table(big_rows, big_notes + common)
    spark.stop()


if __name__ == "__main__":
    main()
