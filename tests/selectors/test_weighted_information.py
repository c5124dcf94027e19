"""Instance weights in mRMR, JMI and CMIM: weighted counts (frequency weights).

A weighted fit is checked against the unweighted fit of the rows repeated w times (integer
weights, 0 among them; both discretisations) and against a NumPy reference of the greedy criteria
on weighted contingency tables written here, sharing no code with sparkfs; 1 and 3 partitions.
"""

from __future__ import annotations

import numpy as np
import pytest

from sparkfs.selectors.information import InformationSelector
from sparkfs.sklearn import FRONT
from tests.helpers import make_df

BINS = 4
CRITERIA = ("mrmr", "jmi", "cmim")


def _coded_data():
    """Integer codes in [0, BINS), about 80 % zeros (the CSR codes), 3 classes, weights 0..3."""
    rng = np.random.default_rng(7)
    n, p = 60, 6
    y = np.arange(n) % 3
    X = np.where(rng.random((n, p)) < 0.2, rng.integers(1, BINS, (n, p)), 0).astype(np.float64)
    X[:, 0] = np.where(rng.random(n) < 0.5, y + 1, 0)        # relevant
    X[:, 1] = np.where(X[:, 0] > 0, X[:, 0], X[:, 1])        # redundant with 0, less relevant
    X[:, 2] = np.where(rng.random(n) < 0.4, (y == 2) + 1, 0)  # relevant to class 2
    w = rng.integers(0, 4, n).astype(np.float64)
    return X, y, w


def _real_data():
    """Dense real values (every entry non-zero: the dense codes), binned by weighted quantiles."""
    rng = np.random.default_rng(11)
    n = 45
    y = np.arange(n) % 3
    X = rng.normal(size=(n, 5)) + 3.0
    X[:, 0] += 1.2 * y
    X[:, 3] += 0.6 * (y == 1)
    w = rng.integers(0, 4, n).astype(np.float64)
    return X, y, w


def _information(*columns, weights):
    """I(first column; second column | the third if given), in nats, of the weighted rows."""
    if len(columns) == 3:
        a, b, given = columns
        total = weights.sum()
        return sum(weights[given == v].sum() / total
                   * _information(a[given == v], b[given == v], weights=weights[given == v])
                   for v in np.unique(given) if weights[given == v].sum() > 0)
    a, b = columns
    table = np.zeros((int(a.max()) + 1, int(b.max()) + 1))
    np.add.at(table, (a.astype(int), b.astype(int)), weights)
    joint = table / table.sum()
    outer = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)
    positive = joint > 0
    return float((joint[positive] * np.log(joint[positive] / outer[positive])).sum())


def reference_order(X, y, w, criterion, count):
    """The greedy order of the criteria on the weighted tables (the relevance first)."""
    p = X.shape[1]
    relevance = np.array([_information(X[:, j], y, weights=w) for j in range(p)])
    order = [int(np.argmax(relevance))]
    while len(order) < count:
        scores = np.full(p, -np.inf)
        for j in set(range(p)) - set(order):
            if criterion == "mrmr":
                scores[j] = relevance[j] - np.mean([_information(X[:, j], X[:, s], weights=w) for s in order])
            elif criterion == "jmi":
                scores[j] = sum(relevance[s] + _information(X[:, j], y, X[:, s], weights=w) for s in order)
            else:
                scores[j] = min(_information(X[:, j], y, X[:, s], weights=w) for s in order)
        order.append(int(np.argmax(scores)))
    return order, relevance


def _fit(df, criterion, weighted, **params):
    return InformationSelector(criterion=criterion, numFeatures=3, bins=BINS, weightCol="weight" if weighted else None,
                               **params).fit(df)


