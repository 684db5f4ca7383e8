"""Baselines of the DP random-feature model (pysketch.rfm.baselines) and the two mechanism
additions they use (pysketch.privacy.mechanisms.L2Laplace, gaussian_noise)."""

import math
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from pysketch.privacy import Gaussian, PrivacyLeakWarning
from pysketch.privacy.accountant import BudgetAccountant
from pysketch.privacy.mechanisms import L2Laplace, gaussian_noise
from pysketch.rfm import RandomFeatures
from pysketch.rfm import baselines as B
from pysketch.rfm import published as P
from pysketch.rfm.solvers import min_norm

# Clopper-Pearson audits as in tests/test_privacy.py: one-sided bounds at 1 - 5e-7 each, so a correct
# mechanism fails `lb <= eps` with probability at most 1e-6 (fresh OS-entropy noise, as in production).
AUDIT_TAIL = 5e-7


def _cp_lower(k, n, tail=AUDIT_TAIL):
    return 0.0 if k == 0 else stats.beta.ppf(tail, k, n - k + 1)


def _cp_upper(k, n, tail=AUDIT_TAIL):
    return 1.0 if k == n else stats.beta.ppf(1 - tail, k + 1, n - k)


def _audit_counts(k0, k1, n, delta):
    return math.log(max(_cp_lower(k1, n) - delta, 1e-300) / _cp_upper(k0, n))


# ---------------------------------------------------------------- L2Laplace


def test_l2laplace_second_moment_radius_and_direction_laws():
    # Statistical tests at a false-alarm rate of about 1e-6 each (|z| < 5 sigma; p-values > 1e-6), on
    # seeded draws (deterministic in CI).
    D, sens, eps, n = 6, 1.5, 0.7, 40_000
    L = L2Laplace(eps, sens, insecure_seed=11)
    s = sens / eps
    z = L.randomise_rows(np.zeros((n, D)))
    r = np.linalg.norm(z, axis=1)
    assert L.second_moment(D) == pytest.approx(D * (D + 1) * s * s)
    assert L.variance(D) == pytest.approx((D + 1) * s * s)
    # E ||z||^2 = E R^2, Var R^2 = s^4 [D(D+1)(D+2)(D+3) - D^2 (D+1)^2]
    sd = s * s * math.sqrt(D * (D + 1) * (D + 2) * (D + 3) - (D * (D + 1)) ** 2) / math.sqrt(n)
    assert abs(np.mean(r ** 2) - L.second_moment(D)) < 5 * sd
    # per-coordinate variance (D + 1) s^2, uncorrelated coordinates
    cov = np.cov(z.T)
    np.testing.assert_allclose(np.diag(cov), L.variance(D), rtol=0.06)
    assert np.max(np.abs(cov - np.diag(np.diag(cov)))) < 0.06 * L.variance(D)
    # radius ~ Gamma(D, scale s); direction uniform: (u_1 + 1) / 2 ~ Beta((D-1)/2, (D-1)/2)
    assert stats.kstest(r, stats.gamma(D, scale=s).cdf).pvalue > 1e-6
    u1 = z[:, 0] / r
    assert stats.kstest((u1 + 1) / 2, stats.beta((D - 1) / 2, (D - 1) / 2).cdf).pvalue > 1e-6


def test_l2laplace_randomise_seeding_and_records():
    a = L2Laplace(1.0, 1.0, insecure_seed=5).randomise(np.ones(7))
    b = L2Laplace(1.0, 1.0, insecure_seed=5).randomise(np.ones(7))
    assert np.array_equal(a, b) and a.shape == (7,)
    assert not L2Laplace(1.0, 1.0, insecure_seed=5).secure_noise
    L = L2Laplace(1.0, 1.0)
    assert L.secure_noise and not L.exact_noise
    assert not np.array_equal(L.randomise(np.zeros(5)), L.randomise(np.zeros(5)))
    c = L.randomise(np.zeros(3, complex))
    assert c.dtype == np.complex128 and c.shape == (3,)
    with pytest.raises(ValueError, match="sensitivity"):
        L2Laplace(1.0, -1.0)
    with pytest.raises(ValueError, match="epsilon"):
        L2Laplace(0.0, 1.0)
    with pytest.raises(ValueError, match="finite"):
        L.randomise(np.array([np.inf]))
    with pytest.raises(TypeError, match="insecure_seed"):
        L2Laplace(1.0, 1.0, insecure_seed="x")


