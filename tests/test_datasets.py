"""Tests of pysketch.datasets: synthetic Gaussian mixtures.

Statistical checks use fixed seeds and state their confidence:
* a moment check passes when |estimate - expected| <= K = 5 standard errors (the standard
  error is stated next to each check; a correct generator fails one check with
  probability ~6e-7, normal approximation);
* chi-square and Kolmogorov-Smirnov tests pass when p > ALPHA = 1e-4.
Where useful, a "power" check shows the same test rejects a plausible wrong generator.
"""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import pdist

from pysketch.datasets import (
    GMMStream,
    gmm_stream,
    make_blobs_gaussian_centers,
    make_gmm,
    make_gmm_diag,
)

K = 5.0
ALPHA = 1e-4


def within(estimate, expected, se, k=K):
    return abs(estimate - expected) <= k * se


def chi2_pvalue(labels, weights):
    counts = np.bincount(labels, minlength=len(weights))
    return stats.chisquare(counts, len(labels) * np.asarray(weights)).pvalue


# ---------------------------------------------------------------------------------------
# make_gmm: the separation parameter (thesis (4.6), corrected reading) and rho^2
# ---------------------------------------------------------------------------------------


# The notes (seed003 sec. 4.1): s = 2.5, (k, d) -> rho^2 to three significant digits.
RHO2_TABLE = [
    (10, 10, 9.91),
    (6, 8, 9.78),
    (20, 60, 6.91),
    (30, 128, 6.59),
    (10, 2, 62.5),
    (100, 10, 15.7),
]


@pytest.mark.parametrize("k, d, rho2", RHO2_TABLE)
def test_rho2_of_the_notes(k, d, rho2):
    _, _, p = make_gmm(5, k, d, separation=2.5, random_state=0, return_params=True)
    assert float(f"{p['rho2']:.3g}") == rho2
    # rho = s k^(1/d): sigma_inter = s k^(1/d) sigma_intra.
    assert p["rho2"] == pytest.approx(2.5**2 * k ** (2.0 / d), rel=1e-13)
    assert p["sigma_inter"] == pytest.approx(2.5 * k ** (1.0 / d), rel=1e-13)
    assert p["separation"] == 2.5 and p["sigma_intra"] == 1.0


def test_separation_is_scale_free_and_round_trips():
    _, _, a = make_gmm(5, 10, 10, separation=2.5, sigma_intra=3.0, random_state=0, return_params=True)
    assert a["rho2"] == pytest.approx(9.9056, abs=1e-4)  # unchanged by sigma_intra
    assert a["sigma_inter"] == pytest.approx(3.0 * 2.5 * 10**0.1, rel=1e-13)
    # Given sigma_inter, the recorded s is the one that would give it.
    _, _, b = make_gmm(5, 10, 10, sigma_inter=a["sigma_inter"], sigma_intra=3.0, random_state=0,
                       return_params=True)
    assert b["separation"] == pytest.approx(2.5, rel=1e-13)
    assert b["rho2"] == pytest.approx(a["rho2"], rel=1e-13)
    # Power: the literal misprint sigma_intra = s k^(1/d) would make larger s *less*
    # separated; in the implemented reading rho^2 grows with s.
    rho2 = [make_gmm(5, 5, 2, separation=s, random_state=0, return_params=True)[2]["rho2"]
            for s in (1.5, 8.0)]
    assert rho2[1] > rho2[0]


def test_params_content():
    X, y, p = make_gmm(100, 4, 3, sigma_inter=5.0, weights=[0.1, 0.2, 0.3, 0.4], random_state=3,
                       return_params=True)
    assert set(p) == {"centers", "weights", "sigma_intra", "sigma_inter", "separation", "rho2",
                      "min_center_distance"}
    assert p["centers"].shape == (4, 3)
    np.testing.assert_allclose(p["weights"], [0.1, 0.2, 0.3, 0.4], rtol=1e-15)
    assert p["rho2"] == pytest.approx(25.0)
    assert p["min_center_distance"] == pytest.approx(pdist(p["centers"]).min(), rel=1e-12)
    assert make_gmm(3, 1, 2, sigma_inter=1.0, random_state=0, return_params=True)[2][
        "min_center_distance"] == math.inf


def test_shapes_and_dtypes():
    X, y = make_gmm(7, 3, 4, separation=1.0, random_state=0)
    assert X.shape == (7, 4) and X.dtype == np.float64 and X.flags.c_contiguous
    assert y.shape == (7,) and y.dtype.kind == "i" and y.min() >= 0 and y.max() < 3
    # k > n is allowed (some clusters empty).
    X, y = make_gmm(3, 10, 2, separation=1.0, random_state=0)
    assert X.shape == (3, 2)


