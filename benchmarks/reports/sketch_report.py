"""Print pysketch's performance report, one section per kernel family.

    python benchmarks/reports/sketch_report.py [--sections sincos] [--budget 0.3] [--levels best,avx2]

Every number is single-threaded, the best of many short trials (the machine may be shared),
divided by the number of elements: nanoseconds per element (lower is better).

Sections (each one a function section_<name>(args) registered in SECTIONS below; to report on
operators or sketches, write such a function and add it there):

  operator  one structured block (R3, GR2, Fastfood) per vector: Omega^T x for d = m in
            {64, 256, 1024, 4096} on a batch of 64 rows whose output stays in cache
  sketch    per-vector time of a whole sketch (complex exponential features, m = 10 d), the
            structured R3 route against the dense route (numpy/OpenBLAS products, one thread,
            then the same fused nonlinearity), d in {64, 256, 512, 1024, 4096}, fed in batches
            of 1, 256 and 4096 records; and the ratio dense / structured
  threads   n = 10^5, d = 256, m = 2560 sketched on 1 and on 2 threads
  memmap    a 4 GB float32 .npy sketched through np.load(mmap_mode='r') in a fresh process: its
            peak resident memory (VmHWM); needs ~4 GB of free disk (--memmap-gb to change)
  sincos    the SIMD cos/sin kernels of src/cpp/pysketch/sincos.hpp through pysketch._core:
            sincos on 8192 elements (in cache) and 2^22 elements (streaming), into preallocated
            outputs and (2^22) into new arrays, the fused
            accumulate_cis / accumulate_qcis on a (64, 8192) block with a dither, and NumPy doing
            the same: np.cos + np.sin into preallocated arrays, np.exp(1j * t), and
            (np.cos(t + u).sum(0), np.sin(t + u).sum(0)) for the accumulation.
"""

import argparse
import contextlib
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)
from _timing import best_ns  # noqa: E402

# Before any BLAS or OpenMP library loads: the dense route on one core, like ours.
_timing.one_thread()

import numpy as np  # noqa: E402

import pysketch  # noqa: E402
from pysketch import _core  # noqa: E402
from pysketch.runtime import SIMD_LEVELS  # noqa: E402

# ---------------------------------------------------------------------------------------------
# Helpers shared by the sections
# ---------------------------------------------------------------------------------------------


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



# ---------------------------------------------------------------------------------------------
# Operators and sketches
# ---------------------------------------------------------------------------------------------


def section_operator(args):
    from pysketch.operators import make_operator

    pysketch.set_num_threads(1)
    rows = []
    for d in (64, 256, 1024, 4096):
        row = [f"d = m = {d}"]
        for kind in ("r3", "gr2", "fastfood"):
            op = make_operator(d, d, kind=kind, random_state=0, dtype=np.float32)
            X = np.random.default_rng(0).standard_normal((64, d)).astype(np.float32)
            out = np.empty((64, d), np.float32)
            # the operator's unchecked product (its subclass contract), as the sketch calls it
            row.append(f"{best_ns(lambda: op._apply(X, out), args.budget) / 64 / 1e3:.3f}")
        rows.append(row)
    print_table(
        "== structured operator: one block, us per vector (float32, batch of 64, one thread) ==",
        ["size", "R3", "GR2", "Fastfood"], rows,
    )
    print("target: one R3 block at d = 1024 <= 0.45 us per vector")


def _sketch_time_per_vector(fm, X, batch, budget):
    from pysketch.accumulate import SketchAccumulator

    n = X.shape[0]

    def run():
        # buffer_rows=1: every update is sketched when it is made (a genuine record-by-record
        # cost; the default buffer would collect small updates into blocks)
        acc = SketchAccumulator(fm, buffer_rows=1)
        for start in range(0, n, batch):
            acc.update(X[start : start + batch])

    return best_ns(run, budget, min_trials=2, max_trials=50) / n


