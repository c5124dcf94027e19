"""The project's metadata: one version source, the project's addresses, a changelog. No JVM."""

import re
from pathlib import Path

import tomllib

import sparkfs
from sparkfs._version import __version__

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_version_is_written_once_and_read_by_the_build():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "sparkfs._version.__version__"}
    assert sparkfs.__version__ == __version__
    assert re.fullmatch(r"\d+\.\d+\.\d+([ab]|rc)?\d*", __version__)


def test_project_urls_name_the_docs_the_changelog_and_the_source():
    urls = PYPROJECT["project"]["urls"]
    assert {"Documentation", "Changelog", "Source"} <= set(urls)
    for address in urls.values():
        if "://" not in address:   # a place in the source tree while there is no public address
            assert (ROOT / address.split("#")[0]).exists(), address


def test_the_changelog_keeps_an_unreleased_section():
    text = (ROOT / "CHANGELOG.md").read_text()
    assert text.startswith("# Changelog")
    assert "## [Unreleased]" in text
    assert "keepachangelog.com" in text
