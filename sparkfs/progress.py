"""Progress of long work and its interruption: the hooks the passes, steps and fits call.

Long loops (query batches of a pass, Lmba/Simba steps, SVM-RFE fits, Parzen-ISE iterations) announce
themselves with :func:`steps` and call :meth:`Steps.advance` after each step. Nothing is reported
unless a :class:`Reporter` is installed (:func:`set_reporter`; the command line installs one unless
``--quiet``), so the Python API stays silent. A reporter writes one line per step, at most one per
second per loop (the last step always), with an estimate of the time left once a step has finished:
elapsed / steps done x steps left.

The same hook is where a loop notices an interruption: once :func:`interrupt` has been called (the
command line's SIGINT/SIGTERM handler does it), the next :meth:`Steps.advance` raises
:class:`Interrupted`, so a loop on the driver stops at its next step even when no Spark job runs.

Pure Python: every layer may import it (like :mod:`sparkfs.errors`).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, Callable, Dict, Optional


class Interrupted(KeyboardInterrupt):
    """The command was asked to stop (SIGINT or SIGTERM); ``signal_number`` says which."""

    def __init__(self, signal_number: int):
        super().__init__(f"interrupted by signal {signal_number}")
        self.signal_number = signal_number


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``2 h 07 min``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Reporter:
    """Writes progress lines (``sparkfs progress ...``) to ``write`` (default: the ``sys.stderr`` of
    the moment), at most one per ``min_interval`` seconds per loop."""

    def __init__(self, write: Optional[Callable[[str], None]] = None, min_interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic):
        self._write, self.min_interval, self.clock = write, min_interval, clock
        self._lock = threading.Lock()

    def line(self, text: str) -> None:
        with self._lock:  # stability's runs report from several threads
            if self._write is not None:
                self._write(f"sparkfs progress {text}")
            else:
                print(f"sparkfs progress {text}", file=sys.stderr, flush=True)


class Steps:
    """The progress of one loop of ``total`` steps (see the module doc)."""

    def __init__(self, name: str, total: int, unit: str, reporter: Optional[Reporter]):
        self.name, self.total, self.unit, self.reporter = name, max(int(total), 1), unit, reporter
        self.done = 0
        self.started = reporter.clock() if reporter else 0.0
        self._last_line: Optional[float] = None

    def advance(self, count: int = 1) -> None:
        """``count`` more steps finished; raises :class:`Interrupted` once the command is interrupted."""
        check_interrupted()
        self.done += count
        if self.reporter is None or self.total == 1:  # a loop of one step has no progress to tell
            return
        now = self.reporter.clock()
        if (self.done < self.total and self._last_line is not None
                and now - self._last_line < self.reporter.min_interval):
            return
        self._last_line = now
        elapsed = now - self.started
        left = elapsed / self.done * max(self.total - self.done, 0)
        estimate = "done" if self.done >= self.total else f"about {duration(left)} left"
        self.reporter.line(f"{self.name}: {self.unit} {min(self.done, self.total)}/{self.total} "
                           f"({100 * min(self.done, self.total) // self.total}%), {duration(elapsed)} elapsed, "
                           f"{estimate}")


_state: Dict[str, Any] = {"reporter": None, "signal": None}


def set_reporter(reporter: Optional[Reporter]) -> Optional[Reporter]:
    """Install ``reporter`` (None: silent); returns the one it replaces."""
    previous, _state["reporter"] = _state["reporter"], reporter
    return previous


def steps(name: str, total: int, unit: str = "step") -> Steps:
    """A loop of ``total`` steps named ``name`` (``relieff``, ``simba``, ...): call ``advance()``
    after each step. Reports through the installed reporter, if any."""
    check_interrupted()
    return Steps(name, total, unit, _state["reporter"])


def note(text: str) -> None:
    """A progress line written as it is (through the installed reporter, if any)."""
    reporter = _state["reporter"]
    if reporter is not None:
        reporter.line(text)


def interrupt(signal_number: int) -> None:
    """Record an interruption: the next step of any loop raises :class:`Interrupted`."""
    _state["signal"] = signal_number


def interrupted() -> Optional[int]:
    """The signal number of the interruption, or None."""
    return _state["signal"]


def clear_interruption() -> None:
    _state["signal"] = None


def check_interrupted() -> None:
    """Raise :class:`Interrupted` if the command was interrupted."""
    if _state["signal"] is not None:
        raise Interrupted(_state["signal"])
