"""Sketches: the sum of the features of a dataset, its count, and the feature map.

A sketch is mergeable: the sketch of the union of two datasets is the sum of their
sketches (``a + b``), which is how streams, chunks, workers and machines combine. The
average ``mean()`` is what learning algorithms match.

File format (``Sketch.save`` / ``Sketch.load``): one NumPy ``.npz`` archive, written and
read without pickle, holding

- ``meta``: a 0-d unicode array, the JSON metadata: ``{"format": "pysketch.sketch",
  "version": 1, "count": n, "feature_map": {...}, "checksum": "<sha256 hex>", ...}``;
- ``sum``: the sum of the features (complex128 (m,) or float64 (m,) / (2m,));
- ``map_*``: every random array of the feature map (the operator's diagonals, radii,
  permutations or dense matrix, and the dither), so that the map is rebuilt exactly,
  independently of any random number generator or library version.

The checksum is the SHA-256 of the metadata without its checksum field and of every
array (name, dtype, shape, bytes); loading recomputes it, so a truncated or edited file
gives a clear error instead of a wrong sketch.

A feature-subsampled sketch (`FeatureMap.sketch_subsampled`) also records its subsampling in
the metadata, ``"subsampling": {"scheme", "r", "m", "scale", "block_size"}``, and is written
with ``"version": 2``, so that a reader that does not know subsampling refuses it rather than
taking it for a full sketch (its sensitivities differ); full sketches are still version 1.
"""

import collections.abc
import hashlib
import json
import mmap
import numbers
import os

import numpy as np

from . import _core
from ._random import as_generator
from .features import FeatureMap

__all__ = ["Sketch", "SketchAccumulator", "SketchFileError", "FORMAT_NAME", "FORMAT_VERSION"]

FORMAT_NAME = "pysketch.sketch"
FORMAT_VERSION = 1
#: The version of files of subsampled sketches (version 1 plus the "subsampling" entry).
SUBSAMPLED_FORMAT_VERSION = 2


class SketchFileError(ValueError):
    """A sketch file is not a valid pysketch sketch (truncated, edited or not one)."""


