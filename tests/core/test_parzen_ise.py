"""Parzen-ISE and fuzzy c-means vs references written from the equations (no code shared).

The references evaluate the densities p and q pointwise and integrate (p - q)^2 on grids, sum the
three pair sums (p-p, p-q, q-q) literally over i, j, c, c', k, and run Bezdek's fuzzy c-means
as a plain loop. The paper checks (iris, clustered-vs-noise) run the in-memory driver.
"""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from sparkfs.core.fuzzy_cmeans import fcm_block_terms, fcm_in_memory, fcm_memberships, initial_centres
from sparkfs.core.parzen_ise import (
    group_moment_terms,
    group_variances,
    hard_memberships,
    integrated_squared_error,
    kernel_log_peak,
    landmark_positions,
    overlap_block_terms,
    parzen_ise_in_memory,
    project_onto_simplex,
)
from sparkfs.core.sampling import sample_keys
from sparkfs.core.selection import rank_features


def normal_density(difference, variance):
    return np.exp(-0.5 * difference ** 2 / variance) / np.sqrt(2.0 * np.pi * variance)


def toy_groups(rng, num_rows, num_features, num_groups=2, soft=True):
    points = rng.uniform(-2.0, 2.0, (num_rows, num_features))
    if soft:
        memberships = rng.uniform(0.05, 1.0, (num_rows, num_groups))
        memberships /= memberships.sum(axis=1, keepdims=True)
    else:
        memberships = np.eye(num_groups)[rng.integers(0, num_groups, num_rows)]
    variances = rng.uniform(0.3, 1.2, (num_groups, num_features))
    return points, memberships, variances


def reference_density(grid, points, memberships, variances, h, w):
    """(1/N) sum_i sum_c u_ic prod_k N(z_k; w_k x_ik, h^2 w_k^2 s_ck^2) at every row z of grid."""
    total = np.zeros(grid.shape[0])
    for i in range(points.shape[0]):
        for c in range(variances.shape[0]):
            component = np.ones(grid.shape[0])
            for k in range(points.shape[1]):
                component *= normal_density(grid[:, k] - w[k] * points[i, k], h * h * w[k] ** 2 * variances[c, k])
            total += memberships[i, c] * component
    return total / points.shape[0]


def reference_overlap(points, memberships, variances, h, w_left, w_right):
    """int f_left f_right: the literal sum over i, j, c, c' of prod_k N(w_l x_ik; w_r x_jk, h^2 (...))."""
    num_rows, num_features = points.shape
    total = 0.0
    for i in range(num_rows):
        for j in range(num_rows):
            for c in range(variances.shape[0]):
                for c2 in range(variances.shape[0]):
                    product = 1.0
                    for k in range(num_features):
                        variance = h * h * (w_left[k] ** 2 * variances[c, k] + w_right[k] ** 2 * variances[c2, k])
                        product *= normal_density(w_left[k] * points[i, k] - w_right[k] * points[j, k], variance)
                    total += memberships[i, c] * memberships[j, c2] * product
    return total / num_rows ** 2


def reference_ise(points, memberships, variances, h, w):
    ones = np.ones(points.shape[1])
    return (reference_overlap(points, memberships, variances, h, ones, ones)
            - 2.0 * reference_overlap(points, memberships, variances, h, ones, w)
            + reference_overlap(points, memberships, variances, h, w, w))


def implementation_ise(points, memberships, variances, h, w, free=None):
    num_rows, num_features = points.shape
    free = np.arange(num_features) if free is None else np.asarray(free)
    ones = np.ones(num_features)
    self_scale = kernel_log_peak(variances, ones, h, free)
    self_terms = overlap_block_terms(points, memberships, points, memberships, variances, ones, h=h,
                                     free_features=free, log_scale=self_scale, gradient=False)
    cross_scale = kernel_log_peak(variances, w, h, free)
    cross_terms = overlap_block_terms(points, memberships, points, memberships, variances, w, h=h,
                                      free_features=free, log_scale=cross_scale)
    return integrated_squared_error(self_terms.query_sums.sum(), self_scale, cross_terms.query_sums.sum(),
                                    cross_terms.weight_gradient, cross_scale, np.asarray(w)[free],
                                    num_rows=num_rows, num_queries=num_rows)


