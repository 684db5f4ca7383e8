"""The M2M core (pysketch.m2m.M2M, Domain): the ridge solve against a NumPy reference, the
weighted form against the explicit one, the lambda conventions, Theorem 1 by Monte Carlo,
[P] Table 1 on Random10 (and the literal 'mean' loss failing it: notes seed001 P1), the
vectorised queries against `estimate` of the same targets, and argument checks."""

import math

import numpy as np
import pytest

from pysketch.features import make_box_map
from pysketch.m2m import M2M, Domain
from pysketch.privacy import make_private


def random10(n=27_000, d=10, seed=0):
    return np.random.default_rng(seed).uniform(size=(n, d))


def mre(est, true):
    return float(np.mean(np.abs(est - true) / np.abs(true)))


# ---------------------------------------------------------------- Domain

def test_domain_draws_uniformly_in_the_box_and_on_the_discrete_values():
    dom = Domain([0, -2, 5], [1, 2, 9], discrete={2: [5, 7, 9]})
    X = dom.sample(60_000, random_state=1)
    assert X.shape == (60_000, 3) and dom.contains(X).all()
    # uniform: mean and variance of U[a, b] within 5 standard errors
    for j, (a, b) in enumerate([(0, 1), (-2, 2)]):
        se = (b - a) / math.sqrt(12 * 60_000)
        assert abs(X[:, j].mean() - (a + b) / 2) < 5 * se
    values, counts = np.unique(X[:, 2], return_counts=True)
    assert np.array_equal(values, [5, 7, 9])
    assert np.all(np.abs(counts / 60_000 - 1 / 3) < 5 * math.sqrt(2 / 9 / 60_000))
    assert np.array_equal(dom.sample(5, random_state=3), dom.sample(5, random_state=3))
    assert not dom.contains([[0.5, 0.0, 6.0]])[0] and not dom.contains([[1.5, 0.0, 5.0]])[0]


@pytest.mark.parametrize("args, match", [
    (([0, 0], [1]), "one length"),
    (([0, 1], [1, 1]), "upper must be > lower.*column 1"),
    (([0, 0], [1, np.inf]), "finite"),
])
def test_domain_rejects_bad_boxes(args, match):
    with pytest.raises(ValueError, match=match):
        Domain(*args)


def test_domain_rejects_bad_discrete_columns():
    with pytest.raises(ValueError, match="column 5"):
        Domain([0, 0], [1, 1], discrete={5: [0]})
    with pytest.raises(ValueError, match="must lie in"):
        Domain([0, 0], [1, 1], discrete={1: [0, 2]})
    with pytest.raises(TypeError, match="discrete must be a dict"):
        Domain([0, 0], [1, 1], discrete=[0, 1])


# ---------------------------------------------------------------- the solve

def _private_rff(seed=0, eps=1.0, n=5000, d=3, n_frequencies=20):
    dom = Domain.unit(d)
    fm = make_box_map("real", dom.lower, dom.upper, n_frequencies=n_frequencies, random_state=seed)
    X = np.random.default_rng(seed).uniform(size=(n, d)) ** 2  # not the domain's law
    return dom, fm, X, make_private(fm.sketch(X), eps, split=0.98, insecure_seed=seed)


@pytest.mark.parametrize("loss", ["sum", "mean"])
def test_ridge_solution_matches_a_numpy_reference(loss):
    dom, fm, X, sk = _private_rff()
    m2m = M2M(dom, n_synthetic=3000, loss=loss, random_state=4).fit(sk)
    P = fm.as_real(fm.transform(m2m.synthetic_))
    n_s = P.shape[0]
    sigma2 = sk.privacy.sum_noise_variance
    assert sigma2 == pytest.approx(2 * sk.privacy["noise_scale_sum"] ** 2)
    lam = sigma2 / sk.count  # eq. (5)
    assert m2m.lambda_ == pytest.approx(lam, rel=1e-12)
    F = np.column_stack([X[:0].sum() + m2m.synthetic_[:, 0], np.sin(3 * m2m.synthetic_[:, 1])])
    if loss == "sum":
        a = np.linalg.solve(P.T @ P + lam * np.eye(P.shape[1]), P.T @ F)
    else:
        a = np.linalg.solve(P.T @ P / n_s + lam * np.eye(P.shape[1]), P.T @ F / n_s)
    z = sk.sum / sk.count
    expected = z @ a
    np.testing.assert_allclose(m2m.coefficients(lambda Z: F), a, rtol=1e-8, atol=1e-10 * np.abs(a).max())
    np.testing.assert_allclose(m2m.estimate(lambda Z: F), expected, rtol=1e-9)


