"""The C++ kernels of the one-hot sketch maps (pysketch/onehot.hpp through pysketch._core):
HIST bins and RACE buckets against NumPy references written here (the exact arithmetic of the
header's comment), their accumulations against np.bincount, the co-occurrence Gram matrix
against P.T @ P of the dense 0/1 matrix; every SIMD level, 1 and 2 threads, and the argument
checks."""

import numpy as np
import pytest

from pysketch import _core

LEVELS = ("scalar", "sse", "avx2", "avx512")
AVAILABLE = LEVELS[: LEVELS.index(_core.max_simd_level()) + 1]


@pytest.fixture
def threads():
    """Set the core's thread count; restored after the test."""
    before = _core.get_num_threads()
    yield _core.set_num_threads
    _core.set_num_threads(before)


@pytest.fixture(params=AVAILABLE)
def level(request):
    """Each SIMD level this machine has; restored after the test."""
    before = _core.simd_level()
    _core.set_simd_level(request.param)
    yield request.param
    _core.set_simd_level(before)


# ------------------------------------------------------------------------------- references

def hist_reference(X, lower, scale, upper, n_bins):
    """(indices (n, d), number of records with a coordinate outside [lower, upper])."""
    x = np.asarray(X).astype(np.float64)
    t = (x - lower) * scale
    inside = (t >= 0) & (t < n_bins)
    b = np.where(t < 0, 0, np.where(t >= n_bins, n_bins - 1, np.trunc(np.where(inside, t, 0.0)).astype(np.int64)))
    idx = np.arange(x.shape[1]) * n_bins + b
    outside = int(((x < lower) | (x > upper)).any(axis=1).sum())
    return idx, outside


def race_phases(X, proj, offset):
    """t (n, R): from 0.0, t = t + x_k * proj[k] for k = 0, 1, ..., then + offset."""
    x = np.asarray(X).astype(np.float64)
    t = np.zeros((x.shape[0], proj.shape[1]))
    for k in range(x.shape[1]):
        t = t + x[:, k, None] * proj[k]
    return t + offset


def race_reference(X, proj, offset, W):
    """(indices (n, R), t)."""
    t = race_phases(X, proj, offset)
    h = np.floor(t).astype(np.int64)
    return np.arange(proj.shape[1]) * W + np.mod(h, W), t


def dense_onehot(idx, m):
    P = np.zeros((idx.shape[0], m))
    P[np.arange(idx.shape[0])[:, None], idx] = 1.0
    return P


def hist_case(rng, n, d, n_bins, dtype=np.float64):
    """Records with values exactly at the box's ends and bin edges, outside it, and random."""
    lower = rng.uniform(-2.0, 0.0, d)
    upper = lower + rng.uniform(0.5, 3.0, d)
    scale = n_bins / (upper - lower)
    X = rng.uniform(lower - 0.3, upper + 0.3, (n, d))
    edges = lower + (upper - lower) * rng.integers(0, n_bins + 1, (n, d)) / n_bins
    pick = rng.random((n, d))
    X = np.where(pick < 0.15, edges, X)
    X = np.where((pick >= 0.15) & (pick < 0.2), lower, X)
    X = np.where((pick >= 0.2) & (pick < 0.25), upper, X)
    X = np.where((pick >= 0.25) & (pick < 0.27), np.nextafter(upper, np.inf), X)
    X = np.where((pick >= 0.27) & (pick < 0.29), np.nextafter(lower, -np.inf), X)
    return np.ascontiguousarray(X, dtype=dtype), lower, scale, upper


def race_case(rng, n, d, R, width=0.3, spread=1.0):
    X = rng.standard_normal((n, d)) * spread
    proj = np.ascontiguousarray(rng.standard_normal((d, R)) / width)
    offset = rng.random(R)
    return X, proj, offset


def far_from_integers(t):
    return np.abs(t - np.round(t)) > 1e-9


