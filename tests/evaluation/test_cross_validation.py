"""Cross-validated evaluation (sparkfs.evaluation.cross_validation), with NumPy rankings (no Spark)."""

import json

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy import stats
from sklearn.feature_selection import f_classif
from sklearn.preprocessing import MinMaxScaler

from sparkfs.evaluation.baselines import baseline_scores, mutual_information_scores, random_scores
from sparkfs.evaluation.cross_validation import (
    CLASSIFIER_NAMES,
    EvaluationStudy,
    Fold,
    FoldSelection,
    StudyMismatchError,
    feature_counts,
    fold_plan,
    fold_seed,
    make_classifier,
    score_subsets,
)
from sparkfs.evaluation.result_tables import best_k_table, load_results, summary_table, write_results
from sparkfs.evaluation.significance import paired_t_test_across_folds, wilcoxon_across_datasets

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def quiet(_message):
    pass


def informative_data(seed=0, n_features=12):
    """Three classes; features 0-2 carry the class, the others are noise."""
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], [24, 18, 12])
    X = rng.standard_normal((y.size, n_features))
    X[:, :3] += 2.5 * np.eye(3)[y]
    return X, y


def fold_data(X, y):
    def data_for_fold(fold, columns):
        return X[fold.train][:, columns], y[fold.train], X[fold.test][:, columns], y[fold.test]
    return data_for_fold


def anova_ranker(X, y, calls=None, fail_at_call=None):
    """F scores on the fold's training rows (method "anova") or seeded random scores ("random")."""
    def rank_fold(method, fold):
        if calls is not None:
            calls.append((method, fold.repeat, fold.fold))
            if fail_at_call is not None and len(calls) == fail_at_call:
                raise RuntimeError("interrupted")
        if method == "random":
            return random_scores(X.shape[1], fold_seed(0, fold))
        return f_classif(X[fold.train], y[fold.train])[0]
    return rank_fold


# fold_plan ------------------------------------------------------------------------------------


def test_fold_plan_is_stratified_and_partitions_the_rows():
    labels = np.repeat(["a", "b", "c"], [40, 20, 10])
    folds = fold_plan(labels, cv=5, seed=3)
    assert [(f.repeat, f.fold) for f in folds] == [(0, i) for i in range(5)]
    tests = np.concatenate([f.test for f in folds])
    assert np.array_equal(np.sort(tests), np.arange(labels.size))
    for fold in folds:
        assert np.all(np.diff(fold.train) > 0) and np.all(np.diff(fold.test) > 0)
        assert np.array_equal(np.union1d(fold.train, fold.test), np.arange(labels.size))
        assert np.intersect1d(fold.train, fold.test).size == 0
        _, counts = np.unique(labels[fold.test], return_counts=True)
        assert counts.tolist() == [8, 4, 2]
        assert not fold.separate_test


def test_fold_plan_is_deterministic_and_repeats_differ():
    labels = np.repeat([0, 1], [30, 20])
    first, again = fold_plan(labels, cv=5, repeats=3, seed=7), fold_plan(labels, cv=5, repeats=3, seed=7)
    assert all(np.array_equal(a.test, b.test) and np.array_equal(a.train, b.train) for a, b in zip(first, again))
    by_repeat = [[f.test for f in first if f.repeat == r] for r in range(3)]
    assert not np.array_equal(by_repeat[0][0], by_repeat[1][0])
    assert not np.array_equal(by_repeat[1][0], by_repeat[2][0])
    single = fold_plan(labels, cv=5, repeats=1, seed=7)  # repeat 0 does not depend on the number of repeats
    assert all(np.array_equal(a.test, b) for a, b in zip(single, by_repeat[0]))
    other_seed = fold_plan(labels, cv=5, seed=8)
    assert not all(np.array_equal(a.test, b.test) for a, b in zip(single, other_seed))


def test_fold_plan_with_a_separate_test_set():
    folds = fold_plan([0, 1, 0, 1, 1], cv=1, test_labels=[1, 0, 0])
    assert len(folds) == 1
    fold = folds[0]
    assert fold.separate_test and (fold.repeat, fold.fold) == (0, 0)
    assert fold.train.tolist() == [0, 1, 2, 3, 4] and fold.test.tolist() == [0, 1, 2]


