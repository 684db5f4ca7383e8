"""CL-OMPR: gradients against finite differences, atom terms against NumPy, decoding."""

import numpy as np
import pytest

from pysketch import _core
from pysketch.decoders import DecodingProblem, DiagonalGaussianAtoms, DiracAtoms, clompr
from pysketch.decoders.problem import atom_correlation as _correlation
from pysketch.decoders.problem import atom_matrix
from pysketch.decoders.problem import mixture_objective as _mixture
from pysketch.features import make_feature_map
from pysketch.frequencies import GaussianLaw

OPERATORS = ("dense", "r3", "fastfood")


def problem(op="dense", d=5, m=60, seed=0, kind="complex"):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((300, d)) + rng.integers(0, 2, (300, 1)) * 3.0
    fm = make_feature_map(d, m, kind, operator=op, law=GaussianLaw(1.5), random_state=seed,
                          dither="random" if kind != "real" else None)
    return DecodingProblem(fm, fm.sketch(X).mean()), X


def finite_difference(f, x, h=1e-6):
    g = np.empty_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


@pytest.mark.parametrize("op", OPERATORS)
def test_atom_terms_against_numpy(op):
    prob, _ = problem(op)
    rng = np.random.default_rng(1)
    P = rng.standard_normal((4, prob.m)) * 3
    amp = np.exp(-rng.random((4, prob.m)))
    alpha = rng.random(4)
    A = amp * np.exp(1j * P)
    r = prob.z - alpha @ A
    Gr, Gi, gk = np.empty((4, prob.m)), np.empty((4, prob.m)), np.empty(4)
    F = _core.atom_terms(P, amp, alpha, prob.zr, prob.zi, Gr, Gi, gk, None)
    assert F == pytest.approx(np.sum(np.abs(r) ** 2), rel=1e-12)
    np.testing.assert_allclose(Gr + 1j * Gi, np.conj(A) * r, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(gk, -2 * np.real(np.conj(A) @ r), rtol=1e-12)
    corr, sq = np.empty(4), np.empty(4)
    assert _core.atom_terms(P, amp, None, prob.zr, prob.zi, None, None, corr, sq) == 0.0
    np.testing.assert_allclose(corr, np.real(np.conj(A) @ prob.z), rtol=1e-12)
    np.testing.assert_allclose(sq, np.sum(amp**2, axis=1), rtol=1e-12)


@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("gmm", [False, True])
def test_gradients_match_finite_differences(op, gmm):
    prob, X = problem(op)
    lo, hi = X.min(0), X.max(0)
    family = DiagonalGaussianAtoms(prob, lo, hi) if gmm else DiracAtoms(prob, lo, hi)
    rng = np.random.default_rng(2)
    k = 3
    theta = family.random(rng, k)
    alpha = rng.random(k) + 0.2

    # step 5: F(theta, alpha)
    F, g_theta, g_alpha = _mixture(family, theta, alpha, prob)
    fd_theta = finite_difference(lambda t: _mixture(family, t.reshape(theta.shape), alpha, prob, want_grad=False),
                                 theta.ravel())
    np.testing.assert_allclose(g_theta.ravel(), fd_theta, rtol=1e-5, atol=1e-6 * max(1, abs(F)))
    fd_alpha = finite_difference(lambda a: _mixture(family, theta, a, prob, want_grad=False), alpha)
    np.testing.assert_allclose(g_alpha, fd_alpha, rtol=1e-6, atol=1e-7 * max(1, abs(F)))

    # step 1: -Re(a^H r) / ||a|| for one atom against the residual
    r = prob.z - atom_matrix(family, theta) @ alpha
    rr, ri = np.ascontiguousarray(r.real), np.ascontiguousarray(r.imag)
    f1, g1 = _correlation(family, theta[0], rr, ri)
    fd1 = finite_difference(lambda t: _correlation(family, t, rr, ri)[0], theta[0])
    np.testing.assert_allclose(g1, fd1, rtol=1e-5, atol=1e-8)
    A = atom_matrix(family, theta[:1])[:, 0]
    assert f1 == pytest.approx(-np.real(np.vdot(A, r)) / np.linalg.norm(A), rel=1e-12)


@pytest.mark.parametrize("kind", ["complex", "real", "quantized"])
def test_demodulated_target_is_the_mixture_sketch(kind):
    # For a dataset of a few distinct points, the demodulated sketch mean is exactly the
    # mixture of the Dirac atoms at those points (up to the quantization's higher
    # harmonics, which average out only approximately: looser for 'quantized').
    rng = np.random.default_rng(3)
    pts = rng.standard_normal((3, 4))
    weights = np.array([0.5, 0.3, 0.2])
    X = np.repeat(pts, (weights * 1000).astype(int), axis=0)
    fm = make_feature_map(4, 4000, kind, operator="dense", law=GaussianLaw(1.0), random_state=4,
                          dither="random" if kind != "real" else None)
    prob = DecodingProblem(fm, fm.sketch(X).mean())
    family = DiracAtoms(prob, X.min(0), X.max(0))
    err = prob.z - atom_matrix(family, pts) @ weights
    assert np.sqrt(np.mean(np.abs(err) ** 2)) < (1e-12 if kind != "quantized" else 0.6)


def test_quantized_target_divides_out_the_first_harmonic():
    # One point c: the quantized map's demodulated mean is sum_k c_k e^{i k t_j} e^{-i u_j}
    # / c_1 with t_j = omega_j^T c + u_j; the first harmonic gives exactly e^{i omega_j^T c},
    # the others (k = -3, 5, ...) carry the phases e^{i (k - 1) u_j} of the uniform dither,
    # which average out over j. So mean_j z_j e^{-i omega_j^T c} is 1 within
    # sqrt((1 - c_1^2) / m) ~ 0.0031 per unit (m = 20000; 0.02 is 6 of those), where not
    # dividing by c_1 = 2 sqrt 2 / pi would give 0.900.
    rng = np.random.default_rng(8)
    c = rng.standard_normal(3)
    fm = make_feature_map(3, 20000, "quantized", operator="dense", law=GaussianLaw(1.0), random_state=9)
    prob = DecodingProblem(fm, fm.sketch(c[None, :]).mean())
    ratio = np.mean(prob.z * np.exp(-1j * prob.apply(c[None, :])[0]))
    assert abs(ratio - 1.0) < 0.02


def test_clompr_recovers_well_separated_centers():
    rng = np.random.default_rng(5)
    k, d = 4, 3
    centers = rng.uniform(-10, 10, (k, d))
    X = centers[rng.integers(0, k, 20000)] + 0.3 * rng.standard_normal((20000, d))
    fm = make_feature_map(d, 10 * k * d, "complex", operator="dense", law=GaussianLaw(2.0), random_state=6)
    prob = DecodingProblem(fm, fm.sketch(X).mean())
    sol = clompr(DiracAtoms(prob, X.min(0), X.max(0)), k, n_init=2, random_state=7)
    dist = np.linalg.norm(sol.theta[:, None, :] - centers[None], axis=2)
    assert dist.min(axis=0).max() < 0.2  # every true center has a decoded one nearby
    np.testing.assert_allclose(np.sort(sol.weights), np.sort(np.bincount(
        np.argmin(np.linalg.norm(X[:, None] - centers[None], axis=2), axis=1)) / 20000), atol=0.03)
    assert sol.weights.sum() == pytest.approx(1.0)


def test_bulk_proposal_locates_the_data_and_loose_boxes_decode():
    import importlib

    from pysketch.datasets import make_blobs_gaussian_centers
    from pysketch.estimators import CompressiveKMeans
    from pysketch.metrics import kmeans_plus_plus, sse

    cl = importlib.import_module("pysketch.decoders.problem")
    X = make_blobs_gaussian_centers(50_000, 10, 10, random_state=0)[0]
    est = CompressiveKMeans(10, kernel_scale=3.3, random_state=0).fit(X)
    problem = cl.DecodingProblem(est.sketch_.feature_map, est.sketch_.mean())
    fam = cl.DiracAtoms(problem, np.full(10, -30.0), np.full(10, 30.0))
    mean, std = cl.bulk_proposal(fam)
    assert np.linalg.norm(mean - X.mean(0)) < 0.2 * np.linalg.norm(X.std(0))
    assert np.all(np.abs(std / np.sqrt(np.mean(X.var(0))) - 1) < 0.3)
    # a box 4x wider than the data's: CL-OMPR (whose starts this proposal places) decodes as
    # well as with the data's own box. (decoder='auto' reads a sketch alone in d <= 16 with the
    # over-complete decoder, which a loose box hurts: 1.09-1.68 over six seeds, CL-OMPR 1.013.)
    _, base = kmeans_plus_plus(X, 10, random_state=0)
    wide = CompressiveKMeans(10, random_state=0, decoder="clompr").fit_sketch(est.sketch_, (-30, 30))
    assert sse(X, wide.cluster_centers_) / base < 1.1


def test_a_family_reused_without_the_bulk_proposal_does_not_keep_an_earlier_one():
    # clompr stores its bulk proposal on the family; a later call on the same family with
    # bulk_proposal=False must decode as on a fresh family (it drew half its candidates from
    # the earlier call's proposal)
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal(c, 0.3, size=(2000, 2)) for c in ((-2, -2), (2, 1), (0, 3))])
    fm = make_feature_map(2, 60, "complex", operator="dense", law=GaussianLaw(1.0), random_state=1)
    prob = DecodingProblem(fm, fm.sketch(X).mean())
    lo, hi = np.full(2, -12.0), np.full(2, 12.0)
    reused = DiracAtoms(prob, lo, hi)
    clompr(reused, 3, n_init=1, random_state=5)  # with the bulk proposal (the default)
    assert reused.proposal is not None
    again = clompr(reused, 3, n_init=1, random_state=5, bulk_proposal=False)
    fresh = clompr(DiracAtoms(prob, lo, hi), 3, n_init=1, random_state=5, bulk_proposal=False)
    assert reused.proposal is None
    np.testing.assert_array_equal(again.theta, fresh.theta)
