"""The selection rule shared by every selector: rank by score, keep the top k or those above t."""

from __future__ import annotations

import warnings
from typing import Optional

import numpy as np


def rank_features(scores) -> np.ndarray:
    """Feature indices, best first: descending score, ties broken by the lower index (stable).

    NaN scores rank last (they carry no evidence of relevance).
    """
    scores = np.asarray(scores, dtype=np.float64)
    sort_key = np.where(np.isnan(scores), np.inf, -scores)
    return np.argsort(sort_key, kind="mergesort")


def select_features(scores, num_features: Optional[int] = None, threshold: Optional[float] = None,
                    warn_if_all: bool = True) -> np.ndarray:
    """Sorted indices of the selected features.

    Exactly one of ``num_features`` (the top k by :func:`rank_features`) and ``threshold``
    (every feature with score > threshold, eq. (20) of the Fisher-Markov paper for LFS) is used;
    ``num_features`` wins when both are given. ``num_features`` larger than the number of
    features warns and selects all of them, as scikit-learn's SelectKBest does.
    """
    scores = np.asarray(scores, dtype=np.float64)
    n_features = scores.shape[0]
    if num_features is not None:
        if num_features > n_features:
            if warn_if_all:
                warnings.warn(
                    f"numFeatures={num_features} is larger than the number of features ({n_features}); "
                    f"all {n_features} features are selected",
                    UserWarning,
                    stacklevel=2,
                )
            num_features = n_features
        return np.sort(rank_features(scores)[:num_features])
    if threshold is not None:
        return np.flatnonzero(scores > threshold)
    raise ValueError("one of num_features or threshold must be given")
