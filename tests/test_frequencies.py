"""Tests of pysketch.frequencies: frequency laws omega = R * phi.

Statistical tests use fixed seeds and state their confidence:
* mean checks pass when |mean - expected| <= K = 5 standard errors estimated from the sample
  (a correct implementation fails one check with probability ~6e-7, normal approximation);
* Kolmogorov-Smirnov tests pass when p > ALPHA = 1e-4.
Where useful, a "power" check shows the same test rejects a plausible wrong implementation.
"""

import json
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, interpolate, stats

from pysketch import frequencies as fq
from pysketch.frequencies import (
    AdaptedRadiusLaw,
    FoldedGaussianLaw,
    FrequencyLaw,
    GaussianLaw,
    KernelLaw,
    LogUniformLaw,
    OrthonormalBasesLaw,
    QuadraticGaussianLaw,
    make_law,
)

K = 5.0  # standard errors
ALPHA = 1e-4  # KS level


def p_ar(r):
    """Unnormalized adapted radius density, thesis (4.15), written independently of the module."""
    return math.sqrt(r**2 + r**4 / 4.0) * math.exp(-(r**2) / 2.0)


def quad_ar(f):
    return integrate.quad(lambda r: f(r) * p_ar(r), 0.0, math.inf, epsabs=1e-13, epsrel=1e-13)[0]


Z_QUAD = quad_ar(lambda r: 1.0)
ER_QUAD = quad_ar(lambda r: r) / Z_QUAD
ER2_QUAD = quad_ar(lambda r: r * r) / Z_QUAD


def _ar_cdf_reference():
    """CDF of the unit adapted radius: quad of (4.15) over a grid of [0, 12] (the mass beyond
    12 is ~1e-31), interpolated by a cubic Hermite spline whose slopes are the density itself
    (interpolation error ~1e-12, checked in test_ar_cdf_reference)."""
    grid = np.linspace(0.0, 12.0, 2401)
    pieces = [integrate.quad(p_ar, a, b, epsabs=1e-15)[0] for a, b in zip(grid[:-1], grid[1:])]
    values = np.concatenate([[0.0], np.cumsum(pieces)]) / Z_QUAD
    slopes = np.array([p_ar(r) for r in grid]) / Z_QUAD
    spline = interpolate.CubicHermiteSpline(grid, values, slopes, extrapolate=False)

    def cdf(x):
        x = np.asarray(x, dtype=float)
        return np.where(x >= 12.0, 1.0, spline(np.clip(x, 0.0, 12.0)))

    return cdf


ar_cdf = _ar_cdf_reference()


def assert_mean(samples, expected, k=K, axis=0):
    """|mean - expected| <= k standard errors (exact equality when the samples are constant)."""
    samples = np.asarray(samples, dtype=float)
    mean = samples.mean(axis=axis)
    se = samples.std(axis=axis, ddof=1) / math.sqrt(samples.shape[axis])
    expected = np.broadcast_to(expected, mean.shape)
    tol = np.maximum(k * se, 1e-12 * np.maximum(1.0, np.abs(expected)))
    bad = np.abs(mean - expected) > tol
    assert not bad.any(), (
        f"mean {mean[bad]} vs expected {expected[bad]} (tolerance {tol[bad]}, {k} standard errors)"
    )


ALL_LAWS = [
    GaussianLaw(0.7),
    AdaptedRadiusLaw(0.7),
    AdaptedRadiusLaw(2.0, normalization="none"),
    FoldedGaussianLaw(1.5),
    FoldedGaussianLaw(0.5, normalization="none"),
    QuadraticGaussianLaw(),
    OrthonormalBasesLaw(),
    LogUniformLaw(0.8, 0.2, 5.0),
]
KERNEL_LAWS = [law for law in ALL_LAWS if isinstance(law, KernelLaw)]
RADIAL_LAWS = [law for law in ALL_LAWS if not isinstance(law, OrthonormalBasesLaw)]


# ---------------------------------------------------------------------------------------
# Adapted radius constants and the erratum of (4.16)
# ---------------------------------------------------------------------------------------


def test_adapted_radius_constants_against_quad():
    assert fq.ADAPTED_RADIUS_NORMALIZER == pytest.approx(Z_QUAD, abs=1e-6, rel=0)
    assert fq.ADAPTED_RADIUS_MEAN == pytest.approx(ER_QUAD, abs=1e-6, rel=0)
    assert fq.ADAPTED_RADIUS_SECOND_MOMENT == pytest.approx(ER2_QUAD, abs=1e-6, rel=0)
    # The values quoted in the notes (seed003 sec. 1.3), to their 5 decimals.
    assert round(fq.ADAPTED_RADIUS_NORMALIZER, 5) == 1.21068
    assert round(fq.ADAPTED_RADIUS_MEAN, 5) == 1.35143
    assert round(fq.ADAPTED_RADIUS_SECOND_MOMENT, 5) == 2.30392
    assert round(math.sqrt(fq.ADAPTED_RADIUS_SECOND_MOMENT), 5) == 1.51787


