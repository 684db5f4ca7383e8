r"""The published differentially private random-feature model (Liao, Needell & Xue 2024,
Algorithm 1), done right (Sec. 3.1-3.2: Algorithm 1, Lemma 6, Theorem 5).

Algorithm 1 fits the min-norm interpolating coefficients ``c = F^+ y`` on random
Fourier features and releases ``c + z``, ``z ~ N(0, sigma^2 I)``. Its sensitivity, Lemma 6
of the paper,

    ||c(D) - c(D')||_2 <= 2 ||y||_2 / sqrt(lambda_min(A A^*))  <=  2 ||y||_2 / sqrt(N (1 - 2 eta)),

is **not** a worst-case bound:

* it needs ``lambda_min(A A^* / N) >= 1 - 2 eta`` for the data set *and every neighbour*,
  which Theorem 5 gives only with probability ``>= 1 - 3 delta'`` under Assumption 1
  (sub-gaussian data, ``d >= C1 log(m / delta')``, ``gamma^2 sigma^2 >= 4 log(2m / eta)``,
  ``N >= C2 eta^-2 m log(2m / delta')``, constants not given); a data set whose records
  are close together breaks it (tests/test_rfm_published.py shows one);
* it needs ``||y||_2 <= 1`` for the whole label vector, which the paper obtains by
  dividing by the empirical norm (data-dependent); :func:`scale_labels` uses public
  bounds instead.

**Units.** Lemma 6 is stated for the unit-modulus matrix ``A_jk = exp(i omega_k^T x_j)``
(no normalisation; diag(A A^* / N) = 1). For the normalised layouts of
:class:`~pysketch.rfm.RandomFeatures` the Gram ``F F^T`` itself has unit diagonal (exactly
for 'unit', on average for 'cos': ``(2/N) sum_k cos^2 = 1 + O(N^-1/2)``) and approximates
the same kernel matrix as ``A A^* / N``, so the same eigenvalue assumption reads
``lambda_min(F F^T) >= 1 - 2 eta`` and

    Delta_cos = Delta_unit = 2 ||y|| / sqrt(1 - 2 eta) = sqrt(N) * Delta_unit_modulus,

independent of N. With raw cosines ``C = cos(...)`` (entries in [-1, 1], Gram ``C C^T``
with diagonal about N/2) the same assumption gives ``lambda_min(C C^T) >= N (1 - 2 eta) / 2``
and ``Delta_raw_cos = sqrt(2) Delta_unit_modulus``; since ``F = sqrt(2/N) C``,
``Delta_cos = sqrt(N/2) Delta_raw_cos`` (Lemma 6 restated for these features): the sqrt(2) of the cosine
layout cancels against the sqrt(2/N) normalisation. The authors' code applies the
unit-modulus value ``4 / sqrt(N)`` (eta = 3/8) to the 'cos' features: its noise is
``sqrt(N)`` times too small (``calibration='paper'``, not DP).

Neighbouring relation (as the paper, Definition 2): one record replaced by another or
removed; the number of records may change, so label scaling uses a public ``n_max``.
"""

import math
import warnings

import numpy as np

from .._checks import check_int, check_positive
from ..privacy import PrivacyLeakWarning
from ..privacy.budget import Budget
from ..privacy.mechanisms import Gaussian, check_delta, check_epsilon, gaussian_noise

__all__ = [
    "check_eta",
    "check_layout",
    "check_label_norm",
    "SENSITIVITY_LAYOUTS",
    "minnorm_sensitivity",
    "paper_sensitivity",
    "paper_sigma",
    "scale_labels",
    "check_conditions",
    "output_perturbation",
    "expected_test_mse",
    "expected_test_mse_gamma",
    "noise_quadratic_form",
    "LowRankCovariance",
]

#: Feature layouts a Lemma 6 sensitivity can be stated for: the paper's unit-modulus
#: matrix, raw cosines in [-1, 1], and RandomFeatures' normalised 'cos' and 'unit'.
SENSITIVITY_LAYOUTS = ("cos", "unit", "unit_modulus", "raw_cos")

