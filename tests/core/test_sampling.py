"""Content keys of the row sample (sparkfs.core.sampling): a function of what a row holds, not of
where it is, dense and sparse alike; ties broken by id."""

import numpy as np
import scipy.sparse as sp

from sparkfs.core.sampling import content_sample_keys, row_content_hashes, smallest_key_positions


def _rows(seed=0, n=60, p=9):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[rng.random((n, p)) < 0.6] = 0.0
    return X, rng.integers(0, 3, n).astype(np.float64), rng.random(n)


def test_the_hash_reads_the_content_dense_or_sparse_in_any_row_or_entry_order():
    X, y, w = _rows()
    hashes = row_content_hashes(X, y, w)
    csr = sp.csr_matrix(X)
    assert np.array_equal(row_content_hashes(csr, y.astype(np.int64), w), hashes)
    unsorted = csr.copy()
    for row in range(X.shape[0]):  # entries of each CSR row reversed
        part = slice(unsorted.indptr[row], unsorted.indptr[row + 1])
        unsorted.indices[part], unsorted.data[part] = unsorted.indices[part][::-1], unsorted.data[part][::-1]
    assert np.array_equal(row_content_hashes(unsorted, y, w), hashes)
    order = np.random.default_rng(1).permutation(X.shape[0])
    assert np.array_equal(row_content_hashes(X[order], y[order], w[order]), hashes[order])
    assert np.unique(hashes).size == X.shape[0]


def test_explicit_zeros_and_negative_zero_are_not_content_but_label_weight_and_index_are():
    X, y, w = _rows(2, n=4)
    base = row_content_hashes(X, y, w)
    stored_zero = sp.csr_matrix((np.array([0.0, 1.5]), np.array([0, 3]), np.array([0, 2])), shape=(1, X.shape[1]))
    plain = sp.csr_matrix((np.array([1.5]), np.array([3]), np.array([0, 1])), shape=(1, X.shape[1]))
    assert np.array_equal(row_content_hashes(stored_zero), row_content_hashes(plain))
    negative_zero = X.copy()
    negative_zero[X == 0] = -0.0
    assert np.array_equal(row_content_hashes(negative_zero, y, w), base)
    assert row_content_hashes(X, y + 1, w)[0] != base[0]
    assert row_content_hashes(X, y, w * 2)[0] != base[0]
    shifted = np.roll(X, 1, axis=1)  # the same values at other indices
    assert row_content_hashes(shifted, y, w)[0] != base[0] or not X[0].any()
    assert np.array_equal(row_content_hashes(np.zeros((2, 3))), row_content_hashes(sp.csr_matrix((2, 3))))


def test_the_smallest_keys_with_ties_broken_by_id_whatever_the_row_order():
    keys = np.array([5, 3, 3, 9, 1, 3], dtype=np.uint64)
    ids = np.array([10, 4, 2, 7, 8, 3])
    assert smallest_key_positions(keys, ids, 3).tolist() == [4, 2, 5]  # key 1, then key 3 by id 2, 3
    order = np.array([3, 5, 0, 2, 4, 1])
    assert ids[order][smallest_key_positions(keys[order], ids[order], 3)].tolist() == [8, 2, 3]
    big = np.array([2**63 + 1, 7], dtype=np.uint64)  # unsigned order, not signed
    assert smallest_key_positions(big, np.array([0, 1]), 1).tolist() == [1]


def test_the_sample_is_the_same_rows_for_any_row_order():
    X, y, w = _rows(3, n=200)
    ids = np.arange(200)
    drawn = set(smallest_key_positions(content_sample_keys(X, y, w, seed=7), ids, 25).tolist())
    order = np.random.default_rng(4).permutation(200)
    again = smallest_key_positions(content_sample_keys(X[order], y[order], w[order], seed=7), ids, 25)
    assert set(order[again].tolist()) == drawn
    other_seed = set(smallest_key_positions(content_sample_keys(X, y, w, seed=8), ids, 25).tolist())
    assert other_seed != drawn
