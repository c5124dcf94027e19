"""The reduced data: an input with its vector column sliced to a fitted selection, written as a Parquet
directory that the next job reads (``sparkfs apply``; ``sparkfs select --write-reduced``, from the rows its
fit read). Shared by the two commands, as ``arguments`` is.

What is written (a Parquet directory any Spark, pandas or pyarrow reader opens, as ``convert``'s):

* every column of the input as it was read, the vector column under its name and in its place, holding
  the selected features only (ascending index, as ``selectedFeatures``), with their names in its Spark
  ML attributes (the input's names, else the model's) and, for sparse input, the word that every vector
  is sparse; a LIBSVM or CSV input's columns are those its read gives (label, weight, the vector), a
  Parquet input or a table with a vector column keeps all its columns (ids, dates, text...);
* ``_summary.json``: the marker of the output rules (kind ``apply``), the model, the input, the rows
  written (counted by an observation of the write itself, not by another pass), the features in and out
  with the selected indices and names.

The data go to a staging directory beside the target and are renamed into place once complete
(:func:`sparkfs.io.output.write_spark_output`): a failed run leaves no partial output, and an existing
output is replaced (``--overwrite``) only when it is reduced data sparkfs wrote and holds nothing else.
The Spark executors write the part files, so on Spark Connect the directory must be one the server and
the client both reach (the same machine, or a mounted volume).
"""

from __future__ import annotations

from typing import Any, Dict, Optional

#: The marker kind (sparkfs.io.output_safety.KINDS) of the reduced data.
KIND = "apply"


def all_columns(spark, dataset, path: str, fmt: str):
    """The frame to slice: a Parquet input or a table with a vector column read with every column (the vector
    with the ML attributes the read gave it: the names given beside the data, say); otherwise the
    frame the read returned."""
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql import functions as F

    from sparkfs.io.feature_names import quoted
    from sparkfs.io.readers import TABLE, read_table

    if fmt not in ("parquet", TABLE):
        return dataset.df
    raw = spark.read.parquet(path) if fmt == "parquet" else read_table(spark, path)
    column = dataset.features_col
    if column not in raw.columns or not isinstance(raw.schema[column].dataType, VectorUDT):
        return dataset.df  # an assembled or converted vector: the read's frame is the one to slice
    metadata = dataset.df.schema[column].metadata
    return raw.select(*[F.col(quoted(name)).alias(name, metadata=metadata) if name == column else F.col(quoted(name))
                        for name in raw.columns])


def reduced_summary(model, model_path: str, input_path: str, fmt: str, names) -> Dict[str, Any]:
    """What ``_summary.json`` says of the selection applied (``names``: the input's feature names)."""
    selected = model.selectedFeatures
    return {"model": {"path": model_path, "class": f"{type(model).__module__}.{type(model).__name__}"},
            "input": {"path": input_path, "format": fmt}, "n_features_in": model.numInputFeatures,
            "n_features": len(selected), "selected_indices": selected,
            "selected_names": [names[i] for i in selected]}


def write_reduced(path: str, frame, summary: Dict[str, Any], *, spark, overwrite: bool,
                  before_placing=None) -> str:
    """Write ``frame`` as the reduced data at ``path`` (module notes); ``summary`` gains ``n_rows``.
    ``before_placing``: see :func:`sparkfs.io.output.write_spark_output`. Returns the target."""
    import uuid

    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    from sparkfs.io.output import write_spark_output

    rows = Observation(f"sparkfs-reduced-{uuid.uuid4().hex}")

    def write_data(uri: str) -> None:
        frame.observe(rows, F.count(F.lit(1)).alias("rows")).write.parquet(uri)
        summary["n_rows"] = _observed_rows(rows)

    return write_spark_output(path, write_data, summary, spark=spark, command=KIND, overwrite=overwrite,
                              before_placing=before_placing)


def _observed_rows(observation) -> Optional[int]:
    found = observation.get
    return int(found["rows"]) if found and found.get("rows") is not None else None
