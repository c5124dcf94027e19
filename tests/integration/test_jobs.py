"""Jobs a scheduler can run, through the real command line: a run id in the
output path and the summary, start and end times, input fingerprints, ``--if-exists
fail|overwrite|skip`` (skip does no Spark work), JSON-lines logs, the nightly example in conf/, and
Spark's own WARN lines kept off the terminal of a session the CLI starts."""

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

from sparkfs.cli import main
from sparkfs.job_options import input_fingerprint
from tests.helpers import refused

REPO = Path(__file__).resolve().parents[2]
ISO_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture
def small(tmp_path):
    lines = [f"{i % 2} 1:{(i % 2) * 2 + (i % 3) * 0.1:.2f} 2:{(i * 7) % 5 * 0.3:.2f} 3:{1.0 - i % 2:.2f}"
             for i in range(12)]
    path = tmp_path / "small.libsvm"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def no_spark(monkeypatch):
    """Fail the test if the command asks for a SparkSession."""
    def refuse(*args, **kwargs):
        pytest.fail("a SparkSession was asked for")

    monkeypatch.setattr("sparkfs.spark.session.get_spark", refuse)


def _select(source, output, *extra):
    return ["select", "--input", source, "--format", "libsvm", "--method", "anova", "--num-features", "2",
            "--output", str(output), *extra]


