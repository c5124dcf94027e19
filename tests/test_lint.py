"""ruff and mypy, as configured in pyproject.toml, find nothing: the same checks pre-commit runs
(.pre-commit-config.yaml), so `make test` and `make test-fast` fail on a finding. No JVM."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str) -> str:
    """The tool next to this interpreter (the project's venv), else on PATH; skipped when absent."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[dev]')")
    return found


def _run(command):
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    return done.returncode, (done.stdout + done.stderr).strip()


def test_ruff_finds_nothing():
    code, output = _run([_tool("ruff"), "check", "--no-cache", "--output-format", "concise", "."])
    assert code == 0, f"ruff check found:\n{output}"


def test_mypy_finds_nothing():
    code, output = _run([_tool("mypy")])   # the files and settings of pyproject.toml's [tool.mypy]
    assert code == 0, f"mypy found:\n{output}"
