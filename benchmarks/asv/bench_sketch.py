"""asv benchmarks: frequency operators, sketches of every Fourier and quadratic map, the
feature-subsampled sketch and the private release (one thread, float32 unless stated)."""

import numpy as np

import pysketch
from pysketch import SketchAccumulator, make_feature_map, make_operator
from pysketch.frequencies import QuadraticGaussianLaw
from pysketch.privacy import make_private

OPERATORS = ["dense", "r3", "gr2", "fastfood"]


class TimeOperatorApply:
    """Omega^T x and Omega v for a batch of rows, m = 10 d (batch 1: one vector through all
    the blocks at once, the per-row-diagonal path of operators.hpp)."""

    params = (OPERATORS, [64, 4096], [1, 256])
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
    """Sketch of 4096 records with complex exponential features, m = 10 d, given to a
    SketchAccumulator `batch` rows at a time (each update sketched at once)."""

    params = (["dense", "r3"], [64, 1024], [1, 4096])
    param_names = ["operator", "d", "batch"]
    timeout = 120

    def setup(self, operator, d, batch):
        if operator == "dense" and d == 1024 and batch == 1:
            raise NotImplementedError("4096 matrix-vector products with a 40 MB Omega: about 10 s")
        pysketch.set_num_threads(1)
        self.fm = make_feature_map(d, 10 * d, "complex", operator=operator, random_state=0, dtype=np.float32)
        self.X = np.random.default_rng(0).standard_normal((4096, d)).astype(np.float32)
        self.batch = batch

    def time_sketch(self, operator, d, batch):
        acc = SketchAccumulator(self.fm, buffer_rows=1)  # each update sketched at once
        for start in range(0, 4096, self.batch):
            acc.update(self.X[start : start + self.batch])


class TimeSketchThreads:
    """n = 50000, d = 256, m = 2560 (R3) on 1 and 2 threads."""

    params = ([1, 2],)
    param_names = ["threads"]
    timeout = 120

    def setup(self, threads):
        self.before = pysketch.get_num_threads()
        pysketch.set_num_threads(threads)
        self.fm = make_feature_map(256, 2560, "complex", operator="r3", random_state=0, dtype=np.float32)
        self.X = np.random.default_rng(0).standard_normal((50_000, 256)).astype(np.float32)

    def teardown(self, threads):
        pysketch.set_num_threads(self.before)

    def time_sketch(self, threads):
        self.fm.sketch(self.X)


class TimeSketchMaps:
    """Sketch of n = 20000 records of d = 64 with each Fourier map ('complex', 'real',
    'quantized'), m = 640, dense and R3."""

    params = (["complex", "real", "quantized"], ["dense", "r3"])
    param_names = ["kind", "operator"]

    def setup(self, kind, operator):
        pysketch.set_num_threads(1)
        self.fm = make_feature_map(64, 640, kind, operator=operator, random_state=0, dtype=np.float32)
        self.X = np.random.default_rng(0).standard_normal((20_000, 64)).astype(np.float32)

    def time_sketch(self, kind, operator):
        self.fm.sketch(self.X)


class TimeQuadraticSketch:
    """Sketch of n = 10000 records with quadratic features (compressive PCA), d = 512,
    m = 10 d, Gaussian frequencies N(0, I/d), float32 and float64."""

    params = (["dense", "r3"], ["float32", "float64"])
    param_names = ["operator", "dtype"]
    timeout = 300

    def setup(self, operator, dtype):
        pysketch.set_num_threads(1)
        self.fm = make_feature_map(512, 5120, "quadratic", operator=operator, law=QuadraticGaussianLaw(),
                                   random_state=0, dtype=dtype)
        self.X = np.random.default_rng(0).standard_normal((10_000, 512)).astype(dtype)

    def time_sketch(self, operator, dtype):
        self.fm.sketch(self.X)


class TimeSubsampledSketch:
    """The feature-subsampled sketch (r = m / 5 frequencies per record) of n = 10000 records
    of d = 256, m = 2560, complex features, for each mask scheme ('blocks' needs a
    structured operator), next to the full sketch (r = m)."""

    params = (["dense", "r3"], ["uniform", "bernoulli", "blocks", "full"])
    param_names = ["operator", "scheme"]
    timeout = 120

    def setup(self, operator, scheme):
        if operator == "dense" and scheme == "blocks":
            raise NotImplementedError("scheme 'blocks' needs a structured operator")
        pysketch.set_num_threads(1)
        self.fm = make_feature_map(256, 2560, "complex", operator=operator, random_state=0, dtype=np.float32)
        self.X = np.random.default_rng(0).standard_normal((10_000, 256)).astype(np.float32)

    def time_sketch_subsampled(self, operator, scheme):
        if scheme == "full":
            self.fm.sketch(self.X)
        else:
            self.fm.sketch_subsampled(self.X, 512, scheme=scheme, random_state=1)


class TimePrivateRelease:
    """make_private of a complex sketch of m frequencies: Laplace (delta = 0) and the
    analytic Gaussian (delta = 1e-6) from the exact samplers, under add/remove."""

    params = ([1000, 10_000], ["laplace", "gaussian"])
    param_names = ["m", "mechanism"]

    def setup(self, m, mechanism):
        pysketch.set_num_threads(1)
        fm = make_feature_map(10, m, "complex", random_state=0)
        self.sketch = fm.sketch(np.random.default_rng(0).standard_normal((1000, 10)))
        self.delta = 0.0 if mechanism == "laplace" else 1e-6

    def time_make_private(self, m, mechanism):
        make_private(self.sketch, 1.0, self.delta, insecure_seed=0)
