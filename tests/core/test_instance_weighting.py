"""Margin-based instance weighting (Han & Yu 2010, eqs. 6-7) vs a reference written from the paper.

The reference loops over instances, rows and features literally (eq. 6: all misses minus all
hits, the instance itself excluded; the outlying degree: the mean Euclidean distance to the other
n - 1 margin vectors; eq. 7 scaled to sum to n) and shares no code with sparkfs.
Closeness: ``max |got - ref| <= 1e-9 * max |ref|``.
"""

import math

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.core import instance_weighting as iw

REL_TOL = 1e-9


def assert_close(got, ref):
    got, ref = np.asarray(got, dtype=float), np.asarray(ref, dtype=float)
    assert got.shape == ref.shape
    scale = max(float(np.max(np.abs(ref), initial=0.0)), 1e-300)
    assert float(np.max(np.abs(got - ref), initial=0.0)) <= REL_TOL * scale, (got, ref)


def reference_margin_vectors(X, y):
    n, d = len(X), len(X[0])
    margins = [[0.0] * d for _ in range(n)]
    for q in range(n):
        for r in range(n):
            if r == q:
                continue
            sign = 1.0 if y[r] != y[q] else -1.0          # miss: +, hit: -
            for f in range(d):
                margins[q][f] += sign * abs(X[q][f] - X[r][f])
    return np.array(margins)


def reference_weights(margins):
    n = len(margins)
    degree = []
    for q in range(n):
        total = 0.0
        for r in range(n):
            if r != q:
                total += math.sqrt(sum((a - b) ** 2 for a, b in zip(margins[q], margins[r])))
        degree.append(total / (n - 1))
    inverse_sum = sum(1.0 / value for value in degree)
    return np.array([n * (1.0 / value) / inverse_sum for value in degree]), np.array(degree)


def small_data(seed=0, n=12, d=6, classes=3, density=0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < density)
    y = np.arange(n) % classes
    return X, y


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("classes", [2, 3])
def test_margin_vectors_and_weights_match_the_reference(sparse, classes):
    X, y = small_data(seed=classes, classes=classes)
    data = sp.csr_matrix(X) if sparse else X
    result = iw.margin_instance_weights(data, y)
    margins = reference_margin_vectors(X.tolist(), y.tolist())
    weights, degree = reference_weights(margins.tolist())
    assert_close(result.margin_vectors, margins)
    assert_close(result.outlying_degree, degree)
    assert_close(result.weights, weights)
    assert result.weights.sum() == pytest.approx(X.shape[0], rel=1e-12)


def test_string_labels_and_duplicate_rows():
    X, _ = small_data(seed=5, n=8, d=4)
    X[3] = X[1]                                        # a duplicate is a hit like any other row
    y = np.array(["a", "b", "a", "a", "b", "b", "a", "b"])
    result = iw.margin_instance_weights(X, y)
    margins = reference_margin_vectors(X.tolist(), y.tolist())
    assert_close(result.margin_vectors, margins)
    assert_close(result.weights, reference_weights(margins.tolist())[0])


@pytest.mark.parametrize("sparse", [False, True])
def test_block_terms_add_over_one_or_three_row_blocks(sparse):
    X, y = small_data(seed=7, n=13, d=5)
    data = sp.csr_matrix(X) if sparse else X
    whole = iw.margin_vector_block_terms(data, y, data, y)
    bounds = [(0, 2), (2, 9), (9, 13)]
    parts = sum(iw.margin_vector_block_terms(data, y, data[a:b], y[a:b]) for a, b in bounds)
    reference = reference_margin_vectors(X.tolist(), y.tolist())
    assert_close(whole, reference)
    assert_close(parts, reference)
    # A subset of queries against the blocks: the same rows of the margin vectors.
    queries = np.array([4, 0, 11])
    some = sum(iw.margin_vector_block_terms(data[queries], y[queries], data[a:b], y[a:b]) for a, b in bounds)
    assert_close(some, reference[queries])
    # Distances between margin vectors, per block, then finished on the driver.
    whole_sums = iw.outlying_distance_block_terms(reference, reference)
    part_sums = sum(iw.outlying_distance_block_terms(reference, reference[a:b]) for a, b in bounds)
    weights, degree = reference_weights(reference.tolist())
    for sums in (whole_sums, part_sums):
        finished = iw.outlying_degrees(sums, X.shape[0])
        assert_close(finished, degree)
        assert_close(iw.instance_weights_from_outlying_degrees(finished), weights)


def test_dense_queries_against_sparse_rows():
    X, y = small_data(seed=9, n=10, d=7)
    mixed = sum(iw.margin_vector_block_terms(X, y, sp.csr_matrix(X[a:b]), y[a:b]) for a, b in [(0, 4), (4, 10)])
    assert_close(mixed, reference_margin_vectors(X.tolist(), y.tolist()))


def test_in_memory_driver_does_not_depend_on_block_size():
    X, y = small_data(seed=3, n=11, d=4)
    one = iw.margin_instance_weights(X, y, block_size=11)
    three = iw.margin_instance_weights(X, y, block_size=4)
    assert_close(three.margin_vectors, one.margin_vectors)
    assert_close(three.weights, one.weights)


def test_self_distance_is_exactly_zero():
    margins = np.random.default_rng(1).normal(size=(5, 3)) * 1e6
    sums = iw.outlying_distance_block_terms(margins[:1], margins[:1])
    assert sums[0] == 0.0


def test_weights_are_inversely_proportional_to_the_outlying_degree():
    degree = np.array([1.0, 2.0, 4.0, 0.5])
    weights = iw.instance_weights_from_outlying_degrees(degree)
    assert weights.sum() == pytest.approx(4.0)
    assert_close(weights * degree, np.full(4, weights[0] * degree[0]))


def test_equal_margin_vectors_give_unit_weights():
    X = np.ones((6, 3))                                  # identical rows: every margin vector is 0
    y = np.array([0, 1, 0, 1, 0, 1])
    result = iw.margin_instance_weights(X, y)
    assert np.all(result.margin_vectors == 0)
    assert np.all(result.outlying_degree == 0)
    assert np.array_equal(result.weights, np.ones(6))


@pytest.mark.parametrize("degree", [[0.0, 1.0], [1.0, -1.0], [1.0, np.nan], [np.inf, 1.0], []])
def test_invalid_outlying_degrees_are_refused(degree):
    with pytest.raises(ValueError):
        iw.instance_weights_from_outlying_degrees(degree)


def test_invalid_inputs_are_refused():
    X, y = small_data()
    with pytest.raises(ValueError, match="two classes"):
        iw.margin_instance_weights(X, np.zeros(X.shape[0]))
    with pytest.raises(ValueError, match="NaN"):
        iw.margin_instance_weights(np.where(X == X[0, 0], np.nan, X), y)
    with pytest.raises(ValueError, match="block_size"):
        iw.margin_instance_weights(X, y, block_size=0)
    with pytest.raises(ValueError, match="num_instances"):
        iw.outlying_degrees([1.0], 1)
    with pytest.raises(ValueError, match="shape"):
        iw.margin_instance_weights(X, y[:-1])


def test_group_weights():
    assert np.array_equal(iw.margin_vector_group_weights(2), np.array([[-1.0, 1.0], [1.0, -1.0]]))
