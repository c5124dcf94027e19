"""Instance weights in anova, chi2 and variance: frequency weights.

A weighted fit is checked two ways: against the unweighted fit of the rows repeated w times
(integer weights, 0 among them), and against a NumPy reference of the weighted equations written
here (the F statistic, Pearson's chi-squared of class sums, the sample variance), sharing no code
with sparkfs. Every statistics engine, 1 and 3 partitions.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sparkfs.errors import InvalidInputError
from sparkfs.selectors.baseline import UnivariateTestSelector
from sparkfs.sklearn import FRONT
from tests.helpers import make_df

TESTS = ("anova", "chi2", "variance")


def _data():
    """Non-negative rows (chi2 takes them), 3 classes, integer weights 0..3. Feature 3 is 2.0 on
    every row; feature 4 is 1.5 on every row of positive weight and 7.0 on those of weight 0, so
    constant for the weighted fit as for the repeated rows."""
    rng = np.random.default_rng(52)
    n = 36
    y = np.arange(n) % 3
    X = np.abs(rng.normal(size=(n, 5))) * np.array([1.0, 2.0, 0.5, 1.0, 1.0])
    X[:, 0] += 0.8 * y
    X[:, 3] = 2.0
    w = rng.integers(0, 4, n).astype(np.float64)
    w[:3] = [2.0, 3.0, 1.0]   # every class has weight
    X[:, 4] = np.where(w > 0, 1.5, 7.0)
    return X, y, w


def reference(test, X, y, w):
    """(statistics, p-values) of the weighted equations; NaN where undefined (0 / 0)."""
    classes = [c for c in np.unique(y) if w[y == c].sum() > 0]
    total = w.sum()
    if test == "variance":
        mean = (w[:, None] * X).sum(axis=0) / total
        return (w[:, None] * (X - mean) ** 2).sum(axis=0) / (total - 1.0), None
    n_c = np.array([w[y == c].sum() for c in classes])
    sums = np.array([(w[y == c, None] * X[y == c]).sum(axis=0) for c in classes])
    if test == "chi2":
        expected = (n_c / total)[:, None] * sums.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            statistic = ((sums - expected) ** 2 / expected).sum(axis=0)
        return statistic, stats.chi2.sf(statistic, len(classes) - 1)
    means = sums / n_c[:, None]
    grand = sums.sum(axis=0) / total
    between = (n_c[:, None] * (means - grand) ** 2).sum(axis=0)
    within = sum((w[y == c, None] * (X[y == c] - means[i]) ** 2).sum(axis=0) for i, c in enumerate(classes))
    with np.errstate(invalid="ignore", divide="ignore"):
        statistic = (between / (len(classes) - 1)) / (within / (total - len(classes)))
    return statistic, stats.f.sf(statistic, len(classes) - 1, total - len(classes))


def _fit(df, test, engine, weighted):
    options = {"deterministic": True} if engine == "arrow" else {"statsEngine": engine}
    return UnivariateTestSelector(test=test, numFeatures=2, weightCol="weight" if weighted else None,
                                  **options).fit(df)


#: The weighted fits checked, (test, engine, partitions): every engine and both partition counts
#: among the three tests (sparse rows on the float engine, 'auto''s choice for them).
WEIGHTED_FITS = [("anova", "jvm", 3), ("anova", "arrow", 3), ("anova", "float", 1),
                 ("chi2", "float", 3), ("chi2", "jvm", 1), ("chi2", "auto-sparse", 3),
                 ("variance", "float", 3), ("variance", "arrow", 1)]


@pytest.fixture(scope="module")
def fits(spark):
    """(test, engine, partitions) -> the weighted model; (test, "repeated") -> the unweighted model
    of the rows repeated w times."""
    X, y, w = _data()
    frames = {partitions: make_df(spark, X, y, partitions=partitions, weights=w) for partitions in (1, 3)}
    frames["sparse"] = make_df(spark, X, y, partitions=3, sparse=True, weights=w)
    repeats = w.astype(np.int64)
    frames["repeated"] = make_df(spark, np.repeat(X, repeats, axis=0), np.repeat(y, repeats), partitions=2)
    models = {}
    for test, engine, partitions in WEIGHTED_FITS:
        frame = frames["sparse"] if engine == "auto-sparse" else frames[partitions]
        models[test, engine, partitions] = _fit(frame, test, engine.replace("-sparse", ""), True)
    for test in TESTS:
        models[test, "repeated"] = _fit(frames["repeated"], test, "auto", False)
    yield models
    for frame in frames.values():
        frame.unpersist()


def _expected_scores(test, X, y, w):
    statistic, p_values = reference(test, X, y, w)
    constant = np.zeros(X.shape[1], dtype=bool)
    constant[[3, 4]] = True   # constant over the rows of positive weight: score 0, p-value 1
    scores = np.where(constant | np.isnan(statistic), 0.0, statistic)
    return scores, None if p_values is None else np.where(constant, 1.0, p_values)


@pytest.mark.parametrize("key", WEIGHTED_FITS + [(test, "repeated") for test in TESTS],
                         ids=lambda key: "-".join(map(str, key)))
def test_weighted_scores_are_the_equations_and_the_repeated_rows(fits, key):
    X, y, w = _data()
    test, model = key[0], fits[key]
    scores, p_values = _expected_scores(test, X, y, w)
    np.testing.assert_allclose(model.scores, scores, rtol=1e-9, atol=1e-12)
    if p_values is not None:
        np.testing.assert_allclose(model.pValues, p_values, rtol=1e-7, atol=1e-14)
    else:
        assert model.pValues is None
    repeated = fits[test, "repeated"]
    np.testing.assert_allclose(model.scores, repeated.scores, rtol=1e-9, atol=1e-12)
    if key[1] != "repeated":
        assert model.summary["total_weight"] == pytest.approx(w.sum())
        assert model.summary["n_rows"] == len(y)   # the rows, not the weight


@pytest.mark.parametrize("test", TESTS)
def test_the_scikit_learn_front_gives_the_spark_scores(fits, test):
    """The front's sums are exact, as the Spark fit's with deterministic=True: the same bits; the
    float engine's agree to rounding."""
    X, y, w = _data()
    front = FRONT[test]().fit(X, y, sample_weight=w)
    for key in (key for key in WEIGHTED_FITS if key[0] == test):
        model, exact = fits[key], key[1] == "arrow"
        for actual, expected in ((front.scores_, model.scores), (getattr(front, "pvalues_", None), model.pValues)):
            if exact:
                np.testing.assert_array_equal(actual, expected)
            elif expected is not None:
                np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-15)


