"""Where an output directory lives: the driver's own disk, or a Hadoop ``FileSystem``.

Both stores offer the same few calls, so the output writer (:mod:`sparkfs.io.output`) and the
output safety rules (:mod:`sparkfs.io.output_safety`) are written once:

* a plain path (``out/run1``) is the driver's local disk, through the OS;
* a URI (``hdfs://...``, ``s3a://...``, ``abfss://...``, ``dbfs:/...``, ``file:///...``) goes
  through the Hadoop ``FileSystem`` of the Spark session, with the cluster's configuration and
  credentials.

A path the user gives is parsed once, where a command starts, into a :class:`Location` (the text as
given, whether it is a plain path, its absolute local path, its :data:`Place`); the checks and readers
below the command read it instead of parsing the text again.

Deleting is deliberately narrow: one file, one empty directory, or a staging directory this
process created under a fresh random name. Nothing here removes a tree it did not make.
"""

from __future__ import annotations

import errno
import os
import posixpath
import shutil
from dataclasses import dataclass, replace
from typing import Iterable, List, Optional, Tuple, Union
from urllib.parse import urlparse

#: A place on a file system, comparable across spellings: ("file", real local path) or
#: ("scheme://authority", normalised absolute path).
Place = Tuple[str, str]


def is_local_path(path: str) -> bool:
    """True for a plain path (no ``scheme:``), written by the driver with the OS."""
    scheme = urlparse(str(path)).scheme
    return scheme == "" or (len(scheme) == 1 and os.name == "nt")  # C:\... on Windows


def local_path_of(text: str) -> Optional[str]:
    """The local path a plain path or a ``file:`` URI names (``file:///x``, ``file:/x``,
    ``file://localhost/x``), absolute as :func:`absolute_path` makes it; None for any other URI."""
    text = str(text)
    if is_local_path(text):
        return absolute_path(text)
    parsed = urlparse(text)
    if parsed.scheme.lower() != "file" or parsed.netloc not in ("", "localhost"):
        return None
    return absolute_path(parsed.path or "/")


def absolute_path(path: str) -> str:
    """``path`` absolute, its ``..`` taken as the operating system takes them: ``link/..`` is the
    parent of the link's target, where a write through that path lands (``os.path.abspath`` reads
    it as text, as the folder holding the link). The part up to the last ``..`` is resolved
    (``realpath``); the names after it are kept as given, so a final symbolic link stays a link."""
    joined = os.path.join(os.getcwd(), path)
    parts = joined.split(os.sep)
    if ".." not in parts or os.name == "nt":
        return os.path.abspath(joined)
    last = len(parts) - 1 - parts[::-1].index("..")
    head = os.path.realpath(os.sep.join(parts[: last + 1]) or os.sep)
    return os.path.normpath(os.path.join(head, *parts[last + 1:]))


def place_of(text: Union[str, "Location"]) -> Place:
    """The :data:`Place` a path or URI names: local ones through ``realpath`` (symlinks and
    ``..`` resolved, ``file:///x`` = ``/x``), other URIs by scheme, authority and normalised path."""
    return location_of(text).place


def _uri_place(text: str) -> Place:
    """The :data:`Place` of a URI that is not local: scheme, authority and normalised path."""
    parsed = urlparse(text)
    path = posixpath.normpath("/" + parsed.path.lstrip("/")) if parsed.path else "/"
    return f"{parsed.scheme.lower()}://{parsed.netloc.lower()}", "/" if path == "//" else path


@dataclass(frozen=True)
class Location:
    """A path or URI the user gave, parsed once (:func:`location_of`).

    ``text``: as given, for messages and for Spark; ``plain``: a path without ``scheme:``, written
    by the driver with the OS; ``local``: the absolute local path it names (a plain path or a
    ``file:`` URI, :func:`local_path_of`), None for any other URI."""

    text: str
    plain: bool
    local: Optional[str]
    uri_place: Optional[Place] = None

    def __str__(self) -> str:
        return self.text

    @property
    def place(self) -> Place:
        """Where it is on its file system (:func:`place_of`); a local one through ``realpath`` at each call."""
        if self.local is not None:
            return "file", os.path.normcase(os.path.realpath(self.local))
        assert self.uri_place is not None
        return self.uri_place

    def as_local(self) -> "Location":
        """This local Location spelled as its absolute local path."""
        assert self.local is not None
        return replace(self, text=self.local, plain=True)


