"""Spark failures that are not about the input: out of memory, a JVM that stopped, a Spark Connect
server that went away, executors without sparkfs's Python environment.

They reach the user as what they are, with the setting to change, instead of the last symptom
(a ``ConnectionRefusedError`` once the JVM is gone, or a long Java stack trace). Any other failed
job of a pass is re-diagnosed to name the bad input (:func:`with_input_diagnosis`).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator, Optional

from sparkfs.errors import InvalidInputError, SparkMasterError, SparkResourceError, SparkStartError
from sparkfs.spark.connect_retries import lost_server

_OUT_OF_MEMORY = ("OutOfMemoryError", "Java heap space", "GC overhead limit exceeded",
                  "exceeding memory limits", "Container killed on request. Exit code is 137")
#: Failures to start a session that memory has nothing to do with: a master Spark rejects, a Spark
#: Connect server that cannot be reached or a malformed Connect URL.
_NOT_MEMORY = ("Could not parse Master URL", "Master must either be yarn", "CANNOT_CONFIGURE_SPARK_CONNECT",
               "INVALID_CONNECT_URL", "StatusCode.UNAVAILABLE", "failed to connect to all addresses")
_JVM_GONE = ("ConnectionRefusedError", "Py4JNetworkError", "Answer from Java side is empty",
             "Error while receiving", "Java gateway process exited", "SparkContext was shut down",
             "Cannot call methods on a stopped SparkContext", "Connection reset by peer")


#: A Spark Connect URL's secret parameter (``sc://host:15002/;token=abc``): its value is never shown.
#: The value ends at the next parameter, a blank, a quote, or a ")" or "," that ends the quoting phrase.
_CONNECT_TOKEN = re.compile(r"(;\s*token\s*=).*?(?=;|\s|['\"]|\)(?:[\s,:;.)]|$)|,\s|$)", re.IGNORECASE)


def redacted(text: str) -> str:
    """``text`` with every Spark Connect token value replaced by ``***`` (messages, log lines)."""
    return _CONNECT_TOKEN.sub(r"\1***", str(text))


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
    except Exception as unreadable:  # any failure to read the text is itself the clue
        return f"{type(error).__name__}: (its text cannot be read from the JVM: {type(unreadable).__name__})"


def _memory_now() -> str:
    from sparkfs.spark.memory import driver_memory_setting

    memory = driver_memory_setting()
    return f" (this session had spark.driver.memory={memory})" if memory else ""


def usable_memory_bytes(machine_bytes: int) -> int:
    """What a driver JVM may be given on a machine of ``machine_bytes``: the total less a margin
    for the OS, the Python driver and its workers (an eighth, at least 2 GiB)."""
    return machine_bytes - max(2 << 30, machine_bytes // 8)


def more_memory_advice(current: Optional[str], machine_bytes: Optional[int]) -> str:
    """The driver memory to try next: twice what the session had (8g when unknown), never less;
    when that exceeds the machine, say so instead of suggesting it."""
    from sparkfs.spark.memory import memory_setting_bytes

    had = memory_setting_bytes(current)
    suggested = max(8 << 30, 2 * had) if had else 8 << 30
    if machine_bytes and suggested > usable_memory_bytes(machine_bytes):
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


def jvm_exit_signal(wait_seconds: Optional[float] = None) -> Optional[int]:
    """The signal that ended the JVM this Python process started (9 for the kernel's
    out-of-memory killer), or None: still running after ``wait_seconds`` (default
    :data:`JVM_EXIT_WAIT_SECONDS`), exited normally, or not
    our child (under spark-submit, or on Spark Connect). Called only once the connection to the
    JVM has broken, so the wait is spent only on the way to an error message."""
    import subprocess

    try:
        from pyspark import SparkContext

        process = getattr(SparkContext._gateway, "proc", None) if SparkContext._gateway is not None else None
        if process is None:
            return None
        try:
            code = process.wait(timeout=JVM_EXIT_WAIT_SECONDS if wait_seconds is None else wait_seconds)
        except subprocess.TimeoutExpired:
            return None
    except Exception:  # best effort diagnosis
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
        except Exception:  # best effort: the name only completes the message
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
        except Exception:  # no session: nothing known
            master = None
    return master is None or master.startswith("local")


class ConnectServerLostError(SparkResourceError):
    """The Spark Connect server of the session went away during the command (it stopped, crashed or
    was restarted, or the network to it broke); the message names its URL."""


def lost_server_failure(error: BaseException) -> Optional[ConnectServerLostError]:
    """A :class:`ConnectServerLostError` when this process's Spark Connect server is lost (a call
    gave up on it: :mod:`sparkfs.spark.connect_retries`), or ``error`` says so (gRPC
    ``UNAVAILABLE``, the server's Spark shut down, or a call cut short after which the server runs
    no job), else None. Whatever the error's own words
    (a clean-up call on the closed channel, a job the stopping server cancelled), a lost server
    is what the user hears of: never memory, never the input."""
    watch = lost_server(error)
    if watch is None:
        return None
    return ConnectServerLostError(
        f"the Spark Connect server {redacted(watch.url)} went away during the command ({redacted(watch.reason or '')}):"
        " nothing was written. It stopped, crashed or was restarted, or the network to it broke (its log says "
        "which); run again once it is back")


def resource_failure(error: BaseException):
    """A :class:`SparkResourceError` naming the setting to change, a lost Spark Connect server
    (:func:`lost_server_failure`), an :class:`ExecutorEnvironmentError`
    (:func:`executor_environment_failure`), or None for other failures."""
    from sparkfs.spark.memory import available_memory_bytes, driver_memory_setting, total_memory_bytes

    links = list(_chain(error))
    text = " ".join(describe(link) for link in links)
    if any(isinstance(link, (SparkMasterError, SparkStartError)) for link in links):
        return None
    lost = lost_server_failure(error)
    if lost is not None:
        return lost
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
        signal_number = jvm_exit_signal()
        killer = oom_killed(kernel_log(), _jvm_pid()) if signal_number == 9 else None
        return SparkResourceError(stopped_jvm_message(signal_number, killer, _memory_now(), advice,
                                                      available_memory_bytes()))
    return None


#: The kernel's out-of-memory killer, as it logs a kill (``dmesg``): "Out of memory: Killed process
#: 1234 (java)", or "oom-kill:... pid=1234" / "Memory cgroup out of memory: Killed process 1234".
_OOM_KILL = re.compile(r"(?:out of memory|oom)[^\n]*?(?:Killed process |pid=)(\d+)", re.IGNORECASE)


def kernel_log() -> Optional[str]:
    """The kernel's log where this process may read it (``dmesg``, else ``/dev/kmsg``), or None."""
    import os
    import subprocess

    try:
        done = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5)
        if done.returncode == 0 and done.stdout:
            return done.stdout
    except (OSError, subprocess.SubprocessError):
        pass
    try:  # the records so far, without waiting for new ones
        descriptor = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    records = []
    try:
        while len(records) < 100000:
            try:
                records.append(os.read(descriptor, 8192).decode("utf-8", "replace"))
            except BlockingIOError:
                break
            except OSError:  # EPIPE: a record overwritten while reading; go on
                continue
    finally:
        os.close(descriptor)
    return "".join(records) or None


