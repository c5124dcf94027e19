"""The canonical layout of Rows against the plain one, and LFS against Spark ML, in one session.

On the term corpus S (100,000 x 50,000 tf-idf, 20 classes, ~100 non-zeros per row,
``benchmarks/term_corpus.py``) and on a dense Gaussian set (``--dense-rows`` x 631, 20 classes),
cached, with ``local[2]``:

* the passes of :class:`sparkfs.spark.rows.Rows` on the canonical layout (``canonical=True``, the
  default: the same bits for any partitioning) and on the plain one: the first pass (it lays the
  rows out), a trivial pass (a row count), column statistics, a 1,000-row sample;
* LFS fits (``statsEngine="arrow"``, exact sums, the default; and ``"jvm"``), Spark ML's
  ``UnivariateFeatureSelector`` (ANOVA, top 1,000) and a bare ``Summarizer`` pass (mean, variance);
* ReliefF with a small sample (``sampleSize``) on the canonical and on the plain layout.

Every number is one run (the machine is shared: compare the ratios, measured in the same run).
Each run stores ``results/layout_<label>.json``; the table in ``results/layout.md`` shows every
label found (``before`` and ``after`` a change, side by side).

    python -m benchmarks.bench_layout --label after [--corpus /tmp/term_s.libsvm] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from benchmarks.common import RESULTS
from benchmarks.term_corpus import SIZES, term_corpus, write_libsvm


def _session():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("sparkfs-bench-layout")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", "6g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


#: Longest a step may run (seconds): then its jobs are cancelled and the table says "> limit".
STEP_LIMIT = 600.0


class _TooLong(Exception):
    pass


def _seconds(function):
    """Wall time of ``function()``, or ``inf`` when it runs over :data:`STEP_LIMIT`."""
    import signal

    from pyspark import SparkContext

    def cancel(*_):
        SparkContext.getOrCreate().cancelAllJobs()
        raise _TooLong()

    previous = signal.signal(signal.SIGALRM, cancel)
    signal.setitimer(signal.ITIMER_REAL, STEP_LIMIT)
    started = time.perf_counter()
    try:
        function()
        return time.perf_counter() - started
    except _TooLong:
        return float("inf")
    except Exception as error:  # a job cancelled by the alarm surfaces as Spark's error
        if time.perf_counter() - started >= STEP_LIMIT:
            return float("inf")
        raise error
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _report(timings: dict, step: str, seconds: float) -> None:
    timings[step] = seconds
    print(f"  {step}: {seconds:.1f} s", flush=True)


def _bare_pass(df):
    from pyspark.ml.stat import Summarizer
    from pyspark.sql import functions as F

    df.select(Summarizer.metrics("mean", "variance").summary(F.col("features")).alias("s")).first()


def _rows_passes(df, num_features, canonical: bool) -> dict:
    from sparkfs.spark.rows import Rows

    def count(block):
        return {"rows": np.array([block.ids.size])}

    def add(left, right):
        return {"rows": left["rows"] + right["rows"]}

    times, layout = {}, "canonical" if canonical else "plain"
    with Rows(df, "features", num_features=num_features, label_col="label", num_classes=20,
              canonical=canonical) as rows:
        for step, function in (("first pass (lays out)", lambda: rows.run_pass(None, count, add)),
                               ("trivial pass", lambda: rows.run_pass(None, count, add)),
                               ("column statistics", rows.column_statistics),
                               ("1,000-row sample", lambda: rows.sample(1000, seed=1))):
            _report(times, f"Rows {step}, {layout} layout", _seconds(function))
    return times


def _relieff(df, sample_size: int, canonical: bool) -> float:
    from sparkfs import ReliefSelector
    from sparkfs.spark.rows import Rows

    defaults = Rows.__init__.__kwdefaults__
    saved = defaults["canonical"]
    defaults["canonical"] = canonical  # benchmark only: the selectors use the default layout
    try:
        return _seconds(lambda: ReliefSelector(variant="relieff", sampleSize=sample_size, numFeatures=100).fit(df))
    finally:
        defaults["canonical"] = saved


def _selectors(df, top: int) -> dict:
    from pyspark.ml.feature import UnivariateFeatureSelector

    from sparkfs import FisherMarkovSelector

    anova = (UnivariateFeatureSelector().setFeatureType("continuous").setLabelType("categorical")
             .setSelectionMode("numTopFeatures").setSelectionThreshold(top))
    timings = {}
    for step, function in (
            ("bare Summarizer pass", lambda: _bare_pass(df)),
            ("Spark ML UnivariateFeatureSelector (ANOVA)", lambda: anova.fit(df)),
            ("lfs (statsEngine=arrow, exact sums)", lambda: FisherMarkovSelector(numFeatures=top).fit(df)),
            ("lfs (statsEngine=jvm)", lambda: FisherMarkovSelector(numFeatures=top, statsEngine="jvm").fit(df))):
        _report(timings, step, _seconds(function))
    return timings


def _warm_up(small) -> None:
    """Compile the numba kernels in the workers (their first call) outside the timings."""
    from sparkfs import FisherMarkovSelector, ReliefSelector

    FisherMarkovSelector(numFeatures=5).fit(small)
    ReliefSelector(variant="relieff", sampleSize=5, numFeatures=5).fit(small)


def _dense_frame(spark, num_rows: int, num_features: int, path: str):
    """Gaussian rows, class means apart on the first 30 features, written once as Parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F

    if not os.path.exists(path):
        rng = np.random.default_rng(7)
        labels = rng.integers(0, 20, num_rows)
        values = rng.normal(size=(num_rows, num_features))
        values[:, :30] += 0.3 * (labels[:, None] % 5)
        offsets = pa.array(np.arange(num_rows + 1, dtype=np.int32) * num_features)
        table = pa.table({"values": pa.ListArray.from_arrays(offsets, pa.array(values.ravel())),
                          "label": pa.array(labels.astype(np.float64))})
        pq.write_table(table, path)
    return (spark.read.parquet(path)
            .select(array_to_vector(F.col("values")).alias("features"), "label").cache())


