r"""Private random-feature ridge regression by sufficient-statistics perturbation (SSP).

The published model (:mod:`pysketch.rfm.published`) perturbs the min-norm coefficients; its
sensitivity holds only with high probability under a data model (Liao, Needell & Xue 2024, Sec. 3.2),
and with the sensitivity in the right units its noise swamps the signal (measured). This
module takes the other road (issue 19, scope 3; Vu & Slavkovic 2009, Foulds et al. 2016,
and Wang 2018 "Revisiting differentially private linear regression", Algorithm 2
"AdaSSP"): release the *sufficient statistics* of least squares over the features,

    G = sum_i phi(x_i) phi(x_i)^T   (p x p),     b = sum_i phi(x_i) (y_i - c),

with c the centre of the public label range, and solve the ridge problem on the released
pair. The statistics are a matrix-valued sketch: one pass, a sum over records, so they
stream and merge by addition (:class:`RFStatistics`), and every record's contribution is
bounded *for every x and every y in the public range*, so the guarantee is worst case:

* the features are the 'unit' layout of :class:`~pysketch.rfm.RandomFeatures`,
  ``[cos(Omega^T x), sin(Omega^T x), 1] / sqrt(N + 1)``: ``||phi(x)|| = 1`` exactly and
  ``|phi_k(x)| <= a = 1 / sqrt(N + 1)`` for all x (no clipping of x is needed);
* the labels are clipped to the public range [lo, hi] (counted and warned, never silently),
  so ``|y - c| <= B = (hi - lo) / 2``.

**Sensitivities** (add/remove one record; :func:`statistics_sensitivities`), for the three
released pieces: the upper triangle of G (diagonal included, as a vector), b, and
lambda_min(G):

* ``||triu(phi phi^T)||_2^2 = (||phi||^4 + sum_k phi_k^4) / 2 <= (1 + a^2) / 2``;
* ``||phi (y - c)|| <= B``;
* ``|lambda_min(G + phi phi^T) - lambda_min(G)| <= ||phi||^2 = 1`` (Weyl).

Replacing a record (G changes by phi phi^T - phi' phi'^T): ``||triu(.)||^2 <= 1 + a^2``
(``||phi phi^T - phi' phi'^T||_F^2 <= 2`` and the diagonal adds at most ``2 a^2``, halved),
``2 B`` for b, and still 1 for lambda_min (the difference has eigenvalues in [-1, 1]).
A factor ``1 + 1e-12`` covers the rounding of cos^2 + sin^2.

**One Gaussian release.** The three pieces are scaled so that piece k has sensitivity
``sqrt(s_k)`` (shares s_k summing to 1, :data:`DEFAULT_SHARES`) and released together by one
(epsilon, delta) Gaussian mechanism of sensitivity 1 (:class:`pysketch.privacy.Gaussian`,
analytic calibration): one mechanism, no composition loss. Piece k then carries noise of
standard deviation ``sigma Delta_k / sqrt(s_k)``.

**Ridge, chosen privately (AdaSSP).** With ``sigma_G`` the noise on G's entries, the
symmetric noise matrix has spectral norm about ``2 sqrt(p) sigma_G`` (the semicircle edge);
the ridge is ``lambda = max(0, f 2 sqrt(p) sigma_G - lambda_min~)`` with ``lambda_min~`` the
released lambda_min moved down by ``sqrt(2 ln(1/rho)) sigma_lambda`` (so it under-estimates
the true value w.p. >= 1 - rho, rho = 0.05) and floored at 0: AdaSSP's rule (Wang 2018,
Alg. 2, lines 2-3) with the spectral edge in place of its high-probability bound, scaled by
f = RIDGE_EDGE_FRACTION = 1/2 (issue 37: on the real tables of
benchmarks/quality/rfm_quality.py the noise itself costs little at the whole edge -- solving
the *clean* statistics with the same ridge gives the same error -- while the ridge's bias is
the error; half the edge, with the eigenvalue floor below as the guard, was better or equal
on every table measured). The
solve is ``theta = (G~ + lambda J)^+ b~``, J the identity without the constant feature's
entry (the intercept is not penalised), with eigenvalues floored at ``sqrt(p) sigma_G``,
half the noise's spectral edge (a post-processing guard against an indefinite G~). Everything after the release is
post-processing, including the choice between the ridge model and the intercept-only model
(:func:`choose_against_intercept`, by Gaussian fission of the release).
"""

