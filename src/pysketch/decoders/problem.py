"""What every decoder works on: the decoding problem, the atoms of a mixture, and solutions.

A :class:`DecodingProblem` is the target (the demodulated mean sketch, from the feature
map's own ``demodulate``), the operator in float64, and what the sketch says about its
noise (count, and the private release's noise variance). Atom families (Diracs for
k-means, diagonal and isotropic Gaussians) give the phases and amplitudes of the sketch
of an atom and the chain rule back to their parameters; the objectives below (the
normalized correlation of one atom with a residual, the distance of a mixture to the
sketch, with gradients) and the non-negative least squares of the weights are shared by
CL-OMPR (pysketch.decoders.clompr) and the coreset decoder (pysketch.decoders.coreset).
A decoder (pysketch.decoders.base.Decoder) turns a problem into a MixtureSolution.
"""

import copy
import dataclasses
import math

import numpy as np
import scipy.optimize

from .._state import FEATURE_MAPS
from ..operators import FrequencyOperator
from . import kernels as _kernels

__all__ = ["ALPHA_BOUNDS", "ATOMS", "DecodingProblem", "DiracAtoms", "DiagonalGaussianAtoms", "IsotropicGaussianAtoms",
           "MixtureSolution", "atom_correlation", "atom_matrix", "bulk_proposal", "check_count_and_noise", "mixed_draw",
           "mixture_objective", "nnls", "refine_mixture", "screen"]

ALPHA_BOUNDS = (1e-9, 2.0)  #: the weights of a normalized sketch's mixture (pycle's CL-OMPR bounds)


def check_count_and_noise(count, noise_variance):
    """ValueError unless count is None or a positive int and noise_variance a finite number
    >= 0 (the sketch facts every decoding problem records).

    Parameters
    ----------
    count : None or int >= 1
        The sketch's number of records.
    noise_variance : float >= 0
        The release noise's variance per real coordinate of the mean.

    Raises
    ------
    ValueError
        When either is outside its range (a bool count, a NaN or negative variance).

    Examples
    --------
    >>> from pysketch.decoders.problem import check_count_and_noise
    >>> check_count_and_noise(1000, 0.0)
    >>> check_count_and_noise(0, 0.0)
    Traceback (most recent call last):
        ...
    ValueError: count must be None or a positive int, got 0
    """
    if count is not None and (isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer))
                              or count < 1):
        raise ValueError(f"count must be None or a positive int, got {count!r}")
    if not (isinstance(noise_variance, (int, float, np.floating)) and not isinstance(noise_variance, bool)
            and math.isfinite(noise_variance) and noise_variance >= 0):
        raise ValueError(f"noise_variance must be a finite number >= 0, got {noise_variance!r}")


