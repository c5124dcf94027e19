"""Output that cannot destroy what sparkfs did not write, through the real command
line against decoy directories holding unrelated files: every refusal exits 2, names the reason,
and leaves every file and listing of the decoys byte for byte as it was.

Layout of each test's ``tmp_path``: ``data/`` holds the input (``small.libsvm``) next to a
``notes.txt`` and ``sub/file.txt``; ``decoy/`` holds the same unrelated files and no input.
"""

import hashlib
import json
import os
from pathlib import Path

import pytest

from sparkfs.cli import main
from sparkfs.evaluation.stability_runs import staging_leftovers
from sparkfs.io.output_safety import MARKER_KEY, UnsafeOutputError, check_location
from sparkfs.io.stores import location_of, locations_of, place_of


def _rows():
    lines = []
    for i in range(12):
        label = i % 2
        lines.append(f"{label} 1:{label * 2 + (i % 3) * 0.1:.2f} 2:{(i * 7) % 5 * 0.3:.2f} 3:{1.0 - label:.2f}")
    return "\n".join(lines) + "\n"


def _decoy_files(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notes.txt").write_text("my notes: not sparkfs's\n")
    (folder / "sub").mkdir(exist_ok=True)
    (folder / "sub" / "file.txt").write_bytes(b"\x00unrelated bytes\xff")


@pytest.fixture
def layout(tmp_path):
    data, decoy = tmp_path / "data", tmp_path / "decoy"
    _decoy_files(data)
    _decoy_files(decoy)
    (data / "small.libsvm").write_text(_rows())
    return tmp_path, data, decoy, str(data / "small.libsvm")


def snapshot(root: Path) -> dict:
    """Every entry under ``root``: a file's SHA-256, a link's target, a directory's sorted listing."""
    entries = {}
    for folder, directories, files in os.walk(root):
        here = Path(folder)
        entries[str(here.relative_to(root))] = ("dir", tuple(sorted(os.listdir(here))))
        for name in files + directories:
            path = here / name
            key = str(path.relative_to(root))
            if path.is_symlink():
                entries[key] = ("link", os.readlink(path))
            elif path.is_file():
                entries[key] = ("file", hashlib.sha256(path.read_bytes()).hexdigest())
    return entries


def refused(argv, capsys, root: Path, *reasons: str) -> str:
    """Run ``sparkfs argv``: exit 2, every reason in the message, ``root`` unchanged."""
    before = snapshot(root)
    capsys.readouterr()
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "sparkfs: error: " in error, error
    error = error[error.index("sparkfs: error: "):]
    for reason in reasons:
        assert reason in error, error
    assert snapshot(root) == before
    return error


def _select(source, output, *extra):
    return ["select", "--input", source, "--format", "libsvm", "--method", "lfs", "--num-features", "2",
            "--master", "local[2]", "--output", str(output), *extra]


# select: every case -------------------------------------------------------------------------------


@pytest.mark.parametrize("output, reason", [
    (lambda t: t / "data" / "small.libsvm", "is the input"),
    (lambda t: t / "data", "contains the input"),
    (lambda t: t, "contains the input"),
    (lambda t: f"file://{t / 'data'}", "contains the input"),
    (lambda t: f"file:{t / 'data'}/sub/..", "contains the input"),
    (lambda t: t / "decoy" / ".." / "data", "contains the input"),
    (lambda t: t / "link-to-data", "contains the input"),
    (lambda t: t / "data" / "sub" / "new-run", "lies inside the input"),
    (lambda t: t / "link-to-data-sub" / ".." / "new-run", "lies inside the input"),
], ids=["input-file", "input-directory", "parent-of-input", "file-uri-of-input-directory", "file-uri-dotdot",
        "dotdot", "symlink-to-input-directory", "inside-a-directory-input", "dotdot-after-a-symlink"])
@pytest.mark.parametrize("overwrite", [False, True], ids=["plain", "overwrite"])
def test_select_refuses_an_output_on_its_input(layout, capsys, output, reason, overwrite):
    """``link/..`` is the link's target's parent, as the kernel follows it (as text it would be ``.``)."""
    root, data, _, source = layout
    (root / "link-to-data").symlink_to(data, target_is_directory=True)
    (root / "link-to-data-sub").symlink_to(data / "sub", target_is_directory=True)
    if reason == "lies inside the input":
        source = str(data)  # a directory input (Parquet/CSV folders): the output must not go inside
    argv = _select(source, output(root), *(["--overwrite"] if overwrite else []))
    refused(argv, capsys, root, reason, "choose another --output")


def test_select_refuses_the_current_home_and_root_directories(layout, capsys, monkeypatch):
    root, _, decoy, source = layout
    monkeypatch.chdir(decoy / "sub")
    refused(_select(source, ".", "--overwrite"), capsys, root, "is the current directory", str(decoy / "sub"))
    refused(_select(source, decoy, "--overwrite"), capsys, root, "contains the current directory")
    monkeypatch.chdir(root / "data" / "sub")
    monkeypatch.setenv("HOME", str(decoy))
    refused(_select(source, decoy, "--overwrite"), capsys, root, "is the home directory", str(decoy))
    refused(_select(source, f"file://{decoy}", "--overwrite"), capsys, root, "is the home directory")
    listing = sorted(os.listdir("/"))
    refused(_select(source, "/", "--overwrite"), capsys, root, "is the root of its file system")
    refused(_select(source, "file:///", "--overwrite"), capsys, root, "is the root of its file system")
    assert sorted(os.listdir("/")) == listing


def test_select_overwrite_refuses_what_sparkfs_select_did_not_write(layout, capsys):
    root, _, decoy, source = layout
    refused(_select(source, decoy / "sub"), capsys, root, "already exists; pass --overwrite")
    refused(_select(source, decoy / "sub", "--overwrite"), capsys, root,
            "is not an output of sparkfs select (no summary.json)", "choose another --output")
    refused(_select(source, decoy / "notes.txt", "--overwrite"), capsys, root,
            "is a file", "never replaces a file with a directory")
    older = root / "older"  # the output of a sparkfs without the marker
    older.mkdir()
    (older / "summary.json").write_text(json.dumps({"method": "lfs"}))
    (older / "features.parquet").write_bytes(b"PAR1")
    refused(_select(source, older, "--overwrite"), capsys, root, "has no 'sparkfs_output' tag",
            "versions before the tag")
    other = root / "weights"  # an instance-weights output is not select's to replace
    other.mkdir()
    (other / "summary.json").write_text(json.dumps({MARKER_KEY: {"kind": "instance-weights", "format": 1}}))
    (other / "weights.parquet").write_bytes(b"PAR1")
    refused(_select(source, other, "--overwrite"), capsys, root, "holds the output of sparkfs instance-weights")
    (root / "link").symlink_to(other, target_is_directory=True)
    refused(_select(source, root / "link", "--overwrite"), capsys, root, "is a symbolic link")


def test_select_overwrite_replaces_its_own_output_only(spark, layout, capsys):
    root, _, _, source = layout
    out = root / "runs" / "run1"
    assert main(_select(source, out)) == 0
    first = json.loads((out / "summary.json").read_text())
    assert first[MARKER_KEY] == {"kind": "select", "format": 1}
    assert main([*_select(source, out, "--overwrite"), "--param", "gamma=-0.25"]) == 0
    second = json.loads((out / "summary.json").read_text())
    assert second["params"]["gamma"] == -0.25 and first["params"]["gamma"] != -0.25
    assert sorted(os.listdir(out)) == ["features.parquet", "model", "summary.json"]
    assert os.listdir(out.parent) == ["run1"]            # no staging or retired directory left
    (out / "notes.txt").write_text("added by the user")
    refused(_select(source, out, "--overwrite"), capsys, root,
            "holds 1 entry sparkfs select does not write (notes.txt)",
            "replacing the directory would delete them")
    # The same refusal through the Hadoop file system (a file:/// URI is read through it).
    refused(_select(source, f"file://{out}", "--overwrite"), capsys, root, "notes.txt")


# The other commands: a representative subset each ------------------------------------------------


def _instance_weights(source, output, *extra):
    return ["instance-weights", "--input", source, "--format", "libsvm", "--master", "local[2]",
            "--output", str(output), *extra]


def _stability(source, output, *extra):
    return ["stability", "--input", source, "--format", "libsvm", "--method", "lfs", "--runs", "2",
            "--num-features", "1", "--master", "local[2]", "--output", str(output), *extra]


def _evaluate(source, output, *extra):
    return ["evaluate", "--input", source, "--format", "libsvm", "--methods", "lfs", "--classifiers", "nb",
            "--num-features", "1", "--cv", "2", "--master", "local[2]", "--output", str(output), *extra]


def test_instance_weights_refusals(layout, capsys):
    root, data, decoy, source = layout
    refused(_instance_weights(source, source, "--overwrite"), capsys, root, "is the input")
    refused(_instance_weights(source, data, "--overwrite"), capsys, root, "contains the input")
    refused(_instance_weights(source, f"file://{data}", "--overwrite"), capsys, root, "contains the input")
    refused(_instance_weights(source, decoy, "--overwrite"), capsys, root,
            "is not an output of sparkfs instance-weights")
    refused(_instance_weights(source, decoy / "notes.txt", "--overwrite"), capsys, root, "is a file")
    selected = root / "selected"
    selected.mkdir()
    (selected / "summary.json").write_text(json.dumps({MARKER_KEY: {"kind": "select", "format": 1}}))
    refused(_instance_weights(source, selected, "--overwrite"), capsys, root, "holds the output of sparkfs select")


@pytest.mark.parametrize("command", [_stability, _evaluate], ids=["stability", "evaluate"])
def test_study_commands_refusals(layout, capsys, monkeypatch, command):
    root, data, decoy, source = layout
    name = "stability" if command is _stability else "evaluate"
    marker_file = "plan.json" if command is _stability else "study.json"
    refused(command(source, data), capsys, root, "contains the input")
    refused(command(source, f"file://{data}"), capsys, root, "contains the input")
    refused(command(source, source), capsys, root, "is the input")
    refused(command(source, decoy), capsys, root, f"is not empty and is not a directory of sparkfs {name}",
            f"no {marker_file}", "choose another directory")
    refused(command(source, decoy / "notes.txt"), capsys, root, "is a file")
    refused(command(source, "/"), capsys, root, "is the root of its file system")
    refused(command(source, "hdfs://namenode/out"), capsys, root, "writes to a local directory only")
    older = root / "older"  # a study of a sparkfs without the marker is not resumed
    older.mkdir()
    (older / marker_file).write_text(json.dumps({"n_features": 3}))
    refused(command(source, older), capsys, root, f"its {marker_file} has no 'sparkfs_output' tag")
    monkeypatch.setenv("HOME", str(decoy))
    refused(command(source, decoy), capsys, root, "is the home directory")
    monkeypatch.chdir(decoy)
    refused(command(source, "."), capsys, root, "is the current directory")
    if command is _stability:
        relevance = decoy / "sub" / "relevance.txt"
        relevance.write_text("1\n0\n0\n")
        refused(command(source, decoy / "sub", "--true-relevance", str(relevance)), capsys, root, "contains the input")
    else:
        refused(command(source, decoy / "sub", "--test-input", str(decoy / "sub" / "file.txt")), capsys, root,
                "contains the input")


def test_compare_and_report_refusals(layout, capsys):
    root, data, decoy, _ = layout
    compare = ["compare", str(data), str(decoy / "sub")]
    refused([*compare, "--output", str(data)], capsys, root, "is the input")
    refused([*compare, "--output", str(root)], capsys, root, "contains the input")
    refused([*compare, "--output", str(decoy / "sub" / "tables")], capsys, root, "lies inside the input")
    elsewhere = root / "elsewhere"
    _decoy_files(elsewhere)
    refused(["compare", str(data), "--output", str(elsewhere)], capsys, root,
            "is not a directory of sparkfs compare (no comparison.json)")
    refused(["report", str(decoy)], capsys, root, "is not a directory of sparkfs evaluate (no study.json)",
            "writes only into the directory of an evaluation")
    (decoy / "study.json").write_text(json.dumps({"methods": ["lfs"]}))
    refused(["report", str(decoy)], capsys, root, "has no 'sparkfs_output' tag")


# The pieces the commands share -------------------------------------------------------------------


def test_only_staging_files_of_the_tool_are_leftovers(tmp_path):
    (tmp_path / ".run-00001.npz.k3j_x9ab.tmp").write_bytes(b"partial")
    (tmp_path / ".notes.tmp").write_text("user")
    (tmp_path / ".run-00002.npz.folder.tmp").mkdir()
    (tmp_path / ".run-00003.npz.link.tmp").symlink_to(tmp_path / ".notes.tmp")
    found = staging_leftovers(tmp_path, "run-[0-9][0-9][0-9][0-9][0-9].npz")
    assert [path.name for path in found] == [".run-00001.npz.k3j_x9ab.tmp"]


def test_uri_places_and_roots():
    assert place_of("hdfs://NN:8020/a/../b/") == ("hdfs://nn:8020", "/b")
    assert place_of("file:///tmp/x/..") == place_of("/tmp")
    for root in ("hdfs://nn/", "hdfs://nn", "s3a://bucket"):
        with pytest.raises(UnsafeOutputError, match="root of its file system"):
            check_location(location_of(root), store=_UriStore(root))
    with pytest.raises(UnsafeOutputError, match="contains the input hdfs://nn/data/x.libsvm"):
        check_location(location_of("hdfs://nn/data"), locations_of(["hdfs://nn/data/x.libsvm"]),
                       store=_UriStore("hdfs://nn/data"))
    with pytest.raises(UnsafeOutputError, match="is the home directory"):
        check_location(location_of("hdfs://nn/user/me"), store=_UriStore("hdfs://nn/user/me"))
    check_location(location_of("hdfs://nn/user/me/run1"), locations_of(["hdfs://other/user/me/run1", "/user/me/run1"]),
                   store=_UriStore("hdfs://nn/user/me/run1"))


class _UriStore:
    """A Hadoop store's answers for a URI, without a name node (the rules only ask these)."""

    def __init__(self, uri):
        self.target = uri

    def place(self, path):
        return place_of(path)

    def input_place(self, location):
        return location.place

    def own_directories(self):
        return [("the home directory", place_of("hdfs://nn/user/me"))]
