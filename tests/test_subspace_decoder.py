"""The Burer-Monteiro decoder's parts (pysketch.decoders.subspace, issue 36 item 3): the
spectral start against numpy's eigh (of C itself on a nearly exact sketch, of the
back-projection on any sketch), the Gauss-Newton products and the exact line search
against dense float64 formulas, L-BFGS with float32 pairs (its points and its memory), and
the decoder's starts."""

import math
import tracemalloc

import numpy as np
import pytest

from pysketch import SketchAccumulator, make_feature_map
from pysketch.decoders import SubspaceTask
from pysketch.decoders import subspace as sub
from pysketch.decoders.subspace import BurerMonteiro, SubspaceProblem, lbfgs
from pysketch.frequencies import GaussianLaw, OrthonormalBasesLaw
from pysketch.kernel_scale import data_unit


def exact_problem(C, m, seed=0, law=None, operator="dense", dtype=np.float64):
    """The problem whose target is exactly z_j = omega_j^T C omega_j (no records: the mean
    sketch of a law with second moments C), and the dense Omega."""
    d = C.shape[0]
    fm = make_feature_map(d, m, "quadratic", operator=operator, law=law or OrthonormalBasesLaw(), random_state=seed,
                          dtype=dtype)
    omega = fm.operator.to_dense().astype(np.float64)
    z = np.einsum("ij,ik,kj->j", omega, C, omega)
    return SubspaceProblem(fm, z), omega


def spiked(d, top, seed):
    """C = Q diag(top, 1, ..., 1) Q^T (a floor of 1) and Q."""
    Q = np.linalg.qr(np.random.default_rng(seed).standard_normal((d, d)))[0]
    lam = np.r_[top, np.ones(d - len(top))]
    return (Q * lam) @ Q.T, Q


def sin2(A, B):
    """Squared sines of the principal angles between the column spans of A and B."""
    QA, QB = np.linalg.qr(A)[0], np.linalg.qr(B)[0]
    return 1.0 - np.linalg.svd(QA.T @ QB, compute_uv=False) ** 2


def low_rank(n, d, k, nu=0.05, seed=0):
    rng = np.random.default_rng(seed)
    Y = rng.standard_normal((n, k)) @ rng.standard_normal((k, d)) + nu * k * rng.standard_normal((n, d))
    return Y / np.linalg.norm(Y, axis=1).max()


def unit_of(pb):
    return data_unit(math.sqrt(pb.total_variance() / pb.d))


# ------------------------------------------------------------------------ the spectral start


def test_back_projection_is_the_shifted_sum_of_rank_one_frequencies():
    C, _ = spiked(12, [5.0, 3.0], seed=1)
    pb, omega = exact_problem(C, 12 * 9, law=GaussianLaw(1.0), seed=4)  # unequal norms: w is a real array
    assert pb.w.strides != (0,)
    V = np.random.default_rng(2).standard_normal((3, 12))
    z = pb.z / pb._zu
    w = np.sum(omega ** 2, axis=0)
    Y = (omega * z) @ omega.T - (z @ w) / (12 + 2) * np.eye(12)
    np.testing.assert_allclose(pb.back_projection(V), V @ Y, rtol=1e-10, atol=1e-12 * np.abs(V @ Y).max())


def test_spectral_start_finds_the_top_eigenvectors_of_c_on_a_nearly_exact_sketch():
    # E[back-projection] is a positive multiple of C for uniformly random directions (module
    # docstring): with 400 orthonormal bases the start is C's top-3 subspace to sin^2 < 0.05
    # (0.004-0.016 over six draws), and its scales give C's eigenvalues and floor to 3%
    # (the deviations shrink as the bases grow in number: 100 bases, sin^2 0.017-0.037)
    d, k = 16, 3
    C, Q = spiked(d, [9.0, 6.0, 4.0], seed=3)
    errors = []
    for bases in (100, 400):
        pb, _ = exact_problem(C, bases * d, seed=3)
        unit = unit_of(pb)
        x = pb.spectral_start(k, unit, np.random.default_rng(0))
        U = x[:-1].reshape(k, d).T * unit
        s = (x[-1] * unit) ** 2
        errors.append(sin2(U, Q[:, :k]).max())
        if bases == 400:
            lam = np.sort(np.linalg.eigvalsh(U.T @ U))[::-1] + s
            np.testing.assert_allclose(lam, [9.0, 6.0, 4.0], rtol=0.03)
            assert s == pytest.approx(1.0, rel=0.03)
    assert errors[1] < 0.05 and errors[1] < errors[0]


