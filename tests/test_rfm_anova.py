"""Issue 37 (private regression at moderate n): the additive-plus-full random features
(pysketch.rfm.anova) and their worst-case bounds by brute force, the kernel they
approximate, the private model selection by Gaussian fission (pysketch.rfm.ssp), and the
PrivateRFRegressor defaults that use them."""

import math
import warnings

import numpy as np
import pytest
from scipy import special, stats

from pysketch.privacy.accountant import BudgetAccountant
from pysketch.rfm import PrivateRFRegressor, RandomFeatures, RFStatistics, release_statistics, ssp
from pysketch.rfm.anova import AnovaFeatures, anova_frequencies
from pysketch.rfm import estimators


def _anova(d=3, N=12, seed=0, share=0.75, length=1.5, additive=0.7):
    return AnovaFeatures(d, N, length_scale=length, additive_length=additive, additive_share=share, random_state=seed)


def _triu_norm(M):
    return float(np.linalg.norm(M[np.triu_indices(M.shape[0])]))


# ---------------------------------------------------------------- the features and their bounds


def test_anova_features_have_norm_one_and_bounded_entries_for_any_x():
    rf = _anova()
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.standard_normal((400, 3)) * s for s in (1e-6, 1.0, 1e3, 1e9)] + [np.zeros((1, 3))])
    F = rf.transform(X)
    assert F.shape == (X.shape[0], 2 * 12 + 1)
    assert np.allclose((F ** 2).sum(1), 1.0, rtol=0, atol=1e-13)
    assert np.abs(F).max() <= rf.max_abs * (1 + 1e-12)
    assert rf.max_abs == pytest.approx(1 / math.sqrt(13)) and rf.layout == "unit" and rf.intercept


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace"])
def test_statistics_sensitivities_hold_and_are_attained_with_anova_features(neighbouring):
    rf = _anova(d=2, N=6)
    dG, db, dl = ssp.statistics_sensitivities(rf, 1.0, neighbouring)
    rng = np.random.default_rng(2)
    F = rf.transform(np.concatenate([np.zeros((1, 2)), rng.uniform(-8, 8, (3000, 2))]))
    if neighbouring == "add_remove":
        norms = np.array([_triu_norm(np.outer(f, f)) for f in F])
        assert norms.max() <= dG
        assert norms[0] >= dG * (1 - 1e-9)  # x = 0: every cos = 1, every sin = 0
        assert np.linalg.norm(F, axis=1).max() * 1.0 <= db
    else:
        worst = max(_triu_norm(np.outer(F[i], F[i]) - np.outer(F[j], F[j]))
                    for i, j in rng.integers(0, len(F), (3000, 2)))
        assert worst <= dG
        assert worst >= 0.75 * dG


def test_anova_frequencies_are_axis_aligned_then_full_and_stratified():
    d, N, w, l1, l = 3, 40, 0.75, 0.5, 2.0
    om = anova_frequencies(d, N, l1, l, w, random_state=3)
    n_add = 30
    assert np.all(np.count_nonzero(om[:, :n_add], axis=0) == 1)
    coord = np.argmax(np.abs(om[:, :n_add]), axis=0)
    # the coordinates in turn (a permutation repeated): balanced, whatever the columns' order
    assert sorted(coord[:d]) == list(range(d)) and np.array_equal(coord, np.resize(coord[:d], n_add))
    assert np.all(om[:, n_add:] != 0)
    for j in range(d):
        g = np.abs(om[j, :n_add][coord == j]) * l1
        u = 2 * special.ndtr(g) - 1  # back to the uniform scale: one per stratum
        m = g.size
        assert sorted(np.floor(u * m).astype(int)) == list(range(m))
    # the full part: N(0, 1 / l^2) in each entry (a loose normality check on 30 draws of 3 x 10)
    assert stats.kstest(om[:, n_add:].ravel() * l, "norm").pvalue > 1e-4
    # reproducible from the public seed
    assert np.array_equal(om, anova_frequencies(d, N, l1, l, w, random_state=3))


