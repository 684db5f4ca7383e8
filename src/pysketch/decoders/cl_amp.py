r"""CL-AMP: compressive k-means by SHyGAMP (simplified hybrid generalized approximate
message passing).

Byrne, Chatalic, Gribonval & Schniter, "Sketched clustering via hybrid approximate message
passing", IEEE TSP 67(17), 2019; Chatalic's thesis (2020), ch. 6 and appendix B. Every
formula below was re-derived (and is checked numerically in the tests); where the printed
thesis has a wrong sign or factor, the place is marked ERRATUM.

Model (thesis (6.12)): the normalized sketch of a mixture of k clusters of weights alpha
and spreads tau is s_j ~ sum_l alpha_l exp(i g_j z_jl - g_j^2 tau_l / 2), with g_j =
||omega_j||, a_j = omega_j / g_j and z_jl = a_j^T c_l: a generalized linear model in the
centres C (d x k) with mixing matrix A = Diag(1/g) Omega^T (m x d, unit rows).

Algorithm (thesis Alg. 6.2-6.4, sec. 6.3.1, 6.3.3, 6.3.4)::

    alpha <- 1/k, tau <- 0
    init: n_init random C0 ~ N(centre of the box, v0 I), v0 = min(sigma_k^2, spread of the
          box) (the thesis: sigma_k^2; see `init_var`); SHyGAMP from each
          (init_iter iterations); keep the one whose predicted sketch is closest to s
    repeat (at most n_em times):
        (alpha, tau) <- EM step: projected gradient on the closed form (6.30)-(6.33)
        C <- SHyGAMP(s, C (warm), q0^p = v0, alpha, tau)
    until the relative sketch residual stops decreasing by more than `tol`

SHyGAMP with a flat prior on C (thesis Alg. 6.2; shapes P, Z, S m x k, variances k)::

    q^p <- q^c;  P <- A C - S Diag(q^p)
    for every (j, t): the scalar posterior of theta = g_j z_jt  ->  z_hat, q^z   (hot loop)
    q^s <- (1 - mean_j q^z / q^p) / q^p;   S <- (Z_hat - P) / q^p                (damped)
    q^r <- (d/m) / q^s;   C <- C + A^T S Diag(q^r);  q^c <- q^r                  (damped)

stopped when the relative sketch residual ||s_hat - s|| / ||s|| changes by less than `tol`
or after `max_iter` iterations.

The scalar posterior (thesis (6.28), sec. 6.3.2 and appendix B.2): for every frequency j and cluster
t the other clusters are replaced by a 2-D Gaussian (mean m_t, covariance Gamma_t plus the
noise floor sigma_e^2 I), which gives the log-posterior::

    f(theta) = a1 cos theta + b1 sin theta + a2 cos 2 theta + b2 sin 2 theta
               - (theta - mu0)^2 / (2 v0)

(appendix B.2 rewritten without beta, an equivalent and numerically safer form). Its mean and variance are computed by
:func:`_theta_moments_one`: a coarse grid finds every local maximum (the posterior can be
bimodal, or a comb of many modes), safeguarded Newton steps refine them, and fine uniform
grids around the modes that carry mass (merged where they overlap) give the moments by a
log-sum-exp sum. ``method='laplace'`` takes the MAP and the inverse curvature instead
(thesis sec. 6.3.2, with the ERRATUM: the variance is the inverse of -f'').

The NumPy functions here are the reference; the hot loop runs in C++
(pysketch._core.clamp_output / clamp_theta_moments, src/cpp/pysketch/clamp.hpp) with the
same algorithm and constants, and the tests check that they agree.
"""

import dataclasses
import math
import numbers

import numpy as np

from .._checks import check_bounds, check_int, check_positive, check_size
from .._random import as_generator
from .._state import FEATURE_MAPS, SKETCH_FORMATS
from .._threads import blas_single_thread
from .base import DECODERS, Decoder
from .problem import DecodingProblem, MixtureSolution
from . import kernels as _kernels

__all__ = ["ClAmpDecoder", "ClAmpSolution", "cl_amp"]

# ------------------------------------------------------------------ scalar posterior constants
# (shared with src/cpp/pysketch/clamp.hpp; change both together)
WINDOW_STD = 8.0  # the window keeps every theta whose density is >= exp(-WINDOW_STD^2 / 2) x max
COARSE_PER_PERIOD = 16  # coarse grid spacing <= 2 pi / 16
COARSE_MIN_POINTS = 17  # at least this many coarse points over the window
MAX_COARSE = 4097  # cap on coarse points (huge prior variance only)
FINE_PER_STD = 3.0  # fine spacing <= 1 / (3 sqrt(max |f''|)) (trapezoid error ~ exp(-2 pi^2 9) on a Gaussian)
FINE_HALF_WIDTH = 7.0  # fine grid covers mode +- 7 sigma_mode
MAX_FINE = 4097  # cap on the points of one fine interval
MODE_KEEP = 30.0  # modes whose Laplace log-mass is within 30 nats of the best are integrated
SUPPORT_MARGIN = 10.0  # coarse samples within MODE_KEEP + 10 nats of the top are integrated too
NEWTON_MAXITER = 40

