"""Parzen-ISE unsupervised feature ranking (modified Parzen window, ISE criterion, fuzzy
c-means groups): :class:`ParzenISERanker`. The model and every choice: ``docs/parzen_ise.md``."""

from __future__ import annotations

import math

import numpy as np
from pyspark.ml.param import Param, TypeConverters

from sparkfs.core.options import ParzenISEOptions
from sparkfs.core.parzen_ise_marginal import RANKINGS
from sparkfs.core.parzen_ise_options import (
    CRITERIA,
    DEFAULT_CRITERION,
    DEFAULT_PAIR_BUDGET,
    DEFAULT_RANK_BY,
    MIN_DEFAULT_SAMPLE,
)
from sparkfs.core.parzen_ise_sparse import sparse_pair_plan
from sparkfs.errors import InvalidInputError
from sparkfs.selectors._base import CHOOSE_SAMPLE, FeatureSelector, FeatureSelectorModel, PreparedInput, ScoreResult
from sparkfs.selectors._params import (
    MAX_BLOCK_SIZE,
    MAX_CLUSTERS,
    MAX_PASS_ITERATIONS,
    HasDriverBudget,
    HasQueryBatchBytes,
    UpperBound,
    declare,
    in_range,
    is_int,
    keyword_constructor,
    one_of,
)
from sparkfs.spark.parzen_ise import parzen_ise_on_sample, parzen_ise_statistics
from sparkfs.spark.parzen_ise_sparse import (
    SPARSE_FEATURE_ROWS,
    SPARSE_LANDMARKS,
    SPARSE_PAIR_BUDGET,
    SparsePairSettings,
    feature_nonzero_counts,
    stores_sparse,
)

#: The sparse pair sums' budget, cap and landmarks (marginal criterion on sparse vectors, sampleSize and
#: landmarks unset): every row when the plan's pairs are within the budget (docs/parzen_ise.md).
SPARSE_SETTINGS = SparsePairSettings()


def default_sparse_plan(counts, n_rows: int):
    """The sparse pair plan of the default on these non-zero counts (:data:`SPARSE_SETTINGS`)."""
    return sparse_pair_plan(counts, n_rows, pair_budget=SPARSE_SETTINGS.pair_budget,
                            feature_rows=SPARSE_SETTINGS.feature_rows, landmarks=SPARSE_SETTINGS.landmarks)


