"""``--mlflow`` on ``select``, ``stability`` and ``evaluate``: one run per command in a real
local tracking store (SQLite, MLflow 3's default kind, in a temporary folder), read back through
``MlflowClient``; the refusals before any Spark work; no FINISHED run from a failed command.

The Spark tests share the session fixture and one small CSV; each names its own experiment so the
runs of one test are found apart from the others'.
"""

import ast
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tomllib

from sparkfs.cli import main

mlflow = pytest.importorskip("mlflow")
from mlflow.tracking import MlflowClient  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(40, 6)), 3)
    y = (2 * X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=40) > 0).astype(int)
    path = tmp_path_factory.mktemp("data") / "small.csv"
    pd.DataFrame(X, columns=[f"g{i}" for i in range(6)]).assign(label=y).to_csv(path, index=False)
    return str(path)


@pytest.fixture(scope="module")
def store_uri(tmp_path_factory):
    """One SQLite tracking store for the module (creating one costs about 2 s of migrations)."""
    folder = tmp_path_factory.mktemp("mlflow")
    return f"sqlite:///{folder}/mlflow.db"


@pytest.fixture
def tracking(store_uri, monkeypatch, tmp_path):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store_uri)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    monkeypatch.chdir(tmp_path)  # MLflow's default artifact root (./mlruns) lands here
    return MlflowClient(tracking_uri=store_uri)


@pytest.fixture
def no_spark(monkeypatch):
    def refuse(*args, **kwargs):
        pytest.fail("a SparkSession was asked for before the refusal")

    monkeypatch.setattr("sparkfs.spark.session.get_spark", refuse)


def _common(path):
    return ["--input", path, "--format", "csv", "--master", "local[2]"]


def _runs(client, experiment):
    found = client.get_experiment_by_name(experiment)
    return [] if found is None else client.search_runs([found.experiment_id])


def _artifacts(client, run_id):
    return sorted(item.path for item in client.list_artifacts(run_id))


def _document(client, run_id, name, tmp_path):
    local = client.download_artifacts(run_id, name, str(tmp_path))
    with open(local, encoding="utf-8") as handle:
        return json.load(handle)


def test_select_logs_one_run_read_back_through_the_client(spark, small_csv, tracking, tmp_path):
    out = tmp_path / "sel"
    assert main(["select", *_common(small_csv), "--method", "lfs", "--num-features", "2", "--param", "gamma=-0.5",
                 "--output", str(out), "--mlflow", "--mlflow-experiment", "select-runs"]) == 0
    (run,) = _runs(tracking, "select-runs")
    assert run.info.status == "FINISHED" and run.info.run_name == "select lfs"
    summary = json.loads((out / "summary.json").read_text())
    params, metrics, tags = run.data.params, run.data.metrics, run.data.tags
    assert params["method"] == "lfs" and params["input_path"] == small_csv and params["input_format"] == "csv"
    assert params["param.gamma"] == "-0.5" and params["param.numFeatures"] == "2"
    assert params["num_features"] == "2" and params["selection_mode"] == "numTopFeatures"
    assert metrics["n_rows"] == 40 and metrics["n_features"] == 6 and metrics["n_classes"] == 2
    assert metrics["selected"] == 2 and metrics["seconds"] == summary["seconds"]
    assert metrics["ties.tied_at_cut"] == summary["ties"]["tied_at_cut"]
    assert metrics["fit_seconds"] == summary["fit_seconds"]
    assert tags["sparkfs.command"] == "select" and tags["sparkfs.run_id"] == summary["run_id"]
    assert _artifacts(tracking, run.info.run_id) == ["features.parquet", "selection.json", "summary.json"]
    # the selection logged is the one written
    table = pd.read_parquet(out / "features.parquet")
    written = table[table["selected"]].sort_values("rank")
    selection = _document(tracking, run.info.run_id, "selection.json", tmp_path / "down")
    assert sorted(selection["selected_indices"]) == sorted(written["index"].tolist())
    assert selection["selected_names"] == summary["selected_names"]
    assert tags["sparkfs.selected"] == f"2: {', '.join(summary['selected_names'])}"
    logged = _document(tracking, run.info.run_id, "summary.json", tmp_path / "down2")
    assert logged == summary


