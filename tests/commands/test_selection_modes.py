"""Spark ML's selection modes and p-values through the real command line:
``--selection-mode {num-top-features,percentile,fpr,fdr,fwe} --selection-threshold X`` (config:
``selection: {selection_mode, selection_threshold}``), the p_value column of features.parquet and
the p-values in summary.json; every refusal exits 2 with its message and writes nothing, those of
options and methods before a Spark session is asked for."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import build_parser, main, resolve_config
from sparkfs.core.selection import SELECTION_MODES
from sparkfs.io import config as config_module
from sparkfs.methods import CLI_SELECTION_MODES
from tests.helpers import refused


@pytest.fixture
def no_spark(monkeypatch):
    """Fail the test if the command asks for a SparkSession."""
    def refuse(*args, **kwargs):
        pytest.fail("a SparkSession was asked for before the refusal")

    monkeypatch.setattr("sparkfs.spark.session.get_spark", refuse)


@pytest.fixture(scope="module")
def sonar(tmp_path_factory, shared_data):
    """sonar (208 x 60, 2 classes) as a Parquet table of named columns."""
    data = np.load(shared_data / "sonar.npz")
    frame = pd.DataFrame(data["X"], columns=[f"band{i}" for i in range(data["X"].shape[1])])
    frame["y"] = data["y"]
    path = tmp_path_factory.mktemp("sonar") / "sonar.parquet"
    frame.to_parquet(path)
    return str(path), data["X"], data["y"]


@pytest.fixture(scope="module")
def noise(tmp_path_factory):
    """40 rows of 3 features that have nothing to do with the label."""
    rng = np.random.default_rng(11)
    frame = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    frame["y"] = np.arange(40) % 2
    path = tmp_path_factory.mktemp("noise") / "noise.parquet"
    frame.to_parquet(path)
    return str(path)


def test_fdr_from_a_config_file_writes_p_values(spark, sonar, tmp_path, capsys):
    from sklearn.feature_selection import SelectFdr, f_classif

    path, X, y = sonar
    out = tmp_path / "out"
    job = tmp_path / "job.yaml"
    job.write_text(f"input: {{path: {path}, format: parquet, label_col: y}}\nmethod: anova\n"
                   f"selection: {{selection_mode: fdr, selection_threshold: 0.01}}\noutput: {{path: {out}}}\n")
    assert main(["select", "--config", str(job)]) == 0
    printed = capsys.readouterr().out
    assert "top features (name, score, p-value):" in printed
    table = pd.read_parquet(out / "features.parquet")
    summary = json.loads((out / "summary.json").read_text())
    expected_p = f_classif(X, y)[1]
    np.testing.assert_allclose(table["p_value"], expected_p, rtol=1e-6)
    expected = np.flatnonzero(SelectFdr(f_classif, alpha=0.01).fit(X, y).get_support())
    assert summary["selected_indices"] == expected.tolist() == np.flatnonzero(table["selected"]).tolist()
    assert summary["selection"] == {"mode": "fdr", "n_selected": expected.size, "selection_threshold": 0.01,
                                    "kept": [], "excluded": []}
    np.testing.assert_allclose(summary["selected_p_values"], expected_p[expected], rtol=1e-6)
    assert summary["params"]["selectionMode"] == "fdr" and "numFeatures" not in summary["params"]
    top_name = table.sort_values("rank")["name"].iloc[0]
    assert f"  {top_name} " in printed


def test_chi2_fpr_through_the_flags(spark, sonar, tmp_path):
    """sonar's values are in [0, 1], so chi2 applies: its p-values and fpr selection are scikit-learn's
    chi2 and SelectFpr (its class sums are small: no chi2 p-value passes fdr at 0.05 here)."""
    from sklearn.feature_selection import SelectFpr, chi2

    path, X, y = sonar
    out = tmp_path / "chi2-fpr"
    assert main(["select", "--input", path, "--format", "parquet", "--label-col", "y", "--method", "chi2",
                 "--selection-mode", "fpr", "--selection-threshold", "0.5", "--output", str(out)]) == 0
    table = pd.read_parquet(out / "features.parquet")
    np.testing.assert_allclose(table["p_value"], chi2(X, y)[1], rtol=1e-6)
    expected = np.flatnonzero(SelectFpr(chi2, alpha=0.5).fit(X, y).get_support())
    assert np.flatnonzero(table["selected"]).tolist() == expected.tolist() and 0 < expected.size < 60


@pytest.mark.parametrize("args, fragments", [
    (["--method", "lfs", "--selection-mode", "fdr"],
     ["--selection-mode fdr compares p-values with alpha, and method 'lfs' computes none: it takes --selection-mode "
      "num-top-features, percentile. The methods with p-values are anova, chi2, chi2-categorical"]),
    (["--method", "relieff", "--selection-mode", "fwe", "--selection-threshold", "0.1"], ["method 'relieff'"]),
    (["--method", "anova", "--selection-mode", "fpr", "--selection-threshold", "1.5"],
     ["--selection-threshold must be a number in (0, 1] (the fraction of features for percentile, alpha for fpr, "
      "fdr and fwe), got the number 1.5"]),
    (["--method", "anova", "--selection-mode", "percentile", "--selection-threshold", "0"],
     ["--selection-threshold must be a number in (0, 1]", "got the number 0.0"]),
    (["--method", "anova", "--selection-threshold", "0.1"],
     ["--selection-threshold 0.1 is the fraction (percentile) or alpha (fpr, fdr, fwe) of --selection-mode"]),
    (["--method", "anova", "--selection-mode", "fdr", "--num-features", "5"],
     ["give either --selection-mode fdr or --num-features, not both"]),
    (["--method", "anova", "--selection-mode", "percentile", "--threshold", "2"],
     ["give either --selection-mode percentile or --threshold, not both"]),
    (["--method", "anova", "--param", "selectionMode=fdr"],
     ["param 'selectionMode' of method 'anova' is set by the command's own options", "--selection-mode"]),
])
def test_selection_refusals_before_spark(no_spark, noise, tmp_path, capsys, args, fragments):
    out = tmp_path / "out"
    code = main(["select", "--input", noise, "--format", "parquet", "--label-col", "y", "--output", str(out), *args])
    refused(capsys, code, out, *fragments)


def test_config_keys_are_typed_and_a_p_value_mode_of_a_method_without_refused(no_spark, noise, tmp_path, capsys):
    out = tmp_path / "out"
    job = tmp_path / "job.yaml"
    job.write_text(f"input: {{path: {noise}, format: parquet, label_col: y}}\nselection: {{selection_mode: kbest}}\n")
    refused(capsys, main(["select", "--config", str(job), "--output", str(out)]), out,
            "selection.selection_mode in ", "must be one of 'num-top-features', 'percentile', 'fpr', 'fdr', 'fwe', "
            "got the string 'kbest'")
    job.write_text(f"input: {{path: {noise}, format: parquet, label_col: y}}\nmethod: simba\n"
                   "selection: {selection_mode: fpr}\n")
    refused(capsys, main(["select", "--config", str(job), "--output", str(out)]), out,
            "--selection-mode fpr compares p-values with alpha, and method 'simba' computes none")


def test_a_selection_flag_replaces_the_files_rule(tmp_path):
    """--selection-mode (or --num-features, --threshold) replaces the file's whole selection;
    --selection-threshold alone keeps the file's selection_mode."""
    job = tmp_path / "job.yaml"
    job.write_text("input: {path: x.libsvm}\noutput: {path: out}\nmethod: anova\n"
                   "selection: {num_features: 5, selection_threshold: 0.2}\n")

    def selection(*flags):
        return resolve_config(build_parser().parse_args(["select", "--config", str(job), *flags]))["selection"]

    assert selection("--selection-mode", "percentile") == {"num_features": None, "threshold": None,
                                                            "selection_mode": "percentile", "selection_threshold": None}
    job.write_text("input: {path: x.libsvm}\noutput: {path: out}\nselection: {selection_mode: fdr}\n")
    assert selection("--selection-threshold", "0.01")["selection_mode"] == "fdr"
    assert selection("--num-features", "3") == {"num_features": 3, "threshold": None, "selection_mode": None,
                                                "selection_threshold": None}


