r"""The baselines of the published random-feature model (Liao, Needell & Xue 2024, Sec. 4),
each returning ``(coef, record)``: the released coefficients and a privacy record stating
the neighbouring relation, the sensitivity, the noise law, its covariance in closed form
(``noise_covariance``: a scalar s meaning s I, or a
:class:`~pysketch.rfm.published.LowRankCovariance`) and what the guarantee is.

* :func:`gamma_output_perturbation`: the paper's "Gamma" baseline, l2-Laplace output
  perturbation (Chaudhuri, Monteleoni & Sarwate 2011, sec. 4) of the min-norm coefficients.
* :func:`objective_perturbation`: CMS 2011 Algorithm 2 applied to the squared loss, as
  the authors' code does (its guarantee does not carry over; see the docstring).
* :func:`objective_perturbation_ball`: an honest (worst-case epsilon-DP) variant, objective
  perturbation of ridge regression over the public ball ||theta|| <= R, solved exactly as a
  trust-region subproblem (:func:`ridge_ball_solve`).
* :func:`dp_sgd`: DP-SGD on random features (Wang & Guo 2024) with the noise formula of
  the authors' code (sensitivity not verified).
* :func:`private_ridge`: Gaussian output perturbation of ridge regression with a
  worst-case replace-one sensitivity derived from strong convexity (and the paper's
  2/(m lambda) as ``calibration='paper'``).

Noise is drawn only by :mod:`pysketch.privacy.mechanisms` (OS entropy unless
``insecure_seed``).
"""

import math
import warnings

import numpy as np

from .._checks import check_int, check_positive
from ..privacy import PrivacyLeakWarning
from ..privacy.budget import Budget
from ..privacy.mechanisms import Gaussian, L2Laplace, check_delta, check_epsilon, gaussian_noise
from .published import (LowRankCovariance, check_eta, check_label_norm, check_layout, expected_test_mse,
                        minnorm_sensitivity, paper_sensitivity)

__all__ = [
    "gamma_output_perturbation",
    "objective_perturbation",
    "objective_perturbation_ball",
    "ridge_ball_solve",
    "dp_sgd",
    "dp_sgd_sigma",
    "expected_test_mse_dp_sgd",
    "private_ridge",
    "ridge_fit",
    "ridge_sensitivity",
]


def _coef(coef):
    coef = np.asarray(coef, dtype=np.float64)
    if coef.ndim != 1 or coef.size == 0:
        raise ValueError(f"coef must be a non-empty 1-D array, got shape {coef.shape}")
    if not np.isfinite(coef).all():
        raise ValueError("coef must be finite")
    return coef


def _design(F, y):
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2 or F.shape[0] < 1 or F.shape[1] < 1:
        raise ValueError(f"F must be a 2-D (m, p) feature matrix, got shape {F.shape}")
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1 or y.shape[0] != F.shape[0]:
        raise ValueError(f"y must be a 1-D array of m = {F.shape[0]} labels, got shape {y.shape}")
    if not (np.isfinite(F).all() and np.isfinite(y).all()):
        raise ValueError("F and y must be finite")
    return F, y


# ------------------------------------------------------------------ Gamma (l2-Laplace)


def gamma_output_perturbation(coef, epsilon, *, n_frequencies, eta=3 / 8, calibration="lemma6", layout="cos",
                              label_norm=1.0, accountant=None, insecure_seed=None):
    """The "Gamma" baseline: ``coef + z`` with z of density proportional to
    ``exp(-epsilon ||z|| / Delta)`` (:class:`~pysketch.privacy.mechanisms.L2Laplace`:
    ||z|| ~ Gamma(p, Delta/epsilon), uniform direction; CMS 2011 sec. 4).

    **Neighbouring**: replace or remove one record (as the paper). **Sensitivity**: the
    min-norm coefficients' Lemma 6 bound (:func:`~pysketch.rfm.published.minnorm_sensitivity`
    in the units of ``layout``). **Guarantee**: (epsilon, 0)-DP *conditional* on the
    eigenvalue condition of Lemma 6 (w.p. >= 1 - 3 delta' under Assumption 1, not worst
    case) and ||y|| <= label_norm, for a continuous mechanism (the sampler is floating
    point). ``calibration='paper'``: Delta = 2 / sqrt(N (1 - 2 eta)) on the features as
    given, as the authors' code: not DP (PrivacyLeakWarning).

    ``noise_covariance``: (p + 1)(Delta/epsilon)^2 (times I), since E z z^T = E[R^2]/p I.

    Parameters
    ----------
    coef : array_like of shape (p,)
        The min-norm coefficients (finite).
    epsilon : float > 0
    n_frequencies : int >= 1
        N.
    eta : float in (0, 1/2), default 3/8
    calibration : {'lemma6', 'paper'}, default 'lemma6'
    layout : one of SENSITIVITY_LAYOUTS, default 'cos'
    label_norm : float > 0, default 1.0
    accountant : BudgetAccountant, optional
        Charged (epsilon, 0) before the noise is drawn ('lemma6' only: 'paper' charges
        nothing).
    insecure_seed : None or int
        Reproducible, insecure noise (tests only).

    Returns
    -------
    noisy_coef : ndarray of shape (p,)
    record : dict
        epsilon, delta (0), neighbouring, sensitivity, mechanism, calibration, guarantee
        ('conditional' or 'none'), layout, radius_law, noise_covariance, second_moment,
        conditions, exact_noise, secure_noise.

    Raises
    ------
    ValueError
        For a `coef` that is not a non-empty finite 1-D array; an epsilon out of range; an
        `n_frequencies` below 1 (TypeError if not an int); an `eta`, `layout` or
        `label_norm` out of range; an unknown `calibration`; an accountant whose budget
        would be exceeded (pysketch.privacy.BudgetError).

    Warns
    -----
    pysketch.privacy.PrivacyLeakWarning
        With ``calibration='paper'``.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.baselines import gamma_output_perturbation
    >>> noisy, record = gamma_output_perturbation(np.zeros(20), 1.0, n_frequencies=20)
    >>> noisy.shape, record["guarantee"], record["noise_covariance"]  # 21 (4 / 1)^2
    ((20,), 'conditional', 336.0)
    """
    coef = _coef(coef)
    eps = check_epsilon(epsilon)
    N = check_int(n_frequencies, "n_frequencies")
    eta = check_eta(eta)
    layout = check_layout(layout)
    yn = check_label_norm(label_norm)
    if calibration == "lemma6":
        sens, guarantee = minnorm_sensitivity(N, eta, layout=layout, label_norm=yn), "conditional"
    elif calibration == "paper":
        sens, guarantee = yn * paper_sensitivity(N, eta), "none"
        warnings.warn("gamma_output_perturbation(calibration='paper') is NOT differentially private: Delta = "
                      f"2/sqrt(N(1-2 eta)) = {sens:.4g} on normalised features is sqrt(N) times too small",
                      PrivacyLeakWarning, stacklevel=2)
    else:
        raise ValueError(f"calibration must be 'lemma6' or 'paper', got {calibration!r}")
    budget = Budget(eps, neighbouring="replace", what="rfm.gamma_output_perturbation", pure=True,
                    insecure_seed=insecure_seed)
    budget.charge(accountant if guarantee != "none" else None)  # no guarantee: nothing is spent
    mech = L2Laplace(eps, sens, insecure_seed=budget.source)
    noisy = mech.randomise(coef)
    p = coef.size
    record = {
        "epsilon": eps, "delta": 0.0, "neighbouring": "replace or remove", "sensitivity": sens,
        "mechanism": "l2-laplace", "calibration": calibration, "guarantee": guarantee, "layout": layout,
        "radius_law": f"Gamma(shape {p}, scale {sens / eps:.6g})",
        "noise_covariance": mech.variance(p), "second_moment": mech.second_moment(p),
        "conditions": "Lemma 6 eigenvalue condition for the data and every neighbour; ||y||_2 <= label_norm",
        "exact_noise": False, "secure_noise": bool(mech.secure_noise),
    }
    return noisy, record


