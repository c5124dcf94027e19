"""Config values are typed and checked: wrong types, YAML alias bombs, method params that
do not convert, negative and non-finite numbers on the command line, a threshold that selects nothing.

Every refusal here but the last happens before a Spark session is asked for: ``no_spark`` makes
asking for one fail the test, so these run in milliseconds and need no ``spark`` fixture.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sparkfs.cli import build_parser, join_negative_values, main
from sparkfs.io import config as config_module
from sparkfs.io.readers import FORMATS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_spark(monkeypatch):
    """Fail the test if the command asks for a SparkSession."""
    def refuse(*args, **kwargs):
        pytest.fail("a SparkSession was asked for before the refusal")

    monkeypatch.setattr("sparkfs.spark.session.get_spark", refuse)


def _refused(capsys, argv, out, *fragments):
    started = time.perf_counter()
    assert main(argv) == 2
    assert time.perf_counter() - started < 5
    err = capsys.readouterr().err
    assert "sparkfs: error:" in err
    for fragment in fragments:
        assert fragment in err, err
    assert not Path(out).exists()
    return err


def _job(tmp_path, text):
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return str(path)


BASE = "input: {path: data.libsvm}\n"


@pytest.mark.parametrize("text, fragments", [
    ("output: {overwrite: 'no'}\n", ["output.overwrite in ", "must be true or false, got the string 'no'"]),
    ("output: {overwrite: 1}\n", ["output.overwrite", "must be true or false, got the number 1"]),
    ("input: {path: [a.libsvm, b.libsvm]}\n", ["input.path", "must be a non-empty string (a path or URI), got a list"]),
    ("input: {path: x, format: tsv}\n", ["input.format", "one of 'libsvm', 'parquet', 'csv', got the string 'tsv'"]),
    ("input: {path: x, label_col: {a: 1}}\n", ["input.label_col", "got a mapping"]),
    ("selection: {num_features: ten}\n", ["selection.num_features", "a whole number, got the string 'ten'"]),
    ("selection: {num_features: true}\n", ["selection.num_features", "a whole number, got true"]),
    ("selection: {num_features: 2.5}\n", ["selection.num_features", "a whole number, got the number 2.5"]),
    ("selection: {threshold: .nan}\n", ["selection.threshold", "a finite number, got the number nan"]),
    ("selection: {threshold: '0.5'}\n", ["selection.threshold", "a finite number, got the string '0.5'"]),
    ("method: [lfs]\n", ["method in ", "must be a string (a method name", "got a list"]),
    ("instance_weighting: true\n", ["instance_weighting", "one of 'none', 'margin', got true"]),
    ("params: [gamma]\n", ["params in ", "a mapping of param names to values, got a list"]),
    ("params: {gamma: {a: 1}}\n", ["params.gamma", "got a mapping"]),
    ("params: {gamma: [[1], 2]}\n", ["params.gamma", "(or a list of numbers), got a list"]),
    ("params: {1: 2}\n", ["params in ", "has a key that is not a string: the number 1"]),
    ("spark: {master: 4}\n", ["spark.master", "a non-empty string, got the number 4"]),
    ("spark: {conf: [spark.x]}\n", ["spark.conf in ", "a mapping of Spark settings, got a list"]),
    ("spark: {conf: {spark.executor.memory: [2g]}}\n",
     ["spark.conf.spark.executor.memory", "a string, a number, true or false, got a list"]),
    ("spark: {conf: {executor.memory: 2g}}\n", ["spark.conf.executor.memory", "Spark settings start with 'spark.'"]),
])
def test_config_values_of_the_wrong_type(no_spark, tmp_path, capsys, text, fragments):
    out = tmp_path / "out"
    job = _job(tmp_path, BASE + text if not text.startswith("input") else text)
    err = _refused(capsys, ["select", "--config", job, "--output", str(out)], out, *fragments)
    assert "job.yaml" in err


@pytest.mark.parametrize("params, fragments", [
    ("method: relieff\nparams: {k: ten}\n",
     ["param 'k' of method 'relieff' (ReliefSelector) must be a whole number, got the string 'ten'"]),
    ("params: {gamma: [1, 2]}\n", ["param 'gamma' of method 'lfs'", "Could not convert [1, 2] to float"]),
    ("method: qfs\nparams: {center: 'no'}\n", ["param 'center' of method 'qfs'", "true or false, got the string 'no'"]),
    ("method: relieff\nparams: {k: true}\n", ["param 'k' of method 'relieff'", "a whole number, got true"]),
    ("params: {numFeatures: ten}\n", ["param 'numFeatures' of method 'lfs' is set by the command's own options"]),
    ("params: {gama: 1}\n", ["unknown param 'gama' for method 'lfs': it takes"]),
])
def test_method_params_that_do_not_convert(no_spark, tmp_path, capsys, params, fragments):
    out = tmp_path / "out"
    _refused(capsys, ["select", "--config", _job(tmp_path, BASE + params), "--output", str(out)], out, *fragments)


@pytest.mark.parametrize("flags, fragments", [
    (["--threshold", "-inf"], ["--threshold must be a finite number, got the number -inf"]),
    (["--threshold", "nan"], ["--threshold must be a finite number, got the number nan"]),
    (["--num-features", "-5"], ["'numFeatures' parameter", "Got -5"]),
    (["--threshold", "-1.5e3", "--method", "relieff", "--param", "k=ten"], ["param 'k' of method 'relieff'"]),
    (["--param", "k=[1, [2]]", "--method", "relieff"], ["--param k must be", "got a list"]),
    (["--param", "numFeatures=ten"], ["param 'numFeatures' of method 'lfs' is set by the command's own options"]),
    (["--param", "gamma=[1,"], ["--param gamma: the value is not valid YAML"]),
    (["--conf", "spark.executor.memory=2g", "--method", "lfs", "--param", "gamma=x"], ["param 'gamma'"]),
])
def test_flag_values(no_spark, tmp_path, capsys, flags, fragments):
    out = tmp_path / "out"
    _refused(capsys, ["select", "--input", "data.libsvm", "--output", str(out), *flags], out, *fragments)


@pytest.mark.parametrize("where", ["flow_list", "block_mappings", "whole_file", "param_flag"])
def test_yaml_nested_thousands_deep_is_refused_by_its_line(no_spark, tmp_path, capsys, where):
    """6,000 levels of lists (or 2,000 of indented mappings): YAML's composer recursed once per level
    and the command ended in Python's RecursionError (exit 1); the scanner's tokens count the levels."""
    deep = "[" * 6000 + "]" * 6000
    out = tmp_path / "out"
    if where == "param_flag":
        _refused(capsys, ["select", "--input", "data.libsvm", "--output", str(out), "--param", f"gamma={deep}"], out,
                 "--param gamma: the value nests lists or mappings more than 32 levels deep (at line 1); a param is "
                 "a number, a string, true or false, or a list of numbers")
        return
    text = {"flow_list": BASE + f"params:\n  gamma: {deep}\n",
            "block_mappings": BASE + "params:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(2000)),
            "whole_file": deep + "\n"}[where]
    line = {"flow_list": 3, "block_mappings": 34, "whole_file": 1}[where]
    err = _refused(capsys, ["select", "--config", _job(tmp_path, text), "--output", str(out)], out,
                   f"job.yaml nests lists or mappings more than 32 levels deep (at line {line}); a job config nests "
                   "at most 3")
    assert "RecursionError" not in err and "Traceback" not in err


@pytest.mark.parametrize("key, what", [
    ("spark.pyspark.python", "a program for Spark to start"),
    ("spark.pyspark.driver.python", "a program for Spark to start"),
    ("spark.driver.extraJavaOptions", "Java options of the JVMs"),
    ("spark.executor.extraClassPath", "a class path or library path of the JVMs"),
    ("spark.jars", "a class path or library path"),
    ("spark.jars.packages", "a class path or library path"),
    ("spark.submit.pyFiles", "files shipped to and run or imported by the workers"),
    ("spark.archives", "files shipped"),
    ("spark.executorEnv.LD_PRELOAD", "environment variables of the JVM or the workers"),
    ("spark.driver.resource.gpu.discoveryScript", "a script for Spark to run"),
    ("spark.extraListeners", "classes for Spark to load"),
    ("spark.hadoop.fs.s3a.impl", "classes for Spark to load"),
    ("spark.kubernetes.container.image", "a container image or pod template"),
])
def test_a_config_file_may_not_choose_what_spark_runs(no_spark, tmp_path, capsys, key, what):
    """`spark: {conf: {spark.pyspark.python: evil.sh}}` made `select --config` run the script (exit 0)."""
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {marker}\nexec python3 \"$@\"\n")
    evil.chmod(0o755)
    job = _job(tmp_path, BASE + f"spark:\n  conf:\n    {key}: {evil}\n")
    out = tmp_path / "out"
    _refused(capsys, ["select", "--config", job, "--output", str(out)], out,
             f"spark.conf.{key} in {job} names {what}", "a config file may tune Spark, not choose what it runs",
             f"give it on the command line (--conf {key}=...), to spark-submit, or in spark-defaults.conf")
    assert not marker.exists()


def test_tuning_settings_in_a_config_and_code_settings_on_the_command_line_pass(tmp_path):
    """The person running the command may still choose the workers' Python (docs/cluster.md's recipe)."""
    from sparkfs.commands.select import resolve_config

    job = _job(tmp_path, BASE + "spark:\n  conf:\n    spark.driver.memory: 2g\n    spark.sql.shuffle.partitions: 8\n"
                               "    spark.hadoop.fs.s3a.endpoint: http://minio:9000\n")
    args = build_parser().parse_args(["select", "--config", job, "--output", str(tmp_path / "out"), "--conf",
                                      "spark.pyspark.python=./environment/bin/python", "--conf",
                                      "spark.archives=env.tar.gz#environment"])
    conf = resolve_config(args)["spark"]["conf"]
    assert conf["spark.pyspark.python"] == "./environment/bin/python" and conf["spark.driver.memory"] == "2g"


def test_flags_override_a_checked_file(no_spark, tmp_path, capsys):
    job = _job(tmp_path, BASE + "selection: {threshold: 0.5}\n")
    out = tmp_path / "out"
    _refused(capsys, ["select", "--config", job, "--output", str(out), "--threshold", "-nan"], out,
             "--threshold must be a finite number, got the number nan")


@pytest.mark.parametrize("argv, option, value", [
    (["select", "--threshold", "-inf"], "threshold", -np.inf),
    (["select", "--threshold", "-1.5e3"], "threshold", -1500.0),
    (["select", "--thresh", "-2"], "threshold", -2.0),  # an abbreviation argparse accepts
    (["select", "--num-features", "-5"], "num_features", -5),
    (["instance-weights", "--driver-budget-mb", "-1e3", "--output", "o"], "driver_budget_mb", -1000.0),
    (["stability", "--method", "lfs", "--num-features", "2", "--output", "o", "--runs", "-2"], "runs", -2),
    (["stability", "--method", "lfs", "--num-features", "2", "--output", "o", "--sample-fraction", "-inf"],
     "sample_fraction", -np.inf),
    (["stability", "--method", "lfs", "--num-features", "2", "--output", "o", "--seed", "-1"], "seed", -1),
    (["stability", "--method", "lfs", "--num-features", "2", "--output", "o", "--parallelism", "-1"],
     "parallelism", -1),
    (["evaluate", "--methods", "lfs", "--output", "o", "--cv", "-3"], "cv", -3),
    (["evaluate", "--methods", "lfs", "--output", "o", "--repeats", "-1"], "repeats", -1),
    (["evaluate", "--methods", "lfs", "--output", "o", "--probes", "-1"], "probes", -1),
    (["evaluate", "--methods", "lfs", "--output", "o", "--num-features", "-1"], "num_features", "-1"),
])
def test_negative_and_non_finite_numbers_parse(argv, option, value):
    args = build_parser().parse_args(join_negative_values(argv))
    assert getattr(args, option) == value
    assert join_negative_values(["select", "--", "--threshold", "-1"])[-2:] == ["--threshold", "-1"]


@pytest.mark.parametrize("argv, message", [
    (["instance-weights", "--driver-budget-mb", "-inf"], "--driver-budget-mb must be a number in (0, inf), got -inf"),
    (["stability", "--method", "lfs", "--num-features", "2", "--seed", "-1"],
     "--seed must be a whole number in [0, inf), got -1"),
    (["stability", "--method", "lfs", "--num-features", "2", "--sample-fraction", "nan"],
     "--sample-fraction must be a number in (0, 1), got nan"),
    (["evaluate", "--methods", "lfs", "--cv", "-3"], "--cv must be a whole number in [1, inf), got -3"),
])
def test_numeric_options_of_the_other_commands(no_spark, tmp_path, capsys, argv, message):
    out = tmp_path / "out"
    command, *rest = argv
    _refused(capsys, [command, "--input", "data.libsvm", "--format", "libsvm", "--output", str(out), *rest], out,
             message)


def test_scalar_spark_settings_and_sigma_lists_pass(tmp_path):
    job = _job(tmp_path, BASE + "method: relieff\nparams: {sigma: [0.1, 0.2], k: 3}\nspark: {conf: "
               "{spark.sql.shuffle.partitions: 4, spark.memory.fraction: 0.5, spark.ui.enabled: false}}\n")
    loaded = config_module.load_config(job)
    assert loaded["spark"]["conf"]["spark.sql.shuffle.partitions"] == 4
    assert config_module.SCHEMA["input.format"][0]("csv") and set(config_module._FORMATS) == set(FORMATS)
    nested = {section: value for section, value in config_module.DEFAULTS.items()
              if isinstance(value, dict) and section != "params"}
    keys = {f"{section}.{key}" for section, value in nested.items() for key in value}
    keys |= set(config_module.DEFAULTS) - set(nested)
    # every key of a config file has a type
    # ... and input.feature_names, input.feature_names_from, input.table, output.reduced, output.table, missing,
    # selection.keep, selection.exclude
    assert len(keys) == 33 and keys <= set(config_module.SCHEMA)


def _alias_bomb(levels: int = 9, width: int = 9) -> str:
    """A YAML value of ``width ** (levels + 1)`` strings once expanded, written as one flow list."""
    text = "&a0 [" + ", ".join(["lol"] * width) + "]"
    for level in range(1, levels + 1):
        text = f"&a{level} [{text}, " + ", ".join([f"*a{level - 1}"] * (width - 1)) + "]"
    return text


BOMB_SCRIPT = """
import json, sys, time
from sparkfs.cli import main
times = {}
for name, argv in json.loads(sys.argv[1]).items():
    started = time.perf_counter()
    times[name] = [main(argv), time.perf_counter() - started]
