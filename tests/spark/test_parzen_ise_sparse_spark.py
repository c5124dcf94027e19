"""Parzen-ISE's marginal criterion on sparse rows (sparkfs.spark.parzen_ise_sparse): the same terms and
weights as the in-memory dense model (sparkfs.core) on the densified rows, for 1 and 3 partitions and 1
and 7 files; the landmark estimate of a feature above the cap against a NumPy reference of the scaled
sample sum; the selector's default rule on numbers."""

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.core import parzen_ise_marginal as pim
from sparkfs.core.options import ParzenISEOptions
from sparkfs.core.parzen_ise import parzen_ise_in_memory
from sparkfs.core.parzen_ise_sparse import sparse_pair_plan
from sparkfs.core.sampling import content_sample_keys, smallest_key_positions
from sparkfs.spark import parzen_ise_sparse as spis
from sparkfs.spark.parzen_ise import parzen_ise_statistics
from tests.helpers import make_df

TOL = 1e-9
OPTIONS = dict(criterion="marginal", fixed_feature="auto", max_iter=4, tol=0.0, fcm_max_iter=5, seed=0,
               rank_by="reference")


def assert_close(got, want, tol=TOL):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert got.shape == want.shape
    scale = max(np.max(np.abs(want), initial=0.0), 1e-300)
    assert np.max(np.abs(got - want), initial=0.0) <= tol * scale, np.max(np.abs(got - want)) / scale


def sparse_data(n=60, p=12, seed=3):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=0.15, random_state=seed, format="csr") * 4.0
    X = X.toarray()
    X[:, 0] = np.where(rng.random(n) < 0.6, rng.exponential(1.0, n) + 0.1, 0.0)  # a denser feature
    y = rng.integers(0, 3, n)
    X[np.arange(n), 1 + y] += 1.0  # a class signal in features 1-3
    return sp.csr_matrix(X), y


def fit(spark, df, labelled, **extra):
    options = ParzenISEOptions(**dict(OPTIONS, **extra))
    if labelled:
        return parzen_ise_statistics(df, "features", "label", num_features=12, num_classes=3, options=options)
    return parzen_ise_statistics(df, "features", num_features=12, options=options)


@pytest.mark.parametrize("partitions,labelled", [(1, True), (3, True), (3, False)])
def test_every_row_equals_the_dense_in_memory_fit(spark, partitions, labelled):
    X, y = sparse_data()
    want, want_info = parzen_ise_in_memory(X.toarray(), y if labelled else None, **OPTIONS)
    result = fit(spark, make_df(spark, X, y, partitions), labelled)
    assert result.info["sparse_pairs"]["estimated_features"] == 0
    assert result.info["num_queries"] == 60 and result.groups == ("labels" if labelled else "fcm")
    assert_close(result.info["variances"], want_info["variances"])
    assert [r["passes"] for r in result.info["runs"]] == [r["passes"] for r in want_info["runs"]]
    assert result.info["fixed_feature"] == want_info["fixed_feature"]
    assert_close(result.info["runs"][-1]["weights"], want)
    assert_close(result.info["runs"][0]["self_sums"], want_info["runs"][0]["self_sums"])
    assert_close(result.scores, want_info["scores"])


def test_one_and_seven_files_give_the_same_fit(spark, tmp_path):
    X, y = sparse_data(seed=5)
    frame = make_df(spark, X, y, 1)
    frame.write.parquet(str(tmp_path / "one"))
    frame.repartition(7).write.parquet(str(tmp_path / "seven"))
    _, want_info = parzen_ise_in_memory(X.toarray(), y, **OPTIONS)
    results = []
    for name, files in (("one", 1), ("seven", 7)):
        df = spark.read.parquet(str(tmp_path / name))
        assert len([f for f in (tmp_path / name).iterdir() if f.suffix == ".parquet"]) == files
        results.append(fit(spark, df, True))  # the rows in another order: the same sums to rounding
    for result in results:
        assert_close(result.scores, want_info["scores"], tol=1e-8)
        assert_close(result.info["runs"][-1]["weights"], want_info["runs"][-1]["weights"], tol=1e-8)
    assert_close(results[0].scores, results[1].scores)


