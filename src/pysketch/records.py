"""The records (x, y) of a supervised fit, in memory or as dask collections.

A pass over supervised records needs x and its label together. For dask input, X (a dask
array or a data frame of numeric columns) and y (a dask array, series or one-column frame,
or an in-memory vector) are joined into one lazy dask array ``Z = [X, y]`` whose row blocks
are X's (y is rechunked to them: a label moves to its record, never the other way), so that
every pass is one :func:`pysketch.blocks.map_reduce` over Z: a task per block, where the
block lives, and a tree of merges. Nothing is computed on the caller but the merged
result (and, for a data frame, the lengths of its partitions).

:class:`Records` holds either form and runs a pass over it with one function of (x, y):
``fn(x, y, first_row, *args)`` is called once on the whole arrays in memory (so a numpy fit
computes exactly what it computed before dask existed) or on every block of Z.
"""

import numpy as np

from .blocks import as_dask_array, dask_records, is_dask_collection, map_reduce

__all__ = ["Records", "dask_xy", "join_target", "is_lazy", "dask_inputs"]


def is_lazy(X, y=None):
    """True when X or y is a dask collection.

    Parameters
    ----------
    X : object
        The records.
    y : object, optional
        The labels.

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from pysketch.records import is_lazy
    >>> is_lazy(np.ones((3, 2))), is_lazy(np.ones((3, 2)), da.zeros(3))
    (False, True)
    """
    return is_dask_collection(X) or (y is not None and is_dask_collection(y))


def _known_lengths(A):
    if not np.isfinite(np.asarray(A.chunks[0], dtype=np.float64)).all():
        A = A.compute_chunk_sizes()
    return A


def _dask_labels(y, name):
    import dask.array as da

    if isinstance(y, da.Array):
        return _known_lengths(y)
    if not hasattr(y, "to_dask_array"):
        raise TypeError(f"{name} must be a dask array, series or data frame, or an array in memory; got "
                        f"{type(y).__name__}")
    return y.to_dask_array(lengths=True)


def dask_xy(X, y, name="y"):
    """The records X and the labels y as two dask arrays with the same row blocks.

    Either may be in memory (it is wrapped, blocked like the other), not both.

    Parameters
    ----------
    X : array_like, dask array or dask data frame
        The records, one per row.
    y : array_like, dask array, series or data frame
        The labels, one per record.
    name : str, default 'y'
        The labels' name, for messages.

    Returns
    -------
    A : dask.array.Array
        The records (:func:`pysketch.blocks.dask_records`: 2-D, known row blocks).
    Y : dask.array.Array
        y (1-D, or 2-D as given) with A's row blocks.

    Raises
    ------
    ValueError
        If y is a scalar, an in-memory X is not 2-D, or X and y have different numbers of
        rows.
    TypeError
        If a y that is not in memory is not a dask array, series or data frame.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from pysketch.records import dask_xy
    >>> A, Y = dask_xy(da.ones((6, 2), chunks=4), np.arange(6.0))
    >>> A.chunks[0], Y.chunks[0]
    ((4, 2), (4, 2))
    """
    import dask.array as da

    if is_dask_collection(X):
        A = dask_records(X)
        if is_dask_collection(y):
            Y = _dask_labels(y, name)
        else:
            Y = np.asarray(y)
            if Y.ndim == 0:
                raise ValueError(f"{name} must be 1-D, got a scalar")
            if Y.shape[0] == A.shape[0]:
                Y = da.from_array(Y, chunks=(A.chunks[0],) + Y.shape[1:])
            else:
                Y = da.from_array(Y)
    else:  # y is the dask collection: X in memory takes y's blocks
        Y = _dask_labels(y, name)
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (rows are records), got shape {X.shape}")
        A = dask_records(da.from_array(X, chunks=(Y.chunks[0], -1)) if X.shape[0] == Y.shape[0]
                         else da.from_array(X))
    if Y.ndim == 0:
        raise ValueError(f"{name} must be 1-D, got a scalar")
    if Y.shape[0] != A.shape[0]:
        raise ValueError(f"X and {name} have inconsistent numbers of samples: {A.shape[0]} and {Y.shape[0]}")
    if Y.chunks[0] != A.chunks[0]:
        Y = Y.rechunk({0: A.chunks[0]})
    return A, Y


