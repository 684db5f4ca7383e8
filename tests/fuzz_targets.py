"""Fuzz targets over pysketch's public surface (issue 21, part 1).

Every target is a hypothesis test body ``body(data)`` (``data`` a ``st.data()`` object)
registered in ``TARGETS`` under a name; ``make_test(name, examples)`` wraps it with the
settings. tests/test_fuzz.py runs every target with ``PYSKETCH_FUZZ_EXAMPLES`` examples (a
short run in CI); benchmarks/reports/fuzz_long.py runs them with many more.

The contract checked on every call: it either returns a result with the function's stated
property (finite, of the right shape and dtype; the same result for a non-contiguous,
negative-stride, Fortran-order or read-only input as for its contiguous float64 copy; the
input never modified; sketches additive), or raises ValueError / TypeError whose message
names the argument. Anything else (another exception type, a RuntimeWarning from numpy, a
NaN in a result, an input that is wrong by construction but accepted) fails the example.
Sizes are tiny (n <= 30 rows, d <= 8, m <= 32, k <= 3) so that an example costs
milliseconds.
"""

import collections
import contextlib
import importlib
import io
import math
import os
import re
import tempfile
import time
import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as _strategies
from hypothesis.strategies import SearchStrategy

import pysketch


class _MemoStrategies:
    """``hypothesis.strategies`` with its constructors memoised on their arguments.

    The targets build their strategies inline (``st.sampled_from((...))`` per example), and
    hypothesis validates each new strategy object on its first draw: a third of the cost of
    a cheap example. Here the same call returns the same object. Keys carry each leaf's
    type and repr, so that 1, 1.0, True, -0.0 and NaN stay distinct; arguments that are not
    plain values (lambdas, arrays, strategies not made here) are not memoised. The examples
    drawn are unchanged (measured: the same outcomes, seeded, 15% less CPU)."""

    _PLAIN = (type(None), bool, int, str, bytes, type)
    _UNMEMOISED = ("data", "composite", "builds", "register_type_strategy")

    def __init__(self):
        self._made = {}  # id -> strategy made here (kept alive, so that ids are not reused)
        self._cache = {}

    def _key(self, v):
        if isinstance(v, (float, complex, np.generic)):
            return (type(v), repr(v))
        if isinstance(v, self._PLAIN):
            return (type(v), v)
        if isinstance(v, (tuple, list)):
            return (type(v), tuple(self._key(x) for x in v))
        if isinstance(v, np.dtype):
            return (np.dtype, v.str)
        if isinstance(v, SearchStrategy) and id(v) in self._made:
            return (SearchStrategy, id(v))
        raise KeyError(v)

    def __getattr__(self, name):
        fn = getattr(_strategies, name)
        if name in self._UNMEMOISED or not callable(fn) or isinstance(fn, type):
            return fn

        def memoised(*args, **kwargs):
            try:
                key = (name, self._key(args), self._key(sorted(kwargs.items())))
            except KeyError:
                return fn(*args, **kwargs)
            made = self._cache.get(key)
            if made is None:
                made = self._cache[key] = fn(*args, **kwargs)
                self._made[id(made)] = made
            return made

        memoised.__name__ = name
        setattr(self, name, memoised)
        return memoised


st = _MemoStrategies()

try:
    import pandas as pd
except ImportError:  # pragma: no cover - pandas is optional
    pd = None
try:
    import dask
    import dask.array as da
except ImportError:  # pragma: no cover - dask is optional
    da = None

#: Examples per target (short CI run by default).
EXAMPLES = int(os.environ.get("PYSKETCH_FUZZ_EXAMPLES", "40"))
#: "1" (default): derandomized, the same examples every run (CI); "0": fresh random ones.
DERANDOMIZE = os.environ.get("PYSKETCH_FUZZ_DERANDOMIZE", "1") != "0"

N_MAX, D_MAX, M_MAX, K_MAX = 30, 8, 32, 3

TARGETS = {}
#: target name -> Counter of outcomes: "ok", "ValueError", "TypeError", ...
OUTCOMES = collections.defaultdict(collections.Counter)
#: target name -> [examples, slowest example seconds]
TIMING = collections.defaultdict(lambda: [0, 0.0])
_current = [None]


def target(name):
    """Register ``body(data)`` as the fuzz target `name`."""
    def register(body):
        assert name not in TARGETS, name
        TARGETS[name] = body
        return body
    return register


def make_test(name, examples=None, derandomize=None):
    """The hypothesis test of target `name` (call it with no argument to run it)."""
    body = TARGETS[name]

    def run(data):
        _current[0] = name
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # notices (BoundsWarning, PrivacyLeakWarning, ...)
            # numpy's overflow / invalid-value warnings are bugs (the library's own RuntimeWarnings,
            # such as a record rescaled onto data_norm, are notices)
            warnings.filterwarnings("error", message=".*encountered in", category=RuntimeWarning)
            # a complex value cast to real loses its imaginary part silently: a bug, never a notice
            warnings.filterwarnings("error", category=np.exceptions.ComplexWarning)
            with cheap_decoding():
                body(data)
        timing = TIMING[name]
        timing[0] += 1
        timing[1] = max(timing[1], time.perf_counter() - start)

    run.__name__ = f"fuzz_{name}"
    return settings(
        max_examples=EXAMPLES if examples is None else examples,
        database=None,
        deadline=None,
        derandomize=DERANDOMIZE if derandomize is None else derandomize,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )(given(st.data())(run))


# ----------------------------------------------------------------------------------------- checks


class Refused(Exception):
    """Marker result: the call raised an allowed ValueError / TypeError."""


def attempt(call, *names):
    """Run ``call()``; return (True, result), or (False, exc) when it raised ValueError or
    TypeError whose message names one of `names` (as a word). Any other exception, and an
    allowed one that names none of them, propagates / fails."""
    try:
        result = call()
    except (ValueError, TypeError) as exc:
        message = str(exc)
        if names and not any(re.search(rf"(?<![A-Za-z_]){re.escape(n)}(?![A-Za-z_])", message) for n in names):
            raise AssertionError(f"{type(exc).__name__} names none of {names}: {message!r}") from exc
        OUTCOMES[_current[0]][type(exc).__name__] += 1
        return False, exc
    OUTCOMES[_current[0]]["ok"] += 1
    return True, result


def must_refuse(call, *names):
    ok, result = attempt(call, *names)
    assert not ok, f"accepted an input that must be refused (naming {names}): got {type(result).__name__}"
    return result


def must_accept(call, *names):
    ok, result = attempt(call, *names)
    if not ok:
        raise AssertionError(f"refused a valid input: {type(result).__name__}: {result}")
    return result


def finite(x):
    """Every number in x (array, scalar, tuple or dict of them) is finite."""
    if isinstance(x, dict):
        return all(finite(v) for v in x.values())
    if isinstance(x, (tuple, list)):
        return all(finite(v) for v in x)
    a = np.asarray(x)
    if a.dtype.kind not in "biufc":
        return True
    return bool(np.isfinite(a).all())


