"""Which Python a new session's executors run, and the message when they cannot run sparkfs.

No JVM: the decision is a pure function of the master, the conf and the environment, and the
failures are recognised in canned copies of what Spark reports on the driver.
"""

import os
import sys

import pytest

from sparkfs.errors import SparkStartError
from sparkfs.spark.failures import (
    SHIP_ENVIRONMENT,
    ExecutorEnvironmentError,
    executor_environment_failure,
    resource_failure,
)
from sparkfs.spark.session import _with_environ, python_workers_environ

ME = "/home/user/project/.venv/bin/python"
PACKED = "./environment/bin/python"


@pytest.mark.parametrize("master", ["local", "local[2]", "local[*]", "local-cluster[2,1,1024]"])
def test_a_local_master_runs_the_drivers_interpreter(master):
    assert python_workers_environ(master, {}, {}, ME, under_submit=False) == {
        "PYSPARK_PYTHON": ME, "PYSPARK_DRIVER_PYTHON": ME}
    assert python_workers_environ(master, {}, {"PYSPARK_DRIVER_PYTHON": "ipython"}, ME, False) == {
        "PYSPARK_PYTHON": ME}


@pytest.mark.parametrize("master", ["spark://host:7077", "yarn", "k8s://https://api:6443", "mesos://host:5050"])
def test_a_cluster_master_keeps_sparks_default(master):
    """A path on the driver's machine means nothing on the executors' nodes: nothing is set."""
    assert python_workers_environ(master, {}, {}, ME, under_submit=False) == {}


@pytest.mark.parametrize("master", ["local[2]", "spark://host:7077", "yarn"])
def test_the_users_settings_stand(master):
    """PYSPARK_PYTHON stands; spark.pyspark.python (--conf, the job config) becomes PYSPARK_PYTHON,
    which is the only thing PySpark's driver reads, and wins over the variable as under spark-submit."""
    assert python_workers_environ(master, {}, {"PYSPARK_PYTHON": "/opt/py/bin/python"}, ME, False) == {}
    conf = {"spark.archives": "dist/sparkfs-env.tar.gz#environment", "spark.pyspark.python": PACKED}
    assert python_workers_environ(master, conf, {}, ME, False) == {"PYSPARK_PYTHON": PACKED}
    assert python_workers_environ(master, conf, {"PYSPARK_PYTHON": "/opt/py/bin/python"}, ME, False) == {
        "PYSPARK_PYTHON": PACKED}


@pytest.mark.parametrize("master", [None, "local[2]", "spark://host:7077"])
def test_under_spark_submit_nothing_is_touched(master):
    """spark-submit has put spark.pyspark.python (or the user's variable) in place already."""
    assert python_workers_environ(master, {"spark.pyspark.python": PACKED}, {}, ME, under_submit=True) == {}
    assert python_workers_environ(master, {}, {}, ME, under_submit=True) == {}


def test_the_setting_lasts_only_while_the_session_starts(monkeypatch):
    monkeypatch.setenv("PYSPARK_PYTHON", "/before")
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    with _with_environ({"PYSPARK_PYTHON": PACKED, "PYSPARK_DRIVER_PYTHON": ME}):
        assert os.environ["PYSPARK_PYTHON"] == PACKED and os.environ["PYSPARK_DRIVER_PYTHON"] == ME
    assert os.environ["PYSPARK_PYTHON"] == "/before" and "PYSPARK_DRIVER_PYTHON" not in os.environ


def test_get_spark_passes_conf_and_master_to_the_decision(monkeypatch):
    """The CLI's path: get_spark with --master spark://... and the --conf pair sets PYSPARK_PYTHON
    to the conf's value while the session starts, and restores it afterwards."""
    import sparkfs.spark.session as session

    seen = {}

    class Builder:
        def appName(self, name):
            return self

        def master(self, master):
            seen["master"] = master
            return self

        def config(self, key, value):
            seen.setdefault("conf", {})[key] = value
            return self

        def getOrCreate(self):
            seen["PYSPARK_PYTHON"] = os.environ.get("PYSPARK_PYTHON")
            return "session"

    class FakeSparkSession:
        builder = Builder()

        @staticmethod
        def getActiveSession():
            return None

    import pyspark.sql

    monkeypatch.setattr(pyspark.sql, "SparkSession", FakeSparkSession)
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    conf = {"spark.archives": "dist/sparkfs-env.tar.gz#environment", "spark.pyspark.python": PACKED}
    assert session.get_spark("spark://127.0.0.1:7077", conf=conf) == "session"
    assert seen["PYSPARK_PYTHON"] == PACKED and seen["conf"]["spark.archives"] == conf["spark.archives"]
    assert os.environ["PYSPARK_PYTHON"] == sys.executable