import math
import warnings

import numpy as np
from scipy.linalg import blas

from .._checks import check_array
from ..privacy.budget import Budget
from ..privacy.mechanisms import check_delta, check_epsilon
from .features import RandomFeatures

__all__ = ["check_target_bounds", "clip_targets", "warn_clipped_targets", "statistics_sums",
           "add_statistics_sums", "RFStatistics", "PrivateRFStatistics", "release_statistics",
           "statistics_sensitivities", "solve_ridge", "choose_against_intercept", "intercept_only", "DEFAULT_SHARES",
           "NEIGHBOURING", "RIDGE_EDGE_FRACTION"]

#: Shares of the unit sensitivity budget for (G, b, lambda_min).
DEFAULT_SHARES = (0.5, 0.4, 0.1)
#: The neighbouring relations the released statistics support.
NEIGHBOURING = ("add_remove", "replace")
#: The failure probability of the lambda_min lower bound of the ridge rule.
RIDGE_RHO = 0.05
#: The ridge of the 'ada' rule is this fraction of the noise's spectral edge 2 sqrt(p) sigma_G.
RIDGE_EDGE_FRACTION = 0.5
#: choose_against_intercept: how many independent fissions are averaged.
FISSION_REPEATS = 8
#: cos^2 + sin^2 = 1 up to rounding: the bound used for ||phi||^2.
NORM_SLACK = 1e-12


def check_target_bounds(target_bounds):
    """The public label range ``(lower, upper)`` as two floats, finite with lower < upper;
    ValueError otherwise.

    Parameters
    ----------
    target_bounds : pair of numbers
        The public range of the labels.

    Returns
    -------
    (float, float)
        (lower, upper).

    Raises
    ------
    ValueError
        If `target_bounds` is not a pair of numbers, or they are not finite with
        lower < upper.

    Examples
    --------
    >>> from pysketch.rfm.ssp import check_target_bounds
    >>> check_target_bounds((0, 10))
    (0.0, 10.0)
    """
    try:
        lo, hi = (float(v) for v in target_bounds)
    except (TypeError, ValueError):
        raise ValueError(f"target_bounds must be a pair (lower, upper), got {target_bounds!r}") from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"target_bounds must be finite with lower < upper, got {target_bounds!r}")
    return lo, hi


def clip_targets(y, target_bounds, name="y"):
    """y clipped to the public range, with a warning that counts the clipped values.

    Parameters
    ----------
    y : ndarray
        The labels.
    target_bounds : (float, float)
        The public range (lower, upper), already checked (:func:`check_target_bounds`).
    name : str, default 'y'
        The labels' name in the warning.

    Returns
    -------
    numpy.ndarray
        `y` itself when no value lies outside, else a clipped copy.

    Warns
    -----
    RuntimeWarning
        When values are clipped (:func:`warn_clipped_targets`).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from pysketch.rfm.ssp import clip_targets
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", RuntimeWarning)  # "2 of 3 values of y lie outside ..."
    ...     clipped = clip_targets(np.array([-3.0, 0.5, 4.0]), (-2.0, 2.0))
    >>> clipped.tolist()
    [-2.0, 0.5, 2.0]
    """
    lo, hi = target_bounds
    outside = int(np.count_nonzero((y < lo) | (y > hi)))
    if outside:
        warn_clipped_targets(outside, y.size, target_bounds, name, stacklevel=4)
        y = np.clip(y, lo, hi)
    return y


def warn_clipped_targets(outside, total, target_bounds, name="y", stacklevel=4):
    """The warning of `clip_targets`: `outside` of `total` values were clipped.

    Nothing is warned when `outside` is 0.

    Parameters
    ----------
    outside : int
        How many values were clipped.
    total : int
        How many values there were.
    target_bounds : (float, float)
        The public range they were clipped to.
    name : str, default 'y'
        The values' name in the message.
    stacklevel : int, default 4
        Passed to ``warnings.warn`` (the default points at the caller of a fit).

    Warns
    -----
    RuntimeWarning
        "`outside` of `total` values of `name` lie outside the public target_bounds
        [lo, hi] and were clipped to it".

    Examples
    --------
    >>> import warnings
    >>> from pysketch.rfm.ssp import warn_clipped_targets
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_clipped_targets(2, 3, (-2.0, 2.0), stacklevel=2)
    >>> str(caught[0].message)
    '2 of 3 values of y lie outside the public target_bounds [-2, 2] and were clipped to it'
    """
    if outside:
        lo, hi = target_bounds
        warnings.warn(f"{outside} of {total} values of {name} lie outside the public target_bounds "
                      f"[{lo:g}, {hi:g}] and were clipped to it", RuntimeWarning, stacklevel=stacklevel)


