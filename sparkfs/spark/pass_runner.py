"""The pass runner: one seam of :class:`sparkfs.spark.rows.Rows`.

:class:`PassRunner` runs the engine's passes over a
:class:`~sparkfs.spark.prepared_rows.PreparedRows`: every Arrow batch of every partition as a
:class:`~sparkfs.spark.row_sets.Block` (dense or CSR, in the caller's units), summarised and reduced
in a fixed order (:func:`sparkfs.spark.blocks.aggregate_partitions`; in the canonical layout one
chunk per block, folded in row-id order), or emitted as keyed partials for a shuffle (query batches
are cut by :func:`sparkfs.spark.passes.query_batches`, the one batcher), and, for iterative methods (``cache_blocks``),
keeps the encoded blocks persisted so that later passes skip
the conversion of the vector column. What a pass ships to its tasks goes through
:meth:`sparkfs.spark.rows.Rows.shipped`.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import numpy as np

from sparkfs.spark.blocks import (
    CONNECT_CLOSURE_BYTES,
    aggregate_partitions,
    arrow_blocks,
    cached_blocks,
    deserialize_summary,
    encode_block,
    serialize_summary,
)
from sparkfs.spark.canonical import canonical_merge, chunk_regrouper
from sparkfs.spark.prepared_rows import FEATURES, ROW_ID, PreparedRows, as_block
from sparkfs.spark.row_sets import Block, PassUnits

#: Default largest query batch handed to the tasks at once with a SparkContext (broadcast).
DEFAULT_QUERY_BATCH_BYTES = 128 * 2**20


class PassRunner:
    """Passes over prepared rows (module notes).

    Parameters
    ----------
    source : PreparedRows
    transport : {"context", "dataframe"}
        The resolved transport (:func:`sparkfs.spark.blocks.resolve_transport`).
    query_batch_bytes : int, optional
        Largest query batch (plus its per-batch tables) handed to the tasks at once; default
        128 MiB with a SparkContext, 48 MiB inside a Connect closure (never above that there).
    cache_blocks : bool
        Convert every Arrow batch to its dense/CSR matrix once and keep the encoded blocks
        persisted until :meth:`release` (one extra job, about the data's size in memory).
    """

    def __init__(self, source: PreparedRows, *, transport: str, query_batch_bytes: Optional[int] = None,
                 cache_blocks: bool = False):
        self.source = source
        self.transport = transport
        budget = DEFAULT_QUERY_BATCH_BYTES if query_batch_bytes is None else int(query_batch_bytes)
        self.query_batch_bytes = budget if transport == "context" else min(budget, CONNECT_CLOSURE_BYTES)
        self.cache_blocks = cache_blocks
        self._block_frame = None
        self._encoded_frames: List[Any] = []

    def release(self) -> None:
        """Unpersist the cached blocks and every frame of :meth:`encode_blocks`, if any."""
        if self._block_frame is not None:
            self._block_frame.unpersist()
            self._block_frame = None
        while self._encoded_frames:
            self._encoded_frames.pop().unpersist()

    def encode_blocks(self, name: str, encode: Callable[[Block], Dict[str, np.ndarray]], *,
                      units: Optional[PassUnits] = None):
        """Run ``encode`` once on every block and keep what it returns (a dict of NumPy arrays, e.g.
        the block's discretised codes) persisted until :meth:`release`; pass the returned frame to
        :meth:`run_pass` (``over=``) to summarise those dicts instead of the rows. One job."""
        from pyspark import StorageLevel
        from pyspark.sql.types import BinaryType, StructField, StructType

        source, has_weights, targets = self.source, self.source.has_weights, self.source.targets
        frame, columns, blocks_of_batch, regroup = self.pass_source()

        def encode_partition(batches):
            import pyarrow as pa

            for batch in (batches if regroup is None else regroup(batches)):
                payloads = [serialize_summary(encode(as_block(block, units, has_weights, targets)))
                            for block in blocks_of_batch(batch)]
                if payloads:
                    yield pa.RecordBatch.from_arrays([pa.array(payloads, pa.binary())], names=["block"])

        schema = StructType([StructField("block", BinaryType(), False)])
        encoded = frame.select(*columns).mapInArrow(encode_partition, schema).persist(StorageLevel.MEMORY_AND_DISK)
        self._encoded_frames.append(encoded)  # before the job: released even if it fails or is interrupted
        source.diagnosed(encoded.count)
        source.info["passes"].append(name)
        return encoded

    def _chunks(self):
        """A partition's batches -> one batch per chunk (None without the layout)."""
        return chunk_regrouper(ROW_ID, FEATURES) if self.source.canonical else None

    def pass_source(self):
        """(DataFrame, columns, batch -> blocks, regroup) of the passes: the prepared rows (cut
        into chunks by ``regroup`` in the canonical layout), or cached blocks (one per chunk)."""
        from pyspark import StorageLevel
        from pyspark.sql.types import BinaryType, StructField, StructType

        source, num_features = self.source, self.source.num_features
        if not self.cache_blocks:
            return source.prepared, source.columns, arrow_blocks(num_features), self._chunks()
        if self._block_frame is None:
            to_blocks, regroup = arrow_blocks(num_features), self._chunks()

            def encode_partition(batches):
                import pyarrow as pa

                for batch in (batches if regroup is None else regroup(batches)):
                    payloads = [encode_block(block) for block in to_blocks(batch)]
                    if payloads:
                        yield pa.RecordBatch.from_arrays([pa.array(payloads, pa.binary())], names=["block"])

            schema = StructType([StructField("block", BinaryType(), False)])
            frame = source.prepared.select(*source.columns).mapInArrow(encode_partition, schema)
            frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
            source.diagnosed(frame.count)
            self._block_frame = frame
            source.info["passes"].append("blocks (cached)")
        return self._block_frame, ["block"], cached_blocks(num_features), None

    def keyed_partials(self, emit_block: Callable[[Block], Any], units: Optional[PassUnits] = None):
        """A lazy DataFrame ``(key long, partition long, values array<double>)`` of per-key partials.

        ``emit_block(block)`` returns ``(keys (r,), values (r, p))`` for one block (in the pass's
        ``units``); the caller sums the partials per key (see
        :func:`sparkfs.spark.neighbours.pair_sums`). Nothing runs until the caller materialises it
        (it must inside the ``with`` blocks of what it ships).
        """
        import pyarrow as pa
        from pyspark.sql.types import ArrayType, DoubleType, LongType, StructField, StructType

        num_features, has_weights, targets = self.source.num_features, self.source.has_weights, self.source.targets
        frame, columns, blocks_of_batch, regroup = self.pass_source()
        canonical = self.source.canonical

        def emit_partition(batches):
            from pyspark import TaskContext

            partition = TaskContext.get().partitionId()
            batches = batches if regroup is None else regroup(batches)
            for block in (block for batch in batches for block in blocks_of_batch(batch)):
                if canonical:  # a chunk's first row id orders the partials (module notes of canonical)
                    partition = int(np.asarray(block[ROW_ID])[0])
                keys, values = emit_block(as_block(block, units, has_weights, targets))
                values = np.ascontiguousarray(values, dtype=np.float64)
                offsets = np.arange(keys.size + 1, dtype=np.int32) * num_features
                yield pa.RecordBatch.from_arrays(
                    [pa.array(np.asarray(keys, dtype=np.int64)), pa.array(np.full(keys.size, partition, np.int64)),
                     pa.ListArray.from_arrays(pa.array(offsets), pa.array(values.ravel()))],
                    names=["key", "partition", "values"],
                )

        schema = StructType([StructField("key", LongType(), False), StructField("partition", LongType(), False),
                             StructField("values", ArrayType(DoubleType(), False), True)])
        return frame.select(*columns).mapInArrow(emit_partition, schema)

    def run_pass(self, name: Optional[str], summarize_block: Callable[[Block], Dict[str, np.ndarray]],
                 merge: Callable[[Dict, Dict], Dict], *,
                 units: Optional[PassUnits] = None, over=None) -> Optional[Dict[str, np.ndarray]]:
        """One pass: every Arrow batch of every partition as a :class:`Block` (in the pass's
        ``units``: :class:`sparkfs.spark.row_sets.PassUnits`), summarised and reduced; ``name`` (None: the caller
        records the pass) goes to ``info["passes"]``. ``over``: a frame of :meth:`encode_blocks`, whose dicts are
        summarised instead (no canonical merge: for integer summaries)."""
        source, has_weights, targets = self.source, self.source.has_weights, self.source.targets

        def summarize(raw):
            return summarize_block(as_block(raw, units, has_weights, targets))

        if over is not None:
            summary = source.diagnosed(lambda: aggregate_partitions(
                over, ["block"], summarize_block, merge, num_features=source.num_features, transport=self.transport,
                blocks_of_batch=encoded_dicts))
            if name is not None:
                source.info["passes"].append(name)
            return summary
        frame, columns, blocks_of_batch, regroup = self.pass_source()
        summary = source.diagnosed(lambda: aggregate_partitions(
            frame, columns, summarize, merge, num_features=source.num_features,
            transport=self.transport, blocks_of_batch=blocks_of_batch, regroup=regroup,
            **(canonical_merge(ROW_ID, source.n_rows) if source.canonical else {}),
        ))
        if name is not None:
            source.info["passes"].append(name)
        return summary


def encoded_dicts(batch):
    """The dicts of a batch of :meth:`PassRunner.encode_blocks`' frame."""
    for payload in batch.column("block").to_pylist():
        yield deserialize_summary(payload)
