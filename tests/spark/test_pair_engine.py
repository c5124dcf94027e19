"""The pair engine (Rows + nearest / pair_sums / kernel_sums) vs brute-force NumPy references.

The references are written here from the definitions (explicit loops, an n x n view of the data)
and share no code with sparkfs. Every engine function is checked on dense, sparse and mixed rows,
with 1 and 3 partitions, several query batches, both transports ("context": broadcast +
treeAggregate; "dataframe": closure + DataFrame reduction, the Spark Connect path) and, for the
per-query sums, both outputs ("driver" array and "dataframe").
"""

import numpy as np
import pytest

pytest.importorskip("pyspark")

from sparkfs.spark.neighbours import kernel_sums, nearest, pair_sums
from sparkfs.spark.passes import query_batches
from sparkfs.spark.rows import Rows
from tests.spark.test_relief_engine import make_df

REL_TOL = 1e-9


def assert_close(got, ref):
    scale = max(float(np.max(np.abs(ref))), 1e-300)
    assert float(np.max(np.abs(np.asarray(got) - ref))) <= REL_TOL * scale


def dataset(kind, seed=3, n=26, p=5):
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    if kind == "integer":  # exact ties in the distances
        X = rng.integers(-2, 3, size=(n, p)).astype(float)
    else:
        X = rng.normal(size=(n, p)) * (rng.random((n, p)) < 0.5)  # half zeros: worth storing sparse
    return X, y


# ----------------------------------------------------------------------------------------------
# References
# ----------------------------------------------------------------------------------------------


def reference_nearest(X, y, query_positions, k, metric, weights=None):
    """Per query and class the k nearest rows by (distance, id), self excluded; ids = positions."""
    w = np.ones(X.shape[1]) if weights is None else np.abs(weights)
    num_classes = int(y.max()) + 1
    ids = np.full((len(query_positions), num_classes, k), -1)
    dists = np.full((len(query_positions), num_classes, k), np.inf)
    for a, q in enumerate(query_positions):
        for c in range(num_classes):
            found = []
            for r in range(X.shape[0]):
                if r == q or y[r] != c:
                    continue
                difference = w * (X[q] - X[r])
                d = float(np.sum(difference ** 2)) if metric == "euclidean" else float(np.sum(np.abs(difference)))
                found.append((d, r))
            found.sort()
            for j, (d, r) in enumerate(found[:k]):
                ids[a, c, j], dists[a, c, j] = r, d
    return ids, dists


def reference_pair_sums(X, query_positions, pair_queries, pair_rows, pair_weights, difference):
    sums = np.zeros((len(query_positions), X.shape[1]))
    for a, r, w in zip(pair_queries, pair_rows, pair_weights):
        delta = X[query_positions[a]] - X[r]
        sums[a] += w * (np.abs(delta) if difference == "abs" else delta ** 2)
    return sums


def reference_kernel_sums(X, query_positions, Uq, Ur, A, kernel, sigma=None):
    sums = np.zeros((len(query_positions), X.shape[1]))
    for a, q in enumerate(query_positions):
        for r in range(X.shape[0]):
            if r == q:
                continue
            t = X[q] - X[r]
            k = np.exp(-t ** 2 / (2 * sigma ** 2)) if kernel == "gaussian" else np.abs(t)
            sums[a] += (Uq[a] @ A @ Ur[r]) * k
    return sums


def soft_memberships(matrix):
    """Deterministic soft memberships of rows (a picklable function, run in the tasks)."""
    dense = matrix.toarray() if hasattr(matrix, "toarray") else np.asarray(matrix)
    logits = np.stack([dense[:, 0], dense[:, 1] - dense[:, 2], -dense[:, 0]], axis=1)
    exp = np.exp(logits - logits.max(axis=1, keepdims=True))
    return exp / exp.sum(axis=1, keepdims=True)


def block_soft_memberships(block):
    return soft_memberships(block.matrix)


