"""docs/recipes.md's recipes for a pair method, an unsupervised method and a column-wise method,
each followed as a contributor would, with a toy method written here.

Each toy has the recipe's layers: pure NumPy functions of the statistics (what would go in
``sparkfs/core/``), a Spark function composed from the public passes only (what would go in
``sparkfs/spark/``) and, where the recipe has one, an Estimator on the shared selector base (what
would go in ``sparkfs/selectors/``). Each result is checked against NumPy written here from the
toy's definition, sharing no code with the toy, on 1 and 3 partitions.
"""

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

import numpy as np
import pytest
from pyspark.ml.param import Param, TypeConverters

from sparkfs.core import information as info_math
from sparkfs.core.options import check_choice, check_int, check_positive
from sparkfs.core.scaling import SCALINGS
from sparkfs.errors import InvalidInputError
from sparkfs.methods import FAMILIES, METHOD_FACTS, METHODS, MethodFacts, build_selector
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, PreparedInput, ScoreResult
from sparkfs.selectors._params import HasQueryBatchBytes, HasScaling, declare, in_range, is_int, keyword_constructor
from sparkfs.spark.method_setup import EngineOptions, feature_scale_of, options_of, rows_with_queries
from sparkfs.spark.passes import ShippedQueries, batched_pass, sum_merge, summed_pass
from sparkfs.spark.rows import Block
from tests.helpers import make_df


def _dense(matrix) -> np.ndarray:
    return matrix.toarray() if hasattr(matrix, "toarray") else np.asarray(matrix, dtype=np.float64)


# =================================================================================================
# 1. A pair method ("How to add MultiSURF (and others of its kind)")
#
#    The toy: per query q, the mean |x_qj - x_rj| over its misses (rows of another class) minus
#    the same mean over its hits (the other rows of its class), averaged over the queries; a mean
#    over an empty set is 0. The means divide by per-query counts, so the counts are totals before
#    any difference is summed: two passes, as MultiSURF's counts and weighted differences.
# =================================================================================================

SELF, HIT, MISS = 0, 1, 2


# --- step 1, the core: one pure function per step of the definition ------------------------------
def pair_roles(query_ids, query_labels, row_ids, row_labels) -> np.ndarray:
    """(queries x rows) role of each pair: SELF (the query itself), HIT (same class) or MISS."""
    same = np.asarray(row_labels)[None, :] == np.asarray(query_labels)[:, None]
    roles = np.where(same, HIT, MISS)
    roles[np.asarray(row_ids)[None, :] == np.asarray(query_ids)[:, None]] = SELF
    return roles


def role_counts(roles: np.ndarray) -> np.ndarray:
    """(queries, 2): each query's hits and misses among the rows of ``roles``."""
    return np.stack([(roles == HIT).sum(axis=1), (roles == MISS).sum(axis=1)], axis=1).astype(np.float64)


def role_weights(counts: np.ndarray) -> np.ndarray:
    """(queries, 2): -1 / hits and +1 / misses of each query (0 for an empty set)."""
    with np.errstate(divide="ignore"):
        inverse = np.where(counts > 0, 1.0 / counts, 0.0)
    return inverse * np.array([-1.0, 1.0])


