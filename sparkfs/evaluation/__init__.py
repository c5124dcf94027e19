"""Driver-side evaluation studies built on the selectors (no pyspark in this package).

:mod:`sparkfs.evaluation.probes` holds the probe-feature protocol of Yang & Hu (2012), Section
5.1 (probe features, feature-selection ROC, kNN accuracy against the number of top-ranked
features, biased sampling of the minority class). Pure NumPy / scikit-learn: no pyspark import.
"""

from sparkfs.evaluation.probes import accuracy_curve, add_probes, imbalance, selection_roc, stratified_split

__all__ = ["accuracy_curve", "add_probes", "imbalance", "selection_roc", "stratified_split"]
# Also here (imported by name, not re-exported, to keep `import sparkfs.evaluation` light):
# cross_validation (EvaluationStudy, fold_plan, write_results), report (build_report),
# stability_runs (StabilityStudy, subsample_plan).
