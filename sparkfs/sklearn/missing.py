"""``missing=`` of the scikit-learn front: the Spark selectors' ``missing`` Param on in-memory rows.

``'refuse'`` (default) leaves ``X`` and ``y`` to scikit-learn's checks, which refuse NaN and infinity.
``'drop-rows'`` leaves out the rows with a NaN in ``X`` or a missing label (None, or NaN in a float ``y``), and
their ``sample_weight``; ``'zero'`` sets NaN values of ``X`` to 0 (a sparse matrix drops those stored entries)
and refuses missing labels by count. ``'pairwise'`` (the univariate filters of the class moments: anova, chi2,
variance) keeps every row, refuses missing labels as 'zero' does, and the filter scores each feature on the rows
where it is present (:mod:`sparkfs.core.missing_values`). Infinite values are refused under every policy. What
was done is kept as the estimator's ``missing_`` (``{"policy", "rows_dropped", "values_set_to_zero"}``, and under
'pairwise' ``values_left_out`` and ``features_with_missing``: the Spark summary's).
"""

from __future__ import annotations

from typing import Any, Dict, NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

from sparkfs.errors import InvalidInputError

#: The values of ``missing`` (the Spark selectors' ``missing`` Param's).
MISSING_POLICIES = ("refuse", "drop-rows", "zero", "pairwise")
#: The methods whose statistic has a pairwise-deletion rule (``missing='pairwise'``).
PAIRWISE_METHODS = ("anova", "chi2", "variance")


class CleanRows(NamedTuple):
    """The rows to score under a policy, and what the estimator records of it (``missing_``)."""

    X: Any
    y: Any
    sample_weight: Optional[np.ndarray]
    facts: Dict[str, Any]


def missing_labels(y) -> np.ndarray:
    """(n,) bool: the labels that are None, or NaN (in a float or object ``y``)."""
    values = np.asarray(y)
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind != "O":
        return np.zeros(values.shape[0], dtype=bool)
    return np.array([value is None or (isinstance(value, float) and value != value) for value in values], dtype=bool)


def _stored_values(X) -> np.ndarray:
    return X.data if sp.issparse(X) else X


def _rows_with_nan(X) -> np.ndarray:
    if sp.issparse(X):
        nan = np.isnan(X.data)
        return np.bincount(np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[nan], minlength=X.shape[0]) > 0
    return np.isnan(X).any(axis=1)


def _zeroed(X):
    if sp.issparse(X):
        X = X.copy()
        X.data[np.isnan(X.data)] = 0.0
        X.eliminate_zeros()
        return X
    return np.where(np.isnan(X), 0.0, X)


def rows_under_policy(X, y, sample_weight, policy: str, owner: str) -> CleanRows:
    """``X`` (float64, dense or CSR, NaN allowed: checked here), ``y`` (None for a method without labels) and
    ``sample_weight`` under ``policy`` ('drop-rows', 'zero' or 'pairwise': ``X`` as it is); refuses infinite
    values, missing labels under 'zero' and 'pairwise' and an input 'drop-rows' leaves empty
    (:class:`~sparkfs.errors.InvalidInputError`)."""
    values = _stored_values(X)
    infinite = np.isinf(values)
    if infinite.any():
        raise InvalidInputError(f"{owner}: X holds {int(infinite.sum())} infinite value(s): missing={policy!r} "
                                "handles NaN only, and an infinite value is not a missing value; clip or remove them")
    no_label = missing_labels(y) if y is not None else np.zeros(X.shape[0], dtype=bool)
    what = {"zero": "sets NaN values of X to 0", "pairwise": "leaves NaN values of X out feature by feature"}
    if policy in what and no_label.any():
        raise InvalidInputError(f"{owner}: {int(no_label.sum())} row(s) have a missing label (None or NaN) in y: "
                                f"missing='{policy}' {what[policy]} and cannot stand in for a label; "
                                "missing='drop-rows' leaves those rows out")
    if policy == "pairwise":  # the filter leaves the NaN values out of each feature's moments
        return CleanRows(X, y, sample_weight, {"policy": policy, "rows_dropped": 0, "values_set_to_zero": 0,
                                               "values_left_out": int(np.isnan(values).sum())})
    if policy == "zero":
        nan_values = int(np.isnan(values).sum())
        return CleanRows(_zeroed(X) if nan_values else X, y, sample_weight,
                         {"policy": policy, "rows_dropped": 0, "values_set_to_zero": nan_values})
    drop = _rows_with_nan(X) | no_label
    if X.shape[0] and drop.all():
        raise InvalidInputError(f"{owner}: every row ({X.shape[0]}) has a NaN value in X or a missing label: "
                                "missing='drop-rows' left no row to fit")
    facts = {"policy": policy, "rows_dropped": int(drop.sum()), "values_set_to_zero": 0}
    if not drop.any():
        return CleanRows(X, y, sample_weight, facts)
    keep = ~drop
    return CleanRows(X[keep], None if y is None else np.asarray(y)[keep],
                     None if sample_weight is None else np.asarray(sample_weight)[keep], facts)
