"""Issue 37, small data: M2M answers that respect what is public (all post-processing).

The case of the issue: scikit-learn's diabetes table (442 rows, 10 attributes and the
target, every value in the public box [0, 400]) sketched with HIST (100 bins per column)
and released at epsilon = 1. Before: the count got epsilon 0.003 (noise scale 308), the
released counts were off by hundreds, means left the box, histogram fractions were negative
and summed to 0.6, and nothing warned. Checked here: the count's share from the map's own
noise (nsr.budget_split_one_hot), n pooled from the count and every block's total
(pooled_count), every answer inside what is possible, and NoisyAnswerWarning.
"""

import math
import warnings

import numpy as np
import pytest

from pysketch.cli import main
from pysketch.features import make_box_map
from pysketch.m2m import M2M, Domain, NoisyAnswerWarning, pooled_count
from pysketch.m2m.core import NOISE_WARNING_RATIO, _project_simplex
from pysketch.privacy import make_private, nsr
from pysketch.privacy.release import plan_release

BOX = (0.0, 400.0)


@pytest.fixture(scope="module")
def diabetes():
    datasets = pytest.importorskip("sklearn.datasets")
    b = datasets.load_diabetes(scaled=False)
    X = np.column_stack([b.data, b.target])
    assert X.shape == (442, 11) and X.min() >= BOX[0] and X.max() <= BOX[1]
    return X


@pytest.fixture(scope="module")
def hist442(diabetes):
    lo, hi = np.full(11, BOX[0]), np.full(11, BOX[1])
    fm = make_box_map("hist", lo, hi)
    return fm, fm.sketch(diabetes), Domain(lo, hi)


# ------------------------------------------------------------------ the count's share


def test_one_hot_split_gives_the_count_a_share_from_the_maps_own_noise():
    # the map: 11 blocks of 100 cells; the Fourier rule gave the count 0.3 % of epsilon
    old = 1.0 - plan_release(1100, 1.0).split
    assert old < 0.004
    share = 1.0 - nsr.budget_split_one_hot(11, 1100, 1.0)
    assert share > 6 * old
    # large n: gamma / (1 - gamma) -> (m k sqrt(w))^(1/3) (the derivation in the docstring)
    g = nsr.budget_split_one_hot(11, 1100, 1.0, 1e12)
    assert g / (1 - g) == pytest.approx((1100 * 11 * 10) ** (1 / 3), rel=1e-4)
    # the count's share grows as the public lower bound on n falls, towards 1/2
    shares = [1.0 - nsr.budget_split_one_hot(11, 1100, 1.0, n) for n in (1e6, 1e4, 442, 50, 2)]
    assert all(a < b for a, b in zip(shares, shares[1:])) and 0.4 < shares[-1] <= 0.5
    # the Gaussian mechanism: a share too, larger than the Fourier rule's
    assert 1.0 - nsr.budget_split_one_hot(11, 1100, 1.0, delta=1e-5, mechanism="gaussian") > 0.01


def test_make_private_uses_the_one_hot_split_and_the_public_lower_bound(hist442):
    fm, sk, _ = hist442
    p = make_private(sk, 1.0, insecure_seed=0)
    assert p.privacy["epsilon_count"] == pytest.approx(1.0 - nsr.budget_split_one_hot(11, 1100, 1.0), rel=1e-9)
    p = make_private(sk, 1.0, n_lower=100, insecure_seed=0)
    assert p.privacy["epsilon_count"] == pytest.approx(1.0 - nsr.budget_split_one_hot(11, 1100, 1.0, 100),
                                                       rel=1e-9)
    # a given split is kept; replace keeps the whole epsilon for the sum
    assert make_private(sk, 1.0, split=0.9, insecure_seed=0).privacy["epsilon_count"] == pytest.approx(0.1)
    assert make_private(sk, 1.0, neighbouring="replace", insecure_seed=0).privacy["epsilon_count"] == 0.0
    # a Fourier map keeps the Fourier rule
    rff = make_box_map("real", np.zeros(2), np.ones(2), random_state=0)
    q = make_private(rff.sketch(np.full((10, 2), 0.5)), 1.0, insecure_seed=0)
    assert q.privacy["epsilon_count"] == pytest.approx(1.0 - plan_release(rff.m, 1.0).split, rel=1e-9)


