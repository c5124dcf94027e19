"""Saved models carry a checksum manifest of their own files: two flipped bytes
with Hadoop's ``.crc`` files gone used to load silently (a score's low bits changed, or a garbled
uid); now the load is refused with the file named. Models saved before the manifest still load."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

from sparkfs import FisherMarkovSelector, FisherMarkovSelectorModel
from sparkfs.errors import InvalidModelError
from sparkfs.selectors._base import FeatureSelectorModel
from sparkfs.selectors._model_files import CHECKSUM_KEY


def _frame(spark):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(24, 4))
    y = (X[:, 1] > 0).astype(float)
    return spark.createDataFrame([(Vectors.dense(row), float(label)) for row, label in zip(X, y)],
                                 ["features", "label"])


@pytest.fixture
def saved(spark, tmp_path):
    model = FisherMarkovSelector(numFeatures=2).fit(_frame(spark))
    path = tmp_path / "model"
    model.save(str(path))
    return model, path


def _drop_crc(path: Path) -> None:
    for checksum in path.rglob(".*.crc"):
        checksum.unlink()


def _flip(file: Path, offsets) -> None:
    payload = bytearray(file.read_bytes())
    for offset in offsets:
        payload[offset] ^= 0x01
    file.write_bytes(bytes(payload))


def test_a_saved_model_lists_its_files_and_loads(saved):
    model, path = saved
    manifest = json.loads(next((path / "checksums").glob("part-*")).read_text())
    assert manifest["algorithm"] == "sha256"
    assert set(manifest["files"]) == {f"{part.parent.name}/{part.name}" for part in
                                      list((path / "metadata").glob("part-*")) + list((path / "data").glob("part-*"))}
    loaded = FisherMarkovSelectorModel.load(str(path))
    assert np.array_equal(loaded.scores, model.scores)


def test_two_flipped_bytes_in_a_score_without_crc_are_refused(saved):
    model, path = saved
    data_file = next((path / "data").glob("part-*.parquet"))
    payload = data_file.read_bytes()
    score_bytes = np.float64(model.scores[0]).tobytes()
    at = payload.find(score_bytes)
    assert at >= 0, "the score is not stored as plain bytes (compression?): the damage cannot be aimed"
    _flip(data_file, [at, at + 1])  # the two lowest bytes: the score's low bits
    _drop_crc(path)
    for reader in (FisherMarkovSelectorModel, FeatureSelectorModel):
        with pytest.raises(InvalidModelError) as refused:
            reader.load(str(path))
        text = str(refused.value)
        assert f"{path}/data/{data_file.name}: has changed since the model was saved" in text
        assert "this saved selector or model is not loaded" in text


def test_two_flipped_bytes_in_the_metadata_without_crc_are_refused(saved):
    model, path = saved
    metadata_file = next((path / "metadata").glob("part-*"))
    text = metadata_file.read_text()
    at = text.index(model.uid) + len(model.uid) - 2  # the uid's last two hex digits: still valid JSON and a uid
    _flip(metadata_file, [at, at + 1])
    _drop_crc(path)
    with pytest.raises(InvalidModelError, match=rf"{path}/metadata/{metadata_file.name}: has changed since"):
        FisherMarkovSelectorModel.load(str(path))


def test_a_removed_manifest_or_an_added_file_is_refused(saved):
    _, path = saved
    extra = path / "metadata" / "part-99999"  # a second metadata line, which the reader would not look at
    extra.write_text(next((path / "metadata").glob("part-*")).read_text())
    with pytest.raises(InvalidModelError, match=r"metadata/part-99999: was not written with the model"):
        FisherMarkovSelectorModel.load(str(path))
    extra.unlink()
    shutil.rmtree(path / "checksums")
    with pytest.raises(InvalidModelError, match=r"/checksums: is missing or cannot be read although the metadata"):
        FisherMarkovSelectorModel.load(str(path))


def test_a_model_saved_before_the_manifest_still_loads(saved):
    """An older model: no checksums/ and no fileChecksums key in its metadata."""
    model, path = saved
    shutil.rmtree(path / "checksums")
    metadata_file = next((path / "metadata").glob("part-*"))
    metadata = json.loads(metadata_file.read_text())
    del metadata[CHECKSUM_KEY]
    metadata_file.write_text(json.dumps(metadata))
    _drop_crc(path)
    loaded = FisherMarkovSelectorModel.load(str(path))
    assert loaded.selectedFeatures == model.selectedFeatures


def test_overwrite_rewrites_the_manifest(spark, saved):
    model, path = saved
    model.write().overwrite().save(str(path))
    assert FisherMarkovSelectorModel.load(str(path)).selectedFeatures == model.selectedFeatures