class DecodingProblem:
    """What the decoders match: the operator (in float64) and the target z, the sketch
    mean demodulated by its map (``FeatureMap.demodulate``: the dither removed and, for
    quantized features, divided by their first harmonic 2 sqrt(2) / pi), so that the
    sketch of a Dirac at c is exp(i Omega^T c).

    `count` (the sketch's number of records, or None) and `noise_variance` (the variance
    of the release noise on each real coordinate of the mean, 0 for a clean sketch) are
    set by `from_sketch`; decoders that model the noise read them.

    Frames (`in_units`): a problem can be expressed in a frame of the data, an origin c and
    a unit u: its parameters are (theta - c) / u, its frequencies u Omega and its target z
    times exp(-i Omega^T c), so that the sketch of a Dirac at (x - c) / u is the same
    exp(i Omega^T x) times that phase. Decoders read the frequencies only through `apply`,
    `adjoint`, `omega_sq` and `radii`, which all include the unit, and the target through
    `z`, `zr` and `zi`, which include the origin; `operator` stays the map's Omega in the
    data's units. The estimators decode in the frame of their box (origin its centre, unit
    its largest half-width): the decoders then see the same problem (to rounding) whatever
    the data's scale and offset, so that their random starts, variance bounds and
    optimizers' tolerances, which are absolute numbers, act alike on every data set.

    Parameters
    ----------
    feature_map : FeatureMap
        A Fourier map ('complex', 'real', 'quantized'): one whose ``demodulate`` gives the
        target.
    mean : ndarray
        The sketch's mean (sum / count), in the map's sum layout.
    count : None or int >= 1, optional
        The sketch's number of records.
    noise_variance : float >= 0, default 0
        The variance of the release noise per real coordinate of the mean (0 for a clean
        sketch); > 0 makes the problem `private`.

    Raises
    ------
    TypeError
        When `feature_map` is not a FeatureMap.
    ValueError
        For a count or noise_variance outside its range, a map that is not a Fourier
        map (it has no ``demodulate``); from
        ``in_units``, for a unit that is not a positive finite number, an origin that is
        not d finite numbers, or a problem already in a frame.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> problem.d, problem.m, problem.count, problem.private, problem.z.dtype
    (2, 40, 1000, False, dtype('complex128'))
    >>> framed = problem.in_units(4.0, origin=[1.0, 1.0])  # parameters (theta - origin) / 4
    >>> framed.unit, framed.count
    (4.0, 1000)
    """

    #: The data's unit of the parameters (1: the data's own units; see `in_units`).
    unit = 1.0
    #: The origin of the parameters in the data (None: the data's own origin, 0).
    origin = None

    def __init__(self, feature_map, mean, *, count=None, noise_variance=0.0):
        FEATURE_MAPS.check(feature_map, "feature_map")
        m = feature_map.m
        z = feature_map.demodulate(mean)
        check_count_and_noise(count, noise_variance)
        self.count = count
        self.noise_variance = float(noise_variance)
        self.private = self.noise_variance > 0
        meta, arrays = feature_map.operator.get_state()
        meta = dict(meta, dtype="float64")
        self.operator = FrequencyOperator.from_state(meta, arrays)  # the same Omega, in float64
        self.z = z
        self.zr = np.ascontiguousarray(z.real)
        self.zi = np.ascontiguousarray(z.imag)
        self.d = feature_map.d
        self.m = m
        self._omega_sq = None

    @classmethod
    def from_sketch(cls, sketch):
        """The problem of a Sketch or PrivateSketch: its mean, count and noise (a private
        sketch's record gives the noise variance per real coordinate of its sum, divided
        by the squared count for the mean)."""
        n = max(int(sketch.count), 1)
        record = getattr(sketch, "privacy", None)
        noise = 0.0 if record is None else record.sum_noise_variance / (n * n)
        return cls(sketch.feature_map, sketch.mean(), count=n, noise_variance=noise)

    def in_units(self, unit, origin=None):
        """The same problem with parameters (theta - origin) / unit: frequencies u Omega,
        so that `apply`, `adjoint`, `omega_sq` and `radii` act on them, and the target
        times exp(-i Omega^T origin); the count and the noise are unchanged (the noise's
        variance has no unit, and a phase rotation keeps it). `unit` is a positive finite
        number (a power of two makes the conversions exact) and `origin` None (0) or d
        finite numbers. Convert a solution back with `to_data_units`. On a problem in
        the data's frame, unit 1 and no origin return the problem itself."""
        u = float(unit) if isinstance(unit, (int, float, np.integer, np.floating)) and not isinstance(
            unit, (bool, np.bool_)) else float("nan")
        if not (math.isfinite(u) and u > 0):
            raise ValueError(f"unit must be a positive finite number, got {unit!r}")
        if self.unit != 1.0 or self.origin is not None:
            raise ValueError("in_units applies to a problem in the data's frame (unit 1, no origin)")
        if origin is not None:
            c = np.asarray(origin, dtype=np.float64)
            if c.shape != (self.d,) or not np.isfinite(c).all():
                raise ValueError(f"origin must be None or {self.d} finite numbers (the problem's d), got shape "
                                 f"{c.shape}")
            if not c.any():
                origin = None
        if u == 1.0 and origin is None:
            return self
        out = copy.copy(self)
        out.unit = u
        out._omega_sq = None
        if origin is not None:
            out.origin = c.copy()
            phase = self.apply(c[None, :])[0]  # Omega^T c in the data's units
            cs, sn = _kernels.sincos(np.ascontiguousarray(phase))
            out.z = self.z * (cs - 1j * sn)
            out.zr = np.ascontiguousarray(out.z.real)
            out.zi = np.ascontiguousarray(out.z.imag)
        return out

    def apply(self, theta):
        """Omega^T theta for the rows of theta (k x d, float64) (u Omega^T theta in a unit
        u): the operator's product without the public entry's checks (the optimizer's
        iterates are finite)."""
        out = np.empty((theta.shape[0], self.m))
        theta = np.ascontiguousarray(theta, dtype=np.float64)
        self.operator.apply_into(theta if self.unit == 1.0 else theta * self.unit, out)
        return out

    def adjoint(self, v):
        """Omega v for the rows of v (k x m, float64) (u Omega v in a unit u), unchecked
        like `apply`."""
        out = np.empty((v.shape[0], self.d))
        self.operator.adjoint_into(np.ascontiguousarray(v, dtype=np.float64), out)
        if self.unit != 1.0:
            out *= self.unit
        return out

    @property
    def omega_sq(self):
        """Omega o Omega (d x m), the elementwise square, for Gaussian atoms (computed once;
        no fast form exists for structured operators, thesis sec. 5.2.4); u^2 times it in a
        unit u."""
        if self._omega_sq is None:
            om = self.operator.to_dense()
            if self.unit != 1.0:
                om = om * self.unit
            self._omega_sq = np.ascontiguousarray(om * om)
        return self._omega_sq

    @property
    def radii(self):
        """The norms ||omega_j|| of the frequencies (m,) (u times them in a unit u)."""
        r = np.asarray(self.operator.radii, dtype=np.float64)
        return r * self.unit if self.unit != 1.0 else r

    def to_data_units(self, solution):
        """A decoder's solution of this problem with its parameters back in the data's
        frame: positions (the first d columns of theta) times the unit plus the origin,
        variances (the other columns: diagonal or isotropic Gaussians) times its square;
        likewise a coreset solution's `mixture` and CL-AMP's `spreads`, `kernel_var` and
        `init_var`. Weights and residuals have no unit. The solution itself in the data's
        frame."""
        u, c = self.unit, self.origin
        if u == 1.0 and c is None:
            return solution

        def theta_back(theta):
            theta = np.array(theta, dtype=np.float64)
            theta[:, : self.d] *= u
            if c is not None:
                theta[:, : self.d] += c
            theta[:, self.d :] *= u * u
            return theta

        if not dataclasses.is_dataclass(solution):  # a decoder's own result type: theta only
            out = copy.copy(solution)
            out.theta = theta_back(solution.theta)
            return out
        changes = {"theta": theta_back(solution.theta)}
        fields = {f.name for f in dataclasses.fields(solution)}
        if getattr(solution, "mixture", None) is not None:
            changes["mixture"] = dataclasses.replace(solution.mixture, theta=theta_back(solution.mixture.theta))
        for name in ("spreads", "kernel_var", "init_var"):
            if name in fields and getattr(solution, name) is not None:
                changes[name] = getattr(solution, name) * (u * u)
        return dataclasses.replace(solution, **changes)


