"""The selection as something the next job uses: `select` saves its model in OUTPUT/model (loaded by the
selector's Model class, as a Pipeline stage, and by `apply`), `sparkfs apply` writes new data with the vector
sliced to the selection (every other column kept, the names in the vector's attributes) and `select
--write-reduced` writes the same in the same run. Data whose size or names differ from the model's are refused
with exit 2 (before Spark for local inputs); outputs follow the output rules, tested against decoys; a run that
fails leaves neither output.

Every command runs in-process through ``sparkfs.cli.main`` on the shared session (tests/conftest.py).
"""

import json
import os

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from sparkfs.io.output_safety import MARKER_KEY
from tests.helpers import refused
from tests.integration.test_output_safety import snapshot

WORDS = ["apple", "bread", "cheese", "dates", "eggs", "flour"]


def _libsvm_lines(rng, rows, informative=(1, 4), width=5):
    """LIBSVM lines of ``width`` term counts in two classes; the informative terms gain 3 in class 1."""
    lines = []
    for row in range(rows):
        label = row % 2
        counts = rng.integers(0, 3, size=width).astype(float)
        for j in informative:
            counts[j] += 3 * label
        lines.append(" ".join([str(label)] + [f"{j + 1}:{c:g}" for j, c in enumerate(counts) if c]))
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A term matrix (6 terms, the 6th in no row), its words, a select run on it with the model and the
    reduced data written, and tomorrow's rows (same terms)."""
    rng = np.random.default_rng(11)
    folder = tmp_path_factory.mktemp("fitted")
    (folder / "train.libsvm").write_text(_libsvm_lines(rng, 40))
    (folder / "new.libsvm").write_text(_libsvm_lines(rng, 9))
    (folder / "words.txt").write_text("\n".join(WORDS) + "\n")
    assert main(["select", "--input", str(folder / "train.libsvm"), "--format", "libsvm", "--method", "anova",
                 "--num-features", "2", "--feature-names", str(folder / "words.txt"), "--master", "local[2]",
                 "--output", str(folder / "sel"), "--write-reduced", str(folder / "reduced")]) == 0
    return folder


def _vectors(spark, path, column="features"):
    frame = spark.read.parquet(str(path))
    rows = frame.collect()
    return frame, [tuple(float(v) for v in row[column].toArray()) for row in rows], rows


def test_select_saves_a_model_the_selector_class_and_a_pipeline_load(spark, fitted, tmp_path):
    from pyspark.ml import PipelineModel

    from sparkfs import UnivariateTestSelectorModel
    from sparkfs.io.feature_names import load_names, read_named_dataset, requested_names
    from sparkfs.selectors.saved_selection import load_selector_model

    summary = json.loads((fitted / "sel" / "summary.json").read_text())
    assert summary["model"] == {"path": "model", "class": "sparkfs.selectors.baseline.UnivariateTestSelectorModel"}
    assert sorted(os.listdir(fitted / "sel")) == ["features.parquet", "model", "summary.json"]
    model = UnivariateTestSelectorModel.load(str(fitted / "sel" / "model"))
    assert model.selectedFeatures == summary["selected_indices"] and model.featureNames == WORDS
    table = pd.read_parquet(fitted / "sel" / "features.parquet")
    np.testing.assert_array_equal(model.scores, table["score"].to_numpy())
    assert load_selector_model(str(fitted / "sel" / "model"), spark).selectedFeatures == model.selectedFeatures
    # a Pipeline stage: in a PipelineModel, saved with it and loaded back
    names = load_names(requested_names(str(fitted / "words.txt"), None))
    data = read_named_dataset(spark, str(fitted / "new.libsvm"), "libsvm", names).df
    pipeline = PipelineModel(stages=[model.setOutputCol("selected")])
    pipeline.write().save(str(tmp_path / "pipeline"))
    loaded = PipelineModel.load(str(tmp_path / "pipeline"))
    selected = loaded.transform(data)
    assert selected.first()["selected"].size == 2
    attrs = selected.schema["selected"].metadata["ml_attr"]["attrs"]["numeric"]
    assert [a["name"] for a in attrs] == summary["selected_names"]


