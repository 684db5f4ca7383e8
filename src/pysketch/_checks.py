"""Argument checks shared by the Python modules (one wording everywhere), the one check
of size-like arguments against the machine's memory (`check_size`), and the range checks
of the data's scale every layer applies (`check_data_magnitude`, `data_unit`,
`check_box_width`)."""

import math
import numbers
import os

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
    if value > MAX_INT:
        raise ValueError(f"{name} must be an int >= {minimum} that fits in 63 bits; got {value}")
    return value


#: The largest size or count the checks accept (numpy's index type, int64).
MAX_INT = 2**63 - 1
#: The largest index of the C++ core's int32 tables (one-hot positions, sparse JL rows).
MAX_INT32 = 2**31 - 1
#: The machine's memory assumed when the operating system does not tell it (no
#: os.sysconf('SC_PHYS_PAGES'), e.g. on Windows): 1 TiB, more than a workstation holds, so
#: that only sizes no machine could hold are refused there.
FALLBACK_MEMORY = 1 << 40


def total_memory():
    """The machine's physical memory in bytes: os.sysconf's SC_PHYS_PAGES times
    SC_PAGE_SIZE (a microsecond), or None when the system does not give it."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):  # no sysconf, or no such name here
        return None
    return total if total > 0 else None


def available_memory():
    """The memory available now in bytes, for messages: MemAvailable of /proc/meminfo
    (Linux: free memory plus the caches the kernel can drop), else os.sysconf's
    SC_AVPHYS_PAGES pages (free memory only), else None."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024  # in kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def _bytes(n):
    """n bytes, exactly and in binary units: '8,000,000,000,000 bytes (7.28 TiB)'."""
    size, unit = float(n), "bytes"
    for name in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if size < 1024:
            break
        size, unit = size / 1024, name
    return f"{n:,} bytes" + (f" ({size:.3g} {unit})" if unit != "bytes" else "")


def check_size(value, name, *, minimum=1, maximum=MAX_INT, why="", nbytes=None, what=""):
    """A size-like argument (a number of frequencies, bins, hashes, points, rows,
    restarts...) checked before anything is allocated for it: an int (Python or numpy; not
    bool, not float) in [minimum, maximum], returned as int, whose memory is one the
    machine can hold. `why` says where the maximum comes from (" (int32 indices)").

    nbytes: the bytes the caller will allocate for this value (computed from the shapes it
    allocates, other sizes at their given values), a number or a function of the checked
    int; `what` says what they hold ("for the (d, m) frequencies"). They are refused when
    they exceed the machine's total physical memory (`total_memory`). Not the memory
    available now: that changes from one second to the next with the other programs
    running, the kernel frees caches and swaps for a large request, and refusing an
    ordinary size on a loaded machine would be wrong; no program can hold more than the
    whole memory at once, so a size beyond it is a mistake on any machine (between the
    two, numpy's own MemoryError may still come, as above a container's memory limit,
    which is not read). Where the system does not tell its memory, FALLBACK_MEMORY (1 TiB)
    stands for it.

    TypeError for what is not an integer; ValueError naming the argument and what is
    allowed: the range, or the value, the bytes it would need and the memory there is."""
    value = check_int(value, name, minimum)
    if value > maximum:
        raise ValueError(f"{name} must be an int in [{minimum}, {maximum}]{why}; got {value}")
    if nbytes is not None:
        need = int(nbytes(value) if callable(nbytes) else nbytes)
        total = total_memory()
        if need > (FALLBACK_MEMORY if total is None else total):
            has = (f"the {_bytes(FALLBACK_MEMORY)} assumed where the system does not tell its memory"
                   if total is None else f"this machine's {_bytes(total)}")
            available = available_memory()
            now = "" if available is None else f", {_bytes(available)} available now"
            raise ValueError(f"{name} = {value} would need {_bytes(need)} of memory{' ' + what if what else ''}, "
                             f"more than {has}{now}: use a smaller {name}")
    return value