def test_adapted_radius_erratum_416():
    """(4.16) as printed divides by E[R^2]: E||omega||^2 = d / (sigma^2 E[R^2]), not d / sigma^2.

    The implementation divides by sqrt(E[R^2]) (notes seed003 sec. 1.3 and 7).
    """
    d, sigma, m = 10, 0.8, 200_000
    er2 = fq.ADAPTED_RADIUS_SECOND_MOMENT
    r = AdaptedRadiusLaw(1.0, normalization="none").radii(m, d, random_state=11)  # unit R
    printed = (r * math.sqrt(d) / (sigma * er2)) ** 2  # ||omega||^2 with (4.16) as printed
    assert_mean(printed, d / (sigma**2 * er2))
    se = printed.std() / math.sqrt(m)
    assert abs(printed.mean() - d / sigma**2) > 100 * se  # far from the claimed value
    corrected = AdaptedRadiusLaw(sigma).radii(m, d, random_state=11)
    # Same seed: the "dimension" radii are exactly the unit radii times sqrt(d)/(sigma sqrt(E R^2)).
    np.testing.assert_allclose(corrected, r * math.sqrt(d) / (sigma * math.sqrt(er2)), rtol=1e-14)
    assert_mean(corrected**2, d / sigma**2)
    assert AdaptedRadiusLaw(sigma).expected_sq_norm(d) == pytest.approx(d / sigma**2, rel=1e-14)


def test_adapted_radius_tail_is_not_truncated():
    """The sampler is exact in the tail: pycle's grid on [0, 5] would give no R > 5."""
    m = 4_000_000
    r = AdaptedRadiusLaw(1.0, normalization="none").radii(m, 3, random_state=5)
    for cut in (3.0, 4.0, 5.0):
        tail = integrate.quad(p_ar, cut, math.inf)[0] / Z_QUAD
        count = np.count_nonzero(r > cut)
        # Binomial count: mean m p, standard deviation sqrt(m p (1 - p)).
        assert abs(count - m * tail) <= K * math.sqrt(m * tail * (1 - tail)), (cut, count, m * tail)
    assert integrate.quad(p_ar, 5.0, math.inf)[0] / Z_QUAD == pytest.approx(8.6e-6, abs=0.05e-6)
    assert r.max() > 5.0  # expected 34 values beyond 5; P(none) ~ 1e-15


# ---------------------------------------------------------------------------------------
# E||omega||^2
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("law", ALL_LAWS, ids=repr)
@pytest.mark.parametrize("d", [1, 3, 8])
def test_expected_sq_norm_dense(law, d):
    m = 30_000
    omega = law.sample(d, m, random_state=1)
    assert omega.shape == (d, m) and omega.dtype == np.float64
    assert_mean((omega**2).sum(axis=0), law.expected_sq_norm(d))


@pytest.mark.parametrize("law", ALL_LAWS, ids=repr)
@pytest.mark.parametrize(("dim", "d"), [(1, None), (5, None), (64, None), (8, 5), (64, 33)])
def test_expected_sq_norm_radii(law, dim, d):
    r = law.radii(40_000, dim, random_state=2, d=d)
    assert r.shape == (40_000,) and r.dtype == np.float64
    assert np.all(np.isfinite(r)) and np.all(r >= 0)
    assert_mean(r**2, law.expected_sq_norm(dim, d=d))


