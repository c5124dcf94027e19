"""The MultiSURF family and TuRF on Spark vs the core (itself checked against scikit-rebate and a
loop reference in tests/core/test_multisurf.py): dense and sparse rows, several partitions,
instance weights, sampled queries, Euclidean; the selectors' summary and save/load."""

import numpy as np
import pytest

from sparkfs import MultiSURFSelector
from sparkfs.core import multisurf as ms
from sparkfs.core.options import MultiSURFOptions
from sparkfs.spark.method_setup import EngineOptions
from sparkfs.spark.multisurf import multisurf_statistics
from tests.core.test_multisurf import continuous_data, range_scale, reference_scores
from tests.helpers import make_df

TOL = 1e-9


def close(got, want):
    assert np.max(np.abs(got - want)) <= TOL * max(1.0, np.max(np.abs(want))), (got, want)


@pytest.mark.parametrize("variant,partitions,sparse,metric", [
    ("multisurf", 1, False, "manhattan"),
    ("multisurf-star", 3, True, "manhattan"),
    ("surf-star", 2, False, "euclidean"),
])
def test_engine_equals_core(spark, variant, partitions, sparse, metric):
    X, y = continuous_data(21, n=40, p=5, classes=3, balanced=False)
    if sparse:
        X[np.random.default_rng(1).random(X.shape) < 0.5] = 0.0
    df = make_df(spark, X, y, partitions=partitions, sparse=sparse)
    # several tables per block
    options = MultiSURFOptions(variant=variant, metric=metric, scaling="range", block_size=7)
    result = multisurf_statistics(df, "features", "label", num_features=5, num_classes=3, options=options)
    close(result.scores, ms.multisurf_scores(X, y, variant, metric=metric, scale=range_scale(X)))
    passes = result.info["passes"]  # every row a query, one batch: each pair's distance once (SURF: twice, T1 first)
    assert result.info["one_pass"] and passes.count("thresholds, set counts and weighted differences") == 1
    assert passes.count("distance moments") == (0 if variant in ms.PER_QUERY_THRESHOLD_VARIANTS else 1)


def test_weights_and_sample_equal_reference(spark):
    X, y = continuous_data(23, n=36, p=4, classes=2, balanced=False)
    weights = np.random.default_rng(3).uniform(0.2, 2.0, size=36)
    df = make_df(spark, X, y, partitions=2, weights=weights)
    result = multisurf_statistics(df, "features", "label", num_features=4, num_classes=2,
                                  options=MultiSURFOptions(variant="multisurf-star", scaling="none", sample_size=12,
                                                           seed=4),
                                  engine=EngineOptions(weight_col="weight"))
    queries = result.query_ids  # positional ids are the row positions
    close(result.scores, reference_scores(X, y, "multisurf-star", weights=weights, queries=queries))
    assert len(queries) == 12


def test_selector_fit_summary_and_saved_model(spark, tmp_path):
    X, y = continuous_data(25, n=40, p=7, classes=2)
    df = make_df(spark, X, y, partitions=2)
    # 1,200 bytes of query rows per batch (21 of 56 bytes): every row a query, in two batches (three passes each)
    model = MultiSURFSelector(numFeatures=2, variant="surf-star", queryBatchBytes=1200).fit(df)
    close(model.scores, ms.multisurf_scores(X, y, "surf-star", scale=range_scale(X)))
    assert model.summary["method"] == "surf-star" and model.summary["query_sample"] == "every row"
    assert model.summary["query_batches"] == 2 and model.summary["passes"].count("set counts") == 2
    assert model.selectedFeatures == sorted(np.argsort(-model.scores, kind="mergesort")[:2].tolist())
    model.write().save(str(tmp_path / "model"))
    loaded = type(model).load(str(tmp_path / "model"))
    np.testing.assert_array_equal(loaded.scores, model.scores)
    assert loaded.getOrDefault("variant") == "surf-star" and loaded.getQueryBatchBytes() == 1200


