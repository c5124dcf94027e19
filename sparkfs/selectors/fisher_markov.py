"""Fisher-Markov selector (Cheng, Zhou & Cheng): LFS (degree 1) on Spark."""

from __future__ import annotations

from pyspark import keyword_only
from pyspark.ml.param import Param, Params, TypeConverters

from sparkfs.core.fisher_markov import markov_coefficients
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, ScoreResult
from sparkfs.selectors._params import in_range, is_finite_float, one_of
from sparkfs.spark.stats import class_moments


class _FisherMarkovParams(Params):
    degree: Param = Param(
        Params._dummy(), "degree", "polynomial kernel degree: 1 = LFS (eq. 19-20), 2 = QFS (eq. 29-31)",
        typeConverter=TypeConverters.toInt,
    )
    gamma: Param = Param(
        Params._dummy(), "gamma",
        "trade-off between discriminativeness and expressiveness in eq. (19); the paper uses -0.5",
        typeConverter=TypeConverters.toFloat,
    )
    statsEngine: Param = Param(
        Params._dummy(), "statsEngine",
        "how the one-pass class moments are computed: 'jvm' (Summarizer, default) or 'arrow' (mapInArrow + NumPy)",
        typeConverter=TypeConverters.toString,
    )
    _param_constraints = {
        "degree": (lambda v: v == 1, "1 (LFS; degree 2, QFS, is not available yet)"),
        "gamma": is_finite_float(),
        "statsEngine": one_of("jvm", "arrow"),
    }

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(degree=1, gamma=-0.5, statsEngine="jvm")


class FisherMarkovSelectorModel(FeatureSelectorModel, _FisherMarkovParams):
    """Model of :class:`FisherMarkovSelector`: ``scores`` are the Markov coefficients theta_j."""


class FisherMarkovSelector(FeatureSelector, _FisherMarkovParams):
    """Fisher-Markov feature selector with a linear kernel (LFS).

    theta_j (eq. 19) is computed from per-class column sums and column sums of squares gathered
    in ONE pass over the data; the feature is selected iff theta_j > beta (eq. 20, ``threshold``)
    or when it is among the top ``numFeatures`` by theta.

    Parameters
    ----------
    gamma : float, default -0.5
    threshold : float, optional
        beta of eq. (20).
    numFeatures : int, default 50
    weightCol : str, optional
        Per-instance weights: n, n_i and every sum become weighted.

    Notes
    -----
    Memory on the driver: O(C p) doubles. Work: O(nnz) per pass. Sparse vectors stay sparse.
    """

    _model_class = FisherMarkovSelectorModel

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", outputCol="selected_features",
                 numFeatures=None, threshold=None, weightCol=None, degree=1, gamma=-0.5, statsEngine="jvm"):
        super().__init__()
        self._set(**{name: value for name, value in self._input_kwargs.items() if value is not None})

    def setGamma(self, value: float):
        return self._set(gamma=value)

    def setDegree(self, value: int):
        return self._set(degree=value)

    def _compute_scores(self, dataset) -> ScoreResult:
        moments = class_moments(
            dataset, self.getFeaturesCol(), self.getLabelCol(), self._weight_col(),
            engine=self.getOrDefault(self.statsEngine),
        )
        theta = markov_coefficients(
            moments.class_sums, moments.class_weights, moments.sum_of_squares, self.getOrDefault(self.gamma)
        )
        return ScoreResult(
            scores=theta,
            label_values=moments.label_values,
            class_counts=moments.class_counts.tolist(),
            n_rows=moments.n_rows,
            info={"method": "lfs", "gamma": self.getOrDefault(self.gamma)},
        )
