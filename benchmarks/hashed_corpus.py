"""A seeded hashed-vocabulary term corpus: documents x 2^bits hashed ids, most ids never touched.

The shape of ``HashingTF`` output on a large vocabulary: a Zipfian vocabulary of ``vocabulary``
terms (term ``t`` has probability proportional to ``1 / (t + 2.7)``) is hashed into ``2^bits``
ids by a seeded random map (collisions happen, as with a real hash), so a corpus touches a small
share of the ids. Every document belongs to one of ``num_classes`` classes (uniform); a share of
its tokens (``class_share``) comes from its class's own informative terms, ``per_class`` of them
spread over the frequency ranks. The generator knows their ids (:attr:`HashedCorpus.informative_ids`),
so a selection can be checked for them. Counts become tf-idf values (raw counts times scikit-learn's
smooth idf, rows scaled to unit L2 norm, rounded to 6 decimals: the LIBSVM text reads back as the
same doubles).

Sizes: ``W24`` = 100,000 documents x 2^24 ids, about 47 non-zeros per row (4.7 M in all), 20
classes, 400 informative ids; ``tiny`` for tests. Vectorised NumPy; the LIBSVM text is formatted
by pyarrow.

    python -m benchmarks.hashed_corpus W24 /tmp/hashed_work/w24.libsvm
    from benchmarks.hashed_corpus import hashed_corpus; corpus = hashed_corpus(1000, bits=22)
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

#: (documents, bits) of the named sizes.
SIZES = {"tiny": (500, 22), "W24": (100_000, 24)}


@dataclass(frozen=True)
class HashedCorpus:
    """``matrix``: tf-idf rows (documents, 2^bits) CSR float64 with sorted indices; ``labels``:
    (documents,) int64 in 0..C-1; ``informative_ids``: (C, per_class) the hashed ids of each class's
    informative terms (distinct; an id another frequent term also hashes to is kept: that is hashing)."""

    matrix: sp.csr_matrix
    labels: np.ndarray
    informative_ids: np.ndarray

    @property
    def touched_ids(self) -> int:
        """How many ids occur at all."""
        return int(np.unique(self.matrix.indices).size)


def hashed_corpus(num_docs: int, *, bits: int = 24, num_classes: int = 20, vocabulary: int = 2**20,
                  nonzeros_per_row: float = 47.0, per_class: int = 20, class_share: float = 0.1,
                  seed: int = 0) -> HashedCorpus:
    """The corpus of the module notes; the same seed gives the same corpus."""
    rng = np.random.default_rng(seed)
    num_ids = 2**bits
    term_ids = rng.integers(0, num_ids, vocabulary, dtype=np.int64)  # the hash of every term
    labels = rng.integers(0, num_classes, num_docs).astype(np.int64)
    # Tokens drawn per row: a few more than the distinct terms wanted (frequent terms repeat).
    tokens_per_row = np.maximum(rng.poisson(nonzeros_per_row * 1.07, num_docs), 1)
    row_of_token = np.repeat(np.arange(num_docs, dtype=np.int64), tokens_per_row)
    zipf_cdf = np.cumsum(1.0 / (np.arange(vocabulary) + 2.7))
    zipf_cdf /= zipf_cdf[-1]
    terms = np.minimum(np.searchsorted(zipf_cdf, rng.random(row_of_token.size), side="right"), vocabulary - 1)

    class_terms = _informative_terms(term_ids, vocabulary, num_classes, per_class)
    within_cdf = np.cumsum(1.0 / (np.arange(per_class) + 2.7))
    within_cdf /= within_cdf[-1]
    from_class = rng.random(row_of_token.size) < class_share
    picks = np.minimum(np.searchsorted(within_cdf, rng.random(int(from_class.sum())), side="right"), per_class - 1)
    terms[from_class] = class_terms[labels[row_of_token[from_class]], picks]
    matrix = _tfidf_rows(row_of_token, term_ids[terms], num_docs, num_ids)
    return HashedCorpus(matrix, labels, term_ids[class_terms])


def _informative_terms(term_ids: np.ndarray, vocabulary: int, num_classes: int, per_class: int) -> np.ndarray:
    """(C, per_class) terms at evenly spread frequency ranks (so some are frequent, most rare), dealt
    to the classes in turn; a rank whose id another informative term already has is skipped."""
    wanted = num_classes * per_class
    ranks = np.linspace(0, vocabulary - 1, 4 * wanted).astype(np.int64)
    _, first = np.unique(term_ids[ranks], return_index=True)
    distinct = ranks[np.sort(first)]
    chosen = distinct[np.linspace(0, distinct.size - 1, wanted).astype(np.int64)]
    return chosen.reshape(per_class, num_classes).T


def _tfidf_rows(row_of_token: np.ndarray, ids: np.ndarray, num_docs: int, num_ids: int) -> sp.csr_matrix:
    """Raw counts per (row, id) times the smooth idf ``ln((1 + n) / (1 + df)) + 1`` of the touched ids,
    each row scaled to unit L2 norm, values rounded to 6 decimals (at least 1e-6)."""
    counts = sp.csr_matrix((np.ones(ids.size), (row_of_token, ids)), shape=(num_docs, num_ids))
    counts.sum_duplicates()
    counts.sort_indices()
    touched, position = np.unique(counts.indices, return_inverse=True)
    document_frequency = np.bincount(position, minlength=touched.size)
    idf = np.log((1.0 + num_docs) / (1.0 + document_frequency)) + 1.0
    values = counts.data * idf[position]
    row_norms = np.sqrt(np.add.reduceat(values * values, counts.indptr[:-1]))
    values /= np.repeat(row_norms, np.diff(counts.indptr))
    values = np.maximum(np.round(values * 1e6), 1.0) / 1e6
    return sp.csr_matrix((values, counts.indices, counts.indptr), shape=(num_docs, num_ids))


def write_libsvm(path: str, matrix: sp.csr_matrix, labels: np.ndarray) -> None:
    """``label index:value ...`` lines, 1-based indices (Spark's and scikit-learn's convention)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    with open(path, "wb") as handle:
        for start in range(0, matrix.shape[0], 20_000):
            rows = matrix[start:start + 20_000]
            pairs = pc.binary_join_element_wise(pc.cast(pa.array(rows.indices.astype(np.int64) + 1), pa.string()),
                                                pc.cast(pa.array(rows.data), pa.string()), ":")
            features = pc.binary_join(pa.ListArray.from_arrays(pa.array(rows.indptr.astype(np.int32)), pairs), " ")
            lines = pc.binary_join_element_wise(pc.cast(pa.array(labels[start:start + 20_000]), pa.string()),
                                                features, " ")
            handle.write(("\n".join(lines.to_pylist()) + "\n").encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", choices=sorted(SIZES))
    parser.add_argument("path", help="LIBSVM file to write; the informative ids go to PATH.truth.json")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    num_docs, bits = SIZES[args.size]
    corpus = hashed_corpus(num_docs, bits=bits, seed=args.seed)
    generated = time.perf_counter()
    write_libsvm(args.path, corpus.matrix, corpus.labels)
    with open(args.path + ".truth.json", "w") as handle:
        json.dump({"size": args.size, "seed": args.seed, "bits": bits, "rows": num_docs,
                   "non_zeros": int(corpus.matrix.nnz), "touched_ids": corpus.touched_ids,
                   "informative_ids": corpus.informative_ids.tolist()}, handle)
    matrix = corpus.matrix
    print(f"{args.size}: {matrix.shape[0]:,} x 2^{bits}, {matrix.nnz:,} non-zeros ({matrix.nnz / matrix.shape[0]:.1f} "
          f"per row), {corpus.touched_ids:,} ids touched, generated in {generated - started:.1f} s, written in "
          f"{time.perf_counter() - generated:.1f} s to {args.path}")


if __name__ == "__main__":
    main()
