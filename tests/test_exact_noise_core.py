"""The compiled exact noise samplers (pysketch/exact_noise.hpp through pysketch._core):
the ChaCha20 block against RFC 8439, the discrete Laplace and discrete Gaussian laws against
their exact pmfs (chi-square over bins, mean and variance), agreement in law with the pure-Python
reference samplers of pysketch.privacy.mechanisms (Canonne, Kamath & Steinke 2020, Algorithms
1-3), reproducibility (key, nonce, thread count, prefix), and the range checks.

Confidence. Every statistical check fails at p < 1e-6 (chi-square) or at |z| > 5.3 (mean,
variance; two-sided p ~ 1.2e-7 under the normal approximation, which 10^5-10^6 draws of these
light-tailed laws justify); over the ~40 checks below a correct sampler fails one with
probability below 1e-5. Keys are fixed, so a run is deterministic.

Mutations tried (each once, then restored):
- in laplace_draw, the geometric part counted from 1 (`std::uint64_t v = 1;`): 19 tests
  failed - the Laplace law for every t >= 0.3 (t = 2^-10 still draws only zeros), every
  Gaussian law and all four agreements with the Python reference;
- den = a t^2 b (the factor 2 dropped) in gaussian_params: the 8 Gaussian law tests and the
  2 Gaussian agreements failed, the Laplace ones passed;
- the shift-subtract division of UInt<4> skipping its last quotient bit (`i > 0`): exactly
  the three unreduced-parameter Gaussian tests failed (chi-square p ~ 1e-200 and below), the
  only ones that take the 256-bit path.
"""

import math
import os
import re
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from scipy import special, stats

import pysketch
from pysketch import _core
from pysketch.privacy import mechanisms
from pysketch.runtime import SIMD_LEVELS

P_MIN = 1e-6  # chi-square: fail below
Z_MAX = 5.3   # mean / variance: fail above
N_LAW = 10**7  # compiled draws per law test (issue 35: chi-square over 10^7 draws)
N_REF = 10**5  # Python reference draws per agreement test
SIDE_BINS = 30  # bins per side before pooling

KEY = bytes(range(32))


def key_of(i):
    return bytes([i]) * 32


# ---------------------------------------------------------------------------------- ChaCha20

def test_chacha20_rfc8439_block_vector():
    # RFC 8439 sec. 2.3.2: key 00:01:..:1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00, counter 1
    nonce = bytes.fromhex("000000090000004a00000000")
    expected = bytes.fromhex(
        "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
        "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e")
    assert _core.chacha20_block(KEY, 1, nonce) == expected
    # RFC 8439 appendix A.1, test vector #1: all-zero key and nonce, counter 0
    assert _core.chacha20_block(bytes(32), 0, bytes(12)) == bytes.fromhex(
        "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
        "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586")


# ----------------------------------------------------------------------------- exact laws

class Laplace:
    """Discrete Laplace of scale t: P(k) = c q^|k|, q = exp(-1/t), c = (1 - q) / (1 + q);
    P(K >= m) = q^m / (1 + q) for m >= 1. Closed forms in float64 with expm1 where 1 - q
    would cancel (relative error ~1e-15, far below what 10^6 draws resolve)."""

    def __init__(self, t):
        self.t = Fraction(t)
        self.num, self.den = self.t.numerator, self.t.denominator
        tf = float(self.t)
        self.tf = tf
        self.q = math.exp(-1.0 / tf)
        one_minus_q = -math.expm1(-1.0 / tf)
        self.p0 = one_minus_q / (1.0 + self.q)
        q = self.q
        self.var = 2.0 * q / one_minus_q**2
        # E K^4 = 2 c sum_k k^4 q^k = 2 q (1 + 11 q + 11 q^2 + q^3) / ((1 + q) (1 - q)^4)
        self.m4 = 2.0 * q * (1 + 11 * q + 11 * q * q + q**3) / ((1 + q) * one_minus_q**4)

    def tail(self, m):
        return math.exp(-m / self.tf) / (1.0 + self.q)

    def mass(self, lo, hi):  # P(lo <= K <= hi), 1 <= lo <= hi
        return math.exp(-lo / self.tf) * -math.expm1(-(hi - lo + 1) / self.tf) / (1.0 + self.q)

    def edges(self, bins):  # approximate quantiles of |K|
        return [-self.tf * math.log1p(-j / bins) for j in range(bins)]

    def draw(self, size, key, nonce=0):
        return _core.discrete_laplace(self.num, self.den, size, key, nonce=nonce)

    def reference(self, size, seed):
        src = mechanisms.noise_source(seed)
        return np.array([mechanisms._discrete_laplace_one(src, self.num, self.den) for _ in range(size)])


