"""How close the transforms come to what this CPU can issue: a measured lower bound per kernel.

    python benchmarks/reports/issue_bound.py [--budget 0.3]

For the fast Walsh-Hadamard transform of 2^10 values (float32 and float64) and for one R3
block at d = 1024 (three transforms and four diagonal products), the script counts the
vector operations the kernels must execute, times this CPU on exactly that mix of
operations with no dependencies between them (inline assembly, compiled here with the
system C compiler), and prints the resulting time as a lower bound next to pysketch's
measured time and the issue's target.

The operation counts (AVX-512, 16 floats or 8 doubles per register; sections 2.1 and 3.3
of ../shared/notes/anchors_fwht.md describe the method):

  * a level within a register costs one shuffle and one multiply-add by a +-1 vector per
    register (vpermilps/vpermilpd for the smallest strides, vshuff32x4/vshuff64x2 across
    128-bit lanes): 4 such levels for float, 3 for double;
  * every other level costs one addition or subtraction per register; each subtraction may
    go to the adders or to the multiply-add units (a - b = fnmadd(b, 1, a)), and the bound
    takes the best split;
  * the transform of 2^10 values does not fit in the registers, so every value is loaded
    and stored twice (two passes); an R3 block does that three times and multiplies by
    four diagonals (one product per register each).

Each count is taken for 512-bit registers (the kernels' own) and for 256-bit ones (fewer
levels inside a register, hence fewer operations, at half the width), and each is timed.
The loop runs the counted operations, in proportion, on 24 independent registers, so it
is limited only by how many of them the core can start per cycle: no kernel with these
operations can be faster. It is not a proof that no transform with fewer operations
exists; those counts are the smallest of the kernels we know (anchors_fwht.md, 2.1).
Needs x86-64 with AVX-512F, and gcc or cc on the PATH; otherwise it says so and stops.
"""

import argparse
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

_timing.one_thread()  # before any BLAS or OpenMP library loads

import numpy as np  # noqa: E402

import pysketch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fwht_report import measure  # noqa: E402  (benchmarks/reports/fwht_report.py)

# Operations per transform (see the docstring), per register width. Keys: perm (shuffle
# within 128-bit lanes), lane (shuffle across them), fma (sign multiply-add of the
# in-register levels), addsub (cross-register levels), mul (diagonal products), st / ld
# (vector stores and loads).


def fwht_ops(log_n, log_lanes, in_lane_levels, transforms=1, diagonals=0):
    vectors = 1 << (log_n - log_lanes)
    perm = min(log_lanes, in_lane_levels)
    ops = dict(perm=perm * vectors, lane=(log_lanes - perm) * vectors, fma=log_lanes * vectors,
               addsub=(log_n - log_lanes) * vectors, mul=0, st=2 * vectors, ld=2 * vectors)
    ops = {k: transforms * v for k, v in ops.items()}
    ops["mul"] = diagonals * vectors
    return ops, vectors


# name -> {register width: (operation counts, vectors, instruction suffix)}; within 128 bits
# a float register holds 4 values (2 in-lane levels), a double register 2 (1 level).
KERNELS = {
    "fwht float32 n=2^10": {w: (*fwht_ops(10, lw, 2), "ps") for w, lw in (("zmm", 4), ("ymm", 3))},
    "fwht float64 n=2^10": {w: (*fwht_ops(10, lw, 1), "pd") for w, lw in (("zmm", 3), ("ymm", 2))},
    "R3 block float32 d=1024": {w: (*fwht_ops(10, lw, 2, 3, 4), "ps") for w, lw in (("zmm", 4), ("ymm", 3))},
}
TARGET_NS = {"fwht float32 n=2^10": 150.0, "fwht float64 n=2^10": 250.0, "R3 block float32 d=1024": 450.0}
PER_LOOP = 8  # the probe loop holds the operations of 8 registers' worth of the kernel
SPLITS = 6  # subtraction splits tried: 0, 1/10, .., 5/10 of the additions on the FMA units
FP_KINDS = ("perm", "lane", "fma", "addsub", "mul")


