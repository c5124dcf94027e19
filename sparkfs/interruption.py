"""The command line's progress options and its clean stop on Ctrl-C (SIGINT) and SIGTERM.

Progress: ``--quiet`` silences the progress lines (and the stage lines); ``--progress spark`` shows
Spark's own console progress bar instead of sparkfs's lines (see :mod:`sparkfs.progress`).

Interruption: the first SIGINT or SIGTERM records the signal (:func:`sparkfs.progress.interrupt`),
turns logging off (py4j logs a broken call with its trace) and, from another thread (the main
thread may be inside a Py4J call on its own connection), silences Spark's log and cancels the
running Spark jobs: ``cancelAllJobs()`` on a classic session, ``interruptAll()`` on Spark Connect
(whose calls are tried once from then on, not retried: a server that went away is never waited
for). The running call then fails, and a loop on the driver stops at its next step. If the main thread
has not stopped ``GRACE_SECONDS`` later (a long computation on the driver), or on a second signal,
the handler raises :class:`sparkfs.progress.Interrupted` where the main thread is. Whatever
error the stop produced, :func:`interruptible` turns it into :class:`~sparkfs.progress.Interrupted`;
the command prints ``sparkfs: interrupted`` and exits with 128 + the signal number (130, 143). The
atomic output writer removes its staging directory and writes nothing once interrupted (a signal
that comes after the output was renamed into place lets the command finish).

A scheduler (``timeout``, slurm, Kubernetes, systemd) kills after a grace period of seconds, so the
stop is bounded: a main thread still busy ``EXIT_SECONDS`` after the signal (inside one long call
of compiled code, where no Python handler runs: a solver's fit on a large matrix) is not waited
for: the process prints the same line and ends with the same code (``os._exit``; nothing has been
written then, as the output is written last). And a signal to the process group (what ``timeout``
sends) ends the JVM as well: pyspark's accumulator server then prints the ``EOFError`` trace of the
connection the JVM dropped, which the command's own line replaces (:func:`_quiet_accumulator_server`).
"""

from __future__ import annotations

import _thread
import contextlib
import logging
import os
import signal
import sys
import threading

from sparkfs import progress
from sparkfs.spark.connect_retries import server_lost, stop_retrying

#: Seconds the main thread gets to stop by itself after the Spark jobs were cancelled.
GRACE_SECONDS = 3.0
#: Seconds after the signal at which a main thread that has not stopped is not waited for.
EXIT_SECONDS = 8.0
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_handlers_installed = {"on": False}


def add_progress_args(parser) -> None:
    parser.add_argument("--quiet", action="store_true",
                        help="no progress or stage lines on stderr (errors and the result still appear)")
    parser.add_argument("--progress", choices=["steps", "spark"], default="steps",
                        help="steps: one line per step with the time left (default); spark: Spark's console "
                             "progress bar instead")


def progress_conf(args) -> dict:
    """The Spark setting ``--progress spark`` asks for."""
    return {"spark.ui.showConsoleProgress": "true"} if getattr(args, "progress", None) == "spark" else {}


@contextlib.contextmanager
def reporting(args, log: logging.Logger):
    """Progress lines on stderr for the command (none with ``--quiet`` or ``--progress spark``)."""
    quiet = bool(getattr(args, "quiet", False))
    lines = not quiet and getattr(args, "progress", "steps") == "steps"
    previous = progress.set_reporter(progress.Reporter() if lines else None)
    level = log.level
    if quiet:
        log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        progress.set_reporter(previous)
        log.setLevel(level)


def _connect_session():
    """The Spark Connect session of this (main) thread, or None; attribute look-ups only (no call
    to a server): its active session is thread-local, so it is found here, not in the cancelling thread."""
    connect = sys.modules.get("pyspark.sql.connect.session")
    if connect is None:
        return None
    session = connect.SparkSession.getActiveSession() or getattr(connect.SparkSession, "_default_session", None)
    return session if session is not None and not getattr(session, "is_stopped", False) else None


def _cancel_spark_jobs(connect_session) -> None:
    """Silence Spark's log and cancel its jobs (run in its own thread: its own Py4J connection). A
    Spark Connect server known to be lost is not asked."""
    try:
        if connect_session is not None:
            if not server_lost():
                connect_session.interruptAll()
            return
        from pyspark import SparkContext

        context = SparkContext._active_spark_context
        if context is not None:
            context.setLogLevel("OFF")
            context.cancelAllJobs()
    except Exception:
        pass


