"""asv benchmarks of the row-action loops of private random-feature regression
(pysketch/row_action.hpp through pysketch.rfm.kaczmarz and pysketch.rfm.sgd): 20 m row
updates of a Gaussian system F x = y with m rows of p features, and the min-norm solvers
they are compared with (pysketch.rfm.min_norm)."""

import numpy as np

import pysketch
from pysketch.rfm import kaczmarz, min_norm, sgd

SIZES = ["m200-p400", "m1000-p4000"]


def system(size):
    m, p = (int(part[1:]) for part in size.split("-"))
    rng = np.random.default_rng(0)
    return rng.standard_normal((m, p)), rng.standard_normal(m)


class RowAction:
    """Randomized Kaczmarz (uniform and norm-weighted rows) and single-sample SGD
    (step 1 / p), 20 m updates each."""

    params = (SIZES,)
    param_names = ["size"]

    def setup(self, size):
        pysketch.set_num_threads(1)
        self.F, self.y = system(size)
        self.n_iter = 20 * self.F.shape[0]

    def time_kaczmarz_uniform(self, size):
        kaczmarz(self.F, self.y, self.n_iter, random_state=0)

    def time_kaczmarz_norm(self, size):
        kaczmarz(self.F, self.y, self.n_iter, rows="norm", random_state=0)

    def time_sgd(self, size):
        sgd(self.F, self.y, self.n_iter, 1.0 / self.F.shape[1], random_state=0)

    def track_kaczmarz_relative_residual(self, size):
        x = kaczmarz(self.F, self.y, self.n_iter, random_state=0)
        return float(np.linalg.norm(self.F @ x - self.y) / np.linalg.norm(self.y))

    track_kaczmarz_relative_residual.unit = "||Fx - y|| / ||y||"


class MinNorm:
    """The min-norm interpolant c = F^+ y by Cholesky of F F^T and by the SVD (pinv)."""

    params = (SIZES, ["cholesky", "pinv"])
    param_names = ["size", "method"]

    def setup(self, size, method):
        pysketch.set_num_threads(1)
        self.F, self.y = system(size)

    def time_min_norm(self, size, method):
        min_norm(self.F, self.y, method)
