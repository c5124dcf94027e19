"""The scikit-learn fronts of Lmba and Simba (``sparkfs/sklearn/margin_weighting.py``).

* One step of each method against the papers' update written out here in NumPy (Li & Lu 2009,
  eqs. 2, 3, 16-17 and Step 3(d); Gilad-Bachrach et al. 2004, Algorithm 1 step 2), and several
  steps on tied (dyadic) data against the per-instance references of tests/core/test_lmba_simba.py,
  whose ties go to the lower row index as the Spark selector's positional row ids do.
* The Spark selectors on the same rows (1 and 3 partitions, dense and sparse, the default loops and
  other Params): the same scores, raw weights, steps and selection.
* The default pool above 1,000 rows (the whole loop among its rows), the selection, refusals,
  feature names from pandas, a Pipeline and GridSearchCV.

The references are given only the order instances are visited in (the Spark layer's content order
of the pool, then the seeded permutation), as the core and Spark tests are."""

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline

from sparkfs.core import margin_weighting as mw
from sparkfs.core.margin_pool import content_order
from sparkfs.core.sampling import content_sample_keys, smallest_key_positions
from sparkfs.core.simba import simba_in_memory
from sparkfs.errors import DefaultSampleWarning, InvalidInputError, ParamBoundError
from sparkfs.sklearn.margin_weighting import DEFAULT_POOL, LmbaSelector, SimbaSelector
from tests.core.test_lmba_simba import continuous_data, grid_data, reference_lmba, reference_simba_replay
from tests.helpers import make_df

RTOL = 1e-9


def assert_close(got, expected):
    expected = np.asarray(expected, dtype=float)
    assert np.max(np.abs(np.asarray(got) - expected)) <= RTOL * max(np.max(np.abs(expected)), 1e-300)


def visited(X, y, seed):
    """Positions of the rows in the order the Spark selector visits a pool of all of them (no
    ``rowIdCol``: positional ids, the pool in content order)."""
    return content_order(X, y, np.arange(len(y)), seed)


# -- one step, from the papers -------------------------------------------------------------------


def lmba_first_step(X, y, i, k, c, beta):
    """Li & Lu 2009, Section 3.1 Step 3 for instance i at w = 1 (Step 1): T_i = its k nearest rows of
    its class (Definition 3), theta_i of eq. (2), the pairs (j, p), p of another class, whose hinge
    theta_i + ||x_i - x_j||^2 - ||x_i - x_p||^2 of eq. (3) is positive, the gradient of eqs. (16)-(17)
    and w - beta g / ||g|| (Step 3(d))."""
    squared = np.array([np.sum((X[i] - X[r]) ** 2) for r in range(len(y))])
    same = np.flatnonzero((y == y[i]) & (np.arange(len(y)) != i))
    other = np.flatnonzero(y != y[i])
    targets = same[np.argsort(squared[same], kind="stable")[:k]]
    theta = abs(squared[other].min() - squared[same].min())
    gradient = 2.0 * np.sum((X[i] - X[targets]) ** 2, axis=0)
    for j in targets:
        for p in other:
            if (theta + squared[j]) - squared[p] > 0:
                gradient += c * 2.0 * ((X[i] - X[j]) ** 2 - (X[i] - X[p]) ** 2)
    return 1.0 - beta * gradient / math.sqrt(np.sum(gradient ** 2))


def simba_first_step(X, y, i):
    """Gilad-Bachrach et al. 2004, Algorithm 1 step 2 for instance i at w = 1: its nearest hit h and
    miss m, Delta_f = 1/2 ((x_f - m_f)^2 / ||x - m|| - (x_f - h_f)^2 / ||x - h||) w_f, w + Delta."""
    squared = np.array([np.sum((X[i] - X[r]) ** 2) for r in range(len(y))])
    same = np.flatnonzero((y == y[i]) & (np.arange(len(y)) != i))
    other = np.flatnonzero(y != y[i])
    hit, miss = same[np.argmin(squared[same])], other[np.argmin(squared[other])]
    delta = 0.5 * ((X[i] - X[miss]) ** 2 / math.sqrt(squared[miss]) - (X[i] - X[hit]) ** 2 / math.sqrt(squared[hit]))
    return 1.0 + delta


