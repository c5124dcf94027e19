"""sparkfs on a Spark Connect session: the pair engine, ReliefF with small classes, and one fit per
selector family with transform and save/load. Run in a child process by
tests/integration/test_spark_connect.py (which also compares the ReliefF numbers with a classic
session's)."""

import os

import numpy as np
import pytest
from pyspark.ml.linalg import Vectors

from sparkfs import InformationSelectorModel, LmbaSelectorModel, ParzenISERankerModel, SimbaSelectorModel
from sparkfs.core import information as info_math
from sparkfs.core import margin_weighting as mw
from sparkfs.core import simba
from sparkfs.core.margin_pool import content_order
from sparkfs.core.options import ReliefOptions
from sparkfs.core.parzen_ise import parzen_ise_in_memory
from sparkfs.spark.blocks import is_connect_session
from sparkfs.spark.neighbours import kernel_sums, nearest, pair_sums
from sparkfs.spark.relief import relief_statistics
from sparkfs.spark.rows import Rows
from tests.core.test_relief import reference_margins
from tests.spark.test_pair_engine import (
    assert_close,
    dataset,
    reference_kernel_sums,
    reference_nearest,
    reference_pair_sums,
)


def small_class_data():
    """tr31-like: classes of 2, 3, 14 and 21 rows (k=10 is larger than the two small ones)."""
    rng = np.random.default_rng(31)
    y = np.repeat([0, 1, 2, 3], [2, 3, 14, 21])
    X = rng.normal(size=(y.size, 6)) + 1.5 * y[:, None] * (np.arange(6) < 2)
    return X, y


def information_in_memory(X, y, bins, criterion, count):
    """The greedy order of sparkfs.core.information on codes of every row (the sample is all rows)."""
    cuts = info_math.equal_frequency_cuts(X, bins)
    rows, columns, values = info_math.non_zero_entries(X)
    codes = np.zeros(X.shape, dtype=np.int64)
    codes[rows, columns] = info_math.bin_codes(values, columns, cuts)
    C, p = int(y.max()) + 1, X.shape[1]
    tables = np.zeros((p, bins, C), dtype=np.int64)
    for j in range(p):
        np.add.at(tables[j], (codes[:, j], y), 1)

    def step_terms(s):
        joint = np.zeros((p, bins, bins, C), dtype=np.int64)
        for j in range(p):
            np.add.at(joint[j], (codes[:, j], codes[:, s], y), 1)
        return info_math.step_information(joint[:, 1:], tables[s])

    relevance = info_math.mutual_information(tables)
    return info_math.greedy_selection(relevance, step_terms, count, criterion).order


def connect_df(spark, X, y, partitions=1, sparse=False):
    """Rows in order, split into ``partitions`` by range of position (no reordering)."""
    rows = []
    for i in range(len(y)):
        nonzero = np.flatnonzero(X[i])
        vector = Vectors.sparse(X.shape[1], nonzero.tolist(), X[i, nonzero].tolist()) if sparse and i % 4 \
            else Vectors.dense(X[i].tolist())
        rows.append((i, vector, float(y[i])))
    df = spark.createDataFrame(rows, ["position", "features", "label"])
    if partitions > 1:
        df = df.repartitionByRange(partitions, "position").sortWithinPartitions("position")
    return df.drop("position")


def test_the_session_is_spark_connect(spark):
    assert is_connect_session(spark)


@pytest.mark.parametrize("sparse,partitions", [(False, 1), (True, 3)])
def test_engine_on_connect_equals_brute_force(spark, sparse, partitions):
    X, y = dataset("integer" if not sparse else "real")
    df = connect_df(spark, X, y, partitions, sparse)
    A = np.array([[-1.0, 1.0, 1.0], [1.0, -1.0, 1.0], [1.0, 1.0, -1.0]])
    with Rows(df, "features", num_features=5, label_col="label", num_classes=3, query_batch_bytes=8 * 5 * 7) as rows:
        assert rows.transport == "dataframe"
        queries = rows.sample(10, seed=3)
        table = nearest(rows, queries, 3, metric="euclidean", feature_weights=np.array([1.0, 2.0, 0.5, 1.0, 1.0]))
        pairs = (np.arange(10), (np.arange(10) * 7) % 26, np.linspace(-1.0, 2.0, 10))
        sums = pair_sums(rows, queries, *pairs, difference="square", per_query="driver")
        margins = kernel_sums(rows, queries, "abs", group_weights=A, per_query="dataframe")
        collected = {row["row_id"]: row["sums"].toArray() for row in margins.query_frame.collect()}
    ref_ids, _ = reference_nearest(X, y, queries.ids, 3, "euclidean", np.array([1.0, 2.0, 0.5, 1.0, 1.0]))
    if not sparse:
        np.testing.assert_array_equal(table.neighbour_ids, ref_ids)
    assert_close(sums.query_sums, reference_pair_sums(X, queries.ids, *pairs, "square"))
    one_hot = np.eye(3)[y]
    ref_margins = reference_kernel_sums(X, queries.ids, one_hot[queries.ids], one_hot, A, "abs")
    assert_close(np.array([collected[i] for i in queries.ids]), ref_margins)


