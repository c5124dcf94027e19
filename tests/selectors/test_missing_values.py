"""The ``missing`` Param: 'drop-rows' scores as the fit on the rows left by hand, 'zero' as the fit on the
data with NaN replaced by 0 by hand, for every method; 'refuse' keeps its message and adds no job; infinite
values are refused under every policy.

Every method runs one policy on one layout (dense or sparse vectors, 1 or 3 partitions), in turn, so that
each of the eight combinations is fitted by three methods; the cleaning itself is checked on all eight
against NumPy (the rows and values it leaves, sparse vectors kept sparse)."""

import itertools
import re

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs.errors import InvalidInputError
from sparkfs.methods import METHODS, build_selector
from sparkfs.sklearn import FRONT
from sparkfs.spark.missing_values import cleaned_input
from tests.helpers import make_df

POLICIES = ("drop-rows", "zero")
LAYOUTS = list(itertools.product(POLICIES, (False, True), (1, 3)))  # (policy, sparse, partitions)
#: (row, column) of the NaN values; the label of NULL_LABEL_ROW is null in the 'drop-rows' input.
NAN_AT = [(3, 1), (3, 4), (10, 0), (25, 2), (31, 1)]
NULL_LABEL_ROW = 17


def _data():
    """48 rows of 5 integer-coded features (0..3: chi2-categorical takes them), two classes, feature 1
    shifted by the class."""
    rng = np.random.default_rng(7)
    y = np.arange(48) % 2
    X = rng.integers(0, 3, size=(48, 5)).astype(float)
    X[:, 1] += y
    for row, column in NAN_AT:
        X[row, column] = np.nan
    return X, y.astype(float)


def _inputs(policy):
    """(X, y with None for a null label, X and y as the policy leaves them, prepared by hand)."""
    X, y = _data()
    labels = [None if policy == "drop-rows" and i == NULL_LABEL_ROW else v for i, v in enumerate(y)]
    if policy == "zero":
        return X, labels, np.nan_to_num(X, nan=0.0), y
    keep = ~np.isnan(X).any(axis=1)
    keep[NULL_LABEL_ROW] = False
    return X, labels, X[keep], y[keep]


@pytest.fixture(scope="module")
def frames(spark):
    """(policy, sparse, partitions) -> (the input with missing values, the input cleaned by hand)."""
    made = {}
    for policy, sparse, partitions in LAYOUTS:
        X, labels, clean_X, clean_y = _inputs(policy)
        made[policy, sparse, partitions] = (make_df(spark, X, labels, partitions=partitions, sparse=sparse),
                                            make_df(spark, clean_X, clean_y, partitions=partitions, sparse=sparse))
    yield made
    for frame_pair in made.values():
        for frame in frame_pair:
            frame.unpersist()


def _as_matrix(frame):
    rows = frame.collect()
    return np.array([row["features"].toArray() for row in rows]), [row["label"] for row in rows], rows


@pytest.mark.parametrize("policy,sparse,partitions", LAYOUTS)
def test_the_cleaned_rows_are_those_prepared_by_hand(frames, policy, sparse, partitions):
    raw, _ = frames[policy, sparse, partitions]
    cleaned, facts = cleaned_input(raw, "features", "label", policy)
    X, labels, rows = _as_matrix(cleaned)
    _, _, clean_X, clean_y = _inputs(policy)
    np.testing.assert_array_equal(X, clean_X)
    assert labels == clean_y.tolist()
    assert cleaned.schema == raw.schema   # the metadata too
    if policy == "drop-rows":
        assert facts == {"policy": "drop-rows", "rows_dropped": 5, "values_set_to_zero": 0}
    else:
        assert facts == {"policy": "zero", "rows_dropped": 0, "values_set_to_zero": len(NAN_AT)}
    kinds = {type(row["features"]).__name__ for row in rows}
    assert kinds == {"SparseVector" if sparse else "DenseVector"}
    if sparse and policy == "zero":   # a NaN stored in a sparse vector leaves its indices: nothing stored is 0
        assert all(np.all(row["features"].values != 0) for row in rows)


#: Lighter loops for the slowest methods, the same on both sides (the front takes them in snake_case).
LIGHT = {"lmba": {"batchSize": 16, "passes": 1}, "simba": {"batchSize": 16, "passes": 1}}


def _fit(method, frame, **params):
    selector = build_selector(method, {**LIGHT.get(method, {}), **params}).setNumFeatures(2)
    return selector.fit(frame)


