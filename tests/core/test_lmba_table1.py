"""Table 1 of Li & Lu (2009): do Lmba and Simba rank the known important features first?

Li & Lu, "Feature selection based on loss-margin of nearest neighbor classification", Pattern
Recognition 42 (2009), Section 4 and Table 1:

    Data sets    SN of important features   Lmba ranking (descending)   Simba ranking
    Iris         3,4                        {3,4}, 2, 1                 {3,4}, 2, 1
    Multi-class  1,2                        {2,1}, 9, 6, ...            {2,1}, 9, 10, ...
    S_1          1,2,3,4,5,6                {2,3,6,1,4,5}, 8, ...       {2,1,3,6,4,5}, 9, ...

The check is the paper's own reading of the table ("our method Lmba and Simba are able to rank
the relevant features in the top positions", Section 4.1): the set of the top |important|
features equals the important ones. The order inside that set and the features after it are not
checked.

Settings are the paper's (Section 3.1 and 4.1), the loop of ``preset="paper"``
(:data:`sparkfs.core.margin_runs.PAPER`; sparkfs's default loop differs, docs/lmba_simba.md
section E): k = 3 target neighbours, c = 1, constant step
beta = 1 ("convergence was also achieved with beta_i = 1 and the number of iterations equals to
the size of training sample"), I = n instances, one instance per step, no projection (the update
as printed). Simba: I = n, one instance per step. Every data generator and every run uses seed 0
(the rankings depend on the instance order; see docs/lmba_simba.md for how often each finding
holds over other seeds). A finding that does not hold with these settings is marked
``xfail(strict=True)`` with the observed ranking; nothing was tuned to make one pass.

Iris with raw features is tested in tests/core/test_lmba_simba.py (Lmba passes; Simba is an
xfail there, ranking 3, 1, 4, 2): not repeated here.

Feature numbers in comments and xfail reasons are 1-based, as in the paper; code is 0-based.
"""

import numpy as np
import pytest
from sklearn.datasets import load_iris

from sparkfs.core import margin_weighting as mw
from sparkfs.core import simba
from sparkfs.core.margin_runs import PAPER

SEED = 0

# The paper's settings (Sections 3.1, 4.1).
PAPER_K = 3
PAPER_C = 1.0
PAPER_STEP = 1.0


# ----------------------------------------------------------------------------------------------
# Data sets, written from the paper's descriptions (Section 4)
# ----------------------------------------------------------------------------------------------


def multi_class_data(seed=SEED, n=100, num_features=10):
    """The synthetic set "Multi-class".

    Paper: "Two synthetic data sets, S_1 and multi-class, are generated with different numbers
    of classes and features, and they all have 100 samples." and "For multi-class, the value of
    data set X = {x_1, x_2, ..., x_100} are random, and the labels Y = {y_1, ..., y_100} are
    generated using following Matlab function: Y = bin2dec(num2str(X(:, 1:2) > 0)), then first
    two features are important."

    Choices where the paper is vague:
    * "random" = standard normal (Matlab's randn). It must be symmetric about 0 for the sign test
      to make four classes; rand (uniform on [0, 1]) would give a single class.
    * 10 features: the paper does not say how many; Table 1 names features 9 and 10, so there
      are at least 10.
    * The label is the 2-bit number (x_1 > 0)(x_2 > 0), i.e. 2 [x_1 > 0] + [x_2 > 0], classes
      0..3, as bin2dec of the row's digit string gives.
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, num_features))
    y = 2 * (X[:, 0] > 0).astype(int) + (X[:, 1] > 0).astype(int)
    return X, y


def s1_data(seed=SEED, n=100, num_informative=6, num_noise=4):
    """The synthetic set S_1.

    Paper: "For S_1, the first six features are chosen as important features and these features
    follow Gaussian distribution. Unimportant features are added which take uniformly random
    values." (100 samples, see :func:`multi_class_data`).

    Choices where the paper is vague (it gives neither the classes nor how the Gaussians depend
    on them, nor the number or range of the uniform features):
    * Two classes of 50 (alternating labels).
    * Each of the six important features is N(-1, 1) in class 0 and N(+1, 1) in class 1,
      independently (each alone separates the classes with Bayes error Phi(-1) = 16%).
    * Four uniform features (Table 1 names features 8, 9, so there are at least 9; 10 in all as
      for Multi-class), uniform on [-sqrt(6), sqrt(6)]: variance 2, the marginal variance of an
      important feature (1 + 1), so that no feature stands out by its scale alone.
    """
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    class_mean = np.where(y == 1, 1.0, -1.0)
    informative = rng.standard_normal((n, num_informative)) + class_mean[:, None]
    half_width = np.sqrt(6.0)
    noise = rng.uniform(-half_width, half_width, (n, num_noise))
    return np.hstack([informative, noise]), y


def range_scaled(X):
    """Each feature mapped to [0, 1] by its minimum and range (a constant one left at 0)."""
    minimum = X.min(axis=0)
    spread = X.max(axis=0) - minimum
    return (X - minimum) / np.where(spread > 0, spread, 1.0)


# ----------------------------------------------------------------------------------------------
# Runs with the paper's settings
# ----------------------------------------------------------------------------------------------


def paper_loop():
    """The papers' loop, as ``preset="paper"`` runs it (sparkfs.core.margin_runs.PAPER)."""
    return dict(schedule=PAPER.schedule, step_size=PAPER.step_size, passes=PAPER.passes, batch_size=PAPER.batch_size,
                batch_rule=PAPER.batch_rule, averaging=PAPER.averaging)


