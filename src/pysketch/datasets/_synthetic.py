r"""Synthetic datasets: Gaussian mixtures for benchmarks, tests and demos.

The reference model of the compressive k-means experiments is the isotropic Gaussian
mixture of Chatalic's thesis (2020, sec. 4.2, eq. (4.5)):

.. math::

    \pi = \sum_{i=1}^k \alpha_i \, \mathcal{N}(c_i, \sigma_{\mathrm{intra}}^2 I_d),
    \qquad c_i \overset{\mathrm{i.i.d.}}{\sim} \mathcal{N}(0, \sigma_{\mathrm{inter}}^2 I_d),
    \qquad \sum_i \alpha_i = 1,

with the variance ratio :math:`\rho^2 = \sigma_{\mathrm{inter}}^2 / \sigma_{\mathrm{intra}}^2`
(larger is better separated). The thesis parametrizes the separation by a scalar
:math:`s` "coherent across dimensions" in eq. (4.6), printed as
:math:`\sigma_{\mathrm{intra}} = s k^{1/d}`. As printed it cannot be right (footnote 11
and Fig. 4.3 need "larger s = better separated"); the reading implemented here, the one
consistent with footnote 11 and Fig. 4.3, is

.. math::

    \sigma_{\mathrm{inter}} = s \, k^{1/d} \, \sigma_{\mathrm{intra}},
    \qquad\text{i.e.}\qquad \rho = s \, k^{1/d},

so that k = d = 10, s = 2.5 gives :math:`\rho^2 = 9.91`, the :math:`\rho^2 \approx 10`
of most figures. Papers quote either s or :math:`\rho^2`, so the parameters returned
here always carry both.

Functions:

- :func:`make_gmm`: model (4.5), given either ``separation`` (s) or ``sigma_inter``;
- :func:`make_blobs_gaussian_centers`: the acceptance-test benchmark (unit-variance
  clusters of equal weight, centers :math:`\mathcal{N}(0, 2^2 I_d)`), a thin wrapper of
  :func:`make_gmm`;
- :func:`make_gmm_diag`: a mixture with per-component diagonal covariances and optionally
  unequal weights, for Gaussian mixture tests;
- :func:`gmm_stream`: batches of model (4.5) from one fixed mixture, generated on demand
  with stored seeds (memory independent of the total number of records; re-iterable,
  giving the same batches every time).
- :func:`make_low_rank` and :func:`low_rank_stream`: the low-rank data of the
  compressive PCA experiment (thesis Fig. 9.7), in memory or as re-iterable batches.
- :func:`make_random10`: records uniform on [0, 1]^d, the Random10 data of the M2M
  experiments (with their public box).

Randomness: ``random_state`` follows scikit-learn (see :func:`pysketch._random.as_generator`).
The draws are made in a fixed order: the mixture parameters first (centers, then
variances and weights where they are random), then the component labels (categorical
draws, so records are i.i.d. and not ordered by cluster), then the points. So the same
seed gives the same mixture for every ``n``; the records themselves change with ``n``.
"""

import math
import numbers

import numpy as np

from .._checks import check_int as _check_int
from .._checks import check_size
from .._random import as_generator

__all__ = [
    "GMMStream",
    "LowRankStream",
    "gmm_stream",
    "low_rank_stream",
    "make_blobs_gaussian_centers",
    "make_gmm",
    "make_gmm_diag",
    "make_low_rank",
    "make_random10",
]

#: Tolerance on |sum(weights) - 1| for user-given mixture weights.
WEIGHTS_SUM_TOL = 1e-9

# Rows per block when adding the centers to the noise (bounds the temporaries).
_BLOCK_ROWS = 1 << 16


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------




