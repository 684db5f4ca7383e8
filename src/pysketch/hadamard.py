"""The fast Walsh-Hadamard transform of real arrays (over the last axis).

This module validates and lays out arrays; the transform itself runs in the compiled
core (``pysketch._core``, over the C kernel of ``vendor/ffht``).
"""

import math
import operator
import warnings

import numpy as np

from . import _core
from ._checks import check_size

__all__ = ["empty_aligned", "fwht"]

_MAX_LOG_N = _core.MAX_LOG_N
_ALIGNMENT = 64  # bytes: a cache line, and one AVX-512 register
_ALIGNED_FROM = 1 << 16  # bytes: new arrays at least this large are aligned
_FLOAT32 = np.dtype(np.float32)
_FLOAT64 = np.dtype(np.float64)
_BYTE = np.dtype(np.uint8)
_TooHardError = getattr(np, "exceptions", np).TooHardError  # np.exceptions: numpy >= 1.25


def fwht(x, *, normalized=False, out=None, check_finite=True):
    r"""Fast Walsh-Hadamard transform over the last axis.

    For every row :math:`x` of length :math:`n = 2^k` along the last axis,

    .. math::

        y_i = \sum_{j=0}^{n-1} (-1)^{\operatorname{popcount}(i \,\&\, j)} \, x_j,
        \qquad 0 \le i < n,

    that is :math:`y = H_n x` with the Hadamard matrix in natural (Sylvester) order,
    :math:`H_1 = [1]`, :math:`H_{2m} = [[H_m, H_m], [H_m, -H_m]]`, the matrix of
    :func:`scipy.linalg.hadamard`. ``H_n @ H_n = n I``, so applying the unnormalized
    transform twice multiplies by `n`; with ``normalized=True`` the result is multiplied
    by :math:`1/\sqrt{n}`, which makes the transform orthonormal and its own inverse.

    The transform runs in :math:`O(n \log n)` with SIMD instructions (see
    :func:`pysketch.simd_level`), and large batches are split over threads (see
    :func:`pysketch.set_num_threads`); so are the rows of 2 MiB or more (2**19 float32 or
    2**18 float64 values) of a batch with fewer rows than threads, such as a single long
    vector (its sub-rows first, then its columns). The butterflies are applied level by level in
    increasing stride, so the rounding, and hence the result, is the same bit for bit on
    every instruction set and for any number of threads.

    Parameters
    ----------
    x : array_like
        Real input. Its last axis, of length a power of two between 1 and 2**30, is
        transformed; any leading axes are a batch of independent rows. float32 and
        float64 are kept; float16 is computed in float32; booleans and integers are
        converted to float64 (as :func:`numpy.fft.fft` does). Complex input raises
        TypeError: transform ``x.real`` and ``x.imag`` separately.
    normalized : bool, optional
        Multiply the result by ``1/sqrt(n)`` (orthonormal transform). Default False.
    out : ndarray, optional
        Where to write the result: a writeable array of the result's shape and dtype. It
        may be `x` itself, for an in-place transform; if it overlaps `x` in any other way
        the result is still correct (it goes through a temporary array).
    check_finite : bool, optional
        Raise ValueError when `x` contains NaN or infinity (default True, as in
        :mod:`scipy.linalg`), and warn when finite input overflows. The check costs little:
        the sum of each row is an output element that is finite exactly when the row and
        its sum are, so the input is scanned only when that element is not finite (an
        in-place transform scans its input first, so that it never overwrites data and
        then raises). Overflow is detected where it reaches that element; an overflow in
        another output element alone is not reported. With ``check_finite=False``, NaN
        and infinity propagate to the output.

    Returns
    -------
    y : ndarray
        The transform, of the shape of `x`, float32 or float64 (`out` when given). A new
        array of 64 KiB or more is 64-byte aligned.

    Raises
    ------
    ValueError
        If `x` is 0-d, its last axis is not a power of two in [1, 2**30], `out` has the
        wrong shape or is read-only, or (with `check_finite`) `x` holds NaN or infinity.
    TypeError
        If `x` is complex or not numeric, or `out` is not an ndarray of the result dtype.

    Warns
    -----
    RuntimeWarning
        ``overflow encountered in fwht`` when finite input overflows (with `check_finite`).

    See Also
    --------
    scipy.linalg.hadamard : the dense Hadamard matrix in the same order.
    empty_aligned : new arrays whose rows the transform reads and writes fastest.

    Notes
    -----
    The unnormalized transform of integer-valued data is exact as long as every partial
    sum is representable (below 2**24 in float32, 2**53 in float64).

    An in-place transform is fastest on rows that start on a 64-byte boundary, as those of
    :func:`empty_aligned` (of a length that is a multiple of 64 bytes) do: large numpy
    arrays usually start 16 bytes past one, which costs 1.1x to 1.45x in time.

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch import fwht
    >>> fwht(np.array([1.0, 0.0, 1.0, 0.0]))
    array([2., 2., 0., 0.])
    >>> fwht([[1, 2], [3, 4]])
    array([[ 3., -1.],
           [ 7., -1.]])
    >>> x = np.random.default_rng(0).standard_normal((8, 1024), dtype=np.float32)
    >>> y = fwht(x, normalized=True)
    >>> bool(np.allclose(fwht(y, normalized=True), x, atol=1e-5))
    True
    >>> _ = fwht(x, out=x)  # in place
    """
    # The common calls (a C-contiguous, aligned, non-empty float32/float64 ndarray of 1 or
    # 2 dimensions, out None or x itself, plain bool flags) are done by the core in one
    # step, about 0.6 us faster than the checks below (see _core.fwht_fast). Anything
    # else, and any input that is not finite, takes the general path: the same result,
    # with every check and message.
    done = _core.fwht_fast(x, out, normalized, check_finite)
    if done is not None:
        if done is False:  # in place, overflowed
            _warn_overflow(stacklevel=3)
            return x
        return done

    if not isinstance(normalized, (bool, np.bool_)):
        raise TypeError(f"normalized must be True or False, got {normalized!r}")
    if not isinstance(check_finite, (bool, np.bool_)):
        raise TypeError(f"check_finite must be True or False, got {check_finite!r}")
    a = x if type(x) is np.ndarray else _as_array(x)
    dtype = _result_dtype(a.dtype)
    n = _check_length(a.shape)
    scale = 1.0 / math.sqrt(n) if normalized else 1.0
    if out is not None:
        _check_out(out, a.shape, dtype)

    if dtype is not a.dtype:
        # Convert once, into memory that is ours (out, when it can take the transform and
        # does not overlap x), and transform it there in place; x stays untouched.
        if out is not None and _rows(out, written=True) is not None and not _may_overlap(a, out):
            y = out
            np.copyto(y, a, casting="unsafe")
        else:
            y = output_array(a.shape, dtype)
            np.copyto(y, a, casting="unsafe")
        finite = _in_place(y, scale)
        if check_finite and not finite:
            _check_input(a)
        if out is not None and y is not out:
            np.copyto(out, y)
            return out
        return y

    if out is None:
        y = output_array(a.shape, dtype)
        finite = _out_of_place(a, y, scale)
    else:
        overlap = a is out or _may_overlap(a, out)
        if overlap and (a is out or _same_view(a, out)):
            # In place: look at x before overwriting it, never after.
            if check_finite and not _all_finite(a):
                _raise_not_finite()
            if not _in_place(out, scale) and check_finite:
                _warn_overflow(stacklevel=3)
            return out
        if overlap:  # a partial overlap: through a temporary
            y = output_array(a.shape, dtype)
            finite = _out_of_place(a, y, scale)
            if check_finite and not finite:
                _check_input(a)  # may raise while out (and so x) is still untouched
            np.copyto(out, y)
            return out
        y = out
        finite = _out_of_place(a, y, scale)
    if check_finite and not finite:
        _check_input(a)
    return y


