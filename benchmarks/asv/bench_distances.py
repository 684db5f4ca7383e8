"""asv benchmarks of private Euclidean distances (pysketch.distances): the release of n
noisy sparse JL sketches (S x + eta, exact Laplace or analytic Gaussian samplers), the
input-perturbed fast JL release, and the all-pairs distance estimates between releases.

Rows: count vectors (Poisson(3)) of d = 1024 coordinates, k = 128 or 256, s = 1. The
exact samplers dominate the release (tens of microseconds per noisy coordinate), so n and k
stay small; insecure_seed makes the noise reproducible (benchmarks only)."""

import numpy as np

import pysketch
from pysketch.distances import pairwise_sq_distances, release, release_input
from pysketch.operators import FastJLOperator, SparseJLOperator

SIZES = ["k128-n32", "k256-n128"]


def rows(n, d=1024):
    return np.random.default_rng(0).poisson(3.0, size=(n, d)).astype(np.float64)


class SparseJLRelease:
    params = (SIZES, ["laplace", "gaussian"])
    param_names = ["size", "mechanism"]
    timeout = 120

    def setup(self, size, mechanism):
        pysketch.set_num_threads(1)
        k, n = (int(part[1:]) for part in size.split("-"))
        self.X = rows(n)
        self.op = SparseJLOperator.draw(self.X.shape[1], k, 1, random_state=2024)
        self.delta = 0.0 if mechanism == "laplace" else 1e-6
        self.mechanism = mechanism

    def time_release(self, size, mechanism):
        release(self.op, self.X, 1.0, self.delta, mechanism=self.mechanism, insecure_seed=0)


class FastJLInputRelease:
    """release_input: Gaussian noise on the rotated rows H D x (d_p = 1024), then P."""

    params = (SIZES,)
    param_names = ["size"]
    timeout = 120

    def setup(self, size):
        pysketch.set_num_threads(1)
        k, n = (int(part[1:]) for part in size.split("-"))
        self.X = rows(n)
        self.op = FastJLOperator.draw(self.X.shape[1], k, 0.1, random_state=2024)

    def time_release_input(self, size):
        release_input(self.op, self.X, 1.0, 1e-6, insecure_seed=0)


class PairwiseDistances:
    """All-pairs unbiased estimates between the n rows of one release, k = 64 (one BLAS product)."""

    params = ([256, 1024],)
    param_names = ["n"]

    def setup(self, n):
        pysketch.set_num_threads(1)
        X = np.random.default_rng(0).poisson(3.0, size=(n, 64)).astype(np.float64)
        op = SparseJLOperator.draw(64, 64, 1, random_state=2024)
        self.released = release(op, X, 1.0, 1e-6, mechanism="gaussian", insecure_seed=0)

    def time_pairwise_sq_distances(self, n):
        pairwise_sq_distances(self.released)
