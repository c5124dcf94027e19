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
"""

from __future__ import annotations

import io
import json
import os
import shutil
import uuid
from typing import Any, Dict, List, Optional
from urllib.parse import urlparse

import numpy as np


class OutputExistsError(FileExistsError):
    pass


class OutputNotWritableError(ValueError):
    """The output directory cannot be created where it is asked for."""


def _check_local_writable(target: str) -> None:
    """Create and remove a scratch directory next to ``target`` (in its nearest existing parent),
    so an unwritable place is refused before any work, not after it."""
    parent = os.path.dirname(target)
    while parent and not os.path.isdir(parent):
        parent = os.path.dirname(parent) if os.path.dirname(parent) != parent else ""
    probe = os.path.join(parent or ".", f".sparkfs-write-check-{uuid.uuid4().hex}")
    try:
        os.mkdir(probe)
        os.rmdir(probe)
    except OSError as error:
        raise OutputNotWritableError(f"output directory {target} is not writable: cannot create a directory in "
                                     f"{parent or '.'} ({error.strerror})") from None


def is_local_path(path: str) -> bool:
    """True for a plain path (no ``scheme:``), written by the driver with the OS."""
    scheme = urlparse(str(path)).scheme
    return scheme == "" or (len(scheme) == 1 and os.name == "nt")  # C:\... on Windows


def check_output_free(path: str, overwrite: bool, spark=None) -> str:
    """Refuse an existing output before any work is done (unless ``overwrite``).

    Returns the resolved target: an absolute local path, or the fully qualified URI (which needs
    ``spark`` to reach the Hadoop file system).
    """
    store = _open_store(path, spark)
    try:
        _refuse_existing(store, overwrite)
        if isinstance(store, _LocalStore):
            _check_local_writable(store.target)
        return store.uri(store.target)
    finally:
        store.close()


def _open_store(path: str, spark):
    return _LocalStore(path) if is_local_path(path) else _HadoopStore(spark, path)


def _refuse_existing(store, overwrite: bool) -> None:
    if store.exists(store.target) and not overwrite:
        raise OutputExistsError(f"output directory {store.uri(store.target)} already exists; pass --overwrite to replace it")


class _LocalStore:
    """The driver's own disk, through the OS (same methods as :class:`_HadoopStore`)."""

    def __init__(self, path: str):
        self.target = os.path.abspath(str(path))

    def parent(self, path) -> str:
        return os.path.dirname(path)

    def name(self, path) -> str:
        return os.path.basename(path)

    def path(self, parent, name: str) -> str:
        return os.path.join(parent, name)

    def uri(self, path) -> str:
        return path

    def exists(self, path) -> bool:
        return os.path.exists(path)

    def write(self, path, payload: bytes) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(payload)

    def rename(self, source, destination) -> None:
        os.rename(source, destination)

    def delete(self, path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        pass


class _HadoopStore:
    """The few Hadoop FileSystem calls the output needs, through the session's JVM."""

    def __init__(self, spark, path: str):
        if spark is None:
            raise ValueError(f"output {path} is a URI: it is written through Spark's Hadoop file system, "
                             "so a Spark session is needed")
        jvm = spark.sparkContext._jvm
        self._path_class = jvm.org.apache.hadoop.fs.Path
        self.target = self._path_class(str(path))
        configuration = spark.sparkContext._jsc.hadoopConfiguration()
        try:
            # A private instance: turning checksum files off must not change the cached one.
            self.fs = jvm.org.apache.hadoop.fs.FileSystem.newInstance(self.target.toUri(), configuration)
        except Exception as error:  # py4j wraps UnsupportedFileSystemException and the like
            scheme = urlparse(str(path)).scheme
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ValueError(f"cannot open the file system of output {path} (scheme '{scheme}'): {first_line}") from None
        self.fs.setWriteChecksum(False)
        self.target = self.fs.makeQualified(self.target)

    def parent(self, path):
        return path.getParent()

    def name(self, path) -> str:
        return str(path.getName())

    def path(self, parent, name: str):
        return self._path_class(parent, name)

    def uri(self, path) -> str:
        return str(path.toString())

    def exists(self, path) -> bool:
        return bool(self.fs.exists(path))

    def write(self, path, payload: bytes) -> None:
        stream = self.fs.create(path, False)
        try:
            stream.write(bytearray(payload))
        finally:
            stream.close()

    def rename(self, source, destination) -> None:
        if not self.fs.rename(source, destination):
            raise OSError(f"could not rename {self.uri(source)} to {self.uri(destination)}")

    def delete(self, path) -> None:
        try:
            self.fs.delete(path, True)
        except Exception:  # best effort: cleaning up after another error
            pass

    def close(self) -> None:
        self.fs.close()


def features_table(scores, selected: List[int], names: Optional[List[str]] = None):
    """index, name, score, rank (1 = best), selected — one row per feature, in index order."""
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
    })


def write_selection_output(path: str, table, summary: Dict[str, Any], overwrite: bool = False, spark=None) -> str:
    """Write ``features.parquet`` + ``summary.json`` atomically into ``path``; returns the target.

    A URI ``path`` is written through the Hadoop file system of ``spark`` (see the module doc).
    """
    return write_output_files(path, {"features.parquet": table}, summary, overwrite=overwrite, spark=spark)


def write_output_files(path: str, tables: Dict[str, Any], summary: Dict[str, Any], *, overwrite: bool = False,
                       spark=None) -> str:
    """Write pandas ``tables`` (file name -> DataFrame, as Parquet) and ``summary.json`` atomically
    into the directory ``path`` (staged beside it, then renamed); returns the target."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Serialise first: an unserialisable summary or table fails before anything is written.
    payloads = {}
    for name, table in tables.items():
        parquet_sink = io.BytesIO()
        pq.write_table(pa.Table.from_pandas(table, preserve_index=False), parquet_sink)
        payloads[name] = parquet_sink.getvalue()
    payloads["summary.json"] = json.dumps(summary, indent=2, default=_json_default).encode("utf-8")
    store = _open_store(path, spark)
    try:
        target = store.target
        _refuse_existing(store, overwrite)
        staging = store.path(store.parent(target), f".{store.name(target)}.tmp-{uuid.uuid4().hex}")
        try:
            for name, payload in payloads.items():
                store.write(store.path(staging, name), payload)
            if store.exists(target):
                retired = store.path(store.parent(target), f"{store.name(staging)}.old")
                store.rename(target, retired)
                store.rename(staging, target)
                store.delete(retired)
            else:
                store.rename(staging, target)
        except BaseException:
            store.delete(staging)
            raise
        return store.uri(target)
    finally:
        store.close()


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
