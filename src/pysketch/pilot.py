"""The pilot: a uniform random subsample of the records, read for the kernel-scale estimates.

This module is the only data access of the kernel-scale estimation
(:mod:`pysketch.kernel_scale`): it reads at most ``n0`` records, at sorted row indices, from
any 2-D array-like with a ``shape`` and row indexing (ndarray, memmap, h5py or dask array;
a data frame through ``.iloc``), or converts a list of rows whole. **It reads raw records**:
whatever is computed from a pilot is not private (see :mod:`pysketch.kernel_scale`).
"""

import collections.abc

import numpy as np

from ._checks import check_int as _check_int
from ._checks import real_rows
from ._random import as_generator

__all__ = ["DEFAULT_PILOT_SIZE", "draw_pilot", "sample_pilot", "stream_pilot"]

#: Default number of records in the pilot (``n0``, as in Keriven et al.'s experiments).
DEFAULT_PILOT_SIZE = 5000


def _table_shape(X, name):
    """(n, d) of an object read by row indexing, or None if X must go through asarray."""
    if isinstance(X, np.ndarray) or (hasattr(X, "shape") and hasattr(X, "__getitem__")):
        shape = tuple(X.shape)
        if len(shape) != 2:
            hint = " (use .reshape(-1, 1) for a single feature)" if len(shape) == 1 else ""
            raise ValueError(f"{name} must be a 2-D array of shape (n, d); got shape {shape}{hint}")
        return int(shape[0]), int(shape[1])
    return None


def _take_rows(table, rows):
    """table[rows] for arrays, memmaps, h5py and dask arrays; .iloc for data frames."""
    if hasattr(table, "iloc"):
        return table.iloc[rows] if rows is not None else table
    return table[rows] if rows is not None else table[:]


def _as_real_rows(A, name, rows=None):
    """A 2-D float64 C-contiguous copy-or-view of A, checked real, non-empty and finite.
    `rows`: the data row of each row of A, for the error message."""
    A = np.ascontiguousarray(real_rows(A, name), dtype=np.float64)
    if not np.isfinite(A).all():
        bad = int(np.flatnonzero(~np.isfinite(A).all(axis=1))[0])
        row = bad if rows is None else int(rows[bad])
        raise ValueError(f"{name} contains NaN or infinity (row {row}, read for the pilot)")
    return A


def draw_pilot(X, n0=DEFAULT_PILOT_SIZE, random_state=None, *, pilot=None):
    """The pilot: a uniform random subsample of at most `n0` records of `X`, as float64.

    **Reads raw records**: whatever is computed from the pilot is not private and must be
    charged to the privacy budget (see pysketch.kernel_scale).

    Parameters
    ----------
    X : array-like of shape (n, d), memmap, or None
        The data. An object with a ``shape`` and row indexing (ndarray, memmap, h5py or
        dask array) is read only at the sampled rows (``X[sorted_rows]``); other
        array-likes (lists of rows) are converted whole. Ignored when `pilot` is given
        (it may then be an iterator of batches, or None).
    n0 : int
        Maximum pilot size, >= 1. If the data has at most `n0` rows, all are used (in
        their order); otherwise `n0` distinct rows are drawn uniformly without replacement
        and read in increasing row order.
    random_state : None, int, SeedSequence, Generator or RandomState
        Draws the rows (see :func:`pysketch._random.as_generator`).
    pilot : array-like of shape (p, d), optional
        Explicit records to draw the pilot from instead of `X` (needed when `X` is an
        iterator of batches, which cannot be sampled without being consumed). If it has
        more than `n0` rows, `n0` are drawn from it as from `X`.

    Returns
    -------
    ndarray of shape (min(n, n0), d), float64

    Raises
    ------
    TypeError
        If X is an iterator and no pilot is given, or holds non-real values.
    ValueError
        Wrong shape, no rows, NaN or infinity in the pilot rows.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.pilot import draw_pilot
    >>> X = np.arange(20.0).reshape(10, 2)
    >>> draw_pilot(X, n0=3, random_state=0).shape
    (3, 2)
    >>> np.array_equal(draw_pilot(X, n0=100), X)  # at most n0 rows: all of them, in order
    True
    """
    n0 = _check_int(n0, "n0")
    rng = as_generator(random_state)
    return sample_pilot(X, n0, rng, pilot)


