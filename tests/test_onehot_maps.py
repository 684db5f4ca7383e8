"""The one-hot maps HIST and RACE (pysketch.features.HistogramMap, RaceMap) through the
feature-map contract: features against a NumPy reference, streaming sketches, merging,
files and pickling, sensitivities by brute force, private releases and their audits, and
their designs (co-occurrence Gram, gather and scatter products) against dense matrices."""

import itertools
import math
import pickle

import numpy as np
import pytest

from pysketch import Sketch
from pysketch.features import GridMap, HistogramMap, OneHotDesign, RaceMap, make_box_map
from pysketch.privacy import make_private

from test_privacy import _audit


def hist_reference(X, lower, upper, n_bins):
    t = (X - lower) * (n_bins / (upper - lower))
    b = np.clip(np.floor(t), 0, n_bins - 1).astype(np.int64)
    return b + n_bins * np.arange(X.shape[1])


def dense(idx, m):
    P = np.zeros((idx.shape[0], m))
    np.put_along_axis(P, idx.astype(np.int64), 1.0, axis=1)
    return P


# ---------------------------------------------------------------- HIST

def test_hist_bins_edges_and_outside_values():
    fm = HistogramMap([0.0, -1.0], [1.0, 1.0], n_bins=4)
    assert fm.m == 8 and fm.d == 2 and fm.sensitivity(1) == 2
    X = np.array([[0.0, -1.0], [1.0, 1.0], [0.25, 0.0], [0.2499, -0.5001], [0.999, 0.999]])
    np.testing.assert_array_equal(fm.indices(X), [[0, 4], [3, 7], [1, 6], [0, 4], [3, 7]])
    np.testing.assert_array_equal(fm.indices(X), hist_reference(X, fm.lower, fm.upper, 4))
    np.testing.assert_allclose(fm.edges(1), [-1, -0.5, 0, 0.5, 1])
    out = np.array([[-0.5, 0.0], [2.0, 3.0], [0.5, 0.5]])
    with pytest.warns(RuntimeWarning, match="2 record"):
        sk = fm.sketch(out)
    np.testing.assert_array_equal(sk.sum, dense(hist_reference(out, fm.lower, fm.upper, 4), 8).sum(axis=0))


def test_hist_sketch_is_the_sum_of_its_sparse_features_in_any_batches():
    rng = np.random.default_rng(0)
    fm = HistogramMap(np.zeros(5), np.ones(5), n_bins=7)
    X = rng.uniform(size=(3000, 5))
    P = fm.transform(X)
    assert P.shape == (3000, 35) and P.nnz == 3000 * 5
    np.testing.assert_array_equal(P.toarray(), dense(hist_reference(X, fm.lower, fm.upper, 7), 35))
    sk = fm.sketch(X, batch_size=333)
    np.testing.assert_array_equal(sk.sum, P.toarray().sum(axis=0))
    assert sk.count == 3000
    np.testing.assert_array_equal((fm.sketch(X[:1000]) + fm.sketch(X[1000:])).sum, sk.sum)
    np.testing.assert_array_equal(fm.sketch(X.astype(np.float32)).sum,
                                  fm.sketch(X.astype(np.float32).astype(np.float64)).sum)


def test_one_hot_maps_save_load_and_pickle(tmp_path):
    X = np.random.default_rng(1).uniform(size=(200, 3))
    for fm in (HistogramMap([0, 0, 0], [1, 1, 1], n_bins=5),
               make_box_map("race", [0, 0, 0], [1, 1, 1], n_hashes=6, n_buckets=9, random_state=2),
               GridMap([0, 0, 0], [1, 1, 1], n_bins=4)):
        sk = fm.sketch(X)
        path = tmp_path / f"{fm.kind}.npz"
        sk.save(path)
        back = Sketch.load(path)
        assert type(back.feature_map) is type(fm) and back == sk and back.feature_map == fm
        np.testing.assert_array_equal(back.feature_map.indices(X), fm.indices(X))
        assert pickle.loads(pickle.dumps(sk)) == sk
        p = make_private(sk, 1.0, insecure_seed=3)
        p.save(tmp_path / "p.npz")
        assert Sketch.load(tmp_path / "p.npz") == p
    other = make_box_map("race", [0, 0, 0], [1, 1, 1], n_hashes=6, n_buckets=9, random_state=3)
    with pytest.raises(ValueError, match="different feature maps"):
        fm.sketch(X) + other.sketch(X)


