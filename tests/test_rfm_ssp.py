"""Sufficient-statistics perturbation for random-feature regression (pysketch.rfm.ssp) and the
PrivateRFRegressor: the features' norm, the worst-case sensitivities by brute force, the
release's noise scales, a Clopper-Pearson audit, merging, and the estimator's surface."""

import math
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from pysketch.privacy import PrivacyLeakWarning
from pysketch.privacy.mechanisms import analytic_gaussian_sigma
from pysketch.rfm import PrivateRFRegressor, RandomFeatures, RFStatistics, release_statistics, solve_ridge
from pysketch.rfm import ssp

AUDIT_TAIL = 5e-7


def _features(d=3, N=8, seed=0, intercept=True, length_scale=0.5):
    return RandomFeatures(d, N, length_scale=length_scale, layout="unit", intercept=intercept, random_state=seed)


def _triu_norm(M):
    return float(np.linalg.norm(M[np.triu_indices(M.shape[0])]))


# ---------------------------------------------------------------- features and sensitivities


def test_unit_features_have_norm_one_and_entries_bounded_for_any_x():
    rf = _features()
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.standard_normal((500, 3)) * s for s in (1e-3, 1.0, 1e3, 1e8)])
    F = rf.transform(X)
    assert np.allclose((F ** 2).sum(1), 1.0, rtol=0, atol=1e-13)
    assert np.abs(F).max() <= rf.max_abs * (1 + 1e-12)


@pytest.mark.parametrize("intercept", [True, False])
def test_gram_sensitivity_is_attained_at_the_origin_and_never_exceeded(intercept):
    rf = _features(intercept=intercept)
    dG, db, dl = ssp.statistics_sensitivities(rf, 2.0, "add_remove")
    rng = np.random.default_rng(2)
    X = np.concatenate([np.zeros((1, 3)), rng.uniform(-5, 5, (3000, 3))])
    worst = max(_triu_norm(np.outer(f, f)) for f in rf.transform(X))
    assert worst <= dG
    assert worst >= dG * (1 - 1e-9)  # x = 0: cos = 1, sin = 0, sum phi^4 = a^2
    assert db == pytest.approx(2.0 * (1 + ssp.NORM_SLACK)) and dl == pytest.approx(1 + ssp.NORM_SLACK)


def test_replace_sensitivities_bound_every_pair():
    rf = _features(N=4)
    dG, db, dl = ssp.statistics_sensitivities(rf, 1.5, "replace")
    rng = np.random.default_rng(3)
    F = rf.transform(rng.uniform(-6, 6, (400, 3)))
    worst_G = 0.0
    for i in range(0, 400, 2):
        worst_G = max(worst_G, _triu_norm(np.outer(F[i], F[i]) - np.outer(F[i + 1], F[i + 1])))
    assert worst_G <= dG
    assert worst_G >= 0.8 * dG
    # b: phi y - phi' y' with |y - c|, |y' - c| <= B: at most 2B, attained with opposite labels
    assert np.linalg.norm(F[0] * 1.5 + F[0] * 1.5) <= db
    # lambda_min moves by at most 1 (Weyl) under a replacement
    G = F[10:40].T @ F[10:40]
    for i in range(5):
        G2 = G - np.outer(F[10 + i], F[10 + i]) + np.outer(F[100 + i], F[100 + i])
        assert abs(np.linalg.eigvalsh(G2)[0] - np.linalg.eigvalsh(G)[0]) <= dl


def test_lambda_min_sensitivity_brute_force():
    rf = _features(d=2, N=2, intercept=False)  # p = 4
    rng = np.random.default_rng(4)
    worst = 0.0
    for _ in range(300):
        F = rf.transform(rng.uniform(-3, 3, (rng.integers(3, 8), 2)))
        f = rf.transform(rng.uniform(-3, 3, (1, 2)))[0]
        G = F.T @ F
        worst = max(worst, np.linalg.eigvalsh(G + np.outer(f, f))[0] - np.linalg.eigvalsh(G)[0])
    assert 0 <= worst <= 1.0 + 1e-12


def test_statistics_need_the_unit_layout():
    with pytest.raises(ValueError, match="layout='unit'"):
        RFStatistics(RandomFeatures(2, 4, length_scale=1.0, layout="cos"), (0, 1))
    with pytest.raises(ValueError, match="target_bounds"):
        RFStatistics(_features(), (1, 1))


