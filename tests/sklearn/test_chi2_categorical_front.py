"""chi2-categorical's front (``Chi2CategoricalSelector``, ``sparkfs.core.contingency``) against a
reference written from the contingency-table definition, SciPy's ``chi2_contingency``, Spark ML's
``ChiSquareTest`` and the Spark selector on the same rows (1 and 3 partitions, dense and sparse):
the statistics, the degrees of freedom, the p-values, the selection; the refusals; pandas names."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline

from sparkfs.core.contingency import MAX_CATEGORIES, chi_square_test, contingency_table, pearson_independence
from sparkfs.errors import InvalidInputError
from sparkfs.sklearn.contingency import Chi2CategoricalSelector

pytestmark = pytest.mark.filterwarnings("ignore::sparkfs.errors.SelectionTieWarning")  # features 3 and 4 tie


def _codes(seed=4, n=60):
    """Integer codes: an informative feature, a constant one, negative codes, two equal columns (a tie),
    a feature of many categories, and zeros everywhere but the constant (sparse rows keep them)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.integers(0, 4, size=(n, 6)).astype(float)
    X[:, 0] = y + rng.integers(0, 2, n)
    X[:, 5] = rng.integers(0, 12, n)
    X[rng.random(X.shape) < 0.3] = 0.0
    X[:, 1] = 2.0
    X[:, 2] = -X[:, 2]
    X[:, 4] = X[:, 3]
    return X, y


def reference_test(X, y):
    """Per feature, from the definition: the counts O of every (value, class) that occurs, the
    expected counts E = row total x column total / n, X^2 = sum (O - E)^2 / E with (V - 1)(C - 1)
    degrees of freedom, and the upper tail (a table of one row: 0, 0, 1)."""
    statistics, degrees, p_values = [], [], []
    classes = sorted(set(y.tolist()))
    for column in np.asarray(X, dtype=float).T:
        values = sorted(set(column.tolist()))
        observed = np.array([[np.sum((column == v) & (y == c)) for c in classes] for v in values], dtype=float)
        expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
        dof = (len(values) - 1) * (len(classes) - 1)
        statistic = float(((observed - expected) ** 2 / expected).sum()) if dof else 0.0
        statistics.append(statistic)
        degrees.append(dof)
        p_values.append(float(stats.chi2.sf(statistic, dof)) if dof else 1.0)
    return np.array(statistics), np.array(degrees), np.array(p_values)


