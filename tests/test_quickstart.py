"""The README's quickstart runs as it is written.

The commands come from the README itself, from its code blocks between the ``quickstart`` section markers, so
a change to the README that stops them working fails here:

- ``make demo``: not run (it installs a virtual environment); what it writes is checked against the Makefile and
  ``conf/demo.yaml``, and the dataset writer it calls makes the data of the next step.
- the ``sparkfs select`` line: run as a child process from the repository root, on the data the Makefile's demo
  recipe writes with the same command. One change: its ``--output`` value is replaced by a temporary directory,
  so that the test writes nothing under ``output/``; the directory the README names is checked separately.
- the Python snippet: run in this process (no JVM: the fast tier), its printout checked against what the README
  says it shows.

The documentation site's home page includes the same section (``docs/index.md``, pymdownx.snippets); the last
test renders it and finds the same commands.
"""

import html
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SECTION = re.compile(r"--8<-- \[start:quickstart\][^\n]*\n(?P<body>.*?)\n[^\n]*--8<-- \[end:quickstart\]", re.S)
CODE_BLOCK = re.compile(r"^```(?P<language>\w+)\n(?P<code>.*?)^```$", re.M | re.S)


def quickstart_text():
    """The README's quickstart section: the text between its two snippet markers."""
    found = SECTION.search(README.read_text(encoding="utf-8"))
    assert found, "README.md has no quickstart section (<!-- --8<-- [start:quickstart] --> ... [end:quickstart])"
    return found.group("body")


def quickstart_blocks():
    """The section's code blocks in order, as (language, code)."""
    return [(block["language"], block["code"].strip()) for block in CODE_BLOCK.finditer(quickstart_text())]


def select_command():
    """The quickstart's ``sparkfs select`` line, split as a shell would."""
    return shlex.split(quickstart_blocks()[1][1])


def option(argv, name):
    return argv[argv.index(name) + 1]


def demo_recipe():
    """The lines of the Makefile's ``demo`` recipe."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = re.search(r"^demo:[^\n]*\n(?P<lines>(?:\t[^\n]*\n)+)", makefile, re.M)
    assert recipe, "the Makefile has no demo target"
    return [line.strip() for line in recipe["lines"].splitlines()]


def dataset_writer():
    """The demo recipe's line that writes the bundled data, with ``$(PY)`` as this interpreter."""
    lines = [line for line in demo_recipe() if "sparkfs.io.datasets" in line]
    assert len(lines) == 1, demo_recipe()
    argv = shlex.split(lines[0])
    assert argv[0] == "$(PY)", lines[0]
    return [sys.executable, *argv[1:]]


def test_the_quickstart_is_make_demo_then_one_select_then_python():
    blocks = quickstart_blocks()
    assert [language for language, _ in blocks] == ["bash", "bash", "python"]
    assert blocks[0][1] == "make demo"
    assert "\n" not in blocks[1][1] and blocks[1][1].startswith(".venv/bin/sparkfs select ")


def test_the_select_command_reads_what_make_demo_writes():
    demo_data = dataset_writer()[-1]
    assert option(select_command(), "--input") == demo_data
    demo = yaml.safe_load((ROOT / "conf" / "demo.yaml").read_text(encoding="utf-8"))
    assert any("conf/demo.yaml" in line for line in demo_recipe())
    assert demo["input"]["path"] == demo_data
    text = quickstart_text()
    assert f"`{demo_data}`" in text and f"`{demo['output']['path']}/`" in text   # where the README says it writes
    output = option(select_command(), "--output")
    assert f"`{output}/features.parquet`" in text and f"`{output}/summary.json`" in text


def test_the_scikit_learn_snippet_runs_as_written(capsys):
    language, snippet = quickstart_blocks()[2]
    exec(compile(snippet, "README.md (quickstart)", "exec"), {"__name__": "__quickstart__"})
    printed = capsys.readouterr().out
    accuracies = dict(re.findall(r"^(\d+) of 64 pixels: accuracy ([0-9.]+)$", printed, re.M))
    assert list(accuracies) == ["20", "64"], printed
    # What the README says it shows: naive Bayes does better on ReliefF's 20 pixels than on all 64.
    assert float(accuracies["20"]) > float(accuracies["64"]), printed


@pytest.mark.spark
def test_the_select_command_runs_as_written(tmp_path):
    written = subprocess.run(dataset_writer(), cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert written.returncode == 0, written.stderr[-2000:]
    argv = select_command()
    if not (ROOT / argv[0]).exists():
        pytest.skip(f"{argv[0]} is not installed (make demo or make test installs it)")
    # The one change to the printed command: the output goes to a temporary directory.
    output = tmp_path / "quickstart"
    argv[argv.index("--output") + 1] = str(output)
    run = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "rows=1797 features=64 classes=10 selected=10" in run.stdout, run.stdout
    assert len(re.findall(r"^  f\d+ ", run.stdout, re.M)) == 10, run.stdout   # the 10 pixels, printed
    assert (output / "features.parquet").is_file() and (output / "summary.json").is_file()


def test_the_home_page_includes_the_readme_quickstart():
    markdown = pytest.importorskip("markdown")
    pytest.importorskip("pymdownx")
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert '--8<-- "README.md:quickstart"' in index
    extensions = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["markdown_extensions"]
    snippets = next(entry["pymdownx.snippets"] for entry in extensions if "pymdownx.snippets" in entry)
    config = {**snippets, "base_path": [str(ROOT / path) for path in snippets["base_path"]]}
    rendered = markdown.markdown(index, extensions=["pymdownx.snippets", "pymdownx.superfences"],
                                 extension_configs={"pymdownx.snippets": config})
    page = html.unescape(re.sub(r"<[^>]+>", "", rendered))   # the text, without the highlighter's spans
    for _, code in quickstart_blocks():
        for line in code.splitlines():
            assert line in page, line
    assert "--8<--" not in page
