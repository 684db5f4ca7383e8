"""Compressive PCA: the subspace problem and the Burer-Monteiro decoder (objective against a
dense reference, gradient against finite differences), the operators' column ranges, the
estimator (quality against exact PCA, scikit-learn's checks, privacy plumbing, bad input)."""

import warnings

import numpy as np
import pytest

from pysketch import CompressivePCA, SketchAccumulator, make_feature_map
from pysketch.decoders import DECODERS, BurerMonteiro, DecodingProblem, SubspaceProblem, SubspaceTask
from pysketch.frequencies import GaussianLaw, OrthonormalBasesLaw
from pysketch.operators import make_operator
from pysketch.privacy import BudgetAccountant, PrivacyLeakWarning, make_private
from pysketch.privacy.moments import private_ball_mean

try:
    from sklearn.utils.estimator_checks import parametrize_with_checks
except ImportError:
    parametrize_with_checks = None


def low_rank(n, d, k, nu=0.05, seed=0):
    """The thesis' Fig. 9.7 model, rows scaled into the unit ball."""
    rng = np.random.default_rng(seed)
    B = rng.standard_normal((d, k))
    Y = rng.standard_normal((n, k)) @ B.T + nu * k * rng.standard_normal((n, d))
    return Y / np.linalg.norm(Y, axis=1).max()


def captured(components, X, centre, k):
    """tr(U^T C U) / sum of the top k eigenvalues of C (second moments about `centre`)."""
    Z = X - centre
    C = Z.T @ Z / len(Z)
    lam = np.linalg.eigvalsh(C)[::-1]
    return float(np.trace(components @ C @ components.T) / lam[:k].sum())


def quadratic_sketch(X, m, operator="dense", law=None, seed=0, **options):
    fm = make_feature_map(X.shape[1], m, "quadratic", operator=operator, law=law or OrthonormalBasesLaw(),
                          random_state=seed, **options)
    return SketchAccumulator(fm).update(X).sketch()


# ------------------------------------------------------------------------ operators' column ranges


@pytest.mark.parametrize("kind", ["dense", "r3", "gr2", "fastfood"])
@pytest.mark.parametrize("d, m, width", [(32, 96, 40), (20, 140, 40), (20, 130, 1), (8, 24, 1000)])
def test_column_ranges_cover_omega_in_order(kind, d, m, width):
    law = OrthonormalBasesLaw() if kind in ("dense", "r3") and m % d == 0 else GaussianLaw(1.0)
    op = make_operator(d, m, kind=kind, law=law, random_state=d + m)
    omega = op.to_dense()
    ranges = op.column_ranges(width)
    starts = [s for s, _ in ranges]
    assert starts[0] == 0 and sum(o.m for _, o in ranges) == m
    assert all(s + o.m == t for (s, o), t in zip(ranges, starts[1:] + [m]))
    block = op.block_size or 1
    assert all(o.m <= max(width, block) + block - 1 for _, o in ranges)
    for s, o in ranges:
        np.testing.assert_array_equal(o.to_dense(), omega[:, s : s + o.m])
    if m <= width:
        assert ranges == [(0, op)]
    with pytest.raises(ValueError, match="max_columns"):
        op.column_ranges(0)


# ------------------------------------------------------------------------ the subspace problem


@pytest.fixture(scope="module")
def small():
    X = low_rank(3000, 24, 3, seed=1)
    return X, quadratic_sketch(X, 24 * 30, operator="dense")


def test_problem_target_weights_and_trace(small):
    X, sk = small
    pb = SubspaceProblem.from_sketch(sk)
    omega = sk.feature_map.operator.to_dense()
    C = X.T @ X / len(X)
    # z_j = omega_j^T C omega_j (the mean sketch of quadratic features)
    np.testing.assert_allclose(pb.z, np.einsum("ij,ik,kj->j", omega, C, omega), rtol=1e-10)
    np.testing.assert_allclose(pb.w, np.sum(omega ** 2, axis=0), rtol=1e-12)
    # a union of orthonormal bases: Omega Omega^T = (m/d) I, so the trace is exact
    assert pb.total_variance() == pytest.approx(np.trace(C), rel=1e-10)
    assert not pb.private and pb.count == 3000
    np.testing.assert_array_equal(pb.centre, np.zeros(24))


