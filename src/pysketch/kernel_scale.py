r"""The kernel scale :math:`\sigma_\kappa` of random Fourier features, estimated from a pilot.

The frequencies of a compressive k-means or GMM sketch are drawn with a kernel scale
:math:`\sigma_\kappa` (the spatial standard deviation of the Gaussian kernel; the
frequencies scale as :math:`1/\sigma_\kappa`). It is "the most critical hyperparameter"
(Chatalic's thesis, 2020, ch. 4): too small and the atom-selection landscape of CL-OMPR
has many spurious local maxima, too large and the clusters are smoothed into one (thesis
sec. 4.1, Fig. 4.1). This module gives the value the estimators use for
``kernel_scale="auto"`` (a scale given by the user always wins there).

Convention. Every scale returned here is the ``sigma`` of a frequency law with the
library's default normalization (:class:`~pysketch.frequencies.GaussianLaw`, or
:class:`~pysketch.frequencies.AdaptedRadiusLaw` /
:class:`~pysketch.frequencies.FoldedGaussianLaw` with ``normalization="dimension"``):
:math:`\mathbf{E}\|\omega\|^2 = d / \sigma^2`, as in the thesis (sec. 4.1.1 and
(4.16) corrected: as printed it divides by E[R^2], not its square root). The only exception is
:math:`\bar\sigma^2` of :func:`estimate_sigma2_sketch`, a *data-domain variance per
coordinate* (Keriven et al.'s :math:`\Sigma = \bar\sigma^2 I`), not a law parameter.

Three estimators:

* :func:`estimate_sigma2_sketch`: the sketch-based estimate of Keriven et al.
  ("Sketching for large-scale learning of mixture models", Inf. & Inference 2017,
  arXiv:1606.02838, sec. 3.3.3; the algorithm of pycle's ``estimate_Sigma``): the
  modulus of the characteristic function of a mixture of isotropic Gaussians of
  variance :math:`\bar\sigma^2` per coordinate decays at most like
  :math:`\exp(-\|\omega\|^2\bar\sigma^2/2)`; a small sketch of a pilot, its
  frequencies sorted by radius and cut into boxes, the largest modulus of each box, and a
  least-squares fit of that envelope give :math:`\bar\sigma^2`. It is a *cluster-scale*
  (intra-cluster) variance: the right scale for GMM, a poor one for k-means as such
  (thesis sec. 4.1.3, Fig. 4.2), which :func:`kernel_scale` maps to a k-means scale.
* :func:`separation_scale`: the separation rule of the thesis (sec. 4.3 and 4.4,
  ":math:`\sigma_\kappa \approx \varepsilon`"), with :math:`\varepsilon` the minimum
  distance between the centers of a k-means solution of the pilot (thesis footnote 14,
  sec. 4.3-4.4), computed by a small Lloyd's algorithm of this module
  (greedy k-means++ seeding, then merge-and-split moves, without which Lloyd's local
  optima at k >= 20 often split a cluster and return a fraction of epsilon).
* :func:`kernel_scale` / :func:`estimate_kernel_scale`: the scale for a task ("kmeans"
  or "gmm") by either method ("auto": separation for k-means, sketch for GMM), with a
  :class:`ScaleEstimate` record of the diagnostics.

Privacy: every function here reads raw records. The *pilot* is a uniform random
subsample of at most ``n0`` rows of the data (or an explicit ``pilot=`` array), and the
returned scale is a deterministic function of it (given the seed): it is **not**
differentially private. In a private pipeline the pilot must be paid for: charge its
release to the privacy budget (or draw it from records that are then excluded from the
private sketch and accounted separately), or give a scale from public knowledge instead.

Scale equivariance: all three estimates satisfy :math:`\sigma(\beta X) = \beta\,\sigma(X)`
for :math:`\beta > 0` with the same seed (thesis sec. 4.2.2): the
pilot is centred and expressed in a power-of-two unit of its own spread before anything
else, and every further step (initial value, frequencies, fit, k-means) is relative.

Data scale: every estimate here works for data whose largest magnitude lies in
:math:`[2^{-504}, 2^{504}]` (about 2e-152 to 5e151) and is refused outside with a
ValueError about the data's magnitude (:func:`check_data_magnitude`): beyond it the
returned kernel scale :math:`\sigma` could not define frequencies (their variance
:math:`1/\sigma^2` over- or underflows float64) and the squares of the records would
overflow or vanish. :func:`data_unit` gives the power-of-two unit in which the estimators'
decoders work for data far from 1 (the data themselves are never divided or copied), and
:func:`check_box_width` the range of box widths the unit-box models (M2M, rfm) divide by.

Data (read by :mod:`pysketch.pilot`, the data access of the estimates): ``X`` is a 2-D array-like ``(n, d)``; an object with a ``shape`` and fancy row
indexing (a NumPy array, a ``numpy.memmap``, an h5py dataset, a dask array; a data frame
through ``.iloc``) is read through ``X[rows]`` with the ``n0`` sampled row indices sorted,
so only the pilot rows are loaded. An iterator of batches cannot be subsampled without being consumed: pass
``pilot=`` (an array of records, e.g. the first batch or a reservoir sample) instead.
"""

import dataclasses
import math
import numbers
import warnings

import numpy as np
from scipy import optimize

from . import cluster
from ._checks import check_int as _check_int
from ._checks import check_size
# the checks of the data's scale live in _checks (every layer uses them); kept importable here
from ._checks import (COMFORT_EXPONENT, MAX_DATA_EXPONENT, MIN_WIDTH_EXPONENT, check_box_width,  # noqa: F401
                      check_data_magnitude, data_unit)
from ._random import as_generator
from .features import make_feature_map
from .pilot import DEFAULT_PILOT_SIZE, draw_pilot, sample_pilot
from .frequencies import (
    ADAPTED_RADIUS_SECOND_MOMENT,
    AdaptedRadiusLaw,
    FoldedGaussianLaw,
    GaussianLaw,
)

