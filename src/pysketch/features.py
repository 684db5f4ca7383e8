"""Feature maps Phi(x) = f(Omega^T x + u) and their sums over datasets (sketches).

Four nonlinearities f (Chatalic 2020 thesis, Def. 2.5 and 2.6; Chatalic et al. 2022, Def. 4 and 6):

- ``"complex"``: random Fourier features exp(i (omega_j^T x + u_j)), complex, abs(Phi_j) = 1;
- ``"real"``: the same as 2m reals, [cos(Omega^T x + u); sin(Omega^T x + u)] (the canonical
  isomorphism C^m ~ R^2m: every sensitivity of the complex map carries over);
- ``"quantized"``: 2^-1/2 (sign cos(t) + i sign sin(t)), t = Omega^T x + u, the one-bit
  features of Schellekens & Jacques (2018), which need the uniform dither u on [0, 2 pi)
  (quantization without dither is biased; the dither is stored with the map). Their
  first harmonic is (2 sqrt 2 / pi) exp(i t) (the Fourier series of the quantized cosine);
- ``"quadratic"``: (omega_j^T x)^2, real (compressive PCA; no dither).

`FeatureMap.transform(X)` materializes the (n, m) features; `FeatureMap.sketch(X)` returns
the `Sketch` (sum of the features and count) without ever holding more than a block of
features: the C++ core transforms a block of rows, applies f and adds into float64
accumulators, block after block, on all threads (per-thread accumulators, summed at the
end).

`FeatureMap.sketch_subsampled(X, r)` is the feature-subsampled sketch (Chatalic et al.
2022, Sec. 5, Def. 20): every record contributes only the features of a random mask h_i
holding r of the m frequencies, only those are computed (pysketch/subsample.hpp), and the sum
is rescaled, (m / r) sum_i Phi(x_i) (.) h_i, so that its expectation is the full sum. The
masks are drawn from their own 128-bit seed (`random_state`, never the operator's seed), per
record position, so a given seed gives the same sketch for any thread count and any split of
the data into batches. They are not returned or stored; the sketch records the scheme, r and
m (`Sketch.subsampling`) for the sensitivities.
"""

import math
import numbers
import warnings

import numpy as np

from . import _core
from ._checks import MAX_INT32, check_array, check_int, check_relation, check_size
from ._random import as_generator
from ._state import FEATURE_MAPS, Stateful
from .accumulate import SketchAccumulator
from .frequencies import FrequencyLaw, GaussianLaw
from .operators import DenseOperator, FrequencyOperator, column_norm_sq_bound, make_operator, spectral_norm_sq_bound

__all__ = ["FEATURE_MAPS", "FeatureMap", "FourierMap", "ComplexFourierMap", "RealFourierMap", "QuantizedFourierMap", "QuadraticMap",
           "SecondMomentMap",
           "make_feature_map", "FEATURE_KINDS", "OneHotMap", "HistogramMap", "MarginalMap", "RaceMap",
           "DenseDesign", "OneHotDesign", "GridMap", "make_box_map", "box_map_kinds", "SUBSAMPLING_SCHEMES", "quadratic_spectral_bound",
           "quadratic_s4_bound"]

#: Mask schemes of the subsampled sketch: r distinct frequencies per record uniformly,
#: independent Bernoulli(r / m) trials per frequency, or r / d_p whole blocks of a structured
#: operator.
SUBSAMPLING_SCHEMES = ("uniform", "bernoulli", "blocks")
_SCHEME_CODES = {"uniform": _core.Scheme.uniform, "bernoulli": _core.Scheme.bernoulli, "blocks": _core.Scheme.blocks}
#: First harmonic of the quantized map: t -> rho(t) + i rho(t - pi/2) with rho =
#: 2^-1/2 sign(cos) has Fourier coefficient 2 sqrt(2) / pi at e^{it} (its Fourier series).
QUANTIZED_FIRST_HARMONIC = 2.0 * math.sqrt(2.0) / math.pi


class FeatureMap(Stateful):
    """Phi(x) = f(Omega^T x + u): the base of the feature-map family.

    ``FeatureMap(operator, kind, dither=None, random_state=None)`` makes the map of the
    registered `kind` ('complex', 'real', 'quantized', 'quadratic', or any map
    registered later); each kind is a subclass that owns its layout, its nonlinearity,
    its sensitivities and how a decoder reads its mean sketch. `make_feature_map` draws
    the operator and the map together.

    Parameters
    ----------
    operator : FrequencyOperator
        Omega (d x m).
    kind : str
        The registered name of the map (FEATURE_KINDS lists them); optional when a
        subclass is called, which must then be its own kind.
    dither : None, 'random' or array of shape (m,)
        The phases u, in [0, 2 pi). 'random' draws them uniformly from `random_state`
        (required for 'quantized', where None means 'random'); not allowed for
        'quadratic'.
    random_state : None, int or numpy Generator
        Used only to draw the dither.

    Raises
    ------
    TypeError
        If `operator` is not a FrequencyOperator; from `subsampling_spec` (and the
        subsampled sketch), when r is not an integer.
    ValueError
        If `kind` is not registered or is not the subclass's own, or the dither is not
        None, 'random' or m finite numbers, or is given to a map that takes none; from
        `transform` and `sketch`, when the data have the wrong shape, hold NaN or
        infinity, or their phases overflow; from `subsampling_spec`, for an unknown scheme
        or an r outside [1, m] (or not suited to 'blocks'); from `sensitivity`, for a norm
        other than 1 and 2 or a wrong `features_per_record`; from `demodulate` and
        `second_moments`, for a map of the other family.
    NotImplementedError
        From the methods a kind must define (`features`, `new_accumulators`,
        `accumulate`, `sums`, the sensitivity), on a map that does not.

    Notes
    -----
    The contract of a map (what sketches, the privacy layer and decoders use; a new map
    subclasses this one, sets ``kind`` and registers it with ``FEATURE_MAPS.register``):

    - ``sum_layout()``: the named sums of its sketch, name -> (shape, dtype);
    - ``new_accumulators()``, ``accumulate(X, accumulators, subsample)``,
      ``sums(accumulators)``: streaming sums of the features of rows of X;
    - ``features(T)``: the features of the phases T = Omega^T x (for ``transform``);
    - ``sensitivity(norm, neighbouring, features_per_record, data_norm)``: of the sum;
    - ``demodulate(mean)``: the mean sketch as the decoders' target (mixture decoders);
    - ``get_state()`` / ``_from_state``: saving, fingerprints and pickling.

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> op = pysketch.make_operator(2, 8, random_state=0)
    >>> fm = pysketch.FeatureMap(op, "complex")  # the factory form: the registered class
    >>> type(fm).__name__, fm.transform(np.zeros((3, 2))).shape
    ('ComplexFourierMap', (3, 8))
    >>> np.allclose(fm.sketch(np.zeros((3, 2))).mean(), 1.0)  # exp(i 0) for every feature
    True
    """

    kind = None
    _registry = FEATURE_MAPS
    #: None: no dither unless given; "random": drawn unless given.
    default_dither = None
    takes_dither = True
    is_complex = False

    def __new__(cls, operator=None, kind=None, *args, **kwargs):
        if cls is FeatureMap:  # the factory form: the registered class of `kind`
            if kind not in FEATURE_MAPS:
                raise ValueError(f"kind must be one of {FEATURE_MAPS.names()}, got {kind!r}")
            cls = FEATURE_MAPS.get(kind)
        return object.__new__(cls)

    def __init__(self, operator, kind=None, dither=None, random_state=None):
        if not isinstance(operator, FrequencyOperator):
            raise TypeError(f"operator must be a FrequencyOperator, got {type(operator).__name__}")
        if kind is not None and kind != self.kind:
            raise ValueError(f"kind must be None or {self.kind!r} for a {type(self).__name__}, got {kind!r}")
        self.operator = operator
        if dither is None:
            dither = self.default_dither
        if not self.takes_dither and dither is not None:
            raise ValueError(f"{self.kind} features take no dither (dither must be None)")
        if isinstance(dither, str):
            if dither != "random":
                raise ValueError(f"dither must be None, 'random' or an array, got {dither!r}")
            dither = as_generator(random_state).uniform(0.0, 2.0 * math.pi, operator.m)
        if dither is not None:
            u = np.array(dither, dtype=np.float64)
            if u.shape != (operator.m,):
                raise ValueError(f"dither must have shape ({operator.m},), got {u.shape}")
            if not np.isfinite(u).all():
                raise ValueError("dither must be finite")
            dither = u
        self.dither = dither
        # the dither in the operator's dtype, as the kernels read it
        self.kernel_dither = None if dither is None else np.ascontiguousarray(dither, dtype=operator.dtype)

    # ------------------------------------------------------------------ sizes

    @property
    def d(self):
        """Input dimension."""
        return self.operator.d

    @property
    def m(self):
        """Number of frequencies."""
        return self.operator.m

    @property
    def output_dim(self):
        """Length of Phi(x)."""
        return self.m

    @property
    def input_dtype(self):
        """The dtype records are converted to before their features are taken."""
        return self.operator.dtype

    @property
    def sum_dtype(self):
        """dtype of the sum of features: complex128 or float64."""
        return np.dtype(np.complex128) if self.is_complex else np.dtype(np.float64)

    def sum_layout(self):
        """The named sums of a sketch of this map: {name: (shape, dtype)}."""
        return {"sum": ((self.output_dim,), self.sum_dtype)}

    # ------------------------------------------------------------------ features

    def transform(self, X):
        """The features of every row of X: (n, output_dim); one record of shape (d,) gives
        a 1-D result. Complex output is complex64 for a float32 operator, complex128 for
        float64."""
        single = np.ndim(X) == 1
        with np.errstate(over="ignore", invalid="ignore"):
            T = self.operator.apply(X)
        _finite_phases(T)
        T = T[None, :] if single else T
        out = self.features(T)
        return out[0] if single else out

    def features(self, T):
        """The features of the phases T = Omega^T x (rows)."""
        raise NotImplementedError

    def sketch(self, X, *, batch_size=None):
        """The sketch of X: the sum of Phi(x) over its rows, and their count.

        X may be a 2-D array (numpy, memmap, or any array with ``shape`` and row slicing,
        such as a dask array: read in batches of `batch_size` rows, so memory does not
        grow with n), or any iterable of 2-D batches.
        """
        acc = SketchAccumulator(self, batch_size=batch_size)
        acc.update(X)
        return acc.sketch()

    def sketch_subsampled(self, X, r, *, scheme="uniform", random_state=None, batch_size=None):
        """The feature-subsampled sketch of X: (m / r) sum_i Phi(x_i) (.) h_i, and the count.

        Each record x_i contributes only the frequencies of its mask h_i (for complex and
        real maps a chosen frequency brings both its cos and its sin), and only those are
        computed. The expectation over the masks is the full sum (``sketch(X).sum``).

        Parameters
        ----------
        X : array_like, memmap or iterable of 2-D batches
            As for `sketch`.
        r : int
            Frequencies per record, 1 <= r <= m. r = m is the full sketch.
        scheme : {'uniform', 'bernoulli', 'blocks'}
            'uniform': exactly r distinct frequencies per record, uniformly among the r-subsets,
            independently across records (Chatalic et al. 2022, eq. (12), U(H_r)). 'bernoulli': each
            frequency kept independently with probability r / m (a random number of features
            per record, which needs more privacy noise; sec. 4.4). 'blocks': r / d_p whole
            blocks of a structured operator (d_p its block size; m and r multiples of d_p), and
            only those blocks' fast transforms are run.
        random_state : None, int, numpy Generator, ...
            Seeds the masks: a 128-bit key is drawn from it (None: fresh OS entropy). Never
            pass the operator's seed: the masks must not be predictable from the public map.
        batch_size : int, optional
            As for `sketch`.

        Returns
        -------
        Sketch
            Its ``subsampling`` records the scheme, r, m, the scale m / r and the block size.
        """
        self.subsampling_spec(r, scheme)  # r is required here (None would mean no subsampling)
        acc = SketchAccumulator(
            self, batch_size=batch_size, subsample_r=r, subsample_scheme=scheme, random_state=random_state
        )
        acc.update(X)
        return acc.sketch()

    def subsampling_spec(self, r, scheme):
        """The validated description of a subsampling: a JSON-ready dict (see Sketch)."""
        if not isinstance(scheme, str) or scheme not in SUBSAMPLING_SCHEMES:
            raise ValueError(f"scheme must be one of {SUBSAMPLING_SCHEMES}, got {scheme!r}")
        m = self.m
        if isinstance(r, (bool, np.bool_)) or not isinstance(r, numbers.Integral):
            raise TypeError(f"r must be an int with 1 <= r <= m = {m}; got {r!r} of type {type(r).__name__}")
        r = int(r)
        if not 1 <= r <= m:
            raise ValueError(f"r must be an int with 1 <= r <= m = {m}; got {r}")
        block = None
        if scheme == "blocks":
            block = self.operator.block_size
            if block is None:
                raise ValueError(
                    "scheme 'blocks' needs a structured operator (r3, gr2 or fastfood), whose blocks of d_p "
                    f"frequencies are transformed together; this map has a {type(self.operator).__name__}: use "
                    "scheme='uniform' or 'bernoulli'"
                )
            if m % block:
                raise ValueError(
                    f"scheme 'blocks' needs m to be a multiple of the block size d_p = {block}; m = {m} is not "
                    "(the last block is truncated): use scheme='uniform', or m a multiple of d_p"
                )
            if r % block:
                raise ValueError(
                    f"with scheme 'blocks', r must be a multiple of the block size d_p = {block} (r / d_p whole "
                    f"blocks per record); got r = {r}"
                )
        return {"scheme": scheme, "r": r, "m": m, "scale": m / r, "block_size": block}

    # ------------------------------------------------------------------ sums

    def new_accumulators(self):
        """Zeroed float64 accumulators for `accumulate` (a tuple of arrays)."""
        raise NotImplementedError

    def accumulate(self, X, accumulators, subsample=None):
        """Add the sums of the features of the rows of X (a validated, C-contiguous array of
        the operator's dtype) into `accumulators` (from `new_accumulators`).

        subsample: None, or (spec, key0, key1, first): the subsampled sums of spec (from
        `subsampling_spec`) with the masks of the 128-bit key (key0, key1), the rows being
        the records first, first + 1, ... of the stream."""
        raise NotImplementedError

    def sums(self, accumulators):
        """The named sums (see `sum_layout`) of the accumulated features."""
        raise NotImplementedError

    # ------------------------------------------------------------------ privacy, decoding

    def sensitivity(self, norm, neighbouring="add_remove", *, features_per_record=None, data_norm=None):
        """The L1 (norm=1) or L2 (norm=2) sensitivity of the sum of features under the
        neighbouring relation ('add_remove' or 'replace'), with each record contributing
        `features_per_record` of the m features (rescaled by m / r; None: all), for records
        with ||x||_2 <= data_norm where the map needs it (see pysketch.privacy.sensitivity)."""
        if norm not in (1, 2):
            raise ValueError(f"norm must be 1 or 2, got {norm!r}")
        check_relation(neighbouring)
        r = self.m if features_per_record is None else features_per_record
        if isinstance(r, (bool, np.bool_)) or not isinstance(r, numbers.Integral) or not 1 <= r <= self.m:
            raise ValueError(f"features_per_record must be an int in [1, m={self.m}], got {features_per_record!r}")
        return self._sensitivity(norm, neighbouring, int(r), data_norm)

    def _sensitivity(self, norm, neighbouring, r, data_norm):
        raise NotImplementedError(f"{type(self).__name__} states no sensitivity")

    def demodulate(self, mean):
        """The mean sketch as the target of the mixture decoders: a complex (m,) vector z
        such that the sketch of a Dirac at c is exp(i Omega^T c)."""
        raise ValueError(f"mixture decoders need Fourier features ('complex', 'real' or 'quantized'), not {self.kind}")

    def second_moments(self, mean):
        """The mean sketch as the target of the subspace decoders: a real (m,) vector z with
        z_j = omega_j^T C omega_j, C the records' second moments about the map's centre."""
        raise ValueError(f"subspace decoders need quadratic features ('quadratic'), not {self.kind}")

    # ------------------------------------------------------------------ linear models of the features

    @property
    def real_dim(self):
        """Length of the real form of Phi(x) (`as_real`): output_dim, twice that if complex."""
        return 2 * self.output_dim if self.is_complex else self.output_dim

    def as_real(self, v):
        """A vector (or the rows of a matrix) in this map's output layout as reals: a complex
        vector z becomes [Re z; Im z] (the canonical isomorphism, under which <a, z> for
        real a is the real inner product), a real one is returned as float64."""
        v = np.asarray(v)
        if self.is_complex:
            return np.concatenate([v.real, v.imag], axis=-1).astype(np.float64, copy=False)
        return v.astype(np.float64, copy=False)

    def design(self, X):
        """The features of the rows of X as a linear operator P (n x real_dim) for least
        squares over them (the M2M method): ``P.gram()`` = P^T P, ``P.matvec(V)`` = P V and
        ``P.rmatvec(F)`` = P^T F, the features computed a chunk of rows at a time and never
        held as one dense (n, real_dim) array (`DenseDesign`; one-hot maps give a
        `OneHotDesign`)."""
        return DenseDesign(self, X)

    # ------------------------------------------------------------------ state

    def get_state(self):
        """(metadata, arrays) describing the map completely (the operator's every random
        array and the dither), for saving, `fingerprint` and pickling."""
        op_meta, op_arrays = self.operator.get_state()
        meta = {"kind": self.kind, "operator": op_meta}
        arrays = {f"operator_{k}": v for k, v in op_arrays.items()}
        if self.dither is not None:
            arrays["dither"] = self.dither
        return meta, arrays

    @staticmethod
    def from_state(meta, arrays):
        """The map of a state (`get_state`): the class registered for meta['kind']."""
        return FEATURE_MAPS.from_state(meta, arrays)

    @classmethod
    def _from_state(cls, meta, arrays):
        op_arrays = {k[len("operator_"):]: v for k, v in arrays.items() if k.startswith("operator_")}
        operator = FrequencyOperator.from_state(meta["operator"], op_arrays)
        dither = arrays.get("dither")
        return cls(operator, dither=None if dither is None else np.asarray(dither))

    def __repr__(self):
        dither = "" if self.dither is None else ", dithered"
        return f"FeatureMap(kind={self.kind!r}, operator={self.operator!r}{dither})"


