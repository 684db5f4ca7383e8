"""The constraints an estimator declares on its parameters, checked in one place.

Each estimator class declares ``_parameter_constraints = {name: [constraint, ...]}``, one
entry for every argument of its __init__ (old names in ``_renamed_params`` excepted: their
value is checked under the new name). A value is valid when one constraint of its list
accepts it. `BaseEstimator._validate_params` (pysketch._base) checks every entry at the
start of a fit with `check_parameter`.

A constraint is one of the objects below, or a shorthand that `as_constraint` reads:
``None`` (the value None), ``"boolean"`` (True or False, numpy's bool too),
``"random_state"`` (what `pysketch._random.as_generator` takes) or a class (an instance of
it). Bools are never numbers here: True is not a valid int or float parameter.

The one message: ``"{name} must be {what is allowed}; got {value!r}"``, the name as the
user wrote it (an old name, when given so). TypeError when the value's type fits none of
the constraints (a float or a bool where an int is expected, a list where a dict is);
ValueError when its type fits but its value does not (out of range, NaN, not one of the
options: a value compared with options is a wrong value whatever its type).
"""

import math
import numbers

import numpy as np


def _is_bool(value):
    return isinstance(value, (bool, np.bool_))


def _number(x):
    """x for a message: an int as it is, a float in at most 6 significant digits."""
    if isinstance(x, numbers.Integral):
        return str(int(x))
    return f"{float(x):.6g}"


def _short_repr(value, limit=80):
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


class Constraint:
    """What every constraint answers: whether it accepts a value, whether the value is of
    a type it is about (for TypeError against ValueError), and how to say what it allows."""

    #: A full message template ({label}, {value}, {allowed}) used instead of the shared one
    #: (only where an existing wording must be kept).
    message = None

    def accepts(self, value):
        raise NotImplementedError

    def fits_type(self, value):
        """Whether `value` has a type this constraint is about (a rejected value of such a
        type is a wrong value, ValueError; of no such type, a wrong type, TypeError)."""
        return self.accepts(value)

    def parts(self, alone):
        """The phrases that say what is allowed (joined by the list as 'a, b or c');
        `alone`: whether this is the only constraint of its list."""
        raise NotImplementedError

    def invalid_examples(self):
        """Values just outside this constraint (for the tests: each list's invalid values
        are those that no constraint of the list accepts)."""
        return []


class Interval(Constraint):
    """A number of `kind` (numbers.Integral or numbers.Real; never a bool) between `low`
    and `high` (None: no bound), the bounds included as `closed` says: 'both', 'left',
    'right' or 'neither'. A Real is finite too (NaN and infinities are refused); an int is
    any size (size checks against memory stay with the estimators)."""

    def __init__(self, kind, low=None, high=None, *, closed="both"):
        if kind not in (numbers.Integral, numbers.Real):
            raise ValueError(f"kind must be numbers.Integral or numbers.Real, got {kind!r}")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be 'both', 'left', 'right' or 'neither', got {closed!r}")
        self.kind, self.low, self.high, self.closed = kind, low, high, closed

    def fits_type(self, value):
        return not _is_bool(value) and isinstance(value, self.kind)

    def accepts(self, value):
        if not self.fits_type(value):
            return False
        if self.kind is numbers.Real:
            try:
                if not math.isfinite(float(value)):
                    return False
            except OverflowError:  # an int beyond float64
                return False
        if self.low is not None:
            if value < self.low or (value == self.low and self.closed in ("right", "neither")):
                return False
        if self.high is not None:
            if value > self.high or (value == self.high and self.closed in ("left", "neither")):
                return False
        return True

    def parts(self, alone):
        lo_in = self.closed in ("both", "left")
        hi_in = self.closed in ("both", "right")
        if self.kind is numbers.Integral:
            noun = "an int"
        elif self.low is not None and self.high is not None:
            noun = "a number"
        else:
            noun = "a finite number"
        if self.low is not None and self.high is not None:
            return [f"{noun} in {'[' if lo_in else '('}{_number(self.low)}, {_number(self.high)}{']' if hi_in else ')'}"]
        if self.low is not None:
            if self.low == 0 and not lo_in and self.kind is numbers.Real:
                return ["a positive finite number"]
            return [f"{noun} {'>=' if lo_in else '>'} {_number(self.low)}"]
        if self.high is not None:
            return [f"{noun} {'<=' if hi_in else '<'} {_number(self.high)}"]
        return [noun]

    def invalid_examples(self):
        out = [True]
        if self.low is not None:
            out.append(self.low - 1 if self.closed in ("both", "left") else self.low)
        if self.high is not None:
            out.append(self.high + 1 if self.closed in ("both", "right") else self.high)
        if self.kind is numbers.Integral:
            out.append((self.low if self.low is not None else 0) + 1.5)  # a float: a wrong type
        else:
            out += [float("nan"), float("inf")]
        return out