def statistics_sums(X, y, first_row, features, target_bounds):
    """The partial sums of records in memory (X (k, d) as the features see it, y (k,)
    labels): (upper triangle of G, b, count, labels outside target_bounds), the labels
    clipped to it. One pass of a fit (:meth:`pysketch.records.Records.reduce`): the
    sums of blocks merge with `add_statistics_sums`.

    Parameters
    ----------
    X : ndarray of shape (k, d)
        The inputs of a block of records, as the features see them.
    y : ndarray of shape (k,)
        Their labels.
    first_row : int
        The index of the block's first row (unused: the signature of a reduce pass).
    features : RandomFeatures
        'unit' layout.
    target_bounds : (lower, upper)
        The public label range; c is its centre.

    Returns
    -------
    gram_upper : ndarray of shape (p, p)
        sum phi phi^T, its upper triangle filled (the rest is not meaningful).
    xty : ndarray of shape (p,)
        sum phi (y - c), y clipped.
    count : int
        The block's records.
    clipped : int
        The labels outside target_bounds (clipped, not warned here).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import RandomFeatures
    >>> from pysketch.rfm.ssp import statistics_sums
    >>> features = RandomFeatures(2, 10, length_scale=1.0, layout="unit", intercept=True, random_state=0)
    >>> gram, xty, count, clipped = statistics_sums(np.zeros((3, 2)), np.array([0.0, 1.0, 5.0]), 0, features,
    ...                                             (0, 2))
    >>> gram.shape, xty.shape, count, clipped
    ((21, 21), (21,), 3, 1)
    """
    stats = RFStatistics(features, target_bounds)
    if X.shape[0] == 0:  # an empty block (a data frame's empty partition)
        return stats._gram, stats.xty, 0, 0
    lo, hi = stats.target_bounds
    clipped = int(np.count_nonzero((y < lo) | (y > hi)))
    if clipped:
        y = np.clip(y, lo, hi)
    stats.update(X, y)
    return stats._gram, stats.xty, stats.count, clipped


def add_statistics_sums(a, b):
    """Merge of two partial `statistics_sums` (into a's arrays).

    Parameters
    ----------
    a, b : tuple (gram_upper, xty, count, clipped)
        Two partial sums of :func:`statistics_sums`; a's arrays are updated in place.

    Returns
    -------
    tuple (gram_upper, xty, count, clipped)
        The merged sums (a's arrays, the counts added).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.ssp import add_statistics_sums
    >>> a = (np.ones((2, 2)), np.zeros(2), 3, 0)
    >>> gram, xty, count, clipped = add_statistics_sums(a, (np.ones((2, 2)), np.ones(2), 4, 1))
    >>> gram.tolist(), xty.tolist(), count, clipped
    ([[2.0, 2.0], [2.0, 2.0]], [1.0, 1.0], 7, 1)
    """
    gram, xty = a[0], a[1]
    gram += b[0]
    xty += b[1]
    return gram, xty, a[2] + b[2], a[3] + b[3]