# ---------------------------------------------------------------- statistics: streaming and merging


def test_statistics_stream_and_merge_to_the_dense_sums():
    rf = _features()
    rng = np.random.default_rng(5)
    X, y = rng.standard_normal((700, 3)), rng.uniform(-1, 3, 700)
    whole = RFStatistics(rf, (-1, 3)).update(X, y)
    parts = RFStatistics(rf, (-1, 3)).update(X[:300], y[:300]) + RFStatistics(rf, (-1, 3)).update(X[300:], y[300:])
    F = rf.transform(X)
    assert np.allclose(whole.gram, F.T @ F, rtol=1e-12, atol=1e-12)
    assert np.allclose(whole.xty, F.T @ (y - 1.0), rtol=1e-12, atol=1e-12)
    assert np.allclose(parts.gram, whole.gram, atol=1e-11) and np.allclose(parts.xty, whole.xty, atol=1e-11)
    assert parts.count == whole.count == 700
    with pytest.raises(ValueError, match="cannot be merged"):
        whole + RFStatistics(_features(seed=1), (-1, 3))


def test_labels_outside_the_public_range_are_clipped_and_counted():
    rf = _features()
    with pytest.warns(RuntimeWarning, match="2 of 4 values of y lie outside"):
        s = RFStatistics(rf, (0, 1)).update(np.zeros((4, 3)), [0.5, 2.0, -3.0, 1.0])
    F = rf.transform(np.zeros((1, 3)))[0]
    assert np.allclose(s.xty, F * (0.0 + 0.5 - 0.5 + 0.5))


# ---------------------------------------------------------------- release


def test_release_noise_has_the_stated_scales():
    rf = _features(d=2, N=3)
    st = RFStatistics(rf, (0, 1)).update(np.random.default_rng(6).standard_normal((50, 2)), np.full(50, 0.5))
    eps, delta = 1.0, 1e-5
    G0, b0 = st.gram, st.xty
    draws = [release_statistics(st, eps, delta, insecure_seed=s) for s in range(300)]
    sig = analytic_gaussian_sigma(eps, delta, 1.0)
    dG, db, dl = ssp.statistics_sensitivities(rf, 0.5, "add_remove")
    sG, sb, sl = (math.sqrt(s) for s in ssp.DEFAULT_SHARES)
    assert draws[0].noise_std["gram"] == pytest.approx(sig * dG / sG, rel=1e-6)
    assert draws[0].noise_std["xty"] == pytest.approx(sig * db / sb, rel=1e-6)
    iu = np.triu_indices(G0.shape[0])
    zG = np.concatenate([(r.gram - G0)[iu] for r in draws]) / draws[0].noise_std["gram"]
    zb = np.concatenate([r.xty - b0 for r in draws]) / draws[0].noise_std["xty"]
    # standard normal: variance within the chi-square 1e-6 two-sided interval
    for z in (zG, zb):
        k = z.size
        lo, hi = stats.chi2.ppf([5e-7, 1 - 5e-7], k) / k
        assert lo <= np.mean(z ** 2) <= hi
    assert all(np.allclose(r.gram, r.gram.T) for r in draws[:5])
    assert draws[0].privacy["guarantee"] == "worst-case"