def test_apply_slices_new_rows_and_equals_what_select_wrote(spark, fitted, tmp_path, capsys):
    out = tmp_path / "applied"
    assert main(["apply", "--model", str(fitted / "sel"), "--input", str(fitted / "new.libsvm"), "--format", "libsvm",
                 "--master", "local[2]", "--output", str(out)]) == 0
    assert "rows=9 features=2 of 6" in capsys.readouterr().out
    summary = json.loads((out / "_summary.json").read_text())
    assert summary[MARKER_KEY] == {"kind": "apply", "format": 1} and summary["n_rows"] == 9
    selected = summary["selected_indices"]
    frame, vectors, rows = _vectors(spark, out)
    assert frame.columns == ["label", "features"]
    assert [a["name"] for a in frame.schema["features"].metadata["ml_attr"]["attrs"]["numeric"]] == \
        [WORDS[i] for i in selected] == summary["selected_names"]
    assert frame.schema["features"].metadata["sparkfs"] == {"vectors": "sparse"}
    full = {}  # the new rows as dense arrays: the slice is theirs at the selected indices
    for line in (fitted / "new.libsvm").read_text().splitlines():
        label, *pairs = line.split()
        dense = np.zeros(6)
        for pair in pairs:
            index, value = pair.split(":")
            dense[int(index) - 1] = float(value)
        full.setdefault(float(label), []).append(tuple(dense[selected]))
    got = {}
    for row, vector in zip(rows, vectors):
        got.setdefault(row["label"], []).append(vector)
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in full.items()}
    # select --write-reduced wrote the training rows the same way, in the same run
    reduced = json.loads((fitted / "reduced" / "_summary.json").read_text())
    assert reduced["n_rows"] == 40 and reduced["selected_names"] == summary["selected_names"]
    assert _vectors(spark, fitted / "reduced")[0].schema["features"].metadata == frame.schema["features"].metadata
    # --model may name the model directory itself
    assert main(["apply", "--model", str(fitted / "sel" / "model"), "--input", str(fitted / "new.libsvm"),
                 "--format", "libsvm", "--master", "local[2]", "--output", str(tmp_path / "again")]) == 0
    assert _vectors(spark, tmp_path / "again")[1] == vectors


def test_apply_keeps_every_other_column_of_a_parquet_input(spark, fitted, tmp_path):
    from pyspark.ml.linalg import Vectors

    rows = [(f"doc{i}", float(i % 2), Vectors.sparse(6, {1: 1.0 + i, 4: 2.0}), i * 0.5) for i in range(5)]
    source = tmp_path / "docs.parquet"
    spark.createDataFrame(rows, ["id", "label", "features", "weight"]).write.parquet(str(source))
    out = tmp_path / "applied"
    assert main(["apply", "--model", str(fitted / "sel"), "--input", str(source), "--format", "parquet",
                 "--feature-names", str(fitted / "words.txt"), "--master", "local[2]", "--output", str(out)]) == 0
    frame = spark.read.parquet(str(out)).orderBy("id")
    assert frame.columns == ["id", "label", "features", "weight"]
    selected = json.loads((out / "_summary.json").read_text())["selected_indices"]
    for row, (doc, label, vector, weight) in zip(frame.collect(), rows):
        assert (row["id"], row["label"], row["weight"]) == (doc, label, weight)
        assert row["features"].toArray().tolist() == vector.toArray()[selected].tolist()


@pytest.fixture()
def no_spark(monkeypatch):
    import sparkfs.spark.session

    monkeypatch.setattr(sparkfs.spark.session, "get_spark", lambda *a, **k: pytest.fail("Spark started"))


def _csv(path, columns, rows=4):
    frame = pd.DataFrame(np.ones((rows, len(columns))), columns=columns).assign(label=np.arange(rows) % 2)
    frame.to_csv(path, index=False)
    return path


def _apply(model, source, out, *extra, fmt="csv"):
    return main(["apply", "--model", str(model), "--input", str(source), "--format", fmt, "--master", "local[2]",
                 "--output", str(out), *extra])


def test_data_of_another_size_or_other_names_are_refused_before_spark(fitted, tmp_path, capsys, no_spark):
    model = fitted / "sel" / "model"
    out = tmp_path / "out"
    refused(capsys, _apply(fitted / "sel", _csv(tmp_path / "five.csv", WORDS[:5]), out), out,
            "five.csv has 5 features", f"the model {model} was fitted on 6")
    renamed = WORDS[:3] + ["dried dates"] + WORDS[4:]
    refused(capsys, _apply(fitted / "sel", _csv(tmp_path / "renamed.csv", renamed), out), out,
            "renamed.csv names feature 3 'dried dates'", f"the model {model} names it 'dates' (1 of 6 names differ)")
    short = tmp_path / "five.txt"
    short.write_text("\n".join(WORDS[:5]) + "\n")
    refused(capsys, _apply(fitted / "sel", fitted / "new.libsvm", out, "--feature-names", str(short), fmt="libsvm"),
            out, f"--feature-names {short} holds 5 names", f"the model {model} has 6 features")
    refused(capsys, _apply(fitted / "sel", fitted / "new.libsvm", out, "--vector-size", "7", fmt="libsvm"), out,
            "--vector-size 7 has 7 features", "was fitted on 6")
    empty = tmp_path / "empty"
    empty.mkdir()
    refused(capsys, _apply(empty, fitted / "new.libsvm", out, fmt="libsvm"), out,
            f"--model {empty} holds no metadata/ of a saved model")


