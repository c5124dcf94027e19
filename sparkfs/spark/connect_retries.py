"""How long a Spark Connect session retries a server that does not answer, and what is known once
the server has gone.

The Connect client retries a call that finds its server unavailable (gRPC ``UNAVAILABLE``) for more
than ten minutes (15 retries, the waits growing to a minute), and so does every later call: once a
server has died, the clean-up of the failed command (unpersisting its frames, cancelling its
operation, releasing results, the client's exit hook, the join of the release threads at exit)
would wait on it for many minutes each. A session sparkfs opens retries an unavailable server for
at most :data:`RETRY_SECONDS` per call instead (:func:`bounded_retries`). A call that gives up marks
the server lost (:class:`ServerWatch`), and so does a failure that says the server's Spark stopped,
or a call cut short after which the server does not answer (:func:`lost_server`): from then on no
call retries, the channel is closed (a later call fails at once, with no network round trip), and
the command's failure says that the server went away (:func:`sparkfs.spark.failures.resource_failure`).
A command that is stopping (SIGINT, SIGTERM: :func:`stop_retrying`) retries nothing either: its
clean-up tries each call once, and so does the rest of the process (a new session's watch retries
again).
"""

from __future__ import annotations

import threading
import time
from typing import Optional

#: Seconds one call retries a server that is unavailable before the server is taken as lost: long
#: enough for a network hiccup, short enough that a command on a dead server ends within half a minute.
RETRY_SECONDS = 20.0


class ServerWatch:
    """What this process knows of its Spark Connect server: its URL, whether calls may still retry
    it, and whether it is lost (with the gRPC reason of the call that gave up)."""

    def __init__(self, url: str, session) -> None:
        self.url = url
        self.session = session
        self.client = session.client
        self.retrying = True
        self.lost = False
        self.reason: Optional[str] = None
        self._lock = threading.Lock()

    def mark_lost(self, reason: str) -> None:
        """Take the server as lost (once): no more retries, and its channel closed from another
        thread (closing waits for the client's pending release calls, which may include this one)."""
        with self._lock:
            if self.lost:
                return
            self.lost, self.retrying, self.reason = True, False, reason
        threading.Thread(target=close_client, args=(self.client,), name="sparkfs-close-connect", daemon=True).start()


def close_client(client) -> None:
    """Close a Connect client's channel, so that no later call (the client's exit hook among them)
    asks its server anything."""
    try:
        client.close()
    except Exception:  # best effort: the session is being given up
        pass


_watched: dict = {"watch": None}


def watched() -> Optional[ServerWatch]:
    """The watch of the Spark Connect session this process opened last, or None (a classic session,
    or a Connect session closed by its user: its server has nothing to say of later failures)."""
    watch = _watched["watch"]
    if watch is not None and not watch.lost and getattr(watch.client, "is_closed", False):
        return None
    return watch


def server_lost() -> bool:
    """Whether this process's Spark Connect server is known to be lost: calls to it are skipped."""
    watch = watched()
    return watch is not None and watch.lost


def stop_retrying() -> None:
    """The command is stopping (a signal): every call to the server is tried once, not retried."""
    watch = watched()
    if watch is not None:
        watch.retrying = False


def is_unavailable(error: BaseException) -> bool:
    """Whether ``error`` is gRPC's ``UNAVAILABLE``: the server cannot be reached (it went away, or
    the network to it broke), raw or as the Connect client reports it."""
    import grpc

    if isinstance(error, grpc.RpcError) and hasattr(error, "code"):
        return error.code() == grpc.StatusCode.UNAVAILABLE
    status = getattr(error, "getGrpcStatusCode", None)
    return callable(status) and status() == grpc.StatusCode.UNAVAILABLE


#: A Connect server's words for its own Spark stopping under a running command (a graceful stop of
#: the server): the server is going away.
_SERVER_STOPPING = ("SparkContext was shut down", "Cannot call methods on a stopped SparkContext",
                    "SparkContext has been shutdown")
#: The modules of the errors a Spark Connect client raises (a classic session's say nothing of a server).
_CONNECT_ERRORS = ("pyspark.errors.exceptions.connect", "grpc")
#: gRPC's words for a call that ended without the server's answer (a stream cut, a connection reset):
#: the server is asked once more before it is called lost (a stopping server cuts its streams).
_TRANSPORT_FAILURE = "of RPC that terminated with"


