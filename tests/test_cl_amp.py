"""CL-AMP: every scalar-posterior formula against Monte Carlo or exact densities, EM closed
form and gradients, the C++ kernel against the NumPy reference, and decoding."""

import math
import sys

import numpy as np
import pytest

import pysketch
from pysketch import _core
from pysketch.datasets import make_gmm
from pysketch.decoders import ClAmpSolution as ClampSolution
from pysketch.decoders import DecodingProblem
from pysketch.decoders import cl_amp as clamp
from pysketch.features import make_feature_map
from pysketch.frequencies import make_law
from pysketch.metrics import mse

import pysketch.decoders.cl_amp  # noqa: F401  (the module)

C = sys.modules["pysketch.decoders.cl_amp"]

Z_CONF = 5.0  # Monte-Carlo checks: |estimate - formula| < 5 standard errors (two-sided p ~ 6e-7)


# ------------------------------------------------------------------ helpers


def _coefs(rng, n, scale_lo=-2, scale_hi=4):
    sc = 10 ** rng.uniform(scale_lo, scale_hi, n)
    a1, b1, a2, b2 = (rng.standard_normal(n) * sc for _ in range(4))
    a2 *= rng.uniform(0, 1, n)
    b2 *= rng.uniform(0, 1, n)
    mu0 = rng.uniform(-50, 50, n)
    v0 = 10 ** rng.uniform(-3, 2.5, n)
    return a1, b1, a2, b2, mu0, v0


def _brute_moments(a1, b1, a2, b2, mu0, v0, n=2_000_001):
    W = 40 * math.sqrt(v0) + 50
    th = np.linspace(mu0 - W, mu0 + W, n)
    f = C._f012(th, a1, b1, a2, b2, mu0, v0)[0]
    w = np.exp(f - f.max())
    s = w.sum()
    m = (w * th).sum() / s
    return m, (w * (th - m) ** 2).sum() / s


def _thesis_problem(seed, k=10, d=10, mfac=2, n=10_000, op="dense", sigma2=1.0):
    """Thesis model (4.5) with sigma_inter = 1, s = 2.5 (notes sec. 7.1), AR frequencies."""
    X, _, p = make_gmm(n, k, d, separation=2.5, sigma_intra=1 / (2.5 * k ** (1 / d)), random_state=seed,
                       return_params=True)
    fm = make_feature_map(d, int(mfac * k * d), "complex", operator=op, law=make_law("adapted_radius",
                          math.sqrt(sigma2)), random_state=seed + 100)
    return X, p, fm, fm.sketch(X)


# ------------------------------------------------------------------ model of the sketch (notes sec. 3.3)


def _direct_m_gamma(s, g, P, qp, alpha, tau, t):
    """m_t and Gamma_t of (B.14) by the explicit sum over l != t (no leave-one-out trick)."""
    m = np.zeros(2)
    G = np.zeros((2, 2))
    for l in range(P.size):
        if l == t:
            continue
        beta = alpha[l] * math.exp(-0.5 * g * g * tau[l])
        e = math.exp(-g * g * qp[l])
        ph = g * P[l]
        m += beta * math.exp(-0.5 * g * g * qp[l]) * np.array([math.cos(ph), math.sin(ph)])
        R = np.array([[math.cos(2 * ph), math.sin(2 * ph)], [math.sin(2 * ph), -math.cos(2 * ph)]])
        G += 0.5 * beta**2 * (1 - e) * (np.eye(2) - e * R)
    return m, G


def test_other_clusters_moments_against_monte_carlo():
    """(B.9)-(B.10) E[v] and the covariance in Gamma_t (B.14) against 10^6 draws of z ~ N(p, q^p);
    the printed (B.11)-(B.13) (exp(-g^2 q) instead of exp(-2 g^2 q)) must be rejected."""
    rng = np.random.default_rng(0)
    g, p, q = 1.3, 0.7, 0.52  # g^2 q = 0.88
    n = 1_000_000
    v = np.exp(1j * g * rng.normal(p, math.sqrt(q), n))
    ev = math.exp(-0.5 * g * g * q) * np.exp(1j * g * p)
    for x, ref in ((v.real, ev.real), (v.imag, ev.imag)):
        assert abs(x.mean() - ref) < Z_CONF * x.std() / math.sqrt(n)
    # Gamma's own term for beta = 1: 1/2 (1 - e) (I - e R), e = exp(-g^2 q)
    _, G = _direct_m_gamma(0j, g, np.array([0.0, p]), np.array([1.0, q]), np.array([0.0, 1.0]), np.zeros(2), 0)
    X = np.stack([v.real, v.imag])
    mc = np.cov(X)
    for (i, j) in ((0, 0), (1, 1), (0, 1)):
        prod = (X[i] - X[i].mean()) * (X[j] - X[j].mean())
        se = prod.std() / math.sqrt(n)
        assert abs(mc[i, j] - G[i, j]) < Z_CONF * se
    # printed (B.11): 2 E[Re v^2] = 1 + exp(-g^2 q) cos(2 g p): off by many standard errors
    printed = 0.5 * (1 + math.exp(-g * g * q) * math.cos(2 * g * p))
    se = (v.real**2).std() / math.sqrt(n)
    assert abs((v.real**2).mean() - printed) > 20 * se


