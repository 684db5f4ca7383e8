"""Data-scale robustness (issue 21 part 6): data multiplied by s, for s from subnormal to
1e300, through every entry point. Within an entry point's supported range each gives s^p
times its result at scale 1 (p the power of the result's unit); outside it, a ValueError
about the data's magnitude; never an overflow warning (pyproject turns RuntimeWarning into
errors), NaN, inf or a silently wrong answer. The estimators never copy the data for it:
the sketch is scale-equivariant and the decoders work in a power-of-two unit
(pysketch.decoders.problem.DecodingProblem.in_units, pysketch.decoders.subspace)."""

import warnings

import numpy as np
import pytest

from pysketch import CompressiveGaussianMixture, CompressiveKMeans, CompressivePCA, make_feature_map
from pysketch.kernel_scale import check_data_magnitude, data_unit, kernel_scale

CENTRES = np.array([[0.0, 0.0, 0.0], [6.0, 0.0, 1.0], [0.0, 6.0, -1.0]])
X0 = np.concatenate([c + np.random.default_rng(i).standard_normal((200, 3)) for i, c in enumerate(CENTRES)])

WORKS = [1e-150, 1e-30, 1e30, 1e150]
REFUSED = [5e-324 * 3, 1e-310, 1e-300, 1e300]  # subnormals, tiny squares, huge squares
MESSAGE = r"magnitude of .* is outside the supported range .* rescale the data"


def _dtype(s):
    """float32 sketches hold data and frequencies up to about 3.4e38: the estimators refuse
    kernel scales beyond 2^+-120 in float32 (test_float32_sketches_refuse_..._naming_the_scale)."""
    return "float32" if 1e-30 <= s <= 1e30 else "float64"


def _matched(centres, scale):
    """The centres ordered as CENTRES * scale (each true centre's nearest), in units of scale."""
    c = np.asarray(centres) / scale
    return c[[int(np.argmin(((c - t) ** 2).sum(axis=1))) for t in CENTRES]]