class Options(Constraint):
    """One of the given values (strings compared as strings; others by type and value).
    `values` may be a function returning them, read at every check (a registry that
    grows); `text`, a string or a function of the values, says what is allowed instead
    of the list. Listed as "one of (...)" when alone or when more than 3, else inline
    ("'auto', 'sketch' or a positive finite number")."""

    def __init__(self, values, *, text=None, message=None):
        self._values, self.text, self.message = values, text, message

    @property
    def values(self):
        return tuple(self._values() if callable(self._values) else self._values)

    def fits_type(self, value):
        return True

    def accepts(self, value):
        for option in self.values:
            if isinstance(option, str):
                if isinstance(value, str) and value == option:
                    return True
            elif value is option or (type(value) is type(option) and not hasattr(value, "__array__")
                                     and value == option):
                return True
        return False

    def parts(self, alone):
        values = self.values
        if self.text is not None:
            return [self.text(values) if callable(self.text) else self.text]
        if alone or len(values) > 3:
            return [f"one of {values!r}"]
        return [repr(v) for v in values]

    def invalid_examples(self):
        return ["__not_an_option__"]


class InstanceOf(Constraint):
    """An instance of one of `types`; `text` names what is allowed ("a dict")."""

    def __init__(self, *types, text=None):
        self.types = types
        self.text = text or " or ".join(f"a {t.__name__}" for t in types)

    def accepts(self, value):
        return isinstance(value, self.types)

    def parts(self, alone):
        return [self.text]

    def invalid_examples(self):
        return [object()]


class HasMethods(Constraint):
    """An object with callable attributes `names` (duck typing: a diffprivlib accountant
    as well as pysketch's); `text` names what is allowed."""

    def __init__(self, *names, text=None):
        self.names = names
        self.text = text or "an object with method(s) " + ", ".join(names)

    def accepts(self, value):
        return all(callable(getattr(value, n, None)) for n in self.names)

    def parts(self, alone):
        return [self.text]

    def invalid_examples(self):
        return [object()]


class NoneValue(Constraint):
    """The value None."""

    def accepts(self, value):
        return value is None

    def parts(self, alone):
        return ["None"]

    def invalid_examples(self):
        return []


class Boolean(Constraint):
    """True or False (numpy's bool too); 0 and 1 are not."""

    def accepts(self, value):
        return _is_bool(value)

    def parts(self, alone):
        return ["True or False"]

    def invalid_examples(self):
        return [1, "yes"]


class RandomState(Constraint):
    """What pysketch._random.as_generator takes: None, an int >= 0, a SeedSequence, a
    Generator or a legacy RandomState."""

    _TYPES = (np.random.Generator, np.random.SeedSequence, np.random.RandomState)

    def fits_type(self, value):
        return value is None or isinstance(value, self._TYPES) or (
            isinstance(value, numbers.Integral) and not _is_bool(value))

    def accepts(self, value):
        return self.fits_type(value) and not (isinstance(value, numbers.Integral) and value < 0)

    def parts(self, alone):
        return ["None, an int >= 0, a SeedSequence, a Generator or a RandomState"]

    def invalid_examples(self):
        return [-1, 1.5, True, "0"]


class DType(Constraint):
    """What numpy reads as one of `dtypes` (a name, a type or a dtype; None too, which numpy
    reads as float64)."""

    def __init__(self, *dtypes):
        self.dtypes = tuple(np.dtype(d) for d in dtypes)

    def fits_type(self, value):
        return True

    def accepts(self, value):
        if _is_bool(value) or isinstance(value, numbers.Number):
            return False  # np.dtype(0) fails, np.dtype(float) is float64: a number is no dtype
        try:
            return np.dtype(value) in self.dtypes
        except (TypeError, ValueError):
            return False

    def parts(self, alone):
        return [" or ".join(str(d) for d in self.dtypes)]

    def invalid_examples(self):
        return ["float16", 0]


