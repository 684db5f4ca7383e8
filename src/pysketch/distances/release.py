r"""Private releases of sketches S x + eta for distance estimation, and the estimators.

Neighbouring relation (Stausholm 2021, Def. 1): two input vectors are
neighbours when ||x - y||_1 <= C, C = `contribution` (1 by default: one attribute changed
by at most 1, a histogram's one record). The sensitivities of a linear map under it are
its largest column norms, C max_j ||S_{:, j}||_p (Def. 3): sqrt(s) C (L1) and C (L2) for
the sparse JL transforms, computed exactly from the public matrix for any other operator.

`release(op, X, epsilon, delta=0, mechanism='auto')` releases every row of X with fresh
noise from pysketch.privacy.mechanisms (exact discrete Laplace or Gaussian on a fine grid,
OS entropy; never the operator's public seed) and returns a `DistanceRelease`: the noisy
values, the operator's fingerprint (its "seed id"), the noise moments m2 and m4 and the
guarantee. Each row is an (epsilon, delta)-DP release of that row's vector (a party's
vector); releasing the same vector twice costs twice. With an `accountant`, each call
spends (epsilon, delta) once, before any noise is drawn (each individual changes one row:
the rows of one call compose in parallel; Laplace spends delta = 0).

`sq_distance(a, b)` and `pairwise_sq_distances(A, B)` are the unbiased estimators
||a - b||^2 - k (m2_a + m2_b) (the corrected Theorem 3 / Corollary 2), refusing releases of
different operators; `variance` gives their exact variance (`pysketch.distances.formulas`).

`DistanceRelease.save` / `load` use the pysketch file container (pysketch._archive): the
metadata (the record: every field but the values, never the noise) as JSON, with
``"format": "pysketch.distance_release"``, ``"version": 1`` and a checksum, and one
float64 array ``values``. A missing file raises FileNotFoundError, any other bad file
`SketchFileError` (a ValueError) naming the path and the cause.
"""

import dataclasses
import math
import numbers
import warnings

import numpy as np

from .._archive import SketchFileError, read, write
from .._checks import check_int, check_positive, check_size
from ..operators import FastJLOperator, FrequencyOperator
from ..privacy.budget import Budget
from ..privacy.mechanisms import Gaussian, check_delta, check_epsilon
from . import formulas

__all__ = ["DistanceRelease", "release", "release_cost", "release_input", "sq_distance", "pairwise_sq_distances", "nearest_neighbors", "max_column_norm",
           "choose_mechanism", "clean_release", "gaussian_jl_operator", "kenthapadi_release", "RELEASE_FORMAT"]

#: The format name of a saved distance release (its metadata's "format" entry).
RELEASE_FORMAT = "pysketch.distance_release"
RELEASE_VERSION = 1
MECHANISMS = ("auto", "laplace", "gaussian")


def max_column_norm(S, p):
    """max_j ||S_{:, j}||_p of an explicit k x d matrix (dense or scipy.sparse): the
    l_p sensitivity of x -> S x under ||x - y||_1 <= 1 (Def. 3).

    Parameters
    ----------
    S : array_like or scipy.sparse matrix, shape (k, d)
        The matrix, real and finite (a 1-D array is one row).
    p : {1, 2}
        The norm of the columns.

    Returns
    -------
    float
        The largest column norm (0 for a zero matrix).

    Raises
    ------
    ValueError
        For a p other than 1 or 2, an empty or non-finite dense matrix, or column norms
        that overflow float64.
    TypeError
        For a dense matrix that is not of real numbers.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.distances import max_column_norm
    >>> S = np.array([[3.0, 0.0], [-4.0, 1.0]])
    >>> max_column_norm(S, 1), max_column_norm(S, 2)
    (7.0, 5.0)
    """
    if p not in (1, 2):
        raise ValueError(f"p must be 1 or 2, got {p!r}")
    if hasattr(S, "tocsc") and type(S).__module__.startswith("scipy.sparse"):
        A = abs(S.tocsc())
        col = np.asarray(A.sum(axis=0)).ravel() if p == 1 else np.sqrt(np.asarray(A.multiply(A).sum(axis=0)).ravel())
    else:
        A = np.asarray(S)
        if A.dtype.kind not in "biuf":
            raise TypeError(f"S must be a matrix of real numbers, got dtype {A.dtype}")
        if A.ndim not in (1, 2) or A.size == 0:
            raise ValueError(f"S must be a non-empty k x d matrix, got shape {A.shape}")
        A = np.abs(A.astype(np.float64))
        if not np.isfinite(A).all():
            raise ValueError("S must be finite (it has a NaN or an infinity)")
        top = float(A.max())
        if top == 0.0:
            return 0.0
        with np.errstate(over="ignore"):  # the norms of S / top, times top: no overflow in the squares
            col = top * (A / top).sum(axis=0) if p == 1 else top * np.sqrt(((A / top) ** 2).sum(axis=0))
        if not np.isfinite(col).all():
            raise ValueError("the magnitude of S is outside the supported range: its column norms overflow float64")
    return float(col.max())


def _operator_sensitivity(op, p):
    own = getattr(op, "sensitivity", None)
    if callable(own):  # the sparse JL (exact by construction) and fast JL (exact from P H) operators
        return own(p)
    # any other operator: S = Omega^T, its columns are Omega's rows
    return max_column_norm(op.to_dense().T, p)


