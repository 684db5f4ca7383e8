"""pysketch.fwht: memory layouts (strides, views, N-D), `out`, in-place and overlapping calls."""

import tracemalloc

import numpy as np
import pytest
from fwht_reference import fwht_reference
from hypothesis import given, settings
from hypothesis import strategies as st

from pysketch import empty_aligned, fwht

DTYPES = [np.float32, np.float64]


def random(shape, dtype=np.float64, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def expected_for(view):
    return fwht_reference(np.ascontiguousarray(view))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "make_view",
    [
        pytest.param(lambda b: b[:, :64], id="x[:, :n] of a wider array"),
        pytest.param(lambda b: b[:, 64:128], id="x[:, n:2n]"),
        pytest.param(lambda b: b[::2, :64], id="x[::2]"),
        pytest.param(lambda b: b[:, ::2], id="x[:, ::2]"),
        pytest.param(lambda b: b[:, 1::4][:, :32], id="x[:, 1::4] (odd offset)"),
        pytest.param(lambda b: np.asfortranarray(b[:, :64]), id="Fortran order"),
        pytest.param(lambda b: b[::-1, :64], id="reversed rows"),
        pytest.param(lambda b: b[:, 127::-1][:, :64], id="reversed elements"),
        pytest.param(lambda b: b[::-3, ::-2][:, :32], id="both reversed and strided"),
        pytest.param(lambda b: b[:, :128].T[:64].T, id="transposed twice"),
        pytest.param(lambda b: np.broadcast_to(b[0, :64], (12, 64)), id="broadcast rows (stride 0)"),
    ],
)
def test_strided_inputs(make_view, dtype):
    base = random((12, 256), dtype)
    view = make_view(base)
    before = base.copy()
    y = fwht(view)
    np.testing.assert_array_equal(y, expected_for(view))
    np.testing.assert_array_equal(base, before)  # input untouched
    assert y.flags.c_contiguous


@pytest.mark.parametrize("dtype", DTYPES)
def test_nd_input_is_a_batch_of_rows(dtype):
    x = random((3, 4, 5, 32), dtype)
    y = fwht(x)
    assert y.shape == x.shape
    np.testing.assert_array_equal(y, fwht_reference(x.reshape(-1, 32)).reshape(x.shape))


@pytest.mark.parametrize(
    "make_view",
    [
        pytest.param(lambda b: b[:, 1:3], id="mergeable leading axes"),
        pytest.param(lambda b: b[::2, ::2], id="strided leading axes"),
        pytest.param(lambda b: b.transpose(1, 0, 2), id="non-mergeable leading axes"),
        pytest.param(lambda b: b[:, :, ::2], id="strided last axis"),
        pytest.param(lambda b: b[:, :1], id="size-1 axis"),
    ],
)
def test_nd_views(make_view):
    base = random((4, 6, 64))
    view = make_view(base)
    np.testing.assert_array_equal(fwht(view), expected_for(view))


@pytest.mark.parametrize("rows", [1, 10_000])
@pytest.mark.parametrize("dtype", DTYPES)
def test_batches_of_one_and_many_rows(rows, dtype):
    x = random((rows, 64), dtype)
    np.testing.assert_array_equal(fwht(x), fwht_reference(x))


def test_n_1_and_n_2():
    x = random((5, 1))
    np.testing.assert_array_equal(fwht(x), x)
    np.testing.assert_array_equal(fwht(x, normalized=True), x)
    x = random((5, 2))
    np.testing.assert_array_equal(fwht(x), np.stack([x[:, 0] + x[:, 1], x[:, 0] - x[:, 1]], axis=1))


