"""Fisher-Markov selector (Cheng, Zhou & Cheng): LFS (degree 1) on Spark."""

from __future__ import annotations

from pyspark import keyword_only
from pyspark.ml.param import Param, Params, TypeConverters

from sparkfs.core.fisher_markov import affine_class_moments, markov_coefficients, scaling_parameters
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
    scaling: Param = Param(
        Params._dummy(), "scaling",
        "feature scaling applied (analytically, from the same one-pass statistics) before theta: "
        "'none' (default, the paper's formula on the data as given), 'range' ([0, 1]) or 'standard'",
        typeConverter=TypeConverters.toString,
    )
    _param_constraints = {
        "scaling": one_of("none", "range", "standard"),
        "degree": (lambda v: v == 1, "1 (LFS; degree 2, QFS, is not available yet)"),
        "gamma": is_finite_float(),
        "statsEngine": one_of("jvm", "arrow"),
    }

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(degree=1, gamma=-0.5, statsEngine="jvm", scaling="none")


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
    scaling : {"none", "range", "standard"}, default "none"
        The paper does not say how its data were scaled; its Synthetic-2 finding (x1, x2 first at
        gamma = -0.5) holds on [0, 1]-scaled data ("range") and not on raw data, where gamma = -0.5
        rewards variance (theta_j = between-class variance - gamma * total variance).

    Notes
    -----
    Memory on the driver: O(C p) doubles. Work: O(nnz) per pass. Sparse vectors stay sparse.
    """

    _model_class = FisherMarkovSelectorModel

    @keyword_only
    def __init__(self, *, featuresCol="features", labelCol="label", outputCol="selected_features",
                 numFeatures=None, threshold=None, weightCol=None, degree=1, gamma=-0.5, statsEngine="jvm", scaling="none"):
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
        class_sums, class_sum_squares = moments.class_sums, moments.class_sum_squares
        offset, scale = scaling_parameters(
            self.getOrDefault(self.scaling), feature_min=moments.feature_min, feature_max=moments.feature_max,
            total_weight=moments.class_weights.sum(), total_sums=class_sums.sum(axis=0),
            total_sum_squares=class_sum_squares.sum(axis=0),
        )
        if offset is not None:
            class_sums, class_sum_squares = affine_class_moments(
                class_sums, moments.class_weights, class_sum_squares, offset, scale
            )
        theta = markov_coefficients(
            class_sums, moments.class_weights, class_sum_squares.sum(axis=0), self.getOrDefault(self.gamma)
        )
        return ScoreResult(
            scores=theta,
            label_values=moments.label_values,
            class_counts=moments.class_counts.tolist(),
            n_rows=moments.n_rows,
            info={"method": "lfs", "gamma": self.getOrDefault(self.gamma), "scaling": self.getOrDefault(self.scaling)},
        )