# ------------------------------------------------------------------ SHyGAMP guards
QZ_CLIP_LO = 1e-12  # q^z in [1e-12, 0.99] x q^p
QZ_CLIP_HI = 0.99
QP_FLOOR = 1e-12  # q^p >= 1e-12 sigma_k^2


# =================================================================== scalar posterior (reference)


def _f012(theta, a1, b1, a2, b2, mu0, v0):
    """f, f' and f'' of the log-posterior (the beta-free form of appendix B.2) at theta (scalar or array)."""
    c, s = np.cos(theta), np.sin(theta)
    c2, s2 = c * c - s * s, 2.0 * s * c
    dt = theta - mu0
    f = a1 * c + b1 * s + a2 * c2 + b2 * s2 - dt * dt / (2.0 * v0)
    f1 = -a1 * s + b1 * c - 2.0 * a2 * s2 + 2.0 * b2 * c2 - dt / v0
    f2 = -a1 * c - b1 * s - 4.0 * a2 * c2 - 4.0 * b2 * s2 - 1.0 / v0
    return f, f1, f2


def _window(a1, b1, a2, b2, v0):
    """Half-width W of the window around mu0 outside which the density is below
    exp(-WINDOW_STD^2/2) times its maximum. With R = 2(k1 + k2) the range of the von Mises
    part (k1 = |(a1, b1)|, k2 = |(a2, b2)|), both bounds hold (for |theta - mu0| > W):
    W1 = sqrt(v0 (n^2 + 2R)) gives f(theta) <= f(mu0) - n^2/2, and, the von Mises part being
    2 pi-periodic (its maximum is reached within pi of mu0), W2 = sqrt(pi^2 + v0 n^2) gives
    f(theta) <= max f - n^2/2. The smaller one is used."""
    R = 2.0 * (math.hypot(a1, b1) + math.hypot(a2, b2))
    n2 = WINDOW_STD * WINDOW_STD
    return min(math.sqrt(v0 * (n2 + 2.0 * R)), math.sqrt(math.pi * math.pi + v0 * n2))


def _refine(lo, hi, th, coef):
    """Safeguarded Newton iteration for the local maximum of f bracketed by [lo, hi] (the
    neighbours of a coarse local maximum th). Returns (theta*, f*, -f''(theta*))."""
    f0 = _f012(th, *coef)[0]
    start = th
    for _ in range(NEWTON_MAXITER):
        _, d1, d2 = _f012(th, *coef)
        if d1 > 0.0:
            lo = th
        else:
            hi = th
        new = th - d1 / d2 if d2 < 0.0 else 0.5 * (lo + hi)
        if not (lo < new < hi):
            new = 0.5 * (lo + hi)
        done = abs(new - th) <= 1e-12 * (1.0 + abs(th)) or hi - lo <= 1e-12 * (1.0 + abs(th))
        th = new
        if done:
            break
    f, _, d2 = _f012(th, *coef)
    if not f >= f0:  # the iteration wandered off (several stationary points): keep the sample
        th = start
        f, _, d2 = _f012(th, *coef)
    return th, f, -d2