def test_weights_that_sum_to_zero_are_refused(spark):
    X, y, w = _data()
    df = make_df(spark, X, y, partitions=2, weights=np.zeros(len(y)))
    try:
        with pytest.raises(InvalidInputError, match="sum to zero"):
            _fit(df, "anova", "float", True)
    finally:
        df.unpersist()


def test_non_integer_weights_follow_the_equations(spark):
    X, y, _ = _data()
    w = np.random.default_rng(3).uniform(0.0, 2.5, len(y))
    df = make_df(spark, X, y, partitions=2, weights=w)
    try:
        model = UnivariateTestSelector(test="anova", weightCol="weight").fit(df)
    finally:
        df.unpersist()
    statistic, p_values = reference("anova", X, y, w)
    np.testing.assert_allclose(model.scores[:3], statistic[:3], rtol=1e-9)
    np.testing.assert_allclose(model.pValues[:3], p_values[:3], rtol=1e-7)


@pytest.mark.parametrize("bad, engine", [(-1.0, "float"), (float("nan"), "jvm"), (float("inf"), "arrow")])
def test_bad_weights_are_refused_naming_the_column(spark, bad, engine):
    X, y, w = _data()
    w = w.copy()
    w[5] = bad
    df = make_df(spark, X, y, partitions=2, weights=w)
    try:
        with pytest.raises(Exception, match="1 row\\(s\\) have a null, NaN, infinite or negative weight in column"):
            _fit(df, "chi2", engine, True)
    finally:
        df.unpersist()


def test_a_test_without_weights_refuses_the_column():
    selector = UnivariateTestSelector(test="chi2-categorical", weightCol="weight")
    assert not selector.takesWeights()
    assert UnivariateTestSelector(test="anova").takesWeights()
    assert UnivariateTestSelector(test="variance").takesWeights()
    assert not UnivariateTestSelector(test="f-regression").takesWeights()
    with pytest.raises(ValueError, match="test='chi2-categorical' does not support weightCol"):
        selector._score(None)


def test_sparkfs_methods_says_which_methods_take_weights():
    from sparkfs.methods import methods_table

    weights = {line.split()[0]: line.split()[2] for line in methods_table()[1:] if len(line.split()) > 3}
    for method in ("anova", "chi2", "variance", "mrmr", "jmi", "cmim", "lfs", "relieff", "svm-rfe", "multisurf"):
        assert weights[method] == "yes", method
    for method in ("chi2-categorical", "f-regression", "relief", "qfs"):
        assert weights[method] == "no", method
