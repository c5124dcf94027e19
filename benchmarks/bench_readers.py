"""Our readers against Spark's own, measured in one session: LIBSVM on a tf-idf term matrix, and a
wide CSV (a real microarray set, thousands of columns). Writes benchmarks/results/readers.md.

* LIBSVM: a seeded tf-idf file, 100,000 documents x 50,000 terms, about 100 non-zeros per row
  (Zipfian term frequencies, 20 classes, a few class-informative terms), about 110 MB. Each
  reader is timed to a DataFrame (Spark's: its size-inference pass; ours: the JVM scan and the
  one parse, persisted) and then through two bare passes (``Summarizer.mean`` of the vectors),
  runs interleaved, median of the repeats.
* CSV: ``9_Tumors`` from ``../shared/data`` (60 x 5,726 plus the label), written as CSV. The
  reader before (``inferSchema`` + ``VectorAssembler``, as sparkfs read CSV until this change)
  against ours (schema from the header, one parse in Arrow); and the time to refuse a missing
  ``--label-col`` (before Spark starts, from the header line).

    .venv/bin/python -m benchmarks.bench_readers [--quick] [--repeats 3]
"""

import argparse
import os
import tempfile
import time
from functools import partial

import numpy as np

from benchmarks.common import DATA, session, write_table

SHARED = str(DATA)


def write_tfidf_libsvm(path, n_rows, n_terms, nnz_per_row=100, n_classes=20, seed=0, chunk=10_000):
    """A LIBSVM tf-idf term matrix (module notes), written with Arrow's string kernels."""
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_terms + 1) ** 1.07
    weights /= weights.sum()
    cumulative = np.cumsum(weights)
    idf = np.log(1.0 / np.minimum(weights * nnz_per_row, 1.0) + 1.0)
    informative = max(1, nnz_per_row // 20)
    with open(path, "wb") as out:
        for begin in range(0, n_rows, chunk):
            rows = min(chunk, n_rows - begin)
            labels = rng.integers(0, n_classes, rows)
            draws = np.minimum(np.searchsorted(cumulative, rng.random((rows, int(nnz_per_row * 1.45)))), n_terms - 1)
            draws[:, :informative] = (labels[:, None] * 50 + rng.integers(0, 50, (rows, informative))) % n_terms
            keys, counts = np.unique(draws + np.arange(rows)[:, None] * n_terms, return_counts=True)
            terms = keys % n_terms
            offsets = np.zeros(rows + 1, dtype=np.int32)
            np.cumsum(np.bincount(keys // n_terms, minlength=rows), out=offsets[1:])
            tokens = pc.binary_join_element_wise(pc.cast(pa.array(terms + 1), pa.string()),
                                                 pc.cast(pa.array(np.round(counts * idf[terms], 4)), pa.string()), ":")
            lines = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), tokens), " ")
            lines = pc.binary_join_element_wise(pc.cast(pa.array(labels), pa.string()), lines, " ")
            out.write(("\n".join(lines.to_pylist()) + "\n").encode())
    return path


def write_wide_csv(path, name="9_Tumors.npz"):
    import pandas as pd

    data = np.load(os.path.join(SHARED, name))
    frame = pd.DataFrame(data["X"], columns=[f"g{j}" for j in range(data["X"].shape[1])])
    frame.insert(0, "class", data["y"])
    frame.to_csv(path, index=False)
    return path, frame.shape


def _bare_pass(df, column):
    from pyspark.ml.stat import Summarizer

    return df.select(Summarizer.mean(df[column])).first()


def _clock(function):
    started = time.perf_counter()
    result = function()
    return time.perf_counter() - started, result


def _warm_up(spark, path, csv_path):
    """Both readers once on small inputs: the JVM's code and the Python workers started."""
    from sparkfs.io.readers import read_dataset

    write_tfidf_libsvm(path, 2_000, 50_000, seed=1)
    _bare_pass(spark.read.format("libsvm").load(path), "features")
    dataset = read_dataset(spark, path, "libsvm")
    _bare_pass(dataset.df, dataset.features_col)
    dataset.df.unpersist()
    wide = read_dataset(spark, csv_path, "csv", label_col="class")
    _bare_pass(wide.df, wide.features_col)


def _libsvm_runs(spark, path, repeats):
    from sparkfs.io.readers import read_dataset

    times = {"spark": [], "ours": []}
    for _ in range(repeats):
        read, df = _clock(lambda: spark.read.format("libsvm").load(path))
        first, _ = _clock(partial(_bare_pass, df, "features"))
        second, _ = _clock(partial(_bare_pass, df, "features"))
        times["spark"].append((read, first, second))
        read, dataset = _clock(lambda: read_dataset(spark, path, "libsvm"))
        first, _ = _clock(partial(_bare_pass, dataset.df, dataset.features_col))
        second, _ = _clock(partial(_bare_pass, dataset.df, dataset.features_col))
        dataset.df.unpersist()
        times["ours"].append((read, first, second))
    return {name: np.median(np.array(runs), axis=0) for name, runs in times.items()}