def test_gvm_coefficients_equal_bivariate_gaussian_loglik():
    """(B.16)-(B.20) in the beta-free form: f(theta) + (theta - mu0)^2 / (2 v0) equals the
    log of N(s; beta (cos, sin) + m_t, Gamma_t + sigma_e^2 I) up to a constant, with r = s - m_t
    (the ERRATUM of (B.15)); leave-one-out sums equal the direct sums."""
    rng = np.random.default_rng(1)
    m, k = 3, 4
    g = rng.uniform(0.5, 2.0, m)
    P = rng.standard_normal((m, k))
    qp = rng.uniform(0.05, 0.5, k)
    alpha = rng.dirichlet(np.ones(k))
    tau = rng.uniform(0, 0.2, k)
    s = rng.standard_normal(m) * 0.3 + 1j * rng.standard_normal(m) * 0.3
    nv = 1e-3
    a1, b1, a2, b2, mu0, v0 = C.gvm_coefficients(s.real, s.imag, g, P, qp, alpha, tau, nv)
    np.testing.assert_allclose(mu0, g[:, None] * P)
    np.testing.assert_allclose(v0, (g**2)[:, None] * qp[None, :])
    th = np.linspace(-4, 4, 9)
    for j in range(m):
        for t in range(k):
            mt, G = _direct_m_gamma(s[j], g[j], P[j], qp, alpha, tau, t)
            G = G + nv * np.eye(2)
            beta = alpha[t] * math.exp(-0.5 * g[j] ** 2 * tau[t])
            Li = np.linalg.inv(G)
            res = np.array([s[j].real, s[j].imag])[:, None] - mt[:, None] - beta * np.stack([np.cos(th), np.sin(th)])
            loglik = -0.5 * np.einsum("in,ij,jn->n", res, Li, res)
            vm = (a1[j, t] * np.cos(th) + b1[j, t] * np.sin(th) + a2[j, t] * np.cos(2 * th)
                  + b2[j, t] * np.sin(2 * th))
            diff = loglik - vm
            np.testing.assert_allclose(diff - diff[0], 0.0, atol=1e-10 * (1 + np.abs(loglik).max()))
    # the printed sign of (B.15) (+ m_t) gives a different density
    t = 0
    mt, G = _direct_m_gamma(s[0], g[0], P[0], qp, alpha, tau, t)
    Li = np.linalg.inv(G + nv * np.eye(2))
    beta = alpha[t] * math.exp(-0.5 * g[0] ** 2 * tau[t])
    wrong = beta * Li @ (np.array([s[0].real, s[0].imag]) + mt)
    assert abs(wrong[0] - a1[0, t]) > 1e-3


# ------------------------------------------------------------------ scalar posterior moments


