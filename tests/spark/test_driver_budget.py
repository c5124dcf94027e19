"""Driver memory budgets: a configuration whose rows on the driver would exceed
``driverBudgetMB`` is refused before any row travels, and the message names the Param to change."""

import numpy as np
import pytest

from sparkfs import LmbaSelector, ParzenISERanker, ReliefSelector, SimbaSelector
from sparkfs.errors import DriverBudgetError
from sparkfs.spark.rows import Rows
from tests.helpers import make_df, random_sparse


@pytest.fixture(scope="module")
def dense_df(spark):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 40))
    y = (X[:, 0] > 0).astype(float)
    return make_df(spark, X, y, partitions=2)


def test_rows_refuse_all_rows_above_the_budget_after_the_counts_only(dense_df):
    # 60 x 40 doubles plus ids/labels: about 0.02 MiB
    with Rows(dense_df, "features", num_features=40, label_col="label", num_classes=2,
              driver_budget_mb=0.01, fewer_rows_hint="use fewer") as rows:
        with pytest.raises(DriverBudgetError, match=r"all rows \(60 x 40\).*above driverBudgetMB=0.01.*use fewer"):
            rows.collect()
        # dense size above the budget: the non-zeros were counted (one JVM pass), nothing collected
        assert rows.info["passes"] == ["counts", "non-zero count"]
    with Rows(dense_df, "features", num_features=40, label_col="label", num_classes=2,
              driver_budget_mb=0.05) as rows:
        assert len(rows.collect()) == 60 and "non-zero count" not in rows.info["passes"]


def test_sparse_rows_are_measured_by_their_non_zeros(spark):
    X, y = random_sparse(50, 2000, 0.01, seed=4, classes=2)
    df = make_df(spark, X, y, partitions=3, sparse=True)
    dense_mib = 50 * 2000 * 8 / 2**20  # 0.76 MiB dense; about 0.015 MiB as CSR
    with Rows(df, "features", num_features=2000, label_col="label", num_classes=2,
              driver_budget_mb=dense_mib / 4) as rows:
        assert len(rows.collect()) == 50
        assert rows.info["passes"][:2] == ["counts", "non-zero count"]
    with Rows(df, "features", num_features=2000, label_col="label", num_classes=2, driver_budget_mb=0.005) as rows:
        with pytest.raises(DriverBudgetError, match="driverBudgetMB=0.005"):
            rows.collect()
        with pytest.raises(DriverBudgetError, match=r"a sample of 40 rows \(40 x 2000\)"):
            rows.sample(40, seed=1)


@pytest.mark.parametrize("make_selector, hint", [
    # k=3: the default 10 neighbours' table (60 x 2 x 10 x 16 bytes) is itself above the budget, and
    # refused first, on 'k' (tests/selectors/test_param_bounds.py).
    (lambda: ReliefSelector(numFeatures=2, k=3, driverBudgetMB=0.01), "set sampleSize to use a sample of the rows"),
    (lambda: LmbaSelector(numFeatures=2, driverBudgetMB=0.01), "set sampleSize to draw a smaller pool"),
    (lambda: SimbaSelector(numFeatures=2, driverBudgetMB=0.01), "set sampleSize to draw a smaller pool"),
    (lambda: ParzenISERanker(numFeatures=2, driverBudgetMB=0.01, groups="labels"), "set landmarks"),
])
def test_selectors_refuse_with_the_param_and_the_way_out(dense_df, make_selector, hint):
    with pytest.raises(DriverBudgetError, match=f"driverBudgetMB=0.01: raise driverBudgetMB .* or {hint}"):
        make_selector().fit(dense_df)


def test_a_sample_within_the_budget_runs(dense_df):
    model = ReliefSelector(numFeatures=2, k=3, sampleSize=10, driverBudgetMB=0.01).fit(dense_df)
    assert model.scores.shape == (40,) and np.all(np.isfinite(model.scores))
    with pytest.raises(ValueError,
                       match="'driverBudgetMB' parameter of ReliefSelector must be a finite float in the range"):
        ReliefSelector(driverBudgetMB=0.0).fit(dense_df)