NEIGHBOURING = "replace or remove"


def check_eta(eta):
    """eta as a float in (0, 1/2), as Lemma 6 needs (1 - 2 eta > 0); ValueError otherwise.

    Parameters
    ----------
    eta : int or float
        The eigenvalue margin of Lemma 6 (lambda_min >= 1 - 2 eta).

    Returns
    -------
    float
        `eta`.

    Raises
    ------
    ValueError
        If `eta` is a bool, not a real number, or outside (0, 1/2).

    Examples
    --------
    >>> from pysketch.rfm.published import check_eta
    >>> check_eta(3 / 8)
    0.375
    """
    if isinstance(eta, bool) or not isinstance(eta, (int, float, np.floating, np.integer)) or not (0 < eta < 0.5):
        raise ValueError(f"eta must be in (0, 1/2) (Lemma 6 needs 1 - 2 eta > 0), got {eta!r}")
    return float(eta)


def check_layout(layout):
    """`layout` if it is one of SENSITIVITY_LAYOUTS; ValueError otherwise.

    Parameters
    ----------
    layout : str
        A feature layout: 'cos', 'unit', 'unit_modulus' or 'raw_cos'.

    Returns
    -------
    str
        `layout`.

    Raises
    ------
    ValueError
        If `layout` is not in SENSITIVITY_LAYOUTS.

    Examples
    --------
    >>> from pysketch.rfm.published import check_layout
    >>> check_layout("unit")
    'unit'
    """
    if layout not in SENSITIVITY_LAYOUTS:
        raise ValueError(f"layout must be one of {SENSITIVITY_LAYOUTS}, got {layout!r}")
    return layout


def check_label_norm(label_norm):
    """`label_norm` as a float: a finite number > 0; ValueError otherwise.

    Parameters
    ----------
    label_norm : float
        The bound on ||y||_2 the sensitivities assume.

    Returns
    -------
    float
        `label_norm`.

    Raises
    ------
    ValueError
        If `label_norm` is a bool, not a real number, not finite or not > 0.

    Examples
    --------
    >>> from pysketch.rfm.published import check_label_norm
    >>> check_label_norm(1)
    1.0
    """
    return check_positive(label_norm, "label_norm")


def minnorm_sensitivity(n_frequencies, eta, *, layout="cos", label_norm=1.0):
    """Lemma 6's bound on the L2 sensitivity of the min-norm coefficients, in the units
    of ``layout`` (module docstring), for labels with ``||y||_2 <= label_norm``:

    * 'unit_modulus' (the paper's A): ``2 label_norm / sqrt(N (1 - 2 eta))``;
    * 'raw_cos' (cos(omega^T x + b), no normalisation): ``sqrt(2)`` times that;
    * 'cos' and 'unit' (RandomFeatures): ``2 label_norm / sqrt(1 - 2 eta)``, N-independent.

    Conditional: holds when ``lambda_min >= 1 - 2 eta`` (in the layout's units) for the
    data and every neighbour (Theorem 5: w.p. >= 1 - 3 delta' under Assumption 1).

    Parameters
    ----------
    n_frequencies : int >= 1
        N.
    eta : float in (0, 1/2)
    layout : {'cos', 'unit', 'unit_modulus', 'raw_cos'}, default 'cos'
    label_norm : float > 0, default 1.0

    Returns
    -------
    float
        The sensitivity bound.

    Raises
    ------
    TypeError
        For an `n_frequencies` that is not an int.
    ValueError
        For an `n_frequencies` below 1, or an `eta`, `layout` or `label_norm` refused by
        :func:`check_eta`, :func:`check_layout`, :func:`check_label_norm`.

    Examples
    --------
    >>> from pysketch.rfm.published import minnorm_sensitivity
    >>> minnorm_sensitivity(100, 3 / 8), minnorm_sensitivity(100, 3 / 8, layout="unit_modulus")
    (4.0, 0.4)
    """
    N = check_int(n_frequencies, "n_frequencies")
    eta = check_eta(eta)
    layout = check_layout(layout)
    y = check_label_norm(label_norm)
    base = 2.0 * y / math.sqrt(1.0 - 2.0 * eta)
    if layout in ("cos", "unit"):
        return base
    if layout == "unit_modulus":
        return base / math.sqrt(N)
    return base * math.sqrt(2.0 / N)


