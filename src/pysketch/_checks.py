"""Argument checks shared by the Python modules (one wording everywhere)."""

import math
import numbers

import numpy as np


def check_int(value, name, minimum=1):
    """An int (Python or numpy; not bool, not float) >= minimum, returned as int.

    TypeError for anything that is not an integer, ValueError below the minimum; both
    messages name the argument and what is allowed."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= {minimum}; got {value!r} of type {type(value).__name__}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value}")
    return value


def check_positive(value, name, allow_none=False):
    """A finite real number > 0 (not bool), returned as float; None passes when allowed.
    ValueError naming the argument otherwise."""
    if value is None and allow_none:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not (
            math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def real_array(X, name):
    """X as an ndarray of real numbers (bool, int or float; any shape), without copying
    when it already is one. TypeError naming the argument for a masked array, complex
    numbers or anything that is not numeric."""
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a masked array")
    A = np.asarray(X)
    if A.dtype.kind == "c":
        raise TypeError(f"{name} must hold real numbers; got complex dtype {A.dtype}")
    if A.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers; got dtype {A.dtype}")
    return A
