"""Command line: ``sparkfs COMMAND ...``. The commands live in :mod:`sparkfs.commands`, one module each;
this module parses the arguments, dispatches through :data:`COMMANDS` and turns errors into exit codes.

Exit codes (docs/jobs.md, "Exit codes"): 0 done, or skipped (``--if-exists skip``); 1 a Spark or other
failure (out of memory, a Spark Connect server that cannot be reached or went away); 2 bad input, configuration, a
refused output or a master Spark rejects (the message names the problem); 130 interrupted by Ctrl-C
(SIGINT), 143 stopped by SIGTERM (nothing written either way).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import replace
from typing import Dict, List, Optional

from sparkfs._version import __version__
from sparkfs.commands import (
    Command,
    apply,
    compare,
    convert,
    evaluate,
    instance_weights,
    methods,
    report,
    select,
    stability,
)
from sparkfs.commands.arguments import (
    join_negative_values,
    spark_target,  # noqa: F401 (importable here, as before)
)
from sparkfs.commands.arguments import spark_conf as _spark_conf  # noqa: F401 (importable here, as before)
from sparkfs.commands.select import resolve_config, run_select
from sparkfs.errors import InvalidInputError, SparkResourceError, SparkStartError
from sparkfs.interruption import add_progress_args, interruptible, reporting
from sparkfs.io.config import ConfigError
from sparkfs.io.output import OutputExistsError
from sparkfs.job_options import add_job_args, configure_log_format, log_line
from sparkfs.progress import Interrupted
from sparkfs.spark.failures import describe, input_file_failure, lost_server_failure, redacted, resource_failure

log = logging.getLogger("sparkfs")

#: The dispatch table: command name -> its module's :class:`sparkfs.commands.Command`, in the order
#: ``sparkfs --help`` lists them.
COMMANDS: Dict[str, Command] = {
    # `select` runs through this module's names: `sparkfs.cli.resolve_config` and `run_select` are its
    # public entry points, which notebooks call and tests replace.
    "select": replace(select.COMMAND, run=lambda args: run_select(resolve_config(args))),
    "apply": apply.COMMAND,
    "instance-weights": instance_weights.COMMAND,
    "stability": stability.COMMAND,
    "evaluate": evaluate.COMMAND,
    "report": report.COMMAND,
    "compare": compare.COMMAND,
    "methods": methods.COMMAND,
    "convert": convert.COMMAND,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparkfs", description="Distributed feature selection on Apache Spark")
    parser.add_argument("--version", action="version", version=f"sparkfs {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name, command in COMMANDS.items():
        command.add_arguments(subparsers)
        sub = subparsers.choices[name]
        if command.job_args:  # --run-id, --if-exists, --log-format, --verbose
            add_job_args(sub, study=command.job_args == "study")
        if command.guarded:  # every command that runs in main's error handling
            add_progress_args(sub)
    return parser


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of each record (not the stream of the
    first call: in a process that calls :func:`main` several times, as notebooks and tests do, that
    one may be closed by then)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value):  # logging.StreamHandler.__init__ assigns it
        pass


def _report_failure(args, text: str, exit_code: int) -> int:
    """The last line of a failed command on stderr (a JSON object with ``--log-format json``);
    a failure (exit 1) starts a line of its own, as the JVM may still be writing to stderr."""
    log_format = getattr(args, "log_format", "text")
    text = redacted(text)   # a Connect URL's token, wherever a message quotes the URL
    if exit_code == 1 and log_format == "text":
        text = "\n" + text
    log_line(log, log_format, text, "error" if exit_code == 2 else "failed", logging.ERROR, exit_code=exit_code)
    return exit_code


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush of a closed pipe prints nothing."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def main(argv: Optional[List[str]] = None) -> int:
    if not log.handlers:  # our own handler: leave the root logger (py4j, pyspark) alone
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("sparkfs %(levelname)s %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    args = build_parser().parse_args(join_negative_values(list(sys.argv[1:] if argv is None else argv)))
    args.argv = list(sys.argv[1:] if argv is None else argv)
    configure_log_format(log, getattr(args, "log_format", "text"), getattr(args, "run_id", None))
    command = COMMANDS[args.command]
    if not command.guarded:
        try:
            return command.run(args)
        except BrokenPipeError:  # `sparkfs methods | head`: the reader has gone; no trace, as other CLIs
            _silence_stdout()
            return 141  # 128 + SIGPIPE, a shell's code for a pipe closed early
    try:
        with reporting(args, log), interruptible():
            outcome = command.run(args)
    except Interrupted as stop:
        print("\nsparkfs: interrupted", file=sys.stderr)
        return 128 + stop.signal_number
    except (InvalidInputError, ConfigError, OutputExistsError, ValueError, FileNotFoundError) as error:
        lost = lost_server_failure(error)  # a call on the closed channel of a lost server (gRPC's ValueError)
        if lost is not None:
            return _report_failure(args, f"sparkfs: failed: {lost}", 1)
        return _report_failure(args, f"sparkfs: error: {error}", 2)
    except (SparkResourceError, SparkStartError) as error:  # on a line of its own: the JVM may still be writing
        return _report_failure(args, f"sparkfs: failed: {error}", 1)
    except Exception as error:  # a Spark failure that diagnosis could not name
        resources = resource_failure(error)
        if resources is not None:
            return _report_failure(args, f"sparkfs: failed: {resources}", 1)
        unreadable = input_file_failure(error)   # an input file Spark cannot read (a URI input's)
        if unreadable is not None:
            return _report_failure(args, f"sparkfs: error: {unreadable}", 2)
        text = describe(error)
        return _report_failure(args, f"sparkfs: failed: {text.splitlines()[0] if text else type(error).__name__}", 1)
    return command.finish(args, outcome) if command.finish else outcome


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