def paper_sensitivity(n_frequencies, eta):
    """Algorithm 1's ``Delta = 2 / sqrt(N (1 - 2 eta))`` exactly as printed (4 / sqrt(N) at
    eta = 3/8), which the authors' code applies to the normalised 'cos' features: there
    it is sqrt(N) times too small (not DP; see the module docstring).

    Parameters
    ----------
    n_frequencies : int >= 1
        N.
    eta : float in (0, 1/2)

    Returns
    -------
    float
        2 / sqrt(N (1 - 2 eta)).

    Raises
    ------
    TypeError, ValueError
        For an `n_frequencies` that is not an int >= 1 (TypeError for a non-integer) or an
        `eta` outside (0, 1/2) (ValueError).

    Examples
    --------
    >>> from pysketch.rfm.published import paper_sensitivity
    >>> paper_sensitivity(100, 3 / 8)  # 4 / sqrt(N)
    0.4
    """
    N = check_int(n_frequencies, "n_frequencies")
    eta = check_eta(eta)
    return 2.0 / math.sqrt(N * (1.0 - 2.0 * eta))


def paper_sigma(n_frequencies, eta, epsilon, delta):
    """Algorithm 1's ``sigma = sqrt(2 ln(1.25/delta)) Delta / epsilon`` with the printed
    Delta, at any epsilon (the classical formula is only proven for epsilon < 1):
    sigma^2 = 8 ln(1.25/delta) / (N epsilon^2 (1 - 2 eta)).

    Parameters
    ----------
    n_frequencies : int >= 1
        N.
    eta : float in (0, 1/2)
    epsilon : float > 0
    delta : float in (0, 1)

    Returns
    -------
    float
        sigma.

    Raises
    ------
    TypeError, ValueError
        For an argument out of its range (TypeError for a non-integer `n_frequencies`).

    Examples
    --------
    >>> from pysketch.rfm.published import paper_sigma
    >>> round(paper_sigma(100, 3 / 8, 1.0, 1e-5), 3)
    1.938
    """
    eps = check_epsilon(epsilon)
    delta = check_delta(delta, positive=True)
    return math.sqrt(2.0 * (math.log(1.25) - math.log(delta))) * paper_sensitivity(n_frequencies, eta) / eps


def scale_labels(y, label_bound, n_max):
    """Labels clipped to the public bound ``|y_j| <= label_bound`` and divided by
    ``label_bound * sqrt(n_max)``, so that ``||y||_2 <= 1`` for every data set of at most
    ``n_max`` records (the bound Lemma 6 assumes, made public), without reading any statistic of
    the data. Returns ``(scaled labels, number clipped)``; clipping warns with the count
    (RuntimeWarning), never silently. ``n > n_max`` raises.

    Parameters
    ----------
    y : array_like of shape (n,)
        The labels (finite).
    label_bound : float > 0
        B, the public bound on abs(y_j).
    n_max : int >= 1
        The public bound on the number of records, n <= n_max.

    Returns
    -------
    scaled : ndarray of shape (n,)
        clip(y, -B, B) / (B sqrt(n_max)).
    clipped : int
        How many labels were clipped.

    Raises
    ------
    ValueError
        For a `label_bound` that is not a positive finite number, an `n_max` below 1, a y
        that is not a finite 1-D array, or more labels than `n_max`.
    TypeError
        For an `n_max` that is not an int.

    Warns
    -----
    RuntimeWarning
        When labels are clipped (the message counts them).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.published import scale_labels
    >>> scaled, clipped = scale_labels(np.array([0.5, -1.0, 1.0]), 1.0, n_max=4)
    >>> scaled.tolist(), clipped
    ([0.25, -0.5, 0.5], 0)
    """
    B = check_positive(label_bound, "label_bound")
    n_max = check_int(n_max, "n_max")
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array of labels, got shape {y.shape}")
    if not np.isfinite(y).all():
        raise ValueError("y must be finite")
    if y.shape[0] > n_max:
        raise ValueError(f"n_max = {n_max} must be >= the number of labels ({y.shape[0]}): it is the public "
                         "bound on the data set size")
    clipped = int(np.count_nonzero(np.abs(y) > B))
    if clipped:
        warnings.warn(f"scale_labels: {clipped} of {y.shape[0]} labels exceeded label_bound = {B:g} and were "
                      "clipped", RuntimeWarning, stacklevel=2)
    return np.clip(y, -B, B) / (B * math.sqrt(n_max)), clipped


