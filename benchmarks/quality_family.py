"""Every method's default quality on the corpus family: the only source of the quality figures users see.

For each structure of :mod:`benchmarks.corpus_family`, size and seed, the corpus is written once as
LIBSVM, and each method runs as a user runs it: ``sparkfs select --method M --num-features 1000`` with
nothing else set, in a child process stopped after ``--timeout`` seconds. What its top 1,000 holds of
the corpus's truth (:func:`benchmarks.corpus_family.ranking_quality`: informative terms beside chance's
count, the interacting pairs' terms, the redundant groups' copies) is written, one row per (method,
corpus), to ``sparkfs/figures/quality_family.json`` with the date, sparkfs's version and the wall time;
a rerun replaces its own rows and keeps the others. ``sparkfs methods`` quotes each method's worst and
best structure from that file (:mod:`sparkfs.figures`), naming the corpus; ``benchmarks/results/
quality_family.md`` is the same file as tables.

Seeds: the defaults were chosen on other seeds (``docs/quality.md`` says which); the seeds judged here
are given with ``--seeds``.

    .venv/bin/python -m benchmarks.quality_family --size XS --seeds 101
    .venv/bin/python -m benchmarks.quality_family --size S --seeds 101,102 --methods anova,relieff --timeout 600
    .venv/bin/python -m benchmarks.quality_family --table-only   # rewrite the .md from the JSON
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import RESULTS, ROOT, machine_header
from benchmarks.corpus_family import STRUCTURES, make_corpus, ranking_quality
from benchmarks.term_corpus import write_libsvm
from sparkfs.figures import structure_results, worst_structure

FIGURES = ROOT / "sparkfs" / "figures" / "quality_family.json"
TABLE = RESULTS / "quality_family.md"
TOP = 1000
#: The methods of the table when ``--methods`` is not given: every registered method that takes class labels
#: on term data (chi2-categorical takes integer codes, f-regression a continuous label).
DEFAULT_METHODS = ("anova", "chi2", "lfs", "variance", "relief", "relieff", "mrelief", "prelief", "multisurf",
                   "multisurf-star", "surf", "surf-star", "turf", "lmba", "simba", "mrmr", "cmim", "jmi", "svm-rfe",
                   "parzen-ise", "qfs")


def run_select(method: str, data_path: Path, timeout: float, params: tuple = ()) -> dict:
    """``sparkfs select`` with the defaults (or the ``NAME=VALUE`` params given) in a child process: exit
    code, wall time, the ranking."""
    import pandas as pd

    with tempfile.TemporaryDirectory(prefix="sparkfs_quality_") as scratch:
        output = Path(scratch, "out")
        command = [str(Path(sys.executable).with_name("sparkfs")), "select", "--input", str(data_path), "--format",
                   "libsvm", "--method", method, "--num-features", str(TOP), "--output", str(output), "--quiet"]
        command += [argument for param in params for argument in ("--param", param)]
        environment = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
        started = time.monotonic()
        with open(Path(scratch, "stderr.txt"), "w") as stderr:
            process = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=stderr,
                                       start_new_session=True, cwd=ROOT)
            try:
                code = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                code = None
            finally:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
        wall = time.monotonic() - started
        said = Path(scratch, "stderr.txt").read_text(errors="replace").strip().splitlines()[-2:]
        if code != 0:
            outcome = f"stopped after {timeout:.0f} s" if code is None else f"exit {code}: {' / '.join(said)}"
            return {"outcome": outcome, "wall_s": round(wall, 1)}
        table = pd.read_parquet(output / "features.parquet")
        ranked = table.sort_values("rank", kind="mergesort")["index"].to_numpy()
        return {"outcome": "finished", "wall_s": round(wall, 1), "ranked": ranked}


def load_rows(path: Path = FIGURES) -> list:
    return json.loads(path.read_text())["rows"] if path.exists() else []


def save_rows(rows: list, path: Path = FIGURES) -> None:
    rows = sorted(rows, key=lambda row: (row["method"], row.get("setting", ""), row["size"], row["structure"],
                                         row["seed"]))
    document = {"about": "Written by benchmarks/quality_family.py: each method's default (sparkfs select "
                         f"--num-features {TOP}) on the corpus family of benchmarks/corpus_family.py. Do not edit.",
                "rows": rows}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=1, allow_nan=False) + "\n")


def merged(rows: list, new_rows: list) -> list:
    """``rows`` with each of ``new_rows`` replacing the row of the same method and corpus."""
    key = lambda row: (row["method"], row.get("setting", ""), row["structure"], row["size"], row["seed"])  # noqa: E731
    fresh = {key(row) for row in new_rows}
    return [row for row in rows if key(row) not in fresh] + list(new_rows)


def table_lines(rows: list) -> list:
    """One table per size: a method per row, a structure per column, 'informative found (chance)'
    averaged over the seeds, and the pair terms and group copies where the structure has them."""
    import numpy as np

    lines = ["# Quality on the corpus family", "",
             f"Written by `benchmarks/quality_family.py` from `sparkfs/figures/quality_family.json`: each method's "
             f"default (`sparkfs select --num-features {TOP}`) on the structures of `benchmarks/corpus_family.py`; "
             "a cell is the informative terms in its top 1,000, the mean over the seeds shown, then chance's count; "
             "a method followed by a setting in brackets ran with that setting instead of the default. "
             "`interacting` adds the pairs' terms in the top (a univariate test sees none of them), `redundant` the "
             "members of a group taken per group reached (5 per group; fewer is better). How the defaults were "
             "chosen, and on which seeds: docs/quality.md.", ""]
    for size in sorted({row["size"] for row in rows}):
        at_size = [row for row in rows if row["size"] == size]
        seeds = sorted({row["seed"] for row in at_size})
        dates = sorted({row["date"] for row in at_size})
        lines += [f"## Size {size}, seeds {', '.join(map(str, seeds))} (measured {dates[0]} to {dates[-1]})", "",
                  "| method | " + " | ".join(STRUCTURES) + " | worst | wall s (median) |",
                  "|---" * (len(STRUCTURES) + 3) + "|"]
        for method, setting in sorted({(row["method"], row.get("setting", "")) for row in at_size}):
            mine = [row for row in at_size if row["method"] == method and row.get("setting", "") == setting]
            results = {result.structure: result for result in structure_results(mine, method)}
            cells = []
            for structure in STRUCTURES:
                result = results.get(structure)
                if result is None:
                    cells.append("-")
                    continue
                if result.found is None:
                    cells.append(result.outcome[:40])
                    continue
                done = [row for row in mine if row["structure"] == structure]
                cell = f"{result.found:.0f} ({result.chance:.0f})"
                if structure == "interacting":
                    cell += f"; pairs {np.mean([row['pair_terms_in_top'] for row in done]):.0f}"
                if structure == "redundant":
                    cell += f"; {np.mean([row['copies_per_group'] for row in done]):.1f}/group"
                cells.append(cell)
            worst = worst_structure(list(results.values())) if results else None
            walls = [row["wall_s"] for row in mine]
            label = f"{method} ({setting})" if setting else method
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {worst.structure if worst else '-'} | "
                         f"{float(np.median(walls)):.0f} |")
        lines.append("")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="XS")
    parser.add_argument("--seeds", default="101")
    parser.add_argument("--structures", default=",".join(STRUCTURES))
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS))
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--workdir", default="/tmp/sparkfs_quality")
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting other than the default, passed to every run and recorded in its rows "
                             "(a row per method, setting and corpus; sparkfs methods quotes the defaults' rows only)")
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args()
    if not args.table_only:
        from sparkfs import __version__

        workdir = Path(args.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        print(machine_header(load_average=True), flush=True)
        corpora = {}
        for seed in map(int, args.seeds.split(",")):
            for structure in args.structures.split(","):
                corpus = make_corpus(structure, args.size, seed)
                data_path = workdir / f"{structure}_{args.size}_{seed}.libsvm"
                write_libsvm(str(data_path), corpus.matrix, corpus.labels)
                corpora[data_path] = corpus
        # Method by method, so that an interrupted run has every structure of the methods it reached.
        for method in args.methods.split(","):
            for data_path, corpus in corpora.items():
                ran = run_select(method, data_path, args.timeout, tuple(args.param))
                setting = {"setting": ",".join(args.param)} if args.param else {}
                row = {"method": method, **setting, "structure": corpus.structure, "size": args.size,
                       "seed": corpus.seed, "corpus": corpus.name, "outcome": ran["outcome"], "wall_s": ran["wall_s"],
                       "date": datetime.date.today().isoformat(), "version": __version__,
                       "load_average": round(os.getloadavg()[0], 1)}
                if "ranked" in ran:
                    row.update({key: value for key, value in ranking_quality(corpus, ran["ranked"], TOP).items()
                                if key not in row})
                print(f"{corpus.name} {method} {row.get('setting', '')}: {row['outcome']} "
                      f"{row.get('informative_in_top', '-')} (chance {row.get('chance', 0):.0f}) "
                      f"pairs {row.get('pair_terms_in_top', '-')} "
                      f"{row['wall_s']} s", flush=True)
                save_rows(merged(load_rows(), [row]))
        for data_path in corpora:
            data_path.unlink()
    TABLE.write_text("\n".join(table_lines(load_rows())) + "\n")


if __name__ == "__main__":
    main()