def test_spectral_start_is_the_top_eigenspace_of_the_back_projection():
    # on a sketch of records (not exact: m = 20kd), the block power iterations find the
    # top-k eigenvectors of the back-projection itself (numpy's eigh of the dense matrix).
    # They converge as (max_{j > k} |theta_j| / theta_k)^(2 iterations): 1 / 2.56 here (at
    # m = 2kd it is 1 / 1.10, where the start is only a rough one)
    d, k = 32, 3
    X = low_rank(4000, d, k, seed=5)
    fm = make_feature_map(d, 20 * k * d, "quadratic", operator="dense", law=OrthonormalBasesLaw(), random_state=1)
    pb = SubspaceProblem.from_sketch(SketchAccumulator(fm).update(X).sketch())
    Y = pb.back_projection(np.eye(d))
    theta, E = np.linalg.eigh(0.5 * (Y + Y.T))
    assert theta[-k] > 2.5 * np.abs(theta[:-k]).max()
    unit = unit_of(pb)
    x = pb.spectral_start(k, unit, np.random.default_rng(7))
    assert sin2(x[:-1].reshape(k, d).T, E[:, -k:]).max() < 1e-8


def test_spectral_start_never_starts_a_column_or_the_floor_at_zero():
    # exactly rank 2 and no floor (s = 0 is optimal) with k = 4: the fitted scales of the two
    # empty directions and of the floor are <= 0, and zero would be a stationary point
    d, k = 16, 4
    B = np.random.default_rng(0).standard_normal((d, 2))
    pb, _ = exact_problem(B @ B.T, 50 * d)
    x = pb.spectral_start(k, unit_of(pb), np.random.default_rng(1))
    norms = np.linalg.norm(x[:-1].reshape(k, d), axis=1)
    assert norms.min() >= 0.09 * norms.max() and x[-1] > 0


def test_unions_of_orthonormal_bases_keep_one_norm_for_all_frequencies():
    X = low_rank(500, 32, 2)
    for d, padded in ((32, False), (24, True)):
        fm = make_feature_map(d, 4 * 32, "quadratic", operator="r3", law=OrthonormalBasesLaw(), random_state=0)
        pb = SubspaceProblem.from_sketch(SketchAccumulator(fm).update(X[:, :d]).sketch())
        omega = fm.operator.to_dense().astype(np.float64)
        np.testing.assert_allclose(pb.w, np.sum(omega ** 2, axis=0), rtol=1e-6)
        # a broadcast view (no m floats) when every norm is the same: R3 blocks without padding
        assert (pb.w.strides == (0,)) == (not padded)


# ------------------------------------------------------------------------ Gauss-Newton and the line search


@pytest.fixture(scope="module")
def small_problem():
    C, _ = spiked(10, [4.0, 2.5], seed=6)
    pb, omega = exact_problem(C, 10 * 12, law=GaussianLaw(1.0), seed=8)
    rng = np.random.default_rng(9)
    k = 3
    x = rng.standard_normal(k * 10 + 1)
    v = rng.standard_normal(k * 10 + 1)
    return pb, omega, k, x, v


def dense_residual_and_jacobian(pb, omega, k, x, unit):
    """e (m) and J (m x (kd + 1)) of the decoders' variables x = (V, t), in float64."""
    d = pb.d
    V, t = x[:-1].reshape(k, d), x[-1]
    U = unit * V.T
    w = np.sum(omega ** 2, axis=0)
    P = omega.T @ U  # m x k
    e = (np.sum(P ** 2, axis=1) + (unit * t) ** 2 * w - pb.z) / pb._zu
    J = np.empty((pb.m, k * d + 1))
    for i in range(k):
        J[:, i * d:(i + 1) * d] = 2 * unit * P[:, i:i + 1] * omega.T / pb._zu
    J[:, -1] = 2 * unit * unit * t * w / pb._zu
    return e, J