def _gram_units(layout, N):
    """Factor turning the Gram of the layout's matrix into the unit-diagonal one whose
    lambda_min Lemma 6 bounds below by 1 - 2 eta."""
    if layout in ("cos", "unit"):
        return 1.0
    if layout == "unit_modulus":
        return 1.0 / N
    return 2.0 / N


def check_conditions(F_or_gram, n_frequencies, m, eta, *, layout="cos", kind="auto", data_scale=None,
                     frequency_std=None, warn=True):
    """Diagnostic report on the conditions of Lemma 6 / Theorem 5 (Liao, Needell & Xue 2024,
    Sec. 3.2). **Computed on the private data: not differentially private. Do not release
    the report or any value in it**; use it to choose N and eta before a private run, or
    to refuse one.

    Parameters
    ----------
    F_or_gram : (m, p) feature matrix or (m, m) Gram ``F F^*`` in the layout's units
        (complex allowed for 'unit_modulus').
    n_frequencies, m : int
        N and the number of records.
    eta : float in (0, 1/2)
    layout : one of SENSITIVITY_LAYOUTS
    kind : {'auto', 'features', 'gram'}
        'auto': a Gram when the array is (m, m) and its width is not a feature width
        (N, 2N or 2N + 1).
    data_scale, frequency_std : float, optional
        gamma (E||x||^2 = gamma^2 in Assumption 1) and the frequency std sigma; both
        given: the condition gamma^2 sigma^2 >= 4 log(2 m / eta) is checked.
    warn : bool
        Warn (RuntimeWarning) when a condition fails.

    Returns
    -------
    dict: n_frequencies, m, eta, overparametrised (N >= m), mp_min_frequencies
    (m / (1 - sqrt(1 - 2 eta))^2, the Marchenko-Pastur rule), mp_rule_ok,
    mp_lambda_min ((1 - sqrt(m/N))^2), lambda_min (empirical, unit-diagonal units),
    lambda_required (1 - 2 eta), eigen_ok, implied_eta ((1 - lambda_min) / 2),
    bandwidth_product, bandwidth_required, bandwidth_ok (None when not checked),
    ok, releasable (always False).

    Raises
    ------
    TypeError
        For an `n_frequencies` or `m` that is not an int.
    ValueError
        For an `n_frequencies` or `m` below 1, an `eta` outside (0, 1/2), an unknown
        `layout` or `kind`, an `F_or_gram` that is not 2-D with m rows, or a `data_scale`
        or `frequency_std` (when both are given) that is not a positive finite number.

    Warns
    -----
    RuntimeWarning
        With `warn`, when a condition fails.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import RandomFeatures
    >>> from pysketch.rfm.published import check_conditions
    >>> features = RandomFeatures(3, 400, frequency_std=5.0, random_state=0)
    >>> F = features.transform(np.random.default_rng(0).standard_normal((50, 3)))
    >>> report = check_conditions(F, 400, 50, 3 / 8)  # computed on the data: never release it
    >>> report["mp_min_frequencies"], report["eigen_ok"], report["releasable"]
    (200.0, True, False)
    """
    N = check_int(n_frequencies, "n_frequencies")
    m = check_int(m, "m")
    eta = check_eta(eta)
    layout = check_layout(layout)
    A = np.asarray(F_or_gram)
    if A.ndim != 2 or A.shape[0] != m:
        raise ValueError(f"F_or_gram must have m = {m} rows, got shape {A.shape}")
    if kind not in ("auto", "features", "gram"):
        raise ValueError(f"kind must be 'auto', 'features' or 'gram', got {kind!r}")
    if kind == "auto":
        kind = "gram" if (A.shape[1] == m and A.shape[1] not in (N, 2 * N, 2 * N + 1)) else "features"
    G = A if kind == "gram" else A @ A.conj().T
    G = (G + G.conj().T) / 2.0
    lam_min = float(np.linalg.eigvalsh(G)[0].real) * _gram_units(layout, N)
    required = 1.0 - 2.0 * eta
    mp_n = m / (1.0 - math.sqrt(1.0 - 2.0 * eta)) ** 2
    report = {
        "n_frequencies": N, "m": m, "eta": eta, "layout": layout,
        "overparametrised": N >= m,
        "mp_min_frequencies": mp_n,
        "mp_rule_ok": N >= mp_n,
        "mp_lambda_min": max(0.0, 1.0 - math.sqrt(m / N)) ** 2,
        "lambda_min": lam_min,
        "lambda_required": required,
        "eigen_ok": lam_min >= required,
        "implied_eta": (1.0 - lam_min) / 2.0,
        "bandwidth_product": None, "bandwidth_required": None, "bandwidth_ok": None,
        "releasable": False,
    }
    if data_scale is not None and frequency_std is not None:
        g = check_positive(data_scale, "data_scale")
        s = check_positive(frequency_std, "frequency_std")
        report["bandwidth_product"] = (g * s) ** 2
        report["bandwidth_required"] = 4.0 * math.log(2.0 * m / eta)
        report["bandwidth_ok"] = report["bandwidth_product"] >= report["bandwidth_required"]
    failed = [k for k in ("overparametrised", "mp_rule_ok", "eigen_ok", "bandwidth_ok") if report[k] is False]
    report["ok"] = not failed
    if failed and warn:
        warnings.warn(f"check_conditions: {', '.join(failed)} violated (lambda_min = {lam_min:.4g} vs required "
                      f"{required:.4g}; N = {N}, Marchenko-Pastur rule N >= {mp_n:.0f}): the Lemma 6 sensitivity "
                      "bound does not hold for this data. This report is computed on private data and must not be "
                      "released.", RuntimeWarning, stacklevel=2)
    return report