# ---------------------------------------------------------------------------------- atoms


#: The most atoms a decoder fits: each atom costs at least one search over the sketch (and
#: a mixture of more atoms than the sketch has numbers is not identifiable anyway), so more
#: would run for days; a size beyond it (up to 10^30 was fuzzed) is refused, naming n_atoms.
MAX_ATOMS = 1 << 16


def check_n_atoms(n_atoms):
    """n_atoms as an int in [1, MAX_ATOMS]; ValueError naming it otherwise."""
    if not isinstance(n_atoms, (int, np.integer)) or isinstance(n_atoms, bool) or not 1 <= n_atoms <= MAX_ATOMS:
        raise ValueError(f"n_atoms must be a positive integer <= {MAX_ATOMS}, got {n_atoms!r}")
    return int(n_atoms)


def check_box(lower, upper, d):
    """(lower, upper) as finite float64 arrays of shape (d,) (numbers broadcast) with upper >
    lower in every coordinate; ValueError naming them otherwise."""
    try:
        lo = np.broadcast_to(np.asarray(lower, dtype=np.float64), (d,)).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=np.float64), (d,)).copy()
    except (TypeError, ValueError):
        raise ValueError(f"lower and upper must be numbers or arrays of length {d} (the problem's d), got shapes "
                         f"{np.shape(lower)} and {np.shape(upper)}") from None
    if not (np.isfinite(lo).all() and np.isfinite(hi).all() and (hi > lo).all()):
        raise ValueError("lower and upper must be finite, with upper > lower in every coordinate")
    return lo, hi


