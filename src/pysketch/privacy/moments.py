"""Private mean and spread of bounded records: the kernel-scale pilot of private fits.

For records clipped to a public box [lo, hi] with centre c0 and half widths h, the
count n, the sums S1 = sum_i (x_i - c0) and the scalar S2 = sum_i ||x_i - c0||^2 have
add/remove L1 sensitivities 1, sum_l h_l and sum_l h_l^2. Each is released with
Laplace noise for a third of epsilon (sequential composition), and

    mean = c0 + S1 / n,   spread^2 = S2 / (n d) - ||S1 / n||^2 / d

(the average per-coordinate variance) are post-processing.
"""

import math

import numpy as np

from .mechanisms import Laplace, noise_source
from .private_sketch import noisy_count

__all__ = ["private_mean_and_spread"]


def private_mean_and_spread(X, epsilon, lower, upper, *, insecure_seed=None):
    """(mean (d,), spread) of the records of X (already inside [lower, upper]) with
    epsilon-DP under add/remove neighbours; spread is the root of the average
    per-coordinate variance (>= 0). The caller charges the budget."""
    src = noise_source(insecure_seed)
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    c0 = 0.5 * (lower + upper)
    h = 0.5 * (upper - lower)
    e = epsilon / 3.0
    count = max(noisy_count(n, e, src), 1)
    Z = X - c0
    s1 = Laplace(e, float(h.sum()), insecure_seed=src).randomise(Z.sum(axis=0))
    s2 = Laplace(e, float(np.sum(h * h)), insecure_seed=src).randomise(np.array([np.einsum("ij,ij->", Z, Z)]))[0]
    m1 = s1 / count
    var = s2 / (count * d) - float(m1 @ m1) / d
    var = min(max(var, 0.0), float(np.mean(h * h)))
    return c0 + np.clip(m1, -h, h), math.sqrt(var)
