"""The public data domain of the M2M method: a box, some of whose coordinates may be discrete.

M2M (Houssiau et al. 2022, Sec. 3.1) fits its linear models of the features over synthetic points
drawn uniformly from a domain the analyst fixes a priori (the principle of maximum entropy):
a box [lower, upper] of physical bounds, with discrete coordinates (a label in {0, 1}, a
count) drawn uniformly from their allowed values. The domain is public, like the feature
map: it is never read from the data.
"""

import numbers

import numpy as np

from .._checks import check_array, check_size
from .._random import as_generator

__all__ = ["Domain"]


class Domain:
    """A box [lower, upper] in R^d, optionally with discrete coordinates.

    Parameters
    ----------
    lower, upper : array_like of shape (d,)
        Finite public bounds with upper > lower.
    discrete : dict {column: values}, optional
        Coordinates that take only the given values (each within the column's bounds);
        uniform draws pick each value with equal probability.

    Raises
    ------
    ValueError
        If `lower` and `upper` are not two 1-D arrays of one length d >= 1, hold a value
        that is not finite, have ``upper <= lower`` in some coordinate or a width outside
        the range the unit box can divide by (about 9.3e-302 to 1.8e308); for a `discrete`
        key that is not a column index in [-d, d), a column with no finite value, or values
        outside the column's bounds. In `sample` and `unit`: a size that is not an int >= 1
        whose draws the machine's memory can hold (TypeError for a non-integer). In
        `contains`: an X whose rows do not have d columns.
    TypeError
        If `discrete` is not a dict.

    Examples
    --------
    >>> from pysketch.m2m import Domain
    >>> Domain([0, 0, 0], [1, 1, 1], discrete={2: [0, 1]}).sample(3, random_state=0).shape
    (3, 3)
    """

    def __init__(self, lower, upper, discrete=None):
        lo = np.array(lower, dtype=np.float64).reshape(-1)
        hi = np.array(upper, dtype=np.float64).reshape(-1)
        if lo.shape != hi.shape or lo.size < 1:
            raise ValueError(f"lower and upper must be two 1-D arrays of one length d >= 1, got shapes "
                             f"{np.shape(lower)} and {np.shape(upper)}")
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
            raise ValueError("lower and upper must be finite")
        if not (hi > lo).all():
            bad = int(np.flatnonzero(~(hi > lo))[0])
            raise ValueError(f"upper must be > lower in every coordinate; column {bad} has [{lo[bad]}, {hi[bad]}]")
        from .._checks import check_box_width

        check_box_width(lo, hi, "the bounds")  # the unit box divides by the widths: none subnormal or infinite
        self.lower, self.upper = lo, hi
        self.discrete = {}
        if discrete is not None:
            if not isinstance(discrete, dict):
                raise TypeError(f"discrete must be a dict {{column: values}}, got {type(discrete).__name__}")
            for col, values in discrete.items():
                if isinstance(col, (bool, np.bool_)) or not isinstance(col, numbers.Integral) or not (
                        -lo.size <= col < lo.size):
                    raise ValueError(f"discrete: column {col!r} is not a column index in [0, {lo.size})")
                col = int(col) % lo.size
                v = np.unique(np.asarray(values, dtype=np.float64).reshape(-1))
                if v.size < 1 or not np.isfinite(v).all():
                    raise ValueError(f"discrete: column {col} needs at least one finite value")
                if v[0] < lo[col] or v[-1] > hi[col]:
                    raise ValueError(f"discrete: the values of column {col} must lie in [{lo[col]}, {hi[col]}]")
                self.discrete[col] = v

    @classmethod
    def unit(cls, d):
        """The unit cube [0, 1]^d."""
        d = check_size(d, "d", nbytes=lambda v: v * 16, what="for the bounds")
        return cls(np.zeros(d), np.ones(d))

    @property
    def d(self):
        return self.lower.size

    @property
    def bounds(self):
        """(lower, upper)."""
        return self.lower.copy(), self.upper.copy()

    def sample(self, n, random_state=None):
        """n uniform draws, (n, d) float64: each continuous coordinate uniform on its
        interval, each discrete one uniform over its values, all independent."""
        n = check_size(n, "n", nbytes=lambda v: v * self.d * 16, what=f"for the draws of d = {self.d} coordinates")
        rng = as_generator(random_state)
        X = rng.uniform(self.lower, self.upper, size=(n, self.d))
        for col, values in self.discrete.items():
            X[:, col] = values[rng.integers(0, values.size, n)]
        return X

    def contains(self, X):
        """Whether each row of X lies in the domain (in the box, discrete coordinates at one
        of their values): a boolean (n,) array."""
        A = check_array(X, "X")
        if A.shape[1] != self.d:
            raise ValueError(f"X must have {self.d} columns, got shape {A.shape}")
        inside = ((A >= self.lower) & (A <= self.upper)).all(axis=1)
        for col, values in self.discrete.items():
            inside &= np.isin(A[:, col], values)
        return inside

    def __eq__(self, other):
        if not isinstance(other, Domain):
            return NotImplemented
        return (np.array_equal(self.lower, other.lower) and np.array_equal(self.upper, other.upper)
                and self.discrete.keys() == other.discrete.keys()
                and all(np.array_equal(v, other.discrete[k]) for k, v in self.discrete.items()))

    __hash__ = None

    def __repr__(self):
        extra = "" if not self.discrete else f", discrete columns {sorted(self.discrete)}"
        return f"Domain(d={self.d}{extra})"
