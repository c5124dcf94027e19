"""Scale on term matrices: every method with its defaults on a 10-million-non-zero corpus.

For each size and method, one child process (a fresh local[2] session with sparkfs's own memory
default, as a user's ``sparkfs select`` gets) measures, in that one session:

* ``bare``: a bare pass, Spark ML's ``Summarizer`` (mean, variance) over the cached input; for the
  dense Parquet also ``bare_uncached``, the same pass over the Parquet read and assembled again (as
  sparkfs's fit reads it: a Parquet input is not persisted), the like-for-like baseline there;
* ``ufs``: Spark ML's ``UnivariateFeatureSelector`` (ANOVA, continuous features, categorical label,
  the top 1,000) fitted on the same cached input;
* the method: ``sparkfs select --method M --num-features 1000`` through ``sparkfs.cli.main`` with
  nothing else set: its wall time and the ``fit`` stage's time (from the stage log);
* its **quality**: the generators know the class-informative features (the term
  corpus's informative terms, :func:`term_corpus.informative_terms`; the dense Parquet's first 20
  columns), so the table says how many of them the method ranks in its top 1,000 (dense: in its
  top 20), beside what chance would give.

The parent samples the child's process tree every half second for the peak resident memory of the
driver (the child's Python), the JVM and the Python workers (their sum and the largest), stops a
child after ``--timeout`` seconds, and measures the floor once per size: the same rows read by
pyarrow from Parquet into a SciPy CSR matrix and summed per class with one sparse product.

    .venv/bin/python -m benchmarks.scale                      # S and the dense Parquet, every method
    .venv/bin/python -m benchmarks.scale --sizes M --methods lfs,anova,chi2,relieff
    .venv/bin/python -m benchmarks.scale --sizes tiny --methods lfs --timeout 120   # a quick check

Writes ``benchmarks/results/scale.md`` (one table per size, rows appended per run) and a JSON of
the measurements next to it. The data go to ``--workdir`` (default /tmp/sparkfs_scale): S needs
about 0.4 GB, M about 4 GB.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import RESULTS, ROOT, machine_header


def _registry_methods():
    """Every ``--method`` of the registry (sparkfs.methods.METHODS), in its order."""
    from sparkfs.methods import METHODS

    return list(METHODS)


#: What ``--methods`` runs when not given: every method of the registry.
SELECT_METHODS = _registry_methods()
#: Dense Parquet: the shape of the ECBDL14 protein set (benchmarks/big_input_defaults.py).
DENSE_ROWS = 250_000
TOP_K = 1000


#: The dense Parquet's class-informative columns (big_input_defaults.write_parquet shifts f0..f19).
DENSE_INFORMATIVE = 20


# ---- data ---------------------------------------------------------------------------------------

def informative_features(size: str):
    """(0-based indices of the class-informative features, the top ranks to look in, features)."""
    import numpy as np

    if size == "dense":
        from benchmarks.big_input_defaults import FEATURES

        return np.arange(DENSE_INFORMATIVE), DENSE_INFORMATIVE, FEATURES
    from benchmarks.term_corpus import SIZES, informative_terms

    num_terms = SIZES[size][1]
    return informative_terms(num_terms).ravel(), TOP_K, num_terms


def quality(size: str, features_path: Path) -> dict:
    """Informative features among the method's top ranks, and what a random ranking would find."""
    import numpy as np
    import pandas as pd

    informative, top, num_features = informative_features(size)
    table = pd.read_parquet(features_path)
    ranked = table.sort_values("rank", kind="mergesort")["index"].to_numpy()[:top]
    return {"informative_in_top": int(np.isin(ranked, informative).sum()), "top": int(top),
            "informative": int(informative.size), "chance": top * informative.size / num_features}