# ------------------------------------------------------------------------------------ HIST

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_bins", [1, 7, 100])
def test_hist_indices_match_the_reference(dtype, n_bins):
    rng = np.random.default_rng(n_bins)
    X, lower, scale, upper = hist_case(rng, 3000, 6, n_bins, dtype)
    out = np.full(X.shape, -1, np.int32)
    _core.hist_indices(X, lower, scale, upper, n_bins, out)
    ref, _ = hist_reference(X, lower, scale, upper, n_bins)
    np.testing.assert_array_equal(out, ref)


def test_hist_bins_at_the_edges():
    lower, upper, n_bins = np.array([-1.0, 0.0]), np.array([1.0, 3.0]), 4
    scale = n_bins / (upper - lower)
    X = np.array([[-1.0, 0.0],                   # lower: bin 0
                  [1.0, 3.0],                    # upper: last bin, not outside
                  [-1.5, -7.0],                  # below: bin 0, outside
                  [1.0 + 1e-12, 300.0],          # above: last bin, outside
                  [-0.5, 0.75],                  # exactly on an inner edge: the bin above it
                  [np.nextafter(-0.5, -1), np.nextafter(0.75, 0)]])
    out = np.empty(X.shape, np.int32)
    _core.hist_indices(X, lower, scale, upper, n_bins, out)
    np.testing.assert_array_equal(out, [[0, 4], [3, 7], [0, 4], [3, 7], [1, 5], [0, 4]])
    counts = np.zeros(2 * n_bins)
    assert _core.hist_accumulate(X, lower, scale, upper, n_bins, counts) == 2
    np.testing.assert_array_equal(counts, np.bincount(out.ravel(), minlength=2 * n_bins))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hist_accumulate_is_bincount_of_the_indices(dtype):
    rng = np.random.default_rng(1)
    n_bins = 20
    X, lower, scale, upper = hist_case(rng, 5000, 4, n_bins, dtype)
    ref, outside = hist_reference(X, lower, scale, upper, n_bins)
    assert 0 < outside < X.shape[0]
    start = rng.integers(0, 50, 4 * n_bins).astype(np.float64)  # counts are added to
    counts = start.copy()
    returned = _core.hist_accumulate(X, lower, scale, upper, n_bins, counts)
    assert isinstance(returned, int) and returned == outside
    np.testing.assert_array_equal(counts, start + np.bincount(ref.ravel(), minlength=4 * n_bins))


def test_hist_same_result_on_one_and_two_threads(threads):
    rng = np.random.default_rng(2)
    X, lower, scale, upper = hist_case(rng, 200_000, 10, 50)
    results = []
    for k in (1, 2):
        threads(k)
        out = np.empty(X.shape, np.int32)
        _core.hist_indices(X, lower, scale, upper, 50, out)
        counts = np.zeros(500)
        outside = _core.hist_accumulate(X, lower, scale, upper, 50, counts)
        results.append((out, counts, outside))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    assert results[0][2] == results[1][2]
    ref, outside = hist_reference(X, lower, scale, upper, 50)
    np.testing.assert_array_equal(results[1][0], ref)
    assert results[1][2] == outside


def test_hist_row_stride_and_empty_inputs():
    rng = np.random.default_rng(3)
    X, lower, scale, upper = hist_case(rng, 100, 3, 9)
    wide = np.zeros((100, 5))
    wide[:, :3] = X
    out = np.empty((100, 3), np.int32)
    _core.hist_indices(wide[:, :3], lower, scale, upper, 9, out)
    np.testing.assert_array_equal(out, hist_reference(X, lower, scale, upper, 9)[0])
    counts = np.ones(27)
    assert _core.hist_accumulate(np.empty((0, 3)), lower, scale, upper, 9, counts) == 0
    np.testing.assert_array_equal(counts, 1.0)
    _core.hist_indices(np.empty((0, 3), np.float32), lower, scale, upper, 9, np.empty((0, 3), np.int32))


