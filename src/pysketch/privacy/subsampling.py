"""Privacy amplification by Poisson data subsampling ([P] Lemma 14 and eq. (22); Balle,
Barthe & Gaboardi 2018).

If a mechanism is (eps', delta')-DP and it is run on a Poisson subsample (each record
kept independently with probability beta, the selection secret), the whole is
(log(1 + beta (e^eps' - 1)), beta delta')-DP under add/remove neighbours. To release
with a target (eps, delta), calibrate the mechanism at eps' = log(1 + (e^eps - 1)/beta)
and delta' = delta / beta. Chatalic et al. 2022, Sec. 6.3, show that at equal cost
subsampling *features* is better than subsampling data; this is here for completeness
and for data that cannot be read whole.
"""

import math
import numbers
import os

import numpy as np

from .mechanisms import check_epsilon

__all__ = ["amplified_epsilon", "epsilon_before_subsampling", "poisson_subsample"]


def _check_beta(beta):
    if isinstance(beta, (bool, np.bool_)) or not isinstance(beta, numbers.Real) or not 0 < beta <= 1:
        raise ValueError(f"data_fraction must be a number in (0, 1], got {beta!r}")
    return float(beta)


def amplified_epsilon(epsilon, data_fraction):
    """log(1 + beta (e^eps - 1)): the epsilon of an eps-DP mechanism run on a Poisson(beta)
    subsample ([P] Lemma 14).

    Parameters
    ----------
    epsilon : float > 0
        The mechanism's epsilon, within [2**-100, 2**100]
        (:func:`~pysketch.privacy.mechanisms.check_epsilon`).
    data_fraction : float in (0, 1]
        beta, the probability that a record is kept.

    Returns
    -------
    float
        The epsilon of the whole (subsampling, then the mechanism), at most `epsilon`.

    Raises
    ------
    ValueError
        For an epsilon or a data_fraction outside its range.

    Examples
    --------
    >>> from pysketch.privacy.subsampling import amplified_epsilon
    >>> round(amplified_epsilon(1.0, 0.1), 4)
    0.1586
    """
    eps = check_epsilon(epsilon)
    beta = _check_beta(data_fraction)
    if eps > _EXP_LIMIT:  # e^eps overflows: eps + log(beta + (1 - beta) e^-eps), the same number
        return eps + math.log(beta + (1.0 - beta) * math.exp(-eps))
    return math.log1p(beta * math.expm1(eps))


def epsilon_before_subsampling(epsilon, data_fraction):
    """log(1 + (e^eps - 1) / beta): the epsilon to calibrate a mechanism at so that, run on
    a Poisson(beta) subsample, it is eps-DP ([P] eq. (22)); the inverse of
    :func:`amplified_epsilon`.

    Parameters
    ----------
    epsilon : float > 0
        The target epsilon for the whole dataset, within [2**-100, 2**100].
    data_fraction : float in (0, 1]
        beta, the probability that a record is kept.

    Returns
    -------
    float
        The epsilon of the mechanism, at least `epsilon`.

    Raises
    ------
    ValueError
        For an epsilon or a data_fraction outside its range.

    Examples
    --------
    >>> from pysketch.privacy.subsampling import amplified_epsilon, epsilon_before_subsampling
    >>> eps = epsilon_before_subsampling(1.0, 0.1)
    >>> round(eps, 3), round(amplified_epsilon(eps, 0.1), 9)
    (2.9, 1.0)
    """
    eps = check_epsilon(epsilon)
    beta = _check_beta(data_fraction)
    if eps > _EXP_LIMIT:  # e^eps overflows: eps - log(beta) + log(1 + (beta - 1) e^-eps), the same number
        return eps - math.log(beta) + math.log1p((beta - 1.0) * math.exp(-eps))
    return math.log1p(math.expm1(eps) / beta)


#: Above it, math.expm1(eps) overflows float64 (e^709.78 is the largest float).
_EXP_LIMIT = 700.0


def poisson_subsample(n, data_fraction, *, insecure_seed=None):
    """A boolean mask of n records, each kept with probability data_fraction (exactly
    floor(beta 2^64) / 2^64), from OS entropy (the selection must stay secret), or from a
    seeded generator with insecure_seed (tests).

    Parameters
    ----------
    n : int >= 0
        The number of records.
    data_fraction : float in (0, 1]
        beta; 1 keeps every record.
    insecure_seed : None or int, optional
        None (default): 64 bits of OS entropy per record. An int: NumPy's generator
        seeded with it, reproducible and **insecure** (tests).

    Returns
    -------
    ndarray of bool, shape (n,)
        True for the records kept.

    Raises
    ------
    ValueError
        When n is not an int >= 0 or data_fraction is not in (0, 1].

    Examples
    --------
    >>> from pysketch.privacy.subsampling import poisson_subsample
    >>> mask = poisson_subsample(10_000, 0.1)
    >>> mask.shape, mask.dtype, bool(0.08 < mask.mean() < 0.12)
    ((10000,), dtype('bool'), True)
    """
    beta = _check_beta(data_fraction)
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    n = int(n)
    threshold = np.uint64(min(math.floor(beta * 2.0 ** 64), 2 ** 64 - 1))
    if beta == 1.0:
        return np.ones(n, dtype=bool)
    if insecure_seed is None:
        u = np.frombuffer(os.urandom(8 * n), dtype=np.uint64)
    else:
        u = np.random.default_rng(insecure_seed).integers(0, 2 ** 64, size=n, dtype=np.uint64, endpoint=False)
    return u < threshold
