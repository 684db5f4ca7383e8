"""Blockwise passes over the records of a data source: in this process, or where the
blocks of a Dask collection live.

Every pass pysketch makes over data (a sketch, a bounding box, a count of records outside
a box, the sums of a private pilot) is a map-reduce: a function of a block of rows (a 2-D
numpy array) gives a small partial result, and partial results merge by a function of two
of them. :func:`map_reduce` runs such a pass

- over a numpy array or memmap, a batch of rows at a time, in this process;
- over a ``dask.array.Array`` (or a ``dask.dataframe.DataFrame`` of numeric columns):
  each block is processed by a task where it lives (on the workers of a
  ``dask.distributed`` cluster when a ``Client`` is active, else on dask's default
  scheduler), the objects the function needs (a feature map, a box) enter the task graph
  once as their own keys (each worker receives them once, not once per block), and the
  partial results are merged by a tree of ``split_every``-ary merges. Only the merged
  result comes back to the caller, so memory on the caller does not grow with n.

Nothing here is private: a release is made by the caller, once, on the merged result.
Dask is imported only when a dask collection is passed (``pip install pysketch[dask]``).
"""

import numbers

import numpy as np

from . import _core
from ._checks import check_array

__all__ = ["is_dask_collection", "as_dask_array", "check_records", "dask_records", "map_blocks", "map_reduce",
           "column_bounds", "box_stats", "row_count", "all_finite", "update_column_bounds"]

#: Partial results merged per node of the reduction tree on a dask collection.
DEFAULT_SPLIT_EVERY = 8


def is_dask_collection(X):
    """True for a dask array, data frame or series (checked without importing dask).

    Parameters
    ----------
    X : object
        Anything.

    Returns
    -------
    bool
        Whether X is an object of a ``dask`` module with a task graph.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from pysketch.blocks import is_dask_collection
    >>> is_dask_collection(np.zeros((4, 2))), is_dask_collection(da.zeros((4, 2)))
    (False, True)
    """
    module = type(X).__module__ or ""
    return module.split(".")[0] == "dask" and hasattr(X, "__dask_graph__")


def as_dask_array(X, name="X"):
    """The records of a dask array or data frame as a 2-D dask array of real numbers.

    Its blocks hold every column (X is rechunked along the columns when needed; the row
    blocks are kept). A data frame must have numeric (or boolean) numpy columns; its row
    blocks are its partitions, whose lengths may be unknown (``nan``) until computed.

    Parameters
    ----------
    X : dask.array.Array or dask.dataframe.DataFrame
        The records, one per row.
    name : str, default 'X'
        The argument's name, for messages.

    Returns
    -------
    dask.array.Array
        X with one block along the columns.

    Raises
    ------
    TypeError
        If X is neither a dask array nor a data frame, a column of a data frame is not
        numeric, or the array's dtype is not bool, integer or float.
    ValueError
        If the array is not 2-D.

    Examples
    --------
    >>> import dask.array as da
    >>> from pysketch.blocks import as_dask_array
    >>> A = as_dask_array(da.ones((6, 4), chunks=(3, 2)))
    >>> A.shape, A.numblocks
    ((6, 4), (2, 1))
    """
    import dask.array as da

    if not isinstance(X, da.Array):
        dtypes = getattr(X, "dtypes", None)
        if dtypes is None or not hasattr(X, "to_dask_array"):
            raise TypeError(f"{name} must be a 2-D dask array or a dask data frame of numeric columns, "
                            f"got {type(X).__name__}")
        bad = [str(col) for col, t in dtypes.items() if not (isinstance(t, np.dtype) and t.kind in "biuf")]
        if bad:
            raise TypeError(f"{name}: every column of a data frame must hold numbers (numpy int, float or bool "
                            f"dtypes); columns {bad[:5]}{' ...' if len(bad) > 5 else ''} do not (convert them, "
                            "e.g. with .astype('float64'), or select the numeric columns)")
        X = X.to_dask_array()
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows are records), got a dask array of shape {X.shape}")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers, got a dask array of dtype {X.dtype}")
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    return X


