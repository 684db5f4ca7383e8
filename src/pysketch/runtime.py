"""Process-wide settings of the compiled core: the instruction set and the thread count.

Both can be set before the process starts, through the environment:

``PYSKETCH_SIMD``
    ``avx512``, ``avx2``, ``sse`` or ``scalar``: the highest instruction set the
    transforms may use (a cap: the CPU's best level is used when it is lower). Read once,
    by the first transform.
``PYSKETCH_NUM_THREADS``
    A positive integer: the default of :func:`get_num_threads`.
"""

import operator
import os
import re
import warnings

from . import _core

__all__ = [
    "SIMD_LEVELS",
    "get_num_threads",
    "max_simd_level",
    "set_num_threads",
    "set_simd_level",
    "simd_level",
]

#: The instruction-set levels, from the lowest to the highest.
SIMD_LEVELS = ("scalar", "sse", "avx2", "avx512")

MAX_NUM_THREADS = _core.MAX_NUM_THREADS


def simd_level():
    """The instruction set the Walsh-Hadamard transforms run on.

    Returns
    -------
    str
        One of ``'avx512'``, ``'avx2'``, ``'sse'``, ``'scalar'``: the best level the CPU
        supports, capped by the environment variable ``PYSKETCH_SIMD`` when it is set,
        or the level last chosen with :func:`set_simd_level`. Every level gives
        bit-identical results; only the speed differs.

    Examples
    --------
    >>> import pysketch
    >>> pysketch.simd_level() in pysketch.runtime.SIMD_LEVELS
    True
    """
    return _core.simd_level()


def max_simd_level():
    """The best instruction set this CPU (and its operating system) supports.

    Returns
    -------
    str
        One of ``'avx512'``, ``'avx2'``, ``'sse'``, ``'scalar'``.

    Examples
    --------
    >>> import pysketch
    >>> levels = pysketch.runtime.SIMD_LEVELS
    >>> levels.index(pysketch.simd_level()) <= levels.index(pysketch.max_simd_level())
    True
    """
    return _core.max_simd_level()


def set_simd_level(level):
    """Use the instruction set `level` from now on, in the whole process.

    Meant for tests and benchmarks: every level gives bit-identical results. Do not call
    it while transforms run in other threads.

    Parameters
    ----------
    level : {'avx512', 'avx2', 'sse', 'scalar'}
        At most :func:`max_simd_level`.

    Raises
    ------
    TypeError
        If `level` is not a str.
    ValueError
        If `level` is not one of the names above or this CPU does not support it.

    Examples
    --------
    >>> import pysketch
    >>> before = pysketch.simd_level()
    >>> pysketch.set_simd_level("scalar")  # every CPU has the scalar kernels
    >>> pysketch.simd_level()
    'scalar'
    >>> pysketch.set_simd_level(before)
    """
    if not isinstance(level, str):
        raise TypeError(f"level must be a str, one of {', '.join(map(repr, SIMD_LEVELS))}; got {level!r}")
    _core.set_simd_level(level)


def get_num_threads():
    """The number of threads a parallel computation may use (the calling thread included).

    Defaults to the number of CPUs this process may run on, or to the environment
    variable ``PYSKETCH_NUM_THREADS`` when it holds a positive integer.

    Returns
    -------
    int
        Between 1 and 1024: the default above, or the count last set with
        :func:`set_num_threads`.

    Examples
    --------
    >>> import pysketch
    >>> pysketch.get_num_threads() >= 1
    True
    """
    return _core.get_num_threads()


def set_num_threads(num_threads):
    """Set the number of threads parallel computations may use, in the whole process.

    Parameters
    ----------
    num_threads : int
        Between 1 and 1024. Results do not depend on it.

    Raises
    ------
    TypeError
        If `num_threads` is not an integer (a float such as ``2.0`` included).
    ValueError
        If `num_threads` is below 1 or above 1024.

    Examples
    --------
    >>> import pysketch
    >>> before = pysketch.get_num_threads()
    >>> pysketch.set_num_threads(1)
    >>> pysketch.get_num_threads()
    1
    >>> pysketch.set_num_threads(before)
    """
    try:
        count = operator.index(num_threads)
    except TypeError:
        raise TypeError(f"num_threads must be an integer, got {num_threads!r}") from None
    if not 1 <= count <= MAX_NUM_THREADS:
        raise ValueError(f"num_threads must be between 1 and {MAX_NUM_THREADS}, got {count}")
    _core.set_num_threads(count)


def _check_environment():
    """Warn about environment settings the core ignores (it falls back to its defaults)."""
    simd = os.environ.get("PYSKETCH_SIMD")
    if simd and simd not in SIMD_LEVELS:
        warnings.warn(
            f"PYSKETCH_SIMD={simd!r} is not one of {', '.join(map(repr, SIMD_LEVELS))}; it is ignored "
            "and the best instruction set of this CPU is used",
            RuntimeWarning,
            stacklevel=3,
        )
    threads = os.environ.get("PYSKETCH_NUM_THREADS")
    if threads is not None and threads.strip(" \t"):
        # The same syntax the core accepts: decimal digits, optionally between blanks.
        match = re.fullmatch(r"[ \t]*([0-9]+)[ \t]*", threads)
        if not (match and 1 <= int(match.group(1)) <= MAX_NUM_THREADS):
            warnings.warn(
                f"PYSKETCH_NUM_THREADS={threads!r} is not an integer between 1 and {MAX_NUM_THREADS}; "
                "it is ignored and the number of available CPUs is used",
                RuntimeWarning,
                stacklevel=3,
            )


_check_environment()
