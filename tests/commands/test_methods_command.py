"""`sparkfs methods` lists every method evaluate and select accept, with what each needs;
`sparkfs methods NAME` lists its params from the declarations the selector validates with."""

import pytest

from sparkfs.cli import main
from sparkfs.evaluation.baselines import BASELINE_METHODS
from sparkfs.methods import COLUMN_AND_SELECTION_PARAMS, EVALUATE_ONLY, METHOD_FACTS, METHODS, build_selector


def test_the_table_lists_every_method_with_what_it_needs(capsys):
    assert set(METHOD_FACTS) == set(METHODS) and set(EVALUATE_ONLY) == set(BASELINE_METHODS)
    assert main(["methods"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = {line.split()[0]: line.split()[1:4] for line in lines[1:] if line.split() and "`" not in line}
    assert set(listed) == set(METHODS) | set(BASELINE_METHODS)
    assert listed["parzen-ise"][0] == "optional" and listed["lfs"][:2] == ["required", "yes"]
    assert listed["anova"][1] == "yes" and listed["chi2-categorical"][1] == "no" and listed["random"][2] == "-"
    assert listed["f-regression"][0] == "continuous" and listed["multisurf"][0] == listed["turf"][0] == "either"


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_lists_its_params_with_defaults_and_allowed_values(capsys, method):
    assert main(["methods", method]) == 0
    out = capsys.readouterr().out
    selector = build_selector(method, {})
    settable = [p for p in selector.params if p.name not in COLUMN_AND_SELECTION_PARAMS
                and p.name not in METHODS[method][1]]
    for param in settable:
        assert f"  {param.name} (default " in out and param.doc in out
    constraints = selector._all_constraints()
    for name, (_, allowed) in constraints.items():
        if any(p.name == name for p in settable):
            assert allowed in out
    modes = "{num-top-features,percentile,fpr,fdr,fwe}" if selector.hasPValues() else "{num-top-features,percentile}"
    assert f"  --selection-mode {modes} --selection-threshold X" in out


def test_the_selection_modes_a_method_takes_are_listed(capsys):
    assert main(["methods", "chi2"]) == 0
    out = capsys.readouterr().out.split("selection (flags")[1]
    assert "fdr: Benjamini-Hochberg: false discovery rate X (alpha in (0, 1], default 0.05)" in out
    assert "percentile: the top floor(p x X) of the p features by score (X in (0, 1], default 0.1)" in out
    assert main(["methods", "svm-rfe"]) == 0
    out = capsys.readouterr().out.split("selection (flags")[1]
    assert "fdr:" not in out
    assert "(fpr, fdr, fwe need p-values: methods anova, chi2, chi2-categorical, f-regression)" in out


def test_relieff_params_show_the_values_they_take(capsys):
    assert main(["methods", "relieff"]) == 0
    out = capsys.readouterr().out
    assert "k (default 10; an int in the range [1, inf))" in out
    assert "metric (default 'euclidean'; a str among {'euclidean', 'manhattan', 'cosine'})" in out
    assert "With preset='default' and neither metric nor scaling set, 'cosine' on term-like data" in out
    assert "on term-like data (no negative value, at most 10% non-zero) metric='cosine'" in out
    assert "variant" not in out.split("params")[1]  # fixed by the method name


def test_lmba_and_simba_show_their_loop_and_the_paper_preset(capsys):
    assert main(["methods", "lmba"]) == 0
    lmba = capsys.readouterr().out
    assert "preset (default 'default'; a str among {'default', 'paper'})" in lmba
    assert "Here: 'default' is sparkfs's loop" in lmba
    assert "'paper' (the papers' run: schedule='constant', stepSize=1, passes=1, batchSize=1" in lmba
    assert "passes (default 3; an int in the range [1, 100])" in lmba and "schedule (default 'decay';" in lmba
    assert "batchSize (default 8;" in lmba and "averaging (default 'none'; a str among {'none', 'iterates'})" in lmba
    assert main(["methods", "simba"]) == 0
    simba = capsys.readouterr().out
    assert "schedule (default 'constant';" in simba and "batchSize (default None;" in simba
    assert "unset (Simba's default) = ceil(pool / 16)" in simba and "batchRule (default 'replay';" in simba


def test_an_unknown_method_is_refused_with_the_names(capsys):
    assert main(["methods", "relief-f"]) == 2
    err = capsys.readouterr().err
    assert "unknown method 'relief-f'" in err and "relieff" in err and "mutual-info" in err


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_says_what_it_does_on_term_matrices(capsys, method):
    """`sparkfs methods NAME` says what the method's default did on the term corpus family, from the
    benchmark's file (tests/test_figures.py checks the figures), or that it was not measured; the
    table names the methods whose worst structure is best."""
    assert main(["methods", method]) == 0
    said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  on term matrices: ")]
    assert said and (said[0].startswith("  on term matrices: worst structure of the ") or "not measured" in said[0])
    assert main(["methods"]) == 0
    assert "On term matrices" in capsys.readouterr().out


def test_a_reader_that_goes_away_gets_no_trace():
    """`sparkfs methods | head -1`: the pipe closes before the listing is written; no Python trace."""
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-m", "sparkfs.cli", "methods", "relieff"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.stdout.close()  # the reader is gone before the child writes
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == 141 and "Traceback" not in err and "BrokenPipe" not in err, err