def output_perturbation(coef, epsilon, delta, *, n_frequencies, eta=3 / 8, calibration="lemma6", mechanism=None,
                        layout="cos", label_norm=1.0, accountant=None, insecure_seed=None):
    """Algorithm 1: ``coef + z``, ``z ~ N(0, sigma^2 I)``.

    Parameters
    ----------
    coef : (p,) array
        The min-norm coefficients ``F^+ y`` (e.g. :func:`pysketch.rfm.solvers.min_norm`),
        fitted on labels with ``||y||_2 <= label_norm`` (:func:`scale_labels`).
    epsilon : float > 0
    delta : float in (0, 1)
    n_frequencies : int
        N.
    eta : float in (0, 1/2), default 3/8
    calibration : {'lemma6', 'paper'}
        'lemma6' (default): Delta = :func:`minnorm_sensitivity` in the units of
        ``layout`` and the Gaussian mechanism (:class:`~pysketch.privacy.Gaussian`). The
        guarantee is **conditional**: (epsilon, delta)-DP under replace-or-remove
        neighbours only when the eigenvalue condition holds for the data and all its
        neighbours (Theorem 5: w.p. >= 1 - 3 delta' over the data and features, under
        Assumption 1; not worst case; delta' is not included in delta).
        'paper': Delta = 2 / sqrt(N (1 - 2 eta)) on the features as given and
        sigma^2 = 2 ln(1.25/delta) Delta^2 / epsilon^2 at any epsilon, exactly as the
        paper and its code: **not differentially private** (PrivacyLeakWarning).
    mechanism : {'analytic', 'classical'}, optional
        'lemma6' only: the Gaussian calibration (default 'analytic'; 'classical' needs
        epsilon < 1). 'paper' is always the classical formula.
    layout : one of SENSITIVITY_LAYOUTS, default 'cos'
    label_norm : float > 0, default 1
    accountant : BudgetAccountant, optional
        Charged (epsilon, delta) before the noise is drawn ('lemma6' only).
    insecure_seed : None or int
        Reproducible, insecure noise (tests only).

    Returns
    -------
    noisy_coef : ndarray of shape (p,)
        ``coef + z``.
    record : dict
        epsilon, delta, neighbouring, sensitivity, sigma, noise_covariance (sigma^2,
        meaning sigma^2 I), mechanism, calibration, guarantee ('conditional' or 'none'),
        layout, n_frequencies, eta, label_norm, conditions, secure_noise.

    Raises
    ------
    ValueError
        For a `coef` that is not a non-empty 1-D array; an epsilon out of range; a delta not
        in (0, 1); an `n_frequencies` below 1 (TypeError if not an int); an `eta`,
        `layout` or `label_norm` out of range; a `calibration` other than 'lemma6' or
        'paper'; a `mechanism` other than 'analytic' or 'classical' ('lemma6'; None or
        'classical' with 'paper'), or 'classical' at epsilon >= 1; an accountant whose
        budget would be exceeded (pysketch.privacy.BudgetError).

    Warns
    -----
    pysketch.privacy.PrivacyLeakWarning
        With ``calibration='paper'``: the release is not differentially private.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.published import output_perturbation
    >>> noisy, record = output_perturbation(np.zeros(400), 1.0, 1e-5, n_frequencies=400)
    >>> noisy.shape, record["guarantee"], record["sensitivity"]  # (the noise is not seeded)
    ((400,), 'conditional', 4.0)
    """
    coef = np.asarray(coef, dtype=np.float64)
    if coef.ndim != 1 or coef.size == 0:
        raise ValueError(f"coef must be a non-empty 1-D array, got shape {coef.shape}")
    eps = check_epsilon(epsilon)
    delta = check_delta(delta, positive=True)
    N = check_int(n_frequencies, "n_frequencies")
    eta = check_eta(eta)
    layout = check_layout(layout)
    yn = check_label_norm(label_norm)
    if calibration == "paper":
        if mechanism not in (None, "classical"):
            raise ValueError(f"calibration='paper' uses the classical formula; mechanism must be None or "
                             f"'classical', got {mechanism!r}")
        sens = yn * paper_sensitivity(N, eta)
        sigma = math.sqrt(2.0 * (math.log(1.25) - math.log(delta))) * sens / eps
        warnings.warn("output_perturbation(calibration='paper') is NOT differentially private: it applies "
                      f"Delta = 2/sqrt(N(1-2 eta)) = {sens:.4g} to features in layout {layout!r} and "
                      "sigma^2 = 2 ln(1.25/delta) Delta^2 / epsilon^2 at any epsilon, as the paper does "
                      "(noise sqrt(N) times too small on normalised features; Lemma 6 is conditional)",
                      PrivacyLeakWarning, stacklevel=2)
        noisy = gaussian_noise(coef, sigma, insecure_seed=insecure_seed)
        secure = insecure_seed is None
        mech_name, guarantee = "classical", "none"
    elif calibration == "lemma6":
        mech_name = "analytic" if mechanism is None else mechanism
        if mech_name not in ("analytic", "classical"):
            raise ValueError(f"mechanism must be 'analytic' or 'classical', got {mechanism!r}")
        sens = minnorm_sensitivity(N, eta, layout=layout, label_norm=yn)
        # (the record states NEIGHBOURING; no count is released, so 'replace' is the budget's relation)
        budget = Budget(eps, delta, neighbouring="replace", what="rfm.output_perturbation",
                        insecure_seed=insecure_seed)
        G = budget.part("coefficients").mechanism("gaussian", sens, calibration=mech_name)  # checked here
        budget.charge(accountant)
        noisy = G.randomise(coef)
        sigma = G.effective_scale_
        secure = G.secure_noise
        guarantee = "conditional"
    else:
        raise ValueError(f"calibration must be 'lemma6' or 'paper', got {calibration!r}")
    record = {
        "epsilon": eps, "delta": delta, "neighbouring": NEIGHBOURING, "sensitivity": sens, "sigma": sigma,
        "noise_covariance": sigma ** 2, "mechanism": mech_name, "calibration": calibration,
        "guarantee": guarantee, "layout": layout, "n_frequencies": N, "eta": eta, "label_norm": yn,
        "conditions": ("lambda_min(F F^T) >= 1 - 2 eta in unit-diagonal units for the data and every neighbour "
                       "(Theorem 5: w.p. >= 1 - 3 delta' under Assumption 1, not included in delta); "
                       "||y||_2 <= label_norm for every neighbour; exact min-norm coefficients; features drawn "
                       "independently of the data"),
        "secure_noise": bool(secure),
    }
    return noisy, record


