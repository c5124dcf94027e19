"""Lmba's step pass over every row on CSR rows: the per-instance impostor sums of rule "replay"
travel and merge as CSR, and the weights equal those of the same rows stored dense, and of the
in-memory driver, for 1 and 3 partitions."""

import numpy as np
import pytest
import scipy.sparse as sp

pytest.importorskip("pyspark")

from pyspark.ml.linalg import Vectors, VectorUDT
from pyspark.sql.types import DoubleType, StructField, StructType

from sparkfs.core import margin_weighting as mw
from sparkfs.core.margin_runs import MarginRun
from sparkfs.core.options import LmbaOptions
from sparkfs.spark import margin_weighting as spark_mw
from sparkfs.spark.margin_weighting import lmba_statistics
from tests.core.test_lmba_sparse import assert_close, sparse_data
from tests.spark.test_margin_weighting import visited


def frame(spark, matrix, labels, partitions, sparse):
    """Every row a SparseVector (``sparse``) or a DenseVector, in order, in ``partitions`` slices."""
    rows = []
    for i in range(matrix.shape[0]):
        row = matrix[i]
        vector = Vectors.sparse(matrix.shape[1], row.indices.tolist(), row.data.tolist()) if sparse else \
            Vectors.dense(row.toarray().ravel().tolist())
        rows.append((vector, float(labels[i])))
    schema = StructType([StructField("features", VectorUDT()), StructField("label", DoubleType())])
    return spark.createDataFrame(spark.sparkContext.parallelize(rows, partitions), schema)


@pytest.mark.parametrize("rule,projection", [("replay", "none"), ("replay", "clip"), ("sum", "clip")])
def test_lmba_over_every_row_on_csr_rows_equals_the_dense_rows_for_any_partitioning(spark, monkeypatch, rule,
                                                                                      projection):
    matrix, labels = sparse_data(n=30, num_features=200, per_row=10, seed=4, integer=False)
    run = MarginRun(schedule="decay", step_size=0.5, iterations=12, batch_size=4, batch_rule=rule)
    options = LmbaOptions(k=2, c=0.5, run=run, projection=projection, seed=1)
    kinds = []
    returned = spark_mw.matrix_from_summary

    def recording(summary, prefix, num_features):  # what the step pass brings to the driver
        result = returned(summary, prefix, num_features)
        if prefix == "impostor_":
            kinds.append("csr" if sp.issparse(result) else "dense")
        return result

    monkeypatch.setattr(spark_mw, "matrix_from_summary", recording)
    found = {}
    for sparse, partitions in ((False, 1), (True, 1), (True, 3)):
        kinds.clear()
        found[sparse, partitions] = lmba_statistics(frame(spark, matrix, labels, partitions, sparse), "features",
                                                    "label", num_features=200, num_classes=3,
                                                    options=options).raw_weights
        expected_kind = "csr" if sparse and rule == "replay" else "dense"
        assert kinds and set(kinds) == {expected_kind}
    assert_close(found[True, 1], found[False, 1])
    assert_close(found[True, 3], found[True, 1])
    dense = matrix.toarray()
    pool = visited(dense, labels, 1)
    in_memory = mw.lmba_in_memory(dense[pool], labels[pool], k=2, c=0.5, iterations=12, batch_size=4, step_size=0.5,
                                  schedule="decay", seed=1, projection=projection, batch_rule=rule)[1]
    assert_close(found[True, 3], in_memory)
    assert np.max(np.abs(in_memory - 1.0)) > 1e-3
