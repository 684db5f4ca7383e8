r"""scikit-learn regressors for private random-feature regression.

* :class:`PrivateRFRegressor` (recommended): sufficient-statistics perturbation of the
  random-feature Gram matrix and correlation vector with an AdaSSP-style private ridge
  (:mod:`pysketch.rfm.ssp`): (epsilon, delta)-DP in the worst case, for any data, under
  add/remove (default) or replace-one neighbours. Its default features are those of an
  additive-plus-full Gaussian kernel (:mod:`pysketch.rfm.anova`), and it chooses between
  the ridge model and the private mean by post-processing (issue 37).
* :class:`DPRFMRegressor`: the published model (Liao, Needell & Xue 2024, Algorithm 1):
  min-norm interpolation on random cos features, then Gaussian output perturbation
  (:mod:`pysketch.rfm.published`). Its guarantee is conditional (Liao, Needell & Xue 2024, Sec. 3.2: it holds with high probability under their data model);
  ``calibration='paper'`` reproduces the paper's numbers and is not private.

Both take a public box ``bounds`` of X (records outside it are not clipped: the features
are bounded whatever x is), draw the frequencies from
``random_state`` (public), and take a public label range ``target_bounds`` (labels outside
it are clipped and counted). Without ``bounds`` / ``target_bounds`` the box is read from
the data with a :class:`~pysketch.privacy.PrivacyLeakWarning` (as diffprivlib does).

The kernel's length scale is given in the coordinates the features see: standardised ones
(PrivateRFRegressor's default ``scaling='private'``; default length ``sqrt(d)``) or the unit
box (``0.1 sqrt(d)``); either keeps the typical distance between records (which grows as
sqrt(d)) a fixed number of length scales.

**Dask.** ``PrivateRFRegressor.fit`` also takes X as a dask array or a data frame of numeric
columns and y as a dask array or series (or in memory) with the same number of rows: y is
joined to X's blocks (:mod:`pysketch.records`) and every pass (the box read from the
data when it is not given, the private scaling's sums, the statistics G and b) runs block
by block where the blocks live (:func:`pysketch.blocks.map_reduce`); the noise is added
once, on the merged sums, exactly as for data in memory. ``DPRFMRegressor`` interpolates
all n records at once (it needs the n x N feature matrix) and refuses dask input.
``predict`` of a dask X returns a lazy dask array.
"""

import math
import numbers
import warnings

import numpy as np

from .._base import BUDGET_SHARES, CHANGING, RENAMED, BaseEstimator, RegressorMixin, not_fitted_error
from .._checks import check_array, check_bounds, check_relation, check_size
from .._params import Array, Bounds, Interval, Options
from ..privacy import PrivacyLeakWarning
from ..privacy.mechanisms import PRIVACY_PARAMETERS, check_delta
from .features import RandomFeatures
from ..blocks import map_blocks
from ..records import Records, dask_inputs, is_lazy
from .scaling import DataScaling, add_sums, release_scaling, scaling_sums
from .anova import AnovaFeatures
from .solvers import METHODS as SOLVERS
from .ssp import (DEFAULT_SHARES, NEIGHBOURING, RFStatistics, check_target_bounds, choose_against_intercept,
                  intercept_only, release_statistics, solve_ridge, statistics_sums, warn_clipped_targets)

__all__ = ["PrivateRFRegressor", "DPRFMRegressor", "auto_frequencies", "DEFAULT_LENGTH_SCALE_PER_SQRT_D",
           "DEFAULT_STANDARDISED_LENGTH_SCALE_PER_SQRT_D", "SCALINGS"]

#: Default kernel length scale in unit-box coordinates, per sqrt(d).
DEFAULT_LENGTH_SCALE_PER_SQRT_D = 0.1
#: Default kernel length scale in standardised coordinates (scaling='private'), per sqrt(d).
DEFAULT_STANDARDISED_LENGTH_SCALE_PER_SQRT_D = 1.0
#: The values of PrivateRFRegressor's `scaling`.
SCALINGS = ("private", "box")
#: Bounds of sketch_size='auto', and its value without a released count.
AUTO_MIN_FREQUENCIES, AUTO_MAX_FREQUENCIES, AUTO_BOX_FREQUENCIES = 4, 512, 128
#: sketch_size='auto': the ridge the noise calls for, 2 sqrt(p) sigma_G, is this fraction of
#: a diagonal entry n / p of the Gram matrix.
AUTO_RIDGE_TO_DIAGONAL = 1.0 / 4.0


