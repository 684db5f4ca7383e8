"""Direct-release baseline of M2M's models: L2-regularised logistic regression by
objective perturbation (Chaudhuri, Monteleoni & Sarwate, JMLR 2011, Algorithm 2).
"""

import math
import warnings

import numpy as np
from scipy import optimize, special

from .._checks import check_array, check_bounds, check_int, check_positive
from ..privacy.budget import Budget
from ..privacy.mechanisms import check_epsilon
from ._common import _clip_records

__all__ = ["LOGISTIC_C", "PrivateLogisticModel", "objective_perturbation_logistic"]


# ----------------------------------------------------------------------- DP-ERM

#: The bound c on abs(l'') of the logistic loss l(z) = log(1 + exp(-z)): l''(z) = s(z) (1 - s(z))
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

    Parameters
    ----------
    coef : array_like of shape (d,)
        The coefficients on the original features (kept as ``coef_``, float64).
    intercept : float
        Kept as ``intercept_``.
    classes : array_like of shape (2,)
        The two classes, the positive one last (kept as ``classes_``).
    epsilon : float, optional
        The privacy budget the model was fitted with (kept as given).
    lam : float, optional
        Lambda, the L2 regularisation of the scaled problem (kept as given).

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

    The noise vector itself is never stored; the attributes after ``n_features_in_`` are
    set by :func:`objective_perturbation_logistic`.

    Raises
    ------
    ValueError
        In `decision_function`, `predict_proba` and `predict`: an X that is not a finite
        2-D array, or whose number of columns differs from ``n_features_in_``.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.baselines import PrivateLogisticModel
    >>> model = PrivateLogisticModel([2.0, -1.0], 0.5, ["no", "yes"])
    >>> model.decision_function(np.array([[1.0, 1.0]])).tolist(), model.predict(np.array([[1.0, 1.0]])).tolist()
    ([1.5], ['yes'])
    """

    def __init__(self, coef, intercept, classes, *, epsilon=None, lam=None):
        self.coef_ = np.asarray(coef, dtype=np.float64)
        self.intercept_ = float(intercept)
        self.classes_ = np.asarray(classes)
        self.n_features_in_ = self.coef_.shape[0]
        self.epsilon = epsilon
        self.lam = lam

    def decision_function(self, X):
        """``X @ coef_ + intercept_``: the log-odds of the positive class classes_[1]."""
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

    The DP-ERM baseline of the M2M paper (Houssiau et al. 2022, Sec. 4.3).
    With records u_i (||u_i||_2 <= 1) and labels y_i in {-1, +1}, Algorithm 2 returns

    .. math::

        f = \arg\min_f \frac1n \sum_i \ell(y_i f^T u_i) + \frac{\Lambda}{2} \|f\|^2
            + \frac1n b^T f + \frac{\Delta}{2} \|f\|^2,
        \qquad \ell(z) = \log(1 + e^{-z}),

    where, with c = 1/4 (abs(l'') <= c for the logistic loss):

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
    u = x / (max(abs(lower), abs(upper)) sqrt(d)). With ``data_norm`` R (a public radius; records
    with ||x|| > R are rescaled onto the sphere, with a warning): u = (x / R, 1) / sqrt(2)
    with an intercept, x / R without. The fitted f is mapped back: ``coef_`` and
    ``intercept_`` act on the original x (decision function ``x @ coef_ + intercept_``).
    Lambda (``lam``) regularises the scaled problem; it matches scikit-learn's
    LogisticRegression(C = 1 / (n Lambda), fit_intercept=False) on the same u.

    **Privacy.** epsilon-DP (delta = 0) under replace-one neighbours: data sets of the same,
    public size n that differ in one record (x, y) (Chaudhuri et al. 2011, Theorem 9: l
    convex, twice differentiable, abs(l') <= 1, abs(l'') <= c; the regulariser (1/2) ||f||^2 is
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

    Raises
    ------
    TypeError
        For a `fit_intercept` that is not a bool, or a `max_iter` that is not an int.
    ValueError
        For an epsilon out of range; a `lam` or `tol` that is not a positive finite number;
        a `max_iter` below 1; an X that is not a finite 2-D array; a y that is not 1-D with
        n labels, or (without `classes`) does not hold exactly two classes; `classes` that
        are not two distinct labels, or a y with other labels; none or both of `bounds` and
        `data_norm`, `bounds` that are not a finite box of d coordinates, or a `data_norm`
        that is not a positive finite number; an accountant whose budget would be exceeded
        (pysketch.privacy.BudgetError).

    Warns
    -----
    RuntimeWarning
        When records are clipped to the box or rescaled onto the ball (with their count),
        and when the optimiser stops before converging.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.baselines import objective_perturbation_logistic
    >>> X = np.random.default_rng(0).uniform(-1, 1, size=(2000, 2))
    >>> y = (X[:, 0] > X[:, 1]).astype(int)
    >>> model = objective_perturbation_logistic(X, y, 1.0, lam=0.01, bounds=([-1, -1], [1, 1]))
    >>> model.coef_.shape, model.predict(X[:3]).shape, model.neighbouring_  # (the noise is not seeded)
    ((2,), (3,), 'replace')
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

    source = Budget(eps, neighbouring="replace", what="objective_perturbation_logistic", pure=True,
                    insecure_seed=insecure_seed).charge(accountant).source
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