def prepare(size: str, workdir: Path) -> dict:
    """Write the input of ``size`` once (LIBSVM + a Parquet copy for the floor, or dense Parquet)."""
    workdir.mkdir(parents=True, exist_ok=True)
    if size == "dense":
        path = workdir / f"dense_{DENSE_ROWS}.parquet"
        if not path.exists():
            from benchmarks.big_input_defaults import write_parquet

            write_parquet(path, DENSE_ROWS)
        return {"path": str(path), "format": "parquet", "floor_path": str(path)}
    from benchmarks.term_corpus import SIZES, term_corpus, write_libsvm

    path, floor_path = workdir / f"terms_{size}.libsvm", workdir / f"terms_{size}.parquet"
    if not path.exists() or not floor_path.exists():
        matrix, labels = term_corpus(*SIZES[size], seed=0)
        write_libsvm(str(path), matrix, labels)
        _write_csr_parquet(floor_path, matrix, labels)
    return {"path": str(path), "format": "libsvm", "floor_path": str(floor_path)}


def _write_csr_parquet(path: Path, matrix, labels) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    offsets = pa.array(matrix.indptr.astype(np.int64))
    table = pa.table({"label": labels, "indices": pa.LargeListArray.from_arrays(offsets, pa.array(matrix.indices)),
                      "values": pa.LargeListArray.from_arrays(offsets, pa.array(matrix.data))})
    pq.write_table(table, str(path), row_group_size=50_000)


def floor_seconds(size: str, floor_path: str, repeats: int = 3) -> float:
    """Best of ``repeats``: read the rows with pyarrow into SciPy CSR (or a dense array) and sum
    every feature per class with one product (the least any per-class statistic can cost)."""
    import numpy as np
    import pyarrow.parquet as pq
    import scipy.sparse as sp

    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        table = pq.read_table(floor_path)
        labels = table.column("label").to_numpy()
        if size == "dense":
            matrix = np.column_stack([table.column(name).to_numpy() for name in table.column_names if name != "label"])
        else:
            indices, values = table.column("indices").combine_chunks(), table.column("values").combine_chunks()
            matrix = sp.csr_matrix((values.values.to_numpy(), indices.values.to_numpy(), indices.offsets.to_numpy()),
                                   shape=(len(labels), int(indices.values.to_numpy().max()) + 1))
        classes, index = np.unique(labels, return_inverse=True)
        one_hot = sp.csr_matrix((np.ones(len(labels)), (index, np.arange(len(labels)))),
                                shape=(len(classes), len(labels)))
        sums = one_hot @ matrix
        np.asarray(sums.sum())
        best = min(best, time.perf_counter() - started)
    return best


# ---- child: one session, the baselines and one method --------------------------------------------

class _StageTimes(logging.Handler):
    def __init__(self):
        super().__init__(logging.INFO)
        self.seconds = {}

    def emit(self, record):
        if getattr(record, "event", None) == "stage":
            self.seconds[record.stage] = record.seconds


