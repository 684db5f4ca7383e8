"""The C++ kernels of the sparse Johnson-Lindenstrauss transform (pysketch/sparse_jl.hpp through
pysketch._core): sjlt_apply against NumPy references written here (the kernel's exact order of
operations, bit for bit, and X @ S.T to 1e-12), sjlt_apply_csr against sjlt_apply, a sequence of
sjlt_update calls against the batch; every SIMD level, 1 and 2 threads, and the argument checks."""

import numpy as np
import pytest
from scipy import sparse

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

def draw_tables(rng, s, d, k):
    """rows (s, d) int32, distinct in each column (graph construction), vals +-1/sqrt(s)
    times a random factor (so that products are not all exact)."""
    rows = np.argsort(rng.random((k, d)), axis=0)[:s].astype(np.int32)
    vals = rng.choice([-1.0, 1.0], (s, d)) / np.sqrt(s) * rng.uniform(0.5, 2.0, (s, d))
    return np.ascontiguousarray(rows), np.ascontiguousarray(vals)


def dense_matrix(rows, vals, k):
    """S (k, d) with S[rows[r, j], j] += vals[r, j]."""
    s, d = rows.shape
    S = np.zeros((k, d))
    np.add.at(S, (rows, np.broadcast_to(np.arange(d), (s, d))), vals)
    return S


def ordered_reference(X, rows, vals, k):
    """The kernel's arithmetic: from +0.0, for j = 0, 1, ... and r = 0, ..., s - 1,
    y[rows[r, j]] = y[rows[r, j]] + vals[r, j] * float64(x_j) (product rounded, then sum)."""
    x = np.asarray(X).astype(np.float64)
    Y = np.zeros((x.shape[0], k))
    s, d = rows.shape
    for j in range(d):
        for r in range(s):
            Y[:, rows[r, j]] = Y[:, rows[r, j]] + vals[r, j] * x[:, j]
    return Y


def apply(X, rows, vals, k, fill=np.nan):
    out = np.full((X.shape[0], k), fill)
    _core.sjlt_apply(X, rows, vals, out)
    return out


def apply_csr(A, rows, vals, k, fill=np.nan):
    out = np.full((A.shape[0], k), fill)
    _core.sjlt_apply_csr(A.indptr, A.indices, A.data, A.shape[1], rows, vals, out)
    return out


def sparse_records(rng, n, d, density, dtype=np.float64):
    X = rng.standard_normal((n, d)) * (rng.random((n, d)) < density)
    return X.astype(dtype)


# --------------------------------------------------------------------------- dense product

CASES = [  # (n, d, k, s)
    (0, 5, 4, 2),
    (1, 1, 1, 1),
    (3, 1, 7, 3),
    (7, 13, 5, 1),
    (8, 64, 16, 4),
    (9, 129, 33, 4),
    (17, 300, 50, 2),
    (25, 257, 256, 8),
    (40, 77, 3, 3),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n, d, k, s", CASES)
def test_apply_matches_references(n, d, k, s, dtype, level):
    rng = np.random.default_rng(n * 1000 + d + k + s)
    rows, vals = draw_tables(rng, s, d, k)
    X = rng.standard_normal((n, d)).astype(dtype)
    out = apply(X, rows, vals, k)
    np.testing.assert_array_equal(out, ordered_reference(X, rows, vals, k))
    ref = X.astype(np.float64) @ dense_matrix(rows, vals, k).T
    scale = np.abs(X.astype(np.float64)) @ np.abs(dense_matrix(rows, vals, k)).T
    assert np.all(np.abs(out - ref) <= 1e-12 * scale)
    if n and k:
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-12 * scale.max())


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_apply_row_strides(dtype, level):
    rng = np.random.default_rng(5)
    d, k, s = 150, 40, 3
    rows, vals = draw_tables(rng, s, d, k)
    wide = rng.standard_normal((41, d + 9)).astype(dtype)
    for X in (wide[:, :d], wide[::3, 4:4 + d], wide[::-2, :d], wide[5:6, :d]):
        assert X.strides[1] == X.itemsize
        np.testing.assert_array_equal(apply(X, rows, vals, k), ordered_reference(X, rows, vals, k))


