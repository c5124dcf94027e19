"""The Spark Relief engine vs the NumPy references of tests/core/test_relief.py.

Every variant, on small dense (multi-class, integer-valued: exact ties) and sparse (binary,
some rows stored as dense vectors) data, with 1 and 3 partitions, with and without a query
sample, equals the brute-force reference within 1e-9 (relative to the largest entry).
"""

import numpy as np
import pytest

pytest.importorskip("pyspark")

from pyspark.ml.linalg import Vectors, VectorUDT
from pyspark.sql.types import DoubleType, LongType, StructField, StructType

from sparkfs.core.options import ReliefOptions
from sparkfs.core.sampling import content_sample_keys, smallest_key_positions
from sparkfs.errors import InvalidInputError
from sparkfs.spark.method_setup import EngineOptions
from sparkfs.spark.relief import relief_statistics
from tests.core.test_relief import (
    assert_close,
    continuous_data,
    integer_data,
    reference_margins,
    reference_weights,
    sparse_data,
)

VARIANTS = ["relief", "relieff", "mrelief", "prelief"]


def make_df(spark, X, y, partitions, sparse=False, row_ids=None):
    """Rows in the given order, split into ``partitions`` without reordering."""
    fields = [StructField("features", VectorUDT()), StructField("label", DoubleType())]
    rows = []
    for i in range(len(y)):
        nonzero = np.flatnonzero(X[i])
        # Sparse data: store most rows sparse, every 5th as a dense vector (a mixed column).
        if sparse and i % 5:
            vector = Vectors.sparse(X.shape[1], nonzero.tolist(), X[i, nonzero].tolist())
        else:
            vector = Vectors.dense(X[i].tolist())
        rows.append((vector, float(y[i])) + ((int(row_ids[i]),) if row_ids is not None else ()))
    if row_ids is not None:
        fields.append(StructField("row_id", LongType()))
    rdd = spark.sparkContext.parallelize(rows, partitions)
    return spark.createDataFrame(rdd, StructType(fields))


def run(df, X, y, variant, engine=None, **params):
    """``params``: the fields of :class:`ReliefOptions` (k 3 unless given); ``engine``: an :class:`EngineOptions`."""
    params.setdefault("k", 3)
    return relief_statistics(
        df, "features", "label", num_features=X.shape[1], num_classes=int(y.max()) + 1,
        options=ReliefOptions(variant=variant, **params), engine=engine,
    )


def expected(X, y, ids, query_positions, variant, k=3, metric="euclidean", sigma=None):
    margins = reference_margins(X, y, ids, query_positions, variant, k=k, metric=metric, sigma=sigma)
    return margins, margins.mean(axis=0)


@pytest.fixture(scope="module")
def frames(spark):
    """Cached DataFrames of the two data sets, with 1 and 3 partitions (built once)."""
    built = {}
    for dataset, (X, y) in {
        "dense_multiclass_ties": integer_data(21, n=45),
        "sparse_binary": sparse_data(22, n=40),
    }.items():
        for partitions in (1, 3):
            df = make_df(spark, X, y, partitions, sparse=dataset == "sparse_binary").cache()
            df.count()
            built[dataset, partitions] = df
        built[dataset] = (X, y)
    yield built
    for key, value in built.items():
        if isinstance(key, tuple):
            value.unpersist()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dataset", ["dense_multiclass_ties", "sparse_binary"])
def test_engine_equals_reference_for_1_and_3_partitions(frames, variant, dataset):
    X, y = frames[dataset]
    ids = np.arange(len(y))  # positional row ids
    sigma = None
    if variant == "prelief":
        sigma = 0.01 * (X.max(axis=0) - X.min(axis=0))  # the documented default
        sigma[sigma == 0] = 1.0
    ref_margins, ref_scores = expected(X, y, ids, ids, variant, sigma=sigma)
    results = []
    for partitions in (1, 3):
        result = run(frames[dataset, partitions], X, y, variant, return_query_margins=True)
        np.testing.assert_array_equal(result.query_ids, ids)
        assert_close(result.scores, ref_scores)
        assert_close(result.weights, reference_weights(ref_scores))
        assert_close(result.query_margins, ref_margins)
        results.append(result)
    if variant != "prelief":
        np.testing.assert_array_equal(results[0].neighbour_ids, results[1].neighbour_ids)
    assert results[0].n_rows == len(y) and results[0].n_queries == len(y)


@pytest.mark.parametrize(
    "variant, metric, scaling", [("relieff", "manhattan", "range"), ("mrelief", "euclidean", "standard")]
)
def test_engine_scaling_and_metrics(spark, variant, metric, scaling):
    X, y = continuous_data(23, n=45)
    X = X * np.array([1.0, 10.0, 0.1, 5.0, 1.0, 100.0]) + 3.0
    scale = X.max(axis=0) - X.min(axis=0) if scaling == "range" else X.std(axis=0, ddof=1)
    ids = np.arange(len(y))
    _, ref_scores = expected(X / scale, y, ids, ids, variant, k=4, metric=metric)
    result = run(make_df(spark, X, y, 2), X, y, variant, k=4, metric=metric, scaling=scaling)
    assert_close(result.feature_scale, scale, tol=1e-12)
    assert_close(result.scores, ref_scores)


