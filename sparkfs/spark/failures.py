"""Spark failures that are not about the input: out of memory, a JVM that stopped.

They reach the user as what they are, with the setting to change, instead of the last symptom
(a ``ConnectionRefusedError`` once the JVM is gone, or a long Java stack trace).
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional

from sparkfs.errors import SparkResourceError

_OUT_OF_MEMORY = ("OutOfMemoryError", "Java heap space", "GC overhead limit exceeded",
                  "exceeding memory limits", "Container killed on request. Exit code is 137")
_JVM_GONE = ("ConnectionRefusedError", "Py4JNetworkError", "Answer from Java side is empty",
             "Error while receiving", "Java gateway process exited", "SparkContext was shut down",
             "Cannot call methods on a stopped SparkContext", "Connection reset by peer")


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def describe(error: BaseException) -> str:
    """``Type: message`` of an error, safely: a Py4J error fetches its text from the JVM, which
    fails (ConnectionRefusedError) once the JVM is gone."""
    try:
        return f"{type(error).__name__}: {error}"
    except Exception as unreadable:  # noqa: BLE001 - any failure to read the text is itself the clue
        return f"{type(error).__name__}: (its text cannot be read from the JVM: {type(unreadable).__name__})"


def _memory_now() -> str:
    from sparkfs.spark.session import applied_settings

    memory = applied_settings.get("spark.driver.memory")
    return f" (this session had spark.driver.memory={memory})" if memory else ""


def resource_failure(error: BaseException) -> Optional[SparkResourceError]:
    """A :class:`SparkResourceError` naming the setting to change, or None for other failures."""
    text = " ".join(describe(link) for link in _chain(error))
    if any(pattern in text for pattern in _OUT_OF_MEMORY):
        return SparkResourceError(
            "Spark ran out of memory (java.lang.OutOfMemoryError)" + _memory_now() + ". Give it more: "
            "--driver-memory 8g (or spark.driver.memory in the job config's spark.conf) with a local master, "
            "spark.executor.memory on a cluster; a smaller blockSize or sampleSize also lowers the memory per task")
    if any(pattern in text for pattern in _JVM_GONE):
        return SparkResourceError(
            "the Spark JVM stopped during the job" + _memory_now() + " (most often java.lang.OutOfMemoryError: "
            "see the Java messages above). Give it more memory: --driver-memory 8g (or spark.driver.memory in "
            "the job config's spark.conf) with a local master, spark.executor.memory on a cluster")
    return None


def with_resource_errors(action: Callable[[], Any]):
    """Run ``action``; a Spark failure for lack of memory (or a dead JVM) becomes a
    :class:`SparkResourceError` naming the setting; input errors and other failures pass as they are."""
    from sparkfs.errors import InvalidInputError

    try:
        return action()
    except (InvalidInputError, ValueError, SparkResourceError):
        raise
    except Exception as error:
        resources = resource_failure(error)
        if resources is None:
            raise
        raise resources from error
