"""Features at the edge of the doubles (docs/bad_input.md, "Values"): values whose squares underflow
(1e-320, 1e-170, 1e-160) or overflow (1e200). A scale-free statistic is computed on the feature times
a power of two, so a feature scaled by a power of two scores the same number, to the last bit, as
unscaled (anova, LFS with scaling, SVM-RFE standardised; Spark and the scikit-learn front alike); a
method that cannot refuses naming the feature (Parzen-ISE, the distance methods, QFS, SVM-RFE's
Spark solver), and no fit makes a model its own load refuses."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from pyspark.ml.linalg import Vectors

from sparkfs import InvalidInputError
from sparkfs.cli import main
from sparkfs.errors import PrecisionWarning

ROWS = 60
TINY = 2.0 ** -600    # about 2.4e-181: squares 0 in float64
HUGE = 2.0 ** 660     # about 4.8e198: squares overflow


def _data(scale=1.0, separating_subnormal=False):
    rng = np.random.default_rng(0)
    y = np.arange(ROWS) % 2
    X = np.c_[y + 0.3 * rng.normal(size=ROWS), rng.normal(size=(ROWS, 3))]
    if separating_subnormal:
        X[:, 0] = y * 1e-320       # subnormal: perfectly separating, constant within each class
    else:
        X[:, 0] *= scale
    return X, y


def _frame(spark, X, y):
    return spark.createDataFrame([(Vectors.dense(row), float(label)) for row, label in zip(X, y)],
                                 ["features", "label"])


def _fit(selector, spark, X, y):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = selector.fit(_frame(spark, X, y))
    return model, [w for w in caught if issubclass(w.category, PrecisionWarning)]


@pytest.mark.parametrize("scale", [TINY, 1e-170, 1e-160])
def test_anova_and_lfs_score_a_feature_whose_squares_underflow_as_unscaled(spark, scale):
    from sparkfs import FisherMarkovSelector, UnivariateTestSelector
    from sparkfs.sklearn import ANOVASelector, LFSSelector

    X, y = _data()
    Z, _ = _data(scale)
    for spark_selector, front in ((UnivariateTestSelector(numFeatures=1), ANOVASelector(num_features=1)),
                                  (FisherMarkovSelector(numFeatures=1), LFSSelector(num_features=1))):
        reference, _ = _fit(spark_selector.copy(), spark, X, y)
        model, precision = _fit(spark_selector.copy(), spark, Z, y)
        assert model.selectedFeatures == [0] and not precision
        assert model.summary["rescaled_features"] == {"0": int(np.frexp(np.abs(Z[:, 0]).max())[1])}
        front_scores = front.fit(Z, y).scores_
        if scale == TINY:   # a power of two: the same bits as unscaled
            np.testing.assert_array_equal(model.scores, reference.scores)
            np.testing.assert_array_equal(front_scores, front.fit(X, y).scores_)
        else:
            np.testing.assert_allclose(model.scores, reference.scores, rtol=1e-12)
        np.testing.assert_allclose(front_scores, model.scores, rtol=1e-12)


def test_a_subnormal_feature_that_separates_the_classes_ranks_first(spark):
    from sparkfs import FisherMarkovSelector, UnivariateTestSelector
    from sparkfs.sklearn import ANOVASelector

    X, y = _data(separating_subnormal=True)
    anova, _ = _fit(UnivariateTestSelector(numFeatures=1), spark, X, y)
    assert anova.scores[0] == np.inf and anova.selectedFeatures == [0]
    assert ANOVASelector(num_features=1).fit(X, y).scores_[0] == np.inf
    lfs, _ = _fit(FisherMarkovSelector(numFeatures=1), spark, X, y)
    assert lfs.selectedFeatures == [0]


def test_lfs_without_scaling_names_the_feature_it_cannot_score(spark):
    from sparkfs import FisherMarkovSelector
    from sparkfs.sklearn import LFSSelector, QFSSelector

    Z, y = _data(1e-170)
    _, precision = _fit(FisherMarkovSelector(numFeatures=1, scaling="none"), spark, Z, y)
    assert len(precision) == 1
    assert str(precision[0].message).startswith("FisherMarkovSelector: feature(s) [0] have values below 3.2e-145 in "
                                                "size: with scaling='none' theta keeps their unit")
    with pytest.warns(PrecisionWarning, match=r"LFSSelector: feature\(s\) \[0\]"):
        LFSSelector(num_features=1, scaling="none").fit(Z, y)
    with pytest.raises(InvalidInputError, match=r"QFSSelector: feature\(s\) \[0\] have values below 3.2e-145"):
        QFSSelector(num_features=1).fit(Z, y)
    with pytest.raises(InvalidInputError, match=r"FisherMarkovSelector: feature\(s\) \[0\] .* QFS's Gram pass"):
        _fit(FisherMarkovSelector(numFeatures=1, degree=2), spark, Z, y)


@pytest.mark.parametrize("scale", [TINY, HUGE, 1e-170, 1e200])
def test_svm_rfe_spark_and_front_agree_at_any_scale(spark, scale):
    """Standardised in memory (the driver solver, the front): a feature of 1e-170 was taken for constant
    (score 1.0, ranked last) and one of 1e200 refused by Spark but ranked last by the front."""
    from sparkfs import SVMRFESelector
    from sparkfs.sklearn import SVMRFESelector as FrontSVMRFE

    X, y = _data()
    Z, _ = _data(scale)
    reference = FrontSVMRFE(num_features=1).fit(X, y).scores_
    front = FrontSVMRFE(num_features=1).fit(Z, y).scores_
    model, _ = _fit(SVMRFESelector(numFeatures=1, solver="driver"), spark, Z, y)
    np.testing.assert_allclose(model.scores, front, rtol=1e-6)
    assert model.selectedFeatures == [0]
    if scale in (TINY, HUGE):
        np.testing.assert_array_equal(front, reference)


def test_svm_rfe_refuses_what_it_cannot_standardise_naming_the_feature(spark):
    from sparkfs import SVMRFESelector
    from sparkfs.sklearn import SVMRFESelector as FrontSVMRFE

    Z, y = _data(1e-170)
    with pytest.raises(InvalidInputError, match=r"feature 0 has values of at most 1.59e-170 in size: SVMRFESelector "
                                                r"\(solver='spark'\) standardises it from sums of squares, which "
                                                r"underflow float64 .* or use solver='driver'"):
        _fit(SVMRFESelector(numFeatures=1, solver="spark"), spark, Z, y)
    H, _ = _data(1e200)
    for fit in (lambda: _fit(SVMRFESelector(numFeatures=1, standardize=False), spark, H, y),
                lambda: FrontSVMRFE(num_features=1, standardize=False).fit(H, y)):
        with pytest.raises(InvalidInputError, match="feature 0 has values up to 1.59e.200: the linear SVM multiplies "
                                                    "values, which overflows float64 beyond 1e.150"):
            fit()


@pytest.mark.parametrize("scale, criterion, words", [
    (1e-160, "marginal", "feature 0 has values of at most 1.59e-160 in size: {owner} squares differences of values, "
                         "which underflow float64 below 3.2e-145"),
    (1e-100, "image", "feature 0 has values of at most 1.59e-100 in size: {owner} raises differences of values to "
                      "the power 4, which underflow float64 below 5.7e-73"),
])
def test_parzen_ise_refuses_values_whose_squares_underflow(spark, scale, criterion, words):
    """It used to exit 0 with NaN scores (a model its own load refuses), or end in an IndexError."""
    from sparkfs import ParzenISERanker
    from sparkfs.sklearn import ParzenISESelector

    Z, y = _data(scale)
    with pytest.raises(InvalidInputError, match=words.format(owner="Parzen-ISE").replace("(", r"\(")):
        _fit(ParzenISERanker(numFeatures=1, criterion=criterion), spark, Z, y)
    with pytest.raises(InvalidInputError, match=words.format(owner=r"ParzenISESelector \(Parzen-ISE\)")):
        ParzenISESelector(num_features=1, criterion=criterion).fit(Z, y)


def test_relieff_names_a_spread_whose_inverse_overflows(spark):
    """A feature of 1e-320: range scaling divides by 1e-320; the message said 'values up to inf after
    scaling' and advised the range scaling already in use."""
    from sparkfs import ReliefSelector

    X, y = _data(separating_subnormal=True)
    with pytest.raises(InvalidInputError) as refused:
        _fit(ReliefSelector(numFeatures=1, variant="relieff"), spark, X, y)
    message = str(refused.value)
    assert message.startswith("feature 0 has values of at most 1e-320 in size, and relieff divides it by its spread "
                              "(its range or standard deviation), which is below the smallest normal double")
    assert "scaling='range'" not in message and "e.g. 1e300" in message
    Z, _ = _data(1e-170)   # range scaling brings 1e-170 to [0, 1]: scored as unscaled
    model, _ = _fit(ReliefSelector(numFeatures=1, variant="relieff"), spark, Z, y)
    assert model.selectedFeatures == [0]


