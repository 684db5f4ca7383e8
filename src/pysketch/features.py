"""Feature maps Phi(x) = f(Omega^T x + u) and their sums over datasets (sketches).

Four nonlinearities f (Chatalic's thesis Def. 2.5 and 2.6; notes seed000 sec. 1.2-1.3):

- ``"complex"``: random Fourier features exp(i (omega_j^T x + u_j)), complex, |Phi_j| = 1;
- ``"real"``: the same as 2m reals, [cos(Omega^T x + u); sin(Omega^T x + u)] (the canonical
  isomorphism C^m ~ R^2m: every sensitivity of the complex map carries over);
- ``"quantized"``: 2^-1/2 (sign cos(t) + i sign sin(t)), t = Omega^T x + u, the one-bit
  features of Schellekens & Jacques (2018), which need the uniform dither u on [0, 2 pi)
  (quantization without dither is biased; the dither is stored with the map). Their
  first harmonic is (2 sqrt 2 / pi) exp(i t) (notes seed003 sec. 1.4);
- ``"quadratic"``: (omega_j^T x)^2, real (compressive PCA; no dither).

`FeatureMap.transform(X)` materializes the (n, m) features; `FeatureMap.sketch(X)` returns
the `Sketch` (sum of the features and count) without ever holding more than a block of
features: the C++ core transforms a block of rows, applies f and adds into float64
accumulators, block after block, on all threads (per-thread accumulators, summed at the
end).

`FeatureMap.sketch_subsampled(X, r)` is the feature-subsampled sketch (notes seed000 sec. 4;
Chatalic et al., Def. 20): every record contributes only the features of a random mask h_i
holding r of the m frequencies, only those are computed (pysketch/subsample.hpp), and the sum
is rescaled, (m / r) sum_i Phi(x_i) (.) h_i, so that its expectation is the full sum. The
masks are drawn from their own 128-bit seed (`random_state`, never the operator's seed), per
record position, so a given seed gives the same sketch for any thread count and any split of
the data into batches. They are not returned or stored; the sketch records the scheme, r and
m (`Sketch.subsampling`) for the sensitivities.
"""

import hashlib
import json
import math
import numbers

import numpy as np

from . import _core
from ._random import as_generator
from .frequencies import FrequencyLaw, GaussianLaw
from .operators import FrequencyOperator, StructuredOperator, make_operator

__all__ = ["FeatureMap", "make_feature_map", "FEATURE_KINDS", "SUBSAMPLING_SCHEMES"]

FEATURE_KINDS = ("complex", "real", "quantized", "quadratic")
#: Mask schemes of the subsampled sketch: r distinct frequencies per record uniformly,
#: independent Bernoulli(r / m) trials per frequency, or r / d_p whole blocks of a structured
#: operator.
SUBSAMPLING_SCHEMES = ("uniform", "bernoulli", "blocks")
_SCHEME_CODES = {"uniform": _core.Scheme.uniform, "bernoulli": _core.Scheme.bernoulli, "blocks": _core.Scheme.blocks}
_SKETCH_CODES = {
    "complex": _core.Nonlinearity.cis,
    "real": _core.Nonlinearity.cis,
    "quantized": _core.Nonlinearity.qcis,
    "quadratic": _core.Nonlinearity.square,
}

#: Dense operators with at most this many rows (the dimension d) sketch through fused
#: tiles in C++ (pysketch/dense.hpp: the phases of 16 records x a strip of columns at a
#: time, straight into the nonlinearity); above it through BLAS products of blocks of
#: records, then the nonlinearity. Measured on one thread (float32 complex features, CPU
#: time per feature, best of 3; AVX-512, Zen 4): fused / BLAS 0.59 / 0.68 ns at d = 10,
#: 0.96 / 1.09 at d = 32, 1.53 / 2.24 at d = 64, 2.66 / 3.34 at d = 128, 5.19 / 5.96 at
#: d = 256. Both give the same sums to the last bit here (OpenBLAS also chains one fma
#: per term), but that is not promised: only each path is deterministic.
_FUSED_DENSE_MAX_D = 256
#: First harmonic of the quantized map: t -> rho(t) + i rho(t - pi/2) with rho =
#: 2^-1/2 sign(cos) has Fourier coefficient 2 sqrt(2) / pi at e^{it} (notes seed003 1.4).
QUANTIZED_FIRST_HARMONIC = 2.0 * math.sqrt(2.0) / math.pi