class RFStatistics:
    """The sufficient statistics of random-feature least squares, as a streaming,
    mergeable sum: ``G = sum phi phi^T``, ``b = sum phi (y - c)``, and the count.

    Parameters
    ----------
    features : RandomFeatures
        'unit' layout (norm 1 for every x: what the sensitivities need).
    target_bounds : (lower, upper)
        Public range of y; c is its centre.

    Raises
    ------
    TypeError
        If `features` is not a RandomFeatures; in ``+``, if the other operand is not an
        RFStatistics (or is a PrivateRFStatistics).
    ValueError
        If the features do not have ``layout='unit'`` or `target_bounds` are not finite
        with lower < upper. In `update`: an X that is not a finite 2-D array of d columns,
        a y that is not finite with one value per row of X. In `from_sums`: sums of the
        wrong shapes. In ``+``: statistics of different features or target_bounds.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import RandomFeatures, RFStatistics
    >>> features = RandomFeatures(2, 10, length_scale=1.0, layout="unit", intercept=True, random_state=0)
    >>> X = np.random.default_rng(0).uniform(size=(100, 2))
    >>> first = RFStatistics(features, (0, 1)).update(X[:60], X[:60, 0])
    >>> both = first + RFStatistics(features, (0, 1)).update(X[60:], X[60:, 0])  # merged by addition
    >>> both.count, both.gram.shape, round(float(np.trace(both.gram)), 6)  # ||phi(x)|| = 1
    (100, (21, 21), 100.0)
    """

    def __init__(self, features, target_bounds):
        if not isinstance(features, RandomFeatures):
            raise TypeError(f"features must be a RandomFeatures, got {type(features).__name__}")
        if features.layout != "unit":
            raise ValueError("features must have layout='unit' (norm exactly 1 for every x), "
                             f"got layout={features.layout!r}")
        self.features = features
        self.target_bounds = check_target_bounds(target_bounds)
        p = features.output_dim
        self._gram = np.zeros((p, p), order="F")  # upper triangle filled by SYRK
        self.xty = np.zeros(p)
        self.count = 0

    @property
    def centre(self):
        lo, hi = self.target_bounds
        return 0.5 * (lo + hi)

    @property
    def label_radius(self):
        """B: abs(y - c) <= B for every label in the public range."""
        lo, hi = self.target_bounds
        return 0.5 * (hi - lo)

    def update(self, X, y):
        """Add the records (rows of X, y); a chunk of rows at a time. Returns self.

        X and y may be dask collections (a dask array or data frame of numeric columns,
        and a dask array or series; :mod:`pysketch.records`): every block's sums are
        then taken where it lives and merged by a tree; nothing is released here."""
        from ..records import Records, is_lazy

        if is_lazy(X, y):
            records, _ = Records.from_dask(X, y)
            if records.shape[1] != self.features.d:
                raise ValueError(f"X must have {self.features.d} columns, got {records.shape[1]}")
            gram, xty, count, clipped = records.reduce(statistics_sums, add_statistics_sums,
                                                       args=(self.features, self.target_bounds))
            warn_clipped_targets(clipped, count, self.target_bounds, "y", stacklevel=3)
            self._gram += gram
            self.xty += xty
            self.count += count
            return self
        X = check_array(X, "X", np.float64)
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"y must have one value per row of X ({X.shape[0]}), got {y.shape[0]}")
        if not np.isfinite(y).all():
            raise ValueError("y must be finite (no NaN or infinity)")
        yc = clip_targets(y, self.target_bounds) - self.centre
        G = self._gram
        for start, stop, F in self.features.iter_features(X):
            # F^T is a Fortran (p, rows) view of the C-ordered chunk: SYRK adds F^T F to G's upper triangle
            G = blas.dsyrk(1.0, F.T, c=G, beta=1.0, trans=0, lower=0, overwrite_c=1)
            self.xty += F.T @ yc[start:stop]
        self._gram = G
        self.count += X.shape[0]
        return self

    @classmethod
    def from_sums(cls, features, target_bounds, gram_upper, xty, count):
        """The statistics whose sums are given: `gram_upper` holds G's upper triangle (the
        rest is ignored), as `statistics_sums` gives it."""
        out = cls(features, target_bounds)
        p = features.output_dim
        gram_upper = np.asarray(gram_upper, dtype=np.float64)
        xty = np.asarray(xty, dtype=np.float64).reshape(-1)
        if gram_upper.shape != (p, p) or xty.shape != (p,):
            raise ValueError(f"the sums must have shapes ({p}, {p}) and ({p},), got {gram_upper.shape} and "
                             f"{xty.shape}")
        out._gram = np.asfortranarray(np.triu(gram_upper))
        out.xty = xty.copy()
        out.count = int(count)
        return out

    @property
    def gram(self):
        """G, (p, p) symmetric."""
        G = self._gram
        return np.triu(G) + np.triu(G, 1).T

    def _check_same(self, other):
        if not isinstance(other, RFStatistics) or isinstance(other, PrivateRFStatistics):
            raise TypeError(f"can only add RFStatistics, got {type(other).__name__}")
        a, b = self.features, other.features
        same = (a.layout == b.layout and a.intercept == b.intercept and a.feature_map == b.feature_map)
        if not same or self.target_bounds != other.target_bounds:
            raise ValueError("statistics of different features or target_bounds cannot be merged")

    def __add__(self, other):
        self._check_same(other)
        out = RFStatistics(self.features, self.target_bounds)
        out._gram = np.asfortranarray(self._gram + other._gram)
        out.xty = self.xty + other.xty
        out.count = self.count + other.count
        return out

    def lambda_min(self):
        """The smallest eigenvalue of G (private: released only through `release_statistics`)."""
        return float(np.linalg.eigvalsh(self.gram)[0])


