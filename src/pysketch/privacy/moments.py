"""Private moments of bounded records: the kernel-scale pilot of private fits (records in a
public box), the centre of private PCA (records in a public ball), the second moments
of records in a box (the projection of private k-means) and the cluster means of one
private Lloyd step.

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

__all__ = ["cluster_sums_sensitivity", "private_ball_mean", "private_cluster_means", "private_mean_and_spread",
           "private_mean_of_sum",
           "private_second_moments", "second_moment_sensitivity"]


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
    _check_count(count)
    # one pass (blockwise where a dask collection's blocks live), the noise added once
    total = map_reduce(X, _ball_sum_block, _add, args=(float(radius),))
    return private_mean_of_sum(total, radius, count, epsilon, delta, neighbouring=neighbouring,
                               insecure_seed=insecure_seed)


def _check_count(count):
    if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
        raise TypeError(f"count must be the released count (an int), got {count!r}")
    if count < 0:
        raise ValueError(f"count must be >= 0 (a released count may be 0), got {count}")


def private_mean_of_sum(total, radius, count, epsilon, delta=0.0, *, neighbouring="add_remove", insecure_seed=None):
    """`private_ball_mean` from the records' sum already taken (the clean sum of records in
    the ball ||x|| <= radius, e.g. read from a clean sketch that holds it): the same noise,
    sensitivity and division by the released `count`. The caller vouches that every record
    summed lies in the ball, and charges the budget."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=False)
    check_relation(neighbouring)
    if isinstance(radius, (bool, np.bool_)) or not (isinstance(radius, (int, float, np.integer, np.floating))
                                                    and math.isfinite(radius) and radius > 0):
        raise ValueError(f"radius must be a positive finite number, got {radius!r}")
    total = np.asarray(total, dtype=np.float64)
    if total.ndim != 1 or total.size < 1 or not np.isfinite(total).all():
        raise ValueError(f"total must be a finite 1-D array (the records' sum), got shape {total.shape}")
    _check_count(count)
    d = total.size
    l2 = radius * (2.0 if neighbouring == "replace" else 1.0)
    src = noise_source(insecure_seed)
    if delta == 0:
        mech = Laplace(epsilon, l2 * math.sqrt(d), insecure_seed=src)
    else:
        mech = Gaussian(epsilon, delta, l2, insecure_seed=src)
    noisy = mech.randomise(total)
    n = max(int(count), 1)
    return noisy / n, mech.variance / (n * n)


# ----------------------------------------------------------------------- second moments


def second_moment_sensitivity(half, norm, neighbouring="add_remove"):
    """Sensitivity of the upper triangle (diagonal included) of S = sum_i z_i z_i^T for
    records z in the centred box abs(z_l) <= h_l. One record added or removed changes it by
    (z_i z_j)_{i <= j}, whose norms grow with every abs(z_l) and are largest at a corner:
    L1 = ((sum_l h_l)^2 + sum_l h_l^2) / 2 and L2 = sqrt(((sum_l h_l^2)^2 + sum_l h_l^4) / 2),
    both attained. One replaced changes it by the difference of two such vectors: twice
    those (an upper bound)."""
    h = np.asarray(half, dtype=np.float64)
    check_relation(neighbouring)
    s1, s2, s4 = float(h.sum()), float((h * h).sum()), float((h ** 4).sum())
    if norm == 1:
        value = (s1 * s1 + s2) / 2.0
    elif norm == 2:
        value = math.sqrt((s2 * s2 + s4) / 2.0)
    else:
        raise ValueError(f"norm must be 1 or 2, got {norm!r}")
    return value * (2.0 if neighbouring == "replace" else 1.0)


def _triangle_block(block, first_row, c0, unit, rows, cols):
    Z = (np.asarray(block, dtype=np.float64) - c0) / unit
    return (Z.T @ Z)[rows, cols]


