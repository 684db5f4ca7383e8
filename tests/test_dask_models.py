"""Dask input for the supervised estimators and the JL transformer: PrivateRFRegressor,
DPRFMRegressor (refused), M2MLogisticRegression, M2MLinearRegression and
PrivateJLTransformer fit dask arrays and data frames blockwise where the blocks live, like
the same data in memory, with every release made once on the merged sums."""

import contextlib
import warnings

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

from pysketch.distances import PrivateJLTransformer  # noqa: E402
from pysketch.m2m import M2MLinearRegression, M2MLogisticRegression  # noqa: E402
from pysketch.privacy import PrivacyLeakWarning  # noqa: E402
from pysketch.privacy.mechanisms import Gaussian  # noqa: E402
from pysketch.rfm import DPRFMRegressor, PrivateRFRegressor, RFStatistics, RandomFeatures  # noqa: E402
from pysketch.rfm import estimators as rfm_estimators  # noqa: E402
from pysketch.rfm.scaling import private_scaling  # noqa: E402

N_ROWS = 6_000
CHUNK = 700  # 9 blocks: two levels of the merge tree (8 per node)


@pytest.fixture(scope="module")
def regression():
    rng = np.random.default_rng(11)
    X = rng.normal([2.0, -1.0, 0.0], [1.0, 2.0, 0.5], size=(N_ROWS, 3))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.standard_normal(N_ROWS)
    return X, y


@pytest.fixture(scope="module")
def classes():
    rng = np.random.default_rng(12)
    X = rng.uniform(0, 1, size=(N_ROWS, 2))
    p = 1 / (1 + np.exp(-(8 * X[:, 0] - 4 * X[:, 1] - 2)))
    return X, (rng.uniform(size=N_ROWS) < p).astype(int)


def _lazy(X, y):
    return da.from_array(X, chunks=(CHUNK, 2 if X.shape[1] > 2 else -1)), da.from_array(y, chunks=500)


class _ClientWatch:
    """A dask scheduler that records what every compute brings back to the caller: no
    result may be an array with a row per record (the data read on the client)."""

    def __init__(self, n):
        self.n, self.computes, self.largest = n, 0, 0

    def __call__(self, dsk, keys, **kwargs):
        out = dask.get(dsk, keys, **kwargs)
        self.computes += 1
        stack = [out]
        while stack:
            v = stack.pop()
            if isinstance(v, (tuple, list)):
                stack.extend(v)
            elif isinstance(v, np.ndarray) and v.ndim >= 1:
                self.largest = max(self.largest, v.shape[0])
            elif hasattr(v, "gram"):
                stack.append(v.gram)
        return out

    def check(self):
        assert self.computes >= 1 and self.largest < self.n