class Sketch:
    """The sum of the features of a dataset, its number of records, and the map.

    Parameters
    ----------
    feature_map : FeatureMap
    sum : array_like
        Sum of Phi(x) over the records: complex (m,) for complex and quantized maps, real
        (2m,) for 'real', real (m,) for 'quadratic'.
    count : int
        Number of records (>= 0).
    subsampling : None or dict
        None for a full sketch. For a feature-subsampled one (`FeatureMap.sketch_subsampled`)
        ``{"scheme": 'uniform' | 'bernoulli' | 'blocks', "r": r, "m": m, "scale": m / r,
        "block_size": d_p or None}``: sum = (m / r) sum_i Phi(x_i) (.) h_i, with exactly r
        frequencies per record in h_i ('uniform', 'blocks': r / d_p whole blocks) or
        Bernoulli(r / m) ones ('bernoulli'). The privacy layer reads it for the sensitivities.
    """

    def __init__(self, feature_map, sum, count, *, subsampling=None):
        if not isinstance(feature_map, FeatureMap):
            raise TypeError(f"feature_map must be a FeatureMap, got {type(feature_map).__name__}")
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, numbers.Integral) or count < 0:
            raise ValueError(f"count must be a non-negative integer, got {count!r}")
        s = np.array(sum, dtype=feature_map.sum_dtype)  # a copy: the sketch owns its sum
        if s.shape != (feature_map.output_dim,):
            raise ValueError(f"sum must have shape ({feature_map.output_dim},), got {s.shape}")
        # (the C++ check over the float64 parts: 2 us at m = 10240 where np.isfinite took 9)
        if not _core.all_finite(s.view(np.float64).reshape(1, -1)):
            raise ValueError("sum must be finite")
        self.feature_map = feature_map
        self.sum = s
        self.count = int(count)
        self.subsampling = _check_subsampling(feature_map, subsampling)

    def mean(self):
        """sum / count, the empirical average of the features (count must be positive)."""
        if self.count == 0:
            raise ValueError("the sketch of an empty dataset has no mean (count is 0)")
        return self.sum / self.count

    def __add__(self, other):
        if not isinstance(other, Sketch):
            return NotImplemented
        if other.feature_map is not self.feature_map and other.feature_map != self.feature_map:
            raise ValueError(
                "cannot merge sketches made with different feature maps (the operators, frequencies "
                "or dither differ); sketch every part with the same FeatureMap"
            )
        if self.subsampling != other.subsampling:
            raise ValueError(
                "cannot merge sketches made with different feature subsampling "
                f"({self.subsampling!r} and {other.subsampling!r}): their records' sensitivities differ"
            )
        return Sketch(self.feature_map, self.sum + other.sum, self.count + other.count, subsampling=self.subsampling)

    def __radd__(self, other):
        if isinstance(other, numbers.Integral) and other == 0:  # sum([a, b, c])
            return self
        return NotImplemented

    def __repr__(self):
        sub = ""
        if self.subsampling is not None:
            sub = f", subsampling={self.subsampling['scheme']!r} r={self.subsampling['r']}"
        return f"Sketch(count={self.count}, {self.feature_map!r}{sub})"

    # ------------------------------------------------------------------ files

    _FORMAT = FORMAT_NAME

    def _extra_meta(self):
        """Metadata a subclass adds to the file (PrivateSketch: its privacy record)."""
        return {}

    def save(self, path):
        """Write the sketch to `path` (a .npz file; see the module docstring)."""
        map_meta, map_arrays = self.feature_map.get_state()
        arrays = {"sum": self.sum}
        arrays.update({f"map_{k}": np.ascontiguousarray(v) for k, v in map_arrays.items()})
        meta = {"format": self._FORMAT, "version": FORMAT_VERSION, "count": self.count, "feature_map": map_meta}
        meta.update(self._extra_meta())
        if self.subsampling is not None:
            meta["version"] = SUBSAMPLED_FORMAT_VERSION
            meta["subsampling"] = dict(self.subsampling)
        meta["checksum"] = _checksum(meta, arrays)
        with open(os.fspath(path), "wb") as f:
            np.savez(f, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)

    @classmethod
    def load(cls, path):
        """Read a sketch written by `save`; raises SketchFileError if the file is damaged."""
        path = os.fspath(path)
        try:
            with np.load(path, allow_pickle=False) as z:
                contents = {name: z[name] for name in z.files}
        except (OSError, ValueError, EOFError) as exc:
            raise SketchFileError(f"{path}: not a readable pysketch sketch file ({exc})") from exc
        except Exception as exc:  # zipfile.BadZipFile and friends: truncated or not a zip
            raise SketchFileError(f"{path}: not a readable pysketch sketch file ({type(exc).__name__}: {exc})") from exc
        if "meta" not in contents or "sum" not in contents:
            raise SketchFileError(f"{path}: not a pysketch sketch file (missing 'meta' or 'sum')")
        try:
            meta = json.loads(str(contents.pop("meta")))
        except (TypeError, ValueError) as exc:
            raise SketchFileError(f"{path}: damaged metadata ({exc})") from exc
        private = isinstance(meta, dict) and meta.get("format") == "pysketch.private_sketch"
        if not isinstance(meta, dict) or (meta.get("format") != FORMAT_NAME and not private):
            raise SketchFileError(f"{path}: not a pysketch sketch file (format {meta.get('format')!r})")
        version = meta.get("version")
        if version not in (FORMAT_VERSION, SUBSAMPLED_FORMAT_VERSION) or isinstance(version, bool):
            raise SketchFileError(
                f"{path}: sketch file format version {version!r}; this pysketch reads versions "
                f"{FORMAT_VERSION} and {SUBSAMPLED_FORMAT_VERSION} (subsampled sketches)"
            )
        if (version == SUBSAMPLED_FORMAT_VERSION) != ("subsampling" in meta):
            raise SketchFileError(
                f"{path}: sketch file format version {version!r} "
                + ("must record its subsampling" if version == SUBSAMPLED_FORMAT_VERSION else "has a subsampling entry")
            )
        stored = meta.pop("checksum", None)
        if stored != _checksum(meta, contents):
            raise SketchFileError(f"{path}: checksum mismatch: the file was modified or damaged")
        if private:  # a PrivateSketch file (pysketch.privacy): same layout plus the privacy record
            from .privacy.private_sketch import PrivateSketch

            return PrivateSketch._from_contents(path, meta, contents)
        if cls is not Sketch:
            raise SketchFileError(f"{path}: a clean sketch file, not a {cls.__name__}")
        try:
            return cls(_map_from(meta, contents), contents["sum"], meta["count"], subsampling=meta.get("subsampling"))
        except (KeyError, TypeError, ValueError) as exc:
            raise SketchFileError(f"{path}: inconsistent sketch file ({exc})") from exc


