"""The documentation site builds with no warning: `mkdocs build --strict` over docs/ with
the API pages generated from the docstrings, and every page of docs/ is in its navigation."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _nav_pages(nav):
    for entry in nav:
        for value in entry.values():
            if isinstance(value, list):
                yield from _nav_pages(value)
            else:
                yield value


def test_every_page_is_in_the_navigation():
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)
    listed = set(_nav_pages(config["nav"]))
    pages = {path.relative_to(ROOT / "docs").as_posix() for path in (ROOT / "docs").rglob("*.md")}
    assert pages == listed, f"not in mkdocs.yml's nav: {sorted(pages - listed)}; missing: {sorted(listed - pages)}"


def test_the_site_builds_without_warnings(tmp_path):
    pytest.importorskip("mkdocstrings")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stderr[-3000:]
    assert "WARNING" not in built.stderr, built.stderr[-3000:]
    api = (tmp_path / "site" / "api" / "selectors" / "index.html").read_text()
    assert "UnivariateTestSelector" in api and "ReliefSelector" in api   # generated from the docstrings