def test_release_charges_the_accountant_and_checks_its_arguments():
    from pysketch.privacy.accountant import BudgetAccountant, BudgetError

    st = RFStatistics(_features(), (0, 1)).update(np.zeros((3, 3)), [0, 1, 0.5])
    acc = BudgetAccountant(1.5, 1e-4)
    release_statistics(st, 1.0, 1e-5, accountant=acc, insecure_seed=0)
    with pytest.raises(BudgetError):
        release_statistics(st, 1.0, 1e-5, accountant=acc, insecure_seed=0)
    with pytest.raises(ValueError, match="epsilon"):
        release_statistics(st, 0.0, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        release_statistics(st, 1.0, 0.0)
    with pytest.raises(ValueError, match="neighbouring"):
        release_statistics(st, 1.0, 1e-5, neighbouring="swap")
    with pytest.raises(ValueError, match="shares"):
        release_statistics(st, 1.0, 1e-5, shares=(1, -1, 1))
    with pytest.raises(TypeError, match="stats"):
        release_statistics(np.zeros(3), 1.0, 1e-5)


def _cp_lower(k, n):
    return 0.0 if k == 0 else stats.beta.ppf(AUDIT_TAIL, k, n - k + 1)


def _cp_upper(k, n):
    return 1.0 if k == n else stats.beta.ppf(1 - AUDIT_TAIL, k + 1, n - k)


def _ssp_audit(n):
    """Neighbours D = {x1} and D' = D + {x = 0, y = upper}: the released (triu G, b, lambda_min),
    mapped back to the mechanism's scaled coordinates, projected on the unit direction of the
    difference; the event {projection >= c} with c maximising the expected bound."""
    eps, delta = 1.0, (1e-3 if n < 1_000_000 else 1e-5)
    rf = _features(d=1, N=1, intercept=False, length_scale=1.0)  # p = 2: 3 + 2 + 1 coordinates
    tb = (0.0, 1.0)
    x1 = np.array([[0.7]])
    D0 = RFStatistics(rf, tb).update(x1, [0.2])
    D1 = RFStatistics(rf, tb).update(np.concatenate([x1, [[0.0]]]), [0.2, 1.0])
    s = np.array(ssp.DEFAULT_SHARES)
    dG, db, dl = ssp.statistics_sensitivities(rf, 0.5, "add_remove")
    w = np.sqrt(s) / np.array([dG, db, dl])
    iu = np.triu_indices(2)

    def scaled(G, b, lam):
        return np.concatenate([G[iu] * w[0], b * w[1], [lam * w[2]]])

    v0 = scaled(D0.gram, D0.xty, D0.lambda_min())
    v1 = scaled(D1.gram, D1.xty, D1.lambda_min())
    u = (v1 - v0) / np.linalg.norm(v1 - v0)
    shift = float(np.linalg.norm(v1 - v0))
    assert shift <= 1.0 + 1e-9
    sig = analytic_gaussian_sigma(eps, delta, 1.0)

    def expected_bound(c):
        p0, p1 = stats.norm.sf(c / sig), stats.norm.sf((c - shift) / sig)
        low = _cp_lower(p1 * n, n) - delta
        return -10.0 if low <= 0 else math.log(low / _cp_upper(p0 * n, n))
    c = optimize.minimize_scalar(lambda c: -expected_bound(c), bounds=(0.0, 4 * sig), method="bounded").x

    def count(st):
        k = 0
        for _ in range(n):
            r = release_statistics(st, eps, delta)
            k += (scaled(r.gram, r.xty, r.lambda_min) - v0) @ u >= c
        return k
    k0, k1 = count(D0), count(D1)
    return math.log(max(_cp_lower(k1, n) - delta, 1e-300) / _cp_upper(k0, n)), eps


def test_ssp_release_privacy_audit_ci_size():
    lb, eps = _ssp_audit(20_000)
    assert lb <= eps
    assert lb >= 0.25 * eps, f"the audit has no power: lower bound {lb:.3f}"


@pytest.mark.slow
def test_ssp_release_privacy_audit_full_size():
    lb, eps = _ssp_audit(1_000_000)
    assert 0.5 * eps <= lb <= eps


# ---------------------------------------------------------------- ridge


def test_ada_ridge_follows_the_rule_and_fixed_ridge_is_exact():
    rf = _features(d=2, N=5)
    rng = np.random.default_rng(7)
    st = RFStatistics(rf, (0, 1)).update(rng.standard_normal((200, 2)), rng.uniform(0, 1, 200))
    r = release_statistics(st, 1.0, 1e-5, insecure_seed=1)
    theta, lam = solve_ridge(r, "ada")
    p = r.gram.shape[0]
    low = max(r.lambda_min - math.sqrt(2 * math.log(1 / ssp.RIDGE_RHO)) * r.noise_std["lambda_min"], 0)
    # issue 37: the ridge is RIDGE_EDGE_FRACTION (1/2) of the noise's spectral edge, less lambda_min's bound
    assert ssp.RIDGE_EDGE_FRACTION == 0.5
    assert lam == pytest.approx(max(0.0, 0.5 * 2 * math.sqrt(p) * r.noise_std["gram"] - low))
    big = 1e4
    theta2, lam2 = solve_ridge(r, big)
    assert lam2 == big
    J = np.eye(p)
    J[-1, -1] = 0.0  # the intercept is not penalised
    assert np.allclose(theta2, np.linalg.solve(r.gram + big * J, r.xty), rtol=1e-9)
    with pytest.raises(ValueError, match="regularization"):
        solve_ridge(r, -1.0)


# ---------------------------------------------------------------- estimator


def _data(n=6000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (n, 2))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(n)
    return X, y


def test_private_regressor_learns_and_beats_the_mean_at_moderate_n():
    X, y = _data(20000)
    Xt, yt = _data(4000, seed=1)
    m = PrivateRFRegressor(1.0, 1e-5, bounds=([0, 0], [1, 1]), target_bounds=(-1, 3), n_frequencies=32,
                           random_state=0, insecure_seed=3).fit(X, y)
    mse = np.mean((m.predict(Xt) - yt) ** 2)
    assert mse < 0.5 * np.var(yt)
    ref = PrivateRFRegressor(None, bounds=([0, 0], [1, 1]), target_bounds=(-1, 3), n_frequencies=32,
                             random_state=0).fit(X, y)
    assert np.mean((ref.predict(Xt) - yt) ** 2) < 0.02
    assert m.coef_.shape == (65,) and m.intercept_ == pytest.approx(0.5 * sum(m.scaling_.target_range))
    assert m.privacy_["epsilon"] == 1.0 and m.privacy_["guarantee"] == "worst-case"
    parts = m.privacy_["parts"]
    assert parts["scaling"]["epsilon"] + parts["statistics"]["epsilon"] == pytest.approx(1.0)
    assert parts["scaling"]["delta"] + parts["statistics"]["delta"] == pytest.approx(1e-5)
    box = PrivateRFRegressor(1.0, 1e-5, bounds=([0, 0], [1, 1]), target_bounds=(-1, 3), n_frequencies=32,
                             scaling="box", random_state=0, insecure_seed=3).fit(X, y)
    assert box.intercept_ == 1.0 and np.mean((box.predict(Xt) - yt) ** 2) < 0.5 * np.var(yt)


def test_private_regressor_is_reproducible_with_seeds_and_varies_without():
    X, y = _data(500)
    kw = dict(bounds=([0, 0], [1, 1]), target_bounds=(-1, 3), n_frequencies=8, random_state=0)
    a = PrivateRFRegressor(**kw, insecure_seed=1).fit(X, y).coef_
    b = PrivateRFRegressor(**kw, insecure_seed=1).fit(X, y).coef_
    c = PrivateRFRegressor(**kw).fit(X, y).coef_
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_private_regressor_warns_when_bounds_come_from_the_data():
    X, y = _data(200)
    with pytest.warns(PrivacyLeakWarning, match="bounds not given"):
        PrivateRFRegressor(1.0, target_bounds=(-1, 3), sketch_size=4).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="target_bounds not given"):
        PrivateRFRegressor(1.0, bounds=([0, 0], [1, 1]), sketch_size=4).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PrivateRFRegressor(1.0, bounds=([0, 0], [1, 1]), target_bounds=(-1, 3), sketch_size=4).fit(X, y)