# ---------------------------------------------------------------------------------------
# make_gmm: moments
# ---------------------------------------------------------------------------------------


def test_center_spread_matches_sigma_inter():
    # Centers are k*d i.i.d. N(0, sigma_inter^2): the mean of their squares estimates
    # sigma_inter^2 with standard error sigma_inter^2 sqrt(2 / (k d)); their mean estimates 0
    # with standard error sigma_inter / sqrt(k d).
    k, d = 400, 50
    _, _, p = make_gmm(10, k, d, separation=2.5, sigma_intra=1.7, random_state=11, return_params=True)
    c = p["centers"].ravel()
    s2 = p["sigma_inter"] ** 2
    assert within(np.mean(c * c), s2, s2 * math.sqrt(2.0 / c.size))
    assert within(np.mean(c), 0.0, math.sqrt(s2 / c.size))
    # Power: the misprinted reading (sigma_inter = s k^(1/d), ignoring sigma_intra = 1.7)
    # is rejected by the same check.
    wrong = (2.5 * k ** (1.0 / d)) ** 2
    assert not within(np.mean(c * c), wrong, wrong * math.sqrt(2.0 / c.size))


def test_within_cluster_spread_and_cluster_means():
    n, k, d, sigma = 40000, 5, 4, 0.7
    X, y, p = make_gmm(n, k, d, sigma_inter=4.0, sigma_intra=sigma, random_state=5, return_params=True)
    r = X - p["centers"][y]
    # Per axis, the residuals are i.i.d. N(0, sigma^2): variance estimate (known mean 0)
    # with standard error sigma^2 sqrt(2 / n).
    for j in range(d):
        assert within(np.mean(r[:, j] ** 2), sigma**2, sigma**2 * math.sqrt(2.0 / n))
    # Cluster means: z = (mean_i - c_i) sqrt(n_i) / sigma are k*d i.i.d. N(0, 1).
    counts = np.bincount(y, minlength=k)
    z = np.stack([r[y == i].mean(axis=0) * math.sqrt(counts[i]) / sigma for i in range(k)])
    assert stats.chi2.sf(np.sum(z * z), k * d) > ALPHA
    # Power: a generator with the wrong intra-cluster scale fails the variance check.
    assert not within(np.mean(r**2) * 1.05**2, sigma**2, sigma**2 * math.sqrt(2.0 / (n * d)))


def test_label_frequencies_match_weights():
    w = [0.5, 0.3, 0.15, 0.05]
    _, y = make_gmm(20000, 4, 2, separation=1.0, weights=w, random_state=2)
    assert chi2_pvalue(y, w) > ALPHA
    assert chi2_pvalue(y, w[::-1]) < ALPHA  # power
    _, y = make_gmm(20000, 7, 2, separation=1.0, random_state=2)
    assert chi2_pvalue(y, np.full(7, 1 / 7)) > ALPHA


def test_records_are_not_sorted_by_cluster():
    _, y = make_gmm(1000, 3, 2, separation=1.0, random_state=0)
    assert np.count_nonzero(np.diff(y)) > 300  # categorical draws, i.i.d. order


def test_second_moment_heuristic():
    # Notes sec. 1.6 item 2: E[sigma_X^2] ~ sigma_inter^2 + sigma_intra^2 under model (4.5)
    # (averaged over draws of the centers; here a loose check over one large draw).
    X, _, p = make_gmm(50000, 200, 5, sigma_inter=2.0, sigma_intra=1.0, random_state=4,
                       return_params=True)
    second = np.mean(np.sum((X - X.mean(axis=0)) ** 2, axis=1)) / X.shape[1]
    assert second == pytest.approx(5.0, rel=0.1)


# ---------------------------------------------------------------------------------------
# make_gmm: reproducibility and draw order
# ---------------------------------------------------------------------------------------


def test_reproducible_given_seed():
    a = make_gmm(500, 4, 3, separation=2.0, random_state=42, return_params=True)
    b = make_gmm(500, 4, 3, separation=2.0, random_state=42, return_params=True)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[2]["centers"], b[2]["centers"])
    c = make_gmm(500, 4, 3, separation=2.0, random_state=43)
    assert not np.array_equal(a[0], c[0])