def pair_coefficients(roles: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """(queries x rows) a[q, r]: the query's hit or miss weight, 0 for the query itself."""
    return np.where(roles == HIT, weights[:, :1], np.where(roles == MISS, weights[:, 1:], 0.0))


def weighted_difference_sums(queries, rows, coefficients: np.ndarray) -> np.ndarray:
    """(p,) sum_q sum_r a[q, r] |x_q - x_r|, one query at a time (no queries x rows x p array)."""
    queries, rows = _dense(queries), _dense(rows)
    return sum((coefficients[q] @ np.abs(rows - queries[q]) for q in range(queries.shape[0])),
               np.zeros(rows.shape[1]))


@dataclass(frozen=True)
class ToyPairOptions:
    """The toy's options object (the recipe's ``core/options.py`` dataclass), checked once."""

    scaling: str = "range"
    sample_size: Optional[int] = None
    seed: int = 0

    def __post_init__(self):
        check_choice("scaling", "ToyPairOptions", self.scaling, SCALINGS)
        check_int("sample_size", "ToyPairOptions", self.sample_size, 1, optional=True)
        check_int("seed", "ToyPairOptions", self.seed, -(2**63))


# --- step 2, the Spark side: a composition of the public passes -----------------------------------
@dataclass
class ToyPairResult:
    scores: np.ndarray
    query_ids: np.ndarray
    n_rows: int
    info: Dict[str, Any] = field(default_factory=dict)


def _count_kernel(block: Block, shipped):
    """Pass 1 in the tasks: the batch's hits and misses among the block's rows."""
    roles = pair_roles(shipped["ids"], shipped["labels"], block.ids, block.labels)
    return {"counts": role_counts(roles)}


def _difference_kernel(block: Block, shipped):
    """Pass 2 in the tasks: the block's weighted differences (the batch's weights in the payload)."""
    roles = pair_roles(shipped["ids"], shipped["labels"], block.ids, block.labels)
    coefficients = pair_coefficients(roles, shipped["weights"])
    return {"feature_sums": weighted_difference_sums(shipped["matrix"], block.matrix, coefficients)}


def _check_classes(class_counts) -> None:
    if np.count_nonzero(class_counts) < 2:
        raise InvalidInputError("the toy pair method needs rows of at least two classes")


def toy_pair_statistics(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                        options: Optional[ToyPairOptions] = None,
                        engine: Optional[EngineOptions] = None) -> ToyPairResult:
    """The toy's scores: pass 1 counts each query's hits and misses (a (queries, 2) summary), pass 2
    sums the weighted differences (a (p,) summary); both over the same shipped query batches."""
    options, engine = options_of(ToyPairOptions, options, engine)
    with rows_with_queries(df, features_col, label_col, num_features=num_features, num_classes=num_classes,
                           engine=engine, sample_size=options.sample_size, seed=options.seed,
                           check_classes=_check_classes) as (rows, queries):
        scale, _ = feature_scale_of(rows, options.scaling)
        scaled = rows.scaled_by(scale)
        counts = np.zeros((len(queries), 2))
        with ShippedQueries(scaled, queries) as shipped:
            # the query batch ships its matrix and ids only: the labels go in the payload
            for batch, summary in batched_pass(scaled, shipped, "toy pair counts", _count_kernel,
                                               payload=lambda batch: {"labels": queries.labels[batch]},
                                               shipped_bytes_per_query=8.0, bytes_per_query=16.0):
                if summary is not None:
                    counts[batch] = summary["counts"]
            weights = role_weights(counts)
            sums = summed_pass(scaled, shipped, "toy weighted differences", _difference_kernel,
                               payload=lambda batch: {"labels": queries.labels[batch], "weights": weights[batch]},
                               shipped_bytes_per_query=24.0).feature_sums
        info = {"passes": list(rows.info["passes"]), "n_queries": len(queries)}
        return ToyPairResult(sums / len(queries), queries.ids, rows.n_rows, info)


# --- step 3, the Estimator on the shared base, each Param one statement ---------------------------
class _ToyPairParams(HasScaling, HasQueryBatchBytes):
    sampleSize: Param = declare("sampleSize", "query rows drawn by `seed`; unset = every row", TypeConverters.toInt,
                                constraint=in_range(1, kind="an int"))
    seed: Param = declare("seed", "seed of the query sample", TypeConverters.toInt, default=0, constraint=is_int())
    _defaults = {"scaling": "range"}


class ToyPairSelectorModel(FeatureSelectorModel, _ToyPairParams):
    """Model of :class:`ToyPairSelector`."""


@keyword_constructor
class ToyPairSelector(FeatureSelector, _ToyPairParams):
    """The recipe's toy pair method (module notes)."""

    _model_class = ToyPairSelectorModel

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        options = ToyPairOptions(scaling=self.getScaling(), seed=self.getOrDefault(self.seed),
                                 sample_size=self.getOrDefault(self.sampleSize) if self.isSet(self.sampleSize)
                                 else None)
        result = toy_pair_statistics(prepared.indexed, self.getFeaturesCol(), prepared.label_col,
                                     num_features=prepared.num_features, num_classes=prepared.num_classes,
                                     options=options, engine=self._engine_options())
        return prepared.result(result.scores, info={"method": "toy-pair", "n_queries": result.info["n_queries"]})


# --- the reference: a loop over the queries, from the definition ---------------------------------
def reference_pair_scores(X, y, query_positions, scaling="range"):
    X = np.asarray(X, dtype=np.float64)
    if scaling == "range":
        spread = X.max(axis=0) - X.min(axis=0)
        X = X / np.where(spread > 0, spread, 1.0)
    terms = []
    for q in query_positions:
        others = np.arange(len(y)) != q
        hits, misses = others & (y == y[q]), y != y[q]
        term = np.zeros(X.shape[1])
        if misses.any():
            term += np.abs(X[misses] - X[q]).mean(axis=0)
        if hits.any():
            term -= np.abs(X[hits] - X[q]).mean(axis=0)
        terms.append(term)
    return np.mean(terms, axis=0)


def _pair_data(seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], [25, 20, 15])
    X = rng.normal(size=(60, 5))
    X[:, 1] += 1.5 * y      # separates the classes
    X[:, 3] *= 10.0         # a wide range (range scaling divides it)
    return X, y


