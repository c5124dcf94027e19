"""MarginInstanceWeighter and the Spark passes of Han & Yu's instance weights (eqs. 6-7).

The expected weights come from the loop reference of tests/core/test_instance_weighting.py,
written from the paper's equations (it shares no code with sparkfs).
"""

import numpy as np
import pytest

from sparkfs import MarginInstanceWeighter
from sparkfs.core.options import MarginWeightOptions
from sparkfs.errors import DriverBudgetError, InvalidInputError
from sparkfs.spark.instance_weighting import margin_instance_weights
from sparkfs.spark.method_setup import EngineOptions
from tests.core.test_instance_weighting import assert_close, reference_margin_vectors, reference_weights
from tests.helpers import make_df, to_vectors


def _data(seed, n=24, d=5, classes=2, density=1.0):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)) * (rng.random((n, d)) < density), 3)
    y = rng.integers(0, classes, n)
    y[:classes] = np.arange(classes)
    return X, y


def _expected(X, y):
    weights, degree = reference_weights(reference_margin_vectors(X.tolist(), y.tolist()))
    return weights, degree


@pytest.mark.parametrize("sparse, partitions, classes", [(False, 1, 2), (True, 3, 3)])
def test_weights_column_equals_the_reference_in_input_order(spark, sparse, partitions, classes):
    X, y = _data(seed=partitions + classes, classes=classes, density=0.5 if sparse else 1.0)
    df = make_df(spark, X, y, partitions=partitions, sparse=sparse)
    weighter = MarginInstanceWeighter(outputCol="iw")
    out = weighter.transform(df)
    rows = out.collect()
    expected, _ = _expected(X, y)
    assert out.columns == ["features", "label", "iw"]
    assert [row.label for row in rows] == [float(v) for v in y]      # the input's order is kept
    assert_close([row.iw for row in rows], expected)
    assert weighter.summary["n_rows"] == len(y)
    assert weighter.summary["weight_sum"] == pytest.approx(len(y), rel=1e-12)


def test_spark_passes_match_with_several_query_batches_and_both_transports(spark):
    X, y = _data(seed=7, n=30, d=4, classes=3)
    expected, degree = _expected(X, y)
    df = make_df(spark, X, y, partitions=3)
    for transport in ("context", "dataframe"):
        # 12 rows of 4 doubles per batch: 3 batches in each pass
        result = margin_instance_weights(df, "features", "label", num_features=4, num_classes=3,
                                         options=MarginWeightOptions(block_size=5),
                                         engine=EngineOptions(transport=transport, query_batch_bytes=12 * 4 * 8))
        assert_close(result.weights, expected)
        assert_close(result.outlying_degree, degree)
        np.testing.assert_array_equal(result.ids, np.arange(30))
        assert result.info["passes"].count("margin vectors: distance sums") >= 3


def test_user_row_ids_survive_a_shuffle(spark):
    X, y = _data(seed=3, n=20, d=3)
    expected, _ = _expected(X, y)
    rows = [(vector, float(label), i * 10 + 5) for i, (vector, label) in enumerate(zip(to_vectors(X), y))]
    df = spark.createDataFrame(rows, ["features", "label", "id"]).repartition(3)   # rows reordered
    out = MarginInstanceWeighter(rowIdCol="id").transform(df).collect()
    got = {row.id: row.weight for row in out}
    assert_close([got[i * 10 + 5] for i in range(len(y))], expected)


def test_bad_input_is_refused_with_the_problem_named(spark):
    X, y = _data(seed=1, n=10, d=3)
    one_class = make_df(spark, X, np.zeros(10))
    with pytest.raises(InvalidInputError, match="at least two classes"):
        MarginInstanceWeighter().transform(one_class)
    df = make_df(spark, X, y)
    with pytest.raises(InvalidInputError, match="already exists"):
        MarginInstanceWeighter(outputCol="label").transform(df)
    with pytest.raises(InvalidInputError, match="not found"):
        MarginInstanceWeighter(labelCol="class").transform(df)
    with pytest.raises(ValueError, match="blockSize"):
        MarginInstanceWeighter(blockSize=0).transform(df)
    with pytest.raises(DriverBudgetError, match="above driverBudgetMB=1e-05: raise driverBudgetMB"):
        MarginInstanceWeighter(driverBudgetMB=1e-5).transform(df)
    missing = make_df(spark, X, [None] + list(y[1:]))
    with pytest.raises(InvalidInputError, match="null label"):
        MarginInstanceWeighter().transform(missing)
    X_wide, _ = _data(seed=2, n=14, d=3)
    continuous = make_df(spark, X_wide, np.linspace(0.05, 0.95, 14) + 0.001)
    with pytest.raises(InvalidInputError, match="continuous"):
        MarginInstanceWeighter().transform(continuous)
    X_nan = X.copy()
    X_nan[4, 1] = np.nan
    with pytest.raises(InvalidInputError, match="NaN|finite"):
        MarginInstanceWeighter().transform(make_df(spark, X_nan, y))


def test_params_save_and_load(spark, tmp_path):
    weighter = MarginInstanceWeighter(outputCol="w", blockSize=64, rowIdCol="id")
    weighter.write().overwrite().save(str(tmp_path / "weighter"))
    loaded = MarginInstanceWeighter.load(str(tmp_path / "weighter"))
    assert (loaded.getOutputCol(), loaded.getOrDefault("blockSize"), loaded.getOrDefault("rowIdCol")) == ("w", 64, "id")
