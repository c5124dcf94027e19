"""Saved selectors and models are JSON + Parquet; loading never imports a module the files name."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

from sparkfs import FisherMarkovSelector, FisherMarkovSelectorModel, ReliefSelector, ReliefSelectorModel
from sparkfs.selectors._base import FeatureSelectorModel


def _frame(spark):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = (X[:, 0] > 0).astype(float)
    return spark.createDataFrame([(Vectors.dense(row), float(label)) for row, label in zip(X, y)],
                                 ["features", "label"])


def _rename_class(path: Path, new_class: str) -> None:
    metadata_file = next((path / "metadata").glob("part-*"))
    metadata = json.loads(metadata_file.read_text())
    metadata["class"] = new_class
    metadata_file.write_text(json.dumps(metadata))
    for checksum in (path / "metadata").glob(".*.crc"):  # Hadoop would refuse the edited file
        checksum.unlink()


@pytest.fixture()
def trap_module(tmp_path, monkeypatch):
    """A module that leaves a marker file when imported."""
    marker = tmp_path / "imported"
    (tmp_path / "trap_module_x.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\nclass Model:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield marker
    sys.modules.pop("trap_module_x", None)


def test_model_naming_another_module_is_refused_without_importing_it(spark, tmp_path, trap_module):
    model = FisherMarkovSelector(numFeatures=2).fit(_frame(spark))
    path = tmp_path / "model"
    model.save(str(path))
    assert FisherMarkovSelectorModel.load(str(path)).selectedFeatures == model.selectedFeatures
    _rename_class(path, "trap_module_x.Model")
    for reader in (FisherMarkovSelectorModel, FeatureSelectorModel):
        with pytest.raises(ValueError, match="not a sparkfs"):
            reader.load(str(path))
    assert not trap_module.exists()


def test_selector_naming_another_module_is_refused_without_importing_it(spark, tmp_path, trap_module):
    selector = ReliefSelector(numFeatures=2, k=3)
    path = tmp_path / "selector"
    selector.save(str(path))
    loaded = ReliefSelector.load(str(path))
    assert loaded.getOrDefault("k") == 3 and loaded.uid == selector.uid
    _rename_class(path, "trap_module_x.Model")
    with pytest.raises(ValueError, match="not a sparkfs"):
        ReliefSelector.load(str(path))
    assert not trap_module.exists()


def test_a_model_of_another_selector_is_refused(spark, tmp_path):
    path = tmp_path / "lfs"
    FisherMarkovSelector(numFeatures=2).fit(_frame(spark)).save(str(path))
    with pytest.raises(ValueError, match="not a sparkfs ReliefSelectorModel"):
        ReliefSelectorModel.load(str(path))
