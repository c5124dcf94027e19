"""Parzen-ISE on Spark equals the in-memory model (sparkfs.core.parzen_ise, itself checked against
quadrature and finite differences in tests/core/test_parzen_ise.py), 1 and 3 partitions."""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from sparkfs.core.options import ParzenISEOptions
from sparkfs.core.parzen_ise import parzen_ise_in_memory
from sparkfs.spark.parzen_ise import parzen_ise_statistics
from tests.spark.test_relief_engine import make_df

REL_TOL = 1e-8


def assert_close(got, want, tol=REL_TOL):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    assert np.max(np.abs(got - want), initial=0.0) <= tol * max(np.max(np.abs(want), initial=0.0), 1e-300), (got, want)


def small_iris():
    X, y = load_iris(return_X_y=True)
    keep = np.arange(0, 150, 3)  # 50 rows, all three species
    return X[keep], y[keep]


@pytest.mark.parametrize("partitions", [1, 3])
def test_fcm_groups_equal_the_in_memory_model(spark, partitions):
    X, y = small_iris()
    options = dict(num_clusters=3, max_iter=2, fixed_feature=0, fcm_max_iter=5, seed=2)
    want, want_info = parzen_ise_in_memory(X, **options)
    result = parzen_ise_statistics(make_df(spark, X, y, partitions), "features", num_features=4,
                                   options=ParzenISEOptions(**options))
    assert result.groups == "fcm" and want_info["groups"] == "fcm"
    assert result.info["fcm"]["iterations"] == want_info["fcm"]["iterations"]
    assert_close(result.info["centres"], want_info["centres"])
    assert_close(result.info["variances"], want_info["variances"])
    assert result.info["runs"][-1]["evaluations"] == want_info["runs"][-1]["evaluations"]
    assert_close(result.scores, want_info["scores"])


@pytest.mark.parametrize("partitions,sparse", [(1, True), (3, False)])
def test_class_groups_soft_and_landmarks_equal_the_in_memory_model(spark, partitions, sparse):
    X, y = small_iris()
    X = X.copy()
    X[X < 1.0] = 0.0  # some zeros, so the sparse rows are sparse
    options = dict(max_iter=3, fixed_feature=2, landmarks=20, seed=1, criterion="image")
    want, want_info = parzen_ise_in_memory(X, y, **options)
    df = make_df(spark, X, y, partitions, sparse=sparse)
    result = parzen_ise_statistics(df, "features", "label", num_features=4, num_classes=3,
                                   options=ParzenISEOptions(**options))
    assert result.groups == "labels" and result.info["num_queries"] == 20
    assert_close(result.scores, want_info["scores"])
    assert np.isclose(result.info["runs"][-1]["ise_relative_standard_error"],
                      want_info["runs"][-1]["ise_relative_standard_error"], rtol=1e-6)


def test_soft_fcm_memberships_and_the_auto_held_out_feature(spark):
    X, y = small_iris()
    options = dict(num_clusters=2, memberships="soft", max_iter=2, fixed_feature="auto", fcm_max_iter=5, seed=0)
    want, want_info = parzen_ise_in_memory(X, **options)
    result = parzen_ise_statistics(make_df(spark, X, y, 2), "features", num_features=4,
                                   options=ParzenISEOptions(**options))
    assert len(result.info["runs"]) == 2
    assert result.info["fixed_feature"] == want_info["fixed_feature"]
    assert_close(result.scores, want_info["scores"])


def test_fcm_start_needs_distinct_rows(spark):
    X = np.ones((6, 2))
    with pytest.raises(ValueError, match="distinct rows"):
        parzen_ise_statistics(make_df(spark, X, np.zeros(6), 1), "features", num_features=2,
                              options=ParzenISEOptions(num_clusters=2))