def _float_array(value):
    """value as a float64 ndarray, or None when numpy cannot read it as one."""
    if _is_bool(value) or isinstance(value, (str, bytes, dict)):
        return None
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None


class Array(Constraint):
    """An array-like of real numbers of `shape` (None: any length on that axis), finite,
    and each above 0 when `positive`; `text` names it."""

    def __init__(self, shape, *, positive=False, text=None):
        self.shape, self.positive, self.text = tuple(shape), positive, text

    def fits_type(self, value):
        return _float_array(value) is not None

    def accepts(self, value):
        a = _float_array(value)
        if a is None or a.ndim != len(self.shape):
            return False
        if any(want is not None and got != want for got, want in zip(a.shape, self.shape)):
            return False
        return bool(np.isfinite(a).all() and (not self.positive or (a > 0).all()))

    def parts(self, alone):
        if self.text:
            return [self.text]
        shape = "(" + ", ".join("n" if s is None else str(s) for s in self.shape) + ("," if len(self.shape) == 1 else "") + ")"
        return [f"an array of {'positive ' if self.positive else ''}finite numbers of shape {shape}"]

    def invalid_examples(self):
        bad = [float("nan")] * (self.shape[0] or 2) if len(self.shape) == 1 else [[float("nan")]]
        return ["abc", bad]


class Bounds(Constraint):
    """A box as `pysketch._checks.check_bounds` reads it: a tuple (lower, upper) of
    numbers or 1-D arrays, or an array-like of shape (d, 2). Only the form is checked
    here; the length against the data's d, finiteness and lower <= upper are checked with
    the data (check_bounds)."""

    def fits_type(self, value):
        if isinstance(value, tuple) and len(value) == 2:
            return all(_float_array(v) is not None for v in value)
        return _float_array(value) is not None

    def accepts(self, value):
        if isinstance(value, tuple) and len(value) == 2:
            arrays = [_float_array(v) for v in value]
            return all(a is not None and a.ndim <= 1 for a in arrays)
        a = _float_array(value)
        return a is not None and a.ndim == 2 and a.shape[1] == 2

    def parts(self, alone):
        return ["(lower, upper) or an array of shape (d, 2)"]

    def invalid_examples(self):
        return ["box", np.zeros((2, 3))]


_SHORTHANDS = {"boolean": Boolean, "random_state": RandomState}


def as_constraint(c):
    """The Constraint a declaration's entry stands for (see the module docstring)."""
    if isinstance(c, Constraint):
        return c
    if c is None:
        return NoneValue()
    if isinstance(c, str) and c in _SHORTHANDS:
        return _SHORTHANDS[c]()
    if isinstance(c, type):
        return InstanceOf(c)
    raise TypeError(f"not a parameter constraint: {c!r}")


def describe(constraints):
    """What a list of constraints allows, in words: 'a, b or c'."""
    cs = [as_constraint(c) for c in constraints]
    parts = [p for c in cs for p in c.parts(alone=len(cs) == 1)]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def check_parameter(label, value, constraints):
    """Nothing when one of `constraints` accepts `value`; else TypeError (no constraint is
    about the value's type) or ValueError, "{label} must be {allowed}; got {value!r}"."""
    cs = [as_constraint(c) for c in constraints]
    if any(c.accepts(value) for c in cs):
        return
    error = ValueError if any(c.fits_type(value) for c in cs) else TypeError
    template = next((c.message for c in cs if c.message), "{label} must be {allowed}; got {value}")
    raise error(template.format(label=label, allowed=describe(cs), value=_short_repr(value)))


def invalid_examples(constraints):
    """Values that none of `constraints` accepts, drawn from their edges (for tests)."""
    cs = [as_constraint(c) for c in constraints]
    out = []
    for c in cs:
        for v in c.invalid_examples() + [object()]:
            if not any(other.accepts(v) for other in cs):
                out.append(v)
    return out


__all__ = ["Array", "Boolean", "Bounds", "Constraint", "DType", "HasMethods", "InstanceOf", "Interval", "NoneValue",
           "Options", "RandomState", "as_constraint", "check_parameter", "describe", "invalid_examples"]