def close(a, b, rtol=1e-9):
    """a and b hold the same numbers (up to the order of float64 sums)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind not in "biufc":
        return bool((a == b).all())
    mag = np.abs(b)
    scale = max(1.0, float(np.max(mag[np.isfinite(mag)], initial=0.0)))
    return bool(np.allclose(a, b, rtol=rtol, atol=rtol * scale, equal_nan=True))


def close_product(P, A, B, rtol):
    """P is A @ B to rtol of the computation's magnitudes, not of the result: a structured
    operator (R3, GR2, Fastfood) mixes every input coordinate through its Hadamard stages,
    so its rounding is relative to ||a||_1 max|B| even where the dense B has a zero (the
    10^5 run's operator_apply, example 3589: a float32 R3 product of x = (0.13, 7e4, ...)
    with a zero weight on the 7e4 gave -0.2459 for -0.2474; float32's ulp at 7e4 is 0.008)."""
    P, A, B = np.asarray(P), np.asarray(A, dtype=np.float64), np.asarray(B, dtype=np.float64)
    bound = np.abs(A) @ np.abs(B) + np.abs(A).sum(axis=1, keepdims=True) * np.abs(B).max(initial=0.0)
    return P.shape == bound.shape and bool(np.all(np.abs(P - A @ B) <= rtol * np.maximum(bound, 1.0)))


def snapshot(X):
    """What `unchanged` compares: a copy of an ndarray input (None otherwise)."""
    return (X.dtype, X.copy()) if isinstance(X, np.ndarray) else None


def unchanged(X, snap):
    if snap is None:
        return True
    dtype, copy = snap
    if X.dtype != dtype or X.shape != copy.shape:
        return False
    if X.dtype.kind in "fc":
        return bool(np.array_equal(X, copy, equal_nan=True))
    if X.dtype.kind == "O":  # the same objects (a NaN object is not == itself)
        return all(a is b or a == b for a, b in zip(X.flat, copy.flat))
    return bool((X == copy).all()) if X.size else True


# ----------------------------------------------------------------------------------------- inputs

SPECIALS = (math.nan, math.inf, -math.inf, 5e-324, -5e-324, 1e-310, 1e300, -1e300, 0.0, -0.0, 3e38, 7e4)
DTYPES = ("float64", "float32", "float16", "int64", "int32", "uint8", "int8", "bool", "complex128", "object",
          "str", "object_none")
LAYOUTS = ("C", "F", "strided", "negative", "readonly")


class Case:
    """A generated data input.

    X: the input as given; ref: its values as a C-contiguous float64 array (None when they
    are not real numbers: complex, None entries); shape_kind: 'ok' (n >= 1 rows of the
    asked number of columns), 'empty', '1d', '3d', 'columns', 'scalar'; meaning: 'numeric'
    (a real-number ndarray in any layout, a list or a data frame: must give the result of
    ref), 'loose' (object / str numbers, dask: may be refused), 'bad' (not real numbers)."""

    def __init__(self, X, ref, shape_kind, dtype, layout, container):
        self.X, self.ref, self.shape_kind = X, ref, shape_kind
        self.dtype, self.layout, self.container = dtype, layout, container
        self.finite = ref is not None and bool(np.isfinite(ref).all())
        if ref is None:
            self.meaning = "bad"
        elif dtype in ("object", "str", "object_none") or container == "dask":
            self.meaning = "loose"
        else:
            self.meaning = "numeric"

    @property
    def valid(self):
        """A 2-D array of n >= 1 finite real rows of the asked width."""
        return self.shape_kind == "ok" and self.meaning != "bad" and self.finite

    @property
    def must_fail(self):
        """Wrong by construction: wrong shape, not real numbers, or a NaN / infinity."""
        return self.shape_kind != "ok" or self.meaning == "bad" or not self.finite

    def __repr__(self):
        return (f"Case(shape_kind={self.shape_kind}, dtype={self.dtype}, layout={self.layout}, "
                f"container={self.container}, shape={np.shape(self.ref) if self.ref is not None else None}, "
                f"finite={self.finite})")


def _typed(base, dtype, rng):
    """base (float64) as `dtype`, with its float64 reference values (None: not real)."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dtype in ("float64", "float32", "float16"):
            T = base.astype(dtype)
            return T, T.astype(np.float64)
        if dtype in ("int64", "int32", "int8"):
            T = rng.integers(-5, 6, size=base.shape).astype(dtype)
            return T, T.astype(np.float64)
        if dtype == "uint8":
            T = rng.integers(0, 11, size=base.shape).astype(dtype)
            return T, T.astype(np.float64)
        if dtype == "bool":
            T = rng.random(base.shape) < 0.5
            return T, T.astype(np.float64)
        if dtype == "complex128":
            return base + 1j * rng.normal(size=base.shape), None
        if dtype == "object":
            return base.astype(object), base.copy()
        if dtype == "str":
            return base.astype(str), base.copy()
        # object array holding None somewhere
        T = base.astype(object)
        if T.size:
            T.flat[0] = None
            return T, None
        return T, base.copy()


def _layout(T, layout):
    if T.ndim == 0 or T.size == 0:
        return T
    if layout == "F":
        return np.asfortranarray(T)
    if layout == "strided":
        big = np.zeros(tuple(2 * s for s in T.shape), dtype=T.dtype)
        big[tuple(slice(None, None, 2) for _ in T.shape)] = T
        return big[tuple(slice(None, None, 2) for _ in T.shape)]
    if layout == "negative":
        return np.flip(np.flip(T).copy())
    if layout == "readonly":
        T = T.copy()
        T.flags.writeable = False
        return T
    return T


@st.composite
def data_cases(draw, d, *, n_max=N_MAX, n_min=1, special=True, weird_shapes=True, weird_dtypes=True,
               containers=True, scale=None):
    """A Case with rows of `d` columns (see Case)."""
    shape_kind = "ok"
    if weird_shapes:
        shape_kind = draw(st.sampled_from(("ok",) * 6 + ("empty", "1d", "3d", "columns", "scalar")))
    n = draw(st.integers(n_min, n_max))
    shape = {"ok": (n, d), "empty": (0, d), "1d": (d,), "3d": (n, d, 2), "columns": (n, d + 1),
             "scalar": ()}[shape_kind]
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if scale is None:
        scale = draw(st.sampled_from((1.0,) * 6 + (1e-3, 1e3, 1e-300, 1e300)))
    base = np.asarray(rng.normal(size=shape) * scale)
    if special and base.size and draw(st.integers(0, 4)) == 0:
        for _ in range(draw(st.integers(1, 2))):
            base.flat[draw(st.integers(0, base.size - 1))] = draw(st.sampled_from(SPECIALS))
    dtype = draw(st.sampled_from(DTYPES)) if weird_dtypes and draw(st.integers(0, 2)) == 0 else "float64"
    T, ref = _typed(base, dtype, rng)
    layout = draw(st.sampled_from(LAYOUTS))
    X = _layout(T, layout)
    container = "ndarray"
    if containers and shape_kind != "scalar":
        container = draw(st.sampled_from(("ndarray",) * 8 + ("list", "frame", "dask")))
        if container == "list":
            X = T.tolist()
        elif container == "frame" and pd is not None and T.ndim == 2 and dtype != "str":
            X = pd.DataFrame(T)
        elif container == "dask" and da is not None and T.ndim == 2 and T.size and dtype not in ("object", "str",
                                                                                             "object_none"):
            X = da.from_array(np.ascontiguousarray(T), chunks=(max(1, T.shape[0] // 2), T.shape[1]))
        else:
            container = "ndarray"
    if ref is not None:
        ref = np.ascontiguousarray(ref, dtype=np.float64)
    return Case(X, ref, shape_kind, dtype, layout, container)


def clean_rows(data, d, n_max=N_MAX, n_min=1, scale=1.0):
    """A plain valid float64 (n, d) array."""
    n = data.draw(st.integers(n_min, n_max), label="n")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    return np.random.default_rng(seed).normal(size=(n, d)) * scale


_CLOMPR = importlib.import_module("pysketch.decoders.clompr").clompr
_CORESET = importlib.import_module("pysketch.decoders.coreset").coreset
#: Few decoder iterations inside the estimators (the fuzzing checks validation and the
#: results' form, not the decoders' accuracy, which their own tests check).
CHEAP_CLOMPR = dict(step1_maxiter=8, step5_maxiter=8, final_maxiter=8, n_candidates=8)
CHEAP_CORESET = dict(n_candidates=8, step_maxiter=4, final_maxiter=8)


@contextlib.contextmanager
def cheap_decoding():
    """The estimators' decoders with few iterations, for the duration; restored after."""
    saved = dict(_CLOMPR.__kwdefaults__), dict(_CORESET.__kwdefaults__)
    _CLOMPR.__kwdefaults__.update(CHEAP_CLOMPR)
    _CORESET.__kwdefaults__.update(CHEAP_CORESET)
    try:
        yield
    finally:
        _CLOMPR.__kwdefaults__.update(saved[0])
        _CORESET.__kwdefaults__.update(saved[1])


@contextlib.contextmanager
def synchronous_dask():
    if da is None:
        yield
        return
    with dask.config.set(scheduler="synchronous"):
        yield


def run_data(call, case, names=("X",), empty_ok=False, one_d_ok=False, columns_ok=False, batches_ok=False):
    """call(X) on the case's input: the contract of a data argument. Returns (ok, result,
    ref_ok, ref_result) where ref_* is the call on the float64 contiguous copy (only when the
    case is numeric or loose and its shape is right)."""
    snap = snapshot(case.X)
    # a refusal of the data's scale names it as "the data"; of a NaN, by its row ("record 3 contains NaN")
    names = tuple(names) + ("data", "record")
    with synchronous_dask():
        ok, result = attempt(lambda: call(case.X), *names)
    assert unchanged(case.X, snap), "the input array was modified"
    if case.must_fail and case.shape_kind != "ok" and not (empty_ok and case.shape_kind == "empty") and not (
            one_d_ok and case.shape_kind == "1d") and not (columns_ok and case.shape_kind == "columns") and not (
            batches_ok and case.shape_kind == "3d" and case.container == "list"):  # a list of 2-D batches
        assert not ok, f"accepted a wrong shape: {case!r}"
    if case.meaning == "bad":
        assert not ok, f"accepted data that are not real numbers: {case!r}"
    if ok and case.ref is not None and not case.finite:
        raise AssertionError(f"accepted NaN or infinity: {case!r}")
    ref_ok, ref_result = False, None
    if case.ref is not None and (case.shape_kind == "ok" or empty_ok and case.shape_kind == "empty") and (
            ok or case.meaning == "numeric"):
        ref_ok, ref_result = attempt(lambda: call(case.ref.copy()), *names)
        if case.meaning == "numeric" and not (case.container == "list" and 0 in np.shape(case.ref)):
            assert ok == ref_ok, (f"the input and its float64 copy disagree: input {'accepted' if ok else result!r}, "
                                  f"copy {'accepted' if ref_ok else ref_result!r}; {case!r}")
    return ok, result, ref_ok, ref_result


# --------------------------------------------------------------------------- parameter strategies

BAD_NUMBERS = (0.0, -1.0, math.nan, math.inf, -math.inf, -0.0, 1e-320, 1e308, "1", None, True, [1.0], 1j)
BAD_INTS = (0, -1, 1.5, math.nan, "3", None, True, 2.0, np.int64(-3), 10**30)


#: epsilons at the edges of the documented range 2**-100 .. 2**100 (and just outside), where
#: a budget split or a calibration leaves the range: random floats rarely land there
EDGE_EPSILONS = (math.ldexp(1.0, -100), math.ldexp(1.0, -100) * 0.999, math.ldexp(1.0, -99) * 1.01, 1e-29,
                 1e-25, 1e-22, 1e-15, math.ldexp(1.0, 100), math.ldexp(1.0, 100) * 1.001, 1e25)


def epsilons():
    return st.one_of(st.sampled_from((1.0, 0.5, 3.0, 1e-3, 50.0)), st.sampled_from(BAD_NUMBERS),
                     st.sampled_from(EDGE_EPSILONS), st.floats(allow_nan=True, allow_infinity=True))


def deltas():
    return st.one_of(st.sampled_from((0.0, 1e-5, 0.1, 0.5)),
                     st.sampled_from((1.0, -1e-9, 1.5, math.nan, math.inf, -0.0, "0", None, 5e-324)),
                     st.floats(-0.5, 1.5))


def valid_epsilon(e):
    return isinstance(e, (int, float)) and not isinstance(e, bool) and math.isfinite(e) and e > 0


def in_range_epsilon(e):
    """A valid epsilon inside the documented range 2**-100 .. 2**100 (EPSILON_EXPONENT)."""
    return valid_epsilon(e) and math.ldexp(1.0, -100) <= e <= math.ldexp(1.0, 100)


def valid_delta(x, positive=False):
    return (isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
            and (0 < x < 1 if positive else 0 <= x < 1))


NEIGHBOURINGS = ("add_remove", "replace", "add-remove", "substitute", "", None, 1, "bounded", "Add_Remove")


def ints(lo, hi, bad=True):
    good = st.integers(lo, hi)
    return st.one_of(good, st.sampled_from(BAD_INTS)) if bad else good


def valid_int(v, lo, hi=None):
    return (isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and v >= lo
            and (hi is None or v <= hi) and v < 2**62)


def bounds_for(data, X, d, *, bad=True):
    """Bounds (lower, upper) containing X's rows, or (when drawn) a wrong pair: lo >= hi,
    non-finite, wrong length. Returns (bounds, good)."""
    kind = data.draw(st.sampled_from(("good",) * 5 + ("swap", "nan", "inf", "length", "equal")) if bad
                     else st.just("good"), label="bounds kind")
    lo = X.min(axis=0) - 1.0 if X is not None and X.size else -np.ones(d) * 3
    hi = X.max(axis=0) + 1.0 if X is not None and X.size else np.ones(d) * 3
    if kind == "good":
        return (lo, hi), True
    if kind == "swap":
        return (hi, lo), False
    if kind == "nan":
        lo = lo.copy()
        lo[0] = math.nan
        return (lo, hi), False
    if kind == "inf":
        hi = hi.copy()
        hi[-1] = math.inf
        return (lo, hi), False
    if kind == "equal":
        return (lo, lo.copy()), None  # may be widened (constant columns) or refused
    return (np.r_[lo, lo[:1]], hi), False  # d + 1 (length 1 would broadcast like a scalar)


# ------------------------------------------------------------------------------------ shared maps

_MAPS = {}


def feature_map(kind="complex", d=3, m=16, operator="dense", dtype=np.float64, seed=0):
    """A cached feature map (drawing operators costs more than the examples)."""
    key = (kind, d, m, operator, np.dtype(dtype).name, seed)
    if key not in _MAPS:
        law = None
        if kind == "quadratic":
            law = pysketch.QuadraticGaussianLaw()
        _MAPS[key] = pysketch.make_feature_map(d, m, kind, operator=operator, law=law, random_state=seed,
                                               dtype=dtype)
    return _MAPS[key]


def draw_map(data, kinds=("complex", "real", "quantized", "quadratic")):
    kind = data.draw(st.sampled_from(kinds), label="kind")
    d = data.draw(st.integers(1, 6), label="d")
    m = data.draw(st.sampled_from((1, 2, 8, 16, 32)), label="m")
    op = data.draw(st.sampled_from(("dense", "dense", "r3", "fastfood")), label="operator")
    dtype = data.draw(st.sampled_from((np.float64, np.float32)), label="dtype")
    return feature_map(kind, d, m, op, dtype)


def rtol_of(fm):
    return 1e-9 if fm.input_dtype == np.float64 else 1e-4


def rtol_between_paths(fm, X):
    """Tolerance between two computations of the same features by different kernels (the
    fused sketch and the transform). float32 maps hold a phase theta = w.x to one float32
    ulp, |theta| 2**-24 (a phase of 8.6e4 is known to 0.005 rad), and either kernel may
    round it differently: the bound grows with the largest phase and with the rows summed."""
    if fm.input_dtype == np.float64 or getattr(fm, "operator", None) is None:
        return 10 * rtol_of(fm)
    phase = float(np.abs(fm.operator.apply(np.asarray(X, dtype=np.float64))).max(initial=0.0))
    return max(10 * rtol_of(fm), 4.0 * math.ldexp(phase, -24) * max(1, np.shape(X)[0]))




# =========================================================================================
# core: fwht, buffers, runtime, laws, operators
# =========================================================================================


@target("fwht")
def _fwht(data):
    log_n = data.draw(st.integers(0, 6), label="log2 n")
    rows = data.draw(st.sampled_from((None, 1, 3)), label="rows")
    n = 2**log_n
    if data.draw(st.integers(0, 5)) == 0:
        n += data.draw(st.sampled_from((1, -1, 3)))  # not a power of two
    case = data.draw(data_cases(max(n, 0), n_max=3, weird_shapes=False, containers=False), label="x")
    X = case.X if rows is not None else (case.X[0] if np.ndim(case.X) == 2 else case.X)
    ref = None if case.ref is None else (case.ref if rows is not None else case.ref[0])
    normalized = data.draw(st.booleans(), label="normalized")
    snap = snapshot(X)
    with warnings.catch_warnings():
        # fwht's own, documented like numpy's: a finite input whose transform overflows the
        # dtype gives infinity with "overflow encountered in fwht" (the 10^5 run's fwht,
        # example 8638: float32 values near 3e38, n = 2)
        warnings.filterwarnings("ignore", message="overflow encountered in fwht", category=RuntimeWarning)
        ok, out = attempt(lambda: pysketch.fwht(X, normalized=normalized), "x")
    assert unchanged(X, snap)
    power = n >= 1 and (n & (n - 1)) == 0
    if not power or case.meaning == "bad" or not np.isfinite(ref).all():
        assert not ok, case
        return
    if case.meaning == "numeric" and case.dtype in ("float64", "float32"):
        assert ok, out
    if ok:
        overflow = np.abs(ref).max(initial=0.0) * n > float(np.finfo(out.dtype).max) / 2
        assert out.shape == np.shape(X) and (finite(out) or overflow or np.abs(ref).max() > 1e290)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="overflow encountered in fwht", category=RuntimeWarning)
            clean = pysketch.fwht(np.ascontiguousarray(ref, dtype=out.dtype), normalized=normalized)
        assert close(out, clean, 1e-12 if out.dtype == np.float64 else 1e-5)
        if out.dtype == np.float64 and np.abs(ref).max(initial=0) < 1e100:
            back = pysketch.fwht(out, normalized=normalized)
            assert close(back, ref * (1.0 if normalized else n), 1e-9)


@target("empty_aligned")
def _empty_aligned(data):
    shape = data.draw(st.one_of(st.integers(-2, 40), st.tuples(st.integers(-1, 5), st.integers(0, 5)),
                                st.sampled_from((1.5, "3", None, (2, "a"), 10**20))), label="shape")
    dtype = data.draw(st.sampled_from((np.float64, np.float32, np.complex128, np.int8, "float16", object, "x",
                                       None)), label="dtype")
    alignment = data.draw(st.sampled_from((64, 16, 1, 0, -64, 3, 48, 4096, 1.5)), label="alignment")
    ok, out = attempt(lambda: pysketch.empty_aligned(shape, dtype, alignment=alignment), "shape", "dtype",
                      "alignment")
    if ok:
        want = (shape,) if isinstance(shape, int) else tuple(shape)
        assert out.shape == want and out.dtype == np.dtype(dtype)
        if out.size:
            assert out.ctypes.data % alignment == 0
            assert out.flags.c_contiguous and out.flags.writeable


@target("runtime_settings")
def _runtime(data):
    before_threads, before_simd = pysketch.get_num_threads(), pysketch.simd_level()
    try:
        t = data.draw(st.one_of(st.integers(-2, 4), st.sampled_from(BAD_INTS)), label="num_threads")
        ok, _ = attempt(lambda: pysketch.set_num_threads(t), "num_threads")
        if ok:
            assert pysketch.get_num_threads() >= 1
        else:
            assert pysketch.get_num_threads() == before_threads
        level = data.draw(st.sampled_from(("scalar", "sse2", "avx2", "avx512", "best", "AVX2", "", None, 3, "neon",
                                           pysketch.max_simd_level())), label="level")
        ok, _ = attempt(lambda: pysketch.set_simd_level(level), "level")
        if not ok:
            assert pysketch.simd_level() == before_simd
        assert isinstance(pysketch.simd_level(), str)
    finally:
        pysketch.set_num_threads(before_threads)
        pysketch.set_simd_level(before_simd)


LAW_CLASSES = ("GaussianLaw", "AdaptedRadiusLaw", "FoldedGaussianLaw", "LogUniformLaw", "QuadraticGaussianLaw",
               "OrthonormalBasesLaw")


@target("laws")
def _laws(data):
    name = data.draw(st.sampled_from(LAW_CLASSES + ("make_law",)), label="law")
    sigma = data.draw(st.one_of(st.sampled_from((1.0, 0.3, 5.0)), st.sampled_from(BAD_NUMBERS)), label="sigma")
    if name == "make_law":
        lname = data.draw(st.sampled_from(("gaussian", "adapted_radius", "folded_gaussian", "Gaussian", "x", 1,
                                           pysketch.GaussianLaw(1.0))), label="law name")
        if isinstance(lname, pysketch.FrequencyLaw):
            sigma = data.draw(st.sampled_from((None, 1.0)))
        ok, law = attempt(lambda: pysketch.make_law(lname, sigma), "law", "sigma")
    elif name in ("QuadraticGaussianLaw", "OrthonormalBasesLaw"):
        ok, law = attempt(lambda: getattr(pysketch, name)())
    elif name == "LogUniformLaw":
        low = data.draw(st.sampled_from((0.05, 0.0, -1.0, math.nan, 30.0)), label="low")
        ok, law = attempt(lambda: pysketch.LogUniformLaw(sigma, low=low), "sigma", "low", "high")
        if ok:
            assert 0 < low < 20.0
    else:
        ok, law = attempt(lambda: getattr(pysketch, name)(sigma), "sigma")
    if ok and name != "make_law" and name not in ("QuadraticGaussianLaw", "OrthonormalBasesLaw"):
        assert valid_epsilon(sigma), f"{name} accepted sigma={sigma!r}"
    if not ok:
        return
    d = data.draw(ints(1, 6), label="d")
    m = data.draw(ints(1, M_MAX), label="m")
    ok, omega = attempt(lambda: law.sample(d, m, random_state=0), "d", "m")
    if ok:
        assert valid_int(d, 1) and valid_int(m, 1)
        assert omega.shape == (d, m) and omega.dtype == np.float64 and finite(omega)
        assert law.from_dict(law.to_dict()).to_dict() == law.to_dict()
    else:
        assert not (valid_int(d, 1) and valid_int(m, 1)) or isinstance(law, pysketch.OrthonormalBasesLaw)


