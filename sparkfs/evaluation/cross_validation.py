"""Cross-validated evaluation of feature rankings: selection inside each training fold,
classifiers on the top-k features, resumable per (method, fold).

:func:`fold_plan` draws the folds; :func:`score_subsets` runs the five classifiers of
:func:`make_classifier` on the top-k features (the driver-side baselines are in
:mod:`sparkfs.evaluation.baselines`). :class:`EvaluationStudy` calls the caller's
``rank_fold(method, fold)`` for every (method, fold) not yet on disk, classifies, and saves each
result at once (``folds/<method>/repeat-000-fold-003.npz``, atomically); :func:`write_results`
turns the saved files into tables and plots, :func:`sparkfs.evaluation.report.build_report`
into ``report.html``.

No leakage by construction: ``rank_fold`` receives the :class:`Fold` and must select on
``fold.train`` only; the study fetches the test rows only after the ranking is fixed, and only
the columns of the top ``max(k)`` features (``data_for_fold(fold, columns)``).

Choices (where the papers are silent)
------------------------------------
1. **Classifiers** (Fisher-Markov paper, Section V: Weka naive Bayes and C4.5, LibSVM linear and
   RBF SVMs, multi-class one-versus-all; its Table II has no kNN): ``nb`` = GaussianNB (Weka's
   default Gaussian estimator); ``tree`` = CART with the entropy criterion and at least 2 rows per
   leaf (C4.5's information gain and J48's default ``-M 2``; sklearn has no gain ratio nor
   pruning); ``svm`` = LinearSVC, hinge loss (LibSVM's C-SVC loss), C=1, one-versus-rest;
   ``rbf-svm`` = one-versus-rest SVC(rbf), C=1, gamma = 1/k (LibSVM's default); ``knn`` = 1-NN,
   Euclidean (the 1-NN of Li & Lu's LMBA experiments; Yang & Hu tune k, see
   :func:`sparkfs.evaluation.probes.accuracy_curve`). Each is preceded by a MinMaxScaler fitted on
   the training rows, as in :mod:`~sparkfs.evaluation.probes`.
2. **k larger than the number of features** is clipped to it, and clipped counts are merged:
   ``1,2,5,10,20,50,100`` on 13 features evaluates k = 1, 2, 5, 10, 13; ``k`` in every output is
   that clipped count, and ``n_selected`` the number of features the classifiers used (the same
   except under note 8).
3. **Metrics**: accuracy and macro-F1 (sklearn, over the labels present in the fold's truth or
   predictions, 0 for a class never predicted); error = 1 - accuracy. Means and standard
   deviations (ddof=1; NaN for a single fold) pool all folds of all repeats. Best k = lowest mean
   error, ties (within 1e-12) to the smaller k. ``mean_fold_min_error`` is the Fisher-Markov
   paper's Table IV statistic: the mean over folds of each fold's smallest error over k.
4. **Seeds**: repeat r's folds use ``StratifiedKFold(random_state=SeedSequence(seed).spawn(R)[r])``,
   so they depend on (labels, seed, r) only; classifiers use ``random_state=seed`` of the study;
   :func:`fold_seed` gives randomised selectors and baselines a seed per fold.
5. **Resume fingerprint** (``study.json``): description (less its per-run keys, the command line,
   the params and the baselines: :data:`RUN_DESCRIPTION_KEYS`), n_features, classifiers, the
   effective k list, seed, probe positions and a SHA-256 of the folds. The methods are not part
   of it (each (method, fold) file stands alone): a method can be added or dropped later (one a
   run refused, say), and outputs cover the methods of the last :meth:`EvaluationStudy.run`. A
   method with saved folds must keep its params (``method_params``, kept across runs).
7. **Above the driver budget** (a fold's (training + test rows) x max(k) reduced values over
   ``driver_budget_cells``) the study hands the fold to ``classify_above_budget``, which
   ``sparkfs evaluate`` runs on pyspark.ml: ``svm`` = LinearSVC (one-vs-rest for more classes)
   with ``regParam = 1 / (C n_train)``, the same objective as the driver's C = 1; ``nb`` =
   NaiveBayes, Gaussian; ``tree`` = DecisionTreeClassifier, entropy, at least 2 rows per leaf,
   depth at most 30 (Spark's limit); each after a MinMaxScaler fitted on the training rows.
   Only the predictions come back; the metrics are computed here as for the driver. Every
   result row says which ``engine`` ran it, and a plan needing Spark for ``knn`` or ``rbf-svm``
   is refused before any work.
6. **Scores**: NaN ranks last (:func:`sparkfs.core.selection.rank_features`); the selection ROC
   uses the scores' ranks (NaN lowest), which leaves the AUC of finite scores unchanged.
8. **Selections that are not a ranking's prefix** (QFS: the k-feature selection is an MRF
   optimum, not the top k by theta_j): ``rank_fold`` returns a :class:`FoldSelection` whose
   ``subsets`` give the features of each k (``sparkfs evaluate`` asks every fitted model's
   ``selectionsForCounts``); each k is classified on its own subset, and ``n_selected`` in the
   results is that subset's size (a QFS size k that no beta reaches gives the nearest reachable
   size). The ROC and the score plots still use ``scores``.
"""

