"""Print a table of pysketch.fwht timings, and of the peers installed in the same environment.

    python benchmarks/reports/fwht_report.py [--min-log-n 6] [--max-log-n 20] [--budget 0.25] [--no-long-rows]
        [--batches l2,big [--layouts aligned,numpy] [--only-batches]]

For every n = 2^k and dtype, a batch of rows (about 2^17 elements, at least one row) is
transformed on ONE thread, many times; each trial starts from the same data (restored
outside the timed region, so nothing overflows), and the best trial, divided by the
number of rows, is the time per transform. The trials of pysketch, its default call and
fht_cpu alternate (one of each per round), so that a stretch in which the shared machine
runs slow affects them alike.
Columns:

  pysketch      in place (out=x), check_finite=False: the kernel and the call
  GFLOP/s       n * log2(n) additions per transform / time
  default       pysketch.fwht(x): out of place, check_finite=True, allocates the result
  fht_cpu       fht_cpu.fht(x, inplace=True, num_threads=1), when installed
                (pip install fht_cpu), and its time / pysketch's
  numpy fft     numpy.fft.fft(x, axis=-1) of the same rows (complex output; a reference
                point for an O(n log n) transform, not the same computation), and its ratio

With --batches, a further table times the in-place transform the way users call it on
batches of a given total size (l2 = 256 KiB, in cache; big = 32 MiB, beyond the caches of
most CPUs), on rows that start on a 64-byte boundary (aligned) and on an ordinary numpy
array (numpy: 16 bytes past one, where numpy puts large arrays), n = 2^8 .. 2^22 (as many
as the batch holds):

  nocheck       pysketch.fwht(x, out=x, check_finite=False)
  default       pysketch.fwht(x, out=x): in place with its defaults (the input is scanned
                for NaN and infinity before any of it is overwritten)
  fht_cpu       fht_cpu.fht(x, inplace=True, num_threads=1), and its time over each of the
                two pysketch columns

A last table times one long row (2^19, 2^20, 2^22 values) in place on 1 thread and on all
the threads pysketch uses by default, alternating, and prints the speed-up.
"""

import argparse
import math
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

_timing.one_thread()  # before any BLAS or OpenMP library loads

import numpy as np  # noqa: E402

import pysketch  # noqa: E402

try:
    import fht_cpu  # noqa: E402
except ImportError:
    fht_cpu = None

BATCH_ELEMENTS = 1 << 17


def best_times_ns(fns, data, buffer, budget_s, min_rounds=5, max_rounds=400, setups=None):
    """Best time in ns of each fn(buffer) in `fns` (a dict), alternated round by round
    (_timing.best_of); buffer is reset to data before every trial, and setups[name]() (when
    given) runs before that, both outside the timed region. budget_s is per contender."""

    def reset(name):
        if setups:
            setups[name]()
        np.copyto(buffer, data)

    return _timing.best_of(fns, budget_s, min_rounds, max_rounds, args=(buffer,), before=reset)