# ------------------------------------------------------------------------------------ RACE

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("R, W", [(100, 80), (13, 7), (8, 1), (1, 3)])
def test_race_indices_match_the_reference(level, dtype, R, W):
    rng = np.random.default_rng(R * 100 + W)
    X, proj, offset = race_case(rng, 2000, 10, R)
    X = X.astype(dtype)
    out = np.full((X.shape[0], R), -1, np.int32)
    _core.race_indices(X, proj, offset, W, out)
    ref, t = race_reference(X, proj, offset, W)
    assert (t < 0).mean() > 0.3  # negative t: the modulo must fold them into [0, W)
    far = far_from_integers(t)
    assert far.mean() > 0.99
    np.testing.assert_array_equal(out[far], ref[far])
    # the kernel's arithmetic is numpy's, operation for operation: the rest agrees too
    np.testing.assert_array_equal(out, ref)


def test_race_large_phases_take_the_int64_path(level):
    # |t| beyond 2^52 (some rows) and up to about 2^60: floor(t) mod W through int64
    rng = np.random.default_rng(4)
    R, W = 11, 80
    X, proj, offset = race_case(rng, 300, 3, R)
    X[::3] *= 2.0 ** 50
    X[1::7, 0] = 2.0 ** 55
    out = np.empty((300, R), np.int32)
    _core.race_indices(X, proj, offset, W, out)
    ref, t = race_reference(X, proj, offset, W)
    assert (np.abs(t) >= 2.0 ** 52).any() and (np.abs(t) < 2.0 ** 52).any()
    np.testing.assert_array_equal(out, ref)
    # just below 2^63 in magnitude still works
    X1 = np.array([[2.0 ** 63 - 2048.0], [-(2.0 ** 63)]])
    out1 = np.empty((2, 1), np.int32)
    _core.race_indices(X1, np.ones((1, 1)), np.zeros(1), 7, out1)
    np.testing.assert_array_equal(out1[:, 0], np.mod(np.array([2 ** 63 - 2048, -(2 ** 63)], dtype=object), 7))


@pytest.mark.parametrize("W", [49, 98, 100_000_007])
def test_race_multiples_of_W_whose_quotient_rounds_down(level, W):
    # g * (1 / W) falls just below the integer g / W for some multiples g of W (49 * (1 / 49)
    # < 1): the bucket must still be 0, as floor(t) mod W says (the kernel's correction of
    # r = g - floor(g * (1 / W)) W from W to 0). Small and large (up to 2^52) multiples.
    rng = np.random.default_rng(W)
    q = np.concatenate([np.arange(-3000.0, 3000.0), np.floor(rng.uniform(-2.0 ** 52, 2.0 ** 52, 20_000) / W)])
    g = q * W
    below = np.floor(g * (1.0 / W)) != q
    assert below.sum() > 100
    g = g[np.abs(g) < 2.0 ** 52]
    fraction = np.where(np.abs(g) < 2.0 ** 50, 0.5, 0.0)  # t = g + 1/2 where exact, else g
    X = np.ascontiguousarray((g + fraction)[:, None])
    R = 19  # identical hashes: through the vector loops (8 and 4 lanes) and the scalar tail
    out = np.empty((X.shape[0], R), np.int32)
    _core.race_indices(X, np.ones((1, R)), np.zeros(R), W, out)
    np.testing.assert_array_equal(out, np.tile(np.arange(R) * W, (X.shape[0], 1)))
    if W < 1000:
        counts = np.zeros(R * W)
        _core.race_accumulate(X, np.ones((1, R)), np.zeros(R), W, counts)
        np.testing.assert_array_equal(counts.reshape(R, W)[:, 0], X.shape[0])
        assert counts.sum() == R * X.shape[0]


