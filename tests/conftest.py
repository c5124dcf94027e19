"""Session-scoped local SparkSession (local[2], few shuffle partitions, UI off) and data paths."""

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

#: Every JVM that spark-submit starts for the tests (this session's, the command-line children's,
#: the Connect servers') compiles with the JIT's first tier only. The suite's JVMs are short-lived
#: and their work is small: measured on this project's tests, a `sparkfs select` child then costs
#: about 40 % less CPU and the in-process session's modules about 13 % less, with the same results.
#: SPARK_SUBMIT_OPTS is read by spark-submit's launcher and, unlike JAVA_TOOL_OPTIONS, prints nothing.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1"
if "TieredStopAtLevel" not in os.environ.get("SPARK_SUBMIT_OPTS", ""):
    os.environ["SPARK_SUBMIT_OPTS"] = f"{os.environ.get('SPARK_SUBMIT_OPTS', '')} {TEST_JVM_OPTIONS}".strip()

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"

# tests/connect needs a process without a classic SparkSession: the main suite runs it in a child
# process (tests/integration/test_spark_connect.py), which sets SPARKFS_CONNECT_TESTS=1.
collect_ignore = [] if os.environ.get("SPARKFS_CONNECT_TESTS") == "1" else ["connect"]


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """The worker's session. Its catalog's warehouse is a temporary folder (Spark's default,
    ``./spark-warehouse``, would put the table tests' tables in the working tree)."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("sparkfs-tests")
        .config("spark.sql.warehouse.dir", str(tmp_path_factory.mktemp("spark-warehouse")))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "4")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def shared_data():
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder not found at {SHARED_DATA}")
    return SHARED_DATA


# ---- test tiers ---------------------------------------------------------------------------------
# `spark`: the test needs a JVM (the session fixture, a JVM the test starts itself, a child job or a
# Connect server). Marked automatically for every test that uses a fixture of JVM_FIXTURES; modules that
# start their JVM another way say `pytestmark = pytest.mark.spark`. `make test-fast` runs
# `-m "not spark"` with SPARKFS_TEST_TIER=fast, where starting a JVM fails the test at once.


#: Fixtures that start a JVM (a test using one needs the `spark` tier).
JVM_FIXTURES = {"spark", "connect_url"}


def pytest_configure(config):
    from tests import jvm_archive

    if jvm_archive.wanted(config):
        folder = jvm_archive.make_archive(Path(__file__).resolve().parents[1])
        if folder is not None:
            jvm_archive.use(folder)
            config._sparkfs_cds_folder = folder


def pytest_unconfigure(config):
    folder = getattr(config, "_sparkfs_cds_folder", None)
    if folder is not None:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    for item in items:
        if JVM_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.spark)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        items[:] = slow_modules_first(items)


def slow_modules_first(items):
    """The items of every module holding a `slow` test before the others (each group in collection
    order): with `make test`'s workers taking whole modules in this order, the longest modules start
    first instead of one of them running alone at the end."""
    def module_of(item):
        return getattr(getattr(item, "module", None), "__name__", None)

    slow = {module_of(item) for item in items if item.get_closest_marker("slow")}
    return sorted(items, key=lambda item: module_of(item) not in slow)  # stable: collection order kept in each group


def _refuse_jvm(*args, **kwargs):
    raise RuntimeError("this test starts a JVM: mark it `pytest.mark.spark` (the fast tier runs without one)")


if os.environ.get("SPARKFS_TEST_TIER") == "fast":
    import pyspark.java_gateway

    pyspark.java_gateway.launch_gateway = _refuse_jvm
