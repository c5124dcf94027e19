"""Every script in benchmarks/ starts and answers ``--help`` (issue 35): a script whose imports broke
with a change to the package fails here, in the fast tier, not the next time someone measures."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
#: Modules the scripts import, not scripts themselves.
HELPERS = {"_common.py", "term_corpus.py", "parzen_ise_criteria.py"}
SCRIPTS = sorted(path.name for path in BENCHMARKS.glob("*.py") if path.name not in HELPERS)


def test_there_are_scripts_to_check():
    assert len(SCRIPTS) >= 20 and "scale.py" in SCRIPTS


def test_every_script_answers_help():
    """All scripts at once, two at a time (each imports the package, and some pyspark)."""
    running = []
    failures = []
    for name in SCRIPTS:
        running.append((name, subprocess.Popen([sys.executable, str(BENCHMARKS / name), "--help"],
                                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        if len(running) == 2 or name == SCRIPTS[-1]:
            for script, process in running:
                try:
                    out, err = process.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    failures.append(f"{script}: no answer to --help within 60 s (does it parse its arguments?)")
                    continue
                if process.returncode != 0 or "usage:" not in out:
                    failures.append(f"{script}: exit {process.returncode}: {err.strip()[-300:]}")
            running = []
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_script_does_not_start_spark_at_import(name):
    """The scripts run only under ``if __name__ == "__main__"``: importing one does no work."""
    text = (BENCHMARKS / name).read_text(encoding="utf-8")
    assert 'if __name__ == "__main__":' in text, f"{name} has no main guard"
