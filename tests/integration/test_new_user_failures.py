"""What a new user hit first: a default-memory JVM that died, a continuous label taken
as classes, ``nan`` in a CSV, a garbled LIBSVM line. Each: a clear message, the exit code, no
output."""

import numpy as np
import pandas as pd
import pytest

from sparkfs import FisherMarkovSelector, ReliefSelector
from sparkfs.cli import build_parser, main, resolve_config, run_select
from sparkfs.errors import InvalidInputError, SparkResourceError
from sparkfs.io.readers import read_dataset
from sparkfs.spark import memory as memory_module
from sparkfs.spark.failures import resource_failure


@pytest.fixture
def running_jvm_not_waited_for(monkeypatch):
    """The shared session's JVM is alive: a message built here need not wait 10 s for it to exit. No driver
    memory recorded by an earlier test's run in this process (the advice depends on it)."""
    from sparkfs.spark import failures, memory

    monkeypatch.setattr(failures, "JVM_EXIT_WAIT_SECONDS", 0.01)
    monkeypatch.setattr(memory, "applied_settings", {})
    monkeypatch.setattr(memory, "observed_driver_memory", {"spark.driver.memory": None})


def _run(args):
    return main(["select", "--master", "local[2]", *args])


# -- memory: the default for a local master, and failures named as what they are ----------------


def test_local_driver_memory_is_half_the_given_memory_unless_the_user_set_one():
    gib = 1 << 30
    assert memory_module.default_local_driver_memory(24 * gib) == "12g"
    assert memory_module.default_local_driver_memory(gib) == "1g"
    assert memory_module.default_local_driver_memory(None) is None
    settings = memory_module.local_memory_settings
    assert settings("local[*]", {}, {}, 24 * gib) == {"spark.driver.memory": "12g", "spark.driver.maxResultSize": "6g"}
    assert settings("local-cluster[2,1,1024]", {}, {}, 24 * gib)["spark.driver.memory"] == "12g"
    assert settings("local[*]", {}, {}, 2 * gib) == {"spark.driver.memory": "1g", "spark.driver.maxResultSize": "1g"}
    assert settings("local[*]", {"spark.driver.maxResultSize": "2g"}, {}, 24 * gib) == {"spark.driver.memory": "12g"}
    assert settings("local[2]", {"spark.driver.memory": "3g"}, {}, 24 * gib) == {}
    assert settings("local[2]", {}, {"SPARK_DRIVER_MEMORY": "2g"}, 24 * gib) == {}
    assert settings("local[2]", {}, {}, 24 * gib, defaults_file_sets=True) == {}
    assert settings("yarn", {}, {}, 24 * gib) == {}
    assert settings("spark://host:7077", {}, {}, 24 * gib) == {}


def test_local_driver_memory_comes_from_the_memory_available_now(monkeypatch):
    """MemAvailable, not MemTotal: a machine where other Spark sessions hold 20 of 24 GiB gives a
    new session 2g, not 12g (the kernel killed such a session while other jobs ran)."""
    gib = 1 << 30
    meminfo = "MemTotal:       25165824 kB\nMemFree:         1048576 kB\nMemAvailable:    4194304 kB\n"
    monkeypatch.setattr(memory_module, "_cgroup_limit_and_usage", lambda: (None, None))
    assert memory_module.available_memory_bytes(meminfo) == 4 * gib
    assert memory_module.default_local_driver_memory(memory_module.available_memory_bytes(meminfo)) == "2g"
    monkeypatch.setattr(memory_module, "_cgroup_limit_and_usage", lambda: (6 * gib, 5 * gib))
    assert memory_module.available_memory_bytes(meminfo) == gib  # the container's limit leaves less


def test_more_memory_advice_never_suggests_less_than_the_session_had():
    from sparkfs.spark.failures import more_memory_advice

    gib = 1 << 30
    assert "--driver-memory 22g" in more_memory_advice("11g", 64 * gib)
    assert "--driver-memory 8g" in more_memory_advice("2048m", 64 * gib)
    assert "--driver-memory 8g" in more_memory_advice(None, 64 * gib)
    too_big = more_memory_advice("16g", 24 * gib)
    assert "--driver-memory" not in too_big and "24 GiB" in too_big and "cluster" in too_big


