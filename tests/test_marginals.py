"""Two-way marginal tables (features.MarginalMap), raking (m2m.raking) and the private
synopsis built on them (m2m.MarginalSynopsis)."""

import itertools
import pickle
import warnings

import numpy as np
import pytest

from pysketch.features import MarginalMap, make_box_map
from pysketch.m2m import raking
from pysketch.m2m.synopsis import MarginalSynopsis, fine_bins_for, marginal_bins
from pysketch.privacy import BudgetAccountant, make_private
from pysketch.privacy.sensitivity import sum_sensitivity


# ------------------------------------------------------------------ the map

def test_tables_are_numpy_histograms_for_every_pair():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 2, size=(3000, 4))
    lo, hi = np.full(4, -1.0), np.full(4, 2.0)
    fm = MarginalMap(lo, hi, n_bins=5)
    assert fm.n_pairs == 6 and fm.m == 6 * 25
    tables = fm.tables(fm.sketch(X).sum)
    for (i, j), t in zip(itertools.combinations(range(4), 2), tables):
        h, _, _ = np.histogram2d(X[:, i], X[:, j], bins=5, range=[[-1, 2], [-1, 2]])
        np.testing.assert_array_equal(t, h)


def test_given_edges_pairs_and_one_way_tables():
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(2000, 3))
    edges = [[0, 0.2, 1], [0, 0.5, 0.7, 0.9, 1], [0, 1]]
    fm = MarginalMap(np.zeros(3), np.ones(3), edges=edges, pairs=[(0, 1), (1, 2)])
    t01, t12 = fm.tables(fm.sketch(X).sum)
    np.testing.assert_array_equal(t01, np.histogram2d(X[:, 0], X[:, 1], bins=[edges[0], edges[1]])[0])
    np.testing.assert_array_equal(t12, np.histogram2d(X[:, 1], X[:, 2], bins=[edges[1], edges[2]])[0])
    one = MarginalMap(np.zeros(3), np.ones(3), edges=edges, order=1)
    for j, t in enumerate(one.tables(one.sketch(X).sum)):
        np.testing.assert_array_equal(t, np.histogram(X[:, j], bins=edges[j])[0])
    assert one.n_blocks == 3 and one.m == 2 + 4 + 1


def test_values_outside_the_box_go_to_the_edge_bins_with_a_warning():
    fm = MarginalMap(np.zeros(2), np.ones(2), n_bins=4)
    X = np.array([[-5.0, 0.5], [1.0, 9.0], [0.3, 0.3]])
    with pytest.warns(RuntimeWarning, match="2 record"):
        s = fm.sketch(X)
    (t,) = fm.tables(s.sum)
    assert t[0, 2] == 1 and t[3, 3] == 1 and t[1, 1] == 1 and t.sum() == 3


def test_sensitivity_is_the_number_of_tables_and_is_attained():
    fm = MarginalMap(np.zeros(4), np.ones(4), n_bins=3, pairs=[(0, 1), (0, 3), (2, 3)])
    assert sum_sensitivity(fm, norm=1) == 3
    assert sum_sensitivity(fm, norm=2) == pytest.approx(np.sqrt(3))
    assert sum_sensitivity(fm, norm=1, neighbouring="replace") == 6
    rng = np.random.default_rng(2)
    worst = 0.0
    for x in rng.uniform(-0.5, 1.5, size=(200, 4)):  # (outside the box too)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            worst = max(worst, np.abs(fm.sketch(x[None, :]).sum).sum())
    assert worst == 3


