"""Read time before and after ``sparkfs convert`` on the scale benchmark's term corpus.

In one local[2] session (the machine's other load permitting), in this order:

* ``text count``: a bare ``spark.read.text(path).count()``, the floor of any text reader;
* ``LIBSVM read``: sparkfs's read as ``select`` does it (``read_dataset``: the JVM scan, the one
  checked parse, persisted) plus a ``count`` of the persisted rows;
* ``convert``: ``sparkfs convert`` through ``sparkfs.cli.main`` (the same read, then the Parquet
  write and the rename into place), once;
* ``Parquet read``: ``read_dataset`` on the converted directory (footer, names, first row) plus a
  ``count`` (not persisted, as ``select`` reads a Parquet input);
* a warm ``sparkfs select --method anova`` and ``--method lfs`` (``--num-features 1000``) on the
  text and on the Parquet: wall time and the ``read`` and ``fit`` stages from the stage log, and
  whether both give the same selected indices.

The cache is cleared between the steps so that no step reads another's persisted rows.

    .venv/bin/python -m benchmarks.bench_convert                       # S (generated when missing)
    .venv/bin/python -m benchmarks.bench_convert --sizes S,M           # M: about 1.4 GB of text

Writes ``benchmarks/results/convert.md``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import RESULTS, ROOT, machine_header

METHODS = ("anova", "lfs")
NOTES = (
    "One local[2] session with 6 GB of driver memory, on a shared machine (the load average is in the header): "
    "compare the rows of one table, measured minutes apart, rather than with other results files.",
    "`LIBSVM read + count`: `read_dataset` as `select` runs it (a JVM scan, one checked parse in Arrow, "
    "persisted) plus a count of the cached rows; its first run also starts the Python workers.",
    "`convert`: `sparkfs convert` through `sparkfs.cli.main`: the same read, the Parquet write from the cache, "
    "the marker and the rename into place.",
    "`Parquet read + count`: `read_dataset` on the converted directory (the footer, the names from the vector "
    "column's metadata, one row for the size) plus a count; not persisted, as `select` reads a Parquet input. "
    "Spark counts Parquet rows from the files' footers, so this row is the read's fixed cost, not a pass over the "
    "values: that pass is in the select's fit stage on the Parquet, beside a fit on the text that reads the cached "
    "parse.",
    "select: `sparkfs select --method M --num-features 1000` through `sparkfs.cli.main` in the same session; "
    "`read` and `fit` are its stage lines. The Parquet read stage is lazy (the fit's pass reads the columns), so "
    "compare the wall times. `same selection`: the selected indices on the text and on the Parquet are equal.",
)


class StageLog(logging.Handler):
    """The ``stage`` records of sparkfs's log (name -> seconds) of the command running."""

    def __init__(self):
        super().__init__()
        self.stages = {}

    def emit(self, record):
        if getattr(record, "event", None) == "stage":
            self.stages[record.stage] = record.seconds


def corpus(size: str, workdir: str) -> str:
    """The size's LIBSVM file, written by term_corpus.py when it is not in ``workdir`` yet."""
    path = os.path.join(workdir, f"terms_{size}.libsvm")
    if not os.path.exists(path):
        os.makedirs(workdir, exist_ok=True)
        subprocess.run([sys.executable, "-m", "benchmarks.term_corpus", size, path], check=True, cwd=ROOT)
    return path


def _timed(function):
    started = time.perf_counter()
    result = function()
    return time.perf_counter() - started, result


def _repeated(spark, function, repeats: int):
    """(every run's seconds, the last result), the cache cleared after each run."""
    times = []
    for _ in range(repeats):
        seconds, result = _timed(function)
        times.append(seconds)
        spark.catalog.clearCache()
    return times, result


def _shown(times) -> str:
    import statistics

    return f"{statistics.median(times):.1f} ({', '.join(f'{t:.1f}' for t in times)})"


def _select(source: str, fmt: str, method: str, output: str, stage_log: StageLog):
    from sparkfs.cli import main

    stage_log.stages = {}
    seconds, code = _timed(lambda: main(["select", "--input", source, "--format", fmt, "--method", method,
                                         "--num-features", "1000", "--output", output]))
    if code != 0:
        raise RuntimeError(f"select {method} on {source} exited {code}")
    selected = json.loads(Path(output, "summary.json").read_text())["selected_indices"]
    return seconds, dict(stage_log.stages), selected


