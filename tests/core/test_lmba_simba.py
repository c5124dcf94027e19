"""Lmba (Li & Lu 2009) and Simba (Gilad-Bachrach et al. 2004) vs references written from the papers.

The references (``reference_*``) follow the papers' steps literally with explicit Python loops
over i, j, p and f (Lmba: the n x n matrices B and T of Definitions 1 and 3, theta of eq. (2),
the gradient of eqs. (16)-(17), step 3(d)) and share no code with sparkfs; only the instance
order (:func:`instance_order`) and the step sizes are given to them as input.
Closeness: ``max |got - ref| <= 1e-9 * max |ref|``.

The Lmba data lie on a dyadic grid (multiples of 1/4): at w = 1 the pair (nearhit, nearmiss)
of an instance sits exactly on the hinge (eq. 2), and on such data every code evaluates that
point exactly, so the implementation and the reference agree on it instead of on rounding.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris

from sparkfs.core import margin_weighting as mw
from sparkfs.core import simba
from sparkfs.core.margin_runs import IterateAverage, MarginRun

REL_TOL = 1e-9


def assert_close(got, ref):
    got = np.asarray(got, dtype=float)
    ref = np.asarray(ref, dtype=float)
    assert got.shape == ref.shape
    scale = max(float(np.max(np.abs(ref), initial=0.0)), 1e-300)
    assert float(np.max(np.abs(got - ref), initial=0.0)) <= REL_TOL * scale, (got, ref)


# ----------------------------------------------------------------------------------------------
# References, straight from the papers
# ----------------------------------------------------------------------------------------------


def _squared(X, a, b, w=None):
    total = 0.0
    for f in range(X.shape[1]):
        weight = 1.0 if w is None else w[f] * w[f]
        total += weight * (X[a, f] - X[b, f]) ** 2
    return total


def _nearest(X, y, i, same, w=None):
    best = None
    for j in range(X.shape[0]):
        if j == i or (y[j] == y[i]) != same:
            continue
        d = _squared(X, i, j, w)
        if best is None or d < best[0]:          # strict: ties keep the smaller index
            best = (d, j)
    return best


def reference_lmba(X, y, k, c, order, betas, projection, replay_batch=1, iterates=None):
    """Li & Lu 2009, Section 3.1 Steps 1-4, one instance per step. With ``replay_batch`` B > 1
    (the "replay" batch rule), the hinge test of eq. (17) of every instance of a batch of B
    consecutive picks uses w as it was at the batch's first instance. ``iterates`` (a list)
    collects w after every step."""
    n, D = X.shape
    B = [[1 if y[i] == y[j] else 0 for j in range(n)] for i in range(n)]           # Definition 1
    T = [[0] * n for _ in range(n)]                                               # Definition 3
    for i in range(n):
        same = sorted((_squared(X, i, j), j) for j in range(n) if j != i and B[i][j] == 1)
        for _, j in same[:k]:
            T[i][j] = 1
    w = [1.0] * D                                                                 # Step 1
    for step in range(len(order)):
        if step % replay_batch == 0:
            w_at_batch_start = list(w)
        i = int(order[step][0])                                                   # Step 3(a)
        hit, _ = _nearest(X, y, i, True)                                          # Step 3(b)
        miss, _ = _nearest(X, y, i, False)
        theta = abs(miss - hit)                                                   # eq. (2)
        active = []                                                               # eq. (17)
        for j in range(n):
            for p in range(n):
                if T[i][j] == 1 and B[i][p] == 0:
                    hinge_w = w_at_batch_start
                    if (theta + _squared(X, i, j, hinge_w)) - _squared(X, i, p, hinge_w) > 0:
                        active.append((j, p))
        gradient = []
        for f in range(D):                                                        # Step 3(c), eq. (16)
            first = 0.0
            for j in range(n):
                first += T[i][j] * (X[i, f] - X[j, f]) ** 2
            hinge = 0.0
            for j, p in active:
                hinge += 2 * w[f] * ((X[i, f] - X[j, f]) ** 2 - (X[i, f] - X[p, f]) ** 2)
            gradient.append(2 * w[f] * first + c * hinge)
        norm = math.sqrt(sum(g * g for g in gradient))
        if norm > 0:                                                              # Step 3(d)
            w = [w[f] - betas[step] * gradient[f] / norm for f in range(D)]
        if projection == "clip":
            w = [min(max(v, 0.0), 1.0) for v in w]
        if iterates is not None:
            iterates.append(list(w))
    return np.array(w)


def reference_simba_delta(X, y, i, w):
    """Gilad-Bachrach et al. 2004, Algorithm 1 steps 2(b)-(c) for instance i."""
    _, h = _nearest(X, y, i, True, w)
    _, m = _nearest(X, y, i, False, w)
    miss_norm = math.sqrt(_squared(X, i, m, w))
    hit_norm = math.sqrt(_squared(X, i, h, w))
    delta = []
    for f in range(X.shape[1]):
        miss_term = (X[i, f] - X[m, f]) ** 2 / miss_norm if miss_norm > 0 else 0.0
        hit_term = (X[i, f] - X[h, f]) ** 2 / hit_norm if hit_norm > 0 else 0.0
        delta.append(0.5 * (miss_term - hit_term) * w[f])
    return delta


def reference_simba(X, y, order):
    """Simba; each row of ``order`` is a batch whose Deltas are summed at the same w."""
    w = [1.0] * X.shape[1]
    for batch in order:
        total = [0.0] * X.shape[1]
        for i in batch:
            delta = reference_simba_delta(X, y, int(i), w)
            total = [t + d for t, d in zip(total, delta)]
        w = [a + b for a, b in zip(w, total)]
    top = max(v * v for v in w)
    return np.array([v * v / top for v in w]), np.array(w)


def reference_simba_replay(X, y, order, betas):
    """Simba with the "replay" batch rule, written out: per batch (row of ``order``) the nearest
    hit and miss of every instance at the batch's first w; then, instance by instance,
    w <- w + beta_t * Delta computed with the current w. Returns every iterate (rows)."""
    w = [1.0] * X.shape[1]
    iterates, t = [], 0
    for batch in order:
        start = list(w)
        neighbours = [(_nearest(X, y, int(i), True, start)[1], _nearest(X, y, int(i), False, start)[1]) for i in batch]
        for i, (h, m) in zip(batch, neighbours):
            i = int(i)
            hit_norm, miss_norm = math.sqrt(_squared(X, i, h, w)), math.sqrt(_squared(X, i, m, w))
            delta = []
            for f in range(X.shape[1]):
                miss_term = (X[i, f] - X[m, f]) ** 2 / miss_norm if miss_norm > 0 else 0.0
                hit_term = (X[i, f] - X[h, f]) ** 2 / hit_norm if hit_norm > 0 else 0.0
                delta.append(0.5 * (miss_term - hit_term) * w[f])
            w = [a + betas[t] * d for a, d in zip(w, delta)]
            iterates.append(list(w))
            t += 1
    return np.array(iterates)


def reference_block_terms(instances, labels, targets, theta, rows, row_labels, w, mask):
    m, k, D = targets.shape
    impostor = np.zeros(D)
    counts = np.zeros((m, k), dtype=np.int64)
    for i in range(m):
        for p in range(rows.shape[0]):
            if row_labels[p] == labels[i]:
                continue
            row_distance = sum(w[f] ** 2 * (instances[i, f] - rows[p, f]) ** 2 for f in range(D))
            for j in range(k):
                if not mask[i][j]:
                    continue
                target_distance = sum(w[f] ** 2 * (instances[i, f] - targets[i, j, f]) ** 2 for f in range(D))
                if theta[i] + target_distance - row_distance > 0:
                    counts[i, j] += 1
                    for f in range(D):
                        impostor[f] += (instances[i, f] - rows[p, f]) ** 2
    return impostor, counts


def block_terms(instances, labels, targets, theta, rows, row_labels, w, mask=None):
    """sparkfs's block terms for dense (m, k, D) targets (absent slots: mask False)."""
    m, k, D = targets.shape
    index = np.arange(m * k).reshape(m, k)
    if mask is not None:
        index = np.where(mask, index, -1)
    differences = mw.lmba_target_differences(instances, targets.reshape(m * k, D), index)
    thresholds = mw.lmba_thresholds(theta, differences, w)
    return mw.lmba_block_terms(instances, labels, thresholds, rows, row_labels, w, target_mask=mask)


