"""Every job template in conf/ loads, names a known method with valid params, and runs."""

import json
from pathlib import Path

import pytest

from sparkfs.cli import build_parser, resolve_config, run_select
from sparkfs.io.datasets import write_digits_libsvm
from sparkfs.methods import METHODS, build_selector

CONF = Path(__file__).resolve().parents[2] / "conf"
TEMPLATES = sorted(CONF.glob("*.yaml"))


def test_templates_are_found():
    assert {path.name for path in TEMPLATES} >= {"demo.yaml", "select.yaml", "relieff-text.yaml"}


@pytest.mark.filterwarnings("ignore:numFeatures=.*is larger than the number of features")
@pytest.mark.parametrize("template", TEMPLATES, ids=lambda path: path.name)
def test_template_runs(spark, tmp_path, template):
    data = tmp_path / "digits.libsvm"
    write_digits_libsvm(str(data))
    args = build_parser().parse_args(["select", "--config", str(template), "--input", str(data),
                                      "--format", "libsvm", "--output", str(tmp_path / "out")])
    config = resolve_config(args)
    assert config["method"] in METHODS
    build_selector(config["method"], config.get("params") or {}).validate_params()
    summary = run_select(config, spark=spark)
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert written["method"] == config["method"] and written["n_rows"] == summary["n_rows"] == 1797
    expected = config["selection"]["num_features"]
    assert len(written["selected_indices"]) == min(expected, written["n_features"])