def _iso_of_mtime(path) -> str:
    return datetime.fromtimestamp(os.stat(path).st_mtime, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_run_id_times_fingerprint_json_logs_and_if_exists(spark, small, tmp_path, capsys, monkeypatch):
    config = tmp_path / "job.yaml"
    config.write_text("method: anova\n")
    argv = _select(small, tmp_path / "runs" / "{run_id}", "--run-id", "nightly-7", "--config", str(config))
    assert main([*argv, "--log-format", "json"]) == 0
    out = tmp_path / "runs" / "nightly-7"
    written = (out / "summary.json").read_bytes()
    summary = json.loads(written)
    assert summary["run_id"] == "nightly-7"
    assert ISO_UTC.match(summary["started_at"]) and ISO_UTC.match(summary["ended_at"])
    assert summary["started_at"] <= summary["ended_at"]
    data, conf = summary["input_files"]
    assert data == {"path": small, "size_bytes": os.path.getsize(small), "modified_at": _iso_of_mtime(small)}
    assert conf["path"] == str(config) and conf["size_bytes"] == len("method: anova\n")
    records = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert records and all(ISO_UTC.match(record["time"]) and record["run_id"] == "nightly-7" for record in records)
    stages = {record["stage"]: record for record in records if record["event"] == "stage"}
    assert {"read", "fit", "write"} <= set(stages) and stages["fit"]["status"] == "done"
    assert stages["fit"]["level"] == "INFO" and stages["fit"]["seconds"] >= 0

    # The same run again: skip does no Spark work; fail refuses; neither touches the output.
    monkeypatch.setattr("sparkfs.spark.session.get_spark", lambda *a, **k: pytest.fail("skip asked for Spark"))
    assert main([*argv, "--if-exists", "skip"]) == 0
    assert capsys.readouterr().err.strip().splitlines() == [
        f"sparkfs: skipped: {out} already holds a complete output of sparkfs select"]
    assert main([*argv, "--if-exists", "skip", "--log-format", "json"]) == 0
    record = json.loads(capsys.readouterr().err)
    assert record["event"] == "skipped" and record["output"] == str(out) and record["level"] == "INFO"
    assert main([*argv, "--if-exists", "fail"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main([*argv, "--if-exists", "fail", "--log-format", "json"]) == 2
    record = json.loads(capsys.readouterr().err)
    assert record["event"] == "error" and record["exit_code"] == 2 and "already exists" in record["message"]
    assert (out / "summary.json").read_bytes() == written and sorted(os.listdir(out)) == ["features.parquet",
                                                                                          "model", "summary.json"]


def test_default_run_id_is_the_utc_start_time(small, tmp_path):
    from sparkfs.cli import build_parser, resolve_config

    before = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    config = resolve_config(build_parser().parse_args(_select(small, tmp_path / "runs" / "{run_id}")))
    after = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    assert re.fullmatch(r"\d{8}T\d{6}Z", config["run_id"]) and before <= config["run_id"] <= after
    assert config["output"]["path"] == str(tmp_path / "runs" / config["run_id"])
    assert config["output"]["if_exists"] == "fail" and config["output"]["overwrite"] is False


@pytest.mark.parametrize("flags, if_exists", [([], "fail"), (["--overwrite"], "overwrite"),
                                              (["--if-exists", "overwrite"], "overwrite"),
                                              (["--overwrite", "--if-exists", "overwrite"], "overwrite"),
                                              (["--if-exists", "skip"], "skip")])
def test_overwrite_is_if_exists_overwrite(small, tmp_path, flags, if_exists):
    from sparkfs.cli import build_parser, resolve_config

    config = resolve_config(build_parser().parse_args(_select(small, tmp_path / "out", *flags)))
    assert config["output"]["if_exists"] == if_exists and config["output"]["overwrite"] == (if_exists == "overwrite")


@pytest.mark.parametrize("extra, fragments", [
    (["--overwrite", "--if-exists", "fail"], ["--overwrite contradicts --if-exists fail"]),
    (["--overwrite", "--if-exists", "skip"], ["--overwrite contradicts --if-exists skip"]),
    (["--run-id", "../up"], ["--run-id must be 1 to 100 letters", "'../up'"]),
    (["--output", "OUT/{date}"], ["unknown placeholder {date}", "{run_id}"]),
], ids=["overwrite-vs-fail", "overwrite-vs-skip", "run-id-path", "placeholder"])
def test_job_option_refusals(small, tmp_path, capsys, no_spark, extra, fragments):
    out = tmp_path / "out"
    argv = _select(small, out, *extra)
    if "--output" in extra:
        argv = [word.replace("OUT", str(out)) for word in argv[:-2]]
        argv += ["--output", extra[-1].replace("OUT", str(out))]
    refused(capsys, main(argv), out, *fragments)


@pytest.mark.parametrize("text, fragments", [
    ("output: {overwrite: true, if_exists: skip}\n", ["output.overwrite: true contradicts output.if_exists: skip"]),
    ("output: {if_exists: always}\n", ["output.if_exists in", "must be one of 'fail', 'overwrite', 'skip'"]),
    ("run_id: a b\n", ["run_id in", "must be 1 to 100 letters", "'a b'"]),
])
def test_config_job_keys_refused(small, tmp_path, capsys, no_spark, text, fragments):
    config = tmp_path / "job.yaml"
    config.write_text(text)
    refused(capsys, main(_select(small, tmp_path / "out", "--config", str(config))), tmp_path / "out", *fragments)


def test_skip_refuses_what_it_cannot_vouch_for(small, tmp_path, capsys, no_spark):
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine\n")
    assert main(_select(small, foreign, "--if-exists", "skip")) == 2
    assert "is not an output of sparkfs select" in capsys.readouterr().err
    assert os.listdir(foreign) == ["notes.txt"]
    partial = tmp_path / "partial"
    partial.mkdir()
    (partial / "summary.json").write_text(json.dumps({"sparkfs_output": {"kind": "select", "format": 1}}))
    assert main(_select(small, partial, "--if-exists", "skip")) == 2
    assert "incomplete output of sparkfs select (no features.parquet)" in capsys.readouterr().err
    assert os.listdir(partial) == ["summary.json"]


@pytest.mark.parametrize("command", ["evaluate", "stability"])
def test_studies_if_exists_fail(small, tmp_path, capsys, no_spark, command):
    study = tmp_path / "study"
    study.mkdir()
    (study / "notes.txt").write_text("x\n")
    extra = (["--methods", "anova", "--classifiers", "nb", "--num-features", "1", "--cv", "2"]
             if command == "evaluate" else ["--method", "anova", "--num-features", "1", "--runs", "2"])
    argv = [command, "--input", small, "--format", "libsvm", *extra, "--output", str(study), "--if-exists", "fail"]
    assert main(argv) == 2
    assert "already exists and --if-exists fail was given" in capsys.readouterr().err
    assert os.listdir(study) == ["notes.txt"]


def test_instance_weights_stages_versions_and_skip(spark, small, tmp_path, capsys, monkeypatch):
    argv = ["instance-weights", "--input", small, "--format", "libsvm", "--output", str(tmp_path / "w" / "{run_id}"),
            "--run-id", "w1"]
    assert main(argv) == 0
    summary = json.loads((tmp_path / "w" / "w1" / "summary.json").read_text())
    assert summary["run_id"] == "w1" and summary["input_files"][0]["size_bytes"] == os.path.getsize(small)
    assert summary["spark_version"] == spark.version and summary["sparkfs_version"]
    err = capsys.readouterr().err
    assert all(f"stage={stage} status=done" in err for stage in ("read", "instance-weights", "write"))
    monkeypatch.setattr("sparkfs.spark.session.get_spark", lambda *a, **k: pytest.fail("skip asked for Spark"))
    assert main([*argv, "--if-exists", "skip"]) == 0
    assert "skipped" in capsys.readouterr().err


def test_directory_and_uri_fingerprints(tmp_path):
    folder = tmp_path / "parts"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.parquet").write_bytes(b"12345")
    (folder / "sub" / "b.parquet").write_bytes(b"123")
    os.utime(folder / "sub" / "b.parquet", (2_000_000_000, 2_000_000_000))
    assert input_fingerprint(str(folder)) == {"path": str(folder), "size_bytes": 8, "files": 2,
                                              "modified_at": "2033-05-18T03:33:20Z"}
    assert input_fingerprint("hdfs://nowhere/x") == {"path": "hdfs://nowhere/x", "size_bytes": None,
                                                     "modified_at": None}


def test_nightly_example_runs_then_skips(spark, tmp_path, capsys, monkeypatch):
    """conf/nightly.sh's command line, in-process: the first start writes output/nightly/<day>/,
    a second start on the same day does no Spark work and exits 0."""
    from sparkfs.io.datasets import write_digits_libsvm

    script = (REPO / "conf" / "nightly.sh").read_text()
    command = next(line for line in script.splitlines() if line.startswith("exec sparkfs "))
    (tmp_path / "conf").mkdir()
    shutil.copy(REPO / "conf" / "nightly.yaml", tmp_path / "conf" / "nightly.yaml")
    (tmp_path / "data").mkdir()
    write_digits_libsvm(str(tmp_path / "data" / "digits.libsvm"))
    monkeypatch.chdir(tmp_path)
    # the session of the tests runs in another folder: the input is given absolute (the script passes flags on)
    argv = command.replace('"$RUN_ID"', "20261124").replace('"$@"', "").split()[2:]
    argv += ["--input", str(tmp_path / "data" / "digits.libsvm")]
    assert main(argv) == 0
    summary = json.loads((tmp_path / "output" / "nightly" / "20261124" / "summary.json").read_text())
    assert summary["run_id"] == "20261124" and len(summary["selected_indices"]) == 20
    capsys.readouterr()
    monkeypatch.setattr("sparkfs.spark.session.get_spark", lambda *a, **k: pytest.fail("skip asked for Spark"))
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().err)["event"] == "skipped"


@pytest.mark.spark  # starts a session of its own in a child
def test_a_new_session_keeps_spark_warnings_off(small, tmp_path):
    """A session the CLI starts (a process of its own) logs none of Spark's INFO/WARN lines; every
    sparkfs line is a JSON object."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE"):  # a classic session
        env.pop(name, None)
    finished = subprocess.run([sys.executable, "-m", "sparkfs.cli", *_select(small, tmp_path / "out"), "--master",
                               "local[1]", "--log-format", "json"], capture_output=True, text=True, env=env,
                              timeout=300)
    assert finished.returncode == 0, finished.stderr[-3000:]
    lines = finished.stderr.splitlines()
    assert not [line for line in lines if re.search(r"\b(WARN|INFO)\b", line) and not line.startswith("{")], lines
    assert not [line for line in lines if "log level" in line], lines
    events = [json.loads(line)["event"] for line in lines if line.startswith("{")]
    assert events.count("stage") >= 4 and "stage=" not in finished.stdout


def test_skip_needs_a_local_output(small, tmp_path, capsys, no_spark):
    argv = _select(small, "hdfs://namenode/out", "--if-exists", "skip")
    refused(capsys, main(argv), tmp_path / "out", "--if-exists skip needs a local --output", "hdfs://namenode/out")
