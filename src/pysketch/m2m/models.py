r"""Implicit M2M: models fitted on synthetic points re-weighted by a (private) sketch
(Houssiau et al. 2022, Sec. 3.5).

For a record x = (x_bar, y) and a loss L_theta(x) = l(F_theta(x_bar), y), the M2M estimate
of the empirical risk (1/n) sum_i L_theta(x_i) is sum_j w_j L_theta(x~_j) with the
f-independent weights w of :class:`~pysketch.m2m.M2M` (the same for every theta), so
minimising it over theta is an ordinary weighted fit on the synthetic points:

    theta* = argmin  C n^ sum_j w_j l(F_theta(x_bar~_j), y~_j) + 1/2 ||theta||^2,

n^ the released count: with weights of total mass ~1 this is scikit-learn's objective
(C times the summed loss over n records plus half the squared norm). Up to ~40 % of the
weights are negative in weakly regularised settings (measured): the weighted logistic loss
alone is then unbounded below along some directions, and the L2 term (on the intercept
too, with a small weight INTERCEPT_RIDGE) is what keeps the objective bounded (the loss grows at most linearly in
theta); ``negative_weights='clip'`` instead drops them (w -> max(w, 0), rescaled to the
same mass), a biased post-processing that can help at small epsilon.

Everything after the release is post-processing: the fitted model is as private as the
sketch (epsilon, delta and the neighbouring relation are in ``privacy_``).

``fit`` also takes X as a dask array or a data frame of numeric columns and y as a dask
array or series (or in memory) with the same number of rows: the records [x, y] are then a
lazy dask array with X's row blocks (:mod:`pysketch.records`), the box read from the
data when ``bounds`` are not given, the classes of y and the sketch are passes that run
block by block where the blocks live (:func:`pysketch.blocks.map_reduce`), and the sketch is
released once, merged. ``decision_function``, ``predict`` and ``predict_proba`` of a dask X
are lazy dask arrays.
"""

import numbers
import warnings

import numpy as np
from scipy import optimize

from .._base import BUDGET_SHARES, RENAMED, BaseEstimator, not_fitted_error
from .._checks import check_array, check_bounds
from .._random import as_generator
from ..blocks import column_bounds, map_blocks
from .._params import Bounds, InstanceOf, Interval, Options
from ..features import box_map_kinds, make_box_map
from ..privacy import make_private
from ..privacy.mechanisms import PRIVACY_PARAMETERS
from ..records import dask_inputs, dask_xy, is_lazy, join_target
from ..sketch import Sketch
from .core import DEFAULT_N_SYNTHETIC, LOSSES, M2M, REGULARIZATIONS
from .domain import Domain

__all__ = ["M2MLogisticRegression", "M2MLinearRegression"]

NEGATIVE_WEIGHTS = ("keep", "clip")
#: The L2 weight on the intercept (relative to the coefficients' 1): small, so that the
#: intercept is practically free (as in scikit-learn) yet the objective stays bounded when
#: negative weights give a class a negative estimated mass.
INTERCEPT_RIDGE = 1e-6


