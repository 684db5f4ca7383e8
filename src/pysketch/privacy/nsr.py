r"""Noise-to-signal ratios of private sketches, the budget split and the sketch size.

Notation ([P] = Chatalic et al. 2022, sec. 6; thesis sec. 9.1-9.2): m frequencies, n
records, Fourier features (E||Phi(x)||^2 = m), C0 = m / ||z||^2 (> 1; the sources
observe 1 < C0 < 10 and this module assumes :data:`DEFAULT_C0` = 3 where ||z|| is not
known), sigma_xi^2 = E|xi_j|^2 the noise energy per sketch entry (complex Laplace 4 b^2,
complex Gaussian 2 sigma^2), alpha = r/m the feature-subsampling rate.
"""

import math
import numbers

from scipy import optimize

from .._checks import check_positive
from .mechanisms import EPSILON_EXPONENT, analytic_gaussian_sigma, check_epsilon

__all__ = ["DEFAULT_C0", "nsr_max", "nsr_public_count", "nsr_noisy_count", "noise_energy", "n0", "budget_split",
           "budget_split_one_hot", "sketch_size_range", "choose_sketch_size"]

#: C0 = m / ||z||^2 assumed where ||z|| is not known (see the module docstring).
DEFAULT_C0 = 3.0


def nsr_max(m, n_clusters, d):
    """The empirical success threshold of compressive k-means with CL-OMPR:
    NSR <= m / (10^3 k d), valid for m >= 2kd ([P] Fig. 5, eq. (29); sec. 6.4).

    Parameters
    ----------
    m : float > 0
        The sketch size (frequencies).
    n_clusters : float > 0
        k.
    d : float > 0
        The dimension of the records.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When an argument is not a positive finite number.

    Examples
    --------
    >>> from pysketch.privacy.nsr import nsr_max
    >>> nsr_max(1000, 10, 5)
    0.02
    """
    return check_positive(m, "m") / (1e3 * check_positive(n_clusters, "n_clusters") * check_positive(d, "d"))


def nsr_public_count(n, m, sigma_xi2, *, c0=DEFAULT_C0, alpha=1.0, beta=1.0):
    """NSR of (Sigma + xi) / n against the true sketch z, n public ([P] Lemma 26, Poisson
    data sampling beta, feature subsampling alpha):
    (1/n)(C0/(alpha beta) - 1) + C0 sigma_xi^2 / (n^2 beta^2).

    Parameters
    ----------
    n : float > 0
        The number of records.
    m : float
        The sketch size (it enters through C0 = m / ||z||^2).
    sigma_xi2 : float >= 0
        The noise energy per sketch entry (:func:`noise_energy`; 0 for a clean sketch).
    c0 : float, default DEFAULT_C0
        C0 (3: the sources observe 1 < C0 < 10).
    alpha : float in (0, 1], default 1
        The feature-subsampling rate r / m.
    beta : float in (0, 1], default 1
        The Poisson data-sampling rate.

    Returns
    -------
    float
        The noise-to-signal ratio. The arguments are not checked.

    Examples
    --------
    >>> from pysketch.privacy.nsr import noise_energy, nsr_public_count
    >>> round(nsr_public_count(10_000, 100, 0.0), 6)  # the sampling term alone
    0.0002
    >>> round(nsr_public_count(10_000, 100, noise_energy(100, 1.0)), 6)
    0.0026
    """
    return (c0 / (alpha * beta) - 1.0) / n + c0 * sigma_xi2 / (n * n * beta * beta)


def nsr_noisy_count(nsr, n, sigma_zeta2):
    """Cramer-Rao NSR with a noisy count of variance sigma_zeta^2 ([P] Lemma 27):
    (1 + sigma_zeta^2 / (2 n^2)) (NSR + 1) - 1, expanded as a + NSR + a NSR with a =
    sigma_zeta^2 / (2 n^2) (no cancellation when both are tiny: a huge n).

    Parameters
    ----------
    nsr : float >= 0
        The NSR with a public count (:func:`nsr_public_count`).
    n : float > 0
        The number of records.
    sigma_zeta2 : float >= 0
        The variance of the count's noise (2 / epsilon_count^2 for Laplace).

    Returns
    -------
    float
        The NSR with the noisy count. The arguments are not checked.

    Examples
    --------
    >>> from pysketch.privacy.nsr import nsr_noisy_count
    >>> round(nsr_noisy_count(0.01, 10_000, 2.0), 10)
    0.0100000101
    """
    a = sigma_zeta2 / (2.0 * n * n)
    return a + nsr + a * nsr


