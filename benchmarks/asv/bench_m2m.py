"""asv benchmarks of M2M (pysketch.m2m): the fit (synthetic points, the map's design, the
factor, the weights) on one private sketch of Random10 (n = 27000, d = 10, epsilon = 1),
the queries answered from it, and the implicit logistic regression.

Maps from make_box_map at their M2M defaults: 'real' (100 random Fourier frequencies,
m = 200 reals), 'hist' (100 bins per attribute, m = 1000), and 'race' with 20 hashes into
50 buckets (m = 1000; the default 80 x 80 factors a 6400 x 6400 matrix)."""

import numpy as np

import pysketch
from pysketch.datasets import make_random10
from pysketch.features import make_box_map
from pysketch.m2m import M2M, Domain, M2MLogisticRegression
from pysketch.privacy import make_private

MAPS = {"real": {}, "hist": {}, "race": {"n_hashes": 20, "n_buckets": 50}}


def private_sketch(kind, X, domain):
    fm = make_box_map(kind, domain.lower, domain.upper, random_state=0, **MAPS[kind])
    return make_private(fm.sketch(X), 1.0, split=0.98, insecure_seed=0)


class M2MFit:
    params = (list(MAPS), [10_000, 100_000])
    param_names = ["kind", "n_synthetic"]
    timeout = 120

    def setup(self, kind, n_synthetic):
        pysketch.set_num_threads(1)
        self.domain = Domain.unit(10)
        self.sketch = private_sketch(kind, make_random10(27_000, 10, random_state=0)[0], self.domain)

    def time_fit(self, kind, n_synthetic):
        M2M(self.domain, n_synthetic=n_synthetic, random_state=0).fit(self.sketch)

    def track_mass(self, kind, n_synthetic):
        return float(M2M(self.domain, n_synthetic=n_synthetic, random_state=0).fit(self.sketch).mass_)

    track_mass.unit = "sum of weights"


class M2MQuery:
    """Queries of a fitted M2M (n_s = 30000 synthetic points): moments, the covariance, one
    CDF, 200 counting queries (random boxes) and the average of a given function."""

    params = (list(MAPS),)
    param_names = ["kind"]
    timeout = 120

    def setup(self, kind):
        pysketch.set_num_threads(1)
        domain = Domain.unit(10)
        sketch = private_sketch(kind, make_random10(27_000, 10, random_state=0)[0], domain)
        self.stats = M2M(domain, n_synthetic=30_000, random_state=0).fit(sketch)
        corners = np.sort(np.random.default_rng(1).uniform(size=(200, 2, 10)), axis=1)
        self.lower, self.upper = corners[:, 0], corners[:, 1]

    def time_mean_and_covariance(self, kind):
        self.stats.mean()
        self.stats.covariance()

    def time_cdf(self, kind):
        self.stats.cdf(0, np.linspace(0.0, 1.0, 101))

    def time_counting_queries(self, kind):
        self.stats.counting_queries(self.lower, self.upper)

    def time_estimate(self, kind):
        self.stats.estimate(lambda Z: np.sin(Z[:, 0]) * Z[:, 1])


class M2MLogistic:
    """M2MLogisticRegression.fit (sketch of [x, y], release, weights, weighted L-BFGS) on
    20000 records of d = 5 in the unit box, epsilon = 1, 'real' features."""

    params = ([10_000, 100_000],)
    param_names = ["n_synthetic"]
    timeout = 120

    def setup(self, n_synthetic):
        pysketch.set_num_threads(1)
        rng = np.random.default_rng(0)
        self.X = rng.uniform(size=(20_000, 5))
        self.y = (self.X[:, 0] + self.X[:, 1] + 0.3 * rng.standard_normal(20_000) > 1.0).astype(int)

    def time_fit(self, n_synthetic):
        M2MLogisticRegression(bounds=(np.zeros(5), np.ones(5)), epsilon=1.0, n_synthetic=n_synthetic,
                              random_state=0).fit(self.X, self.y)