# ----------------------------------------------------------------------------------------------
# Tests
# ----------------------------------------------------------------------------------------------

# (data, sparse rows, partitions, transport): each layout, partition count and transport meets the others.
CASES = [("integer", False, 1, "context"), ("integer", False, 3, "dataframe"), ("real", True, 1, "dataframe"),
         ("real", True, 3, "context")]


@pytest.fixture(scope="module")
def frames(spark):
    cache = {}

    def get(kind, sparse, partitions):
        key = (kind, sparse, partitions)
        if key not in cache:
            X, y = dataset(kind)
            cache[key] = (make_df(spark, X, y, partitions, sparse=sparse), X, y)
        return cache[key]

    return get


@pytest.mark.parametrize("kind,sparse,partitions,transport", CASES)
@pytest.mark.parametrize("metric,weighted", [("euclidean", False), ("euclidean", True), ("manhattan", True)])
def test_nearest_equals_brute_force(frames, kind, sparse, partitions, transport, metric, weighted):
    df, X, y = frames(kind, sparse, partitions)
    weights = np.array([0.5, -2.0, 0.0, 1.0, 3.0]) if weighted else None
    with Rows(df, "features", num_features=5, label_col="label", num_classes=3, transport=transport,
              query_batch_bytes=8 * 5 * 9) as rows:
        queries = rows.sample(11, seed=4)
        table = nearest(rows, queries, 3, metric=metric, feature_weights=weights, block_size=4,
                        with_vectors=(metric == "manhattan"))
        assert len(query_batches(rows, queries)) == 2
    ref_ids, ref_dists = reference_nearest(X, y, queries.ids, 3, metric, weights)
    np.testing.assert_array_equal(table.query_ids, queries.ids)
    if kind == "integer":  # exact distances: the tie-break by id is checked too
        np.testing.assert_array_equal(table.neighbour_ids, ref_ids)
    assert_close(np.where(np.isinf(table.distances), 0, table.distances), np.where(np.isinf(ref_dists), 0, ref_dists))
    if metric == "manhattan":  # the neighbours' vectors ride along with the search (one pass)
        expected_vectors = np.where((table.neighbour_ids >= 0)[..., None], X[np.maximum(table.neighbour_ids, 0)], 0.0)
        np.testing.assert_array_equal(table.vectors, expected_vectors)
    else:
        assert table.vectors is None


@pytest.mark.parametrize("kind,sparse,partitions,transport", CASES)
@pytest.mark.parametrize("difference", ["abs", "square"])
def test_pair_sums_equal_brute_force(frames, kind, sparse, partitions, transport, difference):
    df, X, y = frames(kind, sparse, partitions)
    rng = np.random.default_rng(7)
    with Rows(df, "features", num_features=5, label_col="label", num_classes=3, transport=transport,
              query_batch_bytes=800) as rows:
        queries = rows.sample(None)  # all 26 rows, ids = positions
        pair_queries = rng.integers(0, 26, 60)
        pair_rows = rng.integers(0, 26, 60)
        pair_weights = rng.normal(size=60)
        pair_weights[:5] = 0.0
        result = pair_sums(rows, queries, pair_queries, pair_rows, pair_weights, difference=difference,
                           per_query="driver")
        totals = pair_sums(rows, queries, pair_queries, pair_rows, pair_weights, difference=difference) \
            if difference == "abs" else result
    ref = reference_pair_sums(X, queries.ids, pair_queries, pair_rows, pair_weights, difference)
    assert_close(result.query_sums, ref)
    assert_close(result.feature_sums, ref.sum(axis=0))
    assert_close(totals.feature_sums, ref.sum(axis=0))
    assert difference == "square" or totals.query_sums is None


