"""How Lmba and Simba run their loop: steps, passes, batches and iterate averaging. Pure NumPy.

Both methods move a weight vector w one picked instance (or one mini-batch) at a time. The
papers fix one run: Li & Lu (2009) beta = 1 constant, I = the number of instances (one pass),
one instance per update; Gilad-Bachrach et al. (2004) add Delta as it is (beta = 1), one pass.
sparkfs's defaults differ (``docs/lmba_simba.md``, section E, chose them on probe features,
ranking stability and 1-NN accuracy); :data:`PAPER` keeps the papers' run.

* :class:`MarginRun` -- one validated set of those settings, shared by the in-memory drivers and
  the Spark layer (one object instead of six keyword arguments carried down);
* :class:`IterateAverage` -- the running mean of every iterate of w (Polyak-Ruppert averaging):
  with ``averaging="iterates"`` the ranking is read from it instead of from the last w.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from sparkfs.core.param_caps import MAX_PICKED_INSTANCES

SCHEDULES = ("constant", "decay")
BATCH_RULES = ("replay", "sum")
AVERAGINGS = ("none", "iterates")
#: Passes over the pool that ``iterations`` (and ``batchSize``, ``passes``) may ask for: the papers
#: pick each pool instance about once (Li & Lu's I = the pool size); a hundred passes is far beyond them.
MAX_POOL_PASSES = 100


def _invalid(parameter: str, owner: str, constraint: str, value) -> ValueError:
    return ValueError(f"The {parameter!r} parameter of {owner} must be {constraint}. Got {value!r} instead.")


@dataclass(frozen=True)
class MarginRun:
    """The loop of Lmba / Simba.

    Attributes
    ----------
    schedule : {"constant", "decay"}
        beta_t = step_size, or step_size / sqrt(t + 1) with t the 0-based count of picked
        instances (:func:`sparkfs.core.margin_loops.step_sizes`).
    step_size : float > 0
    passes : int in [1, MAX_POOL_PASSES]
        Passes over the pool when ``iterations`` is not given: I = passes x pool size (each pass
        a new seeded permutation, :func:`sparkfs.core.margin_loops.instance_order`).
    batch_size : int in [1, MAX_PICKED_INSTANCES] or None
        Instances per update of the search (one Spark job); None = ``batches_per_pass``.
    batches_per_pass : int >= 1
        With ``batch_size=None``: batches of ceil(pool size / batches_per_pass) instances, i.e. that
        many Spark jobs per pass whatever the pool size.
    batch_rule : {"replay", "sum"}
        "replay": the search (Lmba's active hinge pairs, Simba's nearest hit and miss) is made at
        the batch's first w, then each instance takes its own step with the current w; "sum": the
        batch's gradients (Deltas) are summed at the same w for one step. Equal at batch 1.
    averaging : {"none", "iterates"}
        Rank by the last w ("none", the papers) or by the mean of the iterates after every
        instance's step ("iterates"; with rule "sum", after every step).
    iterations : int in [1, MAX_PICKED_INSTANCES] or None
        Instances picked in total; None = passes x pool size.
    """

    schedule: str = "constant"
    step_size: float = 1.0
    passes: int = 1
    batch_size: Optional[int] = 1
    batch_rule: str = "replay"
    averaging: str = "none"
    iterations: Optional[int] = None
    batches_per_pass: int = 16

    def __post_init__(self):
        owner = "MarginRun"
        for name, choices in (("schedule", SCHEDULES), ("batch_rule", BATCH_RULES), ("averaging", AVERAGINGS)):
            value = getattr(self, name)
            if not isinstance(value, str) or value not in choices:
                raise _invalid(name, owner, "a str among {" + ", ".join(repr(c) for c in choices) + "}", value)
        for name, maximum in (("passes", MAX_POOL_PASSES), ("batch_size", MAX_PICKED_INSTANCES),
                              ("iterations", MAX_PICKED_INSTANCES), ("batches_per_pass", None)):
            value = getattr(self, name)
            if value is None and name in ("iterations", "batch_size"):
                continue
            integer = not isinstance(value, (bool, np.bool_)) and isinstance(value, (int, np.integer))
            if not integer or value < 1 or (maximum is not None and value > maximum):
                raise _invalid(name, owner, f"an int in the range [1, {'inf)' if maximum is None else f'{maximum}]'}",
                               value)
        number = isinstance(self.step_size, (int, float, np.integer, np.floating)) and not isinstance(self.step_size,
                                                                                                        bool)
        if not number or not np.isfinite(self.step_size) or self.step_size <= 0:
            raise _invalid("step_size", owner, "a float in the range (0, inf)", self.step_size)

    def picked(self, pool_size: int) -> int:
        """Instances picked in total: ``iterations``, else passes x pool size."""
        return int(self.iterations) if self.iterations is not None else int(self.passes) * int(pool_size)

    def batch(self, pool_size: int) -> int:
        """Instances per batch: ``batch_size``, else ceil(pool size / batches_per_pass)."""
        if self.batch_size is not None:
            return int(self.batch_size)
        return max(1, -(-int(pool_size) // int(self.batches_per_pass)))

    def steps(self, pool_size: int) -> int:
        """Updates of the search (Spark jobs): ceil(picked / batch)."""
        picked = self.picked(pool_size)
        return -(-picked // self.batch(pool_size)) if picked > 0 else 0

    def describe(self, pool_size: int) -> dict:
        """What the run did, for a model's summary."""
        batch = self.batch(pool_size)
        picked = self.steps(pool_size) * batch  # the last batch is full
        return {"schedule": self.schedule, "step_size": float(self.step_size), "instances_picked": picked,
                "pool_passes": round(picked / pool_size, 3) if pool_size else 0.0, "batch_size": batch,
                "batch_rule": self.batch_rule, "averaging": self.averaging, "steps": self.steps(pool_size)}


