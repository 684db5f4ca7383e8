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
import numbers
import warnings

from ._params import InstanceOf, check_parameter

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


def _stacklevel_outside_package():
    """The stacklevel of warnings.warn (called from this module's caller's callee) that
    points at the first frame outside pysketch: the user's line."""
    import os
    import sys

    root = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(root + os.sep):
        frame, level = frame.f_back, level + 1
    return level


#: The default of a parameter's old name, kept in __init__ for one version after a rename.
RENAMED = "deprecated"
#: The default of a parameter whose default changes in the next version (``_changing_defaults``).
CHANGING = "warn"
#: The declared constraint of ``budget_shares`` (its parts and shares: `_budget_shares`).
BUDGET_SHARES = [InstanceOf(dict, text="a dict {part: share}"), None]


class BaseEstimator:
    """get_params / set_params over the arguments of __init__ (scikit-learn's convention).

    The vocabulary every estimator shares (docs/parameters.md) is declared here:

    - ``_renamed_params``: {old name: new name}, or {old name: (new name, convert)} where
      `convert` maps the old value to the new one. The old name stays an argument of
      __init__ for one version with the default :data:`RENAMED`; a fit given it warns
      (FutureWarning) and uses its value under the new name (ValueError when both are
      given with different values).
    - ``_changing_defaults``: {name: (this version's default, the next one's)} of
      parameters whose default changes; their default is :data:`CHANGING`, and a fit not
      given them warns (FutureWarning) and uses this version's default.
    - ``_budget_parts``: {part name: default share} of the parts of a private fit whose
      shares of (epsilon, delta) the parameter ``budget_shares`` ({part: share}) may set;
      the rest of the budget goes to the fit's main part.
    - ``_parameter_constraints``: {name: [constraint, ...]} for every argument of
      __init__ but the old names (pysketch._params); `_validate_params` checks them all at
      the start of every entry point that fits (fit, fit_sketch, partial_fit, ...), then
      calls `_check_param_relations` for the rules that relate several parameters.
    """

    _estimator_type = None  # scikit-learn < 1.6 reads the kind of estimator here
    _parameter_constraints = {}
    _renamed_params = {}
    _budget_parts = {}
    _changing_defaults = {}

    def _resolve_renamed(self):
        """Read the values given under old parameter names (a FutureWarning each) and under
        a default that changes (``_changing_defaults``, a FutureWarning when not given) into
        the fit's view of its parameters (read with `_param`); called first by a fit's
        checks. The parameters themselves are left as given (scikit-learn's convention)."""
        defaults = inspect.signature(type(self).__init__).parameters
        resolved, given_as = {}, {}
        for name, (old_default, new_default) in self._changing_defaults.items():
            value = getattr(self, name)
            if isinstance(value, str) and value == CHANGING:
                warnings.warn(f"{type(self).__name__}: {name} is not given; its default is {old_default!r} in this "
                              f"version and will be {new_default!r} in the next, as for every pysketch estimator "
                              f"(docs/parameters.md): pass {name}={old_default!r} to keep this behaviour",
                              FutureWarning, stacklevel=_stacklevel_outside_package())
                resolved[name] = old_default
        for old, target in self._renamed_params.items():
            value = getattr(self, old, RENAMED)
            if isinstance(value, str) and value == RENAMED:
                continue
            new, convert = target if isinstance(target, tuple) else (target, None)
            warnings.warn(f"{type(self).__name__}: the parameter {old!r} is now {new!r} (docs/parameters.md); "
                          f"{old!r} will be removed in the next version", FutureWarning,
                          stacklevel=_stacklevel_outside_package())
            current = resolved.get(new, getattr(self, new))
            if convert is not None:  # a share: merged into budget_shares
                try:
                    given = convert(value)
                except TypeError:
                    given = {None: value}
                merged = dict(current or {})
                for part, share in given.items():
                    if isinstance(share, bool) or not isinstance(share, numbers.Real) or not 0 < share < 1:
                        raise ValueError(f"{old} must be a number in (0, 1), got {value!r}")
                    if part in merged and not _same(merged[part], share):
                        raise ValueError(f"{type(self).__name__}: {old}={value!r} and {new}={current!r} disagree "
                                         f"on the share of {part!r}: give {new} only")
                    merged[part] = share
                resolved[new] = merged
            elif _same(current, defaults[new].default) or _same(current, value):
                resolved[new] = value
            else:
                raise ValueError(f"{type(self).__name__}: give {new!r} or its old name {old!r}, not both")
            given_as[new] = old
        self._resolved, self._given_as = resolved, given_as

    def _validate_params(self):
        """Resolve the old names and changing defaults (`_resolve_renamed`), check every
        declared parameter (``_parameter_constraints``) under the name the user gave it,
        then the rules between parameters (`_check_param_relations`). Called first by every
        entry point that fits; __init__ checks nothing (scikit-learn's convention)."""
        self._resolve_renamed()
        for name, constraints in self._parameter_constraints.items():
            check_parameter(self._param_label(name), self._param(name), constraints)
        if self._budget_parts:
            self._budget_shares()  # the parts named and their shares (together below 1)
        self._check_param_relations()

    def _check_param_relations(self):
        """The checks that relate several parameters (none here; estimators add theirs).
        Checks against the data stay in the fit, where the data are known."""

    def _param(self, name):
        """The fit's value of parameter `name`: as given, or under its old name, or the
        current default of a changing one (after `_resolve_renamed`)."""
        if not hasattr(self, "_resolved"):  # read before a fit's checks (they resolve again at every fit)
            self._resolve_renamed()
        return self._resolved[name] if name in self._resolved else getattr(self, name)

    def _param_label(self, name):
        """The name the user gave parameter `name` under (its old name, if so): for errors."""
        return (getattr(self, "_given_as", None) or {}).get(name, name)

    def _budget_shares(self):
        """The shares of the parts in ``_budget_parts`` ({part: share}): the defaults with
        ``budget_shares`` over them. ValueError for an unknown part, a share outside (0, 1),
        or shares that leave nothing to the main part."""
        given = self._param("budget_shares") if hasattr(self, "budget_shares") else None
        if given is None:
            given = {}
        if not isinstance(given, dict):
            raise TypeError(f"budget_shares must be a dict {{part: share}} or None, got {type(given).__name__}")
        unknown = sorted(set(given) - set(self._budget_parts), key=str)
        if unknown:
            raise ValueError(f"budget_shares: {type(self).__name__} has no part {unknown[0]!r}; its parts with a "
                             f"share to set are {sorted(self._budget_parts)}")
        shares = {**self._budget_parts, **given}
        for part, share in shares.items():
            if isinstance(share, bool) or not isinstance(share, numbers.Real) or not 0 < share < 1:
                raise ValueError(f"budget_shares[{part!r}] must be a number in (0, 1), got {share!r}")
        if sum(shares.values()) >= 1:
            raise ValueError(f"budget_shares {shares} leave nothing of the budget to the fit's main part: their "
                             "sum must be below 1")
        return {part: float(share) for part, share in shares.items()}

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


__all__ = ["BUDGET_SHARES", "BaseEstimator", "ClusterMixin", "DensityMixin", "RegressorMixin", "TransformerMixin", "HAVE_SKLEARN",
           "not_fitted_error"]