# What the driver receives: a Py4J error (RDD jobs) or PySpark's captured exceptions (DataFrame jobs).
Py4JJavaError = type("Py4JJavaError", (Exception,), {"__module__": "py4j.protocol"})
PythonException = type("PythonException", (Exception,), {"__module__": "pyspark.errors.exceptions.captured"})

CANNOT_RUN = ("An error occurred while calling o135.collectToPython.\n: org.apache.spark.SparkException: Job aborted "
              "due to stage failure: Task 0 in stage 1.0 failed 4 times, most recent failure: Lost task 0.3 in stage "
              "1.0 (TID 7) (127.0.0.1 executor 1): java.io.IOException: Cannot run program "
              f"\"{ME}\": error=2, No such file or directory\n\tat java.base/java.lang.ProcessBuilder.start")
NO_MODULE = ("An exception was thrown from the Python worker. Please see the stack trace below.\nTraceback (most "
             "recent call last):\n  File \"/tmp/spark-1/pyspark.zip/pyspark/serializers.py\", line 193, in "
             "_read_with_length\nModuleNotFoundError: No module named 'sparkfs'")
MISSING_FILE = ("An error occurred while calling o60.collectToPython.\n: org.apache.spark.SparkException: Job "
                "aborted due to stage failure: Task 0 in stage 0.0 failed 4 times ... java.io.FileNotFoundException: "
                "File file:/work/main/data/terms.libsvm does not exist\nIt is possible the underlying files have "
                "been updated.")


def test_executors_that_cannot_start_python():
    found = executor_environment_failure(Py4JJavaError(CANNOT_RUN), master="spark://h:7077", python=ME)
    assert isinstance(found, ExecutorEnvironmentError) and isinstance(found, SparkStartError)
    assert ME in str(found) and "No such file or directory" in str(found) and SHIP_ENVIRONMENT in str(found)
    assert "make pack" in str(found) and "spark.pyspark.python=./environment/bin/python" in str(found)


@pytest.mark.parametrize("module", ["sparkfs", "numba", "pyarrow", "numpy"])
def test_executors_that_cannot_import_a_module(module):
    error = PythonException(NO_MODULE.replace("'sparkfs'", f"'{module}'"))
    found = executor_environment_failure(error, master="yarn", python="python3")
    assert found is not None and f"cannot import {module}" in str(found) and "python3" in str(found)
    assert SHIP_ENVIRONMENT in str(found)


def test_the_cause_is_found_in_the_chain_and_by_resource_failure():
    """The CLI's handler (resource_failure) finds it under whatever wrapped the Spark error."""
    try:
        try:
            raise Py4JJavaError(CANNOT_RUN)
        except Exception as spark_error:
            raise RuntimeError("a pass failed") from spark_error
    except RuntimeError as wrapped:
        assert isinstance(resource_failure(wrapped), ExecutorEnvironmentError)


def test_a_driver_side_import_error_is_not_the_executors():
    assert executor_environment_failure(ModuleNotFoundError("No module named 'skrebate'"), master="yarn") is None
    assert executor_environment_failure(Py4JJavaError("java.lang.OutOfMemoryError: Java heap space"),
                                        master="yarn") is None


def test_a_worker_of_another_python_version():
    text = ("[PYTHON_VERSION_MISMATCH] Python in worker has different version: 3.10 than that in driver: 3.11, "
            "PySpark cannot run with different minor versions.")
    legacy = "Exception: Python in worker has different version 3.10 than that in driver 3.11, PySpark cannot run"
    found = executor_environment_failure(Py4JJavaError(legacy), master="yarn", python=PACKED)
    assert found is not None and "3.10" in str(found) and "3.11" in str(found)
    assert executor_environment_failure(Py4JJavaError(text), master="yarn", python=PACKED) is not None


def test_an_input_the_executors_do_not_have_on_a_cluster_only():
    found = executor_environment_failure(Py4JJavaError(MISSING_FILE), master="spark://127.0.0.1:7077")
    assert found is not None and "file:/work/main/data/terms.libsvm" in str(found)
    assert "HDFS" in str(found) and "spark://127.0.0.1:7077" in str(found)
    assert executor_environment_failure(Py4JJavaError(MISSING_FILE), master="local[2]") is None