#: The papers' run: beta = 1 constant, one pass, one instance per update, the last w.
PAPER = MarginRun(schedule="constant", step_size=1.0, passes=1, batch_size=1, batch_rule="replay", averaging="none")

#: Instances in the pool when ``sampleSize`` is unset and the input has more rows (not with
#: ``preset="paper"``): the pool is drawn in one pass and the whole loop, neighbour searches
#: included, runs among its rows on the driver (:mod:`sparkfs.core.margin_pool`): Lmba and Simba
#: compare every picked instance with every row searched, so their cost is quadratic in the rows.
DEFAULT_POOL = 1000
#: sparkfs's loop for Lmba and for Simba when ``preset="default"``: the settings that won
#: studies/lmba_simba_defaults_study.py (docs/lmba_simba.md, section E: probes out of the top k,
#: Kuncheva stability across instance orders, 1-NN accuracy, on 14 sets with probe features).
LMBA_DEFAULT_RUN = MarginRun(schedule="decay", step_size=1.0, passes=3, batch_size=8, batch_rule="replay",
                             averaging="none")
SIMBA_DEFAULT_RUN = MarginRun(schedule="constant", step_size=1.0, passes=3, batch_size=None, batches_per_pass=16,
                              batch_rule="replay", averaging="none")
#: Instance-row distances a fit may compute (iterations x rows, each over every feature): 10^12
#: is hours of a large cluster's time; beyond it a run is not expected to end.
MAX_INSTANCE_ROW_PAIRS = 10**12


class IterateAverage:
    """Running mean of the iterates of w (Polyak-Ruppert averaging), fed after every update.

    The mean includes every iterate after an update (not the starting w = 1); with no update at
    all it is the starting w."""

    def __init__(self, w):
        self.start = np.array(w, dtype=float)
        self.total = np.zeros_like(self.start)
        self.count = 0

    def add(self, w) -> None:
        self.total += np.asarray(w, dtype=float)
        self.count += 1

    def mean(self) -> np.ndarray:
        return self.total / self.count if self.count else self.start.copy()
