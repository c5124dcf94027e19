"""p-values (model.pValues) and Spark ML's selection modes through the selectors: anova's p-values
are scikit-learn's f_classif p-values on a real microarray set (7 classes), fdr / fwe / fpr / percentile pick
what scikit-learn's SelectFdr / SelectFwe / SelectFpr / SelectPercentile pick (save and load: in
tests/selectors/test_common.py), and percentile works for a selector without p-values (LFS, and QFS's own search)."""

import numpy as np
import pytest

from sparkfs.methods import build_selector
from tests.helpers import make_df


@pytest.fixture(scope="module")
def lung(spark, shared_data):
    """lung_discrete: 73 samples x 325 genes (discretised expression), 7 classes."""
    data = np.load(shared_data / "lung_discrete.npz")
    return data["X"], data["y"], make_df(spark, data["X"], data["y"], partitions=2)


def test_anova_p_values_and_fdr_equal_scikit_learn_on_a_microarray_set(spark, lung):
    from sklearn.feature_selection import SelectFdr, f_classif

    X, y, df = lung
    model = build_selector("anova", {}).setSelectionMode("fdr").setSelectionThreshold(0.01).fit(df)
    reference_p = f_classif(X, y)[1]
    np.testing.assert_allclose(model.pValues, reference_p, rtol=1e-6, atol=1e-300)
    assert model.selectedFeatures == np.flatnonzero(SelectFdr(f_classif, alpha=0.01).fit(X, y).get_support()).tolist()
    assert model.summary["selection"] == {"mode": "fdr", "n_selected": len(model.selectedFeatures),
                                          "selection_threshold": 0.01, "kept": [], "excluded": []}
    assert model.summary["selected_p_values"] == model.pValues[model.selectedFeatures].tolist()
    assert 0 < len(model.selectedFeatures) < 325


@pytest.fixture(scope="module")
def small(spark):
    """40 rows: a shifted feature, a constant one, noise."""
    rng = np.random.default_rng(2)
    y = np.arange(40) % 2
    X = np.column_stack([rng.normal(size=40) + 1.5 * y, np.full(40, 3.0), rng.normal(size=40),
                         rng.normal(size=40) + 0.6 * y])
    return X, y, make_df(spark, X, y)


def test_a_constant_feature_has_p_value_one_and_fdr_defaults_to_alpha_0_05(spark, small):
    X, y, df = small
    from sparkfs import UnivariateTestSelector

    model = UnivariateTestSelector(test="anova", selectionMode="fdr").fit(df)  # as the README writes it
    assert model.pValues[1] == 1.0 and model.scores[1] == 0.0
    assert model.summary["selection"]["selection_threshold"] == 0.05
    assert model.selectedFeatures == reference_fdr(model.pValues, 0.05) and model.selectedFeatures[0] == 0
    assert 1 not in model.selectedFeatures


def reference_fdr(p_values, alpha):
    """Benjamini-Hochberg from its definition: the i smallest p-values for the largest i with
    p_(i) <= alpha i / m."""
    order = np.argsort(p_values, kind="stable")
    passing = [i for i in range(1, len(order) + 1) if p_values[order[i - 1]] <= alpha * i / len(order)]
    return sorted(order[:max(passing, default=0)].tolist())


@pytest.mark.parametrize("mode, threshold", [("fpr", 0.01), ("fwe", 0.2), ("percentile", 0.5)])
def test_the_other_modes_pick_what_scikit_learn_picks(spark, small, mode, threshold):
    from sklearn.feature_selection import SelectFpr, SelectFwe, SelectPercentile, f_classif

    X, y, df = small
    reference = {"fpr": SelectFpr(f_classif, alpha=threshold), "fwe": SelectFwe(f_classif, alpha=threshold),
                 "percentile": SelectPercentile(f_classif, percentile=100 * threshold)}[mode]
    with np.errstate(all="ignore"), pytest.warns(UserWarning):  # scikit-learn: the constant feature
        expected = np.flatnonzero(reference.fit(X, y).get_support()).tolist()
    model = build_selector("anova", {}).setSelectionMode(mode).setSelectionThreshold(threshold).fit(df)
    assert model.selectedFeatures == expected and len(expected) in (1, 2)


def test_percentile_on_a_selector_without_p_values(spark):
    """LFS (scores only): the top floor(p x fraction) by score, no p-values; QFS's own search asks
    for the same count."""
    rng = np.random.default_rng(3)
    y = np.arange(60) % 2
    X = rng.normal(size=(60, 10)) + np.outer(y, np.linspace(0.0, 2.0, 10))
    df = make_df(spark, X, y)
    lfs = build_selector("lfs", {}).setSelectionMode("percentile").setSelectionThreshold(0.35).fit(df)
    assert lfs.pValues is None and lfs.selectedFeatures == sorted(lfs.ranking[:3].tolist())
    assert lfs.summary["selection"] == {"mode": "percentile", "n_selected": 3, "selection_threshold": 0.35,
                                        "num_features": 3, "kept": [], "excluded": []}
    qfs = build_selector("qfs", {"gamma": 0.0}).setSelectionMode("percentile").setSelectionThreshold(0.3).fit(df)
    assert qfs.summary["requested_features"] == 3


def test_selection_params_are_validated_in_the_shared_base():
    from sparkfs import FisherMarkovSelector, ReliefSelector, UnivariateTestSelector

    with pytest.raises(ValueError, match=r"The 'selectionMode' parameter of ReliefSelector must be a str among "
                                         r"\{'numTopFeatures', 'percentile'\}: 'fdr' compares p-values"):
        ReliefSelector(selectionMode="fdr").validate_params()
    with pytest.raises(ValueError, match=r"'selectionThreshold' parameter of UnivariateTestSelector must be a finite "
                                         r"float in the range \(0, 1\]. Got 1.5"):
        UnivariateTestSelector(selectionMode="fpr", selectionThreshold=1.5).validate_params()
    with pytest.raises(ValueError, match=r"with selectionMode='numTopFeatures' the count is numFeatures"):
        FisherMarkovSelector(selectionThreshold=0.2).validate_params()
    with pytest.raises(ValueError, match=r"numFeatures=5 belongs to selectionMode='numTopFeatures'"):
        UnivariateTestSelector(selectionMode="fwe", numFeatures=5).validate_params()
    with pytest.raises(ValueError, match=r"must be a str among \{'numTopFeatures', 'percentile', 'fpr', 'fdr', "
                                         r"'fwe'\}. Got 'kbest'"):
        UnivariateTestSelector(selectionMode="kbest").validate_params()
    selector = UnivariateTestSelector(selectionMode="percentile")
    assert selector.getSelectionThreshold() == 0.1 and not selector.isSet(selector.selectionThreshold)

    from sparkfs.methods import METHODS
    from sparkfs.selectors._params import SelectorParams

    for selector_class, _ in METHODS.values():  # one declaration, in the shared params
        for name in ("selectionMode", "selectionThreshold"):
            assert [k for k in selector_class.__mro__ if name in vars(k)] == [SelectorParams]