__all__ = [
    "DEFAULT_PILOT_SIZE",
    "FREQUENCIES_PER_BOX",
    "GMM_SKETCH_FACTOR",
    "KMEANS_SEPARATION_FACTOR",
    "KMEANS_SKETCH_FACTOR",
    "MIN_FREQUENCIES_PER_BOX",
    "ScaleEstimate",
    "ScaleWarning",
    "MAX_DATA_EXPONENT",
    "check_box_width",
    "check_data_magnitude",
    "data_unit",
    "draw_pilot",
    "estimate_kernel_scale",
    "estimate_sigma2_sketch",
    "kernel_scale",
    "separation_scale",
]


#: Default frequencies per box of :func:`estimate_sigma2_sketch`: ``m0 = 25 * n_boxes``
#: (500 for the default 20 boxes). The largest modulus of a box estimates the envelope
#: better with more frequencies per box (on a mixture of k clusters the Dirac part of
#: the characteristic function has modulus ~ k^(-1/2) at a typical frequency and only
#: the maximum of a box approaches 1): measured on 10 unit-variance clusters, the
#: estimate of sigma_intra^2 = 1 falls from ~2.2 at 5 per box to ~1.66 at 25 and ~1.5 at
#: 50, while the cost grows linearly (n0 * m0 * d per iteration).
FREQUENCIES_PER_BOX = 25

#: Fewer frequencies per box than this gives a :class:`ScaleWarning` (the fit then
#: overfits box maxima that are mostly noise and Dirac-part fluctuations; pycle warns
#: below 2 per box and fitted Gaussian, a bound we found far too lax: at 2 per box the
#: estimate on a 10-cluster mixture is ~2.8x the intra-cluster variance).
MIN_FREQUENCIES_PER_BOX = 10

#: k-means from the sketch estimate: ``sigma_kappa = KMEANS_SKETCH_FACTOR * sqrt(d) *
#: sigma_bar`` (derivation in :func:`estimate_kernel_scale`). sqrt(d) * sigma_bar is the
#: RMS radius of a cluster; the factor is the kernel scale in units of that radius.
#: Calibration on model (4.5) mixtures, k = 10, d = 2..128 (centers N(0, 4 I), and
#: s = 2.5; 20 draws each): the separation of the k-means solution is 1.84 radii (median
#: of the 12 settings; 0.8 at d <= 5 on the overlapping family, 2.2-2.5 at d >= 32 on
#: the s = 2.5 one), the thesis's sigma_kappa ~ epsilon (sec. 4.3). Compressive k-means
#: with this library's CL-OMPR (Gaussian frequencies, m = 10 k d, d = 5..64, 8 draws)
#: succeeded most often (RSE < 1.1 in 52 of 64 runs) with 1.4, i.e. ~0.75 epsilon
#: (1.2: 41, 1.6: 49, 1.8: 38, 2.1: 25 of 64). It does not follow k: at k = 20 the
#: separation is ~1.26 radii and 1.4 fails in half the runs; the "separation" method
#: does follow k.
KMEANS_SKETCH_FACTOR = 1.4

#: k-means from the separation: ``sigma_kappa = KMEANS_SEPARATION_FACTOR * epsilon``.
#: The thesis's rule sigma_kappa ~ epsilon (sec. 4.3, 4.4) would be 1.0. In the decoder
#: runs above 0.8 succeeded more often (RSE < 1.1 in 57 of 64 runs, 1.0: 48 of 64; and
#: 16 of 18 vs 13 of 18 with k = 5 and 20, where the sketch rule with 1.4 had 9 of 18).
#: Validated with CompressiveKMeans's defaults (benchmarks/quality/kmeans_quality.py, n = 1e5,
#: k = 10, m = 10kd, 10 seeds; median / 90th percentile RSE, factor 0.8 vs 1.0):
#: centers N(0, 4 I) d = 10: 1.011 / 1.023 vs 1.015 / 1.046; d = 64: 1.0011 / 1.0012 vs
#: 1.012 / 1.023; thesis model s = 2.5 d = 10: 1.0044 / 1.0064 vs 1.0065 / 1.035;
#: d = 64: 1.0007 / 1.0008. With k = 30, d = 128 (m = 6kd) 1.0 failed where 0.8 did not.
KMEANS_SEPARATION_FACTOR = 0.8

#: GMM from the sketch estimate: Keriven et al. draw the frequencies as
#: ``omega = R / sigma_bar * phi`` (adapted radius without the thesis normalization, so
#: E||omega||^2 = E[R^2] / sigma_bar^2), which is ``AdaptedRadiusLaw(sigma)`` with the
#: default normalization and ``sigma = sqrt(d / E[R^2]) * sigma_bar``: the factor is
#: 1 / sqrt(E[R^2]) ~ 0.659 (E[R^2] ~ 2.30392, thesis (4.15)).
GMM_SKETCH_FACTOR = 1.0 / math.sqrt(ADAPTED_RADIUS_SECOND_MOMENT)

# Keriven et al. (arXiv:1606.02838, sec. 3.3.3) / pycle's ranges: initial sigma_bar^2 uniform
# in [0.3, 1.6] on standardized data -- here relative to the per-coordinate variance of
# the centred pilot; each fit bounded to [5e-4, 2e3] times the current value; the
# amplitude of the envelope in [1e-5, 1].
_INITIAL_RANGE = (0.3, 1.6)
_FIT_RANGE = (5e-4, 2e3)
_AMPLITUDE_RANGE = (1e-5, 1.0)
_GRID_POINTS = 241  # log-spaced starting grid over _FIT_RANGE (25 points per decade)

_LAWS = ("adapted_radius", "gaussian", "folded_gaussian")
_METHODS = ("sketch", "separation", "auto")
_TASKS = ("kmeans", "gmm")


