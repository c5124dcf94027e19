"""SVM-RFE on Spark: the elimination loop of :mod:`sparkfs.core.svm_rfe` around pyspark.ml
``LinearSVC`` fits, for data that do not fit the driver.

:func:`spark_svm_rfe` hands :func:`sparkfs.core.svm_rfe.recursive_elimination` a function that
slices the remaining features (JVM ``VectorSlicer``) and fits a ``LinearSVC`` on them (one per
class, one-vs-rest, for more than two classes). The elimination rule, ranking, scores and weight
path are the driver path's; only the solver differs.

The objective matched to scikit-learn's
--------------------------------------
scikit-learn's ``LinearSVC(C, loss="hinge")`` minimises ``||w||^2 / 2 + C sum_i s_i hinge_i``;
Spark's ``LinearSVC`` minimises ``(1 / S) sum_i s_i hinge_i + regParam ||w||^2 / 2`` with
``S = sum_i s_i`` (s the instance weights, 1 without). Dividing the first by ``C S`` gives the
second with ``regParam = 1 / (C S)``; ``standardization=False`` keeps the features as they are
(Spark would otherwise penalise standardised coefficients). Remaining differences: liblinear
penalises the intercept and Spark does not, and the solvers (liblinear's dual coordinate
descent; Spark's OWL-QN on the non-smooth hinge, stopped by ``maxIter`` / ``tol``) stop at
different points, so weights agree to the solvers' tolerance, and rankings where features'
weights are clearly apart.

Bootstrap members (the ensemble) are fitted on the whole input with each row's multiplicity as
its weight (a row drawn twice counts twice, as in the driver path's duplicated rows; rows not
drawn have weight 0 and are filtered out).

Cost per SVM fit: one Spark job per optimiser iteration over the cached input (at most
``max_iter``); RFE runs ``O(log d / log(1 / (1 - step)))`` fits, times the number of classes
for one-vs-rest.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from sparkfs.core.svm_rfe import RFEResult, recursive_elimination

_SLICED = "__sparkfs_rfe_features"
_BINARY_LABEL = "__sparkfs_rfe_label"


def svm_reg_param(C: float, total_weight: float) -> float:
    """Spark's ``regParam`` equivalent to scikit-learn's ``C``: ``1 / (C S)`` (module notes)."""
    if not C > 0 or not total_weight > 0:
        raise ValueError(f"C and the total instance weight must be positive; got C={C!r}, total={total_weight!r}")
    return 1.0 / (C * total_weight)


def spark_svm_rfe(df, features_col: str, label_col: str, *, num_features: int, num_classes: int,
                  weight_col: Optional[str] = None, step=0.1, n_features_to_select: int = 1, C: float = 1.0,
                  max_iter: int = 100, tol: float = 1e-6, multiclass: str = "l2",
                  aggregation_depth: int = 2) -> RFEResult:
    """SVM-RFE with pyspark.ml LinearSVC; same result type as :func:`sparkfs.core.svm_rfe.svm_rfe`.

    Parameters
    ----------
    df : DataFrame
        ``features_col`` (vectors of size ``num_features``), ``label_col`` (class index
        0..C-1 as double) and optional ``weight_col`` (non-negative instance weights).
    step, n_features_to_select, multiclass
        As :func:`sparkfs.core.svm_rfe.recursive_elimination`.
    C : float
        scikit-learn's C, translated to ``regParam`` (module notes).
    max_iter, tol, aggregation_depth
        Of Spark's LinearSVC.
    """
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
            raise ValueError("the instance weights sum to 0: no row to train the SVM on")
        reg_param = svm_reg_param(float(C), float(total_weight))

        def fit_coef(features):
            sliced = VectorSlicer(inputCol=features_col, outputCol=_SLICED,
                                  indices=[int(i) for i in features]).transform(data)
            rows = []
            for positive in ([1] if num_classes == 2 else range(num_classes)):
                svm = LinearSVC(featuresCol=_SLICED, labelCol=_BINARY_LABEL, regParam=reg_param, maxIter=max_iter,
                                tol=tol, standardization=False, fitIntercept=True,
                                aggregationDepth=aggregation_depth)
                if weight_col:
                    svm.setWeightCol(weight_col)
                binary = sliced.withColumn(_BINARY_LABEL, (F.col(label_col) == float(positive)).cast("double"))
                rows.append(svm.fit(binary).coefficients.toArray())
            return np.array(rows)

        return recursive_elimination(fit_coef, num_features, step=step, n_features_to_select=n_features_to_select,
                                     multiclass=multiclass)
    finally:
        data.unpersist()