def _float_dtype(dtype):
    try:
        return np.dtype(dtype) in (np.float32, np.float64)
    except TypeError:
        return False


@target("make_operator")
def _make_operator(data):
    d = data.draw(ints(1, D_MAX), label="d")
    m = data.draw(ints(1, M_MAX), label="m")
    kind = data.draw(st.sampled_from(("auto", "dense", "r3", "gr2", "fastfood", "R3", "", None, "sparse")),
                     label="kind")
    dtype = data.draw(st.sampled_from((np.float64, np.float32, "float64", np.float16, np.int64, complex, "x")),
                      label="dtype")
    law = data.draw(st.sampled_from((None, pysketch.GaussianLaw(2.0), pysketch.AdaptedRadiusLaw(1.0), "gaussian", 1.0)),
                    label="law")
    ok, op = attempt(lambda: pysketch.make_operator(d, m, kind, law, random_state=1, dtype=dtype), "d", "m", "kind",
                     "dtype", "law")
    good = (valid_int(d, 1) and valid_int(m, 1) and kind in ("auto", "dense", "r3", "gr2", "fastfood")
            and _float_dtype(dtype) and (law is None or isinstance(law, pysketch.FrequencyLaw)))
    assert ok == good, (ok, op)
    if ok:
        assert (op.d, op.m) == (d, m) and op.dtype == np.dtype(dtype)
        W = op.to_dense()
        assert W.shape == (d, m) and finite(W)
        assert finite(op.column_norm_bound()) and finite(op.gram_norm_bound())


@target("operator_apply")
def _operator_apply(data):
    d = data.draw(st.integers(1, D_MAX), label="d")
    m = data.draw(st.sampled_from((1, 5, 16, 32)), label="m")
    kind = data.draw(st.sampled_from(("dense", "r3", "gr2", "fastfood")), label="kind")
    dtype = data.draw(st.sampled_from((np.float64, np.float32)), label="dtype")
    op = feature_map("complex", d, m, kind, dtype).operator
    case = data.draw(data_cases(d), label="X")
    W = op.to_dense().astype(np.float64)
    ok, T, ref_ok, T_ref = run_data(op.apply, case, empty_ok=True, one_d_ok=True)
    single = np.ndim(case.X) == 1 and case.shape_kind == "1d"
    if ok:
        assert T.dtype == op.dtype
        assert T.shape == ((m,) if single else (np.shape(case.ref)[0], m))
        if case.shape_kind == "ok" and np.abs(case.ref).max(initial=0.0) < 1e30:
            assert finite(T)
            tol = 1e-9 if dtype == np.float64 else 1e-5
            assert close_product(T, case.ref, W, tol)
        if ref_ok:
            assert close(T, T_ref, 1e-12 if dtype == np.float64 else 1e-6)
    V = clean_rows(data, m, n_max=4)
    ok, A = attempt(lambda: op.adjoint(V), "V")
    if ok:
        assert A.shape == (V.shape[0], d) and close_product(A, V, W.T, 1e-9 if dtype == np.float64 else 1e-5)


@target("dense_operator")
def _dense_operator(data):
    d = data.draw(st.integers(1, D_MAX), label="d")
    m = data.draw(st.integers(1, M_MAX), label="m")
    case = data.draw(data_cases(m, n_max=d, n_min=d, containers=False), label="omega")
    dtype = data.draw(st.sampled_from((None, np.float64, np.float32, np.int32)), label="dtype")
    snap = snapshot(case.X)
    ok, op = attempt(lambda: pysketch.DenseOperator(case.X, dtype=dtype), "omega", "dtype")
    assert unchanged(case.X, snap)
    if case.meaning == "bad" or not case.finite or case.shape_kind in ("empty", "3d", "scalar"):
        assert not ok, case
    if ok:
        W = op.to_dense()
        assert W.ndim == 2 and finite(W) and op.dtype in (np.float32, np.float64)
        if op.dtype == np.float64:
            assert np.array_equal(W, np.asarray(case.ref, dtype=np.float64).reshape(W.shape))


# =========================================================================================
# feature maps and sketches
# =========================================================================================


@target("make_feature_map")
def _make_feature_map(data):
    d = data.draw(ints(1, D_MAX), label="d")
    m = data.draw(ints(1, M_MAX), label="m")
    kind = data.draw(st.sampled_from(("complex", "real", "quantized", "quadratic", "Complex", "hist", None, 3)),
                     label="kind")
    sigma = data.draw(st.one_of(st.just(1.0), st.sampled_from(BAD_NUMBERS)), label="sigma")
    dither = data.draw(st.sampled_from((None, "random", "none", "zeros", "nan", "short")), label="dither")
    if dither == "zeros" and valid_int(m, 1):
        dither = np.zeros(m)
    elif dither == "nan" and valid_int(m, 1):
        dither = np.full(m, math.nan)
    elif dither == "short":
        dither = np.zeros(2 * M_MAX + 1)
    law = pysketch.QuadraticGaussianLaw() if kind == "quadratic" else None
    ok, fm = attempt(lambda: pysketch.make_feature_map(d, m, kind, law=law, sigma=sigma, dither=dither,
                                                       random_state=0), "d", "m", "kind", "sigma", "dither", "law")
    if ok:
        assert valid_int(d, 1) and valid_int(m, 1)
        assert kind in ("complex", "real", "quantized", "quadratic")
        if kind != "quadratic":
            assert valid_epsilon(sigma), f"sigma={sigma!r} accepted"
        if isinstance(dither, np.ndarray):
            assert finite(dither) and dither.shape == (m,)
        assert (fm.d, fm.m) == (d, m)
        assert finite(fm.operator.to_dense())


@target("feature_map_class")
def _feature_map_class(data):
    op = feature_map("complex", 3, 8).operator
    kind = data.draw(st.sampled_from(("complex", "real", "quantized", "quadratic", "x", None)), label="kind")
    dither = data.draw(st.sampled_from((None, "random", np.zeros(8), np.zeros(7), np.full(8, math.inf), "bad",
                                        [0.0] * 8, np.zeros((8, 1)))), label="dither")
    operator = data.draw(st.sampled_from((op, op.to_dense(), None, "dense")), label="operator")
    ok, fm = attempt(lambda: pysketch.FeatureMap(operator, kind, dither, random_state=0), "operator", "kind",
                     "dither")
    if ok:
        assert operator is op and kind in ("complex", "real", "quantized", "quadratic")
        assert fm.kind == kind
        if fm.dither is not None:
            assert fm.dither.shape == (8,) and finite(fm.dither)


@target("transform")
def _transform(data):
    fm = draw_map(data)
    case = data.draw(data_cases(fm.d), label="X")
    ok, F, ref_ok, F_ref = run_data(fm.transform, case, empty_ok=True, one_d_ok=True)
    if case.shape_kind == "1d" and case.meaning == "numeric" and case.finite and case.container == "ndarray" and (
            np.abs(case.ref).max() < 1e30):  # (a float32 map refuses values beyond float32: the data's scale)
        assert ok, F  # one record of shape (d,)
    if ok:
        n = np.shape(case.ref)[0] if case.shape_kind in ("ok", "empty") else None
        assert F.shape == ((fm.output_dim,) if n is None else (n, fm.output_dim))
        if np.abs(case.ref).max(initial=0.0) < 1e30:
            assert finite(F), "NaN/inf features of finite records"
        if ref_ok:
            assert close(F, F_ref, rtol_of(fm))


def _sketch_property(fm, case, sk):
    rows = np.shape(case.ref)[0] * (np.shape(case.ref)[1] if case.shape_kind == "3d" else 1)  # 3d: batches
    assert isinstance(sk, pysketch.Sketch) and sk.count == rows
    assert sk.sum.shape == (fm.output_dim,) and sk.sum.dtype == fm.sum_dtype
    if np.abs(case.ref).max(initial=0.0) < 1e15:
        assert finite(sk.sums)
        if fm.kind in ("complex", "quantized", "real"):
            bound = sk.count * (2.0 if fm.kind == "real" else 1.0) + 1e-6 * sk.count
            assert np.abs(sk.sum).max() <= bound


@target("sketch")
def _sketch(data):
    fm = draw_map(data)
    case = data.draw(data_cases(fm.d), label="X")
    batch_size = data.draw(st.sampled_from((None, None, 1, 7, 0, -1, 2.5)), label="batch_size")
    ok, sk, ref_ok, sk_ref = run_data(lambda X: fm.sketch(X, batch_size=batch_size), case,
                                      names=("X", "batch", "record", "batch_size"), empty_ok=True,
                                      batches_ok=True)  # sketch takes an iterable of 2-D batches
    if ok:
        assert valid_int(batch_size, 1) or batch_size is None
        _sketch_property(fm, case, sk)
        if ref_ok:
            assert sk.count == sk_ref.count
            assert all(close(sk.sums[k], sk_ref.sums[k], rtol_of(fm)) for k in sk.sums)
            if case.ref.size and np.abs(case.ref).max() < 1e15:  # the transform's sum
                F = fm.transform(case.ref)
                assert close(sk.sum, F.sum(axis=0), rtol_between_paths(fm, case.ref))


@target("sketch_tuple_and_iterables")
def _sketch_tuple(data):
    """A tuple (X, something) must not be taken for batches of records (issue 21: a box
    (lo, hi) passed along with X was sketched as 2 extra records)."""
    fm = draw_map(data, kinds=("complex", "real"))
    X = clean_rows(data, fm.d)
    other = data.draw(st.sampled_from(("box", "y", "X", "list_of_X", "generator", "row_list")), label="form")
    lo, hi = X.min(0) - 1, X.max(0) + 1
    full = fm.sketch(X)
    if other == "box":
        arg = (X, (lo, hi))
    elif other == "y":
        arg = (X, np.zeros(X.shape[0]))
    elif other == "X":
        arg = (X, X)
    elif other == "list_of_X":
        arg = [X[:1], X[1:]]
    elif other == "generator":
        arg = (b for b in (X[:2], X[2:]))
    else:
        arg = [list(r) for r in X]
    ok, sk = attempt(lambda: fm.sketch(arg), "X", "batch", "record")
    if other in ("list_of_X", "generator", "row_list"):
        assert ok, sk
    if other == "box" or other == "y":
        assert not ok, "a tuple (X, bounds) or (X, y) was taken for records"
    if ok:
        want = fm.sketch(np.concatenate([X, X])) if other == "X" else full
        assert sk.count == want.count and close(sk.sum, want.sum, rtol_of(fm))


@target("sketch_additivity")
def _sketch_additivity(data):
    fm = draw_map(data)
    X = clean_rows(data, fm.d, n_min=2, scale=data.draw(st.sampled_from((1.0, 1e-3, 1e3))))
    cut = data.draw(st.integers(0, X.shape[0]), label="cut")
    a, b = fm.sketch(X[:cut]), fm.sketch(X[cut:])
    whole = fm.sketch(X)
    merged = a + b
    assert merged.count == whole.count == X.shape[0]
    assert all(close(merged.sums[k], whole.sums[k], rtol_of(fm)) for k in whole.sums)
    assert sum([a, b]) == merged
    acc = pysketch.SketchAccumulator(fm, buffer_rows=data.draw(st.integers(1, 8), label="buffer_rows"))
    for start in range(0, X.shape[0], 3):
        acc.update(X[start:start + 3])
    s = acc.sketch()
    assert s.count == whole.count and all(close(s.sums[k], whole.sums[k], rtol_of(fm)) for k in whole.sums)
    other = feature_map(fm.kind, fm.d, fm.m, "dense", fm.input_dtype, seed=1)
    if other is not fm:
        must_refuse(lambda: a + other.sketch(X), "map", "maps", "feature_map")


@target("sketch_subsampled")
def _sketch_subsampled(data):
    fm = draw_map(data)
    X = clean_rows(data, fm.d)
    r = data.draw(st.one_of(st.integers(-1, fm.m + 1), st.sampled_from((None, 1.0, True, "2"))), label="r")
    scheme = data.draw(st.sampled_from(("uniform", "bernoulli", "blocks", "Uniform", None)), label="scheme")
    seed = data.draw(st.sampled_from((0, 1, None, -1, "a", 2**70)), label="random_state")
    ok, sk = attempt(lambda: fm.sketch_subsampled(X, r, scheme=scheme, random_state=seed), "r", "scheme",
                     "random_state", "seed")
    if ok:
        assert valid_int(r, 1, fm.m) and scheme in ("uniform", "bernoulli", "blocks")
        assert sk.count == X.shape[0] and sk.subsampling["r"] == r and finite(sk.sums)
        if seed is not None:
            again = fm.sketch_subsampled(X, r, scheme=scheme, random_state=seed)
            assert again == sk  # a seed gives the same masks
        if r == fm.m and scheme == "uniform":
            assert close(sk.sum, fm.sketch(X).sum, rtol_of(fm))


@target("accumulator")
def _accumulator(data):
    fm = draw_map(data)
    kw = {}
    for name, values in (("batch_size", (None, 1, 4, 0, -2, 1.0, True)), ("buffer_rows", (None, 1, 5, 0, "3")),
                         ("subsample_r", (None, None, 1, fm.m, fm.m + 1, 0)),
                         ("subsample_scheme", ("uniform", "bernoulli", "x")), ("random_state", (None, 0))):
        kw[name] = data.draw(st.sampled_from(values), label=name)
    ok, acc = attempt(lambda: pysketch.SketchAccumulator(fm, **kw), *kw, "r", "scheme", "subsample_scheme")
    if not ok:
        return
    total = 0
    parts = []
    for _ in range(data.draw(st.integers(1, 3), label="updates")):
        case = data.draw(data_cases(fm.d, n_max=8), label="update")
        count = acc.count
        snap = snapshot(case.X)
        with synchronous_dask():
            ok, _ = attempt(lambda: acc.update(case.X), "X", "batch", "record")
        assert unchanged(case.X, snap)
        batches = case.shape_kind == "3d" and case.container == "list"  # a list of 2-D batches (documented)
        if case.must_fail and case.shape_kind != "empty" and not batches:
            assert not ok, case
        if ok:
            rows = case.ref.reshape(-1, case.ref.shape[-1]) if batches else case.ref
            total += rows.shape[0]
            parts.append(rows)
        else:
            assert acc.count == count, "a refused update changed the count"
    ok, sk = attempt(acc.sketch, "data")  # sums of huge records may overflow: refused about the data's scale
    if not ok:
        assert any(np.abs(p).max() > 1e30 for p in parts if p.size), sk  # phases or squares overflowed
        return
    assert sk.count == total == acc.count
    assert finite(sk.sums) or any(np.abs(p).max() > 1e15 for p in parts if p.size)
    if kw["subsample_r"] is None and parts:
        want = fm.sketch(np.concatenate(parts))
        assert all(close(sk.sums[k], want.sums[k], rtol_of(fm)) for k in want.sums)