def trapezoid_1d(values, grid):
    return float(np.sum((values[1:] + values[:-1]) * np.diff(grid)) / 2.0)


# Closed form vs quadrature ------------------------------------------------------------------------


def test_closed_form_ise_equals_quadrature_in_1d():
    rng = np.random.default_rng(1)
    points, memberships, variances = toy_groups(rng, 6, 1)
    h, w = 0.7, np.array([0.6])
    grid = np.linspace(-9.0, 9.0, 3601)
    difference = (reference_density(grid[:, None], points, memberships, variances, h, np.ones(1))
                  - reference_density(grid[:, None], points, memberships, variances, h, w))
    quadrature = trapezoid_1d(difference ** 2, grid)
    assert implementation_ise(points, memberships, variances, h, w).ise == pytest.approx(quadrature, rel=1e-9)


def test_closed_form_ise_equals_quadrature_in_2d():
    rng = np.random.default_rng(2)
    points, memberships, variances = toy_groups(rng, 5, 2)
    h, w = 0.7, np.array([0.7, 0.5])
    axis = np.linspace(-9.0, 9.0, 401)
    grid = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2)
    difference = (reference_density(grid, points, memberships, variances, h, np.ones(2))
                  - reference_density(grid, points, memberships, variances, h, w)).reshape(axis.size, axis.size)
    quadrature = trapezoid_1d(np.array([trapezoid_1d(row, axis) for row in difference ** 2]), axis)
    assert implementation_ise(points, memberships, variances, h, w).ise == pytest.approx(quadrature, rel=1e-8)


def test_held_out_feature_is_integrated_out_of_both_densities():
    """With feature 1 held out, the ISE is that of the marginals on feature 0 (1-D quadrature)."""
    rng = np.random.default_rng(3)
    points, memberships, variances = toy_groups(rng, 6, 2)
    h, w = 0.8, np.array([0.55, 0.0])
    grid = np.linspace(-9.0, 9.0, 3601)
    column, column_variances = points[:, :1], variances[:, :1]
    difference = (reference_density(grid[:, None], column, memberships, column_variances, h, np.ones(1))
                  - reference_density(grid[:, None], column, memberships, column_variances, h, w[:1]))
    value = implementation_ise(points, memberships, variances, h, w, free=[0])
    assert value.ise == pytest.approx(trapezoid_1d(difference ** 2, grid), rel=1e-9)


@pytest.mark.parametrize("soft", [True, False])
def test_ise_equals_the_three_literal_pair_sums(soft):
    """Also checks int q^2 = int p^2 / prod w, which the implementation uses instead of a pair sum."""
    rng = np.random.default_rng(4)
    points, memberships, variances = toy_groups(rng, 9, 3, num_groups=3, soft=soft)
    h, w = 0.9, np.array([0.5, 0.3, 0.2])
    reference = reference_ise(points, memberships, variances, h, w)
    assert implementation_ise(points, memberships, variances, h, w).ise == pytest.approx(reference, rel=1e-11)


@pytest.mark.parametrize("soft", [True, False])
def test_analytic_gradient_equals_central_differences(soft):
    rng = np.random.default_rng(5)
    points, memberships, variances = toy_groups(rng, 8, 3, soft=soft)
    h, w = 0.8, np.array([0.45, 0.35, 0.2])
    value = implementation_ise(points, memberships, variances, h, w)
    step = 1e-5
    differences = np.array([
        (reference_ise(points, memberships, variances, h, w + step * unit)
         - reference_ise(points, memberships, variances, h, w - step * unit)) / (2 * step)
        for unit in np.eye(3)
    ])
    np.testing.assert_allclose(value.gradient, differences, rtol=1e-6)
    log_differences = np.array([
        (np.log(reference_ise(points, memberships, variances, h, w + step * unit))
         - np.log(reference_ise(points, memberships, variances, h, w - step * unit))) / (2 * step)
        for unit in np.eye(3)
    ])
    np.testing.assert_allclose(value.log_gradient, log_differences, rtol=1e-6)


