"""Many classes: ReliefF with 2,000 classes ran with a 240-line `Code grows beyond
64 KB` compiler trace on stderr (the label index was a CASE WHEN of 2,000 branches, which Spark then
interpreted). The index is a lookup in a literal map above CASE_WHEN_CLASSES classes, and Spark's
code generator's fallback is kept off the user's stderr. Classes too many for the float statistics
pass's per-class sums (on a very wide row) make it stop and hand over to Spark's Summarizer without a
failed task, so a run that succeeds logs no error."""

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


@pytest.mark.slow  # a child JVM: about 40 s on a busy machine
def test_classes_too_many_for_per_class_sums_fall_back_without_a_failed_task(tmp_path):
    """A row so wide that the classes' dense sums pass the float pass's cap: the pass stops with a
    summary that says so (not an exception in a task, which Spark logs as an ERROR with its trace),
    and the Summarizer's fit gives anova's selection; stderr holds no error, trace or exception."""
    import json
    import os
    import subprocess
    import sys

    from sklearn.feature_selection import f_classif

    from sparkfs.spark.float_moments import FOLDED_CLASS_BYTES, is_wide

    classes, informative = 20, 4
    width = FOLDED_CLASS_BYTES // (16 * classes) + 1  # 20 classes' sums pass the cap; two classes' do not
    assert not is_wide(width, FOLDED_CLASS_BYTES)
    rng = np.random.default_rng(3)
    labels = np.repeat(np.arange(classes), 3)
    values = labels[:, None] * (1.0 + np.arange(informative)) + rng.normal(scale=4.0, size=(labels.size, informative))
    lines = [f"{label} " + " ".join(f"{j + 1}:{v:.6f}" for j, v in enumerate(row))
             for label, row in zip(labels, values)]
    lines.append("0 " + " ".join(f"{j}:1" for j in range(1, width + 1)))  # the wide row
    (tmp_path / "wide.libsvm").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    ran = subprocess.run([sys.executable, "-m", "sparkfs.cli", "select", "--input", str(tmp_path / "wide.libsvm"),
                          "--method", "anova", "--num-features", "2", "--master", "local[2]",
                          "--conf", "spark.ui.enabled=false", "--output", str(out)],
                         capture_output=True, text=True, env=env, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    for word in ("ERROR", "Traceback", "Exception", "\tat "):
        assert word not in ran.stderr, ran.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["stats_engine"] == "jvm" and summary["n_classes"] == classes and summary["n_features"] == width
    import scipy.sparse as sp

    matrix = sp.lil_matrix((labels.size + 1, width))
    matrix[: labels.size, :informative] = np.round(values, 6)
    matrix[labels.size, :] = 1.0
    scores, _ = f_classif(sp.csr_matrix(matrix), np.append(labels, 0))
    assert sorted(summary["selected_indices"]) == sorted(np.argsort(-scores, kind="mergesort")[:2].tolist())