def test_the_preset_is_the_papers_loop():
    assert paper_loop() == dict(schedule="constant", step_size=PAPER_STEP, passes=1, batch_size=1,
                                batch_rule="replay", averaging="none")


def lmba_paper(X, y):
    ranking_weights, _ = mw.lmba_in_memory(X, y, k=PAPER_K, c=PAPER_C, iterations=X.shape[0], projection="none",
                                           seed=SEED, **paper_loop())
    return ranking_weights


def simba_paper(X, y):
    final_weights, _ = simba.simba_in_memory(X, y, iterations=X.shape[0], seed=SEED, **paper_loop())
    return final_weights


def ranking(weights):
    """1-based feature numbers by decreasing weight (ties by feature number)."""
    return (np.argsort(-np.asarray(weights), kind="stable") + 1).tolist()


def assert_top(weights, important):
    """The |important| top-ranked features are exactly ``important`` (1-based)."""
    order = ranking(weights)
    assert set(order[:len(important)]) == set(important), f"ranking {order}, weights {np.round(weights, 4)}"


# ----------------------------------------------------------------------------------------------
# Table 1 with the paper's settings (raw features, as generated)
# ----------------------------------------------------------------------------------------------


def test_data_sets_match_the_description():
    X, y = multi_class_data()
    assert X.shape == (100, 10) and set(np.unique(y)) == {0, 1, 2, 3}
    X, y = s1_data()
    assert X.shape == (100, 10) and np.bincount(y).tolist() == [50, 50]
    assert np.all(np.abs(X[:, 6:]) <= np.sqrt(6.0))


def test_multi_class_lmba_ranks_features_1_2_first():
    X, y = multi_class_data()
    assert_top(lmba_paper(X, y), {1, 2})     # observed: 1, 2, 4, 6, 9, 5, 7, 8, 10, 3


def test_multi_class_simba_ranks_features_1_2_first():
    X, y = multi_class_data()
    assert_top(simba_paper(X, y), {1, 2})    # observed: 1, 2, 10, 5, 3, ... (weights after 2 below 1e-6)


@pytest.mark.xfail(strict=True, reason="Lmba on S_1 (paper settings, seed 0) ranks 4, 3, 2, 1, 6, 10, 7, 8, 5, 9 "
                   "(weights 0.711 0.939 0.999 1 0.019 0.352 0.050 0.034 0.002 0.066): important feature 5 is "
                   "9th, uniform feature 10 is 6th")
def test_s1_lmba_ranks_the_six_gaussian_features_first():
    X, y = s1_data()
    assert_top(lmba_paper(X, y), {1, 2, 3, 4, 5, 6})


def test_s1_simba_ranks_the_six_gaussian_features_first():
    X, y = s1_data()
    assert_top(simba_paper(X, y), {1, 2, 3, 4, 5, 6})   # observed: 4, 6, 1, 3, 2, 5, then the uniform ones


# ----------------------------------------------------------------------------------------------
# Additional (not the paper's protocol): the same runs on range-scaled features.
# The paper does not say whether its data were normalised; for iris, with features of different
# ranges (petal width 0.1-2.5 cm, sepal length 4.3-7.9 cm), that is plausible. These tests only
# say what happens if they were; the paper-settings tests above stay the reference.
# ----------------------------------------------------------------------------------------------


def test_range_scaled_iris_lmba_ranks_features_3_4_first():
    X, y = load_iris(return_X_y=True)
    assert_top(lmba_paper(range_scaled(X), y), {3, 4})        # observed: 4, 3, 2, 1


def test_range_scaled_iris_simba_ranks_features_3_4_first():
    X, y = load_iris(return_X_y=True)
    assert_top(simba_paper(range_scaled(X), y), {3, 4})       # observed: 4, 3, 2, 1


@pytest.mark.xfail(strict=True, reason="Lmba on range-scaled Multi-class (seed 0) ranks 1, 7, 4, 2, 3, 6, 8, 5, "
                   "10, 9 (weights 1 0.551 0.516 0.696 0.179 0.338 0.731 0.297 0.002 0.141): feature 2 is 4th")
def test_range_scaled_multi_class_lmba_ranks_features_1_2_first():
    X, y = multi_class_data()
    assert_top(lmba_paper(range_scaled(X), y), {1, 2})


def test_range_scaled_multi_class_simba_ranks_features_1_2_first():
    X, y = multi_class_data()
    assert_top(simba_paper(range_scaled(X), y), {1, 2})       # observed: 1, 2, 7, 10, ...


def test_range_scaled_s1_lmba_ranks_the_six_gaussian_features_first():
    X, y = s1_data()
    assert_top(lmba_paper(range_scaled(X), y), {1, 2, 3, 4, 5, 6})   # observed: 3, 1, 2, 4, 6, 5, 8, ...


@pytest.mark.xfail(strict=True, reason="Simba on range-scaled S_1 (seed 0) ranks 2, 4, 3, 6, 10, 1, 5, 8, 9, 7 "
                   "(weights 0.251 1 0.547 0.756 0.168 0.535 0.002 0.063 0.005 0.463): uniform feature 10 is "
                   "5th, important features 1 and 5 are 6th and 7th")
def test_range_scaled_s1_simba_ranks_the_six_gaussian_features_first():
    X, y = s1_data()
    assert_top(simba_paper(range_scaled(X), y), {1, 2, 3, 4, 5, 6})
