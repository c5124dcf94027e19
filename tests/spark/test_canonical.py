"""The canonical layout of Rows (sparkfs.spark.canonical): chunks cut at fixed row ids, groups in
one partition, merges in group order; every Rows-based family then gives bit-identical scores for
1, 2 and 7 partitions and, with a row-id column, for any row order."""

import numpy as np
import pyarrow as pa
import pytest
from pyspark.ml.linalg import Vectors

from sparkfs import LmbaSelector, MarginInstanceWeighter, ReliefSelector
from sparkfs.methods import build_selector
from sparkfs.spark import canonical
from sparkfs.spark.rows import Rows
from tests.helpers import frame_schema, make_df


def _vector_batch(ids, nonzeros):
    """Arrow batch of row ids and Spark ML sparse vectors (the struct mapInArrow hands over)."""
    vectors = [{"type": 0, "size": 10**6, "indices": list(range(k)), "values": [1.0] * k} for k in nonzeros]
    vector_type = pa.struct([("type", pa.int8()), ("size", pa.int32()), ("indices", pa.list_(pa.int32())),
                             ("values", pa.list_(pa.float64()))])
    return pa.RecordBatch.from_arrays([pa.array(ids), pa.array(vectors, vector_type)], names=["id", "features"])


def test_chunks_are_sized_by_the_bytes_the_rows_store_not_by_the_number_of_features(monkeypatch):
    """A chunk closes at MIN_CHUNK_ROWS rows holding CHUNK_BYTES (12 bytes per sparse value), or at
    the end of its id-chunk; the cut depends on the rows only, not on how the batches split them."""
    monkeypatch.setattr(canonical, "CHUNK_BYTES", 120)
    monkeypatch.setattr(canonical, "MIN_CHUNK_ROWS", 2)
    ids, nonzeros = np.arange(20), [4] * 6 + [20] * 4 + [1] * 10  # 48 bytes, 240 bytes, 12 bytes a row
    expected = [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9], [10, 11, 12, 13, 14, 15], [16, 17, 18, 19]]
    for splits in ((0, 20), (0, 1, 7, 20), (0, 5, 6, 9, 17, 20)):
        batches = [_vector_batch(ids[a:b], nonzeros[a:b]) for a, b in zip(splits[:-1], splits[1:])]
        chunks = list(canonical.chunk_batches(batches, "id", 16, "features"))
        assert [chunk.column(0).to_pylist() for chunk in chunks] == expected
    assert canonical.group_rows() == canonical.MAX_CHUNK_ROWS * canonical.CHUNKS_PER_GROUP


def test_chunk_batches_cut_at_chunk_boundaries_across_batches():
    ids = np.arange(3, 40)
    values = ids * 10.0
    batches = [pa.RecordBatch.from_arrays([pa.array(ids[a:b]), pa.array(values[a:b])], names=["id", "v"])
               for a, b in ((0, 4), (4, 5), (5, 5), (5, 22), (22, 37))]
    chunks = list(canonical.chunk_batches(batches, "id", 8))
    assert [chunk.column(0).to_pylist() for chunk in chunks] == [
        list(range(3, 8)), list(range(8, 16)), list(range(16, 24)), list(range(24, 32)), list(range(32, 40))]
    assert np.array_equal(np.concatenate([chunk.column(1).to_numpy() for chunk in chunks]), values)
    unsorted = [pa.RecordBatch.from_arrays([pa.array([9, 2])], names=["id"])]
    with pytest.raises(AssertionError, match="sorted by id"):
        list(canonical.chunk_batches(unsorted, "id", 4))


@pytest.fixture
def small_chunks(monkeypatch):
    """8 rows per chunk, 2 chunks per group: 300 rows make 38 chunks in 19 groups, more than the
    16 summaries merged on the driver directly, so the fan-out stage runs too."""
    monkeypatch.setattr(canonical, "MIN_CHUNK_ROWS", 8)
    monkeypatch.setattr(canonical, "MAX_CHUNK_ROWS", 8)
    monkeypatch.setattr(canonical, "CHUNKS_PER_GROUP", 2)


def _data(n=300, p=5, seed=4):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    rng.shuffle(y)
    X = rng.normal(size=(n, p)) * np.linspace(0.3, 7.0, p) + 1.3 * np.eye(3, p)[y] + 1e3
    return X, y.astype(float)


