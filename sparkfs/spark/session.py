"""SparkSession construction with the settings sparkfs relies on."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Dict, Mapping, Optional

from sparkfs.spark.connect_retries import close_client, grpc_reason, watch_server
from sparkfs.spark.failures import redacted
from sparkfs.spark.memory import applied_settings, available_memory_bytes, defaults_file_sets, local_memory_settings

#: Masters whose executors run on this machine (``local``, ``local[N]``, ``local[*]``,
#: ``local-cluster[N,C,M]``): there the driver's interpreter is a right default for the Python workers.
LOCAL_MASTER_PREFIX = "local"


def python_workers_environ(master: Optional[str], conf: Mapping[str, object], environ: Mapping[str, str],
                           executable: str, under_submit: bool) -> Dict[str, str]:
    """The ``PYSPARK_PYTHON`` (and ``PYSPARK_DRIVER_PYTHON``) a new session this process starts
    must see, as a mapping of environment variables to set while it starts (empty: leave them).

    PySpark's driver takes the executors' Python from ``PYSPARK_PYTHON`` alone
    (``SparkContext.pythonExec``); ``spark.pyspark.python`` is read only by ``spark-submit``, which
    puts it into ``PYSPARK_PYTHON`` before it starts the driver's Python. So:

    - under ``spark-submit`` nothing is set: it has already applied ``spark.pyspark.python`` or the
      user's ``PYSPARK_PYTHON``;
    - ``spark.pyspark.python`` in ``conf`` (``--conf``, the job config) becomes ``PYSPARK_PYTHON``,
      as ``spark-submit`` does (it wins over the variable there too): that is how
      ``spark.archives=env.tar.gz#environment`` with ``spark.pyspark.python=./environment/bin/python``
      reaches the executors;
    - else a ``PYSPARK_PYTHON`` the user set stands;
    - else, with a local master only, this interpreter (a venv's, not the system python3, which
      lacks pandas); on any other master the executors' own ``python3``, as Spark's default: a
      path on this machine means nothing on another.
    """
    if under_submit:
        return {}
    if conf.get("spark.pyspark.python"):
        return {"PYSPARK_PYTHON": str(conf["spark.pyspark.python"])}
    if environ.get("PYSPARK_PYTHON") or not (master or "").startswith(LOCAL_MASTER_PREFIX):
        return {}
    settings = {"PYSPARK_PYTHON": executable}
    if not environ.get("PYSPARK_DRIVER_PYTHON"):
        settings["PYSPARK_DRIVER_PYTHON"] = executable
    return settings


class _with_environ:
    """Set environment variables while a session is built (then restore them): the executors'
    Python is read once, when the SparkContext starts, and must not leak into the next session
    this process starts (a notebook's, a test's)."""

    def __init__(self, settings: Mapping[str, str]):
        self.settings = dict(settings)

    def __enter__(self):
        self.saved = {name: os.environ.get(name) for name in self.settings}
        os.environ.update(self.settings)

    def __exit__(self, *exc):
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        return False


#: Settings a Spark Connect client cannot change: the server's JVMs are already running (they are
#: the server's own settings), so a remote session does not send them and says so.
REMOTE_IGNORED_PREFIXES = ("spark.driver.", "spark.executor.")
#: The master prefixes spark-submit accepts ("Master must either be yarn or start with spark, k8s,
#: or local"); another one makes its JVM exit before Python hears why.
SUBMIT_MASTER_PREFIXES = ("yarn", "spark", "k8s", "local")
#: Seconds to wait for a Spark Connect server to accept a connection before giving up (the Connect
#: client itself retries an unreachable server with growing waits for many minutes).
REMOTE_CONNECT_TIMEOUT = 5.0


def connect_endpoint(url: str):
    """(host, port) of a Spark Connect URL ``sc://HOST[:PORT][/;param=value...]`` (port 15002 by
    default, as the Connect client's); a :class:`SparkMasterError` for anything else."""
    from urllib.parse import urlparse

    from sparkfs.errors import SparkMasterError

    parsed = urlparse("http" + url[2:]) if url.startswith("sc://") else None
    try:
        port = parsed.port if parsed is not None else None
    except ValueError:  # a port that is not a number, or out of range
        parsed = None
    if parsed is None or not parsed.hostname or parsed.path not in ("", "/"):
        raise SparkMasterError(f"the Spark Connect URL '{redacted(url)}' is not of the form sc://HOST:PORT "
                               "(e.g. sc://localhost:15002)")
    return parsed.hostname, port or 15002