# ------------------------------------------------------------------ validation


def _as_array(x):
    if isinstance(x, np.ma.MaskedArray):
        raise TypeError("x must not be a masked array: fill or drop the masked values first (x.filled(...))")
    return np.asarray(x)


def _result_dtype(dtype):
    """The dtype the transform is computed in, for input of `dtype`."""
    if dtype is _FLOAT64 or dtype is _FLOAT32:
        return dtype
    kind = dtype.kind
    if kind == "c":
        raise TypeError(
            f"x must be real, got complex dtype {dtype}; the Walsh-Hadamard transform here requires "
            "real input (transform x.real and x.imag separately)"
        )
    if kind in "biu":
        return _FLOAT64
    if kind == "f":
        if dtype.itemsize == 2:
            return _FLOAT32
        if dtype.itemsize in (4, 8):  # non-native byte order
            return _FLOAT32 if dtype.itemsize == 4 else _FLOAT64
        raise TypeError(
            f"x has dtype {dtype}; fwht computes in float32 or float64: convert it explicitly, "
            "e.g. x.astype(np.float64)"
        )
    raise TypeError(
        f"x must be an array of real numbers (float, integer or boolean), got dtype {dtype}"
    )


def _check_length(shape):
    """n, the length of the last axis, after checking it is a power of two in [1, 2**30]."""
    if len(shape) == 0:
        raise ValueError("x must have at least one dimension (the transformed last axis), got a 0-d array")
    n = shape[-1]
    if n < 1 or n & (n - 1) or n > 1 << _MAX_LOG_N:
        raise ValueError(
            f"x has length {n} along its last axis (shape {tuple(shape)}); the length must be a "
            f"power of two between 1 and 2**{_MAX_LOG_N}"
        )
    return n


