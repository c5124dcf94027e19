"""The ``deterministic`` Param: off by default (no canonical layout, the fastest
statistics engine; results equal across partitionings to rounding), the summary says which mode
ran, and a contradictory ``statsEngine`` is refused through the command line before Spark starts.
The bit-for-bit checks of the deterministic mode are in test_partition_property.py,
test_file_layout_determinism.py, test_common.py, test_chi2.py and test_svm_rfe_selector.py."""

import json

import numpy as np
import pytest

pytest.importorskip("pyspark")

from sparkfs.cli import main
from sparkfs.methods import build_selector
from tests.helpers import make_df, refused


def _data():
    rng = np.random.default_rng(22)
    y = np.arange(120) % 3
    X = np.abs(rng.normal(size=(120, 6))) * [1.0, 1e3, 1e-3, 1.0, 5.0, 1.0] + np.outer(y, [0.5, 300.0, 0, 0.1, 0, 2.0])
    return X, y.astype(float)


def test_default_is_off_and_agrees_across_partitionings_to_rounding(spark):
    X, y = _data()
    frames = [make_df(spark, X, y, partitions=partitions).cache() for partitions in (1, 3)]
    try:
        for method, params in (("lfs", {}), ("anova", {}), ("chi2", {}), ("relieff", {"k": 2, "sampleSize": 20})):
            fits = [build_selector(method, params).setNumFeatures(2).fit(frame) for frame in frames]
            np.testing.assert_allclose(fits[1].scores, fits[0].scores, rtol=1e-9, atol=0, err_msg=method)
            assert fits[0].selectedFeatures == fits[1].selectedFeatures, method
            for model in fits:
                assert model.summary["deterministic"] is False, method
                if method != "relieff":  # statsEngine "auto" without determinism, dense rows: Spark's Summarizer
                    assert model.summary["stats_engine"] == "jvm", method
        exact = build_selector("lfs", {"deterministic": True}).setNumFeatures(2).fit(frames[1])
        assert exact.summary["deterministic"] is True and exact.summary["stats_engine"] == "arrow"
        explicit = build_selector("anova", {"statsEngine": "arrow"}).setNumFeatures(2).fit(frames[1])
        assert explicit.summary["deterministic"] is False and explicit.summary["stats_engine"] == "arrow"
    finally:
        for frame in frames:
            frame.unpersist()


def test_cli_refuses_deterministic_with_the_jvm_engine_before_spark_starts(tmp_path, capsys, monkeypatch):
    import sparkfs.spark.session as session

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark started before the refusal")

    monkeypatch.setattr(session, "get_spark", no_spark)
    data = tmp_path / "in.libsvm"
    data.write_text("0 1:1.0\n1 2:1.0\n")
    out = tmp_path / "out"
    code = main(["select", "--input", str(data), "--output", str(out), "--method", "anova", "--deterministic",
                 "--param", "statsEngine=jvm"])
    refused(capsys, code, out, "deterministic=true", "statsEngine='jvm'", "UnivariateTestSelector")
    code = main(["select", "--input", str(data), "--output", str(out), "--method", "lfs", "--deterministic",
                 "--param", "statsEngine=float"])
    refused(capsys, code, out, "deterministic=true", "statsEngine='float'", "partition order")
    job = tmp_path / "job.yaml"
    job.write_text(f"input: {{path: {data}}}\nmethod: lfs\ndeterministic: yes please\noutput: {{path: {out}}}\n")
    refused(capsys, main(["select", "--config", str(job)]), out, "deterministic", "true or false")


def test_cli_flag_and_config_key_reach_the_summary(spark, tmp_path):
    data = tmp_path / "in.libsvm"
    data.write_text("".join(f"{i % 2} 1:{1 + i % 2 + 0.01 * i} 2:{0.5 + 0.02 * i}\n" for i in range(20)))
    runs = {"flag": ["--deterministic"], "default": []}
    for name, extra in runs.items():
        out = tmp_path / name
        assert main(["select", "--input", str(data), "--output", str(out), "--method", "lfs", "--num-features", "1",
                     *extra]) == 0
        summary = json.loads((out / "summary.json").read_text())
        assert summary["deterministic"] is (name == "flag")
        assert summary["stats_engine"] == ("arrow" if name == "flag" else "float")  # LIBSVM rows are sparse
    job = tmp_path / "job.yaml"
    job.write_text(f"input: {{path: {data}}}\nmethod: anova\ndeterministic: true\noutput: "
                   f"{{path: {tmp_path / 'cfg'}}}\n"
                   "selection: {num_features: 1}\n")
    assert main(["select", "--config", str(job)]) == 0
    summary = json.loads((tmp_path / "cfg" / "summary.json").read_text())
    assert summary["deterministic"] is True and summary["params"]["deterministic"] is True
