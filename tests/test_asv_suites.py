"""The asv suites of benchmarks/asv run without asv, so that they cannot rot between asv runs:
every module imports, every benchmark class instantiates, and for its first parameter
combination ``setup``, each ``time_*`` / ``peakmem_*`` / ``track_*`` method once, and
``teardown`` run as asv would run them (asv's conventions: ``params`` is one list, or a
list of lists with one per name of ``param_names``; NotImplementedError from ``setup``
skips). The suites use pysketch's public names only.

The first combination of every class is its smallest size, so the whole file takes a few
seconds."""

import ast
import contextlib
import glob
import importlib.util
import inspect
import itertools
import os

import pytest

import pysketch

try:  # single-threaded BLAS, as asv.conf.json sets it (OPENBLAS_NUM_THREADS=1) for asv runs
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITES = sorted(glob.glob(os.path.join(ROOT, "benchmarks", "asv", "bench_*.py")))
PREFIXES = ("time_", "peakmem_", "track_", "mem_", "timeraw_")
RUN_PREFIXES = ("time_", "peakmem_", "track_")


def _load(path):
    name = "asv_suite_" + os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _benchmark_classes(module):
    for name, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ == module.__name__ and any(attr.startswith(PREFIXES) for attr in dir(cls)):
            yield name, cls


def _cases():
    for path in SUITES:
        module = _load(path)
        for name, _ in _benchmark_classes(module):
            yield pytest.param(path, name, id=f"{os.path.basename(path)}::{name}")


def _combinations(cls):
    """asv's parameter combinations of a class, in asv's order (the first one first)."""
    params = getattr(cls, "params", [])
    if not params:
        return [()]
    if not all(isinstance(p, (list, tuple)) for p in params):  # a single parameter: one list
        params = [params]
    names = getattr(cls, "param_names", [])
    assert len(names) == len(params), f"{cls.__name__}: {len(params)} parameter lists, param_names {names}"
    assert all(len(p) > 0 for p in params), f"{cls.__name__}: an empty parameter list"
    return list(itertools.product(*params))


def test_there_are_suites_for_every_part():
    names = {os.path.basename(p) for p in SUITES}
    assert {"bench_fwht.py", "bench_sincos.py", "bench_sketch.py", "bench_onehot.py", "bench_sparse_jl.py",
            "bench_row_action.py", "bench_clamp.py", "bench_decode.py", "bench_m2m.py", "bench_distances.py",
            "bench_rfm.py"} <= names


@pytest.mark.parametrize("path", SUITES, ids=os.path.basename)
def test_suites_use_public_names_of_pysketch(path):
    """No underscore name of pysketch is imported or read (dunders aside): the suites
    measure the public API, and survive refactorings of the private one."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    private = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pysketch":
            parts = node.module.split(".") + [alias.name for alias in node.names]
            private += [p for p in parts if p.startswith("_")]
        elif isinstance(node, ast.Import):
            private += [p for alias in node.names for p in alias.name.split(".") if p.startswith("_")]
        elif isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            private.append(node.attr)
    assert not private, f"{os.path.basename(path)} uses private names: {sorted(set(private))}"


@contextlib.contextmanager
def _restored_runtime():
    """Single-threaded BLAS (as asv.conf.json sets it for asv runs), and pysketch's thread
    count and SIMD level put back afterwards (asv runs each benchmark in a process of its
    own; here they share one)."""
    threads, level = pysketch.get_num_threads(), pysketch.simd_level()
    blas = threadpool_limits(1, user_api="blas") if threadpool_limits else contextlib.nullcontext()
    try:
        with blas:
            yield
    finally:
        pysketch.set_num_threads(threads)
        pysketch.set_simd_level(level)


@pytest.mark.parametrize("path, name", list(_cases()))
def test_benchmark_runs_once(path, name):
    cls = getattr(_load(path), name)
    combination = _combinations(cls)[0]
    methods = sorted(attr for attr in dir(cls) if attr.startswith(RUN_PREFIXES))
    assert methods, f"{name} has no time_, peakmem_ or track_ method"
    assert not hasattr(cls, "setup_cache"), "setup_cache is not run here: give the test a way to run it first"
    with _restored_runtime():
        for method in methods:
            bench = cls()
            if hasattr(bench, "setup"):
                try:
                    bench.setup(*combination)
                except NotImplementedError as exc:  # asv's way to skip a combination
                    pytest.skip(f"{name}{combination}: {exc}")
            try:
                value = getattr(bench, method)(*combination)
                if method.startswith("track_"):
                    assert isinstance(value, (int, float)) and value == value, f"{method} returned {value!r}"
            finally:
                if hasattr(bench, "teardown"):
                    bench.teardown(*combination)
