"""Every instruction-set path gives the same bits (subprocesses with PYSKETCH_SIMD, and in process)."""

import os
import subprocess
import sys

import numpy as np
import pytest
from fwht_reference import fwht_reference, seeded_batch

import pysketch
from pysketch.runtime import SIMD_LEVELS

AVAILABLE = SIMD_LEVELS[: SIMD_LEVELS.index(pysketch.max_simd_level()) + 1]
LOG_NS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 13, 14, 16)
DTYPES = ("float32", "float64")

# Run in a fresh interpreter: PYSKETCH_SIMD is read once, by the first transform.
CHILD = """
import sys
import numpy as np
import pysketch
from fwht_reference import seeded_batch

level, prefix, dtypes, log_ns = sys.argv[1:]
if pysketch.simd_level() != level:
    sys.exit(f"simd_level() is {pysketch.simd_level()!r}, expected {level!r}")
for dtype in dtypes.split(","):
    parts = []
    for log_n in map(int, log_ns.split(",")):
        x = seeded_batch(log_n, dtype)
        parts += [pysketch.fwht(x).ravel(), pysketch.fwht(x, normalized=True).ravel()]
    np.save(f"{prefix}_{dtype}.npy", np.concatenate(parts))
"""


def expected(dtype):
    parts = []
    for log_n in LOG_NS:
        x = seeded_batch(log_n, dtype)
        reference = fwht_reference(x)
        parts += [reference.ravel(), (reference * np.dtype(dtype).type(1 / np.sqrt(1 << log_n))).ravel()]
    return np.concatenate(parts)


def test_levels_are_known():
    assert pysketch.simd_level() in SIMD_LEVELS
    assert pysketch.max_simd_level() in SIMD_LEVELS
    assert SIMD_LEVELS.index(pysketch.simd_level()) <= SIMD_LEVELS.index(pysketch.max_simd_level())


def test_every_level_in_a_subprocess_gives_identical_bits(tmp_path):
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ)
    env["PYTHONPATH"] = here + os.pathsep + env.get("PYTHONPATH", "")
    outputs = {}
    for level in AVAILABLE:
        env["PYSKETCH_SIMD"] = level
        prefix = str(tmp_path / level)
        done = subprocess.run(
            [sys.executable, "-c", CHILD, level, prefix, ",".join(DTYPES), ",".join(map(str, LOG_NS))],
            env=env, cwd=tmp_path, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        outputs[level] = {dtype: np.load(f"{prefix}_{dtype}.npy") for dtype in DTYPES}
    for dtype in DTYPES:
        reference = expected(dtype)
        for level, arrays in outputs.items():
            assert arrays[dtype].dtype == dtype
            assert np.array_equal(arrays[dtype], reference), f"{level} {dtype} differs from the reference"


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_level_in_process_gives_identical_bits(dtype, restore_simd):
    reference = expected(dtype)
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        assert pysketch.simd_level() == level
        parts = []
        for log_n in LOG_NS:
            x = seeded_batch(log_n, dtype)
            parts += [pysketch.fwht(x).ravel(), pysketch.fwht(x, normalized=True).ravel()]
        assert np.array_equal(np.concatenate(parts), reference), level


def test_nan_check_and_strided_paths_on_every_level(restore_simd):
    base = seeded_batch(8, "float32")
    view = base[::3, 5:133]
    for level in AVAILABLE:
        pysketch.set_simd_level(level)
        np.testing.assert_array_equal(pysketch.fwht(view), fwht_reference(np.ascontiguousarray(view)))
        bad = base.copy()
        bad[4, 200] = np.nan
        with pytest.raises(ValueError, match="NaN"):
            pysketch.fwht(bad, out=bad)


def test_set_simd_level_rejects_unknown_names(restore_simd):
    with pytest.raises(ValueError, match=r"unknown SIMD level 'avx1024'.*'avx512', 'avx2', 'sse', 'scalar'"):
        pysketch.set_simd_level("avx1024")
    with pytest.raises(TypeError, match="level must be a str"):
        pysketch.set_simd_level(3)


@pytest.mark.skipif(pysketch.max_simd_level() == "avx512", reason="every level is supported here")
def test_set_simd_level_rejects_unsupported_levels(restore_simd):
    with pytest.raises(ValueError, match="not supported"):
        pysketch.set_simd_level("avx512")


def run_python(code, **env_vars):
    env = dict(os.environ)
    env.update(env_vars)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)


def test_unknown_pysketch_simd_warns_at_import():
    done = run_python("import pysketch; print(pysketch.simd_level(), pysketch.max_simd_level())", PYSKETCH_SIMD="avx9")
    assert done.returncode == 0, done.stderr
    assert "PYSKETCH_SIMD='avx9' is not one of 'scalar', 'sse', 'avx2', 'avx512'" in done.stderr
    used, best = done.stdout.split()
    assert used == best  # ignored: the best level is used


def test_pysketch_simd_caps_the_level():
    done = run_python("import pysketch; print(pysketch.simd_level())", PYSKETCH_SIMD="scalar")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "scalar"
    assert done.stderr == ""