def test_a_two_by_two_table_worked_by_hand():
    # rows 30, 70; columns 40, 60; E = [[12, 18], [28, 42]]; X^2 = 4/12 + 4/18 + 4/28 + 4/42
    test = pearson_independence([[10.0, 20.0], [30.0, 40.0]])
    assert test.statistic == pytest.approx(4 / 12 + 4 / 18 + 4 / 28 + 4 / 42, rel=1e-14)
    assert test.degrees_of_freedom == 1
    assert test.p_value == pytest.approx(stats.chi2.sf(test.statistic, 1), rel=1e-12)
    assert pearson_independence([[3.0, 5.0, 1.0]]) == (0.0, 0, 1.0)  # one value: independent by definition


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_scores_and_p_values_are_the_contingency_table_test(sparse):
    X, y = _codes()
    matrix = sp.csr_matrix(X)
    if sparse:
        matrix.data[0] = 0.0  # an explicit zero: the category 0.0, as the values not stored
        X = matrix.toarray()
    front = Chi2CategoricalSelector(num_features=2).fit(matrix if sparse else X, y)
    statistics, degrees, p_values = reference_test(X, y)
    np.testing.assert_allclose(front.scores_, statistics, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(front.degrees_of_freedom_, degrees)
    np.testing.assert_allclose(front.pvalues_, p_values, rtol=1e-9, atol=1e-14)
    for feature in np.flatnonzero(degrees):  # and SciPy's test of independence, without Yates' correction
        table = pd.crosstab(X[:, feature], y).to_numpy()
        statistic, p_value, dof, _ = stats.chi2_contingency(table, correction=False)
        assert (front.scores_[feature], front.pvalues_[feature], front.degrees_of_freedom_[feature]) == (
            pytest.approx(statistic, rel=1e-12), pytest.approx(p_value, rel=1e-9, abs=1e-14), dof)
    assert front.scores_[1] == 0.0 and front.pvalues_[1] == 1.0  # the constant feature
    assert front.scores_[3] == front.scores_[4]


def test_labels_are_categories_and_sparse_tables_equal_dense_ones():
    X, y = _codes(7)
    words = np.array(["ham", "spam", "eggs"])[y]
    by_words = Chi2CategoricalSelector().fit(X, words)  # other column order: the sum's last bits
    np.testing.assert_allclose(by_words.scores_, Chi2CategoricalSelector().fit(X, y).scores_, rtol=1e-14)
    dense = chi_square_test(X, y, 3)
    sparse = chi_square_test(sp.csc_matrix(X), y, 3)
    for got, want in zip(sparse, dense):
        np.testing.assert_array_equal(got, want)
    table = contingency_table(X[:, 0], y, 4)  # a class without rows (3) has no column, as in Spark
    assert table.labels.tolist() == [0, 1, 2] and table.counts.sum() == X.shape[0]


def test_the_selection_is_the_spark_rule_on_the_statistics():
    X, y = _codes()
    front = Chi2CategoricalSelector(num_features=4).fit(X, y)
    order = np.argsort(-front.scores_, kind="mergesort")  # ties to the lower index
    assert np.flatnonzero(front.get_support()).tolist() == sorted(order[:4].tolist())
    fdr = Chi2CategoricalSelector(selection_mode="fdr", selection_threshold=0.01).fit(X, y)
    assert np.flatnonzero(fdr.get_support()).tolist() == [0]
    assert front.set_params(num_features=None, threshold=front.scores_[3]).get_support().sum() == \
        np.sum(front.scores_ > front.scores_[3])


def test_bad_input_is_refused():
    X, y = _codes()
    with pytest.raises(ValueError, match="needs at least two classes"):
        Chi2CategoricalSelector().fit(X, np.zeros(len(y)))
    bad = X.copy()
    bad[5, 3] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        Chi2CategoricalSelector().fit(bad, y)
    bad[5, 3], bad[7, 2], bad[9, 0] = 1.0, 0.25, 1.5
    for matrix in (bad, sp.csr_matrix(bad)):  # the first non-integer value in row order is named
        with pytest.raises(InvalidInputError, match=r"integer-coded features; feature 2 has the value 0.25\. "):
            Chi2CategoricalSelector().fit(matrix, y)
    many = np.arange(MAX_CATEGORIES + 1, dtype=float)[:, None]
    with pytest.raises(InvalidInputError, match="at most 10,000 distinct values per feature .* feature 0 has 10,001"):
        Chi2CategoricalSelector().fit(many, np.arange(many.shape[0]) % 2)


def test_pandas_names_pipeline_and_grid_search():
    X, y = _codes(5, n=90)
    frame = pd.DataFrame(X, columns=[f"answer_{i}" for i in range(X.shape[1])])
    front = Chi2CategoricalSelector(num_features=2).fit(frame, y)
    assert list(front.feature_names_in_) == list(frame.columns)
    kept = np.sort(np.argsort(-front.scores_, kind="mergesort")[:2])
    assert list(front.get_feature_names_out()) == list(frame.columns[kept])
    assert list(front.set_output(transform="pandas").transform(frame).columns) == list(frame.columns[kept])
    search = GridSearchCV(make_pipeline(Chi2CategoricalSelector(), LogisticRegression()),
                          {"chi2categoricalselector__num_features": [1, 3]},
                          cv=StratifiedKFold(3, shuffle=True, random_state=0)).fit(frame, y)
    assert search.best_estimator_[0].get_support().sum() == search.best_params_["chi2categoricalselector__num_features"]


# ---- the Spark selector and Spark ML's ChiSquareTest on the same rows --------------------------------


@pytest.mark.parametrize("partitions, sparse", [(1, False), (3, True)], ids=["1-dense", "3-sparse"])
def test_the_spark_selector_and_spark_ml_on_the_same_rows(spark, partitions, sparse):
    from pyspark.ml.stat import ChiSquareTest

    from sparkfs.methods import build_selector
    from tests.helpers import make_df

    X, y = _codes()
    df = make_df(spark, X, y, partitions=partitions, sparse=sparse)
    front = Chi2CategoricalSelector(num_features=4).fit(sp.csr_matrix(X) if sparse else X, y)
    spark_ml = ChiSquareTest.test(df, "features", "label").first()
    np.testing.assert_allclose(front.scores_, spark_ml["statistics"].toArray(), rtol=1e-14, atol=0)  # Spark's bits
    np.testing.assert_array_equal(front.degrees_of_freedom_, spark_ml["degreesOfFreedom"])
    model = build_selector("chi2-categorical", {}).setNumFeatures(4).fit(df)
    np.testing.assert_allclose(front.scores_, model.scores, rtol=1e-14, atol=0)
    np.testing.assert_allclose(front.pvalues_, model.pValues, rtol=1e-9, atol=1e-14)  # commons-math's F to rounding
    assert np.flatnonzero(front.get_support()).tolist() == list(model.selectedFeatures)


@pytest.mark.parametrize("params", [{"selection_mode": "fdr", "selection_threshold": 0.2},
                                    {"selection_mode": "fwe", "selection_threshold": 0.5},
                                    {"threshold": 2.0}], ids=lambda params: "-".join(map(str, params.values())))
def test_every_selection_rule_selects_as_the_spark_selector(spark, params):
    from sparkfs.methods import build_selector
    from tests.helpers import make_df

    X, y = _codes(11)
    front = Chi2CategoricalSelector(**params).fit(X, y)
    selector = build_selector("chi2-categorical", {})
    for name, value in params.items():
        selector.set(selector.getParam({"selection_mode": "selectionMode", "selection_threshold": "selectionThreshold",
                                         "threshold": "threshold"}[name]), value)
    model = selector.fit(make_df(spark, X, y, partitions=2))
    assert np.flatnonzero(front.get_support()).tolist() == list(model.selectedFeatures)
    np.testing.assert_allclose(front.pvalues_, model.pValues, rtol=1e-9, atol=1e-14)
