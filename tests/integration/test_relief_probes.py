"""The probe protocol of Yang & Hu (2012, Section 5.1) on shared UCI data, one run per set.

Checks the findings of docs/relief_probes.md that hold with a wide margin in every run of the
study (studies/relief_probe_study.py): each assertion below would fail if the finding did not
hold, and its threshold sits well outside the run-to-run spread reported in the doc. The data
seed can be changed with SPARKFS_PROBE_SEED: the assertions were checked with seeds 0-7, 42 and
123, besides the study's own runs (other seeds).

Settings as in the study: k = 1, scaling="range", Euclidean, every row a query, prelief's default
sigma (0.01 on range-scaled data), 50 probes N(0, 20), stratified Table 1 training split.
"""

import os

import numpy as np
import pytest

pytest.importorskip("pyspark")

from sparkfs import ReliefSelector
from sparkfs.evaluation import add_probes, imbalance, selection_roc, stratified_split
from tests.helpers import make_df

SEED = int(os.environ.get("SPARKFS_PROBE_SEED", "0"))
N_PROBES = 50
#: Table 1 of the paper: training rows.
TRAIN_SIZE = {"breast_w": 400, "ionosphere": 235, "sonar": 165, "glass": 120, "german_credit": 700,
              "pima_diabetes": 400}
TOTAL_SIZE = {"breast_w": 683, "ionosphere": 351, "sonar": 208, "glass": 214, "german_credit": 1000,
              "pima_diabetes": 768}


def training_data(shared_data, name, imbalanced=False, raw_probes=False):
    """Training split with probes: (X, y, is_real). Constant columns dropped, as in the study.

    ``raw_probes``: real features min-max scaled to [0, 1] and the probes left as drawn (the
    study's A3 setup, fitted with scaling="none").
    """
    archive = np.load(shared_data / f"{name}.npz")
    X, y = archive["X"].astype(np.float64), archive["y"].astype(np.int64)
    X = X[:, X.max(axis=0) > X.min(axis=0)]
    if imbalanced:
        X, y = imbalance(X, y, hide_fraction=0.8, seed=SEED)
    if raw_probes:
        X = (X - X.min(axis=0)) / np.ptp(X, axis=0)
    n_real = X.shape[1]
    X = add_probes(X, n_probes=N_PROBES, variance=20.0, seed=SEED)
    train_size = int(round(X.shape[0] * TRAIN_SIZE[name] / TOTAL_SIZE[name]))
    train, _ = stratified_split(y, train_size, seed=SEED)
    return X[train], y[train], np.arange(X.shape[1]) < n_real


_cache = {}


def fitted(spark, shared_data, name, variants, imbalanced=False, raw_probes=False, **params):
    """The training split and {variant: scores} (each fitted once per module).

    ``variants`` are variant names; ``params`` (e.g. sigma) go to every fit and into the key.
    """
    key = (name, imbalanced, raw_probes)
    if key not in _cache:
        X, y, is_real = training_data(shared_data, name, imbalanced, raw_probes)
        df = make_df(spark, X, y, partitions=2).cache()
        _cache[key] = {"X": X, "y": y, "is_real": is_real, "df": df, "scores": {}}
    entry = _cache[key]
    scaling = "none" if raw_probes else "range"
    for variant in variants:
        score_key = (variant, tuple(sorted(params.items())))
        if score_key not in entry["scores"]:
            model = ReliefSelector(variant=variant, k=1, scaling=scaling, numFeatures=1, **params).fit(entry["df"])
            entry["scores"][score_key] = model.scores
    return entry


def scores(entry, variant, **params):
    return entry["scores"][(variant, tuple(sorted(params.items())))]


def mean_pair_distance(X):
    """Per column, the mean |x_i - x_j| over pairs of rows after range scaling (sorted-values formula)."""
    n = X.shape[0]
    values = np.sort((X - X.min(axis=0)) / np.ptp(X, axis=0), axis=0)
    return 2.0 * ((2.0 * np.arange(n) - n + 1.0) @ values) / (n * (n - 1))


def auc(entry, variant, **params):
    return selection_roc(scores(entry, variant, **params), entry["is_real"])[2]