def gradient_of(w, instances, targets, counts, sums, c, mask=None):
    m, k, D = targets.shape
    index = np.arange(m * k).reshape(m, k)
    if mask is not None:
        index = np.where(mask, index, -1)
    differences = mw.lmba_target_differences(instances, targets.reshape(m * k, D), index)
    return mw.lmba_gradient(w, differences, counts, sums, c, target_mask=mask)


# ----------------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------------


def grid_data(num_classes, n=24, D=5, seed=3):
    """Dyadic data (multiples of 1/4); features 0 and 1 shift with the class."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % num_classes
    X = rng.integers(-8, 9, size=(n, D)) / 4.0
    X[:, 0] += 1.5 * y
    X[:, 1] -= 0.75 * y
    return X, y


def continuous_data(num_classes, n=28, D=5, seed=5):
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % num_classes)
    X = rng.normal(size=(n, D))
    X[:, 0] += 1.2 * y
    X[:, 2] -= 0.8 * y
    return X, y


# ----------------------------------------------------------------------------------------------
# Lmba vs the reference
# ----------------------------------------------------------------------------------------------


# step_size 1.0 is the paper's; with "clip" and beta = 1 every weight of this data ends at 0 (a
# clipped 0 never moves again: eq. (16) carries the factor w_f), so 0.5 keeps those runs alive.
@pytest.mark.parametrize("step_size", [1.0, 0.5])
@pytest.mark.parametrize("schedule", ["constant", "decay"])
@pytest.mark.parametrize("projection", ["none", "clip"])
@pytest.mark.parametrize("c", [1.0, 0.5])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("num_classes", [2, 3])
def test_lmba_in_memory_matches_reference(num_classes, k, c, projection, schedule, step_size):
    X, y = grid_data(num_classes)
    n = X.shape[0]
    ranking, raw = mw.lmba_in_memory(X, y, k=k, c=c, batch_size=1, step_size=step_size, schedule=schedule,
                                     projection=projection, seed=11)
    order = mw.instance_order(n, n, 1, 11)
    betas = [step_size / math.sqrt(t + 1) if schedule == "decay" else step_size for t in range(n)]
    expected = reference_lmba(X, y, k, c, order, betas, projection)
    assert_close(raw, expected)
    top = np.max(np.abs(expected))
    assert_close(ranking, np.abs(expected) / top if top > 0 else np.zeros_like(expected))


@pytest.mark.parametrize("schedule", ["constant", "decay"])
@pytest.mark.parametrize("num_classes,batch", [(2, 4), (3, 5)])
def test_lmba_replay_batches_match_the_reference(num_classes, batch, schedule):
    """Rule "replay": the per-instance steps of the paper, with each batch's hinge sets taken at
    the batch's first w."""
    X, y = grid_data(num_classes)
    n = X.shape[0]
    steps = mw.number_of_steps(n, batch)
    _, raw = mw.lmba_in_memory(X, y, k=3, batch_size=batch, seed=5, schedule=schedule, step_size=0.5)
    order = mw.instance_order(n, steps, batch, 5).reshape(-1, 1)
    betas = [0.5 / math.sqrt(t + 1) if schedule == "decay" else 0.5 for t in range(order.shape[0])]
    assert_close(raw, reference_lmba(X, y, 3, 1.0, order, betas, "none", replay_batch=batch))
    _, summed = mw.lmba_in_memory(X, y, k=3, batch_size=batch, seed=5, schedule=schedule, step_size=0.5,
                                  batch_rule="sum")
    assert np.max(np.abs(summed - raw)) > 1e-3  # the two rules are different procedures