@pytest.mark.parametrize(
    "coef",
    [
        (2.0, -1.0, 0.3, 0.2, 0.5, 1.5),  # unimodal-ish, wide prior
        (0.5, 0.0, -3.0, 0.0, 0.2, 4.0),  # bimodal (cos 2 theta with a2 < 0)
        (3.0, 1.0, 0.0, 0.0, 1.0, 30.0),  # a comb: many periods under a wide prior
        (0.0, 0.0, 0.0, 0.0, -2.0, 0.3),  # no data: the prior
    ],
)
def test_theta_moments_against_monte_carlo(coef):
    """Exact draws by rejection (proposal: the Gaussian prior; acceptance exp(vm - max vm))."""
    a1, b1, a2, b2, mu0, v0 = coef
    rng = np.random.default_rng(2)
    tt = np.linspace(0, 2 * np.pi, 100_001)
    vm = lambda t: a1 * np.cos(t) + b1 * np.sin(t) + a2 * np.cos(2 * t) + b2 * np.sin(2 * t)  # noqa: E731
    top = vm(tt).max() + 1e-6
    draws = []
    total = 0
    while total < 400_000:
        th = rng.normal(mu0, math.sqrt(v0), 400_000)
        th = th[rng.random(th.size) < np.exp(vm(th) - top)]
        draws.append(th)
        total += th.size
    th = np.concatenate(draws)
    n = th.size
    mean_mc, var_mc = th.mean(), th.var()
    se_mean = math.sqrt(var_mc / n)
    se_var = math.sqrt(np.mean((th - mean_mc) ** 4) - var_mc**2) / math.sqrt(n)
    for impl in ("numpy", "cpp"):
        if impl == "numpy":
            mean, var = C._theta_moments_one(*coef)
        else:
            out = np.empty(1), np.empty(1)
            _core.clamp_theta_moments(*(np.array([x]) for x in coef), False, *out)
            mean, var = out[0][0], out[1][0]
        assert abs(mean - mean_mc) < Z_CONF * se_mean, impl
        assert abs(var - var_mc) < Z_CONF * se_var, impl


def test_theta_moments_against_dense_quadrature():
    """Sharp, bimodal and comb posteriors (von Mises terms up to 1e4 in the log domain): the
    adaptive grid matches a 2e6-point quadrature to 1e-8."""
    rng = np.random.default_rng(3)
    coefs = np.array(_coefs(rng, 15)).T
    for c in coefs:
        mean, var = C._theta_moments_one(*c)
        mb, vb = _brute_moments(*c)
        assert abs(mean - mb) <= 1e-8 * math.sqrt(vb)
        assert abs(var - vb) <= 1e-8 * vb


def test_laplace_is_map_and_inverse_curvature():
    """Laplace's method (notes sec. 3.5 (a)): the MAP, and the INVERSE of -f'' (the thesis prints
    -f'' itself); close to the grid moments for a sharp unimodal posterior."""
    coef = (400.0, 100.0, 0.0, 0.0, 0.3, 0.2)
    mean, var = C._theta_moments_one(*coef, method="laplace")
    f1 = C._f012(mean, *coef)[1]
    assert abs(f1) < 1e-8
    h = 1e-4
    curv = -(C._f012(mean + h, *coef)[0] - 2 * C._f012(mean, *coef)[0] + C._f012(mean - h, *coef)[0]) / h**2
    assert var == pytest.approx(1 / curv, rel=1e-5)
    gm, gv = C._theta_moments_one(*coef)
    assert mean == pytest.approx(gm, abs=0.05 * math.sqrt(gv))
    assert var == pytest.approx(gv, rel=0.05)


@pytest.mark.parametrize("laplace", [False, True])
def test_cpp_theta_moments_match_reference(laplace):
    rng = np.random.default_rng(4)
    coefs = _coefs(rng, 300)
    m1, v1 = C.theta_moments_reference(*coefs, method="laplace" if laplace else "grid")
    m2, v2 = np.empty(300), np.empty(300)
    _core.clamp_theta_moments(*coefs, laplace, m2, v2)
    np.testing.assert_allclose(m2, m1, rtol=0, atol=1e-9 * np.sqrt(v1).max())
    np.testing.assert_allclose(v2, v1, rtol=1e-9)


def test_theta_moments_guards():
    """Non-finite coefficients give the prior moments, never NaN."""
    bad = [np.array([x]) for x in (np.nan, 1.0, 0.0, 0.0, 0.5, 2.0)]
    out = np.empty(1), np.empty(1)
    _core.clamp_theta_moments(*bad, False, *out)
    assert (out[0][0], out[1][0]) == (0.5, 2.0)
    assert C._theta_moments_one(np.inf, 1.0, 0.0, 0.0, 0.5, 2.0) == (0.5, 2.0)


def _small_output_problem(seed=5, m=40, k=3):
    rng = np.random.default_rng(seed)
    g = rng.uniform(0.3, 3.0, m)
    P = rng.standard_normal((m, k))
    qp = rng.uniform(0.01, 1.0, k)
    alpha = rng.dirichlet(np.ones(k))
    tau = rng.uniform(0, 0.3, k)
    s = np.exp(1j * g[:, None] * (P + 0.2 * rng.standard_normal((m, k)))) @ alpha
    return np.ascontiguousarray(s.real), np.ascontiguousarray(s.imag), g, P, qp, alpha, tau


