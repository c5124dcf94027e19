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


def is_local_path(path: str) -> bool:
    """True for a plain path (no ``scheme:``), written by the driver with the OS."""
    scheme = urlparse(str(path)).scheme
    return scheme == "" or (len(scheme) == 1 and os.name == "nt")  # C:\... on Windows


def local_output_path(path: str) -> str:
    if not is_local_path(path):
        raise ValueError(f"not a local path: {path}")
    return os.path.abspath(str(path))


def check_output_free(path: str, overwrite: bool, spark=None) -> str:
    """Refuse an existing output before any work is done (unless ``overwrite``).

    Returns the resolved target: an absolute local path, or the fully qualified URI (which needs
    ``spark`` to reach the Hadoop file system).
    """
    if is_local_path(path):
        target = local_output_path(path)
        if os.path.exists(target) and not overwrite:
            raise OutputExistsError(f"output directory {target} already exists; pass --overwrite to replace it")
        return target
    store = _HadoopStore(spark, path)
    if store.exists(store.target) and not overwrite:
        raise OutputExistsError(f"output directory {store.uri(store.target)} already exists; pass --overwrite to replace it")
    return store.uri(store.target)


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
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Serialise first: an unserialisable summary or table fails before anything is written.
    parquet_sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), parquet_sink)
    payloads = {
        "features.parquet": parquet_sink.getvalue(),
        "summary.json": json.dumps(summary, indent=2, default=_json_default).encode("utf-8"),
    }
    if not is_local_path(path):
        return _write_hadoop(path, payloads, overwrite, spark)
    target = check_output_free(path, overwrite)
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    staging = os.path.join(parent, f".{os.path.basename(target)}.tmp-{uuid.uuid4().hex}")
    os.makedirs(staging)
    try:
        for name, payload in payloads.items():
            with open(os.path.join(staging, name), "wb") as handle:
                handle.write(payload)
        if os.path.exists(target):
            retired = f"{staging}.old"
            os.rename(target, retired)
            os.rename(staging, target)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _write_hadoop(path: str, payloads: Dict[str, bytes], overwrite: bool, spark) -> str:
    store = _HadoopStore(spark, path)
    try:
        target = store.target
        if store.exists(target) and not overwrite:
            raise OutputExistsError(f"output directory {store.uri(target)} already exists; pass --overwrite to replace it")
        staging = store.path(target.getParent(), f".{target.getName()}.tmp-{uuid.uuid4().hex}")
        try:
            for name, payload in payloads.items():
                store.write(store.path(staging, name), payload)
            if store.exists(target):
                retired = store.path(target.getParent(), f"{staging.getName()}.old")
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