def oom_killed(log_text: Optional[str], pid: Optional[int]) -> Optional[bool]:
    """Whether the kernel log shows the out-of-memory killer ending ``pid``: True, False (the log
    was read and says nothing of it), or None (no log, or no pid to look for)."""
    if log_text is None or pid is None:
        return None
    return any(int(found) == pid for found in _OOM_KILL.findall(log_text))


def _jvm_pid() -> Optional[int]:
    try:
        from pyspark import SparkContext

        process = getattr(SparkContext._gateway, "proc", None) if SparkContext._gateway is not None else None
        return getattr(process, "pid", None)
    except Exception:  # best effort diagnosis
        return None


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def stopped_jvm_message(signal_number: Optional[int], oom_killer: Optional[bool], memory_now: str, advice: str,
                        available: Optional[int]) -> str:
    """What to say of a driver JVM that stopped (its connection broke) without an
    OutOfMemoryError in the error's text. ``signal_number``: the signal that ended it, when known
    (:func:`jvm_exit_signal`); ``oom_killer``: what the kernel log says of a SIGKILL
    (:func:`oom_killed`). Only an OOM kill, or an unknown end, speaks of memory; a signal from
    outside (SIGTERM, SIGHUP, SIGINT, or a SIGKILL the kernel log does not show as its own) is
    named as that, with no advice about memory."""
    free_text = f"{available / (1 << 30):.1f} GiB are available now" if available else "the free memory is unknown"
    if signal_number == 9 and oom_killer is not False:
        who = ("the kernel's out-of-memory killer (the kernel log shows it)" if oom_killer else
               "most often the kernel's out-of-memory killer, when the machine as a whole ran out of memory; the "
               "kernel log is not readable here to tell")
        return (f"the Spark JVM was killed by the operating system (SIGKILL: {who}){memory_now}; {free_text}. Stop "
                "other memory-hungry processes (other Spark sessions), or set --driver-memory below the available "
                "memory, or lower sampleSize or blockSize")
    if signal_number is not None:
        shown = f"{_signal_name(signal_number)}, signal {signal_number}"
        also = "; the kernel log shows no out-of-memory kill of it" if signal_number == 9 else ""
        return (f"the Spark JVM was killed by a signal from outside sparkfs ({shown}: another process, a user, a "
                f"scheduler or a shutdown){also}{memory_now}. This is not a lack of memory: nothing was written; "
                "run again")
    return ("the Spark JVM stopped during the job" + memory_now + " (how it ended is not known here: a "
            "java.lang.OutOfMemoryError in the Java messages above means memory, give it more: " + advice +
            "; otherwise those messages name the cause)")


