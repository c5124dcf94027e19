"""Small helpers for building test DataFrames (shared by the Spark and integration tests)."""

import numpy as np
import scipy.sparse as sp
from pyspark.ml.linalg import Vectors


def to_vectors(X, sparse=False):
    if sp.issparse(X):
        X = X.tocsr()
        return [Vectors.sparse(X.shape[1], X[i].indices.tolist(), X[i].data.tolist()) for i in range(X.shape[0])]
    if sparse:
        return [Vectors.sparse(len(row), {int(j): float(v) for j, v in enumerate(row) if v != 0}) for row in X]
    return [Vectors.dense([float(v) for v in row]) for row in X]


def frame_schema(columns, label_type=float):
    """The schema of a test frame with these columns (features, label, weight, row_id), for
    ``createDataFrame`` of a Python RDD: inferring it would read the RDD's first rows, a partial
    read after which Spark retires that Python worker, and the next one imports sparkfs again
    (about 1 s of CPU a test). A list of names (inference) for a label type not listed here."""
    from pyspark.ml.linalg import VectorUDT
    from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

    label = {float: DoubleType(), int: LongType(), str: StringType()}.get(label_type)
    if label is None:
        return list(columns)
    types = {"features": VectorUDT(), "label": label, "weight": DoubleType(), "row_id": LongType()}
    return StructType([StructField(name, types[name], True) for name in columns])


def make_df(spark, X, y, partitions=1, sparse=False, weights=None, label_type=float, persist=True):
    """A DataFrame (features, label[, weight]) with exactly `partitions` partitions, rows in order.

    Persisted (lazily: the first action fills the cache) unless ``persist=False``: a DataFrame made
    from Python rows is read back through a Python worker at every pass, which made a fit on 90 rows
    three to four times slower than on the cached rows; the cache keeps the partitions and their
    order. The selectors then skip persisting a copy of their own (``reads_cached_data``), the path a
    user's cached input takes; ``persist=False`` keeps the other one."""
    vectors = to_vectors(X, sparse)
    labels = [None if v is None else label_type(v) for v in y]
    if weights is None:
        rows = list(zip(vectors, labels))
        columns = ["features", "label"]
    else:
        rows = [(v, label, float(w)) for v, label, w in zip(vectors, labels, weights)]
        columns = ["features", "label", "weight"]
    rdd = spark.sparkContext.parallelize(rows, partitions)
    frame = spark.createDataFrame(rdd, frame_schema(columns, label_type))
    return frame.persist() if persist else frame


def random_sparse(n, p, density, seed, classes=3):
    rng = np.random.default_rng(seed)
    X = sp.random(n, p, density=density, random_state=seed, format="csr") * 4.0
    y = rng.integers(0, classes, n)
    return X, y


def refused(capsys, code, out, *fragments):
    """Assert a CLI refusal: exit 2, a ``sparkfs: error:`` line holding every fragment, and no
    output at ``out``; returns the message."""
    err = capsys.readouterr().err
    assert code == 2, err[-2000:]
    message = next(line for line in err.splitlines() if line.startswith("sparkfs: error: "))
    assert all(fragment in message for fragment in fragments), message
    assert not out.exists()
    return message


def jobs_run_by(spark, group, action):
    """(what action() returned, the sorted ids of the Spark jobs it ran), counted under a job group of its own
    and the group cleared after (to no group: an empty name would still be a group for later tests)."""
    context = spark.sparkContext
    context.setJobGroup(group, group)
    try:
        value = action()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty("spark.job.description", None)
    return value, sorted(context.statusTracker().getJobIdsForGroup(group))


def traced_peak(call):
    """``call()``'s result and the peak bytes Python allocated meanwhile (tracemalloc)."""
    import tracemalloc

    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
