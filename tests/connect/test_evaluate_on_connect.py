"""`sparkfs evaluate` on Spark Connect: selection inside each training fold, scikit-learn on the
driver, and pyspark.ml classifiers above the driver budget (the fold's columns sliced and
classified through the Connect client, no SparkContext)."""

import numpy as np
import pandas as pd

from sparkfs.cli import main
from sparkfs.evaluation import cross_validation as cv
from tests.core.test_fisher_markov import theta_eq19_literal

#: The methods this module runs on Connect.
CONNECT_METHODS = ["lfs"]


def test_evaluate_on_connect_both_engines(spark, tmp_path):
    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(40, 6)), 3)
    y = (X[:, 0] - 0.7 * X[:, 2] + 0.3 * rng.normal(size=40) > 0).astype(int)
    path = tmp_path / "small.csv"
    pd.DataFrame(X, columns=[f"g{i}" for i in range(6)]).assign(label=y).to_csv(path, index=False)
    # one method (several methods share the study's loop, tests/commands/test_evaluate_cli.py)
    base = ["evaluate", "--input", str(path), "--format", "csv", "--label-col", "label", "--methods", "lfs",
            "--num-features", "1,3", "--cv", "2", "--param", "lfs.preset=paper"]   # the reference: eq. 19, raw data
    driver, on_spark = tmp_path / "driver", tmp_path / "spark"
    assert main([*base, "--classifiers", "knn,nb", "--output", str(driver)]) == 0
    results = pd.read_parquet(driver / "results.parquet")
    assert set(results["engine"]) == {"scikit-learn"} and len(results) == 2 * 2 * 2   # classifiers x k x folds
    for fold in cv.fold_plan(y, cv=2, seed=0):
        theta = theta_eq19_literal(X[fold.train], y[fold.train], -0.5)
        expected = pd.DataFrame(cv.score_subsets(X[fold.train], y[fold.train], X[fold.test], y[fold.test],
                                                 np.argsort(-theta, kind="stable"), [1, 3], ["knn", "nb"]))
        got = results[(results["method"] == "lfs") & (results["fold"] == fold.fold)].sort_values(["classifier", "k"])
        np.testing.assert_allclose(got["accuracy"].to_numpy(),
                                   expected.sort_values(["classifier", "k"])["accuracy"].to_numpy())
    # pyspark.ml through Connect fits slowly (every iteration is a server job): nb only, one method,
    # one k (the classifiers share one fold path, sparkfs.spark.classifiers.fold_predictions; svm,
    # nb and tree are each checked in tests/commands/test_evaluate_cli.py)
    assert main([*base[:8], "lfs", "--num-features", "3", "--cv", "2", "--param", "lfs.preset=paper",
                 "--classifiers", "nb",
                 "--driver-budget-mb", "0.0001", "--output", str(on_spark)]) == 0
    spark_results = pd.read_parquet(on_spark / "results.parquet")
    assert set(spark_results["engine"]) == {"spark"} and len(spark_results) == 2
    both = spark_results.merge(results, on=["method", "classifier", "k", "fold"], suffixes=("_spark", "_driver"))
    assert len(both) == 2
    np.testing.assert_allclose(both["accuracy_spark"], both["accuracy_driver"], atol=1.0 / 20 + 1e-12)
    assert "pyspark.ml on Spark" in (on_spark / "report.html").read_text()
