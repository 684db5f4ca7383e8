r"""A private first look at the data: per-coordinate location and spread of the inputs and
of the labels, released once, so that the regressor's features and its label clipping fit
the data rather than the public box.

A public box is often far wider than the data (a delay bound of [-90, 360] minutes for
delays that mostly lie within [-30, 60]; the range [d e^-6, d] of a sum of d bounded terms
that concentrates near its mean). A kernel length scale stated in box units is then too
wide or too narrow, and the sensitivity of the label-weighted statistics grows with the
label range (:mod:`pysketch.rfm.ssp`). This module releases, with (epsilon0, delta0)-DP, the
sums over records of

    r(x, y) = (1, u, u * u, v, v^2),   u = clip((x - lower) / (upper - lower), 0, 1) in [0, 1]^d,
                                        v = clip((y - y_lo) / (y_hi - y_lo), 0, 1),

(the count, per-coordinate first and second moments in box units, and the label's) by one
Gaussian mechanism. Add/remove: ``||r||_2^2 <= 1 + 2 d + 2``; replace: the count cancels
and ``||r - r'||_2^2 <= 2 (d + 1)``: for a, b in [0, 1],
``(a - b)^2 + (a^2 - b^2)^2 = (a - b)^2 (1 + (a + b)^2) <= 2`` (at a = 1, b = 0).
Everything derived from the release (means, spreads, the label clipping range) is
post-processing and public; the caller composes this release with the next one
(sequential composition: the epsilons and deltas add).

The spreads are floored at what the noise can resolve (``3 sigma / n^`` in second-moment
units, and an absolute 1e-3 of the box) so that a noisy small variance never makes the
features arbitrarily narrow.
"""

import math

import numpy as np

from .._checks import check_array, check_bounds
from ..privacy.budget import Budget
from ..privacy.mechanisms import check_delta, check_epsilon

__all__ = ["DataScaling", "private_scaling", "scaling_sums", "add_sums", "release_scaling", "scaling_sensitivity",
           "LABEL_RADIUS_SPREADS"]

#: The label clipping range is the released label mean +- this many released spreads
#: (intersected with the public range).
LABEL_RADIUS_SPREADS = 6.0
#: Smallest spread in box units.
MIN_SPREAD = 1e-3


def scaling_sensitivity(d, neighbouring="add_remove"):
    """L2 sensitivity of the sum of r(x, y) (module docstring).

    Parameters
    ----------
    d : int
        The number of coordinates of x.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
        The neighbouring relation.

    Returns
    -------
    float
        sqrt(1 + 2 d + 2) (add/remove) or sqrt(2 (d + 1)) (replace).

    Raises
    ------
    ValueError
        For another `neighbouring`.

    Examples
    --------
    >>> from pysketch.rfm.scaling import scaling_sensitivity
    >>> round(scaling_sensitivity(2) ** 2, 9), round(scaling_sensitivity(2, "replace") ** 2, 9)
    (7.0, 6.0)
    """
    if neighbouring == "add_remove":
        return math.sqrt(1.0 + 2.0 * d + 2.0)
    if neighbouring == "replace":
        return math.sqrt(2.0 * (d + 1.0))
    raise ValueError(f"neighbouring must be 'add_remove' or 'replace', got {neighbouring!r}")


class DataScaling:
    """Released location and spread: ``x_centre``, ``x_scale`` (d,) in the data's units,
    the label clipping range ``target_range`` (lo, hi), the noisy count and the privacy
    record.

    Made by :func:`release_scaling` (and :func:`private_scaling`); the regressors also make
    one for a non-private fit or the unit box. The arguments are kept as they are, as the
    attributes of the same names.

    Parameters
    ----------
    x_centre : ndarray of shape (d,)
        The location of each coordinate of x (the released mean), in the data's units.
    x_scale : ndarray of shape (d,)
        The spread of each coordinate (the released standard deviation, floored), > 0.
    target_range : (float, float)
        The label clipping range (lo, hi).
    count : float or None
        The noisy count (at least 1), or None where there is none.
    privacy : dict or None
        The record of the release (epsilon, delta, neighbouring, sensitivity, sigma, ...),
        or None for a non-private scaling.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.scaling import DataScaling
    >>> scaling = DataScaling(np.array([5.0, 0.5]), np.array([2.0, 0.25]), (0.0, 10.0), None, None)
    >>> scaling.transform(np.array([[7.0, 0.0]])).tolist()
    [[1.0, -2.0]]
    """

    def __init__(self, x_centre, x_scale, target_range, count, privacy):
        self.x_centre = x_centre
        self.x_scale = x_scale
        self.target_range = target_range
        self.count = count
        self.privacy = privacy

    def transform(self, X):
        """(X - x_centre) / x_scale: the standardised inputs."""
        return (X - self.x_centre) / self.x_scale