FEATURE_MAPS.base = FeatureMap


class _KernelMap(FeatureMap):
    """A map whose nonlinearity is one of the C++ core's (``kernel``: a
    pysketch._core.Nonlinearity), fused with the operator's product in the sketching engines; the
    float64 accumulators are (cos, sin) sums or a single one (``two_sums``)."""

    kernel = None
    two_sums = True

    def features(self, T):
        # The values of the sketch's own kernels: the phases as one row of n * m, so that
        # the "sum over rows" of the accumulation is each value itself (same bits).
        n, m = T.shape
        flat = np.ascontiguousarray(T).reshape(1, n * m)
        u = None if self.kernel_dither is None else np.tile(self.kernel_dither, n)
        c = np.zeros(n * m)
        s = np.zeros(n * m) if self.two_sums else None
        _core.accumulate_features(self.kernel, flat, u, c, s)
        return self._values(c.reshape(n, m), None if s is None else s.reshape(n, m), T.dtype)

    def _values(self, c, s, dtype):
        raise NotImplementedError

    def new_accumulators(self):
        return (np.zeros(self.m), np.zeros(self.m) if self.two_sums else None)

    def accumulate(self, X, accumulators, subsample=None):
        acc0, acc1 = accumulators
        if subsample is not None and subsample[0]["r"] < self.m:
            spec, key0, key1, first = subsample
            self.operator.accumulate_subsampled(self.kernel, X, self.kernel_dither, _SCHEME_CODES[spec["scheme"]],
                                                spec["r"], key0, key1, first, acc0, acc1)
        else:
            self.operator.accumulate(self.kernel, X, self.kernel_dither, acc0, acc1)


class FourierMap(_KernelMap):
    """Random Fourier features (complex exponentials and their real and one-bit forms):
    abs(Phi_j(x)) <= 1 whatever x, so the sensitivities hold for any data ([P] Table 2).

    Parameters
    ----------
    operator, kind, dither, random_state
        As for `FeatureMap`.

    Raises
    ------
    ValueError
        From `demodulate`, when the mean sketch has the wrong shape or is not finite (and
        as `FeatureMap`).

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> from pysketch.features import FourierMap
    >>> fm = pysketch.make_feature_map(2, 16, random_state=0)
    >>> isinstance(fm, FourierMap), fm.sensitivity(2), fm.sensitivity(2, "replace")  # m / sqrt(m)
    (True, 4.0, 8.0)
    >>> c = np.array([[0.5, -1.0]])  # the sketch of a Dirac at c, demodulated
    >>> np.allclose(fm.demodulate(fm.sketch(c).mean()), np.exp(1j * fm.operator.apply(c[0])))
    True
    """

    kernel = _core.Nonlinearity.cis  # (cos, sin) of the phases plus the dither
    is_complex = True
    #: the mean sketch of a Dirac at c is harmonic * exp(i (Omega^T c + u))
    harmonic = 1.0

    def _values(self, c, s, dtype):
        out = np.empty(c.shape, np.complex64 if dtype == np.float32 else np.complex128)
        out.real = c
        out.imag = s
        return out

    def sums(self, accumulators):
        acc0, acc1 = accumulators
        out = np.empty(self.m, np.complex128)
        out.real = _finite_phases(acc0)
        out.imag = _finite_phases(acc1)
        return {"sum": out}

    def _sensitivity(self, norm, neighbouring, r, data_norm):
        # [P] Lemma 7 (L1, sqrt(2) m whatever r), Lemma 11 / 18 (L2, m / sqrt(r)); Lemmas 12
        # and 17: 'replace' doubles both
        factor = 2.0 if neighbouring == "replace" else 1.0
        if norm == 1:
            return factor * math.sqrt(2.0) * self.m
        return factor * self.m / math.sqrt(r)

    def _complex_mean(self, mean):
        z = np.asarray(mean)
        if z.shape != (self.m,):
            raise ValueError(f"the sketch mean must have shape ({self.m},), got {z.shape}")
        return z

    def demodulate(self, mean):
        z = self._complex_mean(mean).astype(np.complex128)
        if self.dither is not None:
            z = z * np.exp(-1j * self.dither)
        if self.harmonic != 1.0:
            z = z / self.harmonic
        if not np.isfinite(z).all():
            raise ValueError("the sketch mean must be finite")
        return z


@FEATURE_MAPS.register("complex")
class ComplexFourierMap(FourierMap):
    """exp(i (omega_j^T x + u_j)), complex, abs(Phi_j) = 1 (Chatalic's thesis Def. 2.5).

    Parameters
    ----------
    operator, kind, dither, random_state
        As for `FeatureMap`.

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> fm = pysketch.make_feature_map(2, 16, "complex", random_state=0)
    >>> F = fm.transform(np.array([[0.5, -1.0], [2.0, 0.0]]))
    >>> F.shape, F.dtype.name, np.allclose(np.abs(F), 1.0)
    ((2, 16), 'complex128', True)
    """

    kind = "complex"