def test_apply_overwrites_out_and_untouched_rows_are_zero():
    rng = np.random.default_rng(6)
    d, k, s = 20, 30, 2
    rows = np.ascontiguousarray(rng.integers(0, 10, (s, d)).astype(np.int32))  # rows 10.. never hit
    rows[1] = (rows[0] + 1) % 10
    vals = np.ascontiguousarray(rng.standard_normal((s, d)))
    X = rng.standard_normal((11, d))
    out = apply(X, rows, vals, k, fill=np.nan)
    assert not np.isnan(out).any()
    assert np.all(out[:, 10:] == 0.0) and not np.signbit(out[:, 10:]).any()
    np.testing.assert_array_equal(out, ordered_reference(X, rows, vals, k))


def test_apply_repeated_rows_in_a_column_add_both():
    rows = np.array([[0, 1], [0, 1]], np.int32)
    vals = np.array([[1.0, 2.0], [3.0, 5.0]])
    X = np.array([[1.0, 10.0]])
    np.testing.assert_array_equal(apply(X, rows, vals, 2), [[4.0, 70.0]])


def test_apply_zero_columns_and_signed_zeros(level):
    # whole tiles of zero columns are skipped; -0.0 inputs and products never change a bit
    rng = np.random.default_rng(7)
    n, d, k, s = 37, 300, 24, 3
    rows, vals = draw_tables(rng, s, d, k)
    X = sparse_records(rng, n, d, 0.05)
    X[:, 100:200] = 0.0
    X[rng.random((n, d)) < 0.1] = -0.0
    out = apply(X, rows, vals, k)
    ref = ordered_reference(X, rows, vals, k)
    np.testing.assert_array_equal(out, ref)
    np.testing.assert_array_equal(np.signbit(out), np.signbit(ref))
    assert not np.signbit(out[out == 0.0]).any()  # accumulators start at +0.0 and stay off -0.0


def test_apply_propagates_nan_and_inf():
    rng = np.random.default_rng(8)
    d, k, s = 40, 16, 2
    rows, vals = draw_tables(rng, s, d, k)
    X = np.zeros((9, d))
    X[2, 5] = np.nan
    X[4, 7] = np.inf
    out = apply(X, rows, vals, k)
    np.testing.assert_array_equal(out, ordered_reference(X, rows, vals, k))
    assert np.isnan(out[2, rows[:, 5]]).all() and np.isinf(out[4, rows[:, 7]]).all()
    assert not np.isnan(np.delete(out, [2, 4], axis=0)).any()


def test_apply_no_rows_or_no_columns():
    rng = np.random.default_rng(9)
    rows, vals = draw_tables(rng, 0, 6, 5)
    np.testing.assert_array_equal(apply(rng.standard_normal((3, 6)), rows, vals, 5), np.zeros((3, 5)))
    rows0 = np.zeros((2, 0), np.int32)
    vals0 = np.zeros((2, 0))
    np.testing.assert_array_equal(apply(np.zeros((4, 0)), rows0, vals0, 3), np.zeros((4, 3)))
    out = np.zeros((0, 3))
    _core.sjlt_apply(np.zeros((0, 6)), *draw_tables(rng, 2, 6, 3), out)