def test_a_fit_never_makes_a_model_its_own_load_refuses(spark, monkeypatch):
    from sparkfs import UnivariateTestSelector
    from sparkfs.selectors.baseline import UnivariateTestSelector as Selector

    X, y = _data()
    real = Selector._score

    def with_nan(self, dataset):
        result = real(self, dataset)
        result.scores[1] = np.nan
        return result

    monkeypatch.setattr(Selector, "_score", with_nan)
    with pytest.raises(InvalidInputError, match=r"UnivariateTestSelector: the score of feature 1 is nan \(1 of 4 "
                                                r"scores are not a number or infinite\): .* no model was made"):
        UnivariateTestSelector(numFeatures=1).fit(_frame(spark, X, y))


def test_the_command_line_scores_and_refuses_as_the_selectors(spark, tmp_path, capsys):
    Z, y = _data(1e-170)
    source = tmp_path / "tiny.csv"
    pd.DataFrame(Z, columns=["tiny", "b", "c", "d"]).assign(label=y).to_csv(source, index=False)
    out = tmp_path / "anova"
    assert main(["select", "--master", "local[2]", "--input", str(source), "--format", "csv", "--method", "anova",
                 "--num-features", "1", "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["selected_names"] == ["tiny"] and summary["rescaled_features"] == {"0": -564}
    capsys.readouterr()
    refused = tmp_path / "parzen"
    assert main(["select", "--master", "local[2]", "--input", str(source), "--format", "csv", "--method",
                 "parzen-ise", "--num-features", "1", "--output", str(refused)]) == 2
    err = capsys.readouterr().err
    assert "sparkfs: error: feature 0 has values of at most 1.59e-170 in size: Parzen-ISE squares differences" in err
    assert "Traceback" not in err and not refused.exists()
