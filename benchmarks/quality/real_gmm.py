"""Compressive Gaussian mixtures on real data: held-out log-likelihood per record beside
scikit-learn's diagonal GaussianMixture (issue 32, scope 4).

For each data set of pysketch.datasets (as real_quality.py loads them) and each seed, the
records are split at random into 80% for fitting and 20% held out; every method fits k
diagonal Gaussians on the first part and is scored by the mean log-likelihood per held-out
record (``score``; higher is better):

- ``sklearn``: ``sklearn.mixture.GaussianMixture(k, covariance_type="diag", n_init=1,
  random_state=seed)``, EM on the records;
- ``pysketch-clean``: ``CompressiveGaussianMixture(k, random_state=seed)``, its defaults;
- ``pysketch-eps1``: the same with ``epsilon=1`` (pure DP, add/remove) and the data set's
  documented public box as ``bounds``.

The gap is sklearn's median minus pysketch's (nats per record; issue 32 asks at most 0.1
clean where a diagonal GMM is a fair model). A diagonal GMM is called a fair model of a
data set here when every column takes at least FAIR_DISTINCT distinct values among the
fitted records: a column of few values (counts, codes, pixels of a few grey levels) has
atoms, where a density's likelihood grows without bound as a variance shrinks, and EM's
score there measures its variance floor (reg_covar), not a fit.

Threads: OPENBLAS_NUM_THREADS, OMP_NUM_THREADS and PYSKETCH_NUM_THREADS are set to 1 when
run as a script (unless already set).

Usage::

    python benchmarks/quality/real_gmm.py                                 # every set, k = 10, 5 seeds
    python benchmarks/quality/real_gmm.py --sets us_cities nyc_weather --seeds 3 --k 5
"""

import argparse
import os
import sys
import time
import warnings

if __name__ == "__main__":
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "PYSKETCH_NUM_THREADS"):
        os.environ.setdefault(_var, "1")

import numpy as np

from pysketch import CompressiveGaussianMixture
from pysketch.datasets import REAL_DATASETS, load_real_dataset

#: A column with fewer distinct values than this among the fitted records makes the
#: diagonal GMM an unfair model of the set (see the module docstring).
FAIR_DISTINCT = 100
#: Share of the records held out for scoring.
HELD_OUT = 0.2
METHODS = ("sklearn", "pysketch-clean", "pysketch-eps1")


def fair_model(X):
    """Whether every column of X takes at least FAIR_DISTINCT distinct values."""
    return all(np.unique(X[:, j]).size >= FAIR_DISTINCT for j in range(X.shape[1]))


def split(n, seed):
    """(fit rows, held-out rows) of a random split, HELD_OUT of the rows held out."""
    order = np.random.default_rng(seed).permutation(n)
    cut = int(round(n * (1 - HELD_OUT)))
    return np.sort(order[:cut]), np.sort(order[cut:])


def fit_score(method, train, test, k, bounds, seed):
    """(held-out mean log-likelihood per record, CPU seconds) of one method."""
    t0 = time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "sklearn":
            from sklearn.mixture import GaussianMixture

            model = GaussianMixture(k, covariance_type="diag", n_init=1, random_state=seed).fit(train)
        elif method == "pysketch-clean":
            model = CompressiveGaussianMixture(k, random_state=seed).fit(train)
        else:
            model = CompressiveGaussianMixture(k, epsilon=1.0, bounds=bounds, random_state=seed).fit(train)
    cpu = time.process_time() - t0
    return float(model.score(test)), cpu


def run(name, k, seeds, out=print):
    ds = load_real_dataset(name)
    X = ds.data
    fair = fair_model(X)
    scores = {m: [] for m in METHODS}
    cpus = {m: [] for m in METHODS}
    for seed in range(seeds):
        a, b = split(X.shape[0], seed)
        for method in METHODS:
            try:
                s, c = fit_score(method, X[a], X[b], k, ds.bounds, seed)
            except Exception as exc:  # a failed fit is reported, not fatal
                out(f"  {name} seed {seed} {method}: {type(exc).__name__}: {exc}")
                s, c = float("nan"), float("nan")
            scores[method].append(s)
            cpus[method].append(c)
    med = {m: float(np.median(scores[m])) for m in METHODS}
    line = "  ".join(f"{m} {med[m]:.4f} ({np.median(cpus[m]):.2f} s)" for m in METHODS)
    gap = med["sklearn"] - med["pysketch-clean"]
    out(f"{name} k={k} n={X.shape[0]} d={X.shape[1]} fair={'yes' if fair else 'no'}: {line}; "
        f"gap clean {gap:.4f} nats/record ({'PASS' if gap <= 0.1 else 'FAIL'}{'' if fair else ', not a target'}), "
        f"eps1 {med['sklearn'] - med['pysketch-eps1']:.4f}")
    return {"name": name, "k": k, "fair": fair, "medians": med}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", nargs="+", default=list(REAL_DATASETS), help="data sets (default: all)")
    p.add_argument("--k", type=int, default=10, help="components (default 10)")
    p.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 (default 5)")
    args = p.parse_args(argv)
    for name in args.sets:
        if name not in REAL_DATASETS:
            p.error(f"unknown data set {name!r}; known: {', '.join(REAL_DATASETS)}")
    for name in args.sets:
        run(name, args.k, args.seeds)
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
