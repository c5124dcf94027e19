"""The reduced data written to a table of the session's catalog (``sparkfs apply --output-table NAME``), under the
rules of select's output tables (:mod:`sparkfs.io.output_tables`).

The table holds the rows ``apply`` would write to a directory (every column of the input, the vector sliced to
the selected features, their names in its ML attributes), plus a ``run_id`` column by which it is partitioned:
a run's rows are one partition, which a rerun of the run id replaces whole (a dynamic partition overwrite).

* **Created by sparkfs**: when the table is missing, the first run creates it with its rows in one statement
  (``CREATE TABLE ... AS SELECT``, through ``DataFrame.writeTo``, in the session's default format), with the
  table property ``sparkfs.output = apply-rows``. A vector column has no SQL type name, so the table cannot be
  created empty by a statement as select's are; a failed ``CREATE ... AS SELECT`` leaves no table.
* **Only its own**: an existing table without that property is refused (exit 2) and left as it was.
* **One layout**: a later run appends only rows of the table's columns (the same names and types; the
  ``run_id`` column is sparkfs's, so an input with a column of that name is refused) and, when the table's
  vector names its features, of the same features: rows of another selection would give the vector's slots
  other meanings. Both are checked from the schemas, before the write job.
* **Atomic per run**: the insert is one Spark job committing its files at the end; if it fails, the rows of a
  run id that was not in the table before are removed again (with ``--if-exists overwrite`` a failed insert
  leaves the earlier rows of the run, which the overwrite had not replaced yet).
* ``--if-exists`` acts on the run id: ``fail`` (the default) refuses a run id already in the table before the
  input is read, ``skip`` does nothing for it, ``overwrite`` replaces its rows (the other runs' rows stay).
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from sparkfs.errors import InvalidInputError
from sparkfs.io.output_tables import (
    MARKER_PROPERTY,
    drop_run,
    partition_overwrite,
    refuse_foreign_table,
    run_in_table,
)

#: The table property's value on a table of reduced rows.
KIND = "apply-rows"
#: The column that keys the rows by run (the table's partition column).
RUN_COLUMN = "run_id"


def check_reduced_table(spark, name: str, run_id: str, if_exists: str) -> bool:
    """Refuse a table sparkfs may not write and, with ``fail``, a run id already there; returns whether the
    run is there (for ``skip``). Reads the table's properties (no job) and the run's partition (one small job)."""
    refuse_foreign_table(spark, name, KIND, "apply")
    return run_in_table(spark, name, run_id, if_exists)


def write_reduced_table(spark, name: str, frame, run_id: str, features_col: str, *, overwrite: bool,
                        present: bool) -> int:
    """Write ``frame`` (the reduced rows) as run ``run_id`` of table ``name`` (module notes); ``present``: whether
    the run was in the table before. Returns the run's rows in the table."""
    from pyspark.sql import functions as F

    if any(column.lower() == RUN_COLUMN for column in frame.columns):
        raise InvalidInputError(f"--output-table {name}: the input has a column named {RUN_COLUMN}, the column by "
                                "which sparkfs keys the table's rows by run; rename it, or write to a directory with "
                                "--output")
    rows = frame.withColumn(RUN_COLUMN, F.lit(run_id))
    if not spark.catalog.tableExists(name):
        rows.writeTo(name).partitionedBy(F.col(RUN_COLUMN)).tableProperty(MARKER_PROPERTY, KIND).create()
    else:
        table = spark.table(name)
        rows = rows.select(*_columns_in_table_order(name, table.schema, rows.schema))
        _refuse_other_features(name, table.schema, rows.schema, features_col)
        with partition_overwrite(spark):
            try:
                rows.write.insertInto(name, overwrite=overwrite)
            except BaseException:
                if not present:  # nothing of this run was there before: nothing of it stays
                    drop_run(spark, name, run_id)
                raise
    return spark.table(name).where(F.col(RUN_COLUMN) == run_id).count()


def _type_text(data_type) -> str:
    """A column's type for comparison: its class and simple form (nullability aside; a vector: ``VectorUDT:udt``)."""
    return f"{type(data_type).__name__}:{data_type.simpleString()}"


def _columns_in_table_order(name: str, table_schema, rows_schema) -> List[str]:
    """The rows' columns in the table's order (an insert matches columns by position), once checked to be the
    table's columns with the table's types; else ``InvalidInputError`` naming the difference."""
    from sparkfs.io.feature_names import quoted

    table = {field.name.lower(): field for field in table_schema.fields}
    given = {field.name.lower(): field for field in rows_schema.fields}
    missing = [table[key].name for key in table if key not in given]
    extra = [given[key].name for key in given if key not in table]
    if missing or extra:
        said = "; ".join(part for part in (f"the table has {', '.join(missing)}, the rows do not" if missing else "",
                                           f"the rows have {', '.join(extra)}, the table does not" if extra else "")
                         if part)
        raise InvalidInputError(f"--output-table {name} holds rows of other columns ({said}): a table of reduced "
                                "rows takes rows of its own columns only; write to another --output-table")
    for key, field in table.items():
        if _type_text(field.dataType) != _type_text(given[key].dataType):
            raise InvalidInputError(f"--output-table {name}: column {field.name} is {field.dataType.simpleString()} "
                                    f"in the table, but {given[key].dataType.simpleString()} in the rows; write to "
                                    "another --output-table")
    return [quoted(given[key].name) for key in table]


def _refuse_other_features(name: str, table_schema, rows_schema, features_col: str) -> None:
    """Refuse rows whose vector names other features than the table's (when both name theirs)."""
    table_names, given_names = _vector_names(table_schema, features_col), _vector_names(rows_schema, features_col)
    if table_names is None or given_names is None or table_names == given_names:
        return
    raise InvalidInputError(f"--output-table {name} holds vectors of the features {_shown(table_names)}, but this "
                            f"selection gives {_shown(given_names)}: one table holds the rows of one selection; "
                            "write to another --output-table")


def _vector_names(schema, features_col: str) -> Optional[Tuple[str, ...]]:
    """The feature names in a vector column's ML attributes, in slot order; None when it names none."""
    matches = [field for field in schema.fields if field.name.lower() == features_col.lower()]
    if not matches:
        return None
    attrs = matches[0].metadata.get("ml_attr", {}).get("attrs", {})
    slots = {int(attribute["idx"]): attribute.get("name") for group in attrs.values() for attribute in group
             if "idx" in attribute}
    if not slots or not all(slots.values()):
        return None
    return tuple(str(slots[index]) for index in sorted(slots))


def _shown(names: Tuple[str, ...]) -> str:
    listed = ", ".join(repr(name) for name in names[:6])
    return f"{listed}{', ...' if len(names) > 6 else ''} ({len(names)})"
