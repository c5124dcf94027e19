"""Arrow blocks of VectorUDT rows: dense, sparse and mixed batches, sizes checked."""

import numpy as np
import pytest
import scipy.sparse as sp
from pyspark.ml.linalg import Vectors

from sparkfs.spark.blocks import aggregate_partitions, arrow_vectors_to_matrix
from tests.helpers import frame_schema, make_df


def _collect_blocks(df, num_features):
    def summarize(block):
        matrix = block["features"]
        dense = matrix.toarray() if sp.issparse(matrix) else matrix
        return {"sum": dense.sum(0), "rows": np.array([dense.shape[0]]), "sq": (dense**2).sum(0)}

    def merge(a, b):
        return {k: a[k] + b[k] for k in a}

    return aggregate_partitions(df, ["features"], summarize, merge, num_features=num_features)


@pytest.mark.parametrize("partitions", [1, 3])
def test_mixed_dense_and_sparse_rows(spark, partitions):
    vectors = [Vectors.dense([1.0, 0.0, 2.0]), Vectors.sparse(3, [1], [5.0]), Vectors.sparse(3, [], []),
               Vectors.dense([-1.0, 4.0, 0.5])]
    rows = spark.sparkContext.parallelize([(v, 0.0) for v in vectors], partitions)
    df = spark.createDataFrame(rows, frame_schema(["features", "label"]))
    summary = _collect_blocks(df, 3)
    dense = np.array([v.toArray() for v in vectors])
    np.testing.assert_allclose(summary["sum"], dense.sum(0))
    np.testing.assert_allclose(summary["sq"], (dense**2).sum(0))
    assert summary["rows"][0] == 4


def test_conversion_keeps_sparse_rows_sparse(spark):
    import pyarrow as pa

    X = sp.random(20, 50, density=0.05, random_state=0, format="csr")
    df = make_df(spark, X, np.zeros(20))

    def capture(batches):
        for batch in batches:
            matrix = arrow_vectors_to_matrix(batch.column(0), 50)
            yield pa.RecordBatch.from_arrays([pa.array([sp.issparse(matrix)]), pa.array([matrix.sum()])],
                                             names=["sparse", "total"])

    rows = df.select("features").mapInArrow(capture, "sparse boolean, total double").collect()
    assert all(r["sparse"] for r in rows)
    assert sum(r["total"] for r in rows) == pytest.approx(X.sum())


def test_wrong_size_is_named(spark):
    df = spark.createDataFrame([(Vectors.dense([1.0, 2.0]),), (Vectors.dense([1.0, 2.0, 3.0]),)], ["features"])
    column = df.toArrow().column("features")
    with pytest.raises(ValueError, match=r"1 row\(s\) have a feature vector of size \[3\] instead of 2"):
        arrow_vectors_to_matrix(column, 2)


def test_empty_dataframe_gives_none(spark):
    df = make_df(spark, np.zeros((2, 3)), [0, 1]).limit(0)
    assert _collect_blocks(df, 3) is None


def test_merge_order_is_fixed_in_both_transports(spark):
    """20 partitions (above the driver-merge threshold): each transport merges in a fixed order,
    so it gives the same bits run after run; values spanning 1e16 make the sum's last bits depend
    on the order, so a merge in arrival order would show. (The two transports group the partitions
    differently, so they agree to rounding.)"""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(120, 4)) * np.array([1e16, 1.0, 1e-3, 3.0])
    df = make_df(spark, X, np.zeros(120), partitions=20).cache()

    def summarize(block):
        return {"sum": block["features"].sum(0)}

    def merge(a, b):
        return {"sum": a["sum"] + b["sum"]}

    for transport in ("context", "dataframe"):
        runs = [aggregate_partitions(df, ["features"], summarize, merge, num_features=4, transport=transport)["sum"]
                for _ in range(2)]
        assert runs[0].tobytes() == runs[1].tobytes(), transport
        np.testing.assert_allclose(runs[0], X.sum(0), rtol=1e-9, atol=1e-9 * 1e16)
    df.unpersist()


@pytest.mark.parametrize("partitions", [3, 20])
def test_a_stopped_summary_ends_the_pass_without_a_failed_task(spark, partitions):
    """A block summary holding STOPPED is what the pass returns, through every merge of both
    transports (20 partitions: the two-level merge), and no task fails (Spark's status tracker)."""
    from sparkfs.spark.blocks import STOPPED, is_stopped

    X = np.arange(240, dtype=float).reshape(60, 4)
    df = make_df(spark, X, np.arange(60) % 2, partitions=partitions)

    def summarize(block):
        matrix = block["features"]
        if (matrix[:, 0] == 100.0).any():  # one row, in one partition, stops the pass
            return {STOPPED: np.array([7, 100])}
        return {"rows": np.array([matrix.shape[0]])}

    def merge(a, b):
        return {"rows": a["rows"] + b["rows"]}

    tracker = spark.sparkContext.statusTracker()
    for transport in ("context", "dataframe"):
        spark.sparkContext.setJobGroup("stopped-pass", "a pass stopped by a summary")
        stopped = aggregate_partitions(df, ["features"], summarize, merge, num_features=4, transport=transport)
        assert is_stopped(stopped) and stopped[STOPPED].tolist() == [7, 100], transport
        jobs = [tracker.getJobInfo(job) for job in tracker.getJobIdsForGroup("stopped-pass")]
        assert jobs and all(job.status == "SUCCEEDED" for job in jobs), transport
    spark.sparkContext.setJobGroup(None, None)
    assert _collect_blocks(df, 4)["rows"][0] == 60  # the same pass without a stop
    df.unpersist()