# ------------------------------------------------------------------ objective perturbation


def _spectral(F):
    """(V, s2): F^T F = V diag(s2) V^T with V (p, r) orthonormal, from the smaller Gram."""
    m, p = F.shape
    if m < p:
        s2, U = np.linalg.eigh(F @ F.T)
        keep = s2 > s2.max() * 1e-13 * m if s2.max() > 0 else np.zeros_like(s2, dtype=bool)
        s2, U = s2[keep], U[:, keep]
        V = (F.T @ U) / np.sqrt(s2)
        return V, s2
    s2, V = np.linalg.eigh(F.T @ F)
    return V, np.maximum(s2, 0.0)


def objective_perturbation(F, y, epsilon, *, lam=1e-5, c=2.0, insecure_seed=None):
    r"""CMS 2011 Algorithm 2 (objective perturbation) applied to the squared loss, as the
    authors' public code (github.com/liaochunyang/DPRFM) ``objective_perturb`` does (not
    reported in the paper):

        theta = argmin (1/m) ||F theta - y||^2 + lam ||theta||^2 + b^T theta / m + (Delta/2) ||theta||^2,

    i.e. ``(2 F^T F / m + (2 lam + Delta) I) theta = 2 F^T y / m - b / m``, with
    ``epsilon' = epsilon - log(1 + 2c/(m lam) + c^2/(m lam)^2)``; if that is <= 0,
    ``Delta = c / (m (e^(epsilon/4) - 1)) - lam`` and ``epsilon' = epsilon / 2``; b of
    density proportional to exp(-epsilon' ||b|| / 2) (:class:`L2Laplace` with sensitivity
    2). (The code writes lam where CMS's regulariser (Lambda/2)||theta||^2 has Lambda =
    2 lam: conservative in both branches.) Solved through the eigen-decomposition of the
    smaller Gram, not a (p, p) system.

    **Neighbouring**: replace one record (m public). **Guarantee: none in general.** CMS
    Theorem 9 needs every record to have ||x|| <= 1 and a loss with abs(l') <= 1, abs(l'') <= c.
    The squared loss l(t) = (t - y)^2 has l'' = 2 = c, but abs(l') = 2 abs(theta^T phi(x) - y)
    is unbounded over unconstrained theta, and 'cos' features have ||phi||^2 up to 2. The
    epsilon-DP claim holds only if, for every possible record and the released theta,
    ||phi(x)|| <= 1 and 2 abs(theta^T phi(x) - y) <= 1, which nothing here enforces.

    ``noise_covariance``: theta = theta_reg - M^-1 b / m with M = 2 F^T F / m + (2 lam +
    Delta) I and E b b^T = (p + 1)(2/epsilon')^2 I, so Cov = (p + 1)(2/epsilon')^2 M^-2 / m^2
    (a LowRankCovariance: scalar on the complement of F's row space). The mean is the
    regularised solution theta_reg, not the min-norm one.

    Parameters
    ----------
    F : array_like of shape (m, p)
        The feature matrix (finite).
    y : array_like of shape (m,)
        The labels (finite).
    epsilon : float > 0
    lam : float > 0, default 1e-5
        The code's ridge lam.
    c : float > 0, default 2.0
        The bound on the loss's second derivative (2 for the squared loss).
    insecure_seed : None or int
        Reproducible, insecure noise (tests only).

    Returns
    -------
    theta : ndarray of shape (p,)
    record : dict
        epsilon, delta (0), neighbouring, epsilon_prime, extra_regularisation, lam, c,
        mechanism, sensitivity, guarantee ('none'), conditions, noise_covariance (a
        LowRankCovariance), exact_noise, secure_noise.

    Raises
    ------
    ValueError
        For an F that is not a finite 2-D array with a row and a column, a y that is not a
        finite 1-D array of m labels, an epsilon out of range, or a `lam` or `c` that is
        not a positive finite number.

    Warns
    -----
    pysketch.privacy.PrivacyLeakWarning
        Always: the release is not differentially private in general.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from pysketch.rfm.baselines import objective_perturbation
    >>> rng = np.random.default_rng(0)
    >>> F = rng.standard_normal((100, 20))
    >>> F /= 2 * np.linalg.norm(F, axis=1, keepdims=True)  # feature rows of norm 1/2
    >>> y = np.clip(F @ rng.standard_normal(20), -1, 1)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     theta, record = objective_perturbation(F, y, 1.0)
    >>> theta.shape, record["guarantee"], caught[0].category.__name__
    ((20,), 'none', 'PrivacyLeakWarning')
    """
    F, y = _design(F, y)
    eps = check_epsilon(epsilon)
    lam = check_positive(lam, "lam")
    c = check_positive(c, "c")
    warnings.warn("objective_perturbation (CMS 2011 Algorithm 2 on the squared loss, as the authors' code) is "
                  "NOT differentially private in general: the squared loss is not Lipschitz over unconstrained "
                  "theta (audited to exceed epsilon); objective_perturbation_ball has a worst-case guarantee",
                  PrivacyLeakWarning, stacklevel=2)
    m, p = F.shape
    ml = m * lam
    eps_prime = eps - math.log1p(2.0 * c / ml + (c / ml) ** 2)
    extra = 0.0
    if eps_prime <= 0.0:
        extra = c / (m * math.expm1(eps / 4.0)) - lam
        eps_prime = eps / 2.0
    kappa = 2.0 * lam + extra
    V, s2 = _spectral(F)
    mech = L2Laplace(eps_prime, 2.0, insecure_seed=insecure_seed)
    b = mech.randomise(np.zeros(p))
    r = 2.0 * (F.T @ y) / m - b / m
    del b
    proj = V.T @ r
    d = kappa + 2.0 * s2 / m
    theta = (r - V @ proj) / kappa + V @ (proj / d)
    c0 = (p + 1) * (2.0 / eps_prime) ** 2 / m ** 2
    cov = LowRankCovariance(c0 / kappa ** 2, V, c0 / d ** 2 - c0 / kappa ** 2)
    record = {
        "epsilon": eps, "delta": 0.0, "neighbouring": "replace", "epsilon_prime": eps_prime,
        "extra_regularisation": extra, "lam": lam, "c": c, "mechanism": "objective perturbation (l2-laplace b)",
        "sensitivity": 2.0, "guarantee": "none",
        "conditions": ("CMS 2011 Thm 9 needs ||phi(x)|| <= 1 and |l'| = 2|theta^T phi(x) - y| <= 1 for every "
                       "record at the output; the squared loss is not Lipschitz on R^p, so this does not hold"),
        "noise_covariance": cov, "exact_noise": False, "secure_noise": bool(mech.secure_noise),
    }
    return theta, record


