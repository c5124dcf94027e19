"""docs/recipes.md's recipe for a univariate filter, followed as a contributor would: one core
function of the class moments plus one registry line, then the method runs through the selector,
the CLI and ``sparkfs methods``. Each score is checked against NumPy written here from
the statistic's definition."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from sparkfs.core.moment_filters import MOMENT_FILTERS, FilterScores, MomentFilter
from sparkfs.methods import FAMILIES, METHOD_FACTS, METHODS, MethodFacts, add_filter_method, build_selector
from tests.helpers import make_df


# --- the recipe's step 1: one core function of the class moments --------------------------------
def between_class_sum_of_squares(class_counts, class_sums, class_sum_squares) -> FilterScores:
    """SSB_j = sum_c n_c (mean_cj - mean_j)^2; no p-values."""
    counts = np.asarray(class_counts, dtype=float)
    means = class_sums / counts[:, None]
    grand = class_sums.sum(axis=0) / counts.sum()
    return FilterScores((counts[:, None] * (means - grand) ** 2).sum(axis=0), None)


def within_class_spread(class_counts, class_sums, class_sum_squares) -> FilterScores:
    """SSW_j / n: smaller is better (a toy statistic with a declared direction)."""
    counts = np.asarray(class_counts, dtype=float)
    within = (class_sum_squares - class_sums ** 2 / counts[:, None]).sum(axis=0)
    return FilterScores(within / counts.sum(), None)


@pytest.fixture
def toy_methods():
    """Step 2, one registry line per filter (undone after the test: the registries are global)."""
    added = {"toy-ssb": MomentFilter(between_class_sum_of_squares, "between-class sum of squares",
                                     has_p_values=False),
             "toy-ssw": MomentFilter(within_class_spread, "within-class spread", has_p_values=False,
                                     larger_is_better=False)}
    for name, moment_filter in added.items():
        add_filter_method(name, moment_filter, MethodFacts("a toy filter of the recipe", "untested"))
    yield list(added)
    for name in added:
        for table in (MOMENT_FILTERS, METHODS, METHOD_FACTS, FAMILIES):
            table.pop(name, None)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], 40)
    X = rng.normal(size=(120, 6))
    X[:, 1] += 2.0 * y          # separates the classes
    X[:, 4] *= 0.1              # a small within-class spread
    X[:, 5] = 3.0               # constant: undefined for every filter
    return X, y


def _reference_ssb(X, y):
    grand = X.mean(axis=0)
    return sum((y == c).sum() * (X[y == c].mean(axis=0) - grand) ** 2 for c in np.unique(y))


def _reference_ssw(X, y):
    return sum(((X[y == c] - X[y == c].mean(axis=0)) ** 2).sum(axis=0) for c in np.unique(y)) / len(y)


@pytest.mark.parametrize("partitions", [1, 3])
def test_a_toy_filter_runs_through_the_selector(spark, toy_methods, partitions):
    X, y = _data()
    df = make_df(spark, X, y, partitions=partitions)
    model = build_selector("toy-ssb", {}).setNumFeatures(2).fit(df)
    expected = _reference_ssb(X, y)
    expected[5] = 0.0           # the constant feature scores 0
    np.testing.assert_allclose(model.scores, expected, rtol=1e-9, atol=1e-9)
    assert model.selectedFeatures[0] == 1
    assert not build_selector("toy-ssb", {}).hasPValues()


def test_a_smaller_is_better_filter_ranks_its_smallest_first(spark, toy_methods):
    X, y = _data(1)
    df = make_df(spark, X, y, partitions=2)
    model = build_selector("toy-ssw", {}).setNumFeatures(2).fit(df)
    spread = _reference_ssw(X, y)
    np.testing.assert_allclose(model.scores[:5], -spread[:5], rtol=1e-9)
    assert model.scores[5] == -np.inf                    # undefined ranks last
    np.testing.assert_allclose(model.featureArray("statistics")[:5], spread[:5], rtol=1e-9)
    order = np.argsort(spread[:5])
    assert sorted(model.selectedFeatures) == sorted(order[:2].tolist())
    assert model.summary["score_direction"].startswith("the statistic is better when smaller")


def test_a_toy_filter_runs_through_the_cli_and_methods(spark, toy_methods, tmp_path, capsys):
    X, y = _data(2)
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(X.shape[1])]).assign(label=y)
    source = tmp_path / "toy.csv"
    frame.to_csv(source, index=False)
    out = tmp_path / "out"
    assert main(["select", "--master", "local[2]", "--input", str(source), "--format", "csv", "--label-col",
                 "label", "--method", "toy-ssb", "--num-features", "1", "--output", str(out)]) == 0
    table = pd.read_parquet(out / "features.parquet")
    assert table.loc[table["selected"], "name"].tolist() == ["c1"]
    summary = json.loads(Path(out, "summary.json").read_text())
    assert summary["method"] == "toy-ssb"
    # fpr needs p-values, which the toy filter has none of
    assert main(["select", "--master", "local[2]", "--input", str(source), "--format", "csv", "--label-col",
                 "label", "--method", "toy-ssb", "--selection-mode", "fpr", "--output", str(tmp_path / "o2")]) == 2
    assert "computes none" in capsys.readouterr().err
    assert main(["methods", "toy-ssb"]) == 0
    assert "a toy filter of the recipe" in capsys.readouterr().out


def test_a_registered_name_is_refused_again(toy_methods):
    with pytest.raises(ValueError, match="already registered"):
        add_filter_method("anova", MOMENT_FILTERS["anova"], METHOD_FACTS["anova"])
