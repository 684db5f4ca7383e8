"""Private baselines for comparisons: DP-Lloyd (SuLQ k-means), EUGkM (the noisy grid) and
covariance PCA.

DP-Lloyd (Blum, Dwork, McSherry & Nissim, "Practical privacy: the SuLQ framework", PODS
2005; the DPLloyd of Su et al., "Differentially private k-means clustering", CODASPY
2016, which the thesis compares against in Fig. 9.4) runs Lloyd's algorithm for a fixed
number T of iterations; in each it releases, for every cluster, the noisy count and the
noisy sum of the records assigned to it, and moves the centre to their ratio.

Privacy (add/remove neighbours): in one iteration a record adds 1 to one count and
x - c0 to one sum (c0 the centre of the public box, records clipped to the box), so the
L1 sensitivity of the (counts, sums) vector is 1 + sum_l h_l with h_l the box's half
widths. Each iteration is (epsilon / T)-DP with Laplace noise of scale
T (1 + sum_l h_l) / epsilon on every entry, and T iterations compose to epsilon. The
noise comes from pysketch.privacy.mechanisms (exact discrete Laplace, OS entropy).

PCA baselines (issue 16; the comparisons of the thesis' Figs. 9.6 and 9.7, notes seed000
sec. 7): each estimates the top-k eigenvectors of the second-moment matrix
C = (1/n) sum_i x_i x_i^T of records in a public ball ||x||_2 <= R (``data_norm``;
records outside are rescaled onto the sphere, never dropped, and counted in a
RuntimeWarning). They differ in how C is released:

- :class:`ExactPCA`: no privacy, the reference;
- :class:`LaplaceCovariancePCA`: symmetric Laplace noise on C (epsilon-DP);
- :class:`WishartPCA`: C + W with W Wishart (Jiang, Xie & Zhang 2016) -- *not*
  differentially private, kept only as the thesis' comparison point (see its docstring);
- :class:`AnalyzeGaussPCA`: symmetric Gaussian noise on C (Dwork, Talwar, Thakurta &
  Zhang 2014), (epsilon, delta)-DP with the analytic calibration of Balle & Wang 2018.

Neighbouring relations (``neighbouring=``, notes seed000 sec. 1.4): under ``'replace'`` n
is public and the noisy sum S = sum_i x_i x_i^T is divided by n; under ``'add_remove'``
(the default) n is private, so a share ``count_share`` (5%) of epsilon releases a noisy
count n + Laplace(1 / epsilon_count) (discrete, sensitivity 1;
pysketch.privacy.mechanisms.noisy_count) and the noisy sum is divided by
max(noisy count, 1); the rest of epsilon (and all of delta) goes to the sum. The
sensitivities of S are derived next to :func:`covariance_l1_sensitivity` and
:func:`covariance_l2_sensitivity`.

Cost: every covariance baseline holds d x d matrices, memory O(d^2) (8.6 GB for one
float64 matrix at d = 2^15), and draws its noise in pure Python (pysketch's exact
samplers): about d^2/2 draws of some 10-30 microseconds each with OS entropy.

Direct-release baselines of M2M (issue 17; Houssiau et al., "M2M: a general method to
perform various data analysis tasks from a differentially private sketch", notes seed001
sec. 3 and 6 items 22-25): each spends the whole budget on one task and answers it from
noisy statistics of the data, the comparison points of M2M's answers from one sketch.

- :func:`laplace_moments`: column moments E[x_j^k];
- :func:`laplace_histogram`: 1-D histograms of every column, as counts, fractions and CDF
  values;
- :func:`laplace_covariance`: the 1/n covariance matrix;
- :func:`laplace_counting_queries`: a batch of box counting queries, each with its share
  epsilon / q of the budget;
- :func:`objective_perturbation_logistic`: L2-regularised logistic regression by objective
  perturbation (Chaudhuri, Monteleoni & Sarwate, JMLR 2011, Algorithm 2).

The first four release a vector of sums with the Laplace mechanism of
pysketch.privacy.mechanisms (exact discrete Laplace on a fine grid, OS entropy) and, under
add/remove neighbours, a noisy count (a share ``1 - split`` of epsilon) to divide by; each
docstring gives the vector's L1 sensitivity on the public box. They return a
:class:`DirectRelease` (a dict whose keys are also attributes).
"""

import math
import numbers
import warnings
from fractions import Fraction

import numpy as np
from scipy import linalg, optimize, special

from ._checks import check_array, check_bounds, check_int, check_positive, check_relation, check_size
from ._random import as_generator
from .cluster import CHUNK_VALUES
from .metrics import assign
from .privacy.accountant import charge
from .privacy.mechanisms import (GRID_BITS, Gaussian, Laplace, check_delta, check_epsilon, noise_source,
                                 noisy_count, sample_discrete_gaussian)

__all__ = [
    "AnalyzeGaussPCA",
    "DPLloyd",
    "DirectRelease",
    "EUGkM",
    "ExactPCA",
    "LaplaceCovariancePCA",
    "PrivateLogisticModel",
    "WishartPCA",
    "covariance_l1_sensitivity",
    "covariance_l2_sensitivity",
    "laplace_counting_queries",
    "laplace_covariance",
    "laplace_histogram",
    "laplace_moments",
    "objective_perturbation_logistic",
]