@pytest.mark.parametrize("k,c,step_size,seed", [(3, 1.0, 1.0, 0), (2, 0.5, 0.5, 4)])
def test_one_lmba_step_is_the_papers_update(k, c, step_size, seed):
    X, y = continuous_data(3)
    first = visited(X, y, seed)[mw.instance_order(len(y), 1, 1, seed)[0, 0]]
    front = LmbaSelector(k=k, c=c, step_size=step_size, preset="paper", iterations=1, seed=seed).fit(X, y)
    expected = lmba_first_step(X, y, first, k, c, step_size)
    assert_close(front.raw_weights_, expected)
    assert_close(front.scores_, np.abs(expected) / np.abs(expected).max())
    assert front.steps_ == 1 and front.n_pool_ == len(y)


@pytest.mark.parametrize("seed", [0, 7])
def test_one_simba_step_is_algorithm_1(seed):
    X, y = continuous_data(2)
    first = visited(X, y, seed)[mw.instance_order(len(y), 1, 1, seed)[0, 0]]
    front = SimbaSelector(preset="paper", iterations=1, seed=seed).fit(sp.csr_matrix(X), y)
    expected = simba_first_step(X, y, first)
    assert_close(front.raw_weights_, expected)
    assert_close(front.scores_, expected ** 2 / np.max(expected ** 2))


def test_steps_on_tied_rows_match_the_references_with_ties_to_the_lower_row():
    """Dyadic rows: equal distances are common, and go to the lower row position (the Spark
    selector's positional row ids), not to the pool's visit order."""
    X, y = grid_data(3)
    order = visited(X, y, 3)[mw.instance_order(len(y), 24, 1, 3)]
    # k = 2: second targets tie here; numbering the pool by its visit order instead moves w by 0.35
    lmba = LmbaSelector(k=2, c=1.0, preset="paper", iterations=24, step_size=0.5, seed=3).fit(X, y)
    assert_close(lmba.raw_weights_, reference_lmba(X, y, 2, 1.0, order, np.full(24, 0.5), "none"))
    replayed = visited(X, y, 2)[mw.instance_order(len(y), 3, 3, 2)]  # 3 batches of 3, rule "replay"
    simba = SimbaSelector(preset="paper", iterations=9, batch_size=3, seed=2).fit(X, y)
    assert_close(simba.raw_weights_, reference_simba_replay(X, y, replayed, np.ones(9))[-1])


# -- the pool above DEFAULT_POOL rows --------------------------------------------------------------


def test_above_the_default_pool_the_whole_loop_runs_among_a_drawn_pool():
    """sample_size unset on more than DEFAULT_POOL rows: a pool of DEFAULT_POOL rows drawn by their
    content keys and the loop among them (the in-memory drivers on those rows, in visit order), with
    a warning; sample_size set searches every row instead."""
    rng = np.random.default_rng(12)
    n = DEFAULT_POOL + 60
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(int)
    drawn = np.sort(smallest_key_positions(content_sample_keys(X, y, None, 0), np.arange(n), DEFAULT_POOL))
    drawn = drawn[content_order(X[drawn], y[drawn], drawn, 0)]
    loop = dict(iterations=40, batch_size=8, seed=0)
    for front, driver in ((LmbaSelector, mw.lmba_in_memory), (SimbaSelector, simba_in_memory)):
        with pytest.warns(DefaultSampleWarning, match=f"{n:,} rows, so a pool of {DEFAULT_POOL:,} instances"):
            pooled = front(**loop).fit(X, y)
        schedule = "decay" if front is LmbaSelector else "constant"  # the default loops' schedules
        assert_close(pooled.raw_weights_, driver(X[drawn], y[drawn], schedule=schedule, **loop)[1])
        assert (pooled.n_pool_, pooled.steps_, pooled.pool_left_out_) == (DEFAULT_POOL, 5, 0)
        every_row = front(sample_size=DEFAULT_POOL, **loop).fit(X, y)
        assert every_row.n_pool_ == DEFAULT_POOL and not np.allclose(every_row.raw_weights_, pooled.raw_weights_)


