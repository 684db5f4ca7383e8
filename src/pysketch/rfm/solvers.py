r"""Min-norm solvers for the random-feature model and the row-action loops (Liao, Needell & Xue 2024,
Sec. 2.1-2.2 (the min-norm solution) and Sec. 4 (the DP-SGD baseline)).

In the over-parametrized regime (m samples, p >= m features; paper sec. 2.2) the model of
the paper is the minimum-norm interpolant, paper eq. (3):

    c# = argmin { ||c||_2 : F c = y } = F^T (F F^T)^{-1} y = F^+ y,

for a feature matrix F (m x p) of full row rank. :func:`min_norm` computes it three ways:

``'cholesky'``
    Cholesky factorization of the m x m Gram matrix G = F F^T, then c = F^T G^{-1} y. The
    cheapest, O(m^2 p) for G and O(m^3) for the factor; it squares the
    condition number of F, so it refuses a Gram matrix that is not numerically positive
    definite (use 'pinv' then).
``'pinv'``
    The SVD-based minimum-norm least-squares solution (``numpy.linalg.lstsq``, the same
    vector as ``numpy.linalg.pinv(F) @ y`` up to the rank cut-off): the paper's solver
    (sec. 4.1). Works for any shape and rank; when F is rank deficient it returns the
    min-norm least-squares solution, which does not interpolate.
``'kaczmarz'``
    The randomized Kaczmarz method from x0 = 0 with rows drawn uniformly with replacement,
    as in the authors' public code, github.com/liaochunyang/DPRFM. Each iterate stays in the row space
    of F, so on a consistent system it converges to c# (Strohmer and Vershynin's linear
    rate, [40, 41] of the paper). The paper runs **m iterations**, which do *not* interpolate
    (train residual about 70-80 % of ||y|| on the std-40 cos features, measured): the
    result is an early-stopped, implicitly regularized estimate, and `info` reports its
    residual. Pass a larger `n_iter` and a `tol` to converge.

:func:`kaczmarz` and :func:`sgd` are the loops themselves, with the row sequence drawn here
and the updates done by the C++ core (``pysketch._core.row_action``, one call per block of
rows; no Python loop over samples):

* Kaczmarz: x <- x + (y_i - <F_i, x>) / ||F_i||^2 F_i (rows of zero norm are skipped).
* SGD: x <- x - step (<F_i, x> - y_i) F_i, the gradient of (1/2)(<F_i, x> - y_i)^2, as in the
  authors' ``DPRF_SGD`` (the baseline of Wang and Guo [25] in Liao, Needell & Xue 2024, Sec. 4; in their code: zero
  init, batch size 1, step 1/m, m iterations).

Row sequences are drawn from `random_state` in fixed blocks of 65536 indices, so a run of n
iterations is the first n updates of any longer run with the same seed (in particular
``min_norm(..., 'kaczmarz', tol=...)`` stopping after k iterations returns what
``kaczmarz(F, y, k)`` returns with the same seed).
"""

import math
import numbers

import numpy as np
from scipy import linalg

from .. import _core
from .._checks import check_array, check_int, check_positive
from .._random import as_generator

__all__ = ["min_norm", "kaczmarz", "sgd", "METHODS", "ROW_SAMPLING"]

#: The methods of :func:`min_norm`.
METHODS = ("cholesky", "pinv", "kaczmarz")

#: How :func:`kaczmarz` draws its rows.
ROW_SAMPLING = ("uniform", "norm")

#: Row indices drawn at a time (the stream depends on this constant, never on n_iter).
_BLOCK = 1 << 16


# --------------------------------------------------------------------------- argument checks

def _matrix(F):
    """F as a C-contiguous finite float64 (m, p) array with m, p >= 1, of a magnitude whose
    squares are floats (the Gram matrix F F^T, the row norms ||F_i||^2): ValueError about
    F's scale otherwise (_checks.check_data_magnitude)."""
    from .._checks import check_data_magnitude

    F = check_array(F, "F", np.float64)
    check_data_magnitude(np.abs(F).max(), "F")
    return F


