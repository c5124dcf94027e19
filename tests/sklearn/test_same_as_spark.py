"""The front against the Spark selectors: the same scores (and p-values, and selection) on the same
rows, dense and sparse, for every method of the front (the registry drives the list, so a method
added to ``FRONT`` is compared here without a new test). The Spark fit is the selector that
``sparkfs.methods.METHODS`` names: the filters of the class moments with ``deterministic=True``
(exact sums, as the front's) and with the default engine (Spark's Summarizer: equal to rounding);
the Relief family with its default (positional row ids, whose order breaks neighbour ties as the
front's row positions do)."""

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.methods import METHODS, build_selector
from sparkfs.selectors.baseline import UnivariateTestSelector
from sparkfs.selectors.fisher_markov import FisherMarkovSelector
from sparkfs.sklearn import FRONT
from tests.helpers import make_df

pytestmark = [pytest.mark.filterwarnings("ignore::sparkfs.errors.SelectionTieWarning"),  # the equal columns tie
              pytest.mark.filterwarnings("ignore::sparkfs.errors.SolverConvergenceWarning")]  # raw svm-rfe rows

RTOL = 1e-9
#: Methods of the front whose Spark fit is the one-pass class moments (``deterministic=True``: exact sums).
MOMENT_METHODS = sorted(m for m in FRONT if METHODS[m][0] in (UnivariateTestSelector, FisherMarkovSelector)
                        and m != "chi2-categorical")  # Spark ML's contingency test: its own file (below)