def check_remote_reachable(url: str, timeout: float = REMOTE_CONNECT_TIMEOUT) -> None:
    """Refuse (:class:`SparkStartError`) a Spark Connect server that does not accept a TCP
    connection within ``timeout`` seconds, naming the URL and what to check."""
    import socket

    from sparkfs.errors import SparkStartError

    host, port = connect_endpoint(url)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as error:
        reason = "timed out" if isinstance(error, socket.timeout) else (error.strerror or type(error).__name__)
        raise SparkStartError(
            f"cannot reach the Spark Connect server {redacted(url)} ({host}:{port}: {reason}; waited at most "
            f"{timeout:g} s): "
            "check that the server is running (sbin/start-connect-server.sh), its host and port "
            "(spark.connect.grpc.binding.port, default 15002) and that no firewall is in between") from None


def remote_session(url: str, conf: Optional[Mapping[str, object]] = None):
    """A Spark Connect session on ``url`` (``sc://HOST:PORT``), after checking the server answers.

    Only SQL-level settings travel: ``spark.driver.*`` and ``spark.executor.*`` belong to the
    server's JVMs and are not sent (logged as ignored), and no driver memory default is computed;
    the server keeps its own application name.
    """
    import logging

    from sparkfs.errors import SparkStartError
    from sparkfs.spark.failures import describe

    check_remote_reachable(url)
    from pyspark.sql import SparkSession

    conf = dict(conf or {})
    ignored = sorted(key for key in conf if key.startswith(REMOTE_IGNORED_PREFIXES))
    if ignored:
        logging.getLogger("sparkfs").warning(
            "remote session %s: ignored %s (settings of the server's JVMs: set them where the Connect server "
            "starts)", redacted(url), ", ".join(ignored))
    settings = {"spark.sql.execution.arrow.pyspark.enabled": "true",
                **{key: str(value) for key, value in conf.items() if key not in ignored}}
    applied_settings.clear()
    try:
        with _without_environ("MASTER"):  # a MASTER in the environment would make Spark refuse the remote
            session = SparkSession.builder.remote(url).getOrCreate()  # no call to the server yet
    except Exception as error:  # e.g. a classic session already runs in this process
        raise SparkStartError(redacted(f"cannot open a Spark Connect session on {url}: {describe(error)}")) from None
    from pyspark.sql.connect.client.retries import DefaultPolicy

    client = session.client
    # The first call: a port that accepts but is no Connect server is retried twice, for about a second.
    client.set_retry_policies([DefaultPolicy(max_retries=2, initial_backoff=200, max_backoff=1000)])
    try:
        _ = session.version  # reading it asks the server
    except Exception as error:  # whatever the server or the channel said
        close_client(client)
        raise SparkStartError(f"the Spark Connect server {redacted(url)} did not answer as one "
                              f"({redacted(grpc_reason(error))}): "
                              "check that HOST:PORT is a Spark Connect server's (spark.connect.grpc.binding.port) "
                              "and whether it needs use_ssl or a token (sc://HOST:PORT/;use_ssl=true;token=...)"
                              ) from None
    watch_server(url, session)  # from here on, a lost server ends the command within seconds
    for key, value in settings.items():
        try:
            session.conf.set(key, value)
        except Exception as error:  # a static setting the server will not change
            logging.getLogger("sparkfs").warning("remote session %s: ignored %s (%s)", redacted(url), key,
                                                 describe(error).splitlines()[0])
    return session