@dataclasses.dataclass(frozen=True, eq=False)
class DistanceRelease:
    """Noisy sketches of n vectors under one public operator.

    Made by :func:`release`, :func:`release_input`, :func:`kenthapadi_release` and
    :func:`clean_release` (and ``load``); frozen. ``n`` is the number of rows.

    Parameters
    ----------
    values : ndarray of float64, shape (n, k)
        The released S x_i + eta_i.
    operator_id : str
        The operator's fingerprint (SHA-256 of its state; equal ids = same S).
    construction : str
        The operator's kind ('sjlt_block', 'sjlt_graph', 'dense', 'fjlt', ...).
    k : int
        The sketch length.
    mechanism : {'laplace', 'gaussian', 'none'}
        'none' for a clean (not private) release.
    epsilon, delta : float
        The guarantee per row (epsilon inf for a clean release).
    contribution : float
        C of the l1 neighbouring relation.
    sensitivity : float
        Of x -> S x (in the norm of the mechanism), times C.
    m2, m4 : float
        Second and fourth moments of one noise coordinate (of the law actually drawn: the
        discrete laws on the 2^-30-fine grid have these moments to within 2^-58
        relative).
    correction_dim : int
        The estimator subtracts correction_dim (m2_a + m2_b): k for output noise, the
        number of noised input coordinates for input perturbation (FJLT).
    secure_noise : bool
        False for seeded test noise.
    perturbation : {'output', 'input'}, default 'output'
        'output' (S x + eta) or 'input' (FJLT of the noisy input, Lemma 8).
    padded_d : int, default 0
        The FJLT's d_p (0 for other operators).
    density : float, default 0
        The FJLT's q (0 for other operators).
    guarantee : str, default 'every draw of the public matrix'
        For which matrices the (epsilon, delta) holds: every draw (sensitivities exact
        for the public matrix), or only with high probability over it (the Kenthapadi
        baseline's nominal calibration).

    Raises
    ------
    ValueError
        From ``variance``, for a conditional or input-perturbation variance between
        releases of different noise laws, or a construction with no closed form.
    FileNotFoundError
        From ``load``, when there is no such file.
    SketchFileError
        From ``load``, when the file is not a distance release, is damaged, inconsistent
        or of a newer version.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.distances import release
    >>> from pysketch.operators import SparseJLOperator
    >>> X = np.random.default_rng(0).poisson(3.0, size=(50, 200)).astype(float)
    >>> R = release(SparseJLOperator.draw(200, 64, 1, random_state=7), X, epsilon=1.0)
    >>> R.n, R.k, R.mechanism, R.construction, round(R.m2, 6)
    (50, 64, 'laplace', 'sjlt_block', 2.0)
    """

    values: np.ndarray
    operator_id: str
    construction: str
    k: int
    mechanism: str
    epsilon: float
    delta: float
    contribution: float
    sensitivity: float
    m2: float
    m4: float
    correction_dim: int
    secure_noise: bool
    perturbation: str = "output"
    padded_d: int = 0
    density: float = 0.0
    guarantee: str = "every draw of the public matrix"

    @property
    def n(self):
        return self.values.shape[0]

    def save(self, path):
        """Write the release (values and record; never the noise) to a .npz file (module
        docstring)."""
        meta = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "values"}
        write(path, RELEASE_FORMAT, RELEASE_VERSION, meta, {"values": np.asarray(self.values, dtype=np.float64)})

    @classmethod
    def load(cls, path):
        """Read a release written by `save` (no pickle). FileNotFoundError if there is no
        such file, SketchFileError if it is not a release, damaged or of a newer version."""
        meta, arrays = read(path, {RELEASE_FORMAT: (RELEASE_VERSION,)}, what="pysketch distance release",
                            names="values")
        fields = {f.name for f in dataclasses.fields(cls)} - {"values"}
        meta.pop("format")
        meta.pop("version")
        values = arrays.get("values")
        if set(meta) - fields or values is None or values.dtype != np.float64 or values.ndim != 2:
            raise SketchFileError(f"{path}: inconsistent distance release (fields {sorted(meta)}, values "
                                  f"{None if values is None else (values.dtype, values.shape)})")
        try:
            return cls(values=values, **meta)
        except TypeError as exc:
            raise SketchFileError(f"{path}: inconsistent distance release ({exc})") from exc

    def variance(self, Z2, Z4=0.0, *, other=None, conditional_on=None):
        """Exact variance of the estimate of ||x - y||^2 = Z2 (Z4 = ||x - y||_4^4) between
        a row of this release and one of `other` (default: a release with the same noise
        law): over the draw of S and the noise for the sparse and Gaussian JL transforms;
        with `conditional_on` = ||S (x - y)||^2, over the noise alone for this fixed S."""
        m2b, m4b = (self.m2, self.m4) if other is None else (other.m2, other.m4)
        if conditional_on is not None:
            if (m2b, m4b) != (self.m2, self.m4):
                raise ValueError("the conditional variance is for releases with one noise law")
            return formulas.conditional_variance(self.k, conditional_on, self.m2, self.m4)
        if self.perturbation == "input":
            if other is not None and (m2b, m4b) != (self.m2, self.m4):
                raise ValueError("the input-perturbation variance is for releases with one noise law")
            return formulas.fjlt_input_variance(self.k, self.padded_d, self.density, Z2, Z4, math.sqrt(self.m2))
        if self.construction.startswith("sjlt"):
            var_s = formulas.jl_variance("sjlt", self.k, Z2, Z4)
        elif self.construction == "dense":
            var_s = formulas.jl_variance("gaussian", self.k, Z2, Z4)
        elif self.construction == "fjlt":
            var_s = formulas.jl_variance("fjlt", self.k, Z2, Z4, d=self.padded_d, q=self.density)
        else:
            raise ValueError(f"no closed form for construction {self.construction!r} here")
        same = other is None or (m2b, m4b) == (self.m2, self.m4)
        return formulas.estimator_variance(self.k, Z2, self.m2, self.m4, var_s,
                                           None if same else m2b, None if same else m4b)


