"""The published DP random-feature model (pysketch.rfm.published; notes seed004 sec. 2, 5.4, 5.6):
the paper's formulas, the unit conversion of Lemma 6, the expected test MSE in closed form,
a counter-example to Lemma 6 on worst-case neighbours, and Table 1 (data-gated)."""

import csv
import math
import os
import time

import numpy as np
import pytest

from pysketch.privacy import PrivacyLeakWarning
from pysketch.privacy.mechanisms import analytic_gaussian_sigma
from pysketch.rfm import RandomFeatures
from pysketch.rfm import published as P
from pysketch.rfm.solvers import min_norm

LN = math.log(1.25e5)  # ln(1.25 / 1e-5)


# ---------------------------------------------------------------- the paper's formulas


@pytest.mark.parametrize("N", [1000, 2000, 4000, 10_000])
def test_paper_sensitivity_and_sigma_exact(N):
    assert P.paper_sensitivity(N, 3 / 8) == pytest.approx(4 / math.sqrt(N), rel=1e-14)
    for eta in (0.1, 0.25, 3 / 8, 0.49):
        assert P.paper_sensitivity(N, eta) == pytest.approx(2 / math.sqrt(N * (1 - 2 * eta)), rel=1e-14)
        for eps in (0.25, 0.5, 1.0, 2.0):  # the paper's formula at any epsilon
            s2 = P.paper_sigma(N, eta, eps, 1e-5) ** 2
            assert s2 == pytest.approx(8 * LN / (N * eps ** 2 * (1 - 2 * eta)), rel=1e-13)
            # Algorithm 1 is stated for the unit-modulus matrix: Lemma 6 in those units is the same number
            assert P.minnorm_sensitivity(N, eta, layout="unit_modulus") == pytest.approx(
                P.paper_sensitivity(N, eta), rel=1e-14)


def test_375_number_and_notes_table():
    # notes 5.6: 2 ln(1.25e5) Delta^2 / eps^2 = 375.5 / (N eps^2) at eta = 3/8, delta = 1e-5
    assert 2 * LN * 16 == pytest.approx(375.5, abs=0.06)
    table = {(1500, 1.0): 0.250, (2000, 1.0): 0.188, (4000, 1.0): 0.094, (10_000, 1.0): 0.038,
             (2000, 0.5): 0.751, (5000, 0.5): 0.300, (2000, 0.25): 3.00, (10_000, 0.25): 0.60}
    for (N, eps), value in table.items():
        added = P.expected_test_mse(0.0, 1.0, P.paper_sigma(N, 3 / 8, eps, 1e-5))
        assert added == pytest.approx(375.5 / (N * eps ** 2), rel=2e-4)
        assert added == pytest.approx(value, rel=2e-3, abs=5e-4)  # the notes round to 3 digits


# ---------------------------------------------------------------- units of Lemma 6


@pytest.mark.parametrize("N", [500, 2000, 10_000])
@pytest.mark.parametrize("eta", [0.1, 3 / 8])
def test_lemma6_unit_conversion_exact_factors(N, eta):
    um = P.minnorm_sensitivity(N, eta, layout="unit_modulus", label_norm=0.7)
    cos = P.minnorm_sensitivity(N, eta, layout="cos", label_norm=0.7)
    raw = P.minnorm_sensitivity(N, eta, layout="raw_cos", label_norm=0.7)
    assert cos == pytest.approx(2 * 0.7 / math.sqrt(1 - 2 * eta), rel=1e-14)  # N-independent
    assert cos == pytest.approx(math.sqrt(N) * um, rel=1e-14)  # the code's error: sqrt(N), exactly
    assert raw == pytest.approx(math.sqrt(2) * um, rel=1e-14)  # the cosine layout's sqrt(2) ...
    assert cos == pytest.approx(math.sqrt(N / 2) * raw, rel=1e-14)  # ... cancels against sqrt(2/N) (notes 6.6)
    assert P.minnorm_sensitivity(N, eta, layout="unit") == P.minnorm_sensitivity(N, eta, layout="cos")
    # output perturbation: Lemma 6 noise on 'cos' features is exactly sqrt(N) x the paper's (same classical formula)
    coef = np.zeros(8)
    with pytest.warns(PrivacyLeakWarning):
        _, paper = P.output_perturbation(coef, 0.5, 1e-5, n_frequencies=N, eta=eta, calibration="paper",
                                         insecure_seed=1)
    _, faithful = P.output_perturbation(coef, 0.5, 1e-5, n_frequencies=N, eta=eta, mechanism="classical",
                                        insecure_seed=1)
    assert faithful["sensitivity"] == pytest.approx(math.sqrt(N) * paper["sensitivity"], rel=1e-14)
    # the Gaussian class enlarges Delta by the grid rounding, sqrt(D) 2^-30 relative at most
    assert faithful["sigma"] == pytest.approx(math.sqrt(N) * paper["sigma"], rel=1e-8)
    assert faithful["sigma"] >= math.sqrt(N) * paper["sigma"]


