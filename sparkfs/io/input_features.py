"""The features of a local CSV or Parquet input, known before Spark starts: how many, and their names.

A count or a name that disagrees with what the command was given (the names beside the data, a saved
model's features) is refused before any Spark job when the input is on the local disk: the header line
of a CSV, the footer of a Parquet file (its columns, and the Spark schema Spark stores in it with each
column's ML attributes), or the first row of a Parquet vector column, read with the standard library and
pyarrow (:mod:`sparkfs.io.table_input`). The features are those the read will assemble or find:

* CSV: the header's columns but the label, the weight and a pandas index column;
* Parquet with a vector column (or a numeric array column) named ``features_col``: its size from Spark
  ML's attributes (``num_attrs``), else the first row of the first file holding one; its names from the
  attributes when they name features;
* any other Parquet: its columns but the label, the weight and a pandas index column.

Anything else (a URI, partition folders, a LIBSVM file) is None: known once the read has run.
"""

from __future__ import annotations

import json
from typing import Dict, List, Optional

from sparkfs.io.stores import Location
from sparkfs.io.table_input import index_columns, local_columns, local_files, parquet_schema

#: The key of Spark's schema (with each column's metadata) in the Parquet files it writes.
SPARK_SCHEMA_KEY = b"org.apache.spark.sql.parquet.row.metadata"


def known_vector_size(location: Location, fmt: str, *, label_col: Optional[str], weight_col: Optional[str],
                      features_col: str) -> Optional[int]:
    """The number of features the read will give, or None where that takes a Spark job (module notes)."""
    columns = _columns(location, fmt)
    if columns is None:
        return None
    if fmt == "parquet" and features_col in columns and _is_vector(location, features_col):
        return _parquet_vector_size(location, features_col)
    return len(_feature_columns(columns, location, fmt, label_col, weight_col, features_col))


def known_feature_names(location: Location, fmt: str, *, label_col: Optional[str], weight_col: Optional[str],
                        features_col: str) -> Optional[List[str]]:
    """The features' names the read will give, or None where they are not known before a Spark job or
    where the input names none (a vector column without named attributes)."""
    columns = _columns(location, fmt)
    if columns is None:
        return None
    if fmt == "parquet" and features_col in columns and _is_vector(location, features_col):
        return _declared_names(_spark_field(location, features_col))
    return _feature_columns(columns, location, fmt, label_col, weight_col, features_col)


def _columns(location: Location, fmt: str) -> Optional[List[str]]:
    return local_columns(location, fmt) if fmt in ("csv", "parquet") else None


def _feature_columns(columns: List[str], location: Location, fmt: str, label_col: Optional[str],
                     weight_col: Optional[str], features_col: str) -> List[str]:
    # announce=False: the read says it
    index = index_columns(columns, fmt, location, [label_col, weight_col, features_col], announce=False)
    return [name for name in columns if name not in (label_col, weight_col) and name not in index]


def _is_vector(location: Location, features_col: str) -> bool:
    """Whether the Parquet column is a vector (Spark's struct) or a numeric array: one column, not a feature."""
    import pyarrow as pa

    files = local_files(location) or []
    kind = parquet_schema(files[0]).field(features_col).type
    return pa.types.is_struct(kind) or pa.types.is_list(kind) or pa.types.is_large_list(kind)


def _parquet_vector_size(location: Location, features_col: str) -> Optional[int]:
    """Spark ML's ``num_attrs`` of the column, else the size of the first row of the first file holding one."""
    import pyarrow.parquet as pq

    declared = (_spark_field(location, features_col).get("metadata") or {}).get("ml_attr", {}).get("num_attrs")
    if isinstance(declared, int) and not isinstance(declared, bool):
        return declared
    for file in local_files(location) or []:
        for batch in pq.ParquetFile(file).iter_batches(batch_size=1, columns=[features_col]):
            if batch.num_rows:
                first = batch.column(0)[0].as_py()
                if isinstance(first, list):
                    return len(first)
                if isinstance(first, dict):  # Spark's vector: type 0 sparse (its size), 1 dense (its values)
                    return int(first["size"]) if first.get("type") == 0 else len(first.get("values") or [])
    return None


def _spark_field(location: Location, column: str) -> Dict:
    """The column's entry in the Spark schema of the first file's footer ({} without one)."""
    files = local_files(location) or []
    metadata = parquet_schema(files[0]).metadata or {}
    try:
        schema = json.loads(metadata.get(SPARK_SCHEMA_KEY, b"{}"))
    except ValueError:
        return {}
    for field in schema.get("fields", []) if isinstance(schema, dict) else []:
        if isinstance(field, dict) and field.get("name") == column:
            return field
    return {}


def _declared_names(field: Dict) -> Optional[List[str]]:
    """The names Spark ML's attributes give a vector column, ``f{i}`` for a slot they leave unnamed;
    None when they name none (as :func:`sparkfs.io.readers.given_vector_names`)."""
    attributes = (field.get("metadata") or {}).get("ml_attr", {})
    groups = attributes.get("attrs", {}) if isinstance(attributes, dict) else {}
    named = {attribute["idx"]: attribute["name"] for group in groups.values() for attribute in group
             if isinstance(attribute, dict) and isinstance(attribute.get("idx"), int) and attribute.get("name")}
    if not named:
        return None
    size = attributes.get("num_attrs") or max(named) + 1
    return [named.get(i, f"f{i}") for i in range(size)]