def choose_mechanism(l1_sensitivity, l2_sensitivity, epsilon, delta, k, Z2_guess=0.0):
    """'laplace' or 'gaussian': the smaller exact estimator variance (noise terms
    8 m2 Z2 + 2 k (m4 + m2^2)) for the guess Z2 of a typical squared distance (0 compares
    the k-terms only; derived from the exact variances, Stausholm 2021, Lemma 3). delta = 0 gives 'laplace'.

    Parameters
    ----------
    l1_sensitivity, l2_sensitivity : float > 0
        The operator's sensitivities (times C) in the two norms.
    epsilon : float > 0
        Within [2**-100, 2**100].
    delta : float in [0, 1)
    k : int >= 1
        The sketch length.
    Z2_guess : float >= 0, default 0
        A typical squared distance; 0 compares the terms in k only.

    Returns
    -------
    {'laplace', 'gaussian'}

    Raises
    ------
    ValueError
        For an argument outside its range, or noise scales outside [2**-250, 2**250].
    TypeError
        When `k` is not an int.

    Examples
    --------
    >>> from pysketch.distances import choose_mechanism
    >>> choose_mechanism(1.0, 1.0, 1.0, 1e-6, k=64), choose_mechanism(8.0, 1.0, 1.0, 1e-6, k=64)
    ('laplace', 'gaussian')
    """
    l1_sensitivity = check_positive(l1_sensitivity, "l1_sensitivity")
    l2_sensitivity = check_positive(l2_sensitivity, "l2_sensitivity")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=False)
    k = check_int(k, "k")
    if isinstance(Z2_guess, (bool, np.bool_)) or not isinstance(Z2_guess, numbers.Real) or not (
            math.isfinite(Z2_guess) and Z2_guess >= 0):
        raise ValueError(f"Z2_guess must be a finite number >= 0, got {Z2_guess!r}")
    if delta == 0:
        return "laplace"
    lap = formulas.laplace_moments(_check_noise_scale(l1_sensitivity / epsilon))
    gau = formulas.gaussian_moments(_check_noise_scale(Gaussian(epsilon, delta, l2_sensitivity).scale))
    v = [formulas.estimator_variance(k, Z2_guess, m2, m4, 0.0) for m2, m4 in (lap, gau)]
    return "laplace" if v[0] <= v[1] else "gaussian"


def _plan(operator, epsilon, delta, mechanism, contribution, Z2_guess):
    """The checked parameters of `release`: (epsilon, delta spent, C, mechanism, L1 and L2
    sensitivities); delta is 0 for Laplace."""
    if not isinstance(operator, FrequencyOperator):
        raise TypeError(f"operator must be a FrequencyOperator (e.g. SparseJLOperator.draw(...)), got "
                        f"{type(operator).__name__}")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=False)
    C = check_positive(contribution, "contribution")
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    d1, d2 = C * _operator_sensitivity(operator, 1), C * _operator_sensitivity(operator, 2)
    _check_noise_scale(d1 / epsilon, margin=16)  # the data's scale refused before the mechanisms divide by it
    _check_noise_scale(d2 / epsilon, margin=16)
    if mechanism == "auto":
        mechanism = choose_mechanism(d1, d2, epsilon, delta, operator.m, Z2_guess)
    if mechanism == "gaussian" and delta == 0:
        raise ValueError("mechanism='gaussian' needs delta > 0")
    return epsilon, (0.0 if mechanism == "laplace" else delta), C, mechanism, d1, d2


def clean_release(operator, X):
    """The sketches S x of the rows of X with no noise: NOT private (an estimator's
    epsilon=None). A DistanceRelease with mechanism 'none' and zero noise moments, so that
    the distance estimators give the plain Johnson-Lindenstrauss estimate.

    Parameters
    ----------
    operator : FrequencyOperator
        S, as for :func:`release`.
    X : array_like of shape (d,) or (n, d)
        The vectors.

    Returns
    -------
    DistanceRelease
        epsilon inf, guarantee 'none: not private (no noise)'.

    Raises
    ------
    ValueError
        When X has no rows (and from the operator's checks of X).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.distances import clean_release, sq_distance
    >>> from pysketch.operators import SparseJLOperator
    >>> X = np.random.default_rng(0).poisson(3.0, size=(50, 200)).astype(float)
    >>> C = clean_release(SparseJLOperator.draw(200, 64, 1, random_state=7), X)
    >>> C.mechanism, C.m2, sq_distance(C, C, 0, 1) > 0
    ('none', 0.0, True)
    """
    Y = _nonempty(np.atleast_2d(np.asarray(_apply_by_rows(operator, X), dtype=np.float64)))
    return DistanceRelease(values=Y, operator_id=operator.fingerprint(), construction=operator.kind, k=operator.m,
                           mechanism="none", epsilon=math.inf, delta=0.0, contribution=0.0, sensitivity=0.0,
                           m2=0.0, m4=0.0, correction_dim=operator.m, secure_noise=False,
                           guarantee="none: not private (no noise)", **_fjlt_fields(operator))


