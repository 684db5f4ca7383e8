"""asv benchmarks of the SIMD sin/cos kernels, through the public feature-map API.

``FeatureMap.features(T)`` runs the nonlinearity alone on given phases T (the cis kernel of
the complex map, the one-bit qcis kernel of the quantized map: sincos.hpp and features.hpp,
no operator product); ``FeatureMap.accumulate`` is the sketching hot loop, the operator's
phases fused with the nonlinearity and summed into float64 accumulators. Everything runs
on one thread; the sin/cos kernels at the CPU's best SIMD level ("best") and at AVX2
("avx2"; skipped where the CPU lacks it). For a printed table in ns per element, see
benchmarks/reports/sketch_report.py.
"""

import numpy as np

import pysketch
from pysketch.runtime import SIMD_LEVELS

DTYPES = ["float32", "float64"]
LEVELS = ["best", "avx2"]


def use_level(level):
    best = pysketch.max_simd_level()
    name = best if level == "best" else level
    if SIMD_LEVELS.index(name) > SIMD_LEVELS.index(best):
        raise NotImplementedError(f"this CPU has no {name}")  # asv skips the benchmark
    pysketch.set_simd_level(name)


def fourier_map(kind, d, m, dtype, dither=None):
    """A Fourier map on a dense operator (d small: its phases are cheap next to sin/cos)."""
    return pysketch.make_feature_map(d, m, kind, operator="dense", dither=dither, random_state=0, dtype=dtype)


def phases(dtype, n, m):
    """n phases uniform on [-30, 30], as rows of m."""
    return np.random.default_rng(0).uniform(-30, 30, (n // m, m)).astype(dtype)


class Sincos:
    """cos and sin of n phases (rows of m = 8192): n = 8192 (in L1) and 2**22 (streaming
    from and to memory), as complex features (cis) and one-bit features (qcis)."""

    params = (DTYPES, [8192, 2**22], LEVELS)
    param_names = ["dtype", "n", "simd"]
    m = 8192

    def setup(self, dtype, n, simd):
        pysketch.set_num_threads(1)
        use_level(simd)
        self.complex_map = fourier_map("complex", 2, self.m, dtype)
        self.quantized_map = fourier_map("quantized", 2, self.m, dtype)
        self.t = phases(dtype, n, self.m)

    def time_features_cis(self, dtype, n, simd):
        self.complex_map.features(self.t)

    def time_features_qcis(self, dtype, n, simd):
        self.quantized_map.features(self.t)


class SincosNumpy:
    """NumPy's cos and sin of the same phases, into given arrays: the reference."""

    params = (DTYPES, [8192, 2**22])
    param_names = ["dtype", "n"]

    def setup(self, dtype, n):
        self.t = phases(dtype, n, Sincos.m)
        self.c, self.s = np.empty_like(self.t), np.empty_like(self.t)

    def time_numpy_cos_sin(self, dtype, n):
        np.cos(self.t, out=self.c)
        np.sin(self.t, out=self.s)


class AccumulateCis:
    """The sketching hot loop, acc += sum over rows of f(Omega^T x + u), for 64 rows of d = 8
    on a dense operator: m = 8192 (one block) and 2**18 (streams 16 M phases)."""

    params = (DTYPES, [8192, 2**18], ["complex", "complex_dithered", "quantized"])
    param_names = ["dtype", "m", "features"]
    rows = 64
    d = 8

    def setup(self, dtype, m, features):
        pysketch.set_num_threads(1)
        kind = "quantized" if features == "quantized" else "complex"
        self.fm = fourier_map(kind, self.d, m, dtype, dither="random" if features == "complex_dithered" else None)
        self.X = np.random.default_rng(0).standard_normal((self.rows, self.d)).astype(dtype)
        self.acc = self.fm.new_accumulators()

    def time_accumulate(self, dtype, m, features):
        self.fm.accumulate(self.X, self.acc)


class CallOverhead:
    """The cost of one call on tiny inputs (one row, m = 8)."""

    def setup(self):
        pysketch.set_num_threads(1)
        self.fm = fourier_map("complex", 2, 8, np.float32)
        self.t = np.ones((1, 8), np.float32)
        self.X = np.ones((1, 2), np.float32)
        self.acc = self.fm.new_accumulators()

    def time_features_tiny(self):
        self.fm.features(self.t)

    def time_accumulate_tiny(self):
        self.fm.accumulate(self.X, self.acc)

    def time_sketch_tiny(self):
        self.fm.sketch(self.X)
