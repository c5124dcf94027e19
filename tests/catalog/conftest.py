"""A classic session whose catalog's warehouse is a temporary directory, for the tests of tables (run in their
own process).

``spark.sql.warehouse.dir`` is fixed when a session starts, and the suite's session keeps Spark's default
(``./spark-warehouse``, in the repository): a table test there would write into the working tree. So the main
suite runs this folder in a child pytest process (``tests/integration/test_catalog_tables.py``), where ``spark``
starts with the warehouse in a temporary directory; its tables live in the session's in-memory catalog.
"""

import os
import sys

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory):
    return tmp_path_factory.mktemp("spark-warehouse")


@pytest.fixture(scope="session")
def spark(warehouse):
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("sparkfs-catalog-tests")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
