"""The tests of catalog tables run on the suite's session (tests/conftest.py), whose warehouse is a temporary
folder; each module keeps its tables in a database of its own. Nothing may appear in the working tree."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", autouse=True)
def no_warehouse_in_the_working_tree():
    """No ``spark-warehouse`` nor ``metastore_db`` appears in the repository during a module's table tests."""
    names = ("spark-warehouse", "metastore_db")
    before = {name for name in names if (ROOT / name).exists()}
    yield
    assert {name for name in names if (ROOT / name).exists()} == before