def _theta_moments_one(a1, b1, a2, b2, mu0, v0, method="grid"):
    """Mean and variance of theta under p(theta) ~ exp(f(theta)) (thesis (6.28)); the
    reference of the C++ kernel (same algorithm, same constants)."""
    coef = (a1, b1, a2, b2, mu0, v0)
    if not all(math.isfinite(x) for x in coef) or not v0 > 0.0:
        return mu0, v0
    W = _window(a1, b1, a2, b2, v0)
    # coarse grid: every basin of f (a trigonometric polynomial of degree 2 plus a concave
    # quadratic) is wider than pi/2, so 16 points per period put a discrete local maximum in each
    n_c = max(COARSE_MIN_POINTS, int(math.ceil(2.0 * W / (2.0 * math.pi / COARSE_PER_PERIOD))) + 1)
    n_c = min(n_c, MAX_COARSE)
    hc = 2.0 * W / (n_c - 1)
    grid = mu0 - W + hc * np.arange(n_c)
    fc = _f012(grid, *coef)[0]
    modes = []
    for i in range(n_c):
        left = fc[i - 1] if i > 0 else -np.inf
        right = fc[i + 1] if i + 1 < n_c else -np.inf
        if fc[i] > left and fc[i] >= right:
            lo = grid[max(i - 1, 0)]
            hi = grid[min(i + 1, n_c - 1)]
            th, f, c = _refine(lo, hi, grid[i], coef)
            if not c > 0.0:
                c = 1.0 / (hc * hc)
            modes.append((th, f, c))
    if not modes:  # only when every sample is NaN, excluded above
        return mu0, v0
    best = max(range(len(modes)), key=lambda i: modes[i][1] - 0.5 * math.log(modes[i][2]))
    if method == "laplace":  # MAP and inverse curvature (thesis sec. 6.3.2, ERRATUM: inverse)
        th_map = max(modes, key=lambda t: t[1])
        return th_map[0], 1.0 / th_map[2]
    lmax = modes[best][1] - 0.5 * math.log(modes[best][2])
    kept = [t for t in modes if t[1] - 0.5 * math.log(t[2]) >= lmax - MODE_KEEP]
    fref = max(t[1] for t in kept)
    # support: every kept mode +- 7 sd, and every run of coarse samples within MODE_KEEP +
    # SUPPORT_MARGIN nats of the top (one coarse step added on each side): flanks and shoulders
    # that have no local maximum of their own
    lo_w, hi_w = grid[0], grid[-1]
    pieces = []
    for th, f, c in kept:
        sd = 1.0 / math.sqrt(c)
        pieces.append((max(lo_w, th - FINE_HALF_WIDTH * sd), min(hi_w, th + FINE_HALF_WIDTH * sd)))
    above = fc >= fref - MODE_KEEP - SUPPORT_MARGIN
    i = 0
    while i < n_c:
        if above[i]:
            j = i
            while j + 1 < n_c and above[j + 1]:
                j += 1
            pieces.append((grid[max(i - 1, 0)], grid[min(j + 1, n_c - 1)]))
            i = j + 1
        else:
            i += 1
    pieces.sort()
    intervals = []
    for a, b in pieces:
        if intervals and a <= intervals[-1][1]:
            intervals[-1][1] = max(intervals[-1][1], b)
        else:
            intervals.append([a, b])
    # one spacing: sd / 3 for the sharpest possible curvature, |f''| <= k1 + 4 k2 + 1/v0
    cmax = math.hypot(a1, b1) + 4.0 * math.hypot(a2, b2) + 1.0 / v0
    hf = min(hc, 1.0 / (FINE_PER_STD * math.sqrt(cmax)))
    tref = modes[best][0]
    s0 = s1 = s2 = 0.0
    for a, b in intervals:
        n = min(MAX_FINE, max(2, int(math.ceil((b - a) / hf)) + 1))
        h = (b - a) / (n - 1)
        th = a + h * np.arange(n)
        w = np.exp(_f012(th, *coef)[0] - fref) * h
        w[0] *= 0.5
        w[-1] *= 0.5
        dt = th - tref
        s0 += w.sum()
        s1 += (w * dt).sum()
        s2 += (w * dt * dt).sum()
    if not (s0 > 0.0 and math.isfinite(s0)):
        return mu0, v0
    e1 = s1 / s0
    var = s2 / s0 - e1 * e1
    return tref + e1, max(var, 0.0)


def theta_moments_reference(a1, b1, a2, b2, mu0, v0, method="grid"):
    """Elementwise mean and variance of theta for arrays of coefficients (NumPy reference:
    one Python call per entry; small problems only)."""
    arrs = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64) for x in (a1, b1, a2, b2, mu0, v0)))
    mean = np.empty(arrs[0].shape)
    var = np.empty(arrs[0].shape)
    for idx in np.ndindex(mean.shape):
        mean[idx], var[idx] = _theta_moments_one(*(float(x[idx]) for x in arrs), method=method)
    return mean, var


# =================================================================== output step


def gvm_coefficients(zr, zi, g, P, qp, alpha, tau, noise_var):
    """The coefficients (a1, b1, a2, b2, mu0, v0), each m x k, of the scalar posteriors
    (thesis appendix B.2, beta-free form).

    For frequency j and cluster t: beta_l = alpha_l exp(-g^2 tau_l / 2) (thesis (6.25));
    E[v_l] = exp(i g p_l - g^2 q^p_l / 2) (B.9); m_t = sum_{l != t} beta_l E[v_l]; Gamma_t =
    1/2 sum_{l != t} beta_l^2 (1 - e_l) (I - e_l [[cos 2gp_l, sin 2gp_l], [sin 2gp_l,
    -cos 2gp_l]]) with e_l = exp(-g^2 q^p_l) (B.14; the second moments carry exp(-2 g^2 q^p),
    ERRATUM of (B.11)-(B.13)), plus noise_var I (a noise floor of this implementation); r = s - m_t (ERRATUM of
    (B.15): minus); Lambda = Gamma_t^-1 and
        a1 = beta_t (Lambda r)_1,  b1 = beta_t (Lambda r)_2,
        a2 = -beta_t^2 (Lambda_11 - Lambda_22) / 4,  b2 = -beta_t^2 Lambda_12 / 2,
        mu0 = g p_t,  v0 = g^2 q^p_t.
    The leave-one-out sums are the full sums minus the own term (O(mk))."""
    g = g[:, None]
    g2 = g * g
    beta = alpha[None, :] * np.exp(-0.5 * g2 * tau[None, :])
    ph = g * P
    c, s = np.cos(ph), np.sin(ph)
    ev = np.exp(-0.5 * g2 * qp[None, :])
    mr, mi = beta * ev * c, beta * ev * s
    e2 = ev * ev
    w = 0.5 * beta * beta * (-np.expm1(-g2 * qp[None, :]))
    c2, s2 = c * c - s * s, 2.0 * s * c
    g11 = w * (1.0 - e2 * c2)
    g22 = w * (1.0 + e2 * c2)
    g12 = -w * e2 * s2
    rr = zr[:, None] - (mr.sum(1, keepdims=True) - mr)
    ri = zi[:, None] - (mi.sum(1, keepdims=True) - mi)
    G11 = np.maximum(g11.sum(1, keepdims=True) - g11, 0.0) + noise_var
    G22 = np.maximum(g22.sum(1, keepdims=True) - g22, 0.0) + noise_var
    G12 = g12.sum(1, keepdims=True) - g12
    det = G11 * G22 - G12 * G12
    bad = ~(det > 1e-3 * G11 * G22)  # leave-one-out rounding: keep Gamma positive definite
    G12 = np.where(bad, 0.0, G12)
    det = np.where(bad, G11 * G22, det)
    L11, L22, L12 = G22 / det, G11 / det, -G12 / det
    a1 = beta * (L11 * rr + L12 * ri)
    b1 = beta * (L12 * rr + L22 * ri)
    a2 = -0.25 * beta * beta * (L11 - L22)
    b2 = -0.5 * beta * beta * L12
    return a1, b1, a2, b2, ph, g2 * qp[None, :] + 0.0 * ph


