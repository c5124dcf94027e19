"""The selection rule shared by every selector: rank by score, keep the top k or those above t,
or one of Spark ML's selection modes (``UnivariateFeatureSelector``'s ``selectionMode``).

* ``numTopFeatures``: the top k by score (or every score above a threshold): :func:`select_features`.
* ``percentile``: the top ``floor(p x fraction)`` by score (:func:`percentile_count`), as Spark ML
  (``(numFeatures * percentile).toInt``) and scikit-learn's ``SelectPercentile`` when ``p x fraction``
  is a whole number (scikit-learn cuts at an interpolated percentile, which keeps one more feature
  otherwise). Needs scores only, so every selector has it.
* ``fpr``: every p-value below alpha; ``fwe``: every p-value below ``alpha / p`` (Bonferroni);
  ``fdr``: Benjamini-Hochberg at level alpha, the ``i`` smallest p-values for the largest ``i``
  with ``p_(i) <= alpha i / p`` (:func:`benjamini_hochberg`). As Spark ML's ``Selector`` and
  scikit-learn's ``SelectFpr``, ``SelectFwe`` and ``SelectFdr``; they need p-values.
"""

from __future__ import annotations

import math
import warnings
from typing import Optional

import numpy as np

#: Spark ML's selection modes, in the Params' spelling.
SELECTION_MODES = ("numTopFeatures", "percentile", "fpr", "fdr", "fwe")
#: The modes that compare p-values with alpha.
P_VALUE_MODES = ("fpr", "fdr", "fwe")
#: selectionThreshold when it is not set: Spark ML's defaults (a tenth of the features; alpha 0.05).
DEFAULT_SELECTION_THRESHOLDS = {"percentile": 0.1, "fpr": 0.05, "fdr": 0.05, "fwe": 0.05}


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


def percentile_count(num_features: int, fraction: float) -> int:
    """How many features ``percentile`` keeps: ``floor(num_features x fraction)``, where a product
    within rounding of a whole number counts as that number (0.29 x 100 is 28.999999999999996 in
    floating point, and gives 29)."""
    return int(math.floor(num_features * fraction * (1.0 + 1e-12)))