class DPLloyd:
    """DP-Lloyd k-means (SuLQ), epsilon-DP under add/remove neighbours.

    Parameters
    ----------
    n_clusters : int
    epsilon : float > 0
    bounds : (lower, upper) or (d, 2) array
        Public box of the data; records outside are clipped (with a warning).
    n_iter : int, default 5
        T, fixed in advance (Su et al. 2016 recommend 5; each iteration gets epsilon/T).
    random_state : None, int or Generator
        Draws the initial centres (uniform in the box; public). Never the noise.
    accountant : BudgetAccountant (pysketch or diffprivlib), optional
    insecure_seed : None or int
        Reproducible, insecure noise (tests only).

    Attributes
    ----------
    cluster_centers_ : (n_clusters, d)
    noise_scale_ : float
        Laplace scale of every count and sum entry.
    sensitivity_ : float
        L1 sensitivity of one iteration's (counts, sums).
    """

    def __init__(self, n_clusters, epsilon, bounds, *, n_iter=5, random_state=None, accountant=None,
                 insecure_seed=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.bounds = bounds
        self.n_iter = n_iter
        self.random_state = random_state
        self.accountant = accountant
        self.insecure_seed = insecure_seed

    def fit(self, X, y=None):
        k = check_int(self.n_clusters, "n_clusters")
        T = check_int(self.n_iter, "n_iter")
        eps = check_epsilon(self.epsilon)
        X = check_array(X)
        n, d = X.shape
        _check_centres(k, d)
        lo, hi = check_bounds(self.bounds, d)
        outside = int(np.count_nonzero(((X < lo) | (X > hi)).any(axis=1)))
        if outside:
            warnings.warn(f"{outside} of {n} records lie outside bounds and were clipped to the box",
                          RuntimeWarning, stacklevel=2)
            X = np.clip(X, lo, hi)
        c0 = 0.5 * (lo + hi)
        Z = X - c0
        half = 0.5 * (hi - lo)
        sens = 1.0 + float(half.sum())
        charge(self.accountant, eps, 0.0, "DPLloyd.fit")
        source = noise_source(self.insecure_seed)
        mech = Laplace(eps / T, sens, insecure_seed=source)
        rng = as_generator(self.random_state)
        C = rng.uniform(-half, half, size=(k, d))
        for _ in range(T):
            labels = assign(Z, C)
            counts = np.bincount(labels, minlength=k).astype(np.float64)
            sums = np.zeros((k, d))
            np.add.at(sums, labels, Z)
            noisy = mech.randomise(np.concatenate([counts, sums.ravel()]))
            nc, ns = noisy[:k], noisy[k:].reshape(k, d)
            C = np.clip(ns / np.maximum(nc, 1.0)[:, None], -half, half)
        self.cluster_centers_ = C + c0
        self.noise_scale_ = mech.effective_scale_
        self.sensitivity_ = sens
        self.n_features_in_ = d
        return self

    def predict(self, X):
        return assign(check_array(X), self.cluster_centers_)


class EUGkM:
    """EUGkM k-means (Su, Cao, Li, Bertino & Jha, "Differentially private k-means
    clustering", CODASPY 2016; the grid method the thesis compares with on Gowalla),
    epsilon-DP.

    The records, clipped to the public box, are counted on a uniform grid of M bins per
    coordinate, M = round((N epsilon / theta)^(2 / (2 + d))) with theta = 10 (their
    extension to d dimensions of the uniform grid of Qardaji, Yang & Li, ICDE 2013); the
    counts are released with Laplace noise, the negative ones set to 0, and the k-means of
    the cells' centres weighted by the noisy counts is the result (post-processing; here
    pysketch.cluster.weighted_kmeans, best of 3 greedy k-means++ runs).

    Privacy: the histogram is the sum of one-hot features of one block (pysketch.features.
    GridMap): adding or removing a record moves one count by one (L1 sensitivity 1),
    replacing one moves two (2), whatever the data. N is not public under add/remove: a
    share ``count_share`` (5%) of epsilon releases a noisy count (discrete Laplace,
    sensitivity 1) that sets M, and the rest noises the cells (the release path of the
    library, pysketch.privacy.release; noise from OS entropy). Under 'replace' N is public
    and the whole epsilon goes to the cells. M^d is capped at MAX_GRID_CELLS (M lowered).

    Parameters
    ----------
    n_clusters : int
    epsilon : float > 0
    bounds : (lower, upper) or (d, 2) array
        Public box; records outside are clipped (with a warning).
    theta : float > 0, default 10
    count_share : float in (0, 1), default 0.05
    neighbouring : {'add_remove', 'replace'}
    random_state : None, int or Generator
        The k-means's seeding (public). Never the noise.
    accountant : BudgetAccountant (pysketch or diffprivlib), optional
    insecure_seed : None or int
        Reproducible, insecure noise (tests only).

    Attributes
    ----------
    cluster_centers_ : (n_clusters, d)
    n_bins_ : int
        M, the bins per coordinate.
    sketch_ : PrivateSketch
        The released grid (noisy counts and count).
    sensitivity_ : float
        L1 sensitivity of the counts (1, or 2 under 'replace').
    """

    def __init__(self, n_clusters, epsilon, bounds, *, theta=10.0, count_share=0.05, neighbouring="add_remove",
                 random_state=None, accountant=None, insecure_seed=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.bounds = bounds
        self.theta = theta
        self.count_share = count_share
        self.neighbouring = neighbouring
        self.random_state = random_state
        self.accountant = accountant
        self.insecure_seed = insecure_seed

    @staticmethod
    def grid_bins(count, epsilon, d, theta=10.0):
        """M = round((count epsilon / theta)^(2 / (2 + d))), at least 1, with M^d <=
        MAX_GRID_CELLS (Su et al. 2016)."""
        from .features import MAX_GRID_CELLS

        bins = max(1, int(round((max(float(count), 1.0) * epsilon / theta) ** (2.0 / (2.0 + d)))))
        while bins > 1 and bins ** d > MAX_GRID_CELLS:
            bins -= 1
        return bins

    def fit(self, X, y=None):
        from .cluster import weighted_kmeans
        from .features import GridMap
        from .privacy.release import plan_release, release

        k = check_int(self.n_clusters, "n_clusters")
        eps = check_epsilon(self.epsilon)
        theta = check_positive(self.theta, "theta")
        share = _check_share(self.count_share)
        relation = check_relation(self.neighbouring)
        X = check_array(X)
        n, d = X.shape
        _check_centres(k, d)
        lo, hi = check_bounds(self.bounds, d)
        outside = int(np.count_nonzero(((X < lo) | (X > hi)).any(axis=1)))
        if outside:
            warnings.warn(f"{outside} of {n} records lie outside bounds and were clipped to the box",
                          RuntimeWarning, stacklevel=2)
            X = np.clip(X, lo, hi)
        plan = plan_release(1, eps, 0.0, neighbouring=relation, mechanism="laplace",
                            split=1.0 - share if relation == "add_remove" else None)
        charge(self.accountant, eps, 0.0, "EUGkM.fit")
        source = noise_source(self.insecure_seed)
        count = plan.release_count(n, source)
        bins = self.grid_bins(count, plan.epsilon_sum, d, theta)
        fm = GridMap(lo, hi, bins)
        private = release(fm.sketch(X), plan, source, count=count)
        weights = np.maximum(private.sum, 0.0)
        rng = as_generator(self.random_state)
        if weights.sum() > 0:
            C, _, _ = weighted_kmeans(fm.cell_centers(), weights, k, n_init=3, random_state=rng)
        else:  # every noisy count <= 0: nothing to cluster, the box's centre
            C = np.repeat(0.5 * (lo + hi)[None, :], k, axis=0)
        self.cluster_centers_ = C
        self.n_bins_ = bins
        self.sketch_ = private
        self.sensitivity_ = private.privacy.sensitivity_sum
        self.n_features_in_ = d
        return self

    def predict(self, X):
        return assign(check_array(X), self.cluster_centers_)


# =======================================================================================
# PCA baselines: the second-moment matrix, released with noise
# =======================================================================================

#: Default share of epsilon spent on the noisy count under add/remove neighbours.
COUNT_SHARE = 0.05


def covariance_l1_sensitivity(d, neighbouring="add_remove", data_norm=1.0):
    r"""L1 sensitivity of the upper triangle (diagonal included) of S = sum_i x_i x_i^T,
    records in the ball ||x||_2 <= R = data_norm: the Laplace scale is this / epsilon.

    - ``'add_remove'``: (d + 1) R^2 / 2, exact. One record changes S by x x^T, and
      sum_{i<=j} |x_i x_j| = (||x||_1^2 + ||x||_2^2) / 2 <= (d R^2 + R^2) / 2 by
      Cauchy-Schwarz (||x||_1 <= sqrt(d) ||x||_2), with equality at x = R s / sqrt(d) for
      any sign vector s.
    - ``'replace'``: R^2 sqrt(d (d + 3) / 2) (about (d + 1.5) R^2 / sqrt 2), an upper
      bound. S changes by M = x x^T - y y^T and sum_{i<=j} |M_ij| = max over signs of
      <T, M> = x^T T x - y^T T y, T symmetric with diagonal entries +-1 and off-diagonal
      entries +-1/2. Over the ball that is at most R^2 (lambda_max(T)_+ +
      (-lambda_min(T))_+). When the extreme eigenvalues have opposite signs it is
      R^2 (lambda_max - lambda_min), and (lambda_max - lambda_min)^2 <=
      2 sum_i (lambda_i - mean)^2 <= 2 ||T||_F^2 = 2 (d + d (d - 1) / 4) = d (d + 3) / 2.
      Otherwise it is at most R^2 max |lambda| <= R^2 (d + 1) / 2 (Gershgorin), which is
      below that. The bound is nearly sharp (tests/test_pca_baselines.py): enumerating
      every sign pattern gives the exact sup for d <= 5 (sqrt 5 = the bound at d = 2;
      2.872, sqrt 13, 4.272 against 3, 3.742, 4.472), and at even d the extreme
      eigenvectors of one block pattern attain sqrt(((d + 1)^2 + 1) / 2) R^2, within
      0.05% of the bound at d = 1024. The triangle inequality, twice the add/remove value,
      gives (d + 1) R^2, about sqrt 2 times more.

    The thesis' LaplacePCA (notes seed000 sec. 7, "Fig. 9.6", via Jiang et al. 2016) puts
    Laplace noise of scale 2d / (n epsilon) on the entries of C = S / n under replace
    neighbours, i.e. a sensitivity of 2d for S. That is 2 sup ||x x^T||_1 over all d^2
    entries (||x||_1^2 <= d), counting each off-diagonal entry twice, while only the
    d (d + 1) / 2 distinct entries are drawn. It is private but about 2 sqrt 2 times
    more noise than the bound here (2d versus sqrt(d (d + 3) / 2)); the baselines here
    use the smaller value.
    """
    d = check_int(d, "d")
    relation = check_relation(neighbouring)
    r2 = check_positive(data_norm, "data_norm") ** 2
    if relation == "add_remove":
        return r2 * (d + 1) / 2.0
    return r2 * math.sqrt(d * (d + 3) / 2.0)


def covariance_l2_sensitivity(d, neighbouring="add_remove", data_norm=1.0):
    r"""L2 sensitivity of the upper triangle (diagonal included) of S = sum_i x_i x_i^T,
    records in the ball ||x||_2 <= R = data_norm: the Gaussian mechanism's Delta_2.

    - ``'add_remove'``: R^2, exact. The upper triangle of x x^T has squared norm
      sum_{i<=j} x_i^2 x_j^2 = (||x||^4 + sum_i x_i^4) / 2 <= ||x||^4 <= R^4 (equality at
      x = R e_1). This is also ||x x^T||_F = ||x||^2, the value Analyze Gauss uses.
    - ``'replace'``: sqrt(2) R^2, exact. For M = x x^T - y y^T the upper triangle's squared
      norm is (||M||_F^2 + sum_i M_ii^2) / 2 <= ||M||_F^2 = ||x||^4 + ||y||^4 -
      2 (x.y)^2 <= 2 R^4 (equality at x = R e_1, y = R e_2).

    ``d`` plays no part in the value; it is checked only.
    """
    check_int(d, "d")
    relation = check_relation(neighbouring)
    r2 = check_positive(data_norm, "data_norm") ** 2
    return r2 if relation == "add_remove" else math.sqrt(2.0) * r2


def _check_centres(k, d):
    """n_clusters = k against the memory of k centres of d coordinates (their sums, noisy
    copies and counts) and a chunk of distances to them, before anything is charged."""
    check_size(k, "n_clusters", nbytes=lambda v: v * (d * 8 * 4 + 16) + 16 * CHUNK_VALUES,
               what=f"for centres of d = {d} coordinates")


def _check_components(n_components, d):
    k = check_int(n_components, "n_components")
    if k > d:
        raise ValueError(f"n_components must be an int between 1 and d = {d} (the number of features); got {k}")
    return k


def _check_share(count_share):
    if isinstance(count_share, (bool, np.bool_)) or not isinstance(count_share, numbers.Real) or not (
            0.0 < count_share < 1.0):
        raise ValueError(f"count_share must be a number in (0, 1), got {count_share!r}")
    return float(count_share)


def _batches(X):
    """The records as 2-D batches: an array (anything with __array__, a list or a tuple)
    is one batch; any other iterable (a generator, a LowRankStream) gives its batches."""
    if isinstance(X, (np.ndarray, list, tuple)) or hasattr(X, "__array__"):
        yield X
        return
    try:
        it = iter(X)
    except TypeError as exc:
        raise TypeError(f"X must be an array of shape (n, d) or an iterable of such batches; got "
                        f"{type(X).__name__}") from exc
    yield from it


def _second_moment_sum(X, data_norm):
    """(S, n, d): S = sum_i x_i x_i^T in float64 over every record (memory O(d^2) and one
    batch), records with ||x||_2 > data_norm (when given) rescaled to just inside that
    sphere, with a RuntimeWarning giving their count."""
    S, n, d, rescaled = None, 0, None, 0
    for batch in _batches(X):
        B = check_array(batch)
        if d is None:
            d = B.shape[1]
            S = np.zeros((d, d))
        elif B.shape[1] != d:
            raise ValueError(f"every batch of X must have d = {d} columns, got shape {B.shape}")
        if data_norm is not None:
            norms = np.sqrt(np.einsum("ij,ij->i", B, B))
            over = norms > data_norm
            count = int(np.count_nonzero(over))
            if count:
                B = B.copy()  # never modify the caller's array
                B[over] *= ((data_norm * (1.0 - 4.0 * np.finfo(np.float64).eps)) / norms[over])[:, None]
                rescaled += count
        S += B.T @ B
        n += B.shape[0]
    if S is None:
        raise ValueError("X holds no records (an empty iterable of batches)")
    if rescaled:
        warnings.warn(f"{rescaled} of {n} records had ||x||_2 > data_norm = {data_norm:g} and were rescaled onto "
                      "that sphere (the privacy guarantee assumes the ball); pass a larger public data_norm to keep "
                      "them whole", RuntimeWarning, stacklevel=3)
    return S, n, d


def _noisy_symmetric(S, mechanism):
    """S with the mechanism's noise on its upper triangle (diagonal included), mirrored
    to the lower triangle: one draw per distinct entry."""
    d = S.shape[0]
    rows, cols = np.triu_indices(d)
    noisy = mechanism.randomise(S[rows, cols])
    out = np.empty_like(S)
    out[rows, cols] = noisy
    out[cols, rows] = noisy
    return out


def _top_eigen(A, k):
    """The k largest eigenvalues of the symmetric A (descending) and their eigenvectors as
    orthonormal rows (k, d), each with its largest-magnitude entry positive."""
    d = A.shape[0]
    w, V = linalg.eigh(A, subset_by_index=[d - k, d - 1])
    w, U = w[::-1].copy(), np.ascontiguousarray(V[:, ::-1].T)
    big = np.argmax(np.abs(U), axis=1)
    U *= np.where(U[np.arange(k), big] < 0, -1.0, 1.0)[:, None]
    return w, U


class _SecondMomentPCA:
    """The shared surface: components_ (k, d) orthonormal rows, explained_variance_ (k,),
    covariance_ (the released d x d second-moment matrix), n_features_in_; transform."""

    def _finish(self, C, k, shift=0.0):
        w, U = _top_eigen(C, k)
        self.covariance_ = C
        self.components_ = U
        self.explained_variance_ = w - shift
        self.n_features_in_ = C.shape[0]
        return self

    def transform(self, X):
        """Coordinates of the records in the fitted subspace, X U^T (no centring: the
        baselines model second moments about the origin)."""
        return check_array(X) @ self.components_.T


class ExactPCA(_SecondMomentPCA):
    """Exact PCA of the second-moment matrix: the reference, no privacy.

    C = (1/n) sum_i x_i x_i^T (no centring: centre the data first, as the benchmark's
    public preprocessing does), its top n_components eigenvectors by a symmetric
    eigensolver (scipy.linalg.eigh, the requested eigenvalues only).

    Parameters
    ----------
    n_components : int, 1 <= n_components <= d

    Attributes
    ----------
    components_ : (n_components, d)
        Orthonormal rows, by decreasing eigenvalue (each row's largest entry positive).
    explained_variance_ : (n_components,)
        The top eigenvalues of C.
    covariance_ : (d, d)
        C.

    ``fit`` takes an array (n, d) or an iterable of such batches. Memory O(d^2 + batch).
    """

    def __init__(self, n_components):
        self.n_components = n_components

    def fit(self, X, y=None):
        S, n, d = _second_moment_sum(X, None)
        k = _check_components(self.n_components, d)
        return self._finish(S / n, k)


class _NoisyCovariancePCA(_SecondMomentPCA):
    """Validation, budget split, accounting and the division by the (noisy) count."""

    _delta_positive = False

    # pure-epsilon baselines' parameters (AnalyzeGaussPCA adds delta)
    def __init__(self, n_components, epsilon, *, data_norm=1.0, neighbouring="add_remove",
                 count_share=COUNT_SHARE, accountant=None, insecure_seed=None):
        self.n_components = n_components
        self.epsilon = epsilon
        self.data_norm = data_norm
        self.neighbouring = neighbouring
        self.count_share = count_share
        self.accountant = accountant
        self.insecure_seed = insecure_seed

    def _fit_noisy(self, X, name):
        eps = check_epsilon(self.epsilon)
        delta = check_delta(getattr(self, "delta", 0.0), positive=self._delta_positive)
        R = check_positive(self.data_norm, "data_norm")
        relation = check_relation(self.neighbouring)
        share = _check_share(self.count_share) if relation == "add_remove" else 0.0
        S, n, d = _second_moment_sum(X, R)
        k = _check_components(self.n_components, d)
        eps_sum = eps * (1.0 - share)
        charge(self.accountant, eps, delta, f"{name}.fit")
        source = noise_source(self.insecure_seed)
        released, shift = self._release(S, d, R, relation, eps_sum, delta, source)
        if relation == "replace":
            count = n  # public under replace neighbours
        else:
            count = max(noisy_count(n, eps * share, insecure_seed=source), 1)
        self.count_ = count
        self.epsilon_sum_ = eps_sum
        self.secure_noise_ = source.secure
        return self._finish(released / count, k, shift / count)


class LaplaceCovariancePCA(_NoisyCovariancePCA):
    r"""PCA of the second-moment matrix released with symmetric Laplace noise: epsilon-DP.

    The "LaplacePCA" baseline of the thesis (Fig. 9.6; Jiang, Xie & Zhang 2016, who give
    it as the reference for their Wishart mechanism): Laplace noise on the d (d + 1) / 2
    distinct entries of the second-moment matrix, mirrored, then the top eigenvectors of
    the noisy symmetric matrix.

    **Privacy.** Records in the public ball ||x||_2 <= data_norm = R (rescaled onto it
    otherwise, with a RuntimeWarning). The released matrix is
    (S + E) / c with S = sum_i x_i x_i^T and E symmetric, its upper triangle i.i.d.
    Laplace(b), b = Delta_1 / epsilon_S (exact discrete Laplace on a grid,
    pysketch.privacy.mechanisms.Laplace; OS entropy):

    - ``neighbouring='add_remove'`` (default): Delta_1 = (d + 1) R^2 / 2 (exact),
      epsilon_S = (1 - count_share) epsilon, and c = max(n + Laplace(1 / (count_share
      epsilon)), 1), the discrete noisy count (sensitivity 1). The pair is epsilon-DP
      under add/remove neighbours by sequential composition; the division is
      post-processing.
    - ``neighbouring='replace'``: n is public, c = n, Delta_1 = R^2 sqrt(d (d + 3) / 2), an
      upper bound (:func:`covariance_l1_sensitivity` derives it), and epsilon_S =
      epsilon: epsilon-DP under replace-one neighbours. The noise on C is then
      b / n = sqrt(d (d + 3) / 2) R^2 / (n epsilon). The thesis' scale 2d / (n epsilon)
      is also private but about 2 sqrt 2 times larger: it bounds the L1 norm of all d^2
      entries of x x^T - y y^T, counting each off-diagonal entry twice.

    Parameters
    ----------
    n_components : int, 1 <= n_components <= d
    epsilon : float > 0
    data_norm : float > 0, default 1.0
        The public radius R.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    count_share : float in (0, 1), default 0.05
        Share of epsilon for the noisy count (add/remove only).
    accountant : BudgetAccountant (pysketch or diffprivlib), optional
        Charged (epsilon, 0) before any noise is drawn.
    insecure_seed : None or int
        Reproducible, insecure noise (tests and experiments only).

    Attributes
    ----------
    components_ : (n_components, d)
        Orthonormal rows, top eigenvectors of the released matrix.
    explained_variance_ : (n_components,)
        Its top eigenvalues (noisy; they may be biased upwards by the noise).
    covariance_ : (d, d)
        The released matrix (S + E) / count_.
    noise_scale_ : float
        b, the Laplace scale of each upper-triangular entry of the sum S (enlarged by the
        grid rounding, relative change below 2^-30). Divided by count_ on C.
    sensitivity_ : float
        Delta_1 of the upper triangle of S.
    count_ : int
        The divisor: n (replace) or the noisy count (add/remove).

    ``fit`` takes an array (n, d) or an iterable of such batches. Memory O(d^2): S, the
    released matrix and the d (d + 1) / 2 noise draws (as Python integers while drawn).
    Time: O(n d^2) for S, d (d + 1) / 2 exact Laplace draws (about 17 microseconds each
    with OS entropy: 9 s at d = 1024), O(d^2 k) to O(d^3) for the eigenvectors.
    """

    def _release(self, S, d, R, relation, eps_sum, delta, source):
        sens = covariance_l1_sensitivity(d, relation, R)
        mech = Laplace(eps_sum, sens, insecure_seed=source)
        released = _noisy_symmetric(S, mech)
        self.noise_scale_ = mech.effective_scale_
        self.sensitivity_ = sens
        return released, 0.0

    def fit(self, X, y=None):
        return self._fit_noisy(X, "LaplaceCovariancePCA")


class AnalyzeGaussPCA(_NoisyCovariancePCA):
    r"""PCA of the second-moment matrix released with symmetric Gaussian noise ("Analyze
    Gauss"): (epsilon, delta)-DP.

    Dwork, Talwar, Thakurta & Zhang, "Analyze Gauss: optimal bounds for
    privacy-preserving principal component analysis", STOC 2014: add a symmetric matrix
    with i.i.d. Gaussian upper triangle to A^T A, then take the top eigenvectors. Here
    sigma is the analytic one (Balle & Wang 2018, pysketch.privacy.mechanisms
    .analytic_gaussian_sigma), the smallest for the target (epsilon, delta), not the
    classical sqrt(2 ln(1.25/delta)) / epsilon.

    **Privacy.** Records in the public ball ||x||_2 <= data_norm = R (rescaled onto it
    otherwise, with a RuntimeWarning). The released matrix is (S + E) / c with
    S = sum_i x_i x_i^T and E symmetric, its upper triangle i.i.d. N(0, sigma^2) (exact
    discrete Gaussian on a grid, pysketch.privacy.mechanisms.Gaussian, whose docstring
    states what is proven for it; OS entropy), sigma calibrated for the L2 sensitivity
    Delta_2 of the upper triangle of S (:func:`covariance_l2_sensitivity`):

    - ``neighbouring='add_remove'`` (default): Delta_2 = R^2 (= ||x x^T||_F), sigma for
      ((1 - count_share) epsilon, delta), and c = max(n + Laplace(1 / (count_share
      epsilon)), 1), the discrete noisy count (pure DP, so delta is not split). Together
      (epsilon, delta)-DP under add/remove neighbours.
    - ``neighbouring='replace'``: Delta_2 = sqrt(2) R^2, sigma for (epsilon, delta), c = n
      public: (epsilon, delta)-DP under replace-one neighbours.

    Parameters
    ----------
    n_components : int, 1 <= n_components <= d
    epsilon : float > 0
    delta : float in (0, 1)
        Must be > 0 (the Gaussian mechanism has no pure-DP guarantee).
    data_norm, neighbouring, count_share, accountant, insecure_seed
        As in :class:`LaplaceCovariancePCA` (the accountant is charged (epsilon, delta)).

    Attributes
    ----------
    components_, explained_variance_, covariance_, count_
        As in :class:`LaplaceCovariancePCA`.
    noise_scale_ : float
        sigma of each upper-triangular entry of the sum S (for the sensitivity enlarged by
        the grid rounding). Divided by count_ on C.
    sensitivity_ : float
        Delta_2 of the upper triangle of S.

    Memory O(d^2), as :class:`LaplaceCovariancePCA`. Time: d (d + 1) / 2 exact Gaussian
    draws, about 28 microseconds each with OS entropy (15 s at d = 1024).
    """

    _delta_positive = True

    def __init__(self, n_components, epsilon, delta, *, data_norm=1.0, neighbouring="add_remove",
                 count_share=COUNT_SHARE, accountant=None, insecure_seed=None):
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.data_norm = data_norm
        self.neighbouring = neighbouring
        self.count_share = count_share
        self.accountant = accountant
        self.insecure_seed = insecure_seed

    def _release(self, S, d, R, relation, eps_sum, delta, source):
        sens = covariance_l2_sensitivity(d, relation, R)
        mech = Gaussian(eps_sum, delta, sens, insecure_seed=source)
        released = _noisy_symmetric(S, mech)
        self.noise_scale_ = mech.effective_scale_
        self.sensitivity_ = sens
        return released, 0.0

    def fit(self, X, y=None):
        return self._fit_noisy(X, "AnalyzeGaussPCA")


#: The scale of the Wishart mechanism, in units of R^2 / epsilon (Jiang et al. 2016).
WISHART_FACTOR = 1.5


class WishartPCA(_NoisyCovariancePCA):
    r"""PCA of the second-moment matrix plus Wishart noise (Jiang, Xie & Zhang 2016).
    **NOT differentially private**: a comparison baseline only.

    Jiang, Xie & Zhang, "Wishart mechanism for differentially private principal
    components analysis", AAAI 2016 (the thesis' Wishart baseline, Fig. 9.6; the same
    mechanism as Imtiaz & Sarwate, ICASSP 2016): release C + W with
    W ~ Wishart_d(d + 1, (3 / (2 n epsilon)) I_d) for records in the unit ball, n public
    (replace-one neighbours), claimed epsilon-DP. The formula comes from the project notes
    (seed000 sec. 7, flagged "[external, verify]"): the paper's text was not available
    here, only its abstract (the claim: (epsilon, 0)-DP, positive semi-definite output).

    **The claim is false.** The output C + W has density p_W(output - C), and p_W is
    zero outside the positive definite cone. So the support {output : output - C > 0}
    depends on the data. For neighbours D, D' there are outputs, such as those with
    output - C' not positive semi-definite, that have probability 0 under D' and
    positive probability under D: the privacy loss is unbounded, and the mechanism is
    not (epsilon, delta)-DP for any delta below the probability of such an event (0.12
    in the test's example: d = 2, n = 1, epsilon = 1). Sheffet (ALT 2019, footnote 4)
    and Amin, Dick, Kulesza, Munoz Medina & Vassilvitskii ("Differentially private
    covariance estimation", NeurIPS 2019, sec. 1.2) point this out. IBM's diffprivlib
    removed the mechanism for this reason (github.com/IBM/differential-privacy-library
    issues 23 and 42). tests/test_pca_baselines.py observes such an event. Inside the
    common support, nu = d + 1 makes the factor det(W)^((nu - d - 1) / 2) of the Wishart
    density equal to 1, and the log density ratio is tr(Sigma^{-1} (C - C')) / 2 <=
    (2 n epsilon / (3 R^2)) (R^2 / n) / 2 = epsilon / 3 [derived]. So the scale
    3 / (2 n epsilon) is not the problem; the support is. Each ``fit`` warns
    (UserWarning). The accountant, if given, is charged the nominal (epsilon, 0) so that
    budgets add up like the other baselines'.

    What is computed. The sum form: S + W_S with W_S = G^T G, G of shape (d + 1, d)
    with i.i.d. N(0, s^2) entries, s^2 = 1.5 R^2 / epsilon_S (the scale matrix s^2 I),
    divided by c. With ``neighbouring='replace'`` c = n and epsilon_S = epsilon, so the
    release is C + W with W ~ Wishart_d(d + 1, (3 R^2 / (2 n epsilon)) I): the published
    mechanism, for data_norm = R. With ``'add_remove'`` (default, so that the benchmark
    compares like with like) c is the noisy count of the other baselines and
    epsilon_S = (1 - count_share) epsilon (the trace argument above is the same for S).
    G is drawn with pysketch's exact discrete Gaussian on a grid of step
    2^-30 s or finer (sample_discrete_gaussian; OS entropy), one row at a time.

    Parameters
    ----------
    n_components : int, 1 <= n_components <= d
    epsilon : float > 0
        The nominal epsilon of the published calibration.
    data_norm, neighbouring, count_share, accountant, insecure_seed
        As in :class:`LaplaceCovariancePCA`.

    Attributes
    ----------
    components_, covariance_, count_
        As in :class:`LaplaceCovariancePCA`.
    explained_variance_ : (n_components,)
        Top eigenvalues of the released matrix minus the noise's mean (d + 1) s^2 /
        count_ (E[W_S] = (d + 1) s^2 I shifts every eigenvalue equally).
    noise_scale_ : float
        s, the standard deviation of G's entries (on the sum scale).
    wishart_scale_ : float
        s^2: W_S ~ Wishart_d(d + 1, s^2 I).

    Memory O(d^2): S, G (d + 1, d), W_S. Time: d (d + 1) exact Gaussian draws (about 28
    microseconds each with OS entropy: 30 s at d = 1024) and O(d^3) for G^T G.
    """

    def _release(self, S, d, R, relation, eps_sum, delta, source):
        s2 = WISHART_FACTOR * R * R / eps_sum
        s = math.sqrt(s2)
        # a power-of-two grid with s >= 2^30 steps; the draws are exact on it
        g = math.ldexp(1.0, math.frexp(s)[1] - 1 - GRID_BITS)
        sigma2 = (Fraction(s) / Fraction(g)) ** 2
        G = np.empty((d + 1, d))
        for i in range(d + 1):
            G[i] = np.fromiter(sample_discrete_gaussian(sigma2, d, insecure_seed=source), dtype=np.float64,
                               count=d)
        G *= g
        W = G.T @ G
        W = 0.5 * (W + W.T)
        self.noise_scale_ = s
        self.wishart_scale_ = s2
        self.sensitivity_ = R * R  # the trace bound of the density-ratio argument
        return S + W, (d + 1) * s2

    def fit(self, X, y=None):
        warnings.warn("WishartPCA is not differentially private: the support of its output depends on the data "
                      "(Sheffet 2019; Amin et al. 2019); use it only as a comparison baseline", UserWarning,
                      stacklevel=2)
        return self._fit_noisy(X, "WishartPCA")


# =======================================================================================
# Direct-release baselines of M2M (issue 17): statistics and a model, each from its own
# private release
# =======================================================================================

#: Default share of epsilon for the noisy sums when a noisy count is released too (add/remove
#: neighbours): the 0.98 / 0.02 split of the M2M paper's experiments (notes seed001 sec. 1.6).
SUM_SHARE = 0.98

# Records per block when the counting queries are evaluated (the block's (rows, q) mask is
# kept below about this many entries).
_QUERY_BLOCK_ENTRIES = 1 << 22


class DirectRelease(dict):
    """What a direct-release baseline returns: a dict whose keys are also attributes
    (``r["moments"]`` or ``r.moments``). The keys are listed in each function's docstring."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key) from None

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self))


def _check_fraction(value, name):
    """A real number strictly between 0 and 1 (not bool), as float."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not (0.0 < value < 1.0):
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


def _clip_records(X, lo, hi):
    """(X clipped to [lo, hi], number of records that had a coordinate outside), with a
    RuntimeWarning giving that number. X is never modified in place."""
    outside = int(np.count_nonzero(((X < lo) | (X > hi)).any(axis=1)))
    if outside:
        warnings.warn(f"{outside} of {X.shape[0]} records lie outside bounds and were clipped to the box "
                      "(the privacy guarantee assumes the box)", RuntimeWarning, stacklevel=3)
        X = np.clip(X, lo, hi)
    return X, outside


def _budget(eps, relation, split, needs_count=True):
    """(epsilon of the sums, epsilon of the count or 0.0): the count is released only under
    add/remove neighbours when a divisor is needed; otherwise the sums get everything.
    ``split`` is checked in every case."""
    share = _check_fraction(split, "split")
    if relation == "add_remove" and needs_count:
        return eps * share, eps * (1.0 - share)
    return eps, 0.0


def _divisor(n, relation, eps_count, source):
    """(count, divisor): the public n under replace (or when no count was paid for), else
    the discrete noisy count n + Laplace(1 / eps_count) and max(count, 1)."""
    if relation == "replace" or eps_count == 0.0:
        return n, n
    count = noisy_count(n, eps_count, insecure_seed=source)
    return count, max(count, 1)


# ----------------------------------------------------------------------- moments

def _check_orders(orders):
    """A non-empty tuple of distinct ints >= 1."""
    if isinstance(orders, numbers.Integral) and not isinstance(orders, (bool, np.bool_)):
        orders = (orders,)
    try:
        items = tuple(orders)
    except TypeError:
        raise TypeError(f"orders must be a sequence of ints >= 1, got {orders!r}") from None
    if not items:
        raise ValueError("orders must hold at least one int >= 1")
    out = tuple(check_int(k, "orders") for k in items)
    if len(set(out)) != len(out):
        raise ValueError(f"orders must be distinct, got {out}")
    return out


def _power_range(lo, hi, k):
    """(min, max) of x^k over each interval [lo_j, hi_j]: at an end point, or at 0 when the
    interval holds 0 (x^k is monotone on each side of 0)."""
    ends = np.stack([lo ** k, hi ** k])
    mn, mx = ends.min(axis=0), ends.max(axis=0)
    holds_zero = (lo <= 0.0) & (hi >= 0.0)
    mn = np.where(holds_zero, np.minimum(mn, 0.0), mn)
    mx = np.where(holds_zero, np.maximum(mx, 0.0), mx)
    return mn, mx


def _moments_sensitivity(lo, hi, orders, relation):
    """L1 sensitivity of the sums (sum_i x_ij^k) over k in orders and all columns j, on the
    box [lo, hi] (see laplace_moments)."""
    total = 0.0
    for k in orders:
        if relation == "add_remove":
            total += float(np.maximum(np.abs(lo) ** k, np.abs(hi) ** k).sum())
        else:
            mn, mx = _power_range(lo, hi, k)
            total += float((mx - mn).sum())
    return total


def _moment_sums(X, orders):
    """(len(orders), d): row t holds sum_i x_ij^orders[t]."""
    return np.stack([np.sum(X ** k, axis=0) for k in orders])


def laplace_moments(X, bounds, epsilon, orders=(1, 2), *, neighbouring="add_remove", split=SUM_SHARE,
                    accountant=None, insecure_seed=None):
    r"""Private column moments (1/n) sum_i x_ij^k for every column j and every k in
    ``orders``, from one Laplace release of the sums: epsilon-DP.

    The M2M task "moments" (notes seed001 sec. 3 item 1) answered directly: the vector of
    sums S_kj = sum_i x_ij^k (all orders and columns at once) gets Laplace noise of scale
    Delta_1 / epsilon_S, and the moments are S_kj / max(c, 1) with c the divisor below.

    **Privacy.** Records are clipped to the public box [lower, upper] (with a
    RuntimeWarning giving how many). On the box one record changes S by (x_j^k)_{k,j}, so:

    - ``neighbouring='add_remove'`` (default): Delta_1 = sum_k sum_j max(|lower_j|^k,
      |upper_j|^k), exact (attained at the corner where every |x_j| is largest, the same
      corner for every k). epsilon_S = split * epsilon, and c = n + Laplace(1 /
      ((1 - split) epsilon)) is the discrete noisy count (sensitivity 1;
      pysketch.privacy.mechanisms.noisy_count). epsilon-DP by sequential composition; the
      division is post-processing.
    - ``neighbouring='replace'``: n is public (c = n), epsilon_S = epsilon, Delta_1 =
      sum_k sum_j (max - min of x^k over [lower_j, upper_j]): exact when every interval
      lies on one side of 0 (x^k is then monotone, and the pair (upper, lower) attains every
      term at once), an upper bound otherwise. epsilon-DP under replace-one neighbours.

    The noise is exact discrete Laplace on a grid (pysketch.privacy.mechanisms.Laplace; OS
    entropy unless ``insecure_seed``); its scale on each sum is Delta_1 / epsilon_S
    (enlarged by the grid rounding, relative change below 2^-30). delta = 0.

    Parameters
    ----------
    X : (n, d) array
    bounds : (lower, upper) or (d, 2) array
        The public box.
    epsilon : float > 0
    orders : sequence of distinct ints >= 1, default (1, 2)
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    split : float in (0, 1), default 0.98
        Share of epsilon for the sums under add/remove (the rest goes to the count);
        ignored under replace.
    accountant : BudgetAccountant (pysketch or diffprivlib), optional
        Charged (epsilon, 0) before any noise is drawn.
    insecure_seed : None or int
        Reproducible, insecure noise (tests and experiments only).

    Returns
    -------
    DirectRelease with keys
        ``moments`` (len(orders), d): row t estimates the mean of x_j^orders[t];
        ``orders``; ``sums`` (len(orders), d), the noisy sums; ``count``: the noisy count
        (add/remove; may be <= 0) or n (replace); ``sensitivity``; ``noise_scale`` (the
        Laplace scale of each sum); ``epsilon_sums``, ``epsilon_count`` (0 under
        replace); ``neighbouring``; ``n_clipped``; ``secure_noise``.
    """
    eps = check_epsilon(epsilon)
    relation = check_relation(neighbouring)
    ks = _check_orders(orders)
    X = check_array(X)
    n, d = X.shape
    lo, hi = check_bounds(bounds, d)
    eps_sum, eps_count = _budget(eps, relation, split)
    X, clipped = _clip_records(X, lo, hi)
    sens = _moments_sensitivity(lo, hi, ks, relation)
    charge(accountant, eps, 0.0, "laplace_moments")
    source = noise_source(insecure_seed)
    mech = Laplace(eps_sum, sens, insecure_seed=source)
    sums = mech.randomise(_moment_sums(X, ks))
    count, div = _divisor(n, relation, eps_count, source)
    return DirectRelease(moments=sums / div, orders=ks, sums=sums, count=count, sensitivity=sens,
                         noise_scale=mech.effective_scale_, epsilon_sums=eps_sum, epsilon_count=eps_count,
                         neighbouring=relation, n_clipped=clipped, secure_noise=source.secure)


# ----------------------------------------------------------------------- histograms

def _check_edges(edges, d):
    """A tuple of d float64 arrays, each strictly increasing, finite, of length >= 2."""
    if isinstance(edges, np.ndarray) and edges.ndim == 2:
        edges = list(edges)
    try:
        items = list(edges)
    except TypeError:
        raise TypeError(f"edges must be a sequence of d = {d} arrays of bin edges, got "
                        f"{type(edges).__name__}") from None
    if len(items) != d:
        raise ValueError(f"edges must hold one array of bin edges per column (d = {d}), got {len(items)}")
    out = []
    for j, e in enumerate(items):
        e = np.asarray(e, dtype=np.float64)
        if e.ndim != 1 or e.size < 2 or not np.isfinite(e).all() or not (np.diff(e) > 0).all():
            raise ValueError(f"edges[{j}] must be a strictly increasing 1-D array of at least 2 finite "
                             f"numbers, got {e!r}")
        out.append(e)
    return tuple(out)


def _check_bins(bins, d):
    """A tuple of d ints >= 1 from an int or a sequence of d ints."""
    def check(b):  # the edges, counts, noisy counts, fractions and their sums of one column
        return check_size(b, "bins", nbytes=lambda v: (v + 1) * 8 * 6, what="for the edges and counts of a column")

    if isinstance(bins, numbers.Integral) and not isinstance(bins, (bool, np.bool_)):
        return (check(bins),) * d
    try:
        items = list(bins)
    except TypeError:
        raise TypeError(f"bins must be an int >= 1 or a sequence of d = {d} such ints, got {bins!r}") from None
    if len(items) != d:
        raise ValueError(f"bins must be an int or hold one int per column (d = {d}), got {len(items)}")
    return tuple(check(b) for b in items)


def _bin_indices(x, e):
    """The bin of each value in the edges e: b with e[b] <= x < e[b + 1], the last bin
    closed on the right (x = e[-1] goes in it); x must lie in [e[0], e[-1]]."""
    return np.searchsorted(e[1:-1], x, side="right")


def _histogram_counts(X, edges):
    """The exact counts of every column's bins, concatenated (column 0 first)."""
    return np.concatenate([np.bincount(_bin_indices(X[:, j], e), minlength=e.size - 1).astype(np.float64)
                           for j, e in enumerate(edges)])


def laplace_histogram(X, bounds, epsilon, *, bins=100, edges=None, neighbouring="add_remove", split=SUM_SHARE,
                      accountant=None, insecure_seed=None):
    r"""Private 1-D histograms of every column, all released together: epsilon-DP.

    The M2M tasks "histograms" and "CDF" (notes seed001 sec. 3 items 2 and 4) answered
    directly: column j is cut into bins, equal-width ``bins`` bins over [lower_j,
    upper_j] (or the given ``edges[j]``); bin b of column j holds the records with
    e_b <= x_j < e_{b+1}, the last bin closed on the right. The vector of all counts gets
    Laplace noise of scale Delta_1 / epsilon_C.

    **Privacy.** Records are clipped to the box (the outer edges; RuntimeWarning with the
    count), so every record lies in exactly one bin of each column:

    - ``neighbouring='add_remove'`` (default): Delta_1 = d (one record adds 1 to one bin
      per column), exact. epsilon_C = split * epsilon; the fractions divide by
      max(c, 1), c = n + Laplace(1 / ((1 - split) epsilon)) (discrete noisy count).
      epsilon-DP by sequential composition.
    - ``neighbouring='replace'``: Delta_1 = 2 d (the record leaves one bin and enters
      another in each column; exact when every column has at least 2 bins), epsilon_C =
      epsilon, c = n public. epsilon-DP under replace-one neighbours.

    Exact discrete Laplace noise on a grid (pysketch.privacy.mechanisms.Laplace), delta = 0.

    Parameters
    ----------
    X : (n, d) array
    bounds : (lower, upper), (d, 2) array, or None with ``edges``
        The public box; the equal-width bins cover it.
    epsilon : float > 0
    bins : int >= 1 or sequence of d ints, default 100
        Bins per column (ignored when ``edges`` is given).
    edges : sequence of d strictly increasing arrays, optional
        The bin edges of each column (public), instead of ``bounds`` and ``bins``.
    neighbouring, split, accountant, insecure_seed
        As in :func:`laplace_moments`.

    Returns
    -------
    DirectRelease with keys
        ``edges`` (tuple of d arrays); ``counts`` (tuple of d arrays): the noisy counts;
        ``fractions``: counts / max(count, 1); ``cdf``: the cumulative sums of the
        fractions, ``cdf[j][b]`` estimating the fraction of records with
        x_j < edges[j][b + 1] (<= for the last edge; not forced monotone or into [0, 1]);
        ``count``; ``sensitivity``; ``noise_scale`` (the Laplace scale of each count);
        ``epsilon_counts``, ``epsilon_count``; ``neighbouring``; ``n_clipped``;
        ``secure_noise``.
    """
    eps = check_epsilon(epsilon)
    relation = check_relation(neighbouring)
    X = check_array(X)
    n, d = X.shape
    if edges is not None:
        if bounds is not None:
            raise ValueError("give either bounds (with bins) or edges, not both")
        edges = _check_edges(edges, d)
        lo = np.array([e[0] for e in edges])
        hi = np.array([e[-1] for e in edges])
    else:
        lo, hi = check_bounds(bounds, d)
        edges = tuple(np.linspace(lo[j], hi[j], b + 1) for j, b in enumerate(_check_bins(bins, d)))
    eps_hist, eps_count = _budget(eps, relation, split)
    X, clipped = _clip_records(X, lo, hi)
    sens = float(d) if relation == "add_remove" else 2.0 * d
    charge(accountant, eps, 0.0, "laplace_histogram")
    source = noise_source(insecure_seed)
    mech = Laplace(eps_hist, sens, insecure_seed=source)
    noisy = mech.randomise(_histogram_counts(X, edges))
    count, div = _divisor(n, relation, eps_count, source)
    cuts = np.cumsum([e.size - 1 for e in edges])[:-1]
    counts = tuple(np.split(noisy, cuts))
    fractions = tuple(c / div for c in counts)
    return DirectRelease(edges=edges, counts=counts, fractions=fractions,
                         cdf=tuple(np.cumsum(f) for f in fractions), count=count, sensitivity=sens,
                         noise_scale=mech.effective_scale_, epsilon_counts=eps_hist, epsilon_count=eps_count,
                         neighbouring=relation, n_clipped=clipped, secure_noise=source.secure)


# ----------------------------------------------------------------------- covariance

def _covariance_sensitivity(half, relation):
    """L1 sensitivity of (sum_i z_i, upper triangle of sum_i z_i z_i^T) for records z in
    the centred box [-half, half] (see laplace_covariance)."""
    s1 = float(half.sum())
    s2 = float((half * half).sum())
    if relation == "add_remove":
        return s1 + (s1 * s1 + s2) / 2.0
    return 2.0 * s1 + s1 * s1


def _covariance_vector(Z):
    """(sum_i z_i, upper triangle (diagonal included, row-major) of sum_i z_i z_i^T)."""
    rows, cols = np.triu_indices(Z.shape[1])
    return np.concatenate([Z.sum(axis=0), (Z.T @ Z)[rows, cols]])


def laplace_covariance(X, bounds, epsilon, *, neighbouring="add_remove", split=SUM_SHARE, accountant=None,
                       insecure_seed=None):
    r"""The private 1/n covariance matrix of the columns, from one Laplace release of the
    first and second moment sums: epsilon-DP.

    The M2M task "covariance" (notes seed001 sec. 3 item 5) answered directly. The
    records are first centred on the middle of the public box, z = x - (lower + upper) / 2
    (the covariance does not change; the sums and their sensitivity shrink), then the
    vector v = (sum_i z_i, upper triangle of sum_i z_i z_i^T) of d + d (d + 1) / 2 entries
    gets Laplace noise of scale Delta_1 / epsilon_V. With c the divisor below, the mean
    is m = v_1 / max(c, 1) and the covariance is v_2 / max(c, 1) - m m^T (mirrored:
    symmetric, not forced positive semi-definite).

    **Privacy.** Records are clipped to the box (RuntimeWarning with the count); h =
    (upper - lower) / 2 are the half widths, so |z_j| <= h_j.

    - ``neighbouring='add_remove'`` (default): Delta_1 = sum_j h_j + ((sum_j h_j)^2 +
      sum_j h_j^2) / 2, exact: one record changes v by (z, z_i z_j for i <= j), whose L1
      norm sum_j |z_j| + sum_{i<=j} |z_i| |z_j| grows with every |z_j| and is largest at
      the corners. epsilon_V = split * epsilon, c the discrete noisy count with the rest.
    - ``neighbouring='replace'``: Delta_1 = 2 sum_j h_j + (sum_j h_j)^2, an upper bound
      (|z_j - z'_j| <= 2 h_j, |z_j^2 - z'_j^2| <= h_j^2, |z_i z_j - z'_i z'_j| <= 2 h_i
      h_j; below twice the add/remove value by sum_j h_j^2). epsilon_V = epsilon, c = n
      public.

    Exact discrete Laplace noise on a grid (pysketch.privacy.mechanisms.Laplace), delta = 0.

    Parameters
    ----------
    X : (n, d) array
    bounds : (lower, upper) or (d, 2) array
    epsilon : float > 0
    neighbouring, split, accountant, insecure_seed
        As in :func:`laplace_moments`.

    Returns
    -------
    DirectRelease with keys
        ``covariance`` (d, d) symmetric; ``mean`` (d,) (in the original coordinates);
        ``count``; ``sensitivity``; ``noise_scale`` (the Laplace scale of each entry of
        v); ``epsilon_sums``, ``epsilon_count``; ``neighbouring``; ``n_clipped``;
        ``secure_noise``.
    """
    eps = check_epsilon(epsilon)
    relation = check_relation(neighbouring)
    X = check_array(X)
    n, d = X.shape
    lo, hi = check_bounds(bounds, d)
    eps_sum, eps_count = _budget(eps, relation, split)
    X, clipped = _clip_records(X, lo, hi)
    centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    sens = _covariance_sensitivity(half, relation)
    charge(accountant, eps, 0.0, "laplace_covariance")
    source = noise_source(insecure_seed)
    mech = Laplace(eps_sum, sens, insecure_seed=source)
    noisy = mech.randomise(_covariance_vector(X - centre))
    count, div = _divisor(n, relation, eps_count, source)
    mean_z = noisy[:d] / div
    second = np.empty((d, d))
    rows, cols = np.triu_indices(d)
    second[rows, cols] = noisy[d:] / div
    second[cols, rows] = second[rows, cols]
    cov = second - np.outer(mean_z, mean_z)
    cov = 0.5 * (cov + cov.T)
    return DirectRelease(covariance=cov, mean=mean_z + centre, count=count, sensitivity=sens,
                         noise_scale=mech.effective_scale_, epsilon_sums=eps_sum, epsilon_count=eps_count,
                         neighbouring=relation, n_clipped=clipped, secure_noise=source.secure)


# ----------------------------------------------------------------------- counting queries

def _check_query_box(lower, upper, d):
    """(lower, upper) as float64 arrays of shape (q, d), no NaN, lower <= upper."""
    out = []
    for name, a in (("lower", lower), ("upper", upper)):
        try:
            a = np.array(a, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a (q, d) array of numbers (-inf / +inf where unconstrained)") from None
        if a.ndim == 1:
            a = a[None, :]
        if a.ndim != 2 or a.shape[1] != d or a.shape[0] < 1:
            raise ValueError(f"{name} must have shape (q, d) with d = {d} and q >= 1, got {a.shape}")
        if np.isnan(a).any():
            raise ValueError(f"{name} must not hold NaN (use -inf / +inf where unconstrained)")
        out.append(a)
    lower, upper = out
    if lower.shape != upper.shape:
        raise ValueError(f"lower and upper must have the same shape, got {lower.shape} and {upper.shape}")
    if (lower > upper).any():
        raise ValueError("lower must be <= upper in every entry (an empty query is a bug, not a query)")
    return lower, upper


def _query_counts(X, lower, upper):
    """The exact count of every query: #{i : lower[t] <= x_i <= upper[t]} (q,), vectorised
    over records and queries, in blocks of records."""
    n, d = X.shape
    q = lower.shape[0]
    rows = max(1, _QUERY_BLOCK_ENTRIES // q)
    counts = np.zeros(q, dtype=np.int64)
    for start in range(0, n, rows):
        B = X[start:start + rows]
        inside = np.ones((B.shape[0], q), dtype=bool)
        for j in range(d):
            col = B[:, j:j + 1]
            inside &= (col >= lower[:, j]) & (col <= upper[:, j])
        counts += inside.sum(axis=0)
    return counts.astype(np.float64)


def laplace_counting_queries(X, lower, upper, epsilon, *, as_fraction=True, neighbouring="add_remove", split=None,
                             accountant=None, insecure_seed=None):
    r"""A batch of q counting queries, each answered with its share epsilon_Q / q of the
    budget: epsilon-DP.

    Query t counts the records in the box lower[t] <= x <= upper[t] (every inequality
    inclusive; -inf / +inf where an attribute is unconstrained): the M2M counting queries,
    conjunctions of 1-D predicates (notes seed001 sec. 3 item 3). Each count gets Laplace
    noise of scale q / epsilon_Q: the "answer each query with its share of the budget"
    baseline.

    **Privacy.** One record changes each count by at most 1 (add/remove, and also replace:
    the record leaves one set and enters another, net change -1, 0 or 1). Each query is
    (epsilon_Q / q)-DP with scale 1 / (epsilon_Q / q), and the q queries compose
    sequentially to epsilon_Q; it is the same as Laplace noise of scale q / epsilon_Q on the
    vector of counts, whose L1 sensitivity is at most q (drawn that way here, exact
    discrete Laplace on a grid). No box and no clipping are needed: a count's sensitivity
    does not depend on the records' values.

    - ``as_fraction=False``: the noisy counts; epsilon_Q = epsilon, no count is released.
    - ``as_fraction=True`` (default) under ``'add_remove'``: the answers are fractions,
      noisy counts / max(c, 1), where c = n + Laplace(1 / epsilon_N) is the discrete noisy
      total count (a counting query itself, sensitivity 1). The budget is split:
      epsilon_Q = split * epsilon for the queries, epsilon_N = (1 - split) epsilon for c.
      The default ``split=None`` takes split = q^(2/3) / (q^(2/3) + 1) [derived]: for an
      answer near 1 the variance of a ratio (C + xi) / (n + zeta) is about
      (Var xi + Var zeta) / n^2 = 2 ((q / epsilon_Q)^2 + (1 / epsilon_N)^2) / n^2, which
      for epsilon_Q + epsilon_N = epsilon is smallest at epsilon_Q / epsilon_N = q^(2/3)
      (0.5 for q = 1, 0.96 for q = 100, 0.99 for q = 1000).
    - ``as_fraction=True`` under ``'replace'``: n is public, fractions = noisy counts / n,
      epsilon_Q = epsilon.

    delta = 0 in every case.

    Parameters
    ----------
    X : (n, d) array
    lower, upper : (q, d) arrays (a (d,) array is one query)
        The public query boxes; -inf / +inf where an attribute is unconstrained.
    epsilon : float > 0
    as_fraction : bool, default True
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    split : None or float in (0, 1)
        Share of epsilon for the queries when a noisy count is released (see above).
    accountant, insecure_seed
        As in :func:`laplace_moments`.

    Returns
    -------
    DirectRelease with keys
        ``answers`` (q,): fractions or counts; ``counts`` (q,): the noisy counts;
        ``count``: the divisor's count (noisy, or n; None when as_fraction=False);
        ``noise_scale``: the Laplace scale of each count, q / epsilon_Q (enlarged by the
        grid rounding, relative change below 2^-30); ``epsilon_per_query`` (epsilon_Q /
        q); ``epsilon_queries``; ``epsilon_count``; ``neighbouring``; ``secure_noise``.
    """
    eps = check_epsilon(epsilon)
    relation = check_relation(neighbouring)
    if not isinstance(as_fraction, (bool, np.bool_)):
        raise TypeError(f"as_fraction must be True or False, got {as_fraction!r}")
    X = check_array(X)
    n, d = X.shape
    lower, upper = _check_query_box(lower, upper, d)
    q = lower.shape[0]
    if split is None:
        split = q ** (2.0 / 3.0) / (q ** (2.0 / 3.0) + 1.0)
    eps_q, eps_count = _budget(eps, relation, split, needs_count=bool(as_fraction))
    charge(accountant, eps, 0.0, "laplace_counting_queries")
    source = noise_source(insecure_seed)
    mech = Laplace(eps_q, float(q), insecure_seed=source)
    noisy = mech.randomise(_query_counts(X, lower, upper))
    if as_fraction:
        count, div = _divisor(n, relation, eps_count, source)
        answers = noisy / div
    else:
        count, answers = None, noisy
    return DirectRelease(answers=answers, counts=noisy, count=count, noise_scale=mech.effective_scale_,
                         epsilon_per_query=eps_q / q, epsilon_queries=eps_q, epsilon_count=eps_count,
                         neighbouring=relation, secure_noise=source.secure)


# ----------------------------------------------------------------------- DP-ERM

#: The bound c on |l''| of the logistic loss l(z) = log(1 + exp(-z)): l''(z) = s(z) (1 - s(z))
#: <= 1/4 with s the logistic function (Chaudhuri et al. 2011, sec. 3.4).
LOGISTIC_C = 0.25

# 53-bit uniforms from the project's noise source
_UNIFORM_BITS = 53


def _secure_uniform(source, size):
    """size uniforms in the open interval (0, 1): (k + 1/2) / 2^53 with k a uniform integer
    below 2^53 drawn from the noise source (OS entropy unless seeded)."""
    scale = math.ldexp(1.0, -_UNIFORM_BITS)
    return np.array([(source.below(1 << _UNIFORM_BITS) + 0.5) * scale for _ in range(int(size))])


def _objective_noise(p, beta, source):
    """A vector b in R^p with density proportional to exp(-beta ||b||_2).

    In polar coordinates that density factors into a uniform direction and a norm r with
    density proportional to r^(p-1) exp(-beta r), i.e. Gamma(shape p, scale 1 / beta)
    (Chaudhuri et al. 2011, sec. 5, draw b this way). Both are drawn from the project's
    noise source (pysketch.privacy.mechanisms.noise_source, which gives uniform integers;
    it has no continuous Gamma or Gaussian sampler): the norm as a sum of p independent
    exponentials, -(1/beta) sum_k log U_k (a Gamma with integer shape p is such a sum), and
    the direction as a vector of p independent standard normals (Box-Muller: sqrt(-2 log
    U) cos(2 pi V)) divided by its norm (the standard normal law is rotation invariant).
    U, V are 53-bit uniforms in (0, 1) from :func:`_secure_uniform`. Floating point, not
    exact: unlike the Laplace releases above, the output is an optimiser's result, not a
    value plus noise.
    """
    u = _secure_uniform(source, p)
    norm = -float(np.sum(np.log(u))) / beta
    while True:
        a, b = _secure_uniform(source, p), _secure_uniform(source, p)
        g = np.sqrt(-2.0 * np.log(a)) * np.cos(2.0 * math.pi * b)
        length = float(np.linalg.norm(g))
        if length > 0.0:
            return norm * g / length


class PrivateLogisticModel:
    """A linear logistic model in the original feature space: what
    :func:`objective_perturbation_logistic` returns.

    Attributes
    ----------
    coef_ : (d,)
    intercept_ : float
        0.0 when fitted without an intercept.
    classes_ : (2,) array
        classes_[1] is the positive class (probability predict_proba[:, 1]).
    n_features_in_ : int
    epsilon : float
        The privacy budget, epsilon-DP under replace-one neighbours (n public).
    lam : float
        Lambda, the L2 regularisation of the scaled problem.
    epsilon_noise_ : float
        epsilon' of Algorithm 2 (the noise's density is proportional to
        exp(-epsilon' ||b|| / 2)).
    extra_regularisation_ : float
        Delta of Algorithm 2 (0 unless epsilon' would have been <= 0).
    n_iter_ : int
        L-BFGS iterations.
    converged_ : bool
    n_clipped_ : int
        Records clipped to the box (or rescaled onto the ball).
    secure_noise_ : bool
        False when the noise came from an insecure seed.

    The noise vector itself is never stored.
    """

    def __init__(self, coef, intercept, classes, *, epsilon=None, lam=None):
        self.coef_ = np.asarray(coef, dtype=np.float64)
        self.intercept_ = float(intercept)
        self.classes_ = np.asarray(classes)
        self.n_features_in_ = self.coef_.shape[0]
        self.epsilon = epsilon
        self.lam = lam

    def decision_function(self, X):
        """X coef_ + intercept_: the log-odds of the positive class classes_[1]."""
        X = check_array(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, the model was fitted with {self.n_features_in_}")
        return X @ self.coef_ + self.intercept_

    def predict_proba(self, X):
        """(n, 2): the probabilities of classes_[0] and classes_[1]."""
        p = special.expit(self.decision_function(X))
        return np.column_stack([1.0 - p, p])

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(np.intp)]

    def __repr__(self):
        return (f"PrivateLogisticModel(n_features_in_={self.n_features_in_}, epsilon={self.epsilon!r}, "
                f"lam={self.lam!r})")


def _check_labels(y, n, classes):
    """(labels in {-1, +1}, classes) from y of length n and a public pair of classes (None:
    the sorted distinct values of y, which must be two)."""
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must be a 1-D array of n = {n} labels, got shape {y.shape}")
    if classes is None:
        classes = np.unique(y)
        if classes.size != 2:
            raise ValueError(f"y must hold exactly two classes, got {classes.size} ({classes[:5].tolist()}); "
                             "pass the public pair as classes=")
    else:
        classes = np.asarray(classes)
        if classes.shape != (2,) or classes[0] == classes[1]:
            raise ValueError(f"classes must be a pair of distinct labels, got {classes!r}")
        if not np.isin(y, classes).all():
            raise ValueError(f"y holds labels outside classes = {classes.tolist()}")
    return np.where(y == classes[1], 1.0, -1.0), classes


def _logistic_scaling(X, bounds, data_norm, fit_intercept):
    """(U, shift, mult, const, n_clipped): the scaled records U = [(x - shift) * mult,
    const] (the constant column only with an intercept), every row of Euclidean norm
    <= 1, after clipping to the box or rescaling onto the ball (with a RuntimeWarning)."""
    n, d = X.shape
    if (bounds is None) == (data_norm is None):
        raise ValueError("give exactly one of bounds (a public box) and data_norm (a public radius)")
    if bounds is not None:
        lo, hi = check_bounds(bounds, d)
        X, clipped = _clip_records(X, lo, hi)
        if fit_intercept:
            # centred and halved: (x - centre) / half in [-1, 1]^d, plus the constant 1; all
            # d + 1 entries divided by sqrt(d + 1), so ||u||^2 <= (d + 1) / (d + 1) = 1
            shift = 0.5 * (lo + hi)
            root = math.sqrt(d + 1.0)
            mult = 1.0 / (0.5 * (hi - lo) * root)
            const = 1.0 / root
        else:
            # no shift (it would be an intercept): x_j / max(|lower_j|, |upper_j|) in
            # [-1, 1], divided by sqrt(d)
            shift = np.zeros(d)
            mult = 1.0 / (np.maximum(np.abs(lo), np.abs(hi)) * math.sqrt(d))
            const = None
    else:
        R = check_positive(data_norm, "data_norm")
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        over = norms > R
        clipped = int(np.count_nonzero(over))
        if clipped:
            warnings.warn(f"{clipped} of {n} records had ||x||_2 > data_norm = {R:g} and were rescaled onto "
                          "that sphere (the privacy guarantee assumes the ball)", RuntimeWarning, stacklevel=3)
            X = X.copy()
            X[over] *= (R / norms[over])[:, None]
        shift = np.zeros(d)
        if fit_intercept:
            # (x / R, 1) / sqrt(2): ||u||^2 <= (1 + 1) / 2 = 1
            mult = np.full(d, 1.0 / (R * math.sqrt(2.0)))
            const = 1.0 / math.sqrt(2.0)
        else:
            mult = np.full(d, 1.0 / R)
            const = None
    U = (X - shift) * mult
    if const is not None:
        U = np.column_stack([U, np.full(n, const)])
    # rounding may leave a norm a few ulps above 1: bring such rows just inside
    norms = np.sqrt(np.einsum("ij,ij->i", U, U))
    over = norms > 1.0
    if over.any():
        U[over] *= ((1.0 - 4.0 * np.finfo(np.float64).eps) / norms[over])[:, None]
    return U, shift, mult, const, clipped


def objective_perturbation_logistic(X, y, epsilon, *, lam, bounds=None, data_norm=None, fit_intercept=True,
                                    classes=None, max_iter=1000, tol=1e-10, accountant=None, insecure_seed=None):
    r"""L2-regularised logistic regression by objective perturbation: epsilon-DP under
    replace-one neighbours (Chaudhuri, Monteleoni & Sarwate, "Differentially private
    empirical risk minimization", JMLR 12, 2011, Algorithm 2).

    The DP-ERM baseline of the M2M paper's Sec. 4.3 (notes seed001 sec. 5.3, 6 item 25).
    With records u_i (||u_i||_2 <= 1) and labels y_i in {-1, +1}, Algorithm 2 returns

    .. math::

        f = \arg\min_f \frac1n \sum_i \ell(y_i f^T u_i) + \frac{\Lambda}{2} \|f\|^2
            + \frac1n b^T f + \frac{\Delta}{2} \|f\|^2,
        \qquad \ell(z) = \log(1 + e^{-z}),

    where, with c = 1/4 (|l''| <= c for the logistic loss):

    1. epsilon' = epsilon - log(1 + 2c / (n Lambda) + c^2 / (n Lambda)^2);
    2. if epsilon' > 0, Delta = 0; else Delta = c / (n (e^(epsilon/4) - 1)) - Lambda and
       epsilon' = epsilon / 2;
    3. b has density proportional to exp(-beta ||b||), beta = epsilon' / 2: its norm is
       Gamma(p, 2 / epsilon') and its direction uniform (p the number of coordinates of
       u), drawn from the project's noise source (see ``_objective_noise``).

    The minimiser is found with scipy's L-BFGS-B (strictly convex objective, gradient
    norm tolerance ``tol``); a RuntimeWarning says so if it stops before converging.

    **Records.** The theorem needs ||u|| <= 1. With ``bounds`` (a public box; records
    outside are clipped, with a RuntimeWarning giving their count): with an intercept,
    u = ((x - centre) / half, 1) / sqrt(d + 1), centre and half the box's middle and half
    widths, so every coordinate lies in [-1, 1] / sqrt(d + 1) and ||u||^2 <= 1; the
    intercept is the coefficient of the constant feature 1 / sqrt(d + 1), and it is
    regularised like the others (unlike scikit-learn's intercept). Without one,
    u = x / (max(|lower|, |upper|) sqrt(d)). With ``data_norm`` R (a public radius; records
    with ||x|| > R are rescaled onto the sphere, with a warning): u = (x / R, 1) / sqrt(2)
    with an intercept, x / R without. The fitted f is mapped back: ``coef_`` and
    ``intercept_`` act on the original x (decision function x coef_ + intercept_).
    Lambda (``lam``) regularises the scaled problem; it matches scikit-learn's
    LogisticRegression(C = 1 / (n Lambda), fit_intercept=False) on the same u.

    **Privacy.** epsilon-DP (delta = 0) under replace-one neighbours: data sets of the same,
    public size n that differ in one record (x, y) (Chaudhuri et al. 2011, Theorem 9: l
    convex, twice differentiable, |l'| <= 1, |l''| <= c; the regulariser (1/2) ||f||^2 is
    1-strongly convex). The guarantee is for the exact minimiser and continuous noise; here
    the minimiser is numerical (to ``tol``) and the noise is drawn in floating point from
    53-bit uniforms. The labels' classes are public (``classes``; by default the two
    values present in y).

    Parameters
    ----------
    X : (n, d) array
    y : (n,) array of two classes
    epsilon : float > 0
    lam : float > 0
        Lambda.
    bounds : (lower, upper) or (d, 2) array, optional
    data_norm : float > 0, optional
        Exactly one of ``bounds`` and ``data_norm``.
    fit_intercept : bool, default True
    classes : pair of labels, optional
        The public classes (classes[1] positive); default the sorted values of y.
    max_iter : int >= 1, default 1000
    tol : float > 0, default 1e-10
        L-BFGS-B's tolerance on the projected gradient.
    accountant : BudgetAccountant (pysketch or diffprivlib), optional
        Charged (epsilon, 0) before the noise is drawn.
    insecure_seed : None or int
        Reproducible, insecure noise (tests and experiments only).

    Returns
    -------
    PrivateLogisticModel
        ``coef_``, ``intercept_``, ``decision_function``, ``predict_proba``, ``predict``.
    """
    eps = check_epsilon(epsilon)
    Lam = check_positive(lam, "lam")
    if not isinstance(fit_intercept, (bool, np.bool_)):
        raise TypeError(f"fit_intercept must be True or False, got {fit_intercept!r}")
    iters = check_int(max_iter, "max_iter")
    tol = check_positive(tol, "tol")
    X = check_array(X)
    n, d = X.shape
    labels, classes = _check_labels(y, n, classes)
    U, shift, mult, const, clipped = _logistic_scaling(X, bounds, data_norm, bool(fit_intercept))
    p = U.shape[1]

    # Algorithm 2, steps 1-2
    c = LOGISTIC_C
    nl = n * Lam
    eps_prime = eps - math.log1p(2.0 * c / nl + (c / nl) ** 2)
    extra = 0.0
    if eps_prime <= 0.0:
        extra = c / (n * math.expm1(eps / 4.0)) - Lam
        eps_prime = eps / 2.0
    beta = eps_prime / 2.0

    charge(accountant, eps, 0.0, "objective_perturbation_logistic")
    source = noise_source(insecure_seed)
    b = _objective_noise(p, beta, source)
    reg = Lam + extra

    def objective(f):
        margins = labels * (U @ f)
        value = np.logaddexp(0.0, -margins).mean() + 0.5 * reg * (f @ f) + (b @ f) / n
        grad = -(U.T @ (labels * special.expit(-margins))) / n + reg * f + b / n
        return value, grad

    res = optimize.minimize(objective, np.zeros(p), jac=True, method="L-BFGS-B",
                            options={"maxiter": iters, "gtol": tol, "ftol": 1e-15})
    f = res.x
    if not res.success:
        # L-BFGS-B's line search can stop ("ABNORMAL") near the floating-point floor of this
        # strongly convex objective; finish with Newton steps on the exact Hessian (p x p)
        for _ in range(50):
            value, grad = objective(f)
            if np.max(np.abs(grad)) <= tol:
                break
            w = special.expit(labels * (U @ f))
            H = (U.T * (w * (1.0 - w))) @ U / n + reg * np.eye(p)
            f = f - np.linalg.solve(H, grad)
        res.success = bool(np.max(np.abs(objective(f)[1])) <= tol)
    del b
    if not res.success:
        warnings.warn(f"objective_perturbation_logistic: L-BFGS-B stopped before converging ({res.message}); "
                      "the privacy guarantee is for the exact minimiser", RuntimeWarning, stacklevel=2)
    coef = f[:d] * mult
    intercept = (f[d] * const if const is not None else 0.0) - float(coef @ shift)
    model = PrivateLogisticModel(coef, intercept, classes, epsilon=eps, lam=Lam)
    model.epsilon_noise_ = eps_prime
    model.extra_regularisation_ = extra
    model.n_iter_ = int(res.nit)
    model.converged_ = bool(res.success)
    model.n_clipped_ = clipped
    model.secure_noise_ = source.secure
    model.neighbouring_ = "replace"
    return model
