"""Feature subsampling in the sketch accumulator (pysketch/subsample.hpp, FeatureMap.sketch_subsampled).

The sketch is (m / r) sum_i Phi(x_i) (.) h_i with random masks h_i (notes seed000 sec. 4).
The masks are checked through the test-only binding _core._subsample_masks, which draws
exactly what the sketches draw for a given key and record position; the sketches are
compared with a NumPy reference built from those masks and from the map's own feature values.
"""

import itertools
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import pysketch
from pysketch import _core
from pysketch.features import FeatureMap, make_feature_map
from pysketch.frequencies import QuadraticGaussianLaw
from pysketch.operators import StructuredOperator
from pysketch.runtime import SIMD_LEVELS
from pysketch.accumulate import SketchAccumulator
from pysketch.sketch import SUBSAMPLED_FORMAT_VERSION, Sketch, SketchFileError

SCHEMES = {"uniform": _core.Scheme.uniform, "bernoulli": _core.Scheme.bernoulli, "blocks": _core.Scheme.blocks}
AVAILABLE = SIMD_LEVELS[: SIMD_LEVELS.index(pysketch.max_simd_level()) + 1]
KEY = (0x0123456789ABCDEF, 0xFEDCBA9876543210)


def fmap(kind="complex", op="dense", d=8, m=256, dtype=np.float64, seed=0):
    law = QuadraticGaussianLaw() if kind == "quadratic" else None
    dither = None if kind == "quadratic" else "random"
    return make_feature_map(d, m, kind, operator=op, law=law, dither=dither, random_state=seed, dtype=dtype)


def data(n, d, dtype=np.float64, seed=1):
    return np.random.default_rng(seed).standard_normal((n, d)).astype(dtype)


def feature_values(fm, X):
    """The map's feature values of every record, in float64: (c, s) of shape (n, m) (s None
    for quadratic), computed from the operator's phases by the sketch's own kernels."""
    T = fm.operator.apply(X)
    n, m = T.shape
    flat = np.ascontiguousarray(T).reshape(1, n * m)
    u = None if fm.kernel_dither is None else np.tile(fm.kernel_dither, n)
    c = np.zeros(n * m)
    s = None if fm.kind == "quadratic" else np.zeros(n * m)
    _core.accumulate_features(fm.kernel, flat, u, c, s)
    return c.reshape(n, m), None if s is None else s.reshape(n, m)


def masks_of(fm, scheme, r, first, rows, key=KEY):
    block = fm.operator.d_p if scheme == "blocks" else 1
    return _core._subsample_masks(SCHEMES[scheme], fm.m, r, block, key[0], key[1], first, rows)


def reference(fm, X, scheme, r, first=0, key=KEY):
    """(m / r) sum_i Phi(x_i) (.) h_i in NumPy, from the masks the core draws."""
    c, s = feature_values(fm, X)
    acc0, acc1 = np.zeros(fm.m), None if s is None else np.zeros(fm.m)
    for i, h in enumerate(masks_of(fm, scheme, r, first, len(X), key)):
        acc0[h] += c[i, h]
        if s is not None:
            acc1[h] += s[i, h]
    scale = fm.m / r
    return acc0 * scale, None if acc1 is None else acc1 * scale


def core_sketch(fm, X, scheme, r, first=0, key=KEY):
    """The core's subsampled sums (acc0, acc1) of the rows of X."""
    acc0 = np.zeros(fm.m)
    acc1 = None if fm.kind == "quadratic" else np.zeros(fm.m)
    fm.subsampling_spec(r, scheme)  # validates
    fm.operator.accumulate_subsampled(fm.kernel, X, fm.kernel_dither, SCHEMES[scheme], r, key[0], key[1], first,
                                      acc0, acc1)
    return acc0, acc1


def assert_sums_match_the_reference(fm, X, scheme, r, first):
    """The C++ subsampled sums equal the NumPy reference for the same masks, to 1e-12 of
    the scaled sum's size in float64. In float32 the reference's phases of a dense map come
    from numpy's matmul (OpenBLAS sgemm), whose order of summation is its own and changed
    between OpenBLAS releases (0.3.31 differs from the core's fma chain by a float32 rounding
    or two of the phase): there the bound is 2e-6 per record and scaled feature, which a
    wrong mask, moving an entry by a whole feature times m / r, still exceeds."""
    acc0, acc1 = core_sketch(fm, X, scheme, r, first=first)
    ref0, ref1 = reference(fm, X, scheme, r, first=first)
    per_record = 1e-12 if fm.operator.dtype == np.float64 else 2e-6
    tol = per_record * len(X) * fm.m / r * max(1.0, np.abs(ref0).max() / len(X) * r / fm.m)
    np.testing.assert_allclose(acc0, ref0, rtol=0, atol=tol)
    if acc1 is not None:
        np.testing.assert_allclose(acc1, ref1, rtol=0, atol=tol)


