"""Per-class first and second moments in one pass, label discovery and input diagnosis.

``class_moments`` is the single pass behind LFS, anova and chi2 (and the label mapping every
selector needs): per class, the row count (or weight sum), the column sums and the column sums of
squares. Three engines compute the same numbers:

* ``"float"`` (the selectors' default): ``mapInArrow`` blocks summed in float64 with NumPy, the
  labels discovered in the same pass (:mod:`sparkfs.spark.float_moments`); equal to rounding
  for another partitioning.
* ``"jvm"`` (this function's default, for the label discovery of every selector):
  ``groupBy(label).agg(Summarizer(sum, normL2))``. The aggregation runs in
  the JVM on Spark's own vector types, sparse vectors update only their non-zeros, and no row
  crosses to Python. sum of squares = normL2^2 (one sqrt/square round trip: relative error
  ~1e-16). Per class it keeps and shuffles three dense arrays of p doubles, which made it three
  bare passes on a term matrix of 20 classes.
* ``"arrow"``: ``mapInArrow`` blocks summarised with NumPy/SciPy and merged in partition
  order (see :mod:`sparkfs.spark.blocks`). The sums are exact (:mod:`sparkfs.core.exact_sums`:
  integer limbs, rounded once on the driver), so they are the correctly rounded sums of the
  terms, the same bits for any partitioning; the JVM engine's agree with them to rounding. LFS,
  QFS, anova and chi2 use this engine with ``deterministic=true``.

``benchmarks/bench_lfs.py`` measures them. Bad input (null vectors, vectors of different sizes,
NaN/inf, null labels) is diagnosed only when the pass fails or returns non-finite sums, so the
happy path stays one pass.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from typing import Callable, List, Optional

import numpy as np

from sparkfs.core.exact_sums import (
    ExactSums,
    as_arrays,
    exact_class_moment_sums,
    exact_column_sums,
    from_arrays,
    merged_exact_sums,
    rounded_sums,
)
from sparkfs.core.missing_values import present_class_weights
from sparkfs.core.scaling import binary_exponents, check_magnitude
from sparkfs.errors import DriverBudgetError, InvalidInputError
from sparkfs.spark.blocks import aggregate_partitions
from sparkfs.spark.connect_retries import lost_server
from sparkfs.spark.float_moments import TooManyClassesError, moments_float
from sparkfs.spark.memory import memory_setting_bytes


@dataclass
class ClassMoments:
    """Sufficient statistics of one pass, classes in label order (index i = label_values[i])."""

    label_values: List[object]
    class_counts: np.ndarray  # (C,) rows per class
    class_weights: np.ndarray  # (C,) weight sums (= counts when unweighted)
    class_sums: np.ndarray  # (C, p) weighted column sums
    class_sum_squares: np.ndarray  # (C, p) weighted column sums of squares
    num_features: int
    feature_min: np.ndarray = None  # (p,) column minimum over rows of positive weight
    feature_max: np.ndarray = None  # (p,) column maximum
    extra: dict = field(default_factory=dict)
    #: None: the columns are the p features in order. Else the sorted ids of the features the columns
    #: hold (the float engine on vectors too wide for dense sums): the ids that occur and one that does
    #: not, whose moments (all zeros) every feature missing from ``feature_ids`` shares.
    feature_ids: Optional[np.ndarray] = None
    #: The column of ``feature_ids`` that stands for the features missing from it.
    absent_column: Optional[int] = None
    #: With ``missing='pairwise'`` (C, p): the weight sums of the rows of each class where each feature
    #: is present (not NaN), the per-feature counts of :mod:`sparkfs.core.moment_filters`; else None.
    class_present: Optional[np.ndarray] = None
    #: With ``missing='pairwise'`` (p,): the NaN values of each feature, left out of its moments.
    missing_values: Optional[np.ndarray] = None

    @property
    def n_rows(self) -> int:
        return int(self.class_counts.sum())

    @property
    def num_classes(self) -> int:
        return len(self.label_values)

    @property
    def sum_of_squares(self) -> np.ndarray:
        return self.class_sum_squares.sum(axis=0)

    def per_feature(self, values: np.ndarray) -> np.ndarray:
        """A statistic of the held columns (the last axis) for all ``num_features`` features: every
        feature outside ``feature_ids`` takes the value of the one held that never occurs (a
        statistic of each column alone is the same for every all-zero column). The values
        themselves when the columns are all features."""
        values = np.asarray(values)
        if self.feature_ids is None:
            return values
        absent = self.absent_column
        spread = np.repeat(values[..., absent:absent + 1], self.num_features, axis=-1)
        spread[..., self.feature_ids] = values
        return spread

    def feature_id(self, column: int) -> int:
        """The feature a held column stands for."""
        return int(column if self.feature_ids is None else self.feature_ids[column])


def _sort_labels(values):
    """Numeric labels in numeric order, anything else by its string form."""
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) for v in values):
        return sorted(values, key=float)
    return sorted(values, key=str)


def metadata_vector_size(df, features_col: str) -> Optional[int]:
    """The vector size Spark ML's attribute metadata of the column declares (``ml_attr.num_attrs``:
    Spark's LIBSVM source, ``VectorAssembler``, sparkfs's readers and ``convert``), or None."""
    size = df.schema[features_col].metadata.get("ml_attr", {}).get("num_attrs")
    return int(size) if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None


def first_vector_size(df, features_col: str) -> int:
    """The vector size: from the column's metadata where Spark ML's attributes declare it (as Spark
    ML's ``MetadataUtils.getNumFeatures``; no job, and every pass still checks each vector's size),
    else of the first non-null vector (one row read). Raises on empty input or vectors."""
    from pyspark.sql import functions as F

    declared = metadata_vector_size(df, features_col) if features_col in df.columns else None
    if declared == 0:
        raise InvalidInputError(f"the feature vectors in column '{features_col}' are empty (size 0): "
                                "no features to select")
    if declared is not None:
        return declared
    row = df.select(features_col).where(F.col(features_col).isNotNull()).first()
    if row is None:
        raise InvalidInputError("the input has no rows (or only rows with a null feature vector)")
    if row[0].size == 0:
        raise InvalidInputError(f"the feature vectors in column '{features_col}' are empty (size 0): "
                                "no features to select")
    return int(row[0].size)


def diagnose_input(df, features_col: str, label_col: Optional[str], weight_col: Optional[str] = None) -> None:
    """Count the rows with each kind of bad value and raise a clear error for the first found.

    Runs only on the error path (it is a full scan plus per-row array work), and not at all when
    the error being handled says that the Spark Connect server went away: there is no server to
    ask, and the caller re-raises that error, which the command reports.
    """
    handled = sys.exc_info()[1]
    if handled is not None and lost_server(handled) is not None:
        return
    from pyspark.ml.functions import vector_to_array
    from pyspark.sql import functions as F

    values = F.when(F.col(features_col).isNotNull(), vector_to_array(F.col(features_col)))
    non_finite = F.exists(values, lambda x: F.isnan(x) | (F.abs(x) == F.lit(float("inf"))))
    aggregations = [
        F.count(F.lit(1)).alias("rows"),
        F.sum(F.col(features_col).isNull().cast("long")).alias("null_vectors"),
        F.min(F.size(values)).alias("min_size"),
        F.max(F.size(values)).alias("max_size"),
        F.sum(non_finite.cast("long")).alias("non_finite"),
    ]
    if label_col is not None:
        aggregations.append(F.sum(F.col(label_col).isNull().cast("long")).alias("null_labels"))
    if weight_col is not None:
        weight = F.col(weight_col)
        bad_weight = weight.isNull() | F.isnan(weight) | (weight < 0) | (F.abs(weight) == F.lit(float("inf")))
        aggregations.append(F.sum(bad_weight.cast("long")).alias("bad_weights"))
    stats = df.agg(*aggregations).first().asDict()
    if not stats["rows"]:
        raise InvalidInputError("the input has no rows")
    if stats["null_vectors"]:
        raise InvalidInputError(f"{stats['null_vectors']} row(s) have a null feature vector in column '{features_col}'")
    if stats["min_size"] != stats["max_size"]:
        sizes = df.select(F.size(values).alias("size")).groupBy("size").count().orderBy("size").collect()
        described = ", ".join(f"size {r['size']}: {r['count']} row(s)" for r in sizes[:6])
        raise InvalidInputError(f"feature vectors in column '{features_col}' have different sizes ({described})")
    if stats["non_finite"]:
        raise InvalidInputError(f"{stats['non_finite']} row(s) have NaN or infinite feature values")
    if stats.get("null_labels"):
        raise InvalidInputError(f"{stats['null_labels']} row(s) have a null label in column '{label_col}'")
    if stats.get("bad_weights"):
        raise InvalidInputError(
            f"{stats['bad_weights']} row(s) have a null, NaN, infinite or negative weight in column '{weight_col}'"
        )


def _moments_jvm(df, features_col, label_col, weight_col, num_features, extremes: bool = True):
    from pyspark.ml.stat import Summarizer
    from pyspark.sql import functions as F

    # min and max double the aggregation buffers shuffled per class (and add a non-zero count):
    # asked for only when the caller uses them.
    summarizer = Summarizer.metrics(*(("sum", "normL2") + (("min", "max") if extremes else ())))
    weight = F.col(weight_col) if weight_col else F.lit(1.0)
    summary = summarizer.summary(F.col(features_col), weight) if weight_col else summarizer.summary(F.col(features_col))
    rows = (
        df.groupBy(F.col(label_col).alias("label"))
        .agg(summary.alias("moments"), F.count(F.lit(1)).alias("count"), F.sum(weight.cast("double")).alias("weight"))
        .collect()
    )
    result = {}
    for row in rows:
        class_sum = row["moments"]["sum"].toArray()
        if class_sum.shape[0] != num_features:
            raise InvalidInputError(
                f"feature vectors in column '{features_col}' have different sizes ({class_sum.shape[0]} and "
                f"{num_features})"
            )
        minimum = row["moments"]["min"].toArray() if extremes else None
        maximum = row["moments"]["max"].toArray() if extremes else None
        result[row["label"]] = (row["count"], row["weight"], class_sum, row["moments"]["normL2"].toArray() ** 2,
                                minimum, maximum)
    return result


def _exact_sums_in_key_space(part, prefix: str, positions, num_keys: int, width: int) -> ExactSums:
    """A summary's per-class exact sums (classes ``positions`` of ``num_keys``, ``width`` columns
    each) laid out over all ``num_keys`` classes, zeros elsewhere."""
    sums = from_arrays(part, prefix)
    if len(positions) == num_keys:  # every class present (positions sorted, unique): as it is
        return sums
    limbs = np.zeros((num_keys, width, sums.limbs.shape[1]), dtype=np.int64)
    limbs[positions] = sums.limbs.reshape(len(positions), width, -1)
    return ExactSums(sums.lowest, limbs.reshape(num_keys * width, -1))


def _class_extremes(matrix, classes, kept, num_classes: int):
    """Per-class column min and max over the ``kept`` rows (+inf / -inf for a class without
    any), in one sort of the rows by class: dense, or CSR with its implicit zeros counted."""
    num_features = matrix.shape[1]
    rows = np.flatnonzero(kept)
    order = rows[np.argsort(classes[rows], kind="stable")]
    present, starts, rows_per_class = np.unique(classes[order], return_index=True, return_counts=True)
    minimum, maximum = np.full((num_classes, num_features), np.inf), np.full((num_classes, num_features), -np.inf)
    if not present.size:
        return minimum, maximum
    if not hasattr(matrix, "tocsr"):
        ordered = np.asarray(matrix)[order]
        minimum[present], maximum[present] = np.minimum.reduceat(ordered, starts), np.maximum.reduceat(ordered, starts)
        return minimum, maximum
    csr = matrix.tocsr()[order]
    slot = np.repeat(classes[order], np.diff(csr.indptr)) * num_features + csr.indices
    flat_min, flat_max = minimum.ravel(), maximum.ravel()
    np.minimum.at(flat_min, slot, csr.data)
    np.maximum.at(flat_max, slot, csr.data)
    stored = np.bincount(slot, minlength=num_classes * num_features).reshape(num_classes, num_features)
    has_zero = np.zeros((num_classes, num_features), dtype=bool)
    has_zero[present] = stored[present] < rows_per_class[:, None]  # an implicit zero in the class
    minimum[has_zero] = np.minimum(minimum[has_zero], 0.0)
    maximum[has_zero] = np.maximum(maximum[has_zero], 0.0)
    return minimum, maximum


def _moments_arrow(df, features_col, label_col, weight_col, num_features):
    def summarize(block):
        matrix, labels = block[features_col], block[label_col]
        weights = block[weight_col].astype(np.float64) if weight_col else np.ones(len(labels))
        if not (np.isfinite(weights).all() and (weights >= 0).all()):
            raise ValueError("bad instance weight")  # the driver's diagnosis names the rows
        # A string key keeps int/str/float labels apart; a null (NaN after Arrow) label keys as "None".
        label_keys = np.array(["None" if v is None or (isinstance(v, float) and v != v) else repr(v) for v in labels])
        unique_keys, inverse = np.unique(label_keys, return_inverse=True)
        # exact per-class sums of w x and w x^2 (core.exact_sums): the same bits for any partitioning
        non_finite = False
        try:
            sums, squares = exact_class_moment_sums(matrix, inverse, weights, len(unique_keys))
        except ValueError:  # NaN/inf values or squares: the driver's check names the problem
            non_finite = True
            sums = squares = exact_column_sums([], [], len(unique_keys) * matrix.shape[1])
        class_min, class_max = _class_extremes(matrix, inverse, weights > 0, len(unique_keys))
        first_label_position = np.unique(inverse, return_index=True)[1]
        return {
            "keys": unique_keys,
            "values": np.array([str(labels[i]) for i in first_label_position]),
            "is_numeric": np.array([isinstance(labels[i], (int, float, np.number)) for i in first_label_position]),
            "counts": np.bincount(inverse, minlength=len(unique_keys)).astype(np.float64),
            **as_arrays(exact_column_sums(weights, inverse, len(unique_keys)), "weights_"),
            **as_arrays(sums, "sums_"),
            **as_arrays(squares, "squares_"),
            "non_finite": np.array([non_finite]),
            "min": class_min,
            "max": class_max,
        }

    def merge(left, right):
        keys = np.union1d(left["keys"], right["keys"])
        merged = {"keys": keys}
        for part in (left, right):
            part["position"] = np.searchsorted(keys, part["keys"])
        for name in ("values", "is_numeric"):
            column = np.empty(len(keys), dtype=np.result_type(left[name], right[name]))
            column[left["position"]] = left[name]
            column[right["position"]] = right[name]
            merged[name] = column
        merged["non_finite"] = left["non_finite"] | right["non_finite"]
        total = np.zeros(len(keys))
        np.add.at(total, left["position"], left["counts"])
        np.add.at(total, right["position"], right["counts"])
        merged["counts"] = total
        for name, width in (("weights_", 1), ("sums_", num_features), ("squares_", num_features)):
            parts = [_exact_sums_in_key_space(part, name, part["position"], len(keys), width) for part in (left, right)]
            merged.update(as_arrays(merged_exact_sums(*parts), name))
        for name, reduce in (("min", np.minimum), ("max", np.maximum)):
            extreme = np.full((len(keys),) + left[name].shape[1:], np.inf if name == "min" else -np.inf)
            for part in (left, right):
                extreme[part["position"]] = reduce(extreme[part["position"]], part[name])
            merged[name] = extreme
        for part in (left, right):
            del part["position"]
        return merged

    columns = [features_col, label_col] + ([weight_col] if weight_col else [])
    summary = aggregate_partitions(df, columns, summarize, merge, num_features=num_features)
    if summary is None:
        return {}
    result = {}
    class_weights = rounded_sums(from_arrays(summary, "weights_"))
    class_sums, class_squares = (rounded_sums(from_arrays(summary, name)).reshape(-1, num_features)
                                 for name in ("sums_", "squares_"))
    if summary["non_finite"][0]:  # NaN/inf values or squares: the caller's check names the problem
        class_sums = np.full_like(class_sums, np.nan)
    for i in range(len(summary["keys"])):
        raw = summary["values"][i]
        if summary["keys"][i] == "None":
            value = None
        elif summary["is_numeric"][i]:
            value = float(raw)
        else:
            value = str(raw)
        result[value] = (int(summary["counts"][i]), float(class_weights[i]), class_sums[i],
                         class_squares[i], summary["min"][i], summary["max"][i])
    return result


def class_moments(
    df,
    features_col: str,
    label_col: str,
    weight_col: Optional[str] = None,
    engine: str = "jvm",
    num_features: Optional[int] = None,
    extremes: bool = True,
    pairwise: bool = False,
) -> ClassMoments:
    """Per-class counts, weighted column sums and sums of squares in one pass over ``df``.

    ``engine``: ``"jvm"`` (Spark's Summarizer), ``"arrow"`` (exact sums) or ``"float"`` (NumPy
    float sums in one mapInArrow, :mod:`sparkfs.spark.float_moments`; raises
    :class:`~sparkfs.spark.float_moments.TooManyClassesError` for a label with too many values).
    ``extremes=False`` lets the JVM and float engines skip the column min and max (``feature_min`` and
    ``feature_max`` are then None): smaller aggregation buffers for the callers that need neither.
    ``pairwise`` (the float engine only): NaN feature values are left out of the sums and extremes, and
    :attr:`ClassMoments.class_present` holds the per-class weights of the present values of every
    feature (pairwise deletion); the caller refuses infinite values first.

    Raises :class:`InvalidInputError` naming the problem for empty input, null vectors or
    labels, vectors of different sizes, NaN/inf values and bad weights.
    """
    for name in [features_col, label_col] + ([weight_col] if weight_col else []):
        if name not in df.columns:
            raise InvalidInputError(f"column '{name}' not found; the input has columns {df.columns}")
    if num_features is None:  # the float pass reads each block's size itself (one job without metadata)
        num_features = (metadata_vector_size(df, features_col) if engine == "float"
                        else first_vector_size(df, features_col))
    compute = {"jvm": _moments_jvm, "arrow": _moments_arrow, "float": moments_float}.get(engine)
    if compute is None:
        raise ValueError(f"unknown statistics engine '{engine}': use 'float', 'jvm' or 'arrow'")
    if pairwise and engine != "float":
        raise ValueError(f"missing='pairwise' counts the present values in the 'float' statistics pass; engine "
                         f"{engine!r} does not")
    options = {"extremes": extremes} if engine in ("jvm", "float") else {}
    if pairwise:
        options["pairwise"] = True
    feature_ids = absent_column = missing = None
    try:
        per_label = compute(df, features_col, label_col, weight_col, num_features, **options)
        if engine == "float":  # FloatMoments: the keyed pass holds the ids that occur only
            per_label, feature_ids, absent_column, num_features, missing = per_label
    except InvalidInputError:
        diagnose_input(df, features_col, label_col, weight_col)
        raise
    except TooManyClassesError as error:  # the float pass stopped: the caller counts the labels first
        raise TooManyClassesError(f"column '{label_col}' has too many distinct values for per-class sums ({error})"
                                  ) from None
    except Exception:
        # A failed job (null vector, size mismatch inside the aggregation...): name the cause.
        diagnose_input(df, features_col, label_col, weight_col)
        raise
    if not per_label:
        raise InvalidInputError("the input has no rows")
    all_finite = all(np.isfinite(s).all() and np.isfinite(q).all() and np.isfinite(w)
                     for _, w, s, q, _, _ in per_label.values())
    if None in per_label or not all_finite:
        if not pairwise:  # with NaN values left out, the sums are not finite only for too large values
            diagnose_input(df, features_col, label_col, weight_col)
        if None in per_label:
            raise InvalidInputError(f"{per_label[None][0]} row(s) have a null label in column '{label_col}'")
        minima, maxima = _column_extremes(df, features_col, per_label)
        check_magnitude(minima, maxima, owner="the class moments (sums of squares)")
        raise InvalidInputError("the feature sums are not finite (values too large?)")
    labels = _sort_labels(list(per_label))
    counts, weights, sums, squares, minima, maxima = zip(*(per_label[label] for label in labels))
    if sums[0].shape[0] == 0:  # the float pass sizes the vectors itself: the message first_vector_size gives
        raise InvalidInputError(f"the feature vectors in column '{features_col}' are empty (size 0): "
                                "no features to select")
    with_extremes = minima[0] is not None
    width = int(sums[0].shape[0])
    present = missing_values = None
    if missing is not None:
        present, missing_values = present_class_weights(weights, counts,
                                                        np.vstack([missing[label][0] for label in labels]),
                                                        np.vstack([missing[label][1] for label in labels]))
    return ClassMoments(
        label_values=[v.item() if isinstance(v, np.generic) else v for v in labels],
        class_counts=np.asarray(counts, dtype=np.int64),
        class_weights=np.asarray(weights, dtype=np.float64),
        class_sums=np.vstack(sums),
        class_sum_squares=np.vstack(squares),
        num_features=width if feature_ids is None else int(num_features),
        feature_min=np.min(np.vstack(minima), axis=0) if with_extremes else None,
        feature_max=np.max(np.vstack(maxima), axis=0) if with_extremes else None,
        feature_ids=feature_ids,
        absent_column=absent_column,
        class_present=present,
        missing_values=missing_values,
    )


def rescaled_class_moments(moments: ClassMoments, df, features_col: str, label_col: str,
                           weight_col: Optional[str] = None, *, engine: str, underflowing: np.ndarray,
                           extremes=None, pairwise: bool = False) -> ClassMoments:
    """``moments`` with the columns of ``underflowing`` (a mask of its columns: their sums of squares
    lost their digits, :func:`sparkfs.core.univariate.underflowing_squares`) replaced by the moments
    of those features times ``2^-e`` (:func:`sparkfs.core.scaling.binary_exponents`), from one more
    pass over them alone (``VectorSlicer``, then two exact products by powers of two, as a
    subnormal's ``2^-e`` alone overflows). Only a statistic that does not depend on a feature's unit
    may be computed from the result (an F value, a standardised theta): for every other feature it
    is the same number as from ``moments``. ``extremes``: (minima, maxima) of all features when
    known and ``moments`` has none, else one JVM pass takes them. ``extra["rescaled"]`` maps each
    feature id to its ``e``."""
    from pyspark.ml.feature import ElementwiseProduct, VectorSlicer
    from pyspark.ml.linalg import Vectors

    columns = np.flatnonzero(underflowing)
    if columns.size == 0:
        return moments
    ids = [moments.feature_id(int(column)) for column in columns]
    if moments.feature_min is not None:            # per held column
        minimum, maximum = moments.feature_min[columns], moments.feature_max[columns]
    else:                                          # over all features
        lowest, highest = extremes if extremes is not None else column_extremes(df, features_col)
        minimum, maximum = np.asarray(lowest)[ids], np.asarray(highest)[ids]
    exponents = binary_exponents(np.maximum(np.abs(minimum), np.abs(maximum)))
    first, second = -(exponents // 2), -(exponents - exponents // 2)   # each product exact and finite
    frame = df.select(features_col, label_col, *([weight_col] if weight_col else []))
    frame = VectorSlicer(inputCol=features_col, outputCol="__sparkfs_sliced", indices=ids).transform(frame)
    for step, powers in enumerate((first, second)):
        frame = ElementwiseProduct(scalingVec=Vectors.dense(np.ldexp(1.0, powers)), inputCol=frame.columns[-1],
                                   outputCol=f"__sparkfs_rescaled{step}").transform(frame)
    rescaled = class_moments(frame, frame.columns[-1], label_col, weight_col, engine=engine, num_features=len(ids),
                             extremes=moments.feature_min is not None, pairwise=pairwise)
    if rescaled.label_values != moments.label_values:  # the same rows, so the same classes in the same order
        raise RuntimeError(f"the rescaled pass found the classes {rescaled.label_values}, the first "
                           f"{moments.label_values}")
    result = replace(moments, class_sums=moments.class_sums.copy(), class_sum_squares=moments.class_sum_squares.copy(),
                     extra={**moments.extra, "rescaled": {int(i): int(e) for i, e in zip(ids, exponents)}})
    result.class_sums[:, columns] = rescaled.class_sums
    result.class_sum_squares[:, columns] = rescaled.class_sum_squares
    if moments.feature_min is not None:
        result.feature_min, result.feature_max = moments.feature_min.copy(), moments.feature_max.copy()
        result.feature_min[columns], result.feature_max[columns] = rescaled.feature_min, rescaled.feature_max
    return result


def class_moments_counting_labels(df, features_col: str, label_col: str, weight_col: Optional[str] = None, *,
                                  engine: str, extremes: bool, check_labels: Callable,
                                  pairwise: bool = False) -> ClassMoments:
    """:func:`class_moments`, whose pass also counts the labels (no label-count job before it). When
    the float engine stops for too many distinct labels (a continuous label taken for classes), the
    labels are counted first and ``check_labels(label_values, class_counts)`` runs (the selector's
    label checks, which name a continuous label) before Spark's Summarizer takes the classes.
    ``moments.extra["engine"]`` names the engine that ran. ``pairwise`` (:func:`class_moments`) has no
    Summarizer to fall back on: too many labels for its per-class arrays are refused."""
    try:
        moments = class_moments(df, features_col, label_col, weight_col, engine=engine, extremes=extremes,
                                pairwise=pairwise)
    except TooManyClassesError:
        label_values, class_counts = label_counts(df, label_col)
        check_labels(label_values, class_counts)
        if pairwise:
            raise InvalidInputError(f"column '{label_col}' has {len(label_values)} distinct values: too many for "
                                    "the per-class counts of missing='pairwise'; use missing='drop-rows' or "
                                    "'zero'") from None
        check_summarizer_memory(df, features_col, len(label_values), extremes)
        engine = "jvm"
        moments = class_moments(df, features_col, label_col, weight_col, engine=engine, extremes=extremes)
    moments.extra["engine"] = engine
    return moments


#: Arrays of p doubles Spark's Summarizer keeps per class for sum and normL2 (mean, M2, weight sums,
#: non-zero counts); min and max add two.
SUMMARIZER_ARRAYS = 4


def check_summarizer_memory(df, features_col: str, num_classes: int, extremes: bool) -> None:
    """Refuse, before its pass, a per-class Summarizer whose buffers cannot fit the JVM's heap: each
    running task and the merge hold C x p x (4, or 6 with extremes) doubles; the local master runs
    every task in the driver's JVM (``spark.driver.memory``), a cluster's executors have
    ``spark.executor.memory``. Raises :class:`DriverBudgetError` naming the setting; silent when the
    heap is not known (Spark Connect) or when it fits."""
    spark = df.sparkSession
    try:
        local = str(spark.conf.get("spark.master", "")).startswith("local")
        setting = "spark.driver.memory" if local else "spark.executor.memory"
        heap = memory_setting_bytes(spark.conf.get(setting, None) or "1g")
        tasks = spark.sparkContext.defaultParallelism if local else int(spark.conf.get("spark.executor.cores", "1"))
    except Exception:
        return
    num_features = metadata_vector_size(df, features_col) or first_vector_size(df, features_col)
    needed = 8 * num_classes * num_features * (SUMMARIZER_ARRAYS + 2 * extremes) * (tasks + 1)
    if heap and needed > heap:
        raise DriverBudgetError(
            f"{num_classes} classes x {num_features} features: Spark's per-class Summarizer would hold about "
            f"{needed / 2**30:.1f} GiB of sums ({tasks} tasks and their merge), more than {setting}="
            f"{spark.conf.get(setting, '1g')}. Raise {setting}, or give fewer features (hash into fewer ids) or "
            "fewer classes")


def _column_extremes(df, features_col: str, per_label):
    """Column min and max: from the pass when it computed them, else one JVM pass (error path only)."""
    if all(v[4] is not None for v in per_label.values()):
        return (np.min(np.vstack([v[4] for v in per_label.values()]), axis=0),
                np.max(np.vstack([v[5] for v in per_label.values()]), axis=0))
    return column_extremes(df, features_col)


def column_extremes(df, features_col: str):
    """(column minima, column maxima) of a vector column over all rows: one JVM Summarizer pass."""
    from pyspark.ml.stat import Summarizer
    from pyspark.sql import functions as F

    summary = df.select(Summarizer.metrics("min", "max").summary(F.col(features_col)).alias("s")).first()["s"]
    return summary["min"].toArray(), summary["max"].toArray()


def label_counts(df, label_col: str):
    """Distinct labels (sorted as in :class:`ClassMoments`) and their row counts, in one small pass."""
    from pyspark.sql import functions as F

    if label_col not in df.columns:
        raise InvalidInputError(f"column '{label_col}' not found; the input has columns {df.columns}")
    rows = df.groupBy(F.col(label_col).alias("label")).count().collect()
    counts = {row["label"]: row["count"] for row in rows}
    if None in counts:
        raise InvalidInputError(f"{counts[None]} row(s) have a null label in column '{label_col}'")
    labels = _sort_labels(list(counts))
    return labels, np.array([counts[label] for label in labels], dtype=np.int64)


#: Classes above which the label index is a lookup in a literal map instead of a CASE WHEN: a CASE
#: of 2,000 branches makes generated code beyond the JVM's 64 KB method limit (Spark then logs a
#: 240-line compiler trace and falls back to interpreting it).
CASE_WHEN_CLASSES = 64


def with_label_index(df, label_col: str, label_values, output_col: str = "__label_index"):
    """Add a double column with each row's class index 0..C-1 (JVM-side CASE WHEN, or a literal map
    above :data:`CASE_WHEN_CLASSES` classes; no UDF)."""
    from pyspark.sql import functions as F

    if len(label_values) > CASE_WHEN_CLASSES:
        pairs = [part for position, value in enumerate(label_values) for part in (F.lit(value), F.lit(float(position)))]
        return df.withColumn(output_col, F.element_at(F.create_map(*pairs), F.col(label_col)))
    index = None
    for position, value in enumerate(label_values):
        condition = F.col(label_col) == F.lit(value)
        index = F.when(condition, float(position)) if index is None else index.when(condition, float(position))
    return df.withColumn(output_col, index)
