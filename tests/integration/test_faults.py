"""Faults in the cluster: a task that fails on its first attempt is retried by Spark, and the
result equals the fault-free one exactly (issue 13). Runs in a child process on ``local[2,3]``
(two threads, up to three attempts per task), with the engine's test-only fault hook."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy as np
    from pyspark.ml.linalg import Vectors
    from pyspark.sql import SparkSession
    from sparkfs import LmbaSelector, ReliefSelector

    armed = os.path.join(sys.argv[1], "armed")
    spark = SparkSession.builder.master("local[2,3]").config("spark.ui.enabled", "false").getOrCreate()
    rng = np.random.default_rng(5)
    X = rng.normal(size=(90, 5))
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(float)
    df = spark.createDataFrame([(Vectors.dense(r.tolist()), float(l)) for r, l in zip(X, y)],
                               ["features", "label"]).repartition(3).cache()
    df.count()
    selectors = {
        "relieff": lambda: ReliefSelector(numFeatures=2, k=4),
        "lmba": lambda: LmbaSelector(numFeatures=2, batchSize=16, iterations=16),
    }
    results = {}
    for name, make in selectors.items():
        runs = []
        for faulty in (False, True):
            if faulty:
                open(armed, "w").close()
            try:
                runs.append(make().fit(df).scores.tolist())
            finally:
                if os.path.exists(armed):
                    os.remove(armed)
        results[name] = runs
    print("RESULT " + json.dumps(results))
""")


def test_a_task_failing_once_is_retried_and_gives_the_same_scores(tmp_path):
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARKFS_FAULT_INJECTION": str(tmp_path)}
    finished = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True, text=True, env=env,
                              timeout=600)
    assert finished.returncode == 0, finished.stderr[-3000:]
    line = next(line for line in finished.stdout.splitlines() if line.startswith("RESULT "))
    results = json.loads(line[len("RESULT "):])
    faults = [path.name for path in tmp_path.iterdir() if path.name.startswith("fault-")]
    assert len(faults) >= 4, faults  # every faulty fit lost tasks, and Spark retried them
    assert "injected fault" in finished.stderr
    for name, (clean, retried) in results.items():
        assert np.array_equal(np.asarray(clean), np.asarray(retried)), name
