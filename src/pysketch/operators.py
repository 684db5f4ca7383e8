"""Random frequency operators Omega (d x m): dense, and structured blocks over the fast
Walsh-Hadamard transform (R3, GR2, Fastfood).

Records are rows, as in scikit-learn: for X of shape (n, d), ``op.apply(X)`` is the
(n, m) array whose row i is Omega^T x_i, i.e. ``X @ Omega``, and ``op.adjoint(V)`` is
``V @ Omega.T`` (row i is Omega v_i), which the learning algorithms need for gradients.

Structured operators (Chatalic's thesis, ch. 5) stack ceil(m / d_p) independent square
blocks of size d_p = 2^ceil(log2 d); inputs are zero-padded to d_p and the first m outputs
are kept. Each block is M_b^T S_b with S_b the radii of its frequencies and

    R3        M^T = H D3 H D2 H D1 / d_p^(3/2)                    (thesis (5.6))
    GR2       M^T = H D_G H D2 H D1 / (d_p ||D_G||_F)             (thesis (5.7))
    Fastfood  M^T = H D_G Pi H D_R / (sqrt(d_p) ||D_G||_F)        (thesis (5.8))

with D1, D2, D3, D_R Rademacher, D_G standard Gaussian (its norm taken per block), Pi a
uniformly random permutation and H the unnormalized Hadamard matrix. Rows of M^T have
unit norm; GR2 and Fastfood rows are uniform on the sphere (thesis Lemma 5.5), so with
radii from chi_{d_p} / sigma their features induce exactly the Gaussian kernel in d
dimensions (Lemma 5.6); R3 blocks are orthonormal but induce no exact Gaussian kernel.

Every random quantity is drawn from ``random_state`` once, kept in the operator and
saved with it, so a saved operator is rebuilt exactly without re-drawing.
"""

import math
import numbers

import numpy as np

from . import _core
from ._checks import MAX_INT, MAX_INT32, cast_real, check_size
from ._checks import real_array as _real_array
from ._random import as_generator
from ._state import Registry, Stateful
from .frequencies import FrequencyLaw, GaussianLaw
from .hadamard import output_array

__all__ = ["FrequencyOperator", "DenseOperator", "StructuredOperator", "make_operator", "STRUCTURED_KINDS",
           "SparseJLOperator", "SparseJLBlock", "SparseJLGraph", "polynomial_hash", "draw_hash_coefficients",
           "MERSENNE61", "FastJLOperator", "operator_bytes",
           "spectral_norm_sq_bound", "column_norm_sq_bound"]

#: The kinds of structured operator (blocks over the fast Walsh-Hadamard transform).
STRUCTURED_KINDS = ("r3", "gr2", "fastfood")
_KIND_CODES = {"r3": 0, "gr2": 1, "fastfood": 2}
#: Operators by the kind written in their state ("dense", "r3", "gr2", "fastfood").
OPERATORS = Registry("operator", key="kind")
#: Dense operators with at most this many rows (the dimension d) sketch through fused
#: tiles in C++ (pysketch/dense.hpp: the phases of 16 records x a strip of columns at a
#: time, straight into the nonlinearity); above it through BLAS products of blocks of
#: records, then the nonlinearity. Measured on one thread (float32 complex features, CPU
#: time per feature, best of 3; AVX-512, Zen 4): fused / BLAS 0.59 / 0.68 ns at d = 10,
#: 0.96 / 1.09 at d = 32, 1.53 / 2.24 at d = 64, 2.66 / 3.34 at d = 128, 5.19 / 5.96 at
#: d = 256. Both give the same sums to the last bit here (OpenBLAS also chains one fma
#: per term), but that is not promised: only each path is deterministic.
FUSED_DENSE_MAX_D = 256
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
#: Below this input dimension make_operator(kind="auto") uses a dense operator: the
#: structured blocks only win by a small factor there (measured against OpenBLAS's dense product,
#: one core) and
#: dense products are exact matrix products.
AUTO_STRUCTURED_MIN_D = 64


def _check_dtype(dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r}") from exc
    if dt not in _DTYPES:
        raise TypeError(f"dtype must be float32 or float64, got {dt}")
    return dt


def _check_positive_int(value, name):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a positive integer, got {value!r}")
    if value < 1 or value > MAX_INT:
        raise ValueError(f"{name} must be a positive integer (at most 2**63 - 1), got {value}")
    return int(value)


