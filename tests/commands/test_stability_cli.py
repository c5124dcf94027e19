"""`sparkfs instance-weights`, `sparkfs select --instance-weighting margin` and `sparkfs stability`
end to end on a small CSV: outputs, the weights against the loop reference, resume after a kill."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main
from tests.core.test_instance_weighting import assert_close, reference_margin_vectors, reference_weights


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    rng = np.random.default_rng(11)
    X = np.round(rng.normal(size=(40, 6)), 3)
    y = (2 * X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=40) > 0).astype(int)
    frame = pd.DataFrame(X, columns=[f"g{i}" for i in range(6)])
    frame["class"] = y
    path = tmp_path_factory.mktemp("data") / "small.csv"
    frame.to_csv(path, index=False)
    return str(path), X, y


def _common(path):
    return ["--input", path, "--format", "csv", "--label-col", "class", "--master", "local[2]"]


def test_instance_weights_command_writes_the_reference_weights(spark, small_csv, tmp_path, capsys):
    path, X, y = small_csv
    out = tmp_path / "iw"
    assert main(["instance-weights", *_common(path), "--output", str(out)]) == 0
    table = pd.read_parquet(out / "weights.parquet")
    summary = json.loads((out / "summary.json").read_text())
    assert table["row"].tolist() == list(range(40))
    expected, _ = reference_weights(reference_margin_vectors(X.tolist(), y.tolist()))
    assert_close(table["weight"].to_numpy(), expected)
    assert summary["n_rows"] == 40 and summary["weight_sum"] == pytest.approx(40)
    assert "weights.parquet" in capsys.readouterr().out
    assert main(["instance-weights", *_common(path), "--output", str(out)]) == 2     # exists: refused
    assert main(["instance-weights", *_common(path), "--driver-budget-mb", "0.001", "--output",
                 str(tmp_path / "b")]) == 2
    assert "--driver-budget-mb" in capsys.readouterr().err and not (tmp_path / "b").exists()


def test_select_with_margin_instance_weighting(spark, small_csv, tmp_path, capsys):
    path, X, y = small_csv
    out = tmp_path / "sel"
    assert main(["select", *_common(path), "--method", "lfs", "--instance-weighting", "margin",
                 "--num-features", "2", "--output", str(out)]) == 0
    # The same as LFS given the reference weights as a weight column.
    expected, _ = reference_weights(reference_margin_vectors(X.tolist(), y.tolist()))
    weighted_csv = tmp_path / "weighted.csv"
    pd.read_csv(path).assign(w=expected).to_csv(weighted_csv, index=False)
    assert main(["select", *_common(str(weighted_csv)), "--method", "lfs", "--weight-col", "w",
                 "--num-features", "2", "--output", str(tmp_path / "explicit")]) == 0
    scores = pd.read_parquet(out / "features.parquet")["score"].to_numpy()
    assert_close(scores, pd.read_parquet(tmp_path / "explicit" / "features.parquet")["score"].to_numpy())
    assert main(["select", *_common(path), "--method", "relief", "--instance-weighting", "margin",
                 "--num-features", "2", "--output", str(tmp_path / "relief")]) == 2
    assert "weightCol" in capsys.readouterr().err
    assert not (tmp_path / "relief").exists()


def test_stability_study_outputs_and_resume(spark, small_csv, tmp_path, capsys):
    path, _, _ = small_csv
    command = ["stability", *_common(path), "--method", "lfs", "--runs", "4", "--sample-fraction", "0.8",
               "--num-features", "1,2,3", "--seed", "3"]
    first, second = tmp_path / "first", tmp_path / "second"
    assert main([*command, "--output", str(first)]) == 0
    result = json.loads((first / "stability.json").read_text())
    assert [row["k"] for row in result["summary"]["subsets"]] == [1, 2, 3]
    assert all(-1.0 <= row["kuncheva"] <= 1.0 for row in result["summary"]["subsets"])
    for name in ("runs.parquet", "stability.png"):
        assert (first / name).is_file()
    # A study killed (SIGKILL, Spark's JVM with it) once two runs are saved: the same command
    # fits only the missing runs, two at a time, and ends with the same numbers.
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    process = subprocess.Popen([sys.executable, "-m", "sparkfs.cli", *command, "--output", str(second)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while len(list((second / "runs").glob("run-*.npz"))) < 2 and process.poll() is None:
        assert time.monotonic() < deadline, "the study saved no two runs in 300 s"
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    saved = len(list((second / "runs").glob("run-*.npz")))
    assert 2 <= saved < 4 and not (second / "stability.json").exists()
    assert main([*command, "--parallelism", "2", "--output", str(second)]) == 0
    assert json.loads((second / "stability.json").read_text())["summary"] == result["summary"]
    # Another study in the same directory is refused.
    assert main([*command[:-2], "--seed", "4", "--output", str(first)]) == 2
    assert "output directory" in capsys.readouterr().err
    # Margin weights for a method that takes none: refused before the input is read.
    assert main(["stability", *_common(path), "--method", "chi2-categorical", "--runs", "2", "--instance-weighting",
                 "margin", "--num-features", "1", "--output", str(tmp_path / "categorical")]) == 2
    assert "--method chi2-categorical does not take instance weights" in capsys.readouterr().err
    assert not (tmp_path / "categorical").exists()


def test_stability_of_svm_rfe_with_bootstrap_and_true_relevance(spark, small_csv, tmp_path):
    path, _, _ = small_csv
    truth = tmp_path / "truth.txt"
    np.savetxt(truth, [2.0, 1.0, 0, 0, 0, 0])
    out = tmp_path / "rfe"
    assert main(["stability", *_common(path), "--method", "svm-rfe", "--param", "step=2", "--param",
                 "eliminateAll=true",
                 "--runs", "3",
                 "--bootstrap", "--num-features", "2", "--true-relevance", str(truth),
                 "--instance-weighting", "margin", "--output", str(out)]) == 0
    summary = json.loads((out / "stability.json").read_text())["summary"]
    assert summary["weights"]["error"] == pytest.approx(summary["weights"]["bias"] + summary["weights"]["variance"])
    assert [row["remaining"] for row in summary["rfe_path"]] == [6, 4, 2, 1]
    assert (out / "rfe_path.png").is_file()
    assert main(["stability", *_common(path), "--method", "lfs", "--runs", "3", "--num-features", "7",
                 "--output", str(tmp_path / "big")]) == 2
    assert main(["stability", *_common(path), "--method", "lfs", "--runs", "1", "--num-features", "2",
                 "--output", str(tmp_path / "one")]) == 2
