"""SparkSession construction with the settings sparkfs relies on."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict, Mapping, Optional

#: Share of the memory available NOW (not the machine's total) a local driver JVM may use when the
#: user set none (the local master runs every task inside the driver JVM, so its heap is the whole
#: cluster's memory; the Python workers and the OS need the rest).
LOCAL_DRIVER_MEMORY_SHARE = 0.5
#: What the last session built here was given (reported in summaries and failure messages).
applied_settings: Dict[str, str] = {}


def ensure_python_workers() -> None:
    """Make Spark's Python workers run this interpreter (the venv's), not the system python3.

    Without it, pandas/Arrow UDFs fail with ``No module named 'pandas'`` when sparkfs runs from
    a virtual environment that is not activated. An explicit user setting is left alone.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def _meminfo_bytes(meminfo_text: str, field: str) -> Optional[int]:
    for line in meminfo_text.splitlines():
        name, _, rest = line.partition(":")
        if name.strip() == field and rest.split():
            return int(rest.split()[0]) * 1024  # /proc/meminfo counts kB
    return None


def total_memory_bytes() -> Optional[int]:
    """Physical memory, or the container's (cgroup) limit when that is lower; None if unknown."""
    candidates = []
    try:
        candidates.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    limit = _cgroup_limit_and_usage()[0]
    if limit is not None:
        candidates.append(limit)
    return min(candidates) if candidates else None


def _cgroup_limit_and_usage():
    """(limit, usage) in bytes of this process's memory cgroup, each None where unknown or unlimited."""
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if not (text.isdigit() and int(text) < 1 << 60):
            return None, None
        try:
            usage = int(Path(usage_file).read_text().strip())
        except (OSError, ValueError):
            usage = None
        return int(text), usage
    return None, None


def available_memory_bytes(meminfo_text: Optional[str] = None) -> Optional[int]:
    """Memory that can be taken now without swapping: the kernel's ``MemAvailable``, or what is
    left under the container's limit when that is less; None if unknown.

    Other Spark sessions on the same machine hold their heaps, so a new session sized from the
    machine's total (as before) could be killed by the kernel while other jobs ran.
    """
    if meminfo_text is None:
        try:
            meminfo_text = Path("/proc/meminfo").read_text()
        except OSError:
            meminfo_text = ""
    candidates = [value for value in (_meminfo_bytes(meminfo_text, "MemAvailable"),) if value]
    limit, usage = _cgroup_limit_and_usage()
    if limit is not None and usage is not None:
        candidates.append(max(limit - usage, 0))
    if not candidates:
        return total_memory_bytes()
    return min(candidates)


def default_local_driver_memory(memory_bytes: Optional[int]) -> Optional[str]:
    """``LOCAL_DRIVER_MEMORY_SHARE`` of ``memory_bytes`` (the memory available now) in whole GiB
    (at least 1g), or None.

    Spark's own default is 1g whatever the machine, which is what made a 1.5 GB input die with
    ``OutOfMemoryError`` on a 24 GiB machine.
    """
    if not memory_bytes:
        return None
    gib = int(memory_bytes * LOCAL_DRIVER_MEMORY_SHARE) >> 30
    return f"{max(1, gib)}g"


def memory_setting_bytes(text: Optional[str]) -> Optional[int]:
    """Bytes of a JVM memory setting such as ``512m``, ``8g`` or ``2048`` (MiB, Spark's default
    unit for driver memory); None if absent or unreadable."""
    if not text:
        return None
    text = str(text).strip().lower().rstrip("b")
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    try:
        if text[-1:] in units:
            return int(float(text[:-1]) * units[text[-1]])
        return int(float(text) * (1 << 20))
    except ValueError:
        return None


