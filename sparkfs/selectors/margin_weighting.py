"""Lmba and its baseline Simba (Li & Lu 2009; Gilad-Bachrach, Navot & Tishby 2004): iterative
margin-based feature weighting, one Spark job per mini-batch step.

The order instances are picked in is a seeded permutation of the pool; without ``rowIdCol`` the
pool is first put in an order keyed by its rows' content (the key it was drawn by), so the same
rows in any order or file layout give the same selection and scores to rounding (the same bits
with ``deterministic=True``); with ``rowIdCol`` the pool is visited in the user's id order, as the
papers' runs (``preset="paper"`` reproduces Table 1 with it). The summary's ``visit_order`` says
which ("content" or "row id"): :mod:`sparkfs.spark.margin_weighting`."""

from __future__ import annotations

from pyspark.ml.param import Param, TypeConverters

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
from sparkfs.core.options import LmbaOptions, SimbaOptions
from sparkfs.selectors._base import FeatureSelector, FeatureSelectorModel, PreparedInput, ScoreResult
from sparkfs.selectors._params import (
    MAX_BLOCK_SIZE,
    MAX_PICKED_INSTANCES,
    HasDriverBudget,
    HasPreset,
    HasQueryBatchBytes,
    HasScaling,
    UpperBound,
    declare,
    in_range,
    is_int,
    keyword_constructor,
    neighbour_bounds,
    one_of,
)
from sparkfs.spark.margin_weighting import lmba_statistics, simba_statistics

#: Params a preset fills in (when not set explicitly) and the MarginRun field each one feeds.
RUN_PARAMS = {"schedule": "schedule", "stepSize": "step_size", "passes": "passes", "batchSize": "batch_size",
              "batchRule": "batch_rule", "averaging": "averaging"}

def _run_defaults(run: MarginRun) -> dict:
    """The run Params' defaults of a preset's loop (a setting the run leaves to the pool has none)."""
    return {param: getattr(run, field) for param, field in RUN_PARAMS.items() if getattr(run, field) is not None}


