"""Estimator base classes that follow scikit-learn's conventions without importing it.

pysketch does not depend on scikit-learn, and importing `sklearn.base` costs about 1.6 s
and 90 MB of memory (it imports scipy.stats and pandas), which a streamed fit at
d = 2^15 cannot afford inside a 300 MB budget. So the estimators inherit from the small
classes below whether scikit-learn is installed or not. They keep its conventions:
hyper-parameters are the arguments of __init__, stored unchanged; `get_params` /
`set_params` read and write them (nested `step__param` names included); learned
attributes end with an underscore. scikit-learn's tools (clone, pipelines, grid search,
check_estimator) work with them through those methods and `__sklearn_tags__`, which
imports scikit-learn's tag classes only when scikit-learn itself asks for them.
"""

import inspect

try:  # whether scikit-learn can be imported, without importing it
    import importlib.util

    HAVE_SKLEARN = importlib.util.find_spec("sklearn") is not None
except (ImportError, ValueError):  # pragma: no cover
    HAVE_SKLEARN = False


def _same(value, default):
    """Whether a parameter still has its default (for the repr: arrays never compare)."""
    if value is default:
        return True
    if type(value) is not type(default) or hasattr(value, "__array__"):
        return False
    try:
        return bool(value == default)
    except Exception:  # noqa: BLE001 - a value whose == fails or is ambiguous differs
        return False


class BaseEstimator:
    """get_params / set_params over the arguments of __init__ (scikit-learn's convention)."""

    _estimator_type = None  # scikit-learn < 1.6 reads the kind of estimator here

    @classmethod
    def _get_param_names(cls):
        init = cls.__init__
        if init is object.__init__:
            return []
        params = inspect.signature(init).parameters.values()
        for p in params:
            if p.kind == p.VAR_POSITIONAL:
                raise RuntimeError(f"{cls.__name__}.__init__ takes *{p.name}: an estimator's parameters must be "
                                   "named in its signature")
        return sorted(p.name for p in params if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep=True):
        """The estimator's parameters by name; with deep=True, those of parameters that are
        estimators themselves too, as 'name__param'."""
        params = {}
        for name in self._get_param_names():
            value = getattr(self, name)
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                params.update((f"{name}__{key}", item) for key, item in value.get_params().items())
            params[name] = value
        return params

    def set_params(self, **params):
        """Set parameters by name ('name__param' sets a parameter of a parameter). Returns self."""
        if not params:
            return self
        valid = self.get_params(deep=True)
        nested = {}
        for key, value in params.items():
            name, sep, rest = key.partition("__")
            if name not in valid:
                raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; valid parameters: "
                                 f"{sorted(self._get_param_names())}")
            if sep:
                nested.setdefault(name, {})[rest] = value
            else:
                setattr(self, name, value)
                valid[name] = value
        for name, sub in nested.items():
            valid[name].set_params(**sub)
        return self

    def __repr__(self):
        """The class and the parameters that differ from their defaults (as scikit-learn prints)."""
        signature = inspect.signature(type(self).__init__).parameters
        shown = []
        for name, value in self.get_params(deep=False).items():
            default = signature[name].default
            if default is inspect.Parameter.empty or not _same(value, default):
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def __sklearn_tags__(self):
        """scikit-learn's tags (>= 1.6; called by scikit-learn only, so the import is free)."""
        from sklearn.utils import Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False), transformer_tags=None,
                    regressor_tags=None, classifier_tags=None)


class ClusterMixin:
    """fit_predict, and the clusterer's tags."""

    _estimator_type = "clusterer"

    def fit_predict(self, X, y=None, **kwargs):
        """fit(X), then the labels of X's records."""
        self.fit(X, **kwargs)
        return self.labels_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "clusterer"
        if tags.transformer_tags is not None:
            tags.transformer_tags.preserves_dtype = []
        return tags


class TransformerMixin:
    """fit_transform, and the transformer's tags."""

    def fit_transform(self, X, y=None, **kwargs):
        """fit(X) (fit(X, y) when y is given), then transform(X)."""
        fitted = self.fit(X, **kwargs) if y is None else self.fit(X, y, **kwargs)
        return fitted.transform(X)

    def __sklearn_tags__(self):
        from sklearn.utils import TransformerTags

        tags = super().__sklearn_tags__()
        tags.transformer_tags = TransformerTags()
        return tags


class RegressorMixin:
    """score as R^2, and the regressor's tags."""

    _estimator_type = "regressor"

    def score(self, X, y, sample_weight=None):
        """The coefficient of determination R^2 of predict(X) against y (weighted by
        sample_weight): 1 - sum w (y - pred)^2 / sum w (y - mean_w y)^2; 1.0 for a perfect
        prediction of a constant y, 0.0 for an imperfect one (as scikit-learn's r2_score)."""
        import numpy as np

        y = np.asarray(y, dtype=np.float64)
        w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        resid = float(np.sum(w * (y - self.predict(X)) ** 2))
        total = float(np.sum(w * (y - np.average(y, weights=w)) ** 2))
        if total > 0:
            return 1.0 - resid / total
        return 1.0 if resid == 0 else 0.0

    def __sklearn_tags__(self):
        from sklearn.utils import RegressorTags

        tags = super().__sklearn_tags__()
        tags.estimator_type = "regressor"
        tags.regressor_tags = RegressorTags()
        tags.target_tags.required = True
        return tags


class DensityMixin:
    """The density estimator's tags."""

    _estimator_type = "DensityEstimator"

    def score(self, X, y=None):
        return 0.0

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "density_estimator"
        return tags


def not_fitted_error(est):
    """scikit-learn's NotFittedError (ValueError without scikit-learn) for `est`."""
    try:
        from sklearn.exceptions import NotFittedError
    except ImportError:  # pragma: no cover
        NotFittedError = ValueError
    return NotFittedError(f"This {type(est).__name__} instance is not fitted yet. Call 'fit' with appropriate "
                          "arguments before using this estimator.")


__all__ = ["BaseEstimator", "ClusterMixin", "DensityMixin", "RegressorMixin", "TransformerMixin", "HAVE_SKLEARN",
           "not_fitted_error"]
