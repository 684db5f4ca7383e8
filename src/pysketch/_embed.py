"""Where an installed pysketch keeps what C and C++ programs compile and link against.

An installed pysketch (a wheel, or ``pip install .``) holds, inside the package:

``include/``
    ``fht.h``, the C API of the fast Walsh-Hadamard transform, and ``pysketch/*.hpp``,
    the header-only C++ core (operators, feature maps, sketch accumulation) that sits on it.
``lib/``
    ``libpysketch_fht.a``, the C library behind ``fht.h`` (position-independent, so it
    links into programs and shared libraries alike; it picks the instruction set at run
    time, like the Python package).

docs/c_api.md describes both APIs; ``python -m pysketch.config --cflags --libs`` prints
the compiler flags.

An editable install (``pip install -e .``) maps the package onto the source tree and has
neither directory: :func:`get_include` and :func:`get_library_dir` raise
``FileNotFoundError`` there.
"""

import os

__all__ = ["LIBRARY_NAME", "get_include", "get_library_dir"]

#: The name of the C library for the linker: ``-lpysketch_fht`` (file ``libpysketch_fht.a``).
LIBRARY_NAME = "pysketch_fht"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _installed(subdir, probe):
    path = os.path.join(_PACKAGE_DIR, subdir)
    if not os.path.isfile(os.path.join(path, probe)):
        raise FileNotFoundError(
            f"{os.path.join(path, probe)} does not exist: the C/C++ headers and library are installed "
            "with the package (pip install pysketch, or pip install . from the source tree), not by an "
            "editable install, which maps the package onto the source tree"
        )
    return path


def get_include():
    """The directory of pysketch's C and C++ headers, for the compiler's ``-I``.

    It holds ``fht.h`` (the C API: ``fht_float``, ``fht_double`` and their batched forms)
    and ``pysketch/*.hpp`` (the header-only C++ core, C++17), see docs/c_api.md.

    Returns
    -------
    str
        An absolute path inside the installed package.

    Raises
    ------
    FileNotFoundError
        If the headers are not installed (an editable install).

    Examples
    --------
    >>> import os
    >>> import pysketch
    >>> try:
    ...     found = os.path.isfile(os.path.join(pysketch.get_include(), "fht.h"))
    ... except FileNotFoundError:  # an editable install has no headers
    ...     found = True
    >>> found
    True
    """
    return _installed("include", "fht.h")


def get_library_dir():
    """The directory of ``libpysketch_fht.a``, the C library behind ``fht.h``, for ``-L``.

    Link with ``-L<this directory> -lpysketch_fht`` (``LIBRARY_NAME``). The C++ headers
    need it too (they call the transform and read the instruction-set level through it).

    Returns
    -------
    str
        An absolute path inside the installed package.

    Raises
    ------
    FileNotFoundError
        If the library is not installed (an editable install).

    Examples
    --------
    >>> import os
    >>> import pysketch
    >>> try:
    ...     found = os.path.isfile(os.path.join(pysketch.get_library_dir(), "libpysketch_fht.a"))
    ... except FileNotFoundError:  # an editable install has no library
    ...     found = True
    >>> found
    True
    """
    return _installed("lib", f"lib{LIBRARY_NAME}.a")

