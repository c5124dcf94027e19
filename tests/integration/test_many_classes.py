"""Many classes: ReliefF with 2,000 classes ran with a 240-line `Code grows beyond
64 KB` compiler trace on stderr (the label index was a CASE WHEN of 2,000 branches, which Spark then
interpreted). The index is a lookup in a literal map above CASE_WHEN_CLASSES classes, and Spark's
code generator's fallback is kept off the user's stderr."""

import numpy as np
import pandas as pd
import pytest

from sparkfs.spark.stats import CASE_WHEN_CLASSES, with_label_index

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("kind", ["float", "string"])
def test_the_label_index_above_the_case_when_limit_is_a_map_lookup(spark, kind):
    classes = CASE_WHEN_CLASSES + 36
    values = [float(v) * 1.5 for v in range(classes)] if kind == "float" else [f"c{v:03d}" for v in range(classes)]
    rng = np.random.default_rng(1)
    rows = rng.integers(0, classes, size=300)
    df = spark.createDataFrame(pd.DataFrame({"label": [values[i] for i in rows], "position": np.arange(300)}))
    indexed = with_label_index(df, "label", values, "index")
    plan = indexed._jdf.queryExecution().analyzed().toString()
    assert "CASE WHEN" not in plan.upper(), plan[:500]
    got = indexed.orderBy("position").toPandas()["index"].to_numpy()
    np.testing.assert_array_equal(got, rows.astype(float))
    few = with_label_index(df, "label", values[:3], "index").filter("position < 300")
    assert "CASE WHEN" in few._jdf.queryExecution().analyzed().toString().upper()


def test_relieff_with_2000_classes_prints_no_compiler_trace(tmp_path):
    """`sparkfs select` in a process of its own (its own JVM and log configuration, as a user runs it)."""
    import os
    import subprocess
    import sys

    rng = np.random.default_rng(0)
    n = 4000
    frame = pd.DataFrame(rng.normal(size=(n, 5)), columns=[f"x{i}" for i in range(5)])
    frame["label"] = np.arange(n) % 2000
    frame.to_csv(tmp_path / "many.csv", index=False)
    out = tmp_path / "out"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    ran = subprocess.run([sys.executable, "-m", "sparkfs.cli", "select", "--input", str(tmp_path / "many.csv"),
                          "--format", "csv", "--label-col", "label", "--method", "relieff", "--num-features", "2",
                          "--param", "allowManyClasses=true", "--param", "sampleSize=200", "--param", "k=1",
                          "--master", "local[2]", "--conf", "spark.ui.enabled=false", "--output", str(out)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    for word in ("Code grows beyond 64 KB", "CodeGenerator", "Exception", "\tat "):
        assert word not in ran.stderr, ran.stderr[-3000:]
    summary = pd.read_json(out / "summary.json", typ="series")
    assert summary["n_classes"] == 2000


def test_a_large_neighbour_table_is_announced_before_the_search(spark, monkeypatch):
    """The table is within driverBudgetMB (else refused) but large: a LargeWorkWarning names its size
    and the Params that lower it (ReliefF with 2,000 classes took 4.9 GB across the processes)."""
    import sparkfs.selectors.relief as relief_module
    from sparkfs import ReliefSelector
    from sparkfs.errors import LargeWorkWarning
    from tests.helpers import make_df

    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(40, 3)), np.arange(40) % 4
    monkeypatch.setattr(relief_module, "LARGE_TABLE_BYTES", 16 * 40 * 4 * 3 - 1)  # just below 40 x 4 x k=3
    with pytest.warns(LargeWorkWarning, match=r"the neighbour table of 40 queries x 4 classes x k=3 neighbours "
                                               r"takes 0 MiB, built in every task.*a smaller sampleSize or k"):
        ReliefSelector(numFeatures=1, k=3).fit(make_df(spark, X, y))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", LargeWorkWarning)
        ReliefSelector(numFeatures=1, k=3, sampleSize=39).fit(make_df(spark, X, y))  # 39 queries: below
        ReliefSelector(numFeatures=1, variant="prelief").fit(make_df(spark, X, y))  # no neighbour table
