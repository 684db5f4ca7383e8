"""Timing helpers shared by the scripts of benchmarks/quality and benchmarks/reports.

A script reaches this module by putting its parent folder (benchmarks/) on sys.path::

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import _timing  # noqa: E402

Importing it loads neither numpy nor pysketch, so a script can call ``one_thread()``
before it imports them. The asv suites (benchmarks/asv) do not use it: asv times its
benchmarks itself, in processes of its own.

- ``one_thread``: the thread settings of BLAS, OpenMP (and pysketch), set to one thread
  unless the environment already sets them;
- ``best_of`` / ``best_ns``: the best wall time of many short trials, several contenders
  alternated round by round;
- ``best_mean``: the best, over a few runs, of the mean time per call (any clock, e.g.
  ``time.thread_time``);
- ``Stopwatch``: wall and CPU seconds of a block (one fit, one decode);
- ``cpu_model``, ``package_version``, ``header_lines``: what the reports print about the
  machine and the build.
"""

import importlib.metadata
import math
import os
import platform
import time

#: BLAS and OpenMP: one thread, so that the reports time pysketch's own threads only.
BLAS_OPENMP = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")
#: Every runtime a comparison of CPU times can meet, pysketch's sketching threads included.
ALL_RUNTIMES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYSKETCH_NUM_THREADS")


def one_thread(variables=BLAS_OPENMP):
    """Set each environment variable of `variables` to "1" unless it is already set.

    Call it before numpy (or any BLAS or OpenMP library) is imported: those runtimes read
    their thread count once, when they load. Returns {variable: value} as now set.
    """
    for variable in variables:
        os.environ.setdefault(variable, "1")
    return {variable: os.environ[variable] for variable in variables}


def best_of(fns, budget_s, min_rounds=5, max_rounds=400, args=(), before=None):
    """Best wall time in nanoseconds of each fn(*args) in `fns` (a dict name -> fn).

    The trials run in rounds: every round times each contender once, in turn, so that all
    of them sample the same stretches of a shared, noisy machine (whose speed can halve
    for seconds at a time) and their ratios stay fair. before(name), when given, runs
    before each trial, outside the timed region (to restore an input, to set a thread
    count). Rounds go on until budget_s seconds per contender have passed, at least
    `min_rounds` and at most `max_rounds` of them.
    """
    best = dict.fromkeys(fns, math.inf)
    deadline = time.perf_counter() + budget_s * len(fns)
    rounds = 0
    while rounds < min_rounds or (rounds < max_rounds and time.perf_counter() < deadline):
        for name, fn in fns.items():
            if before is not None:
                before(name)
            start = time.perf_counter_ns()
            fn(*args)
            best[name] = min(best[name], time.perf_counter_ns() - start)
        rounds += 1
    return best


def best_ns(fn, budget_s, min_trials=3, max_trials=2000):
    """Best wall time of fn() in nanoseconds over trials filling about budget_s seconds,
    after one untimed call (first-touch pages, caches, lazy initialisation)."""
    fn()
    return best_of({None: fn}, budget_s, min_trials, max_trials)[None]


def best_mean(fn, trials, budget_s, clock=time.perf_counter):
    """Best, over `trials` runs, of the mean `clock` seconds per call of fn(); within a run
    fn is called again until budget_s seconds of that clock have passed. With
    ``clock=time.thread_time`` a shared machine inflates the figure less than wall time."""
    best = math.inf
    for _ in range(trials):
        calls = 0
        start = clock()
        while True:
            fn()
            calls += 1
            spent = clock() - start
            if spent >= budget_s:
                break
        best = min(best, spent / calls)
    return best


class Stopwatch:
    """Wall seconds (``time.perf_counter``) and CPU seconds (``time.process_time``: every
    thread of the process) of a with block::

        with Stopwatch() as clock:
            est.fit(X)
        clock.cpu, clock.wall
    """

    def __init__(self):
        self.wall = self.cpu = math.nan

    def __enter__(self):
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc_info):
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu
        return False


def cpu_model():
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
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


def header_lines():
    """The reports' first lines: pysketch's version, SIMD level and threads, then the CPU."""
    import pysketch

    return [
        f"pysketch {pysketch.__version__}: SIMD level {pysketch.simd_level()} (max {pysketch.max_simd_level()}), "
        f"threads {pysketch.get_num_threads()}",
        f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs)",
    ]
