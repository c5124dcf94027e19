"""Is a label column a set of classes? Checks on the distinct labels and their row counts.

Every selector here is supervised by class labels; a regression target or a row identifier
given as the label would silently become hundreds of one-row classes.
"""

from __future__ import annotations

import math
from numbers import Real
from typing import Sequence

import numpy as np

from sparkfs.errors import InvalidInputError

#: More distinct values than this, some of them non-integer: the label is taken as continuous.
MAX_FRACTIONAL_CLASSES = 10
#: At least this many classes: a class of a single row among them is announced (a label typo?).
MIN_CLASSES_FOR_SINGLE_ROW_NOTE = 3
#: More distinct values than this (and than half the rows): most classes would have one row.
MIN_SUSPICIOUS_CLASSES = 10
#: More than MIN_SUSPICIOUS_CLASSES classes, half of them with fewer rows than this: an integer-valued
#: target (diabetes' disease progression: 214 values in 442 rows) rather than classes.
MIN_MEDIAN_CLASS_ROWS = 3

_ADVICE = ("For a regression target give the label type: labelType='continuous' (CLI: --label-type continuous, "
           "config label_type: continuous) with method f-regression, or with the MultiSURF family and TuRF "
           "(scikit-rebate's continuous endpoint). For classes: bin the target first, or set "
           "allowManyClasses=True (CLI: --param allowManyClasses=true) to take every distinct value as a class.")


def _examples(values: Sequence, count: int = 4) -> str:
    return ", ".join(repr(v) for v in list(values)[:count])


def _not_finite(value) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and not math.isfinite(float(value))


def check_finite_labels(label_values: Sequence, class_counts, label_col: str = "label") -> None:
    """Refuse NaN and infinite labels: such a value names no class, and taken as one it would make a
    class of the rows whose label is missing or broken (Spark groups every NaN together)."""
    bad = [(value, int(count)) for value, count in zip(label_values, class_counts) if _not_finite(value)]
    bad.sort(key=lambda pair: (not math.isnan(float(pair[0])), 0.0 if math.isnan(float(pair[0])) else float(pair[0])))
    if bad:
        rows = sum(count for _, count in bad)
        which = ", ".join(f"{float(value)}: {count} row(s)" for value, count in bad)
        raise InvalidInputError(
            f"{rows} row(s) have a NaN or infinite label in column '{label_col}' ({which}): a label names a class; "
            "remove those rows or give them their class")


def single_row_classes(label_values: Sequence, class_counts) -> str:
    """A note naming the classes of a single row when there are at least ``MIN_CLASSES_FOR_SINGLE_ROW_NOTE``
    classes and fewer than half of them have a single row (a typo such as '1_0' makes such a class;
    many single-row classes are the identifier case above); "" when there is nothing to say."""
    counts = np.asarray(class_counts, dtype=np.int64)
    single = [value for value, count in zip(label_values, counts) if count == 1]
    if len(label_values) < MIN_CLASSES_FOR_SINGLE_ROW_NOTE or not single or len(single) * 2 >= len(label_values):
        return ""
    return (f"{len(single)} of the {len(label_values)} classes have a single row (label(s) {_examples(single)}): "
            "a typo in the label column? A class of one row has no other row to compare it with")


def check_class_labels(label_values: Sequence, class_counts, label_col: str = "label",
                       allow_many_classes: bool = False) -> None:
    """Refuse NaN and infinite labels (always), and a label column that looks continuous or like an
    identifier, unless allowed.

    Continuous: numeric labels, more than ``MAX_FRACTIONAL_CLASSES`` distinct values and at
    least one of them not an integer (0.0 / 1.0 labels are classes); or more than
    ``MIN_SUSPICIOUS_CLASSES`` distinct values, half of them in fewer than
    ``MIN_MEDIAN_CLASS_ROWS`` rows (an integer-valued target). Identifier-like: more than
    ``MIN_SUSPICIOUS_CLASSES`` distinct values and more than half as many as rows.
    """
    check_finite_labels(label_values, class_counts, label_col)
    if allow_many_classes:
        return
    counts = np.asarray(class_counts, dtype=np.int64)
    num_classes, n_rows = len(label_values), int(counts.sum())
    numeric = all(isinstance(v, Real) and not isinstance(v, bool) for v in label_values)
    fractional = [v for v in label_values if numeric and not float(v).is_integer()]
    if fractional and num_classes > MAX_FRACTIONAL_CLASSES:
        raise InvalidInputError(
            f"label column '{label_col}' looks continuous: {num_classes} distinct values in {n_rows} rows, "
            f"{len(fractional)} of them not integers (e.g. {_examples(fractional)}). {_ADVICE}")
    if num_classes > MIN_SUSPICIOUS_CLASSES and np.median(counts) < MIN_MEDIAN_CLASS_ROWS:
        small = int(np.sum(counts < MIN_MEDIAN_CLASS_ROWS))
        raise InvalidInputError(
            f"label column '{label_col}' has {num_classes} distinct values in {n_rows} rows, {small} of them in fewer "
            f"than {MIN_MEDIAN_CLASS_ROWS} rows (e.g. {_examples(label_values)}): a continuous target (integer-valued, "
            f"as a count or a score) or an identifier? {_ADVICE}")
    if num_classes > MIN_SUSPICIOUS_CLASSES and num_classes > n_rows / 2:
        single = int(np.sum(counts == 1))
        raise InvalidInputError(
            f"label column '{label_col}' has {num_classes} distinct values in {n_rows} rows ({single} classes of "
            f"a single row, e.g. {_examples(label_values)}): an identifier or a continuous target? {_ADVICE}")
