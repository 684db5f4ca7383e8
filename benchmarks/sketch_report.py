"""Print pysketch's performance report, one section per kernel family.

    python benchmarks/sketch_report.py [--sections sincos] [--budget 0.3] [--levels best,avx2]

Every number is single-threaded, the best of many short trials (the machine may be shared),
divided by the number of elements: nanoseconds per element (lower is better).

Sections (each one a function section_<name>(args) registered in SECTIONS below; to report on
operators or sketches, write such a function and add it there):

  sincos    the SIMD cos/sin kernels of src/cpp/pysketch/sincos.hpp through pysketch._core:
            sincos on 8192 elements (in cache) and 2^22 elements (streaming), into preallocated
            outputs and (2^22) into new arrays, the fused
            accumulate_cis / accumulate_qcis on a (64, 8192) block with a dither, and NumPy doing
            the same: np.cos + np.sin into preallocated arrays, np.exp(1j * t), and
            (np.cos(t + u).sum(0), np.sin(t + u).sum(0)) for the accumulation.
"""

import argparse
import contextlib
import importlib.metadata
import math
import os
import platform
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # before any OpenMP library loads

import numpy as np  # noqa: E402

import pysketch  # noqa: E402
from pysketch import _core  # noqa: E402
from pysketch.runtime import SIMD_LEVELS  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Helpers shared by the sections
# ---------------------------------------------------------------------------------------------


def cpu_model():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def package_version(name):
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def best_ns(fn, budget_s, min_trials=3, max_trials=2000):
    """Best wall time of fn() in nanoseconds over trials filling about budget_s seconds."""
    fn()  # warm up (first-touch pages, caches, lazy initialisation)
    best = math.inf
    deadline = time.perf_counter() + budget_s
    trials = 0
    while trials < min_trials or (trials < max_trials and time.perf_counter() < deadline):
        start = time.perf_counter_ns()
        fn()
        best = min(best, time.perf_counter_ns() - start)
        trials += 1
    return best


@contextlib.contextmanager
def simd_level(level):
    """Run the block with pysketch's kernels at `level` ('best' = the highest available)."""
    before = pysketch.simd_level()
    pysketch.set_simd_level(pysketch.max_simd_level() if level == "best" else level)
    try:
        yield
    finally:
        pysketch.set_simd_level(before)


def usable_levels(requested):
    """The requested levels this CPU has, as (label, level name) pairs."""
    best = pysketch.max_simd_level()
    out = []
    for level in requested:
        name = best if level == "best" else level
        if name not in SIMD_LEVELS:
            sys.exit(f"unknown SIMD level {level!r}; allowed: best, {', '.join(SIMD_LEVELS)}")
        if SIMD_LEVELS.index(name) > SIMD_LEVELS.index(best):
            print(f"(skipping SIMD level {name!r}: this CPU's best is {best!r})")
            continue
        if name not in [n for _, n in out]:
            out.append((name, name))
    return out


def fmt(ns):
    return f"{ns:.3f}" if ns < 10 else f"{ns:.1f}"


def print_table(title, header, rows):
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    print()
    print(title)
    line = "  ".join(str(h).ljust(w) if i < 2 else str(h).rjust(w) for i, (h, w) in enumerate(zip(header, widths)))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(str(c).ljust(w) if i < 2 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths))))


# ---------------------------------------------------------------------------------------------
# Section: sincos
# ---------------------------------------------------------------------------------------------

SINCOS_SMALL = 8192
SINCOS_LARGE = 1 << 22
CIS_SHAPE = (64, 8192)
# Targets of the sincos kernels on the development machine (AMD EPYC Zen 4), single thread.
SINCOS_TARGET_NS = {"float32": 0.35, "float64": 1.2}


