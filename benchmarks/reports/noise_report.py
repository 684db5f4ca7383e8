"""Exact privacy noise: coordinates per second of every sampler, in one run.

    python benchmarks/reports/noise_report.py [--budget 0.5]

For the discrete Laplace law (scales 1, 2^30 + 1/2 and 2^40 grid steps, and the exact scale
a Laplace mechanism at epsilon = 1 draws for vectors of 10^3 and 10^6 coordinates) and the
discrete Gaussian (sigma^2 = 1, 10^4, 10^8 and 2^60 grid steps, and the Gaussian
mechanism's at epsilon = 1, delta = 1e-5 for the same sizes), the time of 10^6 draws from the
compiled sampler (pysketch._core: Canonne, Kamath & Steinke 2020, Algorithms 1-3, from a
ChaCha20 stream) on one thread and on two, and of 2 000 draws from the Python reference
samplers (the same algorithms in Python integers, from OS entropy), printed as coordinates
per second with their ratio (OpenDP: 10^5 draws). Beside them, numpy's inexact floating-point Laplace and normal
samplers (Generator.laplace / normal, 10^6 draws: no exactness, a reference point for the
speed of a textbook sampler), and OpenDP's exact vector samplers where the opendp package
is installed (make_laplace / make_gaussian on an integer vector). Last, one private release
of 10^6 float64 coordinates (Laplace and Gaussian mechanisms) against a sketch of 10^6
records of d = 10 with m = 1000 features (CPU time, both cores).
"""

import argparse
import os
import sys
import time
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

import numpy as np  # noqa: E402

import pysketch  # noqa: E402
from pysketch import _core  # noqa: E402
from pysketch.privacy import mechanisms as mech  # noqa: E402

LAPLACE = [Fraction(1), Fraction(2**31 + 1, 2), Fraction(2**40)]
GAUSSIAN = [Fraction(1), Fraction(10**4), Fraction(10**8), Fraction(2**60)]
MECHANISM_SIZES = (10**3, 10**6)
N_COMPILED = 10**6
N_PYTHON = 2000
N_OPENDP = 10**5


def mechanism_parameters(law):
    """(label, parameter) of the exact law a mechanism draws from for vectors of each of
    MECHANISM_SIZES coordinates (its grid_parameter_ after one release of zeros)."""
    out = []
    for D in MECHANISM_SIZES:
        m = mech.Laplace(1.0, 1.0) if law == "laplace" else mech.Gaussian(1.0, 1e-5, 1.0)
        m.randomise(np.zeros(D))
        out.append((f"mech D=1e{len(str(D)) - 1}", m.grid_parameter_))
    return out


def best_seconds(fn, budget, rounds=3):
    best = float("inf")
    deadline = time.perf_counter() + budget
    done = 0
    while done < rounds or time.perf_counter() < deadline:
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
        done += 1
    return best


def compiled_rates(law, p, budget, rounds=5):
    """Draws per second of the compiled sampler on one thread and on two, timed in
    alternating rounds (one call on each per round, best of at least `rounds` rounds and
    of `budget` seconds): a noisy machine slows both alike."""
    fn = _core.discrete_laplace if law == "laplace" else _core.discrete_gaussian
    old = pysketch.get_num_threads()
    best = {1: float("inf"), 2: float("inf")}
    deadline = time.perf_counter() + budget
    done = 0
    try:
        while done < rounds or time.perf_counter() < deadline:
            for threads in (1, 2):
                pysketch.set_num_threads(threads)
                key = os.urandom(32)
                start = time.perf_counter()
                fn(p.numerator, p.denominator, N_COMPILED, key)
                best[threads] = min(best[threads], time.perf_counter() - start)
            done += 1
    finally:
        pysketch.set_num_threads(old)
    return N_COMPILED / best[1], N_COMPILED / best[2]


def python_rate(law, p, budget):
    one = mech._discrete_laplace_one if law == "laplace" else mech._discrete_gaussian_one
    src = mech.noise_source(None)
    return N_PYTHON / best_seconds(lambda: [one(src, p.numerator, p.denominator) for _ in range(N_PYTHON)],
                                   budget, rounds=1)


def opendp_rate(law, p, budget):
    try:
        import opendp.prelude as dp
    except ImportError:
        return None
    dp.enable_features("contrib")
    metric = dp.l1_distance(T=int) if law == "laplace" else dp.l2_distance(T=int)
    space = dp.vector_domain(dp.atom_domain(T=int), size=N_OPENDP), metric
    scale = float(p) if law == "laplace" else float(p) ** 0.5
    meas = dp.m.make_laplace(*space, scale=scale) if law == "laplace" else dp.m.make_gaussian(*space, scale=scale)
    x = [0] * N_OPENDP
    return N_OPENDP / best_seconds(lambda: meas(x), budget, rounds=1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=0.5, help="seconds of trials per cell (default 0.5)")
    args = parser.parse_args(argv)
    print("\n".join(_timing.header_lines()))
    print(f"coordinates per second; compiled: {N_COMPILED} draws, Python: {N_PYTHON} (best of several)")
    print(f"{'law':9} {'parameter':>14} {'compiled 1t':>12} {'compiled 2t':>12} {'2t/1t':>6} {'Python':>10} "
          f"{'1t/Python':>10} {'OpenDP':>10} {'1t/OpenDP':>10}")
    for law, params in (("laplace", LAPLACE), ("gaussian", GAUSSIAN)):
        prefix = "t = " if law == "laplace" else "s2 = "
        for label, p in [(prefix + f"{float(p):.6g}", p) for p in params] + mechanism_parameters(law):
            one, two = compiled_rates(law, p, 2 * args.budget)
            py = python_rate(law, p, args.budget)
            od = opendp_rate(law, p, args.budget)
            od_cols = f"{od:>10.3g} {one / od:>9.0f}x" if od else f"{'-':>10} {'-':>10}"
            print(f"{law:9} {label:>14} {one:>12.3g} {two:>12.3g} {two / one:>5.2f}x {py:>10.3g} {one / py:>9.0f}x "
                  f"{od_cols}", flush=True)
    rng = np.random.default_rng(0)
    for name, fn in (("laplace", lambda: rng.laplace(size=N_COMPILED)), ("normal", lambda: rng.normal(size=N_COMPILED))):
        print(f"numpy {name} (inexact floats): {N_COMPILED / best_seconds(fn, args.budget):.3g} per second")
    if opendp_rate("laplace", LAPLACE[0], 0) is None:
        print("OpenDP: not installed (pip install opendp) - its columns are empty")

    v = rng.standard_normal(N_COMPILED)

    def cpu(fn):
        best = float("inf")
        for _ in range(3):
            start = time.process_time()
            fn()
            best = min(best, time.process_time() - start)
        return best

    lap = cpu(lambda: mech.Laplace(1.0, 1.0).randomise(v))
    gau = cpu(lambda: mech.Gaussian(1.0, 1e-5, 1.0).randomise(v))
    fm = pysketch.make_feature_map(10, 1000, "complex", operator="dense", random_state=0, dtype=np.float32)
    X = rng.standard_normal((N_COMPILED, 10)).astype(np.float32)
    sk = cpu(lambda: fm.sketch(X))
    print(f"CPU seconds: a release of 10^6 coordinates, Laplace {lap:.3f}, Gaussian {gau:.3f}; a sketch of 10^6 "
          f"records (d = 10, m = 1000) {sk:.3f}: the sketch costs {sk / lap:.1f}x and {sk / gau:.1f}x the release")
    return 0


if __name__ == "__main__":
    sys.exit(main())
