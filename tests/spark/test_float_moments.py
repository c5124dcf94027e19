"""The "float" statistics engine: NumPy float sums in one mapInArrow pass, the labels
counted in it.

Checked against plain NumPy sums written here (per class: rows, weight sums, column sums, column
sums of squares; column extremes with implicit zeros), for label columns of every kind Spark
holds, sparse and mixed rows, 1 and 7 partitions; a univariate fit is one Spark job; a label with
too many values for the per-class sums is counted first, so a continuous label is refused by name.
"""

import numpy as np
import pytest
from pyspark.ml.linalg import Vectors, VectorUDT
from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType, StructField, StructType

import sparkfs.spark.float_moments as float_moments
from sparkfs.errors import InvalidInputError
from sparkfs.methods import METHODS
from sparkfs.spark.stats import class_moments, class_moments_counting_labels
from tests.helpers import jobs_run_by

pytestmark = pytest.mark.spark


def _frame(spark, X, labels, label_type, partitions, weights=None, sparse=True):
    fields = [StructField("features", VectorUDT()), StructField("label", label_type)]
    if weights is not None:
        fields.append(StructField("weight", DoubleType()))
    rows = []
    for i, label in enumerate(labels):
        nonzero = np.flatnonzero(X[i])
        as_sparse = sparse == "all" or (sparse and i % 3)  # True: a mixed column, every third row dense
        vector = (Vectors.sparse(X.shape[1], nonzero.tolist(), X[i, nonzero].tolist()) if as_sparse
                  else Vectors.dense(X[i].tolist()))
        rows.append((vector, label) + ((float(weights[i]),) if weights is not None else ()))
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), StructType(fields))


def _numpy_moments(X, labels, weights):
    """Per distinct label (in sorted order): rows, weight sum, sum of w x, sum of w x^2."""
    values = sorted(set(labels), key=lambda v: (str(type(v)), v))
    table = {}
    for value in values:
        rows = np.array([label == value for label in labels])
        w = weights[rows]
        table[value] = (rows.sum(), w.sum(), (w[:, None] * X[rows]).sum(axis=0),
                        (w[:, None] * X[rows] ** 2).sum(axis=0))
    return table


def _data(seed=3, n=60, p=7):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) * (rng.random((n, p)) < 0.4)
    X[:, 2] = 0.0  # an all-zero column: its extremes are the implicit zeros
    return X