# Block terms ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("soft", [True, False])
def test_block_terms_add_over_row_splits_and_concatenate_over_query_batches(soft):
    rng = np.random.default_rng(6)
    points, memberships, variances = toy_groups(rng, 40, 4, num_groups=3, soft=soft)
    w, free = np.array([0.1, 0.4, 0.0, 0.5]), np.array([0, 1, 3])
    options = dict(h=0.6, free_features=free, log_scale=kernel_log_peak(variances, w, 0.6, free))
    whole = overlap_block_terms(points, memberships, points, memberships, variances, w, **options)
    query_sums, gradient = np.zeros(40), np.zeros(3)
    for queries in (slice(0, 25), slice(25, 40)):
        for rows in (slice(0, 7), slice(7, 23), slice(23, 40)):
            part = overlap_block_terms(points[queries], memberships[queries], points[rows], memberships[rows],
                                       variances, w, **options)
            query_sums[queries] += part.query_sums
            gradient += part.weight_gradient
    np.testing.assert_allclose(query_sums, whole.query_sums, rtol=1e-12, atol=0)
    np.testing.assert_allclose(gradient, whole.weight_gradient, rtol=1e-12,
                               atol=1e-12 * np.abs(whole.weight_gradient).max())


def test_log_scale_multiplies_every_sum_by_its_exponential():
    rng = np.random.default_rng(7)
    points, memberships, variances = toy_groups(rng, 10, 2)
    w = np.array([0.3, 0.7])
    plain = overlap_block_terms(points, memberships, points, memberships, variances, w, h=0.5)
    scaled = overlap_block_terms(points, memberships, points, memberships, variances, w, h=0.5, log_scale=3.0)
    np.testing.assert_allclose(scaled.query_sums, plain.query_sums * np.exp(-3.0), rtol=1e-13)
    np.testing.assert_allclose(scaled.weight_gradient, plain.weight_gradient * np.exp(-3.0), rtol=1e-12)


def test_many_features_do_not_overflow():
    """d = 400: Q / P = 1 / prod w ~ 400^400 and P ~ 1e-3000 in units of 1e3; the criterion stays
    finite in logs, and rescaling every feature by a divides the ISE by a^d (log ISE - d log a)."""
    rng = np.random.default_rng(8)
    points, memberships, variances = toy_groups(rng, 12, 400, soft=False)
    w = rng.dirichlet(np.full(400, 50.0))
    value = implementation_ise(points, memberships, variances, 0.5, w)
    rescaled = implementation_ise(points * 1e3, memberships, variances * 1e6, 0.5, w)
    assert np.isfinite(value.log_ise) and np.all(np.isfinite(value.log_gradient)) and value.log_ise > 2000
    assert rescaled.log_ise == pytest.approx(value.log_ise - 400 * np.log(1e3), rel=1e-12)
    np.testing.assert_allclose(rescaled.log_gradient, value.log_gradient, rtol=1e-10)


# Group variances -------------------------------------------------------------------------------------


def test_group_variances_hard_soft_floor_and_additivity():
    rng = np.random.default_rng(9)
    points = rng.normal(size=(30, 3)) * [1.0, 5.0, 0.0]  # feature 2 is constant
    points[:, 1] += 100.0
    soft = rng.uniform(0.1, 1.0, (30, 2))
    soft /= soft.sum(axis=1, keepdims=True)
    hard = hard_memberships(soft)
    for memberships in (hard, soft):
        parts = [group_moment_terms(points[rows], memberships[rows], np.full((2, 3), 99.0))
                 for rows in (slice(0, 11), slice(11, 30))]
        moments = type(parts[0])(*(a + b for a, b in zip(*parts)))
        variances = group_variances(moments, points.var(axis=0), floor=1e-3)
        for c in range(2):
            weights = memberships[:, c]
            mean = weights @ points / weights.sum()
            expected = weights @ (points - mean) ** 2 / weights.sum()
            np.testing.assert_allclose(variances[c, :2], expected[:2], rtol=1e-9)
            assert variances[c, 2] == 1e-3  # a constant feature: the floor times 1
    for c in range(2):  # hard memberships: the ordinary within-group variance
        members = points[hard[:, c] == 1]
        exact = group_variances(group_moment_terms(members, np.ones((len(members), 1))), points.var(axis=0))
        np.testing.assert_allclose(exact[0, :2], members.var(axis=0)[:2], rtol=1e-9)


