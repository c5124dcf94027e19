"""Lmba and Simba on Spark vs the per-instance references of tests/core/test_lmba_simba.py
(written from the papers' steps), dense and sparse rows, 1 and 3 partitions; mini-batches do not
depend on the partitioning; the selectors through the common API.

Without ``rowIdCol`` the Spark layer visits its pool in content order
(:func:`sparkfs.core.margin_pool.content_order`), so the references pick their instances in that
order too: :func:`visited` (the rows' positions in it) maps the references' instance order to
positions, or permutes the rows the in-memory drivers run on. With ``rowIdCol`` the pool is visited
in id order (the last test)."""

import numpy as np
import pytest

pytest.importorskip("pyspark")

from sparkfs import LmbaSelector, LmbaSelectorModel, SimbaSelector
from sparkfs.core import margin_weighting as mw
from sparkfs.core import simba
from sparkfs.core.margin_pool import content_order
from sparkfs.core.margin_runs import MarginRun
from sparkfs.core.options import LmbaOptions, SimbaOptions
from sparkfs.spark.margin_weighting import lmba_statistics, simba_statistics
from tests.core.test_lmba_simba import continuous_data, grid_data, reference_lmba, reference_simba
from tests.spark.test_relief_engine import make_df

REL_TOL = 1e-9


def assert_close(got, ref):
    assert np.max(np.abs(np.asarray(got) - ref)) <= REL_TOL * max(np.max(np.abs(ref)), 1e-300)


def visited(X, y, seed):
    """Positions of the rows in the order the Spark layer visits a pool of all of them without
    ``rowIdCol`` (positional ids 0..n-1; the seed is the selector's)."""
    return content_order(X, y, np.arange(len(y)), seed)


@pytest.mark.parametrize("sparse,partitions", [(False, 1), (True, 3)])
@pytest.mark.parametrize("k,c,projection", [(3, 1.0, "none"), (1, 0.5, "clip")])
def test_lmba_batch_1_equals_the_papers_steps(spark, sparse, partitions, k, c, projection):
    X, y = grid_data(3)
    steps = 8
    result = lmba_statistics(make_df(spark, X, y, partitions, sparse=sparse), "features", "label", num_features=5,
                             num_classes=3,
                             options=LmbaOptions(k=k, c=c, run=MarginRun(iterations=steps, batch_size=1, step_size=0.5),
                                                 projection=projection, seed=4))
    order = visited(X, y, 4)[mw.instance_order(len(y), steps, 1, 4)]  # ties (grid data) by position, as Spark
    expected = reference_lmba(X, y, k, c, order, np.full(steps, 0.5), projection)
    assert_close(result.raw_weights, expected)
    assert result.steps == steps


@pytest.mark.parametrize("sparse,partitions", [(False, 3), (True, 1)])
def test_simba_batch_1_equals_the_algorithm(spark, sparse, partitions):
    X, y = continuous_data(3)
    steps = 8
    result = simba_statistics(make_df(spark, X, y, partitions, sparse=sparse), "features", "label", num_features=5,
                              num_classes=3, options=SimbaOptions(run=MarginRun(iterations=steps, batch_size=1),
                                                                  seed=2))
    final, raw = reference_simba(X, y, visited(X, y, 2)[mw.instance_order(len(y), steps, 1, 2)])
    assert_close(result.raw_weights, raw)
    assert_close(result.scores, final)


def test_simba_fetches_the_neighbours_when_their_vectors_exceed_the_budget(spark, monkeypatch):
    """Wide data: the search does not carry every class's vectors; a second pass fetches the
    hit and miss rows (CSR kept CSR), with the same result."""
    from sparkfs.spark import margin_weighting as spark_mw

    X, y = continuous_data(3)
    df = make_df(spark, X, y, 2, sparse=True)
    carried = simba_statistics(df, "features", "label", num_features=5, num_classes=3,
                               options=SimbaOptions(run=MarginRun(iterations=6, batch_size=3), seed=4))
    monkeypatch.setattr(spark_mw, "SEARCH_VECTOR_BYTES", 0)
    fetched = simba_statistics(df, "features", "label", num_features=5, num_classes=3,
                               options=SimbaOptions(run=MarginRun(iterations=6, batch_size=3), seed=4))
    assert fetched.info["passes"] > carried.info["passes"]
    assert_close(fetched.raw_weights, carried.raw_weights)
    pool = visited(X, y, 4)
    assert_close(fetched.raw_weights, simba.simba_in_memory(X[pool], y[pool], iterations=6, batch_size=3, seed=4)[1])