def child(method: str, size: str, data: dict, output: str) -> dict:
    from pyspark.ml.feature import UnivariateFeatureSelector, VectorAssembler
    from pyspark.ml.stat import Summarizer
    from pyspark.sql import functions as F

    from sparkfs.cli import main
    from sparkfs.spark.session import get_spark

    started = time.perf_counter()
    spark = get_spark("local[2]", app_name="sparkfs-scale")
    spark.sparkContext.setLogLevel("ERROR")
    session_seconds = time.perf_counter() - started
    if data["format"] == "libsvm":
        frame = spark.read.format("libsvm").load(data["path"])
    else:
        raw = spark.read.parquet(data["path"])
        names = [name for name in raw.columns if name != "label"]
        frame = VectorAssembler(inputCols=names, outputCol="features").transform(raw).select(
            "features", F.col("label").cast("double").alias("label"))

    def timed(action):
        begin = time.perf_counter()
        action()
        return time.perf_counter() - begin

    # A Parquet input is read and assembled inside sparkfs's fit (it is not persisted), so its
    # like-for-like baseline is the bare pass over the same uncached read-and-assemble.
    bare_uncached = None
    if data["format"] == "parquet":
        bare_uncached = timed(lambda: frame.select(Summarizer.metrics("mean", "variance").summary(
            F.col("features"))).collect())
    frame = frame.cache()
    frame.count()
    bare = timed(lambda: frame.select(Summarizer.metrics("mean", "variance").summary(F.col("features"))).collect())
    ufs = timed(lambda: UnivariateFeatureSelector().setFeatureType("continuous").setLabelType("categorical")
                .setSelectionMode("numTopFeatures").setSelectionThreshold(TOP_K).fit(frame))
    frame.unpersist()
    stages = _StageTimes()
    log = logging.getLogger("sparkfs")  # the CLI adds its own handler only to a logger without one
    log.addHandler(logging.StreamHandler(sys.stderr))
    log.addHandler(stages)
    log.setLevel(logging.INFO)
    begin = time.perf_counter()
    arguments = ["select", "--input", data["path"], "--format", data["format"], "--method", method,
                 "--num-features", str(TOP_K), "--output", output]
    if data["format"] == "parquet":
        arguments += ["--label-col", "label"]
    code = main(arguments)
    wall = time.perf_counter() - begin
    summary, found = {}, None
    if code == 0:
        summary = json.loads(Path(output, "summary.json").read_text())
        found = quality(size, Path(output, "features.parquet"))
    said = {key: summary[key] for key in ("n_queries", "query_sample", "n_pool", "neighbours_among", "steps",
                                           "iterations", "batch_size", "candidates", "candidates_rule", "row_sample",
                                           "sample_rows", "convergence", "elimination") if key in summary}
    if "ties" in summary:
        said["tied_at_cut"] = summary["ties"].get("tied_at_cut")
    return {"exit": code, "wall": wall, "fit": stages.seconds.get("fit"), "read": stages.seconds.get("read"),
            "bare": bare, "bare_uncached": bare_uncached, "ufs": ufs, "session": session_seconds, "said": said,
            "quality": found}


# ---- parent: run, sample memory, write the table ------------------------------------------------

def _descendants(root: int) -> list:
    children = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        for pid in children.get(stack.pop(), []):
            found.append(pid)
            stack.append(pid)
    return found


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def run_child(method: str, size: str, data: dict, timeout: float) -> dict:
    peaks = {"driver": 0.0, "jvm": 0.0, "workers": 0.0, "worker": 0.0}
    with tempfile.TemporaryDirectory(prefix="sparkfs_scale_") as scratch:
        result_path = Path(scratch, "result.json")
        environment = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        environment.pop("SPARK_DRIVER_MEMORY", None)
        command = [sys.executable, "-m", "benchmarks.scale", "--child", method, "--size", size, "--data",
                   json.dumps(data),
                   "--child-output", str(Path(scratch, "out")), "--child-result", str(result_path)]
        with open(Path(scratch, "stderr.txt"), "w") as stderr:
            process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=stderr,
                                       start_new_session=True, cwd=ROOT)
            started, stopped = time.monotonic(), False
            try:
                while process.poll() is None:
                    if time.monotonic() - started > timeout:
                        stopped = True
                        break
                    _sample_peaks(process.pid, peaks)
                    time.sleep(0.5)
            finally:  # the timeout, Ctrl-C or SIGTERM (see main) stop the child's whole process group
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        elapsed = time.monotonic() - started
        tail = Path(scratch, "stderr.txt").read_text(errors="replace").strip().splitlines()[-3:]
        result = json.loads(result_path.read_text()) if result_path.exists() else {}
    result.update(method=method, size=size, peaks_mb=peaks, child_seconds=elapsed,
                  stopped_after=timeout if stopped else None, error="" if result.get("exit") == 0 else " / ".join(tail))
    return result


def _sample_peaks(pid: int, peaks: dict) -> None:
    """Raise ``peaks`` (MB) to the child's current driver, JVM and Python worker memory."""
    workers = []
    peaks["driver"] = max(peaks["driver"], _rss_mb(pid))
    for descendant in _descendants(pid):
        text = _command(descendant)
        if "java" in text.split(" ", 1)[0]:
            peaks["jvm"] = max(peaks["jvm"], _rss_mb(descendant))
        elif "pyspark.daemon" in text or "pyspark.worker" in text:
            workers.append(_rss_mb(descendant))
    peaks["workers"] = max(peaks["workers"], sum(workers))
    peaks["worker"] = max(peaks["worker"], max(workers, default=0.0))