@pytest.mark.parametrize("arguments, message", [
    (dict(labels=[0, 1] * 10, cv=1), "'cv' parameter of fold_plan must be an int in the range \\[2, inf\\)"),
    (dict(labels=[0] * 20 + [1] * 3, cv=5), "smallest class \\(3 rows of class 1\\)"),
    (dict(labels=[0, 1] * 10, cv=5, test_labels=[0, 1]), "'cv' parameter of fold_plan must be 1 when test_labels"),
    (dict(labels=[0, 1] * 10, cv=2, repeats=0), "'repeats' parameter"),
    (dict(labels=[0, 1] * 10, cv=2, seed=-1), "'seed' parameter"),
    (dict(labels=[1] * 10, cv=2), "at least two classes"),
    (dict(labels=[0.0, np.nan, 1.0, 1.0], cv=2), "holds NaN"),
    (dict(labels=[], cv=2), "'labels' parameter of fold_plan must be a non-empty 1-d array"),
])
def test_fold_plan_errors_name_the_parameter(arguments, message):
    with pytest.raises(ValueError, match=message):
        fold_plan(**arguments)


# classifiers and subsets ----------------------------------------------------------------------


def test_make_classifier_scales_on_training_rows_then_classifies():
    for name in CLASSIFIER_NAMES:
        pipeline = make_classifier(name, seed=1)
        assert isinstance(pipeline.steps[0][1], MinMaxScaler) and pipeline.steps[1][0] == name
    assert make_classifier("knn").steps[1][1].n_neighbors == 1
    assert make_classifier("tree", seed=4).steps[1][1].random_state == 4
    with pytest.raises(ValueError, match="'name' parameter of make_classifier must be a str among"):
        make_classifier("forest")


def test_feature_counts_clip_and_merge():
    assert feature_counts([1, 2, 5, 10, 20, 50, 100], 13) == [1, 2, 5, 10, 13]
    assert feature_counts([5, 1, 5], 10) == [1, 5]
    with pytest.raises(ValueError, match="'num_features_list'"):
        feature_counts([0, 2], 10)


def test_score_subsets_uses_the_top_k_columns_of_the_ranking():
    X, y = informative_data()
    train, test = np.arange(0, y.size, 2), np.arange(1, y.size, 2)
    rows = score_subsets(X[train], y[train], X[test], y[test], ranking=[0, 1, 2, 5, 6], num_features_list=[3, 2, 50],
                         classifiers=CLASSIFIER_NAMES)
    assert [(r["classifier"], r["k"]) for r in rows] == [(c, k) for c in CLASSIFIER_NAMES for k in (2, 3, 5)]
    for row in rows:
        assert 0.0 <= row["macro_f1"] <= 1.0
    knn = {row["k"]: row["accuracy"] for row in rows if row["classifier"] == "knn"}
    expected = make_classifier("knn").fit(X[train][:, [0, 1, 2]], y[train]).predict(X[test][:, [0, 1, 2]])
    assert knn[3] == np.mean(expected == y[test])
    assert min(row["accuracy"] for row in rows if row["k"] == 3) > 0.7  # three informative features; chance is 1/3
    with pytest.raises(ValueError, match="'ranking' parameter of score_subsets"):
        score_subsets(X[train], y[train], X[test], y[test], [0, 0], [1], ["knn"])
    with pytest.raises(ValueError, match="'classifiers' parameter"):
        score_subsets(X[train], y[train], X[test], y[test], [0], [1], ["forest"])


def test_baselines_are_seeded():
    X, y = informative_data()
    information = mutual_information_scores(X, y, seed=2)
    assert np.array_equal(information, mutual_information_scores(X, y, seed=2))
    assert set(np.argsort(-information)[:3]) == {0, 1, 2}
    assert np.array_equal(baseline_scores("mutual-info", X, y, seed=2), information)
    assert np.array_equal(random_scores(12, seed=5), baseline_scores("random", X, y, seed=5))
    assert not np.array_equal(random_scores(12, seed=5), random_scores(12, seed=6))
    with pytest.raises(ValueError, match="'method' parameter of baseline_scores"):
        baseline_scores("anova", X, y)


