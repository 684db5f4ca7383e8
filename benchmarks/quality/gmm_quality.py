"""Held-out log-likelihood of CompressiveGaussianMixture against scikit-learn (issue 4).

For every seed: draw n training and n held-out records of a k-component mixture with
diagonal covariances (``pysketch.datasets.make_gmm_diag``, defaults: means N(0, 9 I),
log-uniform variances in [0.5, 2]), fit ``CompressiveGaussianMixture(k,
random_state=seed)`` with its defaults and ``sklearn.mixture.GaussianMixture(k,
covariance_type='diag', random_state=seed)``, and print the mean held-out
log-likelihood per record of both and of the true mixture, and their difference.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/quality/gmm_quality.py --seeds 10
"""

import argparse
import os
import sys

import numpy as np

from pysketch.datasets import make_gmm_diag
from pysketch.estimators import CompressiveGaussianMixture
from pysketch.metrics import gaussian_mixture_log_likelihood

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)


def run(k, d, n, seeds, out=print, **kwargs):
    from sklearn.mixture import GaussianMixture

    gaps, times = [], []
    for seed in range(seeds):
        X, _, p = make_gmm_diag(2 * n, k, d, random_state=seed, return_params=True)
        train, test = X[:n], X[n:]  # i.i.d. records of the same mixture
        truth = gaussian_mixture_log_likelihood(test, p["weights"], p["means"], p["covariances"])
        with _timing.Stopwatch() as clock:
            est = CompressiveGaussianMixture(k, random_state=seed, **kwargs).fit(train)
        times.append(clock.cpu)
        ours = est.score(test)
        ref = GaussianMixture(k, covariance_type="diag", random_state=seed).fit(train).score(test)
        gaps.append(ref - ours)
        out(f"  seed {seed}: held-out LL pysketch {ours:.4f}, scikit-learn {ref:.4f}, true mixture {truth:.4f}; "
            f"gap {ref - ours:+.4f} nats; fit CPU {times[-1]:.1f} s (kernel scale {est.kernel_scale_:.3g})")
    g = np.array(gaps)
    out(f"GMM k={k} d={d} n={n} seeds={seeds}: gap to scikit-learn (nats/record) median {np.median(g):+.4f}, "
        f"mean {g.mean():+.4f}, max {g.max():+.4f}; median fit CPU {np.median(times):.1f} s")
    return g


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--seeds", type=int, default=10)
    a = p.parse_args(argv)
    run(a.k, a.d, a.n, a.seeds)


if __name__ == "__main__":
    main()
