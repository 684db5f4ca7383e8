"""Sketches: the sum of the features of a dataset, its count, and the feature map.

A sketch is mergeable: the sketch of the union of two datasets is the sum of their
sketches (``a + b``), which is how streams, chunks, workers and machines combine. The
average ``mean()`` is what learning algorithms match.

File format (``Sketch.save`` / ``Sketch.load``): the pysketch container (pysketch._archive:
an uncompressed .npz, read without pickle, every byte, header and size checked before
anything is allocated), holding

- ``meta``: the JSON metadata: ``{"format": "pysketch.sketch", "version": 1, "count": n,
  "feature_map": {...}, "checksum": "<sha256 hex>", ...}``;
- ``sum``: the sum of the features (complex128 (m,) or float64 (m,) / (2m,));
- ``map_*``: every random array of the feature map (the operator's diagonals, radii,
  permutations or dense matrix, and the dither), so that the map is rebuilt exactly,
  independently of any random number generator or library version.

The checksum is the SHA-256 of the metadata without its checksum field and of every
array (name, dtype, shape, bytes). A missing file raises FileNotFoundError; a truncated,
edited, oversize, foreign or newer-version file raises `SketchFileError` (a ValueError)
naming the path and the cause.

The named sums of a sketch are those of its map (``FeatureMap.sum_layout``): one, ``sum``,
for the maps here; maps with several sums (matrix-valued sketches) store the others as
``sum_<name>``. Sketch classes register their format name (pysketch._state.SKETCH_FORMATS),
so that reading a file never names a subclass; pickling goes through the same state.

A feature-subsampled sketch (`FeatureMap.sketch_subsampled`) also records its subsampling in
the metadata, ``"subsampling": {"scheme", "r", "m", "scale", "block_size"}``, and is written
with ``"version": 2``, so that a reader that does not know subsampling refuses it rather than
taking it for a full sketch (its sensitivities differ); full sketches are still version 1.
"""

import numbers

import numpy as np

from ._archive import SketchFileError, read, write
from ._state import FEATURE_MAPS, SKETCH_FORMATS, Stateful
from .blocks import all_finite

__all__ = ["Sketch", "SketchFileError", "FORMAT_NAME", "FORMAT_VERSION", "SUBSAMPLED_FORMAT_VERSION"]

#: The format name of a sketch file (its metadata's "format" entry).
FORMAT_NAME = "pysketch.sketch"
#: The version of files of full (not subsampled) sketches.
FORMAT_VERSION = 1
#: The version of files of subsampled sketches (version 1 plus the "subsampling" entry).
SUBSAMPLED_FORMAT_VERSION = 2


#: The names of a sketch file's arrays: the sums and the map's arrays.
_MEMBER_NAMES = r"sum|sum_\w+|map_\w+"


def _array_key(name):
    """The file/state key of the named sum `name`."""
    return "sum" if name == "sum" else "sum_" + name


