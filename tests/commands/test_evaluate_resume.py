"""`sparkfs evaluate` refused by one method's data check: the message says how to go on, and the
same directory resumes without that method (the folds done are kept, nothing is rewritten)."""

import json

import numpy as np
import pandas as pd

from sparkfs.cli import main


def test_a_study_refused_by_one_method_resumes_without_it(spark, tmp_path, capsys):
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(30, 4)), 3)  # signed values: chi2 refuses them
    y = (X[:, 0] > 0).astype(int)
    data = tmp_path / "signed.csv"
    pd.DataFrame(X, columns=[f"g{i}" for i in range(4)]).assign(label=y).to_csv(data, index=False)
    out = tmp_path / "study"
    base = ["evaluate", "--input", str(data), "--format", "csv", "--master", "local[2]", "--classifiers", "nb",
            "--num-features", "1,2", "--cv", "2", "--output", str(out)]
    capsys.readouterr()
    assert main([*base, "--methods", "lfs,chi2"]) == 2
    error = capsys.readouterr().err
    assert "chi2: UnivariateTestSelector test='chi2' needs non-negative features" in error
    assert f"{out} keeps the results done so far: run the same command without chi2" in error
    kept = sorted(p.name for p in (out / "folds" / "lfs").iterdir())
    assert kept == ["repeat-000-fold-000.npz"] and not (out / "folds" / "chi2").exists()
    before = (out / "folds" / "lfs" / kept[0]).read_bytes()
    assert main([*base, "--methods", "lfs"]) == 0
    assert "(method, fold) pairs fitted now: 1;" in capsys.readouterr().out
    assert (out / "folds" / "lfs" / kept[0]).read_bytes() == before
    study = json.loads((out / "study.json").read_text())
    assert study["methods"] == ["lfs"] and study["description"]["command"].endswith("--methods lfs")
