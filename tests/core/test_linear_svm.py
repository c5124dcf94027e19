"""The primal linear SVM of the Spark SVM-RFE solver (sparkfs.core.linear_svm), against the
objective written here from its definition (liblinear's, intercept penalised) and against
scikit-learn's LinearSVC, which minimises the same objective by another method."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.svm import LinearSVC

from sparkfs.core import linear_svm as ls


def _primal(X, y, weights, coef, intercept, positives, C):
    """sum_k (||w_k||^2 + b_k^2) / 2 + C sum_i s_i max(0, 1 - t_ik (w_k . x_i + b_k)), by loops."""
    total = 0.0
    for k, positive in enumerate(positives):
        total += 0.5 * (sum(v * v for v in coef[k]) + intercept[k] ** 2)
        for i in range(X.shape[0]):
            t = 1.0 if y[i] == positive else -1.0
            margin = t * (sum(X[i, j] * coef[k, j] for j in range(X.shape[1])) + intercept[k])
            total += C * weights[i] * max(0.0, 1.0 - margin)
    return total


def _data(n=50, d=4, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.argmax(X[:, :classes] + 0.5 * rng.normal(size=(n, classes)), axis=1)
    return X, y, rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("sparse", [False, True])
def test_objective_and_subgradient_match_the_definition(sparse):
    X, y, s = _data()
    positives, C = [0, 1, 2], 0.7
    rng = np.random.default_rng(1)
    coef, intercept = rng.normal(size=(3, 4)), rng.normal(size=3)
    matrix = sp.csr_matrix(X) if sparse else X
    halves = [ls.hinge_terms(matrix[rows], y[rows], s[rows], coef, intercept, positives)
              for rows in (slice(0, 20), slice(20, 50))]
    terms = {name: halves[0][name] + halves[1][name] for name in halves[0]}
    value, gradient = ls.regularised_objective(terms, coef, intercept, C, s.sum())
    assert value == pytest.approx(_primal(X, y, s, coef, intercept, positives, C) / (C * s.sum()), rel=1e-12)
    # Away from the kinks the subgradient is the gradient: central differences of the definition.
    theta = np.concatenate([coef.ravel(), intercept])
    for index in range(theta.size):
        step = np.zeros_like(theta)
        step[index] = 1e-6
        up, down = theta + step, theta - step
        numeric = (_primal(X, y, s, up[:12].reshape(3, 4), up[12:], positives, C)
                   - _primal(X, y, s, down[:12].reshape(3, 4), down[12:], positives, C)) / 2e-6 / (C * s.sum())
        assert gradient[index] == pytest.approx(numeric, rel=1e-5, abs=1e-8)


@pytest.mark.parametrize("classes, preconditioned", [(2, False), (3, False), (3, True)])
def test_lbfgs_reaches_liblinears_objective(classes, preconditioned):
    X, y, s = _data(n=80, d=5, classes=classes, seed=3)
    if preconditioned:  # spreads 100x apart; the preconditioner must not move the minimiser
        X = X * [1.0, 10.0, 0.1, 3.0, 1.0]
    positives = [1] if classes == 2 else list(range(classes))
    fit = ls.minimise_hinge_objective(lambda coef, b: ls.hinge_terms(X, y, s, coef, b, positives),
                                      len(positives), 5, C=1.0, total_weight=s.sum(), max_iter=400, tol=1e-12,
                                      feature_scale=X.std(axis=0) if preconditioned else None)
    reference = LinearSVC(C=1.0, loss="hinge", dual=True, tol=1e-8, max_iter=100_000).fit(X, y, sample_weight=s)
    ours = _primal(X, y, s, fit.coef, fit.intercept, positives, 1.0)
    theirs = _primal(X, y, s, np.atleast_2d(reference.coef_), np.atleast_1d(reference.intercept_), positives, 1.0)
    assert ours <= theirs * (1 + 2e-3)
    assert fit.objective == pytest.approx(ours / s.sum(), rel=1e-12)
    np.testing.assert_allclose(fit.coef, np.atleast_2d(reference.coef_), atol=0.05 * np.abs(reference.coef_).max())


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="must be positive"):
        ls.minimise_hinge_objective(lambda c, b: {}, 1, 2, C=0.0, total_weight=1.0)
    with pytest.raises(ValueError, match="must be positive"):
        ls.minimise_hinge_objective(lambda c, b: {}, 1, 2, C=1.0, total_weight=0.0)