def test_command_line_turf_with_weights_and_refusals(spark, tmp_path, capsys):
    import json

    import pandas as pd

    from sparkfs.cli import main
    from tests.helpers import refused

    X, y = continuous_data(27, n=30, p=6, classes=3)
    weights = np.random.default_rng(5).uniform(0.5, 2.0, size=30)
    path = tmp_path / "in.parquet"
    make_df(spark, X, y, weights=weights).write.parquet(str(path))
    out = tmp_path / "out"
    assert main(["select", "--input", str(path), "--format", "parquet", "--method", "turf", "--num-features", "2",
                 "--param", "innerMethod=surf", "--param", "keepFeatures=3", "--weight-col", "weight",
                 "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["method"] == "turf" and summary["inner_method"] == "surf"
    scale = range_scale(X)
    want, final, tiers = ms.turf(lambda f: ms.multisurf_scores(X[:, f], y, "surf", scale=scale[f], weights=weights),
                                 6, 0.5, 3)
    close(pd.read_parquet(out / "features.parquet").sort_values("index")["score"].to_numpy(), want)
    assert summary["turf_final_features"] == final.tolist() and summary["turf_removed_per_round"] == [3]
    capsys.readouterr()
    bad = tmp_path / "bad"
    code = main(["select", "--input", str(path), "--format", "parquet", "--method", "turf", "--param",
                 "removeFraction=1", "--output", str(bad)])
    refused(capsys, code, bad, "'removeFraction' parameter of TuRFSelector", "(0, 1)", "Got 1")
    code = main(["select", "--input", str(path), "--format", "parquet", "--method", "multisurf-star", "--param",
                 "metric=chebyshev", "--output", str(bad)])
    refused(capsys, code, bad, "'metric' parameter of MultiSURFSelector", "'manhattan', 'euclidean', 'cosine'")
    code = main(["select", "--input", str(path), "--format", "parquet", "--method", "surf", "--param", "k=10",
                 "--output", str(bad)])
    refused(capsys, code, bad, "unknown param 'k' for method 'surf'")
    code = main(["select", "--input", str(path), "--format", "parquet", "--method", "multisurf", "--param",
                 "queryBatchBytes=0", "--output", str(bad)])
    refused(capsys, code, bad, "'queryBatchBytes' parameter of MultiSURFSelector", "[1, inf)", "Got 0")


def test_evaluate_runs_multisurf_in_each_fold(spark, tmp_path, capsys):
    import pandas as pd

    from sparkfs.cli import main

    X, y = continuous_data(29, n=24, p=5, classes=2)
    path = tmp_path / "small.csv"
    pd.DataFrame(X, columns=[f"g{i}" for i in range(5)]).assign(label=y).to_csv(path, index=False)
    out = tmp_path / "eval"
    assert main(["evaluate", "--input", str(path), "--format", "csv", "--label-col", "label", "--methods",
                 "multisurf", "--classifiers", "nb", "--num-features", "2", "--cv", "2", "--output", str(out)]) == 0
    results = pd.read_parquet(out / "results.parquet")
    assert set(results["method"]) == {"multisurf"} and len(results) == 2  # one k, one classifier, two folds
    assert np.all((results["accuracy"] >= 0) & (results["accuracy"] <= 1))


def term_counts(seed, n=45, p=60, classes=3):
    """Term-like rows (non-negative counts, about 5 % non-zero), each class with a few terms of its own."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % classes
    X = rng.poisson(2.0, size=(n, p)) * (rng.random((n, p)) < 0.04)
    X[np.arange(n), y] += 1  # term c occurs in class c's rows
    return X.astype(np.float64), y


@pytest.mark.parametrize("partitions", [1, 3])
def test_term_like_data_take_the_cosine_distance_by_default(spark, partitions):
    """preset='default' with neither metric nor scaling set: on term-like data MultiSURF is computed on
    rows divided by their norm with Euclidean distances and no scaling (the loop reference on those
    rows), as an explicit metric='cosine', scaling='none'; preset='paper' keeps scikit-rebate's."""
    from sparkfs.sklearn import MultiSURFSelector as FrontMultiSURF

    X, y = term_counts(31)
    unit = X / np.linalg.norm(X, axis=1, keepdims=True)
    df = make_df(spark, X, y, partitions=partitions, sparse=True)
    model = MultiSURFSelector(numFeatures=3).fit(df)
    close(model.scores, reference_scores(unit, y, "multisurf", metric="euclidean"))
    assert model.summary["metric"] == "cosine" and model.summary["scaling"] == "none"
    assert model.summary["distance_rule"].startswith("term-like data (no negative values, ")
    explicit = MultiSURFSelector(numFeatures=3, metric="cosine", scaling="none").fit(df)
    np.testing.assert_array_equal(explicit.scores, model.scores)
    assert "distance_rule" not in explicit.summary
    paper = MultiSURFSelector(numFeatures=3, preset="paper").fit(df)
    divisor = np.where(range_scale(X) > 0, range_scale(X), 1.0)  # a constant term is left unscaled
    close(paper.scores, ms.multisurf_scores(X, y, "multisurf", scale=divisor))
    assert paper.summary["metric"] == "manhattan" and paper.summary["scaling"] == "range"
    front = FrontMultiSURF(num_features=3).fit(X, y)
    close(front.scores_, model.scores)
    assert (front.metric_, front.scaling_) == ("cosine", "none")


def test_dense_measurements_keep_scikit_rebates_distance(spark):
    X, y = continuous_data(33, n=30, p=5, classes=2)
    model = MultiSURFSelector(numFeatures=2).fit(make_df(spark, X, y, partitions=2))
    close(model.scores, ms.multisurf_scores(X, y, "multisurf", scale=range_scale(X)))
    assert model.summary["metric"] == "manhattan" and "not term-like" in model.summary["distance_rule"]