@FEATURE_MAPS.register("real")
class RealFourierMap(FourierMap):
    """[cos(Omega^T x + u); sin(Omega^T x + u)]: the complex map as 2m reals (the canonical
    isomorphism C^m ~ R^2m, so every sensitivity of the complex map carries over).

    Parameters
    ----------
    operator, kind, dither, random_state
        As for `FeatureMap`.

    Raises
    ------
    ValueError
        From `demodulate`, when the mean sketch does not have 2m entries (and as
        `FeatureMap`).

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> fm = pysketch.make_feature_map(2, 16, "real", random_state=0)
    >>> F = fm.transform(np.array([[0.5, -1.0]]))
    >>> fm.output_dim, F.shape, np.allclose(F[:, :16] ** 2 + F[:, 16:] ** 2, 1.0)  # [cos; sin]
    (32, (1, 32), True)
    """

    kind = "real"
    is_complex = False

    @property
    def output_dim(self):
        return 2 * self.m

    def _values(self, c, s, dtype):
        return np.concatenate([c, s], axis=1).astype(dtype)

    def sums(self, accumulators):
        return {"sum": _finite_phases(np.concatenate(accumulators))}

    def _complex_mean(self, mean):
        z = np.asarray(mean)
        if z.shape != (2 * self.m,):
            raise ValueError(f"the mean of a real feature map has shape ({2 * self.m},), got {z.shape}")
        return z[: self.m] + 1j * z[self.m :]


@FEATURE_MAPS.register("quantized")
class QuantizedFourierMap(FourierMap):
    """2^-1/2 (sign cos(t) + i sign sin(t)), t = Omega^T x + u: the one-bit features of
    Schellekens & Jacques (2018), which need the uniform dither u on [0, 2 pi)
    (quantization without dither is biased; the dither is stored with the map). Their
    first harmonic is (2 sqrt 2 / pi) exp(i t) (the Fourier series of the quantized cosine), which decoders
    divide out.

    Parameters
    ----------
    operator, kind, dither, random_state
        As for `FeatureMap`.
        The dither is drawn from `random_state` unless given.

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> fm = pysketch.make_feature_map(2, 16, "quantized", random_state=0)
    >>> F = fm.transform(np.array([[0.5, -1.0]]))
    >>> fm.dither.shape, np.allclose(np.abs(F.real), 2 ** -0.5), np.allclose(np.abs(F.imag), 2 ** -0.5)
    ((16,), True, True)
    """

    kind = "quantized"
    kernel = _core.Nonlinearity.qcis  # the C++ kernel includes the 2^-1/2
    default_dither = "random"
    harmonic = QUANTIZED_FIRST_HARMONIC