class ScaleWarning(RuntimeWarning):
    """The kernel-scale estimate may be unreliable (too few frequencies per box, a fit at
    the bound of its range).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from pysketch.kernel_scale import ScaleWarning, estimate_sigma2_sketch
    >>> X = np.random.default_rng(0).normal(size=(500, 3))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = estimate_sigma2_sketch(X, m0=40, random_state=0)  # 2 frequencies per box
    >>> caught[0].category is ScaleWarning
    True
    """


@dataclasses.dataclass(frozen=True)
class ScaleEstimate:
    """A kernel scale and how it was obtained (returned by :func:`estimate_kernel_scale`).

    A frozen record: each parameter is also its attribute of the same name.

    Parameters
    ----------
    sigma : float
        The kernel scale to use: the ``sigma`` of a frequency law with the default
        normalization (E||omega||^2 = d / sigma^2).
    method : str
        "sketch" or "separation".
    task : str
        "kmeans" or "gmm".
    sigma2_bar : float or None
        Keriven et al.'s cluster-scale variance per coordinate (method "sketch").
    separation : float or None
        Minimum distance between the k-means centers of the pilot (method "separation").
    factor : float
        ``sigma = factor * sqrt(d) * sqrt(sigma2_bar)`` (method "sketch") or
        ``sigma = factor * separation`` (method "separation").
    pilot_size : int
        Number of raw records read (the pilot): what a privacy accountant must charge.
    n_features : int
        The data dimension d.
    history : tuple of float
        Method "sketch": sigma_bar^2 before the first iteration and after each one.
        Method "separation": the k-means inertia (mean squared distance) of each run.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 0.5, (200, 2)), rng.normal(0, 0.5, (200, 2)) + [10, 0]])
    >>> from pysketch.kernel_scale import estimate_kernel_scale
    >>> est = estimate_kernel_scale(X, 2, method="separation", random_state=0)
    >>> est.method, est.task, est.pilot_size, est.factor, round(est.separation)
    ('separation', 'kmeans', 400, 0.8, 10)
    """

    sigma: float
    method: str
    task: str
    sigma2_bar: object
    separation: object
    factor: float
    pilot_size: int
    n_features: int
    history: tuple = ()


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------




def _check_choice(value, name, allowed):
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
    return value


def _standardize(P, name):
    """Centre the pilot and express it in a power-of-two unit close to its RMS spread.

    Returns (Z, unit, var): Z = (P - mean) / unit, with unit a power of two (exact: scaling
    the data by a power of two changes nothing but `unit`, and any other factor only
    rounding), and var in [1/4, 1), the mean per-coordinate variance of Z (sigma_X^2 of
    thesis (4.2) in units of unit^2). P is not modified.
    """
    amax = float(np.max(np.abs(P)))
    if amax == 0.0:
        raise ValueError(f"{name} is constant on the pilot records (all zero): the kernel scale is undefined")
    if amax < 1.0:  # tiny data (subnormals) lose their digits: the magnitude is the cause, not constancy
        check_data_magnitude(amax, f"{name} (its pilot records)")
    _, e0 = math.frexp(amax)
    Q = P * math.ldexp(1.0, -e0)  # |Q| < 1: no overflow below, whatever the data scale
    mu = Q.mean(axis=0)
    Q -= mu
    spread = float(np.max(np.abs(Q)))
    # Constant data: zero spread, or a spread at the rounding level of the values.
    if not spread > 64.0 * np.finfo(np.float64).eps * float(np.max(np.abs(mu))):
        raise ValueError(
            f"{name} is constant on the pilot records (all {P.shape[0]} rows are equal up to "
            "rounding): the kernel scale is undefined"
        )
    check_data_magnitude(amax, f"{name} (its pilot records)")
    var = float(np.mean(np.einsum("ij,ij->i", Q, Q))) / Q.shape[1]
    _, e1 = math.frexp(math.sqrt(var))  # sqrt(var) = f * 2^e1, f in [1/2, 1)
    Q *= math.ldexp(1.0, -e1)
    return Q, math.ldexp(1.0, e0 + e1), var * math.ldexp(1.0, -2 * e1)


def _prepare(X, n0, rng, pilot):
    """Draw the pilot and standardize it: (Z, unit, var, name)."""
    n0 = _check_int(n0, "n0")
    P = sample_pilot(X, n0, rng, pilot)
    name = "X" if pilot is None else "pilot"
    if P.shape[0] < 2:
        raise ValueError(f"{name} must have at least 2 records for a scale estimate; got {P.shape[0]}")
    Z, unit, var = _standardize(P, name)
    return Z, unit, var, name


# ---------------------------------------------------------------------------------------
# Keriven et al.'s sketch-based estimate of sigma_bar^2
# ---------------------------------------------------------------------------------------


def _keriven_law(law, sigma_bar, d):
    """Frequencies "with scale sigma_bar" in Keriven et al.'s sense (their sec. 3.3.1):
    omega = R phi / sigma_bar with a d-free radius law, so that the radii do not grow with
    d and the box maxima span the envelope exp(-R^2 / 2) from 1 down to ~0 in every
    dimension. Adapted radius and folded Gaussian: ``normalization="none"``. Gaussian:
    N(0, I / (d sigma_bar^2)), i.e. R = chi_d / sqrt(d) (E R^2 = 1): the d-free form of the
    Gaussian law (N(0, I / sigma_bar^2) would put every radius near sqrt(d) / sigma_bar,
    where the envelope is exp(-d/2): pure noise beyond d ~ 10)."""
    if law == "adapted_radius":
        return AdaptedRadiusLaw(sigma_bar, normalization="none")
    if law == "folded_gaussian":
        return FoldedGaussianLaw(sigma_bar, normalization="none")
    return GaussianLaw(sigma_bar * math.sqrt(d))


