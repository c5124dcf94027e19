"""The resumable stability study (sparkfs.evaluation.stability_runs), with NumPy fits (no Spark)."""

import json
from itertools import combinations

import numpy as np
import pyarrow.parquet as pq
import pytest

from sparkfs.core.svm_rfe import stratified_bootstrap
from sparkfs.evaluation.stability_runs import (
    RunResult,
    StabilityStudy,
    StudyMismatchError,
    subsample_plan,
    weight_path_terms,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
N_FEATURES = 12
DESCRIPTION = {"method": "mean-difference", "params": {"k": 4}, "input": "synthetic"}


def synthetic_data(seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], [30, 20])
    X = rng.standard_normal((y.size, N_FEATURES))
    X[:, :4] += 0.8 * y[:, None]
    return X, y


def mean_difference_fit(X, y, calls=None, fail_at=None):
    """Scores |class mean difference|, weights the difference, and a 3-step elimination path."""
    def fit_run(index, rows):
        if calls is not None:
            calls.append(index)
        if index == fail_at:
            raise RuntimeError("interrupted")
        difference = X[rows][y[rows] == 1].mean(axis=0) - X[rows][y[rows] == 0].mean(axis=0)
        order = np.argsort(-np.abs(difference), kind="mergesort")
        path = []
        for remaining in (12, 6, 3):
            kept = np.zeros(N_FEATURES)
            kept[order[:remaining]] = np.abs(difference[order[:remaining]])
            path.append(kept / kept.sum())
        return RunResult(np.abs(difference), difference, np.array(path), np.array([12, 6, 3]), seconds=0.01,
                         info={"rows": int(rows.size)})
    return fit_run


def make_study(directory, plan, description=DESCRIPTION, truth=True):
    relevance = np.r_[np.full(4, 0.25), np.zeros(N_FEATURES - 4)] if truth else None
    return StabilityStudy(directory, plan, [2, 4, 8], N_FEATURES, description=description,
                          true_relevance=relevance)


@pytest.fixture(scope="module")
def data_and_plan():
    X, y = synthetic_data()
    return X, y, subsample_plan(y, 6, sample_fraction=0.7, seed=3)


# --- subsample_plan -----------------------------------------------------------------------------


def test_subsamples_are_stratified_sorted_and_distinct():
    labels = np.repeat(["a", "b", "c"], [10, 5, 1])
    for rows in subsample_plan(labels, 4, sample_fraction=0.5, seed=1):
        assert np.all(np.diff(rows) > 0)
        kept = labels[rows]
        assert [(kept == c).sum() for c in "abc"] == [5, 3, 1]  # 2.5 rounds half up, 0.5 -> 1


def test_plan_is_deterministic_and_run_i_does_not_depend_on_the_number_of_runs():
    labels = np.repeat([0, 1], [40, 25])
    for options in ({"sample_fraction": 0.6}, {"bootstrap": True}):
        short = subsample_plan(labels, 3, seed=7, **options)
        long = subsample_plan(labels, 8, seed=7, **options)
        again = subsample_plan(labels, 3, seed=7, **options)
        assert all(np.array_equal(a, b) and np.array_equal(a, c) for a, b, c in zip(short, long, again))
        assert not np.array_equal(short[0], short[1])
        assert not np.array_equal(short[0], subsample_plan(labels, 3, seed=8, **options)[0])


def test_bootstrap_draws_as_the_core_stratified_bootstrap():
    labels = np.random.default_rng(1).integers(0, 3, 50)
    children = np.random.SeedSequence(5).spawn(4)
    reference = [stratified_bootstrap(labels, np.random.default_rng(child)) for child in children]
    assert all(np.array_equal(a, b) for a, b in zip(subsample_plan(labels, 4, bootstrap=True, seed=5), reference))


def test_bootstrap_draws_each_class_size_with_repeats():
    labels = np.repeat([0, 1], [30, 10])
    plan = subsample_plan(labels, 5, bootstrap=True)
    for rows in plan:
        assert np.all(np.diff(rows) >= 0)
        assert np.bincount(labels[rows]).tolist() == [30, 10]
    assert any(np.unique(rows).size < rows.size for rows in plan)


def test_unlabelled_plan_uses_n_rows():
    plan = subsample_plan(None, 2, sample_fraction=0.25, n_rows=10)
    assert [rows.size for rows in plan] == [3, 3] and all(rows.max() < 10 for rows in plan)