def _defaults_file_sets(key: str) -> bool:
    """Whether a spark-defaults.conf that spark-submit would read sets ``key``."""
    directories = [os.environ.get("SPARK_CONF_DIR")]
    if os.environ.get("SPARK_HOME"):
        directories.append(os.path.join(os.environ["SPARK_HOME"], "conf"))
    for directory in filter(None, directories):
        try:
            lines = Path(directory, "spark-defaults.conf").read_text().splitlines()
        except OSError:
            continue
        if any(line.split()[:1] == [key] for line in lines):
            return True
    return False


def local_memory_settings(master: str, conf: Mapping[str, object], environ: Mapping[str, str],
                          memory_bytes: Optional[int], defaults_file_sets: bool = False) -> Dict[str, str]:
    """The driver memory to give a new local session, when the user gave none.

    Applies only to a ``local[...]`` master, and not when the user set ``spark.driver.memory``
    (``conf``, ``--driver-memory``), ``SPARK_DRIVER_MEMORY`` or a spark-defaults.conf entry:
    then Spark's setting stands.
    """
    if not master.startswith("local") or "spark.driver.memory" in conf or environ.get("SPARK_DRIVER_MEMORY"):
        return {}
    if defaults_file_sets:
        return {}
    memory = default_local_driver_memory(memory_bytes)
    return {"spark.driver.memory": memory} if memory else {}


#: Spark's log configuration for a session the CLI starts: Spark's errors only, on stderr (``--verbose``: Spark's own).
QUIET_LOG4J = Path(__file__).with_name("log4j2-quiet.properties")


def quiet_log_settings(conf: Mapping[str, object]) -> Dict[str, object]:
    """``conf`` plus what keeps Spark's own INFO/WARN lines (hostname, truncated plans, large task
    binaries) off the terminal of a session this process starts: a driver JVM this process
    launches gets :data:`QUIET_LOG4J` from its first line on. Under ``spark-submit`` the JVM is
    already running (its command line owns it: ``--driver-java-options``), so
    ``spark.log.level=ERROR`` quiets Spark from the SparkContext's start. Nothing changes with a
    SparkContext already running or a Spark Connect remote; the user's own settings win, and a
    user's ``spark.driver.extraJavaOptions`` is kept, ours added in front.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if (os.environ.get("SPARK_REMOTE") or SparkContext._active_spark_context is not None
            or SparkSession.getActiveSession() is not None):
        return dict(conf)
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return {"spark.log.level": "ERROR", **conf}
    option = f"-Dlog4j.configurationFile={QUIET_LOG4J.as_uri()}"
    own = str(conf.get("spark.driver.extraJavaOptions", "")).strip()
    return {**conf, "spark.driver.extraJavaOptions": f"{option} {own}".strip()}


def get_spark(master: Optional[str] = None, app_name: str = "sparkfs", conf: Optional[Mapping[str, object]] = None):
    """Return the active SparkSession, or build one (``master`` defaults to ``local[*]``).

    Under ``spark-submit`` the master and configuration come from the submit command and are
    not overridden unless given here. A new local session gets half the memory available now as
    driver memory unless the user set one (:func:`local_memory_settings`).
    """
    ensure_python_workers()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None and not conf:
        return active
    builder = SparkSession.builder.appName(app_name)
    conf = dict(conf or {})
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit owns the master and the JVM
    if master is None and not under_submit:
        master = os.environ.get("SPARKFS_MASTER", "local[*]")
    if master is not None:
        builder = builder.master(master)
    memory = {}
    if master is not None and not under_submit and active is None:
        memory = local_memory_settings(master, conf, os.environ, available_memory_bytes(),
                                       _defaults_file_sets("spark.driver.memory"))
    defaults = {"spark.sql.execution.arrow.pyspark.enabled": "true", "spark.ui.showConsoleProgress": "false"}
    settings = {**defaults, **memory, **conf}
    for key, value in settings.items():
        builder = builder.config(key, str(value))
    if active is None:  # a running JVM keeps the memory it started with
        applied_settings.clear()
        applied_settings.update({key: str(value) for key, value in settings.items()
                                 if key.startswith(("spark.driver.", "spark.executor."))})
    return builder.getOrCreate()
