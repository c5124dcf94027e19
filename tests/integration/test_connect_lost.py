"""A Spark Connect server that goes away in the middle of ``sparkfs select --remote``: the command
ends within 30 s with exit 1 and one line saying that the server went away (its URL named, never
"out of memory"), no Python trace and nothing written; a SIGTERM to the command while it finds the
server gone still ends it with 143 within 10 s.

Each case starts its own local server (:mod:`tests.integration.connect_server`), runs child
``sparkfs select`` processes on an svm-rfe fit with the Spark solver (one pass per L-BFGS
evaluation, one fit per eliminated feature: many Spark jobs), and stops the server by its pid once the fit has begun:
SIGKILL (a crash) or SIGTERM (a graceful stop). The retry policy and the failure's words are also
checked without a server, on the gRPC error the client raises.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from tests.integration.connect_server import REPO, alive, local_server

pytest.importorskip("pyspark.sql.connect.session")
grpc = pytest.importorskip("grpc")


class _Unavailable(grpc.RpcError):
    """gRPC's error for a server that cannot be reached, as the channel raises it."""

    def code(self):
        return grpc.StatusCode.UNAVAILABLE

    def details(self):
        return "failed to connect to all addresses"

    def trailing_metadata(self):
        return None

    def __str__(self):
        return ('<_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.UNAVAILABLE\n'
                '\tdetails = "failed to connect to all addresses"\n>')


class _Session:
    """What :func:`watch_server` uses of a Connect session: its client, and a job of one row."""

    @property
    def client(self):
        return self

    def range(self, rows):
        return self

    def collect(self):
        if getattr(self, "runs_jobs", False):
            return [(0,)]
        raise _Unavailable()

    def __init__(self):
        self.closed = False

    def set_retry_policies(self, policies):
        self.policies = policies

    def close(self):
        self.closed = True


def _calls_until_given_up(policy) -> int:
    from pyspark.sql.connect.client.retries import Retrying

    calls = 0
    with pytest.raises(_Unavailable):
        for attempt in Retrying([policy]):
            with attempt:
                calls += 1
                raise _Unavailable()
    return calls


@pytest.fixture
def watch(monkeypatch):
    from sparkfs.spark import connect_retries

    monkeypatch.setitem(connect_retries._watched, "watch", None)
    return connect_retries.watch_server("sc://localhost:15002/;token=s3cr3t", _Session())


def test_a_call_retries_an_unavailable_server_for_a_bounded_time_then_none_does(watch):
    from sparkfs.spark.connect_retries import bounded_retries, server_lost

    policy = bounded_retries(watch, seconds=1.0)
    started = time.monotonic()
    assert _calls_until_given_up(policy) > 1 and time.monotonic() - started <= 1.0
    assert server_lost() and watch.reason == "UNAVAILABLE: failed to connect to all addresses"
    deadline = time.monotonic() + 5
    while not watch.client.closed and time.monotonic() < deadline:  # closed from its own thread
        time.sleep(0.01)
    assert watch.client.closed
    started = time.monotonic()
    assert _calls_until_given_up(policy) == 1 and time.monotonic() - started < 0.1  # no retry once lost


def test_a_stopping_command_tries_each_call_once(watch):
    from sparkfs.spark.connect_retries import bounded_retries, server_lost, stop_retrying

    stop_retrying()
    assert _calls_until_given_up(bounded_retries(watch, seconds=30)) == 1 and not server_lost()


def test_the_failure_names_the_lost_server_never_memory(watch):
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    from sparkfs.spark.failures import ConnectServerLostError, resource_failure

    try:
        try:
            raise _Unavailable()
        except _Unavailable as raw:
            raise SparkConnectGrpcException(message=str(raw), grpc_status_code=grpc.StatusCode.UNAVAILABLE) from None
    except SparkConnectGrpcException as error:
        failure = resource_failure(error)
    assert isinstance(failure, ConnectServerLostError) and watch.lost
    text = str(failure)
    assert text.startswith("the Spark Connect server sc://localhost:15002/;token=*** went away during the command "
                           "(UNAVAILABLE: failed to connect to all addresses)")
    assert "s3cr3t" not in text and "memory" not in text and "\n" not in text


def test_a_call_cut_short_is_a_lost_server_when_the_server_no_longer_answers(watch):
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    from sparkfs.spark.failures import lost_server_failure

    cut = SparkConnectGrpcException(  # a stopping server cuts the stream of the running call
        message='<_MultiThreadedRendezvous of RPC that terminated with:\n\tstatus = StatusCode.CANCELLED\n'
                '\tdetails = "Server shutdown"\n>', grpc_status_code=grpc.StatusCode.CANCELLED)
    watch.session.runs_jobs = True  # the server is there
    assert lost_server_failure(cut) is None and not watch.lost
    watch.session.runs_jobs = False
    failure = lost_server_failure(cut)
    assert watch.lost and "went away during the command (CANCELLED: Server shutdown)" in str(failure)


def test_a_classic_session_failure_is_not_a_lost_server(watch):
    from sparkfs.spark.failures import lost_server_failure

    # "SparkContext was shut down" from a classic session's JVM (not a Connect error) says nothing of a server.
    assert lost_server_failure(RuntimeError("Job 3 cancelled because SparkContext was shut down")) is None
    assert not watch.lost


