"""Spark failures that are not about the input: out of memory, a JVM that stopped, executors
without sparkfs's Python environment.

They reach the user as what they are, with the setting to change, instead of the last symptom
(a ``ConnectionRefusedError`` once the JVM is gone, or a long Java stack trace). Any other failed
job of a pass is re-diagnosed to name the bad input (:func:`with_input_diagnosis`).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator, Optional

from sparkfs.errors import SparkMasterError, SparkResourceError, SparkStartError

_OUT_OF_MEMORY = ("OutOfMemoryError", "Java heap space", "GC overhead limit exceeded",
                  "exceeding memory limits", "Container killed on request. Exit code is 137")
#: Failures to start a session that memory has nothing to do with: a master Spark rejects, a Spark
#: Connect server that cannot be reached or a malformed Connect URL.
_NOT_MEMORY = ("Could not parse Master URL", "Master must either be yarn", "CANNOT_CONFIGURE_SPARK_CONNECT",
               "INVALID_CONNECT_URL", "StatusCode.UNAVAILABLE", "failed to connect to all addresses")
_JVM_GONE = ("ConnectionRefusedError", "Py4JNetworkError", "Answer from Java side is empty",
             "Error while receiving", "Java gateway process exited", "SparkContext was shut down",
             "Cannot call methods on a stopped SparkContext", "Connection reset by peer")


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def describe(error: BaseException) -> str:
    """``Type: message`` of an error, safely: a Py4J error fetches its text from the JVM, which
    fails (ConnectionRefusedError) once the JVM is gone."""
    try:
        return f"{type(error).__name__}: {error}"
    except Exception as unreadable:  # noqa: BLE001 - any failure to read the text is itself the clue
        return f"{type(error).__name__}: (its text cannot be read from the JVM: {type(unreadable).__name__})"


def _memory_now() -> str:
    from sparkfs.spark.session import driver_memory_setting

    memory = driver_memory_setting()
    return f" (this session had spark.driver.memory={memory})" if memory else ""


def more_memory_advice(current: Optional[str], machine_bytes: Optional[int]) -> str:
    """The driver memory to try next: twice what the session had (8g when unknown), never less;
    when that exceeds the machine, say so instead of suggesting it."""
    from sparkfs.spark.session import memory_setting_bytes

    had = memory_setting_bytes(current)
    suggested = max(8 << 30, 2 * had) if had else 8 << 30
    if machine_bytes and suggested > machine_bytes:
        return (f"this machine has {machine_bytes / (1 << 30):.0f} GiB, too little for more than "
                f"{current or 'the current setting'}: run on a cluster (spark.executor.memory), or lower "
                "sampleSize or blockSize")
    return (f"--driver-memory {suggested >> 30}g (or spark.driver.memory in the job config's spark.conf) with a "
            "local master, spark.executor.memory on a cluster; a smaller blockSize or sampleSize also lowers the "
            "memory per task")


#: Seconds to wait for a JVM whose connection broke to be reaped: the socket closes while the
#: kernel is still freeing a killed process's memory (seconds for a JVM of several GiB), so an
#: immediate ``poll()`` can still see it running.
JVM_EXIT_WAIT_SECONDS = 10.0


def jvm_exit_signal(wait_seconds: float = JVM_EXIT_WAIT_SECONDS) -> Optional[int]:
    """The signal that ended the JVM this Python process started (9 for the kernel's
    out-of-memory killer), or None: still running after ``wait_seconds``, exited normally, or not
    our child (under spark-submit, or on Spark Connect). Called only once the connection to the
    JVM has broken, so the wait is spent only on the way to an error message."""
    import subprocess

    try:
        from pyspark import SparkContext

        process = getattr(SparkContext._gateway, "proc", None) if SparkContext._gateway is not None else None
        if process is None:
            return None
        try:
            code = process.wait(timeout=wait_seconds)
        except subprocess.TimeoutExpired:
            return None
    except Exception:  # noqa: BLE001 - best effort diagnosis
        return None
    return -code if code is not None and code < 0 else None


#: How to give the executors a Python with sparkfs (README, "On a cluster"; docs/cluster.md).
SHIP_ENVIRONMENT = ("build the executors' environment with `make pack` and ship it with the job: --conf "
                    "spark.archives=dist/sparkfs-env.tar.gz#environment --conf "
                    "spark.pyspark.python=./environment/bin/python (docs/cluster.md)")
_CANNOT_RUN = re.compile(r'Cannot run program "([^"]*)"[^\n]*?error=\d+, ([^\n]*)')
_NO_MODULE = re.compile(r"No module named '([\w.]+)'")
_VERSION_MISMATCH = re.compile(r"Python in worker has different version:? ([\d.]+) than that in driver:? ([\d.]+)")
_MISSING_FILE = re.compile(r"File (file:\S+) does not exist")


class ExecutorEnvironmentError(SparkStartError):
    """The executors cannot run the configured Python, cannot import sparkfs (or a dependency), or
    cannot see an input that exists on the driver; the message names what and how to fix it."""


def _executors_python(python: Optional[str]) -> str:
    """The Python the executors were told to run: the running session's (``pythonExec``, from
    ``PYSPARK_PYTHON``), else ``python3``, Spark's default."""
    if python is None:
        try:
            from pyspark import SparkContext

            python = getattr(SparkContext._active_spark_context, "pythonExec", None)
        except Exception:  # noqa: BLE001 - best effort: the name only completes the message
            python = None
    return f"{python or 'python3'} (spark.pyspark.python / PYSPARK_PYTHON)"