def test_hist_rejects_bad_arguments():
    with pytest.raises(ValueError, match="upper > lower"):
        HistogramMap([0, 1], [1, 1])
    with pytest.raises(ValueError, match="one length"):
        HistogramMap([0, 0], [1])
    with pytest.raises(ValueError, match="n_bins must be an int >= 1"):
        HistogramMap([0], [1], n_bins=0)
    fm = HistogramMap([0, 0], [1, 1])
    with pytest.raises(ValueError, match="2 columns"):
        fm.indices(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="NaN"):
        fm.indices([[0.5, np.nan]])
    with pytest.raises(ValueError, match="no feature subsampling"):
        fm.sketch_subsampled(np.zeros((3, 2)), 5)
    with pytest.raises(ValueError, match="features_per_record"):
        fm.sensitivity(1, features_per_record=3)


# ---------------------------------------------------------------- RACE

def test_race_hashes_are_floor_of_the_projection_mod_w():
    rng = np.random.default_rng(4)
    fm = make_box_map("race", [0, -2, 10], [1, 2, 20], n_hashes=7, n_buckets=5, width=0.3, random_state=5)
    assert fm.m == 35 and fm.n_hashes == 7 and fm.sensitivity(1) == 7
    X = rng.uniform([0, -2, 10], [1, 2, 20], size=(4000, 3)) * np.array([1, 3, 1])  # some outside the box
    T = X @ fm.operator.to_dense() + fm.offset
    idx = fm.indices(X)
    ref = np.mod(np.floor(T).astype(np.int64), 5) + 5 * np.arange(7)
    clear = np.abs(T - np.round(T)) > 1e-9
    assert clear.mean() > 0.99
    np.testing.assert_array_equal(idx[clear], ref[clear])
    assert (T < 0).any()  # negative hashes fold into [0, W)
    np.testing.assert_array_equal(fm.sketch(X).sum, np.bincount(idx.ravel(), minlength=35))
    # the bucket width in units of the box's side: projections of std 1 / (width * side)
    col_std = fm.operator.to_dense().std(axis=1)
    assert 0.5 / (0.3 * 10) < col_std[2] < 2 / (0.3 * 10)


# ---------------------------------------------------------------- sensitivities by brute force

def _brute_force(fm, points):
    F = fm.transform(points).toarray()
    add1 = np.abs(F).sum(axis=1).max()
    add2 = np.sqrt((F ** 2).sum(axis=1)).max()
    D = F[:, None, :] - F[None, :, :]
    rep1 = np.abs(D).sum(axis=2).max()
    rep2 = np.sqrt((D ** 2).sum(axis=2)).max()
    return add1, add2, rep1, rep2


@pytest.mark.parametrize("make", [
    lambda: HistogramMap([0, 0, 0], [1, 1, 1], n_bins=3),
    lambda: GridMap([0, 0, 0], [1, 1, 1], n_bins=3),
    lambda: make_box_map("race", [0, 0, 0], [1, 1, 1], n_hashes=4, n_buckets=3, width=0.2, random_state=0),
])
def test_sensitivities_are_attained_and_not_exceeded(make):
    fm = make()
    grid = np.array(list(itertools.product(np.linspace(-0.2, 1.2, 9), repeat=3)))
    add1, add2, rep1, rep2 = _brute_force(fm, grid)
    k = fm.n_blocks
    assert add1 == fm.sensitivity(1) == k
    assert add2 == pytest.approx(fm.sensitivity(2)) and fm.sensitivity(2) == pytest.approx(math.sqrt(k))
    assert rep1 == fm.sensitivity(1, "replace") == 2 * k
    assert rep2 == pytest.approx(fm.sensitivity(2, "replace")) and rep2 == pytest.approx(math.sqrt(2 * k))