def _check_radius(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real) or not (
            math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _finite_phases(T):
    """T (the phases Omega^T x, or sums of their features), or ValueError about the data's
    scale when the phases overflowed (NaN features: cos(inf))."""
    if not np.isfinite(T).all():
        raise ValueError("the magnitude of the data (in the frequencies' units, 1 / the kernel scale) is outside "
                         "the supported range: the phases omega^T x overflow float64; rescale the data (or change "
                         "the kernel scale) by a constant")
    return T


def _centre_and_clip(X, centre, data_norm):
    """Subtract the centre (None: none) from the rows of X and rescale those with
    ||x - centre||_2 > data_norm (None: none) just inside that sphere, in place; returns
    how many were rescaled."""
    if centre is not None:
        X -= centre.astype(X.dtype)
    if data_norm is None:
        return 0
    norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
    huge = ~np.isfinite(norms)
    if huge.any():  # ||x||^2 overflowed (finite records above ~1e154): scale them first
        H = X[huge].astype(np.float64)
        top = np.max(np.abs(H), axis=1)
        H /= top[:, None]
        norms[huge] = top * np.sqrt(np.einsum("ij,ij->i", H, H))
    over = norms > data_norm
    k = int(np.count_nonzero(over))
    if k:
        # just inside the sphere in the records' dtype
        shrink = (data_norm / norms[over]) * (1.0 - 4.0 * float(np.finfo(X.dtype).eps))
        X[over] *= shrink[:, None].astype(X.dtype)
    return k


def _float64_rows(X, d):
    """X (one record (d,) or rows (n, d)) as checked float64 rows, and whether it was one record."""
    A = np.asarray(X)
    single = A.ndim == 1
    A = check_array(A[None, :] if single else A, "X", np.float64)
    if A.shape[1] != d:
        raise ValueError(f"X must have {d} columns (the map's input dimension), got shape {A.shape}")
    return A, single


def _warn_rescaled(k, data_norm):
    """The warning of a map that rescaled k > 0 records onto its sphere of radius data_norm."""
    if k > 0:
        warnings.warn(f"{k} record(s) had ||x - centre||_2 > data_norm = {data_norm:g} and were rescaled onto that "
                      "sphere (the privacy guarantee assumes the ball); pass a larger public data_norm to keep them "
                      "whole", RuntimeWarning, stacklevel=5)


def _public_radius(feature_map, data_norm):
    """The radius R a second-moment map's sensitivity holds for: data_norm, else the map's
    own (ValueError when neither is given, or data_norm is below the map's own)."""
    if data_norm is None:
        data_norm = feature_map.data_norm
        if data_norm is None:
            raise ValueError(f"{feature_map.kind} features need data_norm: a public bound R on ||x - centre||_2 of "
                             "every record (or a map made with data_norm, which rescales records onto it)")
    data_norm = _check_radius(data_norm, "data_norm")
    if feature_map.data_norm is not None and data_norm < feature_map.data_norm:
        raise ValueError(f"data_norm={data_norm!r} is below the map's own radius {feature_map.data_norm!r}: its "
                         "records are only rescaled onto the larger sphere")
    return data_norm


def _finite_squares(F):
    """F (quadratic features or their sum), or ValueError about the data's scale when they
    overflowed (records beyond about 1e154 in the frequencies' units)."""
    if not np.isfinite(F).all():
        raise ValueError("the magnitude of the data is outside the supported range: its quadratic features "
                         "(omega^T (x - c))^2 overflow float64; rescale the data (and any centre, data_norm) by "
                         "a constant")
    return F


@FEATURE_MAPS.register("quadratic")
class QuadraticMap(_KernelMap):
    """(omega_j^T (x - c))^2, real (compressive PCA; no dither): the mean sketch of centred
    records is M(C) = [omega_j^T C omega_j]_j, C their covariance (Chatalic et al. 2022, Def. 6).

    Parameters
    ----------
    operator, kind, dither, random_state
        As for every feature map (`FeatureMap`); a quadratic map takes no dither.
    data_norm : float, optional
        A public radius R. Records with ||x - c||_2 > R are rescaled onto the sphere of
        radius R before their features are taken (never dropped); their number is given in
        a warning when the sums are read (the data holder's information: it is not part of
        the sketch). With R set, the sensitivities hold for any data; without it the caller
        must promise ||x - c|| <= data_norm to `sensitivity`.
    centre : array of shape (d,), optional
        A public centre c, subtracted from every record (default: none, i.e. c = 0).
        Quadratic features measure second moments about c, so c should be a public guess
        of the mean: a centre read from the data is not privacy-accounted (the PCA
        estimator spends part of its budget on a private mean instead).

    Raises
    ------
    ValueError
        If `centre` is not d finite numbers or `data_norm` is not a positive finite number,
        or a dither is given; from `transform`, when X does not have d columns; from
        `sensitivity`, without a `data_norm` (given or the map's own), with one below the
        map's own, or when the sensitivity overflows; from `second_moments`, for a mean of
        the wrong shape or not finite.

    Notes
    -----
    Sensitivities of the sum on the ball ||x - c|| <= R (Chatalic et al. 2022, Lemmas 9
    and 13, Table 1): L1 = R^2 ||Omega||_2^2 (exact), L2 = R^2 S4(Omega) <= R^2
    ||Omega||_2 max_j ||omega_j|| (Riesz-Thorin, thesis (8.9)), both from the operator's
    certified bounds (`gram_norm_bound`, `column_norm_bound`), for add/remove; twice (L1)
    and sqrt(2) times (L2) that for replace (not the same, as [P] Table 1 states: see
    `_sensitivity`); times m / r with r features per record.

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> law = pysketch.OrthonormalBasesLaw()  # two orthonormal bases of R^4: Omega Omega^T = 2 I
    >>> fm = pysketch.make_feature_map(4, 8, "quadratic", law=law, operator="dense", random_state=0)
    >>> round(float(fm.transform(np.array([1.0, 2.0, 0.0, -1.0])).sum()), 6)  # 2 ||x||^2
    12.0
    >>> round(fm.sensitivity(1, data_norm=1.0), 6)  # ||Omega||_2^2, certified from above
    2.0
    """

    kind = "quadratic"
    kernel = _core.Nonlinearity.square
    takes_dither = False
    two_sums = False

    def __init__(self, operator, kind=None, dither=None, random_state=None, *, data_norm=None, centre=None):
        super().__init__(operator, kind, dither, random_state)
        self.data_norm = None if data_norm is None else _check_radius(data_norm, "data_norm")
        if centre is not None:
            c = np.array(centre, dtype=np.float64)
            if c.shape != (operator.d,):
                raise ValueError(f"centre must have shape ({operator.d},) (the input dimension), got {c.shape}")
            if not np.isfinite(c).all():
                raise ValueError("centre must be finite")
            centre = c
        self.centre = centre

    def features(self, T):
        with np.errstate(over="ignore"):
            F = np.square(T)
        return _finite_squares(F)

    def transform(self, X):
        X = np.asarray(X)
        if self.centre is None and self.data_norm is None:
            return super().transform(X)
        single = X.ndim == 1
        X2 = np.array(X[None, :] if single else X, dtype=self.operator.dtype)
        if X2.ndim != 2 or X2.shape[1] != self.d:
            raise ValueError(f"X must have {self.d} columns, got shape {np.shape(X)}")
        self._prepare(X2)
        out = super().transform(X2)
        return out[0] if single else out

    def _prepare(self, X):
        """Centre and rescale the rows of X in place; returns how many were rescaled."""
        return _centre_and_clip(X, self.centre, self.data_norm)

    def new_accumulators(self):
        # the sum of the features, no second sum, and the number of rescaled records
        return (np.zeros(self.m), None, np.zeros(1))

    def accumulate(self, X, accumulators, subsample=None):
        acc0, _, rescaled = accumulators
        if self.centre is not None or self.data_norm is not None:
            X = X.copy()  # the caller's rows are never modified
            rescaled[0] += self._prepare(X)
        super().accumulate(X, (acc0, None), subsample)

    def sums(self, accumulators):
        if len(accumulators) > 2:
            _warn_rescaled(int(accumulators[2][0]), self.data_norm)
        return {"sum": _finite_squares(accumulators[0].copy())}

    def second_moments(self, mean):
        z = np.array(mean, dtype=np.float64).reshape(-1)
        if z.shape != (self.m,):
            raise ValueError(f"the sketch mean must have shape ({self.m},), got {np.shape(mean)}")
        if not np.isfinite(z).all():
            raise ValueError("the sketch mean must be finite")
        return z

    def _sensitivity(self, norm, neighbouring, r, data_norm):
        data_norm = _public_radius(self, data_norm)
        op = self.operator
        gram = op.gram_norm_bound()
        base = gram if norm == 1 else math.sqrt(gram * op.column_norm_bound())
        if neighbouring == "replace":
            # sup ||Phi(x) - Phi(y)||: for features >= 0, ||a - b||_1 <= ||a||_1 + ||b||_1 and
            # ||a - b||_2^2 <= ||a||_2^2 + ||b||_2^2, so 2x (L1) and sqrt(2)x (L2) the add/remove
            # value, both attained by x = omega_1, y = omega_2 of one orthonormal basis (the sums
            # move by e_1 - e_2). Erratum: [P] Table 1 and the thesis give replace = add/remove
            # "since Phi >= 0 and Phi(0) = 0", which bounds it from below only
            # (tests/test_quadratic.py shows the counterexample and audits it).
            base *= 2.0 if norm == 1 else math.sqrt(2.0)
        s = data_norm * data_norm * (self.m / r) * base  # (** raises OverflowError; * gives inf)
        if not math.isfinite(s):
            raise ValueError(f"the magnitude of data_norm ({data_norm:.3g}) is outside the supported range: the "
                             "sensitivity data_norm^2 ||Omega||^2 overflows float64; rescale the data (and "
                             "data_norm) by a constant")
        return s

    def get_state(self):
        meta, arrays = super().get_state()
        if self.data_norm is not None:
            meta["data_norm"] = self.data_norm
        if self.centre is not None:
            arrays["centre"] = self.centre
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        op_arrays = {k[len("operator_"):]: v for k, v in arrays.items() if k.startswith("operator_")}
        operator = FrequencyOperator.from_state(meta["operator"], op_arrays)
        centre = arrays.get("centre")
        return cls(operator, data_norm=meta.get("data_norm"), centre=None if centre is None else np.asarray(centre))

    def __repr__(self):
        extra = "" if self.data_norm is None else f", data_norm={self.data_norm:g}"
        extra += "" if self.centre is None else ", centred"
        return f"FeatureMap(kind='quadratic', operator={self.operator!r}{extra})"


@FEATURE_MAPS.register("second_moment")
class SecondMomentMap(FeatureMap):
    """The whole second-moment matrix as a sketch: the quadratic map on an orthonormal basis
    of the D (D + 1) / 2 symmetric matrices (real, no frequencies, no dither).

    ``SecondMomentMap(d, *, data_norm=None, centre=None, offset=None)``. For y = x - c (and
    z = y, or z = (y, a) with the public constant a = offset appended: D = d or d + 1), the
    features are the coordinates of z z^T in the basis {e_i e_i^T} and
    {(e_i e_j^T + e_j e_i^T) / sqrt 2, i < j}: z_i^2 for every i, then sqrt(2) z_i z_j for
    i < j, in the order of ``numpy.triu_indices(D)`` (row by row of the upper triangle, the
    diagonal entry first). The basis is orthonormal in the Frobenius inner product, so
    ||Phi(x)||_2 = ||z z^T||_F = ||z||^2, and the mean sketch is the coordinates of the
    second-moment matrix of z (`second_moment_matrix`). Sums are accumulated as y^T y of
    whole batches (BLAS): O(D^2) memory, O(n d^2) time; a sketch is m = D (D + 1) / 2
    float64 numbers.

    With an offset, one release holds the first moment too: the sum's last column is a times
    the sum of y, its last coordinate a^2 n, so the records' mean and their covariance about
    it are post-processing of the same sketch (`moments`); no share of a privacy budget goes
    to a separate private mean, and the sketch merges like any other.

    Its private release is Analyze Gauss (Dwork, Talwar, Thakurta & Zhang, STOC 2014) with the
    off-diagonal noise sqrt 2 smaller (the orthonormal basis), or the Laplace covariance
    baseline, through the same release path as every sketch.

    Parameters
    ----------
    d : int
        Input dimension.
    data_norm, centre
        As for 'quadratic' features: records with ||x - c||_2 > R are rescaled onto the sphere
        of radius R (counted in a warning, never dropped); c is a public centre.
    offset : float > 0, optional
        The public constant a appended to every record (about the centre).

    Raises
    ------
    ValueError
        If `centre` is not d finite numbers, `data_norm` or `offset` is not a positive
        finite number, or d is below 1 or too large for the machine's memory; from
        `second_moment_matrix` and `moments`, for a mean of the wrong shape or not finite;
        from `count_from_sum` and `reoffset`, without an offset; from `reoffset`, for a
        private sketch or one of another map; from the sensitivity, without a radius or
        with feature subsampling.
    TypeError
        If d is not an integer; from `features`, always (the map has no phases).

    Notes
    -----
    Sensitivities of the sum on the ball ||x - c|| <= R (brute-forced in
    tests/test_second_moment.py), with A = a^2 (0 without an offset): add/remove,
    L2 = R^2 + A (||z z^T||_F = ||z||^2) and L1 = (R^2 + A) (1 - 1/sqrt 2) + (R sqrt d + a)^2
    / sqrt 2 (sum_i z_i^2 + sqrt 2 sum_{i<j} abs(z_i z_j) = ||z||^2 (1 - 1/sqrt 2) + ||z||_1^2 /
    sqrt 2, largest at abs(y_i) = R / sqrt d; R^2 (1 + (d - 1) / sqrt 2) without an offset);
    replace, L2 = sqrt(2 (R^2 + A)^2 - 2 max(0, A - R^2)^2) (||z z^T - w w^T||_F^2 = ||z||^4
    + ||w||^4 - 2 (z^T w)^2 with z^T w = y^T y' + A, largest at ||y|| = ||y'|| = R and
    y^T y' as near -A as it goes: sqrt(2) R^2 without an offset) and L1 at most twice the
    add/remove value (the triangle inequality). No feature subsampling.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import SecondMomentMap
    >>> X = np.array([[1.0, 2.0], [3.0, 0.0]])
    >>> fm = SecondMomentMap(2)
    >>> C, mu = fm.moments(fm.sketch(X).mean())  # second moments about 0
    >>> np.allclose(C, [[5.0, 1.0], [1.0, 2.0]])
    True
    >>> fm = SecondMomentMap(2, offset=1.0)  # the mean in the same sketch
    >>> C, mu = fm.moments(fm.sketch(X).mean())
    >>> fm.m, np.allclose(mu, [2.0, 1.0]), np.allclose(C, [[1.0, -1.0], [-1.0, 1.0]])
    (6, True, True)
    """

    kind = "second_moment"
    takes_dither = False
    operator = None

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, d, *, data_norm=None, centre=None, offset=None):
        d = check_int(d, "d")
        self.offset = None if offset is None else _check_radius(offset, "offset")
        extra = 0 if self.offset is None else 1
        # the accumulator y^T y (D x D), the sum, and a batch's features for transform
        check_size(d + extra, "d", nbytes=lambda v: 8 * v * v + 8 * (v * (v + 1) // 2),
                   what="for the d x d second-moment accumulator and its sketch")
        self._d = d
        self._D = d + extra
        self.data_norm = None if data_norm is None else _check_radius(data_norm, "data_norm")
        if centre is not None:
            c = np.array(centre, dtype=np.float64)
            if c.shape != (d,):
                raise ValueError(f"centre must have shape ({d},) (the input dimension), got {c.shape}")
            if not np.isfinite(c).all():
                raise ValueError("centre must be finite")
            centre = c
        self.centre = centre
        self.dither = None
        self.kernel_dither = None

    @property
    def d(self):
        return self._d

    @property
    def m(self):
        return self._D * (self._D + 1) // 2

    @property
    def input_dtype(self):
        return np.dtype(np.float64)

    def _rows(self, X):
        return _float64_rows(X, self.d)

    def transform(self, X):
        """The features of the rows of X: (n, D (D + 1) / 2) float64 (a record of shape (d,)
        gives a 1-D result)."""
        A, single = self._rows(X)
        Y = np.array(A)
        _centre_and_clip(Y, self.centre, self.data_norm)
        if self.offset is not None:
            Y = np.hstack([Y, np.full((Y.shape[0], 1), self.offset)])
        check_size(Y.shape[0], "the number of rows of X", nbytes=lambda v: 8 * v * self.m,
                   what=f"for their {self.m} features each")
        i, j, off = self._upper()
        with np.errstate(over="ignore"):
            F = Y[:, i] * Y[:, j]
        F[:, off] *= math.sqrt(2.0)
        F = _finite_squares(F)
        return F[0] if single else F

    def features(self, T):
        raise TypeError("second_moment features are not a function of phases Omega^T x: use transform(X)")

    def subsampling_spec(self, r, scheme):
        raise ValueError("second_moment features have no feature subsampling")

    def _upper(self):
        """The upper triangle's indices (numpy.triu_indices order) and the off-diagonal mask."""
        i, j = np.triu_indices(self._D)
        return i, j, i != j

    def new_accumulators(self):
        # the features' sum, no second sum, and the number of rescaled records
        return (np.zeros(self.m), None, np.zeros(1))

    def accumulate(self, X, accumulators, subsample=None):
        if subsample is not None:
            raise ValueError("second_moment features have no feature subsampling")
        acc, _, rescaled = accumulators
        if self.centre is not None or self.data_norm is not None:
            X = X.copy()  # the caller's rows are never modified
            rescaled[0] += _centre_and_clip(X, self.centre, self.data_norm)
        # the batch's z^T z (BLAS), added in the features' own coordinates: the sums of
        # blocks merge like those of any map (the same blocks in the same order: the same bits)
        with np.errstate(over="ignore", invalid="ignore"):
            gram = X.T @ X
            if self.offset is not None:
                a = self.offset
                column = a * X.sum(axis=0)
                gram = np.block([[gram, column[:, None]], [column[None, :], np.array([[a * a * X.shape[0]]])]])
        i, j, off = self._upper()
        part = gram[i, j]
        part[off] *= math.sqrt(2.0)
        acc += part

    def sums(self, accumulators):
        _warn_rescaled(int(accumulators[2][0]), self.data_norm)
        return {"sum": _finite_squares(accumulators[0].copy())}

    def second_moment_matrix(self, mean):
        """The symmetric D x D matrix whose coordinates (see the class docstring) are the
        mean sketch `mean`: the second moments of z (y = x - c, with the offset a appended
        when the map has one)."""
        z = np.array(mean, dtype=np.float64).reshape(-1)
        if z.shape != (self.m,):
            raise ValueError(f"the sketch mean must have shape ({self.m},), got {np.shape(mean)}")
        if not np.isfinite(z).all():
            raise ValueError("the sketch mean must be finite")
        i, j, off = self._upper()
        z[off] /= math.sqrt(2.0)
        D = self._D
        C = np.zeros((D, D))
        C[i, j] = z
        C[j[off], i[off]] = z[off]
        return C

    def moments(self, mean):
        """(C, mu) of the mean sketch `mean` (the sum divided by the count): without an offset,
        the d x d second moments about the centre and mu = 0; with one, mu, the records' mean
        about the centre (the last column over a), and C, their covariance about their mean
        (the second moments minus mu mu^T). Post-processing: a private sketch's noise carries
        over (the last coordinate estimates a^2 n / count, see `count_from_sum`)."""
        M = self.second_moment_matrix(mean)
        d = self.d
        if self.offset is None:
            return M, np.zeros(d)
        mu = M[:d, d] / self.offset
        return M[:d, :d] - np.outer(mu, mu), mu

    def count_from_sum(self, sum):
        """With an offset, the count the sum implies (its last coordinate over a^2): a second
        estimate of n in a private release, whose noise is that of one coordinate over a^2."""
        if self.offset is None:
            raise ValueError("count_from_sum needs a map with an offset")
        return float(np.asarray(sum, dtype=np.float64).reshape(-1)[-1]) / (self.offset * self.offset)

    def reoffset(self, sketch, offset):
        """The clean sketch `sketch` of this map as the same map with offset `offset` would
        have made it: the sum's last column scales by offset / a and its last coordinate by
        (offset / a)^2 (exact up to one rounding per coordinate). A release can so take the
        offset its own radius calls for (pysketch.pca.self_centring_offset) whatever offset
        the sketch was made with."""
        from .sketch import Sketch

        if self.offset is None:
            raise ValueError("reoffset needs a map with an offset (a self-centred second_moment map)")
        if getattr(sketch, "privacy", None) is not None:
            raise ValueError("reoffset applies to a clean sketch (a private sketch's noise was drawn for its own map)")
        if sketch.feature_map != self:
            raise ValueError("the sketch was made with another feature map")
        new = SecondMomentMap(self.d, data_norm=self.data_norm, centre=self.centre, offset=offset)
        ratio = new.offset / self.offset
        i, j, _ = self._upper()
        last = self._D - 1
        scale = np.where(j == last, ratio, 1.0) * np.where(i == last, ratio, 1.0)
        return Sketch(new, np.asarray(sketch.sum, dtype=np.float64) * scale, sketch.count)

    def _sensitivity(self, norm, neighbouring, r, data_norm):
        if r != self.m:
            raise ValueError("second_moment features have no feature subsampling: features_per_record must be m")
        R = _public_radius(self, data_norm)
        a = 0.0 if self.offset is None else self.offset
        with np.errstate(over="ignore"):
            R2, A2 = R * R, a * a
            if norm == 2:
                base = R2 + A2
                if neighbouring == "replace" and base > 0:
                    # sqrt(2 (R^2 + A)^2 - 2 max(0, A - R^2)^2), written without squaring R^2 + A
                    t = max(0.0, A2 - R2) / base
                    base = math.sqrt(2.0) * base * math.sqrt(1.0 - t * t)
            else:
                l1 = R * math.sqrt(self.d) + a
                base = (R2 + A2) * (1.0 - 1.0 / math.sqrt(2.0)) + l1 * l1 / math.sqrt(2.0)
                if neighbouring == "replace":
                    base *= 2.0
        if not math.isfinite(base):
            raise ValueError(f"the magnitude of data_norm ({R:.3g}) is outside the supported range: the "
                             "sensitivity overflows float64; rescale the data (and data_norm) by a constant")
        return base

    def get_state(self):
        meta = {"kind": self.kind, "d": self.d}
        if self.data_norm is not None:
            meta["data_norm"] = self.data_norm
        if self.offset is not None:
            meta["offset"] = self.offset
        arrays = {} if self.centre is None else {"centre": self.centre}
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        centre = arrays.get("centre")
        return cls(meta["d"], data_norm=meta.get("data_norm"), centre=None if centre is None else np.asarray(centre),
                   offset=meta.get("offset"))

    def __repr__(self):
        extra = "" if self.data_norm is None else f", data_norm={self.data_norm:g}"
        extra += "" if self.centre is None else ", centred"
        extra += "" if self.offset is None else f", offset={self.offset:g}"
        return f"FeatureMap(kind='second_moment', d={self.d}{extra})"


# ---------------------------------------------------------------------------------------------
# One-hot maps: HIST and RACE (the sketches of the M2M method, Houssiau et al. 2022, Sec. 2.1)


class OneHotMap(FeatureMap):
    """Features that are k concatenated one-hot blocks: block j has `block_sizes[j]` entries,
    and every record sets exactly one of them to 1 (so ||Phi(x)||_1 = k, ||Phi(x)||_2^2 = k
    for any x). The sketch is a float64 vector of counts; `transform` gives a sparse
    (scipy.sparse CSR) matrix, and `indices` the k hot positions of each record.

    Sensitivities of the sum (Houssiau et al. 2022, Sec. 2.3; brute-forced in
    tests/test_onehot_maps.py): adding or removing a record moves k counts by one, so L1 = k
    and L2 = sqrt(k); replacing one moves at most k counts down and k up, so L1 = 2k and
    L2 = sqrt(2k), whatever the data (nothing needs clipping for privacy). One-hot maps
    have no feature subsampling.

    Parameters
    ----------
    operator, kind, dither, random_state
        As for `FeatureMap`.
        Each kind of one-hot map has its own constructor (`HistogramMap`, `MarginalMap`,
        `RaceMap`).

    Raises
    ------
    ValueError
        From the sketches and the sensitivity, with feature subsampling (one-hot maps have
        none); from `indices` and `transform`, when X does not have d columns or holds NaN
        or infinity.
    TypeError
        From `features`, always (the maps take the records, not phases).
    NotImplementedError
        From `block_sizes`, on a class that does not define its blocks.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import HistogramMap, OneHotMap
    >>> fm = HistogramMap([0.0, 0.0], [1.0, 1.0], n_bins=4)  # two blocks of 4 bins
    >>> isinstance(fm, OneHotMap), fm.n_blocks, fm.sensitivity(1), fm.sensitivity(1, "replace")
    (True, 2, 2.0, 4.0)
    >>> fm.transform(np.array([[0.1, 0.9]])).toarray()
    array([[1., 0., 0., 0., 0., 0., 0., 1.]])
    """

    takes_dither = False
    operator = None
    #: make_private's default split of epsilon between the sum and the count: the one-hot
    #: rule (privacy.nsr.budget_split_one_hot) for maps of several blocks that M2M reads
    one_hot_split = True

    @property
    def input_dtype(self):
        return np.dtype(np.float64)

    @property
    def block_sizes(self):
        """Sizes of the one-hot blocks, (k,) int64."""
        raise NotImplementedError

    @property
    def n_blocks(self):
        return len(self.block_sizes)

    @property
    def block_offsets(self):
        """Index of the first entry of each block in Phi(x), (k,) int64."""
        sizes = self.block_sizes
        return np.concatenate([[0], np.cumsum(sizes[:-1])]).astype(np.int64)

    def _rows(self, X):
        return _float64_rows(X, self.d)

    def indices(self, X):
        """The hot positions of the rows of X: (n, k) int32, entry j in block j's range."""
        A, single = self._rows(X)
        out = np.empty((A.shape[0], self.n_blocks), np.int32)
        self._indices(A, out)
        return out[0] if single else out

    def transform(self, X):
        """The features of the rows of X as a scipy.sparse CSR matrix (n, m) of 0/1 (one
        record of shape (d,) gives a (1, m) matrix)."""
        from scipy import sparse

        idx = np.atleast_2d(self.indices(X))
        n, k = idx.shape
        return sparse.csr_matrix((np.ones(n * k), idx.reshape(-1).astype(np.int64), np.arange(0, n * k + 1, k)),
                                 shape=(n, self.m))

    def features(self, T):
        raise TypeError(f"{self.kind} features are not a function of phases Omega^T x: use transform(X)")

    def design(self, X):
        return OneHotDesign(self.indices(X), self.block_offsets, self.block_sizes)

    def subsampling_spec(self, r, scheme):
        raise ValueError(f"{self.kind} features have no feature subsampling (every record sets one entry per block)")

    def new_accumulators(self):
        # the counts, and the number of records outside the map's box (where it has one)
        return (np.zeros(self.m), np.zeros(1))

    def accumulate(self, X, accumulators, subsample=None):
        if subsample is not None:
            raise ValueError(f"{self.kind} features have no feature subsampling")
        counts, outside = accumulators
        outside[0] += self._accumulate(X, counts)

    def sums(self, accumulators):
        return {"sum": accumulators[0].copy()}

    def _sensitivity(self, norm, neighbouring, r, data_norm):
        if r != self.m:
            raise ValueError(f"{self.kind} features have no feature subsampling: features_per_record must be m")
        k = float(self.n_blocks)
        if neighbouring == "replace":
            return 2.0 * k if norm == 1 else math.sqrt(2.0 * k)
        return k if norm == 1 else math.sqrt(k)


@FEATURE_MAPS.register("hist")
class HistogramMap(OneHotMap):
    """HIST: one equal-width histogram of `n_bins` bins per attribute on the public box
    [lower, upper], the d one-hot blocks concatenated (m = d n_bins; Houssiau et al. 2022, Sec. 2.1).
    A value equal to upper falls in the last bin; values outside the box are counted
    in the edge bin of their side, never dropped, and their records are counted in a
    warning when the sums are read (the sensitivity d holds whatever the data).

    ``HistogramMap(lower, upper, n_bins=100)``; the bins of attribute j are
    ``edges(j)``. Binning and counting run in the C++ core (pysketch/onehot.hpp).

    Parameters
    ----------
    lower, upper : array_like of float, shape (d,)
        The public box: finite, upper > lower in every coordinate.
    n_bins : int, default 100
        Bins per attribute (m = d n_bins, at most 2^31 in all).

    Raises
    ------
    ValueError
        If `lower` and `upper` are not two finite 1-D arrays of one length d >= 1 with
        upper > lower, or `n_bins` is below 1 or too large (and as `OneHotMap`).
    TypeError
        If `n_bins` is not an integer.

    Warns
    -----
    RuntimeWarning
        When the sums are read, if records had a coordinate outside the box.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import HistogramMap
    >>> fm = HistogramMap([0.0, 0.0], [1.0, 1.0], n_bins=4)
    >>> X = np.array([[0.1, 0.9], [1.0, 0.3]])
    >>> fm.indices(X)  # attribute 1's bins come after attribute 0's 4
    array([[0, 7],
           [3, 5]], dtype=int32)
    >>> fm.sketch(X).sum
    array([1., 0., 0., 1., 0., 1., 0., 1.])
    """

    kind = "hist"

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, lower, upper, n_bins=100):
        lo = np.array(lower, dtype=np.float64).reshape(-1)
        hi = np.array(upper, dtype=np.float64).reshape(-1)
        if lo.shape != hi.shape or lo.size < 1:
            raise ValueError(f"lower and upper must be two 1-D arrays of one length d >= 1, got shapes "
                             f"{np.shape(lower)} and {np.shape(upper)}")
        if not (np.isfinite(lo).all() and np.isfinite(hi).all()) or not (hi > lo).all():
            raise ValueError("lower and upper must be finite with upper > lower in every coordinate")
        self.n_bins = _check_one_hot_size(n_bins, "n_bins", lo.size, f"for the counts of {lo.size} attributes")
        self.lower, self.upper = lo, hi
        self.dither = None
        self.kernel_dither = None
        self._scale = self.n_bins / (hi - lo)

    @classmethod
    def from_box(cls, lower, upper, *, n_bins=100, random_state=None):
        return cls(lower, upper, n_bins)

    @property
    def d(self):
        return self.lower.size

    @property
    def m(self):
        return self.d * self.n_bins

    @property
    def block_sizes(self):
        return np.full(self.d, self.n_bins, np.int64)

    def edges(self, j):
        """The n_bins + 1 bin edges of attribute j."""
        return np.linspace(self.lower[j], self.upper[j], self.n_bins + 1)

    def _indices(self, X, out):
        _core.hist_indices(X, self.lower, self._scale, self.upper, self.n_bins, out)

    def _accumulate(self, X, counts):
        return _core.hist_accumulate(X, self.lower, self._scale, self.upper, self.n_bins, counts)

    def sums(self, accumulators):
        k = int(accumulators[1][0])
        if k:
            warnings.warn(f"{k} record(s) had a coordinate outside the histogram box [lower, upper] and were counted "
                          "in the edge bin of that side; pass a public box that holds the data", RuntimeWarning,
                          stacklevel=4)
        return super().sums(accumulators)

    def get_state(self):
        return {"kind": self.kind, "n_bins": self.n_bins}, {"lower": self.lower, "upper": self.upper}

    @classmethod
    def _from_state(cls, meta, arrays):
        return cls(arrays["lower"], arrays["upper"], meta["n_bins"])

    def __repr__(self):
        return f"FeatureMap(kind='hist', d={self.d}, n_bins={self.n_bins})"


