"""`sparkfs methods` quotes quality figures only from the files the benchmarks write (sparkfs/figures),
naming the corpus of each figure; nothing measured is written by hand in the code."""

import json
import re
from pathlib import Path

import pytest

from sparkfs import figures
from sparkfs.cli import main
from sparkfs.methods import METHODS

ROOT = Path(__file__).resolve().parents[1]


def _row(method, structure, found, seed=7, outcome="finished", size="XS"):
    row = {"method": method, "structure": structure, "size": size, "seed": seed, "outcome": outcome,
           "date": "2026-11-28", "wall_s": 1.0, "corpus": f"{structure}/{size}/seed {seed}"}
    if outcome == "finished":
        row.update(informative_in_top=found, chance=50.0, top=1000)
    return row


@pytest.fixture
def results_file(tmp_path):
    rows = [_row("relieff", "shared", 100), _row("relieff", "shared", 120, seed=8), _row("relieff", "exclusive", 900),
            _row("anova", "shared", 990), _row("anova", "exclusive", 1000),
            _row("mrmr", "shared", 0, outcome="stopped after 600 s"),
            _row("relieff", "shared", 5, size="tiny")]
    path = tmp_path / "quality_family.json"
    path.write_text(json.dumps({"rows": rows}))
    return path


def test_a_method_gets_its_worst_and_best_structure_and_what_to_use_instead(results_file):
    lines = figures.quality_summary("relieff", results_file)
    assert lines[0] == ("worst structure of the 2 structures: 'shared' (20,000 x 10,000, seeds 7, 8, 2026-11-28): "
                        "110 of its top 1,000 informative (chance 50)")
    assert lines[1].startswith("best structure 'exclusive'") and "900 of its top 1,000" in lines[1]
    assert lines[2] == "on 'shared' use anova instead (990 of 1,000)"
    unfinished = figures.quality_summary("mrmr", results_file)
    assert unfinished[0].endswith(": stopped after 600 s") and "use anova instead" in unfinished[-1]
    assert figures.quality_summary("lmba", results_file) == [
        "not measured on the term corpus family (benchmarks/quality_family.py)"]
    ranked = figures.best_worst_case(results_file)
    assert [result.method for result in ranked] == ["anova", "relieff", "mrmr"]
    assert [result.method for result in figures.best_worst_case(results_file, complete=True)] == ["anova", "relieff"]


def test_a_worst_case_over_fewer_structures_says_how_many(results_file, tmp_path):
    """A method measured on some structures of the family says its worst is of those only, and the
    ranking of worst cases leaves it out (a worst over fewer structures is not comparable)."""
    rows = json.loads(results_file.read_text())["rows"] + [_row("anova", "weak", 800), _row("relieff", "weak", 70)]
    path = tmp_path / "more.json"
    path.write_text(json.dumps({"rows": rows}))
    assert figures.quality_summary("mrmr", path)[0].startswith("worst structure of the 1 structure measured (of 3): ")
    assert figures.quality_summary("relieff", path)[0].startswith("worst structure of the 3 structures: 'weak'")
    assert [result.method for result in figures.best_worst_case(path, complete=True)] == ["anova", "relieff"]


def test_the_methods_command_quotes_the_packaged_file(capsys):
    rows = figures.load_quality_rows()
    for method in sorted(METHODS):
        assert main(["methods", method]) == 0
        said = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  on term matrices: ")]
        mine = [row for row in rows if row["method"] == method]
        if not mine:
            assert said == ["  on term matrices: not measured on the term corpus family (benchmarks/quality_family.py)"]
            continue
        worst = said[0]
        structure = re.search(r"worst structure of the \d+ structures?[^:]*: '(\w+)'", worst).group(1)
        size = max({row["size"] for row in mine}, key=["tiny", "XS", "S", "M"].index)
        here = [row for row in mine if row["structure"] == structure and row["size"] == size]
        if all(row["outcome"] == "finished" for row in here):
            mean = sum(row["informative_in_top"] for row in here) / len(here)
            assert f": {mean:,.0f} of its top 1,000 informative" in worst, (method, worst)
        assert figures.CORPUS_SIZES[size] in worst and all(str(row["seed"]) in worst for row in here)


def test_no_quality_figure_is_written_in_the_code():
    source = (ROOT / "sparkfs" / "methods.py").read_text()
    assert not re.search(r"of its top [0-9,]+ are informative|informative on", source)
    assert "figures/*.json" in (ROOT / "pyproject.toml").read_text()  # the files ship with the package


def test_the_benchmark_replaces_its_own_rows_and_tables_them_by_structure():
    from benchmarks.quality_family import merged, table_lines

    old = [_row("relieff", "shared", 100), _row("anova", "shared", 990)]
    rows = merged(old, [_row("relieff", "shared", 140), _row("relieff", "weak", 0, outcome="stopped after 240 s")])
    assert sorted((row["method"], row["structure"], row.get("informative_in_top")) for row in rows) == [
        ("anova", "shared", 990), ("relieff", "shared", 140), ("relieff", "weak", None)]
    table = "\n".join(table_lines(rows))
    assert "## Size XS, seeds 7" in table
    assert "| relieff | - | 140 (50) | stopped after 240 s | - | - | - | weak |" in table


def test_rows_of_another_setting_are_tabled_apart_and_never_quoted_as_the_default(tmp_path):
    from benchmarks.quality_family import merged, table_lines

    paper = dict(_row("multisurf", "interacting", 130), setting="preset=paper", pair_terms_in_top=86)
    default = dict(_row("multisurf", "interacting", 90), pair_terms_in_top=38)
    rows = merged([default, dict(_row("anova", "interacting", 40), pair_terms_in_top=0)], [paper])
    assert len(rows) == 3  # the setting's row sits beside the default's, not in its place
    table = "\n".join(table_lines(rows))
    assert "| multisurf | - | - | - | - | - | 90 (50); pairs 38 |" in table
    assert "| multisurf (preset=paper) | - | - | - | - | - | 130 (50); pairs 86 |" in table
    path = tmp_path / "quality_family.json"
    path.write_text(json.dumps({"rows": rows}))
    assert [row.get("setting") for row in figures.load_quality_rows(path)] == [None, None]
    assert "90 of its top 1,000" in figures.quality_summary("multisurf", path)[0]


def test_a_tie_on_the_worst_structure_recommends_the_method_that_holds_elsewhere(tmp_path):
    rows = [_row("mrelief", "exclusive", 0), _row("mrelief", "shared", 40),
            _row("variance", "exclusive", 300), _row("variance", "shared", 50),
            _row("anova", "exclusive", 300), _row("anova", "shared", 480)]
    path = tmp_path / "quality_family.json"
    path.write_text(json.dumps({"rows": rows}))
    assert figures.quality_summary("mrelief", path)[-1] == "on 'exclusive' use anova instead (300 of 1,000)"