@pytest.mark.parametrize("x", [1e308, 2.0 ** 63])
def test_race_overflow_raises(level, x):
    X = np.array([[0.5, 0.25], [x, -x]])
    proj = np.array([[10.0, 1.0], [10.0, 0.0]])  # hash 0: inf - inf = NaN or 2^64 - 2^64 ...
    if x == 2.0 ** 63:
        proj = np.array([[1.0, 1.0], [0.0, 0.0]])  # hash 0: t = 2^63 exactly, beyond int64
    with pytest.raises(ValueError, match="RACE: the projection .* of row 1"):
        _core.race_indices(X, proj, np.zeros(2), 5, np.empty((2, 2), np.int32))
    with pytest.raises(ValueError, match="RACE"):
        _core.race_accumulate(X, proj, np.zeros(2), 5, np.zeros(10))


def test_race_no_fused_multiply_add(level):
    # t = (0 + 1 * (-1)) + (1 + 2^-30)(1 - 2^-30): the product rounds to 1, so t = 0 and the
    # bucket is 0; a fused multiply-add would give t = -2^-60 and the bucket W - 1
    X = np.array([[1.0, 1.0 + 2.0 ** -30]] * 9)
    proj = np.array([[-1.0], [1.0 - 2.0 ** -30]])
    out = np.empty((9, 1), np.int32)
    _core.race_indices(X, proj, np.zeros(1), 5, out)
    assert race_phases(X, proj, np.zeros(1))[0, 0] == 0.0
    np.testing.assert_array_equal(out, 0)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_race_accumulate_is_bincount_of_the_indices(level, dtype):
    rng = np.random.default_rng(5)
    R, W = 37, 16
    X, proj, offset = race_case(rng, 3000, 5, R)
    X = X.astype(dtype)
    out = np.empty((3000, R), np.int32)
    _core.race_indices(X, proj, offset, W, out)
    start = rng.integers(0, 9, R * W).astype(np.float64)
    counts = start.copy()
    assert _core.race_accumulate(X, proj, offset, W, counts) is None
    np.testing.assert_array_equal(counts, start + np.bincount(out.ravel(), minlength=R * W))


def test_race_same_result_on_one_and_two_threads(threads):
    rng = np.random.default_rng(6)
    R, W = 100, 80
    X, proj, offset = race_case(rng, 100_000, 10, R)
    results = []
    for k in (1, 2):
        threads(k)
        out = np.empty((X.shape[0], R), np.int32)
        _core.race_indices(X, proj, offset, W, out)
        counts = np.zeros(R * W)
        _core.race_accumulate(X, proj, offset, W, counts)
        results.append((out, counts))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])
    np.testing.assert_array_equal(results[0][1], np.bincount(results[0][0].ravel(), minlength=R * W))


def test_race_empty_and_degenerate_shapes():
    rng = np.random.default_rng(7)
    X, proj, offset = race_case(rng, 20, 4, 6)
    counts = np.full(6 * 5, 2.0)
    _core.race_accumulate(np.empty((0, 4)), proj, offset, 5, counts)
    np.testing.assert_array_equal(counts, 2.0)
    _core.race_indices(np.empty((0, 4)), proj, offset, 5, np.empty((0, 6), np.int32))
    # d = 0: t = offset; R = 0: nothing to write
    out = np.empty((3, 6), np.int32)
    _core.race_indices(np.empty((3, 0)), np.empty((0, 6)), offset + 2.0, 5, out)
    np.testing.assert_array_equal(out, np.tile(np.arange(6) * 5 + 2, (3, 1)))
    _core.race_indices(X, np.empty((4, 0)), np.empty(0), 5, np.empty((20, 0), np.int32))


# ------------------------------------------------------------------------------------ Gram

