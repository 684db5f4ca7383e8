"""Streaming sketches: the sums of a feature map's features over batches of records.

`SketchAccumulator` reads any source of records (an array, a memmap, an array-like with
row slicing, or an iterable of batches) a batch at a time into the map's float64
accumulators (``FeatureMap.accumulate``) and gives the `Sketch` at the end; memory does not
grow with the number of records. Pages of a memory-mapped file are released as they are
read (`_release_pages`). A dask array or data frame is sketched where its blocks live
(:func:`pysketch.blocks.map_reduce`: one task per block, the map shipped once, a tree of
merges), and only the merged sums come back.

Faults and threads. An accumulator's state (its sums, the number of records sketched and
the number buffered) changes only by one assignment at the end of a step, after every sum
of the step has been computed into temporaries: an exception in the middle of an update (a
record with NaN, a failed dask task, a ``KeyboardInterrupt`` between two batches, an error
in a feature map) leaves the accumulator exactly as it was before the call, never with a
part of a batch added. The methods hold a per-accumulator lock, so one accumulator may be
updated from several threads at once: the result is the sketch of all their records (the
float64 sums added in the order the updates took the lock, so equal to a serial run up to
the rounding of that order; the count exact). The compiled core runs without the GIL, so
separate accumulators (and feature maps) sketch in parallel from Python threads.
"""

import collections.abc
import mmap
import threading

import numpy as np

from ._checks import check_size
from ._random import as_generator
from ._state import FEATURE_MAPS
from .blocks import all_finite, as_dask_array, is_dask_collection, map_reduce
from .sketch import Sketch

__all__ = ["SketchAccumulator"]