def _l2laplace_audit(n):
    # D = 2, neighbours f = 0 and f = (Delta, 0); event {||z|| - ||z - v|| >= 0.9 Delta} (the privacy loss
    # statistic; threshold fixed in advance from a simulation, not from these draws). Expected lower bound
    # about 0.85 at n = 1e5 and 0.9 at 1e6.
    eps, sens = 1.0, 1.0
    L = L2Laplace(eps, sens)
    v = np.array([sens, 0.0])

    def stat(z):
        return np.linalg.norm(z, axis=1) - np.linalg.norm(z - v, axis=1)
    k0 = int(np.sum(stat(L.randomise_rows(np.zeros((n, 2)))) >= 0.9 * sens))
    k1 = int(np.sum(stat(L.randomise_rows(np.tile(v, (n, 1)))) >= 0.9 * sens))
    return _audit_counts(k0, k1, n, 0.0), eps


def _ridge_pair(lam=10.0):
    # m = 1, p = 1: (phi, y) = (1, 1) replaced by (1, -1) moves theta by 2 / (1 + lam), 0.69 of Delta at lam = 10
    F = np.array([[1.0]])
    t0 = B.ridge_fit(F, np.array([1.0]), lam)[0]
    t1 = B.ridge_fit(F, np.array([-1.0]), lam)[0]
    return t0, t1


def _private_ridge_audit(n):
    # The release theta* + N(0, sigma^2) of private_ridge on a worst-case-like replace-one pair, with the
    # record's sensitivity and calibration (drawn by the same Gaussian mechanism, n at a time; one
    # private_ridge call per draw would take hours). delta = 1e-3 at CI size, 1e-5 at full size.
    eps, delta, lam = 1.0, (1e-3 if n < 1_000_000 else 1e-5), 10.0
    t0, t1 = _ridge_pair(lam)
    _, rec = B.private_ridge(np.array([[1.0]]), np.array([1.0]), eps, delta, lam=lam, feature_bound=1.0,
                             label_bound=1.0, insecure_seed=0)
    G = Gaussian(eps, delta, rec["sensitivity"])
    s = G.scale
    assert rec["sigma"] == pytest.approx(s, rel=1e-8)
    lo, hi = min(t0, t1), max(t0, t1)

    def expected_bound(c):
        p0, p1 = stats.norm.sf((c - lo) / s), stats.norm.sf((c - hi) / s)
        low = _cp_lower(p1 * n, n) - delta
        return -10.0 if low <= 0 else math.log(low / _cp_upper(p0 * n, n))
    c = optimize.minimize_scalar(lambda c: -expected_bound(c), bounds=(lo, lo + 4 * s), method="bounded").x
    k0 = int(np.sum(G.randomise(np.full(n, lo)) >= c))
    k1 = int(np.sum(G.randomise(np.full(n, hi)) >= c))
    return _audit_counts(k0, k1, n, delta), eps


@pytest.mark.parametrize("audit, power", [(_l2laplace_audit, 0.5), (_private_ridge_audit, 0.25)])
def test_privacy_audit_ci_size(audit, power):
    lb, eps = audit(100_000)
    assert lb <= eps
    assert lb >= power * eps, f"the audit has no power: lower bound {lb:.3f} for claimed {eps}"


@pytest.mark.slow
@pytest.mark.parametrize("audit, power", [(_l2laplace_audit, 0.5), (_private_ridge_audit, 0.25)])
def test_privacy_audit_full_size(audit, power):
    lb, eps = audit(1_000_000)
    assert power * eps <= lb <= eps


# ---------------------------------------------------------------- gaussian_noise