def noise_energy(m, epsilon, *, delta=0.0, mechanism="laplace", features_per_record=None, neighbouring="add_remove"):
    """sigma_xi^2 = E|xi_j|^2 per complex entry of a Fourier sketch released with
    (epsilon, delta): 4 b^2 with b = sqrt(2) m / epsilon (Laplace), 2 sigma^2 with the
    analytic Gaussian sigma for L2 sensitivity m / sqrt(r) (Gaussian); doubled
    sensitivities under 'replace'.

    Parameters
    ----------
    m : float > 0
        The number of frequencies.
    epsilon : float > 0
        The epsilon of the sum, within [2**-100, 2**100].
    delta : float, default 0
        The delta of the sum (Gaussian only; in (0, 1)).
    mechanism : {'laplace', 'gaussian'}, default 'laplace'
        Any other value is taken as 'gaussian'.
    features_per_record : int, optional
        r with feature subsampling (Gaussian only); None: m.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
        'replace' doubles the sensitivities; any other value is taken as 'add_remove'.

    Returns
    -------
    float
        sigma_xi^2.

    Raises
    ------
    ValueError
        For an m or epsilon outside its range, and (Gaussian) a delta outside (0, 1).

    Examples
    --------
    >>> from pysketch.privacy.nsr import noise_energy
    >>> noise_energy(100, 1.0)  # 4 b^2, b = sqrt(2) m / epsilon
    80000.0
    >>> round(noise_energy(100, 1.0, delta=1e-6, mechanism="gaussian"))
    3570
    """
    m, epsilon = check_positive(m, "m"), check_epsilon(epsilon)
    r = m if features_per_record is None else features_per_record
    c = 2.0 if neighbouring == "replace" else 1.0
    if mechanism == "laplace":
        b = c * math.sqrt(2.0) * m / epsilon
        return 4.0 * b * b
    s = analytic_gaussian_sigma(epsilon, delta, c * m / math.sqrt(r))
    return 2.0 * s * s


def n0(m, epsilon, nsr_max_value):
    """The size from which the private sketch is useful, m max(1/NSR_max, 1/(eps
    sqrt(NSR_max))) ([P] eq. (26)): the public n at which the budget
    split is optimized when no lower bound on n is known.

    Parameters
    ----------
    m : float > 0
        The number of frequencies.
    epsilon : float > 0
        Within [2**-100, 2**100].
    nsr_max_value : float > 0
        The largest useful NSR (``DEFAULT_NSR_MAX`` of pysketch.privacy.release: 0.01).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When an argument is outside its range.

    Examples
    --------
    >>> from pysketch.privacy.nsr import n0
    >>> n0(100, 1.0, 0.01)
    10000.0
    """
    m, epsilon, nsr_max_value = check_positive(m, "m"), check_epsilon(epsilon), check_positive(nsr_max_value, "nsr_max")
    return m * max(1.0 / nsr_max_value, 1.0 / (epsilon * math.sqrt(nsr_max_value)))


def _logit(p):
    return math.log(p) - math.log1p(-p)


def _logit_bounds(epsilon):
    """The search interval of logit(gamma): both shares must stay within the mechanisms'
    range of epsilon, g eps >= 2**-E and (1 - g) eps >= 2**-E (ValueError when nothing is
    left at the smallest eps)."""
    share = math.ldexp(1.0, -EPSILON_EXPONENT) / epsilon * (1.0 + 1e-9)
    if share >= 0.5:
        raise ValueError(f"epsilon={epsilon!r} is too small to split between the sum and the count: each share "
                         f"must be at least 2**-{EPSILON_EXPONENT}; use a larger epsilon")
    return max(-20.0, _logit(share)), min(30.0, -_logit(share))


def _minimise_share(objective, lo, hi):
    """gamma minimising objective(logit gamma) over [lo, hi]."""
    res = optimize.minimize_scalar(objective, bounds=(lo, hi), method="bounded",
                                   options={"xatol": 1e-10, "maxiter": 500})
    return 1.0 / (1.0 + math.exp(-res.x))


