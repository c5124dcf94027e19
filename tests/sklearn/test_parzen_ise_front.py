"""Parzen-ISE's front (``ParzenISESelector``) against a reference of its score written from the
equations on a tiny case (eq. 19's terms summed pair by pair, no code shared), the Spark selector
(``ParzenISERanker`` without a label column) on the same rows for each of its roads (every row, dense
and sparse; landmarks; the default row sample; the sparse features estimated by landmarks) with 1 and
3 partitions; the selection; the refusals; pandas names."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline

from sparkfs.errors import DefaultSampleWarning, InvalidInputError
from sparkfs.sklearn import parzen_ise as front_module
from sparkfs.sklearn.parzen_ise import ParzenISESelector

#: Few iterations: each is a Spark pass in the Spark fits.
QUICK = dict(max_iter=3, fcm_max_iter=4, seed=1)


def _two_clusters(seed=0, n=20):
    """Two clusters apart in feature 0 (fuzzy c-means with C = 2 finds them: rows alternate), a
    feature whose spread differs by cluster, a noise feature; zeros in the last two (sparse rows)."""
    rng = np.random.default_rng(seed)
    clusters = np.arange(n) % 2
    X = np.column_stack([10.0 * clusters + rng.normal(size=n), rng.normal(size=n) * (1 + clusters),
                         rng.normal(size=n)])
    X[:, 1:][rng.random((n, 2)) < 0.25] = 0.0
    return X, clusters


def _normal(difference, variance):
    return np.exp(-0.5 * difference ** 2 / variance) / np.sqrt(2.0 * np.pi * variance)


def reference_scores(X, clusters, held_out=None):
    """The marginal reading ranked by ``reference`` (docs/parzen_ise.md, section 0), from its
    equations: features centred and scaled to unit population variance (z); per cluster c the
    population variance s_ck^2 of z (floored at 1e-6); h^2 = ((4 / (3 N))^(1/5))^2; per feature
    ISE_k(w) = 1/N^2 sum_ij [N(z_ik - z_jk; 0, v) - 2 N(z_ik - w z_jk; 0, v) + N(w (z_ik - z_jk); 0, v)],
    v = h^2 (s_c(i)k^2 + s_c(j)k^2); the score ISE_k(0) - ISE_k(1 / |F|), F the free features, and the
    held-out feature one below the lowest."""
    n, d = X.shape
    z = (X - X.mean(axis=0)) / X.std(axis=0)
    h2 = (4.0 / (3.0 * n)) ** 0.4
    s2 = np.array([[max(z[clusters == c, k].var(), 1e-6) for k in range(d)] for c in (0, 1)])

    def ise(k, w):
        total = 0.0
        for i in range(n):
            for j in range(n):
                v = h2 * (s2[clusters[i], k] + s2[clusters[j], k])
                a, b = z[i, k], z[j, k]
                total += _normal(a - b, v) - 2.0 * _normal(a - w * b, v) + _normal(w * (a - b), v)
        return total / n ** 2

    free = [k for k in range(d) if k != held_out]
    scores = np.array([ise(k, 0.0) - ise(k, 1.0 / len(free)) for k in range(d)])
    if held_out is not None:
        scores[held_out] = scores[free].min() - 1.0
    return scores


@pytest.mark.parametrize("sparse, held_out", [(False, "none"), (True, 2)], ids=["dense-none", "sparse-held-out-2"])
def test_scores_are_the_reference_decrease_of_eq_19(sparse, held_out):
    X, clusters = _two_clusters()
    front = ParzenISESelector(num_clusters=2, held_out_feature=held_out).fit(sp.csr_matrix(X) if sparse else X)
    want = reference_scores(X, clusters, None if held_out == "none" else held_out)
    np.testing.assert_allclose(front.scores_, want, rtol=1e-9, atol=1e-12)
    assert front.weights_.sum() == pytest.approx(1.0) and np.all(front.weights_ >= 0)
    assert front.window_width_ == pytest.approx((4.0 / 60.0) ** 0.2)
    assert front.held_out_feature_ == (None if held_out == "none" else 2) and front.sample_rows_ == 20


def _iris(rows=40):
    X, _ = load_iris(return_X_y=True)
    return X[np.linspace(0, 149, rows).astype(int)]


def test_sparse_rows_give_the_dense_fit_and_y_is_ignored():
    X = _iris()
    X[X < 1.0] = 0.0
    dense = ParzenISESelector(**QUICK).fit(X)
    np.testing.assert_allclose(ParzenISESelector(**QUICK).fit(sp.csr_matrix(X)).scores_, dense.scores_, rtol=1e-9)
    labelled = ParzenISESelector(**QUICK).fit(X, np.arange(X.shape[0]) % 3)
    np.testing.assert_array_equal(labelled.scores_, dense.scores_)
    tags = ParzenISESelector().__sklearn_tags__()
    assert tags.target_tags.required is False and not hasattr(dense, "pvalues_")


def test_the_selection_is_the_spark_rule_on_the_scores():
    X = _iris()
    front = ParzenISESelector(num_features=2, **QUICK).fit(X)
    assert np.flatnonzero(front.get_support()).tolist() == sorted(np.argsort(-front.scores_, kind="mergesort")[:2])
    front.set_params(num_features=None, selection_mode="percentile", selection_threshold=0.75)
    assert front.get_support().sum() == 3
    with pytest.raises(ValueError, match="selection_mode"):
        ParzenISESelector(selection_mode="fdr").fit(X)  # no p-values


def test_bad_input_and_params_are_refused():
    X = _iris(12)
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        ParzenISESelector().fit(bad)
    with pytest.raises(InvalidInputError, match="needs at least 2 rows; X has n_samples = 1"):
        ParzenISESelector().fit(X[:1])
    with pytest.raises(ValueError, match="'num_clusters' parameter of ParzenISESelector must be at most the rows"):
        ParzenISESelector(num_clusters=5).fit(X[:4])
    with pytest.raises(ValueError, match=r"'held_out_feature' .* feature index in \[0, 3\]. Got 9 instead"):
        ParzenISESelector(held_out_feature=9).fit(X)
    with pytest.raises(ValueError, match=r"The 'fuzzifier' parameter of ParzenISESelector must be a float in the "
                                         r"range \(1, inf\). Got 1.0 instead."):
        ParzenISESelector(fuzzifier=1.0).fit(X)
    with pytest.raises(ValueError, match="distinct rows"):  # fuzzy c-means starts from 3 distinct rows
        ParzenISESelector().fit(np.ones((6, 2)))


def test_pandas_names_pipeline_and_grid_search():
    X, clusters = _two_clusters(3, n=60)
    frame = pd.DataFrame(X, columns=["site", "spread", "noise"])
    front = ParzenISESelector(num_features=1, num_clusters=2).fit(frame)
    assert list(front.feature_names_in_) == list(frame.columns)
    assert list(front.get_feature_names_out()) == [frame.columns[int(np.argmax(front.scores_))]]
    search = GridSearchCV(make_pipeline(ParzenISESelector(num_clusters=2, **QUICK), LogisticRegression()),
                          {"parzeniseselector__num_features": [1, 2]},
                          cv=StratifiedKFold(3, shuffle=True, random_state=0)).fit(frame, clusters)
    assert search.best_estimator_[0].get_support().sum() == search.best_params_["parzeniseselector__num_features"]


def _sparse_rows(n=48, p=10, seed=3):
    """Sparse rows with a denser feature (0) and a cluster signal in features 1-3."""
    rng = np.random.default_rng(seed)
    X = (sp.random(n, p, density=0.2, random_state=seed, format="csr") * 4.0).toarray()
    X[:, 0] = np.where(rng.random(n) < 0.7, rng.exponential(1.0, n) + 0.1, 0.0)
    X[np.arange(n), 1 + np.arange(n) % 3] += 2.0
    return sp.csr_matrix(X)


def _spark_scores(spark, X, partitions, **params):
    """The Spark selector's ``model.scores`` on the rows of X without a label column (FCM groups)."""
    from sparkfs.selectors.parzen_ise import ParzenISERanker
    from tests.helpers import make_df

    camel = {"max_iter": "maxIter", "fcm_max_iter": "fcmMaxIter", "seed": "seed", "landmarks": "landmarks",
             "criterion": "criterion", "memberships": "memberships", "sample_size": "sampleSize",
             "num_clusters": "numClusters"}
    df = make_df(spark, X, np.zeros(X.shape[0]), partitions=partitions, sparse=sp.issparse(X)).drop("label")
    return ParzenISERanker(numFeatures=2, **{camel[k]: v for k, v in params.items()}).fit(df)


