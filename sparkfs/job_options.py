"""What makes a command a job a scheduler can run: a run id, a rule for an existing output, an
input fingerprint in the summary and logs a machine can read. No Spark work here.

* ``--run-id ID`` (default: the UTC start time, ``20261124T160102Z``) names the run; ``{run_id}``
  in ``--output`` (or the config's ``output.path``) is replaced by it, so ``out/{run_id}`` gives
  every run its own directory.
* ``--if-exists fail|overwrite|skip`` (``select``, ``instance-weights``) says what to do when the
  output exists, decided before Spark starts for a local output: ``fail`` refuses (exit 2),
  ``overwrite`` replaces it under the rules of :mod:`sparkfs.io.output_safety`, ``skip`` does no
  work and exits 0 when it is a complete output of the same command (anything else there is
  refused, exit 2). ``--overwrite`` is ``--if-exists overwrite``. The resumable studies
  (``evaluate``, ``stability``) take ``resume`` (default: continue a study of their own) or
  ``fail`` (refuse any existing, non-empty directory).
* ``--log-format text|json``: sparkfs's log lines on stderr, as text or one JSON object a line
  (``time``, ``level``, ``event``, ``message`` and the event's fields, e.g. ``stage``, ``seconds``).
* ``--verbose``: Spark's own INFO/WARN lines are shown; by default a session the CLI starts logs
  only Spark's errors (:func:`sparkfs.spark.session.quiet_log_options`).
"""

from __future__ import annotations

import logging
import os
import re
import time
from datetime import datetime, timezone
from typing import Any, Dict, Optional, Union

from sparkfs.errors import InvalidInputError
from sparkfs.io import strict_json
from sparkfs.io.config import RUN_ID_WORDS, ConfigError, is_run_id
from sparkfs.io.input_files import glob_matches
from sparkfs.io.output_safety import KINDS, OutputExistsError, UnsafeOutputError, check_location
from sparkfs.io.stores import Location, location_of, locations_of

IF_EXISTS = ("fail", "overwrite", "skip")
STUDY_IF_EXISTS = ("resume", "fail")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def add_job_args(parser, study: bool = False) -> None:
    """The job options of one sub-command (``study``: a resumable study's ``--if-exists``)."""
    parser.add_argument("--run-id", help="name of this run (default: the UTC start time, e.g. 20261124T160102Z); "
                        "{run_id} in --output is replaced by it")
    if study:
        parser.add_argument("--if-exists", choices=STUDY_IF_EXISTS, default="resume",
                            help="an existing --output: resume a study of this command (default) or fail (exit 2)")
    else:
        parser.add_argument("--if-exists", choices=IF_EXISTS,
                            help="an existing --output: fail (default, exit 2), overwrite (only an output of the same "
                            "command) or skip (exit 0, no work, when it is a complete output of the same command)")
    parser.add_argument("--log-format", choices=("text", "json"), default="text",
                        help="sparkfs's log lines on stderr: text (default) or one JSON object per line")
    parser.add_argument("--verbose", action="store_true", help="show Spark's own INFO and WARN log lines")


class Stage:
    """Logs one line per stage with its duration (``event: stage`` in JSON lines)."""

    def __init__(self, log: logging.Logger, name: str):
        self.log, self.name = log, name

    def __enter__(self):
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc):
        status, seconds = "failed" if exc[0] else "done", time.perf_counter() - self.started
        self.log.info("stage=%s status=%s seconds=%.2f", self.name, status, seconds,
                      extra={"event": "stage", "stage": self.name, "status": status, "seconds": round(seconds, 3)})
        return False


def versions(spark) -> Dict[str, Any]:
    """The versions and session memory settings a summary records."""
    import pyspark

    from sparkfs._version import __version__
    from sparkfs.spark.memory import applied_settings

    return {"spark_version": spark.version, "spark_memory_settings": dict(applied_settings),
            "pyspark_version": pyspark.__version__, "sparkfs_version": __version__}


def run_fields(run_id: str, started: datetime, inputs, spark=None) -> Dict[str, Any]:
    """``run_id``, ``started_at``, ``ended_at`` (now) and the fingerprint of every input."""
    return {"run_id": run_id, "started_at": iso_utc(started), "ended_at": iso_utc(utc_now()),
            "input_files": [input_fingerprint(path, spark) for path in inputs if path]}