def test_per_instance_impostor_sums_add_up_to_the_total():
    instances, labels, targets, theta, rows, row_labels, w = block_inputs(seed=13)
    m, k, D = targets.shape
    differences = mw.lmba_target_differences(instances, targets.reshape(m * k, D), np.arange(m * k).reshape(m, k))
    thresholds = mw.lmba_thresholds(theta, differences, w)
    total, counts = mw.lmba_block_terms(instances, labels, thresholds, rows, row_labels, w)
    for matrix in (rows, sp.csr_matrix(rows)):
        each, each_counts = mw.lmba_block_terms(instances, labels, thresholds, matrix, row_labels, w, per_instance=True)
        assert each.shape == (m, D)
        assert_close(each.sum(axis=0), total)
        np.testing.assert_array_equal(each_counts, counts)
        for i in range(m):
            one = slice(i, i + 1)
            single, _ = mw.lmba_block_terms(instances[one], labels[one], thresholds[one], matrix, row_labels, w)
            assert_close(each[i], single)


def test_lmba_small_class_uses_the_targets_it_has():
    X, y = grid_data(3, n=20)
    y = y.copy()
    y[[2, 5, 8, 11, 14, 17]] = 0
    y[[3, 6, 9]] = 2          # class 2 keeps 3 rows: 2 targets each when k = 3
    y[[12, 15, 18]] = 1
    assert np.sum(y == 2) < 4
    order = mw.instance_order(20, 30, 1, 4)
    _, raw = mw.lmba_in_memory(X, y, k=3, iterations=30, seed=4, step_size=0.5)
    assert_close(raw, reference_lmba(X, y, 3, 1.0, order, [0.5] * 30, "none"))


