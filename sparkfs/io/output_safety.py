"""Output that cannot destroy what sparkfs did not write: the rules every writing command calls.

Two rules, checked before any work (a local output before Spark starts; a Hadoop URI once the
session exists, through its ``FileSystem``):

1. **Where** (:func:`check_location`): the output must not be, contain or lie inside an input of
   the command, and must not be or contain the current directory, the home directory (``~``,
   ``$HOME``, the account's home; on a Hadoop store also its home and working directories) or a
   file system's root. Paths are compared after ``realpath`` (symlinks and ``..`` resolved), with
   ``file:///x`` and ``/x`` the same place.
2. **What is there** (:func:`check_replaceable`, :func:`check_study_directory`): every directory
   sparkfs writes carries a marker, ``"sparkfs_output": {"kind": ..., "format": 1}`` in its
   ``summary.json`` (``select``, ``instance-weights``), ``study.json`` (``evaluate``),
   ``plan.json`` (``stability``), ``comparison.json`` (``compare``) or ``_summary.json`` (the Parquet
   directories of ``convert`` and of ``apply`` / ``select --write-reduced``, whose Spark part files are
   named by the kind's ``file_pattern``). ``--overwrite`` replaces only a directory whose marker names
   the same command and which holds nothing but the files that command writes there (``select``: also
   the files of its ``model/``, looked into one by one); a file, a symbolic link, a directory without
   the marker (including the output of a sparkfs older than the marker) or one holding anything else
   is refused. The
   resumable studies (``evaluate``, ``stability``) and ``compare`` write into a new or empty
   directory or into one carrying their own marker, nothing else.

When a replaced directory is removed, only the files its command writes are deleted, one by one,
then the (then empty) directory: a file that appeared in the meantime stays (:func:`remove_replaced`).
"""

from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass
from typing import FrozenSet, Iterable, List, Optional, Tuple, Union

from sparkfs.io.stores import LocalStore, Location, Place, location_of, locations_of, place_of

MARKER_KEY = "sparkfs_output"
#: Version of the marker and of the layout it vouches for; a larger one is refused.
MARKER_FORMAT = 1
#: A marker file above this size is not one sparkfs wrote (the largest summaries list every
#: selected feature's name); it is not read.
_LARGEST_MARKER_BYTES = 256 * 2**20


class OutputExistsError(FileExistsError):
    """The output exists and ``--overwrite`` was not given."""


class UnsafeOutputError(ValueError):
    """The output path would replace or delete data sparkfs did not write there."""


@dataclass(frozen=True)
class OutputKind:
    """What one command writes: its marker file and, for a directory it replaces whole, every
    name it writes there (None for a study directory it writes into and resumes)."""

    command: str
    marker_file: str
    files: Optional[FrozenSet[str]]
    #: Names it writes beyond ``files``, as a regular expression (``convert``: Spark's part files).
    file_pattern: Optional[str] = None
    #: Files below sub-directories, by relative path (``select``: its ``model/``), which an output of an
    #: earlier sparkfs may not have: allowed, replaced and removed as ``files`` are, never required.
    tree_files: FrozenSet[str] = frozenset()

    @property
    def directories(self) -> FrozenSet[str]:
        """The sub-directories of :attr:`tree_files` (``model``, ``model/data``), which it looks into."""
        found: set = set()
        for name in self.tree_files:
            parts = name.split("/")[:-1]
            found.update("/".join(parts[:depth]) for depth in range(1, len(parts) + 1))
        return frozenset(found)


#: The files of a fitted model as ``select`` writes them into ``model/`` (sparkfs.selectors' ``model_files``).
MODEL_FILES = frozenset(f"model/{name}" for name in ("metadata/part-00000", "data/part-00000.parquet",
                                                      "checksums/part-00000"))
#: Spark's part files of a Parquet directory (and its ``_SUCCESS``).
SPARK_PARTS = r"(part-\d{5}-[0-9a-f-]+(-c\d{3})?(\.\w+)?\.parquet|_SUCCESS)"

