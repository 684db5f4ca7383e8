r"""The M2M method: any empirical average from one (private) sketch, by ridge regression of
the target on the sketch's features over synthetic points (Houssiau, Schellekens et al.,
"M2M: a general method to perform various data analysis tasks from a differentially
private sketch" [P], Houssiau et al. 2022, Sec. 3).

To estimate f_bar = (1/n) sum_i f(x_i) from the released mean sketch z = (Sigma + xi) /
(n + zeta), fit a in R^m with

    J(a) = ||P a - F||^2 + lambda ||a||^2     (loss='sum', the default)
    J(a) = (1/n_s) ||P a - F||^2 + lambda ||a||^2     (loss='mean', [P] Sec. 3.2 literally)

where P (n_s x m) holds the features of n_s synthetic points drawn uniformly from the
public `Domain` and F their values of f, and answer <a, z>. Equivalently (derived from [P] Sec. 3.1-3.2)
the answer is sum_i w_i f(x~_i) with weights w = P (P^T P + lambda' I)^-1 z that do not
depend on f (lambda' = lambda for 'sum', n_s lambda for 'mean'): one Cholesky factor
answers every query. Their total `mass_` estimates the constant 1.

lambda (`regularization`): 'eq5' (default) is [P] eq. (5), sigma_xi^2 / (n + zeta), with
sigma_xi^2 the noise variance of one coordinate of the released sum (2 b^2 for Laplace of
scale b, sigma^2 for Gaussian); 'theory' is Theorem 1's sigma_xi^2 / (n + zeta)^2; a number
is used as it is; all times `regularization_scale` ([P] Alg. 1's R). The loss convention
matters: with eq. (5), 'mean' shrinks every estimate towards 0 (the
mass is 0.96 at epsilon = 1 and 0.24 at epsilon = 0.1 for RFF on Random10) and misses
Table 1 by 4.5x (RFF) to 80x (HIST); 'sum' (scikit-learn's Ridge(alpha=lambda)) reproduces
it (tests/test_m2m.py and benchmarks/quality/m2m_quality.py). A clean sketch (no noise)
gets lambda = 0, floored at `min_regularization` = 1e-9 in 'mean' units (1e-9 n_s in
'sum' units; [P] Sec. 4.1 uses 1e-9 for HIST at epsilon = infinity): one-hot Gram matrices
are singular (the columns of every one-hot block sum to the same all-ones vector) and the RFF one has eigenvalues down to ~1e-10.

Answers respect what is public (issue 37; all post-processing, nothing read but the release):

- n is estimated by pooling, with inverse-variance weights, every unbiased estimate the
  release holds (:func:`pooled_count`): the noisy count and, for one-hot maps, the total
  of every block (each HIST attribute's histogram and each RACE hash's row counts every
  record once), each of known noise variance. The sketch is divided by that estimate.
- The answers are projected onto what is possible for records in the public box
  (``project=True``, the default): means and moments inside the range of x^k over the box,
  covariances positive semi-definite with variances at most (mu - lo)(hi - mu) (Bhatia and
  Davis 2000), fractions in [0, 1], histograms non-negative and summing to 1 when their
  bins cover the box (at most 1 otherwise), CDFs non-decreasing in [0, 1] (isotonic
  regression, then clipping: the Euclidean projection onto that set). Each is the
  Euclidean projection of the raw answer onto its set (or, for covariances, a point of it).
- A :class:`NoisyAnswerWarning` names every answer whose noise standard deviation (from
  the release's public noise variances: ``noise_std``) exceeds NOISE_WARNING_RATIO of the
  answer's possible range.

Nothing here reads data: everything is post-processing of the release (no privacy cost).
"""

import math
import numbers
import warnings

import numpy as np
from scipy import linalg, optimize

from .._checks import check_size
from .._random import as_generator
from .._state import FEATURE_MAPS
from .._threads import blas_single_thread
from ..sketch import Sketch
from .domain import Domain
from .raking import pool

__all__ = ["M2M", "REGULARIZATIONS", "LOSSES", "DEFAULT_N_SYNTHETIC", "NOISE_WARNING_RATIO", "NoisyAnswerWarning",
           "pooled_count"]