def _vector(v, name, size, what):
    """v as a 1-D C-contiguous finite float64 array of `size` entries."""
    if isinstance(v, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a masked array")
    a = np.asarray(v)
    if a.dtype.kind == "c":
        raise TypeError(f"{name} must hold real numbers; got complex dtype {a.dtype}")
    if a.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of real numbers; got dtype {a.dtype}")
    if a.ndim != 1 or a.shape[0] != size:
        raise ValueError(f"{name} must be a 1-D array of {size} entries ({what}); got shape {a.shape}")
    a = np.ascontiguousarray(a, dtype=np.float64)
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinity")
    return a


def _start(x0, p):
    """A fresh float64 copy of the starting point (zeros when x0 is None)."""
    if x0 is None:
        return np.zeros(p)
    return _vector(x0, "x0", p, "one per column of F").copy()


def _check_tol(tol):
    if tol is None:
        return None
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real) or not (
            math.isfinite(tol) and tol > 0):
        raise ValueError(f"tol must be a positive finite number or None, got {tol!r}")
    return float(tol)


def _residual(F, y, x):
    """(||F x - y||, ||F x - y|| / ||y||; 0 when both are 0, inf when only ||y|| is)."""
    res = float(np.linalg.norm(F @ x - y))
    ny = float(np.linalg.norm(y))
    if ny > 0:
        return res, res / ny
    return res, (0.0 if res == 0 else math.inf)


# --------------------------------------------------------------------------- the row loops

def _row_sampler(F, rows, rng):
    """A function size -> int64 row indices, drawn with replacement from rng."""
    m = F.shape[0]
    if rows == "uniform":
        return lambda size: rng.integers(0, m, size=size, dtype=np.int64)
    if rows == "norm":
        weights = np.einsum("ij,ij->i", F, F)
        total = float(weights.sum())
        if not total > 0:
            raise ValueError("rows='norm' needs a row of F with a nonzero norm; F is all zeros")
        prob = weights / total
        return lambda size: rng.choice(m, size=size, p=prob).astype(np.int64, copy=False)
    raise ValueError(f"rows must be one of {ROW_SAMPLING}, got {rows!r}")


def _iterate(F, y, x, mode, step, n_iter, draw, check_every=None, tol=None):
    """Run up to n_iter updates of x in place with rows from draw(_BLOCK), in blocks.

    With a tol, the relative residual is computed after every `check_every` updates and the
    loop stops once it is below tol. Returns (iterations done, converged or None)."""
    done = 0
    block = np.empty(0, dtype=np.int64)
    used = 0
    next_check = check_every if tol is not None else None
    while done < n_iter:
        if used == block.shape[0]:
            block = draw(_BLOCK)
            used = 0
        stop = min(n_iter - done, block.shape[0] - used)
        if next_check is not None:
            stop = min(stop, next_check - done)
        _core.row_action(F, y, block[used:used + stop], x, mode, step)
        used += stop
        done += stop
        if next_check is not None and done == next_check:
            if _residual(F, y, x)[1] < tol:
                return done, True
            next_check += check_every
    if not np.isfinite(x).all():
        raise FloatingPointError(
            f"the {mode} iterates overflowed after {done} updates"
            + (f"; the step {step!r} is too large (SGD needs step < 2 / ||F_i||^2)" if mode == "sgd" else ""))
    return done, (None if tol is None else _residual(F, y, x)[1] < tol)


def kaczmarz(F, y, n_iter, *, rows="uniform", x0=None, random_state=None):
    r"""Randomized Kaczmarz iterations for F x = y (Liao, Needell & Xue 2024, Sec. 2.2).

    ``n_iter`` times: draw a row i, then project x onto the hyperplane {<F_i, x> = y_i}:

        x <- x + (y_i - <F_i, x>) / ||F_i||^2 F_i

    (rows with ||F_i|| = 0 are skipped). Rows are drawn independently, with replacement:
    uniformly (``rows='uniform'``, the authors' ``randomized_kaczmarz``) or with probability
    ||F_i||^2 / ||F||_F^2 (``rows='norm'``, Strohmer and Vershynin's scheme, with the linear
    convergence rate of the paper's refs [40, 41]). From x0 = 0 (any point of the row space)
    on a consistent system, the iterates converge to the min-norm solution F^+ y, paper
    eq. (3); a few multiples of m iterations are typically needed, and the paper's m
    iterations do not interpolate (measured: the train residual stays at 70-80 % of ||y||).

    Parameters
    ----------
    F : array_like, shape (m, p)
        The feature matrix (finite reals).
    y : array_like, shape (m,)
        The labels.
    n_iter : int >= 1
        The number of row updates.
    rows : {'uniform', 'norm'}
        The row distribution.
    x0 : array_like, shape (p,), optional
        The starting point (default zeros, as in the paper's experiments).
    random_state : None, int, Generator, ...
        The seed of the row sequence (see :func:`pysketch._random.as_generator`).

    Returns
    -------
    numpy.ndarray, shape (p,)
        The last iterate.

    Raises
    ------
    TypeError
        For an `n_iter` that is not an int, a masked F, or a y or x0 that is masked or does
        not hold real numbers.
    ValueError
        For an `n_iter` below 1, `rows` not in ROW_SAMPLING, ``rows='norm'`` with an
        all-zero F, an F that is not a finite real 2-D array of at least one row and column
        (or whose squares would overflow), or a y (x0) that is not a finite 1-D array of m
        (p) entries.
    FloatingPointError
        If the iterates overflow.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import kaczmarz, min_norm
    >>> rng = np.random.default_rng(0)
    >>> F, y = rng.standard_normal((20, 50)), rng.standard_normal(20)
    >>> x = kaczmarz(F, y, 2000, random_state=0)  # 100 m updates: converged to F^+ y
    >>> bool(np.allclose(x, min_norm(F, y)[0], atol=1e-6))
    True
    """
    F = _matrix(F)
    m, p = F.shape
    y = _vector(y, "y", m, "one per row of F")
    n_iter = check_int(n_iter, "n_iter")
    if rows not in ROW_SAMPLING:
        raise ValueError(f"rows must be one of {ROW_SAMPLING}, got {rows!r}")
    x = _start(x0, p)
    draw = _row_sampler(F, rows, as_generator(random_state))
    _iterate(F, y, x, "kaczmarz", 0.0, n_iter, draw)
    return x


