"""Tests of the direct-release baselines of M2M (pysketch.baselines, issue 17).

Each property would fail if the code were wrong:

- sensitivities: the released vector is evaluated (noise-free, by the module's own
  statistic) on neighbouring data sets built from box corners, 0 and grid points; the L1
  change never exceeds the stated sensitivity, and where the docstring says "exact" some
  pair attains it;
- noise: over many insecure-seeded draws the noise's mean absolute value matches the
  Laplace scale sensitivity / epsilon_share (E|L| = b, standard error b / sqrt(N); the
  tests allow 4 standard errors, a false failure probability below 1e-4 were the seeds
  random; they are fixed, so the tests are deterministic) and a KS test against the
  Laplace law does not reject at the 1e-3 level; the noisy count's mean absolute noise
  is that of the discrete Laplace law, 1 / sinh(epsilon_count);
- huge epsilon gives the exact answers;
- objective perturbation: the formulas of Chaudhuri et al. (2011) Algorithm 2, the
  noise norm's Gamma(p, 2 / epsilon') law and uniform direction (KS tests at 1e-3), and
  scikit-learn's LogisticRegression(C = 1 / (n lambda)) as epsilon grows.
"""

import itertools
import math
import warnings

import numpy as np
import pytest
from scipy import stats

from pysketch.baselines import erm as bl_erm
from pysketch.baselines import statistics as bl
from pysketch.baselines import (
    DirectRelease,
    PrivateLogisticModel,
    laplace_counting_queries,
    laplace_covariance,
    laplace_histogram,
    laplace_moments,
    objective_perturbation_logistic,
)
from pysketch.privacy.accountant import BudgetAccountant
from pysketch.privacy.mechanisms import noise_source

HUGE = 1e9  # an epsilon whose noise is far below the tolerances of the exactness tests


def _data(n=200, d=3, seed=0, lo=0.0, hi=1.0):
    return np.random.default_rng(seed).uniform(lo, hi, size=(n, d))


def _box_points(lo, hi, extra=()):
    """Corners of the box, the middle, 0 clipped into the box, a 5-point grid per axis
    (for small d) and any extra points."""
    axes = [np.unique(np.concatenate([np.linspace(a, b, 5), [min(max(0.0, a), b)]])) for a, b in zip(lo, hi)]
    pts = [np.array(p) for p in itertools.product(*axes)]
    return np.array(pts + [np.asarray(e, dtype=float) for e in extra])


def _mean_abs_within(noise, b, k=4.0):
    """|mean |noise| - b| <= k standard errors of a Laplace(b) sample (sd of |L| is b)."""
    noise = np.asarray(noise, dtype=float).ravel()
    se = b / math.sqrt(noise.size)
    assert abs(np.mean(np.abs(noise)) - b) <= k * se, (np.mean(np.abs(noise)), b, se)


def _laplace_ks(noise, b, alpha=1e-3):
    p = stats.kstest(np.asarray(noise).ravel() / b, "laplace").pvalue
    assert p > alpha, p


# =======================================================================================
# Moments
# =======================================================================================

def test_moments_exact_at_huge_epsilon_and_release_keys():
    X = _data(300, 4, lo=-1.0, hi=2.0)
    r = laplace_moments(X, ([-1.0] * 4, [2.0] * 4), HUGE, orders=(1, 2, 3), insecure_seed=0)
    assert isinstance(r, DirectRelease)
    assert r.count == 300 and r["count"] == 300
    expected = np.stack([np.mean(X ** k, axis=0) for k in (1, 2, 3)])
    np.testing.assert_allclose(r.moments, expected, rtol=0, atol=1e-9)
    assert r.orders == (1, 2, 3) and r.moments.shape == (3, 4)
    assert r.secure_noise is False and r.n_clipped == 0
    np.testing.assert_allclose(r.epsilon_sums + r.epsilon_count, HUGE)
    np.testing.assert_allclose(r.epsilon_sums, 0.98 * HUGE)


def test_moments_sensitivity_add_remove_bounded_and_attained():
    lo, hi = np.array([-1.0, 0.5, -2.0]), np.array([2.0, 1.5, -0.5])
    orders = (1, 2, 3)
    D0 = _data(5, 3, lo=lo, hi=hi)
    r = laplace_moments(D0, (lo, hi), 1.0, orders=orders, insecure_seed=0)
    base = bl._moment_sums(D0, orders)
    worst = 0.0
    for x in _box_points(lo, hi):
        D = np.vstack([D0, x])      # add one record
        change = np.abs(bl._moment_sums(D, orders) - base).sum()
        assert change <= r.sensitivity * (1 + 1e-12)
        worst = max(worst, change)
    assert worst == pytest.approx(r.sensitivity, rel=1e-12)  # exact: attained at a corner
    # the stated formula
    expected = sum(np.maximum(np.abs(lo) ** k, np.abs(hi) ** k).sum() for k in orders)
    assert r.sensitivity == pytest.approx(expected)


