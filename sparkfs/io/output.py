"""Atomic output of a selection run: ``features.parquet`` and ``summary.json`` in one directory.

Everything is written into a hidden sibling directory first and renamed into place at the end,
so a failed run leaves no partial output directory. The output holds one row per feature and is
written from the driver:

* a plain path (``out/run1``) goes to the driver's local disk, with pyarrow;
* a URI (``hdfs://...``, ``s3a://...``, ``abfss://...``, ``dbfs:/...``, ``file:///...``) goes
  through the Hadoop ``FileSystem`` of the Spark session, so it reaches whatever store the
  cluster is configured for, with the cluster's credentials. Both files are serialised before
  anything is written. The final rename is atomic on HDFS and local disks; on object stores
  (S3, ABFS without hierarchical namespace) a directory rename is a copy, so a crash during that
  copy can leave a partial directory.

``summary.json`` carries the marker of the command that wrote it, and an existing output is
replaced (``--overwrite``) only when that marker says the same command wrote it and it holds
nothing else: the rules are :mod:`sparkfs.io.output_safety`'s.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import os
import shutil
import uuid
from typing import Any, Callable, Dict, Iterable, List, Optional, Union

import numpy as np

try:
    import fcntl
except ImportError:  # Windows: no lock (replace_lock's doc)
    fcntl = None  # type: ignore[assignment]  # checked before each use

from sparkfs import progress
from sparkfs.errors import SparkResourceError
from sparkfs.io import strict_json
from sparkfs.io.output_safety import (  # noqa: F401
    KINDS,
    OutputExistsError,
    check_location,
    check_replaceable,
    marker,
    remove_replaced,
)
from sparkfs.io.stores import HadoopStore, LocalStore, Location, local_path_of, location_of, locations_of, open_store

log = logging.getLogger("sparkfs")


class OutputNotWritableError(ValueError):
    """The output directory cannot be created where it is asked for."""


class OutputWriteError(SparkResourceError, OSError):
    """Writing the output failed on its file system (a full disk, a quota, an I/O error): exit 1,
    the message names the file; nothing is left of the staging directory. ``errno`` is the
    cause's (``errno.ENOSPC`` for a full disk) when known."""


# The stores live in sparkfs.io.stores; these names stay for callers and tests of this module.
_LocalStore, _HadoopStore, _open_store = LocalStore, HadoopStore, open_store


#: Free bytes a local output's file system must have before any work: the smallest output (a
#: features table and a summary) takes tens of KiB; below this even that would likely fail.
MIN_FREE_BYTES = 1 << 20


def _free_bytes(folder: str) -> Optional[int]:
    """Free bytes for this user on ``folder``'s file system, or None when it cannot be told."""
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def _check_local_writable(target: str) -> None:
    """Refuse, before any work, a local output that cannot be created: one below an existing
    file (``afile.txt/sub``), whose nearest existing parent refuses a new directory (a
    scratch directory is created and removed there), or whose file system has less than
    :data:`MIN_FREE_BYTES` free."""
    parent = os.path.dirname(target)
    while parent and not os.path.lexists(parent):
        parent = os.path.dirname(parent) if os.path.dirname(parent) != parent else ""
    if parent and not os.path.isdir(parent):
        what = "a symbolic link to nothing" if not os.path.exists(parent) else "a file"
        raise OutputNotWritableError(f"output directory {target} cannot be created: {parent} is {what}, not a "
                                     "directory; choose another --output")
    probe = os.path.join(parent or ".", f".sparkfs-write-check-{uuid.uuid4().hex}")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
    except OSError as error:
        raise OutputNotWritableError(f"output directory {target} is not writable: cannot create a directory in "
                                     f"{parent or '.'} ({error.strerror})") from None
    free = _free_bytes(parent or ".")
    if free is not None and free < MIN_FREE_BYTES:
        raise OutputNotWritableError(f"output directory {target}: the file system of {parent or '.'} has {free:,} "
                                     f"bytes free, less than the {MIN_FREE_BYTES:,} an output needs; free space "
                                     "there or choose another --output")


