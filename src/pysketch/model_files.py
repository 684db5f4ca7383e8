"""Model files: `save_model(estimator, path)` and `load_model(path)`, without pickle.

A fitted estimator is written to the pysketch file container (pysketch._archive: checked
layout, header, sizes, format, version and checksum) as format ``"pysketch.model"``,
version 1. Its metadata ``"model"`` describes the estimator as a tree of JSON values:

- ``"class"``: the name under which its class is registered (`register_model_class`;
  pysketch's estimators are known by their class name), ``"params"``: ``get_params()``,
  ``"attributes"``: its fitted public attributes (names ending in ``_``; private working
  state such as `partial_fit`'s accumulator is not saved);
- values are None, bools, numbers, strings, lists and dicts as JSON, and tagged objects
  ``{"$tag": ...}``: numeric arrays and numpy scalars (``$array`` / ``$scalar``, the key of
  an array of the file: ``a0``, ``a1``, ...; one array referenced twice is stored once and
  loaded as one), string arrays (``$strings``), tuples, dicts with other keys (``$dict``),
  numpy dtypes, numpy generators of public randomness (``$generator``: their bit
  generator's state), sketches, feature maps and operators (``$state``: their
  ``get_state``), nested estimators and laws (``$model``) and the other registered classes
  (``$object``: a dataclass's fields, or the instance's attributes).

A BudgetAccountant parameter is saved as None (it is the budget of a session, not part
of the model). Anything else (a dask array, a function...) is refused with a TypeError
naming the attribute when saving. Loading names only registered classes, rebuilds
estimators through their constructor, and gives back an estimator whose predictions are
those of the saved one. A model file never holds noise or a noise seed: an estimator whose
``insecure_seed`` is set is refused, and private estimators hold only released (noisy)
values.
"""

import dataclasses
import importlib

import numpy as np

from ._archive import NUMERIC_KINDS, SketchFileError, read, write
from ._state import Stateful, rebuild
from .privacy.accountant import BudgetAccountant

__all__ = ["save_model", "load_model", "register_model_class", "model_state", "MODEL_FORMAT", "MODEL_VERSION"]

#: The format name of a model file (its metadata's "format" entry).
MODEL_FORMAT = "pysketch.model"
#: The version of the model files this release writes and reads.
MODEL_VERSION = 1
#: Parameters that seed the privacy noise: a model file never holds one (they must be None).
NOISE_SEED_PARAMS = ("insecure_seed",)
#: Families of stateful objects (pysketch._state) a model may hold.
STATE_FAMILIES = ("operator", "feature map", "sketch file format")
#: numpy bit generators whose state a model may hold (public randomness, e.g. M2M's points).
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")

#: pysketch's classes a model file may name: {name: module}; imported when first named.
_BUILTIN = {
    "CompressiveKMeans": "pysketch.estimators",
    "CompressiveGaussianMixture": "pysketch.estimators",
    "CompressivePCA": "pysketch.pca",
    "PrivateRFRegressor": "pysketch.rfm.estimators",
    "DPRFMRegressor": "pysketch.rfm.estimators",
    "M2MLinearRegression": "pysketch.m2m.models",
    "M2MLogisticRegression": "pysketch.m2m.models",
    "PrivateJLTransformer": "pysketch.distances.transformer",
    "M2M": "pysketch.m2m.core",
    "Domain": "pysketch.m2m.domain",
    "RandomFeatures": "pysketch.rfm.features",
    "DataScaling": "pysketch.rfm.scaling",
    "DenseDesign": "pysketch.features",
    "OneHotDesign": "pysketch.features",
    "MixtureSolution": "pysketch.decoders.problem",
    "PrivacyRecord": "pysketch.privacy.private_sketch",
    "GaussianLaw": "pysketch.frequencies",
    "AdaptedRadiusLaw": "pysketch.frequencies",
    "FoldedGaussianLaw": "pysketch.frequencies",
    "LogUniformLaw": "pysketch.frequencies",
    "QuadraticGaussianLaw": "pysketch.frequencies",
    "OrthonormalBasesLaw": "pysketch.frequencies",
}
_REGISTERED = {}