def lost_server(error: BaseException) -> Optional[ServerWatch]:
    """The watch of this process's Spark Connect server if the server is lost: known already (a
    call gave up on it), or said by ``error`` or an error it was raised from (gRPC ``UNAVAILABLE``;
    the server's Spark shut down under a Connect call; a call cut short, after which the server
    does not answer); the server is then marked lost, so that the clean-up that follows skips it.
    None on a classic session or for any other failure."""
    watch = watched()
    if watch is None or watch.lost:
        return watch
    links = []
    while error is not None and all(error is not link for link in links):
        links.append(error)
        error = error.__cause__ or error.__context__
    unavailable = next((link for link in links if is_unavailable(link)), None)
    if unavailable is not None:
        watch.mark_lost(grpc_reason(unavailable))
        return watch
    for link in links:
        stopping = next((words for words in _SERVER_STOPPING if words in _text(link)), None)
        if stopping is not None and type(link).__module__.startswith(_CONNECT_ERRORS):
            watch.mark_lost(f"its Spark stopped: {stopping}")
            return watch
    broken = next((link for link in links if _TRANSPORT_FAILURE in _text(link)), None)
    if broken is not None and not _answers(watch):  # a call broke: is the server still there?
        watch.mark_lost(grpc_reason(broken))
        return watch
    return None


def _answers(watch: ServerWatch) -> bool:
    """Whether the server still runs a job (of one row), retried as any call is: a server that has
    gone is marked lost by the retries that give up. A job, not its version: a stopping server
    still says its version after its Spark has stopped."""
    try:
        watch.session.range(1).collect()
    except Exception:  # whatever the channel says, the server did not run it
        return False
    return True


def _text(error: BaseException) -> str:
    try:
        return str(error)
    except Exception:  # an error whose text cannot be read says nothing here
        return ""


def grpc_reason(error: BaseException) -> str:
    """The gRPC status and details of a failed call on one line (the error's own text spans many)."""
    import re

    text = str(error)
    status = re.search(r"StatusCode\.(\w+)", text)
    details = re.search(r'details = "([^"]*)"', text)
    if status:
        return status.group(1) + (f": {details.group(1)}" if details else "")
    return (text.splitlines() or [type(error).__name__])[0]


def bounded_retries(watch: ServerWatch, seconds: float = RETRY_SECONDS):
    """The retry policy of a sparkfs Connect session: the Connect client's default rules of what
    to retry, waits from 0.25 s doubling to 2 s, for at most ``seconds`` per call; none once the
    server is lost or the command is stopping."""
    from pyspark.sql.connect.client.retries import DefaultPolicy, RetryPolicyState

    class _BoundedState(RetryPolicyState):
        def __init__(self, policy) -> None:
            super().__init__(policy)
            self.first_failure: Optional[float] = None

        def next_attempt(self, exception: Optional[BaseException] = None) -> Optional[int]:
            now = time.monotonic()
            if self.first_failure is None:
                self.first_failure = now
            wait = super().next_attempt(exception)
            if wait is not None and now - self.first_failure + wait / 1000 <= seconds:
                return wait
            if exception is not None and is_unavailable(exception):
                watch.mark_lost(grpc_reason(exception))
            return None

    class BoundedRetries(DefaultPolicy):
        """The client's default policy, bounded in time and aware of a lost server."""

        def __init__(self) -> None:
            super().__init__(max_retries=None, initial_backoff=250, backoff_multiplier=2.0, max_backoff=2000,
                             jitter=250, min_jitter_threshold=1000, max_server_retry_delay=2000)

        def can_retry(self, e: BaseException) -> bool:
            return watch.retrying and super().can_retry(e)

        def to_state(self) -> RetryPolicyState:
            return _BoundedState(self)

    return BoundedRetries()


def watch_server(url: str, session) -> ServerWatch:
    """Make a Connect ``session``'s client retry at most :data:`RETRY_SECONDS` per call, and return
    the watch of its server that this process's failures and clean-up consult."""
    import warnings

    watch = ServerWatch(url, session)
    watch.client.set_retry_policies([bounded_retries(watch)])
    # The client's own words when a call gives up: the command reports the lost server itself.
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")
    _watched["watch"] = watch
    return watch
