"""Fisher-Markov selector (Cheng, Zhou & Cheng): LFS (degree 1) and QFS / QFS' (degree 2) on Spark."""

from __future__ import annotations

import math
import warnings

import numpy as np
from pyspark.ml.param import Param, TypeConverters

from sparkfs.core.count_selection import select_by_count
from sparkfs.core.fisher_markov import affine_class_moments, markov_coefficients
from sparkfs.core.qfs import (
    check_driver_budget,
    gamma_max_exact,
    pairwise_markov_coefficients,
    rescale_gram_statistics,
    solve_qfs,
    unary_markov_coefficients,
)
from sparkfs.core.scaling import MIN_MAGNITUDE, feature_scaling, sample_std
from sparkfs.core.selection import forced_first
from sparkfs.core.univariate import underflowing_squares
from sparkfs.errors import InvalidInputError, PrecisionWarning
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, ScoreResult, check_supervised
from sparkfs.selectors._params import (
    HasPreset,
    HasScaling,
    HasStatsEngine,
    declare,
    in_range,
    keyword_constructor,
    one_of,
)
from sparkfs.spark.stats import class_moments_counting_labels, rescaled_class_moments, with_label_index

#: QFS candidates when ``candidates`` is unset: this many, or the features a count rule asks for
#: when that is more and its Gram statistics stay within DEFAULT_GRAM_TASK_BYTES per task.
DEFAULT_CANDIDATES = 500
#: Largest (classes + 1) x candidates^2 doubles a task of the Gram pass accumulates when
#: ``candidates`` is unset (the tasks' sums are reduced tile by tile on the executors, so only the
#: final statistics reach the driver, bounded by driverMemoryMB): on the 100,000 x 50,000 term
#: matrix (20 classes) 1,000 candidates take 160 MiB per task; 2,000 took a Python worker to 3.5 GB.
DEFAULT_GRAM_TASK_BYTES = 256 * 2**20
#: The scaling each preset gives when ``scaling`` is not set. Why "standard" by default: on
#: term matrices the paper's gamma = -0.5 on raw values rewards a term's frequency (theta_j =
#: between-class spread - gamma * total spread), so frequent terms win and LFS ranks near chance;
#: on standardised features its ranking is anova's. Measured on every shared set in
#: benchmarks/results/lfs_scaling.md (docs/results.md says what it changes on the paper's tables).
PRESET_SCALING = {"default": "standard", "paper": "none"}


def _to_gamma(value):
    """gamma is a float, or "auto" (QFS: the largest gamma of Corollary IV.5)."""
    if isinstance(value, str) and value.strip().lower() == "auto":
        return "auto"
    return TypeConverters.toFloat(value)


class _FisherMarkovParams(HasScaling, HasStatsEngine, HasPreset):
    degree: Param = declare(
        "degree", "polynomial kernel degree: 1 = LFS (eq. 19-20), 2 = QFS (eq. 27-31)",
        TypeConverters.toInt, default=1, constraint=(lambda v: v in (1, 2), "an int among {1, 2}"))
    kernel: Param = declare(
        "kernel", "degree 2 only: 'qfs' (k_2 = (1 + <x,y>)^2, eq. 27) or 'qfs-prime' (k'_2 = <x,y>^2, eq. 28)",
        TypeConverters.toString, default="qfs", constraint=one_of("qfs", "qfs-prime"))
    gamma: Param = declare(
        "gamma", "trade-off between discriminativeness and expressiveness in eq. (19); the paper uses -0.5. "
        "'auto' (degree 2): gamma_max_exact of Corollary IV.5, the largest gamma solved exactly",
        _to_gamma,
        default=-0.5, constraint=(lambda v: v == "auto" or (isinstance(v, float) and math.isfinite(v)),
                                  "a finite float or 'auto'"))
    center: Param = declare(
        "center", "degree 2: subtract the column means before the Gram pass (not in the paper; uncentred data "
        "tend to make QFS select all features or none)",
        TypeConverters.toBoolean, default=False)
    candidates: Param = declare(
        "candidates", "degree 2: QFS runs on the top `candidates` features by LFS theta (all when p is smaller); "
        "unset = "
        f"{DEFAULT_CANDIDATES}, or the features asked for when that is more (the summary's 'candidates_rule' says "
        "which)",
        TypeConverters.toInt, default=500, constraint=in_range(1, kind="an int"))
    driverMemoryMB: Param = declare(
        "driverMemoryMB", "degree 2: driver memory budget (MiB) for the p x p x (2 C + 3) doubles of the pairwise "
        "statistics at "
        "their peak; more candidates are refused",
        TypeConverters.toFloat, default=1024.0, constraint=in_range(0, low_open=True))
    _param_notes = {"preset": "Here: 'default' standardises each feature before theta (scaling='standard'), "
                              "'paper' takes the data as given (scaling='none'), as the paper's equations are "
                              "written; scaling set explicitly overrides it"}
    _defaults = {"scaling": "standard"}

    def scalingInUse(self) -> str:
        """``scaling`` when set explicitly, else the preset's (:data:`PRESET_SCALING`)."""
        if self.isSet(self.scaling):
            return self.getOrDefault(self.scaling)
        return PRESET_SCALING[self.getOrDefault(self.preset)]