def dask_records(X, name="X"):
    """`as_dask_array` with known block lengths and at least one record and one column.

    The lengths of a data frame's partitions are counted (one pass over it). NaN and
    infinity are not looked for here: the passes that read the records find them.

    Parameters
    ----------
    X : dask.array.Array or dask.dataframe.DataFrame
        The records, one per row.
    name : str, default 'X'
        The argument's name, for messages.

    Returns
    -------
    dask.array.Array
        2-D, one block along the columns, every row block's length known.

    Raises
    ------
    ValueError
        If X has no row or no column (and as `as_dask_array`).
    TypeError
        As `as_dask_array`.

    Examples
    --------
    >>> import dask.array as da
    >>> from pysketch.blocks import dask_records
    >>> A = dask_records(da.ones((6, 4), chunks=(4, 4)))
    >>> A.shape, A.chunks[0]
    ((6, 4), (4, 2))
    """
    A = as_dask_array(X, name)
    if not np.isfinite(A.shape[0]):
        A = A.compute_chunk_sizes()
    if A.shape[0] < 1:
        raise ValueError(f"Found array with 0 sample(s) (shape={A.shape}) while a minimum of 1 is required ({name}).")
    if A.shape[1] < 1:
        raise ValueError(f"Found array with 0 feature(s) (shape={A.shape}) while a minimum of 1 is required ({name}).")
    return A


def check_records(X, name="X"):
    """The records of a fit: a finite float64 numpy array, or a dask collection kept lazy.

    Parameters
    ----------
    X : array_like or dask collection
        The records, one per row. In memory it is checked by
        ``pysketch._checks.check_array`` (2-D, at least one row and column, finite, converted
        to float64); a dask collection goes through `dask_records` (its shape and dtype are
        checked now, NaN and infinity by the passes that read it).
    name : str, default 'X'
        The argument's name, for messages.

    Returns
    -------
    numpy.ndarray or dask.array.Array

    Raises
    ------
    ValueError
        If X is not 2-D, has no row or no column, or (in memory) holds NaN or infinity.
    TypeError
        If X is sparse, masked, or does not hold real numbers.

    Examples
    --------
    >>> from pysketch.blocks import check_records
    >>> check_records([[1, 2], [3, 4]]).dtype
    dtype('float64')
    """
    if is_dask_collection(X):
        return dask_records(X, name)
    return check_array(X, name)


def _row_offsets(chunks):
    """The first row of every row block, or None when some block's length is unknown."""
    sizes = np.asarray(chunks, dtype=np.float64)
    if not np.isfinite(sizes).all():
        return None
    return np.concatenate([[0], np.cumsum(sizes[:-1])]).astype(np.int64)