def _data(seed=0, n=90, p=9):
    """Non-negative rows (chi2 takes them) with an informative feature, a constant one, two equal
    columns (a tie at every cut) and zeros (sparse rows keep them)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = np.abs(rng.normal(size=(n, p))) * np.array([1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 1.0, 0.1, 1.0])
    X[:, 1] += 1.5 * y
    X[:, 6] += 0.4 * (y == 2)
    X[rng.random(X.shape) < 0.3] = 0.0
    X[:, 4] = 2.5
    X[:, 8] = X[:, 3]
    return X, y


def _camel(name):
    return re.sub(r"_([a-z])", lambda match: match.group(1).upper(), name)


def _spark_fit(spark, method, X, y, params, *, sparse, partitions=2, deterministic=None):
    selection = {"num_features", "threshold", "selection_mode", "selection_threshold"}
    own = {_camel(k): v for k, v in params.items() if k not in selection}
    selector = build_selector(method, own)
    for name, value in params.items():
        if name in selection:
            selector.set(selector.getParam(_camel(name)), value)
    if deterministic is None:
        deterministic = method in MOMENT_METHODS
    selector.set(selector.getParam("deterministic"), deterministic)
    return selector.fit(make_df(spark, X, y, partitions=partitions, sparse=sparse))


def _compare(model, front):
    # atol: a margin score near 0 is a difference of sums whose last bits follow the summation order
    np.testing.assert_allclose(front.scores_, model.scores, rtol=RTOL, atol=1e-14)
    if model.pValues is not None:
        np.testing.assert_allclose(front.pvalues_, model.pValues, rtol=RTOL, atol=1e-300)
    else:
        assert not hasattr(front, "pvalues_")
    assert np.flatnonzero(front.get_support()).tolist() == list(model.selectedFeatures)


#: (method, params) beyond the defaults: each method's own Params and every selection rule.
CASES = [
    ("anova", {"selection_mode": "fdr", "selection_threshold": 0.2}),
    ("anova", {"selection_mode": "fwe"}),
    ("anova", {"selection_mode": "percentile", "selection_threshold": 0.35}),
    ("chi2", {"selection_mode": "fpr", "selection_threshold": 0.1}),
    ("chi2", {"threshold": 1.0}),
    ("variance", {"threshold": 0.5}),
    ("variance", {"selection_mode": "percentile"}),
    ("lfs", {"scaling": "range", "gamma": -1.0, "num_features": 3}),
    ("lfs", {"preset": "paper", "threshold": 0.0}),
    ("lfs", {"scaling": "standard", "gamma": 0.5, "num_features": 5}),
    ("relief", {"k": 1, "metric": "manhattan"}),
    ("relieff", {"k": 3, "scaling": "standard"}),
    ("relieff", {"k": 2, "preset": "paper", "threshold": 0.0}),
    ("mrelief", {"k": 4, "metric": "cosine", "scaling": "none"}),
    ("prelief", {"sigma": 0.3, "scaling": "standard"}),
    ("multisurf-star", {"metric": "euclidean", "scaling": "standard"}),
    ("surf", {"scaling": "none", "block_size": 7}),
    ("turf", {"inner_method": "surf-star", "remove_fraction": 0.3, "keep_features": 3}),
    ("mrmr", {"mrmr_form": "quotient", "bins": 4, "num_features": 5}),
    ("jmi", {"selection_mode": "percentile", "selection_threshold": 0.5}),
    ("cmim", {"bins": 3, "num_features": 6}),
    ("svm-rfe", {"step": 2, "eliminate_all": True, "halve_above": 0, "num_features": 3}),
    ("svm-rfe", {"ensemble": 3, "seed": 5, "num_features": 3}),
    ("svm-rfe", {"standardize": False, "multiclass": "l1", "threshold": 0.0, "C": 0.5}),
    ("qfs", {"gamma": "auto", "threshold": 0.0}),
    ("qfs", {"scaling": "range", "selection_mode": "percentile", "selection_threshold": 0.34}),
    ("qfs-prime", {"center": True, "num_features": 3, "candidates": 6}),
]


#: Each case on one layout, dense and sparse in turn (the defaults' test takes the other layout for its
#: method; the suite's time: each Spark fit here takes a few seconds).
LAYOUTS = [index % 2 == 1 for index in range(len(CASES))]


#: Methods of the front compared with their Spark selectors in their own file instead, and why.
#: (file, its test against the Spark selector, why).
COMPARED_ELSEWHERE = {
    "lmba": ("tests/sklearn/test_margin_weighting_front.py", "test_the_spark_selector_gives_the_same_scores",
             "its default loop is 34 Spark jobs on these rows"),
    "simba": ("tests/sklearn/test_margin_weighting_front.py", "test_the_spark_selector_gives_the_same_scores",
              "its default loop is 45 Spark jobs on these rows"),
    "chi2-categorical": ("tests/sklearn/test_chi2_categorical_front.py",
                         "test_the_spark_selector_and_spark_ml_on_the_same_rows",
                         "it takes integer-coded features, which these rows are not"),
    "parzen-ise": ("tests/sklearn/test_parzen_ise_front.py", "test_every_row_gives_the_spark_selectors_scores",
                   "unsupervised: the Spark selector takes a label column as its groups, the front ignores y"),
}

#: The defaults on one layout per method, the other one than its first case's above (every method with
#: cases meets dense and sparse rows across the two tests; the others alternate): one Spark fit each.
_FIRST_CASE_LAYOUT = {}
for (_method, _), _sparse in zip(CASES, LAYOUTS):
    _FIRST_CASE_LAYOUT.setdefault(_method, _sparse)
DEFAULT_LAYOUTS = [(m, not _FIRST_CASE_LAYOUT[m] if m in _FIRST_CASE_LAYOUT else index % 2 == 1)
                   for index, m in enumerate(sorted(set(FRONT) - set(COMPARED_ELSEWHERE)))]


@pytest.mark.parametrize("method", sorted(COMPARED_ELSEWHERE))
def test_a_method_compared_elsewhere_is_compared_with_its_spark_selector_there(method):
    path, test, _ = COMPARED_ELSEWHERE[method]
    text = (Path(__file__).parents[2] / path).read_text()
    assert FRONT[method].__name__ in text and f"def {test}(spark" in text


@pytest.mark.parametrize("method, sparse", DEFAULT_LAYOUTS,
                         ids=[f"{m}-{'sparse' if s else 'dense'}" for m, s in DEFAULT_LAYOUTS])
def test_default_params_give_the_spark_selectors_scores(spark, method, sparse):
    X, y = _data()
    front = FRONT[method](num_features=4).fit(sp.csr_matrix(X) if sparse else X, y)
    model = _spark_fit(spark, method, X, y, {"num_features": 4}, sparse=sparse)
    _compare(model, front)
    assert front.n_features_in_ == X.shape[1]


@pytest.mark.parametrize("method, params, sparse", [(m, p, s) for (m, p), s in zip(CASES, LAYOUTS)],
                         ids=[f"{m}-{'-'.join(p)}-{'sparse' if s else 'dense'}" for (m, p), s in zip(CASES, LAYOUTS)])
def test_params_and_selection_rules_give_the_spark_selectors_results(spark, method, params, sparse):
    X, y = _data(1)
    X[:5, 0] = 40.0  # a feature of large range: the scalings differ
    front = FRONT[method](**params).fit(sp.csr_matrix(X) if sparse else X, y)
    _compare(_spark_fit(spark, method, X, y, params, sparse=sparse), front)


@pytest.mark.parametrize("method", MOMENT_METHODS)
def test_the_default_engine_agrees_to_rounding_with_one_partition(spark, method):
    """Spark's default (Summarizer's sums, not exact): the same scores to rounding."""
    X, y = _data(2)
    front = FRONT[method](num_features=3).fit(X, y)
    model = _spark_fit(spark, method, X, y, {"num_features": 3}, sparse=False, partitions=1, deterministic=False)
    np.testing.assert_allclose(front.scores_, model.scores, rtol=1e-7, atol=1e-9)


def test_signed_values_and_string_labels_give_the_spark_scores(spark):
    """anova and LFS on signed data with string classes (ordered as Spark orders them)."""
    rng = np.random.default_rng(5)
    labels = np.array(["b", "a", "c"])[rng.integers(0, 3, 80)]
    X = rng.normal(size=(80, 6)) + np.outer(labels == "a", [0, 2.0, 0, 0, 0.3, 0])
    for method in ("anova", "lfs"):
        front = FRONT[method](num_features=2).fit(X, labels)
        selector = build_selector(method, {}).setNumFeatures(2)
        selector.set(selector.getParam("deterministic"), True)
        df = make_df(spark, X, labels, partitions=3, label_type=str)
        _compare(selector.fit(df), front)


def _term_like(seed=3, n=90, p=40):
    """Counts with at most 10 % non-zero and no negative value: preset "default" takes the cosine
    distance without scaling; rows without a term and rows sharing none with a query tie."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = sp.random(n, p, density=0.05, random_state=seed, format="csr", data_rvs=lambda k: rng.integers(1, 4, k))
    X = X.toarray()
    X[:, 0] += (y == 1) * (rng.random(n) < 0.5)
    return X, y