def test_the_same_names_in_another_csv_apply(spark, fitted, tmp_path):
    out = tmp_path / "out"
    assert _apply(fitted / "sel", _csv(tmp_path / "same.csv", WORDS), out, "--label-col", "label") == 0
    frame = spark.read.parquet(str(out))
    assert sorted(frame.columns) == ["features", "label"] and frame.first()["features"].size == 2
    unlabelled = tmp_path / "unlabelled.csv"  # new rows need no label
    pd.DataFrame(np.arange(18.0).reshape(3, 6), columns=WORDS).to_csv(unlabelled, index=False)
    assert _apply(fitted / "sel", unlabelled, tmp_path / "unlabelled") == 0
    selected = json.loads((fitted / "sel" / "summary.json").read_text())["selected_indices"]
    rows = spark.read.parquet(str(tmp_path / "unlabelled")).collect()
    assert sorted(row["features"].toArray().tolist() for row in rows) == \
        np.arange(18.0).reshape(3, 6)[:, selected].tolist()


def test_an_index_above_the_model_is_refused_naming_the_line_and_nothing_is_written(spark, fitted, tmp_path, capsys):
    source = tmp_path / "wide.libsvm"
    source.write_text("1 1:1 2:1\n0 3:1 7:2\n")
    out = tmp_path / "out"
    refused(capsys, _apply(fitted / "sel", source, out, fmt="libsvm"), out, "line 2 of", "'7:2': index 7 is above "
            f"the vector size 6 (the model {fitted / 'sel' / 'model'} was fitted on 6 features)")
    assert sorted(os.listdir(tmp_path)) == ["wide.libsvm"]


def test_a_model_transform_refuses_renamed_features(spark, fitted):
    from pyspark.ml.linalg import Vectors

    from sparkfs import UnivariateTestSelectorModel
    from sparkfs.errors import InvalidInputError
    from sparkfs.io.table_input import vector_metadata

    model = UnivariateTestSelectorModel.load(str(fitted / "sel" / "model"))
    frame = spark.createDataFrame([(Vectors.dense([1.0] * 6),)], ["features"])
    renamed = frame.select(frame["features"].alias("features", metadata=vector_metadata(WORDS[::-1])))
    with pytest.raises(InvalidInputError, match="name feature 0 'flour', where this model's feature 0 is 'apple'"):
        model.transform(renamed)


def test_apply_outputs_follow_the_output_rules(spark, fitted, tmp_path, capsys):
    decoy = tmp_path / "decoy"
    (decoy / "sub").mkdir(parents=True)
    (decoy / "notes.txt").write_text("my notes: not sparkfs's\n")
    selected = tmp_path / "selected"  # another command's output is not apply's to replace
    selected.mkdir()
    (selected / "summary.json").write_text(json.dumps({MARKER_KEY: {"kind": "select", "format": 1}}))
    (selected / "features.parquet").write_bytes(b"PAR1")
    before = snapshot(tmp_path)
    source = fitted / "new.libsvm"
    for output, extra, reason in [
        (decoy, [], "already exists; pass --overwrite"),
        (decoy, ["--overwrite"], "is not an output of sparkfs apply (no _summary.json)"),
        (decoy / "notes.txt", ["--overwrite"], "is a file"),
        (selected, ["--overwrite"], "is not an output of sparkfs apply"),
        (fitted / "sel", ["--overwrite"], "contains the input"),
        (fitted / "sel" / "model" / "applied", [], "lies inside the input"),
    ]:
        capsys.readouterr()
        assert _apply(fitted / "sel", source, output, *extra, fmt="libsvm") == 2, (output, extra)
        assert reason in capsys.readouterr().err
        assert snapshot(tmp_path) == before
    out = tmp_path / "runs" / "out"
    assert _apply(fitted / "sel", source, out, fmt="libsvm") == 0
    assert _apply(fitted / "sel", source, out, "--overwrite", "--run-id", "again", fmt="libsvm") == 0
    assert json.loads((out / "_summary.json").read_text())["run_id"] == "again"
    assert _apply(fitted / "sel", source, out, "--if-exists", "skip", fmt="libsvm") == 0
    assert os.listdir(out.parent) == ["out"]  # no staging or retired directory left