def register_model_class(cls, name=None):
    """Let model files hold instances of `cls` under `name`.

    An estimator (a class with get_params) is rebuilt as ``cls(**params)`` plus its fitted
    attributes, a dataclass from its fields, a plain class by restoring its attributes.
    Usable as a decorator.

    Parameters
    ----------
    cls : type
        The class.
    name : str, optional
        The name the files give it (default: its class name). pysketch's own classes are
        known by their class names, which no other class may take.

    Returns
    -------
    type
        `cls`.

    Raises
    ------
    TypeError
        If `cls` is not a class.
    ValueError
        If `name` is empty or not a string, or is already taken by another class.

    Examples
    --------
    >>> import dataclasses
    >>> from pysketch.model_files import register_model_class
    >>> @register_model_class
    ... @dataclasses.dataclass
    ... class Offset:
    ...     value: float
    >>> register_model_class(dict, "Offset")
    Traceback (most recent call last):
        ...
    ValueError: model class name 'Offset' is already taken
    """
    name = cls.__name__ if name is None else name
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a class, got {type(cls).__name__}")
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    old = _REGISTERED.get(name)
    if (old is not None and old is not cls) or (name in _BUILTIN and _name_of(cls) != name):
        raise ValueError(f"model class name {name!r} is already taken")
    _REGISTERED[name] = cls
    return cls


def _name_of(cls):
    for name, known in _REGISTERED.items():
        if known is cls:
            return name
    if _BUILTIN.get(cls.__qualname__) == cls.__module__:
        return cls.__qualname__
    return None


def _class_named(name):
    if name in _REGISTERED:
        return _REGISTERED[name]
    if isinstance(name, str) and name in _BUILTIN:
        return getattr(importlib.import_module(_BUILTIN[name]), name)
    raise ValueError(f"unknown model class {name!r}; known: {sorted(set(_BUILTIN) | set(_REGISTERED))}")


def _is_estimator(obj):
    return callable(getattr(obj, "get_params", None))


# ------------------------------------------------------------------------------ saving