def output_step_reference(zr, zi, g, P, qp, alpha, tau, noise_var, method="grid"):
    """(z_hat, q^z), m x k: the output nodes of SHyGAMP (Alg. 6.2 lines 9-10) in the limit
    q^n -> 0 (thesis appendix B.1: z_hat = E[theta]/g, q^z = Var[theta]/g^2), with the guards
    of this implementation (non-finite -> prior moments; q^z clipped to [1e-12, 0.99] q^p)."""
    a1, b1, a2, b2, mu0, v0 = gvm_coefficients(zr, zi, g, P, qp, alpha, tau, noise_var)
    mean, var = theta_moments_reference(a1, b1, a2, b2, mu0, v0, method)
    return _to_z(mean, var, g, P, qp)


def _to_z(mean, var, g, P, qp):
    gg = g[:, None]
    zhat = mean / gg
    qz = var / (gg * gg)
    bad = ~(np.isfinite(zhat) & np.isfinite(qz))
    zhat = np.where(bad, P, zhat)
    qz = np.where(bad, qp[None, :], qz)
    qz = np.clip(qz, QZ_CLIP_LO * qp[None, :], QZ_CLIP_HI * qp[None, :])
    return zhat, qz


# =================================================================== EM (thesis 6.3.3)


class _EMTerms:
    """The parts of (6.30) that do not depend on (alpha, tau), computed once per EM update:
    rho_jl = exp(i g_j zhat_jl - g_j^2 q^z_jl / 2), Re(s_j* rho_jl) and |rho_jl|^2."""

    def __init__(self, zr, zi, g, Zhat, Qz):
        self.g2 = (g * g)[:, None]
        amp = np.exp(-0.5 * self.g2 * Qz)
        c, s = _kernels.sincos(np.ascontiguousarray((g[:, None] * Zhat).ravel()))
        self.rho_r = amp * c.reshape(Zhat.shape)
        self.rho_i = amp * s.reshape(Zhat.shape)
        self.re_s_rho = zr[:, None] * self.rho_r + zi[:, None] * self.rho_i
        self.one_minus_rho2 = 1.0 - amp * amp
        self.s2 = float(np.sum(zr * zr + zi * zi))

    def __call__(self, alpha, tau, grad=True):
        q = np.exp(-0.5 * self.g2 * tau[None, :])
        u = alpha[None, :] * q
        Sr = (u * self.rho_r).sum(1, keepdims=True)
        Si = (u * self.rho_i).sum(1, keepdims=True)
        F = self.s2 + float(np.sum(Sr * Sr + Si * Si)) + float(np.sum(u * (u * self.one_minus_rho2
                                                                           - 2.0 * self.re_s_rho)))
        if not grad:
            return F
        gamma = self.re_s_rho - u * self.one_minus_rho2 - (self.rho_r * Sr + self.rho_i * Si)
        return F, -2.0 * np.sum(q * gamma, axis=0), alpha * np.sum(self.g2 * q * gamma, axis=0)


def em_objective(alpha, tau, zr, zi, g, Zhat, Qz):
    """F(alpha, tau) = sum_j f_j (thesis (6.30), in closed form, sec. 6.3.3) and its
    gradients (6.31)-(6.33).

    With q_jl = exp(-g_j^2 tau_l/2), rho_jl = exp(i g_j zhat_jl - g_j^2 q^z_jl/2),
    u_jl = alpha_l q_jl and S_j = sum_l u_jl rho_jl (the t != l sums as S_j minus the own
    term):
        f_j = |s_j|^2 - 2 sum_l u_jl Re(s_j* rho_jl) + |S_j|^2 - sum_l u_jl^2 |rho_jl|^2
              + sum_l u_jl^2
        gamma_jl = Re(s_j* rho_jl) - u_jl - Re(rho_jl* S_j) + u_jl |rho_jl|^2    (6.33)
        dF/dalpha_l = -2 sum_j q_jl gamma_jl,  dF/dtau_l = alpha_l sum_j g_j^2 q_jl gamma_jl
    """
    return _EMTerms(zr, zi, g, Zhat, Qz)(alpha, tau)