class _ImplicitM2M(BaseEstimator):
    """What the implicit M2M models share: the sketch of (x, y) records in a public box,
    its release, the weights, and the scaling of x to the unit box for the fit."""

    # the count's share of the release: 1 - 0.98 as [P] Sec. 4 (the sum's share, split, was
    # the parameter before budget_shares)
    _budget_parts = {"count": 0.02}
    _renamed_params = {"split": ("budget_shares", lambda split: {"count": 1 - split})}

    #: What both models declare (pysketch._params); the logistic model adds its L-BFGS
    #: limits, the linear one its target_bounds.
    _shared_constraints = {
        "bounds": [Bounds(), None],
        "budget_shares": BUDGET_SHARES,
        "sketch": [Options(box_map_kinds)],
        "sketch_params": [InstanceOf(dict), None],
        "C": [Interval(numbers.Real, 0, None, closed="neither")],
        "negative_weights": [Options(NEGATIVE_WEIGHTS)],
        "n_synthetic": [Interval(numbers.Integral, 1, None)],
        "regularization": [Options(REGULARIZATIONS), Interval(numbers.Real, 0, None)],
        "loss": [Options(LOSSES)],
        "random_state": ["random_state"],
        **PRIVACY_PARAMETERS,
    }

    def _x_bounds(self, X, stacklevel=2):
        d = X.shape[1]
        if self.bounds is None:
            warnings.warn("bounds not given: the box of X is read from the data, which is not differentially "
                          "private; pass public bounds=(lower, upper) for a private fit", RuntimeWarning,
                          stacklevel=stacklevel + 1)
            if is_lazy(X):  # one pass, block by block
                lo, hi = column_bounds(X)
            else:
                lo, hi = X.min(axis=0), X.max(axis=0)
            return check_bounds((lo, hi), d)
        return check_bounds(self.bounds, d)

    def _release(self, records, domain, rng):
        fm = make_box_map(self.sketch, domain.lower, domain.upper, random_state=rng, **(self.sketch_params or {}))
        # n_synthetic and the least squares over this map's features, refused before the release
        M2M(domain, n_synthetic=self.n_synthetic, regularization=self.regularization, loss=self.loss).check_map(fm)
        sk = fm.sketch(records)
        if self.epsilon is None:
            return sk
        return make_private(sk, self.epsilon, self.delta, neighbouring=self.neighbouring,
                            split=1 - self._budget_shares()["count"],
                            accountant=self.accountant)

    def _weights(self, sketch, domain, rng):
        """Checks, then the synthetic points and weights of `sketch` on `domain` (rng: the
        fit's generator, or None for a fresh one from random_state)."""
        if rng is None:  # fit_sketch called by the user (fit has checked its parameters)
            self._validate_params()
        if not isinstance(domain, Domain):
            raise TypeError(f"domain must be a pysketch.m2m.Domain, got {type(domain).__name__}")
        rng = as_generator(self.random_state) if rng is None else rng
        if not isinstance(sketch, Sketch):
            raise TypeError(f"sketch must be a pysketch Sketch or PrivateSketch, got {type(sketch).__name__}")
        m2m = M2M(domain, n_synthetic=self.n_synthetic, regularization=self.regularization, loss=self.loss,
                  random_state=rng).fit(sketch)
        w = m2m.weights_
        if self.negative_weights == "clip":
            pos = np.maximum(w, 0.0)
            w = pos * (m2m.mass_ / pos.sum()) if pos.sum() > 0 else pos
        self.m2m_ = m2m
        self.privacy_ = getattr(sketch, "privacy", None)
        self.count_ = m2m.count_
        return m2m.synthetic_, w

    def _unscale(self, theta, b, lo, hi):
        """Coefficients on the centred unit-box coordinates u = (x - lo) / (hi - lo) - 1/2
        -> on x."""
        coef = theta / (hi - lo)
        return coef, b - coef @ lo - 0.5 * theta.sum()

    def decision_function(self, X):
        if not hasattr(self, "coef_"):
            raise not_fitted_error(self)
        if is_lazy(X):
            A = dask_inputs(X, self.coef_.shape[-1], type(self).__name__)
            return map_blocks(A, _linear_block, self.coef_.reshape(-1), self.intercept_, drop_axis=1,
                                dtype=np.float64)
        X = check_array(X, "X")
        if X.shape[1] != self.coef_.shape[-1]:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.coef_.shape[-1]} features as input")
        return X @ self.coef_.reshape(-1) + self.intercept_


