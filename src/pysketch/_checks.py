"""Argument checks shared by the Python modules (one wording everywhere)."""

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