class Gaussian:
    """Discrete Gaussian with sigma^2 = num / den (num, den as given, not reduced: large
    unreduced pairs take the 256-bit path). Up to sigma^2 = 2^20 the pmf is tabulated
    (|k| <= 12 sigma + 12; the rest weighs < e^-72) and normalised by its sum. For larger
    sigma the continuous law at half-integers is used: P(lo <= K <= hi) = Phi((hi + 1/2) /
    sigma) - Phi((lo - 1/2) / sigma) up to the midpoint-rule error, relative O(1/sigma^2)
    (Euler-Maclaurin), and the normaliser differs from sigma sqrt(2 pi) by O(exp(-2 pi^2
    sigma^2)) (Poisson summation): below 1e-17 at sigma^2 = 2^60. Variance sigma^2 and
    fourth moment 3 sigma^4 there, to the same accuracy."""

    def __init__(self, num, den):
        self.num, self.den = num, den
        self.s2 = Fraction(num, den)
        self.sigma = math.sqrt(float(self.s2))
        self.table = float(self.s2) <= 2**20
        if self.table:
            K = int(12 * self.sigma) + 12
            k = np.arange(K + 1, dtype=np.float64)
            w = np.exp(-k * k / (2.0 * float(self.s2)))
            p = w / (w[0] + 2.0 * w[1:].sum())
            self.p = p
            self.T = np.cumsum(p[::-1])[::-1]  # T[m] = P(K >= m), m >= 0 (small terms first)
            self.p0 = p[0]
            self.var = 2.0 * float((k[1:] ** 2 * p[1:]).sum())
            self.m4 = 2.0 * float((k[1:] ** 4 * p[1:]).sum())
        else:
            self.p0 = special.erf(0.5 / (self.sigma * math.sqrt(2.0)))
            self.var = float(self.s2)
            self.m4 = 3.0 * float(self.s2) ** 2

    def tail(self, m):
        if self.table:
            return float(self.T[m]) if m < len(self.T) else 0.0
        return stats.norm.sf((m - 0.5) / self.sigma)

    def mass(self, lo, hi):
        if self.table:
            return float(self.p[lo:hi + 1].sum())
        return stats.norm.sf((lo - 0.5) / self.sigma) - stats.norm.sf((hi + 0.5) / self.sigma)

    def edges(self, bins):
        return [self.sigma * stats.norm.isf((1 - j / bins) / 2) for j in range(bins)]

    def draw(self, size, key, nonce=0):
        return _core.discrete_gaussian(self.num, self.den, size, key, nonce=nonce)

    def reference(self, size, seed):
        src = mechanisms.noise_source(seed)
        return np.array([mechanisms._discrete_gaussian_one(src, self.num, self.den) for _ in range(size)])


def bins_for(law, n):
    """Symmetric bins with every expected count (n draws) >= 5: a centre [-c, c], positive
    bins [lo_j, hi_j] (the last one open) and their mirror images. Returns c, the lower
    edges lo_j and the probabilities of (centre, positive bins, negative bins)."""
    lows = sorted({max(1, math.ceil(e)) for e in law.edges(SIDE_BINS)})
    masses = [law.mass(lo, nxt - 1) for lo, nxt in zip(lows, lows[1:])] + [law.tail(lows[-1])]
    # pool the tail: walk inwards, close a bin once it reaches 5 expected draws
    pooled_lows, pooled = [], []
    acc = 0.0
    for lo, m in zip(reversed(lows), reversed(masses)):
        acc += m
        if acc * n >= 5:
            pooled_lows.append(lo)
            pooled.append(acc)
            acc = 0.0
    if acc and pooled:  # leftover innermost mass joins the innermost closed bin
        pooled[-1] += acc
        pooled_lows[-1] = lows[0]
    lows, masses = pooled_lows[::-1], pooled[::-1]
    centre, c = law.p0, 0
    if acc and not pooled:  # nothing but the centre
        return None
    # a centre below 5 expected draws absorbs the innermost positive bin and its mirror
    while centre * n < 5 and len(lows) > 1:
        c = lows[1] - 1
        centre += 2 * masses[0]
        lows, masses = lows[1:], masses[1:]
    if lows and lows[0] <= c:
        raise AssertionError("bins overlap")
    probs = np.array([centre] + masses + masses)
    return c, np.array(lows, dtype=np.float64), probs