def instruction(kind, sfx, width, reg, slot):
    r = f"%%{width}{reg}"
    if kind == "perm":
        return f"vpermil{sfx} $0x{'b1' if sfx == 'ps' else '55'}, {r}, {r}"
    if kind == "lane":
        imm = "0xb1" if width == "zmm" else "0x1"
        return f"vshuf{'f32x4' if sfx == 'ps' else 'f64x2'} ${imm}, {r}, {r}, {r}"
    if kind == "fma":
        return f"vfmadd231{sfx} %%{width}30, %%{width}31, {r}"
    if kind == "add":
        return f"vadd{sfx} %%{width}30, {r}, {r}"
    if kind == "subx":
        return f"vfnmadd231{sfx} %%{width}30, %%{width}31, {r}"
    if kind == "mul":
        return f"vmul{sfx} %%{width}30, {r}, {r}"
    if kind == "st":
        return f"vmovups {r}, {64 * (slot % 64)}(%0)"
    if kind == "ld":
        return f"vmovups {64 * (slot % 64)}(%1), %%{width}{24 + slot % 6}"
    raise ValueError(kind)


def interleave(counts):
    """The kinds of counts (kind -> number) spread evenly over one sequence."""
    total = sum(counts.values())
    done = dict.fromkeys(counts, 0)
    order = []
    for i in range(total):
        kind = max(counts, key=lambda k: (i + 1) * counts[k] / total - done[k])
        done[kind] += 1
        order.append(kind)
    return order


def loop_body(counts, vectors, sfx, width, split):
    """Assembly for PER_LOOP registers' worth of a kernel's operations, `split` tenths of the
    additions as fnmadd."""
    c = {k: v * PER_LOOP // vectors for k, v in counts.items()}
    subx = c["addsub"] * split // 10
    mix = {"perm": c["perm"], "lane": c["lane"], "fma": c["fma"], "add": c["addsub"] - subx, "subx": subx,
           "mul": c["mul"], "st": c["st"], "ld": c["ld"]}
    order = interleave({k: v for k, v in mix.items() if v})
    lines, slots = [], {"st": 0, "ld": 0}
    for i, kind in enumerate(order):
        slot = slots.get(kind, 0)
        if kind in slots:
            slots[kind] += 1
        lines.append(instruction(kind, sfx, width, i % 24, slot))
    return "\\n\\t".join(lines) + "\\n\\t"


C_SOURCE = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static float buf[2][64 * 16] __attribute__((aligned(64)));
/* clock: a chain of dependent register additions, one per cycle */
static double ghz(void) {
    double best = 1e9; const long n = 4000000;
    for (int r = 0; r < 30; r++) {
        long a = 1, b = 1; double t0 = now();
        for (long i = 0; i < n; i++) __asm__ volatile("add %1,%0\n\tadd %1,%0\n\tadd %1,%0\n\tadd %1,%0" : "+r"(a) : "r"(b));
        double e = now() - t0; if (e < best) best = e;
    }
    return 4.0 * n / best / 1e9;
}
#define CLOBBER "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", \
    "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", \
    "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29"
#define RUN(name, body) { double best = 1e9; const long n = 20000; float *p = buf[0], *q = buf[1]; \
    for (int r = 0; r < TRIALS; r++) { double t0 = now(); \
        for (long i = 0; i < n; i++) __asm__ volatile(body :: "r"(p), "r"(q) : CLOBBER); \
        double e = now() - t0; if (e < best) best = e; } \
    printf("%s %.5f\n", name, best * 1e9 / n); }