@pytest.mark.parametrize("label_type, make_label", [
    (DoubleType(), lambda i: float(i % 3)),
    (LongType(), lambda i: i % 4),
    (StringType(), lambda i: ["spam", "ham", "eggs"][i % 3]),
    (BooleanType(), lambda i: i % 2 == 0),
])
def test_per_class_sums_equal_numpy_for_every_label_kind_and_partitioning(spark, label_type, make_label):
    X = _data()
    labels = [make_label(i) for i in range(len(X))]
    weights = np.linspace(0.5, 2.0, len(X))
    expected = _numpy_moments(X, labels, weights)
    for partitions in (1, 7):
        frame = _frame(spark, X, labels, label_type, partitions, weights=weights)
        moments = class_moments(frame, "features", "label", "weight", engine="float", num_features=X.shape[1])
        assert sorted(moments.label_values, key=str) == sorted(expected, key=str)
        for position, value in enumerate(moments.label_values):
            assert type(value) is type(labels[0]), (value, labels[0])
            rows, weight, sums, squares = expected[value]
            assert moments.class_counts[position] == rows
            np.testing.assert_allclose(moments.class_weights[position], weight, rtol=1e-12)
            np.testing.assert_allclose(moments.class_sums[position], sums, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(moments.class_sum_squares[position], squares, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(moments.feature_min, X.min(axis=0))
        np.testing.assert_array_equal(moments.feature_max, X.max(axis=0))


def test_the_same_partitioning_gives_the_same_bits_and_another_agrees_to_rounding(spark):
    X = _data(seed=5, n=90)
    labels = [float(i % 2) for i in range(len(X))]
    runs = {}
    for partitions in (1, 7, 7):
        frame = _frame(spark, X, labels, DoubleType(), partitions)
        moments = class_moments(frame, "features", "label", engine="float", num_features=X.shape[1], extremes=False)
        assert moments.feature_min is None
        runs.setdefault(partitions, []).append(moments.class_sums)
    np.testing.assert_array_equal(runs[7][0], runs[7][1])
    np.testing.assert_allclose(runs[1][0], runs[7][0], rtol=1e-12, atol=1e-12)


_FITS = iter(range(10**6))


def _jobs_of_fit(spark, selector, frame):
    return jobs_run_by(spark, f"sparkfs-float-moments-fit-{next(_FITS)}", lambda: selector.fit(frame))


def test_a_univariate_fit_is_one_pass_and_auto_takes_it_for_sparse_rows(spark):
    """anova, chi2 and LFS on cached rows without vector metadata: with statsEngine='float' the
    moments pass alone; 'auto' looks at the first row (one more, one-row job) and takes the float
    pass for sparse vectors, Spark's Summarizer for dense ones."""
    X = np.abs(_data(seed=7, n=80))
    X[:, 2] = 1.0 + (np.arange(80) % 3)  # no constant feature: the sums decide it, no extremes pass
    labels = [float(i % 2) for i in range(len(X))]
    sparse = _frame(spark, X, labels, DoubleType(), 4, sparse="all").cache()
    dense = _frame(spark, X, labels, DoubleType(), 4, sparse=False).cache()
    try:
        assert sparse.count() == dense.count() == 80
        for method in ("anova", "chi2", "lfs"):
            cls, fixed = METHODS[method]
            model, jobs = _jobs_of_fit(spark, cls(numFeatures=2, statsEngine="float")._set(**fixed), dense)
            assert model.summary["stats_engine"] == "float" and len(jobs) == 1, (method, sorted(jobs))
            model, jobs = _jobs_of_fit(spark, cls(numFeatures=2)._set(**fixed), sparse)
            assert model.summary["stats_engine"] == "float" and len(jobs) == 2, (method, sorted(jobs))
            assert cls(numFeatures=2)._set(**fixed).fit(dense).summary["stats_engine"] == "jvm", method
    finally:
        sparse.unpersist()
        dense.unpersist()


def test_auto_reads_sparse_vectors_from_the_readers_metadata_in_one_job(spark, tmp_path):
    """sparkfs's LIBSVM reader says its vectors are sparse in the column's metadata: 'auto' takes
    the float pass without the one-row look, so the fit is one Spark job; the same metadata on a
    column of dense vectors is only a hint of speed (the float pass reads either)."""
    from sparkfs.io.libsvm import read_libsvm, sparse_vectors_metadata

    X = np.abs(_data(seed=8, n=60))
    path = tmp_path / "rows.libsvm"
    path.write_text("".join(f"{i % 2} " + " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(row) if v) + "\n"
                            for i, row in enumerate(X)))
    frame, _ = read_libsvm(spark, str(path))
    try:
        for method in ("anova", "chi2", "lfs"):
            cls, fixed = METHODS[method]
            model, jobs = _jobs_of_fit(spark, cls(numFeatures=2)._set(**fixed), frame)
            assert model.summary["stats_engine"] == "float" and len(jobs) == 1, (method, sorted(jobs))
    finally:
        frame.unpersist()
    from pyspark.sql import functions as F

    dense = _frame(spark, X, [float(i % 2) for i in range(60)], DoubleType(), 3, sparse=False)
    said = dense.select(F.col("features").alias("features", metadata=sparse_vectors_metadata(X.shape[1])), "label")
    expected = METHODS["anova"][0](numFeatures=2, statsEngine="jvm", test="anova").fit(dense)
    model = METHODS["anova"][0](numFeatures=2, test="anova").fit(said)
    assert model.summary["stats_engine"] == "float"
    np.testing.assert_allclose(model.scores, expected.scores, rtol=1e-9)


def test_too_many_labels_for_the_sums_are_counted_first_and_a_continuous_label_is_named(spark, monkeypatch):
    X = _data(seed=9, n=60)
    monkeypatch.setattr(float_moments, "FOLDED_CLASS_BYTES", 16 * 3 * X.shape[1])  # at most 3 classes per block
    continuous = _frame(spark, X, [0.01 * i for i in range(len(X))], DoubleType(), 2)
    checked = []

    def check_labels(values, counts):
        checked.append(len(values))
        raise InvalidInputError("refused by the label checks")

    with pytest.raises(InvalidInputError, match="refused by the label checks"):
        class_moments_counting_labels(continuous, "features", "label", engine="float", extremes=False,
                                      check_labels=check_labels)
    assert checked == [60]
    cls, fixed = METHODS["anova"]
    with pytest.raises(InvalidInputError, match="label column 'label' looks continuous: 60 distinct values"):
        cls(numFeatures=2)._set(**fixed).fit(continuous)
    classes = _frame(spark, X, [float(i % 6) for i in range(len(X))], DoubleType(), 2)
    moments = class_moments_counting_labels(classes, "features", "label", engine="float", extremes=False,
                                            check_labels=lambda values, counts: None)
    assert moments.extra["engine"] == "jvm" and moments.num_classes == 6
    monkeypatch.setattr(float_moments, "FOLDED_CLASS_BYTES", 2**28)
    folded = class_moments(classes, "features", "label", engine="float", extremes=False)
    np.testing.assert_allclose(folded.class_sums, moments.class_sums, rtol=1e-12, atol=1e-12)