class Sketch(Stateful):
    """The sums of the features of a dataset, its number of records, and the map.

    Sketches are mergeable: ``a + b`` is the sketch of the union of the two datasets (and
    ``sum([a, b, c])`` works). `mean` is what learning algorithms match; `save` and `load`
    write and read the file format of the module docstring. Sketches pickle (through their
    state, as files do) and compare equal when their map, sums, count, subsampling (and
    privacy record) are equal.

    Parameters
    ----------
    feature_map : FeatureMap
        The map whose features were summed.
    sum : array_like or dict
        Sum of Phi(x) over the records: complex (m,) for complex and quantized maps, real
        (2m,) for 'real', real (m,) for 'quadratic'; for a map with several named sums
        (``feature_map.sum_layout()``), a dict of them. Copied, and checked finite.
    count : int
        Number of records (>= 0).
    subsampling : None or dict
        None for a full sketch. For a feature-subsampled one (`FeatureMap.sketch_subsampled`)
        ``{"scheme": 'uniform' | 'bernoulli' | 'blocks', "r": r, "m": m, "scale": m / r,
        "block_size": d_p or None}``: sum = (m / r) sum_i Phi(x_i) (.) h_i, with exactly r
        frequencies per record in h_i ('uniform', 'blocks': r / d_p whole blocks) or
        Bernoulli(r / m) ones ('bernoulli'). The privacy layer reads it for the sensitivities.

    Raises
    ------
    TypeError
        If `feature_map` is not a FeatureMap or a sum is not numeric.
    ValueError
        If `count` is not a non-negative integer, a sum has the wrong shape or is not
        finite, or `subsampling` does not match the map; from ``a + b``, when the two
        sketches have different maps or subsampling; from `mean`, when the count is 0.
    SketchFileError
        From `load`, when the file is damaged, edited, of another kind or of a newer
        version (a missing file raises FileNotFoundError).

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> fm = pysketch.make_feature_map(2, 16, random_state=0)
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> merged = fm.sketch(X[:60]) + fm.sketch(X[60:])
    >>> merged.count, merged.mean().shape, np.allclose(merged.sum, fm.sketch(X).sum)
    (100, (16,), True)
    """

    _registry = SKETCH_FORMATS
    _FORMAT = FORMAT_NAME
    _DESCRIPTION = "clean sketch"
    __hash__ = None  # equal by value, and mutable

    def __init__(self, feature_map, sum, count, *, subsampling=None):
        FEATURE_MAPS.check(feature_map, "feature_map")
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, numbers.Integral) or count < 0:
            raise ValueError(f"count must be a non-negative integer, got {count!r}")
        self.feature_map = feature_map
        self.sums = _check_sums(feature_map, sum)
        self.count = int(count)
        self.subsampling = _check_subsampling(feature_map, subsampling)

    @property
    def sum(self):
        """The sum of the features (the named sum 'sum')."""
        return self.sums["sum"]

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
        sums = {name: a + other.sums[name] for name, a in self.sums.items()}
        return Sketch(self.feature_map, sums, self.count + other.count, subsampling=self.subsampling)

    def __radd__(self, other):
        if isinstance(other, numbers.Integral) and other == 0:  # sum([a, b, c])
            return self
        return NotImplemented

    def __repr__(self):
        sub = ""
        if self.subsampling is not None:
            sub = f", subsampling={self.subsampling['scheme']!r} r={self.subsampling['r']}"
        return f"Sketch(count={self.count}, {self.feature_map!r}{sub})"

    # ------------------------------------------------------------------ state and files

    def _extra_meta(self):
        """Metadata a subclass adds to its state (PrivateSketch: its privacy record)."""
        return {}

    def get_state(self):
        """(metadata, arrays): what a file holds (without its checksum) and what pickling
        carries; `Sketch.from_state` rebuilds the sketch (of the registered format)."""
        map_meta, map_arrays = self.feature_map.get_state()
        arrays = {_array_key(name): a for name, a in self.sums.items()}
        arrays.update({f"map_{k}": np.ascontiguousarray(v) for k, v in map_arrays.items()})
        meta = {"format": self._FORMAT, "version": FORMAT_VERSION, "count": self.count, "feature_map": map_meta}
        meta.update(self._extra_meta())
        if self.subsampling is not None:
            meta["version"] = SUBSAMPLED_FORMAT_VERSION
            meta["subsampling"] = dict(self.subsampling)
        return meta, arrays

    @staticmethod
    def from_state(meta, arrays):
        """The sketch of a state (`get_state`), of the class registered for its format."""
        return SKETCH_FORMATS.from_state(meta, arrays)

    @staticmethod
    def _map_and_sums(meta, arrays):
        """The FeatureMap of a state's metadata and map_* arrays, and its named sums."""
        map_arrays = {k[len("map_"):]: v for k, v in arrays.items() if k.startswith("map_")}
        fm = FEATURE_MAPS.from_state(meta["feature_map"], map_arrays)
        return fm, {name: arrays[_array_key(name)] for name in fm.sum_layout()}

    @classmethod
    def _from_state(cls, meta, arrays):
        fm, sums = cls._map_and_sums(meta, arrays)
        return cls(fm, sums, meta["count"], subsampling=meta.get("subsampling"))

    def save(self, path):
        """Write the sketch to `path` (a .npz file; see the module docstring)."""
        meta, arrays = self.get_state()
        write(path, meta.pop("format"), meta.pop("version"), meta, arrays)

    @classmethod
    def load(cls, path):
        """Read a sketch written by `save` (of this class or a subclass: Sketch.load reads
        private sketch files too). FileNotFoundError if there is no such file,
        SketchFileError if it is damaged, edited, of another kind or of a newer version."""
        # the private sketch's format registers itself when pysketch.privacy (a layer above
        # this one) is imported: the package root declares it as a provider of formats, so
        # that Sketch.load reads private files in any program without importing it here
        SKETCH_FORMATS.load_providers()
        versions = (FORMAT_VERSION, SUBSAMPLED_FORMAT_VERSION)
        meta, arrays = read(path, {name: versions for name in SKETCH_FORMATS.names()},
                            what="pysketch sketch file", names=_MEMBER_NAMES)
        path = str(path)
        version = meta["version"]
        if (version == SUBSAMPLED_FORMAT_VERSION) != ("subsampling" in meta):
            raise SketchFileError(
                f"{path}: sketch file format version {version!r} "
                + ("must record its subsampling" if version == SUBSAMPLED_FORMAT_VERSION else "has a subsampling entry")
            )
        found = SKETCH_FORMATS.get(meta["format"])
        if not issubclass(found, cls):
            raise SketchFileError(f"{path}: a {found._DESCRIPTION} file, not a {cls.__name__}")
        try:
            return found._from_state(meta, arrays)
        except (KeyError, TypeError, ValueError) as exc:
            raise SketchFileError(f"{path}: inconsistent {found._DESCRIPTION} file ({exc})") from exc