def counts_for(x, c, lows):
    a = np.abs(x).astype(np.float64)
    idx = np.searchsorted(lows, a, side="right") - 1  # -1: the centre
    pos = np.bincount(idx[(x > 0) & (idx >= 0)], minlength=len(lows))
    neg = np.bincount(idx[(x < 0) & (idx >= 0)], minlength=len(lows))
    centre = int(np.count_nonzero(a <= c))
    assert centre + pos.sum() + neg.sum() == x.size
    return np.concatenate([[centre], pos, neg])


def chi2_p(observed, probs):
    expected = probs / probs.sum() * observed.sum()
    stat = float(((observed - expected) ** 2 / expected).sum())
    return stats.chi2.sf(stat, len(observed) - 1), stat


def check_moments(x, law):
    n = x.size
    xf = x.astype(np.float64)
    z_mean = xf.mean() / math.sqrt(law.var / n)
    m2 = float((xf * xf).mean())
    z_var = (m2 - law.var) / math.sqrt((law.m4 - law.var**2) / n)
    assert abs(z_mean) < Z_MAX, f"mean {xf.mean()} (z = {z_mean:.2f}) for variance {law.var}"
    assert abs(z_var) < Z_MAX, f"second moment {m2} against {law.var} (z = {z_var:.2f})"


def check_law(x, law):
    b = bins_for(law, x.size)
    c, lows, probs = b
    observed = counts_for(x, c, lows)
    p, stat = chi2_p(observed, probs)
    assert p >= P_MIN, f"chi-square {stat:.1f} on {len(observed) - 1} df: p = {p:.3g}"
    check_moments(x, law)


LAPLACE_SCALES = [
    Fraction(1, 2**10),
    Fraction(0.3),
    Fraction(1),
    Fraction(3.7),
    Fraction(2**10),
    Fraction(2**20),
    Fraction(2**40) + Fraction(1, 3),
    Fraction(2**56),  # the top of the range
]


def _mechanism_parameter(mechanism, D=1000):
    """The exact parameter (grid_parameter_) a mechanism's release of D coordinates draws from."""
    mechanism.randomise(np.zeros(D))
    return mechanism.grid_parameter_


# the rationals the grid gives: a Laplace mechanism's dyadic scale (epsilon 0.7, sensitivity 3)
LAPLACE_SCALES.append(_mechanism_parameter(mechanisms.Laplace(0.7, 3.0, insecure_seed=0)))


@pytest.mark.parametrize("t", LAPLACE_SCALES, ids=lambda t: f"t={float(t):.4g}")
def test_discrete_laplace_law(t):
    law = Laplace(t)
    x = law.draw(N_LAW, KEY)
    assert x.dtype == np.int64 and x.shape == (N_LAW,)
    if law.tail(1) * N_LAW < 1e-100:
        # t = 2^-10: P(K != 0) = 2 e^-1024 / (1 + e^-1024): every draw is 0
        assert not x.any()
        return
    check_law(x, law)


M113 = 2**113 + 1
M57 = 2**57 + 3
GAUSSIAN_PARAMETERS = [
    (1, 4),
    (1, 1),
    (10, 1),
    (2**20, 1),
    (2**60, 1),
    (10 * M113, M113),  # sigma^2 = 10, unreduced: the 256-bit acceptance path
    (2**60 * M57, M57),  # sigma^2 = 2^60, unreduced
    ((2**118 - 1), (2**118 - 1)),  # sigma^2 = 1 at the top of the range
    # a Gaussian mechanism's sigma^2 in grid steps ((float sigma / g)^2: 2^33 in the denominator)
    (lambda s2: (s2.numerator, s2.denominator))(_mechanism_parameter(mechanisms.Gaussian(1.0, 1e-5, 1.0,
                                                                                         insecure_seed=0))),
]