def project_simplex(v):
    """Euclidean projection onto {x >= 0, sum x = 1} (sort-based; Held, Wolfe & Crowder)."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - 1.0
    idx = np.arange(1, v.size + 1)
    r = np.nonzero(u - css / idx > 0)[0][-1]
    return np.maximum(v - css[r] / (r + 1.0), 0.0)


def _pg_step(fun, x, grad, step, project, F):
    """One projected-gradient step with Armijo backtracking: returns (x, F, step)."""
    for _ in range(40):
        new = project(x - step * grad)
        dx = new - x
        if not np.any(dx):
            return x, F, step
        Fn = fun(new)
        if Fn <= F + 1e-4 * float(grad @ dx):
            return new, Fn, step * 2.0
        step *= 0.5
    return x, F, step


def em_update(alpha, tau, zr, zi, g, Zhat, Qz, n_steps=20, tau_scale=1.0):
    """(alpha, tau) after `n_steps` alternating projected-gradient steps on (6.30): alpha on
    the simplex, tau >= 0 (thesis sec. 6.3.3, gradient projection [Bertsekas]), each with
    Armijo backtracking; stops early once a round gains less than 1e-10 relatively."""
    terms = _EMTerms(zr, zi, g, Zhat, Qz)
    alpha = alpha.copy()
    tau = tau.copy()
    F, ga, gt = terms(alpha, tau)
    step_a = 0.1 / (alpha.size * max(np.abs(ga).max(), 1e-300))
    step_t = 0.1 * tau_scale / max(np.abs(gt).max(), 1e-300)
    for _ in range(n_steps):
        F0 = F
        alpha, F, step_a = _pg_step(lambda a: terms(a, tau, False), alpha, ga, step_a, project_simplex, F)
        F, ga, gt = terms(alpha, tau)
        tau, F, step_t = _pg_step(lambda t: terms(alpha, t, False), tau, gt, step_t, lambda t: np.maximum(t, 0.0), F)
        F, ga, gt = terms(alpha, tau)
        if F0 - F <= 1e-10 * max(F0, 1e-300):
            break
    return alpha, tau


# =================================================================== SHyGAMP


class _Context:
    """The fixed quantities of one decode: the operator products A C and A^T S, the
    frequency norms g, the target sketch and the numerical settings."""

    def __init__(self, problem, noise_var, method, backend, damping):
        self.problem = problem
        self.d, self.m = problem.d, problem.m
        self.g = np.ascontiguousarray(problem.radii, dtype=np.float64)  # in the problem's unit
        if not (np.all(np.isfinite(self.g)) and np.all(self.g > 0)):
            raise ValueError("every frequency must have a finite, nonzero norm for CL-AMP")
        self.zr, self.zi = problem.zr, problem.zi
        self.znorm = float(np.linalg.norm(problem.z))
        self.noise_var = noise_var
        self.method = method
        self.backend = backend
        self.eta = damping
        self._amp_key = None

    def A(self, X):
        """A C (m x k) for centres X (k x d): Diag(1/g) Omega^T C."""
        return (self.problem.apply(X) / self.g[None, :]).T

    def At(self, S):
        """(A^T S)^T (k x d) for S (m x k): the rows of S^T Diag(1/g) Omega^T."""
        return self.problem.adjoint(np.ascontiguousarray((S / self.g[:, None]).T))

    def output(self, P, qp, alpha, tau):
        if self.backend == "numpy":
            return output_step_reference(self.zr, self.zi, self.g, P, qp, alpha, tau, self.noise_var, self.method)
        P = np.ascontiguousarray(P)
        zhat = np.empty_like(P)
        qz = np.empty_like(P)
        _kernels.clamp_output(self.zr, self.zi, self.g, P, np.ascontiguousarray(qp), np.ascontiguousarray(alpha),
                           np.ascontiguousarray(tau), float(self.noise_var), self.method == "laplace", zhat, qz)
        return zhat, qz

    def residual(self, Z, alpha, tau):
        """||s_hat - s|| / ||s|| with s_hat_j = sum_l alpha_l exp(i g_j z_jl - g_j^2 tau_l/2)
        (thesis (6.34) with an ERRATUM: alpha_l and the 1/2)."""
        key = (alpha.tobytes(), tau.tobytes())
        if key != self._amp_key:  # fixed during a SHyGAMP run
            self._amp = alpha[None, :] * np.exp(-0.5 * (self.g * self.g)[:, None] * tau[None, :])
            self._amp_key = key
        c, s = _kernels.sincos(np.ascontiguousarray((self.g[:, None] * Z).ravel()))
        rr = (self._amp * c.reshape(Z.shape)).sum(1) - self.zr
        ri = (self._amp * s.reshape(Z.shape)).sum(1) - self.zi
        return math.sqrt(float(rr @ rr + ri @ ri)) / max(self.znorm, 1e-300)


def _shygamp(ctx, X, qp0, alpha, tau, max_iter, tol, history=None):
    """SHyGAMP for the sketch (thesis Alg. 6.2, flat prior), from centres X
    (k x d) and q^p = qp0. Damping eta on S, q^s, C, q^p (S not at the first iteration).
    Returns (X, Zhat, Qz, residual, iterations)."""
    k = X.shape[0]
    m, d, eta = ctx.m, ctx.d, ctx.eta
    qp = np.full(k, qp0)
    S = np.zeros((m, k))
    qs = None
    Zlin = ctx.A(X)
    res_prev = ctx.residual(Zlin, alpha, tau)
    res = res_prev
    it = 0
    zhat = qz = None
    for it in range(1, max_iter + 1):
        P = Zlin - S * qp[None, :]
        zhat, qz = ctx.output(P, qp, alpha, tau)
        qs_new = (1.0 - qz.mean(0) / qp) / qp  # line 11
        S_new = (zhat - P) / qp[None, :]  # line 12
        if qs is None:
            S, qs = S_new, qs_new
        else:
            S = eta * S_new + (1.0 - eta) * S
            qs = eta * qs_new + (1.0 - eta) * qs
        qr = (d / m) / qs  # line 13
        X = eta * (X + qr[:, None] * ctx.At(S)) + (1.0 - eta) * X  # line 14, damped
        qp = np.maximum(eta * qr + (1.0 - eta) * qp, QP_FLOOR * qp0)  # lines 16 and 6, damped
        Zlin = ctx.A(X)
        res = ctx.residual(Zlin, alpha, tau)
        if history is not None:
            history.append(res)
        if not np.all(np.isfinite(X)):
            raise FloatingPointError("CL-AMP diverged (non-finite centres); try another kernel scale")
        if abs(res_prev - res) <= tol * max(res_prev, 1e-300):
            break
        res_prev = res
    return X, zhat, qz, res, it


# =================================================================== entry point


@dataclasses.dataclass
class ClAmpSolution(MixtureSolution):
    """The result of CL-AMP: centres `theta` (k x d), weights alpha (simplex; EM-learned),
    `residual` = ||s_hat - s|| (absolute, like CL-OMPR's), the restart kept, the SHyGAMP
    iterations run in total (`n_iter`), and also the spreads tau (k,), the relative
    residual ||s_hat - s|| / ||s||, the kernel variance sigma_k^2 = d / mean ||omega||^2 and the
    variance of the initial centres and q0^p.

    Parameters
    ----------
    theta : ndarray of shape (k, d)
        The centres.
    weights : ndarray of shape (k,)
        alpha, on the simplex.
    residual : float
        ||s_hat - s||, absolute.
    restart : int
        The initialization kept.
    n_iter : int
        The SHyGAMP iterations of all initializations and EM rounds.
    spreads : ndarray of shape (k,), optional
        tau, the clusters' variances (per coordinate) learned by EM.
    relative_residual : float, default NaN
        ||s_hat - s|| / ||s||.
    kernel_var : float, default NaN
        sigma_k^2 = d / mean ||omega_j||^2.
    init_var : float, default NaN
        The variance of the initial centres and q0^p.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import cl_amp
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> sketch = FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X)
    >>> solution = cl_amp(sketch, n_clusters=2, bounds=(-5, 5), random_state=0)
    >>> solution.spreads.shape, bool(np.allclose(solution.spreads, 0.25, atol=0.1))  # 0.5^2 per coordinate
    ((2,), True)
    """

    spreads: np.ndarray = None
    relative_residual: float = float("nan")
    kernel_var: float = float("nan")
    init_var: float = float("nan")


def _as_problem(source, mean_sketch):
    """(DecodingProblem, record count or None) from a FeatureMap and a mean, a Sketch, or a
    DecodingProblem."""
    if isinstance(source, DecodingProblem):
        if mean_sketch is not None:
            raise ValueError("mean_sketch must be None when a DecodingProblem is given (it holds the sketch)")
        return source, None
    if isinstance(source, SKETCH_FORMATS.base):
        if mean_sketch is not None:
            raise ValueError("mean_sketch must be None when a Sketch is given (its mean is used)")
        return DecodingProblem(source.feature_map, source.mean()), source.count
    if isinstance(source, FEATURE_MAPS.base):
        if mean_sketch is None:
            raise ValueError("mean_sketch is required with a FeatureMap: the sketch sum divided by the record count")
        return DecodingProblem(source, mean_sketch), None
    raise TypeError(f"problem must be a DecodingProblem, a Sketch or a FeatureMap, got {type(source).__name__}")


def cl_amp(problem, mean_sketch=None, n_clusters=None, bounds=None, *, n_samples=None, noise_var=None,
          init_var=None, n_init=5, init_iter=40, max_iter=30, n_em=8, em_steps=20, tol=1e-4, damping=0.5,
          method="grid", backend="cpp", random_state=None):
    """Compressive k-means by CL-AMP (thesis Alg. 6.4): centres and weights from a sketch.

    Parameters
    ----------
    problem : DecodingProblem, Sketch or FeatureMap
        The sketch to decode: a DecodingProblem (mean_sketch None), a Sketch (its mean and
        count are used; mean_sketch None) or a FeatureMap with `mean_sketch` its mean
        features (sum / count). Fourier features only ('complex', 'real', 'quantized');
        dense and structured operators alike (only apply/adjoint products are used).
        Private (noisy) sketches are decoded the same way: the noise is part of the residual.
    mean_sketch : array, optional
        The mean features (sum / count) of the sketch; with a FeatureMap only.
    n_clusters : int >= 1
        k; required.
    bounds : (lower, upper) or (d, 2) array, optional
        A box containing the data. CL-AMP does not search inside it, but its centre is the
        mean of the random initial centres, and the final centres are clipped to it.
        Default: initial centres around the origin, no clipping.
    n_samples : int, optional
        Number of records of the sketch (taken from a Sketch). It sets the default noise floor.
    noise_var : float, optional
        Variance sigma_e^2 of the sketch noise per real component, added to every Gamma_t
        (a floor of this implementation). Default 1/(2 n_samples) (the finite-sample variance bound), or
        1e-4 when n_samples is unknown. For a private sketch add the mechanism's noise
        variance of the mean.
    init_var : float, optional
        The variance of the random initial centres and q0^p (thesis Alg. 6.3 uses the kernel
        variance sigma_k^2 for both). Default: min(sigma_k^2, sigma_box^2), with sigma_k^2 =
        d / mean(||omega_j||^2) (the kernel variance of a Gaussian law) and, when bounds are
        given, sigma_box^2 the mean over the coordinates of (width / (2 sqrt(2 ln n)))^2 (the
        standard deviation of n Gaussian values from their range; n = n_samples, or 10^4 when
        unknown). This departs from the thesis on purpose: with sigma_k^2 above the spread of
        the data the decoder fails (benchmarks/quality/clamp_quality.py, k = d = 10, m = 2kd, the
        estimators' default scale sigma_k^2 = 1.9-6.4: 3/20 successes with sigma_k^2; the script prints
        the figures with this rule). Without bounds: sigma_k^2.
    n_init : int, default 5
        Random initializations (Alg. 6.3); the one whose predicted sketch is closest to the
        sketch is kept.
    init_iter : int, default 40
        SHyGAMP iteration cap of each initialization.
    max_iter : int, default 30
        SHyGAMP iteration cap after each EM update.
    n_em : int, default 8
        Cap on the EM rounds (EM update, then SHyGAMP).
    em_steps : int, default 20
        Alternating projected-gradient steps on (alpha, tau) per EM update.
    tol : float, default 1e-4
        Stopping rule: SHyGAMP stops when the relative sketch residual ||s_hat - s|| / ||s||
        changes by less than tol (relatively) in one iteration; the EM rounds stop when a
        round lowers it by less than tol (relatively).
    damping : float in (0, 1], default 0.5
        eta in x <- eta x_new + (1 - eta) x_old for S, q^s, C and q^p.
    method : {'grid', 'laplace'}
        Scalar posterior moments by adaptive-grid integration (default) or Laplace's method.
    backend : {'cpp', 'numpy'}
        The output-node kernel: C++ (multi-threaded; default) or the NumPy reference (slow;
        tests and small problems).
    random_state : None, int or numpy Generator
        Draws the initial centres.

    Returns
    -------
    ClAmpSolution
        theta (k x d centres), weights, spreads tau, residual, relative_residual, restart,
        n_iter, kernel_var.

    Raises
    ------
    ValueError
        When n_clusters is missing, `mean_sketch` is given with a DecodingProblem or a
        Sketch (or missing with a FeatureMap), a size is below its minimum or would not
        fit in memory, tol, noise_var or init_var is not a positive finite number,
        damping is outside (0, 1], method or backend is unknown, the bounds are not a
        finite box of width d, or a frequency has a zero or non-finite norm.
    TypeError
        When `problem` is none of the three, or a size (n_clusters, n_init, init_iter,
        max_iter, n_em, em_steps, n_samples) is not an int.
    FloatingPointError
        When SHyGAMP diverges (non-finite centres; try another kernel scale).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import cl_amp
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> sketch = FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X)
    >>> solution = cl_amp(sketch, n_clusters=2, bounds=(-5, 5), random_state=0)
    >>> bool(np.allclose(np.sort(solution.theta[:, 0]), [-3, 3], atol=0.5)), solution.weights.shape
    (True, (2,))
    """
    prob, count = _as_problem(problem, mean_sketch)
    if n_clusters is None:
        raise ValueError("n_clusters is required")
    m, d = prob.m, prob.d
    # SHyGAMP's (m, k) messages and temporaries, and every restart's centres and (m, k)
    # estimates and variances until the best is chosen
    k = check_size(n_clusters, "n_clusters", nbytes=lambda v: v * (m * 8 * 10 + d * 8 * 4),
                   what=f"for the messages of m = {m} frequencies")
    n_init = check_size(n_init, "n_init", nbytes=lambda v: v * k * (d * 8 + m * 16),
                        what=f"for the results of the restarts ({k} centres, m = {m})")
    init_iter = check_int(init_iter, "init_iter")
    max_iter = check_int(max_iter, "max_iter")
    n_em = check_int(n_em, "n_em", minimum=0)
    em_steps = check_int(em_steps, "em_steps")
    tol = check_positive(tol, "tol")
    if not (isinstance(damping, numbers.Real) and 0.0 < damping <= 1.0):
        raise ValueError(f"damping must be a number in (0, 1], got {damping!r}")
    if method not in ("grid", "laplace"):
        raise ValueError(f"method must be 'grid' or 'laplace', got {method!r}")
    if backend not in ("cpp", "numpy"):
        raise ValueError(f"backend must be 'cpp' or 'numpy', got {backend!r}")
    if n_samples is not None:
        count = check_int(n_samples, "n_samples")
    noise_var = check_positive(noise_var, "noise_var", allow_none=True)
    if noise_var is None:
        noise_var = 0.5 / count if count else 1e-4
    d = prob.d
    lo = hi = None
    if bounds is not None:
        lo, hi = check_bounds(bounds, d)
    ctx = _Context(prob, noise_var, method, backend, float(damping))
    init_var = check_positive(init_var, "init_var", allow_none=True)
    kernel_var = d / float(np.mean(ctx.g * ctx.g))
    if init_var is None:
        init_var = kernel_var
        if lo is not None:
            spread = (hi - lo) / (2.0 * math.sqrt(2.0 * math.log(max(count or 10_000, 2))))
            init_var = min(kernel_var, float(np.mean(spread * spread)))
    rng = as_generator(random_state)
    centre = np.zeros(d) if lo is None else 0.5 * (lo + hi)

    alpha = np.full(k, 1.0 / k)
    tau = np.zeros(k)
    # Alg. 6.3: restarts, the best predicted sketch kept
    runs = []
    for _ in range(n_init):
        X0 = centre + math.sqrt(init_var) * rng.standard_normal((k, d))
        runs.append(_shygamp(ctx, X0, init_var, alpha, tau, init_iter, tol))
    restart = min(range(n_init), key=lambda r: (runs[r][3], r))
    X, zhat, qz, res, n_iter = runs[restart]
    n_iter = sum(r[4] for r in runs)
    # Alg. 6.4: EM on (alpha, tau) alternated with warm-started SHyGAMP
    best = (res, X, alpha, tau)
    for _ in range(n_em):
        alpha_new, tau_new = em_update(alpha, tau, ctx.zr, ctx.zi, ctx.g, zhat, qz, em_steps, init_var)
        X_new, zhat_new, qz_new, res_new, it = _shygamp(ctx, X, init_var, alpha_new, tau_new, max_iter, tol)
        n_iter += it
        if not res_new < best[0]:  # keep the best model; stop once the residual stops improving
            if res_new >= best[0] * (1.0 + tol):
                break
        gain = best[0] - res_new
        X, zhat, qz, alpha, tau = X_new, zhat_new, qz_new, alpha_new, tau_new
        if res_new < best[0]:
            best = (res_new, X, alpha, tau)
        if gain <= tol * best[0]:
            break
    res, X, alpha, tau = best
    if lo is not None:
        X = np.clip(X, lo, hi)
    rel = ctx.residual(ctx.A(X), alpha, tau)
    return ClAmpSolution(theta=X, weights=alpha / alpha.sum(), residual=rel * ctx.znorm, restart=restart,
                         n_iter=n_iter, spreads=tau, relative_residual=rel, kernel_var=kernel_var,
                         init_var=init_var)


@DECODERS.register("cl_amp")
class ClAmpDecoder(Decoder):
    """CL-AMP (`cl_amp`) for k-means, its noise floor from the problem: the finite-sample
    1 / (2n) (CL-AMP's default) plus, for a private sketch, the release noise's variance
    per real coordinate of the mean (DecodingProblem.noise_variance).

    Registered as 'cl_amp' (and 'clamp', the estimators' earlier name). It decodes Dirac
    atoms only; the task's box centres the initial centres and clips the final ones, and
    every other setting is `cl_amp`'s default.

    Parameters
    ----------
    n_init : int, default 1
        `cl_amp`'s random initializations (at least 1; `cl_amp` itself defaults to 5).
    random_state : None, int or numpy.random.Generator
        Draws the initial centres.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import MixtureTask
    >>> from pysketch.decoders.cl_amp import ClAmpDecoder
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> decoder = ClAmpDecoder(random_state=0)
    >>> problem = decoder.problem(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> solution = decoder.decode(MixtureTask(problem, 2, lower=-5.0, upper=5.0))
    >>> bool(np.allclose(np.sort(solution.theta[:, 0]), [-3, 3], atol=0.5))
    True
    """

    name = "cl_amp"
    atoms = ("dirac",)

    def decode(self, task):
        self.check_task(task)
        problem = task.problem
        n = max(int(problem.count or 1), 1)
        noise_var = 1.0 / (2.0 * n) + problem.noise_variance
        with blas_single_thread():
            return cl_amp(problem, n_clusters=task.n_atoms, bounds=(task.lower, task.upper), n_samples=n,
                          noise_var=noise_var, n_init=max(self.n_init, 1), random_state=self.random_state)


# 'clamp': the estimators' earlier name for CL-AMP, still accepted
DECODERS.register("clamp", ClAmpDecoder)
