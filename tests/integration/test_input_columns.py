"""Inputs read as a user expects, through the command line:
LIBSVM features named by the file's own column numbers; missing named columns refused from the
CSV header or the Parquet footer before Spark starts, in a short message; a wide CSV read
without schema inference; CSV lines and values that are not numbers named with their line."""

import json
import time

import numpy as np
import pandas as pd
import pytest

import sparkfs.methods  # noqa: F401  (the selectors imported before any clock starts)
from sparkfs.cli import build_parser, main
from sparkfs.io.readers import read_dataset
from sparkfs.spark import session as session_module
from tests.helpers import refused as _refused


def _select(*args):
    return main(["select", "--master", "local[2]", "--method", "anova", *args])


@pytest.fixture
def no_spark(monkeypatch):
    """A refusal that must come before Spark starts: starting a session fails the test."""
    def refuse_to_start(*args, **kwargs):
        raise AssertionError("Spark was started before the input's columns were checked")

    monkeypatch.setattr(session_module, "get_spark", refuse_to_start)


def test_libsvm_feature_names_are_the_files_column_numbers(spark, tmp_path):
    """Column 7 of the file separates the classes: it is selected as f7 (not f6, its 0-based slot)."""
    rng = np.random.default_rng(5)
    lines = []
    for row in range(40):
        label = row % 2
        values = rng.normal(size=8)
        values[6] += 4 * label
        lines.append(" ".join([str(label), *(f"{j + 1}:{v:.5f}" for j, v in enumerate(values))]))
    (tmp_path / "named.libsvm").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert _select("--input", str(tmp_path / "named.libsvm"), "--format", "libsvm", "--num-features", "1",
                   "--output", str(out)) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["selected_names"] == ["f7"] and summary["selected_indices"] == [6]
    assert pd.read_parquet(out / "features.parquet")["name"].tolist() == [f"f{j}" for j in range(1, 9)]


def _wide_csv(path, columns=5749, rows=3):
    names = [f"g{i}" for i in range(columns - 1)] + ["Label"]
    pd.DataFrame(np.zeros((rows, columns)), columns=names).to_csv(path, index=False)


def test_missing_label_of_a_wide_csv_is_refused_from_its_header_before_spark(tmp_path, capsys, no_spark):
    _wide_csv(tmp_path / "wide.csv")
    out = tmp_path / "out"
    started = time.perf_counter()
    code = _select("--input", str(tmp_path / "wide.csv"), "--format", "csv", "--output", str(out))
    assert time.perf_counter() - started < 1.0
    message = _refused(capsys, code, out, "label column 'label' not found", "'g0', 'g1'", "(5749 columns in all)",
                       "did you mean 'Label'?")
    assert len(message) < 300 and "g5747" not in message


def test_missing_features_col_of_a_parquet_is_refused_from_its_footer_before_spark(tmp_path, capsys, no_spark):
    pd.DataFrame({"a": [1.0, 2.0], "b": [0.5, 0.1], "label": [0, 1]}).to_parquet(tmp_path / "x.parquet")
    out = tmp_path / "out"
    _refused(capsys, _select("--input", str(tmp_path / "x.parquet"), "--format", "parquet", "--features-col", "vec",
                             "--output", str(out)), out,
             "features column 'vec' not found in", "its columns are 'a', 'b', 'label'")
    _refused(capsys, _select("--input", str(tmp_path / "x.parquet"), "--format", "parquet", "--label-col", "y",
                             "--weight-col", "w", "--output", str(out)), out, "label column 'y' not found")


def test_help_of_the_input_columns_says_their_defaults(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["select", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--label-col LABEL_COL label column of a parquet/csv input (default: label" in text
    assert "--features-col FEATURES_COL vector column of a parquet input (default: features" in text


def test_wide_csv_is_read_with_its_values_and_label_type(spark, tmp_path):
    """A schema from the header, not inference: the values as written (nan as NaN; an empty cell is
    refused with its column and line, tests/integration/test_bad_input_files.py), the integer label an
    integer column, the vector's slots named after the columns."""
    rng = np.random.default_rng(1)
    data = rng.normal(size=(6, 1200)).round(4)
    frame = pd.DataFrame(data, columns=[f"g{i}" for i in range(1200)])
    frame.insert(3, "label", [0, 1, 2, 0, 1, 2])
    frame.to_csv(tmp_path / "wide.csv", index=False)
    text = (tmp_path / "wide.csv").read_text().splitlines()
    fields = text[2].split(",")
    fields[1], fields[5] = "nan", "NaN"       # g1 and g4 nan on the second data row
    text[2] = ",".join(fields)
    (tmp_path / "wide.csv").write_text("\n".join(text) + "\n")
    dataset = read_dataset(spark, str(tmp_path / "wide.csv"), "csv")
    assert dataset.feature_names == [f"g{i}" for i in range(1200)]
    assert dict(dataset.df.dtypes)["label"] == "int"
    rows = dataset.df.collect()
    expected = data.copy()
    expected[1, 1] = expected[1, 4] = np.nan
    np.testing.assert_array_equal(np.array([row[dataset.features_col].toArray() for row in rows]), expected)
    assert [row["label"] for row in rows] == [0, 1, 2, 0, 1, 2]
    attrs = dataset.df.schema[dataset.features_col].metadata["ml_attr"]["attrs"]["numeric"]
    assert attrs[4] == {"idx": 4, "name": "g4"}


def test_csv_line_with_too_few_fields_is_refused_with_its_line(spark, tmp_path, capsys):
    (tmp_path / "short.csv").write_text("a,b,label\n1.0,2.0,0\n2.0,1\n3.0,4.0,0\n")
    out = tmp_path / "out"
    _refused(capsys, _select("--input", str(tmp_path / "short.csv"), "--format", "csv", "--output", str(out)), out,
             f"line 3 of {tmp_path / 'short.csv'} does not split into the header's 3 fields",
             "Expected 3 columns, got 2 ('2.0,1')")


def test_libsvm_largest_index_not_last_on_its_line_is_named_as_out_of_order(spark, tmp_path, capsys):
    """The JVM scan sizes vectors by each line's last index; a line whose largest index is not its
    last is refused as out of order, not as "above the vector size"."""
    lines = [f"{row % 2} 1:{row} 8:1" for row in range(20)]
    lines[11] = "1 9:1 2:1"
    (tmp_path / "order.libsvm").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    _refused(capsys, _select("--input", str(tmp_path / "order.libsvm"), "--format", "libsvm", "--output", str(out)),
             out, f"line 12 of {tmp_path / 'order.libsvm'} is not LIBSVM",
             "'2:1': indices must be 1-based and increasing (2 after 9)")
