"""The selection appended to tables of the session's catalog (``select --output-table NAME``).

Two tables, both partitioned by ``run_id``, so that a run's rows are one partition that a rerun replaces
whole:

* ``NAME``: one row per feature of each run: ``method``, ``index`` (0-based vector slot), ``name``,
  ``score``, ``rank`` (1 = best), ``selected``, ``p_value`` (null for the methods without p-values);
* ``NAME_runs``: one row per run: ``method``, ``started_at``, ``ended_at``, ``n_rows``, ``n_features``,
  ``n_selected``, ``selected_indices``, ``selected_names`` and ``summary`` (the run's ``summary.json``, as
  strict JSON text).

Which tables sparkfs may write: one it creates (``CREATE TABLE`` with the table property
``sparkfs.output`` naming its kind, in one statement, in the session's default format: Parquet, or Delta
where the platform makes it the default), or one that carries that property. A table without it is
refused, as a directory without sparkfs's marker is (:mod:`sparkfs.io.output_safety`).

A run is in the tables once its row is in ``NAME_runs``, which is written last: the features rows first
(into the run's partition), then the run's row; if the second write fails, the run's features partition
is removed again, so a failed run leaves no rows. ``--if-exists`` acts on the run id as on a directory:
``fail`` refuses a run id already in ``NAME_runs``, ``skip`` does nothing for it, ``overwrite`` replaces
the run's partitions (a dynamic partition overwrite: the other runs' rows stay). The names are checked
before Spark starts (letters, digits and ``_`` per part, or a backtick-quoted part; at most three parts);
the tables' properties and the run id once the session exists, before the input is read.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Dict, List

from sparkfs.io import strict_json
from sparkfs.io.config import ConfigError
from sparkfs.io.output_safety import OutputExistsError, UnsafeOutputError

MARKER_PROPERTY = "sparkfs.output"
_PART = r"(?:`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)"
_NAME = re.compile(rf"{_PART}(?:\.{_PART}){{0,2}}")

#: (column, SQL type) of each table, the partition column last (where Spark keeps it).
FEATURE_COLUMNS = (("method", "STRING"), ("index", "INT"), ("name", "STRING"), ("score", "DOUBLE"),
                   ("rank", "INT"), ("selected", "BOOLEAN"), ("p_value", "DOUBLE"), ("run_id", "STRING"))
RUN_COLUMNS = (("method", "STRING"), ("started_at", "STRING"), ("ended_at", "STRING"), ("n_rows", "BIGINT"),
               ("n_features", "INT"), ("n_selected", "INT"), ("selected_indices", "ARRAY<INT>"),
               ("selected_names", "ARRAY<STRING>"), ("summary", "STRING"), ("run_id", "STRING"))


@dataclass(frozen=True)
class OutputTables:
    """The two tables of ``--output-table NAME``: the features rows and the runs rows."""

    features: str
    runs: str

    @classmethod
    def named(cls, name: str) -> "OutputTables":
        """The tables of ``name`` (``NAME`` and ``NAME_runs``), the name checked (module notes)."""
        name = table_name(name)
        runs = name[:-1] + "_runs`" if name.endswith("`") else name + "_runs"
        return cls(name, runs)


def table_name(name: str, flag: str = "--output-table") -> str:
    """``name`` stripped, once checked to be a table's name (module notes); else ``ConfigError`` naming ``flag``."""
    if not isinstance(name, str) or not _NAME.fullmatch(name.strip()):
        raise ConfigError(f"{flag} {name!r} is not a table name: give db.table or catalog.db.table "
                          "(letters, digits and _, or a `quoted` part)")
    return name.strip()


def _kinds(tables: OutputTables) -> Dict[str, str]:
    return {tables.features: "select-features", tables.runs: "select-runs"}


def check_output_tables(spark, tables: OutputTables, run_id: str, if_exists: str) -> bool:
    """Refuse a table sparkfs may not write (module notes) and, with ``fail``, a run id already there;
    returns whether the run is there (for ``skip``). Reads the tables' properties (no job) and, when the
    runs table exists, the run's partition (one small job)."""
    for name, kind in _kinds(tables).items():
        refuse_foreign_table(spark, name, kind, "select")
    return run_in_table(spark, tables.runs, run_id, if_exists)


def refuse_foreign_table(spark, name: str, kind: str, command: str) -> None:
    """Refuse an existing table ``name`` whose ``sparkfs.output`` property is not ``kind`` (``UnsafeOutputError``,
    naming ``command``); a missing table passes. Reads the table's properties only (no job)."""
    if not spark.catalog.tableExists(name):
        return
    found = _properties(spark, name).get(MARKER_PROPERTY)
    if found != kind:
        said = f"its {MARKER_PROPERTY} property is {found!r}" if found else f"it has no {MARKER_PROPERTY} property"
        raise UnsafeOutputError(f"--output-table: table {name} is not one sparkfs {command} writes ({said}); "
                                "sparkfs appends only to tables it created: choose another --output-table")


