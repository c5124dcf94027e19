"""The distributed QFS statistics equal NumPy on the same data (dense and sparse, 1 and 4 partitions;
the tasks' sums reduced tile by tile, spark/tiled_sums.py), the canonical layout gives the same bits
for 1 and 3 partitions, and the Markov coefficients built on them equal eq. (29) evaluated literally."""

import numpy as np
import pytest

from sparkfs.core.qfs import block_gram_statistics, pairwise_markov_coefficients
from sparkfs.spark.gram import class_gram_statistics
from tests.core.test_qfs import literal_pairwise_eq29
from tests.helpers import make_df

NUM_CLASSES = 3


def make_data(seed=0, n=90, p=6, zero_fraction=0.5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, p)) + 0.5
    X[rng.random((n, p)) < zero_fraction] = 0.0
    y = rng.integers(0, NUM_CLASSES, n)
    y[:NUM_CLASSES] = np.arange(NUM_CLASSES)
    weights = rng.uniform(0.2, 2.0, n)
    return X, y, weights


def to_dataframe(spark, X, y, weights, kind, partitions):
    from pyspark.ml.linalg import Vectors

    def vector(row, i):
        if kind == "dense" or (kind == "mixed" and i % 2 == 0):
            return Vectors.dense(row.tolist())
        nonzero = np.flatnonzero(row)
        return Vectors.sparse(len(row), nonzero.tolist(), row[nonzero].tolist())

    rows = [(vector(X[i], i), float(y[i]), float(weights[i])) for i in range(len(y))]
    return spark.createDataFrame(rows, ["features", "label", "weight"]).repartition(partitions)


def assert_statistics_close(actual, expected, rtol=1e-9):
    for name, a, b in zip(expected._fields, actual, expected):
        assert a.shape == b.shape, name
        scale = max(np.abs(b).max(), 1e-300)
        assert np.abs(a - b).max() / scale < rtol, name


@pytest.mark.parametrize("kind", ["dense", "sparse"])
@pytest.mark.parametrize("partitions", [1, 4])
def test_spark_statistics_equal_numpy_and_literal_eq29(spark, kind, partitions):
    X, y, weights = make_data()
    df = to_dataframe(spark, X, y, weights, kind, partitions)
    assert df.rdd.getNumPartitions() == partitions
    statistics = class_gram_statistics(df, "features", "label", NUM_CLASSES, num_features=X.shape[1],
                                       canonical=False)  # the selectors' default (deterministic=False)
    assert_statistics_close(statistics, block_gram_statistics(X, y, NUM_CLASSES))
    theta = pairwise_markov_coefficients(statistics.class_grams, statistics.class_counts, statistics.squared_gram, -0.5)
    reference = literal_pairwise_eq29(X, y, -0.5)
    assert np.abs(theta - reference).max() / np.abs(reference).max() < 1e-9


def test_spark_weighted_candidates_and_centring(spark):
    """Mixed dense and sparse rows (CSR blocks), weights, candidates in a given order, center="mean"."""
    kind = "mixed"
    X, y, weights = make_data(seed=1)
    df = to_dataframe(spark, X, y, weights, kind, 4)
    candidates = [4, 0, 2]
    statistics = class_gram_statistics(
        df, "features", "label", NUM_CLASSES, candidate_indices=candidates, weight_col="weight", center="mean"
    )
    mean = (X * weights[:, None]).sum(axis=0) / weights.sum()
    expected = block_gram_statistics(X[:, candidates], y, NUM_CLASSES, weights=weights, center=mean[candidates])
    assert_statistics_close(statistics, expected)
    assert np.abs(statistics.class_sums.sum(axis=0)).max() < 1e-9 * np.abs(X).max() * weights.sum()
    theta = pairwise_markov_coefficients(statistics.class_grams, statistics.class_counts, statistics.squared_gram, -0.5)
    reference = literal_pairwise_eq29(X[:, candidates] - mean[candidates], y, -0.5, weights)
    assert np.abs(theta - reference).max() / np.abs(reference).max() < 1e-9