def statistics_sensitivities(features, label_radius, neighbouring="add_remove"):
    """(Delta_G, Delta_b, Delta_lambda): L2 sensitivities of triu(G) (as a vector), b and
    lambda_min(G) under `neighbouring` (module docstring).

    Parameters
    ----------
    features : RandomFeatures
        'unit' layout: its ``max_abs`` is a = 1 / sqrt(N + 1) (with the intercept).
    label_radius : float
        B, the largest abs(y - c) in the public label range.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'

    Returns
    -------
    (float, float, float)
        add/remove: (sqrt((1 + a^2) / 2), B, 1); replace: (sqrt(1 + a^2), 2 B, 1); each times
        1 + NORM_SLACK (1e-12).

    Raises
    ------
    ValueError
        For a `neighbouring` not in NEIGHBOURING.

    Examples
    --------
    >>> from pysketch.rfm import RandomFeatures, statistics_sensitivities
    >>> features = RandomFeatures(2, 20, length_scale=0.5, layout="unit", intercept=True, random_state=0)
    >>> [round(s, 4) for s in statistics_sensitivities(features, 2.0)]
    [0.7237, 2.0, 1.0]
    """
    if neighbouring not in NEIGHBOURING:
        raise ValueError(f"neighbouring must be one of {NEIGHBOURING}, got {neighbouring!r}")
    a2 = features.max_abs ** 2
    s = (1.0 + NORM_SLACK)
    if neighbouring == "add_remove":
        return s * math.sqrt((1.0 + a2) / 2.0), s * label_radius, s
    return s * math.sqrt(1.0 + a2), 2.0 * s * label_radius, s


class PrivateRFStatistics:
    """Released statistics: noisy G (symmetric), noisy b, noisy lambda_min, and the noise
    scales and privacy record. No clean value is kept.

    Made by :func:`release_statistics`; the arguments are kept as the attributes of the
    same names.

    Parameters
    ----------
    features : RandomFeatures
        The features of the statistics.
    target_bounds : (float, float)
        The public label range (the labels were centred on its centre).
    gram : ndarray of shape (p, p)
        The noisy G, symmetric.
    xty : ndarray of shape (p,)
        The noisy b.
    lambda_min : float
        The noisy smallest eigenvalue of G.
    noise_std : dict
        The noise's standard deviation on each piece: ``{'gram': ..., 'xty': ...,
        'lambda_min': ...}``.
    privacy : dict
        The record of the release (epsilon, delta, neighbouring, mechanism, sensitivity,
        shares, guarantee, secure_noise).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import RandomFeatures, RFStatistics, release_statistics
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 2))
    >>> y = np.sin(3 * X[:, 0]) + X[:, 1]
    >>> features = RandomFeatures(2, 20, length_scale=0.5, layout="unit", intercept=True, random_state=0)
    >>> released = release_statistics(RFStatistics(features, (-2, 2)).update(X, y), 1.0, 1e-6)
    >>> type(released).__name__, released.gram.shape, sorted(released.noise_std)
    ('PrivateRFStatistics', (41, 41), ['gram', 'lambda_min', 'xty'])
    """

    def __init__(self, features, target_bounds, gram, xty, lambda_min, noise_std, privacy):
        self.features = features
        self.target_bounds = target_bounds
        self.gram = gram
        self.xty = xty
        self.lambda_min = lambda_min
        self.noise_std = noise_std  # {'gram': ..., 'xty': ..., 'lambda_min': ...}
        self.privacy = privacy

    @property
    def centre(self):
        lo, hi = self.target_bounds
        return 0.5 * (lo + hi)