class SketchAccumulator:
    """Streaming sketch: ``update(batch)`` as many times as needed, then ``sketch()``.

    Memory does not depend on the number of records: batches are read (and converted to
    the operator's dtype) `batch_size` rows at a time, so a memmap
    (``np.load(path, mmap_mode='r')``) of any size streams through a fixed window, and
    its pages are released once read. Small updates (a record at a time) are validated
    at once and then held in a buffer of `buffer_rows` records that is sketched as one
    block when full or when `sketch()` is called: the per-call costs are paid per block.

    Parameters
    ----------
    feature_map : FeatureMap
    batch_size : int, optional
        Rows read at a time (default: about 8 MiB of input).
    buffer_rows : int, optional
        Records collected from small updates before they are sketched together (default:
        about 256 KiB of input, at most 256 records; 1 sketches every update at once).
    subsample_r : None or int
        None: the full sketch. An int r: the feature-subsampled sketch of
        `FeatureMap.sketch_subsampled` (r frequencies per record, the sum rescaled by m / r).
    subsample_scheme : {'uniform', 'bernoulli', 'blocks'}
        The masks (see `FeatureMap.sketch_subsampled`); only with subsample_r.
    random_state : None, int, numpy Generator, ...
        Seeds the masks (a 128-bit key drawn once, here); only with subsample_r. Record k of
        the stream (counting from 0 over all updates) gets the mask of (key, k), so the
        sketch does not depend on how the records are split into updates.

    Raises
    ------
    TypeError
        If `feature_map` is not a FeatureMap or a size is not an integer; from `update`,
        when X is neither an array nor an iterable of 2-D batches (an item that is a tuple
        included) or holds non-real numbers.
    ValueError
        If `subsample_scheme` or `random_state` is given without `subsample_r`, or the
        subsampling does not suit the map; from `update`, when a batch is not 2-D, has
        another number of columns than the map's input dimension, or holds NaN or infinity
        (or, for a float32 map, a value beyond float32's range): nothing of that call is
        added.

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> fm = pysketch.make_feature_map(2, 16, random_state=0)
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> acc = pysketch.SketchAccumulator(fm)
    >>> acc.update(X[:30]).update(np.array_split(X[30:], 7)).count  # an array, then batches
    100
    >>> np.allclose(acc.sketch().sum, fm.sketch(X).sum)
    True
    """

    def __init__(
        self,
        feature_map,
        *,
        batch_size=None,
        buffer_rows=None,
        subsample_r=None,
        subsample_scheme="uniform",
        random_state=None,
    ):
        FEATURE_MAPS.check(feature_map, "feature_map")
        d = feature_map.d
        item = feature_map.input_dtype.itemsize
        if batch_size is None:
            batch_size = max(1, (8 << 20) // (d * item))
        if buffer_rows is None:
            buffer_rows = max(1, min(256, (256 << 10) // (d * item)))
        batch_size = check_size(batch_size, "batch_size")  # its memory: per update, at most the rows given
        buffer_rows = check_size(buffer_rows, "buffer_rows", nbytes=lambda v: v * d * item,
                                 what=f"for a buffer of {d} columns")
        self.feature_map = feature_map
        self.batch_size = batch_size
        self.buffer_rows = buffer_rows
        self._buffer = np.empty((self.buffer_rows, d), feature_map.input_dtype)
        # (accumulators, records sketched, records buffered): replaced by one assignment per
        # step (_commit), never modified in place, so an interrupted step changes nothing
        self._state = (feature_map.new_accumulators(), 0, 0)
        self._lock = threading.RLock()
        self._subsample = None  # (spec, key0, key1)
        if subsample_r is None:
            if random_state is not None or subsample_scheme != "uniform":
                raise ValueError("subsample_scheme and random_state apply only with subsample_r (the masks' r)")
        else:
            spec = feature_map.subsampling_spec(subsample_r, subsample_scheme)
            # 128 bits for the masks: from the caller's source, never from the operator's seed
            key = as_generator(random_state).integers(0, 2**64, size=2, dtype=np.uint64)
            self._subsample = (spec, int(key[0]), int(key[1]))

    def _masks(self, first):
        """The subsample argument of FeatureMap.accumulate for records first, first + 1, ..."""
        if self._subsample is None:
            return None
        spec, key0, key1 = self._subsample
        return (spec, key0, key1, first)

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"]  # a lock cannot be pickled; a new one is made on loading
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.RLock()

    @property
    def _accs(self):
        return self._state[0]

    @property
    def _sketched(self):
        return self._state[1]

    @property
    def _buffered(self):
        return self._state[2]

    def _commit(self, part, count, buffered):
        """The state after adding the sums `part` of `count` records, with `buffered` records
        left in the buffer: new arrays, assigned at once (an interruption before the
        assignment leaves the old state whole)."""
        accs, sketched, _ = self._state
        new = tuple(total if total is None else total + extra for total, extra in zip(accs, part))
        self._state = (new, sketched + count, buffered)

    @property
    def count(self):
        """Records added so far (buffered ones included)."""
        accs, sketched, buffered = self._state
        return sketched + buffered

    def update(self, X):
        """Add the records of X: a 2-D array (rows are records; memmaps and array-likes with
        ``shape`` and row slicing, such as h5py datasets, are read in batches), a list of
        rows, an iterable of 2-D batches (a list of 2-D arrays, a generator...), or a dask
        array or data frame of numeric columns (each block sketched by a task where it
        lives, see pysketch.blocks; the sketch equals the in-memory one up to the order of
        the float64 additions).

        Atomic: if any record is NaN or infinite, or a batch has the wrong shape, nothing of
        this call is added and ValueError says which record; the same holds for any other
        exception during the call (a ``KeyboardInterrupt``, a failed dask task, an iterator
        that raises): the accumulator is left as it was before the call. Thread-safe: calls
        from several threads are serialized by the accumulator's lock. Returns self.
        """
        with self._lock:
            self._update(X)
        return self

    def _update(self, X):
        if isinstance(X, np.ndarray) and X.ndim == 2 and X.shape[0] <= self.buffer_rows - self._buffered:
            self._buffer_rows(X)  # small update: validated now, sketched with its block
            return
        if self._subsample is not None:
            # the masks follow the stream positions: the buffered records (which came first)
            # are sketched first, so that positions are unique and in arrival order
            self._flush()
        accs = self.feature_map.new_accumulators()
        count = 0
        if isinstance(X, np.ndarray):
            count += self._add_array(X, accs, 0)
        elif is_dask_collection(X):
            count += self._add_dask(X, accs)
        elif _is_array_like(X):  # read by row slices, never iterated row by row
            count += self._add_array(X, accs, 0)
        elif hasattr(X, "__array__") and not isinstance(X, (list, tuple)):  # a pandas DataFrame...
            count += self._add_array(np.asarray(X), accs, 0)
        elif isinstance(X, (list, tuple)) and not (len(X) and np.ndim(X[0]) == 2):
            count += self._add_array(np.asarray(X), accs, 0)
        elif isinstance(X, collections.abc.Iterable) and not isinstance(X, (str, bytes)):
            for i, batch in enumerate(X):
                if isinstance(batch, tuple):  # (X, (lo, hi)) or (X, y): not batches of records
                    raise TypeError(
                        f"X must be a 2-D array or an iterable of 2-D arrays; item {i} of X is a tuple, not a "
                        "batch of records (pass bounds or targets to their own arguments, not as (X, bounds))")
                count += self._add_array(batch if isinstance(batch, np.ndarray) else np.asarray(batch), accs, count)
        else:
            raise TypeError(f"X must be a 2-D array or an iterable of 2-D arrays, got {type(X).__name__}")
        self._commit(accs, count, self._buffered)

    def _check_batch(self, A):
        if A.ndim != 2:
            raise ValueError(f"a batch must be 2-D (rows are records), got {A.ndim} dimensions (shape {A.shape})")
        d = self.feature_map.d
        if A.shape[1] != d:
            raise ValueError(f"a batch must have {d} columns (the map's input dimension), got shape {A.shape}")
        if A.dtype.kind not in "biuf":
            raise TypeError(f"a batch must hold real numbers, got dtype {A.dtype}")

    def _buffer_rows(self, A):
        self._check_batch(A)
        k = A.shape[0]
        if k == 0:
            return
        buffered = self._buffered
        # rows past the buffered count are free: written here, counted only by the commit
        dest = self._buffer[buffered : buffered + k]
        with np.errstate(over="ignore"):  # beyond a float32 map's range: reported below
            np.copyto(dest, A, casting="unsafe")
        if not all_finite(dest):
            _raise_non_finite(A, dest, 0, "record")
        if buffered + k == self.buffer_rows:
            self._flush(buffered + k)
        else:
            self._state = self._state[:2] + (buffered + k,)

    def _flush(self, buffered=None):
        """Sketch the first `buffered` rows of the buffer (default: the buffered records)."""
        if buffered is None:
            buffered = self._buffered
        if buffered:
            part = self.feature_map.new_accumulators()
            self.feature_map.accumulate(self._buffer[:buffered], part, self._masks(self._sketched))
            self._commit(part, buffered, 0)

    def _add_array(self, A, accs, offset):
        """Add the rows of A into accs batch by batch; returns the number of rows."""
        self._check_batch(A)
        dtype = self.feature_map.input_dtype
        # a batch is copied in the map's dtype (a memmap's rows are read): refused before
        check_size(self.batch_size, "batch_size", nbytes=min(self.batch_size, A.shape[0]) * A.shape[1] * dtype.itemsize,
                   what=f"for a batch of the {A.shape[0]} rows of X")
        for start in range(0, A.shape[0], self.batch_size):
            rows = A[start : start + self.batch_size]
            with np.errstate(over="ignore"):  # beyond a float32 map's range: reported below
                chunk = np.ascontiguousarray(rows, dtype=dtype)
            if not all_finite(chunk):
                _raise_non_finite(rows, chunk, offset + start, "record")
            self.feature_map.accumulate(chunk, accs, self._masks(self._sketched + offset + start))
            if isinstance(A, np.ndarray):
                _release_pages(A, A[start : start + self.batch_size])
        return A.shape[0]

    def _add_dask(self, X, accs):
        """Add the records of a dask collection into accs: one sketching task per block,
        the partial sums merged by a tree; returns the number of records."""
        X = as_dask_array(X)
        self._check_batch(X)
        masks = None
        if self._subsample is not None:
            spec, key0, key1 = self._subsample
            masks = (spec, key0, key1, self._sketched)  # block masks start at this stream position
        result = map_reduce(X, _sketch_block, _merge_partial_sums, args=(self.feature_map, masks),
                            need_offsets=masks is not None)
        if result is None:
            return 0
        sums, count = result
        for total, part in zip(accs, sums):
            if total is not None:
                total += part
        return count

    def sketch(self):
        """The Sketch of everything added so far."""
        with self._lock:
            self._flush()
            accs, sketched, buffered = self._state
        fm = self.feature_map
        subsampling = None if self._subsample is None else self._subsample[0]
        return Sketch(fm, fm.sums(accs), sketched + buffered, subsampling=subsampling)


def _sketch_block(block, first_row, feature_map, masks):
    """The map's accumulators of a batch of records (at most about 8 MiB: map_reduce splits
    a dask block) and its number of rows; first_row: the batch's position in the collection."""
    with np.errstate(over="ignore"):  # beyond a float32 map's range: reported below
        cast = np.ascontiguousarray(block, dtype=feature_map.input_dtype)
    if not all_finite(cast):
        if first_row is None:
            _raise_non_finite(block, cast, 0, "row", " of one block")
        _raise_non_finite(block, cast, first_row, "record")
    block = cast
    accs = feature_map.new_accumulators()
    if block.shape[0]:
        if masks is not None:
            spec, key0, key1, first = masks
            masks = (spec, key0, key1, first + first_row)
        feature_map.accumulate(block, accs, masks)
    return accs, block.shape[0]


def _raise_non_finite(rows, cast, first, what, where=""):
    """ValueError naming the first row of `cast` (`rows` in the map's dtype) that is not
    finite: NaN or infinity in the data, or a finite value beyond the range of a float32
    map (|x| > 3.4e38), which the cast made infinite."""
    bad = int(np.flatnonzero(~np.isfinite(cast).all(axis=1))[0])
    row = np.asarray(rows[bad : bad + 1], dtype=np.float64)
    name = f"{what} {first + bad}{where}"
    if np.isfinite(row).all():
        top = float(np.max(np.abs(row)))
        raise ValueError(f"{name} has a coordinate of magnitude {top:.3g}, beyond the range of the map's dtype "
                         f"{cast.dtype} (largest {float(np.finfo(cast.dtype).max):.3g}); make the map with "
                         "dtype=float64 or rescale the data; nothing of this update was added")
    raise ValueError(f"{name} contains NaN or infinity; nothing of this update was added")


def _merge_partial_sums(a, b):
    for total, part in zip(a[0], b[0]):
        if total is not None:
            total += part
    return a[0], a[1] + b[1]


def _is_array_like(X):
    """A 2-D array that is not a numpy array but has a shape and row slicing (a dask or
    zarr array, an h5py dataset...): read as an array, a batch of rows at a time."""
    shape = getattr(X, "shape", None)
    return (not isinstance(X, (list, tuple)) and isinstance(shape, tuple) and len(shape) == 2
            and hasattr(X, "__getitem__") and hasattr(X, "dtype"))


try:  # numpy >= 2
    from numpy.lib.array_utils import byte_bounds as _byte_bounds
except ImportError:  # numpy 1.x
    _byte_bounds = np.byte_bounds


def _release_pages(A, part):
    """Once `part` of a memory-mapped array A has been read, drop its pages from this
    process's resident memory (madvise MADV_DONTNEED; the file's page cache keeps them),
    so that streaming a memmap of any size keeps the process's memory bounded. Pages of a
    read-only file mapping are clean: they are read again from the file if touched."""
    mm = getattr(A, "_mmap", None)
    if mm is None or not hasattr(mm, "madvise") or not hasattr(mmap, "MADV_DONTNEED") or part.size == 0:
        return
    base = np.frombuffer(mm, np.uint8).__array_interface__["data"][0]
    low, high = _byte_bounds(part)
    lo, hi = low - base, high - base
    page = mmap.PAGESIZE
    lo_page = max(0, lo // page * page)
    hi_page = min(len(mm), -(-hi // page) * page)
    if hi_page > lo_page:
        mm.madvise(mmap.MADV_DONTNEED, lo_page, hi_page - lo_page)