# leakage --------------------------------------------------------------------------------------


def test_selection_inside_the_training_folds_does_not_leak(tmp_path):
    """Pure noise: ranking on all rows looks predictive, ranking on the training fold does not."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 2000))
    y = rng.permutation(np.repeat([0, 1], 30))
    folds = fold_plan(y, cv=5, repeats=2, seed=0)
    accuracy = {}
    for name, rows_seen in (("leaky", lambda fold: np.arange(y.size)), ("per_fold", lambda fold: fold.train)):
        study = EvaluationStudy(tmp_path / name, folds, ["anova"], ["nb"], [10], {"data": "noise"}, n_features=2000)
        study.run(lambda method, fold, rows_seen=rows_seen: f_classif(X[rows_seen(fold)], y[rows_seen(fold)])[0],
                  fold_data(X, y),
                  progress=quiet)
        accuracy[name] = load_results(tmp_path / name)[0]["accuracy"].mean()
    assert accuracy["leaky"] > 0.75  # the test rows took part in the selection
    assert 0.35 < accuracy["per_fold"] < 0.65  # chance is 0.5
    assert accuracy["leaky"] - accuracy["per_fold"] > 0.15


# the study: resume, fingerprint, outputs -------------------------------------------------------


def make_study(directory, X, folds, classifiers=("knn", "nb"), num_features_list=(1, 2, 4, 40), **extra):
    return EvaluationStudy(directory, folds, ["anova", "random"], list(classifiers), list(num_features_list),
                           {"input": "synthetic", "command": "sparkfs evaluate"}, n_features=X.shape[1], **extra)


def test_interrupted_study_resumes_to_the_same_results(tmp_path):
    X, y = informative_data()
    folds = fold_plan(y, cv=3, seed=1)
    reference = make_study(tmp_path / "reference", X, folds)
    reference.run(anova_ranker(X, y), fold_data(X, y), progress=quiet)
    write_results(tmp_path / "reference")

    calls = []
    interrupted = make_study(tmp_path / "resumed", X, folds)
    with pytest.raises(RuntimeError, match="interrupted"):
        interrupted.run(anova_ranker(X, y, calls, fail_at_call=3), fold_data(X, y), progress=quiet)
    saved = [(m, f.repeat, f.fold) for m, f in [(m, f) for f in folds for m in ("anova", "random")]
             if interrupted.fold_path(m, f).exists()]
    assert saved == calls[:2]
    with pytest.raises(RuntimeError, match="misses 4 of 6"):
        write_results(tmp_path / "resumed")

    resumed_calls = []
    done = make_study(tmp_path / "resumed", X, folds).run(anova_ranker(X, y, resumed_calls), fold_data(X, y),
                                                          progress=quiet)
    assert resumed_calls == done == calls[2:] + [("random", 0, 1), ("anova", 0, 2), ("random", 0, 2)]
    assert len(set(saved) | set(done)) == 6
    assert make_study(tmp_path / "resumed", X, folds).run(anova_ranker(X, y, []), fold_data(X, y)) == []
    write_results(tmp_path / "resumed")
    for name in ("results.parquet", "summary.csv", "best.csv", "significance.csv"):
        first, second = tmp_path / "reference" / name, tmp_path / "resumed" / name
        if name.endswith(".parquet"):
            assert pq.read_table(first).equals(pq.read_table(second))
        else:
            assert first.read_text() == second.read_text()


def test_a_directory_of_another_study_is_refused(tmp_path):
    X, y = informative_data()
    folds = fold_plan(y, cv=3, seed=1)
    make_study(tmp_path, X, folds).run(anova_ranker(X, y), fold_data(X, y), progress=quiet)
    other = EvaluationStudy(tmp_path, folds, ["anova"], ["knn", "nb"], [1, 2, 4, 40], {"input": "other"},
                            n_features=X.shape[1])
    with pytest.raises(StudyMismatchError, match="description"):
        other.run(anova_ranker(X, y), fold_data(X, y), progress=quiet)
    with pytest.raises(StudyMismatchError, match="folds_sha256"):
        make_study(tmp_path, X, fold_plan(y, cv=3, seed=2)).run(anova_ranker(X, y), fold_data(X, y))
    # another list of methods is the same study: only the new method runs
    calls = []
    EvaluationStudy(tmp_path, folds, ["anova", "mutual-info"], ["knn", "nb"], [1, 2, 4, 40],
                    {"input": "synthetic", "command": "sparkfs evaluate"}, n_features=X.shape[1]).run(
        lambda method, fold: calls.append(method) or mutual_information_scores(X[fold.train], y[fold.train]),
        fold_data(X, y), progress=quiet)
    assert calls == ["mutual-info"] * 3


def test_study_writes_outputs_and_checks_what_callbacks_return(tmp_path):
    X, y = informative_data()
    folds = fold_plan(y, cv=3, repeats=2, seed=1)
    seen_columns, lines = [], []

    def data_for_fold(fold, columns):
        seen_columns.append(columns)
        return fold_data(X, y)(fold, columns)

    study = make_study(tmp_path, X, folds, probe_mask=np.arange(X.shape[1]) >= 6)
    study.run(anova_ranker(X, y), data_for_fold, progress=lines.append)
    assert len(lines) == 12 and lines[0].startswith("1/12 anova repeat 1 fold 1")
    assert all(columns.size == 12 for columns in seen_columns)  # k=40 clipped to the 12 features
    written = {path.name for path in study.write_results()}
    assert {"results.parquet", "summary.csv", "best.csv", "selection_auc.csv", "roc.png", "error-knn.png",
            "scores-anova.png", "plots.json"} <= written
    results = pq.read_table(tmp_path / "results.parquet").to_pandas()
    assert list(results.columns) == ["method", "classifier", "k", "n_selected", "repeat", "fold", "test_rows",
                                     "accuracy",
                                     "macro_f1", "engine"]
    assert set(results["engine"]) == {"scikit-learn"}
    assert len(results) == 2 * 2 * 4 * 6  # methods x classifiers x k (1, 2, 4, 12) x folds
    assert sorted(results["k"].unique()) == [1, 2, 4, 12]
    summary = pd.read_csv(tmp_path / "summary.csv")
    auc = summary.groupby("method")["selection_auc_mean"].first()
    assert auc["anova"] > 0.7 and auc["anova"] > auc["random"]
    assert (tmp_path / "roc.png").read_bytes().startswith(PNG_MAGIC)
    assert json.loads((tmp_path / "study.json").read_text())["probe_features"] == list(range(6, 12))

    with pytest.raises(ValueError, match="rank_fold returned scores of shape \\(3,\\)"):
        make_study(tmp_path / "shape", X, folds).run(lambda m, f: np.zeros(3), fold_data(X, y), progress=quiet)
    with pytest.raises(ValueError, match="data_for_fold returned X_train of shape"):
        make_study(tmp_path / "data", X, folds).run(anova_ranker(X, y), lambda f, c: (X, y, X, y), progress=quiet)
    with pytest.raises(ValueError, match="'driver_budget_cells' parameter of EvaluationStudy"):
        make_study(tmp_path / "budget", X, folds, driver_budget_cells=100).run(anova_ranker(X, y), fold_data(X, y))


def test_folds_above_the_driver_budget_go_to_the_other_engine(tmp_path):
    """Above driver_budget_cells the study asks classify_above_budget for predictions (sparkfs
    evaluate: pyspark.ml), computes the same metrics from them and records the engine; a plan
    with a classifier that engine lacks is refused before any work."""
    X, y = informative_data()
    folds = fold_plan(y, cv=3, seed=0)
    asked, ranked = [], []

    def classify_above_budget(fold, columns, subsets, classifiers, seed):
        asked.append((fold.fold, columns.tolist(), sorted(subsets), classifiers))
        predictions = {}
        for name in classifiers:
            for k, positions in subsets.items():  # stand-in engine: scikit-learn on the same columns
                top = columns[positions]
                model = make_classifier(name, seed).fit(X[fold.train][:, top], y[fold.train])
                predictions[(name, k)] = (y[fold.test], model.predict(X[fold.test][:, top]))
        return predictions

    def ranker(method, fold):
        ranked.append(fold.fold)
        return anova_ranker(X, y)(method, fold)

    budget = folds[0].train.size * 4 + 1  # below the 54 x 4 values of a fold at k = 4
    study = make_study(tmp_path / "spark", X, folds, classifiers=["svm", "nb"], num_features_list=[1, 4],
                       driver_budget_cells=budget, classify_above_budget=classify_above_budget)
    study.run(anova_ranker(X, y), lambda fold, columns: pytest.fail("no driver data above the budget"), progress=quiet)
    assert [entry[0] for entry in asked] == [0, 0, 1, 1, 2, 2] and asked[0][2:] == ([1, 4], ["svm", "nb"])
    study.write_results()
    results = pq.read_table(tmp_path / "spark" / "results.parquet").to_pandas()
    assert set(results["engine"]) == {"spark"}
    driver = make_study(tmp_path / "driver", X, folds, classifiers=["svm", "nb"], num_features_list=[1, 4])
    driver.run(anova_ranker(X, y), fold_data(X, y), progress=quiet)
    driver.write_results()
    on_driver = pq.read_table(tmp_path / "driver" / "results.parquet").to_pandas()
    np.testing.assert_array_equal(results["accuracy"], on_driver["accuracy"])
    np.testing.assert_array_equal(results["macro_f1"], on_driver["macro_f1"])
    engines = pd.read_csv(tmp_path / "spark" / "engines.csv")
    assert engines.to_dict("records") == [{"classifier": "svm", "engine": "spark", "fold_results": 6},
                                          {"classifier": "nb", "engine": "spark", "fold_results": 6}]
    from sparkfs.evaluation.report import build_report

    page = build_report(tmp_path / "spark").read_text()
    assert "pyspark.ml on Spark (reduced data above the driver budget): svm (6), nb (6)" in page
    assert "scikit-learn on the driver: svm (6), nb (6)" in build_report(tmp_path / "driver").read_text()
    with pytest.raises(ValueError, match=r"classified on Spark, which has no \['knn'\]"):
        make_study(tmp_path / "knn", X, folds, classifiers=["knn", "nb"], num_features_list=[1, 4],
                   driver_budget_cells=budget, classify_above_budget=classify_above_budget).run(
            ranker, fold_data(X, y), progress=quiet)
    assert ranked == [] and not (tmp_path / "knn").exists()


def test_a_fold_selection_classifies_each_k_on_its_own_subset(tmp_path):
    """A method whose k-feature selections are not its ranking's prefixes (QFS) returns a
    FoldSelection: each k is classified on its subset, n_selected records the subset's size, and
    the results differ from the ranking's prefixes when the subsets do (module note 8)."""
    X, y = informative_data()
    folds = fold_plan(y, cv=3, seed=0)
    # scores rank noise columns 11, 10, 9, ... first; the subsets hold the informative 0-2 instead,
    # and k = 4 gets 3 features (a size no beta reaches)
    scores = np.arange(X.shape[1], dtype=float)
    subsets = {1: np.array([2]), 2: np.array([1, 2]), 4: np.array([0, 1, 2])}
    fetched = []

    def data_for_fold(fold, columns):
        fetched.append(columns.tolist())
        return fold_data(X, y)(fold, columns)

    def make(directory):
        return EvaluationStudy(directory, folds, ["picked", "ranked"], ["knn", "nb"], [1, 2, 4], {"input": "synthetic"},
                               n_features=X.shape[1])

    study = make(tmp_path / "study")
    study.run(lambda method, fold: FoldSelection(scores, subsets) if method == "picked" else scores, data_for_fold,
              progress=quiet)
    assert fetched[:2] == [[0, 1, 2], [8, 9, 10, 11]]
    study.write_results()
    results = pq.read_table(tmp_path / "study" / "results.parquet").to_pandas()
    picked = results[results["method"] == "picked"]
    assert picked.groupby("k")["n_selected"].first().to_dict() == {1: 1, 2: 2, 4: 3}
    assert (results.loc[results["method"] == "ranked", "n_selected"] == results.loc[results["method"] == "ranked",
                                                                                     "k"]).all()
    for fold in folds:
        expected = score_subsets(X[fold.train], y[fold.train], X[fold.test], y[fold.test], subsets, [1, 2, 4],
                                 ["knn", "nb"])
        got = picked[picked["fold"] == fold.fold].sort_values(["classifier", "k"])
        expected = pd.DataFrame(expected).sort_values(["classifier", "k"])
        np.testing.assert_array_equal(got["accuracy"].to_numpy(), expected["accuracy"].to_numpy())
    means = results.groupby("method")["accuracy"].mean()
    assert means["picked"] > 0.7 > means["ranked"]
    summary = pd.read_csv(tmp_path / "study" / "summary.csv")
    assert summary.loc[(summary["method"] == "picked") & (summary["k"] == 4), "n_selected_mean"].eq(3).all()
    from sparkfs.evaluation.report import build_report

    page = build_report(tmp_path / "study").read_text()
    assert "picked: no selection of exactly k features for k = 4; the classifiers used the nearest size it " \
        "selects (mean 3 features)" in page and "ranked: no selection" not in page
    with pytest.raises(ValueError, match=r"'subsets' parameter of rank_fold for repeat 0 fold 0 of 'bad'.*\[1, 2, 4\]"):
        EvaluationStudy(tmp_path / "bad", folds, ["bad"], ["knn"], [1, 2, 4], {}, n_features=X.shape[1]).run(
            lambda method, fold: FoldSelection(scores, {1: [0], 2: [0, 1]}), fold_data(X, y), progress=quiet)
    with pytest.raises(ValueError, match=r"'subsets\[2\]' parameter of score_subsets"):
        score_subsets(X, y, X, y, {1: [0], 2: [0, 0]}, [1, 2], ["knn"])