@pytest.mark.parametrize("args, kwargs, name", [
    ((0, 10, 1.0), {}, "n_blocks"), ((11, 5, 1.0), {}, "m"), ((11, 1100, -1.0), {}, "epsilon"),
    ((11, 1100, 1.0, 0), {}, "n"), ((11, 1100, 1.0), {"mechanism": "cauchy"}, "mechanism"),
    ((11, 1100, 1.0), {"mechanism": "gaussian"}, "delta")])
def test_one_hot_split_rejects_bad_arguments_by_name(args, kwargs, name):
    with pytest.raises(ValueError, match=name):
        nsr.budget_split_one_hot(*args, **kwargs)


def test_make_private_names_a_bad_n_lower_for_a_one_hot_map(hist442):
    with pytest.raises(ValueError, match="n_lower"):
        make_private(hist442[1], 1.0, n_lower=0.5, insecure_seed=0)


# ------------------------------------------------------------------ n pooled


def test_pooled_count_is_the_inverse_variance_mean_of_the_count_and_the_block_totals(hist442):
    fm, sk, _ = hist442
    assert pooled_count(sk) == (442.0, 0.0, [("count", 442.0, 0.0)])
    assert pooled_count(make_private(sk, 1.0, neighbouring="replace", insecure_seed=1))[:2] == (442.0, 0.0)
    p = make_private(sk, 1.0, insecure_seed=1)
    n_hat, var, parts = pooled_count(p)
    assert len(parts) == 1 + 11
    q = math.exp(-p.privacy["epsilon_count"])
    v_count = 2 * q / (1 - q) ** 2  # the discrete Laplace variance of scale 1 / epsilon_count
    v_block = 100 * p.privacy.sum_noise_variance
    totals = p.sum.reshape(11, 100).sum(axis=1)
    expected = (p.count / v_count + totals.sum() / v_block) / (1 / v_count + 11 / v_block)
    assert n_hat == pytest.approx(expected, rel=1e-12)
    assert var == pytest.approx(1 / (1 / v_count + 11 / v_block), rel=1e-12)


def test_pooled_count_is_unbiased_with_its_stated_variance(hist442):
    fm, sk, _ = hist442
    est, var = [], None
    for seed in range(300):
        n_hat, var, _ = pooled_count(make_private(sk, 1.0, insecure_seed=seed))
        est.append(n_hat)
    est = np.array(est)
    # mean within 4 standard errors of 442 (a false alarm below 1e-4)
    assert abs(est.mean() - 442) < 4 * math.sqrt(var / est.size)
    # the sample variance of 300 draws is within [0.75, 1.3] of the truth with probability
    # above 0.999 (chi-square with 299 degrees of freedom; the Laplace tails widen it a
    # little: over 20 other runs of 300 the ratio was 0.88-1.16 and the mean's z-score
    # -2.3-1.3)
    assert 0.75 < est.var(ddof=1) / var < 1.3
    # and it is a better estimate than the count alone (whose variance is at least 2x)
    q = math.exp(-make_private(sk, 1.0, insecure_seed=0).privacy["epsilon_count"])
    assert 2 * q / (1 - q) ** 2 > 2 * var


def test_m2m_divides_by_the_pooled_count(hist442):
    fm, sk, dom = hist442
    p = make_private(sk, 1.0, insecure_seed=3)
    m = M2M(dom, n_synthetic=5000, random_state=0).fit(p)
    n_hat, var, _ = pooled_count(p)
    assert m.count_ == n_hat and m.count_std_ == pytest.approx(math.sqrt(var)) and m.released_count_ == p.count
    np.testing.assert_allclose(m.mean_sketch_, p.sum / n_hat)


def test_pooled_count_of_a_race_sketch_uses_every_hash(diabetes):
    fm = make_box_map("race", np.full(11, BOX[0]), np.full(11, BOX[1]), n_hashes=20, n_buckets=20, random_state=0)
    p = make_private(fm.sketch(diabetes), 1.0, insecure_seed=5)
    n_hat, var, parts = pooled_count(p)
    assert len(parts) == 21 and all(v == 20 * p.privacy.sum_noise_variance for _, _, v in parts[1:])
    assert var < parts[0][2]


# ------------------------------------------------------------------ answers inside what is possible