class _without_environ:
    """Hide an environment variable while a session is built (then restore it)."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.value = os.environ.pop(self.name, None)

    def __exit__(self, *exc):
        if self.value is not None:
            os.environ[self.name] = self.value
        return False


def master_rejection(master: Optional[str], error: BaseException):
    """A :class:`SparkMasterError` when ``error`` (raised while a new session started) is Spark
    refusing ``master``, else None. spark-submit refuses a master of an unknown kind by exiting
    before Python hears why (``JAVA_GATEWAY_EXITED``); SparkContext refuses a malformed one with
    ``Could not parse Master URL``."""
    from sparkfs.errors import SparkMasterError

    if not master:
        return None
    text = str(error)
    if "Could not parse Master URL" in text:
        reason = "Spark could not parse it"
    elif "JAVA_GATEWAY_EXITED" in text and not master.startswith(SUBMIT_MASTER_PREFIXES):
        reason = "a master must be yarn or start with spark, k8s or local"
    else:
        return None
    return SparkMasterError(
        f"Spark rejected the master '{master}': {reason}. Use local[*], local[N], spark://HOST:PORT, yarn or "
        "k8s://HOST:PORT, or --remote sc://HOST:PORT for a Spark Connect server")




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


def get_spark(master: Optional[str] = None, app_name: str = "sparkfs", conf: Optional[Mapping[str, object]] = None,
              remote: Optional[str] = None):
    """Return the active SparkSession, or build one (``master`` defaults to ``local[*]``).

    ``remote`` (``sc://HOST:PORT``), else ``SPARK_REMOTE`` when no ``master`` is given, connects to
    a Spark Connect server instead (:func:`remote_session`); a ``master`` given explicitly wins
    over ``SPARK_REMOTE``, and a ``master`` of the form ``sc://...`` is taken as a remote. Under
    ``spark-submit`` the master and configuration come from the submit command and are not
    overridden unless given here. A new local session gets half the memory available now as
    driver memory unless the user set one (:func:`local_memory_settings`). Its Python workers run
    this interpreter with a local master only (:func:`python_workers_environ`). A master Spark
    refuses is a :class:`SparkMasterError` (:func:`master_rejection`).
    """
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit owns the master and the JVM
    if remote is None and master is None and not under_submit and os.environ.get("SPARK_REMOTE"):
        remote = os.environ["SPARK_REMOTE"]
    if master is None and not under_submit:
        master = os.environ.get("SPARKFS_MASTER") if os.environ.get("SPARKFS_MASTER", "").startswith("sc://") else None
    if remote is None and master is not None and master.startswith("sc://"):  # a Connect URL given as master
        master, remote = None, master
    if remote is not None:
        return remote_session(remote, conf)
    with _without_environ("SPARK_REMOTE"):  # the master given here wins (Spark refuses both)
        return _classic_session(master, app_name, dict(conf or {}), under_submit)


def _classic_session(master: Optional[str], app_name: str, conf: Dict[str, object], under_submit: bool):
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None and master is None and not conf:
        return active
    builder = SparkSession.builder.appName(app_name)
    if master is None and not under_submit:
        master = os.environ.get("SPARKFS_MASTER", "local[*]")
    if master is not None:
        builder = builder.master(master)
    memory = {}
    if master is not None and not under_submit and active is None:
        memory = local_memory_settings(master, conf, os.environ, available_memory_bytes(),
                                       defaults_file_sets("spark.driver.memory"))
    defaults = {"spark.sql.execution.arrow.pyspark.enabled": "true", "spark.ui.showConsoleProgress": "false"}
    settings = {**defaults, **memory, **conf}
    for key, value in settings.items():
        builder = builder.config(key, str(value))
    if active is None:  # a running JVM keeps the memory it started with
        applied_settings.clear()
        applied_settings.update({key: str(value) for key, value in settings.items()
                                 if key.startswith(("spark.driver.", "spark.executor."))})
    workers = python_workers_environ(master, conf, os.environ, sys.executable, under_submit) if active is None else {}
    try:
        with _with_environ(workers):
            return builder.getOrCreate()
    except Exception as error:
        rejected = master_rejection(master, error) if active is None else None
        if rejected is None:
            raise
        raise rejected from None
