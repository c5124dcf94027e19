"""The Relief family on Spark: Relief, ReliefF, MAP-Relief and Parzen-Relief (Yang & Hu 2012)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
from pyspark.ml.param import Param, TypeConverters

from sparkfs.core.options import ReliefOptions
from sparkfs.core.relief import CONTINUOUS_VARIANTS, NEIGHBOUR_VARIANTS
from sparkfs.core.relief import METRICS as RELIEF_METRICS
from sparkfs.core.relief import VARIANTS as RELIEF_VARIANTS
from sparkfs.errors import InvalidInputError, LargeWorkWarning
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, PreparedInput, ScoreResult
from sparkfs.selectors._params import (  # noqa: F401 (DEFAULT_QUERY_SAMPLE: public here)
    DEFAULT_QUERY_SAMPLE,
    HasDriverBudget,
    HasLabelType,
    HasPreset,
    HasQueryBatchBytes,
    HasQueryRows,
    HasScaling,
    InputShape,
    declare,
    in_range,
    keyword_constructor,
    neighbour_bounds,
    one_of,
)
from sparkfs.spark.relief import relief_statistics
from sparkfs.spark.target_moments import target_spread


def _label_text(value) -> str:
    """A label as the user wrote it (2.0 -> '2')."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _to_sigma(value):
    """sigma: a positive float, or one positive float per feature."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return [TypeConverters.toFloat(v) for v in value]
    return TypeConverters.toFloat(value)


def _valid_sigma(value) -> bool:
    values = value if isinstance(value, list) else [value]
    return len(values) > 0 and all(np.isfinite(v) and v > 0 for v in values)


class _ReliefParams(HasQueryRows, HasScaling, HasDriverBudget, HasQueryBatchBytes, HasPreset, HasLabelType):
    variant: Param = declare(
        "variant",
        "'relief' (margin of eq. 3, I-Relief for multi-class), 'relieff' (Kononenko), 'mrelief' (MAP-Relief, "
        "eq. 16) or 'prelief' (Parzen-Relief, eq. 14)", TypeConverters.toString,
        default="relieff", constraint=one_of(*RELIEF_VARIANTS))
    k: Param = declare("k", "nearest hits and misses per query (per other class for relieff)", TypeConverters.toInt,
                       default=10, constraint=in_range(1, kind="an int"))
    sigma: Param = declare("sigma",
                           "prelief bandwidth (scaled units), scalar or one per feature; unset = 0.01 x the range "
                           "of each scaled feature (the paper's 0.01 on [0, 1]-scaled data)", _to_sigma,
                           constraint=(_valid_sigma, "a positive float or a list of positive floats"))
    _param_notes = {
        "preset": "Here: 'default' chooses metric and scaling from the data when neither is set (relief, relieff, "
                  "mrelief): on term-like data (no negative value, at most 10% non-zero) metric='cosine', "
                  "scaling='none', else 'euclidean' and 'range' (the summary's distance_rule says which); 'paper' "
                  "keeps 'euclidean' and 'range'",
        "metric": "With preset='default' and neither metric nor scaling set, 'cosine' on term-like data (see preset)",
        "scaling": "With preset='default' and neither metric nor scaling set, 'none' on term-like data (see preset)",
    }
    _param_constraints = {"metric": one_of(*RELIEF_METRICS)}
    _defaults = {"metric": "euclidean", "scaling": "range", "driverBudgetMB": 2048.0}

    def distanceFromData(self) -> bool:
        """Whether the fit chooses ``metric`` and ``scaling`` from the data: ``preset="default"``,
        neither set explicitly, a neighbour variant (:func:`sparkfs.core.relief.default_distance`:
        cosine and no scaling on term-like data, else the defaults euclidean and range)."""
        return (self.getOrDefault(self.preset) == "default" and not self.isSet(self.metric)
                and not self.isSet(self.scaling) and self.getOrDefault(self.variant) in NEIGHBOUR_VARIANTS)


#: Neighbour tables above this size are announced before the search (LargeWorkWarning).
LARGE_TABLE_BYTES = 128 * 2**20


class ReliefSelectorModel(FeatureSelectorModel, _ReliefParams):
    """Model of :class:`ReliefSelector`: ``scores`` are the mean margins; ``featureArray("weights")``
    the normalised positive part (eq. 4)."""

    @property
    def weights(self) -> np.ndarray:
        return self.featureArray("weights")


@keyword_constructor
class ReliefSelector(FeatureSelector, _ReliefParams):
    """Relief-family selector: features ranked by their mean margin over the query instances.

    Variants (Yang & Hu 2012; the formulas are in :mod:`sparkfs.core.relief`):

    * ``relief``: m_n = |x_n - M(x_n)| - |x_n - H(x_n)|, nearest miss among all other classes
      (the I-Relief margin for multi-class); with k > 1 each term is the mean of |x_n - neighbour|
      over the k nearest (additive across partitions; Relief = ReliefF on binary data).
    * ``relieff``: Kononenko's ReliefF, k hits and k misses of each other class c weighted by
      P(c) / (1 - P(y_n)).
    * ``mrelief``: MAP-Relief, m_n = P(y_n)|x_n - M(x_n)| - (1 - P(y_n))|x_n - H(x_n)| (eq. 16).
    * ``prelief``: Parzen-Relief (eq. 14), per-feature Gaussian kernel means; no neighbour search.

    ``scores`` = mean margin; ``weights`` = (mean margin)^+ / ||(mean margin)^+||_2 (eq. 4).
    ``weightCol`` (relieff only): instance-weighted ReliefF, :mod:`sparkfs.core.relief` note 8.

    ``scaling`` (default ``"range"``, Kononenko's diff) divides every feature by the divisor of
    :mod:`sparkfs.core.scaling` before the search and the margins (``"standard"``: the sample std,
    ddof = 1); margins are differences, so the offset plays no part. ``metric="cosine"`` then
    divides every row by its Euclidean norm: neighbours by cosine similarity, margins on unit rows.

    ``preset="default"`` (the neighbour variants, neither ``metric`` nor ``scaling`` set) chooses the
    distance from the column statistics of the fit's first pass: on term-like data (no negative
    value, at most 10 % of the values non-zero) ``metric="cosine"``, ``scaling="none"``; else
    ``"euclidean"`` and ``"range"``. The summary's ``distance_rule`` says which and why. On the five
    shared text sets a linear SVM on ReliefF's top 100 is then within 0.009 of anova's, against up
    to 0.17 behind with range scaling (benchmarks/results/relief_text.md). ``preset="paper"`` keeps
    Euclidean distances on range-scaled features whatever the data.

    Notes
    -----
    Neighbours are found by a blocked distance computation against broadcast query batches and
    merged in a fixed order: no n x n matrix, sparse rows stay sparse. With every row as a
    query (``sampleSize`` >= n, or unset with n <= :data:`DEFAULT_QUERY_SAMPLE`) the data are
    collected to the driver once to be broadcast: use a sample for large n (above ``driverBudgetMB``,
    default 2048, the fit is refused before any pass). Ties are broken by row id (``rowIdCol``, else
    the row position).
    """

    _model_class = ReliefSelectorModel
    takes_weights = True  # with variant='relieff' only (takesWeights)
    _unset_keywords = ("metric", "scaling")  # unset (preset 'default'): chosen from the data
    weights_array = "weights"

    def setVariant(self, value: str):
        return self._set(variant=value)

    def _optional(self, param):
        return self.getOrDefault(param) if self.isDefined(param) else None

    def _data_bounds(self, shape):
        """k (unused by prelief) within the rows, and the neighbour table within driverBudgetMB."""
        if self.getOrDefault(self.variant) == "prelief":
            return []
        sample = self._query_sample_rule(shape.n_rows)[0]
        queries = shape.n_rows if sample is None else min(sample, shape.n_rows)  # a sample above n is every row
        if self._continuous_label():  # a continuous target: two classes per query, its hits and misses
            shape = InputShape(shape.n_rows, (0, 0), shape.num_features)
        return neighbour_bounds(self.getOrDefault(self.k), queries, shape, self.getDriverBudgetMB())

    def takesContinuousLabels(self) -> bool:
        """relief and relieff take a regression target (core.relief note 9); MAP- and Parzen-Relief
        need class priors."""
        return self.getOrDefault(self.variant) in CONTINUOUS_VARIANTS

    def _check_fit_params(self) -> None:
        if self.getLabelType() == "continuous" and not self.takesContinuousLabels():
            raise ValueError(f"{type(self).__name__} variant={self.getOrDefault(self.variant)!r} needs class priors; "
                             f"with labelType='continuous' use variant 'relief' or 'relieff'")

    def takesWeights(self) -> bool:
        return self.getOrDefault(self.variant) == "relieff"

    def _weights_refusal(self):
        if not self._weight_col() or self.takesWeights():
            return None
        return (f"{type(self).__name__} supports weightCol with variant='relieff' only (instance-weighted "
                f"ReliefF); variant {self.getOrDefault(self.variant)!r} does not take instance weights")

    def _check_class_counts(self, label_values, class_counts) -> None:
        single = [label for label, count in zip(label_values, class_counts) if count == 1]
        if single:
            raise InvalidInputError(
                f"class {_label_text(single[0])} has a single row: a query of it has no other row of its class "
                f"(no nearest hit); remove it or merge it with another class"
            )

    def _options(self, sample_size) -> ReliefOptions:
        """The method's options, built once from the Params (checked there)."""
        sigma = self._optional(self.sigma)
        return ReliefOptions(
            variant=self.getOrDefault(self.variant), k=self.getOrDefault(self.k), metric=self.getOrDefault(self.metric),
            scaling=self.getOrDefault(self.scaling), sample_size=sample_size, seed=self.getOrDefault(self.seed),
            sigma=tuple(sigma) if isinstance(sigma, list) else sigma, block_size=self.getOrDefault(self.blockSize),
            distance_from_data=self.distanceFromData(), label_type=self.labelTypeInUse())

    def _announce_a_large_table(self, queries: int, num_classes: int) -> None:
        """Warn (:class:`LargeWorkWarning`) when the neighbour table (queries x classes x k ids and
        distances, within driverBudgetMB) is above :data:`LARGE_TABLE_BYTES`: every task builds one for
        its rows and the driver merges them, so the run holds several times its size (ReliefF with
        2,000 classes and 1,000 queries: a 305 MiB table, 4.9 GB across the processes here)."""
        if self.getOrDefault(self.variant) not in NEIGHBOUR_VARIANTS:
            return
        k = self.getOrDefault(self.k)
        size = 16 * queries * num_classes * k
        if size > LARGE_TABLE_BYTES:
            warnings.warn(f"{type(self).__name__}: the neighbour table of {queries:,} queries x {num_classes:,} "
                          "classes "
                          f"x k={k} neighbours takes {size / 2**20:,.0f} MiB, built in every task and merged on the "
                          "driver (several times that in memory); a smaller sampleSize or k lowers it",
                          LargeWorkWarning, stacklevel=3)

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        labels, label_col, hit_bound = prepared.label_values, prepared.label_col, None
        if self._continuous_label():  # one pass over the label: refusals, the rows and note 9's bound
            label_col = self.getLabelCol()
            n_rows, hit_bound = target_spread(prepared.dataset, label_col)
            prepared = replace(prepared, indexed=prepared.dataset, n_rows=n_rows)
        n_rows, num_classes = int(prepared.n_rows), 2 if hit_bound is not None else len(labels)
        sample_size, sample_rule = self._query_sample_rule(n_rows)
        if sample_rule == "default":
            self._warn_default_sample(
                f"{type(self).__name__} ({self.getOrDefault(self.variant)})", f"the input has {n_rows:,} rows",
                f"{sample_size:,} query rows were drawn", after=" (the search costs queries x rows x features)")
        self._announce_a_large_table(min(sample_size or n_rows, n_rows), num_classes)
        result = relief_statistics(prepared.indexed, self.getFeaturesCol(), label_col,
                                   num_features=prepared.num_features, num_classes=num_classes,
                                   options=self._options(sample_size), engine=self._engine_options(),
                                   hit_bound=hit_bound)
        info = {
            "method": result.variant, "k": result.k, "metric": result.metric, "scaling": result.scaling,
            "preset": self.getOrDefault(self.preset),
            "n_queries": int(result.n_queries), "query_sample": sample_rule, "seed": self.getOrDefault(self.seed),
            "class_priors": [float(p) for p in result.class_priors],
            **{key: value for key, value in result.info.items() if isinstance(value, (str, int, float, bool, list))},
        }
        if "short_classes" in result.info:
            # Classes with fewer than k + 1 rows: their queries average over the hits that exist.
            info["short_classes"] = {_label_text(labels[int(c)]): used
                                     for c, used in result.info["short_classes"].items()}
        if result.sigma is not None:
            info["sigma_min"], info["sigma_max"] = float(np.min(result.sigma)), float(np.max(result.sigma))
        return prepared.result(result.scores, info=info, feature_arrays={"weights": result.weights})
