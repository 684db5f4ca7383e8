"""asv benchmarks of the SIMD sincos kernels and the fused feature accumulations (pysketch._core).

Run with ``asv run`` from the repository root (see asv.conf.json), or against the installed
package with ``asv run --environment existing --quick``. The kernels are single-threaded; every
benchmark runs at the best SIMD level of the CPU ("best") and at AVX2 ("avx2"; skipped where the
CPU lacks it). For a printed table in ns per element, see benchmarks/reports/sketch_report.py.
"""

import numpy as np

import pysketch
from pysketch import _core
from pysketch.runtime import SIMD_LEVELS

DTYPES = ["float32", "float64"]
LEVELS = ["best", "avx2"]


def use_level(level):
    best = pysketch.max_simd_level()
    name = best if level == "best" else level
    if SIMD_LEVELS.index(name) > SIMD_LEVELS.index(best):
        raise NotImplementedError(f"this CPU has no {name}")  # asv skips the benchmark
    pysketch.set_simd_level(name)


class Sincos:
    """cos and sin of n values: 8192 (in L1) and 2**22 (streaming from and to memory)."""

    params = (DTYPES, [8192, 2**22], LEVELS)
    param_names = ["dtype", "n", "simd"]

    def setup(self, dtype, n, simd):
        use_level(simd)
        self.t = np.random.default_rng(0).uniform(-30, 30, n).astype(dtype)
        self.c, self.s = np.empty_like(self.t), np.empty_like(self.t)

    def time_sincos_into(self, dtype, n, simd):
        _core.sincos(self.t, self.c, self.s)

    def time_sincos_new_arrays(self, dtype, n, simd):
        _core.sincos(self.t)

    def time_numpy_cos_sin(self, dtype, n, simd):
        np.cos(self.t, out=self.c)
        np.sin(self.t, out=self.s)


class AccumulateCis:
    """The sketching hot loop: acc += sum over rows of cos/sin(t + u) (and the quantized form).

    (64, 8192) is one block of rows; (64, 2**18) streams 64 or 128 MiB from memory.
    """

    params = (DTYPES, [8192, 2**18], [True, False], LEVELS)
    param_names = ["dtype", "n", "dither", "simd"]
    rows = 64

    def setup(self, dtype, n, dither, simd):
        use_level(simd)
        rng = np.random.default_rng(0)
        self.t = rng.uniform(-30, 30, (self.rows, n)).astype(dtype)
        self.u = rng.uniform(0, 2 * np.pi, n).astype(dtype) if dither else None
        self.acc_a, self.acc_b = np.zeros(n), np.zeros(n)

    def time_accumulate_cis(self, dtype, n, dither, simd):
        _core.accumulate_cis(self.t, self.u, self.acc_a, self.acc_b)

    def time_accumulate_qcis(self, dtype, n, dither, simd):
        _core.accumulate_qcis(self.t, self.u, self.acc_a, self.acc_b)


class AccumulateCisRowStride:
    """The same block read through a view with a row stride larger than n (a column slice)."""

    params = (DTYPES,)
    param_names = ["dtype"]

    def setup(self, dtype):
        rng = np.random.default_rng(0)
        self.t = rng.uniform(-30, 30, (64, 8192 + 64)).astype(dtype)[:, 32:-32]
        self.u = rng.uniform(0, 2 * np.pi, 8192).astype(dtype)
        self.acc_a, self.acc_b = np.zeros(8192), np.zeros(8192)

    def time_accumulate_cis(self, dtype):
        _core.accumulate_cis(self.t, self.u, self.acc_a, self.acc_b)


class CallOverhead:
    """The cost of one call on tiny inputs."""

    def setup(self):
        self.t = np.ones(8, np.float32)
        self.c, self.s = np.empty_like(self.t), np.empty_like(self.t)
        self.block = np.ones((1, 8), np.float32)
        self.acc_a, self.acc_b = np.zeros(8), np.zeros(8)

    def time_sincos_tiny(self):
        _core.sincos(self.t, self.c, self.s)

    def time_accumulate_cis_tiny(self):
        _core.accumulate_cis(self.block, None, self.acc_a, self.acc_b)