@pytest.mark.parametrize("shape", [(0, 8), (0,) * 0 + (2, 0, 4), (3, 0, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_empty_batches(shape, dtype):
    x = np.zeros(shape, dtype)
    y = fwht(x)
    assert y.shape == shape
    assert y.dtype == (np.float32 if dtype == np.float32 else np.float64)
    out = np.empty(shape, y.dtype)
    assert fwht(x, out=out) is out


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("normalized", [False, True])
def test_out_is_x_in_place(dtype, normalized):
    x = random((8, 256), dtype)
    expected = fwht(x, normalized=normalized)
    y = fwht(x, out=x, normalized=normalized)
    assert y is x
    np.testing.assert_array_equal(x, expected)


@pytest.mark.parametrize(
    "make_view",
    [
        pytest.param(lambda b: b[:, :64], id="x[:, :n]"),
        pytest.param(lambda b: b[::2, :64], id="x[::2]"),
        pytest.param(lambda b: b[::-1, 64:128], id="reversed rows"),
        pytest.param(lambda b: b[:, 32::2], id="x[:, 32::2]"),
        pytest.param(lambda b: b[:, :128].T[:64].T, id="Fortran-ordered view"),
        pytest.param(lambda b: b.reshape(4, 3, 160)[:, :, :64], id="3-D view"),
        pytest.param(lambda b: b.reshape(4, 3, 160).transpose(1, 0, 2)[:, :, 32:64], id="non-mergeable 3-D view"),
    ],
)
def test_in_place_on_views_writes_through(make_view):
    base = random((12, 160))
    view = make_view(base)
    expected_view = expected_for(view)
    expected_base = base.copy()
    make_view(expected_base)[...] = expected_view
    assert fwht(view, out=view) is view
    np.testing.assert_array_equal(view, expected_view)
    np.testing.assert_array_equal(base, expected_base)  # nothing else written


def test_in_place_through_a_second_view_object():
    x = random((4, 128))
    expected = fwht(x)
    out = x[...]  # a distinct object addressing the same elements
    assert fwht(x, out=out) is out
    np.testing.assert_array_equal(x, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_out_another_array(dtype):
    x = random((8, 512), dtype)
    before = x.copy()
    out = np.full_like(x, 7.0)
    assert fwht(x, out=out) is out
    np.testing.assert_array_equal(out, fwht_reference(x))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize(
    "make_out",
    [
        pytest.param(lambda shape: np.empty((shape[0], 2 * shape[1]))[:, 1::2], id="strided out"),
        pytest.param(lambda shape: np.empty(shape, order="F"), id="Fortran out"),
        pytest.param(lambda shape: np.empty((2 * shape[0], shape[1]))[::-2], id="reversed rows out"),
        pytest.param(lambda shape: np.empty((shape[0] + 1, shape[1] + 3))[1:, 3:], id="offset out"),
    ],
)
def test_out_with_any_layout(make_out):
    x = random((6, 64))
    out = make_out(x.shape)
    assert fwht(x, out=out) is out
    np.testing.assert_array_equal(out, fwht_reference(x))


@pytest.mark.parametrize("shift", [1, 3, -2])
def test_out_partially_overlapping_x(shift):
    rows, n = 6, 64
    buf = random((rows + 6) * n)
    x = buf[2 * n : (2 + rows) * n].reshape(rows, n)
    out = buf[(2 + shift) * n : (2 + shift + rows) * n].reshape(rows, n)
    expected = fwht_reference(x)
    assert fwht(x, out=out) is out
    np.testing.assert_array_equal(out, expected)


def test_out_overlapping_x_elementwise():
    # Same memory, another order: out is x with its rows reversed.
    x = random((6, 32))
    expected = fwht_reference(x)
    out = x[::-1]
    fwht(x, out=out)
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(x, expected[::-1])


def test_out_interleaved_with_x_but_disjoint():
    buf = random((8, 128))
    x, out = buf[:, 0::2], buf[:, 1::2]
    expected = expected_for(x)
    fwht(x, out=out)
    np.testing.assert_array_equal(out, expected)


def test_converted_input_into_out():
    x = np.arange(64, dtype=np.int32).reshape(2, 32)
    out = np.empty((2, 32))
    assert fwht(x, out=out) is out
    np.testing.assert_array_equal(out, fwht_reference(x.astype(np.float64)))
    out = np.empty((2, 64))[:, ::2]  # an out the core cannot write directly
    fwht(x, out=out)
    np.testing.assert_array_equal(out, fwht_reference(x.astype(np.float64)))


def test_new_arrays_of_64_kib_or_more_are_64_byte_aligned():
    for shape, dtype in [((16, 1024), np.float32), ((3, 4096), np.float64), ((1, 1 << 16), np.float32)]:
        y = fwht(random(shape, dtype)[:, ::-1])  # also via the copying path
        assert y.__array_interface__["data"][0] % 64 == 0
        y = fwht(random(shape, dtype))
        assert y.__array_interface__["data"][0] % 64 == 0


@pytest.mark.parametrize("alignment", [1, 2, 16, 64, 128, 4096])
@pytest.mark.parametrize(
    "shape, dtype",
    [((), np.float64), (0, np.float32), (5, np.int8), ((3, 0, 2), np.float64), ((7, 1000), np.float32),
     ((2, 3, 4), np.complex128), ((1 << 15,), np.float32), (np.int64(9), np.uint16)],
)
def test_empty_aligned_starts_on_a_multiple_of_alignment(shape, dtype, alignment):
    for _ in range(8):  # several allocations, at whatever offsets numpy hands out
        a = empty_aligned(shape, dtype, alignment=alignment)
        assert a.ctypes.data % alignment == 0
        assert a.shape == (shape if isinstance(shape, tuple) else (int(shape),))
        assert a.dtype == np.dtype(dtype)
        assert a.flags.c_contiguous and a.flags.writeable
        a[...] = 7  # every byte is ours to write
        assert np.all(a == 7)


def test_empty_aligned_default_is_64_byte_float64_and_memory_outlives_the_call():
    views = [empty_aligned((3, 5)) for _ in range(16)]
    assert all(v.dtype == np.float64 and v.ctypes.data % 64 == 0 for v in views)
    for k, v in enumerate(views):
        v[...] = k
    assert all(np.all(v == k) for k, v in enumerate(views))  # distinct buffers, kept alive by .base


def test_empty_aligned_rows_are_transformed_in_place():
    x = empty_aligned((4, 1024), np.float32)
    x[...] = random(x.shape, np.float32)
    expected = fwht_reference(x.astype(np.float64))
    assert fwht(x, out=x) is x
    np.testing.assert_allclose(x, expected, rtol=1e-5, atol=1e-3)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(shape=-1), ValueError, "negative"),
        (dict(shape=(2, -3)), ValueError, "negative"),
        (dict(shape=2.0), TypeError, "shape must be an integer or a sequence of integers"),
        (dict(shape=(2, "3")), TypeError, "shape must be"),
        (dict(shape=4, dtype=object), TypeError, "dtype must not hold Python objects"),
        (dict(shape=4, alignment=0), ValueError, "power of two between 1 and 4096"),
        (dict(shape=4, alignment=48), ValueError, "power of two between 1 and 4096"),
        (dict(shape=4, alignment=8192), ValueError, "power of two between 1 and 4096"),
        (dict(shape=4, alignment=64.0), TypeError, "alignment must be an integer"),
        (dict(shape=4, alignment=True), TypeError, "alignment must be an integer"),
    ],
)
def test_empty_aligned_rejects_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        empty_aligned(**kwargs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(16,), (1, 16), (3, 1024), (1024, 4), (2047, 8), (16, 1024), (1 << 15,)])
@pytest.mark.parametrize("normalized", [False, True, np.True_])
def test_plain_calls_agree_with_the_general_path(shape, dtype, normalized):
    # Plain calls are served in one step by the core (_core.fwht_fast), the rest by
    # the Python wrapper: a strided view of the same values takes the general path, and both
    # must give the same bits, a new writeable C-contiguous array, and leave x untouched.
    x = random(shape, dtype, seed=3)
    wide = np.zeros(shape[:-1] + (2 * shape[-1],), dtype)
    wide[..., : shape[-1]] = x
    general = fwht(wide[..., : shape[-1]], normalized=normalized)
    before = x.copy()
    y = fwht(x, normalized=normalized)
    np.testing.assert_array_equal(x, before)
    assert y.dtype == dtype and y.shape == shape and y.flags.c_contiguous and y.flags.writeable
    assert y.base is None or not np.shares_memory(y, x)
    np.testing.assert_array_equal(y, general)
    assert fwht(x, out=x, normalized=normalized) is x
    np.testing.assert_array_equal(x, general)


