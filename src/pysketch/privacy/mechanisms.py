r"""Noise mechanisms: Laplace, classical and analytic Gaussian, drawn safely.

Every mechanism here adds noise to a real or complex vector ``f(X)`` whose sensitivity
(the largest change of ``f`` between neighbouring datasets, in the L1 norm for Laplace and
the L2 norm for Gaussian) the caller states; the neighbouring relation is the caller's
too (:mod:`pysketch.privacy.sensitivity` gives both for every feature map). A complex
vector is treated as the real vector of its real and imaginary parts (the canonical
isomorphism C^m ~ R^2m; Chatalic et al. 2022, Lemma 5 eq. (9)): Laplace noise of the
same scale ``b`` on both parts, Gaussian noise of the same ``sigma`` on both parts.

**How the noise is drawn.** Textbook samplers add a floating-point Laplace or Gaussian
variate to a floating-point value; the set of floats such a sum can take depends on the
secret value, and Mironov ("On significance of the least significant bits for
differential privacy", CCS 2012) recovered inputs from the low-order bits. Here nothing
secret is ever added to a floating-point noise value:

1. a grid step ``g``, a power of two fixed by the public sensitivity and size alone
   (``g <= sensitivity / (D 2^30)`` for Laplace, ``g <= sensitivity / (sqrt(D) 2^30)``
   for Gaussian, D the number of real coordinates), is chosen;
2. the value is rounded to the grid, ``q = round(f(X) / g)`` (integers). Rounding moves
   each coordinate by at most ``g / 2``, so two neighbours' rounded vectors differ by at
   most ``Delta / g + D`` (L1) or ``Delta / g + sqrt(D)`` (L2) grid steps: the
   sensitivities are enlarged by that much before calibration (a relative change below
   ``2^-30``);
3. integer noise is drawn *exactly* from the discrete Laplace or discrete Gaussian law
   on the integers with the algorithms of Canonne, Kamath & Steinke ("The discrete
   Gaussian for differential privacy", NeurIPS 2020, Algorithms 1-3): rejection sampling
   that uses only uniform integers and exact rational arithmetic, no floating point at
   all. The compiled core draws whole vectors (C++, 64- to 256-bit integers, both cores)
   wherever its integer range covers the parameter (``_compiled_covers``: Laplace scales
   up to 2^56 grid steps with numerator and denominator below 2^63, a Laplace mechanism's
   scale being first rounded *up* to such a fraction, by a relative 2^-61 at most;
   Gaussian sigma^2 up to 2^108); beyond, the same algorithms run in Python integers;
4. the output is ``(q + noise) * g`` converted to float64: a deterministic function of
   the private integer vector, so post-processing.

After a release, a mechanism records ``grid_step_`` (g), ``effective_scale_`` (the noise
scale in the value's units: Laplace b, Gaussian sigma) and ``grid_parameter_`` (the exact
law's parameter in grid steps, a Fraction: Laplace t, Gaussian sigma^2).

The discrete Laplace law with scale ``t`` grid steps (P(k) proportional to
``exp(-|k| / t)``) is exactly ``(Delta_units / t)``-DP for integer vectors at L1 distance
``Delta_units``, the same guarantee as the continuous Laplace mechanism. For the discrete
Gaussian, ``sigma`` is calibrated by the exact condition of the continuous mechanism
(Balle & Wang 2018, Thm. 8; :func:`analytic_gaussian_sigma`) with ``sigma >= 2^30`` grid
steps; Canonne, Kamath & Steinke (2020, sec. 2-3) show the discrete Gaussian's privacy
curve is that of the continuous one up to terms that vanish with the resolution (one
coordinate: their Theorem 7 has the same form as Balle & Wang's condition). What is
proven exactly for any resolution is recorded as well: the discrete Gaussian with
integer L2 sensitivity ``Delta`` is ``rho``-zero-concentrated DP with
``rho = Delta^2 / (2 sigma^2)``, like the continuous one (``zcdp_rho``).

**Where the randomness comes from.** By default from the operating system's entropy
(``secrets.SystemRandom``: ``os.urandom``; the compiled sampler's ChaCha20 stream, RFC
8439, is keyed by 32 fresh bytes of it for every vector of draws), never from a seed, a NumPy generator or
the operator's public ``random_state``, and the noise is never stored. A seeded mode,
``insecure_seed=<int>``, reproduces the same noise for tests and experiments; it gives
no privacy against anyone who knows or guesses the seed, and everything it produces is
marked ``secure_noise=False``.
"""

import math
import numbers
import random
import secrets
from fractions import Fraction

import numpy as np
from scipy import optimize, special

from .._checks import NEIGHBOURING, check_positive, check_size
from .._params import HasMethods, Interval, Options

__all__ = [
    "Laplace",
    "Gaussian",
    "L2Laplace",
    "gaussian_noise",
    "analytic_gaussian_sigma",
    "analytic_gaussian_delta",
    "classical_gaussian_sigma",
    "sample_discrete_laplace",
    "sample_discrete_gaussian",
    "noise_source",
    "noisy_count",
    "check_epsilon",
    "check_delta",
]

#: Resolution of the noise grid: the grid step is at most sensitivity / (D 2^30) (Laplace)
#: or sensitivity / (sqrt(D) 2^30) (Gaussian).
GRID_BITS = 30

#: Epsilons within 2**+-EPSILON_EXPONENT (about 8e-31 to 1.3e30): beyond, the calibrations'
#: 1 / epsilon^2 and epsilon^2 over- or underflow float64 (and no such guarantee means anything).
EPSILON_EXPONENT = 100
#: The declared constraints (pysketch._params) of the privacy parameters the estimators
#: share: epsilon within the range above (or None: no noise), delta in [0, 1) (whether a
#: fit needs delta > 0 relates it to epsilon: checked by the estimator), the neighbouring
#: relation, and an accountant that can be charged (pysketch's or diffprivlib's: a `spend`
#: method) or None.
PRIVACY_PARAMETERS = {
    "epsilon": [Interval(numbers.Real, math.ldexp(1.0, -EPSILON_EXPONENT), math.ldexp(1.0, EPSILON_EXPONENT)), None],
    "delta": [Interval(numbers.Real, 0, 1, closed="left")],
    "neighbouring": [Options(NEIGHBOURING)],
    "accountant": [HasMethods("spend", text="a BudgetAccountant (pysketch's or diffprivlib's)"), None],
}
#: Sensitivities and noise scales (Laplace b, Gaussian sigma) within 2**+-NOISE_EXPONENT:
#: the variance (a square) stays a float64 and the noise grid (sensitivity / (D 2^30)) a
#: normal number.
NOISE_EXPONENT = 510


