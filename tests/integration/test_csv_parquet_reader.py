"""CSV and Parquet inputs Spark would misread silently or with a raw error,
through the command line: exit 2, a message naming the problem, nothing written."""

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from tests.helpers import refused as _refused


def _select(*args):
    return main(["select", "--master", "local[2]", "--method", "anova", *args])


def test_csv_header_with_duplicate_names_is_refused(spark, tmp_path, capsys):
    path = tmp_path / "dup.csv"
    path.write_text("a,b,A,label\n1,2,3,0\n4,5,6,1\n")
    out = tmp_path / "out"
    _refused(capsys, _select("--input", str(path), "--format", "csv", "--output", str(out)), out,
             f"the CSV header of {path} repeats the column name(s) ['a']", "ignoring case")


@pytest.mark.parametrize("separator, said", [(";", "';'-separated"), ("\t", "tab-separated")])
def test_csv_with_another_separator_is_refused_saying_so(spark, tmp_path, capsys, separator, said):
    path = tmp_path / "other.csv"
    path.write_text(separator.join(["a", "b", "label"]) + "\n" + separator.join(["1.5", "2", "0"]) + "\n")
    out = tmp_path / "out"
    _refused(capsys, _select("--input", str(path), "--format", "csv", "--output", str(out)), out,
             f"the CSV header of {path} is one column", said, "sparkfs reads comma-separated CSV")


def test_parquet_integer_column_named_features_is_a_feature(spark, tmp_path):
    """Not `Output column features already exists`: a non-vector `features` column is a numeric
    feature like the others, assembled with them into a private vector column."""
    rng = np.random.default_rng(0)
    label = np.arange(40) % 2
    frame = pd.DataFrame({"features": (label * 3 + rng.integers(0, 2, 40)).astype(np.int32),
                          "x": rng.normal(size=40), "label": label})
    frame.to_parquet(tmp_path / "int_features.parquet")
    out = tmp_path / "out"
    assert _select("--input", str(tmp_path / "int_features.parquet"), "--format", "parquet", "--num-features", "1",
                   "--output", str(out)) == 0
    table = pd.read_parquet(out / "features.parquet")
    assert sorted(table["name"]) == ["features", "x"]
    assert table.loc[table["selected"], "name"].tolist() == ["features"]


def test_missing_label_lists_a_handful_of_columns_and_the_likely_one(spark, tmp_path, capsys):
    columns = [f"g{i}" for i in range(5748)] + ["Label"]
    pd.DataFrame(np.zeros((3, len(columns))), columns=columns).to_parquet(tmp_path / "wide.parquet")
    out = tmp_path / "out"
    message = _refused(capsys, _select("--input", str(tmp_path / "wide.parquet"), "--format", "parquet",
                                       "--output", str(out)), out,
                       "label column 'label' not found", "'g0', 'g1'", "(5749 columns in all)",
                       "did you mean 'Label'?")
    assert len(message) < 300 and "g5747" not in message
