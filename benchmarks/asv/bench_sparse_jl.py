"""asv benchmarks of the JL operators of private distances (pysketch/sparse_jl.hpp): sparse JL
products S x for dense and CSR rows, coordinate updates, and the fast JL transform."""

import numpy as np
import scipy.sparse

import pysketch
from pysketch.operators import FastJLOperator, SparseJLOperator

CONSTRUCTIONS = [("block", 1), ("block", 4), ("graph", 4)]


class SparseJLApply:
    """S x for n rows of d coordinates into k: dense float64 rows (count vectors) and
    scipy.sparse CSR rows (1% nonzeros)."""

    params = ([f"{c}-s{s}" for c, s in CONSTRUCTIONS], ["d1024-k128-n64", "d8192-k512-n256"])
    param_names = ["construction", "size"]

    def setup(self, construction, size):
        pysketch.set_num_threads(1)
        name, s = construction.split("-s")
        d, k, n = (int(part[1:]) for part in size.split("-"))
        self.op = SparseJLOperator.draw(d, k, int(s), construction=name, random_state=0)
        rng = np.random.default_rng(0)
        self.X = rng.poisson(3.0, size=(n, d)).astype(np.float64)
        self.X_csr = scipy.sparse.random(n, d, density=0.01, format="csr", random_state=0)
        self.y = np.zeros(k)
        self.coords = rng.integers(0, d, 1000)

    def time_apply_dense(self, construction, size):
        self.op.apply(self.X)

    def time_apply_csr(self, construction, size):
        self.op.apply(self.X_csr)

    def time_update_1000(self, construction, size):
        for j in self.coords:
            self.op.update(self.y, int(j), 1.0)


class FastJLApply:
    """The fast JL transform (pad, signs, FWHT, sparse Gaussian P) of n rows, q = 0.1."""

    params = (["d1024-k128-n64", "d4096-k512-n256"],)
    param_names = ["size"]

    def setup(self, size):
        pysketch.set_num_threads(1)
        d, k, n = (int(part[1:]) for part in size.split("-"))
        self.op = FastJLOperator.draw(d, k, 0.1, random_state=0)
        self.X = np.random.default_rng(0).poisson(3.0, size=(n, d)).astype(np.float64)

    def time_apply(self, size):
        self.op.apply(self.X)