def _term_matrix(path: Path) -> None:
    """2,000 rows of 200 term counts (columns t1..t200, a few non-zero in each row) and a label
    column, as Parquet (read on the server without Python workers); the first 20 terms lean
    towards class 1."""
    import pandas as pd

    rng = np.random.default_rng(7)
    label = np.arange(2000) % 2
    counts = rng.poisson(0.1, (2000, 200)).astype(float)
    counts[:, :20] += rng.poisson(0.3, (2000, 20)) * label[:, None]
    frame = pd.DataFrame(counts, columns=[f"t{column + 1}" for column in range(200)])
    frame["label"] = label.astype(float)
    frame.to_parquet(path)


def _start_select(folder: Path, url: str, name: str):
    """A child ``sparkfs select --remote`` on the term matrix, in its own process group; (process,
    its stderr file, its output directory). svm-rfe with the Spark solver eliminating one feature
    per round: hundreds of fits of one pass per L-BFGS evaluation, under way whenever the server goes."""
    env = dict(os.environ, PYTHONPATH=str(REPO), PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    for variable in ("SPARK_REMOTE", "MASTER", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_GATEWAY_PORT", "SPARKFS_MASTER"):
        env.pop(variable, None)
    stderr_path, output = folder / f"{name}.stderr", folder / f"{name}-out"
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "sparkfs.cli", "select", "--input", str(folder / "terms.parquet"), "--format",
             "parquet", "--method", "svm-rfe", "--param", "solver=spark", "--param", "step=1", "--param",
             "halveAbove=0", "--num-features", "5", "--output", str(output), "--remote", url],
            cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
    return process, stderr_path, output


def _wait_for(children, line: str) -> None:
    """Until every child has logged ``line`` (``stage=read status=done``: its fit's jobs run next),
    then 3 s more."""
    deadline = time.monotonic() + 120
    for process, stderr_path, _ in children:
        while line not in stderr_path.read_text():
            assert process.poll() is None, stderr_path.read_text()
            assert time.monotonic() < deadline, stderr_path.read_text()
            time.sleep(0.2)
    time.sleep(3.0)
    for process, stderr_path, _ in children:
        assert process.poll() is None, stderr_path.read_text()  # still fitting when the server goes


def _ended(process, since: float, seconds: float):
    """The child's exit code and the seconds from ``since`` (a monotonic time) to its end; it is
    killed when it outlives ``seconds`` from ``since``."""
    try:
        process.wait(timeout=max(since + seconds - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return process.returncode, time.monotonic() - since


def _assert_reports_the_lost_server(code, seconds, stderr_path: Path, output: Path, url: str) -> None:
    err = stderr_path.read_text()
    assert code == 1 and seconds < 30, (code, seconds, err[-3000:])
    failed = [line for line in err.splitlines() if line.startswith("sparkfs: failed:")]
    assert len(failed) == 1, err[-3000:]
    assert failed[0].startswith(f"sparkfs: failed: the Spark Connect server {url} went away during the command")
    for words in ("memory", "Traceback", "RETRIES_EXCEEDED", "interrupted"):
        assert words not in err, err[-3000:]
    assert not output.exists()


def _killed(children, pid: int) -> None:
    for process, _, _ in children:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.slow  # a Connect server of its own and a child fit
@pytest.mark.spark
def test_a_killed_server_ends_the_command_and_sigterm_still_stops_it(tmp_path):
    """SIGKILL of the server (a crash) while two commands fit: the first ends by itself with the
    lost server's line; the second gets a SIGTERM 2 s after the kill, while its calls find the
    server gone, and stops as a SIGTERM stops any command."""
    _term_matrix(tmp_path / "terms.parquet")
    with local_server(lambda: Path(tempfile.mkdtemp(dir=tmp_path))) as (url, pid):
        children = [_start_select(tmp_path, url, "alone"), _start_select(tmp_path, url, "stopped")]
        try:
            _wait_for(children, "stage=read status=done")
            os.kill(pid, signal.SIGKILL)
            killed = time.monotonic()
            time.sleep(2.0)
            (alone, alone_err, alone_out), (stopped, stopped_err, stopped_out) = children
            os.kill(stopped.pid, signal.SIGTERM)
            code, seconds = _ended(stopped, time.monotonic(), 20)
            err = stopped_err.read_text()
            assert code == 143 and seconds < 10, (code, seconds, err[-3000:])
            assert err.rstrip().endswith("sparkfs: interrupted") and "Traceback" not in err, err[-3000:]
            assert not stopped_out.exists()
            _assert_reports_the_lost_server(*_ended(alone, killed, 40), alone_err, alone_out, url)
        finally:
            _killed(children, pid)


@pytest.mark.slow  # a Connect server of its own and a child fit
@pytest.mark.spark
def test_a_server_stopped_gracefully_is_a_lost_server_not_memory(tmp_path):
    _term_matrix(tmp_path / "terms.parquet")
    with local_server(lambda: Path(tempfile.mkdtemp(dir=tmp_path))) as (url, pid):
        children = [_start_select(tmp_path, url, "alone")]
        try:
            _wait_for(children, "stage=read status=done")
            os.kill(pid, signal.SIGTERM)
            _assert_reports_the_lost_server(*_ended(children[0][0], time.monotonic(), 40), *children[0][1:], url)
        finally:
            _killed(children, pid)
