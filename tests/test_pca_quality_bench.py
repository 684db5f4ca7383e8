"""The PCA quality benchmark (benchmarks/quality/pca_quality.py): its quick CI mode end to
end, and its metric, preprocessing, streamed metric and target logic on hand-made data."""

import importlib.util
import math
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

from pysketch.datasets import low_rank_stream

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "quality", "pca_quality.py")


def _load_bench():
    spec = importlib.util.spec_from_file_location("_pca_quality_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pq = _load_bench()


def test_quick_mode_runs_and_prints_a_table():
    proc = subprocess.run([sys.executable, os.path.relpath(SCRIPT, ROOT), "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    out = proc.stdout
    # the table of the low-rank set: its title, the header with the epsilon grid, the rows
    assert re.search(r"^low_rank \(n = 2000, d = 64, k = 10\): median captured-variance ratio", out, re.M), out
    assert re.search(r"^method\s+eps=0\.1\s+eps=0\.3\s+eps=1\s+eps=3\s+eps=10\s+eps=inf$", out, re.M), out
    assert re.search(r"^exact\s+-.*\s1\.000/\d+\.\d\ds$", out, re.M), out          # exact PCA: ratio 1
    assert re.search(r"^laplace\s+0\.\d{3}/", out, re.M), out
    assert re.search(r"^analyze-gauss\s+0\.\d{3}/", out, re.M), out
    assert re.search(r"^low_rank targets: clean compressive >= 0\.99 (PASS|FAIL|n\.a\.)", out, re.M), out
    # the CI budget of the quick mode (a generous margin on a shared machine)


# ---------------------------------------------------------------------------------------
# Metric and preprocessing
# ---------------------------------------------------------------------------------------


def test_into_unit_ball_centres_and_rescales():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 7)) * 3 + 5
    Y = pq.into_unit_ball(X)
    norms = np.linalg.norm(Y, axis=1)
    assert np.allclose(Y.mean(axis=0), 0, atol=1e-12)
    assert norms.max() <= 1.0 and norms.max() >= 1 - 1e-12
    assert np.allclose(Y / norms.max(), (X - X.mean(0)) / np.linalg.norm(X - X.mean(0), axis=1).max())
    assert np.array_equal(X, X)   # the input is not modified (a copy is made)


def test_captured_ratio_is_one_for_the_top_eigenvectors_and_less_otherwise():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((400, 6)) * np.array([5, 4, 3, 1, 1, 1])
    C, top = pq.reference(X, 2)
    w, V = np.linalg.eigh(C)
    assert pq.captured_ratio(C, top, V[:, ::-1][:, :2].T) == pytest.approx(1.0, rel=1e-12)
    # the two smallest directions capture their own eigenvalues only
    assert pq.captured_ratio(C, top, V[:, :2].T) == pytest.approx(w[:2].sum() / w[-2:].sum(), rel=1e-12)


def test_check_basis():
    assert pq.check_basis(np.eye(3)[:2], 2, 3) == (True, None)
    assert not pq.check_basis(np.ones((2, 3)), 2, 3)[0]                 # not orthonormal
    assert not pq.check_basis(np.eye(3), 2, 3)[0]                       # wrong shape
    assert not pq.check_basis(np.full((2, 3), np.nan), 2, 3)[0]


def test_streamed_metric_matches_numpy():
    # d = 256, k = 5: the streamed numerator and Ritz values against the dense computation
    n, d, k = 3000, 256, 5
    stream = low_rank_stream(n, d, k, batch_size=700, random_state=3, dtype=np.float64)
    X = np.vstack(list(stream))
    C, top = pq.reference(X, k)
    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((d, k)) + np.linalg.eigh(C)[1][:, -k:])
    U = U.T
    ratio, num, ritz_top, rel_res, theta = pq.streamed_metric(stream, U, k)
    assert num == pytest.approx(np.trace(U @ C @ U.T), rel=1e-10)
    assert ritz_top == pytest.approx(top, rel=1e-10)
    assert ritz_top <= top * (1 + 1e-12)                    # Ritz values never exceed the eigenvalues
    assert np.allclose(theta, np.linalg.eigvalsh(C)[::-1][:k], rtol=1e-9)
    assert rel_res < 1e-5      # 4e-7 here: the vectors' error; the Ritz values' is about its square
    assert ratio == pytest.approx(pq.captured_ratio(C, top, U), rel=1e-9)
    # float32 batches (the --large stream) give the same to float32 accuracy
    stream32 = low_rank_stream(n, d, k, batch_size=700, random_state=3)
    assert pq.streamed_metric(stream32, U, k)[0] == pytest.approx(ratio, rel=1e-5)


def test_ag_largest_d_follows_the_budget():
    assert pq.ag_largest_d(512, 2 ** 15) == 2048            # 72 * 2048^2 = 302 MB, 4096^2 would be 1.2 GB
    assert pq.ag_largest_d(2048, 2 ** 15) == 4096
    assert pq.ag_largest_d(10 ** 9, 2 ** 15) == 2 ** 15
    assert pq.ag_largest_d(1e-5, 2 ** 15) == 1


def test_time_limit_interrupts_a_long_fit():
    if not hasattr(pq.signal, "setitimer"):
        pytest.skip("no setitimer on this platform")
    start = time.perf_counter()
    with pytest.raises(pq.FitTimeout):
        with pq.time_limit(0.2):
            while True:
                sum(range(1000))
    assert time.perf_counter() - start < 5
    with pq.time_limit(5):      # a block that ends in time is not interrupted
        pass


# ---------------------------------------------------------------------------------------
# Targets and the table on hand-made summaries
# ---------------------------------------------------------------------------------------


def _summ(median, cpu=1.0):
    return {"median": median, "cpu": cpu, "n_scored": 1, "n_fits": 1, "n_errors": 0, "n_timeouts": 0,
            "n_problems": 0}


def test_targets():
    inf = math.inf
    s = {("compressive", inf): _summ(0.995), ("compressive", 1.0): _summ(0.80), ("laplace", 1.0): _summ(0.70),
         ("wishart", 1.0): _summ(0.83), ("compressive", 0.1): _summ(0.20), ("laplace", 0.1): _summ(0.25)}
    got = pq.targets("low_rank", s, (0.1, 1.0, inf))
    assert got["clean compressive >= 0.99"] == "PASS"
    assert got["eps=1 compressive >= laplace"] == "PASS"
    assert got["eps=1 compressive >= wishart - 0.02"] == "FAIL"     # 0.80 < 0.81
    assert got["eps=0.1 compressive >= laplace"] == "FAIL"
    assert "eps=0.1 compressive >= wishart - 0.02" not in got       # only at epsilon >= 1
    real = pq.targets("digits", {("compressive", inf): _summ(0.96)}, (inf,))
    assert real == {"clean compressive >= 0.97": "FAIL"}
    assert pq.targets("digits", {}, (inf,)) == {"clean compressive >= 0.97": "n.a."}


def test_table_cells():
    lines = []
    s = {("exact", math.inf): _summ(1.0, 0.5), ("laplace", 1.0): {**_summ(math.nan), "n_timeouts": 1}}
    pq.print_table("title", s, ["exact", "laplace"], (1.0, math.inf), lines.append)
    assert lines[1] == "title"
    assert re.match(r"method\s+eps=1\s+eps=inf", lines[2])
    assert re.match(r"exact\s+-\s+1\.000/0\.50s", lines[4])
    assert re.match(r"laplace\s+timeout\s+-", lines[5])
