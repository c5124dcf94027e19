"""Bad files, flags, config keys and params through the CLI: a clear message naming the
problem, exit code 2, nothing written. Listed in docs/bad_input.md."""

import os

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import main


def _select(*args):
    return main(["select", "--master", "local[2]", *args])


@pytest.fixture(scope="module")
def good_parquet(tmp_path_factory):
    folder = tmp_path_factory.mktemp("good")
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(20, 3)), columns=["a", "b", "c"]).assign(label=np.arange(20) % 2)
    frame.to_parquet(folder / "data.parquet")
    return str(folder / "data.parquet")


def _refused(capsys, code, out, *fragments):
    err = capsys.readouterr().err
    assert code == 2, err[-2000:]
    message = next(line for line in err.splitlines() if line.startswith("sparkfs: error: "))
    assert all(fragment in message for fragment in fragments), message
    assert not os.path.exists(out)


def test_missing_and_empty_files(spark, tmp_path, capsys):
    out = str(tmp_path / "out")
    _refused(capsys, _select("--input", str(tmp_path / "nope.csv"), "--format", "csv", "--output", out), out,
             "input path not found", "nope.csv")
    (tmp_path / "empty.libsvm").write_text("")
    _refused(capsys, _select("--input", str(tmp_path / "empty.libsvm"), "--format", "libsvm", "--output", out), out,
             "no rows")
    (tmp_path / "header_only.csv").write_text("a,b,label\n")
    _refused(capsys, _select("--input", str(tmp_path / "header_only.csv"), "--format", "csv", "--output", out), out,
             "no rows")


def test_wrong_format_flag(spark, good_parquet, tmp_path, capsys):
    out = str(tmp_path / "out")
    _refused(capsys, _select("--input", good_parquet, "--format", "libsvm", "--output", out), out, "line 1 of",
             "not LIBSVM")


def test_output_that_exists_and_read_only_output(spark, good_parquet, tmp_path, capsys):
    existing = tmp_path / "existing"
    existing.mkdir()
    assert _select("--input", good_parquet, "--format", "parquet", "--output", str(existing)) == 2
    assert "already exists; pass --overwrite" in capsys.readouterr().err
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    # A directory without write permission (root ignores it), and /proc, which nobody can write.
    read_only = [str(locked / "out")] if not os.access(locked, os.W_OK) else []
    read_only += ["/proc/sparkfs-out"] if os.path.isdir("/proc") else []
    assert read_only, "no read-only place to test on this machine"
    try:
        for out in read_only:
            _refused(capsys, _select("--input", good_parquet, "--format", "parquet", "--output", out), out,
                     "not writable")
    finally:
        locked.chmod(0o700)


@pytest.mark.parametrize("params, fragments", [
    (["--param", "k=0", "--method", "relieff"], ["'k' parameter", "range [1, inf)"]),
    (["--param", "k=three", "--method", "relieff"], ["param 'k'"]),
    (["--param", "gama=1", "--method", "lfs"], ["unknown param 'gama'"]),
    (["--param", "scaling=log", "--method", "lmba"], ["'scaling' parameter", "'none'"]),
    (["--num-features", "0"], ["'numFeatures' parameter"]),
    (["--method", "parzen-ise", "--param", "heldOutFeature=first"], ["'heldOutFeature' parameter"]),
    (["--method", "parzen-ise", "--param", "criterion=joint"],
     ["'criterion' parameter of ParzenISERanker", "'marginal', 'image'", "'joint'"]),
    (["--method", "parzen-ise", "--param", "rankBy=kkt"],
     ["'rankBy' parameter of ParzenISERanker", "'weights', 'multipliers', 'reference'", "'kkt'"]),
])
def test_bad_params_are_named(spark, good_parquet, tmp_path, capsys, params, fragments):
    out = str(tmp_path / "out")
    _refused(capsys, _select("--input", good_parquet, "--format", "parquet", "--output", out, *params), out, *fragments)


@pytest.mark.parametrize("config, fragments", [
    ("inputs: {path: x}\n", ["unknown section(s) ['inputs']"]),
    ("input: {path: x, lable_col: y}\n", ["unknown key(s) ['lable_col'] in section 'input'"]),
    ("output: out\n", ["section 'output'", "must be a mapping"]),
    ("input: [\n", ["not valid YAML"]),
])
def test_bad_config_files(spark, tmp_path, capsys, config, fragments):
    path = tmp_path / "job.yaml"
    path.write_text(config)
    out = str(tmp_path / "out")
    _refused(capsys, _select("--config", str(path), "--output", out), out, *fragments)


@pytest.mark.parametrize("method, flags, fragment", [
    ("chi2-categorical", ["--instance-weighting", "margin"], "--method chi2-categorical does not take instance "
                                                              "weights (weightCol), so --instance-weighting margin"),
    ("relief", ["--weight-col", "w"], "--method relief does not take instance weights (weightCol), so --weight-col w"),
    ("lfs", ["--weight-col", "w", "--instance-weighting", "margin"], "either a weight column or"),
])
def test_instance_weights_a_method_cannot_take_are_refused_before_spark(tmp_path, capsys, method, flags, fragment):
    """Refused before the session starts (the fast tier fails a test that starts a JVM), so before
    the margin weights are computed; nothing is written next to the decoy."""
    source = tmp_path / "in.csv"
    pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "w": 1.0, "label": [0, 1, 0, 1]}).to_csv(source, index=False)
    decoy = tmp_path / "mine"
    decoy.mkdir()
    (decoy / "keep.txt").write_text("not the tool's")
    assert main(["select", "--input", str(source), "--method", method, "--num-features", "1",
                 "--output", str(decoy / "out"), *flags]) == 2
    assert fragment in capsys.readouterr().err
    assert sorted(p.name for p in decoy.iterdir()) == ["keep.txt"]
