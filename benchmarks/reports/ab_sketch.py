"""Sketch speed A/B in one process: an earlier pysketch against this one, interleaved.

    python benchmarks/reports/ab_sketch.py --old DIR [--rounds 7]

DIR holds a copy of an earlier pysketch under the package name ``pysketch_old`` (its
Python files and its compiled ``_core``; the package imports itself relatively, so the
renamed copy loads beside this one), made for example with

    git archive <rev> src/pysketch | tar -x -C /tmp/ab && mv /tmp/ab/src/pysketch DIR/pysketch_old
    cp <that revision's built _core*.so> DIR/pysketch_old/

Each case sketches the same float32 data with both (the sums are checked bit for bit),
one thread each, and prints the best CPU time of ``rounds`` interleaved rounds of 3 runs
and the ratio new / old. Issue 15 asks for ratios within 3% (1.03).
"""
import argparse
import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

_timing.one_thread()  # before any BLAS or OpenMP library loads

import numpy as np  # noqa: E402

CASES = [("dense d=10 m=1000 n=20000", 10, 1000, "dense", 20000, None),
         ("dense d=300 m=3000 n=2000 (BLAS)", 300, 3000, "dense", 2000, None),
         ("r3 d=64 m=640 n=20000", 64, 640, "r3", 20000, None),
         ("r3 d=1024 m=10240 n=2000", 1024, 10240, "r3", 2000, None),
         ("r3 d=4096 m=40960 n=400", 4096, 40960, "r3", 400, None),
         ("r3 d=512 m=5120 n=2000", 512, 5120, "r3", 2000, None),
         ("r3 d=64 m=640, 2000 single records", 64, 640, "r3", 2000, "rows"),
         ("dense d=10 m=1000 subsampled r=100", 10, 1000, "dense", 20000, "sub"),
         ("r3 d=64 m=640 blocks r=64", 64, 640, "r3", 20000, "blocks")]

def job(pkg, Acc, d, m, op, n, mode):
    fm = pkg.make_feature_map(d, m, "complex", operator=op, random_state=0, dtype=np.float32)
    X = np.random.default_rng(1).standard_normal((n, d)).astype(np.float32)
    if mode is None:
        return lambda: fm.sketch(X)
    if mode == "sub":
        return lambda: fm.sketch_subsampled(X, 100, random_state=2)
    if mode == "blocks":
        return lambda: fm.sketch_subsampled(X, 64, scheme="blocks", random_state=2)
    def rows():
        acc = Acc(fm)
        for i in range(n):
            acc.update(X[i : i + 1])
        return acc.sketch()
    return rows

def cpu(f, reps):
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()
        f()
        best = min(best, time.process_time() - t)
    return best

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="folder holding the package pysketch_old")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (best of all)")
    args = parser.parse_args(argv)
    sys.path.insert(0, args.old)
    old = importlib.import_module("pysketch_old")
    import pysketch as new

    for pkg in (old, new):
        pkg.set_num_threads(1)
    print(f"old: {old.__file__}\nnew: {new.__file__}; SIMD {new.simd_level()}, one thread, CPU time")
    print(f"{'case':<40} {'old ms':>8} {'new ms':>8} {'new/old':>8}")
    for name, d, m, op, n, mode in CASES:
        a = job(old, old.SketchAccumulator, d, m, op, n, mode)
        b = job(new, new.SketchAccumulator, d, m, op, n, mode)
        assert np.array_equal(a().sum, b().sum), name
        ta = tb = float("inf")
        for _ in range(args.rounds):
            ta = min(ta, cpu(a, 3))
            tb = min(tb, cpu(b, 3))
        print(f"{name:<40} {ta * 1e3:8.2f} {tb * 1e3:8.2f} {tb / ta:8.3f}")


if __name__ == "__main__":
    main()