def _check_one_hot_size(value, name, other, what, extra=0):
    """The size `name` of a one-hot map of m = value * other features: int32 positions in
    the core (m <= 2^31) and float64 counts (accumulated, then read as the sketch's sum;
    `extra` bytes more per unit of value)."""
    return check_size(value, name, maximum=min(MAX_INT32, max(1, (MAX_INT32 + 1) // other)),
                      why=f" (the {other} x {name} features are int32 positions in the core)",
                      nbytes=lambda v: v * (other * 2 * 8 + extra), what=what)


#: The most cells a GridMap holds (n_bins ** d): its sketch is one float64 count per cell.
MAX_GRID_CELLS = 1 << 24


@FEATURE_MAPS.register("grid")
class GridMap(OneHotMap):
    """GRID: the joint histogram of the records on a uniform grid of the public box
    [lower, upper], `n_bins` equal-width bins per coordinate, n_bins ** p cells in one
    one-hot block (m = n_bins ** p; cell index sum_j b_j n_bins^(p-1-j), b_j the bin of
    coordinate j, row-major as numpy's ravel_multi_index). The sketch is the count of
    every cell: the synopsis of the grid methods of private clustering (Su, Cao, Li,
    Bertino & Jin, "Differentially private k-means clustering", CODASPY 2016; Qardaji,
    Yang & Li, "Differentially private grids for geospatial data", ICDE 2013), useful in
    low dimension only (n_bins ** p grows fast; at most MAX_GRID_CELLS cells).

    With a `projection` P (d x p, orthonormal columns) and a `centre` c (d,), records x
    in R^d are counted at z = P^T (x - c), and [lower, upper] is the box of z (p numbers
    each): the grid of a public p-dimensional projection of the records (private k-means
    in high dimension projects on private principal directions). ``lift(Z)`` maps points
    of the grid's space back to c + P z. Without one, p = d and z = x.

    One block: adding or removing a record moves one count by one (L1 = L2 = 1), replacing
    one moves two (L1 = 2, L2 = sqrt 2), whatever the data and the projection (OneHotMap).
    Values outside the box go to the edge bin of their side and are counted in a warning,
    as for 'hist'.

    ``cell_centers()`` gives the centre of every cell (in the grid's space) in the
    sketch's order.

    Parameters
    ----------
    lower, upper : float or array_like of shape (p,)
        The public box of the grid's space, finite with upper > lower.
    n_bins : int, default 16
        Equal-width bins per coordinate; n_bins ** p is at most MAX_GRID_CELLS.
    projection : array_like of shape (d, p), optional
        Orthonormal columns P: records are counted at P^T (x - centre). Given with `centre`.
    centre : array_like of shape (d,), optional
        The centre c of the projection. Given with `projection`.

    Raises
    ------
    ValueError
        For a box that is not finite with upper > lower, `n_bins` not a positive integer
        or a grid of more than MAX_GRID_CELLS cells (or more memory than allowed), one of
        `projection` and `centre` without the other, a projection that is not a finite
        (d, p) array with orthonormal columns and d >= p, or a centre of the wrong length.
    TypeError
        For `n_bins` that is not an integer.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import GridMap
    >>> grid = GridMap([0.0, 0.0], [1.0, 1.0], n_bins=4)
    >>> grid.m, grid.sketch(np.array([[0.1, 0.1], [0.9, 0.9], [0.95, 0.8]])).sum.tolist()[-1]
    (16, 2.0)
    """

    kind = "grid"
    one_hot_split = False  # one block, decoded by k-means: the NSR rule of budget_split

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, lower, upper, n_bins=16, *, projection=None, centre=None):
        lo, hi = _box_arrays(lower, upper)
        self.n_bins = check_int(n_bins, "n_bins")
        cells = self.n_bins ** lo.size
        if cells > MAX_GRID_CELLS:
            raise ValueError(f"n_bins = {self.n_bins}: a grid of n_bins ** p = {self.n_bins} ** {lo.size} cells is "
                             f"more than MAX_GRID_CELLS = {MAX_GRID_CELLS}: use fewer bins, or per-attribute "
                             "histograms (kind 'hist')")
        # the counts (accumulated, then read as the sketch's sum)
        check_size(self.n_bins, "n_bins", nbytes=cells * 16, what=f"for the counts of n_bins ** {lo.size} cells")
        self.projection = self.centre = None
        if (projection is None) != (centre is None):
            raise ValueError("projection and centre go together: give both or neither")
        if projection is not None:
            P = np.array(projection, dtype=np.float64)
            c = np.array(centre, dtype=np.float64).reshape(-1)
            if P.ndim != 2 or P.shape[1] != lo.size or P.shape[0] < lo.size or not np.isfinite(P).all():
                raise ValueError(f"projection must be a finite (d, p) array with p = {lo.size} (the box's length) "
                                 f"and d >= p, got shape {P.shape}")
            if not np.allclose(P.T @ P, np.eye(lo.size), rtol=0, atol=1e-9):
                raise ValueError("projection must have orthonormal columns (P^T P = I)")
            if c.shape != (P.shape[0],) or not np.isfinite(c).all():
                raise ValueError(f"centre must be {P.shape[0]} finite numbers, got shape {c.shape}")
            self.projection, self.centre = np.ascontiguousarray(P), c
        self.lower, self.upper = lo, hi
        self.dither = None
        self.kernel_dither = None
        self._scale = self.n_bins / (hi - lo)
        self._place = self.n_bins ** np.arange(lo.size - 1, -1, -1, dtype=np.int64)  # row-major strides

    @classmethod
    def from_box(cls, lower, upper, *, n_bins=16, random_state=None):
        return cls(lower, upper, n_bins)

    @property
    def d(self):
        return self.lower.size if self.projection is None else self.projection.shape[0]

    @property
    def grid_dim(self):
        """p, the dimension of the grid (d without a projection)."""
        return self.lower.size

    @property
    def m(self):
        return self.n_bins ** self.grid_dim

    @property
    def block_sizes(self):
        return np.array([self.m], np.int64)

    def edges(self, j):
        """The n_bins + 1 bin edges of the grid's coordinate j."""
        return np.linspace(self.lower[j], self.upper[j], self.n_bins + 1)

    def cell_centers(self):
        """The centre of every cell, (m, p) float64 in the grid's space, in the order of
        the sketch's counts (``lift`` maps them to the records' space)."""
        mids = (np.arange(self.n_bins) + 0.5) / self.n_bins
        grids = np.meshgrid(*([mids] * self.grid_dim), indexing="ij")
        unit = np.stack([g.reshape(-1) for g in grids], axis=1)
        return self.lower + unit * (self.upper - self.lower)

    def project(self, X):
        """The records' coordinates on the grid: P^T (x - c) (X itself without a projection)."""
        X = np.asarray(X, dtype=np.float64)
        if self.projection is None:
            return X
        return np.ascontiguousarray((X - self.centre) @ self.projection)

    def lift(self, Z):
        """Points of the grid's space in the records' space: c + P z (Z itself without a
        projection)."""
        Z = np.asarray(Z, dtype=np.float64)
        return Z if self.projection is None else self.centre + Z @ self.projection.T

    def _cells(self, Z):
        bins = np.empty(Z.shape, np.int32)  # per coordinate: j * n_bins + b (the HIST layout)
        _core.hist_indices(Z, self.lower, self._scale, self.upper, self.n_bins, bins)
        bins -= (np.arange(self.grid_dim, dtype=np.int32) * self.n_bins)[None, :]
        return bins @ self._place

    def _indices(self, X, out):
        out[:, 0] = self._cells(self.project(X))

    def _accumulate(self, X, counts):
        Z = self.project(X)
        counts += np.bincount(self._cells(Z), minlength=self.m)
        return int(np.count_nonzero(((Z < self.lower) | (Z > self.upper)).any(axis=1)))

    def sums(self, accumulators):
        k = int(accumulators[1][0])
        if k:
            warnings.warn(f"{k} record(s) had a coordinate outside the grid's box [lower, upper] and were counted "
                          "in the edge cell of that side; pass a public box that holds the data", RuntimeWarning,
                          stacklevel=4)
        return super().sums(accumulators)

    def get_state(self):
        arrays = {"lower": self.lower, "upper": self.upper}
        if self.projection is not None:
            arrays.update(projection=self.projection, centre=self.centre)
        return {"kind": self.kind, "n_bins": self.n_bins}, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        return cls(arrays["lower"], arrays["upper"], meta["n_bins"], projection=arrays.get("projection"),
                   centre=arrays.get("centre"))

    def __repr__(self):
        if self.projection is None:
            return f"FeatureMap(kind='grid', d={self.d}, n_bins={self.n_bins})"
        return f"FeatureMap(kind='grid', d={self.d}, projected to p={self.grid_dim}, n_bins={self.n_bins})"


#: The most cells a MarginalMap holds (the sum of its tables' sizes).
MAX_MARGINAL_CELLS = 1 << 26


@FEATURE_MAPS.register("marginals")
class MarginalMap(OneHotMap):
    """MARGINALS: the two-way marginal histograms of the records on the public box [lower,
    upper]: for every chosen pair of attributes (i, j), the joint histogram of (x_i, x_j),
    one one-hot block per pair (cell index b_i n_j + b_j within the block, n_j the bins of
    attribute j; the blocks in the order of `pairs`). Unlike 'hist' (sums of
    one-dimensional functions), these features see the dependence between the two
    attributes of every pair, which counting queries over two attributes need. Releasing
    marginal tables is the synopsis of PriView (Qardaji, Yang & Li, "PriView: practical
    differentially private release of marginal contingency tables", SIGMOD 2014);
    pysketch.m2m.MarginalSynopsis builds a private release on it.

    The bins of attribute j are `n_bins` equal-width bins of [lower_j, upper_j], or the
    given `edges[j]` (increasing, from lower_j to upper_j: public, or chosen privately
    beforehand). Bin k is [e_k, e_k+1), the last one closed; values outside the box go to
    the edge bin of their side and are counted in a warning, as for 'hist'.

    P blocks (OneHotMap): adding or removing a record moves P counts by one (L1 = P,
    L2 = sqrt P), replacing one moves at most 2P (L1 = 2P, L2 = sqrt(2P)), whatever the
    data and the bins.

    ``MarginalMap(lower, upper, n_bins=16, pairs=None, edges=None, order=2)``: `pairs` is a
    list of (i, j) with i < j (default: all d (d - 1) / 2 pairs, in the order (0, 1), (0,
    2), ..., (d - 2, d - 1)). With order=1 (or d = 1) the tables are the one-way histograms
    of every attribute (d blocks, L1 = d as 'hist', on any bins). ``edges(j)`` gives the
    bins of attribute j, ``tables(v)`` a vector of m entries as its tables.

    Parameters
    ----------
    lower, upper : array_like of float, shape (d,)
        The public box: finite, upper > lower in every coordinate.
    n_bins : int, default 16
        Equal-width bins per attribute (ignored when `edges` is given).
    pairs : list of (int, int), optional
        The pairs (i, j), i < j, of the two-way tables (default: all pairs); only with
        order=2.
    edges : list of d arrays, optional
        The bin edges of every attribute, increasing from lower_j to upper_j.
    order : {1, 2}, default 2
        2: two-way tables of the pairs; 1: one-way histograms of every attribute.

    Raises
    ------
    ValueError
        For a box that is not finite with upper > lower, an `order` other than 1 and 2,
        `pairs` with order=1, pairs that repeat or are not (i, j) with 0 <= i < j < d,
        edges that are not d increasing arrays from lower to upper, or more cells than
        MAX_MARGINAL_CELLS (and as `OneHotMap`); from `tables`, for a vector of another
        length.
    TypeError
        If `n_bins` is not an integer.

    Warns
    -----
    RuntimeWarning
        When the sums are read, if records had a coordinate outside the box.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import MarginalMap
    >>> fm = MarginalMap([0, 0, 0], [1, 1, 1], n_bins=2)  # 3 pairs of 2 x 2 cells
    >>> X = np.array([[0.2, 0.7, 0.1], [0.6, 0.9, 0.4]])
    >>> fm.m, fm.pairs.tolist()
    (12, [[0, 1], [0, 2], [1, 2]])
    >>> fm.tables(fm.sketch(X).sum)[0]  # the joint counts of attributes 0 and 1
    array([[0., 1.],
           [0., 1.]])
    """

    kind = "marginals"

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, lower, upper, n_bins=16, pairs=None, edges=None, order=2):
        lo, hi = _box_arrays(lower, upper)
        d = lo.size
        if order not in (1, 2) or isinstance(order, bool):
            raise ValueError(f"order must be 1 (one-way histograms) or 2 (two-way tables), got {order!r}")
        if order == 1 and pairs is not None:
            raise ValueError("pairs are the two-way tables: give them with order=2 only")
        self.order = 1 if d == 1 else int(order)
        if edges is None:
            self.n_bins = check_int(n_bins, "n_bins")
            if self.n_bins > MAX_MARGINAL_CELLS:
                raise ValueError(f"n_bins must be at most MAX_MARGINAL_CELLS = {MAX_MARGINAL_CELLS}, got {n_bins}")
            self._edges = [np.linspace(lo[j], hi[j], self.n_bins + 1) for j in range(d)]
        else:
            if not isinstance(edges, (list, tuple)) or len(edges) != d:
                raise ValueError(f"edges must be a list of d = {d} arrays (the bin edges of every attribute), got "
                                 f"{type(edges).__name__}")
            self._edges = []
            for j, e in enumerate(edges):
                e = np.array(e, dtype=np.float64).reshape(-1)
                if e.size < 2 or not np.isfinite(e).all() or not (np.diff(e) > 0).all() or e[0] != lo[j] \
                        or e[-1] != hi[j]:
                    raise ValueError(f"edges[{j}] must be at least 2 increasing finite numbers from lower[{j}] = "
                                     f"{lo[j]:g} to upper[{j}] = {hi[j]:g}, got {e!r}")
                self._edges.append(e)
            self.n_bins = None
        self.bins = np.array([e.size - 1 for e in self._edges], dtype=np.int64)
        if self.order == 1:
            table = []
        elif pairs is None:
            table = [(i, j) for i in range(d) for j in range(i + 1, d)]
        else:
            try:
                table = [tuple(int(v) for v in p) for p in pairs]
            except (TypeError, ValueError):
                raise ValueError(f"pairs must be a list of (i, j) attribute pairs, got {pairs!r}") from None
            bad = [p for p in table if len(p) != 2 or not 0 <= p[0] < p[1] < d]
            if bad or not table:
                raise ValueError(f"pairs must be a non-empty list of (i, j) with 0 <= i < j < d = {d}, got "
                                 f"{bad or pairs!r}")
            if len(set(table)) != len(table):
                raise ValueError(f"pairs must not repeat a pair, got {pairs!r}")
        self.pairs = np.array(table, dtype=np.int64).reshape(-1, 2)
        if len(table):
            self._sizes = self.bins[self.pairs[:, 0]] * self.bins[self.pairs[:, 1]]
        else:
            self._sizes = self.bins.copy()
        cells = int(self._sizes.sum())
        if cells > MAX_MARGINAL_CELLS:
            raise ValueError(f"the bins and the {len(table)} pairs make {cells} cells, more than MAX_MARGINAL_CELLS "
                             f"= {MAX_MARGINAL_CELLS}: use fewer bins or fewer pairs")
        check_size(cells, "the number of cells", nbytes=cells * 16, what=f"for the counts of {cells} cells")
        self.lower, self.upper = lo, hi
        self.dither = None
        self.kernel_dither = None

    @classmethod
    def from_box(cls, lower, upper, *, n_bins=16, pairs=None, edges=None, order=2, random_state=None):
        return cls(lower, upper, n_bins, pairs, edges, order)

    @property
    def d(self):
        return self.lower.size

    @property
    def n_pairs(self):
        return len(self.pairs)

    @property
    def m(self):
        return int(self._sizes.sum())

    @property
    def block_sizes(self):
        return self._sizes.copy()

    def edges(self, j):
        """The bin edges of attribute j."""
        return self._edges[j].copy()

    def table_attributes(self):
        """The attributes of every table: (P, 2) pairs, or (d, 1) for one-way tables."""
        return self.pairs.copy() if self.n_pairs else np.arange(self.d, dtype=np.int64)[:, None]

    def tables(self, vector):
        """A vector of the map's m entries (a sketch's sum, counts or fractions) as its
        tables: a list of (n_i, n_j) arrays (views), entry [a, b] the cell of bins (a, b)
        of the pair (i, j) (one-way tables: the (n_j,) histogram of every attribute)."""
        v = np.asarray(vector)
        if v.shape != (self.m,):
            raise ValueError(f"vector must have the map's m = {self.m} entries, got shape {v.shape}")
        if not self.n_pairs:
            return [v[off:off + size] for off, size in zip(self.block_offsets, self._sizes)]
        out = []
        for (i, j), off, size in zip(self.pairs, self.block_offsets, self._sizes):
            out.append(v[off:off + size].reshape(self.bins[i], self.bins[j]))
        return out

    def bin_indices(self, X):
        """Each coordinate's bin, (n, d) int64 (values outside the box in the edge bins)."""
        X = np.asarray(X, dtype=np.float64)
        out = np.empty(X.shape, np.int64)
        for j, e in enumerate(self._edges):
            out[:, j] = np.searchsorted(e[1:-1], X[:, j], side="right")
        return out

    def _indices(self, X, out):
        bins = self.bin_indices(X)
        if not self.n_pairs:
            out[:] = bins + self.block_offsets[None, :]
            return
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        out[:] = bins[:, i] * self.bins[j][None, :] + bins[:, j] + self.block_offsets[None, :]

    def _accumulate(self, X, counts):
        idx = np.empty((X.shape[0], self.n_blocks), np.int32)
        self._indices(X, idx)
        counts += np.bincount(idx.reshape(-1), minlength=self.m)
        return int(np.count_nonzero(((X < self.lower) | (X > self.upper)).any(axis=1)))

    def sums(self, accumulators):
        k = int(accumulators[1][0])
        if k:
            warnings.warn(f"{k} record(s) had a coordinate outside the marginals' box [lower, upper] and were "
                          "counted in the edge bin of that side; pass a public box that holds the data",
                          RuntimeWarning, stacklevel=4)
        return super().sums(accumulators)

    def get_state(self):
        arrays = {"lower": self.lower, "upper": self.upper, "pairs": self.pairs}
        if self.n_bins is None:
            arrays.update({f"edges{j}": e for j, e in enumerate(self._edges)})
        return {"kind": self.kind, "n_bins": self.n_bins, "order": self.order}, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        pairs = arrays["pairs"]
        d = np.asarray(arrays["lower"]).size
        edges = None if meta["n_bins"] is not None else [arrays[f"edges{j}"] for j in range(d)]
        order = meta.get("order", 2)
        return cls(arrays["lower"], arrays["upper"], meta["n_bins"] or 16, pairs if order == 2 else None, edges, order)

    def __repr__(self):
        bins = self.n_bins if self.n_bins is not None else "edges"
        tables = f"pairs={self.n_pairs}" if self.order == 2 else "order=1"
        return f"FeatureMap(kind='marginals', d={self.d}, n_bins={bins}, {tables})"