@pytest.mark.parametrize("unit", [1.0, 0.25])
def test_value_gradient_and_gauss_newton_product_equal_the_dense_formulas(small_problem, unit):
    pb, omega, k, x, v = small_problem
    e, J = dense_residual_and_jacobian(pb, omega, k, x, unit)
    grad = np.empty_like(x)
    F = pb.value_and_gradient(x, k, unit, grad)
    assert F == pytest.approx(e @ e / pb._zs, rel=1e-12)
    np.testing.assert_allclose(grad, 2 * J.T @ e / pb._zs, rtol=1e-10, atol=1e-12 * np.abs(grad).max())
    Hv = pb.gauss_newton_product(x, v, k, unit, np.empty_like(x))
    ref = 2 * J.T @ (J @ v) / pb._zs
    np.testing.assert_allclose(Hv, ref, rtol=1e-10, atol=1e-12 * np.abs(ref).max())
    # and the same through ranges of one frequency each
    pb._ranges = {kk: pb.operator.column_ranges(1) for kk in (k, 2 * k)}
    np.testing.assert_allclose(pb.gauss_newton_product(x, v, k, unit, np.empty_like(x)), ref, rtol=1e-10,
                               atol=1e-12 * np.abs(ref).max())
    pb._ranges = {}


def test_line_quartic_is_f_along_the_line(small_problem):
    pb, _, k, x, v = small_problem
    c = pb.line_quartic(x, v, k, 0.5)
    grad = np.empty_like(x)
    for a in (0.0, 0.3, -1.2, 2.5):
        F = pb.value_and_gradient(x + a * v, k, 0.5, grad)
        assert np.polynomial.polynomial.polyval(a, c) == pytest.approx(F, rel=1e-11)
    # its slope at 0 is the gradient along v
    pb.value_and_gradient(x, k, 0.5, grad)
    assert c[1] == pytest.approx(grad @ v, rel=1e-10)


@pytest.mark.parametrize("c", [[1.0, -4.0, 6.0, -4.0, 1.0],  # (a - 1)^4: a triple stationary root
                               [0.0, -48.0, 38.0, -32.0 / 3.0, 1.0],  # F' ~ (a-1)(a-3)(a-4): minima 1 (lower), 4
                               [0.0, -32.0, 28.0, -28.0 / 3.0, 1.0],  # F' ~ (a-1)(a-2)(a-4): minima 1, 4 (lower)
                               [1.0, -1.0, 0.5, 0.0, 0.0]])  # a quadratic
def test_quartic_step_is_the_global_minimum_over_positive_steps(c):
    grid = np.linspace(0, 20, 200001)
    F = np.polynomial.polynomial.polyval(grid, c)
    a = sub._quartic_step(np.array(c))
    assert np.polynomial.polynomial.polyval(a, c) <= F.min() + 1e-9
    assert a == pytest.approx(grid[np.argmin(F)], abs=1e-2)


def test_quartic_step_stops_where_the_line_reaches_the_level():
    # F(0) = 30, a local minimum 17.67 at 1, a local maximum 19.33 at 2, the global
    # minimum 8.67 at 4: F crosses the level 18.5 three times before 4, first before 1
    c = np.array([30.0, -32.0, 28.0, -28.0 / 3.0, 1.0])
    a_min = sub._quartic_step(c)
    assert a_min == pytest.approx(4.0)
    level = 18.5
    a = sub._quartic_step(c, level)
    assert 0 < a < 1 and np.polynomial.polynomial.polyval(a, c) == pytest.approx(level, rel=1e-10)
    grid = np.linspace(0, a, 10001)[:-1]
    assert np.all(np.polynomial.polynomial.polyval(grid, c) > level)  # the first crossing
    assert sub._quartic_step(np.array([1.0, 1.0, 1.0, 0.0, 1.0])) is None  # no descent


