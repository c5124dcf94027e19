"""ReliefF's distance on term-like data: ``metric="cosine"`` (rows divided by their
Euclidean norm, then Euclidean distances, margins on the unit rows) and ``preset="default"``
choosing it from the column statistics on non-negative data with at most 10 % non-zero values.

The reference is written here from Kononenko's ReliefF on the unit rows, every row a query:
W_j = 1/n sum_q [ -mean_{h in H_q} |u_qj - u_hj| + sum_{c != y_q} P(c) / (1 - P(y_q)) mean_{m in M_qc} |u_qj - u_mj| ]
with u = x / ||x||_2, H_q / M_qc the k nearest rows of q's class (q excluded) / of class c in
Euclidean distance on u, ties by the lower row index.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs import ReliefSelector
from sparkfs.core.relief import TERM_LIKE_DENSITY, default_distance, is_term_like
from sparkfs.core.sampling import column_statistics
from sparkfs.spark.row_sets import unit_length_rows
from tests.helpers import make_df

pytestmark = pytest.mark.spark


def _term_counts(n=60, p=80, seed=3):
    """tf-idf-like weights, 7.5 % non-zero: 4 random terms, one term of the row's class and a
    common term in every row (so no two rows are orthogonal: cosine distances of sqrt(2) would tie
    to rounding, and the reference's tie-break by row index could not be compared)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    X = np.zeros((n, p))
    for i in range(n):
        X[i, rng.choice(60, size=4, replace=False)] = rng.uniform(0.5, 3.0, size=4)
        X[i, 60 + y[i] * 5 + rng.integers(0, 5)] += rng.uniform(0.5, 2.0)  # a term of the row's class
        X[i, p - 1] = rng.uniform(0.1, 0.5)
    return X, y.astype(float)


def reference_relieff_cosine(X, y, k):
    norms = np.sqrt((X * X).sum(axis=1))
    U = X / np.where(norms > 0, norms, 1.0)[:, None]
    n, p = U.shape
    classes, counts = np.unique(y, return_counts=True)
    prior = dict(zip(classes, counts / n))
    W = np.zeros(p)
    for q in range(n):
        distance = np.sqrt(((U - U[q]) ** 2).sum(axis=1))
        for c in classes:
            members = [r for r in range(n) if y[r] == c and r != q]
            nearest = sorted(members, key=lambda r: (distance[r], r))[:k]
            mean_diff = np.abs(U[nearest] - U[q]).mean(axis=0)
            if c == y[q]:
                W -= mean_diff
            else:
                W += prior[c] / (1 - prior[y[q]]) * mean_diff
    return W / n


def test_the_term_like_rule_on_numbers():
    assert TERM_LIKE_DENSITY == 0.10
    assert is_term_like(np.zeros(4), np.array([10, 0, 5, 5]), num_rows=50)  # 10 % of 200 cells
    assert not is_term_like(np.zeros(4), np.array([10, 1, 5, 5]), num_rows=50)  # 10.5 %
    assert not is_term_like(np.array([0, -1e-9, 0, 0]), np.ones(4), num_rows=50)  # a negative value
    assert not is_term_like(np.zeros(0), np.zeros(0), num_rows=50)
    assert default_distance(np.zeros(2), np.ones(2), 100) == ("cosine", "none")
    assert default_distance(np.ones(2), np.full(2, 100), 100) == ("euclidean", "range")


def test_unit_length_rows_for_dense_and_sparse_with_empty_rows():
    X = np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [0.0, -2.0, 0.0]])
    expected = np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
    np.testing.assert_allclose(unit_length_rows(X), expected, rtol=1e-15)
    sparse = sp.csr_matrix(X)
    out = unit_length_rows(sparse)
    assert sp.issparse(out) and sparse.data.tolist() == [3.0, 4.0, -2.0]  # the input is not changed
    np.testing.assert_allclose(out.toarray(), expected, rtol=1e-15)
    np.testing.assert_allclose(unit_length_rows(sp.csr_matrix((2, 3))).toarray(), np.zeros((2, 3)))