def test_a_jvm_killed_by_the_kernel_is_reported_as_that(monkeypatch):
    import sparkfs.spark.failures as failures

    monkeypatch.setattr(failures, "jvm_exit_signal", lambda: 9)
    # a SIGKILL is the kernel's only where its log shows the OOM killer ending the JVM
    monkeypatch.setattr(failures, "kernel_log", lambda: "Out of memory: Killed process 4242 (java)")
    monkeypatch.setattr(failures, "_jvm_pid", lambda: 4242)
    monkeypatch.setitem(memory_module.applied_settings, "spark.driver.memory", "11g")
    failure = resource_failure(ConnectionRefusedError(111, "Connection refused"))
    assert "killed by the operating system" in str(failure) and "spark.driver.memory=11g" in str(failure)
    assert "available now" in str(failure)


def test_results_above_max_result_size_name_that_setting():
    spark_text = ("Job aborted due to stage failure: Total size of serialized results of 16 tasks (1849.2 MiB) is "
                  "bigger than spark.driver.maxResultSize (1024.0 MiB)")
    failure = str(resource_failure(RuntimeError(spark_text)))
    assert "larger than spark.driver.maxResultSize" in failure and "lower sampleSize or driverBudgetMB" in failure


def test_a_session_the_user_built_gets_advice_above_its_own_driver_memory(monkeypatch):
    """A notebook's or a benchmark's own session is not in applied_settings: the fit reads its
    driver memory while the JVM is alive, so a JVM that dies later is not told to take less."""
    import types

    import sparkfs.spark.failures as failures

    monkeypatch.setattr(failures, "jvm_exit_signal", lambda: None)
    monkeypatch.setattr(memory_module, "applied_settings", {})
    monkeypatch.setitem(memory_module.observed_driver_memory, "spark.driver.memory", None)
    memory_module.observe_driver_memory(types.SimpleNamespace(conf=types.SimpleNamespace(
        get=lambda key, default=None: {"spark.driver.memory": "10g"}.get(key, default))))
    failure = str(resource_failure(ConnectionRefusedError(111, "Connection refused")))
    assert "the Spark JVM stopped during the job (this session had spark.driver.memory=10g)" in failure
    assert "--driver-memory 20g" in failure or "too little for more than 10g" in failure
    memory_module.observe_driver_memory(types.SimpleNamespace(conf=None))  # unreadable: no claim
    assert memory_module.driver_memory_setting() is None


def test_jvm_exit_signal_reads_a_killed_child_process(monkeypatch):
    import signal
    import subprocess
    import types

    from pyspark import SparkContext

    from sparkfs.spark.failures import jvm_exit_signal

    child = subprocess.Popen(["sleep", "30"])
    child.send_signal(signal.SIGKILL)
    child.wait()
    monkeypatch.setattr(SparkContext, "_gateway", types.SimpleNamespace(proc=child))
    assert jvm_exit_signal() == 9


def test_jvm_exit_signal_waits_for_a_jvm_that_is_still_being_killed(monkeypatch):
    """The connection breaks before the kernel has reaped a killed JVM (as a run on M showed: an
    immediate poll saw it running and the message blamed an OutOfMemoryError instead)."""
    import subprocess
    import types

    from pyspark import SparkContext

    from sparkfs.spark.failures import jvm_exit_signal

    child = subprocess.Popen(["sh", "-c", "sleep 0.3; kill -9 $$"])
    monkeypatch.setattr(SparkContext, "_gateway", types.SimpleNamespace(proc=child))
    assert jvm_exit_signal() == 9
    still_running = subprocess.Popen(["sleep", "30"])
    monkeypatch.setattr(SparkContext, "_gateway", types.SimpleNamespace(proc=still_running))
    try:
        assert jvm_exit_signal(wait_seconds=0.2) is None
    finally:
        still_running.kill()
        still_running.wait()


