"""Every script in benchmarks/ (timings) and studies/ (research) starts and answers ``--help`` when
run as ``python -m <folder>.<script>`` from the repository root: a script whose imports
broke with a change to the package fails here, in the fast tier, not the next time someone measures.
Both folders import through the packages (``benchmarks.common``), not through ``sys.path``."""

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


def test_every_script_answers_help():
    """All scripts at once, two at a time (each imports the package, and some pyspark)."""
    running = []
    failures = []
    for source in SCRIPTS:
        running.append((source, subprocess.Popen([sys.executable, "-m", module(source), "--help"], cwd=ROOT,
                                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        if len(running) == 2 or source == SCRIPTS[-1]:
            for script, process in running:
                try:
                    out, err = process.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.communicate()
                    failures.append(f"{script}: no answer to --help within 60 s (does it parse its arguments?)")
                    continue
                if process.returncode != 0 or "usage:" not in out:
                    failures.append(f"{script}: exit {process.returncode}: {err.strip()[-300:]}")
            running = []
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