@pytest.mark.parametrize("dataset", ["dense", "sparse"])
def test_sampled_queries_are_deterministic_whatever_the_partitioning(spark, dataset):
    # Continuous values: no exact ties, whose order range scaling could change by rounding.
    X, y = continuous_data(24, n=50) if dataset == "dense" else sparse_data(25, n=50, continuous=True)
    sparse = dataset == "sparse"
    ids = np.arange(len(y))
    # The sample is the 15 rows with the smallest keys of (seed, the row's content), ties by id.
    expected_ids = np.sort(smallest_key_positions(content_sample_keys(X, y, None, 7), ids, 15))
    scale = X.max(axis=0) - X.min(axis=0)
    scale[scale == 0] = 1.0
    _, ref_scores = expected(X / scale, y, ids, expected_ids, "relieff", k=2)
    for partitions in (1, 4):
        result = run(make_df(spark, X, y, partitions, sparse), X, y, "relieff", k=2, scaling="range",
                     sample_size=15, seed=7)
        np.testing.assert_array_equal(result.query_ids, expected_ids)
        assert result.n_queries == 15 and result.n_rows == 50
        assert_close(result.scores, ref_scores)
    other_seed = run(make_df(spark, X, y, 2, sparse), X, y, "relieff", k=2, sample_size=15, seed=8)
    assert not np.array_equal(other_seed.query_ids, expected_ids)


def test_row_id_column_makes_results_independent_of_row_order(spark):
    X, y = integer_data(26, n=45)  # exact ties: broken by the user's ids
    user_ids = np.random.default_rng(0).permutation(10_000)[: len(y)]
    ref_margins, ref_scores = expected(X, y, user_ids, np.arange(len(y)), "relief")
    shuffled = make_df(spark, X, y, 3, row_ids=user_ids).repartition(4)  # rows reordered
    result = run(shuffled, X, y, "relief", engine=EngineOptions(row_id_col="row_id"), return_query_margins=True)
    order = np.argsort(user_ids)
    np.testing.assert_array_equal(result.query_ids, user_ids[order])
    assert_close(result.scores, ref_scores)
    assert_close(result.query_margins, ref_margins[order])
    sampled = run(shuffled, X, y, "mrelief", engine=EngineOptions(row_id_col="row_id"), sample_size=10, seed=1)
    expected_ids = np.sort(user_ids[smallest_key_positions(content_sample_keys(X, y, None, 1), user_ids, 10)])
    np.testing.assert_array_equal(sampled.query_ids, expected_ids)
    positions = np.array([np.flatnonzero(user_ids == i)[0] for i in expected_ids])
    assert_close(sampled.scores, expected(X, y, user_ids, positions, "mrelief")[1])


def test_queries_broadcast_in_batches_give_the_same_result(spark):
    X, y = continuous_data(27, n=40)
    ids = np.arange(len(y))
    result = run(make_df(spark, X, y, 2), X, y, "relieff", engine=EngineOptions(query_batch_bytes=8 * X.shape[1] * 7),
                 k=2, return_query_margins=True)
    assert result.info["query_batches"] == 6
    ref_margins, ref_scores = expected(X, y, ids, ids, "relieff", k=2)
    assert_close(result.scores, ref_scores)
    assert_close(result.query_margins, ref_margins)


def test_input_errors_name_the_problem(spark):
    X, y = continuous_data(28, n=30)
    df = make_df(spark, X, y, 2)
    with pytest.raises(ValueError, match="The 'k' parameter of relief_statistics must be an int"):
        run(df, X, y, "relief", k=0)
    with pytest.raises(ValueError, match="The 'metric' parameter .* Got 'chebyshev'"):
        run(df, X, y, "relief", metric="chebyshev")
    with pytest.raises(ValueError, match="The 'variant' parameter"):
        run(df, X, y, "irelief")
    y_single = y.copy()
    y_single[4] = 3  # class 3 has one row: its query has no hit
    df_single = make_df(spark, X, y_single, 2)
    with pytest.raises(InvalidInputError, match="class 3 has a single row"):
        relief_statistics(df_single, "features", "label", num_features=6, num_classes=4,
                          options=ReliefOptions(variant="relieff", k=3))
    with pytest.raises(InvalidInputError, match=r"labels must be class indices 0\.\.1"):
        relief_statistics(df, "features", "label", num_features=6, num_classes=2,
                          options=ReliefOptions(variant="relief", k=1))
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    df_nan = make_df(spark, X_nan, y, 2)
    with pytest.raises(InvalidInputError, match="NaN or infinite"):
        run(df_nan, X_nan, y, "relief", k=2)  # found on the driver (all rows collected)
    with pytest.raises(InvalidInputError, match="NaN or infinite"):
        run(df_nan, X_nan, y, "relief", k=2, sample_size=5)  # found by the executors, then diagnosed