def test_gauss_newton_stops_at_the_noise_level_on_its_line():
    # a target with added noise and the discrepancy level in between the start and the
    # optimum: the Gauss-Newton step that would cross it stops on it (the quartic's root)
    C, _ = spiked(16, [6.0, 3.0], seed=4)
    pb, _ = exact_problem(C, 16 * 8, seed=5)
    pb.z = pb.z + np.random.default_rng(0).normal(0.0, 0.05, pb.m)
    pb._zs = float(np.sum((pb.z / pb._zu) ** 2))
    k, unit = 2, unit_of(pb)
    ws = sub._Workspace()
    x = pb.spectral_start(k, unit, np.random.default_rng(0), ws=ws)
    g = np.empty_like(x)

    def fun(xv, grad):
        return pb.value_and_gradient(xv, k, unit, grad, ws)

    F0 = fun(x, g)
    _, F_free, _, _, _ = sub._gauss_newton(pb, fun, x.copy(), F0, g.copy(), k, unit, ws, max_iter=200)
    level = F_free + 0.25 * (F0 - F_free)
    _, F_stop, _, _, _ = sub._gauss_newton(pb, fun, x.copy(), F0, g.copy(), k, unit, ws, max_iter=200, fstop=level)
    assert F_stop == pytest.approx(level, rel=1e-6)


# ------------------------------------------------------------------------ L-BFGS


def rosenbrock(x):
    f = np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)
    g = np.zeros_like(x)
    g[:-1] = -400.0 * x[:-1] * (x[1:] - x[:-1] ** 2) - 2 * (1 - x[:-1])
    g[1:] += 200.0 * (x[1:] - x[:-1] ** 2)
    return f, g


@pytest.mark.parametrize("memory", [3, 10])
def test_lbfgs_with_float32_pairs_reaches_the_same_minimum(memory):
    x0 = np.tile([-1.2, 1.0], 20)
    x64, f64, n64 = lbfgs(rosenbrock, x0, max_iter=5000, memory=memory, ftol=0.0, gtol=1e-9)
    x32, f32, n32 = lbfgs(rosenbrock, x0, max_iter=5000, memory=memory, ftol=0.0, gtol=1e-9, history=np.float32)
    np.testing.assert_allclose(x64, 1.0, atol=1e-6)
    np.testing.assert_allclose(x32, 1.0, atol=1e-6)
    assert f32 < 1e-10 and n32 < 2 * n64 + 50
    assert np.array_equal(x0, np.tile([-1.2, 1.0], 20))  # the start is not modified


def reference_lbfgs(fun, x, memory, iterations):
    """The textbook L-BFGS of `lbfgs` with lists (Nocedal & Wright, Algorithm 7.4), the
    same line search, and its rule for a refused pair when the memory is full (the
    refused step was stored over the oldest pair: that pair is dropped). Returns the
    accepted points and the iterations where a pair was refused with a full memory."""
    f, g = fun(x)
    S, Y = [], []
    points, full_refusals = [x.copy()], []
    for it in range(iterations):
        q = g.copy()
        alphas = []
        for s, y in zip(reversed(S), reversed(Y)):
            a = (s @ q) / (s @ y)
            q -= a * y
            alphas.append(a)
        q *= (S[-1] @ Y[-1]) / (Y[-1] @ Y[-1]) if S else 1.0 / np.linalg.norm(g)
        for (s, y), a in zip(zip(S, Y), reversed(alphas)):
            q += (a - (y @ q) / (s @ y)) * s
        p = -q
        slope = g @ p
        assert slope < 0
        t = 1.0
        while True:
            f_new, g_new = fun(x + t * p)
            if f_new <= f + 1e-4 * t * slope:
                break
            t_q = -slope * t * t / (2.0 * (f_new - f - slope * t))
            t = min(max(t_q, 0.1 * t), 0.5 * t)
        s, y = t * p, g_new - g
        if s @ y > 1e-12 * np.linalg.norm(s) * np.linalg.norm(y):
            S, Y = (S + [s])[-memory:], (Y + [y])[-memory:]
        elif len(S) == memory:
            S, Y = S[1:], Y[1:]
            full_refusals.append(it)
        x, f, g = x + s, f_new, g_new
        points.append(x.copy())
    return points, full_refusals


