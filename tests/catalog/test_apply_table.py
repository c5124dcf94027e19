"""`apply --output-table NAME`: the reduced rows written to a table of the catalog, partitioned by a run_id
column; the first run creates it with sparkfs's marker property, `--if-exists fail|skip|overwrite` act on the run
id, a table sparkfs did not create (or one of another kind) is refused and kept, rows of other columns or of
another selection are refused, and a failed run leaves no rows and no table it created.

Run on the suite's session, whose warehouse is a temporary directory (tests/conftest.py).
"""

import numpy as np
import pytest

from sparkfs.cli import main
from tests.commands.test_apply import _libsvm_lines
from tests.helpers import refused

DATABASE = "sparkfs_apply_tables"
WORDS = ["apple", "bread", "cheese", "dates", "eggs", "flour"]


def _libsvm(path, rng, rows, informative):
    path.write_text(_libsvm_lines(rng, rows, informative, width=6))
    return path


@pytest.fixture(scope="module")
def fitted(spark, tmp_path_factory):
    """Two selections of the same six terms (informative 1, 4 and 0, 2), and tomorrow's rows."""
    rng = np.random.default_rng(3)
    folder = tmp_path_factory.mktemp("fitted")
    (folder / "words.txt").write_text("\n".join(WORDS) + "\n")
    for name, informative in (("sel", (1, 4)), ("other", (0, 2))):
        train = _libsvm(folder / f"{name}.libsvm", rng, 40, informative)
        assert main(["select", "--input", str(train), "--format", "libsvm", "--method", "anova", "--num-features",
                     "2", "--feature-names", str(folder / "words.txt"), "--vector-size", "6", "--master", "local[2]",
                     "--output", str(folder / name)]) == 0
    _libsvm(folder / "new.libsvm", rng, 9, (1, 4))
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
    yield folder
    spark.sql(f"DROP DATABASE IF EXISTS {DATABASE} CASCADE")


def _apply(folder, run_id, *extra, table=f"{DATABASE}.reduced", model="sel"):
    return main(["apply", "--model", str(folder / model), "--input", str(folder / "new.libsvm"), "--format", "libsvm",
                 "--feature-names", str(folder / "words.txt"), "--master", "local[2]", "--output-table", table,
                 "--run-id", run_id, *extra])


def _rows(spark, name):
    return {row["run_id"]: row["count"] for row in spark.table(name).groupBy("run_id").count().collect()}


def _vectors(frame):
    return sorted(tuple(row["features"].toArray().tolist()) for row in frame.collect())


def test_runs_write_their_rows_and_reruns_follow_if_exists(spark, fitted, tmp_path, capsys):
    table = f"{DATABASE}.reduced"
    assert _apply(fitted, "a1") == 0
    assert f"output: table {table} (run_id a1; the selected features:" in capsys.readouterr().out
    properties = {row[0]: row[1] for row in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}
    assert properties["sparkfs.output"] == "apply-rows"
    # the same rows as apply writes to a directory, with the run id
    assert main(["apply", "--model", str(fitted / "sel"), "--input", str(fitted / "new.libsvm"), "--format", "libsvm",
                 "--feature-names", str(fitted / "words.txt"), "--master", "local[2]",
                 "--output", str(tmp_path / "dir")]) == 0
    directory = spark.read.parquet(str(tmp_path / "dir"))
    written = spark.table(table)
    assert written.columns == [*directory.columns, "run_id"]
    assert _vectors(written) == _vectors(directory)
    names = [attribute["name"] for attribute in written.schema["features"].metadata["ml_attr"]["attrs"]["numeric"]]
    assert names == [attribute["name"] for attribute in
                     directory.schema["features"].metadata["ml_attr"]["attrs"]["numeric"]]
    assert _apply(fitted, "a2") == 0
    assert _rows(spark, table) == {"a1": 9, "a2": 9}
    # a run id already there: fail (the default) refuses before the read; skip does nothing
    capsys.readouterr()
    assert _apply(fitted, "a1") == 2
    assert f"--output-table: run a1 is already in table {table}" in capsys.readouterr().err
    assert _apply(fitted, "a1", "--if-exists", "skip") == 0
    assert f"skipped: table {table} already holds run a1" in capsys.readouterr().err
    assert _rows(spark, table) == {"a1": 9, "a2": 9}
    # overwrite replaces the run's rows, and only them
    assert _apply(fitted, "a1", "--overwrite") == 0
    assert _rows(spark, table) == {"a1": 9, "a2": 9}


def test_a_table_sparkfs_did_not_create_or_of_another_kind_is_refused_and_kept(spark, fitted, tmp_path, capsys):
    spark.sql(f"CREATE TABLE {DATABASE}.mine (note STRING, run_id STRING) USING parquet PARTITIONED BY (run_id)")
    spark.sql(f"INSERT INTO {DATABASE}.mine VALUES ('my data', 'b1')")
    out = tmp_path / "out"  # never written: the refusals name the table
    refused(capsys, _apply(fitted, "b1", "--overwrite", table=f"{DATABASE}.mine"), out,
            f"--output-table: table {DATABASE}.mine is not one sparkfs apply writes (it has no sparkfs.output "
            "property)")
    assert [row["note"] for row in spark.table(f"{DATABASE}.mine").collect()] == ["my data"]
    spark.sql(f"CREATE TABLE {DATABASE}.marked (note STRING) USING parquet "
              "TBLPROPERTIES ('sparkfs.output' = 'select-features')")
    refused(capsys, _apply(fitted, "b1", table=f"{DATABASE}.marked"), out,
            f"table {DATABASE}.marked is not one sparkfs apply writes (its sparkfs.output property is "
            "'select-features')")
    assert spark.table(f"{DATABASE}.marked").count() == 0


