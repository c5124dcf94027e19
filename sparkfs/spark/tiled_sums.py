"""A pass whose additive summary is too large to collect once per task: summed tile by tile on the
executors, so that the driver receives the final sums once.

:func:`sparkfs.spark.blocks.aggregate_partitions` ships one summary per partition (or per group
of the canonical layout) to the driver, or to a fixed two-level merge of whole summaries. That is
right for summaries of a few MiB and wrong for QFS's per-class Gram matrices, (C + 1) p^2
doubles: with 20 classes and 1,000 candidates, 168 MB per task, and seven of them overran
``spark.driver.maxResultSize`` on the 100,000 x 50,000 term matrix. Here:

1. each task adds its blocks into one accumulator (``add_block(accumulator, block)``, in place);
2. when its key changes (the partition; in the canonical layout, the group of
   :mod:`sparkfs.spark.canonical`) it cuts the accumulator into *tiles* of at most
   :data:`TILE_VALUES` doubles -- symmetric matrices as their packed upper triangle only -- and
   emits them as rows ``(tile, key, values)``;
3. ``repartition(tile) . sortWithinPartitions(tile, key) . mapInArrow`` folds the tiles of each
   tile id in key order on the executors (streaming: one tile held at a time);
4. the driver collects one row per tile and unpacks the arrays.

Order. A tile's value is ``((k_0 + k_1) + k_2) + ...`` over the keys in increasing order, and each
key's accumulator is a function of the rows of that key. In the canonical layout a key is a group
(folded chunk by chunk in chunk order), so the sums are the same bits for any partitioning: the
order of :func:`aggregate_partitions`' canonical merge. Without the layout the keys are partition
indices: equal to rounding across partitionings.

Memory. A task: its accumulator plus one tile (and its blocks). A reducer: one tile. The driver:
the final sums plus the collected tiles (half of the symmetric part). Shuffle: one summary's tiles
per key. DataFrame API only (``mapInArrow``, ``repartition``, ``sortWithinPartitions``,
``toArrow``): it runs on Spark Connect, where no SparkContext exists.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pyarrow as pa

from sparkfs.spark.blocks import arrow_blocks

#: Doubles per tile (1 MiB): small enough to stream, large enough that rows cost little.
TILE_VALUES = 2**17
#: Most partitions of the reduction by tile (fewer when there are fewer tiles).
REDUCE_PARTITIONS = 16


@dataclass(frozen=True)
class SummaryLayout:
    """Names and shapes of the summary's arrays, in order; ``symmetric`` names arrays whose last
    two axes are symmetric matrices (only their upper triangles travel)."""

    shapes: Tuple[Tuple[str, Tuple[int, ...]], ...]
    symmetric: Tuple[str, ...] = ()

    def zeros(self) -> Dict[str, np.ndarray]:
        return {name: np.zeros(shape) for name, shape in self.shapes}

    def segments(self) -> List[Tuple[str, Optional[tuple], int]]:
        """``(name, matrix index or None, values)`` of every piece the tiles cut: a symmetric
        array is one packed triangle per leading index, any other array one flat piece."""
        pieces = []
        for name, shape in self.shapes:
            if name in self.symmetric:
                side = shape[-1]
                pieces.extend((name, index, side * (side + 1) // 2) for index in np.ndindex(*shape[:-2]))
            else:
                pieces.append((name, None, int(np.prod(shape, dtype=np.int64))))
        return pieces


def tile_count(layout: SummaryLayout, tile_values: int) -> int:
    return sum(-(-values // tile_values) for _, _, values in layout.segments())


def _segment_values(array: np.ndarray, index: Optional[tuple]) -> np.ndarray:
    if index is None:
        return array.reshape(-1)
    matrix = array[index]
    return matrix[np.triu_indices(matrix.shape[0])]


def summary_tiles(summary: Dict[str, np.ndarray], layout: SummaryLayout, key: int,
                  tile_values: int) -> Iterator[pa.RecordBatch]:
    """The rows ``(tile, key, values)`` of one summary, a record batch per segment."""
    tile = 0
    for name, index, size in layout.segments():
        values = _segment_values(summary[name], index)
        starts = list(range(0, size, tile_values))
        offsets = np.array([*starts, size], dtype=np.int32)
        yield pa.RecordBatch.from_arrays(
            [pa.array(np.arange(tile, tile + len(starts), dtype=np.int64)),
             pa.array(np.full(len(starts), key, dtype=np.int64)),
             pa.ListArray.from_arrays(pa.array(offsets), pa.array(np.ascontiguousarray(values)))],
            names=["tile", "key", "values"])
        tile += len(starts)


def fold_sorted_tiles(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Rows sorted by (tile, key) -> one row per tile: its values summed in key order."""
    current, total = None, None

    def finished():
        return pa.RecordBatch.from_arrays(
            [pa.array([current], pa.int64()), pa.array([total], pa.list_(pa.float64()))], names=["tile", "values"])

    for batch in batches:
        tiles = batch.column(0).to_numpy(zero_copy_only=False)
        lists = batch.column(2)
        offsets = lists.offsets.to_numpy(zero_copy_only=False)  # into .values, which ignores a slice
        flat = lists.values.to_numpy(zero_copy_only=False)
        for row, tile in enumerate(tiles.tolist()):
            values = flat[offsets[row]:offsets[row + 1]]
            if tile != current:
                if current is not None:
                    yield finished()
                current, total = tile, np.array(values, dtype=np.float64)
            else:
                total += values
    if current is not None:
        yield finished()