def test_anova_features_approximate_the_additive_plus_full_kernel():
    d, N, w, l1, l = 3, 20000, 0.75, 0.7, 1.5
    rf = AnovaFeatures(d, N, length_scale=l, additive_length=l1, additive_share=w, random_state=4)
    rng = np.random.default_rng(5)
    X, Y = rng.standard_normal((30, d)), rng.standard_normal((30, d))
    FX, FY = rf.transform(X), rf.transform(Y)
    est = ((N + 1) * np.sum(FX * FY, 1) - 1) / N  # mean of cos(omega^T (x - y)) over the N frequencies
    D = X - Y
    exact = w * np.mean(np.exp(-D ** 2 / (2 * l1 ** 2)), 1) + (1 - w) * np.exp(-np.sum(D ** 2, 1) / (2 * l ** 2))
    assert np.abs(est - exact).max() < 4 * math.sqrt((1 - w) / N) + 1e-3


def test_anova_features_check_their_arguments():
    with pytest.raises(ValueError, match="additive_share"):
        AnovaFeatures(2, 4, length_scale=1.0, additive_length=1.0, additive_share=1.5)
    with pytest.raises(ValueError, match="additive_length"):
        AnovaFeatures(2, 4, length_scale=1.0, additive_length=-1.0)
    with pytest.raises(ValueError, match="length_scale"):
        AnovaFeatures(2, 4, length_scale=0.0, additive_length=1.0)


# ---------------------------------------------------------------- model selection by fission


def _released(seed, n=300, N=2, y=None):
    rf = RandomFeatures(2, N, length_scale=1.0, layout="unit", intercept=True, random_state=0)
    rng = np.random.default_rng(7)
    X = rng.standard_normal((n, 2))
    y = np.sin(2 * X[:, 0]) if y is None else y
    st = RFStatistics(rf, (-2, 2)).update(X, y)
    return st, release_statistics(st, 1.0, 1e-5, insecure_seed=seed)


def test_fission_halves_average_to_the_release_and_have_independent_noise():
    st, r = _released(0)
    A, B = ssp._fission(r, np.random.default_rng(1))
    assert np.allclose((A.gram + B.gram) / 2, r.gram, rtol=0, atol=1e-9)
    assert np.allclose((A.xty + B.xty) / 2, r.xty, rtol=0, atol=1e-9)
    assert A.noise_std["gram"] == pytest.approx(math.sqrt(2) * r.noise_std["gram"])
    G0, b0 = st.gram, st.xty
    iu = np.triu_indices(G0.shape[0])
    za, zb = [], []
    for s in range(500):
        r = release_statistics(st, 1.0, 1e-5, insecure_seed=100 + s)
        A, B = ssp._fission(r, np.random.default_rng(s))
        za.append(np.concatenate([(A.gram - G0)[iu] / r.noise_std["gram"], (A.xty - b0) / r.noise_std["xty"]]))
        zb.append(np.concatenate([(B.gram - G0)[iu] / r.noise_std["gram"], (B.xty - b0) / r.noise_std["xty"]]))
    za, zb = np.concatenate(za), np.concatenate(zb)
    k = za.size
    lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], k) / k
    for z in (za, zb):  # each half: twice the release's variance
        assert lo <= np.mean(z ** 2) / 2 <= hi
    # uncorrelated (jointly Gaussian: independent); a shared-sign fission would give +-1
    assert abs(np.corrcoef(za, zb)[0, 1]) < 5.0 / math.sqrt(k)


def test_held_out_risk_difference_is_unbiased():
    st, _ = _released(0)
    theta = np.linspace(-1, 1, st.gram.shape[0])
    theta0 = np.zeros_like(theta)
    theta0[-1] = 0.3
    G, b = st.gram, st.xty
    clean = float(theta @ G @ theta - 2 * theta @ b - theta0 @ G @ theta0 + 2 * theta0 @ b) / 2.0 ** 2  # B = 2
    vals = []
    for s in range(2000):
        r = release_statistics(st, 1.0, 1e-5, insecure_seed=5000 + s)
        A, B = ssp._fission(r, np.random.default_rng(s))
        vals.append(ssp._risk_difference(theta, theta0, B))
    vals = np.array(vals)
    assert abs(vals.mean() - clean) < 5 * vals.std() / math.sqrt(vals.size)