def test_hard_memberships_break_ties_to_the_lower_group():
    np.testing.assert_array_equal(hard_memberships([[0.5, 0.5], [0.2, 0.8]]), [[1, 0], [0, 1]])


# Simplex projection ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_simplex_projection_is_the_euclidean_projection(seed):
    rng = np.random.default_rng(seed)
    v = rng.normal(scale=2.0, size=7)
    projected = project_onto_simplex(v)
    assert np.all(projected >= 0) and projected.sum() == pytest.approx(1.0, abs=1e-14)
    # Projection onto a convex set: (v - p) . (s - p) <= 0 for every s in the set; the vertices suffice.
    residual = v - projected
    assert np.max(residual - residual @ projected) <= 1e-12
    np.testing.assert_allclose(project_onto_simplex(projected), projected, atol=1e-15)
    np.testing.assert_allclose(project_onto_simplex(v + 3.7), projected, atol=1e-13)
    for sample in rng.dirichlet(np.ones(7), size=200):
        assert np.linalg.norm(projected - v) <= np.linalg.norm(sample - v) + 1e-12


def test_simplex_projection_of_simple_points():
    np.testing.assert_allclose(project_onto_simplex([2.0, 0.0, 0.0]), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(project_onto_simplex([0.0, 0.0, 0.0]), [1 / 3] * 3)
    np.testing.assert_allclose(project_onto_simplex([0.5, 0.5, -1.0]), [0.5, 0.5, 0.0])


# Fuzzy c-means -----------------------------------------------------------------------------------------


def reference_fcm(X, centres, m, tol, max_iter):
    """Bezdek's alternation, one row and one cluster at a time."""
    num_rows, num_clusters = X.shape[0], centres.shape[0]
    scale = np.where(X.std(axis=0) > 0, X.std(axis=0), 1.0)
    for _ in range(max_iter):
        memberships = np.zeros((num_rows, num_clusters))
        for i in range(num_rows):
            distances = [float(np.sum((X[i] - centres[c]) ** 2)) for c in range(num_clusters)]
            for c in range(num_clusters):
                memberships[i, c] = 1.0 / sum((distances[c] / distances[other]) ** (1.0 / (m - 1.0))
                                              for other in range(num_clusters))
        new = np.array([(memberships[:, c] ** m) @ X / np.sum(memberships[:, c] ** m) for c in range(num_clusters)])
        moved = np.max(np.abs(new - centres) / scale)
        centres = new
        if moved <= tol:
            break
    return centres


@pytest.mark.parametrize("m", [2.0, 1.5, 3.0])
def test_fcm_equals_the_plain_loop_reference(m):
    X, _ = load_iris(return_X_y=True)
    start = X[[0, 60, 120]] + 0.01  # off the rows: the reference's formula has no zero-distance case
    centres, memberships, info = fcm_in_memory(X, 3, m=m, tol=1e-8, max_iter=500, initial=start)
    expected = reference_fcm(X, start, m, 1e-8, 500)
    assert info["converged"]
    np.testing.assert_allclose(centres, expected, rtol=1e-10)
    np.testing.assert_allclose(memberships.sum(axis=1), 1.0, rtol=1e-14)
    assert np.all(np.diff(info["objective"]) <= 1e-9 * info["objective"][0])  # J_m never increases


def test_fcm_block_terms_add_over_row_splits_and_memberships_handle_a_row_on_a_centre():
    rng = np.random.default_rng(10)
    X, centres = rng.normal(size=(50, 3)), rng.normal(size=(4, 3))
    whole = fcm_block_terms(X, centres, 2.0)
    parts = [fcm_block_terms(X[rows], centres, 2.0) for rows in (slice(0, 13), slice(13, 31), slice(31, 50))]
    np.testing.assert_allclose(sum(p.weighted_sums for p in parts), whole.weighted_sums, rtol=1e-12)
    np.testing.assert_allclose(sum(p.membership_sums for p in parts), whole.membership_sums, rtol=1e-12)
    assert sum(p.objective for p in parts) == pytest.approx(whole.objective, rel=1e-12)
    on_centre = fcm_memberships(np.vstack([centres[2], centres[2]]), np.vstack([centres, centres[2]]), 2.0)
    np.testing.assert_allclose(on_centre, [[0, 0, 0.5, 0, 0.5]] * 2)


def test_fcm_start_is_seeded_distinct_and_independent_of_row_order():
    rng = np.random.default_rng(11)
    X = np.vstack([rng.normal(size=(20, 2)), np.zeros((30, 2))])  # many duplicate rows
    ids = np.arange(50)
    start = initial_centres(X, sample_keys(ids, 5), 4)
    assert len({tuple(row) for row in start}) == 4
    order = rng.permutation(50)
    np.testing.assert_array_equal(initial_centres(X[order], sample_keys(ids[order], 5), 4), start)
    with pytest.raises(ValueError, match="distinct rows"):
        initial_centres(np.zeros((5, 2)), np.arange(5), 2)
    with pytest.raises(ValueError, match="'m' parameter"):
        fcm_memberships(X, start, 1.0)


# In-memory driver ------------------------------------------------------------------------------------


def clustered_and_noise(seed, num_clustered=2, num_noise=3, num_rows=150):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, num_rows)
    levels = np.stack([rng.permutation([-3.0, 0.0, 3.0]) for _ in range(num_clustered)], axis=1)
    clustered = levels[labels] + 0.5 * rng.normal(size=(num_rows, num_clustered))
    return np.hstack([clustered, rng.normal(size=(num_rows, num_noise))]), labels