@pytest.fixture
def toy_pair_method():
    """Step 3's registry entries (undone after the test: the registries are global)."""
    METHODS["toy-pair"] = (ToyPairSelector, {})
    METHOD_FACTS["toy-pair"] = MethodFacts("a toy pair method of the recipe", "untested")
    FAMILIES["toy-pair"] = "toy-pair"
    yield "toy-pair"
    for table in (METHODS, METHOD_FACTS, FAMILIES):
        table.pop("toy-pair", None)


@pytest.mark.parametrize("partitions", [1, 3])
def test_the_pair_recipe_on_a_query_sample_in_several_batches(spark, partitions):
    X, y = _pair_data()
    df = make_df(spark, X, y, partitions=partitions)
    engine = EngineOptions(query_batch_bytes=8 * 5 * 8)  # 8 queries of 5 doubles a batch: 4 batches
    result = toy_pair_statistics(df, "features", "label", num_features=5, num_classes=3,
                                 options=ToyPairOptions(sample_size=30, seed=4), engine=engine)
    assert len(result.query_ids) == 30 and result.n_rows == 60
    np.testing.assert_allclose(result.scores, reference_pair_scores(X, y, result.query_ids), rtol=1e-10, atol=1e-12)
    assert int(np.argmax(result.scores)) == 1
    assert result.info["passes"].count("toy pair counts") == 4
    assert result.info["passes"].count("toy weighted differences") == 4


def test_the_pair_recipe_through_its_selector(spark, toy_pair_method):
    """The passes' partition counts are checked above; here the selector around them (2 partitions)."""
    X, y = _pair_data(1)
    labels = np.array(["b", "a", "c"])[y]  # the preamble indexes any labels
    df = make_df(spark, X, labels, partitions=2, label_type=str)
    model = build_selector(toy_pair_method, {"scaling": "none"}).setNumFeatures(2).fit(df)
    expected = reference_pair_scores(X, y, np.arange(60), scaling="none")
    np.testing.assert_allclose(model.scores, expected, rtol=1e-10, atol=1e-12)
    assert model.selectedFeatures == sorted(np.argsort(-expected, kind="mergesort")[:2].tolist())
    assert model.summary["method"] == "toy-pair" and model.summary["n_queries"] == 60


def test_the_pair_recipes_params_are_declared_once(toy_pair_method, capsys):
    from sparkfs.cli import main

    assert "sampleSize" in ToyPairSelector.__init__.__signature__.parameters
    assert ToyPairSelector().getScaling() == "range"
    with pytest.raises(ValueError, match=r"The 'sampleSize' parameter of ToyPairSelector must be an int in the "
                                         r"range \[1, inf\)\. Got 0 instead\."):
        ToyPairSelector(sampleSize=0).validate_params()
    with pytest.raises(ValueError, match="'scaling' parameter of ToyPairOptions"):
        ToyPairOptions(scaling="log")
    assert main(["methods", toy_pair_method]) == 0
    out = capsys.readouterr().out
    assert "a toy pair method of the recipe" in out and "sampleSize" in out


