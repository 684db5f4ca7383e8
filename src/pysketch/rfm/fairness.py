r"""Excess risk of a private release and its gap between groups (Liao, Needell & Xue 2024, Sec. 3.4
and 4.2).

For a model linear in its parameters, prediction ``phi(x)^T theta``, the risk on a data
set D is the mean squared error ``L(theta, D) = mean_{(x, y) in D} (phi(x)^T theta - y)^2``.
The *excess risk* of a random release ``theta_hat`` against the non-private
``theta_sharp`` is

    R(D) = E L(theta_hat, D) - L(theta_sharp, D)

(the expectation over the mechanism's noise), and the *excess risk gap* of a group
``D_a`` is ``xi_a = |R(D) - R(D_a)|`` (Tran, Dinh and Fioretto; the paper's sec. 3.4).

**Exact form** (derived here). Write the release as ``theta_hat = theta_bar + z`` with
``E z = 0`` and ``Cov z = C``. Output perturbation has ``theta_bar = theta_sharp`` and
``C = s^2 I``; objective perturbation has a bias ``theta_bar != theta_sharp`` and a
matrix C. Then, with ``b = theta_bar - theta_sharp`` and the residual
``r(x, y) = phi(x)^T theta_sharp - y``, for any data set D_a

    E L(theta_hat, D_a) - L(theta_sharp, D_a)
        = mean_{D_a} [(phi^T b)^2 + 2 r phi^T b]       (= L(theta_bar) - L(theta_sharp))
        + mean_{D_a} phi(x)^T C phi(x)

exactly: the cross term ``2 (phi^T theta_bar - y) phi^T z`` has mean zero. For output
perturbation the gap is ``s^2 |mean_D ||phi||^2 - mean_{D_a} ||phi||^2|``, which is 0
when every group has the same mean squared feature norm -- the paper's fairness argument
for random features (Liao, Needell & Xue 2024, Sec. 3.4); with the ``'unit'`` layout of
:class:`~pysketch.rfm.RandomFeatures` the norm is exactly 1 for every x.

**Monte Carlo** with common random numbers. Given T draws ``theta_hat_t`` (or a function
that draws them), the excess loss of each draw is evaluated on D and on every group with
*the same* draw, and the gap estimate of draw t is the signed difference
``d_t(a) = [L(theta_t, D) - L(theta_sharp, D)] - [L(theta_t, D_a) - L(theta_sharp, D_a)]``;
the reported gap is ``|mean_t d_t(a)|`` with the standard error ``std_t d_t(a) / sqrt(T)``.
The common draws cancel most of the noise that independent draws for D and D_a would
leave (with 100 independent draws, as in the paper's Sec. 4.2, the plotted gaps are mostly
Monte Carlo noise). The mean of ``|d_t|`` is *not* used: it is biased upwards. Each excess
loss is computed from ``theta_t - theta_sharp`` (``mean[(phi^T delta)^2 + 2 r phi^T
delta]``) rather than as a difference of two losses, so a small noise on a large residual
loses no precision. The draws are evaluated a block of rows at a time, one GEMM per block
(no loop over draws), in memory of about ``chunk_bytes``.
"""

import dataclasses
import math
import numbers
from typing import Optional

import numpy as np

from .._checks import check_int, check_size
from .._random import as_generator

__all__ = ["ExcessRisk", "GroupExcessRisk", "ExcessRiskGaps", "excess_risk", "excess_risk_gaps"]

#: About how many bytes the per-block work arrays of the Monte Carlo estimate take.
DEFAULT_CHUNK_BYTES = 1 << 24

#: Relative tolerance of the symmetry and positive semi-definiteness checks of noise_cov.
_COV_RTOL = 1e-10

#: Default number of draws when ``draws`` is a callable.
DEFAULT_N_DRAWS = 100


