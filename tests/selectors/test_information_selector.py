"""InformationSelector (mrmr, jmi, cmim) on Spark: the greedy order of the references in
tests/core/test_information.py, the same bits for 1 and 3 partitions, dense and sparse alike,
relevance equal to scikit-learn's mutual_info_classif, and the CLI with its refusals."""

import json

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_selection import mutual_info_classif

from sparkfs import InformationSelector, SelectionTieWarning
from sparkfs.cli import main
from tests.core.test_information import discrete_case, reference_greedy
from tests.helpers import make_df, refused


@pytest.mark.parametrize("criterion, form", [("mrmr", "difference"), ("mrmr", "quotient"), ("jmi", "difference"),
                                             ("cmim", "difference")])
def test_selector_order_equals_the_reference_for_any_partitioning(spark, criterion, form):
    codes, labels = discrete_case(2)
    expected, expected_relevance = reference_greedy(codes, labels, 4, criterion, form)
    fits = []
    for partitions, sparse in ((1, False), (3, True)):
        df = make_df(spark, codes, labels, partitions=partitions, sparse=sparse)
        fits.append(InformationSelector(criterion=criterion, mrmrForm=form, numFeatures=4, bins=4,
                                        discretization="none").fit(df))
    for model in fits:
        assert model.selectionOrder == expected and model.summary["selection_order"] == expected
        assert sorted(model.selectedFeatures) == sorted(expected)
        np.testing.assert_allclose(model.featureArray("relevance"), expected_relevance, atol=1e-12)
    np.testing.assert_array_equal(fits[0].featureArray("relevance"), fits[1].featureArray("relevance"))
    assert fits[0].summary["selection_criterion"] == fits[1].summary["selection_criterion"]  # the same bits


def test_relevance_is_scikit_learns_mutual_info_with_discrete_features(spark):
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 5, size=(300, 6))
    labels = (codes[:, 2] + rng.integers(0, 2, 300)) % 3
    model = InformationSelector(numFeatures=2, bins=5, discretization="none").fit(make_df(spark, codes, labels, 2))
    expected = mutual_info_classif(codes, labels, discrete_features=True)
    np.testing.assert_allclose(model.featureArray("relevance"), expected, atol=1e-12)
    assert model.selectionOrder[0] == 2


def test_equal_frequency_bins_on_sparse_rows_equal_the_dense_fit_and_the_files_layout(spark, tmp_path):
    rng = np.random.default_rng(5)
    X = sp.random(400, 30, density=0.2, random_state=5, format="csr") * 3.0
    y = rng.integers(0, 2, 400)
    X = X.tolil()
    X[y == 1, 3] = 2.5 + rng.random(int((y == 1).sum()))[:, None]  # feature 3 marks class 1
    X = X.tocsr()
    dense = InformationSelector(criterion="jmi", numFeatures=5, bins=6).fit(make_df(spark, X.toarray(), y, 1))
    sparse = InformationSelector(criterion="jmi", numFeatures=5, bins=6).fit(make_df(spark, X, y, 4))
    assert dense.selectionOrder == sparse.selectionOrder and dense.selectionOrder[0] == 3
    np.testing.assert_array_equal(dense.featureArray("relevance"), sparse.featureArray("relevance"))
    # a sample smaller than the rows draws the same rows for one file or seven (by content)
    frame = make_df(spark, X, y, 1)
    one, seven = tmp_path / "one", tmp_path / "seven"
    frame.coalesce(1).write.parquet(str(one))
    frame.repartition(7).write.parquet(str(seven))
    fits = [InformationSelector(criterion="cmim", numFeatures=5, bins=6, binSampleSize=150)
            .fit(spark.read.parquet(str(path))) for path in (one, seven)]
    assert fits[0].selectionOrder == fits[1].selectionOrder
    np.testing.assert_array_equal(fits[0].featureArray("relevance"), fits[1].featureArray("relevance"))