def release_cost(operator, epsilon, delta=0.0, *, mechanism="auto", contribution=1.0, Z2_guess=0.0):
    """The (epsilon, delta) one `release` call with these arguments spends (delta = 0 when
    the mechanism is, or 'auto' picks, Laplace); the arguments are checked as by `release`.

    Parameters
    ----------
    operator, epsilon, delta, mechanism, contribution, Z2_guess
        As for :func:`release`.

    Returns
    -------
    (float, float)
        (epsilon, delta).

    Raises
    ------
    TypeError, ValueError
        As :func:`release`, for the same arguments.

    Examples
    --------
    >>> from pysketch.distances import release_cost
    >>> from pysketch.operators import SparseJLOperator
    >>> op = SparseJLOperator.draw(200, 64, 1, random_state=7)
    >>> release_cost(op, 1.0, 1e-6), release_cost(op, 1.0, 1e-6, mechanism="gaussian")
    ((1.0, 0.0), (1.0, 1e-06))
    """
    eps, delta, *_ = _plan(operator, epsilon, delta, mechanism, contribution, Z2_guess)
    return eps, delta


def release(operator, X, epsilon, delta=0.0, *, mechanism="auto", contribution=1.0, Z2_guess=0.0,
            accountant=None, insecure_seed=None):
    """Release S x + eta for every row x of X (one vector of shape (d,) or a batch (n, d);
    scipy.sparse rows work for the sparse JL operators). See the module docstring.

    Parameters
    ----------
    operator : FrequencyOperator
        The public S (``SparseJLOperator.draw(d, k, s, random_state=public_seed)``, a
        FastJLOperator, or any operator: its sensitivity is then computed from its
        matrix).
    X : array_like or scipy.sparse matrix, shape (d,) or (n, d)
        The vectors, one per row.
    epsilon : float > 0
        The guarantee per row, within [2**-100, 2**100].
    delta : float in [0, 1), default 0
    mechanism : {'auto', 'laplace', 'gaussian'}
        'auto' picks the smaller exact variance (`choose_mechanism` with Z2_guess; Laplace
        when delta = 0).
    contribution : float, default 1
        C, the l1 bound on one individual's change of a vector.
    Z2_guess : float >= 0, default 0
        A typical squared distance, for mechanism='auto'.
    accountant : BudgetAccountant (pysketch or diffprivlib) or None
        Charged (epsilon, delta) once per call (delta = 0 for Laplace) before any noise is
        drawn.
    insecure_seed : None or int
        None: OS entropy; an int: reproducible, insecure noise (tests).

    Returns
    -------
    DistanceRelease
        One noisy row per vector (a vector of shape (d,) gives one row).

    Raises
    ------
    TypeError
        When `operator` is not a FrequencyOperator.
    ValueError
        For an argument outside its range, 'gaussian' with delta = 0, a noise scale
        outside [2**-250, 2**250] (rescale the data and the contribution), or X with no
        rows (and from the operator's checks of X).
    BudgetError
        When `accountant` refuses the spend; nothing is drawn then.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.distances import release, sq_distance
    >>> from pysketch.operators import SparseJLOperator
    >>> X = np.random.default_rng(0).poisson(3.0, size=(50, 200)).astype(float)
    >>> op = SparseJLOperator.draw(200, 64, 1, random_state=7)  # public: every party draws the same
    >>> R = release(op, X, epsilon=1.0)
    >>> R.values.shape, R.mechanism, isinstance(sq_distance(R, R, 0, 1), float)
    ((50, 64), 'laplace', True)
    """
    epsilon, delta, C, mechanism, d1, d2 = _plan(operator, epsilon, delta, mechanism, contribution, Z2_guess)
    Y = _nonempty(np.atleast_2d(np.asarray(_apply_by_rows(operator, X), dtype=np.float64)))
    rows = _rows_part(epsilon, delta, mechanism, "distances.release", accountant, insecure_seed)
    mech = rows.mechanism(mechanism, d1 if mechanism == "laplace" else d2)
    noisy = mech.randomise_rows(Y)  # one release per row
    scale = _check_noise_scale(mech.effective_scale_)
    m2, m4 = (formulas.laplace_moments(scale) if mechanism == "laplace" else formulas.gaussian_moments(scale))
    return DistanceRelease(values=noisy, operator_id=operator.fingerprint(), construction=operator.kind,
                           k=operator.m, mechanism=mechanism, epsilon=float(epsilon), delta=float(delta),
                           contribution=float(C), sensitivity=float(d1 if mechanism == "laplace" else d2),
                           m2=float(m2), m4=float(m4), correction_dim=operator.m,
                           secure_noise=bool(mech.secure_noise), **_fjlt_fields(operator))