def apply_to_study_args(args) -> Optional[str]:
    """The job options of ``instance-weights``, ``evaluate`` and ``stability`` on their flags:
    ``{run_id}`` in ``--output``, the ``--if-exists`` rule. Returns a skip message or None."""
    args.run_id = run_id_of(args.run_id)
    args.output = with_run_id(args.output, args.run_id)
    if args.command == "instance-weights":
        args.if_exists = decide_if_exists(args.if_exists, args.overwrite, {})
        args.overwrite = args.if_exists == "overwrite"
        return skip_if_complete(args.output, "instance-weights", args.if_exists, inputs=[args.input])
    local = location_of(args.output).local
    if args.if_exists == "fail" and local is not None and os.path.lexists(local) and (
            not os.path.isdir(local) or os.listdir(local)):
        raise OutputExistsError(f"output directory {args.output} already exists and --if-exists fail was given; "
                                f"--if-exists resume (the default) continues a study of sparkfs {args.command}")
    return None


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC to the second: ``2026-11-24T16:01:02Z``."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def default_run_id(moment: Optional[datetime] = None) -> str:
    return (moment or utc_now()).astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def run_id_of(flag_value: Optional[str], config_value: Optional[str] = None,
              moment: Optional[datetime] = None) -> str:
    """The run id: the flag's, else the config's, else the start time."""
    if flag_value is not None and not is_run_id(flag_value):
        raise ConfigError(f"--run-id must be {RUN_ID_WORDS}, got {flag_value[:60]!r}")
    return flag_value or config_value or default_run_id(moment)


def with_run_id(path: Optional[str], run_id: str, flag: str = "--output") -> Optional[str]:
    """``path`` with ``{run_id}`` replaced; any other ``{...}`` is refused (a typo would make a
    directory named ``{runid}`` every night)."""
    if path is None:
        return None
    for name in _PLACEHOLDER.findall(path):
        if name != "run_id":
            raise ConfigError(f"{flag} {path}: unknown placeholder {{{name}}}; the one known is {{run_id}}")
    return path.replace("{run_id}", run_id)


def decide_if_exists(flag_value: Optional[str], flag_overwrite: Optional[bool], loaded_output: Dict[str, Any],
                     where: str = "the config") -> str:
    """fail, overwrite or skip from ``--if-exists``, ``--overwrite`` (its alias) and the config's
    ``output.if_exists`` / ``output.overwrite``; flags win over the config, a contradiction is refused."""
    if flag_overwrite and flag_value not in (None, "overwrite"):
        raise ConfigError(f"--overwrite contradicts --if-exists {flag_value}: --overwrite is --if-exists overwrite; "
                          "give one of them")
    if flag_value or flag_overwrite:
        return flag_value or "overwrite"
    configured, overwrite = loaded_output.get("if_exists"), loaded_output.get("overwrite")
    if overwrite and configured not in (None, "overwrite"):
        raise ConfigError(f"output.overwrite: true contradicts output.if_exists: {configured} in {where}; "
                          "give one of them")
    return configured or ("overwrite" if overwrite else "fail")


def complete_output(output: Location, command: str, inputs=()) -> bool:
    """For ``--if-exists skip``: False when nothing is at the local ``output``; True when it is a
    complete output of ``command`` (its marker and every file it writes); anything else there is
    refused (``UnsafeOutputError``): skipping would hide it, replacing it is not asked for."""
    from sparkfs.io.output_safety import check_replaceable
    from sparkfs.io.stores import LocalStore

    local = output.local
    assert local is not None
    check_location(output.as_local(), locations_of(inputs))
    if not os.path.lexists(local):
        return False
    check_replaceable(LocalStore(output), command, overwrite=True)  # same command, nothing foreign
    missing = sorted(KINDS[command].files - set(os.listdir(local)))
    if missing:
        raise UnsafeOutputError(f"--if-exists skip: {output} is an incomplete output of sparkfs {command} (no "
                                f"{', '.join(missing)}); use --if-exists overwrite to write it again")
    return True


def skip_if_complete(path: Union[str, Location], command: str, if_exists: str, inputs=()) -> Optional[str]:
    """The one-line message of a skipped run, or None to run. Only a local output is looked at
    before Spark starts; a URI output with ``skip`` is refused (it cannot be checked without Spark)."""
    if if_exists != "skip":
        return None
    output = location_of(path)
    if not output.plain and output.local is None:
        raise ConfigError(f"--if-exists skip needs a local --output (a path or file:/// URI), got {output}")
    if complete_output(output, command, inputs):
        return f"sparkfs: skipped: {output} already holds a complete output of sparkfs {command}"
    return None


def input_fingerprint(path: Union[str, Location, None], spark=None) -> Optional[Dict[str, Any]]:
    """Size and modification time of an input: a file's own; a directory's total over its files
    and the newest time; a URI's from the session's Hadoop FileSystem (null when not reachable,
    e.g. on Spark Connect)."""
    if not path:
        return None
    location = location_of(path)
    text, local = location.text, location.local
    matches = glob_matches(location)
    if matches is not None:   # a pattern: what it matches now, as a directory's files
        return _files_fingerprint(text, matches, os.path.dirname(local or text))
    if local is not None:
        return _local_fingerprint(text, local)
    return {"path": text, **(_hadoop_fingerprint(text, spark) or {"size_bytes": None, "modified_at": None})}


