"""Differential privacy for sketches: sensitivities, mechanisms, private sketches,
noise-to-signal tools and budget accounting (Chatalic et al. 2022).

Every release states its neighbouring relation ('add_remove': one record added or
removed, n private; 'replace': one record replaced, n public), the sensitivity it was
calibrated for, and (epsilon, delta). Noise is drawn from OS entropy by exact discrete
samplers (see :mod:`pysketch.privacy.mechanisms`), never from the operator's public seed,
and never stored.
"""

from .accountant import BudgetAccountant, BudgetError
from .mechanisms import (Gaussian, Laplace, analytic_gaussian_delta, analytic_gaussian_sigma,
                         classical_gaussian_sigma)
from .private_sketch import PrivacyRecord, PrivateSketch
from .budget import make_private
from .sensitivity import count_sensitivity, sum_sensitivity
from . import nsr

__all__ = [
    "BudgetAccountant", "BudgetError", "Gaussian", "Laplace", "PrivacyLeakWarning", "PrivacyRecord", "PrivateSketch",
    "analytic_gaussian_delta", "analytic_gaussian_sigma", "classical_gaussian_sigma", "count_sensitivity",
    "make_private", "nsr", "sum_sensitivity",
]


class PrivacyLeakWarning(RuntimeWarning):
    """Something about the data is read without privacy protection (bounds or a kernel
    scale computed from the records instead of given as public knowledge).

    The private estimators issue it when a fit reads a public quantity from the records;
    turn it into an error (``warnings.simplefilter("error", PrivacyLeakWarning)``) to refuse
    such fits.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from pysketch.privacy import PrivacyLeakWarning
    >>> from pysketch.rfm import PrivateRFRegressor
    >>> X = np.random.default_rng(0).uniform(size=(500, 3))
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = PrivateRFRegressor(epsilon=1.0, random_state=0).fit(X, X.sum(axis=1))  # no public bounds
    >>> sorted({w.category.__name__ for w in caught})
    ['PrivacyLeakWarning']
    """