@contextlib.contextmanager
def _quiet():
    """Without the warnings of the fits (box read from the data, labels clipped)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# ---------------------------------------------------------------- PrivateRFRegressor


@pytest.mark.parametrize("kw", [
    {},  # private scaling, box and label range read from the data (warned)
    {"bounds": (-6, 6), "target_bounds": (-1.5, 1.5)},  # public box; some labels clipped
    {"epsilon": None},  # non-private: the moments pass
    {"scaling": "box", "bounds": (-6, 6), "target_bounds": (-2, 2), "n_frequencies": 24},
])
def test_private_rf_dask_fit_equals_the_numpy_fit(regression, kw):
    X, y = regression
    Xd, yd = _lazy(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = PrivateRFRegressor(random_state=0, insecure_seed=5, **kw).fit(X, y)
        watch = _ClientWatch(N_ROWS)
        with dask.config.set(scheduler=watch):
            got = PrivateRFRegressor(random_state=0, insecure_seed=5, **kw).fit(Xd, yd)
    watch.check()
    assert got.features_.n_frequencies == ref.features_.n_frequencies
    assert got.n_labels_clipped_ == ref.n_labels_clipped_
    np.testing.assert_allclose(got.lower_, ref.lower_)
    np.testing.assert_allclose(got.scaling_.x_scale, ref.scaling_.x_scale, rtol=1e-12)
    # the same noise on sums equal to ~1e-15: the private coefficients agree to rounding
    # (the non-private solve is ill-conditioned: compared through its predictions)
    np.testing.assert_allclose(got.predict(X), ref.predict(X), rtol=0, atol=1e-8)
    lazy = got.predict(Xd)
    assert isinstance(lazy, da.Array) and lazy.chunks[0] == Xd.chunks[0]
    np.testing.assert_allclose(lazy.compute(), ref.predict(X), rtol=0, atol=1e-8)


def test_private_rf_releases_once_on_the_merged_sums(regression, monkeypatch):
    """Two Gaussian releases in all (the scaling, the statistics), each once, on sums that
    equal the sums of all the records; nothing noisy is drawn per block."""
    X, y = regression
    seen = {"scaling": [], "statistics": [], "gaussian": 0}
    real_scaling, real_stats = rfm_estimators.release_scaling, rfm_estimators.release_statistics
    real_randomise = Gaussian.randomise

    def spy_scaling(total, *args, **kwargs):
        seen["scaling"].append(np.array(total))
        return real_scaling(total, *args, **kwargs)

    def spy_stats(stats, *args, **kwargs):
        seen["statistics"].append((stats.gram.copy(), stats.xty.copy(), stats.count))
        return real_stats(stats, *args, **kwargs)

    def spy_randomise(self, v):
        seen["gaussian"] += 1
        return real_randomise(self, v)

    monkeypatch.setattr(rfm_estimators, "release_scaling", spy_scaling)
    monkeypatch.setattr(rfm_estimators, "release_statistics", spy_stats)
    monkeypatch.setattr(Gaussian, "randomise", spy_randomise)
    kw = {"bounds": (-6, 6), "target_bounds": (-2, 2), "random_state": 0, "insecure_seed": 3}
    with _quiet():
        PrivateRFRegressor(**kw).fit(X, y)
        assert seen["gaussian"] == 2
        PrivateRFRegressor(**kw).fit(*_lazy(X, y))
    assert seen["gaussian"] == 4 and len(seen["scaling"]) == 2 and len(seen["statistics"]) == 2
    (s_np, s_dask), ((g0, b0, c0), (g1, b1, c1)) = seen["scaling"], seen["statistics"]
    assert s_dask[0] == N_ROWS and c1 == c0 == N_ROWS
    np.testing.assert_allclose(s_dask, s_np, rtol=1e-12)
    np.testing.assert_allclose(g1, g0, rtol=0, atol=1e-9)
    np.testing.assert_allclose(b1, b0, rtol=0, atol=1e-9)


def test_private_rf_fits_a_dask_data_frame(regression):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y = regression
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(target=y)
    ddf = dd.from_pandas(frame, npartitions=4)
    kw = {"bounds": (-6, 6), "target_bounds": (-1.2, 1.2), "random_state": 1, "insecure_seed": 2}
    with pytest.warns(RuntimeWarning, match=r"(\d+) of 6000 values of y lie outside") as rec:
        got = PrivateRFRegressor(**kw).fit(ddf[["a", "b", "c"]], ddf["target"])
    with pytest.warns(RuntimeWarning, match="values of y lie outside") as rec0:
        ref = PrivateRFRegressor(**kw).fit(X, y)
    assert str(rec[0].message) == str(rec0[0].message)  # the same count of clipped labels
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=0, atol=1e-9)
    lazy = got.predict(ddf[["a", "b", "c"]])
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), ref.predict(X), rtol=0, atol=1e-9)


def test_bad_records_in_a_block_are_named(regression):
    X, y = regression
    bad = X.copy()
    bad[4_321, 1] = np.nan
    with pytest.raises(ValueError, match="record 4321 of X contains NaN"):
        PrivateRFRegressor(epsilon=None, bounds=(-6, 6), target_bounds=(-2, 2)).fit(*_lazy(bad, y))
    yb = y.copy()
    yb[5_999] = np.inf
    with pytest.raises(ValueError, match="label of record 5999 is not"):
        PrivateRFRegressor(epsilon=None, bounds=(-6, 6), target_bounds=(-2, 2)).fit(*_lazy(X, yb))
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        PrivateRFRegressor(epsilon=None).fit(da.from_array(X, chunks=CHUNK), y[:-1])


def test_dprfm_refuses_dask_and_predicts_lazily(regression):
    X, y = regression
    Xd, yd = _lazy(X, y)
    with pytest.raises(TypeError, match="PrivateRFRegressor") as err:
        DPRFMRegressor(n_max=N_ROWS).fit(Xd, yd)
    assert "n x N" in str(err.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the Lemma 6 conditions, reported on the data
        model = DPRFMRegressor(epsilon=None, n_frequencies=600, random_state=0).fit(X[:300], y[:300])
    lazy = model.predict(Xd)
    assert isinstance(lazy, da.Array)
    ref = model.predict(X)  # an interpolating model: large values, differences of rounding between BLAS paths
    np.testing.assert_allclose(lazy.compute(), ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max())


def test_statistics_and_scaling_take_dask(regression):
    X, y = regression
    Xd, yd = _lazy(X, y)
    rf = RandomFeatures(3, 16, length_scale=2.0, layout="unit", intercept=True, random_state=0)
    with pytest.warns(RuntimeWarning, match="values of y lie outside") as rec:
        got = RFStatistics(rf, (-1, 1)).update(Xd, yd)
    with pytest.warns(RuntimeWarning, match="values of y lie outside") as rec0:
        ref = RFStatistics(rf, (-1, 1)).update(X, y)
    assert str(rec[0].message) == str(rec0[0].message)
    np.testing.assert_allclose(got.gram, ref.gram, rtol=0, atol=1e-9)
    np.testing.assert_allclose(got.xty, ref.xty, rtol=0, atol=1e-9)
    assert got.count == ref.count == N_ROWS
    box = (np.full(3, -6.0), np.full(3, 6.0))
    a = private_scaling(Xd, yd, box, (-2, 2), 1.0, 1e-6, insecure_seed=0)
    b = private_scaling(X, y, box, (-2, 2), 1.0, 1e-6, insecure_seed=0)
    np.testing.assert_allclose(a.x_centre, b.x_centre, rtol=0, atol=1e-9)
    assert a.count == b.count and a.target_range == b.target_range


# ---------------------------------------------------------------- M2M models


def test_m2m_logistic_dask_fit_equals_the_numpy_fit(classes):
    X, y = classes
    Xd, yd = da.from_array(X, chunks=(CHUNK, 2)), da.from_array(y, chunks=1_000)
    kw = {"n_synthetic": 2_000, "random_state": 1}
    with pytest.warns(RuntimeWarning, match="bounds not given"):
        watch = _ClientWatch(N_ROWS)
        with dask.config.set(scheduler=watch):
            got = M2MLogisticRegression(**kw).fit(Xd, yd)  # the box of X: a blockwise pass
    watch.check()
    with pytest.warns(RuntimeWarning, match="bounds not given"):
        ref = M2MLogisticRegression(**kw).fit(X, y)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got.intercept_, ref.intercept_, rtol=1e-6, atol=1e-8)
    assert list(got.classes_) == [0, 1]
    proba, labels = got.predict_proba(Xd), got.predict(Xd)
    assert isinstance(proba, da.Array) and isinstance(labels, da.Array)
    np.testing.assert_allclose(proba.compute(), ref.predict_proba(X), rtol=0, atol=1e-6)
    assert np.mean(labels.compute() == ref.predict(X)) > 0.999
    with pytest.raises(ValueError, match="exactly 2 classes, got at least 3"):
        M2MLogisticRegression(bounds=([0, 0], [1, 1])).fit(Xd, da.arange(N_ROWS, chunks=1_000) % 3)


def test_m2m_logistic_data_frame_with_named_labels(classes):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, y = classes
    frame = pd.DataFrame(X, columns=["u", "v"]).assign(label=np.where(y == 1, "yes", "no"))
    ddf = dd.from_pandas(frame, npartitions=3)
    kw = {"bounds": ([0, 0], [1, 1]), "n_synthetic": 2_000, "random_state": 4}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # dask: string columns become object arrays
        got = M2MLogisticRegression(**kw).fit(ddf[["u", "v"]], ddf["label"])
    ref = M2MLogisticRegression(**kw).fit(X, frame["label"].to_numpy())
    assert list(got.classes_) == ["no", "yes"]
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-6, atol=1e-8)


def test_m2m_private_fits_release_the_merged_sketch_once(classes, monkeypatch):
    import pysketch.m2m.models as models

    X, y = classes
    clean = []
    real = models.make_private

    def spy(sketch, *args, **kwargs):
        clean.append(sketch)
        return real(sketch, *args, **kwargs)

    monkeypatch.setattr(models, "make_private", spy)
    Xd, yd = da.from_array(X, chunks=(CHUNK, 2)), da.from_array(y, chunks=1_000)
    log = M2MLogisticRegression(bounds=([0, 0], [1, 1]), epsilon=2.0, n_synthetic=2_000, random_state=0).fit(Xd, yd)
    assert len(clean) == 1 and clean[0].count == N_ROWS
    fm = clean[0].feature_map
    np.testing.assert_allclose(clean[0].sum, fm.sketch(np.column_stack([X, y])).sum, rtol=0, atol=1e-9)
    assert log.privacy_["epsilon"] == 2.0 and not np.allclose(log.m2m_.weights_, 0)
    t = 2 * X[:, 0] - X[:, 1]
    lin = M2MLinearRegression(bounds=([0, 0], [1, 1]), y_bounds=(-1.5, 2.5), epsilon=2.0, n_synthetic=2_000,
                              random_state=0).fit(Xd, da.from_array(t, chunks=1_000))
    assert len(clean) == 2 and clean[1].count == N_ROWS
    fm = clean[1].feature_map
    np.testing.assert_allclose(clean[1].sum, fm.sketch(np.column_stack([X, t])).sum, rtol=0, atol=1e-9)
    assert lin.privacy_["epsilon"] == 2.0


def test_m2m_linear_dask_fit_reads_the_box_blockwise(classes):
    X, _ = classes
    t = 2 * X[:, 0] - X[:, 1] + 0.05 * np.random.default_rng(0).standard_normal(N_ROWS)
    kw = {"n_synthetic": 2_000, "random_state": 2}
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        got = M2MLinearRegression(**kw).fit(da.from_array(X, chunks=(CHUNK, 2)), da.from_array(t, chunks=900))
    assert sorted(str(w.message).split(":")[0] for w in rec) == ["bounds not given", "target_bounds not given"]
    assert all(w.filename == __file__ for w in rec)  # they point at the caller
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ref = M2MLinearRegression(**kw).fit(X, t)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=1e-6, atol=1e-8)
    lazy = got.predict(da.from_array(X, chunks=(CHUNK, 2)))
    assert isinstance(lazy, da.Array)
    np.testing.assert_allclose(lazy.compute(), ref.predict(X), rtol=0, atol=1e-6)


# ---------------------------------------------------------------- PrivateJLTransformer


def test_jl_transformer_fits_without_reading_and_releases_blockwise():
    rng = np.random.default_rng(0)
    X = rng.poisson(5.0, size=(400, 60)).astype(float)
    Xd = da.from_array(X, chunks=(90, 60))

    def refuse(dsk, keys, **kwargs):
        raise AssertionError("fit computed a block")

    with dask.config.set(scheduler=refuse):
        tr = PrivateJLTransformer(32, sparsity=1, epsilon=2.0, random_state=1).fit(Xd)
    assert tr.operator_ == PrivateJLTransformer(32, sparsity=1, random_state=1).fit(X).operator_
    exact = tr.operator_.apply(X)
    R = tr.release(Xd)  # each row's own noise: Laplace of scale 1/2 (sensitivity 1, epsilon 2)
    assert R.values.shape == (400, 32) and R.mechanism == "laplace" and R.m2 == pytest.approx(0.5)
    assert abs(np.abs(R.values - exact).mean() - 0.5) < 0.03  # rows in their order, noise of the stated scale
    T = tr.transform(Xd)
    assert isinstance(T, da.Array) and T.shape == (400, 32)
    first = T.compute()
    assert np.array_equal(first, T.compute())  # released once: reading again draws no new noise
    assert abs(np.abs(first - exact).mean() - 0.5) < 0.03
    with pytest.raises(ValueError, match="expecting 60 features"):
        tr.transform(da.from_array(X[:, :5], chunks=90))


# ---------------------------------------------------------------- a cluster of worker processes




def test_local_cluster_private_rf_fit(dask_client, regression):
    pids = set(dask_client.run(lambda: __import__("os").getpid()).values())
    assert len(pids) == 2 and __import__("os").getpid() not in pids  # worker processes
    X, y = regression
    Xd, yd = _lazy(X, y)
    kw = {"bounds": (-6, 6), "target_bounds": (-2, 2), "random_state": 0, "insecure_seed": 9}
    with _quiet():
        got = PrivateRFRegressor(**kw).fit(Xd, yd)
        ref = PrivateRFRegressor(**kw).fit(X, y)
    np.testing.assert_allclose(got.coef_, ref.coef_, rtol=0, atol=1e-9)
    lazy = got.predict(Xd)
    np.testing.assert_allclose(lazy.compute(), ref.predict(X), rtol=0, atol=1e-9)