def check_output_free(path: Union[str, Location], overwrite: bool, spark=None, *, command: str = "select",
                      inputs: Iterable[Union[str, Location, None]] = ()) -> str:
    """Refuse, before any work, an output that breaks the rules of
    :mod:`sparkfs.io.output_safety`: one that is, contains or lies inside one of ``inputs`` (or
    the current or home directory, or a root), or an existing path that is not a directory
    ``command`` wrote (any existing path without ``overwrite``).

    Returns the resolved target: an absolute local path, or the fully qualified URI (which needs
    ``spark`` to reach the Hadoop file system).
    """
    output, sources = location_of(path), locations_of(inputs)
    local = output.local is not None
    if local:  # a path or a file: URI, compared with realpath, even before a session exists
        check_location(output, sources)
    store = open_store(output, spark)
    try:
        if not local:
            check_location(output, sources, store=store)
        check_replaceable(store, command, overwrite)
        if isinstance(store, LocalStore):
            _check_local_writable(store.target)
        return store.uri(store.target)
    finally:
        store.close()


def check_output_early(path: Union[str, Location], overwrite: bool, *, command: str = "select",
                       inputs: Iterable[Union[str, Location, None]] = ()) -> bool:
    """What :func:`check_output_free` can check before a Spark session exists: everything for a
    local path, rule 1 for a ``file:`` URI. Returns True when the output is fully checked; call
    :func:`check_output_free` with the session otherwise."""
    output, sources = location_of(path), locations_of(inputs)
    if output.plain:
        check_output_free(output, overwrite, command=command, inputs=sources)
        return True
    if output.local is not None:
        check_location(output, sources)
    return False


def features_table(scores, selected: List[int], names: Optional[List[str]] = None, p_values=None, forced=()):
    """index, name, score, rank (1 = best), selected, forced (kept whatever its score: ``--keep``)
    — one row per feature, in index order — and p_value for the methods with p-values."""
    import pandas as pd

    from sparkfs.core.selection import rank_features

    scores = np.asarray(scores, dtype=np.float64)
    ranks = np.empty(scores.shape[0], dtype=np.int64)
    ranks[rank_features(scores)] = np.arange(1, scores.shape[0] + 1)
    mask = np.zeros(scores.shape[0], dtype=bool)
    mask[list(selected)] = True
    names = names if names is not None else [f"f{i}" for i in range(scores.shape[0])]
    return pd.DataFrame({
        "index": np.arange(scores.shape[0], dtype=np.int32),
        "name": pd.Series(names, dtype=object).astype(str),
        "score": scores,
        "rank": ranks.astype(np.int32),
        "selected": mask,
        "forced": np.isin(np.arange(scores.shape[0]), np.asarray(list(forced), dtype=np.int64)),
        **({} if p_values is None else {"p_value": np.asarray(p_values, dtype=np.float64)}),
    })


def write_selection_output(path: str, table, summary: Dict[str, Any], overwrite: bool = False, spark=None,
                           model: Optional[Dict[str, bytes]] = None) -> str:
    """Write ``features.parquet`` + ``summary.json`` and the fitted model's files (``model``: relative
    path -> bytes, written below ``model/``) atomically into ``path``; returns the target.

    A URI ``path`` is written through the Hadoop file system of ``spark`` (see the module doc).
    """
    files = {f"model/{name}": payload for name, payload in (model or {}).items()}
    return write_output_files(path, {"features.parquet": table}, summary, overwrite=overwrite, spark=spark,
                              files=files)