@pytest.mark.parametrize("kw, match", [
    (dict(epsilon=-1.0), "epsilon"), (dict(delta=1.5), "delta"), (dict(n_frequencies=0), "n_frequencies"),
    (dict(length_scale=-2.0), "length_scale"), (dict(neighbouring="x"), "neighbouring"),
    (dict(target_bounds=(2, 1)), "target_bounds"), (dict(bounds=([0, 0, 0], [1, 1, 1])), "bounds"),
])
def test_private_regressor_bad_arguments(kw, match):
    X, y = _data(50)
    with pytest.raises(ValueError, match=match):
        PrivateRFRegressor(**{**dict(bounds=([0, 0], [1, 1]), target_bounds=(-1, 3)), **kw}).fit(X, y)


def test_private_regressor_rejects_nan_and_wrong_shapes():
    X, y = _data(50)
    est = PrivateRFRegressor(bounds=([0, 0], [1, 1]), target_bounds=(-1, 3), n_frequencies=4)
    with pytest.raises(ValueError, match="y"):
        est.fit(X, np.where(np.arange(50) == 3, np.nan, y))
    with pytest.raises(ValueError, match="inconsistent"):
        est.fit(X, y[:-1])
    est.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(np.zeros((3, 5)))


# ---------------------------------------------------------------- the private scaling