def _ratio(value, base):
    return f"{value / base:.1f}x" if value and base else "-"


def _quality_cell(found) -> str:
    if not found:
        return "-"
    times = found["informative_in_top"] / found["chance"] if found["chance"] else float("inf")
    return f"{found['informative_in_top']} ({times:.0f}x chance)"


def table_lines(size: str, floor: float, results: list) -> list:
    informative, top, num_features = informative_features(size)
    chance = top * informative.size / num_features
    lines = [f"## {size}", "", f"Floor (pyarrow into SciPy, one per-class sum): {floor:.2f} s. Quality: the "
             f"{informative.size:,} class-informative features the generator made, found in each method's top {top:,} "
             f"(chance {chance:.1f}).", "",
             "| method | outcome | informative in top | wall s | fit s | fit / bare pass | fit / uncached bare pass | "
             "fit / Spark ML ANOVA | "
             "fit / floor | bare pass s | ANOVA s | driver MB | JVM MB | workers MB (largest) | what the default did |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for result in results:
        peaks = result["peaks_mb"]
        if result.get("stopped_after"):
            outcome = f"stopped after {result['stopped_after']:.0f} s"
        elif result.get("exit") == 0:
            outcome = "done"
        else:
            outcome = f"exit {result.get('exit', '?')}: {result['error'][:160]}"
        fit = result.get("fit")
        lines.append(
            f"| {result['method']} | {outcome} | {_quality_cell(result.get('quality'))} | {result.get('wall', 0):.1f} "
            f"| {fit or 0:.1f} | "
            f"{_ratio(fit, result.get('bare'))} | {_ratio(fit, result.get('bare_uncached'))} | "
            f"{_ratio(fit, result.get('ufs'))} | {_ratio(fit, floor)} | "
            f"{result.get('bare', 0):.2f} | {result.get('ufs', 0):.1f} | {peaks['driver']:.0f} | {peaks['jvm']:.0f} | "
            f"{peaks['workers']:.0f} ({peaks['worker']:.0f}) | "
            f"{json.dumps(result.get('said', {}), separators=(',', ':')).replace('|', '/')[:200]} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="S,dense", help="comma-separated: tiny, S, M, dense")
    parser.add_argument("--methods", default=",".join(SELECT_METHODS))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a method may take (default 600)")
    parser.add_argument("--workdir", default="/tmp/sparkfs_scale")
    parser.add_argument("--out", default=str(RESULTS / "scale.md"))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--size", help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--child-output", help=argparse.SUPPRESS)
    parser.add_argument("--child-result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = child(args.child, args.size, json.loads(args.data), args.child_output)
        Path(args.child_result).write_text(json.dumps(result))
        return
    # SIGTERM (a scheduler's stop, `kill`) unwinds like Ctrl-C, so run_child stops the running child
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    out = Path(args.out)
    sections = [f"# Scale: every method with its defaults (`--num-features {TOP_K}`)", "",
                machine_header() + ", local[2]; load average at the start "
                f"{os.getloadavg()[0]:.1f}. Command: `python -m benchmarks.scale --sizes {args.sizes} "
                f"--methods {args.methods} --timeout {args.timeout:.0f}`. Ratios are to baselines measured in "
                "the same session as the method (a new session per method).", ""]
    everything = []
    for size in args.sizes.split(","):
        data = prepare(size, Path(args.workdir))
        floor = floor_seconds(size, data["floor_path"])
        results = []
        for method in args.methods.split(","):
            result = run_child(method, size, data, args.timeout)
            results.append(result)
            print(json.dumps(result), flush=True)
        everything.append({"size": size, "floor": floor, "results": results})
        sections += table_lines(size, floor, results) + [""]
    sections.append(f"Load average at the end: {os.getloadavg()[0]:.1f}.")
    out.write_text("\n".join(sections) + "\n")
    out.with_suffix(".json").write_text(json.dumps(everything, indent=1))
    print(out.read_text())


if __name__ == "__main__":
    main()