def test_lbfgs_ring_of_pairs_follows_the_textbook_recursion():
    # a nonconvex function (negative curvature between some iterates, so that pairs are
    # refused when the memory is full): the ring of preallocated pairs gives the points of
    # the list-based recursion
    A = np.random.default_rng(4).standard_normal((6, 6))
    A = A @ A.T / 6 + 0.2 * np.eye(6)

    def fun(x):
        return 0.5 * x @ A @ x + np.sum(np.sin(3 * x)), A @ x + 3 * np.cos(3 * x)

    x0 = np.random.default_rng(2).uniform(-2, 2, 6)
    ref, full_refusals = reference_lbfgs(fun, x0.copy(), 2, 12)
    assert full_refusals[:2] == [2, 7]  # early, far from the minimum
    seen = []

    def traced(xv, grad):
        f, g = fun(xv)
        grad[:] = g
        seen.append(xv.copy())
        return f

    g0 = np.empty(6)
    f0 = traced(x0.copy(), g0)
    sub._lbfgs(traced, x0.copy(), f0, g0, max_iter=12, memory=2, ftol=0.0, fstop=-np.inf)
    # every accepted point of the reference is one the ring evaluated (trial points too)
    for p in ref[1:]:
        assert min(np.abs(q - p).max() for q in seen) < 1e-9


@pytest.mark.parametrize("history", [np.float32, np.float64])
def test_lbfgs_holds_its_pairs_in_the_history_dtype_and_no_trial_point(history):
    # the memory of the d = 2^15, k = 20 decode: besides x and g, L-BFGS holds the trial
    # gradient (float64), the direction and 2 `memory` pairs (history dtype) and a 512 KiB
    # scratch, nothing of the vectors' length per iteration (numpy's allocations traced)
    n, memory = 1 << 20, 3
    a = np.linspace(1.0, 50.0, n)

    def fun(x, grad):
        np.multiply(a, x, out=grad)
        return 0.5 * float(x @ grad)

    x = np.ones(n)
    g = np.empty(n)
    f0 = f = fun(x, g)
    tracemalloc.start()
    try:
        x, f, g, it = sub._lbfgs(fun, x, f, g, max_iter=30, memory=memory, ftol=0.0, history=history)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert it == 30 and f < 1e-6 * f0
    item = np.dtype(history).itemsize
    assert peak <= 8 * n + item * n * (1 + 2 * memory) + (1 << 20)


# ------------------------------------------------------------------------ the decoder


@pytest.mark.parametrize("init", ["spectral", "gaussian"])
def test_decoder_reaches_the_exact_subspace_at_two_k_d_frequencies(init):
    # the setting of the large benchmark (m = 2kd, float32 R3), small: both starts reach the
    # same fit, the one of C's top-k subspace
    d, k = 256, 4
    X = low_rank(6000, d, k, seed=11)
    fm = make_feature_map(d, 2 * k * d, "quadratic", operator="r3", law=OrthonormalBasesLaw(), random_state=2,
                          dtype=np.float32)
    pb = SubspaceProblem.from_sketch(SketchAccumulator(fm).update(X).sketch())
    sol = BurerMonteiro(init=init, n_init=1, random_state=3).decode(SubspaceTask(pb, k))
    C = X.T @ X / len(X)
    lam, E = np.linalg.eigh(C)
    assert sin2(sol.components.T, E[:, -k:]).max() < 1e-3
    assert np.trace(sol.components @ C @ sol.components.T) / lam[-k:].sum() >= 0.999
    assert sol.residual < 0.05


def test_only_the_first_start_is_spectral(monkeypatch):
    C, _ = spiked(12, [4.0, 2.0], seed=2)
    pb, _ = exact_problem(C, 12 * 8)
    calls = []
    real = SubspaceProblem.spectral_start

    def counted(self, *args, **kwargs):
        calls.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SubspaceProblem, "spectral_start", counted)
    a = BurerMonteiro(n_init=3, random_state=0).decode(SubspaceTask(pb, 2))
    assert len(calls) == 1
    b = BurerMonteiro(init="gaussian", n_init=3, random_state=0).decode(SubspaceTask(pb, 2))
    assert len(calls) == 1
    # both reach C's top-2 subspace
    np.testing.assert_allclose(a.components.T @ a.components, b.components.T @ b.components, atol=1e-5)
    with pytest.raises(ValueError, match="init"):
        BurerMonteiro(init="svd")