# ---------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ExcessRisk:
    """The excess risk R(D) of a release on one data set.

    What :func:`excess_risk` returns (and ``ExcessRiskGaps.overall``); a frozen dataclass,
    each parameter kept as the attribute of the same name.

    Parameters
    ----------
    method : {'exact', 'monte_carlo'}
    risk : float
        R(D). Exact, or the Monte Carlo mean over the draws.
    risk_se : float or None
        The Monte Carlo standard error of `risk` (None for 'exact').
    n_draws : int or None
        T, the number of draws (None for 'exact').
    n_rows : int
        The number of records of D.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import excess_risk
    >>> F, theta = np.ones((10, 4)), np.arange(4.0)
    >>> result = excess_risk(F, F @ theta, theta, noise_cov=0.01)  # 0.01 ||phi||^2
    >>> result.method, round(result.risk, 9), result.n_rows
    ('exact', 0.04, 10)
    """

    method: str
    risk: float
    risk_se: Optional[float]
    n_draws: Optional[int]
    n_rows: int


@dataclasses.dataclass(frozen=True)
class GroupExcessRisk:
    """The excess risk of one group and its gap to the whole data set.

    One value of ``ExcessRiskGaps.groups`` (:func:`excess_risk_gaps`); a frozen
    dataclass, each parameter kept as the attribute of the same name.

    Parameters
    ----------
    label : hashable
        The group's label.
    size : int
        The number of records of D_a.
    risk : float
        R(D_a).
    signed_gap : float
        R(D) - R(D_a) (Monte Carlo: the mean over draws of the per-draw difference).
    gap : float
        xi_a = abs(signed_gap).
    risk_se, gap_se : float or None
        Monte Carlo standard errors of `risk` and of `signed_gap` (the latter computed from
        the per-draw differences, so with common random numbers); None for 'exact'.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import excess_risk_gaps
    >>> F = np.vstack([np.tile([1.0, 0.0, 0.0], (5, 1)), np.ones((5, 3))])  # ||phi||^2: 1, then 3
    >>> theta = np.ones(3)
    >>> result = excess_risk_gaps(F, F @ theta, ["a"] * 5 + ["b"] * 5, theta, noise_cov=0.5)
    >>> group = result["b"]
    >>> group.size, group.risk, group.signed_gap, group.gap
    (5, 1.5, -0.5, 0.5)
    """

    label: object
    size: int
    risk: float
    signed_gap: float
    gap: float
    risk_se: Optional[float]
    gap_se: Optional[float]


@dataclasses.dataclass(frozen=True)
class ExcessRiskGaps:
    """Excess risk of the whole data set and of each group, with the gaps.

    What :func:`excess_risk_gaps` returns; a frozen dataclass, each parameter kept as the
    attribute of the same name. ``result[label]`` is ``result.groups[label]``,
    ``len(result)`` the number of groups and ``iter(result)`` their labels;
    ``result.max_gap`` is the largest gap and ``result.gaps`` the gap of each label.

    Parameters
    ----------
    method : {'exact', 'monte_carlo'}
    overall : ExcessRisk
        R(D).
    groups : dict
        label -> :class:`GroupExcessRisk`, in the order of the labels (sorted when the
        labels are sortable, else in order of first appearance, or as given by ``labels``).

    Raises
    ------
    KeyError
        ``result[label]`` for a label that is not a group.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import excess_risk_gaps
    >>> F = np.vstack([np.tile([1.0, 0.0, 0.0], (5, 1)), np.ones((5, 3))])  # ||phi||^2: 1, then 3
    >>> theta = np.ones(3)
    >>> result = excess_risk_gaps(F, F @ theta, ["a"] * 5 + ["b"] * 5, theta, noise_cov=0.5)
    >>> result.overall.risk, result.gaps, result.max_gap
    (1.0, {'a': 0.5, 'b': 0.5}, 0.5)
    """

    method: str
    overall: ExcessRisk
    groups: dict

    def __getitem__(self, label):
        return self.groups[label]

    def __iter__(self):
        return iter(self.groups)

    def __len__(self):
        return len(self.groups)

    @property
    def max_gap(self):
        """max_a xi_a."""
        return max(g.gap for g in self.groups.values())

    @property
    def gaps(self):
        """label -> xi_a."""
        return {label: g.gap for label, g in self.groups.items()}


# ---------------------------------------------------------------------------------------
# Input checks
# ---------------------------------------------------------------------------------------


