"""asv benchmarks of CL-AMP's output-node kernel (the scalar posterior moments of every
frequency and cluster; pysketch/clamp.hpp, or the NumPy reference) through
pysketch.decoders.cl_amp with a fixed amount of work: one initialization, 10 + 10 SHyGAMP
iterations around one EM round, and a tolerance that never stops them early.

Sketches of m = 2 k d complex features of k Gaussian blobs in dimension d (n = 20000).
The NumPy backend (50-100x slower) runs at the smallest size only, as the reference."""

import pysketch
from pysketch import make_feature_map, make_law
from pysketch.datasets import make_blobs_gaussian_centers
from pysketch.decoders import DecodingProblem, cl_amp


class ClampKernel:
    params = (["k5-d5-cpp", "k5-d5-numpy", "k10-d10-cpp", "k20-d20-cpp"], ["grid", "laplace"])
    param_names = ["case", "method"]
    timeout = 120

    def setup(self, case, method):
        k_text, d_text, self.backend = case.split("-")
        k, d = int(k_text[1:]), int(d_text[1:])
        pysketch.set_num_threads(1)
        X = make_blobs_gaussian_centers(20_000, k, d, random_state=0)[0]
        sketch = make_feature_map(d, 2 * k * d, "complex", law=make_law("gaussian", 3.0), random_state=0).sketch(X)
        self.problem = DecodingProblem.from_sketch(sketch)
        self.k = k
        self.bounds = (X.min(axis=0), X.max(axis=0))

    def time_cl_amp(self, case, method):
        cl_amp(self.problem, n_clusters=self.k, bounds=self.bounds, n_init=1, init_iter=10, max_iter=10, n_em=1,
               tol=1e-12, backend=self.backend, method=method, random_state=0)