def test_the_mode_spellings_agree():
    """The flag's choices, the config schema and the Params' values name the same five modes."""
    choices = next(a.choices for a in build_parser()._subparsers._group_actions[0].choices["select"]._actions
                   if a.dest == "selection_mode")
    assert list(CLI_SELECTION_MODES) == list(SELECTION_MODES)
    assert list(choices) == list(CLI_SELECTION_MODES.values())
    assert all(config_module.SCHEMA["selection.selection_mode"][0](mode) for mode in choices)
    assert not config_module.SCHEMA["selection.selection_mode"][0]("numTopFeatures")


def test_a_mode_that_selects_nothing_is_refused(spark, noise, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["select", "--input", noise, "--format", "parquet", "--label-col", "y", "--method", "anova",
            "--output", str(out)]
    message = refused(capsys, main([*argv, "--selection-mode", "fwe", "--selection-threshold", "0.001"]), out,
                      "--selection-mode fwe at 0.001 selects no feature (p-value < 0.001 / 3 features): the smallest "
                      "p-value is ", "give a larger --selection-threshold, or --num-features K")
    assert "(feature '" in message
    refused(capsys, main([*argv, "--selection-mode", "percentile", "--selection-threshold", "0.2"]), out,
            "--selection-mode percentile at 0.2 selects no feature: floor(3 features x 0.2) = 0; give "
            "--selection-threshold 0.3334 or more")
    assert not [p for p in Path(tmp_path).iterdir() if p.name.startswith(".out")]
