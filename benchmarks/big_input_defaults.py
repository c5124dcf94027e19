"""Big input with default settings: ``sparkfs select`` on a 250,000 x 631 dense Parquet
file (the shape of the ECBDL14 protein set) with no memory flag, for lfs, anova and relieff
(m = 10 sampled queries), each in its own process as a user would run it.

Before the fix every run died with ``java.lang.OutOfMemoryError`` (Spark's 1g default driver
heap) and the user was told ``ConnectionRefusedError``. Records exit code, wall seconds, the
driver memory the session was given (from summary.json) and the error line if any. The last three
runs force Spark's old 1g default, to show which still fail there and how a failure is reported.

    .venv/bin/python -m benchmarks.big_input_defaults [--rows 250000] [--workdir /tmp/sparkfs_big]

Writes benchmarks/results/big_input_defaults.md. Needs about 3 GB of disk in the work dir.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import write_table

FEATURES = 631


def write_parquet(path: Path, rows: int) -> None:
    """Dense float64 columns f0..f630 and an integer label, written in row groups (pyarrow)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    writer = None
    chunk = 25_000
    for start in range(0, rows, chunk):
        count = min(chunk, rows - start)
        labels = rng.integers(0, 2, count)
        values = rng.normal(size=(count, FEATURES)) + 0.3 * labels[:, None] * (np.arange(FEATURES) < 20)
        table = pa.table({**{f"f{j}": values[:, j] for j in range(FEATURES)}, "label": labels})
        writer = writer or pq.ParquetWriter(str(path), table.schema)
        writer.write_table(table)
    writer.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--workdir", default="/tmp/sparkfs_big")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    data = work / f"wide_{args.rows}.parquet"
    if not data.exists():
        write_parquet(data, args.rows)
    size_gb = data.stat().st_size / 1e9
    environment = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    environment.pop("SPARK_DRIVER_MEMORY", None)
    rows = []
    runs = (("lfs", []), ("anova", []), ("relieff", ["--param", "sampleSize=10"]),
            # Spark's own default heap, as before the fix: what still fails must say what it is
            ("lfs", ["--driver-memory", "1g"]), ("anova", ["--driver-memory", "1g"]),
            ("relieff", ["--param", "sampleSize=10", "--driver-memory", "1g"]))
    for method, params in runs:
        out = work / f"out_{method}"
        shutil.rmtree(out, ignore_errors=True)
        command = [sys.executable, "-m", "sparkfs.cli", "select", "--input", str(data), "--format", "parquet",
                   "--label-col", "label", "--method", method, *params, "--output", str(out)]
        started = time.perf_counter()
        finished = subprocess.run(command, env=environment, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        memory, error = "-", ""
        if finished.returncode == 0:
            summary = json.loads((out / "summary.json").read_text())
            memory = summary.get("spark_memory_settings", {}).get("spark.driver.memory", "Spark's default")
        else:
            # the JVM's own stderr may run into the same line: take the message from "sparkfs: " on
            error = next((line[line.index("sparkfs: "):] for line in finished.stderr.splitlines()
                          if "sparkfs: " in line), "")[:400]
        rows.append([method, " ".join(params) or "-", finished.returncode, f"{seconds:.1f}", memory, error or "-"])
        shutil.rmtree(out, ignore_errors=True)
    write_table("big_input_defaults", f"sparkfs select on {args.rows:,} x {FEATURES} dense Parquet "
                f"({size_gb:.2f} GB) with default settings",
                ["method", "params", "exit code", "seconds", "driver memory given", "error"], rows,
                [f"Command: `python -m sparkfs.cli select --input {data.name} --format parquet --label-col label "
                 "--method M --output DIR` (no memory flag, no SPARK_DRIVER_MEMORY), one process per method.",
                 f"Machine memory: {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.1f} GiB; "
                 "load average at the end: " + ", ".join(f"{v:.1f}" for v in os.getloadavg())])


if __name__ == "__main__":
    main()