@pytest.mark.parametrize("num,den", GAUSSIAN_PARAMETERS, ids=lambda v: f"{v:.3g}" if v < 2**64 else f"2^{v.bit_length()}")
def test_discrete_gaussian_law(num, den):
    law = Gaussian(num, den)
    x = law.draw(N_LAW, KEY)
    assert x.dtype == np.int64 and x.shape == (N_LAW,)
    check_law(x, law)


# ---------------------------------------------- agreement with the pure-Python reference

@pytest.mark.parametrize("law", [Laplace(Fraction(3.7)), Laplace(Fraction(2**40) + Fraction(1, 3)),
                                 Gaussian(10, 1), Gaussian(2**60, 1)],
                         ids=["laplace-3.7", "laplace-2^40", "gaussian-10", "gaussian-2^60"])
def test_agrees_in_law_with_the_python_reference(law):
    ref = law.reference(N_REF, seed=12345)
    x = law.draw(N_LAW, key_of(7))
    c, lows, _ = bins_for(law, N_REF)  # every expected count of the smaller sample >= 5
    table = np.vstack([counts_for(ref, c, lows), counts_for(x, c, lows)])
    table = table[:, table.sum(axis=0) > 0]
    _, p, dof, _ = stats.chi2_contingency(table, correction=False)
    assert p >= P_MIN, f"two-sample chi-square: p = {p:.3g} on {dof} df"


# ----------------------------------------------------------------------------- reproducible

SIZE = 3 * 4096 + 17  # three full blocks and a partial one


@pytest.mark.parametrize("fn,args", [(_core.discrete_laplace, (37, 10)), (_core.discrete_gaussian, (2**60, 3))])
def test_reproducible_for_key_nonce_and_thread_count(fn, args, restore_threads):
    pysketch.set_num_threads(1)
    one = fn(*args, SIZE, KEY)
    pysketch.set_num_threads(2)
    two = fn(*args, SIZE, KEY)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(fn(*args, SIZE, KEY), one)
    # blocks are fixed: a shorter request is a prefix of a longer one
    np.testing.assert_array_equal(fn(*args, 5000, KEY), one[:5000])
    assert not np.array_equal(fn(*args, SIZE, key_of(1)), one)
    assert not np.array_equal(fn(*args, SIZE, KEY, nonce=1), one)
    # the blocks' streams differ from each other
    assert not np.array_equal(one[:4096], one[4096:8192])
    assert fn(*args, 0, KEY).shape == (0,)


# ------------------------------------------------------------------- every SIMD level, same bits

# The Stream refills eight ChaCha20 blocks at a time with AVX2 (when pysketch.simd_level()
# allows it when a fill call starts), four at a time otherwise: the keystream, hence every
# draw, must not depend on the level. The parameters take every arithmetic path: 32- and
# 64-bit uniforms and Bernoullis, t_den a power of two or not, and the 64-, 128- and 256-bit
# Gaussian acceptance.
SIMD_CASES = [
    ("laplace", 1, 1), ("laplace", 37, 10), ("laplace", 0x3243F6A8885A308D, 2**32), ("laplace", 2**40, 1),
    ("gaussian", 1, 4), ("gaussian", 10**4, 1), ("gaussian", 2**60, 1), ("gaussian", 2**60 * M57, M57),
    ("gaussian", (2**53 - 111) ** 2, 2**44),
]
SIMD_SIZE = 2 * 4096 + 123

def simd_draws(cases=SIMD_CASES):
    key = key_of(3)
    return np.concatenate([
        (_core.discrete_laplace if law == "laplace" else _core.discrete_gaussian)(num, den, SIMD_SIZE, key, nonce=5)
        for law, num, den in cases])