def _from_executors(links) -> str:
    """The text of the errors of ``links`` that came from Spark (a Py4J or a worker's Python
    exception), not a driver-side ImportError of this process."""
    return " ".join(describe(link) for link in links
                    if not isinstance(link, ImportError) and type(link).__module__.startswith(("py4j", "pyspark")))


def executor_environment_failure(error: BaseException, master: Optional[str] = None,
                                 python: Optional[str] = None) -> Optional[ExecutorEnvironmentError]:
    """An :class:`ExecutorEnvironmentError` when ``error`` says the executors lack what sparkfs needs,
    else None. Recognised in the driver's copy of the executors' failure:

    - ``Cannot run program ".../python": error=2`` (the executors' Python does not exist there:
      a path on the driver's machine, or ``./environment/bin/python`` without ``spark.archives``);
    - ``No module named 'sparkfs'`` (or numpy, numba, pyarrow...) from a Python worker;
    - a worker's Python of another minor version than the driver's;
    - ``File file:/... does not exist`` with a ``master`` that is not local: a path of the driver's
      file system that the executors do not have.

    ``master`` and ``python`` default to the running session's (its master, ``pythonExec``).
    """
    text = _from_executors(list(_chain(error)))
    if not text:
        return None
    cannot_run = _CANNOT_RUN.search(text)
    if cannot_run:
        return ExecutorEnvironmentError(
            f"the executors cannot start their Python, {_executors_python(python or cannot_run.group(1))}: "
            f"{cannot_run.group(2).strip()}. A path on the driver's machine does not exist on the executors' "
            f"nodes; {SHIP_ENVIRONMENT}")
    no_module = _NO_MODULE.search(text)
    if no_module:
        return ExecutorEnvironmentError(
            f"the executors' Python, {_executors_python(python)}, cannot import {no_module.group(1)} "
            f"(ModuleNotFoundError: No module named '{no_module.group(1)}'): {SHIP_ENVIRONMENT}")
    mismatch = _VERSION_MISMATCH.search(text)
    if mismatch:
        return ExecutorEnvironmentError(
            f"the executors' Python, {_executors_python(python)}, is Python {mismatch.group(1)} and the driver's "
            f"{mismatch.group(2)}: the two must be the same minor version; build the pack with the driver's "
            f"Python, or run the driver with the executors' one; {SHIP_ENVIRONMENT}")
    missing = _MISSING_FILE.search(text)
    if missing and not _is_local(master):
        return ExecutorEnvironmentError(
            f"the executors cannot read {missing.group(1)}: it exists on the driver (it was checked there) but not "
            f"on the executors' nodes (master {master}). On a cluster the input must be on storage every node "
            "reads by the same path: HDFS (hdfs://...), S3 (s3a://...), a Databricks volume, or a shared file "
            "system mounted at the same path on every node (docs/cluster.md)")
    return None


