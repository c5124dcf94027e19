"""The loop Lmba (Li & Lu 2009) and Simba (Gilad-Bachrach et al. 2004) share: which instances each
step picks, the step sizes, w = 1, the iterate average and the w that is ranked. Pure NumPy.

Both methods start from w = 1 and move it one mini-batch of picked instances at a time (Lmba's
Section 3.1 step 3, Simba's Algorithm 1 step 2); only the step itself differs:
:func:`sparkfs.core.margin_weighting.lmba_loop` (the hinge terms over every row, then step 3(d)) and
:func:`sparkfs.core.simba.simba_loop` (the nearest hit and miss in the current metric, then step 2c)
are this module's :func:`margin_loop` with their step. The part of a step that sees every row is
injected by the caller: in memory one call of the block kernel or search over the rows, in the Spark
layer one job (:mod:`sparkfs.spark.margin_weighting`), within a pool a call over the pool's rows
(:mod:`sparkfs.core.margin_pool`). So the in-memory drivers, the pool, the scikit-learn front and
the Spark layer run the same loop, and pick the same instances with the same betas for a seed.

The schedule (:func:`instance_order`, :func:`step_sizes`, :func:`batch_step_sizes`) lives here
because every loop needs it; :mod:`sparkfs.core.margin_weighting` re-exports it, its first home.
"""

from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Tuple

import numpy as np

from sparkfs.core.margin_runs import BATCH_RULES, SCHEDULES, IterateAverage, MarginRun
from sparkfs.core.options import check_choice, check_int, check_positive


class LoopResult(NamedTuple):
    """The w a loop ranked (the last w, or the mean of the iterates), its steps, and the pool rows
    never picked (within a pool: their class has no other row there)."""

    ranked: np.ndarray
    steps: int
    left_out: int = 0


def step_sizes(schedule, iterations, step_size=1.0) -> np.ndarray:
    """The beta_t of step 3(d) for t = 0 .. iterations - 1.

    ``"constant"``: beta_t = step_size (the paper's experiments, beta = 1). ``"decay"``:
    beta_t = step_size / sqrt(t + 1) (the paper asks for a decay without fixing one).
    """
    check_choice("schedule", "step_sizes", schedule, SCHEDULES)
    iterations = check_int("iterations", "step_sizes", iterations, 0)
    step_size = check_positive("step_size", "step_sizes", step_size)
    if schedule == "constant":
        return np.full(iterations, step_size)
    return step_size / np.sqrt(np.arange(1, iterations + 1, dtype=float))


def batch_step_sizes(batch_rule, schedule, steps, batch_size, step_size=1.0) -> np.ndarray:
    """beta per step (rule "sum", shape (steps,)) or per picked instance (rule "replay", shape
    (steps, batch_size): the schedule runs over instances, as in the paper's per-instance loop)."""
    check_choice("batch_rule", "batch_step_sizes", batch_rule, BATCH_RULES)
    if batch_rule == "sum":
        return step_sizes(schedule, steps, step_size)
    return step_sizes(schedule, steps * batch_size, step_size).reshape(steps, batch_size)


def number_of_steps(iterations: int, batch_size: int) -> int:
    """Steps (updates of w) that pick ``iterations`` instances ``batch_size`` at a time: ceil(I / B).

    ``iterations`` counts picked instances, the paper's I, whatever the batch size, so a larger
    batch does fewer, averaged updates over the same number of instances (the last batch is
    full, so up to B - 1 more instances are picked).
    """
    return -(-int(iterations) // int(batch_size)) if iterations > 0 else 0


def instance_order(n_instances, iterations, batch_size, seed) -> np.ndarray:
    """Which pool position each step picks (step 3(a)), shape (iterations, batch_size), int64.

    A seeded permutation of the pool (``numpy.random.default_rng(seed)``), a new permutation
    for each pass, concatenated and cut into consecutive batches. A batch straddling two passes
    may hold an instance twice; it then counts twice. batch_size = 1 is the paper's procedure.
    """
    n_instances = check_int("n_instances", "instance_order", n_instances, 1)
    iterations = check_int("iterations", "instance_order", iterations, 0)
    batch_size = check_int("batch_size", "instance_order", batch_size, 1)
    rng = np.random.default_rng(seed)
    needed = iterations * batch_size
    passes = -(-needed // n_instances)
    stream = [rng.permutation(n_instances) for _ in range(passes)]
    order = np.concatenate(stream) if stream else np.zeros(0, dtype=np.int64)
    return order[:needed].astype(np.int64).reshape(iterations, batch_size)


def loop_schedule(pool_size: int, run: MarginRun, seed) -> Tuple[np.ndarray, np.ndarray]:
    """(the pool positions each step picks, (steps, batch); the betas, :func:`batch_step_sizes`) of
    ``run`` over a pool of ``pool_size`` instances: ``run.steps(pool_size)`` steps of
    ``run.batch(pool_size)`` instances in :func:`instance_order`."""
    steps, batch = run.steps(pool_size), run.batch(pool_size)
    order = instance_order(pool_size, steps, batch, seed)
    return order, batch_step_sizes(run.batch_rule, run.schedule, steps, batch, run.step_size)


#: A step of the loop: (the picked positions, their beta(s), w, the iterate average or None) -> the new w.
StepUpdate = Callable[[np.ndarray, np.ndarray, np.ndarray, Optional[IterateAverage]], np.ndarray]


def margin_loop(pickable: np.ndarray, num_features: int, *, run: MarginRun, seed,
                update: StepUpdate, after_step: Optional[Callable[[], None]] = None) -> LoopResult:
    """The loop of Lmba and Simba around one step (module notes).

    Parameters
    ----------
    pickable : ndarray of int
        The positions the loop may pick, in pool order: step t picks ``pickable[order[t]]`` with
        ``order`` from :func:`loop_schedule` over ``pickable.size`` instances.
    num_features : int
        D; w starts at 1 (Lmba's step 1, Simba's step 1).
    run, seed : the loop's settings (:class:`sparkfs.core.margin_runs.MarginRun`) and the seed of
        the order.
    update : callable
        ``update(picked, beta, w, average)`` returns w after the step of the ``picked`` positions
        (beta per instance with rule "replay", one beta with "sum"); it feeds ``average`` (an
        :class:`~sparkfs.core.margin_runs.IterateAverage` with ``averaging="iterates"``, else None)
        every iterate.
    after_step : callable, optional
        Called with no argument after every step (the Spark layer's progress meter).

    Returns
    -------
    LoopResult
        The ranked w (the last w, or the mean of the iterates) and the number of steps.
    """
    order, betas = loop_schedule(pickable.size, run, seed)
    w = np.ones(num_features)
    average = IterateAverage(w) if run.averaging == "iterates" else None
    for positions, beta in zip(order, betas):
        w = update(pickable[positions], beta, w, average)
        if after_step is not None:
            after_step()
    return LoopResult(w if average is None else average.mean(), len(order))
