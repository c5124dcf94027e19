"""The public pass API (sparkfs.spark.passes): budgets, shipping scoped to a ``with`` block,
scaling as a view, and a method's own pass composed from it (checked against NumPy)."""

from types import SimpleNamespace

import numpy as np
import pytest

import sparkfs.spark.rows as rows_module
from sparkfs.errors import SparkResourceError
from sparkfs.spark.passes import ShippedQueries, batched_pass, query_batches
from sparkfs.spark.rows import Rows, RowSet
from tests.spark.test_relief_engine import make_df


def queries_of(count, width=4):
    return RowSet(np.zeros((count, width)), np.arange(count), np.zeros(count, dtype=np.int64))


def fake_rows(transport, budget):
    return SimpleNamespace(transport=transport, query_batch_bytes=budget)


def test_batches_are_budgeted_by_what_is_shipped_and_what_returns():
    queries = queries_of(10)  # 32 bytes a query
    assert len(query_batches(fake_rows("context", 64), queries)) == 5
    # a broadcast bounds the query matrix only; a closure carries the per-batch tables and shared values too
    assert len(query_batches(fake_rows("context", 64), queries, shipped_bytes_per_query=32)) == 5
    assert len(query_batches(fake_rows("dataframe", 64), queries, shipped_bytes_per_query=32)) == 10
    assert len(query_batches(fake_rows("dataframe", 160), queries, shared_bytes=64)) == 4
    # what a batch returns, and a cap of the caller's
    assert len(query_batches(fake_rows("context", 10**6), queries, bytes_per_query=100, result_batch_bytes=300)) == 4
    assert len(query_batches(fake_rows("context", 10**6), queries, max_batch=4)) == 3
    assert [b.stop - b.start for b in query_batches(fake_rows("context", 1), queries)] == [1] * 10
    with pytest.raises(SparkResourceError, match="above the 0.0 MiB a task closure may carry"):
        query_batches(fake_rows("dataframe", 32), queries, shared_bytes=64)


def test_shipping_destroys_what_it_shipped_and_nothing_else(monkeypatch):
    class Handle:
        def __init__(self, value):
            self.value, self.destroyed = value, False

        def destroy(self):
            self.destroyed = True

    monkeypatch.setattr(rows_module, "ship_to_tasks", lambda spark, value, transport: Handle(value))
    owner = SimpleNamespace(df=SimpleNamespace(sparkSession=None), transport="context")
    with Rows.shipped(owner, "outer") as outer:
        with Rows.shipped(owner, "inner") as inner:
            assert inner.value == "inner"
        assert inner.destroyed and not outer.destroyed
    assert outer.destroyed
    with pytest.raises(RuntimeError):
        with Rows.shipped(owner, "failing") as failing:
            raise RuntimeError("a failed pass")
    assert failing.destroyed


def l1_sums(block, shipped):
    """A method's own kernel: per query, the sum over the block's rows of ||x_q - x_r||_1."""
    matrix = block.matrix.toarray() if hasattr(block.matrix, "toarray") else block.matrix
    return {"sums": np.abs(shipped["matrix"][:, None, :] - matrix[None, :, :]).sum(axis=(1, 2)) * shipped["factor"]}


def test_a_pass_composed_from_the_api_on_a_scaled_view(spark):
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(12, 3)), np.arange(12) % 2
    scale = np.array([1.0, 4.0, 0.5])
    with Rows(make_df(spark, X, y, 2), "features", num_features=3, label_col="label", num_classes=2,
              transport="dataframe") as rows:
        queries = rows.sample(5, seed=1)
        counts = rows.class_counts
        view = rows.scaled_by(scale)
        assert view.inverse_scale is not None and rows.inverse_scale is None
        assert view.class_counts is counts and rows.info is view.info  # shared, not recomputed
        with pytest.raises(AttributeError, match="immutable"):
            view.inverse_scale = None
        results = {}
        for label, on, budget in (("one batch", view, None), ("batches of 2", view, 16), ("unscaled", rows, None)):
            totals = np.zeros(len(queries))
            batches = 0
            for batch, summary in batched_pass(on, queries, "l1 sums", l1_sums, payload=lambda batch: {"factor": 2.0},
                                               bytes_per_query=8.0, result_batch_bytes=budget):
                totals[batch], batches = summary["sums"], batches + 1
            results[label] = (totals, batches)
        with ShippedQueries(rows, queries) as shipped, pytest.raises(ValueError, match="shipped for other rows"):
            next(batched_pass(view, shipped, "l1 sums", l1_sums, bytes_per_query=8.0))
        assert rows.info["passes"].count("counts") == 1
    for label, divisor, batches in (("one batch", scale, 1), ("batches of 2", scale, 3), ("unscaled", 1.0, 1)):
        scaled = X / divisor
        want = 2.0 * np.abs(scaled[queries.ids][:, None, :] - scaled[None, :, :]).sum(axis=(1, 2))
        np.testing.assert_allclose(results[label][0], want, rtol=1e-12)
        assert results[label][1] == batches
    np.testing.assert_array_equal(results["one batch"][0], results["batches of 2"][0])


def test_parzen_ise_batches_within_the_shipping_budget(spark):
    from sparkfs.core.options import ParzenISEOptions
    from sparkfs.core.parzen_ise import parzen_ise_in_memory
    from sparkfs.spark.method_setup import EngineOptions
    from sparkfs.spark.parzen_ise import parzen_ise_statistics
    from tests.spark.test_parzen_ise_spark import assert_close, small_iris

    X, y = small_iris()  # 50 queries of 4 features: 32 bytes each
    options = dict(max_iter=2, fixed_feature=0, criterion="image")
    want, _ = parzen_ise_in_memory(X, y, **options)
    result = parzen_ise_statistics(make_df(spark, X, y, 1), "features", "label", num_features=4, num_classes=3,
                                   options=ParzenISEOptions(**options),   # batches of 10 queries, not block_size's 50
                                   engine=EngineOptions(transport="context", query_batch_bytes=32 * 10))
    assert_close(result.scores, want)
    # five passes per evaluation of the pair sums (there are 10 passes in all with one batch of 50)
    assert result.info["passes"] >= 5 * result.info["runs"][-1]["evaluations"] + 5