def location_of(given: Union[str, Location]) -> Location:
    """The :class:`Location` of a path or URI; a Location is returned as it is."""
    if isinstance(given, Location):
        return given
    text = str(given)
    local = local_path_of(text)
    return Location(text, is_local_path(text), local, None if local is not None else _uri_place(text))


def locations_of(given: Iterable[Union[str, Location, None]]) -> List[Location]:
    """The :class:`Location` of each path or URI given (None and empty ones left out)."""
    return [location_of(each) for each in given if each]


class LocalStore:
    """The driver's own disk, through the OS (same methods as :class:`HadoopStore`)."""

    def __init__(self, location: Location):
        self.target = location.local or os.path.abspath(location.text)

    def parent(self, path) -> str:
        return os.path.dirname(path)

    def name(self, path) -> str:
        return os.path.basename(path)

    def path(self, parent, name: str) -> str:
        return os.path.join(parent, name)

    def uri(self, path) -> str:
        return path

    def place(self, path) -> Place:
        return place_of(path)

    def input_place(self, location: Location) -> Place:
        return location.place

    def own_directories(self) -> List[Tuple[str, Place]]:
        """Nothing beyond the local current and home directories, which the rules always check."""
        return []

    def exists(self, path) -> bool:
        return os.path.lexists(path)

    def is_symlink(self, path) -> bool:
        return os.path.islink(path)

    def is_dir(self, path) -> bool:
        return os.path.isdir(path)

    def names(self, path) -> List[str]:
        return sorted(os.listdir(path))

    def size(self, path) -> int:
        return os.path.getsize(path)

    def read(self, path) -> bytes:
        with open(path, "rb") as handle:
            return handle.read()

    def write(self, path, payload: bytes) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(payload)

    def rename(self, source, destination) -> None:
        os.rename(source, destination)

    def delete_file(self, path) -> None:
        os.unlink(path)

    def delete_empty_directory(self, path) -> None:
        os.rmdir(path)

    def delete_staging(self, path) -> None:
        """Remove a staging directory this process created (a fresh random name)."""
        shutil.rmtree(path, ignore_errors=True)

    def close(self) -> None:
        pass