def _front_scores(method, X, y, sparse):
    """The scikit-learn front's scores on rows prepared by hand: the same numbers as the Spark selector's on
    the same rows (``tests/sklearn/test_same_as_spark.py``), computed in memory."""
    params = {re.sub(r"([A-Z])", lambda match: "_" + match.group(1).lower(), name): value
              for name, value in LIGHT.get(method, {}).items()}
    return FRONT[method](num_features=2, **params).fit(sp.csr_matrix(X) if sparse else X, y).scores_


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_scores_the_rows_its_policy_leaves(frames, method):
    """The Spark fit under the policy against the fit on the rows prepared by hand: in memory (the front)
    for every method but Parzen-ISE, and on Spark for two one-pass methods and Parzen-ISE."""
    policy, sparse, partitions = LAYOUTS[sorted(METHODS).index(method) % len(LAYOUTS)]
    raw, by_hand = frames[policy, sparse, partitions]
    model = _fit(method, raw, missing=policy)
    _, _, clean_X, clean_y = _inputs(policy)
    if method != "parzen-ise":   # the front's is unsupervised; the Spark fit uses the labels it is given
        np.testing.assert_allclose(model.scores, _front_scores(method, clean_X, clean_y, sparse), rtol=1e-9,
                                   atol=1e-12, err_msg=method)
    if method in ("lfs", "anova", "parzen-ise"):
        expected = _fit(method, by_hand)
        np.testing.assert_allclose(model.scores, expected.scores, rtol=1e-9, atol=1e-12, err_msg=method)
        assert expected.summary["missing"] == {"policy": "refuse", "rows_dropped": 0, "values_set_to_zero": 0}
    counts = {"drop-rows": (5, 0), "zero": (0, len(NAN_AT))}[policy]
    assert model.summary["missing"] == {"policy": policy, "rows_dropped": counts[0], "values_set_to_zero": counts[1]}
    assert model.summary["n_rows"] in (clean_y.size, 0)   # 0: a method without a row count of its own


def test_refuse_keeps_its_message_and_runs_no_job_of_its_own(frames):
    raw, _ = frames["zero", False, 1]
    assert cleaned_input(raw, "features", "label", "refuse") == (raw, {"policy": "refuse", "rows_dropped": 0,
                                                                        "values_set_to_zero": 0})
    for method in ("lfs", "anova"):
        with pytest.raises(InvalidInputError, match=r"^4 row\(s\) have NaN or infinite feature values$"):
            _fit(method, raw)
    with pytest.raises(InvalidInputError, match="NaN or infinite values"):   # the pair engine's words
        _fit("relieff", raw)


@pytest.mark.parametrize("policy", POLICIES)
def test_infinite_values_are_refused_under_every_policy(spark, policy):
    X, y = _data()
    X[5, 0] = np.inf
    frame = make_df(spark, X, y, partitions=2, sparse=True)
    with pytest.raises(InvalidInputError, match=r"^1 row\(s\) have infinite feature values in column 'features': "
                       rf"missing='{policy}' handles NaN only, and an infinite value is not a missing value"):
        _fit("anova", frame, missing=policy)
    with pytest.raises(InvalidInputError, match="NaN or infinite feature values"):
        _fit("anova", frame)


def test_zero_still_refuses_missing_labels_by_count(frames):
    raw, _ = frames["drop-rows", True, 3]
    with pytest.raises(InvalidInputError, match=r"^1 row\(s\) have a null or NaN label in column 'label': "
                       "missing='zero'"):
        _fit("anova", raw, missing="zero")


def test_a_nan_label_is_dropped_too(spark):
    X, y = _data()
    X = np.nan_to_num(X)
    y[[4, 9]] = np.nan
    model = _fit("anova", make_df(spark, X, y, partitions=2), missing="drop-rows")
    assert model.summary["missing"]["rows_dropped"] == 2 and model.summary["n_rows"] == 46


def test_no_row_left_is_refused(spark):
    X = np.full((6, 3), np.nan)
    frame = make_df(spark, X, [0.0, 1.0] * 3, partitions=2)
    with pytest.raises(InvalidInputError, match=r"^every row \(6\) has a NaN feature value or a null vector in column "
                       "'features', a null or NaN label in column 'label': missing='drop-rows' left no row to fit"):
        _fit("lfs", frame, missing="drop-rows")


def test_the_param_is_declared_once_and_checked():
    selector = build_selector("anova", {})
    assert selector.getMissing() == "refuse"
    with pytest.raises(ValueError, match="The 'missing' parameter of UnivariateTestSelector must be a str among "
                       r"\{'refuse', 'drop-rows', 'zero', 'pairwise'\}. Got 'impute' instead."):
        selector.copy({selector.missing: "impute"}).validate_params()
