"""Private baselines for comparisons: DP-Lloyd (SuLQ k-means).

DP-Lloyd (Blum, Dwork, McSherry & Nissim, "Practical privacy: the SuLQ framework", PODS
2005; the DPLloyd of Su et al., "Differentially private k-means clustering", CODASPY
2016, which the thesis compares against in Fig. 9.4) runs Lloyd's algorithm for a fixed
number T of iterations; in each it releases, for every cluster, the noisy count and the
noisy sum of the records assigned to it, and moves the centre to their ratio.

Privacy (add/remove neighbours): in one iteration a record adds 1 to one count and
x - c0 to one sum (c0 the centre of the public box, records clipped to the box), so the
L1 sensitivity of the (counts, sums) vector is 1 + sum_l h_l with h_l the box's half
widths. Each iteration is (epsilon / T)-DP with Laplace noise of scale
T (1 + sum_l h_l) / epsilon on every entry, and T iterations compose to epsilon. The
noise comes from pysketch.privacy.mechanisms (exact discrete Laplace, OS entropy).
"""

import warnings

import numpy as np

from ._checks import check_array, check_bounds, check_int
from ._random import as_generator
from .metrics import assign
from .privacy.accountant import charge
from .privacy.mechanisms import Laplace, check_epsilon, noise_source

__all__ = ["DPLloyd"]


class DPLloyd:
    """DP-Lloyd k-means (SuLQ), epsilon-DP under add/remove neighbours.

    Parameters
    ----------
    n_clusters : int
    epsilon : float > 0
    bounds : (lower, upper) or (d, 2) array
        Public box of the data; records outside are clipped (with a warning).
    n_iter : int, default 5
        T, fixed in advance (Su et al. 2016 recommend 5; each iteration gets epsilon/T).
    random_state : None, int or Generator
        Draws the initial centres (uniform in the box; public). Never the noise.
    accountant : BudgetAccountant (pysketch or diffprivlib), optional
    insecure_seed : None or int
        Reproducible, insecure noise (tests only).

    Attributes
    ----------
    cluster_centers_ : (n_clusters, d)
    noise_scale_ : float
        Laplace scale of every count and sum entry.
    sensitivity_ : float
        L1 sensitivity of one iteration's (counts, sums).
    """

    def __init__(self, n_clusters, epsilon, bounds, *, n_iter=5, random_state=None, accountant=None,
                 insecure_seed=None):
        self.n_clusters = n_clusters
        self.epsilon = epsilon
        self.bounds = bounds
        self.n_iter = n_iter
        self.random_state = random_state
        self.accountant = accountant
        self.insecure_seed = insecure_seed

    def fit(self, X, y=None):
        k = check_int(self.n_clusters, "n_clusters")
        T = check_int(self.n_iter, "n_iter")
        eps = check_epsilon(self.epsilon)
        X = check_array(X)
        n, d = X.shape
        lo, hi = check_bounds(self.bounds, d)
        outside = int(np.count_nonzero(((X < lo) | (X > hi)).any(axis=1)))
        if outside:
            warnings.warn(f"{outside} of {n} records lie outside bounds and were clipped to the box",
                          RuntimeWarning, stacklevel=2)
            X = np.clip(X, lo, hi)
        c0 = 0.5 * (lo + hi)
        Z = X - c0
        half = 0.5 * (hi - lo)
        sens = 1.0 + float(half.sum())
        charge(self.accountant, eps, 0.0, "DPLloyd.fit")
        source = noise_source(self.insecure_seed)
        mech = Laplace(eps / T, sens, insecure_seed=source)
        rng = as_generator(self.random_state)
        C = rng.uniform(-half, half, size=(k, d))
        for _ in range(T):
            labels = assign(Z, C)
            counts = np.bincount(labels, minlength=k).astype(np.float64)
            sums = np.zeros((k, d))
            np.add.at(sums, labels, Z)
            noisy = mech.randomise(np.concatenate([counts, sums.ravel()]))
            nc, ns = noisy[:k], noisy[k:].reshape(k, d)
            C = np.clip(ns / np.maximum(nc, 1.0)[:, None], -half, half)
        self.cluster_centers_ = C + c0
        self.noise_scale_ = mech.effective_scale_
        self.sensitivity_ = sens
        self.n_features_in_ = d
        return self

    def predict(self, X):
        return assign(check_array(X), self.cluster_centers_)