@FEATURE_MAPS.register("race")
class RaceMap(OneHotMap):
    """RACE: R independent p-stable (Gaussian) LSH functions, each into W buckets, one-hot
    and concatenated (m = R W; Houssiau et al. 2022, Sec. 2.1). Hash j of x is
    floor(omega_j^T x + b_j) mod W, omega_j the j-th column of the operator (Gaussian
    frequencies of scale 1 / width give the L2 hash of Datar et al. with bucket width
    `width`) and b_j ~ U[0, 1) the public offsets; the modulo folds the unbounded integer
    hash into W buckets (a library choice: [P] does not state its family or folding).

    ``RaceMap(operator, n_buckets=80, offset=None, random_state=None)``: R = operator.m
    hashes; `offset` drawn from random_state when not given. The products and the hashing
    run in the C++ core with Omega as a dense (d, R) float64 matrix.

    Parameters
    ----------
    operator : FrequencyOperator
        Omega (d x R): the hashes' frequencies, one column per hash.
    kind, dither
        As for `FeatureMap` (a RACE map takes no dither).
    random_state : None, int or numpy Generator
        Draws the offsets when `offset` is not given.
    n_buckets : int, default 80
        W, the buckets of every hash (m = R W, at most 2^31).
    offset : array_like of shape (R,), optional
        The public offsets b_j in [0, 1).

    Raises
    ------
    ValueError
        If `offset` is not R finite numbers, or `n_buckets` is below 1 or too large (and
        as `OneHotMap`); from `from_box`, for a box or `width` that is not valid.
    TypeError
        If `operator` is not a FrequencyOperator or `n_buckets` is not an integer.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import make_box_map
    >>> fm = make_box_map("race", [0, 0], [1, 1], n_hashes=10, n_buckets=8, random_state=0)
    >>> fm, fm.m, fm.sensitivity(1)
    (FeatureMap(kind='race', d=2, n_hashes=10, n_buckets=8), 80, 10.0)
    >>> fm.indices(np.array([[0.1, 0.9], [1.0, 0.3]])).shape  # one bucket per hash
    (2, 10)
    """

    kind = "race"

    def __init__(self, operator, kind=None, dither=None, random_state=None, *, n_buckets=80, offset=None):
        super().__init__(operator, kind, dither, random_state)
        self.n_buckets = _check_one_hot_size(n_buckets, "n_buckets", operator.m,
                                             f"for the counts of {operator.m} hashes")
        if offset is None:
            offset = as_generator(random_state).uniform(0.0, 1.0, operator.m)
        b = np.array(offset, dtype=np.float64).reshape(-1)
        if b.shape != (operator.m,) or not np.isfinite(b).all():
            raise ValueError(f"offset must be {operator.m} finite numbers (one per hash), got shape {np.shape(offset)}")
        self.offset = b
        self._proj = np.ascontiguousarray(operator.to_dense(), dtype=np.float64)

    @classmethod
    def from_box(cls, lower, upper, *, n_hashes=80, n_buckets=80, width=0.1, random_state=None):
        """RACE for records in the box: each coordinate measured in units of the box's
        side, so that `width` (a number or one per coordinate) is the bucket width in those
        units."""
        lo, hi = _box_arrays(lower, upper)
        width = _scales(width, lo.size, "width")
        W = _check_one_hot_size(n_buckets, "n_buckets", 1, "for the counts of one hash")
        # the hashes' Gaussian frequencies: drawn, scaled, and the dense copy the core reads
        R = _check_one_hot_size(n_hashes, "n_hashes", W, f"for the frequencies and counts of n_buckets = {W} "
                                "buckets per hash", extra=lo.size * 4 * 8)
        rng = as_generator(random_state)
        omega = rng.standard_normal((lo.size, R)) / (width * (hi - lo))[:, None]
        return cls(DenseOperator(omega), n_buckets=W, random_state=rng)

    @property
    def input_dtype(self):
        return np.dtype(np.float64)

    @property
    def n_hashes(self):
        return self.operator.m

    @property
    def m(self):
        return self.operator.m * self.n_buckets

    @property
    def block_sizes(self):
        return np.full(self.operator.m, self.n_buckets, np.int64)

    def _indices(self, X, out):
        _core.race_indices(X, self._proj, self.offset, self.n_buckets, out)

    def _accumulate(self, X, counts):
        _core.race_accumulate(X, self._proj, self.offset, self.n_buckets, counts)
        return 0

    def get_state(self):
        meta, arrays = super().get_state()
        meta["n_buckets"] = self.n_buckets
        arrays["offset"] = self.offset
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        op_arrays = {k[len("operator_"):]: v for k, v in arrays.items() if k.startswith("operator_")}
        operator = FrequencyOperator.from_state(meta["operator"], op_arrays)
        return cls(operator, n_buckets=meta["n_buckets"], offset=np.asarray(arrays["offset"]))

    def __repr__(self):
        return f"FeatureMap(kind='race', d={self.d}, n_hashes={self.n_hashes}, n_buckets={self.n_buckets})"


