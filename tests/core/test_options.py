"""The options objects of the methods (``sparkfs/core/options.py``): each
bad value is refused when the object is built, naming the parameter, its owner and the value."""

import pytest

from sparkfs.core.options import MarginWeightOptions, ParzenISEOptions, SVMRFEOptions


@pytest.mark.parametrize("options_class, settings, message", [
    (SVMRFEOptions, {"step": 0}, "The 'step' parameter of svm_rfe must be an int in the range [1, inf) or a float"),
    (SVMRFEOptions, {"C": 0.0}, "The 'C' parameter of svm_rfe must be a float in the range (0, inf). Got 0.0"),
    (SVMRFEOptions, {"halve_above": -1}, "The 'halve_above' parameter of svm_rfe must be an int in the range [0,"),
    (ParzenISEOptions, {"m": 1.0}, "The 'm' parameter of parzen_ise_statistics must be a float in the range (1, inf)"),
    (ParzenISEOptions, {"tol": -1.0}, "The 'tol' parameter of parzen_ise_statistics must be a float in the range [0,"),
    (MarginWeightOptions, {"block_size": 0}, "The 'block_size' parameter of margin_instance_weights must be an int"),
])
def test_bad_values_are_refused_by_name(options_class, settings, message):
    with pytest.raises(ValueError) as refused:
        options_class(**settings)
    assert str(refused.value).startswith(message)


def test_held_out_feature_is_checked_against_the_features():
    options = ParzenISEOptions(fixed_feature=3)
    assert options.checked(4)["descent"] == {"learning_rate": 0.1, "max_iter": 100, "tol": 1e-6}
    with pytest.raises(ValueError, match=r"'fixed_feature' parameter of parzen_ise_statistics .* \[0, 2\]\. Got 3"):
        options.checked(3)
    assert SVMRFEOptions(step=0.5, C=2).driver_solver()["C"] == 2.0