def _rows_part(epsilon, delta, mechanism, what, accountant, insecure_seed):
    """The one part of a release of rows, charged to `accountant`: (epsilon, delta) for
    each row under the relation of one vector changed by at most C in l1 (the number of
    rows is public: 'replace'); Laplace spends no delta."""
    budget = Budget(epsilon, delta, neighbouring="replace", what=what, pure=mechanism == "laplace",
                    insecure_seed=insecure_seed)
    rows = budget.part("rows")
    budget.charge(accountant)
    return rows


#: Noise scales b with 2**-NOISE_SCALE_EXPONENT <= b <= 2**NOISE_SCALE_EXPONENT: the release
#: records the noise's fourth moment (24 b^4 or 3 b^4), which must neither overflow nor
#: underflow float64, and its variance, which the estimators subtract.
NOISE_SCALE_EXPONENT = 250


def _check_noise_scale(scale, margin=0):
    """The noise scale, or ValueError about the data's scale (the noise scale is the
    contribution C, at the data's scale, times the operator's sensitivity over epsilon);
    `margin` widens the range by 2**margin (a check before the exact scale is known)."""
    limit = math.ldexp(1.0, NOISE_SCALE_EXPONENT + margin)
    if not 1.0 / limit <= scale <= limit:
        raise ValueError(
            f"the magnitude of the noise scale ({scale:.3g}: contribution, a bound at the data's scale, times the "
            f"sensitivity over epsilon) is outside the supported range [{1.0 / limit:.3g}, {limit:.3g}]: its fourth "
            "moment over- or underflows float64; rescale the data (and contribution) by a constant")
    return scale


#: Bytes of one block of rows converted to the operator's dtype by `_apply_by_rows`.
_CAST_BLOCK_BYTES = 64 << 20


def _apply_by_rows(operator, X):
    """operator.apply(X); a 2-D array of another dtype than the operator's (float32 rows
    for a float64 operator, integers) is converted a block of rows at a time, so that
    its converted copy (twice a float32 input) is never held whole."""
    if not isinstance(X, np.ndarray) or X.ndim != 2 or X.dtype == operator.dtype or X.shape[0] < 2:
        return operator.apply(X)
    rows = max(1, _CAST_BLOCK_BYTES // max(1, X.shape[1] * operator.dtype.itemsize))
    if rows >= X.shape[0]:
        return operator.apply(X)
    first = operator.apply(X[:rows])  # checks X's width and values as apply does
    out = np.empty((X.shape[0], first.shape[1]), dtype=first.dtype)
    out[:rows] = first
    for start in range(rows, X.shape[0], rows):
        operator.apply(X[start : start + rows], out=out[start : start + rows])
    return out


def _nonempty(Y):
    """Y (the vectors to release, one per row), or ValueError when X had no rows."""
    if Y.shape[0] == 0:
        raise ValueError("X has no rows: there is nothing to release")
    return Y


def _finite_estimates(D):
    """D, or ValueError about the data's scale when the squared distances overflow."""
    if not np.all(np.isfinite(D)):
        raise ValueError("the magnitude of the released vectors is outside the supported range: their squared "
                         "distances overflow float64; rescale the data (and contribution) by a constant")
    return D


def _fjlt_fields(operator):
    # the fast JL transform's pad length and density enter its variance formula
    padded, q = getattr(operator, "padded_d", None), getattr(operator, "q", None)
    return {} if padded is None or q is None else {"padded_d": int(padded), "density": float(q)}


def release_input(operator, X, epsilon, delta, *, site="rotated", contribution=1.0, accountant=None,
                  insecure_seed=None):
    """Input perturbation for the fast JL transform: Gaussian noise of the analytic
    calibration for L2 sensitivity C (||x - y||_2 <= ||x - y||_1 <= C) on the input, then
    the transform. (epsilon, delta)-DP for every draw with no matrix-dependent sensitivity,
    but the noise term grows like n_noised^2 sigma^4 / k.

    Parameters
    ----------
    operator : FastJLOperator
        The public fast JL transform.
    X : array_like of shape (d,) or (n, d)
        The vectors, one per row.
    epsilon : float > 0
        The guarantee per row, within [2**-100, 2**100].
    delta : float in (0, 1)
    site : {'input', 'rotated'}, default 'rotated'
        'input' (Lemma 8): noise on the d input coordinates, then Phi~; 'rotated' (Note 7):
        noise on the d_p coordinates of H D x (orthonormal, so the same sensitivity; for
        d = d_p it is the same law as 'input' by spherical symmetry).
    contribution : float > 0, default 1
        C, the l1 (hence l2) bound on one individual's change of a vector.
    accountant : BudgetAccountant (pysketch or diffprivlib) or None
        Charged (epsilon, delta) once per call, before any noise is drawn.
    insecure_seed : None or int
        None: OS entropy; an int: reproducible, insecure noise (tests).

    Returns
    -------
    DistanceRelease
        perturbation 'input', correction_dim the number of noised coordinates.

    Raises
    ------
    TypeError
        When `operator` is not a FastJLOperator.
    ValueError
        For a site, epsilon, delta or contribution outside its range, a noise scale
        outside [2**-250, 2**250], or X with no rows.
    BudgetError
        When `accountant` refuses the spend.

    Notes
    -----
    The estimator subtracts n_noised (m2_a + m2_b); its exact variance is
    `formulas.fjlt_input_variance` with d = n_noised (d_p for 'rotated'; for 'input' with
    padding the formula is that of the padded vector with zero noise on the padding, not
    given here). `accountant` is charged (epsilon, delta) once per call, as by `release`.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.distances import release_input
    >>> from pysketch.operators import FastJLOperator
    >>> X = np.random.default_rng(0).poisson(3.0, size=(50, 200)).astype(float)
    >>> R = release_input(FastJLOperator.draw(200, 64, 0.1, random_state=0), X, 1.0, 1e-6)
    >>> R.values.shape, R.perturbation, R.correction_dim  # noise on the 256 padded coordinates
    ((50, 64), 'input', 256)
    """
    if not isinstance(operator, FastJLOperator):
        raise TypeError(f"operator must be a FastJLOperator, got {type(operator).__name__}")
    if site not in ("input", "rotated"):
        raise ValueError(f"site must be 'input' or 'rotated', got {site!r}")
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=True)
    C = check_positive(contribution, "contribution")
    if site == "rotated":
        Z = _nonempty(np.atleast_2d(operator.rotated(X)))
        mech = _rows_part(epsilon, delta, "gaussian", "distances.release_input", accountant,
                          insecure_seed).mechanism("gaussian", C)
        noisy = mech.randomise_rows(Z)  # one release per row
        values, n_noised = operator.project(noisy), operator.padded_d
    else:
        Xa = _nonempty(np.atleast_2d(np.asarray(X, dtype=np.float64)))
        mech = _rows_part(epsilon, delta, "gaussian", "distances.release_input", accountant,
                          insecure_seed).mechanism("gaussian", C)
        noisy = mech.randomise_rows(Xa)  # one release per row
        values, n_noised = np.atleast_2d(operator.apply(noisy)), operator.d
    m2, m4 = formulas.gaussian_moments(_check_noise_scale(mech.effective_scale_))
    return DistanceRelease(values=values, operator_id=operator.fingerprint(), construction="fjlt",
                           k=operator.m, mechanism="gaussian", epsilon=float(epsilon), delta=float(delta),
                           contribution=float(C), sensitivity=float(C), m2=float(m2), m4=float(m4),
                           correction_dim=n_noised, secure_noise=bool(mech.secure_noise),
                           perturbation="input", padded_d=n_noised, density=operator.q)


