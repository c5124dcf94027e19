"""The driver-side baselines of ``sparkfs evaluate``: what any selector should beat (a seeded
random ranking) and a classical filter (mutual information, scikit-learn's estimator)."""

from __future__ import annotations

import numpy as np
from sklearn.feature_selection import mutual_info_classif

from sparkfs.evaluation.param_checks import invalid_parameter as _invalid
from sparkfs.evaluation.param_checks import is_int as _is_int

BASELINE_METHODS = ("mutual-info", "random")


def mutual_information_scores(X, y, seed: int = 0) -> np.ndarray:
    """Estimated mutual information between each feature and the class (sklearn's kNN estimator
    of Kraskov et al., 3 neighbours, continuous features), seeded; larger = better."""
    return mutual_info_classif(np.asarray(X, dtype=np.float64), np.asarray(y), discrete_features=False,
                               n_neighbors=3, random_state=seed)


def random_scores(n_features: int, seed: int = 0) -> np.ndarray:
    """A seeded random ranking: i.i.d. uniform scores (the chance level of any selector)."""
    if not _is_int(n_features) or n_features < 1:
        raise _invalid("n_features", "random_scores", "an int in the range [1, inf)", n_features)
    return np.random.default_rng(seed).random(int(n_features))


def baseline_scores(method: str, X_train, y_train, seed: int = 0) -> np.ndarray:
    """Scores of the baseline ``method`` (one of :data:`BASELINE_METHODS`) on training rows."""
    if method == "mutual-info":
        return mutual_information_scores(X_train, y_train, seed)
    if method == "random":
        return random_scores(np.asarray(X_train).shape[1], seed)
    raise _invalid("method", "baseline_scores", f"a str among {BASELINE_METHODS}", method)