# ---------------------------------------------------------------------- randomness

class _Source:
    """Uniform integers below n: OS entropy (secure) or a seeded generator (insecure)."""

    def __init__(self, insecure_seed=None):
        if insecure_seed is None:
            self._rng = secrets.SystemRandom()
            self.secure = True
        else:
            if isinstance(insecure_seed, (bool, np.bool_)) or not isinstance(insecure_seed, numbers.Integral):
                raise TypeError(f"insecure_seed must be None or an int, got {type(insecure_seed).__name__}")
            self._rng = random.Random(int(insecure_seed))
            self.secure = False

    def below(self, n):
        return self._rng.randrange(n)

    def key(self):
        """32 bytes keying the compiled sampler's ChaCha20 stream for one vector of draws:
        fresh OS entropy, or the next 256 bits of the seeded generator (insecure)."""
        return secrets.token_bytes(32) if self.secure else self._rng.getrandbits(256).to_bytes(32, "little")


def noise_source(insecure_seed=None):
    """The source of noise randomness: OS entropy (``None``) or a seeded, insecure one.

    Parameters
    ----------
    insecure_seed : None, int or a source, optional
        None (default): OS entropy (``secrets.SystemRandom``), ``secure`` True. An int: a
        ``random.Random`` seeded with it, reproducible and **insecure** (``secure``
        False). A source made by this function is returned as it is, so that several
        releases can draw from one.

    Returns
    -------
    source
        An object with ``secure`` (bool) that the samplers of this module draw from.

    Raises
    ------
    TypeError
        When `insecure_seed` is neither None, an int nor a source (a float, a bool).

    Examples
    --------
    >>> from pysketch.privacy.mechanisms import noise_source
    >>> noise_source().secure, noise_source(insecure_seed=0).secure
    (True, False)
    >>> src = noise_source(); noise_source(src) is src
    True
    """
    return insecure_seed if isinstance(insecure_seed, _Source) else _Source(insecure_seed)


def _bernoulli(src, num, den):
    """Bernoulli(num / den), exactly (0 <= num <= den integers)."""
    return src.below(den) < num


def _bernoulli_exp_unit(src, num, den):
    """Bernoulli(exp(-num/den)) for 0 <= num/den <= 1, exactly: CKS 2020 Algorithm 1
    (the index of the first failure of Bernoulli(gamma/k), k = 1, 2, ..., is odd with
    probability exp(-gamma))."""
    k = 1
    while _bernoulli(src, num, den * k):
        k += 1
    return k % 2 == 1


def _bernoulli_exp(src, num, den):
    """Bernoulli(exp(-num/den)) for any num/den >= 0 (exp(-gamma) = exp(-1)^floor(gamma)
    exp(-frac(gamma)))."""
    whole, rest = divmod(num, den)
    for _ in range(whole):
        if not _bernoulli_exp_unit(src, 1, 1):
            return False
    return _bernoulli_exp_unit(src, rest, den)


def _discrete_laplace_one(src, t_num, t_den):
    """One draw of the discrete Laplace law with scale t = t_num / t_den on the
    integers, P(k) proportional to exp(-|k| / t): CKS 2020 Algorithm 2."""
    while True:
        u = src.below(t_num)
        if not _bernoulli_exp_unit(src, u, t_num):
            continue
        v = 0
        while _bernoulli_exp_unit(src, 1, 1):
            v += 1
        y = (u + t_num * v) // t_den
        negative = _bernoulli(src, 1, 2)
        if negative and y == 0:
            continue
        return -y if negative else y


