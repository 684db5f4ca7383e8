"""The ``pysketch`` command line.

``pysketch`` (or ``pysketch info``, or ``python -m pysketch``) prints the version, the
instruction set and thread count the compiled core uses, checks the Walsh-Hadamard
transform against its definition and times it.

``pysketch demo`` runs compressive k-means end to end: on generated data (by default
10^6 records, d = 10, k = 10) or a user's .npy / .csv file, it sketches the data in one
pass (with a progress bar), learns the centers from the sketch alone, and prints the
sketch time, decode time and relative SSE, with scikit-learn's KMeans alongside when it
is installed; with matplotlib it also draws the data's two first principal directions
with the true and learned centers.
"""

import argparse
import platform
import time

import numpy as np

from . import __version__
from .hadamard import fwht
from .runtime import get_num_threads, max_simd_level, simd_level

__all__ = ["main"]


def main(argv=None):
    """Run the command line with `argv` (default: ``sys.argv[1:]``); returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="pysketch",
        description="pysketch: private compressive learning from one short sketch of a dataset.",
    )
    parser.add_argument("--version", action="version", version=f"pysketch {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    info = commands.add_parser(
        "info",
        help="print the version, SIMD level and thread count, check and time the FWHT (the default)",
        description="Print the version, the instruction set and thread count in use, check the fast "
        "Walsh-Hadamard transform against its definition and time it.",
    )
    info.add_argument("--n", type=_power_of_two, default=1024, help="transform length to time (default 1024)")
    info.add_argument("--rows", type=_positive, default=4096, help="rows in the timed batch (default 4096)")
    info.add_argument("--repeat", type=_positive, default=20, help="timed trials, best is shown (default 20)")
    demo = commands.add_parser(
        "demo",
        help="compressive k-means end to end on generated data or your file",
        description="Sketch a dataset in one pass, learn k-means centers from the sketch alone, and compare "
        "with k-means on the full data. Without --data, 10^6 records are generated: k unit-variance "
        "clusters with centers drawn N(0, 4 I_d).",
    )
    demo.add_argument("--data", metavar="FILE", help="a .npy or .csv file of records (rows) to cluster")
    demo.add_argument("-k", "--clusters", type=_positive, default=10, help="number of clusters (default 10)")
    demo.add_argument("--n", type=_positive, default=10**6, help="records to generate without --data (default 10^6)")
    demo.add_argument("--d", type=_positive, default=10, help="dimension to generate without --data (default 10)")
    demo.add_argument("--sketch-size", type=_positive, default=None,
                      help="number of frequencies m (default 10 * k * d)")
    demo.add_argument("--output", metavar="PNG", default="pysketch_demo.png",
                      help="where to write the plot (needs matplotlib; default pysketch_demo.png; 'none' to skip)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--no-baseline", action="store_true", help="skip scikit-learn's KMeans on the full data")
    demo.add_argument("--epsilon", type=float, default=None,
                      help="also release the sketch with epsilon-differential privacy (add/remove neighbours) "
                           "and show the centers learned from it")
    demo.add_argument("--delta", type=float, default=0.0,
                      help="with --epsilon: delta > 0 uses the analytic Gaussian mechanism (default 0: Laplace)")
    args = parser.parse_args(argv)
    if args.command is None:  # plain `pysketch`: the same as `pysketch info` with its defaults
        args = parser.parse_args(["info"])
    if args.command == "demo":
        from .demo import run_demo

        try:
            return run_demo(args)
        except (OSError, ValueError) as exc:  # a bad file or bad data: say so, no traceback
            parser.exit(2, f"pysketch demo: error: {exc}\n")
    return _info(args.n, args.rows, args.repeat)


def _info(n, rows, repeat):
    level, best = simd_level(), max_simd_level()
    print(f"pysketch {__version__} (Python {platform.python_version()}, numpy {np.__version__})")
    print(f"SIMD level: {level} (max {best}{', capped by PYSKETCH_SIMD' if level != best else ''})")
    print(f"threads: {get_num_threads()}")
    ok = _self_check()
    print(f"self-check: fwht {'matches' if ok else 'DOES NOT match'} its definition for n = 1 .. 256")
    per_row = _time_fwht(n, rows, repeat)
    print(
        f"fwht float32 n={n}: {per_row * 1e6:.3g} us per row "
        f"(batch of {rows} rows, best of {repeat})"
    )
    return 0 if ok else 1


def _self_check():
    """Does fwht equal y[i] = sum_j (-1)^popcount(i & j) x[j] on small integer data (exact)?"""
    rng = np.random.default_rng(12345)
    for log_n in range(9):
        n = 1 << log_n
        i = np.arange(n)
        matrix = np.ones((n, n))
        for bit in range(log_n):  # (-1)^popcount(i & j), one bit at a time
            matrix *= 1 - 2 * ((i[:, None] >> bit) & (i[None, :] >> bit) & 1)
        x = rng.integers(-100, 100, size=(3, n)).astype(np.float64)
        if not np.array_equal(fwht(x), x @ matrix.T):
            return False
    return True


def _time_fwht(n, rows, repeat):
    """Best time per row of an in-place, normalized float32 transform of a batch."""
    x = np.random.default_rng(0).standard_normal((rows, n), dtype=np.float32)
    fwht(x, normalized=True, out=x, check_finite=False)  # warm up (threads, pages)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter_ns()
        fwht(x, normalized=True, out=x, check_finite=False)  # orthonormal: values stay bounded
        best = min(best, time.perf_counter_ns() - start)
    return best * 1e-9 / rows


def _power_of_two(text):
    value = _positive(text)
    if value & (value - 1) or value > 1 << 30:
        raise argparse.ArgumentTypeError(f"must be a power of two between 1 and 2**30, got {value}")
    return value


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value
