"""Lmba (Li & Lu 2009) and its baseline Simba (Gilad-Bachrach, Navot & Tishby 2004) as scikit-learn
selectors: the loops of ``spark/margin_weighting`` on in-memory rows.

Both learn a feature weight vector w by a loop over picked instances; the formulas are in
:mod:`sparkfs.core.margin_weighting` (Lmba's eqs. 2, 3, 16-17 and Step 3(d)) and
:mod:`sparkfs.core.simba` (Algorithm 1), the loop's settings in :class:`sparkfs.core.margin_runs.MarginRun`.
This module composes them as the Spark layer does, with every Spark pass replaced by one call of the
same kernel on all the rows (:func:`sparkfs.core.neighbours.local_neighbour_table`,
:func:`sparkfs.core.margin_weighting.lmba_block_terms`):

1. **The rows** in the units of the passes: every feature divided by its ``scaling`` divisor (from
   the column statistics of all rows), as the Spark layer's scaled view.
2. **The pool** (:func:`visited_pool`): every row, or the ``sample_size`` rows with the smallest
   seeded content keys (:func:`sparkfs.core.sampling.content_sample_keys`, the Spark sample), put in
   :func:`sparkfs.core.margin_pool.content_order`: the order the Spark selector visits its pool in
   without ``rowIdCol``. Instances are then picked by :func:`sparkfs.core.margin_loops.instance_order`
   over the pool's positions, so the same ``seed`` picks the same rows as the Spark selector.
3. **The loop.** With the pool searched against every row (:func:`lmba_over_rows`,
   :func:`simba_over_rows`: the Spark layer's ``_lmba_over_rows`` and ``_simba_over_rows`` with one
   block instead of a job per step), row ids are the row positions, as the Spark selector's default
   ids, so distance ties go to the same rows. With ``sample_size`` unset above :data:`DEFAULT_POOL`
   rows (and not ``preset="paper"``) the Spark selector draws a pool of that size and runs the whole
   loop among its rows (:func:`sparkfs.core.margin_pool.lmba_in_pool`, ``simba_in_pool``); so does
   this module, with the same :class:`~sparkfs.errors.DefaultSampleWarning`.

The scores are the Spark model's: Lmba ``|w| / max|w|``, Simba ``w^2 / max w^2``. They equal the
Spark selector's to rounding (the hinge sums are added in one block here, per partition there; the
hinge decisions near the kink are exact in both, :func:`sparkfs.core.margin_weighting.lmba_block_terms`).
Not in the front: ``rowIdCol`` (the user's visit order), instance weights, the driver budget.
"""

from __future__ import annotations

import warnings

import numpy as np

from sparkfs.core import margin_weighting as mw
from sparkfs.core import simba
from sparkfs.core.margin_loops import LoopResult
from sparkfs.core.margin_pool import (
    content_order,
    lmba_in_pool,
    lmba_targets_and_theta,
    nearest_hits_and_misses_among,
    simba_in_pool,
)
from sparkfs.core.margin_runs import (
    AVERAGINGS,
    BATCH_RULES,
    DEFAULT_POOL,
    LMBA_DEFAULT_RUN,
    MAX_INSTANCE_ROW_PAIRS,
    MAX_POOL_PASSES,
    PAPER,
    SCHEDULES,
    SIMBA_DEFAULT_RUN,
    MarginRun,
)
from sparkfs.core.options import PROJECTIONS
from sparkfs.core.param_caps import MAX_BLOCK_SIZE, MAX_PICKED_INSTANCES
from sparkfs.core.sampling import column_statistics, content_sample_keys, smallest_key_positions
from sparkfs.core.scaling import SCALINGS, check_magnitude, feature_scale
from sparkfs.errors import DefaultSampleWarning, InvalidInputError, ParamBoundError
from sparkfs.sklearn.base import FeatureScores, SparkfsSelector, bad_param, is_int, is_real
from sparkfs.sklearn.rows import rows_in_units

#: The loop's Params a preset fills in when None (each is a MarginRun field of the same name).
RUN_PARAMS = ("schedule", "step_size", "passes", "batch_size", "batch_rule", "averaging")