def auto_frequencies(count, epsilon, delta, shares=DEFAULT_SHARES, neighbouring="add_remove"):
    """N for sketch_size='auto' (PrivateRFRegressor): the p = 2 N + 1 at which
    2 sqrt(p) sigma_G = AUTO_RIDGE_TO_DIAGONAL count / p = count / (4 p), sigma_G the noise
    on the Gram matrix's entries of a release at (epsilon, delta) under the neighbouring
    relation (:func:`pysketch.rfm.ssp.release_statistics`; G's sensitivity is sqrt(2)
    larger under 'replace' than under 'add_remove'), i.e.
    p = (count / (8 sigma_G))^(2/3), N = (p - 1) / 2 within [AUTO_MIN_FREQUENCIES,
    AUTO_MAX_FREQUENCIES] = [4, 512].

    Parameters
    ----------
    count : float
        The (released) number of records; taken as at least 1.
    epsilon : float > 0
        The epsilon of the statistics' release.
    delta : float in (0, 1)
        Its delta.
    shares : three positive numbers, default DEFAULT_SHARES
        The shares of (G, b, lambda_min); only G's share matters here.
    neighbouring : {'add_remove', 'replace'}, default 'add_remove'
        The relation of the release.

    Returns
    -------
    int
        N.

    Raises
    ------
    ValueError
        For an epsilon or delta the analytic Gaussian mechanism cannot calibrate.

    Examples
    --------
    >>> from pysketch.rfm.estimators import auto_frequencies
    >>> auto_frequencies(10_000, 1.0, 1e-5), auto_frequencies(10**8, 1.0, 1e-5)
    (23, 512)
    """
    from ..privacy.mechanisms import analytic_gaussian_sigma

    share = float(np.asarray(shares, dtype=np.float64)[0] / np.sum(shares))
    check_relation(neighbouring)
    # G's L2 sensitivity, relative to the unit: sqrt(1/2) under add/remove, 1 under replace
    # (release_statistics' sensitivities, with a = 1)
    relative = 1.0 if neighbouring == "replace" else math.sqrt(0.5)
    sigma_g = analytic_gaussian_sigma(epsilon, delta, 1.0) * relative / math.sqrt(share)
    p = (max(float(count), 1.0) * AUTO_RIDGE_TO_DIAGONAL / (2.0 * sigma_g)) ** (2.0 / 3.0)
    return int(min(max((p - 1.0) / 2.0, AUTO_MIN_FREQUENCIES), AUTO_MAX_FREQUENCIES))


#: Kernels of PrivateRFRegressor: 'anova' (:mod:`pysketch.rfm.anova`) or the isotropic 'gaussian'.
KERNELS = ("anova", "gaussian")
#: model_selection with an insecure_seed: the fission's seed is insecure_seed + this.
SELECTION_SEED_OFFSET = 1_000_003
#: kernel='anova': the one-coordinate length, relative to the full kernel's per coordinate
#: (length_scale / sqrt(d)), and the share of axis-aligned frequencies.
ANOVA_ADDITIVE_LENGTH, ANOVA_ADDITIVE_SHARE = 0.7, 0.75
#: The non-private (epsilon=None) fit's ridge, relative to trace(G) / p.
NONPRIVATE_RIDGE = 1e-4