from __future__ import annotations

import io
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
from sklearn.metrics import accuracy_score, f1_score
from sklearn.model_selection import StratifiedKFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler
from sklearn.svm import SVC, LinearSVC
from sklearn.tree import DecisionTreeClassifier

from sparkfs.core.selection import rank_features
from sparkfs.evaluation.param_checks import invalid_parameter as _invalid
from sparkfs.evaluation.param_checks import is_int as _is_int
from sparkfs.evaluation.recommendation import fit_recommended_on_all_rows, recommendation_table
from sparkfs.evaluation.report import atomic_write_bytes, selection_roc_of_scores
from sparkfs.evaluation.result_tables import best_k_table, fold_path, load_results, write_outputs
from sparkfs.evaluation.stability_runs import StudyMismatchError, plan_hash, staging_leftovers
from sparkfs.io.output_safety import check_study_directory, marker
from sparkfs.io.strict_json import dumps as strict_dumps

CLASSIFIER_NAMES = ("knn", "svm", "rbf-svm", "nb", "tree")
#: The classifiers that also run on Spark (pyspark.ml) when a fold's reduced data exceed the
#: driver budget (module note 7); pyspark.ml has no kNN and no kernel SVM.
SPARK_CLASSIFIERS = ("svm", "nb", "tree")
#: Largest (training + test rows) x columns of reduced data brought to the driver (400 MB of float64).
DEFAULT_DRIVER_BUDGET_CELLS = 50_000_000
#: ``repeat`` and ``fold`` of the fold that trains on all rows (the recommended methods' final fit).
ALL_ROWS = -1
_METHOD_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def _labels(values, parameter: str, owner: str) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim != 1 or values.size == 0:
        raise _invalid(parameter, owner, "a non-empty 1-d array", f"an array of shape {values.shape}")
    if values.dtype.kind == "f" and np.isnan(values).any():
        rows = np.flatnonzero(np.isnan(values))[:5]
        raise ValueError(f"The '{parameter}' parameter of {owner} holds NaN (rows {rows.tolist()})")
    return values


# Folds -----------------------------------------------------------------------------------------


class Fold(NamedTuple):
    """One training/test split: sorted row positions. With ``separate_test`` the test positions
    index the separate test set, otherwise the same data as ``train``."""

    repeat: int
    fold: int
    train: np.ndarray
    test: np.ndarray
    separate_test: bool = False