def cast_real(A, dtype, name):
    """A (an ndarray of real numbers) as a C-contiguous array of the float `dtype`. A finite
    value beyond the range of `dtype` (1e300 for float32) raises ValueError naming the
    argument, instead of becoming infinity with numpy's overflow warning; NaN and infinity
    are left to the caller's finiteness check."""
    dtype = np.dtype(dtype)
    if A.dtype.kind == "f" and A.dtype.itemsize > dtype.itemsize and A.size:
        largest = float(np.finfo(dtype).max)
        magnitude = np.abs(A)
        over = np.isfinite(magnitude) & (magnitude > largest)
        if over.any():
            raise ValueError(f"{name} has a value of magnitude {float(magnitude[over].max()):.3g}, beyond the range "
                             f"of {dtype} (largest {largest:.3g}): use float64 or rescale the data")
    return np.ascontiguousarray(A, dtype=dtype)


def float_dtype(dtype):
    """np.dtype(dtype) when it is float32 or float64, else None (also for what numpy cannot
    read as a dtype)."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        return None
    return dt if dt in (np.dtype(np.float32), np.dtype(np.float64)) else None


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
    when it already is one; an object array of numbers becomes float64. TypeError naming
    the argument for a masked array, complex numbers or anything that is not numeric."""
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a masked array")
    try:
        A = np.asarray(X)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers; got {type(X).__name__}") from exc
    if A.dtype.kind in "biuf":
        return A
    if A.dtype.kind == "c":
        raise TypeError(f"{name} must be an array of real numbers; got complex dtype {A.dtype}")
    if A.dtype.kind == "O":
        try:
            return A.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{name} must be an array of real numbers; got an object array") from exc
    raise TypeError(f"{name} must be an array of real numbers; got dtype {A.dtype}")


def real_rows(X, name):
    """X as a 2-D array of real numbers (rows are records) with at least one row and one
    column, any real dtype, without copying when it already is one (see `real_array`);
    ValueError naming the argument for another shape."""
    A = real_array(X, name)
    if A.ndim != 2:
        hint = " (use .reshape(-1, 1) for a single feature)" if A.ndim == 1 else ""
        raise ValueError(f"{name} must be a 2-D array of shape (n, d); got shape {A.shape}{hint}")
    if A.shape[0] < 1 or A.shape[1] < 1:
        raise ValueError(f"{name} must have at least one row and one column; got shape {A.shape}")
    return A


#: The neighbouring relations of differential privacy: 'add_remove' (one record added or
#: removed; n private) and 'replace' (one record replaced; n public).
NEIGHBOURING = ("add_remove", "replace")


def check_relation(neighbouring):
    """The neighbouring relation, validated (ValueError naming the allowed ones)."""
    if neighbouring not in NEIGHBOURING:
        raise ValueError(f"neighbouring must be one of {NEIGHBOURING}, got {neighbouring!r}")
    return neighbouring


def check_bounds(bounds, d):
    """(lower, upper) arrays of shape (d,) from (lower, upper) or a (d, 2) array."""
    if bounds is None:
        raise ValueError("bounds are required: (lower, upper) arrays of length d, or a (d, 2) array")
    if isinstance(bounds, tuple) and len(bounds) == 2:
        try:
            lo, hi = (np.broadcast_to(np.asarray(b, dtype=np.float64), (d,)).copy() for b in bounds)
        except ValueError:
            shapes = [np.shape(b) for b in bounds]
            raise ValueError(f"bounds: lower and upper must be numbers or arrays of length {d} (the number of "
                             f"features), got shapes {shapes[0]} and {shapes[1]}") from None
    else:
        b = np.asarray(bounds, dtype=np.float64)
        if b.shape != (d, 2):
            raise ValueError(f"bounds must be (lower, upper) or a ({d}, 2) array, got shape {b.shape}")
        lo, hi = b[:, 0].copy(), b[:, 1].copy()
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        raise ValueError("bounds must be finite")
    if (hi < lo).any():
        raise ValueError("bounds: every upper bound must be >= the lower bound")
    flat = hi == lo  # a constant coordinate: give the box a small width
    pad = np.maximum(1e-6, 1e-6 * np.abs(lo))
    lo[flat] -= pad[flat]
    hi[flat] += pad[flat]
    return lo, hi


