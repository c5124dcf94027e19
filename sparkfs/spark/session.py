"""SparkSession construction with the settings sparkfs relies on."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict, Mapping, Optional

#: Share of the machine's memory a local driver JVM may use when the user set none (the local
#: master runs every task inside the driver JVM, so its heap is the whole cluster's memory).
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


def available_memory_bytes() -> Optional[int]:
    """Physical memory, or the container's (cgroup) limit when that is lower; None if unknown."""
    candidates = []
    try:
        candidates.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    for limit_file in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            candidates.append(int(text))
    return min(candidates) if candidates else None


def default_local_driver_memory(memory_bytes: Optional[int]) -> Optional[str]:
    """``LOCAL_DRIVER_MEMORY_SHARE`` of ``memory_bytes`` in whole GiB (at least 1g), or None.

    Spark's own default is 1g whatever the machine, which is what made a 1.5 GB input die with
    ``OutOfMemoryError`` on a 24 GiB machine.
    """
    if not memory_bytes:
        return None
    gib = int(memory_bytes * LOCAL_DRIVER_MEMORY_SHARE) >> 30
    return f"{max(1, gib)}g"


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


def get_spark(master: Optional[str] = None, app_name: str = "sparkfs", conf: Optional[Mapping[str, object]] = None):
    """Return the active SparkSession, or build one (``master`` defaults to ``local[*]``).

    Under ``spark-submit`` the master and configuration come from the submit command and are
    not overridden unless given here. A new local session gets half the machine's memory as
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