def fold_plan(labels, *, cv: int = 10, repeats: int = 1, seed: int = 0, test_labels=None) -> List[Fold]:
    """The folds of (repeated) stratified cross-validation, or of a separate test set.

    Parameters
    ----------
    labels : array of shape (n,)
        Class of every (training) row.
    cv : int, default 10
        Folds per repeat, >= 2, at most the size of the smallest class; 1 with ``test_labels``.
    repeats : int, default 1
        R; repeat r shuffles with its own seed (module note 4). With a separate test set every
        repeat has the same rows (useful for randomised selectors only).
    seed : int >= 0
    test_labels : array, optional
        Labels of a separate test set: one fold per repeat trains on all rows and tests on it.

    Returns
    -------
    list of :class:`Fold`, repeat-major; ``fold`` counts from 0 within its repeat.
    """
    owner = "fold_plan"
    labels = _labels(labels, "labels", owner)
    if not _is_int(repeats) or repeats < 1:
        raise _invalid("repeats", owner, "an int in the range [1, inf)", repeats)
    if not _is_int(seed) or seed < 0:
        raise _invalid("seed", owner, "an int in the range [0, inf)", seed)
    if test_labels is not None:
        test_labels = _labels(test_labels, "test_labels", owner)
        if cv != 1:
            raise _invalid("cv", owner, "1 when test_labels is given (the test set replaces cross-validation)", cv)
        train, test = np.arange(labels.size), np.arange(test_labels.size)
        return [Fold(r, 0, train, test, True) for r in range(repeats)]
    if not _is_int(cv) or cv < 2:
        raise _invalid("cv", owner, "an int in the range [2, inf) (or 1 with a separate test set in test_labels)", cv)
    classes, counts = np.unique(labels, return_counts=True)
    if classes.size < 2:
        raise _invalid("labels", owner, "labels of at least two classes", f"the single class {classes[0].item()!r}")
    if counts.min() < cv:
        smallest = int(np.argmin(counts))
        raise _invalid("cv", owner, f"at most the size of the smallest class ({counts[smallest]} rows of class "
                       f"{classes[smallest].item()!r}) so every test fold holds every class", cv)
    plan = []
    for repeat, child in enumerate(np.random.SeedSequence(seed).spawn(repeats)):
        splitter = StratifiedKFold(n_splits=cv, shuffle=True, random_state=int(child.generate_state(1)[0]))
        for index, (train, test) in enumerate(splitter.split(np.zeros((labels.size, 1)), labels)):
            plan.append(Fold(repeat, index, np.sort(train).astype(np.int64), np.sort(test).astype(np.int64)))
    return plan


def fold_seed(seed: int, fold: Fold) -> int:
    """A seed for randomised selection on one fold: a function of (seed, repeat, fold) only (the
    all-rows fit, repeat and fold :data:`ALL_ROWS`, has one of its own)."""
    if fold.repeat == ALL_ROWS:
        return int(np.random.SeedSequence([int(seed), 2**32 - 1]).generate_state(1)[0])
    return int(np.random.SeedSequence([int(seed), int(fold.repeat), int(fold.fold)]).generate_state(1)[0])


def folds_hash(folds: Sequence[Fold]) -> str:
    """SHA-256 of the folds (keys, flags, train and test positions), via :func:`plan_hash`."""
    parts = []
    for fold in folds:
        parts += [np.array([fold.repeat, fold.fold, int(fold.separate_test)]), fold.train, fold.test]
    return plan_hash(parts)


# Classifiers -----------------------------------------------------------------------------------


def make_classifier(name: str, seed: int = 0) -> Pipeline:
    """A fresh scikit-learn pipeline: MinMaxScaler, then the classifier ``name`` (module note 1)."""
    if name not in CLASSIFIER_NAMES:
        raise _invalid("name", "make_classifier", f"a str among {CLASSIFIER_NAMES}", name)
    models = {
        "knn": lambda: KNeighborsClassifier(n_neighbors=1, algorithm="brute"),
        "svm": lambda: LinearSVC(C=1.0, loss="hinge", dual=True, max_iter=20_000, random_state=seed),
        "rbf-svm": lambda: OneVsRestClassifier(SVC(kernel="rbf", C=1.0, gamma="auto")),
        "nb": lambda: GaussianNB(),
        "tree": lambda: DecisionTreeClassifier(criterion="entropy", min_samples_leaf=2, random_state=seed),
    }
    return Pipeline([("scale", MinMaxScaler()), (name, models[name]())])


def feature_counts(num_features_list: Sequence[int], n_features: int) -> List[int]:
    """The k values evaluated: each clipped to ``n_features``, duplicates merged, ascending."""
    ks = list(num_features_list)
    if not ks or any(not _is_int(k) or k < 1 for k in ks):
        raise _invalid("num_features_list", "feature_counts", "a non-empty list of ints >= 1", ks)
    return sorted({min(int(k), int(n_features)) for k in ks})


@dataclass(frozen=True)
class FoldSelection:
    """What ``rank_fold`` returns for a method whose k-feature selection is not the top k of its
    scores (module note 8): the (n_features,) ``scores`` and ``subsets``, k -> feature indices.
    ``tie_sizes`` (greedy methods: mRMR, JMI, CMIM): per position of the selection order, how many
    candidates had the winning criterion (1: no tie); saved so that ``ties.csv`` counts them."""

    scores: np.ndarray
    subsets: Mapping[int, np.ndarray]
    tie_sizes: Optional[Sequence[int]] = None