@pytest.mark.parametrize("method", ["relief", "relieff", "mrelief"])
def test_term_like_data_take_the_cosine_rule_and_give_the_spark_scores(spark, method):
    X, y = _term_like()
    # term data as sparse rows (the rule reads the values, not the layout; dense rows are compared in the
    # default-params test)
    front = FRONT[method](k=3, num_features=5).fit(sp.csr_matrix(X), y)
    model = _spark_fit(spark, method, X, y, {"k": 3, "num_features": 5}, sparse=True, partitions=3)
    assert (front.metric_, front.scaling_) == ("cosine", "none") == (model.summary["metric"], model.summary["scaling"])
    _compare(model, front)
    np.testing.assert_allclose(front.weights_, model.weights, rtol=RTOL, atol=1e-14)


@pytest.mark.parametrize("method", ["mrmr", "jmi", "cmim"])
def test_information_order_relevance_and_given_codes_are_the_spark_selectors(spark, method):
    rng = np.random.default_rng(7)
    y = rng.integers(0, 3, 120)
    codes = rng.integers(0, 4, size=(120, 8)).astype(float)
    codes[:, 2] = np.where(rng.random(120) < 0.7, y, codes[:, 2])
    codes[:, 5] = codes[:, 2]  # redundant with 2: mrmr and cmim pass it over
    # the default discretisation on dense rows, the given codes on sparse rows (each layout meets the
    # default rule in the default-params test)
    given_codes = {"num_features": 4, "discretization": "none", "bins": 4}
    for params, sparse in (({"num_features": 4}, False), (given_codes, True)):
        front = FRONT[method](**params).fit(sp.csr_matrix(codes) if sparse else codes, y)
        model = _spark_fit(spark, method, codes, y, params, sparse=sparse)
        _compare(model, front)
        assert front.selection_order_ == model.summary["selection_order"]
        np.testing.assert_allclose(front.relevance_, model.featureArray("relevance"), rtol=RTOL, atol=1e-15)