def write_output_files(path: str, tables: Dict[str, Any], summary: Dict[str, Any], *, overwrite: bool = False,
                       spark=None, command: str = "select", files: Optional[Dict[str, bytes]] = None) -> str:
    """Write pandas ``tables`` (file name -> DataFrame, as Parquet), ``files`` (relative path ->
    bytes) and ``summary.json`` atomically into the directory ``path`` (staged beside it, then
    renamed); returns the target.

    ``summary.json`` carries the marker of ``command`` (:func:`sparkfs.io.output_safety.marker`);
    with ``overwrite`` an existing directory is replaced only if that command wrote it and it
    holds nothing else, and the old one is removed file by file (the module doc of
    :mod:`sparkfs.io.output_safety`).

    Concurrent writers of one output (two ``--overwrite`` runs at once) are serialised by
    :func:`replace_lock` around the check and the renames: each replaces the output in turn, the
    last one's stays, and neither leaves a hidden old output. A write that fails (a full disk, a
    quota) raises :class:`OutputWriteError` naming the file; the staging directory is removed and
    an existing output is left as it was.
    """
    payloads = {**(files or {}), **_serialised(tables, summary, command)}
    progress.check_interrupted()

    def fill_staging(store, staging, target):
        for name, payload in payloads.items():
            _write_file(store, store.path(staging, name), payload, target)

    return _stage_and_place(path, spark, command, overwrite, fill_staging, payloads=payloads, recheck_may_race=True)


def write_spark_output(path: str, write_data: Callable[[str], None], summary: Dict[str, Any], *, spark,
                       command: str, overwrite: bool = False,
                       before_placing: Optional[Callable[[], None]] = None) -> str:
    """Write a directory whose data files Spark writes (``convert``: ``df.write.parquet``), atomically,
    under the same rules as :func:`write_output_files`; returns the target.

    ``write_data(uri)`` writes the data into ``uri``, a fresh staging directory beside the target
    (a ``file:`` URI for a local output, so the data go to the driver's disk as for every other
    output); the marker file (the kind's ``marker_file``, with ``summary`` as it is once the data are
    written: ``write_data`` may add to it) is added last, then ``before_placing()`` runs (another
    output placed with this one: a failure there places neither), then the staging directory is
    renamed into place under :func:`replace_lock`. A failure at any step removes the staging
    directory and leaves an existing output as it was.
    """
    marker_name = KINDS[command].marker_file

    def fill_staging(store, staging, target):
        uri = store.uri(staging)
        write_data("file://" + uri if isinstance(store, LocalStore) else uri)
        progress.check_interrupted()
        payload = _serialised({}, summary, command)["summary.json"]
        _write_file(store, store.path(staging, marker_name), payload, target)
        if before_placing is not None:
            before_placing()

    return _stage_and_place(path, spark, command, overwrite, fill_staging)


def remove_output(path: str, command: str, spark=None) -> None:
    """Remove an output ``command`` wrote at ``path`` (file by file: anything else there stays), as a
    run that placed it and then failed does."""
    store = open_store(path, spark)
    try:
        if store.exists(store.target):
            _remove_retired(store, store.target, command)
    finally:
        store.close()


def _stage_and_place(path: str, spark, command: str, overwrite: bool, fill_staging, *, payloads=None,
                     recheck_may_race: bool = False) -> str:
    """The tail every output shares: check the target is replaceable (under :func:`replace_lock`,
    briefly), fill a fresh staging directory beside it (``fill_staging(store, staging, target)``), then, under
    :func:`replace_lock`, check again and rename it into place. Any failure (Ctrl-C included)
    removes the staging directory and leaves an existing output as it was.

    ``payloads`` (bytes known in advance) are checked against the free space first;
    ``recheck_may_race`` lets the first check pass when the target vanishes under it (another
    writer renaming its output in place), leaving the decision to the check under the lock.
    """
    store = open_store(path, spark)
    try:
        target = store.target
        try:
            # again: the directory may have changed since the start; under the lock, so that another
            # writer's output is never seen half put in place (its old output renamed away, the new
            # one not yet renamed in: a directory, then nothing, then a directory again)
            with replace_lock(store, target):
                check_replaceable(store, command, overwrite)
        except FileNotFoundError:
            if not recheck_may_race:
                raise
        staging = store.path(store.parent(target), f".{store.name(target)}.tmp-{uuid.uuid4().hex}")
        if payloads is not None:
            _check_room_for(store, payloads, target)
        try:
            fill_staging(store, staging, target)
            progress.check_interrupted()  # Ctrl-C while staging: the staging directory goes, nothing appears
            with replace_lock(store, target):
                check_replaceable(store, command, overwrite)  # another writer may have finished meanwhile
                _put_in_place(store, staging, target, command)
        except BaseException:
            store.delete_staging(staging)
            raise
        return store.uri(target)
    finally:
        store.close()


