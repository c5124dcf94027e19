"""A local Spark Connect server for the tests of the command line on Spark Connect: started with
``sbin/start-connect-server.sh`` of the installed pyspark, found by the pid file it writes, and
stopped (its JVM made sure gone) by that pid, never by a name pattern."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def accepts(port: int) -> bool:
    try:
        socket.create_connection(("localhost", port), timeout=1).close()
        return True
    except OSError:
        return False


def server_env(state: Path) -> dict:
    import pyspark

    env = dict(os.environ, SPARK_HOME=os.path.dirname(pyspark.__file__), SPARK_PID_DIR=str(state),
               SPARK_LOG_DIR=str(state), SPARK_IDENT_STRING="sparkfs-remote-test", PYTHONPATH=str(REPO),
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    for name in ("SPARK_REMOTE", "MASTER", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_GATEWAY_PORT"):
        env.pop(name, None)
    return env


def server_pid(state: Path):
    files = list(state.glob("*.pid"))
    return int(files[0].read_text().strip()) if files else None


def alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def start_server(state: Path, env: dict, sbin: Path, port: int):
    """Start a local Connect server on ``port``; (its pid, None) once it accepts, else (pid, why)."""
    subprocess.run([str(sbin / "start-connect-server.sh"), "--master", "local[2]",
                    "--conf", f"spark.connect.grpc.binding.port={port}", "--conf", "spark.ui.enabled=false",
                    "--conf", "spark.sql.shuffle.partitions=2"],
                   env=env, capture_output=True, timeout=120)
    pid = server_pid(state)
    deadline = time.monotonic() + 90
    while not accepts(port) and time.monotonic() < deadline and pid is not None and alive(pid):
        time.sleep(0.5)
    if accepts(port):
        return pid, None
    logs = "".join(path.read_text() for path in state.glob("*.out"))
    causes = [line for line in logs.splitlines() if "Exception" in line or "Error" in line][:3]
    return pid, " | ".join(causes) or logs[-1500:] or "no log"


def stop_server(state: Path, env: dict, sbin: Path, pid) -> None:
    subprocess.run([str(sbin / "stop-connect-server.sh")], env=env, capture_output=True, timeout=120)
    deadline = time.monotonic() + 30
    while pid is not None and alive(pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    if pid is not None and alive(pid):  # the server we started did not stop: no stray Java left
        os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def local_server(new_folder: Callable[[], Path]):
    """Yield (``sc://localhost:PORT``, the server's pid) of a local Connect server (local[2]) whose
    state (pid file, logs) is in a folder from ``new_folder``; stopped, and its JVM made sure gone,
    afterwards whatever the caller did. A server that does not come up is tried once more on
    another port (a free port can be taken between the probe and the server's bind) before the
    caller is skipped with the server's own error lines."""
    failures = []
    for _ in range(2):
        state = new_folder()
        env, port = server_env(state), free_port()
        sbin = Path(env["SPARK_HOME"], "sbin")
        if not (sbin / "start-connect-server.sh").exists():
            pytest.skip(f"no {sbin}/start-connect-server.sh in the installed pyspark")
        pid, why = start_server(state, env, sbin, port)
        if why is None:
            try:
                yield f"sc://localhost:{port}", pid
            finally:
                stop_server(state, env, sbin, pid)
            return
        stop_server(state, env, sbin, pid)
        failures.append(f"port {port}: {why}")
    pytest.skip("the local Spark Connect server did not start: " + "; ".join(failures))