@pytest.fixture(scope="module")
def at_one():
    """The results at scale 1 (computed once)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return {
            "kmeans": _matched(CompressiveKMeans(3, random_state=0).fit(X0).cluster_centers_, 1.0),
            "gmm": CompressiveGaussianMixture(3, kernel_scale=2.0, random_state=0).fit(X0),
            "pca": CompressivePCA(2, random_state=0).fit(X0),
        }


def test_units_are_powers_of_two_and_the_range_is_checked():
    assert data_unit(0.0) == data_unit(1.0) == data_unit(60.0) == 1.0
    assert data_unit(1e30) == 2.0 ** 100  # 1e30 is in [2^99, 2^100)
    assert data_unit(3e-30) == 2.0 ** -98
    for m in (2.0 ** 504, 2.0 ** -504, 1e151, 1e-151):
        check_data_magnitude(m)
    for m in (2.0 ** 504 * 1.01, 2.0 ** -504 * 0.99, 1e300, 5e-324):
        with pytest.raises(ValueError, match=MESSAGE):
            check_data_magnitude(m, "X")


@pytest.mark.parametrize("s", WORKS)
def test_kernel_scale_and_feature_map_sketch_are_equivariant(s):
    sigma = kernel_scale(X0 * s, 3, random_state=1)
    assert sigma / s == pytest.approx(kernel_scale(X0, 3, random_state=1), rel=1e-12)
    fm_s = make_feature_map(3, 40, sigma=sigma, random_state=3)
    fm_1 = make_feature_map(3, 40, sigma=sigma / s, random_state=3)
    # Omega_s^T (s x) = Omega_1^T x up to rounding: the features (|.| = 1) agree
    np.testing.assert_allclose(fm_s.sketch(X0 * s).sum, fm_1.sketch(X0).sum, rtol=0, atol=1e-9)


@pytest.mark.parametrize("s", REFUSED)
def test_kernel_scale_refuses_data_beyond_the_range(s):
    with pytest.raises(ValueError, match=MESSAGE):
        kernel_scale(X0 * s, 3, random_state=1)


@pytest.mark.parametrize("s", WORKS)
def test_kmeans_centres_scale_with_the_data(s, at_one):
    km = CompressiveKMeans(3, random_state=0, dtype=_dtype(s)).fit(X0 * s)
    assert km.data_unit_ != 1.0  # the decoder worked in a unit of the data's box
    got = _matched(km.cluster_centers_, s)
    # the decoder sees the box of X0 * (s / unit), s / unit in [1/2, 1): not the same bits
    # as at scale 1, but the same clusters
    np.testing.assert_allclose(got, at_one["kmeans"], rtol=0, atol=0.05)
    assert km.kernel_scale_ / s == pytest.approx(
        CompressiveKMeans(3, random_state=0).fit(X0).kernel_scale_, rel=0.05)
    c = km.cluster_centers_ / s
    nearest = np.array([int(np.argmin(((c - t) ** 2).sum(axis=1))) for t in CENTRES])
    truth = np.repeat(np.arange(3), 200)
    assert np.mean(km.predict(X0 * s) == nearest[truth]) > 0.95  # the clusters, found at every scale
    assert np.isfinite(km.inertia_) and km.inertia_ > 0
    assert np.isfinite(km.transform(X0[:5] * s)).all()


@pytest.mark.parametrize("s", [1e-150, 1e150])
def test_private_kmeans_with_public_bounds_at_the_data_scale(s, at_one):
    # the private pilot (kernel_scale='auto': private mean and spread in the public box), the
    # release and the decoding (in the public unit of the bounds) at the data's scale
    km = CompressiveKMeans(3, epsilon=200.0, bounds=(-5.0 * s, 12.0 * s), random_state=0,
                           dtype="float64").fit(X0 * s)
    assert km.data_unit_ != 1.0
    np.testing.assert_allclose(_matched(km.cluster_centers_, s), at_one["kmeans"], rtol=0, atol=0.5)
    lo, hi = km.bounds_
    np.testing.assert_allclose(lo / s, -5.0, rtol=1e-12)
    np.testing.assert_allclose(hi / s, 12.0, rtol=1e-12)


@pytest.mark.parametrize("s", [1e-30, 1e150])
def test_gmm_means_and_covariances_scale_with_the_data(s, at_one):
    ref = at_one["gmm"]
    gm = CompressiveGaussianMixture(3, kernel_scale=2.0 * s, random_state=0, dtype=_dtype(s)).fit(X0 * s)
    order = [int(np.argmin(((gm.means_ / s - m) ** 2).sum(axis=1))) for m in ref.means_]
    np.testing.assert_allclose(gm.means_[order] / s, ref.means_, rtol=0, atol=0.05)
    np.testing.assert_allclose(gm.covariances_[order] / (s * s), ref.covariances_, rtol=0.1)
    assert (gm.predict(X0 * s) == np.asarray(order)[ref.predict(X0)]).mean() > 0.99
    assert np.isfinite(gm.score(X0 * s))


@pytest.mark.parametrize("s", WORKS)
def test_pca_components_and_variances_scale_with_the_data(s, at_one):
    ref = at_one["pca"]
    pca = CompressivePCA(2, random_state=0).fit(X0 * s)
    np.testing.assert_allclose(np.abs(pca.components_), np.abs(ref.components_), rtol=0, atol=1e-6)
    np.testing.assert_allclose(pca.explained_variance_ / (s * s), ref.explained_variance_, rtol=1e-6)
    np.testing.assert_allclose(pca.mean_ / s, ref.mean_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.abs(pca.transform(X0[:10] * s)) / s, np.abs(ref.transform(X0[:10])),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("s", [1e-60, 1e60])
def test_private_pca_with_a_public_radius_at_the_data_scale(s, at_one):
    pca = CompressivePCA(2, epsilon=1000.0, data_norm=20.0 * s, random_state=0).fit(X0 * s)
    cos = np.abs(np.sum(pca.components_[0] * at_one["pca"].components_[0]))
    assert cos > 0.99
    assert np.isfinite(pca.explained_variance_).all()


@pytest.mark.parametrize("s", REFUSED)
@pytest.mark.parametrize("fit", [
    lambda X, s: CompressiveKMeans(3, random_state=0).fit(X),
    lambda X, s: CompressiveKMeans(3, epsilon=1.0, bounds=(-5.0 * s, 12.0 * s), random_state=0).fit(X),
    lambda X, s: CompressiveGaussianMixture(3, random_state=0).fit(X),
    lambda X, s: CompressivePCA(2, random_state=0).fit(X),
    lambda X, s: CompressivePCA(2, epsilon=1.0, data_norm=20.0 * s, random_state=0).fit(X),
], ids=["kmeans", "kmeans_private", "gmm", "pca", "pca_private"])
def test_estimators_refuse_data_beyond_the_range_naming_its_magnitude(fit, s):
    with pytest.raises(ValueError, match=MESSAGE):
        fit(X0 * s, s)


@pytest.mark.parametrize("s", [1e-150, 1e150])
def test_private_pca_refuses_a_radius_whose_fourth_power_overflows_before_the_charge(s):
    from pysketch.privacy import BudgetAccountant

    acc = BudgetAccountant(10.0)
    with pytest.raises(ValueError, match=r"magnitude of data_norm .* outside the supported range .* private fit"):
        CompressivePCA(2, epsilon=1.0, data_norm=20.0 * s, accountant=acc, random_state=0).fit(X0 * s)
    assert acc.spent[0] == 0  # nothing charged


def test_float32_map_names_the_magnitude_beyond_its_range():
    fm = make_feature_map(3, 20, random_state=0, dtype=np.float32)
    for X in (X0 * 1e50, (X0 * 1e50)[:2]):  # a batch, and a small update through the buffer
        with pytest.raises(ValueError, match=r"record 0 has a coordinate of magnitude .* beyond the range of the "
                                             r"map's dtype float32"):
            fm.sketch(X)


# ------------------------------------------------------------------ decoding in units, no copies


def test_decoding_problem_in_units_is_the_same_problem():
    from pysketch.decoders import DecodingProblem
    from pysketch.decoders.problem import MixtureSolution

    fm = make_feature_map(3, 30, sigma=2.0 ** 90, random_state=4)
    problem = DecodingProblem.from_sketch(fm.sketch(X0 * 2.0 ** 90))
    unit = 2.0 ** 93
    p = problem.in_units(unit)
    assert problem.in_units(1.0) is problem and p.unit == unit and problem.unit == 1.0
    theta = np.random.default_rng(0).standard_normal((4, 3))
    np.testing.assert_array_equal(p.apply(theta), problem.apply(theta * unit))  # exact: a power of two
    v = np.random.default_rng(1).standard_normal((2, 30))
    np.testing.assert_array_equal(p.adjoint(v), problem.adjoint(v) * unit)
    np.testing.assert_array_equal(p.omega_sq, problem.omega_sq * unit ** 2)
    np.testing.assert_array_equal(p.radii, problem.radii * unit)
    assert np.all(np.abs(np.log2(p.radii)) < 10)  # frequencies of order one in the unit
    sol = MixtureSolution(theta=np.ones((2, 6)), weights=np.full(2, 0.5), residual=0.1, restart=0, n_iter=1)
    back = p.to_data_units(sol)
    np.testing.assert_array_equal(back.theta[:, :3], unit)  # means times the unit
    np.testing.assert_array_equal(back.theta[:, 3:], unit ** 2)  # variances times its square
    assert back.residual == sol.residual and problem.to_data_units(sol) is sol
    for bad in (0.0, -2.0, float("inf"), float("nan"), True, "2"):
        with pytest.raises(ValueError, match="unit"):
            problem.in_units(bad)
    with pytest.raises(ValueError, match="data's frame"):
        p.in_units(2.0)


def test_decoding_problem_in_a_frame_is_the_same_problem():
    from pysketch.decoders.problem import MixtureSolution

    """A frame (origin c, any unit u): the atom at (x - c) / u has the problem's atom at x
    times exp(-i Omega^T c), which the target carries: residuals and correlations of atoms
    are the same numbers (to rounding) in either frame."""
    from pysketch.decoders import DecodingProblem

    fm = make_feature_map(3, 40, sigma=3.0, random_state=4)
    problem = DecodingProblem.from_sketch(fm.sketch(X0 + 1000.0))
    c, u = np.array([1003.0, 1002.5, 999.0]), 9.3
    p = problem.in_units(u, c)
    theta = 1000.0 + np.random.default_rng(0).standard_normal((4, 3)) * 3
    t = (theta - c) / u

    def residual(prob, th):
        P = prob.apply(th)
        return prob.z - np.exp(1j * P).mean(axis=0)

    np.testing.assert_allclose(residual(p, t), residual(problem, theta) * np.exp(-1j * problem.apply(c[None])[0]),
                               rtol=0, atol=1e-12)
    assert abs(np.linalg.norm(residual(p, t)) - np.linalg.norm(residual(problem, theta))) < 1e-12
    np.testing.assert_allclose(p.radii, problem.radii * u, rtol=1e-15)
    sol = MixtureSolution(theta=np.column_stack([t, np.ones(4)]), weights=np.full(4, 0.25), residual=0.1, restart=0,
                          n_iter=1)
    back = p.to_data_units(sol)
    np.testing.assert_allclose(back.theta[:, :3], theta, rtol=1e-14)
    np.testing.assert_allclose(back.theta[:, 3], u * u, rtol=1e-15)
    for bad in (np.ones(2), np.array([0.0, np.nan, 1.0])):
        with pytest.raises(ValueError, match="origin"):
            problem.in_units(2.0, bad)


def _map_pair(kind_kw, s, m=60, seed=5):
    """The same map at scale 1 and at scale s (frequencies divided by s)."""
    return (make_feature_map(3, m, random_state=seed, dtype=np.float64, **kind_kw(1.0)),
            make_feature_map(3, m, random_state=seed, dtype=np.float64, **kind_kw(s)))


def _law(name, sigma):
    from pysketch.frequencies import make_law

    return make_law(name, sigma)


@pytest.mark.parametrize("s", [2.0 ** -500, 1e-150, 1e-30, 1e30, 1e150, 2.0 ** 500])
@pytest.mark.parametrize("decoder", ["clompr", "cl_amp", "coreset"])
def test_kmeans_fit_sketch_at_scale_s_is_s_times_the_fit_at_scale_one(s, decoder):
    sigma = 2.0  # a public kernel scale and box: the same sketch (to rounding) at every scale
    f1, fs = _map_pair(lambda t: dict(law=_law("log_uniform" if decoder == "coreset" else "gaussian", sigma * t)),
                       s, m=90)
    box = (-5.0, 12.0)

    def fit(fm, t):
        km = CompressiveKMeans(3, decoder=decoder, random_state=0)
        return km.fit_sketch(fm.sketch(X0 * t), (box[0] * t, box[1] * t))

    ref, got = fit(f1, 1.0), fit(fs, s)
    assert got.data_unit_ != 1.0 and ref.data_unit_ == 1.0
    # the decoder works in the frame of the box (centre, half-width): the same problem at
    # every scale, to the rounding of X0 * s (bit for bit at powers of two). CL-OMPR and
    # CL-AMP carry that rounding through (measured: 4e-15); the coreset decoder's
    # over-complete mixture is not identifiable, and its greedy steps and the k-means of
    # its draws turn the rounding into up to 0.04 on the centres (measured on AVX2 with
    # every OpenBLAS core type from Prescott to Zen; in the data's own units, where the
    # decoder saw the problem at 1/64 to 1/16 of the scale-1 one, it was 0.3)
    exact = s in (2.0 ** -500, 2.0 ** 500)
    atol = 0.0 if exact else 0.1 if decoder == "coreset" else 1e-9
    np.testing.assert_allclose(_matched(got.cluster_centers_, s), _matched(ref.cluster_centers_, 1.0), rtol=0,
                               atol=atol)
    np.testing.assert_allclose(np.sort(got.weights_), np.sort(ref.weights_), rtol=0,
                               atol=0.0 if exact else 0.01 if decoder == "coreset" else 1e-12)
    assert np.isfinite(got.cluster_centers_).all() and np.isfinite(got.residual_)


@pytest.mark.parametrize("s", [1e-150, 1e150])
def test_gmm_fit_sketch_scales_means_and_covariances(s, at_one):
    f1, fs = _map_pair(lambda t: dict(law=_law("adapted_radius", 2.0 * t)), s, m=90)
    ref = CompressiveGaussianMixture(3, random_state=0).fit_sketch(f1.sketch(X0), (-5.0, 12.0))
    got = CompressiveGaussianMixture(3, random_state=0).fit_sketch(fs.sketch(X0 * s), (-5.0 * s, 12.0 * s))
    order = [int(np.argmin(((got.means_ / s - m) ** 2).sum(axis=1))) for m in ref.means_]
    np.testing.assert_allclose(got.means_[order] / s, ref.means_, rtol=0, atol=0.1)
    np.testing.assert_allclose(got.covariances_[order] / (s * s), ref.covariances_, rtol=0.15)


@pytest.mark.parametrize("s", [1e-150, 1e-30, 1e30, 1e150])
def test_pca_fit_sketch_at_scale_s(s, at_one):
    from pysketch.frequencies import OrthonormalBasesLaw

    mean = X0.mean(axis=0)
    f1, fs = _map_pair(lambda t: dict(kind="quadratic", law=OrthonormalBasesLaw(), centre=mean * t), s, m=30)
    ref = CompressivePCA(2, random_state=0).fit_sketch(f1.sketch(X0))
    got = CompressivePCA(2, random_state=0).fit_sketch(fs.sketch(X0 * s))
    np.testing.assert_allclose(got.components_, ref.components_, rtol=0, atol=1e-6)
    np.testing.assert_allclose(got.explained_variance_ / (s * s), ref.explained_variance_, rtol=1e-6)
    np.testing.assert_allclose(got.total_variance_ / (s * s), ref.total_variance_, rtol=1e-9)


def _partial(s):
    km = CompressiveKMeans(3, kernel_scale=3.0 * s, random_state=0, dtype="float64")
    for part in np.array_split(np.random.default_rng(7).permutation(X0), 3):
        km.partial_fit(part * s)
    return km


@pytest.mark.parametrize("s", [1e-150, 1e150])
def test_partial_fit_at_scale_s(s, at_one):
    # partial_fit reads the sketch alone (decoder='auto': the over-complete decoder): at
    # scale s it finds the centres it finds at scale 1, and those are near the fit's
    km, ref = _partial(s), _partial(1.0)
    assert km.data_unit_ != 1.0 and km.decoder_ == ref.decoder_ == "coreset"
    np.testing.assert_allclose(_matched(km.cluster_centers_, s), _matched(ref.cluster_centers_, 1.0), rtol=0,
                               atol=0.05)
    np.testing.assert_allclose(_matched(ref.cluster_centers_, 1.0), at_one["kmeans"], rtol=0, atol=0.3)


def test_a_memmap_at_scale_1e6_is_not_copied(tmp_path):
    import tracemalloc

    n, d = 250_000, 32  # 64 MB of float64 records
    rng = np.random.default_rng(3)
    X = np.lib.format.open_memmap(tmp_path / "x.npy", mode="w+", dtype=np.float64, shape=(n, d))
    centres = 6.0 * rng.standard_normal((3, d))
    X[:] = centres[rng.integers(0, 3, n)] + rng.standard_normal((n, d))
    X *= 1e6
    X.flush()
    del X
    X = np.load(tmp_path / "x.npy", mmap_mode="r")
    km = CompressiveKMeans(3, sketch_size=200, random_state=0, batch_size=4096)
    tracemalloc.start()
    try:
        km.fit(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert km.data_unit_ > 2.0 ** 20  # decoded in units of the data's box
    # a copy of X (the former rescaling) alone is 1.0x; what the fit allocates is measured
    # 0.25x: labels_ (0.03x), the distances to the centres (0.09x), their 8 MB chunks (0.13x)
    assert peak < 0.8 * X.nbytes, peak / X.nbytes
    c = km.cluster_centers_ / 1e6
    assert max(np.min(np.linalg.norm(c - t, axis=1)) for t in centres) < 1.0


@pytest.mark.parametrize("s", [1e-150, 1e150])
def test_float32_sketches_refuse_data_beyond_float32_naming_the_scale(s):
    with pytest.raises(ValueError, match=r"the data's scale \(kernel scale .*\) is beyond the range of float32 "
                                         r"sketches .* dtype='float64'"):
        CompressiveKMeans(3, random_state=0).fit(X0 * s)
    with pytest.raises(ValueError, match="beyond the range of float32"):
        CompressiveKMeans(3, kernel_scale=s, random_state=0).fit(X0 * s)


def test_pca_refuses_squares_beyond_float64_naming_the_magnitude():
    # magnitude 2^500: within the range, but n ||x||^2 overflows the sketch's float64 sums
    X = np.repeat(X0, 200, axis=0) * 2.0 ** 505
    with pytest.raises(ValueError, match=r"magnitude of .* (outside the supported range|overflow)"):
        CompressivePCA(2, centre=0.0, random_state=0).fit(X)


# ------------------------------------------------------------------ the other entry points
#
# Each at every scale: ("works", p) -> s^p times the result at scale 1 within rtol; or a
# ValueError about the data's magnitude. The supported ranges differ by what is squared or
# divided: models on the unit box (M2M, rfm) only divide by the box's widths (>= 9.3e-302,
# pysketch.kernel_scale.check_box_width); Fourier maps take 1/sigma^2 (sigma within
# 1.5e-154..6.7e153); distance releases record the noise's fourth moment (noise scale within
# 2^+-250).

ALL = [5e-324 * 3, 1e-310, 1e-300, 1e-150, 1e-60, 1e-30, 1e30, 1e60, 1e150, 1e300]
SUBNORMAL = ALL[:2]
RNG = np.random.default_rng(11)
XR = RNG.uniform(0, 1, (200, 2))
YR = np.sin(3 * XR[:, 0]) + XR[:, 1] ** 2
YC = (XR[:, 0] + XR[:, 1] > 1).astype(int)
XD = RNG.standard_normal((6, 50))
ANY_MAGNITUDE = r"magnitude of .* (is )?outside the supported range|sigma=.* is out of range.*data's scale"


def _m2m_lin(s):
    from pysketch.m2m import M2MLinearRegression

    return M2MLinearRegression(bounds=([0, 0], [s, s]), y_bounds=(-1, 3), n_synthetic=5000,
                               random_state=0).fit(XR * s, YR).predict(XR * s)


def _m2m_lin_y(s):
    from pysketch.m2m import M2MLinearRegression

    return M2MLinearRegression(bounds=([0, 0], [1, 1]), y_bounds=(-s, 3 * s), n_synthetic=5000,
                               random_state=0).fit(XR, YR * s).predict(XR)


def _m2m_log(s):  # the private fits draw OS noise: clean fits compare exactly
    from pysketch.m2m import M2MLogisticRegression

    return M2MLogisticRegression(bounds=([0, 0], [s, s]), n_synthetic=5000,
                                 random_state=0).fit(XR * s, YC).predict_proba(XR * s)


def _private_rf(s, **kw):
    from pysketch.rfm import PrivateRFRegressor

    return PrivateRFRegressor(5.0, bounds=([0, 0], [s, s]), target_bounds=(-1, 3), random_state=0, insecure_seed=0,
                              **kw).fit(XR * s, YR).predict(XR * s)


def _private_rf_y(s):
    from pysketch.rfm import PrivateRFRegressor

    return PrivateRFRegressor(5.0, bounds=([0, 0], [1, 1]), target_bounds=(-s, 3 * s), random_state=0,
                              insecure_seed=0).fit(XR, YR * s).predict(XR)


def _dprfm(s):
    from pysketch.rfm import DPRFMRegressor

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "check_conditions", RuntimeWarning)  # the paper's conditions at n = 200
        return DPRFMRegressor(1.0, bounds=([0, 0], [s, s]), target_bounds=(-s, 3 * s), n_max=250, random_state=0,
                              insecure_seed=0).fit(XR * s, YR * s).predict(XR * s)


def _random_features(s):
    from pysketch.rfm import RandomFeatures

    return RandomFeatures(2, 20, length_scale=0.3 * s, random_state=0).transform(XR * s)


def _feature_map_sketch(s):
    z = make_feature_map(2, 40, sigma=0.3 * s, random_state=0, dtype=np.float64).sketch(XR * s).sum
    return np.concatenate([z.real, z.imag])


def _op():
    from pysketch.operators import SparseJLOperator

    return SparseJLOperator.draw(50, 32, 4, random_state=1)


def _release(s):  # epsilon 1e6: the noise (1e-6 s) is far below the vectors (s)
    from pysketch.distances import release

    return release(_op(), XD * s, 1e6, contribution=10.0 * s, insecure_seed=3).values


def _sq_distance(s):
    from pysketch.distances import release, sq_distance

    r = release(_op(), XD * s, 1e6, contribution=10.0 * s, insecure_seed=3)
    return [sq_distance(r, r, 0, j) for j in range(1, 6)]


def _pairwise(s):
    from pysketch.distances import pairwise_sq_distances, release

    return pairwise_sq_distances(release(_op(), XD * s, 1e6, contribution=10.0 * s, insecure_seed=3))


def _jl_transformer(s):
    from pysketch.distances import PrivateJLTransformer

    return PrivateJLTransformer(32, sparsity=4, epsilon=1e6, contribution=10.0 * s, random_state=0).fit(
        XD * s).release(XD * s).values


def _between(lo, hi):
    return lambda s: lo <= s <= hi


ENTRY_POINTS = {  # name: (function, power p, rtol, the scales that work)
    "M2MLinearRegression": (_m2m_lin, 0, 1e-9, _between(1e-300, 1e300)),
    "M2MLinearRegression_y": (_m2m_lin_y, 1, 1e-9, _between(1e-300, 1e300)),
    "M2MLogisticRegression": (_m2m_log, 0, 1e-6, _between(1e-300, 1e300)),
    "PrivateRFRegressor": (_private_rf, 0, 1e-9, _between(1e-300, 1e300)),
    "PrivateRFRegressor_box": (lambda s: _private_rf(s, scaling="box"), 0, 1e-9, _between(1e-300, 1e300)),
    "PrivateRFRegressor_y": (_private_rf_y, 1, 1e-9, _between(1e-300, 1e300)),
    "DPRFMRegressor": (_dprfm, 1, 1e-9, _between(1e-300, 1e300)),
    "RandomFeatures": (_random_features, 0, 1e-12, _between(1e-150, 1e150)),  # length scale in 2^+-504
    "FeatureMap.sketch": (_feature_map_sketch, 0, 1e-12, _between(1e-150, 1e150)),
    "distances.release": (_release, 1, 1e-4, _between(1e-60, 1e60)),
    "sq_distance": (_sq_distance, 2, 1e-4, _between(1e-60, 1e60)),
    "pairwise_sq_distances": (_pairwise, 2, 1e-4, _between(1e-60, 1e60)),
    "PrivateJLTransformer": (_jl_transformer, 1, 1e-4, _between(1e-60, 1e60)),
}


@pytest.fixture(scope="module")
def entry_at_one():
    return {name: np.asarray(f(1.0), dtype=np.float64) for name, (f, *_) in ENTRY_POINTS.items()}


@pytest.mark.parametrize("s", ALL)
@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_entry_point_works_at_scale_s_or_refuses_naming_the_magnitude(name, s, entry_at_one):
    f, p, rtol, works = ENTRY_POINTS[name]
    if not works(s):
        assert s in SUBNORMAL or s <= 1e-150 or s >= 1e150  # every entry point works from 1e-60 to 1e60
        with pytest.raises(ValueError, match=ANY_MAGNITUDE):
            f(s)
        return
    got = np.asarray(f(s), dtype=np.float64)
    ref = entry_at_one[name]
    assert np.isfinite(got).all()
    # s^p computed in two halves: s^2 itself may overflow
    scaled = got / s ** (p / 2) / s ** (p / 2) if p else got
    np.testing.assert_allclose(scaled, ref, rtol=rtol, atol=rtol * float(np.max(np.abs(ref))))