def _answers(m):
    """Every kind of answer of one fitted M2M, as (name, value) pairs."""
    return dict(
        mean=m.mean(), moments=m.moments((0, 1, 2, 3)), covariance=m.covariance(),
        cdf=m.cdf(10, [-5, 0, 50, 100, 150, 200, 250, 300, 350, 400, 500]),
        histogram=m.histogram(10, np.linspace(0, 400, 9)),
        partial_histogram=m.histogram(10, [100, 200, 300]),
        wide_histogram=m.histogram(10, [-100, -50, 0, 200, 400]),
        queries=m.counting_queries([[0] * 11, [-np.inf] * 11, [500] * 11] + [[0] * 10 + [t] for t in range(0, 400, 25)],
                                   [[400] * 11, [np.inf] * 11, [600] * 11] + [[400] * 10 + [t + 60] for t in
                                                                              range(0, 400, 25)]),
    )


def _check_possible(a):
    lo, hi = BOX
    assert ((a["mean"] >= lo) & (a["mean"] <= hi)).all()
    mom = a["moments"]
    assert (mom[0] == 1).all()
    for k in (1, 2, 3):
        assert ((mom[k] >= lo ** k) & (mom[k] <= hi ** k)).all()
    C = a["covariance"]
    assert np.array_equal(C, C.T) and np.linalg.eigvalsh(C).min() >= -1e-9 * max(1.0, np.abs(C).max())
    mu = a["mean"]
    assert (np.diag(C) <= (mu - lo) * (hi - mu) * (1 + 1e-12) + 1e-9).all()
    F = a["cdf"]
    assert F[0] == 0 and F[-2] == 1 and F[-1] == 1 and (np.diff(F) >= 0).all() and ((F >= 0) & (F <= 1)).all()
    h = a["histogram"]
    assert (h >= 0).all() and h.sum() == pytest.approx(1.0, abs=1e-12)
    assert (a["partial_histogram"] >= 0).all() and a["partial_histogram"].sum() <= 1 + 1e-12
    w = a["wide_histogram"]  # bins beyond the box hold nothing; the others sum to 1
    assert w[0] == 0 and w[1] == 0 and (w >= 0).all() and w.sum() == pytest.approx(1.0, abs=1e-12)
    q = a["queries"]
    assert q[0] == 1 and q[1] == 1 and q[2] == 0 and ((q >= 0) & (q <= 1)).all()


def test_the_442_row_case_gives_no_answer_outside_what_is_possible(hist442):
    fm, sk, dom = hist442
    m = M2M(dom, n_synthetic=20_000, keep_gram=True, random_state=0)
    outside_raw = 0
    for seed in range(8):
        p = make_private(sk, 1.0, insecure_seed=seed)
        (m.fit(p) if seed == 0 else m.refit(p))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NoisyAnswerWarning)
            _check_possible(_answers(m))
            raw_h = m.histogram(10, np.linspace(0, 400, 9), project=False)
            raw_F = m.cdf(10, [50, 100, 150, 200, 250, 300, 350, 400], project=False)
        outside_raw += (raw_h < 0).any() or abs(raw_h.sum() - 1) > 1e-6 or (np.diff(raw_F) < 0).any()
    assert outside_raw >= 4  # the unprojected answers do leave the possible set (so the checks bite)


