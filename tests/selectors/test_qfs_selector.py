"""QFS through FisherMarkovSelector(degree=2): brute-force optimum, partitions, paper checks, CLI."""

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from sparkfs import FisherMarkovSelector
from sparkfs.cli import main
from tests.core.test_qfs import literal_pairwise_eq29, literal_unary_eq19
from tests.helpers import make_df, random_sparse
from tests.selectors.test_lfs import synthetic_2


def brute_force_best(unary, pairwise, beta):
    p = len(unary)
    best, best_value = None, -np.inf
    for bits in itertools.product([0, 1], repeat=p):
        a = np.array(bits, dtype=float)
        value = (unary - beta) @ a + 0.5 * a @ pairwise @ a
        if value > best_value + 1e-12:
            best, best_value = a, value
    return set(np.flatnonzero(best).tolist()), best_value


@pytest.mark.parametrize("partitions", [1, 4])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("kernel", ["qfs", "qfs-prime"])
def test_qfs_selection_is_the_brute_force_optimum(spark, partitions, sparse, kernel):
    if sparse:
        X, y = random_sparse(48, 9, 0.4, seed=3, classes=3)
        dense = X.toarray()
    else:
        rng = np.random.default_rng(3)
        dense = rng.normal(size=(48, 9)) * np.linspace(0.5, 2, 9)
        y = rng.integers(0, 3, 48)
        dense[y == 1, :3] += 1.5
        X = dense
    gamma = -0.5
    unary = literal_unary_eq19(dense, y, gamma) if kernel == "qfs" else np.zeros(9)
    pairwise = literal_pairwise_eq29(dense, y, gamma)
    values = unary + 0.5 * np.diag(pairwise) + 0.5 * np.sort(pairwise, axis=1)[:, ::-1][:, :4].sum(1)
    beta = float(np.median(values))
    expected, _ = brute_force_best(unary, pairwise, beta)
    model = FisherMarkovSelector(degree=2, preset="paper", kernel=kernel, gamma=gamma, threshold=beta).fit(
        make_df(spark, X, y, partitions=partitions))
    assert set(model.selectedFeatures) == expected
    assert model.summary["certified_optimal"] and model.summary["n_violating_pairs"] == 0
    assert model.summary["method"] == kernel


def brute_force_best_of_size(unary, pairwise, k):
    """The best k-subset of f0(a) = unary . a + 1/2 a' P a, and whether it is the only one."""
    values = {}
    for subset in itertools.combinations(range(len(unary)), k):
        a = np.zeros(len(unary))
        a[list(subset)] = 1.0
        values[subset] = unary @ a + 0.5 * a @ pairwise @ a
    ordered = sorted(values.values(), reverse=True)
    return set(max(values, key=values.get)), len(ordered) == 1 or ordered[0] - ordered[1] > 1e-9


