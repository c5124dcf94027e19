"""Column types are checked from the schema before any Spark job, as Spark ML's
``transformSchema``: a features column of arrays (what pandas writes) is refused by name with the
conversion, for every method family of the registry; so are labels and weights of the wrong type."""

import numpy as np
import pandas as pd
import pytest

from sparkfs.errors import InvalidInputError
from sparkfs.methods import FAMILIES, build_selector
from tests.helpers import jobs_run_by

#: one method of each family of the registry
ONE_PER_FAMILY = sorted({family: method for method, family in sorted(FAMILIES.items(), reverse=True)}.values())


def _jobs_run_by(spark, action):
    """The Spark jobs ``action`` started (its own job group)."""
    return jobs_run_by(spark, "sparkfs-type-check", action)[1]


@pytest.fixture(scope="module")
def frames(spark):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(24, 4)), np.arange(24) % 2
    arrays = spark.createDataFrame(pd.DataFrame({"features": list(X), "label": y}))
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F

    vectors = arrays.withColumn("features", array_to_vector("features"))
    return {"arrays": arrays, "vectors": vectors,
            "array label": vectors.withColumn("label", F.array(F.col("label"))),
            "string weight": vectors.withColumn("w", F.lit("1.0"))}


@pytest.mark.parametrize("method", ONE_PER_FAMILY)
def test_an_array_features_column_is_refused_by_name_before_any_job(spark, frames, method):
    selector = build_selector(method, {}).setNumFeatures(1)
    errors = []

    def fit():
        with pytest.raises(InvalidInputError) as caught:
            selector.fit(frames["arrays"])
        errors.append(str(caught.value))
    assert _jobs_run_by(spark, fit) == []
    assert "features column 'features' holds array<double>" in errors[0]
    assert "array_to_vector" in errors[0]


def test_wrong_label_and_weight_types_are_refused_before_any_job(spark, frames):
    def fit_label():
        with pytest.raises(InvalidInputError, match="label column 'label' holds array<bigint>"):
            build_selector("lfs", {}).setNumFeatures(1).fit(frames["array label"])

    def fit_weight():
        with pytest.raises(InvalidInputError, match="weight column 'w' holds string"):
            build_selector("lfs", {}).setNumFeatures(1).setWeightCol("w").fit(frames["string weight"])
    assert _jobs_run_by(spark, fit_label) == []
    assert _jobs_run_by(spark, fit_weight) == []


def test_a_model_refuses_arrays_in_transform(spark, frames):
    model = build_selector("anova", {}).setNumFeatures(1).fit(frames["vectors"])
    with pytest.raises(InvalidInputError, match="array_to_vector"):
        model.transform(frames["arrays"])