def measure(n, dtype, budget_s):
    rows = max(1, BATCH_ELEMENTS // n)
    data = np.random.default_rng(n).standard_normal((rows, n)).astype(dtype)
    # Rows on 64-byte boundaries, the same buffer for all contenders: rows 16 bytes past one
    # (where numpy usually puts large arrays) make an in-place transform slower; asv's
    # FwhtAlignment (benchmarks/asv/bench_fwht.py) times both.
    buffer = pysketch.empty_aligned(data.shape, dtype)
    fwht = pysketch.fwht
    fns = {
        "pysketch": lambda b: fwht(b, out=b, check_finite=False),
        "default": lambda b: fwht(b),
    }
    if fht_cpu is not None:
        # Check once that the peer computes the same transform (up to rounding order).
        check = data[:1].copy()
        fht_cpu.fht(check, inplace=True, num_threads=1)
        tol = 1e-3 if dtype == np.float32 else 1e-9
        if not np.allclose(check, fwht(data[:1]), rtol=tol, atol=tol * math.sqrt(n)):
            sys.exit(f"fht_cpu disagrees with pysketch at n={n} {np.dtype(dtype).name}")
        fns["fht_cpu"] = lambda b: fht_cpu.fht(b, inplace=True, num_threads=1)
    result = {name: t / rows for name, t in best_times_ns(fns, data, buffer, budget_s).items()}
    # numpy's FFT (a reference point only) on its own: at large n one trial takes as long
    # as a hundred of the others, and it would leave them few rounds
    fft = {"fft": lambda b: np.fft.fft(b, axis=-1)}
    result["fft"] = best_times_ns(fft, data, buffer, budget_s)["fft"] / rows
    result["rows"] = rows
    return result


def long_row_times_ns(log_n, dtype, threads, budget_s):
    """Best time of one in-place transform of a single row of 2^log_n on 1 thread and on
    `threads` (> 1), in alternating rounds (the row restored from the same data before each)."""
    n = 1 << log_n
    data = np.random.default_rng(log_n).standard_normal(n).astype(dtype)
    buffer = pysketch.empty_aligned(n, dtype)
    fns = dict.fromkeys((1, threads), lambda b: pysketch.fwht(b, out=b, check_finite=False))
    setups = {t: (lambda t=t: pysketch.set_num_threads(t)) for t in fns}
    try:
        best = best_times_ns(fns, data, buffer, budget_s, max_rounds=200, setups=setups)
    finally:
        pysketch.set_num_threads(1)
    return best[1], best[threads]


BATCH_BYTES = {"l2": 256 << 10, "big": 32 << 20}


def numpy_layout(shape, dtype, offset):
    """An array of `shape` whose data start `offset` bytes past a 64-byte boundary."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(nbytes + 64 + offset, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start : start + nbytes].view(dtype).reshape(shape)


def measure_batch(kind, layout, log_n, dtype, budget_s):
    """Per-row times (ns) of the in-place calls of the --batches table, or None when a row
    does not fit the batch."""
    n, item = 1 << log_n, np.dtype(dtype).itemsize
    if n * item > BATCH_BYTES[kind]:
        return None
    rows = BATCH_BYTES[kind] // (n * item)
    data = np.random.default_rng(log_n).standard_normal((rows, n)).astype(dtype)
    buffer = numpy_layout(data.shape, dtype, 0 if layout == "aligned" else 16)
    fwht = pysketch.fwht
    fns = {
        "nocheck": lambda b: fwht(b, out=b, check_finite=False),
        "default": lambda b: fwht(b, out=b),
        "fht_cpu": lambda b: fht_cpu.fht(b, inplace=True, num_threads=1),
    }
    budget = budget_s if kind == "l2" else 4 * budget_s
    return {k: t / rows for k, t in best_times_ns(fns, data, buffer, budget, min_rounds=3).items()}


def batch_table(kinds, layouts, budget_s):
    print()
    print("In-place batches: per-row time and fht_cpu's time over pysketch's (>= 1 means pysketch is faster)")
    print(f"{'batch':6} {'layout':8} {'dtype':7} {'n':>9} {'nocheck':>10} {'default':>10} {'fht_cpu':>10} "
          f"{'/nocheck':>9} {'/default':>9}")
    for kind in kinds:
        for layout in layouts:
            for dtype in (np.float32, np.float64):
                for log_n in range(8, 23):
                    r = measure_batch(kind, layout, log_n, dtype, budget_s)
                    if r is None:
                        continue
                    print(f"{kind:6} {layout:8} {np.dtype(dtype).name:7} {1 << log_n:>9} {format_ns(r['nocheck']):>10} "
                          f"{format_ns(r['default']):>10} {format_ns(r['fht_cpu']):>10} "
                          f"{r['fht_cpu'] / r['nocheck']:>8.2f}x {r['fht_cpu'] / r['default']:>8.2f}x", flush=True)


def format_ns(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.1f} ns"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--min-log-n", type=int, default=6)
    parser.add_argument("--max-log-n", type=int, default=20)
    parser.add_argument("--budget", type=float, default=0.25, help="seconds of trials per cell (default 0.25)")
    parser.add_argument("--no-long-rows", dest="long_rows", action="store_false",
                        help="skip the table of single long rows on 1 thread and on all threads")
    parser.add_argument("--batches", default="",
                        help="comma-separated batch kinds for the in-place table against fht_cpu: l2, big "
                             "(default: none; needs fht_cpu)")
    parser.add_argument("--layouts", default="aligned,numpy",
                        help="comma-separated layouts for --batches: aligned, numpy (default: both)")
    parser.add_argument("--only-batches", action="store_true", help="print only the --batches table")
    args = parser.parse_args(argv)
    kinds = [k for k in args.batches.split(",") if k]
    layouts = [k for k in args.layouts.split(",") if k]
    for k in kinds:
        if k not in BATCH_BYTES:
            parser.error(f"--batches: unknown kind {k!r} (allowed: {', '.join(BATCH_BYTES)})")
    for k in layouts:
        if k not in ("aligned", "numpy"):
            parser.error(f"--layouts: unknown layout {k!r} (allowed: aligned, numpy)")
    if kinds and fht_cpu is None:
        parser.error("--batches compares with fht_cpu, which is not installed (pip install fht_cpu)")

    all_threads = pysketch.get_num_threads()
    pysketch.set_num_threads(1)
    print("\n".join(_timing.header_lines()))
    print(f"Python {platform.python_version()}, numpy {np.__version__}, fht_cpu {_timing.package_version('fht_cpu')}")
    if args.only_batches:
        batch_table(kinds, layouts, args.budget)
        return 0
    print(f"Best of many trials per cell ({args.budget:g} s each); time per transform = best batch time / rows; "
          f"batches of ~{BATCH_ELEMENTS} elements")
    header = (
        f"{'dtype':7} {'n':>9} {'rows':>5} {'pysketch':>10} {'GFLOP/s':>8} {'default':>10} "
        f"{'fht_cpu':>10} {'fht_cpu/ps':>10} {'numpy fft':>10} {'fft/ps':>7}"
    )
    for dtype in (np.float32, np.float64):
        print()
        print(header)
        for log_n in range(args.min_log_n, args.max_log_n + 1):
            n = 1 << log_n
            r = measure(n, dtype, args.budget)
            ps = r["pysketch"]
            gflops = n * log_n / ps if log_n else 0.0
            peer = r.get("fht_cpu")
            peer_cols = f"{format_ns(peer):>10} {peer / ps:>9.2f}x" if peer else f"{'-':>10} {'-':>10}"
            print(
                f"{np.dtype(dtype).name:7} {n:>9} {r['rows']:>5} {format_ns(ps):>10} {gflops:>8.1f} "
                f"{format_ns(r['default']):>10} {peer_cols} {format_ns(r['fft']):>10} {r['fft'] / ps:>6.1f}x",
                flush=True,
            )
    if kinds:
        batch_table(kinds, layouts, args.budget)
    if args.long_rows:
        print()
        if all_threads < 2:
            print(f"One long row on all threads: skipped (pysketch uses {all_threads} thread here)")
            return 0
        print(f"One long row, in place: 1 thread against all {all_threads} (its sub-rows, then its columns)")
        print(f"{'dtype':7} {'n':>9} {'1 thread':>10} {f'{all_threads} threads':>10} {'speed-up':>9}")
        for dtype in (np.float32, np.float64):
            for log_n in (19, 20, 22):
                one, many = long_row_times_ns(log_n, dtype, all_threads, args.budget)
                print(f"{np.dtype(dtype).name:7} {1 << log_n:>9} {format_ns(one):>10} {format_ns(many):>10} "
                      f"{one / many:>8.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