def _local_fingerprint(path: str, local: str) -> Dict[str, Any]:
    if not os.path.isdir(local):
        status = os.stat(local)
        return {"path": path, "size_bytes": status.st_size,
                "modified_at": iso_utc(datetime.fromtimestamp(status.st_mtime, timezone.utc))}
    return _files_fingerprint(path, [local], local)


def _files_fingerprint(path: str, roots, folder: str) -> Dict[str, Any]:
    """Total size, newest modification time (the ``folder``'s own included) and count of the files
    in and below ``roots``."""
    size, newest, files = 0, os.stat(folder).st_mtime if os.path.isdir(folder) else 0.0, 0
    for root in roots:
        walked = os.walk(root) if os.path.isdir(root) else [(os.path.dirname(root), [], [os.path.basename(root)])]
        for parent, _, names in walked:
            for name in names:
                status = os.stat(os.path.join(parent, name))
                size, newest, files = size + status.st_size, max(newest, status.st_mtime), files + 1
    return {"path": path, "size_bytes": size, "modified_at": iso_utc(datetime.fromtimestamp(newest, timezone.utc)),
            "files": files}


def _hadoop_fingerprint(path: str, spark) -> Optional[Dict[str, Any]]:
    try:
        jvm = spark.sparkContext._jvm
        hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
        fs = hadoop_path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        content = fs.getContentSummary(hadoop_path)
        millis = fs.getFileStatus(hadoop_path).getModificationTime()
    except Exception:  # no session, Spark Connect (no JVM here), or a store that cannot say
        return None
    return {"size_bytes": int(content.getLength()),
            "modified_at": iso_utc(datetime.fromtimestamp(millis / 1000.0, timezone.utc)),
            "files": int(content.getFileCount())}


class JsonLinesFormatter(logging.Formatter):
    """One JSON object per record: time (ISO 8601 UTC), level, event, message, run_id and the
    record's own fields (``extra={"event": "stage", "stage": "fit", ...}``)."""

    FIELDS = ("stage", "status", "seconds", "exit_code", "output")

    def __init__(self, run_id: Optional[str] = None):
        super().__init__()
        self.run_id = run_id

    def format(self, record: logging.LogRecord) -> str:
        document = {"time": iso_utc(datetime.fromtimestamp(record.created, timezone.utc)),
                    "level": record.levelname, "event": getattr(record, "event", "log"),
                    "message": record.getMessage()}
        document.update({name: getattr(record, name) for name in self.FIELDS if hasattr(record, name)})
        if self.run_id:
            document["run_id"] = self.run_id
        return strict_json.dumps(document, default=str)


def configure_log_format(log: logging.Logger, log_format: str, run_id: Optional[str] = None) -> None:
    """Set the formatter of sparkfs's handlers for this command (text by default)."""
    formatter = (JsonLinesFormatter(run_id) if log_format == "json"
                 else logging.Formatter("sparkfs %(levelname)s %(message)s"))
    for handler in log.handlers:
        handler.setFormatter(formatter)


def log_line(log: logging.Logger, log_format: str, text: str, event: str, level: int = logging.INFO, **fields) -> None:
    """A line for the user on stderr: ``text`` as it is, or one JSON object in json mode."""
    import sys

    if log_format == "json":
        log.log(level, "%s", text, extra={"event": event, **fields})
    else:
        print(text, file=sys.stderr)


def refuse_changed_inputs(before, inputs, spark) -> None:
    """Refuse the run (exit 2, nothing written) when an input's size or modification time changed
    between the fingerprint taken before the read and the one taken after the fit: the rows read
    may be any mix of the old and new file, and the summary would record data it did not read."""
    for path, old in zip([path for path in inputs if path], before):
        if old is None or old.get("size_bytes") is None:  # not reachable (e.g. on Spark Connect): not checked
            continue
        try:
            new = input_fingerprint(path, spark)
        except OSError:
            new = {"size_bytes": "gone", "modified_at": "gone"}
        if new == old:
            continue
        size = f"{new['size_bytes']:,} bytes" if isinstance(new["size_bytes"], int) else new["size_bytes"]
        raise InvalidInputError(
            f"input {old['path']} changed while it was read (size {old['size_bytes']:,} bytes -> {size}, modified "
            f"{old['modified_at']} -> {new['modified_at']}): the result would mix the old and new contents, so "
            "nothing was written; run again once the file is complete (or read a copy)")


def refuse_if_inputs_changed_quietly(before, inputs, spark) -> None:
    """After a failed read or fit: :func:`refuse_changed_inputs` when the input can still be
    looked at; if that look fails too (a stopped JVM), the original failure is the one to report."""
    try:
        refuse_changed_inputs(before, inputs, spark)
    except InvalidInputError:
        raise
    except Exception:  # the caller re-raises the failure that brought us here
        return