#: The named rules of M2M's regularization (a number is accepted too).
REGULARIZATIONS = ("eq5", "theory")
#: The values of M2M's `loss`: a sum or a mean of squares over the synthetic points.
LOSSES = ("sum", "mean")
#: [P] Sec. 4: 10^5 synthetic points make the sampling error negligible.
DEFAULT_N_SYNTHETIC = 100_000
#: A NoisyAnswerWarning is given for an answer whose noise standard deviation is more than
#: this fraction of its possible range (a fraction's range is 1, a mean's hi - lo).
NOISE_WARNING_RATIO = 0.1
#: At most this many answers of one call are checked for noise (evenly spaced): the noise
#: of an answer costs P^T f over the synthetic points and a solve with the m x m factor. At
#: 64 the check took 7-30 times as long as the answers themselves (m = 200 to 6400, 10^5
#: synthetic points); at 16 it is about a quarter of that.
MAX_NOISE_CHECKS = 16


class NoisyAnswerWarning(RuntimeWarning):
    """The release is too noisy for the question asked: the noise standard deviation of an
    answer is a sizeable part of its possible range (the answer is mostly noise).

    Given by the answers of :class:`M2M` when an answer's noise standard deviation
    exceeds :data:`NOISE_WARNING_RATIO` of its possible range, and by
    :meth:`MarginalSynopsis.fit <pysketch.m2m.MarginalSynopsis.fit>` when a cell of its
    two-way tables holds fewer records than twice the noise's standard deviation. It is a
    RuntimeWarning: the answers are still returned.

    Parameters
    ----------
    *args
        The message, as for any warning (``warnings.warn`` builds it).

    Examples
    --------
    >>> import warnings
    >>> from pysketch.m2m import NoisyAnswerWarning
    >>> issubclass(NoisyAnswerWarning, RuntimeWarning)
    True
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", NoisyAnswerWarning)  # answers read as they are
    ...     warnings.warn("mostly noise", NoisyAnswerWarning)
    """


