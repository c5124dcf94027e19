"""The ``missing`` Param of every selector: what a fit does with missing values, before its statistics pass.

``'refuse'`` (default) refuses a NaN feature value, a null label or a null vector with the message it always
had, and adds no Spark job (the NaN is named on the statistics pass's error path). ``'drop-rows'`` leaves out
the rows with a NaN feature value, a null or NaN label or a null vector; ``'zero'`` sets NaN feature values to
0 and still refuses null or NaN labels and null vectors. ``'pairwise'`` is the pairwise deletion of the
univariate filters of the class moments (anova, chi2, variance): each feature's statistic is computed from the
rows where that feature is present, with its own per-class counts; the selectors without such a rule refuse it
by name (:meth:`HasMissing.takesPairwiseMissing`). Infinite values are refused under every policy. The Spark work
(one counting pass, then a lazy cleaning that keeps sparse vectors sparse) is :mod:`sparkfs.spark.missing_values`;
the summary records ``{"policy", "rows_dropped", "values_set_to_zero"}``, and under 'pairwise' also
``values_left_out`` (NaN values) and ``features_with_missing``.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from pyspark.ml.param import Param, TypeConverters

from sparkfs.selectors._declared import DeclaredParams, declare
from sparkfs.spark.missing_values import MISSING_POLICIES, cleaned_input

#: The methods (``--method`` names) whose statistic has a pairwise-deletion rule: ``missing='pairwise'``.
PAIRWISE_METHODS = ("anova", "chi2", "variance")


class HasMissing(DeclaredParams):
    """The ``missing`` Param (module notes)."""

    missing: Param = declare(
        "missing",
        "what the fit does with missing values: 'refuse' (default: a NaN feature value, a null label or a null "
        "vector is refused), 'drop-rows' (rows with a NaN feature value, a null or NaN label or a null vector "
        "are left out), 'zero' (NaN feature values are set to 0; null or NaN labels are still refused) or "
        "'pairwise' (anova, chi2, variance: each feature's statistic from the rows where it is present); "
        "infinite values are refused under every policy. The summary records the rows dropped or values set",
        TypeConverters.toString, default="refuse",
        constraint=((lambda value: value in MISSING_POLICIES),
                    "a str among {" + ", ".join(repr(policy) for policy in MISSING_POLICIES) + "}"))

    def getMissing(self) -> str:
        return self.getOrDefault(self.missing)

    def setMissing(self, value: str):
        return self._set(missing=value)

    def takesPairwiseMissing(self) -> bool:
        """Whether the fit, with its Params, has a pairwise-deletion rule for missing values
        (``missing='pairwise'``): the univariate filters of the class moments say so."""
        return False

    def checkMissing(self) -> None:
        """Refuse ``missing='pairwise'`` for a fit without a pairwise rule, naming the methods that have one."""
        if self.getMissing() == "pairwise" and not self.takesPairwiseMissing():
            raise ValueError(f"{type(self).__name__}: missing='pairwise' leaves a NaN out of one feature's statistic "
                             "only, a rule of the univariate filters ({}); this method has none: use "
                             "missing='drop-rows' or 'zero'".format(", ".join(PAIRWISE_METHODS)))


def input_under_policy(selector, dataset) -> Tuple[Any, Dict[str, Any]]:
    """(the input a fit of ``selector`` reads under its ``missing`` Param, the summary's facts of it). The
    label column is checked where the fit uses labels."""
    selector.checkMissing()
    uses_labels = selector.requires_labels or selector._uses_labels(dataset)
    label_col = selector.getLabelCol() if uses_labels and selector.getLabelCol() in dataset.columns else None
    return cleaned_input(dataset, selector.getFeaturesCol(), label_col, selector.getMissing())