int main(void) {
    double g = ghz();
    printf("ghz %.4f\n", g);
    __asm__ volatile("vpxord %%zmm30, %%zmm30, %%zmm30\n\tvpxord %%zmm31, %%zmm31, %%zmm31" ::: "xmm30", "xmm31");
"""


def build(workdir, trials, ymm):
    """Compile the probe; returns (path of the executable, None) or (None, why not)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        return None, "no C compiler (gcc or cc) on the PATH"
    lines = [C_SOURCE, f"#define TRIALS {trials}"]
    for name, widths in KERNELS.items():
        for width, (counts, vectors, sfx) in widths.items():
            if width == "ymm" and not ymm:
                continue
            for split in range(SPLITS):
                body = loop_body(counts, vectors, sfx, width, split)
                lines.append(f'    RUN("{name.replace(" ", "_")}|{width}|{split}", "{body}")')
    lines.append("    return 0;\n}\n")
    src = os.path.join(workdir, "issue_bound.c")
    exe = os.path.join(workdir, "issue_bound")
    with open(src, "w") as f:
        f.write("\n".join(lines))
    flags = ["-mavx512f", "-mavx512vl"] if ymm else ["-mavx512f"]
    done = subprocess.run([cc, "-O2", *flags, src, "-o", exe], capture_output=True, text=True)
    if done.returncode != 0:
        return None, f"{cc} could not build the probe:\n{done.stderr[-2000:]}"
    return exe, None


def run_probe(exe):
    """{"ghz": clock, "<kernel>|<split>": best ns per loop iteration, ...}"""
    done = subprocess.run([exe], capture_output=True, text=True, check=True)
    out = {}
    for line in done.stdout.splitlines():
        key, value = line.split()
        out[key] = float(value)
    return out


def _has_avx512vl():
    """Whether the 256-bit forms of the AVX-512 instructions (and registers 16-31) exist."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(line.startswith("flags") and " avx512vl" in line for line in f)
    except OSError:
        return False


def measured_ns(name, budget):
    if name.startswith("fwht"):
        return measure(1024, np.float32 if "float32" in name else np.float64, budget)["pysketch"]
    from pysketch.operators import make_operator

    op = make_operator(1024, 1024, kind="r3", random_state=0, dtype=np.float32)
    X = np.random.default_rng(0).standard_normal((64, 1024)).astype(np.float32)
    out = np.empty((64, 1024), np.float32)
    # the operator's unchecked product (its subclass contract)
    return _timing.best_ns(lambda: op._apply(X, out), budget, max_trials=5000) / 64


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=0.3, help="seconds of trials per pysketch timing")
    parser.add_argument("--trials", type=int, default=300, help="trials per operation mix (best is kept)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of probe and timings (best of each is kept)")
    args = parser.parse_args(argv)
    if platform.machine().lower() not in ("x86_64", "amd64") or pysketch.max_simd_level() != "avx512":
        print(f"issue_bound: needs x86-64 with AVX-512F (this is {platform.machine()}, "
              f"best level {pysketch.max_simd_level()}); nothing measured")
        return 0
    pysketch.set_num_threads(1)
    # A few rounds, each the probe then pysketch's timings, and the best of each figure:
    # this shared machine has stretches of seconds to minutes in which everything runs slow.
    probe, ours = {}, {}
    with tempfile.TemporaryDirectory() as workdir:
        exe, error = build(workdir, args.trials, ymm=_has_avx512vl())
        if exe is None:
            print(f"issue_bound: {error}")
            return 0
        for _ in range(args.rounds):
            for key, value in run_probe(exe).items():
                probe[key] = max(probe.get(key, 0.0), value) if key == "ghz" else min(probe.get(key, math.inf), value)
            for name in KERNELS:
                ours[name] = min(ours.get(name, math.inf), measured_ns(name, args.budget))
    ghz = probe.pop("ghz")
    print(f"pysketch {pysketch.__version__}, SIMD level {pysketch.simd_level()}, one thread; "
          f"clock {ghz:.2f} GHz (dependent register additions)")
    print("bound = the kernel's operations issued with no dependencies (best split of the subtractions); "
          "pysketch = best of many trials\n")
    header = (f"{'kernel':25} {'width':>5} {'ops':>5} {'stores':>6} {'cyc/op':>6} {'bound ns':>8} {'pysketch ns':>11} "
              f"{'% of bound':>10} {'target ns':>9} {'target needs':>12}")
    print(header)
    print("-" * len(header))
    for name, widths in KERNELS.items():
        key = name.replace(" ", "_")
        for width, (counts, vectors, _) in widths.items():
            runs = [v for k, v in probe.items() if k.split("|")[:2] == [key, width]]
            if not runs:
                continue
            # one loop = PER_LOOP registers' worth of the kernel
            bound = min(runs) * vectors / PER_LOOP
            fp_ops = sum(counts[k] for k in FP_KINDS)
            cycles_per_op = bound * ghz / fp_ops
            target = TARGET_NS[name]
            print(f"{name:25} {width:>5} {fp_ops:>5} {counts['st']:>6} {cycles_per_op:>6.3f} {bound:>8.1f} "
                  f"{ours[name]:>11.1f} {100 * bound / ours[name]:>9.0f}% {target:>9.0f} {100 * bound / target:>11.0f}%")
    print("\nwidth: the registers of the probe (zmm: 512 bits, the kernels' own; ymm: 256 bits, fewer levels within a "
          "register and so fewer operations, but twice the registers). The smaller bound holds for a kernel of either "
          "width.\n% of bound: bound / pysketch time. target needs: bound / target, the share of "
          "the bound a kernel must reach to meet the target (through Python for the fwht rows, as fwht_report.py times "
          "them).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
