"""SVM-RFE on Spark: the elimination loop of :mod:`sparkfs.core.svm_rfe` around linear SVM fits
whose data term is summed over the rows where they are, for data that do not fit the driver.

:func:`spark_svm_rfe` hands :func:`sparkfs.core.svm_rfe.recursive_elimination` a function that
fits the one-vs-rest SVMs (one problem for two classes, one per class otherwise) on the remaining
features with :func:`sparkfs.core.linear_svm.minimise_hinge_objective`: L-BFGS on the driver,
one pass over the rows (:class:`sparkfs.spark.rows.Rows`) per evaluation of the objective, each
block contributing :func:`sparkfs.core.linear_svm.hinge_terms` for all problems at once. The
elimination rule, ranking, scores and weight path are the driver path's; only the solver differs.

The objective is liblinear's, intercept penalty included (module notes of
:mod:`sparkfs.core.linear_svm`), so both solvers aim at the same minimiser; they stop at
different points (liblinear's dual coordinate descent at ``tol`` 1e-4; L-BFGS at ``max_iter``
or a relative decrease below ``tol``), so weights agree to the solvers' tolerance and rankings
where features' weights are clearly apart.

Why not pyspark.ml's ``LinearSVC``: its gradient sums are merged in the order tasks finish, so
the same rows gave weights (and sometimes rankings) that differed with the partitioning. Here the
sums run over the canonical layout of ``Rows`` (merged in row-id order), so every pass, and so
every L-BFGS step, the ranking and the scores, are the same bits for any partitioning (with
``canonical=True``, the selector's ``deterministic=True``; without it, equal to rounding).

Each refit starts from the previous fit's weights on the surviving features (warm start), and
L-BFGS searches in units of each feature's standard deviation (one more pass, the column
statistics of ``Rows``), as pyspark.ml does: on wide sparse counts that took the objective after
100 iterations from 6 % above liblinear's optimum to 0.4 %.
``standardize`` fits the SVM on ``(x - offset) / scale`` without touching the rows: the data term is
evaluated at ``w / scale`` and ``b - (w / scale) . offset`` on the rows as they are, and the chain
rule carries both into the gradient (:func:`standardised_terms`), so sparse blocks stay sparse. The
scale is the ``ddof=0`` standard deviation of the canonical column statistics of ``Rows`` (1 for a
constant feature), the offset their mean when ``centre`` (else 0): the same bits for any partitioning.
A fit that stops at ``max_iter`` L-BFGS iterations counts as not converged (``RFEResult.not_converged``).
Bootstrap members (the ensemble) are fitted on the whole input with each row's multiplicity as
its weight (a row drawn twice counts twice, as in the driver path's duplicated rows; rows not
drawn have weight 0).

Cost per SVM fit: at most ``2 max_iter + 20`` passes over the cached blocks; RFE runs
``O(log d / log(1 / (1 - step)))`` fits. Driver memory: the L-BFGS history, about
``(2 * 10 + 8) K (d + 1)`` doubles, checked against ``driver_budget_mb`` before any pass.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from sparkfs.core.linear_svm import hinge_terms, minimise_hinge_objective
from sparkfs.core.options import SVMRFEOptions
from sparkfs.core.svm_rfe import RFEResult, recursive_elimination
from sparkfs.errors import DriverBudgetError
from sparkfs.spark.method_setup import EngineOptions, options_of
from sparkfs.spark.row_sets import Block
from sparkfs.spark.rows import Rows

_SLICED = "__sparkfs_rfe_features"
_BINARY_LABEL = "__sparkfs_rfe_label"
#: Vectors of K (d + 1) doubles the driver keeps during a fit: 2 x 10 L-BFGS pairs and the
#: iterates, gradients and work arrays around them.
DRIVER_VECTORS = 28


def _added(left, right):
    return {name: left[name] + right[name] for name in left}


def check_solver_memory(num_problems: int, num_features: int, driver_budget_mb: Optional[float]) -> None:
    """Refuse, before any pass, an SVM whose driver-side arrays exceed ``driver_budget_mb``."""
    need_mb = DRIVER_VECTORS * 8.0 * num_problems * (num_features + 1) / 2**20
    if driver_budget_mb is not None and need_mb > driver_budget_mb:
        raise DriverBudgetError(
            f"the Spark SVM solver keeps about {need_mb:.0f} MiB on the driver ({num_problems} one-vs-rest "
            f"problem(s) x {num_features + 1} weights x {DRIVER_VECTORS} vectors), above driverBudgetMB="
            f"{driver_budget_mb:g}: raise driverBudgetMB (and the driver's memory, --driver-memory) or "
            f"select among fewer features first")


def spark_svm_rfe(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                  options: Optional[SVMRFEOptions] = None, engine: Optional[EngineOptions] = None) -> RFEResult:
    """SVM-RFE with the distributed L-BFGS SVM; same result type as :func:`sparkfs.core.svm_rfe.svm_rfe`.

    Parameters
    ----------
    df : DataFrame
        ``features_col`` (vectors of size ``num_features``), ``label_col`` (class index
        0..C-1) and optional ``engine.weight_col`` (non-negative instance weights), in a fixed
        order (rows are numbered by position).
    options : SVMRFEOptions
        :class:`sparkfs.core.options.SVMRFEOptions`: ``step``, ``n_features_to_select``,
        ``multiclass``, ``halve_above`` as :func:`sparkfs.core.svm_rfe.recursive_elimination`;
        ``C`` (scikit-learn's); ``max_iter``, ``tol`` of the L-BFGS fit
        (:func:`sparkfs.core.linear_svm.minimise_hinge_objective`); ``standardize``, ``centre``:
        fit on the standardised features, centred or not (module notes); False = as they are.
    engine : EngineOptions
        :class:`sparkfs.spark.method_setup.EngineOptions`: ``weight_col``, ``transport``,
        ``driver_budget_mb`` and ``canonical`` (the canonical layout of :class:`Rows`: the same
        bits for any partitioning, one shuffle; False: equal to rounding only, the selectors'
        ``deterministic=False``).
    """
    options, engine = options_of(SVMRFEOptions, options, engine)
    positive_classes = [1] if num_classes == 2 else list(range(num_classes))
    check_solver_memory(len(positive_classes), num_features, engine.driver_budget_mb)
    with engine.rows(df, features_col, label_col, num_features=num_features, num_classes=num_classes,
                     cache_blocks=True, fewer_rows_hint="use solver='driver' on a sample") as rows:
        total_weight = _total_weight(rows)
        if not total_weight > 0:
            raise ValueError("the instance weights sum to 0: no row to train the SVM on")
        statistics = rows.column_statistics()
        offset, scale = _standardisation(statistics, rows.n_rows, options.standardize, options.centre)
        feature_scale = statistics.std / scale  # the L-BFGS preconditioner (canonical sums)
        previous = {"features": np.arange(num_features), "coef": None, "intercept": None}

        def fit_coef(features):
            start = None
            if previous["coef"] is not None:
                kept = np.isin(previous["features"], features)
                start = np.concatenate([previous["coef"][:, kept].ravel(), previous["intercept"]])
            fit = minimise_hinge_objective(
                lambda coef, intercept: standardised_terms(
                    lambda raw_coef, raw_intercept: _summed_hinge_terms(rows, features, raw_coef, raw_intercept,
                                                                        positive_classes),
                    coef, intercept, offset[features], scale[features]),
                len(positive_classes), features.size, C=options.C, total_weight=total_weight,
                max_iter=options.max_iter, tol=options.tol, start=start, feature_scale=feature_scale[features])
            previous.update(features=features, coef=fit.coef, intercept=fit.intercept)
            return fit.coef, fit.iterations < options.max_iter

        return recursive_elimination(fit_coef, num_features, **options.elimination())


def _standardisation(statistics, n_rows: int, standardize: bool, centre: bool):
    """``(offset, scale)`` from the canonical column statistics (sample std turned to ``ddof=0``)."""
    num_features = statistics.std.shape[0]
    if not standardize:
        return np.zeros(num_features), np.ones(num_features)
    std = statistics.std * np.sqrt((n_rows - 1) / n_rows) if n_rows > 1 else np.zeros(num_features)
    varies = std > 0
    offset = np.where(varies, statistics.mean, 0.0) if centre else np.zeros(num_features)
    return offset, np.where(varies, std, 1.0)


def standardised_terms(summed_terms, coef: np.ndarray, intercept: np.ndarray, offset: np.ndarray,
                       scale: np.ndarray) -> dict:
    """The hinge terms of the SVM on ``(x - o) / s`` from those on ``x``: the margins
    ``v . (x - o) / s + b`` are ``w . x + (b - w . o)`` with ``w = v / s``, so ``summed_terms``
    runs at those weights, and the chain rule gives ``d/dv = (g_w - g_b o) / s`` (``g_b`` unchanged)."""
    raw_coef = coef / scale[None, :]
    terms = dict(summed_terms(raw_coef, intercept - raw_coef @ offset))
    terms["coef_gradient"] = ((terms["coef_gradient"] - terms["intercept_gradient"][:, None] * offset[None, :])
                              / scale[None, :])
    return terms


def _total_weight(rows: Rows) -> float:
    """S = sum of the instance weights (the row count without), summed in the canonical order."""
    if not rows.weight_col:
        return float(rows.n_rows)
    totals = rows.run_pass("instance weight total", lambda block: {"total": np.array([block.weights.sum()])},
                           _added)
    return float(totals["total"][0]) if totals else 0.0


def _summed_hinge_terms(rows: Rows, features: np.ndarray, coef: np.ndarray, intercept: np.ndarray,
                        positive_classes) -> dict:
    """One pass: :func:`hinge_terms` of every block on the remaining ``features``, summed."""
    all_features = features.size == rows.num_features

    def summarize(block: Block, shipped):
        matrix = block.matrix if all_features else block.matrix[:, shipped["features"]]
        return hinge_terms(matrix, block.labels, block.weights, shipped["coef"], shipped["intercept"],
                           positive_classes)

    with rows.shipped({"features": features, "coef": coef, "intercept": intercept}) as handle:
        return rows.run_pass("svm objective", lambda block: summarize(block, handle.value), _added)


def sparkml_svm_rfe(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                    options: Optional[SVMRFEOptions] = None, engine: Optional[EngineOptions] = None) -> RFEResult:
    """SVM-RFE with pyspark.ml's ``LinearSVC`` (``solver="sparkml"``): faster than
    :func:`spark_svm_rfe` on wide sparse data (``benchmarks/results/svm_solver.md``), but its
    gradient sums are merged in the order tasks finish, so its weights agree across partitionings
    to rounding only. scikit-learn's C becomes ``regParam = 1 / (C S)`` (the objective divided by
    ``C S``); ``standardization=False`` keeps the penalty on the features as they are; Spark does not
    penalise the intercept. Bootstrap members are weighted fits, as above. ``options`` and
    ``engine`` as :func:`spark_svm_rfe`; of the engine only ``weight_col`` is used (pyspark.ml keeps
    the optimiser's state in the JVM and merges in its own order), of the options neither
    ``standardize`` nor ``centre`` (the caller standardises the features first)."""
    options, engine = options_of(SVMRFEOptions, options, engine)
    weight_col, max_iter = engine.weight_col, options.max_iter
    from pyspark import StorageLevel
    from pyspark.ml.classification import LinearSVC
    from pyspark.ml.feature import VectorSlicer
    from pyspark.sql import functions as F

    columns = [F.col(features_col), F.col(label_col).cast("double").alias(label_col)]
    if weight_col:
        columns.append(F.col(weight_col).cast("double").alias(weight_col))
    data = df.select(*columns)
    if weight_col:
        data = data.where(F.col(weight_col) > 0)
    data = data.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        total_weight = data.agg(F.sum(F.col(weight_col)) if weight_col else F.count(F.lit(1))).first()[0]
        if not total_weight:
            raise ValueError(f"the total instance weight must be positive; got {total_weight!r}")
        reg_param = 1.0 / (options.C * float(total_weight))

        def fit_coef(features):
            sliced = VectorSlicer(inputCol=features_col, outputCol=_SLICED,
                                  indices=[int(i) for i in features]).transform(data)
            rows, converged = [], True
            for positive in ([1] if num_classes == 2 else range(num_classes)):
                svm = LinearSVC(featuresCol=_SLICED, labelCol=_BINARY_LABEL, regParam=reg_param, maxIter=max_iter,
                                tol=options.tol, standardization=False, fitIntercept=True)
                if weight_col:
                    svm.setWeightCol(weight_col)
                binary = sliced.withColumn(_BINARY_LABEL, (F.col(label_col) == float(positive)).cast("double"))
                model = svm.fit(binary)
                rows.append(model.coefficients.toArray())
                converged = converged and _iterations(model) < max_iter
            return np.array(rows), converged

        return recursive_elimination(fit_coef, num_features, **options.elimination())
    finally:
        data.unpersist()


def _iterations(model) -> int:
    """Iterations of a pyspark.ml LinearSVC fit (0 when its training summary is not available)."""
    try:
        return int(model.summary.totalIterations) if model.hasSummary else 0
    except Exception:  # Spark Connect builds without the training summary
        return 0