def test_column_statistics_count_non_zeros_as_values_not_storage(spark):
    """Explicit zeros stored in sparse vectors are not counted; the JVM pass, the canonical pass and
    the driver agree."""
    from pyspark.ml.linalg import Vectors

    from sparkfs.spark.rows import Rows

    rows = [(Vectors.sparse(3, [0, 2], [0.0, 5.0]), 0.0), (Vectors.dense([1.0, 0.0, 2.0]), 1.0),
            (Vectors.sparse(3, [1], [-4.0]), 0.0)]
    df = spark.createDataFrame(rows, ["features", "label"])
    for canonical in (False, True):
        with Rows(df, "features", label_col="label", num_features=3, num_classes=2, canonical=canonical) as prepared:
            assert prepared.column_statistics().non_zeros.tolist() == [1.0, 1.0, 2.0], canonical
    dense = np.array([[0.0, 0.0, 5.0], [1.0, 0.0, 2.0], [0.0, -4.0, 0.0]])
    assert column_statistics(dense).non_zeros.tolist() == [1.0, 1.0, 2.0]
    stored_zero = sp.csr_matrix((np.array([0.0, 5.0, 1.0, 2.0, -4.0]), np.array([0, 2, 0, 2, 1]),
                                 np.array([0, 2, 4, 5])), shape=(3, 3))
    assert column_statistics(stored_zero).non_zeros.tolist() == [1.0, 1.0, 2.0]


@pytest.mark.parametrize("partitions, sparse", [(1, True), (3, True), (2, False)])
def test_default_on_term_counts_is_cosine_relieff(spark, partitions, sparse):
    """Term-like counts, stored sparse or dense: the default fit is ReliefF on unit rows and says so."""
    X, y = _term_counts()
    model = ReliefSelector(numFeatures=5, k=4).fit(make_df(spark, X, y, partitions=partitions, sparse=sparse))
    summary = model.summary
    assert summary["metric"] == "cosine" and summary["scaling"] == "none" and summary["preset"] == "default"
    assert summary["distance_rule"].startswith("term-like data (no negative values, ")
    np.testing.assert_allclose(model.scores, reference_relieff_cosine(X, y, 4), rtol=1e-9, atol=1e-13)


def test_paper_preset_an_explicit_setting_and_dense_data_keep_range_scaled_euclidean(spark):
    X, y = _term_counts()
    df = make_df(spark, X, y, partitions=2, sparse=True)
    for selector in (ReliefSelector(numFeatures=5, k=4, preset="paper"), ReliefSelector(numFeatures=5, k=4,
                                                                                        metric="euclidean")):
        summary = selector.fit(df).summary
        assert (summary["metric"], summary["scaling"]) == ("euclidean", "range")
        assert "distance_rule" not in summary
    explicit = ReliefSelector(numFeatures=5, k=4, metric="cosine", scaling="none").fit(df)
    np.testing.assert_allclose(explicit.scores, reference_relieff_cosine(X, y, 4), rtol=1e-9, atol=1e-13)
    rng = np.random.default_rng(0)
    gaussian = rng.normal(size=(40, 6))
    summary = ReliefSelector(numFeatures=2, k=3).fit(make_df(spark, gaussian, np.arange(40) % 2)).summary
    assert (summary["metric"], summary["scaling"]) == ("euclidean", "range")
    assert summary["distance_rule"].startswith("not term-like data (some negative values, 100.0% non-zero)")


def test_unit_length_rows_of_a_block_whose_last_row_is_empty():
    """A sparse block ending in a row with no stored value (a document with no term) has its last
    row start at nnz, where ``reduceat`` has no slot: the norms are still right."""
    X = sp.csr_matrix(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(unit_length_rows(X).toarray(), [[0.6, 0.8], [0.0, 0.0]], rtol=1e-15)
    assert unit_length_rows(sp.csr_matrix((0, 3))).shape == (0, 3)


def test_cosine_relieff_fits_when_a_partition_ends_with_an_empty_document(spark):
    """A document with no term last in its partition (it crashed with reduceat's IndexError)."""
    from pyspark.ml.linalg import Vectors

    rng = np.random.default_rng(0)
    rows = [(Vectors.sparse(30, sorted(rng.choice(30, 3, replace=False).tolist()), [1.0, 2.0, 1.0]), float(i % 2))
            for i in range(40)] + [(Vectors.sparse(30, [], []), 1.0)]
    frame = spark.createDataFrame(rows, ["features", "label"]).coalesce(1)
    model = ReliefSelector(numFeatures=5, metric="cosine", scaling="none").fit(frame)
    assert len(model.selectedFeatures) == 5 and np.all(np.isfinite(model.scores))