def check_array(X, name="X", dtype=np.float64):
    """A 2-D finite float array (rows are records). The messages follow scikit-learn's
    wording (its estimator checks look for it) and name the argument."""
    if isinstance(X, np.ma.MaskedArray):
        raise TypeError(f"{name} must not be a masked array")
    if hasattr(X, "toarray") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(f"{name}: sparse input is not supported; pass a dense array")
    A = np.asarray(X)
    if A.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: {name} has dtype {A.dtype}; pass real numbers")
    if A.dtype.kind not in "biuf":
        try:
            A = A.astype(np.float64)
        except TypeError as exc:  # e.g. "float() argument must be a string or a real number, not 'dict'"
            raise TypeError(f"{name} must hold numbers: {exc}") from exc
        except ValueError as exc:
            raise ValueError(f"{name} must hold numbers: {exc}") from exc
    if A.ndim != 2:
        raise ValueError(
            f"Expected a 2-D array for {name} (n_samples, n_features), got {A.ndim} dimension(s) (shape {A.shape}). "
            "Reshape your data with X.reshape(-1, 1) if it has a single feature or X.reshape(1, -1) if it is a "
            "single sample."
        )
    if A.shape[0] < 1:
        raise ValueError(f"Found array with 0 sample(s) (shape={A.shape}) while a minimum of 1 is required ({name}).")
    if A.shape[1] < 1:
        raise ValueError(f"Found array with 0 feature(s) (shape={A.shape}) while a minimum of 1 is required ({name}).")
    A = cast_real(A, dtype, name)
    if not np.isfinite(A).all():
        raise ValueError(f"Input {name} contains NaN or infinity; remove or impute those values")
    return A


# ------------------------------------------------------------------ the data's scale

#: Data (or public bounds) whose largest magnitude is above 2**MAX_DATA_EXPONENT, or nonzero
#: and below 2**-MAX_DATA_EXPONENT, are refused (:func:`check_data_magnitude`): their
#: squares (variances, squared distances, sensitivities of quadratic features) over- or
#: underflow float64, and so do the frequency variances 1/sigma^2 of a kernel scale sigma
#: at their scale (the frequency laws accept sigma between about 1.5e-154 and 6.7e153).
MAX_DATA_EXPONENT = 504

#: :func:`data_unit` leaves data whose magnitude is within 2**+-COMFORT_EXPONENT alone (the
#: decoders and solvers are tuned for data of order one; measured: compressive k-means on
#: unit clusters already moved its centres by 0.1 cluster widths at a scale of 1e3, and
#: gave wrong centres at 1e8).
COMFORT_EXPONENT = 6


def check_data_magnitude(magnitude, what="the data"):
    """The largest magnitude of the data, checked against the range of scales pysketch supports.

    Parameters
    ----------
    magnitude : float
        The largest abs(coordinate) of the data, or of public bounds at the data's scale.
    what : str, default 'the data'
        What the magnitude is of, for the message.

    Returns
    -------
    float
        `magnitude` as a float.

    Raises
    ------
    ValueError
        If `magnitude` is not finite, or is neither 0 nor within [2**-504, 2**504] (about
        [1.9e-152, 5.2e151]): its square would over- or underflow float64. The message
        says so in terms of the data's scale and gives a power of two to rescale by.

    Examples
    --------
    >>> from pysketch.kernel_scale import check_data_magnitude
    >>> check_data_magnitude(3.5)
    3.5
    >>> check_data_magnitude(1e200)
    Traceback (most recent call last):
        ...
    ValueError: the magnitude of the data (1e+200) is outside the supported range ...
    """
    m = float(magnitude)
    if not math.isfinite(m):
        raise ValueError(f"{what} must be finite, got a magnitude of {m}")
    limit = math.ldexp(1.0, MAX_DATA_EXPONENT)
    if m > limit or 0.0 < m < 1.0 / limit:
        side = "overflows" if m > limit else "underflows"
        raise ValueError(
            f"the magnitude of {what} ({m:.3g}) is outside the supported range [{1.0 / limit:.3g}, {limit:.3g}]: its "
            f"square {side} float64 (variances, squared distances, the frequencies 1/sigma^2 of a kernel scale "
            f"at this scale); rescale the data (and any bounds, kernel scale or radius given with it) by a "
            f"constant, e.g. divide by 2**{math.frexp(m)[1]}, and scale the results back")
    return m