def _box_maxima(radii, modulus, n_boxes):
    """Sort the frequencies by radius, cut them into `n_boxes` groups of equal size (to
    one), and return the radius and modulus of the largest modulus of each group."""
    order = np.argsort(radii, kind="stable")
    R = np.empty(n_boxes)
    z = np.empty(n_boxes)
    for b, box in enumerate(np.array_split(order, n_boxes)):
        j = box[np.argmax(modulus[box])]
        R[b] = radii[j]
        z[b] = modulus[j]
    return R, z


def _fit_envelope(R, z, sigma2):
    r"""Bounded least squares for Keriven et al.'s envelope (their sec. 3.3.3; pycle's fit
    with one Gaussian): minimize over (w, s2)

    .. math:: \sum_b \big(z_b - w \exp(-R_b^2 s_2 / 2)\big)^2,
       \quad w \in [10^{-5}, 1],\ s_2 \in [5\cdot10^{-4}, 2\cdot10^3]\,\sigma^2_{\mathrm{current}}.

    Parametrized by t = s2 / sigma2 (log t for the solver). A log-spaced grid over the
    whole range of t, with the best w in closed form for each t (a 1-D convex quadratic,
    clipped to its interval), gives the start; scipy's trust-region reflective least
    squares refines it. Returns (s2, at_bound).
    """
    u = 0.5 * R * R * sigma2
    t_lo, t_hi = _FIT_RANGE
    w_lo, w_hi = _AMPLITUDE_RANGE
    grid = np.geomspace(t_lo, t_hi, _GRID_POINTS)
    E = np.exp(-np.outer(grid, u))  # (grid, boxes)
    ee = np.einsum("gb,gb->g", E, E)
    ez = E @ z
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.where(ee > 0.0, ez / ee, w_hi)
    w = np.clip(w, w_lo, w_hi)
    cost = np.sum((w[:, None] * E - z) ** 2, axis=1)
    g = int(np.argmin(cost))

    def residuals(p):
        return p[0] * np.exp(-u * math.exp(p[1])) - z

    def jacobian(p):
        e = np.exp(-u * math.exp(p[1]))
        return np.column_stack([e, -p[0] * u * math.exp(p[1]) * e])

    lower = [w_lo, math.log(t_lo)]
    upper = [w_hi, math.log(t_hi)]
    x0 = [float(w[g]), math.log(grid[g])]
    res = optimize.least_squares(residuals, x0, jac=jacobian, bounds=(lower, upper), method="trf")
    best = res.x if 2.0 * res.cost <= cost[g] else np.array(x0)
    log_t = float(best[1])
    at_bound = min(log_t - lower[1], upper[1] - log_t) < 1e-3
    return sigma2 * math.exp(log_t), at_bound


def _sketch_sigma2(Z, var, m0, n_iter, n_boxes, law, rng):
    """Keriven et al.'s iterations on a standardized pilot Z; returns (sigma2, history,
    at_bound) in the units of Z."""
    d = Z.shape[1]
    # a dense (d, m0) operator, its radii, the sketch and the boxes' maxima
    check_size(m0, "m0", nbytes=lambda v: v * (d * 24 + 64), what=f"for frequencies of d = {d} coordinates")
    # Initial value: uniform in [0.3, 1.6] times the per-coordinate variance of the pilot
    # (pycle draws U[0.3, 1.6] for standardized data, i.e. var = 1).
    sigma2 = float(rng.uniform(*_INITIAL_RANGE)) * var
    history = [sigma2]
    at_bound = False
    for _ in range(n_iter):
        fmap = make_feature_map(
            d, m0, "complex", operator="dense", law=_keriven_law(law, math.sqrt(sigma2), d),
            random_state=rng, dtype=np.float64,
        )
        modulus = np.abs(fmap.sketch(Z).mean())
        radii = np.linalg.norm(fmap.operator.omega, axis=0)
        R, z = _box_maxima(radii, modulus, n_boxes)
        sigma2, at_bound = _fit_envelope(R, z, sigma2)
        history.append(sigma2)
    return sigma2, history, at_bound


def _resolve_m0(m0, n_boxes):
    if m0 is None:
        return FREQUENCIES_PER_BOX * n_boxes
    m0 = _check_int(m0, "m0")
    if m0 < n_boxes:
        raise ValueError(f"m0 must be >= n_boxes={n_boxes} (at least one frequency per box); got m0={m0}")
    if m0 < MIN_FREQUENCIES_PER_BOX * n_boxes:
        warnings.warn(
            f"m0={m0} gives {m0 / n_boxes:.1f} frequencies per box (< {MIN_FREQUENCIES_PER_BOX}): "
            "the envelope fit overfits box maxima of few frequencies (overfitting regime, "
            "Keriven et al. sec. 3.3.3); the estimate of sigma_bar^2 is biased upwards on "
            f"mixtures. Use m0 >= {MIN_FREQUENCIES_PER_BOX * n_boxes}.",
            ScaleWarning,
            stacklevel=4,
        )
    return m0


def _check_sketch_params(m0, n_iter, n_boxes, law):
    n_iter = _check_int(n_iter, "n_iter")
    n_boxes = _check_int(n_boxes, "n_boxes", minimum=2)
    law = _check_choice(law, "law", _LAWS)
    m0 = _resolve_m0(m0, n_boxes)
    return m0, n_iter, n_boxes, law


def _sketch_on_pilot(Z, unit, var, m0, n_iter, n_boxes, law, rng):
    """sigma_bar^2 (data units) and its history, from a standardized pilot."""
    sigma2, history, at_bound = _sketch_sigma2(Z, var, m0, n_iter, n_boxes, law, rng)
    if at_bound:
        warnings.warn(
            "the last envelope fit of estimate_sigma2_sketch stopped at the bound of its range "
            f"([{_FIT_RANGE[0]}, {_FIT_RANGE[1]}] times the previous value): sigma_bar^2 has not "
            "converged; raise n_iter or check the data (heavy outliers, near-duplicate records)",
            ScaleWarning,
            stacklevel=3,
        )
    unit2 = unit * unit
    return sigma2 * unit2, tuple(h * unit2 for h in history)