@pytest.fixture(scope="module")
def fits(spark):
    """(criterion, kind) -> model: kind 'p3' / 'p1' weighted on 3 / 1 partitions, 'repeated' the
    unweighted rows repeated w times; ('jmi', 'quantiles', ...) the real-valued data."""
    X, y, w = _coded_data()
    repeats = w.astype(np.int64)
    frames = {"p3": make_df(spark, X, y, partitions=3, weights=w), "p1": make_df(spark, X, y, weights=w),
              "repeated": make_df(spark, np.repeat(X, repeats, axis=0), np.repeat(y, repeats), partitions=2)}
    models = {}
    for criterion in CRITERIA:
        for kind in ("p3", "repeated") + (("p1",) if criterion == "mrmr" else ()):
            models[criterion, kind] = _fit(frames[kind], criterion, kind != "repeated", discretization="none")
    R, labels, weights = _real_data()
    frames["real"] = make_df(spark, R, labels, partitions=2, weights=weights)
    frames["real-repeated"] = make_df(spark, np.repeat(R, weights.astype(np.int64), axis=0),
                                      np.repeat(labels, weights.astype(np.int64)), partitions=3)
    models["jmi", "quantiles", "weighted"] = _fit(frames["real"], "jmi", True)
    models["jmi", "quantiles", "repeated"] = _fit(frames["real-repeated"], "jmi", False)
    yield models
    for frame in frames.values():
        frame.unpersist()


@pytest.mark.parametrize("criterion", CRITERIA)
def test_weighted_counts_are_the_repeated_rows_and_the_reference(fits, criterion):
    X, y, w = _coded_data()
    order, relevance = reference_order(X, y, w, criterion, 3)
    weighted, repeated = fits[criterion, "p3"], fits[criterion, "repeated"]
    for model in (weighted, repeated):
        assert model.selectionOrder == order
        np.testing.assert_allclose(model.featureArray("relevance"), relevance, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(weighted.summary["selection_criterion"], repeated.summary["selection_criterion"],
                               rtol=1e-9, atol=1e-15)
    assert weighted.summary["weight_col"] == "weight" and weighted.summary["n_rows"] == len(y)


@pytest.mark.parametrize("criterion", CRITERIA)
def test_the_scikit_learn_front_gives_the_spark_selection(fits, criterion):
    X, y, w = _coded_data()
    front = FRONT[criterion](num_features=3, bins=BINS, discretization="none").fit(X, y, sample_weight=w)
    model = fits[criterion, "p3"]
    assert front.selection_order_ == model.selectionOrder
    np.testing.assert_allclose(front.relevance_, model.featureArray("relevance"), rtol=1e-12, atol=1e-15)


def test_one_partition_gives_the_same_selection(fits):
    one, three = fits["mrmr", "p1"], fits["mrmr", "p3"]
    assert one.selectionOrder == three.selectionOrder
    np.testing.assert_allclose(one.featureArray("relevance"), three.featureArray("relevance"), rtol=1e-12)
    np.testing.assert_allclose(one.summary["selection_criterion"], three.summary["selection_criterion"], rtol=1e-12)


def test_weighted_quantile_cuts_are_those_of_the_repeated_rows(fits):
    weighted, repeated = fits["jmi", "quantiles", "weighted"], fits["jmi", "quantiles", "repeated"]
    assert weighted.selectionOrder == repeated.selectionOrder
    X, y, w = _real_data()
    front = FRONT["jmi"](num_features=3, bins=BINS).fit(X, y, sample_weight=w)
    assert front.selection_order_ == weighted.selectionOrder
    np.testing.assert_allclose(front.relevance_, weighted.featureArray("relevance"), rtol=1e-12)
    np.testing.assert_allclose(weighted.featureArray("relevance"), repeated.featureArray("relevance"), rtol=1e-9)
    np.testing.assert_allclose(weighted.summary["selection_criterion"], repeated.summary["selection_criterion"],
                               rtol=1e-9)


def test_a_negative_weight_is_refused(spark):
    X, y, w = _coded_data()
    w = w.copy()
    w[4] = -1.0
    df = make_df(spark, X, y, partitions=2, weights=w)
    try:
        with pytest.raises(Exception, match="negative weight in column .weight."):
            _fit(df, "cmim", True, discretization="none")
    finally:
        df.unpersist()


def test_the_cli_takes_a_weight_column_for_mrmr(spark, tmp_path):
    """``sparkfs select --method mrmr --weight-col w`` on a CSV: the selection of the weighted fit."""
    import json

    import pandas as pd

    from sparkfs.cli import main

    X, y, w = _coded_data()
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])]).assign(w=w, label=y)
    frame.to_csv(tmp_path / "in.csv", index=False)
    out = tmp_path / "out"
    assert main(["select", "--input", str(tmp_path / "in.csv"), "--format", "csv", "--method", "mrmr",
                 "--weight-col", "w", "--num-features", "3", "--param", f"bins={BINS}", "--param",
                 "discretization=none", "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["weight_col"] == "w"
    assert summary["selection_order"] == reference_order(X, y, w, "mrmr", 3)[0]
