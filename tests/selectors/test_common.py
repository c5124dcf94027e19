"""Checks every selector passes: params, copy, uid, Estimator and Model save/load, transform."""

import numpy as np
import pytest

from sparkfs.methods import METHODS, build_selector
from tests.helpers import make_df


@pytest.fixture(scope="module")
def small_df(spark):
    rng = np.random.default_rng(0)
    X = np.abs(rng.normal(size=(24, 5))) * [1, 4, 1, 2, 1]
    y = rng.integers(0, 2, 24)
    X[y == 1, 1] += 2.0
    return make_df(spark, X, y, partitions=2)


@pytest.fixture(scope="module")
def small_counts_df(spark):
    """Integer-coded features, for chi2-categorical (which refuses other values)."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 3, size=(24, 5)).astype(float)
    y = rng.integers(0, 2, 24)
    X[y == 1, 1] += 2.0
    return make_df(spark, X, y, partitions=2)


def _one_method_per_selector_class():
    """The contract below is about the class (params, copy, uid, save/load, transform), so one
    method of each selector class runs it, plus every method whose model differs in what it
    holds (the p-values of anova and both chi2 tests). The other methods' fits are tested in their
    own files, and every method's copy is checked without Spark by the next test."""
    chosen, seen = [], set()
    for method in sorted(METHODS):
        kind = type(build_selector(method, {}))
        if kind not in seen or method in ("anova", "chi2", "chi2-categorical"):
            chosen.append(method)
            seen.add(kind)
    return chosen


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_copies_with_its_params(method):
    selector = build_selector(method, {}).setNumFeatures(2)
    copy = selector.copy()
    assert copy.uid == selector.uid and copy is not selector
    assert copy.extractParamMap() == selector.extractParamMap()


@pytest.mark.parametrize("method", _one_method_per_selector_class())
def test_selector_contract(spark, small_df, small_counts_df, method, tmp_path):
    if method == "chi2-categorical":
        small_df = small_counts_df
    selector = build_selector(method, {}).setNumFeatures(2)
    copy = selector.copy()
    assert copy.uid == selector.uid and copy is not selector
    assert copy.extractParamMap() == selector.extractParamMap()

    selector.write().save(str(tmp_path / "estimator"))
    reloaded_estimator = type(selector).load(str(tmp_path / "estimator"))
    assert {p.name: v for p, v in reloaded_estimator.extractParamMap().items()} == \
        {p.name: v for p, v in selector.extractParamMap().items()}

    model = selector.fit(small_df)
    assert model.uid == selector.uid
    assert model.numInputFeatures == 5 and len(model.selectedFeatures) == 2
    assert model.ranking[:2].tolist() == sorted(model.ranking[:2].tolist(), key=lambda i: -model.scores[i])
    assert model.get_support().sum() == 2
    assert model.transform(small_df).first()["selected_features"].size == 2

    model.write().save(str(tmp_path / "model"))
    loaded = type(model).load(str(tmp_path / "model"))
    np.testing.assert_array_equal(loaded.scores, model.scores)
    assert (loaded.pValues is None) == (model.pValues is None) == (method not in ("anova", "chi2", "chi2-categorical"))
    if model.pValues is not None:
        np.testing.assert_array_equal(loaded.pValues, model.pValues)
        assert np.all((model.pValues >= 0) & (model.pValues <= 1))
    assert loaded.selectedFeatures == model.selectedFeatures and loaded.uid == model.uid
    assert (loaded.transform(small_df).first()["selected_features"]
            == model.transform(small_df).first()["selected_features"])


def test_model_of_another_class_is_refused(spark, small_df, tmp_path):
    from sparkfs import FisherMarkovSelectorModel
    from sparkfs.selectors.baseline import UnivariateTestSelectorModel

    build_selector("anova", {}).setNumFeatures(2).fit(small_df).write().save(str(tmp_path / "m"))
    with pytest.raises(ValueError, match="not a sparkfs FisherMarkovSelectorModel"):
        FisherMarkovSelectorModel.load(str(tmp_path / "m"))
    assert isinstance(UnivariateTestSelectorModel.load(str(tmp_path / "m")), UnivariateTestSelectorModel)


def test_transform_refuses_existing_output_column(spark, small_df):
    from sparkfs import InvalidInputError

    model = build_selector("lfs", {}).setNumFeatures(2).fit(small_df)
    with pytest.raises(InvalidInputError, match="output column 'label' already exists"):
        model.setOutputCol("label").transform(small_df)