def visited_pool(X, labels, sample_size, seed: int) -> np.ndarray:
    """Positions of the pool's rows in the order the Spark selector visits them without ``rowIdCol``.

    The pool is every row (``sample_size`` None or >= the rows), else the ``sample_size`` rows with
    the smallest (content key, position) of the *unscaled* rows and their class indices (the Spark
    sample, ``DriverRows.sample``); then :func:`sparkfs.core.margin_pool.content_order` of those
    rows, their positions breaking ties between rows of identical content."""
    positions = np.arange(X.shape[0], dtype=np.int64)
    if sample_size is not None and sample_size < X.shape[0]:
        keys = content_sample_keys(X, labels, None, seed)
        positions = np.sort(smallest_key_positions(keys, positions, sample_size))
    return positions[content_order(X[positions], labels[positions], positions, seed)]


def lmba_over_rows(rows, labels, pool, *, num_classes: int, k: int, c: float, run: MarginRun, projection: str,
                   seed: int, block_size: int = 2048) -> LoopResult:
    """Lmba (Li & Lu 2009, Section 3.1) with the ``pool`` (positions of ``rows``, in visit order)
    searched against every row: the Spark layer's loop (:func:`sparkfs.core.margin_weighting.lmba_loop`)
    with every row in one block. ``rows`` are scaled (dense or CSR), ``labels`` class indices
    0..num_classes-1; row ids are positions (step 2's ties go to the lower position)."""
    target_index, theta = lmba_targets_and_theta(rows, labels, np.arange(rows.shape[0]), num_classes=num_classes,
                                                 k=k, block_size=block_size, positions=pool)
    return mw.lmba_loop(rows[pool], labels[pool], rows, target_index, theta, run=run, seed=seed, c=c,
                        projection=projection, block_terms=mw.block_terms_over(rows, labels))


def simba_over_rows(rows, labels, pool, *, num_classes: int, run: MarginRun, seed: int,
                    block_size: int = 2048) -> LoopResult:
    """Simba (Gilad-Bachrach et al. 2004, Algorithm 1) with the ``pool`` searched against every row:
    :func:`sparkfs.core.simba.simba_loop`, per step the batch's nearest hit and miss in the current
    weighted metric (ties to the lower position). Arguments as :func:`lmba_over_rows`."""
    search = nearest_hits_and_misses_among(rows, labels, np.arange(rows.shape[0]), num_classes=num_classes,
                                           block_size=block_size)
    return simba.simba_loop(pool, rows.shape[1], run=run, seed=seed, nearest_hits_and_misses=search)


