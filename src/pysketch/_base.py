"""Estimator base classes: scikit-learn's when it is installed, else minimal equivalents.

pysketch does not depend on scikit-learn. With it installed, the estimators inherit from
sklearn.base (so that clone, pipelines, grid search and check_estimator work); without it,
they get the same conventions from the small classes below: hyper-parameters are the
arguments of __init__, stored unchanged; get_params / set_params read and write them;
learned attributes end with an underscore.
"""

import inspect

try:  # pragma: no cover - exercised in environments with scikit-learn
    from sklearn.base import BaseEstimator, ClusterMixin, DensityMixin, RegressorMixin, TransformerMixin

    HAVE_SKLEARN = True
except ImportError:  # pragma: no cover - exercised without scikit-learn
    HAVE_SKLEARN = False

    class BaseEstimator:
        """get_params / set_params over the arguments of __init__ (scikit-learn's convention)."""

        @classmethod
        def _get_param_names(cls):
            sig = inspect.signature(cls.__init__)
            return sorted(p.name for p in sig.parameters.values() if p.name != "self" and p.kind != p.VAR_KEYWORD)

        def get_params(self, deep=True):
            return {name: getattr(self, name) for name in self._get_param_names()}

        def set_params(self, **params):
            valid = self._get_param_names()
            for name, value in params.items():
                if name not in valid:
                    raise ValueError(f"invalid parameter {name!r} for {type(self).__name__}; valid: {valid}")
                setattr(self, name, value)
            return self

        def __repr__(self):
            args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
            return f"{type(self).__name__}({args})"

    class ClusterMixin:
        _estimator_type = "clusterer"

        def fit_predict(self, X, y=None, **kwargs):
            self.fit(X, **kwargs)
            return self.labels_

    class TransformerMixin:
        def fit_transform(self, X, y=None, **kwargs):
            return self.fit(X, **kwargs).transform(X)

    class RegressorMixin:
        _estimator_type = "regressor"

        def score(self, X, y, sample_weight=None):
            """The coefficient of determination R^2 of the predictions."""
            import numpy as np

            y = np.asarray(y, dtype=np.float64)
            w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
            resid = np.sum(w * (y - self.predict(X)) ** 2)
            total = np.sum(w * (y - np.average(y, weights=w)) ** 2)
            return 1.0 - resid / total if total > 0 else 0.0

    class DensityMixin:
        _estimator_type = "DensityEstimator"

        def score(self, X, y=None):
            return 0.0




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