@pytest.mark.parametrize("transport", ["context", "dataframe"])
def test_a_pass_sums_the_same_bits_for_any_partitioning(spark, small_chunks, transport):
    X, y = _data()
    sums = {}
    for partitions in (1, 2, 7):
        df = make_df(spark, X, y, partitions=partitions)
        with Rows(df, "features", num_features=X.shape[1], label_col="label", num_classes=3,
                  transport=transport) as rows:
            summary = rows.run_pass("sums", lambda block: {"sums": np.asarray(block.matrix).sum(axis=0),
                                                            "rows": np.array([block.ids.size])},
                                    lambda a, b: {"sums": a["sums"] + b["sums"], "rows": a["rows"] + b["rows"]})
        sums[partitions] = summary["sums"]
        assert summary["rows"][0] == 300
    assert np.array_equal(sums[1], sums[2]) and np.array_equal(sums[1], sums[7])
    np.testing.assert_allclose(sums[1], X.sum(axis=0), rtol=1e-13)


def test_rows_families_are_bit_identical_for_1_2_and_7_partitions(spark, small_chunks):
    """Neighbour passes and column statistics over 38 chunks in 19 groups (the fan-out merge).
    The other families, Parzen-ISE's kernel passes among them, run strictly for 1, 2 and 7
    partitions in tests/spark/test_partition_property.py; a generic pass over 19 groups in both
    transports in test_a_pass_sums_the_same_bits_for_any_partitioning."""
    X, y = _data()
    scores = {partitions: build_selector("relieff", {"k": 3, "deterministic": True}).setNumFeatures(2).fit(
        make_df(spark, X, y, partitions=partitions)).scores for partitions in (1, 2, 7)}
    for partitions in (2, 7):
        assert np.array_equal(scores[1], scores[partitions]), (scores[1] - scores[partitions])


def test_with_a_row_id_column_the_row_order_does_not_matter(spark, small_chunks):
    X, y = _data(n=200)
    ids = np.arange(200) * 3 + 11
    order = np.random.default_rng(0).permutation(200)

    def frame(rows_order, partitions):
        rows = [(Vectors.dense(X[i]), float(y[i]), int(ids[i])) for i in rows_order]
        return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions),
                                     frame_schema(["features", "label", "row_id"]))

    ordered, shuffled = frame(np.arange(200), 1), frame(order, 5)
    lmba = {name: LmbaSelector(k=1, iterations=5, batchSize=8, rowIdCol="row_id", numFeatures=2,
                               deterministic=True).fit(df).scores
            for name, df in (("ordered", ordered), ("shuffled", shuffled))}
    assert np.array_equal(lmba["ordered"], lmba["shuffled"])
    relieff = [ReliefSelector(variant="relieff", k=3, rowIdCol="row_id", numFeatures=2,
                              deterministic=True).fit(df).scores
               for df in (ordered, shuffled)]
    assert np.array_equal(*relieff)
    weights = {}
    for name, df in (("ordered", ordered), ("shuffled", shuffled)):
        table = (MarginInstanceWeighter(rowIdCol="row_id", deterministic=True).transform(df)
                 .select("row_id", "weight").toPandas())
        weights[name] = table.sort_values("row_id")["weight"].to_numpy()
    assert np.array_equal(weights["ordered"], weights["shuffled"])


def test_lfs_and_qfs_on_the_exact_engine_are_bit_identical(spark, small_chunks):
    """With deterministic=True, LFS's moments are exact sums (statsEngine 'arrow', core.exact_sums) and
    QFS's Gram pass runs on the canonical layout: both give the same bits for 1, 2 and 7 partitions, and the
    moments equal the correctly rounded sums (math.fsum)."""
    import math

    from sparkfs import FisherMarkovSelector
    from sparkfs.spark.stats import class_moments

    X, y = _data()
    X[:, 0] *= 1e-9
    frames = {partitions: make_df(spark, X, y, partitions=partitions) for partitions in (1, 2, 7)}
    moments = class_moments(frames[7], "features", "label", engine="arrow")
    expected = [[math.fsum(X[y == c, j]) for j in range(X.shape[1])] for c in range(3)]
    assert np.array_equal(moments.class_sums, np.array(expected))
    assert np.array_equal(moments.class_sum_squares,
                          np.array([[math.fsum(X[y == c, j] ** 2) for j in range(X.shape[1])] for c in range(3)]))
    for params in ({"degree": 1}, {"degree": 2, "gamma": 0.0}):
        fits = {p: FisherMarkovSelector(deterministic=True, numFeatures=2,
                                        **params).fit(df) for p, df in frames.items()}
        assert np.array_equal(fits[1].scores, fits[2].scores) and np.array_equal(fits[1].scores, fits[7].scores)
        assert fits[1].selectedFeatures == fits[2].selectedFeatures == fits[7].selectedFeatures
        if params["degree"] == 2:
            assert fits[1].summary["objective"] == fits[2].summary["objective"] == fits[7].summary["objective"]