def test_study_parameter_errors(tmp_path):
    folds = [Fold(0, 0, np.arange(4), np.arange(4, 6))]
    with pytest.raises(ValueError, match="'methods' parameter of EvaluationStudy"):
        EvaluationStudy(tmp_path, folds, ["a/b"], ["knn"], [1], {}, n_features=3)
    with pytest.raises(ValueError, match="'classifiers' parameter"):
        EvaluationStudy(tmp_path, folds, ["a"], ["forest"], [1], {}, n_features=3)
    with pytest.raises(ValueError, match="'probe_mask' parameter"):
        EvaluationStudy(tmp_path, folds, ["a"], ["knn"], [1], {}, n_features=3, probe_mask=[True, True, True])
    with pytest.raises(ValueError, match="'feature_names'"):
        EvaluationStudy(tmp_path, folds, ["a"], ["knn"], [1], {"feature_names": ["x"]}, n_features=3)
    with pytest.raises(ValueError, match="'description' parameter"):
        EvaluationStudy(tmp_path, folds, ["a"], ["knn"], [1], {"x": object()}, n_features=3)


# summaries and significance -------------------------------------------------------------------


def hand_made_results():
    """Method m, classifier knn, k in {1, 2, 3} on two folds; k=2 and k=3 tie on mean error."""
    accuracy = {1: [0.5, 0.7], 2: [0.8, 0.6], 3: [0.6, 0.8]}
    rows = [{"method": "m", "classifier": "knn", "k": k, "repeat": 0, "fold": fold, "test_rows": 10,
             "accuracy": accuracy[k][fold], "macro_f1": accuracy[k][fold] / 2} for k in (1, 2, 3) for fold in (0, 1)]
    return pd.DataFrame(rows)