def test_projections_are_the_nearest_possible_answers(hist442):
    """Exact values: weights set by hand make raw answers that need each projection."""
    fm, sk, dom = hist442
    m = M2M(dom, n_synthetic=2000, random_state=1).fit(sk)
    X = m.synthetic_
    col = X[:, 10]
    w = np.zeros(m.n_synthetic)
    # mass -0.1 below 100, +0.5 in [100, 200), +0.3 in [200, 300), +0.6 from 300: the raw CDF at
    # 100, 200, 300, 400 is -0.1, 0.4, 0.7, 1.3
    for (a, b), mass in zip(((0, 100), (100, 200), (200, 300), (300, 401)), (-0.1, 0.5, 0.3, 0.6)):
        inside = (col >= a) & (col < b)
        w[inside] = mass / inside.sum()
    m.weights_, m._sorted_cache = w, None
    t1, t2, t3 = (col[col < b].max() for b in (100, 200, 300))  # the last synthetic value below each bound
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a clean sketch never warns
        np.testing.assert_allclose(m.cdf(10, [t1, t2, t3], project=False), [-0.1, 0.4, 0.7], atol=1e-12)
        # isotonic regression of (-0.1, 0.4, 0.7) is itself; clipped to [0, 1]; 1 from the box's end
        np.testing.assert_allclose(m.cdf(10, [t1, t2, t3, 400]), [0.0, 0.4, 0.7, 1.0], atol=1e-12)
        # thresholds out of order: the projection is made over the sorted thresholds
        np.testing.assert_allclose(m.cdf(10, [t3, t1]), [0.7, 0.0], atol=1e-12)
        # histogram (-0.1, 0.5, 0.3, 0.6) onto the simplex: tau = 0.4 / 3 (the three positive
        # entries keep v - tau, summing to 1) -> (0, 0.5 - tau, 0.3 - tau, 0.6 - tau)
        tau = 0.4 / 3
        np.testing.assert_allclose(m.histogram(10, [0, 100, 200, 300, 400]), [0, 0.5 - tau, 0.3 - tau, 0.6 - tau],
                                   atol=1e-12)
        # bins that do not cover the box: at most 1 in all: (0.5, 0.3) is kept, (0.5, 0.3, 0.6) is
        # projected onto the simplex (tau = 0.1333...)
        np.testing.assert_allclose(m.histogram(10, [100, 200, 300]), [0.5, 0.3], atol=1e-12)
        np.testing.assert_allclose(m.histogram(10, [100, 200, 300, 400]), np.array([0.5, 0.3, 0.6]) - 0.4 / 3,
                                   atol=1e-12)
        # counting queries: clipped to [0, 1]
        np.testing.assert_allclose(m.counting_queries([0] * 10 + [100], [400] * 11, project=False), [1.4],
                                   atol=1e-12)
        np.testing.assert_allclose(m.counting_queries([0] * 10 + [100], [400] * 11), [1.0], atol=1e-12)
        np.testing.assert_allclose(m.counting_queries([0] * 10 + [0], [400] * 10 + [t1]), [0.0], atol=1e-12)
        np.testing.assert_allclose(m.counting_queries([0] * 10 + [300], [400] * 11), [0.6], atol=1e-12)
        # a box that holds the domain counts every record, whatever the weights (raw: 1.3)
        np.testing.assert_allclose(m.counting_queries([-1] * 11, [401] * 11), [1.0], atol=0)
        # moments: the raw mean of column 10 is clipped into [0, 400]
        w2 = np.where(col >= 300, 2.0 / (col >= 300).sum(), 0.0)
        m.weights_, m._sorted_cache = w2, None
        assert m.mean(project=False)[10] > 400 and m.mean()[10] == 400
        assert m.moments((2,), [10])[0, 0] == 400.0 ** 2
        # a raw CDF that falls (0.3, 0.1, 0.6): isotonic regression pools the first two to 0.2
        w3 = np.zeros(m.n_synthetic)
        for (a, b), mass in zip(((0, 100), (100, 200), (200, 300), (300, 401)), (0.3, -0.2, 0.5, 0.4)):
            inside = (col >= a) & (col < b)
            w3[inside] = mass / inside.sum()
        m.weights_, m._sorted_cache = w3, None
        np.testing.assert_allclose(m.cdf(10, [t1, t2, t3], project=False), [0.3, 0.1, 0.6], atol=1e-12)
        np.testing.assert_allclose(m.cdf(10, [t1, t2, t3]), [0.2, 0.2, 0.6], atol=1e-12)


def test_simplex_projection_satisfies_its_optimality_conditions():
    rng = np.random.default_rng(0)
    for _ in range(200):
        v = rng.normal(size=rng.integers(1, 20)) * rng.choice([0.1, 1, 10])
        total = float(rng.uniform(0.1, 3))
        p = _project_simplex(v, total, exact=True)
        assert (p >= 0).all() and p.sum() == pytest.approx(total, rel=1e-12)
        # KKT: v - p equals tau where p > 0, and is at most tau where p = 0
        tau = (v - p)[p > 0]
        assert np.ptp(tau) < 1e-12 * max(1.0, np.abs(v).max())
        assert ((v - p)[p == 0] <= tau[0] + 1e-12).all()
        q = _project_simplex(v, total, exact=False)
        if np.maximum(v, 0).sum() <= total:
            np.testing.assert_array_equal(q, np.maximum(v, 0))
        else:
            np.testing.assert_allclose(q, p)


# ------------------------------------------------------------------ the warning