def _check_shares(shares):
    try:
        s = np.array(shares, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise ValueError(f"shares must be three positive numbers, got {shares!r}") from None
    if s.shape != (3,) or not np.isfinite(s).all() or (s <= 0).any():
        raise ValueError(f"shares must be three positive finite numbers (G, b, lambda_min), got {shares!r}")
    return s / s.sum()


def release_statistics(stats, epsilon, delta, *, neighbouring="add_remove", shares=DEFAULT_SHARES, accountant=None,
                       insecure_seed=None):
    """Release `stats` with (epsilon, delta)-DP under `neighbouring`: one Gaussian mechanism
    (analytic calibration) on the scaled (triu(G), b, lambda_min) (module docstring).

    Parameters
    ----------
    stats : RFStatistics
        The clean statistics.
    epsilon : float > 0
    delta : float in (0, 1)
        Must be > 0 (the Gaussian mechanism).
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    shares : three positive numbers, default DEFAULT_SHARES (0.5, 0.4, 0.1)
        The shares of the unit sensitivity for (G, b, lambda_min), normalised to sum to 1.
    accountant : BudgetAccountant, optional
        Charged (epsilon, delta) before the noise is drawn.
    insecure_seed : None or int
        None: noise from the OS entropy. An int reproduces the noise and is **insecure**
        (tests and experiments only).

    Returns
    -------
    PrivateRFStatistics
        The noisy G, b and lambda_min, their noise standard deviations and the privacy
        record (guarantee 'worst-case').

    Raises
    ------
    TypeError
        If `stats` is not an RFStatistics (or is a PrivateRFStatistics).
    ValueError
        For an epsilon out of range, a delta not in (0, 1), shares that are not three
        positive finite numbers, a `neighbouring` not in NEIGHBOURING, or an accountant
        whose budget would be exceeded (pysketch.privacy.BudgetError).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import RandomFeatures, RFStatistics, release_statistics
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 2))
    >>> y = np.sin(3 * X[:, 0]) + X[:, 1]
    >>> features = RandomFeatures(2, 20, length_scale=0.5, layout="unit", intercept=True, random_state=0)
    >>> released = release_statistics(RFStatistics(features, (-2, 2)).update(X, y), 1.0, 1e-6)
    >>> released.gram.shape, released.privacy["guarantee"]  # (the noise is not seeded)
    ((41, 41), 'worst-case')
    """
    if not isinstance(stats, RFStatistics) or isinstance(stats, PrivateRFStatistics):
        raise TypeError(f"stats must be RFStatistics, got {type(stats).__name__}")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=True)
    s = _check_shares(shares)
    dG, db, dl = statistics_sensitivities(stats.features, stats.label_radius, neighbouring)
    p = stats.features.output_dim
    iu = np.triu_indices(p)
    G = stats._gram
    wG, wb, wl = math.sqrt(s[0]) / dG, math.sqrt(s[1]) / db, math.sqrt(s[2]) / dl
    v = np.concatenate([G[iu] * wG, stats.xty * wb, [stats.lambda_min() * wl]])
    budget = Budget(epsilon, delta, neighbouring=neighbouring, what="rfm.release_statistics",
                    insecure_seed=insecure_seed)
    mech = budget.part("statistics").mechanism("gaussian", 1.0)  # the scaled vector: sensitivity 1
    budget.charge(accountant)
    noisy = mech.randomise(v)
    sigma = mech.effective_scale_
    k = iu[0].size
    tri = noisy[:k] / wG
    Gn = np.zeros((p, p))
    Gn[iu] = tri
    Gn = Gn + np.triu(Gn, 1).T
    bn = noisy[k:k + p] / wb
    ln = float(noisy[-1] / wl)
    privacy = {"epsilon": epsilon, "delta": delta, "neighbouring": neighbouring, "mechanism": "gaussian (analytic)",
               "sensitivity": {"gram": dG, "xty": db, "lambda_min": dl}, "shares": tuple(float(x) for x in s),
               "guarantee": "worst-case", "secure_noise": mech.secure_noise}
    noise_std = {"gram": sigma / wG, "xty": sigma / wb, "lambda_min": sigma / wl}
    return PrivateRFStatistics(stats.features, stats.target_bounds, Gn, bn, ln, noise_std, privacy)


