"""The real-data quality benchmark (benchmarks/quality/real_quality.py): its quick CI mode end to
end, and its RSE, summary and target logic on hand-made numbers."""

import importlib.util
import math
import os
import re
import subprocess
import sys
import warnings

import numpy as np
import pytest

from pysketch.metrics import sse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "quality", "real_quality.py")


def _load_bench():
    spec = importlib.util.spec_from_file_location("_real_quality_bench", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rq = _load_bench()


# ---------------------------------------------------------------------------------------
# The quick mode, as CI runs it
# ---------------------------------------------------------------------------------------


def test_quick_mode_runs_and_prints_the_us_cities_row():
    pytest.importorskip("sklearn")
    pytest.importorskip("bokeh_sampledata")
    env = dict(os.environ)
    env.pop(rq.GOOGLE_ENV, None)
    proc = subprocess.run([sys.executable, SCRIPT, "--quick"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the table row: data set, k, n (subsampled to 3000), d
    assert re.search(r"^us_cities\s+10\s+3000\s+2\s+1\.000/1\.000", proc.stdout, re.M), proc.stdout
    assert re.search(r"^us_cities k=10 targets: clean <= 1\.10 (PASS|FAIL);", proc.stdout, re.M)
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------------------
# Targets on hand-made summaries
# ---------------------------------------------------------------------------------------


def _summaries(**medians):
    """{method: {"median": ..., "cpu": ...}} from keyword names with _ for - and p for ."""
    out = {}
    for key, value in medians.items():
        method = key.replace("__", ".").replace("_", "-")
        median, cpu = value if isinstance(value, tuple) else (value, 1.0)
        out[method] = {"median": median, "p90": median, "cpu": cpu}
    return out


def test_targets_fail_where_the_numbers_miss_them():
    results = _summaries(pysketch_clean=1.20, pysketch_eps1=1.30, pysketch_eps0__1=1.10,
                         diffprivlib_eps1=1.25, diffprivlib_eps0__1=1.50, eugkm_eps1=1.40, eugkm_eps0__1=1.05)
    assert set(results) == {"pysketch-clean", "pysketch-eps1", "pysketch-eps0.1", "diffprivlib-eps1",
                            "diffprivlib-eps0.1", "eugkm-eps1", "eugkm-eps0.1"}
    got = rq.targets(results, n=50_000, d=2)
    assert got["clean <= 1.10"] == "FAIL"
    assert got["eps1 <= best pure peer"] == "FAIL"           # 1.30 > min(1.25, 1.40)
    assert got["eps0.1 <= best pure peer"] == "FAIL"         # 1.10 > min(1.50, 1.05)
    assert got["eps1 <= 1.5 x best peer"] == "PASS"          # google not run: the pure peers
    assert got["eps1 <= 1.05 x eps0.1"] == "FAIL"            # 1.30 > 1.155
    # methods not run, and the n >= 1e5 checks at n = 5e4
    assert got["eps1-d1e-6 <= google"] == got["eps0.1-d1e-6 <= google"] == "n.a."
    assert got["eps1 <= 1.05 x clean"] == got["clean CPU <= sklearn CPU"] == "n.a."
    assert set(got.values()) <= {"PASS", "FAIL", "n.a."}
    # 1.5 x the best peer, Google included
    over = _summaries(pysketch_eps1=1.6, diffprivlib_eps1=2.0, google_lsh=1.05)
    assert rq.targets(over, n=50_000, d=2)["eps1 <= 1.5 x best peer"] == "FAIL"


def test_targets_pass_where_the_numbers_meet_them():
    results = _summaries(pysketch_clean=(1.04, 0.5), sklearn=(1.0, 0.8), pysketch_eps1=1.03, pysketch_sketch=1.15,
                         pysketch_eps0__1=1.05, diffprivlib_eps1=1.10, diffprivlib_eps0__1=1.40,
                         eugkm_eps1=1.2, eugkm_eps0__1=1.3, pysketch_eps1_d1e_6=1.30, google_lsh=1.40,
                         pysketch_eps0__1_d1e_6=1.25, google_lsh_eps0__1=1.6)
    got = rq.targets(results, n=200_000, d=48)
    assert all(status == "PASS" for status in got.values()), got
    rows = [{"n": 200_000, "summaries": results}, {"n": 1000, "summaries": results}]
    assert rq.cell_summary(rows) == (2, 2)  # the small configuration has no cells


def test_targets_size_conditions_and_edges():
    # eps1 exactly 5% above eps0.1 passes, a little more fails
    assert rq.targets(_summaries(pysketch_eps1=1.05, pysketch_eps0__1=1.0), 10, 2)[
        "eps1 <= 1.05 x eps0.1"] == "PASS"
    assert rq.targets(_summaries(pysketch_eps1=1.06, pysketch_eps0__1=1.0), 10, 2)[
        "eps1 <= 1.05 x eps0.1"] == "FAIL"
    # below n = 2e4 the comparisons with the peers are not targets
    small = rq.targets(_summaries(pysketch_eps1=3.0, diffprivlib_eps1=1.0), n=19_999, d=2)
    assert small["eps1 <= best pure peer"] == small["eps1 <= 1.5 x best peer"] == "n.a."
    # at n >= 1e5: private within 5% of clean; CPU only for d <= 64
    big = _summaries(pysketch_clean=(1.00, 2.0), sklearn=(1.0, 1.0), pysketch_eps1=1.06)
    assert rq.targets(big, n=100_000, d=64)["eps1 <= 1.05 x clean"] == "FAIL"
    assert rq.targets(big, n=100_000, d=64)["clean CPU <= sklearn CPU"] == "FAIL"
    assert rq.targets(big, n=100_000, d=192)["clean CPU <= sklearn CPU"] == "n.a."
    assert rq.targets(big, n=100_000, d=192)["clean CPU <= 10 x sklearn CPU"] == "PASS"
    # from a sketch alone: at most 1.15
    assert rq.targets(_summaries(pysketch_sketch=1.16), 10, 2)["sketch alone <= 1.15"] == "FAIL"
    # a method whose every seed failed (NaN median) makes its checks n.a., not FAIL
    broken = _summaries(pysketch_clean=math.nan, pysketch_eps1_d1e_6=1.2, google_lsh=math.nan)
    got = rq.targets(broken, n=30_000, d=2)
    assert got["clean <= 1.10"] == got["eps1-d1e-6 <= google"] == "n.a."
    # a cell where pysketch beats the pure peers but its delta variant loses to Google
    cells = _summaries(pysketch_eps1=1.0, diffprivlib_eps1=1.2, pysketch_eps1_d1e_6=1.5, google_lsh=1.1)
    assert rq.cell_summary([{"n": 30_000, "summaries": cells}]) == (0, 1)


# ---------------------------------------------------------------------------------------
# RSE, summaries, warnings and bad centres on a fake registry
# ---------------------------------------------------------------------------------------


def test_summarise_median_and_p90():
    records = [{"rse": r, "cpu": c, "error": None, "problem": None, "extras": {"sketch_size": m},
                "warnings": w}
               for r, c, m, w in [(1.0, 1.0, 100, {}), (1.2, 2.0, 120, {"RuntimeWarning": 1}),
                                  (1.1, 3.0, 110, {}), (2.0, 4.0, 140, {"RuntimeWarning": 2}),
                                  (1.05, 5.0, 130, {"UserWarning": 1})]]
    records.append({"rse": math.nan, "cpu": 9.0, "error": "ValueError: x", "problem": None,
                    "extras": {}, "warnings": {}})
    s = rq.summarise(records)
    assert s["median"] == pytest.approx(1.1)
    # sorted 1.0, 1.05, 1.1, 1.2, 2.0: the 0.9 quantile is 1.2 + 0.6 * 0.8
    assert s["p90"] == pytest.approx(1.68)
    assert s["cpu"] == pytest.approx(3.0)            # the failed fit's time is left out
    assert s["extras"]["sketch_size"] == pytest.approx(120)
    assert s["warnings"] == {"RuntimeWarning": 3, "UserWarning": 1}
    assert (s["n_scored"], s["n_fits"], s["n_errors"]) == (5, 6, 1)


def test_check_centres():
    assert rq.check_centres(np.zeros((3, 2)), 3, 2) == (True, None)
    usable, problem = rq.check_centres(np.zeros((2, 2)), 3, 2)
    assert usable and "2 centres" in problem
    assert not rq.check_centres(np.zeros((3, 4)), 3, 2)[0]
    assert not rq.check_centres(np.full((3, 2), np.nan), 3, 2)[0]
    assert not rq.check_centres(np.zeros(6), 3, 2)[0]


def test_rse_is_sse_over_the_sklearn_reference_of_the_same_seed(monkeypatch):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(0, 1, (50, 2)), rng.normal(10, 1, (50, 2))])
    good = np.array([[0.0, 0.0], [10.0, 10.0]])
    worse = np.array([[0.0, 0.0], [12.0, 12.0]])
    seen = []

    def reference(X, k, bounds, seed):
        seen.append(seed)
        return good

    def other(X, k, bounds, seed):
        warnings.warn("clipped", RuntimeWarning)
        return worse, {"time_decode": 0.5, "sketch_size": 40}

    def failing(X, k, bounds, seed):
        raise ValueError("no")

    monkeypatch.setitem(rq.METHODS, "sklearn", (reference, "sklearn"))
    monkeypatch.setitem(rq.METHODS, "pysketch-clean", (other, "pysketch"))
    monkeypatch.setitem(rq.METHODS, "pysketch-eps1", (failing, "pysketch"))
    lines = []
    per = rq.run_config("toy k=2", X, 2, (np.full(2, -20.0), np.full(2, 20.0)),
                        ["sklearn", "pysketch-clean", "pysketch-eps1"], 2, True, lines.append)
    assert seen == [0, 1]
    expected = sse(X, worse) / sse(X, good)
    assert expected > 1.1
    for record in per["pysketch-clean"]:
        assert record["rse"] == pytest.approx(expected)
        assert record["warnings"] == {"RuntimeWarning": 1}
        assert record["extras"] == {"time_decode": 0.5, "sketch_size": 40}
    assert all(r["rse"] == 1.0 for r in per["sklearn"])
    assert all(r["error"] == "ValueError: no" and math.isnan(r["rse"]) for r in per["pysketch-eps1"])
    assert any("pysketch-eps1: ERROR ValueError: no" in line for line in lines)


def test_quick_exit_code_is_1_on_bad_centres(monkeypatch):
    pytest.importorskip("sklearn")

    def nan_centres(X, k, bounds, seed):
        return np.full((k, X.shape[1]), np.nan)

    monkeypatch.setitem(rq.METHODS, "pysketch-eps1", (nan_centres, "pysketch"))
    argv = ["--quick", "--sets", "digits:10", "--methods", "pysketch-eps1", "--seeds", "1"]
    lines = []
    assert rq.main(argv, out=lines.append) == 1
    assert any("BAD CENTRES" in line for line in lines)
    assert any(line.startswith("digits ") and " bad" in line for line in lines)
    # without --quick the same run is only a report
    assert rq.main(argv[1:], out=lines.append) == 0


def test_google_is_skipped_with_a_reason_when_not_configured(monkeypatch):
    monkeypatch.delenv(rq.GOOGLE_ENV, raising=False)
    monkeypatch.setattr(rq, "_GOOGLE", {})
    reason = rq.PROBES["google"]()
    assert reason is not None and rq.GOOGLE_ENV in reason
    monkeypatch.setenv(rq.GOOGLE_ENV, os.path.join(ROOT, "no-such-folder"))
    assert "no clustering/ folder" in rq.PROBES["google"]()
