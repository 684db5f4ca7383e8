"""Threads: results do not depend on the thread count; concurrent and forked callers work."""

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from fwht_reference import fwht_reference

import pysketch
from pysketch import fwht


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [64, 1024, 1 << 14])
def test_same_bits_with_one_and_two_threads(dtype, n, restore_threads):
    x = np.random.default_rng(n).standard_normal(((1 << 20) // n, n)).astype(dtype)
    pysketch.set_num_threads(1)
    one = fwht(x, normalized=True)
    pysketch.set_num_threads(2)
    two = fwht(x, normalized=True)
    y = x.copy()
    fwht(y, out=y, normalized=True)
    np.testing.assert_array_equal(one, two)
    np.testing.assert_array_equal(y, two)
    np.testing.assert_array_equal(one[:7], fwht_reference(x[:7]) * dtype(1 / np.sqrt(n)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "rows, log_n, threads",
    [(1, 19, 2), (1, 20, 2), (3, 19, 4), (1, 19, 3), (2, 20, 5)],
)
def test_long_rows_split_among_threads_same_bits(dtype, rows, log_n, threads, restore_threads):
    # fewer rows than threads: each row is cut into sub-rows and columns among the threads
    n = 1 << log_n
    x = np.random.default_rng(log_n + rows).standard_normal((rows, n)).astype(dtype)
    pysketch.set_num_threads(1)
    one = fwht(x)
    one_normalized = fwht(x, normalized=True)
    pysketch.set_num_threads(threads)
    np.testing.assert_array_equal(fwht(x), one)
    np.testing.assert_array_equal(fwht(x, normalized=True), one_normalized)
    y = x.copy()
    assert fwht(y, out=y) is y  # in place
    np.testing.assert_array_equal(y, one)
    if rows == 1:
        np.testing.assert_array_equal(fwht(x[0]), one[0])  # 1-D
    # rows a larger stride apart, and in reverse order
    wide = np.zeros((rows, n + 64), dtype)
    wide[:, 16 : 16 + n] = x
    np.testing.assert_array_equal(fwht(wide[:, 16 : 16 + n]), one)
    np.testing.assert_array_equal(fwht(x[::-1]), one[::-1])
    expected = fwht_reference(x[:1].astype(np.float64))
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(one[:1], expected, rtol=tol, atol=tol * np.sqrt(n) * 8)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("where", [0, (1 << 19) - 1, 400_000])
def test_non_finite_found_in_a_long_row_with_threads(dtype, where, restore_threads):
    # the input check of a long in-place row runs on all threads; x stays untouched
    x = np.random.default_rng(where).standard_normal(1 << 19).astype(dtype)
    x[where] = np.inf
    keep = x.copy()
    pysketch.set_num_threads(2)
    with pytest.raises(ValueError, match="NaN or infinity"):
        fwht(x, out=x)
    np.testing.assert_array_equal(x, keep)
    with pytest.raises(ValueError, match="NaN or infinity"):
        fwht(x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_finiteness_check_of_a_long_run_with_threads(dtype, restore_threads):
    # a long run is checked as pieces on all threads, and a tail that is not a whole piece
    from pysketch import _core

    x = np.ones((1, (1 << 19) + 5), dtype)  # one row
    pysketch.set_num_threads(2)
    assert _core.all_finite(x)
    for where in (0, 1 << 18, (1 << 19) - 1, 1 << 19, x.size - 1):
        y = x.copy()
        y[0, where] = np.nan
        assert not _core.all_finite(y), where


def test_more_threads_than_cores_and_rows(restore_threads):
    x = np.random.default_rng(0).standard_normal((5, 1 << 15))
    pysketch.set_num_threads(16)
    np.testing.assert_array_equal(fwht(x), fwht_reference(x))


def test_concurrent_python_threads(restore_threads):
    pysketch.set_num_threads(2)
    rng = np.random.default_rng(1)
    inputs = [rng.standard_normal((256, 1024)).astype(np.float32) for _ in range(4)]
    expected = [fwht_reference(x) for x in inputs]
    errors = []

    def work(i):
        try:
            for _ in range(15):
                y = fwht(inputs[i])
                if not np.array_equal(y, expected[i]):
                    errors.append(f"thread {i}: wrong result")
                z = inputs[i].copy()
                fwht(z, out=z)
                if not np.array_equal(z, expected[i]):
                    errors.append(f"thread {i}: wrong in-place result")
        except Exception as error:  # pragma: no cover - reported below
            errors.append(repr(error))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_forked_child_after_the_pool_ran(restore_threads):
    # The child has no pool threads: it must start its own instead of waiting forever.
    code = (
        "import os, numpy as np, pysketch\n"
        "pysketch.set_num_threads(2)\n"
        "x = np.ones((512, 1024), np.float32)\n"
        "pysketch.fwht(x)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    y = pysketch.fwht(x)\n"
        "    os._exit(0 if (y[:, 0] == 1024).all() and (y[:, 1:] == 0).all() else 1)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "raise SystemExit(os.waitstatus_to_exitcode(status))\n"
    )
    done = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", code], timeout=60)
    assert done.returncode == 0


def test_num_threads_setting(restore_threads):
    pysketch.set_num_threads(3)
    assert pysketch.get_num_threads() == 3
    for bad in (0, -1, 1025):
        with pytest.raises(ValueError, match=r"num_threads must be between 1 and 1024"):
            pysketch.set_num_threads(bad)
    for bad in (1.5, "2", None):
        with pytest.raises(TypeError, match="num_threads must be an integer"):
            pysketch.set_num_threads(bad)
    pysketch.set_num_threads(np.int64(2))
    assert pysketch.get_num_threads() == 2


def run_python(code, **env_vars):
    env = {k: v for k, v in os.environ.items() if k != "PYSKETCH_NUM_THREADS"}
    env.update(env_vars)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_default_thread_count_is_the_usable_cpus():
    done = run_python("import pysketch; print(pysketch.get_num_threads())")
    assert done.returncode == 0, done.stderr
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert int(done.stdout) == usable


def test_pysketch_num_threads_environment_variable():
    done = run_python("import pysketch; print(pysketch.get_num_threads())", PYSKETCH_NUM_THREADS="3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"
    assert done.stderr == ""


@pytest.mark.parametrize("value", ["zero", "0", "-2", "1.5", "5000"])
def test_invalid_pysketch_num_threads_warns_and_is_ignored(value):
    done = run_python("import pysketch; print(pysketch.get_num_threads())", PYSKETCH_NUM_THREADS=value)
    assert done.returncode == 0, done.stderr
    assert f"PYSKETCH_NUM_THREADS={value!r} is not an integer between 1 and 1024" in done.stderr
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert int(done.stdout) == usable


def test_blas_single_thread_limits_blas_and_rescans_after_new_imports(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from pysketch import _threads

    def blas_threads():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):  # whatever OPENBLAS_NUM_THREADS says
        assert blas_threads() and all(n == 2 for n in blas_threads())
        with _threads.blas_single_thread():
            assert all(n == 1 for n in blas_threads())
        assert all(n == 2 for n in blas_threads())  # restored
    first = _threads._blas_controller()
    assert _threads._blas_controller() is first  # no rescan while nothing is imported
    monkeypatch.setitem(sys.modules, "pysketch_test_new_module", object())
    assert _threads._blas_controller() is not first  # a new import: scanned again