def test_noise_std_is_the_spread_of_the_answers_over_releases(hist442, diabetes):
    fm, sk, dom = hist442
    m = M2M(dom, n_synthetic=20_000, keep_gram=True, random_state=0)
    raw, predicted = [], []
    for seed in range(150):
        p = make_private(sk, 1.0, insecure_seed=1000 + seed)
        (m.fit(p) if seed == 0 else m.refit(p))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NoisyAnswerWarning)
            raw.append(m.mean(project=False))
        if seed < 10:
            predicted.append(m.noise_std(lambda Z: Z))
    ratio = np.array(raw).std(axis=0, ddof=1) / np.mean(predicted, axis=0)
    # first order, without the (negative) correlation of the block totals with the answers:
    # over 10 other runs of 150 releases the mean ratio over the 11 columns was 0.91-0.99 and
    # single columns 0.72-1.13 (150 draws give a column's spread within about 12 %, 95 %)
    assert 0.75 < ratio.mean() < 1.1 and (ratio > 0.6).all() and (ratio < 1.3).all()
    assert m.noise_std(lambda Z: Z[:, 0]) == pytest.approx(m.noise_std(lambda Z: Z)[0])


def test_a_release_too_noisy_for_the_question_warns_with_the_figure(hist442):
    fm, sk, dom = hist442
    m = M2M(dom, n_synthetic=20_000, random_state=0).fit(make_private(sk, 0.5, insecure_seed=0))
    with pytest.warns(NoisyAnswerWarning, match=r"noise standard deviation above 0\.1 of their possible range; "
                                                r"the worst, order 1 of column \d+ \(range \[0, 400\]\): [0-9.]+ "
                                                r"against a range of 400"):
        mean = m.mean()
    std = m.noise_std(lambda Z: Z)
    assert (std > NOISE_WARNING_RATIO * 400).any() and ((mean >= 0) & (mean <= 400)).all()
    for ask in (lambda: m.histogram(10, np.linspace(0, 400, 9)), lambda: m.cdf(10, [100, 200, 300]),
                lambda: m.counting_queries([0] * 10 + [100], [400] * 10 + [200]), m.covariance):
        with pytest.warns(NoisyAnswerWarning):
            ask()


def test_no_warning_for_a_clean_sketch_or_a_large_release():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200_000, 3))
    fm = make_box_map("hist", np.zeros(3), np.ones(3), n_bins=20)
    dom = Domain(np.zeros(3), np.ones(3))
    for sk in (fm.sketch(X[:500]), make_private(fm.sketch(X), 1.0, insecure_seed=0)):
        m = M2M(dom, n_synthetic=5000, random_state=0).fit(sk)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            m.mean(), m.covariance(), m.cdf(0, [0.2, 0.5]), m.histogram(1, np.linspace(0, 1, 5))
            m.counting_queries([0.2, 0, 0], [0.6, 1, 1])


# ------------------------------------------------------------------ the command line


def test_cli_442_rows_stay_in_the_box_and_warn(diabetes, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    np.savetxt("diabetes.csv", diabetes, delimiter=",")
    assert main(["sketch", "diabetes.csv", "--map", "hist", "--bounds", "0", "400", "-o", "h.npz", "-q"]) == 0
    assert main(["privatize", "h.npz", "--epsilon", "0.5", "-o", "p.npz"]) == 0
    out = capsys.readouterr().out
    eps_count = float(out.split("epsilon_count:")[1].split()[0])
    assert eps_count == pytest.approx(0.5 * (1 - nsr.budget_split_one_hot(11, 1100, 0.5)), rel=1e-5)
    import json

    assert main(["query", "p.npz", "--n-synthetic", "20000", "mean", "-o", "mean.json"]) == 0
    captured = capsys.readouterr()
    assert "warning: the release is too noisy for this question" in captured.err
    answer = json.load(open("mean.json"))
    mean = np.array(answer["result"])
    assert ((mean >= 0) & (mean <= 400)).all() and answer["n_records_std"] > 0
    assert "records (estimated)" in captured.out
    assert main(["query", "p.npz", "--n-synthetic", "20000", "histogram", "--column", "10", "-o", "h.json",
                 "-q"]) == 0
    h = np.array(json.load(open("h.json"))["result"])
    assert (h >= 0).all() and h.sum() == pytest.approx(1.0, abs=1e-9)
    assert main(["query", "p.npz", "--n-synthetic", "20000", "--raw", "cdf", "--column", "10", "--at", "400",
                 "-o", "c.json", "-q"]) == 0
    assert json.load(open("c.json"))["result"][0] != 1.0  # --raw: the M2M estimate as it is
