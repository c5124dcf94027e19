"""Feature names given beside the data (`--feature-names FILE`, `--feature-names-from MODEL_DIR`): the words
reach features.parquet, summary.json, the model and evaluate's study; a count other than the vector size, an empty
or repeated name, and a directory that is no CountVectorizerModel are refused with exit 2, the counts ones before
Spark starts.

Every command runs in-process through ``sparkfs.cli.main`` on the shared session (tests/conftest.py).
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from sparkfs.io.input_features import known_vector_size
from sparkfs.io.stores import location_of
from tests.helpers import refused

WORDS = ["apple", "bread", "cheese", "dates", "eggs", "flour"]


@pytest.fixture(scope="module")
def terms(tmp_path_factory):
    """A small LIBSVM term matrix (40 rows, 6 terms; term 2, 'cheese', separates the classes; term 6
    occurs in no row, so the largest index is 5) and its vocabulary, one word per line."""
    rng = np.random.default_rng(7)
    folder = tmp_path_factory.mktemp("terms")
    lines = []
    for row in range(40):
        label = row % 2
        counts = rng.integers(0, 3, size=5).astype(float)
        counts[2] += 4 * label
        lines.append(" ".join([str(label)] + [f"{j + 1}:{c:g}" for j, c in enumerate(counts) if c]))
    (folder / "terms.libsvm").write_text("\n".join(lines) + "\n")
    (folder / "words.txt").write_text("\n".join(WORDS) + "\n")
    return folder


def _select(source, out, *extra, fmt="libsvm"):
    return main(["select", "--input", str(source), "--format", fmt, "--method", "anova", "--num-features", "2",
                 "--master", "local[2]", "--output", str(out), *extra])


def test_names_file_gives_words_in_every_output(spark, terms, tmp_path, capsys):
    out = tmp_path / "out"
    assert _select(terms / "terms.libsvm", out, "--feature-names", str(terms / "words.txt")) == 0
    printed = capsys.readouterr().out
    table = pd.read_parquet(out / "features.parquet")
    summary = json.loads((out / "summary.json").read_text())
    assert table["name"].tolist() == WORDS  # six names: the vector size is the count, not the largest index
    assert summary["n_features"] == 6 and "cheese" in summary["selected_names"]
    assert printed.splitlines()[2].split()[0] == "cheese"  # the first of the top features printed
    assert summary["selected_names"] == [WORDS[i] for i in summary["selected_indices"]]


def test_a_fitted_model_keeps_the_names_through_save_and_load(spark, terms, tmp_path):
    from sparkfs import UnivariateTestSelector, UnivariateTestSelectorModel
    from sparkfs.io.feature_names import load_names, read_named_dataset, requested_names

    names = load_names(requested_names(str(terms / "words.txt"), None))
    dataset = read_named_dataset(spark, str(terms / "terms.libsvm"), "libsvm", names)
    model = UnivariateTestSelector(numFeatures=2).fit(dataset.df)
    assert model.featureNames == WORDS and "cheese" in model.summary["selected_names"]
    model.write().save(str(tmp_path / "model"))
    loaded = UnivariateTestSelectorModel.load(str(tmp_path / "model"))
    assert loaded.featureNames == WORDS and loaded.selectedFeatures == model.selectedFeatures


def test_count_vectorizer_vocabulary_names_the_features(spark, tmp_path):
    from pyspark.ml.feature import CountVectorizer

    documents = spark.createDataFrame(
        [(float(i % 2), ("good great fine" if i % 2 else "bad poor awful").split() + ["the", "a"][: i % 3])
         for i in range(30)], ["label", "words"])
    vectorizer = CountVectorizer(inputCol="words", outputCol="features").fit(documents)
    vectorizer.save(str(tmp_path / "vocabulary"))
    vectorizer.transform(documents).select("label", "features").write.parquet(str(tmp_path / "counts.parquet"))
    out = tmp_path / "out"
    assert _select(tmp_path / "counts.parquet", out, "--feature-names-from", str(tmp_path / "vocabulary"),
                   fmt="parquet") == 0
    table = pd.read_parquet(out / "features.parquet")
    assert table["name"].tolist() == list(vectorizer.vocabulary)
    assert set(json.loads((out / "summary.json").read_text())["selected_names"]) <= {"good", "great", "fine", "bad",
                                                                                     "poor", "awful"}


@pytest.fixture()
def no_spark(monkeypatch):
    """A session start fails the test: the refusal must come first."""
    import sparkfs.spark.session

    def refuse(*args, **kwargs):
        raise AssertionError("a Spark session was started before the refusal")

    monkeypatch.setattr(sparkfs.spark.session, "get_spark", refuse)


def test_a_csv_whose_columns_differ_from_the_names_is_refused_before_spark(no_spark, tmp_path, capsys):
    source = tmp_path / "data.csv"
    pd.DataFrame(np.ones((4, 5)), columns=list("abcde")).assign(label=[0, 1, 0, 1]).to_csv(source, index=False)
    names = tmp_path / "words.txt"
    names.write_text("\n".join(WORDS) + "\n")
    out = tmp_path / "out"
    refused(capsys, _select(source, out, "--label-col", "label", "--feature-names", str(names), fmt="csv"), out,
            f"--feature-names {names} holds 6 names", f"the input {source} has 5 features")


def test_vector_size_other_than_the_names_is_refused_before_spark(no_spark, terms, tmp_path, capsys):
    out = tmp_path / "out"
    refused(capsys, _select(terms / "terms.libsvm", out, "--vector-size", "8", "--feature-names",
                            str(terms / "words.txt")), out, "holds 6 names", "--vector-size 8 has 8 features")


def test_a_parquet_vector_column_is_sized_from_its_first_row_before_spark(spark, tmp_path, capsys, monkeypatch):
    from pyspark.ml.linalg import Vectors

    source = tmp_path / "vectors.parquet"
    spark.createDataFrame([(0.0, Vectors.dense([1.0, 2.0, 3.0])), (1.0, Vectors.sparse(3, {0: 1.0}))],
                          ["label", "features"]).write.parquet(str(source))
    assert known_vector_size(location_of(str(source)), "parquet", label_col="label", weight_col=None,
                             features_col="features") == 3
    names = tmp_path / "four.txt"
    names.write_text("w\nx\ny\nz\n")
    import sparkfs.spark.session

    monkeypatch.setattr(sparkfs.spark.session, "get_spark", lambda *a, **k: pytest.fail("Spark started"))
    out = tmp_path / "out"
    refused(capsys, _select(source, out, "--feature-names", str(names), fmt="parquet"), out,
            "holds 4 names", "has 3 features")


def test_an_index_above_the_names_is_refused_naming_its_line_and_the_file(spark, terms, tmp_path, capsys):
    three = tmp_path / "three.txt"
    three.write_text("apple\nbread\ncheese\n")
    out = tmp_path / "out"
    refused(capsys, _select(terms / "terms.libsvm", out, "--feature-names", str(three)), out,
            "terms.libsvm is not LIBSVM", f"is above the vector size 3 (--feature-names {three} holds 3 names)")


@pytest.mark.parametrize("text, fragment", [
    ("apple\n\ncheese\n", "line 2 is empty"),
    ("apple\nbread\napple\n", "line 3 repeats the name 'apple' of line 1"),
    ("", "holds no names"),
])
def test_empty_or_repeated_names_are_refused_naming_the_line(no_spark, terms, tmp_path, capsys, text, fragment):
    names = tmp_path / "names.txt"
    names.write_text(text)
    out = tmp_path / "out"
    refused(capsys, _select(terms / "terms.libsvm", out, "--feature-names", str(names)), out,
            f"--feature-names {names}", fragment)


def test_windows_line_ends_and_no_final_newline_are_read(tmp_path):
    from sparkfs.io.feature_names import load_names, requested_names

    names = tmp_path / "names.txt"
    names.write_bytes("\ufeffapple\r\nnew york\r\nz\u00fcrich".encode("utf-8"))
    assert load_names(requested_names(str(names), None)).names == ("apple", "new york", "z\u00fcrich")


def test_a_directory_that_is_no_count_vectorizer_is_refused(no_spark, terms, tmp_path, capsys):
    other = tmp_path / "other"
    (other / "metadata").mkdir(parents=True)
    (other / "metadata" / "part-00000").write_text(json.dumps({"class": "org.apache.spark.ml.feature.IDFModel"}))
    out = tmp_path / "out"
    refused(capsys, _select(terms / "terms.libsvm", out, "--feature-names-from", str(other)), out,
            f"--feature-names-from {other} holds a org.apache.spark.ml.feature.IDFModel, not a CountVectorizerModel")
    refused(capsys, _select(terms / "terms.libsvm", out, "--feature-names-from", str(terms / "words.txt")), out,
            "is not a directory")


def test_both_kinds_of_names_are_refused(no_spark, terms, tmp_path, capsys):
    config = tmp_path / "job.yaml"
    config.write_text(f"input: {{feature_names: {terms / 'words.txt'}, feature_names_from: {tmp_path}}}\n")
    out = tmp_path / "out"
    refused(capsys, main(["select", "--config", str(config), "--input", str(terms / "terms.libsvm"), "--format",
                          "libsvm", "--output", str(out)]), out, "give either --feature-names", "not both")
    with pytest.raises(SystemExit) as stop:  # both flags: argparse's own refusal
        main(["select", "--feature-names", "a", "--feature-names-from", "b"])
    assert stop.value.code == 2


def test_evaluate_reports_the_names(spark, terms, tmp_path):
    out = tmp_path / "eval"
    assert main(["evaluate", "--input", str(terms / "terms.libsvm"), "--format", "libsvm", "--feature-names",
                 str(terms / "words.txt"), "--methods", "anova", "--classifiers", "nb", "--num-features", "1,2",
                 "--cv", "2", "--master", "local[2]", "--output", str(out)]) == 0
    study = json.loads(Path(out, "study.json").read_text())
    assert study["description"]["feature_names"] == WORDS
    recommended = json.loads(Path(out, "recommendation.json").read_text())["recommendations"]
    assert set(recommended[0]["features"]) <= set(WORDS)
