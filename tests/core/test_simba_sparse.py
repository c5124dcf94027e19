"""Simba's update on CSR rows (a hashed vocabulary: 2^20-2^24 ids, a few hundred per row) is computed
on the features where an instance and its neighbours differ, and equals the dense update."""


import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.core import simba
from sparkfs.core.margin_pool import simba_in_pool
from sparkfs.core.margin_runs import IterateAverage, MarginRun
from tests.core.test_lmba_simba import assert_close, continuous_data
from tests.helpers import traced_peak


def _sparse_rows(rows, num_features, per_row, seed):
    rng = np.random.default_rng(seed)
    columns = np.concatenate([np.sort(rng.choice(num_features, per_row, replace=False)) for _ in range(rows)])
    values = rng.integers(1, 4, size=rows * per_row).astype(float)
    return sp.csr_matrix((values, columns, np.arange(rows + 1) * per_row), shape=(rows, num_features))


def _written_out_delta(w, x, hit, miss):
    """Algorithm 1, step 2(c), for one instance, feature by feature."""
    miss_norm = np.sqrt(sum(w[f] ** 2 * (x[f] - miss[f]) ** 2 for f in range(x.size)))
    hit_norm = np.sqrt(sum(w[f] ** 2 * (x[f] - hit[f]) ** 2 for f in range(x.size)))
    return np.array([0.5 * w[f] * ((x[f] - miss[f]) ** 2 / miss_norm if miss_norm else 0.0)
                     - 0.5 * w[f] * ((x[f] - hit[f]) ** 2 / hit_norm if hit_norm else 0.0) for f in range(x.size)])


@pytest.mark.parametrize("rule", ["replay", "sum"])
def test_a_batch_of_csr_rows_updates_w_as_the_dense_rows_do(rule):
    X, _ = continuous_data(2, n=12, D=9)
    X[X < 0.2] = 0.0
    instances, hits, misses = X[:4], X[4:8], X[8:12]
    w = np.linspace(0.5, 1.5, 9)
    betas = np.array([1.0, 0.5, 0.25, 0.125])
    beta = betas if rule == "replay" else 0.7
    dense_average, sparse_average = IterateAverage(w), IterateAverage(w)
    dense = simba.simba_batch_update(w, rule, instances, hits, misses, beta, dense_average)
    sparse = simba.simba_batch_update(w, rule, sp.csr_matrix(instances), sp.csr_matrix(hits), sp.csr_matrix(misses),
                                      beta, sparse_average)
    assert_close(sparse, dense)
    assert_close(sparse_average.mean(), dense_average.mean())
    expected = w.copy()
    if rule == "replay":
        for position in range(4):
            expected = expected + betas[position] * _written_out_delta(expected, instances[position], hits[position],
                                                                       misses[position])
    else:
        expected = expected + 0.7 * sum(_written_out_delta(w, instances[p], hits[p], misses[p]) for p in range(4))
    assert_close(sparse, expected)


def test_a_neighbour_equal_to_the_instance_adds_nothing_on_csr_rows():
    x = sp.csr_matrix(np.array([[0.0, 2.0, 0.0, 1.0]]))
    miss = sp.csr_matrix(np.array([[1.0, 2.0, 0.0, 0.0]]))
    w = np.ones(4)
    replayed = simba.simba_replay(w, x, x.copy(), miss, [1.0])
    assert_close(replayed, w + _written_out_delta(w, x.toarray()[0], x.toarray()[0], miss.toarray()[0]))
    assert replayed[2] == 1.0  # a feature where no row differs keeps its weight


def test_simba_on_a_wide_csr_pool_holds_a_few_weight_vectors_not_batch_x_features():
    """2^22 ids, 32 rows of 20 ids, batches of 8: the loop's memory is w and a few vectors of its
    length (the dense update held three batch x D matrices: 24 vectors and more)."""
    num_features = 2 ** 22
    rows = _sparse_rows(32, num_features, 20, seed=3)
    labels = np.arange(32) % 2
    run = MarginRun(passes=1, batch_size=8, batch_rule="replay")
    found, peak = traced_peak(lambda: simba_in_pool(rows, labels, np.arange(32), num_classes=2, run=run, seed=0))
    assert peak < 8 * 8 * num_features, f"peak {peak / 8 / num_features:.1f} vectors of D doubles"
    touched = np.unique(rows.indices)
    assert np.all(found.ranked[np.setdiff1d(np.arange(0, num_features, 4099), touched)] == 1.0)
    assert np.any(found.ranked[touched] != 1.0)