def _ball_solve_spectral(V, s2, m, kappa, r, radius, tol=1e-13, max_iter=200):
    """argmin over ||theta|| <= radius of (1/2) theta^T A theta - r^T theta with
    A = 2 F^T F / m + kappa I = V diag(2 s2 / m + kappa) V^T + kappa (I - V V^T).
    Returns (theta, mu): (A + mu I) theta = r, mu >= 0, mu (||theta|| - radius) = 0."""
    proj = V.T @ r
    perp = r - V @ proj
    perp2 = float(perp @ perp)
    d = kappa + 2.0 * s2 / m

    def sq_norm(mu):
        return float(np.sum((proj / (d + mu)) ** 2)) + perp2 / (kappa + mu) ** 2

    mu = 0.0
    if sq_norm(0.0) > radius * radius:
        # secular equation psi(mu) = 1/||theta(mu)|| - 1/R = 0: psi is increasing and concave on
        # mu >= 0 (More & Sorensen 1983), so Newton from mu = 0 (psi < 0) increases monotonically to
        # the root. Safeguard: the bracket [lo, hi] with hi = ||r|| / R (there ||theta|| <= R).
        lo, hi = 0.0, float(np.linalg.norm(r)) / radius
        for _ in range(max_iter):
            n2 = sq_norm(mu)
            nrm = math.sqrt(n2)
            if nrm > radius:
                lo = mu
            else:
                hi = mu
            psi = 1.0 / nrm - 1.0 / radius
            dn2 = float(np.sum(proj ** 2 / (d + mu) ** 3)) + perp2 / (kappa + mu) ** 3  # -(1/2) d||theta||^2/dmu
            step = psi * nrm ** 3 / dn2
            new = mu - step
            if not lo <= new <= hi:
                new = 0.5 * (lo + hi)
            if abs(new - mu) <= tol * max(mu, kappa):
                mu = new
                break
            mu = new
    theta = V @ (proj / (d + mu)) + perp / (kappa + mu)
    nrm = float(np.linalg.norm(theta))
    if nrm > radius:  # rounding only (relative 1e-13): keep the output in the domain
        theta *= radius / nrm
    return theta, mu