def _check_out(out, shape, dtype):
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy.ndarray, got {type(out).__name__}")
    if out.dtype != dtype:
        raise TypeError(f"out must have dtype {dtype} (the result dtype for this x), got {out.dtype}")
    if out.shape != shape:
        raise ValueError(f"out must have shape {shape} (the shape of x), got {out.shape}")
    if not out.flags.writeable:
        raise ValueError("out must be writeable, got a read-only array")
    return out


# ------------------------------------------------------------------ layouts


def empty_aligned(shape, dtype=np.float64, *, alignment=_ALIGNMENT):
    """A new uninitialized C-contiguous array whose data starts on a multiple of `alignment` bytes.

    Like :func:`numpy.empty`, but numpy starts its arrays on 16-byte boundaries only (large
    arrays usually lie 16 bytes past a 64-byte boundary), and SIMD loads and stores that
    straddle cache lines are slower. An in-place :func:`fwht` (``out=x``) of rows that lie
    16 bytes off a 64-byte boundary was measured 1.1x to 1.45x slower than of aligned rows
    (2**8 to 2**20 values, float32 and float64, AVX-512 on AMD Zen 4); with rows of a
    multiple of 64 bytes, every row of an aligned array is aligned. The arrays
    :func:`fwht` returns are already aligned from 64 KiB on.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the new array (non-negative sizes).
    dtype : data-type, optional
        Any numpy dtype that holds no Python objects. Default float64.
    alignment : int, optional
        A power of two between 1 and 4096: the address of the first element is a multiple
        of it. Default 64 (one cache line, and one AVX-512 register).

    Returns
    -------
    ndarray
        Uninitialized, C-contiguous and writeable; its ``base`` is the slightly larger
        byte buffer it lies in, which it keeps alive.

    Raises
    ------
    TypeError
        If `shape` is not an integer or a sequence of integers, or `dtype` holds objects.
    ValueError
        If a size in `shape` is negative or `alignment` is not a power of two in [1, 4096].

    Examples
    --------
    >>> import numpy as np
    >>> from pysketch import empty_aligned, fwht
    >>> x = empty_aligned((8, 1024), np.float32)
    >>> x.ctypes.data % 64
    0
    >>> x[...] = np.random.default_rng(0).standard_normal(x.shape)
    >>> _ = fwht(x, out=x)  # in place, on aligned rows
    """
    try:
        dims = (operator.index(shape),)
    except TypeError:
        try:
            dims = tuple(operator.index(s) for s in shape)
        except TypeError:
            raise TypeError(
                f"shape must be an integer or a sequence of integers, got {shape!r}"
            ) from None
    if any(s < 0 for s in dims):
        raise ValueError(f"shape must not have negative sizes, got {dims}")
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a numpy dtype, got {dtype!r}") from None
    if math.prod(dims) * dtype.itemsize > 2**62:
        raise ValueError(f"shape {dims} of {dtype} is larger than any array can be (more than 2**62 bytes)")
    check_size(max(dims, default=0), "shape", minimum=0, nbytes=math.prod(dims) * dtype.itemsize + 4096,
               what=f"for an array of shape {dims} of {dtype}")
    if dtype.hasobject:
        raise TypeError(f"dtype must not hold Python objects, got {dtype}")
    if isinstance(alignment, (bool, np.bool_)):
        raise TypeError(f"alignment must be an integer, got {alignment!r}")
    try:
        alignment = operator.index(alignment)
    except TypeError:
        raise TypeError(f"alignment must be an integer, got {alignment!r}") from None
    if alignment < 1 or alignment > 4096 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a power of two between 1 and 4096 (bytes), got {alignment}")
    return _aligned(dims, dtype, alignment)