def _real_matrix(value, name, shape=None):
    """A finite float64 array; ``shape`` a tuple with None for any length."""
    if isinstance(value, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a masked array")
    try:
        A = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers; got {type(value).__name__}") from exc
    if A.dtype.kind == "c":
        raise TypeError(f"{name} must hold real numbers; got complex dtype {A.dtype}")
    if A.dtype.kind not in "biuf":
        try:
            A = A.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be an array of real numbers; got dtype {A.dtype}") from exc
    if shape is not None:
        ok = A.ndim == len(shape) and all(s is None or s == k for s, k in zip(shape, A.shape))
        if not ok:
            want = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {want}; got shape {A.shape}")
    A = np.asarray(A, dtype=np.float64)
    if not np.isfinite(A).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return A


def _check_problem(F, y, theta_sharp):
    F = _real_matrix(F, "F", (None, None))
    n, p = F.shape
    if n < 1 or p < 1:
        raise ValueError(f"F must have at least one row and one column; got shape {F.shape}")
    y = _real_matrix(y, "y")
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},) (one label per row of F); got shape {y.shape}")
    theta_sharp = _real_matrix(theta_sharp, "theta_sharp")
    if theta_sharp.shape != (p,):
        raise ValueError(f"theta_sharp must have shape ({p},) (one entry per column of F); "
                         f"got shape {theta_sharp.shape}")
    return F, y, theta_sharp


def _check_noise_cov(noise_cov, p):
    """('scalar', float) | ('diag', (p,)) | ('matrix', (p, p)), validated as a covariance."""
    if isinstance(noise_cov, numbers.Real) and not isinstance(noise_cov, (bool, np.bool_)) or (
            isinstance(noise_cov, np.ndarray) and noise_cov.ndim == 0):
        s2 = float(noise_cov)
        if not (math.isfinite(s2) and s2 >= 0):
            raise ValueError(f"noise_cov must be a finite number >= 0 (a variance); got {noise_cov!r}")
        return "scalar", s2
    if isinstance(noise_cov, (bool, np.bool_)):
        raise TypeError("noise_cov must be a variance, a (p,) diagonal or a (p, p) matrix; got a bool")
    C = _real_matrix(noise_cov, "noise_cov")
    if C.shape == (p,):
        if (C < 0).any():
            raise ValueError("noise_cov: a diagonal covariance must have entries >= 0")
        return "diag", C
    if C.shape != (p, p):
        raise ValueError(f"noise_cov must be a number, a ({p},) diagonal or a ({p}, {p}) matrix; "
                         f"got shape {C.shape}")
    scale = max(float(np.abs(C).max()), np.finfo(float).tiny)
    if np.abs(C - C.T).max() > _COV_RTOL * scale * 1e3:
        raise ValueError("noise_cov must be symmetric")
    C = 0.5 * (C + C.T)
    lowest = float(np.linalg.eigvalsh(C)[0])
    if lowest < -1e3 * _COV_RTOL * scale * p:
        raise ValueError(f"noise_cov must be positive semi-definite; its smallest eigenvalue is {lowest:.3g}")
    return "matrix", C


def _group_codes(groups, n, labels=None):
    """(codes (n,) int64 in 0..k-1, list of k labels) from per-row labels."""
    if groups is None:
        raise ValueError("groups is required: one label per row of F")
    if isinstance(groups, np.ndarray) and groups.ndim != 1:
        raise ValueError(f"groups must be one label per row of F (shape ({n},)); got shape {groups.shape}")
    if labels is None and isinstance(groups, np.ndarray) and groups.dtype.kind in "biuUS":
        # fast path for a numpy array of ints, bools or strings (no NaN possible)
        if groups.shape != (n,):
            raise ValueError(f"groups must have one label per row of F ({n}); got {groups.shape[0]}")
        uniques, codes = np.unique(groups, return_inverse=True)
        return codes.reshape(-1).astype(np.int64), uniques.tolist()
    values = list(groups)
    if len(values) != n:
        raise ValueError(f"groups must have one label per row of F ({n}); got {len(values)}")
    for v in values:
        try:
            hash(v)
        except TypeError as exc:
            raise TypeError(f"groups: labels must be hashable; got {v!r}") from exc
        if isinstance(v, (float, np.floating)) and math.isnan(v):
            raise ValueError("groups: NaN is not a valid label (NaN != NaN)")
    # numpy scalars as Python scalars, so that result[label] works with plain labels
    values = [v.item() if isinstance(v, np.generic) else v for v in values]
    if labels is None:
        seen = list(dict.fromkeys(values))
        try:
            order = sorted(seen)
        except TypeError:
            order = seen
    else:
        order = [v.item() if isinstance(v, np.generic) else v for v in labels]
        if len(set(order)) != len(order):
            raise ValueError("labels must not repeat")
        if not order:
            raise ValueError("labels must name at least one group")
    index = {label: i for i, label in enumerate(order)}
    codes = np.empty(n, dtype=np.int64)
    for row, v in enumerate(values):
        code = index.get(v)
        if code is None:
            raise ValueError(f"groups: the label {v!r} of row {row} is not in labels")
        codes[row] = code
    sizes = np.bincount(codes, minlength=len(order))
    empty = [order[i] for i in np.flatnonzero(sizes == 0)]
    if empty:
        raise ValueError(f"groups: no row has the label(s) {empty}; every group must be non-empty")
    return codes, order