def test_units_empirically_cos_gram_matches_unit_modulus_gram():
    # the Gram that Lemma 6 bounds: A A^* / N for unit-modulus features and F F^T for the 'cos' layout
    # approximate the same kernel matrix, so the min-norm norms differ by sqrt(N) (notes 2.4 item 4)
    rng = np.random.default_rng(5)
    m, d, N, std = 40, 3, 20_000, 6.0
    X = rng.uniform(0, 1, (m, d))
    y = rng.uniform(-1, 1, m)
    y /= np.linalg.norm(y)
    rf = RandomFeatures(d, N, frequency_std=std, layout="cos", random_state=3)
    F = rf.transform(X)
    Omega = rng.normal(0, std, (d, N))
    A = np.exp(1j * (X @ Omega))
    lam_cos = np.linalg.eigvalsh(F @ F.T)[0]
    lam_um = np.linalg.eigvalsh(A @ A.conj().T / N)[0]
    assert lam_cos == pytest.approx(lam_um, rel=0.1)
    c_cos = F.T @ np.linalg.solve(F @ F.T, y)
    c_um = A.conj().T @ np.linalg.solve(A @ A.conj().T, y)
    assert np.linalg.norm(c_cos) / np.linalg.norm(c_um) == pytest.approx(math.sqrt(N), rel=0.1)
    # and the Lemma 6 norm bound ||c|| <= ||y|| / sqrt(lambda_min) in each layout's own units
    assert np.linalg.norm(c_cos) <= 1 / math.sqrt(lam_cos) + 1e-9
    assert np.linalg.norm(c_um) <= 1 / math.sqrt(N * lam_um) + 1e-9


# ---------------------------------------------------------------- labels, conditions


def test_scale_labels_public_bounds():
    y = np.array([0.2, -3.0, 0.5, 2.5, -0.1])
    with pytest.warns(RuntimeWarning, match="2 of 5 labels"):
        ys, clipped = P.scale_labels(y, 1.0, n_max=10)
    assert clipped == 2
    np.testing.assert_allclose(ys, np.clip(y, -1, 1) / math.sqrt(10))
    assert np.linalg.norm(P.scale_labels(np.full(10, 7.0), 7.0, 10)[0]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="n_max"):
        P.scale_labels(np.zeros(11), 1.0, 10)
    with pytest.raises(ValueError, match="label_bound"):
        P.scale_labels(y, 0.0, 10)


def test_check_conditions_marchenko_pastur_and_eigenvalue():
    rng = np.random.default_rng(0)
    m, d = 100, 4
    X = rng.uniform(0, 1, (m, d))
    ok = P.check_conditions(RandomFeatures(d, 4 * m + 50, frequency_std=200.0, random_state=1).transform(X),
                            4 * m + 50, m, 3 / 8, data_scale=1.0, frequency_std=200.0)
    assert ok["ok"] and ok["mp_rule_ok"] and ok["eigen_ok"] and ok["bandwidth_ok"] and not ok["releasable"]
    assert ok["mp_min_frequencies"] == pytest.approx(4 * m)  # eta = 3/8 needs N >= 4m
    assert ok["lambda_min"] == pytest.approx(ok["mp_lambda_min"], abs=0.08)  # Wishart-like edge
    F = RandomFeatures(d, 150, frequency_std=200.0, random_state=1).transform(X)
    with pytest.warns(RuntimeWarning, match="must not be released"):
        bad = P.check_conditions(F, 150, m, 3 / 8)
    assert not bad["eigen_ok"] and not bad["mp_rule_ok"] and bad["implied_eta"] > 3 / 8
    # the Gram form gives the same report
    with pytest.warns(RuntimeWarning):
        bad2 = P.check_conditions(F @ F.T, 150, m, 3 / 8, kind="gram")
    assert bad2["lambda_min"] == pytest.approx(bad["lambda_min"], rel=1e-8)
    # a wide kernel (gamma^2 sigma^2 small) fails the bandwidth condition
    with pytest.warns(RuntimeWarning, match="bandwidth_ok"):
        P.check_conditions(F, 150, m, 3 / 8, data_scale=1.0, frequency_std=2.0)
    with pytest.raises(ValueError, match="eta"):
        P.check_conditions(F, 150, m, 0.5)