def test_scaling_param_is_declared_once_with_each_selectors_default():
    """One `scaling` Param (sparkfs.selectors._params.HasScaling): same doc and check everywhere,
    each selector's default (Fisher-Markov "standard", "none" with preset="paper";
    Relief "range")."""
    from sparkfs import FisherMarkovSelector, ReliefSelector
    from sparkfs.core.scaling import SCALINGS

    selectors = {FisherMarkovSelector: "standard", ReliefSelector: "range"}
    assert len({cls().getParam("scaling").doc for cls in selectors}) == 1
    for cls, default in selectors.items():
        selector = cls()
        assert selector.getScaling() == default and not selector.isSet(selector.scaling)
        for value in SCALINGS:
            cls(scaling=value).validate_params()
        with pytest.raises(ValueError, match=(
            rf"^The 'scaling' parameter of {cls.__name__} must be a str among "
            r"\{'none', 'range', 'standard'\}. Got 'log' instead.$"
        )):
            cls(scaling="log").validate_params()
    paper = FisherMarkovSelector(preset="paper")
    assert paper.scalingInUse() == "none" and FisherMarkovSelector().scalingInUse() == "standard"
    assert FisherMarkovSelector(preset="paper", scaling="range").scalingInUse() == "range"
    with pytest.raises(ValueError, match="The 'scaling' parameter of ReliefSelector"):
        build_selector("relieff", {"scaling": "minmax"})


@pytest.mark.parametrize("engine", ["arrow", "jvm"])
@pytest.mark.parametrize("partitions", [1, 2])
def test_anova_scores_a_constant_feature_zero_for_any_partitioning(spark, partitions, engine):
    """Spark ML's ANOVA F of a constant feature is 0 / 0 computed from rounding noise (24.0 with one
    partition, 0.0 with two, on these rows: found by tests/spark/test_partition_property.py)."""
    x = np.array([-2.33, 0.25, 0.96, 0.41, 1.37, -0.67, 0.9, 0.76, -0.46, 0.49, -0.16, 1.71, 0.85, 0.78])
    y = np.array([1, 0, 0, 1, 0, 1, 1, 0, 1, 0, 1, 0, 0, 1], dtype=float)
    X = np.column_stack([x, np.full(x.size, 1.28)])
    selector = build_selector("anova", {"statsEngine": engine}).setNumFeatures(1)
    model = selector.fit(make_df(spark, X, y, partitions=partitions))
    assert model.scores[1] == 0.0 and model.scores[0] > 0.0


def test_anova_exact_engine_is_bit_identical_and_equals_spark_ml_to_rounding(spark):
    """anova's exact engine (deterministic=True: exact class sums) gives the same bits for 1 and 5
    partitions and for shuffled rows; Spark ML's own ANOVATest (statsEngine="jvm") gives the same F to rounding, and
    both equal the one-way ANOVA F written here from its definition."""
    rng = np.random.default_rng(7)
    y = np.arange(90) % 3
    X = rng.normal(size=(90, 6)) * [1, 1e3, 1e-3, 1, 5, 1] + np.outer(y, [0.5, 300.0, 0.0, 0.1, 0.0, 2.0])
    exact = {}
    for partitions, order in ((1, np.arange(90)), (5, np.arange(90)), (3, rng.permutation(90))):
        df = make_df(spark, X[order], y[order].astype(float), partitions=partitions)
        exact[partitions] = build_selector("anova", {"deterministic": True}).setNumFeatures(2).fit(df).scores
    assert np.array_equal(exact[1], exact[5]) and np.array_equal(exact[1], exact[3])
    spark_ml = build_selector("anova", {"statsEngine": "jvm"}).setNumFeatures(2).fit(
        make_df(spark, X, y.astype(float), partitions=4)).scores
    np.testing.assert_allclose(spark_ml, exact[1], rtol=1e-9)

    grand = X.mean(axis=0)
    between = sum((y == c).sum() * (X[y == c].mean(axis=0) - grand) ** 2 for c in range(3)) / (3 - 1)
    within = sum(((X[y == c] - X[y == c].mean(axis=0)) ** 2).sum(axis=0) for c in range(3)) / (90 - 3)
    np.testing.assert_allclose(exact[1], between / within, rtol=1e-9)


def test_model_summary_names_the_selected_features(spark):
    """The names VectorAssembler gives the vector's slots reach model.summary['selected_names']
    (f{i} without them), as the CLI's summary.json has them."""
    import pandas as pd
    from pyspark.ml.feature import VectorAssembler

    rng = np.random.default_rng(1)
    y = np.arange(40) % 2
    frame = pd.DataFrame({"noise": rng.normal(size=40), "signal": y + rng.normal(scale=0.1, size=40),
                          "label": y.astype(float)})
    assembled = VectorAssembler(inputCols=["noise", "signal"], outputCol="features").transform(
        spark.createDataFrame(frame))
    model = build_selector("anova", {}).setNumFeatures(1).fit(assembled)
    assert model.summary["selected_names"] == ["signal"]
    plain = build_selector("anova", {}).setNumFeatures(1).fit(make_df(spark, frame[["noise", "signal"]].to_numpy(), y))
    assert plain.summary["selected_names"] == ["f1"]
