"""`--missing` end to end: `select` on a Parquet input with NaN and null feature values and on a CSV with `nan`
cells (flag and config key), `stability` and `evaluate` on the rows the policy leaves; the default refuses as
before."""

import json

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main


@pytest.fixture(scope="module")
def holes(tmp_path_factory):
    """40 rows of 4 features, two classes; NaN in rows 2 and 9, a null (a Parquet null, read as NaN) in row 15."""
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(40, 4)), 3)
    y = np.arange(40) % 2
    X[:, 0] += 2.0 * y
    X[2, 1] = X[9, 3] = np.nan
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"]).assign(label=y)
    frame["c"] = frame["c"].astype(object)
    frame.loc[15, "c"] = None
    frame["c"] = frame["c"].astype("float64")
    folder = tmp_path_factory.mktemp("holes")
    parquet, csv = folder / "holes.parquet", folder / "holes.csv"
    frame.to_parquet(parquet, index=False)
    frame.fillna(np.nan).to_csv(csv, index=False, na_rep="nan")
    return str(parquet), str(csv), X, y


def _select(path, fmt, output, *extra):
    return ["select", "--master", "local[2]", "--input", path, "--format", fmt, "--label-col", "label",
            "--method", "anova", "--num-features", "2", "--output", str(output), *extra]


def test_select_refuses_by_default_and_drops_or_zeroes_when_asked(spark, holes, tmp_path, capsys):
    parquet, csv, X, y = holes
    assert main(_select(parquet, "parquet", tmp_path / "refused")) == 2
    assert "sparkfs: error: 3 row(s) have NaN or infinite feature values" in capsys.readouterr().err
    assert not (tmp_path / "refused").exists()

    assert main(_select(parquet, "parquet", tmp_path / "dropped", "--missing", "drop-rows", "--write-reduced",
                        str(tmp_path / "reduced"))) == 0
    summary = json.loads((tmp_path / "dropped" / "summary.json").read_text())
    assert summary["missing"] == {"policy": "drop-rows", "rows_dropped": 3, "values_set_to_zero": 0}
    assert summary["n_rows"] == 37 and summary["params"]["missing"] == "drop-rows"
    assert len(pd.read_parquet(tmp_path / "reduced")) == 37   # the rows the fit read

    assert main(_select(csv, "csv", tmp_path / "zeroed", "--missing", "zero")) == 0
    summary = json.loads((tmp_path / "zeroed" / "summary.json").read_text())
    assert summary["missing"] == {"policy": "zero", "rows_dropped": 0, "values_set_to_zero": 3}
    assert summary["n_rows"] == 40


@pytest.mark.parametrize("method, policy, counted, count", [("lfs", "drop-rows", "rows_dropped", 3),
                                                             ("variance", "pairwise", "values_left_out", 3)])
def test_the_config_key_sets_the_policy(spark, holes, tmp_path, method, policy, counted, count):
    parquet, _, _, _ = holes
    config = tmp_path / "job.yaml"
    config.write_text(f"input: {{path: {parquet}, format: parquet, label_col: label}}\nmethod: {method}\n"
                      f"missing: {policy}\nselection: {{num_features: 2}}\n")
    assert main(["select", "--config", str(config), "--master", "local[2]", "--output", str(tmp_path / "out")]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["missing"][counted] == count


def test_a_wrong_policy_is_refused_by_argparse(holes, tmp_path, capsys):
    parquet, _, _, _ = holes
    with pytest.raises(SystemExit):
        main(_select(parquet, "parquet", tmp_path / "x", "--missing", "impute"))
    assert "invalid choice: 'impute'" in capsys.readouterr().err


def test_stability_and_evaluate_read_the_rows_the_policy_leaves(spark, holes, tmp_path):
    parquet, _, _, _ = holes
    common = ["--input", parquet, "--format", "parquet", "--label-col", "label", "--master", "local[2]"]
    assert main(["stability", *common, "--method", "anova", "--runs", "2", "--num-features", "1,2",
                 "--missing", "zero", "--output", str(tmp_path / "stability")]) == 0
    plan = json.loads((tmp_path / "stability" / "plan.json").read_text())
    assert plan["description"]["missing"] == {"policy": "zero", "rows_dropped": 0, "values_set_to_zero": 3}
    assert main(["evaluate", *common, "--methods", "anova", "--classifiers", "nb", "--num-features", "1,2",
                 "--cv", "2", "--missing", "drop-rows", "--output", str(tmp_path / "evaluate")]) == 0
    study = json.loads((tmp_path / "evaluate" / "study.json").read_text())
    assert study["description"]["missing"] == {"policy": "drop-rows", "rows_dropped": 3, "values_set_to_zero": 0}
    assert study["description"]["rows"] == 37


def _complete_case_f_values(X, y):
    from scipy.stats import f_oneway

    return np.array([f_oneway(*[X[(y == label) & ~np.isnan(X[:, j]), j] for label in (0, 1)]).statistic
                     for j in range(X.shape[1])])


def test_pairwise_scores_each_feature_on_its_present_rows_by_flag_and_config(spark, holes, tmp_path, capsys):
    parquet, _, X, y = holes
    assert main(_select(parquet, "parquet", tmp_path / "pairwise", "--missing", "pairwise")) == 0
    summary = json.loads((tmp_path / "pairwise" / "summary.json").read_text())
    assert summary["missing"] == {"policy": "pairwise", "rows_dropped": 0, "values_set_to_zero": 0,
                                  "values_left_out": 3, "features_with_missing": 3, "most_missing_in_a_feature": 1}
    assert summary["n_rows"] == 40 and summary["params"]["missing"] == "pairwise"
    X = X.copy()
    X[15, 2] = np.nan
    scores = pd.read_parquet(tmp_path / "pairwise" / "features.parquet").sort_values("index")["score"].to_numpy()
    np.testing.assert_allclose(scores, _complete_case_f_values(X, y), rtol=1e-9)

    assert main(_select(parquet, "parquet", tmp_path / "lfs", "--missing", "pairwise", "--method", "lfs")) == 2
    assert ("missing='pairwise' leaves a NaN out of one feature's statistic only, a rule of the univariate filters "
            "(anova, chi2, variance)") in capsys.readouterr().err
    assert main(_select(parquet, "parquet", tmp_path / "exact", "--missing", "pairwise", "--deterministic")) == 2
    assert "missing='pairwise' counts the present values of every feature in the 'float'" in capsys.readouterr().err
    assert main(_select(parquet, "parquet", tmp_path / "margin", "--missing", "pairwise", "--instance-weighting",
                        "margin")) == 2
    assert "the margin instance weights need complete rows" in capsys.readouterr().err
    with pytest.raises(SystemExit):   # evaluate's classifiers need complete rows: not offered there
        main(["evaluate", "--input", parquet, "--missing", "pairwise", "--output", str(tmp_path / "e")])
    assert "invalid choice: 'pairwise'" in capsys.readouterr().err