def test_draws_are_identical_at_every_simd_level_in_process(restore_simd, restore_threads):
    levels = SIMD_LEVELS[: SIMD_LEVELS.index(pysketch.max_simd_level()) + 1]
    pysketch.set_num_threads(2)
    reference = None
    for level in levels:
        pysketch.set_simd_level(level)
        x = simd_draws()
        if reference is None:
            reference = x
        np.testing.assert_array_equal(x, reference, err_msg=f"simd level {level}")


def test_draws_are_identical_under_pysketch_simd_in_a_subprocess(tmp_path):
    # PYSKETCH_SIMD caps the level in a fresh process: the draws there (sse: four-block
    # refills) equal this process's at the best level (avx2 where the CPU has it)
    here = simd_draws()
    code = (
        "import sys, numpy as np, pysketch\n"
        "from pysketch import _core\n"
        "assert pysketch.simd_level() == 'sse', pysketch.simd_level()\n"
        f"cases = {SIMD_CASES!r}\n"
        f"key = bytes([3]) * 32\n"
        "x = np.concatenate([(_core.discrete_laplace if law == 'laplace' else _core.discrete_gaussian)"
        f"(num, den, {SIMD_SIZE}, key, nonce=5) for law, num, den in cases])\n"
        "np.save(sys.argv[1], x)\n"
    )
    out = tmp_path / "draws.npy"
    env = dict(os.environ, PYSKETCH_SIMD="sse")
    proc = subprocess.run([sys.executable, "-c", code, str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), here)


# ----------------------------------------------------------------------------------- ranges

def test_range_edges_are_accepted():
    big = 2**63 - 1
    assert _core.discrete_laplace(big, big, 100, KEY).shape == (100,)
    x = _core.discrete_laplace(2**56, 1, 1000, KEY)  # t = 2^56
    assert np.abs(x).max() < 2**63 - 1
    x = _core.discrete_gaussian(2**108, 1, 1000, KEY)  # sigma = 2^54
    assert 2**50 < np.abs(x.astype(np.float64)).mean() < 2**55


@pytest.mark.parametrize("fn,args,exc,name", [
    (_core.discrete_laplace, (0, 1, 10, KEY), ValueError, "t_num"),
    (_core.discrete_laplace, (2**63, 2**63, 10, KEY), ValueError, "t_num"),
    (_core.discrete_laplace, (1, 2**63, 10, KEY), ValueError, "t_den"),
    (_core.discrete_laplace, (1, -3, 10, KEY), ValueError, "t_den"),
    (_core.discrete_laplace, (2**56 + 1, 1, 10, KEY), ValueError, "t_num / t_den"),
    (_core.discrete_laplace, (1.5, 1, 10, KEY), TypeError, "t_num"),
    (_core.discrete_laplace, (True, 1, 10, KEY), TypeError, "t_num"),
    (_core.discrete_laplace, (1, 1, -1, KEY), ValueError, "size"),
    (_core.discrete_laplace, (1, 1, 10, KEY[:31]), ValueError, "key"),
    (_core.discrete_laplace, (1, 1, 10, "k" * 32), TypeError, "key"),
    (_core.discrete_gaussian, (2**118, 1, 10, KEY), ValueError, "s2_num"),
    (_core.discrete_gaussian, (1, 0, 10, KEY), ValueError, "s2_den"),
    (_core.discrete_gaussian, (2**108 + 1, 1, 10, KEY), ValueError, "s2_num / s2_den"),
    (_core.discrete_gaussian, (1, 1, 10, KEY + b"x"), ValueError, "key"),
    (_core.chacha20_block, (KEY, 2**32, bytes(12)), ValueError, "counter"),
    (_core.chacha20_block, (KEY, 0, bytes(11)), ValueError, "nonce"),
])
def test_range_errors_name_the_parameter(fn, args, exc, name):
    with pytest.raises(exc, match=re.escape(name)) as info:
        fn(*args)
    if exc is ValueError and fn is not _core.chacha20_block and name not in ("size", "key"):
        assert "outside the compiled sampler's range" in str(info.value)


def test_nonce_range():
    with pytest.raises(ValueError, match="nonce"):
        _core.discrete_gaussian(1, 1, 10, KEY, nonce=2**32)
    assert _core.discrete_gaussian(1, 1, 10, KEY, nonce=2**32 - 1).shape == (10,)