def test_summary_and_best_k_on_a_hand_made_case():
    results = hand_made_results()
    summary = summary_table(results)
    assert summary["k"].tolist() == [1, 2, 3] and summary["folds"].tolist() == [2, 2, 2]
    assert np.allclose(summary["accuracy_mean"], [0.6, 0.7, 0.7])
    assert np.allclose(summary["error_mean"], [0.4, 0.3, 0.3])
    assert np.allclose(summary["accuracy_std"], np.std([0.5, 0.7], ddof=1))
    assert np.allclose(summary["macro_f1_mean"], [0.3, 0.35, 0.35])
    assert summary["best_k"].tolist() == [False, True, False]  # a tie goes to the smaller k
    assert summary["selection_auc_mean"].isna().all()
    best = best_k_table(results).iloc[0]
    assert best["best_k"] == 2 and np.isclose(best["error_mean"], 0.3)
    assert np.isclose(best["mean_fold_min_error"], 0.2)  # fold 0: 1 - 0.8, fold 1: 1 - 0.8
    auc = pd.DataFrame({"method": ["m", "m"], "repeat": [0, 0], "fold": [0, 1], "auc": [0.6, 0.8]})
    with_auc = summary_table(results, auc)
    assert np.allclose(with_auc["selection_auc_mean"], 0.7) and np.allclose(with_auc["selection_auc_std"],
                                                                           np.std([0.6, 0.8], ddof=1))


