"""The SIMD sincos kernels and the fused feature accumulations of src/cpp/pysketch/sincos.hpp.

Reference
---------
float64 results are checked against a reference that is exact to about 1e-19: the input (a
double, so exactly representable in long double) is reduced by pi/2 in x86 80-bit long double
with a three-part Cody-Waite split of pi/2 (31 + 63 + 64 bits, from a 240-digit decimal pi/2):
k * C1 and k * C2 are exact for k < 2^32 and x - k * C1 is exact, so r carries only ~1e-19 of
rounding; then sinl/cosl of |r| <= pi/4 (accurate to an ulp of long double, 5e-20). The
reference agrees with 60-digit mpmath to 7e-20 (test_reference_matches_mpmath, run where mpmath
is installed). float32 results only need float64 accuracy; the same reference serves. Where
long double is not the 80-bit (or a wider) format, the float64 accuracy tests are skipped and
the float32 ones use numpy's float64 sin/cos.

Bounds asserted (max absolute error over the fast range, every SIMD level): 1e-7 for float32
(the kernel's worst case is about 7.6e-8: 3e-8 from rounding r, 1.5e-8 from rounding r^2 in
cos, 3e-8 from rounding the result; target 1e-6) and 2.5e-16 for float64 (measured 1.3e-16;
target 1e-14).
"""

import ctypes
import ctypes.util
import math
import os
import subprocess
import sys
from decimal import Decimal, getcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysketch
from pysketch import _core
from pysketch.runtime import SIMD_LEVELS

AVAILABLE = SIMD_LEVELS[: SIMD_LEVELS.index(pysketch.max_simd_level()) + 1]
DTYPES = (np.float32, np.float64)
BOUND = {np.float32: _core.SINCOS_FAST_BOUND_FLOAT32, np.float64: _core.SINCOS_FAST_BOUND_FLOAT64}
TOL = {np.float32: 1e-7, np.float64: 2.5e-16}
SQRT1_2 = 2.0**-0.5
UINT = {np.float32: np.uint32, np.float64: np.uint64}

# ---------------------------------------------------------------------------------------------
# Reference
# ---------------------------------------------------------------------------------------------

getcontext().prec = 100
PIO2 = Decimal(
    "1.5707963267948966192313216916397514420985846996875529104874722961539082031431044993140174126710585"
    "339910740432566411533235469223047752911158626797040642405587251420513509692605527798223114744774651909"
    "822144054878329667230642378241168933915826378207"
)
LONG_DOUBLE_OK = np.finfo(np.longdouble).nmant >= 63


def _split(value, bits):
    scale = Decimal(2) ** bits
    return (value * scale).to_integral_value() / scale


_C1 = _split(PIO2, 31)
_C2 = _split(PIO2 - _C1, 63)
_C3 = PIO2 - _C1 - _C2
C1, C2, C3 = (np.longdouble(str(c)) for c in (_C1, _C2, _C3))
TWO_OVER_PI = np.longdouble(str(1 / PIO2))
PIO2_L = np.longdouble(str(PIO2))


def reference(t):
    """(cos t, sin t) of finite float32/float64 values with |t| < 2^32, in long double."""
    x = np.asarray(t, dtype=np.float64)
    if not LONG_DOUBLE_OK:
        return np.cos(x), np.sin(x)
    x = x.astype(np.longdouble)
    k = np.rint(x * TWO_OVER_PI)
    r = ((x - k * C1) - k * C2) - k * C3
    q = k.astype(np.int64) & 3
    s, c = np.sin(r), np.cos(r)
    sv, cv = np.where(q & 1, c, s), np.where(q & 1, s, c)
    return np.where((q + 1) & 2, -cv, cv), np.where(q & 2, -sv, sv)


def max_error(t):
    t = np.ascontiguousarray(t)
    c, s = _core.sincos(t)
    rc, rs = reference(t)
    return max(float(np.max(np.abs(c - rc), initial=0)), float(np.max(np.abs(s - rs), initial=0)))