def test_problem_refuses_fourier_sketches_and_mixture_problems_refuse_quadratic(small):
    X, sk = small
    fourier = SketchAccumulator(make_feature_map(24, 50, "complex", random_state=0)).update(X).sketch()
    with pytest.raises(ValueError, match="quadratic"):
        SubspaceProblem.from_sketch(fourier)
    with pytest.raises(ValueError, match="Fourier"):
        DecodingProblem.from_sketch(sk)


@pytest.mark.parametrize("operator, law", [("dense", OrthonormalBasesLaw()), ("dense", GaussianLaw(1.0)),
                                           ("r3", OrthonormalBasesLaw()), ("fastfood", GaussianLaw(1.0))])
def test_objective_equals_the_dense_formula_in_ranges(operator, law, monkeypatch):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((50, 20))
    sk = quadratic_sketch(X, 20 * 7, operator=operator, law=law)
    pb = SubspaceProblem.from_sketch(sk)
    omega = sk.feature_map.operator.to_dense()
    U = rng.standard_normal((20, 4))
    s = 0.3
    e = np.einsum("ij,ik,kj->j", omega, U @ U.T + s * np.eye(20), omega) - pb.z
    scale = pb.z @ pb.z
    F, gU, gs = pb.objective(U, s)
    assert F == pytest.approx(e @ e / scale, rel=1e-10)
    np.testing.assert_allclose(gU, 4 * omega @ (e[:, None] * (omega.T @ U)) / scale, rtol=1e-9, atol=1e-12)
    assert gs == pytest.approx(2 * e @ np.sum(omega ** 2, axis=0) / scale, rel=1e-10)
    # the same in ranges of 8 frequencies (or one block of the structured operator)
    monkeypatch.setattr("pysketch.decoders.subspace._CHUNK_FLOATS", 32)
    pb2 = SubspaceProblem.from_sketch(sk)
    assert len(pb2.ranges(4)) > 1
    F2, gU2, gs2 = pb2.objective(U, s)
    assert F2 == pytest.approx(F, rel=1e-12)
    np.testing.assert_allclose(gU2, gU, rtol=1e-10, atol=1e-14)


def test_gradient_matches_finite_differences(small):
    _, sk = small
    pb = SubspaceProblem.from_sketch(sk)
    rng = np.random.default_rng(3)
    U = 0.1 * rng.standard_normal((24, 3))
    s = 1e-3
    F, gU, gs = pb.objective(U, s)
    h = 1e-6
    for _ in range(12):
        i, j = rng.integers(24), rng.integers(3)
        Up, Um = U.copy(), U.copy()
        Up[i, j] += h
        Um[i, j] -= h
        fd = (pb.objective(Up, s)[0] - pb.objective(Um, s)[0]) / (2 * h)
        assert gU[i, j] == pytest.approx(fd, rel=1e-5, abs=1e-9)
    fd = (pb.objective(U, s + h)[0] - pb.objective(U, s - h)[0]) / (2 * h)
    assert gs == pytest.approx(fd, rel=1e-5)
    # a random direction: the directional derivative
    V = rng.standard_normal(U.shape)
    fd = (pb.objective(U + h * V, s)[0] - pb.objective(U - h * V, s)[0]) / (2 * h)
    assert np.sum(gU * V) == pytest.approx(fd, rel=1e-6)


# ------------------------------------------------------------------------ the decoder


def test_decoder_is_registered_for_the_subspace_task():
    cls = DECODERS.get("burer_monteiro")
    assert cls is BurerMonteiro and cls.task == "subspace"
    cls.check(task="subspace", private=True)
    with pytest.raises(ValueError, match="subspace"):
        cls.check(task="mixture")
    with pytest.raises(ValueError, match="mixture"):
        DECODERS.get("clompr").check(task="subspace")


