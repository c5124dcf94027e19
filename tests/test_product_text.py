"""The product's code and documentation describe what it does now, not how it got there.

The package, its documentation, the README, the jobs, the configurations and the notebooks carry
no references to the project's own work items ("issue 12", "stop 30", "(issue ...", or "the issue"
given as a reason): such a reference points nowhere for a reader, and what changed and when is
``CHANGELOG.md``'s. A choice states its reason itself. The README links nothing outside the
repository. No JVM: this runs in the fast tier.
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: What the product's text is: these folders and files, every text file in them.
PRODUCT_PATHS = ("sparkfs", "docs", "README.md", "jobs", "conf", "notebooks")
#: The contributors' code: the tests and benchmarks (their .py files; the benchmarks' dated results
#: are records of past runs). This file is left out: it names the patterns.
CONTRIBUTOR_PATHS = ("tests", "benchmarks", "tools")
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".ipynb", ".properties", ".txt", ".toml", ".cfg", ".json"}

#: A reference to a work item of the project (case-insensitive). "issue #74" of another project's
#: public tracker does not match: it has an address.
HISTORY = re.compile(r"issue [0-9]|issues? [0-9]|stop [0-9]|\(issue|the issue", re.IGNORECASE)

#: Where a string literal goes on in the next line's literal (Python's implicit concatenation, or a
#: wrapped Markdown line): joined before the search, so a mention split over two lines is found.
LINE_BREAK_IN_TEXT = re.compile(r"[\"']?[ \t]*\n[ \t]*(?:#[ \t]*)?(?:[rfbu]{0,2}[\"'])?", re.IGNORECASE)

#: A Markdown link or a code-quoted path that leaves the repository.
OUTSIDE_LINK = re.compile(r"\]\(\.\./|`\.\./")


def _product_files():
    for name in PRODUCT_PATHS:
        path = ROOT / name
        if path.is_file():
            yield path
        elif path.is_dir():
            for file in sorted(path.rglob("*")):
                if file.is_file() and file.suffix in TEXT_SUFFIXES and "__pycache__" not in file.parts:
                    yield file


def _contributor_files():
    for name in CONTRIBUTOR_PATHS:
        for file in sorted((ROOT / name).rglob("*.py")):
            if file != Path(__file__).resolve() and "__pycache__" not in file.parts:
                yield file


def history_mentions():
    """Every line of the product's text and the contributors' code that refers to a work item:
    ``path:line: text``."""
    found = []
    for file in [*_product_files(), *_contributor_files()]:
        lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
        for number, line in enumerate(lines, 1):
            following = lines[number] if number < len(lines) else ""
            joined = re.sub(r"\s+", " ", LINE_BREAK_IN_TEXT.sub(" ", line + "\n" + following))
            if HISTORY.search(line) or (HISTORY.search(joined) and not HISTORY.search(following)):
                found.append(f"{file.relative_to(ROOT)}:{number}: {line.strip()[:160]}")
    return found


def test_history_pattern_matches_what_it_should():
    for text in ("(issue 12)", "Issue 23's case", "issues 22 and 32", "**Stop 30:**", "we follow the issue"):
        assert HISTORY.search(text), text
    for text in ("scikit-rebate's GitHub issue #74", "an issue of memory", "--issue-case", "stop the job"):
        assert not HISTORY.search(text), text


def test_a_mention_split_over_two_string_literals_is_found(tmp_path, monkeypatch):
    """``"... w; issue "`` then ``"11's reading)"`` on the next line reads "issue 11's" once joined."""
    decoy = tmp_path / "sparkfs" / "decoy.py"
    decoy.parent.mkdir()
    decoy.write_text('doc = ("the image reading (q is p shrunk by w; issue "\n         "11\'s reading)")\n'
                     "# a wrapped comment says stop\n# 3 times, and the next line ends it\nx = 1\n")
    here = sys.modules[__name__]
    monkeypatch.setattr(here, "ROOT", tmp_path)
    monkeypatch.setattr(here, "PRODUCT_PATHS", ("sparkfs",))
    monkeypatch.setattr(here, "CONTRIBUTOR_PATHS", ())
    assert [mention.split(": ")[0] for mention in history_mentions()] == ["sparkfs/decoy.py:1", "sparkfs/decoy.py:3"]


def test_no_project_history_in_the_product():
    found = history_mentions()
    assert not found, ("the product's text refers to the project's history (state the reason itself; "
                       "what changed belongs in CHANGELOG.md):\n" + "\n".join(found))


def test_readme_links_nothing_outside_the_repository():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    outside = [f"README.md:{number}: {line.strip()}" for number, line in enumerate(lines,
                                                                                   1) if OUTSIDE_LINK.search(line)]
    assert not outside, "\n".join(outside)


if __name__ == "__main__":
    print("\n".join(history_mentions()))