def _batch_rows(A):
    """Rows per call of a block function: about 8 MiB of input, whatever the block size, so
    that the temporaries of a pass (float64 copies, distances) stay small on a worker."""
    return max(1, (8 << 20) // max(1, A.shape[1] * A.dtype.itemsize))


def _run_block(fn, combine, block, first_row, *args):
    """One task of a dask pass: fn over the block's batches of rows, merged by combine."""
    # a block that crossed the network may sit unaligned in its buffer: the kernels need alignment
    block = np.require(block, requirements="A")
    step = _batch_rows(block)
    result = None
    for start in range(0, max(block.shape[0], 1), step):
        first = None if first_row is None else first_row + start
        part = fn(block[start : start + step], first, *args)
        result = part if result is None else combine(result, part)
    return result


def _aligned_call(block, fn, *args):
    return fn(np.require(block, requirements="A"), *args)


def map_blocks(X, fn, *args, **kwargs):
    """``X.map_blocks(fn, *args, **kwargs)``, every block aligned before `fn` sees it.

    A block that crossed the network may sit unaligned in its buffer, and the compiled core
    requires aligned arrays: this is how pysketch maps a lazy transform, predict or
    rescaling over the records.

    Parameters
    ----------
    X : dask.array.Array
        The records.
    fn : callable
        Called as ``fn(block, *args, **kwargs)`` on each (aligned) numpy block.
    *args, **kwargs
        Passed to `fn`, except the keywords that ``dask.array.Array.map_blocks`` itself
        reads (``dtype``, ``chunks``, ``drop_axis``, ``new_axis``, ...).

    Returns
    -------
    dask.array.Array
        The lazy result.

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from pysketch.blocks import map_blocks
    >>> Y = map_blocks(da.ones((6, 2), chunks=3), np.multiply, 2.0)
    >>> float(Y.sum().compute())
    24.0
    """
    return X.map_blocks(_aligned_call, fn, *args, **kwargs)


def _merge_all(combine, first, *rest):
    for part in rest:
        first = combine(first, part)
    return first


def map_reduce(X, block_fn, combine, *, args=(), batch_rows=None, split_every=DEFAULT_SPLIT_EVERY,
               need_offsets=False, name="X"):
    """One pass over the records of X: ``combine`` of ``block_fn(block, first_row, *args)``
    over its blocks of rows.

    Parameters
    ----------
    X : 2-D numpy array or memmap, dask array or dask data frame
        The records, one per row (anything else numpy turns into a 2-D array).
    block_fn : callable
        Called as ``block_fn(block, first_row, *args)``, it returns a partial result.
        `block` is a 2-D numpy array of consecutive records, `first_row` the index of its
        first record in X (None when unknown: a data frame's partitions of unknown length).
        On a dask collection it must be a module-level function (tasks refer to it by name
        on workers).
    combine : callable(a, b) -> merged
        Associative; it may merge b into a and return a.
    args : tuple, default ()
        Passed to every call of `block_fn`; on a dask collection each enters the graph once.
    batch_rows : int, optional
        Rows per call of `block_fn` for a numpy array (default: about 8 MiB of input); a
        dask block is also passed to `block_fn` in batches of about 8 MiB, merged by
        `combine` inside its task.
    split_every : int, default 8
        Partial results merged per node of the dask reduction tree (>= 2).
    need_offsets : bool, default False
        Raise ValueError, instead of passing None, when a dask block's first row is unknown.
    name : str, default 'X'
        The argument's name, for messages.

    Returns
    -------
    object or None
        The merged result; None when X has no block (a numpy array without rows).

    Raises
    ------
    ValueError
        If `split_every` is not an integer >= 2, a numpy X is not 2-D, or `need_offsets` is
        set and a dask block's first row is unknown.
    TypeError
        If a dask X is not a 2-D array or data frame of real numbers (`as_dask_array`).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.blocks import map_reduce
    >>> def column_sums(block, first_row):
    ...     return block.sum(axis=0)
    >>> map_reduce(np.arange(12.0).reshape(6, 2), column_sums, np.add, batch_rows=4)
    array([30., 36.])
    """
    if isinstance(split_every, (bool, np.bool_)) or not isinstance(split_every, numbers.Integral) \
            or split_every < 2:
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}")
    if is_dask_collection(X):
        return _dask_map_reduce(as_dask_array(X, name), block_fn, combine, args, int(split_every), need_offsets,
                                name)
    A = np.asarray(X) if not hasattr(X, "shape") else X
    if A.ndim != 2:
        raise ValueError(f"{name} must be 2-D (rows are records), got shape {A.shape}")
    if batch_rows is None:
        batch_rows = _batch_rows(A)
    result = None
    for start in range(0, A.shape[0], batch_rows):
        part = block_fn(np.asarray(A[start : start + batch_rows]), start, *args)
        result = part if result is None else combine(result, part)
    return result


def _dask_map_reduce(X, block_fn, combine, args, split_every, need_offsets, name):
    import dask

    offsets = _row_offsets(X.chunks[0])
    if offsets is None and need_offsets:
        raise ValueError(f"{name}: the lengths of the dask blocks are unknown (a data frame's partitions); they "
                         "are needed here: pass X.to_dask_array(lengths=True)")
    # each argument becomes one key of the graph, which every block task refers to: the
    # scheduler sends it to each worker once (not once per block)
    shipped = [dask.delayed(a, traverse=False) for a in args]
    run = dask.delayed(_run_block, pure=True)
    blocks = X.to_delayed()[:, 0]
    parts = [run(block_fn, combine, block, None if offsets is None else int(offsets[i]), *shipped)
             for i, block in enumerate(blocks)]
    if not parts:
        return None
    merge = dask.delayed(_merge_all, pure=True)
    while len(parts) > 1:
        parts = [merge(combine, *parts[i : i + split_every]) for i in range(0, len(parts), split_every)]
    (result,) = dask.compute(parts[0])
    return result


# ------------------------------------------------------------------ passes the layers share

# the one entry of the top-level modules to the compiled core's array passes (the
# architecture test: pysketch._core is reached through one backend module per layer)


def all_finite(a):
    """Whether no element of `a` is NaN or infinite.

    One pass in C++, no temporary (2 us for 10240 values, where np.isfinite took 9).

    Parameters
    ----------
    a : numpy.ndarray
        A 2-D C-contiguous float32 or float64 array.

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.blocks import all_finite
    >>> all_finite(np.ones((2, 3))), all_finite(np.array([[1.0, np.nan]]))
    (True, False)
    """
    return _core.all_finite(a)