SKETCH_FORMATS.register(FORMAT_NAME, Sketch)
SKETCH_FORMATS.base = Sketch


def _check_sums(feature_map, sums):
    """The named sums of `feature_map` as owned (copied), finite arrays of its layout."""
    layout = feature_map.sum_layout()
    if not isinstance(sums, dict):
        if len(layout) != 1:
            raise ValueError(f"this map's sketches hold several sums {tuple(layout)}: pass sum as a dict of them")
        sums = {next(iter(layout)): sums}
    if set(sums) != set(layout):
        raise ValueError(f"sum must hold the sums {tuple(layout)}, got {tuple(sums)}")
    out = {}
    for name, (shape, dtype) in layout.items():
        try:
            a = np.array(sums[name], dtype=dtype)  # a copy: the sketch owns its sums
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{_array_key(name)} must be an array of {dtype} numbers: {exc}") from None
        if a.shape != tuple(shape):
            raise ValueError(f"{_array_key(name)} must have shape {tuple(shape)}, got {a.shape}")
        # (the C++ check over the float64 parts: 2 us at m = 10240 where np.isfinite took 9)
        if a.size and not all_finite(np.ascontiguousarray(a).view(np.float64).reshape(1, -1)):
            raise ValueError(f"{_array_key(name)} must be finite")
        out[name] = a
    return out


def _check_subsampling(feature_map, subsampling):
    """None, or the canonical subsampling dict of `feature_map` (validated; see Sketch)."""
    if subsampling is None:
        return None
    if not isinstance(subsampling, dict) or "scheme" not in subsampling or "r" not in subsampling:
        raise ValueError(f"subsampling must be None or a dict with 'scheme' and 'r', got {subsampling!r}")
    spec = feature_map.subsampling_spec(subsampling["r"], subsampling["scheme"])
    for key, value in subsampling.items():
        if key not in spec:
            raise ValueError(f"subsampling has an unknown entry {key!r}")
        if value != spec[key]:
            raise ValueError(f"subsampling[{key!r}] is {value!r}; for this map and r it must be {spec[key]!r}")
    return spec
