"""asv benchmarks: frequency operators and sketches (one thread, float32 unless stated)."""

import numpy as np

import pysketch
from pysketch.features import make_feature_map
from pysketch.frequencies import QuadraticGaussianLaw
from pysketch.operators import make_operator


class TimeOperatorApply:
    """Omega^T x and Omega v for a batch of rows, m = 10 d (batch 1: one vector through all
    the blocks at once, the per-row-diagonal path of operators.hpp)."""

    params = (["dense", "r3", "gr2", "fastfood"], [64, 256, 1024, 4096], [1, 256])
    param_names = ["operator", "d", "batch"]

    def setup(self, operator, d, batch):
        pysketch.set_num_threads(1)
        m = 10 * d
        if operator == "dense" and d == 4096:
            raise NotImplementedError("dense 4096 x 40960 takes 640 MB")
        self.op = make_operator(d, m, kind=operator, random_state=0, dtype=np.float32)
        self.X = np.random.default_rng(0).standard_normal((batch, d)).astype(np.float32)
        self.out = np.empty((batch, m), np.float32)
        self.V = np.random.default_rng(1).standard_normal((batch, m)).astype(np.float32)

    def time_apply(self, operator, d, batch):
        self.op.apply(self.X, out=self.out)

    def time_adjoint(self, operator, d, batch):
        self.op.adjoint(self.V)


class TimeSketch:
    """Sketch of 4096 records with complex exponential features, m = 10 d."""

    params = (["dense", "r3"], [64, 256, 1024], [1, 256, 4096])
    param_names = ["operator", "d", "batch"]
    timeout = 120

    def setup(self, operator, d, batch):
        pysketch.set_num_threads(1)
        self.fm = make_feature_map(d, 10 * d, "complex", operator=operator, random_state=0, dtype=np.float32)
        self.X = np.random.default_rng(0).standard_normal((4096, d)).astype(np.float32)
        self.batch = batch

    def time_sketch(self, operator, d, batch):
        from pysketch.accumulate import SketchAccumulator

        acc = SketchAccumulator(self.fm, buffer_rows=1)  # each update sketched at once
        for start in range(0, 4096, self.batch):
            acc.update(self.X[start : start + self.batch])


class TimeSketchThreads:
    """n = 10^5, d = 256, m = 2560 on 1 and 2 threads."""

    params = ([1, 2],)
    param_names = ["threads"]
    timeout = 120

    def setup(self, threads):
        self.before = pysketch.get_num_threads()
        pysketch.set_num_threads(threads)
        self.fm = make_feature_map(256, 2560, "complex", operator="r3", random_state=0, dtype=np.float32)
        self.X = np.random.default_rng(0).standard_normal((100_000, 256)).astype(np.float32)

    def teardown(self, threads):
        pysketch.set_num_threads(self.before)

    def time_sketch(self, threads):
        self.fm.sketch(self.X)


class TimeQuadraticSketch:
    """Sketch of n = 20000 records with quadratic features (compressive PCA), d = 1024,
    m = 10 d, Gaussian frequencies N(0, I/d), float32 and float64."""

    params = (["dense", "r3"], ["float32", "float64"])
    param_names = ["operator", "dtype"]
    timeout = 300

    def setup(self, operator, dtype):
        pysketch.set_num_threads(1)
        self.fm = make_feature_map(1024, 10240, "quadratic", operator=operator, law=QuadraticGaussianLaw(),
                                   random_state=0, dtype=dtype)
        self.X = np.random.default_rng(0).standard_normal((20000, 1024)).astype(dtype)

    def time_sketch(self, operator, dtype):
        self.fm.sketch(self.X)