def test_the_config_key_logs_in_mlflows_default_experiment(spark, small_csv, tracking, tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(f"input: {{path: {small_csv}, format: csv}}\nmethod: anova\nselection: {{num_features: 3}}\n"
                   f"output: {{path: {tmp_path / 'out'}}}\nmlflow: true\n")
    before = {run.info.run_id for run in _runs(tracking, "Default")}
    assert main(["select", "--config", str(job), "--master", "local[2]"]) == 0
    (run,) = [run for run in _runs(tracking, "Default") if run.info.run_id not in before]
    assert run.info.status == "FINISHED" and run.info.experiment_id == "0"
    assert run.data.params["method"] == "anova" and run.data.params["config_file"] == str(job)
    assert run.data.metrics["selected"] == 3


def test_stability_and_evaluate_log_their_runs(spark, small_csv, tracking, tmp_path):
    assert main(["stability", *_common(small_csv), "--method", "lfs", "--runs", "2", "--num-features", "1,2",
                 "--output", str(tmp_path / "stab"), "--mlflow", "--mlflow-experiment", "studies"]) == 0
    (stability,) = _runs(tracking, "studies")
    result = json.loads((tmp_path / "stab" / "stability.json").read_text())["summary"]
    history = tracking.get_metric_history(stability.info.run_id, "kuncheva")
    assert sorted((m.step, m.value) for m in history) == [(row["k"], row["kuncheva"]) for row in result["subsets"]]
    assert stability.data.metrics["weights.variance"] == pytest.approx(result["weights"]["variance"])
    assert stability.data.params["runs"] == "2" and stability.data.params["method"] == "lfs"
    assert {"stability.json", "runs.parquet", "stability.png"} <= set(_artifacts(tracking, stability.info.run_id))

    assert main(["evaluate", *_common(small_csv), "--methods", "lfs,random", "--classifiers", "nb",
                 "--num-features", "1,2", "--cv", "2", "--output", str(tmp_path / "eval"), "--mlflow",
                 "--mlflow-experiment", "studies"]) == 0
    (evaluate,) = [run for run in _runs(tracking, "studies") if run.info.run_id != stability.info.run_id]
    assert evaluate.info.status == "FINISHED" and evaluate.data.params["methods"] == "lfs,random"
    recommended = json.loads((tmp_path / "eval" / "recommendation.json").read_text())["recommendations"]
    selection = _document(tracking, evaluate.info.run_id, "selection.json", tmp_path / "down")
    assert [(e["method"], e["k"], e["selected_names"], e["selected_indices"]) for e in selection["recommendations"]] \
        == [(e["method"], e["k"], e["features"], e["feature_indices"]) for e in recommended]
    summary = pd.read_csv(tmp_path / "eval" / "summary.csv")
    lfs = summary[summary["method"] == "lfs"].sort_values("k")
    history = tracking.get_metric_history(evaluate.info.run_id, "accuracy_mean.lfs.nb")
    assert sorted((m.step, m.value) for m in history) == list(zip(lfs["k"], lfs["accuracy_mean"]))
    assert {"report.html", "results.parquet", "summary.csv"} <= set(_artifacts(tracking, evaluate.info.run_id))


def test_a_failed_command_leaves_no_finished_run(spark, small_csv, tracking, tmp_path, monkeypatch, capsys):
    # refused after the fit (the threshold selects nothing): no output, no run, not even the experiment
    assert main(["select", *_common(small_csv), "--method", "lfs", "--threshold", "1e9", "--output",
                 str(tmp_path / "none"), "--mlflow", "--mlflow-experiment", "failures"]) == 2
    assert not (tmp_path / "none").exists() and _runs(tracking, "failures") == []
    # the outputs are written but logging fails half way: the run is FAILED, the command exit 1
    def broken(self, *args, **kwargs):
        raise OSError("artifact store unreachable")

    monkeypatch.setattr(MlflowClient, "log_artifact", broken)
    capsys.readouterr()
    assert main(["select", *_common(small_csv), "--method", "lfs", "--num-features", "2", "--output",
                 str(tmp_path / "half"), "--mlflow", "--mlflow-experiment", "failures"]) == 1
    (run,) = _runs(tracking, "failures")
    assert run.info.status == "FAILED" and (tmp_path / "half" / "summary.json").is_file()
    err = capsys.readouterr().err
    assert "the outputs are written" in err and run.info.run_id in err and "artifact store unreachable" in err


@pytest.mark.parametrize("command", ["select", "stability", "evaluate"])
def test_without_the_extra_mlflow_is_exit_2_before_spark(command, small_csv, no_spark, monkeypatch, tmp_path,
                                                         capsys):
    monkeypatch.setitem(sys.modules, "mlflow", None)  # `import mlflow` raises ImportError
    extra = {"select": ["--method", "lfs", "--num-features", "2"],
             "stability": ["--method", "lfs", "--num-features", "2"],
             "evaluate": ["--methods", "lfs"]}[command]
    out = tmp_path / "out"
    assert main([command, *_common(small_csv), *extra, "--output", str(out), "--mlflow"]) == 2
    assert "pip install 'sparkfs[mlflow]'" in capsys.readouterr().err and not out.exists()


def test_refusals_before_spark(small_csv, no_spark, tracking, store_uri, monkeypatch, tmp_path, capsys):
    base = ["select", *_common(small_csv), "--method", "lfs", "--num-features", "2"]
    out = tmp_path / "out"
    assert main([*base, "--output", str(out), "--mlflow-experiment", "x"]) == 2
    assert "add --mlflow" in capsys.readouterr().err
    # a store inside the output directory would mix MLflow's files with the command's
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{out}/mlflow.db")
    assert main([*base, "--output", str(out), "--mlflow"]) == 2
    assert "inside the output directory" in capsys.readouterr().err and not out.exists()
    # a file store MLflow refuses (MLflow 3 without MLFLOW_ALLOW_FILE_STORE) is refused before Spark
    file_store = f"file:{tmp_path / 'mlruns'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", file_store)
    monkeypatch.delenv("MLFLOW_ALLOW_FILE_STORE", raising=False)
    try:
        MlflowClient(tracking_uri=file_store).search_experiments(max_results=1)
    except Exception:  # this MLflow refuses the file store
        assert main([*base, "--output", str(out), "--mlflow"]) == 2
        assert "MLFLOW_ALLOW_FILE_STORE" in capsys.readouterr().err and not out.exists()
    # a deleted experiment is named
    monkeypatch.setenv("MLFLOW_TRACKING_URI", store_uri)
    tracking.delete_experiment(tracking.create_experiment("gone"))
    assert main([*base, "--output", str(out), "--mlflow", "--mlflow-experiment", "gone"]) == 2
    assert "deleted" in capsys.readouterr().err and not out.exists()