class DiracAtoms:
    """Diracs delta_c (k-means): a(c) = exp(i Omega^T c), ||a|| = sqrt(m).

    Parameters
    ----------
    problem : DecodingProblem
        The sketch whose atoms these are.
    lower, upper : float or array_like of shape (d,)
        The box of the centres (the L-BFGS-B bounds), finite, upper > lower.

    Raises
    ------
    ValueError
        For a box that is not finite, of another width than d, or with upper <= lower.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem, DiracAtoms
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> atoms = DiracAtoms(problem, -5.0, 5.0)
    >>> atoms.n_params, atoms.random(np.random.default_rng(0), 3).shape, len(atoms.bounds())
    (2, (3, 2), 2)
    """

    def __init__(self, problem, lower, upper):
        self.problem = problem
        self.lower, self.upper = check_box(lower, upper, problem.d)
        self.n_params = problem.d

    def bounds(self):
        return list(zip(self.lower, self.upper))

    proposal = None  # (mean, std) of the data's bulk, set by clompr (see bulk_proposal)

    def random(self, rng, size):
        """`size` random atoms (rows): uniform in the box, and, once a proposal is set,
        half of them from N(mean, diag(std^2)) clipped to the box."""
        return mixed_draw(rng, self.lower, self.upper, self.proposal, size)

    def phases(self, theta):
        """(P, amp) for atoms theta (k x n_params)."""
        return self.problem.apply(theta), None

    def chain(self, theta, dP, dQ):
        """Gradient with respect to theta from dF/dP (and dF/dQ, unused here)."""
        return self.problem.adjoint(dP)


class DiagonalGaussianAtoms:
    """Diagonal Gaussians N(mu, diag(s2)) (GMM): a_j = exp(i omega_j^T mu - 1/2 sum_l
    omega_lj^2 s2_l) (thesis sec. 6.2.1). theta = (mu, s2), 2d parameters; bounds: mu in
    the box, s2 in [(1e-4)^2, 0.5^2] times the squared box widths (pycle's CL-OMPR bounds).

    Parameters
    ----------
    problem : DecodingProblem
        The sketch whose atoms these are.
    lower, upper : float or array_like of shape (d,)
        The box of the means, finite, upper > lower.
    sigma2_init : float or array_like of shape (d,), optional
        The variances of the random atoms (clipped to the bounds); None: (10^U(-0.8,
        -0.1) times the box width)^2 per coordinate.

    Raises
    ------
    ValueError
        For a box that is not finite, of another width than d, or with upper <= lower.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem, DiagonalGaussianAtoms
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> atoms = DiagonalGaussianAtoms(problem, -5.0, 5.0)
    >>> atoms.n_params, atoms.random(np.random.default_rng(0), 3).shape  # rows (mu, s2)
    (4, (3, 4))
    """

    def __init__(self, problem, lower, upper, sigma2_init=None):
        self.problem = problem
        self.lower, self.upper = check_box(lower, upper, problem.d)
        width2 = (self.upper - self.lower) ** 2
        self.s2_lower = 1e-8 * width2
        self.s2_upper = 0.25 * width2
        self.sigma2_init = sigma2_init
        self.n_params = 2 * problem.d

    def bounds(self):
        return list(zip(self.lower, self.upper)) + list(zip(self.s2_lower, self.s2_upper))

    def random(self, rng, size):
        """`size` random atoms (rows): means uniform in the box, variances below."""
        mu = mixed_draw(rng, self.lower, self.upper, getattr(self, "proposal", None), size)
        if self.sigma2_init is not None:
            s2 = np.clip(np.broadcast_to(self.sigma2_init, mu.shape), self.s2_lower, self.s2_upper)
        else:  # (10^U(-0.8, -0.1) width)^2 (pycle's CL-OMPR initialisation)
            s2 = (10.0 ** rng.uniform(-0.8, -0.1, mu.shape) * (self.upper - self.lower)) ** 2
        return np.concatenate([mu, s2], axis=1)

    def phases(self, theta):
        d = self.problem.d
        mu, s2 = theta[:, :d], theta[:, d:]
        P = self.problem.apply(mu)
        Q = s2 @ self.problem.omega_sq
        return P, np.exp(-0.5 * Q)

    def chain(self, theta, dP, dQ):
        d_mu = self.problem.adjoint(dP)
        d_s2 = dQ @ self.problem.omega_sq.T
        return np.concatenate([d_mu, d_s2], axis=1)