def run_in_table(spark, name: str, run_id: str, if_exists: str) -> bool:
    """Whether table ``name`` (if it exists) holds rows of run ``run_id`` (one small job); with ``fail``, a run
    there is refused (``OutputExistsError``)."""
    from pyspark.sql import functions as F

    if not spark.catalog.tableExists(name):
        return False
    present = spark.table(name).where(F.col("run_id") == run_id).limit(1).count() > 0
    if present and if_exists == "fail":
        raise OutputExistsError(f"--output-table: run {run_id} is already in table {name}; pass --overwrite "
                                "(--if-exists overwrite) to replace its rows, or --if-exists skip to keep them")
    return present


def _properties(spark, name: str) -> Dict[str, str]:
    return {row[0]: row[1] for row in spark.sql(f"SHOW TBLPROPERTIES {name}").collect()}


def append_run(spark, tables: OutputTables, run_id: str, features, summary: Dict[str, Any], *,
               overwrite: bool) -> None:
    """Write the run's features rows (``features``: the pandas table of ``features.parquet``) and its
    summary row (module notes); with ``overwrite`` the run's earlier rows are replaced."""
    features_frame = _features_frame(spark, features, summary["method"], run_id)
    runs_frame = _runs_frame(spark, summary, run_id)
    for name, columns in ((tables.features, FEATURE_COLUMNS), (tables.runs, RUN_COLUMNS)):
        _create_if_missing(spark, name, columns, _kinds(tables)[name])
    with partition_overwrite(spark):
        features_frame.write.insertInto(tables.features, overwrite=overwrite)
        try:
            runs_frame.write.insertInto(tables.runs, overwrite=overwrite)
        except BaseException:
            drop_run(spark, tables.features, run_id)
            raise


@contextmanager
def partition_overwrite(spark):
    """Inside: an overwriting insert replaces only the partitions it writes (this run's), not the table."""
    key = "spark.sql.sources.partitionOverwriteMode"
    before = spark.conf.get(key, "static")
    spark.conf.set(key, "dynamic")
    try:
        yield
    finally:
        spark.conf.set(key, before)


def _create_if_missing(spark, name: str, columns, kind: str) -> None:
    if spark.catalog.tableExists(name):
        return
    listed = ", ".join(f"`{column}` {kind_of}" for column, kind_of in columns)
    spark.sql(f"CREATE TABLE IF NOT EXISTS {name} ({listed}) PARTITIONED BY (run_id) "
              f"TBLPROPERTIES ('{MARKER_PROPERTY}' = '{kind}')")


def drop_run(spark, name: str, run_id: str) -> None:
    """Remove the run's partition (run ids hold letters, digits, '.', '_', '-' only: safe in the statement)."""
    try:
        spark.sql(f"ALTER TABLE {name} DROP IF EXISTS PARTITION (run_id = '{run_id}')")
    except Exception:  # a format without partition statements (Delta): its rows are deleted instead
        spark.sql(f"DELETE FROM {name} WHERE run_id = '{run_id}'")


def _features_frame(spark, features, method: str, run_id: str):
    import pandas as pd

    rows = pd.DataFrame({"method": method, "index": features["index"].astype("int32"),
                         "name": features["name"].astype(str), "score": features["score"].astype(float),
                         "rank": features["rank"].astype("int32"), "selected": features["selected"].astype(bool),
                         "p_value": features["p_value"].astype(float) if "p_value" in features else float("nan"),
                         "run_id": run_id})
    return _typed(spark.createDataFrame(rows), FEATURE_COLUMNS, nulls_for_nan=("p_value",))


def _runs_frame(spark, summary: Dict[str, Any], run_id: str):
    row: List[Any] = [summary.get("method"), summary.get("started_at"), summary.get("ended_at"),
                      summary.get("n_rows"), summary.get("n_features"), len(summary.get("selected_indices", [])),
                      [int(i) for i in summary.get("selected_indices", [])],
                      [str(n) for n in summary.get("selected_names", [])],
                      strict_json.dumps(summary, default=str), run_id]
    schema = ", ".join(f"`{column}` {kind}" for column, kind in RUN_COLUMNS)
    return spark.createDataFrame([tuple(row)], schema)


def _typed(frame, columns, nulls_for_nan=()):
    from pyspark.sql import functions as F

    typed = []
    for column, kind in columns:
        value = F.col(f"`{column}`")
        if column in nulls_for_nan:
            value = F.when(F.isnan(value), F.lit(None)).otherwise(value)
        typed.append(value.cast(kind.lower()).alias(column))
    return frame.select(*typed)

