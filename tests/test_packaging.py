"""What a cluster installs: the pack's requirements, the notebooks' wheel parameter. No JVM."""

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
WHEEL = "/Volumes/main/default/wheels/sparkfs-0.1.0-py3-none-any.whl"


def _pack_env():
    spec = importlib.util.spec_from_file_location("pack_env", REPO / "tools" / "pack_env.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_pack_has_every_runtime_dependency_but_pyspark():
    import tomllib

    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    packed = _pack_env().runtime_requirements(REPO / "pyproject.toml")
    assert ([name for name in declared if name not in packed]
            == [name for name in declared if name.startswith("pyspark")])
    assert packed and not any(name.lower().startswith("pyspark") for name in packed)


class _Widgets:
    def __init__(self, value):
        self.value = value

    def get(self, name):
        assert name == "SPARKFS_WHEEL"
        return self.value


class _Dbutils:
    def __init__(self, widget=None):
        self.library = type("Library", (), {"restartPython": lambda self: None})()
        if widget is not None:
            self.widgets = _Widgets(widget)


def _install_magics(path, monkeypatch, dbutils, wheel_variable=None):
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "15.4")
    if wheel_variable is None:
        monkeypatch.delenv("SPARKFS_WHEEL", raising=False)
    else:
        monkeypatch.setenv("SPARKFS_WHEEL", wheel_variable)
    magics = []
    ipython = type("IPython", (), {"run_line_magic": lambda self, name, line: magics.append((name, line))})()
    cell = next(cell for cell in json.loads(path.read_text())["cells"] if cell["cell_type"] == "code")
    exec(compile("".join(cell["source"]), "install cell", "exec"), {"get_ipython": lambda: ipython, "dbutils": dbutils})
    return magics


@pytest.mark.parametrize("path", sorted((REPO / "notebooks").glob("*.ipynb")), ids=lambda path: path.stem)
def test_the_notebooks_install_a_wheel_from_a_volume(path, monkeypatch):
    """A job's SPARKFS_WHEEL parameter (a widget), else the cluster's variable, else sparkfs."""
    assert _install_magics(path, monkeypatch, _Dbutils(WHEEL))[0] == ("pip", f"install --quiet --no-deps {WHEEL}")
    assert _install_magics(path, monkeypatch, _Dbutils(""), wheel_variable=WHEEL)[0][1].endswith(WHEEL)
    assert _install_magics(path, monkeypatch, _Dbutils())[0] == ("pip", "install --quiet --no-deps sparkfs")