# -- the selection, refusals, scikit-learn's tools ----------------------------------------------------


def _relevant_data(seed=5):
    X, y = continuous_data(2, n=40, D=6, seed=seed)
    X[:, 3] += 3.0 * y  # the clearest feature
    return X, y


@pytest.mark.parametrize("front", [LmbaSelector, SimbaSelector])
def test_the_selection_is_the_top_scores_and_follows_set_params(front):
    X, y = _relevant_data()
    fitted = front(num_features=1).fit(X, y)
    assert np.flatnonzero(fitted.get_support()).tolist() == [3] == [int(np.argmax(fitted.scores_))]
    scores = fitted.scores_.copy()
    fitted.set_params(num_features=3)
    assert fitted.transform(X).shape == (40, 3)
    assert sorted(np.argsort(-scores, kind="mergesort")[:3]) == np.flatnonzero(fitted.get_support()).tolist()
    np.testing.assert_array_equal(fitted.scores_, scores)
    assert fitted.set_params(num_features=None, threshold=0.5).get_support().tolist() == (scores > 0.5).tolist()


@pytest.mark.parametrize("front", [LmbaSelector, SimbaSelector])
def test_bad_input_and_params_are_refused(front):
    X, y = _relevant_data()
    single = y.copy()
    single[0] = 7
    with pytest.raises(InvalidInputError, match="class 7 has a single row"):
        front().fit(X, single)
    with pytest.raises(ValueError, match="at least two classes"):
        front().fit(X, np.zeros(40))
    with pytest.raises(ValueError, match="NaN"):
        front().fit(np.where(np.eye(40, 6, dtype=bool), np.nan, X), y)
    with pytest.raises(ValueError, match=rf"The 'batch_size' parameter of {front.__name__} must be an int in the "
                                         r"range \[1, 10,000,000\] or None. Got 0 instead."):
        front(batch_size=0).fit(X, y)
    with pytest.raises(ValueError, match=rf"The 'schedule' parameter of {front.__name__} must be a str among"):
        front(schedule="fast").fit(X, y)
    with pytest.raises(ParamBoundError, match=rf"The 'iterations' parameter of {front.__name__} must be at most 4,000 "
                                              r"on this input \(100 passes over the pool of 40 instances"):
        front(iterations=4001).fit(X, y)


def test_lmba_own_params_are_refused_with_their_names():
    X, y = _relevant_data()
    with pytest.raises(ValueError, match=r"The 'projection' parameter of LmbaSelector must be a str among "
                                         r"\{'none', 'clip'\}. Got 'sphere' instead."):
        LmbaSelector(projection="sphere").fit(X, y)
    with pytest.raises(ValueError, match=r"The 'c' parameter of LmbaSelector must be a float in the range"):
        LmbaSelector(c=0.0).fit(X, y)
    with pytest.raises(ParamBoundError, match="The 'k' parameter of LmbaSelector must be at most 39 on this input"):
        LmbaSelector(k=40).fit(X, y)


@pytest.mark.parametrize("front", [LmbaSelector, SimbaSelector])
def test_feature_names_from_pandas_a_pipeline_and_a_grid_search(front):
    X, y = _relevant_data(6)
    frame = pd.DataFrame(X, columns=[f"gene_{i}" for i in range(6)])
    fitted = front(num_features=2).fit(frame, y)
    kept = frame.columns[np.sort(np.argsort(-fitted.scores_, kind="mergesort")[:2])]
    assert list(fitted.get_feature_names_out()) == list(kept) and "gene_3" in kept
    assert list(fitted.set_output(transform="pandas").transform(frame).columns) == list(kept)
    name = front.__name__.lower()
    search = GridSearchCV(make_pipeline(front(), LogisticRegression()), {f"{name}__num_features": [1, 3]},
                          cv=StratifiedKFold(3, shuffle=True, random_state=0)).fit(frame, y)
    assert search.best_estimator_[0].get_feature_names_out().size == search.best_params_[f"{name}__num_features"]


# -- the Spark selectors on the same rows --------------------------------------------------------------


def _camel(name):
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


