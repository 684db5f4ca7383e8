"""Wall time of pysketch's quadratic sketch against a NumPy reference, one process.

    python benchmarks/reports/quadratic_report.py [--dims 64,256,1024,4096] [--dtypes float32] [--trials 3]

For d in --dims and m = 10 d: the best of --trials wall times (the contenders alternated round
by round, after one untimed call each) of FeatureMap.sketch(X) with quadratic features
(omega_j^T x)^2 (Gaussian frequencies N(0, I/d)) through pysketch's dense operator and its
structured R3 operator, and of NumPy computing the dense map's sums from its Omega:
(X @ Omega)**2 summed over the records, in chunks of rows (at most 8 MiB of phases, as
pysketch's dense route), each product through BLAS, the squares summed in the records' dtype
within a chunk and added into float64 sums (pysketch sums every chunk in float64: NumPy is
given the cheaper reduction). n records per call: about 4e10 multiply-adds of the dense product
(between 1000 and 20000 records). numpy/dense and numpy/r3 are NumPy's time over pysketch's
(above 1: pysketch is faster; R3 computes the sketch of another Omega of the same law and
size, in O(m log d) per record instead of O(m d)); "rel. err" is the largest relative
difference between pysketch's dense sums and NumPy's.

Single thread: BLAS and OpenMP are set to one thread before NumPy loads (unless the
environment sets them), pysketch to one thread (--threads to change). Dense Omega at d = 4096
takes 671 MB in float32 (twice in float64).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

_timing.one_thread()  # before any BLAS or OpenMP library loads

import numpy as np  # noqa: E402

import pysketch  # noqa: E402
from pysketch.features import make_feature_map  # noqa: E402
from pysketch.frequencies import QuadraticGaussianLaw  # noqa: E402


def numpy_sketch(X, W):
    """sum_i (Omega^T x_i)^2 with NumPy: BLAS products of chunks of rows, squared in place."""
    d, m = W.shape
    rows = max(1, (8 << 20) // (m * X.dtype.itemsize))
    P = np.empty((min(rows, X.shape[0]), m), X.dtype)
    out = np.zeros(m)
    for start in range(0, X.shape[0], rows):
        chunk = X[start : start + rows]
        Pc = P[: chunk.shape[0]]
        np.matmul(chunk, W, out=Pc)
        np.square(Pc, out=Pc)
        out += Pc.sum(axis=0)
    return out


def records(d, m):
    return int(min(20000, max(1000, 4e10 // (d * m))))


def run(d, dtype, trials):
    m = 10 * d
    n = records(d, m)
    X = np.random.default_rng(1).standard_normal((n, d)).astype(dtype)
    law = QuadraticGaussianLaw()
    dense = make_feature_map(d, m, "quadratic", operator="dense", law=law, random_state=0, dtype=dtype)
    r3 = make_feature_map(d, m, "quadratic", operator="r3", law=law, random_state=0, dtype=dtype)
    W = dense.operator.omega  # the dense map's own Omega, in its dtype
    fns = {"numpy": lambda: numpy_sketch(X, W), "dense": lambda: dense.sketch(X), "r3": lambda: r3.sketch(X)}
    for fn in fns.values():
        fn()  # untimed: first-touch pages, lazy initialisation
    # best of `trials` rounds, each timing every contender once in turn (a shared machine's
    # slow stretches fall on all of them)
    best = _timing.best_of(fns, 0.0, min_rounds=trials, max_rounds=trials)
    t_numpy, t_dense, t_r3 = (best[name] / 1e9 for name in ("numpy", "dense", "r3"))
    ref = numpy_sketch(X, W)
    err = float(np.max(np.abs(dense.sketch(X).sum - ref) / ref))
    del dense, W
    return [str(d), str(m), str(n), f"{t_numpy * 1e3:.1f}", f"{t_dense * 1e3:.1f}", f"{t_r3 * 1e3:.1f}",
            f"{t_numpy / t_dense:.2f}", f"{t_numpy / t_r3:.2f}", f"{err:.1e}"]


def print_table(title, header, rows):
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]
    print()
    print(title)
    line = "  ".join(h.rjust(w) for h, w in zip(header, widths))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dims", default="64,256,1024,4096", help="input dimensions d (m = 10 d)")
    parser.add_argument("--dtypes", default="float32", help="comma-separated: float32, float64")
    parser.add_argument("--trials", type=int, default=3, help="timed calls per contender (best is kept)")
    parser.add_argument("--threads", type=int, default=1, help="pysketch's threads")
    args = parser.parse_args()
    pysketch.set_num_threads(args.threads)
    for line in _timing.header_lines():
        print(line)
    print(f"numpy {np.__version__}; BLAS threads: OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    header = ["d", "m", "n", "numpy ms", "dense ms", "r3 ms", "numpy/dense", "numpy/r3", "rel. err"]
    for dtype in args.dtypes.split(","):
        rows = [run(int(d), np.dtype(dtype), args.trials) for d in args.dims.split(",")]
        print_table(f"== quadratic sketch, {dtype}: best of {args.trials} wall times per call ==", header, rows)


if __name__ == "__main__":
    main()
