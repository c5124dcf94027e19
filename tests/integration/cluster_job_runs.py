"""Test helper run under ``spark-submit`` (not collected by pytest): runs ``jobs/select_features.py``
once per argument list in one driver, so the cluster's executors (and their packed environment)
start once for all the selector families (tests/integration/test_cluster.py).

    spark-submit tests/integration/cluster_job_runs.py RUNS.json RESULTS.json

RUNS.json maps a name to the job's argument list (or to ``["sparkfs", COMMAND, ...]``: that command
of the CLI, in the same driver); RESULTS.json receives each name's exit code.
"""

import json
import runpy
import sys
from pathlib import Path

JOB = Path(__file__).resolve().parents[2] / "jobs" / "select_features.py"


def run_job(arguments):
    if arguments[:1] == ["sparkfs"]:  # evaluate, stability: the CLI in this driver, on the submitted master
        from sparkfs.cli import main

        return main(arguments[1:])
    sys.argv = [str(JOB), *arguments]
    try:
        runpy.run_path(str(JOB), run_name="__main__")
    except SystemExit as finished:
        return finished.code if isinstance(finished.code, int) else 1
    return 0


if __name__ == "__main__":
    runs = json.loads(Path(sys.argv[1]).read_text())
    results_path = Path(sys.argv[2])
    exit_codes = {name: run_job(arguments) for name, arguments in runs.items()}
    results_path.write_text(json.dumps(exit_codes))