# ---------------------------------------------------------------------------------------------
# Designs: the features of many rows as a linear operator, for least squares over them


class DenseDesign:
    """P = the real features (`FeatureMap.as_real`) of the rows of X, computed `chunk_rows`
    rows at a time: P^T P by BLAS rank-k updates (SYRK), P V and P^T F chunk by chunk, so
    memory is O(chunk_rows real_dim + real_dim^2), never O(n real_dim).

    Parameters
    ----------
    feature_map : FeatureMap
        The map.
    X : array_like of shape (n, d)
        The rows, finite.
    chunk_rows : int, optional
        Rows per chunk (default: about 2**20 / real_dim).

    Raises
    ------
    ValueError
        If X does not have d columns, is empty or holds NaN or infinity.
    TypeError
        If X is sparse or not numeric.

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> fm = pysketch.make_feature_map(2, 8, "real", random_state=0)
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> P = fm.design(X)
    >>> F = fm.transform(X)
    >>> P.shape, np.allclose(P.gram(), F.T @ F), np.allclose(P.rmatvec(np.ones(50)), F.sum(axis=0))
    ((50, 16), True, True)
    """

    def __init__(self, feature_map, X, chunk_rows=None):
        X = check_array(X, "X", np.float64)
        if X.shape[1] != feature_map.d:
            raise ValueError(f"X must have {feature_map.d} columns, got shape {X.shape}")
        self.feature_map, self.X = feature_map, X
        p = feature_map.real_dim
        self.shape = (X.shape[0], p)
        self.chunk_rows = chunk_rows or max(1, (1 << 20) // p)

    def _chunks(self):
        fm = self.feature_map
        for start in range(0, self.shape[0], self.chunk_rows):
            stop = min(start + self.chunk_rows, self.shape[0])
            yield start, stop, np.ascontiguousarray(fm.as_real(fm.transform(self.X[start:stop])), np.float64)

    def gram(self):
        """P^T P, (p, p) float64."""
        from scipy.linalg import blas

        p = self.shape[1]
        G = np.zeros((p, p), order="F")
        for _, _, P in self._chunks():
            # P^T is a Fortran (p, rows) view of the C-ordered chunk: SYRK fills G's upper triangle
            G = blas.dsyrk(1.0, P.T, c=G, beta=1.0, trans=0, lower=0, overwrite_c=1)
        upper = np.triu(G)
        return np.ascontiguousarray(upper + np.triu(G, 1).T)

    def matvec(self, V):
        """P V for V of shape (p,) or (p, q)."""
        V = np.asarray(V, dtype=np.float64)
        out = np.empty((self.shape[0],) + V.shape[1:])
        for start, stop, P in self._chunks():
            out[start:stop] = P @ V
        return out

    def rmatvec(self, F):
        """P^T F for F of shape (n,) or (n, q)."""
        F = np.asarray(F, dtype=np.float64)
        out = np.zeros((self.shape[1],) + F.shape[1:])
        for start, stop, P in self._chunks():
            out += P.T @ F[start:stop]
        return out


class OneHotDesign:
    """P = the 0/1 features of rows given by their hot positions idx (n, k): P^T P by
    co-occurrence counting in the C++ core (block pair by block pair, never a dense (n, m)
    array), P V as a gather-sum over each row's k positions, P^T F through a sparse
    matrix.

    Parameters
    ----------
    idx : array_like of int, shape (n, k)
        The hot position of every row in each of the k blocks (`OneHotMap.indices`).
    offsets : array_like of int, shape (k,)
        The first position of every block.
    sizes : array_like of int, shape (k,)
        The size of every block.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import HistogramMap
    >>> fm = HistogramMap([0.0, 0.0], [1.0, 1.0], n_bins=4)
    >>> P = fm.design(np.array([[0.1, 0.9], [1.0, 0.3]]))
    >>> type(P).__name__, P.shape, P.matvec(np.arange(8.0))  # each row: the sum of its 2 entries
    ('OneHotDesign', (2, 8), array([7., 8.]))
    >>> np.diag(P.gram())  # the counts of every position
    array([1., 0., 0., 1., 0., 1., 0., 1.])
    """

    def __init__(self, idx, offsets, sizes):
        self.idx = np.ascontiguousarray(idx, dtype=np.int32)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.sizes = np.ascontiguousarray(sizes, dtype=np.int64)
        self.shape = (self.idx.shape[0], int(self.sizes.sum()))
        self._sparse = None

    def gram(self):
        m = self.shape[1]
        G = np.empty((m, m))
        _core.onehot_gram(self.idx, self.offsets, self.sizes, G)
        return G

    def matvec(self, V):
        V = np.asarray(V, dtype=np.float64)
        out = V[self.idx[:, 0]].copy()
        for j in range(1, self.idx.shape[1]):
            out += V[self.idx[:, j]]
        return out

    def rmatvec(self, F):
        if self._sparse is None:
            from scipy import sparse

            n, k = self.idx.shape
            self._sparse = sparse.csr_matrix(
                (np.ones(n * k), self.idx.reshape(-1).astype(np.int64), np.arange(0, n * k + 1, k)),
                shape=self.shape).T.tocsr()
        return self._sparse @ np.asarray(F, dtype=np.float64)


def _box_arrays(lower, upper):
    lo = np.array(lower, dtype=np.float64).reshape(-1)
    hi = np.array(upper, dtype=np.float64).reshape(-1)
    if lo.shape != hi.shape or lo.size < 1:
        raise ValueError(f"lower and upper must be two 1-D arrays of one length d >= 1, got shapes "
                         f"{np.shape(lower)} and {np.shape(upper)}")
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()) or not (hi > lo).all():
        raise ValueError("lower and upper must be finite with upper > lower in every coordinate")
    return lo, hi