class M2MLogisticRegression(_ImplicitM2M):
    """Binary logistic regression fitted from a (private) sketch of (x, y) by implicit M2M.

    ``fit(X, y)`` sketches the records [x, y] (y as 0/1) with a box map ('real' RFF by
    default, or 'race', 'hist'), releases the sketch with (epsilon, delta)-DP when epsilon is
    given, and fits on the re-weighted synthetic points; ``fit_sketch(sketch, domain)`` fits
    from a sketch released elsewhere (its last coordinate is the 0/1 label).

    Parameters
    ----------
    bounds : (lower, upper) or (d, 2) array, optional
        Public box of X (without it the box is read from X, with a warning: not private).
    epsilon, delta, neighbouring, accountant
        The release (pysketch.privacy.make_private). epsilon=None: no noise.
    budget_shares : dict or None
        ``{'count': 0.02}`` (the default, as [P] Sec. 4): the count's share of epsilon under
        add/remove; the sum gets the rest.
    split : float in (0, 1)
        Deprecated: the sum's share, now ``budget_shares={'count': 1 - split}``
        (FutureWarning; removed in the next version).
    sketch : {'real', 'race', 'hist'}
        The map (`pysketch.features.make_box_map`).
    sketch_params : dict or None, default None
        Options of that map, passed to `pysketch.features.make_box_map` (e.g.
        ``{"n_frequencies": 30}`` for 'real', ``{"n_bins": 8}`` for 'hist').
    C : float
        Inverse regularization strength, as scikit-learn's (see the module docstring).
    negative_weights : {'keep', 'clip'}
    n_synthetic, regularization, loss
        Of the M2M weights (pysketch.m2m.M2M).
    max_iter, tol : L-BFGS limits.
    random_state : the public randomness (map, synthetic points); noise is never seeded.

    Raises
    ------
    ValueError
        In `fit` and `fit_sketch`: an epsilon or delta out of range; a `C` that is not a
        positive finite number; `negative_weights` not 'keep' or 'clip'; `budget_shares`
        with an unknown part or a share outside (0, 1) (TypeError if not a dict), or given
        with a `split` that disagrees; `bounds` that are not a box of X's d coordinates;
        a y that is not 1-D with one label per row of X or does not hold exactly 2
        classes; the M2M settings refused by :class:`~pysketch.m2m.M2M` (`n_synthetic`,
        `regularization`, `loss`, or features too large for the machine's memory, refused
        before the release); an unknown `sketch` or bad `sketch_params` (from
        `pysketch.features.make_box_map`); an accountant whose budget would be exceeded
        (pysketch.privacy.BudgetError). In `decision_function`, `predict` and
        `predict_proba`: an X whose number of columns differs from the fit's.
    TypeError
        `sketch_params` that is not a dict or None; in `fit_sketch`, a `domain` that is not
        a :class:`~pysketch.m2m.Domain` or a sketch that is not a pysketch Sketch.
    sklearn.exceptions.NotFittedError
        Predictions before a fit (a ValueError when scikit-learn is not installed).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.m2m import M2MLogisticRegression
    >>> X = np.random.default_rng(0).uniform(size=(5000, 2))
    >>> y = (X[:, 0] + X[:, 1] > 1).astype(int)
    >>> clf = M2MLogisticRegression(bounds=([0, 0], [1, 1]), epsilon=1.0, sketch_params={"n_frequencies": 30},
    ...                             n_synthetic=2000, random_state=0).fit(X, y)
    >>> clf.coef_.shape, clf.predict_proba(X[:3]).shape, clf.privacy_.epsilon
    ((1, 2), (3, 2), 1.0)
    """

    _estimator_type = "classifier"
    _parameter_constraints = {
        **_ImplicitM2M._shared_constraints,
        "max_iter": [Interval(numbers.Integral, 0, None)],
        "tol": [Interval(numbers.Real, 0, None)],
    }

    def __init__(self, *, bounds=None, epsilon=None, delta=0.0, neighbouring="add_remove", budget_shares=None,
                 sketch="real", sketch_params=None, C=1.0, negative_weights="keep", n_synthetic=DEFAULT_N_SYNTHETIC,
                 regularization="eq5", loss="sum", max_iter=1000, tol=1e-8, random_state=None, accountant=None,
                 split=RENAMED):
        self.bounds = bounds
        self.epsilon = epsilon
        self.delta = delta
        self.neighbouring = neighbouring
        self.budget_shares = budget_shares
        self.split = split
        self.sketch = sketch
        self.sketch_params = sketch_params
        self.C = C
        self.negative_weights = negative_weights
        self.n_synthetic = n_synthetic
        self.regularization = regularization
        self.loss = loss
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.accountant = accountant

    def fit(self, X, y):
        """Sketch [X, y], release it (if epsilon) and fit. y: two classes."""
        self._validate_params()
        if is_lazy(X, y):
            return self._fit_dask(X, y)
        X = check_array(X, "X")
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(f"y must be 1-D with one label per row of X ({X.shape[0]}), got shape {y.shape}")
        classes = np.unique(y)
        if classes.size != 2:
            raise ValueError(f"M2MLogisticRegression is binary: y must hold exactly 2 classes, got {classes.size}")
        lo, hi = self._x_bounds(X)
        d = X.shape[1]
        domain = Domain(np.append(lo, 0.0), np.append(hi, 1.0), discrete={d: [0.0, 1.0]})
        records = np.column_stack([X, (y == classes[1]).astype(np.float64)])
        rng = as_generator(self.random_state)
        sk = self._release(records, domain, rng)
        self.fit_sketch(sk, domain, _rng=rng)
        self.classes_ = classes
        return self

    def _fit_dask(self, X, y):
        """fit of dask collections: passes for the classes of y and (without bounds) the box
        of X, then the sketch of [x, 1{y = classes[1]}], all blockwise; one release."""
        import dask.array as da

        A, Y = dask_xy(X, y)
        if Y.ndim != 1:
            raise ValueError(f"y must be 1-D with one label per row of X ({A.shape[0]}), got shape {Y.shape}")
        # at most 3 distinct labels of each block come back: enough to tell 2 classes from more
        few = Y.map_blocks(_first_labels, dtype=Y.dtype, chunks=((np.nan,) * Y.numblocks[0],))
        classes = np.unique(da.unique(few).compute())
        if classes.size != 2:
            got = "at least 3" if classes.size > 2 else str(classes.size)
            raise ValueError(f"M2MLogisticRegression is binary: y must hold exactly 2 classes, got {got}")
        lo, hi = self._x_bounds(A, 3)
        d = A.shape[1]
        domain = Domain(np.append(lo, 0.0), np.append(hi, 1.0), discrete={d: [0.0, 1.0]})
        records = join_target(A, Y.map_blocks(_indicator, classes[1], dtype=np.float64))
        rng = as_generator(self.random_state)
        sk = self._release(records, domain, rng)
        self.fit_sketch(sk, domain, _rng=rng)
        self.classes_ = classes
        return self

    def fit_sketch(self, sketch, domain, *, _rng=None):
        """Fit from a sketch of records [x, y] (y in {0, 1}, the last coordinate) whose
        public domain is `domain` (a Domain with the label column discrete {0, 1})."""
        Z, w = self._weights(sketch, domain, _rng)
        lo, hi = domain.lower[:-1], domain.upper[:-1]
        U = (Z[:, :-1] - lo) / (hi - lo) - 0.5  # the unit box, centred
        y = Z[:, -1]
        c = self.C * self.count_ * w
        p = U.shape[1]
        ridge = np.append(np.ones(p), INTERCEPT_RIDGE)

        def fun(params):
            theta, b = params[:p], params[p]
            t = U @ theta + b
            # logistic loss log(1 + e^t) - y t, stably
            loss = np.logaddexp(0.0, t) - y * t
            r = c * (_sigmoid(t) - y)
            value = c @ loss + 0.5 * (ridge * params) @ params
            grad = np.append(U.T @ r, r.sum()) + ridge * params
            return value, grad

        res = optimize.minimize(fun, np.zeros(p + 1), jac=True, method="L-BFGS-B",
                                options={"maxiter": self.max_iter, "gtol": self.tol, "ftol": 1e-15})
        self.n_iter_ = int(res.nit)
        coef, b = self._unscale(res.x[:p], res.x[p], lo, hi)
        self.coef_ = coef[None, :]
        self.intercept_ = np.array([b])
        if not hasattr(self, "classes_") or self.classes_.size != 2:
            self.classes_ = np.array([0, 1])
        self.n_features_in_ = p
        return self

    def predict_proba(self, X):
        t = self.decision_function(X)
        if is_lazy(t):
            return t.map_blocks(_proba_block, new_axis=1, chunks=(t.chunks[0], (2,)), dtype=np.float64)
        return _proba_block(t)

    def predict(self, X):
        scores = self.decision_function(X)  # NotFittedError first
        if is_lazy(scores):
            return scores.map_blocks(_class_block, self.classes_, dtype=self.classes_.dtype)
        return self.classes_[(scores > 0).astype(int)]

    def score(self, X, y):
        """Mean accuracy on (X, y)."""
        return float(np.mean(self.predict(X) == np.asarray(y)))