def _discrete_gaussian_one(src, s2_num, s2_den):
    """One draw of the discrete Gaussian law with parameter sigma^2 = s2_num / s2_den on
    the integers, P(k) proportional to exp(-k^2 / (2 sigma^2)): CKS 2020 Algorithm 3
    (discrete Laplace proposals of scale t = floor(sigma) + 1, accepted with probability
    exp(-(|y| - sigma^2/t)^2 / (2 sigma^2)))."""
    t = math.isqrt(s2_num // s2_den) + 1
    while True:
        y = _discrete_laplace_one(src, t, 1)
        # gamma = (|y| - s2/t)^2 / (2 s2) with s2 = a/b: ((|y| t b - a)^2) / (2 a t^2 b)
        diff = abs(y) * t * s2_den - s2_num
        if _bernoulli_exp(src, diff * diff, 2 * s2_num * t * t * s2_den):
            return y


def _compiled_covers(law, num, den):
    """Whether the compiled sampler's exact integer arithmetic covers the parameter num / den
    (the ranges of src/cpp/pysketch/exact_noise.hpp): discrete Laplace 1 <= num, den < 2^63
    with a scale <= 2^56 (its draws then stay in int64); discrete Gaussian 1 <= num, den <
    2^118 with sigma^2 <= 2^108."""
    if law == "laplace":
        return 1 <= num < 1 << 63 and 1 <= den < 1 << 63 and num <= den << 56
    return 1 <= num < 1 << 118 and 1 <= den < 1 << 118 and num <= den << 108


def _dyadic_at_least(t):
    """The smallest c / 2^j >= t (a Fraction) with j = 62 - bits of floor(t): numerator and
    denominator below 2^63 for any t < 2^62, larger than t by a relative 2^-61 at most
    (t >= 1) or an absolute 2^-62. A scale rounded up adds noise, which never weakens the
    guarantee: the exact epsilon of the rounded scale is at most the one asked."""
    bits = (t.numerator // t.denominator).bit_length()
    if bits > 62:
        return t
    j = 62 - bits
    return Fraction(-(-(t.numerator << j) // t.denominator), 1 << j)


def _compiled_draws(law, src, num, den, size):
    """size exact draws from the compiled sampler (pysketch._core, CKS 2020 Algorithms 1-3
    from a ChaCha20 stream keyed by src.key()) as an int64 array, or None where its integer
    arithmetic does not cover the parameter num / den (the caller then draws in Python)."""
    from .. import _core

    fn = getattr(_core, "discrete_laplace" if law == "laplace" else "discrete_gaussian", None)
    if fn is None or size == 0 or not _compiled_covers(law, num, den):
        return None
    return fn(num, den, size, src.key())


def _laplace_draws(src, t, size):
    """size exact discrete Laplace draws of scale t (a Fraction): an int64 array, or a
    list of Python ints where only the Python sampler covers t."""
    out = _compiled_draws("laplace", src, t.numerator, t.denominator, size)
    return out if out is not None else [_discrete_laplace_one(src, t.numerator, t.denominator) for _ in range(size)]


def _gaussian_draws(src, s2, size):
    """As _laplace_draws, for the discrete Gaussian of parameter sigma^2 = s2 (a Fraction)."""
    out = _compiled_draws("gaussian", src, s2.numerator, s2.denominator, size)
    return out if out is not None else [_discrete_gaussian_one(src, s2.numerator, s2.denominator) for _ in range(size)]


def _noisy_on_grid(q, noise, g):
    """(q + noise) * g in float64: q the grid integers (float64 holding integers), noise the
    exact integer draws. The integer sum is exact and rounded to float64 once (as
    float(int) rounds), then scaled by the power of two g: no float enters the noise
    before it is on the grid."""
    if isinstance(noise, np.ndarray) and q.size and np.abs(q).max() < 2.0 ** 62 and np.abs(noise).max() < 1 << 62:
        return (q.astype(np.int64) + noise).astype(np.float64) * g
    return np.array([float(int(a) + int(b)) for a, b in zip(q, noise)], dtype=np.float64) * g


def _as_fraction(x, name):
    f = Fraction(x)
    if f <= 0:
        raise ValueError(f"{name} must be positive, got {x!r}")
    return f


#: Bytes of one small Python int in a list (the int and its pointer), for the size check.
_LIST_INT_BYTES = 40


def sample_discrete_laplace(scale, size, insecure_seed=None):
    """``size`` exact draws of the discrete Laplace law on the integers with scale
    ``scale`` (a positive int, Fraction or float, taken exactly): P(k) proportional to
    exp(-abs(k) / scale). Returns a list of Python ints. Noise comes from OS entropy unless
    ``insecure_seed`` is given.

    Parameters
    ----------
    scale : int, Fraction or float > 0
        t, in the units of the integers; a float is taken as the exact rational it holds.
    size : int >= 0
        The number of draws.
    insecure_seed : None or int, optional
        None (default): OS entropy. An int: reproducible and **insecure** draws (tests).

    Returns
    -------
    list of int
        `size` independent draws (Canonne, Kamath & Steinke 2020, Algorithm 2).

    Raises
    ------
    ValueError
        When `scale` is not positive, or `size` is negative or its list would not fit in
        the machine's memory.
    TypeError
        When `size` is not an int, or `insecure_seed` neither None nor an int.

    Examples
    --------
    >>> from pysketch.privacy.mechanisms import sample_discrete_laplace
    >>> draws = sample_discrete_laplace(2, 1000)
    >>> len(draws), all(isinstance(k, int) for k in draws)
    (1000, True)
    """
    t = _as_fraction(scale, "scale")
    size = check_size(size, "size", minimum=0, nbytes=lambda v: v * _LIST_INT_BYTES, what="for a list of ints")
    src = noise_source(insecure_seed)
    return [int(v) for v in _laplace_draws(src, t, size)]


def sample_discrete_gaussian(sigma2, size, insecure_seed=None):
    """``size`` exact draws of the discrete Gaussian on the integers with parameter
    ``sigma2`` (a positive int, Fraction or float, taken exactly): P(k) proportional to
    exp(-k^2 / (2 sigma2)). Returns a list of Python ints.

    Parameters
    ----------
    sigma2 : int, Fraction or float > 0
        sigma^2, in squared units of the integers; a float is taken as the exact rational
        it holds.
    size : int >= 0
        The number of draws.
    insecure_seed : None or int, optional
        None (default): OS entropy. An int: reproducible and **insecure** draws (tests).

    Returns
    -------
    list of int
        `size` independent draws (Canonne, Kamath & Steinke 2020, Algorithm 3).

    Raises
    ------
    ValueError
        When `sigma2` is not positive, or `size` is negative or its list would not fit in
        the machine's memory.
    TypeError
        When `size` is not an int, or `insecure_seed` neither None nor an int.

    Examples
    --------
    >>> from pysketch.privacy.mechanisms import sample_discrete_gaussian
    >>> draws = sample_discrete_gaussian(4, 1000)
    >>> len(draws), all(isinstance(k, int) for k in draws)
    (1000, True)
    """
    s2 = _as_fraction(sigma2, "sigma2")
    size = check_size(size, "size", minimum=0, nbytes=lambda v: v * _LIST_INT_BYTES, what="for a list of ints")
    src = noise_source(insecure_seed)
    return [int(v) for v in _gaussian_draws(src, s2, size)]


def noisy_count(n, epsilon_count, insecure_seed=None):
    """n + discrete Laplace noise of scale 1/epsilon_count: epsilon_count-DP for the count,
    whose sensitivity is 1 under add/remove neighbours (the scale is taken exactly as a
    fraction of the float epsilon_count).

    Parameters
    ----------
    n : int
        The count.
    epsilon_count : float > 0
        The epsilon spent on the count, within [2**-100, 2**100].
    insecure_seed : None, int or a source, optional
        None (default): OS entropy; an int: reproducible, **insecure** noise; a source of
        :func:`noise_source`: drawn from it.

    Returns
    -------
    int
        The noisy count; it may be 0 or negative.

    Raises
    ------
    ValueError
        For an epsilon_count outside its range.

    Examples
    --------
    >>> from pysketch.privacy.mechanisms import noisy_count
    >>> c = noisy_count(1000, 1.0)
    >>> isinstance(c, int), abs(c - 1000) < 50
    (True, True)
    """
    epsilon_count = check_epsilon(epsilon_count, "epsilon_count")
    t = Fraction(1) / Fraction(epsilon_count)
    src = noise_source(insecure_seed)
    return int(n) + int(_laplace_draws(src, t, 1)[0])


# ---------------------------------------------------------------------- calibration

def check_epsilon(epsilon, name="epsilon"):
    """epsilon as a float: a finite number within [2**-EPSILON_EXPONENT, 2**EPSILON_EXPONENT]
    (ValueError naming `name` otherwise).

    Parameters
    ----------
    epsilon : float
        The value to check.
    name : str, default 'epsilon'
        The argument's name in the error message.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When epsilon is not a finite number > 0 (NaN, a bool, a string) or lies outside
        [2**-100, 2**100] (:data:`EPSILON_EXPONENT`).

    Examples
    --------
    >>> from pysketch.privacy.mechanisms import check_epsilon
    >>> check_epsilon(1)
    1.0
    >>> check_epsilon(0, "epsilon_count")
    Traceback (most recent call last):
        ...
    ValueError: epsilon_count must be a positive finite number, got 0
    """
    e = check_positive(epsilon, name)
    limit = math.ldexp(1.0, EPSILON_EXPONENT)
    if not 1.0 / limit <= e <= limit:
        raise ValueError(f"{name} must be within [{1.0 / limit:.3g}, {limit:.3g}], got {epsilon!r}")
    return e


def _check_noise_range(sensitivity, scale, what):
    """ValueError unless the sensitivity and the noise scale `what` (the scale derived from
    the sensitivity and epsilon) are within 2**+-NOISE_EXPONENT."""
    limit = math.ldexp(1.0, NOISE_EXPONENT)
    for name, v in (("sensitivity", sensitivity), (what, scale)):
        if not 1.0 / limit <= v <= limit:
            raise ValueError(
                f"the magnitude of the {name} ({v:.3g}) is outside the supported range [{1.0 / limit:.3g}, "
                f"{limit:.3g}] (the noise's variance over- or underflows float64): rescale the query (its "
                "sensitivity) or change epsilon")


def check_delta(delta, *, positive):
    """delta as a float in [0, 1) (not bool); with ``positive=True`` (the Gaussian
    mechanism) 0 is refused too. ValueError otherwise.

    Parameters
    ----------
    delta : float
        The value to check.
    positive : bool
        Whether 0 is refused (keyword only, required).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When delta is not a number in [0, 1) (a bool, NaN, 1), or is 0 with
        ``positive=True``.

    Examples
    --------
    >>> from pysketch.privacy.mechanisms import check_delta
    >>> check_delta(0, positive=False), check_delta(1e-6, positive=True)
    (0.0, 1e-06)
    """
    if isinstance(delta, (bool, np.bool_)) or not isinstance(delta, numbers.Real) or not (0 <= delta < 1):
        raise ValueError(f"delta must be a number in [0, 1), got {delta!r}")
    if positive and delta == 0:
        raise ValueError("delta must be > 0 for the Gaussian mechanism (use Laplace for pure epsilon-DP)")
    return float(delta)


def _check_sensitivity(sensitivity):
    return check_positive(sensitivity, "sensitivity")


def analytic_gaussian_delta(sigma, epsilon, sensitivity=1.0):
    r"""The smallest delta for which adding N(0, sigma^2 I) to a query of L2 sensitivity
    ``sensitivity`` is (epsilon, delta)-DP (Balle & Wang, "Improving the Gaussian
    mechanism for differential privacy", ICML 2018, Theorem 8):

    .. math:: \delta = \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)
              - e^{\varepsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma} - \frac{\varepsilon\sigma}{\Delta}\Big)

    computed in logarithms (no cancellation for tiny delta).

    Parameters
    ----------
    sigma : float > 0
        The noise's standard deviation per coordinate.
    epsilon : float > 0
        Within [2**-100, 2**100].
    sensitivity : float > 0, default 1
        Delta, the query's L2 sensitivity.

    Returns
    -------
    float
        delta in [0, 1); 0 where it underflows float64.

    Raises
    ------
    ValueError
        When sigma or sensitivity is not a positive finite number, or epsilon is outside
        its range.

    Examples
    --------
    >>> from pysketch.privacy import analytic_gaussian_delta
    >>> f"{analytic_gaussian_delta(5.10031, 1.0):.2e}"  # Chatalic et al. 2022, Sec. 3.3
    '1.00e-08'
    """
    sigma, epsilon = check_positive(sigma, "sigma"), check_epsilon(epsilon)
    return math.exp(_log_analytic_delta(sigma, epsilon, _check_sensitivity(sensitivity)))


def _log_analytic_delta(sigma, epsilon, sensitivity):
    """log of analytic_gaussian_delta, finite where delta itself underflows (large epsilon
    sigma: at epsilon = 20, sigma = e, delta ~ e^-1460); -inf where delta <= 0 in rounding.

    With a = D/(2s) - eps s/D and b = -D/(2s) - eps s/D, eps - b^2/2 = -a^2/2 exactly, so
    the second term is e^eps Phi(b) = phi(a) M(b), M(b) = Phi(b)/phi(b) = sqrt(pi/2)
    erfcx(-b/sqrt 2) (Mills' ratio): no e^eps, and no cancellation of eps against log Phi(b)
    (at eps = 2**100 both are 1e30). When the two terms of a are large, a is computed
    exactly from the floats (they cancel: at eps = 2**100, a ~ 1 from terms of 8e14). Both
    are used beyond eps = 2**10 or terms of 2**20; below, the direct form."""
    u, v = sensitivity / (2.0 * sigma), epsilon * sigma / sensitivity
    if max(u, v) > 2.0 ** 20 and abs(u - v) < 2.0 ** -20 * max(u, v):  # they cancel
        fs, fd = Fraction(sigma), Fraction(sensitivity)
        a = float(fd / (2 * fs) - Fraction(epsilon) * fs / fd)
    else:
        a = u - v
    b = -u - v
    la = float(special.log_ndtr(a))
    if epsilon <= 2.0 ** 10 and max(u, v) <= 2.0 ** 20:
        # the ordinary range: the direct form loses at most ~1e-13 in t here, and gives the
        # same bits as releases made before the Mills form (seeded files reproduce)
        t = epsilon + float(special.log_ndtr(b)) - la
        return la + math.log(-math.expm1(t)) if t < 0 else -math.inf
    x = -b * _SQRT_HALF  # > 0; log erfcx(x) = -log(x sqrt(pi)) - 1/(2 x^2) + ... for large x
    log_erfcx = math.log(float(special.erfcx(x))) if x < 1e100 else -math.log(x) - _LOG_SQRT_PI
    log_second = -0.5 * a * a - _LOG_SQRT_2PI + _LOG_SQRT_HALF_PI + log_erfcx
    t = log_second - la
    return la + math.log(-math.expm1(t)) if t < 0 else -math.inf


_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
_LOG_SQRT_HALF_PI = 0.5 * math.log(0.5 * math.pi)
_LOG_SQRT_PI = 0.5 * math.log(math.pi)
_SQRT_HALF = math.sqrt(0.5)


def analytic_gaussian_sigma(epsilon, delta, sensitivity=1.0):
    r"""The smallest sigma for which N(0, sigma^2 I) noise on a query of L2 sensitivity
    ``sensitivity`` is (epsilon, delta)-DP: the root of :func:`analytic_gaussian_delta`
    = delta (Balle & Wang 2018, Algorithm 1 solves the same equation in another
    variable), solved by bracketing and Brent's method to a relative 1e-12 in sigma and
    rounded up, so the delta it gives never exceeds the target and is within 1e-9 of it
    (relative). Valid for every epsilon > 0 (unlike the classical formula). Beyond
    epsilon ~ 1e25, delta changes by orders of magnitude from one float sigma to the next
    (a = D/(2 sigma) - eps sigma/D moves by ~sqrt(eps) 2**-53 per ulp): the sigma returned
    then gives a delta at most the target, possibly far below it.

    Reference values (Chatalic et al. 2022, Sec. 3.3, Delta = 1): (1, 1e-8) -> 5.10031,
    (0.1, 1e-5) -> 30.7496, (10, 1e-8) -> 0.615846.

    Parameters
    ----------
    epsilon : float > 0
        Within [2**-100, 2**100].
    delta : float in (0, 1)
    sensitivity : float > 0, default 1
        Delta, the query's L2 sensitivity; sigma is proportional to it.

    Returns
    -------
    float
        sigma, per coordinate.

    Raises
    ------
    ValueError
        When epsilon, delta or sensitivity is outside its range, or sigma falls outside
        [2**-510, 2**510] (:data:`NOISE_EXPONENT`).

    Examples
    --------
    >>> from pysketch.privacy import analytic_gaussian_delta, analytic_gaussian_sigma
    >>> sigma = analytic_gaussian_sigma(1.0, 1e-8)
    >>> round(sigma, 4), analytic_gaussian_delta(sigma, 1.0) <= 1e-8
    (5.1003, True)
    >>> round(analytic_gaussian_sigma(1.0, 1e-8, sensitivity=2.0) / sigma, 6)
    2.0
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=True)
    sensitivity = _check_sensitivity(sensitivity)

    def excess(log_s):
        # clamped far below the target (same sign) so that the solver never sees -inf
        return max(_log_analytic_delta(math.exp(log_s), epsilon, 1.0) - math.log(delta), -1e4)

    lo, hi = -1.0, 1.0
    while excess(lo) < 0:
        lo -= 2.0
    while excess(hi) > 0:
        hi += 2.0
    root = optimize.brentq(excess, lo, hi, xtol=1e-14, rtol=1e-14, maxiter=500)
    s = math.exp(root)
    while analytic_gaussian_delta(s, epsilon, 1.0) > delta:  # round up: never above the target
        s *= 1.0 + 1e-13
    sigma = _finite_sigma(s * sensitivity, sensitivity)
    # s * sensitivity is rounded: at a huge epsilon one ulp of sigma moves delta (a = D/(2 sigma)
    # - eps sigma/D is the difference of two terms near sqrt(eps/2)); check the sigma returned
    while math.exp(_log_analytic_delta(sigma, epsilon, sensitivity)) > delta:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def classical_gaussian_sigma(epsilon, delta, sensitivity=1.0):
    """sqrt(2 ln(1.25/delta)) sensitivity / epsilon (Dwork & Roth 2014, Thm. A.1), valid
    only for epsilon < 1 (raises otherwise); never smaller than the analytic sigma.

    Parameters
    ----------
    epsilon : float in (0, 1)
        At least 2**-100.
    delta : float in (0, 1)
    sensitivity : float > 0, default 1
        The query's L2 sensitivity.

    Returns
    -------
    float
        sigma, per coordinate.

    Raises
    ------
    ValueError
        When epsilon >= 1 (use :func:`analytic_gaussian_sigma`), when epsilon, delta or
        sensitivity is outside its range, or sigma outside [2**-510, 2**510].

    Examples
    --------
    >>> from pysketch.privacy import analytic_gaussian_sigma, classical_gaussian_sigma
    >>> round(classical_gaussian_sigma(0.5, 1e-5), 3)
    9.69
    >>> classical_gaussian_sigma(0.5, 1e-5) > analytic_gaussian_sigma(0.5, 1e-5)
    True
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=True)
    sensitivity = _check_sensitivity(sensitivity)
    if epsilon >= 1:
        raise ValueError(f"the classical Gaussian mechanism needs epsilon < 1, got {epsilon}; "
                         "use calibration='analytic'")
    # ln 1.25 - ln delta, not ln(1.25 / delta): 1.25 / delta overflows for subnormal delta
    return _finite_sigma(math.sqrt(2.0 * (math.log(1.25) - math.log(delta))) * sensitivity / epsilon, sensitivity)


def _finite_sigma(sigma, sensitivity):
    """sigma, or ValueError when it or the sensitivity is outside 2**+-NOISE_EXPONENT (a
    huge or subnormal sensitivity, a tiny epsilon: sigma overflows or loses its digits)."""
    _check_noise_range(sensitivity, sigma, "noise scale sigma (of the sensitivity, epsilon and delta)")
    return sigma


# ---------------------------------------------------------------------- mechanisms

def _real_view(value):
    """The value as a 1-D float64 array of real coordinates (complex: real parts, then
    imaginary parts) and a function mapping such an array back."""
    a = np.asarray(value)
    if a.dtype.kind not in "fciu" or a.dtype.kind == "b":
        raise TypeError(f"value must be a real or complex numeric array, got dtype {a.dtype}")
    if a.dtype.kind == "c":
        a = a.astype(np.complex128)
        flat = np.concatenate([a.real.ravel(), a.imag.ravel()])
        shape, k = a.shape, a.size

        def back(r):
            return (r[:k] + 1j * r[k:]).reshape(shape)
    else:
        flat = a.astype(np.float64).ravel()
        shape = a.shape

        def back(r):
            return r.reshape(shape)
    if not np.isfinite(flat).all():
        raise ValueError("value must be finite")
    return flat, back


def _grid_step(bound):
    """The largest power of two <= bound."""
    return math.ldexp(1.0, math.frexp(bound)[1] - 1)


def _round_to_grid(flat, g):
    with np.errstate(over="ignore"):
        q = np.rint(flat / g)
    if not np.isfinite(q).all():
        raise ValueError(
            f"the magnitude of the value ({np.abs(flat).max():.3g}) is outside the supported range for this "
            f"sensitivity: in noise-grid steps ({g:.3g}, the sensitivity over 2^{GRID_BITS} per coordinate) it "
            "overflows float64; rescale the data (and the sensitivity) by a constant")
    return q


class _Mechanism:
    secure_noise = True

    def __init__(self, insecure_seed):
        self._source = noise_source(insecure_seed)
        self.secure_noise = self._source.secure

    def randomise(self, value):
        """value + noise (same shape and kind: complex values get independent noise on
        their real and imaginary parts). A new draw at every call."""
        flat, back = _real_view(value)
        D = flat.size
        if D == 0:
            return back(flat.copy())
        g, draws = self._prepare(D)
        q = _round_to_grid(flat, g)
        noisy = _noisy_on_grid(q, draws(D), g)
        self.grid_step_ = g
        return back(noisy)

    def randomise_rows(self, values):
        """Each row of the 2-D real array ``values`` plus independent noise: one release
        per row, exactly as ``randomise`` of each row in turn would make them (the same grid
        and law for rows of the same length), with the noise of all rows drawn in one
        vector. Returns a new float64 array."""
        a = np.asarray(values)
        if a.ndim != 2 or a.dtype.kind not in "fiu" or a.dtype.kind == "b":
            raise ValueError(f"values must be a 2-D real array, got shape {a.shape} and dtype {a.dtype}")
        n, D = a.shape
        flat = a.astype(np.float64).ravel()
        if not np.isfinite(flat).all():
            raise ValueError("values must be finite")
        if flat.size == 0:
            return flat.reshape(n, D)
        g, draws = self._prepare(D)
        q = _round_to_grid(flat, g)
        noisy = _noisy_on_grid(q, draws(n * D), g)
        self.grid_step_ = g
        return noisy.reshape(n, D)


class Laplace(_Mechanism):
    r"""The Laplace mechanism: epsilon-DP for a query of L1 sensitivity ``sensitivity``
    (Dwork et al. 2006; Chatalic et al. 2022, Sec. 3.2), drawn on a grid as exact discrete
    Laplace noise (see the module docstring). The noise on each real coordinate has
    scale ``b = sensitivity / epsilon`` (enlarged by the grid rounding, relative change
    below 2^-30), variance ``2 b^2``.

    Parameters
    ----------
    epsilon : float > 0
        Within [2**-100, 2**100] (:data:`EPSILON_EXPONENT`).
    sensitivity : float > 0
        L1 sensitivity of the query under the caller's neighbouring relation (complex
        queries: of the stacked real and imaginary parts).
    insecure_seed : None or int
        None (default): OS entropy. An int: reproducible and **insecure**. A source of
        :func:`noise_source` is drawn from as it is.

    Raises
    ------
    ValueError
        When epsilon or sensitivity is outside its range, or sensitivity / epsilon
        outside [2**-510, 2**510] (:data:`NOISE_EXPONENT`); from ``randomise`` and
        ``randomise_rows``, for values that are not finite, whose magnitude overflows the
        noise grid, or (``randomise_rows``) that are not a 2-D real array.
    TypeError
        When `insecure_seed` is neither None, an int nor a source; from ``randomise``,
        for a value that is not a real or complex numeric array.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.privacy import Laplace
    >>> mech = Laplace(epsilon=1.0, sensitivity=2.0)
    >>> mech.scale, mech.variance
    (2.0, 8.0)
    >>> noisy = mech.randomise(np.zeros(5))   # a new draw at every call
    >>> noisy.shape, mech.secure_noise, round(mech.effective_scale_ / mech.scale, 6)
    ((5,), True, 1.0)
    """

    def __init__(self, epsilon, sensitivity, *, insecure_seed=None):
        super().__init__(insecure_seed)
        self.epsilon = check_epsilon(epsilon)
        self.delta = 0.0
        self.sensitivity = _check_sensitivity(sensitivity)
        _check_noise_range(self.sensitivity, self.sensitivity / self.epsilon, "noise scale sensitivity / epsilon")

    @property
    def scale(self):
        """The nominal scale b = sensitivity / epsilon."""
        return self.sensitivity / self.epsilon

    @property
    def variance(self):
        """Variance per real coordinate, 2 b^2."""
        return 2.0 * self.scale ** 2

    def _prepare(self, D):
        g = _grid_step(self.sensitivity / (D * 2.0 ** GRID_BITS))
        # integer L1 sensitivity of the rounded vector: ceil(Delta/g) + D grid steps
        delta_units = math.ceil(Fraction(self.sensitivity) / Fraction(g)) + D
        t = Fraction(delta_units) / Fraction(self.epsilon)  # exact: epsilon = delta_units / t
        # a nearby scale with small numerator and denominator, for the compiled sampler:
        # epsilon = delta_units / t' <= the epsilon asked
        t = _dyadic_at_least(t)
        src = self._source
        self.effective_scale_ = float(t) * g
        self.grid_parameter_ = t  # the law's exact scale in grid steps (a Fraction)
        return g, lambda size: _laplace_draws(src, t, size)


class Gaussian(_Mechanism):
    r"""The Gaussian mechanism: (epsilon, delta)-DP for a query of L2 sensitivity
    ``sensitivity``, with sigma from the analytic calibration of Balle & Wang (2018;
    default) or the classical formula (epsilon < 1 only), drawn on a grid as exact
    discrete Gaussian noise of sigma >= 2^30 grid steps (see the module docstring for
    what is proven for it).

    Parameters
    ----------
    epsilon : float > 0
        Within [2**-100, 2**100]; below 1 for the classical calibration.
    delta : float in (0, 1)
    sensitivity : float > 0
        L2 sensitivity (complex queries: of the stacked real and imaginary parts).
    calibration : {'analytic', 'classical'}, default 'analytic'
        sigma from :func:`analytic_gaussian_sigma` or :func:`classical_gaussian_sigma`.
    insecure_seed : None or int
        None (default): OS entropy. An int: reproducible and **insecure**. A source of
        :func:`noise_source` is drawn from as it is.

    Raises
    ------
    ValueError
        When epsilon, delta or sensitivity is outside its range, `calibration` is
        neither name, the classical calibration gets epsilon >= 1, or sigma is outside
        [2**-510, 2**510]; from ``randomise`` and ``randomise_rows``, as for
        :class:`Laplace`.
    TypeError
        As for :class:`Laplace`.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.privacy import Gaussian
    >>> mech = Gaussian(epsilon=1.0, delta=1e-5, sensitivity=1.0)
    >>> round(mech.scale, 3)
    3.731
    >>> noisy = mech.randomise(np.zeros(4, dtype=complex))  # both parts noised
    >>> noisy.dtype, round(mech.zcdp_rho, 4)
    (dtype('complex128'), 0.0359)
    """

    def __init__(self, epsilon, delta, sensitivity, *, calibration="analytic", insecure_seed=None):
        super().__init__(insecure_seed)
        self.epsilon = check_epsilon(epsilon)
        self.delta = check_delta(delta, positive=True)
        self.sensitivity = _check_sensitivity(sensitivity)
        if calibration not in ("analytic", "classical"):
            raise ValueError(f"calibration must be 'analytic' or 'classical', got {calibration!r}")
        self.calibration = calibration
        if calibration == "classical":
            classical_gaussian_sigma(self.epsilon, self.delta, 1.0)  # raises for epsilon >= 1
        _check_noise_range(self.sensitivity, self._sigma_for(self.sensitivity),
                           "noise scale sigma (of the sensitivity, epsilon and delta)")

    def _sigma_for(self, sensitivity):
        if self.calibration == "analytic":
            return analytic_gaussian_sigma(self.epsilon, self.delta, sensitivity)
        return classical_gaussian_sigma(self.epsilon, self.delta, sensitivity)

    @property
    def scale(self):
        """The nominal sigma (per real coordinate) for the stated sensitivity."""
        return self._sigma_for(self.sensitivity)

    @property
    def variance(self):
        return self.scale ** 2

    @property
    def zcdp_rho(self):
        """rho of the rho-zCDP guarantee, Delta^2 / (2 sigma^2) (holds for the discrete
        Gaussian exactly, rounding included, at the last noise drawn)."""
        s = getattr(self, "effective_scale_", self.scale)
        return self._effective_sensitivity_ ** 2 / (2.0 * s * s) if hasattr(self, "_effective_sensitivity_") else \
            self.sensitivity ** 2 / (2.0 * s * s)

    def _prepare(self, D):
        g = _grid_step(self.sensitivity / (math.sqrt(D) * 2.0 ** GRID_BITS))
        # L2 distance of the rounded vectors <= Delta + g sqrt(D) (each coordinate moves <= g/2)
        sens = self.sensitivity + g * math.sqrt(D) * (1.0 + 1e-12)
        sigma = self._sigma_for(sens)
        s2 = Fraction(sigma / g) ** 2  # exact rational sigma^2 in grid units (sigma/g exact: g = 2^k)
        src = self._source
        self.effective_scale_ = sigma
        self.grid_parameter_ = s2  # the law's exact sigma^2 in grid steps (a Fraction)
        self._effective_sensitivity_ = sens
        return g, lambda size: _gaussian_draws(src, s2, size)


# ---------------------------------------------------------------------- additions (Liao, Needell & Xue 2024)

def gaussian_noise(value, sigma, *, insecure_seed=None):
    """value + N(0, sigma^2 I) noise of a GIVEN sigma, with **no privacy claim**.

    For calibrations that are not differentially private but must be reproduced (the
    published random-feature model's own formula, Liao, Needell & Xue 2024, Sec. 3.1, Algorithm 1).
    Drawn exactly like :class:`Gaussian`: the value is rounded to a power-of-two grid
    ``g <= sigma / 2^30`` and exact discrete Gaussian noise with parameter ``(sigma/g)^2``
    grid steps is added (Canonne, Kamath & Steinke 2020, Algorithm 3), from OS entropy
    unless ``insecure_seed`` is given. Complex values get noise on both parts. Returns the
    noisy array (same shape and kind).

    Parameters
    ----------
    value : array_like of real or complex numbers
        Finite values, any shape.
    sigma : float > 0
        The noise's standard deviation per real coordinate.
    insecure_seed : None or int, optional
        None (default): OS entropy. An int: reproducible and **insecure** noise.

    Returns
    -------
    ndarray
        value + noise: float64 of the shape of `value`, complex128 for a complex value.

    Raises
    ------
    ValueError
        When sigma is not a positive finite number, `value` is not finite, or its
        magnitude in steps of the noise grid (at most sigma / 2^30) overflows float64.
    TypeError
        When `value` is not numeric (or boolean), or `insecure_seed` neither None nor an
        int.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.privacy.mechanisms import gaussian_noise
    >>> y = gaussian_noise(np.zeros((2, 3), dtype=complex), 0.5)
    >>> y.shape, y.dtype
    ((2, 3), dtype('complex128'))
    """
    sigma = check_positive(sigma, "sigma")
    src = noise_source(insecure_seed)
    flat, back = _real_view(value)
    if flat.size == 0:
        return back(flat.copy())
    g = _grid_step(sigma / 2.0 ** GRID_BITS)
    s2 = Fraction(sigma / g) ** 2  # exact: g is a power of two
    q = _round_to_grid(flat, g)
    noisy = _noisy_on_grid(q, _gaussian_draws(src, s2, q.size), g)
    return back(noisy)


class L2Laplace:
    r"""The l2-norm ("K-norm" with K the unit l2 ball) mechanism of Chaudhuri, Monteleoni &
    Sarwate ("Differentially private empirical risk minimization", JMLR 2011, sec. 4,
    output perturbation): noise z in R^D with density proportional to
    ``exp(-epsilon ||z||_2 / sensitivity)``, which is (epsilon, 0)-DP for a query of L2
    sensitivity ``sensitivity`` (the density ratio at z and z + v, ||v|| <= Delta, is at
    most exp(epsilon ||v|| / Delta) by the triangle inequality).

    Drawn in polar form: ``z = R u`` with ``R ~ Gamma(shape D, scale sensitivity /
    epsilon)`` (the radial density is proportional to r^(D-1) exp(-epsilon r / Delta))
    and ``u`` uniform on the unit sphere S^(D-1) (a standard normal vector divided by its
    norm). Moments: ``E ||z||^2 = D (D + 1) (Delta / epsilon)^2`` (:meth:`second_moment`),
    per coordinate ``(D + 1) (Delta / epsilon)^2`` (:meth:`variance`; the coordinates
    are uncorrelated, not independent).

    **Floating-point sampler.** Unlike :class:`Laplace` and :class:`Gaussian`, this one
    is a textbook floating-point sampler (NumPy's Gamma and normal samplers, PCG64),
    added to the floating-point value: Mironov (CCS 2012) showed that the low-order bits
    of such outputs can leak the input, so the guarantee is for the idealised continuous
    mechanism only (``exact_noise = False``). The generator is seeded, at every call,
    with 128 bits from the noise source: OS entropy by default (``secure_noise = True``:
    the noise is not predictable from any public seed, though PCG64 is not a
    cryptographic generator), or ``insecure_seed`` (``secure_noise = False``; tests only).

    Parameters
    ----------
    epsilon : float > 0
        Within [2**-100, 2**100].
    sensitivity : float > 0
        L2 sensitivity of the query under the caller's neighbouring relation (complex
        queries: of the stacked real and imaginary parts).
    insecure_seed : None or int
        None (default): the generator's seed from OS entropy. An int: reproducible and
        **insecure** noise.

    Raises
    ------
    ValueError
        When epsilon or sensitivity is outside its range, or sensitivity / epsilon
        outside [2**-510, 2**510]; from ``randomise``, for values that are not finite; from
        ``randomise_rows``, for values that are not a non-empty 2-D array of finite
        numbers.
    TypeError
        When `insecure_seed` is neither None, an int nor a source; from ``randomise``,
        for a value that is not a real or complex numeric array.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.privacy.mechanisms import L2Laplace
    >>> mech = L2Laplace(epsilon=1.0, sensitivity=1.0)
    >>> mech.second_moment(3), mech.variance(3), mech.exact_noise
    (12.0, 4.0, False)
    >>> mech.randomise(np.zeros(3)).shape
    (3,)
    """

    exact_noise = False

    def __init__(self, epsilon, sensitivity, *, insecure_seed=None):
        self._source = noise_source(insecure_seed)
        self.secure_noise = self._source.secure
        self.epsilon = check_epsilon(epsilon)
        self.delta = 0.0
        self.sensitivity = _check_sensitivity(sensitivity)
        _check_noise_range(self.sensitivity, self.sensitivity / self.epsilon, "noise scale sensitivity / epsilon")

    @property
    def scale(self):
        """The Gamma scale sensitivity / epsilon (1 / rate)."""
        return self.sensitivity / self.epsilon

    def second_moment(self, dim):
        """E ||z||^2 = D (D + 1) (sensitivity / epsilon)^2 for noise in D real dimensions."""
        D = int(dim)
        return D * (D + 1) * self.scale ** 2

    def variance(self, dim):
        """Per-coordinate variance (D + 1) (sensitivity / epsilon)^2 in D real dimensions."""
        return (int(dim) + 1) * self.scale ** 2

    def _generator(self):
        return np.random.Generator(np.random.PCG64(self._source.below(1 << 128)))

    def _noise(self, rng, n, D):
        radius = rng.gamma(D, self.scale, size=n)
        g = rng.standard_normal((n, D))
        norms = np.linalg.norm(g, axis=1)
        while (norms == 0).any():  # probability 0 in exact arithmetic; redraw
            bad = norms == 0
            g[bad] = rng.standard_normal((int(bad.sum()), D))
            norms = np.linalg.norm(g, axis=1)
        return g * (radius / norms)[:, None]

    def randomise(self, value):
        """value + z, one draw of D-dimensional noise for the whole value (D real
        coordinates; complex values count real and imaginary parts). A new draw at every
        call."""
        flat, back = _real_view(value)
        if flat.size == 0:
            return back(flat.copy())
        z = self._noise(self._generator(), 1, flat.size)[0]
        return back(flat + z)

    def randomise_rows(self, values):
        """Each row of the 2-D real array ``values`` plus an independent draw (one release
        per row; for audits and Monte Carlo)."""
        a = np.asarray(values, dtype=np.float64)
        if a.ndim != 2 or a.size == 0:
            raise ValueError(f"values must be a non-empty 2-D array, got shape {a.shape}")
        if not np.isfinite(a).all():
            raise ValueError("values must be finite")
        return a + self._noise(self._generator(), a.shape[0], a.shape[1])
