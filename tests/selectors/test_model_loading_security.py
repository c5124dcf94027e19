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


# --- damaged or edited models are refused ------------------------------------

def _edit_metadata(path: Path, edit) -> None:
    metadata_file = next((path / "metadata").glob("part-*"))
    metadata = json.loads(metadata_file.read_text())
    edit(metadata)
    metadata_file.write_text(json.dumps(metadata))
    for checksum in (path / "metadata").glob(".*.crc"):
        checksum.unlink()


def _edit_data(path: Path, edit) -> None:
    import pandas as pd

    parts = sorted((path / "data").glob("part-*.parquet"))
    frame = pd.concat([pd.read_parquet(part) for part in parts], ignore_index=True)
    for stale in list((path / "data").iterdir()):
        if stale.name.startswith(("part-", ".part-")):
            stale.unlink()
    edit(frame).to_parquet(path / "data" / "part-00000.parquet", index=False)


def _set_row(column, row, value):
    def edit(frame):
        frame.loc[row, column] = value
        return frame
    return edit


@pytest.fixture(scope="module")
def fitted_lfs(spark):
    return FisherMarkovSelector(numFeatures=2).fit(_frame(spark))


@pytest.mark.parametrize("where, edit, fragments", [
    ("data", _set_row("index", 1, 0), ["data: feature index 0 appears 2 times"]),
    ("data", _set_row("index", 2, 99), ["data: feature index 99 is outside [0, 3) (the model has 3 features)"]),
    ("data", lambda frame: frame.assign(score=float("nan")),
     ["data: the score of feature 0 is nan (3 of 3 scores are not a finite number)"]),
    ("data", _set_row("score", 2, float("inf")), ["the score of feature 2 is inf"]),
    ("data", lambda frame: frame.iloc[:2], ["data: holds 2 feature rows (scores) but the model was fitted on 3 "
                                            "features"]),
    ("data", lambda frame: frame.drop(columns="selected"), ["data: has no column(s) ['selected']"]),
    ("data", lambda frame: frame.assign(array_extra=float("nan")), ["column 'array_extra' holds NaN or infinite"]),
    ("metadata", lambda m: m["paramMap"].update(numFeatures=-5),
     ["The 'numFeatures' parameter of FisherMarkovSelectorModel must be an int in the range [1, inf). Got -5"]),
    ("metadata", lambda m: m["paramMap"].update(evilParam=1),
     ["sets the param 'evilParam', which FisherMarkovSelectorModel does not have"]),
    ("metadata", lambda m: m["defaultParamMap"].update(gamma="lots"), ["'defaultParamMap' gives the param 'gamma'"]),
    ("metadata", lambda m: m.pop("uid"), ["metadata: has no uid"]),
    ("metadata", lambda m: m.update(labelValues=[0.0, 0.0]), ["labelValues repeats a label"]),
    ("metadata", lambda m: m.update(labelValues=[1.0, 0.0]), ["label_mapping", "does not match labelValues"]),
])
def test_a_damaged_or_edited_model_is_refused_with_a_clear_error(fitted_lfs, tmp_path, where, edit, fragments):
    from sparkfs import InvalidModelError

    path = tmp_path / "model"
    fitted_lfs.save(str(path))
    (_edit_data if where == "data" else _edit_metadata)(path, edit)
    with pytest.raises(InvalidModelError) as refused:
        FisherMarkovSelectorModel.load(str(path))
    message = str(refused.value)
    assert message.startswith(f"{path}/{where}: ") and message.endswith("; this saved selector or model is not loaded")
    assert all(fragment in message for fragment in fragments), message


def test_an_untouched_model_still_loads_and_an_infinite_f_value_is_valid(spark, fitted_lfs, tmp_path):
    from sparkfs.selectors.baseline import UnivariateTestSelectorModel

    fitted_lfs.save(str(tmp_path / "lfs"))
    loaded = FisherMarkovSelectorModel.load(str(tmp_path / "lfs"))
    np.testing.assert_array_equal(loaded.scores, fitted_lfs.scores)
    assert loaded.selectedFeatures == fitted_lfs.selectedFeatures and loaded.labelValues == fitted_lfs.labelValues
    # F = +inf (a feature constant within each class that separates them) is a score anova can give.
    model = UnivariateTestSelectorModel(scores=[np.inf, 1.0, 0.0], selected_features=[0], label_values=[0.0, 1.0],
                                        summary={"n_features": 3})
    model.save(str(tmp_path / "anova"))
    assert UnivariateTestSelectorModel.load(str(tmp_path / "anova")).scores[0] == np.inf


def test_a_saved_selector_with_an_unknown_param_or_no_uid_is_refused(spark, tmp_path):
    from sparkfs import InvalidModelError

    for change, fragment in ((lambda m: m["paramMap"].update(k=0), "'k' parameter of ReliefSelector"),
                             (lambda m: m["paramMap"].update(__class__="x"), "sets the param '__class__'"),
                             (lambda m: m.update(uid=None), "has no uid")):
        path = tmp_path / f"selector{len(list(tmp_path.iterdir()))}"
        ReliefSelector(numFeatures=2, k=3).save(str(path))
        _edit_metadata(path, change)
        with pytest.raises(InvalidModelError, match=fragment):
            ReliefSelector.load(str(path))


def test_instance_weighter_naming_another_module_is_refused_without_importing_it(spark, tmp_path, trap_module):
    from sparkfs import MarginInstanceWeighter

    path = tmp_path / "weighter"
    MarginInstanceWeighter(blockSize=64).save(str(path))
    assert MarginInstanceWeighter.load(str(path)).getOrDefault("blockSize") == 64
    _rename_class(path, "trap_module_x.Model")
    with pytest.raises(ValueError, match="not a sparkfs MarginInstanceWeighter"):
        MarginInstanceWeighter.load(str(path))
    assert not trap_module.exists()


@pytest.mark.parametrize("depth", [200, 100_000])
def test_metadata_nested_deep_is_an_invalid_model(fitted_lfs, tmp_path, depth):
    """A param nested 100,000 arrays deep made json.loads (and 200 deep, the checks' repr) end in
    RecursionError: refused as a damaged model before any value is used."""
    from sparkfs import InvalidModelError

    path = tmp_path / "model"
    fitted_lfs.save(str(path))
    metadata_file = next((path / "metadata").glob("part-*"))
    text = metadata_file.read_text()
    assert '"numFeatures":2' in text
    metadata_file.write_text(text.replace('"numFeatures":2', '"numFeatures":' + "[" * depth + "2" + "]" * depth))
    for checksum in (path / "metadata").glob(".*.crc"):
        checksum.unlink()
    with pytest.raises(InvalidModelError) as refused:
        FisherMarkovSelectorModel.load(str(path))
    assert str(refused.value).startswith(f"{path}/metadata: nests JSON arrays or objects ")
    assert "more than 64 levels deep" in str(refused.value) or "too deep to read" in str(refused.value)