def test_generator_advances_and_random_state_types():
    rng = np.random.default_rng(0)
    a = make_gmm(50, 2, 2, separation=1.0, random_state=rng)[0]
    b = make_gmm(50, 2, 2, separation=1.0, random_state=rng)[0]
    assert not np.array_equal(a, b)
    c = make_gmm(50, 2, 2, separation=1.0, random_state=np.random.RandomState(0))[0]
    d = make_gmm(50, 2, 2, separation=1.0, random_state=np.random.RandomState(0))[0]
    np.testing.assert_array_equal(c, d)


def test_centers_are_drawn_first():
    # The same seed gives the same mixture for every n.
    small = make_gmm(3, 6, 4, separation=2.5, random_state=9, return_params=True)[2]["centers"]
    large = make_gmm(5000, 6, 4, separation=2.5, random_state=9, return_params=True)[2]["centers"]
    np.testing.assert_array_equal(small, large)


# ---------------------------------------------------------------------------------------
# make_gmm: bad arguments
# ---------------------------------------------------------------------------------------


GOOD = dict(n=10, k=3, d=2, separation=1.0)


@pytest.mark.parametrize(
    "change, error, match",
    [
        (dict(n=0), ValueError, "n must be an int >= 1"),
        (dict(n=2.0), TypeError, "n must be an int"),
        (dict(n=True), TypeError, "n must be an int"),
        (dict(k=0), ValueError, "k must be"),
        (dict(d=-1), ValueError, "d must be"),
        (dict(d="3"), TypeError, "d must be"),
        (dict(separation=None), ValueError, "exactly one of separation"),
        (dict(sigma_inter=2.0), ValueError, "exactly one of separation"),
        (dict(separation=-1.0), ValueError, "separation must be"),
        (dict(separation=float("nan")), ValueError, "separation must be"),
        (dict(separation=float("inf")), ValueError, "separation must be"),
        (dict(separation=1e300, sigma_intra=1e10), ValueError, "sigma_inter"),
        (dict(sigma_intra=0.0), ValueError, "sigma_intra must be"),
        (dict(sigma_intra="1"), TypeError, "sigma_intra must be"),
        (dict(separation=None, sigma_inter=0.0), ValueError, "sigma_inter must be"),
        (dict(weights=[0.5, 0.5]), ValueError, r"weights must have shape \(3,\)"),
        (dict(weights=[0.5, 0.6, -0.1]), ValueError, "weights must all be > 0"),
        (dict(weights=[0.3, 0.3, 0.3]), ValueError, "weights must sum to 1"),
        (dict(weights=[0.5, 0.5, float("nan")]), ValueError, "weights must be finite"),
        (dict(weights="uniform"), TypeError, "weights must be None or an array"),
        (dict(return_params=1), TypeError, "return_params must be True or False"),
        (dict(random_state=-1), ValueError, "random_state"),
        (dict(random_state=1.5), TypeError, "random_state"),
    ],
)
def test_make_gmm_bad_arguments(change, error, match):
    kwargs = {**GOOD, **change}
    n, k, d = kwargs.pop("n"), kwargs.pop("k"), kwargs.pop("d")
    with pytest.raises(error, match=match):
        make_gmm(n, k, d, **kwargs)


def test_weights_tolerance():
    # Within 1e-9 of summing to 1: accepted (and renormalized); beyond: refused.
    _, _, p = make_gmm(5, 2, 1, separation=1.0, weights=[0.5, 0.5 + 5e-10], random_state=0,
                       return_params=True)
    assert math.fsum(p["weights"]) == pytest.approx(1.0, abs=1e-15)
    with pytest.raises(ValueError, match="sum to 1"):
        make_gmm(5, 2, 1, separation=1.0, weights=[0.5, 0.5 + 2e-9])


# ---------------------------------------------------------------------------------------
# make_blobs_gaussian_centers
# ---------------------------------------------------------------------------------------


def test_blobs_is_make_gmm_with_the_benchmark_scales():
    a = make_blobs_gaussian_centers(300, 5, 4, random_state=7, return_params=True)
    b = make_gmm(300, 5, 4, sigma_inter=2.0, sigma_intra=1.0, random_state=7, return_params=True)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert a[2]["sigma_inter"] == 2.0 and a[2]["sigma_intra"] == 1.0 and a[2]["rho2"] == 4.0
    np.testing.assert_array_equal(a[2]["weights"], np.full(5, 0.2))
    c = make_blobs_gaussian_centers(300, 5, 4, center_scale=3.0, cluster_std=0.5, random_state=7)
    d = make_gmm(300, 5, 4, sigma_inter=3.0, sigma_intra=0.5, random_state=7)
    np.testing.assert_array_equal(c[0], d[0])