def landmark_reference(X, y, setup, feature, w, h, variances_scaled):
    """N/M times the dense pair sums of one feature over every row i and the landmark rows j."""
    dense = X.toarray()
    mean, var = dense.mean(axis=0), dense.var(axis=0)
    scaled, _ = pim.standardised(dense - mean, var, np.ones((3, dense.shape[1])))
    U = np.eye(3)[y]
    L = setup.landmark_positions
    terms = pim.marginal_block_terms(scaled[L], U[L], scaled, U, variances_scaled, w, h=h, with_self=True)
    factor = dense.shape[0] / L.size
    return factor * np.concatenate(([terms.self_sums[feature]], terms.cross[:, feature], terms.own[:, feature]))


def test_a_feature_above_the_cap_is_estimated_by_landmarks(spark):
    """Budget below the exact pairs, cap below feature 0's count: feature 0 against 20 landmarks (the rows
    of smallest content key by seed + 1), scaled by N / M; the others exact."""
    X, y = sparse_data(seed=7)
    counts = np.diff(sp.csc_matrix(X).indptr)
    settings = spis.SparsePairSettings(pair_budget=float((counts ** 2).sum() - 1), feature_rows=int(counts[0]) - 1,
                                       landmarks=20)
    assert counts[0] > counts[1:].max()
    df = make_df(spark, X, y, 2)
    options = dict(OPTIONS, fixed_feature=None, max_iter=1)
    result = parzen_ise_statistics(df, "features", "label", num_features=12, num_classes=3, sparse_pairs=settings,
                                   options=ParzenISEOptions(**options))
    assert result.info["sparse_pairs"] == {"exact_features": 11, "estimated_features": 1, "landmarks": 20,
                                           "pairs": pytest.approx(float((counts[1:] ** 2).sum())
                                                                  + 20 * counts[0] ** 2 / 60)}
    # the pass's terms at one w against NumPy on the densified rows
    from sparkfs.spark.method_setup import EngineOptions

    dense = X.toarray()
    mean, var = dense.mean(axis=0), dense.var(axis=0)
    keys = content_sample_keys(X, y, None, options["seed"] + 1)
    landmarks = np.sort(smallest_key_positions(keys, np.arange(60), 20))
    variances = result.info["variances"]
    _, scaled_variances = pim.standardised(np.zeros((0, 12)), var, variances)
    w = np.linspace(0.0, 0.2, 12)
    engine = EngineOptions()
    with engine.rows(df, "features", "label", num_features=12, num_classes=3, cache_blocks=True) as rows:
        queries = rows.collect()
        grouping = {"centres": None, "num_groups": 3, "mean": mean}
        memberships = np.eye(3)[queries.labels]
        setup = spis.prepare_sparse_marginal(queries, memberships, mean, var, settings, options["seed"] + 1)
        np.testing.assert_array_equal(setup.landmark_positions, landmarks)
        h = result.info["h"]
        terms = spis.sparse_marginal_terms_pass(rows, grouping, queries, memberships, setup, scaled_variances, w, h,
                                                True)
    got = np.concatenate(([terms.self_sums[0]], terms.cross[:, 0], terms.own[:, 0]))
    assert_close(got, landmark_reference(X, y, setup, 0, w, h, scaled_variances))
    # the exact features: every pair
    scaled, _ = pim.standardised(dense - mean, var, variances)
    U = np.eye(3)[y]
    every = pim.marginal_block_terms(scaled, U, scaled, U, scaled_variances, w, h=h, with_self=True)
    assert_close(terms.cross[:, 1:], every.cross[:, 1:])
    assert_close(terms.own[:, 1:], every.own[:, 1:])
    assert_close(terms.self_sums[1:], every.self_sums[1:])


#: Stored counts of the S corpus's terms (term_corpus(100000, 50000)) at some ranks, largest first.
S_RANKS = np.array([1, 11, 101, 618, 1001, 2001, 5001, 10001, 20001, 50000])
S_COUNTS = np.array([98083, 56293, 9914, 1999, 1281, 666, 272, 121, 56, 8])


