"""Dask: sketches and fits of dask arrays and data frames, blockwise where the blocks live
(pysketch.blocks), on dask's in-process schedulers and on a LocalCluster of worker processes."""

import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from pysketch import CompressiveGaussianMixture, CompressiveKMeans, CompressivePCA, SketchAccumulator  # noqa: E402
from pysketch.blocks import column_bounds, map_reduce, row_count  # noqa: E402
from pysketch.datasets import make_blobs_gaussian_centers  # noqa: E402
from pysketch.features import FeatureMap, make_feature_map  # noqa: E402


@pytest.fixture(scope="module")
def data():
    X = make_blobs_gaussian_centers(30_000, 4, 6, random_state=3)[0]
    return X.astype(np.float32)


def _tree_sum(parts, split_every=8):
    """The merge order of pysketch.blocks' reduction tree, done here in numpy."""
    while len(parts) > 1:
        merged = []
        for i in range(0, len(parts), split_every):
            total = parts[i].copy()
            for p in parts[i + 1 : i + split_every]:
                total += p
            merged.append(total)
        parts = merged
    return parts[0]


@pytest.mark.parametrize("operator", ["dense", "r3", "gr2", "fastfood"])
def test_dask_sketch_equals_the_in_memory_sketch(data, operator):
    fm = make_feature_map(6, 64, "complex", operator=operator, random_state=1, dtype=np.float32)
    chunks = 2_500  # 12 blocks: two levels of the tree
    Xd = da.from_array(data, chunks=(chunks, 3))  # columns split too: rechunked to whole rows
    got = fm.sketch(Xd)
    assert got.count == data.shape[0]
    # to the last bit: the same blocks merged in the same order
    blocks = [fm.sketch(data[i : i + chunks]).sum for i in range(0, data.shape[0], chunks)]
    assert np.array_equal(got.sum, _tree_sum(blocks))
    # and the whole array in memory, up to the order of the float64 additions (each
    # feature has modulus 1: the sums of n of them differ by far less than n * 1e-12)
    np.testing.assert_allclose(got.sum, fm.sketch(data).sum, rtol=0, atol=data.shape[0] * 1e-12)


def test_dask_data_frame_is_sketched_like_its_values(data):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    fm = make_feature_map(6, 32, "real", random_state=2)
    frame = pd.DataFrame(data.astype(np.float64), columns=list("abcdef"))
    ddf = dd.from_pandas(frame, npartitions=5)
    got = fm.sketch(ddf)
    assert got.count == data.shape[0]
    np.testing.assert_allclose(got.sum, fm.sketch(data.astype(np.float64)).sum, rtol=0, atol=1e-9)
    frame["g"] = ["x"] * len(frame)
    with pytest.raises(TypeError, match=r"columns \['g'\]"):
        fm_bad = make_feature_map(7, 32, "real", random_state=2)
        fm_bad.sketch(dd.from_pandas(frame, npartitions=2))


def test_subsampled_dask_sketch_follows_the_stream_positions(data):
    fm = make_feature_map(6, 64, "complex", operator="r3", random_state=1)
    X = data.astype(np.float64)
    ref = fm.sketch_subsampled(X, 8, random_state=7)
    got = fm.sketch_subsampled(da.from_array(X, chunks=(4_000, 6)), 8, random_state=7)
    np.testing.assert_allclose(got.sum, ref.sum, rtol=0, atol=1e-9)
    # unknown block lengths: the positions are unknown, which must be said, not guessed
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    ddf = dd.from_pandas(pd.DataFrame(X), npartitions=3)
    with pytest.raises(ValueError, match="lengths of the dask blocks are unknown"):
        fm.sketch_subsampled(ddf, 8, random_state=7)


def test_the_map_enters_the_graph_once(data):
    fm = make_feature_map(6, 64, "complex", operator="r3", random_state=1)
    seen = {}

    def inspecting_get(dsk, keys, **kwargs):
        graph = dict(dsk.__dask_graph__() if hasattr(dsk, "__dask_graph__") else dsk)
        seen["maps"] = sum(isinstance(v, FeatureMap) for v in _values(graph))
        seen["tasks"] = len(graph)
        return dask.get(dsk, keys, **kwargs)

    with dask.config.set(scheduler=inspecting_get):
        fm.sketch(da.from_array(data, chunks=(1_000, 6)))
    assert seen["tasks"] > 30 and seen["maps"] == 1


def _values(graph):
    """Every literal held by a graph's tasks (dask's Task objects or plain tuples)."""
    for value in graph.values():
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, (tuple, list)):
                stack.extend(v)
            elif hasattr(v, "args") and hasattr(v, "func"):  # dask._task_spec.Task
                stack.extend(v.args)
                stack.extend(getattr(v, "kwargs", {}).values())
            elif type(v).__name__ == "DataNode":
                stack.append(v.value)
            else:
                yield v


def test_nan_in_a_block_adds_nothing(data):
    fm = make_feature_map(6, 32, "complex", random_state=1, dtype=np.float32)
    acc = SketchAccumulator(fm).update(data[:100])
    before = acc.sketch().sum.copy()
    bad = data.copy()
    bad[12_345, 2] = np.nan
    with pytest.raises(ValueError, match="record 12345 contains NaN"):
        acc.update(da.from_array(bad, chunks=(5_000, 6)))
    assert acc.count == 100 and np.array_equal(acc.sketch().sum, before)