@pytest.mark.parametrize("operator", ["dense", "r3"])
def test_decoder_recovers_a_low_rank_subspace_and_its_variances(operator):
    d, k = 64, 4
    X = low_rank(4000, d, k, seed=5)
    sk = quadratic_sketch(X, 10 * k * d, operator=operator)
    sol = BurerMonteiro(n_init=2, random_state=0).decode(SubspaceTask(SubspaceProblem.from_sketch(sk), k))
    C = X.T @ X / len(X)
    lam, V = np.linalg.eigh(C)
    lam, V = lam[::-1], V[:, ::-1]
    np.testing.assert_allclose(sol.components @ sol.components.T, np.eye(k), atol=1e-10)
    assert captured(sol.components, X, 0, k) >= 0.999
    # the variance along each component: the eigenvalues of C, to 1% of the largest
    np.testing.assert_allclose(sol.variances, lam[:k], atol=0.01 * lam[0])
    assert np.all(np.diff(sol.variances) <= 0)
    assert sol.total_variance == pytest.approx(np.trace(C), rel=1e-10)
    # the floor: the average of the eigenvalues past k (an isotropic tail), within 20%
    assert sol.floor == pytest.approx(lam[k:].mean(), rel=0.2)
    assert sol.residual < 0.05


def test_decoder_is_seeded_and_keeps_the_best_start(small):
    _, sk = small
    pb = SubspaceProblem.from_sketch(sk)
    a = BurerMonteiro(n_init=3, random_state=7).decode(SubspaceTask(pb, 3))
    b = BurerMonteiro(n_init=3, random_state=7).decode(SubspaceTask(pb, 3))
    np.testing.assert_array_equal(a.components, b.components)
    singles = [BurerMonteiro(n_init=1, random_state=np.random.default_rng(7)).decode(SubspaceTask(pb, 3)).residual]
    assert a.residual <= min(singles) + 1e-12
    with pytest.raises(ValueError, match="n_components"):
        BurerMonteiro().decode(SubspaceTask(pb, 25))
    with pytest.raises(TypeError, match="SubspaceProblem"):
        BurerMonteiro().decode(SubspaceTask(sk, 3))


def test_floor_helps_when_the_tail_is_heavy():
    # a spectrum with a heavy isotropic tail (nu = 0.5): without the floor the rank-k fit
    # bends toward the tail (thesis (9.12) as printed); with it the subspace is recovered
    d, k = 48, 3
    X = low_rank(6000, d, k, nu=0.5, seed=2)
    pb = SubspaceProblem.from_sketch(quadratic_sketch(X, 4 * k * d))
    with_floor = captured(BurerMonteiro(random_state=0).decode(SubspaceTask(pb, k)).components, X, 0, k)
    without = captured(BurerMonteiro(floor=False, random_state=0).decode(SubspaceTask(pb, k)).components, X, 0, k)
    assert with_floor >= 0.99 and with_floor > without + 0.01, (with_floor, without)


# ------------------------------------------------------------------------ the estimator

if parametrize_with_checks is not None:

    @parametrize_with_checks([CompressivePCA(n_components=2, n_init=1)])
    def test_scikit_learn_estimator_checks(estimator, check):
        check(estimator)


def test_estimator_matches_exact_pca_on_digits_like_data():
    sklearn = pytest.importorskip("sklearn")
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA

    X = load_digits().data
    est = CompressivePCA(10, method="sketch", random_state=0).fit(X)
    ref = PCA(10).fit(X)
    assert est.components_.shape == (10, 64) and est.n_components_ == 10 and est.method_ == "sketch"
    np.testing.assert_allclose(est.mean_, X.mean(axis=0))
    assert captured(est.components_, X, X.mean(axis=0), 10) >= 0.99
    n = len(X)
    # sklearn divides by n - 1
    np.testing.assert_allclose(est.explained_variance_[:3], ref.explained_variance_[:3] * (n - 1) / n, rtol=0.02)
    assert est.total_variance_ == pytest.approx(np.trace(np.cov(X.T, bias=True)), rel=1e-9)
    assert est.explained_variance_ratio_.sum() == pytest.approx(ref.explained_variance_ratio_.sum(), abs=0.01)
    Z = est.transform(X)
    np.testing.assert_allclose(Z, (X - est.mean_) @ est.components_.T)
    np.testing.assert_allclose(est.inverse_transform(Z), Z @ est.components_ + est.mean_)
    assert est.sketch_.feature_map.operator.kind == "r3" and est.sketch_size_ % 64 == 0
    assert est.n_samples_ == n