class _RFRegressorBase(RegressorMixin, BaseEstimator):
    """What the random-feature regressors share: checks, the public box, the features."""

    def _check_xy(self, X, y):
        """The records of the fit: in memory, checked, or joined dask collections."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y is None")
        if is_lazy(X, y):
            records, column = Records.from_dask(X, y)
            if column:
                warnings.warn("A column-vector y was passed when a 1d array was expected",
                              _data_conversion_warning(), stacklevel=3)
            return records
        X = check_array(X, "X", np.float64)
        y = np.asarray(y)
        try:
            if y.dtype.kind not in "fiubO":
                raise TypeError
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"Unknown label type: y must be numeric (a regression target), got dtype {y.dtype}") \
                from None
        if y.ndim == 2 and y.shape[1] == 1:
            warnings.warn("A column-vector y was passed when a 1d array was expected", _data_conversion_warning(),
                          stacklevel=3)
            y = y[:, 0]
        if y.ndim != 1:
            raise ValueError(f"y must be 1-D, got shape {y.shape}")
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X and y have inconsistent numbers of samples: {X.shape[0]} and {y.shape[0]}")
        if not np.isfinite(y).all():
            raise ValueError("y must be finite (no NaN or infinity)")
        return Records(X, y)

    #: What both regressors declare (pysketch._params); the private fit's relation
    #: between epsilon and delta is `_check_param_relations`.
    _shared_constraints = {
        "bounds": [Bounds(), None],
        "target_bounds": [Array((2,), text="a pair (lower, upper) of finite numbers"), None],
        "kernel_scale": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
        "insecure_seed": [Interval(numbers.Integral), None],
        **{name: PRIVACY_PARAMETERS[name] for name in ("epsilon", "delta", "accountant")},
    }

    def _check_param_relations(self):
        """A private fit's Gaussian releases need delta > 0 (refused before the charge)."""
        if self._param("epsilon") is not None:
            check_delta(self.delta, positive=True)

    def _box(self, records):
        d = records.shape[1]
        if self.bounds is None or self.target_bounds is None:  # one pass for both ranges
            xlo, xhi, ylo, yhi = records.reduce(_ranges, _merge_ranges)
        if self.bounds is None:
            if self._param("epsilon") is not None:
                warnings.warn("bounds not given: the box of X is read from the data, which is not differentially "
                              "private; pass public bounds=(lower, upper)", PrivacyLeakWarning, stacklevel=3)
            lo, hi = xlo, xhi
            hi = np.where(hi > lo, hi, lo + 1.0)
            lo, hi = check_bounds((lo, hi), d)
        else:
            lo, hi = check_bounds(self.bounds, d)
        if self.target_bounds is None:
            if self._param("epsilon") is not None:
                warnings.warn("target_bounds not given: the range of y is read from the data, which is not "
                              "differentially private; pass public target_bounds=(lower, upper)",
                              PrivacyLeakWarning, stacklevel=3)
            tlo, thi = float(ylo), float(yhi)
            if not thi > tlo:
                thi = tlo + 1.0
        else:
            tlo, thi = check_target_bounds(self.target_bounds)
        from .._checks import check_box_width

        # the features and the label scaling divide by the widths (scale-free above 9.3e-302)
        check_box_width(lo, hi, "bounds" if self.bounds is not None else "X (its box)")
        check_box_width(tlo, thi, "target_bounds" if self.target_bounds is not None else "y (its range)")
        return np.asarray(lo, np.float64), np.asarray(hi, np.float64), (tlo, thi)

    def _length_scale(self, d, standardised=False):
        if self._param("kernel_scale") is None:
            per = DEFAULT_STANDARDISED_LENGTH_SCALE_PER_SQRT_D if standardised else DEFAULT_LENGTH_SCALE_PER_SQRT_D
            return per * math.sqrt(d)
        return float(self._param("kernel_scale"))

    def _scaled(self, X):
        if hasattr(self, "scaling_"):
            return self.scaling_.transform(X)
        return (X - self.lower_) / (self.upper_ - self.lower_)

    def _check_predict_input(self, X):
        if not hasattr(self, "coef_"):
            raise not_fitted_error(self)
        X = check_array(X, "X", np.float64)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")
        return X

    def predict(self, X):
        """phi(x)^T coef_ + intercept_ for every row of X (a lazy dask array, block by block,
        for a dask X)."""
        if is_lazy(X):
            if not hasattr(self, "coef_"):
                raise not_fitted_error(self)
            import dask

            A = dask_inputs(X, self.n_features_in_, type(self).__name__)
            if hasattr(self, "scaling_"):
                centre, scale = self.scaling_.x_centre, self.scaling_.x_scale
            else:
                centre, scale = self.lower_, self.upper_ - self.lower_
            model = dask.delayed((self.features_, centre, scale, self.coef_, self.intercept_), traverse=False)
            return map_blocks(A, _predict_block, model, drop_axis=1, dtype=np.float64)
        X = self._check_predict_input(X)
        return self.features_.predict(self._scaled(X), self.coef_) + self.intercept_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


def _predict_block(block, model):
    """Predictions of one block of a dask X (a task of `predict`)."""
    features, centre, scale, coef, intercept = model
    block = np.asarray(block, dtype=np.float64)
    if block.shape[0] == 0:
        return np.zeros(0)
    return features.predict((block - centre) / scale, coef) + intercept


def _ranges(x, y, first_row):
    """(column min, column max, min y, max y) of records; +-inf for no record."""
    if x.shape[0] == 0:
        d = x.shape[1]
        return np.full(d, np.inf), np.full(d, -np.inf), np.inf, -np.inf
    return x.min(axis=0), x.max(axis=0), y.min(), y.max()


def _merge_ranges(a, b):
    return np.minimum(a[0], b[0]), np.maximum(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3])


def _moments(x, y, first_row):
    """(count, column means, column variances) of records."""
    n = x.shape[0]
    if n == 0:
        return 0, np.zeros(x.shape[1]), np.zeros(x.shape[1])
    return n, x.mean(axis=0), x.var(axis=0)


def _merge_moments(a, b):
    """Chan, Golub & LeVeque's pairwise merge of (count, mean, variance)."""
    na, ma, va = a
    nb, mb, vb = b
    if nb == 0:
        return a
    if na == 0:
        return b
    n = na + nb
    delta = mb - ma
    mean = ma + delta * (nb / n)
    var = (na * va + nb * vb + delta * delta * (na * nb / n)) / n
    return n, mean, var


def _fit_sums(x, y, first_row, features, scaling, target_bounds, label_range):
    """The statistics of PrivateRFRegressor's records: y clipped to the public range
    (counted), then to the label range (counted), x standardised; see `statistics_sums`."""
    lo, hi = target_bounds
    outside = int(np.count_nonzero((y < lo) | (y > hi)))
    if outside:
        y = np.clip(y, lo, hi)
    clipped = int(np.count_nonzero((y < label_range[0]) | (y > label_range[1])))
    y = np.clip(y, *label_range)
    gram, xty, count, _ = statistics_sums(scaling.transform(x), y, first_row, features, label_range)
    return gram, xty, count, outside, clipped


def _merge_fit_sums(a, b):
    gram, xty = a[0], a[1]
    gram += b[0]
    xty += b[1]
    return gram, xty, a[2] + b[2], a[3] + b[3], a[4] + b[4]


def _data_conversion_warning():
    try:
        from sklearn.exceptions import DataConversionWarning
    except ImportError:  # pragma: no cover
        return UserWarning
    return DataConversionWarning


