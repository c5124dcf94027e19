"""Parzen-ISE's options and the rules around its runs (:mod:`sparkfs.core.parzen_ise`).

:func:`check_options` holds every check of the method's options, written once: the in-memory
driver (:func:`sparkfs.core.parzen_ise.parzen_ise_in_memory`) and the Spark layer's
:class:`sparkfs.core.options.ParzenISEOptions` both call it, and its messages name the function
whose parameters they are. The held-out feature's rule (:func:`runs_with_held_out_feature`: one
run, or the paper's ``"auto"`` strategy of two) and the scores that rank (:func:`final_scores`:
the ``rank_by`` rule of the marginal reading, else the weights) are shared the same way. Pure
NumPy; the reasons for each choice are in docs/parzen_ise.md.
"""

from __future__ import annotations

from typing import Callable, Optional

import numpy as np

from sparkfs.core import parzen_ise_marginal as pim
from sparkfs.core.param_caps import MAX_BLOCK_SIZE, MAX_PASS_ITERATIONS
from sparkfs.core.selection import rank_features

#: How FCM memberships enter the density (choice 2 of :mod:`sparkfs.core.parzen_ise`).
MEMBERSHIPS = ("hard", "soft")
#: Readings of the criterion (docs/parzen_ise.md, section 0); the first is the default.
CRITERIA = ("marginal", "image")
DEFAULT_CRITERION = "marginal"


def criterion_power(criterion: str) -> int:
    """The power to which a reading raises the values (in their variances' products): the marginal
    reading squares them; the image reading squares variances (``v_k^2``, eq. 22), fourth powers of
    the values. :func:`sparkfs.core.scaling.check_magnitude` bounds the values by it."""
    return 4 if criterion == "image" else 2
#: How the marginal optimum ranks the features (docs/parzen_ise.md, section 0).
DEFAULT_RANK_BY = "reference"



#: Kernel evaluations (rows x rows x features) one evaluation of the criterion may take before the
#: selector's default fits on a sample: 5e8 is about a minute for a whole fit on a 2-core machine.
DEFAULT_PAIR_BUDGET = 5 * 10**8
#: The smallest default sample (when even it exceeds the budget, it is still used).
MIN_DEFAULT_SAMPLE = 100
#: Explicit pair kernels (stored/stored pairs) one evaluation of the sparse pair sums may take on
#: every row: about 20 s an evaluation on a 2-core machine (~30 ns a pair in one core, hard groups).
SPARSE_PAIR_BUDGET = 1.5 * 10**9
#: Above that budget, features with more stored values than this are estimated by landmarks.
SPARSE_FEATURE_ROWS = 400
#: Landmark rows of the estimated features.
SPARSE_LANDMARKS = 400
#: Rows sampled for the fuzzy c-means start, per cluster (the first C distinct ones by key are taken).
START_ROWS_PER_CLUSTER = 8


def _invalid(parameter: str, constraint: str, value, owner: str = "parzen_ise_in_memory") -> ValueError:
    return ValueError(f"The {parameter!r} parameter of {owner} must be {constraint}. Got {value!r} instead.")


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _positive_float(parameter: str, value, allow_zero: bool = False, owner: str = "parzen_ise_in_memory") -> float:
    number = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not number or not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise _invalid(parameter, f"a float in the range {'[' if allow_zero else '('}0, inf)", value, owner)
    return float(value)


def runs_with_held_out_feature(run: Callable, num_features: int, fixed_feature) -> list:
    """The descents of the paper's two strategies: ``run(fixed, None)`` once with the given feature
    held at 0 (None: none), or, for ``"auto"`` (choice 6), with feature 0 and then again with the
    first run's least important feature (by its ``scores`` when it has them, else its weights),
    ``run(fixed, first_run)`` (a run may start from the first run's weights). The last run's
    weights are the result."""
    if num_features == 1:
        fixed_feature = None
    if fixed_feature != "auto":
        return [run(fixed_feature, None)]
    first_run = run(0, None)
    least_important = int(rank_features(np.delete(first_run.get("scores", first_run["weights"]), 0))[-1]) + 1
    return [first_run, run(least_important, first_run)]


def check_options(num_features: Optional[int], *, memberships: str, fixed_feature, landmarks, max_iter, block_size,
                  learning_rate, tol, variance_floor, h, criterion: str = DEFAULT_CRITERION,
                  rank_by: str = DEFAULT_RANK_BY, owner: str = "parzen_ise_in_memory") -> dict:
    """Validated options shared by the in-memory driver and the Spark layer's
    :class:`sparkfs.core.options.ParzenISEOptions` (descent options, variance floor and h, None
    when it is to be derived from the data); ``num_features`` None: ``fixed_feature``'s upper
    bound is checked later (:meth:`ParzenISEOptions.checked`). Messages name ``owner``."""
    def refuse(parameter, constraint, value):
        return _invalid(parameter, constraint, value, owner)

    if criterion not in CRITERIA:
        raise refuse("criterion", "a str among {'marginal', 'image'}", criterion)
    if memberships not in MEMBERSHIPS:
        raise refuse("memberships", "a str among {'hard', 'soft'}", memberships)
    if not (fixed_feature is None or fixed_feature == "auto" or (
            _is_int(fixed_feature) and 0 <= fixed_feature < (num_features or np.inf))):
        bound = "inf)" if num_features is None else f"{num_features - 1}]"
        raise refuse("fixed_feature", f"None, 'auto' or an int in the range [0, {bound}", fixed_feature)
    if landmarks is not None and not (_is_int(landmarks) and landmarks >= 2):
        raise refuse("landmarks", "None or an int in the range [2, inf)", landmarks)
    for name, value, cap in (("max_iter", max_iter, MAX_PASS_ITERATIONS), ("block_size", block_size, MAX_BLOCK_SIZE)):
        if not (_is_int(value) and 1 <= value <= cap):
            raise refuse(name, f"an int in the range [1, {cap}]", value)
    if rank_by not in pim.RANKINGS:
        raise refuse("rank_by", "a str among {" + ", ".join(repr(r) for r in pim.RANKINGS) + "}", rank_by)
    return {"criterion": criterion, "rank_by": rank_by,
            "descent": {"learning_rate": _positive_float("learning_rate", learning_rate, owner=owner),
                        "max_iter": int(max_iter), "tol": _positive_float("tol", tol, allow_zero=True, owner=owner)},
            "variance_floor": _positive_float("variance_floor", variance_floor, owner=owner),
            "h": None if h is None else _positive_float("h", h, owner=owner)}


def final_scores(runs) -> np.ndarray:
    """The scores that rank the features: the last run's ``scores`` (the ``rank_by`` rule of the
    marginal reading), else its weights (the image reading: every free weight is positive)."""
    return np.asarray(runs[-1].get("scores", runs[-1]["weights"]), dtype=float)