def test_gaussian_noise_given_sigma_no_claim():
    out = gaussian_noise(np.full(20_000, 3.0), 0.25, insecure_seed=4)
    assert np.mean(out) == pytest.approx(3.0, abs=5 * 0.25 / math.sqrt(20_000))
    assert np.var(out) == pytest.approx(0.0625, rel=0.05)
    assert stats.kstest((out - 3.0) / 0.25, "norm").pvalue > 1e-6
    g = 2.0 ** (math.frexp(0.25 / 2 ** 30)[1] - 1)  # on the grid
    assert np.all(np.abs(out / g - np.rint(out / g)) == 0)
    assert np.array_equal(gaussian_noise(np.zeros(5), 1.0, insecure_seed=1),
                          gaussian_noise(np.zeros(5), 1.0, insecure_seed=1))
    assert gaussian_noise(np.zeros((2, 3), complex), 1.0).shape == (2, 3)
    with pytest.raises(ValueError, match="sigma"):
        gaussian_noise(np.zeros(3), 0.0)


# ---------------------------------------------------------------- Gamma baseline


def test_gamma_output_perturbation_records():
    coef = np.zeros(40)
    noisy, rec = B.gamma_output_perturbation(coef, 0.5, n_frequencies=40, insecure_seed=1)
    assert rec["sensitivity"] == pytest.approx(4.0) and rec["guarantee"] == "conditional"
    assert rec["delta"] == 0.0 and rec["neighbouring"] == "replace or remove"
    assert rec["noise_covariance"] == pytest.approx(41 * (4.0 / 0.5) ** 2)
    assert rec["second_moment"] == pytest.approx(40 * 41 * 64.0)
    with pytest.warns(PrivacyLeakWarning):
        _, rec = B.gamma_output_perturbation(coef, 1.0, n_frequencies=1600, calibration="paper", insecure_seed=1)
    assert rec["sensitivity"] == pytest.approx(0.1) and rec["guarantee"] == "none"
    # paper's "Gamma" number (notes 5.6): (N + 1) 16 / (N eps^2) ~ 16 / eps^2 with ||phi||^2 ~ 1
    assert P.expected_test_mse_gamma(0.0, 1.0, 4 / math.sqrt(2000), 1.0, 2000) == pytest.approx(16.008)
    with pytest.raises(ValueError, match="calibration"):
        B.gamma_output_perturbation(coef, 1.0, n_frequencies=40, calibration="x")
    with pytest.raises(ValueError, match="eta"):
        B.gamma_output_perturbation(coef, 1.0, n_frequencies=40, eta=0.7)


# ---------------------------------------------------------------- objective perturbation


def _design(seed=0, m=60, N=150, d=3):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (m, d))
    F = RandomFeatures(d, N, frequency_std=5.0, random_state=seed).transform(X)
    y = (np.sin(4 * X[:, 0]) + X[:, 1]) / (2 * math.sqrt(m))
    return F, y


def test_objective_perturbation_and_dp_sgd_warn_that_they_make_no_dp_claim():
    F, y = _design()
    with pytest.warns(PrivacyLeakWarning, match="NOT differentially private"):
        B.objective_perturbation(F, y, 1.0, insecure_seed=0)
    with pytest.warns(PrivacyLeakWarning, match="no verified DP claim"):
        B.dp_sgd(F, y, 1.0, 1e-5, random_state=0, insecure_seed=1)
    with warnings.catch_warnings():  # the worst-case ones do not warn
        warnings.simplefilter("error", PrivacyLeakWarning)
        B.objective_perturbation_ball(F / np.linalg.norm(F, axis=1).max(), np.clip(y, -1, 1), 1.0, lam=1.0,
                                      insecure_seed=0)