@pytest.mark.parametrize("laplace", [False, True])
def test_cpp_output_step_matches_reference(laplace):
    zr, zi, g, P, qp, alpha, tau = _small_output_problem()
    zh1, qz1 = C.output_step_reference(zr, zi, g, P, qp, alpha, tau, 1e-4, "laplace" if laplace else "grid")
    zh2, qz2 = np.empty_like(P), np.empty_like(P)
    _core.clamp_output(zr, zi, g, P, qp, alpha, tau, 1e-4, laplace, zh2, qz2)
    np.testing.assert_allclose(zh2, zh1, rtol=0, atol=1e-9)
    np.testing.assert_allclose(qz2, qz1, rtol=1e-8)
    assert np.all(qz2 <= 0.99 * qp * (1 + 1e-15)) and np.all(qz2 >= 1e-12 * qp)


def test_cpp_output_same_bits_on_every_simd_level_and_thread_count(restore_simd, restore_threads):
    zr, zi, g, P, qp, alpha, tau = _small_output_problem(m=200, k=5)
    outs = []
    for level in ("scalar", "avx2", "avx512"):
        for threads in (1, 2):
            try:
                pysketch.set_simd_level(level)
            except (ValueError, RuntimeError):
                continue
            pysketch.set_num_threads(threads)
            zh, qz = np.empty_like(P), np.empty_like(P)
            _core.clamp_output(zr, zi, g, P, qp, alpha, tau, 1e-4, False, zh, qz)
            outs.append((zh, qz))
    for zh, qz in outs[1:]:
        np.testing.assert_array_equal(zh, outs[0][0])
        np.testing.assert_array_equal(qz, outs[0][1])


# ------------------------------------------------------------------ EM (thesis sec. 6.3.3)


def _em_inputs(seed=6, m=50, k=4):
    rng = np.random.default_rng(seed)
    g = rng.uniform(0.3, 2.5, m)
    Zhat = rng.standard_normal((m, k))
    Qz = rng.uniform(0.001, 0.2, (m, k))
    s = np.exp(1j * g[:, None] * Zhat) @ np.full(k, 1 / k) * 0.9
    alpha = rng.dirichlet(np.ones(k))
    tau = rng.uniform(0.0, 0.3, k)
    return alpha, tau, np.ascontiguousarray(s.real), np.ascontiguousarray(s.imag), g, Zhat, Qz


def test_em_closed_form_against_monte_carlo():
    """(6.30): sum_j E_{z ~ N(zhat, Qz)} |s_j - sum_l alpha_l q_jl exp(i g_j z_jl)|^2 in closed form."""
    alpha, tau, zr, zi, g, Zhat, Qz = _em_inputs()
    F = C.em_objective(alpha, tau, zr, zi, g, Zhat, Qz)[0]
    rng = np.random.default_rng(7)
    n = 20_000
    vals = np.empty(n)
    q = np.exp(-0.5 * g[:, None] ** 2 * tau[None, :])
    s = zr + 1j * zi
    for i in range(n):
        z = Zhat + np.sqrt(Qz) * rng.standard_normal(Zhat.shape)
        pred = (alpha * q * np.exp(1j * g[:, None] * z)).sum(1)
        vals[i] = np.sum(np.abs(s - pred) ** 2)
    assert abs(vals.mean() - F) < Z_CONF * vals.std() / math.sqrt(n)


def test_em_gradients_match_finite_differences():
    """(6.31)-(6.33)."""
    alpha, tau, zr, zi, g, Zhat, Qz = _em_inputs()
    _, ga, gt = C.em_objective(alpha, tau, zr, zi, g, Zhat, Qz)
    h = 1e-6
    for i in range(alpha.size):
        e = np.zeros_like(alpha)
        e[i] = h
        fd_a = (C.em_objective(alpha + e, tau, zr, zi, g, Zhat, Qz)[0]
                - C.em_objective(alpha - e, tau, zr, zi, g, Zhat, Qz)[0]) / (2 * h)
        fd_t = (C.em_objective(alpha, tau + e, zr, zi, g, Zhat, Qz)[0]
                - C.em_objective(alpha, tau - e, zr, zi, g, Zhat, Qz)[0]) / (2 * h)
        assert ga[i] == pytest.approx(fd_a, rel=1e-6, abs=1e-8)
        assert gt[i] == pytest.approx(fd_t, rel=1e-6, abs=1e-8)


