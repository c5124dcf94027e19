"""``missing='pairwise'``: anova, chi2 and variance score each feature on the rows where it is present, against
a literal reference (for each feature: drop its NaN rows, repeat each row by its integer weight, then SciPy's
one-way ANOVA, scikit-learn's chi2 or NumPy's sample variance), dense and sparse vectors (a stored NaN is
missing, an absent entry is 0), 1 and 3 partitions, with and without weights; the summary counts what was left
out; the methods and settings without the rule refuse it by name."""

import numpy as np
import pytest
from scipy.stats import f_oneway
from sklearn.feature_selection import chi2 as sklearn_chi2

from sparkfs.errors import InvalidInputError
from sparkfs.methods import build_selector
from tests.helpers import make_df

#: (sparse, partitions, weighted): every layout is fitted by every method.
LAYOUTS = [(False, 1, False), (True, 3, True), (False, 3, True), (True, 1, False)]
#: (row, column) of the NaN values: 7 values in 4 of the 5 features (feature 4 has none).
NAN_AT = [(0, 0), (5, 0), (11, 1), (12, 1), (13, 1), (30, 2), (44, 3)]


def _data():
    """60 rows, 5 non-negative integer features (zeros among them: sparse vectors store fewer), 3 classes,
    features 1 and 3 shifted by the class; integer weights 0..3."""
    rng = np.random.default_rng(11)
    y = np.arange(60) % 3
    X = rng.integers(0, 4, size=(60, 5)).astype(float)
    X[:, 1] += y
    X[:, 3] += 2 * (y == 2)
    for row, column in NAN_AT:
        X[row, column] = np.nan
    return X, y.astype(float), rng.integers(0, 4, size=60).astype(float)


def complete_cases_reference(method, X, y, weights):
    """(statistic, p-value or None) of every feature from its complete cases, rows repeated by weight."""
    statistics, p_values = [], []
    for feature in range(X.shape[1]):
        present = ~np.isnan(X[:, feature])
        repeats = weights[present].astype(int)
        values, labels = np.repeat(X[present, feature], repeats), np.repeat(y[present], repeats)
        if method == "anova":
            result = f_oneway(*[values[labels == label] for label in np.unique(labels)])
            statistics.append(result.statistic), p_values.append(result.pvalue)
        elif method == "chi2":
            statistic, p_value = sklearn_chi2(values[:, None], labels)
            statistics.append(statistic[0]), p_values.append(p_value[0])
        else:
            statistics.append(np.var(values, ddof=1))
    return np.array(statistics), (np.array(p_values) if p_values else None)


@pytest.fixture(scope="module")
def frames(spark):
    X, y, weights = _data()
    made = {layout: make_df(spark, X, y, partitions=layout[1], sparse=layout[0],
                            weights=weights if layout[2] else None) for layout in LAYOUTS}
    yield made
    for frame in made.values():
        frame.unpersist()


def _fit(method, frame, weight_col=None, **params):
    selector = build_selector(method, {"missing": "pairwise", **params}).setNumFeatures(2)
    return (selector.setWeightCol(weight_col) if weight_col else selector).fit(frame)


@pytest.mark.parametrize("method", ["anova", "chi2", "variance"])
@pytest.mark.parametrize("layout", LAYOUTS, ids=lambda layout: "sparse-%s-%d-weighted-%s" % layout)
def test_each_feature_is_scored_on_the_rows_where_it_is_present(frames, method, layout):
    X, y, weights = _data()
    weighted = layout[2]
    model = _fit(method, frames[layout], weight_col="weight" if weighted else None)
    statistics, p_values = complete_cases_reference(method, X, y, weights if weighted else np.ones(len(y)))
    np.testing.assert_allclose(model.scores, statistics, rtol=1e-9)
    if p_values is not None:
        np.testing.assert_allclose(model.pValues, p_values, rtol=1e-7)
    assert model.summary["missing"] == {"policy": "pairwise", "rows_dropped": 0, "values_set_to_zero": 0,
                                        "values_left_out": len(NAN_AT), "features_with_missing": 4,
                                        "most_missing_in_a_feature": 3}
    assert model.summary["n_rows"] == len(y)   # no row is dropped


def test_a_feature_without_enough_present_rows_is_undefined_and_scores_zero(spark):
    """A feature missing in every row of two classes has one class left (no F value), one missing everywhere
    has no row: both score 0 with p-value 1, the others as their complete cases give."""
    X, y, _ = _data()
    X[y != 0, 2] = np.nan
    X[:, 4] = np.nan
    model = _fit("anova", make_df(spark, X, y, partitions=2, sparse=True))
    statistics, p_values = complete_cases_reference("anova", X[:, :2], y, np.ones(len(y)))
    np.testing.assert_allclose(model.scores[:2], statistics, rtol=1e-9)
    assert model.scores[[2, 4]].tolist() == [0.0, 0.0] and model.pValues[[2, 4]].tolist() == [1.0, 1.0]
    assert model.summary["missing"]["features_with_missing"] == 5


def test_methods_and_settings_without_the_rule_refuse_it_by_name(frames):
    frame = frames[False, 1, False]
    for method in ("lfs", "f-regression", "relieff"):
        with pytest.raises(ValueError, match=r"missing='pairwise' leaves a NaN out of one feature's statistic only, "
                           r"a rule of the univariate filters \(anova, chi2, variance\); this method has none"):
            _fit(method, frame)
    with pytest.raises(ValueError, match="missing='pairwise' counts the present values .* deterministic=True"):
        _fit("anova", frame, deterministic=True)
    with pytest.raises(ValueError, match="statsEngine='jvm'"):
        _fit("chi2", frame, statsEngine="jvm")


def test_infinite_values_and_missing_labels_are_still_refused(spark):
    X, y, _ = _data()
    labels = [None if i == 7 else v for i, v in enumerate(y)]
    with pytest.raises(InvalidInputError, match=r"^1 row\(s\) have a null or NaN label in column 'label': "
                       "missing='pairwise' leaves NaN feature values out feature by feature"):
        _fit("anova", make_df(spark, X, labels, partitions=2))
    X[3, 4] = np.inf
    with pytest.raises(InvalidInputError, match=r"^1 row\(s\) have infinite feature values in column 'features': "
                       "missing='pairwise' handles NaN only"):
        _fit("variance", make_df(spark, X, y, partitions=2, sparse=True))