@pytest.mark.parametrize("kind,sparse,partitions,transport", CASES)
def test_kernel_sums_one_hot_and_soft_memberships(frames, kind, sparse, partitions, transport):
    df, X, y = frames(kind, sparse, partitions)
    A_classes = np.array([[-1.0, 1.0, 1.0], [1.0, -1.0, 1.0], [1.0, 1.0, -1.0]])  # Han & Yu's margin
    A_soft = np.random.default_rng(5).normal(size=(3, 3))
    sigma = np.array([0.5, 1.0, 2.0, 0.7, 1.5])
    with Rows(df, "features", num_features=5, label_col="label", num_classes=3, transport=transport,
              query_batch_bytes=8 * 5 * 6) as rows:
        queries = rows.sample(13, seed=2)
        margins = kernel_sums(rows, queries, "abs", group_weights=A_classes, per_query="driver", block_size=5)
        soft = kernel_sums(rows, queries, "gaussian", group_weights=A_soft, sigma=sigma,
                           query_groups=soft_memberships(queries.matrix), row_groups=block_soft_memberships,
                           per_query="driver", block_size=5)
    one_hot = np.eye(3)[y]
    ref_margins = reference_kernel_sums(X, queries.ids, one_hot[queries.ids], one_hot, A_classes, "abs")
    assert_close(margins.query_sums, ref_margins)
    assert_close(margins.feature_sums, ref_margins.sum(axis=0))
    U = soft_memberships(X)
    ref_soft = reference_kernel_sums(X, queries.ids, U[queries.ids], U, A_soft, "gaussian", sigma)
    assert_close(soft.query_sums, ref_soft)


@pytest.mark.parametrize("transport", ["context", "dataframe"])
def test_per_query_dataframe_equals_the_driver_array(frames, transport):
    df, X, y = frames("real", True, 3)
    with Rows(df, "features", num_features=5, label_col="label", num_classes=3, transport=transport,
              query_batch_bytes=8 * 5 * 6) as rows:
        queries = rows.sample(None)
        pairs = (np.arange(26), (np.arange(26) + 5) % 26, np.linspace(-1, 1, 26))
        pairs = tuple(np.concatenate([part, part]) for part in pairs)
        pairs[2][26:] = 0.0  # a second, zero-weight copy of every pair
        pairs[2][3] = 0.0  # query 3 has no term at all: it still appears, with zeros
        frame = pair_sums(rows, queries, *pairs, per_query="dataframe").query_frame
        driver = pair_sums(rows, queries, *pairs, per_query="driver")
        A = np.array([[-1.0, 1.0, 1.0], [1.0, -1.0, 1.0], [1.0, 1.0, -1.0]])
        kernel_frame = kernel_sums(rows, queries, "abs", group_weights=A, per_query="dataframe").query_frame
        kernel_driver = kernel_sums(rows, queries, "abs", group_weights=A, per_query="driver")
    collected = {row["row_id"]: row["sums"].toArray() for row in frame.collect()}
    assert sorted(collected) == list(range(26))
    assert_close(np.array([collected[i] for i in range(26)]), driver.query_sums)
    assert np.all(collected[3] == 0)
    kernel_rows = {row["row_id"]: row["sums"].toArray() for row in kernel_frame.collect()}
    assert_close(np.array([kernel_rows[i] for i in range(26)]), kernel_driver.query_sums)
    assert_close(kernel_frame.agg({"row_id": "count"}).first()[0], 26)


def test_rows_sample_counts_and_statistics_do_not_depend_on_partitions(frames):
    results = []
    for partitions in (1, 3):
        df, X, y = frames("real", True, partitions)
        with Rows(df, "features", num_features=5, label_col="label", num_classes=3) as rows:
            sample = rows.sample(9, seed=11)
            statistics = rows.column_statistics()
            results.append((sample.ids, rows.class_counts, statistics))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], np.bincount(y))
    for got in (results[0][2], results[1][2]):
        assert_close(got.minimum, X.min(axis=0))
        assert_close(got.maximum, X.max(axis=0))
        assert_close(got.mean, X.mean(axis=0))
        assert_close(got.std, X.std(axis=0, ddof=1))