def test_selections_for_counts_are_the_best_subsets_of_each_size(spark, tmp_path):
    """selectionsForCounts of a QFS model: for each k, what a fit with numFeatures=k selects; when
    that has k features it is the best k-subset of the QFS objective (brute force over all
    k-subsets, from eq. 19 and 29 written in the tests), ordered by theta_j; LFS gives the
    ranking's prefixes. The objective is not saved: a loaded QFS model says to refit."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 8)) * np.linspace(0.5, 2.0, 8)
    y = rng.integers(0, 3, 60)
    X[y == 1, :3] += 1.2
    X[y == 2, 5] -= 1.0
    df = make_df(spark, X, y, partitions=3)
    gamma = -0.5
    unary, pairwise = literal_unary_eq19(X, y, gamma), literal_pairwise_eq29(X, y, gamma)
    model = FisherMarkovSelector(degree=2, preset="paper", gamma=gamma, numFeatures=4).fit(df)
    counts = list(range(1, 9))
    selections = model.selectionsForCounts(counts)
    assert sorted(selections) == counts
    exact = 0
    for k in counts:
        chosen = selections[k]
        if k in (2, 5):  # as a fit with numFeatures=k (two refits: suite time)
            refit = FisherMarkovSelector(degree=2, preset="paper", gamma=gamma, numFeatures=k).fit(df)
            assert sorted(chosen.tolist()) == refit.selectedFeatures
            assert refit.summary["requested_reachable"] == (chosen.size == k)
        assert np.all(np.diff(model.scores[chosen]) <= 0)  # best theta_j first
        if chosen.size == k:
            best, unique = brute_force_best_of_size(unary, pairwise, k)
            if unique:
                assert set(chosen.tolist()) == best
                exact += 1
    assert exact >= 4
    lfs = FisherMarkovSelector(numFeatures=2).fit(df)
    assert {k: v.tolist() for k, v in lfs.selectionsForCounts([1, 3]).items()} == {
        1: lfs.ranking[:1].tolist(), 3: lfs.ranking[:3].tolist()}
    with pytest.raises(ValueError, match=r"each count must be an int in the range \[1, 8\].*got 9"):
        model.selectionsForCounts([2, 9])
    model.write().overwrite().save(str(tmp_path / "qfs"))
    from sparkfs.selectors.fisher_markov import FisherMarkovSelectorModel

    with pytest.raises(ValueError, match="not saved.*refit"):
        FisherMarkovSelectorModel.load(str(tmp_path / "qfs")).selectionsForCounts([2])
    few = FisherMarkovSelector(degree=2, gamma=gamma, numFeatures=2, candidates=3).fit(df)
    with pytest.raises(ValueError, match=r"\[4\] exceed the QFS candidate set \(3 features\)"):
        few.selectionsForCounts([1, 4])


def test_synthetic_2_qfs_selects_x1_x2(spark):
    """Fig. 7: two features give x1, x2. Reproduced at gamma = 0 and gamma = 'auto' (Corollary IV.5,
    about 1e-9 here), raw or centred; at the paper's gamma = -0.5 the variance term makes the N(0, 20)
    noise enter first, all 50 at once (pinned in tests/core/test_qfs.py)."""
    X, y = synthetic_2(600, np.random.default_rng(0))
    df = make_df(spark, X, y, partitions=3)
    for gamma in (0.0, "auto"):
        model = FisherMarkovSelector(degree=2, preset="paper", numFeatures=2, gamma=gamma).fit(df)
        assert model.selectedFeatures == [0, 1]
        assert model.summary["requested_reachable"] and model.summary["certified_optimal"]
    paper_gamma = FisherMarkovSelector(degree=2, preset="paper", numFeatures=2, gamma=-0.5).fit(df)
    assert not paper_gamma.summary["requested_reachable"]
    assert paper_gamma.summary["nearest_sizes"] == [0, 50]


def test_gamma_auto_reports_gamma_max_exact(spark):
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(40, 6)), rng.integers(0, 2, 40)
    model = FisherMarkovSelector(degree=2, gamma="auto", threshold=0.0).fit(make_df(spark, X, y))
    assert model.summary["gamma"] == model.summary["gamma_max_exact"] >= 0
    assert model.summary["n_violating_pairs"] == 0


def test_driver_budget_refuses_too_many_candidates(spark):
    rng = np.random.default_rng(2)
    df = make_df(spark, rng.normal(size=(20, 30)), rng.integers(0, 2, 20))
    with pytest.raises(ValueError,
                       match=r"QFS on 30 candidate features with 2 classes needs .* use at most \d+ candidates "
                                         r"or raise driverMemoryMB"):
        FisherMarkovSelector(degree=2, driverMemoryMB=0.01, numFeatures=3).fit(df)


def test_gamma_auto_needs_degree_2(spark):
    df = make_df(spark, np.eye(4), [0, 1, 0, 1])
    with pytest.raises(ValueError, match="'auto' only with degree=2"):
        FisherMarkovSelector(gamma="auto").fit(df)


def test_microarray_lfs_prefilter_then_qfs_through_cli(spark, shared_data, tmp_path):
    """colon (62 x 2,000): top 200 by LFS theta, centred QFS, exact min-cut, via the CLI."""
    data = np.load(shared_data / "colon.npz")
    import pandas as pd

    frame = pd.DataFrame(data["X"], columns=[f"g{i}" for i in range(data["X"].shape[1])])
    frame["tissue"] = np.array(data["class_names"])[data["y"]].astype(str)
    frame.to_parquet(tmp_path / "colon.parquet")
    out = tmp_path / "out"
    code = main(["select", "--master", "local[2]", "--input", str(tmp_path / "colon.parquet"), "--format", "parquet",
                 "--label-col", "tissue", "--method", "qfs", "--num-features", "10", "--param", "candidates=200",
                 "--param", "center=true", "--param", "scaling=standard", "--output", str(out)])
    assert code == 0
    summary = json.loads(Path(out, "summary.json").read_text())
    assert summary["method"] == "qfs" and summary["candidates"] == 200 and summary["n_features"] == 2000
    assert summary["certified_optimal"] and summary["gamma_max_exact"] >= 0
    table = pd.read_parquet(out / "features.parquet")
    assert table["selected"].sum() in summary["nearest_sizes"] or table["selected"].sum() == 10
    lfs_top = set(table.nsmallest(200, "rank")["index"])
    assert set(table.loc[table.selected, "index"]) <= lfs_top


def test_unset_candidates_take_the_features_asked_for_when_more_and_the_summary_says_how(spark, monkeypatch):
    """candidates unset: the default, or the features asked for when that is more
    (--num-features 1000 must not hit the 500 default); set: as given."""
    from sparkfs.selectors import fisher_markov

    monkeypatch.setattr(fisher_markov, "DEFAULT_CANDIDATES", 4)
    rng = np.random.default_rng(5)
    df = make_df(spark, rng.normal(size=(40, 12)), rng.integers(0, 2, 40))

    def fitted(**params):
        model = FisherMarkovSelector(degree=2, gamma=0.0, **params).fit(df)
        return model.summary["candidates"], model.summary["candidates_rule"].split(" (")[0], len(model.selectedFeatures)

    assert fitted(numFeatures=1)[:2] == (4, "4")
    assert fitted(numFeatures=6) == (6, "the features asked for", 6)
    assert fitted(numFeatures=3, candidates=5)[:2] == (5, "set")
    monkeypatch.setattr(fisher_markov, "DEFAULT_GRAM_TASK_BYTES", 8 * 3 * 6 * 6 - 1)
    with pytest.raises(ValueError, match=r"numFeatures=6 is more than the 4 QFS candidates of the default.*set "
                                         r"candidates \(at least 6"):
        fitted(numFeatures=6)
    assert fitted(numFeatures=6, candidates=6)[:2] == (6, "set")  # set: the user's choice


def test_fewer_candidates_than_features_asked_for_is_refused_before_the_gram_pass(spark, tmp_path, capsys):
    import pandas as pd

    rng = np.random.default_rng(6)
    frame = pd.DataFrame(rng.normal(size=(30, 8)), columns=[f"f{j}" for j in range(8)])
    frame["label"] = np.arange(30) % 2
    frame.to_parquet(tmp_path / "small.parquet")
    out = tmp_path / "out"
    code = main(["select", "--input", str(tmp_path / "small.parquet"), "--format", "parquet", "--method", "qfs",
                 "--num-features", "5", "--param", "candidates=3", "--output", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert ("sparkfs: error: numFeatures=5 is larger than the QFS candidate set (candidates=3); raise 'candidates' "
            "to at least 5 or ask for fewer features") in err
