"""Per-row values attached by position (sparkfs.spark.row_values): a scoped attachment frees its
shipment when its block ends, and the fits that attach one per draw (an SVM-RFE ensemble member,
a stability draw, an evaluation fold) free every one they make."""

import numpy as np
import pytest
from pyspark.sql import functions as F

import sparkfs.spark.row_values as row_values
from sparkfs.spark.row_values import labels_by_position, row_values_attached, with_row_values
from tests.helpers import make_df


class _Recorder:
    """Wraps ``ship_to_tasks`` and counts the shipments made and destroyed."""

    def __init__(self, monkeypatch):
        self.made, self.destroyed = 0, 0
        ship = row_values.ship_to_tasks

        def recording(spark, value, transport):
            handle = ship(spark, value, transport)
            self.made += 1
            destroy = handle.destroy

            def counted_destroy(*args, **kwargs):
                self.destroyed += 1
                return destroy(*args, **kwargs)

            handle.destroy = counted_destroy
            return handle

        monkeypatch.setattr(row_values, "ship_to_tasks", recording)


def test_the_block_reads_the_values_and_its_end_frees_the_shipment(spark, monkeypatch):
    recorder = _Recorder(monkeypatch)
    X, y = np.arange(12.0).reshape(6, 2), np.array([0, 1, 0, 1, 0, 1])
    df = make_df(spark, X, y, partitions=3)
    labels, offsets = labels_by_position(df, "label")
    values = np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.5])
    with row_values_attached(df, np.arange(6), values, "v", partition_offsets=offsets) as frame:
        got = [row["v"] for row in frame.select("v").collect()]
        assert recorder.destroyed == 0
    assert got == values.tolist() and recorder.made == recorder.destroyed == 1
    if spark.sparkContext is not None:  # a broadcast, destroyed: a job reading it now fails
        with pytest.raises(Exception, match="(?i)destroyed"):
            frame.select("v").collect()
    kept = with_row_values(df, np.arange(6), values, "v", partition_offsets=offsets)
    assert kept.agg(F.sum("v")).first()[0] == pytest.approx(values.sum()) and recorder.destroyed == 1


def test_a_folds_training_rows_are_persisted_in_the_block_and_freed_at_its_end(spark, monkeypatch):
    from sparkfs.spark.folds import positioned_input, training_rows

    recorder = _Recorder(monkeypatch)
    X, y = np.arange(16.0).reshape(8, 2), np.array([0, 1] * 4)
    source = positioned_input(make_df(spark, X, y, partitions=3), "features", "label")
    try:
        with training_rows(source, np.array([1, 2, 5])) as rows:
            assert rows.is_cached and sorted(r["features"][0] for r in rows.collect()) == [2.0, 4.0, 10.0]
        assert not rows.is_cached and recorder.made == recorder.destroyed == 1
    finally:
        source.unpersist()