def sample_pilot(X, n0, rng, pilot):
    """`draw_pilot` with a validated n0 and a numpy Generator (for the estimators).

    **Reads raw records**, as `draw_pilot`.

    Parameters
    ----------
    X : array-like of shape (n, d), memmap, iterator or None
        As for `draw_pilot`.
    n0 : int
        Maximum pilot size, already checked (>= 1).
    rng : numpy.random.Generator
        Draws the rows.
    pilot : array-like of shape (p, d) or None
        As for `draw_pilot`; when X is a table, it must have X's number of columns.

    Returns
    -------
    ndarray of shape (min(n, n0), d), float64

    Raises
    ------
    TypeError
        If X is None, an iterator or another object that cannot be subsampled without
        being consumed, and no pilot is given; or the rows hold non-real values.
    ValueError
        If the pilot's columns differ from X's, the source is not 2-D or has no row or
        column, or a row read holds NaN or infinity.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.pilot import sample_pilot
    >>> X = np.arange(20.0).reshape(10, 2)
    >>> sample_pilot(X, 4, np.random.default_rng(0), None).shape
    (4, 2)
    >>> sample_pilot(iter([X]), 4, np.random.default_rng(0), X[:6]).shape  # a stream: pilot given
    (4, 2)
    """
    name = "X"
    source = X
    if pilot is not None:
        name, source = "pilot", pilot
        if X is not None and not isinstance(X, collections.abc.Iterator):
            shape = _table_shape(X, "X")
            pshape = np.shape(pilot)
            if shape is not None and len(pshape) == 2 and pshape[1] != shape[1]:
                raise ValueError(
                    f"pilot must have the {shape[1]} columns of X; got shape {tuple(pshape)}"
                )
    elif X is None:
        raise TypeError("X must be a 2-D array-like of records (or give pilot=); got None")
    elif isinstance(source, collections.abc.Iterator) or (
        not hasattr(source, "shape") and not isinstance(source, collections.abc.Sequence)
    ):
        raise TypeError(
            f"X of type {type(source).__name__} cannot be subsampled without being consumed "
            "(an iterator or iterable of batches): pass pilot=<a 2-D array of records> "
            "(e.g. the first batch, or a reservoir sample) for the scale estimate"
        )
    shape = _table_shape(source, name)
    if shape is None:  # lists of rows and other array-likes: converted whole
        A = _as_real_rows(source, name)
        n = A.shape[0]
        if n > n0:
            A = A[np.sort(rng.choice(n, size=n0, replace=False))]
        return np.ascontiguousarray(A)
    n, d = shape
    if n < 1 or d < 1:
        raise ValueError(f"{name} must have at least one row and one column; got shape {(n, d)}")
    if n <= n0:
        return _as_real_rows(_take_rows(source, None), name)
    # Floyd-style sampling without replacement (O(n0) for any n), read in increasing order
    # (sequential on disk; h5py needs increasing indices).
    rows = np.sort(rng.choice(n, size=n0, replace=False))
    return _as_real_rows(_take_rows(source, rows), name, rows)


def stream_pilot(blocks, n0=DEFAULT_PILOT_SIZE, random_state=None):
    """The pilot of a stream: a uniform random subsample without replacement of at most `n0`
    rows of the 2-D blocks of `blocks`.

    The blocks are read once, in order. Every row gets an independent uniform key and the
    `n0` smallest keys are kept (so every subset of size n0 is equally likely), holding at
    most n0 rows besides the current block. **Reads raw records**, as `draw_pilot`.

    Parameters
    ----------
    blocks : iterable of array_like
        2-D blocks of rows, all with the same number of columns.
    n0 : int, default DEFAULT_PILOT_SIZE (5000)
        Maximum pilot size, >= 1.
    random_state : None, int, SeedSequence, Generator or RandomState
        Draws the keys (see :func:`pysketch._random.as_generator`).

    Returns
    -------
    pilot : numpy.ndarray
        (min(n, n0), d) float64, the kept rows in the order of the stream.
    n_rows : int
        The rows read (n).

    Raises
    ------
    ValueError
        If a block is not 2-D or holds NaN or infinity, the stream holds no block, or n0
        is below 1.
    TypeError
        If n0 is not an integer.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.pilot import stream_pilot
    >>> blocks = (np.full((4, 2), i, dtype=float) for i in range(5))
    >>> pilot, n = stream_pilot(blocks, n0=6, random_state=0)
    >>> pilot.shape, n, bool(np.all(np.diff(pilot[:, 0]) >= 0))
    ((6, 2), 20, True)
    """
    n0 = _check_int(n0, "n0")
    rng = as_generator(random_state)
    kept = keys = where = None
    first = 0
    for block in blocks:
        B = np.asarray(block, dtype=np.float64)
        if B.ndim != 2:
            raise ValueError(f"every block must be a 2-D array of rows, got shape {B.shape}")
        if not np.isfinite(B).all():
            raise ValueError(f"a block contains NaN or infinity (rows from {first} on)")
        n = B.shape[0]
        if kept is None:
            kept, keys, where = np.empty((0, B.shape[1])), np.empty(0), np.empty(0, np.int64)
        kept = np.concatenate([kept, B])
        keys = np.concatenate([keys, rng.random(n)])
        where = np.concatenate([where, np.arange(first, first + n)])
        first += n
        if keys.size > n0:
            pick = np.argpartition(keys, n0 - 1)[:n0]
            kept, keys, where = kept[pick], keys[pick], where[pick]
    if kept is None:
        raise ValueError("the stream holds no block of rows")
    return kept[np.argsort(where)], first