class _MarginWeightingSelector(SparkfsSelector):
    """What Lmba and Simba share: the loop's Params, the pool, the input checks (not used directly)."""

    #: The loop of ``preset="default"`` (each subclass names its own).
    default_run: MarginRun = PAPER

    def _loop_params(self, iterations, batch_size, passes, step_size, schedule, batch_rule, averaging, preset,
                     sample_size, seed, scaling, block_size) -> None:
        self.iterations, self.batch_size, self.passes, self.step_size = iterations, batch_size, passes, step_size
        self.schedule, self.batch_rule, self.averaging, self.preset = schedule, batch_rule, averaging, preset
        self.sample_size, self.seed, self.scaling, self.block_size = sample_size, seed, scaling, block_size

    # -- the Params ------------------------------------------------------------------------------

    def _check_method_params(self) -> None:
        owner = type(self).__name__
        choices = (("schedule", SCHEDULES, True), ("batch_rule", BATCH_RULES, True), ("averaging", AVERAGINGS, True),
                   ("preset", ("default", "paper"), False), ("scaling", SCALINGS, False))
        for name, allowed, optional in choices:
            value = getattr(self, name)
            if not (optional and value is None) and not (isinstance(value, str) and value in allowed):
                described = "a str among {" + ", ".join(map(repr, allowed)) + "}" + (" or None" if optional else "")
                raise bad_param(owner, name, described, value)
        counts = (("iterations", MAX_PICKED_INSTANCES, True), ("batch_size", MAX_PICKED_INSTANCES, True),
                  ("passes", MAX_POOL_PASSES, True), ("sample_size", None, True), ("block_size", MAX_BLOCK_SIZE, False))
        for name, top, optional in counts:
            value = getattr(self, name)
            if not (optional and value is None) and not (is_int(value) and 1 <= value <= (top or value)):
                described = (f"an int in the range [1, {f'{top:,}]' if top else 'inf)'}"
                             + (" or None" if optional else ""))
                raise bad_param(owner, name, described, value)
        if self.step_size is not None and not (is_real(self.step_size) and 0 < self.step_size < np.inf):
            raise bad_param(owner, "step_size", "a float in the range (0, inf) or None", self.step_size)
        if not is_int(self.seed):
            raise bad_param(owner, "seed", "an int", self.seed)

    def _run(self) -> MarginRun:
        """The loop of this fit: each run Param as given, else the preset's (the Spark ``_run``)."""
        source = PAPER if self.preset == "paper" else self.default_run
        chosen = {name: getattr(source, name) if getattr(self, name) is None else getattr(self, name)
                  for name in RUN_PARAMS}
        return MarginRun(iterations=self.iterations, batches_per_pass=source.batches_per_pass, **chosen)

    def _pool_size(self, n_rows: int):
        """(pool size or None for every row, how it was chosen), as the Spark ``_pool_sample``."""
        if self.sample_size is not None:
            return self.sample_size, "sampleSize"
        if n_rows <= DEFAULT_POOL or self.preset == "paper":
            return None, "every row"
        return DEFAULT_POOL, "default"

    def _check_bounds(self, n_rows: int, pool: int, run: MarginRun) -> None:
        """The Spark selector's bounds on this input (``_iterative_bounds``): at most
        MAX_POOL_PASSES passes over the pool, MAX_INSTANCE_ROW_PAIRS distances, k below the rows."""
        passes = f"{MAX_POOL_PASSES} passes over the pool of {pool:,} instances (sample_size, else the rows)"
        work = (f"each picked instance is compared with all {n_rows:,} rows, and a fit computes at most "
                f"{MAX_INSTANCE_ROW_PAIRS:.0e} such distances")
        bounds = [("batch_size", run.batch(pool), MAX_POOL_PASSES * pool, passes)]
        if self.iterations is not None:
            bounds += [("iterations", self.iterations, MAX_POOL_PASSES * pool, passes),
                       ("iterations", self.iterations, MAX_INSTANCE_ROW_PAIRS // n_rows, work)]
        else:
            bounds.append(("passes", run.passes, max(1, MAX_INSTANCE_ROW_PAIRS // (n_rows * pool)), work))
        if getattr(self, "k", None) is not None:
            bounds.append(("k", self.k, n_rows - 1, f"a query has {n_rows - 1:,} other rows: the input's {n_rows:,} "
                                                    "rows minus itself"))
        for name, value, limit, reason in bounds:
            if value > limit:
                raise ParamBoundError(f"The '{name}' parameter of {type(self).__name__} must be at most {limit:,} on "
                                      f"this input ({reason}). Got {value!r} instead.")

    # -- fit -------------------------------------------------------------------------------------

    def _score_features(self, X, y) -> FeatureScores:
        labels = self._class_labels(y)
        single = labels.values[labels.counts < 2].tolist()
        if single:
            raise InvalidInputError(f"class {single[0]!r} has a single row: a picked instance of it has no nearest "
                                    "hit; remove it or merge it with another class")
        n_rows, run = X.shape[0], self._run()
        sample, rule = self._pool_size(n_rows)
        self._check_bounds(n_rows, n_rows if sample is None else min(sample, n_rows), run)
        rows = self._rows_in_units(X)
        pool = visited_pool(X, labels.index, sample, self.seed)
        if rule == "default":
            warnings.warn(DefaultSampleWarning(
                f"{type(self).__name__}: sample_size is unset and the input has {n_rows:,} rows, so a pool of "
                f"{sample:,} instances was drawn by seed {self.seed} and the whole loop runs within it: neighbours "
                "are searched among the pool's rows only (the work grows with the pool squared, not with the rows); "
                "set sample_size to search every row (a value >= the rows picks every row)"), stacklevel=3)
        result = self._loop(rows, labels.index, pool, labels.values.size, run, within_pool=rule == "default")
        return FeatureScores(self._ranking(result.ranked), None,
                             {"raw_weights": result.ranked, "steps": result.steps, "n_pool": int(pool.size),
                              "pool_left_out": result.left_out})

    def _rows_in_units(self, X):
        """``X`` divided by the ``scaling`` divisor of every feature (statistics of all rows); values
        whose squares would overflow are refused, as the Spark selector does."""
        statistics = column_statistics(X)
        if self.scaling == "none":
            check_magnitude(statistics.minimum, statistics.maximum, owner=type(self).__name__, tiny=True)
            return X
        scale = feature_scale(self.scaling, minimum=statistics.minimum, maximum=statistics.maximum,
                              std=statistics.std)
        check_magnitude(statistics.minimum, statistics.maximum, 1.0 / scale, owner=type(self).__name__, tiny=True)
        return rows_in_units(X, scale, unit_rows=False)

    def _loop(self, rows, labels, pool, num_classes, run, *, within_pool) -> LoopResult:  # pragma: no cover
        raise NotImplementedError

    def _ranking(self, ranked) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


_LOOP_PARAMS_DOC = """
    iterations : int or None, default None
        Instances picked in total (the paper's I); None: ``passes`` x the pool size.
    batch_size : int or None, default None
        Instances per step (a Spark job of the Spark selector); None: the preset's.
    passes, step_size, schedule, batch_rule, averaging : default None
        The loop (:class:`sparkfs.core.margin_runs.MarginRun`): passes over the pool, beta, "constant"
        or "decay", "replay" or "sum", "none" or "iterates"; None: the preset's.
    preset : {"default", "paper"}, default "default"
        "default": sparkfs's loop ({default}); "paper": the papers' loop (beta = 1 constant, one pass,
        batch 1, the last w, and every row a pool instance). A loop Param given overrides it.
    sample_size : int or None, default None
        Pool of instances drawn by ``seed``, each searched against every row; None: every row up to
        1,000 rows, else a pool of 1,000 and the whole loop among its rows (a ``DefaultSampleWarning``).
    seed : int, default 0
        Seed of the pool and of the order instances are picked in (the Spark selector's ``seed``).
    scaling : {"none", "range", "standard"}, default "none"
        The divisor of every feature before the loop.
    block_size : int, default 2048
        Rows per block of the distance computation.
    num_features, threshold, selection_mode, selection_threshold, allow_many_classes, missing
        The selection rule (:class:`sparkfs.sklearn.base.SparkfsSelector`).

    Attributes
    ----------
    scores_ : ndarray (n_features,)
        The Spark model's ``scores`` ({scores}). No p-values.
    raw_weights_ : ndarray (n_features,)
        The w ranked (the Spark model's ``featureArray("raw_weights")``).
    steps_, n_pool_, pool_left_out_ : int
        Updates of the search (the Spark selector's jobs), pool instances, pool rows never picked.
"""


def _loop_doc(default_loop: str, scores: str) -> str:
    """The Params and attributes Lmba's and Simba's docstrings share, with the method's loop and scores."""
    return _LOOP_PARAMS_DOC.replace("{default}", default_loop).replace("{scores}", scores)


class LmbaSelector(_MarginWeightingSelector):
    __doc__ = """Lmba (Li & Lu 2009; Spark: ``LmbaSelector``, ``method`` ``lmba``): feature weights
    minimising the loss-margin of k-NN classification (eq. 3) by normalised gradient steps (eqs. 16-17,
    Step 3(d)), features ranked by |w|.

    Parameters
    ----------
    k : int, default 3
        Target neighbours per instance (its k nearest of its class, in the original metric).
    c : float, default 1.0
        Weight of the hinge (impostor) term of eq. (3).
    projection : {"none", "clip"}, default "none"
        "clip": w clipped to [0, 1] after each step.""" + _loop_doc(
        "decay steps from beta = 1, 3 passes, batches of 8 with rule 'replay'", "|w| / max |w|") + """
    Notes
    -----
    Work per step O(batch x n x D) (two matrix products; O(batch x nnz) on sparse rows), memory the
    rows, the pool's (m, k) targets and one block of distances; n the rows (the pool's rows within
    the pool). Sparse rows stay sparse, the per-instance hinge terms of rule 'replay' too: an
    instance's step touches its own features and those of the rows active for it.
    """

    method = "lmba"
    default_run = LMBA_DEFAULT_RUN

    def __init__(self, *, k=3, c=1.0, projection="none", iterations=None, batch_size=None, passes=None, step_size=None,
                 schedule=None, batch_rule=None, averaging=None, preset="default", sample_size=None, seed=0,
                 scaling="none", block_size=2048, num_features=None, threshold=None, selection_mode="numTopFeatures",
                 selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        super().__init__(num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                         selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                         kept_features=kept_features, excluded_features=excluded_features,
                         missing=missing)
        self.k, self.c, self.projection = k, c, projection
        self._loop_params(iterations, batch_size, passes, step_size, schedule, batch_rule, averaging, preset,
                          sample_size, seed, scaling, block_size)

    def _check_method_params(self) -> None:
        super()._check_method_params()
        owner = type(self).__name__
        if not (is_int(self.k) and self.k >= 1):
            raise bad_param(owner, "k", "an int in the range [1, inf)", self.k)
        if not (is_real(self.c) and 0 < self.c < np.inf):
            raise bad_param(owner, "c", "a float in the range (0, inf)", self.c)
        if self.projection not in PROJECTIONS:
            raise bad_param(owner, "projection", "a str among {" + ", ".join(map(repr, PROJECTIONS)) + "}",
                            self.projection)

    def _loop(self, rows, labels, pool, num_classes, run, *, within_pool) -> LoopResult:
        settings = dict(num_classes=num_classes, k=self.k, c=float(self.c), run=run, projection=self.projection,
                        seed=self.seed, block_size=self.block_size)
        if within_pool:  # the pool numbered 0..m-1 in its visit order, as the Spark layer does
            return lmba_in_pool(rows[pool], labels[pool], np.arange(pool.size), **settings)
        return lmba_over_rows(rows, labels, pool, **settings)

    def _ranking(self, ranked) -> np.ndarray:
        return mw.lmba_ranking_weights(ranked)


class SimbaSelector(_MarginWeightingSelector):
    __doc__ = """Simba (Gilad-Bachrach, Navot & Tishby 2004; Spark: ``SimbaSelector``, ``method``
    ``simba``), the baseline of Li & Lu: per picked instance, its nearest hit and miss in the current
    weighted metric move w along the hypothesis-margin gradient; features ranked by w^2 / max w^2.

    Parameters
    ----------""" + _loop_doc(
        "constant beta = 1, 3 passes, batches of ceil(pool / 16) with rule 'replay'", "w^2 / max w^2") + """
    Notes
    -----
    Work per step O(batch x n x D) (the weighted search), memory the rows and one block of distances.
    Sparse rows stay sparse, the batch's rows and their neighbours too: an update touches the features
    where an instance differs from its hit or miss.
    """

    method = "simba"
    default_run = SIMBA_DEFAULT_RUN

    def __init__(self, *, iterations=None, batch_size=None, passes=None, step_size=None, schedule=None,
                 batch_rule=None, averaging=None, preset="default", sample_size=None, seed=0, scaling="none",
                 block_size=2048, num_features=None, threshold=None, selection_mode="numTopFeatures",
                 selection_threshold=None, allow_many_classes=False,
                 kept_features=None, excluded_features=None, missing="refuse"):
        super().__init__(num_features=num_features, threshold=threshold, selection_mode=selection_mode,
                         selection_threshold=selection_threshold, allow_many_classes=allow_many_classes,
                         kept_features=kept_features, excluded_features=excluded_features,
                         missing=missing)
        self._loop_params(iterations, batch_size, passes, step_size, schedule, batch_rule, averaging, preset,
                          sample_size, seed, scaling, block_size)

    def _loop(self, rows, labels, pool, num_classes, run, *, within_pool) -> LoopResult:
        settings = dict(num_classes=num_classes, run=run, seed=self.seed, block_size=self.block_size)
        if within_pool:
            return simba_in_pool(rows[pool], labels[pool], np.arange(pool.size), **settings)
        return simba_over_rows(rows, labels, pool, **settings)

    def _ranking(self, ranked) -> np.ndarray:
        return simba.simba_final_weights(ranked)
