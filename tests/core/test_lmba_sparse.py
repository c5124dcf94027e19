"""Lmba on CSR rows (a hashed vocabulary: 2^20-2^24 ids, a few hundred per row) keeps its per-instance
hinge terms CSR and steps on each bracket's support; the result is the dense rows' to rounding."""


import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.core import margin_weighting as mw
from sparkfs.core.lmba_steps import lmba_replay
from sparkfs.core.margin_pool import lmba_in_pool
from sparkfs.core.margin_runs import IterateAverage, MarginRun
from tests.helpers import traced_peak

REL_TOL = 1e-12


def assert_close(got, ref):
    got, ref = np.asarray(got, dtype=float), np.asarray(ref, dtype=float)
    assert got.shape == ref.shape
    assert np.max(np.abs(got - ref), initial=0.0) <= REL_TOL * max(np.max(np.abs(ref), initial=0.0), 1e-300)


def sparse_data(n=40, num_features=300, per_row=12, num_classes=3, seed=0, integer=True):
    """Rows of ``per_row`` random ids among ``num_features``; a class's rows share a few ids more often."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % num_classes)
    columns = [np.sort(rng.choice(num_features, per_row, replace=False)) for _ in range(n)]
    for row, label in enumerate(labels):  # two ids of the row's class, so the classes differ
        columns[row][:2] = [label, num_classes + label]
        columns[row] = np.unique(columns[row])
    values = [rng.integers(1, 5, size=ids.size).astype(float) if integer else rng.gamma(2.0, size=ids.size)
              for ids in columns]
    indptr = np.concatenate([[0], np.cumsum([ids.size for ids in columns])])
    matrix = sp.csr_matrix((np.concatenate(values), np.concatenate(columns), indptr), shape=(n, num_features))
    return matrix, labels


def block_inputs(matrix, labels, batch, k=2):
    dense = matrix.toarray()
    target_index, theta = [], []
    for i in batch:
        same = np.flatnonzero((labels == labels[i]) & (np.arange(labels.size) != i))
        distances = np.sum((dense[same] - dense[i]) ** 2, axis=1)
        target_index.append(same[np.argsort(distances, kind="stable")[:k]])
        theta.append(1.0 + i % 3)
    return np.array(target_index), np.array(theta)


@pytest.mark.parametrize("integer", [True, False])
def test_per_instance_terms_of_csr_rows_are_csr_and_equal_the_dense_ones(integer):
    matrix, labels = sparse_data(integer=integer)
    batch = np.array([3, 17, 8, 30])
    target_index, theta = block_inputs(matrix, labels, batch)
    w = np.linspace(0.3, 1.2, matrix.shape[1])
    found = {}
    for kind, rows in (("csr", matrix), ("dense", matrix.toarray())):
        differences = mw.lmba_target_differences(rows[batch], rows, target_index)
        thresholds = mw.lmba_thresholds(theta, differences, w)
        impostor_sums, counts = mw.lmba_block_terms(rows[batch], labels[batch], thresholds, rows, labels, w,
                                                    per_instance=True)
        found[kind] = (impostor_sums, counts, mw.lmba_target_terms(differences, counts, 0.5), thresholds)
    csr_sums, csr_counts, csr_terms, csr_thresholds = found["csr"]
    dense_sums, dense_counts, dense_terms, dense_thresholds = found["dense"]
    assert sp.issparse(csr_sums) and sp.issparse(csr_terms) and csr_sums.shape == (4, matrix.shape[1])
    np.testing.assert_array_equal(csr_thresholds, dense_thresholds)  # distances: the same bits
    np.testing.assert_array_equal(csr_counts, dense_counts)
    assert csr_counts.sum() > 0
    assert_close(csr_sums.toarray(), dense_sums)
    assert_close(csr_terms.toarray(), dense_terms)
    for i, f in zip(*csr_sums.nonzero()):  # S_i. lives on x_i's ids and those of the rows of other classes
        impostor_ids = matrix[labels != labels[batch[i]]].indices
        assert f in matrix[batch[i]].indices or f in impostor_ids


@pytest.mark.parametrize("projection", ["none", "clip"])
def test_replay_on_csr_brackets_equals_the_dense_replay(projection):
    rng = np.random.default_rng(7)
    num_features = 500
    target_terms = sp.random(6, num_features, density=0.03, format="csr", random_state=1)
    impostor_sums = sp.random(6, num_features, density=0.05, format="csr", random_state=2)
    w = rng.uniform(-0.3, 1.4, num_features)  # outside [0, 1] too: the first step clips all of w
    betas = 0.5 / np.sqrt(np.arange(1, 7))
    dense_average, sparse_average = IterateAverage(w), IterateAverage(w)
    dense = lmba_replay(w, target_terms.toarray(), impostor_sums.toarray(), 2.0, betas, projection, dense_average)
    sparse = lmba_replay(w, target_terms, impostor_sums, 2.0, betas, projection, sparse_average)
    assert_close(sparse, dense)
    assert_close(sparse_average.mean(), dense_average.mean())
    untouched = np.setdiff1d(np.arange(num_features), np.union1d(target_terms.indices, impostor_sums.indices))
    expected = np.clip(w[untouched], 0.0, 1.0) if projection == "clip" else w[untouched]
    np.testing.assert_array_equal(sparse[untouched], expected)


@pytest.mark.parametrize("rule", ["replay", "sum"])
@pytest.mark.parametrize("projection", ["none", "clip"])
@pytest.mark.parametrize("integer", [True, False])
def test_lmba_on_csr_rows_equals_lmba_on_the_dense_rows(rule, projection, integer):
    matrix, labels = sparse_data(n=36, num_features=400, integer=integer, seed=2)
    run = MarginRun(schedule="decay", step_size=0.5, passes=2, batch_size=4, batch_rule=rule)
    settings = dict(num_classes=3, k=2, c=0.5, run=run, projection=projection, seed=3)
    ids = np.arange(labels.size)
    on_csr = lmba_in_pool(matrix, labels, ids, **settings)
    on_dense = lmba_in_pool(matrix.toarray(), labels, ids, **settings)
    assert_close(on_csr.ranked, on_dense.ranked)
    assert np.max(np.abs(on_dense.ranked - 1.0)) > 1e-3  # the weights moved
    in_memory = mw.lmba_in_memory(matrix.toarray(), labels, k=2, c=0.5, batch_size=4, step_size=0.5,
                                  schedule="decay", passes=2, seed=3, projection=projection, batch_rule=rule)[1]
    assert_close(on_csr.ranked, in_memory)


def test_lmba_on_a_wide_csr_pool_holds_a_few_weight_vectors_not_batch_x_features():
    """2^22 ids, 32 rows of 20 ids, batches of 8: the loop's memory is w and a few vectors of its
    length (dense per-instance terms held batch x D doubles each, three of them per step)."""
    num_features = 2 ** 22
    matrix, labels = sparse_data(n=32, num_features=num_features, per_row=20, num_classes=2, seed=5)
    run = MarginRun(passes=1, batch_size=8, batch_rule="replay")
    found, peak = traced_peak(lambda: lmba_in_pool(matrix, labels, np.arange(32), num_classes=2, k=2, c=1.0, run=run,
                                                    projection="none", seed=0))
    assert peak < 4 * 8 * num_features, f"peak {peak / 8 / num_features:.1f} vectors of D doubles"
    touched = np.unique(matrix.indices)
    assert np.all(found.ranked[np.setdiff1d(np.arange(0, num_features, 4099), touched)] == 1.0)
    assert np.any(found.ranked[touched] != 1.0)