def update_column_bounds(x, lo, hi):
    """Merge the bounding box of the rows of `x` into (lo, hi), in place.

    lo / hi become the min / max of themselves and of every column of x: the bounding box
    merged across batches, in multi-threaded C++.

    Parameters
    ----------
    x : numpy.ndarray
        The (n, d) rows, finite, C-contiguous float64.
    lo, hi : numpy.ndarray
        float64 arrays of length d, updated in place (start from +inf and -inf).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.blocks import update_column_bounds
    >>> lo, hi = np.full(2, np.inf), np.full(2, -np.inf)
    >>> update_column_bounds(np.array([[1.0, 5.0], [3.0, -2.0]]), lo, hi)
    >>> lo, hi
    (array([ 1., -2.]), array([3., 5.]))
    """
    _core.column_bounds(x, lo, hi)



def _finite_rows(block, first_row, what):
    """Raise ValueError naming the first record of block with NaN or infinity."""
    if block.dtype.kind == "f" and not np.isfinite(block).all():
        bad = int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])
        where = f"record {first_row + bad}" if first_row is not None else f"a record (row {bad} of one block)"
        raise ValueError(f"{where} contains NaN or infinity{what}")


def _bounds_block(block, first_row):
    _finite_rows(block, first_row, "")
    if block.shape[0] == 0:
        d = block.shape[1]
        return np.full(d, np.inf), np.full(d, -np.inf)
    return block.min(axis=0).astype(np.float64), block.max(axis=0).astype(np.float64)


def _merge_bounds(a, b):
    return np.minimum(a[0], b[0]), np.maximum(a[1], b[1])


def column_bounds(X, name="X"):
    """(min, max) of every column of X over all its records, in one pass.

    Parameters
    ----------
    X : 2-D numpy array or memmap, dask array or dask data frame
        The records, one per row.
    name : str, default 'X'
        The argument's name, for messages.

    Returns
    -------
    lower, upper : numpy.ndarray
        float64, shape (d,) each.

    Raises
    ------
    ValueError
        If X has no records, or a record holds NaN or infinity (the message names it).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.blocks import column_bounds
    >>> column_bounds(np.array([[1.0, 5.0], [3.0, -2.0]]))
    (array([ 1., -2.]), array([3., 5.]))
    """
    result = map_reduce(X, _bounds_block, _merge_bounds, name=name)
    if result is None:
        raise ValueError(f"{name} has no records")
    return result


def _box_block(block, first_row, lo, hi):
    lo_b, hi_b = _bounds_block(block, first_row)
    outside = int(np.count_nonzero(((block < lo) | (block > hi)).any(axis=1))) if block.shape[0] else 0
    return lo_b, hi_b, outside, block.shape[0]


def _merge_box(a, b):
    return np.minimum(a[0], b[0]), np.maximum(a[1], b[1]), a[2] + b[2], a[3] + b[3]


def box_stats(X, lo, hi, name="X"):
    """The bounding box of X and how many of its records leave the box [lo, hi], in one pass.

    Parameters
    ----------
    X : 2-D numpy array or memmap, dask array or dask data frame
        The records, one per row.
    lo, hi : array_like of float
        The box (numbers, or one per column).
    name : str, default 'X'
        The argument's name, for messages.

    Returns
    -------
    tuple
        (column minima, column maxima (float64 arrays of shape (d,)), the number of records
        with a coordinate outside [lo, hi], the number of records).

    Raises
    ------
    ValueError
        If X has no records, or a record holds NaN or infinity.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.blocks import box_stats
    >>> box_stats(np.array([[0.5, 0.5], [2.0, 0.1], [0.2, 0.9]]), 0.0, 1.0)
    (array([0.2, 0.1]), array([2. , 0.9]), 1, 3)
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    result = map_reduce(X, _box_block, _merge_box, args=(lo, hi), name=name)
    if result is None:
        raise ValueError(f"{name} has no records")
    return result


def _count_block(block, first_row):
    return block.shape[0]


def row_count(X, name="X"):
    """The number of records of X.

    Read from the shape, except for a dask data frame whose partition lengths are unknown,
    which takes one pass.

    Parameters
    ----------
    X : array_like or dask collection
        The records, one per row.
    name : str, default 'X'
        The argument's name, for messages.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> import dask.array as da
    >>> from pysketch.blocks import row_count
    >>> row_count(np.zeros((5, 2))), row_count(da.zeros((7, 2), chunks=3))
    (5, 7)
    """
    if is_dask_collection(X):
        A = as_dask_array(X, name)
        if np.isfinite(A.shape[0]):
            return int(A.shape[0])
        return int(map_reduce(A, _count_block, _add, name=name) or 0)
    return int(np.shape(X)[0])


def _add(a, b):
    return a + b
