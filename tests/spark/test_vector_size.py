"""The vector size a fit starts from (one Spark job for a univariate fit): read from Spark
ML's attribute metadata where the column declares it (sparkfs's LIBSVM reader, VectorAssembler), with
no job; else from the first row. A declared size of 0 is refused as empty vectors."""

import numpy as np
import pytest
from pyspark.ml.feature import VectorAssembler

from sparkfs.errors import InvalidInputError
from sparkfs.io.readers import read_dataset
from sparkfs.spark.stats import first_vector_size, metadata_vector_size
from tests.helpers import jobs_run_by, make_df


def _jobs_run_by(spark, action):
    value, jobs = jobs_run_by(spark, "sparkfs-vector-size-test", action)
    return value, len(jobs)


def test_the_libsvm_reader_declares_the_size_and_no_job_reads_it(spark, tmp_path):
    path = tmp_path / "small.libsvm"
    path.write_text("1 1:0.5 7:2\n0 2:1\n")
    dataset = read_dataset(spark, str(path), "libsvm")
    assert metadata_vector_size(dataset.df, "features") == 7
    size, jobs = _jobs_run_by(spark, lambda: first_vector_size(dataset.df, "features"))
    assert (size, jobs) == (7, 0)


def test_without_metadata_the_first_row_is_read(spark):
    df = make_df(spark, np.ones((4, 3)), [0, 1, 0, 1])
    assert metadata_vector_size(df, "features") is None
    size, jobs = _jobs_run_by(spark, lambda: first_vector_size(df, "features"))
    assert size == 3 and jobs >= 1


def test_vector_assemblers_metadata_and_an_empty_declared_size(spark):
    frame = spark.createDataFrame([(1.0, 2.0, 0.0), (3.0, 4.0, 1.0)], ["a", "b", "label"])
    assembled = VectorAssembler(inputCols=["a", "b"], outputCol="features").transform(frame)
    assert first_vector_size(assembled, "features") == 2
    from pyspark.sql import functions as F

    empty = assembled.select(F.col("features").alias("features", metadata={"ml_attr": {"num_attrs": 0}}))
    with pytest.raises(InvalidInputError, match="are empty"):
        first_vector_size(empty, "features")
