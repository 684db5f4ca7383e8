"""asv benchmarks of the one-hot maps of M2M (HIST and RACE, pysketch/onehot.hpp): binning or
hashing and counting (the sketch), the hot positions (`indices`) and the co-occurrence Gram
matrix of their design over synthetic points (what M2M factors).

Records: Random10 (uniform on the unit cube, d = 10). HIST: 100 bins per attribute
(m = 1000, the M2M default); RACE: 80 hashes into 80 buckets (m = 6400, the default) for
the sketch, 20 hashes into 50 buckets (m = 1000) for the Gram matrix (6400^2 would be 330 MB).
"""

import numpy as np

import pysketch
from pysketch.datasets import make_random10
from pysketch.features import make_box_map

KINDS = ["hist", "race"]


class OneHotSketch:
    """Sketch (counts) and hot positions of n Random10 records."""

    params = (KINDS, [10_000, 200_000])
    param_names = ["kind", "n"]

    def setup(self, kind, n):
        pysketch.set_num_threads(1)
        self.fm = make_box_map(kind, np.zeros(10), np.ones(10), random_state=0)
        self.X = make_random10(n, 10, random_state=0)[0]

    def time_sketch(self, kind, n):
        self.fm.sketch(self.X)

    def time_indices(self, kind, n):
        self.fm.indices(self.X)


class OneHotGram:
    """The Gram matrix P^T P of the one-hot design of n_s synthetic points (m = 1000)."""

    params = (KINDS, [10_000, 100_000])
    param_names = ["kind", "n_synthetic"]

    def setup(self, kind, n_synthetic):
        pysketch.set_num_threads(1)
        extra = {"n_hashes": 20, "n_buckets": 50} if kind == "race" else {}
        self.fm = make_box_map(kind, np.zeros(10), np.ones(10), random_state=0, **extra)
        self.X = make_random10(n_synthetic, 10, random_state=1)[0]

    def time_design_gram(self, kind, n_synthetic):
        self.fm.design(self.X).gram()