@pytest.mark.parametrize("sparse,partitions", [(True, 3), (False, 1)])
def test_a_wide_sample_takes_its_rows_in_a_second_pass_with_the_same_bits(frames, monkeypatch, sparse, partitions):
    """Above SAMPLE_IN_ONE_PASS_BYTES the sample first finds its ids, then ships only those rows
    (one pass would ship up to the whole sample from every block): the same rows, the same bits."""
    import sparkfs.spark.driver_rows as driver_rows

    df, X, y = frames("real", sparse, partitions)
    samples = []
    for threshold in (2**40, 1):  # one pass, then two
        monkeypatch.setattr(driver_rows, "SAMPLE_IN_ONE_PASS_BYTES", threshold)
        with Rows(df, "features", num_features=5, label_col="label", num_classes=3) as rows:
            samples.append(rows.sample(9, seed=11))
            passes = list(rows.info["passes"])
        assert ("sample keys" in passes) == (threshold == 1) and "query sample" in passes
    one, two = samples
    np.testing.assert_array_equal(one.ids, two.ids)
    np.testing.assert_array_equal(one.labels, two.labels)
    dense = [m.toarray() if hasattr(m, "toarray") else np.asarray(m) for m in (one.matrix, two.matrix)]
    assert dense[0].tobytes() == dense[1].tobytes() and np.array_equal(dense[0], X[one.ids])


def test_transport_switch_and_bad_values(spark, frames):
    df, X, y = frames("integer", False, 1)
    with pytest.raises(ValueError, match="The 'transport' parameter must be a str among"):
        Rows(df, "features", num_features=5, label_col="label", num_classes=3, transport="rdd")
    spark.conf.set("sparkfs.transport", "dataframe")
    try:
        with Rows(df, "features", num_features=5, label_col="label", num_classes=3) as rows:
            assert rows.transport == "dataframe"
    finally:
        spark.conf.unset("sparkfs.transport")
    with Rows(df, "features", num_features=5, label_col="label", num_classes=3) as rows:
        assert rows.transport == "context"
        queries = rows.sample(4, seed=0)
        with pytest.raises(ValueError, match="The 'per_query' parameter"):
            pair_sums(rows, queries, [0], [1], [1.0], per_query="executor")
        with pytest.raises(ValueError, match="The 'kernel' parameter"):
            kernel_sums(rows, queries, "cosine", group_weights=np.eye(3))
        with pytest.raises(ValueError, match="feature_weights must be 5 finite numbers"):
            nearest(rows, queries, 2, feature_weights=np.ones(4))


@pytest.mark.parametrize("transport", ["context", "dataframe"])
def test_cached_blocks_give_the_same_results(frames, transport):
    df, X, y = frames("real", True, 3)
    outcomes = []
    for cache_blocks in (False, True):
        with Rows(df, "features", num_features=5, label_col="label", num_classes=3, transport=transport,
                  cache_blocks=cache_blocks) as rows:
            queries = rows.sample(8, seed=5)
            scaled_rows = rows.scaled_by(np.array([1.0, 2.0, 0.5, 1.0, 4.0]))
            table = nearest(scaled_rows, queries, 2)
            sums = pair_sums(scaled_rows, queries, np.arange(8), table.neighbour_ids[:, 0, 0], np.ones(8),
                             per_query="driver")
            outcomes.append((table.neighbour_ids, sums.query_sums))
            assert ("blocks (cached)" in rows.info["passes"]) == cache_blocks
    np.testing.assert_array_equal(outcomes[0][0], outcomes[1][0])
    np.testing.assert_array_equal(outcomes[0][1], outcomes[1][1])
    scaled = X / np.array([1.0, 2.0, 0.5, 1.0, 4.0])
    ref = reference_pair_sums(scaled, queries.ids, np.arange(8), outcomes[1][0][:, 0, 0], np.ones(8), "abs")
    assert_close(outcomes[1][1], ref)