def gram_case(rng, n, sizes):
    sizes = np.asarray(sizes, np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    idx = (rng.integers(0, sizes, (n, sizes.size)) + offsets).astype(np.int32)
    return idx, offsets, sizes, int(sizes.sum())


@pytest.mark.parametrize("n, sizes", [
    (500, [3, 1, 7, 2]),
    (1000, [80, 80, 80]),
    (50, [5]),
    (300, [1, 1]),
    (2000, [300, 260, 4]),  # a 300 x 260 table is beyond table_max: counted straight into out
])
def test_gram_is_PtP(n, sizes):
    rng = np.random.default_rng(n + len(sizes))
    idx, offsets, sz, m = gram_case(rng, n, sizes)
    out = np.full((m, m), np.nan)
    _core.onehot_gram(idx, offsets, sz, out)
    P = dense_onehot(idx, m)
    np.testing.assert_array_equal(out, P.T @ P)


def test_gram_same_result_on_one_and_two_threads(threads):
    rng = np.random.default_rng(8)
    idx, offsets, sizes, m = gram_case(rng, 20_000, [30, 17, 30, 1, 25, 9])
    outs = []
    for k in (1, 2):
        threads(k)
        out = np.full((m, m), -1.0)
        _core.onehot_gram(idx, offsets, sizes, out)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    P = dense_onehot(idx, m)
    np.testing.assert_array_equal(outs[0], P.T @ P)


def test_gram_empty_rows_zero_columns_and_row_stride():
    rng = np.random.default_rng(9)
    idx, offsets, sizes, m = gram_case(rng, 0, [4, 3])
    out = np.full((m, m), np.nan)
    _core.onehot_gram(idx, offsets, sizes, out)  # n = 0: written entirely, with zeros
    np.testing.assert_array_equal(out, 0.0)
    _core.onehot_gram(np.empty((5, 0), np.int32), np.empty(0, np.int64), np.empty(0, np.int64), np.empty((0, 0)))
    idx, offsets, sizes, m = gram_case(rng, 40, [4, 3])
    wide = np.zeros((40, 5), np.int32)
    wide[:, 1:3] = idx
    out = np.empty((m, m))
    _core.onehot_gram(wide[:, 1:3], offsets, sizes, out)
    P = dense_onehot(idx, m)
    np.testing.assert_array_equal(out, P.T @ P)


@pytest.mark.parametrize("nthreads", [1, 2])
def test_gram_out_of_range_index_raises(threads, nthreads):
    threads(nthreads)
    rng = np.random.default_rng(10)
    idx, offsets, sizes, m = gram_case(rng, 50_000, [5, 6, 7])
    idx[40_000, 0] = -1
    idx[10, 2] = offsets[2] + sizes[2]  # one past column 2's range: the first bad entry
    idx[10, 1] = offsets[1] + sizes[1] + 2
    idx[11, 0] = offsets[1]
    # the first bad entry in row-major order is reported, whatever the threads
    with pytest.raises(ValueError, match=r"idx\[10, 1\] = 13 is outside column 1's range .* \[5, 11\)"):
        _core.onehot_gram(idx, offsets, sizes, np.empty((m, m)))
    idx[10, 1] = offsets[1] - 1
    with pytest.raises(ValueError, match=r"idx\[10, 1\] = 4 is outside column 1"):
        _core.onehot_gram(idx, offsets, sizes, np.empty((m, m)))


# ----------------------------------------------------------------------------- arguments

def _hist_args(**change):
    d, n_bins = 3, 4
    args = dict(X=np.zeros((5, d)), lower=np.zeros(d), scale=np.ones(d), upper=np.ones(d), n_bins=n_bins)
    args.update(change)
    return args


def _race_args(**change):
    args = dict(X=np.zeros((5, 3)), proj=np.zeros((3, 4)), offset=np.zeros(4), W=6)
    args.update(change)
    return args


BAD_HIST = [
    (dict(X=[[0.0, 0.0, 0.0]]), TypeError, "X must be a numpy array"),
    (dict(X=np.zeros((5, 3), np.int64)), TypeError, "X must be a float32 or float64"),
    (dict(X=np.zeros((5, 3), ">f8")), TypeError, "X must be a float32 or float64"),
    (dict(X=np.zeros(3)), ValueError, "X must be a 2-D array"),
    (dict(X=np.zeros((5, 6))[:, ::2]), ValueError, "X must be contiguous along its last axis"),
    (dict(lower=np.zeros(4)), ValueError, "lower must be a 1-D array of 3 elements"),
    (dict(lower=np.zeros((3, 1))), ValueError, "lower must be a 1-D array of 3 elements"),
    (dict(scale=np.ones(3, np.float32)), TypeError, "scale must have dtype float64"),
    (dict(upper=np.ones(6)[::2]), ValueError, "upper must be contiguous"),
    (dict(upper=None), TypeError, "upper must be a numpy array"),
    (dict(n_bins=0), ValueError, "n_bins must be in"),
    (dict(n_bins=2 ** 31), ValueError, "n_bins must be in"),
]


@pytest.mark.parametrize("change, error, message", BAD_HIST)
def test_hist_bad_arguments(change, error, message):
    a = _hist_args(**change)
    with pytest.raises(error, match=message):
        _core.hist_indices(a["X"], a["lower"], a["scale"], a["upper"], a["n_bins"], np.empty((5, 3), np.int32))
    counts = np.zeros(3 * a["n_bins"] if 0 <= a["n_bins"] < 100 else 1)
    with pytest.raises(error, match=message):
        _core.hist_accumulate(a["X"], a["lower"], a["scale"], a["upper"], a["n_bins"], counts)


@pytest.mark.parametrize("out, error, message", [
    (np.empty((5, 3), np.int64), TypeError, "out must have dtype int32"),
    (np.empty((5, 4), np.int32), ValueError, r"out must have shape \(5, 3\)"),
    (np.empty((4, 3), np.int32), ValueError, r"out must have shape \(5, 3\)"),
    (np.empty(15, np.int32), ValueError, "out must be a 2-D array"),
    (np.empty((5, 3), np.int32).T.copy().T, ValueError, "out must be contiguous along its last axis"),
    (None, TypeError, "out must be a numpy array"),
])
def test_hist_indices_bad_out(out, error, message):
    a = _hist_args()
    with pytest.raises(error, match=message):
        _core.hist_indices(a["X"], a["lower"], a["scale"], a["upper"], a["n_bins"], out)


def test_outputs_must_be_writeable_and_apart_from_inputs():
    a = _hist_args()
    out = np.empty((5, 3), np.int32)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="out must be writeable"):
        _core.hist_indices(a["X"], a["lower"], a["scale"], a["upper"], 4, out)
    counts = np.zeros(12)
    counts.flags.writeable = False
    with pytest.raises(ValueError, match="counts must be writeable"):
        _core.hist_accumulate(a["X"], a["lower"], a["scale"], a["upper"], 4, counts)
    buf = np.zeros(27)
    with pytest.raises(ValueError, match="counts must not overlap the inputs"):
        _core.hist_accumulate(buf[:15].reshape(5, 3), a["lower"], a["scale"], a["upper"], 4, buf[10:22])
    with pytest.raises(ValueError, match="counts must not overlap the inputs"):
        _core.race_accumulate(np.zeros((5, 1)), buf[:4].reshape(1, 4), np.zeros(4), 6, buf[:24])
    with pytest.raises(ValueError, match="counts must be a 1-D array of 12 elements"):
        _core.hist_accumulate(a["X"], a["lower"], a["scale"], a["upper"], 4, np.zeros(13))
    with pytest.raises(TypeError, match="counts must have dtype float64"):
        _core.hist_accumulate(a["X"], a["lower"], a["scale"], a["upper"], 4, np.zeros(12, np.float32))