def ridge_ball_solve(F, y, *, kappa, radius, linear=None):
    r"""The exact minimiser over the ball ||theta|| <= radius of the strongly convex quadratic

        (1/m) ||F theta - y||^2 + (kappa/2) ||theta||^2 + linear^T theta / m      (kappa > 0),

    i.e. the trust-region subproblem min (1/2) theta^T A theta - g^T theta with A = 2 F^T F / m +
    kappa I (positive definite) and g = 2 F^T y / m - linear / m. From the eigen-decomposition of
    the smaller Gram: theta(mu) = (A + mu I)^-1 g; mu = 0 if ||theta(0)|| <= radius, otherwise the
    unique mu > 0 with ||theta(mu)|| = radius (secular equation, Newton on 1/||theta(mu)||,
    safeguarded by bisection).

    Parameters
    ----------
    F : array_like of shape (m, p)
        The feature matrix (finite).
    y : array_like of shape (m,)
        The labels (finite).
    kappa : float > 0
        The ridge (kappa/2) ||theta||^2.
    radius : float > 0
        The ball's radius.
    linear : array_like of shape (p,), optional
        The linear term (objective perturbation's noise b); default none.

    Returns
    -------
    theta : ndarray of shape (p,)
        The minimiser, ||theta|| <= radius.
    mu : float
        The multiplier: 0 inside the ball, > 0 on its boundary.

    Raises
    ------
    ValueError
        For an F or y that is not finite of the right shape, a `kappa` or `radius` that is
        not a positive finite number, or a `linear` that is not a finite vector of length
        p.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.baselines import ridge_ball_solve
    >>> rng = np.random.default_rng(0)
    >>> F = rng.standard_normal((100, 20))
    >>> F /= 2 * np.linalg.norm(F, axis=1, keepdims=True)  # feature rows of norm 1/2
    >>> y = np.clip(F @ rng.standard_normal(20), -1, 1)
    >>> theta, mu = ridge_ball_solve(F, y, kappa=0.1, radius=0.5)
    >>> round(float(np.linalg.norm(theta)), 6), bool(mu > 0)  # on the boundary
    (0.5, True)
    """
    F, y = _design(F, y)
    kappa = check_positive(kappa, "kappa")
    radius = check_positive(radius, "radius")
    m, p = F.shape
    r = 2.0 * (F.T @ y) / m
    if linear is not None:
        linear = np.asarray(linear, dtype=np.float64)
        if linear.shape != (p,) or not np.isfinite(linear).all():
            raise ValueError(f"linear must be a finite vector of length p = {p}, got shape {linear.shape}")
        r = r - linear / m
    V, s2 = _spectral(F)
    return _ball_solve_spectral(V, s2, m, kappa, r, radius)


