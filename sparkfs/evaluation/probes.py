"""The probe-feature protocol of Yang & Hu (2012), Section 5.1, in NumPy and scikit-learn.

A controlled test of a feature ranking: append irrelevant *probe* features to real data, rank
all features, then measure

* how well the ranking puts the real features above the probes: the feature-selection ROC
  (:func:`selection_roc`; its area is the probability that a random real feature outscores a
  random probe), and
* the test accuracy of a kNN classifier on the top-m ranked features, for several m
  (:func:`accuracy_curve`).

:func:`imbalance` is the paper's biased sampling ("we randomly sampled 80 percent of the sample
data from the minority class and hid them") and :func:`stratified_split` draws the train/test
split of given sizes (the paper's Table 1).

No pyspark here: the selector that produces the ranking is the caller's business
(``studies/relief_probe_study.py`` runs :class:`sparkfs.ReliefSelector` on Spark).
"""

from __future__ import annotations

from typing import Iterable, Sequence, Tuple, Union

import numpy as np
from sklearn.model_selection import KFold, StratifiedKFold, train_test_split
from sklearn.preprocessing import MinMaxScaler

from sparkfs.core.neighbours import local_neighbour_table

#: The paper's probe distribution N(0, 20): 20 is the variance (standard deviation sqrt(20)).
PAPER_PROBE_VARIANCE = 20.0
#: Candidate kNN sizes tuned by cross-validation on the training split when none is fixed
#: (the paper: "the number of nearest neighbors k in kNN ... tuned by a fivefold cross
#: validation procedure using the training data").
DEFAULT_KNN_CANDIDATES = (1, 3, 5, 7, 9, 11, 15, 21)