def _check_scale(value, name):
    """A real number (not bool), finite and > 0, returned as float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a finite real number > 0; got {value!r} of type "
            f"{type(value).__name__}"
        )
    v = float(value)
    if not (math.isfinite(v) and v > 0.0):
        raise ValueError(f"{name} must be a finite real number > 0; got {value!r}")
    return v


def _check_sizes(n, k, d, name="n"):
    """(n, k, d) of a mixture, validated and refused when their arrays could not be held:
    the k (d,) centres and scales, and n records (`name`: records per call) of d float64
    coordinates drawn, with their labels."""
    d = check_size(d, "d", nbytes=lambda v: v * 8 * 4, what="for a record and a centre")
    k = check_size(k, "k", nbytes=lambda v: v * (d * 8 * 4 + 16), what=f"for k centres of d = {d} coordinates")
    n = check_size(n, name, nbytes=lambda v: v * (d * 8 * 2 + 16),
                   what=f"for records of d = {d} coordinates and their labels")
    return n, k, d


def _check_weights(weights, k, name="weights"):
    """Mixture weights: None (uniform 1/k) or a (k,) array of finite values > 0 summing to
    1 within WEIGHTS_SUM_TOL; returned as float64, renormalized to sum to 1 exactly up to
    rounding."""
    if weights is None:
        return np.full(k, 1.0 / k)
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{name} must be None or an array of {k} real numbers; got {weights!r}"
        ) from exc
    if w.shape != (k,):
        raise ValueError(f"{name} must have shape ({k},) (one weight per component); got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError(f"{name} must be finite; got {w.tolist()}")
    if not np.all(w > 0.0):
        raise ValueError(f"{name} must all be > 0; got {w.tolist()}")
    total = math.fsum(w.tolist())
    if abs(total - 1.0) > WEIGHTS_SUM_TOL:
        raise ValueError(
            f"{name} must sum to 1 (within {WEIGHTS_SUM_TOL:g}); they sum to {total!r}"
        )
    return w / total


def _check_flag(value, name):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {value!r} of type {type(value).__name__}")
    return bool(value)


def _isotropic_scales(k, d, separation, sigma_intra, sigma_inter):
    """Validate (separation, sigma_intra, sigma_inter) of model (4.5) and return the dict of
    scales {sigma_intra, sigma_inter, separation, rho2}."""
    sigma_intra = _check_scale(sigma_intra, "sigma_intra")
    if (separation is None) == (sigma_inter is None):
        raise ValueError(
            "give exactly one of separation (s, with sigma_inter = s * k**(1/d) * sigma_intra) "
            f"and sigma_inter; got separation={separation!r}, sigma_inter={sigma_inter!r}"
        )
    # Chatalic 2020 thesis, eq. (4.6) as corrected above (footnote 11, Fig. 4.3):
    # sigma_inter = s k^(1/d) sigma_intra, so rho = sigma_inter / sigma_intra = s k^(1/d).
    growth = k ** (1.0 / d)
    if sigma_inter is None:
        separation = _check_scale(separation, "separation")
        sigma_inter = separation * growth * sigma_intra
        if not (math.isfinite(sigma_inter) and sigma_inter > 0.0):
            raise ValueError(
                f"separation={separation!r} with sigma_intra={sigma_intra!r} gives "
                f"sigma_inter={sigma_inter!r}, not a finite number > 0"
            )
    else:
        sigma_inter = _check_scale(sigma_inter, "sigma_inter")
        separation = sigma_inter / (growth * sigma_intra)
    rho = sigma_inter / sigma_intra
    rho2 = rho * rho
    if not (math.isfinite(rho2) and rho2 > 0.0):
        raise ValueError(
            f"sigma_inter / sigma_intra = {rho!r} is out of range (its square must be a "
            "finite number > 0)"
        )
    return {
        "sigma_intra": sigma_intra,
        "sigma_inter": sigma_inter,
        "separation": separation,
        "rho2": rho2,
    }


# ---------------------------------------------------------------------------------------
# Sampling (validated arguments, a Generator)
# ---------------------------------------------------------------------------------------


def _draw_labels(rng, n, weights):
    """n i.i.d. categorical labels with probabilities `weights`, by inversion of the CDF:
    label = #{j : F_j <= u}, u ~ U[0, 1), F the cumulative weights (the last one forced to
    1 so that rounding never gives the label k)."""
    cdf = np.cumsum(weights)
    cdf[-1] = 1.0
    u = rng.random(n)
    labels = np.searchsorted(cdf, u, side="right")
    return labels.astype(np.intp, copy=False)


def _draw_points(rng, labels, means, scales):
    """Records x_i = means[labels_i] + scales[labels_i] * z_i, z_i ~ N(0, I_d).

    `scales` is a float (shared isotropic standard deviation) or a (k, d) array of
    per-component standard deviations. The noise is drawn once for all records, then the
    component parameters are applied in row blocks (no (n, d) temporary besides X).
    """
    n = labels.shape[0]
    d = means.shape[1]
    X = rng.standard_normal((n, d))
    per_component = not np.isscalar(scales)
    if not per_component:
        X *= scales
    for start in range(0, n, _BLOCK_ROWS):
        stop = min(start + _BLOCK_ROWS, n)
        lab = labels[start:stop]
        if per_component:
            X[start:stop] *= np.take(scales, lab, axis=0)
        X[start:stop] += np.take(means, lab, axis=0)
    return X


def _min_center_distance(centers):
    """Separation eps = min_{i != j} ||c_i - c_j||_2 (Chatalic 2020 thesis, eq. (4.1));
    +inf for a single center. Exact differences, O(k^2 d) (centers are few)."""
    k = centers.shape[0]
    if k < 2:
        return math.inf
    best = math.inf
    for i in range(k - 1):
        diff = centers[i + 1 :] - centers[i]
        best = min(best, float(np.min(np.einsum("ij,ij->i", diff, diff))))
    return math.sqrt(best)


# ---------------------------------------------------------------------------------------
# Public generators
# ---------------------------------------------------------------------------------------


def _draw_isotropic_mixture(rng, k, d, scales, weights):
    """The parameters of model (4.5): centers N(0, sigma_inter^2 I_d) (the first draws of
    rng), the weights, the scales and the minimum distance between centers."""
    centers = rng.standard_normal((k, d))
    centers *= scales["sigma_inter"]
    params = {"centers": centers, "weights": weights, **scales}
    params["min_center_distance"] = _min_center_distance(centers)
    return params


def make_gmm(
    n,
    k,
    d,
    *,
    separation=None,
    sigma_intra=1.0,
    sigma_inter=None,
    weights=None,
    random_state=None,
    return_params=False,
):
    r"""Draw n records from the isotropic Gaussian mixture of Chatalic's thesis, eq. (4.5).

    .. math::

        x \sim \sum_{i=1}^k \alpha_i \, \mathcal{N}(c_i, \sigma_{\mathrm{intra}}^2 I_d),
        \qquad c_i \sim \mathcal{N}(0, \sigma_{\mathrm{inter}}^2 I_d)\ \text{i.i.d.}

    Parameters
    ----------
    n : int >= 1
        Number of records.
    k : int >= 1
        Number of components (clusters). ``k > n`` is allowed (some clusters are then
        empty).
    d : int >= 1
        Dimension.
    separation : float > 0, optional
        The thesis's s (eq. (4.6), corrected reading): ``sigma_inter = s * k**(1/d) *
        sigma_intra``, so that :math:`\rho^2 = s^2 k^{2/d}`. Give exactly one of
        `separation` and `sigma_inter`.
    sigma_intra : float > 0, default 1.0
        Standard deviation of every cluster along every axis.
    sigma_inter : float > 0, optional
        Standard deviation of the centers along every axis.
    weights : array_like of shape (k,), optional
        Component weights :math:`\alpha_i`, all > 0 and summing to 1 within 1e-9.
        Default uniform, 1/k.
    random_state : None, int, numpy.random.Generator, ...
        See :func:`pysketch._random.as_generator`. Draw order: centers, labels, points.
    return_params : bool, default False
        Also return the true parameters.

    Returns
    -------
    X : ndarray of shape (n, d), float64
    labels : ndarray of shape (n,), int (numpy.intp)
        The component of each record.
    params : dict, only if `return_params`
        ``centers`` (k, d), ``weights`` (k,), ``sigma_intra``, ``sigma_inter``,
        ``separation`` (s; derived from sigma_inter when that was given), ``rho2``
        (:math:`\sigma_{\mathrm{inter}}^2/\sigma_{\mathrm{intra}}^2`) and
        ``min_center_distance`` (the separation :math:`\varepsilon` of eq. (4.1) of the
        drawn centers, +inf when k = 1; use it, not the asymptotic
        formula (4.14), to set the kernel scale of synthetic benchmarks).

    Raises
    ------
    TypeError, ValueError
        For a bad argument; the message names it.

    Examples
    --------
    >>> from pysketch.datasets import make_gmm
    >>> X, y, p = make_gmm(1000, 10, 10, separation=2.5, random_state=0, return_params=True)
    >>> round(p["rho2"], 2)
    9.91
    """
    n, k, d = _check_sizes(n, k, d)
    scales = _isotropic_scales(k, d, separation, sigma_intra, sigma_inter)
    w = _check_weights(weights, k)
    return_params = _check_flag(return_params, "return_params")
    rng = as_generator(random_state)

    params = _draw_isotropic_mixture(rng, k, d, scales, w)
    labels = _draw_labels(rng, n, w)
    X = _draw_points(rng, labels, params["centers"], scales["sigma_intra"])
    if not return_params:
        return X, labels
    return X, labels, params


def make_blobs_gaussian_centers(
    n, k, d, *, center_scale=2.0, cluster_std=1.0, random_state=None, return_params=False
):
    r"""The benchmark data of the acceptance tests: k isotropic Gaussian clusters of equal
    weight with Gaussian centers.

    Records are drawn from :math:`\frac1k \sum_i \mathcal{N}(c_i, \text{cluster\_std}^2 I_d)`
    with :math:`c_i \sim \mathcal{N}(0, \text{center\_scale}^2 I_d)`; the defaults give
    unit-variance clusters and centers :math:`\mathcal{N}(0, 4 I_d)`.

    This is exactly ``make_gmm(n, k, d, sigma_inter=center_scale,
    sigma_intra=cluster_std, random_state=random_state, return_params=return_params)``
    (same draws for the same seed); see :func:`make_gmm` for the returned values.

    Parameters
    ----------
    n, k, d : int >= 1
        Records, clusters, dimension.
    center_scale : float > 0, default 2.0
        Standard deviation of the centers along every axis (:math:`\sigma_{\mathrm{inter}}`).
    cluster_std : float > 0, default 1.0
        Standard deviation of every cluster along every axis (:math:`\sigma_{\mathrm{intra}}`).
    random_state, return_params
        As in :func:`make_gmm`.

    Returns
    -------
    X : ndarray of shape (n, d), float64
    labels : ndarray of shape (n,), int (numpy.intp)
        The cluster of each record.
    params : dict, only if `return_params`
        As in :func:`make_gmm` (``sigma_inter`` is `center_scale`, ``sigma_intra``
        `cluster_std`).

    Raises
    ------
    TypeError, ValueError
        For a bad argument (as :func:`make_gmm`); the message names it.

    Examples
    --------
    >>> from pysketch.datasets import make_blobs_gaussian_centers
    >>> X, labels, params = make_blobs_gaussian_centers(500, 3, 2, random_state=0, return_params=True)
    >>> X.shape, labels.shape, params["centers"].shape, params["rho2"]
    ((500, 2), (500,), (3, 2), 4.0)
    """
    center_scale = _check_scale(center_scale, "center_scale")
    cluster_std = _check_scale(cluster_std, "cluster_std")
    return make_gmm(
        n,
        k,
        d,
        sigma_inter=center_scale,
        sigma_intra=cluster_std,
        random_state=random_state,
        return_params=return_params,
    )


def make_gmm_diag(
    n,
    k,
    d,
    *,
    mean_scale=3.0,
    variance_range=(0.5, 2.0),
    weights=None,
    dirichlet_concentration=5.0,
    random_state=None,
    return_params=False,
):
    r"""Draw n records from a Gaussian mixture with diagonal covariances.

    .. math::

        x \sim \sum_{i=1}^k \alpha_i \, \mathcal{N}(\mu_i, \mathrm{diag}(v_i)),
        \qquad \mu_i \sim \mathcal{N}(0, \text{mean\_scale}^2 I_d),
        \qquad \log v_{ij} \sim \mathcal{U}[\log a, \log b],

    where (a, b) = `variance_range` (log-uniform variances, every component and axis
    independent). The weights are uniform, given, or Dirichlet.

    Parameters
    ----------
    n, k, d : int >= 1
        Records, components, dimension.
    mean_scale : float > 0, default 3.0
        Standard deviation of the means along every axis. With the default variances
        (standard deviations in [0.71, 1.41]) the components are well separated for
        d >= 2 on average, but two means may still fall close together.
    variance_range : (float, float), default (0.5, 2.0)
        (a, b) with 0 < a <= b finite: the range of the per-axis variances (a == b gives
        isotropic components of variance a).
    weights : None, 'dirichlet' or array_like of shape (k,), default None
        None: uniform 1/k. 'dirichlet': drawn from
        Dirichlet(`dirichlet_concentration` * 1_k) (mean 1/k each; larger concentrations
        give weights closer to uniform). An array: all > 0, summing to 1 within 1e-9.
    dirichlet_concentration : float > 0, default 5.0
        Used only with ``weights='dirichlet'``.
    random_state : None, int, numpy.random.Generator, ...
        Draw order: means, variances, weights (if Dirichlet), labels, points.
    return_params : bool, default False
        Also return the true parameters.

    Returns
    -------
    X : ndarray of shape (n, d), float64
    labels : ndarray of shape (n,), int (numpy.intp)
    params : dict, only if `return_params`
        ``weights`` (k,), ``means`` (k, d), ``covariances`` (k, d) (the diagonal
        variances, the layout of :func:`pysketch.metrics.gaussian_mixture_log_likelihood`
        and of scikit-learn's ``covariance_type='diag'``), ``covariance_type`` ('diag').

    Raises
    ------
    TypeError
        For an `n`, `k` or `d` that is not an int, a scale that is not a real number (or is
        a bool), a `variance_range` that is not a pair, weights that are not numbers, a
        non-bool `return_params`, or a bad `random_state`.
    ValueError
        For an `n`, `k` or `d` below 1 (or too large for the machine's memory), a
        `mean_scale`, variance or `dirichlet_concentration` that is not finite and > 0,
        ``variance_range[0] > variance_range[1]``, a string `weights` other than
        'dirichlet', or weights that are not k finite positive numbers summing to 1.

    Examples
    --------
    >>> from pysketch.datasets import make_gmm_diag
    >>> X, labels, params = make_gmm_diag(500, 3, 4, weights="dirichlet", random_state=0, return_params=True)
    >>> variances = params["covariances"]  # (k, d), in variance_range = (0.5, 2.0)
    >>> X.shape, variances.shape, bool(((0.5 <= variances) & (variances <= 2.0)).all())
    ((500, 4), (3, 4), True)
    """
    n, k, d = _check_sizes(n, k, d)
    mean_scale = _check_scale(mean_scale, "mean_scale")
    low, high = _check_variance_range(variance_range)
    dirichlet = isinstance(weights, str)
    if dirichlet:
        if weights != "dirichlet":
            raise ValueError(
                f"weights must be None, 'dirichlet' or an array of {k} weights; got {weights!r}"
            )
        concentration = _check_scale(dirichlet_concentration, "dirichlet_concentration")
    else:
        w = _check_weights(weights, k)
    return_params = _check_flag(return_params, "return_params")
    rng = as_generator(random_state)

    means = rng.standard_normal((k, d))
    means *= mean_scale
    log_low, log_high = math.log(low), math.log(high)
    variances = np.exp(rng.uniform(log_low, log_high, size=(k, d)))
    # exp(log(a)) may differ from a by one ulp: keep the draws inside the stated range.
    np.clip(variances, low, high, out=variances)
    if dirichlet:
        w = rng.dirichlet(np.full(k, concentration))
    labels = _draw_labels(rng, n, w)
    X = _draw_points(rng, labels, means, np.sqrt(variances))
    if not return_params:
        return X, labels
    params = {
        "weights": w,
        "means": means,
        "covariances": variances,
        "covariance_type": "diag",
    }
    return X, labels, params


def _check_variance_range(variance_range):
    try:
        low, high = variance_range
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"variance_range must be a pair (a, b) with 0 < a <= b; got {variance_range!r}"
        ) from exc
    low = _check_scale(low, "variance_range[0]")
    high = _check_scale(high, "variance_range[1]")
    if low > high:
        raise ValueError(f"variance_range must be (a, b) with a <= b; got {variance_range!r}")
    return low, high


# ---------------------------------------------------------------------------------------
# Streaming
# ---------------------------------------------------------------------------------------


class _BatchStream:
    """A re-iterable stream of `n_batches` batches, each rebuilt by `batch(i)` from its own seed."""

    def __len__(self):
        return self.n_batches

    def __iter__(self):
        for i in range(self.n_batches):
            yield self.batch(i)


class GMMStream(_BatchStream):
    """Batches of records from one fixed isotropic Gaussian mixture (model (4.5)).

    Made by :func:`gmm_stream`; see there. Iterating gives a new generator of the
    ``n_batches`` batches, the same ones every time; :meth:`batch` makes any one batch on
    its own. Only one batch is in memory at a time.

    Parameters
    ----------
    batch_size, n_batches : int
        Records per batch and number of batches (checked by :func:`gmm_stream`).
    params : dict
        The mixture, as ``make_gmm(..., return_params=True)`` returns it (``centers``,
        ``weights``, ``sigma_intra`` are used to draw).
    entropy : list of int
        The stored seed: batch i is drawn from
        ``numpy.random.SeedSequence(entropy, spawn_key=(i,))``.
    return_labels : bool

    Attributes
    ----------
    batch_size, n_batches, k, d : int
    n : int
        Total number of records, ``batch_size * n_batches``.
    params : dict
        The mixture, as returned by ``make_gmm(..., return_params=True)``.
    return_labels : bool
        Whether batches are ``X`` or ``(X, labels)``.

    Raises
    ------
    TypeError
        `batch` with an index that is not an int.
    ValueError
        `batch` with a negative index.
    IndexError
        `batch` with an index >= n_batches.

    Examples
    --------
    >>> from pysketch.datasets import gmm_stream
    >>> stream = gmm_stream(100, 3, k=2, d=2, separation=2.0, random_state=0)
    >>> len(stream), stream.centers.shape, stream.batch(2).shape
    (3, (2, 2), (100, 2))
    >>> bool((stream.batch(1) == list(stream)[1]).all())  # the same batch, every time
    True
    """

    def __init__(self, batch_size, n_batches, params, entropy, return_labels):
        self.batch_size = batch_size
        self.n_batches = n_batches
        self.k, self.d = params["centers"].shape
        self.n = batch_size * n_batches
        self.params = params
        self.return_labels = return_labels
        self._entropy = entropy

    @property
    def centers(self):
        """The (k, d) centers, the same for every batch."""
        return self.params["centers"]

    def batch(self, index):
        """Batch number `index` (0 <= index < n_batches), made from its own stored seed.

        Returns ``X`` of shape (batch_size, d), or ``(X, labels)`` if ``return_labels``.
        """
        index = _check_int(index, "index", minimum=0)
        if index >= self.n_batches:
            raise IndexError(f"index must be < n_batches={self.n_batches}; got {index}")
        # Batch i draws from the i-th child of the stream's seed sequence (what
        # SeedSequence.spawn would give, made directly so any batch is reachable alone).
        seq = np.random.SeedSequence(self._entropy, spawn_key=(index,))
        rng = np.random.default_rng(seq)
        labels = _draw_labels(rng, self.batch_size, self.params["weights"])
        X = _draw_points(rng, labels, self.params["centers"], self.params["sigma_intra"])
        return (X, labels) if self.return_labels else X

    def __repr__(self):
        p = self.params
        return (
            f"GMMStream(batch_size={self.batch_size}, n_batches={self.n_batches}, k={self.k}, "
            f"d={self.d}, sigma_intra={p['sigma_intra']!r}, sigma_inter={p['sigma_inter']!r}, "
            f"rho2={p['rho2']!r})"
        )


def gmm_stream(
    batch_size,
    n_batches,
    k,
    d,
    *,
    separation=None,
    sigma_intra=1.0,
    sigma_inter=None,
    weights=None,
    random_state=None,
    return_labels=False,
):
    """Batches of records from one fixed mixture of model (4.5), for streaming.

    The centers are drawn once, first, from `random_state`, exactly as in
    :func:`make_gmm` (so the same int seed gives the same mixture as ``make_gmm``; the
    records differ). Then 128 bits of entropy are drawn and stored, and batch i is made
    from the i-th child of that seed sequence: the batches are independent, reproducible,
    made only when asked for, and the memory used is one batch, whatever the total
    number of records.

    Parameters
    ----------
    batch_size : int >= 1
        Records per batch.
    n_batches : int >= 1
        Number of batches.
    k, d, separation, sigma_intra, sigma_inter, weights
        As in :func:`make_gmm`.
    random_state : None, int, numpy.random.Generator, ...
        Seeds the mixture and the stored entropy of the batches (with None, fresh OS
        entropy, drawn once: the stream is still the same on every iteration).
    return_labels : bool, default False
        Batches are ``(X, labels)`` instead of ``X``.

    Returns
    -------
    GMMStream
        An iterable of `n_batches` batches, each an (batch_size, d) float64 array (or a
        pair with the (batch_size,) labels). ``iter(stream)`` is a generator; iterating
        again gives the same batches. ``stream.params`` holds the mixture as in
        :func:`make_gmm`; ``stream.batch(i)`` makes batch i alone.

    Examples
    --------
    >>> from pysketch.datasets import gmm_stream
    >>> stream = gmm_stream(1000, 5, k=3, d=2, sigma_inter=5.0, random_state=0)
    >>> sum(len(X) for X in stream)
    5000
    """
    batch_size, k, d = _check_sizes(batch_size, k, d, "batch_size")
    n_batches = _check_int(n_batches, "n_batches")
    scales = _isotropic_scales(k, d, separation, sigma_intra, sigma_inter)
    w = _check_weights(weights, k)
    return_labels = _check_flag(return_labels, "return_labels")
    rng = as_generator(random_state)

    params = _draw_isotropic_mixture(rng, k, d, scales, w)
    entropy = [int(v) for v in rng.integers(0, 2**32, size=4, dtype=np.uint64)]
    return GMMStream(batch_size, n_batches, params, entropy, return_labels)


# ---------------------------------------------------------------------------------------
# Low-rank data (compressive PCA)
# ---------------------------------------------------------------------------------------

#: The dtypes the low-rank generators return.
_LOW_RANK_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _low_rank_block_rows(d):
    """Records per generation block: a function of d alone (about 2 MB of float64 per
    block, at most 1024 rows), so that make_low_rank and every low_rank_stream, whatever
    its batch_size, make the same records from the same seed."""
    return max(1, min(1024, (1 << 18) // d))


def _check_nu(nu):
    if isinstance(nu, (bool, np.bool_)) or not isinstance(nu, numbers.Real) or not (
            math.isfinite(nu) and nu >= 0):
        raise ValueError(f"nu must be a finite real number >= 0; got {nu!r}")
    return float(nu)


def _check_float_dtype(dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise ValueError(f"dtype must be numpy.float32 or numpy.float64; got {dtype!r}") from exc
    if dt not in _LOW_RANK_DTYPES:
        raise ValueError(f"dtype must be numpy.float32 or numpy.float64; got {dtype!r}")
    return dt


def _low_rank_args(n, d, k, nu, dtype, batch_size=None):
    """The arguments, validated; d, k and the records held at once (n, or batches of
    batch_size) refused when they could not be held: float64 records, a copy in dtype and
    the codes, and the basis."""
    d = check_size(d, "d", nbytes=lambda v: v * 8 * 4, what="for a record and the basis")
    k = _check_int(k, "k")
    if k > d:
        raise ValueError(f"k must be <= d (the rank cannot exceed the dimension); got k={k}, d={d}")
    check_size(k, "k", nbytes=d * k * 8 * 2, what=f"for the ({d}, k) basis")
    per_row = d * 8 * 3 + k * 8
    what = f"for records of d = {d} coordinates"
    n = check_size(n, "n", nbytes=None if batch_size is not None else lambda v: v * per_row, what=what)
    if batch_size is not None:
        check_size(batch_size, "batch_size", nbytes=lambda v: min(v, n) * per_row, what=what)
    return n, d, k, _check_nu(nu), _check_float_dtype(dtype)


def _low_rank_model(d, k, random_state):
    """The basis B (d, k), i.i.d. N(0, 1) (the first draws of random_state), and the 128
    bits of entropy of the records' blocks (the next draws)."""
    rng = as_generator(random_state)
    basis = rng.standard_normal((d, k))
    entropy = [int(v) for v in rng.integers(0, 2**32, size=4, dtype=np.uint64)]
    return basis, entropy


def _low_rank_block(basis, noise, entropy, index, rows):
    """Block `index` of the records before normalisation, y = B c + noise * eta (float64,
    shape (rows, d)): drawn from the index-th child of the entropy's seed sequence, the
    codes c (rows, k) first, then eta (rows, d)."""
    rng = np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=(index,)))
    codes = rng.standard_normal((rows, basis.shape[1]))
    Y = rng.standard_normal((rows, basis.shape[0]))
    Y *= noise
    Y += codes @ basis.T
    return Y


