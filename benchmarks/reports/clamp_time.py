"""Time of one CL-AMP decode vs the number of clusters k (issue 6, "Done means").

Data: the thesis generator (4.5) (sigma_inter = 1, s = 2.5, n = 10^4), d = 10, m = 2kd,
adapted-radius frequencies with sigma_k^2 = 1, dense operator; the decoder with its defaults
(pysketch.get_num_threads() threads for the output nodes). For each k, the best of `--repeat`
wall-clock times (and the CPU time of that run), the SHyGAMP iterations, and the
MSE / MSE(true centres); then the log-log slope of time vs k between the smallest and the
largest k (the target is <= 2.3 between k = 10 and k = 100; CL-OMPR's is about 3), and the
per-iteration slope (time / iterations).

    OPENBLAS_NUM_THREADS=1 python benchmarks/reports/clamp_time.py
    OPENBLAS_NUM_THREADS=1 python benchmarks/reports/clamp_time.py --k 10 20 50 100 --repeat 1
"""

import argparse
import math
import os
import sys

import pysketch
from pysketch.datasets import make_gmm
from pysketch.decoders import cl_amp as clamp
from pysketch.features import make_feature_map
from pysketch.frequencies import make_law
from pysketch.metrics import mse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)


def one(k, d, seed):
    X, _, p = make_gmm(10_000, k, d, separation=2.5, sigma_intra=1.0 / (2.5 * k ** (1.0 / d)), random_state=seed,
                       return_params=True)
    fm = make_feature_map(d, 2 * k * d, "complex", operator="dense", law=make_law("adapted_radius", 1.0),
                          random_state=1000 + seed)
    sk = fm.sketch(X)
    with _timing.Stopwatch() as clock:
        sol = clamp(sk, None, k, (X.min(0), X.max(0)), random_state=seed)
    return clock.wall, clock.cpu, sol.n_iter, mse(X, sol.theta) / mse(X, p["centers"])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, nargs="+", default=[10, 20, 50, 100])
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    print(f"threads {pysketch.get_num_threads()}, SIMD {pysketch.simd_level()}")
    res = {}
    for k in a.k:
        runs = [one(k, a.d, a.seed + r) for r in range(a.repeat)]
        best = min(runs)
        res[k] = best
        print(f"k={k:4d} d={a.d} m={2 * k * a.d}: {best[0]:.2f} s wall ({best[1]:.2f} s CPU), {best[2]} SHyGAMP "
              f"iterations, {1e3 * best[0] / best[2]:.1f} ms/iteration, MSE ratio {best[3]:.4f}", flush=True)
    k0, k1 = min(res), max(res)
    if k1 > k0:
        lk = math.log(k1 / k0)
        slope = math.log(res[k1][0] / res[k0][0]) / lk
        per_it = math.log((res[k1][0] / res[k1][2]) / (res[k0][0] / res[k0][2])) / lk
        print(f"log-log slope of time vs k between k={k0} and k={k1}: {slope:.2f} (per iteration {per_it:.2f})")


if __name__ == "__main__":
    main()