def measure(spark, path: str, workdir: str, stage_log: StageLog, repeats: int):
    """The rows of one size's table (module notes)."""
    from sparkfs.cli import main
    from sparkfs.io.readers import read_dataset

    scratch = os.path.join(workdir, f"convert-bench-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)  # this script's own scratch directory
    os.makedirs(scratch)
    converted = os.path.join(scratch, "converted")
    rows = []
    times, lines = _repeated(spark, lambda: spark.read.text(path).count(), repeats)
    rows.append(("text count", "LIBSVM text", times, f"{lines:,} lines"))
    times, count = _repeated(spark, lambda: read_dataset(spark, path, "libsvm", driver_budget_mb=2048).df.count(),
                             repeats)
    rows.append(("LIBSVM read + count", "LIBSVM text", times, f"{count:,} rows"))
    times, code = _repeated(spark, lambda: main(["convert", path, converted, "--format", "libsvm"]), 1)
    size = sum(os.path.getsize(os.path.join(converted, name)) for name in os.listdir(converted))
    rows.append(("convert (read + write), once", "LIBSVM text -> Parquet", times, f"exit {code}, {size / 1e6:,.0f} MB"))
    times, count = _repeated(spark, lambda: read_dataset(spark, converted, "parquet", driver_budget_mb=2048).df.count(),
                             repeats)
    rows.append(("Parquet read + count", "converted Parquet", times, f"{count:,} rows"))
    selects = []
    for method in METHODS:
        runs = {}
        for source, fmt in ((path, "libsvm"), (converted, "parquet")):
            spark.catalog.clearCache()
            runs[fmt] = _select(source, fmt, method, os.path.join(scratch, f"{method}-{fmt}"), stage_log)
        same = runs["libsvm"][2] == runs["parquet"][2]
        for fmt, (seconds, stages, _) in runs.items():
            selects.append((method, "LIBSVM text" if fmt == "libsvm" else "converted Parquet", seconds,
                            stages.get("read"), stages.get("fit"), "yes" if same else "NO"))
    spark.catalog.clearCache()
    shutil.rmtree(scratch, ignore_errors=True)
    return rows, selects, os.path.getsize(path)


def write_results(results, out: str) -> None:
    lines = ["# Convert once, select many times: read time before and after `sparkfs convert`", "",
             machine_header(load_average=True) + " at the end (a shared machine).", ""]
    for size, (rows, selects, text_bytes) in results.items():
        lines += [f"## {size}: term corpus ({text_bytes / 1e6:,.0f} MB of LIBSVM text)", "",
                  "| step | input | seconds: median (runs) | result |", "|---|---|---|---|"]
        lines += [f"| {step} | {source} | {_shown(times)} | {note} |" for step, source, times, note in rows]
        lines += ["", "| select (warm session, --num-features 1000) | input | wall s | read stage s | fit stage s | "
                  "same selection |", "|---|---|---|---|---|---|"]
        lines += [f"| {method} | {source} | {wall:.1f} | {read if read is None else f'{read:.1f}'} | "
                  f"{fit if fit is None else f'{fit:.1f}'} | {same} |"
                  for method, source, wall, read, fit, same in selects]
        lines.append("")
    lines += [f"- {note}" for note in NOTES]
    Path(out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="S", help="comma-separated term corpus sizes: tiny, S, M (default S)")
    parser.add_argument("--workdir", default="/tmp/sparkfs_scale", help="where the corpora are (or are written)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each read step (default 2; the convert "
                        "runs once, each select once)")
    parser.add_argument("--out", default=str(RESULTS / "convert.md"))
    args = parser.parse_args()
    from benchmarks.common import session

    spark = session()  # local[2], 6 GB of driver memory
    spark.conf.set("spark.sql.shuffle.partitions", "4")
    stage_log = StageLog()
    log = logging.getLogger("sparkfs")  # its stage lines on stderr, and their seconds kept
    log.setLevel(logging.INFO)
    log.propagate = False
    log.addHandler(logging.StreamHandler())
    log.addHandler(stage_log)
    results = {}
    for size in args.sizes.split(","):
        results[size] = measure(spark, corpus(size, args.workdir), args.workdir, stage_log, args.repeats)
        write_results(results, args.out)  # after each size: a later one may not finish


if __name__ == "__main__":
    main()
