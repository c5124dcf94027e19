"""Params that scale work or memory are bounded (docs/bad_input.md, "Param bounds
and model loading"): static caps in each Param's declaration, refused before Spark starts; bounds
from the input (rows, classes, features, driverBudgetMB) refused after the label counts and before
any heavy pass. Each through the real command line: exit 2, the message, nothing written."""

import math
import os

import numpy as np
import pandas as pd
import pytest

from sparkfs import (
    LmbaSelector,
    MarginInstanceWeighter,
    ParzenISERanker,
    ReliefSelector,
    SimbaSelector,
    SVMRFESelector,
)
from sparkfs.cli import main
from sparkfs.core.svm_rfe import elimination_rounds, recursive_elimination
from sparkfs.selectors._params import InputShape, neighbour_bounds

ROWS, FEATURES = 60, 40


@pytest.fixture(scope="module")
def sixty_rows(tmp_path_factory):
    rng = np.random.default_rng(21)
    frame = pd.DataFrame(rng.normal(size=(ROWS, FEATURES)), columns=[f"f{j}" for j in range(FEATURES)])
    frame["label"] = np.arange(ROWS) % 2
    path = tmp_path_factory.mktemp("bounds") / "sixty.parquet"
    frame.to_parquet(path)
    return str(path)


def _refused(capsys, tmp_path, input_path, method, *params):
    out = tmp_path / "out"
    argv = ["select", "--master", "local[2]", "--input", input_path, "--format", "parquet", "--method", method,
            "--output", str(out)]
    for param in params:
        argv += ["--param", param]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err[-2000:]
    assert not os.path.exists(out)
    return next(line for line in err.splitlines() if line.startswith("sparkfs: error: "))


# --- static caps: in the Params' declarations, no Spark needed -----------------------------------

@pytest.mark.parametrize("selector, message", [
    (SVMRFESelector(C=math.inf), "The 'C' parameter of SVMRFESelector must be a finite float in the range (0, inf). "
                                 "Got inf instead."),
    (SVMRFESelector(ensemble=10_001), "The 'ensemble' parameter of SVMRFESelector must be an int in the range "
                                      "[1, 10000]. Got 10001 instead."),
    (SVMRFESelector(maxIter=10**7), "The 'maxIter' parameter of SVMRFESelector must be an int in the range "
                                    "[1, 1000000]. Got 10000000 instead."),
    (SimbaSelector(iterations=10**9), "The 'iterations' parameter of SimbaSelector must be an int in the range "
                                      "[1, 10000000]. Got 1000000000 instead."),
    (LmbaSelector(batchSize=10**8), "The 'batchSize' parameter of LmbaSelector must be an int in the range"),
    (LmbaSelector(c=math.inf), "The 'c' parameter of LmbaSelector must be a finite float in the range (0, inf)."),
    (SimbaSelector(passes=101), "The 'passes' parameter of SimbaSelector must be an int in the range [1, 100]. "
                                "Got 101 instead."),
    (LmbaSelector(preset="fast"), "The 'preset' parameter of LmbaSelector must be a str among {'default', 'paper'}. "
                                  "Got 'fast' instead."),
    (SimbaSelector(averaging="tail"), "The 'averaging' parameter of SimbaSelector must be a str among {'none', "
                                      "'iterates'}. Got 'tail' instead."),
    (SimbaSelector(batchRule="mean"), "The 'batchRule' parameter of SimbaSelector must be a str among"),
    (ReliefSelector(blockSize=10**6), "The 'blockSize' parameter of ReliefSelector must be an int in the range "
                                      "[1, 16384]. Got 1000000 instead."),
    (ParzenISERanker(blockSize=20_000), "The 'blockSize' parameter of ParzenISERanker must be an int in the range "
                                        "[1, 16384]. Got 20000 instead."),
    (ReliefSelector(driverBudgetMB=math.inf), "The 'driverBudgetMB' parameter of ReliefSelector must be a finite"),
    (ParzenISERanker(maxIter=10**6), "The 'maxIter' parameter of ParzenISERanker must be an int in the range "
                                     "[1, 100000]. Got 1000000 instead."),
    (ParzenISERanker(fcmMaxIter=10**6), "The 'fcmMaxIter' parameter of ParzenISERanker must be an int in the range"),
    (ParzenISERanker(numClusters=10**5), "The 'numClusters' parameter of ParzenISERanker must be an int in the range"),
    (ParzenISERanker(learningRate=math.inf), "The 'learningRate' parameter of ParzenISERanker must be a finite"),
])
def test_static_caps_are_refused_by_the_params_check(selector, message):
    with pytest.raises(ValueError) as refused:
        selector.validate_params()
    assert str(refused.value).startswith(message)


def test_the_caps_themselves_are_accepted():
    for selector in (SVMRFESelector(ensemble=10_000, maxIter=10**6, C=1e6), SimbaSelector(iterations=10**7),
                     ReliefSelector(blockSize=16_384), ParzenISERanker(maxIter=100_000, fcmMaxIter=100_000)):
        selector.validate_params()


def test_margin_instance_weighter_caps_its_block_size():
    # Checked before the DataFrame is looked at: no Spark needed.
    with pytest.raises(ValueError, match=r"'blockSize' parameter of MarginInstanceWeighter must be an int in the "
                                         r"range \[1, 16384\]. Got 100000 instead."):
        MarginInstanceWeighter(blockSize=100_000).transform(None)