class PrivateRFRegressor(_RFRegressorBase):
    """Differentially private random-feature ridge regression (sufficient-statistics
    perturbation; :mod:`pysketch.rfm.ssp`).

    The model is ``f(x) = phi(u)^T coef_ + intercept_`` with
    ``phi(u) = [cos(Omega^T u), sin(Omega^T u), 1] / sqrt(N + 1)`` (Gaussian kernel of
    length scale `kernel_scale`, N = `sketch_size`) and u = x standardised by a private
    first look at the data (``scaling='private'``, default: :mod:`pysketch.rfm.scaling`
    releases the per-coordinate mean and spread of x and the label's with a
    share ``budget_shares['scaling']`` of epsilon and delta; the labels are then clipped to the released mean
    +- 6 spreads, counted in ``n_labels_clipped_``) or x scaled to the unit box
    (``scaling='box'``). ``intercept_`` is the centre of the label clipping range. The
    two releases compose sequentially to (epsilon, delta)-DP for any data (worst case).

    Parameters
    ----------
    epsilon : float > 0 or None
        Privacy budget; None fits without noise (not private; a reference).
        Not given: 1.0 in this version, with a FutureWarning; None (not private) in the
        next, as for every pysketch estimator.
    delta : float in (0, 1)
    bounds : (lower, upper), optional
        Public box of X. Without it the box is read from X (PrivacyLeakWarning).
    target_bounds : (lower, upper), optional
        Public range of y; labels outside are clipped (and counted in a warning). Without
        it the range is read from y (PrivacyLeakWarning).
    sketch_size : int or 'auto'
        N, the number of frequencies; the model has p = 2 N + 1 coefficients. 'auto' (with scaling='private'):
        chosen from the released count n^ so that the noise's spectral edge
        ``2 sqrt(p) sigma_G`` is AUTO_RIDGE_TO_DIAGONAL (1/4) of a diagonal entry of the
        Gram matrix, ``n^ / p``: ``p = (n^ / (8 sigma_G))^(2/3)``, N = (p - 1) / 2 within
        [AUTO_MIN_FREQUENCIES, AUTO_MAX_FREQUENCIES] (post-processing of the first release);
        with scaling='box', 'auto' is 128. (Before issue 37 the fraction was 1/8; with the
        ridge at half the edge and the 'anova' kernel, 1/4 measured better or equal on the
        tables of benchmarks/quality/rfm_quality.py (issue 37).)
    kernel_scale : float, optional
        The Gaussian kernel's length scale, in the coordinates of u: default sqrt(d)
        (standardised, 'private') or 0.1 sqrt(d) (unit box, 'box').
    scaling : {'private', 'box'}
    budget_shares : dict or None
        ``{'scaling': 0.1}`` (the default): the share of epsilon and of delta spent on the
        scaling release ('private'); the statistics get the rest.
    neighbouring : {'add_remove', 'replace'}
    regularization : 'ada' or float >= 0
        The ridge (:func:`pysketch.rfm.ssp.solve_ridge`; a number is in units of G,
        summed over records). With epsilon=None, 'ada' is NONPRIVATE_RIDGE times
        trace(G) / p (there is no noise to adapt to) and a number is used as given.
    shares : three positive numbers
        Shares of the privacy budget's sensitivity for (G, b, lambda_min).
    kernel : {'anova', 'gaussian'}
        'anova' (default, issue 37): the features of an additive-plus-full Gaussian kernel
        (:class:`pysketch.rfm.anova.AnovaFeatures`; ANOVA_ADDITIVE_SHARE = 3/4 of the
        frequencies axis-aligned, of one-coordinate length ANOVA_ADDITIVE_LENGTH = 0.7 times
        the full kernel's per coordinate, ``length_scale / sqrt(d)``); 'gaussian': the
        isotropic kernel alone (:class:`pysketch.rfm.RandomFeatures`, the default before).
        Both have unit-norm features, so the release and its guarantee are the same.
    n_frequencies, length_scale, scaling_share
        Deprecated names of sketch_size, kernel_scale and budget_shares={'scaling': ...}
        (FutureWarning; removed in the next version).
    model_selection : bool
        True (default): choose between the ridge model and the intercept-only model (the
        private mean) by Gaussian fission of the release
        (:func:`pysketch.rfm.ssp.choose_against_intercept`): post-processing, no privacy
        spent; ``selected_`` says which.
    accountant : BudgetAccountant, optional
        Charged (epsilon, delta) at every private fit.
    random_state : None, int or Generator
        The public seed of the frequencies (never of the noise).
    insecure_seed : None or int
        Seeds the privacy noise: for tests and experiments only, **not private**.

    Attributes
    ----------
    coef_ : (2 N + 1,) ndarray
    intercept_ : float
    features_ : RandomFeatures (AnovaFeatures with kernel='anova')
    selected_ : {'ridge', 'intercept'}
        The model kept by `model_selection` ('ridge' without it).
    selection_risk_difference_ : float
        With `model_selection`: the held-out risk of the ridge model less the
        intercept-only model's, over B^2 (B the label radius); negative keeps the ridge.
    ridge_ : float
        The ridge used (in units of the summed Gram matrix).
    privacy_ : PrivacyRecord or dict
        A private fit: the PrivacyRecord of the budget (epsilon, delta, neighbouring,
        guarantee 'worst-case', and its parts 'scaling' and 'statistics' with their
        sensitivities and noise scales); `fit_released`: the release's dict; epsilon=None:
        a dict saying there is no guarantee.
    n_features_in_ : int

    Raises
    ------
    ValueError
        In `fit`: an epsilon out of range or a delta not in (0, 1); a `neighbouring` not
        in NEIGHBOURING; a y that is None, not numeric, not 1-D (a column vector is taken,
        with a warning), of another length than X or not finite; an X that is not a finite
        2-D array; a `sketch_size` that is neither 'auto' nor an int >= 1 whose features
        and Gram matrix the machine's memory can hold (TypeError for another type); a
        `scaling` not in SCALINGS; `budget_shares` with an unknown part or a share outside
        (0, 1) (TypeError if not a dict); a renamed parameter given with its new name and
        another value; `bounds` or `target_bounds` that are not a finite box (of d
        coordinates) with a width in the supported range; a `kernel_scale` that is not
        None or a positive finite number; a `kernel` not in KERNELS; a `model_selection`
        that is not a bool; `shares` that are not three positive finite numbers; a
        `regularization` that is neither 'ada' nor a finite number >= 0; an accountant
        whose budget would be exceeded (pysketch.privacy.BudgetError). In `predict`: an X
        whose number of columns differs from the fit's.
    TypeError
        In `fit_released`: a `released` that is not a PrivateRFStatistics or a `scaling`
        that is not a DataScaling.
    sklearn.exceptions.NotFittedError
        `predict` before a fit (a ValueError when scikit-learn is not installed).

    Warns
    -----
    pysketch.privacy.PrivacyLeakWarning
        A private fit without `bounds` or `target_bounds` (read from the data).
    RuntimeWarning
        Labels outside `target_bounds`, clipped (with their count).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.rfm import PrivateRFRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(5000, 2))
    >>> y = np.sin(6 * X[:, 0]) + X[:, 1]
    >>> reg = PrivateRFRegressor(epsilon=1.0, bounds=([0, 0], [1, 1]), target_bounds=(-1, 2),
    ...                          random_state=0).fit(X, y)
    >>> reg.predict(X[:3]).shape, reg.privacy_.guarantee  # (the noise is not seeded)
    ((3,), 'worst-case')
    """

    _renamed_params = {"n_frequencies": "sketch_size", "length_scale": "kernel_scale",
                       "scaling_share": ("budget_shares", lambda share: {"scaling": share})}
    _budget_parts = {"scaling": 0.1}
    _changing_defaults = {"epsilon": (1.0, None)}
    _parameter_constraints = {
        **_RFRegressorBase._shared_constraints,
        "sketch_size": [Options(("auto",)), Interval(numbers.Integral, 1, None)],
        "scaling": [Options(SCALINGS)],
        "budget_shares": BUDGET_SHARES,
        "neighbouring": [Options(NEIGHBOURING)],
        "regularization": [Options(("ada",)), Interval(numbers.Real, 0, None)],
        "shares": [Array((3,), positive=True, text="three positive finite numbers")],
        "kernel": [Options(KERNELS)],
        "model_selection": ["boolean"],
    }

    def __init__(self, epsilon=CHANGING, delta=1e-5, *, bounds=None, target_bounds=None, sketch_size="auto",
                 kernel_scale=None, scaling="private", budget_shares=None, neighbouring="add_remove",
                 regularization="ada", shares=DEFAULT_SHARES, kernel="anova", model_selection=True, accountant=None,
                 random_state=None, insecure_seed=None, n_frequencies=RENAMED, length_scale=RENAMED,
                 scaling_share=RENAMED):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.sketch_size = sketch_size
        self.kernel_scale = kernel_scale
        self.scaling = scaling
        self.budget_shares = budget_shares
        self.n_frequencies = n_frequencies
        self.length_scale = length_scale
        self.scaling_share = scaling_share
        self.neighbouring = neighbouring
        self.regularization = regularization
        self.shares = shares
        self.kernel = kernel
        self.model_selection = model_selection
        self.accountant = accountant
        self.random_state = random_state
        self.insecure_seed = insecure_seed

    def fit(self, X, y):
        """Release the scaling (scaling='private') and the statistics of (X, y) (unless
        epsilon is None), and solve.

        X may be a dask array or a data frame of numeric columns and y a dask array or
        series (module docstring): each pass then runs blockwise where the blocks live,
        and every release is made once, on the merged sums."""
        self._validate_params()
        records = self._check_xy(X, y)
        size, size_name = self._param("sketch_size"), self._param_label("sketch_size")
        auto = isinstance(size, str) and size == "auto"
        n, d = records.shape

        def fit_bytes(N):  # Omega, the Gram matrix of p = 2 N + 1 features (summed, merged, released,
            p = 2 * N + 1  # solved) and a chunk of the features with their raw cos and sin
            return 24 * d * N + 4 * 8 * p * p + 8 * (p + 2 * N) * min(n, max(1, (1 << 24) // (8 * (p + 2 * N))))

        N = AUTO_BOX_FREQUENCIES if auto else check_size(
            size, size_name, nbytes=fit_bytes,
            what=f"for the frequencies of d = {d} coordinates and the Gram matrix of 2 {size_name} + 1 features")
        share = self._budget_shares()["scaling"]
        lo, hi, tb = self._box(records)
        n, d = records.shape
        self.lower_, self.upper_, self.target_bounds_ = lo, hi, tb
        self.n_features_in_ = d
        private = self._param("epsilon") is not None
        eps, delta = (self._param("epsilon"), self.delta) if private else (None, None)
        if private:
            from ..privacy.budget import Budget

            budget = Budget(eps, delta, neighbouring=self.neighbouring, what="PrivateRFRegressor.fit",
                            insecure_seed=self.insecure_seed)
            budget.charge(self.accountant)  # once, before any noise
        if self.scaling == "private":
            if private:
                # one pass: the sums of r(x, y) (labels clipped to tb by construction), released once
                total = records.reduce(scaling_sums, add_sums, args=(lo, hi, tb[0], tb[1]))
                part = budget.part("scaling", share * eps, share * delta)
                sc = release_scaling(total, (lo, hi), tb, part.epsilon, part.delta, neighbouring=self.neighbouring,
                                     insecure_seed=part.source("gaussian"))
                part.describe(sensitivity=sc.privacy["sensitivity"], scale=sc.privacy["sigma"])
                eps, delta = (1 - share) * eps, (1 - share) * delta
            else:
                count, mean, var = records.reduce(_moments, _merge_moments)
                sd = np.sqrt(var)
                sc = DataScaling(mean, np.where(sd > 0, sd, 1.0), tb, count, None)
            self.scaling_ = sc
            label_range = sc.target_range
        else:
            self.scaling_ = DataScaling(lo, hi - lo, tb, None, None)
            label_range = tb
        if auto and private and self.scaling == "private":
            N = auto_frequencies(self.scaling_.count, eps, delta, self.shares, self.neighbouring)
        self.features_ = self._features(d, N)
        # one pass: G and b of the standardised records, labels clipped to tb then to the label range
        gram, xty, count, outside, clipped = records.reduce(
            _fit_sums, _merge_fit_sums, args=(self.features_, self.scaling_, tb, label_range))
        warn_clipped_targets(outside, count, tb, stacklevel=3)
        self.n_labels_clipped_ = clipped
        stats = RFStatistics.from_sums(self.features_, label_range, gram, xty, count)
        del gram, xty
        if not private:
            G = stats.gram
            if self.regularization == "ada":  # no noise to adapt to: a small ridge relative to G
                lam = NONPRIVATE_RIDGE * max(np.trace(G), 1e-300) / G.shape[0]
            else:  # the ridge asked for, as solve_ridge takes it (in units of G)
                lam = float(self.regularization)
            ridge = np.full(G.shape[0], lam)
            ridge[-1] = 0.0
            w, V = np.linalg.eigh(G + np.diag(ridge))
            self.coef_ = V @ ((V.T @ stats.xty) / np.maximum(w, 1e-12 * max(w.max(), 1e-300)))
            self.ridge_ = lam
            self.selected_ = "ridge"
            self.privacy_ = {"epsilon": float("inf"), "delta": 0.0, "guarantee": "none (epsilon=None: no noise)"}
        else:
            part = budget.part("statistics", eps, delta)
            released = release_statistics(stats, part.epsilon, part.delta, neighbouring=self.neighbouring,
                                          shares=self.shares, insecure_seed=part.source("gaussian"))
            part.describe(sensitivity=released.privacy["sensitivity"], shares=released.privacy["shares"],
                          scale=dict(released.noise_std))
            del stats
            self._fit_released(released)
            self.privacy_ = budget.record(guarantee="worst-case")
        self.intercept_ = 0.5 * (label_range[0] + label_range[1])
        return self

    def _fit_released(self, released):
        self.coef_, self.ridge_ = solve_ridge(released, self.regularization)
        self.privacy_ = dict(released.privacy)
        self.selected_ = "ridge"
        if self.model_selection:
            # post-processing of the release (no privacy spent): ridge or intercept-only
            seed = None if self.insecure_seed is None else int(self.insecure_seed) + SELECTION_SEED_OFFSET
            keep, diff = choose_against_intercept(released, self.regularization, random_state=seed)
            self.selection_risk_difference_ = diff
            if not keep:
                self.coef_ = intercept_only(released)
                self.selected_ = "intercept"

    def _features(self, d, N):
        length = self._length_scale(d, self.scaling == "private")
        if self.kernel == "gaussian":
            return RandomFeatures(d, N, length_scale=length, layout="unit", intercept=True,
                                  random_state=self.random_state)
        return AnovaFeatures(d, N, length_scale=length, additive_length=ANOVA_ADDITIVE_LENGTH * length / math.sqrt(d),
                             additive_share=ANOVA_ADDITIVE_SHARE, random_state=self.random_state)

    def fit_released(self, released, scaling):
        """Fit from statistics released elsewhere: post-processing only. `released` is a
        PrivateRFStatistics of features of ``scaling.transform(X)``, `scaling` a
        DataScaling (e.g. :func:`pysketch.rfm.scaling.private_scaling`'s)."""
        from .ssp import PrivateRFStatistics

        if not isinstance(released, PrivateRFStatistics):
            raise TypeError(f"released must be a PrivateRFStatistics, got {type(released).__name__}")
        if not isinstance(scaling, DataScaling):
            raise TypeError(f"scaling must be a DataScaling, got {type(scaling).__name__}")
        d = released.features.d
        self.scaling_ = scaling
        self.target_bounds_ = released.target_bounds
        self.n_features_in_ = d
        self.features_ = released.features
        self._fit_released(released)
        self.intercept_ = released.centre
        return self


class DPRFMRegressor(_RFRegressorBase):
    """The published differentially private random-feature model (Liao, Needell & Xue 2024,
    Algorithm 1; :mod:`pysketch.rfm.published`): min-norm interpolation on N random cos
    features (``sqrt(2/N) cos(omega^T u + b)``, u = x scaled to the unit box), then Gaussian
    output perturbation.

    Its guarantee is **conditional** (``privacy_['guarantee']``): the Lemma 6 sensitivity
    holds only when lambda_min(F F^T) >= 1 - 2 eta for the data and every neighbour, which
    the paper shows with high probability under a sub-gaussian data model, not for every
    data set (Liao, Needell & Xue 2024, Sec. 3.2). The fit reports the conditions on its data
    (``conditions_``: computed on the data, not private; a warning when one fails). Labels are clipped
    to the public `target_bounds`, centred and divided by ``B sqrt(n_max)`` so that
    ``||y||_2 <= 1`` for every data set of at most `n_max` records. With the sensitivity in
    the right units the noise on a prediction has variance about
    ``8 ln(1.25/delta) / ((1 - 2 eta) epsilon^2)`` in those units: the model is
    useful only at large epsilon. ``calibration='paper'`` reproduces the paper's numbers
    and is **not private** (PrivacyLeakWarning). Prefer :class:`PrivateRFRegressor`.

    Parameters
    ----------
    epsilon : float > 0 or None
        None: the non-private min-norm model.
        Not given: 1.0 in this version, with a FutureWarning; None (not private) in the
        next, as for every pysketch estimator.
    delta : float in (0, 1)
    bounds, target_bounds : as PrivateRFRegressor
    n_max : int, optional
        Public upper bound on the number of records (default: n, with a PrivacyLeakWarning).
    sketch_size : int, optional
        N, the number of frequencies; default ``ceil(n_max / (1 - sqrt(1 - 2 eta))^2)``,
        the Marchenko-Pastur rule under which the eigenvalue condition can hold (4 n_max at
        eta = 3/8).
    kernel_scale : float, optional
        The Gaussian kernel's length scale, in unit-box coordinates (default 0.1 sqrt(d)).
    n_frequencies, length_scale
        Deprecated names of sketch_size and kernel_scale (FutureWarning; removed in the
        next version).
    eta : float in (0, 1/2)
    calibration : {'lemma6', 'paper'}
    solver : {'pinv', 'cholesky', 'kaczmarz'}
        The min-norm solver (:func:`pysketch.rfm.solvers.min_norm`); 'kaczmarz' runs
        `n_iter` iterations (default n, the paper's, which does not interpolate).
    n_iter : int, optional
    accountant, random_state, insecure_seed : as PrivateRFRegressor

    Raises
    ------
    TypeError
        In `fit`: dask collections (Algorithm 1 needs the whole feature matrix).
    ValueError
        In `fit`: an epsilon out of range or a delta not in (0, 1); a y that is None, not
        numeric, not 1-D, of another length than X or not finite; an X that is not a finite
        2-D array; an `eta` outside (0, 1/2); a `calibration` other than 'lemma6' or
        'paper'; an `n_max` below the number of records, or an `n_max` or `sketch_size`
        that is not an int >= 1 whose features the machine's memory can hold (TypeError for
        a non-integer); `bounds` or `target_bounds` that are not a finite box with a width
        in the supported range; a `kernel_scale` that is not None or a positive finite
        number; an unknown `solver`; a renamed parameter given with its new name and
        another value; an accountant whose budget would be exceeded
        (pysketch.privacy.BudgetError). In `predict`: an X whose number of columns differs
        from the fit's.
    sklearn.exceptions.NotFittedError
        `predict` before a fit (a ValueError when scikit-learn is not installed).

    Warns
    -----
    pysketch.privacy.PrivacyLeakWarning
        A private fit without `bounds`, `target_bounds` or `n_max` (read from the data),
        and ``calibration='paper'``.
    RuntimeWarning
        When a condition of Lemma 6 fails on the data (`conditions_`), or labels are
        clipped to `target_bounds`.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from pysketch.rfm import DPRFMRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(50, 2))
    >>> y = np.sin(6 * X[:, 0]) + X[:, 1]
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", RuntimeWarning)  # the conditions of Lemma 6 fail here
    ...     reg = DPRFMRegressor(epsilon=1.0, bounds=([0, 0], [1, 1]), target_bounds=(-1, 2), n_max=50,
    ...                          random_state=0).fit(X, y)
    >>> reg.coef_.shape, reg.privacy_["guarantee"], reg.conditions_["eigen_ok"]  # N = 4 n_max
    ((200,), 'conditional', False)
    """

    _renamed_params = {"n_frequencies": "sketch_size", "length_scale": "kernel_scale"}
    _changing_defaults = {"epsilon": (1.0, None)}
    _parameter_constraints = {
        **_RFRegressorBase._shared_constraints,
        "n_max": [Interval(numbers.Integral, 1, None), None],
        "sketch_size": [Interval(numbers.Integral, 1, None), None],
        "eta": [Interval(numbers.Real, 0, 0.5, closed="neither")],
        "calibration": [Options(("lemma6", "paper"))],
        "solver": [Options(SOLVERS)],
        "n_iter": [Interval(numbers.Integral, 1, None), None],
    }

    def __init__(self, epsilon=CHANGING, delta=1e-5, *, bounds=None, target_bounds=None, n_max=None, sketch_size=None,
                 kernel_scale=None, eta=3 / 8, calibration="lemma6", solver="pinv", n_iter=None, accountant=None,
                 random_state=None, insecure_seed=None, n_frequencies=RENAMED, length_scale=RENAMED):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.n_max = n_max
        self.sketch_size = sketch_size
        self.kernel_scale = kernel_scale
        self.n_frequencies = n_frequencies
        self.length_scale = length_scale
        self.eta = eta
        self.calibration = calibration
        self.solver = solver
        self.n_iter = n_iter
        self.accountant = accountant
        self.random_state = random_state
        self.insecure_seed = insecure_seed

    neighbouring = "replace_or_remove"

    def fit(self, X, y):
        from . import published
        from .solvers import min_norm

        if is_lazy(X, y):
            raise TypeError(
                "DPRFMRegressor does not fit dask collections: Algorithm 1 interpolates all n training records at "
                "once (min-norm solution of the n x N system of random features, N >= n), which needs the whole "
                "feature matrix in one place and cannot be assembled from per-block sums. Use PrivateRFRegressor, "
                "whose sufficient statistics are sums over records (fitted block by block where the blocks live, "
                "released once, and private in the worst case), or compute X and y into memory first if they fit")
        self._validate_params()
        records = self._check_xy(X, y)
        X, y = records.X, records.y
        n, d = X.shape
        eta = self.eta
        def default_frequencies(n_max):  # the Marchenko-Pastur rule
            return math.ceil(n_max / (1.0 - math.sqrt(1.0 - 2.0 * eta)) ** 2)

        def fit_bytes(N):  # Omega, the (n, N) features (from the raw (n, 2N) cos and sin), n x n products
            return 24 * d * N + 24 * n * N + 16 * n * n

        what = f"for the features of {n} records of d = {d} coordinates"
        if self.n_max is None:
            if self._param("epsilon") is not None:
                warnings.warn("n_max not given: the number of records is read from the data, which is not "
                              "differentially private; pass a public n_max", PrivacyLeakWarning, stacklevel=2)
            n_max = n
        else:
            n_max = check_size(self.n_max, "n_max", nbytes=None if self._param("sketch_size") is not None else
                               lambda v: fit_bytes(default_frequencies(v)), what=what + " (N from n_max)")
            if n > n_max:
                raise ValueError(f"n_max = {n_max} must be >= the number of records ({n})")
        N = (default_frequencies(n_max) if self._param("sketch_size") is None
             else check_size(self._param("sketch_size"), self._param_label("sketch_size"), nbytes=fit_bytes,
                             what=what))
        lo, hi, tb = self._box(records)
        self.lower_, self.upper_, self.target_bounds_ = lo, hi, tb
        self.n_features_in_ = d
        self.features_ = RandomFeatures(d, N, length_scale=self._length_scale(d), layout="cos",
                                        random_state=self.random_state)
        c, B = 0.5 * (tb[0] + tb[1]), 0.5 * (tb[1] - tb[0])
        ys, _ = published.scale_labels(y - c, B, n_max)
        F = self.features_.transform(self._scaled(X))
        kw = {}
        if self.solver == "kaczmarz":
            kw = {"n_iter": self.n_iter, "random_state": self.random_state}
        coef, self.solver_info_ = min_norm(F, ys, self.solver, **kw)
        # a non-private diagnostic of the Lemma 6 conditions on this data (warns when one fails)
        self.conditions_ = published.check_conditions(F, N, n, eta, layout="cos")
        if self._param("epsilon") is None:
            self.privacy_ = {"epsilon": float("inf"), "delta": 0.0, "guarantee": "none (epsilon=None: no noise)"}
        else:
            coef, self.privacy_ = published.output_perturbation(
                coef, self._param("epsilon"), self.delta, n_frequencies=N, eta=eta, calibration=self.calibration,
                layout="cos", accountant=self.accountant, insecure_seed=self.insecure_seed)
        scale = B * math.sqrt(n_max)
        self.coef_ = coef * scale
        self.intercept_ = c
        return self
