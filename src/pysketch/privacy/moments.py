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
    per-coordinate variance (>= 0). The caller charges the budget.

    The count, the sum and the sum of squares are each released with Laplace noise for
    epsilon / 3 (module docstring). The mean is clipped to the box and the variance to
    [0, mean of the squared half widths] (post-processing).

    Parameters
    ----------
    X : array_like or dask array, shape (n, d)
        The records, finite and inside the box (clip them first).
    epsilon : float > 0
        Within [2**-100, 2**100].
    lower, upper : float or array_like of shape (d,)
        The public box, finite, upper > lower in every coordinate.
    insecure_seed : None or int, optional
        None (default): noise from OS entropy. An int: reproducible, **insecure** noise.

    Returns
    -------
    mean : ndarray of shape (d,)
    spread : float

    Raises
    ------
    ValueError
        When X is not a non-empty 2-D array, has NaN, infinite values or records outside
        the box, the box is not finite with upper > lower, or epsilon is outside its
        range.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.privacy.moments import private_mean_and_spread
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(10_000, 3))
    >>> mean, spread = private_mean_and_spread(X, 1.0, -1.0, 1.0)
    >>> mean.shape, bool(np.allclose(mean, 0.0, atol=0.05)), bool(abs(spread - 3 ** -0.5) < 0.05)
    ((3,), True, True)
    """
    epsilon = check_epsilon(epsilon)
    X, lower, upper = _records_and_box(X, lower, upper)
    d = X.shape[1]
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
    X = _inside_box(block, lower, upper)
    Z = (X - c0) / unit
    return X.shape[0], Z.sum(axis=0), float(np.einsum("ij,ij->", Z, Z))


def _inside_box(block, lower, upper):
    """The block as float64, after checking that its records are finite and inside the
    public box: every sensitivity here holds only there (the estimators clip first, with a
    warning); ValueError otherwise."""
    X = np.asarray(block, dtype=np.float64)
    if not np.isfinite(X).all():
        raise ValueError("X contains NaN or infinity")
    if ((X < lower) | (X > upper)).any():
        raise ValueError("X has records outside [lower, upper]; clip them to the public box first")
    return X


def _records_and_box(X, lower, upper):
    """X (a numpy array as float64, or a dask collection left lazy) and the public box
    broadcast to its d columns; ValueError for X not a non-empty 2-D array, or a box not
    finite with upper > lower in every coordinate (the sensitivities' half widths)."""
    if not is_dask_collection(X):
        X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be a non-empty 2-D array (n, d), got shape {X.shape}")
    d = X.shape[1]
    lower = np.broadcast_to(np.asarray(lower, dtype=np.float64), (d,))
    upper = np.broadcast_to(np.asarray(upper, dtype=np.float64), (d,))
    if not (np.isfinite(lower).all() and np.isfinite(upper).all() and (upper > lower).all()):
        raise ValueError("lower and upper must be finite with upper > lower in every coordinate")
    return X, lower, upper


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
    Returns (mean (d,), the noise variance per coordinate of the mean).

    Parameters
    ----------
    X : array_like or dask array, shape (n, d)
        The records, finite, with ||x||_2 <= radius (rescale them first).
    radius : float > 0
        R, public.
    count : int >= 0
        The released count (a noisy count under 'add_remove', n under 'replace'); the
        sum is divided by max(count, 1).
    epsilon : float > 0
        Within [2**-100, 2**100].
    delta : float in [0, 1), default 0
        0: Laplace; > 0: the analytic Gaussian.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    insecure_seed : None or int, optional
        None (default): noise from OS entropy. An int: reproducible, **insecure** noise.

    Returns
    -------
    mean : ndarray of shape (d,)
    variance : float
        The noise variance per coordinate of the mean.

    Raises
    ------
    ValueError
        For a radius, epsilon, delta or relation outside its range, X not a non-empty
        2-D array, NaN, infinite values or records outside the ball, or a negative count.
    TypeError
        When `count` is not an int.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.privacy.moments import private_ball_mean
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(10_000, 3)) / np.sqrt(3)  # ||x|| <= 1
    >>> mean, variance = private_ball_mean(X, 1.0, 10_000, 1.0)
    >>> bool(np.allclose(mean, X.mean(axis=0), atol=0.01)), f"{variance:.1e}"
    (True, '6.0e-08')
    """
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
    summed lies in the ball, and charges the budget.

    Parameters
    ----------
    total : array_like of shape (d,)
        The clean sum of the records, finite.
    radius, count, epsilon, delta, neighbouring, insecure_seed
        As for :func:`private_ball_mean`.

    Returns
    -------
    mean : ndarray of shape (d,)
    variance : float
        The noise variance per coordinate of the mean.

    Raises
    ------
    ValueError
        For a radius, epsilon, delta or relation outside its range, a `total` that is not
        a finite non-empty 1-D array, or a negative count.
    TypeError
        When `count` is not an int.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.privacy.moments import private_mean_of_sum
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(10_000, 3)) / np.sqrt(3)
    >>> mean, variance = private_mean_of_sum(X.sum(axis=0), 1.0, 10_000, 1.0, delta=1e-6)
    >>> bool(np.allclose(mean, X.mean(axis=0), atol=0.01)), variance < 1e-6
    (True, True)
    """
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
    those (an upper bound).

    Parameters
    ----------
    half : array_like of shape (d,)
        The half widths h_l >= 0 of the box (not checked).
    norm : {1, 2}
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For a norm other than 1 or 2, or an unknown relation.

    Examples
    --------
    >>> from pysketch.privacy.moments import second_moment_sensitivity
    >>> second_moment_sensitivity([1.0, 1.0, 1.0], 1), round(second_moment_sensitivity([1.0, 1.0, 1.0], 2), 4)
    (6.0, 2.4495)
    >>> second_moment_sensitivity([1.0, 1.0, 1.0], 1, "replace")
    12.0
    """
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


def _triangle_block(block, first_row, c0, unit, rows, cols, lower, upper):
    Z = (_inside_box(block, lower, upper) - c0) / unit
    return (Z.T @ Z)[rows, cols]


def private_second_moments(X, lower, upper, epsilon, delta=0.0, *, neighbouring="add_remove", insecure_seed=None):
    """The second moments S = sum_i (x_i - c0)(x_i - c0)^T of records in the public box
    [lower, upper] (c0 its centre), released with (epsilon, delta)-DP: the upper triangle
    with Laplace noise at its L1 sensitivity (delta = 0) or the analytic Gaussian at its L2
    sensitivity (delta > 0), :func:`second_moment_sensitivity`. The caller has clipped the
    records to the box and charges the budget. Returns the symmetric (d, d) noisy matrix
    (not forced positive semi-definite) and the noise variance of each entry. The sums are
    taken in the public power-of-two unit at the box's largest half-width (exact scaling).

    Parameters
    ----------
    X : array_like or dask array, shape (n, d)
        The records, inside the box (not checked: records outside it break the
        sensitivity).
    lower, upper : float or array_like of shape (d,)
        The public box, finite, upper > lower in every coordinate.
    epsilon : float > 0
        Within [2**-100, 2**100].
    delta : float in [0, 1), default 0
        0: Laplace; > 0: the analytic Gaussian.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    insecure_seed : None or int, optional
        None (default): noise from OS entropy. An int: reproducible, **insecure** noise.

    Returns
    -------
    S : ndarray of shape (d, d)
        The noisy second moments about the box's centre (a sum, not divided by n).
    variance : float
        The noise variance of each entry of the upper triangle.

    Raises
    ------
    ValueError
        For an epsilon, delta or relation outside its range, X not a non-empty 2-D
        array, a record with NaN or infinity or outside the box (clip to the public box
        first), or a box that is not finite with upper > lower.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.privacy.moments import private_second_moments
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(10_000, 3))
    >>> S, variance = private_second_moments(X, -1.0, 1.0, 1.0)
    >>> S.shape, bool(np.allclose(S / 10_000, np.eye(3) / 3, atol=0.05)), variance
    ((3, 3), True, 72.0)
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=False)
    check_relation(neighbouring)
    X, lower, upper = _records_and_box(X, lower, upper)
    d = X.shape[1]
    c0 = 0.5 * (lower + upper)
    unit = math.ldexp(1.0, math.frexp(float(np.max(0.5 * (upper - lower))))[1])
    h = 0.5 * (upper - lower) / unit
    rows, cols = np.triu_indices(d)
    tri = map_reduce(X, _triangle_block, _add, args=(c0, unit, rows, cols, lower, upper))
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
    may move between two centres: L1 <= 2 (1 + sum_l h_l), L2 <= sqrt(2 + 4 sum_l h_l^2).

    Parameters
    ----------
    half : array_like of shape (d,)
        The half widths h_l >= 0 of the box (not checked).
    norm : {1, 2}
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'

    Returns
    -------
    float

    Raises
    ------
    ValueError
        For a norm other than 1 or 2, or an unknown relation.

    Examples
    --------
    >>> from pysketch.privacy.moments import cluster_sums_sensitivity
    >>> cluster_sums_sensitivity([1.0, 1.0, 1.0], 1), cluster_sums_sensitivity([1.0, 1.0, 1.0], 2)
    (4.0, 2.0)
    """
    h = np.asarray(half, dtype=np.float64)
    check_relation(neighbouring)
    s1, s2 = float(h.sum()), float((h * h).sum())
    if norm == 1:
        return (1.0 + s1) * (2.0 if neighbouring == "replace" else 1.0)
    if norm == 2:
        return math.sqrt(2.0 + 4.0 * s2) if neighbouring == "replace" else math.sqrt(1.0 + s2)
    raise ValueError(f"norm must be 1 or 2, got {norm!r}")


def _cluster_sums_block(block, first_row, c0, unit, centres, lower, upper):
    from ..cluster import assign

    Z = (_inside_box(block, lower, upper) - c0) / unit
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
    and charges the budget. Returns (centres (k, d), noisy counts (k,)).

    Parameters
    ----------
    X : array_like or dask array, shape (n, d)
        The records, inside the box (not checked: records outside it break the
        sensitivity).
    centres : array_like of shape (k, d)
        The current centres, finite (public: an earlier release).
    lower, upper : float or array_like of shape (d,)
        The public box (not checked: it must be finite with upper > lower).
    epsilon : float > 0
        Within [2**-100, 2**100].
    delta : float in [0, 1), default 0
        0: Laplace; > 0: the analytic Gaussian.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    insecure_seed : None or int, optional
        None (default): noise from OS entropy. An int: reproducible, **insecure** noise.

    Returns
    -------
    centres : ndarray of shape (k, d)
    counts : ndarray of shape (k,)
        The noisy counts (floats; they may be below 1 or negative).

    Raises
    ------
    ValueError
        For an epsilon, delta or relation outside its range, X not a non-empty 2-D
        array, a record with NaN or infinity or outside the box (clip to the public box
        first), a box that is not finite with upper > lower, or centres that are not a
        finite (k, d) array of X's width.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.privacy.moments import private_cluster_means
    >>> rng = np.random.default_rng(0)
    >>> X = np.clip(np.concatenate([rng.normal(-0.5, 0.1, (5000, 2)), rng.normal(0.5, 0.1, (5000, 2))]), -1, 1)
    >>> C, counts = private_cluster_means(X, [[-0.4, -0.4], [0.4, 0.4]], -1.0, 1.0, 1.0)
    >>> bool(np.allclose(C, [[-0.5, -0.5], [0.5, 0.5]], atol=0.05)), bool(np.allclose(counts, 5000, atol=100))
    (True, True)
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=False)
    check_relation(neighbouring)
    X, lower, upper = _records_and_box(X, lower, upper)
    C = np.asarray(centres, dtype=np.float64)
    if C.ndim != 2 or C.shape[1] != X.shape[1] or C.shape[0] < 1 or not np.isfinite(C).all():
        raise ValueError(f"centres must be a finite (k, d) array with d = {X.shape[1]}, got shape {C.shape}")
    d, k = X.shape[1], C.shape[0]
    c0 = 0.5 * (lower + upper)
    unit = math.ldexp(1.0, math.frexp(float(np.max(0.5 * (upper - lower))))[1])
    h = 0.5 * (upper - lower) / unit
    Cz = (C - c0) / unit
    v = map_reduce(X, _cluster_sums_block, _add, args=(c0, unit, Cz, lower, upper))
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
