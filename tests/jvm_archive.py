"""A class-data-sharing archive of Spark's classes for the JVMs one `make test` run starts.

A Spark JVM spends much of its start (and of its first queries) finding, reading, parsing and
verifying classes from about 250 jars. Java's class data sharing (CDS) keeps those classes, already
parsed and verified, in an archive file mapped into every JVM that names it. `make test`'s
controller process makes one archive before the workers start: one ``sparkfs select`` child on the
digits set runs with ``-XX:ArchiveClassesAtExit``, and every JVM spark-submit starts afterwards (the
workers' sessions, the command-line children, the Connect servers) gets ``-XX:SharedArchiveFile``
through ``SPARK_SUBMIT_OPTS``. The archive lives in a temporary folder of this run only, so each run
pays for its own (about 40 s of one core) and nothing carries over between checkouts. Measured by
hand over the process tree: a ``sparkfs select`` child on digits took 9 s of CPU with the archive
and 15 s without it.

A JVM whose class path differs from the archive's (none here: every one starts through this
checkout's spark-submit) ignores the archive. Set ``SPARKFS_TEST_CDS=0`` to run without it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ARCHIVE_NAME = "spark-classes.jsa"


def wanted(config) -> bool:
    """Whether this pytest process should make the archive: the controller of a run with workers, not
    the fast tier, not switched off."""
    if hasattr(config, "workerinput") or os.environ.get("SPARKFS_TEST_TIER") == "fast":
        return False
    if os.environ.get("SPARKFS_TEST_CDS", "1") == "0" or "SharedArchiveFile" in os.environ.get("SPARK_SUBMIT_OPTS", ""):
        return False
    return bool(config.getoption("numprocesses", None))


def make_archive(repo: Path) -> Path | None:
    """Run one ``sparkfs select`` child that writes the archive at its exit; its folder, or None (and a
    line on stderr) when no archive came out."""
    folder = Path(tempfile.mkdtemp(prefix="sparkfs-test-cds-"))
    archive = folder / ARCHIVE_NAME
    from sparkfs.io.datasets import write_digits_libsvm

    data = write_digits_libsvm(str(folder / "digits.libsvm"))
    options = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -XX:ArchiveClassesAtExit={archive}".strip()
    command = [sys.executable, "-m", "sparkfs.cli", "select", "--input", data, "--format", "libsvm",
               "--method", "relieff", "--num-features", "5", "--output", str(folder / "out")]
    try:
        ran = subprocess.run(command, cwd=repo, env={**os.environ, "SPARK_SUBMIT_OPTS": options},
                             capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        ran = None
    if ran is None or ran.returncode != 0 or not archive.is_file():
        print(f"tests: no class-data archive ({'timed out' if ran is None else ran.stderr[-500:]}); "
              "the JVMs start without one", file=sys.stderr)
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return folder


def use(folder: Path) -> None:
    """Name the archive in SPARK_SUBMIT_OPTS for every JVM started from now on (workers inherit it)."""
    archive = folder / ARCHIVE_NAME
    os.environ["SPARK_SUBMIT_OPTS"] = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} -XX:SharedArchiveFile={archive}"