class _Encoder:
    """Values -> JSON nodes, collecting the arrays (module docstring)."""

    def __init__(self):
        self.arrays = {}
        self._keys = {}  # id(array) -> key (the arrays are kept alive by self.arrays)

    def array(self, a, where):
        key = self._keys.get(id(a))
        if key is None:
            if not (a.dtype.kind in NUMERIC_KINDS and a.dtype.fields is None and not a.dtype.hasobject):
                raise TypeError(f"{where}: an array of dtype {a.dtype} cannot be saved in a model file (bool, "
                                "integer, float, complex and string arrays can)")
            key = f"a{len(self.arrays)}"
            self.arrays[key] = a
            self._keys[id(a)] = key
        return key

    def value(self, v, where):
        if v is None or type(v) in (bool, int, float, str):
            return v
        if isinstance(v, np.ndarray):
            if v.dtype.kind == "U":
                return {"$strings": v.tolist(), "dtype": v.dtype.str, "shape": list(v.shape)}
            return {"$array": self.array(v, where)}
        if isinstance(v, np.str_):
            return str(v)
        if isinstance(v, np.generic):  # (np.float64 is also a float: kept a numpy scalar)
            return {"$scalar": self.array(np.asarray(v), where)}
        if isinstance(v, (int, float, str)):  # subclasses (an IntEnum...) are saved as the plain type
            return int(v) if isinstance(v, int) else (float(v) if isinstance(v, float) else str(v))
        if isinstance(v, np.dtype):
            return {"$dtype": self._dtype(v, where)}
        if isinstance(v, type) and issubclass(v, np.generic):
            return {"$dtype_type": self._dtype(np.dtype(v), where)}
        if isinstance(v, tuple):
            return {"$tuple": [self.value(x, f"{where}[{i}]") for i, x in enumerate(v)]}
        if isinstance(v, list):
            return [self.value(x, f"{where}[{i}]") for i, x in enumerate(v)]
        if isinstance(v, dict):
            if all(isinstance(k, str) and not k.startswith("$") for k in v):
                return {k: self.value(v[k], f"{where}[{k!r}]") for k in sorted(v)}  # the file's order
            return {"$dict": [[self.value(k, f"{where} (a key)"), self.value(x, f"{where}[{k!r}]")]
                              for k, x in v.items()]}
        if isinstance(v, np.random.Generator):
            state = v.bit_generator.state
            if state.get("bit_generator") not in BIT_GENERATORS:
                raise TypeError(f"{where}: a Generator of {state.get('bit_generator')!r} cannot be saved")
            return {"$generator": self.value(state, where)}
        if isinstance(v, Stateful):
            _, (family, meta, arrays) = v.__reduce__()
            if family not in STATE_FAMILIES:
                raise TypeError(f"{where}: a {family} cannot be saved in a model file")
            return {"$state": family, "meta": meta,
                    "arrays": {k: self.array(a, f"{where}.{k}") for k, a in arrays.items()}}
        name = _name_of(type(v))
        if name is None:
            raise TypeError(f"{where}: a {type(v).__module__}.{type(v).__qualname__} cannot be saved in a model file "
                            "(storable: None, numbers, strings, numeric and string arrays, lists, tuples, dicts, "
                            "sketches, feature maps, operators and the registered classes; see "
                            "pysketch.model_files.register_model_class)")
        if _is_estimator(v):
            return {"$model": self.model(v, where)}
        if dataclasses.is_dataclass(v):
            attrs = {f.name: getattr(v, f.name) for f in dataclasses.fields(v) if f.init}
        else:
            attrs = vars(v)
        return {"$object": name, "attrs": {k: self.value(attrs[k], f"{where}.{k}") for k in sorted(attrs)}}

    @staticmethod
    def _dtype(dt, where):
        if dt.kind not in NUMERIC_KINDS or dt.fields is not None:
            raise TypeError(f"{where}: the dtype {dt} cannot be saved (numeric dtypes can)")
        return dt.str

    def model(self, est, where):
        name = _name_of(type(est))
        if name is None:
            raise TypeError(f"{where}: {type(est).__module__}.{type(est).__qualname__} is not a registered model "
                            "class (pysketch.model_files.register_model_class)")
        params = {k: v for k, v in est.get_params().items() if "__" not in k}
        for k, v in params.items():
            if isinstance(v, BudgetAccountant):
                # the budget of a session, not part of the model: the loaded model has None
                # (a later fit charges whichever accountant it is then given)
                params[k] = None
        for p in NOISE_SEED_PARAMS:
            if params.get(p) is not None:
                raise ValueError(f"{where}.{p} = {params[p]!r} seeds the privacy noise: a model file never holds a "
                                 f"noise seed (fit with {p}=None, the default, for a model to save)")
        fitted = {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_") and k not in params}
        return {"class": name,
                "params": {k: self.value(v, f"{where}.{k}") for k, v in sorted(params.items())},
                "attributes": {k: self.value(v, f"{where}.{k}") for k, v in sorted(fitted.items())}}


def model_state(estimator):
    """(metadata, arrays) of a model file of `estimator`: what `save_model` writes, without
    format, version and checksum.

    Parameters
    ----------
    estimator : estimator
        An object with get_params, of a registered class (`register_model_class`).

    Returns
    -------
    meta : dict
        JSON-ready: ``{"model": <the tree of the module docstring>, "pysketch_version": ...}``.
    arrays : dict of numpy.ndarray
        The arrays the tree refers to (``a0``, ``a1``, ...).

    Raises
    ------
    TypeError
        If `estimator` has no get_params, its class is not registered, or a value in it
        cannot be stored (the message names the attribute).
    ValueError
        If the estimator's ``insecure_seed`` is set: a model file never holds a noise seed.

    Examples
    --------
    >>> import pysketch
    >>> from pysketch.model_files import model_state
    >>> meta, arrays = model_state(pysketch.CompressiveKMeans(3))
    >>> meta["model"]["class"], meta["model"]["params"]["n_clusters"], arrays
    ('CompressiveKMeans', 3, {})
    """
    if not _is_estimator(estimator):
        raise TypeError(f"estimator must be an estimator (with get_params), got {type(estimator).__name__}")
    from . import __version__

    enc = _Encoder()
    tree = enc.model(estimator, type(estimator).__name__)
    return {"model": tree, "pysketch_version": __version__}, enc.arrays


def save_model(estimator, path):
    """Write a fitted (or unfitted) estimator to `path` (a .npz model file; module docstring).

    The file is written to a temporary file in the same folder and moved onto `path` when
    complete: a failed save leaves any previous file as it was.

    Parameters
    ----------
    estimator : estimator
        Of a registered class (pysketch's estimators are).
    path : str or path-like
        The file to write.

    Raises
    ------
    TypeError
        Naming the attribute, if something in the estimator cannot be stored safely.
    ValueError
        If the estimator's ``insecure_seed`` is set.
    OSError
        If the file cannot be written (naming `path`).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import pysketch
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, (300, 2)), rng.normal(6, 1, (300, 2))])
    >>> model = pysketch.CompressiveKMeans(2, random_state=0).fit(X)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     pysketch.save_model(model, os.path.join(folder, "kmeans.npz"))
    ...     print(sorted(os.listdir(folder)))
    ['kmeans.npz']
    """
    meta, arrays = model_state(estimator)
    write(path, MODEL_FORMAT, MODEL_VERSION, meta, arrays)


# ------------------------------------------------------------------------------ loading


class _Decoder:
    """JSON nodes -> values (module docstring); every array of the file must be used."""

    def __init__(self, arrays):
        self.arrays = arrays
        self.used = set()

    def array(self, key):
        if not isinstance(key, str) or key not in self.arrays:
            raise ValueError(f"the file has no array {key!r}")
        self.used.add(key)
        return self.arrays[key]

    def value(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.value(x) for x in node]
        if not isinstance(node, dict):
            raise ValueError(f"unexpected JSON value {node!r}")
        tags = [k for k in node if k.startswith("$")]
        if not tags:
            return {k: self.value(x) for k, x in node.items()}
        if len(tags) != 1:
            raise ValueError(f"a value with several tags {tags}")
        tag, body = tags[0], node[tags[0]]
        if tag == "$array":
            return self.array(body)
        if tag == "$scalar":
            a = self.array(body)
            if a.ndim:
                raise ValueError(f"scalar {body!r} has shape {a.shape}")
            return a[()]
        if tag == "$strings":
            dt = np.dtype(node["dtype"])
            if dt.kind != "U":
                raise ValueError(f"a string array of dtype {dt}")
            return np.array(body, dtype=dt).reshape(node["shape"])
        if tag in ("$dtype", "$dtype_type"):
            dt = np.dtype(body)
            if dt.kind not in NUMERIC_KINDS or dt.fields is not None:
                raise ValueError(f"dtype {body!r} is not numeric")
            return dt if tag == "$dtype" else dt.type
        if tag == "$tuple":
            return tuple(self.value(list(body)))
        if tag == "$dict":
            return {_hashable(self.value(k)): self.value(x) for k, x in body}
        if tag == "$generator":
            state = self.value(body)
            name = state.get("bit_generator")
            if name not in BIT_GENERATORS:
                raise ValueError(f"unknown bit generator {name!r}")
            bits = getattr(np.random, name)()
            bits.state = state
            return np.random.Generator(bits)
        if tag == "$state":
            if body not in STATE_FAMILIES:
                raise ValueError(f"unknown family {body!r}")
            arrays = {k: self.array(key) for k, key in node["arrays"].items()}
            return rebuild(body, node["meta"], arrays)
        if tag == "$model":
            return self.model(body)
        if tag == "$object":
            cls = _class_named(body)
            attrs = {k: self.value(x) for k, x in node["attrs"].items()}
            if _is_estimator(cls):
                raise ValueError(f"{body} is an estimator class, stored as $object")
            if dataclasses.is_dataclass(cls):
                return cls(**attrs)
            obj = cls.__new__(cls)
            obj.__dict__.update(attrs)
            return obj
        raise ValueError(f"unknown tag {tag!r}")

    def model(self, node):
        cls = _class_named(node["class"])
        if not _is_estimator(cls):
            raise ValueError(f"{node['class']} is not an estimator class")
        est = cls(**{k: self.value(v) for k, v in node["params"].items()})
        for k, v in node["attributes"].items():
            if not (isinstance(k, str) and k.endswith("_") and not k.startswith("_")):
                raise ValueError(f"{k!r} is not a fitted attribute's name")
            setattr(est, k, self.value(v))
        return est


def _hashable(k):
    return tuple(_hashable(x) for x in k) if isinstance(k, (list, tuple)) else k


def load_model(path):
    """The estimator saved by `save_model` at `path`.

    Only registered classes are named, estimators are rebuilt through their constructor,
    nothing is unpickled; the loaded estimator predicts as the saved one did.

    Parameters
    ----------
    path : str or path-like
        A model file.

    Returns
    -------
    estimator

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    SketchFileError
        If it is damaged, edited, not a model file, of a newer version, or names a class
        that is not registered.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> import pysketch
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(0, 1, (300, 2)), rng.normal(6, 1, (300, 2))])
    >>> model = pysketch.CompressiveKMeans(2, random_state=0).fit(X)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     pysketch.save_model(model, os.path.join(folder, "kmeans.npz"))
    ...     loaded = pysketch.load_model(os.path.join(folder, "kmeans.npz"))
    >>> np.array_equal(loaded.cluster_centers_, model.cluster_centers_)
    True
    """
    from . import privacy  # noqa: F401  (registers the private sketch format a model may hold)

    meta, arrays = read(path, {MODEL_FORMAT: (MODEL_VERSION,)}, what="pysketch model file", names=r"a\d+")
    dec = _Decoder(arrays)
    try:
        est = dec.model(meta["model"])
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise SketchFileError(f"{path}: inconsistent model file ({type(exc).__name__}: {exc})") from exc
    unused = sorted(set(arrays) - dec.used)
    if unused:
        raise SketchFileError(f"{path}: unexpected arrays {unused} in a model file")
    return est
