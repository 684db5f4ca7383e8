"""Per-record time of the feature-subsampled sketch against the full sketch.

    python benchmarks/reports/subsample_report.py [--dtypes float32,float64] [--trials 5] [--budget 0.2]

Single thread. For each (d, m) in {(10, 1000), (64, 6400)} and r in {1, d, m/10, m}: the CPU
time per record of FeatureMap.sketch_subsampled (complex features, dense operator, uniform
r-subsets; also Bernoulli masks at r = m/10) and of FeatureMap.sketch, best of `--trials`
runs of about `--budget` seconds each (thread CPU time, so a shared machine inflates it
less than wall time), and their ratio (subsampled / full; below 1 is faster). r = m through
the API is the full sketch itself (the only m-subset); the row "r = m (core)" times the
general subsampled path at r = m, which the API never takes. A last table does the same for a
structured R3 operator at d = 64, m = 6400 (d_p = 64: 100 blocks), uniform and block masks.
"""

import argparse
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

_timing.one_thread()  # before any BLAS or OpenMP library loads

import numpy as np  # noqa: E402

import pysketch  # noqa: E402
from pysketch import _core  # noqa: E402
from pysketch.features import make_feature_map  # noqa: E402


def per_record(fn, n, trials, budget):
    """Best thread-CPU time per record (microseconds) of fn(), a sketch of n records, over
    `trials` runs; fn is repeated within a run until `budget` seconds have passed."""
    return _timing.best_mean(fn, trials, budget, clock=time.thread_time) / n * 1e6


def core_full_r(fm, X):
    """The general subsampled path at r = m (not the API's shortcut to the full sketch)."""
    acc0, acc1 = np.zeros(fm.m), np.zeros(fm.m)
    fm.subsampling_spec(fm.m, "uniform")  # validates
    # the operator's subsampled entry point at r = m, scheme 'uniform', masks key (1, 2)
    fm.operator.accumulate_subsampled(fm.kernel, X, fm.kernel_dither, _core.Scheme.uniform, fm.m, 1, 2, 0, acc0, acc1)


def table(title, rows):
    print(f"\n{title}")
    print(f"  {'case':<24} {'us/record':>10} {'ratio':>8}")
    for name, t, ratio in rows:
        print(f"  {name:<24} {t:>10.3f} {ratio:>8.3f}")


def run_dense(d, m, dtype, trials, budget):
    fm = make_feature_map(d, m, "complex", operator="dense", random_state=0, dtype=dtype)
    n = max(200, int(2e7 // (d * m)))  # about 2e7 multiply-adds of full sketch per call
    X = np.random.default_rng(1).standard_normal((n, d)).astype(dtype)
    full = per_record(lambda: fm.sketch(X), n, trials, budget)
    rows = [("full sketch", full, 1.0)]
    for label, r in (("r = 1", 1), (f"r = d = {d}", d), (f"r = m/10 = {m // 10}", m // 10), (f"r = m = {m}", m)):
        t = per_record(lambda: fm.sketch_subsampled(X, r, random_state=3), n, trials, budget)
        rows.append((label, t, t / full))
    t = per_record(lambda: core_full_r(fm, X), n, trials, budget)
    rows.append(("r = m (core)", t, t / full))
    t = per_record(lambda: fm.sketch_subsampled(X, m // 10, scheme="bernoulli", random_state=3), n, trials, budget)
    rows.append(("bernoulli r = m/10", t, t / full))
    table(f"dense, d = {d}, m = {m}, {np.dtype(dtype).name}, n = {n} per call", rows)


def run_structured(d, m, dtype, trials, budget):
    fm = make_feature_map(d, m, "complex", operator="r3", random_state=0, dtype=dtype)
    dp = fm.operator.d_p
    n = max(200, int(1e6 // m))
    X = np.random.default_rng(1).standard_normal((n, d)).astype(dtype)
    full = per_record(lambda: fm.sketch(X), n, trials, budget)
    rows = [("full sketch", full, 1.0)]
    for label, r, scheme in (("uniform r = 1", 1, "uniform"), (f"uniform r = d = {d}", d, "uniform"),
                             (f"uniform r = m/10 = {m // 10}", m // 10, "uniform"),
                             (f"blocks r = d_p = {dp}", dp, "blocks"),
                             (f"blocks r = m/10 = {m // 10}", m // 10, "blocks")):
        if scheme == "blocks" and (r % dp or m % dp):
            continue
        t = per_record(lambda: fm.sketch_subsampled(X, r, scheme=scheme, random_state=3), n, trials, budget)
        rows.append((label, t, t / full))
    table(f"structured R3, d = {d}, m = {m} (d_p = {dp}), {np.dtype(dtype).name}, n = {n} per call", rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--budget", type=float, default=0.2, help="seconds per trial")
    args = parser.parse_args(argv)
    pysketch.set_num_threads(1)
    print(f"pysketch {pysketch.__version__}, SIMD {pysketch.simd_level()}, one thread, "
          f"{platform.machine()}, python {sys.version.split()[0]}, numpy {np.__version__}")
    print("time: thread CPU time per record, best of trials; ratio = subsampled / full")
    for dtype in args.dtypes.split(","):
        for d, m in ((10, 1000), (64, 6400)):
            run_dense(d, m, np.dtype(dtype), args.trials, args.budget)
        run_structured(64, 6400, np.dtype(dtype), args.trials, args.budget)


if __name__ == "__main__":
    main()