def estimate_sigma2_sketch(
    X,
    *,
    m0=None,
    n0=DEFAULT_PILOT_SIZE,
    n_iter=5,
    n_boxes=20,
    law="adapted_radius",
    pilot=None,
    random_state=None,
):
    r"""Keriven et al.'s sketch-based estimate of a cluster-scale variance :math:`\bar\sigma^2`.

    Keriven, Bourrier, Gribonval, Pérez, "Sketching for large-scale learning of mixture
    models" (Inf. & Inference 2017; arXiv:1606.02838, sec. 3.3.3), the algorithm of pycle's
    ``estimate_Sigma``. For a mixture of isotropic
    Gaussians of variance :math:`\bar\sigma^2` per coordinate, the characteristic function
    has modulus :math:`|\psi(\omega)| \le \exp(-\|\omega\|^2\bar\sigma^2/2)`, with equality
    at the frequencies where the centers are in phase. So:

    1. draw a pilot of ``n0`` records (**raw data**: charge it to the privacy budget),
       centre it; start from :math:`\bar\sigma^2 = u\,\sigma_X^2`, :math:`u \sim
       \mathcal{U}[0.3, 1.6]` (pycle's range for standardized data, here relative to
       :math:`\sigma_X^2 = \frac{1}{nd}\sum_i\|x_i - \mu\|^2`, thesis (4.2), the
       per-coordinate variance of the centred pilot, so the start is data-scale aware);
    2. ``n_iter`` times: draw ``m0`` frequencies :math:`\omega = R\,\varphi/\bar\sigma`
       (``law``'s radius :math:`R`, uniform direction :math:`\varphi`), sketch the pilot,
       sort the frequencies by radius :math:`\|\omega_j\|`, cut them into ``n_boxes``
       groups of equal size, keep the frequency of largest :math:`|z_j|` in each, and fit
       :math:`|z| \approx w\exp(-\|\omega\|^2 s/2)` by bounded least squares (scipy),
       :math:`w \in [10^{-5}, 1]`, :math:`s \in [5\cdot10^{-4}, 2\cdot10^3]\,\bar\sigma^2`
       (pycle's bounds); set :math:`\bar\sigma^2 = s`.

    Accuracy (measured; see tests/test_scale.py): on one isotropic Gaussian
    :math:`\mathcal{N}(0, s^2 I)` the estimate is 3-6% below :math:`s^2` for every d
    (the box maxima pick positive noise, of order :math:`\sqrt{\log(m_0/c)/n_0}`). On a
    mixture of k separated clusters it *overestimates* the intra-cluster scale: only
    frequencies where the k centers are in phase reach the envelope, and a box of 25
    frequencies rarely has one. Measured :math:`\bar\sigma/\sigma_{\mathrm{intra}}`:
    1.0-1.3 for k = 5, about 1.3 for k = 10 (d = 5..128), 1.7 for k = 20 and 2.5 for
    k = 40 (d = 10); less with more frequencies per box.

    Parameters
    ----------
    X : array-like of shape (n, d), memmap, or None
        The data (see :func:`draw_pilot`; only the pilot rows are read).
    m0 : int, optional
        Number of frequencies of the small sketch. Default ``25 * n_boxes`` (500); fewer
        than ``10 * n_boxes`` gives a :class:`ScaleWarning` (overfitting), fewer than
        ``n_boxes`` a ValueError.
    n0 : int
        Pilot size (default 5000; all records if there are fewer).
    n_iter : int
        Number of iterations (default 5, as pycle).
    n_boxes : int
        Number of radius boxes, >= 2 (default 20, as pycle's ``c``).
    law : {"adapted_radius", "gaussian", "folded_gaussian"}
        Radius law of the small sketch, :math:`\omega = R\varphi/\bar\sigma` with a
        d-free unit radius :math:`R`, so that the radii do not grow with d: adapted radius
        (4.15) (Keriven et al.'s choice, default), folded Gaussian :math:`|\mathcal
        N(0,1)|`, or Gaussian :math:`\chi_d/\sqrt d`. The Gaussian radii concentrate
        around 1 as d grows (spread ~ :math:`1/\sqrt{2d}`), leaving too narrow a range
        of radii to fit a decay: it is unstable beyond d ~ 100.
    pilot : array-like of shape (p, d), optional
        Explicit records instead of X (see :func:`draw_pilot`).
    random_state : None, int, SeedSequence, Generator or RandomState
        Draws the pilot rows, the initial value and the frequencies, in this order.

    Returns
    -------
    float
        :math:`\bar\sigma^2`, a variance per coordinate in squared data units. It scales
        as :math:`\beta^2` when the data is multiplied by :math:`\beta`.

    Raises
    ------
    ValueError
        Bad shapes or parameters, NaN or infinity in the pilot, constant pilot (the
        scale is undefined), fewer than 2 records.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.kernel_scale import estimate_sigma2_sketch
    >>> X = np.random.default_rng(1).normal(0.0, 2.0, size=(2000, 3))  # variance 4
    >>> round(estimate_sigma2_sketch(X, random_state=0))
    4
    """
    m0, n_iter, n_boxes, law = _check_sketch_params(m0, n_iter, n_boxes, law)
    rng = as_generator(random_state)
    Z, unit, var, _ = _prepare(X, n0, rng, pilot)
    return _sketch_on_pilot(Z, unit, var, m0, n_iter, n_boxes, law, rng)[0]


# ---------------------------------------------------------------------------------------
# Separation: minimum distance between k-means centers of the pilot
# ---------------------------------------------------------------------------------------