def section_sketch(args):
    from pysketch.features import make_feature_map

    pysketch.set_num_threads(1)
    rows = []
    for d in (64, 256, 512, 1024, 4096):
        m = 10 * d
        fs = make_feature_map(d, m, "complex", operator="r3", random_state=0, dtype=np.float32)
        fd = make_feature_map(d, m, "complex", operator="dense", random_state=0, dtype=np.float32)
        for batch in (1, 256, 4096):
            # enough records for a stable figure, few enough for the slow routes
            n_s = 4096 if batch > 1 else max(64, min(4096, (1 << 22) // m))
            n_d = max(batch, min(4096, (1 << 26) // (d * m) * max(1, batch))) if batch > 1 else max(4, min(256, (1 << 24) // (d * m)))
            Xs = np.random.default_rng(1).standard_normal((n_s, d)).astype(np.float32)
            Xd = Xs[:n_d] if n_d <= n_s else np.random.default_rng(1).standard_normal((n_d, d)).astype(np.float32)
            ts = _sketch_time_per_vector(fs, Xs, batch, args.budget)
            td = _sketch_time_per_vector(fd, Xd, batch, args.budget)
            rows.append([f"{d}", f"{m}", f"{batch}", f"{ts / 1e3:.2f}", f"{ts / m:.3f}", f"{td / 1e3:.2f}",
                         f"{td / ts:.1f}x"])
        del fd
    print_table(
        "== sketch: us per record, complex exponential features, float32, one thread ==",
        ["d", "m", "batch", "R3 us", "R3 ns/feature", "dense us", "dense/R3"], rows,
    )
    print("targets: R3 sketch at d = 1024, m = 10240 <= 8.3 us per record (0.8 ns/feature); structured >= 15x dense")
    print("at d = 1024, m = 10240, batch 4096; >= 10x at d = 512 record by record (batch 1)")


def section_threads(args):
    from pysketch.features import make_feature_map

    before = pysketch.get_num_threads()
    fm = make_feature_map(256, 2560, "complex", operator="r3", random_state=0, dtype=np.float32)
    X = np.random.default_rng(2).standard_normal((100_000, 256)).astype(np.float32)
    times = {}
    for threads in (1, 2):
        pysketch.set_num_threads(threads)
        times[threads] = best_ns(lambda: fm.sketch(X), args.budget, min_trials=3, max_trials=20)
    pysketch.set_num_threads(before)
    print_table(
        "== threads: n = 10^5, d = 256, m = 2560, R3, complex features, float32 ==",
        ["threads", "seconds", "us per record", "speed-up"],
        [[f"{t}", f"{times[t] / 1e9:.3f}", f"{times[t] / 1e5 / 1e3:.3f}", f"{times[1] / times[t]:.2f}x"] for t in (1, 2)],
    )
    print("target: 2 threads >= 1.7x one thread")


def section_memmap(args):
    import shutil
    import subprocess
    import tempfile

    d = 256
    rows = int(args.memmap_gb * 2**30) // (4 * d)
    tmp = tempfile.mkdtemp(prefix="pysketch-memmap-")
    try:
        if shutil.disk_usage(tmp).free < rows * d * 4 * 1.2:
            print("== memmap: skipped (not enough free disk) ==")
            return
        path = os.path.join(tmp, "data.npy")
        arr = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, d))
        rng = np.random.default_rng(3)
        step = 1 << 16
        for start in range(0, rows, step):
            arr[start : start + step] = rng.standard_normal((min(step, rows - start), d), dtype=np.float32)
        arr.flush()
        del arr
        # The peak is read from /proc/self/status (VmHWM: the high-water mark of this
        # process's own address space). ru_maxrss would not do: on Linux it survives exec
        # and so includes the memory of the parent at fork time.
        code = (
            "import time, numpy as np, pysketch\n"
            "from pysketch.features import make_feature_map\n"
            "fm = make_feature_map(256, 512, operator='r3', random_state=0, dtype=np.float32)\n"
            f"X = np.load({path!r}, mmap_mode='r')\n"
            "t = time.perf_counter(); sk = fm.sketch(X); t = time.perf_counter() - t\n"
            "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
            "print(sk.count, t, int(hwm) / 1024)\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
        count, seconds, peak_mb = int(out[0]), float(out[1]), float(out[2])
        print_table(
            f"== memmap: {rows * d * 4 / 2**30:.2f} GiB float32 .npy (n = {count}, d = 256, m = 512) in a fresh process ==",
            ["records", "seconds", "peak RSS MB (VmHWM)"], [[f"{count}", f"{seconds:.1f}", f"{peak_mb:.0f}"]],
        )
        print("target: peak memory under 300 MB")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


SECTIONS = {
    "operator": section_operator,
    "sketch": section_sketch,
    "threads": section_threads,
    "sincos": section_sincos,
    "memmap": section_memmap,
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sections", default=",".join(SECTIONS),
                        help=f"comma-separated sections to run (default: all: {', '.join(SECTIONS)})")
    parser.add_argument("--budget", type=float, default=0.3, help="seconds of trials per cell (default 0.3)")
    parser.add_argument("--memmap-gb", type=float, default=4.0, help="size of the memmap section's file (default 4)")
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
    print("\n".join(_timing.header_lines()))
    print(f"Python {platform.python_version()}, numpy {np.__version__}, pysketch "
          f"{_timing.package_version('pysketch')}; budget {args.budget:g} s per cell")
    for name in sections:
        SECTIONS[name](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
