"""Labels that are no class and JSON that every parser reads, through the command line.

A NaN or infinite label is refused by name and row count (exit 2) whatever the reader; a class of a
single row among several is announced (a label typo); ``summary.json`` holds no bare ``NaN`` or
``Infinity`` even when a score is infinite.
"""

import json
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sparkfs.cli import main
from sparkfs.core.labels import check_class_labels, check_finite_labels, single_row_classes
from sparkfs.errors import InvalidInputError
from sparkfs.io import strict_json


def _strict(text):
    """json.loads refusing NaN, Infinity and -Infinity (as jq or JSON.parse do)."""
    def refuse(word):
        raise ValueError(f"not JSON: {word}")
    return json.loads(text, parse_constant=refuse)


# -- the rules, without Spark ---------------------------------------------------------------------


def test_nan_and_infinite_labels_are_refused_with_their_row_counts():
    with pytest.raises(InvalidInputError, match=r"^3 row\(s\) have a NaN or infinite label in column 'y' "
                                                r"\(nan: 2 row\(s\), -inf: 1 row\(s\)\)"):
        check_finite_labels([-np.inf, 0.0, 1.0, np.nan], [1, 10, 10, 2], "y")
    with pytest.raises(InvalidInputError, match="NaN or infinite label"):  # even where many classes are allowed
        check_class_labels([0.0, 1.0, np.inf], [5, 5, 1], "label", allow_many_classes=True)
    check_finite_labels(["nan-like text", True, 3], [1, 1, 1])  # strings and booleans are names, not numbers


def test_a_class_of_a_single_row_among_several_is_named():
    note = single_row_classes(["0", "1", "1_0"], [14, 15, 1])
    assert note.startswith("1 of the 3 classes have a single row (label(s) '1_0')"), note
    assert single_row_classes([0, 1], [29, 1]) == ""  # two classes: the method's own rules speak
    assert single_row_classes([0, 1, 2], [10, 10, 10]) == ""
    assert single_row_classes(list(range(6)), [1, 1, 1, 2, 2, 2]) == ""  # half single: the identifier rule's case


def test_strict_json_writes_null_for_numbers_that_are_not_finite():
    document = {"a": float("nan"), "b": [np.float64(np.inf), -np.inf, 1.5], "c": np.array([np.nan, 2.0]),
                "d": (np.int64(3), "NaN")}
    text = strict_json.dumps(document, indent=2)
    assert _strict(text) == {"a": None, "b": [None, None, 1.5], "c": [None, 2.0], "d": [3, "NaN"]}
    with pytest.raises(ValueError, match="not JSON: NaN"):
        _strict(json.dumps({"a": float("nan")}))  # the parser of these tests refuses what json.dumps writes


# -- every reader, through the command line -------------------------------------------------------


def _table(labels):
    rng = np.random.default_rng(0)
    columns = {f"x{i}": pa.array(rng.normal(size=len(labels))) for i in range(3)}
    columns["label"] = pa.array(labels, from_pandas=False)  # a NaN stays NaN (pandas would write a null)
    return pa.table(columns)


def _labels_with(*bad):
    labels = np.r_[np.zeros(15), np.ones(15)]
    labels[[3, 5, 7][:len(bad)]] = bad
    return labels


def _write_csv(path, labels):
    rows = _table(labels).to_pylist()
    text = "x0,x1,x2,label\n" + "".join(f"{r['x0']},{r['x1']},{r['x2']},{r['label']}\n" for r in rows)
    path.write_text(text)  # the labels as Python writes them: 'nan', 'inf', '-inf'


def _write_libsvm(path, labels):
    path.write_text("".join(f"{label} 1:{index % 3 + 0.5} 2:{index}\n" for index, label in enumerate(labels)))


@pytest.mark.parametrize("reader, method, bad, message", [
    ("parquet", "anova", (np.nan, np.nan, -np.inf),
     r"3 row\(s\) have a NaN or infinite label in column 'label' \(nan: 2 row\(s\), -inf: 1 row\(s\)\)"),
    ("parquet", "relieff", (np.inf,), r"1 row\(s\) have a NaN or infinite label in column 'label' \(inf: 1 row"),
    ("csv", "anova", (np.nan, np.inf), r"2 row\(s\) have a NaN or infinite label in column 'label' \(nan: 1 row"),
    ("libsvm", "anova", (np.nan,), r"line 4 of .* the label 'nan' is not a finite number"),
])
def test_a_label_that_is_not_finite_is_refused_by_every_reader(spark, tmp_path, capsys, reader, method, bad,
                                                                message):
    path = tmp_path / f"data.{reader}"
    labels = _labels_with(*bad)
    {"parquet": lambda: pq.write_table(_table(labels), path), "csv": lambda: _write_csv(path, labels),
     "libsvm": lambda: _write_libsvm(path, labels)}[reader]()
    output = tmp_path / "out"
    assert main(["select", "--master", "local[2]", "--quiet", "--input", str(path), "--format", reader,
                 "--method", method, "--num-features", "2", "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert "sparkfs: error: " in err and re.search(message, err), err
    assert "Traceback" not in err
    assert not output.exists()


def test_a_label_typo_is_announced_and_the_summary_is_strict_json(spark, tmp_path, capsys, caplog):
    """'1_0' among 0/1 labels: the run goes on, and one warning line names the class."""
    labels = ["0"] * 14 + ["1"] * 15 + ["1_0"]
    rng = np.random.default_rng(1)
    path = tmp_path / "typo.csv"
    path.write_text("x0,x1,label\n" + "".join(f"{rng.normal()},{rng.normal()},{y}\n" for y in labels))
    output = tmp_path / "out"
    assert main(["select", "--master", "local[2]", "--quiet", "--input", str(path), "--format", "csv",
                 "--method", "anova", "--num-features", "1", "--output", str(output)]) == 0
    shown = capsys.readouterr().err + caplog.text  # pytest's log capture may take the line from stderr
    assert "UnivariateTestSelector: label column 'label': 1 of the 3 classes have a single row (label(s) '1_0')" \
        in shown, shown
    summary = _strict((output / "summary.json").read_text())
    assert summary["n_classes"] == 3 and "1_0" in summary["label_mapping"].values()


def test_summary_json_with_scores_that_are_not_finite_is_strict_json(tmp_path):
    """An infinite F (a feature with no spread inside its classes) or a NaN in a summary is written as null."""
    from sparkfs.io.output import features_table, write_selection_output

    table = features_table(np.array([np.inf, 1.0]), [0], ["x0", "x1"])
    written = write_selection_output(str(tmp_path / "out"), table, {"score_spread": np.inf, "cut": float("nan"),
                                                                   "scores": np.array([np.inf, 1.0])})
    summary = _strict((tmp_path / "out" / "summary.json").read_text())
    assert (summary["score_spread"], summary["cut"], summary["scores"]) == (None, None, [None, 1.0]), written


@pytest.mark.parametrize("bad, words", [(np.nan, "Input y contains NaN"), (np.inf, "Input y contains infinity")])
def test_the_scikit_learn_front_refuses_a_label_that_is_not_finite(bad, words):
    """Every estimator of the front that takes labels (its tags say so) refuses a NaN or infinite y."""
    from sparkfs.sklearn import FRONT

    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(30, 3)), _labels_with(bad)
    supervised = {name: cls for name, cls in FRONT.items() if cls().__sklearn_tags__().target_tags.required}
    assert "anova" in supervised and "relieff" in supervised
    for name, cls in supervised.items():
        with pytest.raises(ValueError, match=words):
            cls().fit(X, y)
            pytest.fail(f"{name} took the label {bad}")