def test_expected_sq_norm_closed_forms():
    s = 0.5
    for dim in (1, 7, 1024):
        assert GaussianLaw(s).expected_sq_norm(dim) == dim / s**2
        assert AdaptedRadiusLaw(s).expected_sq_norm(dim) == pytest.approx(dim / s**2)
        assert FoldedGaussianLaw(s).expected_sq_norm(dim) == pytest.approx(dim / s**2)
        assert AdaptedRadiusLaw(s, "none").expected_sq_norm(dim) == pytest.approx(
            ER2_QUAD / s**2, rel=1e-9
        )
        assert FoldedGaussianLaw(s, "none").expected_sq_norm(dim) == pytest.approx(1 / s**2)
        assert QuadraticGaussianLaw().expected_sq_norm(dim) == 1.0
        assert OrthonormalBasesLaw().expected_sq_norm(dim) == 1.0
    # Padded frequencies (dim = 8, d = 5): the first d coordinates keep expected_sq_norm(d).
    assert QuadraticGaussianLaw().expected_sq_norm(8, d=5) == pytest.approx(8 / 5)
    assert AdaptedRadiusLaw(s, "none").expected_sq_norm(8, d=5) == pytest.approx(
        ER2_QUAD / s**2 * 8 / 5, rel=1e-9
    )
    assert FoldedGaussianLaw(s, "none").expected_sq_norm(8, d=5) == pytest.approx(8 / (5 * s**2))
    for law in KERNEL_LAWS[:2] + [FoldedGaussianLaw(s)]:
        assert law.expected_sq_norm(8, d=5) == law.expected_sq_norm(8)


@pytest.mark.parametrize("law", RADIAL_LAWS, ids=repr)
def test_padding_keeps_the_law_of_the_first_d_coordinates(law):
    """Structured operators: directions in d_p, radii(m, d_p, d=d), keep d coordinates.

    The first d coordinates must have E||omega_{1:d}||^2 = expected_sq_norm(d) (the law in
    dimension d), e.g. d / sigma^2 for the Gaussian law (thesis Lemma 5.6; notes pitfall 2).
    """
    d, d_p, m = 5, 8, 100_000
    rng = np.random.default_rng(3)
    r = law.radii(m, d_p, random_state=rng, d=d)
    phi = rng.standard_normal((d_p, m))
    phi /= np.linalg.norm(phi, axis=0)
    assert_mean((r * phi[:d]) ** 2, law.expected_sq_norm(d) / d * np.ones(d), axis=1)


def test_padding_power_chi_d_radii_are_wrong():
    """Power check for the test above: chi_d radii in d_p give (d/d_p) d / sigma^2."""
    d, d_p, m, sigma = 5, 8, 100_000, 1.0
    rng = np.random.default_rng(3)
    r = GaussianLaw(sigma).radii(m, d, random_state=rng)  # the pitfall: chi_d, not chi_{d_p}
    phi = rng.standard_normal((d_p, m))
    phi /= np.linalg.norm(phi, axis=0)
    sq = ((r * phi[:d]) ** 2).sum(axis=0)
    assert_mean(sq, d * d / (d_p * sigma**2))
    assert abs(sq.mean() - d / sigma**2) > 50 * sq.std() / math.sqrt(m)