def test_state_round_trip_and_bad_arguments():
    fm = MarginalMap(np.zeros(3), np.ones(3), edges=[[0, 0.4, 1], [0, 1], [0, 0.1, 0.2, 1]], pairs=[(0, 2)])
    twin = pickle.loads(pickle.dumps(fm))
    assert twin == fm and twin.tables(np.arange(fm.m))[0].shape == (2, 3)
    assert make_box_map("marginals", np.zeros(2), np.ones(2), n_bins=3) == MarginalMap(np.zeros(2), np.ones(2), 3)
    assert fm != MarginalMap(np.zeros(3), np.ones(3), edges=[[0, 0.4, 1], [0, 1], [0, 0.1, 0.2, 1]])
    with pytest.raises(ValueError, match="pairs"):
        MarginalMap(np.zeros(3), np.ones(3), pairs=[(1, 1)])
    with pytest.raises(ValueError, match="repeat"):
        MarginalMap(np.zeros(3), np.ones(3), pairs=[(0, 1), (0, 1)])
    with pytest.raises(ValueError, match=r"edges\[1\]"):
        MarginalMap(np.zeros(2), np.ones(2), edges=[[0, 1], [0, 0.5, 0.4, 1]])
    with pytest.raises(ValueError, match="order"):
        MarginalMap(np.zeros(2), np.ones(2), order=3)
    with pytest.raises(ValueError, match="MAX_MARGINAL_CELLS"):
        MarginalMap(np.zeros(3), np.ones(3), n_bins=1 << 13)


# ------------------------------------------------------------------ raking

def test_simplex_projection_is_the_euclidean_projection():
    rng = np.random.default_rng(3)
    for _ in range(50):
        v = rng.normal(size=7) * 3
        total = float(rng.uniform(0.5, 10))
        t = raking.simplex_projection(v, total)
        assert (t >= 0).all() and t.sum() == pytest.approx(total, rel=1e-12)
        # optimality (KKT): v - t is the same constant tau on the support and <= tau off it
        support = t > 0
        tau = (v - t)[support]
        assert np.ptp(tau) < 1e-9 and (v[~support] <= tau[0] + 1e-9).all()
        # and no random feasible point is closer
        for _ in range(20):
            p = rng.dirichlet(np.ones(7)) * total
            assert np.sum((v - p) ** 2) >= np.sum((v - t) ** 2) - 1e-9
    np.testing.assert_array_equal(raking.simplex_projection(np.array([3.0, -1.0]), 0.0), [0.0, 0.0])


def test_pool_weights_by_inverse_variance():
    n, v = raking.pool([100.0, 110.0, 90.0], [1.0, 4.0, 4.0])
    assert n == pytest.approx((100 + 110 / 4 + 90 / 4) / 1.5) and v == pytest.approx(1 / 1.5)
    assert raking.pool([100.0, 7.0], [4.0, 0.0]) == (7.0, 0.0)  # a noiseless estimate wins


def test_rake_matches_consistent_tables():
    # targets that some weighting of the records matches exactly: raking finds one
    rng = np.random.default_rng(4)
    cells = rng.integers(0, 4, size=(5000, 3))
    truth = rng.dirichlet(np.ones(5000))
    targets = [np.bincount(cells[:, p], weights=truth, minlength=4) for p in range(3)]
    w, sweeps, gap = raking.rake(cells, [4, 4, 4], targets, max_sweeps=500, tol=1e-13)
    assert (w >= 0).all() and w.sum() == pytest.approx(1.0)
    for p in range(3):
        np.testing.assert_allclose(np.bincount(cells[:, p], weights=w, minlength=4), targets[p], atol=1e-9)


def test_consistent_tables_agree_on_shared_attributes():
    rng = np.random.default_rng(5)
    pairs = np.array([(0, 1), (0, 2), (1, 2)])
    tables = [rng.normal(50, 20, size=(4, 4)) for _ in range(3)]
    out = raking.consistent_tables(pairs, tables, 800.0)
    for t in out:
        assert (t >= 0).all() and t.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(out[0].sum(axis=1), out[1].sum(axis=1), atol=1e-8)  # attribute 0
    np.testing.assert_allclose(out[0].sum(axis=0), out[2].sum(axis=1), atol=1e-8)  # attribute 1
    np.testing.assert_allclose(out[1].sum(axis=0), out[2].sum(axis=0), atol=1e-8)  # attribute 2
    # two tables that share one attribute meet at the average of their margins of it
    a, b = rng.uniform(1, 9, size=(3, 4)), rng.uniform(1, 9, size=(3, 2))
    out = raking.consistent_tables(np.array([(0, 1), (0, 2)]), [a, b], 1.0, noisy=False)
    np.testing.assert_allclose(out[0].sum(axis=1), 0.5 * (a.sum(1) / a.sum() + b.sum(1) / b.sum()), atol=1e-12)