def measure(args) -> dict:
    spark = _session()
    results = {"label": args.label, "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "sets": {}}
    num_docs, num_terms = SIZES["tiny" if args.quick else "S"]
    corpus = args.corpus or f"/tmp/term_{'tiny' if args.quick else 'S'}.libsvm"
    if not os.path.exists(corpus):
        write_libsvm(corpus, *term_corpus(num_docs, num_terms))
    sparse = spark.read.format("libsvm").option("numFeatures", num_terms).load(corpus).cache()
    dense_rows = 2_000 if args.quick else args.dense_rows
    dense = _dense_frame(spark, dense_rows, 631, f"/tmp/bench_layout_dense_{dense_rows}.parquet")
    sets = [(f"term corpus {num_docs:,} x {num_terms:,}", sparse, num_terms),
            (f"dense {dense_rows:,} x 631", dense, 631)]
    for name, df, num_features in sets:
        df.count()
        _warm_up(df.limit(300))
        print(name, flush=True)
        timings = _selectors(df, 1000 if num_features > 1000 else 100)
        for canonical in (True, False):
            timings.update(_rows_passes(df, num_features, canonical))
        for canonical in (True, False):
            layout = "canonical" if canonical else "plain"
            _report(timings, f"relieff sampleSize={args.sample_size}, {layout} layout",
                    _relieff(df, args.sample_size, canonical))
        results["sets"][name] = timings
        df.unpersist()
    spark.stop()
    return results


def _ratio_rows(timings: dict) -> list:
    bare, anova = timings["bare Summarizer pass"], timings["Spark ML UnivariateFeatureSelector (ANOVA)"]
    rows = [[step, f"{seconds:.1f}" if np.isfinite(seconds) else "stopped", f"{seconds / bare:.2f}",
             f"{seconds / anova:.2f}"] for step, seconds in timings.items()]
    for step in ("first pass (lays out)", "trivial pass", "column statistics", "1,000-row sample"):
        canonical, plain = timings[f"Rows {step}, canonical layout"], timings[f"Rows {step}, plain layout"]
        rows.append([f"**canonical / plain: {step}**", "", f"**{canonical / plain:.2f}**", ""])
    relieff = [key for key in timings if key.startswith("relieff")]
    rows.append([f"**canonical / plain: {relieff[0].split(',')[0]}**", "",
                 f"**{timings[relieff[0]] / timings[relieff[1]]:.2f}**", ""])
    rows.append(["**lfs exact sums (same bits always) / lfs jvm (to rounding)**", "",
                 f"**{timings['lfs (statsEngine=arrow, exact sums)'] / timings['lfs (statsEngine=jvm)']:.2f}**", ""])
    return rows


def _summary_lines(runs) -> list:
    """Before / after of the ratios that the goals name, one line per set."""
    lines = ["## Summary (ratios from one session each)", "",
             "| set | ratio | " + " | ".join(run["label"] for run in runs) + " |",
             "|---|---|" + "---:|" * len(runs)]
    ratios = {
        "canonical / plain, trivial pass":
            lambda t: t["Rows trivial pass, canonical layout"] / t["Rows trivial pass, plain layout"],
        "canonical / plain, column statistics":
            lambda t: t["Rows column statistics, canonical layout"] / t["Rows column statistics, plain layout"],
        "canonical / plain, 1,000-row sample":
            lambda t: t["Rows 1,000-row sample, canonical layout"] / t["Rows 1,000-row sample, plain layout"],
        "canonical / plain, first pass (with the layout's shuffle)":
            lambda t: t["Rows first pass (lays out), canonical layout"] / t["Rows first pass (lays out), plain layout"],
        "canonical / plain, relieff (small sample)": lambda t: [t[k] for k in t if k.startswith("relieff")][0]
            / [t[k] for k in t if k.startswith("relieff")][1],
        "lfs exact / lfs jvm": lambda t: t["lfs (statsEngine=arrow, exact sums)"] / t["lfs (statsEngine=jvm)"],
        "lfs exact / bare pass": lambda t: t["lfs (statsEngine=arrow, exact sums)"] / t["bare Summarizer pass"],
        "lfs exact / Spark ML ANOVA":
            lambda t: t["lfs (statsEngine=arrow, exact sums)"] / t["Spark ML UnivariateFeatureSelector (ANOVA)"],
    }
    for name in runs[0]["sets"]:
        for ratio, compute in ratios.items():
            cells = [f"{compute(run['sets'][name]):.2f}" if name in run["sets"] else "" for run in runs]
            lines.append(f"| {name} | {ratio} | " + " | ".join(cells) + " |")
    return lines + [""]


def write_report() -> None:
    runs = [json.loads((RESULTS / f"layout_{label}.json").read_text()) for label in ("before", "after", "after-repeat")
            if (RESULTS / f"layout_{label}.json").exists()]
    lines = ["# The canonical layout of Rows vs the plain one; LFS vs Spark ML", "",
             "`python -m benchmarks.bench_layout --label before|after` (local[2], cached input, one run per",
             "number on a shared 2-core machine: read the ratios, measured in the same session; the seconds",
             "move with the load). Ratio columns: time / bare Summarizer pass, time / Spark ML ANOVA selector;",
             "the bold rows divide the canonical layout's time by the plain layout's. A step still running",
             "after `--step-limit` seconds (300 in the runs below) was cancelled: \"stopped\", ratio inf.",
             "Before: main at afe9261; after: this branch (layout sized by stored bytes, compiled rounding).", ""]
    lines += _summary_lines(runs)
    for run in runs:
        for name, timings in run["sets"].items():
            lines += [f"## {run['label']}: {name} ({run['measured']})", "",
                      "| step | seconds | / bare pass | / Spark ML ANOVA |", "|---|---:|---:|---:|"]
            lines += ["| " + " | ".join(row) + " |" for row in _ratio_rows(timings)] + [""]
    (RESULTS / "layout.md").write_text("\n".join(lines))
    print("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="after", help="name of this run in the table (before, after)")
    parser.add_argument("--corpus", help="the LIBSVM term corpus S (written there if missing)")
    parser.add_argument("--dense-rows", type=int, default=250_000)
    parser.add_argument("--sample-size", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a smoke run)")
    parser.add_argument("--step-limit", type=float, default=STEP_LIMIT, help="seconds a step may run")
    args = parser.parse_args()
    globals()["STEP_LIMIT"] = args.step_limit
    results = measure(args)
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"layout_{args.label}.json").write_text(json.dumps(results, indent=1) + "\n")
        write_report()


if __name__ == "__main__":
    main()