def test_spark_explicit_center_and_input_errors(spark):
    X, y, weights = make_data(seed=2, n=30, p=4)
    df = to_dataframe(spark, X, y, weights, "dense", 2)
    center = np.array([0.1, -0.2, 0.3, 0.0])
    statistics = class_gram_statistics(df, "features", "label", NUM_CLASSES, center=center, num_features=4)
    assert_statistics_close(statistics, block_gram_statistics(X, y, NUM_CLASSES, center=center))
    with pytest.raises(ValueError, match="column 'nope' not found"):
        class_gram_statistics(df, "features", "nope", NUM_CLASSES, num_features=4)
    with pytest.raises(ValueError, match=r"candidate_indices must lie in \[0, 4\)"):
        class_gram_statistics(df, "features", "label", NUM_CLASSES, candidate_indices=[0, 4], num_features=4)
    with pytest.raises(ValueError, match="repeated"):
        class_gram_statistics(df, "features", "label", NUM_CLASSES, candidate_indices=[1, 1], num_features=4)
    with pytest.raises(ValueError, match=r"center has shape \(2,\), expected \(4,\)"):
        class_gram_statistics(df, "features", "label", NUM_CLASSES, center=[0.0, 1.0], num_features=4)
    with pytest.raises(Exception, match="class indices 0..1"):
        class_gram_statistics(df, "features", "label", 2, num_features=4)


def test_tiles_fold_in_key_order_and_unpack_the_upper_triangles():
    """No Spark: two keys' summaries cut into 4-value tiles (symmetric arrays as packed upper
    triangles), shuffled, sorted by (tile, key), folded and unpacked: key 2's values plus key 5's,
    in that order, and the lower triangles mirror the upper ones."""
    import pyarrow as pa

    from sparkfs.spark.tiled_sums import SummaryLayout, fold_sorted_tiles, summary_tiles, tile_count, unpack_tiles

    layout = SummaryLayout((("counts", (2,)), ("grams", (2, 3, 3))), symmetric=("grams",))
    rng = np.random.default_rng(0)
    summaries = {key: {"counts": rng.random(2), "grams": rng.random((2, 3, 3))} for key in (5, 2)}
    rows = pa.Table.from_batches([batch for key, summary in summaries.items()
                                  for batch in summary_tiles(summary, layout, key, 4)])
    assert rows.num_rows == 2 * tile_count(layout, 4) == 2 * (1 + 2 * 2)  # 2 values; 6 per triangle
    rows = rows.sort_by([("tile", "ascending"), ("key", "ascending")])
    folded = pa.Table.from_batches(list(fold_sorted_tiles(rows.to_batches(max_chunksize=3))))
    summed = unpack_tiles(folded, layout, 4)
    expected = summaries[2]["grams"] + summaries[5]["grams"]
    upper = np.triu(expected)
    assert np.array_equal(summed["grams"], upper + np.triu(expected, 1).swapaxes(1, 2))
    assert np.array_equal(summed["counts"], summaries[2]["counts"] + summaries[5]["counts"])


def test_canonical_grams_are_the_same_bits_for_1_and_3_partitions(spark, monkeypatch):
    """deterministic=True (canonical layout): many groups (8 rows each) and 7-value tiles, the Grams
    of 1 and 3 partitions of the same ordered (sparse, weighted) rows agree in every bit, and equal
    NumPy to rounding."""
    from sparkfs.spark import canonical, tiled_sums

    for name, value in (("MAX_CHUNK_ROWS", 4), ("CHUNKS_PER_GROUP", 2)):
        monkeypatch.setattr(canonical, name, value)
    monkeypatch.setattr(tiled_sums, "TILE_VALUES", 7)
    X, y, weights = make_data(seed=3, n=60, p=5)
    X *= np.random.default_rng(3).uniform(1e-3, 1e3, X.shape[1])  # magnitudes that expose the summing order
    runs = [class_gram_statistics(make_df(spark, X, y, partitions=partitions, sparse=True, weights=weights),
                                  "features", "label", NUM_CLASSES, weight_col="weight", num_features=5,
                                  canonical=True) for partitions in (1, 3)]
    for one, three in zip(*runs):
        assert np.array_equal(one, three)
    assert_statistics_close(runs[0], block_gram_statistics(X, y, NUM_CLASSES, weights=weights))