class FrequencyOperator(Stateful):
    """Base class: a d x m matrix Omega of frequencies, applied to rows of data.

    The contract of an operator (what feature maps, sketches and decoders use):

    - `apply` / `adjoint`: the checked products; `apply_into` / `adjoint_into`: the same
      products on validated, C-contiguous arrays of the operator's dtype, unchecked (the
      decoders' inner loops), through the subclass's `_apply` / `_adjoint`;
    - `accumulate` / `accumulate_subsampled`: the fused sketching entry points, phases
      straight into a feature map's nonlinearity and float64 sums, in C++;
    - `block_size`: the size of the blocks transformed together (None: no blocks);
    - `_meta` / `_arrays` (its state) and `_from_state`; a subclass registers its kind
      in OPERATORS, so that saved states, files and pickles rebuild it.

    Parameters
    ----------
    d : int
        Input dimension (rows of Omega).
    m : int
        Number of frequencies (columns of Omega).
    dtype : numpy.dtype
        float32 or float64: the dtype of the products.
    law : FrequencyLaw or None
        The law the frequencies were drawn from (kept as a description), if any.

    Raises
    ------
    ValueError
        From `apply` and `adjoint`, when the input is not 1-D or 2-D with the right number
        of columns, holds NaN or infinity, or its products overflow the dtype, or when `out`
        has the wrong shape or dtype or is not writeable and C-contiguous.
    TypeError
        From `apply` and `adjoint`, when the input is not real numbers or `out` is not a
        numpy array; from `column_ranges`, when max_columns is not an integer.
    NotImplementedError
        From `column_ranges`, for a subclass that cannot be split into column ranges.

    Examples
    --------
    >>> import numpy as np
    >>> import pysketch
    >>> op = pysketch.make_operator(3, 8, random_state=0)
    >>> isinstance(op, pysketch.FrequencyOperator), op.d, op.m
    (True, 3, 8)
    >>> X = np.ones((5, 3))
    >>> np.allclose(op.apply(X), X @ op.to_dense())
    True
    """

    kind = None
    _registry = OPERATORS
    _m_name = "m"  # what the number of frequencies is called in messages

    def __init__(self, d, m, dtype, law):
        self.d = d
        self.m = m
        self.dtype = dtype
        self.law = law

    # ------------------------------------------------------------------ products

    def apply(self, X, out=None):
        """Omega^T x for every row x of X: returns ``X @ Omega``, shape (n, m) (or (m,) for a
        single record of shape (d,)).

        X is converted to the operator's dtype. NaN or infinite values raise ValueError.
        """
        X2, single = self._rows(X, self.d, "X")
        if out is None:
            self._check_output(X2.shape[0], self.m, self._m_name, "X")
        res = self._output(out, (X2.shape[0], self.m), single, "out")
        if X2.shape[0]:
            with np.errstate(over="ignore", invalid="ignore"):
                self._apply(X2, res)
            if not np.isfinite(res).all():  # finite records whose products overflow (no silent inf)
                raise ValueError(f"the magnitude of X (largest {float(np.max(np.abs(X2))):.3g}) is outside the "
                                 f"supported range: its products with the frequencies overflow {np.dtype(self.dtype)}; "
                                 "rescale the data by a constant")
        return res[0] if single else res

    def adjoint(self, V, out=None):
        """Omega v for every row v of V: returns ``V @ Omega.T``, shape (n, d) (or (d,))."""
        V2, single = self._rows(V, self.m, "V")
        if out is None:
            self._check_output(V2.shape[0], self.d, "d", "V")
        res = self._output(out, (V2.shape[0], self.d), single, "out")
        if V2.shape[0]:
            self._adjoint(V2, res)
        return res[0] if single else res

    def apply_into(self, X, out):
        """Omega^T x for every row x of X written into `out` (n x m), without the checks of
        `apply`: X and out must be C-contiguous 2-D arrays of the operator's dtype, X with d
        finite columns (a decoder's iterates). Returns out."""
        self._apply(X, out)
        return out

    def adjoint_into(self, V, out):
        """Omega v for every row v of V written into `out` (n x d), unchecked like
        `apply_into` (V and out C-contiguous, of the operator's dtype). Returns out."""
        self._adjoint(V, out)
        return out

    def to_dense(self):
        """Omega as a (d, m) array of the operator's dtype (for tests and small problems)."""
        return self.apply(np.eye(self.d, dtype=self.dtype))

    @property
    def radii(self):
        """The norm of every frequency omega_j (the Euclidean norm of column j of Omega)."""
        return np.linalg.norm(self.to_dense().astype(np.float64), axis=0)

    # ------------------------------------------------------------------ norms (privacy)

    def gram_norm_bound(self):
        """A certified upper bound on ||Omega||_2^2 = lambda_max(Omega Omega^T) (the L1
        sensitivity of quadratic features on the unit ball, Chatalic et al. 2022, Lemma 9), never
        an estimate from below. Default: from the dense matrix (`spectral_norm_sq_bound`);
        structured operators bound it from their blocks without forming Omega."""
        if getattr(self, "_gram_bound", None) is None:
            self._gram_bound = spectral_norm_sq_bound(self.to_dense())
        return self._gram_bound

    def column_norm_bound(self):
        """A certified upper bound on max_j ||omega_j||_2^2 (with `gram_norm_bound`, the
        Riesz-Thorin bound of S4(Omega), Chatalic 2020 thesis, Sec. 8.1.3)."""
        if getattr(self, "_column_bound", None) is None:
            self._column_bound = column_norm_sq_bound(self.to_dense())
        return self._column_bound

    def column_sq_norms(self):
        """||omega_j||_2^2 for every frequency j (float64, shape (m,)): the sketch of the d
        unit vectors, so the quadratic features of an isotropic covariance s I are s times
        these. Default: from the identity, 256 rows at a time."""
        if getattr(self, "_column_sq", None) is None:
            out = np.zeros(self.m)
            for start in range(0, self.d, 256):
                k = min(256, self.d - start)
                rows = np.zeros((k, self.d), self.dtype)
                rows[np.arange(k), start + np.arange(k)] = 1
                out += np.sum(np.square(self.apply(rows), dtype=np.float64), axis=0)
            self._column_sq = out
        return self._column_sq.copy()

    def column_ranges(self, max_columns):
        """The frequencies in contiguous ranges: a list of (start, operator) whose operators
        hold columns start .. start + op.m of Omega, in order, each of at most max_columns
        columns rounded up to whole blocks (`block_size`). Lets a caller work on Omega^T U a
        slice at a time in O(d + k max_columns) memory. One range: the operator itself."""
        max_columns = _check_positive_int(max_columns, "max_columns")
        step = self.block_size or 1
        step *= max(1, max_columns // step)
        if step >= self.m:
            return [(0, self)]
        return [(start, self._columns(start, min(start + step, self.m))) for start in range(0, self.m, step)]

    def _columns(self, start, stop):
        """The operator of columns start..stop (start a multiple of block_size)."""
        raise NotImplementedError(f"{type(self).__name__} cannot be split into column ranges")

    # ------------------------------------------------------------------ state

    def get_state(self):
        """(metadata, arrays): a JSON-serializable dict and a dict of numpy arrays that
        rebuild this operator exactly with `FrequencyOperator.from_state`."""
        meta = {
            "kind": self.kind,
            "d": self.d,
            "m": self.m,
            "dtype": self.dtype.name,
            "law": None if self.law is None else self.law.to_dict(),
        }
        meta.update(self._meta())
        return meta, self._arrays()

    @staticmethod
    def from_state(meta, arrays):
        """Rebuild an operator from `get_state`'s output (arrays are used as given)."""
        return OPERATORS.from_state(meta, arrays)

    @staticmethod
    def _state_law_dtype(meta):
        law = None if meta.get("law") is None else FrequencyLaw.from_dict(meta["law"])
        return law, _check_dtype(meta["dtype"])

    # fingerprint, ==, hash and pickling come from the state (pysketch._state.Stateful)

    # ------------------------------------------------------------------ sketching

    block_size = None

    def accumulate(self, feature, X, dither, acc0, acc1):
        """Add the sums over the rows of X (validated, C-contiguous, the operator's dtype)
        of feature(Omega^T x + dither) into the float64 accumulators; `feature` is the
        feature map's nonlinearity code for pysketch._core."""
        raise NotImplementedError

    def accumulate_subsampled(self, feature, X, dither, scheme, r, key0, key1, first, acc0, acc1):
        """As `accumulate`, each record with only the frequencies of its mask (scheme
        code, r, the masks' 128-bit key and the stream position of the first row)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ helpers

    def _rows(self, X, width, name):
        A = _real_array(X, name)
        single = A.ndim == 1
        if single:
            A = A[None, :]
        if A.ndim != 2:
            raise ValueError(f"{name} must be 1-D (one record) or 2-D (rows are records), got {A.ndim} dimensions")
        if A.shape[1] != width:
            raise ValueError(f"{name} must have {width} columns, got shape {A.shape}")
        A = cast_real(A, self.dtype, name)
        if A.size and not _core.all_finite(A):
            raise ValueError(f"{name} must not contain NaN or infinity")
        return A, single

    def _check_output(self, n, width, name, rows):
        """The (n, width) result of a product refused before it is allocated when no machine
        could hold it (naming the operator's size `name` and the rows of the input)."""
        check_size(width, name, nbytes=n * width * self.dtype.itemsize,
                   what=f"for the products of the {n} rows of {rows}")

    def _output(self, out, shape, single, name):
        if out is None:
            # from 64 KiB on, on a cache-line boundary: the structured transforms store
            # their last pass straight into it
            return output_array(shape, self.dtype)
        if not isinstance(out, np.ndarray):
            raise TypeError(f"{name} must be a numpy.ndarray, got {type(out).__name__}")
        want = shape[1:] if single else shape
        if out.shape != want or out.dtype != self.dtype:
            raise ValueError(f"{name} must have shape {want} and dtype {self.dtype}, got {out.shape} {out.dtype}")
        if not out.flags.writeable or not out.flags.c_contiguous:
            raise ValueError(f"{name} must be writeable and C-contiguous")
        return out[None, :] if single else out

    def __repr__(self):
        law = "" if self.law is None else f", law={self.law!r}"
        return f"{type(self).__name__}(kind={self.kind!r}, d={self.d}, m={self.m}, dtype={self.dtype.name}{law})"


OPERATORS.base = FrequencyOperator


class DenseOperator(FrequencyOperator):
    """A dense Omega (d x m); products go through BLAS (numpy's matmul).

    Parameters
    ----------
    omega : array_like, shape (d, m)
        The frequencies as columns.
    law : FrequencyLaw, optional
        The law the frequencies were drawn from (kept as a description).
    dtype : float32 or float64, optional
        Computation dtype (default: omega's dtype if float, else float64).

    Raises
    ------
    ValueError
        If `omega` is not a non-empty 2-D array, is not finite, or has a value beyond the
        range of `dtype`; from `draw`, when a size is below 1 or beyond the machine's
        memory.
    TypeError
        If `omega` is not real, `dtype` is not float32 or float64, or `law` is not a
        FrequencyLaw.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.operators import DenseOperator
    >>> op = DenseOperator(np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]]))
    >>> op.apply(np.array([[1.0, 2.0]]))  # x @ Omega
    array([[1., 2., 0.]])
    >>> op.adjoint(np.array([[1.0, 0.0, 1.0]]))  # v @ Omega.T
    array([[ 3., -1.]])
    """

    kind = "dense"

    def __init__(self, omega, *, law=None, dtype=None):
        om = np.asarray(omega)
        if om.ndim != 2 or om.shape[0] < 1 or om.shape[1] < 1:
            raise ValueError(f"omega must be a non-empty 2-D array (d, m), got shape {om.shape}")
        if om.dtype.kind not in "iuf":
            raise TypeError(f"omega must be real, got dtype {om.dtype}")
        dt = _check_dtype(dtype if dtype is not None else (om.dtype if om.dtype in _DTYPES else np.float64))
        om = cast_real(om, dt, "omega")
        if not np.isfinite(om).all():
            raise ValueError("omega must be finite")
        if law is not None and not isinstance(law, FrequencyLaw):
            raise TypeError(f"law must be a FrequencyLaw or None, got {type(law).__name__}")
        super().__init__(om.shape[0], om.shape[1], dt, law)
        self.omega = om
        self._omega_t = None  # Omega^T, C-contiguous, made for the first subsampled sketch

    @classmethod
    def _from_state(cls, meta, arrays):
        law, dtype = cls._state_law_dtype(meta)
        return cls(arrays["omega"], law=law, dtype=dtype)

    @classmethod
    def draw(cls, d, m, law, random_state=None, dtype=np.float64):
        """Draw Omega from `law` (radius x uniform direction for each column)."""
        dt = _check_dtype(dtype)
        d = check_size(d, "d", nbytes=lambda v: operator_bytes(v, 1, "dense", dt), what="for the frequencies")
        m = check_size(m, "m", nbytes=lambda v: operator_bytes(d, v, "dense", dt),
                       what=f"for the ({d}, m) matrix of frequencies")
        if not isinstance(law, FrequencyLaw):
            raise TypeError(f"law must be a FrequencyLaw, got {type(law).__name__}")
        omega = law.sample(d, m, as_generator(random_state))
        return cls(omega, law=law, dtype=dtype)

    def _apply(self, X, out):
        np.matmul(X, self.omega, out=out)

    def _adjoint(self, V, out):
        np.matmul(V, self.omega.T, out=out)

    def to_dense(self):
        return self.omega.copy()

    def _columns(self, start, stop):
        return DenseOperator(self.omega[:, start:stop], law=self.law, dtype=self.dtype)

    def _meta(self):
        return {}

    def _arrays(self):
        return {"omega": self.omega}

    def accumulate(self, feature, X, dither, acc0, acc1):
        if self.d <= FUSED_DENSE_MAX_D:
            _core.sketch_dense(self.omega, feature, X, dither, acc0, acc1)
            return
        # Larger d: the products through BLAS (numpy's matmul) a block of rows at a time (at
        # most about 8 MiB of phases), each block straight into the nonlinearity and sums.
        rows = max(1, (8 << 20) // (self.m * self.dtype.itemsize))
        P = np.empty((min(rows, X.shape[0]), self.m), self.dtype)
        for start in range(0, X.shape[0], rows):
            chunk = X[start : start + rows]
            Pc = P[: chunk.shape[0]]
            np.matmul(chunk, self.omega, out=Pc)
            _core.accumulate_features(feature, Pc, dither, acc0, acc1)

    def accumulate_subsampled(self, feature, X, dither, scheme, r, key0, key1, first, acc0, acc1):
        if self._omega_t is None:
            self._omega_t = np.ascontiguousarray(self.omega.T)
        _core.sketch_dense_subsampled(self.omega, self._omega_t, feature, X, dither, scheme, r, key0, key1, first,
                                      acc0, acc1)


OPERATORS.register("dense", DenseOperator)


def _padded(d):
    """d_p = 2^ceil(log2 d), the padded dimension of the fast transforms."""
    return 1 << max(0, (d - 1).bit_length())


def _cache_line_aligned(v):
    """v itself if it starts on a 64-byte boundary, else a copy that does.

    The transforms load the diagonals and permutations alongside the data, one vector
    register (64 bytes) at a time; at numpy's usual 16-byte alignment every such load
    spans two cache lines.
    """
    if _core.address(v) % 64 == 0:
        return v
    out = output_array(v.shape, v.dtype, always=True)
    out[...] = v
    return out


class StructuredOperator(FrequencyOperator):
    """Omega built from square blocks over the fast Walsh-Hadamard transform.

    Use `StructuredOperator.draw` (or `make_operator`) to draw one. The attributes `a`,
    `b`, `c`, `perm` and `post` hold the diagonals of every block back to back
    (blocks * d_p values each; see pysketch/operators.hpp for their roles) and `radii`
    the radius of every frequency.

    Parameters
    ----------
    *args, **kwargs
        Not accepted: the constructor raises TypeError. Draw an operator with
        `StructuredOperator.draw` or `make_operator` (a saved one is rebuilt by
        `FrequencyOperator.from_state`).

    Raises
    ------
    TypeError
        From the constructor, always; from `draw`, when `law` is not a FrequencyLaw or
        `dtype` is not float32 or float64.
    ValueError
        From `draw`, when `kind` is not one of STRUCTURED_KINDS, a size is below 1, or the
        law gives radii of another shape; when a saved state lacks an array or holds one of
        the wrong shape or not finite; from `column_ranges`, at a split inside a block.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.operators import StructuredOperator
    >>> op = StructuredOperator.draw(100, 256, kind="r3", random_state=0)
    >>> op.d_p, op.block_size, op.apply(np.ones((3, 100))).shape  # d padded to 128
    (128, 128, (3, 256))
    """

    def __init__(self, *args, **kwargs):
        raise TypeError("use StructuredOperator.draw(...) or make_operator(...) to create a structured operator")

    @classmethod
    def draw(cls, d, m, kind="r3", law=None, random_state=None, dtype=np.float64):
        """Draw a structured operator.

        Parameters
        ----------
        d, m : int
            Input dimension and number of frequencies.
        kind : {'r3', 'gr2', 'fastfood'}
        law : FrequencyLaw, optional
            Radius law (default GaussianLaw(1.0)); radii are drawn for directions in
            d_p dimensions (chi_{d_p} for the Gaussian law, thesis Lemma 5.6).
        random_state : None, int, numpy Generator, ...
        dtype : float32 or float64

        Random draws, in this order, from one generator: the first diagonal of every
        block (signs), the second (signs, or Gaussian for Fastfood), the third (signs for
        R3, Gaussian for GR2; none for Fastfood), the permutations (Fastfood), then the m
        radii.
        """
        d = check_size(d, "d", nbytes=lambda v: operator_bytes(v, 1, "r3"),
                       what="for one block of d_p = 2^ceil(log2 d) frequencies")
        log_dp = max(0, math.ceil(math.log2(d)))
        dp = 1 << log_dp
        m = check_size(m, "m", nbytes=lambda v: operator_bytes(d, v, "r3"),
                       what=f"for the blocks of d_p = {dp} frequencies")
        if kind not in STRUCTURED_KINDS:
            raise ValueError(f"kind must be one of {STRUCTURED_KINDS}, got {kind!r}")
        law = GaussianLaw(1.0) if law is None else law
        if not isinstance(law, FrequencyLaw):
            raise TypeError(f"law must be a FrequencyLaw, got {type(law).__name__}")
        dt = _check_dtype(dtype)
        rng = as_generator(random_state)
        blocks = -(-m // dp)
        width = blocks * dp

        def signs():  # +-1, exact in either dtype (drawn in it: a float64 copy of each is m floats more)
            return (2 * rng.integers(0, 2, size=width, dtype=np.int8) - 1).astype(dt)

        a = signs()
        b = signs() if kind != "fastfood" else rng.standard_normal(width)
        c = None
        if kind == "r3":
            c = signs()
        elif kind == "gr2":
            c = rng.standard_normal(width)
        perm = None
        if kind == "fastfood":
            perm = np.concatenate([rng.permutation(dp) for _ in range(blocks)]).astype(np.int32)
        radii = np.asarray(law.radii(m, dp, rng, d=d), dtype=np.float64)
        if radii.shape != (m,):
            raise ValueError(f"law.radii returned shape {radii.shape}, expected ({m},)")
        # Block normalizations (thesis (5.6)-(5.8)); ||D_G||_F per block.
        if kind == "r3":
            norm = np.full(blocks, dp ** -1.5)
        else:
            gauss = (c if kind == "gr2" else b).reshape(blocks, dp)
            fro = np.sqrt(np.einsum("ij,ij->i", gauss, gauss))
            norm = 1.0 / ((dp if kind == "gr2" else math.sqrt(dp)) * fro)
        post = np.zeros(width)
        post[:m] = radii * np.repeat(norm, dp)[:m]
        arrays = {"a": a, "b": b, "post": post, "radii": radii}
        if c is not None:
            arrays["c"] = c
        if perm is not None:
            arrays["perm"] = perm
        return cls._from_arrays(kind, d, m, dt, law, arrays)

    @classmethod
    def _from_arrays(cls, kind, d, m, dtype, law, arrays):
        self = object.__new__(cls)
        FrequencyOperator.__init__(self, d, m, dtype, law)
        self.kind = kind
        self.log_dp = max(0, math.ceil(math.log2(d)))
        self.blocks = -(-m // (1 << self.log_dp))
        width = self.blocks << self.log_dp

        def vec(name, dt=dtype):
            if name not in arrays:
                raise ValueError(f"the saved state of a {kind} operator has no array {name!r}")
            v = np.ascontiguousarray(arrays[name], dtype=dt)
            if v.shape != (width,) and name != "radii":
                raise ValueError(f"array {name!r} must have shape ({width},), got {v.shape}")
            return _cache_line_aligned(v)

        self.a = vec("a")
        self.b = vec("b")
        self.c = vec("c") if kind != "fastfood" else None
        self.perm = vec("perm", np.int32) if kind == "fastfood" else None
        self.post = vec("post")
        self._radii = np.ascontiguousarray(arrays["radii"], dtype=np.float64) if "radii" in arrays else None
        for name in ("a", "b", "c", "post"):
            v = getattr(self, name)
            if v is not None and not np.isfinite(v).all():
                raise ValueError(f"array {name!r} must be finite")
        core_cls = _core.StructuredF32 if dtype == np.float32 else _core.StructuredF64
        self._core = core_cls(_KIND_CODES[kind], d, m, self.log_dp, self.a, self.b, self.c, self.post, self.perm)
        return self

    @classmethod
    def _from_state(cls, meta, arrays):
        law, dtype = cls._state_law_dtype(meta)
        return cls._from_arrays(meta["kind"], int(meta["d"]), int(meta["m"]), dtype, law, arrays)

    @property
    def d_p(self):
        """The padded dimension 2^ceil(log2 d)."""
        return 1 << self.log_dp

    @property
    def block_size(self):
        """d_p: the frequencies of one block are transformed together."""
        return self.d_p

    def accumulate(self, feature, X, dither, acc0, acc1):
        _core.sketch_structured(self._core, feature, X, dither, acc0, acc1)

    def accumulate_subsampled(self, feature, X, dither, scheme, r, key0, key1, first, acc0, acc1):
        _core.sketch_structured_subsampled(self._core, feature, X, dither, scheme, r, key0, key1, first, acc0, acc1)

    @property
    def radii(self):
        if self._radii is not None:
            return self._radii.copy()
        return super().radii

    def _block_factors(self):
        """Per block: (max over its frequencies of |post|, the spectral norm of the block's
        unnormalized chain of transforms and diagonals, the squared norm of every row of that
        chain). H has norm sqrt(d_p) and orthogonal rows of squared norm d_p; a diagonal has
        the norm of its largest entry; a permutation has norm 1."""
        dp = self.d_p
        a, b, post = (np.abs(v.astype(np.float64)).reshape(self.blocks, dp) for v in (self.a, self.b, self.post))
        if self.kind == "fastfood":  # H D_G Pi H D_R
            chain = dp * b.max(axis=1) * a.max(axis=1)
            rows = dp * np.einsum("ij,ij->i", b, b)  # (H D_G Pi H D_R)(...)^T = d_p H D_G^2 H
        else:  # H D3 H D2 H D1 (R3), H D_G H D2 H D1 (GR2)
            c = np.abs(self.c.astype(np.float64)).reshape(self.blocks, dp)
            chain = dp ** 1.5 * c.max(axis=1) * b.max(axis=1) * a.max(axis=1)
            # D2 and D1 are signs: the chain's Gram is d_p^2 H D_c^2 H, rows d_p^2 ||c||^2
            rows = dp * dp * np.einsum("ij,ij->i", c, c)
        return post, chain, rows

    def _rounding_margin(self):
        # the transforms' rounding in the operator's dtype: a relative error of at most
        # (passes * log2 d_p + 4) units per product, taken four times over for the square
        u = float(np.finfo(self.dtype).eps)
        passes = 2 if self.kind == "fastfood" else 3
        return 1.0 + 4.0 * (passes * self.log_dp + 4) * u

    def gram_norm_bound(self):
        """Omega Omega^T = sum_b B_b B_b^T over the blocks (the first d rows of each), so
        lambda_max <= sum_b ||B_b||_2^2 <= sum_b (max abs(post_b) ||chain_b||)^2: for R3 blocks
        with unit radii (OrthonormalBasesLaw) this is the number of blocks, the closed form
        m / d_p of a union of orthonormal bases (thesis (8.6)) when d_p divides m."""
        if getattr(self, "_gram_bound", None) is None:
            post, chain, _ = self._block_factors()
            per_block = (post.max(axis=1) * chain) ** 2
            self._gram_bound = float(per_block.sum()) * self._rounding_margin()
        return self._gram_bound

    def column_norm_bound(self):
        """||omega_j||^2 <= post_j^2 times the squared norm of row j of the block's chain
        (the first d coordinates of the padded frequency are part of it): radius_j^2 (thesis
        Lemma 5.4: rows of M^T have unit norm)."""
        if getattr(self, "_column_bound", None) is None:
            post, _, rows = self._block_factors()
            per_block = post.max(axis=1) ** 2 * rows
            self._column_bound = float(per_block.max()) * self._rounding_margin()
        return self._column_bound

    def column_sq_norms(self):
        """Without padding (d = d_p) every row of a block's chain has the squared norm of
        `_block_factors`, so ||omega_j||^2 = post_j^2 times it exactly; with padding only the
        first d coordinates count and the identity is sketched (the base class)."""
        if self.d != self.d_p:
            return super().column_sq_norms()
        dp = self.d_p
        # the rows' squared norms of `_block_factors` without its copies of every diagonal
        g = (self.b if self.kind == "fastfood" else self.c).reshape(self.blocks, dp)
        rows = np.einsum("ij,ij->i", g, g, dtype=np.float64) * (dp if self.kind == "fastfood" else dp * dp)
        out = np.square(self.post[: self.m], dtype=np.float64)
        out *= np.repeat(rows, dp)[: self.m]
        return out

    def _columns(self, start, stop):
        dp = self.d_p
        if start % dp:
            raise ValueError(f"a structured operator splits at whole blocks of {dp} columns, not at {start}")
        sl = slice(start, start + (-(-(stop - start) // dp)) * dp)
        arrays = {name: v[sl] for name, v in self._arrays().items() if name != "radii"}
        if self._radii is not None:
            arrays["radii"] = self._radii[start:stop]
        return StructuredOperator._from_arrays(self.kind, self.d, stop - start, self.dtype, self.law, arrays)

    def _apply(self, X, out):
        self._core.apply(X, out)

    def _adjoint(self, V, out):
        self._core.adjoint(V, out)

    def _meta(self):
        return {"log_dp": self.log_dp, "blocks": self.blocks}

    def _arrays(self):
        arrays = {"a": self.a, "b": self.b, "post": self.post}
        if self.c is not None:
            arrays["c"] = self.c
        if self.perm is not None:
            arrays["perm"] = self.perm
        if self._radii is not None:
            arrays["radii"] = self._radii
        return arrays


for _kind in STRUCTURED_KINDS:
    OPERATORS.register(_kind, StructuredOperator)


_EPS = 2.0 ** -52


def spectral_norm_sq_bound(omega):
    """A certified upper bound on ||Omega||_2^2 = lambda_max(Omega Omega^T) for an explicit
    (d, m) matrix: the largest eigenvalue of the float64 Gram matrix plus bounds on the
    error of forming it (m u ||Omega||_F^2 entrywise, d times that in the spectral norm) and
    of the eigensolver (backward stable: a few d u ||G||_F). Power iteration would
    converge from below (its iterates under-estimate lambda_max), so it is not used.

    Parameters
    ----------
    omega : array_like of shape (d, m)
        The matrix.

    Returns
    -------
    float
        An upper bound on its largest squared singular value.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.operators import spectral_norm_sq_bound
    >>> bound = spectral_norm_sq_bound(np.eye(3))  # ||I||_2^2 = 1
    >>> bool(1.0 <= bound < 1.0 + 1e-12)
    True
    """
    W = np.asarray(omega, dtype=np.float64)
    d, m = W.shape
    G = W @ W.T
    fro2 = float(np.sum(W * W))
    lam = float(np.linalg.eigvalsh(G)[-1])
    gram_err = (m + 2) * _EPS * fro2 * d
    eig_err = 64 * d * _EPS * float(np.linalg.norm(G))
    return lam + gram_err + eig_err


def column_norm_sq_bound(omega):
    """max_j ||omega_j||_2^2 of an explicit (d, m) matrix, rounded up.

    Parameters
    ----------
    omega : array_like of shape (d, m)
        The matrix.

    Returns
    -------
    float
        The largest squared column norm, times 1 + 4 d u (u = 2**-52).

    Examples
    --------
    >>> from pysketch.operators import column_norm_sq_bound
    >>> round(column_norm_sq_bound([[3.0, 0.0], [4.0, 1.0]]), 9)  # columns of norms 5 and 1
    25.0
    """
    W = np.asarray(omega, dtype=np.float64)
    return float(np.max(np.sum(W * W, axis=0))) * (1 + 4 * W.shape[0] * _EPS)


def make_operator(d, m, kind="auto", law=None, *, random_state=None, dtype=np.float64):
    """Draw a frequency operator Omega (d x m).

    Parameters
    ----------
    d, m : int
        Input dimension and number of frequencies.
    kind : {'auto', 'dense', 'r3', 'gr2', 'fastfood'}
        'auto' is 'r3' from d = AUTO_STRUCTURED_MIN_D on, 'dense' below.
    law : FrequencyLaw, optional
        Frequency law (default GaussianLaw(1.0)).
    random_state : None, int or numpy.random.Generator
    dtype : float32 or float64

    Returns
    -------
    DenseOperator or StructuredOperator

    Raises
    ------
    ValueError
        If `kind` is unknown, or d or m is below 1 (or too large for the machine's
        memory).
    TypeError
        If d or m is not an integer, `law` is not a FrequencyLaw, or `dtype` is not float32
        or float64.

    Examples
    --------
    >>> import pysketch
    >>> pysketch.make_operator(10, 20, random_state=0)
    DenseOperator(kind='dense', d=10, m=20, dtype=float64, law=GaussianLaw(sigma=1.0))
    >>> pysketch.make_operator(100, 20, random_state=0).kind  # 'auto' from d = 64 on
    'r3'
    """
    d = _check_positive_int(d, "d")
    m = _check_positive_int(m, "m")
    law = GaussianLaw(1.0) if law is None else law
    if kind == "auto":
        kind = "r3" if d >= AUTO_STRUCTURED_MIN_D else "dense"
    if kind == "dense":
        return DenseOperator.draw(d, m, law, random_state=random_state, dtype=dtype)
    if kind in STRUCTURED_KINDS:
        return StructuredOperator.draw(d, m, kind, law, random_state=random_state, dtype=dtype)
    raise ValueError(f"kind must be 'auto', 'dense' or one of {STRUCTURED_KINDS}, got {kind!r}")


def operator_bytes(d, m, kind="auto", dtype=np.float64):
    """The bytes that drawing and holding make_operator(d, m, kind, dtype=dtype) takes, for
    the memory checks of the sizes that set d and m (pysketch._checks.check_size): a dense
    Omega is drawn in float64 (directions and radii) and kept in dtype; a structured one
    keeps per column of its padded blocks three diagonals, post, radii and a permutation,
    and draws the radii (7 float64 in all).

    Parameters
    ----------
    d, m : int
        Input dimension and number of frequencies.
    kind : {'auto', 'dense', 'r3', 'gr2', 'fastfood'}, default 'auto'
        As for `make_operator` ('auto' resolved the same way).
    dtype : float32 or float64, default float64
        The dtype a dense Omega is kept in.

    Returns
    -------
    int
        Bytes.

    Examples
    --------
    >>> from pysketch.operators import operator_bytes
    >>> operator_bytes(10, 100), operator_bytes(100, 100)  # dense; r3 in blocks of 128
    (24000, 7168)
    """
    if kind == "auto":
        kind = "r3" if d >= AUTO_STRUCTURED_MIN_D else "dense"
    if kind == "dense":
        return d * m * (16 + np.dtype(dtype).itemsize)
    dp = _padded(d)
    return -(-m // dp) * dp * 7 * 8


# ---------------------------------------------------------------------------------------------
# Johnson-Lindenstrauss operators for private distances (Stausholm 2021, "Improved differentially private
# Euclidean distance approximation"). As every
# operator here they are Omega = S^T (d x k): `apply(X)` gives the rows S x.

#: The Mersenne prime 2^61 - 1: the field of the k-wise independent polynomial hashes
#: (the modular reduction of a hash to a range is biased by a relative order range / p).
MERSENNE61 = (1 << 61) - 1
_M61 = np.uint64(MERSENNE61)
_LOW31 = np.uint64((1 << 31) - 1)
_LOW30 = np.uint64((1 << 30) - 1)


def _mod61(x):
    """x mod 2^61 - 1 for uint64 x (vectorized)."""
    x = (x & _M61) + (x >> np.uint64(61))
    x = (x & _M61) + (x >> np.uint64(61))
    return np.where(x >= _M61, x - _M61, x)


def _mulmod61(a, b):
    """a b mod 2^61 - 1 for uint64 a, b < 2^61, exactly, in uint64 arithmetic: with
    a = a1 2^31 + a0 and b = b1 2^31 + b0, a b = a1 b1 2^62 + (a1 b0 + a0 b1) 2^31 + a0 b0,
    and 2^61 = 1 (mod p), so 2^62 = 2 and (m_hi 2^30 + m_lo) 2^31 = m_hi + m_lo 2^31."""
    a1, a0 = a >> np.uint64(31), a & _LOW31
    b1, b0 = b >> np.uint64(31), b & _LOW31
    mid = a1 * b0 + a0 * b1  # < 2^62
    total = (a1 * b1) * np.uint64(2) + (mid >> np.uint64(30)) + ((mid & _LOW30) << np.uint64(31)) + a0 * b0
    return _mod61(total)  # total < 2^61 + 2^32 + 2^61 + 2^62 < 2^64


def polynomial_hash(coefficients, x):
    """The t-wise independent hash of the integers x (uint64 array < p): the polynomial of
    degree t - 1 with the given t coefficients (in [0, p)) over GF(2^61 - 1), by Horner's
    rule; values in [0, p).

    Parameters
    ----------
    coefficients : sequence of int
        The t coefficients in [0, 2^61 - 1), the highest degree first.
    x : array_like of int
        The keys (converted to uint64, then reduced modulo 2^61 - 1).

    Returns
    -------
    numpy.ndarray
        uint64 values in [0, 2^61 - 1), of x's shape.

    Examples
    --------
    >>> from pysketch.operators import MERSENNE61, polynomial_hash
    >>> polynomial_hash([3, 5], [0, 1, 2, 3])  # 3 x + 5
    array([ 5,  8, 11, 14], dtype=uint64)
    >>> int(polynomial_hash([1, 0], [MERSENNE61])[0])  # x modulo the prime
    0
    """
    x = _mod61(np.asarray(x, dtype=np.uint64))
    acc = np.full(x.shape, np.uint64(int(coefficients[0])), dtype=np.uint64)
    for c in coefficients[1:]:
        acc = _mod61(_mulmod61(acc, x) + np.uint64(int(c)))
    return acc


def draw_hash_coefficients(n_functions, independence, random_state=None):
    """(n_functions, independence) coefficients in [0, 2^61 - 1) of independent polynomial
    hashes (from the public seed: these define the public matrix).

    Parameters
    ----------
    n_functions : int
        Number of hash functions.
    independence : int
        t: the coefficients of each (a polynomial of degree t - 1, t-wise independent).
    random_state : None, int or numpy.random.Generator
        The public seed.

    Returns
    -------
    numpy.ndarray
        (n_functions, independence) uint64.

    Examples
    --------
    >>> from pysketch.operators import MERSENNE61, draw_hash_coefficients
    >>> c = draw_hash_coefficients(4, 2, random_state=0)
    >>> c.shape, c.dtype.name, bool((c < MERSENNE61).all())
    ((4, 2), 'uint64', True)
    """
    rng = as_generator(random_state)
    return rng.integers(0, MERSENNE61, size=(n_functions, independence), dtype=np.uint64)


class SparseJLOperator(FrequencyOperator):
    """A sparse Johnson-Lindenstrauss transform S (k x d) of Kane & Nelson (JACM 2014), as
    Omega = S^T: every column of S has exactly s nonzeros +-1/sqrt(s) (Stausholm 2021,
    Sec. 6.1). Its sensitivities under the l1 neighbouring relation ||x - y||_1 <= 1 (the
    largest column norms, Def. 3 of Stausholm) are Delta_1 = sqrt(s) and Delta_2 = 1 for
    every draw (`sensitivity`), so no matrix-dependent calibration is needed.

    ``SparseJLOperator.draw(d, k, s, construction='block', independence=4,
    random_state=None)``:

    - 'block' (Kane-Nelson (c)): s blocks of k/s rows (s must divide k); in block r, column
      j has its nonzero at row r k/s + h_r(j) with sign phi_r(j), h_r and phi_r polynomial
      hashes of degree independence - 1 over GF(2^61 - 1) from the public seed (4-wise
      signs and pairwise rows give the exact variance, Stausholm 2021, Lemma 3);
    - 'graph' (Kane-Nelson (b)): s distinct rows per column uniformly among k, independent
      signs, drawn from the public seed's generator (fully random tables).

    Products run in the C++ core (dense batches by tiles of records, scipy.sparse CSR input
    in O(s nnz)); `update` adds one coordinate change to a sketch in O(s); `to_sparse` gives
    S as a scipy.sparse CSR matrix. The tables (rows, signs) are the state.

    Parameters
    ----------
    rows : array_like of int, shape (s, d)
        The row of each of the s nonzeros of every column, in [0, k).
    signs : array_like of +-1, shape (s, d)
        Their signs.
    k : int
        The number of rows of S (the sketch's length), at most 2^31 - 1.
    independence : int, optional
        The independence of the hashes that drew the tables (recorded; 'block' only).

    Raises
    ------
    ValueError
        If `rows` and `signs` are not two non-empty (s, d) arrays of one shape, a sign is
        not +-1, a row is outside [0, k), or k is out of range; from `draw`, when
        `construction` is unknown, s > k, or s does not divide k ('block'); from
        `sensitivity`, for p other than 1 and 2; from `update`, for a wrong y or j.
    TypeError
        If k (or a size of `draw`) is not an integer.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.operators import SparseJLOperator
    >>> S = SparseJLOperator.draw(1000, 64, 4, random_state=0)
    >>> type(S).__name__, S.k, S.s, S.sensitivity(1), S.sensitivity(2)
    ('SparseJLBlock', 64, 4, 2.0, 1.0)
    >>> x = np.zeros(1000)
    >>> x[3] = 1.0
    >>> int(np.count_nonzero(S.apply(x)))  # column 3 of S: s nonzeros
    4
    """

    construction = None
    _m_name = "k"

    def __init__(self, rows, signs, k, *, independence=None):
        k = check_size(k, "k", maximum=MAX_INT32, why=" (rows are int32 indices)")
        rows = np.ascontiguousarray(rows, dtype=np.int32)
        signs = np.ascontiguousarray(signs, dtype=np.int8)
        if rows.ndim != 2 or rows.shape != signs.shape or rows.size == 0:
            raise ValueError(f"rows and signs must be two (s, d) arrays of one shape, got {rows.shape} and {signs.shape}")
        if not np.isin(signs, (-1, 1)).all():
            raise ValueError("signs must be +-1")
        self.s = rows.shape[0]
        self.independence = independence
        self.rows, self.signs = rows, signs
        self.vals = np.ascontiguousarray(signs / math.sqrt(self.s), dtype=np.float64)
        if (rows < 0).any() or (rows >= k).any():
            raise ValueError(f"rows must lie in [0, k = {k})")
        super().__init__(rows.shape[1], k, np.dtype(np.float64), None)

    @classmethod
    def draw(cls, d, k, s, construction="block", independence=4, random_state=None):
        # the tables: rows (int32), signs (int8) and values (float64) of s entries per column,
        # the hashes' uint64 temporaries of one column and their 2 s coefficients (block); k
        # is an int32 row index
        if construction not in ("block", "graph"):
            raise ValueError(f"construction must be 'block' or 'graph', got {construction!r}")
        block = construction == "block"
        if block:
            independence = check_size(independence, "independence", nbytes=lambda v: 2 * v * 8,
                                      what="for the coefficients of a hash")
        per_row = 2 * independence * 8 if block else 0
        d = check_size(d, "d", nbytes=lambda v: v * (13 + 32) + per_row, what="for the tables of the columns")
        k = check_size(k, "k", maximum=MAX_INT32, why=" (rows are int32 indices)")
        s = _check_positive_int(s, "s")
        if s > k:
            raise ValueError(f"s must be <= k, got s = {s} > k = {k}")
        s = check_size(s, "s", nbytes=lambda v: d * (13 * v + 32) + v * per_row,
                       what=f"for the tables of d = {d} columns and the hashes")
        rng = as_generator(random_state)
        if block:
            if k % s:
                raise ValueError(f"the block construction needs s to divide k, got k = {k}, s = {s}")
            coef = draw_hash_coefficients(2 * s, independence, rng)
            j = np.arange(d, dtype=np.uint64)
            B = k // s
            rows = np.empty((s, d), np.int32)
            signs = np.empty((s, d), np.int8)
            for r in range(s):
                rows[r] = r * B + (polynomial_hash(coef[2 * r], j) % np.uint64(B)).astype(np.int64)
                signs[r] = 1 - 2 * (polynomial_hash(coef[2 * r + 1], j) & np.uint64(1)).astype(np.int8)
            return SparseJLBlock(rows, signs, k, independence=independence)
        # graph: s distinct rows of k per column from a random order of k, 2^16 columns at a time
        check_size(k, "k", maximum=MAX_INT32, nbytes=min(d, 1 << 16) * k * 16,
                   what=f"for the random orders of the graph construction ({min(d, 1 << 16)} columns at a time)")
        rows = np.empty((s, d), np.int32)
        for start in range(0, d, 1 << 16):  # s distinct rows per column: the first s of a random order
            stop = min(d, start + (1 << 16))
            rows[:, start:stop] = np.argsort(rng.random((stop - start, k)), axis=1)[:, :s].T
        signs = (1 - 2 * rng.integers(0, 2, size=(s, d))).astype(np.int8)
        return SparseJLGraph(rows, signs, k)

    @property
    def k(self):
        return self.m

    def sensitivity(self, p):
        """Delta_p(S) = max_j ||S_{:, j}||_p under ||x - y||_1 <= 1: sqrt(s) (p = 1), 1 (p = 2),
        for every draw."""
        if p == 1:
            return math.sqrt(self.s)
        if p == 2:
            return 1.0
        raise ValueError(f"p must be 1 or 2, got {p!r}")

    def apply(self, X, out=None):
        """S x for every row x of X (a 2-D array, a single record, or a scipy.sparse matrix
        with rows as records, in O(s nnz))."""
        if hasattr(X, "tocsr") and type(X).__module__.startswith("scipy.sparse"):
            A = X.tocsr()
            if A.shape[1] != self.d:
                raise ValueError(f"X must have {self.d} columns, got shape {A.shape}")
            if not A.has_canonical_format:  # sorted, no duplicates: the same bits as the dense product
                A = A.copy()
                A.sum_duplicates()
            data = A.data if A.data.dtype in (np.float32, np.float64) else A.data.astype(np.float64)
            if not np.isfinite(data).all():
                raise ValueError("X must not contain NaN or infinity")
            if out is None:
                self._check_output(A.shape[0], self.m, self._m_name, "X")
            res = self._output(out, (A.shape[0], self.m), False, "out")
            _core.sjlt_apply_csr(A.indptr, A.indices, data, self.d, self.rows, self.vals, res)
            return res
        return super().apply(X, out)

    def _apply(self, X, out):
        _core.sjlt_apply(X, self.rows, self.vals, out)

    def _adjoint(self, V, out):
        # (V S)[:, j] = sum_r vals[r, j] V[:, rows[r, j]]
        out[...] = 0.0
        for r in range(self.s):
            out += V[:, self.rows[r]] * self.vals[r]

    def update(self, y, j, delta):
        """Add delta e_j to the sketched vector: y += delta S e_j, in place, O(s)."""
        if not isinstance(y, np.ndarray) or y.shape != (self.m,) or y.dtype != np.float64:
            raise ValueError(f"y must be a float64 array of shape ({self.m},)")
        if isinstance(j, (bool, np.bool_)) or not isinstance(j, numbers.Integral) or not 0 <= j < self.d:
            raise ValueError(f"j must be a coordinate index in [0, {self.d}), got {j!r}")
        _core.sjlt_update(y, int(j), float(delta), self.rows, self.vals)
        return y

    def to_sparse(self):
        """S as a scipy.sparse CSR matrix (k, d)."""
        from scipy import sparse

        cols = np.tile(np.arange(self.d), self.s)
        return sparse.csr_matrix((self.vals.reshape(-1), (self.rows.reshape(-1), cols)), shape=(self.m, self.d))

    def to_dense(self):
        return np.ascontiguousarray(self.to_sparse().toarray().T)

    def accumulate(self, feature, X, dither, acc0, acc1):
        rows = max(1, (8 << 20) // (self.m * 8))
        P = np.empty((min(rows, X.shape[0]), self.m))
        for start in range(0, X.shape[0], rows):
            chunk = X[start : start + rows]
            Pc = P[: chunk.shape[0]]
            self._apply(chunk, Pc)
            _core.accumulate_features(feature, Pc, dither, acc0, acc1)

    def _meta(self):
        return {"s": self.s, "independence": self.independence}

    def _arrays(self):
        return {"rows": self.rows, "signs": self.signs}

    @classmethod
    def _from_state(cls, meta, arrays):
        return cls(arrays["rows"], arrays["signs"], meta["m"], independence=meta.get("independence"))

    def __repr__(self):
        return f"{type(self).__name__}(d={self.d}, k={self.m}, s={self.s})"


class SparseJLBlock(SparseJLOperator):
    """Kane-Nelson's block construction (see SparseJLOperator.draw).

    Parameters
    ----------
    rows, signs, k, independence
        As for `SparseJLOperator`.

    Examples
    --------
    >>> from pysketch.operators import SparseJLBlock, SparseJLOperator
    >>> S = SparseJLOperator.draw(1000, 64, 4, construction="block", random_state=0)
    >>> isinstance(S, SparseJLBlock), S.independence, S.to_sparse().shape
    (True, 4, (64, 1000))
    """

    kind = "sjlt_block"
    construction = "block"


class SparseJLGraph(SparseJLOperator):
    """Kane-Nelson's graph construction (see SparseJLOperator.draw).

    Parameters
    ----------
    rows, signs, k, independence
        As for `SparseJLOperator` (a graph draw records no independence).

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.operators import SparseJLGraph, SparseJLOperator
    >>> S = SparseJLOperator.draw(1000, 64, 4, construction="graph", random_state=0)
    >>> isinstance(S, SparseJLGraph), S
    (True, SparseJLGraph(d=1000, k=64, s=4))
    >>> bool((np.diff(np.sort(S.rows, axis=0), axis=0) > 0).all())  # s distinct rows per column
    True
    """

    kind = "sjlt_graph"
    construction = "graph"


OPERATORS.register("sjlt_block", SparseJLBlock)
OPERATORS.register("sjlt_graph", SparseJLGraph)


class FastJLOperator(FrequencyOperator):
    r"""The normalized fast JL transform of Ailon & Chazelle, Phi~ = P H D / sqrt(k) (k x d),
    as Omega = Phi~^T (Stausholm 2021, Sec. 5.1): records are zero-padded to d_p = 2^ceil(log2 d),
    D is a random +-1 diagonal, H the orthonormal Walsh-Hadamard transform (pysketch.fwht,
    the FFHT kernel), P a sparse k x d_p matrix whose entries are N(0, 1/q) with probability
    q and 0 otherwise. E ||Phi~ x||^2 = ||x||^2; the variance of ||Phi~ z||^2 has an
    exact formula, derived from Stausholm 2021, Sec. 5.1
    (`pysketch.distances.formulas.jl_variance('fjlt', ...)`), below
    (3/k)||z||^4 only for q >= 9 / (d_p + 9) (Lemma 7's missing condition: a warning below it).

    ``FastJLOperator.draw(d, k, q, random_state=None)``. Its sensitivities depend on the
    draw: `sensitivity(p)` computes max_j ||Phi~_{:, j}||_p exactly from P H (k fast
    transforms), never the nominal 1.

    Parameters
    ----------
    d : int
        Input dimension.
    signs : array_like of float, shape (d_p,)
        The +-1 diagonal D, of the padded length d_p = 2^ceil(log2 d).
    P : array_like or scipy.sparse matrix, shape (k, d_p)
        The sparse Gaussian matrix (its entries N(0, 1/q) where nonzero).
    q : float
        The probability of a nonzero entry of P, in (0, 1].

    Raises
    ------
    ValueError
        If `signs` is not of the padded length, P does not have d_p columns; from `draw`,
        when q is not in (0, 1]; from `sensitivity`, for p other than 1 and 2.
    TypeError
        If d is not an integer.

    Warns
    -----
    RuntimeWarning
        From `draw`, when q < 9 / (d_p + 9): the variance then exceeds Lemma 7's bound.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch.operators import FastJLOperator
    >>> op = FastJLOperator.draw(100, 32, 0.5, random_state=0)
    >>> op, op.padded_d, op.apply(np.ones((2, 100))).shape
    (FastJLOperator(d=100, k=32, q=0.5), 128, (2, 32))
    """

    kind = "fjlt"
    _m_name = "k"

    def __init__(self, d, signs, P, *, q):
        from scipy import sparse

        d = _check_positive_int(d, "d")
        signs = np.ascontiguousarray(signs, dtype=np.float64)
        dp = signs.size
        if dp & (dp - 1) or dp < d or (dp >= 2 * d and d > 1):
            raise ValueError(f"signs must have the padded length 2^ceil(log2 d) for d = {d}, got {dp}")
        P = sparse.csr_matrix(P, dtype=np.float64)
        if P.shape[1] != dp:
            raise ValueError(f"P must have {dp} columns, got shape {P.shape}")
        self.q = float(q)
        self.signs, self.P = signs, P
        self.padded_d = dp
        self._PT = P.T.tocsr()
        self._sens = {}
        super().__init__(d, P.shape[0], np.dtype(np.float64), None)
        # P's columns as fixed-width tables for the sparse JL kernel (Y = Z P^T / sqrt(k)):
        # column j's entries first, then zero entries (row 0, value 0) up to the widest column
        Pc = P.tocsc()
        Pc.sort_indices()
        counts = np.diff(Pc.indptr)
        width = max(1, int(counts.max()) if counts.size else 1)
        cols = np.repeat(np.arange(dp), counts)
        pos = np.arange(Pc.nnz) - np.repeat(Pc.indptr[:-1], counts)
        self._rows_t = np.zeros((width, dp), np.int32)
        self._vals_t = np.zeros((width, dp))
        self._rows_t[pos, cols] = Pc.indices
        self._vals_t[pos, cols] = Pc.data / math.sqrt(self.m)

    @classmethod
    def draw(cls, d, k, q, random_state=None):
        from scipy import sparse

        # per entry of the (k, d_p) draw of P: a float64 uniform, the mask, and up to q of the
        # entries' indices, values and sparse tables; the padded signs
        per = 64
        d = check_size(d, "d", nbytes=lambda v: _padded(v) * (per + 8), what="for the padded d_p = 2^ceil(log2 d)")
        dp = _padded(d)
        k = check_size(k, "k", nbytes=lambda v: v * dp * per, what=f"for the (k, d_p) draw of P, d_p = {dp}")
        if isinstance(q, (bool, np.bool_)) or not isinstance(q, numbers.Real) or not 0 < q <= 1:
            raise ValueError(f"q must be a number in (0, 1], got {q!r}")
        if q < 9.0 / (dp + 9.0):
            import warnings

            warnings.warn(f"q = {q:g} < 9 / (d_p + 9) = {9.0 / (dp + 9.0):.3g}: the FJLT's variance exceeds Lemma 7's "
                          "(3/k)||z||^4 (use the exact formula)", RuntimeWarning, stacklevel=2)
        rng = as_generator(random_state)
        signs = rng.choice(np.array([-1.0, 1.0]), size=dp)
        mask = rng.random((k, dp)) < q
        r, c = np.nonzero(mask)
        P = sparse.csr_matrix((rng.standard_normal(r.size) / math.sqrt(q), (r, c)), shape=(k, dp))
        return cls(d, signs, P, q=q)

    def _rotate(self, X):
        from .hadamard import fwht

        Z = np.zeros((X.shape[0], self.padded_d))
        Z[:, : self.d] = X * self.signs[: self.d]
        return fwht(Z, normalized=True, out=Z)

    def _apply(self, X, out):
        _core.sjlt_apply(self._rotate(X), self._rows_t, self._vals_t, out)

    def rotated(self, X):
        """H D x (padded) for the rows of X: where input-perturbation noise may be added
        (Note 7: noise after the orthonormal H D is distributed as noise before it)."""
        X2, single = self._rows(X, self.d, "X")
        Z = self._rotate(X2)
        return Z[0] if single else Z

    def project(self, Z):
        """P z / sqrt(k) for rotated (padded) rows Z."""
        Z = np.ascontiguousarray(np.atleast_2d(Z), dtype=np.float64)
        out = np.empty((Z.shape[0], self.m))
        _core.sjlt_apply(Z, self._rows_t, self._vals_t, out)
        return out

    def _adjoint(self, V, out):
        from .hadamard import fwht

        Z = np.ascontiguousarray((self._PT @ V.T).T / math.sqrt(self.m))
        fwht(Z, normalized=True, out=Z)
        out[...] = Z[:, : self.d] * self.signs[: self.d]

    def to_dense(self):
        return self.apply(np.eye(self.d))

    def sensitivity(self, p):
        """max_j ||Phi~_{:, j}||_p over the d input coordinates (exact, from P H)."""
        if p not in (1, 2):
            raise ValueError(f"p must be 1 or 2, got {p!r}")
        if p not in self._sens:
            from .hadamard import fwht

            PH = fwht(self.P.toarray(), normalized=True)[:, : self.d] / math.sqrt(self.m)
            A = np.abs(PH)
            self._sens[1] = float(A.sum(axis=0).max())
            self._sens[2] = float(np.sqrt((A * A).sum(axis=0)).max())
        return self._sens[p]

    def accumulate(self, feature, X, dither, acc0, acc1):
        P = np.empty((X.shape[0], self.m))
        self._apply(X, P)
        _core.accumulate_features(feature, P, dither, acc0, acc1)

    def _meta(self):
        return {"q": self.q}

    def _arrays(self):
        P = self.P.tocsr()
        return {"signs": self.signs, "P_data": P.data, "P_indices": P.indices.astype(np.int64),
                "P_indptr": P.indptr.astype(np.int64)}

    @classmethod
    def _from_state(cls, meta, arrays):
        from scipy import sparse

        dp = np.asarray(arrays["signs"]).size
        P = sparse.csr_matrix((arrays["P_data"], arrays["P_indices"], arrays["P_indptr"]), shape=(meta["m"], dp))
        return cls(meta["d"], arrays["signs"], P, q=meta["q"])

    def __repr__(self):
        return f"FastJLOperator(d={self.d}, k={self.m}, q={self.q:g})"


OPERATORS.register("fjlt", FastJLOperator)