def section_sincos(args):
    levels = usable_levels(args.levels)
    rng = np.random.default_rng(0)
    level_cols = [f"pysketch[{label}]" for label, _ in levels]
    header = ["dtype", "operation", *level_cols, "numpy cos+sin", "numpy exp(1j t)", "numpy/pysketch"]
    rows = []
    for dtype in ("float32", "float64"):
        for n, where, new_arrays in ((SINCOS_SMALL, "in cache", False), (SINCOS_LARGE, "streaming", False),
                                     (SINCOS_LARGE, "streaming", True)):
            t = rng.uniform(-30, 30, n).astype(dtype)
            c, s = np.empty_like(t), np.empty_like(t)
            if new_arrays:  # each call allocates its two outputs (fresh pages for large n)
                call, label = (lambda: _core.sincos(t)), f"sincos, n=2^{n.bit_length() - 1}, new arrays"
            else:
                call = lambda: _core.sincos(t, c, s)  # noqa: E731
                label = f"sincos, n={n} ({where})" if n < 1 << 16 else f"sincos, n=2^{n.bit_length() - 1} ({where})"
            ours = []
            for _, level in levels:
                with simd_level(level):
                    ours.append(best_ns(call, args.budget) / n)
            if new_arrays:
                np_sc = best_ns(lambda: (np.cos(t), np.sin(t)), args.budget) / n
            else:
                np_sc = best_ns(lambda: (np.cos(t, out=c), np.sin(t, out=s)), args.budget) / n
            np_exp = best_ns(lambda: np.exp(1j * t), args.budget) / n if not new_arrays else None
            rows.append([dtype, label, *map(fmt, ours), fmt(np_sc), fmt(np_exp) if np_exp else "-",
                         f"{np_sc / ours[0]:.1f}x"])
        rows_, n = CIS_SHAPE
        t = rng.uniform(-30, 30, CIS_SHAPE).astype(dtype)
        u = rng.uniform(0, 2 * np.pi, n).astype(dtype)
        acc_a, acc_b = np.zeros(n), np.zeros(n)
        for kind, numpy_fn in (
            ("cis", lambda: (np.cos(t + u).sum(axis=0), np.sin(t + u).sum(axis=0))),
            ("qcis", lambda: ((np.cos(t + u) < 0).sum(axis=0), (np.sin(t + u) < 0).sum(axis=0))),
        ):
            fn = getattr(_core, "accumulate_" + kind)
            ours = []
            for _, level in levels:
                with simd_level(level):
                    ours.append(best_ns(lambda: fn(t, u, acc_a, acc_b), args.budget) / t.size)
            np_time = best_ns(numpy_fn, args.budget) / t.size
            rows.append([dtype, f"accumulate_{kind} {CIS_SHAPE}, dither", *map(fmt, ours), fmt(np_time), "-",
                         f"{np_time / ours[0]:.1f}x"])
    print_table(
        "== sincos: ns per element (t uniform in [-30, 30]), single thread, best of many trials ==",
        header, rows)
    print("numpy/pysketch: NumPy's time over pysketch's first column. NumPy for accumulate_*: the same sums "
          "computed with np.cos/np.sin of t + u (and comparisons with 0 for qcis).\n"
          "sincos rows write into preallocated arrays (_core.sincos(t, cos_out, sin_out); NumPy: np.cos(t, out=...)), "
          "except the 'new arrays' rows (both sides allocate their results).")
    tiny = np.zeros(16, np.float32)
    tc, ts = np.empty_like(tiny), np.empty_like(tiny)
    overhead = best_ns(lambda: _core.sincos(tiny, tc, ts), args.budget)
    print(f"Call overhead (pybind11, argument checks, GIL release; _core.sincos on 16 elements): {overhead / 1e3:.2f} us, "
          f"i.e. {overhead / SINCOS_SMALL:.3f} ns/element of the n={SINCOS_SMALL} rows.")
    level = levels[0][1]
    for dtype, target in SINCOS_TARGET_NS.items():
        got = [r for r in rows if r[0] == dtype and r[1].startswith(f"sincos, n={SINCOS_SMALL}")][0][2]
        kernel = float(got) - overhead / SINCOS_SMALL
        print(f"target: {dtype} sincos <= {target} ns/element; at {level}, n={SINCOS_SMALL}: {got} ns/element "
              f"({kernel:.3f} without the call overhead)")


SECTIONS = {
    "sincos": section_sincos,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated sections to run (default: all: {', '.join(SECTIONS)})")
    parser.add_argument("--budget", type=float, default=0.3, help="seconds of trials per cell (default 0.3)")
    parser.add_argument("--levels", default="best,avx2",
                        help="comma-separated SIMD levels to time pysketch at: best, avx512, avx2, sse, scalar "
                             "(default: best,avx2)")
    args = parser.parse_args(argv)
    args.levels = [level.strip() for level in args.levels.split(",") if level.strip()]
    sections = [name.strip() for name in args.sections.split(",") if name.strip()]
    for name in sections:
        if name not in SECTIONS:
            parser.error(f"unknown section {name!r}; available: {', '.join(SECTIONS)}")

    pysketch.set_num_threads(1)
    print(f"pysketch {pysketch.__version__}: SIMD level {pysketch.simd_level()} (max {pysketch.max_simd_level()}), "
          f"threads {pysketch.get_num_threads()}")
    print(f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs)")
    print(f"Python {platform.python_version()}, numpy {np.__version__}, pysketch "
          f"{package_version('pysketch')}; budget {args.budget:g} s per cell")
    for name in sections:
        SECTIONS[name](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