def gaussian_jl_operator(d, k, random_state=None):
    """The dense Gaussian JL matrix of Kenthapadi et al. (2013), entries N(0, 1/k), as a
    DenseOperator (Omega = S^T): the baseline. `release` calibrates it with its exact
    sensitivity computed from the public matrix (private for every draw); see
    `kenthapadi_release` for the paper's nominal calibration.

    Parameters
    ----------
    d : int >= 1
        The input dimension.
    k : int >= 1
        The sketch length.
    random_state : None, int or numpy.random.Generator
        The public seed of the matrix.

    Returns
    -------
    DenseOperator
        Omega of shape (d, k), so that ``apply(x)`` is S x.

    Raises
    ------
    TypeError
        When d or k is not an int.
    ValueError
        When d or k is below 1, or the matrix would not fit in memory.

    Examples
    --------
    >>> from pysketch.distances import gaussian_jl_operator
    >>> op = gaussian_jl_operator(200, 64, random_state=0)
    >>> op.d, op.m
    (200, 64)
    """
    from .._random import as_generator
    from ..operators import DenseOperator, operator_bytes

    d = check_size(d, "d", nbytes=lambda v: operator_bytes(v, 1, "dense"), what="for the matrix")
    k = check_size(k, "k", nbytes=lambda v: operator_bytes(d, v, "dense"), what=f"for the ({d}, k) matrix")
    rng = as_generator(random_state)
    return DenseOperator(rng.standard_normal((d, k)) / math.sqrt(k))


