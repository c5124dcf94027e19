"""Kept and excluded features (``keptFeatures``, ``excludedFeatures``) for every method of the registry.

One fit per method with the constraint: the kept features are selected, the excluded never, and
the rest is a plain reference. The constraint changes the selection only, not the scores, so for a
method that ranks (and for SVM-RFE and TuRF, whose rule applies to the final ranking) the reference
is the model's own ranking filtered: the kept, then the best others. QFS is compared with its own
unconstrained optimum; mRMR, JMI and CMIM with a NumPy greedy search written here from the
equations, started from the kept features.
"""

import re

import numpy as np
import pytest

from sparkfs.core.selection import forced_refusal, forced_selection, rank_features
from sparkfs.methods import METHODS, build_selector
from tests.helpers import make_df

KEEP, EXCLUDE, COUNT = [6, 3], [1], 4
GREEDY = ("mrmr", "jmi", "cmim")
#: Params that keep a fit small or make the reference exact (integer codes for the greedy methods).
PARAMS = {**{method: {"discretization": "none"} for method in GREEDY},
          **{method: {"passes": 1, "batchSize": 48} for method in ("lmba", "simba")}}  # one step: the rule is tested


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.integers(0, 4, size=(48, 8)).astype(float)
    y = rng.integers(0, 2, 48)
    X[y == 1, 1] = np.minimum(X[y == 1, 1] + 2, 3)  # feature 1 is the most relevant: excluded below
    X[y == 1, 4] = np.minimum(X[y == 1, 4] + 1, 3)
    X[:, 5] = X[:, 4]  # a redundant copy: the greedy methods choose between them given the rest
    return X, y


@pytest.fixture(scope="module")
def frame(spark, data):
    return make_df(spark, *data, partitions=2)


@pytest.fixture(scope="module")
def fitted(frame):
    models = {}

    def fit(method, forced=True):
        if (method, forced) not in models:
            selector = build_selector(method, dict(PARAMS.get(method, {}))).setNumFeatures(COUNT)
            if forced:
                selector._set(keptFeatures=KEEP, excludedFeatures=EXCLUDE)
            models[(method, forced)] = selector.fit(frame)
        return models[(method, forced)]

    return fit


def _ranked_reference(scores):
    others = [int(i) for i in rank_features(scores) if int(i) not in KEEP + EXCLUDE]
    return sorted(KEEP + others[:COUNT - len(KEEP)])


# The greedy reference (notes 3-5 of sparkfs.core.information) --------------------------------------


def _entropy_terms(*columns):
    """Joint probabilities of the code columns, as a dict of code tuples."""
    keys, counts = np.unique(np.stack(columns, axis=1), axis=0, return_counts=True)
    return {tuple(key): count / columns[0].size for key, count in zip(keys.tolist(), counts)}


def _mi(a, b):
    joint, pa, pb = _entropy_terms(a, b), _entropy_terms(a), _entropy_terms(b)
    return sum(p * np.log(p / (pa[(x,)] * pb[(y,)])) for (x, y), p in joint.items())


def _cmi(a, y, s):
    """I(a; y | s)."""
    joint, p_s, p_as, p_sy = _entropy_terms(a, s, y), _entropy_terms(s), _entropy_terms(a, s), _entropy_terms(s, y)
    return sum(p * np.log(p_s[(xs,)] * p / (p_as[(xa, xs)] * p_sy[(xs, yy)])) for (xa, xs, yy), p in joint.items())


def greedy_reference(X, y, criterion, keep, exclude, count):
    codes = X.astype(np.int64)
    p = codes.shape[1]
    relevance = np.array([_mi(codes[:, j], y) for j in range(p)])
    order = list(keep)
    if not order:
        order = [int(np.argmax(np.where(np.isin(np.arange(p), exclude), -np.inf, relevance)))]
    while len(order) < count:
        candidates = [j for j in range(p) if j not in order and j not in exclude]
        values = {}
        for j in candidates:
            if criterion == "mrmr":   # Peng et al. eq. 7: relevance - mean redundancy
                values[j] = relevance[j] - np.mean([_mi(codes[:, j], codes[:, s]) for s in order])
            elif criterion == "jmi":  # sum over s of I(X_j, X_s; Y) = I(X_s; Y) + I(X_j; Y | X_s)
                values[j] = sum(relevance[s] + _cmi(codes[:, j], y, codes[:, s]) for s in order)
            else:                     # Fleuret eq. 4: min over s of I(X_j; Y | X_s)
                values[j] = min(_cmi(codes[:, j], y, codes[:, s]) for s in order)
        best = max(values.values())
        tolerance = 1e-9 * max(abs(v) for v in values.values())
        tied = [j for j in candidates if values[j] >= best - tolerance]
        order.append(max(tied, key=lambda j: (relevance[j], -j)))  # larger relevance, then lower index
    return order


