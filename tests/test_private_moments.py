"""The releases of the projected route of private k-means (pysketch.privacy.moments): the
second moments of records in a box and one private Lloyd step (cluster counts and sums).
Their sensitivities by brute force over the box's corners and random points, their values
without noise, and their privacy audits (Laplace: the likelihood-ratio event of the claimed
law on a worst-case pair, as tests/test_privacy_audits_baselines.py)."""

import itertools

import numpy as np
import pytest

from pysketch.privacy.moments import (cluster_sums_sensitivity, private_cluster_means, private_second_moments,
                                      second_moment_sensitivity)
from test_privacy_audits_baselines import _laplace_audit_of


def _triangle(v):
    rows, cols = np.triu_indices(v.size)
    return np.outer(v, v)[rows, cols]


def _points(h, extra=400, seed=0):
    """Every corner of the centred box and random points inside it."""
    corners = np.array(list(itertools.product(*[(-x, x) for x in h])))
    inside = np.random.default_rng(seed).uniform(-h, h, size=(extra, h.size))
    return np.concatenate([corners, inside, np.zeros((1, h.size))])


@pytest.mark.parametrize("h", [np.array([1.0, 2.0, 0.5]), np.array([3.0, 0.1])])
def test_second_moment_sensitivities_are_attained_and_not_exceeded(h):
    pts = _points(h)
    T = np.array([_triangle(v) for v in pts])
    add1, add2 = np.abs(T).sum(axis=1).max(), np.sqrt((T * T).sum(axis=1)).max()
    assert add1 == pytest.approx(second_moment_sensitivity(h, 1))
    assert add2 == pytest.approx(second_moment_sensitivity(h, 2))
    D = T[:, None, :] - T[None, :, :]
    assert np.abs(D).sum(axis=2).max() <= second_moment_sensitivity(h, 1, "replace") + 1e-12
    assert np.sqrt((D * D).sum(axis=2)).max() <= second_moment_sensitivity(h, 2, "replace") + 1e-12


@pytest.mark.parametrize("h", [np.array([1.0, 2.0, 0.5]), np.array([3.0, 0.1])])
def test_cluster_sum_sensitivities_are_attained_and_not_exceeded(h):
    k = 3
    pts = _points(h)
    centres = np.random.default_rng(1).uniform(-h, h, size=(k, h.size))
    lab = np.argmin(((pts[:, None, :] - centres[None]) ** 2).sum(axis=2), axis=1)
    V = np.zeros((pts.shape[0], k * (1 + h.size)))  # (counts, sums) of one record
    for i, (v, j) in enumerate(zip(pts, lab)):
        V[i, j] = 1.0
        V[i, k + j * h.size : k + (j + 1) * h.size] = v
    assert np.abs(V).sum(axis=1).max() == pytest.approx(cluster_sums_sensitivity(h, 1))
    assert np.sqrt((V * V).sum(axis=1)).max() == pytest.approx(cluster_sums_sensitivity(h, 2))
    D = V[:, None, :] - V[None, :, :]
    assert np.abs(D).sum(axis=2).max() <= cluster_sums_sensitivity(h, 1, "replace") + 1e-12
    assert np.sqrt((D * D).sum(axis=2)).max() <= cluster_sums_sensitivity(h, 2, "replace") + 1e-12


def test_releases_without_noise_are_the_exact_values():
    rng = np.random.default_rng(2)
    lo, hi = np.array([-1.0, 0.0, 10.0]), np.array([3.0, 1.0, 30.0])
    X = rng.uniform(lo, hi, size=(5000, 3))
    c0 = 0.5 * (lo + hi)
    S, var = private_second_moments(X, lo, hi, 1e12, insecure_seed=1)  # noise of scale ~1e-10
    np.testing.assert_allclose(S, (X - c0).T @ (X - c0), rtol=1e-9)
    assert var > 0 and np.allclose(S, S.T)
    C = np.array([[0.0, 0.5, 15.0], [2.0, 0.5, 25.0]])
    new, counts = private_cluster_means(X, C, lo, hi, 1e12, insecure_seed=2)
    lab = np.argmin(((X[:, None, :] - C[None]) ** 2).sum(axis=2), axis=1)
    np.testing.assert_allclose(counts, np.bincount(lab), atol=1e-6)
    np.testing.assert_allclose(new, [X[lab == j].mean(axis=0) for j in range(2)], rtol=1e-9)
    # a centre whose noisy count is below 1 stays where it was
    far = np.vstack([C, [[3.0, 1.0, 30.0]]])
    with_empty, _ = private_cluster_means(X[:10], far, lo, hi, 1e12, insecure_seed=3)
    assert with_empty[2].tolist() == [3.0, 1.0, 30.0]