def test_scaling_sensitivity_brute_force():
    from pysketch.rfm.scaling import scaling_sensitivity

    d = 3
    rng = np.random.default_rng(8)

    def r(u, v):
        return np.concatenate([[1.0], u, u * u, [v, v * v]])
    corners = [r(np.ones(d), 1.0), r(np.zeros(d), 0.0)]
    assert max(np.linalg.norm(c) for c in corners) == pytest.approx(scaling_sensitivity(d, "add_remove"))
    worst = np.linalg.norm(corners[0] - corners[1])
    assert worst == pytest.approx(scaling_sensitivity(d, "replace"))
    for _ in range(2000):
        a, b = rng.uniform(0, 1, (2, d + 1))
        assert np.linalg.norm(r(a[:d], a[d]) - r(b[:d], b[d])) <= scaling_sensitivity(d, "replace") + 1e-12
        assert np.linalg.norm(r(a[:d], a[d])) <= scaling_sensitivity(d, "add_remove") + 1e-12


def test_private_scaling_estimates_location_spread_and_a_label_range():
    from pysketch.rfm.scaling import LABEL_RADIUS_SPREADS, private_scaling

    from pysketch.rfm import scaling

    rng = np.random.default_rng(9)
    n = 200_000
    X = rng.normal([10.0, -3.0, 0.0], [2.0, 1.0, 0.001], (n, 3))
    y = rng.normal(40.0, 3.0, n)
    box = (np.full(3, -20.0), np.full(3, 20.0))
    sc = private_scaling(X, y, box, (0, 100), 1.0, 1e-6, insecure_seed=0)
    assert np.allclose(sc.x_centre, [10, -3, 0], atol=0.1) and np.allclose(sc.x_scale[:2], [2, 1], rtol=0.1)
    # the third spread is far below what the noise resolves: floored at 3 sigma / n (second-moment units)
    floor = math.sqrt(3 * sc.privacy["sigma"] / sc.count) * 40
    assert sc.x_scale[2] == pytest.approx(floor, rel=1e-9)
    assert scaling.MIN_SPREAD * 40 <= floor
    lo, hi = sc.target_range
    assert 0.5 * (lo + hi) == pytest.approx(40, abs=0.2) and 0.5 * (hi - lo) == pytest.approx(
        LABEL_RADIUS_SPREADS * 3, rel=0.05)
    # a tiny data set: the spreads are floored, never zero or NaN
    tiny = private_scaling(X[:3], y[:3], box, (0, 100), 0.1, 1e-6, insecure_seed=1)
    assert np.all(tiny.x_scale > 0) and np.isfinite(tiny.x_scale).all()
    assert 0 <= tiny.target_range[0] < tiny.target_range[1] <= 100


def test_private_fit_charges_the_whole_budget_once():
    from pysketch.privacy.accountant import BudgetAccountant

    X, y = _data(300)
    acc = BudgetAccountant(1.0, 1e-5)
    PrivateRFRegressor(1.0, 1e-5, bounds=([0, 0], [1, 1]), target_bounds=(-1, 3), n_frequencies=4,
                       accountant=acc).fit(X, y)
    assert acc.spent[0] == pytest.approx(1.0) and acc.spent[1] == pytest.approx(1e-5)


def test_check_estimator():
    pytest.importorskip("sklearn")
    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_estimator(PrivateRFRegressor(n_frequencies=8, random_state=0, insecure_seed=0))
        check_estimator(PrivateRFRegressor(None, n_frequencies=8, random_state=0))


