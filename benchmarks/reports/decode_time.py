"""CPU time of one CL-OMPR restart (issue 4's decoding targets), on one core.

Cases (data: k unit-variance clusters with centers N(0, 4 I_d), n = 10^5 records; the
kernel scale from the separation rule, as ``CompressiveKMeans`` chooses it):

- k = d = 10, m = 1000, dense operator (target <= 0.5 s per restart);
- k = 30, d = 128, m = 6kd = 23040, structured (R3) operator (target <= 20 s).

Prints the CPU time (``time.process_time``, all threads) of each of `--repeat` decodes and
the best, with the RSE of the decoded centers. Run with BLAS and pysketch on one thread::

    OPENBLAS_NUM_THREADS=1 python benchmarks/reports/decode_time.py
"""

import argparse
import os
import sys

import numpy as np

import pysketch
from pysketch.datasets import make_blobs_gaussian_centers
from pysketch.decoders import DecodingProblem, DiracAtoms, clompr
from pysketch.features import make_feature_map
from pysketch.frequencies import GaussianLaw
from pysketch.metrics import kmeans_plus_plus, sse
from pysketch.kernel_scale import kernel_scale

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

CASES = {"small": (10, 10, 1000, "dense"), "large": (30, 128, 6 * 30 * 128, "r3")}


def run_case(name, repeat, n, out=print):
    k, d, m, op = CASES[name]
    X = make_blobs_gaussian_centers(n, k, d, random_state=0)[0]
    sigma = kernel_scale(X, k, task="kmeans", random_state=0)
    fm = make_feature_map(d, m, "complex", operator=op, law=GaussianLaw(sigma), random_state=1)
    family = DiracAtoms(DecodingProblem(fm, fm.sketch(X).mean()), X.min(axis=0), X.max(axis=0))
    _, base = kmeans_plus_plus(X, k, n_init=3, random_state=0)
    times = []
    for seed in range(repeat):
        with _timing.Stopwatch() as clock:
            sol = clompr(family, k, n_init=1, random_state=seed)
        times.append(clock.cpu)
        out(f"  {name}: k={k} d={d} m={m} {op}: restart {seed}: {times[-1]:.2f} s CPU, "
            f"RSE {sse(X, sol.theta) / base:.4f}")
    out(f"{name}: k={k} d={d} m={m} {op}: best {min(times):.2f} s, median {np.median(times):.2f} s CPU per restart")
    return times


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--case", choices=sorted(CASES), nargs="+", default=["small", "large"])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--n", type=int, default=100_000)
    a = p.parse_args(argv)
    pysketch.set_num_threads(1)
    for name in a.case:
        run_case(name, a.repeat, a.n)


if __name__ == "__main__":
    main()