class M2MLinearRegression(_ImplicitM2M):
    """Least-squares (ridge) regression fitted from a (private) sketch of (x, y) by implicit
    M2M: theta* = argmin C n^ sum_j w_j (y~_j - x~_j theta - b)^2 + 1/2 ||(theta, b)||^2 on
    the unit-box coordinates, a linear system. With negative weights its matrix may be
    indefinite: its eigenvalues are then floored at the regularization's (a warning says
    how many), which keeps the solution bounded.

    Parameters
    ----------
    bounds : (lower, upper) or (d, 2) array, optional
        Public box of X (without it the box is read from X, with a RuntimeWarning: not
        private).
    target_bounds : (lower, upper), optional
        The public range of y, the last coordinate of the records' domain. Without it the
        range is read from y, with a RuntimeWarning (not private), with or without epsilon.
    epsilon, delta, neighbouring, accountant
        The release (pysketch.privacy.make_private). epsilon=None: no noise.
    budget_shares : dict or None
        ``{'count': 0.02}`` (the default, as [P] Sec. 4): the count's share of epsilon under
        add/remove; the sum gets the rest.
    sketch : {'real', 'race', 'hist'}, default 'real'
        The map (`pysketch.features.make_box_map`).
    sketch_params : dict or None, default None
        Options of that map, passed to `pysketch.features.make_box_map` (e.g.
        ``{"n_frequencies": 30}`` for 'real', ``{"n_bins": 8}`` for 'hist').
    C : float > 0, default 1.0
        Inverse regularization strength (the weighted squared loss is multiplied by C n^).
    negative_weights : {'keep', 'clip'}, default 'keep'
        Keep the negative M2M weights, or drop them (rescaled to the same mass).
    n_synthetic, regularization, loss
        Of the M2M weights (pysketch.m2m.M2M).
    random_state : None, int or Generator
        The public randomness (map, synthetic points); the noise is never seeded.
    split : float in (0, 1)
        Deprecated: the sum's share, now ``budget_shares={'count': 1 - split}``
        (FutureWarning; removed in the next version).
    y_bounds : (lower, upper)
        Deprecated name of `target_bounds` (FutureWarning; removed in the next version).

    Raises
    ------
    ValueError
        In `fit` and `fit_sketch`: as :class:`M2MLogisticRegression` (epsilon, delta, C,
        negative_weights, budget_shares, bounds, the M2M settings, the map, the
        accountant), and a y that is not finite with one value per row of X, or
        `target_bounds` that are not a finite (lower, upper) with lower <= upper (and
        y_bounds given with a different value). In `predict`: an X whose number of
        columns differs from the fit's.
    TypeError
        As :class:`M2MLogisticRegression`.
    sklearn.exceptions.NotFittedError
        Predictions before a fit (a ValueError when scikit-learn is not installed).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.m2m import M2MLinearRegression
    >>> X = np.random.default_rng(0).uniform(size=(5000, 2))
    >>> y = 2 * X[:, 0] - X[:, 1]
    >>> reg = M2MLinearRegression(bounds=([0, 0], [1, 1]), target_bounds=(-1, 2), epsilon=1.0,
    ...                           sketch_params={"n_frequencies": 30}, n_synthetic=2000, random_state=0).fit(X, y)
    >>> reg.coef_.shape, reg.predict(X[:3]).shape
    ((2,), (3,))
    """

    _estimator_type = "regressor"

    _renamed_params = {**_ImplicitM2M._renamed_params, "y_bounds": "target_bounds"}
    _parameter_constraints = {**_ImplicitM2M._shared_constraints, "target_bounds": [Bounds(), None]}

    def __init__(self, *, bounds=None, target_bounds=None, epsilon=None, delta=0.0, neighbouring="add_remove",
                 budget_shares=None, sketch="real", sketch_params=None, C=1.0, negative_weights="keep",
                 n_synthetic=DEFAULT_N_SYNTHETIC, regularization="eq5", loss="sum", random_state=None, accountant=None,
                 split=RENAMED, y_bounds=RENAMED):
        self.bounds = bounds
        self.target_bounds = target_bounds
        self.y_bounds = y_bounds
        self.epsilon = epsilon
        self.delta = delta
        self.neighbouring = neighbouring
        self.budget_shares = budget_shares
        self.split = split
        self.sketch = sketch
        self.sketch_params = sketch_params
        self.C = C
        self.negative_weights = negative_weights
        self.n_synthetic = n_synthetic
        self.regularization = regularization
        self.loss = loss
        self.random_state = random_state
        self.accountant = accountant

    def fit(self, X, y):
        """Sketch [X, y], release it (if epsilon) and fit."""
        self._validate_params()
        if is_lazy(X, y):
            return self._fit_dask(X, y)
        X = check_array(X, "X")
        y = np.asarray(y, dtype=np.float64).reshape(-1)
        if y.shape[0] != X.shape[0] or not np.isfinite(y).all():
            raise ValueError(f"y must be finite, one value per row of X ({X.shape[0]}), got shape {y.shape}")
        lo, hi = self._x_bounds(X)
        if self._param("target_bounds") is None:
            self._warn_target_bounds(2)
            ylo, yhi = check_bounds((y.min(), y.max()), 1)
        else:
            ylo, yhi = check_bounds(self._param("target_bounds"), 1)
        domain = Domain(np.append(lo, ylo), np.append(hi, yhi))
        rng = as_generator(self.random_state)
        sk = self._release(np.column_stack([X, y]), domain, rng)
        return self.fit_sketch(sk, domain, _rng=rng)

    def _warn_target_bounds(self, stacklevel):
        warnings.warn("target_bounds not given: the range of y is read from the data, which is not differentially "
                      "private; pass public target_bounds=(lower, upper)", RuntimeWarning, stacklevel=stacklevel + 1)

    def _fit_dask(self, X, y):
        """fit of dask collections: the records [x, y] joined lazily; without bounds or
        target_bounds one pass for the box of the records, then the sketch, blockwise; one release."""
        A, Y = dask_xy(X, y)
        if Y.ndim == 2 and Y.shape[1] == 1:
            Y = Y[:, 0]
        if Y.ndim != 1 or Y.dtype.kind not in "biuf":
            raise ValueError(f"y must be finite numbers, one value per row of X ({A.shape[0]}), got shape "
                             f"{Y.shape} and dtype {Y.dtype}")
        records = join_target(A, Y)
        d = A.shape[1]
        if self.bounds is None or self._param("target_bounds") is None:
            if self.bounds is None:
                warnings.warn("bounds not given: the box of X is read from the data, which is not differentially "
                              "private; pass public bounds=(lower, upper) for a private fit", RuntimeWarning,
                              stacklevel=3)
            if self._param("target_bounds") is None:
                self._warn_target_bounds(3)
            data_lo, data_hi = column_bounds(records)  # one pass for both ranges
        lo, hi = check_bounds(((data_lo[:d], data_hi[:d]) if self.bounds is None else self.bounds), d)
        target = self._param("target_bounds")
        ylo, yhi = check_bounds(((data_lo[d], data_hi[d]) if target is None else target), 1)
        domain = Domain(np.append(lo, ylo), np.append(hi, yhi))
        rng = as_generator(self.random_state)
        sk = self._release(records, domain, rng)
        return self.fit_sketch(sk, domain, _rng=rng)

    def fit_sketch(self, sketch, domain, *, _rng=None):
        """Fit from a sketch of records [x, y] (y the last coordinate) on `domain`."""
        Z, w = self._weights(sketch, domain, _rng)
        lo, hi = domain.lower[:-1], domain.upper[:-1]
        A = np.column_stack([(Z[:, :-1] - lo) / (hi - lo) - 0.5, np.ones(Z.shape[0])])
        c = self.C * self.count_ * w
        H = (A * c[:, None]).T @ A
        H = (H + H.T) / 2 + np.diag(np.append(np.ones(A.shape[1] - 1), INTERCEPT_RIDGE))
        g = A.T @ (c * Z[:, -1])
        vals, vecs = np.linalg.eigh(H)
        low = vals < INTERCEPT_RIDGE
        if low.any():
            warnings.warn(f"{int(low.sum())} direction(s) of the weighted least-squares matrix had negative curvature "
                          "(negative M2M weights); floored at the regularization", RuntimeWarning, stacklevel=2)
        sol = vecs @ ((vecs.T @ g) / np.maximum(vals, INTERCEPT_RIDGE))
        p = A.shape[1] - 1
        self.coef_, self.intercept_ = self._unscale(sol[:p], sol[p], lo, hi)
        self.n_features_in_ = p
        return self

    def predict(self, X):
        return self.decision_function(X)

    def score(self, X, y):
        """R^2 on (X, y)."""
        y = np.asarray(y, dtype=np.float64)
        r = y - self.predict(X)
        return float(1.0 - (r @ r) / np.sum((y - y.mean()) ** 2))


def _linear_block(block, coef, intercept):
    """x coef + intercept of one block of a dask X."""
    return np.asarray(block, dtype=np.float64) @ coef + intercept


def _proba_block(t):
    p1 = _sigmoid(t)
    return np.column_stack([1.0 - p1, p1])


def _class_block(scores, classes):
    return classes[(scores > 0).astype(int)]


def _first_labels(y):
    """At most the 3 smallest distinct labels of a block."""
    return np.unique(y)[:3]


def _indicator(y, positive):
    return (y == positive).astype(np.float64)


def _sigmoid(t):
    out = np.empty_like(t)
    pos = t >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-t[pos]))
    e = np.exp(t[~pos])
    out[~pos] = e / (1.0 + e)
    return out
