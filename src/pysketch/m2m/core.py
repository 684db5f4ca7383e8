r"""The M2M method: any empirical average from one (private) sketch, by ridge regression of
the target on the sketch's features over synthetic points (Houssiau, Schellekens et al.,
"M2M: a general method to perform various data analysis tasks from a differentially
private sketch" [P]; notes seed001 sec. 2).

To estimate f_bar = (1/n) sum_i f(x_i) from the released mean sketch z = (Sigma + xi) /
(n + zeta), fit a in R^m with

    J(a) = ||P a - F||^2 + lambda ||a||^2     (loss='sum', the default)
    J(a) = (1/n_s) ||P a - F||^2 + lambda ||a||^2     (loss='mean', [P] Sec. 3.2 literally)

where P (n_s x m) holds the features of n_s synthetic points drawn uniformly from the
public `Domain` and F their values of f, and answer <a, z>. Equivalently (notes sec. 2.7)
the answer is sum_i w_i f(x~_i) with weights w = P (P^T P + lambda' I)^-1 z that do not
depend on f (lambda' = lambda for 'sum', n_s lambda for 'mean'): one Cholesky factor
answers every query. Their total `mass_` estimates the constant 1.

lambda (`regularization`): 'eq5' (default) is [P] eq. (5), sigma_xi^2 / (n + zeta), with
sigma_xi^2 the noise variance of one coordinate of the released sum (2 b^2 for Laplace of
scale b, sigma^2 for Gaussian); 'theory' is Theorem 1's sigma_xi^2 / (n + zeta)^2; a number
is used as it is; all times `regularization_scale` ([P] Alg. 1's R). The loss convention
matters (notes pitfall P1): with eq. (5), 'mean' shrinks every estimate towards 0 (the
mass is 0.96 at epsilon = 1 and 0.24 at epsilon = 0.1 for RFF on Random10) and misses
Table 1 by 4.5x (RFF) to 80x (HIST); 'sum' (scikit-learn's Ridge(alpha=lambda)) reproduces
it (tests/test_m2m.py and benchmarks/quality/m2m_quality.py). A clean sketch (no noise)
gets lambda = 0, floored at `min_regularization` = 1e-9 in 'mean' units (1e-9 n_s in
'sum' units; [P] Sec. 4.1 uses 1e-9 for HIST at epsilon = infinity): one-hot Gram matrices
are singular (notes P4) and the RFF one has eigenvalues down to ~1e-10.

Nothing here reads data: everything is post-processing of the release (no privacy cost).
"""

import numbers

import numpy as np
from scipy import linalg

from .._checks import check_size
from .._random import as_generator
from .._state import FEATURE_MAPS
from .._threads import blas_single_thread
from ..sketch import Sketch
from .domain import Domain

__all__ = ["M2M", "REGULARIZATIONS", "LOSSES", "DEFAULT_N_SYNTHETIC"]

REGULARIZATIONS = ("eq5", "theory")
LOSSES = ("sum", "mean")
#: [P] Sec. 4: 10^5 synthetic points make the sampling error negligible.
DEFAULT_N_SYNTHETIC = 100_000