@target("sketch_object")
def _sketch_object(data):
    fm = draw_map(data, kinds=("complex", "real", "quadratic"))
    X = clean_rows(data, fm.d)
    good = fm.sketch(X)
    form = data.draw(st.sampled_from(("ok", "short", "nan", "real_for_complex", "2d", "list", "str")), label="sum")
    s = {"ok": good.sum, "short": good.sum[:-1], "nan": np.where(np.arange(good.sum.size) == 0, np.nan, good.sum),
         "real_for_complex": good.sum.real, "2d": good.sum[None], "list": list(good.sum),
         "str": np.array(["a"] * good.sum.size)}[form]
    count = data.draw(st.sampled_from((good.count, 0, -1, 1.5, True, None, np.int64(3))), label="count")
    ok, sk = attempt(lambda: pysketch.Sketch(fm, s, count), "sum", "count")
    if ok:
        assert valid_int(count, 0)
        assert form in ("ok", "list", "real_for_complex")  # real numbers cast safely to a complex sum
        assert sk.sum.shape == good.sum.shape and finite(sk.sum)
        okm, mean = attempt(sk.mean, "count")
        assert okm == (count > 0)
        if okm:
            assert close(mean * count, s)
    must_refuse(lambda: pysketch.Sketch("map", good.sum, 1), "feature_map")


@target("sensitivity")
def _sensitivity(data):
    from pysketch.privacy import count_sensitivity, sum_sensitivity

    fm = draw_map(data)
    norm = data.draw(st.sampled_from((1, 2, 0, 3, 1.0, "2", None, math.inf)), label="norm")
    nb = data.draw(st.sampled_from(NEIGHBOURINGS), label="neighbouring")
    r = data.draw(st.sampled_from((None, 1, fm.m, fm.m + 1, 0, 1.5)), label="features_per_record")
    data_norm = data.draw(st.sampled_from((None, 1.0, 0.0, -1.0, math.nan, math.inf, 1e300)), label="data_norm")
    for f in (lambda: fm.sensitivity(norm, nb, features_per_record=r, data_norm=data_norm),
              lambda: sum_sensitivity(fm, norm, nb, features_per_record=r, data_norm=data_norm)):
        ok, s = attempt(f, "norm", "neighbouring", "features_per_record", "data_norm")
        if ok:
            assert norm in (1, 2) and nb in ("add_remove", "replace") and (r is None or valid_int(r, 1, fm.m))
            assert isinstance(s, float) and math.isfinite(s) and s > 0, s
    ok, c = attempt(lambda: count_sensitivity(nb), "neighbouring")
    assert ok == (nb in ("add_remove", "replace"))
    if ok:
        assert c in (0.0, 1.0) and (c == 1.0) == (nb == "add_remove")


@target("box_maps")
def _box_maps(data):
    from pysketch.features import box_map_kinds, make_box_map

    d = data.draw(st.integers(1, 4), label="d")
    X = clean_rows(data, d)
    (lo, hi), good = bounds_for(data, X, d)
    kind = data.draw(st.sampled_from(tuple(box_map_kinds()) + ("box", None)), label="kind")
    ok, fm = attempt(lambda: make_box_map(kind, lo, hi, random_state=0), "kind", "lower", "upper", "bounds")
    if good is False:
        assert not ok, "a wrong box was accepted"
    if not ok:
        return
    case = data.draw(data_cases(d, n_max=10), label="X")
    ok, sk, ref_ok, sk_ref = run_data(fm.sketch, case, names=("X", "batch", "record"), empty_ok=True,
                                      batches_ok=True)  # sketch takes an iterable of 2-D batches
    if ok:
        rows = np.shape(case.ref)[0] * (np.shape(case.ref)[1] if case.shape_kind == "3d" else 1)  # 3d: batches
        assert sk.count == rows and finite(sk.sums)
        if ref_ok:
            assert all(close(sk.sums[k], sk_ref.sums[k]) for k in sk.sums)


# ----------------------------------------------------------------------------- huge sizes (issue 33)

#: The memory check_size sees during the huge_sizes target: every size it accepts is small.
SIZE_MEMORY = 8 << 20


@contextlib.contextmanager
def memory_cap(nbytes=SIZE_MEMORY, headroom=2 << 30):
    """check_size sees a machine of `nbytes` of memory, and (where the system has the limit,
    Linux) the address space is capped `headroom` bytes above this process's: a size that
    reached numpy unchecked fails at once (MemoryError, an example's failure) instead of
    paging the machine. Both restored after (tests/test_sizes.py uses it too)."""
    checks = importlib.import_module("pysketch._checks")
    saved, limits = checks.total_memory, None
    checks.total_memory = lambda: nbytes
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as f:
            cap = int(f.read().split()[0]) * resource.getpagesize() + headroom
        resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
        limits = (soft, hard)
    except (ImportError, OSError, ValueError):  # no such limit here: the memory check alone
        pass
    try:
        yield
    finally:
        if limits is not None:
            resource.setrlimit(resource.RLIMIT_AS, limits)
        checks.total_memory = saved


def sizes():
    """Size arguments across 0..10^15 and beyond int64, negative, float, bool, numpy ints."""
    big = st.integers(0, 10**15)
    return st.one_of(big, st.integers(0, 64), st.integers(-10**15, -1), st.integers(0, 62).map(lambda e: 2**e),
                     st.integers(0, 15).map(lambda e: 10**e),
                     st.sampled_from((2**31 - 1, 2**31, 2**32 + 1, 2**53 + 1, 2**63 - 1, 2**63, 10**30)),
                     big.map(np.int64), st.integers(0, 2**31 - 1).map(np.int32),
                     st.floats(allow_nan=True, allow_infinity=True), st.sampled_from((1e12, 2.0, 0.5, -0.0)),
                     st.booleans(), st.sampled_from((np.True_, "8", b"8", 8j)))


_SX = np.random.default_rng(33).uniform(-1.0, 1.0, size=(6, 2))
_SY = _SX.sum(axis=1)
_LO, _HI = -np.ones(2), np.ones(2)


def _size_calls():
    """(label, the argument, its smallest value, call(v), ok(result, v): the property of a
    result[, the memory check_size sees]) of the entry points whose size arguments reach an
    allocation. A smaller memory where the time grows faster than the memory: the exact
    noise samplers (some 25 us a value) and a Gram matrix's eigendecomposition."""
    from pysketch import datasets
    from pysketch.baselines import laplace_histogram
    from pysketch.cluster import weighted_kmeans
    from pysketch.decoders import mixture_kmeans
    from pysketch.distances import PrivateJLTransformer
    from pysketch.features import make_box_map
    from pysketch.m2m import M2M, Domain
    from pysketch.operators import FastJLOperator, SparseJLOperator
    from pysketch.rfm import PrivateRFRegressor, RandomFeatures

    fm = feature_map("complex", 2, 8)
    hist = make_box_map("hist", _LO, _HI, n_bins=2).sketch(_SX)
    return (
        ("make_operator m", "m", 1, lambda v: pysketch.make_operator(2, v, "dense", random_state=0),
         lambda r, v: (r.d, r.m) == (2, v) and finite(r.omega)),
        ("make_operator d", "d", 1, lambda v: pysketch.make_operator(v, 3, random_state=0),
         lambda r, v: (r.d, r.m) == (v, 3)),
        ("fastfood m", "m", 1, lambda v: pysketch.StructuredOperator.draw(4, v, "fastfood", random_state=0),
         lambda r, v: r.m == v and r.radii.shape == (v,)),
        ("sjlt k", "k", 1, lambda v: SparseJLOperator.draw(4, v, 1, random_state=0),
         lambda r, v: r.m == v and 0 <= r.rows.min() and r.rows.max() < v),
        ("sjlt d", "d", 1, lambda v: SparseJLOperator.draw(v, 4, 2, random_state=0),
         lambda r, v: r.d == v and r.rows.shape == (2, v)),
        ("sjlt graph s", "s", 1, lambda v: SparseJLOperator.draw(3, 64, v, construction="graph", random_state=0),
         lambda r, v: r.s == v and all(len(set(r.rows[:, j])) == v for j in range(3))),
        ("fjlt k", "k", 1, lambda v: FastJLOperator.draw(4, v, 1.0, random_state=0), lambda r, v: r.m == v),
        ("law sample m", "m", 1, lambda v: pysketch.GaussianLaw(1.0).sample(2, v, 0),
         lambda r, v: r.shape == (2, v) and finite(r)),
        ("law radii m", "m", 1, lambda v: pysketch.AdaptedRadiusLaw(1.0).radii(v, 2, 0),
         lambda r, v: r.shape == (v,) and finite(r) and (r >= 0).all()),
        ("feature map m", "m", 1, lambda v: pysketch.make_feature_map(2, v, random_state=0).transform(_SX),
         lambda r, v: r.shape == (6, v) and close(np.abs(r), np.ones((6, v)))),
        ("hist n_bins", "n_bins", 1, lambda v: make_box_map("hist", _LO, _HI, n_bins=v).sketch(_SX),
         lambda r, v: r.sum.shape == (2 * v,) and r.sum.sum() == 12),
        ("grid n_bins", "n_bins", 1, lambda v: make_box_map("grid", _LO, _HI, n_bins=v).sketch(_SX),
         lambda r, v: r.sum.shape == (v * v,) and r.sum.sum() == 6),
        ("race n_hashes", "n_hashes", 1,
         lambda v: make_box_map("race", _LO, _HI, n_hashes=v, n_buckets=4, random_state=0).sketch(_SX),
         lambda r, v: r.sum.shape == (4 * v,) and r.sum.sum() == 6 * v),
        ("race n_buckets", "n_buckets", 1,
         lambda v: make_box_map("race", _LO, _HI, n_hashes=3, n_buckets=v, random_state=0).sketch(_SX),
         lambda r, v: r.sum.shape == (3 * v,) and r.sum.sum() == 18),
        ("real n_frequencies", "n_frequencies", 1,
         lambda v: make_box_map("real", _LO, _HI, n_frequencies=v, random_state=0).sketch(_SX),
         lambda r, v: r.sum.shape == (2 * v,) and finite(r.sum) and np.abs(r.sum).max() <= 6),
        ("sketch batch_size", "batch_size", 1, lambda v: fm.sketch(_SX, batch_size=v),
         lambda r, v: close(r.sum, fm.sketch(_SX).sum) and r.count == 6),
        ("accumulator buffer_rows", "buffer_rows", 1,
         lambda v: _accumulated(pysketch.SketchAccumulator(fm, buffer_rows=v)),
         lambda r, v: close(r.sum, fm.sketch(_SX).sum) and r.count == 6),
        ("M2M n_synthetic", "n_synthetic", 1, lambda v: M2M(Domain.unit(2), n_synthetic=v, random_state=0).fit(hist),
         lambda r, v: r.weights_.shape == (v,) and finite(r.weights_)),
        ("Domain.sample n", "n", 1, lambda v: Domain.unit(2).sample(v, 0),
         lambda r, v: r.shape == (v, 2) and ((0 <= r) & (r <= 1)).all()),
        ("jl n_components", "n_components", 1,
         lambda v: PrivateJLTransformer(v, sparsity=1, random_state=0).fit(_SX).transform(_SX[:1]),
         lambda r, v: r.shape == (1, v) and finite(r), 64 << 10),
        ("RandomFeatures n_frequencies", "n_frequencies", 1,
         lambda v: RandomFeatures(2, v, frequency_std=1.0, random_state=0).transform(_SX),
         lambda r, v: r.shape == (6, v) and finite(r) and (np.einsum("ij,ij->i", r, r) <= 2 + 1e-9).all()),
        ("rf regressor n_frequencies", "n_frequencies", 1,
         lambda v: PrivateRFRegressor(None, bounds=(_LO, _HI), target_bounds=(-2, 2), n_frequencies=v,
                                      random_state=0).fit(_SX, _SY),
         lambda r, v: r.coef_.shape == (2 * v + 1,) and finite(r.predict(_SX)), 1 << 20),
        ("kmeans sketch_size", "sketch_size", 1,
         lambda v: pysketch.CompressiveKMeans(2, sketch_size=v, kernel_scale=1.0, n_init=1, random_state=0).fit(_SX),
         lambda r, v: r.sketch_size_ == v and r.cluster_centers_.shape == (2, 2) and finite(r.cluster_centers_)),
        ("mixture_kmeans n_draws", "n_draws", 2,
         lambda v: mixture_kmeans(_SX[:3], np.full(3, 0.1), np.ones(3), 2, n_draws=v, n_init=1, random_state=0),
         lambda r, v: r[0].shape == (2, 2) and finite(r[0]) and close(r[1].sum(), 1.0)),
        ("weighted_kmeans k", "k", 1, lambda v: weighted_kmeans(_SX, np.ones(6), v, n_init=1, random_state=0),
         lambda r, v: r[0].shape == (v, 2) and close(r[1].sum(), 6.0)),
        ("laplace_histogram bins", "bins", 1,
         lambda v: laplace_histogram(_SX, (_LO, _HI), 1.0, bins=v, insecure_seed=0),
         lambda r, v: [c.shape for c in r.counts] == [(v,), (v,)] and finite(r.counts), 64 << 10),
        ("make_random10 n", "n", 1, lambda v: datasets.make_random10(v, 2, random_state=0)[0],
         lambda r, v: r.shape == (v, 2) and ((0 <= r) & (r < 1)).all()),
        ("make_gmm n", "n", 1, lambda v: datasets.make_gmm(v, 2, 2, separation=2.0, random_state=0)[0],
         lambda r, v: r.shape == (v, 2) and finite(r)),
        ("make_low_rank n", "n", 1, lambda v: datasets.make_low_rank(v, 4, 2, random_state=0),
         lambda r, v: r.shape == (v, 4) and (np.linalg.norm(r, axis=1) <= 1.0).all()),
    )


def _accumulated(acc):
    acc.update(_SX)
    return acc.sketch()


_SIZE_CALLS = []