def score_subsets(X_train, y_train, X_test, y_test, ranking: Union[Sequence[int], Mapping[int, Sequence[int]]],
                  num_features_list: Sequence[int], classifiers: Sequence[str] = CLASSIFIER_NAMES, *,
                  seed: int = 0) -> List[dict]:
    """Test accuracy and macro-F1 of each classifier on the top-k features of ``ranking``.

    ``ranking`` lists column indices of ``X_train`` / ``X_test``, best first; only its first
    ``max(k)`` are used, and each k is clipped to ``len(ranking)`` (module note 2). It may instead
    map each k of ``num_features_list`` to its own column indices (module note 8). ``seed`` is
    the ``random_state`` of the classifiers that take one. Returns a list of dict
    ``{"classifier", "k", "n_selected", "accuracy", "macro_f1"}``, classifier-major, k ascending.
    """
    owner = "score_subsets"
    X_train, X_test = np.asarray(X_train, dtype=np.float64), np.asarray(X_test, dtype=np.float64)
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    if X_train.ndim != 2 or X_test.ndim != 2 or X_train.shape[1] != X_test.shape[1]:
        raise _invalid("X_train", owner, "2-d with the columns of X_test", f"shapes {X_train.shape}, {X_test.shape}")
    if X_train.shape[0] != y_train.shape[0] or X_test.shape[0] != y_test.shape[0]:
        raise _invalid("y_train", owner, "as long as X has rows (per split)", f"{y_train.shape[0]}/{y_test.shape[0]}")
    if not (np.all(np.isfinite(X_train)) and np.all(np.isfinite(X_test))):
        raise ValueError(f"{owner}: X_train and X_test must be finite (impute or drop NaN first)")
    if isinstance(ranking, Mapping):
        subsets = _checked_subsets(ranking, num_features_list, X_train.shape[1], owner)
    else:
        ranking = _checked_columns(ranking, X_train.shape[1], owner, "ranking")
        subsets = {k: ranking[:k] for k in feature_counts(num_features_list, ranking.size)}
    unknown = [name for name in classifiers if name not in CLASSIFIER_NAMES]
    if unknown or not classifiers:
        raise _invalid("classifiers", owner, f"a non-empty list of names among {CLASSIFIER_NAMES}", list(classifiers))
    rows = []
    for name in classifiers:
        for k, columns in subsets.items():
            predicted = make_classifier(name, seed).fit(X_train[:, columns], y_train).predict(X_test[:, columns])
            rows.append(prediction_metrics(name, k, y_test, predicted, n_selected=columns.size))
    return rows


def _checked_columns(columns, n_columns: int, owner: str, parameter: str) -> np.ndarray:
    """``columns`` as int64 if they are distinct indices in [0, n_columns), else a ValueError."""
    columns = np.asarray(columns)
    if columns.ndim != 1 or columns.size == 0 or not np.issubdtype(columns.dtype, np.integer) \
            or np.unique(columns).size != columns.size or columns.min() < 0 or columns.max() >= n_columns:
        raise _invalid(parameter, owner, f"distinct column indices in [0, {n_columns - 1}]", columns[:10])
    return columns.astype(np.int64)


def _checked_subsets(subsets: Mapping, num_features_list: Sequence[int], n_columns: int, owner: str) -> dict:
    """``{k: columns}`` for each k of ``num_features_list`` (counts as given: a selection may hold
    fewer or more features than its k, note 8), k ascending."""
    ks = sorted({int(k) for k in num_features_list})
    if sorted(int(k) for k in subsets) != ks:
        raise _invalid("subsets", owner, f"a mapping with the counts {ks} as keys", sorted(subsets)[:10])
    return {k: _checked_columns(subsets[k], n_columns, owner, f"subsets[{k}]") for k in ks}


def prediction_metrics(classifier: str, k: int, y_true, y_pred, *, n_selected: Optional[int] = None) -> dict:
    """``{"classifier", "k", "n_selected", "accuracy", "macro_f1"}`` of one set of test predictions
    (note 3); ``n_selected`` is the number of features used (k unless note 8 says otherwise)."""
    return {"classifier": classifier, "k": int(k), "n_selected": int(k if n_selected is None else n_selected),
            "accuracy": float(accuracy_score(y_true, y_pred)),
            "macro_f1": float(f1_score(y_true, y_pred, average="macro", zero_division=0.0))}