def test_lemma6_fails_on_worst_case_neighbours():
    # Lemma 6 is not worst case: two records almost on top of each other with opposite labels force a huge
    # min-norm interpolant; replacing one of them by a far record gives a modest one. ||y|| <= 1 holds and
    # N = 20 m satisfies the Marchenko-Pastur rule, yet ||c(D) - c(D')|| exceeds the 'cos' bound by far.
    rng = np.random.default_rng(1)
    m, d, N = 10, 2, 200
    X = rng.uniform(0, 1, (m, d))
    X[1] = X[0] + 1e-3
    y = np.zeros(m)
    y[0], y[1] = 0.5, -0.5
    rf = RandomFeatures(d, N, frequency_std=10.0, random_state=2)
    F = rf.transform(X)
    X2 = X.copy()
    X2[1] = [5.0, 5.0]
    F2 = rf.transform(X2)
    c1, c2 = min_norm(F, y, "pinv")[0], min_norm(F2, y, "pinv")[0]
    bound = P.minnorm_sensitivity(N, 3 / 8, layout="cos", label_norm=1.0)
    assert np.linalg.norm(y) <= 1 and N >= 4 * m
    gap = np.linalg.norm(c1 - c2)
    assert gap > 10 * bound, (gap, bound)
    with pytest.warns(RuntimeWarning, match="eigen_ok"):
        rep = P.check_conditions(F, N, m, 3 / 8)
    assert rep["mp_rule_ok"] and not rep["eigen_ok"]  # the diagnostic catches it


# ---------------------------------------------------------------- output perturbation


def test_output_perturbation_records_and_warnings():
    coef = np.linspace(-1, 1, 50)
    with pytest.warns(PrivacyLeakWarning, match="NOT differentially private"):
        noisy, rec = P.output_perturbation(coef, 1.0, 1e-5, n_frequencies=50, calibration="paper", insecure_seed=0)
    assert rec["guarantee"] == "none" and rec["mechanism"] == "classical"
    assert rec["sigma"] == pytest.approx(P.paper_sigma(50, 3 / 8, 1.0, 1e-5))
    assert rec["neighbouring"] == "replace or remove" and not rec["secure_noise"]
    assert rec["noise_covariance"] == pytest.approx(rec["sigma"] ** 2)
    noisy, rec = P.output_perturbation(coef, 2.0, 1e-5, n_frequencies=50, insecure_seed=0)
    assert rec["guarantee"] == "conditional" and rec["mechanism"] == "analytic" and rec["calibration"] == "lemma6"
    assert rec["sensitivity"] == pytest.approx(4.0)
    assert rec["sigma"] == pytest.approx(analytic_gaussian_sigma(2.0, 1e-5, 4.0), rel=1e-8)
    assert noisy.shape == coef.shape and not np.array_equal(noisy, coef)
    # reproducible only with the insecure seed
    a = P.output_perturbation(coef, 2.0, 1e-5, n_frequencies=50, insecure_seed=3)[0]
    b = P.output_perturbation(coef, 2.0, 1e-5, n_frequencies=50, insecure_seed=3)[0]
    assert np.array_equal(a, b)
    assert P.output_perturbation(coef, 2.0, 1e-5, n_frequencies=50)[1]["secure_noise"]


