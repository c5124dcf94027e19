"""Every script in benchmarks/ (timings) and studies/ (research) starts and answers ``--help`` when
run as ``python -m <folder>.<script>`` from the repository root: a script whose imports
broke with a change to the package fails here, in the fast tier, not the next time someone measures.
Both folders import through the packages (``benchmarks.common``), not through ``sys.path``."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("benchmarks", "studies")
#: Modules the scripts import, not scripts themselves.
HELPERS = {"benchmarks/__init__.py", "benchmarks/common.py", "benchmarks/term_corpus.py",
           "studies/__init__.py", "studies/parzen_ise_criteria.py"}
SOURCES = sorted(f"{folder}/{path.name}" for folder in FOLDERS for path in (ROOT / folder).glob("*.py"))
SCRIPTS = [source for source in SOURCES if source not in HELPERS]
#: The one deliberate ``sys.path`` change: a child process that imports ANOTHER checkout's sparkfs
#: (the baseline commit's git worktree), which no package import can reach.
OTHER_CHECKOUT = {"benchmarks/bench_pair_engine.py": 1}


def module(source: str) -> str:
    return source[:-len(".py")].replace("/", ".")


def test_there_are_scripts_to_check():
    assert "benchmarks/scale.py" in SCRIPTS and "studies/margin_study.py" in SCRIPTS
    assert sum(source.startswith("benchmarks/") for source in SCRIPTS) >= 10
    assert sum(source.startswith("studies/") for source in SCRIPTS) >= 10
    assert all((ROOT / folder / "__init__.py").is_file() for folder in FOLDERS)


#: One child process runs every script as ``python -m`` would (``runpy.run_module(..., run_name="__main__")``
#: from the repository root) with ``--help``, and prints one JSON line per script: the imports that the
#: scripts share (the package, pyspark, scikit-learn) are paid once, not once per script.
HELP_CHILD = """
import contextlib, io, json, runpy, sys, traceback
for name in sys.argv[1:]:
    out, err, code = io.StringIO(), io.StringIO(), None
    sys.argv = [name, "--help"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module(name, run_name="__main__", alter_sys=True)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = "raised"
    print("HELP " + json.dumps({"script": name, "code": code, "out": out.getvalue()[:2000],
                                "err": err.getvalue()[-600:]}), flush=True)
"""


def test_every_script_answers_help():
    """Every script exits 0 with a usage line on ``--help`` (and so does no work): run in one child."""
    ran = subprocess.run([sys.executable, "-c", HELP_CHILD, *map(module, SCRIPTS)], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    answers = {answer["script"]: answer for answer in
               (json.loads(line[len("HELP "):]) for line in ran.stdout.splitlines() if line.startswith("HELP "))}
    assert ran.returncode == 0 and set(answers) == set(map(module, SCRIPTS)), ran.stdout[-2000:] + ran.stderr[-3000:]
    failures = [f"{name}: exit {answer['code']}: {answer['err'].strip()[-300:]}" for name, answer in answers.items()
                if answer["code"] != 0 or "usage:" not in answer["out"]]
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("source", SCRIPTS)
def test_a_script_does_not_start_spark_at_import(source):
    """The scripts run only under ``if __name__ == "__main__"``: importing one does no work."""
    text = (ROOT / source).read_text(encoding="utf-8")
    assert 'if __name__ == "__main__":' in text, f"{source} has no main guard"


def test_no_sys_path_changes_but_the_other_checkout():
    """Scripts import each other through the packages (``from benchmarks.common import ...``); the
    only ``sys.path`` change is bench_pair_engine's child, which measures another checkout."""
    found = {}
    for source in SOURCES:
        count = len(re.findall(r"sys\.path\s*(?:\.insert|\.append|\.extend|\[|\+?=)", (ROOT / source).read_text()))
        if count:
            found[source] = count
    assert found == OTHER_CHECKOUT


def test_no_import_of_a_sibling_by_its_bare_name():
    """``from common import ...`` or ``from margin_study import ...`` only worked with a path hack."""
    stems = {Path(source).stem for source in SOURCES} | {"_common"}
    pattern = re.compile(r"^\s*(?:from|import)\s+(" + "|".join(sorted(stems)) + r")\b", re.MULTILINE)
    offenders = {source: pattern.findall((ROOT / source).read_text()) for source in SOURCES}
    assert not {source: names for source, names in offenders.items() if names}