def test_static_caps_through_the_command_line_before_spark_starts(capsys, tmp_path):
    # An input that does not exist: the Param is refused before the input is even looked at.
    missing = str(tmp_path / "never_read.parquet")
    assert "'iterations' parameter of SimbaSelector must be an int in the range [1, 10000000]. Got 1000000000" in \
        _refused(capsys, tmp_path, missing, "simba", "iterations=1000000000")
    assert "'ensemble' parameter of SVMRFESelector must be an int in the range [1, 10000]. Got 1000000" in \
        _refused(capsys, tmp_path, missing, "svm-rfe", "ensemble=1000000")
    assert "'C' parameter of SVMRFESelector must be a finite float in the range (0, inf). Got inf instead." in \
        _refused(capsys, tmp_path, missing, "svm-rfe", "C=.inf")
    assert "'passes' parameter of LmbaSelector must be an int in the range [1, 100]. Got 1000 instead." in \
        _refused(capsys, tmp_path, missing, "lmba", "passes=1000")
    assert "'preset' parameter of SimbaSelector must be a str among {'default', 'paper'}. Got 'fast' instead." in \
        _refused(capsys, tmp_path, missing, "simba", "preset=fast")


def test_lmba_and_simba_passes_are_bounded_by_the_distances_of_a_fit():
    """Without iterations, passes x pool x rows distances: at most 10^12 (no Spark needed)."""
    shape = InputShape(n_rows=200_000, class_counts=(100_000, 100_000), num_features=10)
    # every row as the pool: preset="paper" (unset sampleSize otherwise draws a pool of 1,000 above 1,000 rows)
    bounds = {bound.param: bound for bound in SimbaSelector(passes=30, preset="paper")._iterative_bounds(shape)}
    assert bounds["passes"].limit == 25
    with pytest.raises(ValueError, match=r"'passes' parameter of SimbaSelector must be at most 25 on this input "
                                         r"\(each picked instance is compared with all 200,000 rows"):
        bounds["passes"].check("SimbaSelector")
    sampled = {bound.param: bound for bound in SimbaSelector(passes=30, sampleSize=1000)._iterative_bounds(shape)}
    sampled["passes"].check("SimbaSelector")
    defaulted = {bound.param: bound for bound in SimbaSelector(passes=30)._iterative_bounds(shape)}
    assert defaulted["passes"].limit == sampled["passes"].limit  # the default pool is 1,000 instances


# --- bounds from the input: after the label counts, before any heavy pass ------------------------

def test_elimination_rounds_counts_the_fits_of_recursive_elimination():
    for features in (1, 2, 5, 37, 200):
        for step in (0.1, 0.5, 0.99, 1, 3):
            fits = recursive_elimination(lambda kept: np.arange(1.0, kept.size + 1), features, step=step).n_remaining
            assert elimination_rounds(features, step) == fits.size


def test_neighbour_bounds_name_rows_and_budget():
    shape = InputShape(n_rows=60, class_counts=(30, 30), num_features=40)
    rows_bound, table_bound = neighbour_bounds(59, 60, shape, 2048.0)
    assert (rows_bound.limit, table_bound.limit) == (59, 2048 * 2**20 // (16 * 60 * 2))
    rows_bound.check("X")
    with pytest.raises(ValueError, match=r"'k' parameter of X must be at most 59 on this input"):
        neighbour_bounds(60, 60, shape, 2048.0)[0].check("X")


@pytest.mark.parametrize("method, params, fragments", [
    ("relieff", ["k=1000000000"],
     ["The 'k' parameter of ReliefSelector must be at most 59 on this input", "60 rows", "Got 1000000000 instead."]),
    ("relieff", ["k=50", "driverBudgetMB=0.01"],
     ["'k' parameter of ReliefSelector must be at most 5 on this input", "60 queries x 2 classes",
      "driverBudgetMB=0.01; or set sampleSize", "Got 50 instead."]),
    ("simba", ["iterations=10000"],
     ["'iterations' parameter of SimbaSelector must be at most 6,000 on this input", "100 passes over the pool of 60",
      "Got 10000 instead."]),
    ("lmba", ["batchSize=7000"],
     ["'batchSize' parameter of LmbaSelector must be at most 6,000 on this input", "Got 7000 instead."]),
    ("lmba", ["k=100"], ["'k' parameter of LmbaSelector must be at most 59 on this input"]),
    ("svm-rfe", ["ensemble=5000", "step=1", "eliminateAll=true"],
     ["'ensemble' parameter of SVMRFESelector must be at most 2,500 on this input", "40 SVM fits on 40 features",
      "step=1", "at most 100,000 fits", "Got 5000 instead."]),
    ("mrmr", ["driverBudgetMB=0.0001"],
     ["InformationSelector: a step's joint counts", "do not fit driverBudgetMB=0.0001 with any bins on 40 features",
      "raise driverBudgetMB to at least 1 (bins=2; 1 for bins=10)", "anova or chi2 with --num-features"]),
    ("parzen-ise", ["groups=clusters", "numClusters=100"],
     ["'numClusters' parameter of ParzenISERanker must be at most 60 on this input", "the input has 60 rows",
      "Got 100 instead."]),
])
def test_bounds_from_the_input_through_the_command_line(spark, sixty_rows, capsys, tmp_path, method, params,
                                                       fragments):
    message = _refused(capsys, tmp_path, sixty_rows, method, *params)
    assert all(fragment in message for fragment in fragments), message