# ------------------------------------------------------------------ expected utility


def expected_test_mse(mse_nonprivate, mean_sq_feature_norm, sigma):
    """E[test MSE] of ``coef + z``, ``z ~ N(0, sigma^2 I)`` (derived here): for a model
    linear in its coefficients the cross term has mean zero and
    ``E (z^T phi(x))^2 = sigma^2 ||phi(x)||^2``, so
    ``E = mse_nonprivate + sigma^2 * mean_x ||phi(x)||^2`` exactly over the noise. With the
    paper's calibration on 'cos' features (mean ||phi||^2 ~ 1, eta = 3/8, delta = 1e-5)
    the added term is 2 ln(1.25e5) 16 / (N eps^2) = 375.5 / (N eps^2).

    Parameters
    ----------
    mse_nonprivate : float
        The test MSE of the non-private coefficients.
    mean_sq_feature_norm : float
        mean_x ||phi(x)||^2 over the test records.
    sigma : float
        The noise's standard deviation per coefficient.

    Returns
    -------
    float
        mse_nonprivate + sigma^2 mean_sq_feature_norm.

    Examples
    --------
    >>> from pysketch.rfm.published import expected_test_mse
    >>> expected_test_mse(0.1, 1.0, 0.5)
    0.35
    """
    return float(mse_nonprivate) + float(sigma) ** 2 * float(mean_sq_feature_norm)


