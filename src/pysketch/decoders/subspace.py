"""Principal subspaces from a quadratic sketch: the Burer-Monteiro decoder.

A quadratic sketch's mean is z = M(C) = [omega_j^T C omega_j]_j, rank-one measurements of
the records' second-moment matrix C about the map's centre (notes seed000 sec. 1.3; thesis
(9.11)). The decoder fits a rank-k factor U (d x k) and an isotropic floor s >= 0,

    min_{U, s}  || M(U U^T + s I) - z ||_2^2 / ||z||_2^2,      M(s I)_j = s ||omega_j||^2,

by L-BFGS from Gaussian starts (the thesis' (9.12), which has no floor), keeps the start of
smallest residual, and returns the top-k eigenvectors of U U^T through a QR of U (U = Q R,
U U^T = Q (R R^T) Q^T: a k x k eigenproblem). With P = Omega^T U (m x k) and the residual
e = rowsum(P^2) + s w - z, the gradient is 4 Omega diag(e) P in U and 2 e^T w in s (notes
seed003 sec. 2.6): both through the operator's products for all k columns at once, a range
of frequencies at a time, so memory is O(kd + m) and no d x d matrix is ever formed.

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


class SubspaceProblem:
    """What the subspace decoders match: the map's operator (products in its dtype, sums in
    float64), the target
    z_j = omega_j^T C omega_j (`FeatureMap.second_moments` of the sketch's mean), the
    squared frequency norms w_j = ||omega_j||^2, the map's centre (C is about it) and the
    noise of a private release (variance per coordinate of the mean)."""

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
        self.w = self.operator.column_sq_norms()
        self._ranges = None
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
        """The operator in ranges of frequencies holding at most about 4M floats of P."""
        if self._ranges is None or self._ranges[0] != k:
            self._ranges = (k, self.operator.column_ranges(max(1, _CHUNK_FLOATS // max(k, 1))))
        return self._ranges[1]

    def objective(self, U, s, out=None):
        """F = ||M(U U^T + s I) - z||^2 / ||z||^2 with its gradients in U (d x k; written into
        `out` when given) and in s."""
        d, k = U.shape
        dt = self.operator.dtype
        Ut = np.ascontiguousarray(U.T, dtype=dt)
        G = np.zeros((k, d))
        g = np.empty((k, d), dt)
        F = 0.0
        gs = 0.0
        for start, op in self.ranges(k):
            mc = op.m
            P = np.empty((k, mc), dt)
            op._apply(Ut, P)
            e = np.einsum("ij,ij->j", P, P, dtype=np.float64)
            w = self.w[start : start + mc]
            e += s * w
            e -= self.z[start : start + mc]
            if self._zu != 1.0:
                e /= self._zu
            F += float(e @ e)
            gs += float(e @ w)
            P *= e.astype(dt, copy=False)
            op._adjoint(P, g)
            G += g
        scale, zu = self._zs, self._zu
        if out is None:
            out = np.empty((d, k))
        np.multiply(G.T, 4.0 / scale / zu, out=out)
        return F / scale, out, 2.0 * gs / scale / zu

    def scale(self):
        """||z||^2 (the objective's denominator; it may under- or overflow at extreme data
        scales: `noise_level` is the robust ratio)."""
        return max(float(self.z @ self.z), 1e-300)

    def noise_level(self):
        """noise_variance / ||z||^2, computed in the unit of z."""
        return self.noise_variance / self._zu / self._zu / self._zs


@dataclasses.dataclass
class SubspaceSolution:
    """The result of a subspace decoder: orthonormal components (k x d, rows, by decreasing
    variance), the variance along each (eigenvalue of U U^T plus the floor), the floor s,
    the sketch's estimate of tr(C), the relative residual ||M(U U^T + s I) - z|| / ||z||,
    the start it came from and its iterations."""

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


@DECODERS.register("burer_monteiro")
class BurerMonteiro(Decoder):
    """Burer-Monteiro factorisation with an isotropic floor, by L-BFGS (module docstring).

    Parameters
    ----------
    max_iter : int, default 3000
        L-BFGS iterations per start (d = 2^15, k = 20, m = 2kd, n = 10^4 converged in 1984;
        1000 left captured variance 0.52-0.87).
    tol : float, default 1e-12
        Relative change of the objective at which a start stops.
    floor : bool, default True
        Fit the isotropic floor s (False: the thesis' plain (9.12)).
    discrepancy : bool, default True
        On a noisy (private) sketch, stop once the residual reaches the noise's own level
        (Morozov's discrepancy principle at the least-squares level (m - dof) sigma^2, in
        `_run`; the full level m sigma^2 measured far worse: 0.254 against 0.515 at eps = 3
        below). Measured on the low-rank generator (m = 2kd, captured variance stopped /
        fitted to the end): d = 256, n = 2e4, medians of 3 seeds, eps = 1, 3, 10: 0.126 /
        0.126, 0.515 / 0.504, 0.941 / 0.941; d = 1024, n = 2e5, one seed: 0.201 / 0.168,
        0.876 / 0.830, 0.988 / 0.984; 2-40x fewer iterations.
    """

    name = "burer_monteiro"
    task = "subspace"
    atoms = ()
    decodes_private = True
    problem_type = SubspaceProblem

    def __init__(self, *, max_iter=3000, tol=1e-12, floor=True, discrepancy=True):
        self.max_iter = check_int(max_iter, "max_iter")
        if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real) or not 0 <= tol < 1:
            raise ValueError(f"tol must be a number in [0, 1), got {tol!r}")
        self.tol = float(tol)
        self.floor = bool(floor)
        self.discrepancy = bool(discrepancy)

    def decode(self, problem, n_components, *, n_init=3, random_state=None):
        d, k = check_subspace_args(problem, SubspaceProblem, n_components)
        n_init = check_int(n_init, "n_init")
        rng = as_generator(random_state)
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
        from ..kernel_scale import data_unit

        unit = data_unit(math.sqrt(trace / d), "the records' spread about the centre (from the sketch)")
        trace_u = trace / unit / unit
        # L-BFGS keeps 2 maxcor vectors of kd floats: fewer corrections for large problems
        # (d = 2^15, k = 20: 3 corrections are 31 MB)
        maxcor = 10 if k * d <= 1 << 18 else 3
        best = None
        for restart in range(n_init):
            U0 = rng.standard_normal((d, k))
            U0 *= math.sqrt(0.5 * trace_u / float(np.einsum("ij,ij->", U0, U0)))
            t0 = math.sqrt(0.5 * trace_u / d) if self.floor else 0.0
            with blas_single_thread():  # level-1 BLAS on long vectors: threads only spin (_threads.py)
                x, F, nit = self._run(problem, U0, t0, maxcor, unit)
            del U0
            if best is None or F < best[1]:
                best = (x, F, nit, restart)
        x, F, nit, restart = best
        U = x[: d * k].reshape(d, k) * unit
        s = (x[-1] * unit) ** 2 if self.floor else 0.0
        Q, R = np.linalg.qr(U)
        lam, V = np.linalg.eigh(R @ R.T)
        order = np.argsort(lam)[::-1]
        components = signed_components((Q @ V[:, order]).T)
        return SubspaceSolution(components=np.ascontiguousarray(components), variances=np.maximum(lam[order], 0) + s,
                                floor=float(s), total_variance=float(problem.total_variance()),
                                residual=math.sqrt(max(F, 0.0)), restart=restart, n_iter=nit)

    def _run(self, problem, U0, t0, maxcor, unit=1.0):
        """L-BFGS on x = (U / unit, sqrt(s) / unit) from (U0, t0) (in the unit)."""
        d, k = U0.shape
        n = d * k
        floor = self.floor

        def fun(x):
            U = x[:n].reshape(d, k)
            t = x[n] if floor else 0.0
            if unit != 1.0:
                U = U * unit
                t = t * unit
            g = np.empty_like(x)
            F, _, gs = problem.objective(U, t * t, out=g[:n].reshape(d, k))
            g[n] = 2.0 * t * gs if floor else 0.0
            if unit != 1.0:  # the chain rule back to the unit's variables
                g *= unit
            return F, g

        x0 = np.empty(n + 1)
        x0[:n] = U0.ravel()
        x0[n] = t0
        # float32 products: F carries relative rounding of about 1e-7, so decreases below
        # 10 eps32 |F| are noise (without this rule a d = 2^15 decode ran to max_iter)
        rtol = 10 * float(np.finfo(np.float32).eps) if problem.operator.dtype == np.float32 else 0.0
        # a noisy sketch: stop at the discrepancy level (Morozov), where the residual is the
        # noise's own, E ||noise||^2 (m - dof) / ||z||^2 with dof = kd - k(k - 1)/2 + 1 the
        # model's parameters: fitting further fits the noise
        fstop = 0.0
        if self.discrepancy and problem.noise_variance > 0:
            dof = d * k - k * (k - 1) // 2 + (1 if floor else 0)
            fstop = max(problem.m - dof, 0) * problem.noise_level()
        return lbfgs(fun, x0, max_iter=self.max_iter, memory=maxcor, ftol=self.tol, rtol=rtol, fstop=fstop)


def lbfgs(fun, x0, *, max_iter=1000, memory=10, ftol=1e-12, gtol=1e-14, rtol=0.0, fstop=0.0):
    """Minimise a smooth fun(x) -> (f, grad) by limited-memory BFGS (Nocedal & Wright,
    Numerical Optimization, 2nd ed., Algorithm 7.4 and 7.5: the two-loop recursion with
    H0 = (s^T y / y^T y) I) and a backtracking line search on the Armijo condition
    (c1 = 1e-4; quadratic interpolation, steps shrunk to [0.1, 0.5] of the last). A pair
    (s, y) is kept only when s^T y > 1e-12 ||s|| ||y|| (so H stays positive definite).
    Stops when (f_k - f_k+1) / max(|f_k|, |f_k+1|, 1) <= ftol (scipy's L-BFGS-B rule) or
    f_k - f_k+1 <= rtol |f_k+1| ten times in a row (decreases within f's own rounding),
    when f <= fstop (a target level: the noise's, for noisy data),
    when max |grad| <= gtol, when no step decreases f, or after max_iter iterations.
    Returns (x, f, iterations). Its own cost is O(memory * len(x)) per iteration: scipy's
    L-BFGS-B measured 10-30 ms per iteration at 10^4 variables here (issue 16 note)."""
    x = np.array(x0, dtype=np.float64)
    f, g = fun(x)
    S, Y, rho = [], [], []
    it = 0
    small = 0
    for it in range(1, max_iter + 1):
        if not np.max(np.abs(g)) > gtol or f <= fstop:
            break
        # two-loop recursion: p = -H g
        q = g.copy()
        alphas = []
        for s_i, y_i, r_i in zip(reversed(S), reversed(Y), reversed(rho)):
            a = r_i * float(s_i @ q)
            q -= a * y_i
            alphas.append(a)
        if S:
            q *= float(S[-1] @ Y[-1]) / float(Y[-1] @ Y[-1])
        else:
            q *= 1.0 / max(float(np.linalg.norm(g)), 1e-300)  # first step of unit length
        for (s_i, y_i, r_i), a in zip(zip(S, Y, rho), reversed(alphas)):
            b = r_i * float(y_i @ q)
            q += (a - b) * s_i
        p = np.negative(q, out=q)
        slope = float(g @ p)
        if not slope < 0:  # not a descent direction (rounding): restart from the gradient
            S, Y, rho = [], [], []
            p = -g / max(float(np.linalg.norm(g)), 1e-300)
            slope = float(g @ p)
        t = 1.0
        for _ in range(40):
            x_new = np.multiply(p, t)
            x_new += x
            f_new, g_new = fun(x_new)
            if f_new <= f + 1e-4 * t * slope:
                break
            # minimiser of the quadratic through f, slope and f_new, kept in [0.1 t, 0.5 t]
            t_q = -slope * t * t / (2.0 * (f_new - f - slope * t))
            t = min(max(t_q, 0.1 * t), 0.5 * t) if np.isfinite(t_q) else 0.5 * t
        else:
            break  # no decrease along p
        s_vec = x_new - x
        y_vec = g_new - g
        sy = float(s_vec @ y_vec)
        if sy > 1e-12 * float(np.linalg.norm(s_vec)) * float(np.linalg.norm(y_vec)):
            S.append(s_vec)
            Y.append(y_vec)
            rho.append(1.0 / sy)
            if len(S) > memory:
                S.pop(0)
                Y.pop(0)
                rho.pop(0)
        decrease = f - f_new
        x, f, g = x_new, f_new, g_new
        if decrease <= ftol * max(abs(f), abs(f + decrease), 1.0):
            break
        small = small + 1 if decrease <= rtol * abs(f) else 0
        if small >= 10:
            break
    return x, float(f), it