@pytest.mark.parametrize("kwargs, match", [
    (dict(eta=0.5), "eta"), (dict(eta=0.0), "eta"), (dict(eta=-0.1), "eta"),
    (dict(calibration="fast"), "calibration"), (dict(layout="complex"), "layout"),
    (dict(mechanism="laplace"), "mechanism"), (dict(label_norm=0.0), "label_norm"),
    (dict(n_frequencies=0), "n_frequencies"), (dict(calibration="paper", mechanism="analytic"), "mechanism"),
])
def test_output_perturbation_bad_arguments(kwargs, match):
    args = dict(n_frequencies=10)
    args.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        P.output_perturbation(np.zeros(10), 0.5, 1e-5, **args)


def test_output_perturbation_bad_privacy_parameters():
    with pytest.raises(ValueError, match="epsilon"):
        P.output_perturbation(np.zeros(3), 0.0, 1e-5, n_frequencies=3)
    with pytest.raises(ValueError, match="delta"):
        P.output_perturbation(np.zeros(3), 1.0, 0.0, n_frequencies=3)
    with pytest.raises(ValueError, match="epsilon < 1"):  # classical calibration only below 1
        P.output_perturbation(np.zeros(3), 1.0, 1e-5, n_frequencies=3, mechanism="classical")
    with pytest.raises(ValueError, match="coef"):
        P.output_perturbation(np.zeros((3, 2)), 0.5, 1e-5, n_frequencies=3)


# ---------------------------------------------------------------- expected test MSE (notes 5.6)


def _regression(seed=0, m=200, n_test=300, d=3, N=600, std=8.0):
    rng = np.random.default_rng(seed)
    X, Xt = rng.uniform(0, 1, (m, d)), rng.uniform(0, 1, (n_test, d))
    f = lambda Z: np.sin(3 * Z[:, 0]) + Z[:, 1] ** 2  # noqa: E731
    rf = RandomFeatures(d, N, frequency_std=std, random_state=seed)
    y = f(X) / (2 * math.sqrt(m))  # public bound |f| <= 2, n_max = m: ||y|| <= 1
    F, Ft = rf.transform(X), rf.transform(Xt)
    coef = min_norm(F, y, "cholesky")[0]
    yt = f(Xt) / (2 * math.sqrt(m))
    return coef, Ft, yt, N


@pytest.mark.parametrize("calibration, eps", [("paper", 1.0), ("paper", 0.5), ("lemma6", 1.0), ("gamma", 1.0)])
def test_expected_test_mse_closed_form_monte_carlo(calibration, eps):
    coef, Ft, yt, N = _regression()
    mse_np = float(np.mean((Ft @ coef - yt) ** 2))
    msq = float(np.mean(np.sum(Ft ** 2, axis=1)))
    reps = 40
    mses = []
    for r in range(reps):
        if calibration == "gamma":
            from pysketch.rfm.baselines import gamma_output_perturbation
            noisy, rec = gamma_output_perturbation(coef, eps, n_frequencies=N, insecure_seed=100 + r)
        elif calibration == "paper":
            with pytest.warns(PrivacyLeakWarning):
                noisy, rec = P.output_perturbation(coef, eps, 1e-5, n_frequencies=N, calibration="paper",
                                                   insecure_seed=100 + r)
        else:
            noisy, rec = P.output_perturbation(coef, eps, 1e-5, n_frequencies=N, insecure_seed=100 + r)
        mses.append(np.mean((Ft @ noisy - yt) ** 2))
    if calibration == "gamma":
        expected = P.expected_test_mse_gamma(mse_np, msq, rec["sensitivity"], eps, N)
        assert expected - mse_np == pytest.approx((N + 1) * 16 / eps ** 2 * msq)  # ~16/eps^2 (notes 5.6)
    else:
        expected = P.expected_test_mse(mse_np, msq, rec["sigma"])
    if calibration == "paper":
        assert expected - mse_np == pytest.approx(375.5 / (N * eps ** 2) * msq, rel=2e-4)
    assert np.mean(mses) == pytest.approx(expected, rel=0.10)


# ---------------------------------------------------------------- Table 1 (data-gated)

DATA = os.environ.get("PYSKETCH_DPRFM_DATA")

