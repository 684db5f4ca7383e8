"""Quality and time of compressive k-means on the acceptance data sets (issue 4).

For every seed: draw n records of a k-cluster Gaussian mixture, fit
``CompressiveKMeans(k, random_state=seed)`` with its defaults (no tuning) and report the
relative SSE (RSE = SSE / SSE of k-means++ best of 3, thesis eq. (4.4),
``pysketch.metrics.kmeans_plus_plus``), with its median and 90th percentile over seeds.

Models:

- ``A``: k unit-variance isotropic clusters of equal weight, centers drawn N(0, 4 I_d)
  (``pysketch.datasets.make_blobs_gaussian_centers``);
- ``B``: the thesis generator (4.5) with separation s = 2.5 (``make_gmm(separation=2.5)``,
  read as rho = s k^(1/d), see the datasets module).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/quality/kmeans_quality.py --d 10 64 --model A B --seeds 10

(BLAS on one thread: the decoder's small products run faster that way, and this machine
has 2 cores; pysketch's own sketching threads are not affected.)
"""

import argparse
import os
import sys

import numpy as np

from pysketch.datasets import make_blobs_gaussian_centers, make_gmm
from pysketch.estimators import CompressiveKMeans
from pysketch.metrics import kmeans_plus_plus, sse

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)


def draw(model, n, k, d, seed):
    if model == "A":
        return make_blobs_gaussian_centers(n, k, d, random_state=seed)[0]
    return make_gmm(n, k, d, separation=2.5, random_state=seed)[0]


def run(model, d, n, k, seeds, n_init=None, out=print):
    rse, t_fit = [], []
    for seed in range(seeds):
        X = draw(model, n, k, d, seed)
        kwargs = {} if n_init is None else {"n_init": n_init}
        with _timing.Stopwatch() as clock:
            est = CompressiveKMeans(k, random_state=seed, **kwargs).fit(X)
        t_fit.append(clock.cpu)
        _, base = kmeans_plus_plus(X, k, n_init=3, random_state=seed)
        rse.append(sse(X, est.cluster_centers_) / base)
        out(f"  model {model} d={d} seed {seed}: RSE {rse[-1]:.4f}  fit CPU {t_fit[-1]:.1f} s "
            f"(m = {est.sketch_.feature_map.m}, {est.sketch_.feature_map.operator.kind})")
    r = np.array(rse)
    out(f"model {model} d={d} n={n} k={k} seeds={seeds}: median RSE {np.median(r):.4f}, "
        f"p90 {np.quantile(r, 0.9):.4f}, max {r.max():.4f}; median fit CPU {np.median(t_fit):.1f} s")
    return r, np.array(t_fit)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d", type=int, nargs="+", default=[10, 64])
    p.add_argument("--model", choices=["A", "B"], nargs="+", default=["A", "B"])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--n-init", type=int, default=None, help="CL-OMPR restarts (default: the estimator's)")
    a = p.parse_args(argv)
    for model in a.model:
        for d in a.d:
            run(model, d, a.n, a.k, a.seeds, a.n_init)


if __name__ == "__main__":
    main()
