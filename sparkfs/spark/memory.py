"""What memory this machine and the session have: the driver memory default of a local session,
the memory available now (the kernel's and the container's), the settings a session was given and
the one it had, read by the failure messages (:mod:`sparkfs.spark.failures`) and the session
builder (:mod:`sparkfs.spark.session`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, Mapping, Optional

#: Share of the memory available NOW (not the machine's total) a local driver JVM may use when the
#: user set none (the local master runs every task inside the driver JVM, so its heap is the whole
#: cluster's memory; the Python workers and the OS need the rest).
LOCAL_DRIVER_MEMORY_SHARE = 0.5
#: What the last session built here was given (reported in summaries and failure messages).
applied_settings: Dict[str, str] = {}
#: The driver memory of the session the last fit ran on (read while its JVM was alive), for the
#: advice after a JVM that died: a session the user built (a notebook's) is not in applied_settings.
observed_driver_memory: Dict[str, Optional[str]] = {"spark.driver.memory": None}


def observe_driver_memory(spark) -> None:
    """Note the session's ``spark.driver.memory`` (None when unset or unreadable); one conf read."""
    try:
        value = spark.conf.get("spark.driver.memory", None)
    except Exception:  # a session whose conf cannot be read gives no advice, not an error
        value = None
    observed_driver_memory["spark.driver.memory"] = value or None


def driver_memory_setting() -> Optional[str]:
    """The driver memory the current session had: set by sparkfs, else read from the session."""
    return applied_settings.get("spark.driver.memory") or observed_driver_memory["spark.driver.memory"]


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


def defaults_file_sets(key: str) -> bool:
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
    """The driver memory to give a new local session, when the user gave none, and half of it as
    ``spark.driver.maxResultSize`` (the results a job may send to the driver) unless set.

    Applies only to a ``local[...]`` master, and not when the user set ``spark.driver.memory``
    (``conf``, ``--driver-memory``), ``SPARK_DRIVER_MEMORY`` or a spark-defaults.conf entry:
    then Spark's setting stands.
    """
    if not master.startswith("local") or "spark.driver.memory" in conf or environ.get("SPARK_DRIVER_MEMORY"):
        return {}
    if defaults_file_sets:
        return {}
    memory = default_local_driver_memory(memory_bytes)
    if not memory:
        return {}
    settings = {"spark.driver.memory": memory}
    if "spark.driver.maxResultSize" not in conf:
        # Spark's 1g would refuse a query sample that driverBudgetMB (2048 by default) allows
        settings["spark.driver.maxResultSize"] = f"{max(1, int(memory[:-1]) // 2)}g"
    return settings