def data_unit(magnitude, what="the data"):
    """The power of two u in which the estimators decode data of largest magnitude `magnitude`.

    Dividing by u is exact (it only changes exponents). u is 1 when the magnitude is 0 or
    lies in [2**-6, 2**6) (COMFORT_EXPONENT = 6), else the power of two 2**e with `magnitude`
    in [2**(e - 1), 2**e): the smallest power of two strictly above the magnitude. The unit is public
    when `magnitude` comes from public bounds.

    Parameters
    ----------
    magnitude : float
        The largest abs(coordinate) of the data (or of public bounds).
    what : str, default 'the data'
        What the magnitude is of, for the message of the range check.

    Returns
    -------
    float
        A power of two.

    Raises
    ------
    ValueError
        If the magnitude is outside the supported range (see `check_data_magnitude`).

    Examples
    --------
    >>> from pysketch.kernel_scale import data_unit
    >>> data_unit(3.0), data_unit(100.0), data_unit(1000.0), data_unit(0.001)
    (1.0, 128.0, 1024.0, 0.001953125)
    """
    m = check_data_magnitude(magnitude, what)
    if m == 0.0:
        return 1.0
    e = math.frexp(m)[1]  # m in [2^(e-1), 2^e)
    if -COMFORT_EXPONENT <= e - 1 and e <= COMFORT_EXPONENT:
        return 1.0
    return math.ldexp(1.0, e)


#: Boxes narrower than 2**-MIN_WIDTH_EXPONENT are refused by :func:`check_box_width`.
MIN_WIDTH_EXPONENT = 1000


def check_box_width(lower, upper, what="the bounds"):
    """Check that every width upper - lower of a box is finite and at least 2**-1000.

    The models that map the records into the unit box (pysketch.m2m, pysketch.rfm) divide by
    the widths, which overflows for subnormal widths (whose digits are lost anyway) and is
    undefined for widths beyond float64. Those models work at any scale inside (they are
    scale-free).

    Parameters
    ----------
    lower, upper : array_like of float
        The box's lower and upper bounds (numbers, or one per column).
    what : str, default 'the bounds'
        What the box is, for the message.

    Raises
    ------
    ValueError
        If a width is not finite, negative, or below 2**-MIN_WIDTH_EXPONENT (about
        9.3e-302); the message names the first such column and speaks of the data's scale.

    Examples
    --------
    >>> from pysketch.kernel_scale import check_box_width
    >>> check_box_width([0.0, -1.0], [1.0, 1.0])  # returns None: the widths are fine
    >>> check_box_width([0.0, 0.0], [1.0, 1e-310])
    Traceback (most recent call last):
        ...
    ValueError: the magnitude of the bounds's width (1e-310, column 1) is outside ...
    """
    with np.errstate(over="ignore", invalid="ignore"):
        w = np.asarray(upper, dtype=np.float64) - np.asarray(lower, dtype=np.float64)
    w = np.atleast_1d(w)
    bad = ~(np.isfinite(w) & (w >= math.ldexp(1.0, -MIN_WIDTH_EXPONENT)))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"the magnitude of {what}'s width ({w[j]:.3g}, column {j}) is outside the supported range "
            f"[{math.ldexp(1.0, -MIN_WIDTH_EXPONENT):.3g}, {np.finfo(np.float64).max:.3g}]: the data divided by it "
            "would over- or underflow float64; rescale the data (and the bounds) by a constant")
