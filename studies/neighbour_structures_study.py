"""Why the neighbour methods fall to chance on some term corpora, and what each remedy of the Relief
literature buys there: a NumPy study on the corpus family (benchmarks/corpus_family.py).

ReliefF's weight of term j is the mean over queries of its distance to the nearest misses minus its
distance to the nearest hits. On sparse term rows the question is whether the neighbours carry the
class. The study runs a plain NumPy ReliefF (cosine neighbours on the tf-idf rows, k = 10 per class,
misses weighted by P(c) / (1 - P(y)), |x_qj - x_nj| summed; the definition sparkfs's relieff computes
on term-like data) with each remedy in turn, on the tuning seeds (never the seeds the quality benchmark
judges the defaults on), and counts the informative terms in each top 1,000:

* ``queries-1000``: 1,000 random queries (the default budget);
* ``queries-all``: every row a query (the largest budget there is);
* ``reweighted``: a second pass whose distance weighs each term by the first pass's positive weight
  (I-Relief's and Simba's answer to many irrelevant features);
* ``screened``: neighbours searched on the 2,000 terms of largest ANOVA F only (a cheap first stage
  that drops the terms the class does not move), margins on every term;
* ``f-weighted``: neighbours searched with each term weighed by the square root of its ANOVA F;
* ``t-ranked``: the terms ranked by a t statistic of miss against hit differences instead of the mean
  (a variance-aware ranking, after STIR: Le et al. 2019);
* ``anova``: the univariate baseline.

    .venv/bin/python -m studies.neighbour_structures_study --size XS --seeds 1,2

Writes ``benchmarks/results/neighbour_structures.md`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from benchmarks.common import RESULTS, machine_header
from benchmarks.corpus_family import STRUCTURES, make_corpus, ranking_quality

TOP = 1000
K = 10
APPROACHES = ("anova", "queries-1000", "queries-all", "reweighted", "screened", "f-weighted", "t-ranked")


def unit_rows(rows: sp.csr_matrix) -> sp.csr_matrix:
    norms = np.sqrt(np.asarray(rows.multiply(rows).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sp.csr_matrix(sp.diags(1.0 / norms) @ rows)


def anova_f(matrix: sp.csr_matrix, labels: np.ndarray) -> np.ndarray:
    """One-way ANOVA F of every column (between-class over within-class mean squares)."""
    classes = np.unique(labels)
    indicator = sp.csr_matrix((np.ones(labels.size), (np.searchsorted(classes, labels), np.arange(labels.size))))
    counts = np.asarray(indicator.sum(axis=1)).ravel()
    sums = np.asarray((indicator @ matrix).todense())
    squares = np.asarray(matrix.multiply(matrix).sum(axis=0)).ravel()
    total = sums.sum(axis=0)
    between = (sums ** 2 / counts[:, None]).sum(axis=0) - total ** 2 / labels.size
    within = squares - (sums ** 2 / counts[:, None]).sum(axis=0)
    f = (between / (classes.size - 1)) / np.maximum(within / (labels.size - classes.size), 1e-300)
    return np.where(within > 0, f, 0.0)


def relieff_sums(matrix: sp.csr_matrix, labels: np.ndarray, queries: np.ndarray, search_rows: sp.csr_matrix,
                 block: int = 500):
    """(mean margin per term, t statistic per term): ReliefF with neighbours found by cosine similarity
    on ``search_rows`` and the differences taken on ``matrix``."""
    classes, counts = np.unique(labels, return_counts=True)
    prior = counts / counts.sum()
    members = [np.flatnonzero(labels == label) for label in classes]
    searched = unit_rows(search_rows)
    searched_t = sp.csc_matrix(searched.T)
    num_terms = matrix.shape[1]
    margin = np.zeros(num_terms)
    hit_sum, hit_squares, miss_sum, miss_squares = (np.zeros(num_terms) for _ in range(4))
    hit_count = miss_weight = 0.0
    for start in range(0, queries.size, block):
        batch = queries[start:start + block]
        similarity = (searched[batch] @ searched_t).toarray()
        similarity[np.arange(batch.size), batch] = -np.inf
        query_class = np.searchsorted(classes, labels[batch])
        pair_query, pair_neighbour, pair_weight = [], [], []
        for index, rows in enumerate(members):
            nearest = min(K, rows.size - 1)
            chosen = rows[np.argpartition(-similarity[:, rows], nearest - 1, axis=1)[:, :nearest]]
            weight = np.where(query_class == index, -1.0, prior[index] / (1.0 - prior[query_class])) / nearest
            pair_query.append(np.repeat(batch, nearest))
            pair_neighbour.append(chosen.ravel())
            pair_weight.append(np.repeat(weight, nearest))
        first, second = np.concatenate(pair_query), np.concatenate(pair_neighbour)
        weights = np.concatenate(pair_weight)
        left, right = matrix[first], matrix[second]
        differences = sp.csr_matrix(left + right - 2 * left.minimum(right))
        squared = differences.multiply(differences).tocsr()
        margin += differences.T @ weights
        hits, misses = np.flatnonzero(weights < 0), np.flatnonzero(weights > 0)
        hit_sum += np.asarray(differences[hits].sum(axis=0)).ravel()
        hit_squares += np.asarray(squared[hits].sum(axis=0)).ravel()
        miss_sum += differences[misses].T @ weights[misses]
        miss_squares += squared[misses].T @ weights[misses]
        hit_count += hits.size
        miss_weight += weights[misses].sum()
    hit_mean, miss_mean = hit_sum / hit_count, miss_sum / miss_weight
    hit_var = hit_squares / hit_count - hit_mean ** 2
    miss_var = miss_squares / miss_weight - miss_mean ** 2
    t = (miss_mean - hit_mean) / np.sqrt((hit_var + miss_var) / hit_count + 1e-300)
    return margin / queries.size, t


def ranked(scores: np.ndarray) -> np.ndarray:
    return np.argsort(-np.nan_to_num(scores, nan=-np.inf), kind="mergesort")


def run(structure: str, size: str, seed: int, approaches) -> list:
    corpus = make_corpus(structure, size, seed)
    matrix, labels = corpus.matrix, corpus.labels
    f = anova_f(matrix, labels)
    queries = np.random.default_rng(seed + 1000).choice(labels.size, min(1000, labels.size), replace=False)
    rows = []

    def record(approach, scores, began):
        found = ranking_quality(corpus, ranked(scores), TOP)
        found.update(approach=approach, seconds=round(time.perf_counter() - began, 1))
        rows.append(found)
        print(f"{corpus.name:28s} {approach:13s} {found['informative_in_top']:5d} (chance {found['chance']:.0f})"
              f" pairs {found.get('pair_terms_in_top', '-')} {found['seconds']} s", flush=True)

    for approach in approaches:
        began = time.perf_counter()
        if approach == "anova":
            record(approach, f, began)
        elif approach in ("queries-1000", "t-ranked"):
            margin, t = relieff_sums(matrix, labels, queries, matrix)
            record(approach, t if approach == "t-ranked" else margin, began)
        elif approach == "queries-all":
            record(approach, relieff_sums(matrix, labels, np.arange(labels.size), matrix)[0], began)
        elif approach == "reweighted":
            first, _ = relieff_sums(matrix, labels, queries, matrix)
            weights = np.maximum(first, 0.0) / max(first.max(), 1e-300)
            record(approach, relieff_sums(matrix, labels, queries, sp.csr_matrix(matrix @ sp.diags(weights)))[0],
                   began)
        elif approach == "screened":
            mask = np.zeros(matrix.shape[1])
            mask[ranked(f)[:2000]] = 1.0
            record(approach, relieff_sums(matrix, labels, queries, sp.csr_matrix(matrix @ sp.diags(mask)))[0], began)
        elif approach == "f-weighted":
            scale = np.sqrt(np.maximum(f, 0.0))
            record(approach, relieff_sums(matrix, labels, queries, sp.csr_matrix(matrix @ sp.diags(scale)))[0], began)
    return rows


def table_lines(rows: list, command: str) -> list:
    lines = ["# The neighbour methods' remedies on the corpus family", "", machine_header(load_average=True) + ".",
             f"Made by `{command}` (the rows of earlier runs kept, as the seeds column says); each cell: "
             f"informative terms in the top {TOP:,} (mean over the seeds), "
             "chance's count in brackets; for `interacting` also the pairs' terms (which no univariate test sees). "
             "What the approaches are: the study's docstring (studies/neighbour_structures_study.py).", "",
             "| approach | seeds | " + " | ".join(STRUCTURES) + " |", "|---" * (len(STRUCTURES) + 2) + "|"]
    for approach in APPROACHES:
        cells = []
        for structure in STRUCTURES:
            here = [row for row in rows if row["approach"] == approach and row["structure"] == structure]
            if not here:
                cells.append("-")
                continue
            cell = (f"{np.mean([row['informative_in_top'] for row in here]):.0f} "
                    f"({np.mean([row['chance'] for row in here]):.0f})")
            if structure == "interacting":
                cell += f"; pairs {np.mean([row['pair_terms_in_top'] for row in here]):.0f}"
            cells.append(cell)
        seeds = sorted({row["seed"] for row in rows if row["approach"] == approach})
        lines.append(f"| {approach} | {', '.join(map(str, seeds)) or '-'} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="XS")
    parser.add_argument("--seeds", default="1,2")
    parser.add_argument("--structures", default=",".join(STRUCTURES))
    parser.add_argument("--approaches", default=",".join(a for a in APPROACHES if a != "queries-all"))
    parser.add_argument("--out", default=str(RESULTS / "neighbour_structures.md"))
    args = parser.parse_args()
    out = Path(args.out)
    saved = out.with_suffix(".json")
    rows = json.loads(saved.read_text()) if saved.exists() else []
    for seed in map(int, args.seeds.split(",")):
        for structure in args.structures.split(","):
            fresh = run(structure, args.size, seed, args.approaches.split(","))
            done = {(row["approach"], row["structure"], row["seed"], row["size"]) for row in fresh}
            rows = [row for row in rows if (row["approach"], row["structure"], row["seed"], row["size"]) not in done]
            rows += fresh
            saved.write_text(json.dumps(rows, indent=1, allow_nan=False) + "\n")
    command = "python -m studies.neighbour_structures_study " + " ".join(
        f"--{name} {value}" for name, value in (("size", args.size), ("seeds", args.seeds)))
    out.write_text("\n".join(table_lines(rows, command)) + "\n")


if __name__ == "__main__":
    main()