def test_weighted_form_equals_the_explicit_ridge_form_to_1e_10():
    dom, fm, X, sk = _private_rff(n_frequencies=100, d=10, n=27_000)
    m2m = M2M(dom, random_state=2).fit(sk)

    def targets(Z):
        return np.column_stack([Z, Z ** 2, (Z[:, :3] <= 0.5).all(axis=1)])

    weighted, explicit = m2m.estimate(targets), m2m.estimate_explicit(targets)
    assert np.max(np.abs(weighted - explicit) / np.abs(explicit)) < 1e-10


def test_the_mean_loss_is_the_sum_loss_with_lambda_times_n_s():
    dom, fm, X, sk = _private_rff()
    a = M2M(dom, n_synthetic=2000, loss="mean", regularization=0.01, random_state=1).fit(sk)
    b = M2M(dom, n_synthetic=2000, loss="sum", regularization=0.01 * 2000, random_state=1).fit(sk)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-9, atol=1e-15)


def test_lambda_conventions():
    dom, fm, X, sk = _private_rff()
    s2, n = sk.privacy.sum_noise_variance, sk.count
    assert M2M(dom, n_synthetic=500, regularization="theory").fit(sk).lambda_ == pytest.approx(s2 / n ** 2)
    assert M2M(dom, n_synthetic=500, regularization_scale=3.0).fit(sk).lambda_ == pytest.approx(3 * s2 / n)
    clean = fm.sketch(X)
    # no noise: lambda = 0, floored at 1e-9 in 'mean' units (1e-9 n_s in 'sum' units)
    assert M2M(dom, n_synthetic=500).fit(clean).lambda_ == pytest.approx(1e-9 * 500)
    assert M2M(dom, n_synthetic=500, loss="mean").fit(clean).lambda_ == pytest.approx(1e-9)


def test_theorem_1_holds_by_monte_carlo():
    # [P] Theorem 1: data i.i.d. from psi (the domain's uniform law), zeta = 0 (replace: the count is
    # public), lambda = sigma^2 / n^2 with the 'mean' loss: for any a,
    # E[(f_bar - <a, z>)^2] <= J(a) = E_psi[(f - <a, Phi>)^2] + lambda ||a||^2.
    d, n, eps = 2, 400, 2.0
    dom = Domain.unit(d)
    fm = make_box_map("real", dom.lower, dom.upper, n_frequencies=10, random_state=0)
    f = lambda Z: np.cos(2 * Z[:, 0]) + Z[:, 1] ** 2  # noqa: E731
    rng = np.random.default_rng(5)
    sk0 = make_private(fm.sketch(dom.sample(n, rng)), eps, neighbouring="replace", insecure_seed=1)
    m2m = M2M(dom, n_synthetic=20_000, loss="mean", regularization="theory", random_state=2).fit(sk0)
    a = m2m.coefficients(f)
    lam = m2m.lambda_
    Zt = dom.sample(400_000, rng)
    J = np.mean((f(Zt) - fm.as_real(fm.transform(Zt)) @ a) ** 2) + lam * a @ a
    errs = []
    for rep in range(400):
        X = dom.sample(n, rng)
        sk = make_private(fm.sketch(X), eps, neighbouring="replace", insecure_seed=100 + rep)
        errs.append((f(X).mean() - a @ (sk.sum / sk.count)) ** 2)
    errs = np.array(errs)
    # one-sided upper confidence bound on the MSE at ~4 standard errors
    upper = errs.mean() + 4 * errs.std(ddof=1) / math.sqrt(errs.size)
    assert errs.mean() <= J and upper < 1.5 * J
    # the bound is tight enough to catch a wrong noise variance: measured MSE 0.0030 against
    # J = 0.0036, of which lambda ||a||^2 is 0.0028 (J without it would be below the MSE)
    assert errs.mean() > 0.5 * J


