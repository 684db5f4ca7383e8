r"""Private sketches: the sum of features and the count, released with calibrated noise.

:func:`~pysketch.privacy.make_private` (pysketch.privacy.release) turns a clean :class:`~pysketch.Sketch` into a
:class:`PrivateSketch` ([P] Lemmas 4 and 10; thesis Lemmas 8.2 and 8.10):

- ``neighbouring='add_remove'`` (unbounded DP, n private): the sum gets noise for
  ``gamma * epsilon`` and the count discrete Laplace noise of scale
  ``1 / ((1 - gamma) epsilon)`` (sensitivity 1; delta is not split, the count needs
  none); gamma minimizes the noise-to-signal ratio numerically at a public size
  (:func:`~pysketch.privacy.nsr.budget_split`). The estimate of the mean sketch is
  ``(sum + xi) / max(n + zeta, 1)``.
- ``neighbouring='replace'`` (bounded DP, n public): the whole epsilon goes to the sum,
  with the doubled sensitivity; the mean is ``(sum + xi) / n``.

The mechanism is Laplace for delta = 0 and the analytic Gaussian for delta > 0
(``mechanism='auto'``). A PrivateSketch never holds the clean sum: it is a Sketch whose
``sum`` and ``count`` are the noisy ones, with a record of epsilon, delta, the relation,
the mechanism and its scales. It saves and loads like a sketch (format
``pysketch.private_sketch``: the noisy sums and the record, never the noise, a noise seed
or the clean sum), and decoders and ``fit_sketch`` take it as they take a Sketch.
"""

import collections.abc
import dataclasses
import numbers
from typing import Optional

import numpy as np

from .._state import SKETCH_FORMATS
from ..sketch import Sketch

__all__ = ["PrivacyRecord", "PrivateSketch", "PRIVATE_FORMAT_NAME"]

#: The format name of a private sketch file (its metadata's "format" entry).
PRIVATE_FORMAT_NAME = "pysketch.private_sketch"