class _Lloyd:
    """Seeding and Lloyd's iterations of :mod:`pysketch.metrics` (greedy k-means++, the
    k-means++ baseline of the relative SSE) on a standardized pilot, with the labels and
    distances that the merge-and-split moves need."""

    def __init__(self, Z, max_iter, tol):
        n, d = Z.shape
        self.Z = Z
        self.max_iter = max_iter
        self.tol = tol
        self.shift = Z.mean(axis=0)
        self.rows = cluster.rows_per_chunk(None, 2, d)
        self.labels = np.empty(n, dtype=np.int32)
        self.prev = np.empty(n, dtype=np.int32)
        self.dist = np.empty(n)

    def seed(self, Z, k, rng):
        """Greedy k-means++ seeds of the rows of Z (the pilot or a part of it)."""
        d2 = np.empty(Z.shape[0])
        trials = cluster.local_trials(k, None)
        return cluster.kmeans_pp_seed(Z, k, self.shift, rng, self.rows, d2, trials)

    def run(self, centers):
        """Lloyd from `centers`; returns (centers, inertia per record, labels, squared
        distances) of the final assignment."""
        Z = self.Z
        centers, _, _ = cluster.lloyd(
            Z, centers, self.shift, self.max_iter, self.tol, self.rows, self.labels, self.prev, self.dist
        )
        labels = np.empty(Z.shape[0], dtype=np.int32)
        dist = np.empty(Z.shape[0])
        total, _ = cluster.scan(Z, centers, self.shift, self.rows, labels, dist)
        return centers, total / Z.shape[0], labels, dist


def _split_merge(lloyd, run, rng):
    """Improve a Lloyd solution by merge-and-split moves while the inertia decreases.

    Lloyd's local optima of clustered data typically split one true cluster between two
    centers and cover two others with one; the minimum center distance of such a
    solution is a fraction of the separation. A move merges the pair of clusters whose
    merge costs the least inertia (Ward's cost n_i n_j / (n_i + n_j) ||c_i - c_j||^2),
    splits the cluster of largest within-cluster sum of squares among the others with a
    2-means++ seeding, and runs Lloyd again; it is kept if the inertia decreases. At most
    k moves."""
    centers, inertia, labels, dist = run
    k = centers.shape[0]
    if k < 3:
        return run
    for _ in range(k):
        counts = np.bincount(labels, minlength=k).astype(np.float64)
        sse = np.bincount(labels, weights=dist, minlength=k)
        G = centers @ centers.T
        c2 = np.diag(G)
        with np.errstate(divide="ignore", invalid="ignore"):
            ward = (counts[:, None] * counts[None, :]) / (counts[:, None] + counts[None, :])
        ward = np.nan_to_num(ward) * np.maximum(c2[:, None] + c2[None, :] - 2.0 * G, 0.0)
        np.fill_diagonal(ward, np.inf)
        i, j = np.unravel_index(int(np.argmin(ward)), ward.shape)
        sse[[i, j]] = -1.0
        split = int(np.argmax(sse))
        members = np.flatnonzero(labels == split)
        if members.size < 2 or sse[split] <= 0.0:
            break
        trial = centers.copy()
        trial[i] = (counts[i] * centers[i] + counts[j] * centers[j]) / max(counts[i] + counts[j], 1.0)
        pair = lloyd.seed(lloyd.Z[members], 2, rng)
        trial[j], trial[split] = pair[0], pair[1]
        candidate = lloyd.run(trial)
        if not candidate[1] < inertia * (1.0 - 1e-9):
            break
        centers, inertia, labels, dist = candidate
    return centers, inertia, labels, dist


def _kmeans(Z, k, rng, n_init=3, max_iter=300):
    """Best of `n_init` runs (greedy k-means++ seeding, Lloyd, then merge-and-split moves),
    by inertia. Z is standardized (per-coordinate variance in [1/4, 1)), so the tolerance
    is absolute: Lloyd stops when the squared center shift summed over centers is <= 1e-6
    (scikit-learn's rule is 1e-4 times the mean per-coordinate variance; 100x stricter
    here, still far below any separation worth measuring)."""
    lloyd = _Lloyd(np.ascontiguousarray(Z, dtype=np.float64), max_iter, 1e-6)
    best, inertias = None, []
    for _ in range(n_init):
        run = lloyd.run(lloyd.seed(lloyd.Z, k, rng))
        centers, inertia, _, _ = _split_merge(lloyd, run, rng)
        inertias.append(inertia)
        if best is None or inertia < best[1]:
            best = (centers, inertia)
    return best[0], inertias


def _min_center_distance(C):
    """Minimum Euclidean distance between two distinct rows of C (k >= 2)."""
    G = C @ C.T
    sq = np.diag(G).copy()
    D2 = sq[:, None] + sq[None, :] - 2.0 * G
    np.fill_diagonal(D2, np.inf)
    i, j = np.unravel_index(int(np.argmin(D2)), D2.shape)
    return float(np.linalg.norm(C[i] - C[j]))  # recomputed exactly for the closest pair


def _check_n_clusters(n_clusters, minimum=1):
    return _check_int(n_clusters, "n_clusters", minimum=minimum)


def _check_separation_clusters(n_clusters):
    k = _check_n_clusters(n_clusters)
    if k < 2:
        raise ValueError(
            "n_clusters must be >= 2 for the separation (a distance between two centers); "
            f"got {k}"
        )
    return k


def _check_pilot_clusters(k, Z, name):
    if k > Z.shape[0]:
        raise ValueError(
            f"n_clusters={k} is larger than the number of pilot records of {name} "
            f"({Z.shape[0]}); use fewer clusters or a larger pilot"
        )


