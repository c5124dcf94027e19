"""Heavy children that the suite starts as soon as it is collected, one after another in a
background thread, so that they run beside the in-process tests instead of after them.

A child here needs nothing of the test process but its files: a command (building the executors'
packed environment, the Spark Connect suite in its own pytest process) or a function that drives
processes of its own (the standalone cluster and its applications, the fault-injection child).
``tests/conftest.py`` queues the children of the selected test modules (each module's
``early_children()``) when the suite is collected, and runs those modules last; the test (or its
fixture) calls :func:`outcome`, which waits for its child and returns what it printed or returned.
Commands still running when the session ends are killed with their process group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional


@dataclass
class Child:
    """One queued command (its argument list, folder, environment and time limit) or function
    (``function``, called with no argument); then its outcome."""

    argv: List[str] = field(default_factory=list)
    cwd: str = "."
    env: Dict[str, str] = field(default_factory=dict)
    timeout: float = 1800.0
    function: Optional[Callable[[], Any]] = None
    done: threading.Event = field(default_factory=threading.Event)
    returncode: Optional[int] = None
    stdout: str = ""
    stderr: str = ""
    process: Optional[subprocess.Popen] = None
    value: Any = None
    error: Optional[BaseException] = None

    def result(self):
        """The function's return value (its exception raised again here, in the test)."""
        if self.error is not None:
            raise self.error
        return self.value


_QUEUED: Dict[str, Child] = {}
_STOPPING = threading.Event()
_AT_END: List[Callable[[], Any]] = []


def stopping() -> bool:
    """Whether the session is ending (a function starts no new process then)."""
    return _STOPPING.is_set()


def at_end(cleanup: Callable[[], Any]) -> None:
    """Call ``cleanup`` when the session ends (a cluster a function started, in case its tests
    never ran to stop it; it must be harmless to call twice)."""
    _AT_END.append(cleanup)


def _run(child: Child) -> None:
    if child.function is not None:
        try:
            child.value = child.function()
        except BaseException as error:  # handed to the test that asks for the outcome
            child.error = error
        finally:
            child.done.set()
        return
    try:
        child.process = subprocess.Popen(child.argv, cwd=child.cwd, env=child.env, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            child.stdout, child.stderr = child.process.communicate(timeout=child.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.process.pid, signal.SIGKILL)
            child.stdout, child.stderr = child.process.communicate()
            child.stderr += f"\nearly_start: killed after {child.timeout:g} s"
        child.returncode = child.process.returncode
    except OSError as error:
        child.returncode, child.stderr = -1, f"early_start: could not start {child.argv[:3]}: {error}"
    finally:
        child.done.set()


def start(children: Dict[str, Child]) -> None:
    """Run ``children`` one after another (in the order given) in a daemon thread."""
    _QUEUED.update(children)

    def run_all():
        for child in children.values():
            if _STOPPING.is_set():
                child.returncode, child.stderr = -1, "early_start: the session ended first"
                child.done.set()
                continue
            _run(child)

    threading.Thread(target=run_all, name="sparkfs-early-start", daemon=True).start()


def queued(name: str) -> bool:
    return name in _QUEUED


def outcome(name: str) -> Child:
    """The finished child ``name`` (waits for it)."""
    child = _QUEUED[name]
    child.done.wait()
    return child


def stop_all() -> None:
    """Kill the commands still running and run the cleanups (the session is ending)."""
    _STOPPING.set()
    for child in _QUEUED.values():
        if child.process is not None and child.process.poll() is None:
            try:
                os.killpg(child.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    for cleanup in reversed(_AT_END):
        cleanup()
