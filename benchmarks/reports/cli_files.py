"""`pysketch sketch` over many .npy files against sketching one in-memory array: time and memory.

    python benchmarks/reports/cli_files.py
    python benchmarks/reports/cli_files.py --files 20 --rows 1000000 --d 10 --repeat 3

Writes --files .npy files of --rows float32 records each (d = --d; default 20 x 10^6 x 10,
800 MB in all) to a temporary folder (--dir to choose it), then, best of --repeat runs,
alternating the two contenders so that both sample the same stretches of a shared machine:

- cli: ``python -m pysketch sketch DIR/*.npy -o S.npz`` in a child process with the
  default map of `pysketch sketch` (complex features, m = 1000, dense float32 operator
  below d = 64, Gaussian law of kernel scale 1, seed 0). Its wall time from launch to
  exit (Python start-up, imports, reading, sketching, writing) and the sketching time it
  prints; its peak resident memory is its own ru_maxrss (os.wait4 on that child);
- in-memory: a child process that reads the same records into one (n, d) float32 array
  (not timed), then times ``fm.sketch(X)`` with the same map; its peak resident memory
  (the array included) is printed for reference.

Peak memory is each process's VmHWM (/proc/self/status, read by the process itself at its
end: the cli runs through runpy as ``python -m`` does), not ru_maxrss, which on Linux also
counts the parent's pages at fork time. CPU times (user + system) are printed beside the
wall times: on a shared machine they vary less.

Also the start-up cost alone (``python -c "import pysketch"``: time and peak memory). The
two sketches are checked to agree (the float64 sums differ only in the order of their
additions). Targets: the cli's peak memory under 300 MB, its speed at least 80% of the
in-memory sketch (in-memory time / cli time >= 0.8).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

_timing.one_thread(("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"))  # BLAS only: pysketch keeps its threads

import numpy as np  # noqa: E402

#: Runs a command line in this process and reports its peak resident memory (VmHWM: the
#: high-water mark of this process's memory since exec; ru_maxrss of a child would also
#: count the parent's pages at fork time).
PEAK = r"""
import sys
def _peak():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
"""

LAUNCH = PEAK + r"""
import runpy
sys.argv = ["pysketch"] + sys.argv[1:]
code = 0
try:
    runpy.run_module("pysketch", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code or 0
print("peak-MB", _peak(), file=sys.stderr)
sys.exit(code)
"""

STARTUP = PEAK + r"""
import pysketch
print("peak-MB", _peak(), file=sys.stderr)
"""

IN_MEMORY = PEAK + r"""
import glob, os, time
import numpy as np
from pysketch.features import make_feature_map
folder, out = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(os.path.join(folder, "*.npy")))
shapes = [np.load(f, mmap_mode="r").shape for f in files]
X = np.empty((sum(s[0] for s in shapes), shapes[0][1]), np.float32)
row = 0
for f in files:
    part = np.load(f)
    X[row:row + part.shape[0]] = part
    row += part.shape[0]
    del part
# the default map of `pysketch sketch`
fm = make_feature_map(X.shape[1], 1000, "complex", operator="auto", random_state=0, dtype=np.float32)
wall, cpu = time.perf_counter(), time.process_time()
s = fm.sketch(X)
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
s.save(out)
print(wall, cpu)
print("peak-MB", _peak(), file=sys.stderr)
"""


def run(cmd):
    """(wall seconds, CPU seconds, peak resident MB, stdout) of the child process cmd, which
    must succeed and print its peak as 'peak-MB <x>' on stderr."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own resources
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, errors = out.read().decode(), err.read().decode()
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{text}\n{errors}")
    peak = float(errors.rsplit("peak-MB", 1)[1].split()[0])
    return wall, usage.ru_utime + usage.ru_stime, peak, text