# ------------------------------------------------------------------ the synopsis

def _discrete_table(n=4000, seed=6):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 5, n)
    b = np.clip(a + rng.integers(-1, 2, n), 0, 4)
    c = rng.integers(0, 3, n)
    return np.column_stack([a, b, c]).astype(float)


def test_clean_synopsis_answers_one_and_two_attribute_queries_exactly_on_integers():
    X = _discrete_table()
    syn = MarginalSynopsis((np.zeros(3), np.array([4.0, 4.0, 2.0])), integer=[0, 1, 2], n_bins=8,
                           random_state=0).fit(X)
    rng = np.random.default_rng(7)
    for _ in range(40):
        lo, hi = np.zeros(3), np.array([4.0, 4.0, 2.0])
        attrs = rng.choice(3, rng.integers(1, 3), replace=False)
        for a in attrs:
            lo[a], hi[a] = np.sort(rng.integers(0, 5 if a < 2 else 3, 2))
        truth = np.mean(np.all((X >= lo) & (X <= hi), axis=1))
        assert syn.counting_queries(lo, hi) == pytest.approx(truth, abs=1e-10)
    t = np.array([0, 1, 2, 3, 4, 3.5])
    np.testing.assert_allclose(syn.cdf(1, t), [np.mean(X[:, 1] <= v) for v in t], atol=1e-10)
    assert syn.count_ == X.shape[0] and syn.privacy_ is None
    np.testing.assert_allclose(syn.mean(), X.mean(axis=0), atol=0.02)  # (synthetic records: raked, 1e5)


def test_private_synopsis_respects_what_is_possible_and_charges_once():
    X = _discrete_table(n=500)
    box = (np.zeros(3), np.array([4.0, 4.0, 2.0]))
    acc = BudgetAccountant(epsilon=1.0)
    syn = MarginalSynopsis(box, epsilon=0.5, integer=[0, 1, 2], accountant=acc, random_state=1).fit(X)
    assert acc.history == [(0.5, 0.0, "MarginalSynopsis")]
    p = syn.privacy_["parts"]
    spent = p["count"]["epsilon"] + p["pilot"]["epsilon"] + p["tables"]["epsilon"]
    assert spent == pytest.approx(0.5, rel=1e-12) and p["pilot"]["sensitivity"] == 3
    rng = np.random.default_rng(8)
    L = np.tile(box[0], (200, 1))
    H = np.tile(box[1], (200, 1))
    for q in range(200):
        for a in rng.choice(3, 1 + q % 3, replace=False):
            L[q, a], H[q, a] = np.sort(rng.uniform(-1, 5, 2))
    ans = syn.counting_queries(L, H)
    assert ((ans >= 0) & (ans <= 1)).all()
    cdf = syn.cdf(0, np.linspace(-2, 6, 50))
    assert (np.diff(cdf) >= 0).all() and cdf[0] == 0 and cdf[-1] == 1
    assert syn.histogram(2, [-0.5, 0.5, 1.5, 2.5]).sum() == pytest.approx(1.0)
    mu = syn.mean()
    assert ((mu >= box[0]) & (mu <= box[1])).all()
    assert np.linalg.eigvalsh(syn.covariance()).min() >= -1e-12
    with pytest.raises(Exception, match="budget"):
        MarginalSynopsis(box, epsilon=0.6, accountant=acc).fit(X)


