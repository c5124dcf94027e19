"""A Spark Connect session for the tests in this folder (run in their own process).

A process that already runs a classic SparkSession cannot open a Connect session, so the main
suite runs this folder in a child pytest process (``tests/integration/test_spark_connect.py``),
where ``spark`` is ``SparkSession.builder.remote("local[2]")``: a local Connect server, with no
SparkContext, no RDDs and no ``_jvm`` on the client side, as on Databricks serverless and
shared clusters.
"""

import os
import sys

import pytest

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory):
    """The local Connect server's catalog warehouse: a temporary folder, not ``./spark-warehouse`` in
    the repository (the server's working folder)."""
    return tmp_path_factory.mktemp("connect-warehouse")


@pytest.fixture(scope="session")
def spark(warehouse):
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.remote("local[2]")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .getOrCreate()
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def results_dir():
    """Where the tests leave numbers for the classic-session comparison in the parent process."""
    path = os.environ.get("SPARKFS_CONNECT_RESULTS")
    if not path:
        pytest.skip("SPARKFS_CONNECT_RESULTS not set (run through tests/integration/test_spark_connect.py)")
    return path