def test_mini_batches_do_not_depend_on_partitions_and_equal_the_in_memory_driver(spark):
    X, y = continuous_data(2)
    run = MarginRun(iterations=12, batch_size=4)
    lmba_runs = [lmba_statistics(make_df(spark, X, y, parts), "features", "label", num_features=5, num_classes=2,
                                 options=LmbaOptions(run=run, seed=1)).raw_weights for parts in (1, 3)]
    simba_runs = [simba_statistics(make_df(spark, X, y, parts), "features", "label", num_features=5, num_classes=2,
                                   options=SimbaOptions(run=run, seed=1)).raw_weights for parts in (1, 3)]
    assert_close(lmba_runs[1], lmba_runs[0])
    assert_close(simba_runs[1], simba_runs[0])
    pool = visited(X, y, 1)
    X, y = X[pool], y[pool]
    assert_close(lmba_runs[0], mw.lmba_in_memory(X, y, iterations=12, batch_size=4, seed=1)[1])
    summed = [lmba_statistics(make_df(spark, X, y, parts, sparse=parts == 3), "features", "label", num_features=5,
                              num_classes=2,
                              options=LmbaOptions(run=MarginRun(iterations=12, batch_size=4, batch_rule="sum"),
                                                  seed=1)).raw_weights
              for parts in (1, 3)]
    assert_close(summed[1], summed[0])
    assert_close(summed[0], mw.lmba_in_memory(X, y, iterations=12, batch_size=4, seed=1, batch_rule="sum")[1])
    assert_close(simba_runs[0], simba.simba_in_memory(X, y, iterations=12, batch_size=4, seed=1)[1])


def test_selectors_fit_transform_save_load_and_bad_params(spark, tmp_path):
    X, y = continuous_data(2)
    X[:, 0] += 3.0 * y  # one clearly relevant feature
    df = make_df(spark, X, y, 2)
    model = LmbaSelector(numFeatures=1, batchSize=7, passes=1, seed=3).fit(df)
    assert model.selectedFeatures == [0]
    assert model.summary["steps"] == 4 and model.summary["method"] == "lmba"
    assert model.transform(df).first()["selected_features"].size == 1
    model.write().save(str(tmp_path / "lmba"))
    loaded = LmbaSelectorModel.load(str(tmp_path / "lmba"))
    np.testing.assert_array_equal(loaded.featureArray("raw_weights"), model.featureArray("raw_weights"))
    assert SimbaSelector(numFeatures=1, batchSize=7, passes=1).fit(df).selectedFeatures == [0]
    with pytest.raises(ValueError, match="The 'projection' parameter of LmbaSelector must be a str among"):
        LmbaSelector(projection="sphere").fit(df)
    with pytest.raises(ValueError, match="does not support weightCol"):
        SimbaSelector().setWeightCol("label").fit(df)


