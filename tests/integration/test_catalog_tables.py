"""Tables of the session's catalog (``--input-table``): the tests in tests/catalog run in a child pytest process
whose session keeps its warehouse in a temporary directory (the suite's session would write
``./spark-warehouse`` into the working tree). Nothing may appear in the working directory."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.spark


def test_catalog_suite_passes_in_its_own_process():
    before = set(os.listdir(ROOT))
    env = dict(os.environ, SPARKFS_CATALOG_TESTS="1", PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    completed = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/catalog"],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert completed.returncode == 0, completed.stdout[-6000:] + completed.stderr[-3000:]
    assert " passed" in completed.stdout and "skipped" not in completed.stdout, completed.stdout[-2000:]
    assert set(os.listdir(ROOT)) - before == set()  # no spark-warehouse, no metastore_db