# --------------------------------------------------------------------------- random numbers


@pytest.mark.parametrize("counter", [(0, 0, 0, 0), (1, 2, 3, 4), (2**64 - 1, 5, 2**63, 7), (12, 0, 2**40, 0)])
@pytest.mark.parametrize("key", [(0, 0), (1, 2), (2**64 - 1, 2**63 + 11)])
def test_philox_matches_numpy(counter, key):
    # numpy's Philox (4x64, 10 rounds) increments its counter, then outputs philox(counter, key)
    value = sum(int(c) << (64 * i) for i, c in enumerate(counter))  # the 256-bit counter, word 0 lowest
    value = (value - 1) % 2**256
    before = [(value >> (64 * i)) & (2**64 - 1) for i in range(4)]
    bg = np.random.Philox(key=np.array(key, dtype=np.uint64), counter=np.array(before, dtype=np.uint64))
    expected = tuple(int(v) for v in bg.random_raw(4))
    assert _core._philox4x64(list(counter), key[0], key[1]) == expected


# --------------------------------------------------------------------------- masks


@pytest.mark.parametrize("m,r", [(1, 1), (20, 1), (20, 5), (20, 19), (20, 20), (1000, 999), (1000, 100), (300, 7)])
def test_uniform_masks_hold_exactly_r_distinct_features(m, r):
    for h in _core._subsample_masks(SCHEMES["uniform"], m, r, 1, KEY[0], KEY[1], 0, 200):
        assert h.dtype == np.uint32 and len(h) == r
        assert np.all(np.diff(h.astype(np.int64)) > 0)  # sorted, hence distinct
        assert h[0] >= 0 and h[-1] < m
    # r = m: every feature
    if r == m:
        full = _core._subsample_masks(SCHEMES["uniform"], m, r, 1, 1, 2, 0, 3)
        assert all(np.array_equal(h, np.arange(m)) for h in full)


def chi2_sf(x, k):
    """Upper tail of the chi-square distribution with k degrees of freedom (Wilson-Hilferty)."""
    z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


def test_uniform_masks_are_uniform_over_the_r_subsets():
    # m = 6, r = 3: 20 subsets, each with probability 1/20. 10^5 records; chi-square with 19
    # degrees of freedom, rejected below p = 1e-4 (a correct sampler fails 1 time in 10^4).
    m, r, n = 6, 3, 100000
    subsets = {s: k for k, s in enumerate(itertools.combinations(range(m), r))}
    counts = np.zeros(len(subsets))
    for h in _core._subsample_masks(SCHEMES["uniform"], m, r, 1, KEY[0], KEY[1], 0, n):
        counts[subsets[tuple(int(j) for j in h)]] += 1
    expected = n / len(subsets)
    stat = float(((counts - expected) ** 2 / expected).sum())
    assert chi2_sf(stat, len(subsets) - 1) > 1e-4, (stat, counts)
    # and the test has power: a sampler that favours one subset by 15% would be caught
    biased = counts.copy()
    biased[0] *= 1.15
    assert chi2_sf(float(((biased - expected) ** 2 / expected).sum()), len(subsets) - 1) < 1e-4


def test_bernoulli_masks_are_independent_trials():
    # alpha = r / m = 0.25 per feature, independently: counts per record ~ Binomial(m, alpha),
    # each feature kept with frequency alpha, each pair with alpha^2 (all within 5 standard errors).
    m, r, n = 16, 4, 20000
    alpha = r / m
    H = np.zeros((n, m), bool)
    for i, h in enumerate(_core._subsample_masks(SCHEMES["bernoulli"], m, r, 1, KEY[0], KEY[1], 0, n)):
        assert np.all(np.diff(h.astype(np.int64)) > 0)
        H[i, h] = True
    sizes = H.sum(1)
    assert abs(sizes.mean() - m * alpha) < 5 * math.sqrt(m * alpha * (1 - alpha) / n)
    assert abs(sizes.var() / (m * alpha * (1 - alpha)) - 1) < 0.05
    assert len(np.unique(sizes)) > 5  # not a fixed size
    freq = H.mean(0)
    assert np.all(np.abs(freq - alpha) < 5 * math.sqrt(alpha * (1 - alpha) / n))
    pairs = (H[:, :, None] & H[:, None, :]).mean(0)[np.triu_indices(m, 1)]
    p2 = alpha**2
    assert np.all(np.abs(pairs - p2) < 5 * math.sqrt(p2 * (1 - p2) / n))


