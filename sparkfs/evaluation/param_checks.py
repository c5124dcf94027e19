"""The argument checks the evaluation's functions share, with scikit-learn's wording."""

from __future__ import annotations

import numpy as np


def is_int(value) -> bool:
    """An int or NumPy integer, not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def invalid_parameter(parameter: str, owner: str, constraint: str, value) -> ValueError:
    """The ValueError for ``parameter`` of ``owner`` that is not ``constraint``."""
    return ValueError(f"The '{parameter}' parameter of {owner} must be {constraint}. Got {value!r} instead.")