def test_paired_tests_match_scipy():
    a, b = [0.10, 0.12, 0.08, 0.15, 0.11], [0.14, 0.13, 0.12, 0.16, 0.10]
    t = paired_t_test_across_folds(a, b)
    reference = stats.ttest_rel(a, b)
    assert (t.statistic, t.p_value, t.pairs) == (reference.statistic, reference.pvalue, 5)
    w = wilcoxon_across_datasets(a + [0.3], b + [0.1])
    reference = stats.wilcoxon(a + [0.3], b + [0.1])
    assert (w.statistic, w.p_value, w.pairs) == (reference.statistic, reference.pvalue, 6)
    with pytest.raises(ValueError, match="'b' parameter of paired_t_test_across_folds"):
        paired_t_test_across_folds([1, 2, 3], [1, 2])
    with pytest.raises(ValueError, match="'b' parameter of wilcoxon_across_datasets"):
        wilcoxon_across_datasets([1, 2], [[1, 2]])
    with pytest.raises(ValueError, match="at least 2 pairs"):
        paired_t_test_across_folds([1.0], [2.0])


def test_a_resumed_study_may_change_its_command_and_methods_but_not_a_done_methods_params(tmp_path):
    """A run refused by one method (its data refusal) resumes without it: the command line, the
    methods and the other methods' params are the run's, not the study's identity."""
    X, y = informative_data()
    folds = fold_plan(y, cv=3, seed=1)

    def study(methods, params, command):
        return EvaluationStudy(tmp_path, folds, methods, ["knn", "nb"], [1, 2, 4, 40],
                               {"input": "synthetic", "command": command, "params": params,
                                "baselines": [m for m in methods if m == "random"]}, n_features=X.shape[1])

    first = study(["anova", "refused"], {"anova": {"k": 1}, "refused": {"t": 1}}, "sparkfs evaluate --methods a,r")
    with pytest.raises(ValueError, match="refused here"):
        first.run(lambda method, fold: anova_ranker(X, y)(method, fold) if method == "anova"
                  else (_ for _ in ()).throw(ValueError("refused here")), fold_data(X, y), progress=quiet)
    assert first.fold_path("anova", folds[0]).exists()
    calls = []
    # the refused method (no saved fold) may come back with other params; a new method may join
    done = study(["anova", "refused", "random"], {"anova": {"k": 1}, "refused": {"t": 2}, "random": {}},
                 "sparkfs evaluate --methods a,r,random").run(
        lambda method, fold: calls.append(method) or anova_ranker(X, y)(method, fold), fold_data(X, y), progress=quiet)
    assert calls.count("anova") == 2 and calls.count("refused") == 3 and calls.count("random") == 3 and len(done) == 8
    stored = json.loads((tmp_path / "study.json").read_text())
    assert stored["description"]["command"] == "sparkfs evaluate --methods a,r,random"
    assert stored["method_params"] == {"anova": {"k": 1}, "refused": {"t": 2}, "random": {}}
    # a method with saved folds keeps its params, also when a run leaves it out in between
    study(["random"], {"random": {}}, "sparkfs evaluate --methods random").run(
        anova_ranker(X, y), fold_data(X, y), progress=quiet)
    with pytest.raises(StudyMismatchError, match=r"params of anova \(stored \{'k': 1\}, given \{'k': 2\}\)"):
        study(["anova"], {"anova": {"k": 2}}, "sparkfs evaluate").run(anova_ranker(X, y), fold_data(X, y))
    with pytest.raises(StudyMismatchError, match="description differ"):
        EvaluationStudy(tmp_path, folds, ["anova"], ["knn", "nb"], [1, 2, 4, 40], {"input": "other"},
                        n_features=X.shape[1]).run(anova_ranker(X, y), fold_data(X, y))
