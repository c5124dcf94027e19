"""The same rows stored as 1 and as 7 Parquet files: what holds, exactly.

Spark packs files into partitions by size (largest first), so the 7-file read delivers the rows
in another order than the 1-file read (checked below), and positional row ids differ. Then:

* the sample is the same set of rows (it is drawn by the rows' content and the seed);
* by default (no ``rowIdCol``, not deterministic) scores are equal to rounding and the selection is
  the same, on continuous data: ReliefF, and Lmba and Simba, which visit their pool in an order
  keyed by content (within the default pool, and with every row searched);
* with ``deterministic=True`` and no ``rowIdCol`` (rows numbered in content order) the same bits;
* with ``rowIdCol`` and ``deterministic=True`` the same bits (Lmba and Simba then visit their pool
  in the user's id order, the papers' runs).
"""

import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("pyspark")

from sparkfs import (
    DefaultSampleWarning,
    LmbaSelector,
    ParzenISERanker,
    ReliefSelector,
    SimbaSelector,
    UnivariateTestSelector,
)
from sparkfs.core.options import ReliefOptions
from sparkfs.spark.relief import relief_statistics

ROWS, FEATURES = 1200, 6


def _write(folder, X, y, file_rows):
    """Parquet files of ``file_rows`` consecutive rows each (features as a list, the row's tag)."""
    folder.mkdir()
    start = 0
    for number, count in enumerate(file_rows):
        part = slice(start, start + count)
        table = pa.table({"x": pa.array(X[part].tolist(), pa.list_(pa.float64())), "label": y[part],
                          "tag": np.arange(start, start + count, dtype=np.int64)})
        pq.write_table(table, folder / f"part-{number:02d}.parquet")
        start += count
    return str(folder)


@pytest.fixture(scope="module")
def layouts(spark, tmp_path_factory):
    from pyspark.ml.functions import array_to_vector

    rng = np.random.default_rng(21)
    X = rng.normal(size=(ROWS, FEATURES))
    y = (X[:, 0] + 0.7 * X[:, 1] - 0.4 * X[:, 2] + 0.3 * rng.normal(size=ROWS) > 0).astype(np.float64)
    root = tmp_path_factory.mktemp("layouts")
    sizes = np.arange(1, 8) * ROWS // 28  # 7 files of growing size: Spark reads the largest first
    sizes[-1] += ROWS - sizes.sum()
    frames = {}
    for name, file_rows in (("one", [ROWS]), ("seven", sizes.tolist())):
        path = _write(root / name, X, y, file_rows)
        frame = spark.read.parquet(path).select(array_to_vector("x").alias("features"), "label", "tag").cache()
        frames[name] = (frame, np.array([row["tag"] for row in frame.select("tag").collect()]))
    return frames


def test_the_two_layouts_deliver_the_rows_in_another_order(layouts):
    one, seven = layouts["one"][1], layouts["seven"][1]
    assert sorted(one) == sorted(seven) == list(range(ROWS))
    assert not np.array_equal(one, seven)


def test_relieff_sample_is_the_same_rows_scores_equal_to_rounding_same_selection(layouts):
    results = {}
    for name, (frame, tags) in layouts.items():
        result = relief_statistics(frame, "features", "label", num_features=FEATURES, num_classes=2,
                                   options=ReliefOptions(variant="relieff", k=5, scaling="range", sample_size=150,
                                                         seed=3))
        results[name] = (set(tags[result.query_ids].tolist()), result.scores)  # positional ids -> rows
    assert results["one"][0] == results["seven"][0] and len(results["one"][0]) == 150
    np.testing.assert_allclose(results["seven"][1], results["one"][1], rtol=1e-12, atol=0)
    top = [np.argsort(-scores, kind="stable")[:3].tolist() for _, scores in results.values()]
    assert top[0] == top[1]


def test_relieff_selector_with_a_row_id_column_gives_the_same_bits(layouts):
    scores = [ReliefSelector(numFeatures=3, k=5, sampleSize=150, seed=3, rowIdCol="tag",
                             deterministic=True).fit(frame).scores
              for frame, _ in layouts.values()]
    assert np.array_equal(scores[0], scores[1])


