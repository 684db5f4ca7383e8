"""Principal subspaces from a quadratic sketch: the Burer-Monteiro decoder.

A quadratic sketch's mean is z = M(C) = [omega_j^T C omega_j]_j, rank-one measurements of
the records' second-moment matrix C about the map's centre (Chatalic et al. 2022, Def. 6;
thesis (9.11)). The decoder fits a rank-k factor U (d x k) and an isotropic floor s >= 0,

    min_{U, s}  || M(U U^T + s I) - z ||_2^2 / ||z||_2^2,      M(s I)_j = s ||omega_j||^2,

(the thesis' (9.12), which has no floor), keeps the start of smallest residual, and
returns the top-k eigenvectors of U U^T through a QR of U (U = Q R, U U^T = Q (R R^T) Q^T:
a k x k eigenproblem). With P = Omega^T U (m x k) and the residual e = rowsum(P^2) + s w - z,
the gradient is 4 Omega diag(e) P in U and 2 e^T w in s (derived from the objective): both
through the operator's products for all k columns at once, a range of frequencies at a
time, so memory is O(kd + m) and no d x d matrix is ever formed.

The starts and the solver (`BurerMonteiro`):

- the first start is spectral, as in phase retrieval (Candes, Li & Soltanolkotabi, "Phase
  retrieval via Wirtinger flow", IEEE Trans. Inf. Theory 2015, sec. II-B): the top-k
  eigenvectors of the back-projection Y = sum_j z_j (omega_j omega_j^T - w_j / (d + 2) I),
  whose expectation is a positive multiple of C for frequencies of uniformly random
  directions: for u uniform on the unit sphere of R^D and C supported on the first d
  coordinates, E[(u^T C u) u u^T] = (2C + tr(C) I) / (D (D + 2)) and E[(u^T C u) ||u_d||^2]
  = tr(C) (d + 2) / (D (D + 2)), u_d the first d coordinates; a frequency of radius r_j of
  a union of orthonormal bases of R^D (D = d, or d padded) is r_j u_d for such a u, Haar
  bases exactly, the operator's R3 blocks approximately. Found by block power iterations
  through the operator, with scales fitted by least squares
  (`SubspaceProblem.spectral_start`). The other starts are Gaussian, as before;
- from the spectral start, Gauss-Newton steps (each direction from a few conjugate-gradient
  iterations on the Gauss-Newton system, Hestenes & Stiefel 1952; truncated as in the
  inexact Newton methods of Dembo, Eisenstat & Steihaug, SIAM J. Numer. Anal. 1982), each
  with an exact line search: the residuals are quadratic along any line, so F is a quartic
  polynomial there, whose five coefficients cost one product of 2k columns
  (`SubspaceProblem.line_quartic`);
- then L-BFGS (`lbfgs`) with the stopping rules below, from every start (the Gaussian
  starts with it alone, as before).

Measured at d = 2^15, k = 20, m = 2kd, n = 10^4 (float32 R3 operator, one core): L-BFGS
from a Gaussian start took 2004 iterations (545 s); from the spectral start (20 power
iterations), Gauss-Newton steps of 8 conjugate-gradient iterations and a short L-BFGS
finish took 100 iterations in all (38 s; captured variance 0.999997 both). At d = 4096,
Gaussian starts took 799-936 L-BFGS iterations (3 pairs, four seeds), the spectral start
82-91 (two seeds). From Gaussian starts Gauss-Newton steps stalled (residual 2.2e-2 after
30 steps at d = 4096, where L-BFGS goes on to 2.1e-7), so those starts keep L-BFGS alone.

Why the floor: the tail of a real spectrum (everything past the k-th eigenvalue) adds
about tr(C_tail) ||omega_j||^2 / d to every measurement, which no rank-k U U^T can
represent; without s the fit bends U toward it. The floor is the tail's isotropic part,
and the explained variance of a component is its eigenvalue in U U^T plus s.
"""

import dataclasses
import math
import numbers

import numpy as np

from .._checks import check_int
from .._random import as_generator
from .._threads import blas_single_thread
from .._state import FEATURE_MAPS
from .base import DECODERS, Decoder
from .problem import check_count_and_noise

__all__ = ["BurerMonteiro", "SubspaceProblem", "SubspaceSolution", "lbfgs"]

#: Frequencies per range of the objective: at most this many floats (8 MiB) of P = Omega^T U at once.
_CHUNK_FLOATS = 1 << 20
#: Block power iterations of the spectral start. The eigengap of the back-projection is
#: small at m = 2kd (its top-k eigenvectors are themselves a rough estimate: captured
#: variance about 0.70), so the iterations converge slowly: d = 4096, k = 20, mean sin^2 of
#: the principal angles to C's top-k after 2, 4, 8, 16 and 32 iterations 0.93, 0.77, 0.49,
#: 0.33, 0.30 (three seeds alike). Operator passes of the whole decode (each iteration is
#: one), three seeds: 8 iterations, 182-279; 16, 163-176; 24, 160-170.
_SPECTRAL_ITERATIONS = 20
#: Conjugate-gradient iterations per Gauss-Newton step (d = 4096, k = 20, m = 2kd, from the
#: spectral start, decode iterations for two seeds: 5 CG iterations, 97 and 109; 8, 82 and
#: 91; 12, 105 and 105: more iterations do not buy longer steps far from the optimum).
_GN_CG = 8
#: The Gauss-Newton steps end (and L-BFGS takes over) when a step decreases F by less than
#: this fraction of F: converged, or stalled far from the optimum.
_GN_SWITCH = 1e-3