def test_the_grid_data_exercises_the_hinge():
    X, y = grid_data(2)
    instances = X[:6]
    targets = np.stack([X[6:9]] * 6)
    theta = np.full(6, 0.5)
    _, counts = block_terms(instances, y[:6], targets, theta, X, y, np.ones(5))
    impostors = np.sum(y != 0)           # the six instances are of class 0
    assert counts.sum() > 0 and (counts < impostors).any()


# ----------------------------------------------------------------------------------------------
# Block terms and gradient
# ----------------------------------------------------------------------------------------------


def block_inputs(seed=7, m=4, k=3, n=30, D=6):
    rng = np.random.default_rng(seed)
    instances = rng.normal(size=(m, D))
    labels = rng.integers(0, 3, size=m)
    targets = instances[:, None, :] + 0.7 * rng.normal(size=(m, k, D))
    theta = rng.uniform(0.0, 2.0, size=m)
    rows = rng.normal(size=(n, D))
    rows[rng.uniform(size=(n, D)) < 0.4] = 0.0
    row_labels = rng.integers(0, 3, size=n)
    w = rng.uniform(-1.0, 1.0, size=D)
    return instances, labels, targets, theta, rows, row_labels, w


def test_block_terms_match_the_loops_and_add_over_blocks(monkeypatch):
    instances, labels, targets, theta, rows, row_labels, w = block_inputs()
    mask = np.ones(targets.shape[:2], dtype=bool)
    want_sums, want_counts = reference_block_terms(instances, labels, targets, theta, rows, row_labels, w, mask)
    assert want_counts.sum() > 0
    full_sums, full_counts = block_terms(instances, labels, targets, theta, rows, row_labels, w)
    assert_close(full_sums, want_sums)
    np.testing.assert_array_equal(full_counts, want_counts)
    assert full_counts.dtype == np.int64 and full_sums.shape == (rows.shape[1],)

    cut = 13
    first = block_terms(instances, labels, targets, theta, rows[:cut], row_labels[:cut], w)
    second_csr = block_terms(instances, labels, targets, theta, sp.csr_matrix(rows[cut:]),
                                     row_labels[cut:], w)
    assert_close(first[0] + second_csr[0], want_sums)
    np.testing.assert_array_equal(first[1] + second_csr[1], want_counts)

    monkeypatch.setattr(mw, "ELEMENT_BUDGET", 50)      # force one row per chunk
    chunked = block_terms(instances, labels, targets, theta, sp.csr_matrix(rows), row_labels, w)
    assert_close(chunked[0], want_sums)
    np.testing.assert_array_equal(chunked[1], want_counts)