@pytest.mark.parametrize("partitions, sparse", [(1, False), (3, True)], ids=["1-dense", "3-sparse"])
def test_every_row_gives_the_spark_selectors_scores(spark, partitions, sparse):
    X = _sparse_rows() if sparse else _iris()
    model = _spark_scores(spark, X, partitions, **QUICK)
    front = ParzenISESelector(num_features=2, **QUICK).fit(X)
    np.testing.assert_allclose(front.scores_, model.scores, rtol=1e-9, atol=1e-14)
    assert np.flatnonzero(front.get_support()).tolist() == list(model.selectedFeatures)
    assert front.held_out_feature_ == model.summary["held_out_feature"]
    assert model.summary["row_sample"] == "every row" and model.summary.get("sparse_pairs", {}).get(
        "estimated_features", 0) == 0


def test_landmarks_and_soft_memberships_give_the_spark_selectors_scores(spark):
    """The landmark queries drawn by seed + 1, on the image reading, 3 partitions."""
    X = _iris()
    params = dict(QUICK, landmarks=15, criterion="image", memberships="soft", num_clusters=2)
    model = _spark_scores(spark, X, 3, **params)
    front = ParzenISESelector(num_features=2, **params).fit(X)
    assert model.summary["num_queries"] == 15
    np.testing.assert_allclose(front.scores_, model.scores, rtol=1e-9, atol=1e-14)