def select_percentile(scores, fraction: float) -> np.ndarray:
    """Sorted indices of the top :func:`percentile_count` features by :func:`rank_features`."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.sort(rank_features(scores)[:percentile_count(scores.shape[0], fraction)])


def benjamini_hochberg(p_values, alpha: float) -> np.ndarray:
    """Sorted indices selected by the Benjamini-Hochberg procedure at false discovery rate alpha.

    With ``p_(1) <= ... <= p_(m)`` the sorted p-values, the largest ``i`` with
    ``p_(i) <= alpha i / m`` keeps the ``i`` smallest (every p-value ``<= p_(i)``, so equal
    p-values are kept or dropped together); none when no ``i`` qualifies. NaN p-values count in
    ``m`` and are never kept, as in scikit-learn's ``SelectFdr``.
    """
    p_values = np.asarray(p_values, dtype=np.float64)
    m = p_values.shape[0]
    ordered = np.sort(p_values)  # NaN last
    passing = np.flatnonzero(ordered <= alpha * np.arange(1, m + 1) / m)
    if passing.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(p_values <= ordered[passing[-1]])


def select_by_p_values(p_values, mode: str, alpha: float) -> np.ndarray:
    """Sorted indices selected by ``fpr`` (p < alpha), ``fwe`` (p < alpha / m) or ``fdr``
    (:func:`benjamini_hochberg`); NaN p-values are never selected."""
    p_values = np.asarray(p_values, dtype=np.float64)
    if mode == "fpr":
        return np.flatnonzero(p_values < alpha)
    if mode == "fwe":
        return np.flatnonzero(p_values < alpha / p_values.shape[0])
    if mode == "fdr":
        return benjamini_hochberg(p_values, alpha)
    raise ValueError(f"mode must be one of {P_VALUE_MODES}, got {mode!r}")


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
    with np.errstate(invalid="ignore"):  # inf - inf: equal infinite scores are tied, as equal finite ones
        tied = np.flatnonzero((scores == cut_score) | (np.abs(scores - cut_score) <= tolerance))
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
                f"{ties['selected_of_tied']} of them {'was' if ties['selected_of_tied'] == 1 else 'were'} selected by "
                "their position in the input, not by score")
    return None


# Kept and excluded features ----------------------------------------------------------------------
#
# A user may name features that must be in the selection whatever their score (kept) and features
# that must never be (excluded; still scored). Kept features count toward a count rule (numFeatures,
# percentile): the rest of the count is filled by the ranking. A rule without a count (a score
# threshold, a p-value mode, a method's own optimum) gets the kept features added and the excluded
# removed.


def forced_refusal(keep, exclude, num_features: Optional[int], count: Optional[int]) -> Optional[str]:
    """Why ``keep`` / ``exclude`` (feature indices) cannot be applied, or None: an index given twice,
    an index outside [0, num_features) (when known), a feature both kept and excluded, or more kept
    features than ``count`` (the selection's size, when a count decides it)."""
    for name, indices in (("keep", keep), ("exclude", exclude)):
        values, counts = np.unique(np.asarray(indices, dtype=np.int64), return_counts=True)
        repeated = values[counts > 1].tolist()
        if repeated:
            return f"{name} names feature {repeated[0]} twice"
        outside = [int(i) for i in indices if int(i) < 0 or (num_features is not None and int(i) >= num_features)]
        if outside:
            span = f"[0, {num_features - 1}]" if num_features is not None else "0 or more"
            return f"{name} names feature {outside[0]}, outside the features' indices {span}"
    both = sorted(set(int(i) for i in keep) & set(int(i) for i in exclude))
    if both:
        return f"feature {both[0]} is both kept and excluded"
    if count is not None and len(keep) > count:
        return f"{len(keep)} features are kept but the selection holds only {count}"
    return None


def forced_selection(scores, selected, keep, exclude, count: Optional[int] = None) -> np.ndarray:
    """Sorted indices of ``selected`` (a rule's selection) with the kept features in and the excluded
    out. With ``count`` (a count rule): the kept features, then the rule's selection, then the rest,
    each part in ranking order (:func:`rank_features`), less the excluded, cut at ``count``; for a
    plain top-k selection that is the kept features and the best ``count - len(keep)`` others. Without
    ``count``: ``selected`` plus the kept, less the excluded."""
    scores = np.asarray(scores, dtype=np.float64)
    keep = np.asarray(keep, dtype=np.int64)
    excluded = np.zeros(scores.shape[0], dtype=bool)
    excluded[np.asarray(exclude, dtype=np.int64)] = True
    if count is None:
        chosen = np.union1d(np.asarray(selected, dtype=np.int64), keep)
        return chosen[~excluded[chosen]]
    ranking = rank_features(scores)
    in_rule = np.zeros(scores.shape[0], dtype=bool)
    in_rule[np.asarray(selected, dtype=np.int64)] = True
    forced = np.zeros(scores.shape[0], dtype=bool)
    forced[keep] = True
    free = ~forced & ~excluded
    ranked_free, ranked_in_rule = free[ranking], in_rule[ranking]
    order = np.concatenate([keep, ranking[ranked_in_rule & ranked_free], ranking[~ranked_in_rule & ranked_free]])
    return np.sort(order[:max(int(count), keep.size)])


def free_ties(scores, selected, by_count: bool, keep, exclude) -> dict:
    """:func:`ties_at_cut` among the features neither kept nor excluded (the ones the rule chose
    between); the same as :func:`ties_at_cut` when none are."""
    scores = np.asarray(scores, dtype=np.float64)
    free = np.ones(scores.shape[0], dtype=bool)
    free[np.asarray(keep, dtype=np.int64)] = False
    free[np.asarray(exclude, dtype=np.int64)] = False
    position = np.cumsum(free) - 1
    chosen = np.asarray(selected, dtype=np.int64)
    chosen = chosen[free[chosen]]
    if not free.any():
        return ties_at_cut(scores[:0], chosen[:0], by_count)
    return ties_at_cut(scores[free], position[chosen], by_count)


def forced_first(order, keep, exclude, k: int) -> np.ndarray:
    """The first ``k`` of: the kept features, then ``order`` (feature indices, best first) less the
    kept and the excluded."""
    skipped = set(int(i) for i in keep) | set(int(i) for i in exclude)
    rest = [int(i) for i in order if int(i) not in skipped]
    return np.asarray(([int(i) for i in keep] + rest)[:k], dtype=np.int64)
