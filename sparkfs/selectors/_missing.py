"""The ``missing`` Param of every selector: what a fit does with missing values, before its statistics pass.

``'refuse'`` (default) refuses a NaN feature value, a null label or a null vector with the message it always
had, and adds no Spark job (the NaN is named on the statistics pass's error path). ``'drop-rows'`` leaves out
the rows with a NaN feature value, a null or NaN label or a null vector; ``'zero'`` sets NaN feature values to
0 and still refuses null or NaN labels and null vectors. Infinite values are refused under every policy. The
Spark work (one counting pass, then a lazy cleaning that keeps sparse vectors sparse) is
:mod:`sparkfs.spark.missing_values`; the summary records ``{"policy", "rows_dropped", "values_set_to_zero"}``.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from pyspark.ml.param import Param, TypeConverters

from sparkfs.selectors._declared import DeclaredParams, declare
from sparkfs.spark.missing_values import MISSING_POLICIES, cleaned_input


class HasMissing(DeclaredParams):
    """The ``missing`` Param (module notes)."""

    missing: Param = declare(
        "missing",
        "what the fit does with missing values: 'refuse' (default: a NaN feature value, a null label or a null "
        "vector is refused), 'drop-rows' (rows with a NaN feature value, a null or NaN label or a null vector "
        "are left out) or 'zero' (NaN feature values are set to 0; null or NaN labels are still refused); "
        "infinite values are refused under every policy. The summary records the rows dropped or values set",
        TypeConverters.toString, default="refuse",
        constraint=((lambda value: value in MISSING_POLICIES),
                    "a str among {" + ", ".join(repr(policy) for policy in MISSING_POLICIES) + "}"))

    def getMissing(self) -> str:
        return self.getOrDefault(self.missing)

    def setMissing(self, value: str):
        return self._set(missing=value)


def input_under_policy(selector, dataset) -> Tuple[Any, Dict[str, Any]]:
    """(the input a fit of ``selector`` reads under its ``missing`` Param, the summary's facts of it). The
    label column is checked where the fit uses labels."""
    uses_labels = selector.requires_labels or selector._uses_labels(dataset)
    label_col = selector.getLabelCol() if uses_labels and selector.getLabelCol() in dataset.columns else None
    return cleaned_input(dataset, selector.getFeaturesCol(), label_col, selector.getMissing())