def _held_out(value):
    """'auto', 'none' or a feature index (an int is kept as its decimal string)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    return TypeConverters.toString(value)


def _is_held_out(value) -> bool:
    return value in ("auto", "none") or (isinstance(value, str) and value.isdigit())


class _ParzenISEParams(HasDriverBudget, HasQueryBatchBytes):
    criterion: Param = declare("criterion", "reading of the paper's ISE (docs/parzen_ise.md, section 0): "
                               "'marginal' (fixed windows, feature by feature) or 'image' (q is p shrunk by w)",
                               TypeConverters.toString, default=DEFAULT_CRITERION, constraint=one_of(*CRITERIA))
    rankBy: Param = declare("rankBy", "how the marginal optimum ranks the features (docs/parzen_ise.md, section 0): "
                            "'multipliers' (positive weights by weight, then the zero weights by their KKT reduced "
                            "gradient), 'weights' (the weights only; the zeros tie) or 'reference' (each feature's ISE "
                            "decrease at the equal weight); criterion='image' ranks by weight", TypeConverters.toString,
                            default=DEFAULT_RANK_BY, constraint=one_of(*RANKINGS))
    groups: Param = declare("groups", "'auto' (the classes when the label column exists, else clusters), 'labels' "
                            "or 'clusters' (fuzzy c-means, also on labelled data)", TypeConverters.toString,
                            default="auto", constraint=one_of("auto", "labels", "clusters"))
    numClusters: Param = declare("numClusters", "clusters C of fuzzy c-means", TypeConverters.toInt,
                                 default=3, constraint=in_range(1, MAX_CLUSTERS, kind="an int"))
    fuzzifier: Param = declare("fuzzifier", "m of fuzzy c-means (> 1)", TypeConverters.toFloat,
                               default=2.0, constraint=in_range(1.0, low_open=True))
    memberships: Param = declare("memberships", "'hard' (each row in its largest-membership cluster) or 'soft' "
                                 "(memberships as mixture weights)", TypeConverters.toString,
                                 default="hard", constraint=one_of("hard", "soft"))
    windowWidth: Param = declare("windowWidth", "h of the Parzen window; unset = Silverman's rule (1-D for "
                                 "criterion='marginal', d-dimensional for 'image')",
                                 TypeConverters.toFloat, constraint=in_range(0.0, low_open=True))
    learningRate: Param = declare("learningRate", "first trial step of the descent (the paper's 0.1); "
                                  "criterion='image' only (the marginal reading takes Newton steps)",
                                  TypeConverters.toFloat, default=0.1, constraint=in_range(0.0, low_open=True))
    maxIter: Param = declare("maxIter", "descent steps at most", TypeConverters.toInt,
                             default=100, constraint=in_range(1, MAX_PASS_ITERATIONS, kind="an int"))
    tol: Param = declare("tol", "stop when no weight moves more than tol x the weights' spread", TypeConverters.toFloat,
                         default=1e-6, constraint=in_range(0.0))
    heldOutFeature: Param = declare("heldOutFeature", "feature held at weight 0: 'auto' (the paper's second strategy), "
                                    "'none', or its 0-based index", _held_out,
                                    default="auto", constraint=(_is_held_out, "'auto', 'none' or a feature index"))
    landmarks: Param = declare("landmarks", "rows sampled for the inner sums (every feature, dense pass); unset = "
                               "every row (on sparse vectors with criterion='marginal': every pair of every feature "
                               f"exact while the stored pairs sum_k m_k^2 <= {SPARSE_PAIR_BUDGET:.1e}, else the "
                               f"features with more than {SPARSE_FEATURE_ROWS} non-zeros estimated against "
                               f"{SPARSE_LANDMARKS} seeded rows, announced; docs/parzen_ise.md)",
                               TypeConverters.toInt, constraint=in_range(2, kind="an int"))
    sampleSize: Param = declare("sampleSize", "rows the whole fit runs on, drawn by `seed` and fitted on the driver; "
                                "unset = every row while rows x rows x features <= "
                                f"{DEFAULT_PAIR_BUDGET:.0e} (or landmarks is set, or, for criterion='marginal' on "
                                "sparse vectors, the sparse pair sums fit their budget), else the largest sample "
                                f"within that, at least {MIN_DEFAULT_SAMPLE} (announced); a value >= the rows uses "
                                "every row", TypeConverters.toInt, constraint=in_range(2, kind="an int"))
    seed: Param = declare("seed", "seed of the FCM start, the landmarks and the sample", TypeConverters.toInt,
                          default=0, constraint=is_int())
    varianceFloor: Param = declare("varianceFloor", "group variances floored at this share of the feature's variance",
                                   TypeConverters.toFloat, default=1e-6, constraint=in_range(0.0, low_open=True))
    fcmTol: Param = declare("fcmTol", "FCM stops when no centre moves more than this many feature stds",
                            TypeConverters.toFloat, default=1e-6, constraint=in_range(0.0))
    fcmMaxIter: Param = declare("fcmMaxIter", "FCM iterations at most", TypeConverters.toInt,
                                default=300, constraint=in_range(1, MAX_PASS_ITERATIONS, kind="an int"))
    rowIdCol: Param = declare("rowIdCol", "column of unique integer row ids; unset = row position",
                              TypeConverters.toString)
    blockSize: Param = declare("blockSize", "queries per batch and rows per kernel block", TypeConverters.toInt,
                               default=1024, constraint=in_range(1, MAX_BLOCK_SIZE, kind="an int"))
    _defaults = {"driverBudgetMB": 2048.0}

    def _optional(self, param):
        return self.getOrDefault(param) if self.isDefined(param) else None


class ParzenISERankerModel(FeatureSelectorModel, _ParzenISEParams):
    """Model of :class:`ParzenISERanker`: ``scores`` rank the features (``rankBy``: the final weights, or
    for 'multipliers' the positive weights and minus the reduced gradients of the zero weights)."""


@keyword_constructor
class ParzenISERanker(FeatureSelector, _ParzenISEParams):
    """Unsupervised feature ranking by a modified Parzen window and the ISE criterion.

    Groups are the classes (``groups='labels'``, or ``'auto'`` with a label column) or fuzzy
    c-means clusters; per-group diagonal Parzen windows give p(x); the weights w (w >= 0,
    sum 1, one feature held at 0) define q, the density of w * x; w minimises the integrated
    squared error between p and q and ranks the features. ``criterion`` picks the reading of the
    lost equations: ``'marginal'`` (default; fixed windows, ISE feature by feature, projected
    Newton steps) or ``'image'`` (the first reading built: q is p shrunk by w, projected gradient descent).
    Passes: column statistics, one per FCM iteration, two for the group variances, then one per
    query batch and ISE evaluation (O(N M d) each, M = N or ``landmarks``). See
    ``docs/parzen_ise.md``: neither reading meets every criterion of its section 0.
    """

    _model_class = ParzenISERankerModel
    _not_keywords = ("weightCol",)
    requires_labels = False

    def useWithoutLabels(self) -> None:
        """``groups='auto'`` becomes ``'clusters'``: no label column was named."""
        if self.getOrDefault(self.groups) == "auto":
            self.set(self.getParam("groups"), "clusters")

    def _uses_labels(self, dataset) -> bool:
        groups = self.getOrDefault(self.groups)
        present = self.getLabelCol() in dataset.columns
        if groups == "labels" and not present:
            raise InvalidInputError(f"groups='labels' but the label column '{self.getLabelCol()}' is not in the input; "
                                    f"columns are {dataset.columns}")
        return groups == "labels" or (groups == "auto" and present)

    def _row_sample(self, frame, n_rows: int, num_features: int):
        """(rows to fit on or None for every row, how it was chosen, the sparse pairs that did not fit or
        None): ``sampleSize`` when set; unset, every row when landmarks is set or n x n x d is within
        DEFAULT_PAIR_BUDGET, or, for the marginal criterion on sparse vectors, when the sparse pair
        plan (:func:`sparkfs.core.parzen_ise_sparse.sparse_pair_plan`, from one count pass) is within
        its budget; else the largest sample within DEFAULT_PAIR_BUDGET (at least MIN_DEFAULT_SAMPLE)."""
        if self.isDefined(self.sampleSize):
            size = self.getOrDefault(self.sampleSize)
            return (None if size >= n_rows else size), "sampleSize", None
        if self.isDefined(self.landmarks) or n_rows * n_rows * num_features <= DEFAULT_PAIR_BUDGET:
            return None, "every row", None
        sparse_pairs = None
        if self.getOrDefault(self.criterion) == "marginal" and stores_sparse(frame, self.getFeaturesCol()):
            plan = default_sparse_plan(feature_nonzero_counts(frame, self.getFeaturesCol()), n_rows)
            if plan.pairs <= SPARSE_SETTINGS.pair_budget:
                return None, "every row", None
            sparse_pairs = plan.pairs
        size = max(MIN_DEFAULT_SAMPLE, math.isqrt(DEFAULT_PAIR_BUDGET // max(num_features, 1)))
        return (None, "every row", None) if size >= n_rows else (size, "default", sparse_pairs)

    def _fit_rows(self, frame, label_col, num_features, num_classes, n_rows, options: ParzenISEOptions):
        """The Spark fit over every row, or the fit on a row sample on the driver (announced)."""
        sample, rule, sparse_pairs = self._row_sample(frame, n_rows, num_features)
        engine = self._engine_options()
        if sample is None:
            result = parzen_ise_statistics(frame, self.getFeaturesCol(), label_col, num_features=num_features,
                                           num_classes=num_classes, options=options, engine=engine,
                                           sparse_pairs=SPARSE_SETTINGS)
            self._announce_estimate(result.info.get("sparse_pairs"), n_rows, rule)
            return result, rule
        if rule == "default":
            situation = (f"every pair of the {n_rows:,} rows meets in each of the {num_features:,} features (rows x "
                         f"rows x features above {DEFAULT_PAIR_BUDGET:.0e})")
            if sparse_pairs is not None:
                situation += (f", and even the sparse pair sums take {sparse_pairs:.2e} pairs (above "
                              f"{SPARSE_SETTINGS.pair_budget:.1e})")
            self._warn_default_sample(type(self).__name__, situation, f"the fit runs on {sample:,} rows drawn", after=", on the driver", advice=CHOOSE_SAMPLE + " or landmarks to use every row", stacklevel=4)  # noqa: E501
        return parzen_ise_on_sample(frame, self.getFeaturesCol(), label_col, num_features=num_features,
                                    num_classes=num_classes, sample_size=sample, options=options,
                                    engine=engine), rule

    def _announce_estimate(self, sparse_pairs, n_rows: int, rule: str) -> None:
        """The warning of a sparse fit whose densest features were estimated by landmarks (sampleSize unset)."""
        if not sparse_pairs or not sparse_pairs["estimated_features"] or rule == "sampleSize":
            return
        self._warn_default_sample(
            type(self).__name__, f"every pair of the {n_rows:,} sparse rows would take more than "
            f"{SPARSE_SETTINGS.pair_budget:.1e} pair kernels", f"the pair sums of the "
            f"{sparse_pairs['estimated_features']:,} features with more than {SPARSE_SETTINGS.feature_rows:,} "
            f"non-zero values are estimated against {sparse_pairs['landmarks']:,} landmark rows drawn",
            after=f" (scaled by rows / landmarks; the other {sparse_pairs['exact_features']:,} features take every "
            f"pair)", advice=CHOOSE_SAMPLE + " for an exact fit on a sample", stacklevel=5)

    def _data_bounds(self, shape):
        """numClusters within the rows (fuzzy c-means groups, when no labels are used)."""
        if shape.num_classes > 0:
            return []
        return [UpperBound("numClusters", self.getOrDefault(self.numClusters), shape.n_rows,
                           f"fuzzy c-means makes at most one cluster per row; the input has {shape.n_rows:,} rows")]

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        held_out = self.getOrDefault(self.heldOutFeature)
        num_features = prepared.num_features
        if held_out.isdigit() and int(held_out) >= num_features:
            raise ValueError(f"The 'heldOutFeature' parameter of {type(self).__name__} must be 'auto', 'none' or a "
                             f"feature index in [0, {num_features - 1}]. Got {held_out!r} instead.")
        options = ParzenISEOptions(
            num_clusters=self.getOrDefault(self.numClusters), m=self.getOrDefault(self.fuzzifier),
            memberships=self.getOrDefault(self.memberships), h=self._optional(self.windowWidth),
            learning_rate=self.getOrDefault(self.learningRate), max_iter=self.getOrDefault(self.maxIter),
            tol=self.getOrDefault(self.tol), fixed_feature=int(held_out) if held_out.isdigit() else
            (None if held_out == "none" else "auto"), landmarks=self._optional(self.landmarks),
            seed=self.getOrDefault(self.seed), variance_floor=self.getOrDefault(self.varianceFloor),
            fcm_tol=self.getOrDefault(self.fcmTol), fcm_max_iter=self.getOrDefault(self.fcmMaxIter),
            block_size=self.getOrDefault(self.blockSize), criterion=self.getOrDefault(self.criterion),
            rank_by=self.getOrDefault(self.rankBy))
        labels, counts = list(prepared.label_values), [int(c) for c in prepared.class_counts]
        if prepared.label_col is not None:
            result, sample_rule = self._fit_rows(prepared.indexed, prepared.label_col, num_features,
                                                 prepared.num_classes, prepared.n_rows, options)
        else:
            result, sample_rule = self._fit_rows(prepared.dataset, None, num_features, None, prepared.n_rows, options)
        last = result.info["runs"][-1]
        info = {"method": "parzen-ise", "criterion": result.info["criterion"],
                "rank_by": options.rank_by if result.info["criterion"] == "marginal" else "weights",
                "groups": result.groups,
                "held_out_feature": result.info["fixed_feature"],
                "window_width": float(result.info["h"]), "num_queries": int(result.info["num_queries"]),
                "descent_runs": [{"held_out_feature": run["fixed_feature"], "iterations": int(run["iterations"]),
                                  "evaluations": int(run["evaluations"]), "stop": run["stop"],
                                  "weight_spread": float(run["weight_spread"])} for run in result.info["runs"]],
                "passes": int(result.info["passes"]), "row_sample": sample_rule,
                "sample_rows": int(result.info.get("sample_rows", result.n_rows))}
        if "sparse_pairs" in result.info:  # the sparse pass: exact and landmark-estimated features
            info["sparse_pairs"] = dict(result.info["sparse_pairs"])
        if "ise_relative_standard_error" in last:
            info["ise_relative_standard_error"] = float(last["ise_relative_standard_error"])
        if result.groups == "fcm":
            info["fcm"] = {"clusters": int(options.num_clusters), "iterations": int(result.info["fcm"]["iterations"]),
                           "converged": bool(result.info["fcm"]["converged"])}
        return ScoreResult(scores=result.scores, label_values=list(labels), class_counts=list(counts),
                           n_rows=result.n_rows, info=info)