# =================================================================================================
# 2. An unsupervised method ("How to add an unsupervised method")
#
#    The toy, a Laplacian-score-like smoothness (smaller is better): on standardised features z,
#    with K[q, r] = exp(-||z_q - z_r||^2 / bandwidth) over the pairs of a query and another row,
#        L_j = (sum K (z_qj - z_rj)^2 / sum K) / (sum (z_qj - z_rj)^2 / number of pairs):
#    the mean squared difference between near rows over that between any two rows. Every term is
#    normalised by totals only, so one pass of additive sums gives it.
# =================================================================================================
def smoothness_sums(queries, query_ids, rows, row_ids, bandwidth: float) -> Dict[str, np.ndarray]:
    """The four additive sums of L over the pairs of ``queries`` and ``rows`` (no query with itself)."""
    queries, rows = _dense(queries), _dense(rows)
    others = np.asarray(row_ids)[None, :] != np.asarray(query_ids)[:, None]
    kernel_weighted, plain = np.zeros(rows.shape[1]), np.zeros(rows.shape[1])
    kernel_total = 0.0
    for q in range(queries.shape[0]):
        squares = (rows[others[q]] - queries[q]) ** 2
        kernel = np.exp(-squares.sum(axis=1) / bandwidth)
        kernel_weighted += kernel @ squares
        plain += squares.sum(axis=0)
        kernel_total += kernel.sum()
    return {"kernel_weighted": kernel_weighted, "plain": plain, "kernel_total": np.array([kernel_total]),
            "pairs": np.array([float(others.sum())])}


def smoothness_scores(sums: Dict[str, np.ndarray]) -> np.ndarray:
    """L_j from the summed sums; a constant feature (no difference anywhere) is NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return (sums["kernel_weighted"] / sums["kernel_total"][0]) / (sums["plain"] / sums["pairs"][0])


@dataclass(frozen=True)
class ToySmoothnessOptions:
    bandwidth: float = 1.0
    sample_size: Optional[int] = None
    seed: int = 0

    def __post_init__(self):
        check_positive("bandwidth", "ToySmoothnessOptions", self.bandwidth)
        check_int("sample_size", "ToySmoothnessOptions", self.sample_size, 1, optional=True)


@dataclass
class ToySmoothnessResult:
    scores: np.ndarray
    query_ids: np.ndarray
    n_rows: int


def _at_least_two_rows(counts) -> None:
    if counts.sum() < 2:
        raise InvalidInputError(f"the toy smoothness needs at least 2 rows; the input has {int(counts.sum())}")


def toy_smoothness_statistics(df, features_col: str, *, num_features: int,
                              options: Optional[ToySmoothnessOptions] = None,
                              engine: Optional[EngineOptions] = None) -> ToySmoothnessResult:
    """L of every feature: no label column (every row in class 0), standard scaling, one pass."""
    options, engine = options_of(ToySmoothnessOptions, options, engine)
    bandwidth = options.bandwidth

    def summarize(block: Block, shipped):
        return smoothness_sums(shipped["matrix"], shipped["ids"], block.matrix, block.ids, bandwidth)

    with rows_with_queries(df, features_col, None, num_features=num_features, num_classes=None, engine=engine,
                           sample_size=options.sample_size, seed=options.seed,
                           check_classes=_at_least_two_rows) as (rows, queries):
        scale, _ = feature_scale_of(rows, "standard")
        scaled = rows.scaled_by(scale)
        totals = None
        for _, summary in batched_pass(scaled, queries, "toy smoothness sums", summarize, sum_merge,
                                       bytes_per_query=0.0):  # (p,) sums: nothing grows with the queries
            if summary is not None:
                totals = summary if totals is None else sum_merge(totals, summary)
        return ToySmoothnessResult(smoothness_scores(totals), queries.ids, rows.n_rows)


class _ToySmoothnessParams(HasQueryBatchBytes):
    bandwidth: Param = declare("bandwidth", "the kernel's bandwidth (squared distance units)", TypeConverters.toFloat,
                               default=1.0, constraint=in_range(0.0, low_open=True))


class ToySmoothnessModel(FeatureSelectorModel, _ToySmoothnessParams):
    """Model of :class:`ToySmoothnessRanker`: ``scores`` are -L; ``featureArray("smoothness")`` is L."""


@keyword_constructor
class ToySmoothnessRanker(FeatureSelector, _ToySmoothnessParams):
    """The recipe's toy unsupervised method: no labels, smaller L is better."""

    _model_class = ToySmoothnessModel
    _not_keywords = ("weightCol",)
    requires_labels = False

    def _uses_labels(self, dataset) -> bool:
        return False

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        result = toy_smoothness_statistics(prepared.dataset, self.getFeaturesCol(),
                                           num_features=prepared.num_features,
                                           options=ToySmoothnessOptions(self.getOrDefault(self.bandwidth)),
                                           engine=self._engine_options())
        return ScoreResult(scores=-result.scores, n_rows=result.n_rows, info={"method": "toy-smoothness"},
                           feature_arrays={"smoothness": result.scores})


