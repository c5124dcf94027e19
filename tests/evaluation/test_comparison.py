"""Comparison over several evaluations (sparkfs.evaluation.comparison, `sparkfs compare`): the
lowest-error table and the Wilcoxon signed-rank tests equal a direct computation from best.csv."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.feature_selection import f_classif

from sparkfs.cli import main
from sparkfs.evaluation import comparison
from sparkfs.evaluation.baselines import random_scores
from sparkfs.evaluation.cross_validation import EvaluationStudy, fold_plan, fold_seed
from sparkfs.evaluation.result_tables import write_results


def _evaluation(directory, seed, name):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], [20, 16])
    X = rng.standard_normal((y.size, 8))
    X[:, :2] += 1.5 * y[:, None]

    def rank_fold(method, fold):
        if method == "random":
            return random_scores(X.shape[1], fold_seed(seed, fold))
        if method == "reversed":
            return -f_classif(X[fold.train], y[fold.train])[0]
        return f_classif(X[fold.train], y[fold.train])[0]

    def data_for_fold(fold, columns):
        return X[fold.train][:, columns], y[fold.train], X[fold.test][:, columns], y[fold.test]

    study = EvaluationStudy(directory, fold_plan(y, cv=3, seed=seed), ["anova", "random", "reversed"],
                            ["knn", "nb"], [1, 2, 4], {"name": name}, n_features=8)
    study.run(rank_fold, data_for_fold, progress=lambda line: None)
    write_results(directory)
    return directory


@pytest.fixture(scope="module")
def evaluations(tmp_path_factory):
    root = tmp_path_factory.mktemp("comparison")
    return [_evaluation(root / f"set{i}", seed=i, name=f"set{i}") for i in range(3)]


def test_tables_equal_a_direct_computation(evaluations):
    best = comparison.best_errors(evaluations)
    assert len(best) == 3 * 3 * 2 and set(best["data_set"]) == {"set0", "set1", "set2"}
    lowest = comparison.lowest_error_table(best)
    assert list(lowest.columns) == ["data_set", "classifier", "anova", "random", "reversed"]
    first = pd.read_csv(evaluations[0] / "best.csv")
    cell = first[(first["method"] == "random") & (first["classifier"] == "nb")]["error_mean"].item()
    assert lowest.loc[(lowest["data_set"] == "set0") & (lowest["classifier"] == "nb"), "random"].item() \
        == pytest.approx(100 * cell)
    tests = comparison.wilcoxon_table(best, "anova", "mean_fold_min_error")
    assert tests["method_b"].tolist() == ["random", "reversed"]
    for _, row in tests.iterrows():
        pairs = best.pivot_table(index=["data_set", "classifier"], columns="method", values="mean_fold_min_error")
        a, b = pairs["anova"].to_numpy(), pairs[row["method_b"]].to_numpy()
        assert row["cells"] == 6 and row["wins"] == np.sum(a < b - 1e-12) and row["losses"] == np.sum(a > b + 1e-12)
        if np.any(np.abs(a - b) > 1e-12):
            assert row["p_value"] == pytest.approx(stats.wilcoxon(a, b).pvalue)
    # the informative ranking beats the reversed one in every cell
    reversed_row = tests[tests["method_b"] == "reversed"].iloc[0]
    assert reversed_row["wins"] == 6 and reversed_row["p_value"] == pytest.approx(2 / 2**6)
    text = comparison.markdown_table(lowest, bold_lowest=True)
    assert text.splitlines()[0] == "| data_set | classifier | anova | random | reversed |" and "**" in text


def test_compare_command(evaluations, tmp_path, capsys):
    out = tmp_path / "compared"
    assert main(["compare", *map(str, evaluations), "--reference", "anova", "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Wilcoxon signed-rank tests of anova against each method over the 6 (data set, classifier) cells" in printed
    assert {path.name for path in out.iterdir()} == {"comparison.json", "comparison.md", "lowest_errors.csv",
                                                      "wilcoxon.csv"}
    about = json.loads((out / "comparison.json").read_text())  # the marker: compare may write here again
    assert about["sparkfs_output"] == {"kind": "compare", "format": 1} and about["reference"] == "anova"
    assert main(["compare", str(evaluations[0]), "--reference", "nope", "--output", str(out)]) == 2
    assert "the reference method 'nope' is not among" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "missing"), "--output", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["compare", str(evaluations[0]), str(evaluations[0]), "--reference", "anova",
                 "--output", str(out)]) == 2
    assert "same data set name" in capsys.readouterr().err
