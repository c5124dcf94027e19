"""``kept_features`` / ``excluded_features`` of the scikit-learn front (the Spark selectors'
``keptFeatures`` / ``excludedFeatures``): the same rule, for every method of the front, without Spark.

The constraint changes the selection, not the scores: a method that ranks keeps the kept features and
fills the rest of the count by its own ranking, less the excluded; mRMR, JMI and CMIM start their greedy
search from the kept features (the NumPy reference of tests/selectors/test_keep_exclude.py); QFS adds
the kept to its optimum and leaves out the excluded.
"""

import numpy as np
import pytest

from sparkfs.core.selection import forced_selection, rank_features
from sparkfs.sklearn import estimator_for
from sparkfs.sklearn.registry import FRONT
from tests.selectors.test_keep_exclude import COUNT, EXCLUDE, GREEDY, KEEP, greedy_reference

FRONT_PARAMS = {"lmba": {"passes": 1, "batch_size": 48}, "simba": {"passes": 1, "batch_size": 48},
                **{method: {"discretization": "none"} for method in GREEDY}}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.integers(0, 4, size=(48, 8)).astype(float)
    y = rng.integers(0, 2, 48)
    X[y == 1, 1] = np.minimum(X[y == 1, 1] + 2, 3)
    X[y == 1, 4] = np.minimum(X[y == 1, 4] + 1, 3)
    X[:, 5] = X[:, 4]
    return X, y


def _fit(method, X, y, **forced):
    estimator = estimator_for(method, num_features=COUNT, **FRONT_PARAMS.get(method, {}), **forced)
    return estimator.fit(X, y.astype(float) if estimator.continuous_target else y)


@pytest.mark.parametrize("method", sorted(FRONT))
def test_the_front_keeps_and_excludes_as_the_spark_selectors(data, method):
    X, y = data
    forced = _fit(method, X, y, kept_features=KEEP, excluded_features=EXCLUDE)
    selected = np.flatnonzero(forced.get_support()).tolist()
    assert set(KEEP) <= set(selected) and not set(EXCLUDE) & set(selected)
    if method in GREEDY:
        assert forced.selection_order_ == greedy_reference(X, y, method, KEEP, EXCLUDE, COUNT)
        return
    plain = _fit(method, X, y)
    np.testing.assert_array_equal(forced.scores_, plain.scores_)
    if method in ("qfs", "qfs-prime"):
        own = np.flatnonzero(plain.get_support())
        assert selected == forced_selection(plain.scores_, own, KEEP, EXCLUDE, max(own.size, len(KEEP))).tolist()
        return
    others = [int(i) for i in rank_features(plain.scores_) if int(i) not in KEEP + EXCLUDE]
    assert selected == sorted(KEEP + others[:COUNT - len(KEEP)])


def test_the_front_refuses_what_the_spark_selectors_refuse(data):
    X, y = data
    with pytest.raises(ValueError, match="feature 2 is both kept and excluded"):
        _fit("anova", X, y, kept_features=[2], excluded_features=[2])
    with pytest.raises(ValueError, match="kept_features names feature 9, outside"):
        _fit("anova", X, y, kept_features=[9])
    with pytest.raises(ValueError, match="must be a list of feature indices"):
        _fit("anova", X, y, kept_features=[-1])
    mrmr = _fit("mrmr", X, y, kept_features=[6])
    with pytest.raises(ValueError, match="fit it again"):
        mrmr.set_params(kept_features=[3]).get_support()