def make_box_map(kind, lower, upper, *, random_state=None, **params):
    """A feature map suited to records in the public box [lower, upper] (the M2M sketches).

    - 'real' (RFF, the default of [P]: ``n_frequencies=100``, i.e. m = 200 real features,
      ``sigma=1``), 'complex', 'quantized': Gaussian frequencies of kernel scale `sigma`
      (a number or one per coordinate) in units of the box's side;
    - 'race': ``n_hashes=80``, ``n_buckets=80``, ``width=0.1`` in units of the box's side;
    - 'hist': ``n_bins=100`` equal-width bins per attribute on the box;
    - 'grid': ``n_bins=16`` per coordinate; 'marginals': ``n_bins=16``, ``pairs``,
      ``edges``, ``order`` (see `MarginalMap`).

    Parameters
    ----------
    kind : str
        One of `box_map_kinds`.
    lower, upper : array_like of float, shape (d,)
        The public box: finite, upper > lower in every coordinate.
    random_state : None, int or numpy Generator
        Draws the frequencies (or hashes); unused by the histograms.
    **params
        The kind's options above.

    Returns
    -------
    FeatureMap

    Raises
    ------
    ValueError
        If `kind` is not registered or has no box form, or the box or an option is not
        valid.
    TypeError
        For an option the kind does not take, or a size that is not an integer.

    Examples
    --------
    >>> import pysketch.features as features
    >>> features.make_box_map("real", [0, 0], [10, 10], n_frequencies=50, random_state=0).output_dim
    100
    >>> features.make_box_map("hist", [0, 0], [1, 1], n_bins=10).m
    20
    """
    if kind not in FEATURE_MAPS:
        raise ValueError(f"kind must be one of {FEATURE_MAPS.names()}, got {kind!r}")
    cls = FEATURE_MAPS.get(kind)
    from_box = getattr(cls, "from_box", None)
    if from_box is None:
        raise ValueError(f"{kind} features have no box form; box maps are {box_map_kinds()}")
    return from_box(lower, upper, random_state=random_state, **params)


def box_map_kinds():
    """The registered kinds that `make_box_map` can make.

    Returns
    -------
    tuple of str

    Examples
    --------
    >>> from pysketch.features import box_map_kinds
    >>> {"real", "race", "hist"} <= set(box_map_kinds())
    True
    """
    return tuple(k for k in FEATURE_MAPS.names() if getattr(FEATURE_MAPS.get(k), "from_box", None) is not None)


def _scales(value, d, name):
    """A positive kernel scale per coordinate from a number or a (d,) array."""
    v = np.array(value, dtype=np.float64)
    if v.ndim == 0:
        v = np.full(d, float(v))
    if v.shape != (d,) or not (np.isfinite(v).all() and (v > 0).all()):
        raise ValueError(f"{name} must be a positive finite number or {d} of them (one per coordinate), got {value!r}")
    return v


def _fourier_from_box(cls, lower, upper, *, n_frequencies=100, sigma=1.0, random_state=None):
    lo, hi = _box_arrays(lower, upper)
    sig = _scales(sigma, lo.size, "sigma")
    # the draw of the (d, m) frequencies, their scaled copy, the radii, dither and sums
    m = check_size(n_frequencies, "n_frequencies", nbytes=lambda v: v * (lo.size * 32 + 96),
                   what=f"for a ({lo.size}, n_frequencies) matrix of frequencies and the sums")
    rng = as_generator(random_state)
    # Gaussian frequencies of kernel scale sigma_j in units of the box's side j
    omega = GaussianLaw(1.0).sample(lo.size, m, rng)
    omega = omega / (sig * (hi - lo))[:, None]
    return cls(DenseOperator(omega), random_state=rng)


FourierMap.from_box = classmethod(_fourier_from_box)


def quadratic_spectral_bound(omega):
    """A certified upper bound on ||Omega||_2^2 of an explicit (d, m) Omega (see
    pysketch.operators.spectral_norm_sq_bound).

    Parameters
    ----------
    omega : array_like of shape (d, m)
        The frequencies.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import quadratic_spectral_bound
    >>> bound = quadratic_spectral_bound(np.hstack([np.eye(3), np.eye(3)]))  # ||Omega||_2^2 = 2
    >>> bool(2.0 <= bound < 2.0 + 1e-12)
    True
    """
    return spectral_norm_sq_bound(omega)


def quadratic_s4_bound(omega):
    """An upper bound on S4(Omega) = (sup_{||x||<=1} sum_j (omega_j^T x)^4)^(1/2) of an
    explicit (d, m) Omega by Riesz-Thorin (thesis eq. (8.9)): S4^2 <= ||Omega||_2^2
    max_j ||omega_j||_2^2.

    Parameters
    ----------
    omega : array_like of shape (d, m)
        The frequencies.

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.features import quadratic_s4_bound
    >>> bound = quadratic_s4_bound(np.hstack([np.eye(3), np.eye(3)]))  # sqrt(2 * 1)
    >>> bool(2 ** 0.5 <= bound < 2 ** 0.5 + 1e-12)
    True
    """
    return math.sqrt(spectral_norm_sq_bound(omega) * column_norm_sq_bound(omega))


#: The registered kinds at import (maps registered later are accepted as well).
FEATURE_KINDS = FEATURE_MAPS.names()


def make_feature_map(
    d,
    m,
    kind="complex",
    *,
    operator="auto",
    law=None,
    sigma=1.0,
    dither=None,
    random_state=None,
    dtype=np.float64,
    **options,
):
    """Draw a feature map: the operator (dense or structured), then the dither.

    Parameters
    ----------
    d, m : int
        Input dimension and number of frequencies.
    kind : {'complex', 'real', 'quantized', 'quadratic'}
    operator : {'auto', 'dense', 'r3', 'gr2', 'fastfood'}
    law : FrequencyLaw, optional
        Default: GaussianLaw(sigma) for the Fourier maps; for 'quadratic' the caller must
        pass QuadraticGaussianLaw() or OrthonormalBasesLaw() (or another law).
    sigma : float
        Kernel scale of the default Gaussian law.
    dither, random_state, dtype
        See FeatureMap and make_operator. One generator draws the operator, then the
        dither.
    **options
        Options of the map's class (for 'quadratic': ``data_norm``, ``centre``).

    Returns
    -------
    FeatureMap
        Of the class registered for `kind`.

    Raises
    ------
    ValueError
        If `kind` is not registered, a map other than the Fourier ones comes without a
        `law`, or an argument of the operator or the map is not valid.
    TypeError
        If `law` is not a FrequencyLaw, or an option is not one of the map's.

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> fm = pysketch.make_feature_map(3, 64, "complex", sigma=2.0, random_state=0)
    >>> fm.kind, fm.m, fm.operator.law, fm.sketch(np.zeros((10, 3))).count
    ('complex', 64, GaussianLaw(sigma=2.0), 10)
    >>> law = pysketch.QuadraticGaussianLaw()
    >>> pysketch.make_feature_map(3, 64, "quadratic", law=law, data_norm=1.0, random_state=0).kind
    'quadratic'
    """
    if kind not in FEATURE_MAPS:
        raise ValueError(f"kind must be one of {FEATURE_MAPS.names()}, got {kind!r}")
    if law is None:
        if not issubclass(FEATURE_MAPS.get(kind), FourierMap):
            raise ValueError(f"{kind} features need an explicit law (for quadratic: QuadraticGaussianLaw or "
                             "OrthonormalBasesLaw)")
        law = GaussianLaw(sigma)
    elif not isinstance(law, FrequencyLaw):
        raise TypeError(f"law must be a FrequencyLaw, got {type(law).__name__}")
    rng = as_generator(random_state)
    op = make_operator(d, m, kind=operator, law=law, random_state=rng, dtype=dtype)
    return FeatureMap(op, kind=kind, dither=dither, random_state=rng, **options)