def test_same_bits_for_every_level_and_one_or_two_threads(threads):
    rng = np.random.default_rng(10)
    n, d, k, s = 203, 1100, 96, 4
    rows, vals = draw_tables(rng, s, d, k)
    X = rng.standard_normal((n, d))
    X32 = X.astype(np.float32)
    A = sparse.csr_matrix(sparse_records(rng, n, d, 0.6))  # enough entries for two threads
    before = _core.simd_level()
    results = []
    try:
        for lvl in AVAILABLE:
            _core.set_simd_level(lvl)
            for count in (1, 2):
                threads(count)
                results.append((apply(X, rows, vals, k), apply(X32, rows, vals, k), apply_csr(A, rows, vals, k)))
    finally:
        _core.set_simd_level(before)
    for dense64, dense32, csr in results[1:]:
        np.testing.assert_array_equal(dense64, results[0][0])
        np.testing.assert_array_equal(dense32, results[0][1])
        np.testing.assert_array_equal(csr, results[0][2])
    np.testing.assert_array_equal(results[0][2], apply(A.toarray(), rows, vals, k))


# ------------------------------------------------------------------------------------- CSR

@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("ptr_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_csr_same_bits_as_dense(dtype, ptr_dtype, index_dtype, level):
    rng = np.random.default_rng(11)
    n, d, k, s = 45, 260, 37, 3
    rows, vals = draw_tables(rng, s, d, k)
    X = sparse_records(rng, n, d, 0.1, dtype)
    X[3] = 0.0  # an empty record
    A = sparse.csr_matrix(X)
    assert A.has_canonical_format
    indptr, indices = A.indptr.astype(ptr_dtype), A.indices.astype(index_dtype)
    out = np.full((n, k), np.nan)
    _core.sjlt_apply_csr(indptr, indices, A.data, d, rows, vals, out)
    np.testing.assert_array_equal(out, apply(X, rows, vals, k))
    np.testing.assert_array_equal(out, ordered_reference(X, rows, vals, k))


def test_csr_explicit_zeros_and_negative_zeros_change_nothing():
    rng = np.random.default_rng(12)
    n, d, k, s = 20, 90, 12, 2
    rows, vals = draw_tables(rng, s, d, k)
    X = sparse_records(rng, n, d, 0.2)
    A = sparse.csr_matrix(X)
    dense_ref = apply(X, rows, vals, k)
    # store explicit +0.0 and -0.0 entries at some columns the record does not use
    data, indices, indptr = [], [], [0]
    for i in range(n):
        cols = set(A.indices[A.indptr[i]:A.indptr[i + 1]])
        extra = [j for j in range(0, d, 7) if j not in cols]
        entries = sorted([(j, X[i, j]) for j in cols] + [(j, -0.0 if j % 2 else 0.0) for j in extra])
        indices += [j for j, _ in entries]
        data += [v for _, v in entries]
        indptr.append(len(indices))
    B = sparse.csr_matrix((np.array(data), np.array(indices, np.int32), np.array(indptr, np.int32)), shape=(n, d))
    out = apply_csr(B, rows, vals, k)
    np.testing.assert_array_equal(out, dense_ref)
    assert not np.signbit(out[out == 0.0]).any()


def test_csr_unsorted_and_duplicate_indices_agree_to_rounding():
    rng = np.random.default_rng(13)
    n, d, k, s = 30, 120, 20, 4
    rows, vals = draw_tables(rng, s, d, k)
    X = sparse_records(rng, n, d, 0.3)
    A = sparse.csr_matrix(X)
    # reverse each row's entries, and split every entry in two duplicates
    data, indices = [], []
    for i in range(n):
        lo, hi = A.indptr[i], A.indptr[i + 1]
        for p in range(hi - 1, lo - 1, -1):
            a = A.data[p] * 0.3
            data += [a, A.data[p] - a]
            indices += [A.indices[p]] * 2
    indptr = 2 * A.indptr
    B = sparse.csr_matrix((np.array(data), np.array(indices), indptr), shape=(n, d))
    assert not B.has_canonical_format
    out = apply_csr(B, rows, vals, k)
    ref = apply(X, rows, vals, k)
    scale = np.abs(X) @ np.abs(dense_matrix(rows, vals, k)).T
    assert np.all(np.abs(out - ref) <= 1e-13 * scale)
    assert not np.array_equal(out, ref)  # the order did change some bits


def test_csr_indptr_need_not_start_at_zero():
    # a slice's arrays: rows take the positions indptr[0] .. indptr[-1] of longer arrays
    rng = np.random.default_rng(14)
    n, d, k, s = 10, 50, 8, 2
    rows, vals = draw_tables(rng, s, d, k)
    X = sparse_records(rng, n, d, 0.3)
    A = sparse.csr_matrix(X)
    out = np.full((4, k), np.nan)
    _core.sjlt_apply_csr(A.indptr[3:8], A.indices, A.data, d, rows, vals, out)
    np.testing.assert_array_equal(out, apply(X[3:7], rows, vals, k))


def test_csr_no_records_and_no_entries():
    rng = np.random.default_rng(15)
    rows, vals = draw_tables(rng, 2, 9, 4)
    out = np.zeros((0, 4))
    _core.sjlt_apply_csr(np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0), 9, rows, vals, out)
    out = np.full((3, 4), np.nan)
    _core.sjlt_apply_csr(np.zeros(4, np.int64), np.zeros(0, np.int32), np.zeros(0), 9, rows, vals, out)
    assert np.all(out == 0.0) and not np.signbit(out).any()


