"""SVM-RFE (Guyon et al. 2002), its bootstrap ensemble and its instance-weighted form
(Han & Yu 2010) as a pyspark.ml Estimator.

Two solvers run the same elimination loop (:func:`sparkfs.core.svm_rfe.recursive_elimination`):

* ``"driver"``: the rows are collected and scikit-learn's ``LinearSVC`` (liblinear, hinge loss)
  fits every iteration on the driver -- fast for the n << d data RFE is usually run on;
* ``"spark"``: for data that do not fit the driver, the same SVM objective (liblinear's, intercept
  penalty included) minimised by L-BFGS on the driver with one pass over the rows per evaluation
  (:mod:`sparkfs.spark.svm_rfe`, :mod:`sparkfs.core.linear_svm`); with ``deterministic=True`` its
  sums follow the canonical row order, so its scores are the same bits for any partitioning;
* ``"sparkml"``: pyspark.ml's ``LinearSVC`` on the sliced vectors (``regParam = 1 / (C sum s)``),
  faster on wide sparse data but equal across partitionings to rounding only.

``solver="auto"`` takes the driver when the rows fit ``driverBudgetMB`` (dense n x d doubles,
or the CSR size when smaller); the summary says which ran and why.

Defaults differ from the paper's (Han & Yu 2010 ran SMO on the data as given, 10 % per round):

* ``standardize=True``: every feature divided by its standard deviation over the rows (``ddof=0``,
  scikit-learn's ``StandardScaler``) and, when more than half of all values are non-zero, centred;
  sparse values are scaled only (``StandardScaler(with_mean=False)``), so sparse rows stay sparse.
  Constant features are left as they are. Instance weights do not enter the statistics; an
  ensemble standardises once, on the whole input. The driver solver standardises the collected rows
  (NumPy, as :func:`sparkfs.core.svm_rfe.svm_rfe` with ``standardize=True``), the Spark solver inside
  its objective from the canonical column sums (both the same bits for any partitioning), sparkml
  the vectors (``ElementwiseProduct``, without centring: pyspark.ml does not penalise the intercept,
  so centring would change no weight). The margin weights of ``instanceWeighting="margin"`` are
  computed on the scaled vectors (Spark's column statistics: equal across partitionings to rounding).
  The weights |w|, the weight path and the scores are those of the standardised features.
  ``standardize=False`` fits on the data as given.
* ``halveAbove=1000``: while more than 1,000 features remain, each round removes half of them
  (never going below 1,000), then ``step`` (10 %) applies; ``halveAbove=0`` is the paper's fixed
  share throughout. ``benchmarks/results/svm_rfe_defaults.md`` has the timing and accuracy check.
* ``eliminateAll=False``: the elimination stops when the selection's count remain (``numFeatures``,
  or the percentile's count), as scikit-learn's ``RFE(n_features_to_select=k)``; with a score
  ``threshold`` it runs to the end. The selected set is the full elimination's top k: both runs fit
  the same SVMs until the round that would cross k, where this one removes only enough features to
  leave k, the k largest of that fit's |w|, and the full run leaves fewer, which then outscore the
  rest of the round, whose order is that fit's |w| too (only |w| equal to rounding may differ). On
  100,000 x 50,000 with k = 1,000 that is 7 SVM fits instead of 56. ``eliminateAll=True`` ranks
  every feature by its round (the paper's full ranking, Han & Yu's weight path down to one feature).
  ``summary["elimination"]``: ``eliminate_all``, ``stopped_at`` (features left), ``rounds`` and
  ``fits_per_run`` (the rounds plus the final fit on the survivors; per member for an ensemble).
* Convergence: the fits that stopped at ``maxIter`` are counted in ``summary["convergence"]``
  (``fits``, ``not_converged``, ``max_iter``) and announced by one
  :class:`sparkfs.errors.SolverConvergenceWarning` per run, not one warning per fit.

Scores order every feature: the elimination round it left in (larger = later; the survivors' is the
largest), plus half its |w| relative to the largest |w| of the fit that eliminated it
(:mod:`sparkfs.core.svm_rfe`, note 4), so only exactly equal weights tie. The survivors' |w| are those
of the loop's last fit, which is on exactly the survivors (scikit-learn RFE's final ``estimator_``):
the loop fits, then stops when no more than the stop count remain.
``featureArray("ranking")`` holds the rounds as scikit-learn's ``RFE.ranking_`` (1 = best,
features eliminated together share a rank); the scores refine it. A single run also stores the
weight path: ``weightPath`` gives, per SVM fit, the number of remaining features and the
normalised weights ``r_j = |w_j| / sum |w|`` (Han & Yu's view of RFE as feature weighting).
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Tuple

import numpy as np
from pyspark.ml.param import Param, TypeConverters

from sparkfs.core import svm_rfe as rfe_math
from sparkfs.core.options import SVMRFEOptions
from sparkfs.errors import InvalidInputError, SolverConvergenceWarning
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, PreparedInput, ScoreResult
from sparkfs.selectors._params import (
    MAX_ENSEMBLE,
    MAX_SOLVER_ITERATIONS,
    HasDriverBudget,
    UpperBound,
    declare,
    in_range,
    is_bool,
    is_int,
    keyword_constructor,
    one_of,
)
from sparkfs.spark.blocks import arrow_vectors_to_matrix
from sparkfs.spark.instance_weighting import margin_instance_weights, with_instance_weights
from sparkfs.spark.method_setup import EngineOptions
from sparkfs.spark.row_values import labels_by_position, row_values_attached
from sparkfs.spark.stats import diagnose_input
from sparkfs.spark.svm_rfe import spark_svm_rfe, sparkml_svm_rfe

_LABEL_INDEX = "__sparkfs_label_index"
_MARGIN_WEIGHT = "__sparkfs_margin_weight"
_BOOTSTRAP_COUNT = "__sparkfs_bootstrap_count"
_MEMBER_WEIGHT = "__sparkfs_member_weight"
_STANDARDISED = "__sparkfs_standardised_features"
#: Defaults of the solvers when maxIter / tol are unset.
SOLVER_DEFAULTS = {"driver": {"max_iter": 10_000, "tol": 1e-4}, "spark": {"max_iter": 100, "tol": 1e-6},
                   "sparkml": {"max_iter": 100, "tol": 1e-6}}
#: SVM fits a run may take (ensemble x the fits of one elimination): 100,000 fits of the default
#: elimination (a tenth per round: about 90 fits on 10,000 features) is an ensemble of 1,000.
MAX_SVM_FITS = 100_000


def _valid_step(value) -> bool:
    return (0.0 < value < 1.0) or (value >= 1.0 and float(value).is_integer())


def _standardisation(stats: dict, n_rows: int, num_features: int):
    """``(offset, scale, centred)`` from the column summary (core module note 7): ``scale`` the
    ``ddof=0`` standard deviation (1 for a constant feature); ``offset`` the mean in units of the
    scaled features (``mean / scale``) when more than half of the values are non-zero, else 0."""
    variance = np.maximum(stats["variance"], 0.0) * ((n_rows - 1) / n_rows if n_rows > 1 else 0.0)
    std = np.sqrt(variance)
    varies = std > 0
    scale = np.where(varies, std, 1.0)
    centred = 2.0 * stats["nonzeros"] > float(n_rows) * num_features
    offset = np.where(varies, stats["mean"] / scale, 0.0) if centred else np.zeros(num_features)
    return offset, scale, bool(centred)


def rfe_step(value: float):
    """The Param's float as the core's step: a share in (0, 1), else a whole number of features."""
    return float(value) if value < 1.0 else int(value)


class _SVMRFEParams(HasDriverBudget):
    step: Param = declare("step", "share of the remaining features eliminated per iteration (0, 1), "
                          "rounded up, or a whole number of features >= 1", TypeConverters.toFloat,
                          default=0.1, constraint=(_valid_step, "a float in (0, 1) or a whole number >= 1"))
    C: Param = declare("C", "the linear SVM's C (scikit-learn's meaning)",
                       TypeConverters.toFloat, default=1.0, constraint=in_range(0.0, low_open=True))
    maxIter: Param = declare("maxIter", "solver iterations per SVM fit; unset = 10,000 on the "
                             "driver (liblinear), 100 L-BFGS iterations on Spark", TypeConverters.toInt,
                             constraint=in_range(1, MAX_SOLVER_ITERATIONS, kind="an int"))
    tol: Param = declare("tol", "solver tolerance; unset = 1e-4 on the driver, 1e-6 on Spark",
                         TypeConverters.toFloat, constraint=in_range(0.0, low_open=True))
    multiclass: Param = declare("multiclass", "how one-vs-rest weights combine per feature: "
                                "'l2' (sqrt of the sum of squares) or 'l1'", TypeConverters.toString,
                                default="l2", constraint=one_of(*rfe_math.MULTICLASS))
    ensemble: Param = declare("ensemble", "number of bootstrap samples of En-SVM-RFE (rank sum); "
                              "1 = plain SVM-RFE", TypeConverters.toInt,
                              default=1, constraint=in_range(1, MAX_ENSEMBLE, kind="an int"))
    seed: Param = declare("seed", "seed of the bootstrap samples", TypeConverters.toInt,
                          default=0, constraint=is_int())
    instanceWeighting: Param = declare("instanceWeighting", "'none' or 'margin' (Han & Yu's "
                                       "eq. 7 weights, IW-SVM-RFE)", TypeConverters.toString,
                                       default="none", constraint=one_of("none", "margin"))
    standardize: Param = declare("standardize", "divide every feature by its standard deviation "
                                 "(and centre it when most values are non-zero) before the SVM fits; False = the data "
                                 "as given (the paper's setting)", TypeConverters.toBoolean,
                                 default=True, constraint=is_bool())
    halveAbove: Param = declare("halveAbove", "while more than this many features remain, each round "
                                "eliminates half of them (not going below it), then 'step' applies; 0 = 'step' "
                                "throughout (the paper's rule)", TypeConverters.toInt,
                                default=1000, constraint=in_range(0, kind="an int"))
    eliminateAll: Param = declare("eliminateAll", "eliminate down to the last feature (the paper's "
                                  "full ranking); False = stop when the selection's count remain (numFeatures, or the "
                                  "percentile's count; scikit-learn RFE's n_features_to_select), the same selected "
                                  "set in fewer fits", TypeConverters.toBoolean,
                                  default=False, constraint=is_bool())
    solver: Param = declare("solver", "'auto' (driver or spark), 'driver' (scikit-learn), "
                            "'spark' (L-BFGS over distributed sums: the same bits for any partitioning) or 'sparkml' "
                            "(pyspark.ml LinearSVC: faster on wide sparse data, equal to rounding only)",
                            TypeConverters.toString,
                            default="auto", constraint=one_of("auto", "driver", "spark", "sparkml"))
    _defaults = {"driverBudgetMB": 1024.0}


class SVMRFESelectorModel(FeatureSelectorModel, _SVMRFEParams):
    """Model of :class:`SVMRFESelector`."""

    @property
    def weightPath(self) -> Tuple[np.ndarray, np.ndarray]:
        """``(remaining, weights)``: per SVM fit the number of remaining features (T,) and the
        normalised weights (T, d), 0 once eliminated. Empty for an ensemble."""
        remaining = np.asarray(self._summary.get("rfe_remaining", []), dtype=np.int64)
        rows = [self._feature_arrays[f"path_{t:04d}"] for t in range(remaining.size)]
        return remaining, np.array(rows).reshape(remaining.size, self.numInputFeatures)


@keyword_constructor
class SVMRFESelector(FeatureSelector, _SVMRFEParams):
    """Recursive feature elimination with a linear SVM (module notes).

    Accepts ``weightCol`` (instance weights) or ``instanceWeighting="margin"``, not both.
    """

    _model_class = SVMRFESelectorModel
    takes_weights = True
    gives_weight_path = True
    own_instance_weighting = "instanceWeighting"
    _label_index_col = _LABEL_INDEX

    def _optional(self, param):
        return self.getOrDefault(param) if self.isDefined(param) else None

    def _column_summary(self, dataset, label_col: str):
        """One JVM pass: per-feature min, max, mean, variance and non-zero count, and the largest |value|
        (for :func:`sparkfs.core.svm_rfe.check_svm_magnitude`). Bad values (NaN/inf, vectors of other
        sizes, null vectors) are diagnosed and named; so are null, NaN, infinite or negative instance weights,
        counted in the same pass."""
        from pyspark.ml.stat import Summarizer
        from pyspark.sql import functions as F

        features_col, weight_col = self.getFeaturesCol(), self._weight_col()
        aggregates = [Summarizer.metrics("min", "max", "mean", "variance", "numNonZeros")
                      .summary(F.col(features_col)).alias("s")]
        if weight_col:
            weight = F.col(weight_col)
            bad = weight.isNull() | F.isnan(weight) | (weight < 0) | (F.abs(weight) == F.lit(float("inf")))
            aggregates.append(F.sum(bad.cast("long")).alias("bad_weights"))
        try:
            summary = dataset.agg(*aggregates).first()
            if weight_col and summary["bad_weights"]:
                diagnose_input(dataset, features_col, label_col, weight_col)
            row = summary["s"]
            minimum, maximum = row["min"].toArray(), row["max"].toArray()
            mean = row["mean"].toArray()   # NaN shows in the mean (min and max skip it)
        except (InvalidInputError, ValueError):
            raise
        except Exception:
            diagnose_input(dataset, features_col, label_col, self._weight_col())
            raise
        if not (np.all(np.isfinite(minimum)) and np.all(np.isfinite(maximum)) and np.all(np.isfinite(mean))):
            diagnose_input(dataset, features_col, label_col, self._weight_col())
            raise InvalidInputError("feature vectors contain NaN or infinite values")
        return {"nonzeros": float(row["numNonZeros"].toArray().sum()), "mean": mean,
                "variance": row["variance"].toArray(), "largest": np.maximum(np.abs(minimum), np.abs(maximum))}

    def _solver(self, n_rows: int, num_features: int, nonzeros: float) -> Tuple[str, str]:
        budget = self.getOrDefault(self.driverBudgetMB) * 2**20
        chosen = self.getOrDefault(self.solver)
        if chosen != "auto":
            return chosen, "set by the solver parameter"
        size = min(8.0 * n_rows * num_features, 12.0 * nonzeros + 8.0 * n_rows)
        within = size <= budget
        return ("driver" if within else "spark",
                f"the rows take {size / 2**20:.1f} MiB, {'within' if within else 'above'} "
                f"driverBudgetMB={self.getOrDefault(self.driverBudgetMB):g}")

    def eliminationStop(self, num_features: int) -> int:
        """Features left when the elimination stops: the selection's count (numFeatures, or the
        percentile's count) within [1, num_features]; 1 (every feature ranked by its round) with
        ``eliminateAll=True`` or when a score threshold, not a count, decides the selection."""
        by_count = (self.getSelectionMode() == "percentile"
                    or (self.getSelectionMode() == "numTopFeatures" and not self.isSet(self.threshold)))
        if self.getOrDefault(self.eliminateAll) or not by_count:
            return 1
        return int(min(max(self.selectionCount(num_features), 1), num_features))

    def _data_bounds(self, shape):
        """ensemble x (SVM fits of one elimination on these features) within MAX_SVM_FITS."""
        fits = rfe_math.elimination_rounds(shape.num_features, rfe_step(self.getOrDefault(self.step)),
                                           self.eliminationStop(shape.num_features),
                                           halve_above=self.getOrDefault(self.halveAbove))
        return [UpperBound("ensemble", self.getOrDefault(self.ensemble), max(1, MAX_SVM_FITS // fits),
                           f"each bootstrap sample runs a whole elimination, {fits:,} SVM fits on "
                           f"{shape.num_features:,} features with step={self.getOrDefault(self.step):g}, and a run "
                           f"takes at most {MAX_SVM_FITS:,} fits")]

    def givesWeightPath(self) -> bool:
        return self.getOrDefault(self.ensemble) == 1  # an ensemble ranks by rank sums: no single path

    def _check_fit_params(self) -> None:
        if self.getOrDefault(self.instanceWeighting) == "margin" and self._weight_col():
            raise ValueError("SVMRFESelector takes either weightCol or instanceWeighting='margin', not both")

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        dataset, labels = prepared.dataset, prepared.label_values
        weighting = self.getOrDefault(self.instanceWeighting)
        num_features = prepared.num_features
        stats = self._column_summary(dataset, self.getLabelCol())
        n_rows = prepared.n_rows
        data = prepared.indexed
        weight_col = self._weight_col()
        info = {"method": "svm-rfe", "step": self.getOrDefault(self.step), "C": self.getOrDefault(self.C),
                "halve_above": self.getOrDefault(self.halveAbove), "ensemble": self.getOrDefault(self.ensemble),
                "instance_weighting": weighting, "standardize": self.getOrDefault(self.standardize)}
        solver, reason = self._solver(n_rows, num_features, stats["nonzeros"])
        info.update(solver=solver, solver_reason=reason)
        # The driver standardises the collected rows in memory, at any scale; the Spark solvers and the
        # margin weights standardise from sums of squares (core check_svm_magnitude).
        rfe_math.check_svm_magnitude(stats["largest"], standardize=self.getOrDefault(self.standardize),
                                     from_sums=solver != "driver" or weighting == "margin",
                                     owner=f"{type(self).__name__} (solver='{solver}')")
        features_col, offset, scaled = self.getFeaturesCol(), None, data
        if self.getOrDefault(self.standardize):
            scaled, offset, info["centred"] = self._standardised(data, stats, n_rows, num_features)
            if solver == "sparkml":   # the driver standardises the collected rows, the Spark solver from
                data, features_col = scaled, _STANDARDISED   # canonical sums: the same bits for any partitioning
        if weighting == "margin":   # distances: on the scaled features (centring changes none)
            margin_features = _STANDARDISED if self.getOrDefault(self.standardize) else self.getFeaturesCol()
            weights = margin_instance_weights(scaled, margin_features, _LABEL_INDEX, num_features=num_features,
                                              num_classes=len(labels),
                                              engine=EngineOptions(canonical=self.getDeterministic()))
            data = with_instance_weights(data, weights, _MARGIN_WEIGHT)
            weight_col = _MARGIN_WEIGHT
            info["instance_weight_range"] = [float(weights.weights.min()), float(weights.weights.max())]
        defaults = SOLVER_DEFAULTS[solver]
        options = SVMRFEOptions(
            step=rfe_step(self.getOrDefault(self.step)), C=self.getOrDefault(self.C),
            max_iter=self._optional(self.maxIter) or defaults["max_iter"],
            tol=self._optional(self.tol) or defaults["tol"], multiclass=self.getOrDefault(self.multiclass),
            halve_above=self.getOrDefault(self.halveAbove),
            n_features_to_select=self.eliminationStop(num_features), standardize=self.getOrDefault(self.standardize),
            centre=offset is not None)
        info["elimination"] = self._elimination_facts(num_features, options)
        frame = (data, features_col, weight_col, num_features, offset)
        if solver == "driver":
            result, feature_arrays, extra = self._on_driver(frame, options)
        else:
            result, feature_arrays, extra = self._on_spark(frame, len(labels), options, solver)
        info.update(extra)
        info["convergence"] = self._convergence(result, options.max_iter, solver)
        return prepared.result(result.scores, info=info, feature_arrays={"ranking": result.ranking, **feature_arrays})

    def _standardised(self, data, stats: dict, n_rows: int, num_features: int):
        """The features divided by their standard deviations (ElementwiseProduct keeps sparse
        vectors sparse), for the sparkml solver and the margin weights (distances: centring changes
        none); ``offset`` is None when the values are not centred (module notes)."""
        from pyspark.ml.feature import ElementwiseProduct
        from pyspark.ml.linalg import Vectors

        offset, scale, centred = _standardisation(stats, n_rows, num_features)
        scaler = ElementwiseProduct(scalingVec=Vectors.dense(1.0 / scale), inputCol=self.getFeaturesCol(),
                                    outputCol=_STANDARDISED)
        return scaler.transform(data), (offset if centred else None), centred

    def _elimination_facts(self, num_features: int, options: SVMRFEOptions) -> dict:
        """What the elimination did, for the summary: where it stopped and the SVM fits of one run
        (every round's fit plus the final fit on the survivors), per bootstrap member for an ensemble."""
        stop = options.n_features_to_select
        fits = rfe_math.elimination_rounds(num_features, options.step, stop, options.halve_above)
        return {"eliminate_all": bool(self.getOrDefault(self.eliminateAll)), "stopped_at": int(stop),
                "rounds": int(fits - 1), "fits_per_run": int(fits)}

    @staticmethod
    def _convergence(result, max_iter: int, solver: str) -> dict:
        """The summary's convergence counts, and one warning for the run when some fit stopped at max_iter."""
        fits = int(result.fits) if hasattr(result, "fits") else int(result.n_remaining.size)
        not_converged = int(result.not_converged)
        if not_converged:
            warnings.warn(f"SVMRFESelector: {not_converged} of {fits} SVM fits ({solver} solver) stopped at "
                          f"maxIter={max_iter} before converging; the ranking uses their weights as they were "
                          f"(summary 'convergence'; raise maxIter, or keep standardize=True)",
                          SolverConvergenceWarning, stacklevel=3)
        return {"fits": fits, "not_converged": not_converged, "max_iter": int(max_iter)}

    @staticmethod
    def _path_arrays(result) -> Tuple[dict, dict]:
        arrays = {f"path_{t:04d}": row for t, row in enumerate(result.weight_path)}
        return arrays, {"rfe_remaining": [int(v) for v in result.n_remaining]}

    def _on_driver(self, frame, options):
        data, features_col, weight_col, num_features, offset = frame
        columns = [features_col, _LABEL_INDEX] + ([weight_col] if weight_col else [])
        table = data.select(*columns).toArrow()
        matrix = arrow_vectors_to_matrix(table.column(features_col), num_features)
        if self.getOrDefault(self.standardize):   # the rows in their order: the same bits for any partitioning
            matrix = rfe_math.standardised(matrix, *rfe_math.standardisation(matrix))
        labels = table.column(_LABEL_INDEX).to_numpy(zero_copy_only=False).astype(np.int64)
        weights = table.column(weight_col).to_numpy(zero_copy_only=False).astype(float) if weight_col else None
        ensemble = self.getOrDefault(self.ensemble)
        if ensemble > 1:
            result = rfe_math.ensemble_svm_rfe(matrix, labels, ensemble=ensemble, seed=self.getOrDefault(self.seed),
                                               sample_weight=weights, **options.driver_solver())
            return result, {}, {}
        result = rfe_math.svm_rfe(matrix, labels, sample_weight=weights, **options.driver_solver())
        arrays, extra = self._path_arrays(result)
        return result, arrays, extra

    def _on_spark(self, frame, num_classes: int, options, solver: str):
        from pyspark.sql import functions as F

        data, features_col, weight_col, num_features, offset = frame
        engine = self._engine_options()   # driverBudgetMB, deterministic; the weights per member below

        def fit(member, weights):
            # pyspark.ml's LinearSVC does not penalise the intercept: centring would change nothing
            rfe = spark_svm_rfe if solver == "spark" else sparkml_svm_rfe
            return rfe(member, features_col, _LABEL_INDEX, num_features=num_features, num_classes=num_classes,
                       options=options, engine=replace(engine, weight_col=weights))

        ensemble = self.getOrDefault(self.ensemble)
        if ensemble == 1:
            result = fit(data, weight_col)
            arrays, extra = self._path_arrays(result)
            return result, arrays, extra
        labels, offsets = labels_by_position(data, _LABEL_INDEX)
        rng = np.random.default_rng(self.getOrDefault(self.seed))
        rankings, scores, fits, not_converged = [], [], 0, 0
        for _ in range(ensemble):
            drawn = rfe_math.stratified_bootstrap(labels, rng)
            multiplicity = np.bincount(drawn, minlength=labels.size).astype(float)
            with row_values_attached(data, np.arange(labels.size), multiplicity, _BOOTSTRAP_COUNT,
                                     partition_offsets=offsets, what="bootstrap count") as member:
                if weight_col:
                    member = member.withColumn(_MEMBER_WEIGHT, F.col(_BOOTSTRAP_COUNT) * F.col(weight_col))
                else:
                    member = member.withColumnRenamed(_BOOTSTRAP_COUNT, _MEMBER_WEIGHT)
                result = fit(member, _MEMBER_WEIGHT)
            rankings.append(result.ranking)
            scores.append(result.scores)
            fits += result.n_remaining.size
            not_converged += result.not_converged
        ranking, mean_scores, rank_sums = rfe_math.aggregate_rankings(rankings, scores)
        return rfe_math.EnsembleRFEResult(ranking, mean_scores, rank_sums, np.array(rankings), np.zeros((0, 0)),
                                          fits, not_converged), {}, {}
