"""pyspark.ml classifiers on the top-k columns of one fold: ``sparkfs evaluate`` when a fold's
reduced data exceed the driver budget (:mod:`sparkfs.evaluation.cross_validation`, note 7).

Only predictions come back (one row key and one class index per test row); the metrics are
computed on the driver by the same function as for scikit-learn's predictions.
"""

from __future__ import annotations

from typing import Dict, Mapping, Sequence, Tuple

import numpy as np

#: The classifiers pyspark.ml offers among the evaluation's (no kNN, no kernel SVM).
SPARK_CLASSIFIER_NAMES = ("svm", "nb", "tree")

_TOP_K = "__sparkfs_top_k"
_SCALED = "__sparkfs_scaled"
_PREDICTION = "__sparkfs_prediction"


def _classifier(name: str, n_train: int, num_classes: int, seed: int):
    from pyspark.ml.classification import DecisionTreeClassifier, LinearSVC, NaiveBayes, OneVsRest

    common = dict(featuresCol=_SCALED, predictionCol=_PREDICTION)
    if name == "svm":
        # sklearn's C = 1 hinge objective scaled by 1 / (C n): regParam = 1 / (C n)
        svm = LinearSVC(regParam=1.0 / n_train, maxIter=200, tol=1e-6, standardization=False, **common)
        return svm if num_classes <= 2 else OneVsRest(classifier=svm, **common)
    if name == "nb":
        return NaiveBayes(modelType="gaussian", **common)
    if name == "tree":
        return DecisionTreeClassifier(impurity="entropy", minInstancesPerNode=2, maxDepth=30, seed=seed, **common)
    raise ValueError(f"no pyspark.ml classifier for {name!r}; pyspark.ml has {list(SPARK_CLASSIFIER_NAMES)}")


def fold_predictions(train, test, *, features_col: str, label_col: str, key_col: str,
                     subsets: Mapping[int, Sequence[int]], classifiers: Sequence[str], num_classes: int,
                     seed: int = 0) -> Dict[Tuple[str, int], Tuple[np.ndarray, np.ndarray]]:
    """Per (classifier, k): the test rows' keys and predicted class indices.

    ``train`` and ``test`` hold ``features_col`` (the columns of every k's selection), ``label_col``
    (class index 0..C-1, as double) and ``key_col`` (a row key); ``subsets`` maps each k to the
    positions in ``features_col`` of its features. Each k: those columns, a MinMaxScaler fitted
    on ``train``, the classifier; ``train`` and ``test`` should be persisted by the caller.
    """
    from pyspark.ml.feature import MinMaxScaler, VectorSlicer

    unknown = [name for name in classifiers if name not in SPARK_CLASSIFIER_NAMES]
    if unknown:
        raise ValueError(f"no pyspark.ml classifier for {unknown}; pyspark.ml has {list(SPARK_CLASSIFIER_NAMES)}")
    n_train = train.count()
    results: Dict[Tuple[str, int], Tuple[np.ndarray, np.ndarray]] = {}
    for k, positions in subsets.items():
        slicer = VectorSlicer(inputCol=features_col, outputCol=_TOP_K, indices=[int(c) for c in positions])
        scaler = MinMaxScaler(inputCol=_TOP_K, outputCol=_SCALED).fit(slicer.transform(train))
        train_k = scaler.transform(slicer.transform(train)).select(_SCALED, label_col)
        test_k = scaler.transform(slicer.transform(test)).select(_SCALED, key_col)
        for name in classifiers:
            model = _classifier(name, n_train, num_classes, seed).setLabelCol(label_col).fit(train_k)
            table = model.transform(test_k).select(key_col, _PREDICTION).toArrow()
            results[(name, int(k))] = (table.column(key_col).to_numpy(), table.column(_PREDICTION).to_numpy())
    return results