def _moments(s1, s2, n, floor):
    mean = np.clip(s1 / n, 0.0, 1.0)
    var = s2 / n - mean * mean
    return mean, np.sqrt(np.maximum(var, floor))


def private_scaling(X, y, bounds, target_bounds, epsilon, delta, *, neighbouring="add_remove", accountant=None,
                    insecure_seed=None):
    """Release the location and spread of X and y with (epsilon, delta)-DP (module
    docstring). `bounds` = (lower, upper) arrays (d,), `target_bounds` = (lo, hi): public.

    X and y may be dask collections (:mod:`pysketch.records`): the sums of r(x, y) are
    then taken block by block where the blocks live, merged, and released once.

    Parameters
    ----------
    X : array of shape (n, d), or a dask array or data frame
        The inputs; values outside `bounds` are clipped (in box units) in the sums.
    y : array of shape (n,), or a dask array or series
        The labels; values outside `target_bounds` are clipped in the sums.
    bounds : (lower, upper)
        The public box of X.
    target_bounds : (lo, hi)
        The public range of y, lo < hi.
    epsilon : float > 0
    delta : float in (0, 1)
        Must be > 0 (the Gaussian mechanism).
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    accountant : BudgetAccountant, optional
        Charged (epsilon, delta) before the noise is drawn.
    insecure_seed : None or int
        None: noise from the OS entropy. An int reproduces the noise and is **insecure**
        (tests and experiments only).

    Returns
    -------
    DataScaling
        The released scaling (see :func:`release_scaling`).

    Raises
    ------
    ValueError
        For an epsilon out of range or a delta not in (0, 1); a y that is not finite with
        one value per row of X; `target_bounds` with lower >= upper; `bounds` that are not a
        finite box of d coordinates; an unknown `neighbouring`; an accountant whose budget
        would be exceeded (pysketch.privacy.BudgetError).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.scaling import private_scaling
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(10000, 2)) * [10, 1]
    >>> y = X[:, 0] + rng.standard_normal(10000)
    >>> scaling = private_scaling(X, y, ([0, 0], [10, 1]), (-5, 15), 0.5, 1e-6)
    >>> scaling.x_centre.shape, bool(abs(scaling.x_centre[0] - 5) < 0.5)  # (the noise is not seeded)
    ((2,), True)
    """
    from ..records import Records, is_lazy

    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=True)
    if is_lazy(X, y):
        records, _ = Records.from_dask(X, y)
    else:
        X = check_array(X, "X", np.float64)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0] or not np.isfinite(y).all():
            raise ValueError("y must be finite with one value per row of X")
        records = Records(X, y)
    d = records.shape[1]
    lo, hi = check_bounds(tuple(bounds), d)
    ylo, yhi = _target_range(target_bounds)
    total = records.reduce(scaling_sums, add_sums, args=(lo, hi, ylo, yhi))
    return release_scaling(total, (lo, hi), (ylo, yhi), epsilon, delta, neighbouring=neighbouring,
                           accountant=accountant, insecure_seed=insecure_seed)


def _target_range(target_bounds):
    """(lo, hi) as floats, finite with lo < hi; ValueError otherwise."""
    try:
        ylo, yhi = (float(v) for v in target_bounds)
    except (TypeError, ValueError):
        raise ValueError(f"target_bounds must be a pair (lower, upper) of numbers, got {target_bounds!r}") from None
    if not (math.isfinite(ylo) and math.isfinite(yhi) and ylo < yhi):
        raise ValueError(f"target_bounds must be finite with lower < upper, got ({ylo!r}, {yhi!r})")
    return ylo, yhi


def scaling_sums(x, y, first_row, lo, hi, ylo, yhi):
    """The sum of r(x, y) over records (x (k, d) and y (k,) in memory): (count, sum u,
    sum u^2, sum v, sum v^2), a (2 d + 3,) vector. One pass of a fit
    (:meth:`pysketch.records.Records.reduce`); the sums of blocks add up.

    Parameters
    ----------
    x : ndarray of shape (k, d)
        The records' inputs (a block of them).
    y : ndarray of shape (k,)
        Their labels.
    first_row : int
        The index of the block's first row (unused: the signature of a reduce pass).
    lo, hi : ndarray of shape (d,)
        The public box of x.
    ylo, yhi : float
        The public range of y.

    Returns
    -------
    numpy.ndarray of shape (2 d + 3,)
        (count, sum u (d), sum u^2 (d), sum v, sum v^2), u and v clipped to [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.scaling import scaling_sums
    >>> x, y = np.array([[0.0, 2.0], [1.0, 4.0]]), np.array([0.0, 10.0])
    >>> scaling_sums(x, y, 0, np.zeros(2), np.array([1.0, 4.0]), 0.0, 10.0).tolist()
    [2.0, 1.0, 1.5, 1.0, 1.25, 1.0, 1.0]
    """
    u = np.clip((x - lo) / (hi - lo), 0.0, 1.0)
    v = np.clip((y - ylo) / (yhi - ylo), 0.0, 1.0)
    return np.concatenate([[float(x.shape[0])], u.sum(0), np.einsum("ij,ij->j", u, u), [v.sum(), v @ v]])


