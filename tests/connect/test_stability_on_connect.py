"""Han & Yu's entry points on Spark Connect: MarginInstanceWeighter, SVMRFESelector (both
solvers), instance-weighted ReliefF, and the `instance-weights` / `stability` commands."""

import json

import numpy as np
import pandas as pd
from pyspark.ml.linalg import Vectors

from sparkfs import MarginInstanceWeighter, ReliefSelector, SVMRFESelector
from sparkfs.cli import main
from sparkfs.core import svm_rfe as rfe
from tests.connect.test_on_connect import connect_df
from tests.core.test_instance_weighting import assert_close, reference_margin_vectors, reference_weights
from tests.spark.test_relief_weighted import reference_weighted_relieff

#: The methods this module runs on Connect (the stability command runs lfs).
CONNECT_METHODS = ["lfs", "svm-rfe"]


def _data(seed=0, n=30, d=4):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 3)
    y = (2 * X[:, 0] - X[:, 1] > 0).astype(int)
    return X, y


def test_margin_instance_weighter_on_connect(spark):
    X, y = _data()
    out = MarginInstanceWeighter(outputCol="w").transform(connect_df(spark, X, y, 2)).toPandas()
    expected, _ = reference_weights(reference_margin_vectors(X.tolist(), y.tolist()))
    assert out["label"].tolist() == [float(v) for v in y]
    assert_close(out["w"].to_numpy(), expected)


def test_svm_rfe_on_connect_both_solvers(spark):
    X, y = _data(seed=1, d=3)
    df = connect_df(spark, X, y, 2)
    driver = SVMRFESelector(numFeatures=2, step=1.0, instanceWeighting="margin", standardize=False,
                            eliminateAll=True).fit(df)
    weights = reference_weights(reference_margin_vectors(X.tolist(), y.tolist()))[0]
    np.testing.assert_array_equal(driver.featureArray("ranking"),
                                  rfe.svm_rfe(X, y, sample_weight=weights, step=1).ranking)
    standardised = SVMRFESelector(numFeatures=2, step=1.0,
                                  eliminateAll=True).fit(df)   # the scaling transformer runs on Connect
    np.testing.assert_array_equal(standardised.featureArray("ranking"),
                                  rfe.svm_rfe(X, y, step=1, standardize=True).ranking)
    # tol=1e-3: converged within maxIter (a capped L-BFGS fit pays up to 2 maxIter + 20 passes, each a
    # Connect job: 8 capped iterations were most of this folder's time)
    on_spark = SVMRFESelector(numFeatures=2, step=1.0, solver="spark", maxIter=8, tol=1e-3).fit(df)
    assert on_spark.summary["solver"] == "spark" and on_spark.selectedFeatures == driver.selectedFeatures
    assert on_spark.summary["convergence"]["not_converged"] == 0


def test_weighted_relieff_on_connect(spark):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(24, 3))
    y = np.arange(24) % 2
    s = rng.uniform(0.5, 2.0, 24)
    frame = spark.createDataFrame([(Vectors.dense(x.tolist()), float(label), float(weight))
                                   for x, label, weight in zip(X, y, s)], ["features", "label", "weight"])
    model = ReliefSelector(variant="relieff", k=3, scaling="none", weightCol="weight").fit(frame)
    np.testing.assert_allclose(model.scores, reference_weighted_relieff(X, y, s, 3), rtol=1e-9, atol=1e-12)


def test_study_commands_on_connect(spark, tmp_path):
    X, y = _data(seed=2, n=24)
    csv = tmp_path / "small.csv"
    pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(label=y).to_csv(csv, index=False)
    common = ["--input", str(csv), "--format", "csv", "--label-col", "label"]
    assert main(["instance-weights", *common, "--output", str(tmp_path / "iw")]) == 0
    expected, _ = reference_weights(reference_margin_vectors(X.tolist(), y.tolist()))
    assert_close(pd.read_parquet(tmp_path / "iw" / "weights.parquet")["weight"].to_numpy(), expected)
    assert main(["stability", *common, "--method", "lfs", "--runs", "3", "--num-features", "1,2",
                 "--output", str(tmp_path / "study")]) == 0
    summary = json.loads((tmp_path / "study" / "stability.json").read_text())["summary"]
    assert [row["k"] for row in summary["subsets"]] == [1, 2]