# ---------------------------------------------------------------------------------------
# Laws of the radii (KS tests)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [1, 2, 5, 8, 64, 1000])
def test_gaussian_radii_are_chi(dim):
    sigma = 1.7
    r = GaussianLaw(sigma).radii(5000, dim, random_state=dim)
    assert stats.kstest(r, stats.chi(dim, scale=1 / sigma).cdf).pvalue > ALPHA
    # Padding: radii(m, d_p, d=d) are chi_{d_p}, whatever d.
    r = GaussianLaw(sigma).radii(5000, dim, random_state=dim, d=(dim + 1) // 2)
    assert stats.kstest(r, stats.chi(dim, scale=1 / sigma).cdf).pvalue > ALPHA


def test_gaussian_radii_ks_power():
    """The KS test tells chi_{d_p} from chi_d (notes pitfall 2): chi_8 radii reject chi_5."""
    r = GaussianLaw(1.0).radii(5000, 8, random_state=0, d=5)
    assert stats.kstest(r, stats.chi(5).cdf).pvalue < ALPHA


@pytest.mark.parametrize(
    ("normalization", "dim", "d"),
    [("dimension", 1, None), ("dimension", 6, None), ("dimension", 8, 5), ("none", 6, None),
     ("none", 8, 5)],
)
def test_adapted_radius_radii_follow_p_ar(normalization, dim, d):
    sigma = 0.6
    r = AdaptedRadiusLaw(sigma, normalization).radii(200_000, dim, random_state=7, d=d)
    if normalization == "dimension":  # corrected (4.16), whatever d
        scale = math.sqrt(dim) / (sigma * math.sqrt(ER2_QUAD))
    else:  # R / sigma, times sqrt(d_p / d) with padding
        scale = math.sqrt(dim / (dim if d is None else d)) / sigma
    unit = r / scale
    assert stats.kstest(unit, ar_cdf).pvalue > ALPHA
    # Power: the Rayleigh law (pycle's k-means variant, p(R) ~ R exp(-R^2/2)) is rejected.
    assert stats.kstest(unit, stats.rayleigh.cdf).pvalue < ALPHA


def test_ar_cdf_reference():
    """The reference CDF itself, against quad at off-grid points."""
    for x in (0.0, 1e-3, 0.3217, 1.0, 2.00051, 3.3, 4.7, 7.1, 11.99):
        direct = integrate.quad(p_ar, 0.0, x, epsabs=1e-15)[0] / Z_QUAD
        assert ar_cdf(x) == pytest.approx(direct, abs=1e-11)
    assert ar_cdf(12.0) == pytest.approx(1.0, abs=1e-13) and ar_cdf(50.0) == 1.0


@pytest.mark.parametrize(
    ("normalization", "dim", "d"),
    [("dimension", 1, None), ("dimension", 9, None), ("dimension", 16, 9), ("none", 9, None),
     ("none", 16, 9)],
)
def test_folded_gaussian_radii_are_half_normal(normalization, dim, d):
    sigma = 2.5
    r = FoldedGaussianLaw(sigma, normalization).radii(5000, dim, random_state=8, d=d)
    if normalization == "dimension":
        scale = math.sqrt(dim) / sigma
    else:
        scale = math.sqrt(dim / (dim if d is None else d)) / sigma
    assert stats.kstest(r, stats.halfnorm(scale=scale).cdf).pvalue > ALPHA


@pytest.mark.parametrize(("dim", "d"), [(4, None), (16, 10)])
def test_quadratic_gaussian_radii_are_chi_over_sqrt_d(dim, d):
    r = QuadraticGaussianLaw().radii(5000, dim, random_state=9, d=d)
    scale = 1 / math.sqrt(dim if d is None else d)
    assert stats.kstest(r, stats.chi(dim, scale=scale).cdf).pvalue > ALPHA


def test_orthonormal_radii_are_ones():
    r = OrthonormalBasesLaw().radii(37, 16, random_state=0, d=9)
    assert r.dtype == np.float64
    np.testing.assert_array_equal(r, np.ones(37))


# ---------------------------------------------------------------------------------------
# Directions and second moments of the dense Omega
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("law", ALL_LAWS, ids=repr)
def test_directions_are_uniform(law):
    d, m = 4, 40_000
    omega = law.sample(d, m, random_state=4)
    phi = omega / np.linalg.norm(omega, axis=0)
    assert_mean(phi, np.zeros(d), axis=1)
    outer = (phi[:, None, :] * phi[None, :, :]).reshape(d * d, m)
    assert_mean(outer, (np.eye(d) / d).ravel(), axis=1)
    # Moments up to 2 do not tell the sphere from, e.g., normalized uniform-cube vectors: the
    # squared coordinates of a uniform direction are Beta(1/2, (d - 1)/2). One KS test per
    # coordinate at ALPHA (d tests: overall level d * ALPHA).
    for i in range(d):
        assert stats.kstest(phi[i, :5000] ** 2, stats.beta(0.5, (d - 1) / 2).cdf).pvalue > ALPHA


def test_gaussian_second_moment_matrix():
    d, m, sigma = 3, 60_000, 0.4
    omega = GaussianLaw(sigma).sample(d, m, random_state=6)
    assert_mean(omega, np.zeros(d), axis=1)
    outer = (omega[:, None, :] * omega[None, :, :]).reshape(d * d, m)
    assert_mean(outer, (np.eye(d) / sigma**2).ravel(), axis=1)
    # Gaussian coordinates: each one passes a KS test against N(0, 1/sigma^2).
    for row in omega:
        assert stats.kstest(row[:5000], stats.norm(scale=1 / sigma).cdf).pvalue > ALPHA


@pytest.mark.parametrize("z", [[0.5, 0.0, 0.0], [1.0, -1.0, 0.5], [0.1, 0.2, -0.3], [2.0, 1.0, 1.0]])
def test_gaussian_kernel_monte_carlo(z):
    """E cos(omega^T z) = exp(-||z||^2 / (2 sigma^2)) for omega ~ N(0, I / sigma^2)
    (thesis (2.24)-(2.25)), for the dense Omega and for padded radii (d = 3 in d_p = 4)."""
    z = np.asarray(z)
    sigma, m = 1.3, 100_000
    target = math.exp(-(z @ z) / (2 * sigma**2))
    omega = GaussianLaw(sigma).sample(3, m, random_state=10)
    assert_mean(np.cos(z @ omega), target)
    rng = np.random.default_rng(10)
    r = GaussianLaw(sigma).radii(m, 4, random_state=rng, d=3)
    phi = rng.standard_normal((4, m))
    phi /= np.linalg.norm(phi, axis=0)
    assert_mean(np.cos(z @ (r * phi[:3])), target)


def test_gaussian_kernel_power_wrong_padding():
    """Power: chi_3 radii with directions in d_p = 4 give a kernel off by many standard errors."""
    z, sigma, m = np.array([1.0, -1.0, 0.5]), 1.3, 100_000
    rng = np.random.default_rng(10)
    r = GaussianLaw(sigma).radii(m, 3, random_state=rng)
    phi = rng.standard_normal((4, m))
    phi /= np.linalg.norm(phi, axis=0)
    c = np.cos(z @ (r * phi[:3]))
    assert abs(c.mean() - math.exp(-(z @ z) / (2 * sigma**2))) > 10 * c.std() / math.sqrt(m)


# ---------------------------------------------------------------------------------------
# Orthonormal bases
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("d", "m"), [(1, 3), (2, 2), (5, 40), (16, 64)])
def test_orthonormal_bases_structure(d, m):
    omega = OrthonormalBasesLaw().sample(d, m, random_state=12)
    assert omega.shape == (d, m) and omega.dtype == np.float64
    for b in range(m // d):
        block = omega[:, b * d : (b + 1) * d]
        np.testing.assert_allclose(block.T @ block, np.eye(d), atol=1e-12, rtol=0)
    # Thesis (8.6): Omega Omega^T = (m/d) I_d.
    np.testing.assert_allclose(omega @ omega.T, (m / d) * np.eye(d), atol=1e-12 * m / d, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(omega, axis=0), 1.0, atol=1e-12)


def test_orthonormal_bases_are_haar():
    """Every entry of a Haar block has mean 0 and variance 1/d. Without the sign correction of
    the QR factors, LAPACK's Householder QR gives B[0, 0] = -|A00| / ||A[:, 0]|| < 0 always."""
    d, blocks = 3, 20_000
    omega = OrthonormalBasesLaw().sample(d, d * blocks, random_state=13)
    entries = omega.reshape(d, blocks, d).transpose(0, 2, 1).reshape(d * d, blocks)
    assert_mean(entries, np.zeros(d * d), axis=1)
    assert_mean(entries**2, np.full(d * d, 1 / d), axis=1)
    # Power: the uncorrected Q factor fails the same test.
    q, _ = np.linalg.qr(np.random.default_rng(13).standard_normal((blocks, d, d)))
    assert abs(q[:, 0, 0].mean()) > 50 * q[:, 0, 0].std() / math.sqrt(blocks)


@pytest.mark.parametrize(("d", "m"), [(3, 4), (4, 2), (5, 12)])
def test_orthonormal_bases_m_not_multiple_of_d(d, m):
    with pytest.raises(ValueError, match=f"m must be a multiple of d.*m={m}, d={d}"):
        OrthonormalBasesLaw().sample(d, m)


# ---------------------------------------------------------------------------------------
# Reproducibility and streams
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("law", ALL_LAWS, ids=repr)
def test_seeded_reproducibility(law):
    np.testing.assert_array_equal(law.radii(50, 8, 3), law.radii(50, 8, 3))
    np.testing.assert_array_equal(law.sample(4, 20, 3), law.sample(4, 20, 3))
    np.testing.assert_array_equal(
        law.sample(4, 20, np.random.SeedSequence(9)), law.sample(4, 20, np.random.default_rng(9))
    )
    np.testing.assert_array_equal(
        law.sample(4, 20, np.random.RandomState(2)), law.sample(4, 20, np.random.RandomState(2))
    )
    assert not np.array_equal(law.sample(4, 20, 3), law.sample(4, 20, 4))
    rng = np.random.default_rng(5)
    first, second = law.sample(4, 20, rng), law.sample(4, 20, rng)  # the generator advances
    assert not np.array_equal(first, second)


@pytest.mark.parametrize("law", RADIAL_LAWS, ids=repr)
def test_sample_draws_radii_then_directions_from_one_stream(law):
    d, m = 6, 200
    omega = law.sample(d, m, random_state=21)
    # The documented order: the column norms are the radii of the same seed...
    np.testing.assert_allclose(np.linalg.norm(omega, axis=0), law.radii(m, d, 21), rtol=1e-13)
    # ...and the directions continue that stream; they do not restart from the seed (which
    # would make radii and directions dependent).
    restarted = np.random.default_rng(21).standard_normal((d, m))
    restarted /= np.linalg.norm(restarted, axis=0)
    phi = omega / np.linalg.norm(omega, axis=0)
    assert np.abs(phi - restarted).max() > 0.1
    # Radii and directions are uncorrelated: corr(R, phi_1^2) ~ 0 (5 standard errors ~ 5/sqrt(m)).
    big = law.sample(2, 40_000, random_state=22)
    norms = np.linalg.norm(big, axis=0)
    corr = np.corrcoef(norms, (big[0] / norms) ** 2)[0, 1]
    assert abs(corr) < K / math.sqrt(40_000)


# ---------------------------------------------------------------------------------------
# Parameters: repr, equality, serialization
# ---------------------------------------------------------------------------------------


def test_repr():
    assert repr(GaussianLaw(2.0)) == "GaussianLaw(sigma=2.0)"
    assert repr(AdaptedRadiusLaw(1)) == "AdaptedRadiusLaw(sigma=1, normalization='dimension')"
    assert (
        repr(FoldedGaussianLaw(0.5, normalization="none"))
        == "FoldedGaussianLaw(sigma=0.5, normalization='none')"
    )
    assert repr(QuadraticGaussianLaw()) == "QuadraticGaussianLaw()"
    assert repr(OrthonormalBasesLaw()) == "OrthonormalBasesLaw()"
    for law in ALL_LAWS:
        assert eval(repr(law), vars(fq)) == law


def test_parameters_stored_unchanged_and_read_only():
    sigma = np.float32(0.25)
    law = AdaptedRadiusLaw(sigma, "none")
    assert law.sigma is sigma and law.normalization == "none"
    assert law.get_params() == {"sigma": sigma, "normalization": "none"}
    with pytest.raises(AttributeError):
        law.sigma = 1.0
    with pytest.raises(AttributeError):
        law.normalization = "dimension"


def test_equality_and_hash():
    assert GaussianLaw(1) == GaussianLaw(1.0)
    assert hash(GaussianLaw(1)) == hash(GaussianLaw(1.0))
    assert GaussianLaw(1.0) != GaussianLaw(2.0)
    assert AdaptedRadiusLaw(1.0) == AdaptedRadiusLaw(1.0, "dimension")
    assert AdaptedRadiusLaw(1.0) != AdaptedRadiusLaw(1.0, "none")
    assert AdaptedRadiusLaw(1.0) != FoldedGaussianLaw(1.0)
    assert GaussianLaw(1.0) != AdaptedRadiusLaw(1.0)
    assert QuadraticGaussianLaw() == QuadraticGaussianLaw()
    assert QuadraticGaussianLaw() != OrthonormalBasesLaw()
    assert GaussianLaw(1.0) != 1.0 and GaussianLaw(1.0) != {"name": "gaussian", "sigma": 1.0}
    assert len({GaussianLaw(1.0), GaussianLaw(1), AdaptedRadiusLaw(1.0), QuadraticGaussianLaw()}) == 3


@pytest.mark.parametrize(
    "law",
    ALL_LAWS + [GaussianLaw(3), GaussianLaw(np.float64(0.1)), FoldedGaussianLaw(np.float32(0.1))],
    ids=repr,
)
def test_dict_round_trip(law):
    desc = law.to_dict()
    assert desc["name"] == law.name
    text = json.dumps(desc)
    rebuilt = FrequencyLaw.from_dict(json.loads(text))
    assert rebuilt == law and type(rebuilt) is type(law)
    assert type(law).from_dict(desc) == law
    assert pickle.loads(pickle.dumps(law)) == law


def test_to_dict_records_the_normalization():
    assert AdaptedRadiusLaw(2.0).to_dict() == {
        "name": "adapted_radius",
        "sigma": 2.0,
        "normalization": "dimension",
    }
    assert FoldedGaussianLaw(2, "none").to_dict() == {
        "name": "folded_gaussian",
        "sigma": 2.0,
        "normalization": "none",
    }
    assert GaussianLaw(2.0).to_dict() == {"name": "gaussian", "sigma": 2.0}
    assert OrthonormalBasesLaw().to_dict() == {"name": "orthonormal_bases"}


@pytest.mark.parametrize(
    ("desc", "error", "match"),
    [
        ({"name": "gauss", "sigma": 1.0}, ValueError, "description\\['name'\\] must be one of"),
        ({"name": 3}, ValueError, "description\\['name'\\] must be one of"),
        ({"sigma": 1.0}, ValueError, "no 'name' key"),
        ({"name": "gaussian", "sigma": 1.0, "normalization": "none"}, ValueError, "normalization"),
        ({"name": "orthonormal_bases", "sigma": 1.0}, ValueError, "not parameters"),
        ({"name": "gaussian", "sigma": -1.0}, ValueError, "sigma"),
        ({"name": "gaussian"}, TypeError, "sigma"),
        ({"name": "adapted_radius", "sigma": 1.0, "normalization": "l2"}, ValueError, "normalization"),
        ([("name", "gaussian")], TypeError, "description must be a mapping"),
        ("gaussian", TypeError, "description must be a mapping"),
    ],
)
def test_from_dict_errors(desc, error, match):
    with pytest.raises(error, match=match):
        FrequencyLaw.from_dict(desc)


def test_from_dict_on_a_subclass_checks_the_class():
    with pytest.raises(ValueError, match="AdaptedRadiusLaw, not a GaussianLaw"):
        GaussianLaw.from_dict(AdaptedRadiusLaw(1.0).to_dict())
    assert KernelLaw.from_dict(FoldedGaussianLaw(1.0).to_dict()) == FoldedGaussianLaw(1.0)


# ---------------------------------------------------------------------------------------
# make_law
# ---------------------------------------------------------------------------------------


def test_make_law():
    assert make_law("gaussian", 2.0) == GaussianLaw(2.0)
    assert make_law("adapted_radius", 2.0) == AdaptedRadiusLaw(2.0, "dimension")
    assert make_law("folded_gaussian", 0.5) == FoldedGaussianLaw(0.5, "dimension")
    law = AdaptedRadiusLaw(1.0, "none")
    assert make_law(law) is law
    assert make_law(law, None) is law
    q = QuadraticGaussianLaw()
    assert make_law(q) is q


@pytest.mark.parametrize(
    ("law", "sigma", "error", "match"),
    [
        ("Gaussian", 1.0, ValueError, "law must be a FrequencyLaw instance or one of"),
        ("orthonormal_bases", 1.0, ValueError, "law must be"),
        ("", 1.0, ValueError, "law must be"),
        (None, 1.0, TypeError, "law must be"),
        (GaussianLaw, 1.0, TypeError, "law must be"),
        (1.0, 1.0, TypeError, "law must be"),
        ("gaussian", None, ValueError, "sigma .* is required"),
        (GaussianLaw(1.0), 2.0, ValueError, "sigma must be None when law is a FrequencyLaw"),
        ("gaussian", 0.0, ValueError, "sigma"),
        ("adapted_radius", "1", TypeError, "sigma"),
    ],
)
def test_make_law_errors(law, sigma, error, match):
    with pytest.raises(error, match=match):
        make_law(law, sigma)


# ---------------------------------------------------------------------------------------
# Bad inputs
# ---------------------------------------------------------------------------------------

KERNEL_CLASSES = [GaussianLaw, AdaptedRadiusLaw, FoldedGaussianLaw]


@pytest.mark.parametrize("cls", KERNEL_CLASSES)
@pytest.mark.parametrize(
    ("sigma", "error"),
    [
        (0, ValueError),
        (0.0, ValueError),
        (-1, ValueError),
        (-0.5, ValueError),
        (float("nan"), ValueError),
        (float("inf"), ValueError),
        (-float("inf"), ValueError),
        (np.float64("nan"), ValueError),
        (1e-200, ValueError),  # 1/sigma**2 overflows
        (1e200, ValueError),  # 1/sigma**2 underflows to 0
        (True, TypeError),
        (np.True_, TypeError),
        ("1", TypeError),
        (None, TypeError),
        (1 + 0j, TypeError),
        (np.array(1.0), TypeError),
        ([1.0], TypeError),
    ],
)
def test_bad_sigma(cls, sigma, error):
    with pytest.raises(error, match="sigma"):
        cls(sigma)


@pytest.mark.parametrize("cls", [AdaptedRadiusLaw, FoldedGaussianLaw])
@pytest.mark.parametrize(
    ("normalization", "error"),
    [("Dimension", ValueError), ("l2", ValueError), ("", ValueError), (None, TypeError), (1, TypeError)],
)
def test_bad_normalization(cls, normalization, error):
    with pytest.raises(error, match="normalization must be one of"):
        cls(1.0, normalization)


def test_abstract_classes_cannot_be_instantiated():
    with pytest.raises(TypeError):
        FrequencyLaw()
    with pytest.raises(TypeError):
        KernelLaw(1.0)


BAD_COUNTS = [
    (0, ValueError),
    (-3, ValueError),
    (2.5, TypeError),
    (3.0, TypeError),
    (True, TypeError),
    (np.bool_(True), TypeError),
    ("3", TypeError),
    (None, TypeError),
]


@pytest.mark.parametrize("law", ALL_LAWS, ids=repr)
@pytest.mark.parametrize(("bad", "error"), BAD_COUNTS)
def test_bad_m_dim_d(law, bad, error):
    with pytest.raises(error, match="^m must be an int >= 1"):
        law.radii(bad, 4)
    with pytest.raises(error, match="^dim must be an int >= 1"):
        law.radii(3, bad)
    with pytest.raises(error, match="^m must be an int >= 1"):
        law.sample(4, bad)
    with pytest.raises(error, match="^d must be an int >= 1"):
        law.sample(bad, 4)
    with pytest.raises(error, match="^dim must be an int >= 1"):
        law.expected_sq_norm(bad)
    if bad is not None:  # d=None is the default
        with pytest.raises(error, match="^d must be an int >= 1"):
            law.radii(3, 4, d=bad)
        with pytest.raises(error, match="^d must be an int >= 1"):
            law.expected_sq_norm(4, d=bad)


@pytest.mark.parametrize("law", ALL_LAWS, ids=repr)
def test_d_larger_than_dim(law):
    with pytest.raises(ValueError, match="d .* must be <= dim=4; got d=5"):
        law.radii(3, 4, d=5)
    with pytest.raises(ValueError, match="must be <= dim=4"):
        law.expected_sq_norm(4, d=5)


@pytest.mark.parametrize("law", ALL_LAWS, ids=repr)
def test_numpy_integers_accepted(law):
    r = law.radii(np.int64(5), np.int32(4), random_state=np.uint16(1), d=np.int8(3))
    assert r.shape == (5,)
    omega = law.sample(np.int64(2), np.uint32(4), random_state=1)
    assert omega.shape == (2, 4)
    assert isinstance(law.expected_sq_norm(np.int64(4)), float)


@pytest.mark.parametrize("law", ALL_LAWS, ids=repr)
@pytest.mark.parametrize(("bad", "error"), [(-1, ValueError), (1.5, TypeError), ("seed", TypeError)])
def test_bad_random_state(law, bad, error):
    with pytest.raises(error, match="^random_state must be"):
        law.radii(3, 4, random_state=bad)
    with pytest.raises(error, match="^random_state must be"):
        law.sample(2, 4, random_state=bad)


# ---------------------------------------------------------------------------------------
# Shapes, dtypes and finiteness over many parameters
# ---------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    law_index=st.integers(0, len(ALL_LAWS) - 1),
    sigma=st.floats(1e-6, 1e6),
    d=st.integers(1, 9),
    blocks=st.integers(1, 5),
    seed=st.integers(0, 2**32),
)
def test_shapes_and_finiteness(law_index, sigma, d, blocks, seed):
    law = ALL_LAWS[law_index]
    if isinstance(law, KernelLaw):
        law = FrequencyLaw.from_dict({**law.to_dict(), "sigma": sigma})
    m = d * blocks
    omega = law.sample(d, m, random_state=seed)
    assert omega.shape == (d, m) and omega.dtype == np.float64 and omega.flags.c_contiguous
    assert np.all(np.isfinite(omega))
    r = law.radii(m, 2 * d, random_state=seed, d=d)
    assert r.shape == (m,) and r.dtype == np.float64
    assert np.all(np.isfinite(r)) and np.all(r >= 0)
    assert math.isfinite(law.expected_sq_norm(2 * d, d=d)) and law.expected_sq_norm(d) > 0


def test_log_uniform_law_band_and_moments():
    law = LogUniformLaw(2.0)  # radius log-uniform on [0.05 / 2, 20 / 2]
    assert (law.low, law.high) == (0.05, 20.0)
    r = law.radii(50_000, 3, random_state=0)
    assert r.min() >= 0.025 and r.max() <= 10.0
    # log R is uniform: its quartiles are at 1/4, 1/2, 3/4 of [log 0.025, log 10]
    q = np.quantile(np.log(r), [0.25, 0.5, 0.75])
    np.testing.assert_allclose(q, np.log(0.025) + np.array([0.25, 0.5, 0.75]) * np.log(400), atol=0.05)
    # E R^2 = (h^2 - l^2) / (2 ln(h / l)) / sigma^2, exactly
    assert law.expected_sq_norm(3) == pytest.approx((400 - 0.0025) / (2 * np.log(400)) / 4, rel=1e-14)
    with pytest.raises(ValueError, match="high must be > low"):
        LogUniformLaw(1.0, 2.0, 1.0)
    with pytest.raises(ValueError, match="low must be a positive finite number"):
        LogUniformLaw(1.0, 0.0)
    assert make_law("log_uniform", 3.0) == LogUniformLaw(3.0)
