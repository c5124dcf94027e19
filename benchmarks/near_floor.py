"""Near the floor: the univariate fits and the LIBSVM read against their bare baselines.

One local[2] session per size of the term corpus (``benchmarks/term_corpus.py``), each number the
median of ``--repeats`` runs after a warm-up run, every baseline measured in the same session:

* **read**: sparkfs's LIBSVM reader (``read_libsvm``: the size guess, the parse, its checks and the
  persisted rows) against a bare ``spark.read.text(path).count()`` of the same file (goal: at most
  2x), and against the text read with its lines materialised (``sum(length(value))``), the least
  any parse must pay to see the bytes;
* **fits**: lfs, anova, chi2 and variance with their defaults on the cached read, against a bare
  pass over the same cached rows (Spark ML's ``Summarizer``, mean and variance; goal: at most 1.5
  bare passes on S, 1.2 on M) and against Spark ML's ``UnivariateFeatureSelector`` (ANOVA; LFS's
  goal: at most 0.25x), with the Spark jobs of each fit counted from the driver; ``dense``: the
  same fits on a cached 200,000 x 300 dense frame (two classes, generated in the tasks).

    .venv/bin/python -m benchmarks.near_floor                       # S
    .venv/bin/python -m benchmarks.near_floor --sizes S,M --repeats 3
    .venv/bin/python -m benchmarks.near_floor --sizes tiny --repeats 1   # a smoke run

Appends a section to ``benchmarks/results/near_floor.md``. The corpora go to ``--workdir``
(default /tmp/sparkfs_scale; S about 0.13 GB, M about 1.4 GB).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

from benchmarks.common import RESULTS, machine_header

FITS = ("lfs", "anova", "chi2", "variance")
GOALS = {"read": 2.0, "S": 1.5, "M": 1.2, "ufs": 0.25}
#: The dense rows: LFS against Spark ML's ANOVA selector (goal <= 0.25x).
DENSE_SHAPE = (200_000, 300)


def _timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def median_of(action, repeats: int) -> float:
    """The median of ``repeats`` timed runs after one warm-up run."""
    action()
    return statistics.median(_timed(action) for _ in range(repeats))


def corpus(size: str, workdir: Path) -> str:
    """The LIBSVM file of the term corpus of ``size``, written once."""
    from benchmarks.term_corpus import SIZES, term_corpus, write_libsvm

    path = workdir / f"terms_{size}.libsvm"
    if not path.exists():
        workdir.mkdir(parents=True, exist_ok=True)
        write_libsvm(str(path), *term_corpus(*SIZES[size], seed=0))
    return str(path)


def fit_jobs(spark, fit) -> int:
    """The Spark jobs one run of ``fit`` starts, counted from the driver."""
    tracker, group = spark.sparkContext.statusTracker(), f"near-floor-{time.monotonic_ns()}"
    spark.sparkContext.setJobGroup(group, "count")
    try:
        fit()
    finally:
        spark.sparkContext.setJobGroup("", "")
    return len(tracker.getJobIdsForGroup(group))


def measure_read(spark, path: str, repeats: int) -> list:
    """The read's rows: (work, seconds, baseline, baseline seconds, goal or None, jobs or None)."""
    from pyspark.sql import functions as F

    from sparkfs.io.libsvm import read_libsvm

    count = median_of(lambda: spark.read.text(path).count(), repeats)
    lengths = median_of(lambda: spark.read.text(path).agg(F.sum(F.length("value"))).first(), repeats)

    def read_and_drop():
        frame, _ = read_libsvm(spark, path)
        frame.unpersist(blocking=True)   # freed before the next run starts

    read = median_of(read_and_drop, repeats)
    return [("LIBSVM read", read, "text count()", count, GOALS["read"], None),
            ("LIBSVM read", read, "text with its lines (sum of lengths)", lengths, None, None)]