def kenthapadi_release(operator, X, epsilon, delta, *, accountant=None, insecure_seed=None):
    """The Kenthapadi et al. baseline as published: Gaussian noise of sigma = 4
    sqrt(ln(1/delta)) / epsilon (their Theorem 1, for epsilon < ln(1/delta) and k > 2 (ln d
    + ln(2/delta))), which is (epsilon, delta)-DP only WITH HIGH PROBABILITY OVER THE
    MATRIX (its sensitivity is not checked): the record says so and a warning is issued.
    Use `release` for a guarantee that holds for every draw. `accountant` is charged
    (epsilon, delta) once per call.

    Parameters
    ----------
    operator : FrequencyOperator
        The public matrix (:func:`gaussian_jl_operator`).
    X : array_like of shape (d,) or (n, d)
        The vectors, one per row.
    epsilon : float > 0
        Below ln(1 / delta).
    delta : float in (0, 1)
    accountant : BudgetAccountant (pysketch or diffprivlib) or None
        Charged (epsilon, delta) once per call, before any noise is drawn.
    insecure_seed : None or int
        None: OS entropy; an int: reproducible, insecure noise (tests).

    Returns
    -------
    DistanceRelease
        Whose `guarantee` says it holds with high probability over the matrix.

    Raises
    ------
    ValueError
        For an epsilon or delta outside its range, epsilon >= ln(1 / delta), or X with
        no rows.
    BudgetError
        When `accountant` refuses the spend.

    Warns
    -----
    RuntimeWarning
        At every call: the guarantee is not for every draw of the matrix.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from pysketch.distances import gaussian_jl_operator, kenthapadi_release
    >>> X = np.random.default_rng(0).poisson(3.0, size=(50, 200)).astype(float)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", RuntimeWarning)
    ...     R = kenthapadi_release(gaussian_jl_operator(200, 64, random_state=0), X, 1.0, 1e-6)
    >>> R.values.shape, R.guarantee
    ((50, 64), 'with high probability over the public matrix (Kenthapadi et al.)')
    """
    epsilon = check_epsilon(epsilon)
    delta = check_delta(delta, positive=True)
    if not epsilon < -math.log(delta):
        raise ValueError("Kenthapadi's calibration needs epsilon < ln(1/delta)")
    warnings.warn("the Kenthapadi calibration is differentially private only with high probability over the "
                  "matrix: its sensitivity is not checked", RuntimeWarning, stacklevel=2)
    sigma = 4.0 * math.sqrt(-math.log(delta)) / epsilon
    unit = Gaussian(epsilon, delta, 1.0).scale
    Y = _nonempty(np.atleast_2d(np.asarray(operator.apply(X), dtype=np.float64)))
    rows = _rows_part(epsilon, delta, "gaussian", "distances.kenthapadi_release", accountant, insecure_seed)
    mech = rows.mechanism("gaussian", sigma / unit)  # noise of sigma per coordinate
    noisy = mech.randomise_rows(Y)  # one release per row
    m2, m4 = formulas.gaussian_moments(_check_noise_scale(mech.effective_scale_))
    return DistanceRelease(values=noisy, operator_id=operator.fingerprint(), construction=operator.kind,
                           k=operator.m, mechanism="gaussian", epsilon=float(epsilon), delta=float(delta),
                           contribution=1.0, sensitivity=float(sigma / unit), m2=float(m2), m4=float(m4),
                           correction_dim=operator.m, secure_noise=bool(mech.secure_noise),
                           guarantee="with high probability over the public matrix (Kenthapadi et al.)")


def _check_pair(a, b):
    for name, r in (("a", a), ("b", b)):
        if not isinstance(r, DistanceRelease):
            raise TypeError(f"{name} must be a DistanceRelease, got {type(r).__name__}")
    if a.operator_id != b.operator_id:
        raise ValueError("the releases were made with different operators (seeds or sizes): their distances are "
                         "not comparable")
    if a.k != b.k or a.correction_dim != b.correction_dim:
        raise ValueError(f"the releases differ in size (k = {a.k} and {b.k})")


def sq_distance(a, b, i=0, j=0):
    """Unbiased estimate of ||x_i - y_j||^2 from row i of release a and row j of b:
    ||a_i - b_j||^2 - correction_dim (m2_a + m2_b). Can be negative (keep it: clipping
    biases it).

    Parameters
    ----------
    a, b : DistanceRelease
        Releases under the same public operator.
    i, j : int, default 0
        The rows of a and of b.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        When a or b is not a DistanceRelease.
    ValueError
        When they were made with different operators or sizes, or the estimate overflows
        float64.
    IndexError
        For a row outside a release.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.distances import clean_release, sq_distance
    >>> from pysketch.operators import SparseJLOperator
    >>> X = np.random.default_rng(0).poisson(3.0, size=(50, 200)).astype(float)
    >>> C = clean_release(SparseJLOperator.draw(200, 64, 1, random_state=7), X)
    >>> bool(abs(sq_distance(C, C, 0, 1) / np.sum((X[0] - X[1]) ** 2) - 1) < 0.5)  # JL, no noise
    True
    """
    _check_pair(a, b)
    diff = a.values[i] - b.values[j]
    with np.errstate(over="ignore", invalid="ignore"):
        return float(_finite_estimates(np.asarray(diff @ diff - a.correction_dim * (a.m2 + b.m2))))


#: Bytes of estimates formed at once by the blocked all-pairs loops (a block of rows of a
#: against every row of b).
_BLOCK_BYTES = 32 << 20


