"""``sparkfs compare DIR...``: several evaluations, the lowest error per method (the
Fisher-Markov paper's Table II) and Wilcoxon signed-rank tests over data sets (its Table V), as
Markdown and CSV (no Spark)."""

from __future__ import annotations

from typing import Any, Dict

from sparkfs.commands import Command


def add_arguments(commands) -> None:
    compare = commands.add_parser("compare", help="several evaluations: lowest error per method (the Fisher-Markov "
                                  "paper's Table II) and Wilcoxon signed-rank tests over data sets (its Table V)")
    compare.add_argument("directories", nargs="+", help="--output directories of `sparkfs evaluate` (one per data set)")
    compare.add_argument("--reference", default="lfs", help="the method tested against every other one (default lfs)")
    compare.add_argument("--statistic", default="error_mean", choices=["error_mean", "mean_fold_min_error"],
                         help="error at the best k (default), or the mean over folds of each fold's lowest error")
    compare.add_argument("--output", required=True, help="directory for comparison.md, lowest_errors.csv, "
                         "wilcoxon.csv: new or empty, or one sparkfs compare wrote")


def check_output(args) -> str:
    """Refuse an unsafe ``--output`` (rules of :mod:`sparkfs.io.output_safety`); returns the local directory."""
    from sparkfs.io.output_safety import check_study_directory

    return check_study_directory(args.output, "compare", inputs=args.directories)


def run_compare(args) -> Dict[str, Any]:
    """``sparkfs compare DIR...``: the lowest-error table and the Wilcoxon tests, as Markdown and CSV."""
    from pathlib import Path

    from sparkfs.evaluation import comparison
    from sparkfs.evaluation.report import atomic_write_bytes
    from sparkfs.io import strict_json
    from sparkfs.io.output_safety import marker

    output = Path(check_output(args))
    best = comparison.best_errors(args.directories)
    lowest = comparison.lowest_error_table(best, args.statistic)
    tests = comparison.wilcoxon_table(best, args.reference, args.statistic)
    output.mkdir(parents=True, exist_ok=True)
    # The marker first: a directory holding the tables always says which command wrote it.
    about = {**marker("compare"), "directories": [str(d) for d in args.directories], "reference": args.reference,
             "statistic": args.statistic}
    atomic_write_bytes(output / "comparison.json", strict_json.dumps(about, indent=2).encode())
    text = (f"# Lowest error (%) per data set, classifier and method ({args.statistic})\n\n"
            + comparison.markdown_table(lowest, bold_lowest=True)
            + f"\n\n# Wilcoxon signed-rank tests of {args.reference} against each method over the "
            f"{len(lowest)} (data set, classifier) cells\n\n" + comparison.markdown_table(tests, digits=4) + "\n")
    written = [atomic_write_bytes(output / "lowest_errors.csv", lowest.to_csv(index=False).encode()),
               atomic_write_bytes(output / "wilcoxon.csv", tests.to_csv(index=False).encode()),
               atomic_write_bytes(output / "comparison.md", text.encode())]
    return {"written": [str(path) for path in written], "text": text}


def run(args) -> int:
    compared = run_compare(args)
    print(compared["text"] + "written: " + ", ".join(compared["written"]))
    return 0


COMMAND = Command(add_arguments, run)