def reference_smoothness(X, query_positions, bandwidth):
    """L_j by a loop over every (query, other row) pair, on X / its sample standard deviation."""
    X = np.asarray(X, dtype=np.float64)
    std = X.std(axis=0, ddof=1)
    Z = X / np.where(std > 0, std, 1.0)
    near, near_weight, anywhere, pairs = np.zeros(X.shape[1]), 0.0, np.zeros(X.shape[1]), 0
    for q in query_positions:
        for r in range(len(Z)):
            if r == q:
                continue
            difference = (Z[q] - Z[r]) ** 2
            weight = np.exp(-difference.sum() / bandwidth)
            near += weight * difference
            near_weight += weight
            anywhere += difference
            pairs += 1
    return (near / near_weight) / (anywhere / pairs)


def _cluster_data(seed=0):
    """Two clusters told apart by feature 0 (smooth on the neighbourhoods); the others are noise."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(48, 4))
    X[:24, 0] += 6.0
    X[:, 2] *= 5.0
    return X


@pytest.mark.parametrize("partitions", [1, 3])
def test_the_unsupervised_recipe_on_a_sample(spark, partitions):
    X = _cluster_data()
    df = make_df(spark, X, np.zeros(len(X)), partitions=partitions).drop("label")
    result = toy_smoothness_statistics(df, "features", num_features=4,
                                       options=ToySmoothnessOptions(bandwidth=1.0, sample_size=20, seed=2),
                                       engine=EngineOptions(query_batch_bytes=6 * 4 * 8))  # 4 batches
    assert len(result.query_ids) == 20 and result.n_rows == 48
    np.testing.assert_allclose(result.scores, reference_smoothness(X, result.query_ids, 1.0), rtol=1e-10)
    assert int(np.argmin(result.scores)) == 0


def test_the_unsupervised_recipe_through_its_ranker_without_a_label_column(spark):
    X = _cluster_data(1)
    df = make_df(spark, X, np.zeros(len(X)), partitions=2).drop("label")
    model = ToySmoothnessRanker(bandwidth=1.0, numFeatures=1).fit(df)
    expected = reference_smoothness(X, range(len(X)), 1.0)
    np.testing.assert_allclose(model.featureArray("smoothness"), expected, rtol=1e-10)
    np.testing.assert_allclose(model.scores, -expected, rtol=1e-10)
    assert model.selectedFeatures == [int(np.argmin(expected))] == [0]
    assert model.summary["n_rows"] == 48 and model.summary["n_classes"] == 0


# =================================================================================================
# 3. A column-wise method ("How to add a column-wise method")
#
#    The toy, a correlation mRMR: relevance |corr(x_j, y)| (y the class index as a number),
#    redundancy |corr(x_j, x_s)|; greedily the feature of largest relevance minus its mean
#    redundancy with the features chosen so far (the first: the largest relevance). The columns are
#    standardised once and kept (the information family's codes); one pass gives the relevance and
#    one pass per chosen feature its correlations with every feature.
# =================================================================================================
def standardised_block(matrix, labels, mean, std, label_mean) -> Dict[str, np.ndarray]:
    """A block as every later pass reads it: z = (x - mean) / std and the centred label."""
    return {"z": (_dense(matrix) - mean) / std, "y": np.asarray(labels, dtype=np.float64) - label_mean}


def relevance_sums(coded) -> Dict[str, np.ndarray]:
    z, y = coded["z"], coded["y"]
    return {"feature_label": z.T @ y, "feature_squares": (z * z).sum(axis=0), "label_squares": np.array([y @ y])}


def absolute_correlations(cross, squares, other_squares) -> np.ndarray:
    """|cross| / sqrt(squares x other_squares): 0 where either column is constant."""
    denominator = np.sqrt(squares * other_squares)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, np.abs(cross) / denominator, 0.0)


def toy_correlation_mrmr(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                         num_select: int, engine: Optional[EngineOptions] = None):
    """The greedy selection (:func:`sparkfs.core.information.greedy_selection`, mRMR's difference
    form) fed by the passes over the standardised columns. Returns the GreedyResult and the relevance."""
    engine = engine or EngineOptions(canonical=False)
    with engine.rows(df, features_col, label_col, num_features=num_features, num_classes=num_classes) as rows:
        statistics = rows.column_statistics()
        counts = rows.class_counts
        centre = {"mean": statistics.mean, "std": np.where(statistics.std > 0, statistics.std, 1.0),
                  "label_mean": float(np.arange(counts.size) @ counts / counts.sum())}
        # the centre stays shipped while the columns are cached: a lost cached block is recomputed from it
        with rows.shipped(centre) as handle:
            coded = rows.encode_blocks("standardised columns (cached)", lambda block: standardised_block(
                block.matrix, block.labels, handle.value["mean"], handle.value["std"], handle.value["label_mean"]),
                scaled=False)
            totals = rows.run_pass("toy relevance", relevance_sums, sum_merge, scaled=False, over=coded)
            squares = totals["feature_squares"]
            relevance = absolute_correlations(totals["feature_label"], squares, totals["label_squares"][0])

            def step_terms(selected: int):
                def summarize(block):
                    return {"cross": block["z"].T @ block["z"][:, selected]}

                cross = rows.run_pass("toy redundancy step", summarize, sum_merge, scaled=False, over=coded)["cross"]
                return absolute_correlations(cross, squares, squares[selected]), np.zeros(num_features)

            result = info_math.greedy_selection(relevance, step_terms, num_select, "mrmr", "difference")
        return result, relevance, list(rows.info["passes"])


def reference_correlation_mrmr(X, y, num_select):
    """The greedy loop over np.corrcoef's correlations."""
    table = np.abs(np.corrcoef(np.column_stack([X, y]), rowvar=False))
    relevance, redundancy = table[:-1, -1], table[:-1, :-1]
    order = [int(np.argmax(relevance))]
    criteria = [float(relevance[order[0]])]
    while len(order) < num_select:
        criterion = relevance - redundancy[:, order].mean(axis=1)
        criterion[order] = -np.inf
        order.append(int(np.argmax(criterion)))
        criteria.append(float(criterion[order[-1]]))
    return order, criteria, relevance