@pytest.mark.parametrize("variant", ["relief", "relieff"])
def test_relieff_with_small_classes_on_connect(spark, results_dir, variant):
    X, y = small_class_data()
    result = relief_statistics(connect_df(spark, X, y, 2), "features", "label", num_features=6, num_classes=4,
                               options=ReliefOptions(variant=variant, k=10, return_query_margins=True))
    ids = np.arange(len(y))
    assert_close(result.query_margins, reference_margins(X, y, ids, ids, variant, k=10))
    assert result.info["short_classes"] == {"0": 1, "1": 2}
    assert result.info["transport"] == "dataframe"
    np.save(os.path.join(results_dir, f"{variant}_small_classes.npy"), result.scores)


#: (method of the registry, params) of the fit / transform / save / load test; with the other Connect
#: modules' lists, what `sparkfs methods` may call tested on Connect (tests/test_method_registry.py).
SELECTOR_FITS = [
    ("lfs", {"numFeatures": 2}),
    ("lfs", {"numFeatures": 2, "statsEngine": "arrow", "scaling": "range"}),
    ("qfs", {"numFeatures": 2, "gamma": 0.0}),
    ("relieff", {"numFeatures": 2, "k": 3}),
    ("prelief", {"numFeatures": 2, "sampleSize": 20, "sigma": 0.2}),
    ("anova", {"numFeatures": 2}),
    ("variance", {"numFeatures": 2}),
    ("f-regression", {"numFeatures": 2}),  # the class indices taken as a continuous label
    ("lmba", {"numFeatures": 2, "batchSize": 10, "iterations": 20, "preset": "paper"}),   # two steps of 10
    ("simba", {"numFeatures": 2, "batchSize": 10, "iterations": 20, "preset": "paper"}),
    ("parzen-ise", {"numFeatures": 2, "groups": "clusters", "numClusters": 2, "maxIter": 2, "heldOutFeature": 0,
                    "fcmMaxIter": 3}),
    ("mrmr", {"numFeatures": 2, "bins": 4}),
    ("jmi", {"numFeatures": 2, "bins": 4}),
    ("cmim", {"numFeatures": 2, "bins": 4}),
]
#: The methods this module runs on Connect: the fits above, and Relief's statistics with small classes.
CONNECT_METHODS = sorted({method for method, _ in SELECTOR_FITS} | {"relief", "relieff"})


def _selector(method, params):
    from sparkfs.methods import build_selector

    selector = build_selector(method, {name: value for name, value in params.items() if name != "numFeatures"})
    return selector.setNumFeatures(params["numFeatures"])


@pytest.mark.parametrize("method, params", SELECTOR_FITS,
                         ids=[method + ("-arrow" if "statsEngine" in params else "")
                              for method, params in SELECTOR_FITS])
def test_selector_fit_transform_save_load_on_connect(spark, tmp_path, method, params):
    X, y = small_class_data()
    df = connect_df(spark, X, y, 2)
    model = _selector(method, params).fit(df)
    if isinstance(model, (LmbaSelectorModel, SimbaSelectorModel)):  # equal to the in-memory driver
        in_memory = mw.lmba_in_memory if isinstance(model, LmbaSelectorModel) else simba.simba_in_memory
        order = content_order(X, y, np.arange(len(y)), 0)  # without rowIdCol the pool is visited in content order
        np.testing.assert_allclose(model.featureArray("raw_weights"),
                                   in_memory(X[order], y[order], batch_size=10, iterations=20)[1], rtol=1e-9)
    elif isinstance(model, ParzenISERankerModel):  # unsupervised: equal to the in-memory model
        _, want = parzen_ise_in_memory(X, num_clusters=2, max_iter=2, fixed_feature=0, fcm_max_iter=3)
        np.testing.assert_allclose(model.scores, want["scores"], rtol=1e-8)  # the default rankBy's scores
        assert model.summary["groups"] == "fcm"
    elif method == "f-regression":  # equal to scikit-learn's F test of the correlation
        from sklearn.feature_selection import f_regression

        np.testing.assert_allclose(model.scores, f_regression(X, y)[0], rtol=1e-9)
    elif isinstance(model, InformationSelectorModel):  # equal to the core on all rows' codes
        assert model.selectionOrder == information_in_memory(X, y, bins=4, criterion=method, count=2)
    else:
        assert sorted(model.selectedFeatures) == [0, 1]  # the two informative features
    reduced = model.transform(df).select("selected_features").first()[0]
    assert reduced.size == 2
    model.write().overwrite().save(str(tmp_path / "model"))
    loaded = type(model).load(str(tmp_path / "model"))
    np.testing.assert_array_equal(loaded.scores, model.scores)
    assert loaded.selectedFeatures == model.selectedFeatures


def test_libsvm_reader_on_connect(spark, tmp_path):
    """Our LIBSVM reader is DataFrame API only: SVMlight lines read, a bad line named, on Connect."""
    from sparkfs.errors import InvalidInputError
    from sparkfs.io.readers import read_dataset

    path = tmp_path / "svmlight.txt"
    path.write_text("1 1:0.5 3:2 # a comment\n0\tqid:1 2:1\n")
    dataset = read_dataset(spark, str(path), "libsvm")
    assert dataset.num_features == 3
    assert [(row.label, row.features.indices.tolist()) for row in dataset.df.collect()] == [(1.0, [0, 2]), (0.0, [1])]
    path.write_text("1 1:0.5\n0 2:1\n1 1:nan\n")
    with pytest.raises(InvalidInputError, match=f"line 3 of {path} .*'1:nan': the value 'nan' is not a finite"):
        read_dataset(spark, str(path), "libsvm")