def solve_ridge(released, regularization="ada"):
    """theta of the ridge problem on released statistics, and the ridge used.

    Parameters
    ----------
    released : PrivateRFStatistics
        The released statistics.
    regularization : 'ada' or float >= 0, default 'ada'
        'ada': the AdaSSP-style rule of the module docstring; a number: that ridge
        (in units of G, i.e. summed over records). The constant feature is not
        penalised.

    Returns
    -------
    theta : ndarray of shape (p,)
        The coefficients; a prediction is ``phi(x) @ theta + released.centre``.
    lam : float
        The ridge used.

    Raises
    ------
    ValueError
        For a `regularization` that is neither 'ada' nor a finite number >= 0.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import RandomFeatures, RFStatistics, release_statistics
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 2))
    >>> y = np.sin(3 * X[:, 0]) + X[:, 1]
    >>> features = RandomFeatures(2, 20, length_scale=0.5, layout="unit", intercept=True, random_state=0)
    >>> released = release_statistics(RFStatistics(features, (-2, 2)).update(X, y), 1.0, 1e-6)
    >>> from pysketch.rfm import solve_ridge
    >>> theta, ridge = solve_ridge(released, 1.0)
    >>> theta.shape, ridge
    ((41,), 1.0)
    """
    p = released.gram.shape[0]
    if isinstance(regularization, str):
        if regularization != "ada":
            raise ValueError(f"regularization must be 'ada' or a number >= 0, got {regularization!r}")
        sg, sl = released.noise_std["gram"], released.noise_std["lambda_min"]
        lam_low = max(released.lambda_min - math.sqrt(2.0 * math.log(1.0 / RIDGE_RHO)) * sl, 0.0)
        lam = max(0.0, RIDGE_EDGE_FRACTION * 2.0 * math.sqrt(p) * sg - lam_low)
    else:
        lam = float(regularization)
        if not (math.isfinite(lam) and lam >= 0):
            raise ValueError(f"regularization must be 'ada' or a finite number >= 0, got {regularization!r}")
    # the constant feature (the intercept) is not penalised, as in scikit-learn: shrinking it
    # would pull predictions to the centre of the public label range instead of the data's mean
    ridge = np.full(p, lam)
    if released.features.intercept:
        ridge[-1] = 0.0
    w, V = np.linalg.eigh(released.gram + np.diag(ridge))
    scale = max(float(np.abs(w).max()), 1e-300)
    # eigenvalues below half the noise's spectral edge are noise: raised to it (a guard
    # against an indefinite system; the penalised directions are above it already)
    floor = max(math.sqrt(p) * released.noise_std["gram"], 1e-12 * scale)
    w = np.maximum(w, floor)
    theta = V @ ((V.T @ released.xty) / w)
    return theta, lam


def _fission(released, rng):
    """Two statistics with independent noise whose average is `released` (post-processing):
    ``released +- w`` with fresh ``w`` of the release's own noise law (module docstring of
    `choose_against_intercept`)."""
    p = released.gram.shape[0]
    sg, sb, sl = released.noise_std["gram"], released.noise_std["xty"], released.noise_std["lambda_min"]
    W = np.triu(rng.standard_normal((p, p)) * sg)
    W = W + np.triu(W, 1).T
    wb = rng.standard_normal(p) * sb
    wl = float(rng.standard_normal()) * sl
    std = {k: v * math.sqrt(2.0) for k, v in released.noise_std.items()}
    return [PrivateRFStatistics(released.features, released.target_bounds, released.gram + s * W,
                                released.xty + s * wb, released.lambda_min + s * wl, std, released.privacy)
            for s in (1.0, -1.0)]


def intercept_only(released):
    """The coefficients of the intercept-only model (the constant feature alone).

    Parameters
    ----------
    released : PrivateRFStatistics
        The released statistics.

    Returns
    -------
    numpy.ndarray of shape (p,)
        Zeros but for the constant feature's coefficient, b_p / G_pp (the released mean of
        y - c over the records, times sqrt(N + 1)); all zeros when the features have no
        constant or G_pp <= 0.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import RandomFeatures, RFStatistics, release_statistics
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 2))
    >>> y = np.sin(3 * X[:, 0]) + X[:, 1]
    >>> features = RandomFeatures(2, 20, length_scale=0.5, layout="unit", intercept=True, random_state=0)
    >>> released = release_statistics(RFStatistics(features, (-2, 2)).update(X, y), 1.0, 1e-6)
    >>> from pysketch.rfm.ssp import intercept_only
    >>> theta = intercept_only(released)
    >>> theta.shape, bool((theta[:-1] == 0).all())
    ((41,), True)
    """
    p = released.gram.shape[0]
    theta = np.zeros(p)
    g = released.gram[-1, -1]
    if released.features.intercept and g > 0:
        theta[-1] = released.xty[-1] / g
    return theta