KINDS = {kind.command: kind for kind in (
    OutputKind("select", "summary.json", frozenset({"features.parquet", "summary.json"}), tree_files=MODEL_FILES),
    OutputKind("instance-weights", "summary.json", frozenset({"weights.parquet", "summary.json"})),
    OutputKind("evaluate", "study.json", None),
    OutputKind("stability", "plan.json", None),
    OutputKind("compare", "comparison.json", frozenset({"comparison.json", "comparison.md", "lowest_errors.csv",
                                                       "wilcoxon.csv"})),
    # A Parquet directory Spark writes: its marker starts with '_' so Parquet readers skip it.
    OutputKind("convert", "_summary.json", frozenset({"_summary.json"}), file_pattern=SPARK_PARTS),
    # The input with its vector sliced to a selection (``apply``, ``select --write-reduced``).
    OutputKind("apply", "_summary.json", frozenset({"_summary.json"}), file_pattern=SPARK_PARTS),
)}


def marker(command: str) -> dict:
    """The marker a command's marker file carries (merge it into the JSON document)."""
    if command not in KINDS:
        raise ValueError(f"unknown output kind {command!r}; known: {sorted(KINDS)}")
    return {MARKER_KEY: {"kind": command, "format": MARKER_FORMAT}}


# Rule 1: where -----------------------------------------------------------------------------------


def _relation(output: Place, other: Place) -> Optional[str]:
    """'is', 'contains' or 'inside' when ``output`` is, contains or lies inside ``other``."""
    if output[0] != other[0]:
        return None
    separator = os.sep if output[0] == "file" else "/"
    mine, theirs = output[1].rstrip(separator) or separator, other[1].rstrip(separator) or separator
    if mine == theirs:
        return "is"
    if theirs.startswith(mine if mine.endswith(separator) else mine + separator):
        return "contains"
    if mine.startswith(theirs if theirs.endswith(separator) else theirs + separator):
        return "inside"
    return None


def _is_root(place: Place) -> bool:
    path = place[1]
    return os.path.dirname(path) == path if place[0] == "file" else path.rstrip("/") == ""


def _local_homes() -> List[str]:
    homes = [os.path.expanduser("~"), os.environ.get("HOME")]
    try:
        import pwd

        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    except (ImportError, KeyError, AttributeError):  # Windows, or an account without an entry
        pass
    return [home for home in dict.fromkeys(homes) if home]


def _protected(store) -> List[Tuple[str, Place]]:
    places = [("the current directory", place_of(os.getcwd()))]
    places += [("the home directory", place_of(home)) for home in _local_homes()]
    return places + (store.own_directories() if store is not None else [])


def _shown(text: str, place: Place) -> str:
    where = place[1] if place[0] == "file" else place[0] + place[1]
    return str(text) if str(text).rstrip("/\\") == where.rstrip("/\\") else f"{text} (= {where})"


def check_location(output: Location, inputs: Iterable[Location] = (), *, store=None) -> None:
    """Rule 1 (module doc): refuse an output that is, contains or lies inside one of ``inputs``,
    is or contains the current or home directory, or is a file system's root.

    Without ``store`` the output must be local (a path or a ``file:`` URI); with an open
    :class:`~sparkfs.io.stores.HadoopStore` its places are the store's qualified paths.
    """
    here = output.place if store is None else store.place(store.target)
    shown = _shown(output.text, here)
    if _is_root(here):
        raise UnsafeOutputError(f"output {shown} is the root of its file system: everything on it would be at risk; "
                                "choose another --output (a new directory)")
    for source in inputs:
        relation = _relation(here, source.place if store is None else store.input_place(source))
        if relation == "is":
            raise UnsafeOutputError(f"output {shown} is the input {source}: writing the output there would replace "
                                    "the input; choose another --output")
        if relation == "contains":
            raise UnsafeOutputError(f"output {shown} contains the input {source}: an output directory must not hold "
                                    "the command's inputs (replacing it would delete them); choose another --output")
        if relation == "inside":
            raise UnsafeOutputError(f"output {shown} lies inside the input {source}: writing there would change the "
                                    "input; choose another --output outside it")
    for what, place in _protected(store):
        relation = _relation(here, place)
        if relation in ("is", "contains"):
            verb = "is" if relation == "is" else "contains"
            raise UnsafeOutputError(f"output {shown} {verb} {what} ({place[1]}), which holds files sparkfs did not "
                                    "write; choose another --output (a new directory, e.g. below it)")


