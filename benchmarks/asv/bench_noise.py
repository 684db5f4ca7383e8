"""asv benchmarks of the exact privacy noise, through the public API.

``sample_discrete_laplace`` / ``sample_discrete_gaussian`` draw exact integer noise (the
compiled samplers of src/cpp/pysketch/exact_noise.hpp where their range covers the
parameter, as here); ``Laplace(...).randomise`` and ``Gaussian(...).randomise`` are whole
releases of a float64 vector on the noise grid (rounding, the draws, the sum). Sizes: 10^4
and 10^6 coordinates; threads: 1 and 2. Seeded (``insecure_seed``) so that every sample
draws the same noise. For a printed table with the Python samplers and numpy's (inexact)
Laplace beside them, see benchmarks/reports/noise_report.py.
"""

import numpy as np

import pysketch
from pysketch.privacy.mechanisms import Gaussian, Laplace, sample_discrete_gaussian, sample_discrete_laplace

SIZES = [10_000, 1_000_000]
THREADS = [1, 2]


class DiscreteSamplers:
    """size exact draws: discrete Laplace of scale 2^30 + 1/2 (a grid scale) and discrete
    Gaussian of sigma^2 = 10^6 and 2^60 grid steps."""

    params = (["laplace", "gaussian_1e6", "gaussian_2p60"], SIZES, THREADS)
    param_names = ["law", "size", "threads"]
    timeout = 300

    def setup(self, law, size, threads):
        self.old = pysketch.get_num_threads()
        pysketch.set_num_threads(threads)

    def teardown(self, law, size, threads):
        pysketch.set_num_threads(self.old)

    def time_draws(self, law, size, threads):
        if law == "laplace":
            sample_discrete_laplace(2**30 + 0.5, size, insecure_seed=1)
        elif law == "gaussian_1e6":
            sample_discrete_gaussian(10**6, size, insecure_seed=1)
        else:
            sample_discrete_gaussian(2**60, size, insecure_seed=1)


class Releases:
    """A private release of a float64 vector of `size` coordinates (Laplace epsilon = 1,
    L1 sensitivity 1; Gaussian (1, 1e-5), L2 sensitivity 1), on one thread."""

    params = (["laplace", "gaussian"], SIZES)
    param_names = ["mechanism", "size"]
    timeout = 300

    def setup(self, mechanism, size):
        self.value = np.random.default_rng(0).standard_normal(size)
        self.mech = Laplace(1.0, 1.0, insecure_seed=2) if mechanism == "laplace" else \
            Gaussian(1.0, 1e-5, 1.0, insecure_seed=2)
        self.old = pysketch.get_num_threads()
        pysketch.set_num_threads(1)

    def teardown(self, mechanism, size):
        pysketch.set_num_threads(self.old)

    def time_randomise(self, mechanism, size):
        self.mech.randomise(self.value)
