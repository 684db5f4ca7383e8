"""Private PCA baselines: the second-moment matrix, released with noise.

PCA baselines (issue 16; the comparisons of Chatalic 2020 thesis, sec. 9.3, Figs. 9.6 and
9.7): each estimates the top-k eigenvectors of the second-moment matrix
C = (1/n) sum_i x_i x_i^T of records in a public ball ||x||_2 <= R (``data_norm``;
records outside are rescaled onto the sphere, never dropped, and counted in a
RuntimeWarning). They differ in how C is released:

- :class:`ExactPCA`: no privacy, the reference;
- :class:`LaplaceCovariancePCA`: symmetric Laplace noise on C (epsilon-DP);
- :class:`WishartPCA`: C + W with W Wishart (Jiang, Xie & Zhang 2016) -- *not*
  differentially private, kept only as the thesis' comparison point (see its docstring);
- :class:`AnalyzeGaussPCA`: symmetric Gaussian noise on C (Dwork, Talwar, Thakurta &
  Zhang 2014), (epsilon, delta)-DP with the analytic calibration of Balle & Wang 2018.

Neighbouring relations (``neighbouring=``, Chatalic et al. 2022, Def. 7): under ``'replace'`` n
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
"""

import math
import warnings
from fractions import Fraction

import numpy as np
from scipy import linalg

from .._checks import check_array, check_int, check_positive, check_relation
from ..privacy.budget import Budget
from ..privacy.mechanisms import (GRID_BITS, Gaussian, Laplace, check_delta, check_epsilon,
                                  noisy_count, sample_discrete_gaussian)
from ._common import _check_share

__all__ = ["AnalyzeGaussPCA", "COUNT_SHARE", "ExactPCA", "LaplaceCovariancePCA", "WISHART_FACTOR", "WishartPCA",
           "covariance_l1_sensitivity", "covariance_l2_sensitivity"]


# =======================================================================================
# PCA baselines: the second-moment matrix, released with noise
# =======================================================================================

#: Default share of epsilon spent on the noisy count under add/remove neighbours.
COUNT_SHARE = 0.05


def covariance_l1_sensitivity(d, neighbouring="add_remove", data_norm=1.0):
    r"""L1 sensitivity of the upper triangle (diagonal included) of S = sum_i x_i x_i^T,
    records in the ball ||x||_2 <= R = data_norm: the Laplace scale is this / epsilon.

    - ``'add_remove'``: (d + 1) R^2 / 2, exact. One record changes S by x x^T, and
      sum_{i<=j} abs(x_i x_j) = (||x||_1^2 + ||x||_2^2) / 2 <= (d R^2 + R^2) / 2 by
      Cauchy-Schwarz (||x||_1 <= sqrt(d) ||x||_2), with equality at x = R s / sqrt(d) for
      any sign vector s.
    - ``'replace'``: R^2 sqrt(d (d + 3) / 2) (about (d + 1.5) R^2 / sqrt 2), an upper
      bound. S changes by M = x x^T - y y^T and sum_{i<=j} abs(M_ij) = max over signs of
      <T, M> = x^T T x - y^T T y, T symmetric with diagonal entries +-1 and off-diagonal
      entries +-1/2. Over the ball that is at most R^2 (lambda_max(T)_+ +
      (-lambda_min(T))_+). When the extreme eigenvalues have opposite signs it is
      R^2 (lambda_max - lambda_min), and (lambda_max - lambda_min)^2 <=
      2 sum_i (lambda_i - mean)^2 <= 2 ||T||_F^2 = 2 (d + d (d - 1) / 4) = d (d + 3) / 2.
      Otherwise it is at most R^2 max abs(lambda) <= R^2 (d + 1) / 2 (Gershgorin), which is
      below that. The bound is nearly sharp (tests/test_pca_baselines.py): enumerating
      every sign pattern gives the exact sup for d <= 5 (sqrt 5 = the bound at d = 2;
      2.872, sqrt 13, 4.272 against 3, 3.742, 4.472), and at even d the extreme
      eigenvectors of one block pattern attain sqrt(((d + 1)^2 + 1) / 2) R^2, within
      0.05% of the bound at d = 1024. The triangle inequality, twice the add/remove value,
      gives (d + 1) R^2, about sqrt 2 times more.

    The thesis' LaplacePCA (Chatalic 2020 thesis, sec. 9.3, Fig. 9.6, via Jiang et al. 2016) puts
    Laplace noise of scale 2d / (n epsilon) on the entries of C = S / n under replace
    neighbours, i.e. a sensitivity of 2d for S. That is 2 sup ||x x^T||_1 over all d^2
    entries (||x||_1^2 <= d), counting each off-diagonal entry twice, while only the
    d (d + 1) / 2 distinct entries are drawn. It is private but about 2 sqrt 2 times
    more noise than the bound here (2d versus sqrt(d (d + 3) / 2)); the baselines here
    use the smaller value.

    Parameters
    ----------
    d : int >= 1
        The number of coordinates.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    data_norm : float > 0, default 1.0
        R.

    Returns
    -------
    float
        (d + 1) R^2 / 2 (add/remove) or R^2 sqrt(d (d + 3) / 2) (replace).

    Raises
    ------
    TypeError, ValueError
        For a `d` that is not an int >= 1 (TypeError for a non-integer), an unknown
        `neighbouring` or a `data_norm` that is not a positive finite number.

    Examples
    --------
    >>> from pysketch.baselines import covariance_l1_sensitivity
    >>> covariance_l1_sensitivity(5), round(covariance_l1_sensitivity(5, "replace") ** 2, 9)
    (3.0, 20.0)
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

    Parameters
    ----------
    d : int >= 1
        The number of coordinates.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
    data_norm : float > 0, default 1.0
        R.

    Returns
    -------
    float
        R^2 (add/remove) or sqrt(2) R^2 (replace).

    Raises
    ------
    TypeError, ValueError
        For a `d` that is not an int >= 1 (TypeError for a non-integer), an unknown
        `neighbouring` or a `data_norm` that is not a positive finite number.

    Examples
    --------
    >>> from pysketch.baselines import covariance_l2_sensitivity
    >>> covariance_l2_sensitivity(5, data_norm=2.0), round(covariance_l2_sensitivity(5, "replace") ** 2, 9)
    (4.0, 2.0)
    """
    check_int(d, "d")
    relation = check_relation(neighbouring)
    r2 = check_positive(data_norm, "data_norm") ** 2
    return r2 if relation == "add_remove" else math.sqrt(2.0) * r2


