"""The command line's progress options and its clean stop on Ctrl-C (SIGINT) and SIGTERM.

Progress: ``--quiet`` silences the progress lines (and the stage lines); ``--progress spark`` shows
Spark's own console progress bar instead of sparkfs's lines (see :mod:`sparkfs.progress`).

Interruption: the first SIGINT or SIGTERM records the signal (:func:`sparkfs.progress.interrupt`),
turns logging off (py4j logs a broken call with its trace) and, from another thread (the main
thread may be inside a Py4J call on its own connection), silences Spark's log and cancels the
running Spark jobs: ``cancelAllJobs()`` on a classic session, ``interruptAll()`` on Spark Connect.
The running call then fails, and a loop on the driver stops at its next step. If the main thread
has not stopped ``GRACE_SECONDS`` later (a long computation on the driver), or on a second signal,
the handler raises :class:`sparkfs.progress.Interrupted` where the main thread is. Whatever
error the stop produced, :func:`interruptible` turns it into :class:`~sparkfs.progress.Interrupted`;
the command prints ``sparkfs: interrupted`` and exits with 128 + the signal number (130, 143). The
atomic output writer removes its staging directory and writes nothing once interrupted (a signal
that comes after the output was renamed into place lets the command finish).
"""

from __future__ import annotations

import _thread
import contextlib
import logging
import signal
import sys
import threading

from sparkfs import progress

#: Seconds the main thread gets to stop by itself after the Spark jobs were cancelled.
GRACE_SECONDS = 3.0
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
    """Silence Spark's log and cancel its jobs (run in its own thread: its own Py4J connection)."""
    try:
        if connect_session is not None:
            connect_session.interruptAll()
            return
        from pyspark import SparkContext

        context = SparkContext._active_spark_context
        if context is not None:
            context.setLogLevel("OFF")
            context.cancelAllJobs()
    except Exception:  # noqa: BLE001 - the JVM may be gone already; the command stops anyway
        pass


def _stop_main_thread_later(main_done: threading.Event) -> None:
    if not main_done.wait(GRACE_SECONDS):
        _thread.interrupt_main(signal.SIGINT)  # runs the handler again in the main thread, which then raises


def _on_signal(signal_number, frame) -> None:
    first = progress.interrupted()
    if first is not None:  # a second signal, or the main thread did not stop by itself
        raise progress.Interrupted(first)
    progress.interrupt(signal_number)
    logging.disable(logging.CRITICAL)  # py4j logs the broken call with its trace
    threading.Thread(target=_cancel_spark_jobs, args=(_connect_session(),), name="sparkfs-cancel",
                     daemon=True).start()
    threading.Thread(target=_stop_main_thread_later, args=(_main_done,), name="sparkfs-stop", daemon=True).start()


_main_done = threading.Event()


def install_handlers() -> None:
    """(Again) our handlers for SIGINT and SIGTERM, if the command runs under :func:`interruptible`
    (a new SparkContext installs its own SIGINT handler)."""
    if _handlers_installed["on"] and threading.current_thread() is threading.main_thread():
        for number in _SIGNALS:
            signal.signal(number, _on_signal)


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
    _handlers_installed["on"] = True
    install_handlers()
    try:
        yield
    except BaseException as error:
        if progress.interrupted() is None:
            raise
        raise progress.Interrupted(progress.interrupted()) from error
    finally:
        _main_done.set()
        _handlers_installed["on"] = False
        for number, handler in previous.items():
            signal.signal(number, handler)
        if progress.interrupted() is not None:
            logging.disable(logging.NOTSET)
        progress.clear_interruption()  # the Python API called later in this process runs on
