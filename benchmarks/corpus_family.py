"""A family of seeded synthetic term corpora with different signal structures, each knowing its truth.

One corpus says little about a method: a neighbour method that finds the informative terms when each
belongs to one class may be at chance when they are shared between classes. So the quality benchmark
(:mod:`benchmarks.quality_family`) runs every method on each of these structures and several seeds, and
every figure it writes names its corpus (structure, size, seed).

Every corpus is documents x terms as tf-idf rows (:func:`benchmarks.term_corpus.tfidf_rows`: raw counts
times the smooth idf, unit L2 rows), 20 classes drawn uniformly, a Zipfian background vocabulary (term
``t`` drawn with probability proportional to ``1 / (t + 2.7)``) and about 100 distinct terms per row.
The structures differ in how the class shows in the tokens:

``exclusive``
    :func:`benchmarks.term_corpus.term_corpus`: a tenth of every document's tokens come from its class's
    own terms (3 % of the vocabulary, each term in one class only, spread over the frequency ranks).
``shared``
    Each informative term (5 % of the vocabulary, at every frequency rank) is 4 times as frequent in
    three classes and 0.3 times as frequent in three others as in the background; no term belongs to
    one class. Topic words in real text behave so.
``weak``
    As ``shared`` with boosts between 1.5 and 2 (and damping by the boost's inverse).
``rare``
    As ``shared``, with every informative term in the rarer half of the vocabulary.
``redundant``
    Groups of 5 near-synonyms: the group's head term carries a ``shared`` class profile, and wherever
    the head occurs each other member of the group joins it with probability 0.8. Every member is
    informative; a good selection keeps few members of each group (``groups`` holds them).
``interacting``
    ``shared`` main effects on 4 % of the vocabulary plus 250 pairs of terms, each pair owned by one
    class: a document draws about 4 pair events; an event picks a pair uniformly, and in the pair's own
    class adds both terms with probability 1/2 (else neither), in any other class adds one of the two at
    random (the pairs' terms occur nowhere else). Each term of a pair is as frequent in every class, so
    no univariate test sees it; the two
    appearing together marks the class (``pairs`` holds them).

Sizes: ``tiny`` (2,000 x 5,000) for tests, ``XS`` (20,000 x 10,000), ``S`` (100,000 x 50,000, about 10 M
non-zeros) and ``M`` (1,000,000 x 100,000). Vectorised NumPy: S takes seconds.

    python -m benchmarks.corpus_family shared S 11 /tmp/shared_s11.libsvm
    from benchmarks.corpus_family import make_corpus; corpus = make_corpus("interacting", "tiny", seed=3)
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.sparse as sp

from benchmarks.term_corpus import informative_terms, term_corpus, tfidf_rows, write_libsvm

STRUCTURES = ("exclusive", "shared", "weak", "rare", "redundant", "interacting")
SIZES = {"tiny": (2_000, 5_000), "XS": (20_000, 10_000), "S": (100_000, 50_000), "M": (1_000_000, 100_000)}
NUM_CLASSES = 20
NONZEROS_PER_ROW = 100.0
#: Tokens drawn per distinct term wanted in a row: repeated tokens of frequent terms merge.
_TOKENS_PER_NONZERO = 1.17
#: Share of the vocabulary that is informative (``shared``, ``weak``, ``rare``, ``redundant``).
INFORMATIVE_SHARE = 0.05
#: Classes where an informative term is boosted, and where it is damped.
BOOSTED_CLASSES, DAMPED_CLASSES = 3, 3
GROUP_SIZE, GROUP_JOIN = 5, 0.8
NUM_PAIRS, PAIR_EVENTS_PER_ROW = 250, 4.0


@dataclass(frozen=True)
class Corpus:
    """A generated corpus and its truth."""

    structure: str
    size: str
    seed: int
    matrix: sp.csr_matrix
    labels: np.ndarray
    #: Every term whose distribution depends on the class (0-based, sorted).
    informative: np.ndarray
    #: ``redundant``: (groups, GROUP_SIZE) term ids of the near-synonym groups.
    groups: Optional[np.ndarray] = None
    #: ``interacting``: (pairs, 2) term ids, and each pair's class.
    pairs: Optional[np.ndarray] = None
    pair_classes: Optional[np.ndarray] = None

    @property
    def name(self) -> str:
        """How every figure names it: ``structure/size/seed N``."""
        return f"{self.structure}/{self.size}/seed {self.seed}"


def zipf_weights(num_terms: int) -> np.ndarray:
    """The background's term probabilities, Mandelbrot's form of Zipf's law."""
    weights = 1.0 / (np.arange(num_terms) + 2.7)
    return weights / weights.sum()