BAD_RACE = [
    (dict(X=np.zeros((5, 3), np.float16)), TypeError, "X must be a float32 or float64"),
    (dict(X=np.zeros((5, 3, 1))), ValueError, "X must be a 2-D array"),
    (dict(proj=np.zeros((4, 4))), ValueError, r"proj must have shape \(d, R\) with d = 3"),
    (dict(proj=np.zeros(12)), ValueError, r"proj must have shape \(d, R\)"),
    (dict(proj=np.zeros((3, 4), np.float32)), TypeError, "proj must have dtype float64"),
    (dict(proj=np.asfortranarray(np.zeros((3, 4)))), ValueError, "proj must be C-contiguous"),
    (dict(proj=[[0.0] * 4] * 3), TypeError, "proj must be a numpy array"),
    (dict(offset=np.zeros(3)), ValueError, "offset must be a 1-D array of 4 elements"),
    (dict(offset=np.zeros(4, np.int64)), TypeError, "offset must have dtype float64"),
    (dict(W=0), ValueError, "W must be in"),
    (dict(W=-3), ValueError, "W must be in"),
]


@pytest.mark.parametrize("change, error, message", BAD_RACE)
def test_race_bad_arguments(change, error, message):
    a = _race_args(**change)
    with pytest.raises(error, match=message):
        _core.race_indices(a["X"], a["proj"], a["offset"], a["W"], np.empty((5, 4), np.int32))
    with pytest.raises(error, match=message):
        _core.race_accumulate(a["X"], a["proj"], a["offset"], a["W"], np.zeros(24))