def test_select_model_directory_is_replaced_only_when_it_holds_only_what_select_wrote(spark, fitted, tmp_path,
                                                                                    capsys):
    source = fitted / "train.libsvm"
    out = tmp_path / "sel"
    command = ["select", "--input", str(source), "--format", "libsvm", "--method", "variance", "--num-features", "2",
               "--master", "local[2]", "--output", str(out)]
    assert main(command) == 0
    assert main([*command, "--overwrite"]) == 0
    assert sorted(os.listdir(out / "model")) == ["checksums", "data", "metadata"]
    (out / "model" / "data" / "mine.txt").write_text("added by the user")
    before = snapshot(tmp_path)
    capsys.readouterr()
    assert main([*command, "--overwrite"]) == 2
    assert "does not write (model/data/mine.txt)" in capsys.readouterr().err
    assert snapshot(tmp_path) == before
    # an output of an earlier sparkfs (no model/) is complete for --if-exists skip, and replaced by --overwrite
    older = tmp_path / "older"
    older.mkdir()
    (older / "summary.json").write_text(json.dumps({MARKER_KEY: {"kind": "select", "format": 1}}))
    pd.DataFrame({"index": [0]}).to_parquet(older / "features.parquet")
    assert main([*command[:-1], str(older), "--if-exists", "skip"]) == 0
    assert main([*command[:-1], str(older), "--overwrite"]) == 0 and (older / "model").is_dir()


def test_write_reduced_is_refused_with_nothing_written(spark, fitted, tmp_path, capsys, no_spark):
    decoy = tmp_path / "decoy"
    decoy.mkdir()
    (decoy / "notes.txt").write_text("mine")
    before = snapshot(tmp_path)
    base = ["select", "--input", str(fitted / "train.libsvm"), "--format", "libsvm", "--method", "anova",
            "--num-features", "2", "--master", "local[2]", "--output", str(tmp_path / "sel")]
    for reduced, extra, reason in [(tmp_path / "sel" / "reduced", [], "lies inside --output"),
                                   (tmp_path / "sel", [], "is --output"),
                                   (decoy, [], "already exists"),
                                   (decoy, ["--overwrite"], "is not an output of sparkfs apply")]:
        capsys.readouterr()
        assert main([*base, "--write-reduced", str(reduced), *extra]) == 2
        error = capsys.readouterr().err
        assert reason in error, error
        assert snapshot(tmp_path) == before


def test_a_failure_placing_the_reduced_data_leaves_neither_output(spark, fitted, tmp_path, capsys, monkeypatch):
    import sparkfs.io.output as output

    place = output._put_in_place

    def fail_for_reduced(store, staging, target, command):
        if command == "apply":
            raise OSError("the disk went away")
        return place(store, staging, target, command)

    monkeypatch.setattr(output, "_put_in_place", fail_for_reduced)
    code = main(["select", "--input", str(fitted / "train.libsvm"), "--format", "libsvm", "--method", "anova",
                 "--num-features", "2", "--master", "local[2]", "--output", str(tmp_path / "sel"),
                 "--write-reduced", str(tmp_path / "reduced")])
    assert code == 1 and "the disk went away" in capsys.readouterr().err
    assert os.listdir(tmp_path) == []  # no selection, no reduced data, no staging directory


@pytest.mark.parametrize("outputs, fragment", [
    (["--output", "OUT", "--output-table", "db.reduced"], "give either --output (OUT) or --output-table (db.reduced), "
     "not both"),
    ([], "sparkfs apply needs --output (a directory) or --output-table (a table of the catalog)"),
    (["--output-table", "db.a table"], "--output-table 'db.a table' is not a table name"),
    (["--output-table", "a.b.c.d"], "--output-table 'a.b.c.d' is not a table name"),
])
def test_one_output_and_a_table_name_are_checked_before_spark(tmp_path, capsys, no_spark, outputs, fragment):
    out = tmp_path / "OUT"
    source = _csv(tmp_path / "new.csv", WORDS)
    argv = ["apply", "--model", str(tmp_path / "model"), "--input", str(source), "--format", "csv",
            *[str(out) if value == "OUT" else value for value in outputs]]
    refused(capsys, main(argv), out, fragment.replace("OUT", str(out)))