def class_profiles(num_terms: int, informative: np.ndarray, boosts: np.ndarray,
                   rng: np.random.Generator) -> np.ndarray:
    """(classes, terms) multipliers of the background: 1 everywhere but each informative term's
    ``boosts`` in BOOSTED_CLASSES random classes and ``1 / boost`` (``shared``: 0.3) in DAMPED_CLASSES
    others."""
    profiles = np.ones((NUM_CLASSES, num_terms))
    order = np.argsort(rng.random((informative.size, NUM_CLASSES)), axis=1)
    boosted, damped = order[:, :BOOSTED_CLASSES], order[:, BOOSTED_CLASSES:BOOSTED_CLASSES + DAMPED_CLASSES]
    rows = np.repeat(informative, BOOSTED_CLASSES)
    profiles[boosted.ravel(), rows] = np.repeat(boosts, BOOSTED_CLASSES)
    damping = np.where(boosts >= 4.0, 0.3, 1.0 / boosts)
    profiles[damped.ravel(), np.repeat(informative, DAMPED_CLASSES)] = np.repeat(damping, DAMPED_CLASSES)
    return profiles


def draw_tokens(labels: np.ndarray, tokens_per_row: np.ndarray, term_probabilities: np.ndarray,
                rng: np.random.Generator):
    """(row of each token, term of each token): each row's tokens drawn from its class's row of
    ``term_probabilities`` (classes, terms)."""
    row_of_token = np.repeat(np.arange(labels.size, dtype=np.int64), tokens_per_row)
    token_class = labels[row_of_token]
    terms = np.empty(row_of_token.size, dtype=np.int64)
    num_terms = term_probabilities.shape[1]
    for label in range(term_probabilities.shape[0]):
        mine = np.flatnonzero(token_class == label)
        cdf = np.cumsum(term_probabilities[label])
        cdf /= cdf[-1]
        terms[mine] = np.minimum(np.searchsorted(cdf, rng.random(mine.size), side="right"), num_terms - 1)
    return row_of_token, terms


def spread_ranks(count: int, first: int, last: int) -> np.ndarray:
    """``count`` distinct term ids evenly over the frequency ranks ``first..last``."""
    return np.unique(np.linspace(first, last, count).astype(np.int64))


