"""Progress lines and a clean stop on Ctrl-C / SIGTERM, through the real command line.

The interruption tests start ``python -m sparkfs.cli select`` as a process of its own (each starts a
JVM), wait until the fit's progress lines show it running, send the signal and check the exit code,
the one "sparkfs: interrupted" line, no Java or Python trace, and nothing written.
"""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main

REPO = Path(__file__).resolve().parents[2]
TIME_LEFT = re.compile(r"^sparkfs progress simba: step \d+/\d+ \(\d+%\), .* elapsed, about .* left$", re.M)


@pytest.fixture(scope="module")
def sonar_parquet(tmp_path_factory, shared_data):
    data = np.load(shared_data / "sonar.npz")
    frame = pd.DataFrame(data["X"], columns=[f"f{i}" for i in range(data["X"].shape[1])])
    frame["label"] = data["y"]
    path = tmp_path_factory.mktemp("progress") / "sonar.parquet"
    frame.to_parquet(path, index=False)  # read without the schema inference of a CSV
    return str(path)


def _simba(input_path, output, iterations, *extra):
    return ["select", "--input", input_path, "--format", "parquet", "--method", "simba", "--param",
            f"iterations={iterations}", "--num-features", "5", "--output", str(output), *extra]


def test_quiet_prints_no_progress_nor_stage_lines(spark, sonar_parquet, tmp_path, capsys):
    """(The lines with the time left without --quiet: the interruption tests below wait for them.)"""
    assert main(_simba(sonar_parquet, tmp_path / "quiet", 4, "--master", "local[2]", "--quiet")) == 0
    quiet = capsys.readouterr()
    assert "sparkfs progress" not in quiet.err and "stage=" not in quiet.err
    assert "selected=5" in quiet.out  # the result still appears
    assert (tmp_path / "quiet" / "summary.json").exists()


def test_progress_spark_turns_sparks_console_bar_on():
    from sparkfs.cli import _spark_conf, build_parser

    assert _spark_conf(build_parser().parse_args(["select", "--progress", "spark"])) == {
        "spark.ui.showConsoleProgress": "true"}
    assert _spark_conf(build_parser().parse_args(["instance-weights", "--progress", "steps", "--output", "o"])) == {}


def _interrupted_run(sonar_parquet, tmp_path, signal_number, to_group):
    output = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    stderr_path = tmp_path / "stderr.txt"
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "sparkfs.cli", *_simba(sonar_parquet, output, 20000, "--master", "local[1]",
                                                          "--driver-memory", "1g")],
            stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=tmp_path, text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while not TIME_LEFT.search(stderr_path.read_text()):
                assert process.poll() is None, stderr_path.read_text()
                assert time.monotonic() < deadline, stderr_path.read_text()
                time.sleep(0.2)
            signalled = time.monotonic()
            if to_group:  # as a terminal's Ctrl-C: to the Python process, the JVM and Spark's Python workers
                os.killpg(process.pid, signal_number)
            else:  # as a scheduler's SIGTERM to the job's process
                process.send_signal(signal_number)
            stdout, _ = process.communicate(timeout=30)
            stopped = time.monotonic() - signalled
        finally:
            if process.poll() is None:
                process.kill()
    return process.returncode, stdout, stderr_path.read_text(), stopped, output


@pytest.mark.spark  # a child process starts its own JVM
@pytest.mark.parametrize("signal_number, to_group, code", [(signal.SIGINT, True, 130), (signal.SIGTERM, False, 143)])
def test_a_signal_stops_the_fit_cleanly(sonar_parquet, tmp_path, signal_number, to_group, code):
    returncode, stdout, stderr, stopped, output = _interrupted_run(sonar_parquet, tmp_path, signal_number, to_group)
    assert returncode == code, stderr
    after = stderr[stderr.index("sparkfs progress simba"):]
    assert after.rstrip().endswith("sparkfs: interrupted"), after
    assert after.count("sparkfs: interrupted") == 1
    for word in ("Py4J", "Exception", "Traceback", "ERROR", "\tat "):
        assert word not in after, after
    assert stopped < 15, stopped
    assert stdout == ""
    assert not output.exists()
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".out")] == []  # no staging
