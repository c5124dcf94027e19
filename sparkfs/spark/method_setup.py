"""What the Spark function of every method on the pair engine starts with.

* :class:`EngineOptions`: the engine's settings (row ids and how rows without them are numbered,
  instance weights, transport, query batch budget, driver budget, canonical layout), frozen and validated once, shared
  by every method; the method's own options are one object of :mod:`sparkfs.core.options`.
* :func:`options_of`: the two objects a method's Spark function was given, defaults for the
  missing ones (the functions take the objects only: ``relief_statistics(df, ...,
  options=ReliefOptions(variant="relieff", k=3), engine=EngineOptions(transport="dataframe"))``).
* :func:`rows_with_queries`: the prepared :class:`~sparkfs.spark.rows.Rows` and the query set (a
  sample, or every row), the method's class rule checked before the sample travels and after.
* :func:`feature_scale_of`: the divisor of every feature for a scaling (and the column
  statistics it came from).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Tuple

import numpy as np

from sparkfs.core.options import check_int, invalid
from sparkfs.core.scaling import feature_scale
from sparkfs.spark.blocks import TRANSPORTS
from sparkfs.spark.prepared_rows import ROW_ORDERS
from sparkfs.spark.rows import Rows, RowSet

#: How to bring fewer rows to the driver when the queries are every row (the selectors' Param).
SAMPLE_HINT = "set sampleSize to use a sample of the rows as queries"


@dataclass(frozen=True)
class EngineOptions:
    """The pair engine's settings (see :class:`sparkfs.spark.rows.Rows` for each)."""

    row_id_col: Optional[str] = None
    weight_col: Optional[str] = None
    transport: str = "auto"
    query_batch_bytes: Optional[int] = None
    driver_budget_mb: Optional[float] = None
    canonical: bool = True
    row_order: str = "input"

    def __post_init__(self):
        owner = "EngineOptions"
        if self.row_order not in ROW_ORDERS:
            raise invalid("row_order", owner, "a str among {" + ", ".join(repr(o) for o in ROW_ORDERS) + "}",
                          self.row_order)
        if self.transport not in TRANSPORTS:
            raise invalid("transport", owner, "a str among {" + ", ".join(repr(t) for t in TRANSPORTS) + "}",
                          self.transport)
        check_int("query_batch_bytes", owner, self.query_batch_bytes, 1, optional=True)
        budget = self.driver_budget_mb
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, (int, float, np.number))
                                   or not np.isfinite(budget) or budget <= 0):
            raise invalid("driver_budget_mb", owner, "None or a float in the range (0, inf)", budget)
        for name in ("row_id_col", "weight_col"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise invalid(name, owner, "None or a column name", value)

    def rows(self, df, features_col: str, label_col: Optional[str], *, num_features: int,
             num_classes: Optional[int], cache_blocks: bool = False, fewer_rows_hint: str = SAMPLE_HINT,
             targets: bool = False) -> Rows:
        """The :class:`Rows` of ``df`` with these settings (use as a context manager); ``targets``:
        ``label_col`` is a continuous target."""
        return Rows(df, features_col, num_features=num_features, label_col=label_col, num_classes=num_classes,
                    targets=targets,
                    weight_col=self.weight_col, row_id_col=self.row_id_col, transport=self.transport,
                    query_batch_bytes=self.query_batch_bytes, cache_blocks=cache_blocks,
                    driver_budget_mb=self.driver_budget_mb, fewer_rows_hint=fewer_rows_hint,
                    canonical=self.canonical, row_order=self.row_order)


def options_of(options_class, options, engine: Optional[EngineOptions]):
    """``(options, engine)`` of a method's Spark function: the objects given, or the defaults
    (``options_class()``, ``EngineOptions()``) for the ones left None."""
    return (options if options is not None else options_class(),
            engine if engine is not None else EngineOptions())


@contextmanager
def rows_with_queries(df, features_col: str, label_col: Optional[str], *, num_features: int,
                      num_classes: Optional[int], engine: EngineOptions, sample_size: Optional[int], seed: int,
                      check_classes: Optional[Callable[[np.ndarray], None]] = None, targets: bool = False,
                      **row_settings) -> Iterator[Tuple[Rows, RowSet]]:
    """``with rows_with_queries(...) as (rows, queries):`` the prepared rows and the query set
    (``sample_size`` rows drawn by ``seed``, or every row when None or at least the rows), for a
    supervised method or an unsupervised one (``label_col`` and ``num_classes`` None).
    ``check_classes(class_counts)`` runs before a sample is drawn (fail fast) and on the counts the
    queries came with (``targets``: the label is a continuous target, its counts the row count);
    ``row_settings`` go to :meth:`EngineOptions.rows` (``cache_blocks``, ``fewer_rows_hint``)."""
    check = check_classes or (lambda counts: None)
    with engine.rows(df, features_col, label_col, num_features=num_features, num_classes=num_classes,
                     targets=targets, **row_settings) as rows:
        if sample_size is not None:
            check(rows.class_counts)
        queries = rows.sample(sample_size, seed)
        check(rows.class_counts)
        yield rows, queries


def feature_scale_of(rows: Rows, scaling: str, *, need_statistics: bool = False):
    """``(scale, statistics)``: the divisor of every feature for ``scaling`` (ones for "none") and
    the column statistics (None unless computed: for a scaling, or when ``need_statistics``)."""
    if scaling == "none" and not need_statistics:
        return np.ones(rows.num_features), None
    statistics = rows.column_statistics()
    if scaling == "none":
        return np.ones(rows.num_features), statistics
    scale = feature_scale(scaling, minimum=statistics.minimum, maximum=statistics.maximum, std=statistics.std,
                          num_features=rows.num_features)
    return scale, statistics