class HadoopStore:
    """The few Hadoop FileSystem calls the output needs, through the session's JVM."""

    def __init__(self, spark, path: str):
        if spark is None:
            raise ValueError(f"output {path} is a URI: it is written through Spark's Hadoop file system, "
                             "so a Spark session is needed")
        jvm = spark.sparkContext._jvm
        self._jvm = jvm
        self._path_class = jvm.org.apache.hadoop.fs.Path
        self._configuration = spark.sparkContext._jsc.hadoopConfiguration()
        self.target = self._path_class(str(path))
        try:
            # A private instance: turning checksum files off must not change the cached one.
            self.fs = jvm.org.apache.hadoop.fs.FileSystem.newInstance(self.target.toUri(), self._configuration)
        except Exception as error:  # py4j wraps UnsupportedFileSystemException and the like
            scheme = urlparse(str(path)).scheme
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise ValueError(f"cannot open the file system of output {path} (scheme '{scheme}'): "
                             f"{first_line}") from None
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

    def place(self, path) -> Place:
        return place_of(self.uri(path))

    def input_place(self, location: Location) -> Place:
        """Where an input is read: a plain path on the cluster's default file system."""
        if not location.plain:
            return location.place
        try:
            hadoop_path = self._path_class(location.text)
            qualified = hadoop_path.getFileSystem(self._configuration).makeQualified(hadoop_path)
            return place_of(str(qualified.toString()))
        except Exception:  # no default file system reachable: compare as a local path
            return location.place

    def own_directories(self) -> List[Tuple[str, Place]]:
        """The file system's home and working directories (``/user/NAME`` on HDFS)."""
        places = []
        for what, getter in (("the home directory", self.fs.getHomeDirectory),
                             ("the working directory", self.fs.getWorkingDirectory)):
            try:
                places.append((what, place_of(str(self.fs.makeQualified(getter()).toString()))))
            except Exception:  # a store without such a notion
                pass
        return places

    def exists(self, path) -> bool:
        return bool(self.fs.exists(path))

    def is_symlink(self, path) -> bool:
        local = local_path_of(self.uri(path))
        if local is not None:  # Hadoop's local file system reports links only when symlinks are enabled
            return os.path.islink(local)
        try:
            return bool(self.fs.getFileLinkStatus(path).isSymlink())
        except Exception:  # stores without links
            return False

    def is_dir(self, path) -> bool:
        return bool(self.fs.getFileStatus(path).isDirectory())

    def names(self, path) -> List[str]:
        return sorted(str(status.getPath().getName()) for status in self.fs.listStatus(path))

    def size(self, path) -> int:
        return int(self.fs.getFileStatus(path).getLen())

    def read(self, path) -> bytes:
        stream = self.fs.open(path)
        try:
            return bytes(self._jvm.org.apache.hadoop.io.IOUtils.readFullyToByteArray(stream))
        finally:
            stream.close()

    def write(self, path, payload: bytes) -> None:
        """Create ``path`` with ``payload``; a Java failure (through Py4J) is raised as an OSError
        naming the Java exception, with ``errno.ENOSPC`` / ``EDQUOT`` for a full disk or a quota."""
        try:
            stream = self.fs.create(path, False)
            try:
                stream.write(bytearray(payload))
            finally:
                stream.close()
        except Exception as error:  # py4j's Py4JJavaError, read as an OSError below
            raise java_write_failure(error) from None

    def rename(self, source, destination) -> None:
        if not self.fs.rename(source, destination):
            raise OSError(f"could not rename {self.uri(source)} to {self.uri(destination)}")

    def delete_file(self, path) -> None:
        if not self.fs.delete(path, False):
            raise OSError(f"could not delete {self.uri(path)}")

    def delete_empty_directory(self, path) -> None:
        if not self.fs.delete(path, False):  # non-recursive: refuses a directory that is not empty
            raise OSError(f"could not delete {self.uri(path)}")

    def delete_staging(self, path) -> None:
        """Remove a staging directory this process created (a fresh random name); best effort."""
        try:
            self.fs.delete(path, True)
        except Exception:  # cleaning up after another error
            pass

    def close(self) -> None:
        self.fs.close()


#: Java exceptions (and messages) of a full disk or quota, as raised by Hadoop's file systems.
_JAVA_NO_SPACE = ("No space left on device", "DiskOutOfSpaceException", "DSQuotaExceededException")
_JAVA_QUOTA = ("QuotaExceededException", "Disk quota exceeded")


def java_write_failure(error: BaseException) -> OSError:
    """An OSError for a failed Hadoop write: ENOSPC or EDQUOT when the Java exception says so, its
    first line (``java.io.IOException: ...``) as the reason either way."""
    try:
        java = error.java_exception.toString() if hasattr(error, "java_exception") else str(error)
    except Exception:  # the JVM is gone: its text cannot be read
        java = type(error).__name__
    lines = str(java).strip().splitlines()
    first = lines[0] if lines else type(error).__name__
    text = str(java)
    if any(mark in text for mark in _JAVA_NO_SPACE):
        return OSError(errno.ENOSPC, first)
    if any(mark in text for mark in _JAVA_QUOTA):
        return OSError(errno.EDQUOT, first)
    return OSError(errno.EIO, first)


def open_store(path: Union[str, Location], spark=None):
    """A :class:`LocalStore` for a plain path, else a :class:`HadoopStore` (needs ``spark``)."""
    location = location_of(path)
    return LocalStore(location) if location.plain else HadoopStore(spark, location.text)
