"""SVMRFESelector: the driver solver equals the in-memory SVM-RFE, the Spark solver (L-BFGS over
distributed sums) ranks the clear features the same and gives the same bits for any partitioning,
ensembles and instance weighting reach both.

The Spark solver runs one Spark job per evaluation of the objective, so its tests use few features
and iterations.
"""

import numpy as np
import pytest

from sparkfs import SVMRFESelector, SVMRFESelectorModel
from sparkfs.core import svm_rfe as rfe
from sparkfs.core.instance_weighting import margin_instance_weights
from sparkfs.errors import DriverBudgetError, InvalidInputError
from tests.helpers import make_df

# the Spark-solver tests cap maxIter on purpose; the convergence test records its warning itself
pytestmark = pytest.mark.filterwarnings("ignore::sparkfs.errors.SolverConvergenceWarning")


def _data(seed=0, n=60, d=8, classes=2):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 3)
    if classes == 2:
        y = (3 * X[:, 0] + 2 * X[:, 1] - 1.5 * X[:, 2] + 0.2 * rng.normal(size=n) > 0).astype(int)
    else:
        y = np.argmax(X[:, :classes] * [3, 2, 1.5][:classes], axis=1)
    return X, y


@pytest.mark.parametrize("partitions, classes", [(1, 2), (3, 3)])
def test_driver_solver_equals_in_memory_svm_rfe(spark, partitions, classes):
    raw_X, y = _data(seed=partitions, classes=classes)
    X = raw_X * np.linspace(0.5, 40.0, raw_X.shape[1]) + 3.0     # spreads and means the standardisation removes
    model = SVMRFESelector(numFeatures=3, eliminateAll=True).fit(make_df(spark, X, y, partitions=partitions))
    expected = rfe.svm_rfe(X, y, step=0.1, standardize=True)
    np.testing.assert_array_equal(model.featureArray("ranking"), expected.ranking)
    np.testing.assert_array_equal(model.scores, expected.scores)
    remaining, path = model.weightPath
    np.testing.assert_array_equal(remaining, expected.n_remaining)
    np.testing.assert_allclose(path, expected.weight_path, rtol=0, atol=1e-12)
    assert model.summary["standardize"] is True and model.summary["centred"] is True
    assert model.summary["convergence"] == {"fits": int(expected.n_remaining.size), "not_converged": 0,
                                            "max_iter": 10_000}
    raw = SVMRFESelector(numFeatures=3, standardize=False, halveAbove=0,
                         eliminateAll=True).fit(make_df(spark, raw_X, y))
    np.testing.assert_array_equal(raw.scores, rfe.svm_rfe(raw_X, y, step=0.1).scores)   # the paper's settings
    assert model.summary["solver"] == "driver" and "within" in model.summary["solver_reason"]
    assert model.selectedFeatures == sorted(np.argsort(expected.ranking, kind="stable")[:3].tolist())


def test_weights_ensemble_and_margin_weighting_on_the_driver(spark):
    X, y = _data(seed=5, n=40)
    user_weights = np.linspace(0.5, 1.5, len(y))
    df = make_df(spark, X, y, partitions=2, weights=user_weights)
    # standardize=False: the data as given, as the paper (and these references) fit them
    weighted = SVMRFESelector(weightCol="weight", solver="driver", step=2.0, standardize=False,
                              eliminateAll=True).fit(df)
    np.testing.assert_array_equal(weighted.featureArray("ranking"),
                                  rfe.svm_rfe(X, y, sample_weight=user_weights, step=2).ranking)
    ensemble = SVMRFESelector(ensemble=4, seed=7, solver="driver", step=2.0, standardize=False,
                              eliminateAll=True).fit(df)
    expected = rfe.ensemble_svm_rfe(X, y, ensemble=4, seed=7, step=2)
    np.testing.assert_array_equal(ensemble.featureArray("ranking"), expected.ranking)
    assert ensemble.weightPath[0].size == 0           # no single weight path for an ensemble
    margin = SVMRFESelector(instanceWeighting="margin", solver="driver", step=2.0, standardize=False,
                            eliminateAll=True).fit(df)
    iw = margin_instance_weights(X, y).weights
    np.testing.assert_array_equal(margin.featureArray("ranking"), rfe.svm_rfe(X, y, sample_weight=iw, step=2).ranking)
    assert margin.summary["instance_weighting"] == "margin"