def test_blobs_center_variance_is_four():
    # centers N(0, 4 I_d): mean of squares 4 +- 4 sqrt(2 / (k d)).
    k, d = 300, 40
    _, _, p = make_blobs_gaussian_centers(5, k, d, random_state=1, return_params=True)
    c = p["centers"].ravel()
    assert within(np.mean(c * c), 4.0, 4.0 * math.sqrt(2.0 / c.size))


@pytest.mark.parametrize("change, match", [
    (dict(center_scale=0.0), "center_scale"),
    (dict(cluster_std=-1.0), "cluster_std"),
    (dict(center_scale=float("inf")), "center_scale"),
])
def test_blobs_bad_arguments(change, match):
    with pytest.raises(ValueError, match=match):
        make_blobs_gaussian_centers(10, 2, 2, **change)


# ---------------------------------------------------------------------------------------
# make_gmm_diag
# ---------------------------------------------------------------------------------------


def test_gmm_diag_params_and_moments():
    n, k, d = 60000, 3, 4
    X, y, p = make_gmm_diag(n, k, d, variance_range=(0.25, 4.0), random_state=8, return_params=True)
    assert p["covariance_type"] == "diag"
    assert p["means"].shape == (k, d) and p["covariances"].shape == (k, d)
    assert np.all((p["covariances"] >= 0.25) & (p["covariances"] <= 4.0))
    np.testing.assert_array_equal(p["weights"], np.full(k, 1 / 3))
    assert chi2_pvalue(y, p["weights"]) > ALPHA
    # Per component and axis: the residual variance (known mean) estimates v_ij with
    # standard error v_ij sqrt(2 / n_i); the k*d z-scores are checked at K each.
    for i in range(k):
        r = X[y == i] - p["means"][i]
        v = p["covariances"][i]
        se = v * math.sqrt(2.0 / r.shape[0])
        assert np.all(np.abs(np.mean(r * r, axis=0) - v) <= K * se)
        # and the mean: standard error sqrt(v / n_i)
        assert np.all(np.abs(r.mean(axis=0)) <= K * np.sqrt(v / r.shape[0]))


def test_gmm_diag_variances_are_log_uniform_and_means_spread():
    a, b = 0.1, 10.0
    _, _, p = make_gmm_diag(2, 200, 100, mean_scale=2.0, variance_range=(a, b), random_state=3,
                            return_params=True)
    u = (np.log(p["covariances"].ravel()) - math.log(a)) / (math.log(b) - math.log(a))
    assert stats.kstest(u, "uniform").pvalue > ALPHA
    # Power: uniform (not log-uniform) variances are rejected.
    assert stats.kstest((p["covariances"].ravel() - a) / (b - a), "uniform").pvalue < ALPHA
    m = p["means"].ravel()
    assert within(np.mean(m * m), 4.0, 4.0 * math.sqrt(2.0 / m.size))


def test_gmm_diag_weights_options():
    _, y, p = make_gmm_diag(30000, 6, 2, weights="dirichlet", dirichlet_concentration=2.0,
                            random_state=1, return_params=True)
    w = p["weights"]
    assert w.shape == (6,) and np.all(w > 0) and math.fsum(w) == pytest.approx(1.0, abs=1e-12)
    assert not np.allclose(w, 1 / 6)
    assert chi2_pvalue(y, w) > ALPHA
    # The Dirichlet weights are reproducible and drawn after the means and variances.
    q = make_gmm_diag(10, 6, 2, weights="dirichlet", dirichlet_concentration=2.0, random_state=1,
                      return_params=True)[2]
    np.testing.assert_array_equal(q["weights"], w)
    r = make_gmm_diag(10, 6, 2, random_state=1, return_params=True)[2]
    np.testing.assert_array_equal(r["means"], p["means"])
    np.testing.assert_array_equal(r["covariances"], p["covariances"])
    _, _, s = make_gmm_diag(10, 3, 2, weights=[0.2, 0.3, 0.5], random_state=0, return_params=True)
    np.testing.assert_allclose(s["weights"], [0.2, 0.3, 0.5])
    # variance_range with a == b: isotropic components.
    _, _, t = make_gmm_diag(10, 3, 2, variance_range=(2.0, 2.0), random_state=0, return_params=True)
    np.testing.assert_array_equal(t["covariances"], 2.0)


