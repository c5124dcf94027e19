"""A selection decided by ties is announced on stderr and recorded in summary.json."""

import json

import numpy as np
import pandas as pd

from sparkfs.cli import main


def _csv(path, columns, labels):
    frame = pd.DataFrame(columns)
    frame["label"] = labels
    frame.to_csv(path, index=False)
    return str(path)


def test_flat_ranking_and_ties_at_the_cut_are_announced(spark, tmp_path, capsys):
    rng = np.random.default_rng(0)
    labels = np.arange(40) % 2
    signal = labels + rng.normal(scale=0.5, size=40)
    flat = _csv(tmp_path / "flat.csv", {f"copy{i}": signal for i in range(4)}, labels)
    assert main(["select", "--input", flat, "--format", "csv", "--method", "anova", "--num-features", "2",
                 "--output", str(tmp_path / "flat-out")]) == 0
    err = capsys.readouterr().err
    assert "every feature has the same score" in err and "not a result" in err
    ties = json.loads((tmp_path / "flat-out" / "summary.json").read_text())["ties"]
    assert ties["flat"] and ties["score_spread"] == 0.0

    noise = rng.normal(size=40)
    tied = _csv(tmp_path / "tied.csv", {"a": signal, "b": signal, "c": signal, "noise": noise}, labels)
    assert main(["select", "--input", tied, "--format", "csv", "--method", "anova", "--num-features", "2",
                 "--output", str(tmp_path / "tied-out")]) == 0
    err = capsys.readouterr().err
    assert "3 features tie at the cut" in err and "2 of them were selected by their position" in err
    ties = json.loads((tmp_path / "tied-out" / "summary.json").read_text())["ties"]
    assert ties["tied_at_cut"] == 3 and ties["selected_of_tied"] == 2 and not ties["flat"]

    assert main(["select", "--input", tied, "--format", "csv", "--method", "anova", "--num-features", "3",
                 "--output", str(tmp_path / "clear-out")]) == 0
    err = capsys.readouterr().err
    assert "tie at the cut" not in err and "same score" not in err and "stage=write status=done" in err


def test_a_default_sample_is_announced_when_it_is_chosen_not_after_the_fit(caplog):
    """The announcement is logged as the method warns, so a fit that then runs for an hour (or is
    stopped) has already said which sample it chose; other warnings pass through unchanged."""
    import logging
    import warnings

    import pytest

    from sparkfs.commands.select import _fit_announcing_ties
    from sparkfs.errors import DefaultSampleWarning

    class StoppedDuringItsPasses:
        def fit(self, frame):
            warnings.warn("ReliefSelector: sampleSize unset, so a default sample of 1000 query rows",
                          DefaultSampleWarning, stacklevel=1)
            warnings.warn("an unrelated warning", UserWarning, stacklevel=1)
            raise KeyboardInterrupt

    logger = logging.getLogger("sparkfs")
    logger.addHandler(caplog.handler)
    try:
        with pytest.warns(UserWarning, match="an unrelated warning"), pytest.raises(KeyboardInterrupt):
            _fit_announcing_ties(StoppedDuringItsPasses(), None)
    finally:
        logger.removeHandler(caplog.handler)
    assert "a default sample of 1000 query rows" in caplog.text