def test_private_synopsis_sees_the_dependence_that_hist_cannot():
    # two strongly correlated attributes: two-attribute boxes answered from the tables, against
    # M2M over HIST (sums of one-dimensional features) at the same epsilon. Measured: synopsis
    # MAE about 0.004-0.006, HIST about 0.07 (the noise of either is far below the gap).
    rng = np.random.default_rng(9)
    z = rng.normal(size=(20000, 1))
    X = np.clip(np.hstack([z, z + 0.3 * rng.normal(size=(20000, 1)), rng.normal(size=(20000, 1))]), -4, 4)
    box = (np.full(3, -4.0), np.full(3, 4.0))
    L = np.tile(box[0], (300, 1))
    H = np.tile(box[1], (300, 1))
    for q in range(300):
        L[q, :2], H[q, :2] = np.sort(rng.uniform(-2, 2, (2, 2)), axis=0)
    truth = np.array([np.mean(np.all((X >= lo) & (X <= hi), axis=1)) for lo, hi in zip(L, H)])
    syn = MarginalSynopsis(box, epsilon=1.0, random_state=0).fit(X)
    mae = np.mean(np.abs(syn.counting_queries(L, H) - truth))
    from pysketch.m2m import M2M, Domain

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fm = make_box_map("hist", *box)
        m2m = M2M(Domain(*box), n_synthetic=20000, random_state=0).fit(make_private(fm.sketch(X), 1.0))
        hist_mae = np.mean(np.abs(np.clip(m2m.counting_queries(L, H), 0, 1) - truth))
    assert mae < 0.02 < 0.04 < hist_mae, (mae, hist_mae)


def test_a_release_too_noisy_for_two_attribute_queries_warns_with_its_figures():
    from pysketch.m2m import NoisyAnswerWarning

    # under 'replace' n is public, so the figures are exact: a 2 x 2 table of 442 records (110
    # per cell) against Laplace noise of standard deviation 2 sqrt(2) 3 / (0.1 x 0.7) = 121
    X = _discrete_table(n=442)
    box = (np.zeros(3), np.array([4.0, 4.0, 2.0]))
    with pytest.warns(NoisyAnswerWarning, match=r"2 x 2 bins\) holds about 110 records against a noise standard "
                                                 r"deviation of 121"):
        MarginalSynopsis(box, epsilon=0.1, neighbouring="replace", random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoisyAnswerWarning)
        MarginalSynopsis(box, epsilon=10.0, random_state=0, n_synthetic=1000).fit(_discrete_table(n=20000))


def test_rules_and_bad_arguments():
    # n / b^2 = 6 x sqrt(2) P / epsilon: b = sqrt(3.3e5 / (6 x 21.27)) = 50.86
    assert marginal_bins(3.3e5, 0.665, 10) == 50
    assert marginal_bins(10, 1.0, 10) == 2 and marginal_bins(1e12, 1.0, 1) == 64
    assert fine_bins_for(23000, 0.285, 5) == 231
    assert fine_bins_for(100, 0.1, 5) == 16 and fine_bins_for(1e9, 1.0, 5) == 4096
    X = _discrete_table(n=50)
    with pytest.raises(ValueError, match="bounds are required"):
        MarginalSynopsis().fit(X)
    box = (np.zeros(3), np.full(3, 4.0))
    for kwargs, match in (({"pilot_share": 1.0}, "pilot_share"), ({"n_bins": 0}, "n_bins"),
                          ({"fine_bins": "many"}, "fine_bins"), ({"integer": [5]}, "integer"),
                          ({"n_lower": 0}, "n_lower"), ({"epsilon": -1.0}, "epsilon")):
        with pytest.raises((ValueError, TypeError), match=match):
            MarginalSynopsis(box, **kwargs).fit(X)
    syn = MarginalSynopsis(box, random_state=0, n_synthetic=1000).fit(X)
    with pytest.raises(ValueError, match="shape"):
        syn.counting_queries(np.zeros(2), np.ones(2))
    with pytest.raises(ValueError, match="column"):
        syn.cdf(3, [0.5])
    with pytest.raises(ValueError, match="not fitted"):
        MarginalSynopsis(box).cdf(0, [1.0])


def test_rake_survives_tables_whose_supports_do_not_meet():
    # noisy tables clipped at zero can disagree completely: table 0 puts all its mass on the
    # first record's cell, table 1 on the second's. No weighting matches both; raking must
    # still return weights (finite, >= 0, summing to 1) and report the mismatch in its gap
    cells = np.array([[0, 0], [1, 1]])
    w, sweeps, gap = raking.rake(cells, [2, 2], [np.array([1.0, 0.0]), np.array([0.0, 1.0])])
    assert np.isfinite(w).all() and (w >= 0).all() and w.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(w, [1.0, 0.0])  # table 0 was matched, table 1 could not be
    assert gap == pytest.approx(1.0)
