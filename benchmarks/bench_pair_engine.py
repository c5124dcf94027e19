"""The pair engine against a named baseline commit, in the same run: is classic Spark still as fast?

ReliefF (k = 10, Euclidean) through ``relief_statistics`` on
* dense 20,000 x 500 (4 partitions, cached), every row a query: the collection + search + margins;
* sparse text-like 100,000 x 50,000, density 0.002 (8 partitions, cached), 1,000 sampled queries;
for (a) this checkout with the "context" transport (broadcast + treeAggregate, the classic default),
(b) this checkout with the "dataframe" transport (the Spark Connect path, run here on classic
Spark), and (c) the baseline commit (default: the last commit before the pair engine), checked
out into a temporary git worktree. Each variant runs in its own child process on local[2]
(same data, seeds and settings), alternating, and the table reports median times and the ratio
to the baseline, plus the largest score difference to it.

    .venv/bin/python -m benchmarks.bench_pair_engine [--baseline 6458720] [--repeats 3] [--quick]

Writes benchmarks/results/pair_engine.md.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.common import ROOT, write_table

CHILD = r"""
import importlib.util, json, os, sys, time
# Deliberate: this child measures ANOTHER checkout (the baseline's git worktree, or this one), so
# that checkout goes first on the path and its sparkfs is the one imported. The only sys.path
# change allowed in benchmarks/ and studies/ (tests/test_benchmark_scripts.py checks it).
sys.path.insert(0, sys.argv[1])
# The data generators of THIS checkout, loaded from their file (the baseline may have none).
spec = importlib.util.spec_from_file_location("bench_common", sys.argv[2])
common = importlib.util.module_from_spec(spec)
spec.loader.exec_module(common)
dense_frame, session, sparse_frame = common.dense_frame, common.session, common.sparse_frame
import numpy as np
try:
    from sparkfs.spark.relief import relief_statistics
except ImportError:                            # before the pair engine
    from sparkfs.spark.neighbours import relief_statistics
import inspect
spark = session()
case, transport, repeats = sys.argv[3], sys.argv[4], int(sys.argv[5])
quick = sys.argv[6] == "1"
if case == "dense":
    n = 5000 if quick else 20000
    df, p, extra = dense_frame(spark, n, 500, 2, partitions=4), 500, {}
else:
    n = 20000 if quick else 100000
    df, p, extra = sparse_frame(spark, n, 50000, 0.002, partitions=8), 50000, {"sample_size": 1000, "seed": 0}
df.count()
parameters = inspect.signature(relief_statistics).parameters
if "options" in parameters:                    # the options and engine objects (this checkout)
    from sparkfs.core.options import ReliefOptions
    from sparkfs.spark.method_setup import EngineOptions
    settings = {"options": ReliefOptions(variant="relieff", k=10, **extra),
                "engine": EngineOptions(transport=transport) if transport != "-" else None}
else:                                          # a checkout before them: the settings as keywords
    settings = dict(variant="relieff", k=10, **extra)
    if transport != "-" and "transport" in parameters:
        settings["transport"] = transport
times, result = [], None
for _ in range(repeats + 1):                   # the first run starts the Python workers: not counted
    started = time.perf_counter()
    result = relief_statistics(df, "features", "label", num_features=p, num_classes=2, **settings)
    times.append(time.perf_counter() - started)
print("RESULT " + json.dumps({"times": times[1:], "scores": result.scores.tolist(), "first": times[0]}))
"""


def run_child(code_root, case, transport, repeats, quick):
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(CHILD)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    completed = subprocess.run(
        [sys.executable, script.name, str(code_root), str(ROOT / "benchmarks" / "common.py"), case, transport,
         str(repeats),
         "1" if quick else "0"], capture_output=True, text=True, env=env, cwd=str(code_root),
    )
    os.unlink(script.name)
    lines = [line for line in completed.stdout.splitlines() if line.startswith("RESULT ")]
    if completed.returncode != 0 or not lines:
        raise RuntimeError(f"benchmark child failed ({code_root}, {case}, {transport}):\n{completed.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT "):])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default="6458720", help="git commit of the baseline (before the pair engine)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="smaller data (a smoke run)")
    args = parser.parse_args()
    worktree = Path(tempfile.mkdtemp(prefix="sparkfs-baseline-"))
    subprocess.run(["git", "worktree", "add", "--detach", str(worktree), args.baseline], cwd=ROOT, check=True,
                   capture_output=True)
    rows, notes = [], []
    try:
        for case in ("dense", "sparse"):
            measured = {}
            for label, code_root, transport in (("baseline", worktree, "-"), ("context", ROOT, "context"),
                                                ("dataframe", ROOT, "dataframe")):
                measured[label] = run_child(code_root, case, transport, args.repeats, args.quick)
            base = float(np.median(measured["baseline"]["times"]))
            base_scores = np.array(measured["baseline"]["scores"])
            for label in ("baseline", "context", "dataframe"):
                median = float(np.median(measured[label]["times"]))
                difference = float(np.max(np.abs(np.array(measured[label]["scores"]) - base_scores)))
                what = {"baseline": f"commit {args.baseline} (before the pair engine)",
                        "context": "pair engine, transport=context (classic default)",
                        "dataframe": "pair engine, transport=dataframe (Spark Connect path)"}[label]
                rows.append([case, what, f"{median:.2f}", f"{median / base:.2f}", f"{difference:.1e}"])
                notes.append(f"{case} {label}: runs " + ", ".join(f"{t:.2f}" for t in measured[label]["times"])
                             + f" s (first, with worker start-up, {measured[label]['first']:.2f} s)")
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, capture_output=True)
    size = "quick sizes (dense 5,000 x 500; sparse 20,000 x 50,000)" if args.quick else \
        "dense 20,000 x 500, all rows as queries; sparse 100,000 x 50,000, density 0.002, 1,000 sampled queries"
    notes = [f"ReliefF k=10 Euclidean through relief_statistics; {size}; local[2], cached input, median of "
             f"{args.repeats} runs after one warm-up, each variant in its own process."] + notes
    notes.append("Load average (1, 5, 15 min) at the end: " + ", ".join(f"{v:.1f}" for v in os.getloadavg()))
    write_table("pair_engine", "Pair engine vs the engine before it (same run)",
                ["data", "code", "median s", "ratio to baseline", "max |score - baseline|"], rows, notes)


if __name__ == "__main__":
    main()