def test_sketch_size_is_rounded_to_whole_bases_and_the_operator_chosen():
    X = np.random.default_rng(0).standard_normal((200, 20))
    est = CompressivePCA(2, sketch_size=50, n_init=1, random_state=0).fit(X)
    assert est.sketch_.feature_map.operator.kind == "dense" and est.sketch_size_ == 60
    est = CompressivePCA(2, sketch_size=50, operator="r3", n_init=1, random_state=0).fit(X)
    assert est.sketch_size_ == 64  # d_p = 32
    assert CompressivePCA(2, method="sketch", n_init=1, random_state=0).fit(X).sketch_size_ == 10 * 2 * 20
    # 'auto' without privacy: the whole matrix (exact) where it fits the memory budget
    assert CompressivePCA(2, n_init=1, random_state=0).fit(X).sketch_size_ == 20 * 21 // 2


def test_fit_sketch_and_streams_give_the_fit_of_the_array():
    X = low_rank(2000, 32, 3, seed=4) + 0.2
    est = CompressivePCA(3, centre=0.2, data_norm=2.0, random_state=1).fit(X)
    again = CompressivePCA(3, random_state=1).fit_sketch(est.sketch_)
    # other starts (the map took the first draws of fit's generator): the same subspace to
    # the decoder's tolerance
    np.testing.assert_allclose(again.components_.T @ again.components_, est.components_.T @ est.components_,
                               atol=1e-5)
    np.testing.assert_allclose(again.mean_, np.full(32, 0.2))
    stream = CompressivePCA(3, centre=0.2, data_norm=2.0, random_state=1).fit(iter(np.array_split(X, 7)))
    np.testing.assert_allclose(stream.components_, est.components_, atol=1e-8)
    with pytest.raises(ValueError, match="centre"):
        CompressivePCA(3, method="sketch").fit(iter([X]))
    # a covariance fit of a stream reads the mean from its own sketch (an offset
    # coordinate): the exact fit's mean and subspace, up to the rounding of C - mu mu^T
    exact = CompressivePCA(3, method="covariance").fit(X)
    self_centred = CompressivePCA(3).fit(iter(np.array_split(X, 7)))
    assert self_centred.method_ == "covariance" and self_centred.sketch_.feature_map.offset == 1.0
    np.testing.assert_allclose(self_centred.mean_, X.mean(axis=0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(self_centred.components_, exact.components_, atol=1e-9)
    np.testing.assert_allclose(self_centred.explained_variance_, exact.explained_variance_, rtol=1e-10)
    with pytest.raises(ValueError, match="empty"):
        CompressivePCA(3, centre=0.0).fit(iter([]))


def test_private_fit_charges_the_budget_and_records_the_release():
    X = low_rank(5000, 32, 2, seed=6)
    acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
    est = CompressivePCA(2, epsilon=1.0, data_norm=1.0, accountant=acc, random_state=0).fit(X)
    rec = est.sketch_.privacy
    assert rec.epsilon == 1.0 and rec.mechanism == "laplace" and rec.epsilon_pilot == pytest.approx(0.2)
    assert rec.epsilon_sum + rec.epsilon_count == pytest.approx(0.8)
    # L1 sensitivity of a union of orthonormal bases at radius R: R^2 m / d exactly (plus
    # rounding), with R = 1 + ||private mean|| about the private mean
    R = 1.0 + np.linalg.norm(est.mean_)
    assert est.sketch_.feature_map.data_norm == pytest.approx(R)
    assert rec.sensitivity_sum == pytest.approx(R * R * est.sketch_size_ / 32, rel=1e-9)
    assert acc.spent == pytest.approx((1.0, 0.0))
    assert est.sketch_size_ == 2 * 2 * 32
    # with a public centre: no private mean; Gaussian with delta
    est = CompressivePCA(2, epsilon=1.0, delta=1e-6, data_norm=1.0, centre=0.0, accountant=acc,
                         random_state=0).fit(X)
    assert est.sketch_.privacy.mechanism == "gaussian" and est.sketch_.privacy.epsilon_pilot is None
    np.testing.assert_array_equal(est.mean_, np.zeros(32))
    assert acc.spent == pytest.approx((2.0, 1e-6))


def test_private_fit_without_data_norm_warns_and_outliers_are_counted():
    X = low_rank(500, 16, 2, seed=6)
    with pytest.warns(PrivacyLeakWarning, match="data_norm"):
        CompressivePCA(2, epsilon=1.0, centre=0.0, n_init=1, random_state=0).fit(X)
    X2 = X.copy()
    X2[:3] *= 5
    with pytest.warns(RuntimeWarning, match="3 record"):
        est = CompressivePCA(2, epsilon=1.0, data_norm=1.0, centre=0.0, n_init=1, random_state=0).fit(X2)
    assert abs(est.n_samples_ - 500) < 200  # nothing dropped (the count is noisy)


def test_private_ball_mean_noise_has_the_stated_scale():
    # Laplace on the sum at L1 = R sqrt(d) (add/remove), 2 R sqrt(d) (replace); the mean's
    # variance 2 b^2 / n^2. 400 draws: the sample variance is within 25% (chi-square-like,
    # relative sd about sqrt(5/400) for Laplace ~ 0.11, so 25% is > 2 sd).
    X = np.full((10, 4), 0.25)
    means = np.array([private_ball_mean(X, 1.0, 10, 2.0, insecure_seed=s)[0] for s in range(400)])
    b = 1.0 * 2.0 / 2.0  # R sqrt(d) / epsilon
    assert np.var(means - 0.25) == pytest.approx(2 * b * b / 100, rel=0.25)
    _, var = private_ball_mean(X, 1.0, 10, 2.0, neighbouring="replace", insecure_seed=0)
    assert var == pytest.approx(2 * (2 * b) ** 2 / 100, rel=1e-9)
    with pytest.raises(ValueError, match="outside the ball"):
        private_ball_mean(X * 4, 1.0, 10, 1.0)


@pytest.mark.parametrize("kwargs, match", [
    (dict(n_components=0), "n_components"),
    (dict(operator="gr2"), "operator"),
    (dict(epsilon=-1.0), "epsilon"),
    (dict(epsilon=1.0, delta=1.5), "delta"),
    (dict(data_norm=0.0), "data_norm"),
    (dict(mean_share=1.0), "mean_share"),
    (dict(neighbouring="swap"), "neighbouring"),
    (dict(centre=np.zeros(3)), "centre"),
    (dict(n_components=9), "n_components"),
    (dict(dtype=np.int32), "dtype"),
])
def test_bad_arguments_are_named(kwargs, match):
    X = np.random.default_rng(0).standard_normal((30, 8))
    with pytest.raises(ValueError, match=match):
        CompressivePCA(**kwargs).fit(X)


def test_transform_checks_and_not_fitted():
    X = np.random.default_rng(0).standard_normal((100, 6))
    est = CompressivePCA(2, n_init=1, random_state=0)
    with pytest.raises(Exception, match="not fitted"):
        est.transform(X)
    est.fit(X)
    with pytest.raises(ValueError, match="features"):
        est.transform(X[:, :5])
    with pytest.raises(ValueError, match="components"):
        est.inverse_transform(np.zeros((3, 4)))
    with pytest.raises(TypeError, match="Sketch"):
        est.fit_sketch(X)


def test_float32_sketches_decode_in_their_own_precision_to_the_same_subspace():
    # the problem uses the map's operator as it is (no float64 copy); products in float32,
    # residuals in float64: the subspace agrees with the float64 decode to about 1e-5
    X = low_rank(3000, 64, 3, seed=8)
    P = {}
    for dt in (np.float32, np.float64):
        sk = quadratic_sketch(X, 10 * 3 * 64, operator="r3", dtype=dt)
        pb = SubspaceProblem.from_sketch(sk)
        assert pb.operator is sk.feature_map.operator
        U = BurerMonteiro(random_state=0).decode(SubspaceTask(pb, 3)).components
        P[dt] = U.T @ U
    assert np.abs(P[np.float32] - P[np.float64]).max() < 1e-4


def test_noisy_sketches_stop_at_the_noise_level():
    # Morozov's discrepancy principle: a private sketch's fit stops once the residual is
    # the noise's own (m - dof) sigma^2 / ||z||^2 (the level of the least-squares fit
    # itself), instead of creeping on into the noise.
    X = low_rank(20_000, 64, 4, nu=0.1, seed=9)
    sk = quadratic_sketch(X, 2 * 4 * 64, operator="r3", data_norm=1.0)
    # Whether the unstopped fit creeps below the level depends on the draw: with this sketch
    # it did for about half of the seeds (residual^2 / level 0.95-1.31 at the stop, over 16
    # seeds of the compiled and the Python samplers alike); the test takes the first such
    # draw and checks the stop there.
    dof = 64 * 4 - 6 + 1
    for seed in range(12):
        pb = SubspaceProblem.from_sketch(make_private(sk, 5.0, split=0.95, insecure_seed=seed))
        fstop = (pb.m - dof) * pb.noise_variance / (pb.z @ pb.z)
        full = BurerMonteiro(discrepancy=False, n_init=1, random_state=0).decode(SubspaceTask(pb, 4))
        if full.residual ** 2 < 0.9 * fstop:
            break
    else:
        pytest.fail("in 12 draws the unstopped fit never went below the noise level")
    stopped = BurerMonteiro(n_init=1, random_state=0).decode(SubspaceTask(pb, 4))
    assert 0.5 * fstop <= stopped.residual ** 2 <= fstop
    assert full.residual < stopped.residual and full.n_iter > stopped.n_iter + 10
    # the clean sketch is fitted to the end (far below that level)
    clean = BurerMonteiro(n_init=1, random_state=0).decode(SubspaceTask(SubspaceProblem.from_sketch(sk), 4))
    assert clean.residual ** 2 < 0.01 * fstop and clean.n_iter > stopped.n_iter


def test_decoder_and_private_mean_reject_bad_arguments(small):
    _, sk = small
    pb = SubspaceProblem.from_sketch(sk)
    for kwargs, err in [(dict(max_iter=0), ValueError), (dict(max_iter=2.5), TypeError), (dict(tol=-1.0), ValueError),
                        (dict(tol=float("nan")), ValueError)]:
        with pytest.raises(err, match=next(iter(kwargs))):
            BurerMonteiro(**kwargs)
    with pytest.raises(ValueError, match="n_init"):
        BurerMonteiro(n_init=0).decode(SubspaceTask(pb, 2))
    with pytest.raises(TypeError, match="n_components"):
        BurerMonteiro().decode(SubspaceTask(pb, 2.0))
    X = np.full((5, 3), 0.1)
    with pytest.raises(ValueError, match="NaN"):
        private_ball_mean(np.where(np.eye(5, 3) > 0, np.nan, X), 1.0, 5, 1.0)
    with pytest.raises(ValueError, match="radius"):
        private_ball_mean(X, True, 5, 1.0)
    with pytest.raises(ValueError, match="count"):
        private_ball_mean(X, 1.0, -1, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        private_ball_mean(X, 1.0, 5, float("inf"))
    with pytest.raises(ValueError, match="neighbouring"):
        private_ball_mean(X, 1.0, 5, 1.0, neighbouring="swap")
