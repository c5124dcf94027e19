"""sparkfs on Spark Connect (Databricks serverless and shared clusters speak it).

The tests in tests/connect run in a child pytest process (a process with a classic SparkSession
cannot open a Connect one) on ``SparkSession.builder.remote("local[2]")``. Then the ReliefF fits
they made are repeated here on the classic session: both must give the same scores.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyspark.sql.connect.session")
pytest.importorskip("grpc")

from sparkfs.core.options import ReliefOptions
from sparkfs.spark.relief import relief_statistics
from tests.connect.test_on_connect import small_class_data
from tests.spark.test_relief_engine import make_df

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_connect_suite_passes_and_equals_the_classic_session(spark, tmp_path):
    env = dict(os.environ, SPARKFS_CONNECT_TESTS="1", SPARKFS_CONNECT_RESULTS=str(tmp_path))
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/connect"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800,
    )
    assert completed.returncode == 0, completed.stdout[-6000:] + completed.stderr[-3000:]
    assert " passed" in completed.stdout and "skipped" not in completed.stdout, completed.stdout[-2000:]
    X, y = small_class_data()
    for variant in ("relief", "relieff"):
        on_connect = np.load(tmp_path / f"{variant}_small_classes.npy")
        classic = relief_statistics(make_df(spark, X, y, 2), "features", "label", num_features=6, num_classes=4,
                                    options=ReliefOptions(variant=variant, k=10))
        assert classic.info["transport"] == "context"
        np.testing.assert_allclose(on_connect, classic.scores, rtol=1e-9, atol=1e-12 * np.abs(classic.scores).max())