def fits_driver_budget(n_rows: int, n_columns: int, budget_cells: int = DEFAULT_DRIVER_BUDGET_CELLS) -> bool:
    """Whether ``n_rows x n_columns`` reduced values may be classified on the driver."""
    return int(n_rows) * int(n_columns) <= int(budget_cells)


# The study -------------------------------------------------------------------------------------


class _Progress:
    """One line per step to ``callback``, else to stderr: a bar redrawn in place on a terminal."""

    def __init__(self, total: int, callback: Optional[Callable[[str], None]]):
        self.total, self.done, self.seconds, self.callback = total, 0, 0.0, callback

    def step(self, label: str, seconds: float) -> None:
        self.done, self.seconds = self.done + 1, self.seconds + seconds
        left = self.seconds / self.done * (self.total - self.done)
        message = f"{self.done}/{self.total} {label} ({seconds:.1f} s; about {left:.0f} s left)"
        if self.callback is None and sys.stderr.isatty():
            filled = int(round(30 * self.done / self.total))
            message = f"\r\033[K[{'#' * filled}{'.' * (30 - filled)}] {message}" + "\n" * (self.done == self.total)
            sys.stderr.write(message)
            sys.stderr.flush()
        else:
            (self.callback or (lambda line: print(line, file=sys.stderr, flush=True)))(message)


#: Keys of a study's description that belong to one run (shown in the report), not to the study:
#: a study resumed with another command line or list of methods is the same study. A method's
#: params are checked on their own, for the methods with saved folds.
RUN_DESCRIPTION_KEYS = ("command", "params", "baselines")


def study_identity(description: dict) -> dict:
    """The part of a study's description that a resumed run must match."""
    return {key: value for key, value in description.items() if key not in RUN_DESCRIPTION_KEYS}