def test_inside_an_active_run_the_commands_run_is_its_child(tracking):
    """A notebook's ``with mlflow.start_run():`` around a command: the command's run is nested in it
    (no Spark: the record of a select whose output is a URI, logged from the summary alone)."""
    from sparkfs.commands.tracking import log_run, mlflow_target, select_record

    summary = {"method": "anova", "params": {"numFeatures": 1}, "n_rows": 3, "ratio": float("nan"),
               "ties": {"flat": True, "tied_at_cut": 0}, "selected_indices": [1], "selected_names": ["b"],
               "input": {"path": "hdfs:///in", "format": "parquet"}, "output": "hdfs:///out", "run_id": "r1",
               "top_features": [["b", 1.0, 0.5]]}
    target = mlflow_target(True, "nested")
    with mlflow.start_run(experiment_id=tracking.create_experiment("outer")) as outer:
        child = log_run(target, select_record({"selection": {"num_features": 1}}, summary))
        assert mlflow.active_run().info.run_id == outer.info.run_id  # the user's run is active again
    run = tracking.get_run(child)
    assert run.data.tags["mlflow.parentRunId"] == outer.info.run_id and run.info.status == "FINISHED"
    assert run.data.metrics == {"n_rows": 3, "ties.tied_at_cut": 0, "selected": 1}  # no NaN, no booleans
    assert _artifacts(tracking, child) == ["selection.json", "summary.json"]  # a URI output: the summary only


def test_the_base_install_and_the_executors_pack_do_without_mlflow():
    """MLflow is imported inside tracking's functions only (so only with --mlflow), and is no
    runtime dependency: tools/pack_env.py packs ``project.dependencies`` for the executors."""
    def imports_mlflow(node):
        if isinstance(node, ast.Import):
            return any(alias.name.split(".")[0] == "mlflow" for alias in node.names)
        return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mlflow"

    for path in sorted((REPO / "sparkfs").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert not any(imports_mlflow(node) for node in tree.body), f"{path} imports mlflow when it is imported"
        if any(imports_mlflow(node) for node in ast.walk(tree)):
            assert path.name == "tracking.py", f"{path} imports mlflow"
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert not any("mlflow" in name for name in project["dependencies"])  # the pack installs these only
    extras = project["optional-dependencies"]
    assert any(name.startswith("mlflow-skinny") for name in extras["mlflow"])
    assert set(extras["mlflow"]) <= set(extras["dev"])
