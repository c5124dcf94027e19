"""The ``sparkfs`` commands: one module per command, each exposing ``COMMAND``, a :class:`Command`.

``sparkfs.cli.main`` parses the arguments, looks the command up in its dispatch table
(``sparkfs.cli.COMMANDS``) and runs it inside the shared error handling (exit codes in
:mod:`sparkfs.cli`). The arguments several commands share live in :mod:`sparkfs.commands.arguments`.
A command module imports no other command module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional


@dataclass(frozen=True)
class Command:
    """One sub-command of ``sparkfs``."""

    #: Adds the command's sub-parser (with its own arguments) to argparse's sub-parser collection.
    add_arguments: Callable[[Any], Any]
    #: Runs the command on the parsed arguments; returns what ``finish`` takes.
    run: Callable[[Any], Any]
    #: Prints the result once the command's reporting context has closed (``select``: its summary);
    #: returns the exit code. By default ``run`` returned the exit code itself.
    finish: Optional[Callable[[Any, Any], int]] = None
    #: The job options it takes (``sparkfs.job_options.add_job_args``): None, "job" or "study".
    job_args: Optional[str] = None
    #: Whether it runs inside the error handling, progress and interruption of ``cli.main`` (every
    #: command but ``methods``, which prints its own refusal).
    guarded: bool = True