class _IterativeParams(HasScaling, HasDriverBudget, HasQueryBatchBytes, HasPreset):
    iterations: Param = declare("iterations", "instances picked in total (the paper's I); unset = passes x the pool "
                                "size", TypeConverters.toInt,
                                constraint=in_range(1, MAX_PICKED_INSTANCES, kind="an int"))
    batchSize: Param = declare("batchSize", "instances per step (one Spark job); 1 = the papers' per-instance update; "
                               "unset (Simba's default) = ceil(pool / 16), 16 steps per pass", TypeConverters.toInt,
                               constraint=in_range(1, MAX_PICKED_INSTANCES, kind="an int"))
    sampleSize: Param = declare(
        "sampleSize", "pool of instances to pick from, drawn by `seed`, each compared with every row; unset = every "
        f"row up to {DEFAULT_POOL:,} rows (preset 'paper': every row), else {DEFAULT_POOL:,} rows drawn by `seed` "
        "and the whole loop run among them on the driver (announced; the cost is quadratic in the rows; a value >= "
        "the rows uses every row)", TypeConverters.toInt, constraint=in_range(1, kind="an int"))
    seed: Param = declare("seed", "seed of the pool and of the order in which instances are picked",
                          TypeConverters.toInt, default=0, constraint=is_int())
    rowIdCol: Param = declare("rowIdCol", "column of unique integer row ids, the order the pool is visited in (the "
                              "papers' runs); unset = row position, and the pool visited in an order keyed by its "
                              "rows' content (the same for any file layout)", TypeConverters.toString)
    blockSize: Param = declare("blockSize", "rows per block of the distance computation", TypeConverters.toInt,
                               default=2048, constraint=in_range(1, MAX_BLOCK_SIZE, kind="an int"))
    passes: Param = declare("passes", "passes over the pool (a new instance order each) when iterations is unset; "
                            "1 = the papers", TypeConverters.toInt,
                            constraint=in_range(1, MAX_POOL_PASSES, kind="an int"))
    stepSize: Param = declare("stepSize", "beta of the update (Lmba's Step 3(d); Simba: w += beta Delta); the first "
                              "one with 'decay'", TypeConverters.toFloat, constraint=in_range(0.0, low_open=True))
    schedule: Param = declare("schedule", "'constant' (beta_t = stepSize, the papers) or 'decay' "
                              "(stepSize / sqrt(t + 1), t = instances picked before)", TypeConverters.toString,
                              constraint=one_of(*SCHEDULES))
    batchRule: Param = declare("batchRule", "how a batch moves w: 'replay' (the search at the batch's first w, then "
                               "each instance's own step in turn with the current w) or 'sum' (one step along the "
                               "summed gradients); the same for batchSize=1. See docs/lmba_batch_rule.md",
                               TypeConverters.toString, constraint=one_of(*BATCH_RULES))
    averaging: Param = declare("averaging", "'none' (rank by the last w, the papers) or 'iterates' (rank by the mean "
                               "of w over every step: Polyak-Ruppert averaging)", TypeConverters.toString,
                               constraint=one_of(*AVERAGINGS))
    _param_notes = {"preset": "Here: 'default' is sparkfs's loop (docs/lmba_simba.md, section E), 'paper' (the "
                              "papers' run: schedule='constant', stepSize=1, passes=1, batchSize=1, "
                              "averaging='none'); schedule, stepSize, passes, batchSize, batchRule, averaging set "
                              "explicitly override it"}
    #: Each subclass adds its own default run's settings (``_run_defaults``).
    _defaults = {"scaling": "none", "driverBudgetMB": 2048.0}
    #: The loop of ``preset="default"`` (each subclass names its own).
    _default_run: MarginRun = PAPER

    def _optional(self, param):
        return self.getOrDefault(param) if self.isDefined(param) else None

    def _pool_sample(self, n_rows: int):
        """(pool size or None for every row, how it was chosen): ``sampleSize`` when set; unset, every
        row up to :data:`DEFAULT_POOL` rows (and always with ``preset="paper"``), else that many
        drawn by ``seed``: each picked instance is compared with every row, so the loop's work grows
        with pool x rows."""
        if self.isDefined(self.sampleSize):
            return self.getOrDefault(self.sampleSize), "sampleSize"
        if n_rows <= DEFAULT_POOL or self.getOrDefault(self.preset) == "paper":
            return None, "every row"
        return DEFAULT_POOL, "default"

    def _run(self) -> MarginRun:
        """The loop this fit runs: each setting as set explicitly, else the preset's."""
        source = PAPER if self.getOrDefault(self.preset) == "paper" else self._default_run
        chosen = {field: self.getOrDefault(param) if self.isSet(param) else getattr(source, field)
                  for param, field in RUN_PARAMS.items()}
        return MarginRun(iterations=self._optional(self.iterations), batches_per_pass=source.batches_per_pass,
                         **chosen)

    def _iterative_bounds(self, shape):
        """Picks (iterations, and a batch) within MAX_POOL_PASSES passes over the pool and
        MAX_INSTANCE_ROW_PAIRS distances; Lmba's k as the Relief family's."""
        sample = self._pool_sample(shape.n_rows)[0]
        pool = shape.n_rows if sample is None else min(sample, shape.n_rows)
        run = self._run()
        passes = f"{MAX_POOL_PASSES} passes over the pool of {pool:,} instances (sampleSize, else the rows)"
        bounds = [UpperBound("batchSize", run.batch(pool), MAX_POOL_PASSES * pool, passes)]
        if self.isDefined(self.iterations):
            iterations = self.getOrDefault(self.iterations)
            bounds += [UpperBound("iterations", iterations, MAX_POOL_PASSES * pool, passes),
                       UpperBound("iterations", iterations, MAX_INSTANCE_ROW_PAIRS // shape.n_rows,
                                  f"each picked instance is compared with all {shape.n_rows:,} rows, and a fit "
                                  f"computes at most {MAX_INSTANCE_ROW_PAIRS:.0e} such distances")]
        else:
            bounds.append(UpperBound("passes", run.passes, max(1, MAX_INSTANCE_ROW_PAIRS // (shape.n_rows * pool)),
                                     f"each picked instance is compared with all {shape.n_rows:,} rows, and a fit "
                                     f"computes at most {MAX_INSTANCE_ROW_PAIRS:.0e} such distances"))
        if self.hasParam("k"):
            bounds += neighbour_bounds(self.getOrDefault("k"), pool, shape, self.getDriverBudgetMB())
        return bounds

    def _loop_options(self, n_rows: int) -> dict:
        """The fields Lmba's and Simba's options share (the loop, the pool), from the Params."""
        sample, rule = self._pool_sample(n_rows)
        if rule == "default":
            self._warn_default_sample(
                type(self).__name__, f"the input has {n_rows:,} rows", f"a pool of {sample:,} instances was drawn",
                after=" and the whole loop runs within it on the driver: neighbours are searched among the pool's "
                      "rows only (the work grows with the pool squared, not with the rows)",
                advice="set sampleSize to search every row (one Spark job per step; a value >= the rows picks "
                       "every row)")
        return dict(run=self._run(), sample_size=sample, seed=self.getOrDefault(self.seed), scaling=self.getScaling(),
                    block_size=self.getOrDefault(self.blockSize), within_pool=rule == "default")

    def _run_info(self, result) -> dict:
        """What the loop did, for the summary: the preset, and the steps, passes and batch run."""
        return {"preset": self.getOrDefault(self.preset), **self._run().describe(int(result.n_pool))}


class _LmbaParams(_IterativeParams):
    k: Param = declare("k", "target neighbours per instance (k nearest of its class)", TypeConverters.toInt,
                       default=3, constraint=in_range(1, kind="an int"))
    c: Param = declare("c", "weight of the hinge (impostor) term of eq. 3", TypeConverters.toFloat, default=1.0,
                       constraint=in_range(0.0, low_open=True))
    projection: Param = declare("projection", "'none' (the update as printed) or 'clip' (w to [0, 1] after each "
                                "step)", TypeConverters.toString, default="none", constraint=one_of("none", "clip"))
    _default_run = LMBA_DEFAULT_RUN
    _defaults = _run_defaults(_default_run)


class _SimbaParams(_IterativeParams):
    _default_run = SIMBA_DEFAULT_RUN
    _defaults = _run_defaults(_default_run)


def _fit_indexed(selector, prepared: PreparedInput, compute, info):
    n_rows = prepared.n_rows
    result = compute(prepared.indexed, prepared.label_col, prepared.num_features, prepared.num_classes, n_rows)
    summary = {**info, **selector._run_info(result), "steps": int(result.steps), "n_pool": int(result.n_pool),
               "pool_sample": selector._pool_sample(n_rows)[1],
               **result.info}
    return prepared.result(result.scores, info=summary, feature_arrays={"raw_weights": result.raw_weights})


class LmbaSelectorModel(FeatureSelectorModel, _LmbaParams):
    """Model of :class:`LmbaSelector`: ``scores`` = |w| / max |w|; ``featureArray("raw_weights")`` = the
    w ranked (the last w, or the mean of the iterates with ``averaging="iterates"``)."""


_LOOP_DOC = """
    The loop (``preset``): by default sparkfs's, :data:`{default}`:
    {description}
    (chosen on 14 sets with probe features, ``docs/lmba_simba.md``, section E); ``preset="paper"`` runs the papers' loop
    (beta = 1 constant, one pass, one instance per Spark job, the last w). Each of schedule,
    stepSize, passes, batchSize, batchRule and averaging set explicitly overrides the preset. The
    summary records the loop run: ``preset``, ``schedule``, ``pool_passes``, ``instances_picked``,
    ``batch_size``, ``batch_rule``, ``averaging`` and ``steps`` (Spark jobs of the loop).
"""


def _describe(run: MarginRun) -> str:
    batches = run.batch_size if run.batch_size is not None else f"ceil(pool / {run.batches_per_pass})"
    ranked = "the mean of the iterates" if run.averaging == "iterates" else "the last w"
    return (f"{run.schedule} steps from beta = {run.step_size:g}, {run.passes} passes, batches of {batches} "
            f"with rule '{run.batch_rule}', ranking by {ranked}")


@keyword_constructor
class LmbaSelector(FeatureSelector, _LmbaParams):
    __doc__ = """Lmba (Li & Lu 2009): feature weights minimising the loss-margin of k-NN classification (eq. 3)
    by normalised gradient steps (eq. 16-17, Step 3d), features ranked by |w|.

    Target neighbours and theta (eq. 2) are found once, in the original metric (Step 2); each
    step picks ``batchSize`` instances, and every partition adds the hinge terms of its rows of
    other classes (one Spark job per step). With ``batchRule="replay"`` a batch takes the same
    per-instance steps as batch 1 but finds its active hinge pairs at the batch's first w
    (``docs/lmba_batch_rule.md``). See :mod:`sparkfs.core.margin_weighting` for the equations and
    the choices the paper leaves open.
""" + _LOOP_DOC.format(default="LMBA_DEFAULT_RUN", description=_describe(LMBA_DEFAULT_RUN)) + """
    Notes
    -----
    Per step: O(batchSize x n x D) multiply-adds (two GEMMs; O(batchSize x nnz) on sparse rows) and
    O(batchSize x k x n) comparisons in the workers, O(batchSize x k x D) on the driver; the pool
    and its targets' vectors (at most pool x (k + 1) rows, CSR kept CSR) are kept on the driver.
    """

    _model_class = LmbaSelectorModel
    _not_keywords = ("weightCol",)
    _unset_keywords = tuple(RUN_PARAMS)  # unset: the preset's run

    def _data_bounds(self, shape):
        return self._iterative_bounds(shape)

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        def compute(indexed, label_col, num_features, num_classes, n_rows):
            options = LmbaOptions(k=self.getOrDefault(self.k), c=self.getOrDefault(self.c),
                                  projection=self.getOrDefault(self.projection), **self._loop_options(n_rows))
            return lmba_statistics(indexed, self.getFeaturesCol(), label_col, num_features=num_features,
                                   num_classes=num_classes, options=options, engine=self._engine_options())

        info = {"method": "lmba", "k": self.getOrDefault(self.k), "c": self.getOrDefault(self.c),
                "projection": self.getOrDefault(self.projection)}
        return _fit_indexed(self, prepared, compute, info)


class SimbaSelectorModel(FeatureSelectorModel, _SimbaParams):
    """Model of :class:`SimbaSelector`: ``scores`` = w^2 / max w^2; ``featureArray("raw_weights")`` = the w
    ranked (the last w, or the mean of the iterates with ``averaging="iterates"``)."""


@keyword_constructor
class SimbaSelector(FeatureSelector, _SimbaParams):
    __doc__ = """Simba (Gilad-Bachrach, Navot & Tishby 2004), the baseline of Li & Lu: per picked instance,
    the nearest hit and miss in the current weighted metric move w along the hypothesis-margin
    gradient; finally w^2 / max w^2. One Spark job (a weighted search with the neighbours'
    vectors) per step of ``batchSize`` instances: the batch's hits and misses are searched at the
    batch's first w; ``batchRule="replay"`` then adds each instance's Delta with the current w,
    ``"sum"`` adds them all computed at that first w. ``batchSize=1`` is the original algorithm.
""" + _LOOP_DOC.format(default="SIMBA_DEFAULT_RUN", description=_describe(SIMBA_DEFAULT_RUN)) + """
    Notes
    -----
    Per step: O(batchSize x n x D) in the workers (the weighted search), O(batchSize x D) on the
    driver; the pool is kept on the driver.
    """

    _model_class = SimbaSelectorModel
    _not_keywords = ("weightCol",)
    _unset_keywords = tuple(RUN_PARAMS)  # unset: the preset's run

    def _data_bounds(self, shape):
        return self._iterative_bounds(shape)

    def _compute_scores(self, prepared: PreparedInput) -> ScoreResult:
        def compute(indexed, label_col, num_features, num_classes, n_rows):
            return simba_statistics(indexed, self.getFeaturesCol(), label_col, num_features=num_features,
                                    num_classes=num_classes, options=SimbaOptions(**self._loop_options(n_rows)),
                                    engine=self._engine_options())

        return _fit_indexed(self, prepared, compute, {"method": "simba"})
