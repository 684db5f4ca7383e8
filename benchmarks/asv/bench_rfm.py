"""asv benchmarks of private random-feature regression (pysketch.rfm) on the DPRFM paper's
synthetic problem f1 (x ~ N(0, I_5), y = sqrt(1 + ||x||)):

- PrivateRFRegressor.fit (private scaling, the statistics, their release, the ridge) at
  epsilon = 1, delta = 1e-5 with N random frequencies (p = 2 N + 1 features);
- its pieces: RFStatistics.update (the streaming Gram matrix, SYRK), release_statistics
  (one Gaussian release of the p (p + 1) / 2 + p + 1 numbers, exact sampler) and
  solve_ridge (the AdaSSP-style solve);
- DPRFMRegressor.fit, the published model (min-norm interpolation, output perturbation).

insecure_seed makes the noise reproducible (benchmarks only)."""

import warnings

import numpy as np

import pysketch
from pysketch.datasets import make_dprfm_synthetic
from pysketch.rfm import (DPRFMRegressor, PrivateRFRegressor, RandomFeatures, RFStatistics, release_statistics,
                          solve_ridge)

SIZES = ["n2000-N64", "n20000-N256"]


def problem(size):
    n, N = (int(part[1:]) for part in size.split("-"))
    return make_dprfm_synthetic("f1", n=n, random_state=0), N


class PrivateRFRegressorFit:
    params = (SIZES,)
    param_names = ["size"]
    timeout = 120

    def setup(self, size):
        pysketch.set_num_threads(1)
        self.data, self.N = problem(size)

    def fit(self):
        ds = self.data
        return PrivateRFRegressor(1.0, 1e-5, bounds=ds.bounds, target_bounds=ds.target_bounds, sketch_size=self.N,
                                  random_state=0, insecure_seed=0).fit(ds.data, ds.target)

    def time_fit(self, size):
        self.fit()

    def track_train_r2(self, size):
        return float(self.fit().score(self.data.data, self.data.target))

    track_train_r2.unit = "R^2"


class SufficientStatistics:
    """The SSP pieces on features of x scaled by its known spread (1 for N(0, I))."""

    params = (SIZES,)
    param_names = ["size"]
    timeout = 120

    def setup(self, size):
        pysketch.set_num_threads(1)
        self.data, N = problem(size)
        d = self.data.data.shape[1]
        self.features = RandomFeatures(d, N, length_scale=float(np.sqrt(d)), layout="unit", intercept=True,
                                       random_state=0)
        self.stats = RFStatistics(self.features, self.data.target_bounds).update(self.data.data, self.data.target)
        self.released = release_statistics(self.stats, 1.0, 1e-5, insecure_seed=0)

    def time_statistics_update(self, size):
        RFStatistics(self.features, self.data.target_bounds).update(self.data.data, self.data.target)

    def time_release_statistics(self, size):
        release_statistics(self.stats, 1.0, 1e-5, insecure_seed=0)

    def time_solve_ridge(self, size):
        solve_ridge(self.released)


class DPRFMRegressorFit:
    """The published model on n records with its default N = 4 n frequencies."""

    params = ([250, 1000],)
    param_names = ["n"]
    timeout = 120

    def setup(self, n):
        pysketch.set_num_threads(1)
        self.data = make_dprfm_synthetic("f1", n=n, random_state=0)

    def time_fit(self, n):
        ds = self.data
        with warnings.catch_warnings():
            # the diagnostic of the paper's conditions on the data may warn; not timed apart
            warnings.simplefilter("ignore")
            DPRFMRegressor(1.0, 1e-5, bounds=ds.bounds, target_bounds=ds.target_bounds, n_max=ds.data.shape[0],
                           random_state=0, insecure_seed=0).fit(ds.data, ds.target)
