"""MLflow runs of ``select``, ``evaluate`` and ``stability`` (``--mlflow``; docs/jobs.md, "MLflow runs").

One run per command, logged **after** the command's outputs are written: the params (the method,
its params, the input, the selection rule or the study's settings), the selection (names and
indices, the ``selection.json`` artifact and the ``sparkfs.selected`` tag), the summary's figures
as metrics, and the files the command wrote as artifacts. A command that fails before its outputs
exist starts no run at all; a failure while the run is being logged ends it as ``FAILED`` (exit 1,
the outputs stay). The rule is one of order, not of clean-up: nothing is written to MLflow that a
later failure would have to take back.

MLflow is an optional extra (``pip install 'sparkfs[mlflow]'``) and is imported here only, inside
the functions, when ``--mlflow`` is given: the base install and the executors' environment never
import it. :func:`mlflow_target` runs before any Spark work: without MLflow, or with a tracking
store MLflow cannot open (MLflow 3's default ``sqlite:///mlflow.db`` without SQLAlchemy, a
``./mlruns`` file store that MLflow 3 refuses unless ``MLFLOW_ALLOW_FILE_STORE=true``), the
command stops with exit 2 before it reads anything. The tracking URI and the default experiment are
MLflow's own settings (``MLFLOW_TRACKING_URI``, ``MLFLOW_EXPERIMENT_NAME``, a Databricks
notebook's experiment); ``--mlflow-experiment NAME`` picks (or creates) an experiment by name.
Inside an active MLflow run (a notebook's ``with mlflow.start_run():``) the command's run is its
child.

sparkfs writes nothing into MLflow's store itself: MLflow does, where its settings say. A local
store inside the command's output directory is refused, as that directory must hold only what the
command wrote (docs/security.md).
"""

from __future__ import annotations

import csv
import logging
import math
import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from sparkfs.io import strict_json
from sparkfs.io.config import ConfigError
from sparkfs.io.stores import local_path_of

log = logging.getLogger("sparkfs")

INSTALL_HINT = "pip install 'sparkfs[mlflow]'"
#: Longest param value and tag logged (MLflow's own limits are 6,000 and 8,000 characters); the
#: whole value is in the artifacts.
_MAX_TEXT = 500
_RUN_FIELDS = ("sparkfs_output", "params", "input_files", "started_at", "ended_at", "run_id")


class TrackingError(RuntimeError):
    """The command's outputs are written but its MLflow run could not be logged (exit 1)."""


@dataclass(frozen=True)
class MlflowTarget:
    """Where the run goes, checked before any Spark work."""

    tracking_uri: str
    experiment: Optional[str]  # None: MLflow's default experiment


@dataclass
class RunRecord:
    """What one command's run holds."""

    command: str
    name: str
    params: Dict[str, Any]
    metrics: List[Tuple[str, float, int]]  # (key, value, step)
    artifacts: List[str]  # local files the command wrote
    selection: Optional[Dict[str, Any]] = None  # logged as selection.json
    selected: Optional[str] = None  # the sparkfs.selected tag
    tags: Dict[str, str] = field(default_factory=dict)
    documents: Dict[str, Any] = field(default_factory=dict)  # artifact name -> a JSON value (not on local disk)


def add_mlflow_args(parser) -> None:
    """``--mlflow`` and ``--mlflow-experiment`` of ``select``, ``evaluate`` and ``stability``."""
    parser.add_argument("--mlflow", action="store_true", default=None,
                        help="log an MLflow run once the outputs are written: params, selection, the summary's "
                        "figures as metrics, the outputs as artifacts (tracking URI and default experiment: "
                        f"MLflow's settings, e.g. MLFLOW_TRACKING_URI; needs {INSTALL_HINT})")
    parser.add_argument("--mlflow-experiment", metavar="NAME",
                        help="the MLflow experiment of --mlflow's run (created if missing; default: MLflow's)")