class FisherMarkovSelectorModel(FeatureSelectorModel, _FisherMarkovParams):
    """Model of :class:`FisherMarkovSelector`.

    ``scores`` are the LFS Markov coefficients theta_j (eq. 19) of every feature. For degree 2 the
    selection is the QFS optimum over the candidates, which need not be the top-k by theta_j;
    ``summary`` holds its certificate (``certified_optimal``, ``optimality_gap``, ``gamma_max_exact``...).
    :meth:`selectionsForCounts` re-solves the QFS objective (kept on the fitted model, not saved)
    for each size, as a fit with that ``numFeatures`` would.
    """

    def selectionsForCounts(self, counts):
        """Degree 1: the top k by theta_j. Degree 2: for each k, the QFS selection a fit with
        ``numFeatures=k`` makes (the beta search of :func:`select_by_count` on the same
        objective), best theta_j first; when no beta gives exactly k features, the nearest
        reachable size (the rule of :func:`select_by_count`)."""
        if self.getOrDefault(self.degree) == 1:
            return super().selectionsForCounts(counts)
        counts = self._checked_counts(counts)
        objective = self._session_state.get("qfs_objective")
        if objective is None:
            raise ValueError("selectionsForCounts of a QFS model needs the QFS objective, which is kept only on a "
                             "model fitted in this session (it is not saved); refit the selector")
        candidates, unary, pairwise = objective
        too_many = [k for k in counts if k > candidates.size]
        if too_many:
            raise ValueError(f"selectionsForCounts: {too_many} exceed the QFS candidate set ({candidates.size} "
                             "features); raise 'candidates'")
        rank_of = np.empty(self.numInputFeatures, dtype=np.int64)
        rank_of[self.ranking] = np.arange(self.numInputFeatures)
        selections = {}
        for k in counts:
            chosen = candidates[np.asarray(select_by_count(unary, pairwise, k).selected, dtype=bool)]
            chosen = chosen[np.argsort(rank_of[chosen], kind="mergesort")]
            order = np.concatenate([chosen, self.ranking[~np.isin(self.ranking, chosen)]])
            keep = self.getKeptFeatures()  # kept first, excluded never: the fit's rule (_select)
            selections[k] = forced_first(order, keep, self.getExcludedFeatures(), max(chosen.size, len(keep)))
        return selections