@pytest.mark.filterwarnings("ignore::pysketch.privacy.PrivacyLeakWarning")
def test_objective_perturbation_matches_code_and_covariance():
    F, y = _design()
    m, p = F.shape
    eps, lam = 1.0, 1e-3
    theta, rec = B.objective_perturbation(F, y, eps, lam=lam, insecure_seed=0)
    # the code's epsilon' / Delta branch (c = 2): here log(1 + 2c/(m lam) + ...) > eps
    assert rec["epsilon_prime"] == pytest.approx(eps / 2)
    assert rec["extra_regularisation"] == pytest.approx(2 / (m * math.expm1(eps / 4)) - lam)
    assert rec["guarantee"] == "none" and rec["neighbouring"] == "replace"
    kappa = 2 * lam + rec["extra_regularisation"]
    M = 2 * F.T @ F / m + kappa * np.eye(p)
    cov_dense = (p + 1) * (2 / rec["epsilon_prime"]) ** 2 * np.linalg.matrix_power(np.linalg.inv(M), 2) / m ** 2
    np.testing.assert_allclose(np.asarray(rec["noise_covariance"]), cov_dense, rtol=1e-7,
                               atol=1e-9 * np.abs(cov_dense).max())
    # Monte Carlo: mean = the regularised solve, E (z^T phi)^2 = the closed form (10%)
    theta_reg = np.linalg.solve(M, 2 * F.T @ y / m)
    draws = np.array([B.objective_perturbation(F, y, eps, lam=lam, insecure_seed=s)[0] for s in range(400)])
    Z = draws - theta_reg
    q_mc = np.mean((Z @ F.T) ** 2)
    q_cf = np.mean(P.noise_quadratic_form(rec["noise_covariance"], F))
    assert q_mc == pytest.approx(q_cf, rel=0.10)
    # large lam: no extra regularisation, epsilon' = eps - log(1 + 2c/(m lam) + (c/(m lam))^2)
    _, rec2 = B.objective_perturbation(F, y, eps, lam=1.0, insecure_seed=0)
    assert rec2["extra_regularisation"] == 0.0
    assert rec2["epsilon_prime"] == pytest.approx(eps - math.log(1 + 4 / m + 4 / m ** 2))
    with pytest.raises(ValueError, match="lam"):
        B.objective_perturbation(F, y, 1.0, lam=0.0)
    with pytest.raises(ValueError, match="y"):
        B.objective_perturbation(F, y[:-1], 1.0)


