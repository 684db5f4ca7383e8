"""Private compressive k-means: RSE at given (epsilon, delta) (issue 5 acceptance).

Data as in the CL-OMPR acceptance (``make_blobs_gaussian_centers``: k unit-variance
clusters, centres N(0, 4 I_d)). Everything the private fit uses about the data is public
knowledge of this model, none of it read from the records: the box ``bounds = +-10`` per
coordinate (4.5 standard deviations of a coordinate's marginal, sqrt(4 + 1); the few
records outside are clipped) and the kernel scale ``0.8 * expected_separation(k, d, 2)``
(thesis eq. (4.14)); with ``--auto-scale``, the estimator's private pilot instead (5% of
epsilon on the data's spread, then the same rule). RSE = SSE / SSE of k-means++ (best of
3), on the clean data. ``--baseline`` adds DP-Lloyd (T = 5) on the same data and box.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/quality/private_quality.py --d 10 --epsilon 1 0.1 --seeds 10
    OPENBLAS_NUM_THREADS=1 python benchmarks/quality/private_quality.py --d 10 --epsilon 0.1 --delta 1e-7
"""

import argparse
import os
import sys
import warnings

import numpy as np

from pysketch.datasets import make_blobs_gaussian_centers
from pysketch.estimators import CompressiveKMeans
from pysketch.metrics import kmeans_plus_plus, sse
from pysketch.kernel_scale import KMEANS_SEPARATION_FACTOR, expected_separation

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _timing  # noqa: E402  (benchmarks/_timing.py)

BOX = 10.0
CENTER_STD = 2.0


def run(d, n, k, epsilon, delta, seeds, out=print, neighbouring="add_remove", baseline=False, auto_scale=False):
    scale = "auto" if auto_scale else KMEANS_SEPARATION_FACTOR * expected_separation(k, d, CENTER_STD)
    rse, ms, base_rse = [], [], []
    for seed in range(seeds):
        X = make_blobs_gaussian_centers(n, k, d, random_state=seed)[0]
        _, base = kmeans_plus_plus(X, k, n_init=3, random_state=seed)
        est = CompressiveKMeans(k, kernel_scale=scale, epsilon=epsilon, delta=delta, bounds=(-BOX, BOX),
                                neighbouring=neighbouring, random_state=seed)
        with _timing.Stopwatch() as clock, warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # clipping of the few records outside the box
            est.fit(X)
        t = clock.cpu
        rse.append(sse(X, est.cluster_centers_) / base)
        ms.append(est.sketch_.feature_map.m)
        extra = ""
        if baseline:
            from pysketch.baselines import DPLloyd

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                dl = DPLloyd(k, epsilon, (-BOX, BOX), random_state=seed).fit(X)
            base_rse.append(sse(X, dl.cluster_centers_) / base)
            extra = f"; DP-Lloyd (T=5, pure eps) RSE {base_rse[-1]:.4f}"
        out(f"  d={d} n={n} eps={epsilon:g} delta={delta:g} seed {seed}: RSE {rse[-1]:.4f} (m = {ms[-1]}, "
            f"fit CPU {t:.1f} s){extra}")
    r = np.array(rse)
    out(f"d={d} n={n} k={k} eps={epsilon:g} delta={delta:g} {neighbouring}: median RSE {np.median(r):.4f}, "
        f"p90 {np.quantile(r, 0.9):.4f}, max {r.max():.4f} over {seeds} seeds (kernel scale "
        f"{scale if isinstance(scale, str) else format(scale, '.3g')})")
    if baseline:
        out(f"    DP-Lloyd median RSE {np.median(base_rse):.4f}")
    return r


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--d", type=int, nargs="+", default=[10])
    p.add_argument("--n", type=int, default=100_000)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--epsilon", type=float, nargs="+", default=[1.0, 0.1])
    p.add_argument("--delta", type=float, default=0.0)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--baseline", action="store_true", help="also fit DP-Lloyd (pysketch.baselines) on each seed")
    p.add_argument("--auto-scale", action="store_true",
                   help="kernel_scale='auto' (private pilot, 5%% of epsilon) instead of the model's public scale")
    a = p.parse_args(argv)
    for d in a.d:
        for eps in a.epsilon:
            run(d, a.n, a.k, eps, a.delta, a.seeds, baseline=a.baseline, auto_scale=a.auto_scale)


if __name__ == "__main__":
    main()
