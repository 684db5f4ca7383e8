"""Feature maps and sketches: NumPy references, merging, streaming, files, determinism."""

import json
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import pysketch
from pysketch.features import QUANTIZED_FIRST_HARMONIC, FeatureMap, make_feature_map
from pysketch.frequencies import GaussianLaw, OrthonormalBasesLaw, QuadraticGaussianLaw
from pysketch.operators import make_operator
from pysketch.accumulate import SketchAccumulator
from pysketch.sketch import SUBSAMPLED_FORMAT_VERSION, Sketch, SketchFileError

OPERATORS = ("dense", "r3", "gr2", "fastfood")
KINDS = ("complex", "real", "quantized", "quadratic")
SIMD_LEVELS = ("scalar", "sse", "avx2", "avx512")


def fmap(kind, op="r3", d=20, m=100, seed=1, dtype=np.float64, dither="random"):
    law = QuadraticGaussianLaw() if kind == "quadratic" else GaussianLaw(1.5)
    return make_feature_map(
        d, m, kind, operator=op, law=law, random_state=seed, dtype=dtype,
        dither=dither if kind in ("complex", "quantized") else None,
    )


def reference_sum(fm, X):
    """The sum of the features from the dense Omega and NumPy float64 trigonometry."""
    P = X.astype(np.float64) @ fm.operator.to_dense().astype(np.float64)
    u = 0.0 if fm.dither is None else fm.dither
    if fm.kind == "complex":
        return np.exp(1j * (P + u)).sum(axis=0)
    if fm.kind == "real":
        return np.concatenate([np.cos(P + u).sum(axis=0), np.sin(P + u).sum(axis=0)])
    if fm.kind == "quantized":
        return 2**-0.5 * (np.sign(np.cos(P + u)) + 1j * np.sign(np.sin(P + u))).sum(axis=0)
    return (P**2).sum(axis=0)


@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("kind", KINDS)
def test_sketch_equals_numpy_reference(op, kind):
    X = np.random.default_rng(0).standard_normal((777, 20))
    fm = fmap(kind, op)
    sk = fm.sketch(X)
    assert sk.count == 777
    ref = reference_sum(fm, X)
    # float64: 1e-10 relative to the number of records (each feature has modulus <= 1 for
    # the Fourier maps; quadratic features are scaled by their mean size)
    scale = 777 * (1 if kind != "quadratic" else np.abs(ref).mean() / 777)
    assert np.abs(sk.sum - ref).max() <= 1e-10 * scale
    np.testing.assert_allclose(fm.transform(X).sum(axis=0), sk.sum, rtol=0, atol=1e-10 * scale)
    np.testing.assert_allclose(sk.mean(), sk.sum / 777)


@pytest.mark.parametrize("op", ("r3", "gr2", "fastfood"))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_one_and_two_record_sketches(op, kind, dtype):
    # fewer than 3 records go through all the operator's blocks at once (operators.hpp):
    # the same sums as the NumPy reference, and as the features of those records
    X = np.random.default_rng(7).standard_normal((2, 20))
    fm = fmap(kind, op, dtype=dtype)
    tol = 1e-10 if dtype == np.float64 else 2e-4
    for rows in (X[:1], X):
        sk = fm.sketch(rows)
        ref = reference_sum(fm, rows)
        scale = 1.0 if kind != "quadratic" else np.abs(ref).mean()
        assert sk.count == len(rows)
        assert np.abs(sk.sum - ref).max() <= tol * len(rows) * scale
        np.testing.assert_allclose(fm.transform(rows).sum(axis=0), sk.sum, rtol=0, atol=tol * len(rows) * scale)


@pytest.mark.parametrize("op", ("dense", "r3"))
def test_float32_maps_agree_with_float64_reference(op):
    X = np.random.default_rng(1).standard_normal((500, 64)).astype(np.float32)
    fm = fmap("complex", op, d=64, m=640, dtype=np.float32)
    ref = reference_sum(fm, X.astype(np.float64))
    # float32 phases of size ~10 carry errors ~1e-6; averaged over records
    assert np.abs(fm.sketch(X).sum - ref).max() / 500 < 2e-5