def _stop_main_thread_later(main_done: threading.Event, signal_number: int) -> None:
    if main_done.wait(GRACE_SECONDS):
        return
    _stop_fired.set()
    _thread.interrupt_main(signal.SIGINT)  # runs the handler again in the main thread, which then raises
    if not main_done.wait(EXIT_SECONDS - GRACE_SECONDS):  # the main thread is inside one long compiled call
        print("\nsparkfs: interrupted", file=sys.stderr, flush=True)
        os._exit(128 + signal_number)


def _quiet_accumulator_server() -> None:
    """Keep the trace of a dropped connection (EOFError, ConnectionError) of pyspark's accumulator
    server off stderr: it only means that the JVM ended (a signal to the process group), which the
    command reports itself; any other error of the server is printed as before."""
    spark_context = getattr(sys.modules.get("pyspark"), "SparkContext", None)
    server = getattr(getattr(spark_context, "_active_spark_context", None), "_accumulatorServer", None)
    if server is None or getattr(server, "sparkfs_quiet", False):
        return
    default = server.handle_error

    def handle_error(request, client_address):  # called inside socketserver's `except`
        if not isinstance(sys.exc_info()[1], (EOFError, ConnectionError)):
            default(request, client_address)

    server.handle_error = handle_error
    server.sparkfs_quiet = True


def _begin_stop(signal_number: int) -> None:
    """Record the interruption, cancel the Spark jobs and start the clock of the stop; once per
    command, from the main thread's handler or from the thread watching the signals."""
    with _stop_lock:
        if progress.interrupted() is not None:
            return
        progress.interrupt(signal_number)
    logging.disable(logging.CRITICAL)  # py4j logs the broken call with its trace
    stop_retrying()  # a Spark Connect server is asked each clean-up call once, never waited for
    threading.Thread(target=_cancel_spark_jobs, args=(_connect_session(),), name="sparkfs-cancel",
                     daemon=True).start()
    threading.Thread(target=_stop_main_thread_later, args=(_main_done, signal_number), name="sparkfs-stop",
                     daemon=True).start()


def _on_signal(signal_number, frame) -> None:
    _main_handler_calls[0] += 1
    first = progress.interrupted()
    if first is not None and (_main_handler_calls[0] > 1 or _main_done.is_set() or _stop_fired.is_set()):
        raise progress.Interrupted(first)  # a second signal, or the main thread did not stop by itself
    _begin_stop(signal_number)


def _watch_signals(read_fd: int) -> None:
    """Begin the stop when a signal arrives even if the main thread cannot run its handler (inside
    one long compiled call): Python's C-level handler writes each signal's number to this pipe."""
    with os.fdopen(read_fd, "rb", buffering=0) as wakeups:
        for data in iter(lambda: wakeups.read(16), b""):
            for number in data:
                if number in _SIGNALS and not _main_done.is_set():
                    _begin_stop(number)


_main_done = threading.Event()
_stop_fired = threading.Event()
_stop_lock = threading.Lock()
_main_handler_calls = [0]


def install_handlers() -> None:
    """(Again) our handlers for SIGINT and SIGTERM, if the command runs under :func:`interruptible`
    (a new SparkContext installs its own SIGINT handler), and the accumulator server of a new
    SparkContext kept quiet about a JVM that ended."""
    if _handlers_installed["on"] and threading.current_thread() is threading.main_thread():
        for number in _SIGNALS:
            signal.signal(number, _on_signal)
        _quiet_accumulator_server()


@contextlib.contextmanager
def interruptible():
    """Run a command that stops cleanly on SIGINT/SIGTERM: any error after a signal leaves as
    :class:`sparkfs.progress.Interrupted`. Only in the main thread (signals go there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in _SIGNALS}
    progress.clear_interruption()
    _main_done.clear()
    _stop_fired.clear()
    _main_handler_calls[0] = 0
    _handlers_installed["on"] = True
    install_handlers()
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    previous_wakeup = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    threading.Thread(target=_watch_signals, args=(read_fd,), name="sparkfs-signals", daemon=True).start()
    try:
        yield
    except BaseException as error:
        if progress.interrupted() is None:
            raise
        raise progress.Interrupted(progress.interrupted()) from error
    finally:
        _main_done.set()
        signal.set_wakeup_fd(previous_wakeup)
        os.close(write_fd)  # the watching thread reads the end of the pipe and ends
        _handlers_installed["on"] = False
        for number, handler in previous.items():
            signal.signal(number, handler)
        if progress.interrupted() is not None:
            logging.disable(logging.NOTSET)
        progress.clear_interruption()  # the Python API called later in this process runs on