def test_default_loop_the_paper_preset_and_the_summary(spark):
    """The selectors' default loop equals the in-memory driver with the same settings; preset="paper"
    is the papers' loop (the core drivers' defaults); a Param set explicitly overrides the preset;
    the summary says what ran."""
    from sparkfs.selectors.margin_weighting import LMBA_DEFAULT_RUN, SIMBA_DEFAULT_RUN

    X, y = continuous_data(2)
    df = make_df(spark, X, y, 2)
    n = len(y)
    pool = visited(X, y, 0)  # the references on the rows in the selectors' visit order (seed 0)
    X, y = X[pool], y[pool]

    def loop(run):
        return dict(schedule=run.schedule, step_size=run.step_size, passes=run.passes, batch_size=run.batch(n),
                    batch_rule=run.batch_rule, averaging=run.averaging)

    lmba = LmbaSelector(numFeatures=1).fit(df)
    assert_close(lmba.featureArray("raw_weights"), mw.lmba_in_memory(X, y, **loop(LMBA_DEFAULT_RUN))[1])
    picked = LMBA_DEFAULT_RUN.steps(n) * LMBA_DEFAULT_RUN.batch_size
    assert {key: lmba.summary[key] for key in ("preset", "schedule", "pool_passes", "instances_picked", "batch_size",
                                               "averaging", "steps")} == {
        "preset": "default", "schedule": LMBA_DEFAULT_RUN.schedule, "pool_passes": round(picked / n, 3),
        "instances_picked": picked, "batch_size": LMBA_DEFAULT_RUN.batch_size, "averaging": LMBA_DEFAULT_RUN.averaging,
        "steps": LMBA_DEFAULT_RUN.steps(n)}
    paper = LmbaSelector(numFeatures=1, preset="paper", iterations=6).fit(df)
    assert_close(paper.featureArray("raw_weights"), mw.lmba_in_memory(X, y, iterations=6)[1])
    assert (paper.summary["steps"], paper.summary["batch_size"], paper.summary["schedule"]) == (6, 1, "constant")
    override = LmbaSelector(numFeatures=1, preset="paper", iterations=6, batchSize=3).fit(df)
    assert_close(override.featureArray("raw_weights"), mw.lmba_in_memory(X, y, iterations=6, batch_size=3)[1])
    assert (override.summary["steps"], override.summary["preset"]) == (2, "paper")

    simba_model = SimbaSelector(numFeatures=1, iterations=8).fit(df)  # batches of ceil(28 / 16) = 2: 4 steps
    assert_close(simba_model.featureArray("raw_weights"),
                 simba.simba_in_memory(X, y, iterations=8, **loop(SIMBA_DEFAULT_RUN))[1])
    assert (simba_model.summary["steps"], simba_model.summary["batch_size"]) == (4, SIMBA_DEFAULT_RUN.batch(n))
    simba_paper = SimbaSelector(numFeatures=1, preset="paper", iterations=5).fit(df)
    assert_close(simba_paper.featureArray("raw_weights"), simba.simba_in_memory(X, y, iterations=5)[1])
    assert (simba_paper.summary["steps"], simba_paper.summary["averaging"]) == (5, "none")


def test_unset_sample_size_draws_a_pool_of_the_default_size_above_it_and_runs_within_it(spark):
    """sampleSize unset on more than DEFAULT_POOL rows: a pool of that size, the whole loop among
    its rows on the driver (the in-memory drivers on the sampled rows), said in the warning and the
    summary; sampleSize set keeps the search over every row (one job per step); preset="paper"
    picks from every row."""
    from sparkfs import DefaultSampleWarning, LmbaSelector, SimbaSelector
    from sparkfs.core.sampling import content_sample_keys, smallest_key_positions
    from sparkfs.selectors.margin_weighting import DEFAULT_POOL, LMBA_DEFAULT_RUN, SIMBA_DEFAULT_RUN

    rng = np.random.default_rng(12)
    n = DEFAULT_POOL + 100
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(float)
    df = make_df(spark, X, y, partitions=2).cache()
    drawn = np.sort(smallest_key_positions(content_sample_keys(X, y, None, 0), np.arange(n), DEFAULT_POOL))
    drawn = drawn[content_order(X[drawn], y[drawn], drawn, 0)]  # the pool in its visit order
    loop = dict(iterations=80, batch_size=16, seed=0)
    references = (mw.lmba_in_memory(X[drawn], y[drawn], schedule=LMBA_DEFAULT_RUN.schedule, **loop)[1],
                  simba.simba_in_memory(X[drawn], y[drawn], schedule=SIMBA_DEFAULT_RUN.schedule, **loop)[1])
    for make, reference in zip((lambda **kw: LmbaSelector(numFeatures=1, iterations=80, batchSize=16, **kw),
                                lambda **kw: SimbaSelector(numFeatures=1, iterations=80, batchSize=16, **kw)),
                               references):
        with pytest.warns(DefaultSampleWarning, match=f"{n:,} rows, so a pool of {DEFAULT_POOL:,} instances .* "
                                                      "runs within it on the driver"):
            defaulted = make().fit(df)
        assert defaulted.summary["n_pool"] == DEFAULT_POOL and defaulted.summary["pool_sample"] == "default"
        assert defaulted.summary["neighbours_among"] == "pool" and defaulted.summary["pool_left_out"] == 0
        assert defaulted.summary["steps"] == 5 and defaulted.summary["passes"] <= 4  # counts, sample...: none per step
        assert_close(defaulted.featureArray("raw_weights"), reference)
        explicit = make(sampleSize=DEFAULT_POOL).fit(df)
        assert explicit.summary["pool_sample"] == "sampleSize" and explicit.summary["neighbours_among"] == "every row"
        assert not np.allclose(explicit.featureArray("raw_weights"), reference)  # a search over all the rows
        paper = make(preset="paper").fit(df)  # the papers pick from every instance
        assert paper.summary["n_pool"] == n and paper.summary["pool_sample"] == "every row"