def test_em_update_decreases_objective_within_constraints():
    alpha, tau, zr, zi, g, Zhat, Qz = _em_inputs()
    F0 = C.em_objective(alpha, tau, zr, zi, g, Zhat, Qz)[0]
    a, t = C.em_update(alpha, tau, zr, zi, g, Zhat, Qz, 30)
    assert C.em_objective(a, t, zr, zi, g, Zhat, Qz)[0] < F0
    assert a.sum() == pytest.approx(1.0) and np.all(a >= 0) and np.all(t >= 0)


def test_project_simplex():
    rng = np.random.default_rng(8)
    for _ in range(20):
        v = rng.standard_normal(6) * 2
        p = C.project_simplex(v)
        assert p.sum() == pytest.approx(1.0) and np.all(p >= 0)
        # optimality: no other simplex point of a random sample is closer
        others = rng.dirichlet(np.ones(6), 200)
        assert np.linalg.norm(v - p) <= np.linalg.norm(v - others, axis=1).min() + 1e-12


# ------------------------------------------------------------------ decoding


def test_decodes_thesis_mixture_and_recovers_tau():
    """k = d = 10, m = 2kd, s = 2.5: the centres reach the MSE of the true centres, and every
    learned spread tau_l is within 10% of sigma_intra^2 (notes sec. 1.2: E[a^T S a] = tr S / d)."""
    X, p, fm, sk = _thesis_problem(0)
    sol = clamp(sk, None, 10, (X.min(0), X.max(0)), random_state=0)
    assert isinstance(sol, ClampSolution)
    assert mse(X, sol.theta) <= 1.05 * mse(X, p["centers"])
    np.testing.assert_allclose(sol.spreads, p["sigma_intra"] ** 2, rtol=0.10)
    np.testing.assert_allclose(sol.weights, p["weights"], atol=0.03)
    assert sol.relative_residual < 0.05


def test_default_init_variance_copes_with_a_large_kernel_scale():
    """sigma_k^2 = 2.49 (what pysketch.kernel_scale.kernel_scale picks for this data): the initial
    variance min(sigma_k^2, spread of the box) decodes (with sigma_k^2 itself, as the thesis
    does, this sketch ends at 1.20 x the true-centre MSE)."""
    X, p, fm, sk = _thesis_problem(0, sigma2=2.49)
    sol = clamp(sk, None, 10, (X.min(0), X.max(0)), random_state=0)
    assert sol.init_var < sol.kernel_var
    assert mse(X, sol.theta) <= 1.05 * mse(X, p["centers"])


def test_tau_recovered_other_spread():
    """An isotropic mixture with a different intra variance (k = 4, d = 6)."""
    rng = np.random.default_rng(9)
    k, d = 4, 6
    centers = rng.standard_normal((k, d)) * 3
    sigma2 = 0.3
    X = centers[rng.integers(0, k, 20_000)] + math.sqrt(sigma2) * rng.standard_normal((20_000, d))
    fm = make_feature_map(d, 5 * k * d, "complex", operator="dense", law=make_law("adapted_radius", 3.0),
                          random_state=1)
    sol = clamp(fm.sketch(X), None, k, (X.min(0), X.max(0)), random_state=1)
    np.testing.assert_allclose(sol.spreads, sigma2, rtol=0.10)