@target("huge_sizes")
def _huge_sizes(data):
    """A size argument drawn across 0..10^15 (and negative, float, bool, beyond int64) given
    to an entry point that allocates for it, with check_size seeing a machine of 8 MiB: a
    clear ValueError / TypeError naming the argument, or a correct result of that size
    (every size it accepts is small); never MemoryError or another exception. A valid int up
    to 16 is always accepted."""
    if not _SIZE_CALLS:
        _SIZE_CALLS.extend(_size_calls())
    label, name, lo, call, ok, *cap = data.draw(st.sampled_from(_SIZE_CALLS), label="entry point")
    v = data.draw(sizes(), label=name)
    with memory_cap(*cap):
        accepted, result = attempt(lambda: call(v), name)
    valid = isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and lo <= v <= 2**63 - 1
    if accepted:
        assert valid, f"{label}: accepted {v!r}"
        assert ok(result, int(v)), f"{label}: a wrong result for {name} = {v!r}"
    else:
        assert not (valid and v <= 16), f"{label}: refused {name} = {v!r}: {result}"


# =========================================================================================
# estimators
# =========================================================================================


def _mixture_estimator(cls_name, data, k, d, bounds, **extra):
    # a kernel scale given in most examples ('auto' reads a pilot and costs a few ms)
    ks = data.draw(st.sampled_from(("auto", 1.0, 1.0, 1.0)), label="kernel_scale")
    est = getattr(pysketch, cls_name)(k, sketch_size=16, n_init=1, bounds=bounds, pilot_size=30, random_state=0,
                                      kernel_scale=ks, **extra)
    if cls_name == "CompressiveKMeans":
        est.set_params(**{"operator": "dense"})
    return est


def _mixture_data(data, d):
    """The records and the box of a k-means / GMM fit: (case, bounds, good)."""
    case = data.draw(data_cases(d, n_max=20), label="X")
    X0 = case.ref if case.valid else clean_rows(data, d)
    bounds, good = bounds_for(data, X0, d)
    if case.shape_kind == "columns" and d == 1 and np.size(bounds[0]) == 2 and good is False and np.isfinite(
            bounds[0]).all():
        good = None  # lower of length 2 fits the 2 columns, upper of length 1 broadcasts
    return case, bounds, good


@target("kmeans_fit")
def _kmeans_fit(data):
    d = data.draw(st.integers(1, 3), label="d")
    k = data.draw(st.integers(1, K_MAX), label="k")
    case, bounds, good = _mixture_data(data, d)
    eps = data.draw(st.one_of(st.none(), epsilons()), label="epsilon")
    est = _mixture_estimator("CompressiveKMeans", data, k, d, bounds, epsilon=eps)
    ok, model, ref_ok, ref_model = run_data(est.fit, case, names=("X", "bounds", "epsilon", "delta", "n_clusters",
                                                                   "kernel_scale", "pilot"),
                                            columns_ok=d == 1)  # bounds of length 1 broadcast to any width
    if ok:
        assert good is not False, "wrong bounds accepted"
        assert eps is None or valid_epsilon(eps), f"epsilon={eps!r} accepted"
        C = model.cluster_centers_
        d = case.ref.shape[1]  # d + 1 for a 'columns' case with bounds of length 1
        assert C.shape == (k, d) and finite(C)
        lo, hi = (np.broadcast_to(np.asarray(b, float), (d,)) for b in bounds)
        assert (C >= lo - 1e-6 * (1 + abs(lo))).all() and (C <= hi + 1e-6 * (1 + abs(hi))).all()
        if eps is not None:
            rec = model.sketch_.privacy
            assert rec.epsilon <= eps * (1 + 1e-12), "spent more than epsilon"
            assert rec.epsilon >= eps * (1 - 1e-9), "an epsilon was accepted but not used"
        labels = model.predict(case.ref)
        assert labels.shape == (case.ref.shape[0],) and labels.min() >= 0 and labels.max() < k
        if ref_ok and eps is None:
            assert close(C, ref_model.cluster_centers_, 1e-4)


@target("gmm_fit")
def _gmm_fit(data):
    d = data.draw(st.integers(1, 3), label="d")
    k = data.draw(st.integers(1, 2), label="k")
    case, bounds, good = _mixture_data(data, d)
    eps = data.draw(st.one_of(st.none(), epsilons()), label="epsilon")
    delta = data.draw(deltas(), label="delta") if eps is not None else 0.0
    est = _mixture_estimator("CompressiveGaussianMixture", data, k, d, bounds, epsilon=eps, delta=delta)
    ok, model, _, _ = run_data(est.fit, case, names=("X", "bounds", "epsilon", "delta", "n_components",
                                                     "kernel_scale", "pilot"),
                               columns_ok=d == 1)  # bounds of length 1 broadcast to any width
    if ok:
        assert good is not False
        if eps is not None:
            assert valid_epsilon(eps) and valid_delta(delta), (eps, delta)
            rec = model.sketch_.privacy
            assert rec.epsilon <= eps * (1 + 1e-12) and rec.epsilon >= eps * (1 - 1e-9)
        assert model.means_.shape == (k, case.ref.shape[1]) and finite(model.means_) and finite(model.weights_)
        assert (model.covariances_ > 0).all() and abs(model.weights_.sum() - 1) < 1e-6
        ok, ll = attempt(lambda: model.score_samples(case.ref), "X")  # a degenerate fit may refuse far records
        assert not ok or ll.shape == (case.ref.shape[0],) and not np.isnan(ll).any()


@target("estimator_params")
def _estimator_params(data):
    """Constructor parameters, checked at fit (scikit-learn's convention)."""
    name = data.draw(st.sampled_from(("CompressiveKMeans", "CompressiveGaussianMixture", "CompressivePCA")),
                     label="estimator")
    X = clean_rows(data, 2, n_min=5)
    bounds = (X.min(0) - 1, X.max(0) + 1)
    param = data.draw(st.sampled_from(("sketch_size", "n_init", "epsilon", "delta", "neighbouring", "kernel_scale",
                                       "operator", "frequency_law", "dtype", "pilot_size", "batch_size", "decoder",
                                       "accountant", "n_components", "mean_share", "max_iter", "data_norm")),
                      label="param")
    value = data.draw(st.one_of(st.sampled_from(BAD_INTS), st.sampled_from(BAD_NUMBERS),
                                st.sampled_from(NEIGHBOURINGS), st.sampled_from(("auto", "x", "float16", "dense")),
                                st.sampled_from((1, 2, 16, 0.5, 1e-6))), label="value")
    kw = dict(random_state=0)
    if name == "CompressivePCA":
        est = pysketch.CompressivePCA(1, sketch_size=16, n_init=1, max_iter=30, **kw)
    else:
        est = getattr(pysketch, name)(1, sketch_size=16, n_init=1, pilot_size=30, bounds=bounds, **kw)
    if param not in est.get_params():
        return
    if param == "delta":
        est.set_params(epsilon=1.0)
    est.set_params(**{param: value})
    ok, model = attempt(lambda: est.fit(X), param, param.replace("_", " "), "n_clusters", "n_components",
                        "sketch_size", "X", "epsilon", "delta")
    if ok and param == "epsilon":
        assert value is None or valid_epsilon(value), f"epsilon={value!r} accepted"
        if value is not None and hasattr(getattr(model, "sketch_", None), "privacy"):
            assert model.sketch_.privacy.epsilon <= value * (1 + 1e-12)
    if ok and param == "delta":
        assert valid_delta(value), f"delta={value!r} accepted"
    if ok and param == "neighbouring":
        assert value in ("add_remove", "replace")


_FITTED = {}