def unpack_tiles(table: pa.Table, layout: SummaryLayout, tile_values: int) -> Dict[str, np.ndarray]:
    """The summary's arrays from the collected ``(tile, values)`` rows (one per tile)."""
    order = np.argsort(table.column("tile").to_numpy(), kind="stable")
    lists = table.column("values").combine_chunks()
    offsets = lists.offsets.to_numpy(zero_copy_only=False)
    flat = lists.values.to_numpy(zero_copy_only=False)
    summary = layout.zeros()
    tile = 0
    for name, index, size in layout.segments():
        count = -(-size // tile_values)
        rows = order[tile:tile + count]
        values = np.concatenate([flat[offsets[row]:offsets[row + 1]] for row in rows])
        tile += count
        if index is None:
            summary[name][...] = values.reshape(summary[name].shape)
            continue
        matrix = summary[name][index]
        upper = np.triu_indices(matrix.shape[0])
        matrix[upper] = values
        matrix[upper[1], upper[0]] = values
    return summary


def tiled_pass(frame, columns: Sequence[str], layout: SummaryLayout,
               add_block: Callable[[Dict[str, np.ndarray], Dict[str, object]], None], *, num_features: int,
               regroup: Optional[Callable] = None, key_of_block: Optional[Callable[[Dict[str, object]], int]] = None,
               tile_values: Optional[int] = None) -> Optional[Dict[str, np.ndarray]]:
    """One pass over ``frame``: blocks added into one accumulator per key, summed by tile on the
    executors (module notes). Returns the summary, or None when ``frame`` has no rows.

    Parameters
    ----------
    frame : pyspark.sql.DataFrame
    columns : the columns handed to ``add_block`` (vector columns as dense or CSR matrices,
        :func:`sparkfs.spark.blocks.arrow_blocks`).
    layout : the arrays of the summary.
    add_block : ``(accumulator, block dict)``: adds the block's share in place (runs in the tasks).
    num_features : the size of the vector columns.
    regroup, key_of_block : the canonical layout (:func:`sparkfs.spark.canonical.chunk_regrouper`,
        ``canonical_merge(...)["key_of_block"]``); default: Arrow batches, keyed by partition.
    tile_values : doubles per tile; default :data:`TILE_VALUES`.
    """
    from pyspark.sql.types import ArrayType, DoubleType, LongType, StructField, StructType

    to_blocks = arrow_blocks(num_features)
    tile_values = int(tile_values or TILE_VALUES)

    def emit_tiles(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        accumulator, key = None, TaskContext.get().partitionId()
        for batch in (batches if regroup is None else regroup(batches)):
            for block in to_blocks(batch):
                block_key = key if key_of_block is None else key_of_block(block)
                if block_key != key and accumulator is not None:
                    yield from summary_tiles(accumulator, layout, key, tile_values)
                    accumulator = None
                key = block_key
                accumulator = layout.zeros() if accumulator is None else accumulator
                add_block(accumulator, block)
        if accumulator is not None:
            yield from summary_tiles(accumulator, layout, key, tile_values)

    values = StructField("values", ArrayType(DoubleType(), False), False)
    tiles_schema = StructType([StructField("tile", LongType(), False), StructField("key", LongType(), False), values])
    summed_schema = StructType([StructField("tile", LongType(), False), values])
    partitions = max(1, min(REDUCE_PARTITIONS, tile_count(layout, tile_values)))
    summed = (frame.select(*columns).mapInArrow(emit_tiles, tiles_schema)
              .repartition(partitions, "tile").sortWithinPartitions("tile", "key")
              .mapInArrow(fold_sorted_tiles, summed_schema))
    table = summed.toArrow()
    if table.num_rows == 0:
        return None
    if table.num_rows != tile_count(layout, tile_values):
        raise AssertionError(f"tiled_pass: {table.num_rows} tiles came back, "
                             f"{tile_count(layout, tile_values)} expected")
    return unpack_tiles(table, layout, tile_values)


def summary_bytes(layout: SummaryLayout) -> int:
    """Bytes of the summary's arrays (what a task accumulates)."""
    return 8 * sum(math.prod(shape) for _, shape in layout.shapes)


__all__ = ["REDUCE_PARTITIONS", "TILE_VALUES", "SummaryLayout", "fold_sorted_tiles", "summary_bytes",
           "summary_tiles", "tile_count", "tiled_pass", "unpack_tiles"]