def _peak_bytes_during(fn):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    "make_view",
    [
        pytest.param(lambda b: b, id="C-contiguous"),
        pytest.param(lambda b: b[::2], id="x[::2]"),
        pytest.param(lambda b: b[:, : b.shape[1] // 2], id="x[:, :n]"),
    ],
)
def test_no_copy_of_the_input_when_rows_are_contiguous(make_view):
    # numpy reports its allocations to tracemalloc: the only big one must be the result.
    base = random((256, 4096), np.float32)
    x = make_view(base)
    peak = _peak_bytes_during(lambda: fwht(x))
    assert peak < 1.25 * x.nbytes
    peak = _peak_bytes_during(lambda: fwht(x, out=x, check_finite=True))
    assert peak < 0.25 * x.nbytes


@settings(max_examples=80, deadline=None)
@given(
    rows=st.integers(1, 6),
    log_n=st.integers(0, 7),
    row_step=st.sampled_from([1, 2, 3, -1, -2]),
    col_step=st.sampled_from([1, 2, -1]),
    offset=st.integers(0, 5),
    in_place=st.booleans(),
    dtype=st.sampled_from(DTYPES),
)
def test_any_strided_view(rows, log_n, row_step, col_step, offset, in_place, dtype):
    n = 1 << log_n
    base = random((abs(row_step) * rows + 1, abs(col_step) * n + offset + 1), dtype, seed=rows * 100 + log_n)
    rs = slice(None, None, row_step)
    cs = slice(offset, offset + abs(col_step) * n, abs(col_step))
    view = base[rs][:rows][:, cs]
    if col_step < 0:
        view = view[:, ::-1]
    assert view.shape == (rows, n)
    expected = expected_for(view)
    if in_place:
        fwht(view, out=view)
        np.testing.assert_array_equal(view, expected)
    else:
        np.testing.assert_array_equal(fwht(view), expected)