@pytest.mark.parametrize("labels, runs, options, parameter", [
    ([0, 1, 1], 1, {"sample_fraction": 0.5}, "'runs'"),
    ([0, 1, 1], 2.0, {"sample_fraction": 0.5}, "'runs'"),
    ([0, 1, 1], 2, {"sample_fraction": 1.0}, "'sample_fraction'"),
    ([0, 1, 1], 2, {"sample_fraction": 0.0}, "'sample_fraction'"),
    ([0, 1, 1], 2, {}, "'sample_fraction'"),
    ([0, 1, 1], 2, {"sample_fraction": 0.5, "bootstrap": True}, "'sample_fraction'"),
    ([0, 1, 1, 1, 1, 1], 2, {"sample_fraction": 0.3}, "'sample_fraction'.*class 0"),
    ([0, 1, 1], 2, {"bootstrap": True, "seed": -1}, "'seed'"),
    (None, 2, {"bootstrap": True}, "'n_rows'"),
    ([[0, 1]], 2, {"bootstrap": True}, "'labels'"),
])
def test_bad_plan_parameters_are_named(labels, runs, options, parameter):
    with pytest.raises(ValueError, match=parameter):
        subsample_plan(labels, runs, **options)


# --- the study: resume, threads, fingerprint ----------------------------------------------------


def test_interrupted_study_resumes_to_the_same_summary(tmp_path, data_and_plan):
    X, y, plan = data_and_plan
    reference = make_study(tmp_path / "whole", plan)
    reference.run(mean_difference_fit(X, y), progress=lambda message: None)

    interrupted = make_study(tmp_path / "resumed", plan)
    first_calls = []
    with pytest.raises(RuntimeError, match="interrupted"):
        interrupted.run(mean_difference_fit(X, y, first_calls, fail_at=3), progress=lambda message: None)
    assert first_calls == [0, 1, 2, 3] and interrupted.completed_runs() == [0, 1, 2]
    assert not list((tmp_path / "resumed" / "runs").glob(".*"))
    with pytest.raises(RuntimeError, match="misses 3 of 6 runs"):
        interrupted.summary()

    second_calls, messages = [], []
    resumed = make_study(tmp_path / "resumed", plan)
    assert resumed.run(mean_difference_fit(X, y, second_calls), progress=messages.append) == [3, 4, 5]
    assert second_calls == [3, 4, 5]
    assert messages[0] == "run 4 of 6 done (0.0 s); about 0 s left" and len(messages) == 3
    assert resumed.summary() == reference.summary()
    assert json.dumps(resumed.summary()) == json.dumps(reference.summary())
    assert resumed.run(mean_difference_fit(X, y, second_calls)) == [] and len(second_calls) == 3


def test_two_threads_give_the_same_summary(tmp_path, data_and_plan):
    X, y, plan = data_and_plan
    one, two = make_study(tmp_path / "one", plan), make_study(tmp_path / "two", plan)
    one.run(mean_difference_fit(X, y), progress=lambda message: None)
    calls = []
    two.run(mean_difference_fit(X, y, calls), parallelism=2, progress=lambda message: None)
    assert sorted(calls) == list(range(len(plan)))
    assert two.summary() == one.summary()
    assert plan[0].flags.writeable  # the study froze its own copy, not the caller's arrays


def test_a_failing_run_in_a_thread_propagates_and_keeps_the_saved_runs(tmp_path, data_and_plan):
    X, y, plan = data_and_plan
    study = make_study(tmp_path, plan)
    with pytest.raises(RuntimeError, match="interrupted"):
        study.run(mean_difference_fit(X, y, fail_at=0), parallelism=2, progress=lambda message: None)
    assert 0 not in study.completed_runs()
    assert not list((tmp_path / "runs").glob(".*"))


def test_another_study_in_the_same_directory_is_refused(tmp_path, data_and_plan):
    X, y, plan = data_and_plan
    make_study(tmp_path, plan).run(mean_difference_fit(X, y), progress=lambda message: None)
    other = make_study(tmp_path, plan, description={**DESCRIPTION, "params": {"k": 5}})
    with pytest.raises(StudyMismatchError, match="description differ.*another output directory"):
        other.run(mean_difference_fit(X, y))
    reordered = make_study(tmp_path, plan[::-1])
    with pytest.raises(StudyMismatchError, match="plan_sha256"):
        reordered.summary()
    make_study(tmp_path, plan, truth=False).summary()  # the true relevance is not part of the fingerprint


# --- the numbers ----------------------------------------------------------------------------------