def test_parzen_ise_fcm_start_and_landmarks_follow_the_content(layouts):
    scores = [ParzenISERanker(numFeatures=2, groups="clusters", numClusters=2, landmarks=60, maxIter=3,
                              fcmMaxIter=5, seed=4).fit(frame.select("features")).scores
              for frame, _ in layouts.values()]
    np.testing.assert_allclose(scores[1], scores[0], rtol=1e-9, atol=0)


def test_lmba_with_a_row_id_column_gives_the_same_bits(layouts):
    # With rowIdCol the pool is visited in the user's id order (the papers' runs).
    scores = [LmbaSelector(numFeatures=2, k=2, sampleSize=40, iterations=8, batchSize=4, seed=5,
                           rowIdCol="tag", deterministic=True).fit(frame).scores for frame, _ in layouts.values()]
    assert np.array_equal(scores[0], scores[1])


def _fits(layouts, make):
    return [make().fit(frame.select("features", "label")) for frame, _ in layouts.values()]


def _assert_same_selection_and_close(models, what):
    np.testing.assert_allclose(models[1].scores, models[0].scores, rtol=1e-9, atol=0, err_msg=what)
    assert models[0].selectedFeatures == models[1].selectedFeatures, what


#: Every row searched (sampleSize set: one Spark job per step), kept short.
EVERY_ROW = dict(sampleSize=60, iterations=24, batchSize=8, seed=5)


def test_defaults_give_the_same_selection_and_scores_to_rounding(layouts):
    """No rowIdCol, not deterministic: ReliefF; Lmba and Simba within the default pool (sampleSize
    unset on more than DEFAULT_POOL rows) and with every row searched (sampleSize set)."""
    from sparkfs.selectors.margin_weighting import DEFAULT_POOL

    assert ROWS > DEFAULT_POOL
    _assert_same_selection_and_close(_fits(layouts, lambda: ReliefSelector(numFeatures=3, sampleSize=150, seed=3)),
                                     "relieff")
    for make in (LmbaSelector, SimbaSelector):
        with pytest.warns(DefaultSampleWarning):
            pooled = _fits(layouts, lambda make=make: make(numFeatures=3, iterations=200, seed=5))
        assert [model.summary["neighbours_among"] for model in pooled] == ["pool", "pool"]
        assert pooled[0].summary["visit_order"] == "content"
        _assert_same_selection_and_close(pooled, f"{make.__name__} within the pool")
        searched = _fits(layouts, lambda make=make: make(numFeatures=3, **EVERY_ROW))
        assert [model.summary["neighbours_among"] for model in searched] == ["every row", "every row"]
        _assert_same_selection_and_close(searched, f"{make.__name__} over every row")


def test_deterministic_without_a_row_id_column_gives_the_same_bits(layouts):
    """deterministic=True numbers rows in content order: the same bits for either layout (ReliefF,
    Lmba and Simba within the pool and over every row; anova's exact sums need no row ids)."""
    makes = {
        "relieff": lambda: ReliefSelector(numFeatures=3, sampleSize=150, seed=3, deterministic=True),
        "lmba pool": lambda: LmbaSelector(numFeatures=3, iterations=200, seed=5, deterministic=True),
        "lmba every row": lambda: LmbaSelector(numFeatures=3, deterministic=True, **EVERY_ROW),
        "simba every row": lambda: SimbaSelector(numFeatures=3, deterministic=True, **EVERY_ROW),
        "anova": lambda: UnivariateTestSelector(numFeatures=3, deterministic=True),
    }
    for what, make in makes.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DefaultSampleWarning)
            models = _fits(layouts, make)
        assert np.array_equal(models[0].scores, models[1].scores), what
        assert models[0].selectedFeatures == models[1].selectedFeatures, what
        if what.startswith(("lmba", "simba")):
            assert models[0].summary["row_ids"] == "content order (deterministic)", what