def _risk_difference(theta, theta0, held_out):
    """(R(theta) - R(theta0)) / B^2 on the held-out statistics, R(t) = t^T G t - 2 t^T b (the
    sum of (y - c - phi^T t)^2 over records, less its t-free part), B the label radius."""
    # in units of the label radius B (theta and b scale with the labels; G does not), so that
    # labels at any magnitude neither overflow nor underflow: the sign is what decides
    lo, hi = held_out.target_bounds
    B = 0.5 * (hi - lo)
    G, b = held_out.gram, held_out.xty / B
    t, t0 = theta / B, theta0 / B
    return float(t @ G @ t - 2.0 * t @ b - t0 @ G @ t0 + 2.0 * t0 @ b)


def choose_against_intercept(released, regularization="ada", *, random_state=None):
    r"""Private model selection between the ridge model and the intercept-only model (the
    private mean), by post-processing `released` alone: no privacy is spent.

    **Gaussian fission.** With ``Z`` the release's Gaussian noise (standard deviations
    ``released.noise_std``) and ``W`` a fresh draw of the same law, ``A = released + W``
    and ``B = released - W`` carry the noises ``Z + W`` and ``Z - W``: jointly Gaussian and
    uncorrelated, hence independent, each of twice the variance, and ``(A + B) / 2`` is the
    release itself (the "data fission" of Leiner, Duan, Wasserman & Ramdas 2023, "Data
    fission: splitting a single data point", JASA, sec. 2, P2 for the Gaussian; the
    library's noise is the discrete Gaussian of sigma >= 2^30 grid steps, for which this
    holds up to that resolution). A model fitted on A is then scored on B *without bias*:
    ``E_B[t^T G_B t - 2 t^T b_B] = t^T G t - 2 t^T b``, which is the training risk
    ``sum (y - c - phi^T t)^2`` less a constant, for every t independent of B's noise.

    The ridge model and the intercept-only model are fitted on A and scored on B, and
    the other way round; this is repeated for FISSION_REPEATS (8) independent draws of W
    and the mean of the risk differences decides (the model is kept when it is below 0).
    Each term is an unbiased estimate of the risk difference of models fitted on a half, so
    their mean is too, with less of the variance W adds (on the benchmark's f2, one fission
    kept a harmful ridge model in 8 of 30 fits, eight in 4 of 30). The randomness of W is
    not secret (post-processing): it comes from `random_state` (None: fresh OS entropy).
    A limit: the models compared are fitted on halves twice as noisy as the release, so
    where the noise dominates (small n) the comparison leans to the intercept-only model
    even when the model fitted on the whole release would beat it.

    Parameters
    ----------
    released : PrivateRFStatistics
        The released statistics.
    regularization : 'ada' or float >= 0, default 'ada'
        The ridge of the models compared (:func:`solve_ridge`).
    random_state : None, int or numpy.random.Generator
        The (public) randomness of the fissions' W.

    Returns
    -------
    keep_model : bool
        True when the ridge model is kept (risk_difference < 0).
    risk_difference : float
        The sum, over the FISSION_REPEATS fissions and the two ways round, of
        (R(ridge) - R(intercept-only)) / B^2 on the held-out half, divided by
        FISSION_REPEATS: twice the mean of the risk differences (the sign is the mean's).

    Raises
    ------
    ValueError
        For a `regularization` that is neither 'ada' nor a finite number >= 0.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import RandomFeatures, RFStatistics, release_statistics
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(-1, 1, size=(20000, 2))
    >>> y = np.sin(3 * X[:, 0]) + X[:, 1]
    >>> features = RandomFeatures(2, 20, length_scale=0.5, layout="unit", intercept=True, random_state=0)
    >>> released = release_statistics(RFStatistics(features, (-2, 2)).update(X, y), 1.0, 1e-6)
    >>> from pysketch.rfm.ssp import choose_against_intercept
    >>> keep, difference = choose_against_intercept(released, random_state=0)
    >>> keep  # y depends strongly on x: the ridge model is kept
    True
    """
    from .._random import as_generator

    rng = as_generator(random_state)
    diff = 0.0
    for _ in range(FISSION_REPEATS):
        A, B = _fission(released, rng)
        for fit, held in ((A, B), (B, A)):
            theta, _ = solve_ridge(fit, regularization)
            diff += _risk_difference(theta, intercept_only(fit), held)
    diff /= FISSION_REPEATS
    return diff < 0.0, diff