def sgd(F, y, n_iter, step, *, x0=None, random_state=None):
    r"""Single-sample SGD on the squared loss, the DP-SGD baseline's non-private part
    (Liao, Needell & Xue 2024, Sec. 4; the authors' ``DPRF_SGD``, Wang and Guo [25]).

    ``n_iter`` times: draw a row i uniformly from the m rows, independently and **with
    replacement** (the code's ``np.random.choice(m, 1)`` at every step), then take a gradient
    step on (1/2)(<F_i, x> - y_i)^2 (the half-squared loss: the code's update has no factor
    2):

        x <- x - step (<F_i, x> - y_i) F_i.

    The paper's setting is x0 = 0, step 1/m and n_iter = m. The step is a constant (no decay).
    A step >= 2 / ||F_i||^2 can diverge; a FloatingPointError is raised if the iterates
    overflow.

    Parameters
    ----------
    F : array_like, shape (m, p)
    y : array_like, shape (m,)
    n_iter : int >= 1
        The number of steps (T in the paper).
    step : float > 0
        The learning rate (eta in the code).
    x0 : array_like, shape (p,), optional
        The starting point (default zeros).
    random_state : None, int, Generator, ...
        The seed of the row sequence.

    Returns
    -------
    numpy.ndarray, shape (p,)
        The last iterate (the code releases the last iterate, not an average).

    Raises
    ------
    TypeError, ValueError
        For bad arguments, as :func:`kaczmarz` (and a `step` that is not a positive finite
        number: ValueError).
    FloatingPointError
        If the iterates overflow (a step too large).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import sgd
    >>> rng = np.random.default_rng(0)
    >>> F, y = rng.standard_normal((20, 50)), rng.standard_normal(20)
    >>> x = sgd(F, y, 2000, 0.01, random_state=0)
    >>> x.shape, bool(np.linalg.norm(F @ x - y) < 0.01 * np.linalg.norm(y))
    ((50,), True)
    """
    F = _matrix(F)
    m, p = F.shape
    y = _vector(y, "y", m, "one per row of F")
    n_iter = check_int(n_iter, "n_iter")
    step = check_positive(step, "step")
    x = _start(x0, p)
    draw = _row_sampler(F, "uniform", as_generator(random_state))
    _iterate(F, y, x, "sgd", step, n_iter, draw)
    return x


# --------------------------------------------------------------------------- min-norm solution

def _cholesky(F, y):
    m, p = F.shape
    if m > p:
        raise ValueError(
            f"method='cholesky' needs at least as many features as samples (F F^T is singular when m > p); got "
            f"F of shape {F.shape}. Use method='pinv' (min-norm least squares)")
    G = F @ F.T
    try:
        L, lower = linalg.cho_factor(G, lower=True, check_finite=False)
    except linalg.LinAlgError as exc:
        raise ValueError(
            "the Gram matrix F F^T is not positive definite (F does not have full row rank); the min-norm "
            "interpolant does not exist or is ill-determined. Use method='pinv'") from exc
    # Every pivot L_ii^2 lies in [lambda_min(G), lambda_max(G)], so a pivot ratio beyond 1 / (m eps)
    # proves G numerically singular (the converse does not hold: this is a floor on cond(G)).
    piv = np.diag(L) ** 2
    if not piv.min() > piv.max() * m * np.finfo(np.float64).eps:
        raise ValueError(
            f"the Gram matrix F F^T is numerically singular (Cholesky pivots from {piv.min():.3g} to "
            f"{piv.max():.3g}); use method='pinv'")
    alpha = linalg.cho_solve((L, lower), y, check_finite=False)
    return F.T @ alpha


