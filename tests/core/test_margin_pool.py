"""Lmba and Simba within a pool on the driver (sparkfs.core.margin_pool) vs the plain NumPy
in-memory drivers run on the pool's rows: dense and CSR rows, both batch rules."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.core import margin_weighting as mw
from sparkfs.core import simba
from sparkfs.core.margin_pool import lmba_in_pool, pickable_positions, simba_in_pool
from sparkfs.core.margin_runs import MarginRun
from tests.core.test_lmba_simba import assert_close, continuous_data


@pytest.mark.parametrize("sparse,rule", [(False, "replay"), (True, "sum")])
def test_lmba_in_pool_equals_the_in_memory_driver_on_the_pool(sparse, rule):
    X, y = continuous_data(3)
    X[X < -0.5] = 0.0  # zeros, so the CSR form has structure
    run = MarginRun(schedule="decay", passes=2, batch_size=4, batch_rule=rule)
    ids = np.arange(len(y)) * 3 + 7  # ids need not be positions, only increasing
    found = lmba_in_pool(sp.csr_matrix(X) if sparse else X, y, ids, num_classes=3, k=2, c=0.5, run=run,
                         projection="none", seed=4)
    expected = mw.lmba_in_memory(X, y, k=2, c=0.5, batch_size=4, schedule="decay", passes=2, seed=4,
                                 batch_rule=rule)[1]
    assert_close(found.ranked, expected)
    assert (found.steps, found.left_out) == (run.steps(len(y)), 0)


@pytest.mark.parametrize("sparse,rule", [(True, "replay"), (False, "sum")])
def test_simba_in_pool_equals_the_in_memory_driver_on_the_pool(sparse, rule):
    X, y = continuous_data(2)
    X[X < -0.5] = 0.0
    run = MarginRun(passes=1, batch_size=3, batch_rule=rule, averaging="iterates")
    found = simba_in_pool(sp.csr_matrix(X) if sparse else X, y, np.arange(len(y)), num_classes=2, run=run, seed=2)
    expected = simba.simba_in_memory(X, y, batch_size=3, batch_rule=rule, averaging="iterates", seed=2)[1]
    assert_close(found.ranked, expected)


def test_a_class_alone_in_the_pool_is_never_picked_and_a_pool_without_two_classes_is_refused():
    X, y = continuous_data(2)
    y = y.copy()
    y[5] = 2  # the only row of class 2: no nearest hit, but a candidate miss for the others
    np.testing.assert_array_equal(pickable_positions(y), np.flatnonzero(y != 2))
    found = simba_in_pool(X, y, np.arange(len(y)), num_classes=3, run=MarginRun(batch_size=4), seed=1)
    assert found.left_out == 1 and found.steps == MarginRun(batch_size=4).steps(len(y) - 1)
    with pytest.raises(ValueError, match=r"the pool of 3 rows holds 3 class\(es\), 0 with two rows or more"):
        pickable_positions([0, 1, 2])


def test_content_order_does_not_depend_on_the_order_the_rows_come_in():
    """The pool's visit order without user ids (module notes): the same rows in any order, dense or
    CSR, come out in the same order; identical rows (3 and 7 here) are adjacent; the seed moves it."""
    from sparkfs.core.margin_pool import content_order

    X, y = continuous_data(2)
    X[X < -0.5] = 0.0
    X[3], y[3] = X[7], y[7]
    shuffled = np.random.default_rng(9).permutation(len(y))
    ordered = content_order(X, y, np.arange(len(y)), 5)
    again = shuffled[content_order(sp.csr_matrix(X[shuffled]), y[shuffled], np.arange(len(y)), 5)]
    np.testing.assert_array_equal(X[again], X[ordered])
    np.testing.assert_array_equal(y[again], y[ordered])
    assert abs(int(np.flatnonzero(ordered == 3)[0]) - int(np.flatnonzero(ordered == 7)[0])) == 1
    assert not np.array_equal(content_order(X, y, np.arange(len(y)), 6), ordered)
