"""Shared by ``benchmarks/`` (timings) and ``studies/`` (research): a local session, synthetic data,
the data sets of ``../shared/data``, timing, the machine header every results file starts with, and
the result table. Both folders are packages run from the repository root (``python -m
benchmarks.bench_lfs``, ``python -m studies.margin_study``), so they import this module as
``benchmarks.common`` and each other as ``benchmarks.<module>`` / ``studies.<module>``."""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
#: Where benchmarks and studies write their tables (the docs link them here).
RESULTS = ROOT / "benchmarks" / "results"
#: The real data sets, one ``<name>.npz`` each, in a checkout of the shared data beside this one.
DATA = ROOT.parent / "shared" / "data"


def load_npz(name: str, dense: bool = False):
    """X (float64: an ndarray, or a CSR matrix for a text set unless ``dense``) and y (int64) of
    ``DATA/<name>.npz``, which holds either ``X`` or the CSR parts (data, indices, indptr, shape)."""
    import scipy.sparse as sp

    with np.load(DATA / f"{name}.npz", allow_pickle=False) as archive:
        y = np.asarray(archive["y"], dtype=np.int64)
        if "X" in archive.files:
            return np.asarray(archive["X"], dtype=np.float64), y
        matrix = sp.csr_matrix((archive["data"], archive["indices"], archive["indptr"]),
                               shape=tuple(archive["shape"])).astype(np.float64)
    return (matrix.toarray() if dense else matrix), y


def machine_header(load_average: bool = False) -> str:
    """The line every results file starts with: when, on what, and (on a shared machine) how busy."""
    line = (f"Measured {time.strftime('%Y-%m-%d %H:%M')} on {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}")
    return line + (f"; load average {os.getloadavg()[0]:.1f}" if load_average else "")


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
    lines = [f"# {title}", "", machine_header() + ".", ""]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    for row in rows:
        lines.append("| " + " | ".join(str(cell) for cell in row) + " |")
    lines += [""] + [f"- {note}" for note in notes]
    text = "\n".join(lines) + "\n"
    (RESULTS / f"{name}.md").write_text(text)
    print(text)
