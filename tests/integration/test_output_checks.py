"""Output checks before the work, and a failed write named with its path.

* an output below an existing file (``afile.txt/sub``) is refused before Spark starts (exit 2,
  naming the file), where it used to fail after the whole fit with a raw ``NotADirectoryError``;
* an output that *is* a file is refused once, with or without ``--overwrite``, and ``--overwrite``
  is never suggested for it;
* a parent that refuses a new directory is refused before Spark starts;
* a full disk during the write (``ENOSPC``, from the OS or from Hadoop through Py4J for a
  ``file://`` output) is exit 1 with the file's path, and leaves no staging directory and the
  previous output as it was.
"""

import errno
import os

import pytest

from sparkfs.cli import main
from sparkfs.io import output as output_module
from sparkfs.io.output import OutputNotWritableError, OutputWriteError, check_output_early, write_output_files
from sparkfs.io.stores import HadoopStore, LocalStore
from tests.integration.test_output_safety import _rows, _select, snapshot


@pytest.fixture
def layout(tmp_path):
    (tmp_path / "small.libsvm").write_text(_rows())
    (tmp_path / "afile.txt").write_text("a user's file\n")
    return tmp_path


@pytest.fixture
def no_spark(monkeypatch):
    """Any attempt to start Spark fails the test: the refusal must come before it."""
    import sparkfs.spark.session as session

    def refuse(*args, **kwargs):
        raise AssertionError("Spark was started before the output was refused")

    monkeypatch.setattr(session, "get_spark", refuse)


def _refused(argv, capsys, root, code=2):
    before = snapshot(root)
    capsys.readouterr()
    assert main(argv) == code
    error = capsys.readouterr().err
    assert snapshot(root) == before, "the refused run wrote or left something"
    return error


@pytest.mark.parametrize("below", ["sub", "sub/deeper"])
def test_an_output_below_a_file_is_refused_before_spark(layout, capsys, no_spark, below):
    output = layout / "afile.txt" / below
    error = _refused(_select(str(layout / "small.libsvm"), output), capsys, layout)
    assert f"output directory {output} cannot be created: {layout / 'afile.txt'} is a file, not a directory" in error
    assert "NotADirectoryError" not in error


@pytest.mark.parametrize("extra", [[], ["--overwrite"]])
def test_an_output_that_is_a_file_is_refused_once_without_suggesting_overwrite(layout, capsys, no_spark, extra):
    error = _refused(_select(str(layout / "small.libsvm"), layout / "afile.txt", *extra), capsys, layout)
    assert "is a file, not an output directory sparkfs wrote" in error
    assert "choose another --output" in error
    assert "pass --overwrite" not in error and "--if-exists" not in error
    assert (layout / "afile.txt").read_text() == "a user's file\n"


def test_an_output_below_a_dangling_link_is_refused(layout, capsys, no_spark):
    os.symlink(layout / "nowhere", layout / "dangling")
    error = _refused(_select(str(layout / "small.libsvm"), layout / "dangling" / "out"), capsys, layout)
    assert "is a symbolic link to nothing, not a directory" in error


@pytest.mark.skipif(os.geteuid() == 0 if hasattr(os, "geteuid") else True,
                    reason="root bypasses directory permissions (the probe as root is tested below with a refused "
                    "mkdir)")
def test_a_read_only_parent_is_refused_before_spark(layout, capsys, no_spark):
    parent = layout / "readonly"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        error = _refused(_select(str(layout / "small.libsvm"), parent / "out"), capsys, layout)
    finally:
        parent.chmod(0o755)
    assert f"output directory {parent / 'out'} is not writable: cannot create a directory in {parent}" in error


def test_a_parent_refusing_a_directory_is_refused_before_spark(layout, capsys, no_spark, monkeypatch):
    """As root (permissions bypassed), the probe's refusal is simulated: the write check's mkdir
    fails with EACCES as it would for another user on a read-only directory."""
    real_mkdir = os.mkdir

    def refusing_mkdir(path, *args, **kwargs):
        if os.path.basename(str(path)).startswith(".sparkfs-write-check-"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", refusing_mkdir)
    error = _refused(_select(str(layout / "small.libsvm"), layout / "new" / "out"), capsys, layout)
    assert f"output directory {layout / 'new' / 'out'} is not writable: cannot create a directory in {layout} " \
           "(Permission denied)" in error


def test_the_early_check_passes_a_new_output_in_a_writable_place(layout):
    assert check_output_early(str(layout / "new" / "out"), False) is True
    with pytest.raises(OutputNotWritableError, match="afile.txt is a file"):
        check_output_early(str(layout / "afile.txt" / "x"), True)


def _free_space(monkeypatch, free):
    import collections
    import shutil

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 10**12 - free, free))