def objective_perturbation_ball(F, y, epsilon, *, lam, radius=None, feature_bound=1.0, label_bound=1.0,
                                accountant=None, insecure_seed=None):
    r"""Objective perturbation of ridge regression over the public ball ||theta|| <= R:
    worst-case epsilon-DP (replace one record, m public).

    Records are first brought into the public bounds: a feature row with ||phi|| > B_phi =
    ``feature_bound`` is rescaled onto that ball, a label with abs(y) > B_y = ``label_bound``
    clipped (each warns with the count, RuntimeWarning). R = ``radius`` must be public; the
    default B_y / sqrt(lam) is the ball in which the unperturbed ridge minimiser of
    (1/m)||F theta - y||^2 + lam ||theta||^2 lies (its value at 0 is ||y||^2/m <= B_y^2).
    Released:

        theta = argmin_{||theta|| <= R} (1/m) ||F theta - y||^2 + (lam + Delta/2) ||theta||^2 + b^T theta / m,

    solved exactly (:func:`ridge_ball_solve`; the minimiser of a strongly convex function over
    a convex set is unique).

    **Constants on the domain.** The per-record loss l(theta; phi, y) = (theta^T phi - y)^2 has
    gradient 2 (theta^T phi - y) phi of norm <= L = 2 B_phi (B_phi R + B_y) for ||theta|| <= R
    (attained at theta = -R phi/||phi||, ||phi|| = B_phi, y = B_y), and Hessian 2 phi phi^T, of
    rank one with eigenvalue 2 ||phi||^2 <= c = 2 B_phi^2.

    **Theorem used** (Chaudhuri, Monteleoni & Sarwate 2011, Theorem 9 / Algorithm 2, with
    ||x|| <= 1, abs(l') <= 1 replaced by the gradient bound L and l'' <= c by the rank-one Hessian
    bound c, and extended to a closed convex domain C as in Kifer, Smith & Thakurta 2012,
    Theorem 1 / Algorithm 1). Let C be closed and convex, every per-record loss convex, twice
    continuously differentiable, with ||grad l|| <= L on C and Hessian of rank <= 1 and
    eigenvalue <= c; Lambda = 2 lam (regulariser (Lambda/2)||theta||^2 = lam ||theta||^2). Set
    epsilon' = epsilon - log(1 + 2c/(m Lambda) + c^2/(m Lambda)^2) and Delta = 0 if epsilon' > 0;
    otherwise Delta = c / (m (e^(epsilon/4) - 1)) - Lambda and epsilon' = epsilon/2. Draw b with
    density proportional to exp(-epsilon' ||b|| / (2 L)) (:class:`L2Laplace` with sensitivity
    2 L: replacing one record changes grad l at any theta by at most 2 L). Then the argmin above
    over C is epsilon-DP for data sets of m records differing in one record (replace one).
    Proof outline: in the interior, theta determines b = -m grad(objective without b)(theta)
    bijectively; the density ratio of theta under neighbours is the ratio of the densities of b
    (<= e^(epsilon'), since the two b differ by the change of one gradient, norm <= 2 L) times
    the ratio of the Jacobian determinants (<= (1 + c/(m kappa))^2 with kappa = Lambda + Delta,
    CMS Lemma 10, using only rank-one per-record Hessians <= c and the regulariser's curvature
    m kappa); with either branch the total is <= epsilon. The constraint is handled by KST's
    argument (adding a smooth convex penalty only increases the Hessian, so the same bound holds
    for each penalised problem, and DP passes to the limit of the constrained minimiser). The
    gradient bound L is only needed on C, which is why the ball makes the squared loss
    admissible. The bound is not tight (the largest change of the gradient at one theta is
    below 2 L for this loss). Pure DP only: KST's Gaussian variant for (epsilon, delta) is not
    implemented. Guarantee for the idealised continuous mechanism (L2Laplace is a
    floating-point sampler) and the exact minimiser (here exact up to rounding).

    ``noise_covariance``: None. On the boundary the solution is not linear in b (the
    multiplier mu depends on b), so there is no closed form; inside the ball it would be the
    unconstrained one of :func:`objective_perturbation`.

    Parameters
    ----------
    F : array_like of shape (m, p)
        The feature matrix (finite).
    y : array_like of shape (m,)
        The labels (finite).
    epsilon : float > 0
    lam : float > 0
        The ridge lam ||theta||^2.
    radius : float > 0, optional
        R, public; default label_bound / sqrt(lam).
    feature_bound : float > 0, default 1.0
        B_phi: feature rows of larger norm are rescaled onto that sphere.
    label_bound : float > 0, default 1.0
        B_y: labels of larger modulus are clipped.
    accountant : BudgetAccountant, optional
        Charged (epsilon, 0) before the noise is drawn.
    insecure_seed : None or int
        Reproducible, insecure noise (tests only).

    Returns
    -------
    theta : ndarray of shape (p,)
        ||theta|| <= R.
    record : dict
        epsilon, delta (0), neighbouring, epsilon_prime, extra_regularisation, lam, c,
        lipschitz, sensitivity, radius, feature_bound, label_bound, on_boundary,
        mechanism, guarantee ('worst-case'), conditions, noise_covariance (None),
        noise_covariance_note, n_rescaled, n_clipped, exact_noise, secure_noise.

    Raises
    ------
    ValueError
        For an F or y that is not finite of the right shape, an epsilon out of range, a
        `lam`, `radius`, `feature_bound` or `label_bound` that is not a positive finite
        number, or an accountant whose budget would be exceeded
        (pysketch.privacy.BudgetError).

    Warns
    -----
    RuntimeWarning
        When feature rows are rescaled or labels clipped (with their counts).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.baselines import objective_perturbation_ball
    >>> rng = np.random.default_rng(0)
    >>> F = rng.standard_normal((100, 20))
    >>> F /= 2 * np.linalg.norm(F, axis=1, keepdims=True)  # feature rows of norm 1/2
    >>> y = np.clip(F @ rng.standard_normal(20), -1, 1)
    >>> theta, record = objective_perturbation_ball(F, y, 1.0, lam=0.1)
    >>> record["guarantee"], bool(np.linalg.norm(theta) <= record["radius"])  # (the noise is not seeded)
    ('worst-case', True)
    """
    F, y = _design(F, y)
    eps = check_epsilon(epsilon)
    lam = check_positive(lam, "lam")
    bp = check_positive(feature_bound, "feature_bound")
    by = check_positive(label_bound, "label_bound")
    R = by / math.sqrt(lam) if radius is None else check_positive(radius, "radius")
    m, p = F.shape
    norms = np.linalg.norm(F, axis=1)
    over = norms > bp
    if over.any():
        warnings.warn(f"objective_perturbation_ball: {int(over.sum())} of {m} feature rows had norm > "
                      f"feature_bound = {bp:g} and were rescaled onto the ball", RuntimeWarning, stacklevel=2)
        F = F.copy()
        F[over] *= (bp / norms[over])[:, None]
    n_clip = int(np.count_nonzero(np.abs(y) > by))
    if n_clip:
        warnings.warn(f"objective_perturbation_ball: {n_clip} of {m} labels exceeded label_bound = {by:g} and "
                      "were clipped", RuntimeWarning, stacklevel=2)
        y = np.clip(y, -by, by)
    L = 2.0 * bp * (bp * R + by)
    c = 2.0 * bp * bp
    Lam = 2.0 * lam
    q = c / (m * Lam)
    eps_prime = eps - math.log1p(2.0 * q + q * q)
    extra = 0.0
    if eps_prime <= 0.0:
        extra = c / (m * math.expm1(eps / 4.0)) - Lam
        eps_prime = eps / 2.0
    kappa = Lam + extra
    budget = Budget(eps, neighbouring="replace", what="rfm.objective_perturbation_ball", pure=True,
                    insecure_seed=insecure_seed).charge(accountant)
    mech = L2Laplace(eps_prime, 2.0 * L, insecure_seed=budget.source)
    V, s2 = _spectral(F)
    b = mech.randomise(np.zeros(p))
    r = 2.0 * (F.T @ y) / m - b / m
    del b
    theta, mu = _ball_solve_spectral(V, s2, m, kappa, r, R)
    record = {
        "epsilon": eps, "delta": 0.0, "neighbouring": "replace", "epsilon_prime": eps_prime,
        "extra_regularisation": extra, "lam": lam, "c": c, "lipschitz": L, "sensitivity": 2.0 * L,
        "radius": R, "feature_bound": bp, "label_bound": by, "on_boundary": bool(mu > 0.0),
        "mechanism": "objective perturbation over a ball (l2-laplace b)", "guarantee": "worst-case",
        "conditions": ("replace one record, m public; ||phi|| <= feature_bound and |y| <= label_bound enforced; "
                       "CMS 2011 Thm 9 constants with L, c on the ball; convex domain per KST 2012 Thm 1"),
        "noise_covariance": None, "noise_covariance_note": "not linear in b on the boundary: no closed form",
        "n_rescaled": int(over.sum()), "n_clipped": n_clip,
        "exact_noise": False, "secure_noise": bool(mech.secure_noise),
    }
    return theta, record


# ------------------------------------------------------------------ DP-SGD