def _draws_matrix(draws, p, n_draws, random_state):
    """The (T, p) draws, from an array or from draws(rng, T)."""
    if callable(draws):
        # the (T, p) draws of the callable and their checked copy
        T = check_size(DEFAULT_N_DRAWS if n_draws is None else n_draws, "n_draws", minimum=2,
                       nbytes=lambda v: v * p * 16, what=f"for draws of p = {p} coefficients")
        rng = as_generator(random_state)
        Theta = draws(rng, T)
        Theta = _real_matrix(Theta, "draws(rng, n_draws)")
        if Theta.shape != (T, p):
            raise ValueError(f"draws(rng, n_draws) must return shape ({T}, {p}); got {Theta.shape}")
        return Theta
    if n_draws is not None or random_state is not None:
        raise ValueError("n_draws and random_state are only for a callable draws")
    Theta = _real_matrix(draws, "draws")
    if Theta.ndim != 2 or Theta.shape[1] != p:
        raise ValueError(f"draws must have shape (T, {p}) (one draw of theta_hat per row); got {Theta.shape}")
    if Theta.shape[0] < 2:
        raise ValueError(f"draws must hold at least 2 draws for a standard error; got {Theta.shape[0]}")
    return Theta


def _method(noise_cov, draws, theta_mean):
    if (noise_cov is None) == (draws is None):
        raise ValueError("give exactly one of noise_cov (the exact form) and draws (Monte Carlo)")
    if draws is not None and theta_mean is not None:
        raise ValueError("theta_mean is for the exact form (with noise_cov); the draws carry their own mean")
    return "exact" if draws is None else "monte_carlo"