def test_spark_defaults_file_entry_is_respected(tmp_path, monkeypatch):
    (tmp_path / "spark-defaults.conf").write_text("# comment\nspark.driver.memory   6g\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert memory_module.defaults_file_sets("spark.driver.memory")
    assert not memory_module.defaults_file_sets("spark.executor.memory")


def test_driver_memory_and_conf_flags_reach_the_config():
    args = build_parser().parse_args(["select", "--input", "x", "--output", "o", "--driver-memory", "8g",
                                      "--conf", "spark.sql.shuffle.partitions=4"])
    conf = resolve_config(args)["spark"]["conf"]
    assert conf == {"spark.driver.memory": "8g", "spark.sql.shuffle.partitions": "4"}


@pytest.mark.parametrize("flag", ["spark.x", "=3", "other.key=1"])
def test_bad_conf_flag_is_a_usage_error(tmp_path, capsys, flag):
    assert main(["select", "--input", "x", "--output", str(tmp_path / "o"), "--conf", flag]) == 2
    assert "--conf" in capsys.readouterr().err


class _JavaError(Exception):
    pass


def test_out_of_memory_and_a_stopped_jvm_are_named_with_the_setting(running_jvm_not_waited_for):
    heap = _JavaError("An error occurred while calling o35.collectToPython.\n: org.apache.spark.SparkException: "
                      "Job aborted ... java.lang.OutOfMemoryError: Java heap space")
    failure = resource_failure(heap)
    assert isinstance(failure, SparkResourceError)
    assert "OutOfMemoryError" in str(failure) and "--driver-memory" in str(failure)
    assert "spark.executor.memory" in str(failure)
    try:
        try:
            raise ConnectionResetError("reset")
        except ConnectionResetError:
            raise ConnectionRefusedError(111, "Connection refused")  # noqa: B904 - implicit chaining, as py4j raises
    except ConnectionRefusedError as gone:
        stopped = resource_failure(gone)
    assert "JVM stopped" in str(stopped) and "--driver-memory" in str(stopped)
    assert resource_failure(RuntimeError("Table or view not found")) is None


def test_cli_reports_a_dead_jvm_as_memory_not_connection_refused(tmp_path, capsys, monkeypatch,
                                                                running_jvm_not_waited_for):
    import sparkfs.cli as cli

    def dies(config, spark=None):
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(cli, "run_select", dies)
    assert main(["select", "--input", "x", "--output", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "JVM stopped" in err and "--driver-memory" in err and "Errno 111" not in err


def test_rows_do_not_scan_the_input_after_the_jvm_ran_out_of_memory(spark, monkeypatch):
    from pyspark.ml.linalg import Vectors

    from sparkfs.spark import stats
    from sparkfs.spark.rows import Rows

    df = spark.createDataFrame([(Vectors.dense([1.0, 2.0]), 0.0), (Vectors.dense([2.0, 1.0]), 1.0)],
                               ["features", "label"])

    def must_not_scan(*args, **kwargs):
        raise AssertionError("diagnose_input ran after an out-of-memory failure")

    monkeypatch.setattr(stats, "diagnose_input", must_not_scan)

    def out_of_memory():
        raise _JavaError("java.lang.OutOfMemoryError: Java heap space")

    with Rows(df, "features", num_features=2, label_col="label", num_classes=2) as rows:
        with pytest.raises(SparkResourceError, match="spark.driver.memory"):
            rows.diagnosed(out_of_memory)


# -- a continuous label is not hundreds of classes ----------------------------------------------


def _regression_frame(rows=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, 4))
    return pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "d": X[:, 3],
                         "target": np.round(X[:, 0] * 3.7 + rng.normal(size=rows), 3)})


def test_continuous_label_is_refused_with_advice_and_allowed_on_request(spark, tmp_path, capsys):
    _regression_frame().to_parquet(tmp_path / "reg.parquet")
    out = tmp_path / "out"
    base = ["--input", str(tmp_path / "reg.parquet"), "--format", "parquet", "--label-col", "target",
            "--output", str(out)]
    for method in ("lfs", "relieff", "anova", "lmba"):
        assert _run([*base, "--method", method]) == 2
        err = capsys.readouterr().err
        assert "label column 'target' looks continuous" in err and "allowManyClasses" in err, (method, err)
        assert not out.exists()
    assert _run([*base, "--method", "lfs", "--param", "allowManyClasses=true"]) == 0
    assert out.exists()


def test_identifier_like_integer_label_is_refused(spark):
    frame = _regression_frame(rows=60)
    frame["target"] = np.arange(60) % 40
    df = spark.createDataFrame(frame)
    from pyspark.ml.feature import VectorAssembler

    assembled = VectorAssembler(inputCols=["a", "b", "c", "d"], outputCol="features").transform(df)
    with pytest.raises(InvalidInputError, match="40 distinct values in 60 rows"):
        ReliefSelector(labelCol="target", numFeatures=2).fit(assembled)
    with pytest.raises(InvalidInputError, match="40 distinct values in 60 rows"):
        FisherMarkovSelector(labelCol="target", numFeatures=2).fit(assembled)
    model = FisherMarkovSelector(labelCol="target", numFeatures=2, allowManyClasses=True).fit(assembled)
    assert model.summary["n_classes"] == 40