def dp_sgd_sigma(m, epsilon, delta, *, n_iter=None, step=None):
    """(sigma, Delta): the noise std and sensitivity of the authors' ``DPRF_SGD`` (their
    public code), for T = n_iter (default m) steps of size eta = step (default 1/m):
    C_T = max(sqrt(3 m log(2m/delta) / T), 3 m log(2m/delta) / T),
    Delta = 4 e eta^2 (1 + sqrt(eta T))^2 T (1 + C_T) (1 + T (1 + C_T) / m) / m,
    sigma = sqrt(2 log(2.5/delta)) Delta / epsilon (0.751 at m = T = 1000, eps = 1,
    delta = 1e-5). The sensitivity is the code's and has not been checked against Wang &
    Guo 2024.

    Parameters
    ----------
    m : int >= 1
        The number of records.
    epsilon : float > 0
    delta : float in (0, 1)
    n_iter : int >= 1, optional
        T; default m.
    step : float > 0, optional
        eta; default 1/m.

    Returns
    -------
    sigma : float
    sensitivity : float
        Delta.

    Raises
    ------
    TypeError, ValueError
        For an argument out of its range (TypeError for a non-integer `m` or `n_iter`).

    Examples
    --------
    >>> from pysketch.rfm.baselines import dp_sgd_sigma
    >>> sigma, sensitivity = dp_sgd_sigma(1000, 1.0, 1e-5)
    >>> round(sigma, 3)
    0.751
    """
    m = check_int(m, "m")
    eps = check_epsilon(epsilon)
    delta = check_delta(delta, positive=True)
    T = m if n_iter is None else check_int(n_iter, "n_iter")
    eta = 1.0 / m if step is None else check_positive(step, "step")
    a = 3.0 * m * math.log(2.0 * m / delta) / T
    ct = max(math.sqrt(a), a)
    sens = 4.0 * math.e * eta ** 2 * (1.0 + math.sqrt(eta * T)) ** 2 * T * (1.0 + ct) * (1.0 + T * (1.0 + ct) / m) / m
    return math.sqrt(2.0 * (math.log(2.5) - math.log(delta))) * sens / eps, sens


def expected_test_mse_dp_sgd(mse_nonprivate, mean_sq_feature_norm, m, epsilon, delta, *, n_iter=None, step=None):
    """E[test MSE] of the DP-SGD baseline (:func:`dp_sgd`) around its
    own non-private SGD iterate: isotropic noise of the code's sigma (about
    0.564/eps^2 at m = T = 1000, step 1/m, delta = 1e-5).

    Parameters
    ----------
    mse_nonprivate : float
        The test MSE of the non-private SGD iterate.
    mean_sq_feature_norm : float
        mean_x ||phi(x)||^2 over the test records.
    m, epsilon, delta, n_iter, step
        As in :func:`dp_sgd_sigma`.

    Returns
    -------
    float
        mse_nonprivate + sigma^2 mean_sq_feature_norm.

    Raises
    ------
    TypeError, ValueError
        As :func:`dp_sgd_sigma`.

    Examples
    --------
    >>> from pysketch.rfm.baselines import expected_test_mse_dp_sgd
    >>> round(expected_test_mse_dp_sgd(0.0, 1.0, 1000, 1.0, 1e-5), 3)
    0.564
    """
    sigma, _ = dp_sgd_sigma(m, epsilon, delta, n_iter=n_iter, step=step)
    return expected_test_mse(mse_nonprivate, mean_sq_feature_norm, sigma)



def dp_sgd(F, y, epsilon, delta, *, n_iter=None, step=None, random_state=None, insecure_seed=None):
    """DP-SGD with random features (Wang & Guo 2024) as the authors' code runs it: T =
    n_iter (default m) single-record SGD steps of size ``step`` (default 1/m) on
    (1/2)(theta^T phi - y)^2 from theta = 0, records drawn uniformly with replacement
    (:func:`pysketch.rfm.solvers.sgd`; ``random_state`` drives that sampling, which is part
    of the mechanism's randomness and should not be a published seed), then Gaussian
    noise of std :func:`dp_sgd_sigma` on every coefficient.

    **Neighbouring**: replace one record (m public), presumably, as in [25].
    **Sensitivity**: the code's formula, **unverified** against the paper it cites (it
    depends on a bound on how often the differing record is sampled, which holds with
    probability 1 - delta/2, hence 2.5/delta). **Guarantee**: 'unverified': no DP claim
    is made here; the classical formula is used at any epsilon.

    ``noise_covariance``: sigma^2 (times I).

    Parameters
    ----------
    F : array_like of shape (m, p)
        The feature matrix (finite).
    y : array_like of shape (m,)
        The labels (finite).
    epsilon : float > 0
    delta : float in (0, 1)
    n_iter : int >= 1, optional
        T; default m.
    step : float > 0, optional
        Default 1/m.
    random_state : None, int or numpy.random.Generator
        The record sampling of the SGD.
    insecure_seed : None or int
        Reproducible, insecure noise (tests only).

    Returns
    -------
    noisy_coef : ndarray of shape (p,)
    record : dict
        epsilon, delta, neighbouring, sensitivity, sigma, noise_covariance, n_iter, step,
        mechanism, guarantee ('unverified'), secure_noise.

    Raises
    ------
    ValueError
        For an F or y that is not finite of the right shape, or an argument out of its
        range (TypeError for a non-integer `n_iter`).
    FloatingPointError
        If the SGD iterates overflow (a step too large).

    Warns
    -----
    pysketch.privacy.PrivacyLeakWarning
        Always: no verified DP claim is made.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from pysketch.rfm.baselines import dp_sgd
    >>> rng = np.random.default_rng(0)
    >>> F = rng.standard_normal((100, 20))
    >>> F /= 2 * np.linalg.norm(F, axis=1, keepdims=True)  # feature rows of norm 1/2
    >>> y = np.clip(F @ rng.standard_normal(20), -1, 1)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     noisy, record = dp_sgd(F, y, 1.0, 1e-5, random_state=0)
    >>> noisy.shape, record["guarantee"], caught[0].category.__name__
    ((20,), 'unverified', 'PrivacyLeakWarning')
    """
    from .solvers import sgd
    F, y = _design(F, y)
    m = F.shape[0]
    T = m if n_iter is None else check_int(n_iter, "n_iter")
    eta = 1.0 / m if step is None else check_positive(step, "step")
    sigma, sens = dp_sgd_sigma(m, epsilon, delta, n_iter=T, step=eta)
    warnings.warn("dp_sgd (the authors' code's noise formula) makes no verified DP claim: its sensitivity "
                  "formula is unverified against the paper it cites and nothing bounds the labels (audited to "
                  "exceed epsilon with |y| = 1e7); private_ridge has a worst-case guarantee",
                  PrivacyLeakWarning, stacklevel=2)
    out = sgd(F, y, T, eta, random_state=random_state)
    coef = np.asarray(out[0] if isinstance(out, tuple) else out, dtype=np.float64)
    noisy = gaussian_noise(coef, sigma, insecure_seed=insecure_seed)
    record = {
        "epsilon": float(epsilon), "delta": float(delta), "neighbouring": "replace", "sensitivity": sens,
        "sigma": sigma, "noise_covariance": sigma ** 2, "n_iter": T, "step": eta,
        "mechanism": "gaussian (classical formula with 2.5/delta, any epsilon)", "guarantee": "unverified",
        "secure_noise": insecure_seed is None,
    }
    return noisy, record


