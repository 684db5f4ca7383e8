"""Private means of bounded records: the kernel-scale pilot of private fits (records in a
public box) and the centre of private PCA (records in a public ball).

For records clipped to a public box [lo, hi] with centre c0 and half widths h, the
count n, the sums S1 = sum_i (x_i - c0) and the scalar S2 = sum_i ||x_i - c0||^2 have
add/remove L1 sensitivities 1, sum_l h_l and sum_l h_l^2. Each is released with
Laplace noise for a third of epsilon (sequential composition), and

    mean = c0 + S1 / n,   spread^2 = S2 / (n d) - ||S1 / n||^2 / d

(the average per-coordinate variance) are post-processing.
"""

import math

import numpy as np

from .._checks import check_relation
from ..blocks import is_dask_collection, map_reduce
from .mechanisms import Gaussian, Laplace, check_delta, check_epsilon, noise_source, noisy_count

__all__ = ["private_ball_mean", "private_mean_and_spread"]


def private_mean_and_spread(X, epsilon, lower, upper, *, insecure_seed=None):
    """(mean (d,), spread) of the records of X (already inside [lower, upper]) with
    epsilon-DP under add/remove neighbours; spread is the root of the average
    per-coordinate variance (>= 0). The caller charges the budget."""
    epsilon = check_epsilon(epsilon)
    if not is_dask_collection(X):
        X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be a non-empty 2-D array (n, d), got shape {X.shape}")
    d = X.shape[1]
    lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), (d,))
    upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), (d,))
    if not (np.isfinite(lower).all() and np.isfinite(upper).all() and (upper > lower).all()):
        raise ValueError("lower and upper must be finite with upper > lower in every coordinate")
    c0 = 0.5 * (lower + upper)
    # The sums are taken in a public unit u, the power of two at the box's half-width (exact:
    # dividing by u only changes exponents), so that the squares and their sensitivity stay
    # far from float64's limits at any data scale; the release of the sums of z / u with the
    # sensitivities of the box / u is the same mechanism as in data units, scaled.
    unit = math.ldexp(1.0, math.frexp(float(np.max(0.5 * (upper - lower))))[1])
    h = 0.5 * (upper - lower) / unit
    # one pass (blockwise, where a dask collection's blocks live): n, sum(z), sum(||z||^2)
    # for z = (x - c0) / u; the noise is added here, once, to the merged sums
    n, z1, z2 = map_reduce(X, _centred_sums_block, _add_sums, args=(c0, lower, upper, unit))
    src = noise_source(insecure_seed)
    e = epsilon / 3.0
    count = max(noisy_count(n, e, src), 1)
    s1 = Laplace(e, float(h.sum()), insecure_seed=src).randomise(z1)
    s2 = Laplace(e, float(np.sum(h * h)), insecure_seed=src).randomise(np.array([z2]))[0]
    m1 = s1 / count
    var = s2 / (count * d) - float(m1 @ m1) / d
    var = min(max(var, 0.0), float(np.mean(h * h)))
    return c0 + unit * np.clip(m1, -h, h), unit * math.sqrt(var)


def _centred_sums_block(block, first_row, c0, lower, upper, unit=1.0):
    X = np.asarray(block, dtype=np.float64)
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinity")
    if ((X < lower) | (X > upper)).any():
        # the sensitivities hold only inside the box: clip first (the estimators do, with a warning)
        raise ValueError("X has records outside [lower, upper]; clip them to the public box first")
    Z = (X - c0) / unit
    return X.shape[0], Z.sum(axis=0), float(np.einsum("ij,ij->", Z, Z))


def _add_sums(a, b):
    return a[0] + b[0], a[1] + b[1], a[2] + b[2]


def _ball_sum_block(block, first_row, radius):
    X = np.asarray(block, dtype=np.float64)
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinity")
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    if (norms > radius * (1 + 1e-12)).any():
        raise ValueError("X has records outside the ball ||x|| <= radius; rescale them onto it first")
    return X.sum(axis=0)


def _add(a, b):
    return a + b


def private_ball_mean(X, radius, count, epsilon, delta=0.0, *, neighbouring="add_remove", insecure_seed=None):
    """The mean of records in the public ball ||x||_2 <= radius: their sum with noise,
    divided by `count` (the already released count: n itself under 'replace', where n is
    public). The caller has rescaled the records into the ball and charges the budget.

    Sensitivity of the sum (one record added or removed changes it by x, ||x||_2 <= R; one
    replaced, by x - y with ||x - y||_2 <= 2R): L2 = R (add/remove) or 2R (replace), and
    L1 <= sqrt(d) L2 (Cauchy-Schwarz, attained by x = R (1, ..., 1) / sqrt(d)). delta = 0:
    Laplace at L1, epsilon-DP; delta > 0: the analytic Gaussian at L2, (epsilon, delta)-DP.
    Returns (mean (d,), the noise variance per coordinate of the mean)."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=False)
    check_relation(neighbouring)
    if isinstance(radius, (bool, np.bool_)) or not (isinstance(radius, (int, float, np.integer, np.floating))
                                                    and math.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a positive finite number, got {radius!r}")
    if not is_dask_collection(X):
        X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be a non-empty 2-D array (n, d), got shape {X.shape}")
    d = X.shape[1]
    if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
        raise TypeError(f"count must be the released count (an int), got {count!r}")
    if count < 0:
        raise ValueError(f"count must be >= 0 (a released count may be 0), got {count}")
    l2 = radius * (2.0 if neighbouring == "replace" else 1.0)
    src = noise_source(insecure_seed)
    if delta == 0:
        mech = Laplace(epsilon, l2 * math.sqrt(d), insecure_seed=src)
    else:
        mech = Gaussian(epsilon, delta, l2, insecure_seed=src)
    # one pass (blockwise where a dask collection's blocks live), the noise added once
    noisy = mech.randomise(map_reduce(X, _ball_sum_block, _add, args=(float(radius),)))
    n = max(int(count), 1)
    return noisy / n, mech.variance / (n * n)