def expected_test_mse_gamma(mse_nonprivate, mean_sq_feature_norm, sensitivity, epsilon, dim):
    """E[test MSE] with l2-Laplace ("Gamma") noise z = R u, R ~ Gamma(D, Delta/eps), u
    uniform on S^(D-1): E zz^T = E[R^2] / D I = (D + 1)(Delta/eps)^2 I, so the added term
    is (D + 1)(Delta/eps)^2 mean ||phi||^2 (about 16/eps^2 in the paper's setting).

    Parameters
    ----------
    mse_nonprivate : float
        The test MSE of the non-private coefficients.
    mean_sq_feature_norm : float
        mean_x ||phi(x)||^2 over the test records.
    sensitivity : float > 0
        Delta.
    epsilon : float > 0
    dim : int >= 1
        D, the number of coefficients.

    Returns
    -------
    float
        mse_nonprivate + (D + 1) (Delta / epsilon)^2 mean_sq_feature_norm.

    Raises
    ------
    TypeError, ValueError
        For a `sensitivity`, `epsilon` or `dim` out of range (TypeError for a non-integer
        `dim`).

    Examples
    --------
    >>> from pysketch.rfm.published import expected_test_mse_gamma
    >>> round(expected_test_mse_gamma(0.1, 1.0, 0.2, 1.0, 99), 9)
    4.1
    """
    s = check_positive(sensitivity, "sensitivity") / check_epsilon(epsilon)
    D = check_int(dim, "dim")
    return float(mse_nonprivate) + (D + 1) * s * s * float(mean_sq_feature_norm)