def test_a_file_system_without_room_is_refused_before_spark(layout, capsys, no_spark, monkeypatch):
    _free_space(monkeypatch, 4096)
    output = layout / "out"
    error = _refused(_select(str(layout / "small.libsvm"), output), capsys, layout)
    assert f"output directory {output}: the file system of {layout} has 4,096 bytes free, less than the " \
           "1,048,576 an output needs; free space there or choose another --output" in error


def test_an_output_larger_than_the_free_space_is_refused_before_writing(tmp_path, monkeypatch):
    import pandas as pd

    target = tmp_path / "out"
    table = pd.DataFrame({"index": range(5000), "score": [1.0] * 5000})
    write_output_files(str(target), {"features.parquet": table}, {"run": 1})
    before = snapshot(tmp_path)
    _free_space(monkeypatch, 2000)
    with pytest.raises(OutputWriteError, match=r"its 2 files take [\d,]+ bytes and its file system has 2,000 free; "
                                               "nothing was written") as raised:
        write_output_files(str(target), {"features.parquet": table}, {"run": 2}, overwrite=True)
    assert raised.value.errno == errno.ENOSPC
    assert snapshot(tmp_path) == before


# A full disk during the write ------------------------------------------------------------------


def _full_disk_on(monkeypatch, store_class, file_name):
    """``store_class.write`` fails with ENOSPC for ``file_name`` (the other files are written)."""
    real_write = store_class.write

    def write(self, path, payload):
        if str(path).endswith(file_name):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(self, path, payload)

    monkeypatch.setattr(store_class, "write", write)


def test_a_full_disk_is_named_with_its_path_and_leaves_the_old_output(tmp_path, monkeypatch):
    import pandas as pd

    target = tmp_path / "out"
    table = pd.DataFrame({"index": [0], "score": [1.0]})
    write_output_files(str(target), {"features.parquet": table}, {"run": 1})
    before = snapshot(tmp_path)
    _full_disk_on(monkeypatch, LocalStore, "summary.json")  # features.parquet is staged first
    with pytest.raises(OutputWriteError) as raised:
        write_output_files(str(target), {"features.parquet": table}, {"run": 2}, overwrite=True)
    assert raised.value.errno == errno.ENOSPC
    text = str(raised.value)
    assert f"cannot write the output {target}: no space left on the device while writing" in text
    assert "summary.json" in text and "free space there or choose another --output" in text
    assert snapshot(tmp_path) == before  # no staging directory, the old output whole


def test_a_full_disk_through_the_cli_is_exit_1_with_the_path(spark, layout, capsys, monkeypatch):
    _full_disk_on(monkeypatch, LocalStore, "summary.json")
    output = layout / "out"
    error = _refused(_select(str(layout / "small.libsvm"), output), capsys, layout, code=1)
    assert f"sparkfs: failed: cannot write the output {output}: no space left on the device while writing " \
           f"{output.parent}/.out.tmp-" in error
    assert "Errno 28" not in error and "Traceback" not in error


def test_a_full_disk_through_hadoop_is_named_with_its_path(spark, layout, capsys, monkeypatch):
    """A ``file://`` output goes through Hadoop's FileSystem: the Java IOException (a real
    Py4JJavaError around java.io.IOException) becomes the same message, not ``o225.write``."""
    from py4j.protocol import Py4JJavaError

    real_write = HadoopStore.write

    class FullDisk:
        def __init__(self, jvm):
            self.jvm = jvm

        def create(self, *args):
            raise Py4JJavaError("An error occurred while calling o225.write",
                                self.jvm.java.io.IOException("No space left on device"))

    def write(self, path, payload):
        real_fs, self.fs = self.fs, FullDisk(self._jvm)
        try:
            real_write(self, path, payload)
        finally:
            self.fs = real_fs

    monkeypatch.setattr(HadoopStore, "write", write)
    output = layout / "out"
    error = _refused(_select(str(layout / "small.libsvm"), f"file://{output}"), capsys, layout, code=1)
    assert f"sparkfs: failed: cannot write the output file:{output}: no space left on the device while writing " \
           f"file:{output.parent}/.out.tmp-" in error
    assert "o225" not in error and "Py4JJavaError" not in error


def test_write_failure_keeps_the_cause_of_other_errors(tmp_path, monkeypatch):
    """A failure other than a full disk is named too, with its own reason and no advice about space."""
    import pandas as pd

    def write(self, path, payload):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(LocalStore, "write", write)
    with pytest.raises(OutputWriteError, match="Input/output error while writing") as raised:
        write_output_files(str(tmp_path / "out"), {"features.parquet": pd.DataFrame({"a": [1]})}, {})
    assert "free space" not in str(raised.value)
    assert os.listdir(tmp_path) == []
    assert output_module.OutputWriteError is OutputWriteError