def test_kuncheva_and_jaccard_match_eq_9_by_hand(tmp_path):
    d, k = 10, 3
    top_sets = [{0, 1, 2}, {0, 1, 3}, {4, 5, 6}]

    def fit_run(index, rows):
        scores = np.zeros(d)
        scores[sorted(top_sets[index])] = [3.0, 2.0, 1.0]
        return RunResult(scores)

    study = StabilityStudy(tmp_path, [np.arange(5)] * 3, [k], d, description={"method": "fake"})
    study.run(fit_run, progress=lambda message: None)
    kuncheva = [(len(a & b) - k * k / d) / (k - k * k / d) for a, b in combinations(top_sets, 2)]
    jaccard = [len(a & b) / len(a | b) for a, b in combinations(top_sets, 2)]
    summary = study.summary()
    assert summary["subsets"] == [{"k": 3, "kuncheva": pytest.approx(sum(kuncheva) / 3, abs=1e-15),
                                   "jaccard": pytest.approx(sum(jaccard) / 3, abs=1e-15)}]
    assert summary["subsets"][0]["kuncheva"] == pytest.approx(-1 / 9)
    assert summary["weights"] is None and summary["rfe_path"] is None


def test_weight_terms_match_a_numpy_reference(tmp_path, data_and_plan):
    X, y, plan = data_and_plan
    study = make_study(tmp_path, plan)
    study.run(mean_difference_fit(X, y), progress=lambda message: None)
    fit = mean_difference_fit(X, y)
    results = [fit(i, rows) for i, rows in enumerate(plan)]
    weights = np.abs([r.weights for r in results])
    weights /= weights.sum(axis=1, keepdims=True)
    truth = study.true_relevance
    summary = study.summary()
    assert summary["weights"]["variance"] == pytest.approx(weights.var(axis=0).mean(), rel=1e-12)
    assert summary["weights"]["bias"] == pytest.approx(((weights.mean(axis=0) - truth) ** 2).mean(), rel=1e-12)
    assert summary["weights"]["error"] == pytest.approx(((weights - truth) ** 2).mean(), rel=1e-12)
    assert [row["remaining"] for row in summary["rfe_path"]] == [12, 6, 3]
    last = np.array([r.weight_path[-1] for r in results])
    assert summary["rfe_path"][-1]["variance"] == pytest.approx(last.var(axis=0).mean(), rel=1e-12)
    assert weight_path_terms(np.stack([r.weight_path for r in results])).bias is None


def test_different_elimination_sequences_leave_the_path_out_with_a_warning(tmp_path):
    def fit_run(index, rows):
        path = np.full((2, 4), 0.25)
        return RunResult(np.arange(4.0), None, path, np.array([4, 3 - index]))

    study = StabilityStudy(tmp_path, [np.arange(3)] * 2, [2], 4, description={})
    study.run(fit_run, progress=lambda message: None)
    with pytest.warns(UserWarning, match="different numbers"):
        assert study.summary()["rfe_path"] is None


def test_a_malformed_result_is_refused_before_it_is_saved(tmp_path):
    study = StabilityStudy(tmp_path, [np.arange(3)] * 2, [2], 4, description={})
    with pytest.raises(ValueError, match=r"run 0: 'scores' must have shape \(4,\)"):
        study.run(lambda index, rows: RunResult(np.zeros(5)), progress=lambda message: None)
    assert study.completed_runs() == []


# --- outputs --------------------------------------------------------------------------------------


def test_outputs_are_written_and_valid(tmp_path, data_and_plan):
    X, y, plan = data_and_plan
    study = make_study(tmp_path, plan)
    study.run(mean_difference_fit(X, y), progress=lambda message: None)
    written = study.write_outputs()
    assert sorted(path.name for path in written) == ["rfe_path.png", "runs.parquet", "stability.json",
                                                      "stability.png"]
    for name in ("stability.png", "rfe_path.png"):
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC
    document = json.loads((tmp_path / "stability.json").read_text())
    assert document["summary"] == study.summary() and document["description"] == DESCRIPTION
    assert document["runs"] == 6 and document["seconds"] == [0.01] * 6 and document["run_info"][0]["rows"] > 0
    table = pq.read_table(tmp_path / "runs.parquet").to_pandas()
    assert len(table) == 6 * 3 and table.columns.tolist() == ["run", "k", "selected", "seconds"]
    assert (table["selected"].map(len) == table["k"]).all()
    assert list(table.loc[(table.run == 2) & (table.k == 4), "selected"].iloc[0]) == sorted(
        np.argsort(-mean_difference_fit(X, y)(2, plan[2]).scores, kind="mergesort")[:4].tolist())
    leftovers = [p.name for p in tmp_path.rglob("*") if p.name.startswith(".")]
    assert leftovers == []


def test_importing_the_module_leaves_the_pyplot_backend_alone():
    import subprocess
    import sys
    code = ("import sys, sparkfs.evaluation.stability_runs as m; "
            "print('matplotlib.pyplot' in sys.modules)")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"