def test_block_passes_match_numpy(data):
    Xd = da.from_array(data, chunks=(7_000, 6))
    lo, hi = column_bounds(Xd)
    assert np.array_equal(lo, data.min(axis=0)) and np.array_equal(hi, data.max(axis=0))
    assert row_count(Xd) == data.shape[0]
    assert map_reduce(Xd, lambda b, first, c: b.shape[0] * c, lambda a, b: a + b, args=(2,)) == 2 * data.shape[0]
    with pytest.raises(ValueError, match="split_every"):
        map_reduce(Xd, lambda b, first: 0, lambda a, b: a, split_every=1)


def test_kmeans_gmm_pca_fit_dask_like_numpy(data):
    X = data.astype(np.float64)
    Xd = da.from_array(X, chunks=(6_000, 6))
    a = CompressiveKMeans(4, random_state=0).fit(X)
    b = CompressiveKMeans(4, random_state=0).fit(Xd)
    np.testing.assert_allclose(b.cluster_centers_, a.cluster_centers_, rtol=1e-9, atol=1e-9)
    assert isinstance(b.labels_, da.Array) and np.array_equal(b.labels_.compute(), a.labels_)
    assert b.inertia_ == pytest.approx(a.inertia_, rel=1e-12)
    g = CompressiveGaussianMixture(4, random_state=0, kernel_scale=1.0).fit(Xd)
    g0 = CompressiveGaussianMixture(4, random_state=0, kernel_scale=1.0).fit(X)
    np.testing.assert_allclose(g.means_, g0.means_, rtol=1e-9, atol=1e-9)
    p = CompressivePCA(2, random_state=0).fit(Xd)
    p0 = CompressivePCA(2, random_state=0).fit(X)
    np.testing.assert_allclose(np.abs(p.components_), np.abs(p0.components_), atol=1e-9)


def test_private_fit_releases_once_on_the_merged_sketch(data, monkeypatch):
    """The noise is added once, by the caller, to the merged sketch: release is called once,
    with the whole count and the exact clean sum of every block."""
    import pysketch.privacy.release as rel

    calls = []
    real_release = rel.release

    def spy(sketch, *args, **kwargs):
        calls.append(sketch)
        return real_release(sketch, *args, **kwargs)

    monkeypatch.setattr(rel, "release", spy)
    X = data.astype(np.float64)
    Xd = da.from_array(X, chunks=(3_000, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the records clipped to the box
        km = CompressiveKMeans(4, epsilon=1.0, bounds=(-8, 8), kernel_scale=1.5, random_state=0).fit(Xd)
    assert len(calls) == 1
    clean = calls[0]
    assert clean.count == X.shape[0]
    fm = km.sketch_.feature_map
    np.testing.assert_allclose(clean.sum, fm.sketch(np.clip(X, -8, 8)).sum, rtol=0, atol=1e-9)
    assert not np.allclose(km.sketch_.sum, clean.sum)  # the released sketch is the noisy one




@pytest.mark.parametrize("operator", ["dense", "fastfood"])
def test_local_cluster_sketch_and_private_fit(dask_client, data, operator):
    pids = set(dask_client.run(lambda: __import__("os").getpid()).values())
    assert len(pids) == 2 and __import__("os").getpid() not in pids  # worker processes
    fm = make_feature_map(6, 64, "complex", operator=operator, random_state=1, dtype=np.float32)
    Xd = da.from_array(data, chunks=(2_500, 6))
    got = fm.sketch(Xd)
    blocks = [fm.sketch(data[i : i + 2_500]).sum for i in range(0, data.shape[0], 2_500)]
    assert np.array_equal(got.sum, _tree_sum(blocks))  # the same bits as in this process
    best = CompressiveKMeans(4, random_state=0).fit(data.astype(np.float64)).inertia_
    # The noise comes from the OS, and this private route (the grid of the records' projection on
    # private principal directions) merges two of the four clusters in about 1.4% of its draws
    # (7 of 500 in memory: SSE 1.56x the clean fit's; every other draw 0.99-1.00x). A fit is
    # drawn again up to twice, so a correct fit fails here with probability about 0.014^3 = 3e-6.
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            km = CompressiveKMeans(4, epsilon=1.0, bounds=(-8, 8), random_state=0).fit(Xd)
        if km.inertia_ < 1.3 * best:
            break
    assert km.cluster_centers_.shape == (4, 6) and km.inertia_ < 1.3 * best
    assert np.array_equal(km.labels_.compute(), km.predict(data.astype(np.float64)))  # computed on the workers


def test_local_cluster_error_in_a_block_reaches_the_caller(dask_client, data):
    fm = make_feature_map(6, 32, "complex", random_state=1, dtype=np.float32)
    bad = data.copy()
    bad[29_999, 0] = np.inf
    acc = SketchAccumulator(fm)
    with pytest.raises(ValueError, match="record 29999 contains NaN or infinity"):
        acc.update(da.from_array(bad, chunks=(10_000, 6)))
    assert acc.count == 0 and not np.any(acc.sketch().sum)


def test_unpickled_map_from_unaligned_buffers_sketches():
    """dask.distributed hands pickle protocol 5 buffers at any offset of a message: the
    rebuilt map must still work (the core requires aligned arrays)."""
    import pickle

    fm = make_feature_map(6, 64, "complex", operator="dense", random_state=1)
    buffers = []
    payload = pickle.dumps(fm, protocol=5, buffer_callback=buffers.append)
    shifted = []
    for b in buffers:
        raw = bytearray(len(b.raw()) + 1)
        raw[1:] = b.raw()
        shifted.append(memoryview(raw)[1:])  # one byte off: unaligned for every dtype above 1 byte
    back = pickle.loads(payload, buffers=shifted)
    X = np.random.default_rng(0).standard_normal((50, 6))
    assert np.array_equal(back.sketch(X).sum, fm.sketch(X).sum)