def test_noise_quadratic_form_kinds():
    rng = np.random.default_rng(0)
    Phi = rng.standard_normal((5, 4))
    np.testing.assert_allclose(P.noise_quadratic_form(2.0, Phi), 2 * np.sum(Phi ** 2, axis=1))
    S = np.diag([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_allclose(P.noise_quadratic_form(S, Phi), np.einsum("ij,jk,ik->i", Phi, S, Phi))
    V = np.linalg.qr(rng.standard_normal((4, 2)))[0]
    C = P.LowRankCovariance(0.5, V, [1.0, 2.0])
    np.testing.assert_allclose(P.noise_quadratic_form(C, Phi), P.noise_quadratic_form(np.asarray(C), Phi))
    assert C.trace() == pytest.approx(np.trace(np.asarray(C)))


# ---------------------------------------------------------------- DP-SGD


@pytest.mark.filterwarnings("ignore::pysketch.privacy.PrivacyLeakWarning")
def test_dp_sgd_noise_formula_and_run():
    sigma, sens = B.dp_sgd_sigma(1000, 1.0, 1e-5)
    assert sigma == pytest.approx(0.751, abs=0.001)  # notes 5.6: 0.751 / eps
    assert sigma ** 2 == pytest.approx(0.564, abs=0.001)
    assert B.dp_sgd_sigma(1000, 0.5, 1e-5)[0] ** 2 == pytest.approx(2.25, abs=0.01)
    assert B.expected_test_mse_dp_sgd(0.0, 1.0, 1000, 1.0, 1e-5) == pytest.approx(sigma ** 2)
    F, y = _design()
    coef, rec = B.dp_sgd(F, y, 1.0, 1e-5, random_state=0, insecure_seed=1)
    assert coef.shape == (F.shape[1],) and rec["guarantee"] == "unverified"
    assert rec["sigma"] == pytest.approx(B.dp_sgd_sigma(F.shape[0], 1.0, 1e-5)[0])
    assert rec["noise_covariance"] == pytest.approx(rec["sigma"] ** 2)
    with pytest.raises(ValueError, match="step"):
        B.dp_sgd(F, y, 1.0, 1e-5, step=-1.0)


# ---------------------------------------------------------------- private ridge


def test_ridge_sensitivity_formula():
    m, lam, bp, by = 50, 0.3, 1.2, 0.8
    L = 2 * bp * (bp * by / math.sqrt(lam) + by)
    assert B.ridge_sensitivity(m, lam, bp, by) == pytest.approx(2 * L / (m * 2 * lam))
    F = np.random.default_rng(0).standard_normal((7, 3))
    y = np.arange(7.0)
    np.testing.assert_allclose(B.ridge_fit(F, y, 0.2), np.linalg.solve(F.T @ F / 7 + 0.2 * np.eye(3), F.T @ y / 7))
    Fw = np.random.default_rng(1).standard_normal((3, 7))  # p > m: the dual solve
    np.testing.assert_allclose(B.ridge_fit(Fw, y[:3], 0.2),
                               np.linalg.solve(Fw.T @ Fw / 3 + 0.2 * np.eye(7), Fw.T @ y[:3] / 3))


def _on_ball(v):
    n = np.linalg.norm(v)
    return v if n <= 1 else v / n


@pytest.mark.parametrize("lam, tight", [(2.0, 0.4), (10.0, 0.6)])
def test_private_ridge_sensitivity_brute_force(lam, tight):
    # Random data sets and adversarial replacements (random restarts of Nelder-Mead over the whole data set and
    # the replacing record, features in the unit ball, labels in [-1, 1]): never above Delta, and within a
    # factor ~1.5-2.5 of it (measured 0.52-0.75 of Delta for lam = 2-10 with more restarts).
    m, p = 3, 2
    Delta = B.ridge_sensitivity(m, lam, 1.0, 1.0)
    rng = np.random.default_rng(7)

    def gap(w):
        Phi = np.array([_on_ball(r) for r in w[:m * p].reshape(m, p)])
        y = np.tanh(w[m * p:m * p + m])
        Phi2, y2 = Phi.copy(), y.copy()
        Phi2[0], y2[0] = _on_ball(w[m * p + m:m * p + m + p]), np.tanh(w[-1])
        return np.linalg.norm(B.ridge_fit(Phi, y, lam) - B.ridge_fit(Phi2, y2, lam))
    best = 0.0
    for _ in range(200):  # random data sets, random replacements
        best = max(best, gap(rng.standard_normal(m * p + m + p + 1) * 2))
    for _ in range(4):
        res = optimize.minimize(lambda w: -gap(w), rng.standard_normal(m * p + m + p + 1) * 2, method="Nelder-Mead",
                                options=dict(maxiter=2500, xatol=1e-8, fatol=1e-12))
        best = max(best, -res.fun)
    assert best <= Delta * (1 + 1e-9)
    assert best >= tight * Delta, (best, Delta)


def test_private_ridge_records_bounds_and_paper_mode():
    F, y = _design()
    m = F.shape[0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        theta, rec = B.private_ridge(F, y * 100, 1.0, 1e-5, lam=0.1, feature_bound=0.9, label_bound=0.05,
                                     insecure_seed=0)
    messages = " | ".join(str(w.message) for w in caught)
    assert "rescaled onto the ball" in messages and f"{m} of {m} labels exceeded" in messages
    assert rec["n_rescaled"] > 0 and rec["n_clipped"] > 0
    assert rec["guarantee"] == "worst-case" and rec["neighbouring"] == "replace"
    assert rec["sensitivity"] == pytest.approx(B.ridge_sensitivity(m, 0.1, 0.9, 0.05))
    assert rec["sigma"] >= Gaussian(1.0, 1e-5, rec["sensitivity"]).scale
    with pytest.warns(PrivacyLeakWarning, match="NOT differentially private"):
        _, rec = B.private_ridge(F, y, 1.0, 1e-5, lam=0.1, feature_bound=2.0, label_bound=1.0,
                                 calibration="paper", insecure_seed=0)
    assert rec["sensitivity"] == pytest.approx(2 / (m * 0.1)) and rec["guarantee"] == "none"
    assert rec["sigma"] == pytest.approx(math.sqrt(2 * math.log(1.25e5)) * 2 / (m * 0.1))
    for kwargs, match in [(dict(lam=0.0), "lam"), (dict(feature_bound=-1.0), "feature_bound"),
                          (dict(label_bound=0.0), "label_bound"), (dict(calibration="x"), "calibration"),
                          (dict(mechanism="x"), "mechanism")]:
        args = dict(lam=0.1, feature_bound=2.0, label_bound=1.0)
        args.update(kwargs)
        with pytest.raises(ValueError, match=match):
            B.private_ridge(F, y, 1.0, 1e-5, **args)
    with pytest.raises(ValueError, match="delta"):
        B.private_ridge(F, y, 1.0, 0.0, lam=0.1, feature_bound=2.0, label_bound=1.0)


def test_min_norm_gamma_and_ridge_expected_mse_monte_carlo():
    # private_ridge's closed form E test MSE = MSE(theta*) + sigma^2 mean ||phi||^2 (10%)
    F, y = _design(seed=3, m=80, N=120)
    Ft, yt = F[:40], y[:40]
    theta = B.ridge_fit(F, y, 0.05)
    mse_np = np.mean((Ft @ theta - yt) ** 2)
    mses, rec = [], None
    for s in range(60):
        noisy, rec = B.private_ridge(F, y, 2.0, 1e-5, lam=0.05, feature_bound=2 ** 0.5, label_bound=1.0,
                                     insecure_seed=s)
        mses.append(np.mean((Ft @ noisy - yt) ** 2))
    expected = P.expected_test_mse(mse_np, np.mean(np.sum(Ft ** 2, axis=1)), rec["sigma"])
    assert np.mean(mses) == pytest.approx(expected, rel=0.10)
    # and the min-norm coefficients through the solvers module feed the Gamma baseline
    coef = min_norm(F[:, :], y, "pinv")[0]
    noisy, rec = B.gamma_output_perturbation(coef, 1.0, n_frequencies=F.shape[1], insecure_seed=2)
    assert noisy.shape == coef.shape


# ---------------------------------------------------------------- objective perturbation over a ball


def _ball_problem(seed, m, p):
    rng = np.random.default_rng(seed)
    F = rng.standard_normal((m, p)) / math.sqrt(p)
    y = rng.uniform(-1, 1, m)
    return F, y, rng


@pytest.mark.parametrize("m, p, radius, active", [(30, 6, 0.3, True), (5, 9, 0.2, True), (30, 6, 50.0, False)])
def test_ridge_ball_solve_matches_scipy(m, p, radius, active):
    F, y, rng = _ball_problem(m + p, m, p)
    kappa = 0.05
    lin = rng.standard_normal(p) * 20

    def obj(t):
        return np.sum((F @ t - y) ** 2) / m + 0.5 * kappa * t @ t + lin @ t / m

    def grad(t):
        return 2 * F.T @ (F @ t - y) / m + kappa * t + lin / m
    theta, mu = B.ridge_ball_solve(F, y, kappa=kappa, radius=radius, linear=lin)
    assert np.linalg.norm(theta) <= radius * (1 + 1e-12)
    assert (mu > 0) == active
    # KKT: (A + mu I) theta = g, and ||theta|| = R when mu > 0
    A = 2 * F.T @ F / m + kappa * np.eye(p)
    np.testing.assert_allclose((A + mu * np.eye(p)) @ theta, 2 * F.T @ y / m - lin / m, atol=1e-10)
    if active:
        assert np.linalg.norm(theta) == pytest.approx(radius, rel=1e-10)
    # an independent solver: SLSQP with the ball as an inequality constraint
    cons = {"type": "ineq", "fun": lambda t: radius ** 2 - t @ t, "jac": lambda t: -2 * t}
    ref = optimize.minimize(obj, np.zeros(p), jac=grad, constraints=[cons], method="SLSQP",
                            options=dict(ftol=1e-15, maxiter=500)).x
    np.testing.assert_allclose(theta, ref, atol=1e-6)
    ref = ref * min(1.0, radius / np.linalg.norm(ref))  # SLSQP may end a hair outside the ball
    assert obj(theta) <= obj(ref) + 1e-12


def test_objective_perturbation_ball_noise_off_in_ball_and_records():
    F, y, _ = _ball_problem(1, 40, 7)
    F /= np.linalg.norm(F, axis=1).max()
    lam = 0.01
    # epsilon huge: ||b|| ~ 2 L p / epsilon is negligible, no extra ridge; R large: the ridge fit
    theta, rec = B.objective_perturbation_ball(F, y, 1e13, lam=lam, radius=1e3, insecure_seed=0)
    np.testing.assert_allclose(theta, B.ridge_fit(F, y, lam), rtol=1e-6, atol=1e-9)
    assert rec["extra_regularisation"] == 0.0 and not rec["on_boundary"]
    # default radius B_y / sqrt(lam); every release in the ball
    acc = BudgetAccountant()
    for s in range(20):
        theta, rec = B.objective_perturbation_ball(F, y, 0.5, lam=lam, accountant=acc, insecure_seed=s)
        assert np.linalg.norm(theta) <= rec["radius"] * (1 + 1e-12)
    assert rec["radius"] == pytest.approx(10.0) and acc.spent == pytest.approx((10.0, 0.0))
    m = F.shape[0]
    assert rec["guarantee"] == "worst-case" and rec["neighbouring"] == "replace" and rec["delta"] == 0.0
    assert rec["lipschitz"] == pytest.approx(2 * (10.0 + 1.0)) and rec["sensitivity"] == pytest.approx(44.0)
    assert rec["c"] == 2.0 and rec["noise_covariance"] is None
    # CMS branch: log(1 + 2q + q^2), q = c / (m 2 lam) = 2.5 > 0.5 -> Delta = c/(m(e^(eps/4) - 1)) - 2 lam
    assert rec["epsilon_prime"] == pytest.approx(0.25)
    assert rec["extra_regularisation"] == pytest.approx(2 / (m * math.expm1(0.125)) - 2 * lam)
    _, rec = B.objective_perturbation_ball(F, y, 1.0, lam=1.0, insecure_seed=0)
    assert rec["epsilon_prime"] == pytest.approx(1 - math.log((1 + 1 / m) ** 2)) and rec["extra_regularisation"] == 0
    # bounds enforced with counted warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, rec = B.objective_perturbation_ball(F * 3, y * 5, 1.0, lam=lam, insecure_seed=0)
    msgs = " | ".join(str(w.message) for w in caught)
    assert "rescaled onto the ball" in msgs and "labels exceeded label_bound" in msgs
    assert all(w.category is RuntimeWarning for w in caught) and rec["n_rescaled"] > 0 and rec["n_clipped"] > 0
    for kwargs, match in [(dict(lam=0.0), "lam"), (dict(radius=-1.0), "radius"), (dict(feature_bound=0.0),
                          "feature_bound"), (dict(label_bound=np.inf), "label_bound"), (dict(epsilon=0.0), "epsilon")]:
        args = dict(epsilon=1.0, lam=lam)
        args.update(kwargs)
        with pytest.raises(ValueError, match=match):
            B.objective_perturbation_ball(F, y, **args)
    with pytest.raises(ValueError, match="y"):
        B.objective_perturbation_ball(F, y[:-1], 1.0, lam=lam)
    with pytest.raises(ValueError, match="kappa"):
        B.ridge_ball_solve(F, y, kappa=0.0, radius=1.0)
    with pytest.raises(ValueError, match="linear"):
        B.ridge_ball_solve(F, y, kappa=1.0, radius=1.0, linear=np.ones(3))


def test_objective_perturbation_ball_constants_brute_force():
    # gradient norm 2|theta^T phi - y| ||phi|| and Hessian eigenvalue of 2 phi phi^T on random points of the
    # domain (theta in the ball, half of them on the sphere; ||phi|| <= B_phi, |y| <= B_y): never above the
    # record's L and c, and attained within 5%.
    bp, by, lam, p, n = 0.7, 0.8, 0.16, 3, 200_000
    _, rec = B.objective_perturbation_ball(np.zeros((2, p)), np.zeros(2), 1.0, lam=lam, feature_bound=bp,
                                           label_bound=by, insecure_seed=0)
    R = rec["radius"]
    assert R == pytest.approx(by / math.sqrt(lam))
    rng = np.random.default_rng(3)

    def ball(k, radius):
        u = rng.standard_normal((k, p))
        u /= np.linalg.norm(u, axis=1)[:, None]
        r = radius * rng.uniform(0, 1, k) ** (1 / p)
        r[: k // 2] = radius
        return u * r[:, None]
    theta, phi, yy = ball(n, R), ball(n, bp), rng.uniform(-by, by, n)
    g = 2 * (np.sum(theta * phi, axis=1) - yy)[:, None] * phi
    gmax = np.linalg.norm(g, axis=1).max()
    assert gmax <= rec["lipschitz"] * (1 + 1e-12) and gmax >= 0.95 * rec["lipschitz"], (gmax, rec["lipschitz"])
    hmax = max(np.linalg.eigvalsh(2 * np.outer(f, f)).max() for f in phi[:2000])
    assert hmax <= rec["c"] * (1 + 1e-12) and hmax >= 0.95 * rec["c"]


def _objective_perturbation_ball_audit(n):
    # m = p = 1, B_phi = B_y = 1, lam = 4 (R = 1/2, c = 2, L = 3, epsilon' = 1 - 2 log 1.25, no extra ridge):
    # D = {(1, 1)}, D' = {(1, -1)}; released theta = clip((2 y - b) / 10, -1/2, 1/2). Event {theta <= -0.2}
    # (fixed in advance): b >= 4 under D, b >= 0 under D', log-ratio epsilon' 4 / (2 L) = 0.37 exactly
    # (expected lower bound about 0.33 at n = 1e5). The b are drawn n at a time by the same L2Laplace the
    # function uses; the closed form is checked against the function for a few seeds.
    eps, lam = 1.0, 4.0
    F = np.array([[1.0]])
    _, rec = B.objective_perturbation_ball(F, np.array([1.0]), eps, lam=lam, insecure_seed=0)
    assert rec["radius"] == 0.5 and rec["lipschitz"] == 3.0 and rec["extra_regularisation"] == 0.0
    ep, sens, R = rec["epsilon_prime"], rec["sensitivity"], rec["radius"]

    def release(y, b):
        return np.clip((2 * y - b) / (2 + 2 * lam), -R, R)
    for s in range(5):
        b = L2Laplace(ep, sens, insecure_seed=s).randomise(np.zeros(1))
        for y in (1.0, -1.0):
            got = B.objective_perturbation_ball(F, np.array([y]), eps, lam=lam, insecure_seed=s)[0]
            np.testing.assert_allclose(got, release(y, b), rtol=1e-12, atol=1e-15)
    mech = L2Laplace(ep, sens)
    k0 = int(np.sum(release(1.0, mech.randomise_rows(np.zeros((n, 1)))[:, 0]) <= -0.2))
    k1 = int(np.sum(release(-1.0, mech.randomise_rows(np.zeros((n, 1)))[:, 0]) <= -0.2))
    return _audit_counts(k0, k1, n, 0.0), eps


def test_objective_perturbation_ball_audit_ci_size():
    lb, eps = _objective_perturbation_ball_audit(100_000)
    assert lb <= eps
    assert lb >= 0.25 * eps, f"the audit has no power: lower bound {lb:.3f} for claimed {eps}"