def needs_reference(dtype):
    if dtype == np.float64 and not LONG_DOUBLE_OK:
        pytest.skip("needs 80-bit (or wider) long double for a float64 reference")


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(UINT[a.dtype.type])


_libm = ctypes.CDLL(ctypes.util.find_library("m")) if ctypes.util.find_library("m") else None
if _libm is not None:
    for _name in ("sinf", "cosf"):
        getattr(_libm, _name).restype = ctypes.c_float
        getattr(_libm, _name).argtypes = [ctypes.c_float]


def libm(values, dtype):
    """std::cos and std::sin (the C library's cos/sin, or cosf/sinf for float32), value by value."""
    if dtype == np.float64:
        return (np.array([math.cos(v) for v in values]), np.array([math.sin(v) for v in values]))
    return (np.array([_libm.cosf(float(v)) for v in values], np.float32),
            np.array([_libm.sinf(float(v)) for v in values], np.float32))


def hard_arguments(dtype):
    """Values of the dtype nearest to multiples of pi/2 across the fast range, and neighbours."""
    kmax = int(BOUND[dtype] * 2 / np.pi)
    if dtype == np.float32:
        k = np.arange(-kmax, kmax + 1)
    else:
        rng = np.random.default_rng(7)
        k = np.concatenate([np.arange(-100_000, 100_001), rng.integers(-kmax, kmax + 1, 200_000),
                            kmax - np.arange(1000)])
    t = (k.astype(np.longdouble) * PIO2_L).astype(dtype) if LONG_DOUBLE_OK else (k * (np.pi / 2)).astype(dtype)
    t = np.concatenate([t, np.nextafter(t, dtype(np.inf)), np.nextafter(t, dtype(-np.inf))])
    return t[np.abs(t) <= BOUND[dtype]]


@pytest.mark.skipif(not LONG_DOUBLE_OK, reason="needs 80-bit long double")
def test_reference_matches_mpmath():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    rng = np.random.default_rng(5)
    t = np.concatenate([rng.uniform(-2**30, 2**30, 300), np.arange(1, 200) * 5e6 * np.pi / 2, [2.0**30, 0.5, -3.0]])
    c, s = reference(t)
    for x, cc, ss in zip(t, c, s):
        x = mpmath.mpf(float(x))
        assert abs(mpmath.cos(x) - mpmath.mpf(str(cc))) < 1e-18
        assert abs(mpmath.sin(x) - mpmath.mpf(str(ss))) < 1e-18


# ---------------------------------------------------------------------------------------------
# sincos: accuracy
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
def test_accuracy_dense_grid_and_random(dtype):
    needs_reference(dtype)
    rng = np.random.default_rng(1)
    small = 1e3 if dtype == np.float32 else 1e6
    dense = np.linspace(-small, small, 2_000_001).astype(dtype)
    assert max_error(dense) <= TOL[dtype]
    assert max_error(rng.uniform(-np.pi, np.pi, 500_000).astype(dtype)) <= TOL[dtype]
    whole = rng.uniform(-BOUND[dtype], BOUND[dtype], 1_000_000).astype(dtype)
    assert max_error(whole) <= TOL[dtype]
    # log-uniform magnitudes: tiny to the bound
    logs = rng.uniform(np.log(1e-30), np.log(BOUND[dtype]), 500_000)
    assert max_error((np.exp(logs) * rng.choice([-1, 1], logs.size)).astype(dtype)) <= TOL[dtype]


@pytest.mark.parametrize("dtype", DTYPES)
def test_accuracy_at_the_hardest_arguments_for_the_reduction(dtype, restore_simd):
    needs_reference(dtype)
    t = hard_arguments(dtype)
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        assert max_error(t if level != "scalar" else t[::50]) <= TOL[dtype], level


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_simd_level_meets_the_bound(dtype, restore_simd):
    needs_reference(dtype)
    rng = np.random.default_rng(2)
    t = np.concatenate([rng.uniform(-40, 40, 20_000), rng.uniform(-BOUND[dtype], BOUND[dtype], 20_000)]).astype(dtype)
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        assert max_error(t) <= TOL[dtype], level