def _separation_on_pilot(Z, unit, k, rng, n_init, name):
    """(epsilon in data units, inertias) from a standardized pilot."""
    centers, inertias = _kmeans(Z, k, rng, n_init=n_init)
    eps = _min_center_distance(centers)
    if not eps > 0.0:
        raise ValueError(
            f"{name} has fewer than n_clusters={k} distinct records in the pilot: two k-means "
            "centers coincide and the separation is 0"
        )
    return eps * unit, tuple(i * unit * unit for i in inertias)


def separation_scale(X, n_clusters, *, n0=DEFAULT_PILOT_SIZE, n_init=3, pilot=None, random_state=None):
    r"""The separation :math:`\varepsilon` of the data: the minimum distance between the
    centers of a k-means solution of a pilot.

    The thesis recommends :math:`\sigma_\kappa \approx \varepsilon` for compressive k-means
    (sec. 4.3 first line and 4.4; Figs. 4.7 and 4.8: "only the squared separation
    :math:`\varepsilon^2` matches in low dimension the observations"), with
    :math:`\varepsilon = \min_{i\ne j}\|c_i - c_j\|` (4.1) and, without ground truth, the
    centers of an optimal k-means solution (footnote 14). This runs Lloyd's algorithm with
    greedy k-means++ seeding, then merge-and-split moves while they lower the inertia,
    best of `n_init` runs (3, as the thesis's reference k-means, footnote 10), on a pilot
    of at most `n0` records. Measured on well-separated mixtures (k = 4..40, d = 2..32):
    within 5% of the true minimum center distance.

    **Reads raw records** (the pilot): it is not private; charge it to the privacy budget.
    It costs O(n_init * iterations * n0 * k * d) and is meant for the small pilot only.

    Parameters
    ----------
    X : array-like of shape (n, d), memmap, or None
        The data (see :func:`draw_pilot`).
    n_clusters : int
        Number of clusters k, 2 <= k <= the pilot size.
    n0 : int
        Pilot size (default 5000).
    n_init : int
        Number of k-means++ / Lloyd runs; the lowest inertia wins.
    pilot : array-like of shape (p, d), optional
        Explicit records instead of X.
    random_state : None, int, SeedSequence, Generator or RandomState
        Draws the pilot rows, then the seedings.

    Returns
    -------
    float
        :math:`\varepsilon`, in data units (scales as :math:`\beta` with the data).

    Raises
    ------
    ValueError
        k < 2, k larger than the pilot, bad shapes, NaN or infinity, constant data or
        fewer than k distinct records (the separation is 0).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 0.5, (200, 2)), rng.normal(0, 0.5, (200, 2)) + [10, 0]])
    >>> from pysketch.kernel_scale import separation_scale
    >>> round(separation_scale(X, 2, random_state=0))  # the centres are 10 apart
    10
    """
    k = _check_separation_clusters(n_clusters)
    n_init = _check_int(n_init, "n_init")
    rng = as_generator(random_state)
    Z, unit, _, name = _prepare(X, n0, rng, pilot)
    _check_pilot_clusters(k, Z, name)
    return _separation_on_pilot(Z, unit, k, rng, n_init, name)[0]


# ---------------------------------------------------------------------------------------
# The scale the estimators use
# ---------------------------------------------------------------------------------------