#: Spark's words for an input file it cannot read, and what to say of the file instead.
_UNREADABLE_FILE = (
    ("EOFException: Unexpected end of input stream",
     "is cut short (its compressed data end without their end marker: a download or copy that stopped?); fetch "
     "or write it again"),
    ("PARQUET_COLUMN_DATA_TYPE_MISMATCH",
     "holds a column of another type than the other part files' ({detail}); write every part file with the same "
     "types"),
    ("is not a Parquet file",
     "is not a Parquet file: a Parquet directory holds only Parquet part files; move the others out"),
    ("incorrect header check", "is damaged (its compressed data do not decompress); fetch or write it again"),
    ("invalid block type", "is damaged (its compressed data do not decompress); fetch or write it again"),
)
_READING_FILE = re.compile(r"Encountered error while reading file (\S+?)\.?\s|(\S+) is not a Parquet file")
_TYPE_MISMATCH = re.compile(r"Data type mismatches when reading Parquet column ([^.]+)\.\s*([^.\n]*)")


def input_file_failure(error: BaseException) -> Optional[InvalidInputError]:
    """An :class:`InvalidInputError` naming the file when a Spark failure is an input file it
    cannot read (a truncated or damaged compressed file, a Parquet part of another format or column
    type, a directory without data files), else None. A local input is checked for these before
    Spark starts (:mod:`sparkfs.io.input_files`); this names them for a URI input."""
    text = " ".join(describe(link) for link in _chain(error))
    if "UNABLE_TO_INFER_SCHEMA" in text:
        return InvalidInputError("the input holds no data files Spark can read (an empty directory, or one with only "
                                 "_SUCCESS or hidden files): give the directory of the part files")
    for mark, words in _UNREADABLE_FILE:
        if mark not in text:
            continue
        file = _READING_FILE.search(text)
        detail = _TYPE_MISMATCH.search(text)
        said = words.format(detail=f"column {detail.group(1)}: {detail.group(2).strip()}" if detail else "")
        return InvalidInputError(f"{(file.group(1) or file.group(2)) if file else 'an input file'} {said}")
    return None


def with_input_diagnosis(action: Callable[[], Any], df, features_col: str, label_col: Optional[str],
                         weight_col: Optional[str] = None):
    """Run a Spark ``action``; a failed job names the setting to change (out of memory, a stopped
    JVM: :func:`resource_failure`, and no scan of the input, which cannot help) or else the bad
    input (:func:`sparkfs.spark.stats.diagnose_input` on ``df``'s columns: NaN, sizes...)."""
    from sparkfs.spark.stats import diagnose_input

    try:
        return action()
    except (InvalidInputError, ValueError):
        raise
    except Exception as error:
        resources = resource_failure(error)
        if resources is not None:
            raise resources from error
        unreadable = input_file_failure(error)
        if unreadable is not None:
            raise unreadable from None
        diagnose_input(df, features_col, label_col, weight_col)
        raise


def with_resource_errors(action: Callable[[], Any]):
    """Run ``action``; a Spark failure for lack of memory (or a dead JVM) becomes a
    :class:`SparkResourceError` naming the setting; input errors and other failures pass as they are."""
    try:
        return action()
    except (InvalidInputError, ValueError, SparkResourceError, ExecutorEnvironmentError):
        raise
    except Exception as error:
        resources = resource_failure(error)
        if resources is None:
            raise
        raise resources from error