def test_ranker_fit_transform_save_load_and_groups(spark, tmp_path):
    from sparkfs import ParzenISERanker, ParzenISERankerModel

    X, y = small_iris()
    df = make_df(spark, X, y, 2)
    unlabelled = df.drop("label")
    ranker = ParzenISERanker(numFeatures=2, numClusters=3, maxIter=3, heldOutFeature=1, fcmMaxIter=6, seed=2)
    model = ranker.fit(unlabelled)
    _, want = parzen_ise_in_memory(X, num_clusters=3, max_iter=3, fixed_feature=1, fcm_max_iter=6, seed=2)
    assert_close(model.scores, want["scores"])
    assert model.summary["groups"] == "fcm" and model.summary["held_out_feature"] == 1
    assert model.summary["criterion"] == "marginal" and model.summary["rank_by"] == "reference"
    assert model.summary["fcm"]["clusters"] == 3 and model.summary["n_classes"] == 0
    assert model.transform(unlabelled).select("selected_features").first()[0].size == 2
    model.write().overwrite().save(str(tmp_path / "m"))
    loaded = ParzenISERankerModel.load(str(tmp_path / "m"))
    assert loaded.selectedFeatures == model.selectedFeatures and loaded.getOrDefault("heldOutFeature") == "1"
    # 'auto' takes the labels when the column exists; 'clusters' ignores them.
    labelled = ParzenISERanker(numFeatures=2, maxIter=2, heldOutFeature="none").fit(df)
    assert labelled.summary["groups"] == "labels" and labelled.summary["n_classes"] == 3
    _, want_labels = parzen_ise_in_memory(X, y, max_iter=2, fixed_feature=None)
    assert_close(labelled.scores, want_labels["scores"])
    clustered = ParzenISERanker(numFeatures=2, groups="clusters", maxIter=1, fcmMaxIter=3).fit(df)
    assert clustered.summary["groups"] == "fcm"
    with pytest.raises(Exception, match="not in the input"):
        ParzenISERanker(groups="labels").fit(unlabelled)
    with pytest.raises(ValueError, match="heldOutFeature"):
        ParzenISERanker(heldOutFeature=9).fit(unlabelled)
    with pytest.raises(ValueError, match="memberships"):
        ParzenISERanker(memberships="fuzzy").fit(unlabelled)


@pytest.mark.parametrize("partitions,labelled,rank_by", [(1, False, "multipliers"), (3, True, "reference")])
def test_marginal_reading_equals_the_in_memory_model(spark, partitions, labelled, rank_by):
    """Weights and the ranking scores of the rules of section 0 (the multipliers from the last pass, the
    reference decreases from two more passes in the first run)."""
    X, y = small_iris()
    options = dict(criterion="marginal", fixed_feature="auto", max_iter=4, tol=0.0, fcm_max_iter=5, seed=0,
                   block_size=32, rank_by=rank_by)
    want, want_info = parzen_ise_in_memory(X, y if labelled else None, **options)
    df = make_df(spark, X, y, partitions)
    fit_options = ParzenISEOptions(**options)
    result = (parzen_ise_statistics(df, "features", "label", num_features=4, num_classes=3, options=fit_options)
              if labelled else parzen_ise_statistics(df, "features", num_features=4, options=fit_options))
    assert result.info["criterion"] == "marginal" and result.info["h"] == want_info["h"]
    assert [r["passes"] for r in result.info["runs"]] == [r["passes"] for r in want_info["runs"]]
    assert result.info["fixed_feature"] == want_info["fixed_feature"]
    assert_close(result.info["runs"][-1]["weights"], want)
    assert_close(result.scores, want_info["scores"])


def test_default_fits_on_a_row_sample_when_every_pair_exceeds_the_budget(spark, monkeypatch):
    """sampleSize unset and rows x rows x features over the budget: the in-memory model on the
    rows of smallest content key (announced, recorded); sampleSize >= the rows keeps every row."""
    from sparkfs import DefaultSampleWarning, ParzenISERanker
    from sparkfs.core.sampling import content_sample_keys, smallest_key_positions
    from sparkfs.selectors import parzen_ise as ranker_module

    X, y = small_iris()
    monkeypatch.setattr(ranker_module, "DEFAULT_PAIR_BUDGET", 30 * 30 * 4)
    monkeypatch.setattr(ranker_module, "MIN_DEFAULT_SAMPLE", 10)
    df = make_df(spark, X, y, 2)
    with pytest.warns(DefaultSampleWarning, match="so the fit runs on 30 rows drawn by seed 0"):
        model = ParzenISERanker(numFeatures=2, maxIter=4).fit(df)
    drawn = np.sort(smallest_key_positions(content_sample_keys(X, y, None, 0), np.arange(len(y)), 30))
    _, want = parzen_ise_in_memory(X[drawn], y[drawn], max_iter=4, seed=0)
    assert_close(model.scores, want["scores"])
    assert (model.summary["row_sample"], model.summary["sample_rows"]) == ("default", 30)
    every = ParzenISERanker(numFeatures=2, maxIter=4, sampleSize=len(y)).fit(df)
    assert (every.summary["row_sample"], every.summary["sample_rows"]) == ("sampleSize", len(y))
    assert_close(every.scores, parzen_ise_in_memory(X, y, max_iter=4, seed=0)[1]["scores"])
