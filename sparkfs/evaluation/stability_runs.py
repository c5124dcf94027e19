"""Resumable stability studies (Han & Yu, ICDM 2010, Section V): R seeded subsamples of the
training rows, a selector fitted on each, then the stability of what it selected.

* :func:`subsample_plan` draws the R row samples (stratified subsampling without replacement, or
  stratified bootstrap), each from its own child of one seed.
* :class:`StabilityStudy` calls a caller-supplied ``fit_run(i, rows) -> RunResult`` for every run
  not yet on disk, saves each result at once (``runs/run-00003.npz``, atomically), and computes
  from the saved files only: Kuncheva (eqs. 8-9) and Jaccard stability of the top-k subsets for
  every k, the average variance of the normalised feature weights (eq. 4) and, given the true
  relevance r*, their bias and error (eqs. 1-4), also at every RFE iteration (the paper's
  Figure 2). The math is :mod:`sparkfs.core.stability`'s; this module runs, stores and plots.

No pyspark here: ``fit_run`` may start Spark jobs (from driver threads when ``parallelism > 1``),
the study only sees the NumPy arrays it returns.

Choices (where the paper or the protocol is silent)
---------------------------------------------------
1. **Seeds**: run i draws from ``default_rng(SeedSequence(seed).spawn(runs)[i])``, so its sample
   depends on (labels, seed, i) only, not on the number of runs nor on the other runs.
2. **Subsample sizes**: each class keeps ``floor(f n_c + 1/2)`` rows (half up, not Python's
   half-to-even ``round``); a class that would keep 0 rows is refused rather than silently given
   one, which would change the class proportions.
3. **Resume fingerprint**: ``plan.json`` holds the description, n_features and a SHA-256 of the
   plan; a directory written for another study is refused. ``num_features_list`` and the true
   relevance are not part of it: they only change the summary, which is recomputed from the runs.
4. **Weights**: the final weights and every row of a weight path are normalised again with
   :func:`~sparkfs.core.stability.normalised_feature_weights` (idempotent on SVM-RFE's path, which
   is normalised already). The weight measures do not depend on k: the summary keeps them once,
   not per subset size. Per-iteration measures need all runs to share one ``remaining``
   sequence (a fixed step does); otherwise they are left out with a warning.
5. **NaN scores** rank last (``top_k_subsets`` sorts ``-scores`` and NumPy puts NaN last);
   weights must be finite.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, List, NamedTuple, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from sparkfs.core.selection import forced_first, rank_features
from sparkfs.core.stability import (
    BiasVarianceError,
    average_bias_variance_error,
    jaccard_stability,
    kuncheva_stability,
    normalised_feature_weights,
    top_k_subsets,
    weight_variance,
)
from sparkfs.io.output_safety import check_study_directory, marker
from sparkfs.io.strict_json import dumps as strict_dumps


class StudyMismatchError(ValueError):
    """The output directory holds runs of another study (other description, plan or features)."""


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _invalid(parameter: str, owner: str, constraint: str, value) -> ValueError:
    return ValueError(f"The '{parameter}' parameter of {owner} must be {constraint}. Got {value!r} instead.")


# The plan --------------------------------------------------------------------------------------


def subsample_plan(labels, runs: int, *, sample_fraction: Optional[float] = None, bootstrap: bool = False,
                   seed: int = 0, n_rows: Optional[int] = None) -> List[np.ndarray]:
    """The rows of R training sets drawn from one data set, stratified by class.

    Parameters
    ----------
    labels : array-like of shape (n,) or None
        Class of every row; None for unlabelled data (one class of ``n_rows`` rows).
    runs : int >= 2
        R, the number of training sets (eq. 8 needs two).
    sample_fraction : float in (0, 1), optional
        Subsampling without replacement: each class keeps ``floor(f n_c + 1/2)`` of its n_c rows.
    bootstrap : bool, default False
        Stratified bootstrap instead: each class draws n_c rows with replacement (the draws of
        :func:`sparkfs.core.svm_rfe.stratified_bootstrap` for the same generator). Exactly one of ``sample_fraction``
        and ``bootstrap=True`` must be given.
    seed : int >= 0
    n_rows : int, optional
        Number of rows when ``labels`` is None.

    Returns
    -------
    list of R sorted int64 arrays of row positions in [0, n); a bootstrap sample repeats
    positions. Run i's sample does not depend on ``runs`` (module note 1).
    """
    owner = "subsample_plan"
    if not _is_int(runs) or runs < 2:
        raise _invalid("runs", owner, "an int in the range [2, inf)", runs)
    if not isinstance(bootstrap, (bool, np.bool_)):
        raise _invalid("bootstrap", owner, "a bool", bootstrap)
    if (sample_fraction is None) == (not bootstrap):
        raise ValueError(f"{owner} needs exactly one of the 'sample_fraction' parameter (subsampling without "
                         f"replacement) and 'bootstrap=True'. Got sample_fraction={sample_fraction!r} and "
                         f"bootstrap={bootstrap!r} instead.")
    if sample_fraction is not None and (isinstance(sample_fraction, (bool, np.bool_))
                                        or not isinstance(sample_fraction, (int, float, np.number))
                                        or not 0.0 < float(sample_fraction) < 1.0):
        raise _invalid("sample_fraction", owner, "a float in the range (0, 1)", sample_fraction)
    if not _is_int(seed) or seed < 0:
        raise _invalid("seed", owner, "an int in the range [0, inf)", seed)
    if labels is None:
        if not _is_int(n_rows) or n_rows < 1:
            raise _invalid("n_rows", owner, "an int in the range [1, inf) when labels is None", n_rows)
        labels = np.zeros(int(n_rows), dtype=np.int64)
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.size == 0:
        raise _invalid("labels", owner, "a non-empty 1-d array or None", f"an array of shape {labels.shape}")
    if n_rows is not None and n_rows != labels.size:
        raise _invalid("n_rows", owner, f"None or the number of labels ({labels.size})", n_rows)
    if labels.dtype.kind == "f" and np.isnan(labels).any():
        raise ValueError(f"The 'labels' parameter of {owner} holds NaN (rows {np.flatnonzero(np.isnan(labels))[:5]})")
    classes, class_of_row = np.unique(labels, return_inverse=True)
    members = [np.flatnonzero(class_of_row == c) for c in range(classes.size)]
    sizes = [m.size for m in members]  # the bootstrap draws n_c rows per class
    if sample_fraction is not None:
        sizes = [int(np.floor(round(float(sample_fraction) * size, 9) + 0.5)) for size in sizes]
        for value, rows, size in zip(classes.tolist(), members, sizes):
            if size == 0:
                raise ValueError(f"The 'sample_fraction' parameter of {owner} keeps 0 of the {rows.size} rows of "
                                 f"class {value!r}; use a larger fraction or drop the class. Got {sample_fraction!r}.")
    plan = []
    for child in np.random.SeedSequence(seed).spawn(runs):
        rng = np.random.default_rng(child)
        drawn = [rng.choice(rows, size=size, replace=bool(bootstrap)) for rows, size in zip(members, sizes)]
        plan.append(np.sort(np.concatenate(drawn)).astype(np.int64))
    return plan


def plan_hash(plan: Sequence[np.ndarray]) -> str:
    """SHA-256 of the plan (every run's length and positions, little-endian int64)."""
    digest = hashlib.sha256()
    for rows in plan:
        rows = np.asarray(rows, dtype="<i8")
        digest.update(np.int64(rows.size).astype("<i8").tobytes())
        digest.update(rows.tobytes())
    return digest.hexdigest()


# One run ---------------------------------------------------------------------------------------


class RunResult(NamedTuple):
    """What ``fit_run`` returns for one training set."""

    scores: np.ndarray                     # (d,) float, larger is better: the ranking
    weights: Optional[np.ndarray] = None   # (d,) feature weights, normalised r_j = |w_j| / sum |w|; None: none
    weight_path: Optional[np.ndarray] = None  # (T, d) weights at each RFE iteration, or None
    remaining: Optional[np.ndarray] = None    # (T,) int, features remaining at each iteration, or None
    seconds: Optional[float] = None        # fit time; None: the study measures the call of fit_run
    info: Optional[dict] = None            # JSON-able details of the run


def _checked_arrays(result, index: int, n_features: int, measured: float) -> dict:
    """The arrays stored for one run, after checking the shapes of ``result``."""
    if not isinstance(result, RunResult):
        raise TypeError(f"fit_run must return a RunResult; run {index} returned {type(result).__name__}")
    where = f"RunResult of run {index}"
    arrays = {name: np.asarray(getattr(result, name), dtype=np.int64 if name == "remaining" else float)
              for name in ("scores", "weights", "weight_path", "remaining") if getattr(result, name) is not None}
    if ("weight_path" in arrays) != ("remaining" in arrays):
        raise ValueError(f"{where}: 'weight_path' and 'remaining' go together; give both or neither")
    steps = arrays["remaining"].shape[:1] if "remaining" in arrays else ()
    expected = {"scores": (n_features,), "weights": (n_features,), "weight_path": (*steps, n_features),
                "remaining": steps}
    for name, value in arrays.items():
        if value.shape != expected[name]:
            raise ValueError(f"{where}: '{name}' must have shape {expected[name]}; got {value.shape}")
        if name != "scores" and not np.all(np.isfinite(value)):  # NaN scores rank last (module note 5)
            raise ValueError(f"{where}: '{name}' holds NaN or infinite values")
    seconds = measured if result.seconds is None else float(result.seconds)
    if not np.isfinite(seconds) or seconds < 0:
        raise ValueError(f"{where}: 'seconds' must be a finite float >= 0; got {result.seconds!r}")
    arrays["seconds"] = np.float64(seconds)
    arrays["info"] = np.array(json.dumps(result.info or {}, sort_keys=True))  # TypeError when not JSON-able
    return arrays


def atomic_write(path, write: Callable) -> Path:
    """``write(binary_file)`` into a hidden temp file next to ``path``, then rename it into place
    (readable by everyone who may read the folder, like any other output)."""
    path = Path(path)
    handle, staging = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(staging, 0o644)  # mkstemp makes it private
        with os.fdopen(handle, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(staging, path)
    except BaseException:
        if os.path.exists(staging):
            os.unlink(staging)
        raise
    return path


def staging_leftovers(folder, name_glob: str) -> List[Path]:
    """The files :func:`atomic_write` left in ``folder`` when its process was killed while writing
    a file whose name matches ``name_glob`` (``.NAME.XXXXXXXX.tmp``): regular files only, so a
    user's file, folder or link of another name is never among them."""
    found = sorted(Path(folder).glob(f".{name_glob}.*.tmp"))
    return [path for path in found if path.is_file() and not path.is_symlink()]


def weight_path_terms(paths, true_relevance=None) -> BiasVarianceError:
    """Average variance (and bias, error) of the normalised weights at every RFE iteration.

    Eq. (4) applied to each iteration t separately: the mean over the d features of eq. (3)'s
    variance of ``paths[:, t, :]`` over the R runs (and of eqs. (2) and (1) given r*), as in the
    paper's Figure 2.

    Parameters
    ----------
    paths : array of shape (R, T, d)
        Normalised weight vectors of R runs at T iterations.
    true_relevance : array of shape (d,), optional

    Returns
    -------
    BiasVarianceError of arrays of shape (T,); bias and error are None without r*.
    """
    paths = np.asarray(paths, dtype=float)
    if paths.ndim != 3:
        raise ValueError(f"paths must have shape (runs, iterations, features); got {paths.shape}")
    if true_relevance is None:
        variance = [weight_variance(paths[:, t]).mean() for t in range(paths.shape[1])]
        return BiasVarianceError(None, np.array(variance), None)
    terms = [average_bias_variance_error(paths[:, t], true_relevance) for t in range(paths.shape[1])]
    return BiasVarianceError(*map(np.array, zip(*terms)))


# The study -------------------------------------------------------------------------------------


class StabilityStudy:
    """R fits of one selector on the training sets of a plan, saved run by run in ``directory``.

    Parameters
    ----------
    directory : str or Path
        Holds ``plan.json``, ``runs/run-00000.npz``, ... and the outputs of :meth:`write_outputs`.
    plan : list of int arrays
        The training rows of each run (:func:`subsample_plan`), at least two.
    num_features_list : list of int
        The subset sizes k at which subset stability is measured, each in [1, n_features].
    n_features : int
        d.
    description : dict
        JSON-able (method, params, input, seed...): stored in the outputs and, with the plan's
        hash and d, the fingerprint a resumed study must match.
    true_relevance : array of shape (d,), optional
        r* (normalised like the weights), for bias and error.

    Notes
    -----
    Resuming: :meth:`run` fits only the runs without a file; :meth:`summary` reads every run from
    its file in run order, so an interrupted and resumed study, or one run with several threads,
    gives the same numbers bit for bit. One process per directory at a time.
    """

    def __init__(self, directory, plan: Sequence, num_features_list: Sequence[int], n_features: int, *,
                 description: dict, true_relevance=None, forced=None):
        owner = "StabilityStudy"
        if not _is_int(n_features) or n_features < 1:
            raise _invalid("n_features", owner, "an int in the range [1, inf)", n_features)
        if len(plan) < 2:
            raise _invalid("plan", owner, "a list of at least two row arrays", f"{len(plan)} runs")
        ks = list(num_features_list)
        if not ks or any(not _is_int(k) or not 1 <= k <= n_features for k in ks) or len(set(ks)) != len(ks):
            raise _invalid("num_features_list", owner, f"a non-empty list of distinct ints in [1, {n_features}]", ks)
        if not isinstance(description, dict):
            raise _invalid("description", owner, "a JSON-able dict", description)
        try:
            self.description = json.loads(json.dumps(description, sort_keys=True))
        except (TypeError, ValueError) as error:
            raise _invalid("description", owner, "a JSON-able dict", description) from error
        if true_relevance is not None:
            true_relevance = np.asarray(true_relevance, dtype=float)
            if true_relevance.shape != (n_features,) or not np.all(np.isfinite(true_relevance)):
                raise _invalid("true_relevance", owner, f"None or a finite array of shape ({n_features},)",
                               f"an array of shape {true_relevance.shape}")
        self.directory = Path(directory)
        self.plan = tuple(np.array(rows, dtype=np.int64) for rows in plan)  # copies: made read-only below
        for rows in self.plan:
            rows.setflags(write=False)
        self.num_features_list = [int(k) for k in ks]
        self.n_features = int(n_features)
        self.true_relevance = true_relevance
        #: (kept, excluded) feature indices: every run's k-subset is the kept, then its best others
        self.forced = None if forced is None else ([int(i) for i in forced[0]], [int(i) for i in forced[1]])
        self.fingerprint = {"description": self.description, "n_features": self.n_features,
                            "runs": len(self.plan), "plan_sha256": plan_hash(self.plan)}

    def _run_path(self, index: int) -> Path:
        return self.directory / "runs" / f"run-{index:05d}.npz"

    def completed_runs(self) -> List[int]:
        """Indices of the runs saved in the directory."""
        return [i for i in range(len(self.plan)) if self._run_path(i).exists()]

    def _check_fingerprint(self, create: bool) -> None:
        plan_file = self.directory / "plan.json"
        if create:  # a new or empty directory, or one holding this tool's plan.json (not any other)
            check_study_directory(str(self.directory), "stability")
        if not plan_file.exists():
            if create:  # plan.json (the marker) first: a directory holding runs always has it
                self.directory.mkdir(parents=True, exist_ok=True)
                text = strict_dumps({**marker("stability"), **self.fingerprint,
                                   "num_features_list": self.num_features_list}, indent=2)
                atomic_write(plan_file, lambda stream: stream.write(text.encode()))
                (self.directory / "runs").mkdir(exist_ok=True)
            return
        stored = json.loads(plan_file.read_text())
        differing = [key for key in self.fingerprint if stored.get(key) != self.fingerprint[key]]
        if differing:
            details = "; ".join(f"{key}: stored {stored.get(key)!r}, given {self.fingerprint[key]!r}"
                                for key in differing)
            raise StudyMismatchError(f"{self.directory} holds runs of another study ({', '.join(differing)} differ: "
                                     f"{details}); use another output directory, or remove this one to start again")

    def run(self, fit_run: Callable[[int, np.ndarray], RunResult], *, parallelism: int = 1,
            progress: Optional[Callable[[str], None]] = None) -> List[int]:
        """Fit and save every run not yet saved; returns the indices fitted now.

        ``fit_run(i, rows)`` gets the run index and its (read-only) training rows. Each result is
        saved as soon as it returns; if a fit raises, the saved runs stay and the exception
        propagates (queued runs are cancelled, those in flight finish and are saved).
        ``parallelism > 1`` calls ``fit_run`` from that many threads (e.g. several Spark jobs in
        flight); the saved files, hence the summary, do not depend on it. ``progress`` receives
        one line per finished run (default: printed to stderr).
        """
        if not _is_int(parallelism) or parallelism < 1:
            raise _invalid("parallelism", "StabilityStudy.run", "an int in the range [1, inf)", parallelism)
        report = progress or (lambda message: print(message, file=sys.stderr, flush=True))
        self._check_fingerprint(create=True)
        (self.directory / "runs").mkdir(exist_ok=True)
        for stale in staging_leftovers(self.directory / "runs", "run-[0-9][0-9][0-9][0-9][0-9].npz"):
            stale.unlink()  # a run's staging file, left by a killed process
        pending = [i for i in range(len(self.plan)) if not self._run_path(i).exists()]
        session_seconds: List[float] = []

        def fit_and_save(index: int) -> float:
            start = time.perf_counter()
            result = fit_run(index, self.plan[index])
            arrays = _checked_arrays(result, index, self.n_features, time.perf_counter() - start)
            atomic_write(self._run_path(index), lambda stream: np.savez(stream, **arrays))
            return float(arrays["seconds"])

        def finished(index: int, seconds: float) -> None:
            session_seconds.append(seconds)
            left = len(pending) - len(session_seconds)
            estimate = np.mean(session_seconds) * left / min(parallelism, max(left, 1))
            report(f"run {index + 1} of {len(self.plan)} done ({seconds:.1f} s); about {estimate:.0f} s left")

        if parallelism == 1:
            for index in pending:
                finished(index, fit_and_save(index))
            return pending
        executor = ThreadPoolExecutor(max_workers=parallelism, thread_name_prefix="stability-run")
        try:
            futures = {executor.submit(fit_and_save, index): index for index in pending}
            for future in as_completed(futures):
                finished(futures[future], future.result())
        finally:
            executor.shutdown(wait=True, cancel_futures=True)
        return pending

    def _load_runs(self) -> List[RunResult]:
        self._check_fingerprint(create=False)
        missing = [i for i in range(len(self.plan)) if not self._run_path(i).exists()]
        if missing:
            raise RuntimeError(f"the study in {self.directory} misses {len(missing)} of {len(self.plan)} runs "
                               f"(first: {missing[:5]}); call run() to finish it")
        runs = []
        for index in range(len(self.plan)):
            with np.load(self._run_path(index), allow_pickle=False) as stored:
                arrays = {name: stored[name] for name in stored.files}
            runs.append(RunResult(arrays["scores"], arrays.get("weights"), arrays.get("weight_path"),
                                  arrays.get("remaining"), float(arrays["seconds"]), json.loads(str(arrays["info"]))))
        return runs

    def _weight_stack(self, runs: List[RunResult], field: str) -> Optional[np.ndarray]:
        present = [getattr(run, field) is not None for run in runs]
        if not any(present):
            return None
        if not all(present):
            raise ValueError(f"run {present.index(True)} has '{field}' and run {present.index(False)} has not; "
                             f"fit_run must return it for every run or for none")
        return normalised_feature_weights(np.stack([getattr(run, field) for run in runs]))

    def _summarise(self, runs: List[RunResult]) -> dict:
        scores = np.vstack([run.scores for run in runs])
        subsets = []
        for k in self.num_features_list:
            selected = self._subsets(scores, k)
            subsets.append({"k": k, "kuncheva": kuncheva_stability(selected, self.n_features),
                            "jaccard": jaccard_stability(selected)})
        summary = {"n_features": self.n_features, "runs": len(runs), "subsets": subsets, "weights": None,
                   "rfe_path": None}
        weights = self._weight_stack(runs, "weights")
        if weights is not None:
            summary["weights"] = {"variance": float(weight_variance(weights).mean())}
            if self.true_relevance is not None:
                terms = average_bias_variance_error(weights, self.true_relevance)
                summary["weights"].update(bias=terms.bias, error=terms.error)
        paths = self._weight_stack(runs, "weight_path")
        if paths is not None:
            remaining = runs[0].remaining
            if all(np.array_equal(run.remaining, remaining) for run in runs):
                terms = weight_path_terms(paths, self.true_relevance)
                known = {name: getattr(terms, name) for name in ("variance", "bias", "error")
                         if getattr(terms, name) is not None}
                summary["rfe_path"] = [{"remaining": int(count), **{name: float(v[t]) for name, v in known.items()}}
                                       for t, count in enumerate(remaining)]
            else:
                warnings.warn("the runs eliminated features in different numbers per iteration; the "
                              "per-iteration weight measures are left out of the summary", UserWarning, stacklevel=3)
        return summary

    def _subsets(self, scores, k: int) -> list:
        """Each run's k features: the top k of its scores, or with ``forced`` the kept features
        first and the best others (:func:`sparkfs.core.selection.forced_first`)."""
        if self.forced is None:
            return top_k_subsets(scores, k)
        return [forced_first(rank_features(row), *self.forced, k) for row in np.atleast_2d(scores)]

    def summary(self) -> dict:
        """Stability measures computed from the saved runs (all must be saved); JSON-able.

        ``{"n_features", "runs", "subsets": [{"k", "kuncheva", "jaccard"}, ...],
        "weights": {"variance"[, "bias", "error"]} or None,
        "rfe_path": [{"remaining", "variance"[, "bias", "error"]}, ...] or None}``.
        Kuncheva and Jaccard are eq. (8) over the top-k subsets of the scores (eq. 9 for Kuncheva);
        the weight terms are eq. (4)'s averages over the features of the normalised final weights,
        and of the weight path at each iteration (keyed by the remaining number of features).
        """
        return self._summarise(self._load_runs())

    def write_outputs(self) -> List[Path]:
        """Write ``stability.json``, ``runs.parquet``, ``stability.png`` and (with weight paths)
        ``rfe_path.png`` into the directory, each atomically; returns their paths."""
        runs = self._load_runs()
        summary = self._summarise(runs)
        document = {"description": self.description, "runs": len(runs), "seconds": [run.seconds for run in runs],
                    "run_info": [run.info for run in runs], "summary": summary}
        text = strict_dumps(document, indent=2)
        written = [atomic_write(self.directory / "stability.json", lambda stream: stream.write(text.encode()))]
        scores = np.vstack([run.scores for run in runs])
        selections = {k: self._subsets(scores, k) for k in self.num_features_list}
        rows = [(index, k, selections[k][index].tolist(), run.seconds)
                for index, run in enumerate(runs) for k in self.num_features_list]
        schema = pa.schema([("run", pa.int32()), ("k", pa.int32()), ("selected", pa.list_(pa.int64())),
                            ("seconds", pa.float64())])
        arrow_table = pa.table(dict(zip(schema.names, map(list, zip(*rows)))), schema=schema)
        written.append(atomic_write(self.directory / "runs.parquet",
                                     lambda stream: pq.write_table(arrow_table, stream)))
        title = str(self.description.get("method", "feature selection"))
        written.append(self._plot(self.directory / "stability.png", f"Subset stability of {title} ({len(runs)} runs)",
                                  "number of selected features k",
                                  {name: [(row["k"], row[name]) for row in summary["subsets"]]
                                   for name in ("kuncheva", "jaccard")}, log_x=False))
        if summary["rfe_path"] is not None:
            curves = {name: [(row["remaining"], row[name]) for row in summary["rfe_path"]]
                      for name in ("variance", "bias", "error") if name in summary["rfe_path"][0]}
            written.append(self._plot(self.directory / "rfe_path.png",
                                      f"Normalised weights of {title} along RFE ({len(runs)} runs)",
                                      "number of remaining features", curves, log_x=True))
        return written

    @staticmethod
    def _plot(path: Path, title: str, x_label: str, curves: dict, log_x: bool) -> Path:
        """One line per curve (a list of (x, y)), drawn without pyplot (the user's backend stays)."""
        figure = Figure(figsize=(6.4, 4.2), dpi=100)
        canvas = FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        for name, points in curves.items():
            x, y = zip(*sorted(points))
            axes.plot(x, y, marker="o", markersize=3, label=name.capitalize())
        xs = [x for points in curves.values() for x, _ in points]
        if log_x and min(xs) > 0 and max(xs) / min(xs) > 20:
            axes.set_xscale("log")
        if log_x:
            axes.invert_xaxis()  # RFE runs from many remaining features to few
        axes.set_xlabel(x_label)
        axes.set_title(title, fontsize=10)
        axes.grid(True, alpha=0.3)
        axes.legend()
        figure.tight_layout()
        return atomic_write(path, canvas.print_png)