def test_spark_solver_agrees_with_the_driver_and_runs_ensembles(spark):
    X, y = _data(seed=2, n=60, d=3)
    df = make_df(spark, X, y, partitions=3)
    driver = SVMRFESelector(numFeatures=2, solver="driver", step=1.0, eliminateAll=True).fit(df)
    # 0.001 MiB: the rows (1.4 KiB) are above it, the solver's arrays (0.9 KiB) within.
    # tol=1e-3: L-BFGS stops once converged (a capped, unconverged fit pays up to 2 maxIter + 20 passes)
    on_spark = SVMRFESelector(numFeatures=2, driverBudgetMB=0.001, step=1.0, maxIter=8, tol=1e-3,
                              eliminateAll=True).fit(df)
    assert on_spark.summary["solver"] == "spark" and "above" in on_spark.summary["solver_reason"]
    assert on_spark.selectedFeatures == driver.selectedFeatures == [0, 1]
    spark_ml = SVMRFESelector(numFeatures=2, solver="sparkml", step=1.0, maxIter=8, tol=1e-3).fit(df)
    assert spark_ml.summary["solver"] == "sparkml" and spark_ml.selectedFeatures == [0, 1]
    np.testing.assert_array_equal(on_spark.featureArray("ranking"), driver.featureArray("ranking"))
    remaining, path = on_spark.weightPath
    assert remaining.tolist() == [3, 2, 1]
    np.testing.assert_allclose(path.sum(axis=1), 1.0)
    # Bootstrap members as weighted fits (multiplicities attached by row position); 2 L-BFGS
    # iterations already rank feature 0 first (each capped fit pays 2 maxIter + 20 passes at most).
    ensemble = SVMRFESelector(ensemble=2, seed=1, solver="spark", step=2.0, maxIter=2, eliminateAll=True).fit(df)
    driver_ensemble = SVMRFESelector(ensemble=2, seed=1, solver="driver", step=2.0, eliminateAll=True).fit(df)
    assert np.argmin(ensemble.featureArray("ranking")) == np.argmin(driver_ensemble.featureArray("ranking")) == 0


def test_spark_solver_is_bit_identical_for_any_partitioning(spark):
    X, y = _data(seed=5, n=30, d=3, classes=3)
    weights = np.random.default_rng(5).uniform(0.5, 2.0, 30)
    runs = [SVMRFESelector(solver="spark", step=2.0, maxIter=3, weightCol="weight", deterministic=True,
                           eliminateAll=True)
            .fit(make_df(spark, X, y, weights=weights, partitions=partitions)) for partitions in (1, 2, 7)]
    for run in runs[1:]:
        assert np.array_equal(run.scores, runs[0].scores)
        assert np.array_equal(run.weightPath[1], runs[0].weightPath[1])
    assert runs[0].summary["solver"] == "spark"


def test_standardisation_reads_the_values_not_the_storage_and_counts_convergence(spark):
    import warnings

    from sparkfs.errors import SolverConvergenceWarning

    rng = np.random.default_rng(9)
    X = np.where(rng.random((40, 6)) < 0.7, 0.0, rng.normal(size=(40, 6)) * [1, 5, 20, 0.1, 3, 8])
    y = (X[:, 1] / 5 - X[:, 3] * 10 + 0.1 * rng.normal(size=40) > 0).astype(int)
    dense = SVMRFESelector(solver="driver", step=1.0, eliminateAll=True).fit(make_df(spark, X, y))
    sparse = SVMRFESelector(solver="driver", step=1.0, eliminateAll=True).fit(make_df(spark, X, y, sparse=True))
    np.testing.assert_array_equal(dense.featureArray("ranking"), sparse.featureArray("ranking"))
    np.testing.assert_allclose(dense.scores, sparse.scores, rtol=1e-9)
    assert dense.summary["centred"] is False                  # mostly zeros: scaled, not centred
    assert np.unique(dense.scores).size == 6
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        capped = SVMRFESelector(solver="driver", step=1.0, maxIter=1, standardize=False,
                                eliminateAll=True).fit(make_df(spark, X, y))
    convergence = capped.summary["convergence"]
    assert convergence["fits"] == 6 and convergence["not_converged"] >= 1 and convergence["max_iter"] == 1
    flagged = [w for w in caught if issubclass(w.category, SolverConvergenceWarning)]
    assert len(flagged) == 1 and f"{convergence['not_converged']} of 6 SVM fits" in str(flagged[0].message)
    assert not [w for w in caught if "Liblinear" in str(w.message)]


