"""``--input-table`` on every command that reads data (select, apply, evaluate, stability): one flag and one
check, so a table given with a file input or a ``--format`` is refused the same way by each, with exit 2
before Spark starts (the table itself is resolved against the catalog once the session exists:
tests/catalog/test_input_table.py)."""

import pytest

from sparkfs.cli import main
from tests.helpers import refused

COMMANDS = {
    "select": ["select", "--method", "anova", "--num-features", "2"],
    "apply": ["apply", "--model", "MODEL"],
    "evaluate": ["evaluate", "--methods", "anova", "--classifiers", "nb", "--num-features", "2"],
    "stability": ["stability", "--method", "anova", "--runs", "2", "--num-features", "2"],
}


@pytest.fixture()
def no_spark(monkeypatch):
    import sparkfs.spark.session

    monkeypatch.setattr(sparkfs.spark.session, "get_spark", lambda *a, **k: pytest.fail("Spark started"))


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("extra, fragment", [
    (["--format", "parquet"], "--format parquet is a file's format; --input-table db.docs reads the table as the "
                              "catalog stores it"),
    (["--input", "x.parquet"], "give either an input file (x.parquet) or --input-table (db.docs), not both"),
])
def test_a_table_with_a_file_input_or_a_format_is_refused_before_spark(tmp_path, capsys, no_spark, command, extra,
                                                                       fragment):
    out = tmp_path / "out"
    argv = [str(tmp_path) if value == "MODEL" else value for value in COMMANDS[command]]
    refused(capsys, main([*argv, "--input-table", "db.docs", *extra, "--output", str(out)]), out, fragment)


def test_the_commands_share_one_input_table_flag():
    from sparkfs.cli import build_parser

    parser = build_parser()
    helps = set()
    for command in COMMANDS:
        actions = {action.dest: action for action in parser._subparsers._group_actions[0].choices[command]._actions}
        helps.add(actions["input_table"].help)
    assert len(helps) == 1