def test_numpy_and_cpp_backends_agree():
    """The whole decoder with the NumPy reference kernel and with the C++ kernel."""
    rng = np.random.default_rng(10)
    X = np.concatenate([rng.normal(-1.5, 0.3, (500, 2)), rng.normal(1.5, 0.3, (500, 2))])
    fm = make_feature_map(2, 16, "complex", operator="dense", law=make_law("gaussian", 1.0), random_state=3)
    kw = dict(n_init=2, init_iter=8, max_iter=5, n_em=2, random_state=4)
    a = clamp(fm.sketch(X), None, 2, backend="numpy", **kw)
    b = clamp(fm.sketch(X), None, 2, backend="cpp", **kw)
    np.testing.assert_allclose(b.theta, a.theta, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(b.spreads, a.spreads, rtol=1e-7, atol=1e-10)
    assert a.n_iter == b.n_iter


@pytest.mark.parametrize("op", ["r3", "fastfood"])
def test_structured_operators(op):
    X, p, fm, sk = _thesis_problem(0, k=4, d=16, mfac=3, op=op, sigma2=1.0)
    sol = clamp(sk, None, 4, (X.min(0), X.max(0)), random_state=0)
    assert mse(X, sol.theta) <= 1.05 * mse(X, p["centers"])


def test_noisy_sketch():
    """A sketch with Gaussian noise on its mean (as a private sketch): decoded unchanged."""
    X, p, fm, sk = _thesis_problem(2)
    rng = np.random.default_rng(11)
    noise = 0.01 * (rng.standard_normal(fm.m) + 1j * rng.standard_normal(fm.m))
    sol = clamp(fm, sk.mean() + noise, 10, (X.min(0), X.max(0)), n_samples=sk.count, random_state=2)
    assert np.all(np.isfinite(sol.theta))
    assert mse(X, sol.theta) <= 1.1 * mse(X, p["centers"])


def test_one_cluster():
    rng = np.random.default_rng(12)
    X = rng.normal(2.0, 0.5, (3000, 3))
    fm = make_feature_map(3, 12, "complex", operator="dense", law=make_law("gaussian", 1.0), random_state=0)
    sol = clamp(fm.sketch(X), None, 1, random_state=0)
    assert sol.theta.shape == (1, 3) and np.all(np.isfinite(sol.theta))
    np.testing.assert_allclose(sol.theta[0], X.mean(0), atol=0.1)
    assert sol.weights[0] == 1.0


@pytest.mark.parametrize("sigma2", [1e-3, 1e3])
def test_extreme_kernel_scales_give_finite_result_or_clear_error(sigma2):
    X, p, fm, sk = _thesis_problem(1, k=5, d=5, sigma2=sigma2)
    try:
        sol = clamp(sk, None, 5, (X.min(0), X.max(0)), random_state=0, n_init=1, init_iter=15, max_iter=10, n_em=2)
    except FloatingPointError as exc:
        assert "kernel scale" in str(exc)
        return
    assert np.all(np.isfinite(sol.theta)) and np.all(np.isfinite(sol.spreads))
    assert np.all(np.isfinite(sol.weights)) and math.isfinite(sol.residual)


def test_seeded_reproducibility(restore_threads):
    X, p, fm, sk = _thesis_problem(3, k=5, d=5)
    pysketch.set_num_threads(1)
    a = clamp(sk, None, 5, random_state=7, n_init=2)
    pysketch.set_num_threads(2)
    b = clamp(sk, None, 5, random_state=7, n_init=2)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.spreads, b.spreads)
    c = clamp(sk, None, 5, random_state=8, n_init=2)
    assert not np.array_equal(a.theta, c.theta)


def test_decoding_problem_and_feature_map_inputs_agree():
    X, p, fm, sk = _thesis_problem(4, k=3, d=4)
    a = clamp(sk, None, 3, random_state=0, n_init=1)
    b = clamp(DecodingProblem(fm, sk.mean()), None, 3, random_state=0, n_init=1, n_samples=sk.count)
    c = clamp(fm, sk.mean(), 3, random_state=0, n_init=1, n_samples=sk.count)
    np.testing.assert_array_equal(a.theta, b.theta)
    np.testing.assert_array_equal(a.theta, c.theta)


@pytest.mark.parametrize(
    "kwargs, exc, word",
    [
        (dict(n_clusters=0), ValueError, "n_clusters"),
        (dict(n_clusters=2.5), TypeError, "n_clusters"),
        (dict(n_clusters=2, n_init=0), ValueError, "n_init"),
        (dict(n_clusters=2, tol=-1), ValueError, "tol"),
        (dict(n_clusters=2, damping=0), ValueError, "damping"),
        (dict(n_clusters=2, method="mc"), ValueError, "method"),
        (dict(n_clusters=2, backend="gpu"), ValueError, "backend"),
        (dict(n_clusters=2, noise_var=float("nan")), ValueError, "noise_var"),
        (dict(n_clusters=2, init_var=0.0), ValueError, "init_var"),
        (dict(n_clusters=2, max_iter=0), ValueError, "max_iter"),
        (dict(), ValueError, "n_clusters"),
    ],
)
def test_bad_arguments_named(kwargs, exc, word):
    X, p, fm, sk = _thesis_problem(4, k=3, d=4)
    with pytest.raises(exc, match=word):
        clamp(sk, None, **kwargs)


def test_bad_sources():
    X, p, fm, sk = _thesis_problem(4, k=3, d=4)
    with pytest.raises(TypeError, match="problem"):
        clamp(X, None, 2)
    with pytest.raises(ValueError, match="mean_sketch"):
        clamp(fm, None, 2)
    with pytest.raises(ValueError, match="mean_sketch"):
        clamp(sk, sk.mean(), 2)
