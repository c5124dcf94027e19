"""A fitted selection as the next job uses it: the saved model found and loaded whatever its selector,
its facts read before Spark starts, and an input with its vector column sliced to the selection.

``sparkfs select`` saves its model in ``OUTPUT/model`` (:func:`sparkfs.selectors._model_io.model_files`),
the layout :meth:`FeatureSelectorModel.write` saves: any selector's Model class loads it, and so does
:func:`load_selector_model` without being told the class (only sparkfs's own classes are considered:
nothing the metadata names is imported). ``sparkfs apply`` and ``select --write-reduced`` write
:func:`sliced_frame` of their input.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import List, Optional

from sparkfs.errors import InvalidInputError, InvalidModelError
from sparkfs.io.feature_names import quoted
from sparkfs.io.stores import local_path_of
from sparkfs.selectors._base import FeatureSelectorModel
from sparkfs.selectors._model_files import DATA_FILE, METADATA_FILE, NAME_COLUMN, known_class, load_metadata
from sparkfs.selectors._model_io import model_files

__all__ = ["MODEL_DIRECTORY", "ModelFacts", "load_selector_model", "model_directory", "model_files",
           "saved_model_facts", "sliced_frame", "check_input_against_model"]

#: Where ``sparkfs select`` saves its model in its output directory.
MODEL_DIRECTORY = "model"
#: The column the sliced vector takes while the input's vector column is still there.
_SLICED = "__sparkfs_selected"


def model_directory(path: str) -> str:
    """``path/model`` when ``path`` is the output of ``sparkfs select`` (a local directory holding
    ``model/metadata``), else ``path`` (the model's own directory, or a URI)."""
    local = local_path_of(path)
    if local is not None and os.path.isdir(os.path.join(local, MODEL_DIRECTORY, METADATA_FILE)):
        return path.rstrip("/") + "/" + MODEL_DIRECTORY
    return path


def load_selector_model(path: str, spark) -> FeatureSelectorModel:
    """The sparkfs model saved at ``path``, of the selector class its metadata names, loaded with
    every check of that class's loader (:class:`~sparkfs.errors.InvalidModelError` otherwise)."""
    model_class = known_class(load_metadata(path, spark), path, FeatureSelectorModel)
    return model_class.read().session(spark).load(path)


@dataclass(frozen=True)
class ModelFacts:
    """What a saved model says of the features it was fitted on: their count, their names (None
    when it knows them by position only) and the selected ones."""

    path: str
    class_name: str
    num_features: int
    names: Optional[List[str]]
    selected: List[int]


def saved_model_facts(path: str) -> Optional[ModelFacts]:
    """The facts of a model saved on the local disk, read with json and pyarrow before Spark starts
    (its files are checked in full when it is loaded); None for a URI. A directory that holds no
    model is refused."""
    import pyarrow.parquet as pq

    local = local_path_of(path)
    if local is None:
        return None
    metadata = _first_line_json(local, path)
    summary = metadata.get("summary") if isinstance(metadata.get("summary"), dict) else {}
    num_features = summary.get("n_features")
    if isinstance(num_features, bool) or not isinstance(num_features, int) or num_features < 1:
        raise InvalidModelError(f"{path}/{METADATA_FILE}: no n_features in its summary; this is not a model sparkfs "
                                "saved")
    files = _visible_files(os.path.join(local, DATA_FILE))
    if not files:
        raise InvalidModelError(f"{path}/{DATA_FILE}: no data files; this is not a model sparkfs saved")
    try:
        table = pq.read_table(files if len(files) > 1 else files[0])
    except (OSError, ValueError) as error:
        raise InvalidModelError(f"{path}/{DATA_FILE}: cannot be read as Parquet ({error})") from None
    frame = table.to_pandas().sort_values("index", kind="stable")
    names = frame[NAME_COLUMN].astype(str).tolist() if NAME_COLUMN in frame.columns else None
    selected = frame["index"][frame["selected"].astype(bool)].astype(int).tolist()
    return ModelFacts(path, str(metadata.get("class", "")), num_features, names, selected)


def _visible_files(folder: str) -> List[str]:
    if not os.path.isdir(folder):
        return []
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if not name.startswith(("_", ".")) and os.path.isfile(os.path.join(folder, name)))


def _first_line_json(local: str, path: str) -> dict:
    if not os.path.isdir(local):
        raise InvalidModelError(f"--model {path}: not found (give the output directory of sparkfs select, or the "
                                "directory a sparkfs model was saved to)" if not os.path.exists(local) else
                                f"--model {path} is a file, not a saved model's directory")
    files = _visible_files(os.path.join(local, METADATA_FILE))
    if not files:
        raise InvalidModelError(f"--model {path} holds no {METADATA_FILE}/ of a saved model (give the output "
                                "directory of sparkfs select, or the directory a sparkfs model was saved to)")
    with open(files[0], encoding="utf-8", errors="replace") as handle:
        try:
            metadata = json.loads(handle.readline())
        except ValueError:
            metadata = None
    if not isinstance(metadata, dict):
        raise InvalidModelError(f"{path}/{METADATA_FILE}: not the JSON object a saved model holds")
    return metadata


def check_input_against_model(facts: ModelFacts, size: Optional[int], names: Optional[List[str]],
                              where: str) -> None:
    """Refuse an input whose vector size, or whose feature names (when both it and the model name
    them), differ from the model's, naming both; ``size`` or ``names`` None: not known yet."""
    if size is not None and size != facts.num_features:
        raise InvalidInputError(f"{where} has {size:,} features, but the model {facts.path} was fitted on "
                                f"{facts.num_features:,}: a selection applies only to data with the same features")
    if names is None or facts.names is None or list(names) == facts.names:
        return
    differ = [i for i, (theirs, mine) in enumerate(zip(names, facts.names)) if theirs != mine]
    first = differ[0] if differ else min(len(names), len(facts.names))
    theirs = names[first] if first < len(names) else None
    mine = facts.names[first] if first < len(facts.names) else None
    raise InvalidInputError(f"{where} names feature {first} {theirs!r}, where the model {facts.path} names it "
                            f"{mine!r} ({max(len(differ), 1):,} of {facts.num_features:,} names differ): a selection "
                            "applies only to data with the same features")


def sliced_frame(model: FeatureSelectorModel, frame, features_col: str):
    """``frame`` with its vector column ``features_col`` replaced, in place and under its name, by the
    selected features (``model.transform``: the names in its ML attributes; a ``sparkfs`` key saying
    the vectors are sparse kept); every other column as it is. The model refuses a column whose
    declared size or names differ from its own, from the schema alone."""
    from pyspark.sql import functions as F

    if _SLICED in frame.columns:
        raise InvalidInputError(f"the input has a column named {_SLICED}, which sparkfs uses for the sliced vector")
    slicer = model.copy({model.featuresCol: features_col, model.outputCol: _SLICED})
    sliced = slicer.transform(frame)
    metadata = dict(sliced.schema[_SLICED].metadata)
    said = frame.schema[features_col].metadata.get("sparkfs")
    if isinstance(said, dict) and said.get("vectors") == "sparse":
        metadata["sparkfs"] = {"vectors": "sparse"}
    return sliced.select(*[F.col(quoted(_SLICED)).alias(name, metadata=metadata) if name == features_col
                           else F.col(quoted(name)) for name in frame.columns])
