"""The float engine's keyed summaries (sparkfs.spark.keyed_moments): per-class sums of the ids that
occur only, for vectors too wide for dense per-class arrays.

On 2^22-wide sparse rows (a few hundred rows, so it is cheap) the class moments are checked against
NumPy sums written here, on 1 and 3 partitions, with and without the column's size in its metadata;
on narrow rows with the dense cap lowered, the keyed sums are the dense engine's bits; the anova, chi2,
lfs and variance fits on the wide rows score as the same fits on the rows cut down to the ids that
occur (plus one that never does).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from pyspark.ml.linalg import Vectors, VectorUDT
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StructField, StructType

import sparkfs.spark.float_moments as float_moments
from sparkfs.io.libsvm import sparse_vectors_metadata
from sparkfs.methods import METHODS
from sparkfs.spark.keyed_moments import merge_keyed
from sparkfs.spark.stats import class_moments

pytestmark = pytest.mark.spark

WIDE = 2**22


def _wide_rows(n=240, classes=5, seed=4):
    """(CSR n x WIDE, labels): about 20 values a row on a few hundred ids, some ids class-informative,
    and one id of the same value in every row (a constant feature)."""
    rng = np.random.default_rng(seed)
    vocabulary = np.sort(rng.choice(WIDE, 400, replace=False))
    labels = rng.integers(0, classes, n).astype(np.float64)
    rows, cols = [], []
    for i in range(n):
        picked = rng.choice(vocabulary[:300], 18, replace=False)
        informative = vocabulary[300 + 20 * int(labels[i]): 300 + 20 * int(labels[i]) + 20][:rng.integers(1, 4)]
        ids = np.unique(np.concatenate([picked, informative]))
        rows.extend([i] * ids.size)
        cols.extend(ids.tolist())
    values = np.round(rng.random(len(rows)) * 3.0 + 0.1, 3)
    constant = sp.csr_matrix((np.full(n, 2.0), (np.arange(n), np.full(n, WIDE - 1))), shape=(n, WIDE))
    return sp.csr_matrix((values, (rows, cols)), shape=(n, WIDE)) + constant, labels  # the last id: 2.0 everywhere


def _frame(spark, matrix, labels, partitions, weights=None, metadata=True):
    fields = [StructField("features", VectorUDT()), StructField("label", DoubleType())]
    if weights is not None:
        fields.append(StructField("weight", DoubleType()))
    rows = []
    for i in range(matrix.shape[0]):
        start, end = matrix.indptr[i], matrix.indptr[i + 1]
        vector = Vectors.sparse(matrix.shape[1], matrix.indices[start:end].tolist(), matrix.data[start:end].tolist())
        rows.append((vector, float(labels[i])) + ((float(weights[i]),) if weights is not None else ()))
    frame = spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), StructType(fields))
    if metadata:
        frame = frame.select(F.col("features").alias("features", metadata=sparse_vectors_metadata(matrix.shape[1])),
                             *frame.columns[1:])
    return frame


def test_joined_id_ranges_are_the_merged_summary_bit_for_bit():
    """The driver joins the merged id ranges by concatenation: the arrays merge_keyed would build."""
    from sparkfs.spark.keyed_moments import id_ranges, join_ranges, keyed_extremes_of_block, keyed_sums_of_block

    matrix, labels = _wide_rows(n=60, seed=6)
    keys, index = np.unique(labels, return_inverse=True)
    ids, classes, sums, squares = keyed_sums_of_block(matrix, index, np.ones(60), len(keys))
    summary = {"keys": keys, "kind": np.array([0]), "num_features": np.array([WIDE]), "null_labels": np.array([0]),
               "counts": np.bincount(index).astype(np.int64), "weights": np.bincount(index).astype(float),
               "ids": ids, "classes": classes, "sums": sums, "squares": squares,
               **keyed_extremes_of_block(matrix, np.ones(60, dtype=bool))}
    parts = [merge_keyed([part]) for part in id_ranges(summary, 8)]
    joined, merged = join_ranges(parts), merge_keyed(parts)
    assert sorted(joined) == sorted(merged)
    for name in merged:
        np.testing.assert_array_equal(joined[name], merged[name], err_msg=name)
        assert joined[name].dtype == merged[name].dtype, name


@pytest.mark.parametrize("partitions, weighted, metadata", [(1, False, True), (3, True, True), (3, False, False)])
def test_wide_rows_keep_the_ids_that_occur_and_match_numpy(spark, partitions, weighted, metadata):
    matrix, labels = _wide_rows()
    weights = np.random.default_rng(1).random(matrix.shape[0]) * 2.0 if weighted else np.ones(matrix.shape[0])
    frame = _frame(spark, matrix, labels, partitions, weights if weighted else None, metadata)
    moments = class_moments(frame, "features", "label", "weight" if weighted else None, engine="float")
    occurring = np.unique(matrix.indices)
    held = moments.feature_ids
    assert moments.num_features == WIDE and held is not None
    assert held.size == occurring.size + 1 and set(occurring) < set(held)  # one absent id stands for the rest
    assert moments.label_values == sorted(set(labels.tolist()))
    for c, value in enumerate(moments.label_values):
        rows = labels == value
        w = weights[rows]
        block = matrix[rows][:, held]
        assert moments.class_counts[c] == rows.sum()
        np.testing.assert_allclose(moments.class_weights[c], w.sum(), rtol=1e-12)
        np.testing.assert_allclose(moments.class_sums[c], block.T @ w, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(moments.class_sum_squares[c], block.multiply(block).T @ w, rtol=1e-12, atol=1e-12)
    dense = matrix[:, held].toarray()
    np.testing.assert_array_equal(moments.feature_min, dense.min(axis=0))
    np.testing.assert_array_equal(moments.feature_max, dense.max(axis=0))
    column_sums = moments.per_feature(moments.class_sums.sum(axis=0))
    assert column_sums.shape == (WIDE,)
    np.testing.assert_allclose(column_sums, np.asarray(matrix.T @ weights).ravel(), rtol=1e-12, atol=1e-12)


def test_keyed_sums_are_the_dense_engines_bits(spark, monkeypatch):
    rng = np.random.default_rng(7)
    matrix = sp.random(90, 50, density=0.2, random_state=7, format="lil") * 5.0
    matrix[:, [3, 4, 40]] = 0.0  # ids that never occur
    matrix = sp.csr_matrix(matrix)
    matrix.eliminate_zeros()
    labels = rng.integers(0, 4, 90).astype(np.float64)
    frame = _frame(spark, sp.csr_matrix(matrix), labels, 3).persist()
    try:
        dense = class_moments(frame, "features", "label", engine="float")
        monkeypatch.setattr(float_moments, "FOLDED_CLASS_BYTES", 32 * 50 - 1)  # two classes no longer fit dense
        keyed = class_moments(frame, "features", "label", engine="float")
    finally:
        frame.unpersist()
    assert dense.feature_ids is None and keyed.feature_ids is not None
    np.testing.assert_array_equal(keyed.class_counts, dense.class_counts)
    for name in ("class_sums", "class_sum_squares"):
        np.testing.assert_array_equal(keyed.per_feature(getattr(keyed, name)), getattr(dense, name))
    np.testing.assert_array_equal(keyed.per_feature(keyed.feature_min), dense.feature_min)
    np.testing.assert_array_equal(keyed.per_feature(keyed.feature_max), dense.feature_max)


@pytest.mark.parametrize("partitions", [1, 3])
def test_filters_on_wide_rows_score_as_on_the_ids_that_occur(spark, partitions):
    matrix, labels = _wide_rows(seed=5)
    occurring = np.unique(matrix.indices)
    absent = int(np.flatnonzero(np.isin(np.arange(occurring.size + 1), occurring, invert=True))[0])
    kept = np.union1d(occurring, [absent])  # the ids that occur and one that does not, in id order
    wide = _frame(spark, matrix, labels, partitions).persist()
    narrow = _frame(spark, sp.csr_matrix(matrix[:, kept]), labels, partitions).persist()
    try:
        for method in ("anova", "chi2", "lfs", "variance"):
            cls, fixed = METHODS[method]
            wide_model = cls(numFeatures=20)._set(**fixed).fit(wide)
            narrow_model = cls(numFeatures=20)._set(**fixed).fit(narrow)
            assert wide_model.summary["stats_engine"] == "float", method
            expected = np.full(WIDE, narrow_model.scores[np.searchsorted(kept, absent)])
            expected[kept] = narrow_model.scores
            np.testing.assert_allclose(wide_model.scores, expected, rtol=1e-9, atol=1e-12, err_msg=method)
            assert sorted(wide_model.selectedFeatures) == sorted(kept[narrow_model.selectedFeatures].tolist()), method
    finally:
        wide.unpersist()
        narrow.unpersist()


def test_a_summarizer_that_cannot_fit_the_heap_is_refused_before_its_pass(spark):
    from sparkfs.errors import DriverBudgetError
    from sparkfs.spark.stats import check_summarizer_memory

    row = spark.createDataFrame([(Vectors.sparse(WIDE, [1], [1.0]), 0.0)], ["features", "label"])
    frame = row.select(F.col("features").alias("features", metadata=sparse_vectors_metadata(WIDE)), "label")
    check_summarizer_memory(frame, "features", 2, extremes=False)  # 2 x 2^22 doubles x 4 arrays: fits 2g
    with pytest.raises(DriverBudgetError, match=r"5000 classes x 4194304 features.*spark\.driver\.memory"):
        check_summarizer_memory(frame, "features", 5000, extremes=False)