# ---------------------------------------------------------------------------------- update

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_update_sequence_equals_batch(dtype):
    rng = np.random.default_rng(16)
    n, d, k, s = 3, 140, 26, 4
    rows, vals = draw_tables(rng, s, d, k)
    X = sparse_records(rng, n, d, 0.5, dtype)
    batch = apply(X, rows, vals, k)
    for i in range(n):
        y = np.zeros(k)
        for j in range(d):
            _core.sjlt_update(y, j, float(X[i, j]), rows, vals)
        np.testing.assert_array_equal(y, batch[i])
        z = np.zeros(k)  # the nonzeros only, in order (streaming a sparse record)
        for j in np.flatnonzero(X[i]):
            _core.sjlt_update(z, int(j), float(X[i, j]), rows, vals)
        np.testing.assert_array_equal(z, batch[i])


def test_update_adds_in_place():
    rows = np.array([[2, 0], [1, 3]], np.int32)
    vals = np.array([[0.5, -1.0], [2.0, 4.0]])
    y = np.array([1.0, 1.0, 1.0, 1.0])
    _core.sjlt_update(y, 0, 3.0, rows, vals)
    np.testing.assert_array_equal(y, [1.0, 7.0, 2.5, 1.0])
    _core.sjlt_update(y, 1, -0.5, rows, vals)
    np.testing.assert_array_equal(y, [1.5, 7.0, 2.5, -1.0])
    _core.sjlt_update(y[::1], np.int64(1), np.float32(2.0), rows, vals)  # numpy scalars accepted
    np.testing.assert_array_equal(y, [-0.5, 7.0, 2.5, 7.0])


# ----------------------------------------------------------------------------- argument checks

def good_args(rng=None):
    rng = rng or np.random.default_rng(17)
    n, d, k, s = 6, 10, 8, 2
    rows, vals = draw_tables(rng, s, d, k)
    return rng.standard_normal((n, d)), rows, vals, np.zeros((n, k))