def check_apart(first: str, first_flag: str, second: str, second_flag: str) -> None:
    """Refuse two outputs of one run where one is, contains or lies inside the other (compared as
    :func:`check_location` compares paths; URIs by scheme, authority and path)."""
    relation = _relation(place_of(first), place_of(second))
    if relation is None:
        return
    said = {"is": "is", "contains": "contains", "inside": "lies inside"}[relation]
    raise UnsafeOutputError(f"{first_flag} {first} {said} {second_flag} {second}: the two outputs of a run go to two "
                            "separate directories")


# Rule 2: what is there ---------------------------------------------------------------------------


def _marker_in(store, directory, kind: OutputKind) -> Tuple[Optional[dict], str]:
    """(the marker of ``directory``'s marker file or None, why there is none)."""
    path = store.path(directory, kind.marker_file)
    if not store.exists(path) or store.is_dir(path):
        return None, f"no {kind.marker_file}"
    if store.size(path) > _LARGEST_MARKER_BYTES:
        return None, f"its {kind.marker_file} is larger than any sparkfs writes"
    try:
        document = json.loads(store.read(path).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, f"its {kind.marker_file} is not JSON"
    tag = document.get(MARKER_KEY) if isinstance(document, dict) else None
    if not isinstance(tag, dict) or not isinstance(tag.get("kind"), str) or type(tag.get("format")) is not int:
        return None, (f"its {kind.marker_file} has no '{MARKER_KEY}' tag (outputs of sparkfs versions before the "
                      "tag have none)")
    return tag, ""


def _check_tag(tag: dict, kind: OutputKind, where: str, action: str) -> None:
    if tag["kind"] != kind.command:
        raise UnsafeOutputError(f"{where} holds the output of sparkfs {tag['kind']}, not of sparkfs {kind.command}: "
                                f"{action} would lose it; choose another --output")
    if not 1 <= tag["format"] <= MARKER_FORMAT:
        raise UnsafeOutputError(f"{where} was written in output format {tag['format']}, which this sparkfs does not "
                                f"know (it knows 1 to {MARKER_FORMAT}); choose another --output")


def _foreign(names: Iterable[str], kind: OutputKind) -> List[str]:
    """The relative paths among ``names`` that ``kind`` does not write."""
    if kind.files is None:  # a study directory (written into and resumed) has no fixed names to compare with
        raise TypeError(f"sparkfs {kind.command} writes no fixed set of files")
    ours = kind.files | kind.tree_files
    allowed = ours | {_crc_of(name) for name in ours}  # Hadoop's checksums of our files
    pattern = re.compile(rf"\.?{kind.file_pattern}(\.crc)?") if kind.file_pattern else None
    return [name for name in names if name not in allowed and not (pattern and pattern.fullmatch(name))]


def _crc_of(name: str) -> str:
    folder, _, base = name.rpartition("/")
    return f"{folder}/.{base}.crc" if folder else f".{base}.crc"


def _entries(store, directory, kind: OutputKind) -> List[str]:
    """Relative paths of what ``directory`` holds, looking into the sub-directories ``kind`` writes
    (any other sub-directory is listed as itself)."""
    found = []
    for name in store.names(directory):
        inner = store.path(directory, name)
        if name in kind.directories and store.is_dir(inner) and not store.is_symlink(inner):
            below = [f"{name}/{entry}" for entry in _entries(store, inner, _below(kind, name))]
            found.extend(below)  # an empty one holds nothing to keep: it goes with the rest
        else:
            found.append(name)
    return found


def _below(kind: OutputKind, folder: str) -> OutputKind:
    """``kind`` as seen from its sub-directory ``folder`` (its tree files there, no others)."""
    prefix = folder + "/"
    inside = frozenset(name[len(prefix):] for name in kind.tree_files if name.startswith(prefix))
    return OutputKind(kind.command, kind.marker_file, frozenset(), tree_files=inside)


def check_replaceable(store, command: str, overwrite: bool) -> None:
    """Rule 2 for a directory written whole (``select``, ``instance-weights``): nothing at the
    target, or with ``overwrite`` a directory this command wrote and nothing else."""
    kind, target = KINDS[command], store.target
    if not store.exists(target):
        return
    where = store.uri(target)
    # A link or a file is no output sparkfs wrote, with or without --overwrite: said once, and
    # --overwrite (which would refuse it too) is not suggested.
    if store.is_symlink(target):
        raise UnsafeOutputError(f"output {where} is a symbolic link, not an output directory sparkfs wrote; sparkfs "
                                "replaces only a directory it wrote, not a link: choose another --output")
    if not store.is_dir(target):
        if not store.exists(target):  # renamed away since the first look: another writer putting its output in place
            raise FileNotFoundError(errno.ENOENT, "No such file or directory (renamed away by another writer)", where)
        raise UnsafeOutputError(f"output {where} is a file, not an output directory sparkfs wrote; sparkfs never "
                                "replaces a file with a directory: choose another --output (a new directory)")
    if not overwrite:
        raise OutputExistsError(f"output directory {where} already exists; pass --overwrite (--if-exists overwrite) "
                                f"to replace it (only an output of sparkfs {command} can be replaced), or "
                                "--if-exists skip to keep a complete one and do nothing")
    tag, missing = _marker_in(store, target, kind)
    if tag is None:
        raise UnsafeOutputError(f"--overwrite: {where} is not an output of sparkfs {command} ({missing}); replacing "
                                "it could delete data sparkfs did not write: choose another --output")
    _check_tag(tag, kind, f"--overwrite: {where}", "replacing it")
    foreign = _foreign(_entries(store, target, kind), kind)
    if foreign:
        listed = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise UnsafeOutputError(f"--overwrite: {where} holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} "
                                f"sparkfs {command} does not write ({listed}): replacing the directory would delete "
                                "them; move them away or choose another --output")


def remove_replaced(store, directory, command: str) -> List[str]:
    """Delete the files ``command`` writes in ``directory``, then the directory if it is empty;
    returns the names left (anything else, which is never deleted)."""
    kind = KINDS[command]
    left = []
    for name in _entries(store, directory, kind):
        if name in _foreign([name], kind):
            left.append(name)
        else:
            store.delete_file(store.path(directory, name))
    for folder in sorted(kind.directories, key=lambda name: -name.count("/")):  # the deepest first
        inner = store.path(directory, folder)
        if store.exists(inner) and store.is_dir(inner) and not store.names(inner):
            store.delete_empty_directory(inner)
    if not left:
        store.delete_empty_directory(directory)
    return left


def local_directory(location: Location, flag: str = "--output") -> str:
    """The absolute local path of a study's directory (a path or a ``file:`` URI)."""
    if location.local is None:
        raise UnsafeOutputError(f"{flag} {location}: this command writes to a local directory only (a path or a "
                                "file:/// URI)")
    return location.local


def check_study_directory(path: Union[str, Location], command: str, inputs: Iterable[Union[str, Location, None]] = (),
                          *, flag: str = "--output", must_be_own: bool = False) -> str:
    """Rules 1 and 2 for a directory a command writes into and resumes (``evaluate``,
    ``stability``, ``compare``): new or empty, or carrying the command's own marker. With
    ``must_be_own`` (``report``) it must carry the marker, which is all rule 1 would prove.
    Returns the absolute local path."""
    kind = KINDS[command]
    location = location_of(path)
    directory = local_directory(location, flag)
    if not must_be_own:
        check_location(location.as_local(), locations_of(inputs))
    if not os.path.lexists(directory):
        if must_be_own:
            raise FileNotFoundError(f"{flag} {path} does not exist; run sparkfs {command} first")
        return directory
    if not os.path.isdir(directory):
        raise UnsafeOutputError(f"{flag} {path} is a file, not a directory of sparkfs {command}; sparkfs never "
                                "replaces a file with a directory: choose another directory")
    staging = re.compile(rf"^\.{re.escape(kind.marker_file)}\..*\.tmp$")  # left by a killed first write
    if not must_be_own and all(staging.match(name) for name in os.listdir(directory)):
        return directory
    tag, missing = _marker_in(LocalStore(location), directory, kind)
    if tag is None:
        if must_be_own:
            raise UnsafeOutputError(f"{flag} {path} is not a directory of sparkfs {command} ({missing}); sparkfs "
                                    f"report writes only into the directory of an evaluation")
        raise UnsafeOutputError(f"{flag} {path} is not empty and is not a directory of sparkfs {command} ({missing}); "
                                f"sparkfs {command} writes only into a new or empty directory, or into one it wrote "
                                "itself (to resume): choose another directory")
    _check_tag(tag, kind, f"{flag} {path}", "writing into it")
    return directory