def test_race_bad_outputs():
    a = _race_args()
    with pytest.raises(ValueError, match=r"out must have shape \(5, 4\)"):
        _core.race_indices(a["X"], a["proj"], a["offset"], 6, np.empty((5, 3), np.int32))
    with pytest.raises(TypeError, match="out must have dtype int32"):
        _core.race_indices(a["X"], a["proj"], a["offset"], 6, np.empty((5, 4), np.uint32))
    with pytest.raises(ValueError, match="counts must be a 1-D array of 24 elements"):
        _core.race_accumulate(a["X"], a["proj"], a["offset"], 6, np.zeros(25))
    with pytest.raises(ValueError, match="do not fit int32 indices"):
        _core.race_indices(a["X"], a["proj"], a["offset"], 2 ** 30, np.empty((5, 4), np.int32))
    with pytest.raises(ValueError, match="do not fit int32 indices"):
        _core.hist_indices(a["X"], np.zeros(3), np.ones(3), np.ones(3), 2 ** 30, np.empty((5, 3), np.int32))


def test_gram_bad_arguments():
    rng = np.random.default_rng(11)
    idx, offsets, sizes, m = gram_case(rng, 10, [3, 4])
    out = np.empty((m, m))
    cases = [
        ((idx.astype(np.int64), offsets, sizes, out), TypeError, "idx must have dtype int32"),
        ((idx.tolist(), offsets, sizes, out), TypeError, "idx must be a numpy array"),
        ((idx.ravel(), offsets, sizes, out), ValueError, "idx must be a 2-D array"),
        ((np.asfortranarray(idx), offsets, sizes, out), ValueError, "idx must be contiguous along its last axis"),
        ((idx, offsets.astype(np.int32), sizes, out), TypeError, "offsets must have dtype int64"),
        ((idx, offsets[:1], sizes, out), ValueError, "offsets must be a 1-D array of 2 elements"),
        ((idx, np.array([0, 4]), sizes, out), ValueError, r"offsets must be the running sums .* offsets\[1\] = 4, "
                                                          "expected 3"),
        ((idx, offsets, np.array([3, -1]), out), ValueError, r"sizes\[1\] = -1"),
        ((idx, offsets, sizes.astype(np.float64), out), TypeError, "sizes must have dtype int64"),
        ((idx, offsets, sizes, np.empty((m, m + 1))), ValueError, r"out must have shape \(m, m\) with m = sum\(sizes\)"
                                                                  r" = 7"),
        ((idx, offsets, sizes, np.empty((m, m), np.float32)), TypeError, "out must have dtype float64"),
        ((idx, offsets, sizes, np.asfortranarray(np.empty((m, m)))), ValueError, "out must be C-contiguous"),
        ((idx, offsets, sizes, None), TypeError, "out must be a numpy array"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            _core.onehot_gram(*args)
    readonly = np.empty((m, m))
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="out must be writeable"):
        _core.onehot_gram(idx, offsets, sizes, readonly)