def _map_from(meta, contents):
    """The FeatureMap of a sketch file's metadata and map_* arrays."""
    map_arrays = {k[len("map_"):]: v for k, v in contents.items() if k.startswith("map_")}
    return FeatureMap.from_state(meta["feature_map"], map_arrays)


def _check_subsampling(feature_map, subsampling):
    """None, or the canonical subsampling dict of `feature_map` (validated; see Sketch)."""
    if subsampling is None:
        return None
    if not isinstance(subsampling, dict) or "scheme" not in subsampling or "r" not in subsampling:
        raise ValueError(f"subsampling must be None or a dict with 'scheme' and 'r', got {subsampling!r}")
    spec = feature_map._subsampling_spec(subsampling["r"], subsampling["scheme"])
    for key, value in subsampling.items():
        if key not in spec:
            raise ValueError(f"subsampling has an unknown entry {key!r}")
        if value != spec[key]:
            raise ValueError(f"subsampling[{key!r}] is {value!r}; for this map and r it must be {spec[key]!r}")
    return spec


def _checksum(meta, arrays):
    h = hashlib.sha256(json.dumps({k: v for k, v in meta.items() if k != "checksum"}, sort_keys=True).encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode())
        h.update(a.dtype.str.encode())
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


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
        if not isinstance(feature_map, FeatureMap):
            raise TypeError(f"feature_map must be a FeatureMap, got {type(feature_map).__name__}")
        d = feature_map.d
        item = feature_map.operator.dtype.itemsize
        if batch_size is None:
            batch_size = max(1, (8 << 20) // (d * item))
        if buffer_rows is None:
            buffer_rows = max(1, min(256, (256 << 10) // (d * item)))
        for name, value in (("batch_size", batch_size), ("buffer_rows", buffer_rows)):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        self.feature_map = feature_map
        self.batch_size = int(batch_size)
        self.buffer_rows = int(buffer_rows)
        m = feature_map.m
        self._acc0 = np.zeros(m)
        self._acc1 = None if feature_map.kind == "quadratic" else np.zeros(m)
        self._buffer = np.empty((self.buffer_rows, d), feature_map.operator.dtype)
        self._buffered = 0
        self._sketched = 0
        self._subsample = None  # (spec, key0, key1)
        if subsample_r is None:
            if random_state is not None or subsample_scheme != "uniform":
                raise ValueError("subsample_scheme and random_state apply only with subsample_r (the masks' r)")
        else:
            spec = feature_map._subsampling_spec(subsample_r, subsample_scheme)
            # 128 bits for the masks: from the caller's source, never from the operator's seed
            key = as_generator(random_state).integers(0, 2**64, size=2, dtype=np.uint64)
            self._subsample = (spec, int(key[0]), int(key[1]))

    def _masks(self, first):
        """The subsample argument of FeatureMap._accumulate for records first, first + 1, ..."""
        if self._subsample is None:
            return None
        spec, key0, key1 = self._subsample
        return (spec, key0, key1, first)

    @property
    def count(self):
        """Records added so far (buffered ones included)."""
        return self._sketched + self._buffered

    def update(self, X):
        """Add the records of X: a 2-D array (rows are records; memmaps are read in batches),
        a list of rows, or an iterable of 2-D batches (a list of 2-D arrays, a generator...).

        Atomic: if any record is NaN or infinite, or a batch has the wrong shape, nothing of
        this call is added and ValueError says which record. Returns self.
        """
        if isinstance(X, np.ndarray) and X.ndim == 2 and X.shape[0] <= self.buffer_rows - self._buffered:
            self._buffer_rows(X)  # small update: validated now, sketched with its block
            return self
        if self._subsample is not None:
            # the masks follow the stream positions: the buffered records (which came first)
            # are sketched first, so that positions are unique and in arrival order
            self._flush()
        acc0 = np.zeros_like(self._acc0)
        acc1 = None if self._acc1 is None else np.zeros_like(self._acc1)
        count = 0
        if isinstance(X, np.ndarray):
            count += self._add_array(X, acc0, acc1, 0)
        elif isinstance(X, (list, tuple)) and not (len(X) and np.ndim(X[0]) == 2):
            count += self._add_array(np.asarray(X), acc0, acc1, 0)
        elif isinstance(X, collections.abc.Iterable) and not isinstance(X, (str, bytes)):
            for batch in X:
                count += self._add_array(batch if isinstance(batch, np.ndarray) else np.asarray(batch), acc0, acc1, count)
        elif hasattr(X, "__array__"):
            count += self._add_array(np.asarray(X), acc0, acc1, 0)
        else:
            raise TypeError(f"X must be a 2-D array or an iterable of 2-D arrays, got {type(X).__name__}")
        self._acc0 += acc0
        if acc1 is not None:
            self._acc1 += acc1
        self._sketched += count
        return self

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
        dest = self._buffer[self._buffered : self._buffered + k]
        np.copyto(dest, A, casting="unsafe")
        if not _core.all_finite(dest):
            bad = int(np.flatnonzero(~np.isfinite(dest).all(axis=1))[0])
            raise ValueError(f"record {bad} contains NaN or infinity; nothing of this update was added")
        self._buffered += k
        if self._buffered == self.buffer_rows:
            self._flush()

    def _flush(self):
        if self._buffered:
            self.feature_map._accumulate(
                self._buffer[: self._buffered], self._acc0, self._acc1, self._masks(self._sketched)
            )
            self._sketched += self._buffered
            self._buffered = 0

    def _add_array(self, A, acc0, acc1, offset):
        """Add the rows of A into acc0/acc1 batch by batch; returns the number of rows."""
        self._check_batch(A)
        dtype = self.feature_map.operator.dtype
        for start in range(0, A.shape[0], self.batch_size):
            chunk = np.ascontiguousarray(A[start : start + self.batch_size], dtype=dtype)
            if not _core.all_finite(chunk):
                bad = offset + start + int(np.flatnonzero(~np.isfinite(chunk).all(axis=1))[0])
                raise ValueError(f"record {bad} contains NaN or infinity; nothing of this update was added")
            self.feature_map._accumulate(chunk, acc0, acc1, self._masks(self._sketched + offset + start))
            _release_pages(A, A[start : start + self.batch_size])
        return A.shape[0]

    def sketch(self):
        """The Sketch of everything added so far."""
        self._flush()
        fm = self.feature_map
        subsampling = None if self._subsample is None else self._subsample[0]
        return Sketch(fm, fm._sum_from_accumulators(self._acc0, self._acc1), self.count, subsampling=subsampling)


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