# The tests --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", sorted(METHODS))
def test_kept_are_selected_excluded_never_and_the_rest_is_the_reference(fitted, data, method):
    model = fitted(method)
    selected = model.selectedFeatures
    assert set(KEEP) <= set(selected) and not set(EXCLUDE) & set(selected)
    assert model.summary["selection"]["kept"] == KEEP and model.summary["selection"]["excluded"] == EXCLUDE
    if method in GREEDY:
        order = greedy_reference(*data, method, KEEP, EXCLUDE, COUNT)
        assert model.selectionOrder == order
        assert selected == sorted(order)
    elif method in ("qfs", "qfs-prime"):  # its own optimum, the kept added and the excluded left out
        plain = fitted(method, forced=False).selectedFeatures
        expected = forced_selection(model.scores, plain, KEEP, EXCLUDE, count=max(len(plain), len(KEEP)))
        assert selected == expected.tolist()
        np.testing.assert_array_equal(model.scores, fitted(method, forced=False).scores)
    else:
        assert selected == _ranked_reference(model.scores)
        assert len(selected) == COUNT
    # what evaluate asks of the model: every k with the same rule
    for k, chosen in model.selectionsForCounts([2, COUNT]).items():
        assert chosen[:2].tolist() == KEEP and not set(EXCLUDE) & set(chosen.tolist())
        assert len(chosen) == k or method in ("qfs", "qfs-prime")  # QFS: the nearest size its optimum reaches


def test_the_greedy_search_without_constraint_matches_the_reference(fitted, data):
    """The reference itself, on the plain run: mRMR's own greedy from the most relevant feature."""
    model = fitted("mrmr", forced=False)
    assert model.selectionOrder == greedy_reference(*data, "mrmr", [], [], COUNT)


def test_threshold_and_p_value_modes_add_the_kept_and_remove_the_excluded(frame):
    selector = build_selector("anova", {}).setSelectionMode("fpr").setSelectionThreshold(0.05)
    plain = selector.copy().fit(frame)
    forced = selector.copy()._set(keptFeatures=[6], excludedFeatures=[1]).fit(frame)
    assert 1 in plain.selectedFeatures
    assert forced.selectedFeatures == sorted((set(plain.selectedFeatures) | {6}) - {1})
    np.testing.assert_array_equal(forced.pValues, plain.pValues)


def test_the_params_are_refused_before_any_pass_naming_the_problem(frame):
    cases = [({"keptFeatures": [2], "excludedFeatures": [2]}, "feature 2 is both kept and excluded"),
             ({"keptFeatures": [9]}, "feature 9, outside the features' indices [0, 7]"),
             ({"keptFeatures": [0, 2, 3], "numFeatures": 2}, "3 features are kept but the selection holds only 2"),
             ({"excludedFeatures": [4, 4]}, "exclude names feature 4 twice")]
    for params, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            build_selector("anova", {})._set(**params).fit(frame)
    with pytest.raises(ValueError, match="must be a list of feature indices"):
        build_selector("lfs", {})._set(keptFeatures=[-1]).validate_params()


def test_the_rule_in_numpy():
    scores = np.array([5.0, 4.0, 3.0, 2.0, 1.0])
    assert forced_selection(scores, [0, 1], [4], [0], count=2).tolist() == [1, 4]
    assert forced_selection(scores, [0, 1, 2], [3, 4], [1], count=3).tolist() == [0, 3, 4]
    assert forced_selection(scores, [0, 1], [4], [0], count=None).tolist() == [1, 4]
    assert forced_refusal([1], [1], 5, 2) == "feature 1 is both kept and excluded"
    assert forced_refusal([], [], 5, 2) is None