def min_norm(F, y, method="cholesky", *, n_iter=None, tol=None, random_state=None):
    r"""The minimum-norm solution c# = F^T (F F^T)^{-1} y = F^+ y of F c = y, paper eq. (3)
    (Liao, Needell & Xue 2024, Sec. 2.2).

    Parameters
    ----------
    F : array_like, shape (m, p)
        The feature matrix, p >= m in the paper's over-parametrized regime (finite reals).
    y : array_like, shape (m,)
        The labels.
    method : {'cholesky', 'pinv', 'kaczmarz'}
        See the module docstring. 'cholesky' raises a ValueError if F F^T is not
        (numerically) positive definite; 'pinv' is the paper's solver; 'kaczmarz' is the
        paper's iterative solver (randomized, uniform rows, from 0).
    n_iter : int >= 1, optional
        'kaczmarz' only: the (maximum) number of iterations; default m, the paper's choice,
        which does not interpolate (measured). Raise it (and give a `tol`) to
        converge to c#.
    tol : float > 0, optional
        'kaczmarz' only: stop once ||F c - y|| / ||y|| < tol, checked every m iterations
        (each check costs about as much as m iterations).
    random_state : None, int, Generator, ...
        'kaczmarz' only (ignored otherwise): the seed of the row sequence.

    Returns
    -------
    coef : numpy.ndarray, shape (p,)
    info : dict
        ``'method'``; ``'residual_norm'``, ||F coef - y||; ``'relative_residual'``, that over
        ||y||; ``'iterations'``, the Kaczmarz updates done (None for the direct methods);
        ``'converged'`` ('kaczmarz': whether the relative residual is below `tol`, None
        without a tol; None for the direct methods); ``'rank'`` ('pinv': the numerical rank
        of F; None otherwise).

    Raises
    ------
    ValueError
        For a `method` not in METHODS; 'cholesky' with more rows than columns or a Gram
        matrix that is not (numerically) positive definite; `n_iter` or `tol` given to a
        direct method; a `tol` that is not a positive finite number; an `n_iter` below 1;
        an F or y that is not a finite real array of the right shape (as
        :func:`kaczmarz`).
    TypeError
        For a non-integer `n_iter`, a masked F, or a y that is masked or not real.
    FloatingPointError
        If the Kaczmarz iterates overflow.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import min_norm
    >>> rng = np.random.default_rng(0)
    >>> F, y = rng.standard_normal((20, 50)), rng.standard_normal(20)
    >>> coef, info = min_norm(F, y)  # Cholesky of F F^T
    >>> coef.shape, bool(info["relative_residual"] < 1e-10)
    ((50,), True)
    >>> coef_k, info_k = min_norm(F, y, "kaczmarz", n_iter=5000, tol=1e-6, random_state=0)
    >>> info_k["converged"], bool(np.allclose(coef_k, coef, atol=1e-4))
    (True, True)
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    F = _matrix(F)
    m, p = F.shape
    y = _vector(y, "y", m, "one per row of F")
    tol = _check_tol(tol)
    info = {"method": method, "iterations": None, "converged": None, "rank": None}
    if method != "kaczmarz":
        if n_iter is not None or tol is not None:
            raise ValueError(f"n_iter and tol apply to method='kaczmarz' only, not {method!r}")
        if method == "cholesky":
            coef = _cholesky(F, y)
        else:
            coef, _, rank, _ = np.linalg.lstsq(F, y, rcond=None)
            info["rank"] = int(rank)
    else:
        n_iter = m if n_iter is None else check_int(n_iter, "n_iter")
        coef = np.zeros(p)
        draw = _row_sampler(F, "uniform", as_generator(random_state))
        done, converged = _iterate(F, y, coef, "kaczmarz", 0.0, n_iter, draw, check_every=m, tol=tol)
        info["iterations"] = done
        info["converged"] = converged
    info["residual_norm"], info["relative_residual"] = _residual(F, y, coef)
    return coef, info