def _row_norms(X):
    """Euclidean norms of the rows, summed in float64 whatever the dtype of X."""
    return np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))


def _low_rank_rows(start, stop, basis, noise, entropy):
    """Records start..stop-1 before normalisation (float64), assembled from the blocks
    that hold them."""
    d = basis.shape[0]
    rows = _low_rank_block_rows(d)
    out = np.empty((stop - start, d))
    for j in range(start // rows, (stop - 1) // rows + 1):
        first = j * rows
        Y = _low_rank_block(basis, noise, entropy, j, rows)
        lo, hi = max(start, first), min(stop, first + rows)
        out[lo - start:hi - start] = Y[lo - first:hi - first]
    return out


def _low_rank_max_norm(n, basis, noise, entropy):
    """max_i ||y_i||_2 over the n records, block by block (memory: one block)."""
    rows = _low_rank_block_rows(basis.shape[0])
    best = 0.0
    for j in range((n - 1) // rows + 1):
        Y = _low_rank_block(basis, noise, entropy, j, rows)
        best = max(best, float(_row_norms(Y[:min(rows, n - j * rows)]).max()))
    return best


def _into_unit_ball(Y, max_norm, dtype):
    """x = y / max_norm in `dtype`, every row of norm <= 1 (computed in float64): the
    division puts the largest row on the sphere up to rounding, and a row that rounding
    left above 1 (by a few ulps) is scaled to just inside it."""
    if max_norm > 0:
        Y /= max_norm
    X = Y.astype(dtype, copy=False)
    eps = float(np.finfo(dtype).eps)
    for _ in range(4):
        norms = _row_norms(X)
        over = norms > 1.0
        if not over.any():
            break
        X[over] *= ((1.0 - 4.0 * eps) / norms[over])[:, None].astype(dtype)
    return X


def make_low_rank(n, d, k, *, nu=0.05, random_state=None, dtype=np.float64):
    r"""Low-rank records in the unit ball: the data of the thesis' Fig. 9.7 (compressive PCA).

    Chatalic (2020 thesis, sec. 9.3, Fig. 9.7):

    .. math::

        y_i = B c_i + \nu k \, \eta_i, \qquad x_i = y_i / \max_j \|y_j\|_2,

    with :math:`B \in \mathbb{R}^{d \times k}` i.i.d. N(0, 1) (one basis for all records),
    :math:`c_i \sim \mathcal{N}(0, I_k)` and :math:`\eta_i \sim \mathcal{N}(0, I_d)`
    i.i.d. So every record lies in the unit ball and the longest one on the sphere (up to
    rounding: its norm is within a few ulps of 1, never above). Before the normalisation,
    :math:`E[y y^T] = B B^T + (\nu k)^2 I_d`: rank k plus isotropic noise, and the top-k
    eigenvalues carry about :math:`1 / (1 + \nu^2 k)` of the trace (tr BB^T ~ dk), 0.9877
    for nu = 0.05, k = 5. The normalisation by the data's own maximum is part of the
    model (the thesis' preprocessing), not a privacy-accounted step.

    Parameters
    ----------
    n, d, k : int >= 1
        Records, dimension, rank (k <= d).
    nu : float >= 0, default 0.05
        Noise level (the noise standard deviation per coordinate is nu * k).
    random_state : None, int, numpy.random.Generator, ...
        See :func:`pysketch._random.as_generator`. Draw order: B, then 128 bits of
        entropy; the records are made in blocks of a fixed number of rows (a function of d
        only), block j from the j-th child of that entropy's seed sequence (c, then eta).
        So the same seed gives the same records as :func:`low_rank_stream` with any
        batch_size, and the same first records for every n (the normalisation by the
        maximum depends on n).
    dtype : numpy.float32 or numpy.float64, default float64
        The records are drawn and normalised in float64, then converted (and any row that
        the conversion pushed above norm 1 is brought back inside).

    Returns
    -------
    X : ndarray of shape (n, d)

    Memory: the (n, d) float64 records (plus the result when dtype is float32), one block
    and B. For data larger than memory use :func:`low_rank_stream`.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.datasets import make_low_rank
    >>> X = make_low_rank(500, 20, 3, random_state=0)
    >>> X.shape, bool(abs(np.linalg.norm(X, axis=1).max() - 1) < 1e-12)
    ((500, 20), True)
    """
    n, d, k, nu, dt = _low_rank_args(n, d, k, nu, dtype)
    basis, entropy = _low_rank_model(d, k, random_state)
    noise = nu * k
    Y = _low_rank_rows(0, n, basis, noise, entropy)
    max_norm = _low_rank_max_norm(n, basis, noise, entropy) if n else 0.0
    return _into_unit_ball(Y, max_norm, dt)


class LowRankStream(_BatchStream):
    """Batches of the low-rank records of :func:`make_low_rank`, made on demand.

    Made by :func:`low_rank_stream`; see there. Iterating gives a new generator of the
    ``n_batches`` batches (the last one shorter when batch_size does not divide n), the
    same ones every time; :meth:`batch` makes any one batch on its own.

    Parameters
    ----------
    n, batch_size : int
        Records in all and per batch (checked by :func:`low_rank_stream`).
    nu : float
        The noise level (standard deviation nu * k per coordinate).
    basis : ndarray of shape (d, k)
        B.
    entropy : list of int
        The stored seed of the records' blocks.
    dtype : numpy.dtype
        float32 or float64, the batches' dtype.

    Attributes
    ----------
    n, d, k, batch_size, n_batches : int
    nu : float
    dtype : numpy.dtype
    basis : ndarray (d, k)
        The basis B of the model (before the normalisation by the maximum norm).
    max_norm : float
        max_i ||y_i||_2, found by a first pass over the records (made again from their
        seeds, one block at a time) the first time it is needed, then kept.

    Raises
    ------
    TypeError
        `batch` with an index that is not an int.
    ValueError
        `batch` with a negative index.
    IndexError
        `batch` with an index >= n_batches.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.datasets import low_rank_stream
    >>> stream = low_rank_stream(2500, 16, 2, batch_size=1000, random_state=0)
    >>> stream.n_batches, stream.batch(2).shape, stream.batch(2).dtype
    (3, (500, 16), dtype('float32'))
    >>> bool(max(np.linalg.norm(X, axis=1).max() for X in stream) <= 1.0)  # inside the unit ball
    True
    """

    def __init__(self, n, batch_size, nu, basis, entropy, dtype):
        self.n = n
        self.d, self.k = basis.shape
        self.nu = nu
        self.batch_size = batch_size
        self.n_batches = (n + batch_size - 1) // batch_size
        self.dtype = dtype
        self.basis = basis
        self._entropy = entropy
        self._max_norm = None

    @property
    def max_norm(self):
        if self._max_norm is None:
            self._max_norm = _low_rank_max_norm(self.n, self.basis, self.nu * self.k, self._entropy)
        return self._max_norm

    def batch(self, index):
        """Batch number `index` (0 <= index < n_batches): records index * batch_size up
        to the next batch's first, as an array of shape (rows, d) and the stream's dtype."""
        index = _check_int(index, "index", minimum=0)
        if index >= self.n_batches:
            raise IndexError(f"index must be < n_batches={self.n_batches}; got {index}")
        start = index * self.batch_size
        stop = min(self.n, start + self.batch_size)
        max_norm = self.max_norm
        Y = _low_rank_rows(start, stop, self.basis, self.nu * self.k, self._entropy)
        return _into_unit_ball(Y, max_norm, self.dtype)

    def __repr__(self):
        return (f"LowRankStream(n={self.n}, d={self.d}, k={self.k}, nu={self.nu!r}, "
                f"batch_size={self.batch_size}, dtype={self.dtype.name})")


def low_rank_stream(n, d, k, *, nu=0.05, batch_size=1000, random_state=None, dtype=np.float32):
    """The records of :func:`make_low_rank` as a re-iterable stream of batches.

    For data that do not fit in memory (the thesis' Fig. 9.7 runs d = 2^15): the basis B
    and 128 bits of entropy are drawn from `random_state` exactly as in make_low_rank,
    and each batch is made from the seeds of the blocks that hold its records. The
    maximum norm max_i ||y_i|| that puts the records in the unit ball is found by a first
    pass over the blocks (made, measured and dropped) when the first batch is asked for.
    Memory: O(batch_size * d + d * k) (one batch, one block of at most 1024 rows and
    about 2 MB, and B).

    The stream and make_low_rank give the same numbers: with the same `random_state` and
    dtype, concatenating the batches gives ``make_low_rank(n, d, k, nu=nu,
    random_state=random_state, dtype=dtype)`` exactly, for every batch_size (the record
    blocks do not depend on it). A ``random_state`` Generator is advanced by the draws of
    B and the entropy, as in make_low_rank.

    Parameters
    ----------
    n, d, k, nu
        As in :func:`make_low_rank`.
    batch_size : int >= 1, default 1000
        Records per batch (the last batch holds the rest).
    random_state : None, int, numpy.random.Generator, ...
        With None, fresh OS entropy drawn once: the stream is still the same on every
        iteration.
    dtype : numpy.float32 or numpy.float64, default float32

    Returns
    -------
    LowRankStream

    Examples
    --------
    >>> from pysketch.datasets import low_rank_stream
    >>> stream = low_rank_stream(2500, 64, 4, batch_size=1000, random_state=0)
    >>> [len(X) for X in stream]
    [1000, 1000, 500]
    """
    n, d, k, nu, dt = _low_rank_args(n, d, k, nu, dtype, batch_size)
    batch_size = int(batch_size)
    basis, entropy = _low_rank_model(d, k, random_state)
    return LowRankStream(n, batch_size, nu, basis, entropy, dt)


# ---------------------------------------------------------------------------------------
# Uniform data (M2M's Random10)
# ---------------------------------------------------------------------------------------


def make_random10(n=27_000, d=10, random_state=None):
    """The Random10 data of the M2M paper: n records uniform on the unit cube [0, 1]^d.

    Houssiau, Schellekens et al., "M2M: a general method to perform various data analysis
    tasks from a differentially private sketch", Sec. 4.1 (2022): "uniform
    sampling on [0,1]^10", n = 27 000 (the size of their LifeSci data), d = 10. Since M2M's
    synthetic points are drawn uniformly on the same box, there is no distributional shift
    on these data.

    Parameters
    ----------
    n, d : int >= 1, defaults 27000 and 10
    random_state : None, int, numpy.random.Generator, ...
        See :func:`pysketch._random.as_generator`. One draw, ``rng.random((n, d))`` (row
        by row), so the same seed gives the same records, and the same first records for
        every n.

    Returns
    -------
    X : ndarray of shape (n, d), float64, in [0, 1)
    bounds : tuple (lower, upper) of float64 arrays of shape (d,)
        The public box [0, 1]^d (zeros and ones), the form ``bounds=`` of the private
        estimators takes.

    Examples
    --------
    >>> from pysketch.datasets import make_random10
    >>> X, (lower, upper) = make_random10(100, random_state=0)
    >>> X.shape, float(lower[0]), float(upper[0])
    ((100, 10), 0.0, 1.0)
    """
    d = check_size(d, "d", nbytes=lambda v: v * 8, what="for a record")
    n = check_size(n, "n", nbytes=lambda v: v * d * 8, what=f"for records of d = {d} coordinates")
    rng = as_generator(random_state)
    X = rng.random((n, d))
    return X, (np.zeros(d), np.ones(d))
