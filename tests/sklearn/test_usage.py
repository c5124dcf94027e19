"""The front in scikit-learn's tools: feature names from pandas, ``get_feature_names_out``,
``set_output``, ``Pipeline``, ``GridSearchCV`` over ``num_features``, ``clone``."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.feature_selection import f_classif
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sparkfs.sklearn import FRONT, ANOVASelector, LFSSelector


def _frame(seed=0, n=120):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 8))
    X[:, 3] += 2.0 * y
    X[:, 6] -= 1.5 * y
    return pd.DataFrame(np.abs(X), columns=[f"gene_{i}" for i in range(8)]), y


@pytest.mark.parametrize("method", sorted(FRONT))
def test_dataframe_input_keeps_the_feature_names(method):
    frame, y = _frame()
    if method == "chi2-categorical":  # integer-coded features
        frame = frame.round()
    front = FRONT[method](num_features=3).fit(frame, y)
    assert list(front.feature_names_in_) == list(frame.columns)
    support = front.get_support()
    assert support.any() and list(front.get_feature_names_out()) == list(frame.columns[support])
    if method not in ("qfs", "qfs-prime"):  # QFS selects its min-cut optimum, not the top k by theta
        kept = frame.columns[np.argsort(-front.scores_, kind="mergesort")[:3]]
        assert list(front.get_feature_names_out()) == sorted(kept, key=list(frame.columns).index)
    out = front.set_output(transform="pandas").transform(frame)
    assert list(out.columns) == list(front.get_feature_names_out())
    np.testing.assert_array_equal(out.to_numpy(), frame[out.columns].to_numpy())


def test_names_out_without_names_are_scikit_learns_x_indices():
    frame, y = _frame(1)
    front = ANOVASelector(num_features=2).fit(frame.to_numpy(), y)
    F, _ = f_classif(frame.to_numpy(), y)
    assert list(front.get_feature_names_out()) == [f"x{i}" for i in sorted(np.argsort(-F)[:2])]


def test_inside_a_pipeline_the_selected_columns_reach_the_classifier():
    frame, y = _frame(2)
    pipeline = make_pipeline(StandardScaler(), LFSSelector(num_features=2), LogisticRegression()).fit(frame, y)
    assert pipeline[-1].coef_.shape == (1, 2)
    assert set(pipeline[:-1].get_feature_names_out()) == {"gene_3", "gene_6"}
    assert pipeline.score(frame, y) > 0.8


def test_grid_search_over_num_features_and_clone():
    frame, y = _frame(3)
    pipeline = make_pipeline(ANOVASelector(), LogisticRegression())
    search = GridSearchCV(pipeline, {"anovaselector__num_features": [1, 2, 5]},
                          cv=StratifiedKFold(3, shuffle=True, random_state=0)).fit(frame, y)
    assert search.best_params_["anovaselector__num_features"] in (2, 5)
    assert len(search.cv_results_["mean_test_score"]) == 3
    fitted = search.best_estimator_[0]
    assert fitted.get_support().sum() == search.best_params_["anovaselector__num_features"]
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params() and not hasattr(copy, "scores_")


def test_set_params_after_fit_changes_the_selection_not_the_scores():
    frame, y = _frame(4)
    front = ANOVASelector(num_features=1).fit(frame, y)
    scores = front.scores_.copy()
    front.set_params(num_features=3)
    assert front.get_support().sum() == 3
    np.testing.assert_array_equal(front.scores_, scores)
