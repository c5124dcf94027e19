"""Per-row values computed on the driver, attached to the input without a join.

Instance weights (Han & Yu's eq. 7) and bootstrap multiplicities are one number per row, known
on the driver as an array indexed by row id. :func:`with_row_values` adds them to the input as a
column: the (ids, values) arrays travel to the tasks (broadcast with a SparkContext, inside the
closure on Spark Connect: 16 bytes a row), and a vectorised UDF looks each row's id up. No join,
so the input keeps its order and partitioning.

Row ids are the user's id column, or the row's position in the input order, recomputed from the
partition offsets exactly as :class:`sparkfs.spark.rows.Rows` numbers the rows (the DataFrame
must then be the same rows in the same partitions, i.e. a deterministic input). A position is
read from the partition the column is evaluated in: persist the result (or select from it into
a persisted frame) before a union or anything else that renumbers partitions reads it.

The (ids, values) shipment lives as long as what reads it: :func:`row_values_attached` (a
``with`` block) destroys it when the block ends, for the frames a fit or a fold uses and drops
(an SVM-RFE ensemble member, a stability draw, an evaluation fold); :func:`with_row_values`
leaves it to the returned DataFrame, for a frame handed to the user (instance weights), whose
shipment goes with its last reference.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Dict, Iterator, Optional, Tuple

import numpy as np
import pandas as pd

from sparkfs.errors import InvalidInputError
from sparkfs.spark.blocks import resolve_transport, ship_to_tasks
from sparkfs.spark.row_sets import PARTITION_SHIFT, offsets_of_partitions


def position_column(partition_offsets: Dict[int, int]):
    """The Column of each row's position (0..n-1) in the input order."""
    from pyspark.sql import functions as F

    monotonic = F.monotonically_increasing_id()
    pairs = [F.lit(value) for pair in sorted(partition_offsets.items()) for value in pair]
    return (F.element_at(F.create_map(*pairs), F.shiftright(monotonic, PARTITION_SHIFT))
            + monotonic.bitwiseAND(F.lit((1 << PARTITION_SHIFT) - 1)))


def labels_by_position(df, label_col: str) -> Tuple[np.ndarray, Dict[int, int]]:
    """Every row's label (as double) in input order, and the partition offsets; one small job."""
    from pyspark.sql import functions as F

    table = df.select(F.col(label_col).cast("double").alias("label"),
                      F.monotonically_increasing_id().alias("monotonic")).toArrow()
    monotonic = table.column("monotonic").to_numpy().astype(np.int64)
    order = np.argsort(monotonic, kind="stable")
    partitions, counts = np.unique(monotonic >> PARTITION_SHIFT, return_counts=True)
    offsets = offsets_of_partitions({int(q): int(c) for q, c in zip(partitions, counts)})
    labels = table.column("label").to_numpy(zero_copy_only=False)[order]
    return labels, offsets


def with_row_values(df, ids, values, output_col: str, *, partition_offsets: Optional[Dict[int, int]] = None,
                    row_id_col: Optional[str] = None, transport: str = "auto", what: str = "value"):
    """``df`` with ``output_col`` = ``values[i]`` for the row whose id is ``ids[i]``; the shipment
    lives with the returned DataFrame (for a frame used within a scope: :func:`row_values_attached`).

    Parameters
    ----------
    ids : array (n,) of int
        Sorted ascending.
    values : array (n,) of float
    partition_offsets : dict
        For positional ids (no ``row_id_col``).
    row_id_col : str, optional
        The user's id column.
    what : str
        Names the values in the error raised for a row without one.
    """
    frame, _ = _attached(df, ids, values, output_col, partition_offsets=partition_offsets, row_id_col=row_id_col,
                         transport=transport, what=what)
    return frame


@contextmanager
def row_values_attached(df, ids, values, output_col: str, *, partition_offsets: Optional[Dict[int, int]] = None,
                        row_id_col: Optional[str] = None, transport: str = "auto",
                        what: str = "value") -> Iterator:
    """:func:`with_row_values` for the ``with`` block: the block gets the DataFrame, and the
    shipment is destroyed when it ends (every job reading the column, and every frame persisted
    from it, must be done and dropped by then)."""
    frame, handle = _attached(df, ids, values, output_col, partition_offsets=partition_offsets,
                              row_id_col=row_id_col, transport=transport, what=what)
    try:
        yield frame
    finally:
        handle.destroy()


def _attached(df, ids, values, output_col: str, *, partition_offsets, row_id_col, transport, what):
    """(the DataFrame with the column, the shipment's handle)."""
    from pyspark.sql import functions as F

    if output_col in df.columns:
        raise InvalidInputError(f"column '{output_col}' already exists in the input; choose another output column")
    if (row_id_col is None) == (partition_offsets is None):
        raise ValueError("pass exactly one of row_id_col (user ids) and partition_offsets (positional ids)")
    ids = np.asarray(ids, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    if ids.shape != values.shape or ids.ndim != 1 or ids.size == 0 or np.any(np.diff(ids) <= 0):
        raise ValueError("ids must be a non-empty, strictly increasing 1-d array of the same shape as values")
    handle = ship_to_tasks(df.sparkSession, {"ids": ids, "values": values},
                           resolve_transport(df.sparkSession, transport))

    @F.pandas_udf("double")
    def value_of(row_ids: pd.Series) -> pd.Series:
        shipped = handle.value
        known_ids, known_values = shipped["ids"], shipped["values"]
        wanted = row_ids.to_numpy(dtype=np.int64)
        position = np.minimum(np.searchsorted(known_ids, wanted), known_ids.size - 1)
        missing = known_ids[position] != wanted
        if np.any(missing):
            raise InvalidInputError(f"row id(s) {wanted[missing][:5].tolist()} have no {what}: the DataFrame "
                                    "is not the one it was computed from")
        return pd.Series(known_values[position])

    key = F.col(row_id_col).cast("long") if row_id_col is not None else position_column(partition_offsets)
    return df.withColumn(output_col, value_of(key)), handle


def with_probe_features(df, features_col: str, partition_offsets: Dict[int, int], *, n_probes: int, mean: float,
                        variance: float, seed: int, output_col: str):
    """``df`` with ``output_col`` = the features followed by ``n_probes`` irrelevant Gaussian
    N(mean, variance) values (Yang & Hu's probe protocol, :mod:`sparkfs.evaluation.probes`).

    Row i's probes come from ``numpy.random.default_rng([seed, i])`` with i its position in the
    input order: the same for any partitioning, drawn for all rows before any fold is cut. Persist
    the result before use (positions, see the module notes).
    """
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F

    if n_probes < 1 or not variance > 0:
        raise ValueError(f"probes need n_probes >= 1 and a positive variance; got {n_probes} and {variance}")
    scale = float(np.sqrt(variance))

    @F.pandas_udf("array<double>")
    def probes_of(positions: pd.Series) -> pd.Series:
        return pd.Series([np.random.default_rng([int(seed), int(position)]).normal(mean, scale, n_probes)
                          for position in positions.to_numpy(dtype=np.int64)])

    probe_col = output_col + "__probes"
    with_probes = df.withColumn(probe_col, array_to_vector(probes_of(position_column(partition_offsets))))
    assembled = VectorAssembler(inputCols=[features_col, probe_col], outputCol=output_col).transform(with_probes)
    return assembled.drop(probe_col)