def test_command_line_mrmr_and_refusals(spark, tmp_path, capsys):
    codes, labels = discrete_case(4)
    path = tmp_path / "codes.parquet"
    make_df(spark, codes, labels, 2).write.parquet(str(path))
    out = tmp_path / "out"
    assert main(["select", "--input", str(path), "--format", "parquet", "--method", "mrmr", "--num-features", "3",
                 "--param", "bins=4", "--param", "discretization=none", "--output", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["method"] == "mrmr" and len(summary["selection_order"]) == 3 and summary["mrmr_form"] == "difference"
    capsys.readouterr()
    bad = tmp_path / "bad"
    persisted = spark.sparkContext._jsc.getPersistentRDDs().size()
    code = main(["select", "--input", str(path), "--format", "parquet", "--method", "cmim", "--num-features", "3",
                 "--param", "bins=3", "--param", "discretization=none", "--output", str(bad)])
    refused(capsys, code, bad, "feature", "has the value 3.0", "integer code in [0, 3)")
    # refused after the codes were cached (the relevance pass finds the bad value): they are released
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == persisted
    code = main(["select", "--input", str(path), "--format", "parquet", "--method", "jmi", "--threshold", "0.1",
                 "--output", str(bad)])
    refused(capsys, code, bad, "no score threshold", "numFeatures")


def test_ties_between_steps_are_announced(spark):
    X = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1], [0, 0, 1]] * 10, dtype=float)
    y = np.array([1, 1, 0, 0] * 10)
    with pytest.warns(SelectionTieWarning, match="decided by equal criterion values"):
        model = InformationSelector(numFeatures=2, bins=2, discretization="none").fit(make_df(spark, X, y))
    assert model.summary["tied_steps"] == 2 and model.selectionOrder[0] == 0  # equal relevance: the lower index
    assert model.summary["tie_sizes"] == [3, 2]  # three features equally relevant, then two equal criteria


@pytest.mark.parametrize("sparse", [False, True])
def test_mrmr_among_the_most_relevant_is_the_run_over_every_feature(spark, monkeypatch, sparse):
    """mRMR (difference form) runs among the features of largest relevance, which is the
    run over every feature when each step's choice beats the largest relevance left out. Here the
    most relevant features are near copies of one another, so the first candidate set cannot prove
    that, the candidates grow, and the order is the reference's over every feature."""
    import sparkfs.core.information as information

    rng = np.random.default_rng(11)
    labels = rng.integers(0, 3, 240)
    base = (labels + (rng.random(240) < 0.2) * rng.integers(1, 3, 240)) % 3
    copies = np.column_stack([np.where(rng.random(240) < 0.05, (base + 1) % 3, base) for _ in range(6)])
    weak = np.column_stack([np.where(rng.random(240) < 0.5, labels, rng.integers(0, 3, 240)) for _ in range(3)])
    noise = rng.integers(0, 3, size=(240, 11))
    codes = np.column_stack([copies, weak, noise]) + 0
    expected, _ = reference_greedy(codes, labels, 4, "mrmr", "difference")
    monkeypatch.setattr(information, "PRUNED_MIN", 3)
    monkeypatch.setattr(information, "PRUNED_PER_SELECTED", 1)
    model = InformationSelector(numFeatures=4, bins=3, discretization="none").fit(
        make_df(spark, codes, labels, partitions=2, sparse=sparse))
    assert model.selectionOrder == expected
    assert model.summary["candidate_rounds"][0] == 4 and len(model.summary["candidate_rounds"]) > 1
    full = InformationSelector(numFeatures=4, bins=3, discretization="none", criterion="jmi")
    assert "candidates" not in full.fit(make_df(spark, codes, labels)).summary


@pytest.mark.parametrize("seed, grows", [(0, False), (5, True)])
def test_cmim_among_the_most_informative_given_the_first_is_the_run_over_every_feature(spark, monkeypatch, seed,
                                                                                      grows):
    """CMIM runs among the first feature and those of largest I(X_j; Y | X_first), which
    bounds a left-out feature's criterion from the second step on; the order equals the reference's
    over every feature when the first candidate set proves it (seed 0) and when a step's choice does
    not beat the largest bound left out and the candidates grow (seed 5)."""
    import sparkfs.core.information as information

    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, 240)
    base = (labels + (rng.random(240) < 0.2) * rng.integers(1, 3, 240)) % 3
    copies = np.column_stack([np.where(rng.random(240) < 0.05, (base + 1) % 3, base) for _ in range(2)])
    weak = np.column_stack([np.where(rng.random(240) < 0.4, labels, rng.integers(0, 3, 240)) for _ in range(8)])
    noise = rng.integers(0, 3, size=(240, 10))
    codes = np.column_stack([copies, weak, noise])
    expected, _ = reference_greedy(codes, labels, 5, "cmim", "difference")
    monkeypatch.setattr(information, "PRUNED_MIN", 2)
    monkeypatch.setattr(information, "PRUNED_PER_SELECTED", 1)
    model = InformationSelector(criterion="cmim", numFeatures=5, bins=3, discretization="none").fit(
        make_df(spark, codes, labels, partitions=2))
    assert model.selectionOrder == expected
    rounds = model.summary["candidate_rounds"]
    assert rounds[0] == 5 and (len(rounds) > 1) == grows
    if not grows:
        assert model.summary["candidates_rule"].startswith("the first feature and those of largest information")