def test_block_masks_are_whole_distinct_blocks_chosen_uniformly():
    m, block, r, n = 64, 8, 24, 12000  # 3 of 8 blocks per record
    counts = np.zeros(m // block)
    for h in _core._subsample_masks(SCHEMES["blocks"], m, r, block, KEY[0], KEY[1], 0, n):
        assert len(h) == r
        blocks = h.reshape(-1, block)
        assert np.all(blocks == blocks[:, :1] + np.arange(block))  # whole blocks
        starts = blocks[:, 0]
        assert np.all(starts % block == 0) and len(np.unique(starts)) == r // block
        counts[starts // block] += 1
    p = (r // block) / (m // block)
    assert np.all(np.abs(counts / n - p) < 5 * math.sqrt(p * (1 - p) / n))


def test_masks_depend_on_the_key_and_the_record_position_only():
    all_masks = _core._subsample_masks(SCHEMES["uniform"], 100, 10, 1, 5, 6, 0, 20)
    later = _core._subsample_masks(SCHEMES["uniform"], 100, 10, 1, 5, 6, 7, 5)
    for a, b in zip(all_masks[7:12], later):
        np.testing.assert_array_equal(a, b)
    assert len({tuple(h) for h in all_masks}) == 20  # records get different masks
    other_key = _core._subsample_masks(SCHEMES["uniform"], 100, 10, 1, 5, 7, 0, 20)
    assert sum(np.array_equal(a, b) for a, b in zip(all_masks, other_key)) == 0


# --------------------------------------------------------------------------- core sums


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["complex", "real", "quantized", "quadratic"])
# r = 3 (pairs of records and features), 20 (gathers per record), 100 (strips of all phases)
@pytest.mark.parametrize("scheme,r", [("uniform", 3), ("uniform", 20), ("uniform", 100), ("bernoulli", 5),
                                      ("bernoulli", 60), ("uniform", 256)])
def test_dense_sums_match_the_reference_for_the_same_masks(dtype, kind, scheme, r):
    fm = fmap(kind, "dense", d=8, m=256, dtype=dtype)
    X = data(300, 8, dtype)
    assert_sums_match_the_reference(fm, X, scheme, r, first=11)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["r3", "gr2", "fastfood"])
@pytest.mark.parametrize("kind", ["complex", "quantized", "quadratic"])
@pytest.mark.parametrize("scheme,r", [("uniform", 5), ("uniform", 90), ("bernoulli", 30), ("blocks", 16),
                                      ("blocks", 48)])
def test_structured_sums_match_the_reference_for_the_same_masks(dtype, op, kind, scheme, r):
    fm = fmap(kind, op, d=12, m=128, dtype=dtype)  # d_p = 16: 8 blocks
    X = data(200, 12, dtype)
    assert_sums_match_the_reference(fm, X, scheme, r, first=3)


@pytest.mark.parametrize("op", ["dense", "r3", "fastfood"])
@pytest.mark.parametrize("scheme", ["uniform", "bernoulli", "blocks"])
def test_the_core_path_with_r_equal_m_is_the_full_sketch(op, scheme):
    if scheme == "blocks" and op == "dense":
        return
    fm = fmap("complex", op, d=16, m=128)
    X = data(500, 16)
    acc0, acc1 = core_sketch(fm, X, scheme, fm.m)  # the general path, not the Python shortcut
    full = fm.sketch(X).sum
    np.testing.assert_allclose(acc0 + 1j * acc1, full, rtol=0, atol=1e-12 * np.abs(full).max())


@pytest.mark.parametrize("op", ["dense", "r3"])
@pytest.mark.parametrize("r", [1, 7, 64])
def test_one_record_contributes_exactly_r_features(op, r):
    fm = fmap("complex", op, d=8, m=64)
    x = data(1, 8, seed=9)
    for seed in range(5):
        sk = fm.sketch_subsampled(x, r, random_state=seed)
        nonzero = np.flatnonzero(sk.sum)
        assert len(nonzero) == r
        # each at m / r times the feature itself
        np.testing.assert_allclose(sk.sum[nonzero], fm.m / r * fm.transform(x[0])[nonzero], rtol=1e-13)
    fb = fmap("complex", "r3", d=8, m=64)
    sk = fb.sketch_subsampled(x, 16, scheme="blocks", random_state=1)
    nonzero = np.flatnonzero(sk.sum)
    assert len(nonzero) == 16 and np.all(nonzero.reshape(2, 8) == nonzero.reshape(2, 8)[:, :1] + np.arange(8))


def test_sums_do_not_depend_on_the_thread_count(restore_threads):
    X = data(60000, 8)
    cases = [(fmap("complex", "dense", d=8, m=256), "uniform", 4), (fmap("quantized", "dense", d=8, m=256), "uniform", 64),
             (fmap("complex", "dense", d=8, m=256), "bernoulli", 20), (fmap("complex", "r3", d=8, m=256), "blocks", 32),
             (fmap("complex", "fastfood", d=8, m=256), "uniform", 10)]
    for fm, scheme, r in cases:
        results = []
        for threads in (1, 2):
            pysketch.set_num_threads(threads)
            results.append(core_sketch(fm, X, scheme, r))
        for a, b in zip(*results):
            assert np.array_equal(a, b), (fm, scheme, r)


SIMD_CASES = [("dense", "uniform", 3), ("dense", "uniform", 20), ("dense", "uniform", 100), ("dense", "bernoulli", 9),
              ("r3", "uniform", 9), ("r3", "blocks", 32), ("fastfood", "blocks", 16)]


def simd_sums(dtype):
    out = []
    for op, scheme, r in SIMD_CASES:
        for kind in ("complex", "quantized"):
            fm = fmap(kind, op, d=10, m=256, dtype=dtype)
            acc0, acc1 = core_sketch(fm, data(150, 10, dtype), scheme, r, first=2)
            out += [acc0, acc1]
    return np.concatenate(out)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_simd_level_gives_identical_bits(dtype, restore_simd):
    results = {}
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        results[level] = simd_sums(dtype)
    for level, value in results.items():
        assert np.array_equal(value, results[AVAILABLE[0]]), level


def test_every_simd_level_in_a_subprocess_gives_identical_bits(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    child = (
        "import sys, numpy as np, pysketch, test_subsample as t\n"
        "assert pysketch.simd_level() == sys.argv[1], pysketch.simd_level()\n"
        "np.save(sys.argv[2], np.concatenate([t.simd_sums(np.float32), t.simd_sums(np.float64)]))\n"
    )
    expected = np.concatenate([simd_sums(np.float32), simd_sums(np.float64)])
    env = dict(os.environ)
    env["PYTHONPATH"] = here + os.pathsep + env.get("PYTHONPATH", "")
    for level in AVAILABLE:
        env["PYSKETCH_SIMD"] = level
        out = str(tmp_path / f"{level}.npy")
        done = subprocess.run([sys.executable, "-c", child, level, out], env=env, cwd=tmp_path,
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert np.array_equal(np.load(out), expected), level


# --------------------------------------------------------------------------- Python API


def z_scores(samples, target):
    """Per coordinate: (mean of samples - target) / standard error of the mean."""
    mean = samples.mean(0)
    se = samples.std(0, ddof=1) / math.sqrt(len(samples))
    return (mean - target) / se


@pytest.mark.parametrize("op,scheme,r", [("dense", "uniform", 6), ("dense", "bernoulli", 6), ("r3", "blocks", 16),
                                         ("r3", "uniform", 8)])
def test_the_subsampled_sketch_is_unbiased(op, scheme, r):
    # 400 sketches with mask seeds 0..399 of 40 clustered records (|sum| near n, so that a
    # wrong scale would be far off); their mean must equal the full sketch within 5 standard
    # errors in each of the 2m real coordinates. For a correct sampler each coordinate is
    # outside with probability ~6e-7 (t with 399 d.o.f. ~ normal), all 128 together < 1e-4.
    fm = fmap("complex", op, d=8, m=64)
    rng = np.random.default_rng(3)
    X = 0.3 * rng.standard_normal((40, 8)) + rng.standard_normal(8)
    full = fm.sketch(X).sum
    samples = np.array([fm.sketch_subsampled(X, r, scheme=scheme, random_state=seed).sum for seed in range(400)])
    samples = np.concatenate([samples.real, samples.imag], axis=1)
    target = np.concatenate([full.real, full.imag])
    assert np.abs(z_scores(samples, target)).max() < 5
    # power: the same test rejects a sum 15% off
    assert np.abs(z_scores(samples, 0.85 * target)).max() > 6


def test_r_equal_m_gives_the_full_sketch():
    for op, scheme in (("dense", "uniform"), ("dense", "bernoulli"), ("r3", "blocks")):
        fm = fmap("complex", op, d=8, m=64)
        X = data(300, 8)
        full = fm.sketch(X)
        sk = fm.sketch_subsampled(X, 64, scheme=scheme, random_state=1)
        np.testing.assert_allclose(sk.sum, full.sum, rtol=0, atol=1e-12)
        assert sk.count == full.count and sk.subsampling["scale"] == 1.0


def test_random_state_reproducibility_and_freshness():
    fm = fmap("complex", "dense", d=8, m=128)
    X = data(500, 8)
    a = fm.sketch_subsampled(X, 10, random_state=42)
    b = fm.sketch_subsampled(X, 10, random_state=42)
    assert np.array_equal(a.sum, b.sum)
    assert not np.array_equal(a.sum, fm.sketch_subsampled(X, 10, random_state=43).sum)
    # a generator advances: two calls, two different sets of masks, reproducible from its seed
    g = np.random.default_rng(5)
    c, d = fm.sketch_subsampled(X, 10, random_state=g), fm.sketch_subsampled(X, 10, random_state=g)
    assert not np.array_equal(c.sum, d.sum)
    g = np.random.default_rng(5)
    assert np.array_equal(fm.sketch_subsampled(X, 10, random_state=g).sum, c.sum)
    # None: fresh OS entropy every call, whatever seed drew the map
    fm0 = fmap("complex", "dense", d=8, m=128, seed=0)
    e, f = fm0.sketch_subsampled(X, 10), fm0.sketch_subsampled(X, 10)
    assert not np.array_equal(e.sum, f.sum)
    # the masks do not come from the operator's seed: seeding them with it is no shortcut to
    # the masks drawn with fresh entropy
    assert not np.array_equal(e.sum, fm0.sketch_subsampled(X, 10, random_state=0).sum)


def test_masks_follow_the_stream_position_not_the_batches():
    fm = fmap("complex", "dense", d=8, m=128)
    X = data(1000, 8)
    one = fm.sketch_subsampled(X, 12, random_state=7)
    batched = fm.sketch_subsampled(X, 12, random_state=7, batch_size=37)
    np.testing.assert_allclose(batched.sum, one.sum, rtol=0, atol=1e-11)
    for buffer_rows, step in ((50, 3), (256, 50), (1, 7)):
        acc = SketchAccumulator(fm, subsample_r=12, random_state=7, buffer_rows=buffer_rows)
        for start in range(0, 600, step):  # small updates (buffered or not), then a big one
            acc.update(X[start : min(600, start + step)])
        acc.update(X[600:])
        streamed = acc.sketch()
        np.testing.assert_allclose(streamed.sum, one.sum, rtol=0, atol=1e-11)
        assert streamed.count == 1000 and streamed.subsampling == one.subsampling


def test_metadata_save_load_and_merge(tmp_path):
    fm = fmap("complex", "r3", d=8, m=64)
    X = data(100, 8)
    sk = fm.sketch_subsampled(X, 16, scheme="blocks", random_state=1)
    assert sk.subsampling == {"scheme": "blocks", "r": 16, "m": 64, "scale": 4.0, "block_size": 8}
    path = tmp_path / "s.npz"
    sk.save(path)
    with np.load(path) as z:
        meta = json.loads(str(z["meta"]))
    assert meta["version"] == SUBSAMPLED_FORMAT_VERSION and meta["subsampling"] == sk.subsampling
    back = Sketch.load(path)
    assert back.subsampling == sk.subsampling and np.array_equal(back.sum, sk.sum)
    # full sketches keep version 1 and no subsampling entry
    fm.sketch(X).save(tmp_path / "f.npz")
    with np.load(tmp_path / "f.npz") as z:
        assert "subsampling" not in json.loads(str(z["meta"])) and json.loads(str(z["meta"]))["version"] == 1
    # merging: same subsampling only
    other = fm.sketch_subsampled(X, 16, scheme="blocks", random_state=2)
    merged = sk + other
    assert merged.count == 200 and merged.subsampling == sk.subsampling
    with pytest.raises(ValueError, match="subsampling"):
        sk + fm.sketch(X)
    with pytest.raises(ValueError, match="subsampling"):
        sk + fm.sketch_subsampled(X, 8, random_state=2)
    # a version-2 file without its subsampling entry, or version 1 with one, is refused
    with np.load(path) as z:
        contents = {k: z[k] for k in z.files}
    del meta["subsampling"]
    # re-signed (the checksum of the edited metadata), so that the version check is what refuses it
    from pysketch._state import digest
    meta.pop("checksum", None)
    arrays = {k: v for k, v in contents.items() if k != "meta"}
    meta["checksum"] = digest(meta, arrays)
    contents["meta"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "bad.npz", **contents)
    with pytest.raises(SketchFileError, match="must record its subsampling"):
        Sketch.load(tmp_path / "bad.npz")


def test_bad_arguments_give_clear_errors():
    fm = fmap("complex", "dense", d=8, m=64)
    X = data(10, 8)
    for r in (0, -3, 65):
        with pytest.raises(ValueError, match=r"r must be an int with 1 <= r <= m = 64"):
            fm.sketch_subsampled(X, r)
    for r in (2.0, True, "4", None):
        with pytest.raises(TypeError, match=r"r must be an int"):
            fm.sketch_subsampled(X, r)
    with pytest.raises(ValueError, match="scheme must be one of"):
        fm.sketch_subsampled(X, 4, scheme="poisson")
    with pytest.raises(ValueError, match="scheme 'blocks' needs a structured operator"):
        fm.sketch_subsampled(X, 8, scheme="blocks")
    fs = fmap("complex", "r3", d=8, m=64)
    with pytest.raises(ValueError, match="multiple of the block size d_p = 8"):
        fs.sketch_subsampled(X, 12, scheme="blocks")
    with pytest.raises(ValueError, match="m to be a multiple of the block size"):
        fmap("complex", "r3", d=8, m=60).sketch_subsampled(X, 8, scheme="blocks")
    with pytest.raises(TypeError, match="random_state"):
        fm.sketch_subsampled(X, 4, random_state=1.5)
    with pytest.raises(ValueError, match="only with subsample_r"):
        SketchAccumulator(fm, random_state=3)
    with pytest.raises(ValueError, match="2 columns|8 columns"):
        fm.sketch_subsampled(data(4, 2), 4)
    with pytest.raises(ValueError, match="NaN"):
        fm.sketch_subsampled(np.full((3, 8), np.nan), 4)
    with pytest.raises(ValueError, match=r"subsampling\['scale'\]"):
        Sketch(fm, np.zeros(64, complex), 0, subsampling={"scheme": "uniform", "r": 4, "m": 64, "scale": 1.0,
                                                          "block_size": None})


def test_core_rejects_bad_arguments():
    fm = fmap("complex", "dense", d=8, m=64)
    om = np.ascontiguousarray(fm.operator.omega)
    X = data(5, 8)
    a0, a1 = np.zeros(64), np.zeros(64)
    CIS = _core.Nonlinearity.cis
    with pytest.raises(ValueError, match="r must be in"):
        _core.sketch_dense_subsampled(om, om.T.copy(), CIS, X, None, _core.Scheme.uniform, 0, 1, 2, 0, a0, a1)
    with pytest.raises(ValueError, match="scheme must be"):
        _core.sketch_dense_subsampled(om, om.T.copy(), CIS, X, None, _core.Scheme(5), 3, 1, 2, 0, a0, a1)
    with pytest.raises(ValueError, match="blocks"):
        _core.sketch_dense_subsampled(om, om.T.copy(), CIS, X, None, _core.Scheme.blocks, 8, 1, 2, 0, a0, a1)
    with pytest.raises(ValueError, match="transpose"):
        _core.sketch_dense_subsampled(om, om.copy(), CIS, X, None, _core.Scheme.uniform, 3, 1, 2, 0, a0, a1)
    with pytest.raises(ValueError, match="contiguous"):
        _core.sketch_dense_subsampled(om, om.T, CIS, X, None, _core.Scheme.uniform, 3, 1, 2, 0, a0, a1)
    fs = fmap("complex", "r3", d=8, m=60)
    op = fs.operator
    with pytest.raises(ValueError, match="multiples of the block size"):
        _core.sketch_structured_subsampled(op._core, CIS, X, None, _core.Scheme.blocks, 8, 1, 2, 0, np.zeros(60),
                                           np.zeros(60))
    assert isinstance(op, StructuredOperator) and isinstance(fs, FeatureMap)