# ------------------------------------------------------------------ private ridge


def ridge_fit(F, y, lam):
    """argmin (1/m) ||F theta - y||^2 + lam ||theta||^2 = (F^T F + m lam I)^-1 F^T y, solved in
    the smaller of the (m, m) and (p, p) systems.

    Parameters
    ----------
    F : array_like of shape (m, p)
        The feature matrix (finite).
    y : array_like of shape (m,)
        The labels (finite).
    lam : float > 0
        The ridge.

    Returns
    -------
    numpy.ndarray of shape (p,)
        theta.

    Raises
    ------
    ValueError
        For an F or y that is not finite of the right shape, or a `lam` that is not a
        positive finite number.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.baselines import ridge_fit
    >>> rng = np.random.default_rng(0)
    >>> F = rng.standard_normal((100, 20))
    >>> F /= 2 * np.linalg.norm(F, axis=1, keepdims=True)  # feature rows of norm 1/2
    >>> y = np.clip(F @ rng.standard_normal(20), -1, 1)
    >>> theta = ridge_fit(F, y, 0.1)
    >>> bool(np.allclose(theta, np.linalg.solve(F.T @ F + 100 * 0.1 * np.eye(20), F.T @ y)))
    True
    """
    F, y = _design(F, y)
    lam = check_positive(lam, "lam")
    m, p = F.shape
    if m <= p:
        return F.T @ np.linalg.solve(F @ F.T + m * lam * np.eye(m), y)
    return np.linalg.solve(F.T @ F + m * lam * np.eye(p), F.T @ y)


def ridge_sensitivity(m, lam, feature_bound, label_bound):
    r"""Worst-case replace-one L2 sensitivity of the ridge minimiser
    ``theta* = argmin J(theta) = (1/m) ||F theta - y||^2 + lam ||theta||^2`` over records with
    ``||phi|| <= B_phi`` and ``|y| <= B_y``:

        Delta = 2 L / (m * 2 lam),   L = 2 B_phi (B_phi B_y / sqrt(lam) + B_y).

    Derivation (after Chaudhuri, Monteleoni & Sarwate 2011, Lemma 7 / Corollary 8, whose
    regulariser (Lambda/2)||f||^2 is lam ||theta||^2 here, Lambda = 2 lam):

    1. J(theta*) <= J(0) = ||y||^2 / m <= B_y^2, so lam ||theta*||^2 <= B_y^2: every
       minimiser lies in the ball ||theta|| <= B_y / sqrt(lam), for D and for D'.
    2. On that ball the per-record loss l(theta) = (theta^T phi - y)^2 has gradient
       2 (theta^T phi - y) phi of norm <= L.
    3. J' = J + g with g = (l'_m - l_m) / m; J is 2 lam-strongly convex, grad J(theta*) = 0
       and grad J(theta'*) = -grad g(theta'*), so 2 lam ||theta* - theta'*||^2 <=
       (grad J(theta*) - grad J(theta'*))^T (theta* - theta'*) = grad g(theta'*)^T (theta* -
       theta'*), hence ||theta* - theta'*|| <= ||grad g(theta'*)|| / (2 lam) <= 2 L / (m 2 lam).

    Parameters
    ----------
    m : int >= 1
        The number of records (public).
    lam : float > 0
        The ridge.
    feature_bound : float > 0
        B_phi.
    label_bound : float > 0
        B_y.

    Returns
    -------
    float
        Delta.

    Raises
    ------
    TypeError, ValueError
        For an argument out of its range (TypeError for a non-integer `m`).

    Examples
    --------
    >>> from pysketch.rfm.baselines import ridge_sensitivity
    >>> round(ridge_sensitivity(100, 0.1, 1.0, 1.0), 3)  # 2 (1 / sqrt(0.1) + 1) / 10
    0.832
    """
    m = check_int(m, "m")
    lam = check_positive(lam, "lam")
    bp = check_positive(feature_bound, "feature_bound")
    by = check_positive(label_bound, "label_bound")
    L = 2.0 * bp * (bp * by / math.sqrt(lam) + by)
    return 2.0 * L / (m * 2.0 * lam)