# ------------------------------------------------------------------ noise covariances


class LowRankCovariance:
    """A noise covariance ``scalar I + basis diag(weights) basis^T`` (basis (p, r) with
    orthonormal columns), held without the (p, p) matrix: what objective perturbation's
    noise covariance is (:func:`pysketch.rfm.baselines.objective_perturbation`).

    ``numpy.asarray`` of it (and `toarray`) forms the (p, p) matrix; `quad` and `trace`
    do not. The arguments are not checked.

    Parameters
    ----------
    scalar : float
        The variance in every direction (the complement of the basis's span included).
    basis : array_like of shape (p, r)
        Orthonormal columns.
    weights : array_like of shape (r,)
        The variance added along each column of `basis` (may be negative, as long as
        scalar + weight >= 0).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.published import LowRankCovariance
    >>> cov = LowRankCovariance(0.5, np.eye(3)[:, :1], [2.0])  # 0.5 I + 2 e_1 e_1^T
    >>> cov.quad(np.eye(3)).tolist(), cov.trace()
    ([2.5, 0.5, 0.5], 3.5)
    """

    def __init__(self, scalar, basis, weights):
        self.scalar = float(scalar)
        self.basis = np.asarray(basis, dtype=np.float64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.dim = self.basis.shape[0]

    def quad(self, Phi):
        """phi_i^T Sigma phi_i for every row of Phi (n, p)."""
        Phi = np.atleast_2d(np.asarray(Phi, dtype=np.float64))
        P = Phi @ self.basis
        return self.scalar * np.einsum("ij,ij->i", Phi, Phi) + (P * P) @ self.weights

    def trace(self):
        return self.scalar * self.dim + float(self.weights.sum())

    def toarray(self):
        return self.scalar * np.eye(self.dim) + (self.basis * self.weights) @ self.basis.T

    def __array__(self, dtype=None, copy=None):
        a = self.toarray()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        return f"LowRankCovariance(dim={self.dim}, rank={self.weights.size}, scalar={self.scalar:.4g})"


def noise_quadratic_form(noise_covariance, Phi):
    """``phi_i^T Sigma phi_i`` for every row of Phi, i.e. ``E (z^T phi_i)^2``: the added test
    (or training) MSE at each record. ``noise_covariance`` is a record's entry: a scalar s
    (Sigma = s I), a (p, p) array, or a :class:`LowRankCovariance`.

    Parameters
    ----------
    noise_covariance : float, ndarray of shape (p, p) or LowRankCovariance
        Sigma.
    Phi : array_like of shape (n, p), or (p,) for one record
        The features of the records.

    Returns
    -------
    numpy.ndarray of shape (n,)
        phi_i^T Sigma phi_i for every row.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm.published import noise_quadratic_form
    >>> noise_quadratic_form(0.25, np.ones((2, 4))).tolist()  # 0.25 ||phi||^2
    [1.0, 1.0]
    """
    Phi = np.atleast_2d(np.asarray(Phi, dtype=np.float64))
    if isinstance(noise_covariance, LowRankCovariance):
        return noise_covariance.quad(Phi)
    S = np.asarray(noise_covariance, dtype=np.float64)
    if S.ndim == 0:
        return float(S) * np.einsum("ij,ij->i", Phi, Phi)
    return np.einsum("ij,jk,ik->i", Phi, S, Phi)
