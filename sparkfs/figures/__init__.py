"""The measured figures the commands quote, read from the files the benchmarks and studies write.

No figure about a method's quality is written by hand in the code: ``sparkfs methods`` reads them here,
each with the data it was measured on and the date, so a rerun of the benchmark updates what users
see and a stale figure shows its age.

* ``quality_family.json``, written by ``benchmarks/quality_family.py``: each method's default
  (``sparkfs select --num-features 1000``) on the term corpora of ``benchmarks/corpus_family.py``
  (several signal structures, sizes and seeds), the informative terms in its top 1,000 beside chance's.
* ``waveform_noise.json``, written by ``studies/waveform_noise_study.py``: per draw, the noise columns
  in the top 15 of waveform's 21 columns plus 19 Gaussian noise columns (1,000 rows).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

FIGURES = Path(__file__).resolve().parent
QUALITY_FAMILY = FIGURES / "quality_family.json"
WAVEFORM_NOISE = FIGURES / "waveform_noise.json"
#: Rows, features and what they are, of the corpus family's sizes (benchmarks/corpus_family.py).
CORPUS_SIZES = {"tiny": "2,000 x 5,000", "XS": "20,000 x 10,000", "S": "100,000 x 50,000", "M": "1,000,000 x 100,000"}
_SIZE_ORDER = ("tiny", "XS", "S", "M")


@dataclass(frozen=True)
class StructureResult:
    """A method's default on one structure of the family at one size, over the seeds measured."""

    method: str
    structure: str
    size: str
    seeds: tuple
    #: Mean informative terms in the top ``top`` over the seeds, and chance's count; None when a run
    #: did not finish (``outcome`` says how it ended).
    found: Optional[float]
    chance: float
    top: int
    outcome: str
    dates: tuple

    @property
    def times_chance(self) -> float:
        return self.found / self.chance if self.found is not None and self.chance else 0.0

    def describe(self) -> str:
        seeds = ", ".join(map(str, self.seeds))
        plural = "s" if len(self.seeds) > 1 else ""
        where = (f"'{self.structure}' ({CORPUS_SIZES.get(self.size, self.size)}, seed{plural} "
                 f"{seeds}, {self.dates[-1]})")
        if self.found is None:
            return f"{where}: {self.outcome}"
        return f"{where}: {self.found:,.0f} of its top {self.top:,} informative (chance {self.chance:,.0f})"


def load_quality_rows(path: Path = QUALITY_FAMILY) -> List[dict]:
    """The rows of the methods' defaults the quality benchmark wrote (empty when it has not run); rows run
    with another setting (a ``setting`` key, from the benchmark's ``--param``) are the studies' and left out."""
    if not path.exists():
        return []
    return [row for row in json.loads(path.read_text())["rows"] if not row.get("setting")]


def structure_results(rows: List[dict], method: str) -> List[StructureResult]:
    """``method``'s results per structure at the largest size it was measured at."""
    mine = [row for row in rows if row["method"] == method]
    if not mine:
        return []
    size = max((row["size"] for row in mine), key=lambda name: _SIZE_ORDER.index(name) if name in _SIZE_ORDER else -1)
    results = []
    for structure in sorted({row["structure"] for row in mine if row["size"] == size}):
        here = [row for row in mine if row["size"] == size and row["structure"] == structure]
        finished = [row for row in here if row["outcome"] == "finished"]
        unfinished = [row["outcome"] for row in here if row["outcome"] != "finished"]
        found = sum(row["informative_in_top"] for row in finished) / len(finished) if not unfinished else None
        chance = sum(row["chance"] for row in finished) / len(finished) if finished else 0.0
        results.append(StructureResult(method, structure, size, tuple(sorted(row["seed"] for row in here)), found,
                                       chance, here[0].get("top", 1000), unfinished[0] if unfinished else "finished",
                                       tuple(sorted(row["date"] for row in here))))
    return results