def _old_csv_reader(spark, path, label):
    """The CSV reader sparkfs had before: inference over every column, then VectorAssembler."""
    from pyspark.ml.feature import VectorAssembler

    df = spark.read.option("header", "true").option("inferSchema", "true").csv(path)
    columns = [c for c in df.columns if c != label]
    casted = df.select(*[df[c].cast("double").alias(c) for c in columns], label)
    return VectorAssembler(inputCols=columns, outputCol="features", handleInvalid="keep").transform(casted) \
        .select("features", label)


def _csv_runs(spark, path, repeats):
    from sparkfs.errors import InvalidInputError
    from sparkfs.io.readers import check_input_early, read_dataset

    times = {"before": [], "ours": []}
    for _ in range(repeats):
        read, df = _clock(lambda: _old_csv_reader(spark, path, "class"))
        first, _ = _clock(partial(_bare_pass, df, "features"))
        times["before"].append((read, first))
        read, dataset = _clock(lambda: read_dataset(spark, path, "csv", label_col="class"))
        first, _ = _clock(partial(_bare_pass, dataset.df, dataset.features_col))
        times["ours"].append((read, first))
    started = time.perf_counter()
    try:
        check_input_early(path, "csv", label_col="label")
    except InvalidInputError as refusal:
        message = str(refusal)
    refusal_seconds = time.perf_counter() - started
    return {name: np.median(np.array(runs), axis=0) for name, runs in times.items()}, refusal_seconds, message


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="10,000 documents (a smoke run)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n_rows = 10_000 if args.quick else 100_000
    spark = session()
    with tempfile.TemporaryDirectory() as folder:
        libsvm = write_tfidf_libsvm(os.path.join(folder, "tfidf.libsvm"), n_rows, 50_000)
        megabytes = os.path.getsize(libsvm) / 2**20
        csv_path, shape = write_wide_csv(os.path.join(folder, "9_Tumors.csv"))
        csv_megabytes = os.path.getsize(csv_path) / 2**20
        _warm_up(spark, os.path.join(folder, "warm.libsvm"), csv_path)
        libsvm_times = _libsvm_runs(spark, libsvm, args.repeats)
        csv_times, refusal_seconds, refusal = _csv_runs(spark, csv_path, args.repeats)
    spark_read, spark_first, spark_second = libsvm_times["spark"]
    ours_read, ours_first, ours_second = libsvm_times["ours"]
    before_read, before_first = csv_times["before"]
    csv_read, csv_first = csv_times["ours"]
    rows = [
        [f"LIBSVM {n_rows:,} x 50,000 tf-idf ({megabytes:.0f} MB)", "Spark `format(\"libsvm\")`",
         f"{spark_read:.2f}", f"{spark_first:.2f}", f"{spark_second:.2f}",
         f"{spark_read + spark_first:.2f}", "1.00", "1.00"],
        ["", "sparkfs `read_dataset`", f"{ours_read:.2f}", f"{ours_first:.2f}", f"{ours_second:.2f}",
         f"{ours_read + ours_first:.2f}", f"{(ours_read + ours_first) / (spark_read + spark_first):.2f}",
         f"{(ours_read + ours_first + ours_second) / (spark_read + spark_first + spark_second):.2f}"],
        [f"CSV 9_Tumors {shape[0]} x {shape[1]:,} columns ({csv_megabytes:.1f} MB)",
         "before (inferSchema + VectorAssembler)", f"{before_read:.2f}", f"{before_first:.2f}", "",
         f"{before_read + before_first:.2f}", "1.00", ""],
        ["", "sparkfs `read_dataset`", f"{csv_read:.2f}", f"{csv_first:.2f}", "", f"{csv_read + csv_first:.2f}",
         f"{(csv_read + csv_first) / (before_read + before_first):.2f}", ""],
    ]
    notes = [
        f"Seconds, median of {args.repeats} interleaved runs in one local[2] session; ratio = (read + first pass) "
        "over the first row of its block (the last column: read + two passes, as a selector takes several). "
        "A pass is `Summarizer.mean` of the vector column.",
        "Spark's LIBSVM reader parses every line twice (its size inference, then each pass reads the text again); "
        "ours scans the text in the JVM for the largest last index (one aggregate), parses each line "
        "once in Arrow/NumPy (checking it) and persists the rows, so later passes read the cache.",
        f"A missing --label-col on the CSV is refused in {refusal_seconds * 1000:.0f} ms, from the header line, "
        f"before Spark starts: `{refusal}`.",
        "The machine is shared (2 cores, other sessions running): compare the ratios, measured in the same run.",
    ]
    write_table("readers", "Readers: sparkfs against Spark's own",
                ["input", "reader", "read s", "first pass s", "second pass s", "read + first pass s", "ratio",
                 "ratio, read + two passes"],
                rows, notes)


if __name__ == "__main__":
    main()
