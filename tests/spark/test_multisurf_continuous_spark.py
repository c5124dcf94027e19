"""The MultiSURF family and TuRF on Spark with a continuous endpoint (``labelType="continuous"``,
S5 of sparkfs.core.multisurf): the scikit-learn front's scores (themselves scikit-rebate's, see
tests/core/test_multisurf_continuous.py) for any partitioning, on both paths of the engine (every
row a query in one pass; sampled queries in three passes), and the refusals of a bad target."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_friedman1

from sparkfs import MultiSURFSelector, TuRFSelector
from sparkfs.cli import main
from sparkfs.core import multisurf as ms
from sparkfs.core.options import MultiSURFOptions
from sparkfs.errors import InvalidInputError
from sparkfs.sklearn import MultiSURFFamilySelector
from sparkfs.sklearn import TuRFSelector as FrontTuRF
from sparkfs.spark.multisurf import multisurf_statistics
from tests.helpers import make_df, refused
from tests.sklearn.test_relief_continuous import reference  # notes 8 and 9 with loops

X, Y = make_friedman1(n_samples=48, n_features=6, random_state=0)


@pytest.mark.parametrize("variant", ["surf-star"])  # the far sets and SURF's extra pass for T1
def test_one_pass_fit_equals_the_front_with_the_same_bits_for_any_partitioning(spark, variant):
    want = MultiSURFFamilySelector(variant, label_type="continuous").fit(X, Y).scores_
    first = None
    for partitions, sparse in ((1, False), (3, False), (3, True)):
        frame = make_df(spark, X, Y, partitions=partitions, sparse=sparse)
        model = MultiSURFSelector(variant=variant, labelType="continuous", numFeatures=3, deterministic=True).fit(frame)
        np.testing.assert_allclose(model.scores, want, rtol=1e-12, atol=1e-15)
        if not sparse:  # deterministic: the same bits for 1 and 3 partitions
            first = model.scores if first is None else np.testing.assert_array_equal(model.scores, first) or first
        assert model.summary["label_type"] == "continuous" and model.summary["one_pass"]
        assert model.summary["n_rows"] == 48 and model.summary["n_classes"] == 0
        assert model.summary["hit_bound"] == ms.continuous_hit_bound(Y)


@pytest.mark.parametrize("variant", ["multisurf-star", "surf"])
def test_sampled_queries_equal_the_core_reference(spark, variant):
    """A query sample: the three passes (moments, set counts with each pair's hit or miss from the
    shipped targets, weighted differences), against the in-memory definition on the same queries."""
    frame = make_df(spark, X, Y, partitions=2)
    result = multisurf_statistics(frame, "features", "label", num_features=6, num_classes=2,
                                  options=MultiSURFOptions(variant=variant, label_type="continuous", sample_size=20,
                                                           seed=3))
    assert not result.info["one_pass"] and result.n_queries == 20
    positions = np.asarray(result.query_ids, dtype=np.int64)  # positional ids: the rows' positions
    want = ms.multisurf_scores(X / (X.max(axis=0) - X.min(axis=0)), Y, variant, query_positions=positions,
                               hit_bound=ms.continuous_hit_bound(Y))
    np.testing.assert_allclose(result.scores, want, rtol=1e-12, atol=1e-15)


def test_turf_and_instance_weights_on_a_continuous_endpoint(spark):
    frame = make_df(spark, X, Y, partitions=2)
    model = TuRFSelector(labelType="continuous", keepFeatures=3, deterministic=True).fit(frame)
    np.testing.assert_allclose(model.scores, FrontTuRF(label_type="continuous", keep_features=3).fit(X, Y).scores_,
                               rtol=1e-12, atol=1e-15)
    weights = np.random.default_rng(1).uniform(0.5, 2.0, size=48)
    weighted = make_df(spark, X, Y, partitions=2, weights=weights)
    got = MultiSURFSelector(labelType="continuous", weightCol="weight", deterministic=True).fit(weighted).scores
    want = ms.multisurf_scores(X, Y, "multisurf", scale=X.max(axis=0) - X.min(axis=0), weights=weights,
                               hit_bound=ms.continuous_hit_bound(Y))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_a_bad_target_is_refused_naming_the_problem(spark):
    for target, message in ((np.full(48, 3.0), "is constant (3.0 in all 48 rows)"),
                            (np.where(np.arange(48) == 7, np.nan, Y), "1 row(s) have a null, NaN or infinite label"),
                            ([None] + list(Y[1:]), "1 row(s) have a null, NaN or infinite label")):
        with pytest.raises(InvalidInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
            MultiSURFSelector(labelType="continuous").fit(make_df(spark, X, target, partitions=2))
    with pytest.raises(InvalidInputError, match="MultiSURF family and TuRF"):  # classes by default: points there
        MultiSURFSelector().fit(make_df(spark, X, Y, partitions=2))


def test_command_line_takes_label_type_continuous(spark, tmp_path, capsys):
    path = tmp_path / "friedman.csv"
    pd.DataFrame(X, columns=[f"x{j}" for j in range(6)]).assign(target=Y).to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["select", "--master", "local[2]", "--input", str(path), "--format", "csv", "--label-col", "target",
                 "--method", "multisurf", "--label-type", "continuous", "--num-features", "3",
                 "--output", str(out)]) == 0
    summary = json.loads(Path(out, "summary.json").read_text())
    assert summary["label_type"] == "continuous"
    assert main(["select", "--master", "local[2]", "--input", str(path), "--format", "csv", "--label-col", "target",
                 "--method", "relieff", "--label-type", "continuous", "--num-features", "3",
                 "--output", str(tmp_path / "relieff")]) == 0
    table = pd.read_parquet(out / "features.parquet").sort_values("index")
    np.testing.assert_allclose(table["score"], MultiSURFFamilySelector(label_type="continuous").fit(X, Y).scores_,
                               rtol=1e-12, atol=1e-15)
    code = main(["evaluate", "--methods", "multisurf", "--param", "multisurf.labelType=continuous", "--master",
                 "local[2]", "--input", str(path), "--format", "csv", "--label-col", "target", "--num-features", "2",
                 "--output", str(tmp_path / "evaluate")])
    refused(capsys, code, tmp_path / "evaluate", "multisurf takes a continuous label")


def test_relieff_on_a_continuous_endpoint_equals_the_front_for_any_partitioning(spark):
    """core.relief note 9 on Spark: the neighbour search keeps each query's k nearest hits and misses
    (its batch's targets travel with the pass); Manhattan on range scaling as scikit-rebate."""
    from sparkfs import ReliefSelector
    from sparkfs.sklearn import ReliefFSelector

    want = ReliefFSelector(k=5, metric="manhattan", scaling="range", label_type="continuous").fit(X, Y).scores_
    for partitions, sparse in ((1, False), (3, True)):
        model = ReliefSelector(variant="relieff", k=5, metric="manhattan", scaling="range", labelType="continuous",
                               numFeatures=3).fit(make_df(spark, X, Y, partitions=partitions, sparse=sparse))
        np.testing.assert_allclose(model.scores, want, rtol=1e-12, atol=1e-15)
        assert model.summary["label_type"] == "continuous" and model.summary["class_priors"] == []
    frame = make_df(spark, X, Y, partitions=2)
    with pytest.raises(ValueError, match="needs class priors"):
        ReliefSelector(variant="prelief", labelType="continuous").fit(frame)
    with pytest.raises(ValueError, match="weightCol with variant='relieff' only"):
        ReliefSelector(variant="relief", labelType="continuous", weightCol="weight").fit(
            make_df(spark, X, Y, partitions=2, weights=np.ones(48)))


def test_instance_weighted_relieff_on_a_continuous_endpoint(spark):
    """Weights 1 are the unweighted scores; other weights (a zero among them) the loop reference,
    for 1 and 3 partitions; the hit bound is the targets' own, whatever the weights."""
    from sparkfs import ReliefSelector

    weights = np.random.default_rng(3).uniform(0.5, 2.0, size=48)
    weights[[4, 17]] = 0.0
    want = reference(X, Y, 5, weights=weights)
    assert np.max(np.abs(want - reference(X, Y, 5, weights=np.ones(48)))) > 1e-3  # weights matter
    selector = ReliefSelector(variant="relieff", k=5, metric="manhattan", scaling="range", labelType="continuous",
                              weightCol="weight", numFeatures=3)
    for partitions in (1, 3):
        model = selector.fit(make_df(spark, X, Y, partitions=partitions, weights=weights))
        np.testing.assert_allclose(model.scores, want, rtol=1e-12, atol=1e-15)
        assert model.summary["hit_bound"] == ms.continuous_hit_bound(Y)
    ones = selector.fit(make_df(spark, X, Y, partitions=2, weights=np.ones(48))).scores
    np.testing.assert_allclose(ones, reference(X, Y, 5, weights=np.ones(48)), rtol=1e-12, atol=1e-15)
