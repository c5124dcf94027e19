"""``sparkfs report DIR``: rebuild the tables, plots and ``report.html`` of an evaluate directory
from its saved results (no Spark)."""

from __future__ import annotations

from typing import Any, Dict

from sparkfs.commands import Command


def add_arguments(commands) -> None:
    report = commands.add_parser("report", help="rebuild the tables, plots and report.html of an evaluate directory")
    report.add_argument("directory", help="the --output directory of `sparkfs evaluate`")


def run_report(args) -> Dict[str, Any]:
    """``sparkfs report DIR``: tables and plots from the saved results, then report.html."""
    from sparkfs.evaluation.report import build_report
    from sparkfs.evaluation.result_tables import write_results
    from sparkfs.io.output_safety import check_study_directory

    directory = check_study_directory(args.directory, "evaluate", flag="sparkfs report", must_be_own=True)
    written = write_results(directory)
    return {"written": [str(path) for path in written] + [str(build_report(directory))]}


def run(args) -> int:
    print("written: " + ", ".join(run_report(args)["written"]))
    return 0


COMMAND = Command(add_arguments, run)
