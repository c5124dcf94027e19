"""SparkSession construction with the settings sparkfs relies on."""

from __future__ import annotations

import os
import sys
from typing import Mapping, Optional


def ensure_python_workers() -> None:
    """Make Spark's Python workers run this interpreter (the venv's), not the system python3.

    Without it, pandas/Arrow UDFs fail with ``No module named 'pandas'`` when sparkfs runs from
    a virtual environment that is not activated. An explicit user setting is left alone.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def get_spark(master: Optional[str] = None, app_name: str = "sparkfs", conf: Optional[Mapping[str, object]] = None):
    """Return the active SparkSession, or build one (``master`` defaults to ``local[*]``).

    Under ``spark-submit`` the master and configuration come from the submit command and are
    not overridden unless given here.
    """
    ensure_python_workers()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None and not conf:
        return active
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    elif "PYSPARK_GATEWAY_PORT" not in os.environ:  # set by spark-submit, which owns the master
        builder = builder.master(os.environ.get("SPARKFS_MASTER", "local[*]"))
    defaults = {"spark.sql.execution.arrow.pyspark.enabled": "true", "spark.ui.showConsoleProgress": "false"}
    for key, value in {**defaults, **(conf or {})}.items():
        builder = builder.config(key, str(value))
    return builder.getOrCreate()
