"""pysketch.rfm.solvers and the C++ row-action loop (_core.row_action): the min-norm
interpolant by Cholesky and pinv, randomized Kaczmarz (converges to it; the paper's m
iterations do not interpolate, notes seed004 pitfall 8), single-sample SGD as in the
authors' DPRF_SGD, the kernel against NumPy reference loops, seeds, and argument checks."""

import numpy as np
import pytest

import pysketch
from pysketch import _core
from pysketch.rfm.features import RandomFeatures
from pysketch.rfm.solvers import kaczmarz, min_norm, sgd

SIMD_LEVELS = ("scalar", "sse", "avx2", "avx512")
BLOCK = 1 << 16  # the documented block of row indices drawn at a time


# ------------------------------------------------------------------------------- data

def paper_problem(m=300, N=600, std=40.0, seed=0):
    """The synthetic setting of notes sec. 5.2: x ~ N(0, I_5), y = f1(x) normalized, cos
    features sqrt(2/N) cos(omega^T x + b) with omega ~ N(0, std^2 I)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 5))
    y = np.sqrt(1.0 + np.linalg.norm(X, axis=1))
    y /= np.linalg.norm(y)
    F = RandomFeatures(5, N, frequency_std=std, layout="cos", random_state=seed + 1).transform(X)
    return F, y


def gaussian_problem(m=40, p=90, seed=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, p)), rng.standard_normal(m)


def row_space_residual(F, c):
    """||c - P c|| / ||c||, P the orthogonal projector onto the row space of F."""
    Q, _ = np.linalg.qr(F.T)
    return np.linalg.norm(c - Q @ (Q.T @ c)) / np.linalg.norm(c)


# ------------------------------------------------------------------------------- references

def reference_loop(F, y, rows, x, mode, step):
    """The update of row_action.hpp written plainly (one running dot product)."""
    x = x.copy()
    skipped = 0
    for i in rows:
        a = F[i]
        if mode == "kaczmarz":
            nrm = a @ a
            if nrm == 0:
                skipped += 1
                continue
            x = x + (y[i] - a @ x) / nrm * a
        else:
            x = x - step * (a @ x - y[i]) * a
    return x, skipped


# ------------------------------------------------------------------------------- direct min-norm

@pytest.mark.parametrize("method", ["cholesky", "pinv"])
@pytest.mark.parametrize("problem", ["paper", "gaussian"])
def test_direct_methods_give_the_min_norm_interpolant(method, problem):
    F, y = paper_problem() if problem == "paper" else gaussian_problem()
    c, info = min_norm(F, y, method)
    assert c.shape == (F.shape[1],)
    assert np.linalg.norm(F @ c - y) < 1e-8 * np.linalg.norm(y)
    assert row_space_residual(F, c) < 1e-10
    ref = np.linalg.lstsq(F, y, rcond=None)[0]
    assert np.linalg.norm(c - ref) < 1e-8 * np.linalg.norm(ref)
    # Adding a null-space direction keeps the interpolation and increases the norm.
    z = np.random.default_rng(0).standard_normal(F.shape[1])
    z -= np.linalg.lstsq(F, F @ z, rcond=None)[0]
    assert np.linalg.norm(F @ (c + z) - y) < 1e-8 and np.linalg.norm(c + z) > np.linalg.norm(c)
    assert info["method"] == method and info["iterations"] is None
    assert info["residual_norm"] == pytest.approx(np.linalg.norm(F @ c - y), abs=1e-15)
    assert info["relative_residual"] == pytest.approx(info["residual_norm"] / np.linalg.norm(y))
    if method == "pinv":
        assert info["rank"] == F.shape[0]


def test_cholesky_refuses_a_singular_gram_and_pinv_handles_it():
    F, y = gaussian_problem()
    F[5] = F[7]  # duplicated row: F F^T is singular
    with pytest.raises(ValueError, match="pinv"):
        min_norm(F, y, "cholesky")
    c, info = min_norm(F, y, "pinv")
    assert info["rank"] == F.shape[0] - 1
    np.testing.assert_allclose(c, np.linalg.pinv(F) @ y, rtol=1e-8, atol=1e-10)
    # More samples than features: the Gram matrix cannot be positive definite.
    G, t = gaussian_problem(m=30, p=10)
    with pytest.raises(ValueError, match="pinv"):
        min_norm(G, t, "cholesky")
    c, _ = min_norm(G, t, "pinv")
    np.testing.assert_allclose(c, np.linalg.lstsq(G, t, rcond=None)[0], rtol=1e-10)


def test_zero_labels_give_zero_coefficients():
    F, _ = gaussian_problem()
    for method in ("cholesky", "pinv", "kaczmarz"):
        c, info = min_norm(F, np.zeros(F.shape[0]), method, random_state=0)
        assert not c.any() and info["residual_norm"] == 0 and info["relative_residual"] == 0


# ------------------------------------------------------------------------------- Kaczmarz

def test_kaczmarz_converges_to_the_min_norm_solution():
    F, y = paper_problem()
    m = F.shape[0]
    exact, _ = min_norm(F, y, "pinv")
    c, info = min_norm(F, y, "kaczmarz", n_iter=400 * m, tol=1e-10, random_state=0)
    assert info["converged"] is True
    assert info["iterations"] % m == 0 and info["iterations"] < 400 * m
    assert info["relative_residual"] < 1e-10
    assert np.linalg.norm(c - exact) < 1e-6 * np.linalg.norm(exact)
    c = kaczmarz(F, y, 200 * m, rows="norm", random_state=1)
    assert np.linalg.norm(c - exact) < 1e-6 * np.linalg.norm(exact)


def test_kaczmarz_with_m_iterations_does_not_interpolate():
    # Notes pitfall 8: the paper's "m iterations" leave 70-80 % of ||y|| as train residual.
    F, y = paper_problem(m=300, N=600)
    c, info = min_norm(F, y, "kaczmarz", random_state=0)
    assert info["iterations"] == 300 and info["converged"] is None
    assert info["relative_residual"] > 0.4
    assert info["residual_norm"] == pytest.approx(np.linalg.norm(F @ c - y))
    exact, _ = min_norm(F, y, "cholesky")
    assert np.linalg.norm(c - exact) > 0.1 * np.linalg.norm(exact)
    assert row_space_residual(F, c) < 1e-10  # from 0 the iterates stay in the row space


def test_kaczmarz_projects_and_never_moves_away_from_the_solution_set():
    F, y = gaussian_problem(m=20, p=50)
    x0 = np.random.default_rng(5).standard_normal(50)
    # From x0 the limit is the point of {F x = y} closest to x0: c# + (I - P) x0.
    target = np.linalg.pinv(F) @ y + x0 - np.linalg.pinv(F) @ (F @ x0)
    dist = [np.linalg.norm(x0 - target)]
    for n in (1, 2, 3, 10, 50, 200, 2000):
        x = kaczmarz(F, y, n, x0=x0, random_state=7)  # prefixes of one row sequence
        dist.append(np.linalg.norm(x - target))
    assert all(b <= a * (1 + 1e-12) for a, b in zip(dist, dist[1:]))
    assert dist[-1] < 1e-8 * dist[0]
    # After one update the chosen row's equation holds exactly.
    x = kaczmarz(F, y, 1, x0=x0, random_state=7)
    i = np.random.default_rng(7).integers(0, 20, size=BLOCK)[0]
    assert abs(F[i] @ x - y[i]) < 1e-12


def test_tol_stops_at_a_prefix_of_the_same_run():
    F, y = paper_problem(m=100, N=250)
    c, info = min_norm(F, y, "kaczmarz", n_iter=10**6, tol=1e-3, random_state=11)
    k = info["iterations"]
    assert info["converged"] and k % 100 == 0 and 0 < k < 10**6
    assert info["relative_residual"] < 1e-3
    np.testing.assert_array_equal(c, kaczmarz(F, y, k, random_state=11))
    # The check before the last one had not converged.
    prev = kaczmarz(F, y, k - 100, random_state=11) if k > 100 else np.zeros(250)
    assert np.linalg.norm(F @ prev - y) / np.linalg.norm(y) >= 1e-3
    # Not converged within the budget: reported.
    _, info = min_norm(F, y, "kaczmarz", n_iter=100, tol=1e-12, random_state=11)
    assert info["converged"] is False and info["iterations"] == 100


def test_kaczmarz_matches_the_reference_loop_on_its_own_row_stream():
    F, y = gaussian_problem(m=30, p=37)
    n = 500
    rows = np.random.default_rng(4).integers(0, 30, size=BLOCK, dtype=np.int64)[:n]
    ref, _ = reference_loop(F, y, rows, np.zeros(37), "kaczmarz", 0.0)
    np.testing.assert_allclose(kaczmarz(F, y, n, random_state=4), ref, rtol=0, atol=1e-12)
    # rows='norm' never draws a zero row; uniform sampling skips it.
    F[3] = 0.0
    x = kaczmarz(F, y, 5000, rows="norm", random_state=0)
    assert np.isfinite(x).all()
    x = kaczmarz(F, y, 5000, random_state=0)
    rows = np.random.default_rng(0).integers(0, 30, size=BLOCK, dtype=np.int64)[:5000]
    ref, skipped = reference_loop(F, y, rows, np.zeros(37), "kaczmarz", 0.0)
    assert skipped > 0
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-12)
    x = kaczmarz(F, y, 100_000, random_state=0)
    keep = np.arange(30) != 3
    assert np.linalg.norm(F[keep] @ x - y[keep]) < 1e-6


# ------------------------------------------------------------------------------- SGD

def test_sgd_step_one_over_m_equals_the_reference():
    F, y = paper_problem(m=200, N=400)
    m = F.shape[0]
    rows = np.random.default_rng(9).integers(0, m, size=BLOCK, dtype=np.int64)[:m]
    ref, _ = reference_loop(F, y, rows, np.zeros(F.shape[1]), "sgd", 1.0 / m)
    x = sgd(F, y, m, 1.0 / m, random_state=9)
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-12)
    assert np.abs(x).max() > 0


def test_sgd_is_the_half_squared_loss_gradient():
    # With ||F_i|| = 1 for every row ('unit' features), SGD with step 1 on (1/2)(f - y)^2 is
    # exactly Kaczmarz; a factor 2 in the gradient would overshoot every hyperplane.
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 3))
    F = RandomFeatures(3, 80, frequency_std=1.0, layout="unit", random_state=2).transform(X)
    np.testing.assert_allclose(np.linalg.norm(F, axis=1), 1.0, rtol=1e-13)
    y = rng.standard_normal(50)
    np.testing.assert_allclose(sgd(F, y, 3000, 1.0, random_state=8), kaczmarz(F, y, 3000, random_state=8),
                               rtol=0, atol=1e-12)


def test_sgd_divergence_is_reported():
    F, y = gaussian_problem()
    with pytest.raises(FloatingPointError, match="step"):
        sgd(F, y, 5000, 10.0, random_state=0)


# ------------------------------------------------------------------------------- the C++ kernel

@pytest.mark.parametrize("mode,step", [("kaczmarz", 0.0), ("sgd", 0.013)])
def test_kernel_matches_numpy_reference(mode, step):
    rng = np.random.default_rng(1)
    big = rng.standard_normal((25, 50))
    F = big[:, :43]  # rows 50 apart: a row stride other than p, and p not a multiple of 8
    F[4] = 0.0
    y = rng.standard_normal(25)
    rows = rng.integers(0, 25, size=3000).astype(np.int64)
    x0 = rng.standard_normal(43) * 0.1
    ref, ref_skipped = reference_loop(F, y, rows, x0, mode, step)
    x = x0.copy()
    skipped = _core.row_action(F, y, rows, x, mode, step)
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()))
    assert skipped == (ref_skipped if mode == "kaczmarz" else 0)
    assert (mode != "kaczmarz") or skipped > 0
    # Empty row sequence: nothing happens.
    x2 = x0.copy()
    assert _core.row_action(F, y, np.empty(0, np.int64), x2, mode, step) == 0
    np.testing.assert_array_equal(x2, x0)


@pytest.mark.parametrize("p", [1, 7, 8, 9, 64, 301])
def test_kernel_lengths(p):
    rng = np.random.default_rng(p)
    F = rng.standard_normal((6, p))
    y = rng.standard_normal(6)
    rows = rng.integers(0, 6, size=40).astype(np.int64)
    for mode, step in (("kaczmarz", 0.0), ("sgd", 0.05)):
        x = np.zeros(p)
        _core.row_action(F, y, rows, x, mode, step)
        ref, _ = reference_loop(F, y, rows, np.zeros(p), mode, step)
        np.testing.assert_allclose(x, ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()))


def test_kernel_same_bits_at_every_simd_level(restore_simd):
    # One code path, no dispatch: the level must not matter.
    F, y = paper_problem(m=60, N=101)
    rows = np.random.default_rng(0).integers(0, 60, size=700).astype(np.int64)
    levels = SIMD_LEVELS[: SIMD_LEVELS.index(pysketch.max_simd_level()) + 1]
    results = []
    for level in levels:
        pysketch.set_simd_level(level)
        for mode, step in (("kaczmarz", 0.0), ("sgd", 1 / 60)):
            x = np.zeros(101)
            _core.row_action(F, y, rows, x, mode, step)
            results.append((mode, x.tobytes()))
    for mode in ("kaczmarz", "sgd"):
        assert len({b for md, b in results if md == mode}) == 1


def test_kernel_argument_checks():
    F, y = gaussian_problem(m=5, p=8)
    rows = np.array([0, 4, 2], dtype=np.int64)
    x = np.zeros(8)
    with pytest.raises(TypeError, match="F"):
        _core.row_action(F.astype(np.float32), y, rows, x, "sgd", 0.1)
    with pytest.raises(TypeError, match="F"):
        _core.row_action(F.tolist(), y, rows, x, "sgd", 0.1)
    with pytest.raises(ValueError, match="F"):
        _core.row_action(F[:, ::2], y, rows, np.zeros(4), "sgd", 0.1)
    with pytest.raises(ValueError, match="F"):
        _core.row_action(F.ravel(), y, rows, x, "sgd", 0.1)
    with pytest.raises(ValueError, match="y"):
        _core.row_action(F, y[:4], rows, x, "sgd", 0.1)
    with pytest.raises(TypeError, match="rows"):
        _core.row_action(F, y, rows.astype(np.int32), x, "sgd", 0.1)
    with pytest.raises(ValueError, match="rows"):
        _core.row_action(F, y, np.array([0, 5], np.int64), x, "sgd", 0.1)
    with pytest.raises(ValueError, match="rows"):
        _core.row_action(F, y, np.array([-1], np.int64), x, "sgd", 0.1)
    with pytest.raises(ValueError, match="x"):
        _core.row_action(F, y, rows, np.zeros(7), "sgd", 0.1)
    with pytest.raises(ValueError, match="x"):
        _core.row_action(F, y, rows, np.zeros(16)[::2], "sgd", 0.1)
    ro = np.zeros(8)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="x"):
        _core.row_action(F, y, rows, ro, "sgd", 0.1)
    with pytest.raises(ValueError, match="overlap"):
        _core.row_action(F, y, rows, F[0], "sgd", 0.1)
    with pytest.raises(ValueError, match="mode"):
        _core.row_action(F, y, rows, x, "gd", 0.1)
    with pytest.raises(ValueError, match="step"):
        _core.row_action(F, y, rows, x, "sgd", float("nan"))
    assert not x.any()  # nothing was written by a refused call


# ------------------------------------------------------------------------------- seeds and checks

def test_seeded_reproducibility():
    F, y = paper_problem(m=80, N=160)
    a = kaczmarz(F, y, 500, random_state=3)
    np.testing.assert_array_equal(a, kaczmarz(F, y, 500, random_state=3))
    assert not np.array_equal(a, kaczmarz(F, y, 500, random_state=4))
    np.testing.assert_array_equal(sgd(F, y, 500, 0.01, random_state=3), sgd(F, y, 500, 0.01, random_state=3))
    c1, _ = min_norm(F, y, "kaczmarz", random_state=np.random.default_rng(6))
    c2, _ = min_norm(F, y, "kaczmarz", random_state=6)
    np.testing.assert_array_equal(c1, c2)
    # A shared generator advances: two calls give different sequences.
    g = np.random.default_rng(0)
    assert not np.array_equal(kaczmarz(F, y, 50, random_state=g), kaczmarz(F, y, 50, random_state=g))


def test_inputs_are_not_modified():
    F, y = gaussian_problem()
    F0, y0, x0 = F.copy(), y.copy(), np.ones(F.shape[1])
    kaczmarz(F, y, 10, x0=x0, random_state=0)
    sgd(F, y, 10, 0.01, x0=x0, random_state=0)
    min_norm(F, y)
    np.testing.assert_array_equal(F, F0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(x0, 1.0)


def test_bad_inputs():
    F, y = gaussian_problem(m=10, p=20)
    with pytest.raises(ValueError, match="F"):
        min_norm(F[0], y)
    bad = F.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="F"):
        kaczmarz(bad, y, 10)
    with pytest.raises(ValueError, match="y"):
        min_norm(F, y[:-1])
    with pytest.raises(ValueError, match="y"):
        sgd(F, np.full(10, np.inf), 10, 0.1)
    with pytest.raises(ValueError, match="y"):
        min_norm(F, y[:, None])
    with pytest.raises(TypeError, match="y"):
        min_norm(F, y.astype(complex))
    with pytest.raises(ValueError, match="method"):
        min_norm(F, y, "svd")
    with pytest.raises(ValueError, match="n_iter"):
        min_norm(F, y, "cholesky", n_iter=10)
    with pytest.raises(ValueError, match="tol"):
        min_norm(F, y, "pinv", tol=1e-3)
    with pytest.raises(ValueError, match="tol"):
        min_norm(F, y, "kaczmarz", tol=-1.0)
    with pytest.raises(ValueError, match="n_iter"):
        min_norm(F, y, "kaczmarz", n_iter=0)
    with pytest.raises(ValueError, match="n_iter"):
        kaczmarz(F, y, 0)
    with pytest.raises(TypeError, match="n_iter"):
        kaczmarz(F, y, 10.0)
    with pytest.raises(ValueError, match="rows"):
        kaczmarz(F, y, 10, rows="cyclic")
    with pytest.raises(ValueError, match="rows"):
        kaczmarz(np.zeros((3, 4)), np.zeros(3), 10, rows="norm")
    with pytest.raises(ValueError, match="x0"):
        kaczmarz(F, y, 10, x0=np.zeros(19))
    with pytest.raises(ValueError, match="x0"):
        sgd(F, y, 10, 0.1, x0=np.full(20, np.nan))
    for step in (0, -0.1, np.nan, np.inf, None):
        with pytest.raises(ValueError, match="step"):
            sgd(F, y, 10, step)
    with pytest.raises(TypeError, match="n_iter"):
        sgd(F, y, True, 0.1)
