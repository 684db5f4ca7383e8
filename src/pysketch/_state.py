"""Objects described by a state: (metadata, arrays) -> the same object, exactly.

Operators, feature maps and sketches are each rebuilt from a JSON-ready metadata dict and
a dict of numpy arrays (their ``get_state()``), never from pickled code: that is what a
sketch file holds, what a fingerprint hashes and what pickling carries to another process
(a Dask worker). This module holds the two things they share:

- :class:`Registry`: the classes of one family by the name written in their state, so
  that reading a state never names a subclass (a new operator, feature map or file format
  registers itself and is read back like the built-in ones);
- :func:`digest`: the one SHA-256 of "metadata + arrays" used for fingerprints and file
  checksums.
"""

import hashlib
import json

import numpy as np

__all__ = ["FEATURE_MAPS", "SKETCH_FORMATS", "Registry", "Stateful", "digest", "rebuild"]

_FAMILIES = {}


class Registry:
    """Classes of one family (operators, feature maps, sketch formats, decoders) by name.

    Parameters
    ----------
    family : str
        What the classes are, for messages ("feature map"), and the family's key for
        :func:`rebuild`.
    key : str
        The metadata entry that holds the name (``meta[key]``) in a state.
    """

    def __init__(self, family, key="kind"):
        self.family = family
        self.key = key
        self._classes = {}
        self._providers = []
        self.base = None  # the family's base class, set by the module that defines it
        _FAMILIES[family] = self

    def register(self, name, cls=None):
        """Register `cls` under `name` (usable as a class decorator: ``@REG.register("x")``).
        A name is registered once: a second class under the same name is an error."""
        if cls is None:
            return lambda c: self.register(name, c)
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.family} name must be a non-empty string, got {name!r}")
        old = self._classes.get(name)
        if old is not None and old is not cls:
            raise ValueError(f"{self.family} {name!r} is already registered (by {old.__module__}.{old.__qualname__})")
        self._classes[name] = cls
        return cls

    def provided_by(self, loader):
        """Declare `loader`, a function of no argument that imports modules registering
        classes of this family: `load_providers` calls it. The package root declares the
        layers above the family's own (pysketch.privacy for the private sketch format), so
        that the layer which reads the family (Sketch.load) imports nothing above it."""
        self._providers.append(loader)
        return loader

    def load_providers(self):
        """Call every declared provider (each imports its modules; once imported, again a
        dictionary look-up), so that every class of the family is registered."""
        for loader in tuple(self._providers):
            loader()

    def get(self, name):
        """The class registered under `name`; ValueError naming the known ones otherwise."""
        try:
            return self._classes[name]
        except (KeyError, TypeError):
            raise ValueError(f"unknown {self.family} {name!r}; known: {sorted(self._classes)}") from None

    def names(self):
        return tuple(self._classes)

    def __contains__(self, name):
        return name in self._classes

    def from_state(self, meta, arrays):
        """The object of a state: the class named by ``meta[key]`` rebuilds it."""
        if not isinstance(meta, dict):
            raise ValueError(f"the state of a {self.family} must be a dict, got {type(meta).__name__}")
        return self.get(meta.get(self.key))._from_state(meta, arrays)

    def check(self, obj, name):
        """TypeError naming the argument unless obj is an instance of the family's base."""
        if self.base is None or not isinstance(obj, self.base):
            base = "?" if self.base is None else self.base.__name__
            raise TypeError(f"{name} must be a {base}, got {type(obj).__name__}")
        return obj


def rebuild(family, meta, arrays):
    """Unpickling: the object of `family` described by (meta, arrays). Arrays that arrive
    unaligned (pickle protocol 5 buffers placed by a transport, e.g. dask.distributed's)
    are copied to aligned memory, which the compiled core requires."""
    arrays = {k: np.require(v, requirements="A") for k, v in arrays.items()}
    return _FAMILIES[family].from_state(meta, arrays)


def digest(meta, arrays):
    """SHA-256 hex digest of a state: the metadata as sorted JSON, then every array in
    name order (name, dtype, shape, bytes). Equal digests mean equal states."""
    h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode())
        h.update(a.dtype.str.encode())
        h.update(repr(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()


class Stateful:
    """Fingerprint, equality, hashing and pickling from ``get_state()``; subclasses set
    ``_registry`` (their family) and implement ``get_state`` and ``_from_state``."""

    _registry = None

    def get_state(self):
        raise NotImplementedError

    def fingerprint(self):
        """SHA-256 of the complete description: equal fingerprints mean the same object."""
        return digest(*self.get_state())

    def __eq__(self, other):
        if self._registry.base is None or not isinstance(other, self._registry.base):
            return NotImplemented
        return self.fingerprint() == other.fingerprint()

    def __hash__(self):
        return hash(self.fingerprint())

    def __reduce__(self):
        meta, arrays = self.get_state()
        return (rebuild, (self._registry.family, meta, {k: np.array(v) for k, v in arrays.items()}))


#: Feature maps by the kind written in their state (pysketch.features registers its own).
FEATURE_MAPS = Registry("feature map", key="kind")
#: Sketch classes by the format written in their files (pysketch.sketch, pysketch.privacy).
SKETCH_FORMATS = Registry("sketch file format", key="format")
