"""Throughput of the one-hot sketch kernels of M2M (pysketch/onehot.hpp) against NumPy.

    OPENBLAS_NUM_THREADS=1 python benchmarks/reports/onehot_report.py
    python benchmarks/reports/onehot_report.py --hist-n 1000000 --race-n 200000 --budget 1

One thread by default (pysketch's and BLAS's; --threads for pysketch's). For each kernel, the
best wall time over rounds that alternate it with a NumPy reference (so both sample the same
stretches of a shared machine), then records per second per thread and the ratio
reference / kernel (above 1: the kernel is faster). Targets: HIST >= 1e7 and RACE >= 2e6
records/s per core at d = 10; the Gram matrix at n = 1e5, R = W = 80 well under 3 s.

- hist_accumulate: d = 10, n_bins = 100, Gaussian data in the box [-3, 3]^d (a few records
  outside). Reference: the bins in NumPy, np.bincount, and the count of records outside.
- race_accumulate: d = 10, R = 100 hashes, W = 80 buckets, bucket width 0.3. Reference:
  t = X @ proj + offset (one BLAS product), floor, mod W, np.bincount.
- onehot_gram: n = 1e5 rows of R = 80 blocks of W = 80 (m = 6400). Reference: P.T @ P with P
  the (n, m) CSR matrix of scipy.sparse, then .toarray().
The NumPy references run on chunks of `--chunk` rows (their temporaries are O(chunk R)).
Each pair is checked to agree before it is timed.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

_timing.one_thread()  # before any BLAS or OpenMP library loads

import numpy as np  # noqa: E402
from scipy import sparse  # noqa: E402

from pysketch import _core  # noqa: E402


def timed_pair(core, reference, budget, rounds):
    """(best core seconds, best reference seconds), rounds alternating the two."""
    best = _timing.best_of({"core": core, "reference": reference}, budget, min_rounds=rounds)
    return best["core"] * 1e-9, best["reference"] * 1e-9


def line(name, n, t_core, t_ref, threads, ref_name):
    rate = n / t_core
    print(f"{name}: {t_core:.4f} s = {rate:.3e} records/s ({rate / threads:.3e} per thread); "
          f"{ref_name} {t_ref:.4f} s; ratio reference / core = {t_ref / t_core:.1f}", flush=True)


def hist(n, d, n_bins, chunk, budget, rounds, threads, rng):
    X = rng.standard_normal((n, d))
    lower, upper = np.full(d, -3.0), np.full(d, 3.0)
    scale = n_bins / (upper - lower)
    base = np.arange(d) * n_bins
    counts = np.zeros(d * n_bins)

    def core():
        counts[:] = 0.0
        return _core.hist_accumulate(X, lower, scale, upper, n_bins, counts)

    def reference():
        total, outside = np.zeros(d * n_bins), 0
        for start in range(0, n, chunk):
            x = X[start:start + chunk]
            t = (x - lower) * scale
            b = np.minimum(np.maximum(t, 0.0), n_bins - 1).astype(np.int64)
            total += np.bincount((b + base).ravel(), minlength=d * n_bins)
            outside += int(((x < lower) | (x > upper)).any(axis=1).sum())
        return total, outside

    ref_counts, ref_outside = reference()
    assert core() == ref_outside and np.array_equal(counts, ref_counts), "hist: kernel and reference disagree"
    t_core, t_ref = timed_pair(core, reference, budget, rounds)
    line(f"hist_accumulate d={d} n_bins={n_bins} n={n}", n, t_core, t_ref, threads, "numpy bins + bincount")


def race(n, d, R, W, chunk, budget, rounds, threads, rng):
    X = rng.standard_normal((n, d))
    proj = np.ascontiguousarray(rng.standard_normal((d, R)) / 0.3)
    offset = rng.random(R)
    base = np.arange(R) * W
    counts = np.zeros(R * W)

    def core():
        counts[:] = 0.0
        _core.race_accumulate(X, proj, offset, W, counts)

    def reference():
        total = np.zeros(R * W)
        for start in range(0, n, chunk):
            t = X[start:start + chunk] @ proj + offset
            b = np.mod(np.floor(t).astype(np.int64), W) + base
            total += np.bincount(b.ravel(), minlength=R * W)
        return total

    core()
    # X @ proj sums in BLAS's order, not the kernel's: t within rounding of an integer may
    # land in the next bucket, so compare the totals loosely
    assert np.abs(counts - reference()).sum() <= 1e-6 * n * R, "race: kernel and reference disagree"
    t_core, t_ref = timed_pair(core, reference, budget, rounds)
    line(f"race_accumulate d={d} R={R} W={W} n={n}", n, t_core, t_ref, threads, "numpy X @ proj + bincount")


def gram(n, R, W, budget, rounds, threads, rng):
    sizes = np.full(R, W, np.int64)
    offsets = np.arange(R, dtype=np.int64) * W
    m = R * W
    idx = (rng.integers(0, W, (n, R)) + offsets).astype(np.int32)
    out = np.empty((m, m))

    def core():
        _core.onehot_gram(idx, offsets, sizes, out)

    def reference():
        P = sparse.csr_matrix((np.ones(n * R), idx.ravel().astype(np.int64), np.arange(0, n * R + 1, R)),
                              shape=(n, m))
        return (P.T @ P).toarray()

    core()
    assert np.array_equal(out, reference()), "gram: kernel and reference disagree"
    t_core, t_ref = timed_pair(core, reference, budget, rounds)
    print(f"onehot_gram n={n} R={R} W={W} (m={m}): {t_core:.3f} s ({t_core * threads:.3f} thread-seconds); "
          f"scipy.sparse P.T @ P {t_ref:.3f} s; ratio reference / core = {t_ref / t_core:.1f}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hist-n", type=int, nargs="+", default=[1_000_000, 10_000_000], help="records for HIST")
    ap.add_argument("--race-n", type=int, nargs="+", default=[200_000, 1_000_000], help="records for RACE")
    ap.add_argument("--gram-n", type=int, default=100_000, help="rows for the Gram matrix")
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--n-bins", type=int, default=100)
    ap.add_argument("--R", type=int, default=100, help="RACE hashes")
    ap.add_argument("--W", type=int, default=80, help="RACE buckets per hash")
    ap.add_argument("--gram-R", type=int, default=80, help="blocks (and block size) of the Gram matrix")
    ap.add_argument("--chunk", type=int, default=100_000, help="rows per chunk of the NumPy references")
    ap.add_argument("--budget", type=float, default=2.0, help="seconds of trials per contender")
    ap.add_argument("--rounds", type=int, default=3, help="at least this many rounds per measurement")
    ap.add_argument("--threads", type=int, default=1, help="pysketch threads")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    _core.set_num_threads(a.threads)
    for text in _timing.header_lines():
        print(text)
    print(f"numpy {np.__version__}, BLAS/OpenMP threads: {os.environ.get('OPENBLAS_NUM_THREADS')}")
    rng = np.random.default_rng(a.seed)
    for n in a.hist_n:
        hist(n, a.d, a.n_bins, a.chunk, a.budget, a.rounds, a.threads, rng)
    for n in a.race_n:
        race(n, a.d, a.R, a.W, a.chunk, a.budget, a.rounds, a.threads, rng)
    gram(a.gram_n, a.gram_R, a.gram_R, a.budget, a.rounds, a.threads, rng)


if __name__ == "__main__":
    main()