def image_reading(*args, **options):
    """The driver with the image reading (``criterion="image"``), the one these tests derive."""
    return parzen_ise_in_memory(*args, criterion="image", **options)


def test_driver_reaches_a_stationary_point_on_the_simplex():
    X, y = load_iris(return_X_y=True)
    weights, info = image_reading(X, y, fixed_feature=1)
    run = info["runs"][0]
    assert weights[1] == 0 and weights.sum() == pytest.approx(1.0) and np.all(np.delete(weights, 1) > 0)
    assert info["ranking"][-1] == 1 and run["stop"] == "converged"
    assert np.all(np.diff(run["log_ise"]) <= 0)
    gradient = run["value"].log_gradient  # interior optimum on the simplex: equal partial derivatives
    assert np.ptp(gradient) <= 1e-4 * np.abs(gradient).max()


def test_auto_holds_out_the_least_important_feature_of_a_first_run():
    X, y = load_iris(return_X_y=True)
    weights, info = image_reading(X, y)
    first, second = info["runs"]
    assert first["fixed_feature"] == 0
    free_first = np.delete(np.arange(4), 0)
    assert second["fixed_feature"] == free_first[np.argmin(first["weights"][free_first])]
    assert info["fixed_feature"] == second["fixed_feature"] and weights[second["fixed_feature"]] == 0


def test_weights_do_not_depend_on_feature_units_or_origin():
    X, y = clustered_and_noise(0)
    weights, _ = image_reading(X, y, fixed_feature=4)
    moved, _ = image_reading(X * [3.0, 0.01, 7.0, 1.0, 250.0] + [5.0, -2.0, 0.0, 1e3, 4.0], y, fixed_feature=4)
    np.testing.assert_allclose(moved, weights, rtol=1e-7)