def add_probes(X, n_probes: int = 50, variance: float = PAPER_PROBE_VARIANCE, seed: int = 0) -> np.ndarray:
    """Append ``n_probes`` irrelevant Gaussian features to ``X``.

    Parameters
    ----------
    X : array of shape (n, p)
        The real features.
    n_probes : int, default 50
        Number of probe columns (the paper uses 50).
    variance : float, default 20.0
        Variance of each probe: probes are i.i.d. N(0, variance), i.e. standard deviation
        ``sqrt(variance)`` (``sqrt(20) ~ 4.47`` for the paper's N(0, 20)).
    seed : int, default 0
        Seed of ``numpy.random.default_rng`` drawing the probes.

    Returns
    -------
    ndarray of shape (n, p + n_probes)
        ``X`` (as float64) followed by the probes: columns ``p .. p + n_probes - 1`` are the
        probes, so ``is_relevant = np.arange(p + n_probes) < p``.

    Notes
    -----
    Draw the probes for all rows at once, before any train/test split, so training and test
    rows share the probe distribution. After range or standard scaling the probe variance no
    longer matters (every probe is rescaled); it matters only to unscaled distances.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-d array; got shape {X.shape}")
    if not isinstance(n_probes, (int, np.integer)) or n_probes < 0:
        raise ValueError(f"n_probes must be an int in the range [0, inf); got {n_probes!r}")
    if not np.isfinite(variance) or variance <= 0:
        raise ValueError(f"variance must be a positive float; got {variance!r}")
    probes = np.random.default_rng(seed).normal(0.0, np.sqrt(variance), size=(X.shape[0], int(n_probes)))
    return np.hstack([X, probes])


def selection_roc(scores, is_relevant) -> Tuple[np.ndarray, np.ndarray, float]:
    """Feature-selection ROC of a ranking: real (relevant) features against probes.

    Selecting the features whose score is at least t, for every t from +inf down, traces
    ``fpr`` (share of probes selected) against ``tpr`` (share of relevant features selected).

    Parameters
    ----------
    scores : array of shape (p,)
        Feature scores, larger = better. Must be finite.
    is_relevant : bool array of shape (p,)
        True for real features, False for probes. Both kinds must occur.

    Returns
    -------
    fpr, tpr : ndarray
        The curve, one point per distinct score plus the origin: from (0, 0) to (1, 1).
    auc : float
        Area under the curve = P(score of a real feature > score of a probe)
        + 1/2 P(equal scores) (the Mann-Whitney statistic divided by the number of pairs).

    Notes
    -----
    Features with equal scores enter the selection together, so a tie between a real feature
    and a probe is a diagonal segment and counts 1/2 in the area. O(p log p).
    """
    scores = np.asarray(scores, dtype=np.float64)
    is_relevant = np.asarray(is_relevant)
    if scores.ndim != 1 or is_relevant.shape != scores.shape:
        raise ValueError(f"scores and is_relevant must be 1-d of equal length; got {scores.shape} and "
                         f"{is_relevant.shape}")
    if is_relevant.dtype != bool:
        raise ValueError(f"is_relevant must be a boolean array; got dtype {is_relevant.dtype}")
    if not np.all(np.isfinite(scores)):
        raise ValueError("scores must be finite (NaN or infinite scores cannot be ranked against probes)")
    n_relevant, n_probes = int(is_relevant.sum()), int((~is_relevant).sum())
    if n_relevant == 0 or n_probes == 0:
        raise ValueError(f"need both real features and probes; got {n_relevant} real and {n_probes} probes")
    order = np.argsort(-scores, kind="mergesort")
    sorted_scores, sorted_relevant = scores[order], is_relevant[order]
    # the last position of each run of equal scores: the selection grows one distinct score at a time
    group_ends = np.flatnonzero(np.r_[sorted_scores[1:] != sorted_scores[:-1], True])
    true_positives = np.cumsum(sorted_relevant)[group_ends]
    false_positives = (group_ends + 1) - true_positives
    tpr = np.r_[0.0, true_positives / n_relevant]
    fpr = np.r_[0.0, false_positives / n_probes]
    auc = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))
    return fpr, tpr, auc


def imbalance(X, y, hide_fraction: float = 0.8, seed: int = 0):
    """Hide a random share of the minority class (the paper's biased sampling, Section 5.1).

    Parameters
    ----------
    X : array of shape (n, p)
    y : array of shape (n,)
    hide_fraction : float in [0, 1), default 0.8
        Share of the minority-class rows removed; ``round(hide_fraction * n_minority)`` rows,
        chosen uniformly at random.
    seed : int, default 0

    Returns
    -------
    X_kept, y_kept : the remaining rows, in their original order.

    Notes
    -----
    The minority class is the least frequent label (the smallest label value on a tie in
    counts). At least one minority row is always kept.
    """
    X, y = np.asarray(X), np.asarray(y)
    if X.shape[0] != y.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
    if not 0.0 <= hide_fraction < 1.0:
        raise ValueError(f"hide_fraction must be a float in the range [0, 1); got {hide_fraction!r}")
    labels, counts = np.unique(y, return_counts=True)
    if labels.size < 2:
        raise ValueError("y must contain at least two classes")
    minority = labels[np.argmin(counts)]
    minority_rows = np.flatnonzero(y == minority)
    n_hidden = min(int(round(hide_fraction * minority_rows.size)), minority_rows.size - 1)
    hidden = np.random.default_rng(seed).choice(minority_rows, size=n_hidden, replace=False)
    keep = np.ones(y.shape[0], dtype=bool)
    keep[hidden] = False
    return X[keep], y[keep]


def stratified_split(y, train_size: Union[int, float], test_size: Union[int, float, None] = None, seed: int = 0):
    """Row indices of a stratified random train/test split (sizes as in the paper's Table 1).

    A thin wrapper of :func:`sklearn.model_selection.train_test_split` with ``stratify=y``:
    ``train_size`` / ``test_size`` are row counts (int) or shares (float); ``test_size=None``
    puts every other row in the test split. Returns ``(train_index, test_index)``, each sorted.
    """
    y = np.asarray(y)
    train_index, test_index = train_test_split(
        np.arange(y.shape[0]), train_size=train_size, test_size=test_size, stratify=y, random_state=seed,
    )
    return np.sort(train_index), np.sort(test_index)


def _nearest_rows(train_X, query_X, n_neighbors: int) -> np.ndarray:
    """Indices of the ``n_neighbors`` nearest training rows of each query, nearest first.

    The engine's blocked search (:func:`sparkfs.core.neighbours.local_neighbour_table`, one
    class): squared Euclidean distances through GEMM, equal distances ordered by training index.
    """
    train_X = np.asarray(train_X, dtype=np.float64)
    query_X = np.asarray(query_X, dtype=np.float64)
    query_ids = -2 - np.arange(query_X.shape[0])  # never a training index (nor the pad id -1)
    table = local_neighbour_table(
        query_X, query_ids, train_X, np.arange(train_X.shape[0]), np.zeros(train_X.shape[0], dtype=np.int64),
        num_classes=1, k=n_neighbors, metric="euclidean", shift=np.round(train_X.mean(axis=0)),
    )
    return table.neighbour_ids[:, 0, :]


def _knn_predictions(train_X, train_codes, query_X, n_neighbors: Sequence[int], n_classes: int) -> np.ndarray:
    """Majority-vote predictions (codes) of the kNN classifier for several k from one search.

    Returns an int array of shape (len(n_neighbors), n_queries). Vote ties go to the smallest
    class code (as in scikit-learn's KNeighborsClassifier); neighbours by Euclidean distance.
    """
    largest = min(max(n_neighbors), train_X.shape[0])
    neighbour_rows = _nearest_rows(train_X, query_X, largest)
    votes = np.cumsum(np.eye(n_classes, dtype=np.int32)[train_codes[neighbour_rows]], axis=1)
    return np.stack([np.argmax(votes[:, min(k, largest) - 1, :], axis=1) for k in n_neighbors])


#: The test metrics :func:`accuracy_curve` can report.
METRICS = ("accuracy", "balanced_accuracy")


def _score(predicted, truth, metric: str) -> np.ndarray:
    """``metric`` of each row of ``predicted`` (candidates x rows) against ``truth`` (rows).

    ``balanced_accuracy`` = the mean over the classes present in ``truth`` of their recall.
    """
    correct = predicted == truth[None, :]
    if metric == "accuracy":
        return correct.mean(axis=1)
    return np.mean([correct[:, truth == label].mean(axis=1) for label in np.unique(truth)], axis=0)


def _tuned_n_neighbors(train_X, train_codes, candidates: Sequence[int], n_classes: int, cv: int, seed: int,
                       metric: str) -> int:
    """The candidate k with the best ``cv``-fold ``metric`` on the training split (smallest on ties).

    The held-out predictions of all folds are pooled before scoring.
    """
    smallest_class = np.bincount(train_codes, minlength=n_classes)
    smallest_class = smallest_class[smallest_class > 0].min()
    folds = (StratifiedKFold(cv, shuffle=True, random_state=seed) if smallest_class >= cv
             else KFold(cv, shuffle=True, random_state=seed))
    held_out = np.empty((len(candidates), train_codes.size), dtype=np.int64)
    for fit_rows, held_rows in folds.split(train_X, train_codes):
        held_out[:, held_rows] = _knn_predictions(train_X[fit_rows], train_codes[fit_rows], train_X[held_rows],
                                                  candidates, n_classes)
    return int(candidates[int(np.argmax(_score(held_out, train_codes, metric)))])


def accuracy_curve(X_train, y_train, X_test, y_test, ranking, feature_counts: Iterable[int],
                   n_neighbors: Union[int, Sequence[int]] = DEFAULT_KNN_CANDIDATES, cv: int = 5, seed: int = 0,
                   metric: str = "accuracy") -> np.ndarray:
    """kNN test accuracy using the top-m features of ``ranking``, for each m in ``feature_counts``.

    Parameters
    ----------
    X_train, y_train, X_test, y_test : arrays
        The split. Labels may be any values; test labels unseen in training count as errors.
    ranking : int array
        Feature indices, best first (e.g. ``model.ranking``).
    feature_counts : iterable of int
        The m values, each in ``1 .. len(ranking)``.
    n_neighbors : int or sequence of int, default :data:`DEFAULT_KNN_CANDIDATES`
        A fixed k for the kNN classifier, or candidates from which k is chosen, separately for
        each m, by ``cv``-fold cross-validation on the training split (as in the paper).
    cv : int, default 5
        Folds of that cross-validation (stratified when every class has at least ``cv`` rows,
        plain shuffled folds otherwise).
    seed : int, default 0
        Seed of the fold assignment.
    metric : {"accuracy", "balanced_accuracy"}, default "accuracy"
        What is reported, and what the cross-validation maximises. ``balanced_accuracy`` is the
        mean recall over the classes of the test split (useful on imbalanced data, where plain
        accuracy is close to the majority share whatever the features).

    Returns
    -------
    ndarray of float, shape (len(feature_counts),)
        Test ``metric`` for each m.

    Notes
    -----
    Every feature is min-max scaled by a :class:`~sklearn.preprocessing.MinMaxScaler` fitted on
    the training split (test values may fall outside [0, 1]); a constant training feature
    becomes 0. The classifier is a Euclidean majority vote; vote ties go to the smallest label
    and k larger than the training split is clipped to it. The CV uses one neighbour search per
    fold for all candidates, so its cost is ``cv`` searches per m, whatever the candidates.
    Equal distances are ordered by training row (scikit-learn's brute search leaves that order
    unspecified), so results are reproducible.
    """
    X_train, X_test = np.asarray(X_train, dtype=np.float64), np.asarray(X_test, dtype=np.float64)
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    ranking = np.asarray(ranking, dtype=np.int64)
    if X_train.ndim != 2 or X_test.ndim != 2 or X_train.shape[1] != X_test.shape[1]:
        raise ValueError(f"X_train and X_test must be 2-d with equal columns; got {X_train.shape} and {X_test.shape}")
    if X_train.shape[0] != y_train.shape[0] or X_test.shape[0] != y_test.shape[0]:
        raise ValueError("X and y of each split must have the same number of rows")
    if ranking.ndim != 1 or np.unique(ranking).size != ranking.size or np.any(ranking < 0) \
            or np.any(ranking >= X_train.shape[1]):
        raise ValueError(f"ranking must list distinct feature indices in 0..{X_train.shape[1] - 1}")
    feature_counts = [int(m) for m in feature_counts]
    if any(m < 1 or m > ranking.size for m in feature_counts):
        raise ValueError(f"feature_counts must lie in 1..{ranking.size}; got {feature_counts}")
    candidates = [int(n_neighbors)] if np.isscalar(n_neighbors) else [int(k) for k in n_neighbors]
    if not candidates or min(candidates) < 1:
        raise ValueError(f"n_neighbors must be a positive int or a non-empty sequence of them; got {n_neighbors!r}")
    if metric not in METRICS:
        raise ValueError(f"metric must be a str among {set(METRICS)}; got {metric!r}")

    classes, train_codes = np.unique(y_train, return_inverse=True)
    scaler = MinMaxScaler().fit(X_train)
    train_scaled, test_scaled = scaler.transform(X_train), scaler.transform(X_test)

    results = np.empty(len(feature_counts))
    for position, m in enumerate(feature_counts):
        columns = ranking[:m]
        train_m, test_m = train_scaled[:, columns], test_scaled[:, columns]
        k = candidates[0] if len(candidates) == 1 else _tuned_n_neighbors(
            train_m, train_codes, candidates, classes.size, cv, seed, metric)
        predicted_codes = _knn_predictions(train_m, train_codes, test_m, [k], classes.size)
        results[position] = float(_score(classes[predicted_codes], y_test, metric)[0])
    return results