def write_files(folder, n_files, rows, d, dtype):
    rng = np.random.default_rng(0)
    centers = rng.normal(0.0, 2.0, (10, d)).astype(dtype)
    for i in range(n_files):
        X = centers[rng.integers(0, 10, rows)] + rng.standard_normal((rows, d), dtype=np.float32).astype(dtype)
        np.save(os.path.join(folder, f"part{i:03d}.npy"), X)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=20, help="number of .npy files (default 20)")
    parser.add_argument("--rows", type=int, default=10**6, help="records per file (default 10^6)")
    parser.add_argument("--d", type=int, default=10, help="columns (default 10)")
    parser.add_argument("--dtype", default="float32", choices=("float32", "float64"),
                        help="the files' dtype (default float32, the map's precision)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each contender, best kept (default 3)")
    parser.add_argument("--dir", default=None, help="where to write the files (default: a temporary folder)")
    parser.add_argument("--keep", action="store_true", help="keep the files")
    args = parser.parse_args()

    for line in _timing.header_lines():
        print(line)
    folder = args.dir or tempfile.mkdtemp(prefix="pysketch-cli-files-")
    os.makedirs(folder, exist_ok=True)
    n = args.files * args.rows
    try:
        t = time.perf_counter()
        write_files(folder, args.files, args.rows, args.d, np.dtype(args.dtype))
        size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".npy"))
        print(f"data: {args.files} .npy files of {args.rows} x {args.d} {args.dtype} ({size / 2**20:.0f} MiB) in "
              f"{folder}, written in {time.perf_counter() - t:.1f} s")
        cli_out = os.path.join(folder, "cli.npz")
        mem_out = os.path.join(folder, "memory.npz")
        cli_args = ["sketch", os.path.join(folder, "*.npy"), "-o", cli_out, "--force"]
        cli_cmd = [sys.executable, "-c", LAUNCH, *cli_args]
        mem_cmd = [sys.executable, "-c", IN_MEMORY, folder, mem_out]
        print(f"cli: python -m pysketch {' '.join(cli_args)}")

        startup = min(run([sys.executable, "-c", STARTUP])[::2] for _ in range(3))
        print(f"start-up (import pysketch): {startup[0]:.2f} s, peak RSS {startup[1]:.0f} MB")
        best_cli, best_mem, peak = (np.inf,) * 3, (np.inf,) * 2, 0.0
        for r in range(args.repeat):
            wall, cpu, rss, text = run(cli_cmd)
            inner = float(text.split(" in ")[-1].split(" s")[0])  # "wrote ...: n records ..., in 12.3 s, ..."
            best_cli = min(best_cli, (wall, cpu, inner))
            peak = max(peak, rss)
            _, _, mem_rss, text = run(mem_cmd)
            mem_wall, mem_cpu = (float(x) for x in text.split()[:2])
            best_mem = min(best_mem, (mem_wall, mem_cpu))
            print(f"  run {r + 1}: cli {wall:.2f} s wall, {cpu:.2f} s CPU ({inner:.2f} s sketching), peak RSS "
                  f"{rss:.0f} MB; in-memory {mem_wall:.2f} s wall, {mem_cpu:.2f} s CPU (peak RSS {mem_rss:.0f} MB, the "
                  f"array included); load average {os.getloadavg()[0]:.1f}", flush=True)

        from pysketch import Sketch

        a, b = Sketch.load(cli_out), Sketch.load(mem_out)
        assert a.count == b.count == n, (a.count, b.count, n)
        rel = float(np.max(np.abs(a.sum - b.sum)) / n)
        print(f"sketches agree: max |difference| / n = {rel:.1e} (float64 sums; the same batches here)")
        assert a.feature_map == b.feature_map and rel < 1e-12

        wall, cpu, inner = best_cli
        mem_wall, mem_cpu = best_mem
        print(f"best of {args.repeat}: cli {wall:.2f} s wall ({n / wall:.3g} records/s), {inner:.2f} s sketching; "
              f"in-memory {mem_wall:.2f} s ({n / mem_wall:.3g} records/s)")
        ratio = mem_wall / wall
        print(f"speed ratio in-memory / cli: {ratio:.3f} wall, {mem_wall / inner:.3f} sketching alone, "
              f"{mem_cpu / cpu:.3f} CPU time; target >= 0.8: {'met' if ratio >= 0.8 else 'MISSED'}")
        print(f"cli peak RSS (worst run): {peak:.0f} MB (start-up alone {startup[1]:.0f} MB); target < 300 MB: "
              f"{'met' if peak < 300 else 'MISSED'}")
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