def test_auto_frequencies_balance_the_ridge_against_the_gram_diagonal():
    from pysketch.privacy.mechanisms import analytic_gaussian_sigma
    from pysketch.rfm.estimators import (AUTO_MAX_FREQUENCIES, AUTO_MIN_FREQUENCIES, AUTO_RIDGE_TO_DIAGONAL,
                                         auto_frequencies)

    assert AUTO_RIDGE_TO_DIAGONAL == 0.25  # issue 37 (was 1/8)

    for n, eps in [(43000, 0.1), (262000, 1.0), (20000, 1.0)]:
        N = auto_frequencies(n, eps, 1e-5)
        p = 2 * N + 1
        sigma_g = analytic_gaussian_sigma(eps, 1e-5, 1.0) * math.sqrt(0.5 / ssp.DEFAULT_SHARES[0])
        # the rule's p is rounded down to an odd integer: ridge / diagonal just below 1/4
        ratio = 2 * math.sqrt(p) * sigma_g / (n / p)
        assert 0.8 / 4 <= ratio <= 1 / 4 + 1e-12
    assert auto_frequencies(10, 0.1, 1e-5) == AUTO_MIN_FREQUENCIES
    assert auto_frequencies(1e12, 10.0, 1e-5) == AUTO_MAX_FREQUENCIES
    X, y = _data(3000)
    m = PrivateRFRegressor(1.0, bounds=([0, 0], [1, 1]), target_bounds=(-1, 3), random_state=0).fit(X, y)
    assert m.features_.n_frequencies == auto_frequencies(m.scaling_.count, 0.9, 0.9e-5)


def test_release_scaling_refuses_a_bad_target_range_before_spending():
    # release_scaling (the scaling's release from sums already taken) checked bounds but not
    # target_bounds: reversed ones gave a clipping range with lower > upper, silently
    from pysketch.privacy import BudgetAccountant
    from pysketch.rfm.scaling import release_scaling, scaling_sums

    X, y = np.random.default_rng(0).uniform(size=(100, 2)), np.random.default_rng(1).uniform(size=100)
    total = scaling_sums(X, y, 0, np.zeros(2), np.ones(2), 0.0, 1.0)
    acc = BudgetAccountant(10.0, 1e-3)
    for bad in ((1.0, 0.0), (0.0, np.inf), (0.0,), "ab"):
        with pytest.raises(ValueError, match="target_bounds"):
            release_scaling(total, ([0, 0], [1, 1]), bad, 0.5, 1e-6, accountant=acc)
    assert acc.spent == (0.0, 0.0)
    lo, hi = release_scaling(total, ([0, 0], [1, 1]), (0, 1), 0.5, 1e-6, accountant=acc).target_range
    assert 0.0 <= lo < hi <= 1.0


def test_auto_frequencies_follow_the_relation():
    # under 'replace' the Gram matrix's sensitivity is sqrt(2) times add/remove's, so the
    # noise sigma_G is too, and p = (count / (8 sigma_G))^(2/3) shrinks by 2^(1/3)
    from pysketch.privacy.mechanisms import analytic_gaussian_sigma
    from pysketch.rfm.estimators import DEFAULT_SHARES, auto_frequencies

    count, eps, delta = 2.0e5, 1.0, 1e-6
    share = DEFAULT_SHARES[0] / sum(DEFAULT_SHARES)
    for relation, relative in (("add_remove", math.sqrt(0.5)), ("replace", 1.0)):
        sigma = analytic_gaussian_sigma(eps, delta, 1.0) * relative / math.sqrt(share)
        p = (count / (8.0 * sigma)) ** (2.0 / 3.0)
        assert auto_frequencies(count, eps, delta, neighbouring=relation) == int((p - 1.0) / 2.0)
    assert auto_frequencies(count, eps, delta, neighbouring="replace") < auto_frequencies(count, eps, delta)
    with pytest.raises(ValueError, match="neighbouring"):
        auto_frequencies(count, eps, delta, neighbouring="swap")


def test_a_clean_fit_uses_the_ridge_asked_for():
    # PrivateRFRegressor(epsilon=None) ignored regularization= (ridge_ stayed at the tiny
    # default): a larger ridge must shrink the coefficients and be reported as ridge_
    from pysketch.rfm.estimators import PrivateRFRegressor

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(400, 3))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=400)
    kw = dict(epsilon=None, bounds=(-1.0, 1.0), target_bounds=(-3.0, 3.0), sketch_size=40, random_state=0)
    default = PrivateRFRegressor(**kw).fit(X, y)
    assert default.ridge_ < 1.0
    norms = []
    for ridge in (10.0, 1000.0):
        model = PrivateRFRegressor(regularization=ridge, **kw).fit(X, y)
        assert model.ridge_ == ridge
        norms.append(np.linalg.norm(model.coef_[:-1]))
    assert np.linalg.norm(default.coef_[:-1]) > norms[0] > norms[1]