def measure_fits(spark, frame, goal, repeats: int, methods=FITS) -> list:
    """The fits' rows on the cached ``frame``, against a bare pass and Spark ML's ANOVA selector."""
    from pyspark.ml.feature import UnivariateFeatureSelector
    from pyspark.ml.stat import Summarizer
    from pyspark.sql import functions as F

    from sparkfs.methods import METHODS

    bare = median_of(lambda: frame.select(Summarizer.metrics("mean", "variance").summary(F.col("features")))
                     .collect(), repeats)
    top = min(1000, frame.first()["features"].size // 2)
    ufs = median_of(lambda: UnivariateFeatureSelector().setFeatureType("continuous").setLabelType("categorical")
                    .setSelectionMode("numTopFeatures").setSelectionThreshold(top).fit(frame), 1)
    rows = []
    for method in methods:
        selector_class, fixed = METHODS[method]

        def fit(selector_class=selector_class, fixed=fixed):
            selector_class(**fixed, numFeatures=top).fit(frame)

        seconds = median_of(fit, repeats)
        jobs = fit_jobs(spark, fit)
        rows.append((f"{method} fit", seconds, "bare pass (Summarizer, cached)", bare, goal, jobs))
        rows.append((f"{method} fit", seconds, "Spark ML UnivariateFeatureSelector (ANOVA)", ufs,
                     GOALS["ufs"] if method == "lfs" else None, None))
    return rows


def measure(spark, size: str, workdir: Path, repeats: int) -> list:
    """Every row of one size: a term corpus (its read, then the fits on the read), or ``dense``
    (the fits on a cached dense frame of :data:`DENSE_SHAPE`, generated in the tasks)."""
    from benchmarks.common import dense_frame

    if size == "dense":
        frame = dense_frame(spark, *DENSE_SHAPE, n_classes=2)
        frame.count()
        rows = measure_fits(spark, frame, None, repeats, [m for m in FITS if m != "chi2"])  # signed values
        frame.unpersist()
        return rows
    from sparkfs.io.libsvm import read_libsvm

    path = corpus(size, workdir)
    rows = measure_read(spark, path, repeats)
    frame, _ = read_libsvm(spark, path)
    rows += measure_fits(spark, frame, GOALS.get(size), repeats)
    frame.unpersist()
    return rows


def table(size: str, rows: list) -> list:
    lines = [f"| {size} work | s | baseline | baseline s | ratio | goal | Spark jobs |",
             "|---|---|---|---|---|---|---|"]
    for work, seconds, baseline, base_seconds, goal, jobs in rows:
        ratio = seconds / base_seconds
        verdict = "-" if goal is None else f"<= {goal:g}x: {'met' if ratio <= goal else 'missed'}"
        lines.append(f"| {work} | {seconds:.2f} | {baseline} | {base_seconds:.2f} | {ratio:.2f}x | {verdict} | "
                     f"{'-' if jobs is None else jobs} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="S", help="comma-separated: term corpus sizes tiny, S, M; dense")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs after the warm-up (median)")
    parser.add_argument("--workdir", default="/tmp/sparkfs_scale")
    parser.add_argument("--out", default=str(RESULTS / "near_floor.md"))
    args = parser.parse_args()

    from benchmarks.common import session

    load_before = os.getloadavg()
    spark = session()
    lines = ["## " + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "",
             machine_header(load_average=True) + f", local[2]; median of {args.repeats} after a warm-up.", ""]
    for size in args.sizes.split(","):
        rows = measure(spark, size, Path(args.workdir), args.repeats)
        lines += table(size, rows) + [""]
        print("\n".join(table(size, rows)), flush=True)
    load_after = os.getloadavg()
    lines.append(f"Command: `python -m benchmarks.near_floor {' '.join(sys.argv[1:])}`; load average (1, 5, 15 min) "
                 f"before {', '.join(f'{v:.1f}' for v in load_before)}, after "
                 f"{', '.join(f'{v:.1f}' for v in load_after)}.")
    out = Path(args.out)
    previous = out.read_text() if out.exists() else "# Near the floor: univariate fits and the LIBSVM read\n"
    out.write_text(previous.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