class FeatureMap:
    """Phi(x) = f(Omega^T x + u).

    Parameters
    ----------
    operator : FrequencyOperator
        Omega (d x m).
    kind : {'complex', 'real', 'quantized', 'quadratic'}
    dither : None, 'random' or array of shape (m,)
        The phases u, in [0, 2 pi). 'random' draws them uniformly from `random_state`
        (required for 'quantized', where None means 'random'); not allowed for
        'quadratic'.
    random_state : None, int or numpy Generator
        Used only to draw the dither.
    """

    def __init__(self, operator, kind="complex", dither=None, random_state=None):
        if not isinstance(operator, FrequencyOperator):
            raise TypeError(f"operator must be a FrequencyOperator, got {type(operator).__name__}")
        if kind not in FEATURE_KINDS:
            raise ValueError(f"kind must be one of {FEATURE_KINDS}, got {kind!r}")
        self.operator = operator
        self.kind = kind
        if kind == "quantized" and dither is None:
            dither = "random"
        if kind == "quadratic" and dither is not None:
            raise ValueError("quadratic features take no dither (dither must be None)")
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
        self._dither_c = None if dither is None else np.ascontiguousarray(dither, dtype=operator.dtype)
        self._omega_pair = None  # (Omega, Omega^T) C-contiguous, made on first subsampled sketch

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
        """Length of Phi(x): m (complex, quantized, quadratic) or 2m (real)."""
        return 2 * self.m if self.kind == "real" else self.m

    @property
    def is_complex(self):
        return self.kind in ("complex", "quantized")

    @property
    def sum_dtype(self):
        """dtype of the sum of features: complex128 or float64."""
        return np.dtype(np.complex128) if self.is_complex else np.dtype(np.float64)

    # ------------------------------------------------------------------ features

    def transform(self, X):
        """The features of every row of X: (n, m) complex (complex, quantized), (n, 2m)
        real ([cos; sin]) or (n, m) real (quadratic); one record of shape (d,) gives a 1-D
        result. Complex output is complex64 for a float32 operator, complex128 for float64."""
        single = np.ndim(X) == 1
        T = self.operator.apply(X)
        T = T[None, :] if single else T
        out = self._phases_to_features(T)
        return out[0] if single else out

    def _phases_to_features(self, T):
        if self.kind == "quadratic":
            return np.square(T)
        # The values of the sketch's own kernels: the phases as one row of n * m, so that
        # the "sum over rows" of the accumulation is each value itself (same bits).
        n, m = T.shape
        flat = np.ascontiguousarray(T).reshape(1, n * m)
        u = None if self._dither_c is None else np.tile(self._dither_c, n)
        c = np.zeros(n * m)
        s = np.zeros(n * m)
        _core.accumulate_features(_SKETCH_CODES[self.kind], flat, u, c, s)
        c, s = c.reshape(n, m), s.reshape(n, m)
        if self.kind == "real":
            return np.concatenate([c, s], axis=1).astype(T.dtype)
        out = np.empty((n, m), np.complex64 if T.dtype == np.float32 else np.complex128)
        out.real = c
        out.imag = s
        return out

    def sketch(self, X, *, batch_size=None):
        """The sketch of X: the sum of Phi(x) over its rows, and their count.

        X may be a 2-D array, a memmap (read in batches of `batch_size` rows, so memory
        does not grow with n), or any iterable of 2-D batches.
        """
        from .sketch import SketchAccumulator

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
            independently across records (notes seed000 sec. 4.1, U(H_r)). 'bernoulli': each
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
        from .sketch import SketchAccumulator

        self._subsampling_spec(r, scheme)  # r is required here (None would mean no subsampling)
        acc = SketchAccumulator(
            self, batch_size=batch_size, subsample_r=r, subsample_scheme=scheme, random_state=random_state
        )
        acc.update(X)
        return acc.sketch()

    def _subsampling_spec(self, r, scheme):
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
            op = self.operator
            if not isinstance(op, StructuredOperator):
                raise ValueError(
                    "scheme 'blocks' needs a structured operator (r3, gr2 or fastfood), whose blocks of d_p "
                    f"frequencies are transformed together; this map has a {type(op).__name__}: use "
                    "scheme='uniform' or 'bernoulli'"
                )
            block = op.d_p
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

    # ------------------------------------------------------------------ sums (internal)

    def _accumulate(self, X, acc0, acc1, subsample=None):
        """Add the sums of the features of the rows of X (a validated, C-contiguous array of
        the operator's dtype) into the float64 accumulators (cos/sin, re/im, or acc0 only).

        subsample: None, or (spec, key0, key1, first): the subsampled sums of spec (from
        `_subsampling_spec`) with the masks of the 128-bit key (key0, key1), the rows being
        the records first, first + 1, ... of the stream."""
        if subsample is not None and subsample[0]["r"] < self.m:
            self._accumulate_subsampled(X, acc0, acc1, *subsample)
            return
        op = self.operator
        code = _SKETCH_CODES[self.kind]
        if isinstance(op, StructuredOperator):
            _core.sketch_structured(op._core, code, X, self._dither_c, acc0, acc1)
            return
        if op.d <= _FUSED_DENSE_MAX_D:
            _core.sketch_dense(op.omega, code, X, self._dither_c, acc0, acc1)
            return
        # Larger d: the products through BLAS (numpy's matmul) a block of rows at a time (at
        # most about 8 MiB of phases), each block straight into the nonlinearity and sums.
        rows = max(1, (8 << 20) // (op.m * op.dtype.itemsize))
        P = np.empty((min(rows, X.shape[0]), op.m), op.dtype)
        for start in range(0, X.shape[0], rows):
            chunk = X[start : start + rows]
            Pc = P[: chunk.shape[0]]
            np.matmul(chunk, op.omega, out=Pc)
            _core.accumulate_features(code, Pc, self._dither_c, acc0, acc1)

    def _accumulate_subsampled(self, X, acc0, acc1, spec, key0, key1, first):
        op = self.operator
        code = _SKETCH_CODES[self.kind]
        scheme = _SCHEME_CODES[spec["scheme"]]
        r = spec["r"]
        if isinstance(op, StructuredOperator):
            _core.sketch_structured_subsampled(
                op._core, code, X, self._dither_c, scheme, r, key0, key1, first, acc0, acc1
            )
            return
        if self._omega_pair is None:
            omega = np.ascontiguousarray(op.omega)
            self._omega_pair = (omega, np.ascontiguousarray(omega.T))
        omega, omega_t = self._omega_pair
        _core.sketch_dense_subsampled(
            omega, omega_t, code, X, self._dither_c, scheme, r, key0, key1, first, acc0, acc1
        )

    def _sum_from_accumulators(self, acc0, acc1):
        if self.kind == "quadratic":
            return acc0.copy()
        if self.kind == "real":
            return np.concatenate([acc0, acc1])
        out = np.empty(self.m, np.complex128)  # (the quantized kernel includes the 2^-1/2)
        out.real = acc0
        out.imag = acc1
        return out

    # ------------------------------------------------------------------ state

    def get_state(self):
        """(metadata, arrays) describing the map completely (the operator's every random
        array and the dither), for saving and for `fingerprint`."""
        op_meta, op_arrays = self.operator.get_state()
        meta = {"kind": self.kind, "operator": op_meta}
        arrays = {f"operator_{k}": v for k, v in op_arrays.items()}
        if self.dither is not None:
            arrays["dither"] = self.dither
        return meta, arrays

    @classmethod
    def from_state(cls, meta, arrays):
        op_arrays = {k[len("operator_"):]: v for k, v in arrays.items() if k.startswith("operator_")}
        operator = FrequencyOperator.from_state(meta["operator"], op_arrays)
        dither = arrays.get("dither")
        return cls(operator, kind=meta["kind"], dither=None if dither is None else np.asarray(dither))

    def fingerprint(self):
        """SHA-256 of the complete description: equal fingerprints mean the same map."""
        meta, arrays = self.get_state()
        h = hashlib.sha256(json.dumps(meta, sort_keys=True).encode())
        for name in sorted(arrays):
            a = np.ascontiguousarray(arrays[name])
            h.update(name.encode())
            h.update(a.dtype.str.encode())
            h.update(repr(a.shape).encode())
            h.update(a.tobytes())
        return h.hexdigest()

    def __eq__(self, other):
        if not isinstance(other, FeatureMap):
            return NotImplemented
        return self.fingerprint() == other.fingerprint()

    def __hash__(self):
        return hash(self.fingerprint())

    def __repr__(self):
        dither = "" if self.dither is None else ", dithered"
        return f"FeatureMap(kind={self.kind!r}, operator={self.operator!r}{dither})"


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
    """
    if kind not in FEATURE_KINDS:
        raise ValueError(f"kind must be one of {FEATURE_KINDS}, got {kind!r}")
    if law is None:
        if kind == "quadratic":
            raise ValueError("quadratic features need an explicit law (QuadraticGaussianLaw or OrthonormalBasesLaw)")
        law = GaussianLaw(sigma)
    elif not isinstance(law, FrequencyLaw):
        raise TypeError(f"law must be a FrequencyLaw, got {type(law).__name__}")
    rng = as_generator(random_state)
    op = make_operator(d, m, kind=operator, law=law, random_state=rng, dtype=dtype)
    return FeatureMap(op, kind=kind, dither=dither, random_state=rng)