def test_spark_solver_refuses_driver_arrays_above_the_budget(spark):
    X, y = _data(seed=6, n=20, d=3)
    with pytest.raises(DriverBudgetError, match="driverBudgetMB=1e-06"):
        SVMRFESelector(solver="spark", driverBudgetMB=1e-6).fit(make_df(spark, X, y))


def test_bad_params_and_input_are_refused(spark):
    X, y = _data(seed=4, n=20, d=3)
    df = make_df(spark, X, y, weights=np.ones(20))
    with pytest.raises(ValueError, match="either weightCol or instanceWeighting"):
        SVMRFESelector(weightCol="weight", instanceWeighting="margin").fit(df)
    for params in ({"step": 1.5}, {"step": 0.0}, {"C": -1.0}, {"solver": "gpu"}, {"ensemble": 0}):
        with pytest.raises(ValueError, match=list(params)[0]):
            SVMRFESelector(**params).fit(df)
    with pytest.raises(InvalidInputError, match="two classes"):
        SVMRFESelector().fit(make_df(spark, X, np.zeros(20)))


def test_model_save_and_load_keep_the_weight_path(spark, tmp_path):
    X, y = _data(seed=6, n=30, d=4)
    model = SVMRFESelector(numFeatures=2, solver="driver").fit(make_df(spark, X, y))
    model.write().overwrite().save(str(tmp_path / "rfe"))
    loaded = SVMRFESelectorModel.load(str(tmp_path / "rfe"))
    np.testing.assert_array_equal(loaded.weightPath[0], model.weightPath[0])
    np.testing.assert_array_equal(loaded.weightPath[1], model.weightPath[1])
    assert loaded.selectedFeatures == model.selectedFeatures


def test_default_stops_at_num_features_with_the_full_eliminations_selected_set(spark):
    """numFeatures=11 of 30 with step=3: scikit-learn's RFE schedule (30, 27, ..., 12, 11), its
    selected set, which is also the top 11 of the full elimination (12 -> 9 skips 11); the
    survivors ordered by |w| of a LinearSVC fitted on exactly them."""
    from sklearn.feature_selection import RFE
    from sklearn.svm import LinearSVC

    X, y = _data(seed=3, n=60, d=30)
    X = X * np.linspace(0.5, 4.0, 30) + 1.0
    df = make_df(spark, X, y, partitions=2)
    stopped = SVMRFESelector(numFeatures=11, step=3.0, solver="driver").fit(df)
    full = SVMRFESelector(numFeatures=11, step=3.0, solver="driver", eliminateAll=True).fit(df)
    remaining, path = stopped.weightPath
    assert remaining.tolist() == [30, 27, 24, 21, 18, 15, 12, 11]
    assert stopped.summary["elimination"] == {"eliminate_all": False, "stopped_at": 11, "rounds": 7,
                                              "fits_per_run": 8}
    assert full.summary["elimination"]["stopped_at"] == 1 and full.weightPath[0][-1] == 1
    standardised = (X - X.mean(axis=0)) / X.std(axis=0)
    svm = LinearSVC(C=1.0, loss="hinge", dual=True, tol=1e-4, max_iter=10_000, random_state=0)
    reference = RFE(svm, n_features_to_select=11, step=3).fit(standardised, y)
    assert stopped.selectedFeatures == np.flatnonzero(reference.support_).tolist() == full.selectedFeatures
    selected = np.array(stopped.selectedFeatures)
    last = np.abs(svm.fit(standardised[:, selected], y).coef_.ravel())
    np.testing.assert_allclose(path[-1][selected], last / last.sum(), rtol=1e-6)
    assert np.argsort(-stopped.scores[selected]).tolist() == np.argsort(-last).tolist()
    assert np.unique(stopped.scores).size == 30