#: (front, Params, sparse, partitions): each loop's default (Simba's cut to 12 instances, 6 Spark jobs
#: instead of 36: each job costs a fraction of a second), and other Params on the other layout.
SPARK_CASES = [
    (LmbaSelector, {}, False, 1),
    (LmbaSelector, {"k": 2, "c": 0.5, "projection": "clip", "step_size": 0.5, "batch_rule": "sum", "batch_size": 4,
                    "passes": 2, "sample_size": 17, "scaling": "range", "seed": 3}, True, 3),
    (SimbaSelector, {"iterations": 12}, True, 3),
    (SimbaSelector, {"preset": "paper", "iterations": 10, "batch_size": 3, "batch_rule": "sum",
                     "averaging": "iterates", "scaling": "standard", "seed": 5}, False, 1),
]


@pytest.mark.parametrize("front, params, sparse, partitions", SPARK_CASES,
                         ids=[f"{f.__name__}-{'-'.join(p) or 'defaults'}" for f, p, _, _ in SPARK_CASES])
def test_the_spark_selector_gives_the_same_scores(spark, front, params, sparse, partitions):
    from sparkfs import LmbaSelector as SparkLmba
    from sparkfs import SimbaSelector as SparkSimba

    X, y = continuous_data(3, n=24)
    X[:, 1] *= 30.0  # a wide feature: the scalings matter
    spark_class = SparkLmba if front is LmbaSelector else SparkSimba
    model = spark_class(numFeatures=2, **{_camel(k): v for k, v in params.items()}).fit(
        make_df(spark, X, y, partitions, sparse=sparse))
    fitted = front(num_features=2, **params).fit(sp.csr_matrix(X) if sparse else X, y)
    np.testing.assert_allclose(fitted.scores_, model.scores, rtol=RTOL, atol=1e-14)
    np.testing.assert_allclose(fitted.raw_weights_, model.featureArray("raw_weights"), rtol=RTOL, atol=1e-14)
    assert (fitted.steps_, fitted.n_pool_) == (model.summary["steps"], model.summary["n_pool"])
    assert np.flatnonzero(fitted.get_support()).tolist() == list(model.selectedFeatures)


def test_the_default_pool_is_the_spark_selectors(spark):
    """Above DEFAULT_POOL rows: the same drawn pool, visit order and loop as the Spark selector."""
    from sparkfs import LmbaSelector as SparkLmba

    rng = np.random.default_rng(3)
    n = DEFAULT_POOL + 50
    X = rng.normal(size=(n, 3))
    y = (X[:, 1] + 0.5 * rng.normal(size=n) > 0).astype(int)
    with pytest.warns(DefaultSampleWarning):
        model = SparkLmba(numFeatures=1, iterations=48, seed=2).fit(make_df(spark, X, y, 2))
    with pytest.warns(DefaultSampleWarning):
        fitted = LmbaSelector(num_features=1, iterations=48, seed=2).fit(X, y)
    np.testing.assert_allclose(fitted.raw_weights_, model.featureArray("raw_weights"), rtol=RTOL, atol=1e-14)
    assert (fitted.n_pool_, fitted.steps_) == (model.summary["n_pool"], model.summary["steps"]) == (DEFAULT_POOL, 6)


def test_the_defaults_are_the_spark_selectors(spark):
    """Every Param's default against the Spark selectors' (the pool and loop constants both take
    from sparkfs.core.margin_runs)."""
    from sparkfs.selectors import margin_weighting as spark_side
    from sparkfs.sklearn import margin_weighting as front_side

    for front, spark_class in ((LmbaSelector, spark_side.LmbaSelector), (SimbaSelector, spark_side.SimbaSelector)):
        selector = spark_class()
        for name, value in front().get_params().items():
            if name in front_side.RUN_PARAMS or name in ("iterations", "sample_size"):
                assert value is None and not selector.isSet(_camel(name)), name  # None: the preset's
            elif name in ("kept_features", "excluded_features"):  # None: no list, the Params' []
                assert value is None and selector.getOrDefault(_camel(name)) == [], name
            elif name not in ("num_features", "selection_mode", "threshold", "selection_threshold"):
                assert selector.getOrDefault(_camel(name)) == value, name