def _fitted(name):
    if name not in _FITTED:
        X = np.random.default_rng(0).normal(size=(60, 3))
        bounds = (X.min(0) - 1, X.max(0) + 1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if name == "CompressivePCA":
                _FITTED[name] = pysketch.CompressivePCA(2, sketch_size=32, n_init=1, random_state=0).fit(X)
            else:
                _FITTED[name] = getattr(pysketch, name)(2, sketch_size=32, n_init=1, bounds=bounds,
                                                        random_state=0).fit(X)
    return _FITTED[name]


@target("fitted_predict")
def _fitted_predict(data):
    name = data.draw(st.sampled_from(("CompressiveKMeans", "CompressiveGaussianMixture", "CompressivePCA")),
                     label="estimator")
    est = _fitted(name)
    method = data.draw(st.sampled_from({"CompressiveKMeans": ("predict", "transform", "score"),
                                        "CompressiveGaussianMixture": ("predict", "predict_proba", "score",
                                                                       "score_samples"),
                                        "CompressivePCA": ("transform", "inverse_transform")}[name]), label="method")
    width = 2 if method == "inverse_transform" else 3
    case = data.draw(data_cases(width), label="X")
    ok, out, ref_ok, out_ref = run_data(getattr(est, method), case, names=("X", "data", "scale"))
    if ok:
        assert finite(out) or np.abs(case.ref).max() > 1e100, f"non-finite output of {method}"
        n = case.ref.shape[0]
        if method not in ("score",):
            assert np.shape(out)[0] == n
        if ref_ok:
            assert close(out, out_ref, 1e-6)


@target("pca_fit")
def _pca_fit(data):
    d = data.draw(st.integers(1, 4), label="d")
    case = data.draw(data_cases(d, n_max=20), label="X")
    k = data.draw(st.one_of(st.none(), st.integers(0, d + 1)), label="n_components")
    eps = data.draw(st.one_of(st.none(), epsilons()), label="epsilon")
    kw = {}
    if eps is not None:
        kw["data_norm"] = data.draw(st.sampled_from((None, 10.0, 0.0, math.nan, -1.0)), label="data_norm")
        kw["centre"] = data.draw(st.sampled_from((None, "zero", "bad")), label="centre")
        if kw["centre"] == "zero":
            kw["centre"] = np.zeros(d)
        elif kw["centre"] == "bad":
            kw["centre"] = np.zeros(d + 1)
    est = pysketch.CompressivePCA(k, sketch_size=16, n_init=1, max_iter=30, epsilon=eps, random_state=0, **kw)
    ok, model, ref_ok, ref_model = run_data(est.fit, case, names=("X", "n_components", "epsilon", "data_norm",
                                                                   "centre", "delta"),
                                            # d from X (or from a centre of length d + 1)
                                            columns_ok=not (isinstance(kw.get("centre"), np.ndarray)
                                                            and kw["centre"].shape == (d,)))
    if ok:
        assert eps is None or valid_epsilon(eps)
        d = case.ref.shape[1]  # d + 1 for a 'columns' case (the estimator takes d from X)
        kk = d if k is None else k
        assert 1 <= kk <= d
        assert model.components_.shape == (kk, d) and finite(model.components_)
        assert finite(model.explained_variance_) and (model.explained_variance_ >= 0).all()
        Z = model.transform(case.ref)
        assert Z.shape == (case.ref.shape[0], kk) and (finite(Z) or np.abs(case.ref).max() > 1e100)
        if ref_ok and eps is None:
            assert close(model.components_, ref_model.components_, 1e-6)


# =========================================================================================
# privacy
# =========================================================================================


@target("make_private")
def _make_private(data):
    from pysketch.privacy import BudgetAccountant, make_private

    fm = draw_map(data, kinds=("complex", "real", "quantized", "quadratic"))
    X = clean_rows(data, fm.d, scale=0.3)
    sk = fm.sketch(X)
    # half the examples draw every parameter from its valid values, so that the release
    # itself (not only the refusals: about 1% of fully random draws are valid) is exercised
    good = data.draw(st.booleans(), label="all parameters valid")

    def pick(valid, invalid, label):
        return data.draw(st.sampled_from(valid) if good else st.sampled_from(valid + invalid), label=label)

    eps = data.draw(st.sampled_from((1.0, 0.5, 3.0, 1e-3, 50.0)) if good else epsilons(), label="epsilon")
    delta = data.draw(st.sampled_from((0.0, 1e-5, 0.1)) if good else deltas(), label="delta")
    nb = pick(("add_remove", "replace"), NEIGHBOURINGS, "neighbouring")
    mech = pick(("auto", "laplace", "gaussian"), ("Laplace", None), "mechanism")
    if good and mech == "gaussian" and delta == 0:
        delta = 1e-5
    split = pick((None, 0.5, 0.99), (0.0, 1.0, -0.1, math.nan), "split")
    n_lower = pick((None, 10), (0, -5, math.nan, math.inf), "n_lower")
    fraction = pick((None, 0.5, 1.0) if nb == "add_remove" else (None,), (0.0, 1.5, math.nan), "data_fraction")
    data_norm = None
    if fm.kind == "quadratic":
        data_norm = pick((max(float(np.linalg.norm(X, axis=1).max()), 1e-3),), (0.0, math.nan, -1.0), "data_norm")
    acc = BudgetAccountant(pick((math.inf, 100.0), (1.0, 0.1), "budget"), 0.5)
    ok, ps = attempt(lambda: make_private(sk, eps, delta, neighbouring=nb, mechanism=mech, split=split,
                                          n_lower=n_lower, data_fraction=fraction, data_norm=data_norm,
                                          accountant=acc, insecure_seed=1),
                     "epsilon", "delta", "neighbouring", "mechanism", "split", "n_lower", "data_fraction",
                     "data_norm", "budget", "sensitivity")
    spent = acc.spent if hasattr(acc, "spent") else None
    if good:  # every parameter valid: a refusal is a bug (a valid epsilon refused "by name" included)
        assert ok, f"valid parameters refused: {ps!r}"
    if not ok:
        return
    assert valid_epsilon(eps), f"epsilon={eps!r} accepted"
    assert valid_delta(delta), f"delta={delta!r} accepted"
    assert nb in ("add_remove", "replace") and mech in ("auto", "laplace", "gaussian")
    assert split is None or 0 < split < 1
    assert fraction is None or 0 < fraction <= 1
    if mech == "gaussian":
        assert delta > 0
    rec = ps.privacy
    # Laplace is pure epsilon-DP: it records (and spends) delta = 0 whatever delta was allowed
    assert rec.epsilon == eps and rec.delta == (0.0 if rec.mechanism == "laplace" else delta), (
        "the recorded guarantee differs from the asked one")
    assert rec.mechanism == ("laplace" if mech == "laplace" or mech == "auto" and delta == 0 else "gaussian")
    assert rec.noise_scale_sum > 0, "no noise on the sum"
    if nb == "add_remove":
        assert rec.noise_scale_count > 0 and rec.epsilon_sum + rec.epsilon_count <= rec.epsilon * (1 + 1e-12) or (
            fraction is not None)
    assert finite(ps.sum) and ps.sum.shape == sk.sum.shape
    assert acc.remaining()[0] <= acc.epsilon - eps + 1e-12 or acc.epsilon == math.inf
    del spent


@target("mechanisms")
def _mechanisms(data):
    from pysketch.privacy import Gaussian, Laplace

    name = data.draw(st.sampled_from(("Laplace", "Gaussian")), label="mechanism")
    eps = data.draw(epsilons(), label="epsilon")
    sens = data.draw(st.one_of(st.sampled_from((1.0, 2.5, 1e-3)), st.sampled_from(BAD_NUMBERS)), label="sensitivity")
    good_sens = valid_epsilon(sens) and sens in (1.0, 2.5, 1e-3)  # (True == 1.0: not a sensitivity)
    if name == "Laplace":
        ok, mech = attempt(lambda: Laplace(eps, sens, insecure_seed=0), "epsilon", "sensitivity")
    else:
        delta = data.draw(deltas(), label="delta")
        cal = data.draw(st.sampled_from(("analytic", "classical", "x")), label="calibration")
        ok, mech = attempt(lambda: Gaussian(eps, delta, sens, calibration=cal, insecure_seed=0), "epsilon",
                           "delta", "sensitivity", "calibration")
        if ok:
            assert valid_delta(delta, positive=True) and cal in ("analytic", "classical")
            if cal == "classical":
                assert eps < 1
        elif in_range_epsilon(eps) and good_sens and valid_delta(delta, positive=True):
            assert cal == "x" or cal == "classical" and eps >= 1, f"valid arguments refused: {mech!r}"
    if name == "Laplace" and not ok and in_range_epsilon(eps) and good_sens:
        raise AssertionError(f"valid arguments refused: {mech!r}")
    if not ok:
        return
    assert valid_epsilon(eps) and valid_epsilon(sens)
    assert mech.scale > 0 and math.isfinite(mech.variance)
    if name == "Laplace":
        assert mech.scale >= sens / eps * (1 - 1e-12), "Laplace scale below sensitivity / epsilon"
    v = np.zeros(data.draw(st.integers(0, 5), label="size"))
    ok, out = attempt(lambda: mech.randomise(v), "value", "x", "values", "v")
    if ok:
        assert np.shape(out) == v.shape and (finite(out) or mech.scale > 1e300)


@target("gaussian_calibration")
def _gaussian_calibration(data):
    from pysketch.privacy import analytic_gaussian_delta, analytic_gaussian_sigma, classical_gaussian_sigma

    eps = data.draw(epsilons(), label="epsilon")
    delta = data.draw(deltas(), label="delta")
    sens = data.draw(st.one_of(st.just(1.0), st.sampled_from(BAD_NUMBERS), st.floats(1e-6, 1e6)),
                     label="sensitivity")
    ok, sigma = attempt(lambda: analytic_gaussian_sigma(eps, delta, sens), "epsilon", "delta", "sensitivity")
    if ok:
        assert valid_epsilon(eps) and valid_delta(delta, positive=True) and valid_epsilon(sens)
        assert math.isfinite(sigma) and sigma > 0
        if sigma < 1e300:
            back = analytic_gaussian_delta(sigma, eps, sens)
            assert back <= delta * (1 + 1e-6) + 1e-300, f"sigma {sigma} gives delta {back} > {delta}"
    ok, sigma_c = attempt(lambda: classical_gaussian_sigma(eps, delta, sens), "epsilon", "delta", "sensitivity")
    if ok:
        assert valid_epsilon(eps) and eps < 1 and valid_delta(delta, positive=True)
        assert sigma_c >= sens * math.sqrt(2 * (math.log(1.25) - math.log(delta))) / eps * (1 - 1e-12)
    s = data.draw(st.one_of(st.just(1.0), st.sampled_from(BAD_NUMBERS)), label="sigma")
    ok, dl = attempt(lambda: analytic_gaussian_delta(s, eps, sens), "sigma", "epsilon", "sensitivity")
    if ok:
        assert 0 <= dl <= 1 and valid_epsilon(s)


@target("accountant")
def _accountant(data):
    from pysketch.privacy import BudgetAccountant, BudgetError

    eps = data.draw(st.one_of(epsilons(), st.just(math.inf)), label="epsilon")
    delta = data.draw(deltas(), label="delta")
    ok, acc = attempt(lambda: BudgetAccountant(eps, delta), "epsilon", "delta")
    if not ok:
        return
    assert (eps == math.inf or valid_epsilon(eps) or eps == 0) and (valid_delta(delta) or delta == 1)
    total_e = total_d = 0.0
    for _ in range(data.draw(st.integers(1, 4), label="spends")):
        e = data.draw(epsilons(), label="spend epsilon")
        dd = data.draw(deltas(), label="spend delta")
        ok, refusal = attempt(lambda: acc.spend(e, dd), "epsilon", "delta")  # BudgetError is a ValueError
        if isinstance(refusal, BudgetError):
            assert total_e + e > eps * (1 + 1e-12) or total_d + dd > delta, "an affordable spend was refused"
        elif not ok and (valid_epsilon(e) or e == 0) and valid_delta(dd) and math.isfinite(total_e + e):
            raise AssertionError(f"a valid spend ({e!r}, {dd!r}) was refused: {refusal!r}")
        if ok:
            # delta 1 may be spent from a budget of delta 1 (vacuous, but consistent accounting)
            assert (valid_epsilon(e) or e == 0) and (valid_delta(dd) or dd == 1 == delta)
            total_e += e
            total_d += dd
        rem = acc.remaining()
        assert rem[0] >= -1e-12 and rem[1] >= -1e-15
        if eps != math.inf:
            assert abs(rem[0] - max(0.0, eps - total_e)) <= 1e-9 * max(1.0, eps)


@target("nsr")
def _nsr(data):
    from pysketch.privacy import nsr

    fn = data.draw(st.sampled_from(("noise_energy", "budget_split", "sketch_size_range", "choose_sketch_size",
                                    "n0", "nsr_max")), label="function")
    eps = data.draw(epsilons(), label="epsilon")
    m = data.draw(ints(1, 64), label="m")
    n = data.draw(st.one_of(st.integers(1, 10**6), st.sampled_from(BAD_INTS)), label="n")
    calls = {
        "noise_energy": lambda: nsr.noise_energy(m, eps),
        "budget_split": lambda: nsr.budget_split(m, eps, n),
        "sketch_size_range": lambda: nsr.sketch_size_range(2, 3, n, eps),
        "choose_sketch_size": lambda: nsr.choose_sketch_size(2, 3, n, eps),
        "n0": lambda: nsr.n0(m, eps, 1.0),
        "nsr_max": lambda: nsr.nsr_max(m, 2, 3),
    }
    ok, out = attempt(calls[fn], "epsilon", "m", "n", "n_clusters", "d", "nsr_max_value")
    # in-range arguments must be accepted (budget_split needs both shares in range: eps >= 2**-99)
    valid = in_range_epsilon(eps) and valid_int(m, 1) and (fn != "budget_split" or (
        valid_int(n, 1) and eps >= math.ldexp(1.0, -99) * (1 + 1e-8)))
    if fn in ("noise_energy", "budget_split", "n0") and valid:
        assert ok, f"{fn} refused in-range arguments: {out!r}"
    if ok:
        assert finite(out), f"{fn} gave {out!r}"
        if fn in ("noise_energy", "budget_split", "sketch_size_range", "choose_sketch_size", "n0"):
            assert valid_epsilon(eps), f"{fn} accepted epsilon={eps!r}"
        if fn == "budget_split":
            assert 0 < out < 1


@target("private_sketch")
def _private_sketch(data):
    from pysketch.privacy import make_private

    fm = draw_map(data, kinds=("complex", "real"))
    X = clean_rows(data, fm.d)
    ps = make_private(fm.sketch(X), 1.0, insecure_seed=data.draw(st.integers(0, 10), label="seed"))
    ok, mean = attempt(ps.mean, "count")
    if ok:
        assert mean.shape == ps.sum.shape and finite(mean)
    other = make_private(fm.sketch(X), 1.0, insecure_seed=0)
    ok, merged = attempt(lambda: ps + other, "private", "sketch", "sketches")
    assert not ok or merged.privacy.epsilon >= 2.0, "two private releases merged without composing epsilon"
    ok, sk = attempt(lambda: ps + fm.sketch(X), "private", "sketch", "sketches")
    assert not ok or (hasattr(sk, "privacy") and sk.privacy.epsilon >= 1.0), "private + clean kept no privacy record"


# =========================================================================================
# m2m, rfm, distances
# =========================================================================================


@target("m2m_domain")
def _m2m_domain(data):
    from pysketch.m2m import Domain

    d = data.draw(st.integers(1, 4), label="d")
    (lo, hi), good = bounds_for(data, None, d)
    discrete = data.draw(st.sampled_from((None, {0: [-1.0, 0.0, 1.0]}, {0: [99.0]}, {d: [0.0]}, {0: []},
                                          {0: [math.nan]}, [0, 1])), label="discrete")
    ok, dom = attempt(lambda: Domain(lo, hi, discrete=discrete), "lower", "upper", "discrete", "bounds")
    if good is False:
        assert not ok
    if ok:
        n = data.draw(ints(0, 20), label="n")
        ok, S = attempt(lambda: dom.sample(n, random_state=0), "n")
        if ok:
            assert S.shape == (n, d) and finite(S) and dom.contains(S).all()


def _m2m_sketch(data, d, eps=1.0):
    from pysketch.features import make_box_map
    from pysketch.m2m import Domain
    from pysketch.privacy import make_private

    key = ("m2m", d)
    if key not in _MAPS:
        dom = Domain(-np.ones(d) * 3, np.ones(d) * 3)
        _MAPS[key] = (dom, make_box_map("real", dom.lower, dom.upper, n_frequencies=8, random_state=0))
    dom, fm = _MAPS[key]
    X = np.clip(clean_rows(data, d), -3, 3)
    sk = fm.sketch(X)
    return dom, fm, X, (make_private(sk, eps, split=0.9, insecure_seed=0) if eps else sk)


@target("m2m_queries")
def _m2m_queries(data):
    from pysketch.m2m import M2M

    d = data.draw(st.integers(1, 3), label="d")
    dom, fm, X, sk = _m2m_sketch(data, d, data.draw(st.sampled_from((None, 1.0)), label="eps"))
    reg = data.draw(st.sampled_from(("eq5", 0.1, 0.0, -1.0, math.nan, "x")), label="regularization")
    loss = data.draw(st.sampled_from(("sum", "mean", "x")), label="loss")
    ns = data.draw(st.sampled_from((50, 1, 0, -3, 2.5)), label="n_synthetic")
    ok, model = attempt(lambda: M2M(dom, n_synthetic=ns, regularization=reg, loss=loss, random_state=0).fit(sk),
                        "regularization", "n_synthetic", "loss", "sketch")
    if not ok:
        return
    assert valid_int(ns, 1) and loss in ("sum", "mean")
    q = data.draw(st.sampled_from(("mean", "covariance", "moments", "cdf", "histogram", "counting", "count")),
                  label="query")
    col = data.draw(st.sampled_from((0, d - 1, d, -1, 1.5, "a")), label="column")
    calls = {"mean": lambda: model.mean(), "covariance": lambda: model.covariance(),
             "moments": lambda: model.moments(), "count": lambda: model.count(0.5),
             "cdf": lambda: model.cdf(col, np.array([-1.0, 0.0, math.nan if col == 0 else 1.0])),
             "histogram": lambda: model.histogram(col, np.array([-3.0, 0.0, 3.0])),
             "counting": lambda: model.counting_queries(dom.lower, dom.upper)}
    ok, out = attempt(calls[q], "column", "thresholds", "edges", "lower", "upper", "orders", "columns")
    if ok:
        assert finite(out), f"{q} gave non-finite values"


@target("m2m_regression")
def _m2m_regression(data):
    from pysketch.m2m import M2MLinearRegression, M2MLogisticRegression

    d = data.draw(st.integers(1, 3), label="d")
    logistic = data.draw(st.booleans(), label="logistic")
    case = data.draw(data_cases(d, n_max=20, scale=1.0), label="X")
    n = np.shape(case.ref)[0] if case.ref is not None and case.ref.ndim >= 1 else 1
    y = (np.arange(n) % 2).astype(float) if logistic else np.linspace(-1, 1, n)
    if data.draw(st.integers(0, 5), label="bad y") == 0:
        y = data.draw(st.sampled_from((y[:-1], np.full(n, math.nan), y[:, None], np.full(n, 2.0), y.astype(str))))
    eps = data.draw(st.one_of(st.none(), epsilons()), label="epsilon")
    box = (-4 * np.ones(d), 4 * np.ones(d))
    if data.draw(st.integers(0, 5), label="bad box") == 0:
        box = (box[1], box[0])
    kw = dict(bounds=box, epsilon=eps, n_synthetic=200, random_state=0, sketch_params={"n_frequencies": 8})
    est = M2MLogisticRegression(max_iter=50, **kw) if logistic else M2MLinearRegression(y_bounds=(-1, 1), **kw)
    X_in = np.clip(case.X, -4, 4) if isinstance(case.X, np.ndarray) and case.meaning == "numeric" and case.finite \
        else case.X
    if X_in is not case.X:
        case.X = X_in
        case.ref = np.clip(case.ref, -4, 4)
    ok, model, _, _ = run_data(lambda X: est.fit(X, y), case, names=("X", "y", "bounds", "epsilon", "delta",
                                                                      "sketch_params", "y_bounds"),
                               columns_ok=d == 1)  # a box of length-1 arrays broadcasts to any width
    if ok:
        assert eps is None or valid_epsilon(eps)
        out = model.predict(case.ref)
        assert out.shape == (case.ref.shape[0],) and finite(out)


@target("rfm_random_features")
def _rfm_random_features(data):
    from pysketch.rfm import LAYOUTS, RandomFeatures

    d = data.draw(ints(1, 5), label="d")
    nf = data.draw(ints(1, 16), label="n_frequencies")
    layout = data.draw(st.sampled_from(tuple(LAYOUTS) + ("x",)), label="layout")
    std = data.draw(st.sampled_from((None, 1.0, 0.0, -1.0, math.nan, math.inf)), label="frequency_std")
    ok, rf = attempt(lambda: RandomFeatures(d, nf, frequency_std=std, layout=layout, random_state=0), "d",
                     "n_frequencies", "layout", "frequency_std", "length_scale")
    if not ok:
        return
    assert valid_int(d, 1) and valid_int(nf, 1) and (std is None or valid_epsilon(std))
    case = data.draw(data_cases(d), label="X")
    ok, F, ref_ok, F_ref = run_data(rf.transform, case, empty_ok=True)
    if ok:
        assert F.shape[1] == rf.output_dim and (finite(F) or np.abs(case.ref).max() > 1e100)
        if ref_ok:
            assert close(F, F_ref)


@target("rfm_statistics")
def _rfm_statistics(data):
    from pysketch.rfm import RandomFeatures, RFStatistics, release_statistics, solve_ridge

    d = data.draw(st.integers(1, 3), label="d")
    key = ("rf_unit", d)
    if key not in _MAPS:
        _MAPS[key] = RandomFeatures(d, 8, frequency_std=1.0, layout="unit", random_state=0)
    rf = _MAPS[key]
    tb = data.draw(st.sampled_from(((-1.0, 1.0), (1.0, -1.0), (0.0, math.inf), (0.0, 0.0), "x")),
                   label="target_bounds")
    ok, stats = attempt(lambda: RFStatistics(rf, tb), "target_bounds", "features")
    if not ok:
        return
    case = data.draw(data_cases(d, n_max=10), label="X")
    n = np.shape(case.ref)[0] if case.ref is not None and case.ref.ndim >= 1 else 1
    y = np.linspace(-1, 1, n)
    if data.draw(st.integers(0, 4), label="bad y") == 0:
        y = data.draw(st.sampled_from((y * 5, np.full(n, math.nan), y[:-1])), label="y")
    ok, _, _, _ = run_data(lambda X: stats.update(X, y), case, names=("X", "y"))
    if not ok:
        return
    eps = data.draw(epsilons(), label="epsilon")
    delta = data.draw(deltas(), label="delta")
    shares = data.draw(st.sampled_from(((0.5, 0.4, 0.1), (1.0, 0.0, 0.0), (0.5, 0.5, 0.5), (-0.5, 1.0, 0.5))),
                       label="shares")
    ok, rel = attempt(lambda: release_statistics(stats, eps, delta, shares=shares, insecure_seed=0), "epsilon",
                      "delta", "shares", "stats", "neighbouring")
    if ok:
        assert valid_epsilon(eps) and valid_delta(delta, positive=True), (eps, delta)
        assert min(shares) > 0  # shares are relative (normalized to sum 1)
        assert rel.privacy.epsilon == eps if hasattr(rel.privacy, "epsilon") else True
        theta = solve_ridge(rel)
        assert finite(theta)


@target("rfm_regressors")
def _rfm_regressors(data):
    from pysketch.rfm import DPRFMRegressor, PrivateRFRegressor

    d = data.draw(st.integers(1, 2), label="d")
    case = data.draw(data_cases(d, n_max=20), label="X")
    n = np.shape(case.ref)[0] if case.ref is not None and case.ref.ndim >= 1 else 1
    y = np.linspace(-1, 1, n)
    eps = data.draw(st.one_of(epsilons(), st.none()), label="epsilon")
    delta = data.draw(deltas(), label="delta")
    box = data.draw(st.sampled_from(("data", "swap", "none")), label="bounds")
    bounds = None if box == "none" else ((-4 * np.ones(d), 4 * np.ones(d)) if box == "data" else (4, -4))
    if case.finite and case.meaning == "numeric" and isinstance(case.X, np.ndarray) and case.X.dtype.kind == "f":
        case.X = np.clip(case.X, -4, 4)
        case.ref = np.clip(case.ref, -4, 4)
    cls = data.draw(st.sampled_from(("DPRFMRegressor", "PrivateRFRegressor")), label="class")
    if cls == "DPRFMRegressor":
        est = DPRFMRegressor(eps, delta, bounds=bounds, target_bounds=(-1, 1), n_max=40, n_frequencies=8,
                             random_state=0, insecure_seed=0)
    else:
        if eps is None:
            return
        est = PrivateRFRegressor(eps, delta, bounds=bounds, target_bounds=(-1, 1), n_frequencies=8,
                                 random_state=0, insecure_seed=0)
    ok, model, _, _ = run_data(lambda X: est.fit(X, y), case, names=("X", "y", "epsilon", "delta", "bounds",
                                                                      "target_bounds", "n_max"),
                               columns_ok=d == 1 or box == "none")  # length-1 bounds broadcast; no bounds: d from X
    if ok:
        assert eps is None or valid_epsilon(eps), f"epsilon={eps!r} accepted"
        assert box != "swap"
        out = model.predict(case.ref)
        assert out.shape == (case.ref.shape[0],) and finite(out)


@target("rfm_solvers")
def _rfm_solvers(data):
    from pysketch.rfm import excess_risk, kaczmarz, min_norm, sgd

    case = data.draw(data_cases(data.draw(st.integers(1, 6), label="p"), n_max=10), label="F")
    n = np.shape(case.ref)[0] if case.ref is not None and case.ref.ndim >= 1 else 1
    y = np.linspace(-1, 1, n)
    fn = data.draw(st.sampled_from(("min_norm", "kaczmarz", "sgd", "excess_risk")), label="solver")
    it = data.draw(ints(1, 20), label="n_iter")
    step = data.draw(st.sampled_from((0.1, 0.0, -1.0, math.nan)), label="step")
    calls = {"min_norm": lambda F: min_norm(F, y),
             "kaczmarz": lambda F: kaczmarz(F, y, it, random_state=0),
             "sgd": lambda F: sgd(F, y, it, step, random_state=0),
             "excess_risk": lambda F: excess_risk(F, y, np.zeros(np.shape(F)[-1]) if np.ndim(F) == 2 else 0.0,
                                                  noise_cov=0.1)}
    ok, out, ref_ok, out_ref = run_data(calls[fn], case, names=("F", "y", "n_iter", "step", "theta_sharp"),
                                        columns_ok=True)  # F of any width p
    if ok:
        coef = out[0] if fn == "min_norm" else out  # min_norm: (coef, info)
        assert finite(coef if fn != "excess_risk" else out.risk) or np.abs(case.ref).max() > 1e100
        if ref_ok and fn != "excess_risk":
            assert close(coef, out_ref[0] if fn == "min_norm" else out_ref, 1e-6)


@target("distances_formulas")
def _distances_formulas(data):
    from pysketch.distances import choose_mechanism, max_column_norm, pairwise_sq_distances, sq_distance

    fn = data.draw(st.sampled_from(("pairwise", "sq_distance", "max_column_norm", "choose_mechanism")), label="fn")
    if fn == "choose_mechanism":
        l1, l2 = (data.draw(st.one_of(st.just(1.0), st.sampled_from(BAD_NUMBERS)), label=n) for n in ("l1", "l2"))
        eps, delta = data.draw(epsilons(), label="epsilon"), data.draw(deltas(), label="delta")
        k = data.draw(ints(1, 16), label="k")
        ok, out = attempt(lambda: choose_mechanism(l1, l2, eps, delta, k), "l1_sensitivity", "l2_sensitivity",
                          "epsilon", "delta", "k")
        if ok:
            assert valid_epsilon(eps) and valid_delta(delta) and out[0] if isinstance(out, tuple) else out
            assert (out[0] if isinstance(out, tuple) else out) in ("laplace", "gaussian")
            if delta == 0:
                assert (out[0] if isinstance(out, tuple) else out) == "laplace"
        return
    case = data.draw(data_cases(data.draw(st.integers(1, 6), label="d"), n_max=6), label="a")
    if fn == "max_column_norm":
        p = data.draw(st.sampled_from((1, 2, 0, 3, math.inf, "2")), label="p")
        ok, out, ref_ok, out_ref = run_data(lambda S: max_column_norm(S, p), case, names=("S", "p"), one_d_ok=True,
                                            columns_ok=True)  # a matrix of any width
    elif fn == "pairwise":
        ok, out, ref_ok, out_ref = run_data(pairwise_sq_distances, case, names=("a", "b"), one_d_ok=True)
    else:
        ok, out, ref_ok, out_ref = run_data(lambda a: sq_distance(a, a, 0, 0), case, names=("a", "b", "i", "j"),
                                            one_d_ok=True)
    if ok:
        if ref_ok:
            assert close(out, out_ref, 1e-9)
        if fn == "pairwise" and np.abs(case.ref).max() < 1e100:
            D = np.asarray(out)
            assert finite(D) and np.allclose(np.diag(D), 0, atol=1e-9 * max(1, np.abs(case.ref).max() ** 2))


@target("distances_release")
def _distances_release(data):
    from pysketch.distances import PrivateJLTransformer, gaussian_jl_operator, kenthapadi_release, release

    d = data.draw(st.integers(1, 6), label="d")
    k = data.draw(st.sampled_from((4, 8)), label="k")
    eps = data.draw(epsilons(), label="epsilon")
    delta = data.draw(deltas(), label="delta")
    fn = data.draw(st.sampled_from(("release", "kenthapadi", "transformer")), label="fn")
    case = data.draw(data_cases(d, n_max=6), label="X")
    if fn == "transformer":
        sparsity = data.draw(st.sampled_from((1, 2, 4, 0, 3)), label="sparsity")
        est = PrivateJLTransformer(k, sparsity=sparsity, epsilon=eps, delta=delta, random_state=0)
        call = lambda X: est.fit(X).transform(X)  # noqa: E731
    else:
        key = ("jl", d, k)
        if key not in _MAPS:
            _MAPS[key] = gaussian_jl_operator(d, k, random_state=0)
        op = _MAPS[key]
        if fn == "release":
            mech = data.draw(st.sampled_from(("auto", "laplace", "gaussian", "x")), label="mechanism")
            call = lambda X: release(op, X, eps, delta, mechanism=mech, insecure_seed=0).values  # noqa: E731
        else:
            call = lambda X: kenthapadi_release(op, X, eps, delta, insecure_seed=0).values  # noqa: E731
    ok, out, _, _ = run_data(call, case, names=("X", "epsilon", "delta", "mechanism", "sparsity", "n_components",
                                                "construction"), empty_ok=True, one_d_ok=True,
                            columns_ok=fn == "transformer")  # the transformer is fitted on X: d is X's
    if ok:
        assert valid_epsilon(eps) and valid_delta(delta), f"epsilon={eps!r}, delta={delta!r} accepted"
        out = np.asarray(out)
        assert out.shape[-1] == k and (finite(out) or np.abs(case.ref).max() > 1e100)


# =========================================================================================
# decoders, metrics, datasets, command line
# =========================================================================================


@target("decoders_mixture")
def _decoders_mixture(data):
    from pysketch.decoders import DecodingProblem, DiagonalGaussianAtoms, DiracAtoms, clompr, coreset

    d = data.draw(st.integers(1, 2), label="d")
    fm = feature_map("complex", d, 16)
    X = clean_rows(data, d)
    sk = fm.sketch(X)
    problem = DecodingProblem.from_sketch(sk)
    (lo, hi), good = bounds_for(data, X, d)
    k = data.draw(ints(1, K_MAX), label="n_atoms")
    fn = data.draw(st.sampled_from(("clompr_dirac", "clompr_gauss", "coreset")), label="decoder")
    if fn == "coreset":
        call = lambda: coreset(problem, k, lo, hi, random_state=0, n_candidates=16, step_maxiter=5,  # noqa: E731
                               final_maxiter=10)
    else:
        fam_cls = DiracAtoms if fn == "clompr_dirac" else DiagonalGaussianAtoms
        ok, fam = attempt(lambda: fam_cls(problem, lo, hi), "lower", "upper", "bounds")
        if not ok:
            assert good is not True
            return
        call = lambda: clompr(fam, k, random_state=0, step1_maxiter=10, step5_maxiter=10,  # noqa: E731
                              final_maxiter=10)
    ok, sol = attempt(call, "n_atoms", "lower", "upper", "bounds")
    if ok:
        assert valid_int(k, 1) and good is not False
        assert finite(sol.theta) and finite(sol.weights)
        # the coreset drops atoms whose weight falls to 0 (documented): up to k of them
        assert sol.weights.shape == (k,) or fn == "coreset" and sol.weights.shape[0] <= k
        centers = sol.theta[:, :d] if sol.theta.ndim == 2 else sol.theta
        lo_, hi_ = np.broadcast_to(lo, (d,)), np.broadcast_to(hi, (d,))
        assert (centers >= lo_ - 1e-9).all() and (centers <= hi_ + 1e-9).all()


@target("decoders_subspace")
def _decoders_subspace(data):
    from pysketch.decoders import BurerMonteiro, SubspaceProblem, SubspaceTask

    d = data.draw(st.integers(1, 4), label="d")
    fm = feature_map("quadratic", d, 16)
    X = clean_rows(data, d)
    problem = SubspaceProblem.from_sketch(fm.sketch(X))
    k = data.draw(ints(1, 5), label="n_components")
    it = data.draw(st.sampled_from((20, 0, -1, 1.5)), label="max_iter")
    tol = data.draw(st.sampled_from((1e-8, 0.0, -1.0, math.nan)), label="tol")
    ok, sol = attempt(lambda: BurerMonteiro(max_iter=it, tol=tol, n_init=1, random_state=0).decode(
        SubspaceTask(problem, k)), "n_components", "max_iter", "tol")
    if ok:
        assert valid_int(k, 1, d) and valid_int(it, 1)
        assert sol.components.shape == (k, d) and finite(sol.components) and (sol.variances >= 0).all()


@target("mixture_kmeans")
def _mixture_kmeans(data):
    from pysketch.decoders import mixture_kmeans

    k = data.draw(st.integers(1, 3), label="k")
    d = data.draw(st.integers(1, 3), label="d")
    means = data.draw(data_cases(d, n_max=k, n_min=k, containers=False), label="means")
    var = data.draw(st.sampled_from(("ok", "zero", "negative", "nan", "shape")), label="variances")
    variances = {"ok": np.ones(k), "zero": np.zeros(k), "negative": -np.ones(k),
                 "nan": np.full(k, math.nan), "shape": np.ones((k, d))}[var]
    w = data.draw(st.sampled_from(("ok", "sum2", "negative", "nan")), label="weights")
    weights = {"ok": np.full(k, 1 / k), "sum2": np.full(k, 2 / k), "negative": -np.full(k, 1 / k),
               "nan": np.full(k, math.nan)}[w]
    nc = data.draw(ints(1, 3), label="n_clusters")
    ok, out, _, _ = run_data(lambda M: mixture_kmeans(M, variances, weights, nc, n_draws=200, n_init=1,
                                                      random_state=0), means,
                             names=("means", "variances", "weights", "n_clusters"),
                             columns_ok=True)  # the means define d: an extra column is a wider mixture
    if ok:
        # relative weights: any nonnegative weights, not all 0, are normalised (documented)
        assert var in ("ok", "zero") and w in ("ok", "sum2") and valid_int(nc, 1)
        centers, share = out
        assert centers.shape[0] == int(nc) and finite(centers)  # k centres, whatever the atoms (documented)
        assert finite(share) and (share >= 0).all() and abs(share.sum() - 1) < 1e-12


@target("metrics_clustering")
def _metrics_clustering(data):
    from pysketch import metrics

    d = data.draw(st.integers(1, 4), label="d")
    case = data.draw(data_cases(d, n_max=20), label="X")
    ccase = data.draw(data_cases(d, n_max=K_MAX, weird_shapes=False, containers=False, special=False),
                      label="centers")
    fn = data.draw(st.sampled_from(("sse", "mse", "assign", "relative_sse", "kmeans_plus_plus")), label="fn")
    chunk = data.draw(st.sampled_from((None, 1, 7, 0, -1, 2.5)), label="chunk_size")
    calls = {"sse": lambda X: metrics.sse(X, ccase.X, chunk_size=chunk),
             "mse": lambda X: metrics.mse(X, ccase.X, chunk_size=chunk),
             "assign": lambda X: metrics.assign(X, ccase.X, chunk_size=chunk),
             "relative_sse": lambda X: metrics.relative_sse(X, ccase.X, n_init=1, random_state=0, chunk_size=chunk),
             "kmeans_plus_plus": lambda X: metrics.kmeans_plus_plus(X, 2, n_init=1, max_iter=5, random_state=0,
                                                                    chunk_size=chunk)}
    ok, out, ref_ok, out_ref = run_data(calls[fn], case, names=("X", "centers", "chunk_size", "k"),
                                        columns_ok=fn == "kmeans_plus_plus")  # no centers: X of any width
    if ok:
        assert ccase.valid or fn == "kmeans_plus_plus", "wrong centers accepted"
        assert chunk is None or valid_int(chunk, 1)
        if np.abs(case.ref).max() < 1e100 and (fn == "kmeans_plus_plus" or np.abs(ccase.ref).max() < 1e100):
            # relative_sse is +inf when the baseline's SSE is 0 and the centers' is not (documented)
            assert finite(out) or fn == "relative_sse" and out == math.inf
        if ref_ok and fn in ("sse", "mse", "assign"):
            assert close(out, out_ref, 1e-9)
        if fn == "sse" and finite(out):
            assert out >= 0


@target("metrics_mixtures")
def _metrics_mixtures(data):
    from pysketch import metrics

    d = data.draw(st.integers(1, 3), label="d")
    k = data.draw(st.integers(1, 3), label="k")
    case = data.draw(data_cases(d, n_max=20), label="X")
    means = np.random.default_rng(0).normal(size=(k, d))
    cov = data.draw(st.sampled_from(("diag", "full", "zero", "negative", "nan", "shape")), label="covariances")
    covs = {"diag": np.ones((k, d)), "full": np.stack([np.eye(d)] * k), "zero": np.zeros((k, d)),
            "negative": -np.ones((k, d)), "nan": np.full((k, d), math.nan), "shape": np.ones((k + 1, d))}[cov]
    w = data.draw(st.sampled_from(("ok", "sum2", "negative", "shape")), label="weights")
    weights = {"ok": np.full(k, 1 / k), "sum2": np.full(k, 2 / k), "negative": -np.full(k, 1 / k),
               "shape": np.ones(k + 1) / (k + 1)}[w]
    fn = data.draw(st.sampled_from(("ll", "components")), label="fn")
    call = (lambda X: metrics.gaussian_mixture_log_likelihood(X, weights, means, covs)) if fn == "ll" else \
        (lambda X: metrics.gaussian_mixture_log_prob_components(X, weights, means, covs))
    ok, out, ref_ok, out_ref = run_data(call, case, names=("X", "weights", "means", "covariances"))
    if ok:
        assert cov in ("diag", "full") and w == "ok"
        assert not np.isnan(np.asarray(out)).any()
        if ref_ok:
            assert close(out, out_ref, 1e-9)


@target("metrics_ari")
def _metrics_ari(data):
    from pysketch.metrics import adjusted_rand_index

    n = data.draw(st.integers(0, 20), label="n")
    kind = data.draw(st.sampled_from(("int", "str", "float", "nan", "2d", "short", "bool", "list")), label="kind")
    rng = np.random.default_rng(data.draw(st.integers(0, 100), label="seed"))
    a = rng.integers(0, 3, n)
    b = {"int": rng.integers(0, 3, n), "str": rng.integers(0, 3, n).astype(str), "float": rng.random(n),
         "nan": np.full(n, math.nan), "2d": rng.integers(0, 3, (n, 2)), "short": rng.integers(0, 3, max(0, n - 1)),
         "bool": rng.random(n) < 0.5, "list": list(rng.integers(0, 3, n))}[kind]
    ok, ari = attempt(lambda: adjusted_rand_index(a, b), "labels_true", "labels_pred")
    if ok:
        assert kind != "2d" and (kind != "short" or n == 0), f"labels of kind {kind} accepted"
        assert math.isfinite(ari) and ari <= 1 + 1e-12
        assert adjusted_rand_index(b, a) == ari or abs(adjusted_rand_index(b, a) - ari) < 1e-12
    if kind == "int" and n:
        assert abs(adjusted_rand_index(a, a) - 1.0) < 1e-12


@target("datasets_generators")
def _datasets_generators(data):
    from pysketch import datasets

    fn = data.draw(st.sampled_from(("make_gmm", "make_gmm_diag", "make_blobs_gaussian_centers", "make_low_rank",
                                    "make_random10", "gmm_stream", "low_rank_stream", "make_dprfm_synthetic")),
                   label="fn")
    n = data.draw(ints(1, 30), label="n")
    k = data.draw(ints(1, 3), label="k")
    d = data.draw(ints(1, 6), label="d")
    extra = data.draw(st.sampled_from((None, 0.0, -1.0, math.nan, math.inf, 2.0)), label="scale")
    calls = {
        "make_gmm": lambda: datasets.make_gmm(n, k, d, separation=extra, random_state=0),
        "make_gmm_diag": lambda: datasets.make_gmm_diag(n, k, d, mean_scale=3.0 if extra is None else extra,
                                                        random_state=0),
        "make_blobs_gaussian_centers": lambda: datasets.make_blobs_gaussian_centers(
            n, k, d, cluster_std=1.0 if extra is None else extra, random_state=0),
        "make_low_rank": lambda: datasets.make_low_rank(n, d, k, nu=0.05 if extra is None else extra,
                                                        random_state=0),
        "make_random10": lambda: datasets.make_random10(n, d, random_state=0),
        "gmm_stream": lambda: np.concatenate(list(datasets.gmm_stream(n, 2, k, d, separation=extra,
                                                                      random_state=0))),
        "low_rank_stream": lambda: np.concatenate(list(datasets.low_rank_stream(n, d, k, batch_size=7,
                                                                                random_state=0))),
        "make_dprfm_synthetic": lambda: datasets.make_dprfm_synthetic(
            data.draw(st.sampled_from(("f1", "f2", "x")), label="function"), n, random_state=0),
    }
    names = ("n", "k", "d", "separation", "mean_scale", "cluster_std", "nu", "batch_size", "n_batches", "function",
             "n_clusters")
    ok, out = attempt(calls[fn], *names)
    if ok:
        X = out[0] if isinstance(out, tuple) else getattr(out, "data", out)
        X = np.asarray(X)
        assert finite(X), f"{fn} gave non-finite data"
        assert X.ndim == 2 and X.shape[0] in (n, 2 * n) or fn in ("low_rank_stream", "make_dprfm_synthetic")


_CLI_DIR = []


def _cli_files():
    if not _CLI_DIR:
        tmp = tempfile.mkdtemp(prefix="pysketch-fuzz-cli-")
        X = np.random.default_rng(0).normal(size=(20, 2))
        np.save(os.path.join(tmp, "x.npy"), X)
        with open(os.path.join(tmp, "bad.npy"), "wb") as f:
            f.write(b"\x93NUMPY garbage")
        from pysketch.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            main(["sketch", os.path.join(tmp, "x.npy"), "--sketch-size", "8", "--seed", "0", "-q", "-o",
                  os.path.join(tmp, "s.npz")])
        _CLI_DIR.append(tmp)
    return _CLI_DIR[0]


@target("cli")
def _cli(data):
    from pysketch.cli import main

    tmp = _cli_files()
    p = lambda name: os.path.join(tmp, name)  # noqa: E731
    command = data.draw(st.sampled_from(("sketch", "privatize", "fit", "query", "info", "merge", "nope")),
                        label="command")
    value = data.draw(st.sampled_from(("0", "-1", "nan", "inf", "1e300", "abc", "", "8", "0.5", "1", "-0")),
                      label="value")
    source = data.draw(st.sampled_from(("x.npy", "bad.npy", "missing.npy", "s.npz", "*.none")), label="input")
    argv = {
        "sketch": ["sketch", p(source), "-o", p("o.npz"), "--force", "-q",
                   data.draw(st.sampled_from(("--sketch-size", "--kernel-scale", "--seed", "--batch-rows",
                                              "--threads", "--data-norm", "--bins"))), value],
        "privatize": ["privatize", p(source), "-o", p("p.npz"), "--force", "-q",
                      data.draw(st.sampled_from(("--epsilon", "--delta", "--n-lower", "--data-norm"))), value]
                     + (["--epsilon", "1"] if data.draw(st.booleans()) else []),
        "fit": ["fit", p(source), "--task", data.draw(st.sampled_from(("kmeans", "gmm", "pca", "x"))), "--k", value,
                "--bounds", "-5", "5", "--n-init", "1", "-q"],
        "query": ["query", p(source), "--bounds", value, "5", "--n-synthetic", "50", "-q", "mean"],
        "info": ["info", p(source)],
        "merge": ["merge", p(source), p("s.npz"), "-o", p("m.npz"), "--force", "-q"],
        "nope": ["nope", value],
    }[command]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
    OUTCOMES[_current[0]][f"exit {code}"] += 1
    assert code in (0, 2), f"exit code {code!r} for {argv}: {err.getvalue()[-500:]}"
    if code == 2:
        assert "error" in err.getvalue(), err.getvalue()
    if code == 0 and command == "privatize" and argv[6] == "--epsilon":  # the drawn flag took `value`
        assert value in ("8", "0.5", "1", "1e300"), f"--epsilon {value!r} accepted"


# ------------------------------------------------------------------ damaged compressed data files

_DAMAGED_DIR = []
try:
    import pyarrow as _pa
    import pyarrow.parquet as _pq
except ImportError:  # pragma: no cover - pyarrow is optional
    _pa = _pq = None
#: The compressed kinds of data file written: gzipped CSV, .npz (deflated or stored members,
#: each with its CRC-32) and Parquet (pages compressed or not, each with its CRC-32).
DAMAGED_KINDS = ("csv.gz", "npz", "npz_stored") + (("parquet",) if _pq is not None else ())


def _damaged_dir():
    if not _DAMAGED_DIR:
        _DAMAGED_DIR.append(tempfile.mkdtemp(prefix="pysketch-fuzz-damaged-"))
    return _DAMAGED_DIR[0]


def _write_data_file(kind, X, data, folder):
    """X (float64, n x d) written as a file of `kind`; returns its path."""
    import gzip

    d = X.shape[1]
    names = [f"c{j}" for j in range(d)]
    if kind == "csv.gz":
        path = os.path.join(folder, "x.csv.gz")
        text = io.BytesIO()
        header = data.draw(st.booleans(), label="header")
        np.savetxt(text, X, delimiter=",", fmt="%.17g", header=",".join(names) if header else "", comments="")
        with open(path, "wb") as f:
            level = data.draw(st.sampled_from((1, 6, 9)), label="level")
            f.write(gzip.compress(text.getvalue(), compresslevel=level, mtime=0))  # (the same bytes every run)
    elif kind in ("npz", "npz_stored"):
        path = os.path.join(folder, "x.npz")
        cut = data.draw(st.integers(0, X.shape[0]), label="split")
        arrays = {"a": X[:cut], "b": X[cut:]} if 0 < cut < X.shape[0] else {"a": X}
        (np.savez_compressed if kind == "npz" else np.savez)(path, **arrays)
    else:
        path = os.path.join(folder, "x.parquet")
        table = _pa.table({name: X[:, j] for j, name in enumerate(names)})
        _pq.write_table(table, path, write_page_checksum=True,
                        compression=data.draw(st.sampled_from(("none", "snappy", "zstd", "gzip")), label="codec"),
                        row_group_size=data.draw(st.sampled_from((4, 16, 1000)), label="row_group_size"),
                        use_dictionary=data.draw(st.booleans(), label="dictionary"))
    return path


def _damage(raw, data):
    """The bytes of a file after 0 to 3 drawn damages: truncations, bit flips, bytes overwritten
    (anywhere, or in the last 64 bytes, where the ZIP directory, gzip's trailer and Parquet's
    footer are)."""
    raw = bytearray(raw)
    for _ in range(data.draw(st.sampled_from((1, 2, 3, 1, 2, 3, 1, 0)), label="n_damages")):
        if not raw:
            break
        how = data.draw(st.sampled_from(("truncate", "flip", "byte", "flip_tail")), label="damage")
        low = max(0, len(raw) - 64) if how == "flip_tail" else 0
        at = data.draw(st.integers(low, len(raw) - 1), label="at")
        if how == "truncate":
            del raw[at:]
        elif how == "byte":
            raw[at] = data.draw(st.integers(0, 255), label="byte")
        else:
            raw[at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
    return bytes(raw)


@target("damaged_data_files")
def _damaged_data_files(data):
    """A .csv.gz, .npz or .parquet file of random records, truncated or with bytes changed:
    pysketch.files reads back the records exactly, or raises DataFileError naming the file;
    never another exception, never other records."""
    from pysketch.files import DataFileError, open_data

    kind = data.draw(st.sampled_from(DAMAGED_KINDS), label="kind")
    n, d = data.draw(st.integers(1, N_MAX), label="n"), data.draw(st.integers(1, 5), label="d")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    X = rng.standard_normal((n, d)) * 10.0 ** rng.integers(-5, 6, size=(n, d))
    if data.draw(st.booleans(), label="specials"):
        X.flat[rng.integers(0, X.size)] = data.draw(st.sampled_from((0.0, -0.0, 5e-324, 1e308, -1e-300)), label="v")
    folder = _damaged_dir()
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    path = _write_data_file(kind, X, data, folder)
    with open(path, "rb") as f:
        raw = f.read()
    damaged = _damage(raw, data)
    with open(path, "wb") as f:
        f.write(damaged)
    block_bytes = data.draw(st.sampled_from((16, 100, 1 << 20)), label="block_bytes")
    try:
        src = open_data(path)
        got = [np.array(block.data, dtype=np.float64) for block in src.blocks(block_bytes)]
    except DataFileError as exc:
        assert str(exc).startswith(path), f"the message does not start with the file: {exc}"
        assert damaged != raw, f"an intact {kind} file refused: {exc}"
        OUTCOMES[_current[0]]["DataFileError"] += 1
        return
    Y = np.concatenate(got) if got else np.zeros((0, d))
    OUTCOMES[_current[0]]["ok" if damaged != raw else "intact"] += 1
    assert Y.shape == X.shape and np.array_equal(Y, X) and np.array_equal(np.signbit(Y), np.signbit(X)), \
        f"a damaged {kind} file read as other records without an error ({len(raw)} bytes, {len(damaged)} after)"