@pytest.mark.parametrize("name", ["breast_w", "ionosphere"])
def test_prelief_and_relief_put_the_real_features_above_the_probes(spark, shared_data, name):
    # study: prelief AUC 1.000 in every run on both; relief 0.96 (Breast) and 0.995 (Ionosphere)
    entry = fitted(spark, shared_data, name, ["relief", "prelief"])
    assert auc(entry, "prelief") >= 0.97
    assert auc(entry, "relief") >= 0.8
    assert auc(entry, "prelief") >= auc(entry, "relief")


def test_relief_and_relieff_coincide_on_binary_data(spark, shared_data):
    # Section 5.1: "for binary classification, ReliefF and Relief are identical" (k = 1)
    entry = fitted(spark, shared_data, "breast_w", ["relief", "relieff"])
    np.testing.assert_allclose(scores(entry, "relieff"), scores(entry, "relief"), rtol=1e-12, atol=1e-15)


def test_prelief_default_bandwidth_ranks_sonar_below_relief(spark, shared_data):
    # Contrary to the paper's Fig. 2: with sigma = 0.01 P-Relief's Sonar AUC is ~0.72 vs Relief's ~0.91
    entry = fitted(spark, shared_data, "sonar", ["relief", "prelief"])
    assert auc(entry, "relief") - auc(entry, "prelief") >= 0.08


def test_a_wider_parzen_kernel_finds_pimas_real_features(spark, shared_data):
    # study (A2): P-Relief's Pima AUC 0.77 with sigma = 0.01, >= 0.98 in every run with sigma = 0.05
    entry = fitted(spark, shared_data, "pima_diabetes", ["prelief"])
    fitted(spark, shared_data, "pima_diabetes", ["prelief"], sigma=0.05)
    assert auc(entry, "prelief", sigma=0.05) >= 0.95
    assert auc(entry, "prelief", sigma=0.05) >= auc(entry, "prelief")


def test_unscaled_probes_blind_relief_but_not_prelief(spark, shared_data):
    # study (A3): [0, 1] real features, raw N(0, 20) probes, no scaling: Relief's neighbours are
    # decided by the probes (Ionosphere AUC 0.50-0.62), P-Relief's per-feature kernel is not (AUC 1)
    entry = fitted(spark, shared_data, "ionosphere", ["relief"], raw_probes=True)
    fitted(spark, shared_data, "ionosphere", ["prelief"], raw_probes=True, sigma=0.01)
    assert auc(entry, "relief") <= 0.75
    assert auc(entry, "prelief", sigma=0.01) >= 0.97


def test_mrelief_scores_carry_the_prior_dispersion_term_on_imbalanced_data(spark, shared_data):
    # German with 80% of the minority hidden: f = 2 sum P_c^2 - 1 ~ 0.7, and eq. (16) adds a
    # class-blind term of about f x (mean |x_i - x_j|) to every feature's score (study: probes at
    # 0.92-0.94 of that prediction); it swamps the class signal and M-Relief's AUC falls far below
    # Relief's (study: 0.53 vs 0.92).
    entry = fitted(spark, shared_data, "german_credit", ["relief", "mrelief"], imbalanced=True)
    X, y, is_real = entry["X"], entry["y"], entry["is_real"]
    priors = np.bincount(y) / y.size
    f = 2 * np.sum(priors ** 2) - 1
    predicted = f * mean_pair_distance(X[:, ~is_real]).mean()
    observed = scores(entry, "mrelief")[~is_real].mean()
    assert 0.75 * predicted <= observed <= 1.1 * predicted
    assert auc(entry, "relief") - auc(entry, "mrelief") >= 0.15


def test_mrelief_pushes_probes_down_on_multiclass_glass(spark, shared_data):
    # six classes: f < 0, the class-blind term T = M-Relief - Relief / 2 is most negative on the
    # probes and alone ranks the real features above them (study: T-alone AUC 0.997, M-Relief 0.997)
    entry = fitted(spark, shared_data, "glass", ["relief", "mrelief"])
    term = scores(entry, "mrelief") - scores(entry, "relief") / 2
    assert scores(entry, "mrelief")[~entry["is_real"]].max() < 0
    assert selection_roc(term, entry["is_real"])[2] >= 0.9
    assert auc(entry, "mrelief") >= 0.9