def test_selection_prefers_the_intercept_on_noise_and_the_model_on_signal():
    rng = np.random.default_rng(8)
    # labels independent of 20 inputs: the private ridge only fits noise, the private mean is best
    n, d = 5000, 20
    X = rng.uniform(0, 1, (n + 5000, d))
    y = rng.standard_normal(n + 5000)
    kw = dict(bounds=(np.zeros(d), np.ones(d)), target_bounds=(-5, 5), random_state=0)
    sel = [PrivateRFRegressor(1.0, insecure_seed=s, **kw).fit(X[:n], y[:n]) for s in range(8)]
    off = [PrivateRFRegressor(1.0, insecure_seed=s, model_selection=False, **kw).fit(X[:n], y[:n]) for s in range(8)]
    assert [m.selected_ for m in sel].count("intercept") >= 5
    assert all(m.selected_ == "ridge" for m in off)

    def err(m):
        return np.mean((m.predict(X[n:]) - y[n:]) ** 2)
    assert np.mean([err(m) for m in sel]) < np.mean([err(m) for m in off])
    m = next(m for m in sel if m.selected_ == "intercept")
    assert np.count_nonzero(m.coef_[:-1]) == 0
    pred = m.predict(X[:10])
    assert np.allclose(pred, pred[0]) and abs(pred[0]) < 0.2  # the private mean of the labels (0)
    # a strong signal: the model is kept
    n = 20000
    X2 = rng.uniform(0, 1, (n, 2))
    signal = 2 * np.sin(6 * X2[:, 0]) + 0.5 * rng.standard_normal(n)
    kw2 = dict(bounds=([0, 0], [1, 1]), target_bounds=(-5, 5), random_state=0)
    assert [PrivateRFRegressor(1.0, insecure_seed=s, **kw2).fit(X2, signal).selected_ for s in range(4)] \
        == ["ridge"] * 4


def test_selection_is_post_processing_and_spends_nothing_more():
    rng = np.random.default_rng(9)
    X, y = rng.uniform(0, 1, (500, 2)), rng.standard_normal(500)
    acc = BudgetAccountant(1.0, 1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        PrivateRFRegressor(1.0, 1e-5, bounds=([0, 0], [1, 1]), target_bounds=(-3, 3), accountant=acc).fit(X, y)
    assert acc.spent[0] == pytest.approx(1.0) and acc.spent[1] == pytest.approx(1e-5)


# ---------------------------------------------------------------- the estimator's defaults


def test_regressor_defaults_use_anova_features_and_the_gaussian_kernel_stays_available():
    rng = np.random.default_rng(10)
    X = rng.uniform(0, 1, (3000, 3))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2
    kw = dict(bounds=(np.zeros(3), np.ones(3)), target_bounds=(-1, 3), random_state=0, insecure_seed=0)
    m = PrivateRFRegressor(1.0, **kw).fit(X, y)
    assert isinstance(m.features_, AnovaFeatures)
    N = m.features_.n_frequencies
    assert m.features_.n_additive == round(estimators.ANOVA_ADDITIVE_SHARE * N)
    assert m.features_.additive_length == pytest.approx(estimators.ANOVA_ADDITIVE_LENGTH)  # sqrt(d) / sqrt(d)
    g = PrivateRFRegressor(1.0, kernel="gaussian", **kw).fit(X, y)
    assert type(g.features_) is RandomFeatures
    with pytest.raises(ValueError, match="kernel"):
        PrivateRFRegressor(1.0, kernel="laplace", **kw).fit(X, y)


def test_additive_signal_is_learnt_better_with_anova_features():
    """A sum of one-column waves in d = 6: the additive part of the kernel sees it with few
    frequencies, the isotropic kernel does not (same release, same N)."""
    rng = np.random.default_rng(11)
    n, d = 30000, 6
    X = rng.standard_normal((n + 5000, d))
    y = np.sin(2 * X[:, 0]) + np.cos(2 * X[:, 1]) + 0.2 * rng.standard_normal(n + 5000)
    kw = dict(bounds=(np.full(d, -6.0), np.full(d, 6.0)), target_bounds=(-4, 4), random_state=1)
    err = {}
    for kernel in ("anova", "gaussian"):
        vals = []
        for s in range(2):
            m = PrivateRFRegressor(1.0, kernel=kernel, insecure_seed=s, **kw).fit(X[:n], y[:n])
            vals.append(np.mean((m.predict(X[n:]) - y[n:]) ** 2))
        err[kernel] = np.mean(vals)
    assert err["anova"] < 0.7 * err["gaussian"]
    assert err["anova"] < 0.5 * np.var(y[n:])