def test_quantized_first_harmonic():
    # E over a uniform phase of the quantized feature times e^{-i phase} is the first
    # Fourier coefficient 2 sqrt(2) / pi (notes seed003 sec. 1.4).
    d, m = 4, 20000
    fm = FeatureMap(make_operator(d, m, "dense", random_state=0), "quantized", random_state=1)
    x = np.zeros(d)
    z = fm.transform(x) * np.exp(-1j * fm.dither)
    se_re, se_im = z.real.std() / np.sqrt(m), z.imag.std() / np.sqrt(m)
    assert abs(z.real.mean() - QUANTIZED_FIRST_HARMONIC) < 5 * se_re
    assert abs(z.imag.mean()) < 5 * se_im
    np.testing.assert_allclose(np.abs(fm.transform(x)), 1.0)


@pytest.mark.parametrize("op", OPERATORS)
def test_merge_of_parts_equals_sketch_of_whole(op):
    X = np.random.default_rng(2).standard_normal((1000, 20))
    fm = fmap("complex", op)
    whole = fm.sketch(X)
    parts = [fm.sketch(X[i : i + 300]) for i in range(0, 1000, 300)]
    merged = sum(parts)
    assert merged.count == 1000
    np.testing.assert_allclose(merged.sum, whole.sum, rtol=0, atol=1e-11 * 1000)
    with pytest.raises(ValueError, match="different feature maps"):
        whole + fmap("complex", op, seed=2).sketch(X)


def test_streaming_update_equals_one_call_and_is_atomic():
    X = np.random.default_rng(3).standard_normal((900, 20))
    fm = fmap("real", "gr2")
    acc = SketchAccumulator(fm, batch_size=128)
    acc.update(X[:100]).update(iter([X[100:400], X[400:401], X[401:401]])).update([X[401:900]])
    np.testing.assert_allclose(acc.sketch().sum, fm.sketch(X).sum, rtol=0, atol=1e-10 * 900)
    assert acc.count == 900
    bad = X[:50].copy()
    bad[17, 3] = np.nan
    with pytest.raises(ValueError, match="record 17"):
        acc.update(bad)
    with pytest.raises(ValueError, match="20 columns"):
        acc.update(np.ones((3, 19)))
    assert acc.count == 900  # nothing of the failed updates was added
    np.testing.assert_allclose(acc.sketch().sum, fm.sketch(X).sum, rtol=0, atol=1e-10 * 900)


@pytest.mark.parametrize("kind", KINDS)
def test_sketch_refuses_a_sum_that_is_not_finite(kind):
    fm = fmap(kind, "r3")
    good = fm.sketch(np.zeros((2, 20))).sum
    for i, bad_value in ((0, np.nan), (len(good) - 1, np.inf), (3, -np.inf)):
        for part in ((1.0, 1j) if np.iscomplexobj(good) else (1.0,)):
            bad = good.copy()
            bad[i] = bad_value * part if part == 1.0 else good[i].real + 1j * bad_value
            with pytest.raises(ValueError, match="sum must be finite"):
                Sketch(fm, bad, 2)
    assert Sketch(fm, good, 2).count == 2