def estimate_kernel_scale(
    X,
    n_clusters,
    *,
    method="sketch",
    task="kmeans",
    pilot_size=DEFAULT_PILOT_SIZE,
    pilot=None,
    random_state=None,
):
    r"""The kernel scale for compressive k-means or GMM, with its diagnostics.

    Method ``"sketch"`` (default): :math:`\bar\sigma^2` from
    :func:`estimate_sigma2_sketch` (default parameters), mapped to the task by
    :math:`\sigma_\kappa = f_{\mathrm{task}}\sqrt{d}\,\bar\sigma`:

    * ``"gmm"``: Keriven et al.'s choice, frequencies :math:`R\varphi/\bar\sigma` with
      the adapted radius :math:`R` ("the kernel variance is the cluster variance",
      :math:`\sigma_\kappa^2 = \bar\sigma^2` in their unnormalized convention). In the
      library's convention (E||omega||^2 = d / sigma^2) that is
      :math:`f = 1/\sqrt{\mathbf E[R^2]} \approx 0.659` (:data:`GMM_SKETCH_FACTOR`).
    * ``"kmeans"``: the intra-cluster scale is a poor kernel scale for k-means (thesis
      sec. 4.1.3, Fig. 4.2); the optimum is near the separation :math:`\varepsilon`
      (sec. 4.3). :math:`\sqrt d\,\bar\sigma` is the RMS radius of a cluster, and
      separated clusters in dimension d are apart by a multiple of it: under model (4.5)
      :math:`\varepsilon \to \sqrt{2}\rho\sqrt{d}\,\sigma_{\mathrm{intra}}` as d grows.
      This is also the form that keeps the sketch informative in every dimension: with
      :math:`\sigma_\kappa = f\sqrt d\,\bar\sigma` a typical frequency has
      :math:`\|\omega\|^2 \approx d/\sigma_\kappa^2` and the intra-cluster envelope
      :math:`\exp(-\|\omega\|^2\bar\sigma^2/2) = \exp(-1/(2f^2))` does not vanish with d
      (a d-free factor on :math:`\bar\sigma` would leave only noise, :math:`e^{-d/2f^2}`).
      :math:`f` = :data:`KMEANS_SKETCH_FACTOR` = 1.4: on model (4.5) mixtures with
      k = 10 the separation is ~1.8 radii (median over d = 2..128) and compressive
      k-means succeeded most often at ~0.75 of it. An assumption on the separation,
      blind to k (see the constant's notes).

    Method ``"separation"``: :math:`\sigma_\kappa = \varepsilon` from
    :func:`separation_scale` (k >= 2), times :data:`KMEANS_SEPARATION_FACTOR` (0.8;
    the thesis's rule sigma ~ epsilon would be 1.0, validated worse here) for k-means.

    Method ``"auto"``: "separation" for k-means with k >= 2 (it follows k and the
    actual separation; the sketch mapping assumes a typical separation), "sketch"
    otherwise (GMM, or a single cluster). The record says which one ran.

    **Reads raw records** (a pilot of ``pilot_size`` rows, recorded in the result): not
    private, charge it to the privacy budget. A scale given by the user needs none of this.

    Parameters
    ----------
    X : array-like of shape (n, d), memmap, or None
        The data (see :func:`draw_pilot`).
    n_clusters : int
        Number of clusters / components k >= 1 (>= 2 for method "separation"), at most
        the pilot size.
    method : {"sketch", "separation", "auto"}
    task : {"kmeans", "gmm"}
    pilot_size : int
        ``n0`` of the pilot (default 5000).
    pilot : array-like of shape (p, d), optional
        Explicit records instead of X (required when X is an iterator of batches).
    random_state : None, int, SeedSequence, Generator or RandomState

    Returns
    -------
    ScaleEstimate

    Raises
    ------
    ValueError
        If `method` or `task` is not one of the names above, `n_clusters` is below 1 (2 for
        "separation") or larger than the pilot, or the pilot is not 2-D, has fewer than 2
        records, holds NaN or infinity, is constant, is outside the supported range of
        magnitudes, or has fewer than k distinct records ("separation").
    TypeError
        If X is an iterator of batches and no `pilot` is given, or holds non-real values.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 0.5, (200, 2)), rng.normal(0, 0.5, (200, 2)) + [10, 0]])
    >>> from pysketch.kernel_scale import estimate_kernel_scale
    >>> est = estimate_kernel_scale(X, 2, method="auto", random_state=0)
    >>> est.method, round(est.sigma)  # 0.8 times the separation, 10
    ('separation', 8)
    """
    method = _check_choice(method, "method", _METHODS)
    task = _check_choice(task, "task", _TASKS)
    if method == "auto":
        k = _check_n_clusters(n_clusters)
        method = "separation" if task == "kmeans" and k >= 2 else "sketch"
    if method == "separation":
        k = _check_separation_clusters(n_clusters)
    else:
        k = _check_n_clusters(n_clusters)
        params = _check_sketch_params(None, 5, 20, "adapted_radius")
    rng = as_generator(random_state)
    Z, unit, var, name = _prepare(X, pilot_size, rng, pilot)
    _check_pilot_clusters(k, Z, name)
    p, d = Z.shape
    if method == "separation":
        eps, inertias = _separation_on_pilot(Z, unit, k, rng, 3, name)
        factor = KMEANS_SEPARATION_FACTOR if task == "kmeans" else 1.0
        return ScaleEstimate(
            sigma=factor * eps, method=method, task=task, sigma2_bar=None, separation=eps, factor=factor,
            pilot_size=p, n_features=d, history=inertias,
        )
    sigma2, history = _sketch_on_pilot(Z, unit, var, *params, rng)
    factor = KMEANS_SKETCH_FACTOR if task == "kmeans" else GMM_SKETCH_FACTOR
    return ScaleEstimate(
        sigma=factor * math.sqrt(d * sigma2), method=method, task=task, sigma2_bar=sigma2,
        separation=None, factor=factor, pilot_size=p, n_features=d, history=history,
    )


def kernel_scale(
    X,
    n_clusters,
    *,
    method="auto",
    task="kmeans",
    pilot_size=DEFAULT_PILOT_SIZE,
    pilot=None,
    random_state=None,
):
    """The kernel scale the estimators use for ``kernel_scale="auto"``: the ``sigma`` of
    :func:`estimate_kernel_scale` (see there; **reads a pilot of raw records**).

    Parameters
    ----------
    X : array-like of shape (n, d), memmap, or None
        The data (see :func:`draw_pilot`).
    n_clusters : int
        Number of clusters / components k >= 1, at most the pilot size.
    method : {"auto", "sketch", "separation"}, default "auto"
        As for :func:`estimate_kernel_scale` (whose own default is "sketch").
    task : {"kmeans", "gmm"}, default "kmeans"
    pilot_size : int, default 5000
        ``n0`` of the pilot.
    pilot : array-like of shape (p, d), optional
        Explicit records instead of X.
    random_state : None, int, SeedSequence, Generator or RandomState

    Returns
    -------
    float
        The kernel scale, in data units.

    Raises
    ------
    ValueError, TypeError
        As :func:`estimate_kernel_scale`.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 0.5, (200, 2)), rng.normal(0, 0.5, (200, 2)) + [10, 0]])
    >>> from pysketch.kernel_scale import kernel_scale
    >>> round(kernel_scale(X, 2, random_state=0))
    8
    """
    return estimate_kernel_scale(
        X, n_clusters, method=method, task=task, pilot_size=pilot_size, pilot=pilot,
        random_state=random_state,
    ).sigma


def expected_separation(n_clusters, n_features, center_std):
    r"""The expected minimum distance between k centres drawn N(0, s^2 I_d), thesis eq.
    (4.14) (asymptotic in k, rough below k = 20):

    .. math:: \mathbf E[\varepsilon_k] \approx 2^{1+1/d}\,\Gamma(1+d/2)^{1/d}\,\Gamma(1+1/d)\,
              k^{-2/d}\, s.

    A kernel scale from public knowledge of the data's model (no data read), for private
    fits: ``KMEANS_SEPARATION_FACTOR * expected_separation(k, d, s)``."""
    k = _check_int(n_clusters, "n_clusters")
    d = _check_int(n_features, "n_features")
    if not (isinstance(center_std, numbers.Real) and math.isfinite(center_std) and center_std > 0):
        raise ValueError(f"center_std must be a positive finite number, got {center_std!r}")
    log_g = math.lgamma(1 + d / 2) / d
    return 2.0 ** (1 + 1 / d) * math.exp(log_g) * math.gamma(1 + 1 / d) * k ** (-2 / d) * float(center_std)
