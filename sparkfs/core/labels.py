"""Is a label column a set of classes? Checks on the distinct labels and their row counts.

Every selector here is supervised by class labels; a regression target or a row identifier
given as the label would silently become hundreds of one-row classes.
"""

from __future__ import annotations

from numbers import Real
from typing import Sequence

import numpy as np

from sparkfs.errors import InvalidInputError

#: More distinct values than this, some of them non-integer: the label is taken as continuous.
MAX_FRACTIONAL_CLASSES = 10
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


def check_class_labels(label_values: Sequence, class_counts, label_col: str = "label",
                       allow_many_classes: bool = False) -> None:
    """Refuse a label column that looks continuous or like an identifier, unless allowed.

    Continuous: numeric labels, more than ``MAX_FRACTIONAL_CLASSES`` distinct values and at
    least one of them not an integer (0.0 / 1.0 labels are classes); or more than
    ``MIN_SUSPICIOUS_CLASSES`` distinct values, half of them in fewer than
    ``MIN_MEDIAN_CLASS_ROWS`` rows (an integer-valued target). Identifier-like: more than
    ``MIN_SUSPICIOUS_CLASSES`` distinct values and more than half as many as rows.
    """
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
