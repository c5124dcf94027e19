"""ReliefF on a continuous endpoint (sparkfs.core.relief note 9) in the scikit-learn front, against a
loop reference written from the note and against scikit-rebate's ``ReliefF(label_type="continuous")``.

One difference, shown here: when a query has fewer than k hits among the other rows, scikit-rebate
counts the query itself as one more hit (its own distance is sorted last and its target is within the
bound of itself), which adds a zero difference to the hits' mean. sparkfs averages over the hits that
exist, as with classes. With that self-hit added, the loop reference equals scikit-rebate to rounding.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_friedman1

from sparkfs.errors import InvalidInputError
from sparkfs.sklearn import MReliefSelector, ReliefFSelector, ReliefSelector

X, Y = make_friedman1(n_samples=60, n_features=6, random_state=0)


def reference(X, y, k, count_self_hit=False, weights=None):
    """Note 9 with loops: Manhattan distances on range-scaled features, per query its k nearest hits
    (|y_q - y_r| < sd(y), ddof 1, of the targets as given) and k nearest misses among the other rows;
    with ``weights`` (note 8) each set averaged by its rows' weights and the queries' margins by
    theirs. ``count_self_hit``: scikit-rebate's extra zero-difference hit for a query short of k hits."""
    weights = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=float)
    scaled = (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    bound = np.std(y, ddof=1)
    total = np.zeros(X.shape[1])
    for q in range(len(y)):
        distances = np.abs(scaled - scaled[q]).sum(axis=1)
        order = [r for r in np.argsort(distances, kind="stable") if r != q]
        hits = [r for r in order if abs(y[q] - y[r]) < bound][:k]
        misses = [r for r in order if abs(y[q] - y[r]) >= bound][:k]
        margin = np.zeros(X.shape[1])
        for sign, rows in ((-1.0, hits), (1.0, misses)):
            mass = sum(weights[r] for r in rows)
            if sign < 0 and count_self_hit and len(rows) < k:
                mass += weights[q]
            if rows and mass > 0:
                margin += sign * sum(weights[r] * np.abs(scaled[r] - scaled[q]) for r in rows) / mass
        total += weights[q] * margin
    return total / weights.sum()


@pytest.mark.parametrize("k", [5, 10])
def test_relieff_and_relief_are_note_9(k):
    for data in (X, sp.csr_matrix(X)):
        for selector in (ReliefFSelector, ReliefSelector):
            got = selector(k=k, metric="manhattan", scaling="range", label_type="continuous").fit(data, Y).scores_
            np.testing.assert_allclose(got, reference(X, Y, k), rtol=1e-12, atol=1e-15)


def test_scikit_rebate_equals_note_9_where_every_query_has_k_hits_and_counts_itself_otherwise():
    skrebate = pytest.importorskip("skrebate")
    got = ReliefFSelector(k=5, metric="manhattan", scaling="range", label_type="continuous").fit(X, Y).scores_
    np.testing.assert_allclose(got, skrebate.ReliefF(label_type="continuous", n_neighbors=5).fit(X, Y)
                               .feature_importances_, rtol=1e-9, atol=1e-12)
    want = skrebate.ReliefF(label_type="continuous", n_neighbors=10).fit(X, Y).feature_importances_
    assert np.max(np.abs(reference(X, Y, 10) - want)) > 1e-4  # some queries have fewer than 10 hits
    np.testing.assert_allclose(reference(X, Y, 10, count_self_hit=True), want, rtol=1e-9, atol=1e-12)


def test_refusals_on_a_continuous_endpoint():
    with pytest.raises(InvalidInputError, match="y is constant"):
        ReliefFSelector(label_type="continuous").fit(X, np.full(60, 1.5))
    with pytest.raises(ValueError, match="'variant' parameter of MReliefSelector must be 'relief' or 'relieff'"):
        MReliefSelector(label_type="continuous").fit(X, Y)
