"""Bad input gets an error that names the problem and the rows concerned."""

import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

from sparkfs import FisherMarkovSelector, InvalidInputError
from sparkfs.methods import build_selector
from tests.helpers import frame_schema, make_df


@pytest.fixture(params=["float", "jvm", "arrow"])
def engine(request):
    return request.param


def _fit(df, engine, **params):
    return FisherMarkovSelector(statsEngine=engine, numFeatures=1, **params).fit(df)


def test_nan_values_are_named_with_row_count(spark, engine):
    X = np.ones((6, 3))
    X[1, 2] = np.nan
    X[4, 0] = np.inf
    with pytest.raises(InvalidInputError, match=r"2 row\(s\) have NaN or infinite"):
        _fit(make_df(spark, X, [0, 1] * 3, partitions=2), engine)


def test_null_labels(spark, engine):
    df = make_df(spark, np.eye(4), [0.0, None, 1.0, None])
    with pytest.raises(InvalidInputError, match=r"2 row\(s\) have a null label"):
        _fit(df, engine)


def test_single_class(spark, engine):
    with pytest.raises(InvalidInputError, match=r"only one \(label 1.0, 5 rows\)"):
        _fit(make_df(spark, np.random.default_rng(0).normal(size=(5, 3)), [1] * 5), engine)


def test_vectors_of_different_sizes(spark, engine):
    rows = [(Vectors.dense([1.0, 2.0]), 0.0), (Vectors.dense([1.0, 2.0, 3.0]), 1.0),
            (Vectors.sparse(3, [0], [1.0]), 1.0)]
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), frame_schema(["features", "label"]))
    with pytest.raises(InvalidInputError, match=r"different sizes \(size 2: 1 row\(s\), size 3: 2 row\(s\)\)"):
        _fit(df, engine)


def test_null_vectors(spark, engine):
    rows = [(Vectors.dense([1.0, 2.0]), 0.0), (None, 1.0), (Vectors.dense([1.0, 0.0]), 1.0)]
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.types import DoubleType, StructField, StructType

    schema = StructType([StructField("features", VectorUDT(), True), StructField("label", DoubleType(), True)])
    df = spark.createDataFrame(rows, schema)
    with pytest.raises(InvalidInputError, match=r"1 row\(s\) have a null feature vector"):
        _fit(df, engine)


def test_empty_input(spark, engine):
    df = make_df(spark, np.eye(3), [0, 1, 0]).limit(0)
    with pytest.raises(InvalidInputError, match="no rows"):
        _fit(df, engine)


def test_missing_column(spark):
    df = make_df(spark, np.eye(3), [0, 1, 0])
    with pytest.raises(InvalidInputError, match=r"column\(s\) \['target'\] not found"):
        FisherMarkovSelector(labelCol="target").fit(df)


def test_negative_weights(spark, engine):
    df = make_df(spark, np.eye(3), [0, 1, 0], weights=[1.0, -1.0, 2.0])
    with pytest.raises(InvalidInputError, match=r"1 row\(s\) have a null, NaN, infinite or negative weight"):
        _fit(df, engine, weightCol="weight")


@pytest.mark.parametrize("params, message", [
    ({"numFeatures": 0},
     r"The 'numFeatures' parameter of FisherMarkovSelector must be an int in the range \[1, inf\). Got 0 instead."),
    ({"gamma": float("nan")}, r"The 'gamma' parameter of FisherMarkovSelector must be a finite float"),
    ({"statsEngine": "gpu"},
     r"The 'statsEngine' parameter of FisherMarkovSelector must be a str among \{'auto', 'float', 'arrow', 'jvm'\}. "
     r"Got 'gpu'"),
    ({"scaling": "log"}, r"The 'scaling' parameter"),
])
def test_invalid_params_are_named(spark, params, message):
    df = make_df(spark, np.eye(3), [0, 1, 0])
    with pytest.raises(ValueError, match=message):
        FisherMarkovSelector(**params).fit(df)


def test_unknown_method_and_param():
    with pytest.raises(ValueError, match="unknown method 'fcbf'"):  # not built
        build_selector("fcbf", {})
    with pytest.raises(ValueError, match="unknown param 'alpha' for method 'lfs': it takes .*gamma"):
        build_selector("lfs", {"alpha": 1})


def test_fit_does_not_change_params(spark):
    selector = FisherMarkovSelector(numFeatures=2)
    before = {p.name: v for p, v in selector.extractParamMap().items()}
    selector.fit(make_df(spark, np.random.default_rng(0).normal(size=(8, 3)), [0, 1] * 4))
    assert {p.name: v for p, v in selector.extractParamMap().items()} == before