TABLE1 = {  # notes 5.4: paper's Table 1 (epsilon = 1, delta = 1e-5)
    ("medical", "pinv"): [0.39, 0.19, 0.14, 0.12, 0.11],
    ("medical", "kaczmarz"): [0.29, 0.17, 0.14, 0.12, 0.11],
    ("wine", "pinv"): [0.79, 0.41, 0.33, 0.30, 0.31],
    ("wine", "kaczmarz"): [0.52, 0.39, 0.35, 0.32, 0.32],
}
TABLE1_N = [2000, 4000, 6000, 8000, 10_000]


def _minmax(a):
    lo, hi = a.min(axis=0), a.max(axis=0)
    return (a - lo) / np.where(hi > lo, hi - lo, 1.0)


def load_medical(folder):
    """insurance.csv: min-max age, bmi, children and the label; one-hot sex, smoker, region (d = 11)."""
    with open(os.path.join(folder, "insurance.csv"), newline="") as fh:
        rows = list(csv.DictReader(fh))
    num = _minmax(np.array([[float(r[k]) for k in ("age", "bmi", "children")] for r in rows]))
    cats = []
    for k in ("sex", "smoker", "region"):
        levels = sorted({r[k] for r in rows})
        cats.append(np.array([[float(r[k] == v) for v in levels] for r in rows]))
    y = _minmax(np.array([float(r["charges"]) for r in rows])[:, None])[:, 0]
    return np.hstack([num] + cats), y


def load_wine_red(folder):
    """winequality-red.csv: every column min-maxed; the label is quality."""
    with open(os.path.join(folder, "winequality-red.csv"), newline="") as fh:
        data = np.array([[float(v) for v in r] for r in list(csv.reader(fh, delimiter=";"))[1:]])
    data = _minmax(data)
    return data[:, :-1], data[:, -1]


def table1_row(X, y, method, N, reps, seed):
    """Mean test MSE over `reps` (split, features, solver, noise) draws of the paper's setup:
    90/10 split, std-40 'cos' features, min-norm by `method` (Kaczmarz: m_train iterations),
    calibration='paper' at epsilon = 1, delta = 1e-5, eta = 3/8."""
    rng = np.random.default_rng(seed)
    out, secs = [], []
    for r in range(reps):
        perm = rng.permutation(X.shape[0])
        n_test = int(math.ceil(0.1 * X.shape[0]))
        te, tr = perm[:n_test], perm[n_test:]
        rf = RandomFeatures(X.shape[1], N, frequency_std=40.0, random_state=rng)
        F, Ft = rf.transform(X[tr]), rf.transform(X[te])
        t0 = time.perf_counter()
        coef = min_norm(F, y[tr], method, n_iter=len(tr) if method == "kaczmarz" else None, random_state=rng)[0]
        secs.append(time.perf_counter() - t0)
        with pytest.warns(PrivacyLeakWarning):
            noisy, _ = P.output_perturbation(coef, 1.0, 1e-5, n_frequencies=N, eta=3 / 8, calibration="paper")
        out.append(float(np.mean((Ft @ noisy - y[te]) ** 2)))
    return float(np.mean(out)), float(np.mean(secs))


@pytest.mark.skipif(not (DATA and os.path.exists(os.path.join(DATA, "insurance.csv"))
                         and os.path.exists(os.path.join(DATA, "winequality-red.csv"))),
                    reason="set PYSKETCH_DPRFM_DATA to a folder with insurance.csv and winequality-red.csv")
@pytest.mark.parametrize("method", ["kaczmarz", "pinv"])
@pytest.mark.parametrize("dataset", ["medical", "wine"])
def test_table1_reproduced_in_paper_mode(dataset, method):
    X, y = (load_medical if dataset == "medical" else load_wine_red)(DATA)
    reps = int(os.environ.get("PYSKETCH_DPRFM_REPS", "10"))  # the paper averages 10 runs
    measured = [table1_row(X, y, method, N, reps, seed=i)[0] for i, N in enumerate(TABLE1_N)]
    paper = TABLE1[(dataset, method)]
    # pinv at N = 2000 (N / m_train = 1.4-1.7) sits near the interpolation peak, where the exact min-norm
    # fit's test error is heavy-tailed over splits: with fewer than the paper's 10 runs it can miss (wine:
    # 0.70 over 5 reps, 0.785 over 2; 0.762 over 10 in benchmarks/quality/rfm_quality.py --parts table1)
    assert np.all(np.abs(np.array(measured) - paper) <= 0.05), (measured, paper)