def test_selectors_with_a_scaling_equal_the_in_memory_drivers_on_numpy_scaled_data(spark):
    """``scaling`` other than "none" (the scaled view of ``feature_scale_of``): Lmba with "range"
    and Simba with "standard" give the in-memory drivers' scores on the data scaled by NumPy here
    (divided by max - min, by the sample std); feature 1 is 100 times wider, so ignoring the
    scaling would move the result."""
    X, y = continuous_data(2)
    X[:, 1] *= 100.0
    df = make_df(spark, X, y, 2)
    pool = visited(X, y, 0)  # the content key of the unscaled rows
    X, y = X[pool], y[pool]
    ranged = X * (1.0 / (X.max(axis=0) - X.min(axis=0)))
    standardised = X * (1.0 / X.std(axis=0, ddof=1))
    lmba = LmbaSelector(numFeatures=1, preset="paper", iterations=6, batchSize=6, scaling="range").fit(df)
    lmba_scores, lmba_raw = mw.lmba_in_memory(ranged, y, iterations=6, batch_size=6)
    assert_close(lmba.scores, lmba_scores)
    assert_close(lmba.featureArray("raw_weights"), lmba_raw)
    simba_model = SimbaSelector(numFeatures=1, preset="paper", iterations=6, batchSize=6, scaling="standard").fit(df)
    simba_scores, simba_raw = simba.simba_in_memory(standardised, y, iterations=6, batch_size=6)
    assert_close(simba_model.scores, simba_scores)
    assert_close(simba_model.featureArray("raw_weights"), simba_raw)
    assert not np.allclose(mw.lmba_in_memory(X, y, iterations=6, batch_size=6)[0], lmba_scores)
    assert not np.allclose(simba.simba_in_memory(X, y, iterations=6, batch_size=6)[0], simba_scores)


def test_with_a_row_id_column_the_pool_is_visited_in_id_order(spark):
    """rowIdCol: the papers' order (the user's ids, here the positions reversed), equal to the
    in-memory drivers on the rows in id order; the summary says which order ran."""
    X, y = continuous_data(2)
    df = make_df(spark, X, y, 2, row_ids=np.arange(len(y))[::-1])
    X, y = X[::-1], y[::-1]
    lmba = LmbaSelector(numFeatures=1, preset="paper", iterations=6, rowIdCol="row_id").fit(df)
    assert_close(lmba.featureArray("raw_weights"), mw.lmba_in_memory(X, y, iterations=6)[1])
    assert lmba.summary["visit_order"] == "row id"
    simba_model = SimbaSelector(numFeatures=1, preset="paper", iterations=5, rowIdCol="row_id").fit(df)
    assert_close(simba_model.featureArray("raw_weights"), simba.simba_in_memory(X, y, iterations=5)[1])
    default = LmbaSelector(numFeatures=1, preset="paper", iterations=6).fit(df)
    assert default.summary["visit_order"] == "content"