def _pair_blocks(a, b, same):
    """Yield (i0, i1, D) with D the unbiased estimates between rows i0:i1 of a and every row
    of b, in blocks of about _BLOCK_BYTES. Each block is one product of a slice of A with a
    separate copy of B transposed, so BLAS never sees A @ A.T (numpy sends that to a
    symmetric rank-k routine, where numpy's bundled OpenBLAS was seen to crash at 27 000
    rows on 2 threads)."""
    A, B = a.values, b.values
    Bt = np.array(B.T, order="C")  # its own buffer, also when b is a
    with np.errstate(over="ignore", invalid="ignore"):
        na, nb = (A * A).sum(axis=1), (B * B).sum(axis=1)
    shift = a.correction_dim * (a.m2 + b.m2)
    step = max(1, _BLOCK_BYTES // (8 * max(1, B.shape[0])))
    for i0 in range(0, A.shape[0], step):
        i1 = min(A.shape[0], i0 + step)
        with np.errstate(over="ignore", invalid="ignore"):
            D = A[i0:i1] @ Bt
            D *= -2.0
            D += na[i0:i1, None]
            D += nb[None, :]
            D -= shift
        _finite_estimates(D)
        if same:
            D[np.arange(i1 - i0), np.arange(i0, i1)] = 0.0
        yield i0, i1, D


def pairwise_sq_distances(a, b=None, *, out=None):
    """All-pairs unbiased estimates (n_a, n_b). With b None, between the rows of a (the
    diagonal, a row with itself, is set to 0).

    The (n_a, n_b) float64 matrix is what this returns, so it needs 8 n_a n_b bytes (checked
    against the machine's memory first); the estimates are formed in blocks of rows, so
    nothing larger than a block is made beside it. For the nearest rows of each row, use
    :func:`nearest_neighbors`, which never holds more than a block.

    Parameters
    ----------
    a, b : DistanceRelease
        Releases under the same public operator.
    out : ndarray of float64, shape (n_a, n_b), optional
        Where to write the estimates (e.g. a ``numpy.memmap`` on disk for many rows).

    Returns
    -------
    ndarray of shape (n_a, n_b)

    Raises
    ------
    TypeError
        When a or b is not a DistanceRelease.
    ValueError
        When they were made with different operators or sizes, `out` is not a float64
        array of the right shape, the matrix would not fit in memory, or the estimates
        overflow float64.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.distances import pairwise_sq_distances, release
    >>> from pysketch.operators import SparseJLOperator
    >>> X = np.random.default_rng(0).poisson(3.0, size=(50, 200)).astype(float)
    >>> R = release(SparseJLOperator.draw(200, 64, 1, random_state=7), X, epsilon=1.0)
    >>> D = pairwise_sq_distances(R)
    >>> D.shape, bool(np.all(np.diag(D) == 0)), bool(np.allclose(D, D.T))
    ((50, 50), True, True)
    """
    same = b is None
    b = a if same else b
    _check_pair(a, b)
    shape = (a.values.shape[0], b.values.shape[0])
    if out is None:
        check_size(shape[0] * shape[1], "n_a * n_b", minimum=0, nbytes=lambda v: 8 * v,
                   what="for the matrix of all-pairs estimates (nearest_neighbors needs none)")
        out = np.empty(shape)
    elif not isinstance(out, np.ndarray) or out.dtype != np.float64 or out.shape != shape:
        raise ValueError(f"out must be a float64 ndarray of shape {shape}, got "
                         f"{getattr(out, 'dtype', type(out).__name__)} {getattr(out, 'shape', '')}")
    for i0, i1, D in _pair_blocks(a, b, same):
        out[i0:i1] = D
    return out


def nearest_neighbors(a, b=None, n_neighbors=1):
    """For every row of release `a`, the `n_neighbors` rows of `b` with the smallest
    estimated squared distance, nearest first: ``(indices, estimates)``, both of shape
    (n_a, n_neighbors). With b None, among the other rows of a (a row is never its own
    neighbour).

    The estimates are formed in blocks of rows (about 32 MB at a time) and only the
    neighbours are kept: memory is O(n_a * n_neighbors), whatever n_a and n_b. Ties are
    broken by the lower index.

    Parameters
    ----------
    a : DistanceRelease
        The rows whose neighbours are sought.
    b : DistanceRelease, optional
        The candidates, under the same operator; None: the other rows of a.
    n_neighbors : int, default 1
        In [1, number of candidates].

    Returns
    -------
    indices : ndarray of intp, shape (n_a, n_neighbors)
        Rows of b (of a when b is None), nearest first.
    estimates : ndarray of float64, shape (n_a, n_neighbors)
        Their unbiased squared-distance estimates (which can be negative).

    Raises
    ------
    TypeError
        When a or b is not a DistanceRelease, or n_neighbors not an int.
    ValueError
        When the releases were made with different operators or sizes, n_neighbors is
        outside its range, or the estimates overflow float64.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.distances import PrivateJLTransformer, nearest_neighbors
    >>> X = np.random.default_rng(0).uniform(size=(300, 20))
    >>> tr = PrivateJLTransformer(64, sparsity=1, epsilon=4.0, random_state=7).fit(X)
    >>> idx, est = nearest_neighbors(tr.release(X), n_neighbors=3)
    >>> idx.shape, est.shape
    ((300, 3), (300, 3))
    """
    same = b is None
    b = a if same else b
    _check_pair(a, b)
    nb = b.values.shape[0] - (1 if same else 0)
    if isinstance(n_neighbors, (bool, np.bool_)) or not isinstance(n_neighbors, numbers.Integral):
        raise TypeError(f"n_neighbors must be an int, got {type(n_neighbors).__name__}")
    if not 1 <= n_neighbors <= max(nb, 0):
        raise ValueError(f"n_neighbors must be in [1, {nb}] (the rows of {'a other than itself' if same else 'b'}), "
                         f"got {n_neighbors}")
    k = int(n_neighbors)
    n_a = a.values.shape[0]
    idx = np.empty((n_a, k), dtype=np.intp)
    est = np.empty((n_a, k))
    for i0, i1, D in _pair_blocks(a, b, same):
        if same:
            D[np.arange(i1 - i0), np.arange(i0, i1)] = np.inf
        # stable order: by estimate, then by index (argsort of the k + ties candidates)
        part = np.argpartition(D, k - 1, axis=1)[:, :k] if k < D.shape[1] else np.tile(np.arange(D.shape[1]), (i1 - i0, 1))
        kth = np.take_along_axis(D, part, axis=1).max(axis=1)
        for r in range(i1 - i0):
            cand = np.flatnonzero(D[r] <= kth[r])
            order = np.lexsort((cand, D[r, cand]))[:k]
            idx[i0 + r] = cand[order]
            est[i0 + r] = D[r, cand[order]]
    return idx, est