# ---------------------------------------------------------------- designs

@pytest.mark.parametrize("sizes", [[3], [2, 5, 4], [80, 80]])
def test_one_hot_design_against_the_dense_matrix(sizes):
    rng = np.random.default_rng(len(sizes))
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    n, m = 500, sum(sizes)
    idx = np.column_stack([o + rng.integers(0, s, n) for o, s in zip(offsets, sizes)]).astype(np.int32)
    design, P = OneHotDesign(idx, offsets, sizes), dense(idx, m)
    np.testing.assert_array_equal(design.gram(), P.T @ P)
    V = rng.standard_normal((m, 3))
    np.testing.assert_allclose(design.matvec(V), P @ V, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(design.matvec(V[:, 0]), P @ V[:, 0], rtol=1e-13, atol=1e-13)
    F = rng.standard_normal((n, 2))
    np.testing.assert_allclose(design.rmatvec(F), P.T @ F, rtol=1e-12, atol=1e-12)


def test_dense_design_of_complex_features_is_their_real_form():
    fm = make_box_map("complex", [0, 0], [1, 1], n_frequencies=6, random_state=3)
    X = np.random.default_rng(2).uniform(size=(700, 2))
    design = fm.design(X)
    design.chunk_rows = 128  # several chunks
    Z = fm.transform(X)
    P = np.hstack([Z.real, Z.imag])
    assert design.shape == (700, 12) and fm.real_dim == 12
    np.testing.assert_allclose(design.gram(), P.T @ P, rtol=1e-12, atol=1e-10)
    v = np.arange(12.0)
    np.testing.assert_allclose(design.matvec(v), P @ v, rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(design.rmatvec(X[:, 0]), P.T @ X[:, 0], rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(fm.as_real(fm.sketch(X).sum), P.sum(axis=0), rtol=1e-12)


# ---------------------------------------------------------------- private releases and audits
# as tests/test_quadratic.py: two neighbouring data sets that are worst cases for the map; the
# Clopper-Pearson lower bound on epsilon of one event must stay below the claim and above
# CI_POWER of it at the CI size (10^4 whole make_private calls per data set)

AUDIT_SPLIT = 0.8
#: measured lower bounds at the CI size (4 runs each): add/remove 0.49-0.76, replace 0.40-0.58
#: (the events span 2-4 coordinates, so they are rarer than test_quadratic.py's); about 3
#: standard deviations below the lowest
CI_POWER = 0.3


def _releases(sketch, statistic, k, **options):
    return np.array([statistic(make_private(sketch, **options)) for _ in range(k)])


def _add_remove_audit(fm, base, x, n):
    sk0, sk1 = fm.sketch(base), fm.sketch(np.vstack([base, x]))
    moved = np.flatnonzero(sk1.sum - sk0.sum)
    assert moved.size == fm.n_blocks  # the worst case: one count per block

    def statistic(p):
        return min(np.min(p.sum[moved] - sk1.sum[moved]), p.count - sk1.count)

    options = dict(epsilon=1.0, mechanism="laplace", split=AUDIT_SPLIT)
    return _audit(lambda k: _releases(sk0, statistic, k, **options), lambda k: _releases(sk1, statistic, k, **options),
                  0.0, 0.0, n)


def _replace_audit(fm, base, x, y, n):
    skx, sky = fm.sketch(np.vstack([base, x])), fm.sketch(np.vstack([base, y]))
    diff = skx.sum - sky.sum
    up, down = np.flatnonzero(diff > 0), np.flatnonzero(diff < 0)
    assert up.size == down.size == fm.n_blocks

    def statistic(p):
        return min(np.min(p.sum[up] - skx.sum[up]), np.min(sky.sum[down] - p.sum[down]))

    options = dict(epsilon=1.0, mechanism="laplace", neighbouring="replace")
    return _audit(lambda k: _releases(sky, statistic, k, **options), lambda k: _releases(skx, statistic, k, **options),
                  0.0, 0.0, n)


def _hist_pair():
    fm = HistogramMap([0, 0], [1, 1], n_bins=2)
    return fm, np.array([[0.2, 0.7], [0.6, 0.6]]), np.array([[0.1, 0.1]]), np.array([[0.9, 0.9]])


def _grid_pair():
    fm = GridMap([0, 0], [1, 1], n_bins=2)
    return fm, np.array([[0.2, 0.7], [0.6, 0.6]]), np.array([[0.1, 0.1]]), np.array([[0.9, 0.9]])


def _race_pair():
    fm = make_box_map("race", [0, 0], [1, 1], n_hashes=2, n_buckets=4, width=0.5, random_state=1)
    pts = np.random.default_rng(0).uniform(size=(400, 2))
    idx = fm.indices(pts)
    i, j = next((i, j) for i in range(400) for j in range(i) if (idx[i] != idx[j]).all())
    return fm, np.array([[0.5, 0.5]]), pts[i:i + 1], pts[j:j + 1]


@pytest.mark.parametrize("pair", [_hist_pair, _race_pair, _grid_pair])
def test_one_hot_privacy_audit_add_remove(pair):
    fm, base, x, _ = pair()
    lb = _add_remove_audit(fm, base, x, 10_000)
    assert CI_POWER <= lb <= 1.0, lb


@pytest.mark.parametrize("pair", [_hist_pair, _race_pair, _grid_pair])
def test_one_hot_privacy_audit_replace(pair):
    fm, base, x, y = pair()
    lb = _replace_audit(fm, base, x, y, 10_000)
    assert CI_POWER <= lb <= 1.0, lb


def test_gaussian_release_uses_the_l2_sensitivity():
    fm = HistogramMap(np.zeros(4), np.ones(4), n_bins=3)
    sk = fm.sketch(np.random.default_rng(0).uniform(size=(50, 4)))
    p = make_private(sk, 1.0, 1e-6, insecure_seed=1)
    assert p.privacy["mechanism"] == "gaussian" and p.privacy["sensitivity_sum"] == pytest.approx(2.0)
    r = make_private(sk, 1.0, 1e-6, neighbouring="replace", insecure_seed=1)
    assert r.privacy["sensitivity_sum"] == pytest.approx(math.sqrt(8)) and r.count == 50


def test_box_maps_take_one_scale_per_coordinate():
    lo, hi = np.array([0.0, -5.0]), np.array([1.0, 5.0])
    rff = make_box_map("real", lo, hi, n_frequencies=20_000, sigma=[1.0, 0.25], random_state=0)
    # frequency std 1 / (sigma_j (hi_j - lo_j)) per coordinate, within 3% (20 000 draws)
    np.testing.assert_allclose(rff.operator.to_dense().std(axis=1), [1.0, 1 / (0.25 * 10)], rtol=0.03)
    race = make_box_map("race", lo, hi, n_hashes=20_000, width=[0.1, 0.5], random_state=0)
    np.testing.assert_allclose(race.operator.to_dense().std(axis=1), [10.0, 1 / (0.5 * 10)], rtol=0.03)
    with pytest.raises(ValueError, match="sigma must be a positive finite number or 2"):
        make_box_map("real", lo, hi, sigma=[1.0, 0.0])
    with pytest.raises(ValueError, match="width must be a positive finite number or 2"):
        make_box_map("race", lo, hi, width=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="no box form"):
        make_box_map("quadratic", lo, hi)