def family_structures(rows: List[dict], size: str) -> List[str]:
    """The structures of the family measured at ``size`` by any method: the set a method's worst case is
    taken over when it was measured on all of them."""
    return sorted({row["structure"] for row in rows if row["size"] == size})


def covers_family(results: List[StructureResult], rows: List[dict]) -> bool:
    """Whether a method's results cover every structure of the family at their size."""
    return len(results) >= len(family_structures(rows, results[0].size))


def coverage(results: List[StructureResult], rows: List[dict]) -> str:
    """How many of the family's structures a method's results cover, as the summary says it:
    "of the 6 structures" when all, "of the 2 structures measured (of 6)" otherwise."""
    family = family_structures(rows, results[0].size)
    if covers_family(results, rows):
        return f"of the {len(family)} structures"
    return f"of the {len(results)} structure{'s' if len(results) > 1 else ''} measured (of {len(family)})"


def worst_structure(results: List[StructureResult]) -> StructureResult:
    """The structure a method did worst on: fewest informative terms per chance's count (a run that did
    not finish counts as none), ties to the structure's name."""
    return min(results, key=lambda result: (result.times_chance, result.structure))


def quality_summary(method: str, path: Path = QUALITY_FAMILY) -> List[str]:
    """What ``sparkfs methods NAME`` says of the method's quality on term matrices: its worst and best
    structure of the family, and on its worst, the method that found the most there."""
    rows = load_quality_rows(path)
    results = structure_results(rows, method)
    if not results:
        return ["not measured on the term corpus family (benchmarks/quality_family.py)"]
    worst = worst_structure(results)
    best = max(results, key=lambda result: (result.times_chance, result.structure))
    lines = [f"worst structure {coverage(results, rows)}: {worst.describe()}"]
    if best is not worst:
        lines.append(f"best structure {best.describe()}")
    rivals = [result for other in sorted({row["method"] for row in rows}) if other != method
              for result in structure_results(rows, other)
              if result.structure == worst.structure and result.size == worst.size and result.found is not None]
    # Ties (several methods find every informative term there) go to the method that holds best on its
    # own worst structure, so a tie never recommends a method that fails elsewhere.
    worst_of = {other: worst_structure(structure_results(rows, other)).times_chance
                for other in {result.method for result in rivals}}
    leader = max(rivals, key=lambda result: (result.found, worst_of[result.method], result.method), default=None)
    if leader is not None and (worst.found is None or leader.found > worst.found):
        lines.append(f"on '{worst.structure}' use {leader.method} instead ({leader.found:,.0f} of {leader.top:,})")
    return lines


def best_worst_case(path: Path = QUALITY_FAMILY, complete: bool = False) -> List[StructureResult]:
    """Each measured method's worst structure, best first: the methods that hold on every structure.
    With ``complete``, only the methods measured on every structure of the family at their size (a worst
    case over fewer structures is not comparable)."""
    rows = load_quality_rows(path)
    worst = []
    for method in sorted({row["method"] for row in rows}):
        results = structure_results(rows, method)
        if complete and not covers_family(results, rows):
            continue
        worst.append(worst_structure(results))
    return sorted(worst, key=lambda result: (-result.times_chance, result.method))


def noise_columns(method: str, path: Path = WAVEFORM_NOISE) -> Optional[str]:
    """How often the method's default keeps noise columns out of its top 15 of waveform + 19 noise
    columns, from the study's file; None where the study did not run the method."""
    if not path.exists():
        return None
    draws: Dict[str, List[int]] = json.loads(path.read_text())
    counts = draws.get(f"{method}, raw")
    if not counts:
        return None
    clean = sum(1 for count in counts if count == 0)
    return (f"{clean} of {len(counts)} draws with no noise column in its top 15, {sum(counts) / len(counts):.2f} on "
            "average (waveform21, 1,000 rows + 19 Gaussian noise columns; studies/waveform_noise_study.py)")