def test_apply_checks_its_arguments():
    X, rows, vals, out = good_args()

    def fails(exc, match, **kw):
        args = dict(X=X, rows=rows, vals=vals, out=out)
        args.update(kw)
        with pytest.raises(exc, match=match):
            _core.sjlt_apply(args["X"], args["rows"], args["vals"], args["out"])

    fails(TypeError, "^X must be a numpy array", X=X.tolist())
    fails(TypeError, "^X must be a float32 or float64", X=X.astype(np.int64))
    fails(TypeError, "^X must be a float32 or float64", X=X.astype(">f8"))
    fails(ValueError, "^X must be a 2-D array", X=X[0])
    fails(ValueError, "^X must be contiguous along its last axis", X=np.asfortranarray(X))
    fails(TypeError, "^rows must have dtype int32", rows=rows.astype(np.int64))
    fails(ValueError, "^rows must be C-contiguous", rows=np.asfortranarray(rows))
    fails(ValueError, "^rows must be a 2-D array", rows=rows[0])
    fails(TypeError, "^vals must have dtype float64", vals=vals.astype(np.float32))
    fails(ValueError, "^vals must have the shape of rows", vals=vals[:1])
    fails(ValueError, r"^rows and vals must have shape \(s, d\) with d = X.shape\[1\] = 9", X=X[:, :9])
    fails(TypeError, "^out must have dtype float64", out=out.astype(np.float32))
    fails(ValueError, r"^out must have shape \(n, k\) with n = X.shape\[0\] = 6", out=out[:5])
    fails(ValueError, "^out must be C-contiguous", out=np.zeros((8, 6)).T)
    readonly = out.copy()
    readonly.flags.writeable = False
    fails(ValueError, "^out must be writeable", out=readonly)
    same = np.zeros((6, 10))
    fails(ValueError, "^out must not overlap the inputs", X=same, rows=np.zeros((2, 10), np.int32),
          vals=np.ones((2, 10)), out=same)
    bad = rows.copy()
    bad[1, 3] = 8
    bad[1, 7] = -1
    fails(ValueError, r"^rows\[1, 3\] = 8 is not in \[0, k\) with k = 8", rows=bad)
    bad[0, 9] = -2
    fails(ValueError, r"^rows\[0, 9\] = -2 is not in \[0, k\)", rows=bad)
    fails(ValueError, r"^rows\[1, 3\] = 8 is not in \[0, k\) with k = 8", rows=bad[:, :8].copy(), vals=vals[:, :8].copy(),
          X=X[:, :8])
    nonfinite = vals.copy()
    nonfinite[0, 4] = np.inf
    fails(ValueError, r"^vals\[0, 4\] = inf is not finite", vals=nonfinite)
    nonfinite[0, 2] = np.nan
    fails(ValueError, r"^vals\[0, 2\] = nan is not finite", vals=nonfinite)
    np.testing.assert_array_equal(out, 0.0)  # nothing was written by the failed calls


def test_apply_checks_rows_of_a_large_table_first_bad_entry():
    # the check runs on several threads: the message still names the first bad entry
    rng = np.random.default_rng(18)
    s, d, k = 3, 400_000, 64
    rows = rng.integers(0, k, (s, d)).astype(np.int32)
    vals = np.ones((s, d))
    rows[2, 5] = 64
    rows[1, 399_999] = -7
    rows[1, 200_000] = 99
    with pytest.raises(ValueError, match=r"^rows\[1, 200000\] = 99 is not in \[0, k\)"):
        _core.sjlt_apply(np.zeros((1, d)), rows, vals, np.zeros((1, k)))


