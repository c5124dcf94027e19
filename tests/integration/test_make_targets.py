"""`make demo` installs sparkfs alone, `make test` the dev extras, and neither install stands for the
other (each has its own stamp). Checked with `make -n` (what make would run) on a stand-in venv."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def planned(target, venv):
    """The commands `make TARGET` would run with VENV=venv, one per line (nothing is run)."""
    result = subprocess.run(["make", "-n", "-C", str(ROOT), f"VENV={venv}", target], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def installs(commands):
    return [line.split("install --quiet ", 1)[1].strip() for line in commands.splitlines()
            if "pip install --quiet" in line and "--upgrade pip" not in line]


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_demo_installs_sparkfs_alone_and_test_the_dev_extras(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").touch()           # the venv exists: only the installs are left
    assert installs(planned("demo", venv)) == ["-e ."]
    assert "spark-submit" in planned("demo", venv)
    assert installs(planned("test", venv)) == ['-e ".[dev]"']
    # A demo install done: `make test` still installs the extras, and `make demo` nothing more.
    (venv / ".installed-demo").touch()
    assert installs(planned("demo", venv)) == []
    assert installs(planned("test", venv)) == ['-e ".[dev]"']
    # Both done: neither installs again until pyproject.toml changes.
    (venv / ".installed-test").touch()
    assert installs(planned("test", venv)) == [] and installs(planned("demo", venv)) == []
