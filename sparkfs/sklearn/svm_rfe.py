"""SVM-RFE (Guyon et al. 2002; Han & Yu 2010; En-SVM-RFE, Saeys et al. 2008) as a scikit-learn
selector: the Spark selector's driver solver on in-memory rows.

The Spark selector collects the rows to the driver when they fit its budget (``solver="auto"``
on small data, or ``solver="driver"``), standardises them (:func:`sparkfs.core.svm_rfe.standardisation`)
and runs :func:`sparkfs.core.svm_rfe.svm_rfe` (liblinear fits in an elimination loop), or
:func:`sparkfs.core.svm_rfe.ensemble_svm_rfe` for an ensemble; this estimator runs the same on ``X``.
Instance weights (``sample_weight``, the Spark selector's ``weightCol``) are taken; Han & Yu's
margin instance weighting (``instanceWeighting="margin"``) and the Spark solvers are not in the front.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sparkfs.core import svm_rfe as rfe_math
from sparkfs.core.options import MULTICLASS, check_int
from sparkfs.core.param_caps import MAX_ENSEMBLE, MAX_SOLVER_ITERATIONS
from sparkfs.core.selection import percentile_count
from sparkfs.errors import SolverConvergenceWarning
from sparkfs.sklearn.base import (
    DEFAULT_NUM_FEATURES,
    FeatureScores,
    SparkfsSelector,
    WeightedFit,
    bad_param,
    is_int,
    is_real,
)

#: max_iter and tol when None: the Spark selector's driver-solver defaults.
DRIVER_MAX_ITER, DRIVER_TOL = 10_000, 1e-4


class SVMRFESelector(WeightedFit, SparkfsSelector):
    """SVM-RFE (Spark: ``SVMRFESelector`` with its driver solver, ``method`` ``svm-rfe``).

    Parameters
    ----------
    step : float in (0, 1) or int >= 1, default 0.1
        Share of the remaining features (rounded up), or number of features, eliminated per round.
    C : float, default 1.0
    max_iter : int or None, default None (10,000)
    tol : float or None, default None (1e-4)
    multiclass : {"l2", "l1"}, default "l2"
        How the one-vs-rest weights combine per feature.
    ensemble : int, default 1
        Bootstrap samples of En-SVM-RFE (rank sum); 1 = plain SVM-RFE.
    seed : int, default 0
        Seed of the bootstrap samples.
    standardize : bool, default True
        Divide every feature by its standard deviation (and centre it when most values are
        non-zero) before the fits; False: the data as given (the paper's setting).
    halve_above : int, default 1000
        While more features remain, each round eliminates half of them; 0: ``step`` throughout.
    eliminate_all : bool, default False
        Eliminate down to the last feature; False stops when the selection's count remain.
    num_features, threshold, selection_mode, selection_threshold, allow_many_classes, missing
        The selection rule (:class:`sparkfs.sklearn.base.SparkfsSelector`).

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        Larger is better (the Spark model's scores). No p-values.
    ranking_ : ndarray (n_features,)
        1 = kept, larger = eliminated earlier (an ensemble: by rank sum).

    Notes
    -----
    The elimination stops at the count the selection asks for (unless ``eliminate_all`` or a
    ``threshold``): asking for another count after the fit needs a new fit. Memory: X (CSR stays
    CSR unless centred); O(log p) liblinear fits with ``halve_above``. ``fit(X, y, sample_weight)``
    hands the weights to liblinear as the Spark selector's driver solver hands its ``weightCol``
    (the standardisation stays unweighted, as there).
    """

    method = "svm-rfe"

    def __init__(self, *, step=0.1, C=1.0, max_iter=None, tol=None, multiclass="l2", ensemble=1, seed=0,
                 standardize=True, halve_above=1000, eliminate_all=False, num_features=None, threshold=None,
                 selection_mode="numTopFeatures", selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        super().__init__(num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                         selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                         kept_features=kept_features, excluded_features=excluded_features,
                         missing=missing)
        self.step = step
        self.C = C
        self.max_iter = max_iter
        self.tol = tol
        self.multiclass = multiclass
        self.ensemble = ensemble
        self.seed = seed
        self.standardize = standardize
        self.halve_above = halve_above
        self.eliminate_all = eliminate_all

    def _check_method_params(self) -> None:
        owner = type(self).__name__
        step = self.step
        if not (is_real(step) and ((0.0 < step < 1.0) or (step >= 1.0 and float(step).is_integer()))):
            raise bad_param(owner, "step", "a float in (0, 1) or a whole number >= 1", step)
        for name, low, cap in (("ensemble", 1, MAX_ENSEMBLE), ("halve_above", 0, None),
                               ("max_iter", 1, MAX_SOLVER_ITERATIONS)):
            if not (getattr(self, name) is None and name == "max_iter"):
                check_int(name, owner, getattr(self, name), low, maximum=cap)
        for name in ("C", "tol"):
            value = getattr(self, name)
            if not (value is None and name == "tol") and not (is_real(value) and 0.0 < value < np.inf):
                raise bad_param(owner, name, "a float in the range (0, inf)", value)
        if self.multiclass not in MULTICLASS:
            raise bad_param(owner, "multiclass", "a str among {" + ", ".join(map(repr, MULTICLASS)) + "}",
                            self.multiclass)
        for name in ("standardize", "eliminate_all"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise bad_param(owner, name, "a bool", getattr(self, name))
        if not is_int(self.seed):
            raise bad_param(owner, "seed", "an int", self.seed)

    def _elimination_stop(self, num_features: int) -> int:
        """Features left when the elimination stops (the Spark selector's ``eliminationStop``)."""
        by_count = self.selection_mode == "percentile" or (self.selection_mode == "numTopFeatures"
                                                           and self.threshold is None)
        if self.eliminate_all or not by_count:
            return 1
        if self.selection_mode == "percentile":
            fraction = 0.1 if self.selection_threshold is None else self.selection_threshold
            count = percentile_count(num_features, fraction)
        else:
            count = DEFAULT_NUM_FEATURES if self.num_features is None else self.num_features
        return int(min(max(count, 1), num_features))

    def _score_features(self, X, y, sample_weight=None) -> FeatureScores:
        labels = self._class_labels(y)
        if not self.standardize:   # the Spark selector's refusal, from the same rule
            rfe_math.check_svm_magnitude(rfe_math.column_largest(X), standardize=False, from_sums=False,
                                         owner=type(self).__name__)
        matrix = rfe_math.standardised(X, *rfe_math.standardisation(X)) if self.standardize else X
        step = float(self.step) if self.step < 1.0 else int(self.step)
        options = dict(step=step, n_features_to_select=self._elimination_stop(X.shape[1]), C=float(self.C),
                       max_iter=DRIVER_MAX_ITER if self.max_iter is None else int(self.max_iter),
                       tol=DRIVER_TOL if self.tol is None else float(self.tol), multiclass=self.multiclass,
                       halve_above=int(self.halve_above))
        if self.ensemble > 1:
            result = rfe_math.ensemble_svm_rfe(matrix, labels.index, ensemble=int(self.ensemble), seed=self.seed,
                                               sample_weight=sample_weight, **options)
            fits = int(result.fits)
        else:
            result = rfe_math.svm_rfe(matrix, labels.index, sample_weight=sample_weight, **options)
            fits = int(result.n_remaining.size)
        if result.not_converged:
            warnings.warn(f"{type(self).__name__}: {int(result.not_converged)} of {fits} SVM fits stopped at "
                          f"max_iter={options['max_iter']} before converging (raise max_iter, or keep "
                          "standardize=True)", SolverConvergenceWarning, stacklevel=3)
        return FeatureScores(result.scores, None, {"ranking": result.ranking, "elimination_stop": options[
            "n_features_to_select"]})

    def _selected(self) -> np.ndarray:
        """The base rule, once the elimination the fit ran serves the count asked for."""
        check_is_fitted(self, "scores_")
        stop = self._elimination_stop(self.scores_.shape[0])
        if self.elimination_stop_ > 1 and stop != self.elimination_stop_:
            raise ValueError(f"{type(self).__name__}'s elimination stopped at {self.elimination_stop_} features and "
                             f"the selection asks for {stop}: fit it again (eliminate_all=True ranks every feature)")
        return super()._selected()