def private_ridge(F, y, epsilon, delta, *, lam, feature_bound, label_bound, calibration="strong_convexity",
                  mechanism="analytic", accountant=None, insecure_seed=None):
    """Gaussian output perturbation of ridge regression (the fairness baseline of
    Liao, Needell & Xue 2024, Sec. 4.2, with an honest sensitivity).

    Records are first brought into the public bounds: a feature row with ||phi|| >
    feature_bound is rescaled onto the ball, a label with abs(y) > label_bound clipped (each
    warns with the count). Then theta* = :func:`ridge_fit` and theta* + N(0, sigma^2 I).

    **Neighbouring**: replace one record (m public). **Sensitivity**
    (``calibration='strong_convexity'``, default): :func:`ridge_sensitivity`, worst case.
    **Guarantee**: (epsilon, delta)-DP ('worst-case') for the exact minimiser (here a
    direct solve, exact up to rounding), Gaussian mechanism with the ``mechanism``
    calibration ('analytic' default, 'classical' for epsilon < 1 only).
    ``calibration='paper'``: Delta = 2 / (m lam) (the paper's value, which assumes a
    1-Lipschitz loss the squared loss is not) with the classical formula at any epsilon:
    not DP (PrivacyLeakWarning).

    ``noise_covariance``: sigma^2 (times I).

    Parameters
    ----------
    F : array_like of shape (m, p)
        The feature matrix (finite).
    y : array_like of shape (m,)
        The labels (finite).
    epsilon : float > 0
    delta : float in (0, 1)
    lam : float > 0
        The ridge lam ||theta||^2.
    feature_bound : float > 0
        B_phi: feature rows of larger norm are rescaled onto that sphere.
    label_bound : float > 0
        B_y: labels of larger modulus are clipped.
    calibration : {'strong_convexity', 'paper'}, default 'strong_convexity'
    mechanism : {'analytic', 'classical'}, default 'analytic'
        'strong_convexity' only.
    accountant : BudgetAccountant, optional
        Charged (epsilon, delta) before the noise is drawn ('strong_convexity' only).
    insecure_seed : None or int
        Reproducible, insecure noise (tests only).

    Returns
    -------
    noisy_coef : ndarray of shape (p,)
    record : dict
        epsilon, delta, neighbouring, sensitivity, sigma, noise_covariance, mechanism,
        calibration, guarantee ('worst-case' or 'none'), lam, feature_bound, label_bound,
        n_rescaled, n_clipped, secure_noise.

    Raises
    ------
    ValueError
        For an F or y that is not finite of the right shape; an epsilon out of range; a
        delta not in (0, 1); a `lam`, `feature_bound` or `label_bound` that is not a
        positive finite number; an unknown `calibration` or `mechanism`, or 'classical' at
        epsilon >= 1; an accountant whose budget would be exceeded
        (pysketch.privacy.BudgetError).

    Warns
    -----
    RuntimeWarning
        When feature rows are rescaled or labels clipped (with their counts).
    pysketch.privacy.PrivacyLeakWarning
        With ``calibration='paper'``.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.baselines import private_ridge
    >>> rng = np.random.default_rng(0)
    >>> F = rng.standard_normal((100, 20))
    >>> F /= 2 * np.linalg.norm(F, axis=1, keepdims=True)  # feature rows of norm 1/2
    >>> y = np.clip(F @ rng.standard_normal(20), -1, 1)
    >>> noisy, record = private_ridge(F, y, 1.0, 1e-5, lam=0.1, feature_bound=1.0, label_bound=1.0)
    >>> noisy.shape, record["guarantee"]  # (the noise is not seeded)
    ((20,), 'worst-case')
    """
    F, y = _design(F, y)
    eps = check_epsilon(epsilon)
    delta = check_delta(delta, positive=True)
    lam = check_positive(lam, "lam")
    bp = check_positive(feature_bound, "feature_bound")
    by = check_positive(label_bound, "label_bound")
    m = F.shape[0]
    norms = np.linalg.norm(F, axis=1)
    over = norms > bp
    if over.any():
        warnings.warn(f"private_ridge: {int(over.sum())} of {m} feature rows had norm > feature_bound = {bp:g} and "
                      "were rescaled onto the ball", RuntimeWarning, stacklevel=2)
        F = F.copy()
        F[over] *= (bp / norms[over])[:, None]
    n_clip = int(np.count_nonzero(np.abs(y) > by))
    if n_clip:
        warnings.warn(f"private_ridge: {n_clip} of {m} labels exceeded label_bound = {by:g} and were clipped",
                      RuntimeWarning, stacklevel=2)
        y = np.clip(y, -by, by)
    theta = ridge_fit(F, y, lam)
    if calibration == "strong_convexity":
        if mechanism not in ("analytic", "classical"):
            raise ValueError(f"mechanism must be 'analytic' or 'classical', got {mechanism!r}")
        sens = ridge_sensitivity(m, lam, bp, by)
        budget = Budget(eps, delta, neighbouring="replace", what="rfm.private_ridge", insecure_seed=insecure_seed)
        G = budget.part("coefficients").mechanism("gaussian", sens, calibration=mechanism)  # checked here
        budget.charge(accountant)
        noisy = G.randomise(theta)
        sigma, secure, guarantee, mech_name = G.effective_scale_, G.secure_noise, "worst-case", mechanism
    elif calibration == "paper":
        sens = 2.0 / (m * lam)
        sigma = math.sqrt(2.0 * (math.log(1.25) - math.log(delta))) * sens / eps
        warnings.warn(f"private_ridge(calibration='paper') is NOT differentially private: Delta = 2/(m lam) = "
                      f"{sens:.4g} assumes a 1-Lipschitz loss; the squared loss's worst case is "
                      f"{ridge_sensitivity(m, lam, bp, by):.4g}", PrivacyLeakWarning, stacklevel=2)
        noisy = gaussian_noise(theta, sigma, insecure_seed=insecure_seed)
        secure, guarantee, mech_name = insecure_seed is None, "none", "classical"
    else:
        raise ValueError(f"calibration must be 'strong_convexity' or 'paper', got {calibration!r}")
    record = {
        "epsilon": eps, "delta": delta, "neighbouring": "replace", "sensitivity": sens, "sigma": sigma,
        "noise_covariance": sigma ** 2, "mechanism": mech_name, "calibration": calibration,
        "guarantee": guarantee, "lam": lam, "feature_bound": bp, "label_bound": by,
        "n_rescaled": int(over.sum()), "n_clipped": n_clip, "secure_noise": bool(secure),
    }
    return noisy, record