@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values(dtype, restore_simd):
    info = np.finfo(dtype)
    tiny = np.array([info.smallest_subnormal, -info.smallest_subnormal, info.smallest_normal, 1e-30, -1e-30], dtype)
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        c, s = _core.sincos(np.array([0.0, -0.0], dtype))
        assert np.array_equal(c, [1, 1]) and np.array_equal(s, [0, 0])
        assert np.array_equal(np.signbit(s), [False, True]), "sin(+0) = +0, sin(-0) = -0"
        c, s = _core.sincos(tiny)
        assert np.array_equal(s, tiny) and np.all(c == 1)
        c, s = _core.sincos(np.array([np.nan, np.inf, -np.inf, -np.nan], dtype))
        assert np.all(np.isnan(c)) and np.all(np.isnan(s))


@pytest.mark.skipif(_libm is None, reason="needs the C math library through ctypes")
@pytest.mark.parametrize("dtype", DTYPES)
def test_beyond_the_fast_range_equals_the_c_library(dtype, restore_simd):
    bound = dtype(BOUND[dtype])
    huge = np.array([np.nextafter(bound, dtype(np.inf)), 2 * bound, 3e6, 1e7, 123456789.0, 1e10, 1e20,
                     np.finfo(dtype).max], dtype)
    if dtype == np.float64:
        huge = np.concatenate([huge, [1e15, 2.0**52 + 1, 1e300]])
    huge = np.concatenate([huge, -huge])
    # mixed with in-range lanes, at every position of a vector
    t = np.tile(np.concatenate([huge, np.linspace(-3, 3, 13, dtype=dtype)]), 3)
    expect_c, expect_s = libm(t, dtype)
    fast = np.abs(t) <= bound
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        c, s = _core.sincos(t)
        assert np.array_equal(bits(c[~fast]), bits(expect_c[~fast])), level
        assert np.array_equal(bits(s[~fast]), bits(expect_s[~fast])), level
        assert np.max(np.abs(c[fast] - expect_c[fast])) <= 2 * TOL[dtype]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_value_is_within_the_bound_or_from_the_c_library(data):
    dtype = data.draw(st.sampled_from(DTYPES))
    width = 32 if dtype == np.float32 else 64
    values = data.draw(st.lists(st.floats(width=width, allow_nan=True, allow_infinity=True), min_size=1, max_size=40))
    t = np.array(values, dtype)
    c, s = _core.sincos(t)
    finite = np.isfinite(t)
    assert np.all(np.isnan(c[~finite])) and np.all(np.isnan(s[~finite]))
    fast = finite & (np.abs(t) <= BOUND[dtype])
    if dtype == np.float64 and not LONG_DOUBLE_OK:
        return
    if fast.any():
        rc, rs = reference(t[fast])
        assert np.max(np.abs(c[fast] - rc)) <= TOL[dtype]
        assert np.max(np.abs(s[fast] - rs)) <= TOL[dtype]
    slow = finite & ~fast
    if slow.any() and _libm is not None:
        ec, es = libm(t[slow], dtype)
        assert np.array_equal(c[slow], ec) and np.array_equal(s[slow], es)


# ---------------------------------------------------------------------------------------------
# sincos: every instruction set, lengths, alignment, arguments
# ---------------------------------------------------------------------------------------------


def mixed_inputs(dtype):
    rng = np.random.default_rng(3)
    parts = [rng.uniform(-50, 50, 3001), rng.uniform(-BOUND[dtype], BOUND[dtype], 3001),
             hard_arguments(dtype)[::97], [0.0, -0.0, np.nan, np.inf, -np.inf, 2.0 * BOUND[dtype], 1e30]]
    return np.concatenate([np.asarray(p, dtype) for p in parts])


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_level_gives_identical_bits(dtype, restore_simd):
    t = mixed_inputs(dtype)
    results = {}
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        results[level] = [bits(a) for a in _core.sincos(t)]
    first = results[AVAILABLE[0]]
    for level, (c, s) in results.items():
        assert np.array_equal(c, first[0]) and np.array_equal(s, first[1]), level