def budget_split(m, epsilon, n, *, delta=0.0, mechanism="laplace", features_per_record=None, c0=DEFAULT_C0):
    """gamma in (0, 1): the share of epsilon given to the sum (the count gets the rest),
    minimizing the Cramer-Rao NSR (1 + sigma_zeta^2/(2n^2)) (NSR(sigma_xi) + 1) - 1 at a
    public size n, numerically (the paper's closed form, which drops a term, can be off
    by up to 5x in NSR: measured). The count noise is Laplace(1/((1-gamma) eps)),
    sigma_zeta^2 = 2 / ((1-gamma) eps)^2.

    Parameters
    ----------
    m : float > 0
        The number of frequencies.
    epsilon : float > 0
        The whole epsilon of the sum and the count, within [2**-100, 2**100].
    n : float > 0
        The public size at which the NSR is minimized.
    delta : float, default 0
        For the Gaussian mechanism: in (0, 1).
    mechanism : {'laplace', 'gaussian'}, default 'laplace'
        The sum's mechanism.
    features_per_record : int, optional
        r with feature subsampling; None: m.
    c0 : float, default DEFAULT_C0

    Returns
    -------
    float
        gamma; both shares of epsilon are at least 2**-100.

    Raises
    ------
    ValueError
        For an m, n or epsilon outside its range, an epsilon too small to split (below
        2**-99), or (Gaussian) a delta outside (0, 1).

    Examples
    --------
    >>> from pysketch.privacy.nsr import budget_split
    >>> round(budget_split(100, 1.0, 10_000), 2)  # most of epsilon to the sum
    0.98
    """
    for name, v in (("m", m), ("n", n)):
        check_positive(v, name)
    epsilon = check_epsilon(epsilon)
    r = m if features_per_record is None else features_per_record
    alpha = r / m
    lo, hi = _logit_bounds(epsilon)

    def objective(logit):
        g = 1.0 / (1.0 + math.exp(-logit))
        sx2 = noise_energy(m, g * epsilon, delta=delta, mechanism=mechanism, features_per_record=r)
        sz2 = 2.0 / ((1.0 - g) * epsilon) ** 2
        return math.log(nsr_noisy_count(nsr_public_count(n, m, sx2, c0=c0, alpha=alpha), n, sz2))

    return _minimise_share(objective, lo, hi)


def budget_split_one_hot(n_blocks, m, epsilon, n=None, *, delta=0.0, mechanism="laplace"):
    """gamma in (0, 1), the sum's share of epsilon, for a one-hot map of `n_blocks` blocks
    and m cells in all (HIST, RACE: L1 sensitivity k = n_blocks, L2 sqrt(k) under
    add/remove), from the map's own noise rather than the Fourier noise energy of
    `budget_split` (which, for m = 1100 cells and k = 11, takes the sum's noise for 100x
    what it is and leaves the count epsilon / 300).

    [derived] The relative mean-squared error of the mean sketch z = (Sigma + xi) / (n + zeta)
    is (1 + s_zeta^2 / n^2)(1 + NSR) - 1 (Chatalic et al. 2022, "Compressive learning with
    privacy guarantees", Lemma 27, without its Cramer-Rao halving: an M2M answer is divided
    by the count itself), with NSR = m s_xi^2 / (n^2 ||z||^2), s_xi^2 the noise variance of one
    cell at gamma epsilon (2 (k / (gamma eps))^2, Laplace; the analytic Gaussian's sigma^2 for
    L2 sensitivity sqrt(k), Gaussian) and s_zeta^2 = 2 / ((1 - gamma) eps)^2. ||z||^2 is between
    k / w (records spread evenly over the w = m / k cells of each block) and k (all in one
    cell); the rule takes their geometric mean k / sqrt(w). gamma minimizes this at the
    public size n: a given lower bound, else the size at which the sum's NSR at the whole
    epsilon is 1 (where the sketch starts to carry signal). For Laplace at large n,
    gamma / (1 - gamma) tends to (m k sqrt(w))^(1/3) (a count share of 2% for 11 columns of
    100 bins, against 0.3% from `budget_split`); as n falls gamma tends to 1/2: the count is
    not starved at small n.

    Parameters
    ----------
    n_blocks : float > 0
        k, the blocks of the map (one per column for HIST).
    m : float >= n_blocks
        The cells in all.
    epsilon : float > 0
        The whole epsilon of the sum and the count, within [2**-100, 2**100].
    n : float > 0, optional
        A public lower bound on the number of records; None: the size at which the
        sum's NSR at the whole epsilon is 1.
    delta : float, default 0
        For the Gaussian mechanism: in (0, 1).
    mechanism : {'laplace', 'gaussian'}, default 'laplace'

    Returns
    -------
    float
        gamma.

    Raises
    ------
    ValueError
        For an n_blocks, m, n or epsilon outside its range, m < n_blocks, an unknown
        mechanism, a Gaussian delta outside (0, 1), or an epsilon too small to split.

    Examples
    --------
    >>> from pysketch.privacy.nsr import budget_split_one_hot
    >>> gamma = budget_split_one_hot(11, 1100, 1.0)  # 11 columns of 100 bins
    >>> round(1 - gamma, 3)  # the count's share
    0.025
    """
    k = check_positive(n_blocks, "n_blocks")
    m = check_positive(m, "m")
    if m < k:
        raise ValueError(f"m (the cells, {m!r}) must be at least n_blocks ({n_blocks!r})")
    epsilon = check_epsilon(epsilon)
    if mechanism not in ("laplace", "gaussian"):
        raise ValueError(f"mechanism must be 'laplace' or 'gaussian', got {mechanism!r}")
    if mechanism == "gaussian" and not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1) for the Gaussian mechanism, got {delta!r}")
    signal = k / math.sqrt(m / k)  # ||z||^2, the geometric mean of its extremes

    def cell_variance(eps):
        if mechanism == "laplace":
            return 2.0 * (k / eps) ** 2
        return analytic_gaussian_sigma(eps, delta, math.sqrt(k)) ** 2

    if n is None:
        n = math.sqrt(m * cell_variance(epsilon) / signal)
    else:
        n = check_positive(n, "n")
    lo, hi = _logit_bounds(epsilon)

    def objective(logit):
        g = 1.0 / (1.0 + math.exp(-logit))
        a = 2.0 / ((1.0 - g) * epsilon * n) ** 2
        nsr = m * cell_variance(g * epsilon) / (n * n * signal)
        return math.log(a + nsr + a * nsr)

    return _minimise_share(objective, lo, hi)


