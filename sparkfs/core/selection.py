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


#: Scores closer than this share of the largest absolute score count as equal (rounding).
TIE_RELATIVE_TOLERANCE = 1e-9


def ties_at_cut(scores, selected, by_count: bool) -> dict:
    """How far a selection is decided by equal scores rather than by the scores.

    ``flat``: every finite score is equal (to :data:`TIE_RELATIVE_TOLERANCE` of the largest
    absolute score): the ranking is the feature order. ``tied_at_cut``: the number of features
    whose score equals the score at the cut (the last selected feature of a top-k selection),
    counted only when some of them are selected and some are not, so that index order, not the
    score, chose between them (``selected_of_tied`` of them made it). ``score_spread`` is the
    largest minus the smallest finite score.
    """
    scores = np.asarray(scores, dtype=np.float64)
    finite = scores[np.isfinite(scores)]
    spread = float(finite.max() - finite.min()) if finite.size else 0.0
    tolerance = TIE_RELATIVE_TOLERANCE * (float(np.abs(finite).max()) if finite.size else 0.0)
    report = {"flat": bool(finite.size > 1 and spread <= tolerance), "score_spread": spread, "tied_at_cut": 0,
              "selected_of_tied": 0, "cut_score": None}
    selected = np.asarray(selected, dtype=np.int64)
    if not by_count or selected.size in (0, scores.size):
        return report
    cut_score = float(np.min(scores[selected]))
    tied = np.flatnonzero(np.abs(scores - cut_score) <= tolerance)
    tied_selected = int(np.isin(tied, selected).sum())
    if tied_selected < tied.size:
        report.update(tied_at_cut=int(tied.size), selected_of_tied=tied_selected, cut_score=cut_score)
    return report


def ties_warning(ties: dict, selected_count: int) -> Optional[str]:
    """The sentence announcing a flat ranking or a tie at the cut (None when neither)."""
    if ties["flat"]:
        return (f"every feature has the same score (spread {ties['score_spread']:.3g}): the ranking is the order of "
                f"the features in the input, not a result; the {selected_count} selected are the first ones")
    if ties["tied_at_cut"]:
        return (f"{ties['tied_at_cut']} features tie at the cut (score {ties['cut_score']:.6g}); "
                f"{ties['selected_of_tied']} of them were selected by their position in the input, not by score")
    return None
