"""Driver-side row sets under a budget: one seam of :class:`sparkfs.spark.rows.Rows`.

:class:`DriverRows` brings rows of a :class:`~sparkfs.spark.prepared_rows.PreparedRows` to the
driver -- all of them, or a seeded sample that depends on the rows' content only -- after
checking that their matrix fits the driver budget (``driver_budget_mb``, the selectors'
``driverBudgetMB``), and refuses a configuration above it with a message that names the Param
and the way to use fewer rows.

Passes run here (each only when asked for what it gives)
--------------------------------------------------------
* **all rows** (``toArrow``): every row to the driver; gives the counts and offsets too, so
  "all rows are queries" costs one job, not two.
* **non-zero count** (JVM ``Summarizer``): only when the dense size of the rows asked for is above
  the budget, to size them as CSR.
* **sample**: each partition keeps its rows with the smallest (key, id) pairs, the key a seeded
  hash of the row's content (:func:`~sparkfs.core.sampling.content_sample_keys`: features,
  label, weight), and the reduction keeps the global smallest: at most ``size`` rows travel per
  merge. The drawn rows depend on (seed, content) only; among rows of identical content the
  smaller id is drawn first (identical rows are interchangeable).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from sparkfs.core.sampling import content_sample_keys, smallest_key_positions
from sparkfs.errors import DriverBudgetError
from sparkfs.spark.blocks import aggregate_partitions
from sparkfs.spark.prepared_rows import FEATURES, LABEL, MONOTONIC_ID, ROW_ID, WEIGHT, PreparedRows
from sparkfs.spark.row_sets import (
    RowSet,
    merged_key_summaries,
    merged_sample_summaries,
    rows_of_table,
    sample_key_summary,
    sample_of_summary,
    sample_summary,
)

#: Bytes a row takes on the driver besides its features: id, label, weight.
ROW_OVERHEAD_BYTES = 24.0
#: Above this many bytes of dense sample (rows x features x 8), a sample takes two passes: the
#: (key, id) of every block's candidates, then the chosen rows only. In one pass each block ships
#: up to the whole sample's rows (measured: 16 blocks of 250 rows x 230,000 features ran a 9 GiB
#: driver out of memory).
SAMPLE_IN_ONE_PASS_BYTES = 64 * 2**20


class DriverRows:
    """All rows or a sample of a prepared input on the driver, within ``driver_budget_mb``.

    Parameters
    ----------
    source : PreparedRows
    transport : {"context", "dataframe"}
        The resolved transport of the sample pass.
    driver_budget_mb : float, optional
        None: no check.
    fewer_rows_hint : str
        The end of the refusal's message: how to bring fewer rows (the selector's Param).
    """

    def __init__(self, source: PreparedRows, *, transport: str, driver_budget_mb: Optional[float] = None,
                 fewer_rows_hint: str = "use fewer rows"):
        self.source = source
        self.transport = transport
        self.driver_budget_mb = driver_budget_mb
        self.fewer_rows_hint = fewer_rows_hint
        #: Every row (sorted by id) once :meth:`collect` ran; None before.
        self.all_rows: Optional[RowSet] = None
        self._nonzero_count: Optional[float] = None

    @property
    def info(self) -> Dict[str, Any]:
        return self.source.info

    def collect(self) -> RowSet:
        """Every row to the driver (sorted by id); gives the counts and offsets in the same job."""
        if self.all_rows is None:
            source = self.source
            self.check_driver_rows(source.n_rows if self.driver_budget_mb is not None else 0, "all rows")
            self.all_rows = source.diagnosed(self._collect_all_rows)
            self.info["passes"].append("all rows")
        return self.all_rows

    def _collect_all_rows(self) -> RowSet:
        source = self.source
        id_column = ROW_ID if source.has_user_ids else MONOTONIC_ID
        columns = [FEATURES, LABEL] + ([WEIGHT] if source.has_weights else []) + [id_column]
        table = source.base.select(*columns).toArrow()
        rows, class_counts, offsets = rows_of_table(
            table, FEATURES, LABEL, WEIGHT if source.has_weights else None, id_column,
            num_features=source.num_features, num_classes=source.num_classes, user_ids=source.has_user_ids,
            offsets=source.offsets, targets=source.targets)
        source.offsets = offsets
        if source.known_class_counts is None:
            source.known_class_counts = class_counts
        return rows

    def check_driver_rows(self, count: int, what: str) -> None:
        """Refuse, before any row travels, to bring ``count`` rows to the driver when their matrix
        (dense, or CSR: one more JVM pass counts the non-zeros when the dense size is above the
        budget) would exceed ``driver_budget_mb``. The message names the Param to change."""
        if self.driver_budget_mb is None or count == 0:
            return
        num_features = self.source.num_features
        budget = float(self.driver_budget_mb) * 2**20
        needed = count * (8.0 * num_features + ROW_OVERHEAD_BYTES)
        if needed > budget:
            nonzeros_per_row = self._nonzeros() / max(self.source.n_rows, 1)
            needed = count * (min(8.0 * num_features, 12.0 * nonzeros_per_row + 8.0) + ROW_OVERHEAD_BYTES)
        if needed > budget:
            raise DriverBudgetError(
                f"{what} ({count} x {num_features}) would take about {needed / 2**20:.0f} MiB on the driver, "
                f"above driverBudgetMB={float(self.driver_budget_mb):g}: raise driverBudgetMB (and "
                f"spark.driver.memory with it) or {self.fewer_rows_hint}")

    def _nonzeros(self) -> float:
        """Non-zero feature values over all rows (JVM Summarizer pass)."""
        from pyspark.ml.stat import Summarizer
        from pyspark.sql import functions as F

        def compute():
            metric = Summarizer.metrics("numNonZeros").summary(F.col(FEATURES)).alias("s")
            return self.source.base.select(metric).first()["s"]["numNonZeros"].toArray()

        if self._nonzero_count is None:
            self._nonzero_count = float(np.sum(self.source.diagnosed(compute)))
            self.info["passes"].append("non-zero count")
        return self._nonzero_count

    def sample(self, size: Optional[int], seed: int = 0) -> RowSet:
        """``size`` rows drawn by (seed, the rows' content), sorted by id; all rows when None or >= n.

        The rows with the smallest :func:`~sparkfs.core.sampling.content_sample_keys` (ties: the
        smaller id) whether drawn here from the collected rows or by the sample pass: the same rows
        for any partitioning and any row order (module notes)."""
        if size is None or self.all_rows is not None:
            rows = self.collect()
            if size is None or size >= len(rows):
                return rows
            keys = content_sample_keys(rows.matrix, rows.labels, rows.weights, seed)
            return rows.take(np.sort(smallest_key_positions(keys, rows.ids, size)))
        if size >= self.source.n_rows:
            return self.collect()
        self.check_driver_rows(size, f"a sample of {size} rows")
        return self.source.diagnosed(lambda: self._sample_rows(size, seed))

    def _sample_rows(self, size: int, seed: int) -> RowSet:
        num_features, has_weights = self.source.num_features, self.source.has_weights
        chosen = None
        if size * num_features * 8 > SAMPLE_IN_ONE_PASS_BYTES:
            # Every block may hold the whole sample, so one pass would ship up to `size` rows from
            # each: first the (key, id) of the candidates, then only the chosen rows.
            chosen = self._sample_ids(size, seed)

        def summarize(block):
            weights = np.asarray(block[WEIGHT], dtype=np.float64) if has_weights else None
            matrix, ids, labels = block[FEATURES], block[ROW_ID], block[LABEL]
            if chosen is not None:
                inside = np.isin(np.asarray(ids, dtype=np.int64), chosen)
                matrix, ids, labels = matrix[inside], np.asarray(ids)[inside], np.asarray(labels)[inside]
                weights = None if weights is None else weights[inside]
            return sample_summary(matrix, ids, labels, weights, size, seed)

        summary = aggregate_partitions(self.source.prepared, self.source.columns, summarize,
                                       lambda left, right: merged_sample_summaries(left, right, size, num_features),
                                       num_features=num_features, transport=self.transport)
        self.info["passes"].append("query sample")
        return sample_of_summary(summary, num_features, self.source.targets)

    def _sample_ids(self, size: int, seed: int) -> np.ndarray:
        """The ids of the sample's rows (the ``size`` smallest (key, id)), by a pass without rows."""
        has_weights = self.source.has_weights

        def summarize(block):
            weights = np.asarray(block[WEIGHT], dtype=np.float64) if has_weights else None
            return sample_key_summary(block[FEATURES], block[ROW_ID], block[LABEL], weights, size, seed)

        summary = aggregate_partitions(self.source.prepared, self.source.columns, summarize,
                                       lambda left, right: merged_key_summaries(left, right, size),
                                       num_features=self.source.num_features, transport=self.transport)
        self.info["passes"].append("sample keys")
        return np.sort(summary["ids"].astype(np.int64))