def sketch_size_range(n_clusters, d, n, epsilon, *, delta=0.0):
    """(lower, upper) of the rule 2kd <= m <= n^2 eps^2 / (10^3 k d) ([P] sec. 6.6) for
    pure DP; with delta > 0 the Gaussian noise no longer grows with m
    (derived from [P] sec. 6.6) and the upper end is infinite. upper < lower means n is too
    small for this epsilon (n < sqrt(2 10^3) k d / eps).

    Parameters
    ----------
    n_clusters : float > 0
        k.
    d : float > 0
        The dimension of the records.
    n : float > 0
        The number of records (public, or a public lower bound).
    epsilon : float > 0
        Within [2**-100, 2**100].
    delta : float in [0, 1), default 0

    Returns
    -------
    (float, float)
        (lower, upper); upper is inf when delta > 0.

    Raises
    ------
    ValueError
        When an argument is outside its range.

    Examples
    --------
    >>> from pysketch.privacy.nsr import sketch_size_range
    >>> sketch_size_range(10, 5, 100_000, 1.0), sketch_size_range(10, 5, 1000, 1.0)
    ((100.0, 200000.0), (100.0, 20.0))
    >>> sketch_size_range(10, 5, 1000, 1.0, delta=1e-6)
    (100.0, inf)
    """
    kd = check_positive(n_clusters, "n_clusters") * check_positive(d, "d")
    check_positive(n, "n")
    check_epsilon(epsilon)
    if not (isinstance(delta, numbers.Real) and 0 <= delta < 1):
        raise ValueError(f"delta must be a number in [0, 1), got {delta!r}")
    if delta > 0:
        return 2 * kd, math.inf
    return 2 * kd, n * n * epsilon * epsilon / (1e3 * kd)


def choose_sketch_size(n_clusters, d, n, epsilon, *, delta=0.0, factor=10, margin=2.0):
    """The sketch size of a private compressive k-means: factor k d (the non-private
    default) if the rule allows it, else the rule's upper end divided by `margin` (it is
    the edge of the success region), never below 2kd.

    Parameters
    ----------
    n_clusters, d, n, epsilon, delta
        As for :func:`sketch_size_range`.
    factor : float, default 10
        The non-private size is factor k d.
    margin : float, default 2
        The rule's upper end is divided by it.

    Returns
    -------
    int
        m.

    Raises
    ------
    ValueError
        As :func:`sketch_size_range`.

    Examples
    --------
    >>> from pysketch.privacy.nsr import choose_sketch_size
    >>> choose_sketch_size(10, 5, 100_000, 1.0), choose_sketch_size(10, 5, 5000, 1.0)
    (500, 250)
    """
    lo, hi = sketch_size_range(n_clusters, d, n, epsilon, delta=delta)
    cap = factor * n_clusters * d
    if math.isinf(hi):
        return int(max(lo, cap))
    return int(max(lo, min(cap, math.floor(hi / margin))))
