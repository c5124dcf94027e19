"""The corpus family of the quality benchmark (benchmarks/corpus_family.py): each structure has the
signal it claims and knows its truth, so a quality figure measured on it means what it says."""

import numpy as np
import pytest
from sklearn.feature_selection import f_classif

from benchmarks.corpus_family import GROUP_SIZE, NUM_CLASSES, STRUCTURES, make_corpus, ranking_quality


@pytest.fixture(scope="module")
def corpora():
    return {structure: make_corpus(structure, "tiny", seed=5) for structure in STRUCTURES}


def test_every_structure_is_tf_idf_rows_with_classes_and_a_truth(corpora):
    for structure, corpus in corpora.items():
        matrix = corpus.matrix
        assert matrix.shape == (2_000, 5_000), structure
        norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
        assert np.allclose(norms, 1.0, atol=1e-4) and matrix.data.min() > 0, structure
        assert 60 < matrix.nnz / matrix.shape[0] < 140, structure
        assert set(np.unique(corpus.labels)) == set(range(NUM_CLASSES)), structure
        assert np.all(np.diff(corpus.informative) > 0) and corpus.informative[-1] < matrix.shape[1], structure
        assert corpus.name == f"{structure}/tiny/seed 5"


def test_the_same_arguments_give_the_same_corpus_and_structures_differ():
    first, again = make_corpus("shared", "tiny", seed=2), make_corpus("shared", "tiny", seed=2)
    assert (first.matrix != again.matrix).nnz == 0 and np.array_equal(first.labels, again.labels)
    assert not np.array_equal(first.labels, make_corpus("weak", "tiny", seed=2).labels)
    assert not np.array_equal(first.labels, make_corpus("shared", "tiny", seed=3).labels)


def _mean_f(corpus, terms):
    scores, _ = f_classif(corpus.matrix[:, terms], corpus.labels)
    return float(np.nanmean(scores))


def test_informative_terms_differ_between_classes_and_the_rest_do_not(corpora):
    """Mean ANOVA F of the informative terms well above 1; of the other terms about 1 (no signal)."""
    for structure in ("exclusive", "shared", "rare", "redundant"):
        corpus = corpora[structure]
        others = np.setdiff1d(np.arange(corpus.matrix.shape[1]), corpus.informative)
        # the rare tail's terms occur a few times each in 2,000 rows: a smaller F, still above the rest
        assert _mean_f(corpus, corpus.informative) > (1.3 if structure == "rare" else 3.0), structure
        assert _mean_f(corpus, others) < 1.2, structure
    weak, shared = corpora["weak"], corpora["shared"]
    assert 1.3 < _mean_f(weak, weak.informative) < _mean_f(shared, shared.informative)


def test_a_pair_term_alone_says_nothing_but_the_pair_together_marks_its_class(corpora):
    corpus = corpora["interacting"]
    present = corpus.matrix.tocsc() > 0
    assert _mean_f(corpus, corpus.pairs.ravel()) < 1.3
    together_in_own, together_elsewhere = 0, 0
    for (first, second), label in zip(corpus.pairs, corpus.pair_classes):
        both = np.asarray(present[:, first].multiply(present[:, second]).todense()).ravel()
        together_in_own += int(both[corpus.labels == label].sum())
        together_elsewhere += int(both[corpus.labels != label].sum())
    assert together_in_own > 3 * max(together_elsewhere, 1)  # elsewhere: two events on one pair in a row
    assert np.isin(corpus.pairs.ravel(), corpus.informative).all()


def test_synonyms_of_a_group_occur_together(corpora):
    corpus = corpora["redundant"]
    assert corpus.groups.shape[1] == GROUP_SIZE and np.isin(corpus.groups, corpus.informative).all()
    present = (corpus.matrix.tocsc() > 0).astype(np.float64)
    head, member = corpus.groups[:, 0], corpus.groups[:, 1]
    joint = np.asarray(present[:, head].multiply(present[:, member]).sum(axis=0)).ravel()
    alone = np.asarray(present[:, member].sum(axis=0)).ravel()
    # most of a member's occurrences are beside its head (the rest is the background's rate)
    assert joint.sum() > 0.5 * alone.sum()


def test_the_quality_of_a_ranking_counts_what_its_top_holds(corpora):
    corpus = corpora["redundant"]
    ranked = np.concatenate([corpus.groups[:3].ravel(), np.setdiff1d(np.arange(5_000), corpus.informative)])
    found = ranking_quality(corpus, ranked, 20)
    assert found["informative_in_top"] == 15 and found["groups_reached"] == 3 and found["copies_per_group"] == 5.0
    assert found["chance"] == pytest.approx(20 * corpus.informative.size / 5_000)
    pairs = corpora["interacting"]
    found = ranking_quality(pairs, pairs.pairs[:4].ravel(), 8)
    assert found["pair_terms_in_top"] == 8 == found["informative_in_top"]