def test_empty_batches_and_bad_inputs():
    fm = fmap("complex", "r3")
    empty = fm.sketch(np.zeros((0, 20)))
    assert empty.count == 0 and not empty.sum.any()
    with pytest.raises(ValueError, match="empty dataset"):
        empty.mean()
    with pytest.raises(ValueError, match="NaN or infinity"):
        fm.sketch(np.full((2, 20), np.inf))
    with pytest.raises(ValueError, match="2-D"):
        fm.sketch(np.ones(20))
    with pytest.raises(TypeError):
        fm.sketch(np.ones((2, 20), dtype=complex))
    with pytest.raises(ValueError):
        SketchAccumulator(fm, batch_size=0)
    with pytest.raises(ValueError, match="count"):
        Sketch(fm, np.zeros(100, complex), -1)
    with pytest.raises(ValueError, match="shape"):
        Sketch(fm, np.zeros(99, complex), 1)
    with pytest.raises(ValueError, match="dither"):
        FeatureMap(make_operator(3, 4), "quadratic", dither="random")


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads VmHWM from /proc (Linux)")
def test_memmap_streams_in_bounded_memory(tmp_path):
    # A 96 MB float32 .npy through np.load(mmap_mode='r'): the peak resident memory of a
    # fresh process grows by far less than the file (its pages are released after use).
    path = tmp_path / "big.npy"
    rows, d = 96 * 2**20 // (4 * 64), 64
    arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, d))
    arr[:] = 0.25
    arr.flush()
    del arr
    # VmHWM: the peak of this process's own address space (ru_maxrss survives exec on
    # Linux and would include this test process's memory at fork time).
    code = f"""
import numpy as np, pysketch
from pysketch.features import make_feature_map
def hwm_mb():
    with open("/proc/self/status") as f:
        return int([l for l in f if l.startswith("VmHWM")][0].split()[1]) / 1024
fm = make_feature_map(64, 256, operator="r3", random_state=0, dtype=np.float32)
X = np.load({str(path)!r}, mmap_mode="r")
before = hwm_mb()
sk = fm.sketch(X)
assert sk.count == {rows}
print(hwm_mb() - before)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    growth_mb = float(done.stdout.strip())
    assert growth_mb < 40, growth_mb


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("op", OPERATORS)
def test_save_load_round_trip_is_bit_exact(tmp_path, kind, op):
    X = np.random.default_rng(4).standard_normal((200, 20))
    fm = fmap(kind, op, dtype=np.float32)
    sk = fm.sketch(X)
    path = tmp_path / "s.npz"
    sk.save(path)
    back = Sketch.load(path)
    assert back.count == sk.count
    assert back.sum.dtype == sk.sum.dtype
    np.testing.assert_array_equal(back.sum, sk.sum)
    assert back.feature_map == fm
    np.testing.assert_array_equal(back.feature_map.sketch(X).sum, sk.sum)  # the map is rebuilt exactly
    (back + sk)  # same map: merges


def test_damaged_files_give_clear_errors(tmp_path):
    sk = fmap("complex", "r3").sketch(np.ones((5, 20)))
    path = tmp_path / "s.npz"
    sk.save(path)
    raw = path.read_bytes()
    (tmp_path / "trunc.npz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(SketchFileError):
        Sketch.load(tmp_path / "trunc.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a sketch")
    with pytest.raises(SketchFileError):
        Sketch.load(tmp_path / "junk.npz")
    # an edited array: a valid archive, but the checksum no longer matches
    with np.load(path) as z:
        contents = {k: z[k] for k in z.files}
    contents["sum"] = contents["sum"] + 1e-12
    np.savez(tmp_path / "edited.npz", **contents)
    with pytest.raises(SketchFileError, match="checksum"):
        Sketch.load(tmp_path / "edited.npz")
    # a newer format version (its checksum is not even looked at)
    meta = json.loads(str(contents["meta"]))
    meta["version"] = SUBSAMPLED_FORMAT_VERSION + 1
    contents["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "future.npz", **contents)
    with pytest.raises(SketchFileError, match="version 3 is newer"):
        Sketch.load(tmp_path / "future.npz")
    with zipfile.ZipFile(path) as zf:  # the documented layout: no pickled object inside
        assert {"meta.npy", "sum.npy"} <= set(zf.namelist())


@pytest.mark.parametrize("op", ("r3", "fastfood", "dense"))
@pytest.mark.parametrize("kind", ("complex", "quantized", "quadratic"))
def test_threads_give_identical_bits(op, kind, restore_threads):
    X = np.random.default_rng(5).standard_normal((3000, 200)).astype(np.float32)
    fm = fmap(kind, op, d=200, m=1000, dtype=np.float32)
    pysketch.set_num_threads(1)
    one = fm.sketch(X).sum
    pysketch.set_num_threads(2)
    two = fm.sketch(X).sum
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("op", ("r3", "dense"))
@pytest.mark.parametrize("kind", KINDS)
def test_every_simd_level_gives_identical_bits(op, kind, restore_simd):
    levels = SIMD_LEVELS[: SIMD_LEVELS.index(pysketch.max_simd_level()) + 1]
    X = np.random.default_rng(6).standard_normal((300, 100))
    for dtype in (np.float32, np.float64):
        fm = fmap(kind, op, d=100, m=300, dtype=dtype)
        sums = {}
        for level in levels:
            pysketch.set_simd_level(level)
            sums[level] = fm.sketch(X).sum
        for level in levels[1:]:
            np.testing.assert_array_equal(sums[level], sums[levels[0]], err_msg=f"{level} {np.dtype(dtype)}")


def test_orthonormal_quadratic_sketch_measures_the_covariance():
    # RQF with a union of orthonormal bases: sum_j (omega_j^T x)^2 = (m/d) ||x||^2 (notes
    # seed000 (8.6)), exactly, for every record.
    X = np.random.default_rng(7).standard_normal((50, 16))
    fm = make_feature_map(16, 64, "quadratic", operator="r3", law=OrthonormalBasesLaw(), random_state=0)
    np.testing.assert_allclose(fm.transform(X).sum(axis=1), 4 * (X**2).sum(axis=1), rtol=1e-12)


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
@pytest.mark.parametrize("d, m, rows", [(1, 1, 1), (3, 37, 5), (10, 517, 33), (20, 1000, 4099)])
def test_dense_fused_tiles_match_the_blas_path_and_numpy(d, m, rows, dtype, monkeypatch):
    # The fused tiles (pysketch/dense.hpp: blocks of 4 rows x 2 vectors, then single rows,
    # single vectors and scalar columns) against BLAS products of whole blocks and the
    # NumPy float64 reference, on shapes that exercise every remainder; x strided.
    import pysketch.operators as operators

    rng = np.random.default_rng(d * 1000 + m)
    big = rng.standard_normal((rows, d + 3)).astype(dtype)
    X = big[:, 1 : d + 1]  # rows d + 3 apart
    fm = fmap("complex", "dense", d=d, m=m, dtype=dtype)
    fused = fm.sketch(X).sum
    monkeypatch.setattr(operators, "FUSED_DENSE_MAX_D", 0)
    blas = fm.sketch(np.ascontiguousarray(X)).sum
    tol = (2e-5 if dtype == np.float32 else 1e-10) * rows
    assert np.abs(fused - blas).max() <= tol
    assert np.abs(fused - reference_sum(fm, X.astype(np.float64))).max() <= tol


@pytest.mark.parametrize("dtype", (np.float32, np.float64))
def test_column_bounds_are_the_exact_min_and_max_merged_in_place(dtype, restore_threads):
    from pysketch import _core

    rng = np.random.default_rng(9)
    X = (rng.standard_normal((70_001, 7)) * rng.uniform(0.1, 100, 7)).astype(dtype)
    for threads in (1, 2):
        pysketch.set_num_threads(threads)
        lo, hi = np.full(7, np.inf), np.full(7, -np.inf)
        _core.column_bounds(X[:40_000], lo, hi)
        _core.column_bounds(X[40_000:], lo, hi)  # merged with the first batch
        np.testing.assert_array_equal(lo, X.min(axis=0).astype(np.float64))
        np.testing.assert_array_equal(hi, X.max(axis=0).astype(np.float64))
    lo, hi = np.zeros(7), np.zeros(7)  # existing bounds are kept when wider
    _core.column_bounds(np.ones((3, 7), dtype), lo, hi)
    np.testing.assert_array_equal(lo, 0.0)
    np.testing.assert_array_equal(hi, 1.0)
    with pytest.raises(ValueError, match="lo must be a writeable contiguous float64 array of length 7"):
        _core.column_bounds(X, np.zeros(6), hi)


# ---------------------------------------------------------------------- pickling, old files, array-likes

@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("kind", KINDS)
def test_maps_and_sketches_pickle_to_equal_objects_that_still_sketch(op, kind):
    import pickle

    fm = fmap(kind, op, d=12, m=48, dtype=np.float32)
    X = np.random.default_rng(2).standard_normal((40, 12))
    op2 = pickle.loads(pickle.dumps(fm.operator))
    assert op2 == fm.operator and type(op2) is type(fm.operator)
    fm2 = pickle.loads(pickle.dumps(fm))
    assert fm2 == fm and type(fm2) is type(fm)
    # the rebuilt map (its C++ operator made anew) gives the same bits
    assert np.array_equal(fm2.sketch(X).sum, fm.sketch(X).sum)
    sk = fm.sketch(X)
    sk2 = pickle.loads(pickle.dumps(sk))
    assert sk2 == sk and sk2.count == 40 and np.array_equal(sk2.sum, sk.sum)
    assert sk2 != fm.sketch(X[:39])  # equality is by value: another sum is another sketch


def test_subsampled_and_private_sketches_pickle_to_equal_objects():
    import pickle

    from pysketch.privacy import PrivateSketch, make_private

    fm = fmap("complex", "r3", d=16, m=64)
    X = np.random.default_rng(3).standard_normal((50, 16))
    sub = fm.sketch_subsampled(X, 16, scheme="blocks", random_state=1)
    assert pickle.loads(pickle.dumps(sub)) == sub
    priv = make_private(fm.sketch(X), 1.0, 1e-6, insecure_seed=2)
    back = pickle.loads(pickle.dumps(priv))
    assert isinstance(back, PrivateSketch) and back == priv and back.privacy == priv.privacy


DATA = os.path.join(os.path.dirname(__file__), "data")


def test_files_written_before_the_contracts_still_load_with_the_same_bits():
    # tests/data: written by pysketch at commit 16f1cc3 (before the feature-map family and
    # the format registry) from these very seeds
    from pysketch.privacy import PrivateSketch

    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    fm = make_feature_map(3, 8, "complex", operator="dense", random_state=1)
    old = Sketch.load(os.path.join(DATA, "sketch_v1_complex.npz"))
    assert old == fm.sketch(X) and old.feature_map == fm
    q = Sketch.load(os.path.join(DATA, "sketch_v1_quantized.npz"))
    assert q == make_feature_map(3, 8, "quantized", operator="dense", random_state=2).sketch(X)
    fm4 = make_feature_map(4, 8, "complex", operator="r3", random_state=3)
    blocks = Sketch.load(os.path.join(DATA, "sketch_v2_blocks.npz"))
    assert blocks == fm4.sketch_subsampled(rng.standard_normal((20, 4)), 4, scheme="blocks", random_state=4)
    priv = Sketch.load(os.path.join(DATA, "private_v1_gaussian.npz"))
    # the same seeded release today: the same record and calibration, given the same budget
    # split (the split and the analytic-Gaussian sigma come from scipy's solvers, whose last
    # bits change between scipy versions: 1.17.1 moved the split by 4e-8 relative; the file
    # records the split it used). The noise itself differs: since the compiled samplers
    # (issue 35) a seeded release draws from a ChaCha20 stream keyed by the seed, where the
    # file's noise came from the Python samplers.
    from pysketch.privacy import make_private

    split = priv.privacy["epsilon_sum"] / priv.privacy["epsilon"]
    again = make_private(fm.sketch(X), 1.0, 1e-6, split=split, insecure_seed=5)
    assert isinstance(priv, PrivateSketch) and again.privacy == priv.privacy
    assert again.sum.shape == priv.sum.shape and again.feature_map == priv.feature_map
    assert priv.privacy["epsilon_sum"] == pytest.approx(make_private(fm.sketch(X), 1.0, 1e-6).privacy["epsilon_sum"],
                                                        rel=1e-6)
    assert priv.privacy["mechanism"] == "gaussian" and priv.privacy["epsilon"] == 1.0
    assert priv.privacy["secure_noise"] is False and "epsilon_pilot" not in priv.privacy
    with pytest.raises(SketchFileError, match="a clean sketch file, not a PrivateSketch"):
        PrivateSketch.load(os.path.join(DATA, "sketch_v1_complex.npz"))


class RowIterableArray:
    """A 2-D array-like as dask presents one: shape, dtype, slicing by rows, and iteration
    that yields single rows (1-D), which must not be taken for a sequence of batches."""

    def __init__(self, A):
        self._data = A
        self.shape, self.dtype, self.ndim = A.shape, A.dtype, A.ndim
        self.slices = 0

    def __getitem__(self, key):
        self.slices += 1
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


def test_an_array_like_that_iterates_rows_is_read_as_an_array_in_batches():
    fm = fmap("complex", "dense", d=6, m=30)
    X = np.random.default_rng(4).standard_normal((1000, 6))
    lazy = RowIterableArray(X)
    sk = fm.sketch(lazy, batch_size=128)
    assert sk.count == 1000 and np.array_equal(sk.sum, fm.sketch(X, batch_size=128).sum)
    assert lazy.slices == 8  # ceil(1000 / 128) row slices, never 1000 single rows
