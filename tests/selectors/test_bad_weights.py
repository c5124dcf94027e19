"""A weight that is NaN, infinite or negative is refused by name and row count, by every method that takes
weights (the registry's ``takesWeights``), dense and sparse vectors, and by ``select --weight-col`` on a CSV and
a Parquet input (exit 2, nothing written)."""

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from sparkfs.errors import InvalidInputError
from sparkfs.methods import METHODS, build_selector
from tests.helpers import make_df

LIGHT = {"lmba": {"batchSize": 16, "passes": 1}, "simba": {"batchSize": 16, "passes": 1}}
REFUSAL = r"^3 row\(s\) have a null, NaN, infinite or negative weight in column 'weight'$"
WEIGHTED = sorted(method for method in METHODS if build_selector(method, LIGHT.get(method, {})).takesWeights())


def _data():
    rng = np.random.default_rng(4)
    X = rng.integers(0, 3, size=(40, 4)).astype(float)
    y = (np.arange(40) % 2).astype(float)
    weights = np.ones(40)
    weights[[3, 7, 11]] = [np.nan, np.inf, -1.0]
    return X, y, weights


@pytest.fixture(scope="module")
def frames(spark):
    X, y, weights = _data()
    made = {sparse: make_df(spark, X, y, partitions=2, sparse=sparse, weights=weights) for sparse in (False, True)}
    yield made
    for frame in made.values():
        frame.unpersist()


def test_every_method_that_takes_weights_is_in_the_loop():
    expected = {"anova", "chi2", "variance", "lfs", "relieff", "svm-rfe", "multisurf", "mrmr", "jmi", "cmim"}
    assert expected <= set(WEIGHTED)


@pytest.mark.parametrize("method", WEIGHTED)
def test_a_nan_infinite_or_negative_weight_is_refused_by_name_and_count(frames, method):
    sparse = WEIGHTED.index(method) % 2 == 1
    selector = build_selector(method, LIGHT.get(method, {})).setNumFeatures(2).setWeightCol("weight")
    with pytest.raises(InvalidInputError, match=REFUSAL):
        selector.fit(frames[sparse])


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_select_refuses_them_with_exit_2(spark, tmp_path, capsys, fmt):
    X, y, weights = _data()
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(label=y, weight=weights)
    path = tmp_path / f"weighted.{fmt}"
    if fmt == "csv":
        frame.to_csv(path, index=False, na_rep="nan")
    else:
        frame.to_parquet(path, index=False)
    assert main(["select", "--master", "local[2]", "--input", str(path), "--format", fmt, "--label-col", "label",
                 "--weight-col", "weight", "--method", "anova", "--num-features", "2",
                 "--output", str(tmp_path / "out")]) == 2
    assert ("sparkfs: error: 3 row(s) have a null, NaN, infinite or negative weight in column 'weight'"
            in capsys.readouterr().err)
    assert not (tmp_path / "out").exists()
