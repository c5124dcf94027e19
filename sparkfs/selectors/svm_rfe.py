"""SVM-RFE (Guyon et al. 2002), its bootstrap ensemble and its instance-weighted form
(Han & Yu 2010) as a pyspark.ml Estimator.

Two solvers run the same elimination loop (:func:`sparkfs.core.svm_rfe.recursive_elimination`):

* ``"driver"``: the rows are collected and scikit-learn's ``LinearSVC`` (liblinear, hinge loss)
  fits every iteration on the driver -- fast for the n << d data RFE is usually run on;
* ``"spark"``: for data that do not fit the driver, the same SVM objective (liblinear's, intercept
  penalty included) minimised by L-BFGS on the driver with one pass over the rows per evaluation
  (:mod:`sparkfs.spark.svm_rfe`, :mod:`sparkfs.core.linear_svm`); its sums follow the canonical
  row order, so its scores are the same bits for any partitioning;
* ``"sparkml"``: pyspark.ml's ``LinearSVC`` on the sliced vectors (``regParam = 1 / (C sum s)``),
  faster on wide sparse data but equal across partitionings to rounding only.

``solver="auto"`` takes the driver when the rows fit ``driverBudgetMB`` (dense n x d doubles,
or the CSR size when smaller); the summary says which ran and why.

Scores are the elimination order (larger = eliminated later; the last survivor has the largest),
like scikit-learn's ``RFE.ranking_``; ``featureArray("ranking")`` holds the ranking itself (1 =
best). A single run also stores the weight path: ``weightPath`` gives, per SVM fit, the number
of remaining features and the normalised weights ``r_j = |w_j| / sum |w|`` (Han & Yu's view of
RFE as feature weighting).
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
from pyspark import keyword_only
from pyspark.ml.param import Param, Params, TypeConverters

from sparkfs.core import svm_rfe as rfe_math
from sparkfs.core.scaling import MAX_MAGNITUDE
from sparkfs.errors import InvalidInputError
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, ScoreResult
from sparkfs.selectors._params import MAX_ENSEMBLE, MAX_SOLVER_ITERATIONS, HasDriverBudget, UpperBound, in_range, one_of
from sparkfs.spark.blocks import arrow_vectors_to_matrix
from sparkfs.spark.instance_weighting import margin_instance_weights, with_instance_weights
from sparkfs.spark.row_values import labels_by_position, with_row_values
from sparkfs.spark.stats import diagnose_input, first_vector_size, label_counts, with_label_index
from sparkfs.spark.svm_rfe import spark_svm_rfe, sparkml_svm_rfe

_LABEL_INDEX = "__sparkfs_label_index"
_MARGIN_WEIGHT = "__sparkfs_margin_weight"
_BOOTSTRAP_COUNT = "__sparkfs_bootstrap_count"
_MEMBER_WEIGHT = "__sparkfs_member_weight"
#: Defaults of the solvers when maxIter / tol are unset.
SOLVER_DEFAULTS = {"driver": {"max_iter": 10_000, "tol": 1e-4}, "spark": {"max_iter": 100, "tol": 1e-6},
                   "sparkml": {"max_iter": 100, "tol": 1e-6}}
#: SVM fits a run may take (ensemble x the fits of one elimination): 100,000 fits of the default
#: elimination (a tenth per round: about 90 fits on 10,000 features) is an ensemble of 1,000.
MAX_SVM_FITS = 100_000


def _valid_step(value) -> bool:
    return (0.0 < value < 1.0) or (value >= 1.0 and float(value).is_integer())


def rfe_step(value: float):
    """The Param's float as the core's step: a share in (0, 1), else a whole number of features."""
    return float(value) if value < 1.0 else int(value)


class _SVMRFEParams(HasDriverBudget):
    step: Param = Param(Params._dummy(), "step", "share of the remaining features eliminated per iteration (0, 1), "
                        "rounded up, or a whole number of features >= 1", typeConverter=TypeConverters.toFloat)
    C: Param = Param(Params._dummy(), "C", "the linear SVM's C (scikit-learn's meaning)",
                     typeConverter=TypeConverters.toFloat)
    maxIter: Param = Param(Params._dummy(), "maxIter", "solver iterations per SVM fit; unset = 10,000 on the "
                           "driver (liblinear), 100 L-BFGS iterations on Spark", typeConverter=TypeConverters.toInt)
    tol: Param = Param(Params._dummy(), "tol", "solver tolerance; unset = 1e-4 on the driver, 1e-6 on Spark",
                       typeConverter=TypeConverters.toFloat)
    multiclass: Param = Param(Params._dummy(), "multiclass", "how one-vs-rest weights combine per feature: "
                              "'l2' (sqrt of the sum of squares) or 'l1'", typeConverter=TypeConverters.toString)
    ensemble: Param = Param(Params._dummy(), "ensemble", "number of bootstrap samples of En-SVM-RFE (rank sum); "
                            "1 = plain SVM-RFE", typeConverter=TypeConverters.toInt)
    seed: Param = Param(Params._dummy(), "seed", "seed of the bootstrap samples", typeConverter=TypeConverters.toInt)
    instanceWeighting: Param = Param(Params._dummy(), "instanceWeighting", "'none' or 'margin' (Han & Yu's "
                                     "eq. 7 weights, IW-SVM-RFE)", typeConverter=TypeConverters.toString)
    solver: Param = Param(Params._dummy(), "solver", "'auto' (driver or spark), 'driver' (scikit-learn), "
                          "'spark' (L-BFGS over distributed sums: the same bits for any partitioning) or 'sparkml' "
                          "(pyspark.ml LinearSVC: faster on wide sparse data, equal to rounding only)",
                          typeConverter=TypeConverters.toString)
    _param_constraints = {
        "step": (_valid_step, "a float in (0, 1) or a whole number >= 1"),
        "C": in_range(0.0, low_open=True),
        "maxIter": in_range(1, MAX_SOLVER_ITERATIONS, kind="an int"),
        "tol": in_range(0.0, low_open=True),
        "multiclass": one_of(*rfe_math.MULTICLASS),
        "ensemble": in_range(1, MAX_ENSEMBLE, kind="an int"),
        "seed": (lambda v: isinstance(v, int), "an int"),
        "instanceWeighting": one_of("none", "margin"),
        "solver": one_of("auto", "driver", "spark", "sparkml"),
    }

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(step=0.1, C=1.0, multiclass="l2", ensemble=1, seed=0, instanceWeighting="none",
                         solver="auto", driverBudgetMB=1024.0)


class SVMRFESelectorModel(FeatureSelectorModel, _SVMRFEParams):
    """Model of :class:`SVMRFESelector`."""

    @property
    def weightPath(self) -> Tuple[np.ndarray, np.ndarray]:
        """``(remaining, weights)``: per SVM fit the number of remaining features (T,) and the
        normalised weights (T, d), 0 once eliminated. Empty for an ensemble."""
        remaining = np.asarray(self._summary.get("rfe_remaining", []), dtype=np.int64)
        rows = [self._feature_arrays[f"path_{t:04d}"] for t in range(remaining.size)]
        return remaining, np.array(rows).reshape(remaining.size, self.numInputFeatures)


class SVMRFESelector(FeatureSelector, _SVMRFEParams):
    """Recursive feature elimination with a linear SVM (module notes).

    Accepts ``weightCol`` (instance weights) or ``instanceWeighting="margin"``, not both.
    """

    _model_class = SVMRFESelectorModel

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", outputCol="selected_features", weightCol=None,
                 numFeatures=None, threshold=None, step=0.1, C=1.0, maxIter=None, tol=None, multiclass="l2",
                 ensemble=1, seed=0, instanceWeighting="none", solver="auto", driverBudgetMB=1024.0,
                 allowManyClasses=False):
        super().__init__()
        self._set(**{name: value for name, value in self._input_kwargs.items() if value is not None})

    def _optional(self, param):
        return self.getOrDefault(param) if self.isDefined(param) else None

    def _column_summary(self, dataset, label_col: str):
        """One JVM pass: per-feature min, max and non-zero count. Bad values (NaN/inf, vectors of
        other sizes, null vectors) are diagnosed and named; values whose products overflow the
        SVM's float64 arithmetic are refused."""
        from pyspark.ml.stat import Summarizer
        from pyspark.sql import functions as F

        features_col = self.getFeaturesCol()
        try:
            row = dataset.select(Summarizer.metrics("min", "max", "mean", "numNonZeros").summary(F.col(features_col))
                                 .alias("s")).first()["s"]
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
        largest = np.maximum(np.abs(minimum), np.abs(maximum))
        if np.any(largest > MAX_MAGNITUDE):
            feature = int(np.argmax(largest))
            raise InvalidInputError(
                f"feature {feature} has values up to {largest[feature]:.3g}: the linear SVM multiplies values, which "
                f"overflows float64 beyond {MAX_MAGNITUDE:.0e}; rescale the data (e.g. to [0, 1]) first")
        return float(row["numNonZeros"].toArray().sum())

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

    def _data_bounds(self, shape):
        """ensemble x (SVM fits of one elimination on these features) within MAX_SVM_FITS."""
        fits = rfe_math.elimination_rounds(shape.num_features, rfe_step(self.getOrDefault(self.step)))
        return [UpperBound("ensemble", self.getOrDefault(self.ensemble), max(1, MAX_SVM_FITS // fits),
                           f"each bootstrap sample runs a whole elimination, {fits:,} SVM fits on "
                           f"{shape.num_features:,} features with step={self.getOrDefault(self.step):g}, and a run "
                           f"takes at most {MAX_SVM_FITS:,} fits")]

    def _compute_scores(self, dataset) -> ScoreResult:
        labels, counts = label_counts(dataset, self.getLabelCol())
        if not labels:
            raise InvalidInputError("the input has no rows")
        if len(labels) < 2:
            return ScoreResult(scores=np.zeros(0), label_values=labels, class_counts=counts.tolist(),
                               n_rows=int(counts.sum()))
        self._check_labels(labels, counts)
        weighting = self.getOrDefault(self.instanceWeighting)
        if weighting == "margin" and self._weight_col():
            raise ValueError("SVMRFESelector takes either weightCol or instanceWeighting='margin', not both")
        num_features = first_vector_size(dataset, self.getFeaturesCol())
        self._check_data_bounds(int(counts.sum()), counts, num_features)
        nonzeros = self._column_summary(dataset, self.getLabelCol())
        n_rows = int(counts.sum())
        data = with_label_index(dataset, self.getLabelCol(), labels, _LABEL_INDEX)
        weight_col = self._weight_col()
        info = {"method": "svm-rfe", "step": self.getOrDefault(self.step), "C": self.getOrDefault(self.C),
                "ensemble": self.getOrDefault(self.ensemble), "instance_weighting": weighting}
        if weighting == "margin":
            weights = margin_instance_weights(data, self.getFeaturesCol(), _LABEL_INDEX, num_features=num_features,
                                              num_classes=len(labels))
            data = with_instance_weights(data, weights, _MARGIN_WEIGHT)
            weight_col = _MARGIN_WEIGHT
            info["instance_weight_range"] = [float(weights.weights.min()), float(weights.weights.max())]
        solver, reason = self._solver(n_rows, num_features, nonzeros)
        info.update(solver=solver, solver_reason=reason)
        defaults = SOLVER_DEFAULTS[solver]
        options = dict(step=rfe_step(self.getOrDefault(self.step)), C=self.getOrDefault(self.C),
                       max_iter=self._optional(self.maxIter) or defaults["max_iter"],
                       tol=self._optional(self.tol) or defaults["tol"], multiclass=self.getOrDefault(self.multiclass))
        if solver == "driver":
            result, feature_arrays, extra = self._on_driver(data, weight_col, num_features, len(labels), options)
        else:
            result, feature_arrays, extra = self._on_spark(data, weight_col, num_features, len(labels), options, solver)
        info.update(extra)
        return ScoreResult(scores=result.scores, label_values=labels, class_counts=counts.tolist(), n_rows=n_rows,
                           info=info, feature_arrays={"ranking": result.ranking, **feature_arrays})

    @staticmethod
    def _path_arrays(result) -> Tuple[dict, dict]:
        arrays = {f"path_{t:04d}": row for t, row in enumerate(result.weight_path)}
        return arrays, {"rfe_remaining": [int(v) for v in result.n_remaining]}

    def _on_driver(self, data, weight_col: Optional[str], num_features: int, num_classes: int, options):
        columns = [self.getFeaturesCol(), _LABEL_INDEX] + ([weight_col] if weight_col else [])
        table = data.select(*columns).toArrow()
        matrix = arrow_vectors_to_matrix(table.column(self.getFeaturesCol()), num_features)
        labels = table.column(_LABEL_INDEX).to_numpy(zero_copy_only=False).astype(np.int64)
        weights = table.column(weight_col).to_numpy(zero_copy_only=False).astype(float) if weight_col else None
        ensemble = self.getOrDefault(self.ensemble)
        if ensemble > 1:
            result = rfe_math.ensemble_svm_rfe(matrix, labels, ensemble=ensemble, seed=self.getOrDefault(self.seed),
                                               sample_weight=weights, **options)
            return result, {}, {}
        result = rfe_math.svm_rfe(matrix, labels, sample_weight=weights, **options)
        arrays, extra = self._path_arrays(result)
        return result, arrays, extra

    def _on_spark(self, data, weight_col: Optional[str], num_features: int, num_classes: int, options, solver: str):
        from pyspark.sql import functions as F

        def fit(frame, weights):
            solve = spark_svm_rfe if solver == "spark" else sparkml_svm_rfe
            return solve(frame, self.getFeaturesCol(), _LABEL_INDEX, num_features=num_features,
                                 num_classes=num_classes, weight_col=weights,
                                 driver_budget_mb=self.getOrDefault(self.driverBudgetMB), **options)

        ensemble = self.getOrDefault(self.ensemble)
        if ensemble == 1:
            result = fit(data, weight_col)
            arrays, extra = self._path_arrays(result)
            return result, arrays, extra
        labels, offsets = labels_by_position(data, _LABEL_INDEX)
        rng = np.random.default_rng(self.getOrDefault(self.seed))
        rankings, scores = [], []
        for _ in range(ensemble):
            drawn = rfe_math.stratified_bootstrap(labels, rng)
            multiplicity = np.bincount(drawn, minlength=labels.size).astype(float)
            member = with_row_values(data, np.arange(labels.size), multiplicity, _BOOTSTRAP_COUNT,
                                     partition_offsets=offsets, what="bootstrap count")
            if weight_col:
                member = member.withColumn(_MEMBER_WEIGHT, F.col(_BOOTSTRAP_COUNT) * F.col(weight_col))
            else:
                member = member.withColumnRenamed(_BOOTSTRAP_COUNT, _MEMBER_WEIGHT)
            result = fit(member, _MEMBER_WEIGHT)
            rankings.append(result.ranking)
            scores.append(result.scores)
        ranking, mean_scores, rank_sums = rfe_math.aggregate_rankings(rankings, scores)
        return rfe_math.EnsembleRFEResult(ranking, mean_scores, rank_sums, np.array(rankings), np.zeros((0, 0))), {}, {}
