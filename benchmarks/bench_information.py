"""mRMR / JMI / CMIM at scale: time per selected feature as a multiple of a bare pass.

In one local[2] session, on the same cached DataFrame: a bare pass (Spark ML's ``Summarizer``,
mean and variance), then ``InformationSelector`` choosing ``--num-features`` features, then the
bare pass again (the ratio is against the faster of the two: the shared machine's load drifts). The fit
is one sample pass (cut points), one relevance pass and one pass per further feature, so the time
per further feature, (fit - the fit with one feature) / (k - 1), is the cost of one greedy step.
Goal: at most 1.5 bare passes per selected feature.

    .venv/bin/python -m benchmarks.bench_information --data terms --size S --num-features 50
    .venv/bin/python -m benchmarks.bench_information --data dense --num-features 50
    .venv/bin/python -m benchmarks.bench_information --data terms --size tiny --num-features 5   # quick

Writes (appends a section to) ``benchmarks/results/information.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from benchmarks.common import RESULTS, machine_header


def load(spark, data: str, size: str, workdir: Path):
    from pyspark.ml.feature import VectorAssembler
    from pyspark.sql import functions as F

    from benchmarks.scale import prepare

    prepared = prepare("dense" if data == "dense" else size, workdir)
    if prepared["format"] == "libsvm":
        return spark.read.format("libsvm").load(prepared["path"]), prepared["path"]
    raw = spark.read.parquet(prepared["path"])
    names = [name for name in raw.columns if name != "label"]
    frame = VectorAssembler(inputCols=names, outputCol="features").transform(raw).select(
        "features", F.col("label").cast("double").alias("label"))
    return frame, prepared["path"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=["terms", "dense"], default="terms")
    parser.add_argument("--size", default="S", help="term corpus size: tiny, S or M")
    parser.add_argument("--num-features", type=int, default=50)
    parser.add_argument("--criteria", default="mrmr")
    parser.add_argument("--workdir", default="/tmp/sparkfs_scale")
    args = parser.parse_args()

    from pyspark.ml.stat import Summarizer
    from pyspark.sql import functions as F

    from benchmarks.common import session
    from sparkfs import InformationSelector

    load_before = os.getloadavg()
    spark = session()
    frame, path = load(spark, args.data, args.size, Path(args.workdir))
    frame = frame.cache()
    rows = frame.count()

    def timed(action):
        started = time.perf_counter()
        action()
        return time.perf_counter() - started

    def bare_pass():  # the best of two: a pass that stays in the JVM
        return min(timed(lambda: frame.select(Summarizer.metrics("mean", "variance").summary(F.col("features")))
                         .collect()) for _ in range(2))

    bare = bare_pass()
    title = "dense" if args.data == "dense" else f"terms {args.size}"
    rows_of_table = []
    for criterion in args.criteria.split(","):
        InformationSelector(criterion=criterion, numFeatures=1).fit(frame)  # warm-up: compilation, caches
        one = timed(lambda criterion=criterion: InformationSelector(criterion=criterion, numFeatures=1).fit(frame))
        fit = timed(lambda criterion=criterion: InformationSelector(criterion=criterion,
                                                                    numFeatures=args.num_features).fit(frame))
        rows_of_table.append((criterion, fit, one, (fit - one) / max(args.num_features - 1, 1)))
    bare_after = bare_pass()  # the load drifts: the ratio is against the faster of before and after
    fastest = min(bare, bare_after)
    lines = [f"## {title} ({rows:,} rows, `{Path(path).name}`)", "",
             machine_header(load_average=True) + ", local[2]; "
             f"bare pass (Summarizer, cached) {bare:.2f} s before "
             f"the fits, {bare_after:.2f} s after; the ratio is against {fastest:.2f} s.", "",
             "| criterion | features | fit s | fit with 1 feature s | s per further feature "
             "| per feature / bare pass |",
             "|---|---|---|---|---|---|"]
    for criterion, fit, one, step in rows_of_table:
        lines.append(f"| {criterion} | {args.num_features} | {fit:.1f} | {one:.1f} | {step:.2f} | "
                     f"{step / fastest:.2f}x |")
        print(lines[-1], flush=True)
    load_after = os.getloadavg()
    lines += ["",
              f"Command: `python -m benchmarks.bench_information {' '.join(sys.argv[1:])}`; "
              "load average (1, 5, 15 min) "
              f"before {', '.join(f'{v:.1f}' for v in load_before)}, "
              f"after {', '.join(f'{v:.1f}' for v in load_after)} "
              "(other jobs share the 2 cores)."]
    out = RESULTS / "information.md"
    header = "# mRMR, JMI and CMIM: seconds per selected feature against a bare pass\n\n"
    previous = out.read_text() if out.exists() else header
    out.write_text(previous.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
