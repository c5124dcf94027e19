"""The missing-value policy on a Spark Connect session (no SparkContext): the counting pass and the lazy
cleaning are ``mapInArrow`` over the DataFrame, so 'drop-rows' and 'zero' give the fit on the rows prepared by
hand here too, sparse vectors kept sparse; 'pairwise' scores each feature on its present rows."""

import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

from sparkfs.methods import build_selector

CONNECT_METHODS = ["anova"]


def _frame(spark, X, y):
    rows = [(Vectors.sparse(X.shape[1], {j: float(v) for j, v in enumerate(row) if v != 0}), float(label))
            for row, label in zip(X, y)]
    return spark.createDataFrame(rows, ["features", "label"]).repartition(3)


@pytest.mark.parametrize("policy", ["drop-rows", "zero"])
def test_missing_policies_on_connect(spark, policy):
    rng = np.random.default_rng(4)
    y = np.arange(30) % 2
    X = rng.integers(0, 3, size=(30, 4)).astype(float)
    X[:, 0] += y
    X[[3, 8, 8], [1, 0, 2]] = np.nan
    model = build_selector("anova", {"missing": policy}).setNumFeatures(2).fit(_frame(spark, X, y))
    keep = ~np.isnan(X).any(axis=1)
    by_hand = (_frame(spark, X[keep], y[keep]) if policy == "drop-rows" else _frame(spark, np.nan_to_num(X), y))
    expected = build_selector("anova", {}).setNumFeatures(2).fit(by_hand)
    np.testing.assert_allclose(model.scores, expected.scores, rtol=1e-9)
    assert model.summary["missing"] == {"policy": policy, "rows_dropped": 2 if policy == "drop-rows" else 0,
                                        "values_set_to_zero": 3 if policy == "zero" else 0}


def test_pairwise_on_connect(spark):
    """missing='pairwise': the float moments pass counts the present values on Connect too; each feature's F
    value is SciPy's one-way ANOVA on the rows where the feature is present."""
    from scipy.stats import f_oneway

    rng = np.random.default_rng(6)
    y = np.arange(30) % 2
    X = rng.integers(0, 3, size=(30, 4)).astype(float)
    X[:, 0] += y
    X[[3, 8, 8], [1, 0, 2]] = np.nan
    model = build_selector("anova", {"missing": "pairwise"}).setNumFeatures(2).fit(_frame(spark, X, y))
    present = ~np.isnan(X)
    expected = [f_oneway(*[X[(y == label) & present[:, j], j] for label in (0, 1)]).statistic for j in range(4)]
    np.testing.assert_allclose(model.scores, expected, rtol=1e-9)
    assert model.summary["missing"]["values_left_out"] == 3
