"""``sparkfs select`` on a hashed vocabulary (:mod:`benchmarks.hashed_corpus`), one method at a time,
with the default settings: wall time, exit code, the last lines of its output, the peak resident
memory of the driver's Python process, the JVM and the Python workers (their sums, sampled from
``/proc`` every 0.2 s), and how many of the generator's informative ids the selection holds.

    python -m benchmarks.hashed_corpus W24 /tmp/hashed_work/w24.libsvm
    python -m benchmarks.bench_hashed_vocabulary /tmp/hashed_work/w24.libsvm anova chi2 lfs variance

Appends one JSON line per run to ``--log`` (default ``benchmarks/results/hashed_vocabulary.jsonl``, kept
with the results so that a later run of one method is reported beside the others, each with its date);
``--report`` writes ``benchmarks/results/hashed_vocabulary.md`` from the newest run of each method in that log.
The runs' outputs and logs go to ``--workdir`` (default ``/tmp/hashed_work``), removed after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence

from benchmarks.common import RESULTS, ROOT, machine_header

PAGE = os.sysconf("SC_PAGE_SIZE")


def _children() -> Dict[int, List[int]]:
    tree: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(parent, []).append(int(entry))
    return tree


def _kind(pid: int, root: int) -> str:
    if pid == root:
        return "driver_python"
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "other"
    if "java" in command.split(" ")[0]:
        return "jvm"
    if "pyspark" in command or "python" in command:
        return "python_workers"
    return "other"


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


def sample_tree(root: int) -> Dict[str, int]:
    """The resident bytes of ``root`` and its descendants, summed per kind of process."""
    tree, totals, stack = _children(), {}, [root]
    while stack:
        pid = stack.pop()
        stack.extend(tree.get(pid, []))
        kind = _kind(pid, root)
        totals[kind] = totals.get(kind, 0) + _rss(pid)
    return totals


def run_method(data: str, method: str, vector_size: int, timeout: float, workdir: Path) -> dict:
    """One ``sparkfs select`` run, sampled; its output directory is removed afterwards."""
    output = workdir / f"out_{method}"
    shutil.rmtree(output, ignore_errors=True)
    truth = json.loads(Path(data + ".truth.json").read_text())
    informative = {int(i) for row in truth["informative_ids"] for i in row}
    command = [str(ROOT / ".venv" / "bin" / "sparkfs"), "select", "--input", data, "--format", "libsvm",
               "--vector-size", str(vector_size), "--method", method, "--num-features", str(len(informative)),
               "--output", str(output)]
    log = workdir / f"log_{method}.txt"
    started = time.perf_counter()
    with open(log, "w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, cwd=str(ROOT))
    peaks: Dict[str, int] = {}
    driver_by_stage: Dict[str, int] = {}  # the driver's peak while each stage ran (after the last one logged)
    peak_total = 0
    while process.poll() is None:
        sample = sample_tree(process.pid)
        for kind, value in sample.items():
            peaks[kind] = max(peaks.get(kind, 0), value)
        peak_total = max(peak_total, sum(sample.values()))
        stage = _running_stage(log)
        driver_by_stage[stage] = max(driver_by_stage.get(stage, 0), sample.get("driver_python", 0))
        if time.perf_counter() - started > timeout:
            process.terminate()  # the CLI's handler cancels the jobs and stops its JVM
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
            break
        time.sleep(0.2)
    wall = time.perf_counter() - started
    text = log.read_text(errors="replace").strip().splitlines()
    found = _found(output, informative)
    shutil.rmtree(output, ignore_errors=True)
    stages = {}
    for line in text:  # "sparkfs INFO stage=fit status=done seconds=36.34"
        fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
        if "stage" in fields and "seconds" in fields:
            stages[fields["stage"]] = float(fields["seconds"])
    return {"method": method, "data": truth, "exit": process.returncode, "wall_s": round(wall, 1), "stages": stages,
            "timed_out": wall > timeout, "peak_mib": {k: round(v / 2**20) for k, v in peaks.items()},
            "driver_peak_by_stage_mib": {k: round(v / 2**20) for k, v in driver_by_stage.items()},
            "peak_total_mib": round(peak_total / 2**20), "found": found, "of": len(informative),
            "tail": [line[:300] for line in text[-4:]], "when": time.strftime("%Y-%m-%d %H:%M"),
            "load": round(os.getloadavg()[0], 1)}


_NEXT_STAGE = {"spark": "read", "read": "fit", "fit": "write", "write": "after write"}


def _running_stage(log: Path) -> str:
    """The stage under way: the one after the last ``stage=... status=done`` line of the log."""
    try:
        done = [line.split("stage=")[1].split()[0] for line in log.read_text(errors="replace").splitlines()
                if "stage=" in line and "status=done" in line]
    except OSError:
        return "spark"
    return _NEXT_STAGE.get(done[-1], "after " + done[-1]) if done else "spark"


def _found(output: Path, informative: set):
    """How many informative ids the selection holds (0-based ids), or None without a selection."""
    table = output / "features.parquet"
    if not table.exists():
        return None
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    features = pq.read_table(table, columns=["index", "selected"])
    selected = pc.filter(features.column("index"), features.column("selected")).to_numpy()
    return len(informative.intersection(int(i) for i in selected))


def _latest_runs(log: Path) -> dict:
    latest = {}
    for line in log.read_text().splitlines():
        if line.strip():
            run = json.loads(line)
            latest[run["method"]] = run
    return latest


def _table(latest: dict) -> List[str]:
    lines = ["| method | measured | exit | wall (s) | read / fit / write (s) | driver Python (MiB; peak by stage) "
             "| JVM (MiB) | Python workers (MiB) | all (MiB) | informative found | load | how it ended |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for method, run in latest.items():
        peak = run["peak_mib"]
        found = "-" if run["found"] is None else f"{run['found']} / {run['of']}"
        ended = "timed out" if run["timed_out"] else (run["tail"][-1] if run["tail"] else "")
        ended = "finished" if run["exit"] == 0 else ended
        if run["exit"] is not None and run["exit"] < 0 and not run["timed_out"]:
            ended = (f"killed by signal {-run['exit']}, not by this benchmark (its processes held "
                     f"{run['peak_total_mib']} MiB)")
        stages = run.get("stages") or {}
        timed = " / ".join(f"{stages[name]:.0f}" if name in stages else "-" for name in ("read", "fit", "write"))
        by_stage = run.get("driver_peak_by_stage_mib")
        driver = str(peak.get("driver_python", 0)) + (
            " (" + ", ".join(f"{stage} {value}" for stage, value in by_stage.items()) + ")" if by_stage else "")
        lines.append(f"| {method} | {run['when']} | {run['exit']} | {run['wall_s']} | {timed} | {driver} | "
                     f"{peak.get('jvm', 0)} | {peak.get('python_workers', 0)} | {run['peak_total_mib']} | {found} | "
                     f"{run['load']} | {ended.replace('|', '/')[:240]} |")
    return lines


def write_report(log: Path, path: Path, befores: Sequence[Path] = (), before_labels: Sequence[str] = ()) -> None:
    latest = _latest_runs(log)
    data = next(iter(latest.values()))["data"] if latest else {}
    lines = [
        "# sparkfs select on a hashed vocabulary of 2^24 ids",
        "",
        machine_header().replace("Measured", "Written", 1) + " (each run's date in its row)",
        "",
        f"Data: `python -m benchmarks.hashed_corpus {data.get('size')} PATH --seed {data.get('seed')}`: "
        f"{data.get('rows', 0):,} rows x 2^{data.get('bits')} ids, {data.get('non_zeros', 0):,} non-zeros, "
        f"{data.get('touched_ids', 0):,} ids touched, 20 classes, "
        f"{sum(len(r) for r in data.get('informative_ids', []))} informative ids known to the generator; "
        "read as LIBSVM with `--vector-size 16777216`.",
        "Each run (its date in the table; the runs are kept in `hashed_vocabulary.jsonl`): "
        "`sparkfs select --method M --num-features 400` with every other setting at its default "
        "(the CLI sizes the local driver's memory from the memory available when it starts), one run at a time, "
        "on a machine shared with other jobs (load average at the end of each run in the table). Peak memory: "
        "resident set sizes sampled from /proc every 0.2 s, summed per kind of process "
        "(`python -m benchmarks.bench_hashed_vocabulary`).",
        "",
    ]
    lines += _table(latest)
    for log_before, label in zip(befores, before_labels):
        if log_before.exists():
            lines += ["", f"Before the change, {label}:", ""] + _table(_latest_runs(log_before))
    lines += ["", "What the univariate filters hold: the float statistics engine keeps, per partition, one entry "
              "per (feature id, class) pair that occurs (`sparkfs/spark/keyed_moments.py`), merged by id range on "
              "the executors; the driver gets each pair once and scores the ids that occur plus one that stands "
              "for the ids that never occur. Before, the float pass refused dense per-class sums of 20 classes x "
              "2^24 features and the fit fell back to Spark's Summarizer per class (`groupBy(label)`), whose "
              "per-class buffers of 2^24 doubles in every task took the JVM's heap (the `before` table). Simba's "
              "update keeps CSR rows CSR (`sparkfs/core/simba.py`): an instance's step touches the features where "
              "it differs from its nearest hit or miss; before, each batch's rows, hits and misses were made dense, "
              "batch x 2^24 doubles each. Lmba's default batch rule (replay) keeps each instance's hinge terms CSR "
              "(`sparkfs/core/lmba_steps.py`): an instance's step touches its own ids and those of the rows active "
              "for it, and the sparse products run on the ids the rows hold; before, every step made the batch's "
              "per-instance impostor and target terms dense, batch x 2^24 doubles each, and SciPy's products on "
              "2^24 columns allocated work arrays of that length."]
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", help="a LIBSVM file of benchmarks.hashed_corpus (with its .truth.json)")
    parser.add_argument("methods", nargs="*")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--log", default=str(RESULTS / "hashed_vocabulary.jsonl"))
    parser.add_argument("--workdir", default="/tmp/hashed_work")
    parser.add_argument("--report", action="store_true", help="write the results file from the log")
    parser.add_argument("--before", action="append", default=[],
                        help="a log of runs on the code before a change, reported below (repeatable)")
    parser.add_argument("--before-label", action="append", default=[],
                        help="what that code was (a commit), one per --before")
    args = parser.parse_args()
    log = Path(args.log)
    for method in args.methods:
        truth = json.loads(Path(args.data + ".truth.json").read_text())
        workdir = Path(args.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        result = run_method(args.data, method, 2 ** truth["bits"], args.timeout, workdir)
        with open(log, "a") as handle:
            handle.write(json.dumps(result) + "\n")
        print(json.dumps({k: v for k, v in result.items() if k != "data"}), flush=True)
    if args.report:
        if len(args.before_label) != len(args.before):
            sys.exit("give one --before-label per --before")
        write_report(log, RESULTS / "hashed_vocabulary.md", [Path(b) for b in args.before], args.before_label)
    if not args.methods and not args.report:
        sys.exit("nothing to do: give methods to run or --report")


if __name__ == "__main__":
    main()
