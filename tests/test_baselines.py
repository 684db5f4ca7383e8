"""The k-means baselines: DP-Lloyd (SuLQ k-means) and EUGkM (the noisy grid)."""

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


# ---------------------------------------------------------------- EUGkM


def test_eugkm_grid_rule_and_noise_free_result():
    from pysketch.baselines import EUGkM
    from pysketch.cluster import weighted_kmeans
    from pysketch.features import GridMap

    # Su et al.'s M = round((N eps / theta)^(2 / (2 + d))), theta = 10
    assert EUGkM.grid_bins(45_000, 0.95, 2) == round(4275 ** 0.5) == 65
    assert EUGkM.grid_bins(3, 1.0, 2) == 1
    assert EUGkM.grid_bins(10 ** 9, 1.0, 48) == 1  # 2 by the rule, but 2^48 cells are beyond MAX_GRID_CELLS
    rng = np.random.default_rng(0)
    X = np.concatenate([c + 0.05 * rng.standard_normal((1700, 2)) for c in ([0.2, 0.2], [0.8, 0.3], [0.5, 0.8])])
    X = np.clip(X, 0, 1)  # three separated clusters: one k-means optimum, whatever the seeding
    # epsilon 1e9 (noise of scale 1e-9), theta 1e9 (a grid of the size epsilon 1 would give)
    est = EUGkM(3, 1e9, (0, 1), theta=1e9, random_state=4, insecure_seed=1).fit(X)
    assert est.n_bins_ == EUGkM.grid_bins(est.sketch_.count, 0.95e9, 2, 1e9) == round((5100 * 0.95) ** 0.5) == 70
    fm = GridMap([0, 0], [1, 1], est.n_bins_)
    ref, _, _ = weighted_kmeans(fm.cell_centers(), fm.sketch(X).sum, 3, random_state=4)
    got = est.cluster_centers_
    np.testing.assert_allclose(got[np.argsort(got[:, 0])], ref[np.argsort(ref[:, 0])], atol=1e-6)


def test_eugkm_sensitivity_brute_forced_budget_and_validation(data):
    import itertools

    from pysketch.baselines import EUGkM

    acc = BudgetAccountant(1.0)
    est = EUGkM(4, 1.0, (-12, 12), accountant=acc, random_state=0).fit(data)
    assert acc.spent == (1.0, 0.0) and est.sensitivity_ == 1.0
    rec = est.sketch_.privacy
    assert rec.epsilon_sum == pytest.approx(0.95) and rec.epsilon_count == pytest.approx(0.05)
    assert rec.noise_scale_sum == pytest.approx(1 / 0.95, rel=1e-6)
    # brute force on the released map: the counts of neighbouring data sets differ by at most 1
    # (add/remove) and 2 (replace) in L1, attained
    fm = est.sketch_.feature_map
    pts = np.array(list(itertools.product(np.linspace(-12, 12, 7), repeat=3)))
    base = data[:50]
    s0 = fm.sketch(base).sum
    add = [np.abs(fm.sketch(np.vstack([base, p[None]])).sum - s0).sum() for p in pts]
    assert max(add) == 1.0 == est.sensitivity_
    rep = [np.abs(fm.sketch(np.vstack([base[1:], p[None]])).sum - s0).sum() for p in pts]
    assert max(rep) == 2.0 == EUGkM(4, 1.0, (-12, 12), neighbouring="replace").fit(data).sensitivity_
    with pytest.warns(RuntimeWarning, match="clipped"):
        EUGkM(4, 1.0, (-1, 1), random_state=0).fit(data)
    for kw, match in (({"epsilon": 0.0}, "epsilon"), ({"theta": -1.0}, "theta"), ({"count_share": 1.0}, "count_share"),
                      ({"neighbouring": "swap"}, "neighbouring")):
        args = dict(n_clusters=4, epsilon=1.0, bounds=(-12, 12))
        args.update(kw)
        with pytest.raises(ValueError, match=match):
            EUGkM(**args).fit(data)


@pytest.mark.parametrize("name", ["DPLloyd", "EUGkM"])
def test_predict_before_fit_is_a_not_fitted_error(name):
    import pysketch.baselines as baselines
    from sklearn.exceptions import NotFittedError

    model = getattr(baselines, name)(2, epsilon=1.0, bounds=(-1.0, 1.0))
    with pytest.raises(NotFittedError, match=f"This {name} instance is not fitted yet"):
        model.predict(np.zeros((3, 2)))