# ---------------------------------------------------------------- [P] Table 1 on Random10

def _table1_rff(eps, loss, reps=3):
    errs, masses = [], []
    dom = Domain.unit(10)
    for rep in range(reps):
        X = random10(seed=rep)
        fm = make_box_map("real", dom.lower, dom.upper, random_state=rep)
        sk = fm.sketch(X)
        if eps is not None:
            sk = make_private(sk, eps, split=0.98, insecure_seed=rep)
        m2m = M2M(dom, loss=loss, random_state=50 + rep).fit(sk)
        errs.append(mre(m2m.mean(), X.mean(axis=0)))
        masses.append(m2m.mass_)
    return float(np.mean(errs)), float(np.mean(masses))


def test_table_1_rff_without_noise():
    err, mass = _table1_rff(None, "sum")
    assert err <= 1e-3 and abs(mass - 1) < 1e-2


def test_table_1_rff_at_epsilon_1_with_the_sum_of_squares_loss():
    err, _ = _table1_rff(1.0, "sum", reps=5)
    assert 3e-3 <= err <= 3e-2  # paper 9.55e-3


def test_the_papers_literal_mean_loss_misses_table_1_by_shrinkage():
    # notes seed001 P1: [P]'s text, (1/n_s) ||P a - F||^2 with eq. (5), shrinks the mass below 1
    # and the MRE at epsilon = 1 above the paper's own 9.55e-3 (measured 4.2-4.5e-2)
    err, mass = _table1_rff(1.0, "mean", reps=3)
    assert err > 2.5e-2 and mass < 0.985


# ---------------------------------------------------------------- queries

@pytest.fixture(scope="module")
def fitted():
    dom = Domain([0, -1, 0], [1, 1, 2])
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.uniform(size=8000), rng.uniform(-1, 1, 8000) * 0.5, rng.uniform(0, 2, 8000)])
    fm = make_box_map("real", dom.lower, dom.upper, n_frequencies=60, random_state=1)
    sk = make_private(fm.sketch(X), 5.0, split=0.98, insecure_seed=2)
    return M2M(dom, n_synthetic=20_000, random_state=4).fit(sk), X


def test_moments_and_covariance_are_the_estimates_of_their_targets(fitted):
    m2m, X = fitted
    mom = m2m.moments((1, 2, 3), project=False)
    for row, k in zip(mom, (1, 2, 3)):
        np.testing.assert_allclose(row, m2m.estimate(lambda Z: Z ** k), rtol=1e-12, atol=1e-14)
    mu = m2m.mean(project=False)
    C = m2m.covariance(project=False)
    expected = m2m.estimate(lambda Z: np.column_stack([(Z[:, i] - mu[i]) * (Z[:, j] - mu[j])
                                                       for i in range(3) for j in range(3)])).reshape(3, 3)
    np.testing.assert_allclose(C, expected, rtol=1e-10, atol=1e-13)
    assert np.array_equal(C, C.T)
    # and they estimate the data's (generous bounds: a private sketch of 8000 records)
    np.testing.assert_allclose(mu, X.mean(axis=0), atol=0.05)
    np.testing.assert_allclose(C, np.cov(X.T, bias=True), atol=0.05)