def test_float_class_labels_stay_classes(spark):
    """0.0 / 1.0 / 2.0 are classes, and so are a few fractional codes."""
    frame = _regression_frame(rows=40)
    frame["target"] = np.tile([0.5, 1.5, 2.5, 3.5], 10)
    from pyspark.ml.feature import VectorAssembler

    assembled = VectorAssembler(inputCols=["a", "b", "c", "d"], outputCol="features").transform(
        spark.createDataFrame(frame))
    assert FisherMarkovSelector(labelCol="target", numFeatures=2).fit(assembled).summary["n_classes"] == 4


# -- CSV: NaN spelled as NumPy writes it; other non-numbers named with their line ----------------


def test_csv_nan_written_by_numpy_is_read_as_nan_and_refused_by_the_nan_rule(spark, tmp_path, capsys):
    data = np.array([[1.0, 2.0, 0], [np.nan, 1.0, 1], [3.0, np.inf, 0], [4.0, 5.0, 1]])
    path = tmp_path / "nan.csv"
    np.savetxt(path, data, delimiter=",", header="a,b,label", comments="", fmt="%s")
    assert "nan" in path.read_text() and "inf" in path.read_text()
    out = tmp_path / "out"
    assert _run(["--input", str(path), "--format", "csv", "--method", "lfs", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "2 row(s) have NaN or infinite feature values" in err, err
    assert not out.exists()


def test_csv_non_number_is_named_with_its_column_value_and_line(spark, tmp_path, capsys):
    path = tmp_path / "text.csv"
    path.write_text("a,b,label\n1.0,2.0,0\n2.0,abc,1\n3.0,4.0,0\n")
    out = tmp_path / "out"
    assert _run(["--input", str(path), "--format", "csv", "--method", "lfs", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "column 'b' has 1 value(s) that are not numbers, e.g. 'abc' (line 3 of" in err, err
    assert not out.exists()


# -- LIBSVM: a garbled line is named -----------------------------------------------------------


@pytest.mark.parametrize("line, problem", [
    ("0 1:0.1 2:zz", "'2:zz': the value 'zz' is not a number"),
    ("0 1:0.1 x", "'x' is not index:value"),
    ("zero 1:0.1", "the label 'zero' is not a number"),
    ("1 2:0.1 1:0.5", "indices must be 1-based and increasing"),
])
def test_garbled_libsvm_line_is_refused_with_its_number(spark, tmp_path, capsys, line, problem):
    path = tmp_path / "bad.libsvm"
    path.write_text(f"1 1:0.5 2:1.0\n# a comment\n{line}\n1 1:0.3 3:2\n")
    out = tmp_path / "out"
    assert _run(["--input", str(path), "--format", "libsvm", "--method", "lfs", "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert "line 3 of" in err and problem in err, err
    assert not out.exists()


def test_garbled_libsvm_line_found_before_any_vector_with_a_vector_size(spark, tmp_path):
    """With a vector size given the check pass still parses every line first (Spark's reader
    parsed lazily then, and failed in the fit with no line number)."""
    path = tmp_path / "bad.libsvm"
    path.write_text("1 1:0.5 2:1.0\n0 1:0.1 2:zz\n1 1:0.3 3:2\n")
    with pytest.raises(InvalidInputError, match="line 2 of .*'2:zz': the value 'zz' is not a number"):
        read_dataset(spark, str(path), "libsvm", num_features=3)
    args = build_parser().parse_args(["select", "--input", str(path), "--format", "libsvm", "--method", "lfs",
                                      "--output", str(tmp_path / "out"), "--vector-size", "3"])
    config = resolve_config(args)
    assert config["input"]["num_features"] == 3
    with pytest.raises(InvalidInputError, match="line 2 of"):
        run_select(config, spark=spark)
    assert not (tmp_path / "out").exists()


class _DeadJvmError(Exception):
    """Like a Py4JJavaError once the JVM is gone: reading its text fails."""

    def __str__(self):
        raise ConnectionRefusedError(111, "Connection refused")


def test_an_error_whose_text_needs_the_dead_jvm_is_still_reported(tmp_path, capsys, monkeypatch,
                                                                 running_jvm_not_waited_for):
    import sparkfs.cli as cli

    def dies(config, spark=None):
        raise _DeadJvmError()

    monkeypatch.setattr(cli, "run_select", dies)
    assert main(["select", "--input", "x", "--output", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "sparkfs: failed: the Spark JVM stopped" in err and "--driver-memory" in err
