"""Bad input through the CLI for every selector family: each case gets a clear message
naming the problem, exit code 2 and no output; awkward but valid input gets finite scores.
The table in docs/bad_input.md lists the cases and points here."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pyspark.ml.linalg import Vectors, VectorUDT
from pyspark.sql.types import DoubleType, StructField, StructType

from sparkfs.cli import main

METHODS = {
    "lfs": [], "qfs": [], "relieff": [], "anova": [],
    "lmba": ["--param", "batchSize=15", "--param", "passes=1"],
    "simba": ["--param", "batchSize=15", "--param", "passes=1"],
    "parzen-ise": ["--label-col", "label", "--param", "maxIter=1", "--param", "fcmMaxIter=3"],
    "svm-rfe": ["--param", "step=0.5"],
    "multisurf": [],
    "prelief": [],
    "mrmr": [],
    "turf": ["--param", "keepFeatures=2"],
    "variance": [],
    "f-regression": [],
}
SCHEMA = StructType([StructField("features", VectorUDT()), StructField("label", DoubleType())])


def _write(spark, path, vectors, labels):
    rows = [(vector, None if label is None else float(label)) for vector, label in zip(vectors, labels)]
    spark.createDataFrame(rows, SCHEMA).write.parquet(str(path))
    return str(path)


def _dense(X):
    return [Vectors.dense([float(v) for v in row]) for row in X]


@pytest.fixture(scope="module")
def inputs(spark, tmp_path_factory):
    """Every case as a Parquet file (a vector column and a label)."""
    folder = tmp_path_factory.mktemp("bad")
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 4)), np.arange(30) % 2
    files = {}
    with_nan = X.copy()
    with_nan[3, 1] = np.nan
    files["nan"] = _write(spark, folder / "nan", _dense(with_nan), y)
    with_inf = X.copy()
    with_inf[5, 2] = -np.inf
    files["inf"] = _write(spark, folder / "inf", _dense(with_inf), y)
    files["huge"] = _write(spark, folder / "huge", _dense(X * 1e300), y)
    mixed = _dense(X)
    mixed[7] = Vectors.dense([1.0, 2.0, 3.0])
    files["mixed_sizes"] = _write(spark, folder / "mixed", mixed, y)
    files["empty_vectors"] = _write(spark, folder / "empty", [Vectors.dense([]) for _ in y], y)
    files["single_class"] = _write(spark, folder / "single", _dense(X), np.zeros(30))
    files["null_label"] = _write(spark, folder / "null", _dense(X), [None if i == 4 else v for i, v in enumerate(y)])
    files["many_classes"] = _write(spark, folder / "many", _dense(X), np.arange(30) % 20)
    files["continuous_label"] = _write(spark, folder / "continuous", _dense(X), np.round(X[:, 0] * 10 + 0.37, 2))
    awkward = X.copy()
    awkward[:, 1] = 0.0                      # an all-zero feature
    awkward[:, 2] = 7.5                      # a constant feature
    awkward[20:] = awkward[:10]              # duplicate rows
    labels = y.copy()
    labels[[0, 1]] = 2                       # a class of two rows
    files["awkward"] = _write(spark, folder / "awkward", _dense(awkward), labels)
    return files


REFUSED = {
    "nan": "row(s) have NaN or infinite feature values|contain NaN or infinite",
    "inf": "row(s) have NaN or infinite feature values|contain NaN or infinite",
    "huge": "has values up to 2.3",
    "mixed_sizes": "different sizes|instead of 4",
    "empty_vectors": "no features|size 0|empty",
    "single_class": "needs at least two classes",
    "null_label": "1 row(s) have a null label in column 'label'",
    "many_classes": "20 distinct values in 30 rows",
    "continuous_label": "looks continuous",
}
#: The message of a case that a method refuses in its own words (a continuous label has no classes).
REFUSED_FOR = {("single_class", "f-regression"): "label column 'label' is constant (0.0 in all 30 rows)",
               ("null_label", "f-regression"): "1 row(s) have a null, NaN or infinite label in column 'label'"}
#: (case, method) pairs that are not bad input for that method.
ACCEPTED = {("single_class", "parzen-ise"): "an unsupervised method takes a single class",
            ("huge", "relieff"): "relieff's default range scaling brings 1e300 values to [0, 1] before any square",
            ("huge", "multisurf"): "multisurf's default range scaling brings 1e300 values to [0, 1] before any sum",
            ("huge", "prelief"): "prelief's default range scaling brings 1e300 values to [0, 1] before any kernel",
            ("huge", "turf"): "turf's inner multisurf scales by the range, as multisurf",
            ("huge", "mrmr"): "mrmr codes values into equal-width bins between the exact extremes: no squares",
            ("huge", "svm-rfe"): "svm-rfe's driver solver standardises the rows in memory, each extreme feature's "
                                 "moments taken on its values times a power of two",
            **{(case, "variance"): "variance reads no labels" for case in ("single_class", "null_label",
                                                                            "many_classes", "continuous_label")},
            **{(case, "f-regression"): "f-regression takes a continuous label" for case in ("many_classes",
                                                                                          "continuous_label")}}


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_bad_input_is_refused_with_a_named_problem(inputs, tmp_path, capsys, case, method):
    out = tmp_path / "out"
    arguments = ["select", "--master", "local[2]", "--input", inputs[case], "--format", "parquet", "--method", method,
                 "--num-features", "2", "--output", str(out), *METHODS[method]]
    if (case, method) in ACCEPTED:  # not bad input for this method: it must then give finite scores
        assert main(arguments) == 0, ACCEPTED[case, method]
        assert np.all(np.isfinite(pd.read_parquet(out / "features.parquet")["score"]))
        return
    code = main(["select", "--master", "local[2]", "--input", inputs[case], "--format", "parquet", "--method", method,
                 "--num-features", "2", "--output", str(out), *METHODS[method]])
    err = capsys.readouterr().err
    assert code == 2, (case, method, err[-2000:])
    message = next(line for line in err.splitlines() if line.startswith("sparkfs: error: "))
    expected = REFUSED_FOR.get((case, method), REFUSED[case])
    assert any(part in message for part in expected.split("|")), (case, method, message)
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]


@pytest.mark.parametrize("method", sorted(METHODS))
def test_constant_zero_duplicate_and_tiny_class_input_gives_finite_scores(inputs, tmp_path, method):
    out = tmp_path / "out"
    assert main(["select", "--master", "local[2]", "--input", inputs["awkward"], "--format", "parquet",
                 "--method", method, "--num-features", "2", "--output", str(out), *METHODS[method]]) == 0
    table = pd.read_parquet(out / "features.parquet")
    assert np.all(np.isfinite(table["score"])), table
    summary = json.loads(Path(out, "summary.json").read_text())
    assert summary["n_rows"] == 30
    assert table["selected"].sum() == 2 or method == "qfs"  # QFS's min-cut picks its own number