def make_corpus(structure: str, size: str, seed: int = 0) -> Corpus:
    """The corpus of ``structure`` at ``size`` (a name of :data:`SIZES`); same arguments, same corpus."""
    if structure not in STRUCTURES:
        raise ValueError(f"unknown structure {structure!r}; one of {', '.join(STRUCTURES)}")
    num_docs, num_terms = SIZES[size]
    if structure == "exclusive":
        matrix, labels = term_corpus(num_docs, num_terms, num_classes=NUM_CLASSES, seed=seed)
        return Corpus(structure, size, seed, matrix, labels, np.sort(informative_terms(num_terms).ravel()))
    # A seed of its own per structure: seed 1 of 'shared' and of 'weak' are different draws.
    rng = np.random.default_rng([seed, STRUCTURES.index(structure)])
    labels = rng.integers(0, NUM_CLASSES, num_docs).astype(np.int64)
    tokens_per_row = np.maximum(rng.poisson(NONZEROS_PER_ROW * _TOKENS_PER_NONZERO, num_docs), 1)
    num_informative = int(round(INFORMATIVE_SHARE * num_terms))
    groups = pairs = pair_classes = None
    if structure == "redundant":
        num_groups = num_informative // GROUP_SIZE
        heads = spread_ranks(num_groups, 0, num_terms - GROUP_SIZE)
        groups = heads[:, None] + np.arange(GROUP_SIZE)[None, :]
        carriers = heads
    elif structure == "interacting":
        num_main = int(round(0.04 * num_terms))
        pair_terms = spread_ranks(2 * NUM_PAIRS, 1, num_terms - 1)
        pair_terms = rng.permutation(pair_terms)[:2 * NUM_PAIRS]
        pairs = np.sort(pair_terms.reshape(NUM_PAIRS, 2), axis=1)
        pair_classes = np.arange(NUM_PAIRS) % NUM_CLASSES
        taken = np.zeros(num_terms, dtype=bool)
        taken[pair_terms] = True
        candidates = np.flatnonzero(~taken)
        carriers = candidates[spread_ranks(num_main, 0, candidates.size - 1)]
    elif structure == "rare":
        carriers = spread_ranks(num_informative, num_terms // 2, num_terms - 1)
    else:
        carriers = spread_ranks(num_informative, 0, num_terms - 1)
    boosts = rng.uniform(1.5, 2.0, carriers.size) if structure == "weak" else np.full(carriers.size, 4.0)
    term_probabilities = class_profiles(num_terms, carriers, boosts, rng) * zipf_weights(num_terms)[None, :]
    if structure == "interacting":  # a pair's terms come from its events only, not from the background too
        term_probabilities[:, pairs.ravel()] = 0.0
    row_of_token, terms = draw_tokens(labels, tokens_per_row, term_probabilities, rng)
    if structure == "redundant":
        row_of_token, terms = join_synonyms(row_of_token, terms, groups, num_terms, rng)
        informative = np.sort(groups.ravel())
    elif structure == "interacting":
        extra_rows, extra_terms = pair_tokens(labels, pairs, pair_classes, rng)
        row_of_token = np.concatenate([row_of_token, extra_rows])
        terms = np.concatenate([terms, extra_terms])
        informative = np.sort(np.concatenate([carriers, pairs.ravel()]))
    else:
        informative = np.sort(carriers)
    matrix = tfidf_rows(row_of_token, terms, num_docs, num_terms)
    return Corpus(structure, size, seed, matrix, labels, informative, groups, pairs, pair_classes)


def join_synonyms(row_of_token: np.ndarray, terms: np.ndarray, groups: np.ndarray, num_terms: int,
                  rng: np.random.Generator):
    """The tokens with, for every token of a group's head, each other member of the group added with
    probability GROUP_JOIN (to the same row)."""
    group_of_head = np.full(num_terms, -1, dtype=np.int64)
    group_of_head[groups[:, 0]] = np.arange(groups.shape[0])
    head_tokens = np.flatnonzero(group_of_head[terms] >= 0)
    members = groups[group_of_head[terms[head_tokens]], 1:]  # (head tokens, GROUP_SIZE - 1)
    joins = rng.random(members.shape) < GROUP_JOIN
    extra_terms = members[joins]
    extra_rows = np.repeat(row_of_token[head_tokens], GROUP_SIZE - 1).reshape(members.shape)[joins]
    return np.concatenate([row_of_token, extra_rows]), np.concatenate([terms, extra_terms])


def pair_tokens(labels: np.ndarray, pairs: np.ndarray, pair_classes: np.ndarray, rng: np.random.Generator):
    """(rows, terms) of the pair events: about PAIR_EVENTS_PER_ROW per row, each a uniform pair; in the
    pair's own class both terms with probability 1/2 (else none), elsewhere one of the two."""
    events_per_row = rng.poisson(PAIR_EVENTS_PER_ROW, labels.size)
    event_rows = np.repeat(np.arange(labels.size, dtype=np.int64), events_per_row)
    event_pairs = rng.integers(0, pairs.shape[0], event_rows.size)
    own = pair_classes[event_pairs] == labels[event_rows]
    both = own & (rng.random(event_rows.size) < 0.5)
    one = ~own
    which = rng.integers(0, 2, event_rows.size)
    rows = np.concatenate([event_rows[both], event_rows[both], event_rows[one]])
    terms = np.concatenate([pairs[event_pairs[both], 0], pairs[event_pairs[both], 1],
                            pairs[event_pairs[one], which[one]]])
    return rows, terms


# ---- what a ranking found -----------------------------------------------------------------------

def ranking_quality(corpus: Corpus, ranked: np.ndarray, top: int) -> dict:
    """What a method's ranking (feature ids, best first) holds of the truth in its first ``top``:
    informative terms (and chance's count), the interacting pairs' terms, the redundant groups reached
    and the members taken per group reached."""
    chosen = np.asarray(ranked[:top], dtype=np.int64)
    num_terms = corpus.matrix.shape[1]
    found = {"corpus": corpus.name, "structure": corpus.structure, "size": corpus.size, "seed": corpus.seed,
             "top": int(chosen.size), "informative": int(corpus.informative.size),
             "informative_in_top": int(np.isin(chosen, corpus.informative).sum()),
             "chance": chosen.size * corpus.informative.size / num_terms}
    if corpus.pairs is not None:
        pair_terms = corpus.pairs.ravel()
        found["pair_terms"] = int(pair_terms.size)
        found["pair_terms_in_top"] = int(np.isin(chosen, pair_terms).sum())
        found["pair_chance"] = chosen.size * pair_terms.size / num_terms
    if corpus.groups is not None:
        taken = np.isin(corpus.groups, chosen).sum(axis=1)
        reached = taken > 0
        found["groups"] = int(corpus.groups.shape[0])
        found["groups_reached"] = int(reached.sum())
        found["copies_per_group"] = float(taken[reached].mean()) if reached.any() else 0.0
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("structure", choices=STRUCTURES)
    parser.add_argument("size", choices=sorted(SIZES))
    parser.add_argument("seed", type=int)
    parser.add_argument("path", help="LIBSVM file to write")
    args = parser.parse_args()
    started = time.perf_counter()
    corpus = make_corpus(args.structure, args.size, args.seed)
    generated = time.perf_counter()
    write_libsvm(args.path, corpus.matrix, corpus.labels)
    matrix = corpus.matrix
    print(f"{corpus.name}: {matrix.shape[0]:,} x {matrix.shape[1]:,}, {matrix.nnz:,} non-zeros "
          f"({matrix.nnz / matrix.shape[0]:.1f} per row), {corpus.informative.size:,} informative terms, "
          f"generated in {generated - started:.1f} s, written in {time.perf_counter() - generated:.1f} s")


if __name__ == "__main__":
    main()