def _aligned(shape, dtype, alignment):
    """empty_aligned without the checks: a view at the right offset into a larger byte array."""
    raw = np.empty(math.prod(shape) * dtype.itemsize + alignment, _BYTE)
    return np.ndarray(shape, dtype, raw, -_core.address(raw) % alignment)


def output_array(shape, dtype, always=False):
    """An uninitialized C-contiguous array; from 64 KiB on (or always), it starts on a 64-byte boundary.

    Aligned rows let the SIMD kernel's loads and stores stay within cache lines (see
    empty_aligned). Below 64 KiB the extra allocation step would cost more than it saves,
    and numpy's own allocation (16-byte aligned) is used, unless the array is kept and
    read many times (always=True: the diagonals of the structured operators).
    """
    if math.prod(shape) * dtype.itemsize < _ALIGNED_FROM and not always:
        return np.empty(shape, dtype)
    return _aligned(shape, dtype, _ALIGNMENT)


def _rows(a, written=False):
    """A (rows, n) view of `a` that the core accepts, or None when there is none.

    The core wants a contiguous last axis and one row stride (a multiple of the item
    size) for all rows; leading axes are merged when their strides allow it. Rows that
    are written must not overlap each other.
    """
    item = a.itemsize
    if a.ndim == 2:  # the common case, first
        rows, n = a.shape
        step, last = a.strides
    else:
        n = a.shape[-1]
        last = a.strides[-1]
        # Merge the leading axes, innermost first: each must step over the ones inside.
        rows, step = 1, 0
        for size, stride in zip(reversed(a.shape[:-1]), reversed(a.strides[:-1])):
            if size == 1:
                continue
            if rows == 1:
                step = stride
            elif stride != step * rows:
                return None
            rows *= size
    if n > 1 and last != item:
        return None
    if rows > 1 and (step % item or (written and abs(step) < n * item)):
        return None
    if not a.flags.aligned:
        return None
    return a if a.ndim == 2 else a.reshape(rows, n)  # a view: the strides were checked


def _same_view(a, b):
    """Do a and b address exactly the same elements in the same order?"""
    return a.shape == b.shape and a.strides == b.strides and _core.address(a) == _core.address(b)


def _may_overlap(a, b):
    if not np.may_share_memory(a, b):
        return False
    try:
        return np.shares_memory(a, b, max_work=100_000)
    except _TooHardError:
        return True


# ------------------------------------------------------------------ kernels
#
# Both return whether y[..., 0] of every row is finite (the core reports it for free):
# y[..., 0] is the scaled sum of the row, not finite exactly when the row holds NaN or
# infinity or its sum overflowed.


def _out_of_place(src, dst, scale):
    """dst = transform of src; src and dst do not overlap and src stays untouched."""
    if src.size == 0:
        return True
    dst_rows = _rows(dst, written=True)
    if dst_rows is None:  # an `out` the core cannot write: through a temporary
        tmp = output_array(dst.shape, dst.dtype)
        finite = _out_of_place(src, tmp, scale)
        np.copyto(dst, tmp)
        return finite
    src_rows = _rows(src)
    if src_rows is None:  # e.g. a non-unit stride along the last axis: copy it once
        np.copyto(dst, src)
        return _core.fwht(dst_rows, scale)
    return _core.fwht_out(src_rows, dst_rows, scale)


def _in_place(a, scale):
    """a = transform of a."""
    if a.size == 0:
        return True
    rows = _rows(a, written=True)
    if rows is not None:
        return _core.fwht(rows, scale)
    tmp = output_array(a.shape, a.dtype)  # a layout the core cannot write: through a temporary
    np.copyto(tmp, a)
    finite = _core.fwht(tmp.reshape(-1, a.shape[-1]), scale)
    np.copyto(a, tmp)
    return finite


def _all_finite(a):
    rows = _rows(a) if a.dtype is _FLOAT32 or a.dtype is _FLOAT64 else None
    if rows is None:
        return bool(np.isfinite(a).all())
    return _core.all_finite(rows)


def _check_input(a):
    """Called when y[..., 0] is not finite: was the input (raise), or did it overflow (warn)?"""
    if not _all_finite(a):
        _raise_not_finite()
    _warn_overflow(stacklevel=4)


def _raise_not_finite():
    raise ValueError(
        "x must not contain NaN or infinity (pass check_finite=False to transform it anyway; "
        "NaN and infinity then propagate)"
    )


def _warn_overflow(stacklevel):
    # stacklevel: the frames between warnings.warn and the caller of fwht.
    warnings.warn("overflow encountered in fwht", RuntimeWarning, stacklevel=stacklevel)
