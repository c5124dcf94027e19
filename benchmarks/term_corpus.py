"""A seeded synthetic term corpus: documents x terms as tf-idf rows.

Every document belongs to one of ``num_classes`` classes (uniform). Its tokens come from a Zipfian
vocabulary (term ``t`` has probability proportional to ``1 / (t + 2.7)``, Mandelbrot's form of
Zipf's law); a share of them (``class_share``) comes instead from the class's own informative
terms, a few per cent of the vocabulary (``informative_share``, spread over the frequency ranks and
split evenly between the classes). Counts become tf-idf values as scikit-learn's
``TfidfTransformer`` computes them by default (raw counts times ``ln((1 + n) / (1 + df)) + 1``,
each row scaled to unit L2 norm), rounded to 6 decimals so that the LIBSVM text is short and reads
back as exactly the same doubles.

Sizes: ``S`` = 100,000 x 50,000 (about 100 non-zeros per row, 10 M in all), ``M`` = 1,000,000 x
100,000, ``tiny`` for tests. Everything is vectorised NumPy (S takes a few seconds); the LIBSVM
text is formatted by pyarrow.

    python -m benchmarks.term_corpus S /tmp/term_s.libsvm
    from benchmarks.term_corpus import term_corpus; matrix, labels = term_corpus(1000, 5000)
"""

from __future__ import annotations

import argparse
import time
from typing import Tuple

import numpy as np
import scipy.sparse as sp

#: (documents, terms) of the named sizes.
SIZES = {"tiny": (2_000, 5_000), "S": (100_000, 50_000), "M": (1_000_000, 100_000)}
#: Tokens drawn per non-zero wanted: repeated tokens of frequent terms merge (measured on S).
_TOKENS_PER_NONZERO = 1.17


def informative_terms(num_terms: int, num_classes: int = 20, informative_share: float = 0.03) -> np.ndarray:
    """The class-informative terms of :func:`term_corpus`, (classes, terms per class): every k-th
    frequency rank (so some are frequent, most are rare), dealt to the classes in turn."""
    num_informative = max(num_classes, int(round(informative_share * num_terms)))
    informative = np.linspace(0, num_terms - 1, num_informative).astype(np.int64)
    per_class = num_informative // num_classes
    return informative[:per_class * num_classes].reshape(per_class, num_classes).T


def term_corpus(num_docs: int, num_terms: int, *, num_classes: int = 20, nonzeros_per_row: float = 100.0,
                informative_share: float = 0.03, class_share: float = 0.1,
                seed: int = 0) -> Tuple[sp.csr_matrix, np.ndarray]:
    """``(tf-idf matrix (num_docs, num_terms) CSR float64, labels (num_docs,) int64 in 0..C-1)``.

    Rows have about ``nonzeros_per_row`` distinct terms (Poisson token counts), sorted indices,
    unit L2 norm; a document with no token keeps one token of its class. Same seed, same corpus.
    """
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, num_docs).astype(np.int64)
    tokens_per_row = np.maximum(rng.poisson(nonzeros_per_row * _TOKENS_PER_NONZERO, num_docs), 1)
    row_of_token = np.repeat(np.arange(num_docs, dtype=np.int64), tokens_per_row)
    num_tokens = row_of_token.size

    zipf = 1.0 / (np.arange(num_terms) + 2.7)
    zipf_cdf = np.cumsum(zipf / zipf.sum())
    terms = np.minimum(np.searchsorted(zipf_cdf, rng.random(num_tokens), side="right"), num_terms - 1)

    class_terms = informative_terms(num_terms, num_classes, informative_share)  # (C, per_class)
    per_class = class_terms.shape[1]
    within_cdf = np.cumsum(1.0 / (np.arange(per_class) + 2.7))
    within_cdf /= within_cdf[-1]
    from_class = rng.random(num_tokens) < class_share
    from_class[np.r_[0, np.cumsum(tokens_per_row)[:-1]]] |= tokens_per_row == 1
    picks = np.minimum(np.searchsorted(within_cdf, rng.random(int(from_class.sum())), side="right"), per_class - 1)
    terms[from_class] = class_terms[labels[row_of_token[from_class]], picks]

    return tfidf_rows(row_of_token, terms, num_docs, num_terms), labels


def tfidf_rows(row_of_token: np.ndarray, terms: np.ndarray, num_docs: int, num_terms: int) -> sp.csr_matrix:
    """The tf-idf rows of tokens (each token's row and term): raw counts times scikit-learn's default
    smooth idf, each row scaled to unit L2 norm, values rounded to 6 decimals (at least 1e-6)."""
    counts = sp.csr_matrix((np.ones(terms.size), (row_of_token, terms)), shape=(num_docs, num_terms))
    counts.sum_duplicates()
    counts.sort_indices()
    document_frequency = np.bincount(counts.indices, minlength=num_terms)
    idf = np.log((1.0 + num_docs) / (1.0 + document_frequency)) + 1.0
    values = counts.data * idf[counts.indices]
    row_norms = np.sqrt(np.add.reduceat(values * values, counts.indptr[:-1]))
    values /= np.repeat(row_norms, np.diff(counts.indptr))
    values = np.maximum(np.round(values * 1e6), 1.0) / 1e6  # k / 10^6: the double nearest the 6-decimal text
    return sp.csr_matrix((values, counts.indices, counts.indptr), shape=(num_docs, num_terms))


def write_libsvm(path: str, matrix: sp.csr_matrix, labels: np.ndarray) -> None:
    """``label index:value ...`` lines, 1-based indices (Spark's and scikit-learn's convention)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    indices = pc.cast(pa.array(matrix.indices.astype(np.int64) + 1), pa.string())
    values = pc.cast(pa.array(matrix.data), pa.string())
    pairs = pc.binary_join_element_wise(indices, values, ":")
    rows = pa.ListArray.from_arrays(pa.array(matrix.indptr.astype(np.int32)), pairs)
    features = pc.binary_join(rows, " ")
    lines = pc.binary_join_element_wise(pc.cast(pa.array(labels), pa.string()), features, " ")
    with open(path, "wb") as handle:
        for start in range(0, len(lines), 50_000):
            piece = lines.slice(start, 50_000)
            handle.write(("\n".join(piece.to_pylist()) + "\n").encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", choices=sorted(SIZES))
    parser.add_argument("path", help="LIBSVM file to write")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    matrix, labels = term_corpus(*SIZES[args.size], seed=args.seed)
    generated = time.perf_counter()
    write_libsvm(args.path, matrix, labels)
    print(f"{args.size}: {matrix.shape[0]:,} x {matrix.shape[1]:,}, {matrix.nnz:,} non-zeros "
          f"({matrix.nnz / matrix.shape[0]:.1f} per row), generated in {generated - started:.1f} s, "
          f"written in {time.perf_counter() - generated:.1f} s to {args.path}")


if __name__ == "__main__":
    main()