def _is_local(master: Optional[str]) -> bool:
    """Whether ``master`` (default: the running session's) runs the executors on this machine;
    True when unknown, so that nothing is claimed about other nodes."""
    if master is None:
        try:
            from pyspark import SparkContext

            master = getattr(SparkContext._active_spark_context, "master", None)
        except Exception:  # noqa: BLE001 - no session: nothing known
            master = None
    return master is None or master.startswith("local")


def resource_failure(error: BaseException):
    """A :class:`SparkResourceError` naming the setting to change, an
    :class:`ExecutorEnvironmentError` (:func:`executor_environment_failure`), or None for other
    failures."""
    from sparkfs.spark.session import available_memory_bytes, driver_memory_setting, total_memory_bytes

    links = list(_chain(error))
    text = " ".join(describe(link) for link in links)
    if any(isinstance(link, (SparkMasterError, SparkStartError)) for link in links):
        return None
    environment = executor_environment_failure(error)
    if environment is not None:
        return environment
    if any(pattern in text for pattern in _NOT_MEMORY):
        return None
    if "spark.driver.maxResultSize" in text:
        return SparkResourceError(
            "a job's results were larger than spark.driver.maxResultSize, Spark's cap on what a job sends to the "
            "driver: raise it (spark.driver.maxResultSize=4g, say, in the job config's spark.conf or spark-submit's "
            "--conf; it must stay below the driver memory), or lower sampleSize or driverBudgetMB")
    advice = more_memory_advice(driver_memory_setting(), total_memory_bytes())
    if any(pattern in text for pattern in _OUT_OF_MEMORY):
        return SparkResourceError(
            "Spark ran out of memory (java.lang.OutOfMemoryError)" + _memory_now() + ". Give it more: " + advice)
    if any(pattern in text for pattern in _JVM_GONE):
        if jvm_exit_signal() == 9:
            free = available_memory_bytes()
            free_text = f"{free / (1 << 30):.1f} GiB are available now" if free else "the free memory is unknown"
            return SparkResourceError(
                "the Spark JVM was killed by the operating system (SIGKILL: most often the kernel's out-of-memory "
                "killer, when the machine as a whole ran out of memory)" + _memory_now() + f"; {free_text}. Stop "
                "other memory-hungry processes (other Spark sessions), or set --driver-memory below the available "
                "memory, or lower sampleSize or blockSize")
        return SparkResourceError(
            "the Spark JVM stopped during the job" + _memory_now() + " (most often java.lang.OutOfMemoryError: "
            "see the Java messages above). Give it more memory: " + advice)
    return None


def with_input_diagnosis(action: Callable[[], Any], df, features_col: str, label_col: Optional[str],
                         weight_col: Optional[str] = None):
    """Run a Spark ``action``; a failed job names the setting to change (out of memory, a stopped
    JVM: :func:`resource_failure`, and no scan of the input, which cannot help) or else the bad
    input (:func:`sparkfs.spark.stats.diagnose_input` on ``df``'s columns: NaN, sizes...)."""
    from sparkfs.errors import InvalidInputError
    from sparkfs.spark.stats import diagnose_input

    try:
        return action()
    except (InvalidInputError, ValueError):
        raise
    except Exception as error:
        resources = resource_failure(error)
        if resources is not None:
            raise resources from error
        diagnose_input(df, features_col, label_col, weight_col)
        raise


def with_resource_errors(action: Callable[[], Any]):
    """Run ``action``; a Spark failure for lack of memory (or a dead JVM) becomes a
    :class:`SparkResourceError` naming the setting; input errors and other failures pass as they are."""
    from sparkfs.errors import InvalidInputError

    try:
        return action()
    except (InvalidInputError, ValueError, SparkResourceError, ExecutorEnvironmentError):
        raise
    except Exception as error:
        resources = resource_failure(error)
        if resources is None:
            raise
        raise resources from error
