"""pysketch.fwht: dtypes, bad arguments, NaN / infinity and overflow."""

import warnings

import numpy as np
import pytest
from fwht_reference import fwht_reference

from pysketch import fwht


def random(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------ dtypes


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint32, np.uint64])
def test_booleans_and_integers_become_float64(dtype):
    x = np.random.default_rng(0).integers(0, 2 if dtype == np.bool_ else 100, size=(3, 16)).astype(dtype)
    y = fwht(x)
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, fwht_reference(x.astype(np.float64)))


def test_float16_is_computed_in_float32():
    x = random((4, 32), np.float16)
    y = fwht(x)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, fwht_reference(x.astype(np.float32)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_and_float64_are_kept(dtype):
    assert fwht(random((2, 8), dtype)).dtype == dtype
    assert fwht(random((2, 8), dtype), normalized=True).dtype == dtype


@pytest.mark.parametrize("dtype", [">f4", ">f8", "<f4", "<f8"])
def test_either_byte_order(dtype):
    x = random((3, 16)).astype(dtype)
    y = fwht(x)
    assert y.dtype == np.dtype(dtype).newbyteorder("=")
    np.testing.assert_array_equal(y, fwht_reference(x.astype(y.dtype)))


def test_array_likes():
    np.testing.assert_array_equal(fwht([[1, 2], [3, 4]]), [[3.0, -1.0], [7.0, -1.0]])
    np.testing.assert_array_equal(fwht((1.5, 0.5)), [2.0, 1.0])
    assert fwht([True, False]).dtype == np.float64


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_is_a_type_error(dtype):
    with pytest.raises(TypeError, match=r"x must be real.*complex"):
        fwht(np.ones(4, dtype))


@pytest.mark.parametrize(
    "x",
    [
        pytest.param(np.array(["a", "b"]), id="str"),
        pytest.param(np.array([b"a", b"b"]), id="bytes"),
        pytest.param(np.array([1.0, None]), id="object"),
        pytest.param(np.array([1, 2], dtype="datetime64[s]"), id="datetime"),
        pytest.param(["1", "2"], id="list of str"),
    ],
)
def test_non_numeric_is_a_type_error(x):
    with pytest.raises(TypeError, match=r"x must be an array of real numbers.*dtype"):
        fwht(x)


def test_masked_arrays_are_refused_rather_than_unmasked():
    with pytest.raises(TypeError, match="x must not be a masked array"):
        fwht(np.ma.masked_array([1.0, 2.0], mask=[False, True]))


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_subclasses_are_transformed_as_plain_arrays():
    y = fwht(np.matrix([[1.0, 2.0], [3.0, 4.0]]))
    assert type(y) is np.ndarray
    np.testing.assert_array_equal(y, [[3.0, -1.0], [7.0, -1.0]])


@pytest.mark.skipif(np.dtype(np.longdouble).itemsize <= 8, reason="long double is double here")
def test_long_double_is_refused_rather_than_rounded():
    with pytest.raises(TypeError, match="float32 or float64"):
        fwht(np.ones(4, np.longdouble))


# ------------------------------------------------------------------ shapes


@pytest.mark.parametrize("n", [3, 5, 6, 7, 12, 100, 1000, 1023, 1025])
def test_length_not_a_power_of_two(n):
    with pytest.raises(ValueError, match=rf"x has length {n} along its last axis.*power of two between 1 and 2\*\*30"):
        fwht(np.ones((2, n)))


def test_zero_length():
    with pytest.raises(ValueError, match="x has length 0"):
        fwht(np.ones((4, 0)))
    with pytest.raises(ValueError, match="x has length 0"):
        fwht([])


def test_zero_dimensional():
    with pytest.raises(ValueError, match="0-d"):
        fwht(np.float64(1.0))
    with pytest.raises(ValueError, match="0-d"):
        fwht(3)


def test_too_long_is_refused_before_any_allocation():
    # Views with zero strides: no memory behind them, so nothing may be copied.
    with pytest.raises(ValueError, match=r"length 2147483648.*2\*\*30"):
        fwht(np.broadcast_to(np.float32(0), (2**31,)))
    with pytest.raises(ValueError, match="length 1610612736"):
        fwht(np.broadcast_to(np.int64(0), (3 * 2**29,)))


# ------------------------------------------------------------------ out


def test_out_wrong_shape():
    with pytest.raises(ValueError, match=r"out must have shape \(2, 8\)"):
        fwht(np.ones((2, 8)), out=np.empty((2, 4)))
    with pytest.raises(ValueError, match="out must have shape"):
        fwht(np.ones((2, 8)), out=np.empty(16))


@pytest.mark.parametrize(
    "x_dtype, out_dtype",
    [(np.float64, np.float32), (np.float32, np.float64), (np.int64, np.int64), (np.float16, np.float16), (np.float64, ">f8")],
)
def test_out_wrong_dtype(x_dtype, out_dtype):
    with pytest.raises(TypeError, match="out must have dtype"):
        fwht(np.ones((2, 8), x_dtype), out=np.empty((2, 8), out_dtype))


def test_out_read_only():
    out = np.empty((2, 8))
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out must be writeable"):
        fwht(np.ones((2, 8)), out=out)
    x = np.ones((2, 8))
    x.flags.writeable = False
    with pytest.raises(ValueError, match="out must be writeable"):
        fwht(x, out=x)


def test_out_not_an_array():
    with pytest.raises(TypeError, match="out must be a numpy.ndarray"):
        fwht(np.ones(4), out=[0.0] * 4)


def test_flags_must_be_booleans():
    with pytest.raises(TypeError, match="normalized"):
        fwht(np.ones(4), normalized="yes")
    with pytest.raises(TypeError, match="check_finite"):
        fwht(np.ones(4), check_finite=None)
    np.testing.assert_array_equal(fwht(np.ones(2), normalized=np.True_), [2.0 * (1.0 / np.sqrt(2.0)), 0.0])


# ------------------------------------------------------------------ NaN, infinity, overflow


def nonfinite_batch(value, dtype=np.float64):
    x = random((4, 64), dtype)
    x[2, 17] = value
    return x


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_nan_or_inf_raises_out_of_place(value, dtype):
    x = nonfinite_batch(value, dtype)
    before = x.copy()
    with pytest.raises(ValueError, match="x must not contain NaN or infinity"):
        fwht(x)
    with pytest.raises(ValueError, match="x must not contain NaN or infinity"):
        fwht(x, out=np.empty(x.shape, np.float32 if dtype != np.float64 else np.float64))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_or_inf_raises_in_place_and_leaves_x_untouched(value, dtype):
    x = nonfinite_batch(value, dtype)
    before = x.copy()
    with pytest.raises(ValueError, match="x must not contain NaN or infinity"):
        fwht(x, out=x)
    np.testing.assert_array_equal(x, before)
    view = x[:, 1::2]  # holds x[2, 17]; in place through a temporary (strided last axis)
    with pytest.raises(ValueError, match="x must not contain NaN or infinity"):
        fwht(view, out=view)
    np.testing.assert_array_equal(x, before)


def test_nan_raises_with_partially_overlapping_out_and_x_untouched():
    buf = random(10 * 16)
    buf[40] = np.nan
    x = buf[16:96].reshape(5, 16)
    out = buf[32:112].reshape(5, 16)
    before = buf.copy()
    with pytest.raises(ValueError, match="NaN or infinity"):
        fwht(x, out=out)
    np.testing.assert_array_equal(buf, before)


def test_inf_and_minus_inf_in_one_row_is_detected():
    x = random((2, 8))
    x[1, 2], x[1, 5] = np.inf, -np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        fwht(x)


def test_check_finite_false_propagates_nan_to_its_row_only():
    x = nonfinite_batch(np.nan)
    y = fwht(x, check_finite=False)
    assert np.isnan(y[2]).all()
    np.testing.assert_array_equal(np.delete(y, 2, axis=0), fwht_reference(np.delete(x, 2, axis=0)))
    fwht(x, out=x, check_finite=False)
    assert np.isnan(x[2]).all()


def test_check_finite_false_propagates_infinity():
    y = fwht(np.array([np.inf, 1.0, 0.0, 0.0]), check_finite=False)
    np.testing.assert_array_equal(y, [np.inf, np.inf, np.inf, np.inf])


@pytest.mark.parametrize("in_place", [False, True])
def test_overflow_of_finite_float32_warns(in_place):
    x = np.full((3, 8), 3e38, np.float32)
    with pytest.warns(RuntimeWarning, match="overflow encountered in fwht"):
        y = fwht(x, out=x if in_place else None)
    assert np.isinf(y[:, 0]).all()


@pytest.mark.parametrize(
    "shape, in_place",
    [((4,), False), ((2, 4), True), ((2, 2, 4), False), ((2, 2, 4), True)],
    ids=["fast-out-of-place", "fast-in-place", "general-out-of-place", "general-in-place"],
)
def test_overflow_warning_points_at_the_caller(shape, in_place):
    x = np.full(shape, 3e38, np.float32)
    with pytest.warns(RuntimeWarning) as record:
        fwht(x, out=x if in_place else None)
    assert record[0].filename == __file__


def test_no_warning_without_overflow_or_with_check_finite_false():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fwht(np.full((3, 8), 1e37, np.float32))
        fwht(np.full((3, 8), 3e38, np.float32), check_finite=False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_finiteness_check_finds_every_non_finite_bit_pattern_at_every_position(dtype):
    # The check (pysketch._core.all_finite, run by fwht before an in-place transform) reads
    # vectors of 4 x 32 bytes, then single vectors, then the last elements one by one: a
    # NaN (quiet, signalling, any payload, either sign) or an infinity is found wherever it
    # lies, at every SIMD level (PYSKETCH_SIMD), and the largest finite values, subnormals
    # and -0 are finite.
    from pysketch import _core

    info = np.finfo(dtype)
    uint = np.uint32 if dtype == np.float32 else np.uint64
    bits = 32 if dtype == np.float32 else 64
    mant = info.nmant
    sign = uint(1) << uint(bits - 1)
    exp_all = uint(((1 << (bits - 1 - mant)) - 1) << mant)
    bad = [exp_all, exp_all | sign, exp_all | uint(1), exp_all | (uint(1) << uint(mant - 1)),
           exp_all | uint((1 << mant) - 1) | sign]  # +inf, -inf, signalling NaN, quiet NaN, -NaN all ones
    good = np.array([info.max, -info.max, info.tiny, info.tiny / 4, -0.0, 1.0], dtype=dtype)
    for n in (1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 100, 4097):
        x = np.resize(good, (1, n)).astype(dtype)
        assert _core.all_finite(x), n
        for pos in sorted({0, n // 3, n // 2, n - 9, n - 2, n - 1} - {-1, -2, -9}):
            if not 0 <= pos < n:
                continue
            for pattern in bad:
                y = x.copy()
                y.view(uint)[0, pos] = pattern
                assert not _core.all_finite(y), (n, pos, hex(int(pattern)))
                if n & (n - 1) == 0:  # a length fwht transforms: refused before anything is written
                    before = y.copy()
                    with pytest.raises(ValueError, match="NaN or infinity"):
                        fwht(y, out=y)
                    assert np.array_equal(y.view(uint), before.view(uint))