def add_sums(a, b):
    """Merge of two partial `scaling_sums` (into a).

    Parameters
    ----------
    a, b : ndarray of shape (2 d + 3,)
        Two partial sums; `a` is updated in place.

    Returns
    -------
    numpy.ndarray
        `a`, now a + b.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.scaling import add_sums
    >>> add_sums(np.array([2.0, 1.0]), np.array([3.0, 0.5])).tolist()
    [5.0, 1.5]
    """
    a += b
    return a


def release_scaling(total, bounds, target_bounds, epsilon, delta, *, neighbouring="add_remove", accountant=None,
                    insecure_seed=None):
    """The private DataScaling from the merged `scaling_sums` of all the records: one
    Gaussian release of `total` (charged to `accountant`), then post-processing.

    The noisy count is floored at 1; the spreads at what the noise can resolve (module
    docstring); the label clipping range is the released label mean +- LABEL_RADIUS_SPREADS
    (6) released spreads, intersected with `target_bounds`.

    Parameters
    ----------
    total : array_like of shape (2 d + 3,)
        The sums of r(x, y) over every record (:func:`scaling_sums`, merged with
        :func:`add_sums`).
    bounds : (lower, upper)
        The public box of x the sums were taken in.
    target_bounds : (lo, hi)
        The public range of y the sums were taken in.
    epsilon, delta, neighbouring, accountant, insecure_seed
        As in :func:`private_scaling`.

    Returns
    -------
    DataScaling
        x_centre and x_scale in the data's units, the label clipping range, the noisy
        count, and the privacy record (epsilon, delta, neighbouring, sensitivity, sigma,
        mechanism, guarantee 'worst-case', secure_noise).

    Raises
    ------
    ValueError
        For an epsilon out of range or a delta not in (0, 1), `bounds` that are not a
        finite box of d coordinates, an unknown `neighbouring`, or an accountant whose
        budget would be exceeded (pysketch.privacy.BudgetError).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.scaling import release_scaling, scaling_sums
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.uniform(size=(10000, 2)), rng.uniform(size=10000)
    >>> total = scaling_sums(X, y, 0, np.zeros(2), np.ones(2), 0.0, 1.0)
    >>> scaling = release_scaling(total, ([0, 0], [1, 1]), (0, 1), 0.5, 1e-6)
    >>> scaling.x_scale.shape, scaling.privacy["guarantee"]  # (the noise is not seeded)
    ((2,), 'worst-case')
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=True)
    total = np.asarray(total, dtype=np.float64)
    d = (total.shape[0] - 3) // 2
    lo, hi = check_bounds(tuple(bounds), d)
    ylo, yhi = _target_range(target_bounds)  # before the charge, as every check
    sens = scaling_sensitivity(d, neighbouring)
    budget = Budget(epsilon, delta, neighbouring=neighbouring, what="rfm.private_scaling", insecure_seed=insecure_seed)
    mech = budget.part("scaling").mechanism("gaussian", sens)
    budget.charge(accountant)
    noisy = mech.randomise(total)
    sigma = mech.effective_scale_
    count = max(float(noisy[0]), 1.0)
    floor = max(3.0 * sigma / count, MIN_SPREAD ** 2)
    xm, xs = _moments(noisy[1:1 + d], noisy[1 + d:1 + 2 * d], count, floor)
    ym, ys = _moments(noisy[1 + 2 * d], noisy[2 + 2 * d], count, floor)
    width = hi - lo
    x_centre = lo + xm * width
    x_scale = xs * width
    ywidth = yhi - ylo
    ycentre = ylo + float(ym) * ywidth
    radius = LABEL_RADIUS_SPREADS * float(ys) * ywidth
    target_range = (max(ylo, ycentre - radius), min(yhi, ycentre + radius))
    privacy = {"epsilon": epsilon, "delta": delta, "neighbouring": neighbouring, "sensitivity": sens,
               "sigma": sigma, "mechanism": "gaussian (analytic)", "guarantee": "worst-case",
               "secure_noise": mech.secure_noise}
    return DataScaling(x_centre, x_scale, target_range, count, privacy)