def test_block_terms_single_label_batch_skips_same_class_rows():
    instances, _, targets, theta, rows, row_labels, w = block_inputs(seed=8)
    labels = np.full(instances.shape[0], 1)
    mask = np.ones(targets.shape[:2], dtype=bool)
    want = reference_block_terms(instances, labels, targets, theta, rows, row_labels, w, mask)
    got = block_terms(instances, labels, targets, theta, rows, row_labels, w)
    assert_close(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


def test_target_mask_excludes_slots():
    instances, labels, targets, theta, rows, row_labels, w = block_inputs(seed=9)
    mask = np.ones(targets.shape[:2], dtype=bool)
    mask[0, 2] = False
    mask[3, 0] = False
    targets_with_garbage = targets.copy()
    targets_with_garbage[0, 2] = 1e6
    targets_with_garbage[3, 0] = -1e6
    sums, counts = block_terms(instances, labels, targets_with_garbage, theta, rows, row_labels, w, mask=mask)
    want_sums, want_counts = reference_block_terms(instances, labels, targets, theta, rows, row_labels, w, mask)
    assert_close(sums, want_sums)
    np.testing.assert_array_equal(counts, want_counts)
    assert counts[0, 2] == 0 and counts[3, 0] == 0
    # Masked slots add nothing to the gradient either.
    gradient = gradient_of(w, instances, targets_with_garbage, counts, sums, 1.0, mask=mask)
    assert_close(gradient, gradient_of(w, instances, targets, counts, sums, 1.0, mask=mask))
    assert np.all(np.isfinite(gradient)) and np.max(np.abs(gradient)) < 1e3


@pytest.mark.parametrize("sparse", [False, True])
def test_hinges_at_the_kink_are_decided_elementwise_far_from_the_origin(sparse):
    """Grid data moved far from the origin (2^30): every difference and elementwise distance is
    still exact, the matrix-product distances are not (squares ~ 2^60 need more than 53 bits);
    at w = 1 each instance's (nearhit, nearmiss) pair sits exactly on the kink. The active
    counts must equal the loops' exactly (the recheck near the kink); the sums too when dense
    rows are shifted by the instances' mean. CSR rows are not shifted, so their sums carry the
    documented conditioning (relative error ~ eps x squared norm / squared distance) and are
    not compared here."""
    X, y = grid_data(3, n=30, D=4, seed=12)
    X = X + 2.0 ** 30
    n, D = X.shape
    first_target = np.empty(n, dtype=np.int64)
    theta = np.empty(n)
    for i in range(n):
        hit = min((_squared(X, i, j), j) for j in range(n) if j != i and y[j] == y[i])
        miss = min((_squared(X, i, p), p) for p in range(n) if y[p] != y[i])
        first_target[i] = hit[1]
        theta[i] = abs(miss[0] - hit[0])
    targets = X[first_target][:, None, :]
    mask = np.ones((n, 1), dtype=bool)
    w = np.ones(D)
    want_sums, want_counts = reference_block_terms(X, y, targets, theta, X, y, w, mask)
    rows = sp.csr_matrix(X) if sparse else X
    instances = sp.csr_matrix(X) if sparse else X
    got_sums, got_counts = block_terms(instances, y, targets, theta, rows, y, w)
    np.testing.assert_array_equal(got_counts, want_counts)
    if not sparse:
        assert_close(got_sums, want_sums)


def test_weighted_squared_norms_are_the_elementwise_sum():
    rng = np.random.default_rng(3)
    matrix = rng.normal(size=(7, 5))
    matrix[matrix < 0.2] = 0.0
    w = rng.uniform(-2, 2, size=5)
    want = np.array([sum(w[f] ** 2 * row[f] ** 2 for f in range(5)) for row in matrix])
    assert_close(mw.weighted_squared_norms(matrix, w), want)
    np.testing.assert_array_equal(mw.weighted_squared_norms(sp.csr_matrix(matrix), w),
                                  mw.weighted_squared_norms(matrix, w))


def test_target_differences_dense_and_sparse_agree():
    rng = np.random.default_rng(4)
    instances, targets = rng.normal(size=(3, 4)), rng.normal(size=(5, 4))
    index = np.array([[0, 4], [2, -1], [1, 1]])
    dense = mw.lmba_target_differences(instances, targets, index)
    sparse = mw.lmba_target_differences(sp.csr_matrix(instances), sp.csr_matrix(targets), index)
    want = np.array([instances[i] - targets[j] if j >= 0 else np.zeros(4) for i, row in enumerate(index) for j in row])
    np.testing.assert_array_equal(dense, want)
    np.testing.assert_array_equal(sparse.toarray(), want)


def reference_gradient(instance, label, targets, theta, rows, row_labels, w, c):
    """Eqs. (16)-(17) for one instance, loops over j, p, f."""
    D = instance.shape[0]
    gradient = []
    for f in range(D):
        value = 2 * w[f] * sum((instance[f] - t[f]) ** 2 for t in targets)
        for t in targets:
            target_distance = sum(w[g] ** 2 * (instance[g] - t[g]) ** 2 for g in range(D))
            for p in range(rows.shape[0]):
                if row_labels[p] == label:
                    continue
                row_distance = sum(w[g] ** 2 * (instance[g] - rows[p, g]) ** 2 for g in range(D))
                if theta + target_distance - row_distance > 0:
                    value += c * 2 * w[f] * ((instance[f] - t[f]) ** 2 - (instance[f] - rows[p, f]) ** 2)
        gradient.append(value)
    return np.array(gradient)


def test_batch_gradient_is_the_sum_of_single_gradients():
    instances, labels, targets, theta, rows, row_labels, w = block_inputs(seed=10, m=5)
    c = 0.7
    sums, counts = block_terms(instances, labels, targets, theta, rows, row_labels, w)
    batch = gradient_of(w, instances, targets, counts, sums, c)
    singles = np.zeros_like(w)
    for i in range(instances.shape[0]):
        one = slice(i, i + 1)
        s, n_active = block_terms(instances[one], labels[one], targets[one], theta[one], rows, row_labels, w)
        single = gradient_of(w, instances[one], targets[one], n_active, s, c)
        assert_close(single, reference_gradient(instances[i], labels[i], targets[i], theta[i], rows, row_labels, w, c))
        singles += single
    assert_close(batch, singles)


# ----------------------------------------------------------------------------------------------
# Simba vs the reference
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("num_classes", [2, 3])
def test_simba_single_instance_matches_reference(num_classes):
    X, y = continuous_data(num_classes)
    n = X.shape[0]
    final, raw = simba.simba_in_memory(X, y, seed=2)
    want_final, want_raw = reference_simba(X, y, mw.instance_order(n, n, 1, 2))
    assert_close(raw, want_raw)
    assert_close(final, want_final)


def test_simba_batches_sum_the_deltas_at_fixed_w():
    X, y = continuous_data(3)
    final, raw = simba.simba_in_memory(X, y, iterations=36, batch_size=4, seed=6,  # 36 instances = 9 steps
                                       batch_rule="sum")
    order = mw.instance_order(X.shape[0], 9, 4, 6)
    want_final, want_raw = reference_simba(X, y, order)
    assert_close(raw, want_raw)
    assert_close(final, want_final)


@pytest.mark.parametrize("batch,schedule", [(1, "decay"), (4, "constant"), (5, "decay")])
def test_simba_replay_passes_and_averaging_match_the_reference(batch, schedule):
    """Rule "replay" (search at the batch's first w, then each Delta with the current w), two
    passes, a step schedule, and the ranking read from the mean of the iterates."""
    X, y = continuous_data(3)
    n = X.shape[0]
    steps = mw.number_of_steps(2 * n, batch)
    order = mw.instance_order(n, steps, batch, 8)
    betas = [0.5 / math.sqrt(t + 1) if schedule == "decay" else 0.5 for t in range(steps * batch)]
    iterates = reference_simba_replay(X, y, order, betas)
    final, raw = simba.simba_in_memory(X, y, batch_size=batch, seed=8, schedule=schedule, step_size=0.5, passes=2)
    assert_close(raw, iterates[-1])
    final, raw = simba.simba_in_memory(X, y, batch_size=batch, seed=8, schedule=schedule, step_size=0.5, passes=2,
                                       averaging="iterates")
    assert_close(raw, iterates.mean(axis=0))
    assert_close(final, iterates.mean(axis=0) ** 2 / np.max(iterates.mean(axis=0) ** 2))


@pytest.mark.parametrize("batch,rule", [(1, "replay"), (4, "replay"), (4, "sum")])
def test_lmba_passes_and_iterate_averaging_match_the_reference(batch, rule):
    """Two passes (a new permutation per pass, the decaying step running on over both) and the
    ranking read from the mean of every iterate (after each instance's step; rule "sum": after
    each summed step)."""
    X, y = grid_data(3)
    n = X.shape[0]
    steps = mw.number_of_steps(2 * n, batch)
    ranking, raw = mw.lmba_in_memory(X, y, k=3, batch_size=batch, batch_rule=rule, seed=9, schedule="decay",
                                     step_size=0.5, passes=2, averaging="iterates")
    _, last = mw.lmba_in_memory(X, y, k=3, batch_size=batch, batch_rule=rule, seed=9, schedule="decay",
                                step_size=0.5, iterations=steps * batch)
    if rule == "replay":
        iterates = []
        order = mw.instance_order(n, steps, batch, 9).reshape(-1, 1)
        betas = [0.5 / math.sqrt(t + 1) for t in range(order.shape[0])]
        expected_last = reference_lmba(X, y, 3, 1.0, order, betas, "none", replay_batch=batch, iterates=iterates)
        assert_close(last, expected_last)
        expected = np.mean(np.array(iterates), axis=0)
    else:  # the summed rule's iterates are the last w of runs that stop after each step
        expected = np.mean([mw.lmba_in_memory(X, y, k=3, batch_size=batch, batch_rule=rule, seed=9, schedule="decay",
                                              step_size=0.5, iterations=batch * (t + 1))[1] for t in range(steps)],
                           axis=0)
    assert_close(raw, expected)
    assert_close(ranking, np.abs(expected) / np.max(np.abs(expected)))
    assert np.max(np.abs(raw - last)) > 1e-3  # averaging changes the weights


def test_margin_run_settings_are_checked_and_described():
    run = MarginRun(schedule="decay", passes=3, batch_size=8, averaging="iterates")
    assert run.picked(50) == 150 and run.steps(50) == 19
    assert run.describe(50) == {"schedule": "decay", "step_size": 1.0, "instances_picked": 152, "pool_passes": 3.04,
                                "batch_size": 8, "batch_rule": "replay", "averaging": "iterates", "steps": 19}
    assert MarginRun(iterations=10, passes=3).picked(50) == 10
    per_pass = MarginRun(batch_size=None, batches_per_pass=16, passes=3)   # Simba's default: 16 jobs per pass
    assert (per_pass.batch(171), per_pass.steps(171), per_pass.batch(5)) == (11, 47, 1)
    _, raw = simba.simba_in_memory(*continuous_data(2), batch_size=None, seed=3)
    np.testing.assert_array_equal(raw, simba.simba_in_memory(*continuous_data(2), batch_size=2, seed=3)[1])
    for bad, match in [(dict(passes=0), "'passes' parameter of MarginRun must be an int in the range \\[1"),
                       (dict(averaging="tail"), "'averaging' parameter of MarginRun must be a str among"),
                       (dict(batch_rule="mean"), "'batch_rule'"), (dict(step_size=-1.0), "'step_size'"),
                       (dict(batch_size=True), "'batch_size'"), (dict(batches_per_pass=0), "'batches_per_pass'")]:
        with pytest.raises(ValueError, match=match):
            MarginRun(**bad)
    average = IterateAverage(np.ones(2))
    np.testing.assert_array_equal(average.mean(), np.ones(2))
    average.add([1.0, 3.0])
    average.add([3.0, 5.0])
    np.testing.assert_array_equal(average.mean(), [2.0, 4.0])


def test_iterations_count_picked_instances_whatever_the_batch():
    assert [mw.number_of_steps(12, b) for b in (1, 4, 5, 12, 20)] == [12, 3, 3, 1, 1]
    assert mw.number_of_steps(0, 4) == 0


def test_simba_delta_zero_distance_contributes_zero():
    x = np.array([[1.0, 2.0, 3.0]])
    miss = np.array([[2.0, 2.0, 5.0]])
    w = np.array([1.0, 0.5, 2.0])
    delta = simba.simba_delta(w, x, x.copy(), miss)
    distance = math.sqrt(1.0 + 0.0 + 4.0 * 4.0)
    assert_close(delta, 0.5 * np.array([1.0, 0.0, 4.0]) / distance * w)


# ----------------------------------------------------------------------------------------------
# Small pieces
# ----------------------------------------------------------------------------------------------


def test_small_pieces():
    assert_close(mw.lmba_theta([1.0, 4.0], [3.0, 1.5]), [2.0, 2.5])
    w = np.array([0.3, -0.6, 1.2])
    np.testing.assert_array_equal(mw.lmba_step(w, np.zeros(3), 1.0), w)
    assert_close(mw.lmba_step(w, np.array([3.0, 0.0, 4.0]), 0.5), w - 0.5 * np.array([0.6, 0.0, 0.8]))
    assert_close(mw.lmba_step(w, np.array([3.0, 0.0, 4.0]), 0.5, "clip"), [0.0, 0.0, 0.8])
    assert_close(mw.lmba_ranking_weights(w), [0.25, 0.5, 1.0])
    np.testing.assert_array_equal(mw.lmba_ranking_weights(np.zeros(3)), np.zeros(3))
    assert_close(simba.simba_final_weights(w), np.array([0.09, 0.36, 1.44]) / 1.44)
    np.testing.assert_array_equal(simba.simba_final_weights(np.zeros(2)), np.zeros(2))
    assert_close(mw.step_sizes("constant", 3, 0.5), [0.5, 0.5, 0.5])
    assert_close(mw.step_sizes("decay", 3, 2.0), [2.0, 2.0 / math.sqrt(2), 2.0 / math.sqrt(3)])


def test_instance_order_is_seeded_and_cycles_permutations():
    order = mw.instance_order(7, 5, 3, seed=12)
    assert order.shape == (5, 3) and order.dtype == np.int64
    np.testing.assert_array_equal(order, mw.instance_order(7, 5, 3, seed=12))
    stream = order.ravel()
    np.testing.assert_array_equal(np.sort(stream[:7]), np.arange(7))
    np.testing.assert_array_equal(np.sort(stream[7:14]), np.arange(7))
    assert not np.array_equal(order, mw.instance_order(7, 5, 3, seed=13))
    assert mw.instance_order(7, 0, 1, seed=0).shape == (0, 1)


# ----------------------------------------------------------------------------------------------
# Iris (Table 1: Lmba and Simba rank petal length and width, features {3, 4} 1-based, first)
# ----------------------------------------------------------------------------------------------


def _top_two(weights):
    return set(np.argsort(-weights, kind="stable")[:2].tolist())


# The paper's settings (k = 3, c = 1, beta = 1, I = n) on raw iris, seed 0: ranking 4, 3, 1, 2
# (1-based). It depends on the instance order: seeds 0-4 give {4,3} first for 0, 1 and 3 only.
def test_iris_lmba_ranks_petal_features_first():
    X, y = load_iris(return_X_y=True)
    ranking, _ = mw.lmba_in_memory(X, y, k=3, c=1.0, iterations=X.shape[0], batch_size=1)
    assert _top_two(ranking) == {2, 3}, ranking


@pytest.mark.xfail(strict=True, reason="Simba on raw iris (I = n, seed 0) ranks 3, 1, 4, 2 (1-based; weights "
                   "1, 1.7e-4, 6.6e-8, 2.2e-11): petal width is third, not in the top two as Table 1 says")
def test_iris_simba_ranks_petal_features_first():
    X, y = load_iris(return_X_y=True)
    final, _ = simba.simba_in_memory(X, y, iterations=X.shape[0], batch_size=1)
    assert _top_two(final) == {2, 3}, final


# ----------------------------------------------------------------------------------------------
# Bad input
# ----------------------------------------------------------------------------------------------


def test_bad_input_is_refused():
    X, y = grid_data(2, n=10)
    with pytest.raises(ValueError, match="'projection'"):
        mw.lmba_step(np.ones(2), np.ones(2), 1.0, projection="project")
    with pytest.raises(ValueError, match="'schedule'"):
        mw.step_sizes("linear", 3)
    with pytest.raises(ValueError, match="'projection'"):
        mw.lmba_in_memory(X, y, projection="l2")
    with pytest.raises(ValueError, match="'schedule'"):
        mw.lmba_in_memory(X, y, schedule="exp")
    lonely = y.copy()
    lonely[0] = 7
    with pytest.raises(ValueError, match="single row"):
        mw.lmba_in_memory(X, lonely)
    with pytest.raises(ValueError, match="single row"):
        simba.simba_in_memory(X, lonely)
    with pytest.raises(ValueError, match="'k'"):
        mw.lmba_in_memory(X, y, k=0)