def test_apply_csr_checks_its_arguments():
    rng = np.random.default_rng(19)
    n, d, k, s = 5, 12, 6, 2
    rows, vals = draw_tables(rng, s, d, k)
    A = sparse.csr_matrix(sparse_records(rng, n, d, 0.5))
    out = np.zeros((n, k))

    def fails(exc, match, **kw):
        args = dict(indptr=A.indptr, indices=A.indices, data=A.data, n_cols=d, rows=rows, vals=vals, out=out)
        args.update(kw)
        with pytest.raises(exc, match=match):
            _core.sjlt_apply_csr(*args.values())

    fails(TypeError, "^indptr must be an int32 or int64", indptr=A.indptr.astype(np.float64))
    fails(TypeError, "^indices must be an int32 or int64", indices=A.indices.astype(np.uint32))
    fails(TypeError, "^data must be a float32 or float64", data=A.data.astype(np.int64))
    fails(TypeError, "^indptr must be a numpy array", indptr=list(A.indptr))
    fails(ValueError, "^indptr must be a 1-D array of n \\+ 1 >= 1 elements", indptr=np.zeros(0, np.int32))
    fails(ValueError, "^indptr must be a 1-D array", indptr=A.indptr[None])
    fails(ValueError, "^indptr must be contiguous", indptr=np.repeat(A.indptr, 2)[::2])
    fails(ValueError, "^indices and data must be 1-D arrays of the same length", data=A.data[:-1])
    fails(ValueError, "^n_cols = 11 must equal rows.shape\\[1\\] = 12", n_cols=11)
    fails(ValueError, "^n_cols = -1 must equal", n_cols=-1)
    fails(ValueError, r"^out must have shape \(n, k\) with n = len\(indptr\) - 1 = 4", indptr=A.indptr[:5])
    fails(TypeError, "^out must have dtype float64", out=out.astype(np.float32))
    shared = np.zeros(max(A.nnz, n * k) + 10)
    fails(ValueError, "^out must not overlap the inputs", data=shared[: A.nnz], out=shared[: n * k].reshape(n, k))
    bad = A.indptr.copy()
    bad[2], bad[3] = bad[3], bad[2] - 1
    fails(ValueError, r"^indptr must be non-decreasing: indptr\[3\] = ", indptr=bad)
    bad = A.indptr.copy()
    bad[-1] = A.nnz + 1
    fails(ValueError, r"^indptr\[5\] = %d exceeds the length of indices and data \(%d\)" % (A.nnz + 1, A.nnz),
          indptr=bad)
    bad = A.indptr.copy()
    bad[0] = -1
    fails(ValueError, r"^indptr\[0\] = -1 is negative", indptr=bad)
    bad = A.indices.copy()
    bad[4] = d
    bad[7] = -1
    fails(ValueError, r"^indices\[4\] = 12 is not in \[0, n_cols\) with n_cols = 12", indices=bad)
    bad = rows.copy()
    bad[0, 0] = k
    fails(ValueError, r"^rows\[0, 0\] = 6 is not in \[0, k\)", rows=bad)
    np.testing.assert_array_equal(out, 0.0)


def test_update_checks_its_arguments():
    rng = np.random.default_rng(20)
    d, k, s = 10, 8, 2
    rows, vals = draw_tables(rng, s, d, k)
    y = np.zeros(k)

    def fails(exc, match, **kw):
        args = dict(out_row=y, j=3, delta=1.0, rows=rows, vals=vals)
        args.update(kw)
        with pytest.raises(exc, match=match):
            _core.sjlt_update(*args.values())

    fails(ValueError, r"^j = 10 is not in \[0, d\) with d = rows.shape\[1\] = 10", j=10)
    fails(ValueError, r"^j = -1 is not in \[0, d\)", j=-1)
    fails(TypeError, "^out_row must have dtype float64", out_row=y.astype(np.float32))
    fails(TypeError, "^out_row must be a numpy array", out_row=[0.0] * k)
    fails(ValueError, "^out_row must be a 1-D array", out_row=y[None])
    fails(ValueError, "^out_row must be contiguous", out_row=np.zeros(2 * k)[::2])
    readonly = y.copy()
    readonly.flags.writeable = False
    fails(ValueError, "^out_row must be writeable", out_row=readonly)
    fails(TypeError, "^rows must have dtype int32", rows=rows.astype(np.int64))
    fails(ValueError, "^vals must have the shape of rows", vals=vals[:, :5].copy())
    fails(ValueError, "^out_row must not overlap the inputs", out_row=vals[0])
    bad = rows.copy()
    bad[1, 3] = k
    fails(ValueError, r"^rows\[1, 3\] = 8 is not in \[0, k\) with k = 8", rows=bad)
    _core.sjlt_update(y, 4, 1.0, bad, vals)  # only column j is looked at
    bad = vals.copy()
    bad[0, 3] = np.nan
    fails(ValueError, r"^vals\[0, 3\] = nan is not finite", vals=bad)
    before = y.copy()
    fails(ValueError, r"^rows\[0, 3\] = 8", rows=np.where(np.arange(d) == 3, k, rows).astype(np.int32))
    np.testing.assert_array_equal(y, before)  # checked before any write
