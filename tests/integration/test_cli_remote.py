"""``--remote`` / ``SPARK_REMOTE``: the command line on a Spark Connect server, and the masters Spark
rejects reported as such.

The Connect runs start one local server for the module (``sbin/start-connect-server.sh`` of the
installed pyspark) and run ``python -m sparkfs.cli`` against it as child processes: a process that
already holds the suite's classic session cannot open a Connect one. The refusals that happen
before any session are checked in-process through :func:`sparkfs.cli.main`.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main, spark_target
from sparkfs.errors import SparkStartError
from sparkfs.spark.failures import resource_failure
from sparkfs.spark.session import get_spark
from tests.helpers import refused
from tests.integration.connect_server import free_port, local_server

pytest.importorskip("pyspark.sql.connect.session")
pytest.importorskip("grpc")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def connect_url(tmp_path_factory):
    """``sc://localhost:PORT`` of a local Connect server (local[2]) started for this module, stopped
    (and its JVM made sure gone) afterwards, whatever the tests did. A server that does not come
    up is tried once more on another port before the module is skipped (:func:`local_server`)."""
    with local_server(lambda: tmp_path_factory.mktemp("connect-server")) as (url, _):
        yield url


def _cli(*args, env_extra=None, cwd):
    env = dict(os.environ, PYTHONPATH=str(REPO), PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    for name in ("SPARK_REMOTE", "MASTER", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_GATEWAY_PORT", "SPARKFS_MASTER"):
        env.pop(name, None)
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "sparkfs.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def small_inputs(tmp_path_factory):
    """A Parquet file (columns a, b, c, label) and the same rows as LIBSVM: feature a separates the classes."""
    folder = tmp_path_factory.mktemp("remote-inputs")
    rng = np.random.default_rng(3)
    label = np.tile([0.0, 1.0], 10)
    frame = pd.DataFrame({"a": label * 3 + rng.normal(0, 0.3, 20), "b": rng.normal(0, 1, 20),
                          "c": rng.normal(0, 1, 20), "label": label})
    frame.to_parquet(folder / "small.parquet")
    lines = [f"{int(row.label)} 1:{row.a:.6f} 2:{row.b:.6f} 3:{row.c:.6f}" for row in frame.itertuples()]
    (folder / "small.libsvm").write_text("\n".join(lines) + "\n")
    return folder


def _selected(out: Path):
    summary = json.loads((out / "summary.json").read_text())
    table = pd.read_parquet(out / "features.parquet")
    return summary, table


def test_select_with_remote_runs_on_the_connect_server(connect_url, small_inputs, tmp_path):
    # A relative input: the server resolves paths from its own directory, so the CLI makes it absolute.
    out = tmp_path / "out"
    # statsEngine=jvm: Spark's Summarizer on the server, no Python worker to start (the fastest fit there).
    done = _cli("select", "--input", "small.parquet", "--format", "parquet", "--method", "anova",
                "--param", "statsEngine=jvm", "--num-features", "1", "--output", str(out), "--remote", connect_url,
                "--driver-memory", "2g",
                "--conf", "spark.sql.shuffle.partitions=2", cwd=small_inputs)
    assert done.returncode == 0, done.stderr[-3000:]
    summary, table = _selected(out)
    assert summary["selected_names"] == ["a"] and table["name"].tolist() == ["a", "b", "c"]
    assert summary["spark_memory_settings"] == {}  # no local driver memory on a remote session
    assert "ignored spark.driver.memory" in done.stderr


def test_spark_remote_in_the_environment_and_master_sc_url(connect_url, small_inputs, tmp_path):
    # SPARK_REMOTE alone selects the server; the LIBSVM reader runs there too (in the server's Python
    # workers, which import this checkout's sparkfs through the server's PYTHONPATH).
    out = tmp_path / "env"
    done = _cli("select", "--input", str(small_inputs / "small.libsvm"), "--format", "libsvm", "--method", "anova",
                "--param", "statsEngine=jvm", "--num-features", "1", "--output", str(out),
                env_extra={"SPARK_REMOTE": connect_url}, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _selected(out)[0]["selected_names"] == ["f1"]  # the file's column 1
    # --master sc://... is taken as the remote; with --remote too it is refused before any session.
    both = _cli("select", "--input", "x.parquet", "--format", "parquet", "--output", str(tmp_path / "both"),
                "--master", connect_url, "--remote", connect_url, cwd=tmp_path)
    assert both.returncode == 2 and "give either --master" in both.stderr and not (tmp_path / "both").exists()


@pytest.mark.spark  # Spark itself rejects the master
@pytest.mark.parametrize("master, reason", [("foo://x", "a master must be yarn or start with spark, k8s or local"),
                                            ("local[abc]", "Spark could not parse it")])
def test_a_master_spark_rejects_is_named_never_memory(master, reason, small_inputs, tmp_path):
    out = tmp_path / "out"
    done = _cli("select", "--input", str(small_inputs / "small.parquet"), "--format", "parquet", "--method", "anova",
                "--num-features", "1", "--output", str(out), "--master", master, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert f"sparkfs: error: Spark rejected the master '{master}': {reason}" in done.stderr
    assert "memory" not in done.stderr.split("sparkfs: error:")[1]
    assert not out.exists()


def test_master_and_remote_together_are_refused_before_spark(capsys, tmp_path):
    out = tmp_path / "out"
    code = main(["instance-weights", "--input", "x.libsvm", "--format", "libsvm", "--output", str(out),
                 "--master", "local[2]", "--remote", "sc://localhost:15002"])
    refused(capsys, code, out, "give either --master (local[2]) or --remote (sc://localhost:15002), not both")


def test_remote_refuses_a_uri_output_and_a_malformed_url(capsys, tmp_path):
    code = main(["select", "--input", "x.parquet", "--format", "parquet", "--remote", "sc://localhost:15002",
                 "--output", "file://" + str(tmp_path / "uri")])
    refused(capsys, code, tmp_path / "uri", "a Spark Connect session (sc://localhost:15002) cannot write a URI",
            "give a local or mounted path")
    code = main(["stability", "--input", "x.libsvm", "--format", "libsvm", "--method", "anova", "--num-features", "1",
                 "--output", str(tmp_path / "out"), "--remote", "localhost:15002"])
    refused(capsys, code, tmp_path / "out", "the Spark Connect URL 'localhost:15002' is not of the form sc://HOST:PORT")


def test_config_file_remote_key(capsys, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text('spark: {master: "local[2]", remote: "sc://localhost:15002"}\n')
    base = ["select", "--config", str(job), "--input", "x.parquet", "--format", "parquet"]
    code = main([*base, "--output", str(tmp_path / "out")])
    refused(capsys, code, tmp_path / "out", "give either --master (local[2]) or --remote (sc://localhost:15002)")
    # A --remote flag replaces the file's master (not "both"): the URI output is what is refused.
    job.write_text('spark: {master: "local[2]"}\n')
    code = main([*base, "--remote", "sc://localhost:15002", "--output", "hdfs://nn/out"])
    refused(capsys, code, tmp_path / "out", "cannot write a URI")
    job.write_text("spark: {remote: 15002}\n")
    code = main([*base, "--output", str(tmp_path / "out")])
    refused(capsys, code, tmp_path / "out", "spark.remote in", "must be a non-empty string (a Spark Connect URL")


def test_an_unreachable_remote_is_one_line_exit_1_within_seconds(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_REMOTE", f"sc://localhost:{free_port()}")  # nothing listens there
    out = tmp_path / "out"
    started = time.monotonic()
    code = main(["evaluate", "--input", "x.libsvm", "--format", "libsvm", "--methods", "anova", "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 1 and time.monotonic() - started < 15
    failure = [line for line in err.splitlines() if line.startswith("sparkfs: failed:")]
    assert len(failure) == 1 and "cannot reach the Spark Connect server sc://localhost:" in failure[0]
    assert "check that the server is running" in failure[0] and "memory" not in failure[0]
    assert not out.exists()


def test_an_explicit_master_wins_over_spark_remote(spark, monkeypatch, tmp_path):
    monkeypatch.setenv("SPARK_REMOTE", "sc://localhost:1")  # nothing listens there: it must not be used
    assert spark_target("local[2]", None, str(tmp_path / "out")) == ("local[2]", None)
    assert spark_target(None, None, str(tmp_path / "out")) == (None, "sc://localhost:1")
    # Spark's builder refuses a master while SPARK_REMOTE is set: get_spark hides it for a classic session.
    session = get_spark("local[2]")
    assert type(session).__module__ == "pyspark.sql.session"
    assert session.sparkContext.master == spark.sparkContext.master


def test_start_failures_are_never_diagnosed_as_memory():
    try:
        try:
            raise ConnectionRefusedError("Connection refused")
        except ConnectionRefusedError:
            raise SparkStartError("cannot reach the Spark Connect server sc://h:1")  # noqa: B904 - implicit chaining, as Spark raises
    except SparkStartError as error:
        assert resource_failure(error) is None
    rejected = RuntimeError("Py4JJavaError: org.apache.spark.SparkException: Could not parse Master URL: 'local[x]' "
                            "Java gateway process exited")
    assert resource_failure(rejected) is None


def test_a_connect_token_is_never_shown(capsys, tmp_path, monkeypatch):
    """`sc://host:port/;token=...` was echoed in the refusals that quote the URL."""
    secret = "s3cr3t-Token"
    out = tmp_path / "out"
    runs = [
        (["select", "--input", "x.parquet", "--format", "parquet", "--master", "local[2]", "--remote",
          f"sc://localhost:15002/;token={secret}", "--output", str(out)], 2, "--remote (sc://localhost:15002/;token=***)"),
        (["select", "--input", "x.parquet", "--format", "parquet", "--remote", f"sc://localhost:15002/;token={secret}",
          "--output", "hdfs://nn/out"], 2, "a Spark Connect session (sc://localhost:15002/;token=***) cannot write"),
        (["select", "--input", "x.parquet", "--format", "parquet", "--remote", f"localhost:15002/;token={secret}",
          "--output", str(out)], 2, "the Spark Connect URL 'localhost:15002/;token=***' is not of the form"),
        (["select", "--input", "x.parquet", "--format", "parquet", "--remote",
          f"sc://localhost:{free_port()}/;use_ssl=true;token={secret}", "--output", str(out)], 1,
         ";use_ssl=true;token=***"),
    ]
    for argv, code, shown in runs:
        assert main(argv) == code
        err = capsys.readouterr().err
        assert secret not in err and shown in err, err
        assert not out.exists()