def test_the_default_sample_is_the_spark_selectors(spark, monkeypatch):
    """rows x rows x features over the budget: both fit on the 30 rows the same seed draws (announced)."""
    from sparkfs.selectors import parzen_ise as ranker_module

    X = _iris(50)
    for module in (ranker_module, front_module):
        monkeypatch.setattr(module, "DEFAULT_PAIR_BUDGET", 30 * 30 * 4)
        monkeypatch.setattr(module, "MIN_DEFAULT_SAMPLE", 10)
    with pytest.warns(DefaultSampleWarning, match="so the fit runs on 30 rows drawn by seed 1"):
        front = ParzenISESelector(num_features=2, **QUICK).fit(X)
    with pytest.warns(DefaultSampleWarning):
        model = _spark_scores(spark, X, 1, **QUICK)
    assert (model.summary["sample_rows"], front.sample_rows_) == (30, 30)
    np.testing.assert_allclose(front.scores_, model.scores, rtol=1e-9, atol=1e-14)


def test_sparse_features_estimated_by_landmarks_are_the_spark_selectors(spark, monkeypatch):
    """Sparse pairs over their budget with every row asked for: the features of many stored values
    against the landmark rows the same seed draws, scaled by rows / landmarks."""
    from sparkfs.selectors import parzen_ise as ranker_module
    from sparkfs.spark.parzen_ise_sparse import SparsePairSettings

    X = _sparse_rows()
    monkeypatch.setattr(ranker_module, "SPARSE_SETTINGS", SparsePairSettings(500, 20, 16))
    for name, value in (("SPARSE_PAIR_BUDGET", 500), ("SPARSE_FEATURE_ROWS", 20), ("SPARSE_LANDMARKS", 16)):
        monkeypatch.setattr(front_module, name, value)
    model = _spark_scores(spark, X, 1, sample_size=X.shape[0], **QUICK)
    front = ParzenISESelector(num_features=2, sample_size=X.shape[0], **QUICK).fit(X)
    assert model.summary["sparse_pairs"]["estimated_features"] > 0
    np.testing.assert_allclose(front.scores_, model.scores, rtol=1e-9, atol=1e-14)
    exact = ParzenISESelector(num_features=2, sample_size=X.shape[0], **QUICK)
    monkeypatch.setattr(front_module, "SPARSE_PAIR_BUDGET", 1e12)
    assert not np.allclose(exact.fit(X).scores_, front.scores_, rtol=1e-6)  # the estimate is not the exact sums