def _check_components(n_components, d):
    k = check_int(n_components, "n_components")
    if k > d:
        raise ValueError(f"n_components must be an int between 1 and d = {d} (the number of features); got {k}")
    return k


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

    Raises
    ------
    TypeError, ValueError
        In `fit`: an `n_components` that is not an int in [1, d] (TypeError for a
        non-integer), or an X that is neither an array nor an iterable of 2-D batches of
        one width, or holds no record, NaN or infinity.

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.random.default_rng(0).standard_normal((1000, 5)) * [3, 1, 0.3, 0.3, 0.3]
    >>> Z /= 2 * np.linalg.norm(Z, axis=1).max()  # records inside the unit ball
    >>> from pysketch.baselines import ExactPCA
    >>> pca = ExactPCA(2).fit(Z)
    >>> pca.components_.shape, np.abs(pca.components_[0]).round(1).tolist()  # the first axis
    ((2, 5), [1.0, 0.0, 0.0, 0.0, 0.0])
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
        source = Budget(eps, delta, neighbouring=relation, what=f"{name}.fit",
                        insecure_seed=self.insecure_seed).charge(self.accountant).source
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
        The released matrix (S + E) / ``count_``.
    noise_scale_ : float
        b, the Laplace scale of each upper-triangular entry of the sum S (enlarged by the
        grid rounding, relative change below 2^-30). Divided by ``count_`` on C.
    sensitivity_ : float
        Delta_1 of the upper triangle of S.
    count_ : int
        The divisor: n (replace) or the noisy count (add/remove).

    ``fit`` takes an array (n, d) or an iterable of such batches. Memory O(d^2): S, the
    released matrix and the d (d + 1) / 2 noise draws (as Python integers while drawn).
    Time: O(n d^2) for S, d (d + 1) / 2 exact Laplace draws (about 17 microseconds each
    with OS entropy: 9 s at d = 1024), O(d^2 k) to O(d^3) for the eigenvectors.

    Raises
    ------
    TypeError, ValueError
        In `fit`: an `n_components` that is not an int in [1, d] (TypeError for a
        non-integer); an epsilon out of range; a `data_norm` that is not a positive
        finite number; an unknown `neighbouring`; a `count_share` outside (0, 1) (under
        add/remove); an X that is neither an array nor an iterable of 2-D batches of one
        width, or holds no record, NaN or infinity; an accountant whose budget would be
        exceeded (pysketch.privacy.BudgetError, a ValueError).

    Warns
    -----
    RuntimeWarning
        When records lie outside the ball (rescaled onto it; the message counts them).

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.random.default_rng(0).standard_normal((1000, 5)) * [3, 1, 0.3, 0.3, 0.3]
    >>> Z /= 2 * np.linalg.norm(Z, axis=1).max()  # records inside the unit ball
    >>> from pysketch.baselines import LaplaceCovariancePCA
    >>> pca = LaplaceCovariancePCA(2, 1.0).fit(Z)
    >>> pca.components_.shape, pca.sensitivity_  # (d + 1) R^2 / 2; (the noise is not seeded)
    ((2, 5), 3.0)
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
        the grid rounding). Divided by ``count_`` on C.
    sensitivity_ : float
        Delta_2 of the upper triangle of S.

    Memory O(d^2), as :class:`LaplaceCovariancePCA`. Time: d (d + 1) / 2 exact Gaussian
    draws, about 28 microseconds each with OS entropy (15 s at d = 1024).

    Raises
    ------
    TypeError, ValueError
        In `fit`: an `n_components` that is not an int in [1, d] (TypeError for a
        non-integer); an epsilon out of range or a delta not in (0, 1); a `data_norm` that is not a positive
        finite number; an unknown `neighbouring`; a `count_share` outside (0, 1) (under
        add/remove); an X that is neither an array nor an iterable of 2-D batches of one
        width, or holds no record, NaN or infinity; an accountant whose budget would be
        exceeded (pysketch.privacy.BudgetError, a ValueError).

    Warns
    -----
    RuntimeWarning
        When records lie outside the ball (rescaled onto it; the message counts them).

    Examples
    --------
    >>> import numpy as np
    >>> Z = np.random.default_rng(0).standard_normal((1000, 5)) * [3, 1, 0.3, 0.3, 0.3]
    >>> Z /= 2 * np.linalg.norm(Z, axis=1).max()  # records inside the unit ball
    >>> from pysketch.baselines import AnalyzeGaussPCA
    >>> pca = AnalyzeGaussPCA(2, 1.0, 1e-5).fit(Z)
    >>> pca.components_.shape, pca.sensitivity_  # R^2; (the noise is not seeded)
    ((2, 5), 1.0)
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
    (replace-one neighbours), claimed epsilon-DP. The formula is the one of the thesis' comparison
    (Chatalic 2020 thesis, sec. 9.3, Fig. 9.6), not checked against Jiang et al.: their
    text was not available here, only its abstract (the claim: (epsilon, 0)-DP, positive semi-definite output).

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
        ``count_`` (E[W_S] = (d + 1) s^2 I shifts every eigenvalue equally).
    noise_scale_ : float
        s, the standard deviation of G's entries (on the sum scale).
    wishart_scale_ : float
        s^2: W_S ~ Wishart_d(d + 1, s^2 I).

    Memory O(d^2): S, G (d + 1, d), W_S. Time: d (d + 1) exact Gaussian draws (about 28
    microseconds each with OS entropy: 30 s at d = 1024) and O(d^3) for G^T G.

    Raises
    ------
    TypeError, ValueError
        In `fit`: an `n_components` that is not an int in [1, d] (TypeError for a
        non-integer); an epsilon out of range; a `data_norm` that is not a positive
        finite number; an unknown `neighbouring`; a `count_share` outside (0, 1) (under
        add/remove); an X that is neither an array nor an iterable of 2-D batches of one
        width, or holds no record, NaN or infinity; an accountant whose budget would be
        exceeded (pysketch.privacy.BudgetError, a ValueError).

    Warns
    -----
    RuntimeWarning
        When records lie outside the ball (rescaled onto it; the message counts them).
    UserWarning
        At every `fit`: the mechanism is not differentially private.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> Z = np.random.default_rng(0).standard_normal((1000, 5)) * [3, 1, 0.3, 0.3, 0.3]
    >>> Z /= 2 * np.linalg.norm(Z, axis=1).max()  # records inside the unit ball
    >>> from pysketch.baselines import WishartPCA
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     pca = WishartPCA(2, 1.0).fit(Z)
    >>> pca.components_.shape, caught[0].category.__name__
    ((2, 5), 'UserWarning')
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