@pytest.mark.parametrize("straddles", [False, True])
def test_moments_sensitivity_replace(straddles):
    lo = np.array([-1.0, 0.5]) if straddles else np.array([0.2, 0.5])
    hi = np.array([2.0, 1.5])
    orders = (1, 2)
    r = laplace_moments(_data(4, 2, lo=0.5, hi=1.5), (lo, hi), 1.0, orders=orders, neighbouring="replace",
                        insecure_seed=0)
    assert r.epsilon_count == 0.0 and r.count == 4
    pts = _box_points(lo, hi)
    per_point = np.stack([bl._moment_sums(p[None, :], orders).ravel() for p in pts])
    diffs = np.abs(per_point[:, None, :] - per_point[None, :, :]).sum(axis=2)
    assert diffs.max() <= r.sensitivity * (1 + 1e-12)
    if not straddles:  # x^k monotone on every interval: exact
        assert diffs.max() == pytest.approx(r.sensitivity, rel=1e-12)
    else:  # an upper bound: on [-1, 2], x and x^2 are not extreme at the same pair
        assert diffs.max() < r.sensitivity


def test_moments_noise_scale_matches_sensitivity_over_epsilon():
    """replace: no count, the sums' noise has scale Delta / epsilon (one draw of 2 x 3
    values per seed, 700 seeds)."""
    X = _data(50, 3)
    box = ([0.0] * 3, [1.0] * 3)
    exact = bl._moment_sums(X, (1, 2))
    noise = []
    for seed in range(700):
        r = laplace_moments(X, box, 0.5, neighbouring="replace", insecure_seed=seed)
        noise.append(r.sums - exact)
    b = r.sensitivity / 0.5
    assert r.sensitivity == 6.0
    assert r.noise_scale == pytest.approx(b, rel=1e-8)
    _mean_abs_within(noise, b)
    _laplace_ks(noise, b)


def test_moments_budget_split_and_noisy_count():
    """add/remove: the sums get split * epsilon, the count the rest; the count's noise is
    discrete Laplace with scale 1 / epsilon_count, E|K| = 1 / sinh(epsilon_count)."""
    X = _data(40, 2)
    box = ([0.0] * 2, [1.0] * 2)
    exact = bl._moment_sums(X, (1,))
    sums, counts = [], []
    for seed in range(1500):
        r = laplace_moments(X, box, 2.0, orders=(1,), split=0.75, insecure_seed=seed)
        sums.append(r.sums - exact)
        counts.append(r.count - 40)
    assert r.epsilon_sums == pytest.approx(1.5) and r.epsilon_count == pytest.approx(0.5)
    _mean_abs_within(sums, r.sensitivity / 1.5)
    counts = np.array(counts)
    assert np.all(counts == np.round(counts))
    target = 1.0 / math.sinh(0.5)
    sd = math.sqrt(np.var(np.abs(counts)) / counts.size)
    assert abs(np.mean(np.abs(counts)) - target) <= 4 * sd
    # the moments divide by max(count, 1)
    np.testing.assert_allclose(r.moments, r.sums / max(r.count, 1))