class EvaluationStudy:
    """Selection on each training fold, classifiers on its test fold, saved per (method, fold).

    Parameters
    ----------
    directory : str or Path
        Holds ``study.json``, ``folds/<method>/repeat-RRR-fold-FFF.npz`` and the outputs.
    folds : list of :class:`Fold` (:func:`fold_plan`)
    methods : list of str, names passed to ``rank_fold`` (letters, digits and ``_.+-``)
    classifiers : names from :data:`CLASSIFIER_NAMES`
    num_features_list : list of int, the k values (module note 2)
    description : dict
        JSON-able; part of the fingerprint and shown in the report. Keys read by the outputs:
        ``input``, ``test_input``, ``rows``, ``classes``, ``command`` (str or argv list),
        ``feature_names`` (n_features names, or the real features' names when probes follow),
        ``baselines`` (method names).
    n_features : int, columns of the data, probes included
    probe_mask : bool array of shape (n_features,), optional
        True for probe features: adds the selection ROC/AUC per (method, fold).
    seed : int, default 0, ``random_state`` of the classifiers
    driver_budget_cells : int, largest (training + test rows) x columns fetched by ``data_for_fold``
    classify_above_budget : callable, optional
        ``(fold, columns, subsets, classifiers, seed) -> {(classifier, k): (y_true, y_pred)}``
        for the folds above the budget (module note 7): ``columns`` are the sorted feature
        indices of every k's selection, ``subsets`` maps each k to the positions in ``columns``
        of its features. Without it such a fold is refused before any work.
    """

    def __init__(self, directory, folds: Sequence[Fold], methods: Sequence[str], classifiers: Sequence[str],
                 num_features_list: Sequence[int], description: dict, *, n_features: int, probe_mask=None,
                 seed: int = 0, driver_budget_cells: int = DEFAULT_DRIVER_BUDGET_CELLS,
                 classify_above_budget: Optional[Callable] = None):
        owner = "EvaluationStudy"
        if not _is_int(n_features) or n_features < 1:
            raise _invalid("n_features", owner, "an int in the range [1, inf)", n_features)
        if not folds or not all(isinstance(fold, Fold) for fold in folds):
            raise _invalid("folds", owner, "a non-empty list of Fold (see fold_plan)", folds)
        for parameter, names, constraint, valid in (
                ("methods", methods, "letters, digits and _.+-",
                 lambda name: isinstance(name, str) and bool(_METHOD_NAME.match(name))),
                ("classifiers", classifiers, f"among {CLASSIFIER_NAMES}", lambda name: name in CLASSIFIER_NAMES)):
            if not names or len(set(names)) != len(names) or not all(valid(name) for name in names):
                raise _invalid(parameter, owner, f"a non-empty list of distinct names of {constraint}", names)
        try:
            self.description = json.loads(json.dumps(description, sort_keys=True))
        except (TypeError, ValueError) as error:
            raise _invalid("description", owner, "a JSON-able dict", description) from error
        if not isinstance(self.description, dict):
            raise _invalid("description", owner, "a JSON-able dict", description)
        probe_features = None
        if probe_mask is not None:
            probe_mask = np.asarray(probe_mask)
            if probe_mask.dtype != bool or probe_mask.shape != (n_features,) or len(set(probe_mask.tolist())) < 2:
                raise _invalid("probe_mask", owner, f"a bool array of shape ({n_features},) with real features and "
                               "probes", f"dtype {probe_mask.dtype}, shape {probe_mask.shape}")
            probe_features = np.flatnonzero(probe_mask).tolist()
        names = self.description.get("feature_names")
        n_real = n_features - len(probe_features or [])
        if names is not None and (not isinstance(names, list) or len(names) not in (n_features, n_real)):
            raise _invalid("description", owner, f"a dict whose 'feature_names' lists {n_features} (or {n_real} real) "
                           "names", f"{len(names) if isinstance(names, list) else names!r} names")
        if not _is_int(seed) or seed < 0:
            raise _invalid("seed", owner, "an int in the range [0, inf)", seed)
        if not _is_int(driver_budget_cells) or driver_budget_cells < 1:
            raise _invalid("driver_budget_cells", owner, "an int in the range [1, inf)", driver_budget_cells)
        self.directory, self.folds = Path(directory), list(folds)
        self.methods, self.classifiers = list(methods), list(classifiers)
        self.feature_counts = feature_counts(num_features_list, n_features)
        self.n_features, self.probe_mask, self.seed = int(n_features), probe_mask, int(seed)
        self.driver_budget_cells = int(driver_budget_cells)
        self.classify_above_budget = classify_above_budget
        given_params = self.description.get("params") or {}
        self.method_params = {method: given_params[method] for method in self.methods if method in given_params}
        self.fingerprint = {"description": study_identity(self.description), "n_features": self.n_features,
                            "classifiers": self.classifiers, "feature_counts": self.feature_counts,
                            "seed": self.seed, "probe_features": probe_features, "folds": len(self.folds),
                            "folds_sha256": folds_hash(self.folds)}

    def _config(self, stored_params: Optional[dict] = None) -> dict:
        return {**self.fingerprint, "description": self.description, "methods": self.methods,
                "method_params": {**(stored_params or {}), **self.method_params},
                "separate_test": bool(self.folds[0].separate_test),
                "fold_keys": [[int(f.repeat), int(f.fold)] for f in self.folds]}

    def _changed_params(self, stored_params: dict) -> List[str]:
        """The methods of this run with saved folds whose params differ from the stored ones."""
        return [f"params of {method} (stored {stored_params[method]!r}, given {self.method_params[method]!r})"
                for method in self.methods
                if method in stored_params and method in self.method_params
                and stored_params[method] != self.method_params[method]
                and any(self.fold_path(method, fold).exists() for fold in self.folds)]

    def fold_path(self, method: str, fold: Fold) -> Path:
        return fold_path(self.directory, method, fold.repeat, fold.fold)

    def missing(self) -> List[Tuple[str, Fold]]:
        """The (method, fold) pairs without a saved file, fold-major."""
        return [(method, fold) for fold in self.folds for method in self.methods
                if not self.fold_path(method, fold).exists()]

    def _check_fingerprint(self, create: bool) -> None:
        study_file = self.directory / "study.json"
        if create:  # a new or empty directory, or one holding this tool's study.json (not any other)
            check_study_directory(str(self.directory), "evaluate")
        stored_params: dict = {}
        if study_file.exists():
            stored = json.loads(study_file.read_text())
            stored = {**stored, "description": study_identity(stored.get("description") or {})}
            stored_params = stored.get("method_params") or (stored.get("description") or {}).get("params") or {}
            differing = [key for key in self.fingerprint if stored.get(key) != self.fingerprint[key]]
            differing += self._changed_params(stored_params)
            if differing:
                raise StudyMismatchError(
                    f"{self.directory} holds another evaluation ({', '.join(differing)} differ); use another output "
                    "directory, or remove this one to start again")
        elif not create:
            raise FileNotFoundError(f"{study_file} does not exist; run the study first")
        if create:
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(study_file, strict_dumps({**marker("evaluate"), **self._config(stored_params)},
                                                      indent=2).encode())

    def run(self, rank_fold: Callable[[str, Fold], np.ndarray],
            data_for_fold: Callable[[Fold, np.ndarray], tuple], *,
            progress: Optional[Callable[[str], None]] = None) -> List[Tuple[str, int, int]]:
        """Select, classify and save every (method, fold) not yet saved; returns those done now.

        ``rank_fold(method, fold)`` returns the (n_features,) scores of ``method`` fitted on the
        rows ``fold.train`` only (larger = better), or a :class:`FoldSelection` (module note 8).
        ``data_for_fold(fold, columns)`` returns ``(X_train, y_train, X_test, y_test)`` restricted
        to the sorted feature indices ``columns`` (the top ``max(k)`` features of that ranking, or
        the union of the selections): rows ``fold.train`` and
        ``fold.test`` (of the test set when ``fold.separate_test``), in that order. Each result
        is saved when done; an exception propagates and leaves the saved files. ``progress``
        gets one line per step (default: stderr, a bar on a terminal).
        """
        self._check_budget_plan()
        self._check_fingerprint(create=True)
        for method in self.methods:  # a result's staging file, left by a killed process
            for stale in staging_leftovers(self.directory / "folds" / method, "repeat-[0-9]*-fold-[0-9]*.npz"):
                stale.unlink()
        pending = self.missing()
        meter, done = _Progress(len(pending), progress), []
        for method, fold in pending:
            start = time.perf_counter()
            arrays = self._evaluate(method, fold, rank_fold, data_for_fold)
            buffer = io.BytesIO()
            np.savez(buffer, **arrays)
            self.fold_path(method, fold).parent.mkdir(parents=True, exist_ok=True)
            atomic_write_bytes(self.fold_path(method, fold), buffer.getvalue())
            done.append((method, fold.repeat, fold.fold))
            meter.step(f"{method} repeat {fold.repeat + 1} fold {fold.fold + 1}", time.perf_counter() - start)
        return done

    def _above_budget(self, fold: Fold, n_columns: Optional[int] = None) -> bool:
        """Whether the fold's reduced data (max(k) columns unless told) exceed the driver budget."""
        n_columns = self.feature_counts[-1] if n_columns is None else n_columns
        return not fits_driver_budget(fold.train.size + fold.test.size, n_columns, self.driver_budget_cells)

    def _check_budget_plan(self) -> None:
        """Refuse, before any work, folds above the budget that no engine can classify (note 7)."""
        above = [fold for fold in self.folds if self._above_budget(fold)]
        if not above:
            return
        cells = (above[0].train.size + above[0].test.size) * self.feature_counts[-1]
        if self.classify_above_budget is None:
            raise _invalid("driver_budget_cells", "EvaluationStudy", f"at least the {cells} reduced values of a fold "
                           "(or lower the largest k, or classify on Spark)", self.driver_budget_cells)
        driver_only = [name for name in self.classifiers if name not in SPARK_CLASSIFIERS]
        if driver_only:
            raise ValueError(
                f"{len(above)} fold(s) have {cells} reduced values or more, above the driver budget of "
                f"{self.driver_budget_cells} values, so they are classified on Spark, which has no {driver_only} "
                f"(pyspark.ml has {list(SPARK_CLASSIFIERS)}): drop those classifiers, lower the largest k, or "
                "raise the driver budget")

    def _evaluate(self, method: str, fold: Fold, rank_fold, data_for_fold) -> Dict[str, np.ndarray]:
        """The arrays saved for one (method, fold): scores, one metric row per classifier x k, AUC, times."""
        where = f"repeat {fold.repeat} fold {fold.fold} of {method!r}"
        start = time.perf_counter()
        picked = rank_fold(method, fold)
        subsets, extra = None, {}
        if isinstance(picked, FoldSelection):
            if picked.tie_sizes is not None:
                extra["greedy_tie_sizes"] = np.asarray(picked.tie_sizes, dtype=np.int64)
            picked, subsets = picked.scores, picked.subsets
        scores = np.asarray(picked, dtype=np.float64)
        if scores.shape != (self.n_features,):
            raise ValueError(f"rank_fold returned scores of shape {scores.shape} for {where}; expected "
                             f"({self.n_features},)")
        selected = time.perf_counter()
        if subsets is None:
            ranking = rank_features(scores)
            subsets = {k: ranking[:k] for k in self.feature_counts}
        else:
            subsets = _checked_subsets(subsets, self.feature_counts, self.n_features, f"rank_fold for {where}")
        columns = np.unique(np.concatenate(list(subsets.values())))
        positions = {k: np.searchsorted(columns, subset) for k, subset in subsets.items()}
        if self._above_budget(fold, columns.size):
            if self.classify_above_budget is None:  # selections larger than max(k) (note 8)
                raise _invalid("driver_budget_cells", "EvaluationStudy", f"at least the {columns.size} columns x "
                               f"{fold.train.size + fold.test.size} rows of {where}'s selections",
                               self.driver_budget_cells)
            predictions = self.classify_above_budget(fold, columns, positions, list(self.classifiers), self.seed)
            rows = [prediction_metrics(name, k, *predictions[(name, k)], n_selected=subsets[k].size)
                    for name in self.classifiers for k in self.feature_counts]
            return {**self._arrays(scores, rows, fold, "spark", start, selected), **extra}
        X_train, y_train, X_test, y_test = data_for_fold(fold, columns)
        for name, X, rows in (("X_train", X_train, fold.train), ("X_test", X_test, fold.test)):
            if np.shape(X) != (rows.size, columns.size):
                raise ValueError(f"data_for_fold returned {name} of shape {np.shape(X)} for {where}; expected "
                                 f"({rows.size}, {columns.size})")
        rows = score_subsets(X_train, y_train, X_test, y_test, positions, self.feature_counts, self.classifiers,
                             seed=self.seed)
        return {**self._arrays(scores, rows, fold, "scikit-learn", start, selected), **extra}

    def _arrays(self, scores, rows, fold: Fold, engine: str, start: float, selected: float) -> Dict[str, np.ndarray]:
        auc = np.nan if self.probe_mask is None else selection_roc_of_scores(scores, ~self.probe_mask)[2]
        arrays = {name: np.array([row[name] for row in rows])
                  for name in ("classifier", "k", "n_selected", "accuracy", "macro_f1")}
        return {"scores": scores, **arrays, "engine": np.array([engine] * len(rows)),
                "test_rows": np.int64(fold.test.size), "selection_auc": np.float64(auc),
                "selection_seconds": np.float64(selected - start),
                "classifier_seconds": np.float64(time.perf_counter() - selected)}

    def all_rows_fold(self) -> Fold:
        """The fold that trains on every row (of the first repeat's folds) and tests on none."""
        first = [fold for fold in self.folds if fold.repeat == self.folds[0].repeat]
        if first[0].separate_test:
            rows = first[0].train
        else:
            rows = np.unique(np.concatenate([np.concatenate([fold.train, fold.test]) for fold in first]))
        return Fold(ALL_ROWS, ALL_ROWS, rows.astype(np.int64), np.empty(0, dtype=np.int64), first[0].separate_test)

    def fit_recommended_on_all_rows(self, rank_fold: Callable[[str, Fold], np.ndarray], *,
                                    progress: Optional[Callable[[str], None]] = None) -> List[str]:
        """Fit each method recommended for some classifier on all rows, once (see
        :mod:`sparkfs.evaluation.recommendation`); ``rank_fold`` as for :meth:`run`. Returns the
        methods fitted now."""
        self._check_fingerprint(create=False)
        table = recommendation_table(best_k_table(load_results(self.directory, self._config())[0]), self.methods,
                                     self.classifiers)
        return fit_recommended_on_all_rows(self.directory, list(dict.fromkeys(table["method"])), self.all_rows_fold(),
                                           self.feature_counts, self.n_features, rank_fold, progress)

    def write_results(self) -> List[Path]:
        """The outputs of :func:`write_results`, after checking the fingerprint."""
        self._check_fingerprint(create=False)
        return write_outputs(self.directory, self._config())