def _chunk_rows(chunk_bytes, width):
    if chunk_bytes is None:
        chunk_bytes = DEFAULT_CHUNK_BYTES
    chunk_bytes = check_int(chunk_bytes, "chunk_bytes")
    return max(1, chunk_bytes // (8 * max(1, width)))


# ---------------------------------------------------------------------------------------
# The two estimators, per group sums
# ---------------------------------------------------------------------------------------


def _exact_sums(F, y, theta_sharp, theta_mean, cov, codes, k, chunk_bytes):
    """Per group: the sum over rows of (phi^T b)^2 + 2 r phi^T b + phi^T C phi, (k,)."""
    n, p = F.shape
    kind, C = cov
    b = None if theta_mean is None else theta_mean - theta_sharp
    if b is not None and not b.any():
        b = None
    sums = np.zeros(k)
    step = _chunk_rows(chunk_bytes, p if kind == "matrix" else 4)
    for start in range(0, n, step):
        Fc = F[start:start + step]
        if kind == "scalar":
            per_row = C * np.einsum("ij,ij->i", Fc, Fc)
        elif kind == "diag":
            per_row = np.einsum("ij,ij->i", Fc * C, Fc)
        else:
            per_row = np.einsum("ij,ij->i", Fc @ C, Fc)
        if b is not None:
            v = Fc @ b
            r = Fc @ theta_sharp - y[start:start + step]
            per_row += v * v + 2.0 * r * v
        sums += np.bincount(codes[start:start + step], weights=per_row, minlength=k)
    return sums


def _monte_carlo_sums(F, y, theta_sharp, Theta, codes, k, chunk_bytes):
    """Per group and draw: the sum over rows of the excess loss of the draw, (k, T)."""
    n, p = F.shape
    T = Theta.shape[0]
    Delta = Theta - theta_sharp                    # (T, p)
    DeltaT = np.ascontiguousarray(Delta.T)        # (p, T)
    sums = np.zeros((k, T))
    step = _chunk_rows(chunk_bytes, 2 * T + k)
    for start in range(0, n, step):
        Fc = F[start:start + step]
        r = Fc @ theta_sharp - y[start:start + step]     # residual of theta_sharp, (rows,)
        U = Fc @ DeltaT                                   # phi^T delta_t, (rows, T)
        U *= U + 2.0 * r[:, None]                         # (u + 2r) u = excess loss of row, draw
        onehot = np.zeros((Fc.shape[0], k))
        onehot[np.arange(Fc.shape[0]), codes[start:start + step]] = 1.0
        sums += onehot.T @ U                              # group sums, one GEMM
    return sums


def _stderr(samples):
    return float(np.std(samples, ddof=1) / math.sqrt(samples.shape[-1]))


# ---------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------


def excess_risk(F, y, theta_sharp, *, theta_mean=None, noise_cov=None, draws=None, n_draws=None,
                random_state=None, chunk_bytes=None):
    """The excess risk ``R(D) = E L(theta_hat, D) - L(theta_sharp, D)`` of a release.

    Parameters
    ----------
    F : array of shape (n, p)
        The features phi(x) of the rows of D (e.g. ``RandomFeatures.transform(X)``, or X
        itself for a linear model).
    y : array of shape (n,)
        The labels.
    theta_sharp : array of shape (p,)
        The non-private parameters the excess is measured against.
    theta_mean : array of shape (p,), optional
        Exact form only: ``E theta_hat`` (default ``theta_sharp``: unbiased output
        perturbation).
    noise_cov : float, array of shape (p,) or (p, p), optional
        Exact form: ``Cov theta_hat``, as a variance s^2 (``s^2 I``), a diagonal, or a
        symmetric positive semi-definite matrix.
    draws : array of shape (T, p) or callable, optional
        Monte Carlo: T >= 2 draws of theta_hat, or ``draws(rng, T)`` returning them
        (``rng`` from `random_state`, T = `n_draws`, default 100).
    n_draws, random_state :
        For a callable `draws` only.
    chunk_bytes : int, optional
        About how much memory the blocks of rows take (default 16 MiB).
        Exactly one of `noise_cov` and `draws` must be given; it decides the method.

    Returns
    -------
    ExcessRisk

    Raises
    ------
    ValueError
        For none or both of `noise_cov` and `draws`; `theta_mean` with `draws`; `n_draws`
        or `random_state` without a callable `draws`; an F, y, theta_sharp, theta_mean or
        draws of the wrong shape or not finite; a `noise_cov` that is a negative or
        non-finite variance, a diagonal with a negative entry, or a matrix that is not
        symmetric positive semi-definite; fewer than 2 draws; a `chunk_bytes` or `n_draws`
        out of range (TypeError for a non-integer).
    TypeError
        For inputs that are masked arrays or do not hold real numbers, or a bool
        `noise_cov`.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import excess_risk
    >>> F, theta = np.ones((10, 4)), np.arange(4.0)
    >>> round(excess_risk(F, F @ theta, theta, noise_cov=0.01).risk, 9)  # exact: 0.01 ||phi||^2
    0.04
    >>> draws = theta + 0.1 * np.random.default_rng(0).standard_normal((1000, 4))
    >>> mc = excess_risk(F, F @ theta, theta, draws=draws)  # Monte Carlo, with its standard error
    >>> mc.method, bool(abs(mc.risk - 0.04) < 4 * mc.risk_se)
    ('monte_carlo', True)
    """
    method = _method(noise_cov, draws, theta_mean)
    F, y, theta_sharp = _check_problem(F, y, theta_sharp)
    codes = np.zeros(F.shape[0], dtype=np.int64)
    return _evaluate(method, F, y, theta_sharp, codes, [None], theta_mean, noise_cov, draws, n_draws,
                     random_state, chunk_bytes).overall


def excess_risk_gaps(F, y, groups, theta_sharp, *, theta_mean=None, noise_cov=None, draws=None,
                     n_draws=None, random_state=None, labels=None, chunk_bytes=None):
    """The excess risk of D and of each group D_a, and the gaps ``xi_a = |R(D) - R(D_a)|``.

    Parameters
    ----------
    F, y, theta_sharp, theta_mean, noise_cov, draws, n_draws, random_state, chunk_bytes :
        As in :func:`excess_risk`.
    groups : sequence of length n
        The group of each row: any hashable labels (ints, strings, ...; not NaN). D is the
        union of the groups.
    labels : sequence, optional
        The groups to report and their order; every row's label must be among them, and
        each must have at least one row. Default: the labels present, sorted when they can
        be.

    Returns
    -------
    ExcessRiskGaps

    Raises
    ------
    ValueError
        As :func:`excess_risk`, and for `groups` missing, not one label per row of F,
        holding NaN or a label not in `labels`; `labels` that repeat, are empty or name a
        group with no row.
    TypeError
        As :func:`excess_risk`, and for an unhashable label.

    Notes
    -----
    Monte Carlo (``draws``) evaluates every draw on D and on every group (common random
    numbers); the gap of a group is ``|mean_t d_t|`` of the per-draw differences
    ``d_t = excess_t(D) - excess_t(D_a)``, its standard error ``std(d_t) / sqrt(T)``.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import excess_risk_gaps
    >>> F = np.vstack([np.tile([1.0, 0.0, 0.0], (5, 1)), np.ones((5, 3))])  # ||phi||^2: 1, then 3
    >>> theta = np.ones(3)
    >>> result = excess_risk_gaps(F, F @ theta, ["a"] * 5 + ["b"] * 5, theta, noise_cov=0.5)
    >>> result.overall.risk, result["a"].risk, result.max_gap  # 0.5 times 2, 1 and 3
    (1.0, 0.5, 0.5)
    """
    method = _method(noise_cov, draws, theta_mean)
    F, y, theta_sharp = _check_problem(F, y, theta_sharp)
    codes, order = _group_codes(groups, F.shape[0], labels)
    return _evaluate(method, F, y, theta_sharp, codes, order, theta_mean, noise_cov, draws, n_draws,
                     random_state, chunk_bytes)


def _evaluate(method, F, y, theta_sharp, codes, order, theta_mean, noise_cov, draws, n_draws,
              random_state, chunk_bytes):
    """The ExcessRiskGaps of checked inputs, rows coded 0..k-1 for the labels `order`."""
    n, p = F.shape
    k = len(order)
    sizes = np.bincount(codes, minlength=k).astype(np.float64)

    if method == "exact":
        if theta_mean is not None:
            theta_mean = _real_matrix(theta_mean, "theta_mean")
            if theta_mean.shape != (p,):
                raise ValueError(f"theta_mean must have shape ({p},); got shape {theta_mean.shape}")
        cov = _check_noise_cov(noise_cov, p)
        sums = _exact_sums(F, y, theta_sharp, theta_mean, cov, codes, k, chunk_bytes)
        risk_all = float(sums.sum() / n)
        overall = ExcessRisk("exact", risk_all, None, None, n)
        per_group = {}
        for i, label in enumerate(order):
            risk_a = float(sums[i] / sizes[i])
            signed = risk_all - risk_a
            per_group[label] = GroupExcessRisk(label, int(sizes[i]), risk_a, signed, abs(signed), None, None)
        return ExcessRiskGaps("exact", overall, per_group)

    Theta = _draws_matrix(draws, p, n_draws, random_state)
    T = Theta.shape[0]
    sums = _monte_carlo_sums(F, y, theta_sharp, Theta, codes, k, chunk_bytes)   # (k, T)
    excess_all = sums.sum(axis=0) / n                                          # (T,)
    excess_groups = sums / sizes[:, None]                                      # (k, T)
    overall = ExcessRisk("monte_carlo", float(excess_all.mean()), _stderr(excess_all), T, n)
    per_group = {}
    for i, label in enumerate(order):
        diff = excess_all - excess_groups[i]
        signed = float(diff.mean())
        per_group[label] = GroupExcessRisk(label, int(sizes[i]), float(excess_groups[i].mean()), signed,
                                           abs(signed), _stderr(excess_groups[i]), _stderr(diff))
    return ExcessRiskGaps("monte_carlo", overall, per_group)