def test_moments_clipping_warns_with_the_count():
    X = _data(30, 2)
    X[[0, 5, 7], 1] = 1.5
    X[5, 0] = -3.0    # two coordinates outside in one record: counted once
    with pytest.warns(RuntimeWarning, match=r"^3 of 30 records lie outside bounds"):
        r = laplace_moments(X, ([0, 0], [1, 1]), HUGE, insecure_seed=0)
    assert r.n_clipped == 3
    np.testing.assert_allclose(r.moments[0], np.clip(X, 0, 1).mean(axis=0), atol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        laplace_moments(np.clip(X, 0, 1), ([0, 0], [1, 1]), 1.0, insecure_seed=0)


# =======================================================================================
# Histograms
# =======================================================================================

def test_histogram_exact_at_huge_epsilon():
    X = _data(500, 3)
    X[0] = 1.0   # the upper bound goes in the last bin
    X[1] = 0.0
    r = laplace_histogram(X, ([0.0] * 3, [1.0] * 3), HUGE, bins=(4, 10, 7), insecure_seed=1)
    assert [c.size for c in r.counts] == [4, 10, 7]
    for j, b in enumerate((4, 10, 7)):
        expected, _ = np.histogram(X[:, j], bins=np.linspace(0, 1, b + 1))
        np.testing.assert_allclose(r.counts[j], expected, atol=1e-6)
        np.testing.assert_allclose(r.fractions[j], expected / 500, atol=1e-9)
        np.testing.assert_allclose(r.cdf[j][-1], 1.0, atol=1e-9)
        # cdf[j][t] = fraction of x_j < edge t + 1
        np.testing.assert_allclose(r.cdf[j][:-1], [(X[:, j] < e).mean() for e in r.edges[j][1:-1]], atol=1e-9)


def test_histogram_with_edges():
    X = _data(200, 2)
    edges = [np.array([0.0, 0.1, 0.5, 1.0]), np.array([0.0, 0.9, 1.0])]
    r = laplace_histogram(X, None, HUGE, edges=edges, insecure_seed=1)
    for j in range(2):
        expected, _ = np.histogram(X[:, j], bins=edges[j])
        np.testing.assert_allclose(r.counts[j], expected, atol=1e-6)


@pytest.mark.parametrize("relation, factor", [("add_remove", 1), ("replace", 2)])
def test_histogram_sensitivity_brute_force(relation, factor):
    lo, hi = np.array([0.0, -1.0, 2.0]), np.array([1.0, 1.0, 3.0])
    r = laplace_histogram(_data(3, 3, lo=lo, hi=hi), (lo, hi), 1.0, bins=3, neighbouring=relation,
                          insecure_seed=0)
    assert r.sensitivity == factor * 3
    edges = r.edges
    pts = _box_points(lo, hi)
    H = np.stack([bl._histogram_counts(p[None, :], edges) for p in pts])
    if relation == "add_remove":
        change = np.abs(H).sum(axis=1)          # adding one record
    else:
        change = np.abs(H[:, None, :] - H[None, :, :]).sum(axis=2)   # replacing one
    assert change.max() == r.sensitivity          # bounded and attained


def test_histogram_noise_scale():
    X = _data(30, 2)
    box = ([0.0] * 2, [1.0] * 2)
    r0 = laplace_histogram(X, box, HUGE, bins=5, insecure_seed=0)
    exact = np.concatenate(r0.counts)
    noise = [np.concatenate(laplace_histogram(X, box, 0.8, bins=5, neighbouring="replace",
                                              insecure_seed=s).counts) - exact for s in range(500)]
    b = 4.0 / 0.8   # 2 d / epsilon
    _mean_abs_within(noise, b)
    _laplace_ks(noise, b)


def test_histogram_clipping_warns():
    X = _data(20, 2)
    X[3, 0] = 2.0
    with pytest.warns(RuntimeWarning, match=r"^1 of 20 records lie outside"):
        r = laplace_histogram(X, ([0, 0], [1, 1]), HUGE, bins=4, insecure_seed=0)
    assert r.counts[0][-1] == pytest.approx(np.sum(X[:, 0] >= 0.75), abs=1e-6)


# =======================================================================================
# Covariance
# =======================================================================================

def test_covariance_exact_at_huge_epsilon_and_symmetric():
    X = _data(400, 4, lo=-3.0, hi=5.0)
    r = laplace_covariance(X, ([-3.0] * 4, [5.0] * 4), HUGE, insecure_seed=2)
    np.testing.assert_allclose(r.covariance, np.cov(X.T, bias=True), atol=1e-7)
    np.testing.assert_allclose(r.mean, X.mean(axis=0), atol=1e-7)
    r = laplace_covariance(X, ([-3.0] * 4, [5.0] * 4), 0.3, insecure_seed=2)
    np.testing.assert_array_equal(r.covariance, r.covariance.T)


def test_covariance_sensitivity_add_remove_attained():
    lo, hi = np.array([0.0, -2.0, 1.0]), np.array([1.0, 2.0, 4.0])
    r = laplace_covariance(_data(3, 3, lo=lo, hi=hi), (lo, hi), 1.0, insecure_seed=0)
    centre = 0.5 * (lo + hi)
    V = np.stack([bl._covariance_vector((p - centre)[None, :]) for p in _box_points(lo, hi)])
    change = np.abs(V).sum(axis=1)
    assert change.max() <= r.sensitivity * (1 + 1e-12)
    assert change.max() == pytest.approx(r.sensitivity, rel=1e-12)
    h = 0.5 * (hi - lo)
    assert r.sensitivity == pytest.approx(h.sum() + (h.sum() ** 2 + (h * h).sum()) / 2)


def test_covariance_sensitivity_replace_upper_bound():
    lo, hi = np.array([0.0, -2.0, 1.0]), np.array([1.0, 2.0, 4.0])
    r = laplace_covariance(_data(3, 3, lo=lo, hi=hi), (lo, hi), 1.0, neighbouring="replace", insecure_seed=0)
    centre = 0.5 * (lo + hi)
    V = np.stack([bl._covariance_vector((p - centre)[None, :]) for p in _box_points(lo, hi)])
    change = np.abs(V[:, None, :] - V[None, :, :]).sum(axis=2)
    assert change.max() <= r.sensitivity
    h = 0.5 * (hi - lo)
    assert r.sensitivity == pytest.approx(2 * h.sum() + h.sum() ** 2)
    # below the triangle-inequality bound, twice the add/remove value
    add = laplace_covariance(_data(3, 3, lo=lo, hi=hi), (lo, hi), 1.0, insecure_seed=0).sensitivity
    assert r.sensitivity < 2 * add


def test_covariance_noise_scale():
    X = _data(20, 2, lo=-1, hi=1)
    box = ([-1.0] * 2, [1.0] * 2)
    exact = bl._covariance_vector(X)
    noise = []
    for s in range(600):
        r = laplace_covariance(X, box, 1.5, neighbouring="replace", insecure_seed=s)
        # invert the post-processing: the released vector from mean and covariance (n public)
        n = 20
        m = r.mean
        second = r.covariance + np.outer(m, m)
        rows, cols = np.triu_indices(2)
        noise.append(np.concatenate([m * n, second[rows, cols] * n]) - exact)
    b = r.sensitivity / 1.5
    _mean_abs_within(noise, b)


# =======================================================================================
# Counting queries
# =======================================================================================

def _queries(q, d, seed=0):
    rng = np.random.default_rng(seed)
    lower = np.full((q, d), -np.inf)
    upper = np.full((q, d), np.inf)
    for t in range(q):
        a, b, c = rng.choice(d, 3, replace=False)
        lower[t, a] = rng.random()
        upper[t, b] = rng.random()
        lower[t, c], upper[t, c] = sorted(rng.random(2))
    return lower, upper


def test_counting_queries_exact_at_huge_epsilon():
    X = _data(1000, 5)
    lower, upper = _queries(40, 5)
    r = laplace_counting_queries(X, lower, upper, HUGE, as_fraction=False, insecure_seed=0)
    expected = np.array([np.sum(np.all((X >= lower[t]) & (X <= upper[t]), axis=1)) for t in range(40)])
    np.testing.assert_allclose(r.answers, expected, atol=1e-6)
    r = laplace_counting_queries(X, lower, upper, HUGE, insecure_seed=0)
    np.testing.assert_allclose(r.answers, expected / 1000, atol=1e-9)
    assert r.count == 1000
    # inclusive bounds: a record on the boundary counts
    r = laplace_counting_queries(np.array([[0.5, 0.5]]), [[0.5, -np.inf]], [[np.inf, 0.5]], HUGE,
                                 as_fraction=False, insecure_seed=0)
    assert r.answers[0] == pytest.approx(1.0, abs=1e-9)


def test_counting_queries_blocks_agree(monkeypatch):
    X = _data(1000, 4)
    lower, upper = _queries(30, 4, seed=3)
    whole = bl._query_counts(X, lower, upper)
    monkeypatch.setattr(bl, "_QUERY_BLOCK_ENTRIES", 30 * 7)   # blocks of 7 records
    np.testing.assert_array_equal(bl._query_counts(X, lower, upper), whole)


def test_counting_queries_budget_split():
    X = _data(100, 4)
    lower, upper = _queries(8, 4)
    q = 8
    # counts only: the whole epsilon, epsilon / q per query
    r = laplace_counting_queries(X, lower, upper, 2.0, as_fraction=False, insecure_seed=0)
    assert r.epsilon_queries == 2.0 and r.epsilon_count == 0.0 and r.count is None
    assert r.epsilon_per_query == pytest.approx(2.0 / q)
    assert r.noise_scale == pytest.approx(q / 2.0, rel=1e-8)
    # fractions (add/remove): the default split q^(2/3) / (q^(2/3) + 1) = 0.8 for q = 8
    r = laplace_counting_queries(X, lower, upper, 2.0, insecure_seed=0)
    assert r.epsilon_queries == pytest.approx(1.6) and r.epsilon_count == pytest.approx(0.4)
    assert r.epsilon_per_query == pytest.approx(0.2)
    assert r.noise_scale == pytest.approx(q / 1.6, rel=1e-8)
    np.testing.assert_allclose(r.answers, r.counts / max(r.count, 1))
    # a given split
    r = laplace_counting_queries(X, lower, upper, 2.0, split=0.5, insecure_seed=0)
    assert r.epsilon_per_query == pytest.approx(1.0 / q)
    # replace: n public
    r = laplace_counting_queries(X, lower, upper, 2.0, neighbouring="replace", insecure_seed=0)
    assert r.count == 100 and r.epsilon_queries == 2.0


def test_counting_queries_noise_is_q_over_epsilon_per_query():
    """Each query's noise has scale q / epsilon_Q: one query with epsilon_Q / q."""
    X = _data(60, 3)
    lower, upper = _queries(4, 3, seed=1)
    exact = bl._query_counts(X, lower, upper)
    noise, counts = [], []
    for s in range(800):
        r = laplace_counting_queries(X, lower, upper, 1.0, split=0.8, insecure_seed=s)
        noise.append(r.counts - exact)
        counts.append(r.count - 60)
    _mean_abs_within(noise, 4 / 0.8)
    _laplace_ks(noise, 4 / 0.8)
    counts = np.abs(np.array(counts))
    assert abs(counts.mean() - 1.0 / math.sinh(0.2)) <= 4 * counts.std() / math.sqrt(counts.size)


def test_counting_query_vector_sensitivity_is_q():
    """A record inside every query changes all q counts by 1: L1 change q, the sum of the
    per-query sensitivities the budget split pays for."""
    lower, upper = _queries(6, 4, seed=2)
    lower = np.minimum(lower, 0.0)     # every query now holds the record 0
    upper = np.maximum(upper, 0.0)
    X = _data(10, 4)
    base = bl._query_counts(X, lower, upper)
    added = bl._query_counts(np.vstack([X, np.zeros(4)]), lower, upper)
    assert np.abs(added - base).sum() == 6
    r = laplace_counting_queries(X, lower, upper, 3.0, as_fraction=False, insecure_seed=0)
    assert r.noise_scale == pytest.approx(6 / 3.0, rel=1e-8)


# =======================================================================================
# Objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Algorithm 2)
# =======================================================================================

def _logistic_data(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform([0, -5, 10], [1, 5, 30], size=(n, d))
    logit = 2.0 * (X[:, 0] - 0.5) + 0.4 * X[:, 1] - 0.1 * (X[:, 2] - 20)
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return X, y, (np.array([0.0, -5.0, 10.0]), np.array([1.0, 5.0, 30.0]))


def _sklearn_on_u(U, y, n, lam):
    from sklearn.linear_model import LogisticRegression
    clf = LogisticRegression(C=1.0 / (n * lam), fit_intercept=False, tol=1e-12, max_iter=100_000)
    return clf.fit(U, y).coef_.ravel()


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_objective_perturbation_approaches_sklearn_with_bounds(fit_intercept):
    pytest.importorskip("sklearn")
    X, y, (lo, hi) = _logistic_data()
    n, d = X.shape
    lam = 1e-3
    # the scaled records, built here independently of the module
    if fit_intercept:
        U = np.column_stack([(X - (lo + hi) / 2) / ((hi - lo) / 2), np.ones(n)]) / math.sqrt(d + 1)
    else:
        U = X / (np.maximum(np.abs(lo), np.abs(hi)) * math.sqrt(d))
    assert np.linalg.norm(U, axis=1).max() <= 1.0
    w = _sklearn_on_u(U, y, n, lam)
    m = objective_perturbation_logistic(X, y, 1e8, lam=lam, bounds=(lo, hi), fit_intercept=fit_intercept,
                                        insecure_seed=3)
    assert m.converged_ and m.extra_regularisation_ == 0.0
    np.testing.assert_allclose(m.decision_function(X), U @ w, rtol=1e-5, atol=1e-6)
    if fit_intercept:
        coef = w[:d] / (((hi - lo) / 2) * math.sqrt(d + 1))
        np.testing.assert_allclose(m.coef_, coef, rtol=1e-5)
        assert m.intercept_ == pytest.approx(w[d] / math.sqrt(d + 1) - coef @ ((lo + hi) / 2), rel=1e-5)
    else:
        assert m.intercept_ == 0.0
    proba = m.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(proba[:, 1], 1 / (1 + np.exp(-m.decision_function(X))))
    np.testing.assert_array_equal(m.predict(X), (m.decision_function(X) > 0).astype(int))


def test_objective_perturbation_approaches_sklearn_with_data_norm():
    pytest.importorskip("sklearn")
    X, y, _ = _logistic_data(d=3)
    X = X - X.mean(axis=0)
    R = 12.0
    assert np.linalg.norm(X, axis=1).max() <= R
    n = X.shape[0]
    U = np.column_stack([X / R, np.ones(n)]) / math.sqrt(2)
    w = _sklearn_on_u(U, y, n, 1e-2)
    m = objective_perturbation_logistic(X, y, 1e8, lam=1e-2, data_norm=R, insecure_seed=0)
    np.testing.assert_allclose(m.decision_function(X), U @ w, rtol=1e-5, atol=1e-6)


def test_objective_perturbation_converges_to_exact_as_epsilon_grows():
    """The distance to the non-private minimiser shrinks as epsilon grows (mean over 8
    seeds): the noise b / n is the only difference once Delta = 0."""
    X, y, box = _logistic_data()
    exact = objective_perturbation_logistic(X, y, 1e12, lam=1e-3, bounds=box, insecure_seed=0).coef_
    errs = []
    for eps in (0.5, 5.0, 50.0):
        errs.append(np.mean([np.linalg.norm(objective_perturbation_logistic(
            X, y, eps, lam=1e-3, bounds=box, insecure_seed=s).coef_ - exact) for s in range(8)]))
    assert errs[0] > errs[1] > errs[2]


def test_objective_perturbation_algorithm_2_constants():
    X, y, box = _logistic_data(n=400)
    c = 0.25
    # epsilon' > 0: Delta = 0
    m = objective_perturbation_logistic(X, y, 1.0, lam=1e-2, bounds=box, insecure_seed=0)
    nl = 400 * 1e-2
    assert m.epsilon_noise_ == pytest.approx(1.0 - math.log(1 + 2 * c / nl + c ** 2 / nl ** 2))
    assert m.extra_regularisation_ == 0.0
    # epsilon' <= 0: Delta = c / (n (e^(eps/4) - 1)) - Lambda, epsilon' = epsilon / 2
    m = objective_perturbation_logistic(X[:50], y[:50], 0.1, lam=1e-3, bounds=box, insecure_seed=0)
    nl = 50 * 1e-3
    assert 0.1 - math.log(1 + 2 * c / nl + c ** 2 / nl ** 2) <= 0
    assert m.epsilon_noise_ == pytest.approx(0.05)
    assert m.extra_regularisation_ == pytest.approx(c / (50 * math.expm1(0.1 / 4)) - 1e-3)
    # with that Delta the determinant factor is exactly epsilon / 2: log (1 + c / (n (Lambda + Delta)))^2
    total = 1e-3 + m.extra_regularisation_
    assert 2 * math.log1p(c / (50 * total)) == pytest.approx(0.05)
    assert m.neighbouring_ == "replace"


def test_objective_noise_norm_is_gamma_and_direction_uniform():
    """b has density proportional to exp(-beta ||b||): ||b|| ~ Gamma(p, 1 / beta) and
    b / ||b|| uniform on the sphere; for p = 3 each coordinate of the direction is
    uniform on [-1, 1] (Archimedes). KS tests, rejection level 1e-3."""
    p, beta = 3, 0.35
    src = noise_source(12345)
    draws = np.array([bl_erm._objective_noise(p, beta, src) for _ in range(3000)])
    norms = np.linalg.norm(draws, axis=1)
    assert stats.kstest(norms, stats.gamma(a=p, scale=1 / beta).cdf).pvalue > 1e-3
    for j in range(p):
        assert stats.kstest(draws[:, j] / norms, stats.uniform(-1, 2).cdf).pvalue > 1e-3
    # a wrong shape is rejected (the test has power)
    assert stats.kstest(norms, stats.gamma(a=p - 1, scale=1 / beta).cdf).pvalue < 1e-6
    # p = 6, epsilon' = 0.8: Gamma(6, 2 / 0.8)
    src = noise_source(7)
    norms = np.linalg.norm([bl_erm._objective_noise(6, 0.4, src) for _ in range(2000)], axis=1)
    assert stats.kstest(norms, stats.gamma(a=6, scale=2 / 0.8).cdf).pvalue > 1e-3


def test_objective_perturbation_seeds_and_model():
    X, y, box = _logistic_data()
    a = objective_perturbation_logistic(X, y, 1.0, lam=1e-3, bounds=box, insecure_seed=5)
    b = objective_perturbation_logistic(X, y, 1.0, lam=1e-3, bounds=box, insecure_seed=5)
    c = objective_perturbation_logistic(X, y, 1.0, lam=1e-3, bounds=box, insecure_seed=6)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)
    assert isinstance(a, PrivateLogisticModel) and a.secure_noise_ is False
    assert not any("noise" == k or k.startswith("b_") for k in vars(a))   # the noise is not kept
    assert objective_perturbation_logistic(X, y, 1.0, lam=1e-3, bounds=box).secure_noise_ is True
    # string classes: classes_[1] is the positive one
    ys = np.where(y == 1, "yes", "no")
    s = objective_perturbation_logistic(X, ys, 1.0, lam=1e-3, bounds=box, insecure_seed=5)
    np.testing.assert_allclose(s.coef_, a.coef_)
    assert list(s.classes_) == ["no", "yes"]
    assert set(s.predict(X)) <= {"no", "yes"}


def test_objective_perturbation_clipping_warns():
    X, y, box = _logistic_data(n=100)
    X[[1, 2], 2] = 99.0
    with pytest.warns(RuntimeWarning, match=r"^2 of 100 records lie outside bounds"):
        m = objective_perturbation_logistic(X, y, 1.0, lam=1e-2, bounds=box, insecure_seed=0)
    assert m.n_clipped_ == 2
    with pytest.warns(RuntimeWarning, match=r"^100 of 100 records had \|\|x\|\|_2 > data_norm"):
        objective_perturbation_logistic(X, y, 1.0, lam=1e-2, data_norm=1.0, insecure_seed=0)


# =======================================================================================
# Arguments and accounting
# =======================================================================================

def test_accountant_is_charged():
    acc = BudgetAccountant(epsilon=10.0)
    X = _data(20, 2)
    box = ([0, 0], [1, 1])
    laplace_moments(X, box, 1.0, accountant=acc, insecure_seed=0)
    laplace_histogram(X, box, 1.0, bins=3, accountant=acc, insecure_seed=0)
    laplace_covariance(X, box, 1.0, accountant=acc, insecure_seed=0)
    laplace_counting_queries(X, [[0, 0]], [[1, 1]], 1.0, accountant=acc, insecure_seed=0)
    objective_perturbation_logistic(X, np.arange(20) % 2, 1.0, lam=0.1, bounds=box, accountant=acc,
                                    insecure_seed=0)
    assert acc.spent[0] == pytest.approx(5.0)


X0 = np.random.default_rng(0).random((10, 2))
BOX = ([0, 0], [1, 1])
Y0 = np.arange(10) % 2
BAD = [
    (lambda: laplace_moments(X0, BOX, -1.0), ValueError, "epsilon"),
    (lambda: laplace_moments(X0, BOX, 1.0, neighbouring="bounded"), ValueError, "neighbouring"),
    (lambda: laplace_moments(X0, BOX, 1.0, split=1.0), ValueError, "split"),
    (lambda: laplace_moments(X0, BOX, 1.0, split=0.5, neighbouring="replace", orders=(1,)), None, None),
    (lambda: laplace_moments(X0, BOX, 1.0, split=True), ValueError, "split"),
    (lambda: laplace_moments(X0, BOX, 1.0, orders=(0, 1)), ValueError, "orders"),
    (lambda: laplace_moments(X0, BOX, 1.0, orders=(1.5,)), TypeError, "orders"),
    (lambda: laplace_moments(X0, BOX, 1.0, orders=(1, 1)), ValueError, "orders"),
    (lambda: laplace_moments(X0, BOX, 1.0, orders=()), ValueError, "orders"),
    (lambda: laplace_moments(X0, None, 1.0), ValueError, "bounds"),
    (lambda: laplace_moments(X0, ([0, 0], [1, -1]), 1.0), ValueError, "bounds"),
    (lambda: laplace_moments(X0[:, 0], BOX, 1.0), ValueError, "X"),
    (lambda: laplace_histogram(X0, BOX, 1.0, bins=0), ValueError, "bins"),
    (lambda: laplace_histogram(X0, BOX, 1.0, bins=(3, 4, 5)), ValueError, "bins"),
    (lambda: laplace_histogram(X0, BOX, 1.0, bins=2.5), TypeError, "bins"),
    (lambda: laplace_histogram(X0, BOX, 1.0, edges=[[0, 1], [0, 1]]), ValueError, "either bounds"),
    (lambda: laplace_histogram(X0, None, 1.0, edges=[[0, 1], [1, 0]]), ValueError, r"edges\[1\]"),
    (lambda: laplace_histogram(X0, None, 1.0, edges=[[0, 1]]), ValueError, "edges"),
    (lambda: laplace_covariance(X0, BOX, 0.0), ValueError, "epsilon"),
    (lambda: laplace_covariance(X0, BOX, 1.0, split=0), ValueError, "split"),
    (lambda: laplace_counting_queries(X0, [[0, 0, 0]], [[1, 1, 1]], 1.0), ValueError, "lower"),
    (lambda: laplace_counting_queries(X0, [[0, 0]], [[1, 1], [1, 1]], 1.0), ValueError, "lower and upper"),
    (lambda: laplace_counting_queries(X0, [[0.5, 0]], [[0.2, 1]], 1.0), ValueError, "lower must be <= upper"),
    (lambda: laplace_counting_queries(X0, [[np.nan, 0]], [[1, 1]], 1.0), ValueError, "lower"),
    (lambda: laplace_counting_queries(X0, [[0, 0]], [["a", 1]], 1.0), TypeError, "upper"),
    (lambda: laplace_counting_queries(X0, [[0, 0]], [[1, 1]], 1.0, as_fraction="yes"), TypeError, "as_fraction"),
    (lambda: laplace_counting_queries(X0, [[0, 0]], [[1, 1]], 1.0, split=2.0), ValueError, "split"),
    (lambda: objective_perturbation_logistic(X0, Y0, 1.0, lam=0.0, bounds=BOX), ValueError, "lam"),
    (lambda: objective_perturbation_logistic(X0, Y0, 1.0, lam=1.0), ValueError, "bounds"),
    (lambda: objective_perturbation_logistic(X0, Y0, 1.0, lam=1.0, bounds=BOX, data_norm=1.0), ValueError,
     "data_norm"),
    (lambda: objective_perturbation_logistic(X0, Y0, 1.0, lam=1.0, data_norm=-1.0), ValueError, "data_norm"),
    (lambda: objective_perturbation_logistic(X0, np.arange(10) % 3, 1.0, lam=1.0, bounds=BOX), ValueError,
     "two classes"),
    (lambda: objective_perturbation_logistic(X0, Y0[:5], 1.0, lam=1.0, bounds=BOX), ValueError, "y must"),
    (lambda: objective_perturbation_logistic(X0, Y0, 1.0, lam=1.0, bounds=BOX, classes=(0, 2)), ValueError,
     "outside classes"),
    (lambda: objective_perturbation_logistic(X0, Y0, 1.0, lam=1.0, bounds=BOX, classes=(1, 1)), ValueError,
     "classes"),
    (lambda: objective_perturbation_logistic(X0, Y0, 1.0, lam=1.0, bounds=BOX, fit_intercept=1), TypeError,
     "fit_intercept"),
    (lambda: objective_perturbation_logistic(X0, Y0, 1.0, lam=1.0, bounds=BOX, max_iter=0), ValueError,
     "max_iter"),
    (lambda: objective_perturbation_logistic(X0, Y0, 1.0, lam=1.0, bounds=BOX, tol=-1.0), ValueError, "tol"),
    (lambda: objective_perturbation_logistic(X0, Y0, np.inf, lam=1.0, bounds=BOX), ValueError, "epsilon"),
    (lambda: laplace_moments(X0, BOX, 1.0, insecure_seed=1.5), TypeError, "insecure_seed"),
]


@pytest.mark.parametrize("call, error, match", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_arguments_name_the_argument(call, error, match):
    if error is None:
        call()   # a valid split is accepted (and unused) under replace
        return
    with pytest.raises(error, match=match):
        call()


def test_model_rejects_wrong_width():
    m = objective_perturbation_logistic(X0, Y0, 1.0, lam=1.0, bounds=BOX, insecure_seed=0)
    with pytest.raises(ValueError, match="features"):
        m.decision_function(np.zeros((3, 5)))


def test_objective_perturbation_draws_b_with_rate_epsilon_prime_over_2(monkeypatch):
    """The noise passed to the objective has density exp(-(epsilon' / 2) ||b||) in R^p,
    p = d + 1 with an intercept."""
    seen = []
    real = bl_erm._objective_noise

    def spy(p, beta, source):
        seen.append((p, beta))
        return real(p, beta, source)

    monkeypatch.setattr(bl_erm, "_objective_noise", spy)
    X, y, box = _logistic_data(n=300)
    m = objective_perturbation_logistic(X, y, 2.0, lam=1e-2, bounds=box, insecure_seed=0)
    assert seen == [(4, pytest.approx(m.epsilon_noise_ / 2))]
    m = objective_perturbation_logistic(X[:40], y[:40], 0.2, lam=1e-3, bounds=box, fit_intercept=False,
                                        insecure_seed=0)
    assert seen[1] == (3, pytest.approx(0.2 / 4))   # Delta case: epsilon' = epsilon / 2


def test_objective_perturbation_converges_where_lbfgs_line_search_stops():
    """Seed 119 made L-BFGS-B stop with 'ABNORMAL' (its line search at the floating-point
    floor; 11 of 300 seeds did): the Newton finish reaches the tolerance, so no warning."""
    X, y, box = _logistic_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for seed in (119, 140, 146):
            objective_perturbation_logistic(X, y, 1.0, lam=1e-3, bounds=box, insecure_seed=seed)
