"""Privacy budget accounting by sequential composition.

Releases that each satisfy (epsilon_i, delta_i)-DP under the same neighbouring relation
together satisfy (sum epsilon_i, sum delta_i)-DP ([P] Lemmas 1 and 3; thesis Lemmas 7.5
and 7.15). A :class:`BudgetAccountant` holds a total budget and refuses any release
that would exceed it, before the release happens.

pysketch's estimators and :func:`~pysketch.privacy.make_private` take ``accountant=``:
one of these, or a ``diffprivlib.accountant.BudgetAccountant`` (anything with
``spend(epsilon, delta)`` that raises when the budget would be exceeded).
"""

import math
import numbers

import numpy as np

__all__ = ["BudgetAccountant", "BudgetError", "charge"]

_TOL = 1e-12  # relative slack for sums of floats (e.g. 0.1 + 0.2 spends of a 0.3 budget)


class BudgetError(ValueError):
    """The privacy budget would be exceeded.

    Raised by :meth:`BudgetAccountant.check` and :meth:`BudgetAccountant.spend` before
    anything is recorded (and so before any noise is drawn). It is a ValueError, so code
    that catches ValueError catches it too.

    Examples
    --------
    >>> from pysketch.privacy import BudgetAccountant, BudgetError
    >>> acc = BudgetAccountant(epsilon=1.0)
    >>> acc.spend(0.8)
    >>> try:
    ...     acc.spend(0.5)
    ... except BudgetError:
    ...     print("refused; spent", acc.spent)
    refused; spent (0.8, 0.0)
    """


def _nonneg(x, name, upper=None):
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real) or math.isnan(x) or x < 0:
        raise ValueError(f"{name} must be a non-negative number, got {x!r}")
    if upper is not None and x > upper:
        raise ValueError(f"{name} must be <= {upper}, got {x!r}")
    return float(x)


class BudgetAccountant:
    """A total (epsilon, delta) budget spent by sequential composition.

    Every spend is checked against what is left before it is recorded: the epsilons and
    the deltas of the spends add up (module docstring), with a relative slack of 1e-12 for
    the rounding of float sums. ``history`` lists the spends as (epsilon, delta, what).

    Parameters
    ----------
    epsilon : float >= 0, default inf
        The total epsilon; inf (the default) puts no limit on epsilon.
    delta : float in [0, 1], default 0
        The total delta; 0 allows only pure epsilon-DP releases.

    Raises
    ------
    ValueError
        When epsilon or delta is not a number >= 0 (NaN, a bool, a string), delta > 1,
        or (``check``, ``spend``) the epsilon of a spend is inf or makes the total
        overflow float64.
    BudgetError
        From ``check`` and ``spend``, when the spend would exceed the budget; nothing is
        recorded then.

    Examples
    --------
    >>> from pysketch.privacy import BudgetAccountant
    >>> acc = BudgetAccountant(1.0)
    >>> acc.spend(0.4); acc.spend(0.6)
    >>> acc.remaining()
    (0.0, 0.0)
    """

    def __init__(self, epsilon=float("inf"), delta=0.0):
        self.epsilon = _nonneg(epsilon, "epsilon")
        self.delta = _nonneg(delta, "delta", upper=1.0)
        self.history = []  # (epsilon, delta, what)

    @property
    def spent(self):
        """(epsilon, delta) spent so far."""
        return (math.fsum(e for e, _, _ in self.history), math.fsum(d for _, d, _ in self.history))

    def remaining(self):
        """(epsilon, delta) still available."""
        e, d = self.spent
        return (max(self.epsilon - e, 0.0), max(self.delta - d, 0.0))

    def check(self, epsilon, delta=0.0):
        """Raise BudgetError if spending (epsilon, delta) would exceed the budget."""
        epsilon = _nonneg(epsilon, "epsilon")
        if math.isinf(epsilon):  # the budget may be inf, a release's epsilon not (inf - inf: NaN remaining)
            raise ValueError("epsilon of a spend must be finite, got inf")
        delta = _nonneg(delta, "delta", upper=1.0)
        e, d = self.spent
        if math.isinf(e + epsilon):  # finite spends whose total overflows (1e308 twice, an infinite budget)
            raise ValueError(f"epsilon: spending {epsilon:.6g} after {e:.6g} overflows float64")
        if e + epsilon > self.epsilon * (1 + _TOL) or d + delta > self.delta * (1 + _TOL) + 1e-300:
            raise BudgetError(
                f"privacy budget exceeded: spending (epsilon={epsilon:.6g}, delta={delta:.3g}) after "
                f"(epsilon={e:.6g}, delta={d:.3g}) of the total (epsilon={self.epsilon:.6g}, delta={self.delta:.3g})"
            )
        return True

    def spend(self, epsilon, delta=0.0, what=""):
        """Record a release of (epsilon, delta), or raise BudgetError without recording."""
        self.check(epsilon, delta)
        self.history.append((float(epsilon), float(delta), str(what)))

    def __repr__(self):
        e, d = self.spent
        return f"BudgetAccountant(epsilon={self.epsilon:g}, delta={self.delta:g}; spent {e:.6g}, {d:.3g})"


def charge(accountant, epsilon, delta, what):
    """Spend (epsilon, delta) from `accountant` (ours, a diffprivlib one, or None).

    Parameters
    ----------
    accountant : BudgetAccountant, diffprivlib BudgetAccountant or None
        None spends nothing. A pysketch accountant records `what` with the spend; any
        other object needs a callable ``spend(epsilon, delta)`` (diffprivlib's), which is
        called without `what`.
    epsilon : float >= 0
    delta : float in [0, 1]
    what : str
        What the spend is for, kept in a pysketch accountant's ``history``.

    Raises
    ------
    TypeError
        When `accountant` is neither None nor has a callable ``spend``.
    BudgetError
        From a pysketch accountant, when the spend would exceed its budget (a diffprivlib
        accountant raises its own error).

    Examples
    --------
    >>> from pysketch.privacy import BudgetAccountant
    >>> from pysketch.privacy.accountant import charge
    >>> acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
    >>> charge(acc, 0.5, 1e-7, "a release")
    >>> acc.history
    [(0.5, 1e-07, 'a release')]
    >>> charge(None, 0.5, 0.0, "nothing is spent")
    """
    if accountant is None:
        return
    if isinstance(accountant, BudgetAccountant):
        accountant.spend(epsilon, delta, what)
        return
    spend = getattr(accountant, "spend", None)
    if not callable(spend):
        raise TypeError(f"accountant must be a BudgetAccountant (pysketch or diffprivlib) or None, "
                        f"got {type(accountant).__name__}")
    spend(epsilon, delta)