def join_target(A, t):
    """The dask array [A, t] in float64, every block holding whole records.

    Parameters
    ----------
    A : dask.array.Array
        The (n, d) records.
    t : dask.array.Array
        The (n,) targets, blocked like A's rows (as `dask_xy` returns them).

    Returns
    -------
    dask.array.Array
        (n, d + 1), the targets in the last column, one block along the columns.

    Examples
    --------
    >>> import dask.array as da
    >>> from pysketch.records import join_target
    >>> Z = join_target(da.ones((6, 2), chunks=3), da.arange(6, chunks=3))
    >>> Z.shape, Z.numblocks, Z.dtype.name
    ((6, 3), (2, 1), 'float64')
    """
    import dask.array as da

    return da.concatenate([A.astype(np.float64), t.astype(np.float64)[:, None]], axis=1).rechunk({1: -1})


def _xy_block(block, first_row, fn, *args):
    """A task of a pass over Z = [X, y]: NaN checked, then fn on the block's x and y."""
    if not np.isfinite(block).all():
        bad = ~np.isfinite(block)
        in_x = bad[:, :-1].any(axis=1)
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        where = f"record {first_row + row}" if first_row is not None else f"row {row} of one block"
        if in_x[row]:
            raise ValueError(f"{where} of X contains NaN or infinity")
        raise ValueError(f"y must be finite (no NaN or infinity): the label of {where} is not")
    return fn(block[:, :-1], block[:, -1], first_row, *args)


class Records:
    """The (x, y) records of a fit, in memory or as one lazy dask array.

    Either X (n, d) and y (n,), float64 arrays in memory checked by the caller, or `joined`,
    a dask array Z (n, d + 1) whose last column is y (NaN and infinity are found by the
    passes). `Records.from_dask` builds the lazy form; `reduce` runs one pass over either.

    Parameters
    ----------
    X : numpy.ndarray, optional
        The records in memory.
    y : numpy.ndarray, optional
        Their labels.
    joined : dask.array.Array, optional
        The lazy form (then X and y are None).

    Raises
    ------
    ValueError
        From `from_dask`, when y is not 1-D (or one column) or not numeric; from `reduce`,
        when a dask pass finds no records, or a record or label holding NaN or infinity.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.records import Records
    >>> def moments(x, y, first_row):
    ...     return x.sum(axis=0), float(y @ y)
    >>> Records(np.ones((4, 2)), np.arange(4.0)).reduce(moments, None)
    (array([4., 4.]), 14.0)
    """

    def __init__(self, X=None, y=None, joined=None):
        self.X, self.y, self.joined = X, y, joined

    @classmethod
    def from_dask(cls, X, y, name="y"):
        """The records of dask X and y (either may be in memory, not both): y must be numeric,
        1-D or one column (returned second: True when it was a column)."""
        A, Y = dask_xy(X, y, name)
        column = Y.ndim == 2 and Y.shape[1] == 1
        if column:
            Y = Y[:, 0]
        if Y.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {Y.shape}")
        if Y.dtype.kind not in "biuf":
            raise ValueError(f"Unknown label type: {name} must be numeric (a regression target), got dtype {Y.dtype}")
        return cls(joined=join_target(A, Y)), column

    @property
    def lazy(self):
        return self.joined is not None

    @property
    def shape(self):
        """(n, d) of the inputs."""
        if self.joined is not None:
            n, d1 = self.joined.shape
            return int(n), int(d1) - 1
        return self.X.shape

    def reduce(self, fn, combine, args=()):
        """One pass: ``fn(x, y, first_row, *args)`` on the whole arrays in memory, or on every
        block of the dask records merged by ``combine`` (fn and combine module-level
        functions; each of args enters the dask graph once)."""
        if self.joined is None:
            return fn(self.X, self.y, 0, *args)
        result = map_reduce(self.joined, _xy_block, combine, args=(fn,) + tuple(args), name="[X, y]")
        if result is None:
            raise ValueError("X has no records")
        return result


def dask_inputs(X, n_features, who):
    """The records of a dask X for prediction or transformation.

    Parameters
    ----------
    X : dask.array.Array or dask.dataframe.DataFrame
        The records, one per row.
    n_features : int
        The number of columns the model was fitted on.
    who : str
        The model's name, for the message.

    Returns
    -------
    dask.array.Array
        2-D, row blocks kept (their lengths possibly unknown), one block along the columns.

    Raises
    ------
    ValueError
        If X does not have `n_features` columns (or is not 2-D, `as_dask_array`).
    TypeError
        If X is not a dask array or data frame of real numbers.

    Examples
    --------
    >>> import dask.array as da
    >>> from pysketch.records import dask_inputs
    >>> dask_inputs(da.ones((5, 3), chunks=2), 3, "CompressiveKMeans").shape
    (5, 3)
    """
    A = as_dask_array(X)
    if A.shape[1] != n_features:
        raise ValueError(f"X has {A.shape[1]} features, but {who} is expecting {n_features} features as input")
    return A
