"""Compiler flags for C and C++ programs built against an installed pysketch.

``python -m pysketch.config [--cflags] [--libs] [--include] [--libdir]`` prints, on one
line and in the order asked:

``--cflags``   ``-I<include>``: :func:`pysketch.get_include`, with ``fht.h`` and ``pysketch/*.hpp``
``--libs``     ``-L<lib> -lpysketch_fht``: :func:`pysketch.get_library_dir` and the C library
``--include``  the include directory alone
``--libdir``   the library directory alone

for example ``cc prog.c $(python -m pysketch.config --cflags --libs) -o prog`` (C++ programs
add ``-std=c++17 -pthread``; docs/c_api.md). It exits with status 1, printing why, when the
package has no headers (an editable install), and 2 on unknown arguments.
"""

import sys

from ._embed import LIBRARY_NAME, get_include, get_library_dir

__all__ = ["main"]


def main(argv=None):
    """Print the flags named in `argv` (default: ``sys.argv[1:]``); return the exit status.

    Parameters
    ----------
    argv : sequence of str, optional
        Any of ``'--cflags'``, ``'--libs'``, ``'--include'``, ``'--libdir'``, in the order
        their values are printed (on one line, to standard output). None (the default)
        reads ``sys.argv[1:]``.

    Returns
    -------
    int
        0 when the flags were printed; 1 when the package has no headers or library (an
        editable install), the reason printed to standard error; 2 when `argv` is empty
        or holds another argument, the usage printed to standard error.

    Examples
    --------
    >>> import contextlib, io
    >>> from pysketch.config import main
    >>> out, err = io.StringIO(), io.StringIO()
    >>> with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    ...     status = main(["--cflags", "--libs"])
    >>> status == 1 or out.getvalue().split()[-1] == "-lpysketch_fht"  # 1: an editable install
    True
    """
    args = sys.argv[1:] if argv is None else list(argv)
    known = {
        "--cflags": lambda: "-I" + get_include(),
        "--libs": lambda: f"-L{get_library_dir()} -l{LIBRARY_NAME}",
        "--include": get_include,
        "--libdir": get_library_dir,
    }
    if not args or any(a not in known for a in args):
        print("usage: python -m pysketch.config " + " ".join(f"[{k}]" for k in known), file=sys.stderr)
        return 2
    try:
        print(" ".join(known[a]() for a in args))
    except FileNotFoundError as exc:
        print(f"pysketch.config: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