# Run in a fresh interpreter: PYSKETCH_SIMD is read once, at the first use of the kernels.
CHILD = """
import sys
import numpy as np
import pysketch
from pysketch import _core
level, path = sys.argv[1:]
if pysketch.simd_level() != level:
    sys.exit(f"simd_level() is {pysketch.simd_level()!r}, expected {level!r}")
arrays = dict(np.load(path))
out = {}
for name in ("float32", "float64"):
    t = arrays[name]
    out[name + "_c"], out[name + "_s"] = _core.sincos(t)
    block = t[: 37 * 23].reshape(37, 23)
    for kind in ("cis", "qcis"):
        a, b = np.ones(23), np.zeros(23)
        getattr(_core, "accumulate_" + kind)(block, t[-23:].copy(), a, b)
        out[name + kind + "_a"], out[name + kind + "_b"] = a, b
np.savez(path, **out)
"""


def test_scalar_level_in_a_subprocess_gives_identical_bits(tmp_path):
    inputs = {np.dtype(d).name: mixed_inputs(d) for d in DTYPES}
    path = str(tmp_path / "arrays.npz")
    np.savez(path, **inputs)
    env = dict(os.environ, PYSKETCH_SIMD="scalar")
    done = subprocess.run([sys.executable, "-c", CHILD, "scalar", path], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    child = np.load(path)
    for name, t in inputs.items():
        c, s = _core.sincos(t)
        assert np.array_equal(bits(child[name + "_c"]), bits(c)) and np.array_equal(bits(child[name + "_s"]), bits(s))
        block = t[: 37 * 23].reshape(37, 23)
        for kind in ("cis", "qcis"):
            a, b = np.ones(23), np.zeros(23)
            getattr(_core, "accumulate_" + kind)(block, t[-23:].copy(), a, b)
            assert np.array_equal(child[name + kind + "_a"], a, equal_nan=True), kind
            assert np.array_equal(child[name + kind + "_b"], b, equal_nan=True), kind


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_length_and_unaligned_starts(dtype, restore_simd):
    rng = np.random.default_rng(4)
    base = rng.uniform(-100, 100, 80).astype(dtype)
    base[[5, 40, 63]] = [np.nan, 3 * BOUND[dtype], -np.inf]  # the fix-up path in tails too
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        full_c, full_s = _core.sincos(base)
        for start in (0, 1, 3):
            for n in range(0, 71):
                t = base[start : start + n]
                c, s = _core.sincos(t)
                assert c.shape == s.shape == (n,) and c.dtype == s.dtype == dtype
                assert np.array_equal(bits(c), bits(full_c[start : start + n])), (level, start, n)
                assert np.array_equal(bits(s), bits(full_s[start : start + n])), (level, start, n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sincos_into_given_arrays_and_in_place(dtype, restore_simd):
    # Long enough for several steps of the AVX-512 loop, which loads step j + 1 before it stores
    # step j, and reloads a step for its cold path: values outside the fast range in the first,
    # a middle and the last step, and in the tail.
    t = np.random.default_rng(5).uniform(-9, 9, 203).astype(dtype)
    t[[0, 40, 100, 190, 202]] = [3e9, -np.inf, 1e20, np.nan, -5e9]
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        expect_c, expect_s = _core.sincos(t)
        c, s = np.empty_like(t), np.empty_like(t)
        got = _core.sincos(t, cos_out=c, sin_out=s)
        assert got[0] is c and got[1] is s
        assert np.array_equal(bits(c), bits(expect_c)) and np.array_equal(bits(s), bits(expect_s)), level
        x = t.copy()
        _core.sincos(x, x, s)  # cos in place
        assert np.array_equal(bits(x), bits(expect_c)) and np.array_equal(bits(s), bits(expect_s)), level
        x = t.copy()
        _core.sincos(x, c, x)  # sin in place
        assert np.array_equal(bits(c), bits(expect_c)) and np.array_equal(bits(x), bits(expect_s)), level
        if _libm is not None:  # beyond the fast range: the C library's bits
            ec, es = libm(t[[0, 100, 202]], dtype)
            assert np.array_equal(bits(c[[0, 100, 202]]), bits(ec)), level
            assert np.array_equal(bits(x[[0, 100, 202]]), bits(es)), level


def test_sincos_rejects_bad_outputs():
    t, c, s = np.zeros(10), np.zeros(10), np.zeros(10)
    with pytest.raises(ValueError, match="cos_out and sin_out must be given together"):
        _core.sincos(t, c, None)
    with pytest.raises(ValueError, match="cos_out and sin_out must not overlap"):
        _core.sincos(t, c, c)
    with pytest.raises(ValueError, match=r"sin_out must have length 10 \(the length of t\), got 9"):
        _core.sincos(t, c, np.zeros(9))
    with pytest.raises(TypeError, match="cos_out must have dtype float64, got float32"):
        _core.sincos(t, np.zeros(10, np.float32), s)
    with pytest.raises(ValueError, match="cos_out must be t itself or not overlap t"):
        x = np.zeros(11)
        _core.sincos(x[:10], x[1:], s)
    frozen = np.zeros(10)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="sin_out must be writeable"):
        _core.sincos(t, c, frozen)
    with pytest.raises(TypeError, match="sin_out must be None or a 1-D numpy array"):
        _core.sincos(t, c, [0.0] * 10)


def test_sincos_rejects_bad_arguments():
    with pytest.raises(ValueError, match="t must be a 1-D array"):
        _core.sincos(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="t must be contiguous"):
        _core.sincos(np.zeros(10)[::2])
    for bad in (np.zeros(3, np.int64), np.zeros(3, np.float16), np.zeros(3, np.complex128), np.zeros(3, ">f8")):
        with pytest.raises(TypeError, match="t must be a float32 or float64 array"):
            _core.sincos(bad)
    with pytest.raises(TypeError):
        _core.sincos([1.0, 2.0])  # no conversion in the internal API


# ---------------------------------------------------------------------------------------------
# accumulate_cis
# ---------------------------------------------------------------------------------------------


def layouts(dtype, rows, n, rng):
    """(name, t) pairs with the same values and different memory layouts."""
    big = rng.uniform(-60, 60, (rows, n + 7)).astype(dtype)
    plain = np.ascontiguousarray(big[:, 3 : 3 + n])
    yield "contiguous", plain
    yield "row stride > n", big[:, 3 : 3 + n]
    yield "negative row stride", big[::-1, 3 : 3 + n]
    yield "row stride 0", np.broadcast_to(plain[:1], (rows, n))


def cis_reference(t, u, dtype):
    """float64 sums of cos and sin of the phases t + u, computed in the dtype (as the kernel does)."""
    x = t if u is None else t + u  # numpy adds in the dtype, with the same rounding as the kernel
    rc, rs = reference(x.ravel())
    shape = x.shape
    return (np.asarray(rc, np.float64).reshape(shape).sum(axis=0), np.asarray(rs, np.float64).reshape(shape).sum(axis=0))


def cis_tolerance(dtype, rows):
    # float32: each term is off by at most 7.6e-8 (kernel) + 7.5e-9 (rounding to 2^-26 before the
    # exact integer sum); float64: 2e-16 per term plus the rounding of a sequential double sum
    # (<= rows^2/2 ulps of 1 in the worst case), well inside 1e-12 per row for these sizes.
    return (1e-7 if dtype == np.float32 else 1e-12) * max(rows, 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dither", [False, True])
def test_accumulate_cis_matches_numpy(dtype, dither, restore_simd):
    needs_reference(dtype)
    rng = np.random.default_rng(10)
    for rows, n in [(1, 1), (3, 70), (17, 33), (40, 129), (100, 16)]:
        u = rng.uniform(0, 2 * np.pi, n).astype(dtype) if dither else None
        start_c, start_s = rng.standard_normal(n), rng.standard_normal(n)
        for name, t in layouts(dtype, rows, n, rng):
            ref_c, ref_s = cis_reference(np.array(t), u, dtype)
            tol = cis_tolerance(dtype, rows)
            expected = None
            for level in AVAILABLE:
                pysketch.set_simd_level(level)
                acc_c, acc_s = start_c.copy(), start_s.copy()
                _core.accumulate_cis(t, u, acc_c, acc_s)
                assert np.max(np.abs(acc_c - (start_c + ref_c))) <= tol, (name, level, rows, n)
                assert np.max(np.abs(acc_s - (start_s + ref_s))) <= tol, (name, level, rows, n)
                # every level adds the same bits
                expected = expected or (acc_c, acc_s)
                assert np.array_equal(acc_c, expected[0]) and np.array_equal(acc_s, expected[1]), (name, level)


@pytest.mark.parametrize("dtype", DTYPES)
def test_accumulate_cis_every_width_and_unaligned(dtype, restore_simd):
    rng = np.random.default_rng(11)
    base = rng.uniform(-20, 20, (5, 80)).astype(dtype)
    u_base = rng.uniform(-3, 3, 80).astype(dtype)
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        for start in (0, 1):
            for n in range(0, 71):
                t, u = base[:, start : start + n], u_base[start : start + n]
                acc_c, acc_s = np.full(n + 1, 2.0)[1:], np.full(n, -1.0)  # acc_c unaligned to 16 bytes
                _core.accumulate_cis(t, u, acc_c, acc_s)
                ref_c, ref_s = cis_reference(t, u, dtype)
                assert np.allclose(acc_c, 2 + ref_c, rtol=0, atol=cis_tolerance(dtype, 5)), (level, start, n)
                assert np.allclose(acc_s, -1 + ref_s, rtol=0, atol=cis_tolerance(dtype, 5)), (level, start, n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_accumulate_cis_nothing_to_do(dtype):
    acc = np.arange(4.0)
    _core.accumulate_cis(np.zeros((0, 4), dtype), None, acc, acc.copy())  # rows = 0
    assert np.array_equal(acc, np.arange(4.0))
    empty = np.zeros(0)
    _core.accumulate_cis(np.zeros((5, 0), dtype), None, empty, empty.copy())  # n = 0


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dither", [False, True])
def test_accumulate_cis_special_values(dtype, dither, restore_simd):
    # The AVX-512 loop reduces row r + 1 before it finishes row r, and takes the cold path of a
    # row by reloading it (with the dither): special values sit in the first row, the last row
    # and rows in between, in columns of every vector of a block.
    bound = BOUND[dtype]
    rng = np.random.default_rng(12)
    t = rng.uniform(-5, 5, (20, 37)).astype(dtype)
    u = rng.uniform(0, 2 * np.pi, 37).astype(dtype) if dither else None
    t[3, 2], t[7, 20], t[19, 36] = np.nan, np.inf, -np.inf
    t[5, 1], t[6, 1], t[9, 33] = 3 * bound, -1e20, 2 * bound  # outside the fast range, finite
    t[0, 17], t[19, 30] = -4 * bound, 5 * bound
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(t).all(axis=0)
    clean = np.where(np.isfinite(t), t, 0)
    x = clean if u is None else clean + u  # the phases, rounded to dtype as the kernels add them
    ec, es = libm(x.ravel(), dtype)
    expect_c = np.asarray(ec, np.float64).reshape(t.shape).sum(axis=0)
    expect_s = np.asarray(es, np.float64).reshape(t.shape).sum(axis=0)
    expected = None
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        acc_c, acc_s = np.zeros(37), np.zeros(37)
        _core.accumulate_cis(t, u, acc_c, acc_s)
        assert np.all(np.isnan(acc_c[~finite])) and np.all(np.isnan(acc_s[~finite])), level
        assert np.allclose(acc_c[finite], expect_c[finite], rtol=0, atol=20 * 1e-7), level
        assert np.allclose(acc_s[finite], expect_s[finite], rtol=0, atol=20 * 1e-7), level
        expected = expected or (acc_c, acc_s)  # every level adds the same bits
        assert np.array_equal(acc_c, expected[0], equal_nan=True), level
        assert np.array_equal(acc_s, expected[1], equal_nan=True), level


# ---------------------------------------------------------------------------------------------
# accumulate_qcis
# ---------------------------------------------------------------------------------------------


def qcis_reference(t, u, dtype):
    """2^-1/2 * (sum of sign cos, sum of sign sin) of the phases t + u, sign(0) = +1."""
    x = t if u is None else t + u
    rc, rs = reference(x.ravel())
    sign_c = np.where(np.asarray(rc).reshape(x.shape) < 0, -1, 1).sum(axis=0)
    sign_s = np.where(np.asarray(rs).reshape(x.shape) < 0, -1, 1).sum(axis=0)
    return sign_c, sign_s


def assert_qcis(acc, start, signs):
    # The kernel adds 2^-1/2 * (exact integer) with one fma: within an ulp or two of numpy's sum.
    expected = start + SQRT1_2 * signs
    assert np.allclose(acc, expected, rtol=4e-16, atol=4e-16 * np.max(np.abs(start), initial=1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dither", [False, True])
def test_accumulate_qcis_matches_numpy(dtype, dither, restore_simd):
    needs_reference(dtype)
    rng = np.random.default_rng(20)
    for rows, n in [(1, 1), (3, 70), (17, 33), (40, 129), (100, 16)]:
        u = rng.uniform(0, 2 * np.pi, n).astype(dtype) if dither else None
        start_re, start_im = rng.standard_normal(n), rng.standard_normal(n)
        for name, t in layouts(dtype, rows, n, rng):
            signs_c, signs_s = qcis_reference(np.array(t), u, dtype)
            for level in AVAILABLE:
                pysketch.set_simd_level(level)
                acc_re, acc_im = start_re.copy(), start_im.copy()
                _core.accumulate_qcis(t, u, acc_re, acc_im)
                assert_qcis(acc_re, start_re, signs_c)
                assert_qcis(acc_im, start_im, signs_s)


@pytest.mark.parametrize("dtype", DTYPES)
def test_qcis_signs_at_quadrant_boundaries(dtype, restore_simd):
    needs_reference(dtype)
    # sign(0) = +1: x = +0 and x = -0 both give (+1, +1) 2^-1/2
    zeros = np.array([[0.0, -0.0]], dtype)
    # the values nearest to multiples of pi/2, on both sides: the sign must follow the exact value
    # (one row: each column holds one value, so each sign is checked on its own)
    hard = hard_arguments(dtype)[None, :]
    # multiples of pi/2 themselves, rounded to the dtype (pi/2, pi, 3pi/2, ... and negatives)
    near = (np.arange(-8, 9)[:, None] * (np.pi / 2)).astype(dtype)
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        re, im = np.zeros(2), np.zeros(2)
        _core.accumulate_qcis(zeros, None, re, im)
        assert np.array_equal(re, [SQRT1_2, SQRT1_2]) and np.array_equal(im, [SQRT1_2, SQRT1_2]), level
        for t in (near, hard if level != "scalar" else np.ascontiguousarray(hard[:, ::50])):
            re, im = np.zeros(t.shape[1]), np.zeros(t.shape[1])
            _core.accumulate_qcis(t, None, re, im)
            signs_c, signs_s = qcis_reference(t, None, dtype)
            assert_qcis(re, 0, signs_c)
            assert_qcis(im, 0, signs_s)


@pytest.mark.parametrize("dtype", DTYPES)
def test_accumulate_qcis_special_values(dtype, restore_simd):
    bound = BOUND[dtype]
    t = np.random.default_rng(21).uniform(-5, 5, (20, 37)).astype(dtype)
    t[3, 2], t[7, 20], t[19, 36] = np.nan, np.inf, -np.inf
    t[5, 1], t[6, 1], t[9, 33] = 3 * bound, -1e20, 2 * bound
    finite = np.isfinite(t).all(axis=0)
    clean = np.where(np.isfinite(t), t, 0)
    ec, es = libm(clean.ravel(), dtype)
    signs_c = np.where(np.asarray(ec).reshape(t.shape) < 0, -1, 1).sum(axis=0)
    signs_s = np.where(np.asarray(es).reshape(t.shape) < 0, -1, 1).sum(axis=0)
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        re, im = np.ones(37), np.ones(37)
        _core.accumulate_qcis(t, None, re, im)
        assert np.all(np.isnan(re[~finite])) and np.all(np.isnan(im[~finite])), level
        assert_qcis(re[finite], 1, signs_c[finite])
        assert_qcis(im[finite], 1, signs_s[finite])


@pytest.mark.parametrize("dtype", DTYPES)
def test_accumulate_qcis_every_width_and_unaligned(dtype, restore_simd):
    rng = np.random.default_rng(22)
    base = rng.uniform(-20, 20, (6, 80)).astype(dtype)
    u_base = rng.uniform(-3, 3, 80).astype(dtype)
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        for start in (0, 1):
            for n in range(0, 71):
                t, u = base[:, start : start + n], u_base[start : start + n]
                re, im = np.full(n + 1, 0.5)[1:], np.zeros(n)
                _core.accumulate_qcis(t, u, re, im)
                signs_c, signs_s = qcis_reference(t, u, dtype)
                assert_qcis(re, 0.5, signs_c)
                assert_qcis(im, 0, signs_s)


# ---------------------------------------------------------------------------------------------
# Argument checks of the accumulations
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, names", [("cis", ("acc_cos", "acc_sin")), ("qcis", ("acc_re", "acc_im"))])
def test_accumulate_rejects_bad_arguments(kind, names):
    fn = getattr(_core, "accumulate_" + kind)
    a_name, b_name = names
    t = np.zeros((3, 5))
    a, b = np.zeros(5), np.zeros(5)
    with pytest.raises(ValueError, match="t must be a 2-D array"):
        fn(np.zeros(5), None, a, b)
    with pytest.raises(ValueError, match="t must be contiguous along its last axis"):
        fn(np.zeros((3, 10))[:, ::2], None, a, b)
    with pytest.raises(TypeError, match="t must be a float32 or float64 array"):
        fn(t.astype(np.int32), None, a, b)
    with pytest.raises(TypeError, match="u must have dtype float64, got float32"):
        fn(t, np.zeros(5, np.float32), a, b)
    with pytest.raises(ValueError, match=r"u must have length 5 \(the last axis of t\), got 4"):
        fn(t, np.zeros(4), a, b)
    with pytest.raises(ValueError, match="u must be a 1-D array"):
        fn(t, np.zeros((1, 5)), a, b)
    with pytest.raises(TypeError, match="u must be None or a 1-D numpy array"):
        fn(t, [0.0] * 5, a, b)
    with pytest.raises(TypeError, match=f"{a_name} must have dtype float64, got float32"):
        fn(t, None, np.zeros(5, np.float32), b)
    with pytest.raises(ValueError, match=f"{b_name} must have length 5"):
        fn(t, None, a, np.zeros(6))
    with pytest.raises(ValueError, match=f"{b_name} must be contiguous"):
        fn(t, None, a, np.zeros(10)[::2])
    frozen = np.zeros(5)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=f"{a_name} must be writeable"):
        fn(t, None, frozen, b)
    with pytest.raises(ValueError, match=f"{a_name} and {b_name} must not overlap"):
        fn(t, None, a, a)
    with pytest.raises(ValueError, match=f"{a_name} must not overlap the inputs"):
        fn(a[None, :], None, a, b)
    assert np.array_equal(a, np.zeros(5)) and np.array_equal(b, np.zeros(5))