def mixed_draw(rng, lower, upper, proposal, size):
    """Points uniform in the box, half of them replaced by draws of the proposal.

    Parameters
    ----------
    rng : numpy.random.Generator
        Draws the points.
    lower, upper : ndarray of shape (d,)
        The box.
    proposal : (ndarray, ndarray) or None
        (mean, std) of a normal law (:func:`bulk_proposal`); its draws are clipped to the
        box. None: all uniform.
    size : int
        The number of points; with a proposal and size > 1, the first size // 2 come
        from it.

    Returns
    -------
    ndarray of shape (size, d)

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders.problem import mixed_draw
    >>> lo, hi = np.zeros(2), np.ones(2)
    >>> pts = mixed_draw(np.random.default_rng(0), lo, hi, (np.full(2, 0.5), np.full(2, 0.01)), 4)
    >>> pts.shape, bool(np.allclose(pts[:2], 0.5, atol=0.1))
    ((4, 2), True)
    """
    pts = rng.uniform(lower, upper, size=(size, lower.size))
    if proposal is not None and size > 1:
        mean, std = proposal
        h = size // 2
        pts[:h] = np.clip(mean + std * rng.standard_normal((h, lower.size)), lower, upper)
    return pts


def bulk_proposal(family, rng=None, args=None):
    """(mean, std) of the data's bulk read from the sketch's lowest frequencies, or None.

    Why: each atom search starts from the best of STEP1_CANDIDATES random points. Uniform
    points fill the box, and when the box is much larger than the data (the public bounds
    of a private fit, say +-10 around clusters within +-7 in d = 10) nearly all its
    volume is empty corners: measured, atoms then settled there (7 of 10 atoms 14-18 away
    from every true centre, RSE 2.2-3.6 on all of 5 seeds) where the data's own box gave
    RSE 1.01. Half the candidates are therefore drawn around the bulk.

    How: for small omega the sketch is close to the characteristic function of one
    Gaussian N(mu, s^2 I): z(omega) e^{-i omega^T c0} ~ exp(i omega^T (mu - c0) - s^2
    ||omega||^2 / 2) with c0 the box centre. On the 5% lowest-radius frequencies (at least
    2d + 2), mu - c0 is the weighted least-squares solution of the phases (weights
    abs(z)), twice (the second pass recentred, so that phases do not wrap), and s^2 the
    slope of log|z| against ||omega||^2. None when the fit is not usable (too few
    frequencies, no decay).

    Parameters
    ----------
    family : DiracAtoms (or any family with `problem`, `lower` and `upper`)
        The problem and the box.
    rng, args
        Not used.

    Returns
    -------
    (ndarray, ndarray) or None
        (mean, std) of shape (d,) each, the mean inside the box and std at most half its
        width.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem, DiracAtoms
    >>> from pysketch.decoders.problem import bulk_proposal
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.random.default_rng(0).normal(size=(1000, 2)) + 2.0
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 200, random_state=0), "complex").sketch(X))
    >>> mean, std = bulk_proposal(DiracAtoms(problem, -5.0, 5.0))
    >>> bool(np.allclose(mean, 2.0, atol=0.5)), bool(np.allclose(std, 1.0, atol=0.5))
    (True, True)
    """
    problem = family.problem
    d, m = problem.d, problem.m
    lower, upper = family.lower, family.upper
    n_low = max(2 * d + 2, m // 20)
    if n_low > m:
        return None
    W = problem.apply(np.eye(d))  # (d, m): row l is (omega_lj)_j
    r2 = np.sum(W * W, axis=0)
    idx = np.argsort(r2)[:n_low]
    A, z = W[:, idx].T, problem.z[idx]
    c = 0.5 * (lower + upper)
    for _ in range(2):
        y = z * np.exp(-1j * (A @ c))
        w = np.abs(y)
        if not np.all(np.isfinite(w)) or w.max() <= 0:
            return None
        sw = np.sqrt(w / w.max())
        delta, *_ = np.linalg.lstsq(A * sw[:, None], np.angle(y) * sw, rcond=None)
        c = np.clip(c + delta, lower, upper)
    y = np.abs(z * np.exp(-1j * (A @ c)))
    ok = y > 1e-3 * y.max()
    if ok.sum() < 3:
        return None
    slope = np.polyfit(r2[idx][ok], np.log(y[ok]), 1)[0]
    if not slope < 0:
        return None
    std = np.minimum(np.sqrt(-2.0 * slope), 0.5 * (upper - lower))
    return c, std


# ---------------------------------------------------------------------------------- objectives


def atom_correlation(family, theta, r_real, r_imag):
    """-Re(a^H r) / ||a|| and its gradient for one atom theta (n_params,).

    The objective of CL-OMPR's step 1 (a new atom), minimized by L-BFGS-B.

    Parameters
    ----------
    family : atom family
        DiracAtoms, DiagonalGaussianAtoms or IsotropicGaussianAtoms.
    theta : ndarray of shape (n_params,)
        The atom.
    r_real, r_imag : ndarray of float64, shape (m,)
        The real and imaginary parts of the residual r (C-contiguous).

    Returns
    -------
    value : float
    gradient : ndarray of shape (n_params,)

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem, DiracAtoms
    >>> from pysketch.decoders.problem import atom_correlation
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.random.default_rng(0).normal(size=(1000, 2)) + 2.0
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> value, grad = atom_correlation(DiracAtoms(problem, -5, 5), np.array([2.0, 2.0]), problem.zr, problem.zi)
    >>> bool(value < 0), grad.shape
    (True, (2,))
    """
    P, amp = family.phases(theta[None, :])
    m = P.shape[1]
    Gr = np.empty((1, m)) if amp is not None else None
    Gi = np.empty((1, m))
    corr, sq = np.empty(1), np.empty(1)
    _kernels.atom_terms(P, amp, None, r_real, r_imag, Gr, Gi, corr, sq)
    # ||a|| clamped below at 1e-15 sqrt(n_params): atoms of huge
    # variance vanish numerically
    norm = max(math.sqrt(sq[0]), 1e-15 * math.sqrt(family.n_params))
    g, n = corr[0], norm
    dP = -Gi / n  # d(-g/n)/dP
    dQ = None
    if amp is not None:  # dg/dQ = -Gr/2, dn/dQ = -amp^2 / (2n)
        dQ = (0.5 * Gr) / n + g * (-(amp * amp) / (2 * n)) / (n * n)
    grad = family.chain(theta[None, :], dP, dQ)[0]
    return -g / n, grad


def mixture_objective(family, theta, alpha, problem, want_grad=True):
    """F = ||z - sum_k alpha_k a(theta_k)||^2 and its gradients (theta: k x n_params).

    Parameters
    ----------
    family : atom family
        DiracAtoms, DiagonalGaussianAtoms or IsotropicGaussianAtoms.
    theta : ndarray of shape (k, n_params)
        The atoms.
    alpha : ndarray of shape (k,)
        Their weights.
    problem : DecodingProblem
        The target z.
    want_grad : bool, default True
        False: F alone.

    Returns
    -------
    F : float
    grad_theta : ndarray of shape (k, n_params)
        Only with want_grad.
    grad_alpha : ndarray of shape (k,)
        Only with want_grad.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem, DiracAtoms
    >>> from pysketch.decoders.problem import mixture_objective
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> F, g_theta, g_alpha = mixture_objective(DiracAtoms(problem, -5, 5), np.array([[-3.0, -3], [3, 3]]),
    ...                                         np.array([0.5, 0.5]), problem)
    >>> g_theta.shape, g_alpha.shape
    ((2, 2), (2,))
    """
    P, amp = family.phases(theta)
    k, m = P.shape
    Gi = np.empty((k, m)) if want_grad else None
    Gr = np.empty((k, m)) if want_grad and amp is not None else None
    g_alpha = np.empty(k)
    F = _kernels.atom_terms(P, amp, np.ascontiguousarray(alpha, dtype=np.float64), problem.zr, problem.zi, Gr, Gi,
                         g_alpha, None)
    if not want_grad:
        return F
    dP = -2.0 * alpha[:, None] * Gi
    dQ = alpha[:, None] * Gr if amp is not None else None
    return F, family.chain(theta, dP, dQ), g_alpha


def atom_matrix(family, theta):
    """The atoms as an (m, k) complex matrix.

    Parameters
    ----------
    family : atom family
        DiracAtoms, DiagonalGaussianAtoms or IsotropicGaussianAtoms.
    theta : ndarray of shape (k, n_params)
        The atoms.

    Returns
    -------
    ndarray of complex128, shape (m, k)
        Column j is the sketch a(theta_j) of atom j.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem, DiracAtoms
    >>> from pysketch.decoders.problem import atom_matrix
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> A = atom_matrix(DiracAtoms(problem, -5, 5), np.array([[0.0, 0.0], [1.0, -1.0]]))
    >>> A.shape, bool(np.allclose(np.abs(A), 1.0))  # Diracs: unit moduli
    ((40, 2), True)
    """
    P, amp = family.phases(theta)
    c, s = _kernels.sincos(P.reshape(-1))
    A = (c + 1j * s).reshape(P.shape)
    if amp is not None:
        A = A * amp
    return A.T


def nnls(A, z):
    """argmin_{x >= 0} ||z - A x|| for complex A (m x k) and z: real and imaginary parts
    stacked (a real NNLS of twice the rows).

    Parameters
    ----------
    A : ndarray of complex, shape (m, k)
        The atoms, as columns.
    z : ndarray of complex, shape (m,)
        The target.

    Returns
    -------
    ndarray of float64, shape (k,)
        x >= 0 (scipy.optimize.nnls, at most 50 k iterations).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders.problem import nnls
    >>> A = np.array([[1.0, 1j], [1.0, -1j], [1j, 0.0]])
    >>> np.round(nnls(A, A @ np.array([0.3, 0.7])), 6)
    array([0.3, 0.7])
    """
    M = np.concatenate([A.real, A.imag])
    b = np.concatenate([z.real, z.imag])
    x, _ = scipy.optimize.nnls(M, b, maxiter=50 * M.shape[1])
    return x


class IsotropicGaussianAtoms:
    """Isotropic Gaussians N(mu, s2 I): a_j = exp(i omega_j^T mu - s2 ||omega_j||^2 / 2).

    theta = (mu, s2), d + 1 parameters; mu in the box, s2 in [1e-8, 0.25] times the mean
    squared width of the box. Unlike DiagonalGaussianAtoms it needs only the squared
    norms of the frequencies (m numbers), never the d x m matrix Omega o Omega, so it
    works with structured operators at any size.

    Parameters
    ----------
    problem : DecodingProblem
        The sketch whose atoms these are.
    lower, upper : float or array_like of shape (d,)
        The box of the means, finite, upper > lower.

    Raises
    ------
    ValueError
        For a box that is not finite, of another width than d, or with upper <= lower.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem, IsotropicGaussianAtoms
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> atoms = IsotropicGaussianAtoms(problem, -5.0, 5.0)
    >>> atoms.n_params, atoms.random(np.random.default_rng(0), 3).shape  # rows (mu, s2)
    (3, (3, 3))
    """

    def __init__(self, problem, lower, upper):
        self.problem = problem
        self.lower, self.upper = check_box(lower, upper, problem.d)
        width2 = float(np.mean((self.upper - self.lower) ** 2))
        self.s2_lower, self.s2_upper = 1e-8 * width2, 0.25 * width2
        self.n_params = problem.d + 1
        d = problem.d
        sq = np.zeros(problem.m)
        for start in range(0, d, 32):  # |omega_j|^2 from Omega^T e_l, 32 coordinates at a time
            rows = problem.apply(np.eye(d)[start : start + 32])
            sq += np.einsum("ij,ij->j", rows, rows)
        self.omega_sq_norms = sq

    def bounds(self):
        return list(zip(self.lower, self.upper)) + [(self.s2_lower, self.s2_upper)]

    def random(self, rng, size, proposal=None):
        """`size` random atoms: means as DiracAtoms.random, widths log-uniform between
        10^-2.5 and 10^-0.5 times the box's RMS width."""
        mu = mixed_draw(rng, self.lower, self.upper, proposal, size)
        s2 = self.s2_upper * 4.0 * (10.0 ** rng.uniform(-2.5, -0.5, size)) ** 2
        return np.column_stack([mu, np.clip(s2, self.s2_lower, self.s2_upper)])

    def phases(self, theta):
        d = self.problem.d
        P = self.problem.apply(theta[:, :d])
        return P, np.exp(-0.5 * theta[:, d:] * self.omega_sq_norms[None, :])

    def chain(self, theta, dP, dQ):
        d_mu = self.problem.adjoint(dP)
        d_s2 = dQ @ self.omega_sq_norms  # Q = s2 |omega|^2: dF/ds2 = sum_j dF/dQ_j |omega_j|^2
        return np.column_stack([d_mu, d_s2])


#: Atom families by name (what Decoder.decode's `atoms` names).
ATOMS = {"dirac": DiracAtoms, "diagonal_gaussian": DiagonalGaussianAtoms, "isotropic_gaussian": IsotropicGaussianAtoms}


@dataclasses.dataclass
class MixtureSolution:
    """The result of a decoder: atom parameters (k x n_params), weights summing to 1,
    the residual ||z - A alpha|| (before normalizing the weights) and the restart it came
    from.

    Parameters
    ----------
    theta : ndarray of shape (k, n_params)
        The atoms: centres (Diracs), or (mean, variances) rows (Gaussians).
    weights : ndarray of shape (k,)
        The atoms' weights, summing to 1.
    residual : float
        ||z - A alpha||, alpha the weights before normalization (NaN where no sketch
        distance is fitted: the grid decoder).
    restart : int
        The restart (start) the solution came from.
    n_iter : int
        The decoder's iterations (what counts as one is the decoder's: CL-OMPR's atom
        steps, CL-AMP's SHyGAMP iterations, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem, DiracAtoms, clompr
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> solution = clompr(DiracAtoms(problem, -5, 5), 2, random_state=0)
    >>> solution.theta.shape, round(float(solution.weights.sum()), 12), solution.restart
    ((2, 2), 1.0, 0)
    """

    theta: np.ndarray
    weights: np.ndarray
    residual: float
    restart: int
    n_iter: int


def screen(family, r, candidates):
    """The normalized correlation Re(a^H r) / ||a|| of every candidate atom (rows).

    Parameters
    ----------
    family : atom family
        DiracAtoms, DiagonalGaussianAtoms or IsotropicGaussianAtoms.
    r : ndarray of complex, shape (m,)
        The residual.
    candidates : ndarray of shape (c, n_params)
        The candidate atoms.

    Returns
    -------
    ndarray of shape (c,)

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem, DiracAtoms
    >>> from pysketch.decoders.problem import screen
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.random.default_rng(0).normal(size=(1000, 2)) + 2.0
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> scores = screen(DiracAtoms(problem, -5, 5), problem.z, np.array([[2.0, 2.0], [-4.0, -4.0]]))
    >>> int(np.argmax(scores))  # the candidate at the data
    0
    """
    P, amp = family.phases(candidates)
    corr, sq = np.empty(P.shape[0]), np.empty(P.shape[0])
    _kernels.atom_terms(P, amp, None, np.ascontiguousarray(r.real), np.ascontiguousarray(r.imag), None, None, corr, sq)
    return corr / np.maximum(np.sqrt(sq), 1e-15 * math.sqrt(family.n_params))


def refine_mixture(family, problem, theta, alpha, ftol, maxiter):
    """Joint L-BFGS-B refinement of a mixture: (theta, alpha) minimizing
    `mixture_objective` from the given values, atoms within ``family.bounds()`` and the
    weights within ALPHA_BOUNDS.

    Parameters
    ----------
    family : atom family
        The atoms (DiracAtoms, IsotropicGaussianAtoms, DiagonalGaussianAtoms).
    problem : DecodingProblem
        The sketch and its operator.
    theta : (k, n_params) array
        The starting atoms.
    alpha : (k,) array
        The starting weights (clipped into ALPHA_BOUNDS).
    ftol : float
        L-BFGS-B's relative tolerance on the objective.
    maxiter : int
        L-BFGS-B's iteration limit.

    Returns
    -------
    theta : (k, n_params) array
    alpha : (k,) array

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import DecodingProblem, DiracAtoms
    >>> from pysketch.decoders.problem import refine_mixture
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.repeat([[-3.0, -3.0], [3.0, 3.0]], 500, axis=0) + np.random.default_rng(0).normal(0, 0.5, (1000, 2))
    >>> problem = DecodingProblem.from_sketch(FeatureMap(make_operator(2, 40, random_state=0), "complex").sketch(X))
    >>> theta, alpha = refine_mixture(DiracAtoms(problem, -5, 5), problem, np.array([[-2.7, -3.3], [3.3, 2.7]]),
    ...                               np.array([0.5, 0.5]), 1e-9, 100)
    >>> bool(np.allclose(theta, [[-3, -3], [3, 3]], atol=0.2))
    True
    """
    k, p = theta.shape
    bounds = family.bounds() * k + [ALPHA_BOUNDS] * k

    def fun(x):
        th = x[: k * p].reshape(k, p)
        al = x[k * p :]
        F, g_theta, g_alpha = mixture_objective(family, th, al, problem)
        return F, np.concatenate([g_theta.ravel(), g_alpha])

    x0 = np.concatenate([theta.ravel(), np.clip(alpha, *ALPHA_BOUNDS)])
    res = scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                                  options={"ftol": ftol, "maxiter": maxiter})
    return res.x[: k * p].reshape(k, p), res.x[k * p :]