@keyword_constructor
class FisherMarkovSelector(FeatureSelector, _FisherMarkovParams):
    """Fisher-Markov feature selector: LFS (degree 1) or QFS / QFS' (degree 2).

    LFS: theta_j (eq. 19) from per-class column sums and column sums of squares gathered in ONE
    pass; feature j is selected iff theta_j > beta (eq. 20, ``threshold``) or when it is among the
    top ``numFeatures`` by theta_j.

    QFS (Proposition IV.4): maximise sum_j (theta_j - beta) a_j + 1/2 sum_jl theta_jl a_j a_l over
    the candidate features (top ``candidates`` by LFS theta_j), with theta_jl of eq. (29) from the
    per-class Gram matrices and the Gram of squared values (a second pass, tree-reduced). Solved by
    an s-t minimum cut with a certificate of optimality when every theta_jl >= 0 (always the case
    for gamma <= gamma_max_exact, Corollary IV.5, which is >= 0); otherwise a cut of the relaxation
    improved by local search, reported as not certified. ``threshold`` is beta; ``numFeatures`` is
    met by a search on beta, and the summary says when that size is not reachable.

    Params (keywords of the constructor)
    ------------------------------------
    gamma : float or "auto", default -0.5
    threshold : float, optional
        beta of eq. (20) / (QFS).
    numFeatures : int, default 50
    weightCol : str, optional
        Per-instance weights: n, n_i and every sum become weighted.
    scaling : {"none", "range", "standard"}, default "standard" ("none" with ``preset="paper"``)
        Applied analytically to the one-pass statistics (:mod:`sparkfs.core.scaling`; "standard"
        divides by the sample std, ddof = 1, as Spark's Summarizer). The paper does not say how its
        data were scaled; its Synthetic-2 finding (x1, x2 first at gamma = -0.5) holds on
        [0, 1]-scaled data ("range") and not on raw data, where gamma = -0.5 rewards variance
        (theta_j = between-class variance - gamma * total variance). On term matrices raw values
        make frequent terms win (near chance on a tf-idf corpus); standardised, the ranking is
        anova's: hence the default (``benchmarks/results/lfs_scaling.md``).
    preset : {"default", "paper"}, default "default"
        The scaling when ``scaling`` is not set: "standard", or the paper's data as given ("none").
    degree, kernel, center, candidates, driverMemoryMB : see the Params.

    Notes
    -----
    Driver memory: O(C p) doubles for LFS; candidates^2 (2 C + 3) doubles for QFS at the peak
    (checked against ``driverMemoryMB`` before the Gram pass). Executors: each task of the Gram
    pass accumulates candidates^2 (C + 1) doubles; the tasks' sums are reduced tile by tile on the
    executors (:mod:`sparkfs.spark.tiled_sums`). Work: O(nnz) for LFS; O(n candidates^2) for QFS.
    ``scaling="standard"`` with ``weightCol`` adds one aggregation of the weight column (the sum of
    squared weights of the weighted sample std).
    Sparse vectors stay sparse (except in centred QFS, which densifies 4,096 rows at a time).
    """

    _model_class = FisherMarkovSelectorModel
    takes_weights = True
    _unset_keywords = ("scaling", "candidates")  # unset: the preset's scaling; QFS's candidates from the count

    def takesWeights(self) -> bool:
        """LFS (degree 1). QFS hands the weight column to its Gram pass too, but no test checks
        weighted QFS yet, so it is not announced as taking weights (`sparkfs methods`)."""
        return self.getOrDefault(self.degree) == 1

    def setGamma(self, value):
        return self._set(gamma=value)

    def setDegree(self, value: int):
        return self._set(degree=value)

    def validate_params(self) -> None:
        super().validate_params()
        if self.getOrDefault(self.degree) == 1 and self.getOrDefault(self.gamma) == "auto":
            raise ValueError("The 'gamma' parameter of FisherMarkovSelector may be 'auto' only with degree=2 (QFS).")

    def _score_in_one_pass(self, dataset) -> ScoreResult:
        """Not the shared preamble: the one moments pass counts the labels itself (and the
        fit refuses fewer than two classes after it), so LFS takes a single pass."""
        moments = class_moments_counting_labels(
            dataset, self.getFeaturesCol(), self.getLabelCol(), self._weight_col(),
            engine=self.statsEngineInUse(dataset), extremes=self.scalingInUse() != "none",
            check_labels=self._check_labels,
        )
        scaling = self.scalingInUse()
        moments = self._moments_in_square_range(dataset, moments, scaling)
        class_sums, class_sum_squares = moments.class_sums, moments.class_sum_squares
        offset = scale = None  # "none": no shift (QFS keeps sparse rows sparse), no rescaling
        if scaling != "none":
            offset, scale = self._feature_scaling(dataset, moments, scaling)
            class_sums, class_sum_squares = affine_class_moments(
                class_sums, moments.class_weights, class_sum_squares, offset, scale
            )
        gamma = self.getOrDefault(self.gamma)
        lfs_gamma = -0.5 if gamma == "auto" else gamma  # only the candidate ranking uses it
        theta = markov_coefficients(class_sums, moments.class_weights, class_sum_squares.sum(axis=0), lfs_gamma)
        result = ScoreResult(
            scores=moments.per_feature(theta),  # the float engine on wide vectors holds the ids that occur only
            label_values=moments.label_values,
            class_counts=moments.class_counts.tolist(),
            n_rows=moments.n_rows,
            info={"method": "lfs", "gamma": gamma, "scaling": scaling, "preset": self.getOrDefault(self.preset),
                  "stats_engine": moments.extra["engine"],
                  **({"rescaled_features": {str(k): v for k, v in moments.extra["rescaled"].items()}}
                     if moments.extra.get("rescaled") else {})},
        )
        if self.getOrDefault(self.degree) == 2:
            check_supervised(result, type(self).__name__)
            self._check_labels(result.label_values, result.class_counts)
            spread = [None if value is None else moments.per_feature(value) for value in (offset, scale)]
            self._solve_qfs(dataset, moments, result, *spread)
        return result

    def _moments_in_square_range(self, dataset, moments, scaling: str):
        """``moments`` with the features whose squares underflowed (values of 1e-170: theta 0 whatever
        they say) taken again times a power of two when ``scaling`` makes theta scale-free ('standard',
        'range': :func:`sparkfs.spark.stats.rescaled_class_moments`, one pass over those features);
        with ``scaling='none'`` theta keeps the unit, so they are named in a :class:`PrecisionWarning`.
        QFS's Gram pass multiplies the raw values: it refuses them."""
        underflowing = underflowing_squares(moments.class_counts, moments.class_sums, moments.class_sum_squares)
        if not underflowing.any():
            return moments
        named = [moments.feature_id(int(column)) for column in np.flatnonzero(underflowing)]
        shown = f"{named[:5]}{' and more' if len(named) > 5 else ''}"
        if self.getOrDefault(self.degree) == 2:
            raise InvalidInputError(
                f"{type(self).__name__}: feature(s) {shown} have values below {MIN_MAGNITUDE:.1e} in size, whose "
                "squares and products underflow float64, and QFS's Gram pass multiplies the values as given; "
                "multiply those columns by a power of ten first (or use lfs, which rescales them)")
        if scaling == "none":
            warnings.warn(PrecisionWarning(
                f"{type(self).__name__}: feature(s) {shown} have values below {MIN_MAGNITUDE:.1e} in size: with "
                "scaling='none' theta keeps their unit, of the order of their squares, which underflow float64, so "
                "they score about 0 whatever they say of the classes; scaling='standard' (the default) or 'range' "
                "scores them scale-free"), stacklevel=4)
            return moments
        return rescaled_class_moments(moments, dataset, self.getFeaturesCol(), self.getLabelCol(), self._weight_col(),
                                      engine=moments.extra["engine"], underflowing=underflowing)

    def _feature_scaling(self, dataset, moments, scaling: str):
        """Offset and scale of :func:`sparkfs.core.scaling.feature_scaling` from the one-pass moments.

        ``"standard"`` divides by the sample std (ddof = 1), Summarizer's. With ``weightCol`` its
        correction needs ``sum_u w_u^2``, which the moments do not hold: one more aggregation, over
        the weight column only, for that combination alone.
        """
        total_weight = float(moments.class_weights.sum())
        total_sums = moments.class_sums.sum(axis=0)
        mean = std = None
        if scaling == "standard":
            weight_square_sum = None
            weight_col = self._weight_col()
            if weight_col is not None:
                from pyspark.sql import functions as F

                weight = F.col(weight_col).cast("double")
                weight_square_sum = float(dataset.agg(F.sum(weight * weight)).first()[0])
            mean = total_sums / total_weight
            std = sample_std(total_weight, total_sums, moments.class_sum_squares.sum(axis=0),
                             weight_square_sum=weight_square_sum)
        return feature_scaling(scaling, minimum=moments.feature_min, maximum=moments.feature_max, mean=mean, std=std)

    def _candidate_count(self, num_features: int, num_classes: int):
        """(candidates, how they were chosen): ``candidates`` when set; unset, DEFAULT_CANDIDATES or
        the features a count rule asks for, whichever is larger. Refused here, before the Gram
        pass: candidates over ``driverMemoryMB``, or fewer than a count rule asks for.

        Why a bound on the default: with exactly k candidates the min-cut can only keep them all
        (QFS is then LFS's top k), but every task of the Gram pass accumulates (C + 1) p^2 doubles:
        on the 100,000 x 50,000 term matrix (20 classes) 2,000 candidates took a Python worker to
        3.5 GB and killed it, hence DEFAULT_GRAM_TASK_BYTES (a clear refusal instead). The driver
        receives the final statistics only (:mod:`sparkfs.spark.tiled_sums`), within driverMemoryMB."""
        budget = int(self.getOrDefault(self.driverMemoryMB) * 2**20)
        requested = None if self.isSet(self.threshold) else self.selectionCount(num_features)
        if self.isSet(self.candidates):
            count, rule = self.getOrDefault(self.candidates), "set"
        elif requested is not None and requested > DEFAULT_CANDIDATES:
            count, rule = requested, "the features asked for (QFS keeps them all: set candidates above it to choose)"
            task_bytes = 8 * (num_classes + 1) * min(count, num_features) ** 2
            if task_bytes > DEFAULT_GRAM_TASK_BYTES:
                raise ValueError(
                    f"numFeatures={requested} is more than the {DEFAULT_CANDIDATES} QFS candidates of the default, and "
                    f"{requested} candidates with {num_classes} classes make every task of the Gram pass hold "
                    f"{task_bytes / 2**20:.0f} MiB of statistics ((classes + 1) x candidates^2 doubles; the default "
                    f"allows {DEFAULT_GRAM_TASK_BYTES / 2**20:.0f} MiB): set candidates (at least {requested}; give "
                    f"the executors the memory with it), ask for at most {DEFAULT_CANDIDATES} features, or use lfs")
        else:
            count, rule = DEFAULT_CANDIDATES, f"{DEFAULT_CANDIDATES} (the default)"
        count = min(count, num_features)
        check_driver_budget(count, num_classes, budget, budget_name="driverMemoryMB (and spark.driver.memory with it)")
        if requested is not None and requested > count:
            asked = (f"numFeatures={requested}" if self.getSelectionMode() == "numTopFeatures" else
                     f"selectionMode='percentile' with selectionThreshold={self.getSelectionThreshold():g} "
                     f"({requested} of {num_features} features)")
            raise ValueError(f"{asked} is larger than the QFS candidate set (candidates={count}); raise "
                             f"'candidates' to at least {requested} or ask for fewer features")
        return count, rule

    def _solve_qfs(self, dataset, moments, result: ScoreResult, offset, scale) -> None:
        """Second pass (Gram statistics of the candidates) and the min-cut; fills ``result``."""
        from sparkfs.spark.gram import class_gram_statistics

        num_features, num_classes = moments.num_features, moments.num_classes
        kernel = self.getOrDefault(self.kernel)
        candidate_count, candidate_rule = self._candidate_count(num_features, num_classes)
        candidates = np.sort(np.argsort(-result.scores, kind="mergesort")[:candidate_count])

        shift = offset
        if self.getOrDefault(self.center):
            shift = moments.per_feature(moments.class_sums.sum(axis=0) / moments.class_weights.sum())
        indexed = with_label_index(dataset, self.getLabelCol(), moments.label_values, "__label_index")
        statistics = class_gram_statistics(
            indexed, self.getFeaturesCol(), "__label_index", num_classes, candidate_indices=candidates,
            weight_col=self._weight_col(), center=None if shift is None else shift[candidates],
            num_features=num_features, canonical=self.getDeterministic(),
        )
        if scale is not None:
            statistics = rescale_gram_statistics(statistics, scale[candidates])
        bound = gamma_max_exact(statistics.class_grams, statistics.class_counts, statistics.squared_gram)
        gamma = self.getOrDefault(self.gamma)
        if gamma == "auto":
            gamma = float(bound.gamma_max) if math.isfinite(bound.gamma_max) else 0.0
        unary = unary_markov_coefficients(statistics.class_sums, statistics.class_counts, statistics.class_grams,
                                          gamma, kernel)
        pairwise = pairwise_markov_coefficients(statistics.class_grams, statistics.class_counts,
                                                statistics.squared_gram, gamma)
        info = {"method": "qfs" if kernel == "qfs" else "qfs-prime", "gamma": gamma,
                "gamma_max_exact": bound.gamma_max, "candidates": int(candidate_count),
                "candidates_rule": candidate_rule,
                "centered": bool(self.getOrDefault(self.center)) or self.scalingInUse() == "standard"}
        if self.isSet(self.threshold):
            solution = solve_qfs(unary, pairwise, self.getThreshold())
        else:
            requested = self.selectionCount(num_features)  # numFeatures, or the percentile's share
            asked = (f"numFeatures={requested}" if self.getSelectionMode() == "numTopFeatures" else
                     f"selectionMode='percentile' with selectionThreshold={self.getSelectionThreshold():g} "
                     f"({requested} of {num_features} features)")
            if requested < 1:
                raise ValueError(f"{asked} selects no feature; raise selectionThreshold")
            search = select_by_count(unary, pairwise, requested)
            solution = search.solution
            info.update({"requested_features": requested, "requested_reachable": bool(search.reachable),
                         "nearest_sizes": [int(search.size_below), int(search.size_above)]})
        info.update({
            "beta": float(solution.beta),
            "objective": float(solution.objective),
            "upper_bound": float(solution.upper_bound),
            "optimality_gap": float(solution.optimality_gap),
            "certified_optimal": bool(solution.certified_optimal),
            "n_violating_pairs": int(solution.n_violating_pairs),
            "solver": solution.solver,
            "exactness": (
                "optimal: s-t min-cut with a max-flow certificate (gap <= 1e-9 relative)"
                if solution.certified_optimal else
                f"not certified: {int(solution.n_violating_pairs)} pair(s) with theta_jl < 0 make the problem "
                f"NP-hard; min-cut of a relaxation + local search, within optimality_gap of the optimum"
            ),
        })
        result.selected = candidates[np.asarray(solution.selected, dtype=bool)]
        result.info.update(info)
        result.session_state["qfs_objective"] = (candidates, unary, pairwise)