def test_cdf_histogram_and_counting_queries_are_the_estimates_of_indicators(fitted):
    m2m, X = fitted
    t = np.linspace(-1, 1, 7)
    # the raw answers are the M2M estimates (issue 37: the default answers are projected onto
    # what is possible, tests/test_m2m_public_range.py)
    np.testing.assert_allclose(m2m.cdf(1, t, project=False), m2m.estimate(lambda Z: Z[:, 1:2] <= t), atol=1e-12)
    edges = np.linspace(0, 2, 5)
    h = m2m.histogram(2, edges, project=False)
    ind = np.column_stack([(Z := m2m.synthetic_[:, 2]) >= edges[k] for k in range(4)]) & np.column_stack(
        [Z < edges[k + 1] if k < 3 else Z <= edges[k + 1] for k in range(4)])
    np.testing.assert_allclose(h, m2m.weights_ @ ind, atol=1e-12)
    lo = np.array([[0.2, -np.inf, 0.5], [-np.inf, 0.0, -np.inf]])
    hi = np.array([[np.inf, 0.3, 1.5], [0.5, np.inf, np.inf]])
    q = m2m.counting_queries(lo, hi, project=False)
    S = m2m.synthetic_
    ref = [m2m.weights_ @ ((S[:, 0] >= 0.2) & (S[:, 1] <= 0.3) & (S[:, 2] >= 0.5) & (S[:, 2] <= 1.5)),
           m2m.weights_ @ ((S[:, 0] <= 0.5) & (S[:, 1] >= 0.0))]
    np.testing.assert_allclose(q, ref, atol=1e-12)
    np.testing.assert_allclose(m2m.counting_queries(lo, hi, as_count=True, project=False), q * m2m.count_)
    truth = [np.mean((X[:, 0] >= 0.2) & (X[:, 1] <= 0.3) & (X[:, 2] >= 0.5) & (X[:, 2] <= 1.5)),
             np.mean((X[:, 0] <= 0.5) & (X[:, 1] >= 0))]
    # 60 random features at epsilon = 5 (split 0.98): over 10 seeds of the compiled sampler
    # and 10 of the Python one the worse of the two queries was 0.01-0.19 from the truth
    # (the same spread for both); the exactness of the estimate is asserted above
    np.testing.assert_allclose(q, truth, atol=0.25)


def test_queries_reject_bad_arguments(fitted):
    m2m, _ = fitted
    with pytest.raises(ValueError, match="columns must be column indices"):
        m2m.moments((1,), columns=[3])
    with pytest.raises(ValueError, match="orders must be non-negative"):
        m2m.moments((-1,))
    with pytest.raises(ValueError, match="edges must be"):
        m2m.histogram(0, [0.5, 0.2])
    with pytest.raises(ValueError, match=r"shape \(q, 3\)"):
        m2m.counting_queries(np.zeros((2, 2)), np.ones((2, 2)))
    with pytest.raises(ValueError, match="use -inf"):
        m2m.counting_queries([np.inf, 0, 0], [1, 1, 1])
    with pytest.raises(ValueError, match=r"shape \(n_s,\)"):
        m2m.estimate(lambda Z: Z[:10])


def test_m2m_rejects_bad_arguments():
    dom = Domain.unit(2)
    with pytest.raises(TypeError, match="domain must be"):
        M2M([0, 1])
    with pytest.raises(ValueError, match="regularization must be one of"):
        M2M(dom, regularization="ridge")
    with pytest.raises(ValueError, match="regularization must be"):
        M2M(dom, regularization=-1.0)
    with pytest.raises(ValueError, match="loss must be one of"):
        M2M(dom, loss="l1")
    with pytest.raises(ValueError, match="not fitted"):
        M2M(dom).mean()
    fm = make_box_map("real", [0, 0, 0], [1, 1, 1], n_frequencies=4, random_state=0)
    with pytest.raises(ValueError, match="3 coordinates but the domain has 2"):
        M2M(dom).fit(fm.sketch(np.zeros((3, 3))))
    with pytest.raises(TypeError, match="sketch must be"):
        M2M(dom).fit(np.zeros(3))


def test_refit_reuses_the_synthetic_points_and_gram():
    dom, fm, X, sk = _private_rff()
    other = make_private(fm.sketch(X[:3000]), 0.5, split=0.98, insecure_seed=9)
    a = M2M(dom, n_synthetic=2000, keep_gram=True, random_state=3).fit(sk)
    mean_a = a.mean()
    a.refit(other)
    b = M2M(dom, n_synthetic=2000, random_state=3).fit(other)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-10, atol=1e-14)
    assert not np.allclose(mean_a, a.mean())
    with pytest.raises(ValueError, match="same feature map"):
        a.refit(make_box_map("real", dom.lower, dom.upper, n_frequencies=20, random_state=99).sketch(X))


def test_cdf_rejects_nan_thresholds(fitted):
    m2m, _ = fitted
    with pytest.raises(ValueError, match="thresholds must not be NaN"):
        m2m.cdf(0, [0.5, np.nan])
