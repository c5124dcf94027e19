"""sparkfs ReliefF (Spark engine) vs scikit-rebate's ReliefF on shared UCI data.

Configuration that makes the two definitions coincide: ``variant="relieff"``,
``scaling="range"``, ``metric="manhattan"``, k = 10, every row a query; scikit-rebate with
``n_neighbors=10`` and ``categorical_features=[]``.

Known differences (checked here, documented in the report):

* **Discrete features.** By default scikit-rebate treats a feature with <= 10 distinct values as
  categorical: its diff is 0/1 (not |a-b|/range) and the distance mixes a Hamming part scaled by
  the number of features. sparkfs has one definition (range-scaled |a-b|); passing
  ``categorical_features=[]`` makes scikit-rebate use it for every feature.
* **Ties at the k-th neighbour.** scikit-rebate orders neighbours with ``np.argsort`` (unstable
  quicksort); sparkfs breaks distance ties by the smaller row id. On data with many repeated
  values (ionosphere, breast-w, german) the k-th neighbour is tied for some queries and the two
  pick different rows: scores then differ in the 4th-6th decimal. Adding a 1e-7 x range jitter
  removes the ties and the scores agree to ~1e-16, which shows ties are the only difference.
* **Multi-class weights.** scikit-rebate weights each miss class by 1/(C-1) (its ``mcmap`` priors
  are computed but unused); sparkfs uses Kononenko's P(c)/(1-P(y)). They coincide on balanced
  classes, so the multi-class case here is a balanced subsample of segment.
* **k larger than a class.** scikit-rebate silently uses fewer neighbours; sparkfs raises.
* Constant features give scikit-rebate a 0/0 (NaN); they are dropped before comparing.
"""

import numpy as np
import pytest
from scipy.stats import spearmanr

skrebate = pytest.importorskip("skrebate", reason="scikit-rebate is not installed (pip install skrebate==0.8.4)")
pytest.importorskip("pyspark")

from pyspark.ml.linalg import Vectors, VectorUDT  # noqa: E402
from pyspark.sql.types import DoubleType, StructField, StructType  # noqa: E402

from sparkfs.core.options import ReliefOptions  # noqa: E402
from sparkfs.spark.relief import relief_statistics  # noqa: E402

K = 10
#: Sets without ties at the 10th neighbour: the scores must agree to 1e-6.
UNTIED_SETS = ["sonar", "pima_diabetes", "heart_statlog", "segment"]
#: Sets where some queries have a tie at the 10th neighbour (repeated values). german_numeric
#: behaves like breast_w (Spearman 1.0, scores within 1e-4); left out to keep the test short.
TIED_SETS = ["ionosphere", "breast_w"]


def load(shared_data, name):
    archive = np.load(shared_data / f"{name}.npz")
    X, y = archive["X"].astype(np.float64), archive["y"].astype(np.int64)
    if name == "segment":  # balanced 7-class subsample (60 rows per class) to keep the test fast
        rows = np.concatenate([np.flatnonzero(y == c)[:60] for c in np.unique(y)])
        X, y = X[rows], y[rows]
    X = X[:, X.max(axis=0) > X.min(axis=0)]  # constant features: NaN in scikit-rebate
    return X, y


def sparkfs_relieff(spark, X, y):
    schema = StructType([StructField("features", VectorUDT()), StructField("label", DoubleType())])
    rows = [(Vectors.dense(row.tolist()), float(label)) for row, label in zip(X, y)]
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 3), schema)
    result = relief_statistics(
        df, "features", "label", num_features=X.shape[1], num_classes=int(y.max()) + 1,
        options=ReliefOptions(variant="relieff", k=K, metric="manhattan", scaling="range"),
    )
    return result.scores


def skrebate_relieff(X, y):
    return skrebate.ReliefF(n_neighbors=K, categorical_features=[], n_jobs=1).fit(X, y).feature_importances_


@pytest.mark.parametrize("name", UNTIED_SETS)
def test_relieff_equals_skrebate_without_ties(spark, shared_data, name):
    X, y = load(shared_data, name)
    ours, theirs = sparkfs_relieff(spark, X, y), skrebate_relieff(X, y)
    assert np.abs(ours - theirs).max() <= 1e-6
    assert spearmanr(ours, theirs)[0] >= 0.999


@pytest.mark.parametrize("name", TIED_SETS)
def test_relieff_agrees_with_skrebate_up_to_tie_breaks(spark, shared_data, name):
    X, y = load(shared_data, name)
    ours, theirs = sparkfs_relieff(spark, X, y), skrebate_relieff(X, y)
    rank_correlation = spearmanr(ours, theirs)[0]
    assert rank_correlation >= 0.995, rank_correlation  # ionosphere: 0.9983; the others 1.0
    assert np.abs(ours - theirs).max() <= 5e-3
    # Break the ties with a tiny jitter: the two definitions then agree to rounding.
    jitter = np.random.default_rng(0).normal(scale=1e-7, size=X.shape) * (X.max(axis=0) - X.min(axis=0))
    ours_jittered, theirs_jittered = sparkfs_relieff(spark, X + jitter, y), skrebate_relieff(X + jitter, y)
    assert np.abs(ours_jittered - theirs_jittered).max() <= 1e-6
    assert spearmanr(ours_jittered, theirs_jittered)[0] >= 0.999
