"""ReliefSelector (all four variants) against the NumPy reference of each equation; CLI on text."""

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from sparkfs import InvalidInputError, ReliefSelector, ReliefSelectorModel
from sparkfs.cli import main
from tests.core.test_relief import reference_margins, reference_weights
from tests.helpers import make_df


@pytest.fixture(scope="module")
def labelled(spark):
    rng = np.random.default_rng(11)
    X = rng.normal(size=(45, 6)) * [1, 2, 0.5, 3, 1, 1]
    y = np.array(["b", "a", "c"])[rng.integers(0, 3, 45)]
    X[y == "a", 0] += 2.0
    X[y == "c", 3] -= 4.0
    return X, y


@pytest.mark.parametrize("variant", ["relief", "relieff", "mrelief", "prelief"])
@pytest.mark.parametrize("partitions", [1, 3])
def test_selector_equals_reference_with_range_scaling(spark, labelled, variant, partitions):
    X, y = labelled
    df = make_df(spark, X, y, partitions=partitions, label_type=str)
    sigma = 0.2 if variant == "prelief" else None
    model = ReliefSelector(variant=variant, k=3, scaling="range", sigma=sigma, numFeatures=2).fit(df)
    scaled = X / (X.max(0) - X.min(0))
    y_index = np.searchsorted(["a", "b", "c"], y)
    margins = reference_margins(scaled, y_index, np.arange(len(y)), range(len(y)), variant, k=3, sigma=sigma)
    expected = margins.mean(axis=0)
    np.testing.assert_allclose(model.scores, expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(model.weights, reference_weights(expected), rtol=1e-9, atol=1e-12)
    assert model.labelValues == ["a", "b", "c"]
    assert model.selectedFeatures == sorted(np.argsort(-expected, kind="stable")[:2].tolist())
    assert model.summary["method"] == variant and model.summary["n_queries"] == 45


def test_sampled_queries_are_a_subset_and_reproducible(spark, labelled):
    X, y = labelled
    first = ReliefSelector(variant="relieff", k=2, sampleSize=20, seed=5).fit(make_df(spark, X, y, 1, label_type=str))
    again = ReliefSelector(variant="relieff", k=2, sampleSize=20, seed=5).fit(make_df(spark, X, y, 4, label_type=str))
    other = ReliefSelector(variant="relieff", k=2, sampleSize=20, seed=6).fit(make_df(spark, X, y, 1, label_type=str))
    assert first.summary["n_queries"] == 20
    np.testing.assert_allclose(first.scores, again.scores, rtol=1e-12)
    assert not np.allclose(first.scores, other.scores)


def test_model_round_trip_keeps_weights(spark, labelled, tmp_path):
    X, y = labelled
    model = ReliefSelector(variant="mrelief", k=2, numFeatures=3).fit(make_df(spark, X, y, label_type=str))
    model.write().save(str(tmp_path / "m"))
    loaded = ReliefSelectorModel.load(str(tmp_path / "m"))
    np.testing.assert_array_equal(loaded.weights, model.weights)
    assert loaded.getOrDefault("variant") == "mrelief"


def test_single_class_and_a_one_row_class_are_named(spark):
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidInputError, match="only one"):
        ReliefSelector().fit(make_df(spark, rng.normal(size=(6, 3)), [1] * 6))
    with pytest.raises(InvalidInputError, match="class 2 has a single row"):
        ReliefSelector(k=5).fit(make_df(spark, rng.normal(size=(9, 3)), [0, 1] * 4 + [2]))


def test_sparse_text_set_through_cli(spark, shared_data, tmp_path):
    """tr11 (414 x 6,429 term matrix, 9 classes) through the CLI, sparse end to end, vs the reference."""
    from sklearn.datasets import dump_svmlight_file

    matrix = sp.load_npz(shared_data / "tr11.npz").tocsr()
    labels = np.load(shared_data / "tr11.npz")["y"]
    dump_svmlight_file(matrix, labels, str(tmp_path / "tr11.libsvm"), zero_based=False)
    out = tmp_path / "out"
    code = main(["select", "--master", "local[2]", "--input", str(tmp_path / "tr11.libsvm"), "--format", "libsvm",
                 "--method", "relieff", "--num-features", "100", "--param", "k=1", "--param", "sample_size=60",
                 "--param", "metric=manhattan", "--output", str(out)])
    assert code == 0
    summary = json.loads(Path(out, "summary.json").read_text())
    assert summary["n_features"] == 6429 and summary["n_queries"] == 60 and summary["n_classes"] == 9
    assert len(summary["selected_indices"]) == 100


def test_unset_sample_size_draws_the_default_sample_above_it_and_says_so(spark, tmp_path, capsys):
    from sparkfs import DefaultSampleWarning
    from sparkfs.selectors.relief import DEFAULT_QUERY_SAMPLE

    rng = np.random.default_rng(4)
    n = DEFAULT_QUERY_SAMPLE + 150
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(float)
    df = make_df(spark, X, y, partitions=2).cache()
    with pytest.warns(DefaultSampleWarning, match=f"{n:,} rows, so {DEFAULT_QUERY_SAMPLE:,} query rows"):
        defaulted = ReliefSelector(numFeatures=1, k=3).fit(df)
    assert defaulted.summary["n_queries"] == DEFAULT_QUERY_SAMPLE and defaulted.summary["query_sample"] == "default"
    explicit = ReliefSelector(numFeatures=1, k=3, sampleSize=DEFAULT_QUERY_SAMPLE).fit(df)
    assert explicit.summary["query_sample"] == "sampleSize"
    np.testing.assert_array_equal(defaulted.scores, explicit.scores)  # the default is that sample, nothing else
    every = ReliefSelector(numFeatures=1, k=3, sampleSize=n).fit(df)  # a sample of n rows is every row
    assert every.summary["n_queries"] == n
    small = make_df(spark, X[:200], y[:200])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", DefaultSampleWarning)
        model = ReliefSelector(numFeatures=1, k=3).fit(small)
    assert model.summary["n_queries"] == 200 and model.summary["query_sample"] == "every row"
    # the command line announces it on stderr as one line, and the summary records it
    path = tmp_path / "in.parquet"
    df.write.parquet(str(path))
    out = tmp_path / "out"
    assert main(["select", "--input", str(path), "--format", "parquet", "--method", "relieff",
                 "--num-features", "1", "--output", str(out)]) == 0
    assert "query rows were drawn by seed 0" in capsys.readouterr().err
    assert json.loads((out / "summary.json").read_text())["query_sample"] == "default"