def test_landmarks_estimate_the_same_weights_with_a_sampling_error():
    X, y = clustered_and_noise(1, num_rows=300)
    exact, _ = image_reading(X, y, fixed_feature=4)
    sampled, info = image_reading(X, y, fixed_feature=4, landmarks=120, seed=3)
    error = info["runs"][0]["ise_relative_standard_error"]
    assert info["num_queries"] == 120 and 0 < error < 0.1
    np.testing.assert_array_equal(info["ranking"], rank_features(exact))
    np.testing.assert_allclose(sampled, exact, atol=0.25 * np.ptp(np.delete(exact, 4)))
    again, _ = image_reading(X, y, fixed_feature=4, landmarks=120, seed=3)
    np.testing.assert_array_equal(again, sampled)
    all_rows, _ = image_reading(X, y, fixed_feature=4, landmarks=300)
    np.testing.assert_array_equal(all_rows, exact)
    assert np.unique(landmark_positions(X, y, 120, 3)).size == 120


def test_constant_feature_and_invalid_input():
    X, y = clustered_and_noise(2)
    X = np.hstack([X, np.full((150, 1), 4.0)])
    weights, _ = image_reading(X, y, fixed_feature=0)
    assert np.all(np.isfinite(weights)) and weights.sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="The 'fixed_feature' parameter of parzen_ise_in_memory"):
        image_reading(X, y, fixed_feature=6)
    with pytest.raises(ValueError, match="The 'memberships' parameter"):
        image_reading(X, memberships="fuzzy")
    with pytest.raises(ValueError, match="finite X"):
        image_reading(np.array([[1.0, np.nan], [2.0, 3.0]]))


def test_one_free_feature_gets_weight_one_without_a_pass():
    X, y = clustered_and_noise(3, num_clustered=1, num_noise=1)
    np.testing.assert_array_equal(image_reading(X[:, :1], y)[0], [1.0])
    weights, info = image_reading(X, y, fixed_feature=0)
    np.testing.assert_array_equal(weights, [0.0, 1.0])
    assert info["runs"][0]["stop"] == "single free feature" and info["runs"][0]["evaluations"] == 0


def test_the_weights_tend_to_all_equal_as_the_dimension_grows():
    """The paper's remark: int q^2 = int p^2 / prod w dominates (Q / P = d^d at equal weights), so
    with 2 clustered and 10 noise features the free weights are equal up to ~1e-9 relative."""
    X, y = clustered_and_noise(0, num_noise=10)
    weights, info = image_reading(X, y, fixed_feature=11)
    free = weights[:11]
    assert np.ptp(free) <= 1e-9 * free.mean()


# Paper checks ---------------------------------------------------------------------------------------


@pytest.mark.xfail(strict=True, reason=(
    "faithful Parzen-ISE ranks iris without labels (FCM, 3 clusters, hard groups, fixed_feature='auto') "
    "3, 2, 1, 4 (1-based; weights 0.32971, 0.33225, 0.33805, 0, feature 4 held out as the least important "
    "of a first run; the same for FCM seeds 0-4, soft memberships and the class labels). Petal width ranks "
    "last: see docs/parzen_ise.md, 'Why the paper checks fail'."))
def test_iris_without_labels_ranks_petal_length_and_width_first():
    X, _ = load_iris(return_X_y=True)
    _, info = image_reading(X, num_clusters=3, seed=0)
    assert set(info["ranking"][:2].tolist()) == {2, 3}


@pytest.mark.xfail(strict=True, reason=(
    "with 2 clustered features (levels -3, 0, 3, noise 0.5) and 3 N(0, 1) features, faithful Parzen-ISE "
    "ranks the features (0-based) 3, 4, 2, 0, 1: the clustered ones last (FCM groups or labels alike, and for "
    "data seeds 0-9); "
    "compressing a clustered feature by w ~ 1/d loses more overlap with p than compressing a unimodal one. "
    "See docs/parzen_ise.md."))
def test_clustered_features_rank_before_noise():
    X, _ = clustered_and_noise(0)
    _, info = image_reading(X, num_clusters=3, seed=0)
    assert set(info["ranking"][:2].tolist()) == {0, 1}
