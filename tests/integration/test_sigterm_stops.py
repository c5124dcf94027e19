"""SIGTERM as a scheduler sends it (``timeout``: to the whole process group, the JVM included),
against a child ``sparkfs select``: in the middle of a Spark job, and with the main thread inside
one long compiled call that runs no Python signal handler. Each ends within 10 s with exit 143,
the one ``sparkfs: interrupted`` line, no Python or Java trace (pyspark's accumulator server's
``EOFError`` included) and nothing written.

The child is ``python -c`` running :func:`sparkfs.cli.main` with the fit replaced by the stall under
test (a test hook: the real argument parsing, session start, handlers and exit code), and it says
on stderr when it is stalled.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

_CHILD = textwrap.dedent('''
    import ctypes, signal, sys, time
    from sparkfs.commands import select
    from sparkfs.selectors import _base

    def in_a_spark_job(self, dataset):
        def stall(batches):
            time.sleep(600)
            yield from batches
        print("STALLED", file=sys.stderr, flush=True)
        dataset.sparkSession.range(2, numPartitions=2).mapInPandas(stall, "id long").collect()

    def in_compiled_code(self, dataset):
        # SIGTERM blocked in this thread: the kernel delivers it to another one, and this thread
        # stays inside libc's sleep, as inside one long solver call, running no Python handler.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        print("STALLED", file=sys.stderr, flush=True)
        ctypes.CDLL(None).sleep(600)

    _base.FeatureSelector._score = {"job": in_a_spark_job, "compiled": in_compiled_code}[sys.argv[1]]
    from sparkfs.cli import main
    sys.exit(main(sys.argv[2:]))
''')


@pytest.mark.slow  # a JVM per child: about a minute each on a busy machine
@pytest.mark.spark  # the child starts its own JVM
@pytest.mark.parametrize("stall", ["job", "compiled"])
def test_sigterm_to_the_process_group_stops_within_ten_seconds(tmp_path, stall):
    data = tmp_path / "small.libsvm"
    data.write_text("".join(f"{i % 2} 1:{i} 2:{i % 3}\n" for i in range(20)))
    output = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    stderr_path = tmp_path / "stderr.txt"
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, stall, "select", "--input", str(data), "--format", "libsvm", "--method",
             "anova", "--num-features", "1", "--output", str(output), "--master", "local[2]", "--driver-memory", "1g"],
            stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=tmp_path, text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while "STALLED" not in stderr_path.read_text():
                assert process.poll() is None, stderr_path.read_text()
                assert time.monotonic() < deadline, stderr_path.read_text()
                time.sleep(0.2)
            time.sleep(1.0)  # well inside the stall (the Spark job's tasks have started)
            signalled = time.monotonic()
            os.killpg(process.pid, signal.SIGTERM)  # as `timeout` does: the Python process and its JVM
            stdout, _ = process.communicate(timeout=30)
            stopped = time.monotonic() - signalled
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    err = stderr_path.read_text()
    after = err[err.index("STALLED"):]
    assert process.returncode == 143, err
    assert stopped < 10, (stopped, err)
    assert after.rstrip().endswith("sparkfs: interrupted") and after.count("sparkfs: interrupted") == 1, after
    for word in ("Traceback", "EOFError", "Py4J", "Exception", "ERROR", "\tat "):
        assert word not in after, after
    assert stdout == ""
    assert not output.exists()