def test_rows_of_other_columns_or_another_selection_are_refused(spark, fitted, tmp_path, capsys):
    table = f"{DATABASE}.layout"
    assert _apply(fitted, "c1", table=table) == 0
    out = tmp_path / "out"
    refused(capsys, _apply(fitted, "c2", table=table, model="other"), out,
            f"--output-table {table} holds vectors of the features", "but this selection gives",
            "one table holds the rows of one selection")
    from pyspark.ml.linalg import Vectors

    with_id = tmp_path / "with_id.parquet"
    spark.createDataFrame([(f"doc{i}", 1.0, Vectors.dense([float(i)] * 6)) for i in range(3)],
                          ["id", "label", "features"]).write.parquet(str(with_id))
    code = main(["apply", "--model", str(fitted / "sel"), "--input", str(with_id), "--format", "parquet",
                 "--feature-names", str(fitted / "words.txt"), "--master", "local[2]", "--output-table", table,
                 "--run-id", "c3"])
    refused(capsys, code, out, f"--output-table {table} holds rows of other columns (the rows have id, the table "
            "does not)")
    csv = tmp_path / "new.csv"  # the same column names, an integer label
    csv.write_text("apple,bread,cheese,dates,eggs,flour,label\n" + "1,2,3,4,5,6,1\n" * 3)
    code = main(["apply", "--model", str(fitted / "sel"), "--input", str(csv), "--format", "csv", "--master",
                 "local[2]", "--output-table", table, "--run-id", "c4"])
    refused(capsys, code, out, f"--output-table {table}: column label is double in the table, but int in the rows")
    assert _rows(spark, table) == {"c1": 9}


def test_a_run_id_column_of_the_input_is_refused(spark, fitted, tmp_path, capsys):
    from pyspark.ml.linalg import Vectors

    spark.createDataFrame([(Vectors.dense([1.0] * 6), "x")], ["features", "run_id"]).write.parquet(
        str(tmp_path / "with_run.parquet"))
    code = main(["apply", "--model", str(fitted / "sel"), "--input", str(tmp_path / "with_run.parquet"), "--format",
                 "parquet", "--master", "local[2]", "--output-table", f"{DATABASE}.runcol", "--run-id", "d1"])
    refused(capsys, code, tmp_path / "out", "the input has a column named run_id")
    assert not spark.catalog.tableExists(f"{DATABASE}.runcol")


def _failing(frame):
    """``frame`` whose label fails the job when a task computes it (a real failed Spark job, not a stub)."""
    from pyspark.sql import functions as F

    failing = F.when(F.assert_true(F.col("label") < -1, "the job fails here").isNull(), F.col("label"))
    return frame.withColumn("label", failing)


def test_a_failed_run_leaves_no_table_it_created_and_no_rows(spark, fitted):
    from pyspark.ml.linalg import Vectors

    from sparkfs.io.reduced_table import write_reduced_table

    frame = spark.createDataFrame([(float(i % 2), Vectors.dense([1.0, float(i)])) for i in range(6)],
                                  ["label", "features"])
    table = f"{DATABASE}.failing"
    with pytest.raises(Exception, match="the job fails here"):
        write_reduced_table(spark, table, _failing(frame), "e1", "features", overwrite=False, present=False)
    assert not spark.catalog.tableExists(table)
    assert write_reduced_table(spark, table, frame, "e1", "features", overwrite=False, present=False) == 6
    with pytest.raises(Exception, match="the job fails here"):
        write_reduced_table(spark, table, _failing(frame), "e2", "features", overwrite=False, present=False)
    with pytest.raises(Exception, match="the job fails here"):  # an overwrite that fails keeps the run's rows
        write_reduced_table(spark, table, _failing(frame), "e1", "features", overwrite=True, present=True)
    assert _rows(spark, table) == {"e1": 6}


def test_an_insert_that_fails_after_writing_leaves_no_rows_of_the_run(spark, fitted, monkeypatch):
    from pyspark.ml.linalg import Vectors
    from pyspark.sql import DataFrameWriter

    from sparkfs.io.reduced_table import write_reduced_table

    frame = spark.createDataFrame([(1.0, Vectors.dense([1.0, 2.0]))], ["label", "features"])
    table = f"{DATABASE}.late"
    write_reduced_table(spark, table, frame, "g1", "features", overwrite=False, present=False)
    insert = DataFrameWriter.insertInto

    def insert_then_fail(self, *args, **kwargs):  # the rows are in, then the run fails (a lost driver, say)
        insert(self, *args, **kwargs)
        raise RuntimeError("failed after the insert")

    monkeypatch.setattr(DataFrameWriter, "insertInto", insert_then_fail)
    with pytest.raises(RuntimeError, match="failed after the insert"):
        write_reduced_table(spark, table, frame, "g2", "features", overwrite=False, present=False)
    assert _rows(spark, table) == {"g1": 1}
