"""asv benchmarks of the decoders, through the estimators' public entry points: learning from
a sketch made elsewhere (``fit_sketch``) with one start (n_init=1), and the whole ``fit``
(pilot, sketch, decode) at the estimators' defaults.

- k-means: CL-OMPR, CL-AMP and the coreset decoder (CompressiveKMeans.fit_sketch) on k
  Gaussian blobs in dimension d, m = 10 k d (CL-AMP: 2 k d), the kernel scale from the
  data's model (no pilot);
- Gaussian mixtures with diagonal covariances (CompressiveGaussianMixture.fit_sketch),
  m = 10 k d, adapted-radius frequencies at the estimator's 'auto' scale (a pilot sketch);
- principal subspaces from a quadratic sketch (CompressivePCA.fit_sketch, Burer-Monteiro)
  of low-rank records, m = 10 k d over orthonormal bases.

The track_ benchmarks record what the decoders return at the first start (same seeds, so
a change means the decoder's result changed): the relative SSE against the true centres,
the log-likelihood against the true mixture, and the captured variance.
"""

import numpy as np

import pysketch
from pysketch import (CompressiveGaussianMixture, CompressiveKMeans, CompressivePCA, OrthonormalBasesLaw,
                      make_feature_map, make_law)
from pysketch.datasets import make_blobs_gaussian_centers, make_gmm_diag, make_low_rank
from pysketch.kernel_scale import KMEANS_SEPARATION_FACTOR, expected_separation, kernel_scale
from pysketch.metrics import gaussian_mixture_log_likelihood, relative_sse

N = 20_000
MIXTURE_SIZES = ["k3-d5", "k10-d10"]


def sizes(text):
    return tuple(int(part[1:]) for part in text.split("-"))


def box(X):
    return X.min(axis=0), X.max(axis=0)


class KMeansDecode:
    params = (MIXTURE_SIZES, ["clompr", "cl_amp", "coreset"])
    param_names = ["size", "decoder"]
    timeout = 120

    def setup(self, size, decoder):
        pysketch.set_num_threads(1)
        k, d = sizes(size)
        X, _, truth = make_blobs_gaussian_centers(N, k, d, random_state=0, return_params=True)
        if decoder == "coreset":  # its default law: log-uniform radii over the data's spread
            law = make_law("log_uniform", float(np.sqrt(X.var(axis=0).mean())))
        else:
            law = make_law("gaussian", KMEANS_SEPARATION_FACTOR * expected_separation(k, d, 2.0))
        m = (2 if decoder == "cl_amp" else 10) * k * d
        self.sketch = make_feature_map(d, m, "complex", law=law, random_state=0, dtype=np.float32).sketch(X)
        self.X, self.k, self.bounds, self.centers = X, k, box(X), truth["centers"]
        self.decoder = decoder

    def decode(self):
        return CompressiveKMeans(self.k, decoder=self.decoder, n_init=1, random_state=0).fit_sketch(
            self.sketch, self.bounds)

    def time_fit_sketch(self, size, decoder):
        self.decode()

    def track_relative_sse(self, size, decoder):
        return relative_sse(self.X, self.decode().cluster_centers_, baseline_centers=self.centers)

    track_relative_sse.unit = "SSE / SSE(true centres)"


class GaussianMixtureDecode:
    params = (MIXTURE_SIZES,)
    param_names = ["size"]
    timeout = 120

    def setup(self, size):
        pysketch.set_num_threads(1)
        k, d = sizes(size)
        X, _, self.truth = make_gmm_diag(N, k, d, random_state=0, return_params=True)
        law = make_law("adapted_radius", kernel_scale(X, k, task="gmm", random_state=0))
        self.sketch = make_feature_map(d, 10 * k * d, "complex", law=law, random_state=0).sketch(X)
        self.X, self.k, self.bounds = X, k, box(X)

    def decode(self):
        return CompressiveGaussianMixture(self.k, n_init=1, random_state=0).fit_sketch(self.sketch, self.bounds)

    def time_fit_sketch(self, size):
        self.decode()

    def track_log_likelihood_gap(self, size):
        gmm = self.decode()
        t = self.truth
        fitted = gaussian_mixture_log_likelihood(self.X, gmm.weights_, gmm.means_, gmm.covariances_)
        return float(gaussian_mixture_log_likelihood(self.X, t["weights"], t["means"], t["covariances"]) - fitted)

    track_log_likelihood_gap.unit = "nats per record"


class PCADecode:
    """Burer-Monteiro on a quadratic sketch of 5000 low-rank records."""

    params = (["d32-k3-dense", "d1024-k10-r3"],)
    param_names = ["size"]
    timeout = 120

    def setup(self, size):
        pysketch.set_num_threads(1)
        d_text, k_text, operator = size.split("-")
        d, k = int(d_text[1:]), int(k_text[1:])
        X = make_low_rank(5000, d, k, random_state=0)
        fm = make_feature_map(d, 10 * k * d, "quadratic", operator=operator, law=OrthonormalBasesLaw(),
                              random_state=0, centre=X.mean(axis=0))
        self.sketch = fm.sketch(X)
        self.k = k

    def decode(self):
        return CompressivePCA(self.k, n_init=1, random_state=0).fit_sketch(self.sketch)

    def time_fit_sketch(self, size):
        self.decode()

    def peakmem_fit_sketch(self, size):
        self.decode()

    def track_explained_variance_ratio(self, size):
        return float(self.decode().explained_variance_ratio_.sum())

    track_explained_variance_ratio.unit = "ratio"


class EstimatorFit:
    """The whole fit at the estimators' defaults (kernel-scale pilot, sketch, decode with
    their default starts) on n = 50000 records: k = d = 10 mixtures, PCA with d = 64, k = 5."""

    params = (["kmeans", "gmm", "pca"],)
    param_names = ["estimator"]
    timeout = 180

    def setup(self, estimator):
        pysketch.set_num_threads(1)
        if estimator == "kmeans":
            self.X = make_blobs_gaussian_centers(50_000, 10, 10, random_state=0)[0]
            self.model = CompressiveKMeans(10, random_state=0)
        elif estimator == "gmm":
            self.X = make_gmm_diag(50_000, 10, 10, random_state=0)[0]
            self.model = CompressiveGaussianMixture(10, random_state=0)
        else:
            self.X = make_low_rank(50_000, 64, 5, random_state=0)
            self.model = CompressivePCA(5, random_state=0)

    def time_fit(self, estimator):
        self.model.fit(self.X)
