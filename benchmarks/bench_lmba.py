"""Lmba and Simba on Spark: seconds per step and per run, against one LFS fit and one ReliefF run
on the same cached data (same session, same run).

* dense 20,000 x 500 (4 partitions), batch 256, a pool of 2,048 sampled instances, I = 2,048
  (8 steps);
* sparse term matrix 20,000 x 5,000, density 0.01 (8 partitions), batch 64, pool 512, I = 512
  (8 steps): the pool's target vectors are held dense (pool x k x D), so wide sparse data need a
  pool sample.

Seconds per step are marginal: runs with I = pool and with I = 3 x pool, difference in time over
difference in steps. Baselines: one LFS fit (one pass, JVM statistics) and one ReliefF run (k=10, all rows as
queries on dense; the same 512 sampled queries on sparse). Target: a step costs at
most about two LFS passes.

    .venv/bin/python -m benchmarks.bench_lmba [--repeats 2]

Writes benchmarks/results/lmba.md.
"""

import argparse
import os
from functools import partial

from benchmarks.common import dense_frame, session, sparse_frame, timed_runs, write_table

LONG = 3  # the long runs pick LONG x pool instances: the step cost is the difference per step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    from sparkfs import FisherMarkovSelector, LmbaSelector, ReliefSelector, SimbaSelector

    spark = session()
    cases = [
        ("dense 20,000 x 500", dense_frame(spark, 20000, 500, 2, partitions=4), 256, 2048, None),
        ("sparse 20,000 x 5,000, density 0.01", sparse_frame(spark, 20000, 5000, 0.01, partitions=8), 64, 512, 512),
    ]
    rows, notes = [], []
    for name, df, batch, pool, relief_sample in cases:
        df.count()
        lfs_seconds, lfs_runs, _ = timed_runs(lambda df=df: FisherMarkovSelector(numFeatures=10).fit(df),
                                              args.repeats)
        relief = ReliefSelector(numFeatures=10, k=10, scaling="none", sampleSize=relief_sample)
        relief_seconds, relief_runs, _ = timed_runs(partial(relief.fit, df), args.repeats)
        rows.append([name, "lfs (one pass)", f"{lfs_seconds:.2f}", "-", "1.00", "-"])
        rows.append([name, f"relieff k=10 ({'all rows' if not relief_sample else f'{relief_sample} queries'})",
                     f"{relief_seconds:.2f}", "-", f"{relief_seconds / lfs_seconds:.2f}", "-"])
        for method, selector in (("lmba", LmbaSelector), ("simba", SimbaSelector)):
            def make(picked, selector=selector, batch=batch, pool=pool):
                return selector(numFeatures=10, batchSize=batch, sampleSize=pool, iterations=picked)
            seconds, runs, model = timed_runs(lambda pool=pool, df=df: make(pool).fit(df), args.repeats)
            long_seconds, long_runs, long_model = timed_runs(lambda pool=pool, df=df: make(LONG * pool).fit(df),
                                                             args.repeats)
            steps, long_steps = model.summary["steps"], long_model.summary["steps"]
            per_step = (long_seconds - seconds) / (long_steps - steps)
            rows.append([name, f"{method} batch {batch}, pool {pool}, I = {pool}", f"{seconds:.2f}",
                         f"{per_step:.2f}", f"{seconds / lfs_seconds:.2f}", f"{per_step / lfs_seconds:.2f}"])
            notes.append(f"{name}, {method}: {steps} steps, runs " + ", ".join(f"{t:.2f}" for t in runs)
                         + f" s; with I = {LONG} x pool, {long_steps} steps, runs "
                         + ", ".join(f"{t:.2f}" for t in long_runs) + " s")
        notes.append(f"{name}: lfs runs " + ", ".join(f"{t:.2f}" for t in lfs_runs) + " s; relieff runs "
                     + ", ".join(f"{t:.2f}" for t in relief_runs) + " s")
    notes.append("local[2], cached input, median of the runs. Seconds per step = (median run with I = "
                 f"{LONG} x pool - median run with I = pool) / (difference in steps): the marginal cost of a step, "
                 "without the one-off passes (pool sample, column statistics, Lmba's target search and fetch, "
                 "block cache), which the run column includes. Target: a step <= about 2 LFS passes.")
    notes.append("Load average (1, 5, 15 min) at the end: " + ", ".join(f"{v:.1f}" for v in os.getloadavg()))
    write_table("lmba", "Lmba and Simba: seconds per step and per run vs one LFS pass and one ReliefF run",
                ["data", "method", "run s", "s per step", "run / lfs", "step / lfs"], rows, notes)


if __name__ == "__main__":
    main()