@dataclasses.dataclass(frozen=True)
class PrivacyRecord(collections.abc.Mapping):
    """What a private release or fit guarantees and how it was noised (also readable as a
    mapping, ``record["epsilon"]``; the optional entries are present only when set).

    epsilon, delta, neighbouring: the guarantee; secure_noise (False for seeded test noise).
    A sketch's release adds: mechanism ('laplace' or 'gaussian'), epsilon_sum /
    epsilon_count (the split), sensitivity_sum and its norm (1 or 2), noise_scale_sum (b or
    sigma per real coordinate of the sum), noise_scale_count, features_per_record (r, or
    None); a PrivateSketch's record always has them (`SKETCH_ENTRIES`).
    Optional: epsilon_pilot (what an estimator spent on other releases than this sketch's
    sum and count: a private kernel-scale pilot, a projection, a refinement; included in
    epsilon), data_fraction and the (epsilon, delta) before amplification by Poisson
    subsampling; guarantee ('worst-case' for any data in the public box, or what a method's
    guarantee is conditional on); and parts: {name: {epsilon, delta, mechanism, sensitivity,
    ...}}, what each part of a fit spent (pysketch.privacy.budget).

    Parameters
    ----------
    epsilon, delta : float
        The guarantee: (epsilon, delta)-DP for the whole release or fit.
    neighbouring : {'add_remove', 'replace'}
        The neighbouring relation of the guarantee.
    secure_noise : bool
        False when the noise came from an ``insecure_seed`` (tests).
    mechanism : {'laplace', 'gaussian'}, optional
        The mechanism of the sketch's sum.
    epsilon_sum, epsilon_count : float, optional
        The split of epsilon between the sum and the count (epsilon_count 0 under
        'replace').
    sensitivity_sum : float, optional
        The sensitivity the sum's noise was calibrated for.
    sensitivity_norm : {1, 2}, optional
        Its norm (1 for Laplace, 2 for Gaussian).
    noise_scale_sum : float, optional
        b (Laplace) or sigma (Gaussian) per real coordinate of the sum.
    noise_scale_count : float, optional
        The count's discrete Laplace scale (0 when the count is public).
    features_per_record : int, optional
        r with feature subsampling; None: all m features.
    epsilon_pilot : float, optional
        The part of epsilon spent on releases other than the sketch's sum and count.
    data_fraction : float, optional
        beta of a Poisson data subsample (amplification).
    epsilon_before_amplification, delta_before_amplification : float, optional
        The (epsilon, delta) the noise was calibrated at, before amplification.
    guarantee : str, optional
        What the guarantee is conditional on, when it is not worst-case.
    parts : dict, optional
        {part name: {epsilon, delta, mechanism, ...}} of a fit made of several parts.

    Raises
    ------
    KeyError
        When an entry that is not set is read as a mapping entry (``record["parts"]``).
    ValueError
        From ``from_dict``, for a dict with unknown or missing entries, some but not all
        of `SKETCH_ENTRIES`, or `parts` not a mapping of entries with epsilon and delta.

    Examples
    --------
    >>> from pysketch.privacy import PrivacyRecord
    >>> record = PrivacyRecord(epsilon=1.0, delta=0.0, neighbouring="add_remove", secure_noise=True)
    >>> dict(record), record.is_sketch_release
    ({'epsilon': 1.0, 'delta': 0.0, 'neighbouring': 'add_remove', 'secure_noise': True}, False)
    >>> PrivacyRecord.from_dict(record.to_dict()) == record
    True
    """

    epsilon: float
    delta: float
    neighbouring: str
    secure_noise: bool
    mechanism: Optional[str] = None
    epsilon_sum: Optional[float] = None
    epsilon_count: Optional[float] = None
    sensitivity_sum: Optional[float] = None
    sensitivity_norm: Optional[int] = None
    noise_scale_sum: Optional[float] = None
    noise_scale_count: Optional[float] = None
    features_per_record: Optional[int] = None
    epsilon_pilot: Optional[float] = None
    data_fraction: Optional[float] = None
    epsilon_before_amplification: Optional[float] = None
    delta_before_amplification: Optional[float] = None
    guarantee: Optional[str] = None
    parts: Optional[dict] = None

    #: the entries of a sketch's release (features_per_record may be None in it)
    SKETCH_ENTRIES = ("mechanism", "epsilon_sum", "epsilon_count", "sensitivity_sum", "sensitivity_norm",
                      "noise_scale_sum", "noise_scale_count")
    _OPTIONAL = ("epsilon_pilot", "data_fraction", "epsilon_before_amplification", "delta_before_amplification",
                 "guarantee", "parts")
    #: the order of the entries as a mapping (that of the records of sketch files)
    _ORDER = ("epsilon", "delta", "neighbouring", "mechanism", "epsilon_sum", "epsilon_count", "sensitivity_sum",
              "sensitivity_norm", "noise_scale_sum", "noise_scale_count", "features_per_record", "secure_noise",
              "epsilon_pilot", "data_fraction", "epsilon_before_amplification", "delta_before_amplification",
              "guarantee", "parts")

    @property
    def is_sketch_release(self):
        """True when the record holds a sketch release's entries (SKETCH_ENTRIES)."""
        return all(getattr(self, k) is not None for k in self.SKETCH_ENTRIES)

    @property
    def sum_noise_variance(self):
        """Variance of the noise on each real coordinate of the sum: 2 b^2 (Laplace) or
        sigma^2 (Gaussian). Decoders that model the noise (CL-AMP) read it."""
        s = self.noise_scale_sum
        return 2.0 * s * s if self.mechanism == "laplace" else s * s

    def _keys(self):
        sketch = self.is_sketch_release
        return [k for k in self._ORDER
                if getattr(self, k) is not None or (sketch and k == "features_per_record")]

    def __getitem__(self, key):
        if key not in self._keys():
            raise KeyError(key)
        return getattr(self, key)

    def __iter__(self):
        return iter(self._keys())

    def __len__(self):
        return len(self._keys())

    def to_dict(self):
        """The record as a JSON-ready dict (what sketch files hold)."""
        return {k: getattr(self, k) for k in self._keys()}

    @classmethod
    def from_dict(cls, d):
        """The record of a dict (a file's); ValueError for unknown or missing entries."""
        if isinstance(d, PrivacyRecord):
            return d
        if not isinstance(d, collections.abc.Mapping):
            raise ValueError(f"privacy must be a PrivacyRecord or a dict, got {type(d).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"privacy has unknown entries {sorted(unknown)}")
        try:
            record = cls(**d)
        except TypeError as exc:
            raise ValueError(f"privacy record incomplete ({exc})") from exc
        if any(getattr(record, k) is not None for k in cls.SKETCH_ENTRIES) and not record.is_sketch_release:
            missing = [k for k in cls.SKETCH_ENTRIES if getattr(record, k) is None]
            raise ValueError(f"privacy record incomplete (a sketch release without {missing})")
        if record.parts is not None:
            if not isinstance(record.parts, collections.abc.Mapping) or not all(
                    isinstance(v, collections.abc.Mapping) and "epsilon" in v and "delta" in v
                    for v in record.parts.values()):
                raise ValueError("privacy record: parts must map each part's name to its entries (epsilon, delta, ...)")
            record = dataclasses.replace(record, parts={str(k): dict(v) for k, v in record.parts.items()})
        return record



class PrivateSketch(Sketch):
    """A differentially private sketch (noisy sum and count) with its privacy record.

    Made by :func:`~pysketch.privacy.make_private` and the private estimators; built
    directly only to rebuild a release (``load`` does).

    Parameters
    ----------
    feature_map : FeatureMap
        The map of the clean sketch.
    sum : ndarray
        The noisy sum of the features (the map's sum layout).
    count : int
        The released count (may be 0 or negative after noise).
    privacy : PrivacyRecord or dict
        The record of the release; it must hold the entries of a sketch's release
        (``PrivacyRecord.SKETCH_ENTRIES``).
    subsampling : dict, optional
        The feature subsampling of the clean sketch, as in :class:`~pysketch.Sketch`.

    Attributes
    ----------
    sum : ndarray
        Sum of the features plus noise.
    count : int
        Noisy count (add/remove) or the public count (replace).
    privacy : PrivacyRecord
        epsilon, delta, neighbouring, mechanism, epsilon_sum, epsilon_count,
        sensitivity_sum, noise_scale_sum (b or sigma per real coordinate),
        noise_scale_count, secure_noise (pysketch.privacy.release.PrivacyRecord; also
        readable as a mapping).

    Raises
    ------
    ValueError
        When `count` is not an integer, or the record is not a complete sketch release
        (and from the checks of :class:`~pysketch.Sketch`).
    TypeError
        From ``+``: private sketches are not merged (their noises would add up).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import FeatureMap
    >>> from pysketch.operators import make_operator
    >>> from pysketch.privacy import make_private
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> private = make_private(FeatureMap(make_operator(2, 50, random_state=0), "complex").sketch(X), 1.0)
    >>> private.epsilon, private.privacy["neighbouring"], private.mean().shape
    (1.0, 'add_remove', (50,))
    """

    def __init__(self, feature_map, sum, count, privacy, *, subsampling=None):
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, numbers.Integral):
            raise ValueError(f"count must be an integer, got {count!r}")
        Sketch.__init__(self, feature_map, sum, 0, subsampling=subsampling)
        self.count = int(count)  # may be <= 0 after noise
        self.privacy = PrivacyRecord.from_dict(privacy)
        if not self.privacy.is_sketch_release:
            missing = [k for k in PrivacyRecord.SKETCH_ENTRIES if getattr(self.privacy, k) is None]
            raise ValueError(f"privacy record incomplete: a private sketch's record needs {missing}")

    @property
    def epsilon(self):
        return self.privacy["epsilon"]

    @property
    def delta(self):
        return self.privacy["delta"]

    def mean(self):
        """(sum + xi) / max(n + zeta, 1)."""
        return self.sum / max(self.count, 1)

    def __add__(self, other):
        raise TypeError("private sketches are not merged by '+': merge the clean parts before make_private, "
                        "or combine private releases explicitly (their noises add up)")

    __radd__ = __add__

    def __repr__(self):
        p = self.privacy
        return (f"PrivateSketch(count~{self.count}, epsilon={p['epsilon']:g}, delta={p['delta']:g}, "
                f"{p['neighbouring']}, {p['mechanism']}, {self.feature_map!r})")

    _FORMAT = PRIVATE_FORMAT_NAME
    _DESCRIPTION = "private sketch"

    def _extra_meta(self):
        return {"privacy": self.privacy.to_dict()}

    @classmethod
    def _from_state(cls, meta, arrays):
        fm, sums = cls._map_and_sums(meta, arrays)
        return cls(fm, sums["sum"], meta["count"], meta["privacy"], subsampling=meta.get("subsampling"))


SKETCH_FORMATS.register(PRIVATE_FORMAT_NAME, PrivateSketch)


