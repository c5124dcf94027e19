"""Shared pieces of the benchmarks: a local session, synthetic data, timing and the result table."""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"


def session(master: str = "local[2]"):
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master(master).appName("sparkfs-bench")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "6g")
             .config("spark.sql.shuffle.partitions", "4").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def dense_frame(spark, n_rows, n_features, n_classes, partitions=4, seed=0):
    """Gaussian features with a class-dependent mean shift on the first 10 features."""
    from pyspark.ml.linalg import Vectors

    def generate(index):
        rng = np.random.default_rng(seed + index)
        count = n_rows // partitions + (1 if index < n_rows % partitions else 0)
        labels = rng.integers(0, n_classes, count)
        X = rng.normal(size=(count, n_features))
        X[:, :10] += labels[:, None]
        for row, label in zip(X, labels):
            yield Vectors.dense(row), float(label)

    rdd = spark.sparkContext.parallelize(range(partitions), partitions).flatMap(generate)
    return spark.createDataFrame(rdd, ["features", "label"]).cache()


def sparse_frame(spark, n_rows, n_features, density, n_classes=2, partitions=8, seed=0):
    """Text-like term counts: each row has ~density * n_features non-zeros (Zipf-like columns)."""
    from pyspark.ml.linalg import Vectors

    nnz_per_row = max(1, int(round(density * n_features)))

    def generate(index):
        rng = np.random.default_rng(seed + index)
        count = n_rows // partitions + (1 if index < n_rows % partitions else 0)
        weights = 1.0 / np.arange(1, n_features + 1)
        weights /= weights.sum()
        for _ in range(count):
            label = int(rng.integers(0, n_classes))
            columns = np.unique(rng.choice(n_features, nnz_per_row, p=weights))
            values = rng.poisson(1.0 + label * (columns < 100), columns.size) + 1.0
            yield Vectors.sparse(n_features, columns.tolist(), values.tolist()), float(label)

    rdd = spark.sparkContext.parallelize(range(partitions), partitions).flatMap(generate)
    return spark.createDataFrame(rdd, ["features", "label"]).cache()


def timed_runs(function, repeats=3):
    """Median wall time of ``repeats`` runs, every run's time, and the last result."""
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - started)
    return float(statistics.median(times)), times, result


def timed(function, repeats=3):
    """Median wall time of `repeats` runs (after the data is cached), and the last result."""
    median, _, result = timed_runs(function, repeats)
    return median, result


def write_table(name: str, title: str, header, rows, notes=()):
    RESULTS.mkdir(exist_ok=True)
    lines = [f"# {title}", "", f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {platform.machine()}, "
             f"{os.cpu_count()} cores, Python {platform.python_version()}.", ""]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for row in rows:
        lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    lines += [""] + [f"- {note}" for note in notes]
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{name}.md").write_text(text)
    print(text)