print(json.dumps(times))
"""


def test_yaml_alias_bombs_are_refused_without_expanding(tmp_path):
    """9 levels of 9 aliases (3.5e9 strings expanded) anywhere: exit 2 in milliseconds, in a child
    process whose memory is capped at 2 GiB (expanding would need far more) and that may not
    start a JVM (no JAVA_HOME, no PATH)."""
    bomb = _alias_bomb()
    out = str(tmp_path / "out")
    places = {
        "spark_conf_value": f"spark:\n  conf:\n    spark.executor.memory: {bomb}\n",
        "spark_conf": f"spark:\n  conf: {bomb}\n",
        "param": f"params:\n  gamma: {bomb}\n",
        "params": f"params: {bomb}\n",
        "input_path": f"input:\n  path: {bomb}\n",
        "overwrite": f"output:\n  overwrite: {bomb}\n",
        "method": f"method: {bomb}\n",
        "whole_file": f"{bomb}\n",
    }
    runs = {}
    for name, text in places.items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(text if name in ("whole_file", "input_path") else BASE + text)
        runs[name] = ["select", "--config", str(path), "--output", out]
    runs["param_flag"] = ["select", "--input", "x", "--output", out, "--param", f"gamma={bomb}"]

    def cap_memory():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    environ = {"PYTHONPATH": str(ROOT), "HOME": os.environ.get("HOME", "/tmp"), "PATH": ""}
    finished = subprocess.run([sys.executable, "-c", BOMB_SCRIPT, json.dumps(runs)], capture_output=True, text=True,
                              timeout=60, env=environ, preexec_fn=cap_memory)
    assert finished.returncode == 0, finished.stderr[-2000:]
    times = json.loads(finished.stdout.strip().splitlines()[-1])
    assert set(times) == set(runs)
    for name, (code, seconds) in times.items():
        assert code == 2, (name, finished.stderr[-2000:])
        assert seconds < 2.0, (name, seconds)
    assert finished.stderr.count("sparkfs: error:") == len(runs)
    assert "lol" not in finished.stderr
    assert "spark.conf.spark.executor.memory in " in finished.stderr and "got a list" in finished.stderr
    assert not Path(out).exists()


def test_a_threshold_that_selects_nothing_is_refused(spark, tmp_path, capsys):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    frame["y"] = np.repeat([0, 1], 20)
    frame.loc[frame.y == 1, "b"] += 2.0
    frame.to_parquet(tmp_path / "x.parquet")
    out = tmp_path / "out"
    argv = ["select", "--input", str(tmp_path / "x.parquet"), "--format", "parquet", "--label-col", "y",
            "--method", "anova", "--output", str(out)]
    assert main([*argv, "--threshold", "1e9"]) == 2
    err = capsys.readouterr().err
    assert "threshold 1e+09 selects no feature: the highest score is " in err
    assert "(feature 'b'); give a lower --threshold, or --num-features K" in err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