@pytest.mark.parametrize("change, error, match", [
    (dict(variance_range=(2.0, 1.0)), ValueError, "a <= b"),
    (dict(variance_range=(0.0, 1.0)), ValueError, r"variance_range\[0\]"),
    (dict(variance_range=(1.0, float("inf"))), ValueError, r"variance_range\[1\]"),
    (dict(variance_range=3.0), TypeError, "variance_range must be a pair"),
    (dict(weights="random"), ValueError, "weights must be None, 'dirichlet'"),
    (dict(weights="dirichlet", dirichlet_concentration=0.0), ValueError, "dirichlet_concentration"),
    (dict(mean_scale=-2.0), ValueError, "mean_scale"),
    (dict(weights=[1.0]), ValueError, "weights must have shape"),
])
def test_gmm_diag_bad_arguments(change, error, match):
    with pytest.raises(error, match=match):
        make_gmm_diag(10, 2, 2, **change)


# ---------------------------------------------------------------------------------------
# gmm_stream
# ---------------------------------------------------------------------------------------


def test_stream_batches_shapes_and_reiteration():
    stream = gmm_stream(100, 5, 3, 4, separation=2.0, random_state=0)
    assert isinstance(stream, GMMStream)
    assert len(stream) == 5 and stream.n == 500 and (stream.k, stream.d) == (3, 4)
    first = list(stream)
    assert len(first) == 5 and all(b.shape == (100, 4) and b.dtype == np.float64 for b in first)
    second = list(stream)
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(stream.batch(3), first[3])
    assert not np.array_equal(first[0], first[1])
    it = iter(stream)
    np.testing.assert_array_equal(next(it), first[0])  # iter() is a generator
    assert "GMMStream(batch_size=100" in repr(stream)


def test_stream_same_mixture_as_make_gmm_and_fixed_centers():
    stream = gmm_stream(50, 3, 4, 3, separation=2.5, random_state=12)
    p = make_gmm(10, 4, 3, separation=2.5, random_state=12, return_params=True)[2]
    np.testing.assert_array_equal(stream.centers, p["centers"])
    assert stream.params["rho2"] == p["rho2"]
    # With random_state=None the stream is still the same on every iteration.
    s = gmm_stream(20, 2, 2, 2, sigma_inter=1.0)
    np.testing.assert_array_equal(list(s)[1], list(s)[1])


def test_stream_statistics():
    # Every batch comes from the same mixture: pooled residuals around the fixed centers
    # have variance sigma_intra^2 (standard error sigma^2 sqrt(2 / (n d))), labels follow
    # the weights, and each batch's cluster means sit on the same centers.
    w = [0.2, 0.3, 0.5]
    stream = gmm_stream(4000, 6, 3, 2, sigma_inter=5.0, sigma_intra=0.5, weights=w, random_state=3,
                        return_labels=True)
    batches = list(stream)
    X = np.concatenate([b[0] for b in batches])
    y = np.concatenate([b[1] for b in batches])
    r = X - stream.centers[y]
    assert within(np.mean(r * r), 0.25, 0.25 * math.sqrt(2.0 / r.size))
    assert chi2_pvalue(y, w) > ALPHA
    for Xb, yb in batches:
        rb = Xb - stream.centers[yb]
        z = np.stack([rb[yb == i].mean(axis=0) * math.sqrt(np.sum(yb == i)) / 0.5 for i in range(3)])
        assert stats.chi2.sf(np.sum(z * z), z.size) > ALPHA


def test_stream_memory_does_not_depend_on_n():
    # 10^15 records: nothing is made until asked for; the last batch is reachable alone.
    stream = gmm_stream(1000, 10**12, 5, 3, separation=2.0, random_state=0)
    assert stream.n == 10**15
    X = stream.batch(10**12 - 1)
    assert X.shape == (1000, 3)
    with pytest.raises(IndexError, match="index must be < n_batches"):
        stream.batch(10**12)


@pytest.mark.parametrize("change, error, match", [
    (dict(batch_size=0), ValueError, "batch_size"),
    (dict(n_batches=1.0), TypeError, "n_batches"),
    (dict(separation=None), ValueError, "exactly one"),
    (dict(return_labels="no"), TypeError, "return_labels"),
    (dict(weights=[1.0, 0.0]), ValueError, "weights must all be > 0"),
])
def test_stream_bad_arguments(change, error, match):
    kwargs = dict(batch_size=10, n_batches=2, k=2, d=2, separation=1.0, **{})
    kwargs.update(change)
    with pytest.raises(error, match=match):
        gmm_stream(**kwargs)
