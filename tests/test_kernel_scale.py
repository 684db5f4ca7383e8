"""Tests of pysketch.kernel_scale: the kernel scale estimated from a pilot of the data.

Properties checked: scale equivariance (thesis sec. 4.2.2), recovery of a known variance
(Keriven et al.'s sketch estimate) and of a known separation (k-means on the pilot),
reproducibility, the pilot reading only its rows, and the errors of bad inputs.
"""

import math
import warnings

import numpy as np
import pytest

import pysketch.kernel_scale as scale
from pysketch.kernel_scale import (
    GMM_SKETCH_FACTOR,
    KMEANS_SKETCH_FACTOR,
    ScaleEstimate,
    ScaleWarning,
    draw_pilot,
    estimate_kernel_scale,
    estimate_sigma2_sketch,
    kernel_scale,
    separation_scale,
)


def mixture(k, d, n, sigma_inter, sigma_intra, seed):
    """Model (4.5) of the thesis: centers N(0, sigma_inter^2 I), equal weights, isotropic
    clusters of std sigma_intra. Returns X, the centers and their minimum distance."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0.0, sigma_inter, (k, d))
    X = centers[rng.integers(0, k, n)] + rng.normal(0.0, sigma_intra, (n, d))
    diff = centers[:, None, :] - centers[None, :, :]
    dist = np.sqrt(np.sum(diff**2, axis=-1))
    np.fill_diagonal(dist, np.inf)
    return X, centers, float(dist.min())


# ---------------------------------------------------------------------------------------
# Scale equivariance: sigma(beta X) = beta sigma(X)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("beta", [1e-3, 0.37, 5.0, 3.0e4])
def test_sketch_estimate_is_scale_equivariant(beta):
    X, _, _ = mixture(4, 6, 3000, 4.0, 1.0, seed=1)
    base = estimate_sigma2_sketch(X, random_state=7)
    scaled = estimate_sigma2_sketch(beta * X, random_state=7)
    # Same seed: same pilot rows and same unit draws; the pilot is expressed in a
    # power-of-two unit of its own spread, so only rounding differs (5% is the brief's
    # tolerance; the observed error is ~1e-12).
    assert scaled == pytest.approx(beta**2 * base, rel=0.05)
    assert scaled == pytest.approx(beta**2 * base, rel=1e-6)


@pytest.mark.parametrize("beta", [1e-2, 7.5])
def test_separation_and_kernel_scale_are_scale_equivariant(beta):
    X, _, _ = mixture(5, 3, 2000, 5.0, 1.0, seed=2)
    assert separation_scale(beta * X, 5, random_state=3) == pytest.approx(
        beta * separation_scale(X, 5, random_state=3), rel=0.05
    )
    for method in ("sketch", "separation"):
        for task in ("kmeans", "gmm"):
            a = kernel_scale(X, 5, method=method, task=task, random_state=4)
            b = kernel_scale(beta * X, 5, method=method, task=task, random_state=4)
            assert b == pytest.approx(beta * a, rel=0.05)


def test_translation_invariance():
    # |z(omega)| and distances do not change when the data is shifted.
    X, _, _ = mixture(3, 4, 2000, 4.0, 1.0, seed=3)
    shift = np.array([1e3, -50.0, 7.0, 0.0])
    assert estimate_sigma2_sketch(X + shift, random_state=0) == pytest.approx(
        estimate_sigma2_sketch(X, random_state=0), rel=1e-6
    )


# ---------------------------------------------------------------------------------------
# Recovery
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 3, 20, 200])
def test_sketch_estimate_recovers_the_variance_of_one_gaussian(d):
    s = 2.5
    X = np.random.default_rng(d).normal(0.0, s, (5000, d))
    ratio = estimate_sigma2_sketch(X, random_state=d) / s**2
    # Tolerance [0.88, 1.08]: the largest |z_j| of a box of 25 frequencies includes
    # positive noise of order sqrt(log(25) / n0) ~ 0.025 at n0 = 5000, which flattens the
    # fitted decay: measured bias -3% to -6% for d = 3..1000. In d = 1 the sample
    # variance of the 5000 records itself varies by ~2% (sd sqrt(2/n)): measured ratios
    # over 12 seeds in [0.93, 1.05] (d = 1, 3) and [0.945, 0.975] (d = 20, 200).
    assert 0.88 <= ratio <= 1.08


@pytest.mark.parametrize("d, sigma_intra", [(2, 0.5), (16, 2.0), (64, 1.0)])
def test_sketch_estimate_tracks_the_intra_cluster_scale(d, sigma_intra):
    X, _, _ = mixture(5, d, 5000, 6.0 * sigma_intra, sigma_intra, seed=d)
    ratio = math.sqrt(estimate_sigma2_sketch(X, random_state=1)) / sigma_intra
    # Well separated (rho = 6): measured sigma_bar / sigma_intra in [0.98, 1.30] over
    # seeds (the box maxima underestimate the envelope where the 5 centers are out of
    # phase, so the estimate errs upwards). Far below the total spread (ratio ~6).
    assert 0.9 <= ratio <= 1.45


def test_sketch_estimate_on_ten_clusters_overestimates_moderately():
    # The calibration setting (k = 10): sigma_bar ~ 1.3 sigma_intra in every dimension.
    X, _, _ = mixture(10, 32, 5000, 2.0, 1.0, seed=5)
    sbar = math.sqrt(estimate_sigma2_sketch(X, random_state=5))
    assert 1.1 <= sbar <= 1.5


@pytest.mark.parametrize("law", ["adapted_radius", "folded_gaussian", "gaussian"])
def test_every_radius_law_recovers_a_gaussian(law):
    X = np.random.default_rng(0).normal(0.0, 0.3, (4000, 10))
    ratio = estimate_sigma2_sketch(X, law=law, random_state=0) / 0.09
    assert 0.85 <= ratio <= 1.05


@pytest.mark.parametrize("k, d, seed", [(8, 10, 0), (4, 2, 1), (30, 16, 2)])
def test_separation_scale_recovers_the_minimum_center_distance(k, d, seed):
    # Well separated: sigma_inter = 2.5 k^(1/d) (thesis model (4.5), s = 2.5) but with a
    # smaller intra-cluster scale so that the clusters do not overlap even when two
    # centers are drawn close. k = 30 needs the merge-and-split moves (Lloyd alone
    # splits a cluster in most runs and returns a fraction of epsilon).
    X, _, eps = mixture(k, d, 6000, 2.5 * k ** (1.0 / d) * 3.0, 1.0, seed=seed)
    est = separation_scale(X, k, random_state=seed)
    assert est == pytest.approx(eps, rel=0.15)


def test_kernel_scale_maps_the_sketch_estimate_per_task():
    X, _, _ = mixture(4, 9, 3000, 5.0, 1.0, seed=4)
    sigma2 = estimate_sigma2_sketch(X, random_state=11)
    km = estimate_kernel_scale(X, 4, task="kmeans", random_state=11)
    gm = estimate_kernel_scale(X, 4, task="gmm", random_state=11)
    assert isinstance(km, ScaleEstimate)
    assert km.sigma2_bar == sigma2 == gm.sigma2_bar
    assert km.sigma == pytest.approx(KMEANS_SKETCH_FACTOR * math.sqrt(9 * sigma2))
    assert gm.sigma == pytest.approx(GMM_SKETCH_FACTOR * math.sqrt(9 * sigma2))
    # GMM: the adapted radius law with the default normalization and this sigma is
    # Keriven et al.'s omega = R phi / sigma_bar: E||omega||^2 = E[R^2] / sigma_bar^2.
    from pysketch.frequencies import ADAPTED_RADIUS_SECOND_MOMENT, AdaptedRadiusLaw

    law = AdaptedRadiusLaw(gm.sigma)
    assert law.expected_sq_norm(9) == pytest.approx(ADAPTED_RADIUS_SECOND_MOMENT / sigma2)
    assert km.pilot_size == gm.pilot_size == 3000 and km.n_features == 9
    assert len(km.history) == 6 and km.history[-1] == km.sigma2_bar
    assert kernel_scale(X, 4, method="sketch", task="kmeans", random_state=11) == km.sigma
    sep = estimate_kernel_scale(X, 4, method="separation", random_state=11)
    # kernel_scale's default is the estimators' 'auto': the separation for k-means
    assert kernel_scale(X, 4, random_state=11) == sep.sigma
    assert sep.separation == separation_scale(X, 4, random_state=11)
    assert sep.sigma == pytest.approx(scale.KMEANS_SEPARATION_FACTOR * sep.separation)
    sep_gmm = estimate_kernel_scale(X, 4, method="separation", task="gmm", random_state=11)
    assert sep_gmm.sigma == sep.separation
    assert sep.sigma2_bar is None and len(sep.history) == 3


def test_auto_method_picks_separation_for_kmeans_and_sketch_otherwise():
    X, _, _ = mixture(4, 5, 2000, 5.0, 1.0, seed=12)
    auto = estimate_kernel_scale(X, 4, method="auto", task="kmeans", random_state=1)
    assert auto.method == "separation"
    assert auto.sigma == kernel_scale(X, 4, method="separation", random_state=1)
    assert auto.separation == separation_scale(X, 4, random_state=1)
    assert estimate_kernel_scale(X, 4, method="auto", task="gmm", random_state=1).method == "sketch"
    assert estimate_kernel_scale(X, 1, method="auto", task="kmeans", random_state=1).method == "sketch"


# ---------------------------------------------------------------------------------------
# Reproducibility and the pilot
# ---------------------------------------------------------------------------------------


def test_reproducible_with_a_seed():
    X, _, _ = mixture(3, 5, 8000, 4.0, 1.0, seed=6)
    for fn in (
        lambda rs: estimate_sigma2_sketch(X, n0=2000, random_state=rs),
        lambda rs: separation_scale(X, 3, n0=2000, random_state=rs),
        lambda rs: kernel_scale(X, 3, pilot_size=2000, random_state=rs),
    ):
        assert fn(5) == fn(5)
        assert fn(np.random.default_rng(5)) == fn(np.random.default_rng(5))
    assert estimate_sigma2_sketch(X, n0=2000, random_state=5) != estimate_sigma2_sketch(
        X, n0=2000, random_state=6
    )


def test_draw_pilot_samples_distinct_sorted_rows():
    X = np.arange(30000.0).reshape(10000, 3)
    P = draw_pilot(X, 500, random_state=0)
    rows = P[:, 0] / 3
    assert P.shape == (500, 3) and P.dtype == np.float64
    assert np.all(np.diff(rows) > 0)  # distinct, increasing
    np.testing.assert_array_equal(draw_pilot(X, 500, random_state=0), P)
    small = draw_pilot(X[:40], 500, random_state=0)
    np.testing.assert_array_equal(small, X[:40])  # n <= n0: every record, in order


class _RecordingTable:
    """A 2-D table that records the rows it is asked for (like an h5py dataset)."""

    def __init__(self, data):
        self._data = data
        self.shape = data.shape
        self.requests = []

    def __getitem__(self, index):
        self.requests.append(index)
        return self._data[index]


def test_only_the_pilot_rows_are_read(tmp_path):
    X, _, _ = mixture(3, 4, 20000, 4.0, 1.0, seed=7)
    table = _RecordingTable(X)
    value = estimate_sigma2_sketch(table, n0=1000, random_state=3)
    assert len(table.requests) == 1
    rows = np.asarray(table.requests[0])
    assert rows.shape == (1000,) and np.all(np.diff(rows) > 0)
    assert value == estimate_sigma2_sketch(X, n0=1000, random_state=3)
    path = tmp_path / "x.npy"
    np.save(path, X)
    mm = np.load(path, mmap_mode="r")
    assert estimate_sigma2_sketch(mm, n0=1000, random_state=3) == value
    assert separation_scale(mm, 3, n0=1000, random_state=3) == separation_scale(
        X, 3, n0=1000, random_state=3
    )


def test_iterables_of_batches_need_an_explicit_pilot():
    X, _, _ = mixture(3, 4, 3000, 4.0, 1.0, seed=8)
    batches = (X[i : i + 500] for i in range(0, 3000, 500))
    with pytest.raises(TypeError, match="pilot="):
        estimate_sigma2_sketch(batches)
    with pytest.raises(TypeError, match="pilot="):
        kernel_scale(iter([X]), 3)
    expected = estimate_sigma2_sketch(X[:1000], random_state=0)
    assert estimate_sigma2_sketch(batches, pilot=X[:1000], random_state=0) == expected
    assert estimate_sigma2_sketch(None, pilot=X[:1000], random_state=0) == expected
    est = estimate_kernel_scale(iter([X]), 3, pilot=X[:1000], random_state=0)
    assert est.pilot_size == 1000
    with pytest.raises(ValueError, match="columns"):
        estimate_sigma2_sketch(X, pilot=X[:100, :3])


class _FrameLike:
    """Mimics a pandas DataFrame: ``frame[key]`` selects columns, ``frame.iloc[rows]``
    selects rows by position."""

    def __init__(self, data):
        self._data = data
        self.shape = data.shape
        self.iloc = self

    def __getitem__(self, index):
        if self.iloc is self and isinstance(index, np.ndarray):
            return self._data[index]
        raise KeyError(index)

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._data, dtype=dtype)


def test_data_frames_are_read_by_row_position():
    X, _, _ = mixture(3, 4, 3000, 4.0, 1.0, seed=8)
    expected = estimate_sigma2_sketch(X, n0=1000, random_state=2)
    assert estimate_sigma2_sketch(_FrameLike(X), n0=1000, random_state=2) == expected
    assert estimate_sigma2_sketch(_FrameLike(X[:800]), n0=1000, random_state=2) == (
        estimate_sigma2_sketch(X[:800], n0=1000, random_state=2)
    )


def test_fewer_records_than_the_pilot_size_uses_them_all():
    X, _, _ = mixture(2, 3, 300, 4.0, 1.0, seed=9)
    est = estimate_kernel_scale(X, 2, pilot_size=5000, random_state=0)
    assert est.pilot_size == 300
    # list-of-rows input is accepted and gives the same value
    assert estimate_sigma2_sketch(X.tolist(), random_state=1) == estimate_sigma2_sketch(X, random_state=1)


def test_input_arrays_are_not_modified():
    X, _, _ = mixture(2, 3, 500, 4.0, 1.0, seed=10)
    before = X.copy()
    estimate_sigma2_sketch(X, random_state=0)
    separation_scale(X, 2, random_state=0)
    np.testing.assert_array_equal(X, before)


# ---------------------------------------------------------------------------------------
# Warnings and errors
# ---------------------------------------------------------------------------------------


def test_too_few_frequencies_per_box_warn():
    X = np.random.default_rng(0).normal(size=(1000, 3))
    with pytest.warns(ScaleWarning, match="frequencies per box"):
        estimate_sigma2_sketch(X, m0=60, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        estimate_sigma2_sketch(X, m0=200, random_state=0)  # 10 per box: no warning
    with pytest.raises(ValueError, match="m0"):
        estimate_sigma2_sketch(X, m0=19)
    assert issubclass(ScaleWarning, RuntimeWarning)


@pytest.mark.parametrize("k", [0, -3])
def test_n_clusters_below_one(k):
    X = np.random.default_rng(0).normal(size=(100, 2))
    for fn in (kernel_scale, separation_scale):
        with pytest.raises(ValueError, match="n_clusters"):
            fn(X, k)


def test_n_clusters_errors():
    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ValueError, match="n_clusters must be >= 2"):
        separation_scale(X, 1)
    with pytest.raises(ValueError, match="n_clusters must be >= 2"):
        kernel_scale(X, 1, method="separation")
    assert kernel_scale(X, 1, random_state=0) > 0  # the sketch method needs no pair
    for fn in (kernel_scale, separation_scale):
        with pytest.raises(ValueError, match="larger than the number of pilot records"):
            fn(X, 51)
    with pytest.raises(TypeError, match="n_clusters"):
        kernel_scale(X, 2.0)
    with pytest.raises(TypeError, match="n_clusters"):
        separation_scale(X, True)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_values_name_x(bad):
    X = np.random.default_rng(0).normal(size=(200, 3))
    X[17, 1] = bad
    for call in (
        lambda: estimate_sigma2_sketch(X),
        lambda: separation_scale(X, 2),
        lambda: kernel_scale(X, 2),
    ):
        with pytest.raises(ValueError, match=r"^X contains NaN or infinity \(row 17"):
            call()
    with pytest.raises(ValueError, match="^pilot contains NaN"):
        estimate_sigma2_sketch(None, pilot=X)


def test_non_finite_values_in_a_subsample_name_the_data_row():
    X = np.random.default_rng(0).normal(size=(4000, 3))
    X[3000:, 2] = np.nan
    with pytest.raises(ValueError, match=r"^X contains NaN or infinity \(row 3\d\d\d,"):
        estimate_sigma2_sketch(X, n0=500, random_state=0)


def test_constant_data_has_no_scale():
    for X in (np.zeros((100, 3)), np.full((100, 2), 7.25), np.full((10, 4), 1e300)):
        for call in (
            lambda: estimate_sigma2_sketch(X),
            lambda: separation_scale(X, 2),
            lambda: kernel_scale(X, 2),
        ):
            with pytest.raises(ValueError, match="constant.*undefined"):
                call()
    # Fewer distinct records than clusters: the separation is 0.
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 2.0]]), 50, axis=0)
    with pytest.raises(ValueError, match="distinct"):
        separation_scale(X, 3, random_state=0)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.zeros(10), "2-D"),
        (np.zeros((4, 5, 2)), "2-D"),
        (np.zeros((0, 3)), "at least one row"),
        (np.zeros((5, 0)), "at least one row"),
        (np.ones((1, 3)), "at least 2 records"),
    ],
)
def test_wrong_shapes(X, match):
    with pytest.raises(ValueError, match=match):
        estimate_sigma2_sketch(X)


def test_wrong_types_and_parameters():
    X = np.random.default_rng(0).normal(size=(100, 2))
    with pytest.raises(TypeError, match="real"):
        estimate_sigma2_sketch(X.astype(np.complex128))
    with pytest.raises(TypeError, match="real"):
        estimate_sigma2_sketch(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(TypeError, match="X must be"):
        estimate_sigma2_sketch(None)
    with pytest.raises(ValueError, match="method"):
        kernel_scale(X, 2, method="silverman")
    with pytest.raises(ValueError, match="task"):
        kernel_scale(X, 2, task="pca")
    with pytest.raises(ValueError, match="law"):
        estimate_sigma2_sketch(X, law="cauchy")
    with pytest.raises(ValueError, match="n_boxes"):
        estimate_sigma2_sketch(X, n_boxes=1)
    with pytest.raises(ValueError, match="n_iter"):
        estimate_sigma2_sketch(X, n_iter=0)
    with pytest.raises(ValueError, match="n0"):
        estimate_sigma2_sketch(X, n0=0)
    with pytest.raises(TypeError, match="n0"):
        separation_scale(X, 2, n0=10.5)


def test_module_constants_are_documented_values():
    assert scale.GMM_SKETCH_FACTOR == pytest.approx(1.0 / math.sqrt(2.30392), rel=1e-5)
    assert 0.5 < scale.KMEANS_SKETCH_FACTOR < 4.0
    assert scale.KMEANS_SEPARATION_FACTOR == 0.8  # validated value (see its comment)
    assert scale.FREQUENCIES_PER_BOX * 20 == 500
