"""Saving and loading the selectors and their models: the writer of a model's metadata/, data/ and
checksum manifest, and the readers that check them (:mod:`sparkfs.selectors._model_files`) before
anything is built."""

from __future__ import annotations

import json
from typing import Dict

import numpy as np
from pyspark.ml import Estimator, Model
from pyspark.ml.util import DefaultParamsWriter, MLReader, MLWriter

from sparkfs.errors import InvalidModelError
from sparkfs.selectors._model_files import (
    CHECKSUM_ALGORITHM,
    CHECKSUM_FILE,
    CHECKSUM_KEY,
    DATA_FILE,
    METADATA_FILE,
    check_checksums,
    checked_labels,
    checked_model_data,
    known_class,
    load_metadata,
    set_saved_params,
    write_checksums,
)
from sparkfs.spark.blocks import is_connect_session


class SelectorModelWriter(MLWriter):
    """metadata/ (params + label values + summary as JSON) and data/ (one Parquet row per feature: index,
    score, selected, the per-feature arrays, and the feature's name when the model knows names)."""

    def __init__(self, instance: Model):
        super().__init__()
        self.instance = instance

    def _handleOverwrite(self, path: str) -> None:
        # Spark ML deletes the path through the JVM, which a Spark Connect client cannot reach:
        # there both parts are written with mode "overwrite" instead (saveImpl).
        if not is_connect_session(self.sparkSession):
            super()._handleOverwrite(path)

    def saveImpl(self, path: str) -> None:
        model = self.instance
        mode = "overwrite" if self.shouldOverwrite else "errorifexists"
        if self.shouldOverwrite and is_connect_session(self.sparkSession):
            metadata = DefaultParamsWriter._get_metadata_to_save(model, self.sparkSession, _extra_metadata(model))
            self.sparkSession.createDataFrame([(metadata,)], ["value"]).coalesce(1).write.mode(mode).text(
                f"{path}/metadata")
        else:
            DefaultParamsWriter.saveMetadata(model, path, self.sparkSession, extraMetadata=_extra_metadata(model))
        self.sparkSession.createDataFrame(_data_frame(model)).coalesce(1).write.mode(mode).parquet(f"{path}/data")
        write_checksums(path, self.sparkSession, mode)  # last: it hashes metadata/ and data/ as written


def _extra_metadata(model) -> dict:
    """What a model's metadata holds beside its params."""
    return {"labelValues": model._label_values, "summary": model._summary, CHECKSUM_KEY: CHECKSUM_ALGORITHM}


def _data_frame(model):
    """data/ as a pandas frame: one row per feature (index, score, selected, the per-feature arrays, the
    name when the model knows names)."""
    import pandas as pd

    columns = {"index": np.arange(model.numInputFeatures, dtype=np.int64), "score": model._scores,
               "selected": model.get_support()}
    columns.update({f"array_{name}": values for name, values in model._feature_arrays.items()})
    if model._feature_names is not None:
        columns["name"] = pd.Series(model._feature_names, dtype=object)
    return pd.DataFrame(columns)


def model_files(model, spark) -> Dict[str, bytes]:
    """The files :class:`SelectorModelWriter` saves, as bytes by relative path (``metadata/part-00000``,
    ``data/part-00000.parquet``, ``checksums/part-00000``), for a writer that places them itself (the
    command line's staged output, on any store and from a Spark Connect client alike); the loaders
    read them as they read a saved model. ``spark`` gives the Spark version recorded."""
    import hashlib
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    metadata = DefaultParamsWriter._get_metadata_to_save(model, spark, _extra_metadata(model)) + "\n"
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(_data_frame(model), preserve_index=False), sink)
    files = {f"{METADATA_FILE}/part-00000": metadata.encode("utf-8"),
             f"{DATA_FILE}/part-00000.parquet": sink.getvalue()}
    manifest = {"algorithm": CHECKSUM_ALGORITHM,
                "files": {name: hashlib.sha256(payload).hexdigest() for name, payload in files.items()}}
    files[f"{CHECKSUM_FILE}/part-00000"] = (json.dumps(manifest, sort_keys=True) + "\n").encode("utf-8")
    return files


class ParamsReader(MLReader):
    """Estimators and other params-only stages (the selectors, MarginInstanceWeighter): params from
    metadata/ (JSON), the class checked before anything is built or imported."""

    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def load(self, path: str) -> Estimator:
        metadata = load_metadata(path, self.sparkSession)
        selector = known_class(metadata, path, self.cls)()
        set_saved_params(selector, metadata, path)
        return selector


class SelectorModelReader(MLReader):
    """Models: metadata/ and data/ checked (:mod:`sparkfs.selectors._model_files`) before the model is built,
    then every file against the model's checksum manifest (``checksums/``, SHA-256 of each file of
    metadata/ and data/, written at save), so damage that reads as valid values is refused too, with
    the file named. A model saved before the manifest (no ``fileChecksums`` in its metadata) still
    loads, with the other checks only."""

    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def load(self, path: str) -> Model:
        metadata = load_metadata(path, self.sparkSession)
        model_class = known_class(metadata, path, self.cls)
        labels = checked_labels(metadata, path)
        try:
            frame = self.sparkSession.read.parquet(f"{path}/data").toPandas()
        except Exception as error:
            raise InvalidModelError(f"{path}/data: cannot be read as Parquet ({str(error).splitlines()[0][:200]}); "
                                    "this saved selector or model is not loaded") from None
        data = checked_model_data(frame, metadata, path, model_class._scores_may_be_infinite)
        model = model_class(label_values=labels, summary=metadata.get("summary", {}), **data)
        set_saved_params(model, metadata, path)
        check_checksums(path, metadata, self.sparkSession)  # last: the checks that name a value speak first
        return model