class _Workspace:
    """Buffers reused by every product of one decode: at d = 2^15, k = 20 each is a few MB,
    and allocating them anew for every evaluation (thousands) left the heap fragmented."""

    def __init__(self):
        self._buffers = {}

    def get(self, name, shape, dtype):
        size = math.prod(shape)
        buf = self._buffers.get(name)
        if buf is None or buf.dtype != dtype or buf.size < size:
            buf = self._buffers[name] = np.empty(size, dtype)
        return buf[:size].reshape(shape)

    def clear(self):
        self._buffers.clear()


class SubspaceProblem:
    """What the subspace decoders match: the map's operator (products in its dtype, sums in
    float64), the target
    z_j = omega_j^T C omega_j (`FeatureMap.second_moments` of the sketch's mean), the
    squared frequency norms w_j = ||omega_j||^2, the map's centre (C is about it) and the
    noise of a private release (variance per coordinate of the mean).

    When every frequency has the same norm (unions of orthonormal bases without padding,
    the compressive PCA's operators), `w` is that one value broadcast to m entries (a
    read-only view: m float64 less).

    Parameters
    ----------
    feature_map : QuadraticMap
        A map with ``second_moments`` (kind 'quadratic').
    mean : ndarray of shape (m,)
        The sketch's mean.
    count : None or int >= 1, optional
        The sketch's number of records.
    noise_variance : float >= 0, default 0
        The release noise's variance per coordinate of the mean; > 0 makes the problem
        `private` (and sets the discrepancy level of :class:`BurerMonteiro`).

    Raises
    ------
    TypeError
        When `feature_map` is not a FeatureMap.
    ValueError
        For a count or noise_variance outside its range (and from the map's
        ``second_moments``, for a map without second moments).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import SubspaceProblem
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.random.default_rng(0).normal(size=(2000, 8)) * [3.0, 2.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]
    >>> problem = SubspaceProblem.from_sketch(FeatureMap(make_operator(8, 160, random_state=0), "quadratic").sketch(X))
    >>> problem.d, problem.m, problem.z.shape, bool(abs(problem.total_variance() / 13 - 1) < 0.3)  # tr(C) ~ 9 + 4
    (8, 160, (160,), True)
    """

    def __init__(self, feature_map, mean, *, count=None, noise_variance=0.0):
        FEATURE_MAPS.check(feature_map, "feature_map")
        z = feature_map.second_moments(mean)
        check_count_and_noise(count, noise_variance)
        # the map's own operator, in its own precision (no copy: at d = 2^15, m = 2kd a float64
        # copy of a float32 R3 operator measured +100 MB); the residuals and sums are float64
        self.operator = feature_map.operator
        self.z = z
        self.d = feature_map.d
        self.m = feature_map.m
        self.count = count
        self.noise_variance = float(noise_variance)
        self.private = self.noise_variance > 0
        centre = getattr(feature_map, "centre", None)
        self.centre = np.zeros(self.d) if centre is None else np.array(centre, dtype=np.float64)
        self.mean = self.centre  # the point the second moments are about (as CovarianceProblem.mean)
        w = self.operator.column_sq_norms()
        if w.size and bool(np.all(w == w[0])):
            w = np.broadcast_to(w[0], w.shape)
        self.w = w
        self._ranges = {}
        self._zw = None  # z^T w, when the spectral start needs it
        # the residuals in a power-of-two unit of z (exact): the objective and its gradients
        # neither underflow (records ~1e-150: z ~ 1e-300, ||e||^2 ~ 1e-600) nor overflow
        top = float(np.max(np.abs(z))) if z.size else 0.0
        self._zu = math.ldexp(1.0, math.frexp(top)[1]) if top > 0 and math.isfinite(top) else 1.0
        self._zs = max(float(np.sum(np.square(z / self._zu))), 1e-300)  # ||z / zu||^2

    @classmethod
    def from_sketch(cls, sketch):
        """The problem of a Sketch or PrivateSketch (a private sketch's record gives the noise
        variance per coordinate of its sum, divided by the squared count for the mean)."""
        n = max(int(sketch.count), 1)
        record = getattr(sketch, "privacy", None)
        noise = 0.0 if record is None else record.sum_noise_variance / (n * n)
        return cls(sketch.feature_map, sketch.mean(), count=n, noise_variance=noise)

    def total_variance(self):
        """tr(C) estimated from the sketch: sum_j z_j = tr(C Omega Omega^T), so tr(C) =
        d sum(z) / sum(w) exactly when Omega Omega^T is a multiple of the identity (unions
        of orthonormal bases, R3 blocks of unit radii even with padding), and unbiased for
        isotropic laws. Never below 0."""
        return max(self.d * float(self.z.sum()) / float(self.w.sum()), 0.0)

    def ranges(self, k):
        """The operator in ranges of frequencies holding at most about 1M floats of P for
        k columns (kept per k)."""
        if k not in self._ranges:
            self._ranges[k] = self.operator.column_ranges(max(1, _CHUNK_FLOATS // max(k, 1)))
        return self._ranges[k]

    def _weights(self, start, stop):
        return self.w[start:stop]

    def _fit_pass(self, Ut, s, G, ws):
        """(sum e_j^2, e^T w) for e = (rowsum(P^2) + s w - z) / zu, P = Omega^T U (Ut: k x d
        rows in the operator's dtype), and G (k x d float64) = rows of Omega diag(e) P."""
        k, d = Ut.shape
        dt = self.operator.dtype
        G.fill(0.0)
        g = ws.get("adjoint", (k, d), dt)
        ee = ew = 0.0
        for start, op in self.ranges(k):
            mc = op.m
            P = ws.get("P", (k, mc), dt)
            op.apply_into(Ut, P)
            e = np.einsum("ij,ij->j", P, P, dtype=np.float64)
            w = self._weights(start, start + mc)
            if s != 0.0:
                e += s * w
            e -= self.z[start : start + mc]
            if self._zu != 1.0:
                e /= self._zu
            ee += float(e @ e)
            ew += float(e @ w)
            P *= e.astype(dt, copy=False)
            op.adjoint_into(P, g)
            G += g
        return ee, ew

    def objective(self, U, s, out=None):
        """F = ||M(U U^T + s I) - z||^2 / ||z||^2 with its gradients in U (d x k; written into
        `out` when given) and in s."""
        d, k = U.shape
        Ut = np.ascontiguousarray(U.T, dtype=self.operator.dtype)
        G = np.empty((k, d))
        ee, ew = self._fit_pass(Ut, float(s), G, _Workspace())
        scale, zu = self._zs, self._zu
        if out is None:
            out = np.empty((d, k))
        np.multiply(G.T, 4.0 / scale / zu, out=out)
        return ee / scale, out, 2.0 * ew / scale / zu

    def scale(self):
        """||z||^2 (the objective's denominator; it may under- or overflow at extreme data
        scales: `noise_level` is the robust ratio)."""
        return max(float(self.z @ self.z), 1e-300)

    def noise_level(self):
        """noise_variance / ||z||^2, computed in the unit of z."""
        return self.noise_variance / self._zu / self._zu / self._zs

    # ---------------------------------------------------------------- the decoders' variables
    #
    # x = (V, t), k d + 1 floats: V = U^T / unit row by row (k x d), t = sqrt(s) / unit, with
    # `unit` a power of two near the records' spread (BurerMonteiro.decode).

    def _rows(self, x, k, unit, ws, name="W"):
        """unit * V in the operator's dtype (k x d, a workspace buffer)."""
        n = x.size - 1
        Ut = ws.get(name, (k, n // k), self.operator.dtype)
        np.multiply(x[:n].reshape(k, n // k), unit, out=Ut, casting="same_kind")
        return Ut

    def _pair(self, x, v, k, unit, ws):
        """W = [unit V; unit D] (2k x d, the operator's dtype) for the direction v = (D, dt)."""
        n = x.size - 1
        d = n // k
        W = ws.get("W", (2 * k, d), self.operator.dtype)
        np.multiply(x[:n].reshape(k, d), unit, out=W[:k], casting="same_kind")
        np.multiply(v[:n].reshape(k, d), unit, out=W[k:], casting="same_kind")
        return W

    def value_and_gradient(self, x, k, unit, grad, ws=None):
        """F at x = (V, t) (see above), with its gradient in x written into `grad`."""
        ws = _Workspace() if ws is None else ws
        n = x.size - 1
        t = float(x[n]) * unit
        G = grad[:n].reshape(k, n // k)
        ee, ew = self._fit_pass(self._rows(x, k, unit, ws), t * t, G, ws)
        c = 4.0 / self._zs / self._zu * unit  # d/dV = unit dF/dU^T, d/dt = unit 2 (unit t) dF/ds
        G *= c
        grad[n] = c * t * ew
        return ee / self._zs

    def gauss_newton_product(self, x, v, k, unit, out, ws=None):
        """H v for the Gauss-Newton matrix H = 2 J^T J / ||z||^2 of F at x (J the Jacobian
        of the residuals e in x), written into `out`. With P = Omega^T U, Q = Omega^T (unit
        D) and v = (D, dt): J v = (2 rowsum(P Q) + 2 (unit t)(unit dt) w) / zu, and
        H v = 4 unit / (zs zu) (rows of Omega diag(J v) P, (unit t) (J v)^T w): one product
        of 2k columns and one adjoint of k."""
        ws = _Workspace() if ws is None else ws
        n = x.size - 1
        d = n // k
        dt = self.operator.dtype
        W = self._pair(x, v, k, unit, ws)
        t, dt_ = float(x[n]) * unit, float(v[n]) * unit
        G = out[:n].reshape(k, d)
        G.fill(0.0)
        g = ws.get("adjoint", (k, d), dt)
        qw = 0.0
        for start, op in self.ranges(2 * k):
            mc = op.m
            P = ws.get("P", (2 * k, mc), dt)
            op.apply_into(W, P)
            # sum_i P_ij Q_ij in the operator's dtype: rounding of the order of the products' own
            q = np.einsum("ij,ij->j", P[:k], P[k:]).astype(np.float64)
            q *= 2.0
            w = self._weights(start, start + mc)
            if t != 0.0 and dt_ != 0.0:
                q += (2.0 * t * dt_) * w
            if self._zu != 1.0:
                q /= self._zu
            qw += float(q @ w)
            Pu = P[:k]
            Pu *= q.astype(dt, copy=False)
            op.adjoint_into(Pu, g)
            G += g
        c = 4.0 / self._zs / self._zu * unit
        G *= c
        out[n] = c * t * qw
        return out

    def line_quartic(self, x, v, k, unit, ws=None):
        """(c_0, ..., c_4) with F(x + a v) = sum_i c_i a^i exactly: along a line the residuals
        are quadratic in a, e(a) = e0 + a e1 + a^2 e2. One product of 2k columns."""
        ws = _Workspace() if ws is None else ws
        n = x.size - 1
        dt = self.operator.dtype
        W = self._pair(x, v, k, unit, ws)
        t, dt_ = float(x[n]) * unit, float(v[n]) * unit
        c = np.zeros(5)
        for start, op in self.ranges(2 * k):
            mc = op.m
            P = ws.get("P", (2 * k, mc), dt)
            op.apply_into(W, P)
            w = self._weights(start, start + mc)
            e0 = np.einsum("ij,ij->j", P[:k], P[:k], dtype=np.float64)
            if t != 0.0:
                e0 += (t * t) * w
            e0 -= self.z[start : start + mc]
            e1 = np.einsum("ij,ij->j", P[:k], P[k:]).astype(np.float64)
            e1 *= 2.0
            e2 = np.einsum("ij,ij->j", P[k:], P[k:]).astype(np.float64)
            if dt_ != 0.0:
                e1 += (2.0 * t * dt_) * w
                e2 += (dt_ * dt_) * w
            if self._zu != 1.0:
                e0 /= self._zu
                e1 /= self._zu
                e2 /= self._zu
            c += [e0 @ e0, 2.0 * (e0 @ e1), e1 @ e1 + 2.0 * (e0 @ e2), 2.0 * (e1 @ e2), e2 @ e2]
        return c / self._zs

    # ---------------------------------------------------------------- the spectral start

    def back_projection(self, V, out=None, ws=None):
        """Y V for the rows of V (p x d): Y = sum_j (z_j / zu) (omega_j omega_j^T - w_j /
        (d + 2) I), the spectral matrix of the module docstring (in the unit of z)."""
        ws = _Workspace() if ws is None else ws
        p, d = V.shape
        dt = self.operator.dtype
        Vt = ws.get("W", (p, d), dt)
        np.copyto(Vt, V, casting="same_kind")
        out = np.empty((p, d)) if out is None else out
        out.fill(0.0)
        g = ws.get("adjoint", (p, d), dt)
        for start, op in self.ranges(p):
            mc = op.m
            P = ws.get("P", (p, mc), dt)
            op.apply_into(Vt, P)
            zc = self.z[start : start + mc] / self._zu
            P *= zc.astype(dt, copy=False)
            op.adjoint_into(P, g)
            out += g
        if self._zw is None:
            self._zw = float(np.einsum("i,i->", self.z, self.w))  # (no contiguous copy of a broadcast w)
        out -= (self._zw / self._zu / (d + 2)) * V
        return out

    def spectral_start(self, k, unit, rng, floor=True, ws=None):
        """The spectral start in the variables x = (V, t): the top-k eigenvectors of the
        back-projection (`back_projection`; _SPECTRAL_ITERATIONS block power iterations
        from a Gaussian block drawn from rng, then Rayleigh-Ritz), each scaled by the
        least-squares fit of z by sum_i mu_i (Omega^T v_i)^2 + s w (scales below 1% of the
        largest raised to it, so that no column starts at zero, a stationary point of its
        own; t at least 1% of the per-coordinate trace, for the same reason)."""
        ws = _Workspace() if ws is None else ws
        d = self.d
        dt = self.operator.dtype
        V = np.linalg.qr(rng.standard_normal((d, k)))[0].T
        Y = np.empty((k, d))
        for _ in range(_SPECTRAL_ITERATIONS):
            self.back_projection(V, Y, ws)
            V = np.linalg.qr(Y.T)[0].T
        self.back_projection(V, Y, ws)
        H = V @ Y.T
        theta, R = np.linalg.eigh(0.5 * (H + H.T))
        V = np.ascontiguousarray(R[:, ::-1].T @ V)
        del Y, H
        # least squares for (mu, s) through the (k + 1) x (k + 1) normal equations
        A = np.zeros((k + 1, k + 1))
        b = np.zeros(k + 1)
        Vt = ws.get("W", (k, d), dt)
        np.copyto(Vt, V, casting="same_kind")
        for start, op in self.ranges(k):
            mc = op.m
            P = ws.get("P", (k, mc), dt)
            op.apply_into(Vt, P)
            cols = ws.get("cols", (k + 1, mc), np.float64)
            np.square(P, out=cols[:k])
            cols[k] = self._weights(start, start + mc)
            A += cols @ cols.T
            b += cols @ (self.z[start : start + mc] / self._zu)
        sol = np.zeros(k + 1)
        if floor:
            sol = np.linalg.lstsq(A, b, rcond=None)[0]
        if not floor or sol[k] < 0:
            sol[:k] = np.linalg.lstsq(A[:k, :k], b[:k], rcond=None)[0]
            sol[k] = 0.0
        trace = self.total_variance() / self._zu  # in the unit of z
        if not trace > 0:  # (a noisy sketch): the unit's own per-coordinate variance
            trace = d * unit * unit / self._zu
        top = max(float(sol[:k].max()), 0.0)
        mu = np.maximum(sol[:k], 0.01 * top) if top > 0 else np.full(k, 0.5 * trace / k)
        x = np.empty(k * d + 1)
        root = math.sqrt(self._zu) / unit  # a variance in the unit of z -> a length in the unit
        np.multiply(V, (np.sqrt(mu) * root)[:, None], out=x[:-1].reshape(k, d))
        x[-1] = math.sqrt(max(float(sol[k]), 0.01 * trace / d)) * root if floor else 0.0
        return x


@dataclasses.dataclass
class SubspaceSolution:
    """The result of a subspace decoder: orthonormal components (k x d, rows, by decreasing
    variance), the variance along each (eigenvalue of U U^T plus the floor), the floor s,
    the sketch's estimate of tr(C), the relative residual ||M(U U^T + s I) - z|| / ||z||,
    the start it came from and its iterations.

    The eigen decoder fills the same fields from the whole matrix: the floor is the mean
    of the other eigenvalues, the residual the relative Frobenius distance to the model.

    Parameters
    ----------
    components : ndarray of shape (k, d)
        Orthonormal rows, by decreasing variance; each row's largest coordinate is
        positive.
    variances : ndarray of shape (k,)
        The variance along each component.
    floor : float
        The isotropic floor s.
    total_variance : float
        The sketch's estimate of tr(C).
    residual : float
        The relative residual.
    restart : int
        The start kept.
    n_iter : int
        Its iterations.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import EigenDecoder, SubspaceTask
    >>> from pysketch.features import SecondMomentMap
    >>> X = np.random.default_rng(0).normal(size=(2000, 4)) * [3.0, 1.0, 0.1, 0.1]
    >>> decoder = EigenDecoder()
    >>> solution = decoder.decode(SubspaceTask(decoder.problem(SecondMomentMap(4).sketch(X)), 1))
    >>> solution.components.shape, bool(solution.components[0, 0] > 0.99), bool(solution.variances[0] > solution.floor)
    ((1, 4), True, True)
    """

    components: np.ndarray
    variances: np.ndarray
    floor: float
    total_variance: float
    residual: float
    restart: int
    n_iter: int


def check_subspace_args(problem, problem_type, n_components):
    """(d, k) of a subspace decoder's call: TypeError unless problem is a problem_type,
    ValueError unless 1 <= n_components <= d."""
    if not isinstance(problem, problem_type):
        raise TypeError(f"problem must be a {problem_type.__name__}, got {type(problem).__name__}")
    d, k = problem.d, check_int(n_components, "n_components")
    if k > d:
        raise ValueError(f"n_components must be in [1, d={d}], got {n_components!r}")
    return d, k


def signed_components(components):
    """The rows with a deterministic sign: the largest coordinate of each positive (in place)."""
    big = np.argmax(np.abs(components), axis=1)
    components *= np.sign(components[np.arange(components.shape[0]), big])[:, None]
    return components


_INITS = ("spectral", "gaussian")


@DECODERS.register("burer_monteiro")
class BurerMonteiro(Decoder):
    """Burer-Monteiro factorisation with an isotropic floor (module docstring).

    Parameters
    ----------
    max_iter : int, default 3000
        Iterations per start: L-BFGS iterations, plus, from the spectral start, the
        Gauss-Newton steps and their conjugate-gradient iterations (each costs about one
        evaluation of the objective; the start's own power iterations are not counted).
        From a Gaussian start, d = 2^15, k = 20, m = 2kd, n = 10^4 converged in 2004 L-BFGS
        iterations (1000 left captured variance 0.52-0.87); from the spectral start, in 100.
    tol : float, default 1e-12
        Relative change of the objective at which a start stops.
    floor : bool, default True
        Fit the isotropic floor s (False: the thesis' plain (9.12)).
    discrepancy : bool, default True
        On a noisy (private) sketch, stop once the residual reaches the noise's own level
        (Morozov's discrepancy principle at the least-squares level (m - dof) sigma^2, in
        `_fit`; the full level m sigma^2 measured far worse: 0.254 against 0.515 at eps = 3
        below). A Gauss-Newton step that would go below the level stops where its exact
        line search reaches it. Measured on the low-rank generator (m = 2kd, captured
        variance stopped / fitted to the end, L-BFGS from Gaussian starts): d = 256, n =
        2e4, medians of 3 seeds, eps = 1, 3, 10: 0.126 / 0.126, 0.515 / 0.504, 0.941 / 0.941;
        d = 1024, n = 2e5, one seed: 0.201 / 0.168, 0.876 / 0.830, 0.988 / 0.984; 2-40x fewer
        iterations.
    init : {'spectral', 'gaussian'}, default 'spectral'
        The first start: spectral (then Gauss-Newton steps, then L-BFGS), or Gaussian like
        the others (L-BFGS alone: the decoder before the spectral start).
    n_init : int, default 3
        Starts; the best (smallest residual) is kept.
    random_state : None, int or numpy.random.Generator
        Draws the Gaussian starts and the spectral start's random vectors.

    Raises
    ------
    TypeError
        When max_iter is not an int; from ``decode``, when n_init or n_components is not
        an int, or the task's problem is not a SubspaceProblem.
    ValueError
        When max_iter is below 1, tol is not a number in [0, 1), or init is unknown; from
        ``decode``, for n_components outside [1, d], n_init below 1, or records whose
        spread (read from the sketch) is beyond the supported range.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders import BurerMonteiro, SubspaceTask
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> X = np.random.default_rng(0).normal(size=(2000, 8)) * [3.0, 2.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]
    >>> decoder = BurerMonteiro(n_init=1, random_state=0)
    >>> problem = decoder.problem(FeatureMap(make_operator(8, 160, random_state=0), "quadratic").sketch(X))
    >>> solution = decoder.decode(SubspaceTask(problem, 2))
    >>> bool(np.allclose(np.abs(solution.components[:, :2]), np.eye(2), atol=0.1)), solution.residual < 0.1
    (True, True)
    """

    name = "burer_monteiro"
    task = "subspace"
    atoms = ()
    decodes_private = True
    problem_type = SubspaceProblem

    def __init__(self, *, max_iter=3000, tol=1e-12, floor=True, discrepancy=True, init="spectral", n_init=3,
                 random_state=None):
        super().__init__(n_init=n_init, random_state=random_state)
        self.max_iter = check_int(max_iter, "max_iter")
        if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real) or not 0 <= tol < 1:
            raise ValueError(f"tol must be a number in [0, 1), got {tol!r}")
        self.tol = float(tol)
        self.floor = bool(floor)
        self.discrepancy = bool(discrepancy)
        if init not in _INITS:
            raise ValueError(f"init must be one of {_INITS}, got {init!r}")
        self.init = init

    def decode(self, task):
        """The best of n_init starts (smallest residual): the first spectral (unless
        init='gaussian'), the others Gaussian."""
        self.check_task(task)
        problem = task.problem
        d, k = check_subspace_args(problem, SubspaceProblem, task.n_components)
        n_init = check_int(self.n_init, "n_init")
        rng = as_generator(self.random_state)
        if not np.any(problem.z):
            # an all-zero sketch (constant records about the centre): every direction has
            # variance 0, so any orthonormal components fit exactly (the objective, relative
            # to ||z|| = 0, would divide by zero)
            return SubspaceSolution(components=np.eye(d)[:k].copy(), variances=np.zeros(k), floor=0.0,
                                    total_variance=0.0, residual=0.0, restart=0, n_iter=0)
        trace = problem.total_variance()
        if trace <= 0:
            trace = 1.0  # an all-zero sketch: any start; the fit returns U ~ 0
        # the fit runs in a power-of-two unit near the sketch's own per-coordinate spread
        # (post-processing of the sketch): U / unit and sqrt(s) / unit are of order one at
        # any data scale, so the starts, the first step and the absolute gradient
        # tolerance of `lbfgs` mean the same thing at every scale (ValueError about the
        # data's scale beyond [2^-504, 2^504], pysketch.kernel_scale.data_unit)
        from .._checks import data_unit

        unit = data_unit(math.sqrt(trace / d), "the records' spread about the centre (from the sketch)")
        trace_u = trace / unit / unit
        # L-BFGS keeps 2 maxcor vectors of kd floats (in the operator's dtype): fewer
        # corrections for large problems (d = 2^15, k = 20, float32: 3 corrections are 16 MB)
        maxcor = 10 if k * d <= 1 << 18 else 3
        ws = _Workspace()
        best = None
        for restart in range(n_init):
            spectral = restart == 0 and self.init == "spectral"
            with blas_single_thread():  # level-1 BLAS on long vectors: threads only spin (_threads.py)
                if spectral:
                    x0 = problem.spectral_start(k, unit, rng, floor=self.floor, ws=ws)
                else:
                    U0 = rng.standard_normal((d, k))
                    U0 *= math.sqrt(0.5 * trace_u / float(np.einsum("ij,ij->", U0, U0)))
                    x0 = np.empty(d * k + 1)
                    x0[:-1].reshape(k, d)[:] = U0.T
                    del U0
                    x0[-1] = math.sqrt(0.5 * trace_u / d) if self.floor else 0.0
                x, F, nit = self._fit(problem, k, x0, maxcor, unit, ws, newton=spectral)
            del x0
            if best is None or F < best[1]:
                best = (x, F, nit, restart)
        x, F, nit, restart = best
        del ws, best
        U = x[:-1].reshape(k, d).T * unit
        s = (x[-1] * unit) ** 2 if self.floor else 0.0
        del x
        Q, R = np.linalg.qr(U)
        del U
        lam, V = np.linalg.eigh(R @ R.T)
        order = np.argsort(lam)[::-1]
        components = signed_components((Q @ V[:, order]).T)
        return SubspaceSolution(components=np.ascontiguousarray(components), variances=np.maximum(lam[order], 0) + s,
                                floor=float(s), total_variance=float(problem.total_variance()),
                                residual=math.sqrt(max(F, 0.0)), restart=restart, n_iter=nit)

    def _fit(self, problem, k, x, maxcor, unit, ws, newton=True):
        """Gauss-Newton steps (when `newton`), then L-BFGS, on x = (V, t) (the problem's
        variables, in the unit) from x (modified). Returns (x, F, iterations)."""
        floor = self.floor

        def fun(xv, grad):
            F = problem.value_and_gradient(xv, k, unit, grad, ws)
            if not floor:
                grad[-1] = 0.0
            return F

        # float32 products: F carries relative rounding of about 1e-7, so decreases below
        # 10 eps32 |F| are noise (without this rule a d = 2^15 decode ran to max_iter)
        low = problem.operator.dtype == np.float32
        rtol = 10 * float(np.finfo(np.float32).eps) if low else 0.0
        # a noisy sketch: stop at the discrepancy level (Morozov), where the residual is the
        # noise's own, E ||noise||^2 (m - dof) / ||z||^2 with dof = kd - k(k - 1)/2 + 1 the
        # model's parameters: fitting further fits the noise
        fstop = 0.0
        if self.discrepancy and problem.noise_variance > 0:
            d = problem.d
            dof = d * k - k * (k - 1) // 2 + (1 if floor else 0)
            fstop = max(problem.m - dof, 0) * problem.noise_level()
        g = np.empty_like(x)
        F = fun(x, g)
        used = 0
        step = 1.0
        if newton:
            x, F, g, used, step = _gauss_newton(problem, fun, x, F, g, k, unit, ws, max_iter=self.max_iter,
                                                fstop=fstop, floor=floor)
            ws.clear()  # its buffers of 2k columns: L-BFGS needs k
        if used >= self.max_iter:
            return x, F, used
        history = np.float32 if low else np.float64
        x, F, g, nit = _lbfgs(fun, x, F, g, max_iter=self.max_iter - used, memory=maxcor, ftol=self.tol, rtol=rtol,
                              fstop=fstop, history=history, first_step=step)
        return x, F, used + nit


def _quartic_step(c, level=0.0):
    """The step a > 0 that minimises F(a) = sum_i c_i a^i (c_1 < 0: a descent direction);
    when F goes below `level` > 0 on the way, the first a where it reaches the level (the
    discrepancy stop along the line). None when no positive step decreases F.

    The candidates are the real parts of the stationary points' roots: a multiple root
    (a flat minimum) comes out of np.roots with an imaginary part of about eps^(1/3), and
    F at the real part of a complex pair is only one more value to compare."""
    poly = np.polynomial.polynomial.polyval
    candidates = [r.real for r in np.roots([4.0 * c[4], 3.0 * c[3], 2.0 * c[2], c[1]]) if r.real > 0]
    if not candidates:
        return None
    a = min(candidates, key=lambda r: poly(r, c))
    if not poly(a, c) < c[0]:
        return None
    if level > 0 and poly(a, c) < level < c[0]:
        # F(0) > level > F(a): the first crossing is a simple real root in (0, a)
        cross = np.roots([c[4], c[3], c[2], c[1], c[0] - level])
        below = [r.real for r in cross if abs(r.imag) <= 1e-6 * abs(r) and 0 < r.real <= a]
        if below:
            a = min(below)
    return a


def _gauss_newton(problem, fun, x, F, g, k, unit, ws, *, max_iter, fstop=0.0, floor=True):
    """Gauss-Newton steps from x (F, g: its objective and gradient): each direction from
    _GN_CG conjugate-gradient iterations on H p = -g (H the Gauss-Newton matrix, from p = 0,
    so that every iterate is a descent direction), then the exact minimum of F along it
    (`SubspaceProblem.line_quartic`). Stops when a step decreases F by less than _GN_SWITCH F
    (converged, or stalled: L-BFGS takes over), at fstop, or after max_iter iterations
    (conjugate-gradient iterations and steps). Returns (x, F, g, iterations, the length of
    the last step)."""
    n = x.size
    p, r, q, Hq = (np.empty(n) for _ in range(4))
    scratch = np.empty(min(n, _AXPY_BLOCK))
    used = 0
    length = 1.0
    while used < max_iter and F > fstop:
        # conjugate gradients on H p = -g (Hestenes & Stiefel 1952), truncated
        p.fill(0.0)
        np.negative(g, out=r)
        if not floor:
            r[-1] = 0.0
        q[:] = r
        rr = float(r @ r)
        rr0 = rr
        for _ in range(_GN_CG):
            if used >= max_iter - 1:
                break
            problem.gauss_newton_product(x, q, k, unit, Hq, ws)
            if not floor:
                Hq[-1] = 0.0
            used += 1
            qHq = float(q @ Hq)
            if not qHq > 0:
                break
            a = rr / qHq
            _axpy(a, q, p, scratch)
            _axpy(-a, Hq, r, scratch)
            rr_new = float(r @ r)
            if not rr_new > 1e-24 * rr0:
                break
            q *= rr_new / rr
            q += r
            rr = rr_new
        slope = float(g @ p)
        if not slope < 0:
            break
        a = _quartic_step(problem.line_quartic(x, p, k, unit, ws), fstop)
        if a is None:
            break
        # the trial point and its gradient in the spare vectors (r and q are free now)
        np.multiply(p, a, out=r)
        r += x
        F_new = fun(r, q)
        used += 1
        if not F_new < F:  # no decrease (rounding at the optimum): keep x
            break
        decrease = F - F_new
        x, r = r, x
        g, q = q, g
        F = F_new
        length = a * math.sqrt(float(p @ p))
        if decrease <= _GN_SWITCH * F:
            break
    return x, F, g, used, length


def lbfgs(fun, x0, *, max_iter=1000, memory=10, ftol=1e-12, gtol=1e-14, rtol=0.0, fstop=0.0, history=np.float64):
    """Minimise a smooth fun(x) -> (f, grad) by limited-memory BFGS (Nocedal & Wright,
    Numerical Optimization, 2nd ed., Algorithm 7.4 and 7.5: the two-loop recursion with
    H0 = (s^T y / y^T y) I) and a backtracking line search on the Armijo condition
    (c1 = 1e-4; quadratic interpolation, steps shrunk to [0.1, 0.5] of the last). A pair
    (s, y) is kept only when s^T y > 1e-12 ||s|| ||y|| (so H stays positive definite).
    Stops when (f_k - f_k+1) / max(abs(f_k), abs(f_k+1), 1) <= ftol (scipy's L-BFGS-B rule) or
    f_k - f_k+1 <= rtol abs(f_k+1) ten times in a row (decreases within f's own rounding),
    when f <= fstop (a target level: the noise's, for noisy data),
    when max abs(grad) <= gtol, when no step decreases f, or after max_iter iterations.
    The pairs are kept in `history` (float32 halves their memory; the products with them
    are summed in float64). The points given to fun are reused buffers: fun must not keep
    them. Returns (x, f, iterations). Its own cost is O(memory * len(x)) per iteration:
    scipy's L-BFGS-B measured 10-30 ms per iteration at 10^4 variables here.

    Parameters
    ----------
    fun : callable
        fun(x) -> (f, grad): the value (a float) and the gradient (an array of x's shape).
    x0 : array_like
        The start (copied into a float64 array).
    max_iter : int, default 1000
        The most iterations.
    memory : int, default 10
        The pairs (s, y) kept.
    ftol : float, default 1e-12
        The relative decrease at which it stops.
    gtol : float, default 1e-14
        The largest gradient entry at which it stops.
    rtol : float, default 0
        Decreases below rtol abs(f) ten times in a row stop it (0: never).
    fstop : float, default 0
        A value of f at which it stops.
    history : numpy dtype, default float64
        The dtype of the stored pairs (float32 halves their memory).

    Returns
    -------
    x : ndarray of float64
        The last point.
    f : float
        Its value.
    iterations : int

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.decoders.subspace import lbfgs
    >>> target = np.array([1.0, -2.0, 3.0])
    >>> x, f, n_iter = lbfgs(lambda x: (float((x - target) @ (x - target)), 2.0 * (x - target)), np.zeros(3))
    >>> bool(np.allclose(x, target)), f < 1e-12
    (True, True)
    """
    x = np.array(x0, dtype=np.float64)

    def into(xv, out):
        f, grad = fun(xv)
        out[...] = grad
        return f

    g = np.empty_like(x)
    f = into(x, g)
    x, f, _, it = _lbfgs(into, x, f, g, max_iter=max_iter, memory=memory, ftol=ftol, gtol=gtol, rtol=rtol,
                         fstop=fstop, history=history)
    return x, float(f), it


def _dot(a, b):
    """a . b summed in float64 (float32 vectors: without a float64 copy of either)."""
    if a.dtype == np.float64 and b.dtype == np.float64:
        return float(a @ b)
    return float(np.einsum("i,i->", a, b, dtype=np.float64))


#: Elements per block of `_axpy` (its scratch: 512 KiB at most).
_AXPY_BLOCK = 1 << 16


def _axpy(a, v, out, scratch):
    """out += a v, a block at a time (no temporary of the vectors' length)."""
    for lo in range(0, v.size, _AXPY_BLOCK):
        hi = min(lo + _AXPY_BLOCK, v.size)
        tmp = scratch[: hi - lo]
        np.multiply(v[lo:hi], a, out=tmp)
        out[lo:hi] += tmp


def _lbfgs(fun, x, f, g, *, max_iter, memory, ftol=1e-12, gtol=1e-14, rtol=0.0, fstop=0.0, history=np.float64,
           first_step=1.0):
    """`lbfgs` on fun(x, grad) -> f (writing the gradient into grad) from x with value f and
    gradient g (both reused). Its vectors: x, g and the trial gradient (float64), the
    direction and 2 `memory` pairs (s, y) in `history`. The trial points are taken in place
    (x + t p; a refused t is taken back by adding (t' - t) p, within rounding of x) and s
    is t p as added. The first step (and a restart from the gradient) has length
    first_step. Returns (x, f, g, iterations)."""
    n = x.size
    g_new = np.empty(n)
    q = np.empty(n, history)
    S = np.empty((memory, n), history)
    Y = np.empty((memory, n), history)
    scratch = np.empty(min(n, _AXPY_BLOCK), np.result_type(history, np.float64))
    rho = np.zeros(memory)
    alphas = np.zeros(memory)
    count = 0  # pairs kept, the newest at head - 1 (a ring)
    head = 0
    gamma = 1.0
    it = 0
    small = 0
    for it in range(1, max_iter + 1):
        # max |g| (NaN propagates) without a vector |g|
        if not float(np.maximum(g.max(), -g.min())) > gtol or f <= fstop:
            break
        # two-loop recursion: q = -H g
        np.copyto(q, g, casting="same_kind")
        for j in range(count):  # newest first
            i = (head - 1 - j) % memory
            a = rho[i] * _dot(S[i], q)
            alphas[j] = a
            _axpy(-a, Y[i], q, scratch)
        if count:
            q *= gamma
        else:
            q *= first_step / max(math.sqrt(float(g @ g)), 1e-300)
        for j in reversed(range(count)):  # oldest first
            i = (head - 1 - j) % memory
            b = rho[i] * _dot(Y[i], q)
            _axpy(alphas[j] - b, S[i], q, scratch)
        np.negative(q, out=q)
        slope = _dot(g, q)
        if not slope < 0:  # not a descent direction (rounding): restart from the gradient
            count = 0
            np.multiply(g, -first_step / max(math.sqrt(float(g @ g)), 1e-300), out=q, casting="same_kind")
            slope = _dot(g, q)
        # the step s = t q goes into the oldest pair's slot (the recursion is done with it)
        s_vec = S[head]
        t = 1.0
        taken = False
        for _ in range(40):
            if taken:
                x -= s_vec
            np.multiply(q, t, out=s_vec)
            x += s_vec
            taken = True
            f_new = fun(x, g_new)
            if f_new <= f + 1e-4 * t * slope:
                break
            # minimiser of the quadratic through f, slope and f_new, kept in [0.1 t, 0.5 t]
            t_q = -slope * t * t / (2.0 * (f_new - f - slope * t))
            t = min(max(t_q, 0.1 * t), 0.5 * t) if np.isfinite(t_q) else 0.5 * t
        else:
            x -= s_vec  # no decrease along q: back to (within rounding of) x, and stop
            break
        np.subtract(g_new, g, out=Y[head], casting="same_kind")
        sy = _dot(s_vec, Y[head])
        yy = _dot(Y[head], Y[head])
        if sy > 1e-12 * math.sqrt(_dot(s_vec, s_vec) * yy):
            rho[head] = 1.0 / sy
            gamma = sy / yy
            head = (head + 1) % memory
            count = min(count + 1, memory)
        else:  # refused: its slot held the oldest pair, which is gone
            count = min(count, memory - 1)
        decrease = f - f_new
        g, g_new = g_new, g
        f = f_new
        if decrease <= ftol * max(abs(f), abs(f + decrease), 1.0):
            break
        small = small + 1 if decrease <= rtol * abs(f) else 0
        if small >= 10:
            break
    return x, f, g, it