def _serialised(tables: Dict[str, Any], summary: Dict[str, Any], command: str) -> Dict[str, bytes]:
    """Every file's bytes, before anything is written: an unserialisable summary or table fails first."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    payloads = {}
    for name, table in tables.items():
        parquet_sink = io.BytesIO()
        pq.write_table(pa.Table.from_pandas(table, preserve_index=False), parquet_sink)
        payloads[name] = parquet_sink.getvalue()
    document = {**marker(command), **summary}
    payloads["summary.json"] = strict_json.dumps(document, indent=2, default=_json_default).encode("utf-8")
    return payloads


def _check_room_for(store, payloads: Dict[str, bytes], target) -> None:
    """A local output whose file system has less free space than its files' bytes is refused
    before anything is written (the same failure as a full disk during the write)."""
    if not isinstance(store, LocalStore):
        return
    needed = sum(len(payload) for payload in payloads.values())
    free = _free_bytes(os.path.dirname(store.target) or ".")
    if free is not None and free < needed:
        failure = OutputWriteError(f"cannot write the output {store.uri(target)}: its {len(payloads)} files take "
                                   f"{needed:,} bytes and its file system has {free:,} free; nothing was written; "
                                   "free space there or choose another --output")
        failure.errno = errno.ENOSPC
        raise failure


_WRITE_FAILURES = {errno.ENOSPC: "no space left on the device", errno.EDQUOT: "the disk quota is exceeded"}


def _write_file(store, file_path, payload: bytes, target) -> None:
    """``store.write``, with an OS or Hadoop failure (a full disk above all) named with its path."""
    try:
        store.write(file_path, payload)
    except OSError as error:
        known = _WRITE_FAILURES.get(error.errno) if error.errno is not None else None
        advice = "; free space there or choose another --output" if known else ""
        failure = OutputWriteError(f"cannot write the output {store.uri(target)}: "
                                   f"{known or error.strerror or error} while writing {store.uri(file_path)} "
                                   f"({len(payload):,} bytes); nothing was written{advice}")
        failure.errno = error.errno
        raise failure from None


def _put_in_place(store, staging, target, command: str) -> None:
    """Rename the staging directory to ``target``; an existing output is first retired beside it,
    then removed, and put back if the final rename fails (so no hidden old output is left)."""
    if not store.exists(target):
        store.rename(staging, target)
        return
    retired = store.path(store.parent(target), f"{store.name(staging)}.old")
    store.rename(target, retired)
    try:
        store.rename(staging, target)
    except BaseException:
        if not store.exists(target):
            store.rename(retired, target)
        raise
    _remove_retired(store, retired, command)


@contextlib.contextmanager
def replace_lock(store, target):
    """Serialise the writers of one output: an exclusive ``flock`` on the output's parent
    directory (nothing is created, so nothing is left behind, even after a kill), held while the
    output is checked and renamed into place.

    Only a local output (a path or a ``file:`` URI) on a system with ``fcntl`` (Linux, macOS) is
    locked; a store reached through Hadoop (HDFS, object stores) has no such lock, and two
    concurrent writers of one output there can still collide (one fails; docs/bad_input.md says so).
    Locks on network file systems hold only as far as the file system honours ``flock``.
    """
    local = local_path_of(store.uri(store.parent(target)))
    if fcntl is None or local is None:
        yield
        return
    try:
        descriptor = os.open(local, os.O_RDONLY)
    except FileNotFoundError:  # no parent yet (the staging creates it): no output there to race with
        yield
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _remove_retired(store, retired, command: str) -> None:
    """Delete the replaced output; what sparkfs did not write (added since the check) stays."""
    try:
        left = remove_replaced(store, retired, command)
    except OSError as error:
        log.warning("the replaced output was kept at %s: %s", store.uri(retired), error)
        return
    if left:
        log.warning("the replaced output was kept at %s: it holds %s, which sparkfs did not write",
                    store.uri(retired), ", ".join(left))


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
