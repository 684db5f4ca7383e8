"""DP-Lloyd (SuLQ k-means) baseline."""

import numpy as np
import pytest

from pysketch.baselines import DPLloyd
from pysketch.datasets import make_blobs_gaussian_centers
from pysketch.metrics import assign, kmeans_plus_plus, sse
from pysketch.privacy import BudgetAccountant


@pytest.fixture(scope="module")
def data():
    return make_blobs_gaussian_centers(20_000, 4, 3, random_state=0)[0]


def _lloyd_from_same_start(X, k, bounds, T, seed):
    lo, hi = bounds
    c0, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    C = np.random.default_rng(seed).uniform(-half, half, size=(k, X.shape[1])) + c0
    for _ in range(T):
        lab = assign(X, C)
        for j in range(k):
            if np.any(lab == j):
                C[j] = X[lab == j].mean(axis=0)
            else:
                C[j] = c0  # empty cluster: sum 0 / max(count, 1) -> the box centre
    return C


def test_dplloyd_is_lloyd_when_the_noise_vanishes(data):
    lo, hi = np.full(3, -12.0), np.full(3, 12.0)
    est = DPLloyd(4, 1e9, (lo, hi), n_iter=5, random_state=3, insecure_seed=1).fit(data)
    ref = _lloyd_from_same_start(data, 4, (lo, hi), 5, 3)
    assert np.allclose(est.cluster_centers_, ref, atol=1e-4)


def test_dplloyd_sensitivity_noise_and_budget(data):
    acc = BudgetAccountant(1.0)
    est = DPLloyd(4, 1.0, (-12, 12), n_iter=4, accountant=acc, random_state=0).fit(data)
    assert est.sensitivity_ == 1 + 3 * 12
    assert est.noise_scale_ == pytest.approx(4 * 37 / 1.0, rel=1e-6)
    assert acc.spent == (1.0, 0.0)
    assert est.predict(data).shape == (data.shape[0],)


def test_dplloyd_quality_degrades_with_less_budget(data):
    _, base = kmeans_plus_plus(data, 4, random_state=0)
    good = np.median([sse(data, DPLloyd(4, 100.0, (-12, 12), random_state=s).fit(data).cluster_centers_) / base
                      for s in range(3)])
    bad = np.median([sse(data, DPLloyd(4, 0.01, (-12, 12), random_state=s).fit(data).cluster_centers_) / base
                     for s in range(3)])
    assert good < bad


def test_dplloyd_clips_and_validates(data):
    with pytest.warns(RuntimeWarning, match="clipped"):
        DPLloyd(4, 1.0, (-1, 1), random_state=0).fit(data)
    with pytest.raises(ValueError, match="epsilon"):
        DPLloyd(4, 0.0, (-12, 12)).fit(data)
    with pytest.raises(ValueError, match="n_iter"):
        DPLloyd(4, 1.0, (-12, 12), n_iter=0).fit(data)