@contextmanager
def _mlflow_logs_quiet():
    """MLflow's and Alembic's INFO lines (a new SQLite store's migrations) kept off stderr, which
    holds the command's own log lines (JSON lines with ``--log-format json``); warnings pass."""
    loggers = [logging.getLogger(name) for name in ("mlflow", "alembic")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(max(logger.getEffectiveLevel(), logging.WARNING))
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def mlflow_target(enabled: Optional[bool], experiment: Optional[str],
                  output: Optional[str] = None) -> Optional[MlflowTarget]:
    """The run's target when ``--mlflow`` is on (None when off), checked before Spark starts:
    MLflow installed, its tracking store open, the experiment not deleted, the store outside the
    command's ``output`` directory. Every refusal is a :class:`ConfigError` (exit 2)."""
    if not enabled:
        if experiment:
            raise ConfigError(f"--mlflow-experiment {experiment} names the experiment of the run --mlflow logs: "
                              "add --mlflow (config: mlflow: true)")
        return None
    try:
        import mlflow
    except ImportError:
        raise ConfigError(f"--mlflow needs MLflow, which is not installed: {INSTALL_HINT}") from None
    uri = mlflow.get_tracking_uri()
    _refuse_store_in_output(uri, output)
    try:
        with _mlflow_logs_quiet():
            client = mlflow.MlflowClient(tracking_uri=uri)
            found = client.get_experiment_by_name(experiment) if experiment else None
            if not experiment:
                client.search_experiments(max_results=1)  # opens the store (a SQLite one is created here)
    except Exception as error:  # MLflow's reasons vary by store; its message names them
        raise ConfigError(f"--mlflow: MLflow cannot open its tracking store {uri}: {_first_line(error)}"
                          f"{_store_advice(uri)}") from None
    if found is not None and found.lifecycle_stage == "deleted":
        raise ConfigError(f"--mlflow-experiment {experiment}: the experiment is deleted in {uri} (restore it with "
                          "`mlflow experiments restore`, or name another)")
    return MlflowTarget(uri, experiment)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _store_advice(uri: str) -> str:
    if uri.startswith("sqlite:"):
        return (f" (a SQLite store, MLflow 3's default, needs SQLAlchemy and Alembic: {INSTALL_HINT}; or set "
                "MLFLOW_TRACKING_URI to a tracking server)")
    if uri.startswith("file:") or "://" not in uri:
        return (" (MLflow 3 refuses a file store unless MLFLOW_ALLOW_FILE_STORE=true; or set "
                "MLFLOW_TRACKING_URI=sqlite:///mlflow.db)")
    return ""


def _refuse_store_in_output(uri: str, output: Optional[str]) -> None:
    """A local file or SQLite store inside the output directory would put MLflow's files among the
    command's own, which the output rules forbid (the directory holds only what sparkfs wrote)."""
    directory = local_path_of(output) if output else None
    if uri.startswith("sqlite:///"):
        store = os.path.abspath(uri[len("sqlite:///"):])
    else:
        store = local_path_of(uri) if uri.startswith("file:") or "://" not in uri else None
    if directory and store and os.path.commonpath([directory, store]) == directory:
        raise ConfigError(f"--mlflow: the MLflow tracking store {uri} is inside the output directory {output}, "
                          "which must hold only what sparkfs writes: set MLFLOW_TRACKING_URI elsewhere")


def log_run(target: MlflowTarget, record: RunRecord) -> str:
    """Log ``record`` as one MLflow run (ended FINISHED; FAILED, and :class:`TrackingError`, when
    logging fails); returns the run id."""
    with _mlflow_logs_quiet():
        run_id, experiment = _logged_run(target, record)
    log.info("mlflow run %s logged (experiment %s, tracking URI %s)", run_id, experiment, target.tracking_uri)
    return run_id


def _logged_run(target: MlflowTarget, record: RunRecord) -> Tuple[str, str]:
    import mlflow

    try:
        experiment_id = _experiment_id(target) if target.experiment else None
        run = mlflow.start_run(experiment_id=experiment_id, run_name=record.name,
                               nested=mlflow.active_run() is not None,
                               tags={key: _text(value) for key, value in
                                     {"sparkfs.command": record.command, **record.tags}.items()})
    except Exception as error:
        raise TrackingError(f"the outputs are written, but no MLflow run could be started in {target.tracking_uri}: "
                            f"{_first_line(error)}") from error
    run_id = run.info.run_id
    try:
        _log_contents(mlflow, run_id, record)
    except Exception as error:
        mlflow.end_run("FAILED")
        raise TrackingError(f"the outputs are written, but the MLflow run {run_id} could not be logged (it is "
                            f"marked FAILED in {target.tracking_uri}): {_first_line(error)}") from error
    except BaseException:  # an interruption: the run is not complete
        mlflow.end_run("KILLED")
        raise
    mlflow.end_run("FINISHED")
    return run_id, target.experiment or f"id {run.info.experiment_id}"


def _experiment_id(target: MlflowTarget) -> str:
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=target.tracking_uri)
    found = client.get_experiment_by_name(target.experiment)
    return found.experiment_id if found is not None else client.create_experiment(target.experiment)