def _redundant_data(seed=2):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1], 40)
    X = rng.normal(size=(80, 6))
    X[:, 0] += 2.0 * y                                   # the most relevant
    X[:, 1] = X[:, 0] + 0.3 * rng.normal(size=80)        # nearly a copy of it: relevant and redundant
    X[:, 4] += 1.5 * y                                   # less relevant, less redundant
    return X, y


@pytest.mark.parametrize("partitions", [1, 3])
def test_the_column_wise_recipe(spark, partitions):
    X, y = _redundant_data()
    df = make_df(spark, X, y, partitions=partitions)
    result, relevance, passes = toy_correlation_mrmr(df, "features", "label", num_features=6, num_classes=2,
                                                     num_select=3)
    order, criteria, expected_relevance = reference_correlation_mrmr(X, y, 3)
    np.testing.assert_allclose(relevance, expected_relevance, rtol=1e-10)
    assert result.order == order
    np.testing.assert_allclose(result.criterion, criteria, rtol=1e-9)
    by_relevance = np.argsort(-expected_relevance, kind="mergesort")[:2].tolist()
    assert by_relevance == [0, 1] and order[:2] == [0, 4]   # the redundancy kept the near copy out
    assert passes.count("standardised columns (cached)") == 1
    assert passes.count("toy relevance") == 1 and passes.count("toy redundancy step") == 2
