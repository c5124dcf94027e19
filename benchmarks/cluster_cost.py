"""The cluster cost model's measured rows: one method's `sparkfs select` on a Spark
standalone cluster of two workers (1 core each, started here from pyspark's own jars) against the
same command on `local[2]`, the same 2 cores, in one run. Per run: wall and fit seconds, Spark jobs
and stages, and what Spark's listener recorded (from the application's event log): bytes shuffled
(written and read), bytes of task results sent to the driver, input bytes read, and executor
run time summed over tasks.

    python -m benchmarks.cluster_cost --input /tmp/sparkfs_scale/terms_S.libsvm --methods lfs,anova,relieff

The workers share the checkout here (the same machine), so no environment is shipped: the cost
model is about what a pass moves, which the hidden-checkout tests (tests/integration/test_cluster.py)
do not measure. Writes benchmarks/results/cluster_cost.md (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.common import RESULTS


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def start_cluster(folder: Path, worker_memory: str):
    """A master and two 1-core workers; returns (url, processes)."""
    home = _spark_home()
    environ = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    master_port, webui = _free_port(), _free_port()
    processes = []
    with open(folder / "master.log", "w") as log:
        processes.append(subprocess.Popen(
            [f"{home}/bin/spark-class", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
             str(master_port), "--webui-port", str(webui)], stdout=log, stderr=subprocess.STDOUT, env=environ,
            start_new_session=True))
    url = f"spark://127.0.0.1:{master_port}"
    for index in (1, 2):
        work = folder / f"worker-{index}"
        work.mkdir()
        with open(folder / f"worker-{index}.log", "w") as log:
            processes.append(subprocess.Popen(
                [f"{home}/bin/spark-class", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                 "--cores", "1", "--memory", worker_memory, "--webui-port", str(_free_port()), "--work-dir",
                 str(work), url], stdout=log, stderr=subprocess.STDOUT, env=environ, start_new_session=True))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=2) as answer:
                if json.loads(answer.read()).get("aliveworkers", 0) >= 2:
                    return url, processes
        except OSError:
            pass
        time.sleep(1)
    stop(processes)
    raise RuntimeError("the cluster did not come up with 2 workers; logs in " + str(folder))


def stop(processes) -> None:
    for process in reversed(processes):
        for signal_number, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            try:
                os.killpg(process.pid, signal_number)
                process.wait(timeout=wait)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue


def listener_totals(event_dir: Path) -> dict:
    """Totals over the one application's event log: jobs, stages, and the tasks' metrics."""
    logs = [path for path in event_dir.rglob("events_*") if path.is_file()]
    totals = {"jobs": 0, "stages": 0, "tasks": 0, "shuffle_written": 0, "shuffle_read": 0, "result_bytes": 0,
              "input_bytes": 0, "run_ms": 0}
    for path in logs:
        for line in path.read_text().splitlines():
            event = json.loads(line)
            kind = event.get("Event")
            if kind == "SparkListenerJobStart":
                totals["jobs"] += 1
            elif kind == "SparkListenerStageCompleted":
                totals["stages"] += 1
            elif kind == "SparkListenerTaskEnd" and event.get("Task Metrics"):
                metrics = event["Task Metrics"]
                read = metrics.get("Shuffle Read Metrics", {})
                totals["tasks"] += 1
                totals["shuffle_written"] += metrics.get("Shuffle Write Metrics", {}).get("Shuffle Bytes Written", 0)
                totals["shuffle_read"] += read.get("Remote Bytes Read", 0) + read.get("Local Bytes Read", 0)
                totals["result_bytes"] += metrics.get("Result Size", 0)
                totals["input_bytes"] += metrics.get("Input Metrics", {}).get("Bytes Read", 0)
                totals["run_ms"] += metrics.get("Executor Run Time", 0)
    return totals


def run(master: str, method: str, source: str, folder: Path, executor_memory: str, top: int) -> dict:
    """One `sparkfs select` in its own process, with an event log."""
    events = folder / f"events-{method}-{'cluster' if master.startswith('spark') else 'local'}"
    events.mkdir()
    output = folder / f"out-{events.name}"
    source_format = "parquet" if source.rstrip("/").endswith(".parquet") else "libsvm"
    command = [sys.executable, "-m", "sparkfs.cli", "select", "--input", source, "--format", source_format,
               *(["--label-col", "label"] if source_format == "parquet" else []),
               "--method", method, "--num-features", str(top), "--output", str(output),
               "--master", master, "--conf", "spark.eventLog.enabled=true", "--conf", f"spark.eventLog.dir={events}",
               "--conf", "spark.eventLog.compress=false",
               "--conf", "spark.ui.enabled=false"]
    if master.startswith("spark"):
        command += ["--conf", f"spark.executor.memory={executor_memory}"]
    environ = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    begin = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=environ)
    wall = time.perf_counter() - begin
    row = {"method": method, "master": "cluster (2 workers x 1 core)" if master.startswith("spark") else "local[2]",
           "exit": done.returncode, "wall": wall}
    if done.returncode == 0:
        summary = json.loads((output / "summary.json").read_text())
        row["fit"] = summary.get("fit_seconds") or summary.get("seconds", {}).get("fit")
        row.update(listener_totals(events))
    else:
        row["error"] = done.stderr.strip().splitlines()[-1][:300] if done.stderr.strip() else ""
    return row


def _megabytes(value) -> str:
    return f"{value / 1e6:.1f}"


def table(rows) -> list:
    header = ("| method | master | exit | wall s | fit s | jobs | stages | tasks | shuffle written MB | shuffle read "
              "MB | results to driver MB | input MB | executor run s |")
    lines = [header, "|" + "---|" * 13]
    for row in rows:
        if row["exit"] != 0:
            lines.append(f"| {row['method']} | {row['master']} | {row['exit']}: {row.get('error', '')} | "
                         f"{row['wall']:.1f} |" + " - |" * 9)
            continue
        fit = row.get("fit")
        lines.append(f"| {row['method']} | {row['master']} | 0 | {row['wall']:.1f} | "
                     f"{fit if isinstance(fit, (int, float)) else '-'} | {row['jobs']} | {row['stages']} | "
                     f"{row['tasks']} | {_megabytes(row['shuffle_written'])} | {_megabytes(row['shuffle_read'])} | "
                     f"{_megabytes(row['result_bytes'])} | {_megabytes(row['input_bytes'])} | "
                     f"{row['run_ms'] / 1000:.1f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True,
                        help="a LIBSVM file, or a Parquet input (*.parquet) with features and label columns")
    parser.add_argument("--methods", default="lfs,anova,relieff")
    parser.add_argument("--num-features", type=int, default=1000)
    parser.add_argument("--worker-memory", default="5g")
    parser.add_argument("--executor-memory", default="4g")
    parser.add_argument("--out", default=str(RESULTS / "cluster_cost.md"))
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sparkfs-cluster-cost-"))
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()[0]
    url, processes = start_cluster(folder, args.worker_memory)
    rows = []
    try:
        for method in args.methods.split(","):
            for master in (url, "local[2]"):
                rows.append(run(master, method, args.input, folder, args.executor_memory, args.num_features))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        stop(processes)
        shutil.rmtree(folder, ignore_errors=True)
    lines = ["# Cluster cost: a two-worker standalone cluster against local[2] (benchmarks/cluster_cost.py)", "",
             f"Measured {started} on {platform.machine()}, {os.cpu_count()} cores, Python "
             f"{platform.python_version()}; load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the "
             f"end. Command: `python -m benchmarks.cluster_cost {' '.join(sys.argv[1:])}`. Each row is one "
             "`sparkfs select` process (its own session); the listener's figures are summed over the "
             "application's tasks from its event log.", "", *table(rows), ""]
    Path(args.out).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