def pooled_count(sketch):
    """The inverse-variance pooled estimate of the number of records from everything in
    the release that estimates it without bias, and its variance.

    A clean sketch, or a release whose count was not noised (under 'replace', n is
    public), gives its count, variance 0. Otherwise the parts are the noisy count
    (discrete Laplace of scale t = 1 / epsilon_count: variance
    2 e^(-1/t) / (1 - e^(-1/t))^2) and, for one-hot maps (HIST, RACE: a map with
    ``block_sizes``) of a sketch that is not feature-subsampled, the total of each block
    (every record sets one cell of each block, so the block total is n plus the noise of
    its w cells: variance w sigma_xi^2). The noises are independent, so the pooled
    estimate sum_i e_i / v_i / sum_i 1 / v_i has variance 1 / sum_i 1 / v_i, the least of
    any unbiased linear combination (Gauss-Markov). Floored at 1 (post-processing: no
    privacy cost).

    Parameters
    ----------
    sketch : Sketch or PrivateSketch
        A clean sketch or a release (pysketch.privacy.make_private).

    Returns
    -------
    n_hat : float
        The pooled estimate of n, at least 1.
    variance : float
        Its variance (0 when n is known).
    parts : list of (str, float, float)
        The estimates pooled, as (name, estimate, variance): ``'count'`` first, then
        ``'block j'`` for block j of a one-hot map.

    Raises
    ------
    TypeError
        If `sketch` is not a pysketch Sketch or PrivateSketch.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import make_box_map
    >>> from pysketch.m2m import pooled_count
    >>> from pysketch.privacy import make_private
    >>> X = np.random.default_rng(0).uniform(size=(5000, 2))
    >>> sketch = make_box_map("hist", [0, 0], [1, 1], n_bins=10).sketch(X)
    >>> pooled_count(sketch)
    (5000.0, 0.0, [('count', 5000.0, 0.0)])
    >>> n_hat, variance, parts = pooled_count(make_private(sketch, 1.0))  # noisy: n_hat varies
    >>> [name for name, _, _ in parts], variance > 0
    (['count', 'block 0', 'block 1'], True)
    """
    if not isinstance(sketch, Sketch):
        raise TypeError(f"sketch must be a pysketch Sketch or PrivateSketch, got {type(sketch).__name__}")
    privacy = getattr(sketch, "privacy", None)
    count = float(sketch.count)
    if privacy is None or not privacy.epsilon_count > 0:
        return max(count, 1.0), 0.0, [("count", count, 0.0)]
    q = math.exp(-float(privacy.epsilon_count))
    v_count = 2.0 * q / (1.0 - q) ** 2
    if v_count == 0:  # an epsilon_count so large that the noise is 0 in floating point
        return max(count, 1.0), 0.0, [("count", count, 0.0)]
    parts = [("count", count, v_count)]
    fm = sketch.feature_map
    sizes = getattr(fm, "block_sizes", None)
    sigma2 = float(privacy.sum_noise_variance)
    if sizes is not None and sketch.subsampling is None and sigma2 > 0:
        totals = np.add.reduceat(np.asarray(sketch.sum, dtype=np.float64), np.asarray(fm.block_offsets))
        parts += [(f"block {j}", float(t), float(size) * sigma2) for j, (t, size) in enumerate(zip(totals, sizes))]
    n_hat, variance = pool([e for _, e, _ in parts], [v for _, _, v in parts])
    return max(n_hat, 1.0), variance, parts


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

    Attributes
    ----------
    synthetic_ : (n_s, d) array
        The synthetic points (set by `fit`, as every attribute here).
    weights_ : (n_s,) array
        Their weights.
    mass_ : float
        The sum of the weights.
    lambda_ : float
        lambda in the units of `loss`.
    noise_variance_ : float
        sigma_xi^2.
    count_ : float
        The estimate of n that divides the sketch: the released count pooled with the block
        totals of a one-hot map (`pooled_count`), at least 1.
    count_std_ : float
        Its noise standard deviation (0 when n is known).
    released_count_ : float
        The count as released.
    mean_sketch_ : array
        The released mean sketch as reals.
    feature_map_ : FeatureMap

    Raises
    ------
    TypeError
        At construction, if `domain` is not a :class:`Domain`; in `fit`, if the sketch is
        not a pysketch Sketch or PrivateSketch.
    ValueError
        At construction, for a `regularization` that is neither a name of REGULARIZATIONS
        nor a finite number >= 0, a `regularization_scale` that is not a positive finite
        number, a `loss` not in LOSSES, a negative or non-finite `min_regularization`, or
        an `n_synthetic` that is not an int >= 1 whose points the machine's memory can
        hold (TypeError if it is not an int). In `fit` and `refit`: a sketch whose records
        do not have the domain's d coordinates, a feature-subsampled sketch, a clean
        sketch of count 0, a feature map whose least squares need more memory than the
        machine has (`check_map`), or (`refit`) a sketch of another map. In the answers:
        an M2M not fitted yet, column indices outside [0, d), negative or non-integer
        moment orders, NaN thresholds, edges that are not at least two finite increasing
        numbers, query boxes of the wrong shape or holding NaN, or an `f` whose values do
        not have n_s rows.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import make_box_map
    >>> from pysketch.m2m import M2M, Domain
    >>> X = np.random.default_rng(0).uniform(size=(5000, 2))
    >>> sketch = make_box_map("hist", [0, 0], [1, 1], n_bins=10).sketch(X)
    >>> m2m = M2M(Domain.unit(2), n_synthetic=2000, random_state=0).fit(sketch)
    >>> np.round(m2m.mean(), 1).tolist(), round(float(m2m.cdf(0, 0.5)), 1)
    ([0.5, 0.5], 0.5)
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
        if privacy is None and sketch.count == 0:
            raise ValueError("the sketch is empty (count 0)")
        # every estimate of n in the release pooled, at least 1 (post-processing)
        count, count_var, _ = pooled_count(sketch)
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
        self.count_std_ = math.sqrt(count_var)
        self.released_count_ = int(sketch.count)
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
        """A fraction of the records as a count: fraction times the estimate of n (`count_`)."""
        return np.asarray(fraction) * self.count_

    def noise_std(self, f):
        """The standard deviation of the release's noise in `estimate(f)`, (q,) or a float:
        sqrt(sigma_xi^2 ||a_f||^2 + f_hat^2 s_n^2) / n_hat, a_f the ridge coefficients
        (`coefficients`), sigma_xi^2 the noise variance of one coordinate of the released
        sum and s_n that of the estimate of n (`count_std_`); first order in the noise, the
        small correlation of the block totals with the answer left out. 0 for a clean sketch."""
        F = self.values(f)
        out = self._noise_std(F.reshape(F.shape[0], -1), np.atleast_1d(self.weights_ @ F))
        return out if F.ndim == 2 else float(out[0])

    def _noise_std(self, F, answers):
        if self.noise_variance_ == 0 and self.count_std_ == 0:
            return np.zeros(F.shape[1])
        with blas_single_thread():
            A = self._solve(self.design_.rmatvec(F))
        A = A.reshape(A.shape[0], -1)
        var = self.noise_variance_ * np.einsum("ij,ij->j", A, A) + (np.asarray(answers) * self.count_std_) ** 2
        return np.sqrt(var) / self.count_

    def _warn_noise(self, targets, answers, ranges, labels, what, stacklevel=3):
        """NoisyAnswerWarning when the noise std of some answers exceeds NOISE_WARNING_RATIO
        of their possible range. targets(idx) gives the values F (n_s, len(idx)) of the
        answers idx; at most MAX_NOISE_CHECKS answers (evenly spaced) are checked."""
        if self.noise_variance_ == 0 and self.count_std_ == 0:
            return
        q = len(answers)
        idx = np.unique(np.linspace(0, q - 1, min(q, MAX_NOISE_CHECKS)).round().astype(np.int64))
        std = self._noise_std(np.asarray(targets(idx), dtype=np.float64).reshape(self.n_synthetic, -1),
                              np.asarray(answers)[idx])
        ranges = np.asarray(ranges, dtype=np.float64)[idx]
        ratio = std / np.where(ranges > 0, ranges, np.inf)
        bad = np.flatnonzero(ratio > NOISE_WARNING_RATIO)
        if bad.size == 0:
            return
        worst = bad[np.argmax(ratio[bad])]
        checked = f"{bad.size} of the {idx.size} answers checked" if idx.size < q else f"{bad.size} of {q} answers"
        n_text = f"n = {self.count_:.0f} +- {self.count_std_:.2g}" if self.count_std_ > 0 else f"n = {self.count_:.0f}"
        warnings.warn(
            f"the release is too noisy for this question: {checked} ({what}) have a noise standard deviation above "
            f"{NOISE_WARNING_RATIO:g} of their possible range; the worst, {labels(int(idx[worst]))}: {std[worst]:.3g} "
            f"against a range of {ranges[worst]:.3g} ({ratio[worst]:.2g} of it; {n_text}). The answers are mostly "
            "noise: more records, a larger epsilon or a smaller sketch would help",
            NoisyAnswerWarning, stacklevel=stacklevel)

    # ------------------------------------------------------------------ queries ([P] Sec. 3.4)

    def _columns(self, columns):
        d = self.domain.d
        if columns is None:
            return np.arange(d)
        cols = np.atleast_1d(np.asarray(columns))
        if cols.dtype.kind not in "iu" or cols.ndim != 1 or ((cols < -d) | (cols >= d)).any():
            raise ValueError(f"columns must be column indices in [0, {d}), got {columns!r}")
        return cols % d

    def moments(self, orders=(1, 2), columns=None, *, project=True):
        """(1/n) sum_i x_ij^k for every order k in `orders` and column j in `columns`
        (default all): an array (len(orders), len(columns)). project: each clipped to the
        range of x^k over the column's public interval (order 0: exactly 1)."""
        return self._moments(orders, columns, project, "moments")

    def _moments(self, orders, columns, project, what):
        self._check_fitted()
        ks = np.atleast_1d(np.asarray(orders))
        if ks.dtype.kind not in "iu" or (ks < 0).any():
            raise ValueError(f"orders must be non-negative integers, got {orders!r}")
        cols = self._columns(columns)
        Xc = self.synthetic_[:, cols]
        raw = np.stack([self.weights_ @ Xc ** int(k) for k in ks])
        lo, hi = _power_ranges(ks, self.domain.lower[cols], self.domain.upper[cols])
        if what is not None:
            J = cols.size
            self._warn_noise(lambda idx: np.stack([Xc[:, i % J] ** int(ks[i // J]) for i in idx], axis=1),
                             raw.reshape(-1), (hi - lo).reshape(-1),
                             lambda i: f"order {int(ks[i // J])} of column {int(cols[i % J])} (range "
                                       f"[{lo.flat[i]:.4g}, {hi.flat[i]:.4g}])", what, stacklevel=4)
        return np.clip(raw, lo, hi) if project else raw

    def mean(self, *, project=True):
        """The column means, (d,); project: inside the public box."""
        return self._moments((1,), None, project, "mean")[0]

    def covariance(self, *, project=True):
        """The (1/n) covariance matrix (d, d) of the records, by [P] Sec. 3.4's two stages:
        the means mu first, then the averages of (x_i - mu_i)(x_j - mu_j). project: the mean
        inside the box, then the matrix made positive semi-definite (negative eigenvalues set
        to 0: the nearest such matrix in Frobenius norm, Higham 1988) and each variance at
        most the Bhatia-Davis bound (mu_j - lo_j)(hi_j - mu_j) of data in [lo_j, hi_j]
        (Bhatia and Davis 2000), by scaling row and column j (which keeps it semi-definite)."""
        mu = self._moments((1,), None, project, None)[0]
        S = self.synthetic_ - mu
        C = (S * self.weights_[:, None]).T @ S
        C = (C + C.T) / 2
        lo, hi = self.domain.lower, self.domain.upper
        bound = np.maximum((mu - lo) * (hi - mu), 0.0)
        self._warn_noise(lambda idx: S[:, idx] ** 2, np.diag(C), (hi - lo) ** 2 / 4,
                         lambda j: f"the variance of column {j} (range [0, {(hi[j] - lo[j]) ** 2 / 4:.4g}])",
                         "covariance")
        if not project:
            return C
        vals, vecs = np.linalg.eigh(C)
        C = (vecs * np.maximum(vals, 0.0)) @ vecs.T
        diag = np.diag(C).copy()
        scale = np.ones_like(diag)
        over = diag > bound
        scale[over] = np.sqrt(bound[over] / diag[over])
        C = C * scale[:, None] * scale[None, :]
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

    def cdf(self, column, thresholds, *, project=True):
        """(1/n) #{i : x_i,column <= t} for every threshold t: an array like thresholds.
        project: 0 below the column's public interval and 1 from its upper end (every
        record is in the box), the rest the isotonic regression of the raw answers over the
        sorted thresholds clipped to [0, 1], the nearest non-decreasing answers in [0, 1]
        (least squares)."""
        self._check_fitted()
        col = int(self._columns([column])[0])
        t = np.asarray(thresholds, dtype=np.float64)
        if np.isnan(t).any():
            raise ValueError("thresholds must not be NaN")
        xs, cum = self._sorted(col)
        raw = cum[np.searchsorted(xs, t, side="right")]
        lo, hi = self.domain.lower[col], self.domain.upper[col]
        flat_t, flat = t.reshape(-1), raw.reshape(-1)
        inside = np.flatnonzero((flat_t >= lo) & (flat_t < hi))
        if inside.size:
            X = self.synthetic_[:, col]
            self._warn_noise(lambda idx: X[:, None] <= flat_t[inside[idx]][None, :], flat[inside],
                             np.ones(inside.size), lambda i: f"x{col} <= {flat_t[inside[i]]:g}", "cdf")
        if not project:
            return raw
        out = np.where(flat_t < lo, 0.0, 1.0)
        if inside.size:
            order = inside[np.argsort(flat_t[inside], kind="stable")]
            out[order] = np.clip(optimize.isotonic_regression(flat[order]).x, 0.0, 1.0)
        return out.reshape(raw.shape)

    def histogram(self, column, edges, *, project=True):
        """The fractions of records in the bins [e_k, e_k+1) of `edges` (the last bin
        closed) of one column: (len(edges) - 1,). project: the nearest (least squares)
        fractions that are non-negative, 0 in bins outside the column's public interval, and
        sum to 1 when the bins cover the interval (to at most 1 otherwise)."""
        self._check_fitted()
        col = int(self._columns([column])[0])
        e = np.asarray(edges, dtype=np.float64).reshape(-1)
        if e.size < 2 or not np.isfinite(e).all() or (np.diff(e) <= 0).any():
            raise ValueError("edges must be at least two finite, increasing numbers")
        xs, cum = self._sorted(col)
        left = cum[np.searchsorted(xs, e, side="left")]
        left[-1] = cum[np.searchsorted(xs, e[-1], side="right")]
        raw = np.diff(left)
        lo, hi = self.domain.lower[col], self.domain.upper[col]
        X = self.synthetic_[:, col]

        def targets(idx):
            k = np.asarray(idx)
            upper = np.where(k == e.size - 2, X[:, None] <= e[k + 1], X[:, None] < e[k + 1])
            return (X[:, None] >= e[k]) & upper

        def label(k):
            return f"x{col} in bin [{e[k]:g}, {e[k + 1]:g}{']' if k == e.size - 2 else ')'}"

        self._warn_noise(targets, raw, np.ones(raw.size), label, "histogram")
        if not project:
            return raw
        meets = (e[:-1] <= hi) & (e[1:] >= lo)
        meets[:-1] &= e[1:-1] > lo  # a half-open bin [a, lo) holds nothing of the box
        out = np.zeros_like(raw)
        covers = e[0] <= lo and e[-1] >= hi
        out[meets] = _project_simplex(raw[meets], 1.0, exact=covers)
        return out

    def counting_queries(self, lower, upper, *, as_count=False, project=True):
        """Answers of q counting queries at once: query t counts the records with
        lower[t, j] <= x_j <= upper[t, j] for every j (a conjunction of 1-D predicates;
        -inf / +inf where a coordinate is unconstrained). lower, upper: (q, d) or (d,).
        Returns the fractions (q,), or counts (times the estimate of n) with as_count.
        project: each fraction clipped to [0, 1]; exactly 1 for a box that holds the
        public domain and 0 for one that misses it."""
        self._check_fitted()
        lo, hi = _query_boxes(lower, upper, self.domain.d)
        X, w = self.synthetic_, self.weights_

        def inside(t):
            cols = np.flatnonzero(np.isfinite(lo[t]) | np.isfinite(hi[t]))
            keep = np.ones(X.shape[0], bool)
            for j in cols:
                keep &= (X[:, j] >= lo[t, j]) & (X[:, j] <= hi[t, j])
            return keep

        out = np.empty(lo.shape[0])
        for t in range(lo.shape[0]):
            out[t] = w[inside(t)].sum()
        self._warn_noise(lambda idx: np.stack([inside(int(t)) for t in idx], axis=1), out, np.ones(out.size),
                         lambda t: f"query {t}", "counting queries")
        if project:
            dlo, dhi = self.domain.lower, self.domain.upper
            holds = ((lo <= dlo) & (hi >= dhi)).all(axis=1)
            misses = ((hi < dlo) | (lo > dhi) | (lo > hi)).any(axis=1)
            out = np.where(holds, 1.0, np.where(misses, 0.0, np.clip(out, 0.0, 1.0)))
        return self.count(out) if as_count else out


def _power_ranges(orders, lo, hi):
    """(low, high), each (len(orders), len(lo)): the range of x^k over [lo_j, hi_j]."""
    ks = np.asarray(orders, dtype=np.float64)[:, None]
    a, b = lo[None, :] ** ks, hi[None, :] ** ks
    low, high = np.minimum(a, b), np.maximum(a, b)
    # an even power over an interval that holds 0 inside reaches 0
    low = np.where((lo[None, :] < 0) & (hi[None, :] > 0) & (ks > 0), np.minimum(low, 0.0), low)
    return low, high


def _project_simplex(v, total, *, exact):
    """The Euclidean projection of v onto {p >= 0, sum p = total} (exact) or {p >= 0,
    sum p <= total}: p = max(v - tau, 0) with the threshold tau of Held, Wolfe and Crowder
    (1974) as in Duchi et al. (2008, "Efficient projections onto the l1-ball", Fig. 1),
    tau = 0 when the clipped v already sums to at most `total` and the sum is not fixed."""
    v = np.asarray(v, dtype=np.float64)
    if v.size == 0:
        return v.copy()
    clipped = np.maximum(v, 0.0)
    if not exact and clipped.sum() <= total:
        return clipped
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    rho = np.flatnonzero(u - css / np.arange(1, u.size + 1) > 0)[-1]
    tau = css[rho] / (rho + 1)
    return np.maximum(v - tau, 0.0)


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
