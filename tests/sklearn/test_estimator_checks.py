"""scikit-learn's own estimator checks on every estimator of the front (and the generic
``MomentFilterSelector``, ``ReliefFamilySelector``, ``MultiSURFFamilySelector`` and
``InformationFamilySelector``). Checks that cannot apply are listed in ``EXPECTED_FAILED`` with the
reason (docs/sklearn.md repeats them)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from sparkfs.sklearn import (
    FRONT,
    InformationFamilySelector,
    MomentFilterSelector,
    MultiSURFFamilySelector,
    ReliefFamilySelector,
)

#: estimator class name -> {check name: why it cannot apply}.
EXPECTED_FAILED = {
    "SVMRFESelector": {
        "check_transformer_n_iter": "max_iter (the Spark Param maxIter) caps each liblinear fit of the elimination "
                                    "loop, which runs several fits; the core returns how many did not converge, "
                                    "not an iteration count (n_iter_)",
    },
}

GENERIC = [MomentFilterSelector(test="anova"), ReliefFamilySelector(variant="relieff"),
           MultiSURFFamilySelector(variant="surf"), InformationFamilySelector(criterion="jmi")]
ESTIMATORS = [FRONT[method]() for method in sorted(FRONT)] + GENERIC


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=lambda e: EXPECTED_FAILED.get(type(e).__name__, {}))
def test_scikit_learn_estimator_checks(estimator, check):
    check(estimator)