class M2M:
    """Estimates of empirical averages from one sketch (see the module docstring).

    Parameters
    ----------
    domain : Domain
        The public domain of the records (the synthetic points are drawn from it).
    n_synthetic : int
        n_s, the number of synthetic points (default 10^5, as [P]).
    regularization : {'eq5', 'theory'} or float >= 0
        lambda: [P] eq. (5), Theorem 1's value, or a number (in the units of `loss`).
    regularization_scale : float > 0
        Multiplies lambda ([P] Alg. 1's R; default 1).
    loss : {'sum', 'mean'}
        The least-squares loss: a sum of squares (default; reproduces [P] Table 1) or their
        mean over the synthetic points ([P]'s text).
    min_regularization : float >= 0
        Floor on lambda in 'mean' units (default 1e-9).
    keep_gram : bool
        Keep P^T P (m^2 floats) so that `refit` answers for another sketch of the same map
        on the same synthetic points without recomputing it (benchmarks over many epsilons).
    random_state : None, int or numpy Generator
        Draws the synthetic points (public randomness: nothing private depends on it).

    Attributes (after `fit`)
    ------------------------
    synthetic_ : (n_s, d) the synthetic points; weights_ : (n_s,) their weights;
    mass_ : sum of the weights; lambda_ : lambda in the units of `loss`;
    noise_variance_ : sigma_xi^2; count_ : the (noisy) count n + zeta, at least 1;
    mean_sketch_ : the released mean sketch as reals; feature_map_.
    """

    def __init__(self, domain, *, n_synthetic=DEFAULT_N_SYNTHETIC, regularization="eq5", regularization_scale=1.0,
                 loss="sum", min_regularization=1e-9, keep_gram=False, random_state=None):
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a pysketch.m2m.Domain, got {type(domain).__name__}")
        self.domain = domain
        # the synthetic points (drawn, then kept), their weights and one-hot positions
        self.n_synthetic = check_size(n_synthetic, "n_synthetic", nbytes=lambda v: v * (domain.d * 16 + 32),
                                      what=f"for synthetic points of d = {domain.d} coordinates")
        if isinstance(regularization, str):
            if regularization not in REGULARIZATIONS:
                raise ValueError(f"regularization must be one of {REGULARIZATIONS} or a number >= 0, "
                                 f"got {regularization!r}")
        elif isinstance(regularization, (bool, np.bool_)) or not isinstance(regularization, numbers.Real) or not (
                np.isfinite(regularization) and regularization >= 0):
            raise ValueError(f"regularization must be one of {REGULARIZATIONS} or a finite number >= 0, "
                             f"got {regularization!r}")
        self.regularization = regularization
        if isinstance(regularization_scale, (bool, np.bool_)) or not isinstance(regularization_scale, numbers.Real) \
                or not (np.isfinite(regularization_scale) and regularization_scale > 0):
            raise ValueError(f"regularization_scale must be a positive finite number, got {regularization_scale!r}")
        self.regularization_scale = float(regularization_scale)
        if loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
        self.loss = loss
        if isinstance(min_regularization, (bool, np.bool_)) or not isinstance(min_regularization, numbers.Real) or not (
                np.isfinite(min_regularization) and min_regularization >= 0):
            raise ValueError(f"min_regularization must be a finite number >= 0, got {min_regularization!r}")
        self.min_regularization = float(min_regularization)
        self.keep_gram = bool(keep_gram)
        self.random_state = random_state

    # ------------------------------------------------------------------ fit

    def fit(self, sketch):
        """Draw the synthetic points, factor P^T P + lambda' I and compute the weights for
        `sketch` (a Sketch or a PrivateSketch of any map with a `design`). Returns self."""
        if not isinstance(sketch, Sketch):
            raise TypeError(f"sketch must be a pysketch Sketch or PrivateSketch, got {type(sketch).__name__}")
        fm = FEATURE_MAPS.check(sketch.feature_map, "sketch.feature_map")
        if fm.d != self.domain.d:
            raise ValueError(f"the sketch's records have {fm.d} coordinates but the domain has {self.domain.d}")
        if sketch.subsampling is not None:
            raise ValueError("M2M needs a full sketch (feature-subsampled sketches are not supported)")
        self.check_map(fm)
        rng = as_generator(self.random_state)
        X = self.domain.sample(self.n_synthetic, rng)
        self.feature_map_ = fm
        self.synthetic_ = X
        self.design_ = fm.design(X)
        self.gram_ = None
        return self._weigh(sketch)

    def check_map(self, feature_map):
        """ValueError before anything is drawn when the least squares over the features of
        `feature_map` need more memory than the machine has: P^T P (real_dim^2 floats, twice
        when keep_gram), and the features of the synthetic points (a chunk of rows at a time
        for a dense map, n_synthetic one-hot positions per block for a one-hot one). The
        implicit models call it before the release, so that nothing is charged."""
        p = feature_map.real_dim
        blocks = getattr(feature_map, "n_blocks", None)
        # one-hot: int32 positions of every point; dense: a chunk of features and its real form
        features = 4 * blocks * self.n_synthetic if blocks else 16 * p * min(self.n_synthetic, max(1, (1 << 20) // p))
        check_size(p, "real_dim", nbytes=8 * p * p * (3 if self.keep_gram else 2) + features,
                   what=f"for P^T P of the sketch's features (real_dim: their number as reals) and the features of "
                        f"{self.n_synthetic} synthetic points")

    def refit(self, sketch):
        """The weights for another sketch of the same map, on the same synthetic points
        (and the same P^T P when keep_gram). Returns self."""
        self._check_fitted()
        if not isinstance(sketch, Sketch) or sketch.feature_map != self.feature_map_:
            raise ValueError("refit needs a sketch of the same feature map as the fitted one")
        return self._weigh(sketch)

    def _weigh(self, sketch):
        fm, design = self.feature_map_, self.design_
        privacy = getattr(sketch, "privacy", None)
        count = max(int(sketch.count), 1)  # post-processing of the noisy count (notes P5)
        if privacy is None and sketch.count == 0:
            raise ValueError("the sketch is empty (count 0)")
        sigma2 = 0.0 if privacy is None else float(privacy.sum_noise_variance)
        n_s = self.n_synthetic
        lam = self._lambda(sigma2, count, n_s)
        lam_prime = lam if self.loss == "sum" else lam * n_s
        z = fm.as_real(sketch.sum / count)
        if self.keep_gram and self.gram_ is None:
            self.gram_ = design.gram()
        self._factor = _factor(design, lam_prime, self.gram_)
        self._sorted_cache = None
        v = self._solve(z)
        with blas_single_thread():  # level-2 products: one thread is as fast and not disturbed by load
            w = design.matvec(v)
        self.weights_ = w
        self.mass_ = float(w.sum())
        self.lambda_ = lam
        self.noise_variance_ = sigma2
        self.count_ = count
        self.mean_sketch_ = z
        return self

    def _lambda(self, sigma2, count, n_s):
        reg = self.regularization
        if reg == "eq5":
            lam = sigma2 / count
        elif reg == "theory":
            lam = sigma2 / count ** 2
        else:
            lam = float(reg)
        lam *= self.regularization_scale
        floor = self.min_regularization * (n_s if self.loss == "sum" else 1.0)
        return max(lam, floor)

    def _solve(self, B):
        kind, f = self._factor
        if kind == "cholesky":
            return linalg.cho_solve(f, B, check_finite=False)
        vals, vecs = f
        return vecs @ ((vecs.T @ B) / (vals if B.ndim == 1 else vals[:, None]))

    def _check_fitted(self):
        if not hasattr(self, "weights_"):
            raise ValueError("this M2M is not fitted yet: call fit(sketch) first")

    # ------------------------------------------------------------------ answers

    def values(self, f):
        """F = f(synthetic points): f maps an (n_s, d) array to (n_s,) or (n_s, q)."""
        self._check_fitted()
        F = np.asarray(f(self.synthetic_), dtype=np.float64)
        if F.ndim not in (1, 2) or F.shape[0] != self.n_synthetic:
            raise ValueError(f"f must return an array of shape (n_s,) or (n_s, q) with n_s = {self.n_synthetic}, "
                             f"got {F.shape}")
        return F

    def estimate(self, f):
        """The M2M estimate of (1/n) sum_i f(x_i): sum_j w_j f(x~_j) (weighted form). f
        maps an (n_s, d) array of points to (n_s,) values, or (n_s, q) for q targets at once."""
        F = self.values(f)
        return self.weights_ @ F

    def coefficients(self, f):
        """The ridge coefficients a_f (m,) or (m, q) of [P] Alg. 1 (explicit form):
        (P^T P + lambda' I)^-1 P^T F; <a_f, z> equals `estimate(f)`."""
        F = self.values(f)
        with blas_single_thread():
            return self._solve(self.design_.rmatvec(F))

    def estimate_explicit(self, f):
        """<a_f, z>: the answer through the coefficients (slower; equals `estimate`)."""
        return self.mean_sketch_ @ self.coefficients(f)

    def count(self, fraction):
        """A fraction of the records as a count: fraction times the released count."""
        return np.asarray(fraction) * self.count_


    # ------------------------------------------------------------------ queries ([P] Sec. 3.4)

    def _columns(self, columns):
        d = self.domain.d
        if columns is None:
            return np.arange(d)
        cols = np.atleast_1d(np.asarray(columns))
        if cols.dtype.kind not in "iu" or cols.ndim != 1 or ((cols < -d) | (cols >= d)).any():
            raise ValueError(f"columns must be column indices in [0, {d}), got {columns!r}")
        return cols % d

    def moments(self, orders=(1, 2), columns=None):
        """(1/n) sum_i x_ij^k for every order k in `orders` and column j in `columns`
        (default all): an array (len(orders), len(columns))."""
        self._check_fitted()
        ks = np.atleast_1d(np.asarray(orders))
        if ks.dtype.kind not in "iu" or (ks < 0).any():
            raise ValueError(f"orders must be non-negative integers, got {orders!r}")
        cols = self._columns(columns)
        Xc = self.synthetic_[:, cols]
        return np.stack([self.weights_ @ Xc ** int(k) for k in ks])

    def mean(self):
        """The column means, (d,)."""
        return self.moments((1,))[0]

    def covariance(self):
        """The (1/n) covariance matrix (d, d) of the records, by [P] Sec. 3.4's two stages:
        the means mu first, then the averages of (x_i - mu_i)(x_j - mu_j)."""
        mu = self.mean()
        S = self.synthetic_ - mu
        C = (S * self.weights_[:, None]).T @ S
        return (C + C.T) / 2

    def _sorted(self, column):
        cache = self._sorted_cache
        if cache is None:
            cache = self._sorted_cache = {}
        if column not in cache:
            x = self.synthetic_[:, column]
            order = np.argsort(x, kind="stable")
            cache[column] = (x[order], np.concatenate([[0.0], np.cumsum(self.weights_[order])]))
        return cache[column]

    def cdf(self, column, thresholds):
        """(1/n) #{i : x_i,column <= t} for every threshold t: an array like thresholds."""
        self._check_fitted()
        col = int(self._columns([column])[0])
        t = np.asarray(thresholds, dtype=np.float64)
        if np.isnan(t).any():
            raise ValueError("thresholds must not be NaN")
        xs, cum = self._sorted(col)
        return cum[np.searchsorted(xs, t, side="right")]

    def histogram(self, column, edges):
        """The fractions of records in the bins [e_k, e_k+1) of `edges` (the last bin
        closed) of one column: (len(edges) - 1,)."""
        self._check_fitted()
        col = int(self._columns([column])[0])
        e = np.asarray(edges, dtype=np.float64).reshape(-1)
        if e.size < 2 or not np.isfinite(e).all() or (np.diff(e) <= 0).any():
            raise ValueError("edges must be at least two finite, increasing numbers")
        xs, cum = self._sorted(col)
        left = cum[np.searchsorted(xs, e, side="left")]
        left[-1] = cum[np.searchsorted(xs, e[-1], side="right")]
        return np.diff(left)

    def counting_queries(self, lower, upper, *, as_count=False):
        """Answers of q counting queries at once: query t counts the records with
        lower[t, j] <= x_j <= upper[t, j] for every j (a conjunction of 1-D predicates;
        -inf / +inf where a coordinate is unconstrained). lower, upper: (q, d) or (d,).
        Returns the fractions (q,), or counts (times the released count) with as_count."""
        self._check_fitted()
        lo, hi = _query_boxes(lower, upper, self.domain.d)
        X, w = self.synthetic_, self.weights_
        out = np.empty(lo.shape[0])
        for t in range(lo.shape[0]):
            cols = np.flatnonzero(np.isfinite(lo[t]) | np.isfinite(hi[t]))
            keep = np.ones(X.shape[0], bool)
            for j in cols:
                keep &= (X[:, j] >= lo[t, j]) & (X[:, j] <= hi[t, j])
            out[t] = w[keep].sum()
        return self.count(out) if as_count else out


def _query_boxes(lower, upper, d):
    lo = np.atleast_2d(np.asarray(lower, dtype=np.float64))
    hi = np.atleast_2d(np.asarray(upper, dtype=np.float64))
    if lo.shape != hi.shape or lo.ndim != 2 or lo.shape[1] != d:
        raise ValueError(f"lower and upper must both have shape (q, {d}) or ({d},), got {np.shape(lower)} and "
                         f"{np.shape(upper)}")
    if np.isnan(lo).any() or np.isnan(hi).any() or (lo == np.inf).any() or (hi == -np.inf).any():
        raise ValueError("lower and upper must not be NaN; use -inf (lower) and +inf (upper) for no constraint")
    return lo, hi


def _factor(design, lam, gram=None):
    """The Cholesky factor of P^T P + lam I (formed and factored in place; from a copy of
    `gram` when given), or, when rounding makes Cholesky fail, its eigen-decomposition with
    the eigenvalues floored at a tiny positive value."""
    G = design.gram() if gram is None else gram.copy()
    G[np.diag_indices_from(G)] += lam
    try:
        # G is symmetric: its transpose is the same matrix in Fortran order, which LAPACK
        # factors in place (a C-ordered G would be copied: m^2 floats more at the peak)
        return "cholesky", linalg.cho_factor(G.T, lower=False, overwrite_a=True, check_finite=False)
    except linalg.LinAlgError:
        G = design.gram() if gram is None else gram.copy()  # the failed factorization overwrote G
        G[np.diag_indices_from(G)] += lam
        vals, vecs = linalg.eigh(G, overwrite_a=True, check_finite=False)
        floor = max(vals.max(), 1.0) * np.finfo(np.float64).eps * G.shape[0]
        return "eigh", (np.maximum(vals, floor), vecs)