def private_second_moments(X, lower, upper, epsilon, delta=0.0, *, neighbouring="add_remove", insecure_seed=None):
    """The second moments S = sum_i (x_i - c0)(x_i - c0)^T of records in the public box
    [lower, upper] (c0 its centre), released with (epsilon, delta)-DP: the upper triangle
    with Laplace noise at its L1 sensitivity (delta = 0) or the analytic Gaussian at its L2
    sensitivity (delta > 0), :func:`second_moment_sensitivity`. The caller has clipped the
    records to the box and charges the budget. Returns the symmetric (d, d) noisy matrix
    (not forced positive semi-definite) and the noise variance of each entry. The sums are
    taken in the public power-of-two unit at the box's largest half-width (exact scaling)."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=False)
    check_relation(neighbouring)
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
    unit = math.ldexp(1.0, math.frexp(float(np.max(0.5 * (upper - lower))))[1])
    h = 0.5 * (upper - lower) / unit
    rows, cols = np.triu_indices(d)
    tri = map_reduce(X, _triangle_block, _add, args=(c0, unit, rows, cols))
    src = noise_source(insecure_seed)
    if delta == 0:
        mech = Laplace(epsilon, second_moment_sensitivity(h, 1, neighbouring), insecure_seed=src)
    else:
        mech = Gaussian(epsilon, delta, second_moment_sensitivity(h, 2, neighbouring), insecure_seed=src)
    noisy = mech.randomise(tri) * (unit * unit)
    S = np.empty((d, d))
    S[rows, cols] = noisy
    S[cols, rows] = noisy
    return S, mech.variance * unit ** 4


# ----------------------------------------------------------------------- cluster means


def cluster_sums_sensitivity(half, norm, neighbouring="add_remove"):
    """Sensitivity of (counts, sums of z) per nearest centre for records z in the centred
    box abs(z_l) <= h_l: one record added or removed changes one count by 1 and one sum by z:
    L1 = 1 + sum_l h_l, L2 = sqrt(1 + sum_l h_l^2) (attained at a corner); one replaced
    may move between two centres: L1 <= 2 (1 + sum_l h_l), L2 <= sqrt(2 + 4 sum_l h_l^2)."""
    h = np.asarray(half, dtype=np.float64)
    check_relation(neighbouring)
    s1, s2 = float(h.sum()), float((h * h).sum())
    if norm == 1:
        return (1.0 + s1) * (2.0 if neighbouring == "replace" else 1.0)
    if norm == 2:
        return math.sqrt(2.0 + 4.0 * s2) if neighbouring == "replace" else math.sqrt(1.0 + s2)
    raise ValueError(f"norm must be 1 or 2, got {norm!r}")


def _cluster_sums_block(block, first_row, c0, unit, centres):
    from ..cluster import assign

    Z = (np.asarray(block, dtype=np.float64) - c0) / unit
    lab = assign(Z, centres)
    k = centres.shape[0]
    counts = np.bincount(lab, minlength=k).astype(np.float64)
    sums = np.zeros((k, Z.shape[1]))
    np.add.at(sums, lab, Z)
    return np.concatenate([counts, sums.ravel()])


def private_cluster_means(X, centres, lower, upper, epsilon, delta=0.0, *, neighbouring="add_remove",
                          insecure_seed=None):
    """One private Lloyd step: the records (inside the public box [lower, upper]) are
    assigned to their nearest centre, and the count and the sum of x - c0 of every centre
    are released with (epsilon, delta)-DP (Laplace at the L1 sensitivity for delta = 0,
    the analytic Gaussian at the L2 one otherwise; :func:`cluster_sums_sensitivity`),
    the SuLQ update of DP-Lloyd (Blum, Dwork, McSherry & Nissim 2005) once. The new
    centre is c0 + sum / count where the noisy count is at least 1, the old centre
    elsewhere, clipped to the box (post-processing). The caller has clipped the records
    and charges the budget. Returns (centres (k, d), noisy counts (k,))."""
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=False)
    check_relation(neighbouring)
    if not is_dask_collection(X):
        X = np.asarray(X, dtype=np.float64)
    C = np.asarray(centres, dtype=np.float64)
    if X.ndim != 2 or C.ndim != 2 or C.shape[1] != X.shape[1] or not np.isfinite(C).all():
        raise ValueError(f"centres must be a finite (k, d) array with d = {X.shape[1]}, got shape {C.shape}")
    d, k = X.shape[1], C.shape[0]
    lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), (d,))
    upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), (d,))
    c0 = 0.5 * (lower + upper)
    unit = math.ldexp(1.0, math.frexp(float(np.max(0.5 * (upper - lower))))[1])
    h = 0.5 * (upper - lower) / unit
    Cz = (C - c0) / unit
    v = map_reduce(X, _cluster_sums_block, _add, args=(c0, unit, Cz))
    src = noise_source(insecure_seed)
    if delta == 0:
        mech = Laplace(epsilon, cluster_sums_sensitivity(h, 1, neighbouring), insecure_seed=src)
    else:
        mech = Gaussian(epsilon, delta, cluster_sums_sensitivity(h, 2, neighbouring), insecure_seed=src)
    noisy = mech.randomise(v)
    counts, sums = noisy[:k], noisy[k:].reshape(k, d)
    ok = counts >= 1.0
    new = Cz.copy()
    new[ok] = np.clip(sums[ok] / counts[ok, None], -h, h)
    return c0 + unit * new, counts