def _log_contents(mlflow, run_id: str, record: RunRecord) -> None:
    from mlflow.entities import Metric, Param, RunTag

    client = mlflow.MlflowClient()
    tags = {} if record.selected is None else {"sparkfs.selected": _text(record.selected)}
    now = int(1000 * time.time())
    client.log_batch(run_id, params=[Param(_key(key), _text(value)) for key, value in record.params.items()],
                     tags=[RunTag(key, value) for key, value in tags.items()],
                     metrics=[Metric(_key(key), value, now, step) for key, value, step in record.metrics])
    if record.selection is not None:
        client.log_dict(run_id, record.selection, "selection.json")
    for name, document in record.documents.items():
        client.log_dict(run_id, document, name)
    for path in record.artifacts:
        if os.path.isdir(path):
            client.log_artifacts(run_id, path, os.path.basename(path.rstrip(os.sep)))
        else:
            client.log_artifact(run_id, path)


def _key(name: str) -> str:
    """A metric or param key MLflow accepts (letters, digits, ``_ - . / space``)."""
    return re.sub(r"[^\w\-. /]", "_", str(name))[:250]


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else strict_json.dumps(value, default=str)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def numeric_leaves(document: Mapping[str, Any], prefix: str = "", skip: Iterable[str] = ()) -> Dict[str, float]:
    """Every finite number of a JSON document by dotted key (booleans, lists and ``skip`` keys
    left out): the summary's figures as metrics."""
    found: Dict[str, float] = {}
    for key, value in document.items():
        if key in skip:
            continue
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            found.update(numeric_leaves(value, name + "."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            found[name] = float(value)
    return found


def selected_text(names: List[str], limit: int = 20) -> str:
    shown = ", ".join(names[:limit]) + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")
    return f"{len(names)}: {shown}"


def _flat(metrics: Mapping[str, float]) -> List[Tuple[str, float, int]]:
    return [(key, value, 0) for key, value in metrics.items()]


def _version_tags() -> Dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return {"sparkfs.version": version("sparkfs")}
    except PackageNotFoundError:  # a checkout on the path, not installed
        return {}


def select_record(config: Mapping[str, Any], summary: Mapping[str, Any]) -> RunRecord:
    """The run of ``sparkfs select``: ``summary`` as :func:`sparkfs.commands.select.run_select` wrote it."""
    selection = summary.get("selection") or {}
    params = {"method": summary["method"], "input_path": summary["input"]["path"],
              "input_format": summary["input"]["format"], "output": summary["output"],
              "selection_mode": selection.get("mode"), "config_file": config.get("config_file"),
              "instance_weighting": config.get("instance_weighting"),
              **{key: value for key, value in (config.get("selection") or {}).items() if key != "selection_mode"},
              **{f"param.{name}": value for name, value in summary["params"].items()}}
    metrics = numeric_leaves(summary, skip=_RUN_FIELDS + ("top_features",))
    metrics["selected"] = float(len(summary["selected_indices"]))
    directory = local_path_of(summary["output"])
    written = [os.path.join(directory, name) for name in ("features.parquet", "summary.json")] if directory else []
    documents = {} if directory else {"summary.json": {k: v for k, v in summary.items() if k != "top_features"}}
    return RunRecord(
        "select", f"select {summary['method']}", {k: v for k, v in params.items() if v is not None}, _flat(metrics),
        [path for path in written if os.path.exists(path)],
        selection={"selected_indices": list(summary["selected_indices"]),
                   "selected_names": list(summary["selected_names"])},
        selected=selected_text(list(summary["selected_names"])),
        tags={"sparkfs.run_id": str(summary.get("run_id")), "sparkfs.output": str(summary["output"]),
              **_version_tags()},
        documents=documents)


def _common_study_params(args) -> Dict[str, Any]:
    return {"input_path": args.input, "input_format": args.format, "label_col": args.label_col,
            "features_col": args.features_col, "num_features": args.num_features, "seed": args.seed,
            "output": args.output}


def stability_record(args, report: Mapping[str, Any]) -> RunRecord:
    """The run of ``sparkfs stability``: its settings, Kuncheva and Jaccard per subset size k
    (metrics at step k), the weights' variance (bias and error with ``--true-relevance``)."""
    summary = report["summary"]
    params = {**_common_study_params(args), "method": args.method, "runs": args.runs,
              "draw": "bootstrap" if args.bootstrap else f"subsample {args.sample_fraction or 0.9}",
              "instance_weighting": args.instance_weighting, "true_relevance": args.true_relevance,
              "parallelism": args.parallelism}
    from sparkfs.io.config import parse_param

    params.update({f"param.{name}": value for name, value in (parse_param(text) for text in args.param)})
    metrics = _flat(numeric_leaves(summary, skip=("subsets",)))
    for row in summary.get("subsets") or []:
        metrics += [(name, float(value), int(row["k"])) for name, value in row.items()
                    if name != "k" and isinstance(value, (int, float)) and math.isfinite(value)]
    return RunRecord("stability", f"stability {args.method}", {k: v for k, v in params.items() if v is not None},
                     metrics, [path for path in report["written"] if os.path.exists(path)],
                     tags={"sparkfs.run_id": str(getattr(args, "run_id", None)), "sparkfs.output": report["output"],
                           **_version_tags()})


def evaluate_record(args, report: Mapping[str, Any]) -> RunRecord:
    """The run of ``sparkfs evaluate``: its settings, the mean accuracy, macro F1 and error of
    every (method, classifier) at step k (``summary.csv``), and per classifier the recommended
    method and k with the features it selects on all rows (``selection.json``)."""
    params = {**_common_study_params(args), "methods": args.methods, "classifiers": args.classifiers,
              "cv": args.cv, "repeats": args.repeats, "test_input": args.test_input, "probes": args.probes,
              "probe_distribution": args.probe_distribution if args.probes else None,
              "driver_budget_mb": args.driver_budget_mb}
    params.update({f"param.{text.split('=', 1)[0]}": text.split("=", 1)[1] for text in args.param if "=" in text})
    metrics = [("pairs_fitted", float(report["done"]), 0)] + _summary_table_metrics(report["output"])
    recommended = (report.get("recommendation") or {}).get("recommendations") or []
    for entry in recommended:
        metrics += [(f"recommended.{entry['classifier']}.k", float(entry["k"]), 0)]
        if isinstance(entry.get("error_mean"), (int, float)) and math.isfinite(entry["error_mean"]):
            metrics += [(f"recommended.{entry['classifier']}.error_mean", float(entry["error_mean"]), 0)]
    selection = {"recommendations": [
        {"classifier": entry["classifier"], "method": entry["method"], "k": entry["k"],
         "selected_names": entry.get("features"), "selected_indices": entry.get("feature_indices")}
        for entry in recommended]}
    selected = "; ".join(f"{entry['classifier']}: {entry['method']} k={entry['k']} "
                         f"({selected_text(list(entry.get('features') or []), 10)})" for entry in recommended)
    return RunRecord("evaluate", f"evaluate {args.methods}", {k: v for k, v in params.items() if v is not None},
                     metrics, [path for path in report["written"] if os.path.exists(path)],
                     selection=selection, selected=selected or None,
                     tags={"sparkfs.run_id": str(getattr(args, "run_id", None)), "sparkfs.output": report["output"],
                           **_version_tags()})


def _summary_table_metrics(directory: str) -> List[Tuple[str, float, int]]:
    """``summary.csv``'s means as ``<figure>.<method>.<classifier>`` at step k."""
    path = os.path.join(directory, "summary.csv")
    if not os.path.exists(path):
        return []
    metrics = []
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            for figure in ("accuracy_mean", "macro_f1_mean", "error_mean", "selection_auc_mean"):
                try:
                    value = float(row.get(figure) or "nan")
                except ValueError:
                    continue
                if math.isfinite(value):
                    metrics.append((f"{figure}.{row['method']}.{row['classifier']}", value, int(row["k"])))
    return metrics