def test_releases_refuse_bad_arguments():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="epsilon"):
        private_second_moments(X, -1, 1, 0.0)
    with pytest.raises(ValueError, match="upper > lower"):
        private_second_moments(X, 1, -1, 1.0)
    with pytest.raises(ValueError, match="centres must be a finite"):
        private_cluster_means(X, np.zeros((2, 3)), -1, 1, 1.0)
    with pytest.raises(ValueError, match="norm"):
        second_moment_sensitivity(np.ones(2), 3)


def test_second_moments_audit():
    # add/remove, d = 2, box [-1, 1] x [-2, 2]: D0 = {0}, D1 = {0, (1, 2)} (a corner): the triangle
    # moves by (1, 2, 4), L1 = 7 = ((1 + 2)^2 + 1 + 4) / 2, attained; Laplace scale 7 / eps.
    eps, lo, hi = 1.0, np.array([-1.0, -2.0]), np.array([1.0, 2.0])
    data = (np.zeros((1, 2)), np.array([[0.0, 0.0], [1.0, 2.0]]))
    rows, cols = np.triu_indices(2)
    v0, v1 = np.zeros(3), np.array([1.0, 2.0, 4.0])
    assert second_moment_sensitivity([1.0, 2.0], 1) == 7.0

    def release(side):
        S, _ = private_second_moments(data[side], lo, hi, eps)
        return S[rows, cols]
    lb = _laplace_audit_of(release, v0, v1, np.full(3, 7.0 / eps), 4000)
    assert 0.35 * eps <= lb <= eps, lb


def test_cluster_means_audit():
    # add/remove, d = 1, box [-1, 1], one centre at 0: D0 = {0}, D1 = {0, 1}: (count, sum) moves
    # from (1, 0) to (2, 1), L1 = 2 = 1 + h, attained; Laplace scale 2 / eps. The released vector
    # is read at the release boundary by a spy on the Laplace mechanism (the new centre is its
    # post-processing).
    from pysketch.privacy import moments as M
    from test_privacy_audits import _spy_mechanisms

    eps = 1.0
    data = (np.zeros((1, 1)), np.array([[0.0], [1.0]]))
    v0, v1 = np.array([1.0, 0.0]), np.array([2.0, 1.0])
    assert cluster_sums_sensitivity([1.0], 1) == 2.0

    def release(side):
        with _spy_mechanisms(M, names=("Laplace",), count=False) as out:
            private_cluster_means(data[side], np.zeros((1, 1)), -1.0, 1.0, eps)
        (vector,) = out
        return vector
    lb = _laplace_audit_of(release, v0, v1, np.full(2, 2.0 / eps), 4000)
    assert 0.35 * eps <= lb <= eps, lb


@pytest.mark.parametrize("release", ["second_moments", "cluster_means", "mean_and_spread"])
def test_every_moment_release_refuses_records_outside_the_box_and_a_bad_box(release):
    # the sensitivities hold only inside the public box: a record outside it, or a box that
    # is inverted or infinite, would calibrate the noise to the wrong sensitivity
    from pysketch.privacy import moments

    def run(X, lower, upper):
        if release == "second_moments":
            return moments.private_second_moments(X, lower, upper, 1.0)
        if release == "cluster_means":
            return moments.private_cluster_means(X, [[0.0, 0.0], [0.5, 0.5]], lower, upper, 1.0)
        return moments.private_mean_and_spread(X, 1.0, lower, upper)

    X = np.random.default_rng(0).uniform(-1, 1, size=(200, 2))
    run(X, -1.0, 1.0)  # inside: released
    with pytest.raises(ValueError, match="outside"):
        run(np.vstack([X, [[5.0, 5.0]]]), -1.0, 1.0)
    with pytest.raises(ValueError, match="NaN or infinity"):
        run(np.vstack([X, [[np.nan, 0.0]]]), -1.0, 1.0)
    for lower, upper in ((1.0, -1.0), (-np.inf, 1.0), ([-1.0, 1.0], [1.0, 1.0])):
        with pytest.raises(ValueError, match="upper > lower"):
            run(X, lower, upper)
    with pytest.raises(ValueError, match="2-D"):
        run(X[:, 0], -1.0, 1.0)