def test_the_default_rule_on_the_s_corpus_numbers():
    """S (100,000 x 50,000; counts interpolated from its quantiles): all pairs are ~1e11, so the features
    above the cap are estimated by landmarks and every row fits the budget; an input whose
    exact part alone is above the budget does not fit (the selector falls back to a sample)."""
    num_rows = 100_000
    ranks = np.arange(1, 50_001)
    counts = np.round(np.exp(np.interp(np.log(ranks), np.log(S_RANKS), np.log(S_COUNTS)))).astype(np.int64)
    assert (counts.astype(float) ** 2).sum() > 1e11
    settings = spis.SparsePairSettings()
    plan = sparse_pair_plan(counts, num_rows, pair_budget=settings.pair_budget, feature_rows=settings.feature_rows,
                            landmarks=settings.landmarks)
    dense = counts > settings.feature_rows
    assert plan.num_estimated == dense.sum() and 1_000 < plan.num_estimated < 5_000
    assert plan.num_landmarks == settings.landmarks
    assert plan.exact_pairs == int((counts[~dense] ** 2).sum())
    dense_pairs = (counts[dense].astype(float) ** 2).sum()
    assert plan.landmark_pairs == pytest.approx(settings.landmarks * dense_pairs / num_rows)
    assert plan.pairs <= settings.pair_budget
    # every feature exact when all pairs fit; over the budget when the exact part alone is too large
    small = sparse_pair_plan(counts[-100:], num_rows, pair_budget=1e9, feature_rows=500, landmarks=500)
    assert small.exact.all() and small.num_landmarks == 0 and small.pairs == (counts[-100:] ** 2).sum()
    crowded = sparse_pair_plan(np.full(50_000, 450), num_rows, pair_budget=1.5e9, feature_rows=500, landmarks=500)
    assert crowded.exact.all() and crowded.pairs > 1.5e9


def test_ranker_default_announces_the_estimate_and_falls_back_when_even_it_exceeds(spark, monkeypatch):
    """rows x rows x features above the dense budget: on sparse vectors the ranker counts the non-zeros and
    fits every row when the sparse plan fits (the landmark estimate announced and in the summary), else the
    driver sample, saying that even the sparse pairs exceed their budget."""
    from sparkfs import DefaultSampleWarning, ParzenISERanker
    from sparkfs.selectors import parzen_ise as ranker_module

    X, y = sparse_data(seed=7)
    counts = np.diff(sp.csc_matrix(X).indptr)
    monkeypatch.setattr(ranker_module, "DEFAULT_PAIR_BUDGET", 30 * 30 * 12)
    monkeypatch.setattr(ranker_module, "MIN_DEFAULT_SAMPLE", 10)
    monkeypatch.setattr(ranker_module, "SPARSE_SETTINGS", spis.SparsePairSettings(
        pair_budget=float((counts ** 2).sum() - 1), feature_rows=int(counts[0]) - 1, landmarks=20))
    df = make_df(spark, X, y, 2)
    with pytest.warns(DefaultSampleWarning, match="the 1 features with more than .* estimated against 20 landmark"):
        model = ParzenISERanker(numFeatures=3, maxIter=1, heldOutFeature="none", rankBy="weights").fit(df)
    assert model.summary["row_sample"] == "every row" and model.summary["sample_rows"] == 60
    assert model.summary["sparse_pairs"]["estimated_features"] == 1
    assert model.summary["sparse_pairs"]["landmarks"] == 20
    monkeypatch.setattr(ranker_module, "SPARSE_SETTINGS", spis.SparsePairSettings(pair_budget=10.0))
    with pytest.warns(DefaultSampleWarning, match="even the sparse pair sums take .* so the fit runs on 30 rows"):
        sampled = ParzenISERanker(numFeatures=3, maxIter=1, heldOutFeature="none", rankBy="weights").fit(df)
    assert (sampled.summary["row_sample"], sampled.summary["sample_rows"]) == ("default", 30)
    assert "sparse_pairs" not in sampled.summary
